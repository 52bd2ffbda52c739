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
/// - the part the preload hint names waits until it is written, as long;
/// - the playlist is cacheable for a second (a CDN collapses the readers' reloads), the
///   header, segments and parts for a year (`immutable`: a name is never reused).
///
/// Files are read from the directory, where the writer renames each only once it is whole.
/// The writer's updates wake the waiting requests through a `Mailbox` (its thread to the
/// loop). Loop-owned.
public final class HLSService {
    private let loop: EventLoop
    private let live: HLSLive
    private var replies: [ObjectIdentifier: HTTPReply] = [:]
    private var waiting: [Waiter] = []
    private var wake: Mailbox<Int>!
    /// When the last request came (monotonic ns): `linger` waits only for readers still there.
    private var lastRequestNs: UInt64 = 0
    public static let prefix = "/hls/"

    private struct Waiter {
        enum Want { case playlist(sequence: Int, part: Int?), file(String), anyPlaylist }
        let reply: HTTPReply
        let want: Want
        let headOnly: Bool
        let timer: LoopTimer
    }

    public init(loop: EventLoop, live: HLSLive) {
        self.loop = loop
        self.live = live
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
        let reply = HTTPReply(connection: connection)
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
        answerOrWait(reply, .file(name), headOnly: headOnly)
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
        let playlist = live.playlist
        switch want {
        case .anyPlaylist, .playlist:
            var ready = playlist?.isPlayable ?? false
            if case .playlist(let sequence, let part) = want, let playlist { ready = ready && playlist.has(sequence: sequence, part: part) }
            guard let playlist, ready else {
                if final { reply.send(status: 503, contentType: "text/plain", body: Array("not yet\n".utf8), headers: [("Cache-Control", "no-cache")]) }
                return final
            }
            reply.send(status: 200, contentType: "application/vnd.apple.mpegurl", body: Array(playlist.render().utf8),
                       headers: [("Cache-Control", playlist.ended ? "max-age=60" : "max-age=1")], headOnly: headOnly)
            return true
        case .file(let name):
            let fd = open("\(live.directory)/\(name)", O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                // The part the preload hint names is worth waiting for; anything else is not there.
                let hinted = playlist.map { !$0.ended && $0.nextPartName == name } ?? false
                guard final || !hinted else { return false }
                reply.send(status: 404, contentType: "text/plain", body: Array("not found\n".utf8), headers: [("Cache-Control", "no-cache")])
                return true
            }
            var info = stat()
            fstat(fd, &info)
            let type = name.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : name.hasSuffix(".mp4") ? "video/mp4" : "video/iso.segment"
            reply.send(status: 200, contentType: type, files: [(fd, 0, Int(info.st_size))],
                       headers: [("Cache-Control", "public, max-age=31536000, immutable")], headOnly: headOnly)
            return true
        }
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
