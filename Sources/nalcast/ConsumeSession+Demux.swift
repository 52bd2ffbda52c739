import Clocks
import CommandOptions
import Consumer
import IO
import Muxing
import Output
import Delivery
import Synchronization
import Serving

extension ConsumeSession {
    /// A container file is opened before any output is made, as an Annex-B file is: a file
    /// with no H.264 video (HEVC, MPEG-4 part 2...) or an unreadable container is one line
    /// and exit 65, and an existing `-o` file is left as it was. The demuxer opened is the
    /// one the reader reads (`startDemux`): opening and probing a file again cost as much as
    /// reading a tenth of a GB of MP4.
    func checkDemuxedFile() throws -> sending Demuxer? {
        guard case .demux(let source) = config.input, !source.live else { return nil }
        do {
            return try Demuxer(url: source.url, shown: source.shown, options: source.options.map { ($0.key, $0.value) }, deadline: DemuxDeadline())
        } catch {
            throw CommandError(code: .dataError, message: "consume: \(error.message)")
        }
    }

    /// `--from` a URL (RTSP, SRT, RTMP, UDP, HTTP) or a container file: a `DemuxReader` on its
    /// own thread; what it reports becomes log lines and events, its end the run's outcome.
    func startDemux(_ fanout: SinkFanout, _ ending: Ending, opened: sending Demuxer?) -> DemuxReader? {
        guard case .demux(let source) = config.input else { return nil }
        return startDemux(source, fanout, ending, opened: opened)
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

    func startDemux(_ source: DemuxReader.Source, _ fanout: SinkFanout, _ ending: Ending, opened: sending Demuxer? = nil) -> DemuxReader? {
        let timing = DemuxReader.Timing(stallTimeout: config.stallTimeout, backoff: ReconnectBackoff.Config(giveUpAfter: config.reconnectTimeout))
        let reader = DemuxReader(source: source, timing: timing, deadline: opened?.deadline ?? DemuxDeadline())
        let reporter = inputReporter(ending)
        if !source.live { log.line("reading \(source.shown) through libavformat") }
        reader.start(intake: makeIntake(fanout, source.live ? .arrival : .counted), opened: opened, onEvent: { reporter.report($0) }) { end in
            Self.inputEnded(end, source.shown, ending, reporter)
        }
        return reader
    }
}

extension ConsumeSession {
    /// `--from rtsp://`: nalcast's RTSP client on its own thread, reporting and ending the
    /// run as a `DemuxReader` does.
    func startRTSP(_ fanout: SinkFanout, _ ending: Ending) -> RTSPReader? {
        guard case .rtsp(let source) = config.input else { return nil }
        let timing = DemuxReader.Timing(stallTimeout: config.stallTimeout, backoff: ReconnectBackoff.Config(giveUpAfter: config.reconnectTimeout))
        let reader = RTSPReader(source: source, timing: timing)
        let reporter = inputReporter(ending)
        reader.start(intake: makeIntake(fanout, .arrival), onEvent: { reporter.report($0) }) { end in
            Self.inputEnded(end, source.shown, ending, reporter)
        }
        return reader
    }

    /// What the end of an input (the demuxer's or the RTSP client's thread, or the WHIP
    /// listener's wait for the next publisher) means for the run; `kind` words a give-up.
    static func inputEnded(_ end: DemuxReader.End, _ shown: String, _ ending: Ending, _ reporter: InputReporter, kind: InputEvent.Kind = .demuxed) {
        switch end {
        case .ended: ending.end(.inputEnded)
        case .failed(let message): ending.end(.inputFailed(message))
        case .invalid(let message): ending.end(.notAnnexB(message))
        case .refused(let message): ending.end(.refused(message))
        case .missing(let message): ending.end(.missing(message))
        case .gaveUp(let reason, let everOpened, let endedCleanly):
            reporter.report(InputEvent(kind, shown, .gaveUp(reason: reason, everOpened: everOpened, endedCleanly: endedCleanly)))
        }
    }
}

extension ConsumeSession {
    /// `--from whip-listen://`: the WHIP listener on the loop, its publishers' media going to
    /// the intake there; its HTTP listener protected as `--web` is (tokens: `publish`).
    func startWHIP(_ loop: EventLoop, _ fanout: SinkFanout, _ ending: Ending) throws -> WHIPIngest? {
        guard case .whip(let endpoint, let path) = config.input else { return nil }
        let shown = config.input.description
        let reporter = inputReporter(ending)
        let log = self.log
        let whip: WHIPIngest
        do {
            whip = try WHIPIngest(loop: loop, config: WHIPIngest.Config(endpoint: endpoint, path: path, shown: shown, stallTimeout: config.stallTimeout,
                                                                      reconnectTimeout: config.reconnectTimeout),
                                  intake: makeIntake(fanout, .arrival), registry: metrics.registry, log: { log.line($0) },
                                  onEvent: { reporter.report($0) }, onEnd: { Self.inputEnded($0, shown, ending, reporter, kind: .publisher) })
        } catch {
            throw CommandError.unavailable("consume: --from \(shown): \(error)")
        }
        security?.protect(whip.http)
        whip.onFirstPicture = { log.line("\(shown): the publisher's first picture went on \(fixed($0, 3)) s after its offer") }
        whip.start()
        let url = (security?.pageURL(whip.http.boundEndpoint) ?? AccessChoice.pageURL(whip.http.boundEndpoint)).dropLast() + path
        log.line("WHIP: publishers POST their SDP offer to \(url) (one at a time)")
        return whip
    }
}
