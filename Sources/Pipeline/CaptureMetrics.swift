import Metrics

extension CaptureControl {
    /// Puts the capture side's figures in `registry`, read from a statistics snapshot each
    /// time `/metrics` is rendered: frames captured, encoded and dropped by reason, bytes,
    /// encode time and latency.
    public func registerMetrics(in registry: MetricsRegistry) {
        func counter(_ name: String, _ help: String, labels: [(String, String)] = [], _ value: @escaping @Sendable (CaptureStatistics) -> UInt64) {
            registry.sampledCounter(name, help: help, labels: labels) { [self] in value(statistics()) }
        }
        func gauge(_ name: String, _ help: String, labels: [(String, String)], _ value: @escaping @Sendable (CaptureStatistics) -> Double) {
            registry.sampledGauge(name, help: help, labels: labels) { [self] in value(statistics()) }
        }
        counter("nalcast_frames_captured_total", "Frames the source produced.") { $0.framesCaptured }
        counter("nalcast_frames_encoded_total", "Frames encoded into access units.") { $0.framesEncoded }
        counter("nalcast_keepalive_frames_total",
                "Of the frames encoded, repeats of the last picture sent while the screen was still (x11 --capture damage: keep-alives at --idle-fps, and IDRs for readers who joined then).") {
            $0.keepAliveFrames
        }
        counter("nalcast_unchanged_frames_total",
                "Frames the source gave as changed whose pixels were those of the last picture (a compositor sending the same picture again): not encoded.") {
            $0.unchangedFrames
        }
        let dropped = "Frames dropped, by reason: rate (faster than --fps), late (capture fell behind), handoff (encoded, but the serving thread was behind: left out up to the next IDR)."
        counter("nalcast_frames_dropped_total", dropped, labels: [("reason", "rate")]) { $0.droppedRate }
        counter("nalcast_frames_dropped_total", dropped, labels: [("reason", "late")]) { $0.droppedLate }
        counter("nalcast_frames_dropped_total", dropped, labels: [("reason", "handoff")]) { $0.droppedHandOff }
        counter("nalcast_encoded_bytes_total", "Bytes of encoded stream.") { $0.bytesEncoded }
        gauge("nalcast_encode_milliseconds", "Encode time per frame: last and mean.", labels: [("stat", "last")]) { $0.lastEncodeMs }
        gauge("nalcast_encode_milliseconds", "Encode time per frame: last and mean.", labels: [("stat", "mean")]) { $0.meanEncodeMs }
        let latency = "Capture to encoded access unit, over the last frames."
        gauge("nalcast_capture_to_encoded_milliseconds", latency, labels: [("quantile", "0.5")]) { $0.latencyMedianMs }
        gauge("nalcast_capture_to_encoded_milliseconds", latency, labels: [("quantile", "0.99")]) { $0.latencyP99Ms }
    }
}
