import Capture
import Media
import Pipeline
import Synchronization
import Testing

/// `--duration` when the encoder was late at the end: a live source that skipped frames
/// shows it as a gap in its sequence numbers, and the first frame after the gap may already
/// lie past the end. The skipped frames that fell inside the duration are counted as late
/// drops all the same, so that every slot of the run is encoded or counted.
@Suite struct DurationEndTests {
    /// Frames with these numbers at these media times.
    static func source(_ frames: [(sequence: UInt64, seconds: Double)]) throws -> ScriptedPattern {
        try ScriptedPattern(frames.map { ScriptedPattern.Step(seconds: $0.seconds, sequence: $0.sequence) })
    }

    /// 0.4 s at 30 fps is 12 slots: frames 0-9 come on time, then the source skipped 10-14
    /// (the encoder was late) and gives frame 15 at 0.5 s, past the end. Of the skipped ones,
    /// 10 and 11 (0.333 and 0.367 s) lay inside the 0.4 s: 10 encoded + 2 late = 12.
    @Test func theSkippedFramesBeforeTheEndAreCountedLate() throws {
        let source = try Self.source((0..<10).map { (UInt64($0), Double($0) / 30) } + [(15, 0.5)])
        var options = CaptureOptions()
        options.encoder.preset = "ultrafast"
        options.durationLimit = 0.4
        let units = Mutex(0)
        let pipeline = CapturePipeline(source: source, options: options) { _ in units.withLock { $0 += 1 } }
        try pipeline.run()
        let statistics = pipeline.control.statistics()
        #expect(statistics.framesEncoded == 10 && units.withLock { $0 } == 10, "\(statistics)")
        #expect(statistics.droppedLate == 2 && statistics.droppedRate == 0, "\(statistics)")
        #expect(statistics.framesEncoded + statistics.droppedTotal == 12, "\(statistics)")
    }

    /// A gap wholly inside the duration is the pacer's, as before: counted once, not again
    /// at the end.
    @Test func aGapBeforeTheEndIsCountedOnce() throws {
        let source = try Self.source([(0, 0), (1, 1.0 / 30), (5, 5.0 / 30), (6, 6.0 / 30), (7, 7.0 / 30), (9, 0.3)])
        var options = CaptureOptions()
        options.encoder.preset = "ultrafast"
        options.durationLimit = 0.25
        let pipeline = CapturePipeline(source: source, options: options) { _ in }
        try pipeline.run()
        let statistics = pipeline.control.statistics()
        // 0.25 s is slots 0-7: 0, 1, 5, 6, 7 encoded, 2-4 late in the gap; 8 (0.267 s) is past it.
        #expect(statistics.framesEncoded == 5 && statistics.droppedLate == 3, "\(statistics)")
    }
}
