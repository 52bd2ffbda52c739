import Consumer
import H264
import Media
import Testing

/// The media time rule: SEI, else counted at the VUI rate (files), else arrival (sockets).
@Suite struct MediaClockTests {
    @Test func seiTimeWins() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(pts90k: 450_000, frameRate: 30, arrivalNs: 10) == MediaTime(ticks: 450_000))
    }

    @Test func filesCountAccessUnitsAtTheVUIRate() {
        var c = MediaClock(source: .counted)
        var last = MediaTime.zero
        for i in 0..<151 { last = c.time(pts90k: nil, frameRate: 30, arrivalNs: UInt64(i)) }
        #expect(last == .seconds(5))
    }

    @Test func countedTimeAtAnNTSCRateStepsExactlyAndDoesNotDrift() {
        var c = MediaClock(source: .counted)
        let rate = 30_000.0 / 1001
        var times: [MediaTime] = []
        for i in 0..<3601 { times.append(c.time(pts90k: nil, frameRate: rate, arrivalNs: UInt64(i))) }
        #expect(times[1].ticks == 3003)
        #expect(times[3600].ticks == 3600 * 3003)
        // 23.976 fps: 3753.75 ticks a frame, so every fourth frame lands on a whole tick.
        var film = MediaClock(source: .counted)
        var last = MediaTime.zero
        for i in 0..<4001 { last = film.time(pts90k: nil, frameRate: 24_000.0 / 1001, arrivalNs: UInt64(i)) }
        #expect(last.ticks == 1000 * 15_015)
    }

    @Test func countingGoesOnFromTheLastSEITime() {
        var c = MediaClock(source: .counted)
        _ = c.time(pts90k: nil, frameRate: 25, arrivalNs: 0)
        #expect(c.time(pts90k: 900_000, frameRate: 25, arrivalNs: 0).ticks == 900_000)
        #expect(c.time(pts90k: nil, frameRate: 25, arrivalNs: 0).ticks == 903_600)
    }

    @Test func filesWithoutVUIUseTheFallbackRate() {
        var c = MediaClock(source: .counted, fallbackFrameRate: 25)
        _ = c.time(pts90k: nil, frameRate: nil, arrivalNs: 0)
        #expect(c.time(pts90k: nil, frameRate: nil, arrivalNs: 0) == .seconds(0.04))
    }

    @Test func socketsUseArrivalTimeSinceTheFirstUnit() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(pts90k: nil, frameRate: 30, arrivalNs: 7_000_000_000) == .zero)
        #expect(c.time(pts90k: nil, frameRate: 30, arrivalNs: 9_500_000_000) == MediaTime(ticks: 225_000))
    }

    /// A nalcast producer that restarts begins its pts_90k at 0 again: after the reconnect
    /// (a discontinuity) time goes on from where it was, one step later.
    @Test func aRestartedProducersTimeGoesOnAfterADiscontinuity() {
        var c = MediaClock(source: .arrival)
        for pts: UInt64 in [0, 3000, 6000] { _ = c.time(pts90k: pts, frameRate: 30, arrivalNs: 0) }
        c.discontinuity()
        #expect(c.time(pts90k: 0, frameRate: 30, arrivalNs: 0).ticks == 9000)
        #expect(c.time(pts90k: 3000, frameRate: 30, arrivalNs: 0).ticks == 12000)
        #expect(c.rebases == 1)
    }

    /// The same producer reached again after an outage: its time moved on, and so does ours,
    /// gap kept.
    @Test func aProducerReachedAgainKeepsItsGap() {
        var c = MediaClock(source: .arrival)
        for pts: UInt64 in [0, 3000] { _ = c.time(pts90k: pts, frameRate: 30, arrivalNs: 0) }
        c.discontinuity()
        #expect(c.time(pts90k: 300_000, frameRate: 30, arrivalNs: 0).ticks == 300_000)
        #expect(c.rebases == 0)
    }

    /// A container's times start at 0 at the first packet; a reopened source (new clock
    /// origin) goes on one step after the last time, however its clock starts.
    @Test func containerTimesStartAtZeroAndGoOnAfterAReopen() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(packetTime: MediaTime(ticks: 126_000), pts90k: nil, frameRate: 25, arrivalNs: 0) == .zero)
        #expect(c.time(packetTime: MediaTime(ticks: 129_600), pts90k: nil, frameRate: 25, arrivalNs: 0).ticks == 3600)
        c.discontinuity()
        #expect(c.time(packetTime: MediaTime(ticks: 8_000_000_000), pts90k: nil, frameRate: 25, arrivalNs: 0).ticks == 7200)
        #expect(c.time(packetTime: MediaTime(ticks: 8_000_003_600), pts90k: nil, frameRate: 25, arrivalNs: 0).ticks == 10800)
    }

    /// A given time that falls back without a discontinuity is rebased too: time never
    /// goes back.
    @Test func theSEITimeWinsOverTheContainers() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(packetTime: MediaTime(ticks: 126_000), pts90k: 450_000, frameRate: 25, arrivalNs: 0).ticks == 450_000)
    }

    @Test func aTimeThatFallsBackIsRebased() {
        var c = MediaClock(source: .counted)
        for pts: UInt64 in [90_000, 93_000, 96_000] { _ = c.time(pts90k: pts, frameRate: 30, arrivalNs: 0) }
        #expect(c.time(pts90k: 0, frameRate: 30, arrivalNs: 0).ticks == 99_000)
        #expect(c.time(pts90k: 3000, frameRate: 30, arrivalNs: 0).ticks == 102_000)
    }

    /// A first packet without a time (RTSP before its clock is known): the next, timed one
    /// goes on a frame later.
    @Test func aContainersFirstTimeAfterAnUntimedPacketGoesOn() {
        var c = MediaClock(source: .arrival)
        #expect(c.time(packetTime: nil, pts90k: nil, frameRate: 30, arrivalNs: 5) == .zero)
        #expect(c.time(packetTime: MediaTime(ticks: 0), pts90k: nil, frameRate: 30, arrivalNs: 6).ticks == 3000)
        #expect(c.time(packetTime: MediaTime(ticks: 3000), pts90k: nil, frameRate: 30, arrivalNs: 7).ticks == 6000)
    }

    /// A damaged file's times (a Matroska cluster time near 2^63 ms made `av_rescale_q`
    /// overflow to INT64_MIN, and the rebase after it trapped: `consume` died with SIGILL)
    /// and a timestamp SEI at the end of `UInt64` then at 0: times past
    /// `MediaTime.outsideLimit` are taken as none (counted on), and time never goes back (a
    /// given time equal to the last one is kept as it is, as before).
    @Test func timesPastTheLimitAreNoTimeAndNothingTraps() {
        var c = MediaClock(source: .counted)
        var times: [MediaTime] = []
        for packetTime: Int64? in [0, 3000, .min, .max, 6000, -(1 << 60), 9000] {
            times.append(c.time(packetTime: packetTime.map { MediaTime(ticks: $0) }, pts90k: nil, frameRate: 30, arrivalNs: 0))
        }
        #expect(times.map(\.ticks) == [0, 3000, 6000, 9000, 12000, 15000, 15000])
        var s = MediaClock(source: .counted)
        #expect(s.time(pts90k: 90_000, frameRate: 30, arrivalNs: 0).ticks == 90_000)
        #expect(s.time(pts90k: .max, frameRate: 30, arrivalNs: 0).ticks == 93_000)
        #expect(s.time(pts90k: 1 << 62, frameRate: 30, arrivalNs: 0).ticks == 96_000)
        #expect(s.time(pts90k: 0, frameRate: 30, arrivalNs: 0).ticks == 99_000)
        // The largest time taken, then one that falls back: the rebase fits.
        var l = MediaClock(source: .counted)
        _ = l.time(pts90k: UInt64(MediaTime.outsideLimit), frameRate: 30, arrivalNs: 0)
        #expect(l.time(pts90k: 0, frameRate: 30, arrivalNs: 0).ticks == MediaTime.outsideLimit + 3000)
    }
}
