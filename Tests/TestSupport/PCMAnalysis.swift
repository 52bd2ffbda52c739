import Foundation

/// Decoded audio for the sound tests: a file decoded by FFmpeg to 48 kHz float, and the
/// measures the tests check (frequency by zero crossings, level, where the sound is).
public struct PCMAnalysis: Sendable {
    /// The first channel's samples.
    public let samples: [Float]
    public let rate: Int

    /// Decodes `url` (any format FFmpeg reads) to mono float at `rate`; the first channel.
    public static func decode(_ url: URL, rate: Int = 48_000) throws -> PCMAnalysis {
        let raw = url.deletingPathExtension().appendingPathExtension("f32")
        let result = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", url.path, "-af", "pan=mono|c0=c0",
                                   "-f", "f32le", "-ar", String(rate), raw.path])
        guard result.status == 0 else { throw MediaServerError("ffmpeg could not decode \(url.lastPathComponent): \(result.stderr)") }
        let data = try Data(contentsOf: raw)
        try? FileManager.default.removeItem(at: raw)
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return PCMAnalysis(samples: samples, rate: rate)
    }

    public init(samples: [Float], rate: Int) {
        self.samples = samples
        self.rate = rate
    }

    /// RMS of each `window`-sample block.
    public func rms(window: Int) -> [Float] {
        stride(from: 0, to: samples.count - window + 1, by: window).map { start in
            var sum: Float = 0
            for s in samples[start..<start + window] { sum += s * s }
            return (sum / Float(window)).squareRoot()
        }
    }

    /// The first and last sample where the level (1 ms RMS) is above `threshold`.
    public func soundRange(threshold: Float) -> Range<Int>? {
        let window = rate / 1000
        let levels = rms(window: window)
        guard let first = levels.firstIndex(where: { $0 > threshold }), let last = levels.lastIndex(where: { $0 > threshold }) else { return nil }
        return first * window..<(last + 1) * window
    }

    /// Starts of the stretches of sound (1 ms RMS above `threshold` after at least `gap`
    /// seconds below it), as sample indices. Sound at the very start (a stretch already
    /// under way when the recording began) is not an onset.
    public func onsets(threshold: Float, gap: Double = 0.2) -> [Int] {
        let window = rate / 1000
        var out: [Int] = []
        var quiet = 0
        for (i, level) in rms(window: window).enumerated() {
            if level > threshold {
                if quiet >= Int(gap * 1000) { out.append(i * window) }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        return out
    }

    /// The frequency in `range` by counting rising zero crossings.
    public func frequency(in range: Range<Int>) -> Double {
        var crossings: [Int] = []
        for i in range.dropFirst() where samples[i - 1] < 0 && samples[i] >= 0 { crossings.append(i) }
        guard crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) * Double(rate) / Double(crossings.last! - crossings.first!)
    }

    /// RMS over `range`.
    public func level(in range: Range<Int>) -> Float {
        var sum: Float = 0
        for s in samples[range] { sum += s * s }
        return (sum / Float(max(1, range.count))).squareRoot()
    }

    /// The largest step between two neighbouring samples in `range` (a click is a jump).
    public func largestStep(in range: Range<Int>) -> Float {
        var step: Float = 0
        for i in range.dropFirst() { step = max(step, abs(samples[i] - samples[i - 1])) }
        return step
    }

    /// A sine WAV made by FFmpeg: `frequency` Hz, `seconds`, at `rate` with `channels`.
    public static func makeSine(_ url: URL, frequency: Int, seconds: Double, rate: Int, channels: Int, codec: String = "pcm_s16le") throws {
        let result = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                   "sine=frequency=\(frequency):sample_rate=\(rate):duration=\(seconds)",
                                   "-ac", String(channels), "-c:a", codec, url.path])
        guard result.status == 0 else { throw MediaServerError("ffmpeg could not make \(url.lastPathComponent): \(result.stderr)") }
    }
}
