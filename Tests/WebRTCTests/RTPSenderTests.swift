import Media
import RTP
import XCTest
@testable import WebRTC

final class RTPSenderTests: XCTestCase {
    static func nal(_ bytes: [UInt8]) -> NALUnit { NALUnit(escapedBody: bytes) }

    /// What a receiver decodes goes, in order, with the marker on the last packet: the AUD and
    /// SEI are left out; the first packet carries abs-capture-time; the RTP time is the
    /// capture time in 90 kHz ticks, never going back.
    func testPacketsCarryWhatDecodesOnTheCaptureClock() throws {
        var sender = RTPSender(ssrc: 77, payloadType: 102, captureTimeExtension: 11, firstSequence: 65535)
        let wall: UInt64 = 1_796_157_371_285_000_000
        let unit = [Self.nal([0x09, 0xF0]), Self.nal([0x06, 5, 1, 0x80]), Self.nal([0x67, 0x64, 0, 0x1F]), Self.nal([0x68, 0xEE]),
                    Self.nal([0x65] + [UInt8](repeating: 0xAA, count: 3000))]
        let packets = sender.packets(unit, wallNs: wall)
        XCTAssertEqual(packets.map(\.sequence), [65535, 0, 1, 2])
        let parsed = try packets.map { try RTPPacket(parsing: $0.bytes[...]) }
        XCTAssertEqual(parsed.map(\.marker), [false, false, false, true])
        XCTAssertTrue(parsed.allSatisfy { $0.ssrc == 77 && $0.payloadType == 102 })
        // The STAP-A of SPS and PPS first: no AUD (9), no SEI (6).
        XCTAssertEqual(parsed[0].payload.first.map { $0 & 0x1F }, 24)
        XCTAssertEqual(Array(parsed[0].payload.dropFirst().prefix(3)), [0, 4, 0x67])
        XCTAssertEqual(parsed[0].extensionProfile, 0xBEDE)
        XCTAssertEqual(parsed[0].extensionData.first, 11 << 4 | 7)
        let ntp = parsed[0].extensionData.dropFirst().prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        XCTAssertEqual(RTCP.SenderReport(ssrc: 0, ntpTime: ntp, rtpTimestamp: 0, packetCount: 0, octetCount: 0).unixSeconds, 1_796_157_371.285, accuracy: 0.001)
        XCTAssertNil(parsed[1].extensionProfile)
        XCTAssertEqual(parsed[0].timestamp, UInt32(truncatingIfNeeded: wall / 100_000 * 9))
        // The next picture captured 40 ms later: 3,600 ticks on.
        let next = sender.packets([Self.nal([0x41, 0x9A])], wallNs: wall + 40_000_000)
        XCTAssertEqual(try RTPPacket(parsing: next[0].bytes[...]).timestamp, parsed[0].timestamp &+ 3600)
        // An older capture (a relay's GOP sent again) never goes back.
        let again = sender.packets([Self.nal([0x65, 1])], wallNs: wall)
        XCTAssertEqual(try RTPPacket(parsing: again[0].bytes[...]).timestamp, parsed[0].timestamp &+ 3601)
    }

    /// abs-send-time on every packet (6.18 fixed-point seconds), playout-delay 0/0 with
    /// abs-capture-time on the first, in one-byte elements padded to a word.
    func testHeaderExtensionsAsNegotiated() throws {
        var sender = RTPSender(ssrc: 1, payloadType: 96, captureTimeExtension: nil, sendTimeExtension: 2, playoutDelayExtension: 6, firstSequence: 0)
        let packets = sender.packets([Self.nal([0x65] + [UInt8](repeating: 1, count: 2000))], wallNs: 0, sendNs: 1_500_000_000)
        let parsed = try packets.map { try RTPPacket(parsing: $0.bytes[...]) }
        XCTAssertEqual(parsed.count, 2)
        // 1.5 s = 0x18000 in 6.18.
        XCTAssertEqual(Array(parsed[0].extensionData), [0x22, 0x06, 0x00, 0x00, 0x62, 0, 0, 0])
        XCTAssertEqual(Array(parsed[1].extensionData), [0x22, 0x06, 0x00, 0x00])
    }

    /// transport-wide-cc (TWCC): every packet numbered, from 1, on through the access units
    /// (the media sequence numbers start at random, these do not), two bytes after the id.
    func testTransportWideSequenceNumbersOnEveryPacket() throws {
        var sender = RTPSender(ssrc: 1, payloadType: 96, captureTimeExtension: nil, transportSequenceExtension: 3, firstSequence: 500)
        XCTAssertEqual(sender.transportSequence, 1)
        let first = sender.packets([Self.nal([0x65] + [UInt8](repeating: 1, count: 2000))], wallNs: 0)
        let second = sender.packets([Self.nal([0x41, 2])], wallNs: 33_000_000)
        let parsed = try (first + second).map { try RTPPacket(parsing: $0.bytes[...]) }
        XCTAssertEqual(parsed.map { Array($0.extensionData) }, [[0x31, 0, 1, 0], [0x31, 0, 2, 0], [0x31, 0, 3, 0]])
        XCTAssertEqual(parsed.map(\.sequenceNumber), [500, 501, 502])
        XCTAssertEqual(sender.transportSequence, 4)
    }

    /// One unit's payloads, made once, serve two viewers' senders: the same payloads under
    /// each one's own SSRC, sequence numbers and header extensions.
    func testSharedPayloadsUnderEachSendersHeaders() throws {
        let unit = RTPPayloads([Self.nal([0x09, 0xF0]), Self.nal([0x65] + [UInt8](repeating: 7, count: 2500))])
        XCTAssertEqual(unit.payloads.count, 3, "the AUD left out, the IDR in three FU-A fragments")
        var a = RTPSender(ssrc: 11, payloadType: 102, captureTimeExtension: 3, firstSequence: 100)
        var b = RTPSender(ssrc: 22, payloadType: 96, captureTimeExtension: nil, sendTimeExtension: 2, firstSequence: 9)
        let sentA = a.packets(payloads: unit.payloads, wallNs: 1_000_000_000)
        let fromA = try sentA.map { try RTPPacket(parsing: $0.bytes[...]) }
        let fromB = try b.packets(payloads: unit.payloads, wallNs: 1_000_000_000).map { try RTPPacket(parsing: $0.bytes[...]) }
        XCTAssertEqual(fromA.map { Array($0.payload) }, unit.payloads.map(\.bytes))
        XCTAssertEqual(fromB.map { Array($0.payload) }, unit.payloads.map(\.bytes))
        XCTAssertEqual(fromA.map(\.ssrc), [11, 11, 11])
        XCTAssertEqual(fromB.map(\.sequenceNumber), [9, 10, 11])
        XCTAssertEqual(fromA.map { $0.extensionData.count }, [12, 0, 0], "abs-capture-time on the first only")
        XCTAssertEqual(fromB.map { $0.extensionData.count }, [4, 4, 4], "abs-send-time on every packet")
        var alone = RTPSender(ssrc: 11, payloadType: 102, captureTimeExtension: 3, firstSequence: 100)
        XCTAssertEqual(alone.packets([Self.nal([0x09, 0xF0]), Self.nal([0x65] + [UInt8](repeating: 7, count: 2500))], wallNs: 1_000_000_000).map(\.bytes),
                       sentA.map(\.bytes),
                       "the same bytes as a unit packetized by its own sender")
    }

    /// A sender report maps now onto the RTP line of the last access unit.
    func testSenderReportMapsWallClockToRTPTime() throws {
        var sender = RTPSender(ssrc: 5, payloadType: 96, captureTimeExtension: nil, firstSequence: 1)
        XCTAssertNil(sender.senderReport(nowNs: 1))
        let wall: UInt64 = 1_700_000_000_000_000_000
        let packets = sender.packets([Self.nal([0x65, 1, 2, 3])], wallNs: wall)
        let first = try RTPPacket(parsing: packets[0].bytes[...]).timestamp
        let report = try XCTUnwrap(sender.senderReport(nowNs: wall + 500_000_000))
        XCTAssertEqual(report.rtpTimestamp, first &+ 45000)
        XCTAssertEqual(report.unixSeconds, 1_700_000_000.5, accuracy: 0.001)
        XCTAssertEqual(report.packetCount, 1)
        XCTAssertEqual(report.octetCount, 4)
    }
}

final class PacketHistoryTests: XCTestCase {
    /// A NACK finds the last `size` packets, across the 16-bit wrap, and nothing older or never sent.
    func testHistoryKeepsTheLastPacketsAcrossTheWrap() {
        var history = PacketHistory<[UInt8]>(size: 512)
        for i in 0..<1000 { history.remember(UInt16(truncatingIfNeeded: 65000 + i), [UInt8(truncatingIfNeeded: i)]) }
        // Sent: 65000 ... 65535, 0 ... 463; the last 512 are 65488 ... 463.
        XCTAssertEqual(history[463], [UInt8(truncatingIfNeeded: 999)])
        XCTAssertEqual(history[0], [UInt8(truncatingIfNeeded: 536)])
        XCTAssertEqual(history[65488], [UInt8(truncatingIfNeeded: 488)])
        XCTAssertNil(history[65487], "older than the last 512")
        XCTAssertNil(history[464], "never sent")
    }
}
