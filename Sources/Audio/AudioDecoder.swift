import CMedia
import Media

/// libavcodec's decoder for one audio track (AAC from a container or from `produce`, or Opus),
/// its frames converted to interleaved float at a chosen rate and channel count (libswresample,
/// set up at the first frame, when the decoder has said its sample format).
///
/// Used by one thread at a time.
final class AudioDecoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var resampler: Resampler?
    let outRate: Int
    let outChannels: Int
    private let codecName: String

    /// A decoder for `format` (its codec's configuration in `extradata`).
    init(_ format: AudioFormat, outRate: Int = 48_000, outChannels: Int = 2) throws(AudioError) {
        try AudioDecoder.loadLibraries()
        let name = format.codec.rawValue
        codecName = name
        var error: Int32 = 0
        let context = format.extradata.withUnsafeBufferPointer {
            CMedia_open_decoder(name, Int32(format.sampleRate), Int32(format.channels), $0.baseAddress, Int32($0.count), &error)
        }
        guard let context else { throw AudioError(.software, "the \(name) decoder: \(AudioLibraries.averror(error))") }
        self.context = context
        guard let frame = CMedia_av_frame_alloc(), let packet = CMedia_av_packet_alloc() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = context
            CMedia_avcodec_free_context(&c)
            throw AudioError(.software, "the \(name) decoder: no frame buffers")
        }
        self.frame = frame
        self.packet = packet
        self.outRate = outRate
        self.outChannels = outChannels
    }

    deinit {
        CMedia_av_frame_free(&frame)
        CMedia_av_packet_free(&packet)
        CMedia_avcodec_free_context(&context)
    }

    /// The libraries decoding needs (libavcodec, libswresample), opened once.
    static func loadLibraries() throws(AudioError) {
        _ = try AudioLibraries.load(pulse: false)
        var why = [CChar](repeating: 0, count: 256)
        guard CMedia_load_transcoding(&why, Int32(why.count)) == 0 else { return }
        throw AudioError(.unavailable, "decoding sound needs libavcodec's decoders: \(String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
    }

    /// Decodes one packet; hands `body` the samples it gave (interleaved, `outChannels`), in
    /// order. A packet the decoder refuses throws; the decoder goes on with the next.
    func decode(_ data: [UInt8], _ body: (UnsafeBufferPointer<Float>) -> Void) throws(AudioError) {
        guard let context, let frame, let packet else { return }
        let status = data.withUnsafeBufferPointer { bytes -> Int32 in
            // The packet borrows the bytes: libavcodec copies what it keeps (no buf: not refcounted).
            packet.pointee.data = UnsafeMutablePointer(mutating: bytes.baseAddress)
            packet.pointee.size = Int32(bytes.count)
            defer { packet.pointee.data = nil; packet.pointee.size = 0 }
            return CMedia_avcodec_send_packet(context, packet)
        }
        guard status >= 0 else { throw AudioError(.badInput, "\(codecName) decoding: \(AudioLibraries.averror(status))") }
        while CMedia_avcodec_receive_frame(context, frame) >= 0 {
            defer { CMedia_av_frame_unref(frame) }
            try resample(frame, body)
        }
    }

    private func resample(_ frame: UnsafeMutablePointer<AVFrame>, _ body: (UnsafeBufferPointer<Float>) -> Void) throws(AudioError) {
        if resampler == nil {
            resampler = try Resampler(avFormat: frame.pointee.format, rate: Int(frame.pointee.sample_rate), channels: Int(frame.pointee.ch_layout.nb_channels),
                                      outRate: outRate, outChannels: outChannels)
        }
        resampler?.convert(frame: frame, body)
    }
}
