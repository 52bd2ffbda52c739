import Clocks
import EventLoop
import H264
import Media
import Output
import Relay

/// Serves the encoded stream to every connected reader: the loop side of `nalcast produce`.
///
/// A reader is a socket and its framing: raw Annex-B for a reader of a `--listen` socket,
/// MPEG-TS for a reader of a `ts:` listener (`WireFormat`: each access unit muxed once with
/// the audio since the previous one, `TransportStreamUnit`, its continuity counters kept
/// per reader by `TSContinuity`), one WebSocket binary message per access unit
/// (`AccessUnitMessage`, `WebSocketViewer`) for a viewer of the browser page, handed over by
/// an `HTTPServer` route (`webSocketRoute`) after the upgrade. All are readers of the same
/// `Broadcaster`: the same join at an IDR, skip to the next IDR when behind, timeout, and
/// `maxReaders` counting all.
///
/// The capture thread hands access units over through `mailbox` (`send(.accessUnit(au))`)
/// and never waits; the `Broadcaster` decides what each reader gets (join policy, lag and
/// byte bounds, timeouts) and each reader's `Connection` writes it straight from the shared
/// buffers. When capture ends (`.captureEnded`), readers get up to `drainTimeout` seconds
/// to take what is queued, then everything closes and `onFinished` runs.
///
/// No connection ends with a reset: every end (the stream's, a refusal past `maxReaders`, a
/// timeout, a viewer's protocol error) is `Connection.closeGracefully`, at most
/// `closeTimeout` seconds, and `onFinished` waits for them (`closing`).
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

    /// Counters for the status line and `/metrics`, readable from any thread.
    public struct Metrics: Sendable {
        public let accessUnitsSent: Counter
        public let bytesSent: Counter
        public let readersJoined: Counter
        public let readersRefused: Counter
        public let readerSkips: Counter
        public let skippedAccessUnits: Counter
        public let readersTimedOut: Counter
        public let idrRequests: Counter
        public let readers: Gauge
        public let joinSeconds: Histogram
        public let joinBurst: Histogram
        /// With a TS listener: its audio packets left out (before the first IDR, out of order).
        public let tsAudioDropped: Counter?
        /// With a TS listener: access units its muxer left out (before the first IDR, no media time).
        public let tsUnitsDropped: Counter?

        /// `transportStream`: a TS listener is served, and its own counters are registered.
        public init(registry: MetricsRegistry, transportStream: Bool = false) {
            accessUnitsSent = registry.counter("nalcast_access_units_sent_total", help: "Access units written to readers.")
            bytesSent = registry.counter("nalcast_bytes_sent_total", help: "Bytes written to readers.")
            readersJoined = registry.counter("nalcast_readers_joined_total", help: "Readers that connected and were accepted.")
            readersRefused = registry.counter("nalcast_readers_refused_total", help: "Readers closed at once because --max-readers were connected.")
            readerSkips = registry.counter("nalcast_reader_skips_total", help: "Times a reader fell behind and skipped to the next IDR.")
            skippedAccessUnits = registry.counter("nalcast_reader_skipped_access_units_total", help: "Access units readers skipped.")
            readersTimedOut = registry.counter("nalcast_readers_timed_out_total", help: "Readers closed for making no progress for --reader-timeout.")
            idrRequests = registry.counter("nalcast_idr_requests_total", help: "IDRs asked of the encoder for joining readers or SIGUSR1.")
            readers = registry.gauge("nalcast_readers", help: "Readers connected now.")
            joinSeconds = registry.histogram(
                "nalcast_join_seconds", help: "Time from a reader's connect to its first decodable picture being queued.",
                buckets: [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12])
            joinBurst = registry.histogram(
                "nalcast_join_burst_access_units", help: "Access units queued at once for a starting reader: its first IDR, and for --join gop the cached GOP behind it.",
                buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
            tsAudioDropped = !transportStream ? nil : registry.counter("nalcast_ts_audio_packets_dropped_total", help: "Audio packets the MPEG-TS listeners left out (before the first IDR, out of media time order, or over 256 waiting).")
            tsUnitsDropped = !transportStream ? nil : registry.counter("nalcast_ts_access_units_dropped_total", help: "Access units the MPEG-TS listeners left out (before the first IDR, or without media time).")
        }
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
    /// Readers connected now, of both framings (loop thread).
    public var readerCount: Int { readers.count }

    /// Take WebSocket viewers only when their `Host` names this machine (`localhost`,
    /// 127.0.0.0/8, `[::1]`) or they come through a reverse proxy (`X-Forwarded-Proto`),
    /// else 403: set for a loopback page, it defeats DNS rebinding (a foreign name resolved
    /// to 127.0.0.1 makes `Origin` and `Host` agree).
    public var viewersOnlyFromLoopbackHosts = false

    /// Called on the loop thread when the encoder should make an IDR.
    public var onRequestIDR: () -> Void = {}
    public var onEvent: (Event) -> Void = { _ in }
    /// Called on the loop thread once capture ended and the readers are drained or closed.
    public var onFinished: () -> Void = {}

    let loop: EventLoop
    private var listeners: [(listener: Listener, format: WireFormat)] = []
    /// The TS listeners' muxer; nil without one.
    private var transportStream: TransportStreamPackaging?
    /// Internal for the viewers' extension (`StreamServer+WebSocket`).
    var broadcaster: Broadcaster
    private var readers: [ReaderID: Reader] = [:]
    /// Connections ending that are no reader (any more): refused ones, upgrades answered with
    /// an error, readers closed for a timeout or at the drain's end, until they are closed.
    private var closing: [ObjectIdentifier: Connection] = [:]
    /// Hands data from the capture thread to the loop: `send` never blocks.
    public private(set) var mailbox: Mailbox<Message>!
    private var ticker: LoopTimer?
    private var drainTimer: LoopTimer?
    private(set) var draining = false
    /// The drain is over: what is left is closing, then `onFinished`.
    private var finishing = false
    private var finished = false
    /// Readers that were sent the end-of-stream NAL unit while draining.
    private var ended: Set<ReaderID> = []

    /// Binds and listens at once, so a busy address is reported here (a `SocketError`); with
    /// a TS listener, sets up its muxer (a `MuxError` when FFmpeg's libraries are missing).
    public init(loop: EventLoop, config: Config, metrics: Metrics, clock: any Clock = SystemClock()) throws {
        self.loop = loop
        self.config = config
        self.metrics = metrics
        self.broadcaster = Broadcaster(config: config.broadcaster, clock: clock)
        if config.listeners.contains(where: { $0.format == .mpegTS }) {
            transportStream = try TransportStreamPackaging(audio: config.audio, droppedAudio: metrics.tsAudioDropped ?? Counter(), droppedUnits: metrics.tsUnitsDropped ?? Counter())
        }
        for listening in config.listeners {
            let format = listening.format
            let listener = try Listener(loop: loop, endpoint: listening.endpoint) { [unowned self] socket in self.accept(socket, format) }
            listeners.append((listener, format))
        }
        // Bounded so a stalled loop cannot grow memory: at 30 fps, 256 access units is 8 s.
        self.mailbox = Mailbox(loop: loop, capacity: 256) { [unowned self] messages in self.receive(messages) }
    }

    /// Starts accepting readers and the timer for timeouts and deferred IDR requests.
    public func start() {
        loop.preconditionOnLoop()
        for entry in listeners { entry.listener.start() }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.handle(self.broadcaster.tick()) }
        timer.start(after: 0.1, repeating: 0.1)
        ticker = timer
    }

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
                guard !draining else { continue }
                let ts = transportStream?.package(unit, pts90k: unit.timestamp?.pts90k)
                handle(broadcaster.publish(unit, transportStream: ts))
                for id in readers.keys { pump(id) }
            case .timedUnit(let unit, let pts90k):
                guard !draining else { continue }
                let ts = transportStream?.package(unit, pts90k: pts90k)
                handle(broadcaster.publish(unit, pts90k: pts90k, transportStream: ts))
                for id in readers.keys { pump(id) }
            case .audio(let packet):
                guard !draining else { continue }
                transportStream?.add(packet)
            case .audioFormat(let format):
                transportStream?.declare(audio: format)
            case .captureEnded:
                beginDrain()
            case .sourceLost:
                broadcaster.forgetCachedGOP()
            }
        }
    }

    // MARK: - Readers

    /// A reader's socket and how its bytes are framed. Loop-owned.
    private final class Reader {
        /// A reader of a TS listener: its continuity counters; nil for Annex-B readers and viewers.
        var continuity: TSContinuity?
        let connection: Connection
        /// The WebSocket side of a viewer; nil for a raw Annex-B reader.
        let viewer: WebSocketViewer?
        /// A raw reader's framing: each access unit goes out with the next one's AUD behind
        /// it, so the reader's parser releases it at once (`AccessUnitDelimiting`).
        var delimiting = AccessUnitDelimiting()
        init(connection: Connection, viewer: WebSocketViewer?) {
            self.connection = connection
            self.viewer = viewer
        }
    }

    private func accept(_ socket: Socket, _ format: WireFormat) {
        let peer = (try? socket.peerAddress().description) ?? "?"
        guard !draining else { return endWithoutReader(socket) }
        let outcome = broadcaster.addReader()
        guard let id = outcome.id else {
            metrics.readersRefused.increment()
            onEvent(.readerRefused(peer: peer))
            return endWithoutReader(socket)
        }
        join(id, socket: socket, peer: peer + (format == .mpegTS ? " (mpegts)" : ""), viewer: nil, format: format, outcome.events)
    }

    /// Ends a connection that is no reader: writes `chunks` (an HTTP answer) and closes
    /// gracefully, kept in `closing` until it is closed.
    func endWithoutReader(_ socket: Socket, saying chunks: [ArraySlice<UInt8>] = []) {
        let connection = Connection(loop: loop, socket: socket)
        connection.start()
        if !chunks.isEmpty { connection.write(chunks: chunks) }
        linger(connection)
    }

    /// Keeps `connection` in `closing` while it closes gracefully.
    private func linger(_ connection: Connection) {
        let key = ObjectIdentifier(connection)
        closing[key] = connection
        connection.onProgress = nil
        connection.onClose = { [unowned self] _ in
            self.closing[key] = nil
            self.finishIfClosed()
        }
        connection.closeGracefully(within: config.closeTimeout)
    }

    /// Starts a reader the `Broadcaster` accepted as `id`.
    func join(_ id: ReaderID, socket: Socket, peer: String, viewer: WebSocketViewer?, format: WireFormat = .annexB, _ events: [BroadcastEvent]) {
        // Small kernel buffers: lag must show in our queue, where it can be skipped.
        try? socket.configureForStreaming()
        let connection = Connection(loop: loop, socket: socket)
        connection.onProgress = { [unowned self] progress in self.progressed(id, progress, viewer) }
        connection.onClose = { [unowned self] reason in self.closed(id, reason: reason.description) }
        let reader = Reader(connection: connection, viewer: viewer)
        if format == .mpegTS { reader.continuity = TSContinuity() }
        readers[id] = reader
        metrics.readersJoined.increment()
        metrics.readers.set(Double(readers.count))
        onEvent(.readerJoined(id, peer: peer))
        viewer?.begin(connection)
        connection.start()
        handle(events)
        pump(id)
    }

    /// Writes queued access units to the reader until the socket takes no more: each one
    /// framed as its listener's format says (a raw reader's Annex-B, delimited; a TS reader's
    /// TS unit with its continuity counters continued), the stream's end after the last one
    /// of a drain.
    private func pump(_ id: ReaderID) {
        guard let reader = readers[id] else { return }
        if let viewer = reader.viewer { return pumpViewer(id, reader.connection, viewer) }
        let connection = reader.connection
        // A connection whose write just failed is closed (and idle) before it says so on the
        // loop's next turn; its in-flight access unit stays unfinished until then.
        guard !connection.isClosed, connection.isIdle else { return }
        while let unit = broadcaster.nextUnitToWrite(id) {
            let chunks: [ArraySlice<UInt8>]
            if reader.continuity != nil {
                // An access unit the muxer left out (counted there) is nothing for this reader.
                // (`continuity` is a value kept in the reader: it advances in place.)
                chunks = [unit.transportStream.map { reader.continuity!.bytes(for: $0) } ?? []]
            } else {
                chunks = reader.delimiting.frame(unit.nalUnits)
            }
            let progress = connection.write(chunks: chunks)
            metrics.bytesSent.increment(by: UInt64(progress.bytes))
            if progress.finishedItems > 0 {
                broadcaster.didWrite(id, bytes: progress.bytes, finished: true)
                metrics.accessUnitsSent.increment()
                continue
            }
            if progress.bytes > 0 { broadcaster.didWrite(id, bytes: progress.bytes, finished: false) }
            break
        }
        if draining && connection.isIdle && broadcaster.queue(of: id)?.count ?? 0 == 0 && !ended.contains(id) {
            ended.insert(id)
            if reader.continuity == nil {
                // An end-of-sequence NAL unit tells the reader the stream ended rather than
                // broke (a consumer keeps the last access unit rather than dropping it as
                // possibly cut off). It follows the AUD sent behind the last picture, which
                // opened an access unit that never comes: see `AccessUnitDelimiting` for why
                // this ending. A TS reader's stream just ends.
                connection.write(chunks: reader.delimiting.closing())
            }
            connection.closeGracefully(within: config.closeTimeout)
        }
    }

    /// Writes queued access units to a WebSocket viewer, one message each, behind whatever
    /// control frames it has queued; at the end of a drain, a close frame (1001).
    private func pumpViewer(_ id: ReaderID, _ connection: Connection, _ viewer: WebSocketViewer) {
        guard !viewer.isClosing else { return }
        while !viewer.isUnitInFlight, let unit = broadcaster.nextUnitToWrite(id) {
            let progress = viewer.write(unit)
            metrics.bytesSent.increment(by: UInt64(progress.bytes))
            let units = viewer.finished(items: progress.finishedItems)
            broadcaster.didWrite(id, bytes: progress.bytes, finished: units > 0)
            guard units > 0 else { break }
            metrics.accessUnitsSent.increment()
        }
        if draining && !viewer.isUnitInFlight && broadcaster.queue(of: id)?.count ?? 0 == 0 && !ended.contains(id) {
            ended.insert(id)
            viewer.end()
        }
    }

    private func progressed(_ id: ReaderID, _ progress: Connection.Progress, _ viewer: WebSocketViewer?) {
        metrics.bytesSent.increment(by: UInt64(progress.bytes))
        // A viewer's items are access units and control frames; only the former are the
        // broadcaster's.
        let units = viewer?.finished(items: progress.finishedItems) ?? progress.finishedItems
        broadcaster.didWrite(id, bytes: progress.bytes, finished: units > 0)
        if units > 0 { metrics.accessUnitsSent.increment(by: UInt64(units)) }
        if progress.finishedItems > 0 { pump(id) }
    }

    private func closed(_ id: ReaderID, reason: String) {
        guard let reader = readers.removeValue(forKey: id) else { return }
        broadcaster.removeReader(id)
        metrics.readers.set(Double(readers.count))
        onEvent(.readerClosed(id, reason: reader.viewer?.closeReason ?? reason))
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
                metrics.readersTimedOut.increment()
                if let reader = readers.removeValue(forKey: id) {
                    broadcaster.removeReader(id)
                    metrics.readers.set(Double(readers.count))
                    let stalled = "no progress for \(Double(config.broadcaster.readerTimeoutNs) / 1e9) s"
                    endNow(reader, .policyViolation, reason: stalled)
                    onEvent(.readerClosed(id, reason: reader.viewer?.closeReason.map { "\($0), then \(stalled)" } ?? stalled))
                }
            }
        }
    }

    // MARK: - Ending

    private func beginDrain() {
        guard !draining else { return }
        draining = true
        for entry in listeners { entry.listener.close() }
        if readers.isEmpty { return finish() }
        for id in readers.keys { pump(id) }
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
            endNow(reader, .goingAway, reason: WebSocketViewer.streamEnded)
        }
        readers = [:]
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

    /// Ends a reader that is no longer in `readers` before its queue is written: what was not
    /// begun is dropped, the access unit being written goes on, then the stream's end (a raw
    /// reader's end of sequence, a viewer's close frame with `code`) and a graceful close.
    private func endNow(_ reader: Reader, _ code: WebSocketCloseCode, reason: String) {
        let connection = reader.connection
        guard !connection.isClosed else { return }
        if let viewer = reader.viewer {
            viewer.endNow(code, reason: reason)
        } else if !connection.isEnding {
            connection.dropUnstarted()
            // After the access unit being written (an end of sequence alone is no stream).
            if reader.continuity == nil && connection.bytesSent > 0 { connection.write(chunks: reader.delimiting.closing()) }
        }
        linger(connection)
    }
}
