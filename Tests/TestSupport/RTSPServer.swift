import Foundation

/// An RTSP server that takes a publish (ANNOUNCE, SETUP, RECORD; RTP interleaved over the RTSP
/// TCP connection) on a free loopback port and writes the H.264 it receives, in Annex B, to
/// files in a private temp directory: `recordings`, one per publish, in order.
///
/// Two servers can play the part:
/// - `.gstreamer` (the default): GStreamer's RTSP server in record mode, a small Python script
///   (`Tests/Servers/rtsp-record-server.py`, run with /usr/bin/python3). A server like the
///   ones nalcast will push to (MediaMTX and the like): it stays up across publishes, takes
///   one publish after another (a reconnecting client), and logs each.
/// - `.ffmpeg`: FFmpeg's `-rtsp_flags listen`, a one-shot server: it takes a single publish and
///   exits when that ends; `start()` again for the next.
///
/// With `audio` (GStreamer only) a publish is H.264 and AAC, both recorded into one MPEG-TS
/// file (`.ts`) with the times RTP and RTCP gave them.
///
/// `kill()` and `start()` (or `restart()`) take it down and up on the same port.
public final class RTSPServer {
    public enum Backend: String, Sendable { case gstreamer, ffmpeg }

    public let backend: Backend
    public let port: UInt16
    /// The mount point publishers announce to, such as `/live`.
    public let path: String
    public let directory: URL
    public let process: ServerProcess
    /// Takes video and AAC and records MPEG-TS (GStreamer only).
    public let audio: Bool
    private var runs = 0

    /// `Tests/Servers/rtsp-record-server.py`.
    public static let script: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Servers/rtsp-record-server.py")

    /// Starts the server on `port` (a free one by default) and waits until it listens.
    public init(backend: Backend = .gstreamer, port: UInt16? = nil, path: String = "/live", audio: Bool = false) throws {
        precondition(!audio || backend == .gstreamer, "only GStreamer's server records sound")
        self.backend = backend
        self.audio = audio
        directory = try MediaServerDirectory.make("rtsp")
        self.port = try port ?? FreePort.tcp()
        self.path = path.hasPrefix("/") ? path : "/" + path
        process = ServerProcess(name: "rtsp-\(backend.rawValue)", logURL: directory.appendingPathComponent("rtsp-server.log"))
        try start()
    }

    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// `rtsp://127.0.0.1:PORT/PATH`, where publishers announce.
    public var url: String { "rtsp://127.0.0.1:\(port)\(path)" }

    /// Starts the server (again) and waits until it listens. Each run names its files apart:
    /// `runNN-publishMM.h264` (`.ts` with `audio`).
    public func start(timeout: Double = 30) throws {
        runs += 1
        let prefix = directory.appendingPathComponent(String(format: "run%02d-publish", runs)).path
        switch backend {
        case .gstreamer:
            try process.start("/usr/bin/python3", [Self.script.path, String(port), path, prefix] + (audio ? ["--audio"] : []),
                              directory: directory)
        case .ffmpeg:
            // dump_extra: the SPS and PPS came in the ANNOUNCE's SDP, not in the stream (FFmpeg's
            // encoders put them there for RTSP); the raw H.264 file needs them in front of its IDRs.
            try process.start("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "info", "-rtsp_flags", "listen",
                                         "-i", url, "-map", "0:v:0", "-c", "copy", "-bsf:v", "dump_extra", "-f", "h264", prefix + "01.h264"],
                              directory: directory)
        }
        try process.waitUntilListening(port: port, .tcp, timeout: timeout)
    }

    /// SIGKILL, as a crash: the publisher loses its connection.
    public func kill() { process.kill() }

    /// SIGTERM, SIGKILL if it lingers.
    public func stop() { process.stop() }

    /// SIGKILL, then the server again on the same port.
    public func restart() throws {
        process.kill()
        try start()
    }

    /// The files publishes went to, in order (every run so far).
    public var recordings: [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasPrefix("run") && $0.hasSuffix(audio ? ".ts" : ".h264") }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    /// Waits until `count` publishes have been announced (every run so far). FFmpeg's server
    /// says nothing until the stream's first packets, so this waits for its "Input #0" line.
    @discardableResult
    public func waitForPublish(count: Int = 1, timeout: Double = 30) -> Bool {
        switch backend {
        case .gstreamer: return process.waitForLog("started: ", count: count, timeout: timeout)
        case .ffmpeg: return process.waitForLog("Input #0", count: count, timeout: timeout)
        }
    }

    /// Waits until the newest recording holds at least `bytes` (the server writes it unbuffered).
    @discardableResult
    public func waitForRecordedBytes(_ bytes: Int, timeout: Double = 30) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while true {
            var info = stat()
            if let last = recordings.last, stat(last.path, &info) == 0, Int(info.st_size) >= bytes { return true }
            if Moment.now >= deadline || !process.isRunning { return false }
            usleep(20_000)
        }
    }

    /// How many publishes GStreamer's server has seen end (torn down or disconnected), every
    /// run so far (a killed run says nothing of the publish it had).
    public var endedPublishes: Int { process.log.components(separatedBy: " ended\n").count - 1 }

    /// Waits until `endedPublishes` reaches `count`. For `.ffmpeg`, until the server has exited
    /// (it does when its publish ends).
    @discardableResult
    public func waitForPublishEnd(count: Int = 1, timeout: Double = 30) -> Bool {
        switch backend {
        case .gstreamer: return process.waitForLog(" ended\n", count: count, timeout: timeout)
        case .ffmpeg: return process.waitForExit(timeout: timeout) != nil
        }
    }

    public var log: String { process.logTail(60) }
}
