import Foundation
import TestSupport
import Testing

/// `--on-segment`, `--keep`, `--metrics`, `--events -` and unix-socket input.
@Suite(.serialized) struct ConsumeHooksTests {
    /// The hook runs without a shell, once per finished segment, with the path as its last
    /// argument and the NALCAST_SEGMENT_* environment; `--keep 2` leaves the newest two.
    @Test func onSegmentRunsPerFinishedSegmentAndKeepDeletesTheOldest() throws {
        let dir = try temporaryDirectory()
        let input = try inputFile(try Streams.ffmpeg(frames: 150, keyint: 30, bitrate: "4M"), in: dir)
        let segs = dir.appendingPathComponent("segs").path
        let script = dir.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\necho \"$1|$2|$NALCAST_SEGMENT_PATH|$NALCAST_SEGMENT_FRAMES|$NALCAST_SEGMENT_BYTES|$NALCAST_SEGMENT_DURATION\" >> \"$0.log\"\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let r = try Run.nalcast(["consume", "--from", input.path, "--segments", segs, "--segment-duration", "1s", "--keep", "2",
                                 "--on-segment", "\(script) 'first arg'"])
        #expect(r.status == 0, "\(r.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(kept.count == 2, "\(kept)")
        // Hooks run in the background: wait for the last one's line.
        var lines: [Substring] = []
        Wait.until {
            lines = ((try? String(contentsOfFile: script + ".log", encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.count == 5
        }
        #expect(lines.count == 5, "\(lines)")
        var frames = 0
        for line in lines {
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            #expect(f.count == 6)
            guard f.count == 6 else { continue }
            #expect(f[0] == "first arg")
            #expect(f[1] == f[2] && f[1].hasPrefix(segs))
            frames += Int(f[3]) ?? 0
            #expect((Int(f[4]) ?? 0) > 0)
            #expect(abs((Double(f[5]) ?? 0) - 1.0) < 0.01, "\(line)")
        }
        #expect(frames == 150)
    }

    /// A unix-socket input, events on stdout as JSON lines, and Prometheus metrics counting
    /// what went through.
    @Test func unixInputEventsOnStdoutAndMetrics() throws {
        let dir = try temporaryDirectory()
        let sock = dir.appendingPathComponent("s.sock").path
        // A unix-socket producer: nalcast produce itself, with a fixed number of frames.
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", "unix:\(sock)"])
        #expect(producer.servingEndpoint() != nil, "\(producer.stderr)")
        let port = try freePort()
        let out = dir.appendingPathComponent("out.h264")
        let events = dir.appendingPathComponent("events.json")
        let consumer = try Background(Run.nalcast, ["consume", "--from", "unix:\(sock)", "-o", out.path, "--events", "-",
                                                    "--metrics", "tcp://127.0.0.1:\(port)"], stdoutTo: events)
        #expect(consumer.waitFor("connected to", timeout: 10), "\(consumer.stderr)")
        let received = { (text: String) in
            text.split(separator: "\n").first { $0.hasPrefix("nalcast_consumer_access_units_total ") }.flatMap { Int($0.split(separator: " ").last!) } ?? 0
        }
        // More than ten access units received, as the metrics say.
        try Wait.until(every: 0.1) { received(try Run.program("curl", ["-s", "http://127.0.0.1:\(port)/metrics"]).text) > 10 }
        let metrics = try Run.program("curl", ["-s", "http://127.0.0.1:\(port)/metrics"])
        #expect(metrics.text.contains("nalcast_consumer_access_units_total"), "\(metrics.text)")
        #expect(received(metrics.text) > 10, "\(metrics.text)")
        #expect(metrics.text.contains("nalcast_capture_to_receive_seconds_count"))
        #expect(metrics.text.contains("nalcast_sink_written_access_units_total{sink=\"file\"}"))
        consumer.signal(SIGTERM)
        #expect(consumer.wait() == 0, "\(consumer.stderr)")
        producer.signal(SIGTERM)
        producer.wait()
        let lines = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
        let kinds = eventLines(events).compactMap { $0["event"] as? String }
        #expect(kinds.count == lines.count, "not every line is JSON: \(lines)")
        #expect(kinds.first == "connected")
        #expect(kinds.contains("sink-closed"))
        let decoded = try Decoded(out.path)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames > 10)
    }
}
