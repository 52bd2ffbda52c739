import IO

/// The browser page's viewers: the upgrade of `GET /ws` taken over from the `HTTPServer`,
/// checked, and admitted as a reader (`WebSocketViewer`).
extension StreamServer {
    /// The `.takeOver` handler of the browser page's stream route (`GET /ws`): see
    /// `acceptViewer`.
    public var webSocketRoute: HTTPRoutes.Handler {
        .takeOver { [unowned self] request, connection, rest in self.acceptViewer(request, connection: connection, bytesAfterHead: rest) }
    }

    /// Takes over an upgrade request an `HTTPServer` handed on: a valid one from the page's
    /// own origin (`WebSocketHandshake`) becomes a reader, answered `101`, then one message
    /// per access unit; an invalid one gets its error status (403 for another origin), and
    /// one past `maxReaders` or after the stream ended a 503, then the socket closes.
    public func acceptViewer(_ request: HTTPRequest, connection: Connection, bytesAfterHead rest: [UInt8]) {
        loop.preconditionOnLoop()
        let peer = ((try? connection.socket.peerAddress().description) ?? "?") + " (websocket)"
        let handshake: WebSocketHandshake
        switch WebSocketHandshake.validate(request, secure: pageIsSecure) {
        case .failure(let failure): return refuse(connection, failure.response)
        case .success(let accepted): handshake = accepted
        }
        // A TLS reverse proxy (X-Forwarded-Proto, which no page can set) forwards its own
        // name: DNS rebinding cannot reach it without a certificate for the foreign name.
        if viewersOnlyFromLoopbackHosts, request.header("x-forwarded-proto") == nil, !WebSocketHandshake.isLoopbackHost(request.header("host") ?? "") {
            return refuse(connection, HTTPResponse(status: 403, body: "Host is not this machine: open the page as http://127.0.0.1:PORT/ or http://localhost:PORT/\n"))
        }
        guard !draining else { return refuse(connection, HTTPResponse(status: 503, body: "the stream has ended\n")) }
        let context = readerContext
        let admitted = admit(peer: peer) {
            WebSocketViewer(connection, peer: peer, response: handshake.response, bytesAfterHead: rest, context)
        }
        if !admitted { refuse(connection, HTTPResponse(status: 503, body: "too many readers\n")) }
    }

    /// Answers an upgrade that does not become a reader, and ends once that is written.
    private func refuse(_ connection: Connection, _ response: HTTPResponse) {
        endWithoutReader(connection, saying: [response.bytes[...]])
    }
}
