import Foundation
import Testing

/// What a first-time user types and reads: the option forms people bring from X11, x264 and
/// FFmpeg, the help text, and error lines that say which option and which file, with the
/// accepted values, and nothing raw.
@Suite struct UsabilityTests {
    /// The environment of the tests without any NALCAST_ variable of the test run itself.
    static func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        for (k, v) in extra { env[k] = v }
        return env
    }

    static func nalcast(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws -> Run.Result {
        try Run.nalcast(arguments, stdin: stdin, environment: cleanEnvironment(environment))
    }

    static let commands = ["produce", "consume", "probe", "inspect"]

    // MARK: X11 display names

    @Test(arguments: [("x11:77", ":77"), ("x11::77", ":77"), ("x11:77.0", ":77.0"), ("x11::77.1", ":77.1"),
                      ("x11:host:0.0", "host:0.0"), ("x11:host:3", "host:3")])
    func x11DisplayFormsUsersType(source: String, display: String) throws {
        let r = try Self.nalcast(["produce", "--source", source, "--dry-run", "-o", "/dev/null"])
        #expect(r.status == 0, "\(source): \(r.stderr)")
        #expect(r.text.contains("display=\(display) "), "\(source): \(r.text)")
    }

    @Test func x11DisplayThatIsNoDisplayNameIsAUsageError() throws {
        let r = try Self.nalcast(["produce", "--source", "x11:screen", "--dry-run", "-o", "/dev/null"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("x11:77") && r.stderr.contains("x11:host:0.0"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    @Test func produceHelpShowsTheX11Forms() throws {
        let help = try Self.nalcast(["produce", "--help"]).text
        for form in ["x11:77", "x11:host:0.0"] { #expect(help.contains(form), "\(form)") }
    }

    // MARK: Durations and frame counts

    /// x264 and FFmpeg count keyint in frames: a bare number is frames, `2s` is still time.
    @Test func bareKeyintCountsFrames() throws {
        let r = try Self.nalcast(["produce", "--frames", "90", "--no-realtime", "--size", "160x120", "--keyint", "30", "-o", "-", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try inspect(r.stdout)["idrAccessUnits"] as? Int == 3)
        let frames = try Self.nalcast(["produce", "--keyint", "60", "--dry-run", "-o", "-"])
        #expect(frames.text.contains("keyint=60 frames"), "\(frames.text)")
        let seconds = try Self.nalcast(["produce", "--keyint", "2s", "--fps", "25", "--dry-run", "-o", "-"])
        #expect(seconds.text.contains("keyint=50 frames (2 s)"), "\(seconds.text)")
    }

    @Test(arguments: [
        ["produce", "--duration", "10", "-o", "-"], ["produce", "--reader-lag", "500", "-o", "-"],
        ["consume", "--segment-duration", "5", "--segments", "d"], ["consume", "--stop-timeout", "3", "-o", "-"],
        ["probe", "--timeout", "2"],
    ])
    func bareDurationNeedsAUnit(arguments: [String]) throws {
        let r = try Self.nalcast(arguments + ["--dry-run"])
        #expect(r.status == 64, "\(arguments): \(r.stderr)")
        let option = arguments.first { $0.hasPrefix("--") }!
        let value = arguments[arguments.firstIndex(of: option)! + 1]
        #expect(r.stderr == "nalcast: \(option) \(value): add a unit: \(value)s, 500ms, 2m\n", "\(r.stderr)")
    }

    @Test func zeroNeedsNoUnit() throws {
        let r = try Self.nalcast(["consume", "--reconnect-timeout", "0", "-o", "-", "--dry-run"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    // MARK: Frame rates

    @Test func oneFrameRateParserForEveryOption() throws {
        let consume = try Self.nalcast(["consume", "--frame-rate", "29.97", "--from", "x.h264", "-o", "-", "--dry-run"])
        #expect(consume.status == 0, "\(consume.stderr)")
        #expect(consume.text.contains("30000/1001 fps"), "\(consume.text)")
        for (text, rational) in [("29.97", "30000/1001"), ("30000/1001", "30000/1001"), ("23.976", "24000/1001"), ("59.94", "60000/1001"), ("12.5", "25/2"), ("30", "30")] {
            let produce = try Self.nalcast(["produce", "--fps", text, "--dry-run", "-o", "-"])
            #expect(produce.text.contains("fps: \(rational)\n"), "\(text): \(produce.text)")
        }
    }

    /// `--frame-rate` times a stream with neither timestamps nor a VUI frame rate: the
    /// fixture's second IDR (access unit 6) is 0.2 s in at 30 fps, 3 s in at 2 fps.
    @Test func consumeFrameRateTimesAStreamWithoutTiming() throws {
        let input = Run.fixtures.appendingPathComponent("FRExt1_Panasonic.avc").path
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var counts: [Int] = []
        for rate in ["30", "2"] {
            let segments = dir.appendingPathComponent("segs-\(rate)").path
            let r = try Self.nalcast(["consume", "--from", input, "--segments", segments, "--segment-duration", "1s", "--frame-rate", rate, "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
            counts.append(try FileManager.default.contentsOfDirectory(atPath: segments).count)
        }
        #expect(counts == [1, 2])
    }

    // MARK: Errors

    @Test func errorsListTheAcceptedValues() throws {
        let cases: [([String], [String])] = [
            (["--preset", "warp"], ["ultrafast", "veryslow"]),
            (["--tune", "warp"], ["film", "zerolatency"]),
            (["--profile", "warp"], ["baseline", "main", "high"]),
            (["--pix-fmt", "warp", "--source", "raw:-", "--input-size", "64x64"], ["i420", "yuv420p", "bgra", "yuyv422"]),
            (["--join", "warp"], ["idr", "gop", "next"]),
        ]
        for (args, names) in cases {
            let r = try Self.nalcast(["produce"] + args + ["-o", "/dev/null", "--dry-run"])
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("nalcast: \(args[0]) warp: "), "\(args): \(r.stderr)")
            for name in names { #expect(r.stderr.contains(name), "\(args): \(name) in \(r.stderr)") }
            #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        }
    }

    @Test(arguments: [("yuv420p", "i420"), ("nv12", "nv12"), ("yuyv422", "yuyv"), ("bgra", "bgra"), ("rgba", "rgba"),
                      ("rgb24", "rgb24"), ("bgr24", "bgr24"), ("yuv444p", "i444"), ("gray", "gray")])
    func ffmpegPixelFormatNamesAreAccepted(ffmpeg: String, ours: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("in.raw")
        let made = try Run.program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-frames:v", "10",
                                              "-pix_fmt", ffmpeg, "-f", "rawvideo", raw.path])
        #expect(made.status == 0, "\(made.stderr)")
        let dry = try Self.nalcast(["produce", "--source", "raw:\(raw.path)", "--input-size", "160x120", "--pix-fmt", ffmpeg, "--dry-run", "-o", "-"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.text.contains("frame: 160x120 \(ours), "), "\(dry.text)")
        let r = try Self.nalcast(["produce", "--source", "raw:\(raw.path)", "--input-size", "160x120", "--pix-fmt", ffmpeg, "-o", "-", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let decoded = try ffmpegDecode(r.stdout)
        #expect(decoded.frames == 10 && decoded.errors.isEmpty, "\(decoded.errors)")
    }

    @Test func missingInputNamesTheOptionAndThePath() throws {
        let y4m = try Self.nalcast(["produce", "--source", "y4m:/nonexistent/x.y4m", "-o", "/dev/null"])
        #expect(y4m.status == 66)
        #expect(y4m.stderr == "nalcast: --source y4m:/nonexistent/x.y4m: no such file\n", "\(y4m.stderr)")
        let raw = try Self.nalcast(["produce", "--source", "raw:/nonexistent/x.raw", "--input-size", "64x64", "-o", "/dev/null"])
        #expect(raw.status == 66)
        #expect(raw.stderr == "nalcast: --source raw:/nonexistent/x.raw: no such file\n", "\(raw.stderr)")
        let dir = try Self.nalcast(["produce", "--source", "y4m:/tmp", "-o", "/dev/null"])
        #expect(dir.status == 66)
        #expect(dir.stderr == "nalcast: --source y4m:/tmp: is a directory\n", "\(dir.stderr)")
    }

    /// Every byte of an error line is printable: escapes stand for the rest.
    static func isPrintable(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0 == "\n" || ($0.value >= 0x20 && $0.value != 0x7f && !(0x80...0x9f).contains($0.value)) }
            && !text.contains("\u{FFFD}")
    }

    @Test func binaryInputAndControlCharactersAreEscaped() throws {
        var garbage = Data([0x00, 0x01, 0x1b]) + Data("[2J".utf8) + Data([0xff, 0xfe, 0x07, 0x9b, 0x7f])
        garbage += Data(count: 2000)
        let y4m = try Self.nalcast(["produce", "--source", "y4m:-", "-o", "-", "-q"], stdin: garbage)
        #expect(y4m.status == 65)
        #expect(Self.isPrintable(y4m.stderr), "\(Array(y4m.stderr.utf8))")
        #expect(y4m.stderr.contains("\\x00\\x01\\x1b[2J\\xff\\xfe"), "\(y4m.stderr)")

        let option = try Self.nalcast(["produce", "--preset", "\u{1b}[2Jfast\u{07}", "-o", "-", "--dry-run"])
        #expect(option.status == 64)
        #expect(Self.isPrintable(option.stderr), "\(Array(option.stderr.utf8))")
        #expect(option.stderr.contains("\\x1b[2Jfast\\x07"), "\(option.stderr)")

        let dry = try Self.nalcast(["consume", "--from", "in\u{1b}[2J.h264", "-o", "-", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(Self.isPrintable(dry.text) && dry.text.contains("in\\x1b[2J.h264"), "\(dry.text)")

        let unknown = try Self.nalcast(["produce", "--\u{1b}]0;title\u{07}", "--dry-run"])
        #expect(unknown.status == 64)
        #expect(Self.isPrintable(unknown.stderr), "\(Array(unknown.stderr.utf8))")
    }

    @Test func ignoredSettingsGetOneWarningLine() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try ProduceCommandTests.y4m(dir, frames: 3)
        let r = try Self.nalcast(["produce", "--source", "y4m:\(input.path)", "--size", "640x480", "-o", "-"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n").filter { $0.contains("warning") }
        #expect(lines.count == 1 && lines[0].contains("--size") && lines[0].contains("ignored"), "\(r.stderr)")
        #expect(try inspect(r.stdout)["width"] as? Int == 320)

        let region = try Self.nalcast(["produce", "--region", "0,0,64x64", "--dry-run", "-o", "-"])
        #expect(region.status == 0)
        #expect(region.stderr.split(separator: "\n").count == 1 && region.stderr.contains("--region"), "\(region.stderr)")

        let none = try Self.nalcast(["produce", "--size", "640x480", "--dry-run", "-o", "-"])
        #expect(none.stderr.isEmpty, "\(none.stderr)")
    }

    @Test func unknownEnvironmentVariablesAreNamedWithTheClosestOption() throws {
        let r = try Self.nalcast(["produce", "--dry-run", "-o", "-"], environment: ["NALCAST_LISTN": "tcp://127.0.0.1:9000"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("NALCAST_LISTN") && r.stderr.contains("NALCAST_LISTEN"), "\(r.stderr)")
        // Another command's option is no typo: one environment can serve producer and consumer.
        let shared = try Self.nalcast(["produce", "--dry-run", "-o", "-"], environment: ["NALCAST_SEGMENTS": "rec"])
        #expect(shared.stderr.isEmpty, "\(shared.stderr)")
    }

    /// nalcast encodes 8-bit 4:2:0 whatever libx264 can do: a High 10/4:2:2/4:4:4 profile
    /// would name a format the stream does not have (x264 silently writes High).
    @Test(arguments: ["high10", "high422", "high444"])
    func profilesBeyondEightBit420AreRefused(profile: String) throws {
        let r = try Self.nalcast(["produce", "--profile", profile, "--frames", "1", "--no-realtime", "-o", "/dev/null"])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("8-bit") && r.stderr.contains("high"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    // MARK: Help

    @Test(arguments: commands)
    func helpCommandEqualsDashDashHelp(command: String) throws {
        let a = try Self.nalcast(["help", command])
        let b = try Self.nalcast([command, "--help"])
        #expect(a.status == 0 && b.status == 0)
        #expect(a.text == b.text)
        #expect(a.text.hasPrefix("usage: nalcast \(command)"), "\(a.text)")
    }

    /// Each command's help shows an environment example made of its own options.
    @Test(arguments: commands)
    func helpHasAnEnvironmentExampleOfItsOwnOptions(command: String) throws {
        let help = try Self.nalcast([command, "--help"]).text
        let example = try #require(help.split(separator: "\n").first { $0.contains("NALCAST_") && $0.contains("nalcast \(command)") }, "\(help)")
        let names = example.split(separator: " ").filter { $0.hasPrefix("NALCAST_") }.map { $0.split(separator: "=")[0] }
        #expect(!names.isEmpty)
        for name in names {
            let option = "--" + name.dropFirst("NALCAST_".count).lowercased().replacingOccurrences(of: "_", with: "-")
            #expect(help.contains("  \(option) ") || help.contains(", \(option) ") || help.contains("  \(option)\n"), "\(name) is no option of \(command)")
        }
    }

    @Test func readmeCommandTableHasEveryCommand() throws {
        let readme = try String(contentsOf: Run.root.appendingPathComponent("README.md"), encoding: .utf8)
        for command in Self.commands {
            #expect(readme.contains("| `nalcast \(command)"), "\(command)")
        }
    }

    @Test func probeHelpNamesItsDefaultAddress() throws {
        let help = try Self.nalcast(["probe", "--help"]).text
        #expect(help.contains("tcp://127.0.0.1:7264"), "\(help)")
    }

    @Test func dryRunPrintsTheFrameSize() throws {
        let pattern = try Self.nalcast(["produce", "--size", "320x240", "--dry-run", "-o", "-"])
        #expect(pattern.text.contains("frame: 320x240 i420, 115200 bytes"), "\(pattern.text)")
        let raw = try Self.nalcast(["produce", "--source", "raw:-", "--input-size", "320x240", "--pix-fmt", "bgra", "--dry-run", "-o", "-"])
        #expect(raw.text.contains("frame: 320x240 bgra, 307200 bytes"), "\(raw.text)")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try ProduceCommandTests.y4m(dir, frames: 2)
        let y4m = try Self.nalcast(["produce", "--source", "y4m:\(input.path)", "--dry-run", "-o", "-"])
        #expect(y4m.text.contains("frame: 320x240 i420, 115200 bytes"), "\(y4m.text)")
        let scaled = try Self.nalcast(["produce", "--size", "1280x720", "--max-size", "640", "--dry-run", "-o", "-"])
        #expect(scaled.text.contains("encoded: 640x360"), "\(scaled.text)")
    }
}

/// Segments come out as long as the documentation says, and consume says so when the
/// stream's IDR spacing will not let them.
@Suite(.serialized) struct SegmentLengthTests {
    /// The documented default from `consume --help`, in seconds.
    static func documentedDefault() throws -> Double {
        let help = try UsabilityTests.nalcast(["consume", "--help"]).text
        let line = try #require(help.split(separator: "\n").first { $0.contains("--segment-duration") })
        let range = try #require(line.range(of: "(default: "))
        let value = line[range.upperBound...].prefix { $0 != "s" && $0 != ")" }
        return try #require(Double(value))
    }

    /// ffprobe's count of frames in a segment (any container), at the stream's 30 fps.
    static func seconds(_ path: String) throws -> Double {
        let r = try Run.program("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        return Double(Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1) / 30
    }

    @Test func defaultSettingsMakeSegmentsOfTheDocumentedLength() throws {
        let documented = try Self.documentedDefault()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("in.h264")
        let frames = Int(documented * 30 * 3.5)
        let produced = try UsabilityTests.nalcast(["produce", "--size", "160x120", "--frames", "\(frames)", "--no-realtime", "-o", stream.path, "-q"])
        #expect(produced.status == 0, "\(produced.stderr)")
        let segments = dir.appendingPathComponent("segs")
        let r = try UsabilityTests.nalcast(["consume", "--from", stream.path, "--segments", segments.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("IDR"), "no warning at the defaults: \(r.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: segments.path).sorted()
        #expect(names.count == 4, "\(names)")
        #expect(names.allSatisfy { $0.hasSuffix(".mp4") }, "the default segments are MP4: \(names)")
        for name in names.dropLast() {
            #expect(try Self.seconds(segments.appendingPathComponent(name).path) == documented, "\(name)")
        }
    }

    @Test func segmentLengthThatIsNoMultipleOfTheIDRSpacingIsWarnedOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("in.h264")
        _ = try UsabilityTests.nalcast(["produce", "--size", "160x120", "--frames", "600", "--keyint", "2s", "--no-realtime", "-o", stream.path, "-q"])
        let r = try UsabilityTests.nalcast(["consume", "--from", stream.path, "--segments", dir.appendingPathComponent("segs").path, "--segment-duration", "5s"])
        #expect(r.status == 0, "\(r.stderr)")
        let warnings = r.stderr.split(separator: "\n").filter { $0.contains("IDR") }
        #expect(warnings.count == 1, "\(r.stderr)")
        #expect(warnings.first?.contains("2 s") == true && warnings.first?.contains("6 s") == true, "\(r.stderr)")
        let fits = try UsabilityTests.nalcast(["consume", "--from", stream.path, "--segments", dir.appendingPathComponent("segs4").path, "--segment-duration", "4s"])
        #expect(fits.status == 0)
        #expect(!fits.stderr.contains("IDR"), "\(fits.stderr)")
    }
}
