import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An IPv4 or IPv6 address and port of a UDP peer, comparable (what tells peers apart).
public struct UDPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 or 16 bytes.
    public let ip: [UInt8]
    public let port: UInt16

    public init(ip: [UInt8], port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// From a numeric host (`127.0.0.1`, `::1`); nil for a name.
    public init?(host: String, port: UInt16) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            self.init(ip: withUnsafeBytes(of: &v4) { Array($0) }, port: port)
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            self.init(ip: withUnsafeBytes(of: &v6) { Array($0) }, port: port)
        } else {
            return nil
        }
    }

    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        ip.withUnsafeBytes { _ = inet_ntop(ip.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { ip.count == 4 ? "\(host):\(port)" : "[\(host)]:\(port)" }

    /// The address with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as IPv4.
    var unmapped: UDPAddress {
        if ip.count == 16, ip[0..<10].allSatisfy({ $0 == 0 }), ip[10] == 0xFF, ip[11] == 0xFF { return UDPAddress(ip: Array(ip[12...]), port: port) }
        return self
    }

    fileprivate func withSockaddr<R>(family: Int32, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var storage = sockaddr_storage()
        return withUnsafeMutableBytes(of: &storage) { raw -> R in
            if family == AF_INET6 {
                var a = sockaddr_in6()
                a.sin6_family = sa_family_t(AF_INET6)
                a.sin6_port = port.bigEndian
                let bytes = ip.count == 4 ? [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + ip : ip
                withUnsafeMutableBytes(of: &a.sin6_addr) { $0.copyBytes(from: bytes) }
                withUnsafeBytes(of: a) { raw.copyMemory(from: $0) }
                return body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &a.sin_addr) { $0.copyBytes(from: ip.prefix(4)) }
            withUnsafeBytes(of: a) { raw.copyMemory(from: $0) }
            return body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }

    fileprivate init?(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let a = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            self.init(ip: withUnsafeBytes(of: a.sin_addr) { Array($0) }, port: UInt16(bigEndian: a.sin_port))
        case AF_INET6:
            let a = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            self.init(ip: withUnsafeBytes(of: a.sin6_addr) { Array($0) }, port: UInt16(bigEndian: a.sin6_port))
        default:
            return nil
        }
    }
}

/// A non-blocking UDP socket on the loop: datagrams in through a read watcher, out with
/// `send` (dropped and counted when the kernel's buffer is full: no datagram waits here).
/// Loop-owned.
public final class UDPSocket {
    private let socket: Socket
    private let family: Int32
    private var watcher: IOWatcher?
    private let loop: EventLoop
    /// Where it is bound (the kernel's port for port 0).
    public let local: UDPAddress
    /// Datagrams the kernel would not take (its buffer full) or refused.
    public private(set) var sendFailures = 0

    /// Binds to `host` (numeric) and `port` (0: the kernel's choice).
    public init(loop: EventLoop, host: String, port: UInt16 = 0) throws(SocketError) {
        self.loop = loop
        guard let address = UDPAddress(host: host, port: port) else { throw .resolve(host: host, message: "not a numeric address") }
        family = address.ip.count == 4 ? AF_INET : AF_INET6
        let fd = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(Errno(code: errno, function: "socket")) }
        socket = Socket(adopting: fd)
        // Room for a burst: an IDR of a few hundred packets goes out at once.
        try? socket.setOption(level: SOL_SOCKET, name: SO_SNDBUF, value: 2 << 20)
        try? socket.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: 1 << 20)
        let bound = address.withSockaddr(family: family) { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else { throw .system(Errno(code: errno, function: "bind")) }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        local = UDPAddress(storage) ?? address
    }

    /// Starts reading: `onDatagram` for each datagram, on the loop thread.
    public func start(_ onDatagram: @escaping ([UInt8], UDPAddress) -> Void) {
        loop.preconditionOnLoop()
        let fd = socket.fd
        let watcher = IOWatcher(loop: loop, fd: fd, events: .read) { _ in
            var buffer = [UInt8](repeating: 0, count: 2048)
            // At most 64 a turn, so one busy peer does not hold the loop.
            for _ in 0..<64 {
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let n = buffer.withUnsafeMutableBytes { b in
                    withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) } }
                }
                guard n > 0, let from = UDPAddress(storage) else { return }
                onDatagram(Array(buffer[0..<n]), from.unmapped)
            }
        }
        watcher.start()
        self.watcher = watcher
    }

    /// Sends one datagram; false when it was not taken (counted).
    @discardableResult
    public func send(_ datagram: [UInt8], to address: UDPAddress) -> Bool {
        let fd = socket.fd
        let n = datagram.withUnsafeBytes { b in address.withSockaddr(family: family) { sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, $1) } }
        if n != datagram.count { sendFailures += 1 }
        return n == datagram.count
    }

    public func close() {
        watcher?.stop()
        watcher = nil
        socket.close()
    }
}
