import Capture
import Clocks
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What other threads may do to a running `CapturePipeline`: stop it, ask for an IDR or
/// a new bitrate, and read its statistics. Every member is safe from any thread.
public final class CaptureControl: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let idrFlag = Atomic<Bool>(false)
    private let bitrateRequest = Atomic<Int>(0)
    let state = Mutex(StatisticsState())
    /// The source's wake-up, when it may sleep until the screen changes.
    private let wakeUp = Mutex<CaptureWakeUp?>(nil)
    /// The `--duration` timer's, woken by `stop()`.
    private let timerWakeUp = CaptureWakeUp()

    public init() {}

    /// Asks the pipeline to stop after the frame in hand; it then flushes the encoder
    /// and `run()` returns. A source waiting for a change is woken.
    public func stop() {
        stopFlag.store(true, ordering: .releasing)
        wakeUp.withLock { $0?.wake() }
        timerWakeUp.wake()
    }
    public var isStopped: Bool { stopFlag.load(ordering: .acquiring) }

    private let durationOver = Atomic<Bool>(false)
    /// `--duration` has passed by the clock: the pipeline ends as at its limit. For a source
    /// that may wait for a change for ever (a still screen with `--idle-fps 0`), no frame
    /// would come to be checked against the limit; a timer says so instead and wakes it.
    func endDuration() {
        durationOver.store(true, ordering: .releasing)
        wakeUp.withLock { $0?.wake() }
    }
    var isDurationOver: Bool { durationOver.load(ordering: .acquiring) }

    /// Sleeps `nanoseconds`, or until `stop()`, in one poll() (no wake-ups in between: a
    /// still screen's run is otherwise silent); then `endDuration()` unless stopped.
    func endDuration(after nanoseconds: UInt64) {
        let end = MonotonicClock.nanoseconds &+ nanoseconds
        while !isStopped {
            let now = MonotonicClock.nanoseconds
            guard now < end else { return endDuration() }
            var fd = pollfd(fd: timerWakeUp.fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, MonotonicClock.pollTimeout(until: Int64(clamping: end), from: Int64(clamping: now)))
        }
    }

    /// Asks for the next encoded frame to be an IDR (a reader joined). A source waiting
    /// for a change is woken, so the IDR (of the kept picture) goes out at once.
    public func requestIDR() {
        idrFlag.store(true, ordering: .releasing)
        wakeUp.withLock { $0?.wake() }
    }

    /// The pipeline hands over its source's wake-up.
    func attach(_ wake: CaptureWakeUp?) { wakeUp.withLock { $0 = wake } }
    func takeIDRRequest() -> Bool { idrFlag.exchange(false, ordering: .acquiringAndReleasing) }

    /// Asks for a new encoder bitrate (bits per second) from the next frame on. A source
    /// waiting for a change is woken: the kept picture is sent again at the new bitrate.
    public func requestBitrate(_ bitsPerSecond: Int) {
        bitrateRequest.store(bitsPerSecond, ordering: .releasing)
        wakeUp.withLock { $0?.wake() }
    }
    func takeBitrateRequest() -> Int? {
        let value = bitrateRequest.exchange(0, ordering: .acquiringAndReleasing)
        return value > 0 ? value : nil
    }

    /// A snapshot of the counters so far.
    public func statistics() -> CaptureStatistics { state.withLock { $0.snapshot() } }
}
