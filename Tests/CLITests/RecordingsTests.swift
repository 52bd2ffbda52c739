import Foundation
import TestSupport
import Testing

/// `consume --segments DIR --web ADDR`: the recordings by time while they are recorded:
/// `/recordings` lists the segments' time ranges, `/recordings/get` stitches the ones that
/// cover a range into one MP4 from the IDR before its start (FFmpeg decodes it, picture and
/// sound), with byte ranges. One producer (MPEG-TS with the sound, an IDR a second) and one
/// recorder (2 s segments) for the suite; the producer runs until the test is done with the
/// recorder (a producer of fixed length would end the recording under a slow test).
@Suite(.serialized) struct RecordingsTests {
    @Test func recordingsAreListedAndServedByTimeWithByteRanges() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "1s", "--audio", "tone",
                                                    "--listen", "ts:tcp://127.0.0.1:0"])
        let ts = try #require(producer.servingEndpoint(), "\(producer.stderr)")
        let recorder = try Background(Run.nalcast, ["consume", "--from", String(ts.dropFirst(3)), "--segments", dir.appendingPathComponent("rec").path,
                                                    "--segment-duration", "2s", "--web", "tcp://127.0.0.1:0", "--reconnect-timeout", "0"])
        #expect(recorder.waitFor("the page on "), "\(recorder.stderr)")
        let line = try #require(recorder.stderr.split(separator: "\n").first { $0.contains("the page on ") })
        let page = try #require(line.split(separator: " ").first { $0.hasPrefix("http://") }).trimmingCharacters(in: CharacterSet(charactersIn: ","))

        // Wait for three finished segments (each is listed as it finishes).
        // Under a deadline: a count of polls is a time a loaded machine can outrun.
        var segments: [[String: Any]] = []
        try Wait.until(timeout: 60, every: 0.1) {
            let listing = try Run.program("curl", ["-s", page + "recordings"]).stdout
            segments = ((try? JSONSerialization.jsonObject(with: listing)) as? [String: Any])?["segments"] as? [[String: Any]] ?? []
            return segments.count >= 3
        }
        try #require(segments.count >= 3, "\(recorder.stderr)")
        let starts = segments.map { HLSPlaylistRules.date($0["start"] as? String ?? "") }
        let ends = segments.map { HLSPlaylistRules.date($0["end"] as? String ?? "") }
        for i in 1..<segments.count { #expect(abs(starts[i] - ends[i - 1]) < 0.002, "not contiguous: \(segments)") }
        // Each cut at the first IDR at or after 2 s: exactly 2 s while every picture is encoded;
        // a live producer on a loaded machine skips a late picture rather than queue it, and the
        // IDR due at a whole second then comes with the next picture, a frame or more later,
        // never a whole second (the keyint) later.
        #expect(segments.dropLast().allSatisfy { (2.0..<3.0).contains($0["duration"] as? Double ?? 0) }, "\(segments)")

        // Half a second into the second segment: the cut starts at its IDR, the second's start.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let asked = formatter.string(from: Date(timeIntervalSince1970: starts[1] + 0.5))
        let url = page + "recordings/get?start=\(asked)&duration=2s"
        let cut = dir.appendingPathComponent("cut.mp4")
        let head = try Run.program("curl", ["-s", "-D", "-", "-o", cut.path, url]).text
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(head.contains("Accept-Ranges: bytes"))
        #expect(head.contains("X-Recording-Start: \(segments[1]["start"] as? String ?? "?")"), "\(head)")
        let probe = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "csv=p=0", cut.path])
        let video = probe.text.split(separator: "\n").first { $0.hasPrefix("video,") }.flatMap { Double($0.split(separator: ",")[1]) } ?? 0
        // From the IDR 0.5 s before the start to past its end: 2.5 s to 3.5 s of pictures (in
        // time: a loaded machine's producer skips a late picture now and then).
        #expect((2.4...3.6).contains(video), "\(probe.text)")
        #expect(probe.text.contains("audio,"), "no sound: \(probe.text)")
        let decode = try Run.program("ffmpeg", ["-v", "error", "-i", cut.path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")

        // Byte ranges: a slice is the same bytes as the whole has there; past the end is 416.
        let whole = try Data(contentsOf: cut)
        let part = try Run.program("curl", ["-s", "-r", "1000-1999", "-D", dir.appendingPathComponent("h").path, url])
        #expect(part.stdout == whole.subdata(in: 1000..<2000))
        let partHead = try String(contentsOf: dir.appendingPathComponent("h"), encoding: .utf8)
        #expect(partHead.hasPrefix("HTTP/1.1 206") && partHead.contains("Content-Range: bytes 1000-1999/\(whole.count)"), "\(partHead)")
        let past = try Run.program("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-r", "\(whole.count + 10)-", url])
        #expect(past.text == "416")
        let bad = try Run.program("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", page + "recordings/get?start=yesterday"])
        #expect(bad.text == "400")
        try Self.chromiumSeeks(url)
        // Stopped while its input runs (an MPEG-TS input that closes is a lost one, exit 69).
        recorder.signal(SIGTERM)
        #expect(recorder.wait(timeout: 20) == 0, "\(recorder.stderr)")
        // The producer runs until stopped (its --duration is a bound, not the test's length).
        producer.signal(SIGINT)
        #expect(producer.wait(timeout: 20) == 0, "\(producer.stderr)")
    }

    /// Chromium plays the stitched MP4 from the recorder in a `<video>` (its byte ranges) and
    /// seeks into it: the seek lands where asked and the first frame presented after it is
    /// that instant's (requestVideoFrameCallback's media time; the page comes from serve.py, the
    /// video from another origin, so its pixels cannot be read back).
    static func chromiumSeeks(_ url: String) throws {
        if let missing = PlaybackTests.chromiumMissing {
            print("RecordingsTests: Chromium skipped: \(missing)")
            return
        }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let src = url.addingPercentEncoding(withAllowedCharacters: allowed) ?? url
        let site = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: site) }
        try FileManager.default.copyItem(at: PlaybackTests.browserTools.appendingPathComponent("player.html"), to: site.appendingPathComponent("player.html"))
        let server = try PageServer(site)
        defer { server.stop() }
        let page = "http://127.0.0.1:\(server.port)/player.html?src=" + src
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("video_check.py").path, page, "1.5", "--frame-time"],
                                timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        // 2.5 s to 3.5 s of pictures from the IDR before the asked start.
        #expect((2.4...3.6).contains(result["duration"] as? Double ?? -1), "\(result)")
        #expect(result["width"] as? Int == 320, "\(result)")
        let now = result["currentTime"] as? Double ?? -1, shown = result["frameTime"] as? Double ?? -1
        #expect(abs(now - 1.5) <= 1.0 / 30, "the seek landed at \(now): \(result)")
        // The first frame presented after the seek: at 1.5 s, or the next ones while playing began.
        #expect(shown >= 1.5 - 1.0 / 30 && shown < 1.5 + 0.5, "first frame after the seek at \(shown): \(result)")
    }
}
