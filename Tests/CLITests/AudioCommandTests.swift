import Foundation
import Testing
import TestSupport

/// `produce --audio` through the binary: the exit codes of a missing server or file, a
/// PulseAudio server that dies mid-run while video goes on, and the sound of a recording
/// that stops with its pictures.
@Suite struct AudioCommandTests {
    @Test("--audio monitor without a sound server: one line and exit 69")
    func noServer() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var env = ProcessInfo.processInfo.environment
        env["PULSE_SERVER"] = "unix:" + dir.appendingPathComponent("none").path
        let r = try Run.nalcast(["produce", "--size", "320x240", "--audio", "monitor", "-o", dir.appendingPathComponent("out.h264").path, "--frames", "5"],
                                environment: env, timeout: 30)
        #expect(r.status == 69)
        #expect(r.stderr == "nalcast: --audio monitor: no PulseAudio server: Connection refused\n", "\(r.stderr)")
    }

    @Test("--audio wav: a missing file exits 66, a file that is not a WAV 65, an unknown source or a second reader of stdin 64")
    func badSources() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.txt")
        try Data("not audio\n".utf8).write(to: text)
        let out = dir.appendingPathComponent("out.h264").path
        let missing = try Run.nalcast(["produce", "--audio", "wav:" + dir.appendingPathComponent("none.wav").path, "-o", out, "--frames", "5"], timeout: 30)
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("nalcast: --audio wav:") && missing.stderr.hasSuffix(": No such file or directory\n"), "\(missing.stderr)")
        let notWAV = try Run.nalcast(["produce", "--audio", "wav:" + text.path, "-o", out, "--frames", "5"], timeout: 30)
        #expect(notWAV.status == 65, "\(notWAV.stderr)")
        let unknown = try Run.nalcast(["produce", "--audio", "speakers", "--dry-run"], timeout: 30)
        #expect(unknown.status == 64)
        let twoStdin = try Run.nalcast(["produce", "--source", "y4m:-", "--audio", "wav:-", "--dry-run"], timeout: 30)
        #expect(twoStdin.status == 64 && twoStdin.stderr == "nalcast: --audio wav:-: stdin is read by --source already\n", "\(twoStdin.stderr)")
        let dry = try Run.nalcast(["produce", "--audio", "tone", "--audio", "mic", "--audio-bitrate", "96k", "--dry-run"], timeout: 30)
        #expect(dry.text.contains("  audio: tone + mic, AAC-LC 48000 Hz stereo 96k\n"), "\(dry.text)")
    }

    @Test("a recording's sound stops with its pictures while a reader that takes nothing holds the end for its drain")
    func soundStopsWithThePictures() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.mkv")
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--fps", "30", "--frames", "90", "--preset", "ultrafast",
                                                    "--audio", "tone", "-o", out.path, "--listen", "tcp://127.0.0.1:0"])
        let endpoint = try #require(producer.servingEndpoint(), "producer did not start: \(producer.stderr)")
        // Reads nothing: the server gives it its drain time (2 s) at the end, then closes it.
        let stalled = try StreamReaderClient(endpoint, receiveBuffer: 4096, startPaused: true)
        #expect(producer.wait(timeout: 30) == 0, "\(producer.stderr)")
        _ = stalled.finish()
        let audio = try AudioCarryTests.packets(out.path, "a"), video = try AudioCarryTests.packets(out.path, "v")
        #expect(video.count == 90, "\(video.count) pictures")
        // The audio thread encodes by the clock through the drain: before the sound was stopped
        // where the pictures did as the capture ended, it went on for the drain's 2 s and more.
        let sound = AudioCarryTests.span(audio), pictures = AudioCarryTests.span(video)
        #expect(abs(sound - pictures) <= 0.1, "\(sound) s of sound, \(pictures) s of pictures")
    }

    @Test("the PulseAudio server killed mid-run: the loss is a line and an event, and video goes on to its end")
    func serverKilled() throws {
        let server = try PulseAudioServer()
        let dir = server.directory
        let out = dir.appendingPathComponent("out.h264")
        let events = dir.appendingPathComponent("events.jsonl")
        let produce = ServerProcess(name: "nalcast", logURL: dir.appendingPathComponent("produce.log"))
        try produce.start(Run.nalcast, ["produce", "--size", "320x240", "--audio", "monitor", "--audio", "tone", "-o", out.path,
                                        "--duration", "4s", "--events", events.path], environment: server.environment)
        #expect(produce.waitForLog("capturing test pattern", timeout: 20), "\(produce.logTail())")
        Thread.sleep(forTimeInterval: 1.5)
        server.kill()
        #expect(produce.waitForExit(timeout: 30) == 0, "\(produce.logTail())")
        let log = produce.log
        #expect(log.contains("nalcast: audio monitor: lost ("), "\(log)")
        #expect(log.contains("nalcast: audio: "), "the closing line: \(log)")
        let jsonl = try String(contentsOf: events, encoding: .utf8)
        #expect(jsonl.contains("\"event\":\"audio-lost\""), "\(jsonl)")
        let probe = try Tool.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries", "stream=nb_read_frames",
                                  "-of", "csv=p=0", out.path])
        // Video went on to its end: 4 s of slots, each encoded or counted (a loaded machine
        // may skip one late), and every encoded frame is in the file.
        let finished = try #require(jsonl.split(separator: "\n").first { $0.contains("\"event\":\"finished\"") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(finished.utf8)) as? [String: Any])
        let encoded = try #require(object["framesEncoded"] as? Int)
        let dropped = try #require(object["framesDropped"] as? Int)
        #expect(encoded + dropped == 120, "\(finished)")
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(encoded), "frames: \(probe.stdout) \(probe.stderr)")
    }
}
