import H264
import Media
import Testing

/// H.264's side of the codec seam: what the codec-neutral parts ask of an access unit's NAL
/// units, and what a container declares (the avcC record the MP4, Matroska and FLV muxers
/// get in place of Annex-B extradata).
@Suite struct H264CodecTests {
    // A High-profile SPS (profile 100, level 3.1, 4:2:0, 8 bits) and its PPS, escaped bodies.
    static let sps = NALUnit(escapedBody: [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9, 0x40, 0x50, 0x05, 0xBB, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x83, 0x19, 0x60])
    static let pps = NALUnit(escapedBody: [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0])

    @Test func recordHoldsTheParameterSetsWithTheirLengths() throws {
        let record = try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration)
        let spsBytes = Array(Self.sps.body), ppsBytes = Array(Self.pps.body)
        #expect(Array(record.prefix(6)) == [1, 0x64, 0x00, 0x1F, 0xFF, 0xE1])
        #expect(Array(record[6..<8]) == [0, UInt8(spsBytes.count)])
        #expect(Array(record[8..<(8 + spsBytes.count)]) == spsBytes)
        var at = 8 + spsBytes.count
        #expect(record[at] == 1)
        #expect(Array(record[(at + 1)..<(at + 3)]) == [0, UInt8(ppsBytes.count)])
        at += 3
        #expect(Array(record[at..<(at + ppsBytes.count)]) == ppsBytes)
        // High profile: chroma format 1, 8-bit luma and chroma, no SPS extensions.
        #expect(Array(record[(at + ppsBytes.count)...]) == [0xFD, 0xF8, 0xF8, 0])
    }

    @Test func withoutAPPSThereIsNoRecord() {
        #expect(H264Codec().streamParameters([Self.sps]).decoderConfiguration == nil)
        #expect(H264Codec().streamParameters([Self.pps]).decoderConfiguration == nil)
    }

    @Test func rolesFollowTheNALUnitType() {
        let codec = H264Codec()
        func role(_ header: UInt8) -> NALRole { codec.role(of: NALUnit(escapedBody: [header, 0x80])) }
        #expect(role(0x65) == .picture)  // IDR slice, nal_ref_idc 3
        #expect(role(0x41) == .picture)  // non-IDR slice
        #expect(role(0x06) == .sei)
        #expect(role(0x67) == .parameterSet(7))
        #expect(role(0x68) == .parameterSet(8))
        #expect(role(0x09) == .delimiter)
        #expect(role(0x0A) == .endOfSequence)
        #expect(role(0x0B) == .endOfStream)
        #expect(role(0x0C) == .other)  // filler data
        #expect(codec.role(of: codec.endOfSequence) == .endOfSequence)
    }

    @Test func anIDRStartsDecodingWithBothParameterSetsCarriedOrKnown() {
        let codec = H264Codec()
        let idr = NALUnit(escapedBody: [0x65, 0x88, 0x80])
        let aud = NALUnit(escapedBody: [0x09, 0xF0])
        let carried = AccessUnit(codec: codec, nalUnits: [aud, Self.sps, Self.pps, idr], isIDR: true, resolution: nil, timestamp: nil)
        #expect(carried.carriesParameterSets && carried.canStartDecoding)
        let onlySPS = AccessUnit(codec: codec, nalUnits: [aud, Self.sps, idr], isIDR: true, resolution: nil, timestamp: nil)
        #expect(!onlySPS.carriesParameterSets && !onlySPS.canStartDecoding)
        let known = AccessUnit(codec: codec, nalUnits: [aud, idr], isIDR: true, resolution: nil, timestamp: nil, parameterSets: [Self.sps, Self.pps])
        #expect(known.canStartDecoding)
        // The parameter sets go in front of the slices, after the AUD.
        #expect(known.nalUnitsForEntry.map { Array($0.body) } == [aud, Self.sps, Self.pps, idr].map { Array($0.body) })
        #expect(known.endingStream().endsStream && !known.endsStream)
    }

    @Test func streamParametersAndCodecStringComeFromTheSPS() {
        let codec = H264Codec()
        let stream = codec.streamParameters([Self.sps, Self.pps])
        #expect(stream.resolution == Resolution(width: 1280, height: 720))
        #expect(codec.codecString([Self.sps, Self.pps]) == "avc1.64001f")
        #expect(codec.codecString([Self.pps]) == nil)
    }
}
