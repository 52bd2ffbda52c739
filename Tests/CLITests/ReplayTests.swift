import Foundation
import TestSupport
import Testing

/// `produce --replay 2s`: saved on SIGUSR2 and on `POST /replay`, each file the last 2 s of
/// whole GOPs (at most one IDR interval more), picture and sound, up to the picture encoded
/// when it was asked for. One producer, 1 s IDR intervals.
@Suite(.serialized) struct ReplayTests {
    /// `nalcast_frames_encoded_total` from /metrics.
    static func encoded(_ metrics: String) throws -> Int {
        let text = try Run.program("curl", ["-s", metrics]).text
        let line = text.split(separator: "\n").first { $0.hasPrefix("nalcast_frames_encoded_total ") }
        return Int(line?.split(separator: " ").last ?? "") ?? 0
    }

    /// The timestamp SEI sequence numbers of the pictures in an MP4, in order.
    static func sequences(_ mp4: String) throws -> [Int] {
        let annexB = try Run.program("ffmpeg", ["-v", "error", "-i", mp4, "-map", "0:v", "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", "-"]).stdout
        let json = try #require(try JSONSerialization.jsonObject(with: Run.nalcast(["inspect", "--json", "-"], stdin: annexB).stdout) as? [String: Any])
        let units = json["units"] as? [[String: Any]] ?? []
        return units.compactMap { ($0["timestamp"] as? [String: Any])?["sequence"] as? Int }
    }

    @Test func aReplayHoldsTheLastSecondsOfWholeGOPsWithSound() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try freePort()
        let events = dir.appendingPathComponent("events.jsonl")
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "1s", "--audio", "tone",
                                                    "--replay", "2s", "--replay-dir", dir.path, "--metrics", "tcp://127.0.0.1:\(port)",
                                                    "--events", events.path])
        let metrics = "http://127.0.0.1:\(port)/metrics"
        var asked: [Int] = []
        // Once 3 s are encoded: one by signal, then one by POST a second later.
        for trigger in 0..<2 {
            var frames = 0
            // Waits for the encoded count (the event), however slowly a loaded machine encodes.
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                frames = (try? Self.encoded(metrics)) ?? 0
                if frames >= 90 + 30 * trigger { break }
                usleep(20_000)
            }
            asked.append(frames)
            if trigger == 0 {
                producer.signal(SIGUSR2)
            } else {
                let answer = try Run.program("curl", ["-s", "-X", "POST", "-w", " %{http_code}", "http://127.0.0.1:\(port)/replay"]).text
                #expect(answer.hasSuffix(" 202") && answer.contains(dir.path), "\(answer)")
            }
        }
        // Both saved (the events), then stopped: the producer runs until the test is done with
        // it (its --duration is a bound), however slowly a loaded machine answers the POST.
        func saved() -> Int {
            ((try? String(contentsOf: events, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("\"replay-saved\"") }.count
        }
        let deadline = Date().addingTimeInterval(30)
        while saved() < 2 && Date() < deadline { usleep(20_000) }
        producer.signal(SIGINT)
        #expect(producer.wait(timeout: 20) == 0, "\(producer.stderr)")
        #expect(saved() == 2, "\(producer.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("replay-") }.sorted()
        try #require(files.count == 2, "\(files)")
        for (file, frames) in zip(files, asked) {
            let path = dir.appendingPathComponent(file).path
            let probe = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "csv=p=0", path]).text
            #expect(probe.contains("audio,"), "no sound in \(file): \(probe)")
            let sequence = try Self.sequences(path)
            // 2 s to 3 s of whole GOPs, from an IDR (a multiple of 30: IDRs every 30 frames
            // from frame 0), up to (at least) the picture encoded when it was asked for.
            #expect((60...91).contains(sequence.count), "\(file): \(sequence.count) pictures")
            #expect((sequence.first ?? 1) % 30 == 0, "\(file) starts at picture \(sequence.first ?? -1)")
            #expect(zip(sequence, sequence.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(file): pictures missing")
            #expect((sequence.last ?? 0) + 1 >= frames, "\(file) ends at \(sequence.last ?? -1), asked after \(frames)")
        }
    }
}
