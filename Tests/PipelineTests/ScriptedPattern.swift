import Capture
import Media

/// The test pattern's pictures at scripted media times, live, as a screen source gives them:
/// each step's time, whether it is a repeat (a keep-alive of a still screen), and, where
/// given, its frame number (a gap: frames the source skipped while the encoder was late).
/// Capture times follow the media times.
final class ScriptedPattern: FrameSource {
    struct Step {
        var seconds: Double
        var isRepeat = false
        var sequence: UInt64?
    }

    let pattern: TestPatternSource
    var script: [Step]
    let isChangeDriven: Bool

    init(_ script: [Step], changeDriven: Bool = false) throws {
        pattern = try TestPatternSource(width: 64, height: 64, realtime: false)
        self.script = script
        isChangeDriven = changeDriven
    }

    var frameRate: FrameRate { FrameRate(30) }
    var width: Int { 64 }
    var height: Int { 64 }
    var pixelFormat: PixelFormat { pattern.pixelFormat }
    var isLive: Bool { true }

    func nextFrame() throws -> Frame? {
        guard !script.isEmpty, var frame = try pattern.nextFrame() else { return nil }
        let step = script.removeFirst()
        frame.pts90k = UInt64(step.seconds * 90_000)
        frame.captureTimeNs = 1_000_000_000 + UInt64(step.seconds * 1e9)
        frame.isRepeat = step.isRepeat
        if let sequence = step.sequence { frame.sequence = sequence }
        return frame
    }
}
