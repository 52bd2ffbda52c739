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

    /// A range of a segment still being written: its length is not known yet, so an open
    /// range stays open; a segment of the window is growing when it is the open one, or the
    /// next one the hint may name.
    @Test func rangesOfASegmentBeingWritten() {
        #expect(HLSService.openRange("bytes=100-") ?? (0, 0) == (100, nil))
        #expect(HLSService.openRange("bytes=0-99") ?? (0, nil) == (0, 99))
        #expect(HLSService.openRange("bytes=-10") == nil)
        #expect(HLSService.openRange("bytes=9-3") == nil)
        #expect(HLSService.openRange("bytes=0-1,5-6") == nil)
        #expect(HLSService.openRange(nil) == nil)
        var p = HLSPlaylist(targetDuration: 1, partTarget: .seconds(0.2), window: .seconds(10), segmentDuration: .seconds(1))
        p.beginSegment(programDateNs: 0)
        p.addPart(duration: .seconds(1), independent: true, length: 10)
        _ = p.completeSegment()
        p.beginSegment(programDateNs: 1)
        p.addPart(duration: .seconds(0.2), independent: true, length: 10)
        #expect(HLSService.growing("segment0.m4s", in: p) == nil)
        #expect(HLSService.growing("segment1.m4s", in: p)??.bytes == 10)
        #expect(HLSService.growing("segment2.m4s", in: p).map { $0 == nil } == true)
        #expect(HLSService.growing("segment3.m4s", in: p) == nil)
        #expect(HLSService.growing("init.mp4", in: p) == nil)
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
