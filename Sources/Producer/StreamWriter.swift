import EventLoop
import H264
#if canImport(Glibc)
import Glibc
#endif

/// Writes the stream to a file or a pipe (`nalcast produce -o`) on its own thread, so a slow
/// reader of the pipe never holds up capture.
///
/// Access units wait in a bounded queue. Behind a live source, a full queue is emptied and
/// writing resumes at the next IDR (the skip is counted): what is written always decodes.
/// Behind a file source (`blockWhenFull`), `send` waits for room instead, so nothing is lost.
/// A reader that goes away (EPIPE) ends the writer; `isClosed` then says so.
///
/// Thread-safe: `send` and `finish` from one producer thread, the rest from anywhere.
public final class StreamWriter: Sendable {
    public struct Statistics: Sendable {
        public var accessUnitsWritten = 0
        public var bytesWritten = 0
        public var skips = 0
        public var skippedAccessUnits = 0
        public var error: String?
        public var isClosed = false
    }

    private struct State {
        var queue: [AccessUnit] = []
        var head = 0
        var queuedBytes = 0
        var waitingForIDR = true
        var finishing = false
        var threadDone = false
        var stats = Statistics()
    }

    public let name: String
    private let fd: Int32
    private let maxQueuedBytes: Int
    private let blockWhenFull: Bool
    private let closeWhenDone: Bool
    // `condition` is the lock for `state`: every access happens between lock() and unlock().
    private let condition = ConditionLock()
    nonisolated(unsafe) private var state = State()
    nonisolated(unsafe) private var thread: OSThread?

    /// - Parameters:
    ///   - fd: an open file descriptor; closed when done if `closeWhenDone`.
    ///   - blockWhenFull: wait for room rather than skip (file sources: lose nothing).
    public init(fd: Int32, name: String, blockWhenFull: Bool, closeWhenDone: Bool, maxQueuedBytes: Int = 32 << 20) {
        self.fd = fd
        self.name = name
        self.blockWhenFull = blockWhenFull
        self.closeWhenDone = closeWhenDone
        self.maxQueuedBytes = maxQueuedBytes
        thread = OSThread(name: "nalcast-writer") { [self] in self.run() }
    }

    public var statistics: Statistics {
        condition.lock()
        defer { condition.unlock() }
        return state.stats
    }

    public var isClosed: Bool { statistics.isClosed }

    /// Queues one access unit. Nothing is written before the first IDR.
    public func send(_ unit: AccessUnit) {
        condition.lock()
        defer { condition.unlock() }
        guard !state.stats.isClosed, !state.finishing else { return }
        if state.waitingForIDR {
            guard unit.isIDR else { return }
            state.waitingForIDR = false
        }
        while state.queuedBytes + unit.byteCount > maxQueuedBytes && state.queue.count > state.head {
            if blockWhenFull {
                condition.wait()
                if state.stats.isClosed { return }
                continue
            }
            // Behind a live source: drop what is queued and start again at an IDR.
            state.stats.skips += 1
            state.stats.skippedAccessUnits += state.queue.count - state.head
            state.queue.removeAll(keepingCapacity: true)
            state.head = 0
            state.queuedBytes = 0
            guard unit.isIDR else {
                state.waitingForIDR = true
                return
            }
        }
        state.queue.append(unit)
        state.queuedBytes += unit.byteCount
        condition.broadcast()
    }

    /// Writes what is queued, then stops the thread and closes the descriptor. Waits at most
    /// `timeout` seconds for the queue to drain.
    public func finish(timeout: Double = 5) {
        condition.lock()
        defer { condition.unlock() }
        state.finishing = true
        condition.broadcast()
        var left = timeout
        while !state.threadDone && left > 0 {
            condition.wait(seconds: Swift.min(left, 0.1))
            left -= 0.1
        }
    }

    private func run() {
        defer {
            if closeWhenDone { close(fd) }
            condition.withLock {
                state.threadDone = true
                condition.broadcast()
            }
        }
        while true {
            condition.lock()
            while state.head == state.queue.count && !state.finishing { condition.wait() }
            if state.head == state.queue.count {
                condition.unlock()
                return
            }
            let unit = state.queue[state.head]
            condition.unlock()

            let error = write(unit)

            condition.lock()
            // The queue may have been emptied by a skip meanwhile: only pop what we wrote.
            if state.head < state.queue.count {
                state.head += 1
                state.queuedBytes -= unit.byteCount
                if state.head == state.queue.count || state.head > 1024 {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
            }
            if let error {
                state.stats.error = error
                state.stats.isClosed = true
                state.queue = []
                state.head = 0
                state.queuedBytes = 0
            } else {
                state.stats.accessUnitsWritten += 1
                state.stats.bytesWritten += unit.byteCount
            }
            condition.broadcast()
            condition.unlock()
            if error != nil { return }
        }
    }

    /// Writes one access unit with gathered writes; returns an error line or nil.
    private func write(_ unit: AccessUnit) -> String? {
        let slices = unit.nalUnits.map(\.wire)
        var index = 0
        var offset = 0
        while index < slices.count {
            let count = Swift.min(slices.count - index, 64)
            let written: Int = withIovecs(slices[index..<(index + count)], offset: offset) { iov in
                writev(fd, iov.baseAddress, Int32(iov.count))
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { return "\(name): the reader closed the pipe" }
                return "\(name): writev: \(String(cString: strerror(errno)))"
            }
            var left = written
            while left > 0 && index < slices.count {
                let remaining = slices[index].count - offset
                if left >= remaining {
                    left -= remaining
                    index += 1
                    offset = 0
                } else {
                    offset += left
                    left = 0
                }
            }
        }
        return nil
    }
}

/// Calls `body` with iovecs pointing into `slices` (the first one from `offset`), valid for
/// the duration of the call.
func withIovecs<R>(_ slices: ArraySlice<ArraySlice<UInt8>>, offset: Int, _ body: (UnsafeMutableBufferPointer<iovec>) -> R) -> R {
    withUnsafeTemporaryAllocation(of: iovec.self, capacity: slices.count) { iovecs in
        func fill(_ i: Int) -> R {
            if i == slices.count { return body(iovecs) }
            let slice = slices[slices.startIndex + i]
            let skip = i == 0 ? offset : 0
            return slice.withUnsafeBufferPointer { buffer in
                iovecs[i] = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress! + skip), iov_len: buffer.count - skip)
                return fill(i + 1)
            }
        }
        return fill(0)
    }
}
