import Metrics

extension StreamServer {
    /// Counters for the status line and `/metrics`, readable from any thread.
    public struct Metrics: Sendable {
        public let accessUnitsSent: Counter
        public let bytesSent: Counter
        public let readersJoined: Counter
        public let readersRefused: Counter
        public let readerSkips: Counter
        public let skippedAccessUnits: Counter
        public let readersTimedOut: Counter
        public let idrRequests: Counter
        public let readers: Gauge
        public let joinSeconds: Histogram
        public let joinBurst: Histogram
        /// With a TS listener: its audio packets left out (before the first IDR, out of order).
        public let tsAudioDropped: Counter?
        /// With a TS listener: access units its muxer left out (before the first IDR, no media time).
        public let tsUnitsDropped: Counter?

        /// `transportStream`: a TS listener is served, and its own counters are registered.
        public init(registry: MetricsRegistry, transportStream: Bool = false) {
            accessUnitsSent = registry.counter("nalcast_access_units_sent_total", help: "Access units written to readers.")
            bytesSent = registry.counter("nalcast_bytes_sent_total", help: "Bytes written to readers.")
            readersJoined = registry.counter("nalcast_readers_joined_total", help: "Readers that connected and were accepted.")
            readersRefused = registry.counter("nalcast_readers_refused_total", help: "Readers closed at once because --max-readers were connected.")
            readerSkips = registry.counter("nalcast_reader_skips_total", help: "Times a reader fell behind and skipped to the next IDR.")
            skippedAccessUnits = registry.counter("nalcast_reader_skipped_access_units_total", help: "Access units readers skipped.")
            readersTimedOut = registry.counter("nalcast_readers_timed_out_total", help: "Readers closed for making no progress for --reader-timeout.")
            idrRequests = registry.counter("nalcast_idr_requests_total", help: "IDRs asked of the encoder for joining readers or SIGUSR1.")
            readers = registry.gauge("nalcast_readers", help: "Readers connected now.")
            joinSeconds = registry.histogram(
                "nalcast_join_seconds", help: "Time from a reader's connect to its first decodable picture being queued.",
                buckets: [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12])
            joinBurst = registry.histogram(
                "nalcast_join_burst_access_units", help: "Access units queued at once for a starting reader: its first IDR, and for --join gop the cached GOP behind it.",
                buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
            tsAudioDropped = !transportStream ? nil : registry.counter("nalcast_ts_audio_packets_dropped_total", help: "Audio packets the MPEG-TS listeners left out (before the first IDR, out of media time order, or over 256 waiting).")
            tsUnitsDropped = !transportStream ? nil : registry.counter("nalcast_ts_access_units_dropped_total", help: "Access units the MPEG-TS listeners left out (before the first IDR, or without media time).")
        }
    }
}
