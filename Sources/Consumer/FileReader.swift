import Output
import IO
import Media
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
    /// What a regular file is when its first bytes say it is not Annex-B (an MP4, a Y4M…),
    /// found when it is opened, before anything is created; a pipe is looked at by the
    /// reader thread and ends the run with `.notAnnexB`.
    public let notAnnexB: InputSniffer.Format?
    /// A regular file's first bytes were looked at when it was opened: the reader thread
    /// need not hold its first chunks back to look again.
    private let sniffedAtOpen: Bool

    /// How reading ended.
    public enum End: Sendable, Equatable {
        /// End of input, or `stop()`.
        case ended
        case failed(String)
        /// The input is not an Annex-B stream: one line saying what it is and what to do.
        case notAnnexB(String)
    }

    /// Opens `path`, or standard input for `-`.
    public init(path: String) throws(SinkError) {
        if path == "-" {
            fd = 0
            owned = false
            name = "stdin"
            notAnnexB = nil
            sniffedAtOpen = false
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
        if (st.st_mode & S_IFMT) == S_IFREG {
            // pread: the file offset stays at 0 for the reader thread. A whole window, or a
            // file shorter than one, always gets a verdict.
            var head = [UInt8](repeating: 0, count: InputSniffer.window)
            let got = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            sniffedAtOpen = got >= 0
            if got >= 0, case .notAnnexB(let format) = InputSniffer.identify(head.prefix(got), atEnd: got < head.count) {
                notAnnexB = format
                return
            }
        } else {
            sniffedAtOpen = false
        }
        notAnnexB = nil
    }

    deinit { if owned { close(fd) } }

    /// Starts reading into `intake`, which from now on belongs to the reader thread. `onEnd`
    /// runs on that thread at the end, with how reading ended (`End`).
    public func start(intake: sending StreamIntake, onEnd: @escaping @Sendable (End) -> Void) {
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

    private func run(_ intake: StreamIntake) -> End {
        let size = FileReader.chunkSize
        // Until `InputSniffer` can tell (a few bytes, at most its window), chunks of a pipe
        // wait here; a regular file was looked at when it was opened.
        var head: InputSniffer.Head? = sniffedAtOpen ? nil : InputSniffer.Head()
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
                return .failed("reading \(name): \(String(cString: strerror(code)))" + (dropped > 0 ? "; an unfinished access unit dropped (\(dropped) bytes)" : ""))
            }
            // A short read (a pipe gives 64 KiB at most) would pin the whole 256 KiB buffer
            // for as long as its access units are queued: keep an exact-size copy instead.
            let kept = got < size / 2 ? Array(chunk) : chunk
            if head != nil {
                switch head!.add(kept) {
                case .notAnnexB(let format): return .notAnnexB(InputSniffer.explain(format, name: name))
                case .needMore where got > 0: continue
                case .annexB, .needMore:
                    for c in head!.chunks { intake.push(c) }
                    head = nil
                }
            } else if got > 0 {
                intake.push(kept)
            }
            if got == 0 {
                intake.finish()
                return .ended
            }
        }
        return .ended
    }
}
