/// Parsed options. Every value is still text: the `value(...)` accessors convert it and
/// throw a usage error naming the option.
public struct ParsedOptions: Sendable {
    public init() {}

    public private(set) var values: [String: String] = [:]
    public private(set) var flags: Set<String> = []
    /// Where each value came from, for `--dry-run` and error messages.
    public private(set) var sources: [String: String] = [:]
    public private(set) var positionals: [String] = []
    /// Every value of a repeatable option, in order.
    public private(set) var lists: [String: [String]] = [:]

    public func has(_ flag: String) -> Bool { flags.contains(flag) }
    public func string(_ name: String) -> String? { values[name] }
    /// All the values of a repeatable option (the environment's one when none was given).
    public func strings(_ name: String) -> [String] { lists[name] ?? values[name].map { [$0] } ?? [] }

    /// The option and its value as the user gave them, for messages: `--keyint 60`, or
    /// `NALCAST_KEYINT=60` when the environment gave it.
    public func label(_ name: String) -> String {
        let text = values[name] ?? ""
        if let source = sources[name], source != "command line" { return "\(source)=\(text)" }
        return "--\(name) \(text)"
    }

    /// A usage error about an option's value: `--preset warp: expected one of ...`.
    public func invalid(_ name: String, _ reason: String) -> CommandError {
        .usage("\(label(name)): \(reason)")
    }

    /// Converts an option's value, or returns nil when it is not set. `expected` says what
    /// would have been accepted.
    public func value<T>(_ name: String, expected: String = "invalid value", _ convert: (String) -> T?) throws -> T? {
        guard let text = values[name] else { return nil }
        guard let result = convert(text) else { throw invalid(name, expected) }
        return result
    }

    public func value<T>(_ name: String, default fallback: T, expected: String = "invalid value", _ convert: (String) -> T?) throws -> T {
        try value(name, expected: expected, convert) ?? fallback
    }

    /// A duration option in seconds: `500ms`, `5s`, `2m`, `1h` (`0` alone needs no unit).
    /// A bare number is refused with the fix (`--duration 10: add a unit: 10s, 500ms, 2m`),
    /// unless `bareUnit` gives one (probe's `--seconds`, whose name is its unit).
    public func duration(_ name: String, minimum: Double = 0, above: Bool = false, bareUnit: Double? = nil) throws -> Double? {
        guard let text = values[name] else { return nil }
        let seconds: Double
        switch ValueFormat.duration(text) {
        case .seconds(let s): seconds = s
        case .bare(let n):
            guard let bareUnit else { throw invalid(name, "add a unit: \(text.trimmed)s, 500ms, 2m") }
            seconds = n * bareUnit
        case .invalid: throw invalid(name, "expected a duration such as 500ms, 10s, 2m or 1h")
        }
        // Past 30 years it is a typo, and nanoseconds would overflow.
        guard seconds < 1e9 else { throw invalid(name, "too long") }
        if above ? seconds <= minimum : seconds < minimum {
            throw invalid(name, above ? "must be more than \(short(minimum)) s" : "must be at least \(short(minimum)) s")
        }
        return seconds
    }

    public func duration(_ name: String, default fallback: Double, minimum: Double = 0, above: Bool = false, bareUnit: Double? = nil) throws -> Double {
        try duration(name, minimum: minimum, above: above, bareUnit: bareUnit) ?? fallback
    }

    /// Parses `arguments` against `specs`; values from `environment` fill in what the
    /// arguments do not give (flags and options on the command line win).
    public static func parse(_ arguments: [String], specs: [OptionSpec], environment: [String: String], command: String) throws -> ParsedOptions {
        var out = ParsedOptions()
        let table = Table(specs: specs, command: command)
        var rest = arguments[...]
        var onlyPositionals = false
        while let arg = rest.popFirst() {
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                out.positionals.append(arg)
            } else if arg == "--" {
                onlyPositionals = true
            } else {
                switch try table.lookUp(arg) {
                case .turnOff(let spec): out.turnOff(spec.name)
                case .option(let spec, var inlineValue):
                    if spec.takesValue && inlineValue == nil {
                        guard let next = rest.popFirst() else { throw CommandError.usage("\(command): option '--\(spec.name)' needs a value (\(spec.value!))") }
                        inlineValue = next
                    }
                    try out.take(spec, inlineValue, command: command)
                }
            }
        }
        try out.fillIn(specs, from: environment)
        return out
    }

    /// The options by long and short name, and what an argument names.
    private struct Table {
        let byName: [String: OptionSpec]
        let byShort: [Character: OptionSpec]
        let command: String

        init(specs: [OptionSpec], command: String) {
            byName = Dictionary(uniqueKeysWithValues: specs.map { ($0.name, $0) })
            byShort = Dictionary(uniqueKeysWithValues: specs.compactMap { s in s.short.map { ($0, s) } })
            self.command = command
        }

        enum Found {
            /// The option, and its value when the argument carries it (`--name=value`, `-oFILE`).
            case option(OptionSpec, String?)
            /// `--no-FLAG`: the flag turned off, also one set in the environment.
            case turnOff(OptionSpec)
        }

        func lookUp(_ arg: String) throws -> Found {
            guard arg.hasPrefix("--") else {
                let letters = arg.dropFirst()
                guard letters.count >= 1, let s = byShort[letters.first!] else {
                    throw CommandError.usage("\(command): unknown option '\(arg)' (see 'nalcast \(command) --help')")
                }
                return .option(s, letters.count > 1 ? String(letters.dropFirst()) : nil)
            }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if let s = byName[name] { return .option(s, inlineValue) }
            if name.hasPrefix("no-"), let s = byName[String(name.dropFirst(3))], !s.takesValue, inlineValue == nil { return .turnOff(s) }
            throw CommandError.usage("\(command): unknown option '--\(name)' (see 'nalcast \(command) --help')")
        }
    }

    /// A flag off on the command line (`--no-FLAG`, `--FLAG=0`), whatever the environment says.
    private mutating func turnOff(_ name: String) {
        flags.remove(name)
        values["no-" + name] = "1"
        sources[name] = "command line"
    }

    /// An option given on the command line, with its value (nil for a flag given alone).
    private mutating func take(_ spec: OptionSpec, _ value: String?, command: String) throws {
        if spec.takesValue, let value {
            values[spec.name] = value
            if spec.repeatable { lists[spec.name, default: []].append(value) }
        } else if let value {
            if ["0", "false", "no", "off"].contains(value.lowercased()) { return turnOff(spec.name) }
            guard ["1", "true", "yes", "on"].contains(value.lowercased()) else { throw CommandError.usage("\(command): option '--\(spec.name)' takes no value") }
            flags.insert(spec.name)
        } else {
            flags.insert(spec.name)
        }
        sources[spec.name] = "command line"
    }

    /// The environment fills in what the command line left unset.
    private mutating func fillIn(_ specs: [OptionSpec], from environment: [String: String]) throws {
        for spec in specs where sources[spec.name] == nil {
            guard let text = environment[spec.environmentName] else { continue }
            if spec.takesValue {
                values[spec.name] = text
            } else {
                switch text.lowercased() {
                case "1", "true", "yes", "on": flags.insert(spec.name)
                case "0", "false", "no", "off", "": values["no-" + spec.name] = "1"
                default: throw CommandError.usage("invalid value '\(text)' for \(spec.environmentName) (expected 1 or 0)")
                }
            }
            sources[spec.name] = spec.environmentName
        }
    }

    /// True when a flag was turned off explicitly (`--no-realtime`, `NALCAST_REALTIME=0`).
    public func isOff(_ flag: String) -> Bool { values["no-" + flag] != nil }
}

