import Foundation
import Testing
import TestSupport

/// `produce --audio` with a PulseAudio source, at its start: what already plays is heard from
/// the first picture, and a source the server does not have is named with those it has.
@Suite struct AudioStartTests {
    /// The test's environment with the private server's.
    private static func environment(_ server: PulseAudioServer) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(server.environment) { _, theirs in theirs }
    }

    @Test("a tone playing into a null sink before produce starts is heard from the first picture, as FFmpeg's -f pulse hears it")
    func toneAlreadyPlaying() throws {
        // A rewinding null sink (PulseAudio's default) and paplay with its default 2 s buffer:
        // the sink renders up to 2 s ahead and its monitor gets nothing of that; a reader that
        // joins hears the first samples when the sink renders again, up to 2 s later. A picture
        // captured before then began the recording with 1.4 to 1.8 s of silence.
        let server = try PulseAudioServer(rewinds: true)
        let dir = server.directory
        let wav = dir.appendingPathComponent("tone.wav")
        try PCMAnalysis.makeSine(wav, frequency: 440, seconds: 10, rate: 48_000, channels: 2)
        let player = try server.play(wav)
        defer { player.stop() }
        try Wait.until(timeout: 10, every: 0.02) { try !server.pactl(["list", "short", "sink-inputs"]).stdout.isEmpty }
        let env = Self.environment(server)
        let out = dir.appendingPathComponent("produce.mkv").path
        let r = try Run.nalcast(["produce", "--size", "320x240", "--preset", "ultrafast", "--audio", "monitor", "--duration", "1s",
                                 "-o", out], environment: env, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let heard = try #require(try AVSyncAnalysis.soundStart(out), "no sound: \(r.stderr)")
        // The first AAC packet begins at the first picture's instant; the decoder fades in over
        // that packet (there is none before it) and the analysis looks in 5 ms windows: 10 ms
        // here in every run. A packet grid laid before the picture put it up to 35 ms late.
        #expect(heard <= 0.02, "the tone is first heard \(heard) s after the first picture: \(r.stderr)")

        let theirs = dir.appendingPathComponent("ffmpeg.mkv").path
        let ff = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                            "-f", "pulse", "-i", "\(server.sinkName).monitor", "-t", "1", "-c:v", "libx264",
                                            "-preset", "ultrafast", "-c:a", "aac", "-y", theirs], environment: env, timeout: 60)
        #expect(ff.status == 0, "ffmpeg: \(ff.stderr)")
        let ffHeard = try #require(try AVSyncAnalysis.soundStart(theirs), "FFmpeg heard nothing: \(ff.stderr)")
        #expect(heard <= ffHeard + 1.0 / 30, "nalcast hears the tone from \(heard) s, FFmpeg from \(ffHeard) s")
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
