import Media

/// Paces a stream read from a file at the speed of its media time, as FFmpeg's `-re` does:
/// `consume --from FILE --listen …` (`--realtime`) hands each access unit to its readers when
/// its media time is due on the wall clock, not as fast as the disk reads (readers would
/// only skip, and a live viewer would see nothing but the end).
///
/// The first access unit, and the first after a discontinuity (`resumes`), fixes the anchor:
/// its media time is now. Later ones are due at anchor + (media time - anchor's). A time that
/// goes backwards, or jumps ahead by more than `maxLead`, starts again from a new anchor
/// rather than stall; a reader thread that fell more than `maxLag` behind (a stalled disk,
/// a waiting sink) starts again too, rather than burst to catch up.
///
/// Pure: the caller passes the time and sleeps for what `delay` says.
public struct MediaPacer: Sendable {
    public let maxLeadNs: UInt64
    public let maxLagNs: UInt64
    private var anchor: (media: MediaTime, wallNs: UInt64)?
    /// Anchors set after the first: jumps and restarts.
    public private(set) var reanchors = 0

    public init(maxLeadNs: UInt64 = 2_000_000_000, maxLagNs: UInt64 = 1_000_000_000) {
        self.maxLeadNs = maxLeadNs
        self.maxLagNs = maxLagNs
    }

    /// Nanoseconds to wait before handing on the access unit of media time `time`, at
    /// monotonic time `nowNs`; 0 when it is due already.
    public mutating func delay(for time: MediaTime, nowNs: UInt64, resumes: Bool = false) -> UInt64 {
        guard let anchor, !resumes, time >= anchor.media else {
            reanchor(time, nowNs)
            return 0
        }
        let offset = time - anchor.media
        let dueNs = anchor.wallNs &+ UInt64(offset.ticks) * 100_000 / 9
        if dueNs > nowNs {
            let wait = dueNs - nowNs
            if wait > maxLeadNs {
                reanchor(time, nowNs)
                return 0
            }
            return wait
        }
        if nowNs - dueNs > maxLagNs { reanchor(time, nowNs) }
        return 0
    }

    private mutating func reanchor(_ time: MediaTime, _ nowNs: UInt64) {
        if anchor != nil { reanchors += 1 }
        anchor = (time, nowNs)
    }
}

/// Media times for a relay's readers that never go backwards: `consume`'s media time (the
/// timestamp SEI's, else its media clock) is taken as it is until it goes back (a source that
/// restarted: nalcast produce's times begin again at 0); from there on the times are shifted
/// to go on one frame interval after the last (the last step seen, 1/30 s before any).
///
/// Pure; used by the one thread that feeds the relay.
public struct RisingMediaTime: Sendable {
    private var offset: Int64 = 0
    private var last: Int64?
    private var step: Int64 = 3000

    public init() {}

    /// The 90 kHz time readers get for an access unit at media time `time`.
    public mutating func pts90k(for time: MediaTime) -> UInt64 {
        var t = time.ticks &+ offset
        if let last {
            if t < last {
                offset = offset &+ (last &+ step &- t)
                t = last &+ step
            } else if t > last, t - last <= MediaTime.ticksPerSecond {
                step = t - last
            }
        }
        last = t
        return UInt64(max(0, t))
    }

    /// The 90 kHz time readers get for audio at media time `time`: shifted as the access
    /// units around it are (the shift of the last one placed), so that sound stays with its
    /// pictures across a source's restart; nil before any access unit was placed, or when
    /// the shift puts it before the time line's start.
    public func audioPts90k(for time: MediaTime) -> UInt64? {
        guard last != nil else { return nil }
        let t = time.ticks &+ offset
        return t < 0 ? nil : UInt64(t)
    }
}
