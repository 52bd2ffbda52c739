import Delivery
import XCTest

/// A WebRTC viewer's pacing: a cached GOP at four times real time, live units not held.
final class CatchUpPacerTests: XCTestCase {
    func testACachedGOPGoesOutAtFourTimesItsMediaTime() {
        var pacer = CatchUpPacer()
        XCTAssertEqual(pacer.sent(pts90k: 900_000), 0, "the first (the IDR) holds nothing")
        var held: UInt64 = 0
        for frame in 1...120 { held += pacer.sent(pts90k: 900_000 + UInt64(frame) * 3000) }
        XCTAssertEqual(held, 120 * 8_333_333, "four seconds of pictures in one (33_333_333 ns a frame, a quarter of it, in whole ns)")
    }

    func testTheGOPSentAgainAndAJumpHoldLittle() {
        var pacer = CatchUpPacer(speed: 4, maxStepNs: 100_000_000)
        _ = pacer.sent(pts90k: 900_000)
        XCTAssertEqual(pacer.sent(pts90k: 3000), 0, "back to the cached IDR: at once")
        XCTAssertEqual(pacer.sent(pts90k: 6000), 8_333_333)
        XCTAssertEqual(pacer.sent(pts90k: 90_000 * 3600), 25_000_000, "an hour ahead: one step's hold at most")
    }
}
