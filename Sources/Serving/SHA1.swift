/// SHA-1 (FIPS 180-4, RFC 3174), for the one place nalcast needs it: the WebSocket handshake's
/// `Sec-WebSocket-Accept` (RFC 6455 section 4.2.2). SHA-1 is broken for collision resistance;
/// the handshake uses it only to prove the server read the key, never for security, so it
/// must not be used for anything else.
///
/// One call hashes a whole message (`SHA1.digest(_:)`); `SHA1` is also incremental
/// (`update`, then `finish`) for messages that arrive in pieces.
public struct SHA1 {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
    /// Bytes of the current 64-byte block not yet compressed.
    private var block: [UInt8] = []
    /// Message length so far, in bytes.
    private var length: UInt64 = 0

    public init() { block.reserveCapacity(64) }

    /// The 20-byte digest of `message`.
    public static func digest(_ message: some Sequence<UInt8>) -> [UInt8] {
        var sha = SHA1()
        sha.update(message)
        return sha.finish()
    }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            block.append(byte)
            length &+= 1
            if block.count == 64 {
                compress()
                block.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Pads the message (a 1 bit, zeros, the length in bits as a big-endian u64) and returns
    /// the digest. The hasher is spent afterwards.
    public mutating func finish() -> [UInt8] {
        let bits = length &* 8
        block.append(0x80)
        if block.count > 56 {
            block += [UInt8](repeating: 0, count: 64 - block.count)
            compress()
            block.removeAll(keepingCapacity: true)
        }
        block += [UInt8](repeating: 0, count: 56 - block.count)
        for shift in stride(from: 56, through: 0, by: -8) { block.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        compress()
        block.removeAll()
        var out: [UInt8] = []
        out.reserveCapacity(20)
        for word in [state.0, state.1, state.2, state.3, state.4] {
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        return out
    }

    /// Compresses the 64 bytes in `block` into `state` (FIPS 180-4 section 6.1.2).
    private mutating func compress() {
        var w = [UInt32](repeating: 0, count: 80)
        for t in 0..<16 {
            w[t] = UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16 | UInt32(block[4 * t + 2]) << 8 | UInt32(block[4 * t + 3])
        }
        for t in 16..<80 { w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1) }
        var (a, b, c, d, e) = state
        for t in 0..<80 {
            let f: UInt32
            let k: UInt32
            switch t {
            case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
            case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
            case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
            default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
            }
            let temp = rotl(a, 5) &+ f &+ e &+ k &+ w[t]
            e = d
            d = c
            c = rotl(b, 30)
            b = a
            a = temp
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
    }

    private func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { x << n | x >> (32 - n) }
}
