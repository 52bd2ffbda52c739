import Delivery
import IO
import Media
import WebRTC

/// WHEP (WebRTC-HTTP egress, draft-ietf-wish-whep) on the `--web` listener: `POST /whep`
/// with an SDP offer (`application/sdp`) is answered `201` with the SDP answer and a
/// `Location` (`/whep/ID`) that `DELETE` ends; `PATCH` (trickle ICE, ICE restarts) is not
/// taken: `405` with `Allow: DELETE`, as RFC 9725 §4.3.1 lets a server answer (every
/// candidate is in the answer, ICE-lite). Each offer gets a `WebRTCPeer` of the one
/// `WebRTCEndpoint`; once its ICE check and DTLS-SRTP handshake are done it is admitted as a
/// reader of the `StreamServer` (`WebRTCViewer`), counted in `--max-readers` with the others.
///
/// Each access unit is packetized once for every viewer (`package`, a `UnitPackager` of the
/// server's): a viewer adds only its RTP headers and SRTP.
///
/// A viewer's PLI or FIR asks the encoder for an IDR through the same rate limit as joins
/// (`StreamServer.keyframeWanted`); a relay, which has no encoder, starts the viewer's queue
/// again at the cached GOP, at most once per `--idr-min-interval` (`Broadcaster.restartAtCachedGOP`).
///
/// Players on another origin: `OPTIONS` (the CORS preflight, no token needed: a browser sends
/// none with it) and the answers carry the grant of `crossOrigin` (`--web-origin`), none by
/// default (`CrossOrigin` says why).
///
/// Sound: when the stream has some (`hasSound`, asked at each offer), the answer takes the
/// offer's Opus too; `onSoundViewers` says how many viewers get it (the transcoder runs,
/// off this thread, while there are some), and `sendSound` hands each Opus packet to them.
///
/// Loop-owned.
public final class WHEPService: UnitPackager {
    public static let path = "/whep"
    /// The largest offer taken (Chromium's are 4 to 8 kB).
    static let maxOffer = 64 << 10

    private unowned let server: StreamServer
    public let endpoint: WebRTCEndpoint
    /// Peers answered and not yet connected, by resource id.
    private var pending: [String: WebRTCPeer] = [:]
    /// Viewers admitted, by resource id.
    private var viewers: [String: WebRTCViewer] = [:]
    /// Whether the stream has sound now (`produce --audio`, a relay's input with AAC).
    public var hasSound: () -> Bool = { false }
    /// The viewers that get the sound, when it changes (on the loop thread): the transcoder
    /// runs while there are some.
    public var onSoundViewers: (Int) -> Void = { _ in }
    private var soundViewers = 0
    /// The origins whose pages may use this endpoint besides the page's own (`--web-origin`).
    public var crossOrigin = CrossOrigin()

    public init(server: StreamServer, endpoint: WebRTCEndpoint) {
        self.server = server
        self.endpoint = endpoint
        server.add(packager: self)
    }

    /// Each published access unit's RTP payloads, made once for every viewer (`RTPPayloads`;
    /// each adds its own headers and SRTP); nothing while there is none.
    func package(_ unit: AccessUnit, pts90k: UInt64?, into forms: inout WireForms) {
        guard !viewers.isEmpty else { return }
        forms.add(RTPPayloads(unit.isIDR ? unit.nalUnitsForEntry : unit.nalUnits))
    }

    /// Adds `POST /whep` and `DELETE /whep/ID` to `web` (both behind the watch permission),
    /// and `OPTIONS` for both (open to all, as a preflight must be).
    public func install(on web: HTTPServer) {
        web.routes.add("POST", Self.path, maxBody: Self.maxOffer, needs: .watch) { [unowned self] request in
            self.granted(self.post(request), request)
        }
        web.routes.addPrefix("DELETE", Self.path + "/", needs: .watch, handler: .respond { [unowned self] request in
            self.granted(self.delete(request), request)
        })
        web.routes.add("OPTIONS", Self.path) { [unowned self] request in self.crossOrigin.preflight(request, acceptsPost: true) }
        web.routes.addPrefix("OPTIONS", Self.path + "/", handler: .respond { [unowned self] request in
            self.crossOrigin.preflight(request, acceptsPost: false)
        })
        let others = web.refusalHeaders
        web.refusalHeaders = { [unowned self] request in
            request.path == Self.path || request.path.hasPrefix(Self.path + "/") ? self.crossOrigin.headers(request) : others(request)
        }
    }

    private func granted(_ response: HTTPResponse, _ request: HTTPRequest) -> HTTPResponse {
        var response = response
        response.headers += crossOrigin.headers(request)
        return response
    }

    public func start() { endpoint.start() }

    /// Every peer ends, the socket closes (the run is over).
    public func close() { endpoint.close(WebSocketViewer.streamEnded) }

    private func post(_ request: HTTPRequest) -> HTTPResponse {
        server.loop.preconditionOnLoop()
        let metrics = endpoint.metrics
        metrics.offers.increment()
        func refuse(_ status: Int, _ line: String) -> HTTPResponse {
            metrics.offersRefused.increment()
            return HTTPResponse(status: status, body: line + "\n")
        }
        guard request.mediaType == "application/sdp" else { return refuse(415, "WHEP: the offer must be sent as Content-Type: application/sdp") }
        guard !server.draining else { return refuse(503, "the stream has ended") }
        guard server.readerCount + pending.count < server.config.broadcaster.maxReaders else { return refuse(503, "too many readers") }
        let peer: WebRTCPeer
        do {
            peer = try endpoint.offer(String(decoding: request.body, as: UTF8.self), profile: server.streamCodecString.flatMap(SDPAnswer.profileIDC(codecString:)), sound: hasSound())
        } catch {
            if case .unavailable = error { return refuse(503, "WHEP: \(error)") }
            return refuse(400, "WHEP: \(error)")
        }
        pending[peer.id] = peer
        peer.onConnected = { [unowned self, unowned peer] in self.connected(peer) }
        peer.onClosed = { [unowned self, unowned peer] _ in self.pending[peer.id] = nil }
        var response = HTTPResponse(status: 201, contentType: "application/sdp", body: peer.answer)
        response.headers.append(("Location", "\(Self.path)/\(peer.id)"))
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }

    private func delete(_ request: HTTPRequest) -> HTTPResponse {
        server.loop.preconditionOnLoop()
        let id = String(request.path.dropFirst(Self.path.count + 1))
        guard let peer = pending[id] ?? viewers[id]?.webrtc else { return HTTPResponse(status: 404, body: "no such WHEP session\n") }
        peer.close("ended by the viewer (DELETE)")
        return HTTPResponse(status: 200, body: "ended\n")
    }

    /// The handshake is done: the peer becomes a reader, or ends (no room, the stream ended).
    private func connected(_ peer: WebRTCPeer) {
        pending[peer.id] = nil
        let name = (peer.address?.description ?? "?") + " (webrtc)"
        guard !server.draining else { return peer.close(WebSocketViewer.streamEnded) }
        let viewer = WebRTCViewer(peer, peer: name, loop: server.loop)
        let id = peer.id
        let admitted = server.admit(peer: name) { viewer }
        guard admitted, let reader = server.readerID(of: viewer) else { return peer.close("too many readers") }
        viewers[id] = viewer
        if peer.hasAudio {
            soundViewers += 1
            onSoundViewers(soundViewers)
        }
        peer.onKeyframeRequest = { [unowned self] in self.server.keyframeWanted(by: reader) }
        let hears = peer.hasAudio
        peer.onClosed = { [unowned self, weak viewer] reason in
            self.viewers[id] = nil
            if hears {
                self.soundViewers -= 1
                self.onSoundViewers(self.soundViewers)
            }
            viewer?.onClose?(reason)
        }
    }

    /// The stream's sound as Opus, to every viewer that takes it; a packet before a viewer's
    /// first picture is counted and left out (its timestamps follow the pictures' clock).
    public func sendSound(_ packets: [AudioPacket]) {
        for viewer in viewers.values where viewer.webrtc.hasAudio {
            for packet in packets where viewer.webrtc.sendAudio(packet.data, mediaTime90k: packet.mediaTime.ticks) == .beforeVideo {
                endpoint.metrics.audioBeforeVideo.increment()
            }
        }
    }
}
