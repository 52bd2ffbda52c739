import Media

/// The one-byte NAL unit header (H.264 7.3.1).
///
///     +---+---+---+---+---+---+---+---+
///     | F |  NRI  |       Type        |
///     +---+---+---+---+---+---+---+---+
///       forbidden_zero_bit, nal_ref_idc, nal_unit_type
public struct NALHeader: Sendable, Hashable {
    public let byte: UInt8

    public init(_ byte: UInt8) { self.byte = byte }

    public init(forbiddenBit: Bool = false, refIdc: UInt8, type: NALType) {
        self.byte = (forbiddenBit ? 0x80 : 0) | ((refIdc & 3) << 5) | (type.rawValue & 0x1f)
    }

    public var forbiddenBit: Bool { byte & 0x80 != 0 }
    public var refIdc: UInt8 { (byte >> 5) & 3 }
    public var type: NALType { NALType(rawValue: byte & 0x1f) }
}

/// nal_unit_type (H.264 Table 7-1). Unknown values are kept, not rejected.
public struct NALType: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x1f }

    public static let unspecified = NALType(rawValue: 0)
    public static let slice = NALType(rawValue: 1)
    public static let sliceDataA = NALType(rawValue: 2)
    public static let sliceDataB = NALType(rawValue: 3)
    public static let sliceDataC = NALType(rawValue: 4)
    public static let idrSlice = NALType(rawValue: 5)
    public static let sei = NALType(rawValue: 6)
    public static let sps = NALType(rawValue: 7)
    public static let pps = NALType(rawValue: 8)
    public static let accessUnitDelimiter = NALType(rawValue: 9)
    public static let endOfSequence = NALType(rawValue: 10)
    public static let endOfStream = NALType(rawValue: 11)
    public static let fillerData = NALType(rawValue: 12)
    public static let spsExtension = NALType(rawValue: 13)
    public static let prefix = NALType(rawValue: 14)
    public static let subsetSPS = NALType(rawValue: 15)
    public static let depthParameterSet = NALType(rawValue: 16)
    public static let auxiliarySlice = NALType(rawValue: 19)
    public static let sliceExtension = NALType(rawValue: 20)
    public static let sliceExtensionDepth = NALType(rawValue: 21)

    /// Coded slice of a primary picture (types 1 to 5): the units 7.4.1.2.4 compares.
    public var isVCL: Bool { rawValue >= 1 && rawValue <= 5 }

    public var name: String {
        switch rawValue {
        case 1: "slice"
        case 2: "slice-a"
        case 3: "slice-b"
        case 4: "slice-c"
        case 5: "idr"
        case 6: "sei"
        case 7: "sps"
        case 8: "pps"
        case 9: "aud"
        case 10: "end-seq"
        case 11: "end-stream"
        case 12: "filler"
        case 13: "sps-ext"
        case 14: "prefix"
        case 15: "subset-sps"
        case 19: "aux-slice"
        case 20: "slice-ext"
        default: "type\(rawValue)"
        }
    }

    public var description: String { name }

    public static func < (a: NALType, b: NALType) -> Bool { a.rawValue < b.rawValue }
}

/// The H.264 reading of a NAL unit: its one-byte header and its RBSP.
extension NALUnit {
    public var header: NALHeader { NALHeader(wire[headerIndex]) }
    public var type: NALType { header.type }

    /// The payload after the one-byte header, still escaped.
    public var escapedPayload: ArraySlice<UInt8> { wire[(headerIndex + 1)..<payloadEnd] }

    /// The raw byte sequence payload: the payload with emulation prevention bytes removed.
    public func rbsp(limit: Int = .max) -> [UInt8] { RBSP.unescape(escapedPayload, limit: limit) }

    /// The first `limit` bytes of the RBSP, shared with `wire` when no emulation prevention
    /// byte is among them (slice headers, read for every picture).
    public func rbspPrefix(_ limit: Int) -> ArraySlice<UInt8> { RBSP.unescapedPrefix(escapedPayload, limit: limit) }
}

extension AccessUnit {
    /// The NAL unit types in order, e.g. for `nalcast inspect`.
    public var nalTypes: [NALType] { nalUnits.map(\.type) }
}

extension NALUnit {
    /// An access unit delimiter (7.3.2.4) with a 4-byte start code: `primaryPicType` 0 for I
    /// slices only, 1 for I and P, 7 for any slice type.
    public static func accessUnitDelimiter(primaryPicType: UInt8) -> NALUnit {
        NALUnit(escapedBody: [NALHeader(refIdc: 0, type: .accessUnitDelimiter).byte, (primaryPicType << 5) | 0x10])
    }
}
