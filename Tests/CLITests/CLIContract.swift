import Foundation
import Testing

/// What users see of nalcast, kept as fixtures in `Tests/Fixtures/cli/` and diffed byte for
/// byte by `CLIContractTests`: a change to help, `--dry-run`, error lines, exit codes, metric
/// names or event fields fails until the fixtures are written again on purpose with
///
///     NALCAST_UPDATE_FIXTURES=1 swift test --skip-build --filter CLIContractTests
///
/// (with `NALCAST_BINARY` set as for every CLI test), which shows in the commit's diff.
enum Contract {
    static let fixtures = Run.root.appendingPathComponent("Tests/Fixtures/cli")
    static var updating: Bool { ProcessInfo.processInfo.environment["NALCAST_UPDATE_FIXTURES"] == "1" }

    /// The whole environment of every run: nothing of the machine's or the test run's own
    /// (no `DISPLAY`, no `NALCAST_*`, no sound server: `PULSE_SERVER` names a socket that is
    /// not there, so `--audio monitor` fails the same way everywhere).
    static func environment(_ dir: URL, _ extra: [String: String] = [:]) -> [String: String] {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": dir.path,
                   "PULSE_SERVER": "unix:" + dir.appendingPathComponent("no-sound-server").path, "LC_ALL": "C.UTF-8"]
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// Runs every case (a few at a time, each in `dir` with paths relative to it) and
    /// writes their transcript: the command line, the exit code, stdout and stderr as they
    /// came, `dir` itself shown as `$TMP`, then each case's own masks.
    static func transcript(_ cases: [ContractCase], in dir: URL) throws -> String {
        let results = try runAll(cases, in: dir)
        // A long stdout that another case printed already (`help produce`, `produce -h`)
        // is named, not repeated.
        var seen: [String: String] = [:]
        return zip(cases, results).map { c, r in
            var text = "$ " + c.commandLine + "\n"
            text += "exit \(r.status)\n"
            let stdout = c.masked(String(decoding: r.stdout, as: UTF8.self), dir: dir)
            if stdout.utf8.count > 200, let first = seen[stdout] {
                text += "--- stdout: the same as $ \(first)\n"
            } else {
                text += "--- stdout\n" + framed(stdout)
                seen[stdout] = c.commandLine
            }
            text += "--- stderr\n" + framed(c.masked(r.stderr, dir: dir))
            return text
        }.joined(separator: "\n")
    }

    /// Text as it came, with a mark where it does not end with a newline (as diff does).
    static func framed(_ text: String) -> String {
        text.isEmpty || text.hasSuffix("\n") ? text : text + "\n\\ no newline at end\n"
    }

    /// Runs the cases on four threads (the runs mostly wait for process start-up and exit).
    static func runAll(_ cases: [ContractCase], in dir: URL) throws -> [Run.Result] {
        let board = ResultBoard(count: cases.count)
        let threads = (0..<4).map { _ in
            Thread {
                while let i = board.next() {
                    let c = cases[i]
                    board.store(i, Result {
                        try Run.nalcast(c.arguments, stdin: c.stdin, environment: environment(dir, c.environment), directory: dir, timeout: 30)
                    })
                }
                board.done.signal()
            }
        }
        threads.forEach { $0.start() }
        threads.forEach { _ in board.done.wait() }
        return try board.results.map { try #require($0).get() }
    }

    /// Compares `text` with the fixture `name` (or writes it, when updating): a difference
    /// is one failure with the unified diff.
    static func check(_ text: String, against name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fixture = fixtures.appendingPathComponent(name)
        if updating {
            try FileManager.default.createDirectory(at: fixtures, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: fixture)
            return
        }
        guard let expected = FileManager.default.contents(atPath: fixture.path) else {
            Issue.record("no fixture \(fixture.path): write it with NALCAST_UPDATE_FIXTURES=1 (docs/testing.md)", sourceLocation: sourceLocation)
            return
        }
        guard expected != Data(text.utf8) else { return }
        let actual = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-contract-\(UUID().uuidString)-\(name)")
        try Data(text.utf8).write(to: actual)
        let diff = try Run.program("diff", ["-u", fixture.path, actual.path]).text
        Issue.record("""
            what users see changed (\(name); this run's output kept in \(actual.path)); if intended, write the fixtures \
            again with NALCAST_UPDATE_FIXTURES=1 (docs/testing.md):
            \(diff.prefix(12_000))
            """, sourceLocation: sourceLocation)
    }
}

/// One command line of the contract.
struct ContractCase: Sendable {
    var arguments: [String]
    var environment: [String: String] = [:]
    var stdin: Data?
    /// Replacements for what differs from run to run (a port the test chose), applied to
    /// stdout and stderr.
    var masks: [(String, String)] = []
    /// What follows this text to the end of its line depends on the machine (the X displays
    /// that run on it, another test's Xvfb among them): shown as `…`.
    var machineDependentAfter: String?
    /// `--version`: each library's row after the table's heading is its name and `…` (what
    /// it was built against and runs with depends on the machine).
    var libraryVersionsMasked = false

    /// Words split at spaces: `ContractCase("produce --dry-run")`.
    init(_ words: String, env: [String: String] = [:], masks: [(String, String)] = []) {
        self.init(words.split(separator: " ").map(String.init), env: env, masks: masks)
    }

    init(_ arguments: [String], env: [String: String] = [:], stdin: Data? = nil, masks: [(String, String)] = []) {
        self.arguments = arguments
        self.environment = env
        self.stdin = stdin
        self.masks = masks
    }

    /// As typed in a shell: `NALCAST_FPS=25 nalcast produce --dry-run`, masks applied.
    var commandLine: String {
        let env = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.quoted($0.value))" }
        let words = env + ["nalcast"] + arguments.map(Self.quoted)
        return masks.reduce(words.joined(separator: " ")) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }

    func masked(_ text: String, dir: URL) -> String {
        var shown = masks.reduce(text.replacingOccurrences(of: dir.path, with: "$TMP")) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
        if let marker = machineDependentAfter, let start = shown.range(of: marker) {
            let end = shown[start.upperBound...].firstIndex(of: "\n") ?? shown.endIndex
            shown.replaceSubrange(start.upperBound..<end, with: "…")
        }
        if libraryVersionsMasked { shown = Self.maskingLibraryVersions(shown) }
        return Self.maskingTimeInSegmentNames(shown)
    }

    /// The rows under `library  built against  running` as `NAME …`.
    static func maskingLibraryVersions(_ text: String) -> String {
        var inTable = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if line.hasPrefix("library ") { inTable = true; return String(line) }
            guard inTable, let name = line.split(separator: " ").first else { return String(line) }
            return name + " …"
        }.joined(separator: "\n")
    }

    /// `segment name: %Y%m%d-%H%M%S-%n.mp4 (e.g. 20261201-143154-00001.mp4; …)`: the
    /// example of a pattern with time fields is made from the clock; its digits (before the
    /// extension) become `#`.
    static func maskingTimeInSegmentNames(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let name = line.range(of: "segment name: "), let example = line.range(of: " (e.g. ", range: name.upperBound..<line.endIndex),
                  let end = line.range(of: ";", range: example.upperBound..<line.endIndex) else { return String(line) }
            let pattern = line[name.upperBound..<example.lowerBound]
            guard pattern.replacingOccurrences(of: "%n", with: "").contains("%") else { return String(line) }
            let shown = line[example.upperBound..<end.lowerBound]
            let stem = shown.lastIndex(of: ".") ?? shown.endIndex
            let masked = String(shown[..<stem].map { $0.isNumber ? "#" : $0 }) + shown[stem...]
            return String(line[..<example.upperBound]) + masked + String(line[end.lowerBound...])
        }.joined(separator: "\n")
    }

    /// Single quotes around a word a shell would split or expand.
    static func quoted(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=,@%+".contains($0) }
        return plain && !word.isEmpty ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// The cases' results as the worker threads fill them in.
final class ResultBoard: @unchecked Sendable {
    // `nextIndex` and `stored` are only touched under `lock`; `done` is a semaphore.
    private let lock = NSLock()
    private var nextIndex = 0
    private var stored: [Result<Run.Result, any Error>?]
    let done = DispatchSemaphore(value: 0)

    init(count: Int) { stored = Array(repeating: nil, count: count) }

    var results: [Result<Run.Result, any Error>?] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func next() -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard nextIndex < stored.count else { return nil }
        nextIndex += 1
        return nextIndex - 1
    }

    func store(_ index: Int, _ result: Result<Run.Result, any Error>) {
        lock.lock()
        stored[index] = result
        lock.unlock()
    }
}
