import CLibEV
import CLibYUV
import CMedia
import CX264
import CommandOptions
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// `nalcast --version`: the version, and each C library as nalcast was built against it and
/// as it runs: the linked ones by the file the loader mapped, the ones opened with dlopen
/// when needed (FFmpeg's, libpulse) by their own version function, or why they do not open.
enum VersionReport {
    struct Row {
        let library: String
        let built: String
        let running: String
    }

    static func text() -> String {
        let rows = [Row(library: "library", built: "built against", running: "running")] + self.rows()
        var out = "nalcast \(Nalcast.version)\n\n"
        for row in rows {
            out += row.library.padded(15) + row.built.padded(27) + row.running + "\n"
        }
        return out
    }

    static func rows() -> [Row] {
        let maps = mappedLibraries()
        func file(_ stem: String) -> String { maps.first { $0.hasPrefix(stem + ".so") } ?? "not mapped" }
        var rows = [
            Row(library: "libx264", built: "\(CX264_build()) (\(X264_POINTVER))", running: file("libx264")),
            Row(library: "libev", built: "\(EV_VERSION_MAJOR).\(EV_VERSION_MINOR)", running: "\(ev_version_major()).\(ev_version_minor()) (\(file("libev")))"),
            Row(library: "libyuv", built: "\(LIBYUV_VERSION)", running: file("libyuv")),
            // "OpenSSL 3.0.19 27 Jan 2026": the version without the name and date.
            Row(library: "OpenSSL", built: Self.word(OpenSSLVersion.built, 1), running: Self.word(OpenSSLVersion.running, 1)),
        ]
        let ffmpeg = [("libavformat", Int32(CMEDIA_AVFORMAT)), ("libavcodec", Int32(CMEDIA_AVCODEC)),
                      ("libavutil", Int32(CMEDIA_AVUTIL)), ("libswresample", Int32(CMEDIA_SWRESAMPLE))]
        for (name, which) in ffmpeg {
            let running = CMedia_running_version(which)
            rows.append(Row(library: name, built: version(CMedia_header_version(which)),
                            running: running == 0 ? notLoadable(which) : version(running)))
        }
        let pulse = CMedia_pulse_running_version().map { String(cString: $0) } ?? notLoadable(Int32(CMEDIA_PULSE))
        rows.append(Row(library: "libpulse", built: String(cString: CMedia_pulse_header_version()), running: pulse))
        return rows
    }

    /// The `n`th space-separated word of `text` (from 0), or all of it.
    static func word(_ text: String, _ n: Int) -> String {
        let words = text.split(separator: " ")
        return words.count > n ? String(words[n]) : text
    }

    /// FFmpeg's AV_VERSION_INT as `59.27.100`.
    static func version(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xff).\(v & 0xff)" }

    /// A library opened only when needed that does not open here: its SONAME, and that
    /// nalcast runs without it.
    static func notLoadable(_ which: Int32) -> String {
        "not loadable (\(String(cString: CMedia_soname(which))); needed only for containers, media URLs, --audio)"
    }

    /// The file names of the shared libraries mapped into this process (/proc/self/maps).
    static func mappedLibraries() -> [String] {
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += buffer[..<n]
        }
        var names: [String] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.hasPrefix("/") else { continue }
            let name = String(path.split(separator: "/").last ?? path)
            if name.contains(".so"), !names.contains(name) { names.append(name) }
        }
        return names
    }
}
