import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program running in the background for the length of a test, its stderr in a file.
final class Background: @unchecked Sendable {
    // Only the test thread that made it touches it: not shared, but kept by reference.
    let process = Process()
    let stderrURL: URL

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-bg-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Waits until stderr contains `text` (or the process ends, or `timeout` passes).
    @discardableResult
    func waitFor(_ text: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            usleep(20_000)
        }
        return false
    }

    /// Waits for exit (killing it after `timeout`); returns the exit status.
    @discardableResult
    func wait(timeout: Double = 20) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: stderrURL)
    }
}
