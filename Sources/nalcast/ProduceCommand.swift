import Capture
import CaptureSources
import CommandOptions
import Muxing
import Encoder
import IO
#if canImport(Glibc)
import Glibc
#endif
import Media
import Pipeline

/// `nalcast produce`: capture → pace → convert → encode → serve (and/or write to -o).
enum ProduceCommand: Command {
    static let name = "produce"
    static let summary = "Capture frames, encode them with libx264 and serve the H.264 stream to readers."
    static let usage = "nalcast produce [--source SRC] [--listen ADDR] [-o FILE|-] [OPTIONS]"
    static let specs: [OptionSpec] = (sourceSpecs + AudioPlan.specs + HLSChoice.specs + ReplayChoice.specs + ServingChoice.specs(.encoder) + observabilitySpecs)
        .withValues(OptionValues.sources.merging(OptionValues.serving(.encoder)) { $1 })
    private static let sourceSpecs: [OptionSpec] = [SourceKinds.sourceSpec] + SourceKinds.specs + [
        OptionSpec(name: "realtime", value: nil, help: "pace a file source at its own frame rate, like FFmpeg's -re (on for testsrc; --no-realtime turns it off)"),
        OptionSpec(name: "frames", value: "N", help: "stop after N encoded frames"),
        OptionSpec(name: "duration", value: "TIME", help: "stop after TIME of media (e.g. 10s, 2m)"),
        // Pacing, scaling, encoding
        OptionSpec(name: "fps", value: "RATE", help: "target frame rate (30, 29.97 = 30000/1001, 12.5); faster input is dropped (newest wins)", defaultText: "30"),
        OptionSpec(name: "max-size", value: "N", help: "scale down so the larger side is at most N pixels"),
        OptionSpec(name: "preset", value: "NAME", help: "x264 preset", defaultText: "veryfast", values: H264Encoder.presetNames),
        OptionSpec(name: "tune", value: "NAME", help: "x264 tune", defaultText: "zerolatency", values: H264Encoder.tuneNames + ["none"]),
        OptionSpec(name: "profile", value: "NAME", help: "H.264 profile: baseline, main, high", defaultText: "high", values: usableProfiles),
        OptionSpec(name: "bitrate", value: "RATE", help: "bits per second (6M, 6000k)", defaultText: "width × height × 3"),
        OptionSpec(name: "vbv-ms", value: "MS", help: "VBV buffer in milliseconds of the bitrate", defaultText: "500"),
        OptionSpec(name: "keyint", value: "N|TIME", help: "distance between IDRs: N frames, as in x264 and FFmpeg (60), or a time (2s, 500ms)", defaultText: "2s"),
        OptionSpec(name: "threads", value: "N", help: "encoder threads (0: auto)", defaultText: "0"),
        // Output
        OptionSpec(name: "output", value: "FILE", help: "also write the stream to FILE (- for stdout): .mp4, .ts, .mkv, .flv in that container, anything else Annex-B; without --listen, only there", short: "o"),
        OptionSpec(name: "forward", value: "URL", help: "also push the stream, reconnecting, to rtmp://HOST[:PORT]/APP/KEY, srt://HOST:PORT[?streamid=ID], rtsp://HOST[:PORT]/PATH, udp://HOST:PORT, whip://HOST[:PORT]/PATH or http://… (WHIP: WebRTC), or tcp://HOST:PORT / unix:PATH (Annex-B); repeatable; without --listen, only there", repeatable: true),
        OptionSpec(name: "format", value: "FORMAT", help: "the container of -o: mp4, ts, mkv, flv or h264 (raw Annex-B); mp4 needs a seekable file", defaultText: "from the -o extension, else h264", values: OptionValues.formats),
    ] + SRTSecretChoice.specs("produce") + WHIPChoice.specs
    private static let observabilitySpecs: [OptionSpec] = [
        // Observability
        OptionSpec(name: "metrics", value: "ADDR", help: "serve Prometheus /metrics, /healthz and POST /bitrate on ADDR"),
        OptionSpec(name: "events", value: "FILE", help: "write JSON lines for every state change to FILE (- for stdout)"),
        OptionSpec(name: "stats", value: nil, help: "print the status line even when stderr is not a terminal"),
        OptionSpec(name: "quiet", value: nil, help: "print only errors", short: "q"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration and exit"),
    ]

    static let notes = SourceKinds.notes + AudioPlan.notes + ["", durationNote]
    static let manNotes = [durationNote]
    private static let durationNote = "Durations take a unit: 500ms, 10s, 2m, 1h; a bare --keyint counts frames (x264's --keyint, FFmpeg's -g)."
    static let environmentExample = "NALCAST_LISTEN=tcp://0.0.0.0:7264 NALCAST_ALLOW_REMOTE=1 NALCAST_KEYINT=1s nalcast produce --source x11"

    /// Everything `produce` resolved from its options, before anything is opened.
    struct Plan {
        /// `--source`, as its kind read it.
        var source: any PlannedSource
        var sourceText: String { source.text }
        var realtime: Bool { source.realtime }
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
        /// `--hls DIR`.
        var hls: HLSChoice?
        /// `--replay TIME`.
        var replay: ReplayChoice?

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
            out += source.dryRunLines
            if let m = capture.maxSize { out.append("max-size: \(m)") }
            if let f = capture.frameLimit { out.append("frames: \(f)") }
            if let d = capture.durationLimit { out.append("duration: \(d)s") }
            out += audio?.lines ?? ["audio: none"]
            out.append("output: \(output.map { "\($0 == "-" ? "stdout" : $0) (\(OutputChoice.describe(outputFormat)))" } ?? "none")")
            for f in forwards { out.append("forward: \(f) (\(f.carries))") }
            out += hls?.lines ?? []
            out += replay?.lines ?? []
            out += serving.lines(.encoder)
            out.append("metrics: \(metrics?.description ?? "none")")
            out += serving.access.lines
            out.append("events: \(events ?? "none")")
            return out
        }
    }

    static func plan(_ o: ParsedOptions) throws -> Plan {
        guard o.positionals.isEmpty else { throw CommandError.usage("produce: unexpected argument '\(o.positionals[0])'") }
        let sourceText = o.string("source") ?? "testsrc"
        let fps = try o.value("fps", default: FrameRate(30), expected: ValueFormat.frameRateHint) { FrameRate(parsing: $0) }
        let (source, sourceWarnings) = try SourceKinds.plan(sourceText, o, fps: fps)
        var warnings = sourceWarnings

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
        var forwards = try o.strings("forward").map { try ForwardChoice.parse($0, command: "produce") }
        let secret = try SRTSecretChoice.parse(o, prefix: "", usedBySRT: SRTSecretChoice.usesSRT(forwards))
        forwards = SRTSecretChoice.apply(secret, to: forwards)
        forwards = try WHIPChoice.apply(o, to: forwards, prefix: "")
        warnings += SRTSecretChoice.urlPassphraseWarnings(o.strings("forward"), prefix: "")
        let hls = try HLSChoice.parse(o, command: "produce", idrInterval: Double(keyintFrames) / fps.framesPerSecond)
        var metrics: Endpoint?
        if let text = o.string("metrics") {
            do { metrics = try Endpoint(parsing: text) } catch { throw CommandError.usage("--metrics: \(error)") }
            if let metrics, !metrics.isLoopback, !o.has("allow-remote") {
                throw CommandError.usage("--metrics \(metrics) is not a loopback address: add --allow-remote")
            }
        }
        let serving = try ServingChoice.parse(o, .encoder, defaultListen: output == nil && forwards.isEmpty && hls == nil && !o.has("replay"),
                                              metrics: metrics)
        let events = o.string("events")
        if output == "-" && events == "-" { throw CommandError.usage("-o - and --events - cannot both use stdout") }
        var plan = Plan(
            source: source, capture: capture, keyintSeconds: keyintSeconds,
            output: output, serving: serving, metrics: metrics, events: events,
            quiet: o.has("quiet"), warnings: warnings)
        plan.outputFormat = outputFormat
        plan.forwards = forwards
        plan.hls = hls
        plan.replay = try ReplayChoice.parse(o, command: "produce")
        plan.audio = try AudioPlan.parse(o, videoReadsStdin: source.readsStdin)
        // The tone beeps at each whole second: the pattern flashes with it (a sync reference).
        if source.takesFlash {
            plan.flash = o.has("flash") || plan.audio?.sources.contains { if case .tone = $0 { true } else { false } } == true
        }
        plan.frame = source.frame
        plan.frameNote = source.frameNote
        return plan
    }

    /// `--profile`: baseline, main or high. nalcast always encodes 8-bit 4:2:0 (what the
    /// capture path delivers), so the High 10, 4:2:2 and 4:4:4 profiles would describe a
    /// stream nalcast does not make: x264 takes them as upper limits and writes High.
    static var usableProfiles: [String] { H264Encoder.profileNames.filter { !$0.hasPrefix("high") || $0 == "high" } }

    static func profile(_ o: ParsedOptions) throws -> String {
        let name = o.string("profile") ?? "high"
        let usable = usableProfiles
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
            if plan.source.dryRunOpens {
                // The frame is known once the source is open (a Y4M header): this also checks the input.
                let source = try plan.makeSource(log: { _ in })
                plan.frame = (source.width, source.height, source.pixelFormat)
            }
            printOut(("produce\n" + plan.lines.map { "  " + printable($0) }.joined(separator: "\n") + "\n"))
            return .ok
        }
        return try ProduceSession(plan: plan, status: StatusLine(options: options)).run()
    }
}

extension ProduceCommand.Plan {
    /// Opens the planned source with what it is made with besides its own options; its
    /// errors mapped to exit codes.
    func makeSource(log: @escaping @Sendable (String) -> Void) throws -> any FrameSource {
        try CaptureSources.makeSource(source, SourceSettings(frameRate: capture.targetFrameRate, flash: flash), log: log)
    }
}
