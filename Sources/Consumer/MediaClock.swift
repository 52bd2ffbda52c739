import H264

/// Where an access unit sits in media time, the clock segments are cut by.
///
/// The rule, in order:
/// 1. the nalcast timestamp SEI (`pts_90k`, taken as it is) when the access unit carries one;
/// 2. for a file or pipe (read as fast as the disk allows, so the arrival clock says
///    nothing): access units counted since the start / the SPS VUI frame rate
///    (`time_scale / (2 × num_units_in_tick)`), else / `fallbackFrameRate` (30, what
///    FFmpeg's raw H.264 demuxer is usually told);
/// 3. for a live socket: the arrival time since the first access unit.
///
/// Counted times are the count since the last fixed point (a SEI time, a rate change)
/// times the frame duration, rounded to a tick once: 29.97 fps steps 3003 ticks exactly,
/// and 23.976 fps does not drift by a tick a frame.
///
/// Pure: the caller passes the arrival time.
public struct MediaClock: Sendable {
    public enum Source: String, Sendable {
        /// Access units read from a file or a pipe: count them.
        case counted
        /// Access units from a live connection: the arrival clock.
        case arrival
    }

    public let source: Source
    public let fallbackFrameRate: Double
    private var firstArrival: UInt64?
    /// Media time of the last access unit.
    private var last = MediaTime.zero
    private var counted = 0
    /// Counted times: the fixed point, the frames counted since it, at which rate.
    private var anchor = MediaTime.zero
    private var stepsSinceAnchor: Int64 = 0
    private var anchorRate: Double = 0

    public init(source: Source, fallbackFrameRate: Double = 30) {
        precondition(fallbackFrameRate > 0)
        self.source = source
        self.fallbackFrameRate = fallbackFrameRate
    }

    /// Media time of the next access unit.
    /// - Parameters:
    ///   - pts90k: the timestamp SEI's media time, if the access unit has one.
    ///   - frameRate: the active SPS's VUI frame rate, if signalled.
    ///   - arrivalNs: when the access unit was received (monotonic nanoseconds).
    public mutating func time(pts90k: UInt64?, frameRate: Double?, arrivalNs: UInt64) -> MediaTime {
        let first = firstArrival ?? arrivalNs
        firstArrival = first
        defer { counted += 1 }
        if let pts90k {
            fix(MediaTime(pts90k: pts90k))
            return last
        }
        switch source {
        case .counted:
            if counted == 0 {
                fix(.zero)
            } else {
                let rate = effectiveRate(frameRate)
                if rate != anchorRate { fix(last, rate: rate) }
                stepsSinceAnchor += 1
                last = anchor + .seconds(Double(stepsSinceAnchor) / rate)
            }
        case .arrival:
            fix(.nanoseconds(arrivalNs &- first))
        }
        return last
    }

    /// A time not counted: the next counted one steps from it.
    private mutating func fix(_ time: MediaTime, rate: Double = 0) {
        last = time
        anchor = time
        stepsSinceAnchor = 0
        anchorRate = rate
    }

    private func effectiveRate(_ frameRate: Double?) -> Double {
        guard let r = frameRate, r.isFinite, r > 0, r < 1000 else { return fallbackFrameRate }
        return r
    }
}
