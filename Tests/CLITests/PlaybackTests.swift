import Foundation
import Testing
import TestSupport

/// Recordings play everywhere: finished segments (MP4 by default, TS, Matroska) and `-o`
/// files, opened by the players people use (FFmpeg, GStreamer, mpv, Chromium's `<video>`),
/// each asked something that fails when the file is wrong: every picture, the duration, a
/// seek that lands on the right picture, the test pattern's colours where they belong.
@Suite(.serialized) struct PlaybackTests {
    // MARK: Conformance streams cut into container segments

    /// Each conformance stream (B-frames, fields, MBAFF, two IDRs in FRExt1) cut at every IDR
    /// (`--segment-max-bytes 1`) into segments of each container: the segments, each decoded
    /// alone and one after the other, are the raw stream's pictures, frame for frame.
    @Test(arguments: ConformanceStream.all, ["mp4", "ts", "mkv"])
    func conformanceStreamSegmentsDecodeFrameForFrame(_ stream: ConformanceStream, _ format: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let segs = dir.appendingPathComponent("segs").path
        let r = try Run.nalcast(["consume", "--from", stream.path, "--segments", segs, "--segment-max-bytes", "1",
                                 "--segment-name", "s-%n.\(format)", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names.count == stream.idrAccessUnits, "\(stream) as \(format): \(names)")
        #expect(names.allSatisfy { $0.hasSuffix(".\(format)") }, "\(names)")
        var got: [String] = []
        for name in names { got += try ContainerOutputTests.frameChecksums(["-i", segs + "/" + name]) }
        let expected = try ContainerOutputTests.frameChecksums(["-f", "h264", "-i", stream.path])
        #expect(!expected.isEmpty)
        #expect(got == expected, "\(stream) as \(format) segments: \(got.count) pictures, the raw stream \(expected.count)")
        if format == "ts" {
            // MPEG-TS segments are one stream when their bytes are joined.
            let joined = dir.appendingPathComponent("joined.ts")
            var bytes = Data()
            for name in names { bytes += try Data(contentsOf: URL(fileURLWithPath: segs + "/" + name)) }
            try bytes.write(to: joined)
            #expect(try ContainerOutputTests.frameChecksums(["-i", joined.path]) == expected, "\(stream): joined TS segments")
        }
    }

    // MARK: A test-pattern recording in the players

    /// The three ways an MP4 of 6 s of the test pattern (640x360 at 30 fps, 180 frames) is
    /// made: a finished segment of `consume --segments` (the default name, fragmented),
    /// `produce -o clip.mp4`, and `consume --from FILE -o clip.mp4`.
    enum Recording: String, CaseIterable, CustomStringConvertible {
        case segment, produceFile, consumeFile
        var description: String { rawValue }

        static let frames = 180
        static let fps = 30.0
        static let width = 640, height = 360

        /// Makes the recording in `dir`; returns its path.
        func make(in dir: URL) throws -> String {
            let pattern = ["produce", "--source", "testsrc", "--size", "\(Self.width)x\(Self.height)", "--no-realtime", "-q"]
            switch self {
            case .segment:
                // Two segments of 6 s from a pipe; the first is a finished one from the middle of a recording.
                let segs = dir.appendingPathComponent("segs").path
                let script = "\"$0\" \"$@\" --frames \(2 * Self.frames) -o - | \"$0\" consume --from - --segments '\(segs)' --segment-duration 6s -q"
                let r = try Run.program("/bin/bash", ["-o", "pipefail", "-c", script, Run.nalcast] + pattern)
                #expect(r.status == 0, "\(r.stderr)")
                let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
                #expect(names.count == 2 && names.allSatisfy { $0.hasSuffix(".mp4") }, "default segments are MP4: \(names)")
                return segs + "/" + (names.first ?? "none")
            case .produceFile:
                let out = dir.appendingPathComponent("clip.mp4").path
                let r = try Run.nalcast(pattern + ["--frames", "\(Self.frames)", "-o", out])
                #expect(r.status == 0, "\(r.stderr)")
                return out
            case .consumeFile:
                let raw = dir.appendingPathComponent("in.h264").path
                let p = try Run.nalcast(pattern + ["--frames", "\(Self.frames)", "-o", raw])
                #expect(p.status == 0, "\(p.stderr)")
                let out = dir.appendingPathComponent("clip.mp4").path
                let r = try Run.nalcast(["consume", "--from", raw, "-o", out, "-q"])
                #expect(r.status == 0, "\(r.stderr)")
                return out
            }
        }
    }

    /// Where to look in a frame of the test pattern: a point in each of the eight colour
    /// bars, and the middle of the white bar that sweeps across them (TestPatternSource:
    /// `width / 32` wide, `width / 120` pixels a frame, back and forth), whose place tells
    /// one frame from another a few frames away.
    /// A colour bar's point keeps away from where the sweeping bar is a few frames either
    /// side, so that a player one or two pictures off still shows the bars' colours there.
    static let sampleRow = 60  // in the bars: the top two thirds
    static let sweepWidth = max(2, (Recording.width / 32) & ~1)
    static func sweepLeft(frame: Int) -> Int {
        let step = max(2, (Recording.width / 120) & ~1), travel = Recording.width - sweepWidth
        let position = (step * frame) % (2 * travel)
        return (position <= travel ? position : 2 * travel - position) & ~1
    }
    static func samplePoints(frame: Int) -> [[Int]] {
        let left = sweepLeft(frame: frame), barWidth = Recording.width / 8
        let near = (left - 16)..<(left + sweepWidth + 16)
        func distance(_ x: Int) -> Int { near.contains(x) ? 0 : min(abs(x - near.lowerBound), abs(x - near.upperBound)) }
        let bars = (0..<8).map { i -> [Int] in
            let lo = i * barWidth
            let x = [lo + barWidth / 2, lo + 8, lo + barWidth - 8].max { distance($0) < distance($1) }!
            return [x, sampleRow]
        }
        return bars + [[left + sweepWidth / 2, sampleRow]]
    }

    /// Frame `index` of `path` as decoded by FFmpeg, RGB at `points`: the reference the
    /// players' pictures are held to.
    static func referencePixels(_ path: String, frame index: Int, points: [[Int]]) throws -> [[Int]] {
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-vf", "select=eq(n\\,\(index))", "-frames:v", "1",
                                           "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        #expect(r.status == 0 && r.stdout.count == Recording.width * Recording.height * 3, "\(r.stderr)")
        return pixels(r.stdout, width: Recording.width, points: points)
    }

    static func pixels(_ rgb: Data, width: Int, points: [[Int]]) -> [[Int]] {
        let bytes = [UInt8](rgb)
        return points.map { p in
            let o = (p[1] * width + p[0]) * 3
            return o + 2 < bytes.count ? [Int(bytes[o]), Int(bytes[o + 1]), Int(bytes[o + 2])] : []
        }
    }

    /// True when every pixel is within `tolerance` of the reference, channel by channel.
    static func close(_ a: [[Int]], _ b: [[Int]], tolerance: Int = 24) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { x, y in x.count == 3 && y.count == 3 && zip(x, y).allSatisfy { abs($0 - $1) <= tolerance } }
    }

    /// The middle frame's reference, checked against what the pattern paints there: 75 %
    /// white in the first bar, black in the last, full white under the sweeping bar, which
    /// frame 0 does not have there (so the sample tells the middle from the start).
    static func middleReference(_ path: String) throws -> (frame: Int, points: [[Int]], pixels: [[Int]]) {
        let middle = Recording.frames / 2
        let points = samplePoints(frame: middle)
        let reference = try referencePixels(path, frame: middle, points: points)
        #expect(close([reference[0], reference[7], reference[8]], [[191, 191, 191], [0, 0, 0], [255, 255, 255]]), "\(reference)")
        let start = try referencePixels(path, frame: 0, points: [points[8]])
        #expect(!close(start, [[255, 255, 255]]), "frame 0 is white at \(points[8]) too: the sample cannot tell them apart")
        return (middle, points, reference)
    }

    /// ffprobe: the format's duration is the frames' (within a frame), 180 pictures of
    /// 640x360; `ffmpeg -ss 3` decodes the middle frame, the one whose sweeping bar is there.
    @Test(arguments: Recording.allCases)
    func ffmpegReportsTheTrueDurationAndSeeks(_ recording: Recording) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try recording.make(in: dir)
        let facts = try ContainerOutputTests.probe(path)
        #expect(facts["format_name"]?.contains("mp4") == true, "\(facts)")
        #expect(facts["width"] == "\(Recording.width)" && facts["height"] == "\(Recording.height)", "\(facts)")
        #expect(facts["nb_read_frames"] == "\(Recording.frames)", "\(facts)")
        let duration = try #require(Double(facts["duration"] ?? ""), "\(facts)")
        let seconds = Double(Recording.frames) / Recording.fps
        #expect(abs(duration - seconds) <= 1 / Recording.fps, "\(recording): duration \(duration), \(seconds) s of frames")
        let middle = try Self.middleReference(path)
        let seek = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-ss", "\(seconds / 2)", "-i", path, "-frames:v", "1",
                                              "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        #expect(seek.status == 0 && seek.stdout.count == Recording.width * Recording.height * 3, "\(seek.stderr)")
        let seen = Self.pixels(seek.stdout, width: Recording.width, points: middle.points)
        #expect(Self.close(seen, middle.pixels), "\(recording): after -ss \(seconds / 2): \(seen), frame \(middle.frame): \(middle.pixels)")
    }

    /// GStreamer's own MP4 demuxer (qtdemux) and parser, FFmpeg's decoder as a plugin: every
    /// picture comes out, 640x360, and the last ends at the recording's length.
    @Test(arguments: Recording.allCases)
    func gstreamerPlaysIt(_ recording: Recording) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try recording.make(in: dir)
        let r = try Run.program("gst-launch-1.0", ["-v", "filesrc", "location=\(path)", "!", "qtdemux", "!", "h264parse", "!", "avdec_h264",
                                                   "!", "fakesink", "silent=false", "sync=false"])
        #expect(r.status == 0, "\(r.stderr)")
        let buffers = r.text.split(separator: "\n").filter { $0.contains("last-message = chain") }
        #expect(buffers.count == Recording.frames, "\(recording): GStreamer decoded \(buffers.count) pictures")
        #expect(r.text.contains("width=(int)\(Recording.width), height=(int)\(Recording.height)"), "\(r.text.prefix(2000))")
        // The last picture's pts + duration: where playback ends.
        let last = try #require(buffers.last.map(String.init))
        let end = Self.gstTime(last, "pts: ") + Self.gstTime(last, "duration: ")
        let seconds = Double(Recording.frames) / Recording.fps
        #expect(abs(end - seconds) <= 1 / Recording.fps, "\(recording): GStreamer ends at \(end) s: \(last)")
    }

    /// `H:MM:SS.nnnnnnnnn` after `key` in a GStreamer message, in seconds (-1 when absent).
    static func gstTime(_ line: String, _ key: String) -> Double {
        guard let r = line.range(of: key) else { return -1 }
        let text = line[r.upperBound...].prefix { $0 != "," }
        let parts = text.split(separator: ":").compactMap { Double($0) }
        return parts.count == 3 ? parts[0] * 3600 + parts[1] * 60 + parts[2] : -1
    }

    /// mpv decodes every picture (its encoding mode, `--o`, writes each one it decoded as
    /// raw video) and, started at the middle (`--start`), shows the middle frame.
    @Test(.enabled(if: Self.has("mpv"), "mpv is not installed (scripts/setup installs it)"), arguments: Recording.allCases)
    func mpvPlaysIt(_ recording: Recording) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try recording.make(in: dir)
        let decoded = dir.appendingPathComponent("decoded.nut").path
        let all = try Run.program("mpv", ["--no-config", "--no-audio", "--o=\(decoded)", "--of=nut", "--ovc=rawvideo", path])
        #expect(all.status == 0, "\(all.text)\(all.stderr)")
        let facts = try ContainerOutputTests.probe(decoded)
        #expect(facts["nb_read_frames"] == "\(Recording.frames)", "\(recording): mpv decoded \(facts)")
        #expect(facts["width"] == "\(Recording.width)" && facts["height"] == "\(Recording.height)", "\(facts)")
        let middle = try Self.middleReference(path)
        let shot = try Run.program("mpv", ["--no-config", "--no-audio", "--start=\(Double(Recording.frames) / Recording.fps / 2)", "--frames=1",
                                           "--vo=image", "--vo-image-format=png", "--vo-image-outdir=\(dir.path)", path])
        #expect(shot.status == 0, "\(shot.text)\(shot.stderr)")
        let png = dir.appendingPathComponent("00000001.png").path
        let rgb = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        #expect(rgb.status == 0, "\(rgb.stderr)")
        let seen = Self.pixels(rgb.stdout, width: Recording.width, points: middle.points)
        #expect(Self.close(seen, middle.pixels), "\(recording): mpv at the middle shows \(seen), frame \(middle.frame) is \(middle.pixels)")
    }

    // MARK: VLC

    /// cvlc (VLC refuses to run as root: as root, the test runs it as `nobody` through
    /// setpriv) with its scene filter, which writes every picture it draws as a PNG.
    /// VLC plays in real time, so on a loaded machine it runs late; none of its ways of
    /// catching up may drop a picture: not the video output's (`--no-drop-late-frames`),
    /// not MPEG-2's (`--no-skip-frames`), and not the decoder's "hurry up", which, more than
    /// 11 pictures behind, throws away undecoded pictures ("More than 11 late frames, dropping
    /// frame" in `-vv`: tens of pictures lost at a load of 14 on two cores).
    /// VLC draws on its clock, so a count of its draws is one of the machine's load too:
    /// its output draws the current picture again when the next is more than 80 ms away
    /// (one more PNG), skips its first picture when it first looks after the second is due,
    /// and its decoder throws away what is more than 5 s late, with no option against it
    /// (30 pictures lost at a load of 15). `decodeOnly` counts what VLC's own demuxer and
    /// decoder make of the file without the clock: VLC transcodes (`--sout`, to nothing),
    /// and its transcoder passes every decoded picture through the scene filter, once.
    static func vlc(_ path: String, into out: URL, decodeOnly: Bool = false, extra: [String] = []) throws -> Run.Result {
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        chmod(out.path, 0o777)
        let asNobody = getuid() == 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        return try Run.program("/usr/bin/env", asNobody + ["env", "HOME=\(out.path)", "cvlc", "-I", "dummy", "--no-audio", "--play-and-exit",
            "--no-drop-late-frames", "--no-skip-frames", "--no-avcodec-hurry-up", "--vout=dummy", "--video-filter=scene", "--scene-format=png", "--scene-ratio=1",
            "--scene-width=\(Recording.width)", "--scene-height=\(Recording.height)", "--scene-path=\(out.path)", "--scene-prefix=f"]
            + (decodeOnly ? ["--sout=#transcode{vcodec=mp2v,vfilter=scene}:dummy"] : []) + extra + [path], timeout: 60)
    }

    /// The PNGs a VLC run wrote, in order.
    static func shots(_ dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".png") }.sorted().map { dir.appendingPathComponent($0).path }
    }

    static func rgb(ofPNG path: String, points: [[Int]]) throws -> [[Int]] {
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        #expect(r.status == 0, "\(r.stderr)")
        return pixels(r.stdout, width: Recording.width, points: points)
    }

    /// VLC's demuxer and decoder make all 180 pictures of the recording (counted without the
    /// player's clock: see `vlc`), the 91st with the middle frame's colours. The `-o` files
    /// (plain MP4) also seek: the player started half way (`--start-time`) shows the middle
    /// frame first. (Not tested for
    /// segments: VLC 3.0 seeks in a fragmented MP4, FFmpeg's own as well as nalcast's, to the
    /// picture at that time without decoding from the IDR before it, and shows grey until
    /// the next IDR; docs/usage.md says so.)
    @Test(.enabled(if: Self.has("cvlc"), "VLC is not installed (scripts/setup installs vlc-bin and vlc-plugin-base)"), arguments: Recording.allCases)
    func vlcPlaysIt(_ recording: Recording) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try recording.make(in: dir)
        let middle = try Self.middleReference(path)
        let all = dir.appendingPathComponent("all")
        let r = try Self.vlc(path, into: all, decodeOnly: true)
        #expect(r.status == 0, "\(r.stderr.suffix(2000))")
        let shots = try Self.shots(all)
        #expect(shots.count == Recording.frames, "\(recording): VLC decoded \(shots.count) pictures")
        if shots.count > middle.frame {
            let seen = try Self.rgb(ofPNG: shots[middle.frame], points: middle.points)
            #expect(Self.close(seen, middle.pixels), "\(recording): VLC's picture \(middle.frame + 1) is \(seen), frame \(middle.frame) is \(middle.pixels)")
        }
        guard recording != .segment else { return }
        let seek = dir.appendingPathComponent("seek")
        let half = Double(Recording.frames) / Recording.fps / 2
        let s = try Self.vlc(path, into: seek, extra: ["--start-time=\(half)", "--stop-time=\(half + 0.2)"])
        #expect(s.status == 0, "\(s.stderr.suffix(2000))")
        let first = try #require(try Self.shots(seek).first, "\(recording): VLC showed nothing after --start-time \(half)")
        let seen = try Self.rgb(ofPNG: first, points: middle.points)
        #expect(Self.close(seen, middle.pixels), "\(recording): VLC at \(half) s shows \(seen), frame \(middle.frame) is \(middle.pixels)")
    }

    // MARK: Chromium

    static let browserTools = Run.root.appendingPathComponent("Tests/Browser")
    /// The venv scripts/setup makes, with selenium.
    static let venvPython = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/nalcast-tools/bin/python").path

    static func has(_ program: String) -> Bool {
        (try? Run.program("/bin/sh", ["-c", "command -v \(program)"]).status) == 0
    }

    static let chromiumMissing: String? = {
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") { return "no /usr/bin/chromium (Debian's chromium: scripts/setup installs it)" }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") { return "no /usr/bin/chromedriver (Debian's chromium-driver: scripts/setup installs it)" }
        if (try? Run.program(venvPython, ["-c", "import selenium"]).status) != 0 { return "no selenium in \(venvPython) (scripts/setup installs it)" }
        return nil
    }()

    /// Headless Chromium plays the recording in a `<video>` (Tests/Browser/player.html, served
    /// with byte ranges by Tests/Browser/serve.py, as any web server would): its duration is
    /// the recording's, a seek to the middle fires `seeked` and lands there (the frame presented
    /// after it too), the size is 640x360, the frame drawn to a canvas has the middle frame's
    /// colours where FFmpeg decodes them, and played on from there it ends, having decoded
    /// pictures.
    @Test(.enabled(if: Self.chromiumMissing == nil, "\(Self.chromiumMissing ?? "")"), arguments: Recording.allCases)
    func chromiumPlaysItInAVideoElement(_ recording: Recording) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try recording.make(in: dir)
        let site = dir.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path, toPath: site.appendingPathComponent("recording.mp4").path)
        try FileManager.default.copyItem(at: Self.browserTools.appendingPathComponent("player.html"), to: site.appendingPathComponent("player.html"))
        let middle = try Self.middleReference(path)

        let server = try PageServer(site)
        defer { server.stop() }
        let points = String(decoding: try JSONSerialization.data(withJSONObject: middle.points), as: UTF8.self)
        let r = try Run.program(Self.venvPython, [Self.browserTools.appendingPathComponent("video_check.py").path,
                                                 "http://127.0.0.1:\(server.port)/player.html?src=recording.mp4", "-1", points], timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        let seconds = Double(Recording.frames) / Recording.fps
        let duration = result["duration"] as? Double ?? -1
        #expect(abs(duration - seconds) <= 1 / Recording.fps, "\(recording): Chromium says \(duration) s: \(result)")
        #expect(result["width"] as? Int == Recording.width && result["height"] as? Int == Recording.height, "\(result)")
        let target = result["seekTarget"] as? Double ?? -1, now = result["currentTime"] as? Double ?? -1
        #expect(abs(target - seconds / 2) <= 1 / Recording.fps && abs(now - target) <= 1 / Recording.fps, "\(recording): seek \(result)")
        // The canvas is drawn once the frame the seek landed on was presented (player.html).
        let frameTime = result["frameTime"] as? Double ?? -1
        #expect(abs(frameTime - target) <= 1 / Recording.fps, "\(recording): the frame presented after the seek \(result)")
        let seen = (result["pixels"] as? [[Int]]) ?? []
        #expect(Self.close(seen, middle.pixels), "\(recording): the canvas shows \(seen), frame \(middle.frame) is \(middle.pixels)")
        #expect(result["ended"] as? Bool == true, "\(result)")
        #expect(abs((result["endTime"] as? Double ?? -1) - seconds) <= 2 / Recording.fps, "\(result)")
        // From the middle on: about half the pictures, however many the first paint took.
        #expect((result["decodedFrames"] as? Int ?? 0) >= Recording.frames / 2 - 5, "\(result)")
    }
}
