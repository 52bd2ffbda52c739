import Foundation
import Testing
import TestSupport

/// Sound and picture in step: `produce --source testsrc --audio tone` flashes the frame of
/// each whole second white and beeps at the same instant (1 kHz, 100 ms, -6 dBFS), so the
/// offset between the two in what a reader gets is the A/V offset of the stream's
/// timestamps. FFmpeg decodes the recording: the video's mean luma per frame gives the
/// flashes, the audio's samples the beep onsets (`AVSyncAnalysis`). A timestamp check, not a speed one: the
/// figures over 10 minutes and against FFmpeg's own capture are bench/'s avsync.
@Suite struct AVSyncTests {
    @Test func toneAndFlashAreInStepInAContainerFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("sync.mkv").path
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--size", "320x240", "--audio", "tone", "--preset", "ultrafast",
                                 "--duration", "5s", "-o", out, "-q"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let flashes = try AVSyncAnalysis.flashes(out)
        let beeps = try AVSyncAnalysis.beeps(out)
        // 5 s hold 4 or 5 whole seconds: each a flash and a beep. At the ends one may lack
        // its twin (the sound starts with the first picture and may end a packet before
        // the last), never more.
        #expect(flashes.count >= 4, "flashes at \(flashes)")
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: beeps)
        #expect(offsets.count >= 4 && max(flashes.count, beeps.count) - offsets.count <= 1, "beeps at \(beeps), flashes at \(flashes)")
        #expect(offsets.allSatisfy { abs($0) <= 20 }, "A/V offsets (ms): \(offsets)")

        // The measurement sees an offset when there is one: the sound moved 100 ms later.
        let shifted = dir.appendingPathComponent("shifted.mkv").path
        let remux = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-itsoffset", "0.1", "-i", out,
                                               "-map", "0:v", "-map", "1:a", "-c", "copy", "-y", shifted])
        #expect(remux.status == 0, "\(remux.stderr)")
        let late = AVSyncAnalysis.offsets(flashes: try AVSyncAnalysis.flashes(shifted), beeps: try AVSyncAnalysis.beeps(shifted))
        #expect(!late.isEmpty && late.allSatisfy { abs($0 - 100) <= 20 }, "offsets with the sound 100 ms late: \(late)")
    }

    @Test func toneAndFlashAreInStepForATransportStreamReader() throws {
        // The same through a ts: listener, recorded by FFmpeg as a player would read it: the
        // TS carries each picture's and each AAC frame's PTS from the producer's time line.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sock = dir.appendingPathComponent("live.sock").path
        let out = dir.appendingPathComponent("sync.ts").path
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "320x240", "--audio", "tone",
                                                    "--preset", "ultrafast", "--duration", "8s", "--listen", "ts:unix:\(sock)"])
        defer { producer.signal(SIGTERM); producer.wait() }
        #expect(producer.waitFor("capturing"), "\(producer.stderr)")
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-analyzeduration", "500000", "-i", "unix:\(sock)",
                                           "-t", "5", "-c", "copy", "-y", out], timeout: 30)
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        let flashes = try AVSyncAnalysis.flashes(out)
        let offsets = AVSyncAnalysis.offsets(flashes: flashes, beeps: try AVSyncAnalysis.beeps(out))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= 20 }, "A/V offsets (ms): \(offsets)")
    }
}
