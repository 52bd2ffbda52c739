/// One option a command accepts: the row of its option table that `--help`, the parser,
/// the environment and anything generated from the table (a man page, shell completions)
/// read. Every field is data: nothing here is only printed text.
public struct OptionSpec: Sendable {
    /// Long name without dashes: `listen`, `segment-duration`.
    public let name: String
    /// Placeholder for the value (`ADDR`, `DURATION`); nil for a flag.
    public let value: String?
    public let help: String
    /// A one-letter alias (`o` for `output`).
    public var short: Character? = nil
    /// Shown in `--help`.
    public var defaultText: String? = nil
    /// May be given more than once (`--forward A --forward B`): `ParsedOptions.strings`.
    public var repeatable = false
    /// The words the value may be (`idr`, `gop`, `next`), or its forms, a prefix and a
    /// placeholder (`x11:DISPLAY`, `wav:PATH`): what shells complete and the man page lists.
    /// Empty: any value of its kind (a `tcp|udp` placeholder lists its own words).
    public var values: [String] = []

    public init(name: String, value: String?, help: String, short: Character? = nil, defaultText: String? = nil, repeatable: Bool = false, values: [String] = []) {
        self.name = name
        self.value = value
        self.help = help
        self.short = short
        self.defaultText = defaultText
        self.repeatable = repeatable
        self.values = values
    }

    public var takesValue: Bool { value != nil }
    /// The environment variable that can also give this option: `NALCAST_SEGMENT_DURATION`.
    public var environmentName: String { "NALCAST_" + String(name.uppercased().map { $0 == "-" ? "_" : $0 }) }
    /// What the value is, read from its placeholder: what a shell completes it with.
    public var valueKind: ValueKind { ValueKind(placeholder: value) }

    /// The words a shell offers for the value: `values`, else the words of a choice.
    public var completionValues: [String] {
        if !values.isEmpty { return values }
        if case .choice(let words) = valueKind { return words }
        return []
    }
}

extension Array where Element == OptionSpec {
    /// The table with the value words of some of its options set (`["join": ["gop", "next"]]`),
    /// for a table assembled from parts that do not list them themselves.
    public func withValues(_ values: [String: [String]]) -> [OptionSpec] {
        map { spec in
            guard let words = values[spec.name] else { return spec }
            var spec = spec
            spec.values = words
            return spec
        }
    }
}

/// The kind of an option's value, as its placeholder in the table names it.
public enum ValueKind: Equatable, Sendable {
    /// No value: a flag (`--quiet`; `--no-NAME` turns it off).
    case flag
    /// A path to a file; `-` is stdin or stdout (`FILE`).
    case file
    /// A directory (`DIR`).
    case directory
    /// A program and its arguments (`CMD`).
    case command
    /// Where to listen or connect: `tcp://HOST:PORT`, `unix:PATH` (`ADDR`).
    case address
    /// A URL or a path (`URL`, `SOURCE`, `SRC`).
    case location
    /// A time with its unit: `500ms`, `10s` (`TIME`, `DURATION`; `N|TIME` also takes frames).
    case duration
    /// A number, a rate or a size (`N`, `RATE`, `FPS`, `SIZE`, `MS`, `WxH`...).
    case number
    /// One of these words (`tcp|udp`).
    case choice([String])
    /// Anything else: a name, a pattern, a format.
    case text

    init(placeholder: String?) {
        guard let placeholder else { self = .flag; return }
        switch placeholder {
        case "FILE": self = .file
        case "DIR": self = .directory
        case "CMD": self = .command
        case "ADDR": self = .address
        case "URL", "SOURCE", "SRC": self = .location
        case "TIME", "DURATION", "N|TIME": self = .duration
        case "N", "RATE", "FPS", "SIZE", "MS", "WxH", "X,Y,WxH": self = .number
        case _ where placeholder.contains("|") && placeholder == placeholder.lowercased():
            self = .choice(placeholder.split(separator: "|").map(String.init))
        default: self = .text
        }
    }
}
