#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A plain POSIX thread: start it with a body, join it once. nalcast's threads (capture,
/// sink writers, segment finisher) are few and long-lived, so they are real threads, not
/// pool work items.
public final class OSThread: Sendable {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    // Written once in `init` before anyone else can see the object; read by `join`.
    nonisolated(unsafe) private var thread = pthread_t()

    /// Starts `body` on a new thread. `body` is `sending`: the caller gives up what it
    /// captures (a sink, a capture pipeline), which from then on belongs to the new thread
    /// alone. The corresponding C function is `pthread_create`.
    public init(name: String, _ body: sending @escaping () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create: \(String(cString: strerror(rc)))")
        _ = name  // names are for debuggers; pthread_setname_np is not visible to Swift here
    }

    /// Waits for the thread to end. Call once (or `detach`). The corresponding C function is
    /// `pthread_join`.
    public func join() {
        _ = pthread_join(thread, nil)
    }

    /// Lets the thread end on its own, never joined. The corresponding C function is
    /// `pthread_detach`.
    public func detach() {
        _ = pthread_detach(thread)
    }
}

/// A mutex with a condition variable, for the few places where one thread waits for
/// another (a writer thread waiting for work, a producer waiting for room).
///
/// Why `@unchecked Sendable` holds: the pthread objects are created in `init`, destroyed in
/// `deinit`, and in between only used through the pthread calls made for sharing them.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
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

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(cond) }
    /// Waits (the lock held) until woken.
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits (the lock held) until woken or `seconds` pass; false on time-out.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + Swift.max(0, seconds)
        var deadline = timespec(tv_sec: Int(total), tv_nsec: Int((total - total.rounded(.down)) * 1e9))
        return pthread_cond_timedwait(cond, mutex, &deadline) == 0
    }

    /// Waits (the lock held) until woken or until `deadline` (monotonic nanoseconds); false
    /// on time-out.
    @discardableResult
    public func wait(untilMonotonicNanoseconds deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex, &ts) == 0
    }

    /// Runs `body` with the lock held.
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

extension OSThread {
    /// Sleeps the calling thread for `nanoseconds`, in steps of at most `step`, and returns
    /// early once `stopped` says so: the waits of a reader thread (a paced file, a backoff
    /// before reconnecting) that must not hold up the end of a run.
    public static func sleep(nanoseconds: UInt64, step: UInt64 = 20_000_000, unless stopped: () -> Bool) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let start = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        let end = start + nanoseconds
        while !stopped() {
            clock_gettime(CLOCK_MONOTONIC, &now)
            let current = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
            if current >= end { return }
            usleep(useconds_t(min(step, end - current) / 1000))
        }
    }
}
