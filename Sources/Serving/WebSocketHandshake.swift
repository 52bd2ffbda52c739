/// The server's half of the WebSocket opening handshake (RFC 6455 section 4.2): checks an
/// upgrade request that an `HTTPRoutes` `.takeOver` route received and gives the bytes to
/// answer it, the `101 Switching Protocols` or the error response. Pure: no socket.
///
/// What is accepted:
/// - `GET` (else 405 with `Allow: GET`) over `HTTP/1.1` (else 400), with a `Host` (else 400);
/// - `Upgrade` naming `websocket` in any case (else 426 with `Upgrade: websocket`: a plain
///   GET of the WebSocket path learns what it should have asked for);
/// - `Connection` holding the token `upgrade` in any case, among others (else 400);
/// - `Sec-WebSocket-Version: 13` (else, also when absent, 426 with `Sec-WebSocket-Version: 13`,
///   as section 4.4 asks, so a client can retry with a version nalcast speaks);
/// - exactly one `Sec-WebSocket-Key`, canonical base64 of 16 bytes (else 400);
/// - `Origin`, when present, equal to the page's own origin: `http://` + the request's
///   `Host` (case-insensitive, `:80` implied), else 403; behind a TLS reverse proxy that
///   says so with `X-Forwarded-Proto: https`, `https://` + `Host` (`:443` implied). A page
///   cannot set that header on its WebSocket request, so only a proxy (or a client that is
///   no browser) sends it. This is the defence against another
///   web site's page, running in the viewer's browser, opening the stream: browsers always
///   send `Origin` with a WebSocket request and scripts cannot forge it. A request without
///   `Origin` is accepted: it cannot come from a browser page, and non-browser clients
///   (websocat, a test) are no more privileged than a plain TCP reader of the stream.
///   It does not defend against DNS rebinding (a foreign name resolving to the listener's
///   address makes `Host` and `Origin` agree): that is the listener's `Host` check and its
///   loopback default, not the handshake's.
///
/// No subprotocol and no extension is negotiated (`Sec-WebSocket-Protocol` and
/// `Sec-WebSocket-Extensions` are ignored, so no compression and no reserved bits).
public struct WebSocketHandshake: Sendable, Equatable {
    /// The GUID of RFC 6455 section 1.3 that the accept value hashes with the key.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The client's `Sec-WebSocket-Key`, as sent.
    public let key: String

    /// Why an upgrade request was refused, each with its HTTP status.
    public enum Failure: Error, Sendable, Equatable {
        case methodNotGet(String)
        case notHTTP11(String)
        case missingHost
        case notAnUpgrade
        case connectionLacksUpgrade
        case unsupportedVersion(String?)
        case badKey
        case foreignOrigin(String)

        public var status: Int {
            switch self {
            case .methodNotGet: 405
            case .notHTTP11, .missingHost, .connectionLacksUpgrade, .badKey: 400
            case .notAnUpgrade, .unsupportedVersion: 426
            case .foreignOrigin: 403
            }
        }

        /// One line for the response body and logs; it repeats nothing the client sent.
        public var explanation: String {
            switch self {
            case .methodNotGet: "a WebSocket upgrade is a GET"
            case .notHTTP11: "a WebSocket upgrade needs HTTP/1.1"
            case .missingHost: "no Host header"
            case .notAnUpgrade: "this path speaks WebSocket only (Upgrade: websocket)"
            case .connectionLacksUpgrade: "Connection does not name upgrade"
            case .unsupportedVersion: "only WebSocket version 13 is spoken"
            case .badKey: "Sec-WebSocket-Key must be one base64 value of 16 bytes"
            case .foreignOrigin: "Origin is not this page's own"
            }
        }

        /// The error response, with the header fields the status calls for.
        public var response: HTTPResponse {
            var response = HTTPResponse(status: status, body: "\(explanation)\n")
            switch self {
            case .methodNotGet: response.headers.append(("Allow", "GET"))
            case .notAnUpgrade: response.headers.append(("Upgrade", "websocket"))
            case .unsupportedVersion: response.headers.append(("Sec-WebSocket-Version", "13"))
            default: break
            }
            return response
        }
    }

    /// Checks `request`; the handshake to answer, or why not.
    /// `secure`: the page is served over TLS by nalcast itself, its origin `https://`.
    public static func validate(_ request: HTTPRequest, secure: Bool = false) -> Result<WebSocketHandshake, Failure> {
        guard request.method == "GET" else { return .failure(.methodNotGet(request.method)) }
        guard request.version == "HTTP/1.1" else { return .failure(.notHTTP11(request.version)) }
        guard let host = request.header("host"), !host.isEmpty else { return .failure(.missingHost) }
        guard tokens(request, "upgrade").contains("websocket") else { return .failure(.notAnUpgrade) }
        guard tokens(request, "connection").contains("upgrade") else { return .failure(.connectionLacksUpgrade) }
        let version = request.header("sec-websocket-version")
        guard version == "13" else { return .failure(.unsupportedVersion(version)) }
        let keys = request.headers.filter { $0.name == "sec-websocket-key" }
        guard keys.count == 1, Base64.decode(keys[0].value)?.count == 16 else { return .failure(.badKey) }
        let scheme = secure || request.header("x-forwarded-proto")?.lowercased() == "https" ? "https" : "http"
        if let origin = request.header("origin"), !sameOrigin(origin, host: host, scheme: scheme) { return .failure(.foreignOrigin(origin)) }
        return .success(WebSocketHandshake(key: keys[0].value))
    }

    public init(key: String) { self.key = key }

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    public static func accept(key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + guid).utf8)))
    }

    /// The `101 Switching Protocols` response; after it, the connection speaks WebSocket frames.
    public var response: [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\n" + "Upgrade: websocket\r\n" + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(WebSocketHandshake.accept(key: key))\r\n\r\n").utf8)
    }

    /// The comma-separated tokens of every `name` field, trimmed and lowercased.
    static func tokens(_ request: HTTPRequest, _ name: String) -> [String] {
        request.headers.filter { $0.name == name }.flatMap { field in
            field.value.split(separator: ",").map { token in
                String(token.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
            }
        }
    }

    /// Whether `origin` is `SCHEME://HOST` for the request's `Host` (`scheme` http, or https
    /// behind a TLS proxy), ignoring case and an explicit default port on either side.
    static func sameOrigin(_ origin: String, host: String, scheme: String = "http") -> Bool {
        let defaultPort = scheme == "https" ? ":443" : ":80"
        func withoutDefaultPort(_ authority: String) -> String {
            authority.hasSuffix(defaultPort) ? String(authority.dropLast(defaultPort.count)) : authority
        }
        let origin = origin.lowercased()
        let prefix = scheme + "://"
        guard origin.hasPrefix(prefix) else { return false }
        return withoutDefaultPort(String(origin.dropFirst(prefix.count))) == withoutDefaultPort(host.lowercased())
    }

    /// Whether a `Host` header (`name[:port]`) names this machine: `localhost`, 127.0.0.0/8,
    /// `[::1]`. The check of a loopback `--web` listener against DNS
    /// rebinding (`StreamServer.acceptViewer`).
    public static func isLoopbackHost(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "[::1]" || host.hasPrefix("[::1]:") { return true }
        let name = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
