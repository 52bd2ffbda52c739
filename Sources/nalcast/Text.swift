import CommandOptions
import IO
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

/// Writes one line to stderr, prefixed with the program name, control characters escaped.
func printError(_ message: String) {
    printErr("nalcast: \(printable(message))\n")
}
