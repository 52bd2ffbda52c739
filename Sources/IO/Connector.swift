#if canImport(Glibc)
import Clocks
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An outgoing connect bounded by a timeout: the one way nalcast connects, on the loop
/// (an instance, for `consume`'s `StreamClient`) or from a thread that may wait (`connect(to:timeout:)`,
/// for the forward sink and `probe`). Both take the same steps: a non-blocking `connect`,
/// a wait for writability bounded by the timeout, then the result from `SO_ERROR`; a
/// timeout fails as `connect: Connection timed out`.
///
/// An instance calls `onComplete` once, from a watcher or timer callback (never from inside
/// `start`), with the connected non-blocking socket or the error naming `connect`. Releasing
/// the connector before then abandons the attempt.
///
/// Loop-owned (an instance): use it and release it on the loop thread.
public final class Connector {
    /// How long an instance waits for a connection unless told otherwise.
    public static let defaultTimeout: Double = 5

    private let loop: EventLoop
    private let address: SocketAddress
    private let timeout: Double
    private var socket: Socket?
    private var watcher: IOWatcher?
    private var timer: LoopTimer?
    private let onComplete: (Result<Socket, Errno>) -> Void

    public init(loop: EventLoop, address: SocketAddress, timeout: Double = Connector.defaultTimeout, onComplete: @escaping (Result<Socket, Errno>) -> Void) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.address = address
        self.timeout = timeout
        self.onComplete = onComplete
    }

    /// Starts connecting. The corresponding C functions are `socket` and `connect`.
    public func start() {
        loop.preconditionOnLoop()
        precondition(socket == nil && watcher == nil && timer == nil, "a connector starts once")
        do {
            let (socket, _) = try Connector.begin(address)
            self.socket = socket
            // Connected at once or in progress: either way the socket turns writable.
            let watcher = IOWatcher(loop: loop, fd: socket.fd, events: .write) { [unowned self] _ in self.writable() }
            self.watcher = watcher
            watcher.start()
            let timer = LoopTimer(loop: loop) { [unowned self] in self.complete(.failure(Connector.timedOut)) }
            self.timer = timer
            timer.start(after: timeout)
        } catch {
            let timer = LoopTimer(loop: loop) { [unowned self] in self.complete(.failure(error)) }
            self.timer = timer
            timer.start(after: 0)
        }
    }

    /// Abandons the attempt; `onComplete` is not called.
    public func cancel() {
        loop.preconditionOnLoop()
        timer?.stop()
        watcher = nil
        timer = nil
        socket = nil
    }

    private func writable() {
        guard let socket else { return }
        do {
            try Connector.finish(socket)
            complete(.success(socket))
        } catch {
            complete(.failure(error))
        }
    }

    private func complete(_ result: Result<Socket, Errno>) {
        timer?.stop()
        watcher = nil
        timer = nil
        socket = nil
        onComplete(result)
    }

    // MARK: - The steps, and the connect that waits

    static let timedOut = Errno(code: ETIMEDOUT, function: "connect")

    /// A new non-blocking socket connecting to `address`; `connected` is true when it did at
    /// once, otherwise it is in progress (wait for writability, then `finish`).
    static func begin(_ address: SocketAddress) throws(Errno) -> (socket: Socket, connected: Bool) {
        let socket = try Socket(family: address.family)
        return (socket, try socket.connect(to: address))
    }

    /// The outcome of a connect in progress once the socket is writable.
    static func finish(_ socket: Socket) throws(Errno) {
        if let error = try socket.pendingError() { throw error }
    }

    /// Connects to each address of `endpoint` in turn until one connects, waiting at most
    /// `timeout` seconds in all: the connected socket, still non-blocking. Blocks the calling
    /// thread: never call it on the loop. Throws the last address's failure.
    public static func connect(to endpoint: Endpoint, timeout: Double) throws(SocketError) -> Socket {
        try connect(to: try SocketAddress.resolve(endpoint), timeout: timeout)
    }

    /// `connect(to:timeout:)` for addresses already resolved.
    public static func connect(to addresses: [SocketAddress], timeout: Double) throws(SocketError) -> Socket {
        let deadline = MonotonicClock.seconds + timeout
        var last = Errno(code: EADDRNOTAVAIL, function: "connect")
        for address in addresses {
            do throws(Errno) {
                let (socket, connected) = try begin(address)
                if connected { return socket }
                guard try waitUntilReady(socket.fd, for: Int32(POLLOUT), timeout: deadline - MonotonicClock.seconds) else { throw timedOut }
                try finish(socket)
                return socket
            } catch {
                last = error
                if error == timedOut { break }
            }
        }
        throw .system(last)
    }
}
