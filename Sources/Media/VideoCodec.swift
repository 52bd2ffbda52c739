/// The video codecs nalcast carries, and what the codec-neutral parts (the server, the
/// outputs, the containers' framing, the page) need to know of each: what a NAL unit's
/// header says it is for. Everything else about a codec (its parameter sets' syntax, its
/// picture order, the assembler that finds where access units begin, its decoder
/// configuration record, its codec string) lives in the codec's own module (`H264`).
///
/// A second codec is a case here, with its NAL unit roles, and a module of its own.
public enum VideoCodec: UInt8, Sendable, Hashable, CustomStringConvertible {
    case h264

    /// What a NAL unit is for, in the words every codec shares.
    public enum Role: Sendable, Hashable {
        /// A coded slice (or slice data) of a picture.
        case picture
        /// Supplemental enhancement information (nalcast's timestamp travels in one).
        case sei
        /// A parameter set, with its NAL unit type: a decoder needs one of each type in
        /// `requiredParameterSets` before a picture.
        case parameterSet(UInt8)
        /// The access unit delimiter, first in its access unit when present.
        case delimiter
        /// End of sequence: the next picture is an IDR.
        case endOfSequence
        /// End of stream: nothing follows.
        case endOfStream
        case other
    }

    /// The role of `nal` from its header.
    @inlinable
    public func role(of nal: NALUnit) -> Role {
        let header = nal.wire[nal.headerIndex]
        switch self {
        case .h264:
            let type = header & 0x1F
            switch type {
            case 1...5: return .picture
            case 6: return .sei
            case 7, 8: return .parameterSet(type)
            case 9: return .delimiter
            case 10: return .endOfSequence
            case 11: return .endOfStream
            default: return .other
            }
        }
    }

    /// The parameter set types a decoder needs before a picture, one bit per NAL unit type
    /// (H.264: SPS and PPS; every codec's types are below 64).
    public var requiredParameterSets: UInt64 {
        switch self {
        case .h264: 1 << 7 | 1 << 8
        }
    }

    /// An end-of-sequence NAL unit (with a 4-byte start code).
    public var endOfSequence: NALUnit {
        switch self {
        case .h264: NALUnit(escapedBody: [10])
        }
    }

    /// The codec's name as FFmpeg and `--help` say it.
    public var description: String {
        switch self {
        case .h264: "h264"
        }
    }
}
