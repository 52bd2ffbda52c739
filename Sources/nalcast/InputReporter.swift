import Clocks
import CommandOptions
import Consumer
import Synchronization

/// What `consume` says about its input, whichever kind it is (`InputEvent`: a socket it
/// connects to, a source libavformat opens): log lines, `--events` lines, and the run's end
/// when the input is given up. The events and their fields are the same for every kind; the
/// words that differ come from the event's kind (`Words`).
///
/// Safe from any thread: a socket's events come on the loop, a demuxed source's on its reader's.
final class InputReporter: Sendable {
    /// The words of one kind of input.
    struct Words: Sendable {
        /// `connected to X`, or `opened X in 0.12 s (mpegts, 320x240)`.
        let opened: @Sendable (String, InputEvent.Opening?) -> String
        /// `cannot reach X (why)`, or the reason alone (it names the source).
        let unreachable: @Sendable (String, String) -> String
        let noData: String
        /// `disconnected from X` / `lost X`.
        let lost: String
        /// `reconnect` / `reopen`.
        let again: String
        /// `last connected at` / `last read at`.
        let lastOpen: String
        /// `cannot connect to X (why)`, or the reason alone.
        let neverOpened: @Sendable (String, String) -> String

        static let connection = Words(
            opened: { input, _ in "connected to \(input)" }, unreachable: { input, reason in "cannot reach \(input) (\(reason))" },
            noData: "no data", lost: "disconnected from", again: "reconnect", lastOpen: "last connected",
            neverOpened: { input, reason in "cannot connect to \(input) (\(reason))" })
        static let demuxed = Words(
            opened: { input, opening in "opened \(input) in \(fixed(opening?.seconds ?? 0, 2)) s (\(opening?.found ?? ""))" },
            unreachable: { _, reason in reason },
            noData: "no packet", lost: "lost", again: "reopen", lastOpen: "last read",
            neverOpened: { _, reason in reason })

        static let publisher = Words(
            opened: { input, opening in "a publisher came to \(input) (\(opening?.found ?? ""); its handshake took \(fixed(opening?.seconds ?? 0, 2)) s)" },
            unreachable: { _, reason in reason },
            noData: "no packet", lost: "the publisher left", again: "wait", lastOpen: "last published",
            neverOpened: { input, reason in "no publisher came to \(input) (\(reason))" })

        static func of(_ kind: InputEvent.Kind) -> Words {
            switch kind {
            case .connection: .connection
            case .demuxed: .demuxed
            case .publisher: .publisher
            }
        }
    }

    private let log: Log
    private let events: EventLog?
    /// Tells the relay the input was lost (nil without one).
    private let sourceLost: (@Sendable () -> Void)?
    private let ending: ConsumeSession.Ending
    private let reconnectTimeout: Double?
    /// When the input was last lost, for the line that gives up.
    private let lastLost = Mutex<Double?>(nil)

    init(log: Log, events: EventLog?, sourceLost: (@Sendable () -> Void)?, ending: ConsumeSession.Ending, reconnectTimeout: Double?) {
        self.log = log
        self.events = events
        self.sourceLost = sourceLost
        self.ending = ending
        self.reconnectTimeout = reconnectTimeout
    }

    func report(_ event: InputEvent) {
        let words = Words.of(event.kind), input = event.input
        switch event.what {
        case .opened(let attempts, let opening):
            log.line(words.opened(input, opening) + (attempts > 1 ? " after \(attempts) attempts" : ""))
            events?.emit("connected", [("endpoint", input), ("attempts", attempts)] + (opening.map { [("openSeconds", $0.seconds)] } ?? []))
            if let opening, !opening.ignored.isEmpty { reportIgnored(input, opening) }
        case .unreachable(let reason):
            log.line("\(words.unreachable(input, reason)); retrying")
            events?.emit("reconnecting", [("endpoint", input), ("reason", reason)])
        case .stalled(let seconds):
            log.line("\(input) stalled: \(words.noData) for \(formatSeconds(seconds)) s")
            events?.emit("stalled", [("endpoint", input), ("seconds", seconds)])
        case .lost(let reason, let retrying):
            lastLost.withLock { $0 = WallClock.seconds }
            sourceLost?()
            log.line("\(words.lost) \(input) (\(reason))" + (retrying ? "; \(words.again)ing" : ""))
            events?.emit("disconnected", [("endpoint", input), ("reason", reason)])
            if retrying { events?.emit("reconnecting", [("endpoint", input)]) }
        case .retrying(let attempt, let reason, let downFor, let nextIn):
            log.line("\(input): attempt \(attempt) failed (\(reason)), down for \(fixed(downFor, 1)) s; next try in \(fixed(nextIn, 1)) s")
        case .malformed(let packets):
            log.line("\(input): \(packets) packet\(packets == 1 ? "" : "s") with no whole H.264 NAL unit (counted in nalcast_consumer_malformed_packets_total)", force: true)
            events?.emit("malformed-packets", [("endpoint", input), ("packets", packets)])
        case .gaveUp(let reason, let everOpened, let endedCleanly):
            gaveUp(input, words, reason: reason, everOpened: everOpened, endedCleanly: endedCleanly)
        }
    }

    private func reportIgnored(_ input: String, _ opening: InputEvent.Opening) {
        let ignored = opening.ignored
        log.line("\(input): relaying its H.264 video\(opening.found.contains(", audio aac") ? " and AAC audio" : " only"); ignoring \(ignored.count) other track\(ignored.count == 1 ? "" : "s"): \(ignored.joined(separator: ", "))")
        events?.emit("tracks-ignored", [("endpoint", input), ("tracks", ignored.joined(separator: ", "))])
    }

    /// `--reconnect-timeout` ran out: a producer that ended its stream (end-of-stream NAL
    /// unit) and did not start again is a finished recording (exit 0); else the input is
    /// unavailable (69).
    private func gaveUp(_ input: String, _ words: Words, reason: String, everOpened: Bool, endedCleanly: Bool) {
        if everOpened && endedCleanly {
            log.line("\(input): the producer ended the stream; not \(words.again)ing (--reconnect-timeout)")
            ending.end(.inputEnded)
        } else if everOpened {
            var text = "lost \(input): " + (reconnectTimeout.map { "not back within --reconnect-timeout \(formatSeconds($0)) s" } ?? "gave up \(words.again)ing")
            text += " (last try: \(reason))"
            if let at = lastLost.withLock({ $0 }) { text += "; \(words.lastOpen) at \(ConsumeReport.clockTime(at))" }
            ending.end(.unreachable(text))
        } else {
            ending.end(.unreachable(words.neverOpened(input, reason)))
        }
    }
}
