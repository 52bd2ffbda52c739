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
        let byName = Dictionary(uniqueKeysWithValues: specs.map { ($0.name, $0) })
        let byShort = Dictionary(uniqueKeysWithValues: specs.compactMap { s in s.short.map { ($0, s) } })
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                out.positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            var spec: OptionSpec
            var inlineValue: String? = nil
            if arg.hasPrefix("--") {
                var name = String(arg.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if let s = byName[name] {
                    spec = s
                } else if name.hasPrefix("no-"), let s = byName[String(name.dropFirst(3))], !s.takesValue, inlineValue == nil {
                    // --no-FLAG turns a flag off, also one set in the environment.
                    out.flags.remove(s.name)
                    out.sources[s.name] = "command line"
                    out.values["no-" + s.name] = "1"
                    continue
                } else {
                    throw CommandError.usage("\(command): unknown option '--\(name)' (see 'nalcast \(command) --help')")
                }
            } else {
                let letters = arg.dropFirst()
                guard letters.count >= 1, let s = byShort[letters.first!] else {
                    throw CommandError.usage("\(command): unknown option '\(arg)' (see 'nalcast \(command) --help')")
                }
                spec = s
                if letters.count > 1 { inlineValue = String(letters.dropFirst()) }
            }
            if spec.takesValue {
                if inlineValue == nil {
                    guard i < arguments.count else { throw CommandError.usage("\(command): option '--\(spec.name)' needs a value (\(spec.value!))") }
                    inlineValue = arguments[i]
                    i += 1
                }
                out.values[spec.name] = inlineValue
                if spec.repeatable { out.lists[spec.name, default: []].append(inlineValue!) }
                out.sources[spec.name] = "command line"
            } else {
                guard inlineValue == nil || ["1", "true", "yes", "on"].contains(inlineValue!.lowercased()) else {
                    if ["0", "false", "no", "off"].contains(inlineValue!.lowercased()) {
                        out.flags.remove(spec.name)
                        out.values["no-" + spec.name] = "1"
                        out.sources[spec.name] = "command line"
                        continue
                    }
                    throw CommandError.usage("\(command): option '--\(spec.name)' takes no value")
                }
                out.flags.insert(spec.name)
                out.sources[spec.name] = "command line"
            }
        }
        // The environment fills in what the command line left unset.
        for spec in specs where out.sources[spec.name] == nil {
            guard let text = environment[spec.environmentName] else { continue }
            if spec.takesValue {
                out.values[spec.name] = text
            } else {
                switch text.lowercased() {
                case "1", "true", "yes", "on": out.flags.insert(spec.name)
                case "0", "false", "no", "off", "": out.values["no-" + spec.name] = "1"
                default: throw CommandError.usage("invalid value '\(text)' for \(spec.environmentName) (expected 1 or 0)")
                }
            }
            out.sources[spec.name] = spec.environmentName
        }
        return out
    }

    /// True when a flag was turned off explicitly (`--no-realtime`, `NALCAST_REALTIME=0`).
    public func isOff(_ flag: String) -> Bool { values["no-" + flag] != nil }
}

