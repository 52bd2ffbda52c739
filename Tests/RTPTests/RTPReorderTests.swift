import RTP
import XCTest

/// `RTPReorder`: packets back in order, the holes NACKed, a bounded wait.
final class RTPReorderTests: XCTestCase {
    func packet(_ sequence: UInt16) -> RTPPacket {
        RTPPacket(marker: false, payloadType: 96, sequenceNumber: sequence, timestamp: 0, ssrc: 1, payload: [UInt8(truncatingIfNeeded: sequence)][...])
    }

    func sequences(_ packets: [RTPPacket]) -> [UInt16] { packets.map(\.sequenceNumber) }

    func testInOrderPacketsGoOnAtOnce() {
        var reorder = RTPReorder()
        XCTAssertEqual(sequences(reorder.take(packet(10), now: 0)), [10])
        XCTAssertEqual(sequences(reorder.take(packet(11), now: 0)), [11])
        XCTAssertEqual(reorder.nacks(now: 0), [])
    }

    func testAHoleIsAskedForAndFilledByTheRetransmission() {
        var reorder = RTPReorder(wait: 0.3, requestInterval: 0.06, maxRequests: 4)
        _ = reorder.take(packet(65534), now: 0)
        XCTAssertEqual(sequences(reorder.take(packet(1), now: 0.01)), [], "65535 and 0 missing: held")
        XCTAssertEqual(reorder.nacks(now: 0.01), [65535, 0], "across the wrap, in order")
        XCTAssertEqual(reorder.nacks(now: 0.03), [], "not asked again before the interval")
        XCTAssertEqual(reorder.nacks(now: 0.08), [65535, 0])
        XCTAssertEqual(sequences(reorder.take(packet(0), now: 0.1)), [])
        XCTAssertEqual(sequences(reorder.take(packet(65535), now: 0.1)), [65535, 0, 1])
        XCTAssertEqual(reorder.recovered, 2)
        XCTAssertEqual(reorder.skipped, 0)
        XCTAssertEqual(sequences(reorder.take(packet(0), now: 0.2)), [], "a retransmission that comes twice")
        XCTAssertEqual(reorder.duplicates, 1)
    }

    func testAHoleThatStaysIsGonePastAfterTheWait() {
        var reorder = RTPReorder(wait: 0.3, requestInterval: 0.06, maxRequests: 2)
        _ = reorder.take(packet(1), now: 0)
        _ = reorder.take(packet(3), now: 0)
        _ = reorder.take(packet(4), now: 0.1)
        XCTAssertEqual(reorder.nacks(now: 0.1), [2])
        XCTAssertEqual(reorder.nacks(now: 0.2), [2])
        XCTAssertEqual(reorder.nacks(now: 0.3), [], "asked twice at most")
        XCTAssertEqual(sequences(reorder.expire(now: 0.29)), [])
        XCTAssertEqual(sequences(reorder.expire(now: 0.31)), [3, 4])
        XCTAssertEqual(reorder.skipped, 1)
        XCTAssertEqual(sequences(reorder.take(packet(2), now: 0.4)), [], "too late: gone past")
    }

    func testTooManyHeldGoesPastTheHoleAndAJumpStartsAgain() {
        var reorder = RTPReorder(wait: 10, capacity: 4)
        _ = reorder.take(packet(1), now: 0)
        for s: UInt16 in 3...6 { XCTAssertEqual(sequences(reorder.take(packet(s), now: 0)), []) }
        XCTAssertEqual(sequences(reorder.take(packet(7), now: 0)), [3, 4, 5, 6, 7], "a fifth held: the hole at 2 is given up")
        XCTAssertEqual(sequences(reorder.take(packet(30_000), now: 0)), [30_000], "a sender that started again: no hole to wait for")
        XCTAssertEqual(reorder.nacks(now: 0), [])
    }
}
