/// Where an `rtmp://HOST[:PORT]/APP/KEY` push goes, split as FFmpeg's RTMP client splits
/// it (and OBS, for the URLs both take): the path's first part is the application and the
/// rest the stream key (the "playpath"), except that with three parts or more the first two
/// are the application (`app/instance`) and the rest the key; a query string stays with the
/// key (`live/key?token=…`: servers read it there), a `.flv` ending is taken off it. The
/// `tcUrl` the server is told names the application with the port (1935 when none is given).
struct RTMPAddress: Equatable {
    var host: String
    var port: UInt16
    var app: String
    var playpath: String
    var tcUrl: String

    init?(_ url: String) {
        guard url.lowercased().hasPrefix("rtmp://") else { return nil }
        let rest = url.dropFirst("rtmp://".count)
        let (host, portText, authorityEnd) = PushTarget.hostAndPort(rest)
        var port: UInt16 = 1935
        if let portText {
            guard let p = UInt16(portText) else { return nil }
            port = p
        }
        // The path without its leading slash; the query stays with it, as FFmpeg keeps it.
        let path = rest[authorityEnd...].drop { $0 == "/" }
        guard !host.isEmpty, let first = path.firstIndex(of: "/") else { return nil }
        let afterFirst = path[path.index(after: first)...]
        let colon = afterFirst.firstIndex(of: ":")
        var keyStart = path.index(after: first)
        var app = path[..<first]
        // A second slash before any ':' (which would begin a "mp4:..." playpath) ends an
        // application instance.
        if let second = afterFirst.firstIndex(of: "/"), colon.map({ second < $0 }) ?? true {
            app = path[..<second]
            keyStart = afterFirst.index(after: second)
        }
        var key = String(path[keyStart...])
        if !key.contains("?") && key.hasSuffix(".flv") { key.removeLast(4) }
        guard !key.isEmpty, !app.isEmpty else { return nil }
        self.host = host
        self.port = port
        self.app = String(app)
        playpath = key
        let shownHost = host.contains(":") ? "[\(host)]" : host
        tcUrl = "rtmp://\(shownHost):\(port)/\(app)"
    }
}
