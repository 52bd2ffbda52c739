import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program running in the background for the length of a test, its stderr in a file.
public final class Background: @unchecked Sendable {
    // Only the test thread that made it touches it: not shared, but kept by reference.
    public let process = Process()
    public let stderrURL: URL
    public let stdoutURL: URL?

    public init(_ executable: String, _ arguments: [String], stdoutTo: URL? = nil, environment: [String: String]? = nil) throws {
        stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-bg-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        stdoutURL = stdoutTo
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        if let environment { process.environment = environment }
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        if let stdoutTo {
            _ = FileManager.default.createFile(atPath: stdoutTo.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: stdoutTo)
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    public var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits until stderr contains `text` (or the process ends, or `timeout` passes).
    @discardableResult
    public func waitFor(_ text: String, timeout: Double = 20) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// The endpoint from nalcast's "serving ENDPOINT" line (port 0 resolved).
    public func servingEndpoint(timeout: Double = 20) -> String? {
        guard waitFor("serving ", timeout: timeout) else { return nil }
        let line = stderr.split(separator: "\n").first { $0.contains("serving ") }!
        let after = line[line.range(of: "serving ")!.upperBound...]
        return String(after.split(whereSeparator: { $0 == "," || $0 == " " }).first!)
    }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for exit (killing it after `timeout`); returns the exit status.
    @discardableResult
    public func wait(timeout: Double = 20) -> Int32 {
        Wait.until(timeout: timeout, every: 0.02) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: stderrURL)
    }
}
