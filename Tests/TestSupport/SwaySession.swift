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
        // The copy is run by bash, which reads it, not executed: another test's process spawned
        // while the copy was being written holds it open for writing until that process execs,
        // and executing it then fails ("Text file busy").
        try process.start("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", "/bin/bash", script.path, directory.path, size],
                          directory: directory, environment: ["DISPLAY": "", "WAYLAND_DISPLAY": ""])
        let deadline = Moment.now.addingTimeInterval(timeout)
        let events = directory.appendingPathComponent("events")
        while !((try? String(contentsOf: events, encoding: .utf8)) ?? "").contains("ready") {
            guard Moment.now < deadline, !ServerProcess.hasExited(process.processIdentifier) else {
                process.stop(timeout: 2)
                throw MediaServerError("sway did not start within \(Int(timeout)) s\n"
                                       + (Self.read(directory.appendingPathComponent("session.log")) ?? "") + "\n"
                                       + (Self.read(directory.appendingPathComponent("sway.log")) ?? ""))
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
    /// cast) as a plain window of its own (never fullscreen), floating with its frame (title bar
    /// and borders included) `size` at `position`, its halves painted with
    /// `paint(left:right:)`; stopped with the session (`stop`) or by its own `stop`. Returns
    /// once the client has drawn and sway's tree has the window there. One such window a
    /// session: the rule that places it is the session's.
    public func startWindow(size: (Int, Int), position: (Int, Int), timeout: Double = 20) throws -> ServerProcess {
        guard let user = getpwnam("nobody") else { throw MediaServerError("no user nobody") }
        let (uid, gid) = (user.pointee.pw_uid, user.pointee.pw_gid)
        let script = directory.appendingPathComponent("mutter-client.py")
        if !FileManager.default.fileExists(atPath: script.path) {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/wayland/mutter-client.py"), to: script)
            chown(script.path, uid, gid)
        }
        // Floated, sized and placed by a rule as sway maps the window, so that the first size the
        // client is told is the one wanted. (Floating a window that had gone fullscreen, by
        // commands after its first paint, left it at the output's size now and then: GTK put
        // back its own size as it left fullscreen, after the resize.)
        let rule = try commandOutput(["for_window [app_id=\"^mutter-client\\.py$\"] \"floating enable, "
                                      + "resize set \(size.0) \(size.1), move position \(position.0) \(position.1)\""])
        guard rule.status == 0 else { throw MediaServerError("swaymsg for_window: \(rule.output)\n\(log)") }
        let client = ServerProcess(name: "sway-client", logURL: directory.appendingPathComponent("client.log"))
        try client.start("setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", "/usr/bin/python3", script.path, directory.path],
                         directory: directory,
                         environment: ["GDK_BACKEND": "wayland", "NALCAST_CLIENT_NO_CAST": "1", "NALCAST_CLIENT_WINDOW": "\(size.0)x\(size.1)",
                                       "XDG_RUNTIME_DIR": directory.path, "WAYLAND_DISPLAY": display, "HOME": directory.path, "DISPLAY": ""])
        let control = directory.appendingPathComponent("control")
        let deadline = Moment.now.addingTimeInterval(timeout)
        // Drawn, and in sway's tree where it was asked to be (the window by its process:
        // setpriv execs the client, the same PID).
        while try !((try? String(contentsOf: directory.appendingPathComponent("events"), encoding: .utf8)) ?? "").contains("drawn")
                || !FileManager.default.fileExists(atPath: control.path)
                || windowFrame(of: client.processIdentifier).map({ $0 == [position.0, position.1, size.0, size.1] }) != true {
            guard Moment.now < deadline, !ServerProcess.hasExited(client.processIdentifier) else {
                let frame = (try? windowFrame(of: client.processIdentifier)).map { "\($0 ?? [])" } ?? "unknown"
                client.stop(timeout: 2)
                throw MediaServerError("the GTK client's window was not drawn at \(size) at \(position) within \(Int(timeout)) s "
                                       + "(its frame: \(frame))\n" + (Self.read(directory.appendingPathComponent("client.log")) ?? ""))
            }
            usleep(50_000)
        }
        return client
    }

    /// Where the window of process `pid` is, as sway's tree has it: its frame (title bar,
    /// borders and content) as [x, y, width, height] on the output, which is what `move
    /// position` and a floating window's `resize set` set; nil while there is none.
    private func windowFrame(of pid: Int32) throws -> [Int]? {
        let tree = try commandOutput(["-t", "get_tree"])
        guard tree.status == 0, let root = try JSONSerialization.jsonObject(with: Data(tree.output.utf8)) as? [String: Any] else { return nil }
        func find(_ node: [String: Any]) -> [String: Any]? {
            if (node["pid"] as? Int).map(Int32.init) == pid { return node }
            let children = ((node["nodes"] as? [[String: Any]]) ?? []) + ((node["floating_nodes"] as? [[String: Any]]) ?? [])
            return children.lazy.compactMap(find).first
        }
        // `deco_rect` is the title bar, `rect` the rest below it.
        guard let node = find(root), let title = node["deco_rect"] as? [String: Int], let rest = node["rect"] as? [String: Int],
              let x = title["x"], let y = title["y"], let titleHeight = title["height"],
              let w = rest["width"], let h = rest["height"] else { return nil }
        return [x, y, w, titleHeight + h]
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
