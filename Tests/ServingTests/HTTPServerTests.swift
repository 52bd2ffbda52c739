import EventLoop
import XCTest

final class MetricsServerTests: XCTestCase {
    /// Serves on a fresh loop, runs `body` with the bound endpoint, then stops.
    func withServer(_ body: (Endpoint) throws -> Void) throws {
        let loop = EventLoop()
        let server = try MetricsServer(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) {
            "# TYPE nalcast_readers gauge\nnalcast_readers 3\n"
        }
        server.start()
        loop.start()
        defer {
            loop.stop()
            loop.join()
            server.close()
        }
        try body(server.boundEndpoint)
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
            XCTAssertTrue(try request(endpoint, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
            XCTAssertTrue(try request(endpoint, "nonsense\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
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
}
