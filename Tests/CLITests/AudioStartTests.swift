import Foundation
import Testing
import TestSupport

/// `produce --audio` with a PulseAudio source, at its start: a source the server does not have
/// is named with those it has.
@Suite struct AudioStartTests {
    /// The test's environment with the private server's.
    private static func environment(_ server: PulseAudioServer) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(server.environment) { _, theirs in theirs }
    }

    @Test("--audio pulse:NAME that the server does not have (pulse:monitor, a natural guess): one line naming its sources, exit 69")
    func unknownSource() throws {
        let server = try PulseAudioServer()
        #expect(try server.pactl(["load-module", "module-null-sink", "sink_name=speakers"]).status == 0)
        let env = Self.environment(server)
        let out = server.directory.appendingPathComponent("out.h264").path
        for name in ["nosuch", "monitor"] {
            let r = try Run.nalcast(["produce", "--size", "320x240", "--audio", "pulse:\(name)", "--frames", "5", "-o", out],
                                    environment: env, timeout: 30)
            #expect(r.status == 69, "\(r.stderr)")
            #expect(r.stderr == "nalcast: --audio pulse:\(name): PulseAudio has no source named \(name); it has nalcast_test.monitor, speakers.monitor "
                    + "(--audio monitor records what the machine plays, --audio mic its default source)\n", "\(r.stderr)")
        }
    }
}
