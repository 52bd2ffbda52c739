import Capture
import CommandOptions
import PipeWireCapture

/// `--source pipewire:NODE`: a PipeWire video node (a screen cast, a camera, another
/// program's stream) by id, serial or name, taken on change (`PipeWireCapture`).
public enum PipeWireKind: SourceKind {
    public static let forms = [SourceForm(text: "pipewire:NODE", example: "pipewire:42")]
    public static let optionOwner = "pipewire:NODE"
    public static let specs: [OptionSpec] = []
    /// `--idle-fps` (X11's keep-alive) and `--cursor` (the pointer, from the node's cursor
    /// metadata) mean the same here.
    public static let reads = ["cursor", "idle-fps"]
    public static let notes = [
        "  pipewire:NODE      a PipeWire video node by id, serial or name (pw-cli ls Node), on change (--cursor, --idle-fps)",
    ]

    public static func takes(_ text: String) -> Bool { text.hasPrefix("pipewire:") }

    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> any PlannedSource {
        let node = String(text.dropFirst("pipewire:".count))
        guard !node.isEmpty else { throw CommandError.usage("--source pipewire: needs a node id or name (pw-cli ls Node lists them)") }
        let options = PipeWireOptions(node: node, frameRate: fps, idleRate: try idleRate(o), drawCursor: !o.isOff("cursor"))
        return Planned(text: text, options: options)
    }

    struct Planned: PlannedSource {
        let text: String
        let options: PipeWireOptions
        var realtime: Bool { true }
        var frame: (width: Int, height: Int, format: PixelFormat)? { nil }
        var frameNote: String? { "the node's size, bgra, rgba or argb (BGRx, RGBx or xRGB)" }
        var dryRunLines: [String] {
            ["pipewire: node=\(options.node) cursor=\(options.drawCursor ? "from metadata" : "off") capture: on change idle-fps=\(options.idleRate > 0 ? short(options.idleRate) : "0 (no keep-alive)")"]
        }

        func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
            try PipeWireSource(options: options, log: log)
        }

        func describe(_ source: any FrameSource, rate: String) -> String {
            "PipeWire " + ((source as? PipeWireSource)?.captureDescription ?? "\(source.width)x\(source.height)") + " at most \(rate) fps"
        }

        func commandError(for error: any Error) -> CommandError? { pipeWireCommandError(error) }
    }
}

/// No such node 66; PipeWire not there, or nothing readable from the node, 69.
func pipeWireCommandError(_ error: any Error) -> CommandError? {
    guard let error = error as? PipeWireError else { return nil }
    if case .noSuchNode = error { return .noInput(error.description) }
    return .unavailable(error.description)
}

/// `--idle-fps`, read the same way for every source captured on change.
func idleRate(_ o: ParsedOptions) throws -> Double {
    try o.value("idle-fps", default: 1, expected: "expected a rate of at least 0.01 a second, or 0 (e.g. 1, 0.5)") {
        Double($0).flatMap { $0 == 0 || ($0 >= 0.01 && $0 <= 1000) ? $0 : nil }
    }
}
