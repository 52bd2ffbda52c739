import Foundation
import TestSupport
import Testing

/// `nalcast consume` against a live `nalcast produce` (timestamp SEI, real time). Scaled
/// down to stay short: 8 s of 2 s segments (the 20 s of 5 s has the same ratio).
@Suite(.serialized) struct ConsumeProducerTests {
    static func checkSegment(_ path: String) throws {
        let ours = try inspect(path)
        #expect(Array(ours.firstTypes.drop { $0 == 9 || $0 == 6 }.prefix(2)) == [7, 8] || ours.firstTypes.filter { [7, 8, 5].contains($0) } == [7, 8, 5],
                "\(path) starts with \(ours.firstTypes)")
        #expect(ours.firstTypes.contains(5), "\(path) does not start with an IDR: \(ours.firstTypes)")
        let decoded = try Decoded(path)
        #expect(decoded.errors.isEmpty, "\(path): \(decoded.errors)")
        #expect(decoded.frames == ours.accessUnits, "\(path)")
    }

    @Test func liveStreamCutIntoSegmentsOfTheRightLength() throws {
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", "tcp://127.0.0.1:0"])
        let endpoint = try #require(producer.servingEndpoint(), "producer did not start: \(producer.stderr)")
        let dir = try temporaryDirectory()
        let segs = dir.appendingPathComponent("segs").path
        let events = dir.appendingPathComponent("events.json")
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "--segments", segs, "--segment-duration", "2s", "--events", events.path])
        #expect(consumer.waitFor("connected to", timeout: 10))
        // Three segments of 2 s closed for their duration; the fourth, in progress, closes at SIGINT.
        #expect(Wait.until(timeout: 30) { eventLines(events).filter { $0["event"] as? String == "segment-closed" }.count >= 3 }, "\(consumer.stderr)")
        consumer.signal(SIGINT)
        #expect(consumer.wait() == 0, "\(consumer.stderr)")
        producer.signal(SIGTERM)
        producer.wait()
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(!names.contains { $0.hasSuffix(".part") }, "\(names)")
        #expect((3...5).contains(names.count), "\(names)")
        for name in names { try Self.checkSegment(segs + "/" + name) }
        // Durations from the SEI media time: full segments are 2 s to 2 s + one GOP.
        let closed = eventLines(events).filter { $0["event"] as? String == "segment-closed" }
        #expect(closed.count == names.count)
        for event in closed where event["reason"] as? String == "duration" {
            let d = event["duration"] as? Double ?? 0
            #expect(d >= 1.99 && d <= 2.51, "\(event)")
        }
    }

    @Test func producerKilledAndRestartedTheConsumerReconnectsAtAnIDR() throws {
        let port = try freePort()
        let listen = "tcp://127.0.0.1:\(port)"
        var producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", listen])
        #expect(producer.servingEndpoint() != nil, "\(producer.stderr)")
        let dir = try temporaryDirectory()
        let segs = dir.appendingPathComponent("segs").path
        let events = dir.appendingPathComponent("events.json")
        let consumer = try Background(Run.nalcast, ["consume", "--from", listen, "--segments", segs, "--segment-duration", "60s", "--events", events.path])
        #expect(consumer.waitFor("connected to", timeout: 10))
        usleep(2_000_000)
        producer.signal(SIGKILL)
        producer.wait()
        #expect(consumer.waitFor("disconnected from", timeout: 10), "\(consumer.stderr)")
        usleep(500_000)
        producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", listen])
        #expect(producer.servingEndpoint() != nil, "\(producer.stderr)")
        #expect(consumer.waitFor("after", timeout: 15), "\(consumer.stderr)")  // connected to ... after N attempts
        usleep(2_000_000)
        consumer.signal(SIGTERM)
        #expect(consumer.wait() == 0, "\(consumer.stderr)")
        producer.signal(SIGTERM)
        producer.wait()
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names.count == 2, "\(names)")
        for name in names { try Self.checkSegment(segs + "/" + name) }
        let text = try String(contentsOf: events, encoding: .utf8)
        #expect(text.contains("\"reason\":\"reconnect\""), "\(text)")
        #expect(text.components(separatedBy: "\"event\":\"connected\"").count == 3, "\(text)")
    }
}
