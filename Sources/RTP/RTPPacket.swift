/// One RTP packet (RFC 3550 §5.1): the fixed header, the contributing sources, the header
/// extension (RFC 8285's one- and two-byte forms are the extension's own business), and the
/// payload without padding. Parsing shares the bytes it was given; `serialized()` writes a
/// packet back.
public struct RTPPacket: Sendable, Equatable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    /// The extension's profile word (0xBEDE for RFC 8285's one-byte form) and its data
    /// (a multiple of four bytes), or nil when the X bit is clear.
    public var extensionProfile: UInt16?
    public var extensionData: ArraySlice<UInt8>
    public var payload: ArraySlice<UInt8>

    public init(marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: [UInt32] = [], extensionProfile: UInt16? = nil, extensionData: ArraySlice<UInt8> = [],
                payload: ArraySlice<UInt8>) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensionProfile = extensionProfile
        self.extensionData = extensionData
        self.payload = payload
    }

    /// Why bytes are not an RTP packet.
    public enum ParseError: Error, Equatable {
        case tooShort, notVersion2, badPadding, truncatedExtension
    }

    /// Parses one packet (a whole datagram, or one interleaved frame of an RTSP connection).
    public init(parsing bytes: ArraySlice<UInt8>) throws(ParseError) {
        let s = bytes.startIndex
        guard bytes.count >= 12 else { throw .tooShort }
        let first = bytes[s]
        guard first >> 6 == 2 else { throw .notVersion2 }
        let csrcCount = Int(first & 0x0F)
        var end = bytes.endIndex
        if first & 0x20 != 0 {  // padding: the last byte counts it, itself included
            let padding = Int(bytes[end - 1])
            guard padding > 0, padding <= bytes.count - 12 else { throw .badPadding }
            end -= padding
        }
        var at = s + 12
        guard at + 4 * csrcCount <= end else { throw .tooShort }
        var csrcs: [UInt32] = []
        csrcs.reserveCapacity(csrcCount)
        for _ in 0..<csrcCount {
            csrcs.append(Self.word(bytes, at))
            at += 4
        }
        var profile: UInt16?
        var extensionData: ArraySlice<UInt8> = []
        if first & 0x10 != 0 {
            guard at + 4 <= end else { throw .truncatedExtension }
            profile = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let length = 4 * (Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
            at += 4
            guard at + length <= end else { throw .truncatedExtension }
            extensionData = bytes[at..<(at + length)]
            at += length
        }
        guard at <= end else { throw .tooShort }
        self.init(marker: bytes[s + 1] & 0x80 != 0, payloadType: bytes[s + 1] & 0x7F,
                  sequenceNumber: UInt16(bytes[s + 2]) << 8 | UInt16(bytes[s + 3]),
                  timestamp: Self.word(bytes, s + 4), ssrc: Self.word(bytes, s + 8),
                  csrcs: csrcs, extensionProfile: profile, extensionData: extensionData,
                  payload: bytes[at..<end])
    }

    /// The packet's bytes (no padding).
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + 4 * csrcs.count + (extensionProfile == nil ? 0 : 4 + extensionData.count) + payload.count)
        append(to: &out)
        return out
    }

    /// Appends the packet's bytes to `out` (no padding).
    public func append(to out: inout [UInt8]) {
        precondition(csrcs.count < 16 && extensionData.count % 4 == 0 && payloadType < 128)
        out.append(0x80 | (extensionProfile == nil ? 0 : 0x10) | UInt8(csrcs.count))
        out.append((marker ? 0x80 : 0) | payloadType)
        out.append(UInt8(sequenceNumber >> 8))
        out.append(UInt8(truncatingIfNeeded: sequenceNumber))
        Self.append(timestamp, to: &out)
        Self.append(ssrc, to: &out)
        for csrc in csrcs { Self.append(csrc, to: &out) }
        if let extensionProfile {
            out.append(UInt8(extensionProfile >> 8))
            out.append(UInt8(truncatingIfNeeded: extensionProfile))
            let words = extensionData.count / 4
            out.append(UInt8(words >> 8))
            out.append(UInt8(truncatingIfNeeded: words))
            out.append(contentsOf: extensionData)
        }
        out.append(contentsOf: payload)
    }

    static func word(_ bytes: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    static func append(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }
}

/// Whether a sequence number comes after another, across the 16-bit wrap (RFC 3550 A.1's
/// arithmetic): `b` is newer than `a` when it is less than half the space ahead.
public func rtpSequence(_ b: UInt16, isAfter a: UInt16) -> Bool {
    let d = b &- a
    return d != 0 && d < 0x8000
}
