import Media
import Delivery
import XCTest

final class SegmentPlannerTests: XCTestCase {
    typealias Unit = SegmentPlanner.Unit
    let small = Resolution(width: 640, height: 360)
    let large = Resolution(width: 1280, height: 720)

    func testSkipsUntilFirstIDR() {
        var p = SegmentPlanner()
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(0), bytes: 10)), .skip)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0.1), bytes: 10)), .start)
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(0.2), bytes: 10)), .append)
    }

    func testRotatesAtFirstIDRAtOrPastDuration() {
        var p = SegmentPlanner(config: .init(segmentDuration: .seconds(5)))
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0), bytes: 10)), .start)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(4), bytes: 10)), .append, "an IDR before 5 s stays")
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(5.5), bytes: 10)), .append, "past 5 s but not an IDR")
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(6), bytes: 10)), .rotate(.duration))
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(10.9), bytes: 10)), .append)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(11), bytes: 10)), .rotate(.duration), "exactly 5 s counts")
    }

    func testRotatesAtFirstIDRPastMaxBytes() {
        var p = SegmentPlanner(config: .init(segmentDuration: .seconds(100), maxBytes: 1000))
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0), bytes: 600)), .start)
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(1), bytes: 600)), .append)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(2), bytes: 100)), .rotate(.size))
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(3), bytes: 100)), .append)
    }

    func testRotatesOnResolutionChange() {
        var p = SegmentPlanner()
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0), bytes: 1, resolution: small)), .start)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(1), bytes: 1, resolution: small)), .append)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(2), bytes: 1, resolution: large)), .rotate(.resolutionChange))
    }

    func testReconnectRotatesAtNextIDRAndSkipsBefore() {
        var p = SegmentPlanner()
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0), bytes: 1)), .start)
        p.markReconnect()
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(0.5), bytes: 1)), .skip)
        XCTAssertEqual(p.plan(Unit(isIDR: true, mediaTime: .seconds(0.1), bytes: 1)), .rotate(.reconnect))
        XCTAssertEqual(p.plan(Unit(isIDR: false, mediaTime: .seconds(0.2), bytes: 1)), .append)
    }
}
