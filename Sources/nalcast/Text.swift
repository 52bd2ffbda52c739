import EventLoop
#if canImport(Glibc)
import Glibc
#endif

// Small replacements for Foundation conveniences. The producer runs inside a tight memory
// budget, and the first use of Foundation's formatting, environment or file handles costs
// several MiB of resident memory; these cost nothing.

/// Writes all of `text` to `fd`, retrying short writes and EINTR. Errors are dropped (a
/// closed stderr is no reason to fail).
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = try? bytes.withUnsafeBytes { raw throws(Errno) in
            try systemCall("write", badDescriptorIsBug: false) { write(fd, raw.baseAddress! + offset, raw.count - offset) }
        }
        guard let n = written, n > 0 else { return }
        offset += n
    }
    bytes = []
}

func printOut(_ text: String) { writeAll(1, text) }
func printErr(_ text: String) { writeAll(2, text) }

/// The process environment (Glibc's `environ`).
func processEnvironment() -> [String: String] {
    var out: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
        let text = String(cString: entry)
        if let eq = text.firstIndex(of: "=") {
            out[String(text[..<eq])] = String(text[text.index(after: eq)...])
        }
        pointer += 1
    }
    return out
}

/// `value` with `digits` decimals (`fixed(2.5, 1)` is "2.5"), like printf's `%.Nf`.
func fixed(_ value: Double, _ digits: Int) -> String {
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
func short(_ value: Double, maxDigits: Int = 3) -> String {
    var text = fixed(value, maxDigits)
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}

extension String {
    /// Padded with spaces on the right to `width`.
    func padded(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }

    /// Without leading and trailing spaces and tabs.
    var trimmed: String {
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
func printable(_ text: String) -> String {
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
func editDistance(_ a: String, _ b: String) -> Int {
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
