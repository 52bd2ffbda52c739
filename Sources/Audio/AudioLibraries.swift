import CMedia
#if canImport(Glibc)
import Glibc
#endif

/// libavcodec, libavutil, libswresample and libpulse, opened at run time (dlopen) when audio
/// starts: a run without `--audio` maps none of them (Sources/CMedia/audio.h).
enum AudioLibraries {
    /// Opens the codec libraries, and libpulse when `pulse`; the error names what is missing.
    /// Returns what was mapped before, for `LoadingPages.release()` once the encoder is open.
    static func load(pulse: Bool) throws(AudioError) -> LoadingPages {
        var mask = 1 << CMEDIA_AVUTIL | 1 << CMEDIA_AVCODEC | 1 << CMEDIA_SWRESAMPLE
        if pulse { mask |= 1 << CMEDIA_PULSE | 1 << CMEDIA_PULSE_SIMPLE }
        var why = [CChar](repeating: 0, count: 512)
        let before = LoadingPages()
        // (The loader, Sources/CMedia/libraries.h, silences libav's log as it opens libavutil.)
        guard CMedia_load_audio(Int32(mask), &why, Int32(why.count)) == 0 else { return before }
        let text = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw AudioError(.unavailable, "audio needs libavcodec, libswresample\(pulse ? " and libpulse" : "") (Debian: libavcodec59 libswresample4\(pulse ? " libpulse0" : "")): \(text)")
    }

    static func averror(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        _ = CMedia_av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The file-backed mappings of the process before the audio libraries were loaded, so that
/// `release()` can give back the pages that loading alone touched, on the mappings loading
/// added and no other.
///
/// Loading Debian's libavcodec maps ~40 libraries (librsvg, glib, ICU, x265, aom, rav1e...),
/// all built BIND_NOW: the loader reads their symbol and hash tables and relocations and
/// runs their constructors, some 14 MiB of file pages sound never touches again. Those that
/// are clean go back (Sources/CMedia/audio.h, `CMedia_page_out_loaded`: MADV_PAGEOUT, then
/// MADV_DONTNEED on the mappings nothing was ever written to); a page used again faults back
/// in from the page cache and counts again. The relocated data (private dirty pages) stays:
/// without swap nothing can take it.
struct LoadingPages: ~Copyable {
    private let starts: UnsafeMutablePointer<UInt>?
    private let count: Int

    init() {
        var count = 0
        starts = CMedia_file_mappings(&count)
        self.count = count
    }

    /// Gives the pages back (once the encoder and the sources are open: what opening touched
    /// is start-up work too). Returns the bytes of the mappings advised.
    @discardableResult
    consuming func release() -> Int {
        let advised = Int(CMedia_page_out_loaded(starts, count))
        discard self
        return advised
    }

    deinit { free(starts) }
}
