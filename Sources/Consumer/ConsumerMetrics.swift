import Metrics

/// The consumer's counters, in the metrics registry `--metrics` serves. Thread-safe.
public struct ConsumerMetrics: Sendable {
    public let registry: MetricsRegistry
    public let accessUnits: Counter
    public let bytes: Counter
    /// Access units dropped while waiting for an entry point (start, reconnect).
    public let waitedUnits: Counter
    /// Bytes skipped to resync (garbage, oversized NAL units).
    public let resyncBytes: Counter
    public let reconnects: Counter
    /// Access units dropped unfinished because the input failed while they arrived.
    public let unfinishedUnits: Counter
    /// A demuxed live source that sent nothing for the stall timeout (then reopened).
    public let stalls: Counter
    /// Demuxed packets that held no NAL unit, or a length past their end (what came before it kept).
    public let malformedPackets: Counter
    /// RTP packets missing from their sequence (an RTSP input read by nalcast's client), or given up on after NACKs (a WHIP publisher).
    public let lostPackets: Counter
    /// Audio packets of a demuxed source handed to the sinks, and those not: before the
    /// first picture (at the start, after a reconnect), out of time order.
    public let audioPackets: Counter
    public let droppedAudioPackets: Counter
    public let segmentsOpened: Counter
    public let segmentsClosed: Counter
    /// Capture (timestamp SEI, CLOCK_REALTIME) to receive, seconds.
    public let latency: Histogram

    public init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        accessUnits = registry.counter("nalcast_consumer_access_units_total", help: "Access units received")
        bytes = registry.counter("nalcast_consumer_bytes_total", help: "Stream bytes received")
        waitedUnits = registry.counter("nalcast_consumer_waiting_access_units_total", help: "Access units dropped while waiting for an IDR with SPS/PPS")
        resyncBytes = registry.counter("nalcast_consumer_resync_bytes_total", help: "Bytes skipped to find the next start code")
        reconnects = registry.counter("nalcast_consumer_reconnects_total", help: "Connections made again after a loss")
        unfinishedUnits = registry.counter("nalcast_consumer_unfinished_access_units_total", help: "Access units dropped unfinished when the input failed")
        stalls = registry.counter("nalcast_consumer_stalls_total", help: "Times a live input sent nothing for --stall-timeout (then it is connected again)")
        malformedPackets = registry.counter("nalcast_consumer_malformed_packets_total", help: "Demuxed packets with no NAL unit or a NAL length past their end")
        lostPackets = registry.counter("nalcast_consumer_lost_packets_total", help: "RTP packets missing from their sequence (an RTSP input), or given up on after NACKs (a WHIP publisher)")
        audioPackets = registry.counter("nalcast_consumer_audio_packets_total", help: "Audio packets received and handed to the sinks")
        droppedAudioPackets = registry.counter("nalcast_consumer_dropped_audio_packets_total",
                                               help: "Audio packets dropped before the first picture (start, reconnect) or out of time order")
        segmentsOpened = registry.counter("nalcast_segments_opened_total", help: "Segment files opened")
        segmentsClosed = registry.counter("nalcast_segments_closed_total", help: "Segment files finished and renamed")
        latency = registry.histogram(
            "nalcast_capture_to_receive_seconds", help: "Capture time (timestamp SEI) to receive time",
            buckets: [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5])
    }
}
