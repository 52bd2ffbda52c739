import CMedia

/// What `-o FILE` writes: a container (MP4, MPEG-TS, Matroska, FLV) or the raw Annex-B
/// stream as it came. Chosen by `--format`, else by the file's extension (`.mp4`, `.ts`,
/// `.mkv`, `.flv`; anything else, `.h264` and `.264` included, is raw Annex-B).
public enum ContainerFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    case mp4
    case ts
    case mkv
    case flv
    /// Annex-B as it came, no container (`FileSink`).
    case h264

    /// `--format` values: mp4, ts, mkv, flv, h264 (and FFmpeg's names mpegts, matroska, 264).
    public init?(name: String) {
        switch name.lowercased() {
        case "mp4", "mov": self = .mp4
        case "ts", "mpegts": self = .ts
        case "mkv", "matroska": self = .mkv
        case "flv": self = .flv
        case "h264", "264", "annexb": self = .h264
        default: return nil
        }
    }

    /// By the extension of `path` (case-insensitive): raw Annex-B unless it names a container.
    public static func forPath(_ path: String) -> ContainerFormat {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return .h264 }
        switch path[path.index(after: dot)...].lowercased() {
        case "mp4", "m4v", "mov": return .mp4
        case "ts", "m2ts", "mts": return .ts
        case "mkv": return .mkv
        case "flv": return .flv
        default: return .h264
        }
    }

    /// The libavformat muxer; nil for raw Annex-B.
    var muxerName: String? {
        switch self {
        case .mp4: "mp4"
        case .ts: "mpegts"
        case .mkv: "matroska"
        case .flv: "flv"
        case .h264: nil
        }
    }

    /// An MP4 is finished by going back into the file (the sample tables come last and the
    /// media data's size is patched): it cannot be written to a pipe.
    public var needsSeekableOutput: Bool { self == .mp4 }

    /// Why `fd` cannot take this format, in one line (an MP4 to a pipe or a terminal), or nil.
    public func refusal(forDescriptor fd: Int32) -> String? {
        guard needsSeekableOutput, CMedia_fd_is_seekable(fd) == 0 else { return nil }
        return "\(self) needs a seekable file (its index is written last, at the front of the data): not a pipe or a terminal; "
            + "use --format ts or mkv to write to a pipe, or -o FILE.mp4"
    }

    /// The values `--format` takes, for help and errors.
    public static let optionValues = "mp4, ts, mkv, flv or h264"

    public var description: String { rawValue }
}
