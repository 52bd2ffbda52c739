#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// CLOCK_REALTIME in nanoseconds: capture times on the wire.
public func realtimeNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CLOCK_MONOTONIC in nanoseconds: pacing and durations.
public func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline` (ns); returns at once if it has.
func sleepUntil(monotonic deadline: Int64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Paces a file or pipe source to its frame rate, like ffmpeg `-re`: frame `index` is
/// released no earlier than `index` frame intervals after the first.
struct RealtimePacer {
    let rate: FrameRate
    private var start: Int64?

    init(rate: FrameRate) { self.rate = rate }

    mutating func wait(forFrame index: Int64) {
        let now = monotonicNanoseconds()
        guard let start else {
            self.start = now
            return
        }
        let due = start + rate.nanoseconds(ofFrame: index)
        if due > now { sleepUntil(monotonic: due) }
    }
}
