import CommandOptions
import IO
#if canImport(Glibc)
import Glibc
#endif

/// A subcommand: its options, its help text, and what it does.
protocol Command {
    static var name: String { get }
    static var summary: String { get }
    static var usage: String { get }
    static var specs: [OptionSpec] { get }
    /// Lines printed under the options in `--help`: arguments, value forms.
    static var notes: [String] { get }
    /// A command line that sets some of this command's options in the environment
    /// (`NALCAST_LISTEN=tcp://0.0.0.0:7264 NALCAST_ALLOW_REMOTE=1 nalcast produce`).
    static var environmentExample: String { get }
    /// What the command's arguments after the options are (probe's ADDR, inspect's FILE):
    /// what a shell completes there; nil for none.
    static var operand: ValueKind? { get }
    /// The notes as the man page gives them under the command: `notes` without what has a
    /// section of its own there (produce's sources and audio sources).
    static var manNotes: [String] { get }
    /// Runs with parsed options; returns the exit code.
    static func run(_ options: ParsedOptions) throws -> ExitCode
}

/// Options every command has.
let commonSpecs: [OptionSpec] = [
    OptionSpec(name: "help", value: nil, help: "show this help and exit", short: "h"),
]

/// `NALCAST_*` variables that are not options but are nalcast's all the same: the
/// environment `consume --on-segment` gives its command, and the test and fuzz scripts' own.
let reservedEnvironmentPrefixes = ["NALCAST_SEGMENT_PATH", "NALCAST_SEGMENT_FRAMES", "NALCAST_SEGMENT_BYTES",
                                   "NALCAST_BINARY", "NALCAST_LONG_TESTS", "NALCAST_FUZZ_",
                                   SRTSecretChoice.environmentName]

extension Command {
    static var notes: [String] { [] }
    static var operand: ValueKind? { nil }
    static var manNotes: [String] { notes }
    static var allSpecs: [OptionSpec] { specs + commonSpecs }

    static func helpText() -> String {
        var lines = ["usage: \(usage)", "", summary, "", "options:"]
        for spec in allSpecs {
            var left = "  "
            if let s = spec.short { left += "-\(s), " }
            left += "--\(spec.name)"
            if let v = spec.value { left += " \(v)" }
            var right = spec.help
            if let d = spec.defaultText { right += " (default: \(d))" }
            if left.count < 30 {
                lines.append(left.padded(30) + right)
            } else {
                lines.append(left)
                lines.append(String(repeating: " ", count: 30) + right)
            }
        }
        if !notes.isEmpty {
            lines.append("")
            lines += notes
        }
        lines.append("")
        lines.append("Every option can also be set as NALCAST_<OPTION> in the environment (1 or 0 for")
        lines.append("a flag); options on the command line win. For example:")
        lines.append("  " + environmentExample)
        return lines.joined(separator: "\n") + "\n"
    }

    static func main(_ arguments: [String]) throws -> ExitCode {
        let environment = processEnvironment()
        let options = try ParsedOptions.parse(arguments, specs: allSpecs, environment: environment, command: name)
        if options.has("help") {
            printOut(helpText())
            return .ok
        }
        if !options.has("quiet") {
            for line in unknownEnvironmentWarnings(environment) { printError(line) }
        }
        return try run(options)
    }

    /// One warning per `NALCAST_*` variable that is no option of any command: a typo
    /// would otherwise be ignored without a word. Another command's option is fine (one
    /// environment file can serve a producer and a consumer).
    static func unknownEnvironmentWarnings(_ environment: [String: String]) -> [String] {
        let known = Nalcast.commands.flatMap { $0.allSpecs.map(\.environmentName) }
        let own = allSpecs.map(\.environmentName)
        var out: [String] = []
        for key in environment.keys.sorted() where key.hasPrefix("NALCAST_") && !known.contains(key) {
            if reservedEnvironmentPrefixes.contains(where: { key.hasPrefix($0) }) { continue }
            let closest = own.min { editDistance(key, $0) < editDistance(key, $1) }
            let hint = closest.flatMap { editDistance(key, $0) <= 3 ? " (did you mean \($0)?)" : nil } ?? ""
            out.append("\(name): warning: \(key) is not a nalcast option; ignored\(hint)")
        }
        return out
    }
}

/// Reads a file or stdin in large chunks with read(2): each chunk is a new array, so the
/// NAL units cut from it can keep sharing it after the next read.
struct InputFile {
    let fd: Int32
    let name: String
    private let owned: Bool

    init(path: String) throws {
        if path == "-" {
            fd = 0
            name = "stdin"
            owned = false
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw CommandError.noInput("\(path): \(describeOpenError(errno))") }
            var st = stat()
            if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
                Glibc.close(fd)
                throw CommandError.noInput("\(path): is a directory")
            }
            name = path
            owned = true
        }
    }

    /// The next chunk; empty at the end of input.
    func read(upTo size: Int = 256 << 10) throws -> [UInt8] {
        var failure: Errno?
        let chunk = [UInt8](unsafeUninitializedCapacity: size) { buf, count in
            do throws(Errno) {
                count = try systemCall("read", badDescriptorIsBug: false) { Glibc.read(fd, buf.baseAddress, size) }
            } catch {
                count = 0
                failure = error
            }
        }
        if let failure { throw CommandError.io("reading \(name): \(String(cString: strerror(failure.code)))") }
        return chunk
    }

    func close() { if owned { Glibc.close(fd) } }
}

/// Buffered writes to stdout (one write(2) per 64 KiB, not per line).
struct OutputBuffer {
    private var text = ""
    mutating func line(_ s: String) {
        text += s
        text += "\n"
        if text.utf8.count >= 1 << 16 { flush() }
    }
    mutating func flush() {
        guard !text.isEmpty else { return }
        printOut(text)
        text = ""
    }
}
