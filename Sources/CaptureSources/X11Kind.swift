import Capture
import CommandOptions
import X11Capture

/// `--source x11[:DISPLAY]`: the X11 screen, on change or at a fixed rate (`X11Capture`).
public enum X11Kind: SourceKind {
    public static let forms = [SourceForm(text: "x11"), SourceForm(text: "x11:DISPLAY", example: "x11:0")]
    public static let optionOwner = "x11"
    public static let specs = [
        OptionSpec(name: "region", value: "X,Y,WxH", help: "x11: capture this part of the screen (W, H even)", defaultText: "the whole screen"),
        OptionSpec(name: "cursor", value: nil, help: "x11, portal, pipewire:, wlr: draw the pointer into the frames (on; --no-cursor turns it off)"),
        OptionSpec(name: "capture", value: "MODE", help: "x11: damage (grab when the screen changes, at most --fps) or fixed (every 1/--fps, changed or not)", defaultText: "damage"),
        OptionSpec(name: "idle-fps", value: "RATE", help: "x11 with --capture damage, pipewire:, portal: repeat the picture this often while the screen is still (a keep-alive; 0: never)", defaultText: "1"),
    ]
    public static let notes = [
        "  x11                the X11 screen of $DISPLAY (--region, --cursor, --capture, --idle-fps)",
        "  x11:77, x11::77    display :77 (the number alone, or X11's own :77)",
        "  x11:77.1           screen 1 of display :77",
        "  x11:host:0.0       display 0 of another host",
    ]
    public static let paragraph = [
        "x11 captures on change (--capture damage): a frame as soon as the screen (or --region) changed, at most",
        "--fps a second, each stamped with its real capture time; while still, a repeat of the picture every",
        "1/--idle-fps s (a picture of skipped blocks, cheap to encode), and an IDR at once for a reader who joins. Where changes are not",
        "reported (some compositors, GL drivers that draw without DAMAGE) the picture freezes: use --capture fixed.",
    ]

    public static func takes(_ text: String) -> Bool { text == "x11" || text.hasPrefix("x11:") }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        // x11 (the display from $DISPLAY) or x11:DISPLAY: x11:77, x11::77, x11:host:0.0.
        var display: String?
        if text != "x11" {
            do { display = try X11Options.displayName(parsing: String(text.dropFirst(4))) } catch {
                throw CommandError.usage(error.description)
            }
        }
        var x11 = X11Options(display: display, frameRate: fps)
        if let region = o.string("region") {
            do { x11.region = try X11Region(parsing: region) } catch { throw CommandError.usage(error.description) }
        }
        x11.drawCursor = !o.isOff("cursor")
        x11.captureMode = try o.value("capture", default: .damage, expected: "expected damage or fixed") { X11CaptureMode(rawValue: $0) }
        x11.idleRate = try idleRate(o)
        var warnings: [String] = []
        if x11.captureMode == .fixed, o.sources["idle-fps"] != nil {
            warnings.append("produce: warning: \(o.label("idle-fps").trimmed) is ignored: it is for --capture damage (fixed sends every frame)")
        }
        return Planned(text: text, options: x11, warnings: warnings)
    }

    struct Planned: PlannedSource {
        let text: String
        let options: X11Options
        let warnings: [String]
        var realtime: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { options.region.map { "\($0.width)x\($0.height) bgra (the region)" } ?? "the screen's size, bgra" }
        var dryRunLines: [String] {
            let x = options
            return [
                "x11: display=\(x.display ?? "$DISPLAY") region=\(x.region?.description ?? "whole screen") cursor=\(x.drawCursor ? "on" : "off")",
                "capture: \(x.captureMode.rawValue)" + (x.captureMode == .damage ? " idle-fps=\(x.idleRate > 0 ? short(x.idleRate) : "0 (no keep-alive)")" : ""),
            ]
        }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try X11Source(options: options, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "X11 " + ((source as? X11Source)?.captureDescription ?? "screen \(source.width)x\(source.height)") + " at \(rate) fps"
        }

        /// No display 69, a region off the screen 64.
        func commandError(for error: any Error) -> CommandError? {
            guard let error = error as? X11Error else { return nil }
            if error.isBadRegion { return .usage(error.description) }
            if error.isUnavailable { return .unavailable(error.description) }
            switch error {
            case .unsupportedPixelFormat: return .unavailable(error.description)
            default: return .io(error.description)
            }
        }
    }
}
