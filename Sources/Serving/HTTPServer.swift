/// The `--metrics ADDR` endpoint: a tiny HTTP/1.x server on the loop.
///
/// `GET /metrics` answers the Prometheus text from `metrics`, `GET /healthz` answers `ok`;
/// other paths 404, other methods 405, a malformed request line 400. Request headers are
/// bounded in size (`431` and close) and time (close without answer). One request per
/// connection: every response says `Connection: close`.
///
/// Loop-owned: create, start, close and release it on the loop thread.
public final class MetricsServer {
    private let loop: EventLoop
    private var listener: Listener!
    private var clients: [ObjectIdentifier: Client] = [:]
    private let metrics: () -> String
    public let headerLimit: Int
    public let headerTimeout: Double

    /// Where it listens (with the kernel's port for port 0).
    public var boundEndpoint: Endpoint { listener.boundEndpoint }
    /// Connections open now.
    public var clientCount: Int { clients.count }

    public init(
        loop: EventLoop, endpoint: Endpoint, headerLimit: Int = 8 << 10, headerTimeout: Double = 5,
        metrics: @escaping () -> String
    ) throws(SocketError) {
        self.loop = loop
        self.metrics = metrics
        self.headerLimit = headerLimit
        self.headerTimeout = headerTimeout
        self.listener = try Listener(loop: loop, endpoint: endpoint) { [unowned self] socket in self.accept(socket) }
    }

    public func start() { listener.start() }

    /// Stops listening and drops every open connection.
    public func close() {
        listener.close()
        for client in clients.values { client.connection.close() }
        clients = [:]
    }

    private func accept(_ socket: Socket) {
        let client = Client(server: self, connection: Connection(loop: loop, socket: socket))
        clients[ObjectIdentifier(client)] = client
        client.start()
    }

    fileprivate func remove(_ client: Client) {
        clients[ObjectIdentifier(client)] = nil
    }

    fileprivate func respond(to request: ArraySlice<UInt8>) -> HTTPResponse {
        guard let line = request.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first else {
            return HTTPResponse(status: 400)
        }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
            .map { String(decoding: $0, as: UTF8.self).trimmingCarriageReturn }
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return HTTPResponse(status: 400) }
        guard parts[0] == "GET" else { return HTTPResponse(status: 405) }
        let path = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        switch path {
        case "/metrics":
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics())
        case "/healthz":
            return HTTPResponse(status: 200, body: "ok\n")
        default:
            return HTTPResponse(status: 404)
        }
    }

    /// One HTTP connection: collects the request head, answers once, closes.
    fileprivate final class Client {
        unowned let server: MetricsServer
        let connection: Connection
        var head: [UInt8] = []
        var answered = false
        var deadline: LoopTimer?

        init(server: MetricsServer, connection: Connection) {
            self.server = server
            self.connection = connection
        }

        func start() {
            connection.onData = { [unowned self] bytes in self.received(bytes) }
            connection.onClose = { [unowned self] _ in self.done() }
            let deadline = LoopTimer(loop: server.loop) { [unowned self] in
                self.connection.close()
                self.done()
            }
            self.deadline = deadline
            deadline.start(after: server.headerTimeout)
            connection.start()
        }

        func received(_ bytes: UnsafeRawBufferPointer) {
            guard !answered else { return }
            head.append(contentsOf: bytes)
            if let end = Client.endOfHead(head) {
                answer(server.respond(to: head[..<end]))
            } else if head.count > server.headerLimit {
                answer(HTTPResponse(status: 431))
            }
        }

        func answer(_ response: HTTPResponse) {
            answered = true
            deadline?.stop()
            connection.write(chunks: [response.bytes[...]])
            connection.closeAfterFlush()
        }

        func done() {
            deadline?.stop()
            server.remove(self)
        }

        /// The index just past the blank line ending the head (`\r\n\r\n`, or `\n\n`).
        static func endOfHead(_ bytes: [UInt8]) -> Int? {
            var newlines = 0
            for (i, byte) in bytes.enumerated() {
                if byte == UInt8(ascii: "\n") {
                    newlines += 1
                    if newlines == 2 { return i + 1 }
                } else if byte != UInt8(ascii: "\r") {
                    newlines = 0
                }
            }
            return nil
        }
    }
}

/// One complete HTTP/1.1 response with `Connection: close`.
struct HTTPResponse {
    let status: Int
    var contentType = "text/plain; charset=utf-8"
    var body = ""

    init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body ?? "\(HTTPResponse.reason(status).lowercased())\n"
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 431: "Request Header Fields Too Large"
        default: "Error"
        }
    }

    var bytes: [UInt8] {
        let body = Array(self.body.utf8)
        var head = "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        if status == 405 { head += "Allow: GET\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}

extension String {
    fileprivate var trimmingCarriageReturn: String {
        hasSuffix("\r") ? String(dropLast()) : self
    }
}
