import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A monotonic clock in nanoseconds. Relay decisions take the time from one of these, so
/// tests drive them with a `ManualClock` instead of waiting.
public protocol Clock: Sendable {
    /// Nanoseconds since an arbitrary fixed point; never goes backwards.
    var nowNanoseconds: UInt64 { get }
}

/// The system's monotonic clock. The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
public struct SystemClock: Clock {
    public init() {}

    public var nowNanoseconds: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
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
