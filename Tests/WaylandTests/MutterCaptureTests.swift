import Foundation
import TestSupport
import Testing

/// `nalcast produce --source pipewire:NODE`, `portal` and `screen` against a real GNOME
/// compositor: headless mutter, its ScreenCast of a virtual monitor as the PipeWire node, a GTK
/// client painting known colours, the real xdg-desktop-portal in front of a backend that
/// answers as a user choosing the monitor. One compositor for the whole check (its start is
/// most of the cost).
@Suite struct MutterCaptureTests {
    /// `NALCAST_BINARY` when set, else the debug build next to the sources.
    static let nalcast: String = {
        if let chosen = ProcessInfo.processInfo.environment["NALCAST_BINARY"], !chosen.isEmpty { return chosen }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/nalcast").path
    }()

    @Test(.enabled(if: MutterSession.missing == nil,
                   "headless mutter needs \(MutterSession.missing ?? "") (scripts/setup installs it)"))
    func capturesMutterThroughPipeWireAndThePortal() throws {
        let session = try MutterSession(width: 640, height: 360)
        defer { session.stop() }
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try checkPipeWireNode(session, dir)
        try checkPortal(session, dir)
        try checkPointer(session, dir)
        try checkProducer(session, dir)
    }

    /// `pipewire:NODE`: the colours, a change, the end of the sharing, a node not there.
    private func checkPipeWireNode(_ session: MutterSession, _ dir: URL) throws {
        #expect(try session.paint(left: "ff0000", right: "00ff00"), "\(session.logs)")

        // The stream as the compositor sends it, a keep-alive 5 times a second while still.
        let file = dir.appendingPathComponent("screen.h264")
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:\(session.node)", "--idle-fps", "5", "-o", file.path],
                                          environment: session.environment)
        #expect(produce.waitFor("capturing PipeWire node \(session.node) (mutter)"), "\(produce.stderr)")
        #expect(produce.stderr.contains("640x360 bgra, on change, keep-alive 5.0/s at most 30 fps"), "\(produce.stderr)")
        #expect(try waitForPicture(file, left: (255, 0, 0), right: (0, 255, 0)), "\(produce.stderr)")

        // A change comes through as it happens.
        #expect(try session.paint(left: "0000ff", right: "ffffff"))
        #expect(try waitForPicture(file, left: (0, 0, 255), right: (255, 255, 255)), "\(produce.stderr)")

        // The sharing stops: produce ends its stream, says why, and exits 0.
        try session.stopCasting()
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
        let ended = produce.stderr.split(separator: "\n").filter { $0.contains("the stream ended") }
        #expect(ended.count == 1 && ended[0].hasPrefix("nalcast: pipewire: the stream ended: "), "\(produce.stderr)")
        // The stream shows the screen in order: red and green, then blue and white to its end.
        // (Its very first pictures may show mutter's window-map animation, still running when
        // capture began: the screen as it was.)
        let pictures = try decode(file, width: 640, height: 360)
        let firstRedGreen = pictures.firstIndex { matches($0, (255, 0, 0), (0, 255, 0)) }
        let firstBlueWhite = pictures.firstIndex { matches($0, (0, 0, 255), (255, 255, 255)) }
        #expect(firstRedGreen != nil && firstBlueWhite != nil && firstRedGreen! < firstBlueWhite!, "\(pictures)")
        if let firstBlueWhite {
            #expect(pictures[firstBlueWhite...].allSatisfy { matches($0, (0, 0, 255), (255, 255, 255)) }, "\(pictures)")
        }

        // A node PipeWire does not have: 66, one line naming the video nodes there are.
        try session.castAgain()
        let missing = try Background(Self.nalcast, ["produce", "--source", "pipewire:no-such-node", "-o", "/dev/null"],
                                          environment: session.environment)
        #expect(missing.wait(timeout: 20) == 66)
        let line = missing.stderr.split(separator: "\n").map(String.init)
        #expect(line.count == 1 && line[0].hasPrefix("nalcast: pipewire: PipeWire has no video node no-such-node (video nodes: "), "\(missing.stderr)")
        #expect(missing.stderr.contains("(\(session.node))"), "\(missing.stderr)")

        // GNOME has no wlroots screencopy: --source wlr says to use the portal.
        let wlr = try Background(Self.nalcast, ["produce", "--source", "wlr", "-o", "/dev/null"], environment: session.environment)
        #expect(wlr.wait(timeout: 20) == 69)
        #expect(wlr.stderr.split(separator: "\n").map(String.init) == [
            "nalcast: wlr: the compositor has no zwlr_screencopy_manager_v1 (wlroots' screencopy: sway, Hyprland, river, Wayfire; elsewhere use --source portal)",
        ], "\(wlr.stderr)")
    }

    /// `portal`: the exchange through the real xdg-desktop-portal, the choice remembered with
    /// its restore token, `screen` choosing it on Wayland, and a refusal.
    private func checkPortal(_ session: MutterSession, _ dir: URL) throws {
        let token = dir.appendingPathComponent("portal-token")
        // The session's user runs nalcast (its bus takes no one else) and writes the token here.
        session.handOver(dir.path)
        for (run, source) in ["portal", "screen"].enumerated() {
            let file = dir.appendingPathComponent("through-\(source).h264")
            let (program, arguments) = try session.asSessionUser(Self.nalcast, ["produce", "--source", source, "--portal-token", token.path,
                                                                                "--duration", "1s", "-o", file.path])
            let produce = try Background(program, arguments, environment: session.environment)
            #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)\n\(session.logs)")
            let lines = produce.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == "nalcast: portal: asking the desktop for a monitor to share (it may ask you)", "\(produce.stderr)")
            let capturing = source == "screen" ? "nalcast: capturing screen (WAYLAND_DISPLAY=wayland-nalcast: the ScreenCast portal): the screen the portal granted: "
                                               : "nalcast: capturing the screen the portal granted: "
            #expect(lines.dropFirst().first?.hasPrefix(capturing + "PipeWire node ") == true, "\(produce.stderr)")
            #expect(produce.stderr.contains("640x360 bgra, on change, keep-alive 1.0/s at most 30 fps (choice kept in \(token.path))"), "\(produce.stderr)")
            #expect(try decode(file, width: 640, height: 360).contains { matches($0, (0, 0, 255), (255, 255, 255)) }, "\(produce.stderr)")
            // The first run is asked afresh; the second gives the kept token, and the portal
            // hands its backend the choice it stored for it (no dialog for a person).
            let selected = session.portalEvents.filter { $0.hasPrefix("select ") }
            #expect(selected.count == run + 1 && selected.last == "select 1 2 2 \(run == 0 ? "fresh" : "restored")", "\(session.portalEvents)")
            let kept = (try? String(contentsOf: token, encoding: .utf8)) ?? ""
            #expect(kept.count == 37 && kept.hasSuffix("\n"), "token file: \(kept)")
        }

        // The user says no: 69 and one line saying so.
        try session.refuseNextCasts(true)
        let (program, arguments) = try session.asSessionUser(Self.nalcast, ["produce", "--source", "portal", "--portal-token", "none", "-o", "/dev/null"])
        let refused = try Background(program, arguments, environment: session.environment)
        #expect(refused.wait(timeout: 20) == 69)
        #expect(refused.stderr.split(separator: "\n").map(String.init) == [
            "nalcast: portal: asking the desktop for a monitor to share (it may ask you)",
            "nalcast: portal: the screen cast was not allowed (Start: cancelled)",
        ], "\(refused.stderr)")
    }

    @Test func saysSoWhenNoPipeWireRuns() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        environment["XDG_RUNTIME_DIR"] = dir.path
        environment["PIPEWIRE_REMOTE"] = nil
        let run = try Background(Self.nalcast, ["produce", "--source", "pipewire:42", "-o", "/dev/null"], environment: environment)
        #expect(run.wait(timeout: 20) == 69)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 1 && lines[0].hasPrefix("nalcast: pipewire: cannot connect to PipeWire: ") && lines[0].contains("is pipewire running?"),
                "\(run.stderr)")

        // No session bus: the portal cannot be asked.
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(dir.path)/no-bus"
        let portal = try Background(Self.nalcast, ["produce", "--source", "portal", "--portal-token", "none", "-o", "/dev/null"], environment: environment)
        #expect(portal.wait(timeout: 20) == 69)
        #expect(portal.stderr.split(separator: "\n").map(String.init) == [
            "nalcast: portal: asking the desktop for a monitor to share (it may ask you)",
            "nalcast: portal: no D-Bus session bus (No such file or directory): the portal needs a desktop session",
        ], "\(portal.stderr)")
    }
}
