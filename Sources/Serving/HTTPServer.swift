import IO

/// The `--metrics ADDR` endpoint: a small HTTP/1.x server on the loop that answers through a
/// table of routes (`HTTPRoutes`: method + path → handler).
///
/// A route either answers (`.respond`: one response, then `Connection: close`) or takes the
/// connection over (`.takeOver`: the connection, its transport with it, and the bytes already
/// read past the request head go to another owner, e.g. a WebSocket). An unknown path answers 404, a known path with
/// another method 405 with `Allow`, a malformed request 400. Requests are bounded in size
/// (head: `headerLimit`, `431` and close; body: the route's `maxBody`, `413`) and in time
/// (`requestTimeout` for head and body together: close without answer). One request per
/// connection. With `access` set, a route that needs a permission (`HTTPRoutes.Route.permission`)
/// is served only to a request whose token grants it (`AccessGuard`): 401 without a good
/// token, 403 with one that lacks the permission, both after the guard's delay for the peer's
/// host, and a route that takes over (the WebSocket) is never reached. Every connection ends gracefully (`Connection.closeGracefully`, at most
/// `closeTimeout`): a client still sending (a body past the limit) gets the answer, not a
/// reset that would make it drop the answer unread.
///
/// Loop-owned: create, start, close and release it on the loop thread.
public final class HTTPServer {
    private let loop: EventLoop
    private var listener: Listener!
    private var clients: [ObjectIdentifier: Client] = [:]
    public var routes: HTTPRoutes
    /// The token check; nil serves every route to anyone who reaches it.
    public var access: AccessGuard?
    /// Header fields added to the guard's 401 and 403 (a route's CORS grant, so that a
    /// player on another origin can read why: `WHEPService`).
    public var refusalHeaders: (HTTPRequest) -> [(String, String)] = { _ in [] }
    /// The transport of each accepted connection (TLS); nil: the socket's bytes as they are.
    /// Nil from it refuses the connection (closed at once).
    public var makeTransport: ((Socket) -> (any ByteTransport)?)?
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
        routes.add("GET", "/metrics", needs: .metrics) { _ in
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
        let host = (try? socket.peerAddress().host) ?? "?"
        var transport: (any ByteTransport)?
        if let makeTransport {
            guard let made = makeTransport(socket) else { return socket.close() }
            transport = made
        }
        let client = Client(server: self, connection: Connection(loop: loop, socket: socket, transport: transport), host: host)
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
        var reader: HTTPRequestReader
        /// The route of the head, once the head is complete and its route answers.
        var route: HTTPRoutes.Route?
        /// Answered (or timed out): what the client still sends is read to its end and dropped.
        var answered = false
        var deadline: LoopTimer?
        /// The peer's address without its port: what failed attempts are slowed by.
        let host: String
        /// A refusal waiting for the guard's delay.
        var refusal: LoopTimer?

        init(server: HTTPServer, connection: Connection, host: String) {
            self.server = server
            self.connection = connection
            self.host = host
            self.reader = HTTPRequestReader(headerLimit: server.headerLimit)
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
            cancelRefusal()
            connection.close()
        }

        func cancelRefusal() {
            guard let refusal else { return }
            refusal.stop()
            self.refusal = nil
            server.access?.answered(host: host)
        }

        func received(_ bytes: UnsafeRawBufferPointer) {
            guard !answered else { return }
            handle(reader.push(bytes))
        }

        func handle(_ step: HTTPRequestReader.Step) {
            switch step {
            case .more: return
            case .refuse(let status): answer(HTTPResponse(status: status.code))
            case .complete(let request):
                guard case .respond(let handler) = route?.handler else { return }
                answer(handler(request.removingToken()))
            case .head(let request):
                switch server.routes.match(method: request.method, path: request.path) {
                case .notFound:
                    answer(HTTPResponse(status: 404))
                case .methodNotAllowed(let allowed):
                    var response = HTTPResponse(status: 405)
                    response.headers.append(("Allow", allowed.joined(separator: ", ")))
                    answer(response)
                case .found(let found):
                    if let needed = found.permission, let access = server.access {
                        let decision = access.decide(request, needs: needed)
                        guard decision == .allowed else { return refuse(decision, access, server.refusalHeaders(request)) }
                    }
                    let request = request.removingToken()
                    if case .takeOver(let handler) = found.handler { return takeOver(request, handler) }
                    route = found
                    handle(reader.expectBody(maxBody: found.maxBody))
                }
            }
        }

        /// A request without the token its route needs: answered once the guard's delay for
        /// this host is over (or closed at once when too many of its answers wait).
        func refuse(_ decision: AccessGuard.Decision, _ access: AccessGuard, _ extra: [(String, String)]) {
            answered = true
            deadline?.stop()
            var response = HTTPResponse(status: decision == .forbidden ? 403 : 401, body: decision == .forbidden
                ? "this token does not allow that\n" : "a token is needed: open the address nalcast printed, or send Authorization: Bearer TOKEN\n")
            if decision == .unauthorized { response.headers.append(("WWW-Authenticate", "Bearer realm=\"nalcast\"")) }
            response.headers += extra
            guard let delay = access.failed(host: host) else {
                return connection.closeGracefully(within: server.closeTimeout)
            }
            let timer = LoopTimer(loop: server.loop) { [unowned self] in
                self.refusal = nil
                access.answered(host: self.host)
                self.connection.write(chunks: [response.bytes[...]])
                self.connection.closeGracefully(within: self.server.closeTimeout)
            }
            refusal = timer
            timer.start(after: delay)
        }

        func answer(_ response: HTTPResponse) {
            answered = true
            deadline?.stop()
            connection.write(chunks: [response.bytes[...]])
            connection.closeGracefully(within: server.closeTimeout)
        }

        /// Gives the connection and the bytes past the head to the route's owner; this client
        /// is done. Reading pauses until the new owner starts the connection again.
        func takeOver(_ request: HTTPRequest, _ handler: HTTPRoutes.TakeOver) {
            answered = true
            deadline?.stop()
            let rest = reader.bytesAfterHead
            guard !connection.isClosed else { return }
            connection.pauseReading()
            connection.onData = nil
            connection.onClose = nil
            server.remove(self)
            handler(request, connection, rest)
        }

        func done() {
            deadline?.stop()
            cancelRefusal()
            server.remove(self)
        }
    }
}

/// The routing table of an `HTTPServer`: method + path → handler. Paths match exactly (the
/// query string is not part of the path).
public struct HTTPRoutes {
    /// Answers a complete request (head and body).
    public typealias Respond = (HTTPRequest) -> HTTPResponse
    /// Takes the connection over: the request head, the connection (reading paused, its
    /// callbacks unset: now the handler's, which calls `start()`), and the bytes the peer
    /// sent past the head that were already read.
    public typealias TakeOver = (HTTPRequest, Connection, [UInt8]) -> Void

    public enum Handler {
        case respond(Respond)
        case takeOver(TakeOver)
    }

    public struct Route {
        public let method: String
        public let path: String
        /// The largest request body accepted (`Content-Length`); larger ones get 413.
        public let maxBody: Int
        /// What a token must allow when the server checks tokens (`HTTPServer.access`);
        /// nil for a route anyone may reach (`/healthz`).
        public let permission: Permission?
        public let handler: Handler
    }

    public enum Match {
        case found(Route)
        case notFound
        /// The path is known, not with this method: the methods it takes, for `Allow`.
        case methodNotAllowed([String])
    }

    private var routes: [String: [Route]] = [:]
    /// Routes for every path under a prefix (`/hls/`), tried when no exact path matches.
    private var prefixes: [String: [Route]] = [:]

    public init() {}

    /// Adds (or replaces) the route for `method` and `path`.
    public mutating func add(_ method: String, _ path: String, maxBody: Int = 0, needs permission: Permission? = nil, handler: Handler) {
        var list = routes[path, default: []]
        list.removeAll { $0.method == method }
        list.append(Route(method: method, path: path, maxBody: maxBody, permission: permission, handler: handler))
        routes[path] = list
    }

    /// Adds a route that answers.
    public mutating func add(_ method: String, _ path: String, maxBody: Int = 0, needs permission: Permission? = nil, _ respond: @escaping Respond) {
        add(method, path, maxBody: maxBody, needs: permission, handler: .respond(respond))
    }

    /// Adds (or replaces) the route for `method` and every path that begins with `prefix`.
    public mutating func addPrefix(_ method: String, _ prefix: String, maxBody: Int = 0, needs permission: Permission? = nil, handler: Handler) {
        var list = prefixes[prefix, default: []]
        list.removeAll { $0.method == method }
        list.append(Route(method: method, path: prefix, maxBody: maxBody, permission: permission, handler: handler))
        prefixes[prefix] = list
    }

    public func match(method: String, path: String) -> Match {
        let prefixed = prefixes.filter { path.hasPrefix($0.key) }.max { $0.key.count < $1.key.count }?.value
        guard let list = routes[path] ?? prefixed else { return .notFound }
        if let route = list.first(where: { $0.method == method }) { return .found(route) }
        return .methodNotAllowed(list.map(\.method))
    }
}
