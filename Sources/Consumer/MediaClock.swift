import Media

/// Where an access unit sits in media time, the clock segments are cut by.
///
/// The rule, in order:
/// 1. the nalcast timestamp SEI (`pts_90k`, taken as it is) when the access unit carries one;
/// 1b. for a demuxed source (`consume --from` a URL or a container file): the packet's time
///    from the container, 0 at the first packet;
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
/// Given times (rules 1 and 1b) stay monotonic across a source that starts over: after a
/// `discontinuity()` (a reconnect, a source reopened) a container's time, which starts
/// again wherever the new connection's clock starts, goes on one frame step after the last
/// time; a timestamp SEI's goes on from where it was when it falls back (a nalcast producer
/// restarted: its `pts_90k` starts again at 0) and keeps its gap when it moved on (the same
/// producer, reached again after a network outage). A given time that falls back without a
/// discontinuity is rebased the same way. The step is the last one seen between given
/// times, else one frame at the VUI (or fallback) rate.
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
    /// Added to given times (rebasing), since the first one.
    private var offset: Int64 = 0
    private var placedGiven = false
    private var afterDiscontinuity = false
    /// The last step between two given times (ticks), 0 before there are two.
    private var lastStep: Int64 = 0
    /// How many given times were rebased (a source that started over).
    public private(set) var rebases = 0

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
        time(packetTime: nil, pts90k: pts90k, frameRate: frameRate, arrivalNs: arrivalNs)
    }

    /// Media time of the next access unit of a demuxed source: the timestamp SEI's when it
    /// has one, else `packetTime` (the container's, 90 kHz, any origin: the first one is 0),
    /// else counted or arrival as for other inputs.
    public mutating func time(packetTime: MediaTime?, pts90k: UInt64?, frameRate: Double?, arrivalNs: UInt64) -> MediaTime {
        let first = firstArrival ?? arrivalNs
        firstArrival = first
        defer {
            counted += 1
            afterDiscontinuity = false
        }
        // Given times past `MediaTime.outsideLimit` (a damaged stream's) are no time.
        if let pts90k, pts90k <= UInt64(MediaTime.outsideLimit) {
            place(MediaTime(pts90k: pts90k), startsAtZero: false, frameRate: frameRate)
            return last
        }
        if let packetTime, MediaTime.isWithinLimit(packetTime.ticks) {
            place(packetTime, startsAtZero: true, frameRate: frameRate)
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

    /// The source started over (a reconnect, the input reopened): the next given time is
    /// placed after the last one (see the type's comment).
    public mutating func discontinuity() {
        afterDiscontinuity = true
    }

    /// A given time, rebased when its source started over.
    private mutating func place(_ raw: MediaTime, startsAtZero: Bool, frameRate: Double?) {
        if !placedGiven {
            placedGiven = true
            offset = startsAtZero ? 0 &- raw.ticks : 0
            // After counted or arrival times (packets that came without one), a container's
            // first time goes on one step after them.
            if startsAtZero && counted > 0 { afterDiscontinuity = true }
        }
        // Offsets wrap (two's complement: `raw + offset` is right whenever the time it
        // stands for fits); the next time saturates, so that a stream rebased again and
        // again at a huge step stays at the end of time instead of trapping.
        var t = raw.ticks &+ offset
        if counted > 0 {
            let step = lastStep > 0 ? lastStep : Int64((Double(MediaTime.ticksPerSecond) / effectiveRate(frameRate)).rounded())
            let (sum, overflow) = last.ticks.addingReportingOverflow(step)
            let next = overflow ? Int64.max : sum
            let (ahead, past) = t.subtractingReportingOverflow(last.ticks)
            if (afterDiscontinuity && (startsAtZero || t < next)) || t < last.ticks {
                offset = next &- raw.ticks
                t = next
                rebases += 1
            } else if t > last.ticks && !past && ahead < MediaTime.ticksPerSecond {
                lastStep = ahead
            }
        }
        fix(MediaTime(ticks: t))
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
