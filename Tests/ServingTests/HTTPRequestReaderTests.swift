import Foundation
import Testing
import Serving

/// `HTTPRequestReader`, the request collection of `HTTPServer`, apart from any socket: the
/// same answer however the client's bytes are cut (what the `http` fuzz target checks), and
/// its findings (fuzz/regressions/http) replayed.
@Suite struct HTTPRequestReaderTests {
    /// What became of `bytes` cut in pieces of `chunk`: a status, `head` or `complete BODY`,
    /// or `more`.
    static func outcome(_ bytes: [UInt8], chunk: Int, headerLimit: Int, maxBody: Int) -> String {
        var reader = HTTPRequestReader(headerLimit: headerLimit)
        var offset = 0
        var sawHead = false
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            var step = reader.push(bytes[offset..<end])
            offset = end
            if case .head = step {
                sawHead = true
                step = reader.expectBody(maxBody: maxBody)
            }
            switch step {
            case .more, .head: continue
            case .refuse(let status): return "\(status.code)"
            case .complete(let request): return "complete \(String(decoding: request.body, as: UTF8.self))"
            }
        }
        return sawHead ? "head" : "more"
    }

    /// A head may take the limit and its blank line: exactly that is taken, one byte more is
    /// refused, at once and a byte at a time (the byte-at-a-time reader refused the first
    /// when it passed the limit before its blank line came: a fuzz finding).
    @Test func headAtTheLimitIsJudgedTheSameInEveryChunking() {
        let line = "GET / HTTP/1.1\r\nX: "
        let fits = Array((line + String(repeating: "a", count: 68 - line.utf8.count - 4) + "\r\n\r\n").utf8)
        #expect(fits.count == 68)
        let over = Array((line + String(repeating: "a", count: 69 - line.utf8.count - 4) + "\r\n\r\n").utf8)
        for chunk in [1, 2, 3, 5, 67, 68, 100] {
            #expect(Self.outcome(fits, chunk: chunk, headerLimit: 64, maxBody: 0) == "complete ", "chunk \(chunk)")
            #expect(Self.outcome(over, chunk: chunk, headerLimit: 64, maxBody: 0) == "431", "chunk \(chunk)")
        }
    }

    @Test func bodyComesWithItsLengthAndRefusalsSayWhy() {
        let post = Array("POST /bitrate HTTP/1.1\r\nContent-Length: 2\r\n\r\n4Mxx".utf8)
        #expect(Self.outcome(post, chunk: 1, headerLimit: 1024, maxBody: 64) == "complete 4M")
        #expect(Self.outcome(post, chunk: 1, headerLimit: 1024, maxBody: 1) == "413")
        #expect(Self.outcome(Array("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8), chunk: 4, headerLimit: 1024, maxBody: 64) == "411")
        #expect(Self.outcome(Array("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n".utf8), chunk: 4, headerLimit: 1024, maxBody: 64) == "400")
        #expect(Self.outcome(Array("GET / HTTP/1.1\r\nno colon\r\n\r\n".utf8), chunk: 4, headerLimit: 1024, maxBody: 64) == "400")
    }

    /// fuzz/targets/HTTP.swift's inputs: first byte = chunk size, header limit, body limit.
    @Test func fuzzFindingsGiveOneOutcomeInEveryChunking() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fuzz/regressions/http")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!names.isEmpty)
        for name in names {
            let input = try [UInt8](Data(contentsOf: dir.appendingPathComponent(name)))
            let first = input[0], bytes = Array(input.dropFirst())
            let headerLimit = [64, 256, 1024, 8192][Int(first >> 4) & 3], maxBody = [0, 16, 64, 1024][Int(first >> 6)]
            let whole = Self.outcome(bytes, chunk: bytes.count, headerLimit: headerLimit, maxBody: maxBody)
            for chunk in 1...16 {
                #expect(Self.outcome(bytes, chunk: chunk, headerLimit: headerLimit, maxBody: maxBody) == whole, "\(name), chunk \(chunk)")
            }
        }
    }
}
