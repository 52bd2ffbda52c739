import Capture
import CommandOptions
#if canImport(Glibc)
import Glibc
#endif

/// One kind of frame source that `produce --source` can name. Each kind says everything about
/// itself here, once: how `--source` names it, its own options and their place in `--help`,
/// how it reads them, its `--dry-run` lines, how its source is made and how its errors map to
/// exit codes. `produce` walks `SourceKinds.all`; adding a source is a file with its kind and
/// one line in that list.
public protocol SourceKind {
    /// How `--source` names it, in `--help` and in the error for a name no kind takes.
    static var forms: [SourceForm] { get }
    /// Its options, in `--help` order; given with another source they are warned about.
    static var specs: [OptionSpec] { get }
    /// How the warning about these options names the source they are for (`raw:PATH`).
    static var optionOwner: String { get }
    /// Its lines under "sources:" in `--help`.
    static var notes: [String] { get }
    /// A paragraph of its own after the list of sources (empty: none).
    static var paragraph: [String] { get }
    /// Options of other kinds it reads too (with the same meaning), so not warned about.
    static var reads: [String] { get }
    /// True when `--source TEXT` names this kind.
    static func takes(_ text: String) -> Bool
    /// Reads what `--source TEXT` and the kind's options ask for; usage errors name the option.
    static func plan(_ text: String, _ options: ParsedOptions, fps: FrameRate) throws -> any PlannedSource
}

extension SourceKind {
    public static var paragraph: [String] { [] }
    public static var reads: [String] { [] }
}

/// A `--source` form: `x11:DISPLAY`, with an example the error for an unknown name gives.
public struct SourceForm: Sendable {
    public let text: String
    public var example: String? = nil

    public init(text: String, example: String? = nil) {
        self.text = text
        self.example = example
    }
}

/// A source as `produce` will open it: what its kind read from the options.
public protocol PlannedSource: Sendable {
    /// `--source` as given.
    var text: String { get }
    /// Paced in real time (a file source with `--realtime`; always for live ones).
    var realtime: Bool { get }
    /// Reads its frames from stdin (then `--audio` may not).
    var readsStdin: Bool { get }
    /// Takes `--flash` (a white frame at each whole second, a sync reference for sound).
    var takesFlash: Bool { get }
    /// The frame as the source delivers it, when known before capture starts; else a note.
    var frame: (width: Int, height: Int, format: PixelFormat)? { get }
    var frameNote: String? { get }
    /// Warnings about settings it ignores, beyond the options of other kinds.
    var warnings: [String] { get }
    /// Its own `--dry-run` lines, after the frame's.
    var dryRunLines: [String] { get }
    /// Whether `--dry-run` opens it to learn the frame (a Y4M header).
    var dryRunOpens: Bool { get }
    /// Opens the source. Errors are mapped by `commandError(for:)`.
    func make(_ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource
    /// `test pattern 640x360 at 30 fps`: what `produce` says it captures.
    func describe(_ source: any FrameSource, rate: String) -> String
    /// The exit code and line for an error of its own (nil: not one of its errors).
    func commandError(for error: any Error) -> CommandError?
}

extension PlannedSource {
    public var readsStdin: Bool { false }
    public var takesFlash: Bool { false }
    public var frameNote: String? { nil }
    public var warnings: [String] { [] }
    public var dryRunLines: [String] { [] }
    public var dryRunOpens: Bool { false }
    public func commandError(for error: any Error) -> CommandError? { nil }
}

/// What a source is made with besides its own options.
public struct SourceSettings: Sendable {
    /// `--fps`, when given (the test pattern's rate).
    public var frameRate: FrameRate?
    /// `--flash`, or the tone of `--audio tone`.
    public var flash: Bool

    public init(frameRate: FrameRate?, flash: Bool) {
        self.frameRate = frameRate
        self.flash = flash
    }
}

/// Every kind of source, in `--help` order.
public enum SourceKinds {
    /// Computed: an array of metatypes is not `Sendable`, so it cannot be a stored global.
    public static var all: [any SourceKind.Type] { [TestPatternKind.self, Y4MKind.self, RawKind.self, X11Kind.self, PipeWireKind.self, PortalKind.self, WlrKind.self, ScreenKind.self] }

    /// `--source`'s own option.
    public static var sourceSpec: OptionSpec {
        OptionSpec(name: "source", value: "SRC", help: all.flatMap { $0.forms }.map(\.text).joined(separator: ", ") + " (see below)", defaultText: "testsrc")
    }

    /// The options of every kind, after `--source`.
    public static var specs: [OptionSpec] { all.flatMap { $0.specs } }

    /// "sources:" and each kind's lines, then the kinds' paragraphs.
    public static var notes: [String] {
        ["sources:"] + all.flatMap { $0.notes } + [""] + all.flatMap { $0.paragraph.isEmpty ? [] : $0.paragraph + [""] }
    }

    /// The planned source `--source TEXT` names, and the warnings for the options of other
    /// kinds that were given anyway.
    public static func plan(_ text: String, _ o: ParsedOptions, fps: FrameRate) throws -> (source: any PlannedSource, warnings: [String]) {
        guard let kind = all.first(where: { $0.takes(text) }) else {
            let forms = all.flatMap { $0.forms }.map { form in form.text + (form.example.map { " (e.g. \($0))" } ?? "") }
            throw CommandError.usage("--source \(text): expected \(forms.dropLast().joined(separator: ", ")) or \(forms.last!)")
        }
        let source = try kind.plan(text, o, fps: fps)
        var owners: [String: String] = [:]
        for other in all { for spec in other.specs { owners[spec.name] = other.optionOwner } }
        let used = Set(kind.specs.map(\.name) + kind.reads)
        var warnings: [String] = []
        for (name, owner) in owners.sorted(by: { $0.key < $1.key }) where !used.contains(name) && o.sources[name] != nil {
            let given = o.values[name] != nil ? o.label(name) : (o.sources[name] == "command line" ? "--\(name)" : "\(o.sources[name]!)")
            warnings.append("produce: warning: \(given.trimmed) is ignored: it is for --source \(owner), not \(text)")
        }
        return (source, warnings + source.warnings)
    }
}

/// Makes the frame source a plan asks for, mapping its errors to exit codes.
public func makeSource(_ source: any PlannedSource, _ settings: SourceSettings, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
    do {
        return try source.make(settings, log: log)
    } catch let error as CommandError {
        throw error
    } catch CaptureError.system(let function, _, let code) where function == "open" {
        // Name the option and the path, not the system call.
        throw CommandError(code: code == ENOENT || code == EACCES || code == EISDIR || code == ENOTDIR ? .noInput : .ioError,
                           message: "--source \(source.text): \(describeOpenError(code))")
    } catch {
        throw commandError(error, of: source)
    }
}

/// The exit code and line for an error a source raised, opening or capturing.
public func commandError(_ error: any Error, of source: any PlannedSource) -> CommandError {
    if let mapped = source.commandError(for: error) { return mapped }
    if let captureError = error as? CaptureError { return commandError(captureError) }
    return CommandError(code: .software, message: "\(error)")
}

/// Exit codes for capture errors: bad options 64, bad input data 65, missing input 66.
public func commandError(_ error: CaptureError) -> CommandError {
    switch error {
    case .oddSize, .badSize: return .usage(error.description)
    case .system(_, let path, let code) where code == ENOENT || code == EACCES || code == EISDIR: return .noInput("\(path): \(describeOpenError(code))")
    case .system(let function, let path, let code): return .io("\(path): \(function == "read" ? "reading" : function): \(String(cString: strerror(code)))")
    case .conversion: return CommandError(code: .software, message: error.description)
    default: return CommandError(code: .dataError, message: error.description)
    }
}
