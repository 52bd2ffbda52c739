import Foundation
import Testing
import TestSupport

/// A relay passes sound on: `consume --from ts:… --listen ts:…` serves the input's AAC beside
/// its video, on the input's time line, read by FFmpeg as a player would read it (`ffmpeg -i
/// tcp://…`, no options: what `ffplay tcp://…` does). The sync figures come from
/// `AVSyncTests`' analysis of `produce --audio tone`'s flash and beep pairs.
@Suite struct RelayAudioTests {
    /// The `ts:tcp://…` address in a "serving …" line of `process`'s log.
    static func tsAddress(_ process: Background) throws -> String {
        let line = try #require(process.stderr.split(separator: "\n").first { $0.contains("serving ts:") })
        let word = try #require(line.split(whereSeparator: { $0 == " " || $0 == "," }).first { $0.hasPrefix("ts:tcp://") })
        return String(word.dropFirst(3))
    }

    /// The steps between successive audio packets' PTS (90 kHz) of the first audio track.
    static func audioSteps(_ path: String) throws -> (first: Int?, steps: [Int]) {
        let r = try Run.program("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts", "-of", "csv=p=0", path])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        let pts = r.text.split(whereSeparator: \.isNewline).compactMap { Int($0.split(separator: ",").first ?? "") }
        return (pts.first, zip(pts, pts.dropFirst()).map { $1 - $0 })
    }

    /// The codec names of the streams `path` holds, in order (each once: ffprobe lists a TS
    /// program's streams too).
    static func codecs(_ path: String) throws -> [String] {
        let r = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
        #expect(r.status == 0, "ffprobe: \(r.stderr)")
        var names: [String] = []
        for line in r.text.split(whereSeparator: \.isNewline) {
            let name = String(line.split(separator: ",").first ?? "")
            if !name.isEmpty && !names.contains(name) { names.append(name) }
        }
        return names
    }

    @Test func aRelaysTransportStreamReadersGetTheSoundInStepWithThePictures() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The source runs until the readers are done (its --duration is a bound): a loaded
        // machine may take seconds to start each ffmpeg reader.
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--flash", "--size", "320x240", "--audio", "tone",
                                                    "--preset", "ultrafast", "--duration", "120s", "--listen", "ts:tcp://127.0.0.1:0"])
        defer { producer.signal(SIGTERM); producer.wait() }
        #expect(producer.waitFor("capturing"), "\(producer.stderr)")
        let source = try Self.tsAddress(producer)
        let relay = try Background(Run.nalcast, ["consume", "--from", "ts:\(source)", "--listen", "ts:tcp://127.0.0.1:0",
                                                 "--listen", "tcp://127.0.0.1:0", "--reconnect-timeout", "0"])
        defer { relay.signal(SIGTERM); relay.wait() }
        #expect(relay.waitFor("(MPEG-TS)"), "\(relay.stderr)")
        let served = try Self.tsAddress(relay)
        #expect(relay.waitFor("relaying the input's audio"), "\(relay.stderr)")

        // One reader from the start, one joining 2.5 s later, both as a player reads.
        let out = dir.appendingPathComponent("relayed.ts").path
        let late = dir.appendingPathComponent("late.ts").path
        let first = try Background("ffmpeg", ["-nostdin", "-v", "error", "-i", served, "-t", "6", "-c", "copy", "-y", out])
        usleep(2_500_000)
        let joiner = try Background("ffmpeg", ["-nostdin", "-v", "error", "-i", served, "-t", "3", "-c", "copy", "-y", late])
        #expect(first.wait(timeout: 30) == 0, "ffmpeg: \(first.stderr)")
        #expect(joiner.wait(timeout: 30) == 0, "ffmpeg: \(joiner.stderr)")

        // Both tracks, decodable, the sound without a gap: one AAC frame (1024 samples at
        // 48 kHz, 1920 ticks) after another.
        #expect(try Self.codecs(out) == ["h264", "aac"])
        #expect(try TSListenerTests.decodeErrors(out) == "")
        let steps = try Self.audioSteps(out).steps
        #expect(steps.count > 200 && steps.allSatisfy { $0 == 1920 }, "audio PTS steps: \(Set(steps))")
        // The beeps are the 1 kHz tone.
        let pcm = try PCMAnalysis.decode(URL(fileURLWithPath: out))
        let onsets = pcm.onsets(threshold: 0.1)
        #expect(onsets.count >= 4, "beeps at samples \(onsets)")
        for onset in onsets where onset + 4000 <= pcm.samples.count {
            let f = pcm.frequency(in: onset + 240..<onset + 4000)
            #expect(abs(f - 1000) < 20, "a beep at \(f) Hz")
        }
        // Each beep with its flash, as the producer's own TS readers get them.
        let flashes = try AVSyncAnalysis.flashes(out)
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: try AVSyncAnalysis.beeps(out))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= 20 }, "A/V offsets (ms): \(offsets)")

        // The late joiner starts at an IDR that decodes at once, with sound from there on.
        let video = try TSListenerTests.videoPackets(late)
        #expect(video.first?.key == true && video.count >= 60, "\(video.count) pictures")
        #expect(try TSListenerTests.decodeErrors(late) == "")
        let lateAudio = try Self.audioSteps(late)
        #expect(lateAudio.steps.count > 100 && lateAudio.steps.allSatisfy { $0 == 1920 }, "late joiner's audio PTS steps: \(Set(lateAudio.steps))")
        if let a = lateAudio.first, let v = video.first?.pts { #expect(abs(a - v) < 45_000, "audio from \(a), video from \(v)") }

        // The Annex-B listener says once that it carries the video only.
        relay.signal(SIGTERM)
        #expect(relay.wait() == 0)
        let log = relay.stderr
        #expect(log.components(separatedBy: "raw H.264 carries video only").count == 2, "\(log)")
    }

    @Test func aRelayOfAFileWithSoundServesBothTracks() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.mp4").path
        let make = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi",
                                              "-i", "sine=frequency=1000:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast",
                                              "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-y", input])
        #expect(make.status == 0, "ffmpeg: \(make.stderr)")
        let relay = try Background(Run.nalcast, ["consume", "--from", input, "--listen", "ts:tcp://127.0.0.1:0"])
        defer { relay.signal(SIGTERM); relay.wait() }
        #expect(relay.waitFor("(MPEG-TS)"), "\(relay.stderr)")
        let served = try Self.tsAddress(relay)
        let out = dir.appendingPathComponent("relayed.ts").path
        // The relay paces the file (--realtime) and ends with it: the reader gets the rest.
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", served, "-c", "copy", "-y", out], timeout: 30)
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        #expect(relay.wait() == 0, "\(relay.stderr)")
        #expect(try Self.codecs(out) == ["h264", "aac"])
        #expect(try TSListenerTests.decodeErrors(out) == "")
        let audio = try Self.audioSteps(out)
        #expect(audio.steps.count > 50 && audio.steps.allSatisfy { $0 == 1920 }, "audio PTS steps: \(Set(audio.steps))")
        let pcm = try PCMAnalysis.decode(URL(fileURLWithPath: out))
        let range = try #require(pcm.soundRange(threshold: 0.05))
        #expect(abs(pcm.frequency(in: range) - 1000) < 20)
    }

    @Test func theSoundStaysWithThePicturesAcrossASourceRestart() throws {
        // The producer stops and a new one starts on the same socket: the relay reconnects,
        // its readers stay, and the second source's sound goes on the time line where its
        // pictures go (nalcast produce's times begin again at 0 each run).
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sock = dir.appendingPathComponent("p.sock").path
        let produce = ["produce", "--source", "testsrc", "--flash", "--size", "320x240", "--audio", "tone", "--preset", "ultrafast",
                       "--listen", "ts:unix:\(sock)"]
        // The first source runs until the reader has about 2 s of it (a loaded machine may take
        // seconds to start FFmpeg), then stops; the second runs 3 s.
        let first = try Background(Run.nalcast, produce + ["--duration", "60s"])
        defer { first.signal(SIGTERM); first.wait() }
        #expect(first.waitFor("capturing"), "\(first.stderr)")
        let relay = try Background(Run.nalcast, ["consume", "--from", "ts:unix:\(sock)", "--listen", "ts:tcp://127.0.0.1:0", "--reconnect-timeout", "2s"])
        defer { relay.signal(SIGTERM); relay.wait() }
        #expect(relay.waitFor("relaying the input's audio"), "\(relay.stderr)")
        let out = dir.appendingPathComponent("relayed.ts").path
        let reader = try Background("ffmpeg", ["-nostdin", "-v", "error", "-i", try Self.tsAddress(relay), "-c", "copy", "-y", out])
        let deadline = Moment.now.addingTimeInterval(30)
        func written() -> Int { ((try? FileManager.default.attributesOfItem(atPath: out))?[.size] as? Int) ?? 0 }
        while written() < 100_000 && Moment.now < deadline { usleep(50_000) }
        first.signal(SIGINT)
        #expect(first.wait(timeout: 20) == 0)
        let second = try Background(Run.nalcast, produce + ["--duration", "3s"])
        defer { second.signal(SIGTERM); second.wait() }
        #expect(second.wait(timeout: 20) == 0, "\(second.stderr)")
        // The relay gives the source up 2 s later and ends its readers' stream.
        #expect(reader.wait(timeout: 20) == 0, "ffmpeg: \(reader.stderr)")
        relay.wait()
        #expect(relay.stderr.components(separatedBy: "opened ts:unix:").count == 3, "\(relay.stderr)")
        // The same track both times: nothing said, nothing left out for it.
        #expect(!relay.stderr.contains("audio changed"), "\(relay.stderr)")

        #expect(try Self.codecs(out) == ["h264", "aac"])
        #expect(try TSListenerTests.decodeErrors(out) == "")
        // Sound from both sources, in time order: one AAC frame after another but for one
        // step forward where the first source's sound ended and the second's began.
        let audio = try Self.audioSteps(out).steps
        #expect(audio.count > 200 && audio.allSatisfy { $0 > 0 }, "audio PTS steps: \(Set(audio))")
        #expect(audio.filter { $0 != 1920 }.count <= 1, "audio PTS steps: \(Set(audio))")
        // The analysis decodes with aresample=async, which fills a gap in the audio's
        // timestamps with silence only from 100 ms on: a shorter one where the sources meet
        // moves the later samples that much earlier, so the second source's pairs measure
        // early by it though their timestamps are in step.
        let junction = audio.first { $0 != 1920 } ?? 1920
        let unfilled = junction - 1920 < 9000 ? Double(junction - 1920) / 90 : 0
        // Each beep with its flash, the second source's too. One pair may be off where the
        // two sources meet: the second source's stream starts at its first IDR (sound before
        // that picture is left out, and counted), which can cut a beep whose flash went
        // before it; the cut beep then starts at the IDR, next to no flash of its own.
        let flashes = try AVSyncAnalysis.flashes(out)
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: try AVSyncAnalysis.beeps(out))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.filter { abs($0) > 20 && abs($0 + unfilled) > 20 }.count <= 1, "A/V offsets (ms): \(offsets), unfilled gap \(unfilled) ms")
    }
}
