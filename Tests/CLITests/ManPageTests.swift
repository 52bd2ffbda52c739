import Foundation
import Testing

/// `nalcast man`: the page renders with man-db without a warning, holds every option of
/// every command and the sections a reader looks for, and its examples run.
@Suite struct ManPageTests {
    static let sections = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "SOURCES", "AUDIO SOURCES", "ADDRESSES",
                           "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"]

    /// The option names `nalcast help COMMAND` lists.
    static func optionNames(_ command: String) throws -> [String] {
        let help = try Run.nalcast(["help", command]).text
        return help.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("  -") else { return nil }
            return line.split(separator: " ").first { $0.hasPrefix("--") }.map { String($0.split(separator: "=")[0]) }
        }
    }

    @Test(.enabled(if: Deploy.tool("man") != nil, "man-db is not installed (scripts/setup installs it)"))
    func rendersWithoutWarnings() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let roff = try Run.nalcast(["man"])
        #expect(roff.status == 0 && roff.stderr.isEmpty, "\(roff.stderr)")
        let page = dir.appendingPathComponent("nalcast.1")
        try roff.stdout.write(to: page)
        // As lintian checks a page: every warning of groff and man-db on stderr.
        let env = Deploy.environment(["LC_ALL": "C.UTF-8", "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""])
        let r = try Run.program("man", ["--warnings", "-E", "UTF-8", "-l", page.path], environment: env)
        #expect(r.status == 0)
        #expect(r.stderr.isEmpty, "man --warnings: \(r.stderr)")
        // Bold and underline as overstrikes when not on a terminal: gone, as a reader sees it.
        let text = r.text.replacingOccurrences(of: "\u{8}.", with: "", options: .regularExpression)
        for section in Self.sections {
            #expect(text.contains("\n\(section)\n"), "no \(section) section")
        }
        #expect(!text.contains("\\"), "an escape left unread: \(text.split(separator: "\n").filter { $0.contains("\\") }.prefix(3))")
        for command in ["produce", "consume", "probe", "inspect"] {
            #expect(text.contains("   nalcast \(command)\n"), "no subsection for \(command)")
            let names = try Self.optionNames(command)
            #expect(names.count > 3, "help \(command) listed \(names)")
            for name in names { #expect(text.contains(name), "\(command) \(name) is not on the page") }
        }
        for code in [0, 64, 65, 66, 69, 70, 74] { #expect(text.contains("\n       \(code) "), "exit code \(code) not described") }
        #expect(text.contains("NALCAST_SEGMENT_DURATION"))
    }

    /// The command lines of EXAMPLES, as a reader would copy them.
    static func examples() throws -> [String] {
        let roff = try Run.nalcast(["man"]).text
        guard let start = roff.range(of: ".SH \"EXAMPLES\"\n"), let end = roff.range(of: ".SH ", range: start.upperBound..<roff.endIndex) else { return [] }
        var lines: [String] = []
        var inBlock = false
        for line in roff[start.upperBound..<end.lowerBound].split(separator: "\n") {
            if line == ".nf" { inBlock = true } else if line == ".fi" { inBlock = false } else if inBlock {
                lines.append(line.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\e", with: "\\"))
            }
        }
        return lines
    }

    /// Each example's nalcast commands: those with `--dry-run` check their options with it
    /// (they would capture the screen or wait for a camera); a pipeline of nalcast alone runs.
    @Test func examplesRun() throws {
        let lines = try Self.examples()
        #expect(lines.count >= 8, "\(lines)")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var checked = 0
        for line in lines {
            let stages = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: " &", with: "") }
            if stages.allSatisfy({ $0.hasPrefix("nalcast ") }) && stages.count > 1 {
                let script = "set -o pipefail; " + stages.map { "'\(Run.nalcast)' " + $0.dropFirst("nalcast ".count) }.joined(separator: " | ")
                let r = try Run.program("/bin/bash", ["-c", script], environment: Deploy.environment(), directory: dir)
                #expect(r.status == 0, "\(line): \(r.stderr)")
                #expect(r.text.contains("access units"), "\(line): \(r.text.suffix(300))")
                checked += 1
                continue
            }
            for stage in stages {
                var words = stage.split(separator: " ").map(String.init)
                var env: [String: String] = [:]
                while let first = words.first, first.hasPrefix("NALCAST_"), let eq = first.firstIndex(of: "=") {
                    env[String(first[..<eq])] = String(first[first.index(after: eq)...])
                    words.removeFirst()
                }
                guard words.first == "nalcast", words.count > 1 else { continue }
                let r = try Run.nalcast(Array(words.dropFirst()) + ["--dry-run"], environment: Deploy.environment(env), directory: dir)
                #expect(r.status == 0, "\(stage): exit \(r.status): \(r.stderr)")
                checked += 1
            }
        }
        #expect(checked >= 8, "only \(checked) example commands were checked")
    }
}
