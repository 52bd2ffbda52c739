import EventLoop

/// The `--metrics ADDR` endpoint: a small HTTP/1.x server on the loop that answers through a
/// table of routes (`HTTPRoutes`: method + path → handler).
///
/// A route either answers (`.respond`: one response, then `Connection: close`) or takes the
/// connection over (`.takeOver`: the socket and the bytes already read past the request head
/// go to another owner, e.g. a WebSocket). An unknown path answers 404, a known path with
/// another method 405 with `Allow`, a malformed request 400. Requests are bounded in size
/// (head: `headerLimit`, `431` and close; body: the route's `maxBody`, `413`) and in time
/// (`requestTimeout` for head and body together: close without answer). One request per
/// connection. Every connection ends gracefully (`Connection.closeGracefully`, at most
/// `closeTimeout`): a client still sending (a body past the limit) gets the answer, not a
/// reset that would make it drop the answer unread.
///
/// Loop-owned: create, start, close and release it on the loop thread.
public final class HTTPServer {
    private let loop: EventLoop
    private var listener: Listener!
    private var clients: [ObjectIdentifier: Client] = [:]
    public var routes: HTTPRoutes
    public let headerLimit: Int
    public let requestTimeout: Double
    /// How long an answered connection waits for the client's end of stream.
    public var closeTimeout: Double = 2

    /// Where it listens (with the kernel's port for port 0).
    public var boundEndpoint: Endpoint { listener.boundEndpoint }
    /// Connections open now (taken-over ones are no longer counted).
    public var clientCount: Int { clients.count }

    /// Binds and listens at once, so a busy address is reported here.
    public init(
        loop: EventLoop, endpoint: Endpoint, routes: HTTPRoutes = HTTPRoutes(), headerLimit: Int = 8 << 10, requestTimeout: Double = 5
    ) throws(SocketError) {
        self.loop = loop
        self.routes = routes
        self.headerLimit = headerLimit
        self.requestTimeout = requestTimeout
        self.listener = try Listener(loop: loop, endpoint: endpoint) { [unowned self] socket in self.accept(socket) }
    }

    /// The server of `--metrics`: `GET /metrics` answers the Prometheus text from `metrics`,
    /// `GET /healthz` answers `ok`. More routes can be added before `start()`.
    public convenience init(
        loop: EventLoop, endpoint: Endpoint, headerLimit: Int = 8 << 10, requestTimeout: Double = 5, metrics: @escaping () -> String
    ) throws(SocketError) {
        var routes = HTTPRoutes()
        routes.add("GET", "/metrics") { _ in
            HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics())
        }
        routes.add("GET", "/healthz") { _ in HTTPResponse(status: 200, body: "ok\n") }
        try self.init(loop: loop, endpoint: endpoint, routes: routes, headerLimit: headerLimit, requestTimeout: requestTimeout)
    }

    public func start() { listener.start() }

    /// Stops listening and drops every open connection.
    public func close() {
        listener.close()
        for client in clients.values { client.close() }
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

    /// One HTTP connection: collects the request (head, then body), then answers once and
    /// closes, or hands the connection over.
    fileprivate final class Client {
        unowned let server: HTTPServer
        let connection: Connection
        var buffer: [UInt8] = []
        /// The parsed head and its route, once the head is complete.
        var pending: (request: HTTPRequest, route: HTTPRoutes.Route, bodyStart: Int, bodyLength: Int)?
        var answered = false
        var deadline: LoopTimer?

        init(server: HTTPServer, connection: Connection) {
            self.server = server
            self.connection = connection
        }

        func start() {
            connection.onData = { [unowned self] bytes in self.received(bytes) }
            connection.onClose = { [unowned self] _ in self.done() }
            let deadline = LoopTimer(loop: server.loop) { [unowned self] in
                self.answered = true
                self.connection.closeGracefully(within: self.server.closeTimeout)
            }
            self.deadline = deadline
            deadline.start(after: server.requestTimeout)
            connection.start()
        }

        func close() {
            deadline?.stop()
            connection.close()
        }

        func received(_ bytes: UnsafeRawBufferPointer) {
            guard !answered else { return }
            buffer.append(contentsOf: bytes)
            if pending == nil {
                guard let end = HTTPRequest.endOfHead(buffer) else {
                    if buffer.count > server.headerLimit { answer(HTTPResponse(status: 431)) }
                    return
                }
                guard end <= server.headerLimit + 4 else { return answer(HTTPResponse(status: 431)) }
                guard let request = HTTPRequest(head: buffer[..<end]) else { return answer(HTTPResponse(status: 400)) }
                switch server.routes.match(method: request.method, path: request.path) {
                case .notFound:
                    return answer(HTTPResponse(status: 404))
                case .methodNotAllowed(let allowed):
                    var response = HTTPResponse(status: 405)
                    response.headers.append(("Allow", allowed.joined(separator: ", ")))
                    return answer(response)
                case .found(let route):
                    if case .takeOver(let handler) = route.handler { return takeOver(request, after: end, handler) }
                    if request.header("transfer-encoding") != nil { return answer(HTTPResponse(status: 411)) }
                    let lengthText = request.header("content-length") ?? "0"
                    guard let length = Int(lengthText), length >= 0 else { return answer(HTTPResponse(status: 400)) }
                    guard length <= route.maxBody else { return answer(HTTPResponse(status: 413)) }
                    pending = (request, route, end, length)
                }
            }
            guard let pending, buffer.count - pending.bodyStart >= pending.bodyLength else { return }
            var complete = pending.request
            complete.body = Array(buffer[pending.bodyStart..<(pending.bodyStart + pending.bodyLength)])
            guard case .respond(let handler) = pending.route.handler else { return }
            answer(handler(complete))
        }

        func answer(_ response: HTTPResponse) {
            answered = true
            deadline?.stop()
            connection.write(chunks: [response.bytes[...]])
            connection.closeGracefully(within: server.closeTimeout)
        }

        /// Gives the socket and the bytes past the head to the route's owner; this client is done.
        func takeOver(_ request: HTTPRequest, after end: Int, _ handler: HTTPRoutes.TakeOver) {
            answered = true
            deadline?.stop()
            let rest = Array(buffer[end...])
            buffer = []
            guard let socket = connection.detach() else { return }
            server.remove(self)
            handler(request, socket, rest)
        }

        func done() {
            deadline?.stop()
            server.remove(self)
        }
    }
}

/// The routing table of an `HTTPServer`: method + path → handler. Paths match exactly (the
/// query string is not part of the path).
public struct HTTPRoutes {
    /// Answers a complete request (head and body).
    public typealias Respond = (HTTPRequest) -> HTTPResponse
    /// Takes the connection over: the request head, the socket (non-blocking, now owned by
    /// the handler), and the bytes the peer sent past the head that were already read.
    public typealias TakeOver = (HTTPRequest, Socket, [UInt8]) -> Void

    public enum Handler {
        case respond(Respond)
        case takeOver(TakeOver)
    }

    public struct Route {
        public let method: String
        public let path: String
        /// The largest request body accepted (`Content-Length`); larger ones get 413.
        public let maxBody: Int
        public let handler: Handler
    }

    public enum Match {
        case found(Route)
        case notFound
        /// The path is known, not with this method: the methods it takes, for `Allow`.
        case methodNotAllowed([String])
    }

    private var routes: [String: [Route]] = [:]

    public init() {}

    /// Adds (or replaces) the route for `method` and `path`.
    public mutating func add(_ method: String, _ path: String, maxBody: Int = 0, handler: Handler) {
        var list = routes[path, default: []]
        list.removeAll { $0.method == method }
        list.append(Route(method: method, path: path, maxBody: maxBody, handler: handler))
        routes[path] = list
    }

    /// Adds a route that answers.
    public mutating func add(_ method: String, _ path: String, maxBody: Int = 0, _ respond: @escaping Respond) {
        add(method, path, maxBody: maxBody, handler: .respond(respond))
    }

    public func match(method: String, path: String) -> Match {
        guard let list = routes[path] else { return .notFound }
        if let route = list.first(where: { $0.method == method }) { return .found(route) }
        return .methodNotAllowed(list.map(\.method))
    }
}

/// One HTTP/1.x request: the request line, the header fields and (for `.respond` routes) the body.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The request target as sent (`/bitrate?4M`).
    public let target: String
    /// The target up to `?`.
    public let path: String
    /// The target after `?`, if any.
    public let query: String?
    public let version: String
    /// Header fields in order, names lowercased.
    public let headers: [(name: String, value: String)]
    public var body: [UInt8] = []

    /// The first value of header `name` (any case).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }

    /// Parses a head (request line and header fields, up to the blank line); nil when malformed.
    public init?(head: ArraySlice<UInt8>) {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self).trimmingCarriageReturn }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        method = parts[0]
        target = parts[1]
        version = parts[2]
        let split = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(split[0])
        query = split.count > 1 ? String(split[1]) : nil
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            fields.append((name, value))
        }
        headers = fields
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

/// One complete HTTP/1.1 response with `Connection: close`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: String
    /// Extra header fields (`Allow`).
    public var headers: [(String, String)] = []

    /// A response; without a body, the reason phrase in lower case (`not found`).
    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body ?? "\(HTTPResponse.reason(status).lowercased())\n"
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }

    public var bytes: [UInt8] {
        let body = Array(self.body.utf8)
        var head = "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}

extension String {
    fileprivate var trimmingCarriageReturn: String {
        hasSuffix("\r") ? String(dropLast()) : self
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
