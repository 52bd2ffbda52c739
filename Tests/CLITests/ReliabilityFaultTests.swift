import Foundation
import Testing

/// Fault injection against real processes on loopback: dying producers, stopped readers,
/// churning readers, a misbehaving forward target, hostile clients. Each test is a few
/// seconds; the longer versions (20 s stop, 30 s churn) run with NALCAST_LONG_TESTS=1.
@Suite(.serialized) struct ReliabilityFaultTests {
    static let long = ProcessInfo.processInfo.environment["NALCAST_LONG_TESTS"] == "1"

    /// A Prometheus sample's value from `--metrics` (nil when absent).
    static func metric(_ port: Int, _ sample: String) throws -> Double? {
        let text = try Run.program("curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(port)/metrics"]).text
        let line = text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }
        return line.flatMap { Double($0.split(separator: " ").last!) }
    }

    static func openFiles(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    static func rssKB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    static func events(_ url: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func noiseY4M(_ dir: URL, seconds: Int) throws -> URL {
        let input = dir.appendingPathComponent("noise.y4m")
        let r = try Run.program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "nullsrc=s=320x240:r=30,geq=random(1)*255:128:128",
                                           "-frames:v", String(seconds * 30), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", input.path])
        #expect(r.status == 0, "\(r.stderr)")
        return input
    }

    /// The producer is SIGKILLed and restarted three times under a recording consumer. Every
    /// connection gives one segment (the duration is long); each is complete, decodes and
    /// starts at an IDR; the access units in the files are exactly the ones the consumer
    /// received and the segment sink reports as written.
    @Test func producerKilledThreeTimesLosesNothingTheConsumerReceived() throws {
        let port = try freePort()
        let listen = "tcp://127.0.0.1:\(port)"
        let metricsPort = try freePort()
        let producerArgs = ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", listen]
        var producer = try Background(Run.nalcast, producerArgs)
        #expect(producer.servingEndpoint() != nil, "\(producer.stderr)")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let segs = dir.appendingPathComponent("segs").path
        let eventsURL = dir.appendingPathComponent("events.jsonl")
        let consumer = try Background(Run.nalcast, ["consume", "--from", listen, "--segments", segs, "--segment-duration", "60s",
                                                    "--events", eventsURL.path, "--metrics", "tcp://127.0.0.1:\(metricsPort)"])
        #expect(consumer.waitFor("connected to", timeout: 10), "\(consumer.stderr)")
        for round in 1...3 {
            usleep(1_200_000)
            producer.signal(SIGKILL)
            producer.wait()
            // Wait until the consumer saw this loss, then bring the producer back.
            for _ in 0..<200 where Self.events(eventsURL).filter({ $0["event"] as? String == "disconnected" }).count < round { usleep(50_000) }
            producer = try Background(Run.nalcast, producerArgs)
            #expect(producer.servingEndpoint() != nil, "\(producer.stderr)")
            for _ in 0..<300 where Self.events(eventsURL).filter({ $0["event"] as? String == "connected" }).count < round + 1 { usleep(50_000) }
        }
        usleep(1_200_000)
        // Stop the source first, so that the counts hold still while they are read.
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        for _ in 0..<200 where Self.events(eventsURL).filter({ $0["event"] as? String == "disconnected" }).count < 4 { usleep(50_000) }
        usleep(300_000)
        let received = try Self.metric(metricsPort, "nalcast_consumer_access_units_total")
        let written = try Self.metric(metricsPort, "nalcast_sink_written_access_units_total{sink=\"segments\"}")
        consumer.signal(SIGTERM)
        #expect(consumer.wait() == 0, "\(consumer.stderr)")

        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names.count == 4, "\(names)")  // one per connection, none left as .part
        var inFiles = 0
        for name in names {
            try ConsumeProducerTests.checkSegment(segs + "/" + name)
            inFiles += try inspect(segs + "/" + name).accessUnits
        }
        #expect(received != nil && written != nil)
        #expect(Double(inFiles) == received, "files hold \(inFiles) access units, the consumer received \(received ?? -1)")
        #expect(Double(inFiles) == written, "files hold \(inFiles) access units, the sink wrote \(written ?? -1)")
        let closed = Self.events(eventsURL).filter { $0["event"] as? String == "segment-closed" }
        #expect(closed.reduce(0) { $0 + ($1["frames"] as? Int ?? 0) } == inFiles)
        #expect(closed.filter { $0["reason"] as? String == "reconnect" }.count == 3, "\(closed)")
    }
}
