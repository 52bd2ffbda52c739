import Clocks
import Delivery
import Testing

/// The reconnect schedule, driven by a manual clock and fixed "random" numbers.
@Suite struct ReconnectBackoffTests {
    @Test func doublesFrom100msUpTo5s() {
        let clock = ManualClock()
        var backoff = ReconnectBackoff(config: .init(jitter: 0.2))
        var delays: [Double] = []
        for _ in 0..<10 {
            // random 0.5 = no jitter
            delays.append(backoff.nextDelay(now: clock.nowNanoseconds, random: 0.5)!)
            clock.advance(milliseconds: 10)
        }
        let expected = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5, 5]
        for (d, e) in zip(delays, expected) { #expect(abs(d - e) < 1e-9, "\(delays)") }
    }

    @Test func jitterSpreadsEachDelayWithinItsFraction() {
        var low = ReconnectBackoff(config: .init(jitter: 0.2))
        var high = ReconnectBackoff(config: .init(jitter: 0.2))
        #expect(abs(low.nextDelay(now: 0, random: 0)! - 0.08) < 1e-9)
        #expect(abs(high.nextDelay(now: 0, random: 1)! - 0.12) < 1e-9)
        // Out-of-range random values are clamped.
        #expect(abs(low.nextDelay(now: 0, random: -3)! - 0.16) < 1e-9)
    }

    @Test func aConnectionStartsOverAtTheFirstDelay() {
        var backoff = ReconnectBackoff()
        for _ in 0..<5 { _ = backoff.nextDelay(now: 0, random: 0.5) }
        #expect(backoff.attempts == 5)
        backoff.connected()
        #expect(backoff.attempts == 0)
        #expect(backoff.disconnectedSince == nil)
        #expect(abs(backoff.nextDelay(now: 0, random: 0.5)! - 0.1) < 1e-9)
    }

    @Test func zeroTimeoutGivesUpAtOnce() {
        var backoff = ReconnectBackoff(config: .init(giveUpAfter: 0))
        #expect(backoff.nextDelay(now: 123, random: 0.5) == nil)
    }

    @Test func givesUpOnceDisconnectedForTheTimeoutAndNeverSleepsPastIt() {
        let clock = ManualClock(nanoseconds: 1_000_000_000)
        var backoff = ReconnectBackoff(config: .init(jitter: 0, giveUpAfter: 1))
        backoff.lost(at: clock.nowNanoseconds)
        var total = 0.0
        var tries = 0
        while let delay = backoff.nextDelay(now: clock.nowNanoseconds, random: 0.5) {
            total += delay
            tries += 1
            clock.advance(nanoseconds: UInt64((delay * 1e9).rounded()))
            #expect(tries < 20)
        }
        // 0.1 + 0.2 + 0.4, then the rest of the second (0.3) instead of 0.8.
        #expect(tries == 4)
        #expect(abs(total - 1.0) < 1e-6)
    }

    @Test func withoutTimeoutItKeepsTrying() {
        let clock = ManualClock()
        var backoff = ReconnectBackoff()
        for _ in 0..<1000 {
            let d = backoff.nextDelay(now: clock.nowNanoseconds, random: 0.5)
            #expect(d != nil)
            clock.advance(milliseconds: 5000)
        }
    }

    /// Retries at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 11.3 s (no jitter): progress is told at
    /// 3.1 s (2 s after the loss), 6.3 s and 11.3 s, never for the quick early ones.
    @Test func progressIsToldEveryTwoSecondsAtMost() {
        let clock = ManualClock()
        var backoff = ReconnectBackoff()
        var told: [Double] = []
        var t = 0.0
        backoff.lost(at: clock.nowNanoseconds)
        var due = backoff.progressDue(now: clock.nowNanoseconds)
        #expect(!due)
        for _ in 0..<8 {
            let delay = backoff.nextDelay(now: clock.nowNanoseconds, random: 0.5)!
            if backoff.progressDue(now: clock.nowNanoseconds) { told.append(t) }
            clock.advance(milliseconds: UInt64((delay * 1000).rounded()))
            t += delay
        }
        #expect(told.map { ($0 * 10).rounded() / 10 } == [3.1, 6.3, 11.3], "\(told)")
        #expect(abs(backoff.downFor(now: clock.nowNanoseconds) - 16.3) < 1e-6)
        // A connection ends the outage: the next one waits its 2 s again.
        backoff.connected()
        #expect(backoff.downFor(now: clock.nowNanoseconds) == 0)
        backoff.lost(at: clock.nowNanoseconds)
        clock.advance(milliseconds: 1999)
        due = backoff.progressDue(now: clock.nowNanoseconds)
        #expect(!due)
        clock.advance(milliseconds: 1)
        due = backoff.progressDue(now: clock.nowNanoseconds)
        #expect(due)
        due = backoff.progressDue(now: clock.nowNanoseconds)
        #expect(!due)
    }
}
