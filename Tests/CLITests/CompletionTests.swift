import Foundation
import Testing

/// `nalcast completions bash|zsh|fish`, loaded into the real shells and driven through their
/// own completion machinery (`Tests/Completions/`: bash's `complete -F` function with the
/// COMP_* variables bash sets, fish's `complete -C`, zsh's completion system in a
/// pseudo-terminal), in a directory with a few files.
@Suite struct CompletionTests {
    /// A command line and what must be offered for it (`exact`: nothing else).
    struct Case: Sendable {
        let line: String
        let expected: Set<String>
        var exact = true
    }

    static let cases: [Case] = [
        Case(line: "nalcast ", expected: ["produce", "consume", "probe", "inspect", "help", "man", "completions"]),
        Case(line: "nalcast pro", expected: ["produce", "probe"]),
        Case(line: "nalcast produce --pre", expected: ["--preset"]),
        Case(line: "nalcast produce --preset ultra", expected: ["ultrafast"]),
        Case(line: "nalcast produce --profile ", expected: ["baseline", "main", "high"]),
        Case(line: "nalcast produce --no-rea", expected: ["--no-realtime"]),
        // The kinds of source: the words, and the prefixes completed further.
        Case(line: "nalcast produce --source ", expected: ["testsrc", "x11", "x11:", "y4m:", "raw:"], exact: false),
        Case(line: "nalcast produce --source y4m:cl", expected: ["y4m:clip.y4m", "y4m:clip2.y4m"]),
        Case(line: "nalcast produce --audio wav:cl", expected: ["wav:clip.y4m", "wav:clip2.y4m"]),
        Case(line: "nalcast produce --format m", expected: ["mp4", "mkv"]),
        Case(line: "nalcast produce -o cl", expected: ["clip.y4m", "clip2.y4m"]),
        Case(line: "nalcast consume --join ", expected: ["gop", "next"]),
        Case(line: "nalcast consume --rtsp-transport ", expected: ["tcp", "udp"]),
        Case(line: "nalcast consume --segments s", expected: ["segments"]),
        Case(line: "nalcast inspect cl", expected: ["clip.y4m", "clip2.y4m"]),
        Case(line: "nalcast completions ", expected: ["bash", "zsh", "fish"]),
    ]

    /// The candidates of each case, from the driver's output (`----` after each case).
    static func candidates(_ output: String) -> [Set<String>] {
        var out: [Set<String>] = []
        var current: Set<String> = []
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "----" {
                out.append(current)
                current = []
            } else if !line.isEmpty {
                // A directory is offered with its `/` by some shells.
                current.insert(line.hasSuffix("/") ? String(line.dropLast()) : String(line))
            }
        }
        return out
    }

    /// Runs `driver` for every case in a directory holding clip.y4m, clip2.y4m and segments/.
    static func check(_ shell: String, _ arguments: (_ script: URL) -> [String]) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for file in ["clip.y4m", "clip2.y4m"] { try Data().write(to: dir.appendingPathComponent(file)) }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("segments"), withIntermediateDirectories: true)
        let generated = try Run.nalcast(["completions", shell])
        #expect(generated.status == 0 && generated.stderr.isEmpty, "\(generated.stderr)")
        let scriptDir = dir.appendingPathComponent(".completion")
        try FileManager.default.createDirectory(at: scriptDir, withIntermediateDirectories: true)
        let script = scriptDir.appendingPathComponent(shell == "zsh" ? "_nalcast" : "nalcast.\(shell)")
        try generated.stdout.write(to: script)
        let r = try Run.program(shell, arguments(script) + cases.map(\.line), environment: Deploy.environment(["HOME": dir.path]),
                                directory: dir, timeout: 60)
        #expect(r.status == 0, "\(shell): exit \(r.status): \(r.stderr)")
        let got = candidates(r.text)
        #expect(got.count == cases.count, "\(shell) answered \(got.count) of \(cases.count) lines: \(r.text.prefix(2000)) \(r.stderr)")
        for (c, offered) in zip(cases, got) {
            if c.exact {
                #expect(offered == c.expected, "\(shell): '\(c.line)' offered \(offered.sorted())")
            } else {
                #expect(offered.isSuperset(of: c.expected), "\(shell): '\(c.line)' offered \(offered.sorted())")
            }
        }
    }

    static let drivers = Run.root.appendingPathComponent("Tests/Completions")

    @Test func bash() throws {
        try Self.check("bash") { [Self.drivers.appendingPathComponent("bash-complete.sh").path, $0.path] }
    }

    @Test(.enabled(if: Deploy.tool("fish") != nil, "fish is not installed (scripts/setup installs it)"))
    func fish() throws {
        try Self.check("fish") { ["-N", Self.drivers.appendingPathComponent("fish-complete.fish").path, $0.path] }
    }

    @Test(.enabled(if: Deploy.tool("zsh") != nil, "zsh is not installed (scripts/setup installs it)"))
    func zsh() throws {
        try Self.check("zsh") { ["-f", Self.drivers.appendingPathComponent("zsh-complete.zsh").path, $0.deletingLastPathComponent().path] }
    }
}
