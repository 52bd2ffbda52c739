/// Where an access unit sits in media time, the clock segments are cut by.
///
/// The rule, in order:
/// 1. the nalcast timestamp SEI (`pts_90k / 90000`) when the access unit carries one;
/// 2. for a file or pipe (read as fast as the disk allows, so the arrival clock says
///    nothing): access units counted since the start / the SPS VUI frame rate
///    (`time_scale / (2 × num_units_in_tick)`), else / `fallbackFrameRate` (30, what
///    FFmpeg's raw H.264 demuxer is usually told);
/// 3. for a live socket: the arrival time, seconds since the first access unit.
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
    private var last: Double = 0
    private var counted = 0

    public init(source: Source, fallbackFrameRate: Double = 30) {
        precondition(fallbackFrameRate > 0)
        self.source = source
        self.fallbackFrameRate = fallbackFrameRate
    }

    /// Media time in seconds of the next access unit.
    /// - Parameters:
    ///   - pts90k: the timestamp SEI's media time, if the access unit has one.
    ///   - frameRate: the active SPS's VUI frame rate, if signalled.
    ///   - arrivalNs: when the access unit was received (monotonic nanoseconds).
    public mutating func time(pts90k: UInt64?, frameRate: Double?, arrivalNs: UInt64) -> Double {
        let first = firstArrival ?? arrivalNs
        firstArrival = first
        defer { counted += 1 }
        if let pts90k {
            last = Double(pts90k) / 90_000
            return last
        }
        switch source {
        case .counted:
            last = counted == 0 ? 0 : last + step(frameRate)
        case .arrival:
            last = Double(arrivalNs &- first) / 1e9
        }
        return last
    }

    private func step(_ frameRate: Double?) -> Double {
        guard let r = frameRate, r.isFinite, r > 0, r < 1000 else { return 1 / fallbackFrameRate }
        return 1 / r
    }
}
