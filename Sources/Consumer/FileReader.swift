import EventLoop
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a file or a pipe with blocking `read(2)` on a thread of its own and feeds a
/// `StreamIntake`; at the end of input the last access unit goes out too. A read that fails
/// drops only the access unit that was arriving (counted, and said in the error).
///
/// Life: `init` (opens) → `start(onEnd:)` → `stop()` from any thread (takes effect between
/// reads) → `join()`.
public final class FileReader: Sendable {
    public let name: String
    private let fd: Int32
    private let owned: Bool
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<OSThread?>(nil)
    /// Chunk size: 256 KiB measured fastest for the scanner (`nalcast inspect`).
    public static let chunkSize = 256 << 10

    /// Opens `path`, or standard input for `-`.
    public init(path: String) throws(SinkError) {
        if path == "-" {
            fd = 0
            owned = false
            name = "stdin"
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SinkError(sink: "input", message: "\(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw SinkError(sink: "input", message: "\(path): is a directory")
        }
        self.fd = fd
        owned = true
        name = path
    }

    deinit { if owned { close(fd) } }

    /// Starts reading into `intake`, which from now on belongs to the reader thread. `onEnd`
    /// runs on that thread at the end: nil at end of input or after `stop()`, else the error.
    public func start(intake: sending StreamIntake, onEnd: @escaping @Sendable (String?) -> Void) {
        let t = OSThread(name: "nalcast-filereader") { [self] in
            let error = self.run(intake)
            onEnd(error)
        }
        thread.withLock { $0 = t }
    }

    public func stop() { stopping.store(true, ordering: .relaxed) }

    public func join() {
        if let t = thread.withLock({ t in defer { t = nil }; return t }) { t.join() }
    }

    private func run(_ intake: StreamIntake) -> String? {
        let size = FileReader.chunkSize
        while !stopping.load(ordering: .relaxed) {
            var got = 0
            let chunk = [UInt8](unsafeUninitializedCapacity: size) { buf, count in
                got = read(fd, buf.baseAddress, size)
                count = max(0, got)
            }
            if got < 0 {
                let code = errno
                if code == EINTR { continue }
                let dropped = intake.inputFailed()
                return "reading \(name): \(String(cString: strerror(code)))" + (dropped > 0 ? "; an unfinished access unit dropped (\(dropped) bytes)" : "")
            }
            if got == 0 {
                intake.finish()
                return nil
            }
            // A short read (a pipe gives 64 KiB at most) would pin the whole 256 KiB buffer
            // for as long as its access units are queued: keep an exact-size copy instead.
            intake.push(got < size / 2 ? Array(chunk) : chunk)
        }
        return nil
    }
}
