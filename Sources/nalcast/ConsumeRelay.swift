import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import H264
import Output
import Relay
import Serving

/// `consume --listen ADDR` / `--web ADDR`: serves what consume reads to many readers, through
/// the same `ServingSide` (`StreamServer`, the browser page) as `produce`, with the same
/// limits, join, skip and timeout policies, metrics and events.
///
/// The input side hands each access unit over as it is delivered to the sinks (an observer
/// of `StreamIntake`, on the loop thread for a socket, on the file reader's thread for a
/// file), through a `ResyncingHandOff` to the server's bounded mailbox: the input never
/// waits; when the mailbox is full, everything up to the next IDR is left out, counted
/// (`nalcast_relay_dropped_access_units_total`) and said (`handoff-gap`, `handoff-resumed`).
/// Each access unit carries consume's media time (`RisingMediaTime`: the timestamp SEI's,
/// else the media clock, never going back), which the browser page needs as its pts.
///
/// A file is read at the pace of its media time (`RealtimePacing`, `--realtime`, on by
/// default when serving a file): read as fast as the disk goes, readers would only skip.
///
/// When the run ends (end of input, a signal, the input given up), `endStream` closes the
/// hand-off and tells the server: readers get what is queued and an end-of-stream NAL unit
/// (or a WebSocket close), then the server stops the loop.
///
/// Loop-owned, like its `ServingSide`; `endStream` and the observers are safe from the input's
/// thread.
final class ConsumeRelay {
    let side: ServingSide
    let handOff: ResyncingHandOff
    /// Access units left out at the hand-off.
    let dropped: Counter
    /// Closes the hand-off and tells the server the stream ended: from any thread.
    let endStream: @Sendable () -> Void
    /// Tells the server the input was lost (it is being connected again): from any thread,
    /// after the last access unit of that connection was handed on.
    let sourceLost: @Sendable () -> Void

    init(loop: EventLoop, choice: ServingChoice, registry: MetricsRegistry, log: Log, events: EventLog?) throws {
        let side = try ServingSide(loop: loop, choice: choice, .relay, registry: registry, events: events,
                                   metricsText: { registry.render() }, onRequestIDR: nil, onFinished: { loop.stop() })
        guard let server = side.server else { preconditionFailure("a relay serves --listen or --web") }
        let mailbox = server.mailbox!
        let dropped = registry.counter("nalcast_relay_dropped_access_units_total",
                                       help: "Access units left out at the hand-off to the serving thread (it was behind), up to the next IDR.")
        let handOff = ResyncingHandOff(
            send: { unit, pts in mailbox.send(.timedUnit(unit, pts90k: pts ?? 0)) }, hasRoom: { mailbox.backlog < mailbox.capacity },
            requestIDR: nil, countLost: { dropped.increment() },
            report: ServingSide.handOffReporter(capacity: mailbox.capacity, log: log, events: events))
        self.side = side
        self.handOff = handOff
        self.dropped = dropped
        self.endStream = { handOff.close { _ = mailbox.send(.captureEnded, pastCapacity: true) } }
        self.sourceLost = { _ = mailbox.send(.sourceLost, pastCapacity: true) }
    }

    func start() { side.start() }

    /// The status line's part: ` readers=N reader-skips=K`, and ` relay-dropped=D` once the
    /// hand-off has left something out.
    var statusText: String {
        side.statusText + (dropped.value > 0 ? " relay-dropped=\(dropped.value)" : "")
    }

    /// After the loop: the page's HTTP server closes (the stream server closed its readers).
    func close() { side.webServer?.close() }

    /// What one intake's thread calls for every access unit it delivers: a new feed per
    /// intake, owned by that thread.
    static func observer(_ handOff: ResyncingHandOff) -> (TimedUnit) -> Void {
        RelayFeed(handOff: handOff).take
    }
}

extension ConsumeSession {
    /// The observers of the intake's access units as one, called in order.
    static func all(_ observers: ((TimedUnit) -> Void)?...) -> ((TimedUnit) -> Void)? {
        let present = observers.compactMap { $0 }
        if present.count <= 1 { return present.first }
        return { unit in for observer in present { observer(unit) } }
    }

    /// `--listen`, `--web`: the relay's server, started on the loop; the run's end goes
    /// through it (its readers get their end of stream).
    func makeRelay(_ loop: EventLoop, _ ending: Ending) throws -> ConsumeRelay? {
        guard config.serving.isServing else { return nil }
        let relay = try ConsumeRelay(loop: loop, choice: config.serving, registry: metrics.registry, log: log, events: events)
        ending.endsThrough.withLock { $0 = relay.endStream }
        relay.start()
        log.line("relaying \(config.input)\(config.realtime ? " at the pace of its media time" : ""); " + relay.side.places.joined(separator: ", "))
        return relay
    }
}

/// One input thread's end of the relay: times, and hands on.
final class RelayFeed {
    private let handOff: ResyncingHandOff
    private var times = RisingMediaTime()

    init(handOff: ResyncingHandOff) {
        self.handOff = handOff
    }

    func take(_ received: TimedUnit) {
        handOff.hand(RelayFeed.withoutStreamEnd(received.unit), pts90k: times.pts90k(for: received.mediaTime))
    }

    /// The access unit without a trailing end-of-stream or end-of-sequence NAL unit: the
    /// source's end is not the relay's (readers stay through a source's restart, and get
    /// the relay's own end-of-stream when it stops). An IDR goes to readers with its
    /// parameter sets in front in any case (`QueuedAccessUnit`).
    static func withoutStreamEnd(_ unit: AccessUnit) -> AccessUnit {
        guard let last = unit.nalUnits.last, last.type == .endOfStream || last.type == .endOfSequence else { return unit }
        let kept = unit.nalUnits.filter { $0.type != .endOfStream && $0.type != .endOfSequence }
        return AccessUnit(nalUnits: kept, isIDR: unit.isIDR, resolution: unit.resolution, timestamp: unit.timestamp, parameterSets: unit.parameterSets)
    }
}
