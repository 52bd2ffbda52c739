@testable import Capture
@testable import X11Capture
import Foundation
import H264
import Testing

/// The known picture: a dark grey screen with a colour in each corner and white in the
/// middle, all different, so that a swapped R/B, a mirrored or a shifted image fails.
private enum Scene {
    static let background: UInt32 = 0x202020
    static let red: UInt32 = 0xff0000
    static let green: UInt32 = 0x00ff00
    static let blue: UInt32 = 0x0000ff
    static let yellow: UInt32 = 0xffff00
    static let white: UInt32 = 0xffffff

    /// Paints a 320x240 screen: 96x64 corners, a 64x48 white block at (128, 96).
    static func paint(_ painter: Painter) {
        painter.fill(background, x: 0, y: 0, width: 320, height: 240)
        painter.fill(red, x: 0, y: 0, width: 96, height: 64)
        painter.fill(green, x: 224, y: 0, width: 96, height: 64)
        painter.fill(blue, x: 0, y: 176, width: 96, height: 64)
        painter.fill(yellow, x: 224, y: 176, width: 96, height: 64)
        painter.fill(white, x: 128, y: 96, width: 64, height: 48)
    }
}

@Suite struct X11CaptureTests {
    @Test(arguments: [true, false])
    func wholeScreenColoursAtTheirPlaces(sharedMemory: Bool) throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        Scene.paint(try Painter(display: server.display))
        let log = LogLines()
        let source = try X11Source(options: X11Options(display: server.display, drawCursor: false, useSharedMemory: sharedMemory, captureMode: .fixed),
                                   log: log.closure)
        #expect(source.width == 320 && source.height == 240)
        #expect(source.pixelFormat == .bgra)
        let units = try RoundTrip.encode(source, count: 3)
        #expect(source.usesSharedMemory == sharedMemory)
        let fallbackLines = log.all.filter { $0.contains("not using MIT-SHM") }
        #expect(fallbackLines.count == (sharedMemory ? 0 : 1), "\(log.all)")

        let pictures = try RoundTrip.decode(units, width: 320, height: 240)
        #expect(pictures.count == 3)
        let picture = try #require(pictures.last)
        let checks: [(Int, Int, UInt32)] = [
            (48, 32, Scene.red), (272, 32, Scene.green), (48, 208, Scene.blue), (272, 208, Scene.yellow),
            (160, 120, Scene.white), (160, 40, Scene.background), (8, 120, Scene.background),
            // next to edges: a shift of a few pixels fails
            (90, 58, Scene.red), (102, 32, Scene.background), (230, 6, Scene.green), (218, 6, Scene.background),
        ]
        for (x, y, colour) in checks {
            #expect(picture.matches(x: x, y: y, colour), "\(picture.describe(x: x, y: y)) should be \(String(colour, radix: 16))")
        }
    }

    @Test func regionHasItsSizeAndOffset() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        Scene.paint(try Painter(display: server.display))
        let region = X11Region(x: 64, y: 32, width: 192, height: 160)  // screen 64..<256, 32..<192
        let source = try X11Source(options: X11Options(display: server.display, region: region, drawCursor: false, captureMode: .fixed))
        #expect(source.width == 192 && source.height == 160)
        let units = try RoundTrip.encode(source, count: 2)
        #expect(try RoundTrip.probeSizes(units) == ["192x160", "192x160"])
        let picture = try #require(try RoundTrip.decode(units, width: 192, height: 160).last)
        // Region coordinates = screen coordinates - (64, 32).
        let checks: [(Int, Int, UInt32)] = [
            (8, 8, Scene.red), (26, 26, Scene.red), (38, 8, Scene.background),
            (184, 8, Scene.green), (166, 8, Scene.green), (154, 8, Scene.background),
            (8, 154, Scene.blue), (8, 138, Scene.background),
            (184, 154, Scene.yellow),
            (96, 88, Scene.white), (100, 20, Scene.background),
        ]
        for (x, y, colour) in checks {
            #expect(picture.matches(x: x, y: y, colour), "\(picture.describe(x: x, y: y)) should be \(String(colour, radix: 16))")
        }
    }

    /// Pixels in a 48x48 box around (cx, cy) farther than 48 from the background on any channel.
    private func cursorPixels(_ picture: DecodedPicture, around cx: Int, _ cy: Int, background: UInt32) -> Int {
        var count = 0
        for y in Swift.max(0, cy - 24)..<Swift.min(picture.height, cy + 24) {
            for x in Swift.max(0, cx - 24)..<Swift.min(picture.width, cx + 24) where !picture.matches(x: x, y: y, background, tolerance: 48) {
                count += 1
            }
        }
        return count
    }

    @Test func cursorIsDrawnWhereThePointerIsUnlessTurnedOff() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        let background: UInt32 = 0x3060a0
        painter.fill(background, x: 0, y: 0, width: 320, height: 240)
        painter.warpPointer(x: 100, y: 100)
        let region = X11Region(x: 64, y: 32, width: 192, height: 160)  // pointer at (36, 68) in the region

        let with = try X11Source(options: X11Options(display: server.display, region: region, drawCursor: true, captureMode: .fixed))
        let withPicture = try #require(try RoundTrip.decode(RoundTrip.encode(with, count: 2), width: 192, height: 160).last)
        let without = try X11Source(options: X11Options(display: server.display, region: region, drawCursor: false, captureMode: .fixed))
        let withoutPicture = try #require(try RoundTrip.decode(RoundTrip.encode(without, count: 2), width: 192, height: 160).last)

        #expect(cursorPixels(withPicture, around: 36, 68, background: background) > 20)
        #expect(cursorPixels(withPicture, around: 150, 120, background: background) == 0, "cursor drawn away from the pointer")
        #expect(cursorPixels(withoutPicture, around: 36, 68, background: background) == 0)
    }

    @Test func screenResizeChangesTheFrameSizeMidStream() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.fill(Scene.red, x: 0, y: 0, width: 640, height: 480)
        let added = try server.run(["xrandr", "--newmode", "320x240", "1", "320", "321", "322", "323", "240", "241", "242", "243"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try server.run(["xrandr", "--addmode", "screen", "320x240"]).status == 0)

        let log = LogLines()
        let source = try X11Source(options: X11Options(display: server.display, drawCursor: false, captureMode: .fixed), log: log.closure)
        var sizes: [String] = []
        let units = try RoundTrip.encode(source, count: 9) { index in
            if index > 0 { sizes.append("\(source.width)x\(source.height)") }
            if index == 3 {
                // Shrink: the old-size grab would fail; the new size must be taken.
                let r = try? server.run(["xrandr", "--output", "screen", "--mode", "320x240"])
                #expect(r?.status == 0, "\(r?.stderr ?? "")")
                painter.fill(Scene.green, x: 0, y: 0, width: 320, height: 240)
            }
            if index == 6 {
                // Grow back: a larger segment is needed.
                let r = try? server.run(["xrandr", "--output", "screen", "--mode", "640x480"])
                #expect(r?.status == 0, "\(r?.stderr ?? "")")
                painter.fill(Scene.blue, x: 0, y: 0, width: 640, height: 480)
            }
        }
        sizes.append("\(source.width)x\(source.height)")
        #expect(sizes == ["640x480", "640x480", "640x480", "320x240", "320x240", "320x240", "640x480", "640x480", "640x480"])
        #expect(source.resizes == 2)
        #expect(log.all.contains { $0.contains("320x240") }, "\(log.all)")
        #expect(units.count == 9)
        #expect(try RoundTrip.probeSizes(units) == sizes)
        #expect(units.indices.filter { units[$0].isIDR } == [0, 3, 6], "new SPS/PPS and IDR at each size change")

        let small = try RoundTrip.decode(Array(units[3..<6]), width: 320, height: 240)
        #expect(small.count == 3)
        #expect(small.last?.matches(x: 160, y: 120, Scene.green) == true, "\(small.last?.describe(x: 160, y: 120) ?? "")")
        let large = try RoundTrip.decode(Array(units[6...]), width: 640, height: 480)
        #expect(large.last?.matches(x: 600, y: 440, Scene.blue) == true, "\(large.last?.describe(x: 600, y: 440) ?? "")")
    }

    @Test func staticScreenStreamsSteadilyAndLateCallsSkipSlots() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let source = try X11Source(options: X11Options(display: server.display, frameRate: FrameRate(30), captureMode: .fixed))
        var sequences: [UInt64] = []
        var pts: [UInt64] = []
        for _ in 0..<4 {
            let frame = try #require(try source.nextFrame())
            sequences.append(frame.sequence)
            pts.append(frame.pts90k)
        }
        // Every slot taken while the caller keeps up: nothing skipped on a static screen.
        #expect(sequences == [0, 1, 2, 3])
        #expect(pts == [0, 3000, 6000, 9000])
        #expect(source.skippedSlots == 0)

        usleep(300_000)  // at least 9 slots of 33 ms go by
        let late = try #require(try source.nextFrame())
        #expect(late.sequence >= 8, "late call should skip to the newest due slot, got \(late.sequence)")
        #expect(source.skippedSlots == late.sequence - 4)
        let next = try #require(try source.nextFrame())
        #expect(next.sequence == late.sequence + 1, "skipped slots are not queued")
    }

    @Test func regionOutsideTheScreenIsABadRegion() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        for region in [X11Region(x: 300, y: 200, width: 64, height: 64), X11Region(x: 0, y: 0, width: 322, height: 240)] {
            do {
                _ = try X11Source(options: X11Options(display: server.display, region: region))
                Issue.record("region \(region) accepted on a 320x240 screen")
            } catch {
                #expect(error == .regionOutsideScreen(region: region, screenWidth: 320, screenHeight: 240))
                #expect(error.isBadRegion && !error.isUnavailable)
                #expect(error.description.contains("outside the 320x240 screen"))
            }
        }
    }

    @Test func missingDisplayIsUnavailable() throws {
        for display in [":4711", "not a display"] {
            do {
                _ = try X11Source(options: X11Options(display: display))
                Issue.record("connected to \(display)")
            } catch {
                guard case .cannotConnect(let name, _) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(name == display)
                #expect(error.isUnavailable && !error.isBadRegion)
                #expect(!error.description.contains("\n"))
            }
        }
        for (explicit, environment) in [(nil, nil), ("", "")] as [(String?, String?)] {
            #expect {
                try X11Connection.displayName(explicit: explicit, environment: environment)
            } throws: { error in
                guard case .noDisplay = error as? X11Error else { return false }
                return true
            }
        }
        #expect(try X11Connection.displayName(explicit: nil, environment: ":3") == ":3")
        #expect(try X11Connection.displayName(explicit: ":1", environment: ":3") == ":1")
    }
}
