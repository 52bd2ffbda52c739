import Foundation
import TestSupport
import Testing

/// `produce --web`: headless Chromium opens nalcast's own page (Tests/Browser/web_check.py
/// drives it with Selenium and reads `window.nalcastViewer` and the canvas), the stream at
/// `/ws` refuses another origin, and a WebSocket viewer that never reads costs a TCP reader
/// nothing. Chromium, chromedriver and the venv with selenium as for PlaybackTests.
@Suite(.serialized) struct WebViewerTests {
    /// A producer of the test pattern with `--web` on a port of the kernel's (or `port`), and
    /// the page's URL from its startup line (`https://` with `--tls`).
    static func producer(_ extra: [String], port: Int = 0, size: String = "640x360", scheme: String = "http://") throws -> (Background, String) {
        let p = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", size, "--web", "tcp://127.0.0.1:\(port)"] + extra)
        guard p.waitFor("the page on "), let url = p.stderr.split(separator: " ").first(where: { $0.hasPrefix(scheme) }) else {
            p.signal(SIGKILL)
            p.wait()
            throw Failure("no page announced: \(p.stderr)")
        }
        return (p, String(url.split(separator: "\n")[0]))
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func events(_ url: URL) -> [[String: Any]] {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Where the test pattern's colour bars are in a 640x360 picture: eight bars of 80
    /// columns over the top two thirds; yellow is the second, blue the seventh. The white
    /// bar that sweeps across them is 20 columns wide, so of two points 60 columns apart in
    /// one bar at least one shows the bar's colour.
    static let yellow = (points: [[90, 40], [150, 40]], rgb: [192, 186, 0])
    static let blue = (points: [[490, 40], [550, 40]], rgb: [0, 6, 191])

    /// Whether `pixel` is `rgb` within 24 per channel (BT.601 or BT.709, as the decoder
    /// guesses), or the sweeping white bar.
    static func matches(_ pixel: [Int], _ rgb: [Int]) -> Bool {
        pixel.count == 3 && zip(pixel, rgb).allSatisfy { abs($0 - $1) <= 24 }
    }
    static func white(_ pixel: [Int]) -> Bool { pixel.count == 3 && pixel.allSatisfy { $0 >= 220 } }

    static func checkBars(_ pixels: [[Int]], _ context: String) {
        for (offset, bar) in [(0, yellow), (2, blue)] {
            let pair = Array(pixels.dropFirst(offset).prefix(2))
            #expect(pair.count == 2 && pair.contains { matches($0, bar.rgb) } && pair.allSatisfy { matches($0, bar.rgb) || white($0) },
                    "\(context): \(pair) where the bar is \(bar.rgb)")
        }
    }

    static var points: String { String(decoding: try! JSONSerialization.data(withJSONObject: yellow.points + blue.points), as: UTF8.self) }

    /// The page plays: frames painted, 640x360, a latency between 0 and 2 s, the colour bars
    /// where the test pattern draws them, a codec string read from the SPS (High profile).
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumPlaysThePage() throws {
        let (producer, url) = try Self.producer([])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url, Self.points], timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect((seen["painted"] as? Int ?? 0) >= 30, "\(seen)")
        #expect(seen["width"] as? Int == 640 && seen["height"] as? Int == 360, "\(seen)")
        let latency = seen["latencyMs"] as? Double ?? -1
        #expect(latency > 0 && latency < 2000, "\(seen)")
        #expect((seen["codec"] as? String)?.hasPrefix("avc1.64") == true, "\(seen)")
        #expect(seen["errors"] as? Int == 0 && seen["problem"] is NSNull, "\(seen)")
        Self.checkBars(seen["pixels"] as? [[Int]] ?? [], "the canvas")
    }

    /// A page of another origin (the same server by another name: `localhost` against
    /// `127.0.0.1`, or another site) cannot open the stream, nor one whose `Host` is not this
    /// machine's: the upgrade is answered 403 and no reader joins.
    @Test func anotherOriginIsRefused() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, url) = try Self.producer(["--events", events.path])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        func upgrade(origin: String?, host: String? = nil) throws -> String {
            var args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                        "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
            if let origin { args += ["-H", "Origin: \(origin)"] }
            if let host { args += ["-H", "Host: \(host)"] }
            return try Run.program("curl", args + [url + "ws"]).text
        }
        let port = url.split(separator: ":").last!.dropLast()
        #expect(try upgrade(origin: "http://localhost:\(port)") == "403")
        #expect(try upgrade(origin: "http://example.com") == "403")
        // DNS rebinding: a foreign name that resolves to 127.0.0.1 makes Host and Origin agree.
        #expect(try upgrade(origin: "http://rebound.example:\(port)", host: "rebound.example:\(port)") == "403")
        #expect(Self.events(events).filter { $0["event"] as? String == "reader-joined" }.isEmpty)
        // The page's own origin is let in (curl gives up reading the stream after 2 s).
        #expect(try upgrade(origin: "http://127.0.0.1:\(port)") == "101")
        Wait.until(timeout: 5) { Self.events(events).contains(where: { $0["event"] as? String == "reader-joined" }) }
        #expect(Self.events(events).contains { ($0["peer"] as? String)?.hasSuffix("(websocket)") == true }, "\(Self.events(events))")
    }

    /// A WebSocket viewer that never reads a byte: the TCP reader beside it still gets every
    /// picture (FFmpeg decodes 150 without an error), and the viewer is the one that skips.
    @Test func aViewerThatNeverReadsCostsATCPReaderNothing() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let tcpPort = try freePort()
        // An IDR every 5 frames: the test pattern compresses so well that the kernel's buffers
        // would otherwise hide the viewer's lag for a long while.
        let (producer, url) = try Self.producer(["--listen", "tcp://127.0.0.1:\(tcpPort)", "--events", events.path, "--keyint", "5", "--reader-timeout", "3s"], size: "1280x720")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = url.split(separator: ":").last!.dropLast()
        // Upgrades, then sleeps with the socket open: nothing it is sent is ever read.
        let silent = try Background("/usr/bin/python3", ["-c", """
            import socket, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", \(port)))
            s.sendall(b"GET /ws HTTP/1.1\\r\\nHost: 127.0.0.1:\(port)\\r\\nConnection: Upgrade\\r\\nUpgrade: websocket\\r\\n"
                      b"Sec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n\\r\\n")
            time.sleep(60)
            """])
        defer {
            silent.signal(SIGKILL)
            silent.wait()
        }
        Wait.until(timeout: 10) { Self.events(events).contains(where: { ($0["peer"] as? String)?.hasSuffix("(websocket)") == true }) }
        let viewer = try #require(Self.events(events).first { ($0["peer"] as? String)?.hasSuffix("(websocket)") == true }?["reader"] as? Int,
                                  "the viewer never joined: \(Self.events(events))")
        let r = try Run.program("ffmpeg", ["-hide_banner", "-v", "error", "-f", "h264", "-i", "tcp://127.0.0.1:\(tcpPort)", "-frames:v", "150", "-f", "framemd5", "-"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        #expect(r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.count == 150)
        let skipped = { (all: [[String: Any]]) in all.contains { $0["event"] as? String == "reader-skipped" && $0["reader"] as? Int == viewer } }
        Wait.until(timeout: 20, every: 0.1) { skipped(Self.events(events)) }
        let all = Self.events(events)
        let tcpReader = all.first { $0["event"] as? String == "reader-joined" && ($0["reader"] as? Int) != viewer }?["reader"] as? Int
        #expect(tcpReader != nil)
        #expect(skipped(all), "\(all)")
        #expect(!all.contains { $0["event"] as? String == "reader-skipped" && $0["reader"] as? Int == tcpReader }, "\(all)")
        // A viewer that takes nothing for --reader-timeout is dropped, as a TCP reader is.
        let closed = { (all: [[String: Any]]) in all.contains { $0["event"] as? String == "reader-closed" && $0["reader"] as? Int == viewer } }
        Wait.until(timeout: 30, every: 0.1) { closed(Self.events(events)) }
        #expect(closed(Self.events(events)), "\(Self.events(events))")
    }

    /// The producer stops and comes back on the same port at another size: the page connects
    /// again by itself and paints the new size.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func thePageSurvivesARestartAtAnotherSize() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try freePort()
        var (producer, url) = try Self.producer([], port: port)
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let output = dir.appendingPathComponent("check.jsonl")
        // The size exactly: the old one (640x360) is larger, so "at least" would take it.
        let goal = #"{"connects": 2, "painted": 60, "exactly": {"width": 320, "height": 240}}"#
        let check = try Background(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url, "[]", goal],
                                   stdoutTo: output)
        defer {
            check.signal(SIGKILL)
            check.wait()
        }
        func lines() -> [[String: Any]] { Self.events(output) }
        Wait.until(timeout: 90, every: 0.1) { !lines().isEmpty || !check.process.isRunning }
        let first = try #require(lines().first, "the page never played: \(check.stderr)")
        #expect(first["width"] as? Int == 640, "\(first)")
        producer.signal(SIGINT)
        #expect(producer.wait() == 0)
        (producer, _) = try Self.producer([], port: port, size: "320x240")
        #expect(check.wait(timeout: 90) == 0, "\(lines()) \(check.stderr)")
        let last = try #require(lines().last)
        #expect(last["width"] as? Int == 320 && last["height"] as? Int == 240 && (last["connects"] as? Int ?? 0) >= 2, "\(last)")
        #expect(last["errors"] as? Int == 0, "\(last)")
        let closes = last["closes"] as? [[String: Any]] ?? []
        #expect(closes.count == 1 && closes.first?["code"] as? Int == 1001 && closes.first?["wasClean"] as? Bool == true, "\(last)")
        #expect(last["problem"] is NSNull && last["state"] as? String == "playing", "\(last)")
    }
}

extension WebViewerTests {
    /// This machine's first IPv4 address that is not loopback, if any.
    static let outsideAddress: String? = {
        let r = try? Run.program("hostname", ["-I"])
        return r?.text.split(separator: " ").map(String.init).first { $0.contains(".") && !$0.hasPrefix("127.") }
    }()

    /// Opened over plain http from an address that is not loopback, the page has no WebCodecs
    /// (not a secure context) and says what to do: a TLS reverse proxy.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil && outsideAddress != nil, "needs Chromium and a non-loopback address"))
    func withoutWebCodecsThePageSaysWhy() throws {
        let p = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "320x240", "--web", "tcp://\(Self.outsideAddress!):0", "--allow-remote"])
        defer {
            p.signal(SIGINT)
            p.wait()
        }
        try #require(p.waitFor("the page on "), "\(p.stderr)")
        // The address with the token made for the run (a remote page needs one).
        try #require(p.waitFor("?token="), "\(p.stderr)")
        let url = try #require(p.stderr.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasPrefix("http://") && $0.contains("?token=") })
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, String(url), "--problem"], timeout: 60)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        let problem = seen["problem"] as? String ?? ""
        #expect(problem.contains("secure context") && problem.contains("TLS (https) reverse proxy"), "\(seen)")
        #expect(seen["connects"] as? Int == 0 && seen["painted"] as? Int == 0, "\(seen)")
    }

    /// A viewer's own frames (Tests/Browser/ws_client.py): a ping gets its pong between
    /// messages, an unmasked frame closes that viewer alone with 1002 and viewers sending
    /// random bytes come and go while the other goes on receiving, a close is echoed and the
    /// connection ends. The first message is a keyframe.
    @Test func viewerFramesAreAnsweredAndAProtocolErrorClosesOnlyThatViewer() throws {
        let (producer, url) = try Self.producer([])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = String(url.split(separator: ":").last!.dropLast())
        let r = try Run.program("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("ws_client.py").path, port], timeout: 60)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect(seen["status"] as? String == "HTTP/1.1 101 Switching Protocols")
        #expect(seen["first"] as? [Int] == [2, 1, 3], "\(seen)")
        #expect(seen["pong"] as? String == "are you there")
        #expect(seen["broken"] as? Int == 1002)
        #expect(seen["after"] as? Int == 5)
        let closed = seen["closed"] as? [Any] ?? []
        #expect(closed.first as? Int == 1000 && closed.last as? Bool == true, "\(seen)")
        #expect(producer.process.isRunning, "\(producer.stderr)")
    }

    /// `--max-readers` counts TCP readers and viewers together: with one TCP reader
    /// connected and a limit of 1, an upgrade gets 503 and is counted as refused.
    @Test func maxReadersCountsViewersAndTCPReaders() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let tcpPort = try freePort()
        let (producer, url) = try Self.producer(["--listen", "tcp://127.0.0.1:\(tcpPort)", "--max-readers", "1", "--events", events.path])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let reader = try StreamReaderClient("tcp://127.0.0.1:\(tcpPort)")
        Wait.until(timeout: 10) { Self.events(events).contains(where: { $0["event"] as? String == "reader-joined" }) }
        let r = try Run.program("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                                         "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", url + "ws"])
        #expect(r.text == "503")
        // The event is written beside the answer: wait for it rather than a moment.
        Wait.until(timeout: 10) { Self.events(events).contains { $0["event"] as? String == "reader-refused" } }
        let refused = Self.events(events).filter { $0["event"] as? String == "reader-refused" }
        #expect(refused.count == 1 && (refused.first?["peer"] as? String)?.hasSuffix("(websocket)") == true, "\(refused)")
        #expect(!reader.finish().isEmpty)
    }
}

extension WebViewerTests {
    /// deploy/nginx/nalcast-web.conf, the TLS reverse proxy for viewers on other machines:
    /// nginx terminates https on `listen` (HOST:PORT) with a self-signed certificate made
    /// here and proxies the page and its WebSocket to the producer's `--web` (HOST:PORT).
    /// The file itself runs, only its certificate, listen and upstream lines swapped.
    static func startNginx(dir: URL, listen: String, web: String, certificateFor address: String) throws -> Background {
        let (certificate, key) = try Deploy.selfSignedCertificate(dir: dir, address: address)
        let site = try Deploy.nginxWebSite(certificate: certificate, key: key, listen: listen, web: web)
        let config = try Deploy.nginxConfig(dir: dir, site: site)
        let nginx = try Background("/usr/sbin/nginx", ["-p", dir.path, "-c", config.path])
        let page = "https://\(listen)/"
        Wait.until(timeout: 10, every: 0.1) { (try? Run.program("curl", ["-sk", "-o", "/dev/null", page]).status) == 0 }
        return nginx
    }

    static func nginxLog(_ dir: URL) -> String {
        (try? String(contentsOf: dir.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// Through deploy/nginx/nalcast-web.conf on loopback, with curl: the page and /healthz
    /// over https (/metrics not), and the WebSocket upgrade passed on and accepted for the page's https:// origin (the file's
    /// `X-Forwarded-Proto https`), while an http:// origin is still refused.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"), "needs nginx (scripts/setup installs nginx-light)"))
    func theDeployedProxyPassesThePageAndTheWebSocket() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (producer, url) = try Self.producer([])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let web = String(url.dropFirst("http://".count).dropLast())
        let origin = "127.0.0.1:\(try freePort())"
        let nginx = try Self.startNginx(dir: dir, listen: origin, web: web, certificateFor: "127.0.0.1")
        defer {
            // Without a master process nginx waits for its proxied connections on SIGTERM.
            nginx.signal(SIGKILL)
            nginx.wait()
        }
        let page = try Run.program("curl", ["-sk", "--max-time", "5", "https://\(origin)/"])
        #expect(page.status == 0 && page.text.contains("<title>nalcast</title>"), "\(page.text) \(page.stderr) nginx: \(Self.nginxLog(dir))")
        // A token in the query never lands in nginx's access log: the file logs the path alone.
        _ = try Run.program("curl", ["-sk", "-o", "/dev/null", "--max-time", "5", "https://\(origin)/?token=SECRET-IN-THE-QUERY"])
        let accessLog = (try? String(contentsOf: dir.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        #expect(accessLog.contains("\"GET / HTTP/1.1\"") && !accessLog.contains("SECRET-IN-THE-QUERY"), "\(accessLog)")
        let health = try Run.program("curl", ["-sk", "--max-time", "5", "https://\(origin)/healthz"])
        #expect(health.text.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(health.text) \(health.stderr)")
        // The metrics stay on the --web address, for the local scraper only.
        let metrics = try Run.program("curl", ["-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "https://\(origin)/metrics"])
        #expect(metrics.text == "403")
        #expect(try Run.program("curl", ["-s", "--max-time", "5", url + "metrics"]).text.contains("# TYPE "))
        func upgrade(origin pageOrigin: String) throws -> String {
            // curl stops waiting after 3 s of stream; the status line is what counts.
            try Run.program("curl", ["-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                                     "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-H", "Origin: \(pageOrigin)",
                                     "https://\(origin)/ws"]).text
        }
        #expect(try upgrade(origin: "https://\(origin)") == "101", "nginx: \(Self.nginxLog(dir))")
        #expect(try upgrade(origin: "http://\(origin)") == "403")
        #expect(try upgrade(origin: "https://example.net") == "403")
    }

    /// Over https from the outside address, through nginx, the page is a secure context: it
    /// decodes and paints the test pattern, its WebSocket accepted as the page's own origin
    /// (`X-Forwarded-Proto: https`).
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil && outsideAddress != nil && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"),
                   "needs Chromium, nginx and a non-loopback address"))
    func chromiumPlaysThePageThroughATLSProxy() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let address = Self.outsideAddress!
        let (producer, url) = try Self.producer([])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let web = String(url.dropFirst("http://".count).dropLast())
        let tlsPort = try freePort()
        let nginx = try Self.startNginx(dir: dir, listen: "\(address):\(tlsPort)", web: web, certificateFor: address)
        defer {
            // Without a master process nginx waits for its proxied connections on SIGTERM.
            nginx.signal(SIGKILL)
            nginx.wait()
        }
        let page = "https://\(address):\(tlsPort)/"
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, page, Self.points], timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr) nginx: \(Self.nginxLog(dir))")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect((seen["painted"] as? Int ?? 0) >= 30 && seen["width"] as? Int == 640, "\(seen)")
        Self.checkBars(seen["pixels"] as? [[Int]] ?? [], "through the proxy")
    }
}

extension WebViewerTests {
    /// `--web` takes a loopback address unless `--allow-remote` is given, as `--listen` does.
    @Test func webOnAnOutsideAddressNeedsAllowRemote() throws {
        let refused = try Run.nalcast(["produce", "--web", "tcp://0.0.0.0:8080", "--dry-run"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--web tcp://0.0.0.0:8080 is not a loopback address: add --allow-remote"), "\(refused.stderr)")
        let allowed = try Run.nalcast(["produce", "--web", "tcp://0.0.0.0:8080", "--allow-remote", "--dry-run"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(allowed.text.contains("web: tcp://0.0.0.0:8080") && allowed.text.contains("listen: none"), "\(allowed.text)")
    }

    /// A viewer that pings without reading gets no pile of pongs: past 32 control frames
    /// queued it is closed ("pings not read"), once its reader timeout has passed at the latest.
    @Test func aViewerThatPingsWithoutReadingIsClosed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, url) = try Self.producer(["--events", events.path, "--keyint", "5", "--reader-timeout", "2s"], size: "1280x720")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = url.split(separator: ":").last!.dropLast()
        let pinger = try Background("/usr/bin/python3", ["-c", """
            import os, socket, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", \(port)))
            s.sendall(b"GET /ws HTTP/1.1\\r\\nHost: 127.0.0.1:\(port)\\r\\nConnection: Upgrade\\r\\nUpgrade: websocket\\r\\n"
                      b"Sec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n\\r\\n")
            time.sleep(1.5)
            for _ in range(64):
                mask = os.urandom(4)
                s.sendall(bytes([0x89, 0x80 | 4]) + mask + bytes(b ^ mask[i] for i, b in enumerate(b"ping")))
            time.sleep(60)
            """])
        defer {
            pinger.signal(SIGKILL)
            pinger.wait()
        }
        let closed = { Self.events(events).first { $0["event"] as? String == "reader-closed" } }
        Wait.until(timeout: 20, every: 0.1) { closed() != nil }
        let event = try #require(closed(), "\(Self.events(events)) \(pinger.stderr)")
        #expect((event["reason"] as? String)?.hasPrefix("websocket: pings not read") == true, "\(event)")
    }
}

extension WebViewerTests {
    /// The X screen changes size while the page plays: the producer sends the new SPS and an
    /// IDR, and the page reconfigures its decoder on the same connection (no reconnect).
    /// `--capture fixed`: the page counts 60 pictures painted at the new size, which a still
    /// screen captured on change would send as keep-alives, one a second.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Chromium and Xvfb"))
    func thePageFollowsAScreenSizeChange() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let displayFile = dir.appendingPathComponent("display")
        let xvfb = try Background("Xvfb", ["-displayfd", "1", "-screen", "0", "640x480x24", "-noreset", "-nolisten", "tcp"], stdoutTo: displayFile)
        defer {
            xvfb.signal(SIGTERM)
            xvfb.wait()
        }
        let deadline = Moment.now.addingTimeInterval(30)
        var number = ""
        while number.isEmpty && Moment.now < deadline {
            number = ((try? String(contentsOf: displayFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if number.isEmpty { usleep(50_000) }
        }
        let display = try #require(Int(number).map { ":\($0)" }, "Xvfb did not start: \(xvfb.stderr)")
        func xrandr(_ arguments: [String]) throws -> Run.Result {
            try Run.program("xrandr", arguments, environment: ["DISPLAY": display, "PATH": "/usr/bin:/bin"])
        }
        #expect(try xrandr(["--newmode", "320x240", "1", "320", "321", "322", "323", "240", "241", "242", "243"]).status == 0)
        #expect(try xrandr(["--addmode", "screen", "320x240"]).status == 0)
        #expect(try xrandr(["--output", "screen", "--mode", "320x240"]).status == 0)

        let producer = try Background(Run.nalcast, ["produce", "--source", "x11:\(display.dropFirst())", "--capture", "fixed", "--fps", "30", "--web", "tcp://127.0.0.1:0"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        guard producer.waitFor("the page on "), let found = producer.stderr.split(separator: " ").first(where: { $0.hasPrefix("http://") }) else {
            Issue.record("no page announced: \(producer.stderr)")
            return
        }
        let url = String(found.split(separator: "\n")[0])
        let output = dir.appendingPathComponent("check.jsonl")
        let goal = #"{"width": 640, "height": 480, "painted": 60}"#
        let check = try Background(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url, "[]", goal],
                                   stdoutTo: output)
        defer {
            check.signal(SIGKILL)
            check.wait()
        }
        Wait.until(timeout: 90, every: 0.1) { !Self.events(output).isEmpty || !check.process.isRunning }
        let first = try #require(Self.events(output).first, "the page never played: \(check.stderr)")
        #expect(first["width"] as? Int == 320 && first["height"] as? Int == 240, "\(first)")
        #expect(try xrandr(["--output", "screen", "--mode", "640x480"]).status == 0)
        #expect(check.wait(timeout: 90) == 0, "\(Self.events(output)) \(check.stderr)\n\(producer.stderr)")
        let last = try #require(Self.events(output).last)
        #expect(last["width"] as? Int == 640 && last["height"] as? Int == 480, "\(last)")
        #expect(last["connects"] as? Int == 1, "the page reconnected instead of reconfiguring: \(last)")
        #expect(last["errors"] as? Int == 0, "\(last)")
    }
}
