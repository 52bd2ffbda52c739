import TestSupport
import Foundation
import Testing

/// `nalcast consume` end to end: real sockets, real files, FFmpeg as the judge.
@Suite(.serialized) struct ConsumeCommandTests {
    static let fixtures = ["FRExt1_Panasonic.avc", "FRExt3_Panasonic.avc", "HCAFR1_HHI.264", "HCAFF1_HHI.264", "HCAMFF1_HHI.264", "FREXT01_JVC_D.264"]

    /// Each fixture served in odd-sized chunks: `-o` gets the bytes exactly, the segments
    /// concatenate to them, and each segment decodes alone with its access units' frames.
    @Test(arguments: fixtures)
    func fixtureOverTCPComesOutByteIdenticalAndAsDecodableSegments(name: String) throws {
        // Served as it is: a clean close ends the stream as a file does (StreamEndTests).
        let served = [UInt8](try Data(contentsOf: Run.fixtures.appendingPathComponent(name)))
        let server = try TestStreamServer(data: served)
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("out.h264").path
        let segs = dir.appendingPathComponent("segs").path
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--reconnect-timeout", "0", "-o", out,
                                 "--segments", segs, "--segment-max-bytes", "1", "--segment-name", "s-%n.h264"], timeout: 60)
        #expect(r.status == exitAfterCleanClose(of: served), "\(r.stderr)")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))) == served)
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        let idrs = try inspectIDRs(out)
        #expect(names.count == idrs, "\(names)")
        var joined: [UInt8] = []
        var frames = 0
        for segment in names {
            let path = segs + "/" + segment
            joined += [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let decoded = try Decoded(path)
            let ours = try inspect(path)
            #expect(decoded.errors.isEmpty, "\(segment): \(decoded.errors)")
            #expect(decoded.packets == ours.accessUnits, "\(segment)")
            #expect(Array(ours.firstTypes.prefix(2)) == [7, 8], "\(segment) starts with \(ours.firstTypes)")
            frames += decoded.frames
        }
        #expect(joined == served)
        #expect(frames == (try Decoded(out)).frames)
    }

    func inspectIDRs(_ path: String) throws -> Int {
        let r = try Run.nalcast(["inspect", "--json", "--summary", path])
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        return json["idrAccessUnits"] as? Int ?? -1
    }

    /// Garbage mid-stream: the consumer resyncs, everything from the next IDR on is written
    /// exactly and decodes.
    @Test func garbageMidStreamResyncsAtTheNextIDR() throws {
        let stream = try Streams.ffmpeg(frames: 60, keyint: 10)
        // Cut at the IDR access unit nearest the middle (x264: SPS starts it).
        let sps: [UInt8] = [0, 0, 0, 1, 0x67]
        var cuts: [Int] = []
        for i in 0..<(stream.count - 5) where Array(stream[i..<(i + 5)]) == sps { cuts.append(i) }
        let cut = try #require(cuts.min { abs($0 - stream.count / 2) < abs($1 - stream.count / 2) })
        var garbage = [UInt8](repeating: 0, count: 20_000)
        var rng = SystemRandomNumberGenerator()
        for i in garbage.indices { garbage[i] = UInt8.random(in: 0...255, using: &rng) }
        // Garbage lands inside the access unit before the IDR.
        let served = Array(stream[0..<(cut - 300)]) + garbage + Array(stream[(cut - 300)...]) + [0, 0, 0, 1, 0x0b]
        let server = try TestStreamServer(data: served)
        let dir = try temporaryDirectory()
        let out = dir.appendingPathComponent("out.h264").path
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--reconnect-timeout", "0", "-o", out], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
        let tail = Array(stream[cut...]) + [0, 0, 0, 1, 0x0b]
        #expect(written.count >= tail.count)
        #expect(Array(written.suffix(tail.count)) == tail)
        // The part after the resync decodes on its own, every frame.
        let tailPath = dir.appendingPathComponent("tail.h264").path
        try Data(written.suffix(tail.count)).write(to: URL(fileURLWithPath: tailPath))
        let decoded = try Decoded(tailPath)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames == (try inspect(tailPath)).accessUnits)
    }

    /// SIGKILL mid-segment, then a restart on the same directory: the `.part` is cut at
    /// its last complete access unit, renamed, and decodes.
    @Test func killedMidSegmentThenRestartedRecoversThePart() throws {
        let stream = try Streams.ffmpeg(frames: 150, keyint: 15)
        let server = try TestStreamServer(data: stream, chunkSizes: [997], pause: 2_000)
        let dir = try temporaryDirectory()
        let segs = dir.appendingPathComponent("segs").path
        let consumer = try Background(Run.nalcast, ["consume", "--from", server.endpoint, "--segments", segs, "--segment-duration", "60s", "--segment-name", "r-%n.h264"])
        // Wait until the segment holds a few access units.
        let deadline = Moment.now.addingTimeInterval(20)
        var partSize = 0
        while Moment.now < deadline && partSize < 20_000 {
            usleep(20_000)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: segs)) ?? []
            if let part = names.first(where: { $0.hasSuffix(".part") }) {
                partSize = (try? FileManager.default.attributesOfItem(atPath: segs + "/" + part)[.size] as? Int) ?? 0
            }
        }
        #expect(partSize >= 20_000)
        consumer.signal(SIGKILL)
        consumer.wait()
        let leftover = try FileManager.default.contentsOfDirectory(atPath: segs)
        #expect(leftover.contains("r-00001.h264.part"), "\(leftover)")

        let again = try Run.nalcast(["consume", "--from", Run.fixtures.appendingPathComponent("HCAFR1_HHI.264").path, "--segments", segs, "--segment-name", "r-%n.h264"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("recovered"), "\(again.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(!names.contains { $0.hasSuffix(".part") || $0.hasSuffix(".idx") }, "\(names)")
        let recovered = segs + "/r-00001.h264"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: recovered)))
        #expect(Array(stream.prefix(bytes.count)) == bytes)  // a prefix of what was sent
        let decoded = try Decoded(recovered)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames == (try inspect(recovered)).accessUnits)
        #expect(decoded.frames > 0)
    }

    /// `--forward` to an FFmpeg that starts late: the consumer retries, then FFmpeg gets a
    /// stream it decodes without one error.
    @Test func forwardsToALateFFmpegThatDecodesWithoutErrors() throws {
        let stream = try Streams.ffmpeg(frames: 150, keyint: 15)
        let server = try TestStreamServer(data: stream + [0, 0, 0, 1, 0x0b], chunkSizes: [1500], pause: 20_000)
        let port = try freePort()
        let dir = try temporaryDirectory()
        let consumer = try Background(Run.nalcast, ["consume", "--from", server.endpoint, "--reconnect-timeout", "0", "--forward", "tcp://127.0.0.1:\(port)"])
        #expect(consumer.waitFor("is down", timeout: 10), "\(consumer.stderr)")
        usleep(500_000)
        let crc = dir.appendingPathComponent("frames.txt")
        let ffmpeg = try Background("ffmpeg", ["-nostdin", "-v", "error", "-f", "h264", "-i", "tcp://127.0.0.1:\(port)?listen=1", "-f", "framecrc", "-"], stdoutTo: crc)
        #expect(consumer.wait(timeout: 60) == 0, "\(consumer.stderr)")
        #expect(ffmpeg.wait(timeout: 30) == 0)
        #expect(consumer.stderr.contains("forwarding to"), "\(consumer.stderr)")
        // The forward is delimited (a live input), and its end leaves nothing open: FFmpeg
        // says nothing at all.
        #expect(ffmpeg.stderr.isEmpty, "\(ffmpeg.stderr)")
        let frames = try String(contentsOf: crc, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        #expect(frames > 0)
    }

    /// `-o - | head -c 100000`: the pipe closes, the consumer goes on segmenting, exit 0.
    /// (Annex-B segments, so that together they are the input byte for byte.)
    @Test func closedStdoutPipeLeavesTheSegmentsGoingOn() throws {
        let stream = try Streams.ffmpeg(frames: 150, keyint: 30, bitrate: "4M")
        let dir = try temporaryDirectory()
        let input = try inputFile(stream, in: dir)
        let segs = dir.appendingPathComponent("segs").path
        let script = "\"$0\" consume --from \"$1\" -o - --segments \"$2\" --segment-duration 1s --segment-name '%n.h264' | head -c 100000 > /dev/null; echo \"${PIPESTATUS[0]}\""
        let r = try Run.program("/bin/bash", ["-c", script, Run.nalcast, input.path, segs], timeout: 60)
        #expect(r.text.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(r.text) \(r.stderr)")
        #expect(r.stderr.contains("stdout: the reader went away"), "\(r.stderr)")
        var joined: [UInt8] = []
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names.count == 5, "\(names)")
        for name in names { joined += [UInt8](try Data(contentsOf: URL(fileURLWithPath: segs + "/" + name))) }
        #expect(joined == stream)
    }

    @Test(arguments: [
        ["--segments", "x", "--segment-duration", "abc"],
        [],
        ["--from", "ftp://x", "-o", "-"],
        ["--segments", "x", "--segment-name", "a/b%n"],
        ["--segments", "x", "--bogus"],
        ["--forward", "tcp://host:99999"],
    ])
    func optionErrorsExit64WithOneLine(arguments: [String]) throws {
        let r = try Run.nalcast(["consume"] + arguments)
        #expect(r.status == 64)
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    @Test func nothingListeningWithReconnectTimeoutZeroExits69() throws {
        let port = try freePort()
        let r = try Run.nalcast(["consume", "--from", "tcp://127.0.0.1:\(port)", "-o", "/dev/null", "--reconnect-timeout", "0"])
        #expect(r.status == 69)
        #expect(r.stderr.contains("cannot connect to tcp://127.0.0.1:\(port)"), "\(r.stderr)")
        #expect(!r.stderr.contains("retrying"), "\(r.stderr)")
    }

    @Test func missingInputFileExits66() throws {
        let r = try Run.nalcast(["consume", "--from", "/nonexistent/in.h264", "-o", "/dev/null"])
        #expect(r.status == 66)
    }

    @Test func dryRunPrintsTheResolvedConfiguration() throws {
        let r = try Run.nalcast(["consume", "--dry-run", "--segments", "d", "--keep", "3"], environment: ["NALCAST_SEGMENT_DURATION": "2s", "PATH": "/usr/bin:/bin"])
        #expect(r.status == 0)
        #expect(r.text.contains("segment duration: 2.000 s"))
        #expect(r.text.contains("keep: 3"))
        #expect(r.text.contains("from: tcp://127.0.0.1:7264"))
    }
}
