#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLinux

/// Lets any thread interrupt a source that sleeps in `poll()` waiting for a change (an
/// eventfd the source polls next to its X connection): a reader joined and wants an IDR
/// now, or the pipeline is stopping. Wake-ups before the source waits are not lost: the
/// eventfd stays readable until the source drains it.
public final class CaptureWakeUp: Sendable {
    /// The eventfd; -1 if it could not be made (then `wake()` does nothing and the source
    /// answers at its next timeout instead).
    public let fd: Int32

    public init() {
        fd = CLinux_wakeup_eventfd()
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Makes the next (or current) wait of the source return.
    public func wake() {
        guard fd >= 0 else { return }
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Clears pending wake-ups; true if there was one.
    public func drain() -> Bool {
        guard fd >= 0 else { return false }
        var count: UInt64 = 0
        return read(fd, &count, 8) == 8 && count > 0
    }
}
