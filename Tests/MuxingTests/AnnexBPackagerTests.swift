import H264
import Media
import Testing
@testable import Muxing

/// Demuxed packets back to nalcast's wire form: avcC extradata, length-prefixed NAL units to
/// start codes, SPS/PPS in front of IDRs that lack them, an AUD in front of every access unit.
@Suite struct AnnexBPackagerTests {
    // A High-profile SPS (profile 100, level 3.1, 1280x720, 4:2:0, 8 bits) and its PPS, escaped bodies.
    static let sps = NALUnit(escapedBody: [0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9, 0x40, 0x50, 0x05, 0xBB, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x83, 0x19, 0x60])
    static let pps = NALUnit(escapedBody: [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0])
    /// An IDR slice: first_mb 0, slice_type 7 (I), pps 0, then some payload.
    static let idr: [UInt8] = [0x65, 0x88, 0x84, 0x00, 0x21, 0xff, 0xfe, 0x17]
    /// A non-IDR slice: first_mb 0, slice_type 5 (P), pps 0.
    static let slice: [UInt8] = [0x41, 0x9a, 0x21, 0x6c, 0x42, 0x33]

    static func lengthPrefixed(_ bodies: [[UInt8]], size: Int = 4) -> [UInt8] {
        var out: [UInt8] = []
        for body in bodies {
            for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: body.count >> shift)) }
            out += body
        }
        return out
    }

    static func annexB(_ bodies: [[UInt8]]) -> [UInt8] { bodies.flatMap { [0, 0, 0, 1] + $0 } }

    static func wire(_ unit: AccessUnit) -> [UInt8] { unit.nalUnits.flatMap { Array($0.wire) } }

    @Test func avcCRecordGivesLengthSizeAndParameterSets() throws {
        let record = try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration)
        let parsed = try AnnexBPackager.parseAVCC(record)
        #expect(parsed.lengthSize == 4)
        #expect(parsed.parameterSets.map { Array($0.body) } == [Array(Self.sps.body), Array(Self.pps.body)])
        #expect(parsed.parameterSets.map(\.type) == [.sps, .pps])
        #expect(throws: PackagerError.self) { try AnnexBPackager.parseAVCC(Array(record.prefix(9))) }
    }

    @Test func lengthPrefixedIDRGetsAUDAndParameterSetsFromTheExtradata() throws {
        var packager = try AnnexBPackager(extradata: try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration))
        let unitGot = packager.accessUnit(packet: Self.lengthPrefixed([Self.idr]))
        let unit = try #require(unitGot)
        #expect(unit.nalTypes == [.accessUnitDelimiter, .sps, .pps, .idrSlice])
        #expect(unit.isIDR && unit.isEntryPoint)
        #expect(Self.wire(unit) == Self.annexB([[0x09, 0xf0], Array(Self.sps.body), Array(Self.pps.body), Self.idr]))
        #expect(unit.resolution != nil)

        // A P picture: an AUD, nothing else added.
        let pGot = packager.accessUnit(packet: Self.lengthPrefixed([Self.slice]))
        let p = try #require(pGot)
        #expect(p.nalTypes == [.accessUnitDelimiter, .slice])
        #expect(!p.isIDR)
        #expect(Self.wire(p) == Self.annexB([[0x09, 0xf0], Self.slice]))
        #expect(packager.malformedPackets == 0)
    }

    @Test func twoByteLengthsAreConvertedToo() throws {
        var record = try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration)
        record[4] = 0xfd  // lengthSizeMinusOne = 1
        var packager = try AnnexBPackager(extradata: record)
        #expect(packager.lengthSize == 2)
        let unitGot = packager.accessUnit(packet: Self.lengthPrefixed([[0x06, 0x05, 0x01, 0x80], Self.idr], size: 2))
        let unit = try #require(unitGot)
        #expect(unit.nalTypes == [.accessUnitDelimiter, .sps, .pps, .sei, .idrSlice])
        #expect(Array(unit.nalUnits[4].body) == Self.idr)
    }

    @Test func theLatestInBandParameterSetsWinOverTheExtradata() throws {
        var packager = try AnnexBPackager(extradata: try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration))
        // The same SPS with another level (a new encoder setting arriving in-band).
        var newSPS = Array(Self.sps.body)
        newSPS[3] = 0x28
        let firstGot = packager.accessUnit(packet: Self.lengthPrefixed([newSPS, Array(Self.pps.body), Self.idr]))
        let first = try #require(firstGot)
        #expect(first.nalTypes == [.accessUnitDelimiter, .sps, .pps, .idrSlice], "carries its own: nothing added")
        _ = packager.accessUnit(packet: Self.lengthPrefixed([Self.slice]))
        let laterGot = packager.accessUnit(packet: Self.lengthPrefixed([Self.idr]))
        let later = try #require(laterGot)
        #expect(later.nalTypes == [.accessUnitDelimiter, .sps, .pps, .idrSlice])
        #expect(Array(later.nalUnits[1].body) == newSPS)
    }

    @Test func annexBPacketsKeepTheirBytesAndTheirAUD() throws {
        var packager = try AnnexBPackager(extradata: Self.annexB([Array(Self.sps.body), Array(Self.pps.body)]))
        #expect(packager.lengthSize == nil)
        #expect(packager.extradataSets.map(\.type) == [.sps, .pps])
        // An AUD already first, 3-byte start codes: kept as they are, SPS/PPS added after the AUD.
        let packet: [UInt8] = [0, 0, 1, 0x09, 0x10, 0, 0, 1] + Self.idr
        let unitGot = packager.accessUnit(packet: packet)
        let unit = try #require(unitGot)
        #expect(unit.nalTypes == [.accessUnitDelimiter, .sps, .pps, .idrSlice])
        #expect(Array(unit.nalUnits[0].wire) == [0, 0, 1, 0x09, 0x10])
        #expect(Array(unit.nalUnits[3].wire) == [0, 0, 1] + Self.idr)
        // Without an AUD: one in front, the packet's bytes after it.
        let pGot = packager.accessUnit(packet: Self.annexB([Self.slice]))
        let p = try #require(pGot)
        #expect(p.nalTypes == [.accessUnitDelimiter, .slice])
        #expect(Self.wire(p) == Self.annexB([[0x09, 0xf0], Self.slice]))
    }

    @Test func aLengthPastTheEndKeepsWhatCameBeforeAndIsCounted() throws {
        var packager = try AnnexBPackager(extradata: try #require(H264Codec().streamParameters([Self.sps, Self.pps]).decoderConfiguration))
        var packet = Self.lengthPrefixed([Self.slice])
        packet += [0, 0, 0, 99, 0x41, 0x9a]
        let unitGot = packager.accessUnit(packet: packet)
        let unit = try #require(unitGot)
        #expect(unit.nalTypes == [.accessUnitDelimiter, .slice])
        #expect(packager.malformedPackets == 1)
        #expect(packager.accessUnit(packet: []) == nil)
        #expect(packager.malformedPackets == 2)
    }

    /// RTSP's depacketizer may hand out the parameter sets as a packet of their own, with the
    /// IDR's time: they join the next packet's access unit instead of making one without a picture.
    @Test func aPacketWithoutAPictureJoinsTheNextOne() throws {
        var packager = try AnnexBPackager(extradata: [])
        #expect(packager.accessUnit(packet: Self.annexB([Array(Self.sps.body), Array(Self.pps.body)])) == nil)
        let unitGot = packager.accessUnit(packet: Self.annexB([Self.idr]))
        let unit = try #require(unitGot)
        #expect(unit.nalTypes == [.accessUnitDelimiter, .sps, .pps, .idrSlice])
        #expect(unit.isEntryPoint)
        #expect(packager.malformedPackets == 0)
    }
}

/// AAC as containers read it: ADTS frames (MPEG-TS) to raw frames, and the
/// AudioSpecificConfig made from the track's parameters when the container gave none.
@Suite struct AACFramingTests {
    /// An ADTS header without CRC for a frame of `payload` bytes: AAC-LC, 48 kHz, stereo.
    static func adts(_ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 7
        return [0xFF, 0xF1, 0x4C, 0x80 | UInt8(length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5) | 0x1F, 0xFC] + payload
    }

    @Test func adtsHeadersComeOffEveryFrameOfAPacket() {
        let packet = Self.adts([1, 2, 3]) + Self.adts([4, 5])
        let frames = packet.withUnsafeBufferPointer { Demuxer.adtsFrames($0) }
        #expect(frames == [[1, 2, 3], [4, 5]])
        // A raw frame (MP4, Matroska, FLV) stays as it is.
        let raw: [UInt8] = [0x21, 0x10, 0x04]
        #expect(raw.withUnsafeBufferPointer { Demuxer.adtsFrames($0) } == [raw])
    }

    @Test func audioSpecificConfigOfAACLC() {
        // Object type 2, 48 kHz (index 3), 2 channels: 0x11 0x90, what FFmpeg's AAC encoder writes.
        #expect(Demuxer.audioSpecificConfig(objectType: 2, sampleRate: 48_000, channels: 2) == [0x11, 0x90])
        #expect(Demuxer.audioSpecificConfig(objectType: 2, sampleRate: 44_100, channels: 1) == [0x12, 0x08])
        #expect(Demuxer.audioSpecificConfig(objectType: 2, sampleRate: 12_345, channels: 2) == nil)
    }
}
