import Capture
import CaptureSources
import CommandOptions
import IO
import Media
import Output
import Pipeline
import Delivery
import Metrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Serving

/// One run of `nalcast produce`, in the order the data flows: open the source, make the
/// output (`-o`), wire the serving side to the loop (the stream server, `--metrics`,
/// signals, the status line), start the capture thread and run the loop, drain, report.
///
/// Order of life, as for every threaded part of nalcast: create everything, start the
/// threads, run the loop; on the way out stop capture, let readers drain, join, close.
final class ProduceSession {
    let plan: ProduceCommand.Plan
    let status: StatusLine
    let log: Log

    init(plan: ProduceCommand.Plan, status: StatusLine) {
        self.plan = plan
        self.status = status
        self.log = Log(quiet: plan.quiet)
    }

    /// How the capture thread ended, handed to the main thread after the join, and whether
    /// `-o` failed (from its writer thread).
    private final class Outcome: Sendable {
        let error = Mutex<(any Error)?>(nil)
        let outputFailed = Atomic<Bool>(false)
    }

    /// What the loop runs besides the capture thread's hand-off. Everything here must
    /// outlive the loop: a released SignalWatcher stops its watcher, and the signal's
    /// default action (ending the process) would be back.
    private struct LoopSide {
        /// `--listen` and `--web` (shared with `consume`'s relay).
        let serving: ServingSide
        var server: StreamServer? { serving.server }
        var webServer: HTTPServer? { serving.webServer }
        let metricsServer: HTTPServer?
        /// With `--web`: the live bitrate following the WebRTC viewers' estimates.
        let adaptive: AdaptiveBitrate?
        /// Without a server, the end of capture stops the loop through this.
        let captureEnded: Mailbox<Int>
        let signals: [SignalWatcher]
        let statusTimer: LoopTimer
    }

    func run() throws -> ExitCode {
        let events = try plan.events.map { try EventLog(path: $0) }
        let source = try plan.makeSource(log: libraryLog)
        let registry = MetricsRegistry()
        let outcome = Outcome()
        // Opened while SIGINT still ends the process: opening a FIFO waits for its reader.
        let sink = try openOutput()
        let audio = try plan.audio.map { try ProduceAudio(plan: $0, log: log, events: events) }

        // Only the loop thread takes these signals: block them before any thread starts
        // (the -o writer's is the first).
        EventLoop.setSignals(Set([SIGINT, SIGTERM, SIGUSR1] + (plan.serving.access.reloadsOnHangUp ? [SIGHUP] : [])
                                 + (plan.replay == nil ? [] : [SIGUSR2])), blocked: true)
        var runners: [SinkRunner] = []
        if let sink { runners.append(makeOutput(sink, live: source.isLive, registry: registry, outcome)) }
        let control = CaptureControl()
        runners += makeForwards(live: source.isLive, registry: registry, events, outcome, control)
        var hlsLive: HLSLive?, hlsRunner: SinkRunner?
        if let hls = plan.hls {
            let (sink, live) = try hls.makeSink(countedClock: false, log: log, events: events)
            hlsLive = live
            hlsRunner = makeOutput(sink, live: source.isLive, registry: registry, outcome)
            runners.append(hlsRunner!)
        }
        let replay = plan.replay?.makeTrigger()
        if let choice = plan.replay, let replay {
            runners.append(makeOutput(choice.makeSink(replay, log: log, events: events), live: source.isLive, registry: registry, outcome))
        }
        let output = runners.isEmpty ? nil : SinkFanout(runners: runners)
        if let audio, let output {
            output.deliver(audioFormat: audio.capture.format)
            audio.delivery.add { output.deliver(audio: $0) }
        }
        let loop = EventLoop()
        let ceiling = plan.capture.encoder.bitrate ?? source.width * source.height * 3
        let serving = try wireServing(loop, control, registry, events, audio, ceiling: ceiling)
        serving.serving.serveHLS(hlsLive, runner: hlsRunner, loop: loop)
        replay?.addRoute(to: serving.metricsServer)
        let replaySignal = replay?.watchSignal(loop)
        announce(Self.describe(source, plan: plan), serving, hls: hlsLive)

        audio?.start()
        let captureThread = startCapture(source, control, serving, output, outcome, events, audio)
        withExtendedLifetime((serving, replaySignal)) { loop.run() }

        captureThread.join()
        audio?.capture.stop()
        if let audio { log.line(audio.summary) }
        drain(serving, output)
        return try report(control, outcome, events)
    }

    /// Log lines from the library layers (capture, encoder).
    private var libraryLog: @Sendable (String) -> Void {
        let log = self.log
        return { log.line($0) }
    }

    /// `-o FILE|-`, created or truncated: Annex-B, or a container (`--format`, the extension).
    private func openOutput() throws -> sending (any AccessUnitSink)? {
        guard let output = plan.output else { return nil }
        do {
            return try OutputChoice.sink(target: output, format: plan.outputFormat, fallbackFrameRate: nil, live: plan.realtime)
        } catch {
            throw CommandError.io("-o \(error)")
        }
    }

    /// The `-o` sink's own thread. Behind a live source a slow reader of the pipe skips to the
    /// next IDR; behind a file, capture waits for it. A reader that closes the pipe is a line;
    /// a failed write (disk full) is an error line, said once, and exit 74.
    private func makeOutput(_ sink: sending any AccessUnitSink, live: Bool, registry: MetricsRegistry, _ outcome: Outcome) -> SinkRunner {
        let log = self.log
        return SinkRunner(
            sink: sink, queue: SinkQueue(policy: live ? .skipToEntry : .wait, highWater: 32 << 20),
            counters: SinkCounters(registry: registry, sink: sink.name)
        ) { event in
            if case .audioNotCarried(let name) = event {
                log.line("\(name): raw H.264 carries video only; the audio is not written there (use -o FILE.mp4, .ts or .mkv for both)")
            }
            guard case .closed(_, let error?) = event else { return }
            if error.peerClosed {
                log.line("\(error.sink): the reader closed the pipe")
            } else {
                log.line(error.description, force: true)
                outcome.outputFailed.store(true, ordering: .relaxed)
            }
        }
    }

    /// `--forward` targets, each on its own thread: behind a live source a target that is
    /// slow or down skips to the next IDR and never holds capture up.
    /// A passphrase an SRT target refuses stops the run: one line, exit 77.
    private func makeForwards(live: Bool, registry: MetricsRegistry, _ events: EventLog?, _ outcome: Outcome, _ control: CaptureControl) -> [SinkRunner] {
        let log = self.log
        let refused: @Sendable (String) -> Void = { message in
            outcome.error.withLock { if $0 == nil { $0 = CommandError(code: .noPermission, message: message) } }
            control.stop()
        }
        return plan.forwards.enumerated().map { index, target in
            let name = ForwardChoice.sinkName(index, of: plan.forwards.count)
            let sink = target.makeSink(name: name, fallbackFrameRate: nil, countedClock: false, live: live, keyframe: { control.requestIDR() }, onEvent: ForwardChoice.reporter(name: name, log: log, events: events, onRefused: refused))
            let counters = SinkCounters(registry: registry, sink: name), shown = target.description
            return SinkRunner(sink: sink, queue: SinkQueue(policy: live ? .skipToEntry : .wait, highWater: 8 << 20), counters: counters) { event in
                guard case .closed(_, let error) = event else { return }
                if let error { log.line(error.description, force: true) }
                let lostAudio = counters.droppedAudioPackets.value
                if lostAudio > 0 { log.line(ConsumeReport.forwardAudioLoss(shown, lost: lostAudio), force: true) }
            }
        }
    }

    /// The stream server (`--listen`), `--metrics`, the signals and the status line, on the loop.
    private func wireServing(_ loop: EventLoop, _ control: CaptureControl, _ registry: MetricsRegistry, _ events: EventLog?,
                             _ audio: ProduceAudio?, ceiling: Int) throws -> LoopSide {
        let security = try HTTPSecurity(plan.serving.access, registry: registry, prefix: "")
        let serving = try ServingSide(loop: loop, choice: plan.serving, .encoder, registry: registry, events: events, security: security,
                                      audio: audio?.capture.format,
                                      metricsText: { registry.render() },
                                      onRequestIDR: { control.requestIDR() }, onFinished: { loop.stop() })
        let server = serving.server
        control.registerMetrics(in: registry)
        if let audio {
            audio.capture.registerMetrics(in: registry, delivery: audio.delivery)
            serving.carry(audio.delivery)
            if let whep = serving.whep {
                let sound = WebRTCSound(whep: whep, loop: loop, track: audio.capture.format, log: log)
                sound.whenWanted { [delivery = audio.delivery] in delivery.add { sound.take($0) } }
            }
        }
        let adaptive = serving.whep.map { whep in
            let adaptive = AdaptiveBitrate(ceiling: ceiling) { bits, estimate in
                control.requestBitrate(bits)
                events?.emit("bitrate-adapted", [("bitsPerSecond", bits), ("estimate", Int(estimate ?? 0))])
            }
            whep.endpoint.onLowestEstimate = { adaptive.report($0) }
            return adaptive
        }
        let metricsServer = try makeMetricsServer(loop, control, registry, events, security: security, adaptive: adaptive)
        let captureEnded = Mailbox<Int>(loop: loop) { _ in if server == nil { loop.stop() } }
        let signals = watchSignals(loop, control, server, events) + [security.watchReload(loop, log: log)].compactMap { $0 }
        serving.start()
        metricsServer?.start()
        let statusTimer = startStatusLine(loop, control, server, audio)
        return LoopSide(serving: serving, metricsServer: metricsServer, adaptive: adaptive, captureEnded: captureEnded, signals: signals, statusTimer: statusTimer)
    }

    /// `--metrics`: `/metrics`, `/healthz`, and `POST /bitrate` for a live bitrate change.
    private func makeMetricsServer(_ loop: EventLoop, _ control: CaptureControl, _ registry: MetricsRegistry, _ events: EventLog?,
                                   security: HTTPSecurity, adaptive: AdaptiveBitrate?) throws -> HTTPServer? {
        guard let endpoint = plan.metrics else { return nil }
        let server: HTTPServer
        do {
            server = try ServingSide.httpServer(loop, endpoint) { registry.render() }
        } catch {
            throw CommandError.unavailable("--metrics \(endpoint): \(error)")
        }
        security.protect(server)
        server.routes.add("POST", "/bitrate", maxBody: BitrateRoute.maxBody, needs: .control) { request in
            BitrateRoute.respond(to: request) { bits in
                // With WebRTC viewers, the new ceiling of what their estimates allow.
                control.requestBitrate(adaptive?.ceiling(bits) ?? bits)
                events?.emit("bitrate-requested", [("bitsPerSecond", bits)])
            }
        }
        return server
    }

    /// SIGINT, SIGTERM: stop capture (a second one: exit at once); SIGUSR1: an IDR.
    private func watchSignals(_ loop: EventLoop, _ control: CaptureControl, _ server: StreamServer?, _ events: EventLog?) -> [SignalWatcher] {
        let stopSignals = [SIGINT, SIGTERM].map { sig in
            SignalWatcher(loop: loop, signal: sig) {
                if control.isStopped {
                    // A second signal: give up on draining.
                    exit(ExitCode.ok.rawValue)
                }
                events?.emit("stopping", [("signal", sig == SIGINT ? "SIGINT" : "SIGTERM")])
                control.stop()
            }
        }
        let idrSignal = SignalWatcher(loop: loop, signal: SIGUSR1) {
            if let server { server.forceIDR() } else { control.requestIDR() }
        }
        stopSignals.forEach { $0.start() }
        idrSignal.start()
        return stopSignals + [idrSignal]
    }

    /// `frame=… fps=… kbps=… readers=… dropped=… encode=…ms`, once a second.
    private func startStatusLine(_ loop: EventLoop, _ control: CaptureControl, _ server: StreamServer?, _ audio: ProduceAudio?) -> LoopTimer {
        var last = (frames: UInt64(0), bytes: UInt64(0))
        let timer = LoopTimer(loop: loop) { [status] in
            let s = control.statistics()
            let fps = Double(s.framesEncoded - last.frames)
            let kbps = Double(s.bytesEncoded - last.bytes) * 8 / 1000
            last = (s.framesEncoded, s.bytesEncoded)
            var text = "frame=\(s.framesEncoded) fps=\(fixed(fps, 1)) kbps=\(Int(kbps))"
            if let server { text += " readers=\(server.readerCount)" }
            if s.keepAliveFrames > 0 { text += " keepalive=\(s.keepAliveFrames)" }
            if s.unchangedFrames > 0 { text += " unchanged=\(s.unchangedFrames)" }
            text += " dropped=\(s.droppedTotal) encode=\(fixed(s.lastEncodeMs, 1))ms"
            if let audio { text += audio.statusText }
            status.show(text)
        }
        if status.enabled { timer.start(after: 1, repeating: 1) }
        return timer
    }

    /// `capturing test pattern 640x360 at 30 fps; serving tcp://…, writing stdout`.
    private func announce(_ input: String, _ serving: LoopSide, hls: HLSLive?) {
        var where_ = serving.serving.places + serving.serving.hlsPlace(hls)
        if let output = plan.output { where_.append("writing \(output == "-" ? "stdout" : output)") }
        for target in plan.forwards { where_.append("pushing to \(target)") }
        if let hls = plan.hls { where_.append("writing HLS into \(hls.directory)") }
        log.line("capturing \(input); \(where_.joined(separator: ", "))")
        if let line = serving.serving.whepLine { log.line(line) }
        for line in serving.serving.securityLines(metrics: serving.metricsServer) { log.line(line, force: true) }
    }

    /// The capture thread: everything from frames to access units happens there, and each
    /// access unit goes to the server's mailbox and to the output.
    private func startCapture(_ source: sending any FrameSource, _ control: CaptureControl, _ serving: LoopSide, _ writer: SinkFanout?,
                              _ outcome: Outcome, _ events: EventLog?, _ audio: ProduceAudio?) -> OSThread {
        let mailbox = serving.server?.mailbox
        let ended = serving.captureEnded
        let handOff = mailbox.map { makeHandOff($0, control, events) }
        let pipeline = CapturePipeline(source: source, options: plan.capture, control: control, log: libraryLog) { unit in
            if let audio, let t = unit.timestamp { audio.videoFrame(captureTimeNs: t.captureTimeNs, pts90k: t.pts90k) }
            handOff?.hand(unit)
            if let writer {
                writer.push(.unit(TimedUnit(encoded: unit)))
                if mailbox == nil && writer.runners.allSatisfy(\.isClosed) { control.stop() }
            }
        }
        return OSThread(name: "nalcast-capture") {
            do {
                try pipeline.run()
            } catch {
                outcome.error.withLock { $0 = error }
            }
            // The sound stops where the pictures did, from now: the audio thread goes on
            // encoding by the clock while the loop drains and the session winds down (a
            // third of a second on a loaded machine), and what it delivered meanwhile would
            // outlast the pictures in every sink that carries both.
            audio?.delivery.endVideo(at: MediaTime(ticks: Int64(clamping: control.statistics().videoEnd90k)))
            if let mailbox { mailbox.send(.captureEnded, pastCapacity: true) } else { _ = ended.send(0) }
        }
    }

    /// The hand-off to the server's mailbox, which may refuse when the loop thread is behind:
    /// what it leaves out is counted, said once per gap, and readers resume at an IDR.
    private func makeHandOff(_ mailbox: Mailbox<StreamServer.Message>, _ control: CaptureControl, _ events: EventLog?) -> ResyncingHandOff {
        ResyncingHandOff(control: control, send: { mailbox.send(.accessUnit($0)) }, hasRoom: { mailbox.backlog < mailbox.capacity },
                         report: ServingSide.handOffReporter(capacity: mailbox.capacity, log: log, events: events))
    }

    /// After the capture thread is joined: the timers and `--metrics` stop, `-o` writes
    /// what it holds.
    private func drain(_ serving: LoopSide, _ writer: SinkFanout?) {
        serving.statusTimer.stop()
        serving.metricsServer?.close()
        serving.serving.close()
        let late = writer?.finish(timeout: 5) ?? []
        if !late.isEmpty { log.line("gave up waiting for: \(late.joined(separator: ", "))", force: true) }
        status.end()
    }

    /// The last event, and how capture ended.
    private func report(_ control: CaptureControl, _ outcome: Outcome, _ events: EventLog?) throws -> ExitCode {
        let stats = control.statistics()
        events?.emit("finished", [("framesEncoded", Int(stats.framesEncoded)), ("framesDropped", Int(stats.droppedTotal)),
                                  ("keepAliveFrames", Int(stats.keepAliveFrames)), ("unchangedFrames", Int(stats.unchangedFrames))])
        events?.flush()
        if let error = outcome.error.withLock({ $0 }) { throw (error as? CommandError) ?? commandError(error, of: plan.source) }
        // A failed -o was reported once, when it failed: exit 74 without saying it again.
        if outcome.outputFailed.load(ordering: .relaxed) { return .ioError }
        return .ok
    }

    private static func describe(_ source: any FrameSource, plan: ProduceCommand.Plan) -> String {
        plan.source.describe(source, rate: short(source.frameRate.framesPerSecond))
    }
}
