import Foundation
import TestSupport
import Testing

/// `nalcast produce --source wlr` against a real wlroots compositor: headless sway (pixman,
/// as `nobody`), its output painted by swaybg and changed and resized through swaymsg, and
/// `wlr:NAME` with a second output. One compositor for each check.
@Suite struct WlrCaptureTests {
    @Test(.enabled(if: SwaySession.missing == nil, "headless sway needs \(SwaySession.missing ?? "") (scripts/setup installs sway and swaybg)"))
    func capturesSwayOnChangeFollowsAResizeAndEndsWithTheCompositor() throws {
        let session = try SwaySession(size: "640x360")
        defer { session.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("sway.h264")
        let produce = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr", "--idle-fps", "5", "-o", file.path],
                                     environment: session.environment)
        #expect(produce.waitFor("capturing wlroots screencopy first output, 640x360, screencopy v3, on change, keep-alive 5.0/s at most 30 fps"),
                "\(produce.stderr)\n\(session.log)")
        #expect(try waitForPicture(file, left: (255, 0, 0), right: (255, 0, 0)), "\(produce.stderr)")

        // A change comes through; a new output size is followed by pictures of that size.
        #expect(try session.command(["output", "HEADLESS-1", "bg", "#0000ff", "solid_color"]) == 0)
        #expect(try waitForPicture(file, left: (0, 0, 255), right: (0, 0, 255)), "\(produce.stderr)")
        #expect(try session.command(["output", "HEADLESS-1", "mode", "800x600"]) == 0)
        #expect(produce.waitFor("wlr: the output is now 800x600"), "\(produce.stderr)")
        try Wait.until(timeout: 20, every: 0.2) { try pictureSizes(file).last == "800x600" }
        let sizes = try pictureSizes(file)
        #expect(sizes.first == "640x360" && sizes.last == "800x600", "\(sizes)")
        #expect(sizes.firstIndex(of: "800x600").map { sizes[$0...].allSatisfy { $0 == "800x600" } } == true, "\(sizes)")

        // The compositor exits: produce ends its stream, says why, and exits 0.
        session.stop()
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
        let ended = produce.stderr.split(separator: "\n").filter { $0.contains("the stream ended") }
        #expect(ended == ["nalcast: wlr: the stream ended: the compositor closed the connection (it exited)"], "\(produce.stderr)")
    }

    /// A window changing on the still red desktop: sway's damage is the window's, and only that
    /// is converted into the picture kept (ColorConverter, FrameDamage). Each change shows in
    /// the window, and the desktop around it stays red: damage put at the wrong place, or
    /// a kept picture that was not the copy before, would show the old colours or lose the red.
    @Test(.enabled(if: SwaySession.missing == nil, "headless sway needs \(SwaySession.missing ?? "") (scripts/setup installs sway and swaybg)"))
    func aWindowsDamageAloneIsConvertedAndTheRestKept() throws {
        let session = try SwaySession(size: "640x360")
        defer { session.stop() }
        let client = try session.startWindow(size: (200, 120), position: (100, 100))
        defer { client.stop(timeout: 2) }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("window.h264")
        let produce = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr", "--no-cursor", "--idle-fps", "5", "-o", file.path],
                                     environment: session.environment)
        #expect(produce.waitFor("capturing wlroots screencopy first output, 640x360"), "\(produce.stderr)\n\(session.log)")
        // The window's content lies within x 100-300, y 100-220 (a title bar above it, at most
        // 40 pixels): boxes well inside its halves, and desktop boxes well outside it.
        let left = (x: 130, y: 170, w: 30, h: 20), right = (x: 240, y: 170, w: 30, h: 20)
        let desktop = [(x: 20, y: 20, w: 60, h: 40), (x: 400, y: 250, w: 200, h: 80), (x: 320, y: 120, w: 40, h: 40)]
        for (l, r, lc, rc) in [("0000ff", "00ff00", (0, 0, 255), (0, 255, 0)), ("ffff00", "00ffff", (255, 255, 0), (0, 255, 255)),
                               ("ffffff", "000000", (255, 255, 255), (0, 0, 0)), ("00ff00", "0000ff", (0, 255, 0), (0, 0, 255))] {
            try session.paint(left: l, right: r)
            let shown = try waitForLastPicture(file) { picture in
                pixelsOff(picture, width: 640, box: left, from: lc) == 0 && pixelsOff(picture, width: 640, box: right, from: rc) == 0
                    && desktop.allSatisfy { pixelsOff(picture, width: 640, box: $0, from: (255, 0, 0)) == 0 }
            }
            #expect(shown, "\(l) \(r) not shown in the window with the desktop red around it\n\(produce.stderr)")
        }
        produce.signal(SIGINT)
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
    }

    /// `wlr:NAME` takes the output of that name: a second output (`create_output`, HEADLESS-2)
    /// painted another colour than the first shows which was captured; `wlr` alone keeps the
    /// first; a name the compositor does not have is 66 and one line listing those it has.
    @Test(.enabled(if: SwaySession.missing == nil, "headless sway needs \(SwaySession.missing ?? "") (scripts/setup installs sway and swaybg)"))
    func capturesTheOutputNamed() throws {
        let session = try SwaySession(size: "640x360")
        defer { session.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try session.command(["create_output"]) == 0, "\(session.log)")
        #expect(try session.command(["output", "HEADLESS-2", "mode", "640x360", "bg", "#00ff00", "solid_color"]) == 0, "\(session.log)")

        let unknown = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr:NOPE", "-o", "/dev/null"], environment: session.environment)
        #expect(unknown.wait(timeout: 20) == 66, "\(unknown.stderr)")
        #expect(unknown.stderr.split(separator: "\n").map(String.init) == [
            "nalcast: wlr: the compositor has no output NOPE (it has HEADLESS-1, HEADLESS-2)",
        ], "\(unknown.stderr)")

        let second = dir.appendingPathComponent("second/out.h264"), first = dir.appendingPathComponent("first/out.h264")
        for file in [second, first] { try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true) }
        let named = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr:HEADLESS-2", "-o", second.path], environment: session.environment)
        let plain = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr", "-o", first.path], environment: session.environment)
        #expect(named.waitFor("capturing wlroots screencopy output HEADLESS-2, 640x360,"), "\(named.stderr)\n\(session.log)")
        #expect(try waitForPicture(second, left: (0, 255, 0), right: (0, 255, 0)), "\(named.stderr)")
        #expect(plain.waitFor("capturing wlroots screencopy first output, 640x360,"), "\(plain.stderr)")
        #expect(try waitForPicture(first, left: (255, 0, 0), right: (255, 0, 0)), "\(plain.stderr)")
        // No picture of the named output's stream was ever the first output's red (and there
        // are pictures: an undecodable file is no pass).
        let pictures = try decode(second, width: 640, height: 360)
        #expect(!pictures.isEmpty && pictures.allSatisfy { !matches($0, (255, 0, 0), (255, 0, 0)) }, "\(pictures)")

        session.stop()
        #expect(named.wait(timeout: 20) == 0, "\(named.stderr)")
        #expect(plain.wait(timeout: 20) == 0, "\(plain.stderr)")
    }

    @Test func saysSoWhenThereIsNoCompositor() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        environment["XDG_RUNTIME_DIR"] = dir.path
        environment["WAYLAND_DISPLAY"] = "wayland-9"
        let run = try Background(MutterCaptureTests.nalcast, ["produce", "--source", "wlr", "-o", "/dev/null"], environment: environment)
        #expect(run.wait(timeout: 20) == 69)
        #expect(run.stderr.split(separator: "\n").map(String.init) == [
            "nalcast: wlr: cannot connect to the Wayland compositor wayland-9: No such file or directory",
        ], "\(run.stderr)")
    }
}
