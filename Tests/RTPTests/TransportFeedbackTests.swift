import RTP
import XCTest

/// Transport-wide feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) read
/// from bytes written by hand from the draft, and from Chromium's own.
final class TransportFeedbackTests: XCTestCase {
    static func feedback(_ bytes: [UInt8]) throws -> TransportFeedback? {
        let packet = try XCTUnwrap(RTCP.packets(in: bytes[...])?.first)
        guard case .transportWide(let feedback) = RTCPFeedback(packet) else { XCTFail("not transport-wide feedback"); return nil }
        return feedback
    }

    /// A two-bit status vector (T=1, S=1): received (small delta), lost, received (a negative,
    /// large delta), received, received; deltas of 250 µs from the reference time (64 ms).
    func testReadsATwoBitStatusVectorWithItsDeltas() throws {
        let bytes: [UInt8] = [0x8F, 205, 0, 6, 0, 0, 0, 1, 0, 0, 0, 9,
                              0, 100, 0, 5, 0, 0, 1, 7,   // base 100, 5 packets, reference 1 (64 ms), feedback 7
                              0xD2, 0x50,                 // 11 01 00 10 01 01 00 00
                              4, 0xFF, 0xFE, 8, 0, 0]     // +1 ms, -0.5 ms, +2 ms, 0; one byte of padding
        let feedback = try XCTUnwrap(Self.feedback(bytes))
        XCTAssertEqual(feedback.mediaSSRC, 9)
        XCTAssertEqual(feedback.feedbackCount, 7)
        XCTAssertEqual(feedback.packets.map(\.sequence), [100, 101, 102, 103, 104])
        XCTAssertEqual(feedback.packets.map(\.arrivalUs), [65_000, nil, 64_500, 66_500, 66_500])
    }

    /// A run (T=0) of three received packets, then a one-bit vector (T=1, S=0) of twelve
    /// received and two lost, across the 16-bit wrap; a negative reference time.
    func testReadsARunAndAOneBitVectorAcrossTheWrap() throws {
        let bytes: [UInt8] = [0x8F, 205, 0, 9, 0, 0, 0, 1, 0, 0, 0, 9,
                              0xFF, 0xFE, 0, 17, 0xFF, 0xFF, 0xFF, 0,
                              0x20, 0x03, 0xBF, 0xFC] + [UInt8](repeating: 1, count: 15) + [0]
        let feedback = try XCTUnwrap(Self.feedback(bytes))
        XCTAssertEqual(feedback.packets.count, 17)
        XCTAssertEqual(feedback.packets.first?.sequence, 65534)
        XCTAssertEqual(feedback.packets.last?.sequence, 14)
        XCTAssertEqual(feedback.packets.map(\.arrivalUs).prefix(3), [-64_000 + 250, -64_000 + 500, -64_000 + 750])
        XCTAssertEqual(feedback.packets.filter { $0.arrivalUs == nil }.map(\.sequence), [13, 14])
        XCTAssertEqual(feedback.packets[14].arrivalUs, -64_000 + 15 * 250)
    }

    /// Feedback cut short (a delta missing) or with a reserved status is unreadable, not read
    /// as something else.
    func testRefusesShortOrReservedFeedback() throws {
        // Two packets with large deltas (a run of status 2) need four bytes of deltas; two are there.
        let short: [UInt8] = [0x8F, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 9, 0, 100, 0, 2, 0, 0, 0, 0, 0x40, 0x02, 0, 4]
        XCTAssertNil(try Self.feedback(short))
        let reserved: [UInt8] = [0x8F, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 9, 0, 100, 0, 1, 0, 0, 0, 0, 0x60, 0x01, 0, 0]
        XCTAssertNil(try Self.feedback(reserved))
    }

    /// Chromium's own feedback (headless Chromium 120+ playing `produce`'s stream through 5 %
    /// loss, SRTCP unprotected): packet 38 lost, then reported again once its retransmission
    /// (the same bytes, the same transport-wide number) came, after 39; a large negative delta
    /// for that; RTCP padding (P bit, the count in the last byte) after the deltas.
    func testReadsChromiumsFeedbackThroughLoss() throws {
        let first = try XCTUnwrap(Self.feedback(Self.bytes("afcd000500000001d03733730026000208cd5c11c400ab01")))
        XCTAssertEqual(first.mediaSSRC, 0xD037_3373)
        XCTAssertEqual(first.feedbackCount, 17)
        XCTAssertEqual(first.packets.map(\.sequence), [38, 39])
        XCTAssertEqual(first.packets.map(\.arrivalUs), [nil, 36_919_082_750])
        let second = try XCTUnwrap(Self.feedback(Self.bytes("afcd000600000001d03733730026000408cd5d12d940a9ff02837b01")))
        XCTAssertEqual(second.feedbackCount, 18)
        XCTAssertEqual(second.packets.map(\.sequence), [38, 39, 40, 41])
        XCTAssertEqual(second.packets.map(\.arrivalUs), [36_919_146_250, 36_919_082_750, 36_919_115_500, 36_919_146_250])
        // Two chunks: a two-bit vector of seven, then a run of one.
        let eight = try XCTUnwrap(Self.feedback(Self.bytes("afcd000800000001d0373373005d000808cd7c32d955200154fcfd7e828e7280a8000003")))
        XCTAssertEqual(eight.packets.map(\.sequence), Array(93...100))
        XCTAssertEqual(eight.packets.map(\.arrivalUs), [36_921_109_000, 36_920_916_250, 36_920_947_750, 36_920_980_250,
                                                        36_921_015_750, 36_921_044_250, 36_921_076_250, 36_921_118_250])
    }

    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
    }
}
