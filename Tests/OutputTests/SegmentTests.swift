import Media
import Output
import Foundation
import H264
import Synchronization
import Testing

/// SegmentSink on real fixture access units, SegmentRecovery on a torn `.part`, names.
@Suite struct SegmentTests {
    static func received(_ units: [AccessUnit], fps: Double = 25) -> [SinkItem] {
        units.enumerated().map { i, u in .unit(TimedUnit(unit: u, mediaTime: .seconds(Double(i) / fps), arrivalNs: 0, resumes: i == 0)) }
    }

    @Test func segmentsStartAtIDRsAndConcatenateToTheInput() throws {
        let dir = try temporaryDirectory()
        let input = try Fixtures.bytes("FRExt1_Panasonic.avc")
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        var recovered: [SegmentRecovery.Outcome] = []
        let sink = try SegmentSink(
            config: .init(directory: dir, namer: try SegmentNamer(pattern: "seg-%n.h264"), planner: .init(segmentDuration: .seconds(60), maxBytes: 1)),
            recovered: &recovered, onEvent: { _ in })
        let items = Self.received(units)
        _ = try sink.write(items[...])
        try sink.close()
        let names = files(in: dir)
        #expect(names == ["seg-00001.h264", "seg-00002.h264"])  // the fixture has two IDRs
        var joined: [UInt8] = []
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
            var parser = AnnexBParser()
            let first = (parser.push(bytes) + parser.finish()).first
            #expect(first?.isEntryPoint == true, "\(name) does not start with SPS, PPS and an IDR")
            joined += bytes
        }
        #expect(joined == input)
        #expect(recovered.isEmpty)
    }

    @Test func nothingBeforeTheFirstIDRIsWrittenAndKeepDeletesTheOldest() throws {
        let dir = try temporaryDirectory()
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        var recovered: [SegmentRecovery.Outcome] = []
        let closed = ClosedSegments()
        let sink = try SegmentSink(
            config: .init(directory: dir, namer: try SegmentNamer(pattern: "s%n"), planner: .init(segmentDuration: .seconds(60), maxBytes: 1), keep: 1),
            recovered: &recovered, onEvent: { if case .closed(let info) = $0 { closed.add(info) } })
        // Start after the first IDR: the P pictures before the second IDR are skipped.
        let report = try sink.write(Self.received(Array(units.dropFirst()))[...])
        try sink.close()
        let idr2 = units.firstIndex { $0.isIDR && $0.nalUnits.first?.wire != units[0].nalUnits.first?.wire }!
        #expect(report.units == units.count - idr2)
        #expect(files(in: dir) == ["s00001"])
        #expect(closed.infos.count == 1)
        #expect(closed.infos.first?.frames == units.count - idr2)
    }

    @Test func recoveryCutsATornPartAtItsLastCompleteAccessUnit() throws {
        let dir = try temporaryDirectory()
        let input = try Fixtures.bytes("HCAFR1_HHI.264")
        let units = try Fixtures.accessUnits("HCAFR1_HHI.264")
        // What a killed writer leaves: four complete access units recorded in the index,
        // then half of the fifth.
        let complete = units[0..<4].reduce(0) { $0 + $1.byteCount }
        let torn = complete + units[4].byteCount / 2
        try Data(input[0..<torn]).write(to: URL(fileURLWithPath: dir + "/a.h264.part"))
        var index = Data()
        for length in [units[0].byteCount, complete] { withUnsafeBytes(of: UInt64(length).littleEndian) { index.append(contentsOf: $0) } }
        index.append(contentsOf: [1, 2, 3])  // a torn index record is ignored too
        try index.write(to: URL(fileURLWithPath: dir + "/a.h264.part.idx"))
        // And a part with nothing complete in it.
        try Data(input[0..<100]).write(to: URL(fileURLWithPath: dir + "/b.h264.part"))

        let outcomes = try SegmentRecovery.recover(directory: dir)
        #expect(outcomes.count == 2)
        #expect(outcomes.first?.keptBytes == complete)
        #expect(outcomes.first?.droppedBytes == torn - complete)
        #expect(files(in: dir) == ["a.h264"])
        let recovered = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/a.h264")))
        #expect(recovered == Array(input[0..<complete]))
        var parser = AnnexBParser()
        #expect((parser.push(recovered) + parser.finish()).count == 4)
    }

    @Test func namesUseStrftimeAndTheSequenceAndStayInTheirDirectory() throws {
        let namer = try SegmentNamer(pattern: "%Y-%n-%D.h264")
        let name = namer.name(time: 86_400 * 365, sequence: 42)
        #expect(name.contains("-00042-"))
        #expect(!name.contains("/"))
        #expect(name.hasPrefix("1971") || name.hasPrefix("1970"))
        #expect(throws: SegmentNameError.self) { try SegmentNamer(pattern: "../x%n") }
        #expect(throws: SegmentNameError.self) { try SegmentNamer(pattern: "..") }
        #expect(throws: SegmentNameError.self) { try SegmentNamer(pattern: "x.part") }
        #expect(throws: SegmentNameError.self) { try SegmentNamer(pattern: "") }
    }

    @Test func hookCommandsSplitLikeWordsWithoutAShell() {
        #expect(ChildProcess.split("mv -n 'a b' \"c d\" $HOME;") == ["mv", "-n", "a b", "c d", "$HOME;"])
        #expect(ChildProcess.split("  ") == [])
    }
}

/// Segment events collected across threads.
final class ClosedSegments: Sendable {
    private let list = Mutex<[SegmentSink.SegmentInfo]>([])
    func add(_ info: SegmentSink.SegmentInfo) { list.withLock { $0.append(info) } }
    var infos: [SegmentSink.SegmentInfo] { list.withLock { $0 } }
}
