import Capture
import CommandOptions

/// `--source testsrc`: the built-in test pattern, paced in real time unless `--no-realtime`.
public enum TestPatternKind: SourceKind {
    public static let forms = [SourceForm(text: "testsrc")]
    public static let optionOwner = "testsrc"
    public static let specs = [
        OptionSpec(name: "size", value: "WxH", help: "test pattern size", defaultText: "1280x720"),
        OptionSpec(name: "flash", value: nil, help: "testsrc: the frame at each whole second of the clock is white, a sync reference for sound (on with --audio tone)"),
    ]
    public static let notes = ["  testsrc            the built-in test pattern (--size)"]

    public static func takes(_ text: String) -> Bool { text == "testsrc" }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        let size = try o.value("size", default: (1280, 720), expected: "expected WxH, e.g. 1280x720", ValueFormat.frameSize)
        guard size.0 % 2 == 0 && size.1 % 2 == 0 else { throw o.invalid("size", "odd: 4:2:0 needs even width and height") }
        return Planned(text: text, width: size.0, height: size.1, realtime: !o.isOff("realtime"))
    }

    struct Planned: PlannedSource {
        let text: String
        let width: Int
        let height: Int
        let realtime: Bool
        var takesFlash: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { (width, height, .i420) }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try TestPatternSource(width: width, height: height, frameRate: settings.frameRate ?? FrameRate(30), realtime: realtime, flash: settings.flash)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "test pattern \(source.width)x\(source.height) at \(rate) fps"
        }
    }
}
