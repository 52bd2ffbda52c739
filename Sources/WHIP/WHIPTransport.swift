import Audio
import Clocks
import Media
import Output
import WebRTC

/// `--forward whip://…` (or `http://`, `https://` URLs): a WHIP push (RFC 9725). At each
/// connection (an entry point, when the forward's backoff allows): a WebRTC offer
/// (`SDPOffer`: sendonly H.264 with the stream's profile-level-id) POSTed as
/// `application/sdp` with `Authorization: Bearer TOKEN`; the `201`'s answer and `Location`
/// taken; ICE (controlling) and DTLS-SRTP run on the session's own loop (`WHIPSession`)
/// within `handshakeTimeout`; then every access unit goes out as the WHEP viewers get it
/// (RFC 6184 packetization, RTCP sender reports, NACKs answered from the history). A PLI or
/// FIR asks `onKeyframeRequest` (the encoder's IDR, `produce`) or, without one (a relay),
/// sends the GOP since the last entry point again. `close` DELETEs the `Location`.
///
/// Sound: the stream's AAC (`declareAudio`, then `send(audio:)`) is transcoded to Opus here,
/// on the forward's thread (`OpusTranscoder`, 48 kHz stereo, 20 ms packets on the same media
/// time line), and offered as a second, bundled section; what the server does not take, or
/// what comes before the connection's first picture, is counted as dropped audio.
///
/// A `401` or `403` to the POST is a refusal (`ForwardError.refused`: no more attempts);
/// any other failure loses the connection and the forward tries again with its backoff.
/// Used by the forward's thread only.
public final class WHIPTransport: ForwardTransport {
    public let whip: WHIPTarget
    private let token: String?
    /// A private CA's PEM file for an https:// server, instead of the system's CAs.
    private let caFile: String?
    private let onKeyframeRequest: (@Sendable () -> Void)?
    public var handshakeTimeout = 10.0
    private var session: WHIPSession?
    private var resource: String?
    /// The units since the last entry point (a relay's answer to a PLI), at most `gopLimit`.
    private var gop: [TimedUnit] = []
    static let gopLimit = 600
    private var unflushed = 0
    private var lastRestartNs: UInt64 = 0
    /// A keyframe request not answered yet (one came within a second of the last answer).
    private var keyframeRequested = false
    private var summary: String?
    private var audioFormat: AudioFormat?
    private var transcoder: OpusTranscoder?
    /// The server took the offer's Opus on this connection.
    private var sendsAudio = false
    private var droppedAudio = 0

    public init(_ whip: WHIPTarget, token: String?, caFile: String? = nil, onKeyframeRequest: (@Sendable () -> Void)?) {
        self.whip = whip
        self.token = token
        self.caFile = caFile
        self.onKeyframeRequest = onKeyframeRequest
    }

    /// A session left open (the sink dropped without `close`) ends with its loop.
    deinit { session?.stop(notify: false) }

    public var target: String { whip.description }

    private func client(timeout: Double = 5) -> HTTPClient {
        HTTPClient(host: whip.host, port: whip.port, timeout: timeout, tls: whip.tls, caFile: caFile)
    }

    private var authorization: [(String, String)] { token.map { [("Authorization", "Bearer \($0)")] } ?? [] }

    public func open(first: TimedUnit) throws(ForwardError) {
        let sps = first.unit.nalUnits.first { $0.body.first.map { $0 & 0x1F == 7 } == true }
        let made: WHIPSession
        do { made = try WHIPSession() } catch { throw ForwardError("WebRTC: \(error)") }
        let offer = made.makeOffer(profileLevelID: SDPOffer.profileLevelID(sps: sps?.body), sound: transcoder != nil)
        let response: HTTPClient.Response
        do {
            response = try client().send("POST", whip.path, headers: [("Content-Type", "application/sdp")] + authorization, body: Array(offer.text.utf8))
        } catch {
            throw ForwardError("POST: \(error)")
        }
        let reason = String(decoding: response.body.prefix(200), as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        if response.status == 401 || response.status == 403 {
            throw ForwardError("the server refused the \(token == nil ? "push without a bearer token" : "bearer token") (\(response.status)\(reason.isEmpty ? "" : ": " + reason))", refused: true)
        }
        guard response.status == 201 else { throw ForwardError("POST answered \(response.status)\(reason.isEmpty ? "" : ": " + reason)") }
        resource = response.header("location").flatMap(whip.resourcePath)
        let accepted: SDPOffer.Accepted
        do {
            accepted = try offer.read(answer: String(decoding: response.body, as: UTF8.self))
        } catch {
            deleteResource()
            throw ForwardError("\(error)")
        }
        if let why = made.connect(offer, accepted, timeout: handshakeTimeout) {
            made.stop(notify: false)
            deleteResource()
            throw ForwardError(why)
        }
        session = made
        sendsAudio = accepted.opusPayloadType != nil
        gop = []
    }

    public var carriesAudio: Bool { true }

    /// The stream's AAC track: a transcoder to Opus for it (none when libopus or libavcodec
    /// is missing: the sound is then dropped, counted).
    public func declareAudio(_ format: AudioFormat) {
        guard format != audioFormat else { return }
        audioFormat = format
        transcoder = try? OpusTranscoder(from: format)
    }

    public func send(audio: AudioPacket) throws(ForwardError) {
        guard let session, sendsAudio, let transcoder else {
            droppedAudio += 1
            return
        }
        for opus in transcoder.transcode(audio) { session.send(.audio(opus.data, mediaTime90k: opus.mediaTime.ticks)) }
    }

    public func takeDroppedAudio() -> Int {
        let lost = droppedAudio + (session?.takeDroppedAudio() ?? 0)
        droppedAudio = 0
        return lost
    }

    public func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError) {
        guard let session else { throw ForwardError("not connected") }
        let now = session.take()
        if let why = now.closed { throw ForwardError(why) }
        if unit.isEntryPoint { gop = [] }
        if now.keyframeRequests > 0 { keyframeRequested = true }
        if keyframeRequested { answerKeyframeRequest(session) }
        gop.append(unit)
        if gop.count > Self.gopLimit { gop.removeFirst() }
        post(unit, entry: entry || gop.count == 1, to: session)
    }

    private func post(_ unit: TimedUnit, entry: Bool, to session: WHIPSession) {
        let nals = entry || unit.resumes ? unit.unit.nalUnitsForEntry : unit.unit.nalUnits
        let pts = UInt64(max(0, unit.mediaTime.ticks))
        let wall = unit.unit.timestamp?.captureTimeNs ?? WallClock.nanoseconds
        session.send(.unit(RTPPayloads(nals), pts90k: pts, wallNs: wall))
        unflushed += unit.unit.byteCount
    }

    /// A PLI or FIR (answered at most once a second): the encoder's IDR, or the GOP since
    /// the last entry point again. One that comes sooner is kept and answered when the second
    /// is up, not dropped: a receiver that lost a picture just after a restart (aiortc asks
    /// as the stream starts) would otherwise wait for the next IDR of the stream.
    private func answerKeyframeRequest(_ session: WHIPSession) {
        let now = MonotonicClock.nanoseconds
        guard now - lastRestartNs >= 1_000_000_000 else { return }
        lastRestartNs = now
        keyframeRequested = false
        if let onKeyframeRequest { return onKeyframeRequest() }
        for (i, unit) in gop.enumerated() { post(unit, entry: i == 0, to: session) }
    }

    public func flush() throws(ForwardError) -> Int {
        defer { unflushed = 0 }
        return unflushed
    }

    public func discontinuity() { gop = [] }

    public func close(finishing: Bool) throws(ForwardError) {
        // The DELETE first (RFC 9725 §4.2: it ends the session), then the DTLS close_notify.
        deleteResource()
        if let session {
            session.stop(notify: finishing)
            let state = session.take()
            summary = state.counters.map { Self.summary($0, profile: state.profile) }
        }
        session = nil
    }

    public func takeSummary() -> String? {
        defer { summary = nil }
        return summary
    }

    /// DELETE of the session's resource (best effort: the server may be gone).
    private func deleteResource() {
        guard let path = resource else { return }
        resource = nil
        _ = try? client(timeout: 2).send("DELETE", path, headers: authorization)
    }

    static func summary(_ c: WebRTCPeer.Counters, profile: SRTPProfile?) -> String {
        "\(c.packetsSent) RTP packets sent (\(profile?.name ?? "never keyed")), \(c.nackedPackets) NACKed, \(c.retransmitted) retransmitted, "
            + "\(c.keyframeRequests) keyframe requests"
    }
}
