import Capture
import CommandOptions
#if canImport(Glibc)
import Glibc
#endif

/// `--source y4m:PATH`: YUV4MPEG2 frames from a file or stdin, the frame from the header.
public enum Y4MKind: SourceKind {
    public static let forms = [SourceForm(text: "y4m:PATH")]
    public static let optionOwner = "y4m:PATH"
    public static let specs: [OptionSpec] = []
    public static let notes = ["  y4m:PATH           YUV4MPEG2 frames from a file, y4m:- from stdin"]

    public static func takes(_ text: String) -> Bool { text.hasPrefix("y4m:") }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        let path = String(text.dropFirst(4))
        guard !path.isEmpty else { throw CommandError.usage("--source y4m: needs a path (- for stdin)") }
        return Planned(text: text, path: path, realtime: o.has("realtime"))
    }

    struct Planned: PlannedSource {
        let text: String
        let path: String
        let realtime: Bool
        var readsStdin: Bool { path == "-" }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { "from the Y4M header" }
        /// The frame size is in the file's header: `--dry-run` reads it (which also checks the file).
        var dryRunOpens: Bool { path != "-" }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try refuseDirectory(path, text)
            return try Y4MSource(path: path, realtime: realtime)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "y4m \(path == "-" ? "stdin" : path) \(source.width)x\(source.height) at \(rate) fps"
        }
    }
}

/// `--source raw:PATH`: raw frames of `--input-size`, `--pix-fmt` and `--input-fps`.
public enum RawKind: SourceKind {
    public static let forms = [SourceForm(text: "raw:PATH")]
    public static let optionOwner = "raw:PATH"
    public static let specs = [
        OptionSpec(name: "input-size", value: "WxH", help: "frame size of raw: input"),
        OptionSpec(name: "pix-fmt", value: "FMT", help: "pixel format of raw: input, ours or FFmpeg's name: i420 (yuv420p), nv12, bgra, rgba, yuyv (yuyv422), rgb24, bgr24, ...", defaultText: "i420"),
        OptionSpec(name: "input-fps", value: "RATE", help: "frame rate of raw: input (30, 29.97, 30000/1001)", defaultText: "30"),
    ]
    public static let notes = ["  raw:PATH           raw frames (--input-size, --pix-fmt, --input-fps), raw:- from stdin"]

    public static func takes(_ text: String) -> Bool { text.hasPrefix("raw:") }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        guard let size = try o.value("input-size", expected: "expected WxH, e.g. 1280x720", ValueFormat.frameSize) else {
            throw CommandError.usage("--source raw: needs --input-size WxH")
        }
        let format = try o.value("pix-fmt", default: PixelFormat.i420, expected: "expected one of \(PixelFormat.acceptedNames)") { PixelFormat(name: $0) }
        let rate = try o.value("input-fps", default: FrameRate(30), expected: ValueFormat.frameRateHint) { FrameRate(parsing: $0) }
        let path = String(text.dropFirst(4))
        guard !path.isEmpty else { throw CommandError.usage("--source raw: needs a path (- for stdin)") }
        return Planned(text: text, path: path, width: size.0, height: size.1, format: format, rate: rate, realtime: o.has("realtime"))
    }

    struct Planned: PlannedSource {
        let text: String
        let path: String
        let width: Int
        let height: Int
        let format: PixelFormat
        let rate: FrameRate
        let realtime: Bool
        var readsStdin: Bool { path == "-" }
        var frame: (width: Int, height: Int, format: PixelFormat)? { (width, height, format) }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try refuseDirectory(path, text)
            return try RawSource(path: path, width: width, height: height, pixelFormat: format, frameRate: rate, realtime: realtime)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "raw \(format) \(path == "-" ? "stdin" : path) \(source.width)x\(source.height) at \(rate) fps"
        }
    }
}

/// open(2) takes a directory; say so before reading it fails.
private func refuseDirectory(_ path: String, _ text: String) throws {
    var st = stat()
    if path != "-", stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
        throw CommandError.noInput("--source \(text): is a directory")
    }
}
