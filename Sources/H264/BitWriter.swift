/// Writes the bits of an RBSP, most significant first (H.264 7.2).
struct BitWriter {
    private var bytes: [UInt8] = []
    private var used = 8

    mutating func bit(_ on: Bool) {
        if used == 8 {
            bytes.append(0)
            used = 0
        }
        if on { bytes[bytes.count - 1] |= 0x80 >> UInt8(used) }
        used += 1
    }

    mutating func bits(_ value: UInt64, _ count: Int) {
        for i in stride(from: count - 1, through: 0, by: -1) { bit((value >> UInt64(i)) & 1 == 1) }
    }

    /// Exp-Golomb, unsigned (9.1).
    mutating func ue(_ value: Int) {
        let v = UInt64(value) + 1
        let length = 64 - v.leadingZeroBitCount
        bits(0, length - 1)
        bits(v, length)
    }

    /// Exp-Golomb, signed (9.1.1).
    mutating func se(_ value: Int) { ue(value > 0 ? 2 * value - 1 : -2 * value) }

    /// Whether the next bit starts a byte.
    var isByteAligned: Bool { used == 8 }

    /// The bits written, then rbsp_trailing_bits: a stop bit and zeros to the byte's end.
    func rbsp() -> [UInt8] {
        var out = self
        out.bit(true)
        return out.bytes
    }

    /// The bits written and zeros to the byte's end, no stop bit: for a CABAC slice, whose
    /// arithmetic coder writes the stop bit itself when it is flushed (9.3.4.5).
    func zeroAligned() -> [UInt8] { bytes }
}
