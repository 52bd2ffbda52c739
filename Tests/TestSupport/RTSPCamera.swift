import Foundation

/// An IP camera stand-in on a free loopback port: GStreamer's RTSP server playing a live test
/// pattern encoded with x264 (`Tests/Servers/rtsp-camera-server.py`, run with /usr/bin/python3),
/// 30 fps, an IDR every 30 frames, RTP over TCP or UDP as the client asks; with `audio`, a
/// 48 kHz stereo AAC sine beside it (MPEG4-GENERIC), as a camera with a microphone. `kill()` and
/// `start()` (or `restart()`) take it down and up on the same port, as a camera that reboots.
public final class RTSPCamera {
    public let port: UInt16
    public let path: String
    public let size: String
    public let audio: Bool
    public let directory: URL
    public let process: ServerProcess

    public static let script: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Servers/rtsp-camera-server.py")

    public init(port: UInt16? = nil, path: String = "/cam", size: String = "320x240", audio: Bool = false) throws {
        self.audio = audio
        directory = try MediaServerDirectory.make("rtsp-camera")
        self.port = try port ?? FreePort.tcp()
        self.path = path
        self.size = size
        process = ServerProcess(name: "rtsp-camera", logURL: directory.appendingPathComponent("camera.log"))
        try start()
    }

    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// `rtsp://127.0.0.1:PORT/cam`, or with `user:password@` in front of the host.
    public func url(credentials: String? = nil) -> String {
        "rtsp://" + (credentials.map { $0 + "@" } ?? "") + "127.0.0.1:\(port)\(path)"
    }

    public func start(timeout: Double = 30) throws {
        try process.start("/usr/bin/python3", [Self.script.path, String(port), path, size] + (audio ? ["--audio"] : []), directory: directory)
        try process.waitUntilListening(port: port, .tcp, timeout: timeout)
    }

    /// SIGKILL, as a camera losing power: its clients lose their connections.
    public func kill() { process.kill() }

    public func restart() throws {
        process.kill()
        try start()
    }

    public var log: String { process.logTail(40) }
}
