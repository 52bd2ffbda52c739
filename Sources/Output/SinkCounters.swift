import Metrics

/// Per-sink counters, shared with the metrics registry.
public struct SinkCounters: Sendable {
    public let writtenUnits: Counter
    public let writtenBytes: Counter
    /// Access units the sink skipped because it was behind.
    public let skippedUnits: Counter
    /// Access units dropped because the sink was closed or could not send them.
    public let droppedUnits: Counter
    /// Audio packets written into the sink's container.
    public let writtenAudioPackets: Counter
    /// Audio packets not written: by a sink that carries no audio (Annex-B), skipped with
    /// the video, before the first video entry point, after the sink closed.
    public let droppedAudioPackets: Counter

    public init(writtenUnits: Counter = Counter(), writtenBytes: Counter = Counter(), skippedUnits: Counter = Counter(), droppedUnits: Counter = Counter(),
                writtenAudioPackets: Counter = Counter(), droppedAudioPackets: Counter = Counter()) {
        self.writtenUnits = writtenUnits
        self.writtenBytes = writtenBytes
        self.skippedUnits = skippedUnits
        self.droppedUnits = droppedUnits
        self.writtenAudioPackets = writtenAudioPackets
        self.droppedAudioPackets = droppedAudioPackets
    }

    public init(registry: MetricsRegistry, sink: String) {
        let labels = [("sink", sink)]
        self.init(
            writtenUnits: registry.counter("nalcast_sink_written_access_units_total", help: "Access units written by a sink", labels: labels),
            writtenBytes: registry.counter("nalcast_sink_written_bytes_total", help: "Bytes written by a sink", labels: labels),
            skippedUnits: registry.counter("nalcast_sink_skipped_access_units_total", help: "Access units a slow sink skipped to catch up", labels: labels),
            droppedUnits: registry.counter("nalcast_sink_dropped_access_units_total", help: "Access units a sink dropped (closed, or its remote was down)", labels: labels),
            writtenAudioPackets: registry.counter("nalcast_sink_written_audio_packets_total", help: "Audio packets written by a sink", labels: labels),
            droppedAudioPackets: registry.counter("nalcast_sink_dropped_audio_packets_total",
                                                  help: "Audio packets a sink did not write (it carries no audio, skipped, before its first picture, closed)", labels: labels))
    }
}
