import Clocks
import IO
import Media
import Output
import Delivery

/// Serves the encoded stream to every connected reader: the loop side of `nalcast produce`
/// (and of `consume`'s relay).
///
/// It accepts readers, joins them to one `Broadcaster`, fans each published access unit out
/// to them, drains them when the stream ends and then finishes; it knows no wire format. A
/// reader is a `StreamReader`, which frames and writes what it is handed its own way: raw
/// Annex-B or MPEG-TS for a reader of a `--listen` socket, made by its listener's kind
/// (`WireFormat.kind`, `ListenerKind`), or one WebSocket message per access unit for a
/// viewer of the browser page, handed over by an `HTTPServer` route (`webSocketRoute`)
/// after the upgrade. What the readers of a kind share of each access unit (the MPEG-TS
/// muxing) is made once by its `UnitPackager` and travels with the unit (`WireForms`). All
/// are readers of the same `Broadcaster`: the same join at an IDR, skip to the next IDR when
/// behind, timeout, and `maxReaders` counting all.
///
/// The capture thread hands access units over through `mailbox` (`send(.accessUnit(au))`)
/// and never waits; the `Broadcaster` decides what each reader gets (join policy, lag and
/// byte bounds, timeouts) and each reader writes it straight from the shared buffers. When
/// capture ends (`.captureEnded`), readers get up to `drainTimeout` seconds to take what is
/// queued, then everything closes and `onFinished` runs.
///
/// No connection ends with a reset: every end (the stream's, a refusal past `maxReaders`, a
/// timeout, a viewer's protocol error) is a graceful close (`Connection.closeGracefully`),
/// at most `closeTimeout` seconds, and `onFinished` waits for them (`closing`).
///
/// Loop-owned: create it before the loop starts or on the loop thread, use it there only.
public final class StreamServer {
    public enum Message: Sendable {
        case accessUnit(AccessUnit)
        /// An access unit with the media time (90 kHz) its viewers get when it carries no
        /// timestamp SEI: what `consume` relays (its `MediaClock`'s time, kept rising).
        case timedUnit(AccessUnit, pts90k: UInt64)
        /// Capture stopped (input ended, a limit was reached, or a signal): drain and finish.
        case captureEnded
        /// The source went away (a relay's input was lost and is being connected again): the
        /// cached GOP is forgotten, so a reader joining meanwhile waits for the source's next
        /// IDR instead of getting old pictures.
        case sourceLost
        /// An encoded audio packet on the video's media time line: the TS readers get it with
        /// the next access unit (Annex-B readers and viewers never do).
        case audio(AudioPacket)
        /// The audio track of the `.audio` packets from here on, for a server made before it
        /// was known (a relay learns it when its input opens): the TS listeners declare it
        /// when no access unit was muxed yet, else carry it only when it is the one they
        /// declared (other packets are left out and counted in `tsAudioDropped`).
        case audioFormat(AudioFormat)
    }

    /// Something worth a line in `--events`.
    public enum Event: Sendable {
        case readerJoined(ReaderID, peer: String)
        /// The reader's first entry point is queued; `burst` access units are queued at once
        /// (the cached GOP for `--join gop`, else 1).
        case readerStarted(ReaderID, joinMs: Double, burst: Int)
        case readerSkipped(ReaderID, accessUnits: Int, bytes: Int)
        case readerClosed(ReaderID, reason: String)
        case readerRefused(peer: String)
        case idrRequested
    }

    public struct Config: Sendable {
        /// Where readers connect, each listener with its wire format; empty for WebSocket
        /// viewers only.
        public var listeners: [Listening]
        public var broadcaster: BroadcasterConfig
        /// How long readers may take to drain their queues when capture ends.
        public var drainTimeout: Double
        /// How long an ended connection waits for its peer's end of stream (a viewer's close
        /// frame) before it closes: `Connection.closeGracefully`.
        public var closeTimeout: Double = 2
        /// The audio track the TS listeners declare and carry (`.audio` messages); nil for
        /// video only.
        public var audio: AudioFormat?
        public init(listeners: [Listening], broadcaster: BroadcasterConfig = BroadcasterConfig(), drainTimeout: Double = 2, audio: AudioFormat? = nil) {
            self.listeners = listeners
            self.broadcaster = broadcaster
            self.drainTimeout = drainTimeout
            self.audio = audio
        }
        /// One Annex-B listener at `listen` (or none).
        public init(listen: Endpoint?, broadcaster: BroadcasterConfig = BroadcasterConfig(), drainTimeout: Double = 2) {
            self.init(listeners: listen.map { [Listening($0)] } ?? [], broadcaster: broadcaster, drainTimeout: drainTimeout)
        }
        /// The first listener's address.
        public var listen: Endpoint? { listeners.first?.endpoint }
    }

    public let config: Config
    public let metrics: Metrics
    /// Where its first listener listens (with the kernel's port for port 0); nil without one.
    public var listenEndpoint: Endpoint? { listeners.first?.listener.boundEndpoint }
    /// Where its first listener listens, for a server made with one.
    public var boundEndpoint: Endpoint {
        guard let first = listeners.first else { preconditionFailure("a StreamServer without listen has no endpoint") }
        return first.listener.boundEndpoint
    }
    /// Every listener, as bound (the kernel's port for port 0), in the order configured.
    public var boundListeners: [Listening] { listeners.map { Listening($0.listener.boundEndpoint, format: $0.format) } }
    /// Readers connected now, of every kind (loop thread).
    public var readerCount: Int { readers.count }

    /// Take WebSocket viewers only when their `Host` names this machine (`localhost`,
    /// 127.0.0.0/8, `[::1]`) or they come through a reverse proxy (`X-Forwarded-Proto`),
    /// else 403: set for a loopback page, it defeats DNS rebinding (a foreign name resolved
    /// to 127.0.0.1 makes `Origin` and `Host` agree).
    public var viewersOnlyFromLoopbackHosts = false
    /// The page is served over TLS (`--tls`): a viewer's `Origin` is `https://` + `Host`.
    public var pageIsSecure = false

    /// Called on the loop thread when the encoder should make an IDR.
    public var onRequestIDR: () -> Void = {}
    /// There is an encoder behind `onRequestIDR` (`produce`): a WebRTC viewer's picture loss
    /// asks it for an IDR; else (a relay) the viewer gets the cached GOP again.
    public var makesIDRs = false
    public var onEvent: (Event) -> Void = { _ in }
    /// Called on the loop thread once capture ended and the readers are drained or closed.
    public var onFinished: () -> Void = {}

    let loop: EventLoop
    private var listeners: [(listener: Listener, format: WireFormat)] = []
    /// One per listener kind served that shares a form of each access unit (the TS muxer).
    private var packagers: [any UnitPackager] = []
    private var broadcaster: Broadcaster
    /// The readers in ascending order of their ids, as the `Broadcaster` keeps them (ids only
    /// grow, so a joining reader is appended): walked in that order for each access unit, so
    /// the `Broadcaster` finds each reader next to the one before instead of searching.
    private var readers: [(id: ReaderID, reader: any StreamReader)] = []
    /// What is ending and no reader (any more): refused connections, upgrades answered with
    /// an error, readers closed for a timeout or at the drain's end, until they are closed.
    private var closing: [ObjectIdentifier: AnyObject] = [:]
    /// Hands data from the capture thread to the loop: `send` never blocks.
    public private(set) var mailbox: Mailbox<Message>!
    private var ticker: LoopTimer?
    private var drainTimer: LoopTimer?
    private(set) var draining = false
    /// The drain is over: what is left is closing, then `onFinished`.
    private var finishing = false
    private var finished = false
    /// Readers that were given the stream's end while draining.
    private var ended: Set<ReaderID> = []

    /// Binds and listens at once, so a busy address is reported here (a `SocketError`); makes
    /// what its listeners' kinds share (a TS listener's muxer: a `MuxError` when FFmpeg's
    /// libraries are missing).
    public init(loop: EventLoop, config: Config, metrics: Metrics, clock: any Clock = SystemClock()) throws {
        self.loop = loop
        self.config = config
        self.metrics = metrics
        self.broadcaster = Broadcaster(config: config.broadcaster, clock: clock)
        for format in WireFormat.allCases where config.listeners.contains(where: { $0.format == format }) {
            if let packager = try format.kind.makePackager(config, metrics) { packagers.append(packager) }
        }
        for listening in config.listeners {
            let format = listening.format
            let listener = try Listener(loop: loop, endpoint: listening.endpoint) { [unowned self] socket in self.accept(socket, format) }
            listeners.append((listener, format))
        }
        // Bounded so a stalled loop cannot grow memory: at 30 fps, 256 access units is 8 s.
        self.mailbox = Mailbox(loop: loop, capacity: 256) { [unowned self] messages in self.receive(messages) }
    }

    /// Makes `packager`'s form of each access unit published from now on, beside the
    /// listeners' (WHEP's RTP payloads); on the loop's owner thread, before the loop runs or on it.
    func add(packager: any UnitPackager) { packagers.append(packager) }

    /// Starts accepting readers and the timer for timeouts and deferred IDR requests.
    public func start() {
        loop.preconditionOnLoop()
        for entry in listeners { entry.listener.start() }
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.handle(self.broadcaster.tick())
            if !Self.needsTicks(&self.broadcaster) { self.ticker?.stop() }
        }
        timer.start(after: 0.1, repeating: 0.1)
        ticker = timer
    }

    /// The timer ticks (every 100 ms) only while the `Broadcaster` has time-driven work: a
    /// reader with something queued, whose timeout runs, or a deferred IDR request. Readers
    /// that take each access unit as it comes leave nothing queued, and the loop sleeps
    /// until the next one instead of waking ten times a second. Called after whatever may
    /// queue something or defer a request.
    private func armTicker() {
        guard !finishing, let ticker, !ticker.isActive, Self.needsTicks(&broadcaster) else { return }
        ticker.start(after: 0.1, repeating: 0.1)
    }

    /// Read where it lies: the getter called on the stored broadcaster copied it first (its
    /// readers, their queues, the cached GOP), once an access unit.
    private static func needsTicks(_ broadcaster: inout Broadcaster) -> Bool { broadcaster.needsTicks }

    /// Asks for an IDR now (SIGUSR1), through the same coalescing as joins.
    public func forceIDR() {
        metrics.idrRequests.increment()
        onEvent(.idrRequested)
        onRequestIDR()
    }

    // MARK: - Capture side

    private func receive(_ messages: [Message]) {
        for message in messages {
            switch message {
            case .accessUnit(let unit):
                publish(unit, pts90k: nil)
            case .timedUnit(let unit, let pts90k):
                publish(unit, pts90k: pts90k)
            case .audio(let packet):
                guard !draining else { continue }
                for packager in packagers { packager.add(packet) }
            case .audioFormat(let format):
                for packager in packagers { packager.declare(audio: format) }
            case .captureEnded:
                beginDrain()
            case .sourceLost:
                broadcaster.forgetCachedGOP()
            }
        }
        armTicker()
    }

    /// Fans `unit` out: packaged once for each kind that shares a form of it (at `pts90k`,
    /// else its timestamp SEI's), written at once to every reader in step with the stream
    /// (ready, nothing queued: most readers, most of the time) in the `Broadcaster`'s one
    /// walk over them, and queued for the others, which are then written as they take it.
    private func publish(_ unit: AccessUnit, pts90k: UInt64?) {
        guard !draining else { return }
        var forms = WireForms()
        for packager in packagers { packager.package(unit, pts90k: pts90k ?? unit.timestamp?.pts90k, into: &forms) }
        var sent = ReaderProgress()
        var index = 0
        let publication = broadcaster.publish(unit, pts90k: pts90k, forms: forms) { id, entry in
            // The readers are walked in the order of their ids, as the `Broadcaster`'s.
            while index < readers.count && readers[index].id < id { index += 1 }
            guard index < readers.count, readers[index].id == id else { return nil }
            let reader = readers[index].reader
            guard reader.isReady else { return nil }
            let progress = reader.write(entry)
            sent.bytes += progress.bytes
            sent.units += progress.units
            return (progress.bytes, progress.units > 0)
        }
        count(sent)
        handle(publication.events)
        for id in publication.waiting { pump(id) }
    }

    // MARK: - Readers

    /// A connection a listener accepted: a reader of the listener's kind, or refused.
    private func accept(_ socket: Socket, _ format: WireFormat) {
        let peer = (try? socket.peerAddress().description) ?? "?"
        guard !draining else { return endWithoutReader(socket) }
        let context = readerContext
        let admitted = admit(peer: peer) { format.kind.makeReader(socket, peer: peer, context) }
        if !admitted { endWithoutReader(socket) }
    }

    /// What each reader is made with.
    var readerContext: ReaderContext {
        ReaderContext(loop: loop, closeTimeout: config.closeTimeout, bytesSent: metrics.bytesSent)
    }

    /// Takes a reader when the `Broadcaster` has room for one: `make` makes it, and it joins.
    /// Past `maxReaders`, counts and reports the refusal of `peer` and returns false: the
    /// caller ends the connection its way.
    func admit(peer: String, _ make: () -> any StreamReader) -> Bool {
        let outcome = broadcaster.addReader()
        guard let id = outcome.id else {
            metrics.readersRefused.increment()
            onEvent(.readerRefused(peer: peer))
            return false
        }
        join(id, make(), outcome.events)
        return true
    }

    /// Ends a connection that is no reader: writes `chunks` (an HTTP answer) and closes
    /// gracefully, kept in `closing` until it is closed.
    func endWithoutReader(_ socket: Socket, saying chunks: [ArraySlice<UInt8>] = []) {
        endWithoutReader(Connection(loop: loop, socket: socket), saying: chunks)
    }

    /// The same for a connection already made (a WebSocket upgrade refused).
    func endWithoutReader(_ connection: Connection, saying chunks: [ArraySlice<UInt8>] = []) {
        connection.start()
        if !chunks.isEmpty { connection.write(chunks: chunks) }
        let key = ObjectIdentifier(connection)
        closing[key] = connection
        connection.onClose = { [unowned self] _ in self.closed(key) }
        connection.closeGracefully(within: config.closeTimeout)
    }

    /// Starts a reader the `Broadcaster` accepted as `id`.
    private func join(_ id: ReaderID, _ reader: any StreamReader, _ events: [BroadcastEvent]) {
        reader.onProgress = { [unowned self] progress in self.progressed(id, progress) }
        reader.onClose = { [unowned self] reason in self.closed(id, reason: reason) }
        assert(readers.last.map { $0.id < id } ?? true, "readers join in the order of their ids")
        readers.append((id, reader))
        metrics.readersJoined.increment()
        metrics.readers.set(Double(readers.count))
        onEvent(.readerJoined(id, peer: reader.peer))
        reader.start()
        handle(events)
        pump(id)
        armTicker()
    }

    /// Hands the reader its queued access units while it takes them; the stream's end after
    /// the last one of a drain.
    private func pump(_ id: ReaderID) {
        guard let index = readerIndex(id) else { return }
        pump(id, readers[index].reader)
    }

    /// `pump(_:)` for a reader already at hand (every reader, for each access unit published).
    private func pump(_ id: ReaderID, _ reader: any StreamReader) {
        while reader.isReady || reader.isPacing && broadcaster.queue(of: id)?.isNearItsBound == true,
              let unit = broadcaster.nextUnitToWrite(id) {
            let progress = reader.write(unit)
            account(id, progress)
            guard progress.units > 0 else { break }
        }
        if draining && reader.isReady && broadcaster.queue(of: id)?.count ?? 0 == 0 && !ended.contains(id) {
            ended.insert(id)
            reader.end()
        }
    }

    /// Counts what a reader's writes finished, and tells the `Broadcaster`.
    private func account(_ id: ReaderID, _ progress: ReaderProgress) {
        guard progress.bytes > 0 || progress.units > 0 else { return }
        broadcaster.didWrite(id, bytes: progress.bytes, finished: progress.units > 0)
        count(progress)
    }

    /// Counts bytes and access units sent (to one reader, or to all written at once).
    private func count(_ progress: ReaderProgress) {
        if progress.bytes > 0 { metrics.bytesSent.increment(by: UInt64(progress.bytes)) }
        if progress.units > 0 { metrics.accessUnitsSent.increment(by: UInt64(progress.units)) }
    }

    private func progressed(_ id: ReaderID, _ progress: ReaderProgress) {
        account(id, progress)
        if progress.items > 0 { pump(id) }
    }

    private func closed(_ id: ReaderID, reason: String) {
        guard removeReader(id) != nil else { return }
        broadcaster.removeReader(id)
        metrics.readers.set(Double(readers.count))
        onEvent(.readerClosed(id, reason: reason))
        if draining && readers.isEmpty { finish() }
    }

    private func handle(_ events: [BroadcastEvent]) {
        for event in events {
            switch event {
            case .requestIDR:
                metrics.idrRequests.increment()
                onEvent(.idrRequested)
                onRequestIDR()
            case .readerStarted(let id, let latencyNs):
                // Handled before the reader's queue is written: what it holds now is the burst.
                let burst = broadcaster.queue(of: id)?.count ?? 0
                metrics.joinSeconds.observe(Double(latencyNs) / 1e9)
                metrics.joinBurst.observe(Double(burst))
                onEvent(.readerStarted(id, joinMs: Double(latencyNs) / 1e6, burst: burst))
            case .readerSkipped(let id, let units, let bytes):
                metrics.readerSkips.increment()
                metrics.skippedAccessUnits.increment(by: UInt64(units))
                onEvent(.readerSkipped(id, accessUnits: units, bytes: bytes))
            case .readerPassedOver(_, let units, _):
                metrics.skippedAccessUnits.increment(by: UInt64(units))
            case .readerTimedOut(let id):
                timedOut(id)
            }
        }
    }

    /// The `Broadcaster` removed a reader that made no progress: it ends now.
    private func timedOut(_ id: ReaderID) {
        metrics.readersTimedOut.increment()
        guard let reader = removeReader(id) else { return }
        broadcaster.removeReader(id)
        metrics.readers.set(Double(readers.count))
        let stalled = "no progress for \(Double(config.broadcaster.readerTimeoutNs) / 1e9) s"
        endNow(reader, .stalled(reason: stalled))
        onEvent(.readerClosed(id, reason: reader.closeReason.map { "\($0), then \(stalled)" } ?? stalled))
    }

    /// A reader lost its picture (a WebRTC viewer's PLI or FIR): the encoder's next IDR,
    /// coalesced and rate-limited like joins; a relay's reader starts again at the cached GOP
    /// (once per `idrMinIntervalNs` at most).
    func keyframeWanted(by id: ReaderID) {
        defer { armTicker() }
        if makesIDRs { return handle(broadcaster.requestKeyframe()) }
        if broadcaster.restartAtCachedGOP(id) { pump(id) }
    }

    /// The id a reader was admitted as.
    func readerID(of reader: any StreamReader) -> ReaderID? {
        readers.first { $0.reader === reader }?.id
    }

    /// Where reader `id` is in `readers`, or nil.
    private func readerIndex(_ id: ReaderID) -> Int? { readers.index(ofReader: id) { $0.id } }

    /// Takes reader `id` out of `readers`: the reader, or nil when it was not there.
    private func removeReader(_ id: ReaderID) -> (any StreamReader)? {
        guard let index = readerIndex(id) else { return nil }
        return readers.remove(at: index).reader
    }

    /// The stream's codec string (`avc1.64001f`, its codec's `codecString`) from the cached
    /// GOP's parameter sets; nil before an IDR. A WHEP answer picks its payload type by it.
    var streamCodecString: String? {
        guard let idr = broadcaster.cachedGOP.first else { return nil }
        let inline = idr.nalUnits.filter { if case .parameterSet = idr.codec.role(of: $0) { true } else { false } }
        return idr.codec.codecString(idr.parameterSets + inline)
    }

    // MARK: - Ending

    private func beginDrain() {
        guard !draining else { return }
        draining = true
        for entry in listeners { entry.listener.close() }
        if readers.isEmpty { return finish() }
        for (id, reader) in readers { pump(id, reader) }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.finish() }
        timer.start(after: config.drainTimeout)
        drainTimer = timer
    }

    /// The drain is over (every reader done, or its time up): the readers still there end
    /// now, and once every connection is closed, `onFinished`.
    private func finish() {
        guard !finishing else { return }
        finishing = true
        ticker?.stop()
        drainTimer?.stop()
        for (id, reader) in readers {
            broadcaster.removeReader(id)
            endNow(reader, .streamEnded)
        }
        readers = []
        metrics.readers.set(0)
        // Upgrades refused meanwhile (a page trying again) must not hold the end off for ever.
        let deadline = LoopTimer(loop: loop) { [unowned self] in self.finishIfClosed(evenIfNot: true) }
        deadline.start(after: config.closeTimeout + 0.5)
        drainTimer = deadline
        finishIfClosed()
    }

    private func finishIfClosed(evenIfNot: Bool = false) {
        guard finishing, !finished, evenIfNot || (readers.isEmpty && closing.isEmpty) else { return }
        finished = true
        drainTimer?.stop()
        onFinished()
    }

    /// Ends a reader that is no longer in `readers` before its queue is written (`endNow`:
    /// what was not begun is dropped, the stream's end follows what is being written) and
    /// keeps it in `closing` until it is closed; nothing more it writes is counted.
    private func endNow(_ reader: any StreamReader, _ ending: ReaderEnding) {
        guard !reader.isClosed else { return }
        let key = ObjectIdentifier(reader)
        closing[key] = reader
        reader.onProgress = nil
        reader.onClose = { [unowned self] _ in self.closed(key) }
        reader.endNow(ending)
    }

    /// Something in `closing` closed.
    private func closed(_ key: ObjectIdentifier) {
        closing[key] = nil
        finishIfClosed()
    }
}
