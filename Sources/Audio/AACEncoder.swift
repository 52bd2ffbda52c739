import CMedia
import Media
import Output

/// libavcodec's native AAC-LC encoder: 1024-sample planar float frames in, raw AAC packets
/// (no ADTS) out, the AudioSpecificConfig as the format's extradata.
///
/// Used by one thread (the audio thread) only.
final class AACEncoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    let format: AudioFormat

    init(sampleRate: Int, channels: Int, bitrate: Int) throws(AudioError) {
        var error: Int32 = 0
        guard let context = CMedia_open_aac(Int32(sampleRate), Int32(channels), Int64(bitrate), &error) else {
            throw AudioError(.software, "the AAC encoder: \(AudioLibraries.averror(error))")
        }
        self.context = context
        let samples = Int(context.pointee.frame_size)
        guard samples > 0, let frame = CMedia_audio_frame(context, Int32(samples)), let packet = CMedia_av_packet_alloc() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = context
            CMedia_avcodec_free_context(&c)
            throw AudioError(.software, "the AAC encoder: no frame buffers")
        }
        self.frame = frame
        self.packet = packet
        let extradata = context.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(context.pointee.extradata_size))) } ?? []
        format = AudioFormat(codec: .aac, sampleRate: sampleRate, channels: channels, bitrate: bitrate,
                             samplesPerPacket: samples, extradata: extradata)
    }

    deinit {
        CMedia_av_frame_free(&frame)
        CMedia_av_packet_free(&packet)
        CMedia_avcodec_free_context(&context)
    }

    /// Encodes one frame of `format.samplesPerPacket` interleaved samples whose first sample
    /// is number `position` of the track; nil flushes. Hands each packet out with its pts
    /// (in samples: the first packets' is negative, the encoder's priming).
    func encode(interleaved: UnsafeBufferPointer<Float>?, position: Int64, _ emit: (UnsafeBufferPointer<UInt8>, Int64) -> Void) throws(AudioError) {
        guard let context, let frame, let packet else { return }
        var status: Int32
        if let interleaved {
            _ = CMedia_av_frame_make_writable(frame)
            let channels = format.channels
            let samples = format.samplesPerPacket
            withUnsafeBytes(of: &frame.pointee.data) { planes in
                for channel in 0..<channels {
                    guard let plane = planes.load(fromByteOffset: channel * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                                                  as: UnsafeMutablePointer<UInt8>?.self) else { continue }
                    let out = UnsafeMutableRawPointer(plane).assumingMemoryBound(to: Float.self)
                    for i in 0..<samples { out[i] = interleaved[i * channels + channel] }
                }
            }
            frame.pointee.pts = position
            status = CMedia_avcodec_send_frame(context, frame)
        } else {
            status = CMedia_avcodec_send_frame(context, nil)
        }
        guard status >= 0 || status == CMedia_error_eof() else { throw AudioError(.software, "AAC encoding: \(AudioLibraries.averror(status))") }
        while true {
            status = CMedia_avcodec_receive_packet(context, packet)
            if status == CMedia_error_again() || status == CMedia_error_eof() { return }
            guard status >= 0 else { throw AudioError(.software, "AAC encoding: \(AudioLibraries.averror(status))") }
            emit(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)), packet.pointee.pts)
            CMedia_av_packet_unref(packet)
        }
    }
}
