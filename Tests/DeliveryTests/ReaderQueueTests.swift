import Clocks
import H264
@testable import Delivery
import XCTest

final class ReaderQueueTests: XCTestCase {
    func testWaitsForFirstIDRThenQueuesInOrder() {
        var queue = ReaderQueue(now: 0)
        let p = Fixture.picture(1, idr: false)
        XCTAssertFalse(queue.enqueue(p, arrivalNs: 0).enqueued)
        XCTAssertTrue(queue.isEmpty)
        XCTAssertEqual(queue.stats, SkipStats(), "a reader that has not started skipped nothing")

        let idr = queue.enqueue(Fixture.picture(30, idr: true), arrivalNs: 0)
        XCTAssertTrue(idr.enqueued)
        XCTAssertTrue(idr.isEntryPoint)
        XCTAssertTrue(idr.isStart)
        XCTAssertTrue(queue.enqueue(Fixture.picture(31, idr: false), arrivalNs: 0).enqueued)
        XCTAssertEqual(queue.queued.map { $0.accessUnit.timestamp?.sequence }, [30, 31])
    }

    func testEntryIDRGetsParameterSetsInFront() {
        var queue = ReaderQueue(now: 0)
        let bare = Fixture.picture(0, idr: true, withParameterSets: false)
        XCTAssertTrue(queue.enqueue(bare, arrivalNs: 0).enqueued)
        XCTAssertEqual(queue.beginWrite()?.types, [.accessUnitDelimiter, .sps, .pps, .idrSlice])
    }

    func testSharesBytesWithTheAccessUnit() {
        var queue = ReaderQueue(now: 0)
        let idr = Fixture.picture(0, idr: true)
        _ = queue.enqueue(idr, arrivalNs: 0)
        let written = queue.beginWrite()!
        let slice = written.last!.wire
        idr.nalUnits.last!.wire.withUnsafeBufferPointer { original in
            slice.withUnsafeBufferPointer { queued in
                XCTAssertEqual(original.baseAddress, queued.baseAddress, "the queue must reference, not copy")
            }
        }
    }

    func testLagBoundSkipsToNextIDRKeepingParameterSets() {
        // 500 ms at 30 fps is 15 frames of lag: frame 16 over the bound with nothing written.
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500)), now: 0)
        for au in Fixture.stream(0..<15) { XCTAssertTrue(queue.enqueue(au, arrivalNs: 0).enqueued) }
        XCTAssertEqual(queue.lagNs, 14 * 3000 * 100_000 / 9)
        let over = queue.enqueue(Fixture.picture(16, idr: false), arrivalNs: 0)
        XCTAssertTrue(over.didSkip)
        XCTAssertFalse(over.enqueued)
        XCTAssertEqual(over.skippedAccessUnits, 16)
        XCTAssertTrue(queue.isEmpty)
        XCTAssertTrue(queue.isWaitingForEntry)
        XCTAssertEqual(queue.stats.skips, 1)

        // Nothing but an IDR gets in now; the IDR comes with SPS/PPS in front.
        XCTAssertFalse(queue.enqueue(Fixture.picture(17, idr: false), arrivalNs: 0).enqueued)
        XCTAssertEqual(queue.stats.skippedAccessUnits, 17)
        let resume = queue.enqueue(Fixture.picture(30, idr: true, withParameterSets: false), arrivalNs: 0)
        XCTAssertTrue(resume.enqueued)
        XCTAssertTrue(resume.isEntryPoint)
        XCTAssertFalse(resume.isStart)
        XCTAssertEqual(queue.beginWrite()?.types, [.accessUnitDelimiter, .sps, .pps, .idrSlice])
    }

    func testSkipKeepsAQueuedIDRAndWhatFollows() {
        // A GOP of 10 frames: frames 0...16 span 533 ms; the newest IDR (10) and what follows are kept.
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500)), now: 0)
        var last = ReaderQueue.Offer()
        for au in Fixture.stream(0..<17, gop: 10) { last = queue.enqueue(au, arrivalNs: 0) }
        XCTAssertTrue(last.didSkip)
        XCTAssertTrue(last.enqueued)
        XCTAssertEqual(last.skippedAccessUnits, 10)
        XCTAssertFalse(queue.isWaitingForEntry)
        XCTAssertEqual(queue.queued.first?.accessUnit.timestamp?.sequence, 10)
        XCTAssertTrue(queue.queued.first!.isIDR)
    }

    func testLagFromArrivalTimeWithoutTimestamps() {
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500)), now: 0)
        XCTAssertTrue(queue.enqueue(Fixture.picture(0, idr: true, timestamp: false), arrivalNs: 0).enqueued)
        XCTAssertFalse(queue.enqueue(Fixture.picture(1, idr: false, timestamp: false), arrivalNs: Nanoseconds.milliseconds(500)).didSkip)
        XCTAssertTrue(queue.enqueue(Fixture.picture(2, idr: false, timestamp: false), arrivalNs: Nanoseconds.milliseconds(501)).didSkip)
    }

    func testByteBound() {
        var queue = ReaderQueue(limits: QueueLimits(maxBytes: 1000), now: 0)
        XCTAssertTrue(queue.enqueue(Fixture.picture(0, idr: true, payload: 400), arrivalNs: 0).enqueued)
        XCTAssertTrue(queue.enqueue(Fixture.picture(1, idr: false, payload: 400), arrivalNs: 0).enqueued)
        XCTAssertLessThanOrEqual(queue.queuedBytes, 1000)
        let over = queue.enqueue(Fixture.picture(2, idr: false, payload: 400), arrivalNs: 0)
        XCTAssertTrue(over.didSkip)
        XCTAssertEqual(queue.queuedBytes, 0)
        XCTAssertTrue(queue.isWaitingForEntry)
    }

    func testInFlightHeadIsNeverDropped() {
        var queue = ReaderQueue(limits: QueueLimits(maxBytes: 1000), now: 0)
        _ = queue.enqueue(Fixture.picture(0, idr: true, payload: 400), arrivalNs: 0)
        let head = queue.beginWrite()
        XCTAssertNotNil(head)
        queue.didWrite(bytes: 10, finished: false, now: 1)
        _ = queue.enqueue(Fixture.picture(1, idr: false, payload: 400), arrivalNs: 0)
        let over = queue.enqueue(Fixture.picture(2, idr: false, payload: 400), arrivalNs: 0)
        XCTAssertTrue(over.didSkip)
        XCTAssertEqual(over.skippedAccessUnits, 2, "frames 1 and 2 dropped, not the head")
        XCTAssertEqual(queue.count, 1)
        XCTAssertTrue(queue.isHeadInFlight)
        XCTAssertEqual(queue.queued.first?.accessUnit.timestamp?.sequence, 0)
        queue.didWrite(bytes: 400, finished: true, now: 2)
        XCTAssertTrue(queue.isEmpty)
    }

    func testLowWatermarkDelaysResume() {
        // A reader stuck on a big head: the IDR that comes while the head is still queued and
        // 300 ms old (over the 250 ms low mark) is skipped too.
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500), lowWatermark: 0.5), now: 0)
        for au in Fixture.stream(0..<10, gop: 100) { _ = queue.enqueue(au, arrivalNs: 0) }
        _ = queue.beginWrite()
        for au in Fixture.stream(10..<17, gop: 100) { _ = queue.enqueue(au, arrivalNs: 0) }
        XCTAssertTrue(queue.isWaitingForEntry)
        XCTAssertEqual(queue.count, 1)
        XCTAssertFalse(queue.enqueue(Fixture.picture(20, idr: true), arrivalNs: 0).enqueued, "20 frames after the head: over the low mark")
        queue.didWrite(bytes: 100, finished: true, now: 1)
        XCTAssertTrue(queue.enqueue(Fixture.picture(30, idr: true), arrivalNs: 0).enqueued)
    }

    func testBacklogGetsGraceUntilCaughtUp() {
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500)), now: 0)
        let gop = Fixture.stream(0..<30).map { QueuedAccessUnit($0, arrivalNs: 0) }
        XCTAssertTrue(queue.enqueueBacklog(gop, now: 0))
        XCTAssertEqual(queue.count, 30)
        XCTAssertFalse(queue.enqueue(Fixture.picture(30, idr: false), arrivalNs: 0).didSkip, "a 1 s GOP is allowed on top of the bound")
        XCTAssertFalse(queue.enqueueBacklog([QueuedAccessUnit(Fixture.picture(1, idr: false), arrivalNs: 0)], now: 0))
    }

    /// A paced reader is told to write on a quarter of a second (half the 500 ms bound) before
    /// its queue would skip: a 1 s GOP's grace included, near at 1.23 s of lag, skipped past 1.47 s.
    func testNearItsBoundHalfTheLagBoundBeforeTheSkip() {
        var queue = ReaderQueue(limits: QueueLimits(maxLagNs: Nanoseconds.milliseconds(500)), now: 0)
        XCTAssertTrue(queue.enqueueBacklog(Fixture.stream(0..<30).map { QueuedAccessUnit($0, arrivalNs: 0) }, now: 0))
        XCTAssertFalse(queue.isNearItsBound, "the cached GOP alone (967 ms) is within its grace")
        for frame in 30...36 { XCTAssertFalse(queue.enqueue(Fixture.picture(frame, idr: false), arrivalNs: 0).didSkip) }
        XCTAssertFalse(queue.isNearItsBound, "1.2 s of lag")
        XCTAssertFalse(queue.enqueue(Fixture.picture(37, idr: false), arrivalNs: 0).didSkip)
        XCTAssertTrue(queue.isNearItsBound, "1.233 s of lag, the bound 1.467 s")
        for frame in 38...44 { XCTAssertFalse(queue.enqueue(Fixture.picture(frame, idr: false), arrivalNs: 0).didSkip, "frame \(frame)") }
        XCTAssertTrue(queue.enqueue(Fixture.picture(45, idr: false), arrivalNs: 0).didSkip, "past the bound")
    }

    func testTimeoutCountsOnlyWithPendingData() {
        var queue = ReaderQueue(now: 0)
        let timeout = Nanoseconds.milliseconds(10_000)
        XCTAssertFalse(queue.isTimedOut(now: 20_000_000_000, timeoutNs: timeout), "an empty queue never times out")
        _ = queue.enqueue(Fixture.picture(0, idr: true), arrivalNs: 20_000_000_000)
        XCTAssertFalse(queue.isTimedOut(now: 29_000_000_000, timeoutNs: timeout))
        _ = queue.beginWrite()
        queue.didWrite(bytes: 5, finished: false, now: 29_000_000_000)
        XCTAssertFalse(queue.isTimedOut(now: 38_000_000_000, timeoutNs: timeout))
        XCTAssertTrue(queue.isTimedOut(now: 39_000_000_000, timeoutNs: timeout))
    }

    /// `takesAtOnce` and `wroteAtOnce` leave a reader's queue as an offer, a write and its end
    /// would: in every state the answer is whether the unit would be queued alone, and after a
    /// unit written at once the queue answers every later offer as the other queue does.
    func testAUnitWrittenAtOnceLeavesTheQueueAsQueuingAndWritingIt() {
        let limits = QueueLimits(maxLagNs: Nanoseconds.milliseconds(500), maxBytes: 4000)
        let gop = Fixture.stream(0..<8, gop: 30, payload: 300).enumerated().map { QueuedAccessUnit($1, arrivalNs: UInt64($0) * 33_000_000) }
        func fresh() -> ReaderQueue { ReaderQueue(limits: limits, now: 0) }
        var started = fresh()
        _ = started.offer(gop[0], now: 0)
        _ = started.startWrite()
        started.didWrite(bytes: gop[0].byteCount, finished: true, now: 1)
        var withGrace = fresh()
        XCTAssertTrue(withGrace.enqueueBacklog(Array(gop[0..<6]), now: 0))
        while withGrace.startWrite() != nil { withGrace.didWrite(bytes: 10, finished: true, now: 2) }
        var inFlight = started
        _ = inFlight.offer(gop[1], now: 2)
        _ = inFlight.startWrite()
        let states: [(String, ReaderQueue)] = [("not started", fresh()), ("started, empty", started),
                                               ("empty after a backlog", withGrace), ("in flight", inFlight)]
        let big = QueuedAccessUnit(Fixture.picture(40, idr: false, payload: 5000), arrivalNs: 400_000_000)
        for (name, state) in states {
            for unit in [gop[6], big] {
                var queued = state
                let offer = queued.offer(unit, now: 500)
                let alone = offer.enqueued && !offer.didSkip && !offer.isStart && queued.count == 1
                XCTAssertEqual(state.takesAtOnce(unit), alone, "\(name), \(unit.byteCount) bytes")
                guard alone else { continue }
                _ = queued.startWrite()
                queued.didWrite(bytes: unit.byteCount, finished: true, now: 500)
                var atOnce = state
                atOnce.wroteAtOnce(now: 500)
                XCTAssertEqual(atOnce.count, queued.count, name)
                XCTAssertEqual(atOnce.lastProgressNs, queued.lastProgressNs, name)
                XCTAssertEqual(atOnce.queuedBytes, queued.queuedBytes, name)
                XCTAssertEqual(atOnce.stats, queued.stats, name)
                // The same answers to what comes next: a run of units past the bounds.
                for (n, later) in Fixture.stream(41..<60, payload: 400).enumerated() {
                    let entry = QueuedAccessUnit(later, arrivalNs: 500_000_000 + UInt64(n) * 33_000_000)
                    let now = 600 + UInt64(n)
                    XCTAssertEqual(atOnce.offer(entry, now: now), queued.offer(entry, now: now), "\(name), unit \(n)")
                }
                XCTAssertEqual(atOnce.stats, queued.stats, name)
                XCTAssertEqual(atOnce.isNearItsBound, queued.isNearItsBound, name)
            }
        }
    }
}
