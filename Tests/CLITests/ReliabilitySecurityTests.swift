import Foundation
import TestSupport
import Testing

/// Who can reach nalcast and what its inputs can make it do. Covered elsewhere (see
/// docs/reliability.md): unix sockets 0600 (ServeTests.unixSocketIsPrivateAndServes,
/// SocketTests), the metrics endpoint's methods, paths and bounds (ServeTests.metricsAndHealth,
/// HTTPServerTests, ReliabilityPeerTests.hostileClientsAreClosedAndNobodyElseNotices).
@Suite(.serialized) struct ReliabilitySecurityTests {
    /// With no --listen, produce serves on 127.0.0.1 only.
    @Test func produceListensOnLoopbackByDefault() throws {
        let r = try Run.nalcast(["produce", "--dry-run"], environment: [:])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("listen: tcp://127.0.0.1:7264"), "\(r.text)")
    }

    /// Every listening address that is not loopback needs --allow-remote (exit 64 without).
    @Test(arguments: [
        ["produce", "--listen", "tcp://0.0.0.0:0"],
        ["produce", "--listen", "tcp://[::]:0"],
        ["produce", "--listen", "tcp://192.0.2.1:7264"],
        ["produce", "--listen", "tcp://127.0.0.1:0", "--metrics", "tcp://0.0.0.0:0"],
        ["consume", "--from", "/dev/null", "-o", "/dev/null", "--metrics", "tcp://0.0.0.0:0"],
    ])
    func nonLoopbackNeedsAllowRemote(arguments: [String]) throws {
        let refused = try Run.nalcast(arguments + ["--dry-run"], environment: [:])
        #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
        #expect(refused.stderr.contains("--allow-remote"), "\(refused.stderr)")
        let allowed = try Run.nalcast(arguments + ["--allow-remote", "--dry-run"], environment: [:])
        #expect(allowed.status == 0, "\(arguments): \(allowed.stderr)")
    }

    /// Segment names full of shell syntax are just names: the hook gets them as one argument
    /// each and nothing they spell runs.
    @Test func onSegmentRunsWithoutAShell() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 60, keyint: 30), in: dir)
        let hook = dir.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\nprintf '%s\\n' \"$1\" >> \"$0.log\"\n".write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let pattern = "a;touch inj1;$(touch inj2)`touch inj3`|touch inj4&&touch inj5 %n.h264"
        // Run in `dir`, so that an injected relative `touch` would land there.
        let r = try Run.program("/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", dir.path, Run.nalcast, "consume", "--from", input.path,
                                            "--segments", "segs", "--segment-duration", "1s", "--segment-name", pattern, "--on-segment", hook])
        #expect(r.status == 0, "\(r.stderr)")
        var lines: [String] = []
        Wait.until {
            lines = ((try? String(contentsOfFile: hook + ".log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.count == 2
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("segs").path).sorted()
        #expect(names == ["a;touch inj1;$(touch inj2)`touch inj3`|touch inj4&&touch inj5 00001.h264",
                          "a;touch inj1;$(touch inj2)`touch inj3`|touch inj4&&touch inj5 00002.h264"], "\(names)")
        // Each hook runs on its own as its segment finishes, not waiting for the one before:
        // their lines may land in either order.
        #expect(lines.sorted() == names.map { "segs/" + $0 }, "\(lines)")
        usleep(200_000)
        let everything = (FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String]) ?? []
        #expect(!everything.contains { $0.hasPrefix("inj") || $0.contains("/inj") }, "injected: \(everything)")
    }

    /// A segment name cannot leave its directory: '/' and '.'/'..' are refused (exit 64), and a
    /// strftime field that makes a '/' (%D) becomes '-'.
    @Test func segmentNamesStayInTheirDirectory() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 60, keyint: 30), in: dir)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("a"), withIntermediateDirectories: true)
        let segs = dir.appendingPathComponent("a/segs").path
        for pattern in ["..", ".", "../x%n", "/tmp/x%n", "%n/../../x"] {
            let r = try Run.nalcast(["consume", "--from", input.path, "--segments", segs, "--segment-name", pattern])
            #expect(r.status == 64, "\(pattern): \(r.stderr)")
        }
        let r = try Run.nalcast(["consume", "--from", input.path, "--segments", segs, "--segment-duration", "1s", "--segment-name", "%D-%n.h264"])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: segs)
        #expect(names.count == 2 && names.allSatisfy { !$0.contains("/") && $0.hasSuffix(".h264") }, "\(names)")
        let outside = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("a").path)
        #expect(outside == ["segs"], "\(outside)")
    }

    /// nalcast ignores SIGPIPE and SIGXFSZ for itself; its hook starts with the default
    /// dispositions (ignored signals survive exec), so a hook in a pipeline still stops on a
    /// closed pipe and a file-size limit still applies as usual.
    @Test func hookStartsWithDefaultSignalDispositions() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 30, keyint: 30), in: dir)
        let hook = dir.appendingPathComponent("hook.sh").path
        try "#!/bin/sh\ngrep SigIgn /proc/self/status >> \"$0.log\"\n".write(toFile: hook, atomically: true, encoding: .utf8)
        chmod(hook, 0o755)
        let r = try Run.nalcast(["consume", "--from", input.path, "--segments", dir.appendingPathComponent("segs").path, "--on-segment", hook])
        #expect(r.status == 0, "\(r.stderr)")
        var line = ""
        Wait.until {
            line = (try? String(contentsOfFile: hook + ".log", encoding: .utf8)) ?? ""
            return line.hasSuffix("\n")
        }
        let mask = UInt64(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "", radix: 16)
        #expect(mask != nil, "\(line)")
        #expect((mask ?? 0) & (1 << (UInt64(SIGPIPE) - 1)) == 0, "the hook starts with SIGPIPE ignored: \(line)")
        #expect((mask ?? 0) & (1 << (UInt64(SIGXFSZ) - 1)) == 0, "the hook starts with SIGXFSZ ignored: \(line)")
    }
}
