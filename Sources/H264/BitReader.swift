/// An error in a bitstream field: the field is named so a log line says what was wrong.
public enum BitstreamError: Error, Equatable, CustomStringConvertible {
    /// The data ended inside the named field.
    case truncated(field: String)
    /// An exp-Golomb code longer than 32 bits.
    case overflow(field: String)
    /// A value outside what the standard allows.
    case outOfRange(field: String, value: Int64)

    public var description: String {
        switch self {
        case .truncated(let field): "truncated in \(field)"
        case .overflow(let field): "exp-Golomb code too long in \(field)"
        case .outOfRange(let field, let value): "\(field) out of range (\(value))"
        }
    }
}

/// Reads bits, most significant first, from an RBSP (emulation prevention already removed).
/// Every read checks the bounds and throws: malformed input is an error, never a trap.
public struct BitReader {
    /// The RBSP bytes; indices are relative to `bytes.startIndex` through `byte(_:)`.
    private let bytes: ArraySlice<UInt8>
    /// Position in bits from the start.
    public private(set) var position: Int = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }
    public init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    private func byte(_ i: Int) -> UInt8 { bytes[bytes.startIndex + i] }

    public var bitsLeft: Int { bytes.count * 8 - position }

    /// u(1)
    public mutating func flag(_ field: String) throws -> Bool { try bits(1, field) == 1 }

    /// u(n), n <= 32.
    public mutating func bits(_ count: Int, _ field: String) throws -> UInt32 {
        precondition(count >= 0 && count <= 32)
        guard count <= bitsLeft else { throw BitstreamError.truncated(field: field) }
        guard count > 0 else { return 0 }
        let value = UInt32(truncatingIfNeeded: (peek64() << UInt64(position & 7)) >> UInt64(64 - count))
        position += count
        return value
    }

    public mutating func skip(_ count: Int, _ field: String) throws {
        guard count <= bitsLeft else { throw BitstreamError.truncated(field: field) }
        position += count
    }

    /// ue(v): unsigned exp-Golomb. Codes of more than 32 bits are an overflow error.
    public mutating func ue(_ field: String) throws -> UInt32 {
        // Count the leading zeros a window of up to 32 bits at a time.
        var leadingZeros = 0
        while true {
            let window = peek32()
            let available = Swift.min(32, bitsLeft)
            guard available > 0 else { throw BitstreamError.truncated(field: field) }
            let zeros = Swift.min(window.leadingZeroBitCount, available)
            leadingZeros += zeros
            position += zeros
            if leadingZeros > 31 { throw BitstreamError.overflow(field: field) }
            if zeros < available { break }
        }
        position += 1  // the marker bit
        if leadingZeros == 0 { return 0 }
        let suffix = try bits(leadingZeros, field)
        let value = (UInt64(1) << UInt64(leadingZeros)) - 1 + UInt64(suffix)
        guard value <= UInt64(UInt32.max) else { throw BitstreamError.overflow(field: field) }
        return UInt32(value)
    }

    /// The next 32 bits (zeros past the end), without moving.
    private func peek32() -> UInt32 {
        UInt32(truncatingIfNeeded: (peek64() << UInt64(position & 7)) >> 32)
    }

    /// The 8 bytes from the one holding `position` (zeros past the end), big-endian.
    private func peek64() -> UInt64 {
        let first = position >> 3
        if first + 8 <= bytes.count {
            return bytes.withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: first, as: UInt64.self)) }
        }
        var value: UInt64 = 0
        for i in 0..<8 {
            value <<= 8
            if first + i < bytes.count { value |= UInt64(byte(first + i)) }
        }
        return value
    }

    /// ue(v) with an upper bound the standard sets for this field.
    public mutating func ue(_ field: String, max: UInt32) throws -> Int {
        let value = try ue(field)
        guard value <= max else { throw BitstreamError.outOfRange(field: field, value: Int64(value)) }
        return Int(value)
    }

    /// se(v): signed exp-Golomb (1 → 1, 2 → -1, 3 → 2, ...).
    public mutating func se(_ field: String) throws -> Int32 {
        let code = Int64(try ue(field))
        return Int32(code & 1 == 1 ? (code + 1) / 2 : -(code / 2))
    }

    /// more_rbsp_data(): true while something other than the rbsp_trailing_bits is left.
    public var moreRBSPData: Bool {
        guard bitsLeft > 0 else { return false }
        // Find the last 1 bit in the data: it is the rbsp_stop_one_bit.
        var last = bytes.count - 1
        while last >= 0 && byte(last) == 0 { last -= 1 }
        guard last >= 0 else { return false }
        let stopBit = last * 8 + (7 - byte(last).trailingZeroBitCount)
        return position < stopBit
    }
}
