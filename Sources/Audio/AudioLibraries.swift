import CAudio

/// libavcodec, libavutil, libswresample and libpulse, opened at run time (dlopen) when audio
/// starts: a run without `--audio` maps none of them (Sources/CAudio/shim.h).
enum AudioLibraries {
    /// Opens the codec libraries, and libpulse when `pulse`; the error names what is missing.
    static func load(pulse: Bool) throws(AudioError) {
        var mask = 1 << CAUDIO_AVUTIL | 1 << CAUDIO_AVCODEC | 1 << CAUDIO_SWRESAMPLE
        if pulse { mask |= 1 << CAUDIO_PULSE | 1 << CAUDIO_PULSE_SIMPLE }
        var why = [CChar](repeating: 0, count: 512)
        guard CAudio_load(Int32(mask), &why, Int32(why.count)) == 0 else {
            CAudio_av_log_set_level(8)  // AV_LOG_FATAL: the encoder's notices are not ours to print
            return
        }
        let text = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw AudioError(.unavailable, "audio needs libavcodec, libswresample\(pulse ? " and libpulse" : "") (Debian: libavcodec59 libswresample4\(pulse ? " libpulse0" : "")): \(text)")
    }

    static func averror(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        _ = CAudio_av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
