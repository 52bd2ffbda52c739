import Foundation
import Testing
import TestSupport

/// Encrypted SRT with srt-live-transmit: `--forward srt://` and `--from srt://` with the
/// passphrase from `--srt-passphrase-file` or `NALCAST_SRT_PASSPHRASE`; a wrong one is one
/// line and exit 77, never retried.
@Suite(.serialized) struct SRTSecretTests {
    static let passphrase = "rightpassphrase1"

    /// The environment of a run with `NALCAST_SRT_PASSPHRASE` (the rest of the test's).
    static func environment(_ passphrase: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") || $0.key == "NALCAST_BINARY" }
        environment["NALCAST_SRT_PASSPHRASE"] = passphrase
        return environment
    }

    /// A push with the listener's passphrase arrives whole (it decodes: the listener
    /// decrypted it); one with another passphrase ends at once with one line and 77, and the
    /// listener got nothing.
    @Test func aForwardIsEncryptedAndAWrongPassphraseIsOneLine() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let listener = try SRTListener(options: ["passphrase": Self.passphrase, "pbkeylen": "32", "latency": "0"])
        let wrong = try Run.nalcast(["produce", "--source", "testsrc", "--size", "160x120", "--frames", "30", "--forward", listener.url],
                                    environment: Self.environment("wrongpassphrase1"), timeout: 30)
        #expect(wrong.status == 77, "\(wrong.stderr)")
        let lines = wrong.stderr.split(separator: "\n").filter { !$0.contains("capturing ") }
        #expect(lines.count == 1 && lines[0].contains("forward to \(listener.url): the SRT peer refused the passphrase"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrongpassphrase1"))
        #expect(listener.receivedBytes == 0)

        let file = dir.appendingPathComponent("passphrase")
        try (Self.passphrase + "\n").write(to: file, atomically: true, encoding: .utf8)
        let right = try Run.nalcast(["produce", "--source", "testsrc", "--size", "160x120", "--frames", "30", "--forward", listener.url,
                                     "--srt-passphrase-file", file.path, "--srt-pbkeylen", "32"], timeout: 30)
        #expect(right.status == 0, "\(right.stderr)")
        #expect(listener.waitForCallerGone(), "\(listener.process.log)")
        listener.stop()
        let video = try MediaProbe.video(listener.output.path)
        #expect(video?.frames == 30, "\(video) \(listener.process.log)")
        #expect(!right.stderr.contains(Self.passphrase))

        // A file that is not there, and a passphrase SRT would refuse, are said at once.
        let missing = try Run.nalcast(["produce", "--forward", listener.url, "--srt-passphrase-file", dir.appendingPathComponent("none").path, "--dry-run"])
        #expect(missing.status == 66, "\(missing.stderr)")
        try "short\n".write(to: file, atomically: true, encoding: .utf8)
        let short = try Run.nalcast(["produce", "--forward", listener.url, "--srt-passphrase-file", file.path, "--dry-run"])
        #expect(short.status == 65 && short.stderr.contains("an SRT passphrase is 10 to 79 characters"), "\(short.stderr)")
    }

    /// `consume --from srt://` as a caller, through srt-live-transmit relaying a producer's
    /// push to a listener that wants a passphrase: the wrong one ends at once (77, one line),
    /// the right one reads pictures.
    @Test func anInputWithTheWrongPassphraseEndsAtOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let inPort = try freePort(), outPort = try freePort()
        let relay = try Background("srt-live-transmit", ["srt://127.0.0.1:\(inPort)?mode=listener",
                                                        "srt://127.0.0.1:\(outPort)?mode=listener&passphrase=\(Self.passphrase)"])
        defer {
            relay.signal(SIGKILL)
            relay.wait()
        }
        #expect(relay.waitFor("Media path", timeout: 10), "\(relay.stderr)")
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "160x120", "--forward", "srt://127.0.0.1:\(inPort)"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        #expect(producer.waitFor("forwarding to "), "\(producer.stderr)")
        let source = "srt://127.0.0.1:\(outPort)"
        let wrong = try Run.nalcast(["consume", "--from", source, "-o", "/dev/null"], environment: Self.environment("wrongpassphrase1"), timeout: 30)
        #expect(wrong.status == 77, "\(wrong.stderr)")
        #expect(wrong.stderr.split(separator: "\n").filter { !$0.contains("reading ") }.map(String.init)
                == ["nalcast: consume: \(source): the SRT peer refused the passphrase (wrong, or given on one side only): check --srt-passphrase-file or NALCAST_SRT_PASSPHRASE"],
                "\(wrong.stderr)")

        let output = dir.appendingPathComponent("out.h264")
        let right = try Background(Run.nalcast, ["consume", "--from", source, "-o", output.path], environment: Self.environment(Self.passphrase))
        #expect(right.waitFor("opened "), "\(right.stderr)")
        Wait.until(timeout: 20) { ((try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? 0) >= 2000 }
        right.signal(SIGINT)
        #expect(right.wait() == 0, "\(right.stderr)")
        #expect(try ffmpegDecode(Data(contentsOf: output)).frames > 0)
    }
}
