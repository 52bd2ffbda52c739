#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A resolved socket address (`sockaddr_storage` and its length).
public struct SocketAddress: Sendable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    public var family: Int32 { Int32(storage.ss_family) }

    /// The addresses an endpoint stands for. Host names are looked up with `getaddrinfo`,
    /// which may block: resolve before the loop runs, or off the loop thread. `passive` is for
    /// listening (`AI_PASSIVE`).
    public static func resolve(_ endpoint: Endpoint, passive: Bool = false) throws(SocketError) -> [SocketAddress] {
        switch endpoint {
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count <= Endpoint.maxUnixPathLength else { throw .pathTooLong(path) }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: &address) { target.copyMemory(from: $0) }
            }
            let length = MemoryLayout<sa_family_t>.size + bytes.count + 1
            return [SocketAddress(storage: storage, length: socklen_t(length))]
        case .tcp(let host, let port):
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
            var list: UnsafeMutablePointer<addrinfo>?
            let rc = getaddrinfo(host, String(port), &hints, &list)
            guard rc == 0 else {
                throw .resolve(host: host, message: String(cString: gai_strerror(rc)))
            }
            defer { freeaddrinfo(list) }
            var out: [SocketAddress] = []
            var next = list
            while let info = next {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen))) }
                out.append(SocketAddress(storage: storage, length: info.pointee.ai_addrlen))
                next = info.pointee.ai_next
            }
            guard !out.isEmpty else { throw .resolve(host: host, message: "no address") }
            return out
        }
    }

    /// The port of an IPv4 or IPv6 address.
    public var port: UInt16? {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET: UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            case AF_INET6: UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            default: nil
            }
        }
    }

    /// The same IPv4 or IPv6 host with another port (a unix address as it is): where a
    /// peer's other sockets are, as a port pair from a negotiation names them.
    public func with(port: UInt16) -> SocketAddress {
        var copy = self
        withUnsafeMutableBytes(of: &copy.storage) { raw in
            switch family {
            case AF_INET:
                var a = raw.load(as: sockaddr_in.self)
                a.sin_port = port.bigEndian
                raw.storeBytes(of: a, as: sockaddr_in.self)
            case AF_INET6:
                var a = raw.load(as: sockaddr_in6.self)
                a.sin6_port = port.bigEndian
                raw.storeBytes(of: a, as: sockaddr_in6.self)
            default: break
            }
        }
        return copy
    }

    /// The numeric host of an IPv4 or IPv6 address, or the path of a unix address.
    public var host: String {
        withUnsafeBytes(of: storage) { raw in
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch family {
            case AF_INET:
                var a = raw.load(as: sockaddr_in.self).sin_addr
                inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
            case AF_INET6:
                var a = raw.load(as: sockaddr_in6.self).sin6_addr
                inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
            case AF_UNIX:
                let path = raw.load(as: sockaddr_un.self).sun_path
                return withUnsafeBytes(of: path) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            default:
                return "?"
            }
            return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The address as an endpoint (`tcp://127.0.0.1:7264`, `unix:/run/x.sock`).
    public var endpoint: Endpoint {
        family == AF_UNIX ? .unix(path: host) : .tcp(host: host, port: port ?? 0)
    }

    public var description: String { endpoint.description }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// Why a socket could not be set up. Reads as one line: `bind: Address already in use`,
/// `unix:/run/nalcast.sock is in use`.
public enum SocketError: Error, Hashable, CustomStringConvertible {
    /// A system call failed.
    case system(Errno)
    /// Another live process listens on this endpoint.
    case inUse(Endpoint)
    /// The unix socket path exists and is something else than a socket.
    case notASocket(String)
    case pathTooLong(String)
    /// `getaddrinfo` could not resolve the host.
    case resolve(host: String, message: String)

    public var description: String {
        switch self {
        case .system(let errno): errno.description
        case .inUse(let endpoint): "\(endpoint) is in use"
        case .notASocket(let path): "unix:\(path) exists and is not a socket"
        case .pathTooLong(let path): "unix:\(path): the path is longer than \(Endpoint.maxUnixPathLength) bytes"
        case .resolve(let host, let message): "getaddrinfo: \(host): \(message)"
        }
    }

    /// The errno of a failed system call.
    public var errno: Errno? {
        if case .system(let e) = self { return e }
        return nil
    }
}
