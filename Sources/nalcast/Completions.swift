import CommandOptions

/// `nalcast completions bash|zsh|fish`: the shell completions, made from the option tables
/// the parser and `--help` read, so that they offer what this binary takes and nothing else.
enum Completions {
    static let shells = ["bash", "zsh", "fish"]

    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 1, let shell = arguments.first, shells.contains(shell) else {
            let given = arguments.isEmpty ? "name a shell" : "unknown shell '\(printable(arguments.joined(separator: " ")))'"
            printError("completions: \(given): expected bash, zsh or fish (e.g. nalcast completions bash > /etc/bash_completion.d/nalcast)")
            return ExitCode.usage.rawValue
        }
        let model = CompletionModel.current
        switch shell {
        case "bash": printOut(BashCompletion.script(model))
        case "zsh": printOut(ZshCompletion.script(model))
        default: printOut(FishCompletion.script(model))
        }
        return 0
    }
}

extension CompletionModel {
    /// nalcast's commands and the words of the top level (`help`, `man`, `completions`).
    static var current: CompletionModel {
        var commands = Nalcast.commands.map { c in
            Command(name: c.name, summary: c.summary, options: c.allSpecs.map(option), operand: c.operand.map(value(of:)))
        }
        commands += [
            Command(name: "help", summary: "List the commands, or a command's options.", options: [], operand: .words(Nalcast.commands.map { $0.name })),
            Command(name: "man", summary: "Print the manual page (roff).", options: [], operand: nil),
            Command(name: "completions", summary: "Print the completions of a shell: bash, zsh or fish.", options: [], operand: .words(Completions.shells)),
        ]
        return CompletionModel(commands: commands, topOptions: nalcastOptions)
    }

    /// The options of the top level.
    static let nalcastOptions = [
        Option(name: "help", short: "h", description: "show the commands and exit", placeholder: nil, value: nil, repeatable: false, negatable: false),
        Option(name: "version", short: "V", description: "print the version and the libraries built against and running", placeholder: nil, value: nil, repeatable: false, negatable: false),
    ]
}
