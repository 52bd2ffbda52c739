import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What went wrong with a server a test started, with the tail of its log.
public struct MediaServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Free loopback ports for the servers the tests start, picked at random below Linux's
/// ephemeral range (32768-60999) and checked by binding them: the kernel's own pick
/// (`bind` to port 0) comes from the ephemeral range, which every outgoing connection of the
/// suites running beside this one draws from too, so the port could be taken by a client's
/// connection between the pick and the server's bind (seen with three suites at once).
public enum FreePort {
    public static func tcp() throws -> UInt16 { try pick(Int32(SOCK_STREAM.rawValue)) }
    public static func udp() throws -> UInt16 { try pick(Int32(SOCK_DGRAM.rawValue)) }

    static func pick(_ type: Int32) throws -> UInt16 {
        for _ in 0..<200 {
            let port = UInt16.random(in: 20_000..<32_768)
            if try bindable(port, type) { return port }
        }
        throw MediaServerError("no free loopback port in 20000-32767")
    }

    /// Whether `port` on 127.0.0.1 can be bound now (a socket of `type`, closed again).
    static func bindable(_ port: UInt16, _ type: Int32) throws -> Bool {
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { throw MediaServerError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// A private scratch directory (mode 0700) for one server: its configuration, logs and what it
/// receives.
public enum MediaServerDirectory {
    public static func make(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    /// Removes a server's directory once it is done with, unless NALCAST_KEEP_SERVER_DIRS=1
    /// (to read its logs and files after a failure).
    public static func discard(_ url: URL) {
        if ProcessInfo.processInfo.environment["NALCAST_KEEP_SERVER_DIRS"] == "1" { return }
        try? FileManager.default.removeItem(at: url)
    }
}

/// One program a test runs in the background (a media server, or FFmpeg as its client),
/// started with posix_spawn in a process group of its own, so that it and any children it
/// forks die together by its PID: `stop()` sends SIGTERM to the group, then SIGKILL; `kill()`
/// sends SIGKILL at once (a crash, for the reconnect tests). Its stdin is /dev/null; its
/// stderr, and its stdout unless that is its output, are appended to `logURL`, which
/// outlives restarts (each start writes a `--- start` line first) for failure messages.
/// Children are reaped by PID only (`waitpid(pid)`), never with `waitpid(-1)`, so other
/// processes of the test are left to their owners.
public final class ServerProcess: @unchecked Sendable {
    // The mutable state (pid, exit status, run count) is only touched with `lock` held, so a
    // server may be stopped from another thread (a deinit, a watchdog) than the one that
    // started it.
    private let lock = NSLock()
    public let name: String
    public let logURL: URL
    private var pid: pid_t = 0
    private var reaped = true
    private var waitStatus: Int32 = 0
    private var runs = 0

    public init(name: String, logURL: URL) {
        self.name = name
        self.logURL = logURL
    }

    deinit { stop(timeout: 2) }

    /// How many times it was started.
    public var starts: Int { lock.lock(); defer { lock.unlock() }; return runs }

    /// The PID of the current (or last) run; 0 before the first start.
    public var processIdentifier: pid_t { lock.lock(); defer { lock.unlock() }; return pid }

    /// The absolute path of `program`: itself when it has a slash, else the first executable
    /// in PATH, then /usr/sbin and /sbin (nginx lives there; a normal user's PATH lacks them).
    public static func locate(_ program: String) throws -> String {
        if program.contains("/") { return program }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = dir + "/" + program
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw MediaServerError("\(program) not found in PATH, /usr/sbin or /sbin (scripts/setup installs it)")
    }

    /// Starts `program` with `arguments`; `stdout` (created or truncated) receives its standard
    /// output when given. Fails when a previous run is still going.
    public func start(_ program: String, _ arguments: [String], stdout: URL? = nil,
                      directory: URL? = nil, environment: [String: String] = [:]) throws {
        let executable = try Self.locate(program)
        lock.lock()
        defer { lock.unlock() }
        if !reaped {
            if !Self.hasExited(pid) { throw MediaServerError("\(name) is already running (pid \(pid))") }
            reapLocked()
        }
        runs += 1
        let header = "--- start \(runs): \(([executable] + arguments).joined(separator: " "))\n"
        if !FileManager.default.fileExists(atPath: logURL.path) {
            _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        }
        if let handle = try? FileHandle(forWritingTo: logURL) {
            handle.seekToEndOfFile()
            handle.write(Data(header.utf8))
            try? handle.close()
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, logURL.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        if let stdout {
            posix_spawn_file_actions_addopen(&actions, 1, stdout.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        }
        // Nothing else of the test process (its sockets above all) leaks into the server.
        Self.closeOtherDescriptors(&actions)
        if let directory { Self.changeDirectory(&actions, directory.path) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        // Signals the test runner (or nalcast's own code in it) may ignore start at their defaults.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGXFSZ, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child = pid_t()
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw MediaServerError("\(name): posix_spawn \(executable): \(String(cString: strerror(rc)))") }
        pid = child
        reaped = false
    }

    // glibc's posix_spawn_file_actions_addclosefrom_np and _addchdir_np are GNU extensions the
    // Glibc module does not declare (it is imported without _GNU_SOURCE): looked up by name.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        dlsym(dlopen(nil, RTLD_NOW), name)
    }

    /// Closes every descriptor from 3 up in the child: with closefrom where glibc has it
    /// (2.34 and later), else one close per descriptor open now (/proc/self/fd).
    private static func closeOtherDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if let found = symbol("posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(found, to: AddCloseFrom.self)(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// Starts the child in `path` where glibc can (2.29 and later); else it starts where the
    /// test runs (the servers are given absolute paths anyway).
    private static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) {
        guard let found = symbol("posix_spawn_file_actions_addchdir_np") else { return }
        _ = unsafeBitCast(found, to: AddChdir.self)(&actions, path)
    }

    /// Whether child `pid` has exited (a zombie not yet reaped, or gone). Looks with WNOWAIT,
    /// without reaping, so that the PID, and the process group named after it, stay ours until
    /// the group has been killed and the leader reaped.
    static func hasExited(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 { return errno == ECHILD }
        // si_pid, 0 while the child runs: after si_signo, si_errno, si_code and the padding
        // that aligns the union on 64-bit Linux.
        let childPID = withUnsafeBytes(of: &info) { $0.load(fromByteOffset: 16, as: pid_t.self) }
        return childPID != 0
    }

    /// Whether the last started process is still running.
    public var isRunning: Bool {
        lock.lock(); defer { lock.unlock() }
        return !reaped && !Self.hasExited(pid)
    }

    /// Reaps the leader (which has exited) after killing what is left of its group.
    private func reapLocked() {
        guard !reaped else { return }
        Glibc.kill(-pid, SIGKILL)  // children it left behind
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        waitStatus = status
        reaped = true
    }

    /// Waits up to `timeout` seconds for the process to exit by itself; its exit code (128 +
    /// the signal when killed), or nil when it still runs.
    @discardableResult
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while true {
            lock.lock()
            if reaped { let s = waitStatus; lock.unlock(); return Self.code(s) }
            if Self.hasExited(pid) {
                reapLocked()
                let s = waitStatus
                lock.unlock()
                return Self.code(s)
            }
            lock.unlock()
            if Moment.now >= deadline { return nil }
            usleep(20_000)
        }
    }

    static func code(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Sends `signal` to the whole process group.
    public func signal(_ signal: Int32) {
        lock.lock(); defer { lock.unlock() }
        guard !reaped else { return }
        if Glibc.kill(-pid, signal) != 0 { Glibc.kill(pid, signal) }
    }

    /// SIGTERM to the group, SIGKILL after `timeout` seconds, then reaped: nothing of it is
    /// left running. Harmless when it is not running.
    public func stop(timeout: Double = 5) {
        signal(SIGTERM)
        if waitForExit(timeout: timeout) == nil {
            signal(SIGKILL)
            waitForExit(timeout: 30)
        }
    }

    /// SIGKILL to the group, as a crash would; reaped.
    public func kill() {
        signal(SIGKILL)
        waitForExit(timeout: 30)
    }

    /// The log so far (every run).
    public var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// The last `lines` lines of the log, for failure messages.
    public func logTail(_ lines: Int = 40) -> String {
        let all = log.split(separator: "\n", omittingEmptySubsequences: false)
        return "\(name) log (\(logURL.path)):\n" + all.suffix(lines).joined(separator: "\n")
    }

    /// Waits until the log holds `text` `count` times (runs so far included), or the process
    /// exits, or `timeout` seconds pass.
    @discardableResult
    public func waitForLog(_ text: String, count: Int = 1, timeout: Double = 30) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while true {
            if log.components(separatedBy: text).count - 1 >= count { return true }
            if !isRunning || Moment.now >= deadline { return log.components(separatedBy: text).count - 1 >= count }
            usleep(20_000)
        }
    }

    public enum Transport: Sendable { case tcp, udp }

    /// Waits until this process holds a socket bound to `port` on loopback (listening, for
    /// TCP), as the kernel lists in /proc/net: no connection is made, so a server that takes
    /// one client only (FFmpeg's listen modes) is not disturbed. Throws, with the log, when
    /// the process exits first or `timeout` seconds pass.
    public func waitUntilListening(port: UInt16, _ transport: Transport, timeout: Double = 30) throws {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while true {
            let pid = processIdentifier
            if Self.owns(pid: pid, port: port, transport) { return }
            if !isRunning {
                throw MediaServerError("\(name) exited before listening on port \(port)\n\(logTail())")
            }
            if Moment.now >= deadline {
                throw MediaServerError("\(name) not listening on port \(port) after \(timeout) s\n\(logTail())")
            }
            usleep(20_000)
        }
    }

    /// Inodes of the sockets bound to `port` (TCP: in LISTEN state) in /proc/net.
    static func socketInodes(port: UInt16, _ transport: Transport) -> Set<String> {
        let tables = transport == .tcp ? ["/proc/net/tcp", "/proc/net/tcp6"] : ["/proc/net/udp", "/proc/net/udp6"]
        let portHex = String(format: ":%04X", port)
        var inodes = Set<String>()
        for table in tables {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[1].hasSuffix(portHex) else { continue }
                if transport == .tcp && fields[3] != "0A" { continue }
                inodes.insert(String(fields[9]))
            }
        }
        return inodes
    }

    /// Whether process `pid` has one of the sockets bound to `port` open.
    static func owns(pid: pid_t, port: UInt16, _ transport: Transport) -> Bool {
        let inodes = socketInodes(port: port, transport)
        guard !inodes.isEmpty, pid > 0 else { return false }
        let fdDir = "/proc/\(pid)/fd"
        guard let fds = try? FileManager.default.contentsOfDirectory(atPath: fdDir) else { return false }
        for fd in fds {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDir + "/" + fd),
                  target.hasPrefix("socket:[") else { continue }
            if inodes.contains(String(target.dropFirst(8).dropLast())) { return true }
        }
        return false
    }

    /// Whether any process has a socket bound to `port` (TCP: listening) on this machine.
    public static func portInUse(_ port: UInt16, _ transport: Transport) -> Bool {
        !socketInodes(port: port, transport).isEmpty
    }
}
