import Foundation
import Media
import Output
import Synchronization
import Testing

/// The audio seam of the sinks: a sink that carries no audio never sees it (said once,
/// counted); segments give each audio packet to the segment of its instant, also when it
/// arrives after the picture that cut.
@Suite struct AudioSinkTests {
    static let format = AudioFormat(extradata: [0x11, 0x90])

    static func audio(at seconds: Double) -> SinkItem {
        .audio(AudioPacket(data: [0x21, 0x10], mediaTime: .seconds(seconds)))
    }

    @Test func anAnnexBSinkNeverSeesAudioAndItIsSaidOnceAndCounted() throws {
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        let seen = SinkRunnerTests.Tally()
        let said = Names()
        let runner = SinkRunner(sink: SinkRunnerTests.Recorder(name: "stdout", seen: seen), queue: SinkQueue(policy: .wait, highWater: 1 << 20),
                                counters: SinkCounters()) { event in
            if case .audioNotCarried(let sink) = event { said.add(sink) }
        }
        #expect(!runner.carriesAudio)
        runner.push(.audioFormat(Self.format))
        for (i, u) in units.enumerated() {
            runner.push(.unit(TimedUnit(unit: u, mediaTime: .seconds(Double(i) / 25), arrivalNs: 0)))
            runner.push(Self.audio(at: Double(i) / 25))
        }
        runner.push(.audioFormat(Self.format))
        #expect(runner.finish(timeout: 30))
        #expect(said.all == ["stdout"])
        #expect(runner.counters.writtenUnits.value == UInt64(units.count))
        #expect(runner.counters.droppedAudioPackets.value == UInt64(units.count))
        #expect(runner.counters.writtenAudioPackets.value == 0)
    }

    /// Records the audio each segment was given.
    final class Writer: SegmentWriter {
        let path: String
        let log: Log
        init(path: String, log: Log) {
            self.path = path
            self.log = log
        }
        func append(_ unit: TimedUnit) throws(SinkError) { log.picture(path, unit.mediaTime) }
        func flush() throws(SinkError) -> Int { 0 }
        func finish() throws(SinkError) -> Int { 0 }
        func declare(audio format: AudioFormat) { log.declared(path) }
        func append(audio packet: AudioPacket) throws(SinkError) { log.audio(path, packet.mediaTime) }
    }

    final class Log: Sendable {
        struct Segment {
            var declared = false
            var pictures: [MediaTime] = []
            var audio: [MediaTime] = []
        }
        private let segments = Mutex<[(String, Segment)]>([])
        private func update(_ path: String, _ change: (inout Segment) -> Void) {
            segments.withLock { list in
                if let i = list.firstIndex(where: { $0.0 == path }) { change(&list[i].1) } else {
                    var s = Segment()
                    change(&s)
                    list.append((path, s))
                }
            }
        }
        func picture(_ path: String, _ t: MediaTime) { update(path) { $0.pictures.append(t) } }
        func audio(_ path: String, _ t: MediaTime) { update(path) { $0.audio.append(t) } }
        func declared(_ path: String) { update(path) { $0.declared = true } }
        var all: [Segment] { segments.withLock { $0.map(\.1) } }
    }

    @Test func segmentsTakeTheAudioOfTheirOwnInstantsEvenWhenItComesLate() throws {
        let dir = try temporaryDirectory()
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        let log = Log()
        var recovered: [SegmentRecovery.Outcome] = []
        let sink = try SegmentSink(
            config: .init(directory: dir, namer: try SegmentNamer(pattern: "seg-%n.mp4"), planner: .init(segmentDuration: .seconds(60), maxBytes: 1),
                          sync: false, format: SegmentFormat(carriesAudio: true) { (_: Int32, path: String) throws(SinkError) -> any SegmentWriter in Writer(path: path, log: log) }),
            recovered: &recovered, onEvent: { _ in })
        #expect(sink.carriesAudio)
        // Audio every 20 ms, each packet arriving 5 pictures (200 ms) after its instant, as an
        // MPEG-TS muxer gathering frames would send it; one packet before the first picture.
        var items: [SinkItem] = [.audioFormat(Self.format), Self.audio(at: -0.02)]
        var audioTime = 0.0
        let end = Double(units.count) / 25
        for (i, u) in units.enumerated() {
            let t = Double(i) / 25
            items.append(.unit(TimedUnit(unit: u, mediaTime: .seconds(t), arrivalNs: 0, resumes: i == 0)))
            while audioTime <= t - 0.2 + 1e-9 {
                items.append(Self.audio(at: audioTime))
                audioTime += 0.02
            }
        }
        while audioTime < end - 1e-9 {
            items.append(Self.audio(at: audioTime))
            audioTime += 0.02
        }
        let sent = Int((end / 0.02).rounded())
        // One more, for an instant in the first segment, long after the second began: that
        // segment is closed, so it is counted, not written into the second.
        items.append(Self.audio(at: 0))
        let report = try sink.write(items[...])
        try sink.close()
        let segments = log.all
        #expect(segments.count == 2)  // the fixture has two IDRs
        guard segments.count == 2, let cut = segments[1].pictures.first else { return }
        #expect(segments.allSatisfy { $0.declared })
        #expect(segments[0].audio.allSatisfy { $0 < cut && $0 >= .zero }, "\(segments[0].audio.filter { $0 >= cut })")
        #expect(segments[1].audio.allSatisfy { $0 >= cut })
        #expect(segments[0].audio.count + segments[1].audio.count == sent, "\(segments[0].audio.count) + \(segments[1].audio.count) of \(sent)")
        // The one before the first picture had no segment, the late one's is closed: counted
        // (the late one as the pictures' write sees it, or at the close).
        #expect(report.droppedAudio + sink.audioCountsAfterLastWrite().dropped == 2)
    }
}
