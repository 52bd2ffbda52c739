import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A headless GNOME compositor for the Wayland tests: `mutter --headless --virtual-monitor
/// --wayland --no-x11` with PipeWire and WirePlumber on a private D-Bus session
/// (`dbus-run-session`), all run as `nobody` (a compositor wants no root) with
/// XDG_RUNTIME_DIR in a directory of its own, and a GTK client that paints the monitor's two
/// halves in known colours and holds a ScreenCast of it (Tests/Fixtures/wayland/). Started
/// once for a suite, stopped by its PID (the whole process group).
public final class MutterSession: @unchecked Sendable {
    // Set in init, and `node` again only by `castAgain`, which the test's own thread calls;
    // `process` stops itself safely from any thread (deinit may run on another).
    public let directory: URL
    public let size: (width: Int, height: Int)
    /// The PipeWire node of the ScreenCast of the monitor.
    public private(set) var node = 0
    private let process: ServerProcess
    private let eventsURL: URL

    /// The programs it needs (scripts/setup installs them); the tests skip, saying so, without.
    public static let programs = ["mutter", "pipewire", "wireplumber", "pw-cli", "dbus-run-session", "setpriv", "gdbus",
                                  "/usr/libexec/xdg-desktop-portal"]

    /// The first of `programs` missing here, nil when all are; GTK's introspection data too.
    public static var missing: String? {
        for program in programs where (try? ServerProcess.locate(program)) == nil { return program }
        let gtk = "/usr/lib/\(architecture)-linux-gnu/girepository-1.0/Gtk-3.0.typelib"
        return FileManager.default.fileExists(atPath: gtk) ? nil : "gir1.2-gtk-3.0"
    }

    private static var architecture: String {
        var info = utsname()
        uname(&info)
        return withUnsafeBytes(of: info.machine) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
    }

    public init(width: Int = 640, height: Int = 360, timeout: Double = 60) throws {
        size = (width, height)
        directory = try MediaServerDirectory.make("mutter")
        eventsURL = directory.appendingPathComponent("events")
        process = ServerProcess(name: "mutter", logURL: directory.appendingPathComponent("session.log"))
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/wayland")
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        let (uid, gid) = (user.pointee.pw_uid, user.pointee.pw_gid)
        // Copies run by their interpreters, never executed (SwaySession says why).
        for name in ["mutter-session.sh", "mutter-client.py", "portal-backend.py"] {
            let target = directory.appendingPathComponent(name)
            try FileManager.default.copyItem(at: fixtures.appendingPathComponent(name), to: target)
            chown(target.path, uid, gid)
        }
        guard chown(directory.path, uid, gid) == 0 else {
            throw MediaServerError("chown \(directory.path) to nobody: \(String(cString: strerror(errno)))")
        }
        var environment = ["XDG_RUNTIME_DIR": directory.path, "HOME": directory.path]
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"] { environment[key] = "" }
        try process.start("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--",
                                      try ServerProcess.locate("dbus-run-session"), "--", "/bin/bash",
                                      directory.appendingPathComponent("mutter-session.sh").path, directory.path, "\(width)x\(height)"],
                          directory: directory, environment: environment)
        guard let line = waitForEvent(prefix: "node ", timeout: timeout), let node = Int(line.dropFirst(5)) else {
            stop()
            throw MediaServerError("mutter: no ScreenCast node within \(Int(timeout)) s\n" + logs)
        }
        self.node = node
    }

    deinit {
        stop()
        MediaServerDirectory.discard(directory)
    }

    public func stop() { process.stop(timeout: 3) }

    /// What nalcast needs in its environment to reach this session's PipeWire (and none of
    /// the test run's `NALCAST_*`, which nalcast would take as options).
    public var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        env["XDG_RUNTIME_DIR"] = directory.path
        env["WAYLAND_DISPLAY"] = "wayland-nalcast"
        env["DBUS_SESSION_BUS_ADDRESS"] = (try? String(contentsOf: directory.appendingPathComponent("bus"), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        env["HOME"] = directory.path
        env["XDG_STATE_HOME"] = directory.appendingPathComponent("state").path
        env["DISPLAY"] = nil
        return env
    }

    /// Paints the monitor's halves (RRGGBB each) and waits until the client has drawn them.
    @discardableResult
    public func paint(left: String, right: String, timeout: Double = 20) throws -> Bool {
        let before = events.count
        try send("colors \(left) \(right)")
        return waitForEvent(prefix: "drawn \(left) \(right)", after: before, timeout: timeout) != nil
    }

    /// `program arguments` run as the session's user (`nobody`), as the portal needs: the
    /// session bus takes only its own user's connections.
    public func asSessionUser(_ program: String, _ arguments: [String]) throws -> (String, [String]) {
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        return (try ServerProcess.locate("setpriv"),
                ["--reuid=\(user.pointee.pw_uid)", "--regid=\(user.pointee.pw_gid)", "--clear-groups", "--", program] + arguments)
    }

    /// Makes `path` (a file the session's user must write, in a directory of the test) theirs.
    public func handOver(_ path: String) {
        guard let user = getpwnam("nobody") else { return }
        chown(path, user.pointee.pw_uid, user.pointee.pw_gid)
    }

    /// What the ScreenCast portal's backend was asked (`select ...`, `start NODE`), in order.
    public var portalEvents: [String] { events.filter { $0.hasPrefix("select ") || $0.hasPrefix("start ") } }

    /// The portal's backend answers the next Start as a user who closed the dialog.
    public func refuseNextCasts(_ refuse: Bool) throws {
        let answer = directory.appendingPathComponent("portal-answer")
        try (refuse ? "cancel\n" : "allow\n").write(to: answer, atomically: true, encoding: .utf8)
    }

    /// Stops the ScreenCast session: its PipeWire stream ends.
    public func stopCasting() throws { try send("stop") }

    /// A new ScreenCast session of the monitor; `node` is its node. `kind` "metadata": the
    /// pointer comes as cursor metadata (`movePointer` moves it).
    public func castAgain(_ kind: String = "", timeout: Double = 20) throws {
        let before = events.count
        try send(kind.isEmpty ? "cast" : "cast \(kind)")
        guard let line = waitForEvent(prefix: "node ", after: before, timeout: timeout), let node = Int(line.dropFirst(5)) else {
            throw MediaServerError("mutter: no new ScreenCast node within \(Int(timeout)) s\n" + logs)
        }
        self.node = node
    }

    /// Moves the pointer (the virtual pointer of the "metadata" cast) to (x, y) on the monitor.
    public func movePointer(x: Int, y: Int, timeout: Double = 20) throws {
        let before = events.count
        try send("pointer \(x) \(y)")
        guard waitForEvent(prefix: "pointer \(x) \(y)", after: before, timeout: timeout) != nil else {
            throw MediaServerError("mutter: the pointer did not move within \(Int(timeout)) s\n" + logs)
        }
    }

    /// The cursor modes the portal's backend offers (AvailableCursorModes: 1 hidden, 2
    /// embedded, 4 metadata; 3 until set). xdg-desktop-portal reads them at its start: it is
    /// stopped (by its PID) and the session starts it again; returns once the new one owns
    /// the portal's name and offers them.
    ///
    /// Nothing may call the portal while its name has no owner: the bus would start one
    /// itself from the system's service file (no backend, none of the test's settings), which
    /// then holds the name against the session's. So the wait is on the session's new PID
    /// owning the name, asked of the bus (which starts nothing), and the modes read once.
    public func offerCursorModes(_ modes: Int, timeout: Double = 20) throws {
        try "\(modes)\n".write(to: directory.appendingPathComponent("cursor-modes"), atomically: true, encoding: .utf8)
        try "\n".write(to: directory.appendingPathComponent("portal-restart"), atomically: true, encoding: .utf8)
        handOver(directory.appendingPathComponent("portal-restart").path)
        let pidFile = directory.appendingPathComponent("portal.pid")
        func portalPID() -> Int32? {
            (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        guard let old = portalPID(), kill(old, SIGTERM) == 0 else { throw MediaServerError("no xdg-desktop-portal to restart\n" + logs) }
        func gdbus(_ dest: String, _ path: String, _ method: String, _ arguments: [String]) throws -> String {
            let (program, prefix) = try asSessionUser("/usr/bin/env", [
                "DBUS_SESSION_BUS_ADDRESS=\(environment["DBUS_SESSION_BUS_ADDRESS"] ?? "")", "gdbus", "call", "--session",
                "--dest", dest, "--object-path", path, "--method", method])
            return try Tool.run([program] + prefix + arguments).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let deadline = Moment.now.addingTimeInterval(timeout)
        var owner = ""
        while true {
            if let new = portalPID(), new != old {
                owner = try gdbus("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
                                  ["org.freedesktop.portal.Desktop"])
                if owner == "(uint32 \(new),)" { break }
            }
            guard Moment.now < deadline else {
                throw MediaServerError("the restarted xdg-desktop-portal (was PID \(old)) does not own its name (owner: \(owner))\n" + logs)
            }
            usleep(50_000)
        }
        let offered = try gdbus("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.DBus.Properties.Get",
                                ["org.freedesktop.portal.ScreenCast", "AvailableCursorModes"])
        guard offered == "(<uint32 \(modes)>,)" else { throw MediaServerError("the portal offers cursor modes \(offered), not \(modes)\n" + logs) }
    }

    private func send(_ line: String) throws {
        let fd = open(directory.appendingPathComponent("control").path, O_WRONLY | O_NONBLOCK)
        guard fd >= 0 else { throw MediaServerError("mutter client's control FIFO: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw MediaServerError("writing to the mutter client failed") }
    }

    private var events: [String] {
        ((try? String(contentsOf: eventsURL, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Waits for an event line of the client (it appends them to a file; read again each 20 ms).
    private func waitForEvent(prefix: String, after: Int = 0, timeout: Double) -> String? {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            if let line = events.dropFirst(after).first(where: { $0.hasPrefix(prefix) }) { return line }
            if ServerProcess.hasExited(process.processIdentifier) { return nil }
            usleep(20_000)
        }
        return nil
    }

    /// The session's logs, for failure messages.
    public var logs: String {
        ["session.log", "mutter.log", "client.log", "pipewire.log", "portal.log", "backend.log"].map { name in
            "--- \(name)\n" + String(((try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "").suffix(1500))
        }.joined(separator: "\n")
    }
}
