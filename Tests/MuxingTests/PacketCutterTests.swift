import H264
import Media
import Testing
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
}
