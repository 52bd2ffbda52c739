import Synchronization

/// What other threads may do to a running `CapturePipeline`: stop it, ask for an IDR or
/// a new bitrate, and read its statistics. Every member is safe from any thread.
public final class CaptureControl: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let idrFlag = Atomic<Bool>(false)
    private let bitrateRequest = Atomic<Int>(0)
    let state = Mutex(StatisticsState())

    public init() {}

    /// Asks the pipeline to stop after the frame in hand; it then flushes the encoder
    /// and `run()` returns.
    public func stop() { stopFlag.store(true, ordering: .releasing) }
    public var isStopped: Bool { stopFlag.load(ordering: .acquiring) }

    /// Asks for the next encoded frame to be an IDR (a reader joined).
    public func requestIDR() { idrFlag.store(true, ordering: .releasing) }
    func takeIDRRequest() -> Bool { idrFlag.exchange(false, ordering: .acquiringAndReleasing) }

    /// Asks for a new encoder bitrate (bits per second) from the next frame on.
    public func requestBitrate(_ bitsPerSecond: Int) { bitrateRequest.store(bitsPerSecond, ordering: .releasing) }
    func takeBitrateRequest() -> Int? {
        let value = bitrateRequest.exchange(0, ordering: .acquiringAndReleasing)
        return value > 0 ? value : nil
    }

    /// A snapshot of the counters so far.
    public func statistics() -> CaptureStatistics { state.withLock { $0.snapshot() } }
}
