/// What every shell's completion is made of: the commands, their options, what each
/// option's value is completed with, and the arguments after the options.
public struct CompletionModel: Sendable {
    public struct Command: Sendable {
        let name: String
        let summary: String
        let options: [Option]
        /// What follows the options (inspect's FILE, help's COMMAND): nil for nothing.
        let operand: Value?

        public init(name: String, summary: String, options: [Option], operand: Value?) {
            self.name = name
            self.summary = summary
            self.options = options
            self.operand = operand
        }
    }

    public struct Option: Sendable {
        let name: String
        let short: Character?
        /// The first clause of its help: what a shell shows beside it.
        let description: String
        let placeholder: String?
        /// nil for a flag.
        let value: Value?
        let repeatable: Bool
        /// A flag that `--no-NAME` turns off where it is on by default (`--no-realtime`).
        let negatable: Bool

        public init(name: String, short: Character?, description: String, placeholder: String?, value: Value?, repeatable: Bool,
                    negatable: Bool) {
            self.name = name
            self.short = short
            self.description = description
            self.placeholder = placeholder
            self.value = value
            self.repeatable = repeatable
            self.negatable = negatable
        }
    }

    /// How a value is completed.
    public enum Value: Equatable, Sendable {
        /// Nothing to offer (a number, a duration, an address).
        case any
        case files
        case directories
        /// A program (`--on-segment CMD`).
        case programs
        case words([String])
        /// Whole words and prefixes completed further (`x11:` and the X displays).
        case forms([Form])
    }

    /// One form of a value: `testsrc` (a word), or `x11:` followed by what `rest` completes.
    public struct Form: Equatable, Sendable {
        let prefix: String
        /// nil: a whole word.
        let rest: Rest?
    }

    /// What follows a form's prefix.
    public enum Rest: String, Equatable, Sendable {
        case files
        /// The X displays of this machine (their sockets in /tmp/.X11-unix).
        case displays
        /// PulseAudio's sources, from `pactl list short sources` when it is installed.
        case pulseSources = "pulse-sources"
        /// Nothing to offer.
        case none
    }

    public let commands: [Command]
    /// The options of the top level (`--help`, `--version`).
    public let topOptions: [Option]

    public init(commands: [Command], topOptions: [Option]) {
        self.commands = commands
        self.topOptions = topOptions
    }

    public static func option(_ spec: OptionSpec) -> Option {
        Option(name: spec.name, short: spec.short, description: description(spec.help), placeholder: spec.value,
               value: spec.takesValue ? value(of: spec) : nil, repeatable: spec.repeatable,
               negatable: !spec.takesValue && spec.help.contains("--no-\(spec.name)"))
    }

    public static func value(of spec: OptionSpec) -> Value {
        let words = spec.completionValues
        // A URL to push to is no file; a SOURCE to read from may be one.
        if spec.value == "URL" { return .any }
        guard !words.isEmpty else { return value(of: spec.valueKind) }
        guard words.contains(where: { $0.contains(":") }) else { return .words(words) }
        return .forms(words.map(form))
    }

    public static func value(of kind: ValueKind) -> Value {
        switch kind {
        case .file, .location: .files
        case .directory: .directories
        case .command: .programs
        case .choice(let words): .words(words)
        case .flag, .address, .duration, .number, .text: .any
        }
    }

    /// `x11:DISPLAY` → the prefix `x11:` and the displays; `testsrc` → a word.
    static func form(_ text: String) -> Form {
        guard let colon = text.firstIndex(of: ":") else { return Form(prefix: text, rest: nil) }
        let prefix = String(text[...colon])
        let placeholder = text[text.index(after: colon)...]
        let rest: Rest
        switch placeholder {
        case "PATH", "FILE": rest = .files
        case "DISPLAY": rest = .displays
        case "NAME" where prefix == "pulse:": rest = .pulseSources
        default: rest = .none
        }
        return Form(prefix: prefix, rest: rest)
    }

    /// The help up to its first `;` or parenthesis, at most about 70 characters: what fits
    /// beside an option in a shell's menu.
    static func description(_ help: String) -> String {
        var text = Substring(help)
        for stop in ["; ", " (", ": "] where text.contains(stop) {
            if let r = text.firstRange(of: stop), text.distance(from: text.startIndex, to: r.lowerBound) >= 12 { text = text[..<r.lowerBound] }
        }
        guard text.count > 72 else { return String(text) }
        var cut = text.prefix(69)
        if let space = cut.lastIndex(of: " ") { cut = cut[..<space] }
        return cut + "..."
    }
}

extension CompletionModel.Value {
    /// The form's prefixes: the words offered as they are (`testsrc`) and the prefixes
    /// completed further (`x11:`).
    var formWords: [String] {
        guard case .forms(let forms) = self else { return [] }
        return forms.map(\.prefix)
    }
}
