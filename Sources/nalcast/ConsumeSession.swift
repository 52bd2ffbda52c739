import Consumer
import EventLoop
import H264
import Relay
import Serving
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Formats seconds for humans and JSON: `5.000`.
func formatSeconds(_ value: Double) -> String { fixed(value, 3) }

/// One run of `nalcast consume`: the loop, the input, the sinks, and how they stop.
final class ConsumeSession {
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
        let queueBytes = config.sinkQueue
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
                    case .gaveUp(let e, let everConnected, let reason):
                        if everConnected {
                            log.line("\(e): stream ended; not reconnecting (--reconnect-timeout)")
                            setOutcome(.inputEnded)
                        } else {
                            setOutcome(.unreachable("cannot connect to \(e) (\(reason))"))
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
        var metricsServer: HTTPServer?
        if let address = config.metrics {
            do {
                metricsServer = try HTTPServer(loop: loop, endpoint: address) { metrics.registry.render() }
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

        // The watchers must outlive the loop: a released SignalWatcher stops its watcher, and the
        // signal's default action (ending the process) would be back.
        withExtendedLifetime(signalWatchers) { loop.run() }

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
        // A failed sink was reported once, when it failed: exit 74 without saying it again.
        if !failedSinks.withLock({ $0.isEmpty }) { return .ioError }
        return .ok
    }
}


/// The numbers of the status line: `frame=900 fps=30.0 kbps=4012 segments=3 skipped=0 dropped=0 reconnects=0`.
struct StatusCounts {
    var lastUnits: UInt64 = 0
    var lastBytes: UInt64 = 0
    var lastTime = monotonicSeconds()

    mutating func line(metrics: ConsumerMetrics, runners: [SinkRunner]) -> String {
        let now = monotonicSeconds()
        let dt = max(0.001, now - lastTime)
        let units = metrics.accessUnits.value
        let bytes = metrics.bytes.value
        let fps = Double(units - lastUnits) / dt
        let kbps = Double(bytes - lastBytes) * 8 / 1000 / dt
        lastUnits = units
        lastBytes = bytes
        lastTime = now
        let skipped = runners.reduce(UInt64(0)) { $0 + $1.counters.skippedUnits.value }
        let dropped = runners.reduce(UInt64(0)) { $0 + $1.counters.droppedUnits.value }
        var text = "frame=\(units) fps=\(fixed(fps, 1)) kbps=\(fixed(kbps, 0))"
        text += " segments=\(metrics.segmentsClosed.value) skipped=\(skipped) dropped=\(dropped) reconnects=\(metrics.reconnects.value)"
        if metrics.latency.count > 0 { text += " latency=\(fixed(metrics.latency.sum / Double(metrics.latency.count) * 1000, 1))ms" }
        return text
    }
}
