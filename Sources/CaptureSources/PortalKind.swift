import Capture
import CommandOptions
import PipeWireCapture

/// `--source portal`: the screen (or a window) the desktop's ScreenCast portal grants, read
/// from PipeWire on change; the user's choice remembered with the portal's restore token.
public enum PortalKind: SourceKind {
    public static let forms = [SourceForm(text: "portal")]
    public static let optionOwner = "portal"
    public static let specs = [
        OptionSpec(name: "portal-token", value: "FILE", help: "portal: where the desktop's restore token is kept, so that it asks which screen once (none: ask every time)",
                   defaultText: "$XDG_STATE_HOME/nalcast/portal-token"),
        OptionSpec(name: "portal-sources", value: "KIND", help: "portal: what the user may pick: monitor, window or any", defaultText: "monitor"),
    ]
    /// The pointer and the keep-alive mean what they mean for x11.
    public static let reads = ["cursor", "idle-fps"]
    public static let notes = [
        "  portal             the screen the desktop grants (xdg-desktop-portal's ScreenCast: GNOME, KDE, wlroots),",
        "                     read from PipeWire on change (--portal-token, --portal-sources, --cursor, --idle-fps)",
    ]

    public static func takes(_ text: String) -> Bool { text == "portal" }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        try Planned(text: text, options: options(o, fps: fps))
    }

    static func options(_ o: ParsedOptions, fps: FrameRate) throws -> PortalOptions {
        var portal = PortalOptions(frameRate: fps, idleRate: try idleRate(o))
        portal.drawCursor = !o.isOff("cursor")
        portal.sources = try o.value("portal-sources", default: .monitor, expected: "expected monitor, window or any") { PortalOptions.Sources(rawValue: $0) }
        let token = o.string("portal-token")
        portal.tokenFile = token == "none" ? nil : token ?? PortalOptions.defaultTokenFile
        return portal
    }

    struct Planned: PlannedSource {
        let text: String
        let options: PortalOptions
        var realtime: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { "the size of what the user shares, bgra, rgba or argb" }
        var dryRunLines: [String] {
            ["portal: sources=\(options.sources.rawValue) cursor=\(options.drawCursor ? "metadata (embedded where not offered)" : "hidden") token=\(options.tokenFile ?? "none (ask every time)")",
             "capture: on change idle-fps=\(options.idleRate > 0 ? short(options.idleRate) : "0 (no keep-alive)")"]
        }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try makePortalSource(options, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String { describePortal(source, rate: rate) }

        func commandError(for error: any Error) -> CommandError? { portalCommandError(error) }
    }
}

func makePortalSource(_ options: PortalOptions, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
    log("portal: asking the desktop for a \(options.sources == .any ? "screen or window" : options.sources.rawValue) to share (it may ask you)")
    let portal = try ScreenCastPortal(options)
    let pipewire = PipeWireOptions(node: String(portal.node), remoteFD: portal.remoteFD, frameRate: options.frameRate,
                                   idleRate: options.idleRate, label: "portal", drawCursor: portal.cursorMode == 4)
    return try PipeWireSource(options: pipewire, keeping: portal, log: log)
}

func describePortal(_ source: any FrameSource, rate: String) -> String {
    guard let source = source as? PipeWireSource, let portal = source.owner as? ScreenCastPortal else { return "portal \(source.width)x\(source.height)" }
    return "the screen the portal granted: PipeWire \(source.captureDescription) at most \(rate) fps (\(portal.tokenNote))"
}

/// Not there or refused 69; a failed exchange 69 too (the desktop's side).
func portalCommandError(_ error: any Error) -> CommandError? {
    if let error = error as? PortalError { return .unavailable(error.description) }
    return pipeWireCommandError(error)
}
