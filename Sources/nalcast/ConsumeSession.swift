import Clocks
import CommandOptions
import Consumer
import H264
import Muxing
import IO
import Media
import Output
import Delivery
import Serving
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Formats seconds for humans and JSON: `5.000`.
func formatSeconds(_ value: Double) -> String { fixed(value, 3) }

/// One run of `nalcast consume`, in the order the data flows: open the input, make the
/// outputs, wire the input and the serving side (signals, `--metrics`, the status line) to
/// the loop, run the loop, drain the outputs, report how it ended.
final class ConsumeSession {
    let config: ConsumeCommand.Config
    let metrics = ConsumerMetrics()
    let log: Log
    let events: EventLog?
    let options: ParsedOptions
    /// `--listen`, `--web`: the relay's serving side, made on the loop before the input
    /// (`makeRelay`, in ConsumeRelay.swift).
    var relay: ConsumeRelay?
    /// The tokens and TLS of `--web` and `--metrics`.
    var security: HTTPSecurity?
    /// The run's end, once `run` made it: what a paced input asks before it sleeps on.
    private(set) var ending: Ending?
    /// The reader of a `tcp://` input found to be MPEG-TS (`transportStreamHandOver`); set
    /// on the loop thread, which is the thread of `run`.
    var handedOverDemux: DemuxReader?
    /// `--hls DIR`: what its writer shows `--web` (set by `makeOutputs`).
    private var hlsLive: HLSLive?
    private var hlsRunner: SinkRunner?
    /// `--segments DIR` with `--web`: the finished segments by time, for /recordings.
    private var recordings: RecordingIndex?
    /// `--replay TIME`: what saves it (set by `makeOutputs`).
    private var replay: ReplayTrigger?

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
    enum Outcome: Sendable { case inputEnded, inputFailed(String), notAnnexB(String), unreachable(String), refused(String), missing(String), stopped, sinksClosed }

    /// The end of the run, told from any thread: the first outcome wins and stops the loop;
    /// failed sinks are collected for the exit code.
    final class Ending: Sendable {
        let loop: EventLoop
        let outcome = Mutex<Outcome?>(nil)
        let failedSinks = Mutex<[String]>([])
        /// The `--forward` targets (by sink name) that have connected at least once: a target
        /// that never answered fails the run.
        let forwardsConnected = Mutex<Set<String>>([])

        /// Set when serving: the end goes to the relay, whose server stops the loop once its
        /// readers have their end of stream.
        let endsThrough = Mutex<(@Sendable () -> Void)?>(nil)

        init(loop: EventLoop) { self.loop = loop }

        func end(_ o: Outcome) {
            let first = outcome.withLock { current in
                if current == nil { current = o; return true }
                return false
            }
            guard first else { return }
            if let relayEnd = endsThrough.withLock({ $0 }) { relayEnd() } else { loop.stop() }
        }
    }

    /// What runs on the loop besides the input: `--metrics` and the status line.
    struct LoopSide {
        var metricsServer: HTTPServer?
        var statusTimer: LoopTimer?
        let statusLine: StatusLine

        func stop() {
            statusTimer?.stop()
            metricsServer?.close()
        }
    }

    func run() throws -> ExitCode {
        // Only the loop thread takes SIGINT/SIGTERM: block them before any thread starts.
        EventLoop.setSignals(Set([SIGINT, SIGTERM] + (config.serving.access.reloadsOnHangUp ? [SIGHUP] : []) + (config.replay == nil ? [] : [SIGUSR2])),
                             blocked: true)
        let loop = EventLoop()
        let ending = Ending(loop: loop)
        self.ending = ending
        let fileReader = try openInput()
        let checkedFile = try checkDemuxedFile()
        let fanout = try makeOutputs(ending)
        let signalWatchers = watchSignals(loop, ending)
        // The watchers must outlive the loop and the drain: a released SignalWatcher stops its
        // watcher, and the signal's default action (ending the process) would be back.
        defer { withExtendedLifetime(signalWatchers) {} }
        let security = try HTTPSecurity(config.serving.access, registry: metrics.registry, prefix: "consume: ")
        self.security = security
        let reloadWatcher = security.watchReload(loop, log: log)
        defer { withExtendedLifetime(reloadWatcher) {} }
        relay = try makeRelay(loop, ending, security)
        relay?.side.serveHLS(hlsLive, runner: hlsRunner, loop: loop)
        relay?.side.serveRecordings(recordings, loop: loop)
        var client = try connectInput(loop, fanout, ending)
        let whip = try startWHIP(loop, fanout, ending)
        let serving = try startServing(loop, fanout)
        replay?.addRoute(to: serving.metricsServer)
        let replaySignal = replay?.watchSignal(loop)
        defer { withExtendedLifetime(replaySignal) {} }
        startReading(fileReader, fanout, ending)
        let demuxReader: (any InputReader)? = startDemux(fanout, ending, opened: checkedFile) ?? startRTSP(fanout, ending)

        loop.run()

        // Stop reading, then let the sinks write what they have and close.
        let ended = ending.outcome.withLock { $0 } ?? .stopped
        client?.stop()
        client = nil
        whip?.stop()
        serving.stop()
        relay?.close()
        drain(fileReader, demuxReader ?? handedOverDemux, fanout, after: ended)
        if serving.statusTimer != nil { serving.statusLine.end() }
        return try report(ended, ending, fanout)
    }

    /// A file or standard input is opened first: a missing file is exit 66 before anything
    /// is created. A network input connects once the loop is there (`connectInput`).
    /// An MP4 or Y4M given as input is said what it is, before any output is created (65).
    private func openInput() throws -> FileReader? {
        guard case .file(let path) = config.input else { return nil }
        let reader: FileReader
        do { reader = try FileReader(path: path) } catch { throw CommandError.noInput(error.message) }
        if let format = reader.notAnnexB {
            throw CommandError(code: .dataError, message: "consume: " + InputSniffer.explain(format, name: path))
        }
        return reader
    }

    /// One runner per output (`-o`, `--segments`, `--forward`), fed together by the fan-out.
    /// Behind a live input a slow output skips to the next IDR; behind a file, reading waits.
    /// A file read as fast as it goes (not live) writes its local outputs on the reader's
    /// thread (`SinkRunner.Placement.onCaller`): the reader would wait for them anyway, and a
    /// hand-off per access unit cost more than the writing. A `--forward` keeps a thread: a
    /// remote that stalls must not hold up the end of the run past `--stop-timeout`.
    private func makeOutputs(_ ending: Ending) throws -> SinkFanout {
        let policy: SinkQueue.Policy = config.input.isNetwork ? .skipToEntry : .wait
        let registry = metrics.registry
        let queueBytes = config.sinkQueue
        let onRunnerEvent = runnerEvents(ending, sinkCount: (config.output != nil ? 1 : 0) + (config.segments != nil ? 1 : 0) + (config.hls != nil ? 1 : 0) + (config.replay != nil ? 1 : 0)
                                                     + config.forwards.count)
        let local: SinkRunner.Placement = isLive ? .ownThread : .onCaller
        func runner(_ sink: sending AccessUnitSink, name: String, placement: SinkRunner.Placement = .ownThread) -> SinkRunner {
            SinkRunner(sink: sink, queue: SinkQueue(policy: policy, highWater: queueBytes), counters: SinkCounters(registry: registry, sink: name),
                       placement: placement, onEvent: onRunnerEvent)
        }
        var runners: [SinkRunner] = []
        if let output = config.output {
            let sink: any AccessUnitSink
            do {
                sink = try OutputChoice.sink(target: output, format: config.outputFormat, fallbackFrameRate: config.frameRate.framesPerSecond,
                                             countedClock: config.input.timeIsCounted, live: isLive)
            } catch {
                throw CommandError.io(error.message)
            }
            let name = sink.name
            runners.append(runner(sink, name: name, placement: local))
        }
        if let directory = config.segments {
            let sink = try makeSegmentSink(directory)
            runners.append(runner(sink, name: sink.name, placement: local))
        }
        if let hls = config.hls {
            let (sink, live) = try hls.makeSink(countedClock: config.input.timeIsCounted, log: log, events: events)
            hlsLive = live
            hlsRunner = runner(sink, name: sink.name, placement: local)
            runners.append(hlsRunner!)
        }
        if let choice = config.replay {
            let trigger = choice.makeTrigger()
            replay = trigger
            runners.append(runner(choice.makeSink(trigger, log: log, events: events), name: "replay", placement: local))
        }
        for (index, target) in config.forwards.enumerated() {
            let sink = makeForwardSink(target, name: ForwardChoice.sinkName(index, of: config.forwards.count), ending)
            runners.append(runner(sink, name: sink.name))
        }
        return SinkFanout(runners: runners)
    }

    /// What the runners report: a sink behind, a sink closed (the run ends when all are).
    private func runnerEvents(_ ending: Ending, sinkCount: Int) -> @Sendable (SinkRunner.Event) -> Void {
        let log = self.log
        let events = self.events
        let closedSinks = Atomic<Int>(0)
        return { event in
            switch event {
            case .startedSkipping(let sink):
                log.line("\(sink): behind, skipping to the next IDR")
                events?.emit("skipped", [("sink", sink)])
            case .audioNotCarried(let sink):
                log.line("\(sink): raw H.264 carries video only; the stream's audio is not written there (counted in nalcast_sink_dropped_audio_packets_total)")
                events?.emit("audio-not-carried", [("sink", sink)])
            case .closed(let sink, let error):
                if let error {
                    log.line(error.peerClosed ? "\(sink): the reader went away (\(error.message)); closed" : "\(error)", force: !error.peerClosed)
                    if !error.peerClosed { ending.failedSinks.withLock { $0.append(error.description) } }
                }
                events?.emit("sink-closed", [("sink", sink), ("reason", error?.message ?? "finished")])
                if closedSinks.add(1, ordering: .relaxed).newValue == sinkCount { ending.end(.sinksClosed) }
            }
        }
    }

    /// `--segments DIR`: recovers what a previous run left unfinished, and tells about it.
    private func makeSegmentSink(_ directory: String) throws -> sending SegmentSink {
        let log = self.log
        let events = self.events
        let metrics = self.metrics
        var recovered: [SegmentRecovery.Outcome] = []
        let recordings = config.serving.web == nil ? nil : RecordingIndex(directory: directory)
        self.recordings = recordings
        let segmentConfig = SegmentSink.Config(
            directory: directory, namer: config.namer,
            planner: SegmentPlanner.Config(segmentDuration: .seconds(config.segmentDuration), maxBytes: config.segmentMaxBytes),
            keep: config.keep, hook: config.hook, sync: config.fsync,
            format: ContainerSegmentWriter.segmentFormat(ContainerFormat.forPath(config.namer.pattern), fallbackFrameRate: config.frameRate.framesPerSecond,
                                                         countedClock: config.input.timeIsCounted))
        let sink: SegmentSink
        do {
            sink = try SegmentSink(config: segmentConfig, recovered: &recovered) { event in
                switch event {
                case .opened(let path):
                    metrics.segmentsOpened.increment()
                    events?.emit("segment-opened", [("path", path)])
                case .closed(let info):
                    recordings?.add(path: info.path, startNs: info.startTimeNs, durationNs: UInt64(max(0, info.duration.ticks)) * 100_000 / 9)
                    metrics.segmentsClosed.increment()
                    events?.emit("segment-closed", [
                        ("path", info.path), ("duration", info.duration.seconds), ("frames", info.frames),
                        ("bytes", info.bytes), ("reason", info.reason),
                    ])
                case .hookFailed(let command, let message):
                    log.line("--on-segment \(command): \(message)", force: true)
                case .removed(let path):
                    recordings?.remove(path: path)
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
        return sink
    }

    /// Access units come as they happen (a socket, a live URL, a pipe, or `--realtime`): a
    /// raw Annex-B reader at the other end of a pipe or forward waits for each, so those
    /// outputs delimit what they write (`AccessUnitDelimiting`).
    private var isLive: Bool { config.input.isNetwork || config.realtime || config.input.isPipe }

    /// One `--forward` target.
    private func makeForwardSink(_ target: ForwardChoice, name: String, _ ending: Ending) -> sending ForwardSink {
        target.makeSink(name: name, fallbackFrameRate: config.frameRate.framesPerSecond, countedClock: config.input.timeIsCounted,
                        live: isLive,
                        onEvent: ForwardChoice.reporter(name: name, log: log, events: events, onConnect: { ending.forwardsConnected.withLock { _ = $0.insert(name) } },
                                                        onRefused: { ending.end(.refused($0)) }))
    }

    /// SIGINT, SIGTERM: stop reading, let the sinks finish.
    private func watchSignals(_ loop: EventLoop, _ ending: Ending) -> [SignalWatcher] {
        let log = self.log
        let watchers = [SIGINT, SIGTERM].map { sig in
            SignalWatcher(loop: loop, signal: sig) {
                log.line("stopping (\(sig == SIGINT ? "SIGINT" : "SIGTERM"))")
                ending.end(.stopped)
            }
        }
        for w in watchers { w.start() }
        return watchers
    }

    /// The intake for one input thread, with what observes its access units in order: the
    /// pacing of a file (`--realtime`, first, so that everything after it waits), the IDR
    /// spacing check of `--segments`, the relay's hand-off.
    func makeIntake(_ fanout: SinkFanout, _ clock: MediaClock.Source) -> sending StreamIntake {
        var pacing: ((TimedUnit) -> Void)?
        if clock == .counted && config.realtime, let ending {
            pacing = RealtimePacing { ending.outcome.withLock { $0 != nil } }.take
        }
        // The relay's end of this intake (its pictures and its sound): made from the
        // (Sendable) hand-off and audio path alone, so that it can go to the intake's thread.
        var feed: RelayFeed?
        if let relay { feed = RelayFeed(handOff: relay.handOff, audio: relay.audio, keepsStreamEnd: clock == .counted || config.reconnectTimeout == 0) }
        // A raw Annex-B input is H.264, the one codec there is (a demuxed one names its own).
        return StreamIntake(fanout: fanout, metrics: metrics, clock: clock, fallbackFrameRate: config.frameRate.framesPerSecond,
                            codec: H264Codec(), maxNALUnitSize: config.maxNAL,
                            observer: ConsumeSession.all(pacing, config.idrSpacingObserver(log: log), feed.map { $0.take }),
                            audioObserver: feed.map { $0.takeAudio }, handsOnEachUnit: pacing != nil)
    }

    /// `--from tcp://…|unix:…`: the client on the loop, reconnecting until
    /// `--reconnect-timeout` gives up.
    private func connectInput(_ loop: EventLoop, _ fanout: SinkFanout, _ ending: Ending) throws -> StreamClient? {
        guard case .network(let endpoint) = config.input else { return nil }
        let backoff = ReconnectBackoff.Config(giveUpAfter: config.reconnectTimeout)
        let intake = makeIntake(fanout, .arrival)
        let reporter = inputReporter(ending)
        // Set once the client exists: the intake calls it from the client's own read.
        var stopClient: (() -> Void)?
        intake.onTransportStream = transportStreamHandOver(endpoint, fanout, ending) { stopClient?() }
        let client: StreamClient
        do {
            client = try StreamClient(loop: loop, endpoint: endpoint, intake: intake, backoff: backoff, stallTimeout: config.stallTimeout) { reporter.report($0) }
        } catch {
            throw CommandError.unavailable("consume: --from \(endpoint): \(error)")
        }
        stopClient = { [unowned client] in client.stop() }
        client.start()
        return client
    }

    /// What the input reports, whichever kind it is, as log lines and events; its giving up
    /// as the run's end.
    func inputReporter(_ ending: Ending) -> InputReporter {
        InputReporter(log: log, events: events, sourceLost: relay?.sourceLost, ending: ending, reconnectTimeout: config.reconnectTimeout)
    }

    /// `--metrics` and the once-a-second status line.
    private func startServing(_ loop: EventLoop, _ fanout: SinkFanout) throws -> LoopSide {
        let metrics = self.metrics
        var serving = LoopSide(statusLine: StatusLine(options: options))
        if let address = config.metrics {
            do {
                serving.metricsServer = try HTTPServer(loop: loop, endpoint: address) { metrics.registry.render() }
            } catch {
                throw CommandError.unavailable("consume: --metrics \(address): \(error)")
            }
            if let server = serving.metricsServer { security?.protect(server) }
            serving.metricsServer?.start()
        }
        for line in security?.startLines(page: relay?.side.webServer, metrics: serving.metricsServer) ?? [] { log.line(line, force: true) }
        if serving.statusLine.enabled {
            let statusLine = serving.statusLine
            let runners = fanout.runners
            var counts = StatusCounts()
            let relay = self.relay
            let timer = LoopTimer(loop: loop) { statusLine.show(counts.line(metrics: metrics, runners: runners) + (relay?.statusText ?? "")) }
            timer.start(after: 1, repeating: 1)
            serving.statusTimer = timer
        }
        return serving
    }

    /// A file starts being read on its own thread; its end (or error) ends the run.
    private func startReading(_ fileReader: FileReader?, _ fanout: SinkFanout, _ ending: Ending) {
        if let fileReader {
            fileReader.start(intake: makeIntake(fanout, .counted)) { end in
                switch end {
                case .ended: ending.end(.inputEnded)
                case .failed(let message): ending.end(.inputFailed(message))
                case .notAnnexB(let message): ending.end(.notAnnexB(message))
                }
            }
        }
        if config.input.isNetwork { log.line("reading \(config.input)") }
    }

    /// Stops the reader and gives the sinks time to write what they hold: as long as they
    /// need (600 s) after a file was read to its end, else `--stop-timeout`.
    private func drain(_ fileReader: FileReader?, _ demuxReader: (any InputReader)?, _ fanout: SinkFanout, after ended: Outcome) {
        fileReader?.stop()
        demuxReader?.stop()
        let timeout: Double
        if case .inputEnded = ended, !config.input.isNetwork { timeout = 600 } else { timeout = config.stopTimeout }
        let late = fanout.finish(timeout: timeout)
        fileReader?.join()
        demuxReader?.join()
        if !late.isEmpty { log.line("gave up waiting for: \(late.joined(separator: ", "))", force: true) }
    }

    /// The last event, what the forward target missed, and the exit code.
    private func report(_ ended: Outcome, _ ending: Ending, _ fanout: SinkFanout) throws -> ExitCode {
        events?.emit("stopped", [("accessUnits", Int(metrics.accessUnits.value)), ("bytes", Int(metrics.bytes.value))])
        events?.flush()

        // What each forward target missed, said once at the end; a target that never
        // answered fails the run (69).
        var forwardFailed = false
        let connected = ending.forwardsConnected.withLock { $0 }
        for (index, target) in config.forwards.enumerated() {
            let name = ForwardChoice.sinkName(index, of: config.forwards.count)
            guard let runner = fanout.runners.first(where: { $0.name == name }) else { continue }
            let c = runner.counters
            let lost = c.droppedUnits.value + c.skippedUnits.value
            if lost > 0 {
                let everConnected = connected.contains(name)
                log.line(ConsumeReport.forwardLoss(target.description, lost: lost, of: lost + c.writtenUnits.value, everConnected: everConnected), force: true)
                if !everConnected { forwardFailed = true }
            }
            let lostAudio = c.droppedAudioPackets.value
            if lostAudio > 0 { log.line(ConsumeReport.forwardAudioLoss(target.description, lost: lostAudio), force: true) }
        }

        let lostRTP = metrics.lostPackets.value
        if lostRTP > 0 { log.line("\(config.input): \(lostRTP) RTP packet\(lostRTP == 1 ? "" : "s") lost in transit (counted in nalcast_consumer_lost_packets_total)", force: true) }

        switch ended {
        case .unreachable(let message): throw CommandError.unavailable("consume: \(message)")
        case .inputFailed(let message): throw CommandError.io("consume: \(message)")
        case .notAnnexB(let message): throw CommandError(code: .dataError, message: "consume: \(message)")
        case .refused(let message): throw CommandError(code: .noPermission, message: "consume: \(message)")
        case .missing(let message): throw CommandError.noInput("consume: \(message)")
        default: break
        }
        // A failed sink was reported once, when it failed: exit 74 without saying it again.
        if !ending.failedSinks.withLock({ $0.isEmpty }) { return .ioError }
        if forwardFailed { return .unavailable }
        return .ok
    }
}


/// The numbers of the status line: `frame=900 fps=30.0 kbps=4012 segments=3 skipped=0 dropped=0 reconnects=0`.
struct StatusCounts {
    var lastUnits: UInt64 = 0
    var lastBytes: UInt64 = 0
    var lastTime = MonotonicClock.seconds

    mutating func line(metrics: ConsumerMetrics, runners: [SinkRunner]) -> String {
        let now = MonotonicClock.seconds
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
