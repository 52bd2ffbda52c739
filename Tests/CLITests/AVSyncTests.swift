import Foundation
import Testing
import TestSupport

/// Sound and picture in step: `produce --source testsrc --audio tone` flashes the frame of
/// each whole second white and beeps at the same instant (1 kHz, 100 ms, -6 dBFS), so the
/// offset between the two in what a reader gets is the A/V offset of the stream's
/// timestamps. FFmpeg decodes the recording: the video's mean luma per frame gives the
/// flashes, the audio's samples the beep onsets. A timestamp check, not a speed one: the
/// figures over 10 minutes and against FFmpeg's own capture are bench/'s avsync.
@Suite struct AVSyncTests {
    /// Presentation times (s) of the first frame of each run of white frames.
    static func flashes(_ path: String) throws -> [Double] {
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-copyts", "-i", path, "-map", "0:v:0", "-an", "-vf",
                                           "scale=64:-2,signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        var frames: [(Double, Double)] = []
        var time: Double?
        for line in r.text.split(separator: "\n") {
            if let range = line.range(of: "pts_time:") {
                time = Double(line[range.upperBound...].prefix { !$0.isWhitespace })
            } else if let range = line.range(of: "YAVG="), let t = time, let y = Double(line[range.upperBound...]) {
                frames.append((t, y))
                time = nil
            }
        }
        var out: [Double] = []
        var bright = false
        for (t, y) in frames {
            // The pattern's mean luma is under 120, the flash's 235.
            if y > 200 && !bright { out.append(t) }
            bright = y > 200
        }
        return out
    }

    /// Times (s, on the same time line as the video) of each beep's first sample at half of
    /// its peak, after at least half a second of quiet. Gaps in the audio's timestamps are
    /// filled with silence (aresample=async), so a sample's place is its time. A beep that
    /// was already sounding when the audio begins (the first packet starts after the
    /// video's first picture, up to a packet later, and may cut a beep) has no onset to
    /// measure and is left out.
    static func beeps(_ path: String) throws -> [Double] {
        let probe = try Run.program("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time",
                                                "-read_intervals", "%+#1", "-of", "csv=p=0", path])
        let audioStart = Double(probe.text.split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "") } ?? "") ?? 0
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-copyts", "-i", path, "-map", "0:a:0", "-vn",
                                           "-af", "aresample=async=1:first_pts=0", "-ac", "1", "-ar", "48000", "-f", "s16le", "-"])
        #expect(r.status == 0, "ffmpeg: \(r.stderr)")
        let samples: [Int16] = r.stdout.withUnsafeBytes { raw in
            (0..<(raw.count / 2)).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
        }
        var out: [Double] = []
        var lastLoud = -48_000
        var i = 0
        while i < samples.count {
            let level = abs(Int(samples[i]))
            if level >= 4000 {
                if i - lastLoud > 24_000 {
                    let peak = samples[i..<min(samples.count, i + 2400)].map { abs(Int($0)) }.max() ?? level
                    let back = max(0, i - 1440)
                    let onset = (back..<min(samples.count, i + 2400)).first { abs(Int(samples[$0])) * 2 >= peak } ?? i
                    let time = Double(onset) / 48_000
                    if time > audioStart + 0.025 { out.append(time) }
                }
                lastLoud = i
            }
            i += 1
        }
        return out
    }

    /// Each beep paired with the flash within half a second of it: beep minus flash, ms.
    static func offsets(flashes: [Double], beeps: [Double]) -> [Double] {
        beeps.compactMap { b in
            flashes.min { abs($0 - b) < abs($1 - b) }.flatMap { abs(b - $0) < 0.5 ? (b - $0) * 1000 : nil }
        }
    }

    @Test func toneAndFlashAreInStepInAContainerFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("sync.mkv").path
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--size", "320x240", "--audio", "tone", "--preset", "ultrafast",
                                 "--duration", "5s", "-o", out, "-q"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let flashes = try Self.flashes(out)
        let beeps = try Self.beeps(out)
        // 5 s hold 4 or 5 whole seconds: each a flash and a beep. At the ends one may lack
        // its twin (the sound starts with the first picture and may end a packet before
        // the last), never more.
        #expect(flashes.count >= 4, "flashes at \(flashes)")
        let offsets = Self.offsets(flashes: flashes, beeps: beeps)
        #expect(offsets.count >= 4 && max(flashes.count, beeps.count) - offsets.count <= 1, "beeps at \(beeps), flashes at \(flashes)")
        #expect(offsets.allSatisfy { abs($0) <= 20 }, "A/V offsets (ms): \(offsets)")

        // The measurement sees an offset when there is one: the sound moved 100 ms later.
        let shifted = dir.appendingPathComponent("shifted.mkv").path
        let remux = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-itsoffset", "0.1", "-i", out,
                                               "-map", "0:v", "-map", "1:a", "-c", "copy", "-y", shifted])
        #expect(remux.status == 0, "\(remux.stderr)")
        let late = Self.offsets(flashes: try Self.flashes(shifted), beeps: try Self.beeps(shifted))
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
        let flashes = try Self.flashes(out)
        let offsets = Self.offsets(flashes: flashes, beeps: try Self.beeps(out))
        #expect(offsets.count >= 4, "flashes at \(flashes), offsets \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= 20 }, "A/V offsets (ms): \(offsets)")
    }
}
