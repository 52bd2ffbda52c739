/// A `--forward` target that is a WHIP endpoint (RFC 9725): `whip://HOST[:PORT]/PATH` (plain
/// http, port 80 by default), `http://HOST[:PORT]/PATH`, or `https://HOST[:PORT]/PATH` (TLS,
/// port 443). The bearer token is not part of it (`--whip-token`, `NALCAST_WHIP_TOKEN`), and
/// what it prints leaves out the URL's query.
public struct WHIPTarget: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    /// The path and query, as sent in the request line.
    public let path: String
    public let tls: Bool
    /// `whip://` as written, or `http://`, `https://`.
    public let scheme: String

    /// Why a URL that names WHIP is not one nalcast can push to, one line.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public let description: String
    }

    /// Nil when `url` is no WHIP URL; throws when it is one and malformed.
    public init?(url: String) throws(ParseError) {
        let scheme = url.prefix { $0 != ":" }.lowercased()
        guard ["whip", "http", "https"].contains(scheme), url.dropFirst(scheme.count).hasPrefix("://") else { return nil }
        let rest = url.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        guard !authority.contains("@") else {
            throw ParseError(description: "\(scheme)://: credentials in the URL are not taken; give the bearer token with --whip-token or NALCAST_WHIP_TOKEN")
        }
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var port: UInt16 = scheme == "https" ? 443 : 80
        var host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError(description: "\(scheme)://: an IPv6 host needs its closing ]") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            authority = authority[authority.index(after: close)...]
        } else {
            host = authority.prefix { $0 != ":" }
            authority = authority[host.endIndex...]
        }
        if authority.hasPrefix(":") {
            guard let p = UInt16(authority.dropFirst()), p > 0 else { throw ParseError(description: "\(scheme)://: bad port \"\(authority.dropFirst())\"") }
            port = p
        } else if !authority.isEmpty {
            throw ParseError(description: "\(scheme)://: bad host \"\(rest[..<slash])\"")
        }
        guard !host.isEmpty else { throw ParseError(description: "\(scheme)://: no host (expected \(scheme)://HOST[:PORT]/PATH)") }
        self.host = String(host)
        self.port = port
        self.path = path
        self.tls = scheme == "https"
        self.scheme = scheme
    }

    /// The URL without its query.
    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(h):\(port)\(path.prefix { $0 != "?" })"
    }

    /// A `Location` header's value as a path on the same server; nil for another server's.
    func resourcePath(_ location: String) -> String? {
        if location.hasPrefix("/") { return location }
        if let target = try? WHIPTarget(url: location) { return target.host == host && target.port == port ? target.path : nil }
        // Relative to the endpoint's path.
        let base = path.prefix { $0 != "?" }
        return String(base[...(base.lastIndex(of: "/") ?? base.startIndex)]) + location
    }
}
