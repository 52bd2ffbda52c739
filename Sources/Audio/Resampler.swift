import CMedia

/// libswresample from a source's PCM (or a decoder's frames: `convert(frame:)`) to interleaved
/// float at the track's rate and channel count; also the drift correction of a live source
/// (`compensate`): a few samples added or dropped, spread inaudibly over a second.
///
/// Used by one thread only (a source's, a decoder's).
final class Resampler {
    private var context: OpaquePointer?
    private let outChannels: Int
    private let outRate: Int
    private let inRate: Int
    private var output: [Float] = []

    enum Input {
        case u8, s16, s32, f32

        var avFormat: Int32 {
            switch self {
            case .u8: return CMedia_sample_fmt_u8()
            case .s16: return CMedia_sample_fmt_s16()
            case .s32: return CMedia_sample_fmt_s32()
            case .f32: return CMedia_sample_fmt_flt()
            }
        }
    }

    convenience init(input: Input, rate: Int, channels: Int, outRate: Int, outChannels: Int) throws(AudioError) {
        try self.init(avFormat: input.avFormat, rate: rate, channels: channels, outRate: outRate, outChannels: outChannels)
    }

    /// From libavutil's sample format `avFormat` (a decoder's frames').
    init(avFormat: Int32, rate: Int, channels: Int, outRate: Int, outChannels: Int) throws(AudioError) {
        var error: Int32 = 0
        guard let context = CMedia_resampler(avFormat, Int32(rate), Int32(channels), Int32(outRate), Int32(outChannels), &error) else {
            throw AudioError(.software, "the resampler (\(rate) Hz, \(channels) channels): \(AudioLibraries.averror(error))")
        }
        self.context = context
        self.outChannels = outChannels
        self.outRate = outRate
        self.inRate = rate
    }

    deinit { CMedia_swr_free(&context) }

    /// Converts `frames` frames at `input` (nil: flush what the filter holds) and hands the
    /// output to `body`.
    func convert(_ input: UnsafeRawPointer?, frames: Int, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard let context else { return }
        run(frames: frames, body) { out, room in
            CMedia_swr_convert_interleaved(context, out, room, input, Int32(input == nil ? 0 : frames))
        }
    }

    /// Converts a decoder's frame (planar or not, of the format this was made for).
    func convert(frame: UnsafePointer<AVFrame>, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard let context else { return }
        run(frames: Int(frame.pointee.nb_samples), body) { out, room in CMedia_swr_convert_frame_planes(context, out, room, frame) }
    }

    /// Runs `convert(out, room)` into the output buffer, grown to hold what `frames` input
    /// frames make (the rate's ratio, rounded up, plus what the filter holds back), and hands
    /// `body` what it made.
    private func run(frames: Int, _ body: (UnsafeBufferPointer<Float>) -> Void, _ convert: (UnsafeMutableRawPointer?, Int32) -> Int32) {
        let room = frames * (outRate / max(1, inRate) + 1) + 4096
        if output.count < room * outChannels { output = [Float](repeating: 0, count: room * outChannels) }
        let made = output.withUnsafeMutableBytes { convert($0.baseAddress, Int32(room)) }
        guard made > 0 else { return }
        output.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<Int(made) * outChannels])) }
    }

    /// Samples (at the output rate) the filter holds back.
    var delay: Int64 { context.map { CMedia_swr_get_delay($0, Int64(outRate)) } ?? 0 }

    /// Adds (`delta` > 0) or drops samples, spread over the next `distance` output samples.
    func compensate(delta: Int, distance: Int) {
        guard let context else { return }
        _ = CMedia_swr_set_compensation(context, Int32(delta), Int32(distance))
    }
}
