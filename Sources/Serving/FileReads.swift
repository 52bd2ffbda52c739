import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads files for `HTTPReply` on a thread of its own (`nalcast-files`), so that a slow disk
/// holds up that thread and never the loop, and with it every viewer: the loop asks for a
/// chunk (`read`), the thread `pread`s it and hands the bytes back through a `Mailbox`, and
/// the reply writes them when they come. One per service that serves files (HLS,
/// recordings), made on the loop thread; its thread waits for work as long as the process
/// runs, and holds it (and through its `Mailbox`, the loop) as long.
public final class FileReads: @unchecked Sendable {
    // @unchecked Sendable holds because: `queue` and `nextID` are only touched with `lock`
    // held; `mailbox` is written once in `init`, before the thread that reads it starts, and
    // `Mailbox.send` is safe from any thread; `completions` is touched on the loop thread only
    // (`read` checks preconditionOnLoop, the mailbox's handler runs there).
    private struct Request {
        let id: Int
        let fd: Int32
        let offset: Int
        let count: Int
    }

    private struct Done: Sendable {
        let id: Int
        let bytes: [UInt8]
        let error: Int32
    }

    private let loop: EventLoop
    private let lock = ConditionLock()
    private var queue: [Request] = []
    private var nextID = 0
    private var completions: [Int: (_ bytes: [UInt8], _ error: Int32) -> Void] = [:]
    private var mailbox: Mailbox<Done>?

    public init(loop: EventLoop) {
        self.loop = loop
        mailbox = Mailbox<Done>(loop: loop) { [unowned self] done in
            for read in done { self.completions.removeValue(forKey: read.id)?(read.bytes, read.error) }
        }
        OSThread(name: "nalcast-files") { [self] in self.run() }.detach()
    }

    /// Reads up to `count` bytes of `fd` at `offset` off the loop; `then` gets them on the loop
    /// thread (fewer at the end of the file, none past it; `error` an errno, 0 when none). The
    /// descriptor must stay open until then.
    public func read(fd: Int32, offset: Int, count: Int, then: @escaping (_ bytes: [UInt8], _ error: Int32) -> Void) {
        loop.preconditionOnLoop()
        let id = lock.withLock {
            nextID += 1
            queue.append(Request(id: nextID, fd: fd, offset: offset, count: count))
            lock.broadcast()
            return nextID
        }
        completions[id] = then
    }

    private func run() {
        while true {
            lock.lock()
            while queue.isEmpty { lock.wait() }
            let request = queue.removeFirst()
            lock.unlock()
            var bytes = [UInt8](repeating: 0, count: request.count)
            let n = bytes.withUnsafeMutableBytes { pread(request.fd, $0.baseAddress, request.count, off_t(request.offset)) }
            let error = n < 0 ? errno : 0
            bytes.removeLast(request.count - max(n, 0))
            mailbox?.send(Done(id: request.id, bytes: bytes, error: error), pastCapacity: true)
        }
    }
}
