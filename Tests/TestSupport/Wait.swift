import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waiting on an event under a deadline, for the tests: the condition is looked at until it
/// holds or `timeout` seconds pass, however slowly a loaded machine gets there (a count of
/// polls would give up sooner the slower each look is).
public enum Wait {
    /// Whether `condition` held within `timeout` seconds (looked at every `every` seconds, and
    /// once more at the deadline).
    @discardableResult
    public static func until(timeout: Double = 20, every: Double = 0.05, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            if try condition() { return true }
            usleep(useconds_t(every * 1e6))
        }
        return try condition()
    }
}
