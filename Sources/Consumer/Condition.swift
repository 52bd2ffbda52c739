#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex and a condition variable (pthread), for the hand-off between a reader and a
/// sink's worker thread. `Synchronization.Mutex` has no way to wait.
final class Condition: @unchecked Sendable {
    // @unchecked Sendable holds because: the two pthread objects live at fixed heap addresses
    // for the object's whole life and pthread documents them as safe to use from any thread;
    // nothing else is stored.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        cond = .allocate(capacity: 1)
        cond.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits (the lock held) until signalled.
    func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits (the lock held) until signalled or until `deadline` (monotonic ns); false on timeout.
    func wait(until deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex, &ts) == 0
    }

    func broadcast() { pthread_cond_broadcast(cond) }
}

/// Monotonic nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`).
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Wall-clock nanoseconds (`clock_gettime(CLOCK_REALTIME)`), the clock of the timestamp SEI.
func realtimeNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Starts a detached-for-joining POSIX thread running `body`; returns it for `pthread_join`.
/// `body` is `sending`: the caller gives up what it captures (e.g. a sink), which from then
/// on belongs to the new thread alone.
func startThread(_ body: sending @escaping () -> Void) -> pthread_t {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { context in
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    precondition(rc == 0, "pthread_create: \(String(cString: strerror(rc)))")
    return thread
}

/// The closure a new thread runs, passed to it as a pointer.
private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}
