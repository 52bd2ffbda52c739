import RTP
import XCTest

final class RTCPFeedbackTests: XCTestCase {
    func testReadsPLIAndNACKAsWritten() throws {
        let pli = RTCPFeedback.pictureLossPacket(sender: 1, media: 0xABCD)
        let nack = RTCPFeedback.nackPacket(sender: 1, media: 0xABCD, lost: [100, 65535])
        let packets = try XCTUnwrap(RTCP.packets(in: (pli + nack)[...]))
        XCTAssertEqual(packets.compactMap(RTCPFeedback.init), [.pictureLoss(mediaSSRC: 0xABCD), .nack(mediaSSRC: 0xABCD, lost: [100, 65535])])
    }

    /// A NACK's bitmask: bit i names PID + i + 1 (RFC 4585 §6.2.1), across the wrap: 0x8005
    /// after 65534 names 65535, 1 and 14.
    func testNACKBitmaskNamesTheFollowingPackets() throws {
        let bytes: [UInt8] = [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFE, 0x80, 0x05]
        let packet = try XCTUnwrap(RTCP.packets(in: bytes[...])?.first)
        XCTAssertEqual(RTCPFeedback(packet), .nack(mediaSSRC: 2, lost: [65534, 65535, 1, 14]))
    }

    func testReadsFIRREMBAndReceiverReports() throws {
        // FIR: FCI of SSRC 7, sequence 3.
        let fir: [UInt8] = [0x84, 206, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 3, 0, 0, 0]
        // REMB: 1 SSRC, exponent 3, mantissa 0x3FFFF: 2,097,144 bit/s.
        let remb: [UInt8] = [0x8F, 206, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0] + Array("REMB".utf8) + [1, 0x0F, 0xFF, 0xFF, 0, 0, 0, 9]
        // RR with one block: fraction lost 64, cumulative lost 5, jitter 90.
        let rr: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0, 1, 0, 0, 0, 9, 64, 0, 0, 5, 0, 0, 1, 0, 0, 0, 0, 90, 0, 0, 0, 0, 0, 0, 0, 0]
        let packets = try XCTUnwrap(RTCP.packets(in: (fir + remb + rr)[...]))
        XCTAssertEqual(packets.compactMap(RTCPFeedback.init), [
            .fullIntraRequest(mediaSSRC: 7, sequence: 3),
            .estimatedBitrate(bitsPerSecond: 0x3FFFF << 3, ssrcs: [9]),
            .receiverReport(fractionLost: 64, cumulativeLost: 5, jitter: 90),
        ])
    }

    /// The RR's last-SR time stamp and delay since, which the round trip is read from.
    func testReadsTheReceiverReportsTimeStamps() throws {
        let rr: [UInt8] = [0x81, 201, 0, 7, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
                           0x12, 0x34, 0x56, 0x78, 0, 1, 0x80, 0]
        let packet = try XCTUnwrap(RTCP.packets(in: rr[...])?.first)
        XCTAssertEqual(RTCPFeedback(packet), .receiverReport(fractionLost: 0, cumulativeLost: 0, jitter: 0, lastSR: 0x1234_5678, delaySinceLastSR: 0x1_8000))
    }

    /// Chromium's XR when answered `a=rtcp-xr:rcvr-rtt=all`: its SSRC (1) and one receiver
    /// reference time block (BT 4, length 2), as it sends it; a block of another type before
    /// it is skipped; an XR without one is nothing here.
    func testReadsReceiverReferenceTimes() throws {
        let chromium: [UInt8] = [0x80, 207, 0, 4, 0, 0, 0, 1, 4, 0, 0, 2, 0xEE, 0xBA, 0x7B, 0x3D, 0x02, 0xEB, 0x80, 0xEC]
        var packet = try XCTUnwrap(RTCP.packets(in: chromium[...])?.first)
        XCTAssertEqual(RTCPFeedback(packet), .receiverReferenceTime(ssrc: 1, ntpTime: 0xEEBA_7B3D_02EB_80EC))
        XCTAssertEqual(RTCP.compact(0xEEBA_7B3D_02EB_80EC), 0x7B3D_02EB)
        // A DLRR block (BT 5, one sub-block) first, then the RRTR.
        let both: [UInt8] = [0x80, 207, 0, 8, 0, 0, 0, 2, 5, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2,
                             4, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 8]
        packet = try XCTUnwrap(RTCP.packets(in: both[...])?.first)
        XCTAssertEqual(RTCPFeedback(packet), .receiverReferenceTime(ssrc: 2, ntpTime: 7 << 32 | 8))
        let dlrrOnly: [UInt8] = [0x80, 207, 0, 5, 0, 0, 0, 2, 5, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2]
        packet = try XCTUnwrap(RTCP.packets(in: dlrrOnly[...])?.first)
        XCTAssertNil(RTCPFeedback(packet))
        // Cut short: the block says 2 words and has 1.
        let short: [UInt8] = [0x80, 207, 0, 3, 0, 0, 0, 1, 4, 0, 0, 2, 0, 0, 0, 7]
        packet = try XCTUnwrap(RTCP.packets(in: short[...])?.first)
        XCTAssertNil(RTCPFeedback(packet))
    }

    /// The DLRR answer (RFC 3611 §4.5): XR from the sender's SSRC, one block of type 5 with
    /// a sub-block a receiver (SSRC, LRR, delay); the length fields count its words.
    func testWritesDLRRBlocks() throws {
        let bytes = RTCP.delaySinceLastReceiverReport(sender: 0xAABB_CCDD, [(1, 0x7B3D_02EB, 0x8000), (2, 5, 6)])
        XCTAssertEqual(bytes, [0x80, 207, 0, 8, 0xAA, 0xBB, 0xCC, 0xDD, 5, 0, 0, 6,
                               0, 0, 0, 1, 0x7B, 0x3D, 0x02, 0xEB, 0, 0, 0x80, 0,
                               0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 6])
        let packets = try XCTUnwrap(RTCP.packets(in: bytes[...]))
        XCTAssertEqual(packets.count, 1)
        XCTAssertEqual(packets[0].type, 207)
        XCTAssertEqual(packets[0].body.count, 32)
    }

    /// The round trip as a receiver computes it from a DLRR, and a sender from an RR: now
    /// minus the echoed time stamp minus the delay at the other end (compact NTP: 1/65536 s).
    func testRoundTripFromEchoedTimeStamps() {
        // Echoed at 100 s, held 0.5 s, now 100.562 s: 62 ms.
        let echoed: UInt32 = 100 << 16
        let now = echoed + 0x8000 + UInt32(0.062 * 65536)
        let rtt = RTCP.roundTrip(now: now, echoed: echoed, delay: 0x8000)
        XCTAssertEqual(Double(rtt ?? 0) / 1e6, 62, accuracy: 0.02)
        // Across the wrap of the 32-bit compact time.
        XCTAssertEqual(RTCP.roundTrip(now: 0x0000_1000, echoed: 0xFFFF_F000, delay: 0), UInt64(0x2000) * 1_000_000_000 >> 16)
        XCTAssertNil(RTCP.roundTrip(now: now, echoed: 0, delay: 0), "no sender report had yet")
        XCTAssertNil(RTCP.roundTrip(now: echoed, echoed: echoed, delay: 0x1_0000), "later than now: a clock stepped")
    }

    func testLeavesOtherPacketsAlone() throws {
        let sdes: [UInt8] = [0x81, 202, 0, 1, 0, 0, 0, 1]
        let packet = try XCTUnwrap(RTCP.packets(in: sdes[...])?.first)
        XCTAssertNil(RTCPFeedback(packet))
    }
}
