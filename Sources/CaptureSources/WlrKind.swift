import Capture
import CommandOptions
import WlrCapture

/// `--source wlr`: a wlroots compositor's first output through its screencopy protocol, on
/// change, without a portal (`WlrCapture`).
public enum WlrKind: SourceKind {
    public static let forms = [SourceForm(text: "wlr")]
    public static let optionOwner = "wlr"
    public static let specs: [OptionSpec] = []
    public static let reads = ["cursor", "idle-fps"]
    public static let notes = [
        "  wlr                a wlroots compositor's output (sway, Hyprland, river) by its screencopy, no portal (--cursor, --idle-fps)",
    ]

    public static func takes(_ text: String) -> Bool { text == "wlr" }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        Planned(text: text, drawCursor: !o.isOff("cursor"), frameRate: fps, idleRate: try idleRate(o))
    }

    struct Planned: PlannedSource {
        let text: String
        let drawCursor: Bool
        let frameRate: FrameRate
        let idleRate: Double
        var realtime: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { "the output's size, bgra" }
        var dryRunLines: [String] {
            ["wlr: display=$WAYLAND_DISPLAY output=first cursor=\(drawCursor ? "on" : "off") capture: on change idle-fps=\(idleRate > 0 ? short(idleRate) : "0 (no keep-alive)")"]
        }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try WlrSource(drawCursor: drawCursor, frameRate: frameRate, idleRate: idleRate, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "wlroots screencopy " + ((source as? WlrSource)?.captureDescription ?? "\(source.width)x\(source.height)") + " at most \(rate) fps"
        }

        func commandError(for error: any Error) -> CommandError? {
            guard let error = error as? WlrError else { return nil }
            return .unavailable(error.description)
        }
    }
}
