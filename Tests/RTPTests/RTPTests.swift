import Media
import RTP
import XCTest

final class RTPPacketTests: XCTestCase {
    func testParsesHeaderCSRCsExtensionAndPadding() throws {
        // V=2, P=1, X=1, CC=1; M=1, PT=96; seq 0x1234; ts 0xDEADBEEF; ssrc 0x01020304
        let bytes: [UInt8] = [0xB1, 0xE0, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3, 4,
                              9, 9, 9, 9,                       // CSRC
                              0xBE, 0xDE, 0, 1, 0x10, 0x55, 0, 0,  // one-byte extension, one word
                              0x65, 0x88, 0x84,                  // payload
                              0, 0, 3]                            // padding of 3
        let packet = try RTPPacket(parsing: bytes[...])
        XCTAssertTrue(packet.marker)
        XCTAssertEqual(packet.payloadType, 96)
        XCTAssertEqual(packet.sequenceNumber, 0x1234)
        XCTAssertEqual(packet.timestamp, 0xDEAD_BEEF)
        XCTAssertEqual(packet.ssrc, 0x0102_0304)
        XCTAssertEqual(packet.csrcs, [0x0909_0909])
        XCTAssertEqual(packet.extensionProfile, 0xBEDE)
        XCTAssertEqual(Array(packet.extensionData), [0x10, 0x55, 0, 0])
        XCTAssertEqual(Array(packet.payload), [0x65, 0x88, 0x84])
        // Written back without the padding, then read again: the same packet.
        XCTAssertEqual(try RTPPacket(parsing: packet.serialized()[...]), packet)
    }

    func testRefusesWhatIsNotRTP() {
        XCTAssertThrowsError(try RTPPacket(parsing: [0x80, 96, 0, 1][...]))
        XCTAssertThrowsError(try RTPPacket(parsing: ([0x40] + [UInt8](repeating: 0, count: 11))[...]))
        XCTAssertThrowsError(try RTPPacket(parsing: ([0x90] + [UInt8](repeating: 0, count: 11) + [0xBE, 0xDE, 0, 9])[...]))
    }

    func testSequenceComparisonWraps() {
        XCTAssertTrue(rtpSequence(1, isAfter: 65535))
        XCTAssertFalse(rtpSequence(65535, isAfter: 1))
        XCTAssertFalse(rtpSequence(7, isAfter: 7))
    }

    func testSenderReportRoundTrip() throws {
        let report = RTCP.SenderReport(ssrc: 42, ntpTime: RTCP.SenderReport.ntpTime(unixSeconds: 1_700_000_000.25),
                                       rtpTimestamp: 90_000, packetCount: 10, octetCount: 12_000)
        let receiverReport: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 7]
        let packets = try XCTUnwrap(RTCP.packets(in: (report.serialized() + receiverReport)[...]))
        XCTAssertEqual(packets.map(\.type), [200, 201])
        let parsed = try XCTUnwrap(RTCP.SenderReport(packets[0]))
        XCTAssertEqual(parsed, report)
        XCTAssertEqual(parsed.unixSeconds, 1_700_000_000.25, accuracy: 1e-6)
        XCTAssertNil(RTCP.packets(in: (report.serialized() + [0x80, 201, 0, 5])[...]), "a length past the end drops the compound")
    }
}

final class H264PayloadTests: XCTestCase {
    /// An access unit like an encoder's IDR: SPS, PPS and SEI (small) and a slice bigger
    /// than three packets.
    private let accessUnit: [[UInt8]] = [
        [0x67, 0x42, 0xC0, 0x1F, 0xDA],
        [0x68, 0xCE, 0x3C, 0x80],
        [0x06, 0x05, 0x01, 0x80],
        [0x65] + (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) },
    ]

    private func packets(_ payloads: [H264Packetizer.Payload], timestamp: UInt32, firstSequence: UInt16) -> [RTPPacket] {
        payloads.enumerated().map { i, p in
            RTPPacket(marker: p.marker, payloadType: 102, sequenceNumber: firstSequence &+ UInt16(i),
                      timestamp: timestamp, ssrc: 1, payload: p.bytes[...])
        }
    }

    func testPacketizesIntoSTAPAAndFUAAndBackAgain() throws {
        let payloads = H264Packetizer(maxPayloadSize: 1200).payloads(for: accessUnit.map { $0[...] })
        XCTAssertEqual(payloads.map { $0.bytes[0] & 0x1F }, [24, 28, 28, 28], "SPS, PPS and SEI in one STAP-A, the slice in FU-As")
        XCTAssertEqual(payloads.map(\.marker), [false, false, false, true])
        XCTAssertTrue(payloads.allSatisfy { $0.bytes.count <= 1200 })
        XCTAssertEqual(payloads[1].bytes[1] & 0xC0, 0x80, "the first fragment has the start bit")
        XCTAssertEqual(payloads[3].bytes[1] & 0xC0, 0x40, "the last fragment has the end bit")

        var depacketizer = H264Depacketizer()
        var units: [H264Depacketizer.Unit] = []
        for packet in packets(payloads, timestamp: 3000, firstSequence: 65534) { units += depacketizer.take(packet) }
        XCTAssertEqual(units.count, 1, "the marker bit ends the access unit at once")
        XCTAssertEqual(units[0].nalUnits.map { Array($0.body) }, accessUnit)
        XCTAssertEqual(units[0].rtpTimestamp, 3000)
        XCTAssertFalse(units[0].damaged)
        XCTAssertEqual(depacketizer.lostPackets, 0)
    }

    func testALostFragmentLosesItsNALUnitOnlyAndIsCounted() {
        let payloads = H264Packetizer(maxPayloadSize: 1200).payloads(for: accessUnit.map { $0[...] })
        var first = packets(payloads, timestamp: 3000, firstSequence: 10)
        first.remove(at: 2)  // a middle fragment of the slice
        let next = packets(H264Packetizer().payloads(for: [[0x41, 0x9A, 0x02][...]]), timestamp: 6000, firstSequence: 14)
        var depacketizer = H264Depacketizer()
        var units: [H264Depacketizer.Unit] = []
        for packet in first + next { units += depacketizer.take(packet) }
        XCTAssertEqual(units.count, 2)
        XCTAssertEqual(units[0].nalUnits.map { Array($0.body) }, Array(accessUnit.prefix(3)), "the parameter sets and SEI survive")
        XCTAssertTrue(units[0].damaged)
        XCTAssertEqual(units[1].nalUnits.map { Array($0.body) }, [[0x41, 0x9A, 0x02]])
        XCTAssertFalse(units[1].damaged)
        XCTAssertEqual(depacketizer.lostPackets, 1)
        XCTAssertEqual(depacketizer.droppedFragmentedUnits, 1)
    }

    func testWithoutAMarkerAChangeOfTimestampEndsTheUnit() {
        var depacketizer = H264Depacketizer()
        let a = RTPPacket(marker: false, payloadType: 96, sequenceNumber: 1, timestamp: 100, ssrc: 1, payload: [0x65, 1][...])
        let b = RTPPacket(marker: false, payloadType: 96, sequenceNumber: 2, timestamp: 200, ssrc: 1, payload: [0x41, 2][...])
        XCTAssertTrue(depacketizer.take(a).isEmpty)
        XCTAssertEqual(depacketizer.take(b).map(\.rtpTimestamp), [100])
        XCTAssertEqual(depacketizer.flush()?.rtpTimestamp, 200)
        XCTAssertTrue(depacketizer.take(a).isEmpty, "a packet older than the last one is ignored")
    }

    func testMalformedPayloadsAreCounted() {
        var depacketizer = H264Depacketizer()
        for (i, payload) in [[UInt8](), [25, 0], [24, 0, 9, 0x67], [28, 0x85]].enumerated() {
            _ = depacketizer.take(RTPPacket(marker: false, payloadType: 96, sequenceNumber: UInt16(i), timestamp: 1, ssrc: 1, payload: payload[...]))
        }
        XCTAssertEqual(depacketizer.malformedPackets, 4)
        XCTAssertNil(depacketizer.flush())
    }
}
