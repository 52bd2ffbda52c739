import Foundation
import Testing
import TestSupport

/// `produce --forward` to servers that answer a push with garbage or stall
/// (`HostilePushServer`, every mode at once: one run, five forwards, as the CI budget is
/// tight): each push gives up within its timeouts (connect and send, 5 s each) and says so
/// with a reason, the run ends when its frames are done, at worst after the 5 s it waits for
/// a sink at the end ("gave up waiting for"; a hang would hold it to the test's 60 s bound),
/// nothing crashes, and `-o` gets every frame while the pushes fail. About 8 s: the stalls
/// cost their connect timeout and the wait at the end.
@Suite struct HostilePushTests {
    static let frames = 60

    @Test func pushesAnsweredWithGarbageOrSilenceGiveUpAndTheOtherOutputsGoOn() throws {
        let servers = try HostilePushServer.Mode.allCases.map { try HostilePushServer($0) }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.h264")
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--size", "160x120", "--fps", "30", "--frames", String(Self.frames),
                                 "--keyint", "1s", "-o", out.path] + servers.flatMap { ["--forward", $0.url] }, timeout: 60)
        let logs = servers.map { "\($0.mode.rawValue): \($0.log)" }.joined(separator: "\n")
        #expect(r.status == 0, "\(r.stderr)\n\(logs)")
        // Never taken for connected; each said down, with a reason.
        #expect(!r.stderr.contains("forwarding to "), "\(r.stderr)")
        for server in servers {
            let shown = server.url.replacingOccurrences(of: "/live/key", with: "/live/****")
            let down = r.stderr.split(separator: "\n").first { $0.contains("forward to \(shown) is down (") }
            #expect(down != nil, "\(server.mode.rawValue)\n\(r.stderr)")
            if [.rtmpStall, .rtspStall, .rtspEndless].contains(server.mode) {
                // Silence (or a body that never ends) can only end by the deadline.
                #expect(down?.contains("timed out") == true, "\(server.mode.rawValue)\n\(r.stderr)")
            }
            #expect(server.connections >= 1, "\(server.mode.rawValue): \(server.log)")
        }
        let inspected = try Run.nalcast(["inspect", "--json", "--summary", out.path])
        let json = try JSONSerialization.jsonObject(with: inspected.stdout) as? [String: Any] ?? [:]
        #expect(json["accessUnits"] as? Int == Self.frames, "\(json)\n\(r.stderr)")
    }
}
