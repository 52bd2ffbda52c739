import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A headless sway for the Wayland tests (`WLR_BACKENDS=headless WLR_RENDERER=pixman`, one
/// output painted red by swaybg), run as `nobody` (sway refuses root) with XDG_RUNTIME_DIR in
/// a directory of its own (Tests/Fixtures/wayland/sway-session.sh). Started once for a suite,
/// stopped by its PID (the process group).
public final class SwaySession: @unchecked Sendable {
    // Every property is set in init and never changed; `process` stops itself safely from
    // any thread (deinit may run on another).
    public let directory: URL
    public let display: String
    private let ipc: String
    private let process: ServerProcess

    /// The programs it needs (scripts/setup installs them); the tests skip, saying so, without.
    public static var missing: String? {
        ["sway", "swaybg", "swaymsg", "setpriv"].first { (try? ServerProcess.locate($0)) == nil }
    }

    public init(size: String = "640x360", timeout: Double = 30) throws {
        directory = try MediaServerDirectory.make("sway")
        process = ServerProcess(name: "sway", logURL: directory.appendingPathComponent("session.log"))
        let script = directory.appendingPathComponent("sway-session.sh")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/wayland/sway-session.sh"), to: script)
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        let (uid, gid) = (user.pointee.pw_uid, user.pointee.pw_gid)
        chown(script.path, uid, gid)
        guard chown(directory.path, uid, gid) == 0 else { throw MediaServerError("chown \(directory.path): \(String(cString: strerror(errno)))") }
        try process.start("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", script.path, directory.path, size],
                          directory: directory, environment: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
        let deadline = Date().addingTimeInterval(timeout)
        let events = directory.appendingPathComponent("events")
        while !((try? String(contentsOf: events, encoding: .utf8)) ?? "").contains("ready") {
            guard Date() < deadline, !ServerProcess.hasExited(process.processIdentifier) else {
                process.stop(timeout: 2)
                throw MediaServerError("sway did not start within \(Int(timeout)) s\n" + (Self.read(directory.appendingPathComponent("sway.log")) ?? ""))
            }
            usleep(20_000)
        }
        display = Self.read(directory.appendingPathComponent("wayland")) ?? "wayland-1"
        ipc = Self.read(directory.appendingPathComponent("ipc")) ?? ""
    }

    deinit {
        stop()
        MediaServerDirectory.discard(directory)
    }

    public func stop() { process.stop(timeout: 3) }

    /// What nalcast needs in its environment to reach this compositor.
    public var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        env["XDG_RUNTIME_DIR"] = directory.path
        env["WAYLAND_DISPLAY"] = display
        env["DISPLAY"] = nil
        return env
    }

    /// `swaymsg COMMAND` as the compositor's user; its exit status.
    @discardableResult
    public func command(_ words: [String]) throws -> Int32 { try commandOutput(words).status }

    /// `swaymsg COMMAND` as the compositor's user; its exit status and what it printed.
    public func commandOutput(_ words: [String]) throws -> (status: Int32, output: String) {
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        let r = try Tool.run(["setpriv", "--reuid=\(user.pointee.pw_uid)", "--regid=\(user.pointee.pw_gid)", "--clear-groups", "--",
                              "env", "SWAYSOCK=\(ipc)", "XDG_RUNTIME_DIR=\(directory.path)", "swaymsg"] + words)
        return (r.status, r.stdout)
    }

    /// The Wayland tests' GTK client (Tests/Fixtures/wayland/mutter-client.py, without its
    /// cast) as a window of its own, floating at `size` at `position`, its halves painted with
    /// `paint(left:right:)`; stopped with the session (`stop`) or by its own `stop`.
    public func startWindow(size: (Int, Int), position: (Int, Int), timeout: Double = 20) throws -> ServerProcess {
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        let (uid, gid) = (user.pointee.pw_uid, user.pointee.pw_gid)
        let script = directory.appendingPathComponent("mutter-client.py")
        if !FileManager.default.fileExists(atPath: script.path) {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/wayland/mutter-client.py"), to: script)
            chown(script.path, uid, gid)
        }
        let client = ServerProcess(name: "sway-client", logURL: directory.appendingPathComponent("client.log"))
        try client.start("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", "/usr/bin/python3", script.path, directory.path],
                         directory: directory,
                         environment: ["GDK_BACKEND": "wayland", "NALCAST_CLIENT_NO_CAST": "1", "XDG_RUNTIME_DIR": directory.path,
                                       "WAYLAND_DISPLAY": display, "HOME": directory.path, "DISPLAY": ""])
        let control = directory.appendingPathComponent("control")
        let deadline = Date().addingTimeInterval(timeout)
        while !((try? String(contentsOf: directory.appendingPathComponent("events"), encoding: .utf8)) ?? "").contains("drawn")
                || !FileManager.default.fileExists(atPath: control.path) {
            guard Date() < deadline, !ServerProcess.hasExited(client.processIdentifier) else {
                client.stop(timeout: 2)
                throw MediaServerError("the GTK client did not draw within \(Int(timeout)) s\n" + (Self.read(directory.appendingPathComponent("client.log")) ?? ""))
            }
            usleep(50_000)
        }
        // The window by its process (setpriv execs the client: the same PID), not by sway's
        // focus, which it may not have yet at its first paint.
        let floated = try commandOutput(["[pid=\(client.processIdentifier)] fullscreen disable, floating enable, "
                                         + "resize set \(size.0) \(size.1), move position \(position.0) \(position.1)"])
        guard floated.status == 0 else {
            client.stop(timeout: 2)
            throw MediaServerError("swaymsg could not float the client's window: \(floated.output)\n\(log)")
        }
        return client
    }

    /// Paints the window's halves (`RRGGBB` each) through the client's control FIFO.
    public func paint(left: String, right: String) throws {
        let handle = try FileHandle(forWritingTo: directory.appendingPathComponent("control"))
        defer { try? handle.close() }
        try handle.write(contentsOf: Data("colors \(left) \(right)\n".utf8))
    }

    public var log: String { Self.read(directory.appendingPathComponent("sway.log")).map { String($0.suffix(2000)) } ?? "" }

    private static func read(_ url: URL) -> String? {
        (try? String(contentsOf: url, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
