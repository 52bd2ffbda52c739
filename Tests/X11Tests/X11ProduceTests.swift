import X11Capture
import Capture
import TestSupport
import Foundation
import Testing

/// `nalcast produce --source x11:DISPLAY` end to end: the stream decodes at the screen
/// size, and each X11 failure is one line with its exit code.
@Suite struct X11ProduceTests {
    /// `NALCAST_BINARY` when set, else the debug build next to the sources.
    static let nalcast: String = {
        if let chosen = ProcessInfo.processInfo.environment["NALCAST_BINARY"], !chosen.isEmpty { return chosen }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/nalcast").path
    }()

    private func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    @Test func producesTheScreenAndMapsErrorsToExitCodes() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.fill(0x00ff00, x: 0, y: 0, width: 320, height: 240)
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("screen.h264")

        let ok = try Tool.run([Self.nalcast, "produce", "--source", "x11:\(server.display)", "--capture", "fixed", "--frames", "5", "-o", file.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stderr.contains("capturing X11 display \(server.display) (320x240), whole screen 320x240+0+0, MIT-SHM, cursor, fixed rate"), "\(ok.stderr)")
        #expect(try RoundTrip.probeSizes(stream: file) == Array(repeating: "320x240", count: 5))

        let region = try Tool.run([Self.nalcast, "produce", "--source", "x11:\(server.display)", "--region", "300,200,64x64", "--frames", "1", "-o", "/dev/null"])
        #expect(region.status == 64)
        #expect(lines(region.stderr) == ["nalcast: x11: region 64x64+300+200 is outside the 320x240 screen"])

        let badRegion = try Tool.run([Self.nalcast, "produce", "--source", "x11:\(server.display)", "--region", "0,0,63x64", "--dry-run"])
        #expect(badRegion.status == 64)
        #expect(lines(badRegion.stderr).count == 1 && badRegion.stderr.contains("bad region '0,0,63x64'"), "\(badRegion.stderr)")

        // What users type: the display number alone after x11: (no second colon).
        let number = String(server.display.dropFirst())
        let bare = try Tool.run([Self.nalcast, "produce", "--source", "x11:\(number)", "--capture", "fixed", "--frames", "2", "-o", file.path])
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(bare.stderr.contains("capturing X11 display \(server.display) (320x240)"), "\(bare.stderr)")
        #expect(try RoundTrip.probeSizes(stream: file) == Array(repeating: "320x240", count: 2))

        // A display that is not there: the line says which are (ours among them) and what to try.
        let absent = (4711...).first { !X11Displays.local().contains($0) }!
        let noServer = try Tool.run([Self.nalcast, "produce", "--source", "x11::\(absent)", "--frames", "1", "-o", "/dev/null"])
        #expect(noServer.status == 69)
        #expect(lines(noServer.stderr).count == 1, "\(noServer.stderr)")
        #expect(noServer.stderr.contains("cannot open display :\(absent): no X server there; X servers here: "), "\(noServer.stderr)")
        #expect(noServer.stderr.contains("\(server.display)") && noServer.stderr.contains("(try --source x11:"), "\(noServer.stderr)")

        // A screen the display does not have.
        let noScreen = try Tool.run([Self.nalcast, "produce", "--source", "x11:\(number).3", "--frames", "1", "-o", "/dev/null"])
        #expect(noScreen.status == 69)
        #expect(lines(noScreen.stderr) == ["nalcast: x11: cannot open display \(server.display).3: no screen 3: display \(server.display) has screen 0 only (try --source x11:\(number))"])

        let noDisplay = try Tool.run(["-u", "DISPLAY", Self.nalcast, "produce", "--source", "x11", "--frames", "1", "-o", "/dev/null"])
        #expect(noDisplay.status == 69)
        #expect(lines(noDisplay.stderr).count == 1, "\(noDisplay.stderr)")
        #expect(noDisplay.stderr.hasPrefix("nalcast: x11: no display: DISPLAY is not set and no --source x11:DISPLAY given; X servers here: "), "\(noDisplay.stderr)")
        #expect(noDisplay.stderr.contains("\(server.display)"), "\(noDisplay.stderr)")
    }

    /// `--duration` ends a capture on change even when no frame comes: a still screen with
    /// the keep-alive off (`--idle-fps 0`) gives its one picture and the run ends at the limit.
    @Test func durationEndsAStillCaptureWithoutKeepAlives() throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("still.h264")
        let run = try Tool.run(["timeout", "20", Self.nalcast, "produce", "--source", "x11:\(server.display)", "--idle-fps", "0",
                                "--duration", "1s", "-o", file.path])
        #expect(run.status == 0, "exit \(run.status) (124: still running at 20 s)\n\(run.stderr)")
        #expect(try RoundTrip.probeSizes(stream: file) == ["320x240"])
    }
}
