import Foundation
import Synchronization
import TestSupport
import Testing

/// Tokens on the HTTP side (`--token-file`, the token made for a remote `--web`, `--no-auth`):
/// curl without and with tokens of each permission against one producer's page, `/ws`,
/// `/metrics` and `POST /bitrate`; a loop of bad tokens slowed while a viewer with a good one
/// plays (Tests/Browser/token_brute.py).
@Suite(.serialized) struct AccessTests {
    static let watchToken = "watch-0123456789abcdef"
    static let metricsToken = "metrics-0123456789abcdef"
    static let controlToken = "control-0123456789abcdef"
    static let tokenFile = """
        # who may do what
        \(watchToken)  watch
        \(metricsToken) metrics
        \(controlToken) metrics,control

        """

    /// Each refusal comes from a loopback address of its own (127.0.0.N), so that the slowing
    /// of a host's failures (tested on its own) does not add up across the checks.
    static let nextSource = Atomic<Int>(10)
    static func source() -> [String] {
        ["--interface", "127.0.0.\(nextSource.add(1, ordering: .relaxed).newValue)"]
    }

    /// `curl` of `url` with `headers`: the status code.
    static func status(_ url: String, _ headers: [String] = [], method: String = "GET", insecure: Bool = false) throws -> String {
        var args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-X", method] + source()
        if insecure { args.append("-k") }
        for header in headers { args += ["-H", header] }
        return try Run.program("curl", args + [url]).text
    }

    static let upgradeHeaders = ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]

    /// A WebSocket upgrade of `/ws` (curl stops reading the stream after 2 s).
    static func upgrade(_ page: String, query: String = "", insecure: Bool = false) throws -> String {
        let args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2"] + source() + (insecure ? ["-k"] : []) + upgradeHeaders.flatMap { ["-H", $0] }
        return try Run.program("curl", args + [page + "ws" + query]).text
    }

    static func metricValue(_ text: String, _ name: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    /// Every route asks for its permission: the page and /ws `watch`, /metrics `metrics`,
    /// POST /bitrate `control`; nothing without a token (401 with `WWW-Authenticate`), a
    /// token without the permission 403; no refused upgrade makes a reader; every refusal
    /// counted in `nalcast_http_auth_failures_total`. Then a loop of bad tokens: each
    /// attempt's answer waits at least as long as the one before (50 ms doubling), while a
    /// viewer with a good token goes on getting pictures and a second good viewer is let in.
    @Test func tokensGuardEveryRouteAndABadTokenLoopIsSlowed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tokens = dir.appendingPathComponent("tokens")
        try Self.tokenFile.write(to: tokens, atomically: true, encoding: .utf8)
        let events = dir.appendingPathComponent("events.jsonl")
        let metricsPort = try freePort()
        let (producer, page) = try WebViewerTests.producer(
            ["--token-file", tokens.path, "--metrics", "tcp://127.0.0.1:\(metricsPort)", "--events", events.path], size: "320x240")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let metrics = "http://127.0.0.1:\(metricsPort)/"
        var refusals = 0
        func refused(_ code: String, _ expected: String, _ what: String) {
            #expect(code == expected, "\(what): \(code)")
            refusals += 1
        }
        refused(try Self.status(page), "401", "the page without a token")
        refused(try Self.status(page + "?token=not-a-token-of-the-file"), "401", "the page with an unknown token")
        refused(try Self.status(page + "?token=\(Self.metricsToken)"), "403", "the page with a metrics token")
        #expect(try Self.status(page + "?token=\(Self.watchToken)") == "200")
        #expect(try Self.status(page, ["Authorization: Bearer \(Self.watchToken)"]) == "200")
        let head = try Run.program("curl", ["-s", "-i", "--max-time", "10"] + Self.source() + [page]).text
        refusals += 1
        #expect(head.contains("WWW-Authenticate: Bearer realm=\"nalcast\""), "\(head)")

        refused(try Self.upgrade(page), "401", "/ws without a token")
        refused(try Self.upgrade(page, query: "?token=\(Self.metricsToken)"), "403", "/ws with a metrics token")
        #expect(WebViewerTests.events(events).filter { $0["event"] as? String == "reader-joined" }.isEmpty, "a refused upgrade made a reader")
        #expect(try Self.upgrade(page, query: "?token=\(Self.watchToken)") == "101")

        refused(try Self.status(metrics + "metrics"), "401", "/metrics without a token")
        refused(try Self.status(metrics + "metrics", ["Authorization: Bearer \(Self.watchToken)"]), "403", "/metrics with a watch token")
        refused(try Self.status(metrics + "bitrate?5M", ["Authorization: Bearer \(Self.metricsToken)"], method: "POST"), "403", "/bitrate with a metrics token")
        #expect(try Self.status(metrics + "bitrate?5M", ["Authorization: Bearer \(Self.controlToken)"], method: "POST") == "200")
        #expect(try Self.status(metrics + "healthz") == "200", "/healthz needs no token")
        let text = try Run.program("curl", ["-s", "--max-time", "10", "-H", "Authorization: Bearer \(Self.metricsToken)", metrics + "metrics"]).text
        #expect(Self.metricValue(text, "nalcast_http_auth_failures_total") == refusals, "\(text)")

        // The loop of bad tokens: 6 attempts, 50 ms doubling (3.15 s in all at least).
        let r = try Run.program("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("token_brute.py").path,
                                                     String(page.split(separator: ":").last!.dropLast()), Self.watchToken, "6"], timeout: 60)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect(seen["viewer"] as? String == "HTTP/1.1 101 Switching Protocols", "\(seen)")
        #expect((seen["statuses"] as? [String])?.allSatisfy { $0.hasPrefix("HTTP/1.1 401") } == true, "\(seen)")
        // From 127.0.0.2, which failed nothing before: each wait is at least the server's
        // delay for it, 50 ms times 2 to the failures before.
        let waits = seen["waits"] as? [Double] ?? []
        #expect(waits.count == 6)
        for (n, wait) in waits.enumerated() {
            let least = 0.05 * pow(2, Double(n))
            #expect(wait >= least * 0.95, "attempt \(n): answered after \(wait) s, the delay is \(least) s: \(waits)")
        }
        #expect((seen["during"] as? Int ?? 0) >= 30, "the good viewer got \(seen["during"] ?? "?") pictures while the bad tokens were tried")
        #expect(seen["late"] as? String == "HTTP/1.1 101 Switching Protocols", "a good token is not slowed: \(seen)")
        let after = try Run.program("curl", ["-s", "--max-time", "10", "-H", "Authorization: Bearer \(Self.metricsToken)", metrics + "metrics"]).text
        #expect(Self.metricValue(after, "nalcast_http_auth_failures_total") == refusals + 6, "\(after)")
        #expect(!producer.stderr.contains(Self.watchToken) && !producer.stderr.contains("bad-0-"), "a token in the log: \(producer.stderr)")
    }

    /// A remote `--web` without a token file makes a token and prints the page's address
    /// with it, once; the page wants it. `--no-auth` says that anyone may watch. A token file
    /// that cannot be read or used: one line, 66 or 65, naming the line and never the token.
    @Test func aRemotePageGetsATokenOfItsOwnUnlessNoAuth() throws {
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "160x120", "--web", "tcp://0.0.0.0:0", "--allow-remote"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        #expect(producer.waitFor("?token="), "\(producer.stderr)")
        let line = try #require(producer.stderr.split(separator: "\n").first { $0.contains("?token=") })
        let token = String(line.split(separator: "=")[1].prefix(48))
        #expect(token.count == 48 && token.allSatisfy(\.isHexDigit), "\(line)")
        #expect(producer.stderr.components(separatedBy: token).count == 2, "the token is printed once: \(producer.stderr)")
        let port = try #require(line.split(separator: "?").first?.split(separator: ":").last?.dropLast())
        let local = "http://127.0.0.1:\(port)/"
        #expect(try Self.status(local) == "401")
        #expect(try Self.status(local + "?token=\(token)") == "200")
        #expect(try Self.upgrade(local, query: "?token=\(token)") == "101")

        let open = try Run.nalcast(["produce", "--web", "tcp://0.0.0.0:8080", "--allow-remote", "--no-auth", "--dry-run"])
        #expect(open.text.contains("access: anyone who reaches the port (--no-auth)"), "\(open.text)")

        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = try Run.nalcast(["produce", "--web", "tcp://127.0.0.1:8080", "--token-file", dir.appendingPathComponent("none").path, "--dry-run"])
        #expect(missing.status == 66 && missing.stderr.contains("--token-file ") && missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        let bad = dir.appendingPathComponent("bad")
        try "secret-short watch\n".write(to: bad, atomically: true, encoding: .utf8)
        let refused = try Run.nalcast(["produce", "--web", "tcp://127.0.0.1:8080", "--token-file", bad.path, "--dry-run"])
        #expect(refused.status == 65 && refused.stderr.contains("line 1: a token is 16 to 256 printable characters"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("secret-short"))
    }
}
