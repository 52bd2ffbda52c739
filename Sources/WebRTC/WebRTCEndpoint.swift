import Clocks
import CWebRTC
import IO

/// The UDP side of WebRTC for every viewer of a `--web` listener: one socket on the loop
/// (ICE-lite: it answers checks, never makes them), peers told apart by the ufrag of their
/// checks and then by the address the checks came from; a timer for the handshakes'
/// retransmissions, sender reports and the timeouts (no handshake within `handshakeTimeout`,
/// no check for `consentTimeout`: ICE consent, RFC 7675).
///
/// Loop-owned: made before the loop runs or on it, used on the loop thread.
public final class WebRTCEndpoint {
    public let socket: UDPSocket
    /// The addresses told to viewers as host candidates (with `socket`'s port).
    public let candidateHosts: [String]
    public var handshakeTimeout = 10.0
    public var consentTimeout = 30.0
    /// Once a second: the lowest estimate (REMB, or TWCC's `TransportWideEstimator`) of the connected viewers, the rate that viewer was sent
    /// over the last second and the fraction it lost (its last receiver report's, of 256);
    /// nil when none has an estimate. On the loop thread.
    public var onLowestEstimate: ((estimate: UInt64, sent: UInt64, fractionLost: UInt8)?) -> Void = { _ in }
    private var lastEstimateReportNs: UInt64 = 0
    let loop: EventLoop
    public let metrics: WebRTCMetrics
    let context: DTLSContext
    var byUfrag: [String: WebRTCPeer] = [:]
    private var byAddress: [UDPAddress: WebRTCPeer] = [:]
    var byID: [String: WebRTCPeer] = [:]
    private var timer: LoopTimer?
    private var deferred: [() -> Void] = []
    private var deferredTimer: LoopTimer?

    /// Binds the socket to `host` (a numeric address; the `--web` listener's) and makes the
    /// DTLS certificate. `candidates`: the hosts to announce (numeric addresses).
    public init(loop: EventLoop, host: String, candidates: [String], metrics: WebRTCMetrics) throws {
        self.loop = loop
        self.metrics = metrics
        socket = try UDPSocket(loop: loop, host: host)
        context = try DTLSContext()
        candidateHosts = candidates
    }

    /// Viewers now, connected or not.
    public var peerCount: Int { byID.count }
    public var port: UInt16 { socket.local.port }

    public func start() {
        loop.preconditionOnLoop()
        socket.start { [unowned self] datagram, from in self.received(datagram, from) }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.tick() }
        timer.start(after: 0.05, repeating: 0.05)
        self.timer = timer
    }

    /// Every peer ends (`reason`), the socket closes.
    public func close(_ reason: String) {
        for peer in Array(byID.values) { peer.close(reason) }
        timer?.stop()
        socket.close()
    }

    public func peer(id: String) -> WebRTCPeer? { byID[id] }

    /// Why an offer gets no peer: a bad offer (a 4xx) or no SRTP here (a 503).
    public enum OfferFailure: Error, CustomStringConvertible {
        case offer(SDP.OfferError)
        case unavailable(String)
        public var description: String {
            switch self {
            case .offer(let error): error.description
            case .unavailable(let why): why
            }
        }
    }

    /// A peer for `offerText` with its answer: H.264 on the offer's payload type whose profile
    /// is `profile` (the stream's profile_idc, when known); with `sound`, Opus too when the
    /// offer receives it. `.receive` (WHIP ingest): a recvonly answer taking the offer's
    /// H.264 and (with `sound`) its Opus; the peer hands what comes to `onRTP`.
    public func offer(_ offerText: String, profile: UInt8?, sound: Bool = false, direction: SDPAnswer.Direction = .send) throws(OfferFailure) -> WebRTCPeer {
        loop.preconditionOnLoop()
        if let why = SRTPSession.load() { throw .unavailable(why) }
        let offer: SDP.Offer
        let choice: SDPAnswer
        do {
            offer = try SDP.parseOffer(offerText)
            choice = try SDPAnswer(offer: offer, profile: profile, sound: sound, direction: direction)
        } catch { throw .offer(error) }
        guard let dtls = DTLSAssociation(context, client: choice.dtlsClient) else { throw .unavailable("DTLS: could not make an association") }
        let local = newLocal()
        let sender = RTPSender(ssrc: local.ssrc, payloadType: choice.format.payloadType, captureTimeExtension: choice.captureTimeExtension,
                               sendTimeExtension: choice.sendTimeExtension, playoutDelayExtension: choice.playoutDelayExtension,
                               transportSequenceExtension: choice.transportSequenceExtension, firstSequence: UInt16(truncatingIfNeeded: Self.random32()))
        let audio = choice.audio.map { OpusRTPSender(ssrc: local.audioSSRC, payloadType: $0.payloadType, firstSequence: UInt16(truncatingIfNeeded: Self.random32())) }
        let peer = WebRTCPeer(id: Self.token(16), endpoint: self, dtls: dtls, local: (local.ufrag, local.password), remoteFingerprint: offer.fingerprint,
                              answer: choice.text(local), sender: sender, audioSender: audio, nowNs: MonotonicClock.nanoseconds)
        peer.receives = direction == .receive
        register(peer)
        return peer
    }

    /// What this side says of itself to a new peer (an answer's, or a WHIP push's offer): fresh
    /// ICE credentials, the certificate's fingerprint, the host candidates, new SSRCs.
    func newLocal() -> SDPAnswer.Local {
        SDPAnswer.Local(ufrag: Self.token(8), password: Self.token(24), fingerprint: context.fingerprint,
                        candidates: candidateHosts.map { ($0, socket.local.port) }, ssrc: Self.random32() | 1,
                        audioSSRC: Self.random32() & ~1 | 2,  // even and not 0: never the video's (odd)
                        sessionID: UInt64(Self.random32()) << 20 | UInt64(Self.random32() & 0xFFFFF))
    }

    /// A new peer, found by its ufrag (binding requests) and its id from now on.
    func register(_ peer: WebRTCPeer) {
        byUfrag[peer.localUfrag] = peer
        byID[peer.id] = peer
        metrics.peers.set(Double(byID.count))
    }

    // MARK: - For the peers

    func move(_ peer: WebRTCPeer, to address: UDPAddress) {
        if let old = peer.address, byAddress[old] === peer { byAddress[old] = nil }
        byAddress[address] = peer
    }

    func forget(_ peer: WebRTCPeer) {
        if byUfrag[peer.localUfrag] === peer { byUfrag[peer.localUfrag] = nil }
        if byID[peer.id] === peer { byID[peer.id] = nil }
        metrics.peers.set(Double(byID.count))
        if let address = peer.address, byAddress[address] === peer { byAddress[address] = nil }
        if peer.ice != nil { byAddress = byAddress.filter { $0.value !== peer } }
    }

    /// One more address of `peer` (a pushed peer's server checked from it), its own too.
    func alias(_ peer: WebRTCPeer, _ address: UDPAddress) {
        if byAddress[address] == nil { byAddress[address] = peer }
    }

    /// Runs `work` on a later turn of the loop.
    func later(_ work: @escaping () -> Void) {
        deferred.append(work)
        if deferredTimer == nil { deferredTimer = LoopTimer(loop: loop) { [unowned self] in self.runDeferred() } }
        if deferredTimer?.isActive == false { deferredTimer?.start(after: 0) }
    }

    private func runDeferred() {
        let work = deferred
        deferred = []
        for item in work { item() }
    }

    // MARK: - Input and time

    private func received(_ datagram: [UInt8], _ from: UDPAddress) {
        guard let first = datagram.first else { return }
        if STUN.isSTUN(first) {
            // The answers to a WHIP push's own checks (WebRTCEndpoint+Offering).
            if STUN.isResponse(datagram) { return checkAnswered(datagram, from) }
            guard let request = try? STUN.parseBindingRequest(datagram), let peer = byUfrag[String(request.localUfrag)] else {
                metrics.strayDatagrams.increment()
                return
            }
            peer.check(request, from: from, nowNs: MonotonicClock.nanoseconds)
        } else if let peer = byAddress[from] {
            if peer.ice != nil { peer.latch(from) }
            peer.receive(datagram)
        } else {
            metrics.strayDatagrams.increment()
        }
    }

    private func tick() {
        let now = MonotonicClock.nanoseconds
        let wall = WallClock.nanoseconds
        for peer in Array(byID.values) {
            peer.tick()
            if !peer.isConnected, Double(now - peer.createdNs) / 1e9 > handshakeTimeout {
                peer.close("no ICE and DTLS within \(handshakeTimeout) s", notify: false)
            } else if Double(now - peer.lastCheckNs) / 1e9 > consentTimeout {
                peer.close("no ICE check for \(consentTimeout) s (consent expired)", notify: true)
            } else {
                peer.reportIfDue(nowNs: now, wallNs: wall)
                peer.measureRate(nowNs: now)
            }
        }
        guard now - lastEstimateReportNs >= 1_000_000_000 else { return }
        lastEstimateReportNs = now
        let lowest = byID.values.filter { $0.isConnected && $0.counters.lastEstimate != nil }.min { $0.counters.lastEstimate! < $1.counters.lastEstimate! }
        metrics.estimatedBitrate.set(Double(lowest?.counters.lastEstimate ?? 0))
        onLowestEstimate(lowest.map { ($0.counters.lastEstimate!, $0.sentBitsPerSecond, $0.counters.fractionLost) })
    }

    // MARK: - Random

    static func random32() -> UInt32 {
        var bytes = [UInt8](repeating: 0, count: 4)
        _ = nc_random(&bytes, 4)
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `count` characters of ICE's alphabet (letters and digits; RFC 8839 allows + and / too).
    static func token(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var bytes = [UInt8](repeating: 0, count: count)
        _ = nc_random(&bytes, count)
        return String(bytes.map { alphabet[Int($0) % alphabet.count] })
    }
}
