#if canImport(Glibc)
import Glibc
#endif

/// One option a command accepts.
struct OptionSpec: Sendable {
    /// Long name without dashes: `listen`, `segment-duration`.
    let name: String
    /// Placeholder for the value (`ADDR`, `DURATION`); nil for a flag.
    let value: String?
    let help: String
    /// A one-letter alias (`o` for `output`).
    var short: Character? = nil
    /// Shown in `--help`.
    var defaultText: String? = nil
    /// May be given more than once (`--forward A --forward B`): `ParsedOptions.strings`.
    var repeatable = false

    var takesValue: Bool { value != nil }
    /// The environment variable that can also give this option: `NALCAST_SEGMENT_DURATION`.
    var environmentName: String { "NALCAST_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 }) }
}

/// Parsed options. Every value is still text: the `value(...)` accessors convert it and
/// throw a usage error naming the option.
struct ParsedOptions {
    private(set) var values: [String: String] = [:]
    private(set) var flags: Set<String> = []
    /// Where each value came from, for `--dry-run` and error messages.
    private(set) var sources: [String: String] = [:]
    private(set) var positionals: [String] = []
    /// Every value of a repeatable option, in order.
    private(set) var lists: [String: [String]] = [:]

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    func string(_ name: String) -> String? { values[name] }
    /// All the values of a repeatable option (the environment's one when none was given).
    func strings(_ name: String) -> [String] { lists[name] ?? values[name].map { [$0] } ?? [] }

    /// The option and its value as the user gave them, for messages: `--keyint 60`, or
    /// `NALCAST_KEYINT=60` when the environment gave it.
    func label(_ name: String) -> String {
        let text = values[name] ?? ""
        if let source = sources[name], source != "command line" { return "\(source)=\(text)" }
        return "--\(name) \(text)"
    }

    /// A usage error about an option's value: `--preset warp: expected one of ...`.
    func invalid(_ name: String, _ reason: String) -> CommandError {
        .usage("\(label(name)): \(reason)")
    }

    /// Converts an option's value, or returns nil when it is not set. `expected` says what
    /// would have been accepted.
    func value<T>(_ name: String, expected: String = "invalid value", _ convert: (String) -> T?) throws -> T? {
        guard let text = values[name] else { return nil }
        guard let result = convert(text) else { throw invalid(name, expected) }
        return result
    }

    func value<T>(_ name: String, default fallback: T, expected: String = "invalid value", _ convert: (String) -> T?) throws -> T {
        try value(name, expected: expected, convert) ?? fallback
    }

    /// A duration option in seconds: `500ms`, `5s`, `2m`, `1h` (`0` alone needs no unit).
    /// A bare number is refused with the fix (`--duration 10: add a unit: 10s, 500ms, 2m`),
    /// unless `bareUnit` gives one (probe's `--seconds`, whose name is its unit).
    func duration(_ name: String, minimum: Double = 0, above: Bool = false, bareUnit: Double? = nil) throws -> Double? {
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

    func duration(_ name: String, default fallback: Double, minimum: Double = 0, above: Bool = false, bareUnit: Double? = nil) throws -> Double {
        try duration(name, minimum: minimum, above: above, bareUnit: bareUnit) ?? fallback
    }

    /// Parses `arguments` against `specs`; values from `environment` fill in what the
    /// arguments do not give (flags and options on the command line win).
    static func parse(_ arguments: [String], specs: [OptionSpec], environment: [String: String], command: String) throws -> ParsedOptions {
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
    func isOff(_ flag: String) -> Bool { values["no-" + flag] != nil }
}

/// Parsers for the value formats of docs/architecture.md, "The command line".
enum ValueFormat {
    /// What a frame rate option expects, for its usage error.
    static let frameRateHint = "expected a frame rate such as 30, 29.97 or 30000/1001"

    enum Duration: Equatable {
        /// A number with its unit, in seconds (`0` alone counts as one).
        case seconds(Double)
        /// A number without a unit: frames for x264's keyint, else an error.
        case bare(Double)
        case invalid
    }

    /// `500ms`, `250us`, `5s`, `2m`, `1h`, `1.5s`; `0` needs no unit.
    static func duration(_ text: String) -> Duration {
        let t = text.trimmed.lowercased()
        func number(_ s: Substring) -> Double? {
            guard !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let v = Double(s), v.isFinite else { return nil }
            return v
        }
        let units: [(String, Double)] = [("ms", 0.001), ("us", 0.000_001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            guard let v = number(t.dropLast(suffix.count)) else { return .invalid }
            return .seconds(v * scale)
        }
        guard let v = number(Substring(t)) else { return .invalid }
        return v == 0 ? .seconds(0) : .bare(v)
    }

    /// `6M`, `6000k`, `1.5G`, or a plain number: bits per second or bytes. Decimal multiples.
    static func quantity(_ text: String) -> Int? {
        let t = text.trimmed
        guard let last = t.last else { return nil }
        let scale: Double
        var number = Substring(t)
        switch last {
        case "k", "K": scale = 1e3; number = number.dropLast()
        case "m", "M": scale = 1e6; number = number.dropLast()
        case "g", "G": scale = 1e9; number = number.dropLast()
        default: scale = 1
        }
        guard let v = Double(number), v.isFinite, v > 0, v * scale < 1e15 else { return nil }
        return Int((v * scale).rounded())
    }

    /// Binary multiples for sizes in bytes: `64k` = 65536, `8M` = 8 MiB.
    static func byteSize(_ text: String) -> Int? {
        let t = text.trimmed
        guard let last = t.last else { return nil }
        var number = Substring(t)
        var scale: Double = 1
        switch last {
        case "k", "K": scale = 1024; number = number.dropLast()
        case "m", "M": scale = 1024 * 1024; number = number.dropLast()
        case "g", "G": scale = 1024 * 1024 * 1024; number = number.dropLast()
        default: break
        }
        guard let v = Double(number), v.isFinite, v > 0, v * scale < 1e15 else { return nil }
        return Int((v * scale).rounded())
    }

    /// `1280x720`.
    static func frameSize(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w <= 16384, h <= 16384 else { return nil }
        return (w, h)
    }

    static func positiveInt(_ text: String) -> Int? {
        guard let v = Int(text), v > 0 else { return nil }
        return v
    }

    static func nonNegativeInt(_ text: String) -> Int? {
        guard let v = Int(text), v >= 0 else { return nil }
        return v
    }
}
