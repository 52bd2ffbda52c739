import Consumer
import IO
#if canImport(Glibc)
import Glibc
#endif
import Media
import Output
import Delivery
import Metrics
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
/// The input's AAC (a demuxed source: `ts:tcp://`, a container file, RTSP, RTMP, SRT) goes to
/// the MPEG-TS listeners beside the video (`RelayAudio`): its track is declared to the server
/// when the input opens, each packet goes to the mailbox on the access units' time line (the
/// shift `RisingMediaTime` gave the pictures around it, so a source's restart moves both
/// alike), and the server muxes it with the next access unit as `produce`'s TS listeners do.
/// Annex-B listeners and `--web` viewers get the video only (one log line says so).
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
    /// Where the input's audio goes: the MPEG-TS listeners, when there are some.
    let audio: RelayAudio

    init(loop: EventLoop, choice: ServingChoice, registry: MetricsRegistry, log: Log, events: EventLog?, security: HTTPSecurity) throws {
        let side = try ServingSide(loop: loop, choice: choice, .relay, registry: registry, events: events, security: security,
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
        let sound = side.whep.map { WebRTCSound(whep: $0, loop: loop, track: nil, log: log) }
        audio = ConsumeRelay.audio(listeners: server.boundListeners, web: side.webServer?.boundEndpoint, sound: sound, mailbox: mailbox,
                                   dropped: server.metrics.tsAudioDropped, log: log, events: events)
    }

    func start() { side.start() }

    /// The status line's part: ` readers=N reader-skips=K`, and ` relay-dropped=D` once the
    /// hand-off has left something out.
    var statusText: String {
        side.statusText + (dropped.value > 0 ? " relay-dropped=\(dropped.value)" : "")
    }

    /// After the loop: the page's HTTP server closes (the stream server closed its readers).
    func close() { side.close() }

    /// The input's audio to the MPEG-TS listeners (`RelayAudio`): through the server's mailbox
    /// when there is a TS listener; to the WHEP viewers of `--web` as Opus (`sound`); what it
    /// reports as log lines and events. `listeners` and `web` as bound (the kernel's port for
    /// port 0), for the lines.
    static func audio(listeners: [Listening], web: Endpoint?, sound: WebRTCSound?, mailbox: Mailbox<StreamServer.Message>, dropped: Counter?,
                      log: Log, events: EventLog?) -> RelayAudio {
        var carrier: RelayAudio.Carrier?
        if let dropped, listeners.contains(where: { $0.format == .mpegTS }) {
            carrier = RelayAudio.Carrier(declare: { _ = mailbox.send(.audioFormat($0), pastCapacity: true) },
                                         send: { mailbox.send(.audio($0)) }, dropped: dropped, isSameTrack: { $0.isSameTrack(as: $1) })
        }
        // The page plays video only, but WHEP on the same listener carries the sound.
        let videoOnly = listeners.filter { $0.format == .annexB }.map { (place: $0.description, why: "raw H.264 carries video only") }
            + (sound == nil ? web.map { [(place: "--web \($0)", why: "the page plays video only")] } ?? [] : [])
        let webrtc = sound.map { sound in (declare: { @Sendable in sound.declare($0) }, send: { @Sendable in sound.take($0) }) }
        let places = [carrier.map { _ in "the MPEG-TS listeners" }, sound.map { _ in "the WHEP viewers (as Opus)" }].compactMap { $0 }
        return RelayAudio(carrier: carrier, webrtc: webrtc, videoOnly: videoOnly) { report in
            switch report {
            case .relaying(let track):
                log.line("relaying the input's audio (\(track)) to " + places.joined(separator: " and "))
            case .videoOnly(let place, let why, let carried):
                let elsewhere = carried ? "served on the ts: listeners" + (sound == nil ? " only" : " and to the WHEP viewers")
                    : sound != nil ? "served to the WHEP viewers only" : "not served (a ts:tcp:// or ts:unix: listener would carry it)"
                log.line("\(place): \(why); the input's audio is \(elsewhere)")
                events?.emit("audio-not-carried", [("sink", place)])
            case .trackChanged(let track):
                log.line("the input's audio changed to \(track): the MPEG-TS readers keep the track they were given; its packets are left out (counted in nalcast_ts_audio_packets_dropped_total)")
                events?.emit("audio-not-carried", [("sink", "relay"), ("reason", "track changed to \(track)")])
            }
        }
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
    func makeRelay(_ loop: EventLoop, _ ending: Ending, _ security: HTTPSecurity) throws -> ConsumeRelay? {
        guard config.serving.isServing else { return nil }
        let relay = try ConsumeRelay(loop: loop, choice: config.serving, registry: metrics.registry, log: log, events: events, security: security)
        ending.endsThrough.withLock { $0 = relay.endStream }
        relay.start()
        log.line("relaying \(config.input)\(config.realtime ? " at the pace of its media time" : ""); " + relay.side.places.joined(separator: ", "))
        if let line = relay.side.whepLine { log.line(line) }
        return relay
    }
}
