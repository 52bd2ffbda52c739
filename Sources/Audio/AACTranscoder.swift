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
    /// The decoded samples waiting for a whole AAC frame, the time line they go on.
    private var timeline = TranscodeTimeline()
    /// Opus packets the decoder refused (counted, skipped).
    public private(set) var refusedPackets = 0

    public init(bitrate: Int = 128_000) throws(AudioError) {
        decoder = try AudioDecoder(AudioFormat(codec: .opus, sampleRate: 48_000, channels: 2, bitrate: 0, samplesPerPacket: 960, extradata: []))
        encoder = try AACEncoder(sampleRate: 48_000, channels: 2, bitrate: bitrate)
    }

    /// Takes one Opus packet at its media time (90 kHz); returns the AAC packets it completed,
    /// each at its media time.
    public func transcode(_ opus: AudioPacket) -> [AudioPacket] {
        timeline.place(opus.mediaTime)
        var samples = 0
        do {
            try decoder.decode(opus.data) { decoded in
                timeline.pending.append(contentsOf: decoded)
                samples += decoded.count / 2
            }
        } catch {
            refusedPackets += 1
        }
        timeline.expect(MediaTime(ticks: opus.mediaTime.ticks + Int64(max(samples, 960)) * MediaTime.ticksPerSecond / 48_000))
        var out: [AudioPacket] = []
        let frame = encoder.format.samplesPerPacket
        while timeline.hasFrame(frame) {
            encode(frame, captureTimeNs: opus.captureTimeNs, into: &out)
        }
        return out
    }

    private func encode(_ count: Int, captureTimeNs: UInt64, into out: inout [AudioPacket]) {
        timeline.pending.withUnsafeBufferPointer { samples in
            try? encoder.encode(interleaved: UnsafeBufferPointer(rebasing: samples[0..<(count * 2)]), position: timeline.position) { data, pts in
                guard let time = timeline.time(ofSample: pts) else { return }
                out.append(AudioPacket(data: Array(data), mediaTime: time, captureTimeNs: captureTimeNs))
            }
        }
        timeline.advance(count)
    }
}
