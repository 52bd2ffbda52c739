import Consumer
import EventLoop
import Foundation
import H264
import Relay
import Synchronization

/// `nalcast consume`: read a stream (socket, file, stdin), hand every access unit to the
/// sinks: stdout or a file, rotating segments, a remote endpoint.
enum ConsumeCommand: Command {
    static let name = "consume"
    static let summary = "Read an H.264 stream and write it to stdout, segment files and/or a remote."
    static let usage = "nalcast consume [--from tcp://HOST:PORT|unix:PATH|FILE|-] [-o FILE|-] [--segments DIR] [--forward tcp://HOST:PORT] [OPTIONS]"
    static let specs: [OptionSpec] = [
        OptionSpec(name: "from", value: "SOURCE", help: "tcp://HOST:PORT, unix:PATH, a file, or - for stdin", defaultText: "tcp://127.0.0.1:7264"),
        OptionSpec(name: "output", value: "FILE", help: "write the stream (as received, from the first IDR) to FILE or - for stdout", short: "o"),
        OptionSpec(name: "segments", value: "DIR", help: "write rotating segment files into DIR, each starting at an IDR"),
        OptionSpec(name: "segment-duration", value: "DURATION", help: "start a new segment at the first IDR after this much media time", defaultText: "5s"),
        OptionSpec(name: "segment-max-bytes", value: "SIZE", help: "also start one at the first IDR once a segment holds SIZE bytes"),
        OptionSpec(name: "segment-name", value: "PATTERN", help: "file names: strftime fields and %n (sequence number)", defaultText: SegmentNamer.defaultPattern),
        OptionSpec(name: "keep", value: "N", help: "keep only the newest N finished segments"),
        OptionSpec(name: "on-segment", value: "CMD", help: "run CMD PATH (no shell) for each finished segment; NALCAST_SEGMENT_* in its environment"),
        OptionSpec(name: "fsync", value: nil, help: "fsync each segment before renaming it (--no-fsync: faster, not crash-safe)", defaultText: "on"),
        OptionSpec(name: "forward", value: "ENDPOINT", help: "send the stream to tcp://HOST:PORT (or unix:PATH), reconnecting"),
        OptionSpec(name: "reconnect-timeout", value: "DURATION", help: "give up after being disconnected this long (0: on the first disconnect)", defaultText: "keep trying"),
        OptionSpec(name: "sink-queue", value: "SIZE", help: "bytes queued per sink; a live sink that falls further behind skips to the next IDR", defaultText: "8M"),
        OptionSpec(name: "frame-rate", value: "FPS", help: "media time for files without timestamp SEI or VUI frame rate", defaultText: "30"),
        OptionSpec(name: "max-nal-size", value: "SIZE", help: "drop NAL units larger than this and resync", defaultText: "8M"),
        OptionSpec(name: "stop-timeout", value: "DURATION", help: "on SIGINT/SIGTERM, time the sinks get to finish", defaultText: "5s"),
        OptionSpec(name: "stats", value: nil, help: "print a status line every second even when stderr is not a terminal"),
        OptionSpec(name: "quiet", value: nil, help: "no status line and no log lines, errors only", short: "q"),
        OptionSpec(name: "metrics", value: "ADDR", help: "serve Prometheus metrics on tcp://HOST:PORT (/metrics, /healthz)"),
        OptionSpec(name: "events", value: "FILE", help: "write one JSON object per line for every state change to FILE or -"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration, exit"),
    ]

    enum Input: CustomStringConvertible {
        case network(Endpoint)
        case file(String)
        var description: String {
            switch self {
            case .network(let e): e.description
            case .file(let p): p == "-" ? "stdin" : p
            }
        }
        var isNetwork: Bool { if case .network = self { true } else { false } }
    }

    struct Config {
        var input: Input
        var output: String?
        var segments: String?
        var segmentDuration: Double = 5
        var segmentMaxBytes: Int?
        var namer: SegmentNamer
        var keep: Int?
        var hook: [String]?
        var fsync = true
        var forward: Endpoint?
        var reconnectTimeout: Double?
        var sinkQueue: Int = 8 << 20
        var frameRate: Double = 30
        var maxNAL: Int = AnnexBScanner.defaultMaxNALUnitSize
        var stopTimeout: Double = 5
        var stats = false
        var quiet = false
        var metrics: Endpoint?
        var events: String?
        var dryRun = false

        init(_ options: ParsedOptions) throws {
            guard options.positionals.isEmpty else {
                throw CommandError.usage("consume: unexpected argument '\(options.positionals[0])' (the input is --from)")
            }
            let from = options.string("from") ?? "tcp://127.0.0.1:7264"
            if from.hasPrefix("tcp://") || from.hasPrefix("unix:") {
                input = .network(try endpoint(from, option: "from"))
            } else if from.contains("://") {
                throw CommandError.usage("consume: --from \(from): expected tcp://HOST:PORT, unix:PATH, a file or -")
            } else {
                input = .file(from)
            }
            output = options.string("output")
            segments = options.string("segments")
            if let s = segments, s.isEmpty { throw CommandError.usage("consume: --segments needs a directory") }
            segmentDuration = try options.value("segment-duration", default: 5, ValueFormat.duration)
            guard segmentDuration > 0 else { throw CommandError.usage("consume: --segment-duration must be more than 0") }
            segmentMaxBytes = try options.value("segment-max-bytes", ValueFormat.byteSize)
            do {
                namer = try SegmentNamer(pattern: options.string("segment-name") ?? SegmentNamer.defaultPattern)
            } catch {
                throw CommandError.usage("consume: \(error)")
            }
            keep = try options.value("keep", ValueFormat.positiveInt)
            if let cmd = options.string("on-segment") {
                let words = ChildProcess.split(cmd)
                guard !words.isEmpty else { throw CommandError.usage("consume: --on-segment is empty") }
                hook = words
            }
            fsync = !options.isOff("fsync")
            if let f = options.string("forward") { forward = try endpoint(f, option: "forward") }
            reconnectTimeout = try options.value("reconnect-timeout", ValueFormat.duration)
            sinkQueue = try options.value("sink-queue", default: 8 << 20, ValueFormat.byteSize)
            frameRate = try options.value("frame-rate", default: 30) { ValueFormat.frameRate($0).map { Double($0.num) / Double($0.den) } }
            maxNAL = max(4, try options.value("max-nal-size", default: AnnexBScanner.defaultMaxNALUnitSize, ValueFormat.byteSize))
            stopTimeout = try options.value("stop-timeout", default: 5, ValueFormat.duration)
            stats = options.has("stats")
            quiet = options.has("quiet")
            if let m = options.string("metrics") { metrics = try endpoint(m, option: "metrics") }
            events = options.string("events")
            dryRun = options.has("dry-run")
            guard output != nil || segments != nil || forward != nil else {
                throw CommandError.usage("consume: nothing to write: give -o FILE|-, --segments DIR or --forward ENDPOINT")
            }
            if output == "-" && events == "-" { throw CommandError.usage("consume: -o - and --events - both want stdout") }
            if segments == nil && (segmentMaxBytes != nil || keep != nil || hook != nil) {
                throw CommandError.usage("consume: --segment-max-bytes, --keep and --on-segment need --segments DIR")
            }
        }

        var lines: [String] {
            var out = ["from: \(input)"]
            out.append("media time: timestamp SEI, else " + (input.isNetwork ? "arrival time" : "access units counted at the VUI frame rate, else \(formatSeconds(frameRate)) fps"))
            out.append("slow sinks: " + (input.isNetwork ? "skip to the next IDR past \(sinkQueue) bytes queued" : "the reader waits (file input), \(min(sinkQueue, 512 << 10)) bytes queued per sink"))
            if let o = output { out.append("output: \(o == "-" ? "stdout" : o)") }
            if let s = segments {
                out.append("segments: \(s)")
                out.append("segment duration: \(formatSeconds(segmentDuration)) s")
                out.append("segment max bytes: \(segmentMaxBytes.map(String.init) ?? "none")")
                out.append("segment name: \(namer.pattern) (e.g. \(namer.name(time: Int(Date().timeIntervalSince1970), sequence: 1)))")
                out.append("keep: \(keep.map(String.init) ?? "all")")
                out.append("on segment: \(hook?.joined(separator: " ") ?? "none")")
                out.append("fsync: \(fsync ? "on" : "off")")
            }
            if let f = forward { out.append("forward: \(f)") }
            if input.isNetwork || forward != nil {
                out.append("reconnect: 100ms doubling to 5s with jitter, give up " + (reconnectTimeout.map { "after \(formatSeconds($0)) s" } ?? "never"))
            }
            out.append("metrics: \(metrics?.description ?? "off")")
            out.append("events: \(events ?? "off")")
            return out
        }
    }

    static func endpoint(_ text: String, option: String) throws -> Endpoint {
        do {
            return try Endpoint(parsing: text)
        } catch {
            throw CommandError.usage("consume: --\(option): \(error)")
        }
    }

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        let config = try Config(options)
        if config.dryRun {
            var out = OutputBuffer()
            for line in config.lines { out.line(line) }
            out.flush()
            return .ok
        }
        return try Session(config: config, options: options).run()
    }
}

/// Formats seconds for humans and JSON: `5.000`.
func formatSeconds(_ value: Double) -> String { String(format: "%.3f", value) }

/// One run of `nalcast consume`: the loop, the input, the sinks, and how they stop.
final class Session {
    let config: ConsumeCommand.Config
    let metrics = ConsumerMetrics()
    let log: Log
    let events: EventLog?
    let options: ParsedOptions

    init(config: ConsumeCommand.Config, options: ParsedOptions) throws {
        self.config = config
        self.options = options
        self.log = Log(quiet: config.quiet)
        if let path = config.events {
            events = try EventLog(path: path)
        } else {
            events = nil
        }
    }

    /// How the run ended, set from whichever thread saw it first.
    enum Outcome: Sendable { case inputEnded, inputFailed(String), unreachable(String), stopped, sinksClosed }

    func run() throws -> ExitCode {
        let config = self.config
        let log = self.log
        let events = self.events
        let metrics = self.metrics
        let options = self.options
        // Only the loop thread takes SIGINT/SIGTERM: block them before any thread starts.
        EventLoop.setSignals([SIGINT, SIGTERM], blocked: true)
        let loop = EventLoop()
        let outcome = Mutex<Outcome?>(nil)
        let failedSinks = Mutex<[String]>([])
        let setOutcome: @Sendable (Outcome) -> Void = { o in
            let first = outcome.withLock { current in
                if current == nil { current = o; return true }
                return false
            }
            if first { loop.stop() }
        }

        // Open the input first: a missing file is exit 66 before anything is created.
        var fileReader: FileReader?
        if case .file(let path) = config.input {
            do { fileReader = try FileReader(path: path) } catch { throw CommandError.noInput(error.message) }
        }

        // Sinks.
        let policy: SinkQueue.Policy = config.input.isNetwork ? .skipToEntry : .wait
        // A file reader waits for its sinks: a small queue decouples them enough, and keeps
        // memory flat whatever the length of the input.
        let queueBytes = config.input.isNetwork ? config.sinkQueue : min(config.sinkQueue, 512 << 10)
        var runners: [SinkRunner] = []
        let sinkCount = (config.output != nil ? 1 : 0) + (config.segments != nil ? 1 : 0) + (config.forward != nil ? 1 : 0)
        let closedSinks = Atomic<Int>(0)
        let onRunnerEvent: @Sendable (SinkRunner.Event) -> Void = { event in
            switch event {
            case .startedSkipping(let sink):
                log.line("\(sink): behind, skipping to the next IDR")
                events?.emit("skipped", [("sink", sink)])
            case .closed(let sink, let error):
                if let error {
                    log.line(error.peerClosed ? "\(sink): the reader went away (\(error.message)); closed" : "\(error)", force: !error.peerClosed)
                    if !error.peerClosed { failedSinks.withLock { $0.append(error.description) } }
                }
                events?.emit("sink-closed", [("sink", sink), ("reason", error?.message ?? "finished")])
                if closedSinks.add(1, ordering: .relaxed).newValue == sinkCount { setOutcome(.sinksClosed) }
            }
        }
        func queue() -> SinkQueue { SinkQueue(policy: policy, highWater: queueBytes) }
        if let output = config.output {
            let sink: StdoutSink
            if output == "-" {
                sink = StdoutSink()
            } else {
                do { sink = try StdoutSink(path: output) } catch { throw CommandError.io(error.message) }
            }
            runners.append(SinkRunner(sink: sink, queue: queue(), counters: SinkCounters(registry: metrics.registry, sink: sink.name), onEvent: onRunnerEvent))
        }
        if let directory = config.segments {
            var recovered: [SegmentRecovery.Outcome] = []
            let segmentConfig = SegmentSink.Config(
                directory: directory, namer: config.namer,
                planner: SegmentPlanner.Config(segmentDuration: config.segmentDuration, maxBytes: config.segmentMaxBytes),
                keep: config.keep, hook: config.hook, sync: config.fsync)
            let sink: SegmentSink
            do {
                sink = try SegmentSink(config: segmentConfig, recovered: &recovered) { event in
                    switch event {
                    case .opened(let path):
                        metrics.segmentsOpened.increment()
                        events?.emit("segment-opened", [("path", path)])
                    case .closed(let info):
                        metrics.segmentsClosed.increment()
                        events?.emit("segment-closed", [
                            ("path", info.path), ("duration", info.duration), ("frames", info.frames),
                            ("bytes", info.bytes), ("reason", info.reason),
                        ])
                    case .hookFailed(let command, let message):
                        log.line("--on-segment \(command): \(message)", force: true)
                    }
                }
            } catch {
                throw CommandError.io(error.message)
            }
            for r in recovered {
                if let path = r.path {
                    log.line("recovered \(path) from an unfinished segment: \(r.keptBytes) bytes up to its last complete access unit\(r.droppedBytes > 0 ? ", \(r.droppedBytes) bytes of a partial one cut" : "")", force: true)
                    events?.emit("segment-recovered", [("path", path), ("bytes", r.keptBytes), ("droppedBytes", r.droppedBytes)])
                } else {
                    log.line("removed \(r.partPath): no complete access unit in it", force: true)
                }
            }
            runners.append(SinkRunner(sink: sink, queue: queue(), counters: SinkCounters(registry: metrics.registry, sink: sink.name), onEvent: onRunnerEvent))
        }
        if let remote = config.forward {
            let sink = ForwardSink(endpoint: remote) { event in
                switch event {
                case .connected(let e):
                    log.line("forwarding to \(e)")
                    events?.emit("forward-connected", [("endpoint", e.description)])
                case .disconnected(let e, let reason):
                    log.line("forward to \(e) is down (\(reason)); retrying, dropping until it is back")
                    events?.emit("forward-disconnected", [("endpoint", e.description), ("reason", reason)])
                }
            }
            runners.append(SinkRunner(sink: sink, queue: queue(), counters: SinkCounters(registry: metrics.registry, sink: sink.name), onEvent: onRunnerEvent))
        }
        let fanout = SinkFanout(runners: runners)
        let maxNAL = config.maxNAL
        func makeIntake(_ clock: MediaClock.Source) -> StreamIntake {
            StreamIntake(fanout: fanout, metrics: metrics, clock: clock, maxNALUnitSize: maxNAL)
        }

        // Signals: stop reading, let the sinks finish.
        let signalWatchers = [SIGINT, SIGTERM].map { sig in
            SignalWatcher(loop: loop, signal: sig) {
                log.line("stopping (\(sig == SIGINT ? "SIGINT" : "SIGTERM"))")
                setOutcome(.stopped)
            }
        }
        for w in signalWatchers { w.start() }

        // Input.
        var client: StreamClient?
        switch config.input {
        case .network(let endpoint):
            let backoff = ReconnectBackoff.Config(giveUpAfter: config.reconnectTimeout)
            do {
                client = try StreamClient(loop: loop, endpoint: endpoint, intake: makeIntake(.arrival), backoff: backoff) { event in
                    switch event {
                    case .connected(let e, let attempts):
                        log.line("connected to \(e)\(attempts > 1 ? " after \(attempts) attempts" : "")")
                        events?.emit("connected", [("endpoint", e.description), ("attempts", attempts)])
                    case .unreachable(let e, let reason):
                        log.line("cannot reach \(e) (\(reason)); retrying")
                        events?.emit("reconnecting", [("endpoint", e.description), ("reason", reason)])
                    case .disconnected(let e, let reason):
                        log.line("disconnected from \(e) (\(reason)); reconnecting")
                        events?.emit("disconnected", [("endpoint", e.description), ("reason", reason)])
                        events?.emit("reconnecting", [("endpoint", e.description)])
                    case .gaveUp(let e, let everConnected):
                        if everConnected {
                            log.line("\(e): stream ended; not reconnecting (--reconnect-timeout)")
                            setOutcome(.inputEnded)
                        } else {
                            setOutcome(.unreachable("cannot connect to \(e)"))
                        }
                    }
                }
            } catch {
                throw CommandError.unavailable("consume: --from \(endpoint): \(error)")
            }
            client?.start()
        case .file:
            break
        }

        // Metrics and the status line.
        var metricsServer: MetricsServer?
        if let address = config.metrics {
            do {
                metricsServer = try MetricsServer(loop: loop, endpoint: address) { metrics.registry.render() }
            } catch {
                throw CommandError.unavailable("consume: --metrics \(address): \(error)")
            }
            metricsServer?.start()
        }
        let statusLine = StatusLine(options: options)
        var status: LoopTimer?
        if statusLine.enabled {
            var counts = StatusCounts()
            let timer = LoopTimer(loop: loop) { statusLine.show(counts.line(metrics: metrics, runners: runners)) }
            timer.start(after: 1, repeating: 1)
            status = timer
        }

        if let reader = fileReader {
            reader.start(intake: makeIntake(.counted)) { error in
                setOutcome(error.map { .inputFailed($0) } ?? .inputEnded)
            }
        }
        if config.input.isNetwork { log.line("reading \(config.input)") }

        loop.run()

        // Stop reading, then let the sinks write what they have and close.
        let ended = outcome.withLock { $0 } ?? .stopped
        client?.stop()
        client = nil
        status?.stop()
        metricsServer?.close()
        fileReader?.stop()
        let timeout: Double
        if case .inputEnded = ended, !config.input.isNetwork { timeout = 600 } else { timeout = config.stopTimeout }
        let late = fanout.finish(timeout: timeout)
        fileReader?.join()
        if !late.isEmpty { log.line("gave up waiting for: \(late.joined(separator: ", "))", force: true) }
        if status != nil { statusLine.end() }
        events?.emit("stopped", [("accessUnits", Int(metrics.accessUnits.value)), ("bytes", Int(metrics.bytes.value))])
        events?.flush()
        _ = signalWatchers

        switch ended {
        case .unreachable(let message): throw CommandError.unavailable("consume: \(message)")
        case .inputFailed(let message): throw CommandError.io("consume: \(message)")
        default: break
        }
        if let failure = failedSinks.withLock({ $0.first }) { throw CommandError.io("consume: \(failure)") }
        return .ok
    }
}

/// Log lines on stderr (`nalcast: ...`), silenced by `--quiet` except errors.
struct Log: Sendable {
    let quiet: Bool
    func line(_ text: String, force: Bool = false) {
        if quiet && !force { return }
        printError(text)
    }
}

/// The numbers of the status line: `frame=900 fps=30.0 kbps=4012 segments=3 skipped=0 dropped=0 reconnects=0`.
struct StatusCounts {
    var lastUnits: UInt64 = 0
    var lastBytes: UInt64 = 0
    var lastTime = Date()

    mutating func line(metrics: ConsumerMetrics, runners: [SinkRunner]) -> String {
        let now = Date()
        let dt = max(0.001, now.timeIntervalSince(lastTime))
        let units = metrics.accessUnits.value
        let bytes = metrics.bytes.value
        let fps = Double(units - lastUnits) / dt
        let kbps = Double(bytes - lastBytes) * 8 / 1000 / dt
        lastUnits = units
        lastBytes = bytes
        lastTime = now
        let skipped = runners.reduce(UInt64(0)) { $0 + $1.counters.skippedUnits.value }
        let dropped = runners.reduce(UInt64(0)) { $0 + $1.counters.droppedUnits.value }
        var text = String(format: "frame=%llu fps=%.1f kbps=%.0f", units, fps, kbps)
        text += " segments=\(metrics.segmentsClosed.value) skipped=\(skipped) dropped=\(dropped) reconnects=\(metrics.reconnects.value)"
        if metrics.latency.count > 0 { text += String(format: " latency=%.1fms", metrics.latency.sum / Double(metrics.latency.count) * 1000) }
        return text
    }
}
