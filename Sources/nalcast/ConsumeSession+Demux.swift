import Clocks
import CommandOptions
import Consumer
import EventLoop
import Containers
import Output
import Relay
import Synchronization

extension ConsumeSession {
    /// A container file is opened once before any output is made, as an Annex-B file is:
    /// a file with no H.264 video (HEVC, MPEG-4 part 2...) or an unreadable container is one
    /// line and exit 65, and an existing `-o` file is left as it was.
    func checkDemuxedFile() throws {
        guard case .demux(let source) = config.input, !source.live else { return }
        do {
            _ = try Demuxer(url: source.url, shown: source.shown, options: source.options.map { ($0.key, $0.value) }, deadline: DemuxDeadline())
        } catch {
            throw CommandError(code: .dataError, message: "consume: \(error.message)")
        }
    }

    /// `--from` a URL (RTSP, SRT, RTMP, UDP, HTTP) or a container file: a `DemuxReader` on its
    /// own thread; what it reports becomes log lines and events, its end the run's outcome.
    func startDemux(_ fanout: SinkFanout, _ ending: Ending) -> DemuxReader? {
        guard case .demux(let source) = config.input else { return nil }
        return startDemux(source, fanout, ending)
    }

    /// A `tcp://` or `unix:` input whose first bytes are MPEG-TS (a producer's MPEG-TS listener) is read
    /// as `ts:tcp://` would be: the client stops and a `DemuxReader` connects again.
    func transportStreamHandOver(_ endpoint: Endpoint, _ fanout: SinkFanout, _ ending: Ending, stop: @escaping () -> Void) -> () -> Void {
        { [self] in
            stop()
            // The FFmpeg libraries are opened only now: an Annex-B input never maps them.
            if let problem = FFmpegLibraries.problem {
                ending.end(.notAnnexB("\(endpoint) sends MPEG-TS, which needs libavformat: \(problem)"))
                return
            }
            log.line("\(endpoint) sends MPEG-TS: reading it through libavformat, as --from ts:\(endpoint)")
            handedOverDemux = startDemux(InputChoice.transportStreamSource(endpoint), fanout, ending)
        }
    }

    func startDemux(_ source: DemuxReader.Source, _ fanout: SinkFanout, _ ending: Ending) -> DemuxReader? {
        let log = self.log
        let events = self.events
        let reconnectTimeout = config.reconnectTimeout
        let timing = DemuxReader.Timing(stallTimeout: config.stallTimeout, backoff: ReconnectBackoff.Config(giveUpAfter: reconnectTimeout))
        let reader = DemuxReader(source: source, timing: timing)
        // When the source was last lost (for the line that gives up).
        let lastLost = Mutex<Double?>(nil)
        let sourceLost = relay?.sourceLost
        let onEvent: @Sendable (DemuxReader.Event) -> Void = { event in
            switch event {
            case .opened(let shown, let attempts, let seconds, let found, let ignored):
                log.line("opened \(shown) in \(fixed(seconds, 2)) s (\(found))" + (attempts > 1 ? " after \(attempts) attempts" : ""))
                events?.emit("connected", [("endpoint", shown), ("attempts", attempts), ("openSeconds", seconds)])
                if !ignored.isEmpty {
                    log.line("\(shown): relaying its H.264 video\(found.contains(", audio aac") ? " and AAC audio" : " only"); ignoring \(ignored.count) other track\(ignored.count == 1 ? "" : "s"): \(ignored.joined(separator: ", "))")
                    events?.emit("tracks-ignored", [("endpoint", shown), ("tracks", ignored.joined(separator: ", "))])
                }
            case .unreachable(let shown, let reason):
                log.line("\(reason); retrying")
                events?.emit("reconnecting", [("endpoint", shown), ("reason", reason)])
            case .stalled(let shown, let seconds):
                log.line("\(shown) stalled: no packet for \(formatSeconds(seconds)) s")
                events?.emit("stalled", [("endpoint", shown), ("seconds", seconds)])
            case .lost(let shown, let reason, let retrying):
                lastLost.withLock { $0 = WallClock.seconds }
                sourceLost?()
                log.line("lost \(shown) (\(reason))" + (retrying ? "; reopening" : ""))
                events?.emit("disconnected", [("endpoint", shown), ("reason", reason)])
                if retrying { events?.emit("reconnecting", [("endpoint", shown)]) }
            case .retrying(let shown, let attempt, let reason, let downFor, let nextIn):
                log.line("\(shown): attempt \(attempt) failed (\(reason)), down for \(fixed(downFor, 1)) s; next try in \(fixed(nextIn, 1)) s")
            case .malformed(let shown, let packets):
                log.line("\(shown): \(packets) packet\(packets == 1 ? "" : "s") with no whole H.264 NAL unit (counted in nalcast_consumer_malformed_packets_total)", force: true)
                events?.emit("malformed-packets", [("endpoint", shown), ("packets", packets)])
            }
        }
        reader.start(intake: makeIntake(fanout, source.live ? .arrival : .counted), onEvent: onEvent) { end in
            switch end {
            case .ended: ending.end(.inputEnded)
            case .failed(let message): ending.end(.inputFailed(message))
            case .invalid(let message): ending.end(.notAnnexB(message))
            case .gaveUp(let reason, let everOpened, let endedCleanly):
                if everOpened && endedCleanly {
                    log.line("\(source.shown): the producer ended the stream; not reopening (--reconnect-timeout)")
                    ending.end(.inputEnded)
                } else if everOpened {
                    var text = "lost \(source.shown): " + (reconnectTimeout.map { "not back within --reconnect-timeout \(formatSeconds($0)) s" } ?? "gave up reopening")
                    text += " (last try: \(reason))"
                    if let at = lastLost.withLock({ $0 }) { text += "; last read at \(ConsumeReport.clockTime(at))" }
                    ending.end(.unreachable(text))
                } else {
                    ending.end(.unreachable(reason))
                }
            }
        }
        if !source.live { log.line("reading \(source.shown) through libavformat") }
        return reader
    }
}
