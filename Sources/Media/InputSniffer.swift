/// Tells from the first bytes of an input whether it can be an Annex-B H.264 stream, and
/// when it is a container or raw video instead, which one: `consume` and `inspect` say so
/// in one line (exit 65) instead of reading an MP4 as garbage and reporting nothing.
///
/// Pure: the caller reads the prefix (up to `window` bytes, less at end of input) and asks
/// `identify`; `.needMore` asks for more bytes.
///
/// What it knows (first bytes):
///
///     00 00 01 / 00 00 00 01     Annex-B (a start code at once, the normal case)
///     ?? ?? ?? ?? 'ftyp'          MP4 / MOV / 3GP (ISO base media)
///     1A 45 DF A3                 Matroska / WebM (EBML)
///     47 … 47 (every 188 bytes)  MPEG transport stream
///     'YUV4MPEG2 '                YUV4MPEG2 raw video
///     'FLV' 01                    Flash video
///     'RIFF' ?? ?? ?? ?? 'AVI '   AVI (RIFF); any other RIFF (WAV, …) too
///
/// Anything else is Annex-B when a start code (`00 00 01`) comes within `window` bytes (what
/// comes before it is skipped by the scanner as garbage, counted), and not H.264 when none
/// does.
public enum InputSniffer {
    /// How far to look for a start code: 64 KiB.
    public static let window = 64 << 10

    public enum Format: Sendable, Hashable {
        case mp4, matroska, mpegTS, y4m, flv, avi, riff
        /// No start code in the first `window` bytes (or in the whole, shorter input).
        case noStartCode

        /// What it is, for a sentence: "an MP4 file".
        public var name: String {
            switch self {
            case .mp4: "an MP4 file"
            case .matroska: "a Matroska/WebM file"
            case .mpegTS: "an MPEG transport stream"
            case .y4m: "YUV4MPEG2 raw video"
            case .flv: "an FLV file"
            case .avi: "an AVI file"
            case .riff: "a RIFF file (WAV or similar)"
            case .noStartCode: "not an H.264 stream"
            }
        }
    }

    public enum Verdict: Sendable, Hashable {
        /// An Annex-B stream (or too short to tell: an empty input is an empty stream).
        case annexB
        case notAnnexB(Format)
        /// Give more bytes (up to `window`) or say the input ended.
        case needMore
    }

    /// Looks at `prefix`, the first bytes of the input; `atEnd` when the input has no more.
    public static func identify(_ prefix: some Collection<UInt8>, atEnd: Bool) -> Verdict {
        let bytes = Array(prefix.prefix(window))
        let n = bytes.count
        if n == 0 { return atEnd ? .annexB : .needMore }
        func starts(_ sig: [UInt8], at offset: Int = 0) -> Bool? {
            if n <= offset { return atEnd ? false : nil }
            if n < offset + sig.count {
                // Not enough bytes yet: a match so far may still become one.
                let have = bytes[offset..<n]
                return have.elementsEqual(sig.prefix(have.count)) && !atEnd ? nil : false
            }
            return bytes[offset..<(offset + sig.count)].elementsEqual(sig)
        }
        // A start code at once: the common case, decided on the first bytes.
        if starts([0, 0, 1]) == true || starts([0, 0, 0, 1]) == true { return .annexB }

        var undecided = false
        let signatures: [(Format, [UInt8], Int)] = [
            (.mp4, Array("ftyp".utf8), 4),
            (.matroska, [0x1a, 0x45, 0xdf, 0xa3], 0),
            (.y4m, Array("YUV4MPEG2 ".utf8), 0),
            (.flv, Array("FLV".utf8) + [1], 0),
        ]
        for (format, sig, offset) in signatures {
            switch starts(sig, at: offset) {
            case true?: return .notAnnexB(format)
            case nil: undecided = true
            case false?: break
            }
        }
        switch starts(Array("RIFF".utf8)) {
        case true?:
            switch starts(Array("AVI ".utf8), at: 8) {
            case true?: return .notAnnexB(.avi)
            case nil: undecided = true
            case false?: return .notAnnexB(.riff)
            }
        case nil: undecided = true
        case false?: break
        }
        // MPEG-TS: a sync byte 0x47 at 0, 188, 376 (three packets; fewer when that is all).
        if bytes[0] == 0x47 {
            let packets = [0, 188, 376].filter { $0 < n }
            if packets.allSatisfy({ bytes[$0] == 0x47 }) {
                if packets.count == 3 || (atEnd && packets.count >= 2) { return .notAnnexB(.mpegTS) }
                if !atEnd { undecided = true }
            }
        }
        if undecided { return .needMore }

        // Anything else: a start code somewhere in the window makes it Annex-B with a
        // garbage head (which the scanner skips and counts).
        if n >= 3 {
            for i in 0..<(n - 2) where bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                return .annexB
            }
        }
        return atEnd || n >= window ? .notAnnexB(.noStartCode) : .needMore
    }

    /// The first chunks of an input read in order, held until `identify` can tell what the
    /// input is (a few bytes, at most `window`): what a reader of a pipe keeps back before
    /// it parses anything.
    public struct Head: Sendable {
        /// The chunks added so far, in order, to be parsed once the input is known to be Annex-B.
        public private(set) var chunks: [[UInt8]] = []
        /// Their first `window` bytes.
        private var prefix: [UInt8] = []

        public init() {}

        /// Holds `chunk` (empty: the input ended) and says what the input is so far.
        public mutating func add(_ chunk: [UInt8]) -> Verdict {
            if !chunk.isEmpty {
                chunks.append(chunk)
                prefix += chunk.prefix(InputSniffer.window - prefix.count)
            }
            return InputSniffer.identify(prefix, atEnd: chunk.isEmpty)
        }
    }

    /// One line for the user: what `name` is and what to do about it.
    ///
    ///     in.mp4 is an MP4 file, not an Annex-B H.264 stream: extract its video with
    ///     ffmpeg -i in.mp4 -c:v copy -bsf:v h264_mp4toannexb -f h264 OUT.h264
    public static func explain(_ format: Format, name: String) -> String {
        let file = name == "-" || name == "stdin" ? "the input" : name
        let ffmpegInput = name == "-" || name == "stdin" ? "-" : shellQuoted(name)
        switch format {
        case .mp4, .matroska, .flv, .avi:
            return "\(file) is \(format.name), not an Annex-B H.264 stream: extract its video with "
                + "ffmpeg -i \(ffmpegInput) -c:v copy -bsf:v h264_mp4toannexb -f h264 OUT.h264 (or -c:v libx264 if it is not H.264)"
        case .mpegTS:
            return "\(file) is \(format.name), not an Annex-B H.264 stream: extract its video with "
                + "ffmpeg -i \(ffmpegInput) -c:v copy -f h264 OUT.h264 (or -c:v libx264 if it is not H.264)"
        case .y4m:
            return "\(file) is \(format.name), not an H.264 stream: encode it with nalcast produce --source y4m:\(name == "stdin" ? "-" : name) -o OUT.h264"
        case .riff:
            return "\(file) is \(format.name), not an H.264 stream"
        case .noStartCode:
            return "\(file) is not an Annex-B H.264 stream: no start code (00 00 01) in its first \(window >> 10) KiB"
        }
    }

    static func shellQuoted(_ s: String) -> String {
        let plain = s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || "-_./+,:=@".utf8.contains(c)
        }
        return plain ? s : "'" + s.replacingQuote() + "'"
    }
}

extension String {
    fileprivate func replacingQuote() -> String {
        var out = ""
        for ch in self { out += ch == "'" ? "'\\''" : String(ch) }
        return out
    }
}
