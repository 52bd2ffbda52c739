import CMedia
import Media

/// The sound of a stream as Opus, for WebRTC viewers (Opus is what every browser takes over
/// WebRTC; AAC what every container takes): the AAC packets `produce` encoded or `consume`
/// read are decoded, resampled to 48 kHz stereo and encoded again with libopus in 20 ms
/// packets, on the same media time line as the pictures. One transcoder serves every viewer
/// of a stream, so that the cost does not grow with them.
///
/// Used by one thread at a time.
public final class OpusTranscoder {
    /// The Opus track: 48 kHz, 2 channels, 960 samples a packet.
    public let format: AudioFormat
    private let decoder: AudioDecoder
    private let encoder: AudioEncoding
    /// The decoded samples waiting for a whole Opus frame, the time line they go on.
    private var timeline = TranscodeTimeline()
    /// AAC packets the decoder refused (counted, skipped).
    public private(set) var refusedPackets = 0

    public init(from source: AudioFormat, bitrate: Int = 96_000) throws(AudioError) {
        decoder = try AudioDecoder(source)
        encoder = try AudioEncoding("the Opus encoder (libopus through libavcodec)", unopened: .unavailable) { CMedia_open_opus(2, Int64(bitrate), &$0) }
        format = AudioFormat(codec: .opus, sampleRate: 48_000, channels: 2, bitrate: bitrate, samplesPerPacket: encoder.samplesPerFrame, extradata: [])
    }

    /// Takes one AAC packet; returns the Opus packets it completed (about one per 20 ms), each
    /// at its media time (the first may sit a few ms before the sound: libopus's look-ahead,
    /// which a WebRTC receiver plays as it comes).
    public func transcode(_ aac: AudioPacket) -> [AudioPacket] {
        timeline.place(aac.mediaTime)  // a gap or a jump (a relay's source came back) starts it again
        timeline.expect(MediaTime(ticks: aac.mediaTime.ticks + decoderPacketTicks))
        do {
            try decoder.decode(aac.data) { samples in timeline.pending.append(contentsOf: samples) }
        } catch {
            refusedPackets += 1
        }
        var out: [AudioPacket] = []
        let frameSamples = format.samplesPerPacket
        while timeline.hasFrame(frameSamples) {
            encode(count: frameSamples, captureTimeNs: aac.captureTimeNs, into: &out)
        }
        return out
    }

    private var decoderPacketTicks: Int64 { 1024 * MediaTime.ticksPerSecond / 48_000 }

    private func encode(count: Int, captureTimeNs: UInt64, into out: inout [AudioPacket]) {
        let (frame, packet) = (encoder.frame, encoder.packet)
        _ = CMedia_av_frame_make_writable(frame)
        if let plane = frame.pointee.data.0 {
            timeline.pending.withUnsafeBufferPointer { source in
                UnsafeMutableRawPointer(plane).copyMemory(from: source.baseAddress!, byteCount: count * 2 * MemoryLayout<Float>.size)
            }
        }
        frame.pointee.pts = timeline.position
        timeline.advance(count)
        guard CMedia_avcodec_send_frame(encoder.context, frame) >= 0 else { return }
        while CMedia_avcodec_receive_packet(encoder.context, packet) >= 0 {
            if let time = timeline.time(ofSample: packet.pointee.pts) {
                out.append(AudioPacket(data: Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))),
                                       mediaTime: time, captureTimeNs: captureTimeNs))
            }
            CMedia_av_packet_unref(packet)
        }
    }
}
