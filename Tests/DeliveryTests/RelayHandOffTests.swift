import Clocks
import Media
import Delivery
import Synchronization
import XCTest

/// The pure parts of `consume`'s relay: pacing a file at its media time, media times that
/// never go back, and the hand-off without an encoder.
final class MediaPacerTests: XCTestCase {
    let second: UInt64 = 1_000_000_000

    func testAccessUnitsAreDueAtTheirMediaTimeFromTheFirst() {
        var pacer = MediaPacer()
        let start: UInt64 = 5 * second
        XCTAssertEqual(pacer.delay(for: .seconds(10), nowNs: start), 0, "the first one is due at once")
        // Read ahead of time: wait for the rest of its media time.
        XCTAssertEqual(pacer.delay(for: .seconds(11), nowNs: start), second)
        XCTAssertEqual(pacer.delay(for: .seconds(11.5), nowNs: start + second), second / 2)
        // Already due (the reader was a little slow): at once, no catching up later.
        XCTAssertEqual(pacer.delay(for: .seconds(12), nowNs: start + 2 * second + 100_000_000), 0)
        XCTAssertEqual(pacer.delay(for: .seconds(13), nowNs: start + 2 * second + 100_000_000), second - 100_000_000)
        XCTAssertEqual(pacer.reanchors, 0)
    }

    func testAThirtyFrameSecondTakesASecond() {
        var pacer = MediaPacer()
        var now: UInt64 = 0
        for frame in 0..<31 {
            now += pacer.delay(for: MediaTime(ticks: Int64(frame) * 3000), nowNs: now)
        }
        XCTAssertEqual(now, second)
    }

    func testATimeGoingBackOrJumpingFarAheadStartsAgainInsteadOfStalling() {
        var pacer = MediaPacer(maxLeadNs: 2 * second, maxLagNs: second)
        _ = pacer.delay(for: .seconds(100), nowNs: 0)
        XCTAssertEqual(pacer.delay(for: .seconds(50), nowNs: 10), 0, "backwards: a new anchor")
        XCTAssertEqual(pacer.delay(for: .seconds(51), nowNs: 10), second, "timed from the new anchor")
        XCTAssertEqual(pacer.delay(for: .seconds(3600), nowNs: 10), 0, "an hour ahead: not an hour's wait")
        XCTAssertEqual(pacer.delay(for: .seconds(3601), nowNs: 10), second)
        XCTAssertEqual(pacer.reanchors, 2)
    }

    func testFarBehindStartsAgainRatherThanBurst() {
        var pacer = MediaPacer(maxLeadNs: 2 * second, maxLagNs: second)
        _ = pacer.delay(for: .zero, nowNs: 0)
        // The reader thread stalled for 5 s: what comes next goes at once, and what follows
        // is paced from there, not handed on in a burst.
        XCTAssertEqual(pacer.delay(for: .seconds(0.1), nowNs: 5 * second), 0)
        XCTAssertEqual(pacer.reanchors, 1)
        XCTAssertEqual(pacer.delay(for: .seconds(0.2), nowNs: 5 * second), second / 10)
    }

    func testAResumeAfterADiscontinuityStartsAgain() {
        var pacer = MediaPacer()
        _ = pacer.delay(for: .seconds(1), nowNs: 0)
        XCTAssertEqual(pacer.delay(for: .seconds(1.5), nowNs: 0, resumes: true), 0)
        XCTAssertEqual(pacer.delay(for: .seconds(2), nowNs: 0), second / 2)
    }
}

final class RisingMediaTimeTests: XCTestCase {
    func testRisingTimesPassAsTheyAre() {
        var times = RisingMediaTime()
        XCTAssertEqual([0, 3000, 6000, 9000].map { times.pts90k(for: MediaTime(ticks: $0)) }, [0, 3000, 6000, 9000])
    }

    func testASourceThatStartsAgainGoesOnOneFrameAfterTheLast() {
        var times = RisingMediaTime()
        // 25 fps (3600 ticks), then the producer restarts at 0.
        let before = [900_000, 903_600, 907_200].map { times.pts90k(for: MediaTime(ticks: $0)) }
        let after = [0, 3600, 7200].map { times.pts90k(for: MediaTime(ticks: $0)) }
        XCTAssertEqual(before, [900_000, 903_600, 907_200])
        XCTAssertEqual(after, [910_800, 914_400, 918_000])
    }
}

final class RelayResyncingHandOffTests: XCTestCase {
    /// A hand-off whose receiver takes `room` access units, then refuses until emptied.
    final class Receiver: Sendable {
        let taken = Mutex<[(isIDR: Bool, pts: UInt64?)]>([])
        let room = Mutex(3)
        let lost = Atomic<Int>(0)
        let reports = Mutex<[String]>([])
        let idrRequests = Atomic<Int>(0)

        func take(_ unit: AccessUnit, _ pts: UInt64?) -> Bool {
            room.withLock { (room: inout Int) -> Bool in
                guard room > 0 else { return false }
                room -= 1
                taken.withLock { $0.append((isIDR: unit.isIDR, pts: pts)) }
                return true
            }
        }

        func handOff(requestIDR: Bool) -> ResyncingHandOff {
            var ask: (@Sendable () -> Void)?
            if requestIDR { ask = { @Sendable in _ = self.idrRequests.add(1, ordering: .relaxed) } }
            return ResyncingHandOff(
                send: { unit, pts in self.take(unit, pts) },
                hasRoom: { self.room.withLock { $0 > 0 } },
                requestIDR: ask,
                countLost: { _ = self.lost.add(1, ordering: .relaxed) },
                report: { report in self.reports.withLock { $0.append("\(report)") } })
        }
    }

    func testWithoutAnEncoderAGapLastsToTheStreamsNextIDRAndEveryUnitIsCounted() {
        let receiver = Receiver()
        let handOff = receiver.handOff(requestIDR: false)
        let units = Fixture.stream(0..<45, gop: 15)
        for (i, unit) in units.enumerated() {
            // The serving thread catches up at frame 20 (room for everything after).
            if i == 20 { receiver.room.withLock { $0 = 100 } }
            handOff.hand(unit, pts90k: UInt64(i) * 3000)
        }
        let taken = receiver.taken.withLock { $0 }
        // Frames 0-2 went; 3 was refused, 4-14 held; the IDR at 15 was refused too (still
        // full), 16-29 held; the stream resumed at the IDR at 30.
        XCTAssertEqual(taken.count, 3 + 15)
        XCTAssertEqual(taken[3].isIDR, true)
        XCTAssertEqual(taken[3].pts, 30 * 3000, "the media time goes with each unit")
        XCTAssertEqual(handOff.lost, 27)
        XCTAssertEqual(receiver.lost.load(ordering: .relaxed), 27)
        XCTAssertEqual(receiver.reports.withLock { $0 }, ["gapOpened", "resumed(lostAccessUnits: 27)"])
        XCTAssertEqual(receiver.idrRequests.load(ordering: .relaxed), 0)
    }

    func testWithAnEncoderAnIDRIsAskedForOnceThereIsRoom() {
        let receiver = Receiver()
        let handOff = receiver.handOff(requestIDR: true)
        for unit in Fixture.stream(0..<5, gop: 100) { handOff.hand(unit) }
        XCTAssertEqual(receiver.idrRequests.load(ordering: .relaxed), 0, "no room: asking would only make costly IDRs")
        receiver.room.withLock { $0 = 100 }
        handOff.hand(Fixture.picture(5, idr: false))
        XCTAssertEqual(receiver.idrRequests.load(ordering: .relaxed), 1)
        handOff.hand(Fixture.picture(6, idr: false))
        XCTAssertEqual(receiver.idrRequests.load(ordering: .relaxed), 1, "asked once per gap")
    }

    func testAfterCloseNothingMoreIsHandedOnAndTheLastMessageGoesOnce() {
        let receiver = Receiver()
        receiver.room.withLock { $0 = 100 }
        let handOff = receiver.handOff(requestIDR: false)
        handOff.hand(Fixture.picture(0, idr: true))
        let ends = Atomic<Int>(0)
        handOff.close { _ = ends.add(1, ordering: .relaxed) }
        handOff.close { _ = ends.add(1, ordering: .relaxed) }
        handOff.hand(Fixture.picture(1, idr: false))
        XCTAssertTrue(handOff.isClosed)
        XCTAssertEqual(ends.load(ordering: .relaxed), 1)
        XCTAssertEqual(receiver.taken.withLock { $0.count }, 1)
        XCTAssertEqual(handOff.lost, 0, "what comes after the end is not a loss")
    }
}

final class RelayedMediaTimeTests: XCTestCase {
    func testReadersGetThePublishedMediaTimeElseTheTimestampSEIs() {
        var b = Broadcaster(config: BroadcasterConfig(joinPolicy: .gop), clock: ManualClock())
        _ = b.publish(Fixture.picture(0, idr: true, timestamp: false), pts90k: 123_000)
        _ = b.publish(Fixture.picture(1, idr: false), pts90k: 999_000)
        _ = b.publish(Fixture.picture(2, idr: false))
        _ = b.publish(Fixture.picture(3, idr: false, timestamp: false))
        let id = try! XCTUnwrap(b.addReader().id)
        var times: [UInt64?] = []
        while let unit = b.nextUnitToWrite(id) {
            times.append(unit.pts90k)
            b.didWrite(id, bytes: unit.byteCount, finished: true)
        }
        XCTAssertEqual(times, [123_000, 999_000, 6000, nil])
    }
}
