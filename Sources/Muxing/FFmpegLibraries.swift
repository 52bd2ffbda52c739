import CMedia

/// libavformat, libavcodec and libavutil, opened at run time (dlopen) the first time a
/// container is asked for, never linked: a run that writes raw Annex-B, serves or inspects
/// maps none of them (nor the codec libraries Debian's libavcodec depends on), which keeps
/// nalcast's memory and start-up small. The SONAMEs are those of the headers built against.
public enum FFmpegLibraries {
    /// The Debian package that provides them (it depends on libavcodec and libavutil).
    public static var package: String { "libavformat\(CMedia_avformat_major())" }

    /// nil once the three libraries are open with every function nalcast calls; else why
    /// not, in one line that names the package to install. Loads them on first use (the
    /// loader, Sources/CMedia/libraries.h, silences their log).
    public static let problem: String? = {
        var why = [CChar](repeating: 0, count: 512)
        if CMedia_load_containers(&why, Int32(why.count)) != 0 { return nil }
        let reason = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "containers and media-server URLs need FFmpeg's \(String(cString: CMedia_soname(Int32(CMEDIA_AVFORMAT)))) (\(reason)): install the \(package) package"
    }()

    /// An FFmpeg error code in words (`av_strerror`): `Invalid data found when processing input`.
    static func text(_ rc: Int32) -> String {
        var chars = [CChar](repeating: 0, count: 128)
        _ = CMedia_av_strerror(rc, &chars, chars.count)
        return String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
