import IO
import Media

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Blocking writes of NAL units to a file descriptor: gathered (`GatheredWrite`, straight
/// from the shared buffers), retried on `EINTR` and short writes. Used on sink worker
/// threads only.
struct FileOutput {
    let fd: Int32
    /// Bytes written so far.
    private(set) var offset: Int = 0
    private var slices: [ArraySlice<UInt8>] = []

    /// For a socket: `sendmsg` with `MSG_NOSIGNAL` (a closed peer gives EPIPE, not SIGPIPE).
    let isSocket: Bool

    init(fd: Int32, offset: Int = 0, isSocket: Bool = false) {
        self.fd = fd
        self.offset = offset
        self.isSocket = isSocket
    }

    /// Queues NAL units for the next `flush`.
    mutating func add(_ nalUnits: [NALUnit]) {
        for nal in nalUnits where !nal.wire.isEmpty { slices.append(nal.wire) }
    }

    /// Queues bytes (shared, not copied) for the next `flush`.
    mutating func add(chunks: [ArraySlice<UInt8>]) {
        for chunk in chunks where !chunk.isEmpty { slices.append(chunk) }
    }

    var hasPending: Bool { !slices.isEmpty }

    /// Writes everything queued. Throws the `errno` of the failed call (`EAGAIN` when a
    /// socket's send timeout ran out).
    mutating func flush() throws(WriteFailure) {
        var cursor = SliceCursor()
        defer { slices.removeAll(keepingCapacity: true) }
        while cursor.index < slices.count {
            let result: IOResult<Int>
            do {
                result = try GatheredWrite.write(slices, from: cursor, to: isSocket ? .socket(fd) : .file(fd))
            } catch {
                throw WriteFailure(code: error.code)
            }
            guard case .done(let written) = result else { throw WriteFailure(code: EAGAIN) }
            offset += written
            cursor.advance(by: written, in: slices)
        }
    }
}

/// A failed write: its errno.
struct WriteFailure: Error {
    let code: Int32
    var message: String { String(cString: strerror(code)) }
    var isBrokenPipe: Bool { code == EPIPE }
}
