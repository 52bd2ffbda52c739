import Consumer
import Testing

/// The media time rule: SEI, else counted at the VUI rate (files), else arrival (sockets).
@Suite struct MediaClockTests {
    @Test func seiTimeWins() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(pts90k: 450_000, frameRate: 30, arrivalNs: 10) == 5)
    }

    @Test func filesCountAccessUnitsAtTheVUIRate() {
        var c = MediaClock(source: .counted)
        var last = 0.0
        for i in 0..<151 { last = c.time(pts90k: nil, frameRate: 30, arrivalNs: UInt64(i)) }
        #expect(abs(last - 5) < 1e-9)
    }

    @Test func filesWithoutVUIUseTheFallbackRate() {
        var c = MediaClock(source: .counted, fallbackFrameRate: 25)
        _ = c.time(pts90k: nil, frameRate: nil, arrivalNs: 0)
        #expect(abs(c.time(pts90k: nil, frameRate: nil, arrivalNs: 0) - 0.04) < 1e-9)
    }

    @Test func socketsUseArrivalTimeSinceTheFirstUnit() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(pts90k: nil, frameRate: 30, arrivalNs: 7_000_000_000) == 0)
        #expect(c.time(pts90k: nil, frameRate: 30, arrivalNs: 9_500_000_000) == 2.5)
    }
}
