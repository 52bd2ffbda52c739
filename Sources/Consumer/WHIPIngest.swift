import Audio
import Clocks
import IO
import Media
import Metrics
import Serving
import WebRTC

/// `consume --from whip-listen://HOST:PORT/PATH`: a WHIP endpoint (RFC 9725) that takes one
/// publisher at a time (OBS, a browser page, GStreamer's whipclientsink) and hands what it sends to the
/// intake as any input's access units and AAC.
///
/// An HTTP listener of its own (`POST PATH` with an SDP offer, `application/sdp`, answered
/// `201` with a recvonly answer and a `Location` (`PATH/ID`) that `DELETE` ends; `PATCH` is
/// `405`: ICE-lite, every candidate in the answer), tokens and TLS as `--web`'s (the route
/// needs the `publish` permission when tokens are on); and a `WebRTCEndpoint` of its own on
/// the listener's address (ICE-lite, DTLS server, SRTP), as WHEP's. A second offer while a
/// publisher is there (or in its handshake) is `409`; the publisher's `DELETE`, its DTLS
/// close, ICE consent lost (no check for 30 s) or no packet for the stall timeout end it:
/// the intake drops the unit in progress, the input is reported lost, and the next publisher
/// is waited for, as a reconnecting input waits (`reconnectTimeout`: how long, nil for ever;
/// a publisher that left with `DELETE` or a DTLS close ended its stream cleanly).
///
/// Loop-owned: the intake is used on the loop thread.
public final class WHIPIngest {
    public struct Config: Sendable {
        public let endpoint: Endpoint
        public let path: String
        /// The input as shown to users.
        public let shown: String
        public let stallTimeout: Double
        public let reconnectTimeout: Double?

        public init(endpoint: Endpoint, path: String, shown: String, stallTimeout: Double, reconnectTimeout: Double?) {
            self.endpoint = endpoint
            self.path = path
            self.shown = shown
            self.stallTimeout = stallTimeout
            self.reconnectTimeout = reconnectTimeout
        }
    }

    public let config: Config
    private let loop: EventLoop
    public let http: HTTPServer
    private let udp: WebRTCEndpoint
    private let intake: StreamIntake
    private let metrics: WHIPMetrics
    /// The publishers' Opus made AAC off the loop; nil when it cannot be (no libavcodec).
    private let sound: WHIPSound?
    private let onEvent: (InputEvent) -> Void
    private let onEnd: (DemuxReader.End) -> Void
    /// Lines for the log (a refused offer, a failed handshake).
    private let log: (String) -> Void
    private var pending: (peer: WebRTCPeer, postedAt: Double)?
    private var publisher: WHIPPublisher?
    private var everPublished = false
    private var tickTimer: LoopTimer?
    private var giveUpTimer: LoopTimer?
    /// When the publisher's offer came, until its first picture went on.
    private var firstUnitSince: Double?
    /// A publisher's first picture went on to the outputs, this many seconds after its offer
    /// came (seen on the next tick, within 20 ms).
    public var onFirstPicture: (Double) -> Void = { _ in }

    /// Binds the HTTP listener and the UDP socket (a busy port throws here); starts the
    /// sound's thread (`WHIPSound`), or says why a publisher's Opus cannot be made AAC.
    public init(loop: EventLoop, config: Config, intake: StreamIntake, registry: MetricsRegistry, log: @escaping (String) -> Void,
                onEvent: @escaping (InputEvent) -> Void, onEnd: @escaping (DemuxReader.End) -> Void) throws {
        self.loop = loop
        self.config = config
        self.intake = intake
        self.log = log
        self.onEvent = onEvent
        self.onEnd = onEnd
        metrics = WHIPMetrics(registry: registry)
        http = try HTTPServer(loop: loop, endpoint: config.endpoint)
        var bind = "0.0.0.0"
        if let address = try? SocketAddress.resolve(config.endpoint, passive: true).first { bind = address.host }
        let candidates = try HostCandidates.list(bound: bind, extra: [])
        // WHEP's counters are not these: the publisher's are WHIPMetrics'.
        udp = try WebRTCEndpoint(loop: loop, host: bind, candidates: candidates,
                                 metrics: .apart(badRTCP: metrics.badRTCP, strayDatagrams: metrics.strayDatagrams,
                                                notSent: metrics.rtcpNotSent))
        do {
            sound = WHIPSound(try AACTranscoder(), loop: loop, dropped: intake.metrics.droppedAudioPackets, refused: metrics.malformedPackets) {
                [intake] packets in for aac in packets { intake.push(audio: aac.data, packetTime: aac.mediaTime) }
            }
        } catch {
            sound = nil
            log("\(config.shown): a publisher's sound is not relayed: \(error)")
        }
        http.routes.add("POST", config.path, maxBody: 64 << 10, needs: .publish) { [unowned self] request in self.post(request) }
        http.routes.addPrefix("DELETE", config.path + "/", needs: .publish, handler: .respond { [unowned self] request in self.delete(request) })
    }

    public func start() {
        loop.preconditionOnLoop()
        http.start()
        udp.start()
    }

    /// The run is over: the publisher ends (DTLS close_notify), the listeners close.
    public func stop() {
        loop.preconditionOnLoop()
        giveUpTimer?.stop()
        tickTimer?.stop()
        pending?.peer.onClosed = { _ in }
        publisher?.peer.onClosed = { _ in }
        udp.close("the relay stopped")
        http.close()
        sound?.stop()
        pending = nil
        publisher = nil
    }

    // MARK: - HTTP

    private func post(_ request: HTTPRequest) -> HTTPResponse {
        loop.preconditionOnLoop()
        metrics.offers.increment()
        guard request.mediaType == "application/sdp" else {
            metrics.refusedBadOffer.increment()
            return HTTPResponse(status: 415, body: "WHIP: the offer must be sent as Content-Type: application/sdp\n")
        }
        guard pending == nil && publisher == nil else {
            metrics.refusedBusy.increment()
            log("\(config.shown): refused a second publisher (409): one publishes at a time")
            return HTTPResponse(status: 409, body: "WHIP: \(config.path) already has a publisher (one at a time): it must end its session (DELETE) or go away first\n")
        }
        let peer: WebRTCPeer
        do {
            peer = try udp.offer(String(decoding: request.body, as: UTF8.self), profile: nil, sound: sound != nil, direction: .receive)
        } catch {
            metrics.refusedBadOffer.increment()
            let line = Self.refusal(error)
            log("\(config.shown): refused an offer: \(line)")
            if case .unavailable = error { return HTTPResponse(status: 503, body: "WHIP: \(line)\n") }
            return HTTPResponse(status: 400, body: "WHIP: \(line)\n")
        }
        pending = (peer, MonotonicClock.seconds)
        peer.onConnected = { [unowned self, unowned peer] in self.connected(peer) }
        peer.onClosed = { [unowned self, unowned peer] reason in self.closed(peer, reason) }
        var response = HTTPResponse(status: 201, contentType: "application/sdp", body: peer.answer)
        response.headers.append(("Location", "\(config.path)/\(peer.id)"))
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }

    /// One line for an offer refused: what a sender's wording would say wrong for a receiver is said for it.
    static func refusal(_ error: WebRTCEndpoint.OfferFailure) -> String {
        if case .offer(.noH264) = error { return "the offer sends no H.264 with packetization-mode=1 (nalcast relays H.264 as it was encoded)" }
        return error.description
    }

    private func delete(_ request: HTTPRequest) -> HTTPResponse {
        loop.preconditionOnLoop()
        let id = String(request.path.dropFirst(config.path.count + 1))
        guard let peer = [pending?.peer, publisher?.peer].compactMap({ $0 }).first(where: { $0.id == id }) else {
            return HTTPResponse(status: 404, body: "no such WHIP session\n")
        }
        peer.close(Self.deleted)
        return HTTPResponse(status: 200, body: "ended\n")
    }

    static let deleted = "DELETE of its session"

    // MARK: - The publisher

    private func connected(_ peer: WebRTCPeer) {
        guard let posted = pending, posted.peer === peer else { return }
        pending = nil
        giveUpTimer?.stop()
        if everPublished { intake.metrics.reconnects.increment() }
        everPublished = true
        metrics.publishers.increment()
        let publisher = WHIPPublisher(peer: peer, loop: loop, intake: intake, metrics: metrics, sound: sound)
        self.publisher = publisher
        firstUnitSince = posted.postedAt
        let found = "webrtc from \(peer.address?.description ?? "?"), \(peer.srtpProfile?.name ?? "no SRTP profile"), H.264"
            + (publisher.hasSound ? " and Opus (relayed as AAC)" : "")
        onEvent(InputEvent(.publisher, config.shown, .opened(attempts: 1, opening: InputEvent.Opening(seconds: MonotonicClock.seconds - posted.postedAt, found: found, ignored: []))))
        let timer = LoopTimer(loop: loop) { [unowned self] in self.tick() }
        timer.start(after: 0.02, repeating: 0.02)
        tickTimer = timer
    }

    private func tick() {
        guard let publisher else { return }
        publisher.tick()
        if let posted = firstUnitSince, publisher.delivered > 0 {
            firstUnitSince = nil
            onFirstPicture(MonotonicClock.seconds - posted)
        }
        if MonotonicClock.seconds - publisher.lastPacket > config.stallTimeout {
            intake.metrics.stalls.increment()
            onEvent(InputEvent(.publisher, config.shown, .stalled(seconds: config.stallTimeout)))
            publisher.peer.close("no packet for \(config.stallTimeout) s")
        }
    }

    private func closed(_ peer: WebRTCPeer, _ reason: String) {
        if let posted = pending, posted.peer === peer {
            pending = nil
            return log("\(config.shown): a publisher's handshake did not complete (\(reason))")
        }
        guard let publisher, publisher.peer === peer else { return }
        self.publisher = nil
        tickTimer?.stop()
        tickTimer = nil
        intake.inputFailed()
        let clean = reason == Self.deleted || peer.closedByRemote
        let retrying = config.reconnectTimeout.map { $0 > 0 } ?? true
        onEvent(InputEvent(.publisher, config.shown, .lost(reason: reason, retrying: retrying)))
        guard let timeout = config.reconnectTimeout else { return }
        let giveUp = LoopTimer(loop: loop) { [unowned self] in
            guard self.publisher == nil else { return }
            self.onEnd(.gaveUp(reason: reason, everOpened: true, endedCleanly: clean))
        }
        giveUp.start(after: timeout)
        giveUpTimer = giveUp
    }
}
