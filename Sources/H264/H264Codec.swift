import Media

/// H.264 (ITU-T H.264, Annex-B byte streams) as nalcast's codec-neutral parts see it.
public struct H264Codec: VideoCodec {
    public init() {}

    public var name: String { "h264" }

    public func role(of nal: NALUnit) -> NALRole {
        let type = nal.wire[nal.headerIndex] & 0x1F
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

    public var requiredParameterSets: UInt64 { 1 << 7 | 1 << 8 }

    public var endOfSequence: NALUnit { NALUnit(escapedBody: [NALType.endOfSequence.rawValue]) }

    public func makeFraming() -> any AccessUnitFraming { AccessUnitDelimiting() }

    public func makePictureOrder() -> any PictureOrder { AccessUnitOrder() }

    public func makeParser(maxNALUnitSize: Int) -> any AccessUnitParser { AnnexBParser(maxNALUnitSize: maxNALUnitSize) }

    /// The picture size and frame rate of the first SPS, and the AVC decoder configuration
    /// record of the SPS and PPS.
    public func streamParameters(_ parameterSets: [NALUnit]) -> VideoStreamParameters {
        let sps = parameterSets.first { $0.type == .sps }.flatMap { try? SequenceParameterSet($0) }
        return VideoStreamParameters(resolution: sps?.resolution, frameRate: sps?.frameRate,
                                     decoderConfiguration: Self.avcC(parameterSets, sps: sps))
    }

    /// `avc1.PPCCLL`: profile_idc, the constraint flags and level_idc of the first SPS.
    public func codecString(_ parameterSets: [NALUnit]) -> String? {
        guard let sps = parameterSets.first(where: { $0.type == .sps }), sps.body.count >= 4 else { return nil }
        let bytes = sps.body.dropFirst().prefix(3)
        return "avc1." + bytes.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// The AVC decoder configuration record (ISO/IEC 14496-15 5.3.3.1) of `parameterSets`:
    /// profile, compatibility and level from the first SPS, 4-byte NAL lengths, every SPS
    /// and PPS, and for the High profiles the chroma format and bit depths. nil without an
    /// SPS and a PPS (a muxer then gets Annex-B and converts it itself).
    static func avcC(_ parameterSets: [NALUnit], sps parsed: SequenceParameterSet?) -> [UInt8]? {
        let sps = parameterSets.filter { $0.type == .sps }.map { Array($0.body) }
        let pps = parameterSets.filter { $0.type == .pps }.map { Array($0.body) }
        guard let first = sps.first, first.count >= 4, !pps.isEmpty, sps.count < 32, pps.count < 256,
              (sps + pps).allSatisfy({ $0.count <= 0xFFFF }) else { return nil }
        var out: [UInt8] = [1, first[1], first[2], first[3], 0xFC | 3, 0xE0 | UInt8(sps.count)]
        func append(_ nal: [UInt8]) {
            out.append(contentsOf: [UInt8(nal.count >> 8), UInt8(nal.count & 0xFF)])
            out.append(contentsOf: nal)
        }
        sps.forEach(append)
        out.append(UInt8(pps.count))
        pps.forEach(append)
        if [100, 110, 122, 144].contains(first[1]) {
            out.append(0xFC | UInt8((parsed?.chromaFormatIdc ?? 1) & 3))
            out.append(0xF8 | UInt8(((parsed?.bitDepthLuma ?? 8) - 8) & 7))
            out.append(0xF8 | UInt8(((parsed?.bitDepthChroma ?? 8) - 8) & 7))
            out.append(0)
        }
        return out
    }
}
