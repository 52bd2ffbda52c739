/// Paces what a WebRTC viewer is sent, as a browser's or MediaMTX's sender paces: access
/// units already captured and queued together (a relay's cached GOP, at a join and again
/// after a PLI: the IDR and every picture since, up to a whole `--keyint`) go out at `speed`
/// times their media time rather than in one burst; live ones, which come one frame
/// interval apart, are never held.
///
/// A burst of a whole GOP over UDP has no back-pressure to stop it: it lands in the
/// viewer's receive buffer and decoder all at once, and the viewer has decoded the lot
/// before its PLI is read, so the cached GOP that answers the PLI comes only after every
/// picture of the first. Paced, what the viewer has not been sent yet is still in its
/// `ReaderQueue` when the PLI comes, and `Broadcaster.restartAtCachedGOP` replaces it with
/// the IDR at once.
///
/// After a unit of media time `pts90k` went out, the next is due the media time since the
/// one before it (at most `maxStepNs`: a jump in the input's times holds nothing up for
/// long) divided by `speed` after the unit before was due: a schedule, not a wait after each
/// send. A loaded machine wakes the caller's timer late, and a wait counted from each send
/// would add that lateness to every step: at 10 to 30 ms late a step of 8 ms, a cached GOP
/// went out at under twice its media time, no faster than live pictures piled up behind it,
/// and the viewer's queue passed its lag bound and skipped to the next IDR. On a schedule the
/// units a late timer owes go out at once. The schedule is kept up to `maxBehindNs` behind
/// the clock; further behind (the queue ran empty: live pictures, sent as they come), it starts
/// again from there, so a backlog that comes later is paced, not sent in one burst. A time that
/// goes backwards (the GOP sent again) holds nothing and starts it again from now.
///
/// Pure: the caller passes the time and sets its timer by what `sent` says.
public struct CatchUpPacer: Sendable {
    public let speed: UInt64
    public let maxStepNs: UInt64
    public let maxBehindNs: UInt64
    private var lastPTS90k: UInt64?
    /// When the next unit is due, on the caller's clock.
    private var dueNs: UInt64 = 0

    public init(speed: UInt64 = 4, maxStepNs: UInt64 = 100_000_000, maxBehindNs: UInt64 = 100_000_000) {
        self.speed = max(1, speed)
        self.maxStepNs = maxStepNs
        self.maxBehindNs = maxBehindNs
    }

    /// The unit of media time `pts90k` went out at `nowNs` (any monotonic clock): nanoseconds
    /// to wait before the next one.
    public mutating func sent(pts90k: UInt64, nowNs: UInt64) -> UInt64 {
        defer { lastPTS90k = pts90k }
        guard let last = lastPTS90k, pts90k > last else {
            dueNs = nowNs
            return 0
        }
        let step = min((pts90k - last) * 100_000 / 9, maxStepNs) / speed
        // This unit was due at `dueNs` (or, too far behind, `maxBehindNs` ago); the next a step later.
        dueNs = max(dueNs, nowNs - min(nowNs, maxBehindNs)) + step
        return dueNs > nowNs ? dueNs - nowNs : 0
    }
}
