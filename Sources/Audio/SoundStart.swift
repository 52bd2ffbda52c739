import Clocks
import IO
import Synchronization

/// The moment each live source's first samples are on the track. produce starts its video
/// once they all are (`AudioCapture.waitForSound`): a sink's monitor may give nothing for up
/// to 2 s after a reader joins (a null sink renders that far ahead for a player with large
/// buffers and posts to its monitor only what it renders from then on), and a picture
/// captured before the sound comes would begin the recording with silence that was not.
final class SoundStart: Sendable {
    private let condition = ConditionLock()
    /// Sources still to deliver; changed with `condition` held.
    private let remaining: Atomic<Int>

    init(sources: Int) { remaining = Atomic(sources) }

    /// A source's first samples are on the track (once per source).
    func arrived() {
        condition.withLock {
            remaining.subtract(1, ordering: .relaxed)
            condition.broadcast()
        }
    }

    /// Waits until every source has arrived or `timeout` (ns) has passed; false on time-out.
    @discardableResult
    func wait(timeout: UInt64) -> Bool {
        let deadline = MonotonicClock.nanoseconds + timeout
        condition.lock()
        defer { condition.unlock() }
        while remaining.load(ordering: .relaxed) > 0 {
            if !condition.wait(untilMonotonicNanoseconds: deadline) && MonotonicClock.nanoseconds >= deadline { return false }
        }
        return true
    }
}
