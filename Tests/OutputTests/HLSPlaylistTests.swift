import Media
import Output
import Testing

/// The `--hls` playlist model: the window slides by media time, blocked reloads are answered
/// when what they ask for is there, program date-times are RFC 3339.
@Suite struct HLSPlaylistTests {
    static func playlist(segments: Int, window: Double = 3, partsEach: Int = 5) -> HLSPlaylist {
        var p = HLSPlaylist(targetDuration: 2, partTarget: .seconds(0.2), window: .seconds(window))
        for n in 0..<segments {
            p.beginSegment(programDateNs: UInt64(n) * 1_000_000_000)
            for k in 0..<partsEach { p.addPart(duration: .seconds(0.2), independent: k == 0) }
            _ = p.completeSegment()
        }
        return p
    }

    @Test func theWindowKeepsTheNewestSegmentsCoveringItAndAtLeastThree() {
        var p = Self.playlist(segments: 6, window: 2.5)
        // 1 s segments, a 2.5 s window: three complete ones cover it.
        #expect(p.segments.map(\.sequence) == [3, 4, 5])
        p.beginSegment(programDateNs: 6_000_000_000)
        p.addPart(duration: .seconds(0.2), independent: true)
        // 4, 5 and the 0.2 s of 6 do not cover the window yet.
        #expect(p.completeSegment().isEmpty)
        p.beginSegment(programDateNs: 6_200_000_000)
        p.addPart(duration: .seconds(1), independent: true)
        let removed = p.completeSegment()
        #expect(removed.map(\.sequence) == [3])
        #expect(p.render().contains("#EXT-X-MEDIA-SEQUENCE:4\n"))
    }

    @Test func blockedReloadsAreAnsweredWhenThePartOrSegmentIsThere() {
        var p = Self.playlist(segments: 2, window: 10)
        p.beginSegment(programDateNs: 2_000_000_000)
        p.addPart(duration: .seconds(0.2), independent: true)
        #expect(p.has(sequence: 2, part: 0))
        #expect(!p.has(sequence: 2, part: 1))
        #expect(!p.has(sequence: 2, part: nil))
        #expect(p.has(sequence: 1, part: nil))
        // Past the last part of a complete segment: the next segment's first part.
        #expect(p.has(sequence: 1, part: 5))
        #expect(!p.has(sequence: 3, part: 0))
        #expect(p.nextPartName == "part11.m4s")
        #expect(p.render().hasSuffix("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part11.m4s\"\n"))
        p.end()
        #expect(p.has(sequence: 9, part: 3))
        #expect(p.render().hasSuffix("#EXT-X-ENDLIST\n"))
    }

    @Test func partsAreListedForTheNewestSegmentsOnly() {
        let text = Self.playlist(segments: 5, window: 10).render()
        #expect(!text.contains("URI=\"part9.m4s\""))
        #expect(text.contains("URI=\"part10.m4s\",INDEPENDENT=YES"))
        #expect(text.contains("#EXTINF:1.000,\nsegment4.m4s\n"))
    }

    @Test func programDateTimesAreRFC3339() {
        #expect(HLSPlaylist.iso8601(1_796_148_673_123_000_000) == "2026-12-01T18:11:13.123Z")
        #expect(HLSPlaylist.iso8601(951_782_400_005_000_000) == "2000-02-29T00:00:00.005Z")
        #expect(CivilTime.seconds(year: 2026, month: 12, day: 1, hour: 18, minute: 11, second: 13) == 1_796_148_673)
    }
}
