import Media

/// A WebRTC publisher's sound as AAC, for consume's outputs (AAC is what every container and
/// the MPEG-TS listeners take; Opus what WebRTC sends): each Opus packet decoded (libavcodec's
/// opus decoder), 48 kHz stereo, encoded again with libavcodec's AAC-LC in 1024-sample frames,
/// on the media time line the Opus packets were placed on. The reverse of `OpusTranscoder`.
///
/// Used by one thread at a time.
public final class AACTranscoder {
    /// The AAC track: 48 kHz, 2 channels, its AudioSpecificConfig.
    public var format: AudioFormat { encoder.format }
    private let decoder: AudioDecoder
    private let encoder: AACEncoder
    /// Decoded samples waiting for a whole AAC frame (interleaved stereo).
    private var pending: [Float] = []
    /// The media time of the encoder's sample 0 (moved at a jump), and the samples handed to it.
    private var origin: MediaTime?
    private var position: Int64 = 0
    /// Where the next Opus packet should begin; one further off starts the time line again.
    private var expected: MediaTime?
    /// Opus packets the decoder refused (counted, skipped).
    public private(set) var refusedPackets = 0

    public init(bitrate: Int = 128_000) throws(AudioError) {
        decoder = try AudioDecoder(AudioFormat(codec: .opus, sampleRate: 48_000, channels: 2, bitrate: 0, samplesPerPacket: 960, extradata: []))
        encoder = try AACEncoder(sampleRate: 48_000, channels: 2, bitrate: bitrate)
    }

    /// Takes one Opus packet at its media time (90 kHz); returns the AAC packets it completed,
    /// each at its media time.
    public func transcode(_ opus: AudioPacket) -> [AudioPacket] {
        if let expected, abs(opus.mediaTime.ticks - expected.ticks) > MediaTime.ticksPerSecond / 10 {
            pending.removeAll(keepingCapacity: true)  // a gap or a jump: the time line starts again here
            origin = nil
        }
        if origin == nil { origin = MediaTime(ticks: opus.mediaTime.ticks - position * MediaTime.ticksPerSecond / 48_000) }
        var samples = 0
        do {
            try decoder.decode(opus.data) { decoded in
                pending.append(contentsOf: decoded)
                samples += decoded.count / 2
            }
        } catch {
            refusedPackets += 1
        }
        expected = MediaTime(ticks: opus.mediaTime.ticks + Int64(max(samples, 960)) * MediaTime.ticksPerSecond / 48_000)
        var out: [AudioPacket] = []
        let frame = encoder.format.samplesPerPacket
        while pending.count >= frame * 2 {
            encode(frame, captureTimeNs: opus.captureTimeNs, into: &out)
        }
        return out
    }

    private func encode(_ count: Int, captureTimeNs: UInt64, into out: inout [AudioPacket]) {
        guard let origin else { return }
        let at = position
        position += Int64(count)
        pending.withUnsafeBufferPointer { samples in
            try? encoder.encode(interleaved: UnsafeBufferPointer(rebasing: samples[0..<(count * 2)]), position: at) { data, pts in
                let ticks = origin.ticks + pts * MediaTime.ticksPerSecond / 48_000
                out.append(AudioPacket(data: Array(data), mediaTime: MediaTime(ticks: ticks), captureTimeNs: captureTimeNs))
            }
        }
        pending.removeFirst(count * 2)
    }
}
