import Foundation

/// Where the flashes and the beeps of `produce --source testsrc --audio tone` (the frame of
/// each whole second white; a 1 kHz, 100 ms, -6 dBFS beep at the same instant) are in a
/// recording, as FFmpeg decodes it: the video's mean luma per frame gives the flashes, the
/// audio's samples the beep onsets, and beep minus flash is the A/V offset of the stream's
/// timestamps. Any container FFmpeg reads; both on the file's own time line (`-copyts`).
public enum AVSyncAnalysis {
    /// Presentation times (s) of the first frame of each run of white frames.
    public static func flashes(_ path: String) throws -> [Double] {
        let r = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-copyts", "-i", path, "-map", "0:v:0", "-an", "-vf",
                              "scale=64:-2,signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"])
        guard r.status == 0 else { throw MediaServerError("ffmpeg could not decode the video of \(path): \(r.stderr)") }
        var frames: [(Double, Double)] = []
        var time: Double?
        for line in r.stdout.split(separator: "\n") {
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
    public static func beeps(_ path: String) throws -> [Double] {
        let audioStart = try firstPacketTime(path, stream: "a:0").time ?? 0
        let samples = try monoSamples(path)
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

    /// Seconds from a recording's first picture to its first sound (the first 5 ms whose RMS
    /// is above `threshold`, -34 dBFS by default), both on the file's time line: a sound that
    /// plays all along is heard from 0 (or from as close to it as the first audio packet).
    /// nil when nothing is heard.
    public static func soundStart(_ path: String, threshold: Double = 0.02) throws -> Double? {
        let video = try firstPacketTime(path, stream: "v:0")
        guard let videoStart = video.time else { throw MediaServerError("no picture in \(path): \(video.stderr)") }
        let samples = try monoSamples(path)
        let window = 240
        for start in stride(from: 0, to: samples.count - window, by: window) {
            let power = samples[start..<start + window].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window)
            if power.squareRoot() / 32768 > threshold { return Double(start) / 48_000 - videoStart }
        }
        return nil
    }

    /// The time of the first packet of `stream` (`a:0`, `v:0`) on the file's time line, and
    /// what ffprobe said.
    static func firstPacketTime(_ path: String, stream: String) throws -> (time: Double?, stderr: String) {
        let probe = try Tool.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time",
                                  "-read_intervals", "%+#1", "-of", "csv=p=0", path])
        let firstLine = probe.stdout.split(separator: "\n").first.map(String.init) ?? ""
        return (Double(firstLine.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "")), probe.stderr)
    }

    /// The first audio track as 48 kHz mono samples from the file's time 0, gaps filled with
    /// silence (aresample=async): a sample's place is its time.
    static func monoSamples(_ path: String) throws -> [Int16] {
        let raw = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-audio-\(UUID().uuidString).s16")
        defer { try? FileManager.default.removeItem(at: raw) }
        let r = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-copyts", "-i", path, "-map", "0:a:0", "-vn",
                              "-af", "aresample=async=1:first_pts=0", "-ac", "1", "-ar", "48000", "-f", "s16le", raw.path])
        guard r.status == 0 else { throw MediaServerError("ffmpeg could not decode the audio of \(path): \(r.stderr)") }
        return try Data(contentsOf: raw).withUnsafeBytes { raw in
            (0..<(raw.count / 2)).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
        }
    }

    /// Each beep paired with the flash within half a second of it: beep minus flash, ms.
    public static func offsets(flashes: [Double], beeps: [Double]) -> [Double] {
        beeps.compactMap { b in
            flashes.min { abs($0 - b) < abs($1 - b) }.flatMap { abs(b - $0) < 0.5 ? (b - $0) * 1000 : nil }
        }
    }
}
