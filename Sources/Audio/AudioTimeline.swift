import Media

/// Places audio on the video's media time line: one (capture time, media time) pair that the
/// video pipeline knows (its first frame's capture time and pts), and the rule that both
/// clocks advance together. Video and audio capture times are both CLOCK_REALTIME, the clock
/// of the timestamp SEI, so an audio packet captured 40 ms after that frame sits 40 ms
/// (3600 ticks) after it.
public struct AudioTimeline: Sendable, Hashable {
    public let captureTimeNs: UInt64
    public let mediaTime: MediaTime

    public init(captureTimeNs: UInt64, mediaTime: MediaTime) {
        self.captureTimeNs = captureTimeNs
        self.mediaTime = mediaTime
    }

    /// The video frame's pair as the timestamp SEI carries it.
    public init(videoCaptureTimeNs: UInt64, pts90k: UInt64) {
        self.init(captureTimeNs: videoCaptureTimeNs, mediaTime: MediaTime(pts90k: pts90k))
    }

    /// The media time of something captured at `ns` (rounded to the nearest tick).
    public func mediaTime(forCaptureTimeNs ns: UInt64) -> MediaTime {
        let delta = Int64(bitPattern: ns &- captureTimeNs)  // signed: before the anchor is negative
        // In integers, whole seconds apart from the rest: exact for any distance (a Double
        // loses ticks' fractions past a few days of nanoseconds).
        let seconds = delta / 1_000_000_000
        let rest = delta % 1_000_000_000  // same sign as delta
        let restTicks = (rest * 9 + (rest >= 0 ? 50_000 : -50_000)) / 100_000
        return MediaTime(ticks: mediaTime.ticks + seconds * MediaTime.ticksPerSecond + restTicks)
    }
}
