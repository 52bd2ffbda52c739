import Clocks
import Capture
import Media
import X11Capture
import Foundation
import Glibc
import H264
import Pipeline
import Synchronization
import TestSupport
import Testing

/// A capture pipeline (X11Source → converter → x264) on a thread of its own, collecting
/// the access units it hands out, as the producer's capture thread does.
final class PipelineRun: Sendable {
    let control = CaptureControl()
    private let units = Mutex<[(unit: AccessUnit, receivedNs: UInt64)]>([])
    private let failure = Mutex<String?>(nil)
    private let finished = Atomic<Bool>(false)

    init(options: X11Options) {
        let thread = Thread { [self] in
            defer { finished.store(true, ordering: .releasing) }
            do {
                let source = try X11Source(options: options)
                var capture = CaptureOptions()
                capture.targetFrameRate = options.frameRate
                capture.encoder.preset = "ultrafast"
                let pipeline = CapturePipeline(source: source, options: capture, control: control) { [self] unit in
                    let now = WallClock.nanoseconds
                    units.withLock { $0.append((unit, now)) }
                }
                try pipeline.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        thread.start()
    }

    var error: String? { failure.withLock { $0 } }
    var received: [(unit: AccessUnit, receivedNs: UInt64)] { units.withLock { $0 } }

    /// Waits (at most `timeout` seconds) until `count` access units came; returns them all.
    func waitFor(_ count: Int, timeout: Double) -> [(unit: AccessUnit, receivedNs: UInt64)] {
        let end = Moment.now.addingTimeInterval(timeout)
        while received.count < count, Moment.now < end, !finished.load(ordering: .acquiring) { usleep(10_000) }
        return received
    }

    /// Stops the pipeline; true once its thread is done (false if it still runs after 10 s).
    @discardableResult
    func stop() -> Bool {
        control.stop()
        let end = Moment.now.addingTimeInterval(10)
        while !finished.load(ordering: .acquiring), Moment.now < end { usleep(10_000) }
        return finished.load(ordering: .acquiring)
    }
}

/// The timestamp SEI as it is on the wire (parsed from the access unit's NAL units, not
/// taken from the encoder's bookkeeping).
func wireTimestamp(_ unit: AccessUnit) -> StreamTimestamp? {
    unit.nalUnits.lazy.filter { $0.type == .sei }.compactMap { StreamTimestamp(sei: $0) }.first
}

/// Capture on change (`--capture damage`) under a real Xvfb: still screens send only
/// keep-alives, a change is grabbed after it happened, the region and cursor rules, a join
/// while still gets its IDR at once; `--capture fixed` stays steady.
@Suite struct X11DamageTests {
    private func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// Access units of an Annex-B file, with our own parser.
    private func accessUnits(_ file: URL) throws -> [AccessUnit] {
        var parser = AnnexBParser()
        var units = parser.push([UInt8](try Data(contentsOf: file)))
        parser.finish { units.append($0) }
        return units
    }

    @Test func stillScreenSendsOnlyKeepAlives() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("still.h264")
        let events = dir.appendingPathComponent("events.jsonl")
        // --duration is media time, which is capture time with damage: 3 s of a still screen.
        let run = try Tool.run([X11ProduceTests.nalcast, "produce", "--source", "x11:\(server.display)", "--idle-fps", "2",
                                "--duration", "3s", "--events", events.path, "-o", file.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("on change, keep-alive 2.0/s"), "\(run.stderr)")
        let units = try accessUnits(file)
        #expect((5...8).contains(units.count), "\(units.count) frames in 3 s at --idle-fps 2")
        let finished = try String(contentsOf: events, encoding: .utf8).split(separator: "\n").last { $0.contains("\"finished\"") }
        #expect(finished?.contains("\"keepAliveFrames\":\(units.count - 1)") == true, "\(finished ?? "no finished event")")
        // The first frame is the picture; every keep-alive after it is a repeat costing next to nothing.
        let first = try #require(units.first)
        #expect(first.isIDR)
        for unit in units.dropFirst() where !unit.isIDR {
            #expect(unit.byteCount * 4 < first.byteCount, "a keep-alive of \(unit.byteCount) bytes against \(first.byteCount)")
        }
        // Honest timing: the SEI's pts advances by the keep-alive interval (0.5 s), not by 1/--fps.
        let pts = units.compactMap { wireTimestamp($0)?.pts90k }
        #expect(pts.count == units.count && pts.first == 0)
        #expect(zip(pts, pts.dropFirst()).allSatisfy { $1 - $0 >= 40_000 }, "\(pts)")
        #expect(try RoundTrip.probeSizes(stream: file).count == units.count)
    }

    @Test func aPaintIsGrabbedAfterItHappened() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        // idle 0.2: the next keep-alive is 5 s away, so what comes after the paint is its grab.
        let run = PipelineRun(options: X11Options(display: server.display, drawCursor: false, captureMode: .damage, idleRate: 0.2))
        defer { run.stop() }
        #expect(run.waitFor(1, timeout: 5).count == 1, "\(run.error ?? "no first frame")")
        usleep(200_000)
        let paintedNs = WallClock.nanoseconds
        painter.fill(0xff0000, x: 100, y: 100, width: 200, height: 100)
        let units = run.waitFor(2, timeout: 4)
        try #require(units.count == 2, "no frame after the paint")
        let stamp = try #require(wireTimestamp(units[1].unit))
        #expect(stamp.captureTimeNs >= paintedNs, "captured before the paint")
        #expect(run.control.statistics().keepAliveFrames == 0)
        print("paint to capture: \(Double(Int64(stamp.captureTimeNs) - Int64(paintedNs)) / 1e6) ms, to access unit: \(Double(Int64(units[1].receivedNs) - Int64(paintedNs)) / 1e6) ms")
        let picture = try #require(try RoundTrip.decode(units.map(\.unit), width: 640, height: 480).last)
        #expect(picture.matches(x: 200, y: 150, 0xff0000), "\(picture.describe(x: 200, y: 150))")
    }

    @Test func onlyChangesInsideTheRegionCount() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        let source = try X11Source(options: X11Options(display: server.display, region: X11Region(x: 0, y: 0, width: 64, height: 64),
                                                       drawCursor: false, captureMode: .damage, idleRate: 2))
        #expect(source.captureMode == .damage && source.isChangeDriven)
        let first = try #require(try source.nextFrame())
        #expect(!first.isRepeat)
        painter.fill(0x00ff00, x: 300, y: 300, width: 100, height: 100)
        let afterOutside = try #require(try source.nextFrame())
        #expect(afterOutside.isRepeat, "a paint outside the region made a frame")
        painter.fill(0x0000ff, x: 8, y: 8, width: 16, height: 16)
        let afterInside = try #require(try source.nextFrame())
        #expect(!afterInside.isRepeat, "a paint inside the region made no frame")
        // BGRA: blue first.
        #expect(!afterInside.isRepeat && afterInside.byte(plane: 0, x: 16 * 4, y: 16) == 0xff && afterInside.byte(plane: 0, x: 16 * 4 + 2, y: 16) == 0)
        #expect(source.changedFrames == 2 && source.repeatFrames == 1)
    }

    /// Each grab carries what was drawn since the grab before as its damage (the DAMAGE region
    /// moved into an XFixes region at the grab), in the region's coordinates, and the cursor's
    /// places when it is drawn: a paint's damage is the paint, not the screen, and the picture
    /// converted from the damage alone is the picture a whole conversion gives.
    @Test func aPaintsDamageIsThePaint() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.movePointer(x: 600, y: 460)
        let source = try X11Source(options: X11Options(display: server.display, region: X11Region(x: 32, y: 16, width: 320, height: 240),
                                                       drawCursor: false, captureMode: .damage, idleRate: 0.2))
        let converter = ColorConverter(inPlace: true)
        let first = try #require(try source.nextFrame())
        let firstDamage = try #require(first.damage)
        #expect(firstDamage.picture == 1)
        _ = try converter.convert(first)
        painter.fill(0x0000ff, x: 100, y: 50, width: 40, height: 30)
        let painted = try #require(try source.nextFrame())
        #expect(!painted.isRepeat)
        let damage = try #require(painted.damage)
        #expect(damage.picture == 2)
        // Inside the region's coordinates (the paint at 68, 34 there), covering the paint, far from all of it.
        let covers = { (x: Int, y: Int) in Self.covers(damage, x: x, y: y) }
        #expect(covers(68, 34) && covers(107, 63), "\(damage)")
        #expect(damage.rects.reduce(0) { $0 + $1.width * $1.height } <= 40 * 30 * 2, "\(damage)")
        let partial = try converter.convert(painted)
        #expect(converter.partialConversions == 1)
        #expect(DamageConversionPlanes.planes(partial) == DamageConversionPlanes.planes(try ColorConverter().convert(painted)))
    }

    /// Where the cursor is drawn, its place in the grab before and in this one are damage too.
    @Test func aDrawnCursorsPlacesAreDamage() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.movePointer(x: 20, y: 20)
        let source = try Self.cornerSource(server, drawCursor: true, idleRate: 2)
        _ = try #require(try source.nextFrame())
        painter.movePointer(x: 90, y: 90)
        let moved = try #require(try source.nextFrame())
        #expect(!moved.isRepeat)
        let damage = try #require(moved.damage)
        let covers = { (x: Int, y: Int) in Self.covers(damage, x: x, y: y) }
        #expect(covers(20, 20) && covers(90, 90), "\(damage)")
        #expect(!covers(127, 0) && !covers(0, 127), "\(damage)")
    }

    /// Whether one of `damage`'s rectangles holds the pixel at x, y.
    static func covers(_ damage: FrameDamage, x: Int, y: Int) -> Bool {
        damage.rects.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }
    }

    /// Capture on change of the 128x128 top-left corner, where the pointer tests move it in.
    static func cornerSource(_ server: Xvfb, drawCursor: Bool, idleRate: Double) throws -> X11Source {
        try X11Source(options: X11Options(display: server.display, region: X11Region(x: 0, y: 0, width: 128, height: 128),
                                          drawCursor: drawCursor, captureMode: .damage, idleRate: idleRate))
    }

    @Test(arguments: [true, false])
    func aCursorMoveCountsWhenTheCursorIsDrawn(drawn: Bool) throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.movePointer(x: 500, y: 400)
        let source = try Self.cornerSource(server, drawCursor: drawn, idleRate: 2)
        #expect(source.followsPointerMotion == drawn, "Xvfb has XInput 2: pointer motion comes as events when the cursor is drawn")
        _ = try #require(try source.nextFrame())
        // A move far from the region is no change: the next frame is the keep-alive.
        painter.movePointer(x: 560, y: 420)
        let far = try #require(try source.nextFrame())
        #expect(far.isRepeat, "a move far from the region made a frame")
        // A move the way a mouse does (XTest: raw motion events) into the region.
        painter.movePointer(x: 40, y: 40)
        let next = try #require(try source.nextFrame())
        #expect(next.isRepeat == !drawn, drawn ? "a cursor move made no frame" : "a move of an undrawn cursor made a frame")
        #expect((source.pointerMotionEvents > 0) == drawn, "raw motion events: \(source.pointerMotionEvents)")
        // Same place, another shape (XFixes CursorNotify).
        painter.setRootCursor(glyph: 152)
        let reshaped = try #require(try source.nextFrame())
        #expect(reshaped.isRepeat == !drawn, drawn ? "a cursor shape change made no frame" : "a shape change of an undrawn cursor made a frame")
    }

    /// XWarpPointer makes no raw motion event: the pointer is asked at each keep-alive,
    /// and a warp into the area turns that keep-alive into a grab (no repeat before it).
    @Test func aWarpedPointerShowsAtTheNextKeepAlive() throws {
        let server = try Xvfb(width: 640, height: 480)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.warpPointer(x: 500, y: 400)
        let source = try Self.cornerSource(server, drawCursor: true, idleRate: 4)
        _ = try #require(try source.nextFrame())
        let still = try #require(try source.nextFrame())
        #expect(still.isRepeat, "a still screen made a frame")
        painter.warpPointer(x: 40, y: 40)
        let next = try #require(try source.nextFrame())
        #expect(!next.isRepeat, "a warp into the region did not show at the next keep-alive")
        #expect(source.changedFrames == 2 && source.repeatFrames == 1, "changed \(source.changedFrames), repeats \(source.repeatFrames)")
        #expect(source.pointerMotionEvents == 0, "a warp made raw motion events")
        #expect(next.sequence == 2, "frames are numbered without gaps")
    }

    @Test func aReaderJoiningWhileStillGetsItsIDRAtOnce() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        try Painter(display: server.display).fill(0x00ffff, x: 0, y: 0, width: 320, height: 240)
        let run = PipelineRun(options: X11Options(display: server.display, drawCursor: false, captureMode: .damage, idleRate: 0.2))
        defer { run.stop() }
        #expect(run.waitFor(1, timeout: 5).count == 1, "\(run.error ?? "no first frame")")
        usleep(500_000)
        // What the server does when a reader joins with --join idr.
        run.control.requestIDR()
        let units = run.waitFor(2, timeout: 8)
        try #require(units.count == 2)
        let idr = units[1].unit
        #expect(idr.isIDR, "the frame after the request is no IDR")
        // Ordering: it came before the keep-alive due 5 s after the first frame.
        let stamp = try #require(wireTimestamp(idr))
        #expect(stamp.pts90k < 5 * 90_000, "the IDR waited for the keep-alive (pts \(stamp.pts90k))")
        #expect(run.control.statistics().keepAliveFrames == 1)
        // A reader starting there decodes the picture.
        let pictures = try RoundTrip.decode([idr], width: 320, height: 240)
        #expect(pictures.count == 1 && pictures[0].matches(x: 160, y: 120, 0x00ffff))
        // POST /bitrate while still: the picture again at once, at the new bitrate.
        run.control.requestBitrate(300_000)
        let after = run.waitFor(3, timeout: 8)
        try #require(after.count == 3)
        let again = try #require(wireTimestamp(after[2].unit))
        #expect(again.pts90k < stamp.pts90k + 5 * 90_000, "the bitrate change waited for the keep-alive")
        #expect(run.control.statistics().keepAliveFrames == 2)
    }

    @Test func stopEndsAStillCaptureWithoutKeepAlives() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        // --idle-fps 0: nothing would ever wake the source but the stop.
        let run = PipelineRun(options: X11Options(display: server.display, drawCursor: false, captureMode: .damage, idleRate: 0))
        #expect(run.waitFor(1, timeout: 5).count == 1, "\(run.error ?? "no first frame")")
        usleep(300_000)
        #expect(run.stop(), "the capture thread did not end")
        #expect(run.error == nil, "\(run.error ?? "")")
        #expect(run.control.statistics().framesEncoded >= 1)
    }

    @Test func fixedCaptureIsSteady() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("fixed.h264")
        let run = try Tool.run([X11ProduceTests.nalcast, "produce", "--source", "x11:\(server.display)", "--capture", "fixed",
                                "--fps", "10", "--duration", "1s", "-o", file.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("fixed rate"), "\(run.stderr)")
        let pts = try accessUnits(file).compactMap { wireTimestamp($0)?.pts90k }
        #expect(pts == (0..<10).map { UInt64($0) * 9000 }, "\(pts)")
    }

    @Test func dryRunAndHelpNameTheCaptureMode() throws {
        let nalcast = X11ProduceTests.nalcast
        let damage = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--idle-fps", "0.5", "--dry-run"])
        #expect(damage.status == 0, "\(damage.stderr)")
        #expect(lines(damage.stdout).contains("  capture: damage idle-fps=0.5"), "\(damage.stdout)")
        let still = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--idle-fps", "0", "--dry-run"])
        #expect(lines(still.stdout).contains("  capture: damage idle-fps=0 (no keep-alive)"), "\(still.stdout)")
        let fixed = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--capture", "fixed", "--dry-run"])
        #expect(lines(fixed.stdout).contains("  capture: fixed"), "\(fixed.stdout)")
        let ignored = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--capture", "fixed", "--idle-fps", "2", "--dry-run"])
        #expect(ignored.status == 0 && ignored.stderr.contains("--idle-fps 2 is ignored"), "\(ignored.stderr)")
        let bad = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--capture", "sometimes", "--dry-run"])
        #expect(bad.status == 64 && lines(bad.stderr).count == 1 && bad.stderr.contains("expected damage or fixed"), "\(bad.stderr)")
        let badRate = try Tool.run([nalcast, "produce", "--source", "x11:4711", "--idle-fps", "-1", "--dry-run"])
        #expect(badRate.status == 64 && lines(badRate.stderr).count == 1, "\(badRate.stderr)")
        let help = try Tool.run([nalcast, "produce", "--help"])
        #expect(help.stdout.contains("--capture MODE") && help.stdout.contains("--idle-fps RATE") && help.stdout.contains("--capture fixed"), "\(help.stdout)")
    }
}

/// A picture's three planes, row by row, for comparing conversions.
enum DamageConversionPlanes {
    static func planes(_ frame: Frame) -> [[UInt8]] {
        (0..<3).map { i in
            let (w, h) = i == 0 ? (frame.width, frame.height) : (frame.width / 2, frame.height / 2)
            return (0..<h).flatMap { y in (0..<w).map { x in frame.byte(plane: i, x: x, y: y) } }
        }
    }
}
