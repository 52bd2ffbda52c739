import Foundation
import TestSupport
import Testing

/// The built-in TLS of `--web` and `--metrics` with real clients: `openssl s_client` (TLS 1.0
/// and 1.1 refused, a weak cipher refused, TLS 1.2 with ECDHE and AES-GCM, TLS 1.3, the
/// fingerprint printed is the certificate's), `sslscan` (every protocol and cipher it
/// tries), curl and a WebSocket viewer over it, a certificate read again on SIGHUP while a
/// viewer stays, and Chromium playing the page opened with the address the producer printed
/// (`--tls self-signed` on an outside address).
@Suite(.serialized) struct TLSTests {
    /// `openssl s_client` to 127.0.0.1:`port` with `arguments`: (handshake done, its output).
    static func handshake(_ port: String, _ arguments: [String]) throws -> (ok: Bool, text: String) {
        let r = try Run.program("openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost"] + arguments, stdin: Data(), timeout: 20)
        let text = r.text + r.stderr
        return (r.status == 0 && !text.contains("Cipher is (NONE)"), text)
    }

    /// The SHA-256 fingerprint of the certificate served on `port`, as openssl prints it.
    static func servedFingerprint(_ port: String) throws -> String {
        let served = try handshake(port, [])
        let pem = served.text.range(of: "-----BEGIN CERTIFICATE-----").flatMap { begin in
            served.text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<served.text.endIndex).map { String(served.text[begin.lowerBound..<$0.upperBound]) }
        } ?? ""
        let r = try Run.program("openssl", ["x509", "-noout", "-fingerprint", "-sha256"], stdin: Data((pem + "\n").utf8))
        return String(r.text.split(separator: "=").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What `sslscan` (Debian's) finds wrong with the TLS listener on `port`, one line each:
    /// a protocol older than TLS 1.2 enabled, TLS 1.2 or 1.3 not, a cipher accepted that is
    /// not ECDHE (or TLS 1.3) with AES-GCM or ChaCha20-Poly1305 of 128 bits or more, insecure
    /// renegotiation, Heartbleed. Empty when all is well.
    static func sslscanFindings(_ port: String) throws -> [String] {
        let sslscan = try #require(Deploy.tool("sslscan"), "sslscan is missing: run scripts/setup (Debian sslscan)")
        let r = try Run.program(sslscan, ["--no-colour", "127.0.0.1:\(port)"], timeout: 60)
        let lines = r.text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        var findings: [String] = r.status == 0 ? [] : ["sslscan exited \(r.status): \(r.stderr)"]
        for (proto, wanted) in [("SSLv2", "disabled"), ("SSLv3", "disabled"), ("TLSv1.0", "disabled"), ("TLSv1.1", "disabled"),
                                ("TLSv1.2", "enabled"), ("TLSv1.3", "enabled")]
        where !lines.contains([proto, wanted]) {
            findings.append("\(proto) not \(wanted)")
        }
        // "Accepted  TLSv1.2  256 bits  ECDHE-ECDSA-AES256-GCM-SHA384  Curve 25519 DHE 253"
        let ciphers = lines.filter { ["Accepted", "Preferred"].contains($0.first ?? "") && $0.count >= 5 }
        if ciphers.isEmpty { findings.append("no cipher accepted: \(r.text)") }
        for c in ciphers {
            let name = c[4], modern = c[1] == "TLSv1.3" || (c[1] == "TLSv1.2" && name.hasPrefix("ECDHE-"))
            let aead = name.contains("-GCM-") || name.contains("_GCM_") || name.contains("CHACHA20")
            if !modern || !aead || (Int(c[2]) ?? 0) < 128 { findings.append("weak: \(c.joined(separator: " "))") }
        }
        findings += r.text.split(separator: "\n").filter { $0.contains("Insecure session renegotiation") || ($0.contains("vulnerable to heartbleed") && !$0.contains("not vulnerable")) }.map(String.init)
        return findings
    }

    @Test func onlyModernTLSAndThePageAndStreamOverIt() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tokens = dir.appendingPathComponent("tokens")
        try AccessTests.tokenFile.write(to: tokens, atomically: true, encoding: .utf8)
        let metricsPort = try freePort()
        let (producer, page) = try WebViewerTests.producer(["--tls", "self-signed", "--token-file", tokens.path, "--metrics", "tcp://127.0.0.1:\(metricsPort)"],
                                                           size: "320x240", scheme: "https://")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = String(page.split(separator: ":").last!.dropLast())
        for old in ["-tls1", "-tls1_1"] {
            let refused = try Self.handshake(port, [old])
            #expect(!refused.ok, "\(old) was accepted: \(refused.text)")
        }
        for weak in ["AES128-SHA", "DES-CBC3-SHA", "ECDHE-RSA-AES128-SHA", "RC4-SHA"] {
            let refused = try Self.handshake(port, ["-tls1_2", "-cipher", weak])
            #expect(!refused.ok, "TLS 1.2 with \(weak) was accepted: \(refused.text)")
        }
        let tls12 = try Self.handshake(port, ["-tls1_2"])
        #expect(tls12.ok && tls12.text.contains("Cipher is ECDHE-ECDSA-"), "\(tls12.text)")
        let tls13 = try Self.handshake(port, ["-tls1_3"])
        #expect(tls13.ok && tls13.text.contains("TLSv1.3"), "\(tls13.text)")
        let findings = try Self.sslscanFindings(port)
        #expect(findings.isEmpty, "sslscan: \(findings)")
        let printed = try #require(producer.stderr.split(separator: "\n").first { $0.contains("SHA-256 fingerprint ") })
        #expect(printed.hasSuffix(try Self.servedFingerprint(port)), "\(printed)")

        // The page, /metrics and the tokens over TLS; a viewer over wss gets pictures while
        // bad tokens are refused.
        #expect(try AccessTests.status(page, insecure: true) == "401")
        #expect(try AccessTests.status(page + "?token=\(AccessTests.watchToken)", insecure: true) == "200")
        #expect(try AccessTests.status("https://127.0.0.1:\(metricsPort)/metrics", ["Authorization: Bearer \(AccessTests.metricsToken)"], insecure: true) == "200")
        #expect(try AccessTests.status("http://127.0.0.1:\(metricsPort)/metrics", ["Authorization: Bearer \(AccessTests.metricsToken)"]) == "000",
                "plain HTTP on the TLS port")
        let r = try Run.program("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("token_brute.py").path,
                                                     port, AccessTests.watchToken, "4", "--tls"], timeout: 60)
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect(seen["viewer"] as? String == "HTTP/1.1 101 Switching Protocols", "\(seen)")
        #expect((seen["statuses"] as? [String])?.allSatisfy { $0.hasPrefix("HTTP/1.1 401") } == true, "\(seen)")
        #expect((seen["during"] as? Int ?? 0) > 0, "\(seen)")
    }

    /// `--tls-cert`/`--tls-key` read again on SIGHUP: new handshakes get the new certificate,
    /// the viewer connected before stays (no reader closed). Bad files: one line, 65 or 66.
    @Test func aCertificateIsReadAgainOnSIGHUPWithoutDroppingAViewer() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("first"), second = dir.appendingPathComponent("second")
        for sub in [first, second] { try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true) }
        let (certificate, key) = try Deploy.selfSignedCertificate(dir: first, address: "127.0.0.1")
        let (newCertificate, newKey) = try Deploy.selfSignedCertificate(dir: second, address: "127.0.0.1")
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, page) = try WebViewerTests.producer(["--tls-cert", certificate, "--tls-key", key, "--events", events.path],
                                                           size: "160x120", scheme: "https://")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = String(page.split(separator: ":").last!.dropLast())
        let before = try Self.servedFingerprint(port)
        // A viewer over wss, reading until it is stopped.
        let viewer = try Background("curl", ["-sk", "-o", "/dev/null", "--max-time", "60"] + AccessTests.upgradeHeaders.flatMap { ["-H", $0] } + [page + "ws"])
        defer {
            viewer.signal(SIGKILL)
            viewer.wait()
        }
        Wait.until(timeout: 20) { WebViewerTests.events(events).contains(where: { $0["event"] as? String == "reader-started" }) }
        try FileManager.default.removeItem(atPath: certificate)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: newCertificate, toPath: certificate)
        try FileManager.default.copyItem(atPath: newKey, toPath: key)
        producer.signal(SIGHUP)
        #expect(producer.waitFor("SIGHUP: TLS: "), "\(producer.stderr)")
        let after = try Self.servedFingerprint(port)
        #expect(after != before && !after.isEmpty, "before \(before), after \(after)")
        #expect(producer.stderr.contains("SIGHUP: TLS: \(certificate), SHA-256 fingerprint \(after)"), "\(producer.stderr)")
        let sent = WebViewerTests.events(events)
        #expect(sent.contains { $0["event"] as? String == "reader-started" } && !sent.contains { $0["event"] as? String == "reader-closed" }, "\(sent)")
        #expect(viewer.process.isRunning)

        // A certificate file that is none: said at SIGHUP, the one in use stays.
        try "not a certificate\n".write(toFile: certificate, atomically: true, encoding: .utf8)
        producer.signal(SIGHUP)
        #expect(producer.waitFor("the certificate in use stays"), "\(producer.stderr)")
        #expect(try Self.servedFingerprint(port) == after)

        let bad = try Run.nalcast(["produce", "--web", "tcp://127.0.0.1:8080", "--tls-cert", certificate, "--tls-key", key, "--dry-run"])
        #expect(bad.status == 65 && bad.stderr.split(separator: "\n").count == 1 && bad.stderr.contains("--tls-cert \(certificate)"), "\(bad.stderr)")
        let missing = try Run.nalcast(["produce", "--web", "tcp://127.0.0.1:8080", "--tls-cert", dir.appendingPathComponent("none.pem").path, "--tls-key", key, "--dry-run"])
        #expect(missing.status == 66, "\(missing.stderr)")
        let alone = try Run.nalcast(["produce", "--web", "tcp://127.0.0.1:8080", "--tls-cert", certificate, "--dry-run"])
        #expect(alone.status == 64 && alone.stderr.contains("--tls-cert and --tls-key go together"), "\(alone.stderr)")
    }

    /// The issue's "done when": `--web` on an outside address with `--allow-remote` and
    /// `--tls self-signed` prints one address; Chromium (accepting the certificate) opens it
    /// and plays, and the token is gone from its address bar.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil && WebViewerTests.outsideAddress != nil, "needs Chromium and a non-loopback address"))
    func chromiumPlaysThePrintedAddressOverBuiltInTLS() throws {
        let address = WebViewerTests.outsideAddress!
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "640x360", "--web", "tcp://\(address):0",
                                                    "--allow-remote", "--tls", "self-signed"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        #expect(producer.waitFor("?token="), "\(producer.stderr)")
        let url = try #require(producer.stderr.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasPrefix("https://") && $0.contains("?token=") })
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, String(url), WebViewerTests.points], timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect((seen["painted"] as? Int ?? 0) >= 30 && seen["width"] as? Int == 640, "\(seen)")
        WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "over the built-in TLS")
        let href = seen["href"] as? String ?? ""
        #expect(href.hasPrefix("https://\(address):") && !href.contains("token"), "the address bar: \(href)")
    }
}
