/// What nalcast reads of a DESCRIBE's SDP (RFC 4566): the session's control URL and each
/// media section's type, payload type, clock rate, control URL and format parameters: for
/// H.264 (RFC 6184) the `sprop-parameter-sets`, for AAC (RFC 3640 MPEG4-GENERIC) the
/// AudioSpecificConfig and the AU header sizes.
public struct SessionDescription: Sendable {
    public struct Media: Sendable {
        /// `video`, `audio`...
        public let kind: String
        public let payloadType: UInt8
        /// `H264`, `MPEG4-GENERIC`... (upper-cased)
        public let encoding: String
        public let clockRate: Int
        public let channels: Int
        public let control: String?
        /// `a=fmtp` fields, names lower-cased.
        public let format: [String: String]

        /// H.264's SPS and PPS from `sprop-parameter-sets` (base64, comma-separated), each
        /// a NAL unit's bytes without a start code.
        public var parameterSets: [[UInt8]] {
            (format["sprop-parameter-sets"] ?? "").split(separator: ",").compactMap { SessionDescription.base64Decoded($0) }.filter { !$0.isEmpty }
        }

        /// AAC's AudioSpecificConfig from `config` (hex).
        public var audioSpecificConfig: [UInt8]? {
            guard let hex = format["config"], hex.count % 2 == 0, !hex.isEmpty else { return nil }
            var out: [UInt8] = []
            var at = hex.startIndex
            while at < hex.endIndex {
                let next = hex.index(at, offsetBy: 2)
                guard let byte = UInt8(hex[at..<next], radix: 16) else { return nil }
                out.append(byte)
                at = next
            }
            return out
        }
    }

    public let control: String?
    public let media: [Media]

    public init(parsing text: String) {
        var sessionControl: String?
        var media: [Media] = []
        var current: (kind: String, pt: UInt8, attributes: [String])?
        func close() {
            guard let c = current else { return }
            media.append(Self.media(c.kind, c.pt, c.attributes))
            current = nil
        }
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = raw.strippingSpaces()
            if line.hasPrefix("m=") {
                close()
                let fields = line.dropFirst(2).split(separator: " ")
                current = (fields.first.map(String.init) ?? "", fields.count > 3 ? UInt8(fields[3]) ?? 0 : 0, [])
            } else if line.hasPrefix("a=") {
                if current != nil { current!.attributes.append(String(line.dropFirst(2))) } else if line.hasPrefix("a=control:") {
                    sessionControl = String(line.dropFirst("a=control:".count))
                }
            }
        }
        close()
        control = sessionControl
        self.media = media
    }

    private static func media(_ kind: String, _ pt: UInt8, _ attributes: [String]) -> Media {
        var encoding = "", rate = 0, channels = 1
        var control: String?
        var format: [String: String] = [:]
        for a in attributes {
            if a.hasPrefix("control:") { control = String(a.dropFirst("control:".count)) }
            if a.hasPrefix("rtpmap:\(pt) ") {
                let parts = a.split(separator: " ", maxSplits: 1).last?.split(separator: "/") ?? []
                encoding = parts.first.map { $0.uppercased() } ?? ""
                rate = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
                channels = parts.count > 2 ? Int(parts[2]) ?? 1 : 1
            }
            if a.hasPrefix("fmtp:\(pt) ") {
                for field in a.split(separator: " ", maxSplits: 1).last?.split(separator: ";") ?? [] {
                    let kv = field.split(separator: "=", maxSplits: 1)
                    if kv.count == 2 { format[kv[0].strippingSpaces().lowercased()] = kv[1].strippingSpaces() }
                }
            }
        }
        return Media(kind: kind, payloadType: pt, encoding: encoding, clockRate: rate, channels: channels, control: control, format: format)
    }

    /// Base64 (with or without padding); nil when a character is not of the alphabet.
    static func base64Decoded(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var acc: UInt32 = 0, bits = 0
        for c in text.utf8 where c != UInt8(ascii: "=") {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            default: return nil
            }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        return out
    }
}
