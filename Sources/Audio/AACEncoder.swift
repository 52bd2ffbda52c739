import CMedia
import Media
import Output

/// libavcodec's native AAC-LC encoder: 1024-sample planar float frames in, raw AAC packets
/// (no ADTS) out, the AudioSpecificConfig as the format's extradata.
///
/// Used by one thread (the audio thread) only.
final class AACEncoder {
    private let codec: AudioEncoding
    let format: AudioFormat

    init(sampleRate: Int, channels: Int, bitrate: Int) throws(AudioError) {
        codec = try AudioEncoding("the AAC encoder", unopened: .software) { CMedia_open_aac(Int32(sampleRate), Int32(channels), Int64(bitrate), &$0) }
        let context = codec.context
        let extradata = context.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(context.pointee.extradata_size))) } ?? []
        format = AudioFormat(codec: .aac, sampleRate: sampleRate, channels: channels, bitrate: bitrate,
                             samplesPerPacket: codec.samplesPerFrame, extradata: extradata)
    }

    /// Encodes one frame of `format.samplesPerPacket` interleaved samples whose first sample
    /// is number `position` of the track; nil flushes. Hands each packet out with its pts
    /// (in samples: the first packets' is negative, the encoder's priming).
    func encode(interleaved: UnsafeBufferPointer<Float>?, position: Int64, _ emit: (UnsafeBufferPointer<UInt8>, Int64) -> Void) throws(AudioError) {
        let (context, frame, packet) = (codec.context, codec.frame, codec.packet)
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
