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
/// After a unit of media time `pts90k` went out, the next waits for the media time since the
/// one before it (at most `maxStepNs`: a jump in the input's times holds nothing up for
/// long) divided by `speed`. A time that goes backwards (the GOP sent again) holds nothing.
///
/// Pure: the caller passes the time and sets its timer by what `sent` says.
public struct CatchUpPacer: Sendable {
    public let speed: UInt64
    public let maxStepNs: UInt64
    private var lastPTS90k: UInt64?

    public init(speed: UInt64 = 4, maxStepNs: UInt64 = 100_000_000) {
        self.speed = max(1, speed)
        self.maxStepNs = maxStepNs
    }

    /// The unit of media time `pts90k` went out: nanoseconds to wait before the next one.
    public mutating func sent(pts90k: UInt64) -> UInt64 {
        defer { lastPTS90k = pts90k }
        guard let last = lastPTS90k, pts90k > last else { return 0 }
        return min((pts90k - last) * 100_000 / 9, maxStepNs) / speed
    }
}
