/// Why an RTSP session could not be opened or ended, sorted by what the reader does next.
public struct RTSPError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not reached, closed, timed out, a server error: tried again.
        case lost
        /// No answer within the deadline (the read's: a stall).
        case timedOut
        /// 401 or 403 with the credentials given (or none): never retried.
        case refused
        /// 404: no such stream at that URL.
        case notFound
        /// The stream has no H.264 video, or its SDP or RTSP is unreadable.
        case invalid
        /// `stop()` was called.
        case stopped
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What ends any wait of an RTSP session at once from another thread: a pipe whose read end
/// every poll watches. Why `@unchecked Sendable` holds: the descriptors are set in `init` and
/// closed in `deinit` only; `signal()` writes one byte, which any thread may do.
public final class RTSPStopSignal: @unchecked Sendable {
    let readFD: Int32
    private let writeFD: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "pipe: \(String(cString: strerror(errno)))")
        readFD = fds[0]
        writeFD = fds[1]
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Every wait from now on ends at once.
    public func signal() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Whether `signal()` was called.
    public var isSignalled: Bool {
        var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) > 0
    }
}
