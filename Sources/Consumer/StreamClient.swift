import Clocks
import Delivery
import Output
import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a stream from `tcp://HOST:PORT` or `unix:PATH` on the event loop, and keeps doing
/// so: after the end of the stream or an error it connects again with `ReconnectBackoff`
/// (100 ms doubling to 5 s, with jitter) until it succeeds or the backoff gives up.
///
/// A connection that stays open but brings nothing for `stallTimeout` (a peer that hangs, a
/// network that went away without a reset) is reported (`.stalled`), dropped as a failure
/// and connected again, as a demuxed live source is (`--stall-timeout`).
///
/// States and what is reported (once per change, never per attempt): connecting →
/// connected → disconnected (reconnecting) → connected … → gave up; while down, a
/// `.retrying` progress report at most every 2 s (`ReconnectBackoff.progressDue`).
///
/// Loop-owned: create, start, stop and release it on the loop thread.
public final class StreamClient {
    public let endpoint: Endpoint
    private let loop: EventLoop
    private let addresses: [SocketAddress]
    private let intake: StreamIntake
    private var backoff: ReconnectBackoff
    private let onEvent: (InputEvent) -> Void
    private var connector: Connector?
    private var socket: Socket?
    private var reader: IOWatcher?
    private var retry: LoopTimer?
    /// Seconds without a byte after which a connection counts as stalled; nil: never.
    private let stallTimeout: Double?
    private var stallCheck: LoopTimer?
    private var lastDataNs: UInt64 = 0
    private var buffer = [UInt8](repeating: 0, count: 256 << 10)
    private var attempts = 0
    private var everConnected = false
    private var reportedDown = false
    private var stopped = false
    private var addressIndex = 0
    private var lastFailure = ""
    private var random = SystemRandomNumberGenerator()
    public private(set) var isConnected = false

    /// Resolves the endpoint now (getaddrinfo may block: do it before the loop runs).
    public init(loop: EventLoop, endpoint: Endpoint, intake: StreamIntake, backoff: ReconnectBackoff.Config, stallTimeout: Double? = nil,
                onEvent: @escaping (InputEvent) -> Void) throws(SocketError) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.endpoint = endpoint
        self.addresses = try SocketAddress.resolve(endpoint)
        self.intake = intake
        self.backoff = ReconnectBackoff(config: backoff)
        self.stallTimeout = stallTimeout
        self.onEvent = onEvent
    }

    public func start() {
        loop.preconditionOnLoop()
        connect()
    }

    /// Closes the connection and stops retrying. Reports nothing.
    public func stop() {
        loop.preconditionOnLoop()
        stopped = true
        connector?.cancel()
        connector = nil
        reader = nil
        socket = nil
        retry = nil
        stallCheck = nil
    }

    private func connect() {
        guard !stopped else { return }
        attempts += 1
        let address = addresses[addressIndex % addresses.count]
        addressIndex += 1
        let connector = Connector(loop: loop, address: address) { [unowned self] result in
            self.connector = nil
            switch result {
            case .success(let socket): self.connected(socket)
            case .failure(let error): self.failed(error.description)
            }
        }
        self.connector = connector
        connector.start()
    }

    private func connected(_ socket: Socket) {
        guard !stopped else { return }
        self.socket = socket
        isConnected = true
        if everConnected { intake.metrics.reconnects.increment() }
        report(.opened(attempts: attempts, opening: nil))
        everConnected = true
        reportedDown = false
        attempts = 0
        backoff.connected()
        let reader = IOWatcher(loop: loop, fd: socket.fd, events: .read) { [unowned self] _ in self.readAvailable() }
        self.reader = reader
        reader.start()
        lastDataNs = MonotonicClock.nanoseconds
        if let stallTimeout {
            let check = stallCheck ?? LoopTimer(loop: loop) { [unowned self] in self.checkStall() }
            stallCheck = check
            let every = min(1, stallTimeout / 4)
            check.start(after: every, repeating: every)
        }
    }

    /// Nothing for `stallTimeout`: stalled. What is waiting in the socket is read first, so
    /// a process that was itself stopped (SIGSTOP, a suspended machine) and finds its data
    /// waiting is not taken for a stalled peer.
    private func checkStall() {
        guard let stallTimeout, socket != nil else { return }
        readAvailable()
        guard socket != nil else { return }
        let quiet = Double(MonotonicClock.nanoseconds - lastDataNs) / 1e9
        guard quiet >= stallTimeout else { return }
        intake.metrics.stalls.increment()
        report(.stalled(seconds: quiet))
        lost("stalled", cleanly: false)
    }

    private func report(_ what: InputEvent.What) { onEvent(InputEvent(.connection, endpoint.description, what)) }

    private func readAvailable() {
        guard let socket else { return }
        // A few reads per wake-up, so one busy stream cannot starve the loop.
        for _ in 0..<4 {
            let result: Int?
            do {
                result = try buffer.withUnsafeMutableBytes { raw throws(Errno) in try socket.read(into: raw) }
            } catch {
                lost("\(error)", cleanly: false)
                return
            }
            guard let n = result else { return }
            if n == 0 {
                lost("closed by peer", cleanly: true)
                return
            }
            lastDataNs = MonotonicClock.nanoseconds
            // An exact-size copy: the NAL units cut from it share it while sinks hold them.
            intake.push(Array(buffer[0..<n]))
            // The intake may have handed the input to another reader (MPEG-TS found).
            if stopped { return }
            if n < buffer.count { return }
        }
    }

    /// The connection ended: `cleanly` when the peer closed it (the stream ends as a file
    /// does, its last access unit written), else it failed (the access unit that was
    /// arriving is dropped, and the reason says so).
    private func lost(_ reason: String, cleanly: Bool) {
        var reason = reason
        reader = nil
        socket = nil
        stallCheck?.stop()
        isConnected = false
        if cleanly {
            intake.connectionClosed()
        } else {
            let dropped = intake.inputFailed()
            if dropped > 0 { reason += "; an unfinished access unit dropped (\(dropped) bytes)" }
        }
        lastFailure = reason
        reportedDown = true
        report(.lost(reason: reason, retrying: !backoff.givesUp(now: MonotonicClock.nanoseconds)))
        scheduleRetry()
    }

    private func failed(_ reason: String) {
        lastFailure = reason
        scheduleRetry()
        // Told once, and only when there is a retry to tell about.
        if !reportedDown && !stopped {
            reportedDown = true
            report(.unreachable(reason: reason))
        }
    }

    private func scheduleRetry() {
        guard !stopped else { return }
        let now = MonotonicClock.nanoseconds
        guard let delay = backoff.nextDelay(now: now, random: Double.random(in: 0...1, using: &random)) else {
            stopped = true
            report(.gaveUp(reason: lastFailure, everOpened: everConnected, endedCleanly: intake.lastConnectionEndedCleanly))
            return
        }
        if reportedDown && backoff.progressDue(now: now) {
            report(.retrying(attempt: attempts, reason: lastFailure, downFor: backoff.downFor(now: now), nextIn: delay))
        }
        let timer = retry ?? LoopTimer(loop: loop) { [unowned self] in self.connect() }
        retry = timer
        timer.start(after: delay)
    }
}

