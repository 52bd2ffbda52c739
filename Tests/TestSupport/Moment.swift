import Foundation

/// An instant on the monotonic clock, for the tests' deadlines and elapsed times.
///
/// The wall clock (`Date()`) can jump: a virtual machine restored from a snapshot, or forked
/// mid-run, has its wall clock set forward by however long it was paused, and a deadline on
/// that clock passes at once. A check run on such a machine killed a process that was still
/// on time (dmesg: "crng reseeded due to virtual machine fork"). The monotonic clock only
/// counts time the machine ran. The names follow `Date`'s, so that a wait reads the same.
public struct Moment: Comparable, Sendable {
    /// Seconds since boot on CLOCK_MONOTONIC (Foundation's `systemUptime`).
    public let seconds: Double

    public init(seconds: Double) { self.seconds = seconds }

    public static var now: Moment { Moment(seconds: ProcessInfo.processInfo.systemUptime) }

    public func addingTimeInterval(_ interval: Double) -> Moment { Moment(seconds: seconds + interval) }

    /// Seconds from `other` to this instant.
    public func timeIntervalSince(_ other: Moment) -> Double { seconds - other.seconds }

    /// Seconds from now to this instant (negative once it has passed).
    public var timeIntervalSinceNow: Double { seconds - Moment.now.seconds }

    public static func < (a: Moment, b: Moment) -> Bool { a.seconds < b.seconds }
}
