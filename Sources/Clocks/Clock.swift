import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The system's clocks, read in one place: `MonotonicClock` for durations, deadlines and
/// pacing (never jumps), `WallClock` for capture times on the wire (the timestamp SEI's
/// CLOCK_REALTIME) and names of files. Nanoseconds are `UInt64`; seconds `Double`.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point (`clock_gettime(CLOCK_MONOTONIC)`).
    public static var nanoseconds: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// The same in seconds.
    public static var seconds: Double { Double(nanoseconds) / 1e9 }

    /// Sleeps until the clock reaches `deadline` nanoseconds; returns at once if it has.
    /// The corresponding C function is `clock_nanosleep` with `TIMER_ABSTIME`.
    public static func sleep(untilNanoseconds deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// A `poll()` timeout in milliseconds from `now` until `deadline` (nanoseconds of this
    /// clock): rounded up, so the wait does not end just before the deadline, and 0 once it
    /// has passed (poll() takes any negative timeout as forever).
    public static func pollTimeout(until deadline: Int64, from now: Int64) -> Int32 {
        Int32(clamping: Swift.max(0, deadline - now + 999_999) / 1_000_000)
    }
}

/// Wall-clock time (`clock_gettime(CLOCK_REALTIME)`): may jump when the system's time is set.
public enum WallClock {
    /// Nanoseconds since the epoch: the clock of the timestamp SEI's capture time.
    public static var nanoseconds: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Seconds since the epoch.
    public static var seconds: Double { Double(nanoseconds) / 1e9 }
}

/// A monotonic clock in nanoseconds. Relay decisions take the time from one of these, so
/// tests drive them with a `ManualClock` instead of waiting.
public protocol Clock: Sendable {
    /// Nanoseconds since an arbitrary fixed point; never goes backwards.
    var nowNanoseconds: UInt64 { get }
}

/// The system's monotonic clock (`MonotonicClock`), for what takes any `Clock`.
public struct SystemClock: Clock {
    public init() {}

    public var nowNanoseconds: UInt64 { MonotonicClock.nanoseconds }
}

/// A clock that moves only when told to. Safe to share between threads.
public final class ManualClock: Clock {
    private let now: Mutex<UInt64>

    public init(nanoseconds: UInt64 = 0) {
        self.now = Mutex(nanoseconds)
    }

    public var nowNanoseconds: UInt64 { now.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(nanoseconds: UInt64) { now.withLock { $0 += nanoseconds } }

    /// Moves the clock forward by milliseconds, the unit most tests think in.
    public func advance(milliseconds: UInt64) { advance(nanoseconds: milliseconds * 1_000_000) }
}

/// Durations as the relay keeps them: nanoseconds.
public enum Nanoseconds {
    public static func milliseconds(_ ms: UInt64) -> UInt64 { ms * 1_000_000 }
    public static func seconds(_ s: Double) -> UInt64 { UInt64((s * 1e9).rounded()) }
}
