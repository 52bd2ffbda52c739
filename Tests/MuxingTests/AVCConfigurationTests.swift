import H264
import Media
import Testing
@testable import Muxing

/// The avcC record the MP4, Matroska and FLV muxers get in place of Annex-B extradata.
@Suite struct AVCConfigurationTests {
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
}
