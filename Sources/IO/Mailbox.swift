import CLibEV
import Synchronization

/// Hands messages from any thread to the loop thread.
///
/// `send` appends under a lock, then wakes the loop with `ev_async_send`; wake-ups coalesce,
/// and the loop-side handler gets every pending message at once, in order. Send data, not
/// closures. An optional capacity bounds the backlog: past it, `send` drops and counts, so
/// the sender (the capture thread) never waits.
///
/// A sender on the loop thread itself (a relay's input socket, read on the loop) wakes
/// nothing: an `ev_async_send` made there writes no eventfd but makes the loop's next poll
/// return at once, one `epoll_wait` more per message. Its messages are handled instead just
/// before the loop next polls (an `ev_prepare` watcher, started by such a send and stopped by
/// the drain): the same order, never inside the sender's call, and no extra system call. A
/// message sent while such a drain runs (a handler stopping the loop) wakes the loop as from
/// another thread: this turn's prepare watchers have run.
///
/// Its code is inlinable, so that each user's module compiles it for its own message type: a
/// relay sends and drains a message every access unit, and the generic code in this module
/// looked up the type of `[Message]` in the runtime's tables at each step.
public final class Mailbox<Message: Sendable>: @unchecked Sendable {
    // @unchecked Sendable holds because: messages cross threads only through `pending`, a
    // Mutex; `watcher` is started, stopped and freed on the loop's owner thread (checked with
    // preconditionOnLoop) and otherwise only passed to ev_async_send, which libev documents as
    // thread-safe; `beforePoll` is started and stopped on the loop's owner thread only (the
    // sender checks `isOnLoop` first); `handler` is called on the loop thread only, and
    // `spare` is used by the drain, on the loop thread, only.

    public let capacity: Int
    @usableFromInline let raw: OpaquePointer
    @usableFromInline unowned(unsafe) let loop: EventLoop
    /// Keeps the loop alive as long as a sender can reach it (nil for the loop's own control mailbox).
    @usableFromInline let keepAlive: EventLoop?
    @usableFromInline let pending = Mutex<[Message]>([])
    /// The array the last drain handed out, emptied: the next drain swaps it in for
    /// `pending`, so the two buffers take turns and no drain allocates. Loop thread only.
    @usableFromInline var spare: [Message] = []
    @usableFromInline let droppedCount = Atomic<Int>(0)
    @usableFromInline let watcher: UnsafeMutablePointer<ev_async>
    /// Drains before the loop polls, after a send from the loop thread.
    @usableFromInline let beforePoll: UnsafeMutablePointer<ev_prepare>
    @usableFromInline let handler: ([Message]) -> Void
    /// What the watcher's data pointer finds: C callbacks cannot be generic.
    @usableFromInline let wakeUp = WakeUp()

    /// Creates and starts the mailbox; call on the loop's owner thread. Release the last
    /// reference on the owner thread too (or after `join()`).
    @inlinable
    public convenience init(loop: EventLoop, capacity: Int = .max, handler: @escaping ([Message]) -> Void) {
        self.init(loop: loop, keepAlive: loop, capacity: capacity, handler: handler)
    }

    /// For the loop's control mailbox, which must not keep its own loop alive.
    convenience init(unretainedLoop loop: EventLoop, handler: @escaping ([Message]) -> Void) {
        self.init(loop: loop, keepAlive: nil, capacity: .max, handler: handler)
    }

    @inlinable
    init(loop: EventLoop, keepAlive: EventLoop?, capacity: Int, handler: @escaping ([Message]) -> Void) {
        precondition(capacity > 0)
        loop.preconditionOnLoop()
        self.capacity = capacity
        self.raw = loop.raw
        self.loop = loop
        self.keepAlive = keepAlive
        self.handler = handler
        self.watcher = .allocate(capacity: 1)
        self.beforePoll = .allocate(capacity: 1)
        CLibEV_async_init(watcher) { _, watcher, _ in
            let wakeUp = Unmanaged<WakeUp>.fromOpaque(CLibEV_get_data(watcher)!).takeUnretainedValue()
            wakeUp.fire()
        }
        CLibEV_set_data(watcher, Unmanaged.passUnretained(wakeUp).toOpaque())
        wakeUp.action = { [unowned(unsafe) self] in self.drain() }
        ev_async_start(raw, watcher)
        CLibEV_prepare_init(beforePoll) { _, watcher, _ in
            let wakeUp = Unmanaged<WakeUp>.fromOpaque(CLibEV_get_data(watcher)!).takeUnretainedValue()
            wakeUp.fireBeforePoll()
        }
        CLibEV_set_data(beforePoll, Unmanaged.passUnretained(wakeUp).toOpaque())
        wakeUp.beforePollAction = { [unowned(unsafe) self] in
            self.loop.handlingBeforePoll = true
            defer { self.loop.handlingBeforePoll = false }
            self.drain()
        }
    }

    deinit {
        ev_async_stop(raw, watcher)
        ev_prepare_stop(raw, beforePoll)
        watcher.deallocate()
        beforePoll.deallocate()
    }

    /// Queues a message for the loop thread. Returns false (and counts it) when the mailbox is
    /// full. Safe from any thread.
    ///
    /// `pastCapacity` is for the few messages that must never be lost however far behind the
    /// loop is (the end of capture): they bypass the bound, so a sender may use it only for a
    /// bounded number of messages.
    @discardableResult @inlinable
    public func send(_ message: Message, pastCapacity: Bool = false) -> Bool {
        let accepted = pending.withLock { pending in
            guard pastCapacity || pending.count < capacity else { return false }
            pending.append(message)
            return true
        }
        guard accepted else {
            droppedCount.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        if loop.isOnLoop && !loop.handlingBeforePoll {
            // Handled before the loop next polls; starting an active watcher does nothing.
            ev_prepare_start(raw, beforePoll)
        } else {
            // Another thread; or a handler running before the poll (the prepare watchers of
            // this turn are taken already): the poll must not wait.
            ev_async_send(raw, watcher)
        }
        return true
    }

    /// Messages refused because the mailbox was full.
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }

    /// Messages waiting for the loop.
    public var backlog: Int { pending.withLock { $0.count } }

    @inlinable
    func drain() {
        loop.preconditionOnLoop()
        ev_prepare_stop(raw, beforePoll)
        // The pending messages out, the last drain's emptied array in their place.
        var messages = spare
        spare = []
        pending.withLock { swap(&$0, &messages) }
        if messages.count > 0 { handler(messages) }
        // Unique again unless the handler kept the array, in which case this allocates anew.
        messages.removeAll(keepingCapacity: true)
        spare = messages
    }
}

/// The non-generic target of a mailbox's async watcher. Loop thread only.
@usableFromInline
final class WakeUp {
    @usableFromInline var action: () -> Void = {}
    @usableFromInline var beforePollAction: () -> Void = {}
    @usableFromInline init() {}
    @usableFromInline func fire() { action() }
    @usableFromInline func fireBeforePoll() { beforePollAction() }
}
