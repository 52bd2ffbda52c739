/// An `rtsp://` or `rtsps://` URL taken apart: credentials (percent-decoded, never sent in
/// the URL: RFC 2326 puts them in the Authorization header), host, port (554, or 322 for
/// rtsps), and the path with its query, as requests name the resource.
public struct RTSPURL: Sendable, Equatable {
    public let secure: Bool
    public let user: String?
    public let password: String?
    /// The host as written, IPv6 without its brackets.
    public let host: String
    public let port: UInt16
    /// `/path?query`, at least `/`.
    public let resource: String

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(ParseError) {
        let lower = text.lowercased()
        if lower.hasPrefix("rtsp://") { secure = false } else if lower.hasPrefix("rtsps://") { secure = true } else {
            throw ParseError(description: "expected rtsp:// or rtsps://")
        }
        let rest = text[text.index(text.startIndex, offsetBy: secure ? 8 : 7)...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        var user: String?, password: String?
        if let at = authority.lastIndex(of: "@") {
            let info = authority[..<at]
            if let colon = info.firstIndex(of: ":") {
                user = Self.percentDecoded(info[..<colon])
                password = Self.percentDecoded(info[info.index(after: colon)...])
            } else {
                user = Self.percentDecoded(info)
            }
            authority = authority[authority.index(after: at)...]
        }
        var host = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError(description: "an IPv6 host without its closing bracket") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw ParseError(description: "bad port") }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty else { throw ParseError(description: "no host") }
        var port: UInt16 = secure ? 322 : 554
        if let portText {
            guard let p = UInt16(portText), p > 0 else { throw ParseError(description: "bad port \"\(portText)\"") }
            port = p
        }
        self.user = user
        self.password = password
        self.host = String(host)
        self.port = port
        let path = rest[authorityEnd...]
        resource = path.hasPrefix("/") ? String(path) : "/" + path
    }

    /// The URL requests carry: no credentials.
    public var absolute: String {
        (secure ? "rtsps://" : "rtsp://") + (host.contains(":") ? "[\(host)]" : host) + ":\(port)" + resource
    }

    /// A track's control URL (SDP `a=control`) against the session's base (Content-Base,
    /// else Content-Location, else the URL described): `*` is the base, an absolute URL is
    /// itself, anything else goes after the base and a slash, as FFmpeg and live555 read it.
    public static func resolve(control: String?, base: String) -> String {
        guard let control, !control.isEmpty, control != "*" else { return base }
        if control.lowercased().hasPrefix("rtsp://") || control.lowercased().hasPrefix("rtsps://") { return control }
        return base.hasSuffix("/") ? base + control : base + "/" + control
    }

    static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
