import CLibEV

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Readiness a file descriptor is watched for.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public static let read = IOEvents(rawValue: CLibEV_READ())
    public static let write = IOEvents(rawValue: CLibEV_WRITE())
}

/// An `ev_io` watcher: calls its handler on the loop thread when the descriptor is ready.
///
/// Loop-owned: create, start, stop and release it on the loop thread. The watcher lives in heap
/// memory and finds this object through its data pointer (unretained: whoever holds the
/// `IOWatcher` keeps it alive; releasing it stops the watcher).
public final class IOWatcher {
    private let loop: EventLoop
    private let watcher: UnsafeMutablePointer<ev_io>
    private let handler: (IOEvents) -> Void
    public let fd: Int32
    public let events: IOEvents

    public init(loop: EventLoop, fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.fd = fd
        self.events = events
        self.handler = handler
        self.watcher = .allocate(capacity: 1)
        CLibEV_io_init(watcher, { _, watcher, revents in
            let me = Unmanaged<IOWatcher>.fromOpaque(CLibEV_get_data(watcher)!).takeUnretainedValue()
            me.fire(IOEvents(rawValue: revents))
        }, fd, events.rawValue)
        CLibEV_set_data(watcher, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        ev_io_stop(loop.raw, watcher)
        watcher.deallocate()
    }

    public var isActive: Bool { CLibEV_is_active(watcher) != 0 }

    /// The corresponding C function is `ev_io_start`.
    public func start() {
        loop.preconditionOnLoop()
        ev_io_start(loop.raw, watcher)
    }

    /// The corresponding C function is `ev_io_stop`.
    public func stop() {
        loop.preconditionOnLoop()
        ev_io_stop(loop.raw, watcher)
    }

    private func fire(_ events: IOEvents) { handler(events) }
}

/// An `ev_timer`: one-shot (`repeating: 0`) or repeating; the handler runs on the loop thread.
///
/// Loop-owned, like `IOWatcher`.
public final class LoopTimer {
    private let loop: EventLoop
    private let watcher: UnsafeMutablePointer<ev_timer>
    private let handler: () -> Void

    public init(loop: EventLoop, handler: @escaping () -> Void) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.handler = handler
        self.watcher = .allocate(capacity: 1)
        initialize(after: 0, repeating: 0)
    }

    deinit {
        ev_timer_stop(loop.raw, watcher)
        watcher.deallocate()
    }

    public var isActive: Bool { CLibEV_is_active(watcher) != 0 }

    /// (Re)starts the timer: first after `seconds`, then every `repeating` seconds when not 0.
    /// The corresponding C function is `ev_timer_start`.
    public func start(after seconds: Double, repeating: Double = 0) {
        loop.preconditionOnLoop()
        ev_timer_stop(loop.raw, watcher)
        initialize(after: max(0, seconds), repeating: max(0, repeating))
        ev_now_update(loop.raw)
        ev_timer_start(loop.raw, watcher)
    }

    /// The corresponding C function is `ev_timer_stop`.
    public func stop() {
        loop.preconditionOnLoop()
        ev_timer_stop(loop.raw, watcher)
    }

    private func initialize(after: Double, repeating: Double) {
        CLibEV_timer_init(watcher, { _, watcher, _ in
            let me = Unmanaged<LoopTimer>.fromOpaque(CLibEV_get_data(watcher)!).takeUnretainedValue()
            me.fire()
        }, after, repeating)
        CLibEV_set_data(watcher, Unmanaged.passUnretained(self).toOpaque())
    }

    private func fire() { handler() }
}

/// An `ev_signal` watcher: the handler runs on the loop thread after the signal arrived.
///
/// libev 4 delivers signals to the loop the watcher was started in (any loop, not only the
/// default one), one loop per signal at a time: its handler notes the signal and wakes that
/// loop. The loop thread unblocks the watched signals; call
/// `EventLoop.setSignals(_:blocked: true)` on the main thread before starting other threads so
/// that none of them takes the signal first with the default action.
///
/// Loop-owned, like `IOWatcher`.
public final class SignalWatcher {
    private let loop: EventLoop
    private let watcher: UnsafeMutablePointer<ev_signal>
    private let handler: () -> Void
    public let signal: Int32

    public init(loop: EventLoop, signal: Int32, handler: @escaping () -> Void) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.signal = signal
        self.handler = handler
        self.watcher = .allocate(capacity: 1)
        CLibEV_signal_init(watcher, { _, watcher, _ in
            let me = Unmanaged<SignalWatcher>.fromOpaque(CLibEV_get_data(watcher)!).takeUnretainedValue()
            me.fire()
        }, signal)
        CLibEV_set_data(watcher, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        ev_signal_stop(loop.raw, watcher)
        watcher.deallocate()
    }

    /// The corresponding C function is `ev_signal_start`.
    public func start() {
        loop.preconditionOnLoop()
        _ = loop.watchedSignals.withLock { $0.insert(signal) }
        ev_signal_start(loop.raw, watcher)
    }

    /// The corresponding C function is `ev_signal_stop`.
    public func stop() {
        loop.preconditionOnLoop()
        ev_signal_stop(loop.raw, watcher)
    }

    private func fire() { handler() }
}
