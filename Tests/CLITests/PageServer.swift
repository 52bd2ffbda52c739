import Foundation
import TestSupport
import Testing

/// `Tests/Browser/serve.py` over a directory, for the tests that open a page in Chromium: it
/// answers byte ranges, as a web server answers a `<video>`, on a port the kernel picks.
/// Stopped by `stop()` (SIGTERM to its PID).
final class PageServer {
    let port: String
    let server: Background
    private let portFile: URL

    /// Starts it and waits for its "port N" line (the event that it listens), under a
    /// deadline rather than a count of polls a loaded machine can outrun.
    init(_ site: URL) throws {
        portFile = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-serve-\(UUID().uuidString).port")
        server = try Background("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("serve.py").path, site.path],
                                stdoutTo: portFile)
        var port = ""
        let portFile = portFile, server = server
        Wait.until(timeout: 30, every: 0.025) {
            let text = (try? String(contentsOf: portFile, encoding: .utf8)) ?? ""
            port = text.hasPrefix("port ") && text.hasSuffix("\n") ? text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            return !port.isEmpty || !server.process.isRunning
        }
        self.port = port
        try #require(!port.isEmpty, "serve.py did not start: \(server.stderr)")
    }

    func stop() {
        server.signal(SIGTERM)
        server.wait()
        try? FileManager.default.removeItem(at: portFile)
    }
}
