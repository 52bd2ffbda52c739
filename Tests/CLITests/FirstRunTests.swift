import Foundation
import Testing
import TestSupport

/// What a new user trips on first: the wrong file given as input, a truncated Y4M, an
/// upstream that does not come back, a forward target that never answers, a reconnect that
/// looks like a hang. Each ends with one line that says what happened and the documented
/// exit code (README "Exit codes", docs/operations.md).
@Suite(.serialized) struct FirstRunTests {
    /// A short clip FFmpeg writes in `format` (H.264 inside when the container holds it).
    static func clip(_ format: String, ext: String, in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("in.\(ext)")
        let codec = format == "yuv4mpegpipe" ? [] : ["-c:v", "libx264", "-preset", "ultrafast"]
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10", "-t", "1"]
                                + codec + ["-f", format, url.path])
        #expect(r.status == 0, "\(r.stderr)")
        return url
    }

    /// nalcast with its stdin from `file` (a shell redirection: nalcast stops reading early
    /// here, and a pipe written by the test process would raise SIGPIPE in it).
    static func nalcast(_ arguments: [String], stdinFrom file: URL) throws -> Run.Result {
        try Run.program("/bin/bash", ["-c", "f=$1; shift; exec \"$@\" < \"$f\"", "bash", file.path, Run.nalcast] + arguments)
    }

    // MARK: containers and raw video given where Annex-B is expected (a pipe, inspect; consume takes container files)

    @Test(arguments: [
        ("mp4", "mp4", "is an MP4 file", "-bsf:v h264_mp4toannexb"),
        ("mpegts", "ts", "is an MPEG transport stream", "-c:v copy -f h264"),
        ("matroska", "mkv", "is a Matroska/WebM file", "-bsf:v h264_mp4toannexb"),
        ("yuv4mpegpipe", "y4m", "is YUV4MPEG2 raw video", "nalcast produce --source y4m:"),
    ])
    func aContainerIsNamedWithWhatToDoAndExits65(format: String, ext: String, says: String, hint: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.clip(format, ext: ext, in: dir)
        let out = dir.appendingPathComponent("out.h264")

        // consume, a file: raw video is refused before any output is created; a container
        // file is read through the demuxer (RelaySourceTests has the rest).
        let consumed = try Run.nalcast(["consume", "--from", input.path, "-o", out.path])
        if format == "yuv4mpegpipe" {
            #expect(consumed.status == 65, "\(consumed.stderr)")
            #expect(consumed.stderr.split(separator: "\n").count == 1, "\(consumed.stderr)")
            #expect(consumed.stderr.contains("\(input.path) \(says)") && consumed.stderr.contains(hint), "\(consumed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        } else {
            #expect(consumed.status == 0, "\(consumed.stderr)")
            #expect((try? MediaProbe.video(out.path, format: "h264"))??.frames ?? 0 > 0, "\(consumed.stderr)")
        }

        // consume, a pipe: the reader thread finds out.
        let piped = try Self.nalcast(["consume", "--from", "-", "-o", "/dev/null"], stdinFrom: input)
        #expect(piped.status == 65, "\(piped.stderr)")
        #expect(piped.stderr.contains("the input \(says)"), "\(piped.stderr)")

        // inspect, a file and a pipe.
        let inspected = try Run.nalcast(["inspect", input.path])
        #expect(inspected.status == 65, "\(inspected.stderr)")
        #expect(inspected.stderr.split(separator: "\n").count == 1 && inspected.stderr.contains(says), "\(inspected.stderr)")
        #expect(inspected.stdout.isEmpty)
        let inspectedPipe = try Self.nalcast(["inspect", "--summary", "-"], stdinFrom: input)
        #expect(inspectedPipe.status == 65 && inspectedPipe.stderr.contains(says), "\(inspectedPipe.stderr)")
    }

    @Test func textWithNoStartCodeIsNotH264() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = dir.appendingPathComponent("notes.txt")
        try Data(String(repeating: "hello, this is not video\n", count: 4000).utf8).write(to: text)
        let r = try Self.nalcast(["inspect", "-"], stdinFrom: text)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("no start code (00 00 01) in its first 64 KiB"), "\(r.stderr)")
        let c = try Self.nalcast(["consume", "--from", "-", "-o", "/dev/null"], stdinFrom: text)
        #expect(c.status == 65, "\(c.stderr)")
    }

    @Test func annexBWithAGarbageHeadStillPasses() throws {
        let fixture = try Data(contentsOf: Run.fixtures.appendingPathComponent("HCAFR1_HHI.264"))
        let r = try Run.nalcast(["inspect", "--summary", "-"], stdin: Data("junk".utf8) + fixture)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("access units: 10 "), "\(r.text)")
    }

    // MARK: Y4M

    @Test(arguments: ["YUV4MPEG2 W320 H24", "YUV4MPEG2 W320 H24\n"])
    func aTruncatedY4MHeaderExits65(header: String) throws {
        let r = try Run.nalcast(["produce", "--source", "y4m:-", "-o", "-", "-q"], stdin: Data(header.utf8))
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("y4m: the input ended"), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    // MARK: the upstream goes away

    @Test func anUpstreamLostPastTheReconnectTimeoutExits69() throws {
        let (producer, endpoint) = try ServeTests.producer()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "-o", dir.appendingPathComponent("out.h264").path,
                                                    "--reconnect-timeout", "1s"])
        #expect(consumer.waitFor("connected to", timeout: 10), "\(consumer.stderr)")
        usleep(500_000)
        producer.signal(SIGKILL)  // gone, without an end-of-stream
        producer.wait()
        #expect(consumer.wait(timeout: 20) == 69, "\(consumer.stderr)")
        let last = consumer.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.contains("lost \(endpoint): not back within --reconnect-timeout 1.000 s") && last.contains("last connected at "), "\(consumer.stderr)")
        #expect(!consumer.stderr.contains("stream ended"), "\(consumer.stderr)")
    }

    @Test func aProducerThatEndsItsStreamCleanlyEndsTheRunWith0() throws {
        let (producer, endpoint) = try ServeTests.producer(["--duration", "2s"])
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "-o", dir.appendingPathComponent("out.h264").path,
                                                    "--reconnect-timeout", "1s"])
        #expect(producer.wait(timeout: 20) == 0)
        #expect(consumer.wait(timeout: 20) == 0, "\(consumer.stderr)")
        #expect(consumer.stderr.contains("the producer ended the stream"), "\(consumer.stderr)")
    }

    @Test func reconnectingSaysSoWithAttemptNumbersThenExits69() throws {
        let port = try freePort()
        let r = try Run.nalcast(["consume", "--from", "tcp://127.0.0.1:\(port)", "-o", "/dev/null", "--reconnect-timeout", "8s"], timeout: 30)
        #expect(r.status == 69, "\(r.stderr)")
        let progress = r.stderr.split(separator: "\n").filter { $0.contains("tcp://127.0.0.1:\(port): attempt ") && $0.contains("next try in ") }
        #expect(progress.count >= 2, "\(r.stderr)")
        // Rate-limited: about 20 attempts in 8 s would be 20 lines.
        #expect(progress.count <= 4, "\(r.stderr)")
        #expect(r.stderr.contains("cannot connect to tcp://127.0.0.1:\(port)"), "\(r.stderr)")
    }

    // MARK: --forward

    @Test func aForwardTargetNeedsItsPort() throws {
        let r = try Run.nalcast(["consume", "--from", "-", "--forward", "tcp://127.0.0.1"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("--forward") && r.stderr.contains("the port is missing"), "\(r.stderr)")
    }

    /// A live run whose forward target is down says it is still trying (rate-limited) and,
    /// stopped, reports what the target missed and exits 69: it never answered.
    @Test func aForwardTargetThatStaysDownSaysSoAndIsReportedAtTheEnd() throws {
        let (producer, endpoint) = try ServeTests.producer(["--size", "160x120"])
        defer { producer.signal(SIGTERM); producer.wait() }
        let port = try freePort()
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "--forward", "tcp://127.0.0.1:\(port)"])
        #expect(consumer.waitFor("connected to", timeout: 10), "\(consumer.stderr)")
        let deadline = Moment.now.addingTimeInterval(15)
        func retries() -> Int { consumer.stderr.split(separator: "\n").filter { $0.contains("forward to tcp://127.0.0.1:\(port): attempt ") }.count }
        while retries() < 2 && Moment.now < deadline { usleep(100_000) }
        consumer.signal(SIGTERM)
        #expect(consumer.wait(timeout: 20) == 69, "\(consumer.stderr)")
        #expect(retries() >= 2, "\(consumer.stderr)")
        // Every access unit it was handed was dropped: N of N.
        #expect(consumer.stderr.firstMatch(of: /forward to tcp:\/\/127\.0\.0\.1:\d+: ([1-9]\d*) of \1 access units dropped \(never connected\)/) != nil, "\(consumer.stderr)")
    }

    @Test func aForwardTargetThatNeverAnsweredFailsAFileRunWithTheCount() throws {
        let port = try freePort()
        let fixture = Run.fixtures.appendingPathComponent("HCAFR1_HHI.264").path
        let r = try Run.nalcast(["consume", "--from", fixture, "--forward", "tcp://127.0.0.1:\(port)"], timeout: 60)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderr.contains("forward to tcp://127.0.0.1:\(port): 10 of 10 access units dropped (never connected)"), "\(r.stderr)")
    }
}
