/// The answer to a WHEP offer: the first video section accepted, sending H.264 as it is
/// encoded on the payload type the offer gave it; when the stream has sound, the first audio
/// section that receives Opus (opus/48000/2) too, bundled with the video on the same ICE and
/// DTLS transport, its own SSRC, in the same media stream (`a=msid`) so that the browser
/// syncs the two; every other section rejected (port 0).
public struct SDPAnswer: Sendable {
    /// The abs-capture-time header extension (a frame's capture time, 64-bit NTP).
    public static let absCaptureTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"
    /// The abs-send-time header extension (when a packet left, 6.18 fixed-point seconds):
    /// what receivers estimate the path's bitrate from for their REMB.
    public static let absSendTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    /// The playout-delay header extension: the sender's bounds on the receiver's buffering
    /// (0 and 0: show each picture as soon as it is decoded).
    public static let playoutDelay = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"

    /// The transport-wide sequence number (TWCC): every packet numbered across the transport,
    /// which the receiver answers with `transport-cc` feedback (what arrived, and when).
    public static let transportWideCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

    /// The H.264 format chosen from the offer.
    public struct Format: Equatable, Sendable {
        public let payloadType: UInt8
        /// The offer's fmtp for it, repeated in the answer (profile-level-id as offered).
        public let fmtp: String
        /// The offer's rtcp-fb values that the answer keeps: nack, nack pli, ccm fir, goog-remb,
        /// transport-cc.
        public let feedback: [String]
    }

    /// The feedback a sender here answers.
    static let feedbackKept: Set<String> = ["nack", "nack pli", "ccm fir", "goog-remb", "transport-cc"]
    /// The feedback a receiver here sends (WHIP ingest): NACKs and picture loss indications.
    static let feedbackSent: Set<String> = ["nack", "nack pli"]

    /// Which way the media goes: nalcast sends (WHEP: the offer receives) or receives (WHIP
    /// ingest: the offer sends, the answer is recvonly).
    public enum Direction: Sendable { case send, receive }

    /// The H.264 payload type of `media` with packetization-mode=1: the one whose
    /// profile-level-id names `profile` (the stream's SPS profile_idc, when known), else the
    /// first offered.
    public static func h264Format(in media: SDP.Media, profile: UInt8?, kept: Set<String>? = nil) -> Format? {
        var candidates: [(UInt8, String)] = []
        for type in media.formats.compactMap({ UInt8($0) }) {
            guard let map = media.rtpmap[type], map.lowercased().hasPrefix("h264/90000") else { continue }
            let fmtp = media.fmtp[type] ?? ""
            let parameters = fmtp.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            guard parameters.contains("packetization-mode=1") else { continue }
            candidates.append((type, fmtp))
        }
        func profileIDC(_ fmtp: String) -> UInt8? {
            let id = fmtp.split(separator: ";").map { $0.trimmingSpaces }.first { $0.lowercased().hasPrefix("profile-level-id=") }
            return id.flatMap { UInt8($0.dropFirst(17).prefix(2), radix: 16) }
        }
        let chosen = candidates.first { profile != nil && profileIDC($0.1) == profile } ?? candidates.first
        guard let (type, fmtp) = chosen else { return nil }
        let feedback = (media.feedback[type] ?? []).filter { (kept ?? feedbackKept).contains($0) }
        return Format(payloadType: type, fmtp: fmtp, feedback: feedback)
    }

    /// The profile_idc of an H.264 codec string (`avc1.64001f`: 0x64): the first of the
    /// three bytes an SDP's profile-level-id names too.
    public static func profileIDC(codecString: String) -> UInt8? {
        guard codecString.hasPrefix("avc1."), codecString.count == 11 else { return nil }
        return UInt8(codecString.dropFirst(5).prefix(2), radix: 16)
    }

    public let offer: SDP.Offer
    /// The index of the video section accepted in `offer.media`.
    public let videoIndex: Int
    public let format: Format
    /// The id of abs-capture-time when the offer has it.
    public let captureTimeExtension: Int?
    /// The id of abs-send-time when the offer has it.
    public let sendTimeExtension: Int?
    /// The id of playout-delay when the offer has it.
    public let playoutDelayExtension: Int?
    /// The id of transport-wide-cc when the offer has it and its `transport-cc` feedback.
    public let transportSequenceExtension: Int?
    /// The audio section accepted (its index in `offer.media`, Opus's payload type and the
    /// offer's fmtp for it); nil when the stream has no sound or the offer no Opus to receive.
    public let audio: (index: Int, payloadType: UInt8, fmtp: String)?
    public let direction: Direction
    /// This side is the DTLS client (the offer said a=setup:passive): the answer says active.
    public let dtlsClient: Bool

    /// The Opus payload type of `media` (opus/48000/2), when it receives (or, for `.receive`, sends).
    public static func opusPayloadType(in media: SDP.Media, _ direction: Direction = .send) -> UInt8? {
        guard media.kind == "audio", media.port != 0, media.direction == (direction == .send ? "recvonly" : "sendonly") || media.direction == "sendrecv" else { return nil }
        return media.formats.compactMap { UInt8($0) }.first { media.rtpmap[$0]?.lowercased() == "opus/48000/2" }
    }

    /// Chooses what to send from `offer`; `profile` is the stream's profile_idc, when known;
    /// `sound`: the stream has sound to send as Opus. `.receive` (WHIP ingest): what to take
    /// from an offer that sends, H.264 and (with `sound`) its Opus, no header extensions.
    public init(offer: SDP.Offer, profile: UInt8?, sound: Bool = false, direction: Direction = .send) throws(SDP.OfferError) {
        guard let index = offer.media.firstIndex(where: { $0.kind == "video" && $0.port != 0 }) else { throw .noVideo }
        let video = offer.media[index]
        let receiving = direction == .receive
        guard video.direction == (receiving ? "sendonly" : "recvonly") || video.direction == "sendrecv" else { throw receiving ? .notSending : .notReceiving }
        guard let format = Self.h264Format(in: video, profile: profile, kept: receiving ? Self.feedbackSent : Self.feedbackKept) else { throw .noH264 }
        // An offer that will be the DTLS server (a=setup:passive, as FFmpeg's WHIP muxer offers)
        // makes this side the client; actpass or active leave it the server.
        dtlsClient = offer.setup == "passive"
        self.offer = offer
        self.direction = direction
        self.videoIndex = index
        self.format = format
        self.captureTimeExtension = receiving ? nil : video.extensions[Self.absCaptureTime]
        self.sendTimeExtension = receiving ? nil : video.extensions[Self.absSendTime]
        self.playoutDelayExtension = receiving ? nil : video.extensions[Self.playoutDelay]
        self.transportSequenceExtension = !receiving && format.feedback.contains("transport-cc") ? video.extensions[Self.transportWideCC] : nil
        // Bundled with the video: in the offer's BUNDLE group (or no group at all).
        let bundled = { (media: SDP.Media) in offer.bundle.isEmpty || media.mid.map(offer.bundle.contains) == true }
        audio = sound ? offer.media.indices.lazy.compactMap { i -> (Int, UInt8, String)? in
            let media = offer.media[i]
            guard bundled(media), let pt = Self.opusPayloadType(in: media, direction) else { return nil }
            return (i, pt, media.fmtp[pt] ?? "")
        }.first : nil
    }

    /// Taken from an offer that has it (a viewer that sends nothing): its RRTRs are answered
    /// with DLRRs, which give it the round trip, which its NACKs are repeated after.
    static let receiverRTTLine = "a=rtcp-xr:rcvr-rtt=all"

    /// What this side says of itself in the answer.
    public struct Local: Sendable {
        public var ufrag: String
        public var password: String
        public var fingerprint: [UInt8]
        /// Host candidates: address and UDP port.
        public var candidates: [(host: String, port: UInt16)]
        public var ssrc: UInt32
        /// The SSRC of the sound (used when `audio` is not nil).
        public var audioSSRC: UInt32
        public var sessionID: UInt64
        public init(ufrag: String, password: String, fingerprint: [UInt8], candidates: [(host: String, port: UInt16)], ssrc: UInt32,
                    audioSSRC: UInt32 = 0, sessionID: UInt64) {
            self.audioSSRC = audioSSRC
            self.ufrag = ufrag
            self.password = password
            self.fingerprint = fingerprint
            self.candidates = candidates
            self.ssrc = ssrc
            self.sessionID = sessionID
        }
    }

    /// The answer's text (CRLF line ends).
    public func text(_ local: Local) -> String {
        let mid = { (index: Int) in offer.media[index].mid ?? "\(index)" }
        let taken = [videoIndex, audio?.index].compactMap { $0 }.sorted()
        var lines = ["v=0", "o=- \(local.sessionID) 2 IN IP4 127.0.0.1", "s=nalcast", "t=0 0"]
        lines.append("a=group:BUNDLE " + taken.map(mid).joined(separator: " "))
        lines.append("a=ice-lite")
        lines.append("a=msid-semantic: WMS nalcast")
        for (index, media) in offer.media.enumerated() {
            if index == videoIndex {
                lines += videoSection(mid(index), local)
            } else if let audio, index == audio.index {
                lines += audioSection(mid(index), audio.payloadType, audio.fmtp, local)
            } else {
                lines += rejected(media, index)
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func videoSection(_ mid: String, _ local: Local) -> [String] {
        let pt = format.payloadType
        let video = offer.media[videoIndex]
        var lines = ["m=video 9 UDP/TLS/RTP/SAVPF \(pt)", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0"]
        lines += transport(mid, local)
        if let id = sendTimeExtension { lines.append("a=extmap:\(id) \(Self.absSendTime)") }
        if let id = captureTimeExtension { lines.append("a=extmap:\(id) \(Self.absCaptureTime)") }
        if let id = playoutDelayExtension { lines.append("a=extmap:\(id) \(Self.playoutDelay)") }
        if let id = transportSequenceExtension { lines.append("a=extmap:\(id) \(Self.transportWideCC)") }
        lines += direction == .send ? ["a=sendonly", "a=msid:nalcast video", "a=rtcp-mux"] : ["a=recvonly", "a=rtcp-mux"]
        if video.rtcpReducedSize { lines.append("a=rtcp-rsize") }
        if direction == .send && video.receiverRTT { lines.append(Self.receiverRTTLine) }
        lines.append("a=rtpmap:\(pt) H264/90000")
        for value in format.feedback where value != "transport-cc" || transportSequenceExtension != nil { lines.append("a=rtcp-fb:\(pt) \(value)") }
        if !format.fmtp.isEmpty { lines.append("a=fmtp:\(pt) \(format.fmtp)") }
        if direction == .send { lines += ["a=ssrc:\(local.ssrc) cname:nalcast", "a=ssrc:\(local.ssrc) msid:nalcast video"] }
        return lines + Self.candidateLines(local)
    }

    /// Opus (RFC 7587) on the offer's payload type, sendonly, in the video's media stream
    /// (`nalcast`) and transport (the same ICE credentials, fingerprint and candidates).
    private func audioSection(_ mid: String, _ pt: UInt8, _ fmtp: String, _ local: Local) -> [String] {
        var lines = ["m=audio 9 UDP/TLS/RTP/SAVPF \(pt)", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0"]
        lines += transport(mid, local)
        lines += direction == .send ? ["a=sendonly", "a=msid:nalcast audio", "a=rtcp-mux"] : ["a=recvonly", "a=rtcp-mux"]
        if offer.media[audio!.index].rtcpReducedSize { lines.append("a=rtcp-rsize") }
        if direction == .send && offer.media[audio!.index].receiverRTT { lines.append(Self.receiverRTTLine) }
        lines.append("a=rtpmap:\(pt) opus/48000/2")
        lines.append("a=fmtp:\(pt) " + (fmtp.isEmpty ? "minptime=10;useinbandfec=1" : fmtp))
        if direction == .send { lines += ["a=ssrc:\(local.audioSSRC) cname:nalcast", "a=ssrc:\(local.audioSSRC) msid:nalcast audio"] }
        return lines + Self.candidateLines(local)
    }

    private func transport(_ mid: String, _ local: Local) -> [String] {
        ["a=ice-ufrag:\(local.ufrag)", "a=ice-pwd:\(local.password)", "a=ice-options:ice2",
         "a=fingerprint:sha-256 \(SDP.hex(local.fingerprint))", "a=setup:\(dtlsClient ? "active" : "passive")", "a=mid:\(mid)"]
    }

    /// The candidate lines of a section, an answer's or a WHIP push's offer: host candidates
    /// only, type preference 126, local preference by order, then a=end-of-candidates.
    static func candidateLines(_ local: Local) -> [String] {
        var lines: [String] = []
        for (i, candidate) in local.candidates.enumerated() {
            let priority = (126 << 24) | ((65535 - i) << 8) | 255
            lines.append("a=candidate:\(i + 1) 1 udp \(priority) \(candidate.host) \(candidate.port) typ host")
        }
        lines.append("a=end-of-candidates")
        return lines
    }

    /// A section not taken: port 0, its mid kept (RFC 8843: outside the bundle).
    private func rejected(_ media: SDP.Media, _ index: Int) -> [String] {
        var lines = ["m=\(media.kind) 0 \(media.proto) \(media.formats.first ?? "0")", "c=IN IP4 0.0.0.0"]
        lines.append("a=mid:\(media.mid ?? "\(index)")")
        lines.append("a=inactive")
        return lines
    }
}
