import Media
import Testing

/// Media time in 90 kHz ticks: conversions at the edges, seconds text as events print it.
@Suite struct MediaTimeTests {
    @Test func secondsTextHasMillisecondsRoundedHalfUp() {
        #expect(MediaTime(ticks: 450_000).secondsText == "5.000")
        #expect(MediaTime(ticks: 3003).secondsText == "0.033")
        #expect(MediaTime(ticks: 45).secondsText == "0.001")
        #expect(MediaTime(ticks: 44).secondsText == "0.000")
        #expect(MediaTime(ticks: 90 * 61_234).secondsText == "61.234")
        #expect(MediaTime(ticks: -90_000).secondsText == "0.000")
    }

    @Test func conversionsRoundToTicksAndSaturate() {
        #expect(MediaTime.seconds(1.5).ticks == 135_000)
        #expect(MediaTime.seconds(1.0 / 30).ticks == 3000)
        #expect(MediaTime.seconds(.infinity).ticks == .max)
        #expect(MediaTime.seconds(.nan) == .zero)
        #expect(MediaTime.nanoseconds(2_500_000_000).ticks == 225_000)
        #expect(MediaTime.nanoseconds(.max).ticks > 0)
        #expect(MediaTime(pts90k: .max).ticks == .max)
        #expect(MediaTime(ticks: 135_000).seconds == 1.5)
    }

    @Test func theTimestampSEIGivesItsPTSAsIs() {
        let ts = StreamTimestamp(sequence: 1, captureTimeNs: 0, pts90k: 123_456_789, isKeyframe: true)
        #expect(ts.mediaTime.ticks == 123_456_789)
        #expect(MediaTime(ticks: 10) - MediaTime(ticks: 4) == MediaTime(ticks: 6))
        #expect(MediaTime(ticks: 4) < MediaTime(ticks: 10))
    }
}
