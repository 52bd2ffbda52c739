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

    /// The pictures of an Annex-B stream, in order: IDR or not, and the timestamp SEI's
    /// sequence number and media time.
    static func pictures(_ annexB: Data) throws -> [(idr: Bool, sequence: Int, pts90k: Int)] {
        let json = try #require(try JSONSerialization.jsonObject(with: Run.nalcast(["inspect", "--json", "-"], stdin: annexB).stdout) as? [String: Any])
        let units = json["units"] as? [[String: Any]] ?? []
        return units.compactMap { unit in
            guard let stamp = unit["timestamp"] as? [String: Any], let sequence = stamp["sequence"] as? Int, let pts = stamp["pts90k"] as? Int else { return nil }
            return (unit["idr"] as? Bool ?? false, sequence, pts)
        }
    }

    /// The same of the video of an MP4.
    static func pictures(mp4: String) throws -> [(idr: Bool, sequence: Int, pts90k: Int)] {
        try pictures(Run.program("ffmpeg", ["-v", "error", "-i", mp4, "-map", "0:v", "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", "-"]).stdout)
    }

    @Test func aReplayHoldsTheLastSecondsOfWholeGOPsWithSound() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try freePort()
        let events = dir.appendingPathComponent("events.jsonl")
        // The whole stream beside the replays: a loaded machine's encoder may be late and the
        // source then skips frames (counted as dropped), so a replay is checked against the
        // pictures that were encoded, not against every frame number.
        let whole = dir.appendingPathComponent("whole.h264")
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "1s", "--audio", "tone",
                                                    "--replay", "2s", "--replay-dir", dir.path, "--metrics", "tcp://127.0.0.1:\(port)",
                                                    "--events", events.path, "-o", whole.path])
        let metrics = "http://127.0.0.1:\(port)/metrics"
        var asked: [Int] = []
        // Once 3 s are encoded: one by signal, then one by POST a second later.
        for trigger in 0..<2 {
            var frames = 0
            // Waits for the encoded count (the event), however slowly a loaded machine encodes.
            let deadline = Moment.now.addingTimeInterval(30)
            while Moment.now < deadline {
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
        Wait.until(timeout: 30, every: 0.02) { saved() >= 2 }
        producer.signal(SIGINT)
        #expect(producer.wait(timeout: 20) == 0, "\(producer.stderr)")
        #expect(saved() == 2, "\(producer.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("replay-") }.sorted()
        try #require(files.count == 2, "\(files)")
        let stream = try Self.pictures(Data(contentsOf: whole)).map(\.sequence)
        for (file, frames) in zip(files, asked) {
            let path = dir.appendingPathComponent(file).path
            let probe = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "csv=p=0", path]).text
            #expect(probe.contains("audio,"), "no sound in \(file): \(probe)")
            let replay = try Self.pictures(mp4: path)
            let sequence = replay.map(\.sequence)
            // 2 s to 3 s of whole GOPs (59 to 90 frame intervals of media time), from an IDR,
            // every picture encoded in between (a run of the whole stream's), up to (at
            // least) the picture encoded when it was asked for.
            let span = ((replay.last?.pts90k ?? 0) - (replay.first?.pts90k ?? 0)) / 3000
            #expect((59...90).contains(span), "\(file): \(span) frame intervals, \(replay.count) pictures")
            #expect(replay.first?.idr == true, "\(file) starts at picture \(sequence.first ?? -1), not an IDR")
            let start = stream.firstIndex(of: sequence.first ?? -1) ?? stream.count
            #expect(Array(stream[start...].prefix(sequence.count)) == sequence, "\(file): pictures missing")
            #expect(start + sequence.count >= frames, "\(file) ends at the \(start + sequence.count)th picture, asked after \(frames)")
        }
    }
}
