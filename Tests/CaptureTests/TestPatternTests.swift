import TestSupport
import Capture
import Foundation
import Testing

@Suite struct TestPatternTests {
    @Test func framesCountUpWithMediaTime() throws {
        let source = try TestPatternSource(width: 320, height: 240, frameRate: FrameRate(30), realtime: false, frameLimit: 5)
        var frames: [(UInt64, UInt64)] = []
        while let frame = try source.nextFrame() {
            #expect(frame.format == .i420 && frame.width == 320 && frame.height == 240)
            frames.append((frame.sequence, frame.pts90k))
        }
        #expect(frames.map(\.0) == [0, 1, 2, 3, 4])
        #expect(frames.map(\.1) == [0, 3000, 6000, 9000, 12000])
    }

    /// The luma of the colour-bar area (top two thirds), where the sweeping bar moves.
    private func barArea(_ frame: Frame) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<(frame.height * 2 / 3) { for x in 0..<frame.width { out.append(frame.byte(plane: 0, x: x, y: y)) } }
        for y in 0..<(frame.height / 3) { for x in 0..<(frame.width / 2) { out.append(frame.byte(plane: 1, x: x, y: y)) } }
        return out
    }

    @Test func repaintingInPlaceMatchesAFreshPicture() throws {
        // One source gets its buffer back every time (draws only what moved), the other
        // never does (draws everything): the pictures must be the same.
        let reusing = try TestPatternSource(width: 320, height: 240, realtime: false)
        let fresh = try TestPatternSource(width: 320, height: 240, realtime: false)
        var held: [Frame] = []
        var previous: [UInt8]?
        for i in 0..<40 {
            let a = try #require(try reusing.nextFrame())
            let b = try #require(try fresh.nextFrame())
            held.append(b)
            let area = barArea(a)
            #expect(area == barArea(b), "frame \(i)")
            if let previous { #expect(area != previous, "frame \(i) did not move") }
            previous = area
        }
        #expect(held.count == 40)
    }

    @Test func drawsTheCounterAndClock() throws {
        let source = try TestPatternSource(width: 640, height: 360, realtime: false)
        let frame = try #require(try source.nextFrame())
        var bright = 0
        for y in (360 * 2 / 3)..<360 { for x in 0..<640 where frame.byte(plane: 0, x: x, y: y) == 235 { bright += 1 } }
        #expect(bright > 1000, "text pixels: \(bright)")
    }

    @Test func decodesWithFFmpegAsRawVideo() throws {
        // The planes are a valid I420 picture that ffmpeg reads back at the same size.
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try TestPatternSource(width: 320, height: 240, realtime: false, frameLimit: 3)
        var bytes = Data()
        while let frame = try source.nextFrame() { bytes.append(frame.buffer.base, count: PixelFormat.i420.frameByteCount(width: 320, height: 240)) }
        let url = dir.appendingPathComponent("p.yuv")
        try bytes.write(to: url)
        let probe = try Tool.run(["ffprobe", "-v", "error", "-f", "rawvideo", "-pixel_format", "yuv420p", "-video_size", "320x240",
                                  "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "default=nw=1:nk=1", url.path])
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
    }

    @Test func realtimeSkipsMissedSlotsInsteadOfQueueing() throws {
        let source = try TestPatternSource(width: 64, height: 64, frameRate: FrameRate(100), realtime: true)
        let first = try #require(try source.nextFrame())
        usleep(60_000)  // at least six slots go by
        let second = try #require(try source.nextFrame())
        #expect(second.sequence >= first.sequence + 5)
        #expect(source.skippedSlots == second.sequence - first.sequence - 1)
        #expect(second.pts90k == FrameRate(100).ticks90k(ofFrame: Int64(second.sequence)))
    }

    /// Whether every luma sample is white and every chroma sample neutral.
    private func isWhite(_ frame: Frame) -> Bool {
        for y in 0..<frame.height { for x in 0..<frame.width where frame.byte(plane: 0, x: x, y: y) != 235 { return false } }
        for plane in 1...2 {
            for y in 0..<(frame.height / 2) { for x in 0..<(frame.width / 2) where frame.byte(plane: plane, x: x, y: y) != 128 { return false } }
        }
        return true
    }

    @Test func flashWhitensTheFrameOfEachWholeSecondOfMediaTime() throws {
        // Without realtime, the flash is at whole seconds of media time: frames 0, 30, 60 at
        // 30 fps. Every other frame is the pattern as it is without the flash, also the one
        // painted right after a flash into a buffer it got back.
        let flashing = try TestPatternSource(width: 160, height: 120, frameRate: FrameRate(30), realtime: false, flash: true)
        let plain = try TestPatternSource(width: 160, height: 120, frameRate: FrameRate(30), realtime: false)
        var white: [UInt64] = []
        for i in 0..<75 {
            let a = try #require(try flashing.nextFrame())
            let b = try #require(try plain.nextFrame())
            #expect(!isWhite(b))
            if isWhite(a) { white.append(a.sequence) } else { #expect(barArea(a) == barArea(b), "frame \(i)") }
        }
        #expect(white == [0, 30, 60])
        #expect(flashing.flashes == 3)
    }

    @Test func flashAtARateThatDoesNotDivideASecondIsTheNearestFrame() throws {
        // 30000/1001: frame 30 starts at 1.001 s, frame 60 at 2.002 s, 90 at 3.003 s ...
        // frame 1000 at 33.367 s, whose second (33 s) is nearest to frame 989 (32.999 s).
        let source = try TestPatternSource(width: 64, height: 64, frameRate: FrameRate(numerator: 30000, denominator: 1001)!, realtime: false, flash: true)
        var white: [UInt64] = []
        for _ in 0..<1001 { if let f = try source.nextFrame(), isWhite(f) { white.append(f.sequence) } }
        #expect(white.count == 34)
        #expect(Array(white.prefix(4)) == [0, 30, 60, 90])
        #expect(white.contains(989) && !white.contains(990))
    }

    @Test func flashInRealtimeFallsOnAWholeSecondOfTheClock() throws {
        // The slots are laid on CLOCK_REALTIME: the white frame is captured at a whole second
        // (the bound here is loose: it only fails if the slots are not aligned at all, or
        // the machine stalls for a quarter of a second).
        let source = try TestPatternSource(width: 64, height: 64, frameRate: FrameRate(20), realtime: true, flash: true)
        var whites: [Frame] = []
        for _ in 0..<21 { if let f = try source.nextFrame(), isWhite(f) { whites.append(f) } }
        #expect(whites.count >= 1 && whites.count <= 2)
        for frame in whites {
            #expect(frame.captureTimeNs % 1_000_000_000 < 250_000_000, "captured \(frame.captureTimeNs % 1_000_000_000) ns past the second")
        }
    }

    @Test func badSizesAreRefused() {
        #expect(throws: CaptureError.oddSize(width: 321, height: 240)) { try TestPatternSource(width: 321, height: 240) }
        #expect(throws: CaptureError.badSize(width: 0, height: 240)) { try TestPatternSource(width: 0, height: 240) }
    }
}
