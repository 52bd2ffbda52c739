import Clocks
import CommandOptions
import IO
import Media
import Metrics
import Muxing
import Output
import Serving
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `--replay TIME` of `produce` and `consume`: the last TIME in memory (`ReplaySink`), saved
/// as `--replay-dir`/replay-DATE-TIME-N.mp4 on SIGUSR2 or `POST /replay` (on `--metrics`).
struct ReplayChoice {
    var window: Double
    var directory: String

    static let specs: [OptionSpec] = [
        OptionSpec(name: "replay", value: "TIME", help: "keep the last TIME in memory (whole GOPs, with the sound) and save it as an MP4 on SIGUSR2 or POST /replay on --metrics; memory: the bitrate times TIME plus one GOP (30s at 4 Mbit/s: about 16 MB)"),
        OptionSpec(name: "replay-dir", value: "DIR", help: "where --replay saves replay-DATE-TIME-N.mp4", defaultText: "."),
    ]

    static func parse(_ o: ParsedOptions, command: String) throws -> ReplayChoice? {
        guard let window = try o.duration("replay", above: true) else {
            if o.has("replay-dir") { throw CommandError.usage("\(command): --replay-dir needs --replay TIME") }
            return nil
        }
        let directory = o.string("replay-dir") ?? "."
        guard !directory.isEmpty else { throw CommandError.usage("\(command): --replay-dir needs a directory") }
        try OutputChoice.requireLibraries(.mp4, what: "\(command): --replay")
        return ReplayChoice(window: window, directory: directory)
    }

    var lines: [String] { ["replay: the last \(short(window)) s, saved into \(directory) on SIGUSR2 or POST /replay"] }

    /// What asks the sink to save: `save()` names the file and returns its path.
    func makeTrigger() -> ReplayTrigger { ReplayTrigger(directory: directory, control: ReplaySink.Control()) }

    /// The sink `trigger` asks.
    func makeSink(_ trigger: ReplayTrigger, log: Log, events: EventLog?) -> sending ReplaySink {
        ReplaySink(window: .seconds(window), control: trigger.control) { event in
            switch event {
            case .saved(let path, let duration, let frames, let bytes):
                log.line("replay: saved \(path) (\(duration.secondsText) s, \(frames) frames)", force: true)
                events?.emit("replay-saved", [("path", path), ("duration", duration.secondsText), ("frames", frames), ("bytes", bytes)])
            case .failed(let path, let message):
                log.line("replay: \(path): \(message)", force: true)
                events?.emit("replay-failed", [("path", path), ("reason", message)])
            case .empty(let path):
                log.line("replay: nothing to save in \(path) yet (no IDR received)", force: true)
                events?.emit("replay-failed", [("path", path), ("reason", "empty")])
            }
        }
    }
}

/// Names a replay file and asks the sink to save it: from SIGUSR2 and `POST /replay`.
final class ReplayTrigger: Sendable {
    let directory: String
    let control: ReplaySink.Control
    private let count = Mutex(0)
    private let namer = try! SegmentNamer(pattern: "replay-%Y%m%d-%H%M%S-%n.mp4")

    init(directory: String, control: ReplaySink.Control) {
        self.directory = directory
        self.control = control
    }

    @discardableResult
    func save() -> String {
        let n = count.withLock { c in c += 1; return c }
        let path = "\(directory)/\(namer.name(time: Int(WallClock.seconds), sequence: n))"
        control.request(path: path)
        return path
    }

    /// `POST /replay`: 202 with the file's path (the `replay-saved` event says when it is written).
    func addRoute(to server: HTTPServer?) {
        server?.routes.add("POST", "/replay", needs: .control) { [self] _ in
            HTTPResponse(status: 202, contentType: "application/json", body: "{\"path\":\"\(save())\"}\n")
        }
    }

    /// SIGUSR2 (blocked before any thread starts, as SIGINT and SIGTERM are).
    func watchSignal(_ loop: EventLoop) -> SignalWatcher {
        let watcher = SignalWatcher(loop: loop, signal: SIGUSR2) { [self] in _ = save() }
        watcher.start()
        return watcher
    }
}
