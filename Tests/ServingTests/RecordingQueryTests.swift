import Output
import Serving
import Testing

/// What `/recordings/get` and `/hls/` read from a request: RFC 3339 times, byte ranges, and
/// the prefix route they hang on.
@Suite struct RecordingQueryTests {
    @Test func rfc3339TimesWithFractionsAndOffsets() {
        #expect(RecordingService.parseRFC3339("2026-12-01T18:11:13Z") == 1_796_148_673_000_000_000)
        #expect(RecordingService.parseRFC3339("2026-12-01T18:11:13.25Z") == 1_796_148_673_250_000_000)
        #expect(RecordingService.parseRFC3339("2026-12-01T20:11:13+02:00") == 1_796_148_673_000_000_000)
        #expect(RecordingService.parseRFC3339("2026-12-01 18:11:13z") == 1_796_148_673_000_000_000)
        for bad in ["yesterday", "2026-13-01T00:00:00Z", "2026-12-01T18:11:13", "2026-12-01T18:11:13Zjunk", "2026-12-01T18:11:1xZ"] {
            #expect(RecordingService.parseRFC3339(bad) == nil, "\(bad)")
        }
    }

    @Test func byteRanges() {
        #expect(HTTPReply.range(nil, length: 100) == .whole)
        #expect(HTTPReply.range("bytes=0-9", length: 100) == .range(0, 9))
        #expect(HTTPReply.range("bytes=90-", length: 100) == .range(90, 99))
        #expect(HTTPReply.range("bytes=-10", length: 100) == .range(90, 99))
        #expect(HTTPReply.range("bytes=50-500", length: 100) == .range(50, 99))
        #expect(HTTPReply.range("bytes=100-", length: 100) == .invalid)
        #expect(HTTPReply.range("bytes=9-3", length: 100) == .invalid)
        // Several ranges are answered whole.
        #expect(HTTPReply.range("bytes=0-1,5-6", length: 100) == .whole)
    }

    @Test func aPrefixRouteTakesEveryPathUnderItAndExactPathsWin() {
        var routes = HTTPRoutes()
        routes.add("GET", "/hls/exact") { _ in HTTPResponse(status: 200) }
        routes.addPrefix("GET", "/hls/", handler: .respond { _ in HTTPResponse(status: 204) })
        guard case .found(let route) = routes.match(method: "GET", path: "/hls/segment3.m4s") else { Issue.record("no route"); return }
        #expect(route.path == "/hls/")
        guard case .found(let exact) = routes.match(method: "GET", path: "/hls/exact") else { Issue.record("no route"); return }
        #expect(exact.path == "/hls/exact")
        guard case .methodNotAllowed(let allowed) = routes.match(method: "POST", path: "/hls/x") else { Issue.record("not 405"); return }
        #expect(allowed == ["GET"])
        guard case .notFound = routes.match(method: "GET", path: "/other") else { Issue.record("found /other"); return }
    }
}
