import Foundation
import TestSupport
import Testing

/// `--forward whip://…`: `produce` and a relay push to a WHIP server of aiortc's (an
/// implementation of WebRTC independent of nalcast's; Tests/WebRTC/whip_server.py in the venv
/// of scripts/setup), which decodes the frames and reads the colour bars of the last one:
/// nalcast offers, runs ICE as the controlling agent and DTLS as the client (the server
/// answers passive) or the server (active), answers a PLI with an IDR (the encoder's, or the
/// relay's cached GOP), and DELETEs its session at the end. A wrong token is refused with one
/// line and exit 77; a server that goes away and comes back gets the stream again.
@Suite(.serialized) struct WHIPPushTests {
    static let server = Run.root.appendingPathComponent("Tests/WebRTC/whip_server.py").path
    /// Constrained Baseline: aiortc takes no other H.264 profile. An IDR a second, for the
    /// reconnects (a connection starts at one).
    static let stream = ["--source", "testsrc", "--size", "640x360", "--profile", "baseline", "--keyint", "30"]
    /// An IDR every 10 s: within a test's few seconds, the only one after the first comes
    /// from the PLI.
    static let rareIDRs = ["--source", "testsrc", "--size", "640x360", "--profile", "baseline", "--keyint", "300"]

    /// The WHIP server on `port` (0: the kernel's), its stdout (JSON lines) in `dir`.
    static func startServer(_ dir: URL, _ extra: [String], port: Int = 0) throws -> (Background, URL, Int) {
        let portFile = dir.appendingPathComponent("port-\(UUID().uuidString)")
        let out = dir.appendingPathComponent("server-\(UUID().uuidString).jsonl")
        let server = try Background(PlaybackTests.venvPython, [Self.server, portFile.path, WebViewerTests.points, "--port", String(port)] + extra, stdoutTo: out)
        let deadline = Moment.now.addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: portFile.path) {
            guard Moment.now < deadline, server.process.isRunning else { throw WebViewerTests.Failure("the WHIP server did not start: \(server.stderr)") }
            usleep(20_000)
        }
        let chosen = Int(try String(contentsOf: portFile, encoding: .utf8)) ?? 0
        return (server, out, chosen)
    }

    /// `body` with a temporary directory and the WHIP server of `extra` started in it (its
    /// process, its stdout, its port); both gone after it.
    static func withServer<T>(_ extra: [String], _ body: (_ server: Background, _ dir: URL, _ out: URL, _ port: Int) throws -> T) throws -> T {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (server, out, port) = try startServer(dir, extra)
        defer { server.signal(SIGKILL); server.wait() }
        return try body(server, dir, out, port)
    }

    /// The server's events of kind `event`, waiting (up to 30 s) until there are `count`.
    static func serverEvents(_ out: URL, _ event: String, count: Int = 1) -> [[String: Any]] {
        let deadline = Moment.now.addingTimeInterval(30)
        while true {
            let found = WebViewerTests.events(out).filter { $0["event"] as? String == event }
            if found.count >= count || Moment.now >= deadline { return found }
            usleep(50_000)
        }
    }

    /// What a session the server decoded should show: 640x360 frames, at least 30, the bars.
    static func checkSession(_ ended: [String: Any], _ what: String) {
        #expect(ended["width"] as? Int == 640 && ended["height"] as? Int == 360, "\(what): \(ended["width"] ?? "?")x\(ended["height"] ?? "?")")
        #expect((ended["frames"] as? Int ?? 0) >= 30, "\(what): \(ended["frames"] ?? 0) frames decoded")
        WebViewerTests.checkBars(ended["pixels"] as? [[Int]] ?? [], what)
        #expect(ended["deleted"] as? Bool == true, "\(what): the session was not DELETEd")
        let offer = ended["offer"] as? String ?? ""
        #expect(offer.contains("a=sendonly") && offer.contains("packetization-mode=1;profile-level-id=42"), "\(what): \(offer)")
    }

    /// `produce` pushes to a server that answers a=setup:passive (nalcast the DTLS client),
    /// its bearer token from NALCAST_WHIP_TOKEN (never printed); a PLI after frame 10 gets an
    /// IDR from the encoder; `--audio tone`'s beeps arrive as Opus (1 kHz at -6 dBFS).
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func producePushes() throws {
        try Self.withServer(["--token", "s3cret-token", "--passive", "--pli", "10"]) { _, dir, out, port in
            let events = dir.appendingPathComponent("events.jsonl")
            var environment = ProcessInfo.processInfo.environment
            environment["NALCAST_WHIP_TOKEN"] = "s3cret-token"
            let producer = try Background(Run.nalcast, ["produce"] + Self.rareIDRs + ["--duration", "4s", "--audio", "tone", "--events", events.path,
                                                                                   "--forward", "whip://127.0.0.1:\(port)/whip"], environment: environment)
            #expect(producer.wait(timeout: 60) == 0, "\(producer.stderr)")
            let ended = try #require(Self.serverEvents(out, "ended").first, "no session ended: \(producer.stderr)")
            Self.checkSession(ended, "aiortc's last frame pushed by produce")
            #expect(ended["answer"].map { "\($0)".contains("a=setup:passive") } == true, "the server did not answer passive")
            #expect((ended["keyframesAfterPLI"] as? Int ?? 0) >= 1, "no IDR after the PLI: \(ended)")
            #expect(!producer.stderr.contains("s3cret-token"), "the token was printed: \(producer.stderr)")
            let audio = ended["audio"] as? [String: Any] ?? [:]
            #expect((audio["seconds"] as? Double ?? 0) >= 2, "the sound decoded: \(audio)")
            #expect(abs((audio["rms"] as? Double ?? 0) - 0.354) < 0.05, "RMS \(audio), a -6 dBFS sine is 0.354")
            #expect(abs((audio["crossingsPerSecond"] as? Double ?? 0) - 1000) < 10, "\(audio)")
            #expect(ended["offer"].map { "\($0)".contains("m=audio 9 UDP/TLS/RTP/SAVPF 111") } == true, "no Opus offered")
            let connected = WebViewerTests.events(events).filter { $0["event"] as? String == "forward-connected" }
            #expect(connected.count == 1, "\(connected)")
            // Its end says what it sent, protected with AES-GCM (nalcast's first SRTP profile,
            // which aiortc's libsrtp does too).
            let closed = WebViewerTests.events(events).first { $0["event"] as? String == "forward-closed" }
            #expect((closed?["summary"] as? String)?.contains("sent (SRTP_AEAD_AES_128_GCM)") == true, "\(WebViewerTests.events(events))")
            print("WHIP push: POST to the server's first decoded frame \(ended["firstFrameMs"] ?? "?") ms")
        }
    }

    /// A relay pushes what it reads to a server that answers a=setup:active (nalcast the DTLS
    /// server); a PLI gets the relay's cached GOP again.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func relayPushes() throws {
        try Self.withServer(["--pli", "10"]) { _, _, out, port in
            let producer = try Background(Run.nalcast, ["produce"] + Self.rareIDRs + ["--listen", "tcp://127.0.0.1:0"])
            defer { producer.signal(SIGINT); producer.wait() }
            let endpoint = try #require(producer.servingEndpoint(), "\(producer.stderr)")
            let relay = try Background(Run.nalcast, ["consume", "--from", endpoint, "--forward", "http://127.0.0.1:\(port)/whip"])
            let frames = Self.serverEvents(out, "frames")
            // The IDR the PLI asked for, an event of its own: 20 frames after the PLI were not
            // always enough on a loaded machine (the answer comes at most once a second).
            let answered = Self.serverEvents(out, "keyframe-after-pli")
            relay.signal(SIGINT)
            #expect(relay.wait(timeout: 30) == 0, "\(relay.stderr)")
            #expect(!frames.isEmpty, "no 30 frames at the server: \(relay.stderr)")
            #expect(!answered.isEmpty, "no keyframe after the PLI: \(relay.stderr)")
            let ended = try #require(Self.serverEvents(out, "ended").first, "no session ended: \(relay.stderr)")
            Self.checkSession(ended, "aiortc's last frame pushed by a relay")
            #expect(ended["answer"].map { "\($0)".contains("a=setup:active") } == true, "the server did not answer active")
            #expect((ended["keyframesAfterPLI"] as? Int ?? 0) >= 1, "no IDR after the PLI: \(ended)")
        }
    }

    /// Over https: a server whose certificate a private CA signed (here a self-signed one,
    /// made by `openssl req`) is pushed to with `--whip-ca`, by name and by IP address (both
    /// in its subjectAltName); without it, the certificate check fails, said in the line.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func httpsWithAPrivateCA() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        let made = try Run.program("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                                               "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "2"])
        #expect(made.status == 0, "\(made.stderr)")
        let (server, out, port) = try Self.startServer(dir, ["--tls", cert, "--tls-key", key])
        defer { server.signal(SIGKILL); server.wait() }
        for (i, host) in ["localhost", "127.0.0.1"].enumerated() {
            let r = try Run.program(Run.nalcast, ["produce"] + Self.stream + ["--duration", "2s", "--whip-ca", cert, "--forward", "https://\(host):\(port)/whip"], timeout: 60)
            #expect(r.status == 0 && r.stderr.contains("forwarding to https://\(host):\(port)/whip"), "\(r.stderr)")
            let ended = Self.serverEvents(out, "ended", count: i + 1)
            #expect(ended.count == i + 1 && (ended.last?["frames"] as? Int ?? 0) >= 30, "\(host): \(ended.last ?? [:])")
            WebViewerTests.checkBars(ended.last?["pixels"] as? [[Int]] ?? [], "aiortc's last frame over https to \(host)")
        }
        let r = try Run.program(Run.nalcast, ["produce"] + Self.stream + ["--duration", "1s", "--forward", "https://localhost:\(port)/whip"], timeout: 60)
        #expect(r.stderr.contains("TLS: the server's certificate: self-signed certificate"), "\(r.stderr)")
    }

    /// A wrong bearer token: the server's 401 is one line and exit 77, the token not in it.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func wrongTokenIsRefused() throws {
        try Self.withServer(["--token", "right-token"]) { _, _, out, port in
            let r = try Run.program(Run.nalcast, ["produce"] + Self.stream + ["--duration", "20s", "--quiet", "--whip-token", "wrong-token",
                                                                            "--forward", "whip://127.0.0.1:\(port)/whip"], timeout: 60)
            #expect(r.status == 77, "exit \(r.status): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("refused the bearer token (401"), "\(r.stderr)")
            #expect(!r.stderr.contains("wrong-token"), "the token was printed: \(r.stderr)")
            #expect(Self.serverEvents(out, "refused").count == 1)
        }
    }

    /// The server goes away (SIGTERM: aiortc closes the session with a DTLS close_notify)
    /// and comes back on the same port: the push reconnects, a second session decodes the
    /// stream, and the events count both connections.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func serverComesBack() throws {
        try Self.withServer([]) { first, dir, firstOut, port in
            let events = dir.appendingPathComponent("events.jsonl")
            let producer = try Background(Run.nalcast, ["produce"] + Self.stream + ["--events", events.path, "--forward", "whip://127.0.0.1:\(port)/whip"])
            defer { producer.signal(SIGKILL); producer.wait() }
            #expect(!Self.serverEvents(firstOut, "frames").isEmpty, "no frames at the first server: \(producer.stderr)")
            first.signal(SIGTERM)
            #expect(first.wait() == 0)
            #expect(WHEPTests.waitForEvent(events) { $0["event"] as? String == "forward-disconnected" }, "\(producer.stderr)")
            let (second, secondOut, _) = try Self.startServer(dir, [], port: port)
            defer { second.signal(SIGKILL); second.wait() }
            #expect(!Self.serverEvents(secondOut, "frames").isEmpty, "no frames at the second server: \(producer.stderr)")
            producer.signal(SIGINT)
            #expect(producer.wait(timeout: 30) == 0, "\(producer.stderr)")
            let ended = try #require(Self.serverEvents(secondOut, "ended").first, "no second session ended: \(producer.stderr)")
            Self.checkSession(ended, "aiortc's last frame after the server came back")
            let connected = WebViewerTests.events(events).filter { $0["event"] as? String == "forward-connected" }
            #expect(connected.count == 2, "\(connected)")
        }
    }
}
