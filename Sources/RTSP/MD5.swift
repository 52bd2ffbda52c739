#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// MD5 (RFC 1321), for RTSP's Digest authentication (RFC 2617), which cameras still ask for.
/// Not for anything that needs a secure hash: Digest defines its responses with MD5.
enum MD5 {
    private static let shifts: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                           5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    // floor(abs(sin(i + 1)) * 2^32)
    private static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64((abs(sin(Double($0 + 1))) * 4_294_967_296).rounded(.down))) }

    /// The digest of `bytes` as 32 lowercase hex digits.
    static func hex(_ text: String) -> String {
        digest(Array(text.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var message = bytes
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        let bits = UInt64(bytes.count) &* 8
        for i in 0..<8 { message.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        var a0: UInt32 = 0x6745_2301, b0: UInt32 = 0xefcd_ab89, c0: UInt32 = 0x98ba_dcfe, d0: UInt32 = 0x1032_5476
        for chunk in stride(from: 0, to: message.count, by: 64) {
            var m = [UInt32](repeating: 0, count: 16)
            for i in 0..<16 {
                let at = chunk + 4 * i
                m[i] = UInt32(message[at]) | UInt32(message[at + 1]) << 8 | UInt32(message[at + 2]) << 16 | UInt32(message[at + 3]) << 24
            }
            var a = a0, b = b0, c = c0, d = d0
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16: f = (b & c) | (~b & d); g = i
                case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) % 16
                default: f = c ^ (b | ~d); g = (7 * i) % 16
                }
                f = f &+ a &+ constants[i] &+ m[g]
                a = d
                d = c
                c = b
                b = b &+ (f << shifts[i] | f >> (32 - shifts[i]))
            }
            a0 = a0 &+ a; b0 = b0 &+ b; c0 = c0 &+ c; d0 = d0 &+ d
        }
        var out: [UInt8] = []
        for word in [a0, b0, c0, d0] { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(i)))) } }
        return out
    }
}
