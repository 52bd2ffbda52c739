import CLibEV
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A libev loop and the thread that runs it.
///
/// Life: `init` → set up watchers → `start()` (own thread) or `run()` (the calling thread) →
/// `stop()` from any thread → `join()` → release. Only one thread at a time may touch the loop
/// and the objects registered with it (the "loop-owned" types: `IOWatcher`, `LoopTimer`,
/// `SignalWatcher`, `Listener`, `Connection`, `Connector`; `StreamServer` and `HTTPServer` in
/// Serving): the creating thread until `start()`, then the loop thread, then the thread that called `join()`. They check it
/// with `preconditionOnLoop()`. Other threads talk to the loop through a `Mailbox` only.
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable holds because: `raw` never changes and libev is called on it only
    // from the owner thread (every caller checks preconditionOnLoop), except `ev_async_send`,
    // which libev documents as safe from any thread; the owner is an atomic, and the rest of
    // the mutable state (`lifecycle`, `watchedSignals`) sits behind a Mutex. `control` is set
    // once in init and cleared in deinit, when no other thread can hold the loop.
    // `handlingBeforePoll` is read and written on the loop's owner thread only (by the
    // mailboxes, which check `isOnLoop` first).

    /// The `struct ev_loop *`.
    @usableFromInline let raw: OpaquePointer
    private let owner: Atomic<UInt>
    private let lifecycle = Mutex<Lifecycle>(Lifecycle())
    private var control: Mailbox<ControlMessage>!
    /// Signals with a watcher: the loop thread unblocks them when it starts.
    let watchedSignals = Mutex<Set<Int32>>([])
    /// True while a mailbox's messages are handled just before the loop polls (its
    /// `ev_prepare` watcher): a message sent then on the loop thread must wake the loop the
    /// usual way (`ev_async_send`), since this turn's prepare watchers have all been taken.
    @usableFromInline var handlingBeforePoll = false

    private struct Lifecycle {
        var state: State = .idle
        var thread: pthread_t?
    }

    private enum State { case idle, running, finished }

    private enum ControlMessage: Sendable { case stop }

    /// Creates a loop (`ev_loop_new`). The calling thread owns it until `start()`.
    public init() {
        guard let raw = CLibEV_loop_new() else { fatalError("ev_loop_new: no usable event backend") }
        self.raw = raw
        self.owner = Atomic(UInt(pthread_self()))
        self.control = Mailbox(unretainedLoop: self) { [raw] messages in
            if messages.contains(where: { if case .stop = $0 { true } else { false } }) {
                ev_break(raw, Int32(EVBREAK_ALL))
            }
        }
    }

    deinit {
        control = nil
        ev_loop_destroy(raw)
    }

    /// True on the thread that may touch the loop now.
    public var isOnLoop: Bool { owner.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Traps unless called on the thread that may touch the loop now.
    public func preconditionOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isOnLoop, "called off the event loop thread", file: file, line: line)
    }

    /// Runs the loop on a new thread.
    public func start() {
        preconditionOnLoop()
        lifecycle.withLock { life in
            precondition(life.state == .idle, "the loop was already started")
            life.state = .running
            owner.store(0, ordering: .releasing)
            var thread = pthread_t()
            let context = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&thread, nil, { context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
                loop.runHere()
                return nil
            }, context)
            precondition(rc == 0, "pthread_create: \(String(cString: strerror(rc)))")
            life.thread = thread
        }
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        preconditionOnLoop()
        lifecycle.withLock { life in
            precondition(life.state == .idle, "the loop was already started")
            life.state = .running
        }
        runHere()
    }

    /// Asks the loop to stop after the current iteration. Safe from any thread, and from
    /// the loop itself; a message like any other.
    public func stop() {
        control.send(.stop)
    }

    /// Waits for the loop thread started by `start()` to end; the calling thread then owns the
    /// loop (to release what was registered with it).
    public func join() {
        let thread = lifecycle.withLock { life in
            defer { life.thread = nil }
            return life.thread
        }
        if let thread {
            let rc = pthread_join(thread, nil)
            precondition(rc == 0, "pthread_join: \(String(cString: strerror(rc)))")
        }
        owner.store(UInt(pthread_self()), ordering: .releasing)
    }

    /// True once `run()` or the loop thread has returned.
    public var hasFinished: Bool { lifecycle.withLock { $0.state == .finished } }

    private func runHere() {
        owner.store(UInt(pthread_self()), ordering: .releasing)
        let signals = watchedSignals.withLock { $0 }
        if !signals.isEmpty { EventLoop.setSignals(signals, blocked: false) }
        ev_now_update(raw)
        _ = ev_run(raw, 0)
        lifecycle.withLock { $0.state = .finished }
    }

    /// Blocks (or unblocks) signals in the calling thread. Call it with the signals the loop
    /// watches on the main thread before starting any thread, so that only the loop thread
    /// takes them. The corresponding C function is `pthread_sigmask`.
    public static func setSignals(_ signals: Set<Int32>, blocked: Bool) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
    }

    /// The loop's idea of now, in seconds (`ev_now`).
    public var now: Double {
        preconditionOnLoop()
        return ev_now(raw)
    }
}
