import H264
import Delivery
import XCTest

/// The one skip-to-IDR queue under its three policies, fed the same access units: a reader
/// drops what is queued, a live sink skips what comes, a file sink makes its source wait.
final class SkipQueueTests: XCTestCase {
    /// An IDR of 400 bytes of slice, a P of 400, then another P: the third crosses 1000 bytes.
    func offerThree(_ policy: SkipPolicy) -> (SkipQueue<QueuedAccessUnit>, SkipQueue<QueuedAccessUnit>.Offer) {
        var queue = SkipQueue<QueuedAccessUnit>(policy: policy, limits: .bytes(high: 1000, low: 500), waitsForEntryPoint: false)
        for frame in 0..<2 {
            XCTAssertEqual(queue.offer(QueuedAccessUnit(Fixture.picture(frame, idr: frame == 0, payload: 400), arrivalNs: 0), now: 0).outcome, .queued)
        }
        let third = queue.offer(QueuedAccessUnit(Fixture.picture(2, idr: false, payload: 400), arrivalNs: 0), now: 0)
        return (queue, third)
    }

    func testDropToEntryDropsWhatIsQueued() {
        let (queue, third) = offerThree(.dropToEntry)
        XCTAssertEqual(third.outcome, .skipped)
        XCTAssertTrue(third.didSkip)
        XCTAssertEqual(third.skippedAccessUnits, 3)
        XCTAssertTrue(queue.isEmpty)
        XCTAssertTrue(queue.isSkipping)
        XCTAssertEqual(queue.stats.skips, 1)
    }

    func testSkipToEntryKeepsWhatIsQueuedAndResumesAtAnIDR() {
        var (queue, third) = offerThree(.skipToEntry)
        XCTAssertEqual(third.outcome, .skipped)
        XCTAssertEqual(third.skippedAccessUnits, 1)
        XCTAssertEqual(queue.queued.map { $0.accessUnit.timestamp?.sequence }, [0, 1])
        XCTAssertTrue(queue.isSkipping)
        _ = queue.take(maxItems: 1)  // the IDR goes to the sink: the P is left, under the low mark
        XCTAssertLessThanOrEqual(queue.queuedBytes, 500)
        let idr = queue.offer(QueuedAccessUnit(Fixture.picture(3, idr: true, payload: 100), arrivalNs: 0), now: 0)
        XCTAssertEqual(idr.outcome, .queued)
        XCTAssertTrue(idr.isEntryPoint)
        XCTAssertFalse(idr.isStart)
        XCTAssertFalse(queue.isSkipping)
        // A reader's resuming IDR has no marker in front: it carries its parameter sets.
        XCTAssertEqual(queue.queued.map { $0.accessUnit.timestamp?.sequence }, [1, 3])
        XCTAssertEqual(queue.stats.skippedAccessUnits, 1)
    }

    func testWaitAnswersFullAndChangesNothing() {
        var (queue, third) = offerThree(.wait)
        XCTAssertEqual(third.outcome, .full)
        XCTAssertFalse(third.didSkip)
        XCTAssertEqual(queue.count, 2)
        XCTAssertEqual(queue.stats, SkipStats())
        _ = queue.take(maxItems: 2)
        XCTAssertEqual(queue.queuedBytes, 0)
        XCTAssertEqual(queue.offer(QueuedAccessUnit(Fixture.picture(2, idr: false, payload: 400), arrivalNs: 0), now: 0).outcome, .queued)
    }

    func testBytesOnlyLimitsHaveNoLagBound() {
        var queue = SkipQueue<QueuedAccessUnit>(policy: .dropToEntry, limits: .bytes(high: 1 << 20), waitsForEntryPoint: true)
        // 100 s of media time queued: far past any lag bound, well under the bytes.
        for frame in 0..<3 {
            let unit = QueuedAccessUnit(Fixture.picture(frame * 1500, idr: frame == 0), arrivalNs: 0)
            XCTAssertFalse(queue.offer(unit, now: 0).didSkip)
        }
        XCTAssertEqual(queue.count, 3)
    }
}
