import IO

/// The browser page's viewers: the upgrade of `GET /ws` taken over from the `HTTPServer`,
/// checked, and admitted as a reader (`WebSocketViewer`).
extension StreamServer {
    /// The `.takeOver` handler of the browser page's stream route (`GET /ws`): see
    /// `acceptViewer`.
    public var webSocketRoute: HTTPRoutes.Handler {
        .takeOver { [unowned self] request, socket, rest in self.acceptViewer(request, socket: socket, bytesAfterHead: rest) }
    }

    /// Takes over an upgrade request an `HTTPServer` handed on: a valid one from the page's
    /// own origin (`WebSocketHandshake`) becomes a reader, answered `101`, then one message
    /// per access unit; an invalid one gets its error status (403 for another origin), and
    /// one past `maxReaders` or after the stream ended a 503, then the socket closes.
    public func acceptViewer(_ request: HTTPRequest, socket: Socket, bytesAfterHead rest: [UInt8]) {
        loop.preconditionOnLoop()
        let peer = ((try? socket.peerAddress().description) ?? "?") + " (websocket)"
        let handshake: WebSocketHandshake
        switch WebSocketHandshake.validate(request) {
        case .failure(let failure): return refuse(socket, failure.response)
        case .success(let accepted): handshake = accepted
        }
        // A TLS reverse proxy (X-Forwarded-Proto, which no page can set) forwards its own
        // name: DNS rebinding cannot reach it without a certificate for the foreign name.
        if viewersOnlyFromLoopbackHosts, request.header("x-forwarded-proto") == nil, !WebSocketHandshake.isLoopbackHost(request.header("host") ?? "") {
            return refuse(socket, HTTPResponse(status: 403, body: "Host is not this machine: open the page as http://127.0.0.1:PORT/ or http://localhost:PORT/\n"))
        }
        guard !draining else { return refuse(socket, HTTPResponse(status: 503, body: "the stream has ended\n")) }
        let context = readerContext
        let admitted = admit(peer: peer) {
            WebSocketViewer(socket, peer: peer, response: handshake.response, bytesAfterHead: rest, context)
        }
        if !admitted { refuse(socket, HTTPResponse(status: 503, body: "too many readers\n")) }
    }

    /// Answers an upgrade that does not become a reader, and ends once that is written.
    private func refuse(_ socket: Socket, _ response: HTTPResponse) {
        endWithoutReader(socket, saying: [response.bytes[...]])
    }
}
