#if canImport(Glibc)
import Glibc
#endif
import CommandOptions

/// nalcast: capture, encode and relay live H.264 between processes. docs/architecture.md has the picture.
enum Nalcast {
    static let version = "0.1.0"
    /// Computed: an array of metatypes is not `Sendable`, so it cannot be a stored global.
    static var commands: [any Command.Type] { [ProduceCommand.self, ProbeCommand.self, InspectCommand.self, ConsumeCommand.self] }
}

func topLevelHelp() -> String {
    var lines = [
        "usage: nalcast COMMAND [OPTIONS]",
        "",
        "Move live H.264 video between processes: capture and encode it, serve it to many",
        "readers on a local socket, record it to crash-safe segments, forward it.",
        "",
        "commands:",
    ]
    for c in Nalcast.commands { lines.append("  " + c.name.padded(10) + c.summary) }
    lines += ["", "'nalcast help COMMAND' (or 'nalcast COMMAND --help') lists a command's options.",
              "nalcast --version prints the version and the libraries it was built against and runs with.",
              "nalcast man prints the manual page; nalcast completions bash|zsh|fish the shell's completions."]
    return lines.joined(separator: "\n") + "\n"
}

func runMain() -> Int32 {
    var args = Array(CommandLine.arguments.dropFirst())
    guard let first = args.first else {
        printErr(topLevelHelp())
        return ExitCode.usage.rawValue
    }
    args.removeFirst()
    switch first {
    case "--help", "-h", "help":
        // `nalcast help produce` is `nalcast produce --help`.
        if first == "help", let topic = args.first {
            guard let command = Nalcast.commands.first(where: { $0.name == topic }) else {
                printError("help: unknown command '\(topic)' (commands: \(Nalcast.commands.map { $0.name }.joined(separator: ", ")))")
                return ExitCode.usage.rawValue
            }
            printOut(command.helpText())
            return 0
        }
        printOut(topLevelHelp())
        return 0
    case "--version", "-V", "version":
        printOut(VersionReport.text())
        return 0
    case "man":
        return ManPage.main(args)
    case "completions":
        return Completions.main(args)
    default:
        guard let command = Nalcast.commands.first(where: { $0.name == first }) else {
            printError("unknown command '\(first)' (see 'nalcast --help')")
            return ExitCode.usage.rawValue
        }
        do {
            return try command.main(args).rawValue
        } catch let error as CommandError {
            printError(error.message)
            return error.code.rawValue
        } catch {
            printError("\(error)")
            return ExitCode.software.rawValue
        }
    }
}

signal(SIGPIPE, SIG_IGN)
// A file over RLIMIT_FSIZE (`ulimit -f`) must fail its write with EFBIG, not kill the process.
signal(SIGXFSZ, SIG_IGN)
exit(runMain())
