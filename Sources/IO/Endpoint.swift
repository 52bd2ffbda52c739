#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a stream is served or read: `tcp://HOST:PORT` (IPv6 in brackets: `tcp://[::1]:7264`)
/// or `unix:PATH`.
public enum Endpoint: Sendable, Hashable, CustomStringConvertible {
    case tcp(host: String, port: UInt16)
    case unix(path: String)

    /// The port when none is given.
    public static let defaultPort: UInt16 = 7264

    /// The longest path a `sockaddr_un` holds, without its terminating zero.
    public static let maxUnixPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Parses `tcp://HOST[:PORT]` or `unix:PATH`. With `portRequired` (a target to send to,
    /// `--forward`), `tcp://HOST` without a port is an error rather than port 7264.
    public init(parsing text: String, portRequired: Bool = false) throws(EndpointParseError) {
        func fail(_ reason: String) -> EndpointParseError { EndpointParseError(input: text, reason: reason) }
        if text.hasPrefix("unix:") {
            var path = String(text.dropFirst("unix:".count))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else { throw fail("the path is empty") }
            guard !path.utf8.contains(0) else { throw fail("the path contains a zero byte") }
            guard path.utf8.count <= Endpoint.maxUnixPathLength else {
                throw fail("the path is longer than \(Endpoint.maxUnixPathLength) bytes")
            }
            self = .unix(path: path)
            return
        }
        guard text.hasPrefix("tcp://") else { throw fail("expected tcp://HOST:PORT or unix:PATH") }
        var rest = Substring(text.dropFirst("tcp://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        let portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("missing ] after the IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.isEmpty {
                portText = nil
            } else if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else {
                throw fail("expected :PORT after ]")
            }
            guard Endpoint.isIPv6(String(host)) else { throw fail("\"\(host)\" is not an IPv6 address") }
        } else {
            let colons = rest.filter { $0 == ":" }.count
            guard colons <= 1 else { throw fail("put an IPv6 address in brackets: tcp://[::1]:\(Endpoint.defaultPort)") }
            if let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            } else {
                host = rest
                portText = nil
            }
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else {
                throw fail("\"\(host)\" is not a host name or address")
            }
        }
        guard !host.isEmpty else { throw fail("the host is missing") }
        var port = Endpoint.defaultPort
        if portText == nil && portRequired { throw fail("the port is missing: tcp://\(text.contains("[") ? "[\(host)]" : String(host)):PORT") }
        if let portText {
            guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt16(portText) else {
                throw fail("the port \"\(portText)\" is not a number from 0 to 65535")
            }
            port = value
        }
        self = .tcp(host: String(host), port: port)
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port):
            return host.contains(":") ? "tcp://[\(host)]:\(port)" : "tcp://\(host):\(port)"
        case .unix(let path):
            return "unix:\(path)"
        }
    }

    /// True when only this machine can reach the endpoint: a unix socket, `localhost`,
    /// 127.0.0.0/8, `::1`, or an IPv4-mapped loopback address. The CLI asks for
    /// `--allow-remote` otherwise.
    public var isLoopback: Bool {
        switch self {
        case .unix:
            return true
        case .tcp(let host, _):
            if host.lowercased() == "localhost" { return true }
            var v4 = in_addr()
            if inet_pton(AF_INET, host, &v4) == 1 {
                return UInt32(bigEndian: v4.s_addr) >> 24 == 127
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, host, &v6) == 1 {
                let bytes = withUnsafeBytes(of: v6) { Array($0) }
                if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
                let mapped = [UInt8](repeating: 0, count: 10) + [0xff, 0xff]
                return Array(bytes[0..<12]) == mapped && bytes[12] == 127
            }
            return false
        }
    }

    /// The port of a TCP endpoint.
    public var port: UInt16? {
        if case .tcp(_, let port) = self { return port }
        return nil
    }

    static func isIPv6(_ host: String) -> Bool {
        var v6 = in6_addr()
        return inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// A malformed endpoint: `bad endpoint "tcp://x:99999": the port "99999" is not a number from 0 to 65535`.
public struct EndpointParseError: Error, Hashable, CustomStringConvertible {
    public let input: String
    public let reason: String
    public var description: String { "bad endpoint \"\(input)\": \(reason)" }
}
