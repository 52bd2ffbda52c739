import IO
import LoopTestSupport
import Serving
import XCTest

final class HTTPServerTests: XCTestCase {
    /// Serves `server` on a fresh loop, runs `body` with the bound endpoint, then stops.
    func withServer(_ make: (EventLoop) throws -> HTTPServer = HTTPServerTests.metricsServer, _ body: (Endpoint) throws -> Void) throws {
        let loop = EventLoop()
        let server = try make(loop)
        server.start()
        loop.start()
        defer {
            loop.stop()
            loop.join()
            server.close()
        }
        try body(server.boundEndpoint)
    }

    static func metricsServer(_ loop: EventLoop) throws -> HTTPServer {
        try HTTPServer(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) {
            "# TYPE nalcast_readers gauge\nnalcast_readers 3\n"
        }
    }

    func request(_ endpoint: Endpoint, _ text: String) throws -> String {
        let client = try blockingClient(to: endpoint)
        try writeAll(client, Array(text.utf8))
        return String(decoding: readToEnd(client), as: UTF8.self)
    }

    func testRoutes() throws {
        try withServer { endpoint in
            let metrics = try request(endpoint, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertTrue(metrics.hasPrefix("HTTP/1.1 200 OK\r\n"), metrics)
            XCTAssertTrue(metrics.contains("Content-Type: text/plain; version=0.0.4"))
            XCTAssertTrue(metrics.contains("Connection: close\r\n"))
            XCTAssertTrue(metrics.hasSuffix("\r\n\r\n# TYPE nalcast_readers gauge\nnalcast_readers 3\n"))

            let health = try request(endpoint, "GET /healthz?probe=1 HTTP/1.0\r\n\r\n")
            XCTAssertTrue(health.hasPrefix("HTTP/1.1 200 OK\r\n"))
            XCTAssertTrue(health.hasSuffix("\r\n\r\nok\n"))

            XCTAssertTrue(try request(endpoint, "GET /other HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
            let post = try request(endpoint, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            XCTAssertTrue(post.hasPrefix("HTTP/1.1 405 "))
            XCTAssertTrue(post.contains("\r\nAllow: GET\r\n"), post)
            XCTAssertTrue(try request(endpoint, "nonsense\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
            XCTAssertTrue(try request(endpoint, "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        }
    }

    func testOversizedHeadersAreRefusedAndClosed() throws {
        try withServer { endpoint in
            let big = "GET /metrics HTTP/1.1\r\nX-Padding: " + String(repeating: "a", count: 9000)
            let response = try request(endpoint, big)
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 431 "), response)
        }
    }

    func testRequestSplitAcrossWrites() throws {
        try withServer { endpoint in
            let client = try blockingClient(to: endpoint)
            for piece in ["GE", "T /hea", "lthz HTTP/1.1\r", "\n\r", "\n"] {
                try writeAll(client, Array(piece.utf8))
            }
            XCTAssertTrue(String(decoding: readToEnd(client), as: UTF8.self).hasSuffix("ok\n"))
        }
    }

    // MARK: - The table

    func testTableMatchesMethodAndPath() {
        var routes = HTTPRoutes()
        routes.add("GET", "/a") { _ in HTTPResponse(status: 200, body: "get a") }
        routes.add("POST", "/a") { _ in HTTPResponse(status: 200, body: "post a") }
        routes.add("PUT", "/b") { _ in HTTPResponse(status: 200) }
        let request = HTTPRequest(head: Array("GET /a HTTP/1.1\r\n\r\n".utf8)[...])!
        guard case .found(let route) = routes.match(method: "POST", path: "/a"), case .respond(let respond) = route.handler else {
            return XCTFail("POST /a not found")
        }
        XCTAssertEqual(respond(request).body, "post a")
        guard case .notFound = routes.match(method: "GET", path: "/c") else { return XCTFail("/c should be unknown") }
        guard case .methodNotAllowed(let allowed) = routes.match(method: "DELETE", path: "/a") else { return XCTFail("DELETE /a should be 405") }
        XCTAssertEqual(Set(allowed), ["GET", "POST"])
        guard case .methodNotAllowed(let onlyPut) = routes.match(method: "GET", path: "/b") else { return XCTFail("GET /b should be 405") }
        XCTAssertEqual(onlyPut, ["PUT"])
    }

    func testRequestHeadParsing() throws {
        let request = try XCTUnwrap(HTTPRequest(head: Array("POST /bitrate?4M HTTP/1.1\r\nHost: x\r\nContent-Length:  3 \r\n\r\n".utf8)[...]))
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/bitrate")
        XCTAssertEqual(request.query, "4M")
        XCTAssertEqual(request.header("content-LENGTH"), "3")
        XCTAssertNil(HTTPRequest(head: Array("GET /a FTP/1.0\r\n\r\n".utf8)[...]))
    }

    /// A route with a body gets it whole; an unknown path 404s, a known one with another method
    /// 405s with `Allow`; a body over the route's bound 413s.
    func testBodiesAndStatusesOverTheWire() throws {
        let make: (EventLoop) throws -> HTTPServer = { loop in
            var routes = HTTPRoutes()
            routes.add("POST", "/echo", maxBody: 16) { request in
                HTTPResponse(status: 200, body: "got " + String(decoding: request.body, as: UTF8.self) + " q=\(request.query ?? "-")\n")
            }
            return try HTTPServer(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0), routes: routes)
        }
        try withServer(make) { endpoint in
            let echo = try request(endpoint, "POST /echo?x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
            XCTAssertTrue(echo.hasPrefix("HTTP/1.1 200 OK\r\n"), echo)
            XCTAssertTrue(echo.hasSuffix("\r\n\r\ngot hello q=x\n"), echo)
            // The body in pieces after the head.
            let client = try blockingClient(to: endpoint)
            for piece in ["POST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\n", "ab", "cd"] { try writeAll(client, Array(piece.utf8)) }
            XCTAssertTrue(String(decoding: readToEnd(client), as: UTF8.self).hasSuffix("got abcd q=-\n"))

            XCTAssertTrue(try request(endpoint, "GET /nothing HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
            let wrong = try request(endpoint, "GET /echo HTTP/1.1\r\n\r\n")
            XCTAssertTrue(wrong.hasPrefix("HTTP/1.1 405 "), wrong)
            XCTAssertTrue(wrong.contains("\r\nAllow: POST\r\n"), wrong)
            XCTAssertTrue(try request(endpoint, "POST /echo HTTP/1.1\r\nContent-Length: 17\r\n\r\n").hasPrefix("HTTP/1.1 413 "))
            XCTAssertTrue(try request(endpoint, "POST /echo HTTP/1.1\r\nContent-Length: x\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        }
    }

    /// A take-over route gets the socket and the bytes sent after the head; the new owner
    /// keeps talking on it, the server no longer counts it.
    func testTakeOverGetsTheBytesAfterTheHead() throws {
        /// The new owner's connection, kept on the loop thread.
        final class Owner {
            var connection: Connection?
        }
        let owner = Owner()
        var server: HTTPServer?
        let make: (EventLoop) throws -> HTTPServer = { loop in
            var routes = HTTPRoutes()
            routes.add("GET", "/ws", handler: .takeOver { request, connection, rest in
                owner.connection = connection
                connection.write(chunks: [Array("\(request.path) rest=".utf8)[...], rest[...], [UInt8(ascii: "\n")]])
                // Echo whatever comes next, as the new owner.
                connection.onData = { bytes in connection.write(chunks: [Array(bytes)[...]]) }
                connection.start()
            })
            let made = try HTTPServer(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0), routes: routes)
            server = made
            return made
        }
        try withServer(make) { endpoint in
            let client = try blockingClient(to: endpoint)
            try writeAll(client, Array("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\nHELLO".utf8))
            let first = "/ws rest=HELLO\n"
            XCTAssertEqual(String(decoding: try readCount(client, first.utf8.count), as: UTF8.self), first)
            try writeAll(client, Array("ping".utf8))
            XCTAssertEqual(String(decoding: try readCount(client, 4), as: UTF8.self), "ping")
        }
        XCTAssertEqual(server?.clientCount, 0)
        owner.connection?.close()
    }

    func readCount(_ socket: Socket, _ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while out.count < count {
            let n = try buffer.withUnsafeMutableBytes { try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<(count - out.count)])) }
            guard let n, n > 0 else { break }
            out += buffer[0..<n]
        }
        return out
    }
}
