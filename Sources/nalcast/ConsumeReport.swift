#if canImport(Glibc)
import Glibc
#endif
import CommandOptions

/// The lines `consume` says about its forward target going away, retrying and giving up: one
/// place for their wording, so the session only decides when (the input's: `InputReporter`).
enum ConsumeReport {
    static func forwardRetrying(_ endpoint: String, attempt: Int, reason: String, nextIn: Double) -> String {
        "forward to \(endpoint): attempt \(attempt) failed (\(reason)); next try in \(fixed(nextIn, 1)) s, dropping until then"
    }

    /// The forward target lost access units: "forward to X: N of M access units dropped (never connected)".
    static func forwardLoss(_ endpoint: String, lost: UInt64, of total: UInt64, everConnected: Bool) -> String {
        "forward to \(endpoint): \(lost) of \(total) access units dropped (\(everConnected ? "while it was down or behind" : "never connected"))"
    }

    /// The forward target lost audio packets (while down or behind, or kept by libavformat at
    /// the end: the last of an RTSP push): "forward to X: N audio packets dropped".
    static func forwardAudioLoss(_ endpoint: String, lost: UInt64) -> String {
        "forward to \(endpoint): \(lost) audio packet\(lost == 1 ? "" : "s") dropped"
    }

    /// Local wall-clock time of `seconds` since the epoch: `2026-11-30 09:20:13 UTC`.
    static func clockTime(_ seconds: Double) -> String {
        var t = time_t(seconds)
        var parts = tm()
        localtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %Z", &parts)
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
