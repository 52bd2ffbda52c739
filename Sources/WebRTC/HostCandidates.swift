import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The host candidates of a WebRTC socket: the address it is bound to, or for a wildcard
/// (`0.0.0.0`, `::`) every address of this machine's interfaces that are up (loopback last),
/// then the addresses given for outside (`--webrtc-host`), resolved.
public enum HostCandidates {
    /// Numeric hosts for a socket bound to `bound`, then `extra` (names or numbers) resolved;
    /// each once. Throws when a name does not resolve.
    /// `bound` nil: `extra` only.
    public static func list(bound: String?, extra: [String]) throws(SocketError) -> [String] {
        var out: [String] = []
        if bound == "0.0.0.0" || bound == "::" {
            out = interfaceAddresses(ipv6: bound == "::")
        } else if let bound {
            out = [bound]
        }
        for name in extra {
            let resolved = try SocketAddress.resolve(.tcp(host: name, port: 9))
            // IPv4 first: what a viewer behind NAT most likely reaches.
            let hosts = resolved.sorted { $0.family == AF_INET && $1.family != AF_INET }.map(\.host)
            if let host = hosts.first { out.append(host) }
        }
        var seen = Set<String>()
        return out.filter { seen.insert($0).inserted }
    }

    /// This machine's interface addresses: IPv4 (and IPv6 but link-local when `ipv6`), those
    /// of interfaces that are up, loopback last.
    static func interfaceAddresses(ipv6: Bool) -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var outside: [String] = []
        var loopback: [String] = []
        var next = list
        while let entry = next {
            next = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || (ipv6 && family == AF_INET6) else { continue }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if family == AF_INET {
                var a = UnsafeRawPointer(address).load(as: sockaddr_in.self).sin_addr
                inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
            } else {
                var a = UnsafeRawPointer(address).load(as: sockaddr_in6.self).sin6_addr
                if withUnsafeBytes(of: &a, { $0[0] == 0xFE && $0[1] & 0xC0 == 0x80 }) { continue }  // link-local: needs a scope
                inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
            }
            let host = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 { loopback.append(host) } else { outside.append(host) }
        }
        return outside + loopback
    }
}
