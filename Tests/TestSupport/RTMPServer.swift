import Foundation

/// nginx with its RTMP module (Debian's nginx-light and libnginx-mod-rtmp), on a free loopback
/// port, for the tests that push RTMP or read it back: one application `live` (`live on`), so a
/// stream published to `url(key)` is played from the same URL. It runs from a private temp
/// directory with a generated nginx.conf: single process (`master_process off`), in the
/// foreground (`daemon off`), its pid file, lock file and logs in that directory, none in
/// /var/log or /run: so it runs as any user, root included. `kill()` and `start()` (or
/// `restart()`) take it down and up again on the same port, for the reconnect tests.
///
/// Its error log (at `info`) says `publish: name='KEY'` and `play: name='KEY'` for each
/// publisher and player, which `waitForPublish` and `waitForPlay` wait for.
public final class RTMPServer: Sendable {
    public let port: UInt16
    public let directory: URL
    public let process: ServerProcess
    public static let module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

    public var configURL: URL { directory.appendingPathComponent("nginx.conf") }
    public var errorLogURL: URL { directory.appendingPathComponent("error.log") }
    public var accessLogURL: URL { directory.appendingPathComponent("access.log") }

    /// The user nginx runs as when the tests run as root and ask for another (`runAs`).
    public let user: (name: String, uid: uid_t, gid: gid_t)?
    /// nginx tells its players when a publish ends (`publish_notify`).
    public let publishNotify: Bool

    /// Starts nginx on `port` (a free one by default) and waits until it listens. `runAs`
    /// (root only) names a user to run it as instead, its directory handed over to that user:
    /// the tests prove with `nobody` that nothing in it needs root. `publishNotify`: nginx
    /// tells its players when a publish ends (`NetStream.Play.UnpublishNotify`), and an FFmpeg
    /// player ends there, having read all of it (`startPlayer`); off, a player waits for a
    /// publisher again (the restart tests).
    public init(port: UInt16? = nil, runAs: String? = nil, publishNotify: Bool = false) throws {
        self.publishNotify = publishNotify
        directory = try MediaServerDirectory.make("rtmp")
        self.port = try port ?? FreePort.tcp()
        process = ServerProcess(name: "nginx-rtmp", logURL: directory.appendingPathComponent("nginx.stderr"))
        guard FileManager.default.fileExists(atPath: Self.module) else {
            throw MediaServerError("\(Self.module) missing: install libnginx-mod-rtmp (scripts/setup)")
        }
        if let runAs {
            guard let entry = getpwnam(runAs) else { throw MediaServerError("no user \(runAs)") }
            user = (runAs, entry.pointee.pw_uid, entry.pointee.pw_gid)
        } else {
            user = nil
        }
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        if let user {
            for path in [directory.path, configURL.path] {
                guard chown(path, user.uid, user.gid) == 0 else {
                    throw MediaServerError("chown \(path) to \(user.name): \(String(cString: strerror(errno)))")
                }
            }
        }
        try start()
    }

    /// Stopped and its directory removed (see `MediaServerDirectory.discard`).
    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// The configuration nginx runs with.
    public var config: String {
        let dir = directory.path
        return """
        # nalcast test RTMP server (Tests/TestSupport/RTMPServer.swift)
        load_module \(Self.module);
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(dir)/nginx.pid;
        lock_file \(dir)/nginx.lock;
        error_log \(dir)/error.log info;
        events { worker_connections 256; }
        rtmp {
            access_log \(dir)/access.log;
            server {
                listen 127.0.0.1:\(port);
                chunk_size 4096;
                application live {
                    live on;
                    record off;
                    # A player joins at a key frame, so what it reads decodes from its first frame.
                    wait_key on;
                    wait_video on;\(publishNotify ? "\n            publish_notify on;" : "")
                }
            }
        }

        """
    }

    /// `rtmp://127.0.0.1:PORT/live/KEY`
    public func url(_ key: String = "stream") -> String { "rtmp://127.0.0.1:\(port)/live/\(key)" }

    /// Starts nginx (again) and waits until it listens.
    public func start(timeout: Double = 30) throws {
        let nginx = ["-p", directory.path + "/", "-c", configURL.path, "-e", errorLogURL.path]
        if let user {
            // setpriv (util-linux) drops to the user and execs nginx: the same PID.
            try process.start("setpriv", ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--",
                                          try ServerProcess.locate("nginx")] + nginx, directory: directory)
        } else {
            try process.start("nginx", nginx, directory: directory)
        }
        try process.waitUntilListening(port: port, .tcp, timeout: timeout)
    }

    /// SIGKILL (as a crash), then the same server again on the same port.
    public func restart() throws {
        process.kill()
        try start()
    }

    /// SIGKILL, as a crash: publishers and players lose their connections at once.
    public func kill() { process.kill() }

    /// SIGTERM (nginx's fast shutdown), SIGKILL if it lingers.
    public func stop() { process.stop() }

    /// Waits until `count` publishes of `key` have started (in every run so far).
    @discardableResult
    public func waitForPublish(_ key: String, count: Int = 1, timeout: Double = 30) -> Bool {
        waitForErrorLog("publish: name='\(key)'", count: count, timeout: timeout)
    }

    /// Waits until `count` players of `key` have asked to play.
    @discardableResult
    public func waitForPlay(_ key: String, count: Int = 1, timeout: Double = 30) -> Bool {
        waitForErrorLog("play: name='\(key)'", count: count, timeout: timeout)
    }

    /// Starts FFmpeg playing `key` and copying the video into `file` (FLV), its stderr in `log`,
    /// and waits until nginx has the player. Started before the publisher, it gets the publish
    /// from its first frame (nginx holds a player until a publisher comes, `wait_key` starts it
    /// at a key frame) and writes it as it comes. It exits when nginx says the publish ended
    /// (`publishNotify`), or else once no data has come for `idleTimeout` seconds after it
    /// (FFmpeg waits that long twice, reading and closing), so `waitForExit(timeout:)` on it
    /// should allow for more than twice that. No data for `idleTimeout` before the publish
    /// starts is the same timeout, which ends the player with an error: the publisher must
    /// be going within that.
    /// `-analyzeduration 1s`: FFmpeg's FLV demuxer would otherwise read 5 s of a live stream
    /// (looking for the audio the FLV header announces) before writing anything. `map`: the
    /// streams it keeps (FFmpeg's `-map`), the video by default.
    public func startPlayer(_ key: String, into file: URL, log: URL, idleTimeout: Int = 5, map: [String] = ["0:v:0"]) throws -> ServerProcess {
        let before = plays(key)
        let player = ServerProcess(name: "ffmpeg player of \(key)", logURL: log)
        try player.start("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error", "-rw_timeout", String(idleTimeout * 1_000_000),
                                    "-analyzeduration", "1000000", "-i", url(key)] + map.flatMap { ["-map", $0] } + ["-c", "copy", "-f", "flv", file.path])
        guard waitForPlay(key, count: before + 1, timeout: 60) else {
            player.stop()
            throw MediaServerError("nginx has no player of \(key)\n\(player.logTail())\n\(self.log)")
        }
        return player
    }

    /// How many publishes of `key` have started (every run so far).
    public func publishes(_ key: String) -> Int { errorLog.components(separatedBy: "publish: name='\(key)'").count - 1 }

    /// How many players have asked to play `key` (every run so far).
    public func plays(_ key: String) -> Int { errorLog.components(separatedBy: "play: name='\(key)'").count - 1 }

    func waitForErrorLog(_ text: String, count: Int, timeout: Double) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while true {
            let found = errorLog.components(separatedBy: text).count - 1 >= count
            if found || Moment.now >= deadline || !process.isRunning { return found }
            usleep(20_000)
        }
    }

    public var errorLog: String { (try? String(contentsOf: errorLogURL, encoding: .utf8)) ?? "" }
    public var accessLog: String { (try? String(contentsOf: accessLogURL, encoding: .utf8)) ?? "" }

    /// Everything nginx said, for failure messages: stderr, the error log's tail and the access log.
    public var log: String {
        let errors = errorLog.split(separator: "\n").suffix(60).joined(separator: "\n")
        return "\(process.logTail())\nerror.log (tail):\n\(errors)\naccess.log:\n\(accessLog)"
    }
}
