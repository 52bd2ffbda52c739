/// An outgoing non-blocking connect: completes when the socket becomes writable (or fails).
///
/// `onComplete` is called once, from a watcher callback (never from inside `start`), with the
/// connected non-blocking socket or the error naming `connect`. Releasing the connector before
/// then abandons the attempt.
///
/// Loop-owned: use it and release it on the loop thread.
public final class Connector {
    private let loop: EventLoop
    private let address: SocketAddress
    private var socket: Socket?
    private var watcher: IOWatcher?
    private var failure: LoopTimer?
    private let onComplete: (Result<Socket, Errno>) -> Void

    public init(loop: EventLoop, address: SocketAddress, onComplete: @escaping (Result<Socket, Errno>) -> Void) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.address = address
        self.onComplete = onComplete
    }

    /// Starts connecting. The corresponding C functions are `socket` and `connect`.
    public func start() {
        loop.preconditionOnLoop()
        precondition(socket == nil && watcher == nil, "a connector starts once")
        do {
            let socket = try Socket(family: address.family)
            _ = try socket.connect(to: address)
            self.socket = socket
            // Connected at once or in progress: either way the socket turns writable.
            let watcher = IOWatcher(loop: loop, fd: socket.fd, events: .write) { [unowned self] _ in self.writable() }
            self.watcher = watcher
            watcher.start()
        } catch {
            let timer = LoopTimer(loop: loop) { [unowned self] in
                self.failure = nil
                self.onComplete(.failure(error))
            }
            failure = timer
            timer.start(after: 0)
        }
    }

    /// Abandons the attempt; `onComplete` is not called.
    public func cancel() {
        loop.preconditionOnLoop()
        watcher = nil
        failure = nil
        socket = nil
    }

    private func writable() {
        guard let socket else { return }
        watcher = nil
        self.socket = nil
        do {
            if let error = try socket.pendingError() {
                onComplete(.failure(error))
            } else {
                onComplete(.success(socket))
            }
        } catch {
            onComplete(.failure(error))
        }
    }
}
