import CommandOptions
import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import H264
import Output
import Relay
import Serving
import Synchronization

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
        audio = RelayAudio(listeners: server.boundListeners, web: side.webServer?.boundEndpoint, mailbox: mailbox,
                           dropped: server.metrics.tsAudioDropped, log: log, events: events)
    }

    func start() { side.start() }

    /// The status line's part: ` readers=N reader-skips=K`, and ` relay-dropped=D` once the
    /// hand-off has left something out.
    var statusText: String {
        side.statusText + (dropped.value > 0 ? " relay-dropped=\(dropped.value)" : "")
    }

    /// After the loop: the page's HTTP server closes (the stream server closed its readers).
    func close() { side.webServer?.close() }

    /// What one intake's thread calls for every access unit and every audio item it
    /// delivers: a new feed per intake, owned by that thread. `keepsStreamEnd` when the
    /// source's end is the relay's (see `RelayFeed.take`).
    static func feed(_ handOff: ResyncingHandOff, _ audio: RelayAudio, keepsStreamEnd: Bool) -> RelayFeed {
        RelayFeed(handOff: handOff, audio: audio, keepsStreamEnd: keepsStreamEnd)
    }
}

/// The relay's audio path to its MPEG-TS listeners, safe from any input thread: the track
/// goes to the server's mailbox past its bound (it must not be lost), each packet within it
/// (a full mailbox refuses it: counted in `nalcast_ts_audio_packets_dropped_total`, as for
/// `produce`). The first track declared is said once in the log for the listeners that do
/// not carry it (Annex-B, `--web`); a later different one (a restarted source with other
/// audio) is said too: the TS readers keep the track their header declared, and its packets
/// are left out and counted by the server. Without an MPEG-TS listener nothing goes to the
/// server (as `produce`'s Annex-B listeners, they get no sound): only the log lines.
final class RelayAudio: Sendable {
    private let mailbox: Mailbox<StreamServer.Message>
    /// The TS listeners' count of audio left out; nil without a TS listener (nothing carried).
    private let dropped: Counter?
    private let firstFormat = Mutex<AudioFormat?>(nil)
    private let log: Log
    private let events: EventLog?
    /// The listeners and the page that get no sound, as shown on the command line, each with
    /// why.
    private let videoOnly: [(name: String, why: String)]

    /// `listeners` and `web` as bound (the kernel's port for port 0), for the log lines.
    init(listeners: [Listening], web: Endpoint?, mailbox: Mailbox<StreamServer.Message>, dropped: Counter?, log: Log, events: EventLog?) {
        self.mailbox = mailbox
        self.dropped = listeners.contains { $0.format == .mpegTS } ? dropped : nil
        self.log = log
        self.events = events
        videoOnly = listeners.filter { $0.format == .annexB }.map { ($0.description, "raw H.264 carries video only") }
            + (web.map { [("--web \($0)", "the page plays video only")] } ?? [])
    }

    /// The input has this audio track from now.
    func declare(_ format: AudioFormat) {
        if dropped != nil { _ = mailbox.send(.audioFormat(format), pastCapacity: true) }
        let first = firstFormat.withLock { first -> AudioFormat? in
            defer { if first == nil { first = format } }
            return first
        }
        let shown = "\(format.codec.rawValue) \(format.sampleRate) Hz \(format.channels) ch"
        if let first {
            guard dropped != nil, !format.isSameTrack(as: first) else { return }
            log.line("the input's audio changed to \(shown): the MPEG-TS readers keep the track they were given; its packets are left out (counted in nalcast_ts_audio_packets_dropped_total)")
            events?.emit("audio-not-carried", [("sink", "relay"), ("reason", "track changed to \(shown)")])
            return
        }
        if dropped != nil { log.line("relaying the input's audio (\(shown)) to the MPEG-TS listeners") }
        let elsewhere = dropped != nil ? "served on the ts: listeners only" : "not served (a ts:tcp:// or ts:unix: listener would carry it)"
        for place in videoOnly {
            log.line("\(place.name): \(place.why); the input's audio is \(elsewhere)")
            events?.emit("audio-not-carried", [("sink", place.name)])
        }
    }

    /// One packet, at its time for the readers.
    func send(_ packet: AudioPacket) {
        guard let dropped else { return }
        if !mailbox.send(.audio(packet)) { dropped.increment() }
    }

    /// One packet left out before it reached the server (no time for it yet).
    func drop() { dropped?.increment() }
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
    private let audio: RelayAudio
    private var times = RisingMediaTime()
    private let keepsStreamEnd: Bool

    init(handOff: ResyncingHandOff, audio: RelayAudio, keepsStreamEnd: Bool) {
        self.handOff = handOff
        self.audio = audio
        self.keepsStreamEnd = keepsStreamEnd
    }

    /// Hands an access unit to the server. One that ends with an end of sequence (a producer
    /// that knew its last picture) keeps it where the source's end is the relay's (a file,
    /// `--reconnect-timeout 0`): the readers get that picture without an AUD behind it, and
    /// nothing left open (`AccessUnitDelimiting`). Elsewhere the relay outlives the source.
    func take(_ received: TimedUnit) {
        let unit = keepsStreamEnd ? received.unit : RelayFeed.withoutStreamEnd(received.unit)
        handOff.hand(unit, pts90k: times.pts90k(for: received.mediaTime))
    }

    /// The input's audio track and packets (on the same time line as its access units: the
    /// intake places them so), to the MPEG-TS listeners, shifted as the pictures are.
    func takeAudio(_ item: SinkItem) {
        guard !handOff.isClosed else { return }
        switch item {
        case .audioFormat(let format):
            audio.declare(format)
        case .audio(let packet):
            guard let pts = times.audioPts90k(for: packet.mediaTime) else { return audio.drop() }
            audio.send(AudioPacket(data: packet.data, mediaTime: MediaTime(ticks: Int64(pts)), captureTimeNs: packet.captureTimeNs))
        case .unit, .discontinuity, .gap:
            return
        }
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
