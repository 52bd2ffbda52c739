import Serving
import XCTest

/// Per-reader continuity counters of the TS listener: a reader that never skipped gets the
/// shared bytes; one that joined late or skipped gets every PID's counters continued.
final class TSContinuityTests: XCTestCase {
    /// TS packets of (pid, counter, payload?), 188 bytes each.
    static func packets(_ list: [(UInt16, UInt8, Bool)]) -> [UInt8] {
        var out: [UInt8] = []
        for (pid, cc, payload) in list {
            var packet = [UInt8](repeating: 0xFF, count: 188)
            packet[0] = 0x47
            packet[1] = UInt8(pid >> 8)
            packet[2] = UInt8(pid & 0xFF)
            packet[3] = (payload ? 0x10 : 0x20) | cc
            out += packet
        }
        return out
    }

    static func counters(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        stride(from: bytes.startIndex, to: bytes.endIndex, by: 188).map { bytes[$0 + 3] & 15 }
    }

    func testUnitSummarisesEachPIDsCounters() {
        let unit = TransportStreamUnit(bytes: Self.packets([(0, 3, true), (0x100, 14, true), (0x100, 15, true), (0x100, 15, false), (0x100, 0, true)]))
        XCTAssertEqual(unit.continuity, [.init(pid: 0, first: 3, next: 4), .init(pid: 0x100, first: 14, next: 1)])
    }

    func testAReaderThatFollowsGetsTheSharedBytes() {
        var reader = TSContinuity()
        let a = TransportStreamUnit(bytes: Self.packets([(0, 5, true), (0x100, 7, true), (0x100, 8, true)]))
        let b = TransportStreamUnit(bytes: Self.packets([(0x100, 9, true), (0x101, 2, true)]))
        XCTAssertEqual(reader.bytes(for: a), a.bytes)
        XCTAssertEqual(reader.bytes(for: b), b.bytes)
        XCTAssertEqual(reader.rewrittenUnits, 0)
    }

    func testASkipIsContinuedPerPIDFromThenOn() {
        var reader = TSContinuity()
        let a = TransportStreamUnit(bytes: Self.packets([(0, 5, true), (0x100, 7, true), (0x101, 1, true)]))
        // b and c skipped; d is the IDR the reader resumes at, e follows it.
        let d = TransportStreamUnit(bytes: Self.packets([(0, 9, true), (0x100, 12, true), (0x100, 12, false), (0x100, 13, true), (0x101, 6, true)]))
        let e = TransportStreamUnit(bytes: Self.packets([(0x100, 14, true), (0x101, 7, true)]))
        _ = reader.bytes(for: a)
        XCTAssertEqual(Self.counters(reader.bytes(for: d)), [6, 8, 8, 9, 2])
        XCTAssertEqual(Self.counters(reader.bytes(for: e)), [10, 3])
        XCTAssertEqual(reader.rewrittenUnits, 2)
        // The shared bytes are untouched.
        XCTAssertEqual(Self.counters(d.bytes), [9, 12, 12, 13, 6])
    }
}
