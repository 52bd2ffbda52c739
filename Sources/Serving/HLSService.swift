import Clocks
import IO
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--web` with `--hls DIR`: serves the HLS the writer makes at `/hls/` (`GET /hls/index.m3u8`
/// and the files it names), with Low-Latency HLS's blocking requests:
///
/// - `index.m3u8?_HLS_msn=M[&_HLS_part=P]` waits until segment M (its part P) is in the
///   playlist, at most three target durations (then 503); M more than two past the newest
///   segment is a 400 at once (RFC 8216bis 6.2.5.2);
/// - a part is a byte range of its segment (`Range: bytes=A-B`): a range of the segment
///   being written (`segmentN.m4s.part` on disk) or of the next one waits, as long, until
///   the writer published those bytes; an open range (`bytes=A-`, the preload hint's
///   `BYTERANGE-START`) until a part begins there, and gets the bytes written so far
///   (`Content-Range: bytes A-B/*`); the whole of such a segment, until it is complete;
/// - the playlist is cacheable for a second (a CDN collapses the readers' reloads), the
///   header, segments and byte ranges for a year (`immutable`: a name is never reused,
///   and a byte once published never changes).
///
/// Files are read from the directory, where the writer renames each only once it is whole;
/// a segment being written is read only as far as the playlist published it.
/// The writer's updates wake the waiting requests through a `Mailbox` (its thread to the
/// loop). Loop-owned.
public final class HLSService {
    private let loop: EventLoop
    private let live: HLSLive
    private var replies: [ObjectIdentifier: HTTPReply] = [:]
    private var waiting: [Waiter] = []
    private var wake: Mailbox<Int>!
    /// Reads the files off the loop.
    private let reads: FileReads
    /// When the last request came (monotonic ns): `linger` waits only for readers still there.
    private var lastRequestNs: UInt64 = 0
    public static let prefix = "/hls/"

    private struct Waiter {
        enum Want { case playlist(sequence: Int, part: Int?), file(String, range: String?), anyPlaylist }
        let reply: HTTPReply
        let want: Want
        let headOnly: Bool
        let timer: LoopTimer
    }

    public init(loop: EventLoop, live: HLSLive) {
        self.loop = loop
        self.live = live
        reads = FileReads(loop: loop)
        wake = Mailbox<Int>(loop: loop) { [unowned self] _ in self.updated() }
        let wake = self.wake!
        live.setOnUpdate { _ = wake.send(0) }
    }

    /// Adds `GET` and `HEAD /hls/…` to `routes`.
    public func addRoutes(to routes: inout HTTPRoutes) {
        for method in ["GET", "HEAD"] {
            // The route holds the service: it lives as long as the server.
            routes.addPrefix(method, Self.prefix, needs: .watch, handler: .takeOver { request, connection, _ in
                self.serve(request, connection)
            })
        }
    }

    /// The stream ended and its writer published the ended playlist: calls `then` once the
    /// readers had a target duration to reload it (at once when none asked for anything in
    /// the last one), so that they see `EXT-X-ENDLIST` instead of a server gone.
    public func linger(then: @escaping () -> Void) {
        let seconds = Double(live.playlist?.targetDuration ?? 0)
        let idle = Double(MonotonicClock.nanoseconds &- lastRequestNs) / 1e9
        guard seconds > 0, idle < seconds else { return then() }
        var timer: LoopTimer?
        timer = LoopTimer(loop: loop) {
            timer = nil
            then()
        }
        timer?.start(after: seconds)
    }

    private func serve(_ request: HTTPRequest, _ connection: Connection) {
        lastRequestNs = MonotonicClock.nanoseconds
        let reply = HTTPReply(connection: connection, reads: reads)
        replies[ObjectIdentifier(reply)] = reply
        reply.onClose = { [unowned self, unowned reply] in self.replies[ObjectIdentifier(reply)] = nil }
        let name = String(request.path.dropFirst(Self.prefix.count))
        let headOnly = request.method == "HEAD"
        // Only whole files: never a `.part` being written, nothing hidden, nothing elsewhere.
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."), !name.hasSuffix(".part") else {
            return reply.send(status: 404, contentType: "text/plain", body: Array("not found\n".utf8))
        }
        if name == HLSPlaylist.playlistName {
            let query = Self.query(request.query)
            let msn = query["_HLS_msn"].flatMap { Int($0) }, part = query["_HLS_part"].flatMap { Int($0) }
            if (query["_HLS_msn"] != nil && msn == nil) || (query["_HLS_part"] != nil && (msn == nil || part == nil)) {
                return reply.send(status: 400, contentType: "text/plain", body: Array("_HLS_part needs _HLS_msn; both are numbers\n".utf8))
            }
            let want: Waiter.Want = msn.map { .playlist(sequence: $0, part: part) } ?? .anyPlaylist
            if let playlist = live.playlist, let msn, msn > playlist.lastSequence + 2 {
                return reply.send(status: 400, contentType: "text/plain", body: Array("_HLS_msn is more than two segments ahead\n".utf8))
            }
            return answerOrWait(reply, want, headOnly: headOnly)
        }
        answerOrWait(reply, .file(name, range: request.header("range")), headOnly: headOnly)
    }

    private func answerOrWait(_ reply: HTTPReply, _ want: Waiter.Want, headOnly: Bool) {
        if answer(reply, want, headOnly: headOnly, final: false) { return }
        let seconds = Double(3 * (live.playlist?.targetDuration ?? 2))
        let timer = LoopTimer(loop: loop) { [unowned self, unowned reply] in
            self.waiting.removeAll { $0.reply === reply }
            _ = self.answer(reply, want, headOnly: headOnly, final: true)
        }
        waiting.append(Waiter(reply: reply, want: want, headOnly: headOnly, timer: timer))
        timer.start(after: seconds)
    }

    /// The writer published: answer whoever waits for what is there now.
    private func updated() {
        let now = waiting
        waiting = []
        for waiter in now {
            if waiter.reply.isClosed || answer(waiter.reply, waiter.want, headOnly: waiter.headOnly, final: false) {
                waiter.timer.stop()
            } else {
                waiting.append(waiter)
            }
        }
    }

    /// Answers when it can (or `final`ly, with 404 or 503); false to wait.
    private func answer(_ reply: HTTPReply, _ want: Waiter.Want, headOnly: Bool, final: Bool) -> Bool {
        let published = live.published, playlist = published?.playlist
        switch want {
        case .anyPlaylist, .playlist:
            var ready = playlist?.isPlayable ?? false
            if case .playlist(let sequence, let part) = want, let playlist { ready = ready && playlist.has(sequence: sequence, part: part) }
            guard let (playlist, text) = published, ready else {
                if final { reply.send(status: 503, contentType: "text/plain", body: Array("not yet\n".utf8), headers: [("Cache-Control", "no-cache")]) }
                return final
            }
            reply.send(status: 200, contentType: "application/vnd.apple.mpegurl", body: text,
                       headers: [("Cache-Control", playlist.ended ? "max-age=60" : "max-age=1")], headOnly: headOnly)
            return true
        case .file(let name, let range):
            return answerFile(reply, name, range: range, playlist: playlist, headOnly: headOnly, final: final)
        }
    }

    /// A file of the directory: a segment being written (or the next one) as far as it is
    /// published, any other whole, with one byte range if asked.
    private func answerFile(_ reply: HTTPReply, _ name: String, range: String?, playlist: HLSPlaylist?, headOnly: Bool, final: Bool) -> Bool {
        let type = name.hasSuffix(".mp4") ? "video/mp4" : "video/iso.segment"
        let immutable = ("Cache-Control", "public, max-age=31536000, immutable")
        if let playlist, !playlist.ended, let growing = Self.growing(name, in: playlist) {
            guard let (first, last) = Self.openRange(range) else {
                // The whole of it once it is complete (a finished segment is what its name says).
                guard final else { return false }
                reply.send(status: 404, contentType: "text/plain", body: Array("not found\n".utf8), headers: [("Cache-Control", "no-cache")])
                return true
            }
            let available = growing?.bytes ?? 0
            guard available >= (last ?? first) + 1 else {
                guard final else { return false }
                reply.send(status: 404, contentType: "text/plain", body: Array("not yet written\n".utf8), headers: [("Cache-Control", "no-cache")])
                return true
            }
            let path = "\(live.directory)/\(name)", end = last ?? available - 1
            // Opened on the files thread, as they are read; renamed since, if not found as `.part`.
            reads.perform({ Self.open(path + ".part") ?? Self.open(path) }) { opened in
                guard let (fd, _) = opened else { return Self.notFound(reply) }
                reply.send(status: 206, contentType: type, files: [(fd, first, end - first + 1)],
                           headers: [("Content-Range", "bytes \(first)-\(end)/*"), immutable],
                           headOnly: headOnly)
            }
            return true
        }
        reads.perform({ [directory = live.directory] in Self.open("\(directory)/\(name)") }) { opened in
            guard let (fd, size) = opened else { return Self.notFound(reply) }
            var headers = [("Accept-Ranges", "bytes"), immutable]
            switch HTTPReply.range(range, length: size) {
            case .whole:
                reply.send(status: 200, contentType: type, files: [(fd, 0, size)], headers: headers, headOnly: headOnly)
            case .range(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
                reply.send(status: 206, contentType: type, files: [(fd, first, last - first + 1)], headers: headers, headOnly: headOnly)
            case .invalid:
                _ = Glibc.close(fd)
                reply.send(status: 416, contentType: "text/plain", body: [], headers: [("Content-Range", "bytes */\(size)"), ("Cache-Control", "no-cache")])
            }
        }
        return true
    }

    /// `path` opened for reading, and its size; nil when it is not there. Blocks on the disk:
    /// run on the files thread.
    private static func open(_ path: String) -> (fd: Int32, size: Int)? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        fstat(fd, &info)
        return (fd, Int(info.st_size))
    }

    private static func notFound(_ reply: HTTPReply) {
        reply.send(status: 404, contentType: "text/plain", body: Array("not found\n".utf8), headers: [("Cache-Control", "no-cache")])
    }

    /// `.some(segment)` when `name` is the segment being written, `.some(nil)` when it is
    /// the next one, nil for anything else.
    public static func growing(_ name: String, in playlist: HLSPlaylist) -> HLSPlaylist.Segment?? {
        if let segment = playlist.segment(named: name) { return segment.complete ? nil : .some(segment) }
        guard name.hasPrefix("segment"), name.hasSuffix(".m4s"), let n = Int(name.dropFirst(7).dropLast(4)) else { return nil }
        return n == playlist.lastSequence + 1 ? .some(nil) : nil
    }

    /// `bytes=A-B` or `bytes=A-`: the first byte and the last (nil: open); nil for anything else.
    public static func openRange(_ header: String?) -> (Int, Int?)? {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2, let first = Int(spec[0].trimmingPrefix(" ")), first >= 0 else { return nil }
        if spec[1].isEmpty { return (first, nil) }
        guard let last = Int(spec[1]), last >= first else { return nil }
        return (first, last)
    }

    /// `a=1&b=2` as a dictionary (no percent-decoding: the names and values here need none).
    static func query(_ text: String?) -> [String: String] {
        var out: [String: String] = [:]
        for pair in (text ?? "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            out[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
        }
        return out
    }
}
