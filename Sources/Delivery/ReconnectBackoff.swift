/// When to try connecting again: exponential backoff with jitter, and when to give up.
///
/// The first retry waits `initial` (100 ms), each further one twice as long, up to `maximum`
/// (5 s); every delay is spread by ±`jitter` (a fraction) so that many clients of one
/// restarted producer do not knock in step. A successful connection resets it.
///
/// While down, `progressDue` says when to tell the user it is still trying: not before
/// `progressEvery` (2 s) has passed since the loss, then at most once per `progressEvery`,
/// so a 100 ms retry is never a line of its own and a long outage is never silent.
///
/// Pure: the caller supplies the time (nanoseconds of any monotonic clock) and the random
/// numbers, so tests drive it with a manual clock and fixed values.
public struct ReconnectBackoff: Sendable {
    public struct Config: Sendable, Equatable {
        public var initial: Double
        public var maximum: Double
        /// Each delay is multiplied by a factor in `1 - jitter ... 1 + jitter`.
        public var jitter: Double
        /// Give up once disconnected for this long (seconds); nil: keep trying; 0: give up
        /// on the first disconnect.
        public var giveUpAfter: Double?
        /// Seconds between two "still trying" reports (`progressDue`).
        public var progressEvery: Double

        public init(initial: Double = 0.1, maximum: Double = 5, jitter: Double = 0.2, giveUpAfter: Double? = nil, progressEvery: Double = 2) {
            precondition(initial > 0 && maximum >= initial && jitter >= 0 && jitter < 1 && progressEvery > 0)
            self.initial = initial
            self.maximum = maximum
            self.jitter = jitter
            self.giveUpAfter = giveUpAfter
            self.progressEvery = progressEvery
        }
    }

    public let config: Config
    /// Retries since the last successful connection.
    public private(set) var attempts = 0
    /// When the stream was last lost (or the first attempt began); nil while connected.
    public private(set) var disconnectedSince: UInt64?
    /// When progress was last reported in this outage.
    private var lastProgress: UInt64?

    public init(config: Config = Config()) {
        self.config = config
    }

    /// The connection is up: the next loss starts over at `initial`.
    public mutating func connected() {
        attempts = 0
        disconnectedSince = nil
        lastProgress = nil
    }

    /// Seconds down at `now` (0 while connected).
    public func downFor(now: UInt64) -> Double {
        guard let since = disconnectedSince else { return 0 }
        return Double(now &- since) / 1e9
    }

    /// True when a "still trying" line is due at `now` (and counts it as told): the first
    /// `progressEvery` after the loss, then at most one per `progressEvery`.
    public mutating func progressDue(now: UInt64) -> Bool {
        guard let since = disconnectedSince else { return false }
        let last = lastProgress ?? since
        guard now >= last, Double(now - last) / 1e9 >= config.progressEvery else { return false }
        lastProgress = now
        return true
    }

    /// Notes that the stream is down (first call after a connection) at `now`.
    public mutating func lost(at now: UInt64) {
        if disconnectedSince == nil { disconnectedSince = now }
    }

    /// True when `nextDelay` at `now` gives up: down for `giveUpAfter` or longer (a loss not
    /// noted yet counts from `now`, so `giveUpAfter` 0 gives up at once).
    public func givesUp(now: UInt64) -> Bool {
        guard let limit = config.giveUpAfter else { return false }
        let down = Double(now &- (disconnectedSince ?? now)) / 1e9
        return limit <= 0 || down >= limit
    }

    /// The delay before the next attempt, in seconds, or nil when it is time to give up.
    /// `random` is a uniform value in 0...1 (0.5 means no jitter).
    public mutating func nextDelay(now: UInt64, random: Double) -> Double? {
        lost(at: now)
        if givesUp(now: now) { return nil }
        let exponent = Double(min(attempts, 62))
        let base = min(config.maximum, config.initial * pow2(exponent))
        attempts += 1
        let spread = 1 + config.jitter * (2 * min(1, max(0, random)) - 1)
        var delay = base * spread
        if let limit = config.giveUpAfter, let since = disconnectedSince {
            // Never sleep past the deadline: the last attempt happens at it.
            let left = limit - Double(now &- since) / 1e9
            delay = min(delay, max(0, left))
        }
        return delay
    }

    private func pow2(_ e: Double) -> Double {
        var v = 1.0
        for _ in 0..<Int(e) {
            v *= 2
            if v > 1e9 { break }
        }
        return v
    }
}
