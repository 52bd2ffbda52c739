@testable import Consumer
import XCTest

/// How an RTSP input's audio is placed on the video's RTP clock (`RTSPTracks.TrackClock`).
final class RTSPTrackClockTests: XCTestCase {
    func testSenderReportsWinOnceBothTracksHaveOne() throws {
        var video = RTSPTracks.TrackClock(rate: 90_000)
        var audio = RTSPTracks.TrackClock(rate: 48_000)
        XCTAssertNil(RTSPTracks.TrackClock.place(0, from: audio, to: video), "no picture yet: nowhere to put it")
        // First packets: the video's RTP 1000 arrived at wall 100.0 s, the audio's 5000 at 100.5 s.
        video.first = (1000, 100.0)
        audio.first = (5000, 100.5)
        XCTAssertEqual(RTSPTracks.TrackClock.place(5000 + 48_000, from: audio, to: video), 1000 + 135_000, "1.5 s after the video's first packet")
        // The video's report alone changes nothing: the two are never tied through one of each.
        video.report = (91_000, 200.0)
        XCTAssertEqual(RTSPTracks.TrackClock.place(5000 + 48_000, from: audio, to: video), 1000 + 135_000)
        // Both reports (the sender's clock): audio RTP 10000 was at 200.25 s, so 58000 at 201.25 s,
        // which is the video's 91000 + 1.25 s.
        audio.report = (10_000, 200.25)
        XCTAssertEqual(RTSPTracks.TrackClock.place(58_000, from: audio, to: video), 91_000 + 112_500)
    }

    func testUnwrapperFollowsTheWrapBothWays() {
        var u = RTSPTracks.Unwrapper()
        XCTAssertEqual(u.extend(UInt32.max - 10), Int64(UInt32.max) - 10)
        XCTAssertEqual(u.extend(5), Int64(UInt32.max) + 6)
        XCTAssertEqual(u.extend(UInt32.max - 1), Int64(UInt32.max) - 1, "a little back, across the wrap")
    }
}
