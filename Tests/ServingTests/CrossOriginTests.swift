import Serving
import XCTest

/// The CORS grant of the WHEP endpoint (`--web-origin`): only the origins given, `*` for any.
final class CrossOriginTests: XCTestCase {
    static func request(_ method: String, _ path: String, origin: String?) throws -> HTTPRequest {
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n" + (origin.map { "Origin: \($0)\r\n" } ?? "") + "\r\n"
        return try XCTUnwrap(HTTPRequest(head: Array(head.utf8)[...]))
    }

    static func fields(_ response: HTTPResponse) -> [String: String] {
        Dictionary(response.headers.map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
    }

    func testAPreflightFromAListedOriginIsGrantedWhatWHEPNeeds() throws {
        let cors = CrossOrigin(allowed: ["https://player.example:8443"])
        let response = cors.preflight(try Self.request("OPTIONS", "/whep", origin: "https://player.example:8443"), acceptsPost: true)
        XCTAssertEqual(response.status, 204)
        let fields = Self.fields(response)
        XCTAssertEqual(fields["Access-Control-Allow-Origin"], "https://player.example:8443")
        XCTAssertEqual(fields["Access-Control-Allow-Methods"], "POST, OPTIONS")
        XCTAssertEqual(fields["Access-Control-Allow-Headers"], "Authorization, Content-Type, If-Match")
        XCTAssertEqual(fields["Access-Control-Expose-Headers"], "Location, Link, ETag")
        XCTAssertEqual(fields["Vary"], "Origin")
        XCTAssertEqual(fields["Accept-Post"], "application/sdp")
        // A 204 has no body and no length.
        let text = String(decoding: response.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 204 No Content\r\n") && text.hasSuffix("\r\n\r\n") && !text.contains("Content-Length"), text)
    }

    func testAnotherOriginOrNoneGetsNoGrant() throws {
        let cors = CrossOrigin(allowed: ["https://player.example"])
        for origin in ["https://evil.example", "http://player.example", nil] {
            let request = try Self.request("OPTIONS", "/whep/abc", origin: origin)
            let fields = Self.fields(cors.preflight(request, acceptsPost: false))
            XCTAssertNil(fields["Access-Control-Allow-Origin"], "\(origin ?? "none")")
            XCTAssertEqual(fields["Allow"], "DELETE, OPTIONS")
            XCTAssertTrue(cors.headers(request).isEmpty)
        }
        XCTAssertTrue(CrossOrigin().headers(try Self.request("POST", "/whep", origin: "https://player.example")).isEmpty, "none by default")
    }

    func testAnyOriginWithAStar() throws {
        let cors = CrossOrigin(allowed: ["*"])
        let headers = cors.headers(try Self.request("POST", "/whep", origin: "http://127.0.0.1:9000"))
        XCTAssertEqual(headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1, "*")
        XCTAssertNil(headers.first { $0.0 == "Vary" }, "the same answer for every origin")
    }

    func testOriginsAreCheckedAsGiven() {
        XCTAssertNil(CrossOrigin.problem("*"))
        XCTAssertNil(CrossOrigin.problem("https://player.example:8443"))
        XCTAssertNil(CrossOrigin.problem("http://192.0.2.7"))
        XCTAssertEqual(CrossOrigin.problem("player.example"), "player.example is not an origin: expected http://HOST[:PORT], https://HOST[:PORT] or *")
        XCTAssertEqual(CrossOrigin.problem("https://player.example/"), "https://player.example/ is not an origin: no path, query or user part (https://player.example:8443)")
    }
}
