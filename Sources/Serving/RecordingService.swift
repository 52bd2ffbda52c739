import IO
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--web` on a `consume --segments DIR`: the recordings by time, from the `RecordingIndex`
/// kept as segments finish (never a directory scan per request).
///
/// - `GET /recordings`: `{"segments":[{"name","start","end","duration"}…]}`, times RFC 3339;
/// - `GET /recordings/get?start=RFC3339&duration=30s`: the segments covering that range as
///   one fragmented MP4 (`RecordingCut`), from the IDR at or before `start`;
///   `Accept-Ranges: bytes`, one byte range per request (206, or 416 past the end), so a
///   `<video>` can seek in it. `X-Recording-Start` says where it really begins.
///
/// Loop-owned.
public final class RecordingService {
    private let loop: EventLoop
    private let index: RecordingIndex
    /// Reads the files off the loop.
    private let reads: FileReads
    private var replies: [ObjectIdentifier: HTTPReply] = [:]

    public init(loop: EventLoop, index: RecordingIndex) {
        self.loop = loop
        self.index = index
        reads = FileReads(loop: loop)
    }

    public func addRoutes(to routes: inout HTTPRoutes) {
        routes.add("GET", "/recordings", needs: .watch) { [index] _ in
            var response = HTTPResponse(status: 200, contentType: "application/json", body: Self.listing(index.entries))
            response.headers.append(("Cache-Control", "no-cache"))
            return response
        }
        // The route holds the service: it lives as long as the server.
        for method in ["GET", "HEAD"] {
            routes.add(method, "/recordings/get", needs: .watch, handler: .takeOver { request, connection, _ in self.get(request, connection) })
        }
    }

    static func listing(_ entries: [RecordingIndex.Entry]) -> String {
        let items = entries.map { e in
            "{\"name\":\"\(e.name)\",\"start\":\"\(HLSPlaylist.iso8601(e.startNs))\",\"end\":\"\(HLSPlaylist.iso8601(e.endNs))\",\"duration\":\(Double(e.durationNs / 1_000_000) / 1000)}"
        }
        return "{\"segments\":[" + items.joined(separator: ",") + "]}\n"
    }

    private func get(_ request: HTTPRequest, _ connection: Connection) {
        let reply = HTTPReply(connection: connection, reads: reads)
        replies[ObjectIdentifier(reply)] = reply
        reply.onClose = { [unowned self, unowned reply] in self.replies[ObjectIdentifier(reply)] = nil }
        func fail(_ status: Int, _ text: String) {
            reply.send(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
        }
        let query = HLSService.query(request.query)
        guard let startText = query["start"], let start = Self.parseRFC3339(startText.percentDecoded) else {
            return fail(400, "start: expected an RFC 3339 time such as 2026-12-01T18:11:13Z")
        }
        guard let duration = Self.parseDuration(query["duration"] ?? "30s"), duration > 0 else {
            return fail(400, "duration: expected a duration such as 30s, 500ms, 2m")
        }
        if let format = query["format"], format != "mp4" { return fail(400, "format: only mp4") }
        // The cut reads the segments' fragment tables (the first time each is asked for) and
        // opens their files: on the files thread, never on the loop.
        let range = request.header("range"), headOnly = request.method == "HEAD"
        reads.perform({ [index] in Self.answer(index, startNs: start, durationNs: duration, range: range) }) { answer in
            switch answer {
            case .failed(let status, let text): fail(status, text)
            case .body(let status, let headers, let pieces):
                reply.send(status: status, contentType: status == 416 ? nil : "video/mp4", pieces: pieces, headers: headers, headOnly: headOnly)
            }
        }
    }

    /// What `/recordings/get` answers: a failure's status and text, or the body's pieces with
    /// their files open.
    enum Answer: Sendable {
        case failed(Int, String)
        case body(status: Int, headers: [(String, String)], pieces: [HTTPReply.Piece])
    }

    /// The cut of `[startNs, startNs + durationNs)` (or the bytes of it `range` asks for),
    /// its files opened. Blocks on the disk: run off the loop.
    static func answer(_ index: RecordingIndex, startNs: UInt64, durationNs: UInt64, range: String?) -> Answer {
        guard let cut = RecordingCut.make(index, startNs: startNs, durationNs: durationNs) else {
            return .failed(404, "nothing recorded in that range")
        }
        var headers: [(String, String)] = [("Accept-Ranges", "bytes"), ("Cache-Control", "public, max-age=60"),
                                           ("X-Recording-Start", HLSPlaylist.iso8601(cut.startNs))]
        var status = 200
        var pieces = cut.pieces
        let total = cut.length
        switch HTTPReply.range(range, length: total) {
        case .whole: break
        case .invalid:
            return .body(status: 416, headers: [("Content-Range", "bytes */\(total)")], pieces: [])
        case .range(let first, let last):
            status = 206
            pieces = cut.slice(first: first, last: last)
            headers.append(("Content-Range", "bytes \(first)-\(last)/\(total)"))
        }
        var opened: [String: Int32] = [:]
        var body: [HTTPReply.Piece] = []
        for piece in pieces {
            switch piece {
            case .bytes(let b): body.append(.bytes(b))
            case .file(let name, let offset, let length):
                let fd = opened[name] ?? open("\(index.directory)/\(name)", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    for fd in opened.values { _ = close(fd) }
                    return .failed(404, "\(name) is gone")
                }
                opened[name] = fd
                body.append(.file(fd: fd, offset: offset, length: length))
            }
        }
        return .body(status: status, headers: headers, pieces: body)
    }

    /// `2026-12-01T18:11:13Z`, `…13.250Z`, `…13+02:00`: ns since the epoch.
    public static func parseRFC3339(_ text: String?) -> UInt64? {
        guard let text, text.count >= 20 else { return nil }
        let c = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= c.count else { return nil }
            var v = 0
            for b in c[from..<(from + count)] {
                guard b >= 48, b <= 57 else { return nil }
                v = v * 10 + Int(b - 48)
            }
            return v
        }
        guard let y = number(0, 4), let mo = number(5, 2), let d = number(8, 2), let h = number(11, 2), let mi = number(14, 2), let s = number(17, 2),
              c[4] == 45, c[7] == 45, c[10] == 84 || c[10] == 116 || c[10] == 32, c[13] == 58, c[16] == 58, (1...12).contains(mo), (1...31).contains(d) else { return nil }
        var at = 19
        var fraction: UInt64 = 0
        if at < c.count, c[at] == 46 {
            at += 1
            var scale: UInt64 = 100_000_000
            while at < c.count, c[at] >= 48, c[at] <= 57 {
                fraction += UInt64(c[at] - 48) * scale
                scale /= 10
                at += 1
            }
        }
        guard at < c.count else { return nil }
        var offset = 0
        if c[at] == 43 || c[at] == 45 {
            guard let oh = number(at + 1, 2), let om = number(at + 4, 2), at + 6 == c.count else { return nil }
            offset = (oh * 3600 + om * 60) * (c[at] == 43 ? 1 : -1)
        } else {
            guard c[at] == 90 || c[at] == 122, at + 1 == c.count else { return nil }
        }
        let seconds = CivilTime.seconds(year: y, month: mo, day: d, hour: h, minute: mi, second: s) - Int64(offset)
        guard seconds >= 0 else { return nil }
        return UInt64(seconds) * 1_000_000_000 + fraction
    }

    /// `30s`, `500ms`, `2m`, `1h`: ns.
    static func parseDuration(_ text: String) -> UInt64? {
        for (unit, ns) in [("ms", 1_000_000.0), ("s", 1e9), ("m", 60e9), ("h", 3600e9)] where text.hasSuffix(unit) {
            guard let v = Double(text.dropLast(unit.count)), v.isFinite, v >= 0, v < 1e6 else { return nil }
            return UInt64(v * ns)
        }
        return nil
    }
}

extension String {
    /// `%2B` → `+`, `%3A` → `:` (a `+` in a query is a space; `+02:00` must come encoded).
    var percentDecoded: String {
        var out: [UInt8] = []
        let b = Array(utf8)
        var i = 0
        while i < b.count {
            if b[i] == 37, i + 2 < b.count, let v = UInt8(String(decoding: b[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                out.append(v)
                i += 3
            } else {
                out.append(b[i] == 43 ? 32 : b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
