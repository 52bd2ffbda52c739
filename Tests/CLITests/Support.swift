import Foundation

/// Runs programs for the end-to-end tests: the built `nalcast` and real peers.
enum Run {
    /// The `nalcast` binary next to this test bundle.
    static let nalcast: String = {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("nalcast").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        // swift-testing runs the bundle from the build directory too.
        let build = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/nalcast").path
        return build
    }()

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = root.deletingLastPathComponent().appendingPathComponent("shared/fixtures/h264")

    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `executable` with `arguments`, feeding `stdin`, and waits (at most `timeout` s).
    @discardableResult
    static func program(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, timeout: Double = 120) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        p.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        if let environment { p.environment = environment }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = stdin == nil ? FileHandle.nullDevice : inp
        try p.run()
        let group = DispatchGroup()
        // Written by the two readers, read only after group.wait(): the group orders the accesses.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        group.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        if let stdin {
            DispatchQueue.global().async {
                try? inp.fileHandleForWriting.write(contentsOf: stdin)
                try? inp.fileHandleForWriting.close()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        group.wait()
        return Result(status: p.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    static func nalcast(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, timeout: Double = 120) throws -> Result {
        try program(nalcast, arguments, stdin: stdin, environment: environment, timeout: timeout)
    }
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
