import Capture
import Consumer
import Synchronization
import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import H264
import Producer
import Relay
import Serving

/// One run of `nalcast produce`: the capture thread, the loop thread (this one) with the
/// server, signals, metrics and the status line, and the output writer thread.
///
/// Order of life, as for every threaded part of nalcast: create everything, start the
/// threads, run the loop; on the way out stop capture, let readers drain, join, close.
final class ProduceSession {
    let plan: ProduceCommand.Plan
    let status: StatusLine

    init(plan: ProduceCommand.Plan, status: StatusLine) {
        self.plan = plan
        self.status = status
    }

    /// How the capture thread ended, handed to the main thread after the join.
    private final class Outcome: Sendable {
        let error = Mutex<(any Error)?>(nil)
    }

    func run() throws -> ExitCode {
        let log = Log(quiet: plan.quiet)
        let events = try plan.events.map { try EventLog(path: $0) }
        let libraryLog: @Sendable (String) -> Void = { log.line($0) }
        let source = try makeSource(plan, log: libraryLog)

        let registry = MetricsRegistry()
        // `-o`: the consumer's file sink on its own thread. Behind a live source a slow
        // reader of the pipe skips to the next IDR; behind a file, capture waits for it.
        let writer: SinkRunner? = try plan.output.map { output in
            let sink: StdoutSink
            do { sink = output == "-" ? StdoutSink() : try StdoutSink(path: output) } catch { throw CommandError.io("-o \(error)") }
            return SinkRunner(
                sink: sink, queue: SinkQueue(policy: source.isLive ? .skipToEntry : .wait, highWater: 32 << 20),
                counters: SinkCounters(registry: registry, sink: output == "-" ? "stdout" : "file")
            ) { event in
                if case .closed(_, let error?) = event {
                    log.line(error.peerClosed ? "\(error.sink): the reader closed the pipe" : error.description)
                }
            }
        }

        // Only the loop thread takes these signals: block them before any thread starts.
        EventLoop.setSignals([SIGINT, SIGTERM, SIGUSR1], blocked: true)
        let loop = EventLoop()
        let control = CaptureControl()
        var server: StreamServer?
        if let listen = plan.listen {
            do {
                let made = try StreamServer(loop: loop, config: StreamServer.Config(listen: listen, broadcaster: plan.broadcaster), metrics: StreamServer.Metrics(registry: registry))
                made.onRequestIDR = { control.requestIDR() }
                made.onEvent = { event in ProduceSession.report(event, to: events) }
                made.onFinished = { loop.stop() }
                server = made
            } catch {
                throw CommandError.unavailable("--listen \(listen): \(error)")
            }
        }
        var metricsServer: HTTPServer?
        if let endpoint = plan.metrics {
            do {
                metricsServer = try HTTPServer(loop: loop, endpoint: endpoint) {
                    registry.render() + ProduceSession.captureMetrics(control.statistics())
                }
            } catch {
                throw CommandError.unavailable("--metrics \(endpoint): \(error)")
            }
            metricsServer?.routes.add("POST", "/bitrate", maxBody: BitrateRoute.maxBody) { request in
                BitrateRoute.respond(to: request) { bits in
                    control.requestBitrate(bits)
                    events?.emit("bitrate-requested", [("bitsPerSecond", bits)])
                }
            }
        }

        // Without a server, the end of capture stops the loop directly.
        let ended = Mailbox<Int>(loop: loop) { _ in if server == nil { loop.stop() } }
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
        server?.start()
        metricsServer?.start()

        var last = (frames: UInt64(0), bytes: UInt64(0))
        let statusTimer = LoopTimer(loop: loop) { [status] in
            let s = control.statistics()
            let fps = Double(s.framesEncoded - last.frames)
            let kbps = Double(s.bytesEncoded - last.bytes) * 8 / 1000
            last = (s.framesEncoded, s.bytesEncoded)
            var text = "frame=\(s.framesEncoded) fps=\(fixed(fps, 1)) kbps=\(Int(kbps))"
            if let server { text += " readers=\(server.readerCount)" }
            text += " dropped=\(s.droppedTotal) encode=\(fixed(s.lastEncodeMs, 1))ms"
            status.show(text)
        }
        if status.enabled { statusTimer.start(after: 1, repeating: 1) }

        var where_: [String] = []
        if let listen = server?.boundEndpoint { where_.append("serving \(listen)") }
        if let output = plan.output { where_.append("writing \(output == "-" ? "stdout" : output)") }
        log.line("capturing \(Self.describe(source, plan: plan)); \(where_.joined(separator: ", "))")

        // The capture thread: everything from frames to access units happens here.
        let mailbox = server?.mailbox
        let outcome = Outcome()
        let pipeline = CapturePipeline(source: source, options: plan.capture, control: control, log: libraryLog) { unit in
            _ = mailbox?.send(.accessUnit(unit))
            if let writer {
                let media = Double(unit.timestamp?.pts90k ?? 0) / 90_000
                writer.push(.unit(ReceivedUnit(unit: unit, mediaTime: media, arrivalNs: 0)))
                if writer.isClosed && mailbox == nil { control.stop() }
            }
        }
        let captureThread = OSThread(name: "nalcast-capture") {
            do {
                try pipeline.run()
            } catch {
                outcome.error.withLock { $0 = error }
            }
            if let mailbox { _ = mailbox.send(.captureEnded) } else { _ = ended.send(0) }
        }

        // Everything the loop calls must outlive it: a released SignalWatcher stops its
        // watcher, and the signal's default action (ending the process) would be back.
        withExtendedLifetime((stopSignals, idrSignal, statusTimer, metricsServer, server, ended)) { loop.run() }

        captureThread.join()
        statusTimer.stop()
        metricsServer?.close()
        writer?.finish(timeout: 5)
        status.end()
        let stats = control.statistics()
        events?.emit("finished", [("framesEncoded", Int(stats.framesEncoded)), ("framesDropped", Int(stats.droppedTotal))])
        events?.flush()
        if let error = outcome.error.withLock({ $0 }) {
            if let captureError = error as? CaptureError { throw commandError(captureError) }
            if let x11Error = error as? X11Error { throw commandError(x11Error) }
            throw CommandError(code: .software, message: "\(error)")
        }
        return .ok
    }

    private static func describe(_ source: any FrameSource, plan: ProduceCommand.Plan) -> String {
        let rate = short(source.frameRate.framesPerSecond)
        switch plan.source {
        case .testPattern: return "test pattern \(source.width)x\(source.height) at \(rate) fps"
        case .y4m(let path): return "y4m \(path == "-" ? "stdin" : path) \(source.width)x\(source.height) at \(rate) fps"
        case .raw(let path, _, _, let format, _): return "raw \(format) \(path == "-" ? "stdin" : path) \(source.width)x\(source.height) at \(rate) fps"
        case .x11: return "X11 " + ((source as? X11Source)?.captureDescription ?? "screen \(source.width)x\(source.height)") + " at \(rate) fps"
        }
    }

    static func report(_ event: StreamServer.Event, to log: EventLog?) {
        guard let log else { return }
        switch event {
        case .readerJoined(let id, let peer): log.emit("reader-joined", [("reader", Int(id.rawValue)), ("peer", peer)])
        case .readerStarted(let id, let ms): log.emit("reader-started", [("reader", Int(id.rawValue)), ("joinMs", ms)])
        case .readerSkipped(let id, let units, let bytes):
            log.emit("reader-skipped", [("reader", Int(id.rawValue)), ("accessUnits", units), ("bytes", bytes)])
        case .readerClosed(let id, let reason): log.emit("reader-closed", [("reader", Int(id.rawValue)), ("reason", reason)])
        case .readerRefused(let peer): log.emit("reader-refused", [("peer", peer), ("reason", "max-readers")])
        case .idrRequested: log.emit("idr-forced")
        }
    }

    /// Capture-side figures in Prometheus text, from a statistics snapshot.
    static func captureMetrics(_ s: CaptureStatistics) -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples { lines.append("\(name)\(labels) \(value == value.rounded() ? String(Int64(value)) : String(value))") }
        }
        metric("nalcast_frames_captured_total", "counter", "Frames the source produced.", [("", Double(s.framesCaptured))])
        metric("nalcast_frames_encoded_total", "counter", "Frames encoded into access units.", [("", Double(s.framesEncoded))])
        metric("nalcast_frames_dropped_total", "counter", "Frames dropped, by reason: rate (faster than --fps), late (capture fell behind).",
               [("{reason=\"rate\"}", Double(s.droppedRate)), ("{reason=\"late\"}", Double(s.droppedLate))])
        metric("nalcast_encoded_bytes_total", "counter", "Bytes of encoded stream.", [("", Double(s.bytesEncoded))])
        metric("nalcast_encode_milliseconds", "gauge", "Encode time per frame: last and mean.",
               [("{stat=\"last\"}", s.lastEncodeMs), ("{stat=\"mean\"}", s.meanEncodeMs)])
        metric("nalcast_capture_to_encoded_milliseconds", "gauge", "Capture to encoded access unit, over the last frames.",
               [("{quantile=\"0.5\"}", s.latencyMedianMs), ("{quantile=\"0.99\"}", s.latencyP99Ms)])
        return lines.joined(separator: "\n") + "\n"
    }
}

