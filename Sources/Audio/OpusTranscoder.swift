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
    /// Decoded samples waiting for a whole Opus frame (interleaved stereo).
    private var pending: [Float] = []
    /// The media time of the encoder's sample 0 (moved at a jump), and the samples (48 kHz)
    /// handed to the encoder.
    private var origin: MediaTime?
    private var position: Int64 = 0
    /// Where the next AAC packet should begin; one further off starts the time line again.
    private var expected: MediaTime?
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
        if let expected, abs(aac.mediaTime.ticks - expected.ticks) > MediaTime.ticksPerSecond / 10 {
            // A gap or a jump (a relay's source came back): the time line starts again here.
            pending.removeAll(keepingCapacity: true)
            origin = nil
        }
        if origin == nil {
            // The encoder's sample count goes on (what it still holds keeps its place, just
            // before the new sound): the time line is moved under it, not started at 0, or a
            // packet it held would come out as far ahead as the time before the jump lasted.
            origin = MediaTime(ticks: aac.mediaTime.ticks - position * MediaTime.ticksPerSecond / 48_000)
        }
        expected = MediaTime(ticks: aac.mediaTime.ticks + decoderPacketTicks)
        do {
            try decoder.decode(aac.data) { samples in pending.append(contentsOf: samples) }
        } catch {
            refusedPackets += 1
        }
        var out: [AudioPacket] = []
        let frameSamples = format.samplesPerPacket
        while pending.count >= frameSamples * 2 {
            encode(count: frameSamples, captureTimeNs: aac.captureTimeNs, into: &out)
        }
        return out
    }

    private var decoderPacketTicks: Int64 { 1024 * MediaTime.ticksPerSecond / 48_000 }

    private func encode(count: Int, captureTimeNs: UInt64, into out: inout [AudioPacket]) {
        guard let origin else { return }
        let (frame, packet) = (encoder.frame, encoder.packet)
        _ = CMedia_av_frame_make_writable(frame)
        if let plane = frame.pointee.data.0 {
            pending.withUnsafeBufferPointer { source in
                UnsafeMutableRawPointer(plane).copyMemory(from: source.baseAddress!, byteCount: count * 2 * MemoryLayout<Float>.size)
            }
        }
        pending.removeFirst(count * 2)
        frame.pointee.pts = position
        position += Int64(count)
        guard CMedia_avcodec_send_frame(encoder.context, frame) >= 0 else { return }
        while CMedia_avcodec_receive_packet(encoder.context, packet) >= 0 {
            let ticks = origin.ticks + packet.pointee.pts * MediaTime.ticksPerSecond / 48_000
            out.append(AudioPacket(data: Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))),
                                   mediaTime: MediaTime(ticks: ticks), captureTimeNs: captureTimeNs))
            CMedia_av_packet_unref(packet)
        }
    }
}
