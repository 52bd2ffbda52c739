import Delivery
import XCTest

/// A WebRTC viewer's pacing: a cached GOP at four times real time, live units not held, and
/// a timer that fires late not slowing the pace.
final class CatchUpPacerTests: XCTestCase {
    /// `pts90k` sent `afterNs` after the pacer's last hold ran out (a timer that fired late,
    /// or a live unit that came later), at once when it held nothing (the server writes on).
    private struct Caller {
        var pacer: CatchUpPacer
        var nowNs: UInt64 = 1_000_000_000
        var lastHold: UInt64 = 0

        init(_ pacer: CatchUpPacer = CatchUpPacer()) { self.pacer = pacer }

        mutating func send(_ pts90k: UInt64, afterNs: UInt64 = 0) -> UInt64 {
            nowNs += lastHold + afterNs
            lastHold = pacer.sent(pts90k: pts90k, nowNs: nowNs)
            return lastHold
        }
    }

    func testACachedGOPGoesOutAtFourTimesItsMediaTime() {
        var caller = Caller()
        XCTAssertEqual(caller.send(900_000), 0, "the first (the IDR) holds nothing")
        var held: UInt64 = 0
        for frame in 1...120 { held += caller.send(900_000 + UInt64(frame) * 3000) }
        XCTAssertEqual(held, 120 * 8_333_333, "four seconds of pictures in one (33_333_333 ns a frame, a quarter of it, in whole ns)")
    }

    func testTheGOPSentAgainAndAJumpHoldLittle() {
        var caller = Caller(CatchUpPacer(speed: 4, maxStepNs: 100_000_000))
        _ = caller.send(900_000)
        XCTAssertEqual(caller.send(3000), 0, "back to the cached IDR: at once")
        XCTAssertEqual(caller.send(6000), 8_333_333)
        XCTAssertEqual(caller.send(90_000 * 3600), 25_000_000, "an hour ahead: one step's hold at most")
    }

    /// A loaded machine's timer fires 20 ms late each time it runs, more than a step (8.3 ms):
    /// the units it owes go at once, so the cached GOP still goes out in its quarter of its
    /// media time (plus the last lateness), not at 33 ms / 28.3 ms, barely faster than live.
    func testALateTimerDoesNotSlowThePace() {
        var caller = Caller()
        let start = caller.nowNs
        _ = caller.send(900_000)
        for frame in 1...120 { _ = caller.send(900_000 + UInt64(frame) * 3000, afterNs: caller.lastHold > 0 ? 20_000_000 : 0) }
        let end = caller.nowNs + caller.lastHold
        XCTAssertLessThanOrEqual(end - start, 120 * 8_333_333 + 20_000_000)
        XCTAssertGreaterThanOrEqual(end - start, 120 * 8_333_333)
    }

    /// Live units, a frame interval apart, are never held; a backlog after them (the input
    /// stalled, then came at once) is paced again once what the schedule may be behind
    /// (`maxBehindNs`, less the step after the last live unit) is sent.
    func testLiveUnitsAreNotHeldAndABacklogAfterThemIsPaced() {
        var caller = Caller()
        _ = caller.send(0)
        for frame in 1...30 { XCTAssertEqual(caller.send(UInt64(frame) * 3000, afterNs: 33_333_333 - caller.lastHold), 0, "live frame \(frame)") }
        var atOnce = 0
        for frame in 31...60 where caller.send(UInt64(frame) * 3000) == 0 { atOnce += 1 }
        XCTAssertEqual(atOnce, 11, "the 100 ms the schedule may be behind less one step, 8.3 ms a unit, then paced")
    }
}
