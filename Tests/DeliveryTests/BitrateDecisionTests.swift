import Delivery
import XCTest

final class BitrateDecisionTests: XCTestCase {
    /// An estimate above what its viewer was sent says nothing of the path (a still screen),
    /// nor one under it without loss (an IDR's second): the ceiling stays. Under it with loss
    /// (congestion), 85 % of it within the floor and the ceiling.
    func testAnEstimateLimitsOnlyOnceThePathIsCongested() {
        var d = BitrateDecision(ceiling: 4_000_000)
        XCTAssertEqual(d.target, 4_000_000)
        d.report(estimate: 60_000, sent: 50_000, fractionLost: 40)
        XCTAssertFalse(d.isLimiting)
        d.report(estimate: 60_000, sent: 80_000, fractionLost: 0)
        XCTAssertFalse(d.isLimiting)
        XCTAssertEqual(d.target, 4_000_000)
        d.report(estimate: 2_000_000, sent: 3_000_000, fractionLost: 5)
        XCTAssertTrue(d.isLimiting)
        XCTAssertEqual(d.target, 1_700_000)
        // Once limiting, it follows the estimate up, whatever was sent...
        d.report(estimate: 3_000_000, sent: 1_600_000)
        XCTAssertEqual(d.target, 2_550_000)
        d.report(estimate: 50_000, sent: 1_600_000)
        XCTAssertEqual(d.target, 100_000)
        // ...until 85 % of it reaches the ceiling, or no viewer has one.
        d.report(estimate: 5_000_000, sent: 1_000_000)
        XCTAssertFalse(d.isLimiting)
        XCTAssertEqual(d.target, 4_000_000)
        d.report(estimate: 1_000_000, sent: 2_000_000, fractionLost: 20)
        XCTAssertTrue(d.isLimiting)
        d.report(estimate: nil, sent: 0)
        XCTAssertEqual(d.target, 4_000_000)
        // A ceiling under the floor is the ceiling.
        d.ceiling = 60_000
        d.report(estimate: 10_000, sent: 50_000, fractionLost: 50)
        XCTAssertEqual(d.target, 60_000)
    }

    func testChangesByTenPercentAtMostOnceASecond() {
        var d = BitrateDecision(ceiling: 4_000_000)
        d.report(estimate: 4_400_000, sent: 4_500_000, fractionLost: 10)  // 3.74 M: 6.5 % under the current 4 M
        XCTAssertNil(d.change(nowNs: 0))
        d.report(estimate: 2_000_000, sent: 3_000_000, fractionLost: 10)
        XCTAssertEqual(d.change(nowNs: 0), 1_700_000)
        d.applied(1_700_000, nowNs: 0)
        d.report(estimate: 1_000_000, sent: 1_500_000)
        XCTAssertNil(d.change(nowNs: 500_000_000), "less than a second after the last change")
        XCTAssertEqual(d.change(nowNs: 1_000_000_000), 850_000)
        d.applied(850_000, nowNs: 1_000_000_000)
        // No estimate any more (the viewers left): back to the ceiling.
        d.report(estimate: nil, sent: 0)
        XCTAssertEqual(d.change(nowNs: 2_000_000_000), 4_000_000)
    }
}
