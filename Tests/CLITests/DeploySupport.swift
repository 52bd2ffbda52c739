import Foundation

/// Helpers for the deploy-file and docs tests: the repository's files, linters found on the
/// PATH or where scripts/setup puts them, and `nalcast … --dry-run` with a clean environment.
enum Deploy {
    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: Run.root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// A tool on the PATH, or in the virtual environment scripts/setup makes for PyPI tools
    /// (`~/.cache/nalcast-tools/bin`).
    static func tool(_ name: String) -> String? {
        var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        dirs += ["/usr/sbin", "/sbin", NSHomeDirectory() + "/.cache/nalcast-tools/bin"]
        for dir in dirs {
            let path = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// The environment without any NALCAST_* of the machine running the tests, plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// One command line found in a deploy file: nalcast's arguments and the environment the
    /// file gives it.
    struct CommandLine: CustomStringConvertible {
        let origin: String
        let arguments: [String]
        var environment: [String: String] = [:]
        var description: String { "\(origin): nalcast \(arguments.joined(separator: " "))" + (environment.isEmpty ? "" : " with \(environment)") }
    }

    /// Runs `nalcast ARGS --dry-run` with the command line's environment.
    static func dryRun(_ command: CommandLine, extra: [String] = []) throws -> Run.Result {
        try Run.nalcast(command.arguments + extra + ["--dry-run"], environment: environment(command.environment), timeout: 20)
    }

    /// `[...]` JSON-array (exec form) arguments of a Dockerfile instruction, continuation
    /// lines joined. Returns nil when the instruction is missing.
    static func dockerfileExecForm(_ dockerfile: String, instruction: String) throws -> [String]? {
        let joined = dockerfile.replacingOccurrences(of: "\\\n", with: " ")
        guard let line = joined.split(separator: "\n").first(where: { $0.hasPrefix(instruction + " ") }) else { return nil }
        guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
        let array = try JSONSerialization.jsonObject(with: Data(line[open...close].utf8)) as? [String]
        return array
    }
}
