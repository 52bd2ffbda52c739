/// The offer of a WHIP push (RFC 9725, JSEP's offer, RFC 8829) and what the server's answer
/// accepted of it: one sendonly video section, H.264 packetization-mode 1 with the stream's
/// profile-level-id, the feedback nalcast answers (nack, nack pli, ccm fir, goog-remb) and
/// abs-send-time (what REMB estimates from); with sound, a sendonly Opus section
/// (opus/48000/2) bundled with it in the same media stream; ICE credentials, the DTLS
/// certificate's fingerprint, a=setup:actpass (the answer picks the DTLS roles) and the host
/// candidates, all in the offer (no trickle). Pure.
public struct SDPOffer: Sendable {
    public static let videoPayloadType: UInt8 = 96
    public static let opusPayloadType: UInt8 = 111
    static let sendTimeID = 2
    static let captureTimeID = 3

    /// Six hex digits: profile_idc, the constraint flags and level_idc of the stream's SPS.
    public let profileLevelID: String
    public let sound: Bool
    public let local: SDPAnswer.Local

    public init(profileLevelID: String, sound: Bool, local: SDPAnswer.Local) {
        self.profileLevelID = profileLevelID
        self.sound = sound
        self.local = local
    }

    /// The profile-level-id of an SPS NAL unit (`[header, profile_idc, constraints,
    /// level_idc, ...]`); Constrained Baseline 3.1 when there is none.
    public static func profileLevelID(sps: ArraySlice<UInt8>?) -> String {
        guard let sps, sps.count >= 4 else { return "42e01f" }
        let start = sps.startIndex
        return sps[(start + 1)...(start + 3)].map { b in let s = String(b, radix: 16); return s.count == 1 ? "0" + s : s }.joined()
    }

    /// The offer's text (CRLF line ends).
    public var text: String {
        let mids = sound ? ["0", "1"] : ["0"]
        var lines = ["v=0", "o=- \(local.sessionID) 2 IN IP4 127.0.0.1", "s=nalcast", "t=0 0",
                     "a=group:BUNDLE " + mids.joined(separator: " "), "a=msid-semantic: WMS nalcast"]
        let v = Self.videoPayloadType
        lines += ["m=video 9 UDP/TLS/RTP/SAVPF \(v)", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0"]
        lines += transport("0")
        lines += ["a=extmap:\(Self.sendTimeID) \(SDPAnswer.absSendTime)", "a=extmap:\(Self.captureTimeID) \(SDPAnswer.absCaptureTime)"]
        lines += ["a=sendonly", "a=msid:nalcast video", "a=rtcp-mux", "a=rtcp-rsize", "a=rtpmap:\(v) H264/90000"]
        lines += ["nack", "nack pli", "ccm fir", "goog-remb"].map { "a=rtcp-fb:\(v) \($0)" }
        lines.append("a=fmtp:\(v) level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=\(profileLevelID)")
        lines += ["a=ssrc:\(local.ssrc) cname:nalcast", "a=ssrc:\(local.ssrc) msid:nalcast video"]
        lines += SDPAnswer.candidateLines(local)
        if sound {
            let o = Self.opusPayloadType
            lines += ["m=audio 9 UDP/TLS/RTP/SAVPF \(o)", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0"]
            lines += transport("1")
            lines += ["a=sendonly", "a=msid:nalcast audio", "a=rtcp-mux", "a=rtpmap:\(o) opus/48000/2", "a=fmtp:\(o) minptime=10;useinbandfec=1"]
            lines += ["a=ssrc:\(local.audioSSRC) cname:nalcast", "a=ssrc:\(local.audioSSRC) msid:nalcast audio"]
            lines += SDPAnswer.candidateLines(local)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func transport(_ mid: String) -> [String] {
        ["a=ice-ufrag:\(local.ufrag)", "a=ice-pwd:\(local.password)",
         "a=fingerprint:sha-256 \(SDP.hex(local.fingerprint))", "a=setup:actpass", "a=mid:\(mid)"]
    }

    /// What a server's answer accepted.
    public struct Accepted: Sendable {
        public var videoPayloadType: UInt8
        public var sendTimeExtension: Int?
        public var captureTimeExtension: Int?
        /// Opus's payload type when the answer took the sound.
        public var opusPayloadType: UInt8?
        public var ufrag: String
        public var password: String
        public var fingerprint: [UInt8]
        /// This side is the DTLS client: the answer said a=setup:passive.
        public var dtlsClient: Bool
        /// Its UDP candidates with an IPv4 address, best first.
        public var candidates: [UDPAddress]
    }

    /// Why an answer cannot be used, one line each.
    public enum AnswerError: Error, Equatable, CustomStringConvertible {
        case notSDP
        case videoRejected
        case noH264
        case noICECredentials
        case noFingerprint
        case setupActpass
        case noCandidates

        public var description: String {
            switch self {
            case .notSDP: "the answer is not SDP (no v=0)"
            case .videoRejected: "the answer rejected the video (no m=video with a port)"
            case .noH264: "the answer has no H.264 (nalcast sends H.264 as it is encoded)"
            case .noICECredentials: "the answer has no a=ice-ufrag and a=ice-pwd"
            case .noFingerprint: "the answer has no a=fingerprint:sha-256"
            case .setupActpass: "the answer's a=setup is actpass (active or passive expected)"
            case .noCandidates: "the answer has no UDP candidate nalcast can reach"
            }
        }
    }

    /// Reads a server's answer to this offer.
    public func read(answer text: String) throws(AnswerError) -> Accepted {
        let parsed: SDP.Offer
        do {
            parsed = try SDP.parseOffer(text)
        } catch {
            switch error {
            case .notSDP: throw .notSDP
            case .noVideo: throw .videoRejected
            case .noICECredentials: throw .noICECredentials
            default: throw .noFingerprint
            }
        }
        guard let video = parsed.media.first(where: { $0.kind == "video" && $0.port != 0 }) else { throw .videoRejected }
        guard let h264 = video.formats.compactMap({ UInt8($0) }).first(where: { video.rtpmap[$0]?.lowercased().hasPrefix("h264/90000") == true })
        else { throw .noH264 }
        guard parsed.setup == "active" || parsed.setup == "passive" else { throw .setupActpass }
        let audio = parsed.media.first { $0.kind == "audio" && $0.port != 0 }
        let opus = sound ? audio.flatMap { a in a.formats.compactMap { UInt8($0) }.first { a.rtpmap[$0]?.lowercased() == "opus/48000/2" } } : nil
        let candidates = Self.candidates(in: text)
        guard !candidates.isEmpty else { throw .noCandidates }
        return Accepted(videoPayloadType: h264, sendTimeExtension: video.extensions[SDPAnswer.absSendTime],
                        captureTimeExtension: video.extensions[SDPAnswer.absCaptureTime], opusPayloadType: opus,
                        ufrag: parsed.ufrag, password: parsed.password, fingerprint: parsed.fingerprint,
                        dtlsClient: parsed.setup == "passive", candidates: candidates)
    }

    /// The answer's `a=candidate` lines for RTP (component 1) over UDP with a numeric IPv4
    /// address, by priority (highest first), each once.
    static func candidates(in text: String) -> [UDPAddress] {
        var found: [(priority: Int, address: UDPAddress)] = []
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) where line.hasPrefix("a=candidate:") {
            let parts = line.split(separator: " ")
            guard parts.count >= 8, parts[1] == "1", parts[2].lowercased() == "udp", let priority = Int(parts[3]),
                  let port = UInt16(parts[5]), let address = UDPAddress(host: String(parts[4]), port: port), address.ip.count == 4 else { continue }
            found.append((priority, address))
        }
        var seen: [UDPAddress] = []
        for (_, address) in found.sorted(by: { $0.priority > $1.priority }) where !seen.contains(address) { seen.append(address) }
        return seen
    }
}
