import CommandOptions
import Media
import Metrics
import Muxing
import Output
import IO
import Serving

/// `--hls DIR` of `produce` and `consume`: the options, the `--dry-run` lines, and the sink
/// (`HLSSink`, on its own runner) with the `HLSLive` the `--web` listener serves at /hls/.
struct HLSChoice {
    var directory: String
    var partTarget: Double
    var segmentDuration: Double
    var window: Double
    /// The longest a segment can be: the first IDR at or past `segmentDuration` comes at
    /// most one IDR interval later (`produce`'s `--keyint`; for `consume`, taken as
    /// `segmentDuration`: a longer one is said once).
    var targetDuration: Int

    static let specs: [OptionSpec] = [
        OptionSpec(name: "hls", value: "DIR", help: "also write Low-Latency HLS into DIR: index.m3u8, init.mp4 (CMAF), fMP4 segments and partial segments, with the sound; --web serves it at /hls/ with blocking playlist reloads"),
        OptionSpec(name: "hls-part", value: "TIME", help: "partial segments of at most TIME (EXT-X-PART-INF PART-TARGET)", defaultText: "200ms"),
        OptionSpec(name: "hls-segment", value: "TIME", help: "HLS segments begin at the first IDR after TIME", defaultText: "2s"),
        OptionSpec(name: "hls-window", value: "TIME", help: "the playlist keeps the newest segments covering TIME (at least three); older files are deleted", defaultText: "20s"),
    ]

    /// Reads the options; nil without `--hls`. `idrInterval`: the stream's longest IDR
    /// spacing when known (produce's `--keyint`).
    static func parse(_ o: ParsedOptions, command: String, idrInterval: Double?) throws -> HLSChoice? {
        guard let directory = o.string("hls") else {
            for name in ["hls-part", "hls-segment", "hls-window"] where o.has(name) {
                throw CommandError.usage("\(command): --\(name) needs --hls DIR")
            }
            return nil
        }
        guard !directory.isEmpty else { throw CommandError.usage("\(command): --hls needs a directory") }
        let part = try o.duration("hls-part", default: 0.2, minimum: 0.05)
        let segment = try o.duration("hls-segment", default: 2, above: true)
        guard segment >= part else { throw o.invalid("hls-segment", "shorter than --hls-part \(short(part)) s") }
        let window = try o.duration("hls-window", default: 20, above: true)
        let longest = segment + (idrInterval ?? segment)
        try OutputChoice.requireLibraries(.mp4, what: "\(command): --hls")
        return HLSChoice(directory: directory, partTarget: part, segmentDuration: segment, window: window, targetDuration: Int(longest.rounded(.up)))
    }

    var lines: [String] {
        ["hls: \(directory) (index.m3u8; part \(short(partTarget)) s, segments from \(short(segmentDuration)) s, target duration \(targetDuration) s, window \(short(window)) s)"]
    }

    /// The sink and what it shows the `--web` listener.
    func makeSink(countedClock: Bool, log: Log, events: EventLog?) throws -> (sink: HLSSink, live: HLSLive) {
        let live = HLSLive(directory: directory)
        let config = HLSSink.Config(directory: directory, partTarget: .seconds(partTarget), segmentDuration: .seconds(segmentDuration),
                                    targetDuration: targetDuration, window: .seconds(window), countedClock: countedClock)
        let target = targetDuration
        do {
            let sink = try HLSSink(config: config, live: live) { event in
                switch event {
                case .segment(let name, let duration, let parts):
                    events?.emit("hls-segment", [("name", name), ("duration", duration.secondsText), ("parts", parts)])
                case .overlong(let duration):
                    log.line("hls: warning: a segment of \(duration.secondsText) s is longer than the target duration \(target) s: the stream's IDRs are further apart "
                             + "than --hls-segment; players may stall", force: true)
                }
            }
            return (sink, live)
        } catch {
            throw CommandError.io("--hls \(error.message)")
        }
    }
}

extension ServingSide {
    /// `--web` with `--hls`: the HLS at /hls/ beside the page.
    /// When the stream ends, the HLS writer finishes first (its playlist ends) and the
    /// readers get a target duration to see it before the server stops (`HLSService.linger`).
    func serveHLS(_ live: HLSLive?, runner: SinkRunner?, loop: EventLoop) {
        guard let live, let webServer else { return }
        let service = HLSService(loop: loop, live: live)
        service.addRoutes(to: &webServer.routes)
        guard let server, let runner else { return }
        let stop = server.onFinished
        server.onFinished = {
            _ = runner.finish(timeout: 2)
            service.linger(then: stop)
        }
    }

    /// `the HLS on http://…/hls/index.m3u8`, for the line that says where the stream goes.
    func hlsPlace(_ live: HLSLive?) -> [String] {
        guard live != nil, let web = webServer?.boundEndpoint else { return [] }
        return ["HLS on \(ServingChoice.pageURL(web))hls/\(HLSPlaylist.playlistName)"]
    }
}

extension ServingSide {
    /// `consume --segments DIR --web ADDR`: /recordings and /recordings/get.
    func serveRecordings(_ index: RecordingIndex?, loop: EventLoop) {
        guard let index, let webServer else { return }
        RecordingService(loop: loop, index: index).addRoutes(to: &webServer.routes)
    }
}
