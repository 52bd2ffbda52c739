import Foundation
import TestSupport
import Testing

/// `POST /bitrate` on the `--metrics` listener: the encoder takes the new bitrate from the
/// next frame. Checked on what the encoder produces (bytes per encoded frame, from
/// `/metrics`), not only on the HTTP answer.
@Suite(.serialized) struct BitrateRouteTests {
    /// (frames encoded, bytes encoded) from the producer's `/metrics`.
    static func encoded(_ port: Int) throws -> (frames: Int, bytes: Int) {
        let text = try Run.program("curl", ["-s", "http://127.0.0.1:\(port)/metrics"]).text
        func value(_ name: String) -> Int {
            let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") } ?? ""
            return Int(line.split(separator: " ").last ?? "") ?? -1
        }
        return (value("nalcast_frames_encoded_total"), value("nalcast_encoded_bytes_total"))
    }

    /// Mean bytes per encoded frame over the next `frames` frames (the frames are counted,
    /// however long they take).
    static func bytesPerFrame(_ port: Int, frames: Int = 45) throws -> Double {
        let start = try encoded(port)
        var now = start
        let deadline = Moment.now.addingTimeInterval(30)
        while now.frames - start.frames < frames && Moment.now < deadline {
            usleep(100_000)
            now = try encoded(port)
        }
        try #require(now.frames - start.frames >= frames, "the producer stopped encoding")
        return Double(now.bytes - start.bytes) / Double(now.frames - start.frames)
    }

    /// POSTs `body` to /bitrate (curl's `-d`); returns (status, body).
    static func post(_ port: Int, _ body: String, query: String = "") throws -> (status: String, body: String) {
        let r = try Run.program("curl", ["-s", "-w", "\n%{http_code}", "-X", "POST", "-d", body, "http://127.0.0.1:\(port)/bitrate\(query)"])
        let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false)
        // The body ends with its own newline: drop it with the separator before the code.
        return (String(lines.last ?? ""), lines.dropLast(2).joined(separator: "\n"))
    }

    @Test func aPostedBitrateChangesWhatTheEncoderMakes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let port = try freePort()
        let producer = try Background(Run.nalcast, ["produce", "--size", "640x360", "--bitrate", "5M", "--listen", "tcp://127.0.0.1:0",
                                                   "--metrics", "tcp://127.0.0.1:\(port)", "--events", events.path])
        _ = try #require(producer.servingEndpoint(), "producer did not start: \(producer.stderr)")

        let before = try Self.bytesPerFrame(port)
        let lowered = try Self.post(port, "10k")
        #expect(lowered.status == "200")
        #expect(lowered.body == "10000")
        _ = try Self.bytesPerFrame(port, frames: 10)  // the rate control settles
        let low = try Self.bytesPerFrame(port)
        #expect(low * 2 < before, "before \(before) B/frame, after POST 10k \(low) B/frame")

        // Back up, through the query this time: the encoder follows again.
        let raised = try Self.post(port, "", query: "?bitrate=5M")
        #expect(raised.status == "200")
        #expect(raised.body == "5000000")
        _ = try Self.bytesPerFrame(port, frames: 10)
        let high = try Self.bytesPerFrame(port)
        #expect(high > low * 2, "at 10k \(low) B/frame, after POST 5M \(high) B/frame")

        // Bad values: one clear line, nothing applied.
        let bad = try Self.post(port, "fast")
        #expect(bad.status == "400")
        #expect(bad.body.hasPrefix("bitrate: invalid value 'fast'"), "\(bad.body)")
        #expect(bad.body.split(separator: "\n").count == 1)
        #expect(try Self.post(port, "5").status == "400")  // under 10k
        #expect(try Self.post(port, "").status == "400")
        let get = try Run.program("curl", ["-s", "-i", "http://127.0.0.1:\(port)/bitrate"]).text
        #expect(get.hasPrefix("HTTP/1.1 405 "), "\(get)")
        #expect(get.contains("Allow: POST"))

        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        let log = try String(contentsOf: events, encoding: .utf8)
        #expect(log.contains("\"event\":\"bitrate-requested\",\"bitsPerSecond\":10000"))
        #expect(log.contains("\"event\":\"bitrate-requested\",\"bitsPerSecond\":5000000"))
        #expect(log.components(separatedBy: "bitrate-requested").count - 1 == 2)
    }
}
