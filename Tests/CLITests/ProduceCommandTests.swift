import Foundation
import TestSupport
import Testing

/// `nalcast produce -o -`: every source, decoded by FFmpeg; the stream's structure; pacing;
/// and every kind of bad input.
@Suite struct ProduceCommandTests {
    static func y4m(_ dir: URL, frames: Int, rate: Int = 30, size: String = "320x240", pixFmt: String = "yuv420p") throws -> URL {
        let url = dir.appendingPathComponent("in-\(rate)-\(pixFmt).y4m")
        let r = try Run.program("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate)", "-frames:v", "\(frames)",
                                           "-pix_fmt", pixFmt, "-f", "yuv4mpegpipe", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        return url
    }

    static func checkDecodes(_ stream: Data, frames: Int, width: Int, height: Int, _ what: String) throws {
        let decoded = try ffmpegDecode(stream)
        #expect(decoded.errors.isEmpty, "\(what): \(decoded.errors)")
        #expect(decoded.frames == frames, "\(what)")
        let json = try inspect(stream)
        #expect(json["width"] as? Int == width, "\(what)")
        #expect(json["height"] as? Int == height, "\(what)")
    }

    @Test func testPatternDecodes() throws {
        let r = try Run.nalcast(["produce", "--frames", "120", "--no-realtime", "--size", "320x240", "-o", "-", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        try Self.checkDecodes(r.stdout, frames: 120, width: 320, height: 240, "testsrc")
    }

    @Test func y4mFileAndStdinDecode() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.y4m(dir, frames: 120)
        let fromFile = try Run.nalcast(["produce", "--source", "y4m:\(input.path)", "--frames", "120", "-o", "-", "-q"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        try Self.checkDecodes(fromFile.stdout, frames: 120, width: 320, height: 240, "y4m file")
        let fromStdin = try Run.nalcast(["produce", "--source", "y4m:-", "-o", "-", "-q"], stdin: try Data(contentsOf: input))
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        try Self.checkDecodes(fromStdin.stdout, frames: 120, width: 320, height: 240, "y4m stdin")
    }

    @Test func rawBGRADecodes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("in.bgra")
        _ = try Run.program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "120", "-pix_fmt", "bgra", "-f", "rawvideo", raw.path])
        let r = try Run.nalcast(["produce", "--source", "raw:\(raw.path)", "--input-size", "320x240", "--pix-fmt", "bgra", "--input-fps", "30", "-o", "-", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        try Self.checkDecodes(r.stdout, frames: 120, width: 320, height: 240, "raw bgra")
    }

    @Test func streamStructure() throws {
        let r = try Run.nalcast(["produce", "--frames", "90", "--no-realtime", "--size", "320x240", "--keyint", "1s", "-o", "-", "-q"])
        let json = try inspect(r.stdout)
        let units = try #require(json["units"] as? [[String: Any]])
        #expect(units.count == 90)
        var lastSequence = -1
        var lastPTS = -1
        for (i, unit) in units.enumerated() {
            let types = unit["nalTypes"] as? [Int] ?? []
            #expect(types.first == 9, "unit \(i) starts with an AUD")
            if unit["idr"] as? Bool == true {
                #expect(types.contains(7) && types.contains(8), "IDR \(i) carries SPS and PPS")
                #expect(types.firstIndex(of: 7)! < types.firstIndex(of: 5)!)
            }
            let ts = try #require(unit["timestamp"] as? [String: Any], "unit \(i) has the timestamp SEI")
            let sequence = ts["sequence"] as! Int
            let pts = ts["pts90k"] as! Int
            #expect(sequence > lastSequence && pts > lastPTS, "unit \(i)")
            #expect((ts["keyframe"] as? Bool) == (unit["idr"] as? Bool))
            lastSequence = sequence
            lastPTS = pts
        }
        // keyint 1 s at 30 fps: IDRs at 0, 30, 60.
        #expect(json["idrAccessUnits"] as? Int == 3)
        #expect(json["frameRate"] as? Double == 30)
    }

    @Test func pacingHalvesA60fpsInput() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.y4m(dir, frames: 120, rate: 60)
        let events = dir.appendingPathComponent("events.jsonl")
        let r = try Run.nalcast(["produce", "--source", "y4m:\(input.path)", "--fps", "30", "-o", "-", "-q", "--events", events.path])
        #expect(r.status == 0, "\(r.stderr)")
        try Self.checkDecodes(r.stdout, frames: 60, width: 320, height: 240, "60 → 30 fps")
        let json = try inspect(r.stdout)
        #expect(json["frameRate"] as? Double == 30)
        let units = json["units"] as? [[String: Any]] ?? []
        let sequences = units.compactMap { ($0["timestamp"] as? [String: Any])?["sequence"] as? Int }
        // Every other captured frame: the sequence numbers show the gaps.
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 - $0 == 2 })
        let finished = try String(contentsOf: events, encoding: .utf8).split(separator: "\n").last { $0.contains("\"finished\"") }
        #expect(finished?.contains("\"framesDropped\":60") == true, "\(finished ?? "")")
    }

    @Test func malformedY4MHeaderNamesTheField() throws {
        let cases: [(String, String)] = [
            ("YUV4MPEG2 W320 H240 F30:0 C420jpeg\n", "frame rate"),
            ("YUV4MPEG2 W-2 H240 F30:1\n", "width"),
            ("YUV4MPEG2 W320 F30:1\n", "height"),
            ("YUV4MPEG3 W320 H240\n", "YUV4MPEG2"),
        ]
        for (header, field) in cases {
            let r = try Run.nalcast(["produce", "--source", "y4m:-", "-o", "-", "-q"], stdin: Data(header.utf8) + Data(count: 1000))
            #expect(r.status == 65, "\(header)")
            #expect(r.stderr.contains(field), "\(header): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        }
    }

    @Test func truncatedLastFrameKeepsTheFramesBefore() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var input = try Data(contentsOf: try Self.y4m(dir, frames: 20))
        input.removeLast(1000)
        let r = try Run.nalcast(["produce", "--source", "y4m:-", "-o", "-", "-q"], stdin: input)
        #expect(r.status == 65)
        #expect(r.stderr.contains("truncated"), "\(r.stderr)")
        try Self.checkDecodes(r.stdout, frames: 19, width: 320, height: 240, "truncated")
    }

    @Test func rawFileThatIsNotWholeFramesIsRefused() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("odd.raw")
        try Data(count: 320 * 240 * 3 / 2 * 2 + 17).write(to: raw)
        let r = try Run.nalcast(["produce", "--source", "raw:\(raw.path)", "--input-size", "320x240", "-o", "-", "-q"])
        #expect(r.status == 65)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("\(320 * 240 * 3 / 2)"), "\(r.stderr)")
    }

    @Test func impossibleOptionsAreUsageErrors() throws {
        let cases: [[String]] = [
            ["--size", "321x240"], ["--fps", "0"], ["--preset", "warp"], ["--source", "webcam"],
            ["--source", "raw:-"], ["--listen", "tcp://0.0.0.0:7264"], ["--join", "later"],
            ["--bitrate", "fast"], ["--keyint", "0"], ["--frames", "-1"], ["-o"],
        ]
        for args in cases {
            let r = try Run.nalcast(["produce"] + args + (args.contains("-o") ? [] : ["-o", "/dev/null"]))
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        let missing = try Run.nalcast(["produce", "--source", "y4m:/nonexistent.y4m", "-o", "-"])
        #expect(missing.status == 66, "\(missing.stderr)")
    }

    @Test func environmentFillsOptionsAndFlagsWin() throws {
        var env = ProcessInfo.processInfo.environment
        env["NALCAST_SIZE"] = "160x120"
        env["NALCAST_FPS"] = "15"
        let fromEnv = try Run.nalcast(["produce", "--dry-run", "-o", "-"], environment: env)
        #expect(fromEnv.text.contains("fps: 15"))
        let r = try Run.nalcast(["produce", "--frames", "3", "--no-realtime", "-o", "-", "-q"], environment: env)
        #expect(try inspect(r.stdout)["width"] as? Int == 160)
        let flagWins = try Run.nalcast(["produce", "--frames", "3", "--no-realtime", "--size", "320x240", "-o", "-", "-q"], environment: env)
        #expect(try inspect(flagWins.stdout)["width"] as? Int == 320)
        env["NALCAST_SIZE"] = "nonsense"
        let bad = try Run.nalcast(["produce", "--dry-run", "-o", "-"], environment: env)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("NALCAST_SIZE"))
    }
}

@Suite struct ProduceStopTests {
    @Test func sigintFlushesAndExitsZero() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.h264")
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "-o", out.path])
        #expect(producer.waitFor("writing"))
        usleep(1_200_000)
        producer.signal(SIGINT)
        #expect(producer.wait() == 0, "\(producer.stderr)")
        let stream = try Data(contentsOf: out)
        let decoded = try ffmpegDecode(stream)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames >= 20)
        // Every frame captured made it to the file: the last access unit is complete.
        let json = try inspect(stream)
        #expect(json["accessUnits"] as? Int == decoded.frames)
    }
}
