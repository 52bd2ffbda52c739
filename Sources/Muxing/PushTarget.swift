/// A `--forward` URL that goes to a media server through libavformat: what it is, which
/// muxer and options carry the stream there, and how to name it where people can read it.
///
/// - `rtmp://HOST[:PORT]/APP/KEY`, `rtmps://…`: FLV over RTMP (nginx-rtmp, MediaMTX, SRS,
///   YouTube and Twitch ingest);
/// - `srt://HOST:PORT[?streamid=…&passphrase=…]`: MPEG-TS over SRT, as a caller;
/// - `rtsp://HOST[:PORT]/PATH`: an RTSP publish (ANNOUNCE and RECORD), RTP interleaved in
///   the TCP connection;
/// - `udp://HOST:PORT`: MPEG-TS in datagrams of 7 TS packets (1316 bytes).
///
/// Anything secret stays out of `description`: a user and password, an RTMP stream key (the
/// last part of the path), and the value of every query field but the harmless ones.
public struct PushTarget: Sendable, CustomStringConvertible, Equatable {
    public enum Kind: String, Sendable {
        case rtmp, srt, rtsp, udp
    }

    /// The URL as given, credentials included: only for libavformat.
    public let url: String
    public let kind: Kind
    /// The URL with its secrets masked, for logs, events and metrics.
    public let description: String
    /// SRT's passphrase and key length (`--srt-passphrase-file`); query fields of the URL win.
    public var secret: SRTSecret?

    /// The schemes `--forward` hands to libavformat.
    public static let schemes = ["rtmp", "rtmps", "srt", "rtsp", "udp"]

    /// nil when `url` is not a push URL (raw `tcp://` and `unix:` forwards are not); throws
    /// one line when it is one but cannot work (no host, no port where one is needed).
    public init?(url: String) throws(PushTargetError) {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        switch scheme {
        case "rtmp", "rtmps": kind = .rtmp
        case "srt": kind = .srt
        case "rtsp": kind = .rtsp
        case "udp": kind = .udp
        default: return nil
        }
        self.url = url
        let rest = url[url.index(colon, offsetBy: 3)...]
        let (host, port, authorityEnd) = Self.hostAndPort(rest)
        guard !host.isEmpty else { throw PushTargetError("\(scheme):// needs a host: \(Self.shape(kind))") }
        if let port, Int(port).map({ !(1...65535).contains($0) }) ?? true {
            throw PushTargetError("bad port '\(port)' in \(scheme):// URL")
        }
        if port == nil && (kind == .srt || kind == .udp) {
            throw PushTargetError("\(scheme):// needs a port: \(Self.shape(kind))")
        }
        let afterAuthority = rest[authorityEnd...]
        let queryStart = afterAuthority.firstIndex(of: "?") ?? afterAuthority.endIndex
        let path = String(afterAuthority[..<queryStart])
        if kind == .rtmp && path.split(separator: "/").count < 2 {
            throw PushTargetError("\(scheme):// needs an application and a stream key: \(Self.shape(kind))")
        }
        description = Self.masked(url)
    }

    /// `url` (any scheme: `--forward` and `consume --from` alike) with its secrets masked:
    /// a user and password (`***@`), an RTMP stream key (the last part of the path), the
    /// value of every query field but the harmless ones. What is not a URL comes back as it is.
    public static func masked(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return url }
        let scheme = url[..<colon].lowercased()
        let rest = url[url.index(colon, offsetBy: 3)...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let hadUser = authority.contains("@")
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let afterAuthority = rest[authorityEnd...]
        let queryStart = afterAuthority.firstIndex(of: "?") ?? afterAuthority.endIndex
        let path = String(afterAuthority[..<queryStart])
        var shown = "\(scheme)://" + (hadUser ? "***@" : "") + authority + maskedPath(path, streamKey: scheme == "rtmp" || scheme == "rtmps")
        if queryStart < afterAuthority.endIndex {
            shown += "?" + maskedQuery(afterAuthority[afterAuthority.index(after: queryStart)...])
        }
        return shown
    }

    /// The muxer that carries H.264 over this protocol.
    var muxer: String {
        switch kind {
        case .rtmp: "flv"
        case .srt, .udp: "mpegts"
        case .rtsp: "rtsp"
        }
    }

    /// Options for libavformat's protocol (`avio_open2`); URL query fields still win.
    var protocolOptions: [(String, String)] {
        switch kind {
        // A caller that closes at the end of a stream waits up to 2 s for the listener to
        // acknowledge what it sent (without it, the last packets are lost).
        case .srt: [("linger", "2")] + (secret?.options ?? [])
        case .udp: [("pkt_size", "1316")]
        case .rtmp, .rtsp: []
        }
    }

    /// Options for the muxer's header.
    var headerOptions: [(String, String)] {
        switch kind {
        // No going back to patch duration and size into the FLV header: a stream has none.
        case .rtmp: [("flvflags", "no_duration_filesize")]
        case .rtsp: [("rtsp_transport", "tcp")]
        case .srt, .udp: []
        }
    }

    private static func shape(_ kind: Kind) -> String {
        switch kind {
        case .rtmp: "rtmp://HOST[:PORT]/APP/KEY"
        case .srt: "srt://HOST:PORT[?streamid=ID]"
        case .rtsp: "rtsp://HOST[:PORT]/PATH"
        case .udp: "udp://HOST:PORT"
        }
    }

    /// HOST and PORT of a URL's authority (`rest`: what follows `scheme://`; a user and
    /// password left out), and where the authority ends (its path or query begins there).
    static func hostAndPort(_ rest: Substring) -> (host: String, port: String?, end: Substring.Index) {
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let (host, port) = split(authority)
        return (host, port, end)
    }

    /// HOST and PORT of `[IPv6]:PORT`, `HOST:PORT` or `HOST`.
    private static func split(_ authority: Substring) -> (String, String?) {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            return (host, after.hasPrefix(":") ? String(after.dropFirst()) : nil)
        }
        if let colon = authority.lastIndex(of: ":") {
            return (String(authority[..<colon]), String(authority[authority.index(after: colon)...]))
        }
        return (String(authority), nil)
    }

    /// An RTMP URL's last path part is the stream key, which is a password in all but name.
    private static func maskedPath(_ path: String, streamKey: Bool) -> String {
        guard streamKey, let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex else { return path }
        return path[...slash] + "****"
    }

    /// Query fields that say how to connect, not who: shown; the others (streamid, which
    /// often names a user, passphrase, tokens) are masked.
    private static let harmless: Set<String> = ["mode", "latency", "linger", "pkt_size", "ttl", "transtype", "maxbw", "localport", "timeout", "tlpktdrop"]

    private static func maskedQuery(_ query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { field -> String in
            guard let eq = field.firstIndex(of: "=") else { return String(field) }
            let key = field[..<eq]
            return harmless.contains(key.lowercased()) ? String(field) : key + "=***"
        }.joined(separator: "&")
    }
}

/// A push URL that cannot work, one line.
public struct PushTargetError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
