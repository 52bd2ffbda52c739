#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A socket file descriptor, non-blocking and close-on-exec unless told otherwise. Closed on
/// `close()` or when released.
///
/// Every call goes through one funnel: `EINTR` is retried, `EAGAIN` becomes "would block"
/// (`nil` or `.wouldBlock`), other failures throw `Errno` naming the C function, and `EBADF`
/// traps. Not thread-safe: one thread uses a socket at a time (the loop thread, for sockets
/// handed to loop-owned types).
public final class Socket {
    /// The descriptor; -1 once closed.
    public private(set) var fd: Int32

    /// Takes ownership of `fd`.
    public init(adopting fd: Int32) {
        precondition(fd >= 0)
        self.fd = fd
    }

    /// A new non-blocking stream socket. The corresponding C function is `socket`.
    public convenience init(family: Int32) throws(Errno) {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try systemCall("socket") { Glibc.socket(family, type, 0) }
        self.init(adopting: fd)
    }

    deinit { close() }

    public var isOpen: Bool { fd >= 0 }

    /// Closes the descriptor. Not retried on `EINTR`: Linux closes it anyway.
    public func close() {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)
        fd = -1
    }

    /// Gives up ownership of the descriptor without closing it.
    public func release() -> Int32 {
        defer { fd = -1 }
        return fd
    }

    /// The corresponding C function is `fcntl(F_SETFL, O_NONBLOCK)`.
    public func setBlocking(_ blocking: Bool) throws(Errno) {
        let flags = try systemCall("fcntl") { fcntl(fd, F_GETFL) }
        let new = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK
        _ = try systemCall("fcntl") { fcntl(fd, F_SETFL, new) }
    }

    /// The corresponding C function is `setsockopt`.
    public func setOption(level: Int32, name: Int32, value: Int32) throws(Errno) {
        var value = value
        _ = try systemCall("setsockopt") { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// The corresponding C function is `getsockopt`.
    public func option(level: Int32, name: Int32) throws(Errno) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try systemCall("getsockopt") { getsockopt(fd, level, name, &value, &length) }
        return value
    }

    /// The corresponding C function is `bind`.
    public func bind(_ address: SocketAddress) throws(Errno) {
        _ = try systemCall("bind") { address.withSockaddr { Glibc.bind(fd, $0, $1) } }
    }

    /// The corresponding C function is `listen`.
    public func listen(backlog: Int32) throws(Errno) {
        _ = try systemCall("listen") { Glibc.listen(fd, backlog) }
    }

    /// A new connection, non-blocking and close-on-exec, or nil when none is waiting (or it was
    /// aborted before we got it). The corresponding C function is `accept` (Glibc does not
    /// export `accept4` to Swift, so the flags are set right after).
    public func accept() throws(Errno) -> Socket? {
        let result: IOResult<Int32>
        do {
            result = try nonBlockingCall("accept") { Glibc.accept(fd, nil, nil) }
        } catch {
            if error.code == ECONNABORTED { return nil }
            throw error
        }
        guard case .done(let client) = result else { return nil }
        let socket = Socket(adopting: client)
        _ = try systemCall("fcntl") { fcntl(client, F_SETFD, FD_CLOEXEC) }
        try socket.setBlocking(false)
        return socket
    }

    /// Starts connecting. True when connected at once; false when in progress (wait for
    /// writability, then check `pendingError()`). The corresponding C function is `connect`.
    public func connect(to address: SocketAddress) throws(Errno) -> Bool {
        do {
            _ = try systemCall("connect") { address.withSockaddr { Glibc.connect(fd, $0, $1) } }
            return true
        } catch where error.code == EINPROGRESS || error.code == EAGAIN {
            return false
        }
    }

    /// The result of a non-blocking connect (`SO_ERROR`), as an error naming `connect`.
    public func pendingError() throws(Errno) -> Errno? {
        let code = try option(level: SOL_SOCKET, name: SO_ERROR)
        return code == 0 ? nil : Errno(code: code, function: "connect")
    }

    /// Reads into `buffer`: the byte count (0 at end of stream), or nil when it would block.
    /// The corresponding C function is `read`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
        switch try nonBlockingCall("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) }) {
        case .done(let n): n
        case .wouldBlock: nil
        }
    }

    /// Writes from `buffer`: the byte count, or nil when it would block. The corresponding C
    /// function is `send` with `MSG_NOSIGNAL` (a closed peer gives `EPIPE`, not `SIGPIPE`).
    public func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int? {
        switch try nonBlockingCall("send", { Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }) {
        case .done(let n): n
        case .wouldBlock: nil
        }
    }

    /// The corresponding C function is `shutdown(SHUT_WR)`.
    public func shutdownWrite() throws(Errno) {
        _ = try systemCall("shutdown") { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Sends one datagram to `address` (a UDP socket not connected); false when the kernel
    /// did not take it whole (its buffer full, the peer unreachable). The corresponding C
    /// function is `sendto`.
    @discardableResult
    public func send(datagram: UnsafeRawBufferPointer, to address: SocketAddress) -> Bool {
        let n = address.withSockaddr { sendto(fd, datagram.baseAddress, datagram.count, Int32(MSG_NOSIGNAL), $0, $1) }
        return n == datagram.count
    }

    /// The bound address (with the port the kernel picked for port 0). The corresponding C
    /// function is `getsockname`.
    public func localAddress() throws(Errno) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try systemCall("getsockname") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return SocketAddress(storage: storage, length: length)
    }

    /// The connected peer's address. The corresponding C function is `getpeername`.
    public func peerAddress() throws(Errno) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try systemCall("getpeername") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
        }
        return SocketAddress(storage: storage, length: length)
    }

    /// The socket's address family (`SO_DOMAIN`).
    public func family() throws(Errno) -> Int32 {
        try option(level: SOL_SOCKET, name: SO_DOMAIN)
    }

    /// Options for a stream reader, so that lag shows in our queue rather than in kernel
    /// buffers: a small `SO_SNDBUF` (about one access unit at 6 Mbit/s), and for TCP
    /// `TCP_NOTSENT_LOWAT` (writable only when little is unsent) and `TCP_NODELAY`.
    public func configureForStreaming(sendBuffer: Int = 128 << 10, notSentLowWater: Int = 16 << 10) throws(Errno) {
        try setOption(level: SOL_SOCKET, name: SO_SNDBUF, value: Int32(sendBuffer))
        let family = try family()
        guard family == AF_INET || family == AF_INET6 else { return }
        try setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
        try setOption(level: Int32(IPPROTO_TCP), name: TCP_NOTSENT_LOWAT, value: Int32(notSentLowWater))
    }
}
