import EventLoop
import H264
import Relay

/// Serves the encoded stream to every connected reader: the loop side of `nalcast produce`.
///
/// The capture thread hands access units over through `mailbox` (`send(.accessUnit(au))`)
/// and never waits; the `Broadcaster` decides what each reader gets (join policy, lag and
/// byte bounds, timeouts) and each reader's `Connection` writes it straight from the shared
/// buffers. When capture ends (`.captureEnded`), readers get up to `drainTimeout` seconds
/// to take what is queued, then everything closes and `onFinished` runs.
///
/// Loop-owned: create it before the loop starts or on the loop thread, use it there only.
public final class StreamServer {
    public enum Message: Sendable {
        case accessUnit(AccessUnit)
        /// Capture stopped (input ended, a limit was reached, or a signal): drain and finish.
        case captureEnded
    }

    /// Something worth a line in `--events`.
    public enum Event: Sendable {
        case readerJoined(ReaderID, peer: String)
        case readerStarted(ReaderID, joinMs: Double)
        case readerSkipped(ReaderID, accessUnits: Int, bytes: Int)
        case readerClosed(ReaderID, reason: String)
        case readerRefused(peer: String)
        case idrRequested
    }

    public struct Config: Sendable {
        public var listen: Endpoint
        public var broadcaster: BroadcasterConfig
        /// How long readers may take to drain their queues when capture ends.
        public var drainTimeout: Double
        public init(listen: Endpoint, broadcaster: BroadcasterConfig = BroadcasterConfig(), drainTimeout: Double = 2) {
            self.listen = listen
            self.broadcaster = broadcaster
            self.drainTimeout = drainTimeout
        }
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

        public init(registry: MetricsRegistry) {
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
        }
    }

    public let config: Config
    public let metrics: Metrics
    /// Where it listens (with the kernel's port for port 0).
    public var boundEndpoint: Endpoint { listener.boundEndpoint }
    /// Readers connected now (loop thread).
    public var readerCount: Int { connections.count }

    /// Called on the loop thread when the encoder should make an IDR.
    public var onRequestIDR: () -> Void = {}
    public var onEvent: (Event) -> Void = { _ in }
    /// Called on the loop thread once capture ended and the readers are drained or closed.
    public var onFinished: () -> Void = {}

    private let loop: EventLoop
    private var listener: Listener!
    private var broadcaster: Broadcaster
    private var connections: [ReaderID: Connection] = [:]
    /// Hands data from the capture thread to the loop: `send` never blocks.
    public private(set) var mailbox: Mailbox<Message>!
    private var ticker: LoopTimer?
    private var drainTimer: LoopTimer?
    private var draining = false
    private var finished = false
    /// Readers that were sent the end-of-stream NAL unit while draining.
    private var ended: Set<ReaderID> = []
    /// `00 00 00 01` + NAL header type 11 (end of stream).
    static let endOfStream: ArraySlice<UInt8> = [0, 0, 0, 1, 0x0b]

    /// Binds and listens at once, so a busy address is reported here.
    public init(loop: EventLoop, config: Config, metrics: Metrics, clock: any Clock = SystemClock()) throws(SocketError) {
        self.loop = loop
        self.config = config
        self.metrics = metrics
        self.broadcaster = Broadcaster(config: config.broadcaster, clock: clock)
        self.listener = try Listener(loop: loop, endpoint: config.listen) { [unowned self] socket in self.accept(socket) }
        // Bounded so a stalled loop cannot grow memory: at 30 fps, 256 access units is 8 s.
        self.mailbox = Mailbox(loop: loop, capacity: 256) { [unowned self] messages in self.receive(messages) }
    }

    /// Starts accepting readers and the timer for timeouts and deferred IDR requests.
    public func start() {
        loop.preconditionOnLoop()
        listener.start()
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
                handle(broadcaster.publish(unit))
                for id in connections.keys { pump(id) }
            case .captureEnded:
                beginDrain()
            }
        }
    }

    // MARK: - Readers

    private func accept(_ socket: Socket) {
        let peer = (try? socket.peerAddress().description) ?? "?"
        guard !draining else {
            socket.close()
            return
        }
        let outcome = broadcaster.addReader()
        guard let id = outcome.id else {
            metrics.readersRefused.increment()
            onEvent(.readerRefused(peer: peer))
            socket.close()
            return
        }
        // Small kernel buffers: lag must show in our queue, where it can be skipped.
        try? socket.configureForStreaming()
        let connection = Connection(loop: loop, socket: socket)
        connection.onProgress = { [unowned self] progress in self.progressed(id, progress) }
        connection.onClose = { [unowned self] reason in self.closed(id, reason: reason.description) }
        connections[id] = connection
        connection.start()
        metrics.readersJoined.increment()
        metrics.readers.set(Double(connections.count))
        onEvent(.readerJoined(id, peer: peer))
        handle(outcome.events)
        pump(id)
    }

    /// Writes queued access units to the reader until the socket takes no more.
    private func pump(_ id: ReaderID) {
        guard let connection = connections[id], connection.isIdle else { return }
        while let nals = broadcaster.nextToWrite(id) {
            let progress = connection.write(nals)
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
            // An end-of-stream NAL unit tells the reader the last access unit is complete (a
            // consumer keeps it rather than dropping it as possibly cut off).
            ended.insert(id)
            connection.write(chunks: [StreamServer.endOfStream])
            connection.closeAfterFlush()
        }
    }

    private func progressed(_ id: ReaderID, _ progress: Connection.Progress) {
        metrics.bytesSent.increment(by: UInt64(progress.bytes))
        broadcaster.didWrite(id, bytes: progress.bytes, finished: progress.finishedItems > 0)
        if progress.finishedItems > 0 {
            metrics.accessUnitsSent.increment(by: UInt64(progress.finishedItems))
            pump(id)
        }
    }

    private func closed(_ id: ReaderID, reason: String) {
        guard connections.removeValue(forKey: id) != nil else { return }
        broadcaster.removeReader(id)
        metrics.readers.set(Double(connections.count))
        onEvent(.readerClosed(id, reason: reason))
        if draining && connections.isEmpty { finish() }
    }

    private func handle(_ events: [BroadcastEvent]) {
        for event in events {
            switch event {
            case .requestIDR:
                metrics.idrRequests.increment()
                onEvent(.idrRequested)
                onRequestIDR()
            case .readerStarted(let id, let latencyNs):
                metrics.joinSeconds.observe(Double(latencyNs) / 1e9)
                onEvent(.readerStarted(id, joinMs: Double(latencyNs) / 1e6))
            case .readerSkipped(let id, let units, let bytes):
                metrics.readerSkips.increment()
                metrics.skippedAccessUnits.increment(by: UInt64(units))
                onEvent(.readerSkipped(id, accessUnits: units, bytes: bytes))
            case .readerPassedOver(_, let units, _):
                metrics.skippedAccessUnits.increment(by: UInt64(units))
            case .readerTimedOut(let id):
                metrics.readersTimedOut.increment()
                if let connection = connections.removeValue(forKey: id) {
                    connection.close()
                    metrics.readers.set(Double(connections.count))
                    onEvent(.readerClosed(id, reason: "no progress for \(Double(config.broadcaster.readerTimeoutNs) / 1e9) s"))
                }
            }
        }
    }

    // MARK: - Ending

    private func beginDrain() {
        guard !draining else { return }
        draining = true
        listener.close()
        if connections.isEmpty { return finish() }
        for id in connections.keys { pump(id) }
        let timer = LoopTimer(loop: loop) { [unowned self] in self.finish() }
        timer.start(after: config.drainTimeout)
        drainTimer = timer
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        ticker?.stop()
        drainTimer?.stop()
        for (id, connection) in connections {
            connection.close()
            broadcaster.removeReader(id)
        }
        connections = [:]
        metrics.readers.set(0)
        onFinished()
    }
}
