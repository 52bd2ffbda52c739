import Clocks
import H264
import Delivery
import Media
import XCTest

final class BroadcasterTests: XCTestCase {
    let clock = ManualClock()

    func makeBroadcaster(_ policy: JoinPolicy = .idr, maxReaders: Int = 16) -> Broadcaster {
        Broadcaster(config: BroadcasterConfig(joinPolicy: policy, maxReaders: maxReaders), clock: clock)
    }

    /// Writes everything queued for `id` and returns the sequence numbers written.
    func drain(_ b: inout Broadcaster, _ id: ReaderID) -> [UInt64] {
        var out: [UInt64] = []
        while let nals = b.nextToWrite(id) {
            let bytes = nals.reduce(0) { $0 + $1.wire.count }
            out.append(b.queue(of: id)!.queued.first!.accessUnit.timestamp!.sequence)
            b.didWrite(id, bytes: bytes, finished: true)
        }
        return out
    }

    func testIDRJoinRequestsAnIDRAndStartsThere() {
        var b = makeBroadcaster(.idr)
        for au in Fixture.stream(0..<5) { _ = b.publish(au) }
        clock.advance(milliseconds: 1000)
        let join = b.addReader()
        let id = try! XCTUnwrap(join.id)
        XCTAssertEqual(join.events, [.requestIDR])
        XCTAssertTrue(b.publish(Fixture.picture(5, idr: false)).isEmpty)
        clock.advance(milliseconds: 40)
        let events = b.publish(Fixture.picture(6, idr: true, withParameterSets: false))
        XCTAssertEqual(events, [.readerStarted(id, latencyNs: Nanoseconds.milliseconds(40))])
        XCTAssertEqual(b.nextToWrite(id)?.types, [.accessUnitDelimiter, .sps, .pps, .idrSlice])
    }

    func testIDRRequestsAreCoalesced() {
        var b = makeBroadcaster(.idr)
        _ = b.publish(Fixture.picture(0, idr: true))
        XCTAssertEqual(b.addReader().events, [.requestIDR])
        XCTAssertEqual(b.addReader().events, [], "a request is pending: wait for it")
        _ = b.publish(Fixture.picture(1, idr: true))
        clock.advance(milliseconds: 100)
        XCTAssertEqual(b.addReader().events, [], "too soon after the last request")
        XCTAssertEqual(b.nextDeadlineNs, Nanoseconds.milliseconds(250))
        clock.advance(milliseconds: 100)
        XCTAssertEqual(b.addReader().events, [], "still deferred: one request for both")
        XCTAssertEqual(b.tick(), [])
        clock.advance(milliseconds: 50)
        XCTAssertEqual(b.tick(), [.requestIDR])
        XCTAssertEqual(b.tick(), [])
        XCTAssertEqual(b.idrRequests, 2)
    }

    func testDeferredRequestDroppedWhenANaturalIDRComes() {
        var b = makeBroadcaster(.idr)
        _ = b.addReader()
        _ = b.publish(Fixture.picture(0, idr: true))
        clock.advance(milliseconds: 10)
        _ = b.addReader()
        XCTAssertNotNil(b.nextDeadlineNs)
        _ = b.publish(Fixture.picture(1, idr: true))
        XCTAssertNil(b.nextDeadlineNs)
        clock.advance(milliseconds: 1000)
        XCTAssertEqual(b.tick(), [])
    }

    func testGOPJoinGetsCachedGOPAtOnce() {
        var b = makeBroadcaster(.gop)
        for au in Fixture.stream(0..<40) { _ = b.publish(au) }
        let join = b.addReader()
        let id = try! XCTUnwrap(join.id)
        XCTAssertEqual(join.events, [.readerStarted(id, latencyNs: 0)])
        XCTAssertEqual(b.queue(of: id)?.count, 10)
        _ = b.publish(Fixture.picture(40, idr: false))
        XCTAssertEqual(drain(&b, id), Array(30...40))
    }

    /// A reader that lost its picture on a relay starts again at the cached GOP, once per
    /// `idrMinIntervalNs`: the asks in between (a viewer's PLIs while the GOP is on its way) do nothing.
    func testARestartAtTheCachedGOPAtMostOncePerInterval() {
        var b = makeBroadcaster(.gop)
        for au in Fixture.stream(0..<35) { _ = b.publish(au) }
        let id = try! XCTUnwrap(b.addReader().id)
        XCTAssertEqual(drain(&b, id), Array(30...34))
        XCTAssertTrue(b.restartAtCachedGOP(id))
        XCTAssertEqual(b.queue(of: id)?.count, 5, "the cached GOP again, from its IDR")
        XCTAssertEqual(drain(&b, id), Array(30...34))
        clock.advance(milliseconds: 200)
        XCTAssertFalse(b.restartAtCachedGOP(id), "within 250 ms of the last")
        XCTAssertEqual(b.queue(of: id)?.count, 0)
        clock.advance(milliseconds: 50)
        XCTAssertTrue(b.restartAtCachedGOP(id))
        XCTAssertEqual(drain(&b, id), Array(30...34))
    }

    /// A viewer that asks while one of its access units is half written (a paced WebRTC
    /// viewer's, packet by packet) is not turned away: it starts again at the cached GOP once
    /// that unit is out.
    func testARestartAskedMidUnitComesWhenTheUnitIsOut() {
        var b = makeBroadcaster(.gop)
        for au in Fixture.stream(0..<35) { _ = b.publish(au) }
        let id = try! XCTUnwrap(b.addReader().id)
        XCTAssertEqual(drain(&b, id), Array(30...34))
        _ = b.publish(Fixture.picture(35, idr: false))
        _ = b.publish(Fixture.picture(36, idr: false))
        XCTAssertNotNil(b.nextUnitToWrite(id))
        b.didWrite(id, bytes: 10, finished: false)
        XCTAssertFalse(b.restartAtCachedGOP(id), "not half-way through a unit")
        XCTAssertEqual(b.queue(of: id)?.count, 2)
        b.didWrite(id, bytes: 10, finished: true)
        XCTAssertEqual(drain(&b, id), Array(30...36), "the cached GOP again, from its IDR, once 35 was out")
    }

    func testGOPJoinWithoutCacheWaitsForNextIDR() {
        var b = Broadcaster(config: BroadcasterConfig(joinPolicy: .gop, gopMaxBytes: 500), clock: clock)
        for au in Fixture.stream(0..<10) { _ = b.publish(au) }
        XCTAssertTrue(b.cachedGOP.isEmpty, "the GOP grew past the cache bound")
        let id = try! XCTUnwrap(b.addReader().id)
        XCTAssertEqual(b.queue(of: id)?.count, 0)
        _ = b.publish(Fixture.picture(10, idr: false))
        let events = b.publish(Fixture.picture(30, idr: true))
        XCTAssertEqual(events, [.readerStarted(id, latencyNs: 0)])
        XCTAssertEqual(b.cachedGOP.count, 1)
    }

    func testAGOPJoinAfterTheSourceWasLostWaitsForItsNextIDR() {
        var b = makeBroadcaster(.gop)
        for au in Fixture.stream(0..<40) { _ = b.publish(au) }
        let before = try! XCTUnwrap(b.addReader().id)
        b.forgetCachedGOP()
        XCTAssertTrue(b.cachedGOP.isEmpty)
        XCTAssertEqual(b.queue(of: before)?.count, 10, "a reader already there keeps its queue")
        let after = try! XCTUnwrap(b.addReader().id)
        XCTAssertNil(b.nextToWrite(after), "no old pictures for a reader joining while the source is away")
        _ = b.publish(Fixture.picture(60, idr: true))
        _ = b.publish(Fixture.picture(61, idr: false))
        XCTAssertEqual(drain(&b, after), [60, 61])
    }

    func testNextJoinWaitsForNaturalIDRWithoutRequest() {
        var b = makeBroadcaster(.next)
        _ = b.publish(Fixture.picture(0, idr: true))
        let join = b.addReader()
        XCTAssertEqual(join.events, [])
        _ = b.publish(Fixture.picture(1, idr: false))
        XCTAssertNil(b.nextToWrite(join.id!))
        _ = b.publish(Fixture.picture(30, idr: true))
        _ = b.publish(Fixture.picture(31, idr: false))
        XCTAssertEqual(drain(&b, join.id!), [30, 31])
    }

    func testFanOutSharesAndSlowReaderSkips() {
        var b = makeBroadcaster(.next)
        let fast = b.addReader().id!
        let slow = b.addReader().id!
        var skipped: [BroadcastEvent] = []
        for au in Fixture.stream(0..<40) {
            skipped += b.publish(au).filter { if case .readerSkipped = $0 { true } else { false } }
            _ = drain(&b, fast)
        }
        XCTAssertEqual(skipped.count, 1)
        guard case .readerSkipped(let who, let aus, _) = skipped.first else { return XCTFail() }
        XCTAssertEqual(who, slow)
        XCTAssertEqual(aus, 17, "frames 0...16: 533 ms queued, no later IDR to keep")
        XCTAssertEqual(b.queue(of: slow)?.stats.skips, 1)
        XCTAssertEqual(b.queue(of: fast)?.stats.skips, 0)
        // The slow reader resumes at IDR 30 with everything after it.
        XCTAssertEqual(drain(&b, slow), Array(30..<40))
    }

    func testMaxReadersRefusesAndCounts() {
        var b = makeBroadcaster(.next, maxReaders: 2)
        XCTAssertNotNil(b.addReader().id)
        let second = b.addReader().id
        XCTAssertNotNil(second)
        XCTAssertNil(b.addReader().id)
        XCTAssertEqual(b.refusedReaders, 1)
        b.removeReader(second!)
        XCTAssertNotNil(b.addReader().id)
        XCTAssertEqual(b.readerCount, 2)
    }

    /// The broadcaster finds a reader by the index it found last, or the next one: asked about
    /// readers in any order, with readers leaving in between, each answer is that reader's.
    func testReadersAskedAboutInAnyOrderAreEachFound() {
        var b = makeBroadcaster(.next)
        let ids = (0..<6).map { _ in b.addReader().id! }
        var written: [ReaderID: [UInt64]] = [:]
        let orders: [[Int]] = [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 5, 1, 4, 3], [1, 1, 3, 0]]
        for (n, au) in Fixture.stream(0..<12).enumerated() {
            _ = b.publish(au)
            if n == 4 { b.removeReader(ids[2]) }
            if n == 7 { b.removeReader(ids[0]); b.removeReader(ids[5]) }
            for index in orders[n % orders.count] { written[ids[index], default: []] += drain(&b, ids[index]) }
        }
        for index in [1, 3, 4] { written[ids[index], default: []] += drain(&b, ids[index]) }
        XCTAssertEqual(b.readerIDs, [ids[1], ids[3], ids[4]])
        for index in [1, 3, 4] { XCTAssertEqual(written[ids[index]], Array(0..<12), "reader \(index)") }
        XCTAssertEqual(written[ids[2]], Array(0..<3), "what reader 2 was given before it left, in order")
        XCTAssertNil(b.nextToWrite(ids[0]))
        XCTAssertNil(b.queue(of: ids[5]))
    }

    func testReaderWithoutProgressTimesOut() {
        var b = makeBroadcaster(.next)
        let stuck = b.addReader().id!
        let fine = b.addReader().id!
        _ = b.publish(Fixture.picture(0, idr: true))
        _ = b.nextToWrite(stuck)
        clock.advance(milliseconds: 9_000)
        _ = drain(&b, fine)
        XCTAssertEqual(b.tick(), [])
        clock.advance(milliseconds: 1_000)
        XCTAssertEqual(b.tick(), [.readerTimedOut(stuck)])
        XCTAssertNil(b.queue(of: stuck))
        XCTAssertEqual(b.readerIDs, [fine])
    }

    /// Readers in step with the stream get each unit written at once in the publish's walk:
    /// nothing stays queued for them. A reader that starts at the unit is not written at once
    /// (its start is reported with what it has queued); one that takes part of the unit has it
    /// in flight, finished by `didWrite`; one that does not take it now, or is behind, is
    /// among the waiting, with the unit queued.
    func testPublishWritesReadersInStepAtOnce() {
        var b = makeBroadcaster(.next)
        let steady = b.addReader().id!
        let partial = b.addReader().id!
        let busy = b.addReader().id!
        var calls: [ReaderID] = []
        func publish(_ au: AccessUnit, _ write: (ReaderID, QueuedAccessUnit) -> (bytes: Int, finished: Bool)?) -> Broadcaster.Publication {
            b.publish(au) { id, entry in
                calls.append(id)
                return write(id, entry)
            }
        }
        // The first IDR starts all three: none is written at once, all wait with it queued.
        let first = publish(Fixture.picture(0, idr: true)) { _, entry in (entry.byteCount, true) }
        XCTAssertEqual(calls, [])
        XCTAssertEqual(first.events.count, 3)
        XCTAssertEqual(first.waiting, [steady, partial, busy])
        for id in [steady, partial, busy] { XCTAssertEqual(drain(&b, id), [0]) }

        let unit = Fixture.picture(1, idr: false)
        let second = publish(unit) { id, entry in
            switch id {
            case steady: (entry.byteCount, true)
            case partial: (10, false)
            default: nil
            }
        }
        XCTAssertEqual(calls, [steady, partial, busy])
        XCTAssertEqual(second.events, [])
        XCTAssertEqual(second.waiting, [busy])
        XCTAssertEqual(b.queue(of: steady)?.count, 0, "written whole: nothing queued")
        XCTAssertEqual(b.queue(of: partial)?.isHeadInFlight, true, "written in part: in flight")
        XCTAssertEqual(b.queue(of: busy)?.count, 1)
        XCTAssertFalse(b.queue(of: busy)!.isHeadInFlight)

        // Behind (something queued or in flight): not written at once, the unit queued.
        calls = []
        let third = publish(Fixture.picture(2, idr: false)) { _, entry in (entry.byteCount, true) }
        XCTAssertEqual(calls, [steady])
        XCTAssertEqual(third.waiting, [partial, busy])
        b.didWrite(partial, bytes: 90, finished: true)
        XCTAssertEqual(drain(&b, partial), [2])
        XCTAssertEqual(drain(&b, busy), [1, 2])
        XCTAssertEqual(b.queue(of: steady)?.stats.skips, 0)
    }

    /// A reader written at once made progress: it does not time out while it keeps taking
    /// units, and one that takes part of a unit and then nothing does.
    func testReadersWrittenAtOnceAreTimedByTheirWrites() {
        var b = makeBroadcaster(.next)
        let steady = b.addReader().id!
        let stuck = b.addReader().id!
        _ = b.publish(Fixture.picture(0, idr: true))
        for id in [steady, stuck] { _ = drain(&b, id) }
        _ = b.publish(Fixture.picture(1, idr: false)) { id, entry in id == steady ? (entry.byteCount, true) : (5, false) }
        for n in 2..<12 {
            clock.advance(milliseconds: 1_000)
            _ = b.publish(Fixture.picture(n, idr: false)) { id, entry in id == steady ? (entry.byteCount, true) : nil }
            XCTAssertEqual(b.tick().contains(.readerTimedOut(steady)), false)
        }
        XCTAssertEqual(b.readerIDs, [steady], "the reader that took part of a unit and then nothing for 10 s")
    }
}
