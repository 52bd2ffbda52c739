import Clocks
import IO
import Media
import RTP

/// One WebRTC viewer of a `WebRTCEndpoint`: its ICE credentials and the address its checks
/// came from, its DTLS association, SRTP both ways, the RTP it is sent and a short history of
/// the packets as protected, which answers its NACKs. Made by `WebRTCEndpoint.offer`; the
/// endpoint hands it what arrives from its address or for its ufrag.
///
/// Loop-owned.
public final class WebRTCPeer {
    /// The WHEP resource's id (in its `Location`).
    public let id: String
    let localUfrag: String
    let localPassword: String
    let remoteFingerprint: [UInt8]
    /// The address its checks came from and its media goes to (nil before the first check).
    public internal(set) var address: UDPAddress?
    public private(set) var isConnected = false
    public private(set) var isClosed = false
    /// The other end closed it with DTLS's close_notify: it ended cleanly, rather than went away.
    public private(set) var closedByRemote = false
    /// The answer to its offer.
    public let answer: String
    var sender: RTPSender
    /// The sound's sender, when the answer took the offer's audio (the stream has sound).
    var audioSender: OpusRTPSender?
    /// The viewer gets the stream's sound.
    public var hasAudio: Bool { audioSender != nil }
    /// The payload types the answer took: H.264's, and Opus's when it took the offer's audio.
    public var payloadTypes: (video: UInt8, audio: UInt8?) { (sender.payloadType, audioSender?.payloadType) }

    /// The handshake is done and SRTP keyed: media may go.
    public var onConnected: () -> Void = {}
    /// Ended, with why; called once, on a later turn of the loop.
    public var onClosed: (String) -> Void = { _ in }
    /// A PLI or FIR: the viewer wants an entry point.
    public var onKeyframeRequest: () -> Void = {}
    /// A REMB: the viewer's estimate of the bitrate its path takes, in bits per second.
    public var onBitrateEstimate: (UInt64) -> Void = { _ in }
    /// Receiving (WHIP ingest): each RTP packet as unprotected, and each RTCP packet that
    /// is no feedback to a sender (a sender report). Nil: RTP is not taken.
    public var onRTP: (([UInt8]) -> Void)?
    public var onRTCP: ((RTCP.Packet) -> Void)?
    /// Packets that did not unprotect (replays, wrong keys), dropped.
    public private(set) var badRTP = 0
    /// The estimate made here from its transport-wide feedback, when the answer numbered the
    /// packets (TWCC); closed once a second with the rate window.
    private var transportWide: TransportWideEstimator?

    /// This viewer's share of the endpoint's metrics, for its `reader-closed` line.
    public struct Counters: Sendable {
        public var packetsSent = 0
        public var bytesSent = 0
        public var nackedPackets = 0
        /// NACKed packets sent again from the history.
        public var retransmitted = 0
        /// NACKed packets no longer (or never) in the history.
        public var notInHistory = 0
        /// NACKed packets not sent again: sent for its transport-wide feedback less than a
        /// round trip before (`LossRepair`).
        public var nacksSkipped = 0
        /// Packets sent again because its transport-wide feedback reported them lost before
        /// any NACK for them came (a NACK lost on the way).
        public var feedbackResent = 0
        /// The round trip from its last receiver report (RFC 3550's LSR and DLSR), ns.
        public var roundTripNs: UInt64?
        public var keyframeRequests = 0
        /// The viewer's last REMB (or the last estimate from its TWCC feedback), bits per second.
        public var lastEstimate: UInt64?
        /// The fraction lost of its last receiver report (0 to 255).
        public var fractionLost: UInt8 = 0
    }
    public private(set) var counters = Counters()
    private var metrics: WebRTCMetrics { endpoint.metrics }

    unowned let endpoint: WebRTCEndpoint
    let dtls: DTLSAssociation
    /// The controlling ICE agent of a WHIP push (nil for a WHEP viewer: ICE-lite answers checks).
    var ice: ControllingICE?
    /// Its answer takes what it sends (a WHIP publisher), rather than sending to it.
    var receives = false
    /// What the other end is called in its lines: a WHEP viewer, a WHIP publisher, or the
    /// WHIP server a push goes to.
    var remoteName: String { ice != nil ? "server" : receives ? "publisher" : "viewer" }
    private var srtpOut: SRTPSession?
    /// The SRTP profile the DTLS handshake chose (nil before it completed).
    public private(set) var srtpProfile: SRTPProfile?
    private var srtpIn: SRTPSession?
    /// The video's packets as protected, the last `historySize`.
    private var history = PacketHistory<[UInt8]>(size: historySize)
    /// The sound's packets as protected (about 10 s of 20 ms packets).
    private var audioHistory = PacketHistory<[UInt8]>(size: historySize)
    static let historySize = 512
    /// What is sent again for its NACKs and its transport-wide feedback's losses.
    private var repair = LossRepair(history: historySize)
    /// The receiver reference times (RTCP XR RRTR) not answered yet, by the viewer's SSRC:
    /// their compact NTP time and when they came; answered with a DLRR in the next sender
    /// report's compound. At most `receiverTimesKept` SSRCs (Chromium: one a receiving stream).
    private var receiverTimes: [UInt32: (lastRR: UInt32, atNs: UInt64)] = [:]
    static let receiverTimesKept = 4
    let createdNs: UInt64
    var lastCheckNs: UInt64
    var lastReportNs: UInt64 = 0
    /// What it was sent over the last whole second, bits per second (`measureRate`).
    public private(set) var sentBitsPerSecond: UInt64 = 0
    private var rateWindow: (startNs: UInt64, bytes: Int)?

    init(id: String, endpoint: WebRTCEndpoint, dtls: DTLSAssociation, local: (ufrag: String, password: String),
         remoteFingerprint: [UInt8], answer: String, sender: RTPSender, audioSender: OpusRTPSender? = nil, nowNs: UInt64) {
        self.audioSender = audioSender
        self.id = id
        self.endpoint = endpoint
        self.dtls = dtls
        self.localUfrag = local.ufrag
        self.localPassword = local.password
        self.remoteFingerprint = remoteFingerprint
        self.answer = answer
        self.sender = sender
        self.createdNs = nowNs
        self.lastCheckNs = nowNs
        if sender.transportSequenceExtension != nil { transportWide = TransportWideEstimator() }
    }

    // MARK: - Sending

    /// Sends one access unit (its RTP payloads, made once for every viewer) at media time
    /// `pts90k` captured at `wallNs`; the bytes that went out.
    public func send(_ unit: RTPPayloads, pts90k: UInt64, wallNs: UInt64) -> Int {
        endpoint.loop.preconditionOnLoop()
        guard isConnected, !isClosed, let address, let srtpOut else { return 0 }
        var bytes = 0
        let now = MonotonicClock.nanoseconds
        var transport = sender.transportSequence
        for (sequence, packet) in sender.packets(payloads: unit.payloads, pts90k: pts90k, wallNs: wallNs, sendNs: now) {
            defer { transport &+= 1 }
            guard let protected = protect(packet, with: srtpOut) else { continue }
            transportWide?.sent(transport, bytes: protected.count, sendNs: now)
            if transportWide != nil { repair.sent(sequence, transport: transport) }
            history.remember(sequence, protected)
            if endpoint.socket.send(protected, to: address) {
                bytes += protected.count
                counters.packetsSent += 1
                metrics.packetsSent.increment()
            } else {
                metrics.sendFailures.increment()
            }
        }
        counters.bytesSent += bytes
        return bytes
    }

    /// What became of one Opus packet sent to this viewer.
    public enum AudioOutcome { case sent, notConnected, beforeVideo, failed }

    /// Sends one Opus packet at media time `mediaTime90k` (the pictures' time line): only once
    /// the viewer has had a picture, whose capture clock the sound's timestamps follow.
    public func sendAudio(_ opus: [UInt8], mediaTime90k: Int64) -> AudioOutcome {
        guard isConnected, !isClosed, let address, let srtpOut, audioSender != nil else { return .notConnected }
        guard let (sequence, packet) = audioSender!.packet(opus, mediaTime90k: mediaTime90k, video: sender) else { return .beforeVideo }
        guard let protected = protect(packet, with: srtpOut) else { return .failed }
        audioHistory.remember(sequence, protected)
        guard endpoint.socket.send(protected, to: address) else {
            metrics.sendFailures.increment()
            return .failed
        }
        counters.bytesSent += protected.count
        metrics.audioPacketsSent.increment()
        return .sent
    }

    /// Closes the rate window once a second.
    func measureRate(nowNs: UInt64) {
        guard let window = rateWindow else {
            rateWindow = (nowNs, counters.bytesSent)
            return
        }
        guard nowNs - window.startNs >= 1_000_000_000 else { return }
        sentBitsPerSecond = UInt64(counters.bytesSent - window.bytes) * 8 * 1_000_000_000 / (nowNs - window.startNs)
        rateWindow = (nowNs, counters.bytesSent)
        if let estimate = transportWide?.close(nowNs: nowNs) {
            counters.lastEstimate = estimate
            // Whichever says more: its last receiver report, or what the feedback reported lost.
            counters.fractionLost = max(counters.fractionLost, transportWide?.fractionLost ?? 0)
        }
    }

    /// `packet` protected for this peer, or nil, counted: libsrtp refused it (nothing is
    /// sent in its place).
    private func protect(_ packet: [UInt8], rtcp: Bool = false, with session: SRTPSession) -> [UInt8]? {
        guard let protected = session.protect(packet, rtcp: rtcp) else {
            metrics.protectFailures.increment()
            return nil
        }
        return protected
    }

    /// A sender report, when one is due (every second once media flows).
    func reportIfDue(nowNs: UInt64, wallNs: UInt64) {
        guard isConnected, let address, let srtpOut, nowNs - lastReportNs >= 1_000_000_000,
              let report = sender.senderReport(nowNs: wallNs) else { return }
        var compound = report.serialized()
        if !receiverTimes.isEmpty {
            let items = receiverTimes.sorted { $0.key < $1.key }.map { ssrc, time in
                (ssrc, time.lastRR, UInt32(truncatingIfNeeded: (nowNs &- time.atNs) << 16 / 1_000_000_000))
            }
            compound += RTCP.delaySinceLastReceiverReport(sender: sender.ssrc, items)
            metrics.receiverTimesAnswered.increment(by: UInt64(items.count))
            receiverTimes.removeAll()
        }
        guard let protected = protect(compound, rtcp: true, with: srtpOut) else { return }
        lastReportNs = nowNs
        endpoint.socket.send(protected, to: address)
        if let audio = audioSender?.senderReport(nowNs: wallNs, video: sender), let protected = protect(audio.serialized(), rtcp: true, with: srtpOut) {
            endpoint.socket.send(protected, to: address)
        }
    }

    // MARK: - Receiving

    /// A binding request for this peer's ufrag from `from`, already parsed.
    func check(_ request: STUN.BindingRequest, from: UDPAddress, nowNs: UInt64) {
        guard request.isAuthentic(password: localPassword) else {
            endpoint.socket.send(STUN.unauthorized(to: request), to: from)
            return
        }
        lastCheckNs = nowNs
        // The DTLS client of an answered offer (a=setup:passive) speaks first, once ICE has a
        // path: its ClientHello after the answer to the first check.
        var opensHandshake = false
        if ice != nil {
            // A WHIP server (the controlled agent) may pick another pair than ours: its
            // address is known from here, and media from it latches (`latch`).
            endpoint.alias(self, from)
        } else if address == nil || (request.useCandidate && address != from) {
            endpoint.move(self, to: from)
            opensHandshake = address == nil && dtls.isClient
            address = from
        }
        endpoint.socket.send(STUN.bindingSuccess(to: request, mapped: (from.ip, from.port), password: localPassword), to: from)
        if opensHandshake { handle(dtls.start()) }
    }

    /// A datagram from the peer's address that is not STUN: DTLS or SRTCP (RFC 7983).
    func receive(_ datagram: [UInt8]) {
        guard let first = datagram.first, !isClosed else { return }
        if first >= 20 && first <= 63 {
            handle(dtls.receive(datagram))
        } else if first >= 128 && first <= 191, datagram.count >= 8, (192...223).contains(datagram[1]) {
            receiveRTCP(datagram)
        } else if first >= 128 && first <= 191, let onRTP, let srtpIn {
            guard let plain = srtpIn.unprotect(datagram, rtcp: false) else { badRTP += 1; return }
            onRTP(plain)
        }
    }

    /// Sends an RTCP compound (a receiver's reports and feedback: RR, NACK, PLI) protected;
    /// false when it did not go.
    @discardableResult
    public func sendRTCP(_ compound: [UInt8]) -> Bool {
        guard isConnected, !isClosed, let address, let srtpOut, let protected = protect(compound, rtcp: true, with: srtpOut) else { return false }
        return endpoint.socket.send(protected, to: address)
    }

    private func receiveRTCP(_ datagram: [UInt8]) {
        guard let srtpIn, let plain = srtpIn.unprotect(datagram), let packets = RTCP.packets(in: plain[...]) else {
            metrics.badRTCP.increment()
            return
        }
        for packet in packets {
            switch RTCPFeedback(packet) {
            case .pictureLoss, .fullIntraRequest:
                counters.keyframeRequests += 1
                metrics.keyframeRequests.increment()
                onKeyframeRequest()
            case .nack(let ssrc, let lost):
                resend(lost, audio: audioSender != nil && ssrc == audioSender?.ssrc)
            case .receiverReferenceTime(let ssrc, let ntpTime):
                if receiverTimes[ssrc] != nil || receiverTimes.count < Self.receiverTimesKept {
                    receiverTimes[ssrc] = (RTCP.compact(ntpTime), MonotonicClock.nanoseconds)
                }
            case .estimatedBitrate(let bps, _):
                counters.lastEstimate = bps
                onBitrateEstimate(bps)
            case .receiverReport(let fraction, _, _, let lastSR, let delay):
                counters.fractionLost = fraction
                let now = RTCP.compact(RTCP.SenderReport.ntpTime(unixSeconds: WallClock.seconds))
                if let rtt = RTCP.roundTrip(now: now, echoed: lastSR, delay: delay) {
                    repair.roundTripNs = rtt
                    counters.roundTripNs = rtt
                }
            case .transportWide(let feedback?):
                transportWide?.feedback(feedback)
                metrics.transportFeedback.increment()
                let lost = feedback.packets.compactMap { $0.arrivalUs == nil ? $0.sequence : nil }
                metrics.transportLost.increment(by: UInt64(lost.count))
                if transportWide != nil, !lost.isEmpty { resendReported(lost) }
            case .transportWide(nil):
                metrics.badRTCP.increment()
            case nil:
                onRTCP?(packet)
            }
        }
    }

    /// Sends NACKed packets again, the video's or (`audio`) the sound's, each twice: a
    /// retransmission lost on the way as well costs the viewer a second round trip (its next
    /// NACK waits one), a picture held about 100 ms longer on a lossy path; both copies are
    /// lost only as rarely as any two packets. The copy that comes second is a replay to the
    /// viewer's SRTP, which drops it. Retransmissions are the lost share of the packets: the
    /// second copies cost as little.
    ///
    /// A video NACK is answered as `LossRepair` decides: not for a packet sent again for the
    /// transport-wide feedback less than a round trip before.
    private func resend(_ lost: [UInt16], audio: Bool) {
        guard address != nil else { return }
        let now = MonotonicClock.nanoseconds
        for sequence in lost {
            counters.nackedPackets += 1
            metrics.nackedPackets.increment()
            guard let packet = audio ? audioHistory[sequence] : history[sequence] else {
                counters.notInHistory += 1
                metrics.nackedNotInHistory.increment()
                continue
            }
            guard audio || repair.nacked(sequence, nowNs: now) else {
                counters.nacksSkipped += 1
                metrics.nacksSkipped.increment()
                continue
            }
            if sendTwice(packet) {
                counters.retransmitted += 1
                metrics.retransmittedPackets.increment()
            }
        }
    }

    /// Sends again, twice as for a NACK, the video packets its transport-wide feedback
    /// reported lost (by their transport-wide numbers) that `LossRepair` picks: those no NACK
    /// brought back first, when a NACK was lost on the way.
    private func resendReported(_ lost: [UInt16]) {
        let (picked, over) = repair.reportedLost(lost, nowNs: MonotonicClock.nanoseconds)
        metrics.feedbackOverLimit.increment(by: UInt64(over))
        for sequence in picked {
            guard let packet = history[sequence] else { continue }
            if sendTwice(packet) {
                counters.feedbackResent += 1
                metrics.feedbackResent.increment()
            }
        }
    }

    /// Sends a packet of the history twice (the second copy a replay the viewer's SRTP drops
    /// when the first came); whether the first went.
    private func sendTwice(_ packet: [UInt8]) -> Bool {
        guard let address else { return false }
        guard endpoint.socket.send(packet, to: address) else {
            metrics.sendFailures.increment()
            return false
        }
        if !endpoint.socket.send(packet, to: address) { metrics.sendFailures.increment() }
        return true
    }

    /// The retransmission timer of the handshake.
    func tick() {
        if ice != nil { checkIfDue(nowNs: MonotonicClock.nanoseconds) }
        guard !isConnected, !isClosed, dtls.timeout == 0 else { return }
        handle(dtls.handleTimeout())
    }

    func handle(_ state: DTLSAssociation.State) {
        flush()
        switch state {
        case .handshaking, .open: break
        case .connected: connected()
        case .closed:
            if !isClosed { closedByRemote = true }
            close("closed by the \(remoteName) (DTLS close_notify)", notify: false)
        case .failed(let why): close("DTLS: \(why)", notify: false)
        }
    }

    private func connected() {
        guard dtls.peerFingerprint == remoteFingerprint else {
            return close("DTLS: the \(remoteName)'s certificate is not the one its offer named", notify: true)
        }
        guard let keys = dtls.srtpKeys,
              let outbound = SRTPSession(keys.profile, key: keys.local.key, salt: keys.local.salt, outbound: true),
              let inbound = SRTPSession(keys.profile, key: keys.remote.key, salt: keys.remote.salt, outbound: false) else {
            return close("DTLS: no SRTP keys of a profile nalcast takes (SRTP_AEAD_AES_128_GCM, SRTP_AES128_CM_HMAC_SHA1_80)", notify: true)
        }
        srtpProfile = keys.profile
        srtpOut = outbound
        srtpIn = inbound
        isConnected = true
        metrics.connected.increment()
        onConnected()
    }

    func flush() {
        guard let address else { return }
        for datagram in dtls.outgoing() { endpoint.socket.send(datagram, to: address) }
    }

    // MARK: - Ending

    /// Ends the peer: a DTLS close_notify when `notify` and connected, then `onClosed(reason)`
    /// on a later turn of the loop.
    public func close(_ reason: String, notify: Bool = true) {
        guard !isClosed else { return }
        endpoint.loop.preconditionOnLoop()
        isClosed = true
        if !isConnected { metrics.handshakesFailed.increment() }
        if notify && isConnected {
            dtls.shutdown()
            flush()
        }
        endpoint.forget(self)
        endpoint.later { [self] in onClosed(reason) }
    }
}
