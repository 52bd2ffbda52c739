import Clocks
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Paces a file or pipe source to its frame rate, like ffmpeg `-re`: frame `index` is
/// released no earlier than `index` frame intervals after the first.
struct RealtimePacer {
    let rate: FrameRate
    private var start: Int64?

    init(rate: FrameRate) { self.rate = rate }

    mutating func wait(forFrame index: Int64) {
        let now = Int64(MonotonicClock.nanoseconds)
        guard let start else {
            self.start = now
            return
        }
        let due = start + rate.nanoseconds(ofFrame: index)
        if due > now { MonotonicClock.sleep(untilNanoseconds: UInt64(due)) }
    }
}
