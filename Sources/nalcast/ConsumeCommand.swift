import Clocks
import Capture
import CLinux
import CommandOptions
import Consumer
import Muxing
import Media
import Output
import IO
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// `nalcast consume`: read a stream (socket, file, stdin), hand every access unit to the
/// sinks: stdout or a file, rotating segments, a remote endpoint; and, as a relay
/// (`--listen`, `--web`), serve it to many readers (`ConsumeRelay`).
enum ConsumeCommand: Command {
    static let name = "consume"
    static let summary = "Read an H.264 stream and write it to stdout, segment files and/or a remote, and/or serve it to readers (a relay)."
    static let usage = "nalcast consume [--from tcp://HOST:PORT|unix:PATH|rtsp://…|srt://…|rtmp://…|udp://…|ts:tcp://…|http(s)://…|whip-listen://…|FILE|-] [-o FILE|-] [--segments DIR] [--forward URL]... [--listen ADDR] [--web ADDR] [OPTIONS]"
    static let specs: [OptionSpec] = (inputOutputSpecs + ServingChoice.specs(.relay) + [
        OptionSpec(name: "realtime", value: nil, help: "read a file input at the pace of its media time, like FFmpeg's -re, for every output (on when serving a file with --listen or --web; --no-realtime turns it off)"),
    ] + observabilitySpecs).withValues(OptionValues.serving(.relay))
    private static let inputOutputSpecs: [OptionSpec] = [
        OptionSpec(name: "from", value: "SOURCE", help: "tcp://HOST:PORT or unix:PATH (a nalcast producer, Annex-B), rtsp[s]://[USER:PASS@]HOST[:PORT]/PATH (a camera), srt://HOST:PORT[?mode=listener], rtmp[s]://HOST[:PORT]/APP/NAME (played), udp://HOST:PORT (MPEG-TS), ts:tcp://HOST:PORT or ts:unix:PATH (MPEG-TS over a socket; found by itself on tcp:// and unix: too), http[s]://…, whip-listen://HOST:PORT/PATH (a WHIP endpoint WebRTC publishers send to, one at a time; their Opus made AAC), a file (Annex-B, MP4, MPEG-TS, Matroska, FLV), or - for stdin (Annex-B); H.264 only, never re-encoded; an AAC track goes into the container outputs", defaultText: "tcp://127.0.0.1:7264"),
        OptionSpec(name: "rtsp-transport", value: "tcp|udp", help: "RTP over the RTSP connection or over UDP, for --from rtsp://", defaultText: "tcp"),
        OptionSpec(name: "stall-timeout", value: "DURATION", help: "a live --from (tcp, unix, rtsp, srt, rtmp, udp, http, a WHIP publisher) that sends nothing this long is reported, dropped and connected again (waited for again)", defaultText: "5s"),
        OptionSpec(name: "output", value: "FILE", help: "write the stream from the first IDR to FILE or - for stdout: .mp4, .ts, .mkv, .flv in that container with its timing, anything else as received (Annex-B)", short: "o"),
        OptionSpec(name: "format", value: "FORMAT", help: "the container of -o: mp4, ts, mkv, flv or h264 (raw Annex-B); mp4 needs a seekable file", defaultText: "from the -o extension, else h264", values: OptionValues.formats),
        OptionSpec(name: "segments", value: "DIR", help: "write rotating segment files into DIR, each starting at an IDR: MP4 unless --segment-name ends otherwise"),
        OptionSpec(name: "segment-duration", value: "DURATION", help: "start a new segment at the first IDR after this much media time; make it a multiple of the IDR spacing", defaultText: "6s"),
        OptionSpec(name: "segment-max-bytes", value: "SIZE", help: "also start one at the first IDR once a segment holds SIZE bytes"),
        OptionSpec(name: "segment-name", value: "PATTERN", help: "file names: strftime fields and %n (sequence number); ending in .mp4 (fragmented), .ts, .mkv or .flv: segments in that container, else Annex-B as received (.h264)", defaultText: SegmentNamer.defaultPattern),
        OptionSpec(name: "keep", value: "N", help: "keep only the newest N finished segments"),
        OptionSpec(name: "on-segment", value: "CMD", help: "run CMD PATH (no shell) for each finished segment; NALCAST_SEGMENT_* in its environment"),
        OptionSpec(name: "fsync", value: nil, help: "fsync each segment before renaming it (--no-fsync: faster, not crash-safe)", defaultText: "on"),
    ] + HLSChoice.specs + ReplayChoice.specs + [
        OptionSpec(name: "forward", value: "URL", help: "send the stream on, reconnecting, to tcp://HOST:PORT or unix:PATH (Annex-B), rtmp://HOST[:PORT]/APP/KEY, srt://HOST:PORT[?streamid=ID], rtsp://HOST[:PORT]/PATH, udp://HOST:PORT or whip://HOST[:PORT]/PATH, http://… (WHIP: WebRTC); repeatable", repeatable: true),
    ] + SRTSecretChoice.specs("consume") + WHIPChoice.specs + [
        OptionSpec(name: "reconnect-timeout", value: "DURATION", help: "give up after being disconnected this long (0: on the first disconnect)", defaultText: "keep trying"),
        OptionSpec(name: "sink-queue", value: "SIZE", help: "bytes queued per sink; a live sink that falls further behind skips to the next IDR (a file reader waits)", defaultText: "8M live, 512k for files"),
        OptionSpec(name: "frame-rate", value: "FPS", help: "media time for files without timestamp SEI or VUI frame rate (30, 29.97, 30000/1001)", defaultText: "30"),
        OptionSpec(name: "max-nal-size", value: "SIZE", help: "drop NAL units larger than this and resync", defaultText: "8M"),
        OptionSpec(name: "stop-timeout", value: "DURATION", help: "on SIGINT/SIGTERM, time the sinks get to finish", defaultText: "5s"),
    ]
    private static let observabilitySpecs: [OptionSpec] = [
        OptionSpec(name: "stats", value: nil, help: "print a status line every second even when stderr is not a terminal"),
        OptionSpec(name: "quiet", value: nil, help: "no status line and no log lines, errors only", short: "q"),
        OptionSpec(name: "metrics", value: "ADDR", help: "serve Prometheus metrics on tcp://HOST:PORT (/metrics, /healthz)"),
        OptionSpec(name: "events", value: "FILE", help: "write one JSON object per line for every state change to FILE or -"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration, exit"),
    ]
    static let notes = [
        "Durations take a unit: 500ms, 10s, 2m, 1h (0 alone needs none).",
        "A segment ends at the first IDR after --segment-duration: with nalcast produce's IDR every",
        "2 s (--keyint), the default 6 s segments are 6 s long; 5 s ones would be 6 s too.",
        "",
        "As a relay (--listen, --web; no other output needed), readers join with the cached GOP at once",
        "(--join gop) and get an end-of-stream when the input ends; they stay through a source's restart.",
        "--from defaults to tcp://127.0.0.1:7264, nalcast produce's port: a relay on the same machine",
        "listens on another, e.g. nalcast consume --listen tcp://127.0.0.1:7265.",
    ]
    static let environmentExample = "NALCAST_FROM=tcp://127.0.0.1:7264 NALCAST_SEGMENTS=/var/lib/nalcast NALCAST_SEGMENT_DURATION=1m nalcast consume"

    /// Six seconds: a segment ends at the first IDR at or after its length (as FFmpeg's
    /// segment muxer cuts), so the length should be a multiple of the IDR spacing. Two
    /// seconds between IDRs is what nalcast produce sends by default and what live
    /// platforms ask encoders for; 6 s is three of them, Apple's recommended HLS segment.
    /// (5 s came out 6 s long.)
    static let defaultSegmentDuration = 6.0

    enum Input: CustomStringConvertible {
        case network(Endpoint)
        case file(String)
        /// Through libavformat (`InputChoice`): a live URL or a container file.
        case demux(DemuxReader.Source)
        /// `rtsp://`: nalcast's own RTSP client (`RTSPReader`), no libavformat.
        case rtsp(RTSPReader.Source)
        /// `whip-listen://HOST:PORT/PATH`: WHIP publishers come to a listener (`WHIPIngest`).
        case whip(endpoint: Endpoint, path: String)
        var description: String {
            switch self {
            case .network(let e): e.description
            case .file(let p): p == "-" ? "stdin" : p
            case .demux(let s): s.shown
            case .rtsp(let s): s.shown
            case .whip(let endpoint, let path): "whip-listen://\(endpoint.description.dropFirst(6))\(path)"
            }
        }
        /// The WHIP listener's address, for the tokens and TLS it shares with `--web`.
        var publishEndpoint: Endpoint? { if case .whip(let endpoint, _) = self { endpoint } else { nil } }
        /// Standard input that is not a regular file: a pipe from a live producer, most likely.
        var isPipe: Bool {
            guard case .file("-") = self else { return false }
            var info = stat()
            return fstat(0, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
        }
        /// A live input (a socket, a live URL): slow sinks skip, the input reconnects.
        var isNetwork: Bool {
            switch self {
            case .network: true
            case .file: false
            case .demux(let s): s.live
            case .rtsp, .whip: true
            }
        }
        /// Media time without a timestamp SEI is counted (a raw file), not the container's.
        var timeIsCounted: Bool { if case .file = self { true } else { false } }
    }

    struct Config {
        var input: Input
        var output: String?
        /// `--format`, else from `-o`'s extension.
        var outputFormat = ContainerFormat.h264
        var segments: String?
        var segmentDuration: Double = ConsumeCommand.defaultSegmentDuration
        var segmentMaxBytes: Int?
        var namer: SegmentNamer
        var keep: Int?
        var hook: [String]?
        var fsync = true
        var forwards: [ForwardChoice] = []
        var reconnectTimeout: Double?
        /// `--stall-timeout`: a live URL with no packet this long is reopened.
        var stallTimeout: Double = 5
        /// Bytes queued per sink: 8 MiB for live input (room to ride out a stall), 512 KiB
        /// for files (the reader waits anyway; memory stays flat).
        var sinkQueue: Int = 8 << 20
        /// `--frame-rate`: counts media time for a file with neither timestamps nor a VUI rate.
        var frameRate = FrameRate(30)
        var maxNAL: Int = AnnexB.defaultMaxNALUnitSize
        var stopTimeout: Double = 5
        var stats = false
        var quiet = false
        /// Said on stderr before anything runs (unless `--quiet`), a dry run too.
        var warnings: [String] = []
        var metrics: Endpoint?
        var events: String?
        var dryRun = false
        /// `--listen`, `--web` and how their readers are served (the relay).
        var serving = ServingChoice()
        /// `--realtime`: pace a file input at its media time (serving a file).
        var realtime = false
        /// `--hls DIR`.
        var hls: HLSChoice?
        /// `--replay TIME`.
        var replay: ReplayChoice?

        init(_ options: ParsedOptions) throws {
            guard options.positionals.isEmpty else {
                throw CommandError.usage("consume: unexpected argument '\(options.positionals[0])' (the input is --from)")
            }
            let rtspTransport = options.string("rtsp-transport") ?? "tcp"
            guard InputChoice.rtspTransports.contains(rtspTransport) else {
                throw CommandError.usage("consume: --rtsp-transport \(rtspTransport): expected tcp or udp")
            }
            input = try InputChoice.parse(options.string("from") ?? "tcp://127.0.0.1:7264", rtspTransport: rtspTransport)
            stallTimeout = try options.duration("stall-timeout", default: 5, above: true)
            output = options.string("output")
            outputFormat = try OutputChoice.format(options, output: output, command: "consume")
            segments = options.string("segments")
            if let s = segments, s.isEmpty { throw CommandError.usage("consume: --segments needs a directory") }
            segmentDuration = try options.duration("segment-duration", default: ConsumeCommand.defaultSegmentDuration, above: true)
            segmentMaxBytes = try options.value("segment-max-bytes", ValueFormat.byteSize)
            do {
                namer = try SegmentNamer(pattern: options.string("segment-name") ?? SegmentNamer.defaultPattern)
            } catch {
                throw CommandError.usage("consume: \(error)")
            }
            if segments != nil {
                try OutputChoice.requireLibraries(ContainerFormat.forPath(namer.pattern), what: "consume: --segment-name \(namer.pattern)")
            }
            keep = try options.value("keep", ValueFormat.positiveInt)
            if let cmd = options.string("on-segment") {
                let words = ChildProcess.split(cmd)
                guard !words.isEmpty else { throw CommandError.usage("consume: --on-segment is empty") }
                hook = words
            }
            fsync = !options.isOff("fsync")
            forwards = try options.strings("forward").map { try ForwardChoice.parse($0, command: "consume") }
            let secret = try SRTSecretChoice.parse(options, prefix: "consume: ", usedBySRT: SRTSecretChoice.usesSRT(forwards, input))
            warnings = SRTSecretChoice.urlPassphraseWarnings(options.strings("forward") + [options.string("from") ?? ""], prefix: "consume: ")
            forwards = SRTSecretChoice.apply(secret, to: forwards)
            forwards = try WHIPChoice.apply(options, to: forwards, prefix: "consume: ")
            input = SRTSecretChoice.apply(secret, to: input)
            reconnectTimeout = try options.duration("reconnect-timeout")
            sinkQueue = try options.value("sink-queue", default: input.isNetwork ? 8 << 20 : 512 << 10, ValueFormat.byteSize)
            frameRate = try options.value("frame-rate", default: FrameRate(30), expected: "expected a frame rate such as 30, 29.97 or 30000/1001") { FrameRate(parsing: $0) }
            maxNAL = max(4, try options.value("max-nal-size", default: AnnexB.defaultMaxNALUnitSize, ValueFormat.byteSize))
            stopTimeout = try options.duration("stop-timeout", default: 5)
            stats = options.has("stats")
            quiet = options.has("quiet")
            if let m = options.string("metrics") { metrics = try endpoint(m, option: "metrics") }
            if let metrics, !metrics.isLoopback, !options.has("allow-remote") {
                throw CommandError.usage("--metrics \(metrics) is not a loopback address: add --allow-remote")
            }
            events = options.string("events")
            dryRun = options.has("dry-run")
            serving = try ServingChoice.parse(options, .relay, defaultListen: false, metrics: metrics, publish: input.publishEndpoint)
            if let endpoint = input.publishEndpoint, !endpoint.isLoopback, !options.has("allow-remote") {
                throw CommandError.usage("consume: --from \(input) is not a loopback address: add --allow-remote to take publishers from other machines")
            }
            hls = try HLSChoice.parse(options, command: "consume", idrInterval: nil)
            replay = try ReplayChoice.parse(options, command: "consume")
            // A file is paced when served (`--no-realtime` says otherwise) or when asked; a
            // live input comes at its own pace.
            realtime = !input.isNetwork && (options.has("realtime") || (serving.isServing && !options.isOff("realtime")))
            guard output != nil || segments != nil || !forwards.isEmpty || serving.isServing || hls != nil || replay != nil else {
                throw CommandError.usage("consume: nothing to write: give -o FILE|-, --segments DIR, --forward URL, --listen ADDR or --web ADDR")
            }
            if output == "-" && events == "-" { throw CommandError.usage("consume: -o - and --events - both want stdout") }
            if segments == nil && (segmentMaxBytes != nil || keep != nil || hook != nil) {
                throw CommandError.usage("consume: --segment-max-bytes, --keep and --on-segment need --segments DIR")
            }
        }

        /// With segments: what warns once when the stream's IDR spacing will not let them be
        /// `segmentDuration` long.
        func idrSpacingObserver(log: Log) -> ((TimedUnit) -> Void)? {
            guard segments != nil else { return nil }
            return IDRSpacingCheck(segmentDuration: segmentDuration) { found in
                let spacing = short(found.spacing, maxDigits: 2)
                log.line("consume: warning: segments will be \(short(found.actual, maxDigits: 2)) s long, not \(short(found.asked, maxDigits: 2)) s: the stream has an IDR every "
                         + "\(spacing) s and a segment ends at an IDR (make --segment-duration a multiple of \(spacing) s)")
            }.note
        }

        var lines: [String] {
            var out = ["from: \(input)"]
            if case .rtsp(let source) = input {
                out.append("reader: nalcast's RTSP client (live, reopened after a stall of \(formatSeconds(stallTimeout)) s); rtsp_transport=\(source.transport.rawValue) ("
                           + (source.transport == .tcp ? "RTP interleaved in the RTSP connection" : "RTP and RTCP over UDP port pairs") + ")")
                out.append("media time: timestamp SEI, else the RTP timestamps from 0, going on across reopenings")
            } else if case .whip(let endpoint, let path) = input {
                out.append("reader: WHIP ingest (RFC 9725): POST \(path) on \(endpoint) with an SDP offer, one publisher at a time; H.264 as sent, Opus made AAC; a publisher gone is waited for like a reconnecting input")
                out.append("media time: timestamp SEI, else the RTP timestamps, going on from one publisher to the next")
            } else if case .demux(let source) = input {
                out.append("reader: libavformat (" + (source.live ? "live, reopened after a stall of \(formatSeconds(stallTimeout)) s" : "a container file") + ")"
                           + (source.options.isEmpty ? "" : "; options " + source.options.map { "\($0.key)=\($0.value)" }.joined(separator: " ")))
                out.append("media time: timestamp SEI, else the container's decode times from 0, going on across reopenings")
            } else {
                out.append("media time: timestamp SEI, else " + (input.isNetwork ? "arrival time" : "access units counted at the VUI frame rate, else \(frameRate) fps"))
            }
            out.append("slow sinks: " + (input.isNetwork ? "skip to the next IDR past \(sinkQueue) bytes queued" : "the reader waits (file input), \(sinkQueue) bytes queued per sink"))
            if let o = output { out.append("output: \(o == "-" ? "stdout" : o) (\(OutputChoice.describe(outputFormat)))") }
            if let s = segments {
                out.append("segments: \(s)")
                out.append("segment duration: \(formatSeconds(segmentDuration)) s")
                out.append("segment max bytes: \(segmentMaxBytes.map(String.init) ?? "none")")
                out.append("segment name: \(namer.pattern) (e.g. \(namer.name(time: Int(WallClock.seconds), sequence: 1)); \(OutputChoice.describe(ContainerFormat.forPath(namer.pattern))))")
                out.append("keep: \(keep.map(String.init) ?? "all")")
                out.append("on segment: \(hook?.joined(separator: " ") ?? "none")")
                out.append("fsync: \(fsync ? "on" : "off")")
            }
            out += hls?.lines ?? []
            out += replay?.lines ?? []
            for f in forwards { out.append("forward: \(f) (\(f.carries))") }
            if input.publishEndpoint != nil {
                out.append("next publisher: waited for " + (reconnectTimeout.map { "up to \(formatSeconds($0)) s after one leaves" } ?? "as long as it takes"))
            }
            if (input.isNetwork && input.publishEndpoint == nil) || !forwards.isEmpty {
                out.append("reconnect: 100ms doubling to 5s with jitter, give up " + (reconnectTimeout.map { "after \(formatSeconds($0)) s" } ?? "never"))
            }
            if serving.isServing { out += serving.lines(.relay) }
            if !input.isNetwork { out.append("realtime: " + (realtime ? "on (the file is read at the pace of its media time)" : "off (the file is read as fast as it goes)")) }
            out.append("metrics: \(metrics?.description ?? "off")")
            out += serving.access.lines
            out.append("events: \(events ?? "off")")
            return out
        }
    }

    static func endpoint(_ text: String, option: String, portRequired: Bool = false) throws -> Endpoint {
        do {
            return try Endpoint(parsing: text, portRequired: portRequired)
        } catch {
            throw CommandError.usage("consume: --\(option): \(error)")
        }
    }

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        let config = try Config(options)
        if !config.quiet {
            for line in config.warnings { printError(line) }
        }
        if config.dryRun {
            var out = OutputBuffer()
            for line in config.lines { out.line(printable(line)) }
            out.flush()
            return .ok
        }
        keepReadBuffersMapped()
        return try ConsumeSession(config: config, options: options).run()
    }

    /// The input is read in 256 KiB chunks that live until their access units are written,
    /// then freed. glibc would return that memory to the kernel whenever 512 KiB lie free
    /// at the top of the heap (its trim threshold follows the largest freed block) and
    /// fault it back in, zeroed, for the next chunks: 19 000 page faults for a 1 GB file.
    /// Fixed thresholds keep up to 4 MiB free in the heap instead: 1 000 faults, about
    /// 10 % less CPU when cutting a file into segments (bench `segment`).
    static func keepReadBuffersMapped() {
        _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)  // chunks come from the heap, not mmap
        _ = mallopt(M_TRIM_THRESHOLD, 4 << 20)
    }
}
