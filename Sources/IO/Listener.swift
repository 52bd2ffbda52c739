#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A listening socket on a TCP or unix endpoint that hands each new connection to `onAccept`
/// on the loop thread.
///
/// TCP listeners set `SO_REUSEADDR`. A unix socket file is created with mode 0600; a stale one
/// (left by a dead process: connecting to it is refused) is replaced, a live one is an error
/// (`unix:PATH is in use`). The file is removed on `close()`.
///
/// Loop-owned: create, start, close and release it on the loop thread.
public final class Listener {
    private let loop: EventLoop
    private let socket: Socket
    private var watcher: IOWatcher?
    private var pause: LoopTimer?
    private let onAccept: (Socket) -> Void
    /// Called on accept failures other than "nothing to accept" (e.g. `EMFILE`); accepting
    /// pauses for a moment after one, rather than spinning.
    public var onError: ((Errno) -> Void)?
    /// The unix socket path to remove on close.
    private var unixPath: String?

    /// What was asked for.
    public let endpoint: Endpoint
    /// Where it listens: for `tcp://HOST:0`, with the port the kernel picked.
    public let boundEndpoint: Endpoint

    /// Binds and listens at once, so that a busy address is reported here; call `start()` to
    /// accept. The corresponding C functions are `socket`, `bind` and `listen`.
    public init(loop: EventLoop, endpoint: Endpoint, backlog: Int32 = 64, onAccept: @escaping (Socket) -> Void) throws(SocketError) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.endpoint = endpoint
        self.onAccept = onAccept
        let address = try SocketAddress.resolve(endpoint, passive: true)[0]
        do {
            socket = try Socket(family: address.family)
        } catch {
            throw .system(error)
        }
        switch endpoint {
        case .tcp:
            do {
                try socket.setOption(level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
                try socket.bind(address)
                try socket.listen(backlog: backlog)
                boundEndpoint = try socket.localAddress().endpoint
            } catch {
                throw .system(error)
            }
        case .unix(let path):
            try Listener.removeStaleSocket(path: path, address: address)
            do {
                try socket.bind(address)
            } catch {
                if error.code == EADDRINUSE { throw .inUse(endpoint) }
                throw .system(error)
            }
            unixPath = path
            do {
                // Nobody can connect before listen(): the mode is set before the socket is reachable.
                _ = try systemCall("chmod") { chmod(path, 0o600) }
                try socket.listen(backlog: backlog)
            } catch {
                unlink(path)
                unixPath = nil
                throw .system(error)
            }
            boundEndpoint = endpoint
        }
    }

    deinit {
        if let path = unixPath { unlink(path) }
    }

    /// Starts accepting.
    public func start() {
        loop.preconditionOnLoop()
        if watcher == nil {
            watcher = IOWatcher(loop: loop, fd: socket.fd, events: .read) { [unowned self] _ in self.acceptAll() }
        }
        watcher?.start()
    }

    /// Stops accepting; connections already made are not affected.
    public func stop() {
        loop.preconditionOnLoop()
        watcher?.stop()
        pause?.stop()
    }

    /// Stops, closes the socket and removes the unix socket file.
    public func close() {
        loop.preconditionOnLoop()
        stop()
        watcher = nil
        socket.close()
        if let path = unixPath {
            unlink(path)
            unixPath = nil
        }
    }

    private func acceptAll() {
        // A bounded batch per wake-up keeps one busy listener from starving the loop.
        for _ in 0..<64 {
            do {
                guard let client = try socket.accept() else { return }
                onAccept(client)
            } catch {
                onError?(error)
                if error.code == EMFILE || error.code == ENFILE || error.code == ENOBUFS || error.code == ENOMEM {
                    watcher?.stop()
                    if pause == nil {
                        pause = LoopTimer(loop: loop) { [unowned self] in self.watcher?.start() }
                    }
                    pause?.start(after: 0.1)
                }
                return
            }
            if !socket.isOpen { return }
        }
    }

    /// Removes a unix socket file nobody listens on; refuses a live one.
    private static func removeStaleSocket(path: String, address: SocketAddress) throws(SocketError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path) }
        let probe: Socket
        do {
            probe = try Socket(family: AF_UNIX)
        } catch {
            throw .system(error)
        }
        do {
            _ = try probe.connect(to: address)
        } catch {
            if error.code == ENOENT { return }
            if error.code == ECONNREFUSED {
                if unlink(path) != 0 && errno != ENOENT {
                    throw .system(Errno(code: errno, function: "unlink"))
                }
                return
            }
        }
        // Connected, pending (a full backlog), or failing otherwise: leave it alone.
        throw .inUse(.unix(path: path))
    }
}
