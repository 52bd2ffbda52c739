/// The SDP of a WHEP exchange (RFC 8866, JSEP's use of it, RFC 8829): the browser's offer
/// read for what a sender needs, and the answer written. Pure.
public enum SDP {
    /// One media section of an offer (`m=`), with what the answer needs of it.
    public struct Media: Equatable, Sendable {
        public var kind: String
        public var port: Int
        public var proto: String
        public var formats: [String]
        public var mid: String?
        /// sendrecv, recvonly, sendonly, inactive (sendrecv when the offer says none).
        public var direction = "sendrecv"
        /// Payload type → `rtpmap`'s encoding ("H264/90000").
        public var rtpmap: [UInt8: String] = [:]
        /// Payload type → `fmtp`'s parameters as written ("level-asymmetry-allowed=1;...").
        public var fmtp: [UInt8: String] = [:]
        /// Payload type → its `rtcp-fb` values ("nack", "nack pli", "ccm fir", "goog-remb").
        public var feedback: [UInt8: [String]] = [:]
        /// Extension URI → id (`extmap`).
        public var extensions: [String: Int] = [:]
        public var rtcpMux = false
        public var rtcpReducedSize = false
        /// `a=rtcp-xr` names `rcvr-rtt=all` (RFC 3611 §5.1): the offerer, a receiver that
        /// sends nothing, may send receiver reference times (XR RRTR) and learns the round trip
        /// from the sender's DLRR answers (a receive-only peer has no other way to it).
        public var receiverRTT = false
        // Media-level ICE and DTLS attributes, which win over the session's.
        var ufrag: String?
        var password: String?
        var fingerprint: String?
        var setup: String?
    }

    /// An offer, as far as a sender reads it.
    public struct Offer: Equatable, Sendable {
        public var media: [Media] = []
        public var ufrag = ""
        public var password = ""
        /// The SHA-256 fingerprint of the offerer's DTLS certificate (32 bytes).
        public var fingerprint: [UInt8] = []
        /// actpass, active or passive.
        public var setup = "actpass"
        public var bundle: [String] = []
    }

    /// What makes an offer unusable, one line each.
    public enum OfferError: Error, Equatable, CustomStringConvertible {
        case notSDP
        case noVideo
        case noH264
        case noICECredentials
        case noFingerprint
        case notReceiving
        case notSending

        public var description: String {
            switch self {
            case .notSDP: "the body is not an SDP offer (no v=0)"
            case .noVideo: "the offer has no video section"
            case .noH264: "the offer has no H.264 with packetization-mode=1 (nalcast sends H.264 as it is encoded)"
            case .noICECredentials: "the offer has no a=ice-ufrag and a=ice-pwd"
            case .noFingerprint: "the offer has no a=fingerprint:sha-256"
            case .notReceiving: "the offer's video does not receive (recvonly or sendrecv expected)"
            case .notSending: "the offer's video does not send (sendonly or sendrecv expected)"
            }
        }
    }

    /// Reads an offer; what a sender does not need is left out.
    public static func parseOffer(_ text: String) throws(OfferError) -> Offer {
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map { $0.trimmingSpaces }
        guard lines.first == "v=0" else { throw .notSDP }
        var offer = Offer()
        var current: Media?
        var fingerprint: String?
        for line in lines {
            if line.hasPrefix("m=") {
                if let current { offer.media.append(current) }
                let parts = line.dropFirst(2).split(separator: " ").map(String.init)
                guard parts.count >= 3 else { current = nil; continue }
                current = Media(kind: parts[0], port: Int(parts[1]) ?? 0, proto: parts[2], formats: Array(parts.dropFirst(3)))
                continue
            }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let (name, value) = split(attribute)
            if current == nil {
                switch name {
                case "ice-ufrag": offer.ufrag = value
                case "ice-pwd": offer.password = value
                case "fingerprint": if fingerprint == nil || value.lowercased().hasPrefix("sha-256") { fingerprint = sha256(value) ?? fingerprint }
                case "setup": offer.setup = value
                case "group": if value.hasPrefix("BUNDLE") { offer.bundle = value.split(separator: " ").dropFirst().map(String.init) }
                default: break
                }
            } else {
                read(name, value, into: &current!)
            }
        }
        if let current { offer.media.append(current) }
        guard let video = offer.media.first(where: { $0.kind == "video" && $0.port != 0 }) else { throw .noVideo }
        offer.ufrag = video.ufrag ?? offer.ufrag
        offer.password = video.password ?? offer.password
        offer.setup = video.setup ?? offer.setup
        guard !offer.ufrag.isEmpty, !offer.password.isEmpty else { throw .noICECredentials }
        guard let hex = video.fingerprint ?? fingerprint, let bytes = hexBytes(hex) else { throw .noFingerprint }
        offer.fingerprint = bytes
        return offer
    }

    private static func read(_ name: String, _ value: String, into media: inout Media) {
        switch name {
        case "mid": media.mid = value
        case "sendrecv", "recvonly", "sendonly", "inactive": media.direction = name
        case "rtcp-mux": media.rtcpMux = true
        case "rtcp-rsize": media.rtcpReducedSize = true
        case "rtcp-xr":
            media.receiverRTT = media.receiverRTT || value.split(separator: " ").contains { $0.lowercased().hasPrefix("rcvr-rtt=all") }
        case "ice-ufrag": media.ufrag = value
        case "ice-pwd": media.password = value
        case "setup": media.setup = value
        case "fingerprint":
            if let hex = sha256(value) { media.fingerprint = hex }
        case "rtpmap", "fmtp", "rtcp-fb":
            let (type, rest) = split(Substring(value), separator: " ")
            guard let pt = UInt8(type) else { return }
            if name == "rtpmap" { media.rtpmap[pt] = rest }
            if name == "fmtp" { media.fmtp[pt] = rest }
            if name == "rtcp-fb" { media.feedback[pt, default: []].append(rest) }
        case "extmap":
            let (id, rest) = split(Substring(value), separator: " ")
            let uri = rest.split(separator: " ").first.map(String.init) ?? rest
            if let number = Int(id.split(separator: "/").first ?? "") { media.extensions[uri] = number }
        default: break
        }
    }

    /// `name:value` (or `name` alone).
    private static func split(_ attribute: Substring, separator: Character = ":") -> (String, String) {
        guard let at = attribute.firstIndex(of: separator) else { return (String(attribute), "") }
        return (String(attribute[..<at]), String(attribute[attribute.index(after: at)...]))
    }

    /// The hex of a `fingerprint` value when its hash is SHA-256.
    private static func sha256(_ value: String) -> String? {
        let parts = value.split(separator: " ")
        guard parts.count == 2, parts[0].lowercased() == "sha-256" else { return nil }
        return String(parts[1])
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let bytes = text.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return bytes.count == 32 && text.split(separator: ":").count == 32 ? bytes : nil
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { b in let s = String(b, radix: 16, uppercase: true); return s.count == 1 ? "0" + s : s }.joined(separator: ":")
    }
}

extension Substring {
    var trimmingSpaces: String {
        var s = self
        while s.last == " " || s.last == "\t" { s.removeLast() }
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        return String(s)
    }
}
