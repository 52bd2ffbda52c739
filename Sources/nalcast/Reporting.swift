import Clocks
import CommandOptions
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `--events FILE|-`: one JSON object per line for every state change, written off the loop
/// thread (a serial queue), so a slow file never holds anything up.
final class EventLog: Sendable {
    private let fd: Int32
    private let queue = DispatchQueue(label: "nalcast.events")

    /// Appends to `path` (`-` is stdout).
    init(path: String) throws {
        if path == "-" {
            fd = 1
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw CommandError.io("--events \(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// Writes `{"time":…,"event":NAME,…fields}`. Field values: String, Int, Double, Bool.
    func emit(_ event: String, _ fields: [(String, any Sendable)] = []) {
        let time = WallClock.seconds
        var line = "{\"time\":\(fixed(time, 3)),\"event\":\(jsonString(event))"
        for (key, value) in fields {
            line += ",\(jsonString(key)):"
            switch value {
            case let v as String: line += jsonString(v)
            case let v as Bool: line += v ? "true" : "false"
            case let v as Int: line += String(v)
            case let v as UInt64: line += String(v)
            case let v as Double: line += v.isFinite ? fixed(v, 3) : "null"
            default: line += jsonString("\(value)")
            }
        }
        line += "}\n"
        let fd = self.fd
        let text = line
        queue.async { writeAll(fd, text) }
    }

    /// Waits until every event so far is written.
    func flush() { queue.sync {} }
}

func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// The once-a-second status line on stderr, in FFmpeg's spirit. On a terminal it rewrites
/// itself (`\r`); elsewhere (`--stats` into a log) it prints one line per second.
struct StatusLine {
    let enabled: Bool
    let terminal: Bool

    init(options: ParsedOptions) {
        terminal = isatty(2) == 1
        enabled = !options.has("quiet") && (options.has("stats") || terminal)
    }

    func show(_ text: String) {
        guard enabled else { return }
        let line = terminal ? "\r\(text)\u{1b}[K" : "\(text)\n"
        printErr(line)
    }

    func end() {
        guard enabled, terminal else { return }
        printErr("\n")
    }
}

/// Log lines on stderr (`nalcast: ...`), silenced by `--quiet` except errors.
struct Log: Sendable {
    let quiet: Bool
    func line(_ text: String, force: Bool = false) {
        if quiet && !force { return }
        printError(text)
    }
}
