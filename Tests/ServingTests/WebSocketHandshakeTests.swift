import Testing
import Serving

/// The opening handshake of `/ws`: what is accepted, what each refusal answers.
@Suite struct WebSocketHandshakeTests {
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// A browser's upgrade request from the page at http://127.0.0.1:7265, with `change`
    /// applied to its header lines.
    static func request(
        method: String = "GET", version: String = "HTTP/1.1", _ change: (inout [(String, String)]) -> Void = { _ in }
    ) -> HTTPRequest {
        var fields: [(String, String)] = [
            ("Host", "127.0.0.1:7265"),
            ("Connection", "keep-alive, Upgrade"),
            ("Upgrade", "websocket"),
            ("Origin", "http://127.0.0.1:7265"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
        ]
        change(&fields)
        let head = "\(method) /ws HTTP/\(version.dropFirst(5))\r\n" + fields.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
        return HTTPRequest(head: Array(head.utf8)[...])!
    }

    static func failure(_ request: HTTPRequest) -> WebSocketHandshake.Failure? {
        if case .failure(let failure) = WebSocketHandshake.validate(request) { return failure }
        return nil
    }

    static func set(_ name: String, _ value: String?) -> (inout [(String, String)]) -> Void {
        { fields in
            fields.removeAll { $0.0 == name }
            if let value { fields.append((name, value)) }
        }
    }

    /// RFC 6455 section 1.3's example.
    @Test func acceptValueOfTheRFCExample() {
        #expect(WebSocketHandshake.accept(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func browserRequestGets101() throws {
        let handshake = try WebSocketHandshake.validate(Self.request()).get()
        #expect(handshake.key == Self.key)
        let response = String(decoding: handshake.response, as: UTF8.self)
        #expect(
            response == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
        // No extension is agreed to, so no reserved bit may be used.
        #expect(!response.lowercased().contains("extensions"))
    }

    /// Header names and the Upgrade and Connection tokens in any case; Origin's scheme and
    /// host in any case, the default port implied; several Connection fields.
    @Test func tokensAndOriginIgnoreCase() throws {
        let variants: [(inout [(String, String)]) -> Void] = [
            { $0 = $0.map { ($0.0.uppercased(), $0.0 == "Sec-WebSocket-Key" ? $0.1 : $0.1.uppercased()) } },
            Self.set("Upgrade", "WebSocket"),
            Self.set("Connection", "UPGRADE"),
            { $0.removeAll { $0.0 == "Connection" }; $0 += [("Connection", "keep-alive"), ("Connection", " Upgrade ")] },
            Self.set("Origin", "HTTP://127.0.0.1:7265"),
        ]
        for change in variants {
            #expect(Self.failure(Self.request(change)) == nil)
        }
        let defaultPort = Self.request { Self.set("Host", "viewer.local")(&$0); Self.set("Origin", "http://viewer.local:80")(&$0) }
        #expect(Self.failure(defaultPort) == nil)
        let defaultPortInHost = Self.request { Self.set("Host", "Viewer.Local:80")(&$0); Self.set("Origin", "http://viewer.local")(&$0) }
        #expect(Self.failure(defaultPortInHost) == nil)
    }

    /// Behind a TLS reverse proxy that says so (`X-Forwarded-Proto: https`, which no page can
    /// set), the page's origin is `https://` + `Host`, `:443` implied; `http://` is then
    /// another origin, as is any other host.
    @Test func originBehindATLSProxy() {
        func proxied(host: String, origin: String) -> WebSocketHandshake.Failure? {
            Self.failure(Self.request {
                Self.set("Host", host)(&$0)
                Self.set("Origin", origin)(&$0)
                $0.append(("X-Forwarded-Proto", "https"))
            })
        }
        #expect(proxied(host: "viewer.example", origin: "https://viewer.example") == nil)
        #expect(proxied(host: "viewer.example:443", origin: "https://Viewer.Example") == nil)
        #expect(proxied(host: "viewer.example:8443", origin: "https://viewer.example:8443") == nil)
        #expect(proxied(host: "viewer.example", origin: "http://viewer.example") == .foreignOrigin("http://viewer.example"))
        #expect(proxied(host: "viewer.example", origin: "https://evil.example") == .foreignOrigin("https://evil.example"))
    }

    /// Non-browser clients send no Origin; they are accepted.
    @Test func absentOriginIsAccepted() {
        #expect(Self.failure(Self.request(Self.set("Origin", nil))) == nil)
    }

    @Test(arguments: [
        "http://evil.example", "http://127.0.0.1:7266", "https://127.0.0.1:7265", "null", "http://127.0.0.1:7265.evil.example",
        "http://127.0.0.1", "", "file://",
    ])
    func foreignOriginIs403(_ origin: String) {
        let failure = Self.failure(Self.request(Self.set("Origin", origin)))
        #expect(failure == .foreignOrigin(origin))
        #expect(failure?.status == 403)
        let bytes = String(decoding: failure?.response.bytes ?? [], as: UTF8.self)
        #expect(bytes.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
    }

    @Test func wrongOrMissingVersionIs426WithTheVersionWeSpeak() {
        for version in ["8", "12", "14", "13, 8", nil] {
            let failure = Self.failure(Self.request(Self.set("Sec-WebSocket-Version", version)))
            #expect(failure == .unsupportedVersion(version))
            let bytes = String(decoding: failure?.response.bytes ?? [], as: UTF8.self)
            #expect(bytes.hasPrefix("HTTP/1.1 426 Upgrade Required\r\n"), "\(String(describing: version))")
            #expect(bytes.contains("\r\nSec-WebSocket-Version: 13\r\n"))
        }
    }

    @Test func plainGetIs426NamingWebSocket() {
        for upgrade in [nil, "h2c", "websocketx"] {
            let failure = Self.failure(Self.request(Self.set("Upgrade", upgrade)))
            #expect(failure == .notAnUpgrade)
            let bytes = String(decoding: failure?.response.bytes ?? [], as: UTF8.self)
            #expect(bytes.contains("\r\nUpgrade: websocket\r\n"))
        }
    }

    @Test(arguments: [
        nil, "", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZSE=", "dGhlIHNhbXBsZSBub25j",
        "dGhlIHNhbXBsZSBub25jZR==", "dGhl IHNhbXBsZSBub25jZQ==",
    ])
    func badKeyIs400(_ key: String?) {
        let failure = Self.failure(Self.request(Self.set("Sec-WebSocket-Key", key)))
        #expect(failure == .badKey)
        #expect(failure?.status == 400)
    }

    @Test func twoKeysAre400() {
        let failure = Self.failure(Self.request { $0.append(("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAA==")) })
        #expect(failure == .badKey)
    }

    @Test func otherRefusals() {
        #expect(Self.failure(Self.request(Self.set("Connection", "keep-alive"))) == .connectionLacksUpgrade)
        #expect(Self.failure(Self.request(Self.set("Connection", nil)))?.status == 400)
        #expect(Self.failure(Self.request(Self.set("Connection", "upgrades"))) == .connectionLacksUpgrade)
        #expect(Self.failure(Self.request(Self.set("Host", nil))) == .missingHost)
        #expect(Self.failure(Self.request(version: "HTTP/1.0")) == .notHTTP11("HTTP/1.0"))
        #expect(Self.failure(Self.request(version: "HTTP/1.0"))?.status == 400)
        let post = Self.failure(Self.request(method: "POST"))
        #expect(post == .methodNotGet("POST"))
        let bytes = String(decoding: post?.response.bytes ?? [], as: UTF8.self)
        #expect(bytes.hasPrefix("HTTP/1.1 405 "))
        #expect(bytes.contains("\r\nAllow: GET\r\n"))
    }

    /// The refusal's body never echoes what the client sent.
    @Test func refusalDoesNotEchoTheOrigin() {
        let failure = Self.failure(Self.request(Self.set("Origin", "http://<script>.example")))
        let bytes = String(decoding: failure?.response.bytes ?? [], as: UTF8.self)
        #expect(bytes.contains("403"))
        #expect(!bytes.contains("<script>"))
    }
}
