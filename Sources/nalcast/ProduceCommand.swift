import Capture
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
    static let specs: [OptionSpec] = [
        // Source
        OptionSpec(name: "source", value: "SRC", help: "testsrc, y4m:PATH, raw:PATH, x11[:DISPLAY] (PATH - is stdin)", defaultText: "testsrc"),
        OptionSpec(name: "size", value: "WxH", help: "test pattern size", defaultText: "1280x720"),
        OptionSpec(name: "input-size", value: "WxH", help: "frame size of raw: input"),
        OptionSpec(name: "pix-fmt", value: "FMT", help: "pixel format of raw: input: i420, nv12, bgra, rgba, yuyv", defaultText: "i420"),
        OptionSpec(name: "input-fps", value: "RATE", help: "frame rate of raw: input", defaultText: "30"),
        OptionSpec(name: "region", value: "X,Y,WxH", help: "x11: capture this part of the screen (W, H even)", defaultText: "the whole screen"),
        OptionSpec(name: "cursor", value: nil, help: "x11: draw the pointer into the frames (on; --no-cursor turns it off)"),
        OptionSpec(name: "realtime", value: nil, help: "pace a file source at its own frame rate, like FFmpeg's -re (on for testsrc; --no-realtime turns it off)"),
        OptionSpec(name: "frames", value: "N", help: "stop after N encoded frames"),
        OptionSpec(name: "duration", value: "TIME", help: "stop after TIME of media (e.g. 10s, 2m)"),
        // Pacing, scaling, encoding
        OptionSpec(name: "fps", value: "RATE", help: "target frame rate; faster input is dropped (newest wins)", defaultText: "30"),
        OptionSpec(name: "max-size", value: "N", help: "scale down so the larger side is at most N pixels"),
        OptionSpec(name: "preset", value: "NAME", help: "x264 preset", defaultText: "veryfast"),
        OptionSpec(name: "tune", value: "NAME", help: "x264 tune", defaultText: "zerolatency"),
        OptionSpec(name: "profile", value: "NAME", help: "H.264 profile", defaultText: "high"),
        OptionSpec(name: "bitrate", value: "RATE", help: "bits per second (6M, 6000k)", defaultText: "width × height × 3"),
        OptionSpec(name: "vbv-ms", value: "MS", help: "VBV buffer in milliseconds of the bitrate", defaultText: "500"),
        OptionSpec(name: "keyint", value: "TIME", help: "time between IDRs (2s, 500ms)", defaultText: "2s"),
        OptionSpec(name: "threads", value: "N", help: "encoder threads (0: auto)", defaultText: "0"),
        // Output
        OptionSpec(name: "output", value: "FILE", help: "also write the stream to FILE (- for stdout); without --listen, only there", short: "o"),
        OptionSpec(name: "listen", value: "ADDR", help: "serve readers on tcp://HOST:PORT or unix:PATH", defaultText: "tcp://127.0.0.1:7264 unless -o is given"),
        OptionSpec(name: "allow-remote", value: nil, help: "allow --listen on a non-loopback address (the stream may show your screen)"),
        OptionSpec(name: "join", value: "POLICY", help: "where a new reader starts: idr (fresh IDR at once), gop (cached GOP), next (next IDR)", defaultText: "idr"),
        OptionSpec(name: "idr-min-interval", value: "TIME", help: "at most one IDR for joining readers per TIME", defaultText: "250ms"),
        OptionSpec(name: "reader-lag", value: "TIME", help: "a reader further behind skips to the next IDR", defaultText: "500ms"),
        OptionSpec(name: "reader-max-bytes", value: "SIZE", help: "a reader with more queued skips to the next IDR", defaultText: "8M"),
        OptionSpec(name: "reader-timeout", value: "TIME", help: "close a reader that makes no progress for TIME", defaultText: "10s"),
        OptionSpec(name: "max-readers", value: "N", help: "close further readers at once", defaultText: "16"),
        // Observability
        OptionSpec(name: "metrics", value: "ADDR", help: "serve Prometheus /metrics, /healthz and POST /bitrate on ADDR"),
        OptionSpec(name: "events", value: "FILE", help: "write JSON lines for every state change to FILE (- for stdout)"),
        OptionSpec(name: "stats", value: nil, help: "print the status line even when stderr is not a terminal"),
        OptionSpec(name: "quiet", value: nil, help: "print only errors", short: "q"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration and exit"),
    ]

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
        var capture = CaptureOptions()
        var keyintSeconds: Double
        var output: String?
        var listen: Endpoint?
        var broadcaster = BroadcasterConfig()
        var metrics: Endpoint?
        var events: String?
        var quiet: Bool

        var lines: [String] {
            var out = [
                "source: \(sourceText)\(realtime ? " (realtime)" : "")",
                "fps: \(capture.targetFrameRate.map(\.description) ?? "source rate")",
                "encoder: preset=\(capture.encoder.preset) tune=\(capture.encoder.tune ?? "none") profile=\(capture.encoder.profile) "
                    + "bitrate=\(capture.encoder.bitrate.map(String.init) ?? "auto") vbv-ms=\(capture.encoder.vbvMilliseconds) "
                    + "keyint=\(keyintSeconds)s threads=\(capture.encoder.threads)",
            ]
            if case .x11(let x) = source {
                out.append("x11: display=\(x.display ?? "$DISPLAY") region=\(x.region?.description ?? "whole screen") cursor=\(x.drawCursor ? "on" : "off")")
            }
            if let m = capture.maxSize { out.append("max-size: \(m)") }
            if let f = capture.frameLimit { out.append("frames: \(f)") }
            if let d = capture.durationLimit { out.append("duration: \(d)s") }
            out.append("output: \(output ?? "none")")
            out.append("listen: \(listen?.description ?? "none")")
            if listen != nil {
                let b = broadcaster
                out.append("join: \(b.joinPolicy.rawValue) idr-min-interval=\(Double(b.idrMinIntervalNs) / 1e6)ms "
                    + "reader-lag=\(Double(b.readerLimits.maxLagNs) / 1e6)ms reader-max-bytes=\(b.readerLimits.maxBytes) "
                    + "reader-timeout=\(Double(b.readerTimeoutNs) / 1e9)s max-readers=\(b.maxReaders)")
            }
            out.append("metrics: \(metrics?.description ?? "none")")
            out.append("events: \(events ?? "none")")
            return out
        }
    }

    static func plan(_ o: ParsedOptions) throws -> Plan {
        guard o.positionals.isEmpty else { throw CommandError.usage("produce: unexpected argument '\(o.positionals[0])'") }
        let sourceText = o.string("source") ?? "testsrc"
        let fps = try o.value("fps", default: FrameRate(30)) { FrameRate(parsing: $0) }
        var realtime = o.has("realtime")
        let source: Plan.Source
        switch sourceText {
        case "testsrc":
            let size = try o.value("size", default: (1280, 720), ValueFormat.frameSize)
            guard size.0 % 2 == 0 && size.1 % 2 == 0 else { throw CommandError.usage("--size \(size.0)x\(size.1) is odd: 4:2:0 needs even width and height") }
            source = .testPattern(width: size.0, height: size.1)
            realtime = !o.isOff("realtime")
        case _ where sourceText.hasPrefix("y4m:"):
            source = .y4m(path: String(sourceText.dropFirst(4)))
        case _ where sourceText.hasPrefix("raw:"):
            guard let size = try o.value("input-size", ValueFormat.frameSize) else { throw CommandError.usage("--source raw: needs --input-size WxH") }
            let format = try o.value("pix-fmt", default: PixelFormat.i420) { PixelFormat(rawValue: $0) }
            let rate = try o.value("input-fps", default: FrameRate(30)) { FrameRate(parsing: $0) }
            source = .raw(path: String(sourceText.dropFirst(4)), width: size.0, height: size.1, format: format, rate: rate)
        case _ where sourceText == "x11" || sourceText.hasPrefix("x11:"):
            // x11 (the display from $DISPLAY) or x11:DISPLAY, e.g. x11::1.
            var x11 = X11Options(display: sourceText == "x11" ? nil : String(sourceText.dropFirst(4)), frameRate: fps)
            if let text = o.string("region") {
                do { x11.region = try X11Region(parsing: text) } catch { throw CommandError.usage(error.description) }
            }
            x11.drawCursor = !o.isOff("cursor")
            source = .x11(x11)
            realtime = true
        default:
            throw CommandError.usage("--source '\(sourceText)': expected testsrc, y4m:PATH, raw:PATH or x11[:DISPLAY]")
        }
        if case .y4m(let p) = source, p.isEmpty { throw CommandError.usage("--source y4m: needs a path (- for stdin)") }
        if case .raw(let p, _, _, _, _) = source, p.isEmpty { throw CommandError.usage("--source raw: needs a path (- for stdin)") }

        var capture = CaptureOptions()
        capture.targetFrameRate = fps
        capture.maxSize = try o.value("max-size") { ValueFormat.positiveInt($0).flatMap { $0 >= 16 ? $0 : nil } }
        capture.frameLimit = try o.value("frames", ValueFormat.positiveInt)
        capture.durationLimit = try o.value("duration") { ValueFormat.duration($0).flatMap { $0 > 0 ? $0 : nil } }
        var encoder = capture.encoder
        encoder.preset = try o.value("preset", default: "veryfast") { H264Encoder.presetNames.contains($0) ? $0 : nil }
        let tune = o.string("tune") ?? "zerolatency"
        guard tune == "none" || tune.split(separator: ",").allSatisfy({ H264Encoder.tuneNames.contains(String($0)) }) else {
            throw CommandError.usage("invalid value '\(tune)' for --tune (one of \(H264Encoder.tuneNames.joined(separator: ", ")), or none)")
        }
        encoder.tune = tune == "none" ? nil : tune
        encoder.profile = try o.value("profile", default: "high") { H264Encoder.profileNames.contains($0) ? $0 : nil }
        encoder.bitrate = try o.value("bitrate") { ValueFormat.quantity($0).flatMap { $0 >= 10_000 ? $0 : nil } }
        encoder.vbvMilliseconds = try o.value("vbv-ms", default: 500) { ValueFormat.positiveInt($0) }
        let keyint = try o.value("keyint", default: 2.0) { ValueFormat.duration($0).flatMap { $0 > 0 ? $0 : nil } }
        encoder.keyint = Swift.max(1, Int((keyint * fps.framesPerSecond).rounded()))
        encoder.threads = try o.value("threads", default: 0, ValueFormat.nonNegativeInt)
        capture.encoder = encoder

        let output = o.string("output")
        let listenText = o.string("listen") ?? (output == nil ? "tcp://127.0.0.1:\(Endpoint.defaultPort)" : nil)
        var listen: Endpoint?
        if let listenText {
            do {
                listen = try Endpoint(parsing: listenText)
            } catch {
                throw CommandError.usage("--listen: \(error)")
            }
        }
        if let listen, !listen.isLoopback, !o.has("allow-remote") {
            throw CommandError.usage("--listen \(listen) is not a loopback address: add --allow-remote to serve other machines")
        }
        var broadcaster = BroadcasterConfig()
        broadcaster.joinPolicy = try o.value("join", default: .idr) { JoinPolicy(rawValue: $0) }
        broadcaster.idrMinIntervalNs = try nanoseconds(o, "idr-min-interval", default: 0.25)
        broadcaster.readerLimits.maxLagNs = try nanoseconds(o, "reader-lag", default: 0.5, minimum: 0.001)
        broadcaster.readerLimits.maxBytes = try o.value("reader-max-bytes", default: 8 << 20) { ValueFormat.byteSize($0).flatMap { $0 >= 4096 ? $0 : nil } }
        broadcaster.readerTimeoutNs = try nanoseconds(o, "reader-timeout", default: 10, minimum: 0.001)
        broadcaster.maxReaders = try o.value("max-readers", default: 16, ValueFormat.positiveInt)

        var metrics: Endpoint?
        if let text = o.string("metrics") {
            do { metrics = try Endpoint(parsing: text) } catch { throw CommandError.usage("--metrics: \(error)") }
            if let metrics, !metrics.isLoopback, !o.has("allow-remote") {
                throw CommandError.usage("--metrics \(metrics) is not a loopback address: add --allow-remote")
            }
        }
        let events = o.string("events")
        if output == "-" && events == "-" { throw CommandError.usage("-o - and --events - cannot both use stdout") }
        return Plan(
            source: source, sourceText: sourceText, realtime: realtime, capture: capture, keyintSeconds: keyint,
            output: output, listen: listen, broadcaster: broadcaster, metrics: metrics, events: events,
            quiet: o.has("quiet"))
    }

    static func nanoseconds(_ o: ParsedOptions, _ name: String, default seconds: Double, minimum: Double = 0) throws -> UInt64 {
        let value = try o.value(name, default: seconds) { ValueFormat.duration($0).flatMap { $0 >= minimum ? $0 : nil } }
        return UInt64(value * 1e9)
    }

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        let plan = try plan(options)
        if options.has("dry-run") {
            printOut(("produce\n" + plan.lines.map { "  " + $0 }.joined(separator: "\n") + "\n"))
            return .ok
        }
        return try ProduceSession(plan: plan, status: StatusLine(options: options)).run()
    }
}

/// Makes the frame source a plan asks for, mapping its errors to exit codes.
func makeSource(_ plan: ProduceCommand.Plan, log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
    do {
        switch plan.source {
        case .testPattern(let w, let h):
            return try TestPatternSource(width: w, height: h, frameRate: plan.capture.targetFrameRate ?? FrameRate(30), realtime: plan.realtime)
        case .y4m(let path):
            return try Y4MSource(path: path, realtime: plan.realtime)
        case .raw(let path, let w, let h, let format, let rate):
            return try RawSource(path: path, width: w, height: h, pixelFormat: format, frameRate: rate, realtime: plan.realtime)
        case .x11(let options):
            return try X11Source(options: options, log: log)
        }
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
    case .system(_, _, let code) where code == ENOENT || code == EACCES || code == EISDIR: return .noInput(error.description)
    case .system: return .io(error.description)
    case .conversion: return CommandError(code: .software, message: error.description)
    default: return CommandError(code: .dataError, message: error.description)
    }
}
