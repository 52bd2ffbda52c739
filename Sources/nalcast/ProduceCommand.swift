import Capture
import Containers
import Encoder
import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import H264
import Producer
import Relay

/// `nalcast produce`: capture → pace → convert → encode → serve (and/or write to -o).
enum ProduceCommand: Command {
    static let name = "produce"
    static let summary = "Capture frames, encode them with libx264 and serve the H.264 stream to readers."
    static let usage = "nalcast produce [--source SRC] [--listen ADDR] [-o FILE|-] [OPTIONS]"
    static let specs: [OptionSpec] = sourceSpecs + AudioPlan.specs + ServingChoice.specs(.encoder) + observabilitySpecs
    private static let sourceSpecs: [OptionSpec] = [
        // Source
        OptionSpec(name: "source", value: "SRC", help: "testsrc, y4m:PATH, raw:PATH, x11, x11:DISPLAY (see below)", defaultText: "testsrc"),
        OptionSpec(name: "size", value: "WxH", help: "test pattern size", defaultText: "1280x720"),
        OptionSpec(name: "flash", value: nil, help: "testsrc: the frame at each whole second of the clock is white, a sync reference for sound (on with --audio tone)"),
        OptionSpec(name: "input-size", value: "WxH", help: "frame size of raw: input"),
        OptionSpec(name: "pix-fmt", value: "FMT", help: "pixel format of raw: input, ours or FFmpeg's name: i420 (yuv420p), nv12, bgra, rgba, yuyv (yuyv422), rgb24, bgr24, ...", defaultText: "i420"),
        OptionSpec(name: "input-fps", value: "RATE", help: "frame rate of raw: input (30, 29.97, 30000/1001)", defaultText: "30"),
        OptionSpec(name: "region", value: "X,Y,WxH", help: "x11: capture this part of the screen (W, H even)", defaultText: "the whole screen"),
        OptionSpec(name: "cursor", value: nil, help: "x11: draw the pointer into the frames (on; --no-cursor turns it off)"),
        OptionSpec(name: "capture", value: "MODE", help: "x11: damage (grab when the screen changes, at most --fps) or fixed (every 1/--fps, changed or not)", defaultText: "damage"),
        OptionSpec(name: "idle-fps", value: "RATE", help: "x11 with --capture damage: repeat the picture this often while the screen is still (a keep-alive; 0: never)", defaultText: "1"),
        OptionSpec(name: "realtime", value: nil, help: "pace a file source at its own frame rate, like FFmpeg's -re (on for testsrc; --no-realtime turns it off)"),
        OptionSpec(name: "frames", value: "N", help: "stop after N encoded frames"),
        OptionSpec(name: "duration", value: "TIME", help: "stop after TIME of media (e.g. 10s, 2m)"),
        // Pacing, scaling, encoding
        OptionSpec(name: "fps", value: "RATE", help: "target frame rate (30, 29.97 = 30000/1001, 12.5); faster input is dropped (newest wins)", defaultText: "30"),
        OptionSpec(name: "max-size", value: "N", help: "scale down so the larger side is at most N pixels"),
        OptionSpec(name: "preset", value: "NAME", help: "x264 preset", defaultText: "veryfast"),
        OptionSpec(name: "tune", value: "NAME", help: "x264 tune", defaultText: "zerolatency"),
        OptionSpec(name: "profile", value: "NAME", help: "H.264 profile: baseline, main, high", defaultText: "high"),
        OptionSpec(name: "bitrate", value: "RATE", help: "bits per second (6M, 6000k)", defaultText: "width × height × 3"),
        OptionSpec(name: "vbv-ms", value: "MS", help: "VBV buffer in milliseconds of the bitrate", defaultText: "500"),
        OptionSpec(name: "keyint", value: "N|TIME", help: "distance between IDRs: N frames, as in x264 and FFmpeg (60), or a time (2s, 500ms)", defaultText: "2s"),
        OptionSpec(name: "threads", value: "N", help: "encoder threads (0: auto)", defaultText: "0"),
        // Output
        OptionSpec(name: "output", value: "FILE", help: "also write the stream to FILE (- for stdout): .mp4, .ts, .mkv, .flv in that container, anything else Annex-B; without --listen, only there", short: "o"),
        OptionSpec(name: "forward", value: "URL", help: "also push the stream, reconnecting, to rtmp://HOST[:PORT]/APP/KEY, srt://HOST:PORT[?streamid=ID], rtsp://HOST[:PORT]/PATH, udp://HOST:PORT, or tcp://HOST:PORT / unix:PATH (Annex-B); repeatable; without --listen, only there", repeatable: true),
        OptionSpec(name: "format", value: "FORMAT", help: "the container of -o: mp4, ts, mkv, flv or h264 (raw Annex-B); mp4 needs a seekable file", defaultText: "from the -o extension, else h264"),
    ]
    private static let observabilitySpecs: [OptionSpec] = [
        // Observability
        OptionSpec(name: "metrics", value: "ADDR", help: "serve Prometheus /metrics, /healthz and POST /bitrate on ADDR"),
        OptionSpec(name: "events", value: "FILE", help: "write JSON lines for every state change to FILE (- for stdout)"),
        OptionSpec(name: "stats", value: nil, help: "print the status line even when stderr is not a terminal"),
        OptionSpec(name: "quiet", value: nil, help: "print only errors", short: "q"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration and exit"),
    ]

    static let notes = [
        "sources:",
        "  testsrc            the built-in test pattern (--size)",
        "  y4m:PATH           YUV4MPEG2 frames from a file, y4m:- from stdin",
        "  raw:PATH           raw frames (--input-size, --pix-fmt, --input-fps), raw:- from stdin",
        "  x11                the X11 screen of $DISPLAY (--region, --cursor, --capture, --idle-fps)",
        "  x11:77, x11::77    display :77 (the number alone, or X11's own :77)",
        "  x11:77.1           screen 1 of display :77",
        "  x11:host:0.0       display 0 of another host",
        "",
        "x11 captures on change (--capture damage): a frame as soon as the screen (or --region) changed, at most",
        "--fps a second, each stamped with its real capture time; while still, a repeat of the picture every",
        "1/--idle-fps s (a picture of skipped blocks, cheap to encode), and an IDR at once for a reader who joins. Where changes are not",
        "reported (some compositors, GL drivers that draw without DAMAGE) the picture freezes: use --capture fixed.",
        "",
    ] + AudioPlan.notes + [
        "",
        "Durations take a unit: 500ms, 10s, 2m, 1h; a bare --keyint counts frames (x264's --keyint, FFmpeg's -g).",
    ]
    static let environmentExample = "NALCAST_LISTEN=tcp://0.0.0.0:7264 NALCAST_ALLOW_REMOTE=1 NALCAST_KEYINT=1s nalcast produce --source x11"

    /// Everything `produce` resolved from its options, before anything is opened.
    struct Plan {
        enum Source {
            case testPattern(width: Int, height: Int)
            case y4m(path: String)
            case raw(path: String, width: Int, height: Int, format: PixelFormat, rate: FrameRate)
            case x11(X11Options)
        }
        var source: Source
        var sourceText: String
        var realtime: Bool
        /// testsrc's `--flash`: the frame of each whole second is white.
        var flash = false
        var capture = CaptureOptions()
        /// `--keyint` as given: a time, or nil when it counted frames.
        var keyintSeconds: Double?
        var output: String?
        /// `--format`, else from `-o`'s extension.
        var outputFormat = ContainerFormat.h264
        var forwards: [ForwardChoice] = []
        /// `--listen`, `--web` and how readers are served.
        var serving = ServingChoice()
        var metrics: Endpoint?
        var events: String?
        var quiet: Bool
        /// Settings that the chosen source ignores, one warning line each.
        var warnings: [String] = []
        /// The frame as the source delivers it, when known before capture starts.
        var frame: (width: Int, height: Int, format: PixelFormat)?
        var frameNote: String?
        /// `--audio`: nil for video only.
        var audio: AudioPlan?

        var lines: [String] {
            var out = [
                "source: \(sourceText)\(realtime ? " (realtime)" : "")\(flash ? " with a flash at each whole second" : "")",
                "fps: \(capture.targetFrameRate.map(\.description) ?? "source rate")",
                "encoder: preset=\(capture.encoder.preset) tune=\(capture.encoder.tune ?? "none") profile=\(capture.encoder.profile) "
                    + "bitrate=\(capture.encoder.bitrate.map(String.init) ?? "auto") vbv-ms=\(capture.encoder.vbvMilliseconds) "
                    + "keyint=\(capture.encoder.keyint ?? 0) frames\(keyintSeconds.map { " (\(short($0)) s)" } ?? "") threads=\(capture.encoder.threads)",
            ]
            if let f = frame {
                out.append("frame: \(f.width)x\(f.height) \(f.format), \(f.format.frameByteCount(width: f.width, height: f.height)) bytes")
                if let m = capture.maxSize {
                    let encoded = ColorConverter(maxSize: m).outputSize(width: f.width, height: f.height)
                    out.append("encoded: \(encoded.width)x\(encoded.height)")
                }
            } else if let note = frameNote {
                out.append("frame: \(note)")
            }
            if case .x11(let x) = source {
                out.append("x11: display=\(x.display ?? "$DISPLAY") region=\(x.region?.description ?? "whole screen") cursor=\(x.drawCursor ? "on" : "off")")
                out.append("capture: \(x.captureMode.rawValue)" + (x.captureMode == .damage ? " idle-fps=\(x.idleRate > 0 ? short(x.idleRate) : "0 (no keep-alive)")" : ""))
            }
            if let m = capture.maxSize { out.append("max-size: \(m)") }
            if let f = capture.frameLimit { out.append("frames: \(f)") }
            if let d = capture.durationLimit { out.append("duration: \(d)s") }
            out += audio?.lines ?? ["audio: none"]
            out.append("output: \(output.map { "\($0 == "-" ? "stdout" : $0) (\(OutputChoice.describe(outputFormat)))" } ?? "none")")
            for f in forwards { out.append("forward: \(f) (\(f.carries))") }
            out += serving.lines(.encoder)
            out.append("metrics: \(metrics?.description ?? "none")")
            out.append("events: \(events ?? "none")")
            return out
        }
    }

    static func plan(_ o: ParsedOptions) throws -> Plan {
        guard o.positionals.isEmpty else { throw CommandError.usage("produce: unexpected argument '\(o.positionals[0])'") }
        let sourceText = o.string("source") ?? "testsrc"
        let rateHint = "expected a frame rate such as 30, 29.97 or 30000/1001"
        let fps = try o.value("fps", default: FrameRate(30), expected: rateHint) { FrameRate(parsing: $0) }
        var realtime = o.has("realtime")
        let source: Plan.Source
        /// Options that only some sources use.
        let sourceOptions: [String: String] = [
            "size": "testsrc", "flash": "testsrc", "input-size": "raw:PATH", "pix-fmt": "raw:PATH", "input-fps": "raw:PATH",
            "region": "x11", "cursor": "x11", "capture": "x11", "idle-fps": "x11",
        ]
        var used: Set<String> = []
        switch sourceText {
        case "testsrc":
            let size = try o.value("size", default: (1280, 720), expected: "expected WxH, e.g. 1280x720", ValueFormat.frameSize)
            guard size.0 % 2 == 0 && size.1 % 2 == 0 else { throw o.invalid("size", "odd: 4:2:0 needs even width and height") }
            source = .testPattern(width: size.0, height: size.1)
            realtime = !o.isOff("realtime")
            used = ["size", "flash"]
        case _ where sourceText.hasPrefix("y4m:"):
            source = .y4m(path: String(sourceText.dropFirst(4)))
        case _ where sourceText.hasPrefix("raw:"):
            guard let size = try o.value("input-size", expected: "expected WxH, e.g. 1280x720", ValueFormat.frameSize) else {
                throw CommandError.usage("--source raw: needs --input-size WxH")
            }
            let format = try o.value("pix-fmt", default: PixelFormat.i420, expected: "expected one of \(PixelFormat.acceptedNames)") { PixelFormat(name: $0) }
            let rate = try o.value("input-fps", default: FrameRate(30), expected: rateHint) { FrameRate(parsing: $0) }
            source = .raw(path: String(sourceText.dropFirst(4)), width: size.0, height: size.1, format: format, rate: rate)
            used = ["input-size", "pix-fmt", "input-fps"]
        case _ where sourceText == "x11" || sourceText.hasPrefix("x11:"):
            // x11 (the display from $DISPLAY) or x11:DISPLAY: x11:77, x11::77, x11:host:0.0.
            var display: String?
            if sourceText != "x11" {
                do { display = try X11Options.displayName(parsing: String(sourceText.dropFirst(4))) } catch {
                    throw CommandError.usage(error.description)
                }
            }
            var x11 = X11Options(display: display, frameRate: fps)
            if let text = o.string("region") {
                do { x11.region = try X11Region(parsing: text) } catch { throw CommandError.usage(error.description) }
            }
            x11.drawCursor = !o.isOff("cursor")
            x11.captureMode = try o.value("capture", default: .damage, expected: "expected damage or fixed") { X11CaptureMode(rawValue: $0) }
            x11.idleRate = try o.value("idle-fps", default: 1, expected: "expected a rate of at least 0.01 a second, or 0 (e.g. 1, 0.5)") {
                Double($0).flatMap { $0 == 0 || ($0 >= 0.01 && $0 <= 1000) ? $0 : nil }
            }
            source = .x11(x11)
            realtime = true
            used.formUnion(["region", "cursor", "capture", "idle-fps"])
        default:
            throw CommandError.usage("--source \(sourceText): expected testsrc, y4m:PATH, raw:PATH, x11 or x11:DISPLAY (e.g. x11:0)")
        }
        if case .y4m(let p) = source, p.isEmpty { throw CommandError.usage("--source y4m: needs a path (- for stdin)") }
        if case .raw(let p, _, _, _, _) = source, p.isEmpty { throw CommandError.usage("--source raw: needs a path (- for stdin)") }
        var warnings: [String] = []
        for (name, owner) in sourceOptions.sorted(by: { $0.key < $1.key }) where !used.contains(name) && o.sources[name] != nil {
            let given = o.values[name] != nil ? o.label(name) : (o.sources[name] == "command line" ? "--\(name)" : "\(o.sources[name]!)")
            warnings.append("produce: warning: \(given.trimmed) is ignored: it is for --source \(owner), not \(sourceText)")
        }
        if case .x11(let x) = source, x.captureMode == .fixed, o.sources["idle-fps"] != nil {
            warnings.append("produce: warning: \(o.label("idle-fps").trimmed) is ignored: it is for --capture damage (fixed sends every frame)")
        }

        var capture = CaptureOptions()
        capture.targetFrameRate = fps
        capture.maxSize = try o.value("max-size", expected: "expected pixels, at least 16") { ValueFormat.positiveInt($0).flatMap { $0 >= 16 ? $0 : nil } }
        capture.frameLimit = try o.value("frames", expected: "expected a positive number of frames", ValueFormat.positiveInt)
        capture.durationLimit = try o.duration("duration", above: true)
        var encoder = capture.encoder
        encoder.preset = try o.value("preset", default: "veryfast", expected: "expected one of \(H264Encoder.presetNames.joined(separator: ", "))") {
            H264Encoder.presetNames.contains($0) ? $0 : nil
        }
        let tune = o.string("tune") ?? "zerolatency"
        guard tune == "none" || tune.split(separator: ",").allSatisfy({ H264Encoder.tuneNames.contains(String($0)) }) else {
            throw o.invalid("tune", "expected one of \(H264Encoder.tuneNames.joined(separator: ", ")), or none (zerolatency applies in any case)")
        }
        encoder.tune = tune == "none" ? nil : tune
        encoder.profile = try profile(o)
        encoder.bitrate = try o.value("bitrate", expected: "expected bits per second, at least 10k: 6M, 6000k") { ValueFormat.quantity($0).flatMap { $0 >= 10_000 ? $0 : nil } }
        encoder.vbvMilliseconds = try o.value("vbv-ms", default: 500, expected: "expected milliseconds, e.g. 500") { ValueFormat.positiveInt($0) }
        let (keyintFrames, keyintSeconds) = try keyint(o, fps: fps)
        encoder.keyint = keyintFrames
        encoder.keyintDuration = keyintSeconds.map { MediaTime.seconds($0) }
        encoder.threads = try o.value("threads", default: 0, expected: "expected a number of threads (0: auto)", ValueFormat.nonNegativeInt)
        capture.encoder = encoder

        let output = o.string("output")
        let outputFormat = try OutputChoice.format(o, output: output, command: "produce")
        let forwards = try o.strings("forward").map { try ForwardChoice.parse($0, command: "produce") }
        let serving = try ServingChoice.parse(o, .encoder, defaultListen: output == nil && forwards.isEmpty)

        var metrics: Endpoint?
        if let text = o.string("metrics") {
            do { metrics = try Endpoint(parsing: text) } catch { throw CommandError.usage("--metrics: \(error)") }
            if let metrics, !metrics.isLoopback, !o.has("allow-remote") {
                throw CommandError.usage("--metrics \(metrics) is not a loopback address: add --allow-remote")
            }
        }
        let events = o.string("events")
        if output == "-" && events == "-" { throw CommandError.usage("-o - and --events - cannot both use stdout") }
        var plan = Plan(
            source: source, sourceText: sourceText, realtime: realtime, capture: capture, keyintSeconds: keyintSeconds,
            output: output, serving: serving, metrics: metrics, events: events,
            quiet: o.has("quiet"), warnings: warnings)
        plan.outputFormat = outputFormat
        plan.forwards = forwards
        plan.audio = try AudioPlan.parse(o, videoReadsStdin: sourceText == "y4m:-" || sourceText == "raw:-")
        // The tone beeps at each whole second: the pattern flashes with it (a sync reference).
        if case .testPattern = source {
            plan.flash = o.has("flash") || plan.audio?.sources.contains { if case .tone = $0 { true } else { false } } == true
        }
        switch source {
        case .testPattern(let w, let h): plan.frame = (w, h, .i420)
        case .raw(_, let w, let h, let format, _): plan.frame = (w, h, format)
        case .y4m: plan.frameNote = "from the Y4M header"
        case .x11(let x): plan.frameNote = x.region.map { "\($0.width)x\($0.height) bgra (the region)" } ?? "the screen's size, bgra"
        }
        return plan
    }

    /// `--profile`: baseline, main or high. nalcast always encodes 8-bit 4:2:0 (what the
    /// capture path delivers), so the High 10, 4:2:2 and 4:4:4 profiles would describe a
    /// stream nalcast does not make: x264 takes them as upper limits and writes High.
    static func profile(_ o: ParsedOptions) throws -> String {
        let name = o.string("profile") ?? "high"
        let usable = H264Encoder.profileNames.filter { !$0.hasPrefix("high") || $0 == "high" }
        if usable.contains(name) { return name }
        if H264Encoder.profileNames.contains(name) {
            throw o.invalid("profile", "nalcast encodes 8-bit 4:2:0 video only, which this profile would not change (x264 writes High); use \(usable.joined(separator: ", "))")
        }
        throw o.invalid("profile", "expected one of \(usable.joined(separator: ", "))")
    }

    /// `--keyint`: a bare number counts frames (x264's `--keyint`, FFmpeg's `-g`); a time
    /// (`2s`, `500ms`) is converted at `--fps`. Returns frames and the time when one was given.
    static func keyint(_ o: ParsedOptions, fps: FrameRate) throws -> (frames: Int, seconds: Double?) {
        guard let text = o.string("keyint") else { return (Swift.max(1, Int((2 * fps.framesPerSecond).rounded())), 2) }
        switch ValueFormat.duration(text) {
        case .bare(let n) where n >= 1 && n == n.rounded() && n < 1e7:
            return (Int(n), nil)
        case .seconds(let s) where s > 0:
            return (Swift.max(1, Int((s * fps.framesPerSecond).rounded())), s)
        default:
            throw o.invalid("keyint", "expected frames (60) or a time (2s, 500ms)")
        }
    }

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        var plan = try plan(options)
        if !plan.quiet {
            for line in plan.warnings { printError(line) }
        }
        if options.has("dry-run") {
            if case .y4m(let path) = plan.source, path != "-" {
                // The frame size is in the file's header: read it (this also checks the file).
                if let y4m = try makeSource(plan, log: { _ in }) as? Y4MSource {
                    plan.frame = (y4m.width, y4m.height, y4m.pixelFormat)
                }
            }
            printOut(("produce\n" + plan.lines.map { "  " + printable($0) }.joined(separator: "\n") + "\n"))
            return .ok
        }
        return try ProduceSession(plan: plan, status: StatusLine(options: options)).run()
    }
}

/// Makes the frame source a plan asks for, mapping its errors to exit codes.
func makeSource(_ plan: ProduceCommand.Plan, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
    switch plan.source {
    case .y4m(let path), .raw(let path, _, _, _, _):
        // open(2) takes a directory; say so before reading it fails.
        var st = stat()
        if path != "-", stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            throw CommandError.noInput("--source \(plan.sourceText): is a directory")
        }
    default: break
    }
    do {
        switch plan.source {
        case .testPattern(let w, let h):
            return try TestPatternSource(width: w, height: h, frameRate: plan.capture.targetFrameRate ?? FrameRate(30), realtime: plan.realtime,
                                         flash: plan.flash)
        case .y4m(let path):
            return try Y4MSource(path: path, realtime: plan.realtime)
        case .raw(let path, let w, let h, let format, let rate):
            return try RawSource(path: path, width: w, height: h, pixelFormat: format, frameRate: rate, realtime: plan.realtime)
        case .x11(let options):
            return try X11Source(options: options, log: log)
        }
    } catch CaptureError.system(let function, _, let code) where function == "open" {
        // Name the option and the path, not the system call.
        let error = CommandError(code: code == ENOENT || code == EACCES || code == EISDIR || code == ENOTDIR ? .noInput : .ioError,
                                 message: "--source \(plan.sourceText): \(describeOpenError(code))")
        throw error
    } catch let error as CaptureError {
        throw commandError(error)
    } catch let error as X11Error {
        throw commandError(error)
    }
}

/// Exit codes for screen capture errors: no display 69, a region off the screen 64.
func commandError(_ error: X11Error) -> CommandError {
    if error.isBadRegion { return .usage(error.description) }
    if error.isUnavailable { return .unavailable(error.description) }
    switch error {
    case .unsupportedPixelFormat: return .unavailable(error.description)
    default: return .io(error.description)
    }
}

/// Exit codes for capture errors: bad options 64, bad input data 65, missing input 66.
func commandError(_ error: CaptureError) -> CommandError {
    switch error {
    case .oddSize, .badSize: return .usage(error.description)
    case .system(_, let path, let code) where code == ENOENT || code == EACCES || code == EISDIR: return .noInput("\(path): \(describeOpenError(code))")
    case .system(let function, let path, let code): return .io("\(path): \(function == "read" ? "reading" : function): \(String(cString: strerror(code)))")
    case .conversion: return CommandError(code: .software, message: error.description)
    default: return CommandError(code: .dataError, message: error.description)
    }
}
