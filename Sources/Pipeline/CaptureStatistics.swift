/// Counters of a capture pipeline. Times are in milliseconds.
public struct CaptureStatistics: Sendable, Hashable {
    /// Frames the source delivered.
    public var framesCaptured: UInt64 = 0
    /// Frames encoded (access units handed on).
    public var framesEncoded: UInt64 = 0
    /// Of `framesEncoded`, repeats of the kept picture sent while the screen was still
    /// (keep-alives, and IDRs for readers who joined then): capture on change only.
    public var keepAliveFrames: UInt64 = 0
    /// Frames a change-driven source gave as changed whose pixels, converted, were those of
    /// the picture kept (a compositor sending the same picture again): not encoded.
    public var unchangedFrames: UInt64 = 0
    /// Frames dropped for coming faster than the target frame rate.
    public var droppedRate: UInt64 = 0
    /// Frames a live source skipped because capture and encode were behind.
    public var droppedLate: UInt64 = 0
    /// Access units encoded but not handed to the readers: the loop thread was behind and
    /// its mailbox full, so they and everything up to the next IDR were left out.
    public var droppedHandOff: UInt64 = 0
    /// Bytes of encoded access units.
    public var bytesEncoded: UInt64 = 0
    /// Media time (90 kHz) where the last picture encoded ends: its pts plus a frame interval.
    /// The sound of a run stops there (a live audio thread is ahead of a late encoder).
    public var videoEnd90k: UInt64 = 0
    /// Conversion and encode time of the last frame, and its mean.
    public var lastEncodeMs: Double = 0
    public var meanEncodeMs: Double = 0
    /// Capture time to access unit out (CLOCK_REALTIME), over the recent frames.
    public var latencyMedianMs: Double = 0
    public var latencyP99Ms: Double = 0
    /// Frames the latency figures are taken over.
    public var latencySamples: Int = 0

    public init() {}

    public var droppedTotal: UInt64 { droppedRate + droppedLate + droppedHandOff }
}
