import IO
import XCTest

final class EndpointTests: XCTestCase {
    func testParsesTCPAndUnix() throws {
        XCTAssertEqual(try Endpoint(parsing: "tcp://127.0.0.1:9000"), .tcp(host: "127.0.0.1", port: 9000))
        XCTAssertEqual(try Endpoint(parsing: "tcp://localhost"), .tcp(host: "localhost", port: 7264))
        XCTAssertEqual(try Endpoint(parsing: "tcp://[::1]:80"), .tcp(host: "::1", port: 80))
        XCTAssertEqual(try Endpoint(parsing: "tcp://[::1]"), .tcp(host: "::1", port: 7264))
        XCTAssertEqual(try Endpoint(parsing: "unix:/run/nalcast.sock"), .unix(path: "/run/nalcast.sock"))
        XCTAssertEqual(try Endpoint(parsing: "unix:rel.sock"), .unix(path: "rel.sock"))
        XCTAssertEqual(Endpoint.tcp(host: "::1", port: 7264).description, "tcp://[::1]:7264")
    }

    func testATargetToSendToNeedsItsPort() throws {
        XCTAssertEqual(try Endpoint(parsing: "tcp://recorder:9000", portRequired: true), .tcp(host: "recorder", port: 9000))
        XCTAssertEqual(try Endpoint(parsing: "unix:out.sock", portRequired: true), .unix(path: "out.sock"))
        for (text, hint) in [("tcp://recorder", "tcp://recorder:PORT"), ("tcp://[::1]", "tcp://[::1]:PORT"), ("tcp://recorder/", "tcp://recorder:PORT")] {
            XCTAssertThrowsError(try Endpoint(parsing: text, portRequired: true)) { error in
                XCTAssertEqual((error as? EndpointParseError)?.reason, "the port is missing: \(hint)")
            }
        }
    }

    func testRejectsWithClearErrors() {
        func reason(_ text: String) -> String {
            do {
                _ = try Endpoint(parsing: text)
                return "parsed"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(reason("tcp://x:99999"), "bad endpoint \"tcp://x:99999\": the port \"99999\" is not a number from 0 to 65535")
        XCTAssertEqual(reason("127.0.0.1:7264"), "bad endpoint \"127.0.0.1:7264\": expected tcp://HOST:PORT or unix:PATH")
        XCTAssertTrue(reason("tcp://::1:80").contains("brackets"))
        XCTAssertTrue(reason("tcp://:80").contains("host is missing"))
        XCTAssertTrue(reason("tcp://[zz]:80").contains("not an IPv6 address"))
        XCTAssertTrue(reason("unix:").contains("empty"))
        XCTAssertTrue(reason("unix:/" + String(repeating: "a", count: 200)).contains("longer than"))
    }

    func testLoopback() throws {
        for text in ["tcp://127.0.0.1", "tcp://127.1.2.3", "tcp://localhost", "tcp://[::1]", "tcp://[::ffff:127.0.0.1]", "unix:/x"] {
            XCTAssertTrue(try Endpoint(parsing: text).isLoopback, text)
        }
        for text in ["tcp://0.0.0.0", "tcp://192.168.1.2", "tcp://[::]", "tcp://example.com"] {
            XCTAssertFalse(try Endpoint(parsing: text).isLoopback, text)
        }
    }
}
