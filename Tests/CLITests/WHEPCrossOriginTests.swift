import Foundation
import TestSupport
import Testing

/// CORS on the WHEP endpoint (`--web-origin`): players served from another origin open and
/// end sessions, as the WHEP RFC and MediaMTX have it; by default only the page's own origin.
@Suite(.serialized) struct WHEPCrossOriginTests {
    static func headers(_ args: [String]) throws -> String {
        try Run.program("curl", ["-s", "-i", "--max-time", "5"] + args).text
    }

    /// curl as a browser's preflight: a listed origin is granted POST with Authorization and
    /// Content-Type and may read Location; another origin gets no grant; with a token file,
    /// the preflight needs none (a browser sends none with it) and a refusal carries the grant.
    @Test func preflightAndAnswersCarryTheGrant() throws {
        let origin = "http://127.0.0.1:9"
        try WHEPTests.withProducer(["--web-origin", origin]) { url, _, dir in
            let preflight = try Self.headers(["-X", "OPTIONS", "-H", "Origin: \(origin)", "-H", "Access-Control-Request-Method: POST",
                                              "-H", "Access-Control-Request-Headers: authorization, content-type", url + "whep"])
            #expect(preflight.hasPrefix("HTTP/1.1 204 No Content\r\n"), "\(preflight)")
            for line in ["Access-Control-Allow-Origin: \(origin)", "Access-Control-Allow-Methods: POST, OPTIONS",
                         "Access-Control-Allow-Headers: Authorization, Content-Type, If-Match", "Access-Control-Expose-Headers: Location, Link, ETag",
                         "Vary: Origin", "Accept-Post: application/sdp"] {
                #expect(preflight.contains(line + "\r\n"), "\(line) in \(preflight)")
            }
            let other = try Self.headers(["-X", "OPTIONS", "-H", "Origin: http://evil.example", url + "whep"])
            #expect(other.hasPrefix("HTTP/1.1 204") && !other.contains("Access-Control-Allow-Origin"), "\(other)")
            let refused = try Self.headers(["-X", "POST", "-H", "Origin: \(origin)", "-H", "Content-Type: application/sdp", "--data-binary", "hello", url + "whep"])
            #expect(refused.hasPrefix("HTTP/1.1 400") && refused.contains("Access-Control-Allow-Origin: \(origin)\r\n"), "\(refused)")

            let tokens = dir.appendingPathComponent("tokens")
            try "s3cret-watcher-0123 watch\n".write(to: tokens, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokens.path)
            try WHEPTests.withProducer(["--token-file", tokens.path, "--web-origin", "*"]) { guarded, _, _ in
                let page = String(guarded.split(separator: "?")[0])
                let open = try Self.headers(["-X", "OPTIONS", "-H", "Origin: https://player.example", page + "whep/abc"])
                #expect(open.hasPrefix("HTTP/1.1 204") && open.contains("Access-Control-Allow-Origin: *\r\n")
                    && open.contains("Access-Control-Allow-Methods: DELETE, OPTIONS\r\n"), "\(open)")
                let noToken = try Self.headers(["-X", "POST", "-H", "Origin: https://player.example", "-H", "Content-Type: application/sdp",
                                                "--data-binary", "v=0", page + "whep"])
                #expect(noToken.hasPrefix("HTTP/1.1 401") && noToken.contains("Access-Control-Allow-Origin: *\r\n"), "\(noToken)")
            }
        }
    }

    /// Chromium on a page of another port (Tests/Browser/whep_cors.html) posts an offer to
    /// nalcast's /whep, reads the answer and its Location and deletes the session: allowed
    /// with `--web-origin` naming the page's origin; refused by the browser without.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumOnAnotherOriginOpensASession() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.copyItem(at: PlaybackTests.browserTools.appendingPathComponent("whep_cors.html"), to: dir.appendingPathComponent("whep_cors.html"))
        let portFile = dir.appendingPathComponent("port")
        let site = try Background("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("serve.py").path, dir.path], stdoutTo: portFile)
        defer {
            site.signal(SIGTERM)
            site.wait()
        }
        var port = ""
        Wait.until(every: 0.025) {
            let text = (try? String(contentsOf: portFile, encoding: .utf8)) ?? ""
            port = text.hasPrefix("port ") ? text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            return !port.isEmpty
        }
        try #require(!port.isEmpty, "serve.py did not start: \(site.stderr)")
        func open(_ extra: [String]) throws -> [String: Any] {
            var seen: [String: Any] = [:]
            try WHEPTests.withProducer(extra) { url, _, _ in
                let page = "http://127.0.0.1:\(port)/whep_cors.html?whep=" + (url + "whep").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("cors_check.py").path, page], timeout: 120)
                seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
            }
            return seen
        }
        let allowed = try open(["--web-origin", "http://127.0.0.1:\(port)"])
        #expect(allowed["status"] as? Int == 201 && allowed["answered"] as? Bool == true, "\(allowed)")
        #expect((allowed["location"] as? String)?.hasPrefix("/whep/") == true && allowed["deleted"] as? Int == 200, "\(allowed)")
        let refused = try open([])
        #expect((refused["error"] as? String)?.contains("Failed to fetch") == true, "\(refused)")
    }
}
