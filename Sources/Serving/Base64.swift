/// Base64 (RFC 4648 section 4: the standard alphabet, `=` padding), for the WebSocket
/// handshake: decoding checks a `Sec-WebSocket-Key`, encoding writes `Sec-WebSocket-Accept`.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i < input.count {
            let n = min(3, input.count - i)
            let b0 = input[i]
            let b1 = n > 1 ? input[i + 1] : 0
            let b2 = n > 2 ? input[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(n > 1 ? alphabet[Int((b1 & 0x0f) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(n > 2 ? alphabet[Int(b2 & 0x3f)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil unless it is canonical base64: a multiple of 4
    /// characters of the alphabet, padding only at the end, and padded-out bits zero (so each
    /// byte string has exactly one accepted encoding). No whitespace, no line breaks.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            let last = i + 4 == chars.count
            let padding = last ? (chars[i + 3] == UInt8(ascii: "=") ? (chars[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var group: UInt32 = 0
            for j in 0..<(4 - padding) {
                guard let value = sextet(chars[i + j]) else { return nil }
                group = group << 6 | UInt32(value)
            }
            group <<= UInt32(6 * padding)
            let bytes = [UInt8(truncatingIfNeeded: group >> 16), UInt8(truncatingIfNeeded: group >> 8), UInt8(truncatingIfNeeded: group)]
            // The bits the padding stands for must be zero.
            if padding > 0, bytes[(3 - padding)...].contains(where: { $0 != 0 }) { return nil }
            out += bytes[..<(3 - padding)]
            i += 4
        }
        return out
    }

    private static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
