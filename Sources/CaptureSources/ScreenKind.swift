import Capture
import CommandOptions
#if canImport(Glibc)
import Glibc
#endif

/// `--source screen`: the screen in front of the user, however it is reached: the ScreenCast
/// portal on Wayland (`WAYLAND_DISPLAY` set) or without X11 (`DISPLAY` unset), X11 otherwise.
public enum ScreenKind: SourceKind {
    public static let forms = [SourceForm(text: "screen")]
    public static let optionOwner = "screen"
    public static let specs: [OptionSpec] = []
    public static var reads: [String] { X11Kind.specs.map(\.name) + PortalKind.specs.map(\.name) }
    public static let notes = [
        "  screen             the portal when WAYLAND_DISPLAY is set or DISPLAY is not, else x11 (the first line says which)",
    ]

    public static func takes(_ text: String) -> Bool { text == "screen" }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        let wayland = getenv("WAYLAND_DISPLAY").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let x11 = getenv("DISPLAY").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        if let wayland {
            return Planned(inner: try PortalKind.plan("portal", o, fps: fps), why: "WAYLAND_DISPLAY=\(wayland): the ScreenCast portal")
        }
        if x11 == nil {
            return Planned(inner: try PortalKind.plan("portal", o, fps: fps), why: "no DISPLAY: the ScreenCast portal")
        }
        return Planned(inner: try X11Kind.plan("x11", o, fps: fps), why: "DISPLAY=\(x11!), no WAYLAND_DISPLAY: x11")
    }

    /// The kind chosen, and why, in the first line and the dry run.
    struct Planned: PlannedSource {
        let inner: any PlannedSource
        let why: String
        var text: String { "screen" }
        var realtime: Bool { inner.realtime }
        var frame: (width: Int, height: Int, format: PixelFormat)? { inner.frame }
        var frameNote: String? { inner.frameNote }
        var warnings: [String] { inner.warnings }
        var dryRunLines: [String] { ["screen: \(why)"] + inner.dryRunLines }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try inner.make(settings, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "screen (\(why)): " + inner.describe(source, rate: rate)
        }

        func commandError(for error: any Error) -> CommandError? { inner.commandError(for: error) }
    }
}
