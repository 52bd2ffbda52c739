import Foundation
import Testing
import TestSupport

/// nalcast's own RTSP client (`consume --from rtsp://`) against a camera of the tests' own
/// (`Tests/Servers/rtsp-lockstep-camera.py`) that sends each access unit only once the relay
/// has handed the previous one on: an access unit ends at its RTP marker bit, not when the
/// next one begins; Digest authentication; a camera that sends its SPS and PPS only in the
/// SDP; UDP transport; the one-line ends of a refused or missing stream. Each run takes a
/// second or two: the camera sends as fast as the lockstep lets it.
@Suite(.serialized) struct RTSPClientTests {
    /// 45 pictures of the test pattern, an IDR every 30, two slices each, an AUD before each.
    static func stream(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("camera.h264")
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
                              "-frames:v", "45", "-c:v", "libx264", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p",
                              "-x264-params", "aud=1:slices=2", "-f", "h264", url.path])
        guard r.status == 0 else { throw MediaServerError("ffmpeg: \(r.stderr)") }
        return url
    }

    /// The lockstep camera on a free port, waiting for the relay on `relayPort`.
    static func camera(_ dir: URL, relayPort: UInt16, _ options: [String] = []) throws -> (ServerProcess, UInt16) {
        let port = try FreePort.tcp()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Servers/rtsp-lockstep-camera.py")
        let process = ServerProcess(name: "lockstep camera", logURL: dir.appendingPathComponent("camera.log"))
        try process.start("/usr/bin/python3", [script.path, String(port), try stream(in: dir).path, String(relayPort)] + options, directory: dir)
        try process.waitUntilListening(port: port, .tcp, timeout: 30)
        return (process, port)
    }

    /// Runs the lockstep over `transport`: every unit is handed on before the next is sent,
    /// the first with the SPS and PPS; the output decodes whole.
    func lockstep(transport: String, credentials: String?, cameraOptions: [String]) throws {
        let dir = try MediaServerDirectory.make("rtsp-lockstep-\(transport)")
        defer { MediaServerDirectory.discard(dir) }
        let relayPort = try FreePort.tcp()
        let (camera, port) = try Self.camera(dir, relayPort: relayPort, cameraOptions)
        defer { camera.stop() }
        let out = dir.appendingPathComponent("out.h264")
        let url = "rtsp://" + (credentials.map { $0 + "@" } ?? "") + "127.0.0.1:\(port)/cam"
        let consumer = try RelaySourceTests.consume(["--from", url, "--rtsp-transport", transport, "--listen", "tcp://127.0.0.1:\(relayPort)", "-o", out.path], in: dir)
        defer { consumer.stop() }
        #expect(camera.waitForLog("lockstep: ", timeout: 60), "\(camera.logTail())\n\(consumer.logTail())")
        #expect(camera.log.contains("lockstep: 45 units, each delivered before the next was sent"), "\(camera.logTail())")
        #expect(camera.log.contains("playing over \(transport)"), "\(camera.logTail())")
        // The SDP's parameter sets went in front of the first IDR (the camera sent none in band).
        #expect(camera.log.contains("first unit: AUD SPS PPS"), "\(camera.logTail())")
        if cameraOptions.contains("--session-timeout") {
            // The session is kept alive within its timeout (GET_PARAMETER, which the camera offers).
            #expect(camera.waitForLog("keep-alive GET_PARAMETER", timeout: 30), "\(camera.logTail())")
        }
        #expect(RelaySourceTests.interrupt(consumer) == 0, "\(consumer.logTail())")
        #expect(camera.waitForLog("teardown", timeout: 10), "TEARDOWN at the end\n\(camera.logTail())")
        let video = try MediaProbe.video(out.path, format: "h264")
        #expect(video?.frames == 45, "\(String(describing: video))")
        #expect(try MediaProbe.decodeErrors(out.path, format: "h264") == "")
        if let credentials {
            let password = String(credentials.split(separator: ":").last!)
            #expect(!RelaySourceTests.said(consumer).contains(password))
        }
    }

    @Test func digestOverTCPWithTheParameterSetsOnlyInTheSDP() throws {
        try lockstep(transport: "tcp", credentials: "op:pw%3A1", cameraOptions: ["--digest", "op:pw:1", "--no-inband-sets"])
    }

    /// UDP, and a session that times out after 2 s: kept alive.
    @Test func udpTransportAndKeepAlive() throws {
        try lockstep(transport: "udp", credentials: nil, cameraOptions: ["--session-timeout", "2"])
    }

    /// A wrong password, and none: 77 with one line, never retried; a path the camera does
    /// not serve: 66.
    @Test func refusedAndMissingStreamsEndInOneLine() throws {
        let dir = try MediaServerDirectory.make("rtsp-refused")
        defer { MediaServerDirectory.discard(dir) }
        let (camera, port) = try Self.camera(dir, relayPort: try FreePort.tcp(), ["--digest", "op:pw1"])
        defer { camera.stop() }
        for (credentials, said) in [("op:wrong@", "the server refused the credentials"), ("", "the server asks for credentials")] {
            let r = try Run.nalcast(["consume", "--from", "rtsp://\(credentials)127.0.0.1:\(port)/cam", "-o", "/dev/null", "--quiet"], timeout: 60)
            #expect(r.status == 77, "\(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains(said), "\(r.stderr)")
            #expect(!r.stderr.contains("wrong"))
        }
        let missing = try Run.nalcast(["consume", "--from", "rtsp://op:pw1@127.0.0.1:\(port)/other", "-o", "/dev/null", "--quiet"], timeout: 60)
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.split(separator: "\n").count == 1 && missing.stderr.contains("404"), "\(missing.stderr)")
    }

    /// One stream's figures from ffprobe (`start_time`, `sample_rate`, `nb_read_packets`...);
    /// MPEG-TS lists each stream twice (its program's, then its own): the first.
    static func probe(_ path: String, _ stream: String, _ entry: String, count: Bool = false) throws -> String {
        let out = try Tool.run(["ffprobe", "-v", "error", "-select_streams", stream] + (count ? ["-count_packets"] : [])
                               + ["-show_entries", "stream=\(entry)", "-of", "csv=p=0", path]).stdout
        return out.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }

    /// A camera with a microphone (GStreamer: H.264 and MPEG4-GENERIC AAC): the sound goes
    /// into the container, 48 kHz stereo, decoding cleanly, starting with the pictures (the
    /// two tracks put on one clock) and none of its frames lost.
    @Test func aCameraWithSoundIsRecordedWithIt() throws {
        let camera = try RTSPCamera(audio: true)
        let dir = try MediaServerDirectory.make("rtsp-audio")
        defer { MediaServerDirectory.discard(dir) }
        let out = dir.appendingPathComponent("out.ts")
        let consumer = try RelaySourceTests.consume(["--from", camera.url(), "-o", out.path], in: dir)
        defer { consumer.stop() }
        #expect(consumer.waitForLog("audio aac 48000 Hz 2 ch", timeout: 30), "\(consumer.logTail())\n\(camera.log)")
        // Until the file holds 60 pictures (two seconds of the camera's): not a fixed wait,
        // which a loaded machine's slow camera would fill with fewer.
        #expect(CleanEndTests.waitFor {
            usleep(200_000)  // an ffprobe run at most five times a second
            return (Int((try? Self.probe(out.path, "v:0", "nb_read_packets", count: true)) ?? "") ?? 0) >= 60
        },
                "\(consumer.logTail())")
        #expect(RelaySourceTests.interrupt(consumer) == 0, "\(consumer.logTail())")
        #expect(try Self.probe(out.path, "a:0", "codec_name,sample_rate,channels") == "aac,48000,2")
        let start = (video: Double(try Self.probe(out.path, "v:0", "start_time")) ?? -99, audio: Double(try Self.probe(out.path, "a:0", "start_time")) ?? 99)
        #expect(abs(start.audio - start.video) < 0.5, "the sound starts with the pictures: \(start)")
        #expect(try MediaProbe.decodeErrors(out.path) == "")
        let pictures = Int(try Self.probe(out.path, "v:0", "nb_read_packets", count: true)) ?? 0
        let frames = Int(try Self.probe(out.path, "a:0", "nb_read_packets", count: true)) ?? 0
        // 48000 / 1024 = 46.9 AAC frames a second against 30 pictures.
        #expect(pictures >= 45 && Double(frames) > Double(pictures) / 30 * 46.9 * 0.8, "\(frames) AAC frames for \(pictures) pictures")
    }
}
