import H264
import Media
import Output
import Synchronization
import Testing

/// When segments cannot be as long as asked: said once, from the spacing of the first two
/// IDRs of a connection, in media time.
@Suite struct IDRSpacingCheckTests {
    /// The fixture's IDR access unit at `seconds` (resuming the stream when `resumes`).
    static func idr(at seconds: Double, resumes: Bool = false) throws -> TimedUnit {
        let idr = try #require(try Fixtures.accessUnits("FRExt1_Panasonic.avc").first { $0.isIDR })
        return TimedUnit(unit: idr, mediaTime: .seconds(seconds), arrivalNs: 0, resumes: resumes)
    }

    @Test func aSegmentLengthThatIsNoMultipleOfTheIDRSpacingIsFoundOnce() throws {
        let found = Mutex<[IDRSpacingCheck.Finding]>([])
        let check = IDRSpacingCheck(segmentDuration: 5) { finding in found.withLock { $0.append(finding) } }
        for t in [0.0, 2, 4, 6] { check.note(try Self.idr(at: t)) }
        #expect(found.withLock { $0 } == [IDRSpacingCheck.Finding(asked: 5, actual: 6, spacing: 2)])
    }

    @Test func aMultipleOrANearMultipleIsNotFound() throws {
        #expect(IDRSpacingCheck.segmentLength(asked: 6, idrSpacing: 2) == nil)
        // 29.97 fps streams put IDRs at 2.002 s: 6.006 s segments are what was asked.
        #expect(IDRSpacingCheck.segmentLength(asked: 6, idrSpacing: 2.002) == nil)
        #expect(IDRSpacingCheck.segmentLength(asked: 1, idrSpacing: 4) == 4)
    }

    @Test func aReconnectStartsOver() throws {
        let found = Mutex<[IDRSpacingCheck.Finding]>([])
        let check = IDRSpacingCheck(segmentDuration: 5) { finding in found.withLock { $0.append(finding) } }
        check.note(try Self.idr(at: 0))
        // The next connection's first IDR does not pair with the last one of the connection before.
        check.note(try Self.idr(at: 0.5, resumes: true))
        #expect(found.withLock { $0 }.isEmpty)
        check.note(try Self.idr(at: 4.5))
        #expect(found.withLock { $0 } == [IDRSpacingCheck.Finding(asked: 5, actual: 8, spacing: 4)])
    }
}
