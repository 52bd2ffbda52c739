import Media
import TestSupport
import Testing
@testable import H264
@testable import Muxing

/// MPEG-TS's PES payloads, read without libavcodec's parser, cut into access units: NAL
/// units across packets, access units where the next begins, each packet's time to the first
/// access unit that begins in it.
@Suite struct PacketCutterTests {
    static let aud: [UInt8] = [0x09, 0xf0]
    static let sps = Array(AnnexBPackagerTests.sps.body)
    static let pps = Array(AnnexBPackagerTests.pps.body)
    static let idr = AnnexBPackagerTests.idr
    /// A P slice with first_mb_in_slice 0, and one with first_mb_in_slice 1 (ue(v) `010`).
    static let slice = AnnexBPackagerTests.slice
    static let secondSlice: [UInt8] = [0x41, 0x4d, 0x21, 0x6c, 0x42, 0x33]

    static func annexB(_ bodies: [[UInt8]]) -> [UInt8] { AnnexBPackagerTests.annexB(bodies) }
    static func bodies(_ unit: PacketCutter.Unit) -> [[UInt8]] { unit.nals.map { Array($0.body) } }
    static func time(_ ticks: Int64) -> MediaTime { MediaTime(ticks: ticks) }

    @Test func anAccessUnitGoesOutWhenTheNextOneBegins() {
        var cutter = PacketCutter()
        // The last NAL unit of a packet may go on in the next one: nothing yet.
        #expect(cutter.push(Self.annexB([Self.aud, Self.sps, Self.pps, Self.idr]), time: Self.time(3000)).isEmpty)
        let units = cutter.push(Self.annexB([Self.aud, Self.slice]), time: Self.time(6000))
        #expect(units.count == 1)
        #expect(units.first.map(Self.bodies) == [Self.aud, Self.sps, Self.pps, Self.idr])
        #expect(units.first?.time == Self.time(3000))
        #expect(units.first?.bytes == 4 * 4 + Self.aud.count + Self.sps.count + Self.pps.count + Self.idr.count)
        let last = cutter.finish()
        #expect(last.map(Self.bodies) == [[Self.aud, Self.slice]])
        #expect(last.first?.time == Self.time(6000))
        #expect(cutter.malformedPackets == 0)
    }

    @Test func aPacketThatBeginsWithASliceEndsThePictureBeforeIt() {
        // No AUD: the slice's first_mb_in_slice 0, seen in the NAL unit still in progress,
        // says the picture in hand is whole, without waiting for another packet.
        var cutter = PacketCutter()
        #expect(cutter.push(Self.annexB([Self.sps, Self.pps, Self.idr]), time: Self.time(0)).isEmpty)
        let units = cutter.push(Self.annexB([Self.slice]), time: Self.time(3000))
        #expect(units.map(Self.bodies) == [[Self.sps, Self.pps, Self.idr]])
        #expect(cutter.finish().map(Self.bodies) == [[Self.slice]])
    }

    @Test func severalAccessUnitsInOnePacketAndOneTimeForTheFirst() {
        var cutter = PacketCutter()
        let packet = Self.annexB([Self.aud, Self.idr, Self.aud, Self.slice, Self.aud, Self.slice])
        let units = cutter.push(packet, time: Self.time(9000)) + cutter.finish()
        #expect(units.map(Self.bodies) == [[Self.aud, Self.idr], [Self.aud, Self.slice], [Self.aud, Self.slice]])
        // H.222.0: a PES packet's time is the first access unit's that begins in it.
        #expect(units.map(\.time) == [Self.time(9000), nil, nil])
        #expect(units.reduce(0) { $0 + $1.bytes } == packet.count)
    }

    @Test func aNALUnitAndAPictureSpanPackets() {
        var cutter = PacketCutter()
        let whole = Self.annexB([Self.aud, Self.slice, Self.secondSlice])
        // Cut inside the first slice: the second packet has no time (a PES without one).
        #expect(cutter.push(Array(whole[..<12]), time: Self.time(3000)).isEmpty)
        #expect(cutter.push(Array(whole[12...]), time: nil).isEmpty)
        let units = cutter.push(Self.annexB([Self.aud, Self.slice]), time: Self.time(6000)) + cutter.finish()
        // The slice with first_mb_in_slice 1 continues the picture.
        #expect(units.map(Self.bodies) == [[Self.aud, Self.slice, Self.secondSlice], [Self.aud, Self.slice]])
        #expect(units.map(\.time) == [Self.time(3000), Self.time(6000)])
    }

    @Test func bytesBeforeTheFirstStartCodeAreCountedAndAccountedFor() {
        var cutter = PacketCutter()
        let packet: [UInt8] = [0x47, 0x11, 0x22] + Self.annexB([Self.aud, Self.idr])
        let units = cutter.push(packet, time: Self.time(0)) + cutter.finish()
        #expect(units.map(Self.bodies) == [[Self.aud, Self.idr]])
        #expect(units.first?.bytes == packet.count)
        #expect(cutter.malformedPackets == 1)
    }

    @Test func cutUnitsBecomeTheSameAccessUnitsAsWholePackets() throws {
        // Through the packager, as DemuxReader hands them on: AUD first, parameter sets kept.
        var packager = try AnnexBPackager(extradata: [])
        var cutter = PacketCutter()
        var units = cutter.push(Self.annexB([Self.sps, Self.pps, Self.idr]), time: Self.time(0))
        units += cutter.push(Self.annexB([Self.slice]), time: Self.time(3000)) + cutter.finish()
        let made = units.compactMap { packager.assemble($0.nals) }
        #expect(made.map(\.nalTypes) == [[.accessUnitDelimiter, .sps, .pps, .idrSlice], [.accessUnitDelimiter, .slice]])
        #expect(made.first?.isIDR == true && made.first?.resolution != nil)
    }
    /// A P slice of the picture with `frameNum` for `AnnexBPackagerTests.sps`/`pps`, starting at
    /// macroblock `firstMb`: the fields 7.4.1.2.4 compares, as that SPS and PPS lay them out.
    static func pSlice(firstMb: Int, frameNum: UInt64) throws -> [UInt8] {
        let sps = try SequenceParameterSet(AnnexBPackagerTests.sps)
        let pps = try PictureParameterSet(AnnexBPackagerTests.pps)
        var w = BitWriter()
        w.ue(firstMb)
        w.ue(5)  // slice_type P
        w.ue(pps.id)
        w.bits(frameNum, sps.log2MaxFrameNum)
        if !sps.frameMbsOnly { w.bit(false) }  // field_pic_flag
        if sps.picOrderCntType == 0 {
            w.bits(2 * frameNum, sps.log2MaxPicOrderCntLsb)
            if pps.bottomFieldPicOrderInFramePresent { w.se(0) }
        }
        w.bits(0x5a, 8)  // the rest: not read for the cut
        return [NALHeader(refIdc: 2, type: .slice).byte] + RBSP.escape(w.rbsp())
    }

    @Test func wherePicturesBeginIsTheAssemblersRule() throws {
        // Arbitrary slice order: the picture's second slice starts at a lower macroblock than
        // its first. The same picture by 7.4.1.2.4 (frame_num, PPS, picture order count):
        // one access unit, as every other Annex-B input has it; a first_mb_in_slice rule
        // would cut it in two.
        let first = try Self.pSlice(firstMb: 10, frameNum: 1), second = try Self.pSlice(firstMb: 0, frameNum: 1)
        let next = try Self.pSlice(firstMb: 0, frameNum: 2)
        var cutter = PacketCutter()
        var units = cutter.push(Self.annexB([Self.aud, Self.sps, Self.pps, Self.idr]), time: Self.time(0))
        units += cutter.push(Self.annexB([Self.aud, first, second]), time: Self.time(3000))
        units += cutter.push(Self.annexB([next]), time: Self.time(6000)) + cutter.finish()
        #expect(units.map(Self.bodies) == [[Self.aud, Self.sps, Self.pps, Self.idr], [Self.aud, first, second], [next]])
    }

    @Test(arguments: ConformanceStream.all)
    func cutsConformanceStreamsAsTheParserDoes(stream: ConformanceStream) throws {
        // The stream as PES payloads of 1316 bytes (7 TS packets' worth), of 97, and whole:
        // the access units of nalcast's Annex-B parser, bytes all accounted for.
        let bytes = try stream.load()
        var parser = AnnexBParser()
        let expected = (parser.push(bytes) + parser.finish()).map { $0.nalUnits.map { Array($0.body) } }
        #expect(expected.count == stream.accessUnits)
        for size in [1316, 97, bytes.count] {
            var cutter = PacketCutter()
            var units: [PacketCutter.Unit] = []
            for at in stride(from: 0, to: bytes.count, by: size) {
                units += cutter.push(Array(bytes[at..<min(at + size, bytes.count)]), time: Self.time(Int64(at)))
            }
            units += cutter.finish()
            #expect(units.map(Self.bodies) == expected, "packets of \(size) bytes")
            #expect(units.reduce(0) { $0 + $1.bytes } == bytes.count, "packets of \(size) bytes")
        }
    }
}
