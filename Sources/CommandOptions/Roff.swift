/// A man page being written in roff with the man(7) macros: text escaped so that nothing
/// in it is read as a request or an escape, and every character outside ASCII written as a
/// groff named glyph (`\[u00D7]`), so that the page renders the same in any locale.
public struct Roff: Sendable {
    public private(set) var text = ""

    public init() {}

    /// A request line: `.TH NALCAST 1 ...`, each argument quoted.
    public mutating func macro(_ name: String, _ arguments: String...) {
        text += "." + name + arguments.map { " \"" + Self.escaped($0) + "\"" }.joined() + "\n"
    }

    public mutating func raw(_ line: String) { text += line + "\n" }

    public mutating func section(_ name: String) { macro("SH", name) }
    public mutating func subsection(_ name: String) { macro("SS", name) }

    /// Filled paragraphs.
    public mutating func text(_ paragraphs: [String]) {
        for p in paragraphs { text(p) }
    }

    public mutating func text(_ paragraph: String) {
        raw(".PP")
        raw(Self.escaped(paragraph))
    }

    /// A tagged paragraph: `tag` is roff already (fonts), `body` is text.
    public mutating func tagged(_ tag: String, _ body: String) {
        raw(".TP")
        raw(tag)
        raw(Self.escaped(body))
    }

    /// Lines kept as they are (no filling), indented.
    public mutating func preformatted(_ lines: [String]) {
        raw(".PP")
        raw(".RS 4")
        raw(".nf")
        for line in lines { raw(line.isEmpty ? "" : Self.escaped(line)) }
        raw(".fi")
        raw(".RE")
    }

    /// `text` safe as roff input: backslashes as `\e`, every dash a minus (`\-`, options and
    /// commands copy as typed), a leading `.` or `'` made text, non-ASCII as `\[uXXXX]`.
    public static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "\t": out += " "
            case _ where scalar.value < 0x20 || scalar.value == 0x7f: out += " "
            case _ where scalar.value < 0x80: out.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            }
        }
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out
    }
}
