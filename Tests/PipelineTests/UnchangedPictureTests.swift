import Capture
import Media
import Pipeline
import Synchronization
import Testing

/// A change-driven source's frame whose damaged pixels are those of the picture kept (a
/// compositor sending a picture again, damage and all) is not encoded, and is counted; a frame
/// that changes one pixel is encoded; keep-alives still are.
@Suite struct UnchangedPictureTests {
    /// Scripted BGRA pictures of a screen: each step a picture (a pixel per step set to a
    /// colour) with full damage numbered in turn, or a keep-alive.
    final class Screen: FrameSource {
        enum Step { case picture([(x: Int, y: Int, blue: UInt8)]), keepAlive }
        var steps: [Step]
        var frames = ChangeDrivenFrames(idleRate: 1)
        var pixels = [UInt8](repeating: 40, count: 64 * 48 * 4)
        var damaged: UInt64 = 0
        var now: Int64 = 1_000_000_000

        init(_ steps: [Step]) { self.steps = steps }

        /// A screen of fine detail (noise-like), which x264's rate control keeps sharpening
        /// when a repeat is not said to be unchanged.
        convenience init(detailed steps: [Step]) {
            self.init(steps)
            var state: UInt64 = 7
            for i in pixels.indices {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                pixels[i] = UInt8(truncatingIfNeeded: state >> 56)
            }
        }

        var frameRate: FrameRate { FrameRate(30) }
        var width: Int { 64 }
        var height: Int { 48 }
        var pixelFormat: PixelFormat { .bgra }
        var isLive: Bool { true }
        var isChangeDriven: Bool { true }

        func nextFrame() throws -> Frame? {
            guard !steps.isEmpty else { return nil }
            now += 100_000_000
            switch steps.removeFirst() {
            case .keepAlive:
                return frames.repeated(width: 64, height: 48, format: .bgra, captureTimeNs: UInt64(now), at: now)
            case .picture(let changes):
                for change in changes { pixels[(change.y * 64 + change.x) * 4] = change.blue }
                let buffer = FrameBuffer(capacity: pixels.count)
                pixels.withUnsafeBytes { buffer.base.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: pixels.count) }
                damaged += 1
                var frame = Frame(width: 64, height: 48, format: .bgra, buffer: buffer, planes: PixelFormat.bgra.packedLayout(width: 64, height: 48),
                                  sequence: 0, captureTimeNs: UInt64(now), pts90k: 0)
                frame.damage = FrameDamage(picture: damaged, rects: [.init(x: 0, y: 0, width: 64, height: 48)])
                return frames.changed(frame, at: now)
            }
        }
    }

    @Test func aPictureSentAgainIsNotEncodedAndAChangedPixelIs() throws {
        // The first picture; the same again; one pixel in the last rows changed (the band
        // compared last); the same again; a keep-alive; a pixel in the first rows changed.
        let screen = Screen([.picture([]), .picture([]), .picture([(x: 50, y: 45, blue: 250)]), .picture([]), .keepAlive,
                             .picture([(x: 3, y: 1, blue: 0)])])
        var options = CaptureOptions()
        options.targetFrameRate = nil
        options.encoder.preset = "ultrafast"
        let units = Mutex<[UInt64]>([])
        let pipeline = CapturePipeline(source: screen, options: options) { unit in
            units.withLock { $0.append(unit.timestamp?.captureTimeNs ?? 0) }
        }
        try pipeline.run()
        let statistics = pipeline.control.statistics()
        // Steps 1, 3, 5 (the keep-alive) and 6 encoded, at their capture times; 2 and 4 not.
        let at = { (step: Int64) in UInt64(1_000_000_000 + step * 100_000_000) }
        #expect(units.withLock { $0 } == [at(1), at(3), at(5), at(6)])
        #expect(statistics.framesCaptured == 6 && statistics.framesEncoded == 4, "\(statistics)")
        #expect(statistics.unchangedFrames == 2 && statistics.keepAliveFrames == 1, "\(statistics)")
    }

    @Test func aKeepAliveIsCopiedWhole() throws {
        // The encoder is told a keep-alive changed nothing: it writes a picture of skips that
        // copies the picture before whole (`RepeatPicture`; x264, told so, copies every
        // macroblock where the preset has more than one reference), not one sharpened again
        // each time.
        let screen = Screen(detailed: [.picture([])] + Array(repeating: .keepAlive, count: 8))
        var options = CaptureOptions()
        options.targetFrameRate = nil
        options.encoder.bitrate = 2_000_000
        let sizes = Mutex<[Int]>([])
        let pipeline = CapturePipeline(source: screen, options: options) { unit in
            sizes.withLock { $0.append(unit.byteCount) }
        }
        try pipeline.run()
        let all = sizes.withLock { $0 }
        try #require(all.count == 9)
        #expect(pipeline.control.statistics().keepAliveFrames == 8)
        // Each keep-alive a picture of skips, the size of the smallest within its slice header's
        // few changing bits; x264 left to itself spends 191, 107, 91 bytes on the first three.
        let keepAlives = all.dropFirst()
        #expect(keepAlives.allSatisfy { $0 <= keepAlives.min()! + 8 }, "access unit sizes \(all)")
    }
}
