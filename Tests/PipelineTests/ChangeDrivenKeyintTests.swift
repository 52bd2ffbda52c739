import Capture
import Encoder
import Media
import Pipeline
import Synchronization
import Testing

/// `--keyint` as a time for capture on change: a changed picture that comes that long after
/// the last IDR is an IDR, however few frames came between; a still screen's keep-alives are
/// not (they count as frames only), so stillness costs no IDRs.
@Suite struct ChangeDrivenKeyintTests {
    func idrs(keyintDuration: MediaTime?) throws -> [Bool] {
        // A change at 0 and 0.5 s, keep-alives each second of a still screen, changes at
        // 3.2 and 3.4 s, keep-alives again to 7 s, a change at 7.1 s.
        let steps: [(Double, Bool)] = [(0, false), (0.5, false), (1.5, true), (2.5, true), (3.2, false), (3.4, false),
                                       (4.4, true), (5.4, true), (6.4, true), (7.1, false)]
        let source = try ScriptedPattern(steps.map { ScriptedPattern.Step(seconds: $0.0, isRepeat: $0.1) }, changeDriven: true)
        var options = CaptureOptions()
        options.targetFrameRate = nil
        options.encoder.preset = "ultrafast"
        options.encoder.keyint = 60
        options.encoder.keyintDuration = keyintDuration
        let units = Mutex<[Bool]>([])
        let pipeline = CapturePipeline(source: source, options: options) { unit in units.withLock { $0.append(unit.isIDR) } }
        try pipeline.run()
        return units.withLock { $0 }
    }

    @Test func aChangeTwoSecondsAfterTheLastIDRIsAnIDR() throws {
        let got = try idrs(keyintDuration: .seconds(2))
        #expect(got == [true, false, false, false, true, false, false, false, false, true], "\(got)")
    }

    @Test func withAKeyintInFramesOnlyTheFirstIsAnIDR() throws {
        let got = try idrs(keyintDuration: nil)
        #expect(got == [true] + Array(repeating: false, count: 9), "\(got)")
    }
}
