import Foundation
import Testing
import TestSupport

/// `consume --from` any H.264 source through libavformat, never re-encoded: container files
/// made by FFmpeg, an RTSP camera stand-in (GStreamer), an SRT sender, nginx-rtmp played as
/// a client, MPEG-TS over UDP. Real peers on free loopback ports, stopped by PID; what comes
/// out is decoded by FFmpeg. Each live source and a container file are relayed too
/// (`--listen`, `--web`): 16 FFmpeg readers decode it while headless Chromium plays the
/// relay's page.
@Suite(.serialized) struct RelaySourceTests {
    static let size = (width: 320, height: 240)

    /// A source file: the test pattern, 60 frames of libx264 (B-frames and all, as FFmpeg
    /// makes them), an IDR every 30, with an AAC track beside it.
    static func sourceFile(_ container: String, in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("source.\(container)")
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-y",
                              "-f", "lavfi", "-i", "testsrc=size=\(size.width)x\(size.height):rate=30", "-f", "lavfi", "-i", "sine",
                              "-frames:v", "60", "-shortest", "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", url.path])
        guard r.status == 0 else { throw MediaServerError("ffmpeg making \(url.lastPathComponent): \(r.stderr)") }
        return url
    }

    /// The MD5 of every decoded picture of the first video stream, in order.
    static func pictureDigests(_ path: String, format: String? = nil) throws -> [String] {
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error"] + (format.map { ["-f", $0] } ?? [])
                             + ["-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
        return r.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// `nalcast consume ARGS` in the background, its stderr in `dir/consume.log`.
    static func consume(_ arguments: [String], in dir: URL) throws -> ServerProcess {
        let process = ServerProcess(name: "nalcast consume", logURL: dir.appendingPathComponent("consume.log"))
        try process.start(Run.nalcast, ["consume"] + arguments, directory: dir)
        return process
    }

    /// What consume said (its log less the command line the log starts with).
    static func said(_ consumer: ServerProcess) -> String {
        consumer.log.split(separator: "\n").filter { !$0.hasPrefix("--- start") }.joined(separator: "\n")
    }

    /// The `tcp://127.0.0.1:PORT` a relay (`--listen tcp://127.0.0.1:0`) said it serves on.
    static func servingEndpoint(_ consumer: ServerProcess) -> String? {
        guard consumer.waitForLog("serving tcp://", timeout: 30) else { return nil }
        let text = said(consumer)
        guard let range = text.range(of: "serving tcp://") else { return nil }
        let rest = text[range.upperBound...]
        return "tcp://" + rest.prefix { $0.isNumber || $0 == "." || $0 == ":" }
    }

    /// The page's URL a relay (`--web tcp://127.0.0.1:0`) announced.
    static func pageURL(_ consumer: ServerProcess) -> String? {
        guard consumer.waitForLog("the page on http://", timeout: 30) else { return nil }
        let text = said(consumer)
        guard let range = text.range(of: "the page on ") else { return nil }
        return String(text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "," })
    }

    /// `--max-readers` for a relay that the 16 readers below and the page (`PageCheck`) read
    /// at once: 16, the default, refused whichever came last, the page's upgrade as often as
    /// not (503, which a browser reports as 1006) when the readers were slow to leave.
    static let readersWithThePage = "17"

    /// 16 FFmpeg readers of the relay at `endpoint` (`ffmpeg -f h264 -i tcp://…`), each
    /// decoding `frames` pictures: every one decodes all of them with no error line. They
    /// probe 100 kB / 0.5 s of stream, not FFmpeg's default 5 s, which a source of a few
    /// seconds would end before.
    static func sixteenReadersDecode(_ endpoint: String, frames: Int = 30, in dir: URL, _ context: String) throws {
        let port = endpoint.split(separator: ":").last!
        let readers = try (0..<16).map { i -> (ServerProcess, URL) in
            let output = dir.appendingPathComponent("reader-\(i).framecrc")
            let reader = ServerProcess(name: "ffmpeg reader \(i)", logURL: dir.appendingPathComponent("reader-\(i).log"))
            try reader.start("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-probesize", "100000", "-analyzeduration", "500000",
                                        "-f", "h264", "-i", "tcp://127.0.0.1:\(port)", "-frames:v", String(frames), "-f", "framecrc", "-"], stdout: output)
            return (reader, output)
        }
        for (i, (reader, output)) in readers.enumerated() {
            let status = reader.waitForExit(timeout: 30)
            if status == nil { reader.stop() }
            let decoded = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            let errors = reader.log.split(separator: "\n").filter { !$0.hasPrefix("--- start") }.joined(separator: "\n")
            let r = (status: status ?? -1, frames: decoded, errors: errors)
            #expect(r.status == 0 && r.frames == frames, "\(context): reader \(i) decoded \(r.frames) frames: \(r.errors)")
            #expect(r.errors.isEmpty, "\(context): reader \(i): \(r.errors)")
        }
    }

    /// SIGINT, as a user stops it: the exit code.
    static func interrupt(_ consumer: ServerProcess) -> Int32? {
        consumer.signal(SIGINT)
        return consumer.waitForExit(timeout: 30)
    }

    /// A sender of the test pattern encoded by FFmpeg (no B-frames, an IDR a second), in
    /// real time, for `frames`, to `url` as `format`.
    static func sender(_ url: String, format: String, frames: Int, in dir: URL, name: String = "sender") throws -> ServerProcess {
        let process = ServerProcess(name: "ffmpeg \(name)", logURL: dir.appendingPathComponent("\(name).log"))
        try process.start("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error", "-re",
                                     "-f", "lavfi", "-i", "testsrc=size=\(size.width)x\(size.height):rate=30", "-frames:v", String(frames),
                                     "-c:v", "libx264", "-g", "30", "-bf", "0", "-tune", "zerolatency", "-pix_fmt", "yuv420p", "-f", format, url],
                          directory: dir)
        return process
    }

    @Test(arguments: ["mp4", "ts", "mkv", "flv"])
    func containerFileGivesEveryPictureUnchanged(_ container: String) throws {
        let dir = try MediaServerDirectory.make("relay-file")
        defer { MediaServerDirectory.discard(dir) }
        let source = try Self.sourceFile(container, in: dir)
        let out = dir.appendingPathComponent("out.h264")
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        // Its AAC track is read and would go into a container; raw H.264 carries video only.
        #expect(r.stderr.contains("audio aac"), "\(r.stderr)")
        #expect(r.stderr.contains("file: raw H.264 carries video only"), "\(r.stderr)")
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect(video == MediaProbe.Video(frames: 60, width: Self.size.width, height: Self.size.height), "\(String(describing: video))")
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        let relayed = try Self.pictureDigests(out.path, format: "h264")
        #expect(relayed.count == 60)
        #expect(relayed == (try Self.pictureDigests(source.path)), "\(container): the pictures differ from the source's")
        // nalcast's wire form: every access unit begins with an AUD, every IDR carries SPS and PPS.
        let units = try inspect(out.path)
        #expect(units.accessUnits == 60)
        #expect(units.firstTypes.prefix(3) == [9, 7, 8], "\(units.firstTypes)")
    }

    /// A container file served by a relay, at the pace of its media time: 16 readers decode it.
    @Test func containerFileIsRelayedToSixteenReaders() throws {
        let dir = try MediaServerDirectory.make("relay-file-readers")
        defer { MediaServerDirectory.discard(dir) }
        let source = dir.appendingPathComponent("long.mp4")
        let made = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
                                 "-frames:v", "300", "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", source.path])
        try #require(made.status == 0, "\(made.stderr)")
        var page = try PageCheck.launchBeforeAShortStream(in: dir, "MP4 file")
        let consumer = try Self.consume(["--from", source.path, "--listen", "tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "--max-readers", Self.readersWithThePage], in: dir)
        defer { consumer.stop() }
        let endpoint = try #require(Self.servingEndpoint(consumer), "\(consumer.logTail())")
        try page?.open(consumer)
        try Self.sixteenReadersDecode(endpoint, in: dir, "mp4 file")
        try page?.finish()
        #expect(consumer.waitForExit(timeout: 60) == 0, "\(consumer.logTail())")
    }

    /// An MPEG-TS served over HTTP (Python's http.server): read to its end, which ends the
    /// run with exit 0 as a file's does, every picture as in the file.
    @Test func httpTransportStreamIsReadToItsEnd() throws {
        let dir = try MediaServerDirectory.make("relay-http")
        defer { MediaServerDirectory.discard(dir) }
        let source = try Self.sourceFile("ts", in: dir)
        let port = try FreePort.tcp()
        let server = ServerProcess(name: "http.server", logURL: dir.appendingPathComponent("http.log"))
        try server.start("/usr/bin/python3", ["-m", "http.server", "--bind", "127.0.0.1", "--directory", dir.path, String(port)], directory: dir)
        defer { server.stop() }
        try server.waitUntilListening(port: port, .tcp)
        let out = dir.appendingPathComponent("out.h264")
        let r = try Run.nalcast(["consume", "--from", "http://127.0.0.1:\(port)/source.ts?token=abc", "-o", out.path, "--reconnect-timeout", "5s"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("opened http://127.0.0.1:\(port)/source.ts?token=***"), "\(r.stderr)")
        #expect(try Self.pictureDigests(out.path, format: "h264") == (try Self.pictureDigests(source.path)))
    }

    /// A container goes to a container too: the MP4's timing survives into an MPEG-TS.
    @Test func containerFileToAContainerKeepsItsTiming() throws {
        let dir = try MediaServerDirectory.make("relay-file-ts")
        defer { MediaServerDirectory.discard(dir) }
        let source = try Self.sourceFile("mp4", in: dir)
        let out = dir.appendingPathComponent("out.ts")
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.pictureDigests(out.path) == (try Self.pictureDigests(source.path)))
        try PushTests.checkTimeline(out.path, "mp4 to ts")
        let duration = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", out.path]).stdout
        #expect(abs((Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 2.0) < 0.1, "duration \(duration)")
    }

    @Test(arguments: [("hevc", "libx265", "mp4"), ("mpeg4", "mpeg4", "mkv")])
    func otherVideoCodecsAreOneLineNamingTheCodec(_ codec: String, _ encoder: String, _ container: String) throws {
        let dir = try MediaServerDirectory.make("relay-codec")
        defer { MediaServerDirectory.discard(dir) }
        let source = dir.appendingPathComponent("source.\(container)")
        let made = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
                                 "-frames:v", "10", "-c:v", encoder, source.path])
        try #require(made.status == 0, "\(made.stderr)")
        let out = dir.appendingPathComponent("out.h264")
        try Data("kept".utf8).write(to: out)
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
        #expect(r.status == 65, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("its video is \(codec), not H.264"), "\(r.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) == "kept", "an existing output was touched")
    }

    @Test func unknownSchemesAreUsageErrorsAndURLsAreMasked() throws {
        let r = try Run.nalcast(["consume", "--from", "gopher://example/x", "-o", "-"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("expected tcp://HOST:PORT"), "\(r.stderr)")
        let dry = try Run.nalcast(["consume", "--from", "rtsp://admin:hunter2@127.0.0.1:554/stream1", "-o", "/dev/null", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.text.contains("from: rtsp://***@127.0.0.1:554/stream1"), "\(dry.text)")
        #expect(dry.text.contains("rtsp_transport=tcp"), "\(dry.text)")
        #expect(!dry.text.contains("hunter2") && !dry.stderr.contains("hunter2"))
        let udp = try Run.nalcast(["consume", "--from", "rtsp://127.0.0.1/x", "--rtsp-transport", "udp", "-o", "/dev/null", "--dry-run"])
        #expect(udp.text.contains("rtsp_transport=udp"), "\(udp.text)")
        let bad = try Run.nalcast(["consume", "--from", "rtsp://127.0.0.1/x", "--rtsp-transport", "sctp", "-o", "/dev/null"])
        #expect(bad.status == 64, "\(bad.stderr)")
    }

    /// An IP camera over RTSP (RTP interleaved in TCP, the default): the relayed stream
    /// decodes from its first picture; the password never shows; the open time is reported.
    @Test func rtspCameraIsRelayed() throws {
        let camera = try RTSPCamera()
        let dir = try MediaServerDirectory.make("relay-rtsp")
        defer { MediaServerDirectory.discard(dir) }
        let out = dir.appendingPathComponent("out.h264")
        let events = dir.appendingPathComponent("events.jsonl")
        let consumer = try Self.consume(["--from", camera.url(credentials: "viewer:s3cret"), "-o", out.path, "--events", events.path,
                                          "--listen", "tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "--max-readers", Self.readersWithThePage], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("opened rtsp://***@127.0.0.1:\(camera.port)/cam", timeout: 30), "\(consumer.logTail())\n\(camera.log)")
        // Relayed: 16 FFmpeg readers, and the page in headless Chromium.
        let endpoint = try #require(Self.servingEndpoint(consumer), "\(consumer.logTail())")
        let page = try PageCheck.start(consumer, in: dir, "RTSP camera")
        try Self.sixteenReadersDecode(endpoint, in: dir, "rtsp")
        try page?.finish()
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect((video?.frames ?? 0) >= 45, "\(String(describing: video))\n\(consumer.logTail())")
        #expect(video?.width == Self.size.width && video?.height == Self.size.height)
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        let lines = eventLines(events)
        let opened = lines.first { $0["event"] as? String == "connected" }
        let openSeconds = opened?["openSeconds"] as? Double ?? 99
        #expect(openSeconds < 5, "open time \(openSeconds) s")
        print("RTSP camera opened in \(openSeconds) s")
        #expect(!Self.said(consumer).contains("s3cret") && !((try? String(contentsOf: events, encoding: .utf8)) ?? "").contains("s3cret"))
    }

    /// `--rtsp-transport udp`: RTP in datagrams of their own (loopback loses none here).
    @Test func rtspOverUDPIsRelayed() throws {
        let camera = try RTSPCamera()
        let dir = try MediaServerDirectory.make("relay-rtsp-udp")
        defer { MediaServerDirectory.discard(dir) }
        let out = dir.appendingPathComponent("out.h264")
        let consumer = try Self.consume(["--from", camera.url(), "--rtsp-transport", "udp", "-o", out.path], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("opened rtsp://", timeout: 30), "\(consumer.logTail())\n\(camera.log)")
        sleep(2)
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect((video?.frames ?? 0) >= 30, "\(String(describing: video))")
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
    }

    /// The camera reboots mid-stream: consume reopens it, and what it wrote decodes with no
    /// error, decode times rising across the gap.
    @Test func rtspCameraRestartIsReconnected() throws {
        let camera = try RTSPCamera()
        let dir = try MediaServerDirectory.make("relay-rtsp-restart")
        defer { MediaServerDirectory.discard(dir) }
        let out = dir.appendingPathComponent("out.ts")
        let events = dir.appendingPathComponent("events.jsonl")
        let consumer = try Self.consume(["--from", camera.url(), "-o", out.path, "--events", events.path, "--stall-timeout", "2s"], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("opened rtsp://", timeout: 30), "\(consumer.logTail())")
        sleep(2)
        try camera.restart()
        #expect(consumer.waitForLog("opened rtsp://", count: 2, timeout: 30), "\(consumer.logTail())\n\(camera.log)")
        sleep(2)
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        #expect(consumer.log.contains("lost rtsp://127.0.0.1:\(camera.port)/cam"), "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path)
        #expect((video?.frames ?? 0) >= 60, "\(String(describing: video))")
        #expect(try MediaProbe.decodeErrors(out.path) == "")
        try PushTests.checkTimeline(out.path, "rtsp restart")
        let kinds = eventLines(events).compactMap { $0["event"] as? String }
        #expect(kinds.filter { $0 == "connected" }.count == 2 && kinds.contains("disconnected"), "\(kinds)")
    }

    /// An SRT sender in listener mode, consume the caller; the sender stops and starts again:
    /// consume reconnects, the output decodes with rising decode times.
    @Test func srtSenderIsRelayedAcrossARestart() throws {
        let dir = try MediaServerDirectory.make("relay-srt")
        defer { MediaServerDirectory.discard(dir) }
        let port = try FreePort.udp()
        let url = "srt://127.0.0.1:\(port)?mode=listener&latency=200000"
        // The sender's 8 s must not pass while a loaded machine is still starting the browser.
        var page = try PageCheck.launchBeforeTheSource(in: dir, "SRT")
        var sender = try Self.sender(url, format: "mpegts", frames: 240, in: dir)
        try sender.waitUntilListening(port: port, .udp)
        let out = dir.appendingPathComponent("out.ts")
        let consumer = try Self.consume(["--from", "srt://127.0.0.1:\(port)", "-o", out.path, "--stall-timeout", "2s",
                                          "--listen", "tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "--max-readers", Self.readersWithThePage], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("opened srt://127.0.0.1:\(port)", timeout: 30), "\(consumer.logTail())\n\(sender.logTail())")
        let endpoint = try #require(Self.servingEndpoint(consumer))
        try page?.open(consumer)
        try Self.sixteenReadersDecode(endpoint, in: dir, "srt")
        try page?.finish()
        _ = sender.waitForExit(timeout: 30)
        sender = try Self.sender(url, format: "mpegts", frames: 60, in: dir, name: "sender2")
        #expect(consumer.waitForLog("opened srt://127.0.0.1:\(port)", count: 2, timeout: 30), "\(consumer.logTail())\n\(sender.logTail())")
        _ = sender.waitForExit(timeout: 30)
        sleep(1)
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path)
        #expect((video?.frames ?? 0) >= 200, "\(String(describing: video))\n\(consumer.logTail())")
        #expect(video?.width == Self.size.width)
        #expect(try MediaProbe.decodeErrors(out.path) == "")
        try PushTests.checkTimeline(out.path, "srt restart")
    }

    /// consume as the SRT listener (`?mode=listener`), the sender calling it later.
    @Test func srtListenerWaitsForItsSender() throws {
        let dir = try MediaServerDirectory.make("relay-srt-listener")
        defer { MediaServerDirectory.discard(dir) }
        let port = try FreePort.udp()
        let out = dir.appendingPathComponent("out.h264")
        let consumer = try Self.consume(["--from", "srt://127.0.0.1:\(port)?mode=listener", "-o", out.path], in: dir)
        defer { consumer.stop() }
        try consumer.waitUntilListening(port: port, .udp, timeout: 30)
        sleep(1)
        let sender = try Self.sender("srt://127.0.0.1:\(port)?latency=200000", format: "mpegts", frames: 150, in: dir)
        #expect(sender.waitForExit(timeout: 30) == 0, "\(sender.logTail())")
        #expect(consumer.waitForLog("opened srt://127.0.0.1:\(port)?mode=listener", timeout: 10), "\(consumer.logTail())")
        sleep(1)
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        // An FFmpeg caller that closes at once loses what SRT still held for it (FFmpeg's own
        // listener gets no more): most of the frames.
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect((video?.frames ?? 0) >= 60, "\(String(describing: video))\n\(consumer.logTail())")
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        #expect(!Self.said(consumer).contains("cannot open"), "\(consumer.logTail())")
    }

    /// nginx-rtmp with an FFmpeg publisher; consume plays rtmp:// as a client. The stream
    /// name is masked like a stream key.
    @Test func rtmpStreamIsPlayed() throws {
        let server = try RTMPServer()
        let dir = try MediaServerDirectory.make("relay-rtmp")
        defer { MediaServerDirectory.discard(dir) }
        // The publisher's 8 s must not pass while a loaded machine is still starting the browser.
        var page = try PageCheck.launchBeforeTheSource(in: dir, "RTMP")
        let publisher = try Self.sender(server.url("cam1"), format: "flv", frames: 240, in: dir, name: "publisher")
        defer { publisher.stop() }
        #expect(server.waitForPublish("cam1"), "\(server.log)\n\(publisher.logTail())")
        let out = dir.appendingPathComponent("out.h264")
        let consumer = try Self.consume(["--from", server.url("cam1"), "-o", out.path, "--listen", "tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "--max-readers", Self.readersWithThePage], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("opened rtmp://127.0.0.1:\(server.port)/live/****", timeout: 30), "\(consumer.logTail())\n\(server.log)")
        let endpoint = try #require(Self.servingEndpoint(consumer))
        try page?.open(consumer)
        try Self.sixteenReadersDecode(endpoint, in: dir, "rtmp")
        try page?.finish()
        _ = publisher.waitForExit(timeout: 30)
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect((video?.frames ?? 0) >= 60, "\(String(describing: video))\n\(consumer.logTail())")
        #expect(video?.width == Self.size.width && video?.height == Self.size.height)
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        #expect(!Self.said(consumer).contains("cam1"), "\(consumer.logTail())")
    }

    /// MPEG-TS over UDP from FFmpeg; when the sender stops, the source stalls: reported (log
    /// line, event, metric) and reopened, and the run goes on until stopped.
    @Test func udpTransportStreamIsRelayedAndAStallIsReported() throws {
        let dir = try MediaServerDirectory.make("relay-udp")
        defer { MediaServerDirectory.discard(dir) }
        let port = try FreePort.udp()
        let out = dir.appendingPathComponent("out.h264")
        let events = dir.appendingPathComponent("events.jsonl")
        let consumer = try Self.consume(["--from", "udp://127.0.0.1:\(port)", "-o", out.path, "--stall-timeout", "1s", "--events", events.path,
                                          "--listen", "tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "--max-readers", Self.readersWithThePage], in: dir)
        defer { consumer.stop() }
        try consumer.waitUntilListening(port: port, .udp, timeout: 30)
        // The sender's 8 s must not pass while a loaded machine is still starting the browser.
        var page = try PageCheck.launchBeforeTheSource(in: dir, "UDP")
        try page?.open(consumer)
        let sender = try Self.sender("udp://127.0.0.1:\(port)?pkt_size=1316", format: "mpegts", frames: 240, in: dir)
        #expect(consumer.waitForLog("opened udp://", timeout: 30), "\(consumer.logTail())")
        let endpoint = try #require(Self.servingEndpoint(consumer))
        try Self.sixteenReadersDecode(endpoint, in: dir, "udp")
        try page?.finish()
        #expect(sender.waitForExit(timeout: 30) == 0, "\(sender.logTail())")
        #expect(consumer.waitForLog("stalled: no packet for 1.000 s", timeout: 30), "\(consumer.logTail())")
        #expect(Self.interrupt(consumer) == 0, "\(consumer.logTail())")
        let video = try MediaProbe.video(out.path, format: "h264")
        // Loopback datagrams are not lost here, but UDP promises nothing: most of them.
        #expect((video?.frames ?? 0) >= 200, "\(String(describing: video))\n\(consumer.logTail())")
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        #expect(eventLines(events).contains { $0["event"] as? String == "stalled" })
    }

    /// Two MPEG-TS files one after the other, the second at another size and with its clock
    /// starting over: the new SPS/PPS pass through before its IDR, both sizes decode, and
    /// media time goes on (decode times rising in a container output).
    @Test func aResolutionChangeAndATimestampResetPassThrough() throws {
        let dir = try MediaServerDirectory.make("relay-resize")
        defer { MediaServerDirectory.discard(dir) }
        var joined = Data()
        for (i, size) in ["320x240", "640x360"].enumerated() {
            let part = dir.appendingPathComponent("part\(i).ts")
            let r = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=30",
                                  "-frames:v", "30", "-c:v", "libx264", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p", part.path])
            try #require(r.status == 0, "\(r.stderr)")
            joined.append(try Data(contentsOf: part))
        }
        let source = dir.appendingPathComponent("joined.ts")
        try joined.write(to: source)
        let out = dir.appendingPathComponent("out.ts")
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try MediaProbe.decodeErrors(out.path) == "")
        try PushTests.checkTimeline(out.path, "resolution change")
        let sizes = try Tool.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width", "-of", "csv=p=0", out.path])
            .stdout.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ", ")) }
        #expect(sizes.filter { $0 == "320" }.count == 30 && sizes.filter { $0 == "640" }.count == 30, "\(sizes)")
    }

    /// A camera that is not there: consume keeps trying until --reconnect-timeout, then one
    /// line naming it (masked) and exit 69.
    @Test func aSourceThatNeverAnswersGivesUpAt69() throws {
        let port = try FreePort.tcp()
        let r = try Run.nalcast(["consume", "--from", "rtsp://op:pw1@127.0.0.1:\(port)/cam", "-o", "/dev/null", "--reconnect-timeout", "1s", "--quiet"], timeout: 60)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot open rtsp://***@127.0.0.1:\(port)/cam"), "\(r.stderr)")
        #expect(!r.stderr.contains("pw1"))
    }
}
