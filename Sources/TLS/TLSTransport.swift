#if canImport(Glibc)
import Glibc
#endif
import CTLS
import IO

/// A `Connection`'s bytes through TLS (the server's end), non-blocking on the loop: OpenSSL
/// reads and writes the socket itself; what would block is said the way `ByteTransport` asks
/// (a handshake a write began waits for the socket to be readable, and so on).
///
/// Writing: `SSL_write` takes one buffer, so the slices from the cursor are written from the
/// first slice in place when it holds a full record (16 kB), else gathered into one record's
/// buffer; after a `.wouldBlock`, OpenSSL must be given the same bytes again, and the retry
/// gathers exactly as many from the same cursor (partial writes and a moving buffer are
/// allowed: `CTLS/shim.h`). A write reports the plain bytes it took.
///
/// Loop-owned, like its connection.
final class TLSTransport: ByteTransport {
    static let record = 16 << 10
    private let ssl: OpaquePointer
    private let fd: Int32
    /// The length of the write OpenSSL has begun and must finish (0: none).
    private var retryLength = 0
    private var gathered = [UInt8](repeating: 0, count: TLSTransport.record)
    private(set) var readNeedsWritable = false
    private(set) var writeNeedsReadable = false
    private var closeNotifySent = false

    init?(context: OpaquePointer, fd: Int32) {
        guard let ssl = SSL_new(context) else { return nil }
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            return nil
        }
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.fd = fd
    }

    deinit { SSL_free(ssl) }

    var hasBufferedInput: Bool { SSL_pending(ssl) > 0 }
    var hasPendingWrite: Bool { retryLength > 0 }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
        ERR_clear_error()
        readNeedsWritable = false
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return Int(n) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ: return nil
        case SSL_ERROR_WANT_WRITE:
            readNeedsWritable = true
            return nil
        case SSL_ERROR_ZERO_RETURN: return 0
        case let code: return try failed(code, "SSL_read")
        }
    }

    func write(_ slices: [ArraySlice<UInt8>], from cursor: SliceCursor) throws(Errno) -> IOResult<Int> {
        guard cursor.index < slices.count else { return .done(0) }
        ERR_clear_error()
        writeNeedsReadable = false
        let first = slices[cursor.index].dropFirst(cursor.offset)
        let n: Int32
        if retryLength == 0 && first.count >= Self.record || retryLength > 0 && first.count >= retryLength {
            let length = retryLength > 0 ? retryLength : first.count
            n = first.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(min(length, Int(Int32.max)))) }
            if n <= 0 { retryLength = length }
        } else {
            let length = gather(slices, from: cursor, limit: retryLength > 0 ? retryLength : Self.record)
            n = gathered.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(length)) }
            if n <= 0 { retryLength = length }
        }
        if n > 0 {
            retryLength = 0
            return .done(Int(n))
        }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_WRITE: return .wouldBlock
        case SSL_ERROR_WANT_READ:
            writeNeedsReadable = true
            return .wouldBlock
        case let code: return try failed(code, "SSL_write")
        }
    }

    /// Copies up to `limit` bytes from `cursor` on into `gathered`; returns how many.
    private func gather(_ slices: [ArraySlice<UInt8>], from cursor: SliceCursor, limit: Int) -> Int {
        var length = 0
        var index = cursor.index
        var offset = cursor.offset
        gathered.withUnsafeMutableBytes { out in
            while index < slices.count && length < limit {
                let slice = slices[index].dropFirst(offset)
                let take = min(slice.count, limit - length)
                slice.prefix(take).withUnsafeBytes { out.baseAddress!.advanced(by: length).copyMemory(from: $0.baseAddress!, byteCount: take) }
                length += take
                index += 1
                offset = 0
            }
        }
        return length
    }

    /// close_notify (best effort: a full socket gets none), then the socket's end.
    func shutdownWrite() throws(Errno) {
        if !closeNotifySent && SSL_is_init_finished(ssl) == 1 {
            ERR_clear_error()
            closeNotifySent = true
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
        }
        _ = try systemCall("shutdown") { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    /// A failure as an `Errno`: the system's for a system call's, else EPROTO named after
    /// OpenSSL's reason (`TLS: wrong version number: Protocol error`).
    private func failed<T>(_ code: Int32, _ call: String) throws(Errno) -> T {
        if code == SSL_ERROR_SYSCALL && errno != 0 {
            let saved = errno
            ERR_clear_error()
            throw Errno(code: saved, function: call)
        }
        let reason = String(cString: nalcast_tls_reason())
        ERR_clear_error()
        throw Errno(code: EPROTO, function: reason.isEmpty ? "TLS" : "TLS: \(reason)")
    }
}
