import Foundation
import Testing
import TestSupport

/// The media servers the push and relay tests start (TestSupport's `RTMPServer`, `SRTListener`,
/// `RTSPServer`), each proven with FFmpeg as the client: FFmpeg pushes 3 s of a 320x240 test
/// pattern at 30 fps (90 frames, an IDR every second) in real time, and what the server hands on
/// or writes is counted and decoded by FFmpeg. Then each server is killed mid-stream and started
/// again on the same port, and takes the next push whole. No timing is asserted; the timeouts
/// are generous for a loaded machine.
@Suite(.serialized) struct MediaServerTests {
    static let frames = 90

    /// FFmpeg pushing `seconds` of the test pattern in real time to `output`; with
    /// `silentTail`, beside it a silent AAC track that goes on that many seconds past the last
    /// picture, holding the connection open after it (`srtPush`).
    static func push(_ output: [String], seconds: Int = 3, silentTail: Int? = nil) -> [String] {
        let video = ["-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30"]
        let encode = ["-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p"]
        guard let tail = silentTail else {
            return ["-hide_banner", "-nostdin", "-loglevel", "error"] + video + ["-t", String(seconds)] + encode + output
        }
        return ["-hide_banner", "-nostdin", "-loglevel", "error"] + video + ["-re", "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo",
                "-map", "0:v"] + encode + ["-frames:v", String(seconds * 30), "-map", "1:a", "-c:a", "aac", "-t", String(seconds + tail)] + output
    }

    /// A scratch directory for the clients' files and logs, removed at the end of the test.
    final class Scratch {
        let url: URL
        init() throws { url = try MediaServerDirectory.make("media-test") }
        deinit { MediaServerDirectory.discard(url) }
        func file(_ name: String) -> URL { url.appendingPathComponent(name) }
        /// An FFmpeg client run in the background, its stderr in `NAME.log`.
        func client(_ name: String, _ arguments: [String]) throws -> ServerProcess {
            let process = ServerProcess(name: name, logURL: file("\(name).log"))
            try process.start("ffmpeg", arguments, directory: url)
            return process
        }
    }

    /// A publish of 3 s through `server` under `key`, read back by a player that was there first:
    /// every frame comes out, at 320x240, and decodes without an error.
    static func checkRTMPRoundTrip(_ server: RTMPServer, key: String, run: Int, _ scratch: Scratch) throws {
        let read = scratch.file("read-\(run).flv")
        let publishes = server.publishes(key)
        let reader = try server.startPlayer(key, into: read, log: scratch.file("reader-\(run).log"))
        defer { reader.stop() }
        let publisher = try scratch.client("publisher-\(run)", push(["-f", "flv", server.url(key)]))
        defer { publisher.stop() }
        #expect(publisher.waitForExit(timeout: 120) == 0, "\(publisher.logTail())\n\(server.log)")
        #expect(server.waitForPublish(key, count: publishes + 1), "\(server.log)")
        // The player ends a few seconds after the publish (its idle timeout).
        #expect(reader.waitForExit(timeout: 60) == 0, "\(reader.logTail())")
        let video = try MediaProbe.video(read.path)
        #expect(video == MediaProbe.Video(frames: frames, width: 320, height: 240),
                "read back \(String(describing: video))\n\(reader.logTail())\n\(server.log)")
        #expect(try MediaProbe.decodeErrors(read.path) == "")
    }

    /// Sizes of the system nginx's logs (nil when absent), which the tests' nginx must leave alone.
    static func systemLogSizes() -> [Int?] {
        ["/var/log/nginx/access.log", "/var/log/nginx/error.log"].map { path in
            var info = stat()
            return stat(path, &info) == 0 ? Int(info.st_size) : nil
        }
    }

    @Test func rtmpServerPlaysBackWhatIsPublished() throws {
        let systemLogs = Self.systemLogSizes()
        let scratch = try Scratch()
        let server = try RTMPServer()
        try Self.checkRTMPRoundTrip(server, key: "test", run: 1, scratch)
        // Stopped, nothing of it is left: the process is gone, the port free.
        let pid = server.process.processIdentifier
        server.stop()
        #expect(kill(pid, 0) != 0)
        #expect(!ServerProcess.portInUse(server.port, .tcp))
        #expect(!server.log.contains("[emerg]"), "\(server.log)")
        // Its logs went to its directory: the access log names the publish and the play.
        #expect(server.accessLog.contains("PUBLISH \"live\" \"test\"") && server.accessLog.contains("PLAY \"live\" \"test\""),
                "\(server.log)")
        #expect(Self.systemLogSizes() == systemLogs)
    }

    /// nginx needs nothing of root: run as `nobody` (when the tests run as root, which can
    /// switch), it serves the same.
    @Test(.enabled(if: getuid() == 0, "only root can run it as another user"))
    func rtmpServerRunsAsAnUnprivilegedUser() throws {
        let scratch = try Scratch()
        let server = try RTMPServer(runAs: "nobody")
        let status = (try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first
        #expect(uid.map(String.init) == String(server.user!.uid), "\(status)")
        try Self.checkRTMPRoundTrip(server, key: "nobody", run: 1, scratch)
    }

    @Test func rtmpServerKilledMidStreamComesBackOnTheSamePort() throws {
        let scratch = try Scratch()
        let server = try RTMPServer()
        let publisher = try scratch.client("long-publisher", Self.push(["-f", "flv", server.url("live")], seconds: 120))
        defer { publisher.stop() }
        try #require(server.waitForPublish("live", timeout: 60), "\(server.log)\n\(publisher.logTail())")
        let first = server.process.processIdentifier
        server.kill()
        #expect(!ServerProcess.portInUse(server.port, .tcp))
        // The publisher sees its server die and gives up (FFmpeg does not reconnect).
        let status = publisher.waitForExit(timeout: 60)
        #expect(status != nil && status != 0, "\(publisher.logTail())")

        try server.start()
        #expect(server.process.processIdentifier != first)
        #expect(server.process.starts == 2)
        try Self.checkRTMPRoundTrip(server, key: "live", run: 2, scratch)
    }

    /// FFmpeg's SRT caller URL for `listener`. `linger=5`: in SRT's live mode a closing sender
    /// drops what it has not sent yet (SRTO_LINGER is 0 there), and x264's lookahead hands
    /// FFmpeg its last second of frames at once at the end: without it about 40 frames go.
    static func srtCaller(_ listener: SRTListener) -> String { listener.url + "?mode=caller&linger=5" }

    /// FFmpeg pushing the 90 frames as MPEG-TS with a silent AAC track that goes on a second
    /// past them: the connection stays open for that second after the last picture, so that
    /// srt-live-transmit has read every picture before it sees the caller's close. It drops
    /// whatever it has not read yet when the close comes, acknowledged or not (`SRTListener`):
    /// with x264's lookahead the last second of frames leaves FFmpeg in one burst at the end,
    /// and on a loaded machine the listener's reading thread was once 28 packets behind (89
    /// frames written of the 90 SRT delivered).
    static func srtPush(_ listener: SRTListener) -> [String] {
        push(["-f", "mpegts", Self.srtCaller(listener)], seconds: frames / 30, silentTail: 1)
    }

    /// FFmpeg's SRT caller pushing MPEG-TS (`srtPush`): the listener's file holds the 90
    /// frames, at 320x240, the pictures decoding cleanly, and SRT dropped nothing (its
    /// statistics). The listener hands on what it receives at once (latency 0): FFmpeg's
    /// caller closes as soon as its packets are acknowledged, and srt-live-transmit drops
    /// what its latency still holds when it sees the close (`SRTListener`).
    static func checkSRTPush(_ listener: SRTListener, run: Int, _ scratch: Scratch) throws {
        let publisher = try scratch.client("publisher-\(run)", srtPush(listener))
        defer { publisher.stop() }
        #expect(publisher.waitForExit(timeout: 120) == 0, "\(publisher.logTail())\n\(listener.log)")
        #expect(listener.waitForCaller(count: run), "\(listener.log)")
        // srt-live-transmit has read everything once it says the caller has gone.
        #expect(listener.waitForCallerGone(), "\(listener.log)")
        listener.stop()
        let video = try MediaProbe.video(listener.output.path, format: "mpegts")
        let stats = listener.stats
        #expect(video == MediaProbe.Video(frames: frames, width: 320, height: 240),
                "received \(listener.receivedBytes) bytes: \(String(describing: video))\n\(String(describing: stats))\n\(listener.log)")
        #expect(stats.map { $0.dropped == 0 && $0.belated == 0 } == true, "\(String(describing: stats))")
        // The pictures; the silent track's end may be cut where the caller closed.
        #expect(try MediaProbe.decodeErrors(listener.output.path, format: "mpegts", videoOnly: true) == "")
    }

    @Test func srtListenerWritesWhatACallerPushes() throws {
        let scratch = try Scratch()
        let listener = try SRTListener(options: ["latency": "0"])
        try Self.checkSRTPush(listener, run: 1, scratch)
        #expect(!ServerProcess.portInUse(listener.port, .udp))
    }

    @Test func srtListenerKilledMidStreamComesBackOnTheSamePort() throws {
        let scratch = try Scratch()
        let listener = try SRTListener(options: ["latency": "0"])
        let publisher = try scratch.client("long-publisher", Self.push(["-f", "mpegts", Self.srtCaller(listener)], seconds: 120))
        defer { publisher.stop() }
        try #require(listener.waitForCaller(timeout: 60), "\(listener.log)\n\(publisher.logTail())")
        #expect(listener.waitForBytes(20_000, timeout: 60), "\(listener.log)")
        listener.kill()
        let first = listener.output
        #expect(listener.receivedBytes >= 20_000)
        #expect(!ServerProcess.portInUse(listener.port, .udp))
        // The caller finds its peer gone (SRT's idle timeout) and gives up.
        let status = publisher.waitForExit(timeout: 60)
        #expect(status != nil && status != 0, "\(publisher.logTail())")

        try listener.restart()
        #expect(listener.outputs.count == 2 && listener.output != first)
        try Self.checkSRTPush(listener, run: 2, scratch)
    }

    /// FFmpeg publishing over RTSP (RTP interleaved on TCP): the recording holds the 90 frames,
    /// at 320x240, decoding cleanly. GStreamer's server ends a publish with an EOS through its
    /// pipeline (`rtsp-record-server.py`), so its jitter buffer's last pictures are written.
    static func checkRTSPPublish(_ server: RTSPServer, publish: Int, _ scratch: Scratch) throws {
        let ended = server.endedPublishes
        let publisher = try scratch.client("publisher-\(publish)", push(["-f", "rtsp", "-rtsp_transport", "tcp", server.url]))
        defer { publisher.stop() }
        #expect(publisher.waitForExit(timeout: 120) == 0, "\(publisher.logTail())\n\(server.log)")
        #expect(server.waitForPublishEnd(count: ended + 1), "\(server.log)")
        let recordings = server.recordings
        try #require(recordings.count == publish, "\(recordings)\n\(server.log)")
        let file = recordings[publish - 1].path
        let video = try MediaProbe.video(file, format: "h264")
        #expect(video == MediaProbe.Video(frames: frames, width: 320, height: 240), "recorded \(String(describing: video))\n\(server.log)")
        #expect(try MediaProbe.decodeErrors(file, format: "h264") == "")
    }

    @Test(arguments: [RTSPServer.Backend.gstreamer, .ffmpeg])
    func rtspServerRecordsAPublish(_ backend: RTSPServer.Backend) throws {
        let scratch = try Scratch()
        let server = try RTSPServer(backend: backend)
        try Self.checkRTSPPublish(server, publish: 1, scratch)
        server.stop()
        #expect(!ServerProcess.portInUse(server.port, .tcp))
    }

    @Test func rtspServerKilledMidStreamComesBackOnTheSamePort() throws {
        let scratch = try Scratch()
        let server = try RTSPServer()
        let publisher = try scratch.client("long-publisher", Self.push(["-f", "rtsp", "-rtsp_transport", "tcp", server.url], seconds: 120))
        defer { publisher.stop() }
        try #require(server.waitForPublish(timeout: 60), "\(server.log)\n\(publisher.logTail())")
        #expect(server.waitForRecordedBytes(20_000, timeout: 60), "\(server.log)")
        server.kill()
        #expect(!ServerProcess.portInUse(server.port, .tcp))
        let status = publisher.waitForExit(timeout: 60)
        #expect(status != nil && status != 0, "\(publisher.logTail())")

        try server.start()
        try Self.checkRTSPPublish(server, publish: 2, scratch)
    }
}
