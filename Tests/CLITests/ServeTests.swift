import Foundation
import TestSupport
import Testing

/// `nalcast produce` serving real readers: FFmpeg, GStreamer, many at once, slow ones,
/// unix sockets, signals, metrics and `nalcast probe`.
@Suite(.serialized) struct ServeTests {
    /// Starts a producer on a free port; returns it and its endpoint.
    static func producer(_ extra: [String] = [], size: String = "320x240") throws -> (Background, String) {
        let p = try Background(Run.nalcast, ["produce", "--size", size, "--listen", "tcp://127.0.0.1:0"] + extra)
        let endpoint = try #require(p.servingEndpoint(), "producer did not start: \(p.stderr)")
        return (p, endpoint)
    }

    /// The sequence numbers of a received stream's timestamp SEIs.
    static func sequences(_ stream: Data) throws -> [Int] {
        let units = try inspect(stream)["units"] as? [[String: Any]] ?? []
        return units.compactMap { ($0["timestamp"] as? [String: Any])?["sequence"] as? Int }
    }


    /// Frames missing between the first and last sequence number.
    static func gaps(_ s: [Int]) -> Int { zip(s, s.dropFirst()).reduce(0) { $0 + ($1.1 - $1.0 - 1) } }

    /// Frames the producer itself never encoded (capture fell behind on a busy machine), from
    /// the "finished" event: gaps of that size are not a reader's loss.
    static func framesDropped(_ events: URL) throws -> Int {
        let finished = try String(contentsOf: events, encoding: .utf8).split(separator: "\n").last { $0.contains("\"finished\"") } ?? ""
        guard let range = finished.range(of: "\"framesDropped\":") else { return 0 }
        return Int(finished[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    @Test func ffmpegAndGStreamerDecodeIncludingLateJoiners() throws {
        let (producer, endpoint) = try Self.producer()
        let port = endpoint.split(separator: ":").last!
        let first = try Run.program("ffmpeg", ["-hide_banner", "-v", "error", "-f", "h264", "-i", "tcp://127.0.0.1:\(port)", "-frames:v", "60", "-f", "null", "-"])
        #expect(first.status == 0)
        #expect(first.stderr.isEmpty, "\(first.stderr)")
        // Joining a stream that has been running for a while.
        usleep(700_000)
        let late = try Run.program("ffmpeg", ["-hide_banner", "-v", "error", "-f", "h264", "-i", "tcp://127.0.0.1:\(port)", "-frames:v", "30", "-f", "null", "-"])
        #expect(late.status == 0)
        #expect(late.stderr.isEmpty, "\(late.stderr)")
        let gst = try Run.program("gst-launch-1.0", ["-q", "tcpclientsrc", "host=127.0.0.1", "port=\(port)", "num-buffers=30", "!", "h264parse", "!", "avdec_h264", "!", "fakesink"])
        #expect(gst.status == 0, "\(gst.stderr)")
        #expect(!gst.stderr.contains("ERROR") && !gst.stderr.contains("WARNING"), "\(gst.stderr)")
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
    }

    @Test func sixteenReadersGetEveryFrameAndTheSeventeenthIsRefused() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, endpoint) = try Self.producer(["--max-readers", "16", "--events", events.path])
        let readers = try (0..<16).map { _ in try StreamReaderClient(endpoint) }
        // The sixteen are in before the seventeenth knocks.
        #expect(Wait.until { eventLines(events).filter { $0["event"] as? String == "reader-joined" }.count == 16 }, "not 16 readers joined")
        let extra = try StreamReaderClient(endpoint)
        #expect(Wait.until { extra.isClosedByPeer }, "the seventeenth reader was not turned away")
        // A second of pictures (and a little more) for every one of the sixteen.
        #expect(Wait.until { readers.allSatisfy { accessUnitDelimiters(in: $0.received) > 31 } }, "a reader got less than a second of pictures")
        #expect(extra.finish().isEmpty)
        let streams = readers.map { $0.finish() }
        let received = try streams.map(Self.sequences)
        // Every frame any reader got, every reader got (within the time it was connected).
        let all = Set(received.flatMap { $0 }).sorted()
        for (i, s) in received.enumerated() {
            #expect(s.count >= 30, "reader \(i) got \(s.count) access units")
            guard let first = s.first, let last = s.last else { continue }
            #expect(s == all.filter { $0 >= first && $0 <= last }, "reader \(i) missed frames")
            let decoded = try ffmpegDecode(streams[i])
            #expect(decoded.errors.isEmpty, "reader \(i): \(decoded.errors)")
        }
        producer.signal(SIGINT)
        #expect(producer.wait() == 0)
        // What no reader got, the producer never encoded.
        #expect(Self.gaps(all) <= (try Self.framesDropped(events)))
        let log = try String(contentsOf: events, encoding: .utf8)
        #expect(log.contains("\"reader-refused\""))
        #expect(log.components(separatedBy: "\"reader-joined\"").count - 1 == 16)
    }

    @Test func aReaderThatStopsReadingDelaysNoOne() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Noise costs many bits: the stalled reader's buffers fill within a second.
        let input = try Run.noiseY4M(in: dir)
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, endpoint) = try Self.producer(["--source", "y4m:\(input.path)", "--realtime", "--bitrate", "3M", "--keyint", "500ms", "--events", events.path])
        let stalled = try StreamReaderClient(endpoint, receiveBuffer: 4096, startPaused: true)
        let healthy = try StreamReaderClient(endpoint)
        // Stalled until the server gives up on what it had queued for it.
        #expect(Wait.until { eventLines(events).contains { $0["event"] as? String == "reader-skipped" } }, "the stalled reader was never skipped")
        stalled.resume()
        #expect(producer.wait(timeout: 15) == 0)  // the input ends after 5 s
        let good = healthy.finish()
        let slow = stalled.finish()
        let s = try Self.sequences(good)
        #expect(Self.gaps(s) <= (try Self.framesDropped(events)), "the healthy reader missed frames")
        #expect(s.count >= 100)
        let log = try String(contentsOf: events, encoding: .utf8)
        #expect(log.contains("\"reader-skipped\""), "the stalled reader was never skipped")
        // What the stalled reader got after resuming still decodes.
        let decoded = try ffmpegDecode(slow)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames > 0)
        #expect(try Self.sequences(slow).count < s.count)
    }

    @Test func unixSocketIsPrivateAndServes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.sock").path
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--listen", "unix:\(path)"])
        #expect(producer.waitFor("serving unix:"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let probe = try Run.nalcast(["probe", "--json", "--seconds", "0.3", "unix:\(path)"])
        #expect(probe.status == 0, "\(probe.stderr)")
        #expect(probe.text.contains("\"width\":320"))
        // A second producer on the same live socket is refused.
        let second = try Run.nalcast(["produce", "--listen", "unix:\(path)"], timeout: 10)
        #expect(second.status == 69, "\(second.stderr)")
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func busyPortIsOneLineAndExit69() throws {
        let (producer, endpoint) = try Self.producer()
        let r = try Run.nalcast(["produce", "--listen", endpoint], timeout: 10)
        #expect(r.status == 69)
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("in use") || r.stderr.contains("Address already in use"), "\(r.stderr)")
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
    }

    @Test func sigusr1ForcesAnIDRAndSigtermDrains() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, endpoint) = try Self.producer(["--keyint", "60s", "--join", "next", "--events", events.path])
        let reader = try StreamReaderClient(endpoint)
        #expect(Wait.until { eventLines(events).contains { $0["event"] as? String == "reader-joined" } }, "the reader did not join")
        // Each SIGUSR1 makes the next picture an IDR: the reader waits for the first, then gets the second.
        producer.signal(SIGUSR1)
        #expect(Wait.until { idrPictures(in: reader.received) >= 1 }, "no IDR after the first SIGUSR1")
        producer.signal(SIGUSR1)
        #expect(Wait.until { idrPictures(in: reader.received) >= 2 }, "no IDR after the second SIGUSR1")
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        let stream = reader.finish()
        let json = try inspect(stream)
        // keyint 60 s: apart from the first IDR, only SIGUSR1 makes them (the join waited for it).
        #expect((json["idrAccessUnits"] as? Int ?? 0) >= 2)
        // A clean stop ends the stream with an end-of-sequence NAL unit: the last picture is whole.
        #expect((json["nalUnitsByType"] as? [String: Int])?["10"] == 1)
        #expect(try ffmpegDecode(stream).errors.isEmpty)
        let log = try String(contentsOf: events, encoding: .utf8)
        #expect(log.contains("\"idr-forced\""))
        #expect(log.contains("\"stopping\""))
    }

    @Test func metricsAndHealth() throws {
        let metricsPort = try freePort()
        let (producer, endpoint) = try Self.producer(["--metrics", "tcp://127.0.0.1:\(metricsPort)"])
        let reader = try StreamReaderClient(endpoint)
        // Joined, and sent pictures: every counter below has something to say.
        #expect(Wait.until { accessUnitDelimiters(in: reader.received) > 2 }, "the reader got no pictures")
        let health = try Run.program("curl", ["-s", "-w", "%{http_code}", "http://127.0.0.1:\(metricsPort)/healthz"])
        #expect(health.text == "ok200" || health.text == "ok\n200", "\(health.text)")
        let metrics = try Run.program("curl", ["-s", "http://127.0.0.1:\(metricsPort)/metrics"]).text
        for name in ["nalcast_frames_captured_total", "nalcast_frames_encoded_total", "nalcast_frames_dropped_total{reason=\"rate\"}",
                     "nalcast_encode_milliseconds", "nalcast_readers 1", "nalcast_bytes_sent_total", "nalcast_access_units_sent_total",
                     "nalcast_reader_skips_total", "nalcast_readers_refused_total", "nalcast_join_seconds_bucket"] {
            #expect(metrics.contains(name), "missing \(name)")
        }
        let missing = try Run.program("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(metricsPort)/other"])
        #expect(missing.text == "404")
        _ = reader.finish()
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
    }

    @Test func probeReportsAndFailsWhenNothingIsThere() throws {
        let (producer, endpoint) = try Self.producer(["--fps", "25"], size: "640x360")
        let r = try Run.nalcast(["probe", "--json", "--seconds", "0.5", endpoint])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        #expect(json["width"] as? Int == 640)
        #expect(json["height"] as? Int == 360)
        #expect(json["frameRate"] as? Double == 25)
        #expect((json["kbps"] as? Double ?? 0) > 0)
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        let none = try Run.nalcast(["probe", "--timeout", "1s", endpoint])
        #expect(none.status == 69)
        #expect(none.stderr.split(separator: "\n").count == 1)
    }
}

/// A TCP port nobody listens on right now (TestSupport's `FreePort`: below the ephemeral range).
func freePort() throws -> Int { Int(try FreePort.tcp()) }
