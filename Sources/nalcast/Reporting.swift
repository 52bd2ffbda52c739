import Foundation

/// `--events FILE|-`: one JSON object per line for every state change, written off the loop
/// thread (a serial queue), so a slow file never holds anything up.
final class EventLog: Sendable {
    private let handle: FileHandle
    private let queue = DispatchQueue(label: "nalcast.events")

    init(path: String) throws {
        if path == "-" {
            handle = FileHandle.standardOutput
        } else {
            guard FileManager.default.createFile(atPath: path, contents: nil) || FileManager.default.isWritableFile(atPath: path),
                let h = FileHandle(forWritingAtPath: path)
            else { throw CommandError.io("--events: cannot write \(path)") }
            h.seekToEndOfFile()
            handle = h
        }
    }

    /// Writes `{"time":…,"event":NAME,…fields}`. Field values: String, Int, Double, Bool.
    func emit(_ event: String, _ fields: [(String, any Sendable)] = []) {
        let time = Date().timeIntervalSince1970
        var line = "{\"time\":\(String(format: "%.3f", time)),\"event\":\(jsonString(event))"
        for (key, value) in fields {
            line += ",\(jsonString(key)):"
            switch value {
            case let v as String: line += jsonString(v)
            case let v as Bool: line += v ? "true" : "false"
            case let v as Int: line += String(v)
            case let v as UInt64: line += String(v)
            case let v as Double: line += v.isFinite ? String(format: "%.3f", v) : "null"
            default: line += jsonString("\(value)")
            }
        }
        line += "}\n"
        let data = Data(line.utf8)
        let handle = self.handle
        queue.async { try? handle.write(contentsOf: data) }
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
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
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
        FileHandle.standardError.write(Data(line.utf8))
    }

    func end() {
        guard enabled, terminal else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }
}

/// An informational line on stderr (unless `--quiet`).
func note(_ message: String, quiet: Bool) {
    guard !quiet else { return }
    FileHandle.standardError.write(Data("nalcast: \(message)\n".utf8))
}
