import Foundation
import Testing
import TestSupport

/// `-o FILE.mp4|.ts|.mkv|.flv` of `consume` and `produce`: real containers with true timing,
/// judged by FFmpeg (ffprobe for the container's facts, the decoder's frame checksums for
/// the pictures and their order).
@Suite(.serialized) struct ContainerOutputTests {
    static let formats = ["mp4", "ts", "mkv", "flv"]

    /// The md5 column of `ffmpeg -f framemd5`: one checksum per decoded picture, in the
    /// order they are presented.
    static func frameChecksums(_ input: [String]) throws -> [String] {
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error"] + input + ["-f", "framemd5", "-"])
        #expect(r.status == 0, "ffmpeg \(input): \(r.stderr)")
        return r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// ffprobe's stream facts: `key=value` lines of the first video stream.
    static func probe(_ path: String, extra: [String] = [], stdin: Data? = nil) throws -> [String: String] {
        let r = try Run.program("ffprobe", ["-v", "error"] + extra + ["-count_frames", "-select_streams", "v:0",
            "-show_entries", "stream=codec_name,width,height,r_frame_rate,avg_frame_rate,nb_read_frames:format=format_name,duration",
            "-of", "default=nw=1", path], stdin: stdin)
        #expect(r.status == 0, "ffprobe \(path): \(r.stderr)")
        var facts: [String: String] = [:]
        for line in r.text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { facts[String(parts[0])] = String(parts[1]) }
        }
        return facts
    }

    /// `(pts, dts)` of every packet, in file order, in seconds (Matroska keeps no dts: nil).
    static func packetTimes(_ path: String) throws -> [(pts: Double, dts: Double?)] {
        let r = try Run.program("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,dts_time", "-of", "csv=p=0", path])
        #expect(r.status == 0, "\(r.stderr)")
        return r.text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",")
            guard f.count >= 1, let p = Double(f[0]) else { return nil }
            return (p, f.count > 1 ? Double(f[1]) : nil)
        }
    }

    /// Every conformance stream (B-frames, fields, MBAFF, several IDRs) through each
    /// container decodes to the very pictures of the raw stream, in the same order.
    @Test(arguments: ConformanceStream.all, formats)
    func conformanceStreamDecodesFrameForFrame(_ stream: ConformanceStream, _ format: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.\(format)").path
        let r = try Run.nalcast(["consume", "--from", stream.path, "-o", out, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let expected = try Self.frameChecksums(["-f", "h264", "-i", stream.path])
        let got = try Self.frameChecksums(["-i", out])
        #expect(!expected.isEmpty)
        #expect(got == expected, "\(stream) as \(format)")
        let facts = try Self.probe(out)
        #expect(facts["codec_name"] == "h264")
        #expect(facts["width"] == "352" && facts["height"] == "288")
        #expect(facts["nb_read_frames"] == String(expected.count))
        // Decode times rise strictly in file order; no picture is presented before it is decoded.
        // One packet per frame: the two fields of a pair (two access units) are one.
        let times = try Self.packetTimes(out)
        #expect(times.count == expected.count)
        // (Matroska keeps no decode times: what ffprobe shows for them is its own guess.)
        if format != "mkv" {
            for (a, b) in zip(times, times.dropFirst()) {
                if let da = a.dts, let db = b.dts { #expect(db > da, "\(times)") }
            }
            for t in times { if let d = t.dts { #expect(t.pts >= d, "\(times)") } }
        }
        #expect(Set(times.map(\.pts)).count == times.count, "two pictures at one time: \(times)")
        // No VUI frame rate in these streams: counted at 30 fps (--frame-rate), a field pair
        // being one frame, so the pictures span frames / 30 s.
        let pts = times.map(\.pts)
        #expect(abs(pts.max()! + 1.0 / 30 - pts.min()! - Double(expected.count) / 30) < 0.01, "\(pts)")
    }

    /// An x264 stream made by FFmpeg with B-frames (pyramid, 3 in a row) and an IDR every
    /// 25 frames, no timestamp SEI: the containers present its pictures in order, at its
    /// VUI frame rate, 2 s for 60 frames.
    @Test(arguments: ["mp4", "mkv", "ts"])
    func x264StreamWithBFrames(_ format: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.h264").path
        let made = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                              "-frames:v", "60", "-c:v", "libx264", "-preset", "fast", "-g", "25", "-bf", "3", "-f", "h264", input])
        #expect(made.status == 0, "\(made.stderr)")
        let out = dir.appendingPathComponent("out.\(format)").path
        let r = try Run.nalcast(["consume", "--from", input, "-o", out, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let expected = try Self.frameChecksums(["-f", "h264", "-i", input])
        #expect(expected.count == 60)
        #expect(try Self.frameChecksums(["-i", out]) == expected)
        let facts = try Self.probe(out)
        #expect(facts["r_frame_rate"] == "30/1", "\(facts)")
        let times = try Self.packetTimes(out)
        #expect(times.count == 60)
        #expect(Set(times.map(\.pts)).count == 60)
        for t in times { if let d = t.dts { #expect(t.pts >= d) } }
        // Presented over 2 s: from the first picture to the end of the last.
        let pts = times.map(\.pts)
        #expect(abs(pts.max()! + 1.0 / 30 - pts.min()! - 2.0) < 0.01, "\(pts)")
        if format == "mp4" {
            // The edit list starts the presentation at 0: the file says 2 s.
            let duration = try #require(Double(facts["duration"] ?? ""), "\(facts)")
            #expect(abs(duration - 2.0) < 0.04, "duration \(duration)")
        }
    }

    /// 60 frames at 30 fps are 2 s of MP4, at 30 fps, whatever speed they were encoded at.
    @Test(arguments: ["mp4", "mkv", "ts"])
    func producedFileHasItsTrueDuration(_ format: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.\(format)").path
        let r = try Run.nalcast(["produce", "--frames", "60", "--no-realtime", "--size", "320x240", "-o", out, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let facts = try Self.probe(out)
        #expect(facts["codec_name"] == "h264")
        #expect(facts["width"] == "320" && facts["height"] == "240")
        #expect(facts["r_frame_rate"] == "30/1")
        #expect(facts["nb_read_frames"] == "60")
        let duration = try #require(Double(facts["duration"] ?? ""), "\(facts)")
        #expect(abs(duration - 2.0) < 0.04, "duration \(duration)")
        let times = try Self.packetTimes(out)
        #expect(times.count == 60)
        for (a, b) in zip(times, times.dropFirst()) {
            #expect(b.pts > a.pts)
            if let da = a.dts, let db = b.dts { #expect(db > da) }
            #expect(abs(b.pts - a.pts - 1.0 / 30) < 0.002)
        }
    }

    /// Frames missing from a nalcast stream (their timestamp SEI says when the next was
    /// captured) stay a gap in time: the clip is not played faster.
    @Test func droppedFramesStayAGapInTime() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("in.h264").path
        let r = try Run.nalcast(["produce", "--frames", "60", "--no-realtime", "--size", "320x240", "-o", raw, "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        // Cut access units 20 to 29 (each begins with an access unit delimiter).
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        var starts: [Int] = []
        var i = 0
        while i + 5 <= bytes.count {
            if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 0 && bytes[i + 3] == 1 && bytes[i + 4] & 0x1f == 9 { starts.append(i) }
            i += 1
        }
        #expect(starts.count == 60)
        let cut = Array(bytes[..<starts[20]]) + Array(bytes[starts[30]...])
        let cutPath = dir.appendingPathComponent("cut.h264").path
        try Data(cut).write(to: URL(fileURLWithPath: cutPath))
        let out = dir.appendingPathComponent("out.mp4").path
        let c = try Run.nalcast(["consume", "--from", cutPath, "-o", out, "-q"])
        #expect(c.status == 0, "\(c.stderr)")
        let times = try Self.packetTimes(out)
        #expect(times.count == 50)
        let steps = zip(times, times.dropFirst()).map { $1.pts - $0.pts }
        #expect(abs(steps[19] - 11.0 / 30) < 0.002, "\(steps)")
        for (k, s) in steps.enumerated() where k != 19 { #expect(abs(s - 1.0 / 30) < 0.002, "step \(k): \(s)") }
    }

    /// `-o - --format ts` into a pipe: ffprobe reads it from stdin, frame rate included.
    @Test func transportStreamThroughAPipe() throws {
        let r = try Run.nalcast(["produce", "--frames", "30", "--no-realtime", "--size", "320x240", "-o", "-", "--format", "ts", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.first == 0x47)  // an MPEG-TS packet's sync byte
        let facts = try Self.probe("pipe:0", stdin: r.stdout)
        #expect(facts["format_name"] == "mpegts")
        #expect(facts["codec_name"] == "h264")
        #expect(facts["r_frame_rate"] == "30/1")
        #expect(facts["nb_read_frames"] == "30")
    }

    /// The FFmpeg libraries are opened (dlopen) only for a container: a raw Annex-B run never
    /// loads them, which the dynamic loader's own trace (LD_DEBUG=libs) shows; an MP4 run does.
    @Test func ffmpegLibrariesLoadOnlyForAContainer() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "libs"
        let raw = try Run.nalcast(["produce", "--frames", "5", "--no-realtime", "--size", "320x240", "-o", dir.appendingPathComponent("x.h264").path, "-q"],
                                  environment: environment)
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(raw.stderr.contains("find library="), "no loader trace: \(raw.stderr.prefix(300))")
        #expect(!raw.stderr.contains("libav"), "\(raw.stderr.split(separator: "\n").filter { $0.contains("libav") }.prefix(3))")
        let mp4 = dir.appendingPathComponent("x.mp4").path
        let container = try Run.nalcast(["produce", "--frames", "5", "--no-realtime", "--size", "320x240", "-o", mp4, "-q"], environment: environment)
        #expect(container.status == 0)
        #expect(container.stderr.contains("libavformat.so."))
        #expect(try Self.probe(mp4)["nb_read_frames"] == "5")
    }

    /// Without libavformat (here: an empty file mounted over it, in a namespace of our own), a
    /// container output is one line naming the package, exit 69, and the file is untouched;
    /// raw Annex-B is written as ever.
    @Test(.enabled(if: canMountPrivately, "needs `unshare -rm` (a user and mount namespace) to hide the library"))
    func missingFFmpegLibrariesRefuseOnlyContainers() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = try Run.program("ldconfig", ["-p"]).text.split(separator: "\n")
        let entry = try #require(cache.first { $0.contains("libavformat.so.") && $0.contains("x86-64") })
        let library = String(entry.split(separator: " ").last!)
        let mp4 = dir.appendingPathComponent("kept.mp4").path
        try Data("kept".utf8).write(to: URL(fileURLWithPath: mp4))
        let raw = dir.appendingPathComponent("x.h264").path
        let script = """
            mount --bind /dev/null \(library) || exit 99
            "$0" produce --frames 5 --no-realtime --size 320x240 -o \(mp4) -q; echo "mp4=$?" >&2
            "$0" produce --frames 5 --no-realtime --size 320x240 -o \(raw) -q; echo "h264=$?" >&2
            """
        let r = try Run.program("unshare", ["-rm", "sh", "-c", script, Run.nalcast])
        let lines = r.stderr.split(separator: "\n").map(String.init)
        #expect(lines.contains("mp4=69"), "\(r.stderr)")
        #expect(lines.contains("h264=0"), "\(r.stderr)")
        let refusal = lines.filter { $0.hasPrefix("nalcast:") }
        #expect(refusal.count == 1 && refusal[0].contains("install the libavformat") && refusal[0].contains(mp4), "\(r.stderr)")
        #expect(try String(contentsOfFile: mp4, encoding: .utf8) == "kept")
        #expect((try FileManager.default.attributesOfItem(atPath: raw)[.size] as? Int ?? 0) > 0)
    }

    /// MP4 cannot go to a pipe (its index is written last, by going back): one line, 64.
    @Test func mp4ToAPipeIsRefused() throws {
        let r = try Run.nalcast(["produce", "--frames", "5", "--no-realtime", "--size", "320x240", "-o", "-", "--format", "mp4", "-q"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("seekable"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    /// `--format` wins over the extension; a bad one is a usage error.
    @Test func formatOptionOverridesTheExtension() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.bin").path
        let stream = ConformanceStream.named("HCAFR1_HHI.264")
        let r = try Run.nalcast(["consume", "--from", stream.path, "-o", out, "--format", "mkv", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.probe(out)["format_name"] == "matroska,webm")
        let bad = try Run.nalcast(["consume", "--from", stream.path, "-o", out, "--format", "avi"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("mp4, ts, mkv, flv or h264"), "\(bad.stderr)")
        // Without --format, an unknown extension stays raw Annex-B, byte for byte.
        let raw = try Run.nalcast(["consume", "--from", stream.path, "-o", out, "-q"])
        #expect(raw.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(contentsOf: URL(fileURLWithPath: stream.path)))
    }

    /// `-o` of produce and consume picks the container by the name's extension, in any
    /// case (.mp4/.m4v/.mov, .ts/.m2ts/.mts, .mkv, .flv), else raw Annex-B; `--format`
    /// wins over the name, both ways. ffprobe names what was written.
    @Test(arguments: ["produce", "consume"])
    func outputContainerFollowsTheNameOrFormat(_ command: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = ConformanceStream.named("HCAFR1_HHI.264")
        let cases: [(name: String, format: String?, expected: String?)] = [
            ("a.mp4", nil, "mov,mp4,m4a,3gp,3g2,mj2"), ("b.M4V", nil, "mov,mp4,m4a,3gp,3g2,mj2"), ("c.mov", nil, "mov,mp4,m4a,3gp,3g2,mj2"),
            ("d.ts", nil, "mpegts"), ("e.m2ts", nil, "mpegts"), ("f.mkv", nil, "matroska,webm"), ("g.flv", nil, "flv"),
            ("h.h264", nil, nil), ("i.264", nil, nil), ("j.bin", nil, nil),
            ("k.bin", "ts", "mpegts"), ("l.h264", "mp4", "mov,mp4,m4a,3gp,3g2,mj2"), ("m.mp4", "h264", nil), ("n.ts", "mkv", "matroska,webm"),
        ]
        for c in cases {
            let out = dir.appendingPathComponent(c.name).path
            let source = command == "produce" ? ["produce", "--frames", "10", "--no-realtime", "--size", "320x240"] : ["consume", "--from", stream.path]
            let r = try Run.nalcast(source + ["-o", out, "-q"] + (c.format.map { ["--format", $0] } ?? []))
            #expect(r.status == 0, "\(command) -o \(c.name) \(c.format ?? ""): \(r.stderr)")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: out))
            if let expected = c.expected {
                #expect(try Self.probe(out)["format_name"] == expected, "\(command) -o \(c.name) \(c.format ?? "")")
            } else if command == "consume" {
                #expect(bytes == (try Data(contentsOf: URL(fileURLWithPath: stream.path))), "\(c.name): raw Annex-B, as received")
            } else {
                #expect(bytes.prefix(4) == Data([0, 0, 0, 1]), "\(c.name): raw Annex-B starts with a start code: \([UInt8](bytes.prefix(8)))")
            }
        }
    }

    /// A write that fails (disk full) is one error line and exit 74, not a crash.
    @Test func aFailedWriteIsOneLineAndExit74() throws {
        let stream = ConformanceStream.named("FRExt3_Panasonic.avc")
        let r = try Run.nalcast(["consume", "--from", stream.path, "-o", "/dev/full", "--format", "ts", "-q"])
        #expect(r.status == 74, "\(r.stderr)")
        #expect(r.stderr.contains("No space left on device"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    /// `--segment-name s-%n.mp4|.ts|.mkv`: each segment is a file of that container that
    /// decodes alone; together they hold every picture, in order.
    @Test(arguments: ["mp4", "ts", "mkv"])
    func segmentsInAContainer(_ format: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("in.h264").path
        let p = try Run.nalcast(["produce", "--frames", "150", "--no-realtime", "--size", "320x240", "--keyint", "1s", "-o", raw, "-q"])
        #expect(p.status == 0, "\(p.stderr)")
        let segs = dir.appendingPathComponent("segs").path
        let r = try Run.nalcast(["consume", "--from", raw, "--segments", segs, "--segment-duration", "2s", "--segment-name", "s-%n.\(format)", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names == ["s-00001.\(format)", "s-00002.\(format)", "s-00003.\(format)"])
        var checksums: [String] = []
        for name in names {
            let path = segs + "/" + name
            checksums += try Self.frameChecksums(["-i", path])
            let facts = try Self.probe(path)
            #expect(facts["codec_name"] == "h264" && facts["r_frame_rate"] == "30/1", "\(name): \(facts)")
        }
        #expect(checksums == (try Self.frameChecksums(["-f", "h264", "-i", raw])))
        if format == "mp4" {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: segs + "/" + names[0]))
            #expect(bytes.range(of: Data("moof".utf8)) != nil, "an MP4 segment is fragmented")
        }
    }

    /// A `consume` killed while writing an MP4 segment leaves a `.part`; the next start
    /// cuts it to its last complete fragment and names it: it plays, without errors.
    @Test func killedMP4SegmentIsRecoveredToItsLastFragment() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--keyint", "500ms", "--listen", "tcp://127.0.0.1:0"])
        let endpoint = try #require(producer.servingEndpoint(), "\(producer.stderr)")
        let segs = dir.appendingPathComponent("segs").path
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "--segments", segs, "--segment-duration", "60s", "--segment-name", "s-%n.mp4"])
        // Wait until the index records two complete fragments, then kill.
        let index = segs + "/s-00001.mp4.part.idx"
        let deadline = Moment.now.addingTimeInterval(30)
        while Moment.now < deadline {
            let size = (try? FileManager.default.attributesOfItem(atPath: index)[.size] as? Int) ?? 0
            if size >= 16 { break }
            usleep(50_000)
        }
        consumer.signal(SIGKILL)
        consumer.wait()
        producer.signal(SIGINT)
        producer.wait()
        #expect(FileManager.default.fileExists(atPath: segs + "/s-00001.mp4.part"))
        // The next run recovers it (its own input: a short file).
        let raw = dir.appendingPathComponent("in.h264").path
        _ = try Run.nalcast(["produce", "--frames", "10", "--no-realtime", "--size", "320x240", "-o", raw, "-q"])
        let r = try Run.nalcast(["consume", "--from", raw, "--segments", segs, "--segment-name", "t-%n.mp4"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("recovered"), "\(r.stderr)")
        let recovered = segs + "/s-00001.mp4"
        #expect(FileManager.default.fileExists(atPath: recovered))
        let decoded = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", recovered, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        let facts = try Self.probe(recovered)
        #expect((Int(facts["nb_read_frames"] ?? "") ?? 0) > 0, "\(facts)")
    }
}

/// True where this process may make a mount namespace of its own (`unshare -rm`): not in
/// every container.
let canMountPrivately: Bool = (try? Run.program("unshare", ["-rm", "true"]).status) == 0
