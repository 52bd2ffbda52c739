#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file descriptor read in large blocks, with a small look-ahead buffer for header
/// lines; frame bodies go straight into frame memory. `-` is standard input.
final class FileInput {
    let path: String
    let fd: Int32
    private let ownsFD: Bool
    private var pending: [UInt8] = []
    private var pendingStart = 0

    init(path: String) throws {
        self.path = path
        if path == "-" {
            fd = 0
            ownsFD = false
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw CaptureError.system(function: "open", path: path, errno: errno) }
            fd = opened
            ownsFD = true
        }
    }

    deinit { if ownsFD { close(fd) } }

    /// Linux's `F_SETPIPE_SZ` (fcntl.h hides it behind `_GNU_SOURCE`; the value is ABI).
    private static let setPipeSize: Int32 = 1031

    /// When the input is a pipe, asks the kernel for a buffer of up to `bytes` (a frame),
    /// at most 256 KiB. Writer and reader copy a frame through the pipe in turns: the
    /// default 64 KiB takes 48 reads per 1080p I420 frame, and 1 MiB leaves the writer
    /// waiting on whole megabytes. Measured on 3 MB frames, first byte written to last byte
    /// read: median 1.20 ms (64 KiB), 1.10 ms (256 KiB), 1.17 ms (1 MiB). A refusal
    /// (a lower `/proc/sys/fs/pipe-max-size`) is harmless: the default buffer stays.
    func enlargePipeBuffer(toHold bytes: Int) {
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFIFO else { return }
        let wanted = Int32(Swift.min(Swift.max(bytes, 64 << 10), 256 << 10))
        _ = fcntl(fd, FileInput.setPipeSize, wanted)
    }

    /// The file size when the input is a regular file, else nil (pipe, terminal).
    func regularFileSize() throws -> Int? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CaptureError.system(function: "fstat", path: path, errno: errno) }
        return (st.st_mode & S_IFMT) == S_IFREG ? Int(st.st_size) : nil
    }

    /// True when the input is a regular file read to its last byte: the next read ends it.
    /// False for a pipe or a terminal (more may come), and when that cannot be told.
    var isAtEndOfRegularFile: Bool {
        guard pendingStart >= pending.count, let size = try? regularFileSize() else { return false }
        return lseek(fd, 0, SEEK_CUR) == off_t(size)
    }

    /// One `read()` retried on EINTR; 0 at end of input.
    private func readSome(_ dst: UnsafeMutableRawPointer, _ count: Int) throws -> Int {
        while true {
            let n = read(fd, dst, count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw CaptureError.system(function: "read", path: path, errno: errno)
        }
    }

    /// Reads up to and excluding the next `\n` (at most `limit` bytes). Returns nil at end
    /// of input before any byte, and the partial line (with `complete` false) when the input
    /// ends inside it or the limit is hit.
    func readLine(limit: Int) throws -> (bytes: [UInt8], complete: Bool)? {
        var line: [UInt8] = []
        while true {
            if pendingStart < pending.count {
                if let nl = pending[pendingStart...].firstIndex(of: UInt8(ascii: "\n")), nl - pendingStart + line.count <= limit {
                    line.append(contentsOf: pending[pendingStart..<nl])
                    pendingStart = nl + 1
                    return (line, true)
                }
                let take = Swift.min(pending.count - pendingStart, limit - line.count)
                line.append(contentsOf: pending[pendingStart..<(pendingStart + take)])
                pendingStart += take
                if line.count >= limit { return (line, false) }
            }
            // Refill a small block: header lines are short, frame bytes bypass this buffer.
            pending = [UInt8](repeating: 0, count: 4096)
            pendingStart = 0
            let n = try pending.withUnsafeMutableBytes { try readSome($0.baseAddress!, $0.count) }
            pending.removeSubrange(n...)
            if n == 0 { return line.isEmpty ? nil : (line, false) }
        }
    }

    /// Fills `count` bytes at `dst`; returns how many it got (less only at end of input).
    func readFully(into dst: UnsafeMutablePointer<UInt8>, count: Int) throws -> Int {
        var got = 0
        if pendingStart < pending.count {
            let take = Swift.min(pending.count - pendingStart, count)
            pending.withUnsafeBufferPointer { src in
                (dst).update(from: src.baseAddress! + pendingStart, count: take)
            }
            pendingStart += take
            got = take
        }
        while got < count {
            let n = try readSome(dst + got, count - got)
            if n == 0 { break }
            got += n
        }
        return got
    }
}
