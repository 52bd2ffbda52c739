import CMedia

/// An opened libavcodec audio encoder with the frame it is fed through and the packet it hands
/// back, made and freed together: what `AACEncoder` and `OpusTranscoder` share.
///
/// Used by one thread at a time.
final class AudioEncoding {
    let context: UnsafeMutablePointer<AVCodecContext>
    let frame: UnsafeMutablePointer<AVFrame>
    let packet: UnsafeMutablePointer<AVPacket>
    /// The samples of every frame the encoder takes.
    let samplesPerFrame: Int

    /// The encoder `open` opens (nil and an AVERROR when it cannot: an error of `kind`), called
    /// `name` in errors.
    init(_ name: String, unopened kind: AudioError.Kind, open: (inout Int32) -> UnsafeMutablePointer<AVCodecContext>?) throws(AudioError) {
        var error: Int32 = 0
        guard let context = open(&error) else { throw AudioError(kind, "\(name): \(AudioLibraries.averror(error))") }
        var frame: UnsafeMutablePointer<AVFrame>?
        var packet: UnsafeMutablePointer<AVPacket>?
        let samples = Int(context.pointee.frame_size)
        if samples > 0 {
            frame = CMedia_audio_frame(context, Int32(samples))
            packet = CMedia_av_packet_alloc()
        }
        guard let frame, let packet else {
            var c: UnsafeMutablePointer<AVCodecContext>? = context
            CMedia_av_frame_free(&frame)
            CMedia_av_packet_free(&packet)
            CMedia_avcodec_free_context(&c)
            throw AudioError(.software, "\(name): no frame buffers")
        }
        self.context = context
        self.frame = frame
        self.packet = packet
        samplesPerFrame = samples
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        var f: UnsafeMutablePointer<AVFrame>? = frame
        var p: UnsafeMutablePointer<AVPacket>? = packet
        CMedia_av_frame_free(&f)
        CMedia_av_packet_free(&p)
        CMedia_avcodec_free_context(&c)
    }
}
