import H264

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Blocking writes of NAL units to a file descriptor: gathered (`writev`, up to `IOV_MAX`
/// slices a call, straight from the shared buffers), retried on `EINTR` and short writes.
/// Used on sink worker threads only.
struct FileOutput {
    let fd: Int32
    /// Bytes written so far.
    private(set) var offset: Int = 0
    private var slices: [ArraySlice<UInt8>] = []

    static let maxIovecs = 1024

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

    var hasPending: Bool { !slices.isEmpty }

    /// Writes everything queued. Throws the `errno` of the failed call.
    mutating func flush() throws(WriteFailure) {
        var index = 0
        var skip = 0  // bytes of slices[index] already written
        defer { slices.removeAll(keepingCapacity: true) }
        while index < slices.count {
            let count = min(FileOutput.maxIovecs, slices.count - index)
            let written: Int = withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { iov in
                for k in 0..<count {
                    let slice = slices[index + k]
                    let drop = k == 0 ? skip : 0
                    // The pointer outlives the closure: `slices` keeps the storage alive and
                    // unchanged until the write is done.
                    slice.withUnsafeBufferPointer { buf in
                        iov[k] = iovec(iov_base: UnsafeMutableRawPointer(mutating: buf.baseAddress! + drop), iov_len: buf.count - drop)
                    }
                }
                while true {
                    let n: Int
                    if isSocket {
                        var message = msghdr()
                        message.msg_iov = iov.baseAddress
                        message.msg_iovlen = count
                        n = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                    } else {
                        n = writev(fd, iov.baseAddress, Int32(count))
                    }
                    if n >= 0 { return n }
                    if errno == EINTR { continue }
                    return -Int(errno)
                }
            }
            if written < 0 { throw WriteFailure(code: Int32(-written)) }
            offset += written
            var left = written
            while left > 0 && index < slices.count {
                let rest = slices[index].count - skip
                if left >= rest {
                    left -= rest
                    index += 1
                    skip = 0
                } else {
                    skip += left
                    left = 0
                }
            }
        }
    }
}

/// A failed write: its errno.
struct WriteFailure: Error {
    let code: Int32
    var message: String { String(cString: strerror(code)) }
    var isBrokenPipe: Bool { code == EPIPE }
}
