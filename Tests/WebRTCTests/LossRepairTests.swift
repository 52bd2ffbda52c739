import XCTest
@testable import WebRTC

/// What is sent again for a viewer's NACKs and for what its transport-wide feedback reports
/// lost (`LossRepair`).
final class LossRepairTests: XCTestCase {
    /// Video packets 100...109 numbered 5000...5009 across the transport.
    func sentTen() -> LossRepair {
        var repair = LossRepair(history: 512)
        for i in 0..<10 { repair.sent(UInt16(100 + i), transport: UInt16(5000 + i)) }
        return repair
    }

    /// A NACK lost on the way: the feedback's report brings the packet back, once; the NACK
    /// the viewer repeats before that copy could reach it is not answered, one after that is.
    func testFeedbackTakesALostNACKsPlace() {
        var repair = sentTen()
        repair.roundTripNs = 60_000_000
        XCTAssertEqual(repair.reportedLost([5003], nowNs: 1_000_000_000).resend, [103])
        XCTAssertEqual(repair.reportedLost([5003], nowNs: 1_050_000_000).resend, [], "reported again: sent once")
        XCTAssertFalse(repair.nacked(103, nowNs: 1_040_000_000), "left before the copy could come")
        XCTAssertTrue(repair.nacked(103, nowNs: 1_070_000_000), "a round trip on: the copy was lost")
        XCTAssertTrue(repair.nacked(103, nowNs: 1_075_000_000), "a NACK after a NACK: always answered")
    }

    /// The usual order: the NACK comes first and is answered; the feedback's report of the
    /// same packet sends nothing more.
    func testANACKAnsweredFirstLeavesTheFeedbackNothing() {
        var repair = sentTen()
        repair.roundTripNs = 60_000_000
        XCTAssertTrue(repair.nacked(104, nowNs: 1_000_000_000))
        XCTAssertEqual(repair.reportedLost([5004, 5006], nowNs: 1_020_000_000).resend, [106])
    }

    /// With no round trip known, every NACK is answered.
    func testEveryNACKAnsweredWithNoRoundTrip() {
        var repair = sentTen()
        XCTAssertEqual(repair.reportedLost([5001], nowNs: 1_000_000_000).resend, [101])
        XCTAssertTrue(repair.nacked(101, nowNs: 1_000_000_001))
    }

    /// Numbers never sent (or no longer remembered) send nothing; one feedback packet sends at
    /// most `feedbackLimit` again, the rest counted and left to the NACKs.
    func testUnknownNumbersAndTheLimit() {
        var repair = LossRepair(history: 512)
        for i in 0..<20 { repair.sent(UInt16(65530 &+ UInt16(i)), transport: UInt16(i)) }
        XCTAssertEqual(repair.reportedLost([600, 601], nowNs: 1).resend, [])
        let (resend, over) = repair.reportedLost(Array(0..<12), nowNs: 2)
        XCTAssertEqual(resend, (0..<UInt16(LossRepair.feedbackLimit)).map { 65530 &+ $0 }, "across the sequence numbers' wrap")
        XCTAssertEqual(over, 12 - LossRepair.feedbackLimit)
        // The ring forgets a number 512 on.
        repair.sent(7, transport: 512)
        XCTAssertEqual(repair.reportedLost([0, 512], nowNs: 3).resend, [7])
    }
}
