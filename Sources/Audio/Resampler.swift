import CMedia

/// libswresample from a source's PCM to interleaved float at the track's rate and channel
/// count; also the drift correction of a live source (`compensate`): a few samples added or
/// dropped, spread inaudibly over a second.
///
/// Used by one source thread only.
final class Resampler {
    private var context: OpaquePointer?
    private let outChannels: Int
    private let outRate: Int
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

    init(input: Input, rate: Int, channels: Int, outRate: Int, outChannels: Int) throws(AudioError) {
        var error: Int32 = 0
        guard let context = CMedia_resampler(input.avFormat, Int32(rate), Int32(channels), Int32(outRate), Int32(outChannels), &error) else {
            throw AudioError(.software, "the resampler (\(rate) Hz, \(channels) channels): \(AudioLibraries.averror(error))")
        }
        self.context = context
        self.outChannels = outChannels
        self.outRate = outRate
    }

    deinit { CMedia_swr_free(&context) }

    /// Converts `frames` frames at `input` (nil: flush what the filter holds) and hands the
    /// output to `body`.
    func convert(_ input: UnsafeRawPointer?, frames: Int, _ body: (UnsafeBufferPointer<Float>) -> Void) {
        guard let context else { return }
        let room = frames * 2 + 4096  // up to a 2x rate change, plus what the filter holds
        if output.count < room * outChannels { output = [Float](repeating: 0, count: room * outChannels) }
        let made = output.withUnsafeMutableBytes { out in
            CMedia_swr_convert_interleaved(context, out.baseAddress, Int32(room), input, Int32(input == nil ? 0 : frames))
        }
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
