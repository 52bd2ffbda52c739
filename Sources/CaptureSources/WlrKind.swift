import Capture
import CommandOptions
import WlrCapture

/// `--source wlr[:NAME]`: a wlroots compositor's first output, or the one named, through its
/// screencopy protocol, on change, without a portal (`WlrCapture`).
public enum WlrKind: SourceKind {
    public static let forms = [SourceForm(text: "wlr"), SourceForm(text: "wlr:NAME", example: "wlr:HDMI-A-1")]
    public static let optionOwner = "wlr"
    public static let specs: [OptionSpec] = []
    public static let reads = ["cursor", "idle-fps"]
    public static let notes = [
        "  wlr                a wlroots compositor's output (sway, Hyprland, river) by its screencopy, no portal (--cursor, --idle-fps)",
        "  wlr:HDMI-A-1       its output of that name (swaymsg -t get_outputs); wlr alone takes the first",
    ]

    public static func takes(_ text: String) -> Bool { text == "wlr" || text.hasPrefix("wlr:") }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        let output = text == "wlr" ? nil : String(text.dropFirst("wlr:".count))
        if output?.isEmpty == true { throw CommandError.usage("--source wlr: needs an output name (swaymsg -t get_outputs lists them), or wlr alone for the first") }
        return Planned(text: text, output: output, drawCursor: !o.isOff("cursor"), frameRate: fps, idleRate: try idleRate(o))
    }

    struct Planned: PlannedSource {
        let text: String
        let output: String?
        let drawCursor: Bool
        let frameRate: FrameRate
        let idleRate: Double
        var realtime: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { "the output's size, bgra" }
        var dryRunLines: [String] {
            ["wlr: display=$WAYLAND_DISPLAY output=\(output ?? "first") cursor=\(drawCursor ? "on" : "off") capture: on change idle-fps=\(idleRate > 0 ? short(idleRate) : "0 (no keep-alive)")"]
        }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try WlrSource(output: output, drawCursor: drawCursor, frameRate: frameRate, idleRate: idleRate, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "wlroots screencopy " + ((source as? WlrSource)?.captureDescription ?? "\(source.width)x\(source.height)") + " at most \(rate) fps"
        }

        func commandError(for error: any Error) -> CommandError? {
            guard let error = error as? WlrError else { return nil }
            if case .noSuchOutput = error { return .noInput(error.description) }
            return .unavailable(error.description)
        }
    }
}
