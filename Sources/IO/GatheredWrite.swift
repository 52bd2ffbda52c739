#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A position in a list of byte slices being written: the first slice not completely written,
/// and how many of its bytes are.
public struct SliceCursor: Sendable, Equatable {
    public var index: Int
    public var offset: Int

    public init(index: Int = 0, offset: Int = 0) {
        self.index = index
        self.offset = offset
    }

    /// Moves past `bytes` bytes written from `slices` at this position, and past the empty
    /// slices that follow them.
    public mutating func advance(by bytes: Int, in slices: [ArraySlice<UInt8>]) {
        var left = bytes
        while index < slices.count {
            let rest = slices[index].count - offset
            if left < rest {
                offset += left
                return
            }
            left -= rest
            index += 1
            offset = 0
        }
    }
}

/// Gathered writes of byte slices (the NAL units of access units) straight from the buffers
/// they share, never copied: one call writes up to `maxSlices` slices. Every writer of stream
/// bytes uses it: `Connection` on the loop (non-blocking sockets), the sinks' `FileOutput`
/// on their threads (files, pipes, blocking sockets).
public enum GatheredWrite {
    /// `IOV_MAX` on Linux.
    public static let maxSlices = 1024

    /// What a descriptor is: a socket is written with `sendmsg` and `MSG_NOSIGNAL` (a closed
    /// peer gives `EPIPE`, not `SIGPIPE`), anything else with `writev`. A socket is one nalcast
    /// made, so `EBADF` on it is a bug; another descriptor (stdout) may have been closed by
    /// the parent, and `EBADF` is thrown.
    public enum Target: Sendable {
        case socket(Int32)
        case file(Int32)
    }

    /// Writes what one call takes of `slices` from `cursor` on: the byte count, `.wouldBlock`
    /// (`EAGAIN`: a non-blocking socket is full, or a blocking one's send timeout ran out), or
    /// the error naming `sendmsg` or `writev`. `EINTR` is retried. Nothing to write: `.done(0)`.
    ///
    /// Each slice's address is taken inside its own `withUnsafeBufferPointer` and used after
    /// it, in the one system call: that holds because `slices` is kept alive across the call
    /// (`withExtendedLifetime`), so every slice's array buffer is, and a Swift array's
    /// buffer is contiguous and does not move while nothing mutates it (on Linux no array is
    /// bridged, so none is copied out to give a pointer). Taking them one nested closure per
    /// slice instead cost a call and two reference counts per slice, per write and reader.
    public static func write(_ slices: [ArraySlice<UInt8>], from cursor: SliceCursor, to target: Target) throws(Errno) -> IOResult<Int> {
        let count = Swift.min(slices.count - cursor.index, maxSlices)
        guard count > 0 else { return .done(0) }
        return try withExtendedLifetime(slices) { () throws(Errno) -> IOResult<Int> in
            try withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { iovecs throws(Errno) in
                for index in 0..<count {
                    iovecs[index] = entry(slices[cursor.index + index], skipping: index == 0 ? cursor.offset : 0)
                }
                return try call(iovecs, target)
            }
        }
    }

    /// The `iovec` of `slice` past its first `skip` bytes; valid while the slice's array is
    /// kept alive and not mutated.
    @inline(__always)
    static func entry(_ slice: ArraySlice<UInt8>, skipping skip: Int = 0) -> iovec {
        slice.withUnsafeBufferPointer { buffer in
            iovec(iov_base: buffer.baseAddress.map { UnsafeMutableRawPointer(mutating: $0 + skip) }, iov_len: buffer.count - skip)
        }
    }

    /// The one system call of a gathered write: `sendmsg` for a socket, `writev` otherwise.
    static func call(_ iovecs: UnsafeMutableBufferPointer<iovec>, _ target: Target) throws(Errno) -> IOResult<Int> {
        switch target {
        case .socket(let fd):
            var message = msghdr()
            message.msg_iov = iovecs.baseAddress
            message.msg_iovlen = iovecs.count
            return try nonBlockingCall("sendmsg") { sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
        case .file(let fd):
            return try nonBlockingCall("writev", badDescriptorIsBug: false) { writev(fd, iovecs.baseAddress, Int32(iovecs.count)) }
        }
    }
}

/// One gathered write of the same bytes to many sockets: a relay's access unit as every
/// reader in step with the stream gets it. The `iovec` list is made once, when the bytes
/// are, and each socket's `sendmsg` takes it as it is: a reader's write is its system call
/// and nothing before it (no list of its own built from the slices, no byte count).
///
/// `slices` are kept with the list for its life, so the addresses in it stay valid (as in
/// `GatheredWrite.write`: a Swift array's buffer does not move while nothing mutates it).
/// Past `GatheredWrite.maxSlices` slices, or with an empty one, there is no shared list
/// (`isShared` false) and writers write `slices` their usual way.
public final class SharedWrite: @unchecked Sendable {
    // @unchecked Sendable holds because: everything is set in init and never changed; the
    // iovec list only points into `slices`, which it keeps alive and which nothing mutates.
    public let slices: [ArraySlice<UInt8>]
    /// The bytes of all of `slices`.
    public let byteCount: Int
    private let iovecs: UnsafeMutableBufferPointer<iovec>

    public init(_ slices: [ArraySlice<UInt8>]) {
        self.slices = slices
        var total = 0
        var shareable = slices.count <= GatheredWrite.maxSlices
        for slice in slices {
            if slice.isEmpty { shareable = false }
            total += slice.count
        }
        byteCount = total
        guard shareable && total > 0 else {
            iovecs = UnsafeMutableBufferPointer(start: nil, count: 0)
            return
        }
        iovecs = .allocate(capacity: slices.count)
        for (index, slice) in slices.enumerated() { iovecs[index] = GatheredWrite.entry(slice) }
    }

    deinit { iovecs.deallocate() }

    /// Whether the list was made: every slice has bytes, and there are at most
    /// `GatheredWrite.maxSlices`.
    public var isShared: Bool { iovecs.count > 0 }

    /// One `sendmsg` of the list to the socket `fd` (`MSG_NOSIGNAL`, `EINTR` retried): the
    /// bytes it took, or `.wouldBlock`. Only when `isShared`.
    public func send(to fd: Int32) throws(Errno) -> IOResult<Int> {
        precondition(isShared, "a shared write without its list")
        return try GatheredWrite.call(iovecs, .socket(fd))
    }
}
