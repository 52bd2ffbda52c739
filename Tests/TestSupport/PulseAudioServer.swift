import Foundation

/// A private PulseAudio daemon for one test: its own runtime directory and home (mode 0700,
/// under the temp directory), a null sink named `sinkName` (`norewinds=1` unless `rewinds`) (its monitor is the default
/// source: what `--audio monitor` and `mic` record), and a native-protocol socket that
/// `address` names for libpulse (`PULSE_SERVER`). Started with `-n` (no default.pa) so that
/// nothing of the machine's own configuration, D-Bus or hardware is involved; it runs as
/// root here as well. Stopped by its PID (`stop()`, or `kill()` for a crash); should the test
/// process die first, the daemon ends by itself 20 s after its last client left.
public final class PulseAudioServer: Sendable {
    public let directory: URL
    public let socketPath: String
    public let sinkName = "nalcast_test"
    public let process: ServerProcess

    /// `unix:/…/native`, for PULSE_SERVER or AudioCapture's `pulseServer`.
    public var address: String { "unix:" + socketPath }

    /// What a child (nalcast, paplay, pactl) needs to reach this server and no other.
    public var environment: [String: String] {
        ["PULSE_SERVER": address, "XDG_RUNTIME_DIR": directory.appendingPathComponent("run").path,
         "HOME": directory.appendingPathComponent("home").path, "PULSE_CLIENTCONFIG": "/dev/null"]
    }

    /// Whether the null sink can rewind (PulseAudio's default, and what a machine's
    /// `module-null-sink` and `module-always-sink` do): it then renders as far ahead as its
    /// players' buffers allow (up to 2 s) and can take back what it rendered; without, 50 ms
    /// at most, the steady timing most tests want.
    public let rewinds: Bool

    public init(rewinds: Bool = false) throws {
        self.rewinds = rewinds
        directory = try MediaServerDirectory.make("pulse")
        for sub in ["run", "home"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        socketPath = directory.appendingPathComponent("run/native").path
        process = ServerProcess(name: "pulseaudio", logURL: directory.appendingPathComponent("pulseaudio.log"))
        try start()
    }

    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// Starts the daemon (again, after `kill()`: same socket, same sink) and waits until it
    /// answers.
    public func start() throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        try process.start("pulseaudio", [
            "-n", "--daemonize=no", "--exit-idle-time=20", "--use-pid-file=no", "--log-target=stderr",
            "--load=module-null-sink sink_name=\(sinkName) rate=48000" + (rewinds ? "" : " norewinds=1"),
            "--load=module-native-protocol-unix auth-anonymous=1 socket=\(socketPath)",
        ], environment: environment)
        let deadline = Moment.now.addingTimeInterval(15)
        while Moment.now < deadline {
            if process.isRunning == false { break }
            if FileManager.default.fileExists(atPath: socketPath), (try? pactl(["info"]))?.status == 0 { return }
            usleep(50_000)
        }
        throw MediaServerError("pulseaudio did not start\n" + process.logTail())
    }

    /// Runs `pactl` against this server.
    public func pactl(_ arguments: [String]) throws -> Tool.Result {
        try Tool.run(["env"] + environment.map { "\($0.key)=\($0.value)" } + ["pactl"] + arguments)
    }

    /// Plays a WAV file into the null sink with `paplay` (pacat for files), as an application
    /// would; the returned process ends when it has played it.
    public func play(_ wav: URL) throws -> ServerProcess {
        let player = ServerProcess(name: "paplay", logURL: directory.appendingPathComponent("paplay-\(UUID().uuidString).log"))
        try player.start("paplay", ["--device=\(sinkName)", wav.path], environment: environment)
        return player
    }

    /// SIGKILL, as a crash: clients see their connection end.
    public func kill() { process.kill() }

    public func stop() { process.stop(timeout: 5) }
}
