import Media
import Output
import Testing

/// The `--hls` playlist model: the window slides by media time, blocked reloads are answered
/// when what they ask for is there, parts are byte ranges of their segment and the hint names
/// where the next begins, a new upstream or header is marked, program date-times are RFC 3339.
@Suite struct HLSPlaylistTests {
    static func playlist(segments: Int, window: Double = 3, partsEach: Int = 5) -> HLSPlaylist {
        var p = HLSPlaylist(targetDuration: 2, partTarget: .seconds(0.2), window: .seconds(window))
        for n in 0..<segments {
            p.beginSegment(programDateNs: UInt64(n) * 1_000_000_000)
            for k in 0..<partsEach { p.addPart(duration: .seconds(0.2), independent: k == 0, length: 100) }
            _ = p.completeSegment()
        }
        return p
    }

    @Test func theWindowKeepsTheNewestSegmentsCoveringItAndAtLeastThree() {
        var p = Self.playlist(segments: 6, window: 2.5)
        // 1 s segments, a 2.5 s window: three complete ones cover it.
        #expect(p.segments.map(\.sequence) == [3, 4, 5])
        p.beginSegment(programDateNs: 6_000_000_000)
        p.addPart(duration: .seconds(0.2), independent: true, length: 100)
        // 4, 5 and the 0.2 s of 6 do not cover the window yet.
        #expect(p.completeSegment().isEmpty)
        p.beginSegment(programDateNs: 6_200_000_000)
        p.addPart(duration: .seconds(1), independent: true, length: 100)
        let removed = p.completeSegment()
        #expect(removed.map(\.sequence) == [3])
        #expect(p.render().contains("#EXT-X-MEDIA-SEQUENCE:4\n"))
    }

    @Test func blockedReloadsAreAnsweredWhenThePartOrSegmentIsThere() {
        var p = Self.playlist(segments: 2, window: 10)
        p.beginSegment(programDateNs: 2_000_000_000)
        p.addPart(duration: .seconds(0.2), independent: true, length: 100)
        #expect(p.has(sequence: 2, part: 0))
        #expect(!p.has(sequence: 2, part: 1))
        #expect(!p.has(sequence: 2, part: nil))
        #expect(p.has(sequence: 1, part: nil))
        // Past the last part of a complete segment: the next segment's first part.
        #expect(p.has(sequence: 1, part: 5))
        #expect(!p.has(sequence: 3, part: 0))
        #expect(p.hint?.sequence == 2 && p.hint?.offset == 100)
        #expect(p.render().hasSuffix("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"segment2.m4s\",BYTERANGE-START=100\n"))
        p.end()
        #expect(p.has(sequence: 9, part: 3))
        #expect(p.render().hasSuffix("#EXT-X-ENDLIST\n"))
    }

    @Test func partsAreListedForTheNewestSegmentsOnly() {
        let text = Self.playlist(segments: 5, window: 10).render()
        #expect(!text.contains("URI=\"segment1.m4s\""))
        #expect(text.contains("#EXT-X-PART:DURATION=0.200,URI=\"segment2.m4s\",BYTERANGE=\"100@0\",INDEPENDENT=YES\n"))
        #expect(text.contains("#EXT-X-PART:DURATION=0.200,URI=\"segment4.m4s\",BYTERANGE=\"100@400\"\n"))
        #expect(text.contains("#EXTINF:1.000,\nsegment4.m4s\n"))
    }

    @Test func theHintMovesToTheNextSegmentOnceTheOpenOneIsLongEnough() {
        var p = HLSPlaylist(targetDuration: 1, partTarget: .seconds(0.2), window: .seconds(10), segmentDuration: .seconds(1))
        p.beginSegment(programDateNs: 0)
        for k in 0..<4 { p.addPart(duration: .seconds(0.2), independent: k == 0, length: 50 + k) }
        #expect(p.hint?.sequence == 0 && p.hint?.offset == 50 + 51 + 52 + 53)
        p.addPart(duration: .seconds(0.2), independent: false, length: 10)
        // 1 s: the next IDR ends it, and the next part begins the next segment.
        #expect(p.hint?.sequence == 1 && p.hint?.offset == 0)
        _ = p.completeSegment()
        #expect(p.hint?.sequence == 1 && p.hint?.offset == 0)
        #expect(p.segment(named: "segment0.m4s")?.bytes == 216)
    }

    @Test func aNewUpstreamIsADiscontinuityAndNewParameterSetsANewMap() {
        var p = HLSPlaylist(targetDuration: 1, partTarget: .seconds(0.5), window: .seconds(1), segmentDuration: .seconds(1))
        for (n, (discontinuity, header)) in [(false, 0), (true, 0), (false, 0), (true, 1), (false, 1), (false, 1)].enumerated() {
            p.beginSegment(programDateNs: UInt64(n) * 1_000_000_000, discontinuity: discontinuity, initName: HLSPlaylist.initName(generation: header))
            p.addPart(duration: .seconds(1), independent: true, length: 10)
            _ = p.completeSegment()
        }
        // Segments 0 to 2 left the window with one discontinuity: the count says so.
        let text = p.render()
        #expect(p.segments.map(\.sequence) == [3, 4, 5])
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1\n"))
        #expect(text.contains("#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init1.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:"))
        #expect(text.components(separatedBy: "#EXT-X-MAP").count == 2)
        var q = HLSPlaylist(targetDuration: 1, partTarget: .seconds(0.5), window: .seconds(10))
        q.beginSegment(programDateNs: 0)
        q.addPart(duration: .seconds(1), independent: true, length: 10)
        _ = q.completeSegment()
        q.beginSegment(programDateNs: 5_000_000_000, discontinuity: true, initName: "init1.mp4")
        q.addPart(duration: .seconds(1), independent: true, length: 10)
        #expect(q.render().contains("#EXTINF:1.000,\nsegment0.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init1.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:1970-01-01T00:00:05.000Z\n"))
        #expect(!q.render().contains("DISCONTINUITY-SEQUENCE"))
    }

    @Test func programDateTimesAreRFC3339() {
        #expect(HLSPlaylist.iso8601(1_796_148_673_123_000_000) == "2026-12-01T18:11:13.123Z")
        #expect(HLSPlaylist.iso8601(951_782_400_005_000_000) == "2000-02-29T00:00:00.005Z")
        #expect(CivilTime.seconds(year: 2026, month: 12, day: 1, hour: 18, minute: 11, second: 13) == 1_796_148_673)
    }
}
