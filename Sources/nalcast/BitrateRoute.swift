import CommandOptions
import Serving

/// `POST /bitrate` on the `--metrics` listener of `nalcast produce`: a new encoder bitrate,
/// applied from the next frame (the capture thread takes it through `CaptureControl`
/// and reconfigures x264 in place: no new stream, no IDR).
///
/// The value, as for `--bitrate` (`6M`, `4000k`, `2500000`), comes as the body (`6M` or
/// `bitrate=6M`) or, without a body, as the query (`/bitrate?6M`, `/bitrate?bitrate=6M`).
/// The answer is 200 with the bits per second asked for, or 400 with one line saying why.
enum BitrateRoute {
    /// Bodies are a few bytes; anything longer is refused (413) before it is read.
    static let maxBody = 64
    static let minimum = 10_000
    static let maximum = 1_000_000_000

    static func respond(to request: HTTPRequest, apply: (Int) -> Void) -> HTTPResponse {
        let body = String(decoding: request.body, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)?.trimmed ?? ""
        let text = value(body.isEmpty ? (request.query ?? "") : body)
        guard !text.isEmpty else {
            return HTTPResponse(status: 400, body: "bitrate: give bits per second as the body or the query, e.g. 6M or 4000k\n")
        }
        guard let bits = ValueFormat.quantity(text), bits >= minimum, bits <= maximum else {
            return HTTPResponse(status: 400, body: "bitrate: invalid value '\(text.prefix(32))': expected bits per second from 10k to 1G, e.g. 6M or 4000k\n")
        }
        apply(bits)
        return HTTPResponse(status: 200, body: "\(bits)\n")
    }

    /// `bitrate=6M` → `6M`; anything else as it is.
    private static func value(_ text: String) -> String {
        text.hasPrefix("bitrate=") ? String(text.dropFirst("bitrate=".count)).trimmed : text
    }
}
