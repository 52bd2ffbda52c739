import Clocks
import H264
import Delivery
import XCTest

/// The fan-out core carries what a server made of each access unit for its readers without
/// reading it: each form found by its type, through the GOP cache as through live queues.
final class WireFormsTests: XCTestCase {
    struct Packets: Sendable, Equatable { let bytes: [UInt8] }
    struct Segment: Sendable, Equatable { let name: String }

    func testEachFormIsFoundByItsTypeAndReplacedByOneOfTheSameType() {
        var forms = WireForms()
        XCTAssertTrue(forms.isEmpty)
        XCTAssertNil(forms[Packets.self])
        forms.add(Packets(bytes: [1]))
        forms.add(Segment(name: "a"))
        forms.add(Packets(bytes: [2]))
        XCTAssertEqual(forms[Packets.self], Packets(bytes: [2]))
        XCTAssertEqual(forms[Segment.self], Segment(name: "a"))
        XCTAssertNil(forms[Int.self])
        // The first form is kept apart from the rest: a later one is replaced as well.
        forms.add(Segment(name: "b"))
        XCTAssertEqual(forms[Segment.self], Segment(name: "b"))
        XCTAssertEqual(forms[Packets.self], Packets(bytes: [2]))
        XCTAssertFalse(forms.isEmpty)
    }

    /// A form that is a class is kept as it is (the same object comes back, no box), found
    /// and replaced by its type beside forms that are not.
    func testAClassFormIsKeptAsItIs() {
        final class Shared: Sendable { let n: Int; init(_ n: Int) { self.n = n } }
        var forms = WireForms()
        let one = Shared(1)
        forms.add(one)
        forms.add(Packets(bytes: [1]))
        XCTAssertTrue(forms[Shared.self] === one)
        XCTAssertEqual(forms[Packets.self], Packets(bytes: [1]))
        let two = Shared(2)
        forms.add(two)
        XCTAssertTrue(forms[Shared.self] === two, "replaced by one of the same type")
        XCTAssertEqual(forms[Packets.self], Packets(bytes: [1]))
        var classFirst = WireForms()
        classFirst.add(Packets(bytes: [3]))
        classFirst.add(one)
        XCTAssertTrue(classFirst[Shared.self] === one, "found after a form that is not a class")
        XCTAssertNil(WireForms()[Shared.self])
        // Added where its type is only known to be Sendable, taken out where it is known to
        // be this class, and the other way round: the same form either way.
        func addAny<Form: Sendable>(_ form: Form, to forms: inout WireForms) { forms.add(form) }
        func takeAny<Form: Sendable>(_ type: Form.Type, from forms: WireForms) -> Form? { forms[type] }
        var generic = WireForms()
        addAny(one, to: &generic)
        XCTAssertTrue(generic[Shared.self] === one)
        XCTAssertTrue(takeAny(Shared.self, from: forms) === two)
        XCTAssertEqual(takeAny(Packets.self, from: forms), Packets(bytes: [1]))
    }

    func testPublishedFormsReachLiveReadersAndTheCachedGOPsJoiners() {
        var b = Broadcaster(config: BroadcasterConfig(joinPolicy: .gop), clock: ManualClock())
        let live = try! XCTUnwrap(b.addReader().id)
        for frame in 0..<3 {
            var forms = WireForms()
            forms.add(Packets(bytes: [UInt8(frame)]))
            _ = b.publish(Fixture.picture(frame, idr: frame == 0), forms: forms)
        }
        let late = try! XCTUnwrap(b.addReader().id)
        for id in [live, late] {
            XCTAssertEqual(b.queue(of: id)?.queued.map { $0.forms[Packets.self]?.bytes }, [[0], [1], [2]])
        }
        _ = b.publish(Fixture.picture(3, idr: false))
        XCTAssertNil(b.queue(of: late)?.queued.last?.forms[Packets.self], "a unit published without forms has none")
    }
}
