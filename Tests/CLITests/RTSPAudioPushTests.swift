import Foundation
import Testing
import TestSupport

/// Sound through RTSP pushes: `produce --audio` and `consume` of a source with AAC, each
/// `--forward rtsp://` to GStreamer's RTSP server (record mode, H.264 and MPEG4-GENERIC AAC
/// depayloaded and written to one MPEG-TS file with the times RTP and RTCP gave them).
/// FFmpeg reads the recording: both tracks, the pictures sent, the audio a clean run of
/// packets as long as the video, and the flash/beep pairs of `--audio tone` in step.
@Suite struct RTSPAudioPushTests {
    static let packet = 1024.0 / 48_000

    /// The audio packets' times follow each other with no hole (more than half a packet
    /// missing) and no overlap (GStreamer's jitter buffer retimes packets by a few ms as it
    /// follows their arrival, more on a loaded machine), and the audio decodes cleanly to as
    /// many samples as its packets hold. Returns the decoded sound.
    static func checkAudioRun(_ recording: URL, _ name: String) throws -> PCMAnalysis {
        let audio = try AudioCarryTests.packets(recording.path, "a")
        #expect(audio.count > 100, "\(name): \(audio.count) audio packets")
        let steps = zip(audio.dropFirst(), audio).map { $0.pts - $1.pts }
        let odd = steps.filter { $0 >= 1.5 * packet || $0 <= 0.5 * packet }
        #expect(odd.isEmpty, "\(name): audio packets \(odd.count) times not one packet apart: \(odd.prefix(8))")
        let decoded = try AudioCarryTests.decodedSamples(["-i", recording.path])
        #expect(decoded.errors == "", "\(name): \(decoded.errors)")
        #expect(abs(decoded.samples - audio.count * 1024) <= 1024, "\(name): \(decoded.samples) samples for \(audio.count) packets")
        return try PCMAnalysis.decode(recording)
    }

    /// The recording's audio lasts as long as its pictures (its packets' worth of samples
    /// against the pictures at `fps`, not their times, which the jitter buffer retimes;
    /// within 0.1 s: the sound before the first picture is left out, and the last packet
    /// stays in libavformat), and starts with them. A live source's pictures cover the slots
    /// of the frames the producer dropped too (`droppedFrames`, an encoder late on a loaded
    /// machine: the next frame is the one due then), and so does its sound.
    static func checkSpans(_ recording: URL, _ name: String, fps: Double, droppedFrames: Int = 0) throws {
        let audio = try AudioCarryTests.packets(recording.path, "a")
        let video = try AudioCarryTests.packets(recording.path, "v")
        guard let firstSound = audio.map(\.pts).min(), let firstPicture = video.map(\.pts).min() else {
            Issue.record("\(name): no packets")
            return
        }
        let sound = Double(audio.count) * packet, pictures = Double(video.count + droppedFrames) / fps
        #expect(abs(sound - pictures) <= 0.1, "\(name): \(sound) s of sound, \(pictures) s of pictures (\(droppedFrames) dropped)")
        #expect(abs(firstSound - firstPicture) <= tolerance / 1000, "\(name): sound from \(firstSound) s, pictures from \(firstPicture) s")
    }

    /// How far a beep may be from its flash, ms. An RTP receiver times what comes by when it
    /// comes (GStreamer's jitter buffer follows the arrival times), and FFmpeg's AAC
    /// packetizer sends a frame when the next one is given to it: here the sound is 35 to 60
    /// ms late on a quiet machine, up to 82 under the whole suite's load, the first pair
    /// within a few ms; sound late by less than 125 ms goes unnoticed (ITU-R BT.1359). Sent as
    /// each track was ready, without the push's wait for the audio, it was 150 to 260 ms late.
    static let tolerance = 100.0

    /// The one recording of a push of 150 pictures, once the server has seen it end, with
    /// both tracks and every picture sent: RTP over TCP loses nothing, and the server writes
    /// what its jitter buffer holds (200 ms, the last pictures) before it says the publish
    /// ended (an EOS at the teardown, `rtsp-record-server.py`).
    static func recording(_ server: RTSPServer, _ r: Run.Result) throws -> URL? {
        #expect(r.status == 0, "\(r.stderr)")
        #expect(server.waitForPublishEnd(timeout: 30), "\(server.log)")
        server.stop()
        guard let recording = server.recordings.last else {
            Issue.record("no recording\n\(server.log)")
            return nil
        }
        #expect(server.recordings.count == 1, "\(server.recordings)")
        #expect(try AudioCarryTests.codecs(recording.path) == ["h264", "aac"], "\(server.log)")
        let frames = try AudioCarryTests.packets(recording.path, "v").count
        #expect(frames == 150, "\(frames) of 150 pictures\n\(r.stderr)\n\(server.log)")
        // FFmpeg's RTP packetizer for AAC sends a frame when it is given the next one and frees
        // the one it holds at the end: the push says so.
        #expect(r.stderr.contains("forward to \(server.url): 1 audio packet dropped"), "\(r.stderr)")
        return recording
    }

    @Test func produceWithToneIsRecordedWithItsSoundInStep() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let server = try RTSPServer(audio: true)
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--flash", "--size", "320x240", "--fps", "30", "--frames", "150",
                                 "--preset", "ultrafast", "--audio", "tone", "--forward", server.url, "--events", events.path], timeout: 60)
        guard let recording = try Self.recording(server, r) else { return }
        let finished = eventLines(events).first { $0["event"] as? String == "finished" } ?? [:]
        let dropped = try #require(finished["framesDropped"] as? Int, "no finished event: \(eventLines(events))")
        let sound = try Self.checkAudioRun(recording, "produce")
        // Each beep is the 1 kHz tone (measured from 10 to 90 ms into it).
        let beeps = sound.onsets(threshold: 0.05)
        #expect(beeps.count >= 4, "beeps at samples \(beeps)")
        for onset in beeps where onset + 4320 <= sound.samples.count {
            let hz = sound.frequency(in: onset + 480..<onset + 4320)
            #expect(abs(hz - 1000) < 5, "a beep at sample \(onset) is \(hz) Hz")
        }
        try Self.checkSpans(recording, "produce", fps: 30, droppedFrames: dropped)
        // 5 s: 4 or 5 flash/beep pairs, each in step.
        let flashes = try AVSyncAnalysis.flashes(recording.path)
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: try AVSyncAnalysis.beeps(recording.path))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= Self.tolerance }, "A/V offsets (ms): \(offsets)")
    }

    @Test func consumeOfATransportStreamForwardsItsSound() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A flash/beep source of our own, recorded into MPEG-TS, then pushed on by consume.
        let source = dir.appendingPathComponent("src.ts")
        let made = try Run.nalcast(["produce", "--source", "testsrc", "--flash", "--size", "320x240", "--fps", "25", "--frames", "150",
                                    "--keyint", "1s", "--preset", "ultrafast", "--audio", "tone", "-o", source.path, "-q"],
                                   timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let sourceAudio = try AudioCarryTests.packets(source.path, "a")
        let server = try RTSPServer(audio: true)
        let r = try Run.nalcast(["consume", "--from", source.path, "--realtime", "--forward", server.url], timeout: 60)
        guard let recording = try Self.recording(server, r) else { return }
        let audio = try AudioCarryTests.packets(recording.path, "a")
        // All the source's sound (it starts with the first picture) but its last packet, which
        // libavformat kept (`recording`).
        #expect(audio.count == sourceAudio.count - 1, "\(audio.count) audio packets of \(sourceAudio.count)")
        _ = try Self.checkAudioRun(recording, "consume")
        try Self.checkSpans(recording, "consume", fps: 25)
        let flashes = try AVSyncAnalysis.flashes(recording.path)
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: try AVSyncAnalysis.beeps(recording.path))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= Self.tolerance }, "A/V offsets (ms): \(offsets)")
    }
}
