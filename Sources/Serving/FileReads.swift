import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads files for `HTTPReply` on a thread of its own (`nalcast-files`), so that a slow disk
/// holds up that thread and never the loop, and with it every viewer: the loop asks for a
/// chunk (`read`), or for any other work on the files (`perform`: opening them, reading a
/// recording's fragment tables), the thread does it and hands the result back through a
/// `Mailbox`, and the reply goes on when it comes. One per service that serves files (HLS,
/// recordings), made on the loop thread; its thread waits for work as long as the process
/// runs, and holds it (and through its `Mailbox`, the loop) as long.
public final class FileReads: @unchecked Sendable {
    // @unchecked Sendable holds because: `queue` and `nextID` are only touched with `lock`
    // held; `mailbox` is written once in `init`, before the thread that reads it starts, and
    // `Mailbox.send` is safe from any thread; `completions` is touched on the loop thread only
    // (`perform` checks preconditionOnLoop, the mailbox's handler runs there).
    private struct Request {
        let id: Int
        let work: @Sendable () -> any Sendable
    }

    private struct Done: Sendable {
        let id: Int
        let result: any Sendable
    }

    /// What a `read` gives back.
    private struct Chunk: Sendable {
        let bytes: [UInt8]
        let error: Int32
    }

    private let loop: EventLoop
    private let lock = ConditionLock()
    private var queue: [Request] = []
    private var nextID = 0
    private var completions: [Int: (any Sendable) -> Void] = [:]
    private var mailbox: Mailbox<Done>?

    public init(loop: EventLoop) {
        self.loop = loop
        mailbox = Mailbox<Done>(loop: loop) { [unowned self] done in
            for work in done { self.completions.removeValue(forKey: work.id)?(work.result) }
        }
        OSThread(name: "nalcast-files") { [self] in self.run() }.detach()
    }

    /// Reads up to `count` bytes of `fd` at `offset` off the loop; `then` gets them on the loop
    /// thread (fewer at the end of the file, none past it; `error` an errno, 0 when none). The
    /// descriptor must stay open until then.
    public func read(fd: Int32, offset: Int, count: Int, then: @escaping (_ bytes: [UInt8], _ error: Int32) -> Void) {
        perform({ Self.pread(fd: fd, offset: offset, count: count) }, then: { (chunk: Chunk) in then(chunk.bytes, chunk.error) })
    }

    /// Runs `work` on the files thread, after the work asked for before it; `then` gets its
    /// result on the loop thread.
    public func perform<Result: Sendable>(_ work: @escaping @Sendable () -> Result, then: @escaping (Result) -> Void) {
        loop.preconditionOnLoop()
        let id = lock.withLock {
            nextID += 1
            queue.append(Request(id: nextID, work: { work() }))
            lock.broadcast()
            return nextID
        }
        completions[id] = { then($0 as! Result) }
    }

    private func run() {
        while true {
            lock.lock()
            while queue.isEmpty { lock.wait() }
            let request = queue.removeFirst()
            lock.unlock()
            mailbox?.send(Done(id: request.id, result: request.work()), pastCapacity: true)
        }
    }

    private static func pread(fd: Int32, offset: Int, count: Int) -> Chunk {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, count, off_t(offset)) }
        let error = n < 0 ? errno : 0
        bytes.removeLast(count - max(n, 0))
        return Chunk(bytes: bytes, error: error)
    }
}
