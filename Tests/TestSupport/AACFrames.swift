import Foundation

/// AAC-LC made by FFmpeg for the tests that carry audio: a tone encoded to ADTS, split into
/// the raw frames nalcast's `AudioPacket`s hold (headers taken off) and the
/// AudioSpecificConfig a muxer declares.
public struct AACFrames: Sendable {
    /// Raw AAC frames, 1024 samples each.
    public let frames: [[UInt8]]
    /// The AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) of the first ADTS header.
    public let config: [UInt8]

    /// `seconds` of a `frequency` Hz sine at 48 kHz stereo, 128 kb/s, encoded in `dir`.
    public static func tone(seconds: Double, frequency: Int = 440, in dir: URL) throws -> AACFrames {
        let path = dir.appendingPathComponent("tone-\(UUID().uuidString).aac").path
        let r = try Tool.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=48000:duration=\(seconds)",
                              "-ac", "2", "-c:a", "aac", "-b:a", "128k", "-f", "adts", "-y", path])
        guard r.status == 0 else { throw MediaServerError("ffmpeg: \(r.stderr)") }
        defer { try? FileManager.default.removeItem(atPath: path) }
        return split(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// Splits an ADTS stream at its headers.
    public static func split(_ bytes: [UInt8]) -> AACFrames {
        var frames: [[UInt8]] = []
        var config: [UInt8] = []
        var at = 0
        while at + 7 <= bytes.count, bytes[at] == 0xFF, bytes[at + 1] & 0xF0 == 0xF0 {
            let header = bytes[at + 1] & 1 == 1 ? 7 : 9  // protection_absent: no CRC
            let length = (Int(bytes[at + 3] & 3) << 11) | (Int(bytes[at + 4]) << 3) | Int(bytes[at + 5] >> 5)
            guard length > header, at + length <= bytes.count else { break }
            if config.isEmpty {
                let objectType = (bytes[at + 2] >> 6) + 1
                let rateIndex = (bytes[at + 2] >> 2) & 0xF
                let channels = ((bytes[at + 2] & 1) << 2) | (bytes[at + 3] >> 6)
                config = [(objectType << 3) | (rateIndex >> 1), ((rateIndex & 1) << 7) | (channels << 3)]
            }
            frames.append(Array(bytes[(at + header)..<(at + length)]))
            at += length
        }
        return AACFrames(frames: frames, config: config)
    }
}
