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

    func testLeavesOtherPacketsAlone() throws {
        let sdes: [UInt8] = [0x81, 202, 0, 1, 0, 0, 0, 1]
        let packet = try XCTUnwrap(RTCP.packets(in: sdes[...])?.first)
        XCTAssertNil(RTCPFeedback(packet))
    }
}
