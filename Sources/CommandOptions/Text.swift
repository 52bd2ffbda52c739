#if canImport(Glibc)
import Glibc
#endif

// Formatting for the command line's messages and `--dry-run`, without Foundation (whose
// first use costs several MiB of resident memory).

/// `value` with `digits` decimals (`fixed(2.5, 1)` is "2.5"), like printf's `%.Nf`.
public func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return String(value) }
    let whole = Int64(scaled)
    let p = Int64(scale)
    var text = String(whole / p)
    if digits > 0 {
        let frac = String(whole % p)
        text += "." + String(repeating: "0", count: digits - frac.count) + frac
    }
    return (value < 0 && scaled != 0 ? "-" : "") + text
}

/// A number without trailing zeros: 30 → "30", 29.97 → "29.97", 0.5 → "0.5".
public func short(_ value: Double, maxDigits: Int = 3) -> String {
    var text = fixed(value, maxDigits)
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}

extension String {
    /// Padded with spaces on the right to `width`.
    public func padded(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }

    /// Without leading and trailing spaces and tabs.
    public var trimmed: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}

/// `text` safe for a terminal: control characters (C0, DEL, C1, newlines included) as
/// `\xNN` or `\u{NNNN}`, so an echoed option value or a peer's message is one line and
/// cannot move the cursor or retitle the window. Bytes read from files are escaped where
/// they are read (`printableBytes`): a String has no invalid UTF-8 left to show.
public func printable(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        let v = scalar.value
        if v < 0x20 || v == 0x7f {
            let hex = String(v, radix: 16)
            out += "\\x" + (hex.count == 1 ? "0" : "") + hex
        } else if (0x80...0x9f).contains(v) {
            out += "\\u{" + String(v, radix: 16) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// The edit distance between two option names, for "did you mean" hints.
public func editDistance(_ a: String, _ b: String) -> Int {
    let x = Array(a), y = Array(b)
    guard !x.isEmpty else { return y.count }
    guard !y.isEmpty else { return x.count }
    var previous = Array(0...y.count)
    for i in 1...x.count {
        var current = [i] + Array(repeating: 0, count: y.count)
        for j in 1...y.count {
            current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[y.count]
}

/// Why a file could not be opened, in the words of a message about a path:
/// "no such file", "permission denied", "is a directory".
public func describeOpenError(_ code: Int32) -> String {
    switch code {
    case ENOENT: "no such file"
    case EACCES, EPERM: "permission denied"
    case EISDIR: "is a directory"
    case ENOTDIR: "a part of the path is not a directory"
    default: String(cString: strerror(code))
    }
}
