import Foundation

/// A media server that answers a push badly (`Tests/Servers/hostile-push-server.py`, run
/// with /usr/bin/python3) on a free loopback port: RTMP that sends random bytes or completes
/// its handshake and then says nothing, RTSP that answers with random bytes, answers
/// OPTIONS and then nothing, or announces a 100 MB body it trickles. Its log has a line per
/// connection (`connection N`) and per step it got to.
public final class HostilePushServer {
    public enum Mode: String, Sendable, CaseIterable {
        case rtmpGarbage = "rtmp-garbage", rtmpStall = "rtmp-stall"
        case rtspGarbage = "rtsp-garbage", rtspStall = "rtsp-stall", rtspEndless = "rtsp-endless"
    }

    public let mode: Mode
    public let port: UInt16
    public let directory: URL
    public let process: ServerProcess

    public static let script: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Servers/hostile-push-server.py")

    public init(_ mode: Mode) throws {
        self.mode = mode
        directory = try MediaServerDirectory.make("hostile-\(mode.rawValue)")
        port = try FreePort.tcp()
        process = ServerProcess(name: "hostile-\(mode.rawValue)", logURL: directory.appendingPathComponent("server.log"))
        try process.start("/usr/bin/python3", [Self.script.path, mode.rawValue, String(port)], directory: directory)
        try process.waitUntilListening(port: port, .tcp)
    }

    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// The URL a push to it takes: `rtmp://127.0.0.1:PORT/live/KEY` or `rtsp://127.0.0.1:PORT/live`.
    public var url: String {
        mode.rawValue.hasPrefix("rtmp") ? "rtmp://127.0.0.1:\(port)/live/key" : "rtsp://127.0.0.1:\(port)/live"
    }

    /// Connections it has accepted.
    public var connections: Int { process.log.components(separatedBy: "\nconnection ").count - 1 }

    public var log: String { process.logTail(40) }
}
