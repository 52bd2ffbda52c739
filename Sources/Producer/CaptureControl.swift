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

/// Counters of a capture pipeline. Times are in milliseconds.
public struct CaptureStatistics: Sendable, Hashable {
    /// Frames the source delivered.
    public var framesCaptured: UInt64 = 0
    /// Frames encoded (access units handed on).
    public var framesEncoded: UInt64 = 0
    /// Frames dropped for coming faster than the target frame rate.
    public var droppedRate: UInt64 = 0
    /// Frames a live source skipped because capture and encode were behind.
    public var droppedLate: UInt64 = 0
    /// Bytes of encoded access units.
    public var bytesEncoded: UInt64 = 0
    /// Conversion and encode time of the last frame, and its mean.
    public var lastEncodeMs: Double = 0
    public var meanEncodeMs: Double = 0
    /// Capture time to access unit out (CLOCK_REALTIME), over the recent frames.
    public var latencyMedianMs: Double = 0
    public var latencyP99Ms: Double = 0
    /// Frames the latency figures are taken over.
    public var latencySamples: Int = 0

    public init() {}

    public var droppedTotal: UInt64 { droppedRate + droppedLate }
}

/// The pipeline's counters plus a ring of recent latencies, behind the control's lock.
struct StatisticsState: Sendable {
    static let latencyWindow = 1024
    var counters = CaptureStatistics()
    var encodeTotalNs: Int64 = 0
    var latencies: [Int64] = []
    var latencyNext = 0

    mutating func record(latencyNs: Int64) {
        if latencies.count < StatisticsState.latencyWindow {
            latencies.append(latencyNs)
        } else {
            latencies[latencyNext] = latencyNs
        }
        latencyNext = (latencyNext + 1) % StatisticsState.latencyWindow
    }

    func snapshot() -> CaptureStatistics {
        var out = counters
        guard !latencies.isEmpty else { return out }
        let sorted = latencies.sorted()
        func at(_ q: Double) -> Double { Double(sorted[Swift.min(sorted.count - 1, Int(q * Double(sorted.count)))]) / 1e6 }
        out.latencyMedianMs = at(0.5)
        out.latencyP99Ms = at(0.99)
        out.latencySamples = sorted.count
        return out
    }
}
