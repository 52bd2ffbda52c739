import Clocks

/// An instant on the monotonic clock, for the tests' deadlines.
///
/// The wall clock (`Date()`) can jump: a virtual machine restored from a snapshot, or forked
/// mid-run, has its wall clock set forward by however long it was paused, and a deadline on
/// that clock passes at once. A check run on such a machine killed a process that was still
/// on time (dmesg: "crng reseeded due to virtual machine fork"). The monotonic clock
/// (nalcast's own `MonotonicClock`) only counts time the machine ran. The names follow
/// `Date`'s, so that a wait reads the same.
public struct Moment: Comparable, Sendable {
    let seconds: Double

    public static var now: Moment { Moment(seconds: MonotonicClock.seconds) }

    public func addingTimeInterval(_ interval: Double) -> Moment { Moment(seconds: seconds + interval) }

    public static func < (a: Moment, b: Moment) -> Bool { a.seconds < b.seconds }
}
