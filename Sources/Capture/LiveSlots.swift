import Clocks
/// The frame slots of a live source (the test pattern in realtime mode, the screen): one
/// frame per slot of the frame rate, never faster. When the caller comes back late (the
/// encoder fell behind), the missed slots are skipped and counted, never queued: the next
/// frame is the newest one due, and the gap in sequence numbers shows the drop.
package struct LiveSlots {
    package let rate: FrameRate
    /// Slots passed over because the caller was late.
    package private(set) var skipped: UInt64 = 0
    private var next: Int64 = 0
    private var start: Int64?

    package init(rate: FrameRate) { self.rate = rate }

    /// Sleeps until the next slot is due (or skips to the newest due one when late) and
    /// returns its index. The first call starts the clock.
    package mutating func wait() -> Int64 {
        let now = Int64(MonotonicClock.nanoseconds)
        if let start {
            let due = start + rate.nanoseconds(ofFrame: next)
            let following = start + rate.nanoseconds(ofFrame: next + 1)
            if now >= following {
                let newest = Int64(Int128(now - start) * Int128(rate.numerator) / (1_000_000_000 * Int128(rate.denominator)))
                skipped += UInt64(newest - next)
                next = newest
            } else if now < due {
                MonotonicClock.sleep(untilNanoseconds: UInt64(due))
            }
        } else {
            start = now
        }
        defer { next += 1 }
        return next
    }

    /// Starts the clock at `start` (CLOCK_MONOTONIC ns) instead of at the first `wait()`: a
    /// source that lays its slots on a grid of its own (the test pattern's flash, on whole
    /// seconds) keeps them there whatever the first wake-up cost.
    package mutating func start(atMonotonic start: Int64) {
        if self.start == nil { self.start = start }
    }

    /// The next slot without waiting (a source that is not paced in real time).
    package mutating func take() -> Int64 {
        defer { next += 1 }
        return next
    }
}
