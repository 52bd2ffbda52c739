import CTLS

/// The client side of TLS, blocking, for one request over a connected socket (a WHIP push to
/// an `https://` URL): the server's certificate checked against the system's CAs (or the
/// PEM file of a private CA), SNI and its host name (or IP address) checked, TLS 1.2 or 1.3.
/// The socket's own timeouts (`SO_RCVTIMEO`, `SO_SNDTIMEO`) bound every call. Used by one
/// thread; closes on `close()` (the socket stays the caller's).
public final class TLSClient {
    private var ssl: OpaquePointer?

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The handshake with `host` on the connected, blocking socket `fd`.
    public init(fd: Int32, host: String, caFile: String?) throws(Failure) {
        var error = [CChar](repeating: 0, count: 256)
        guard let made = nalcast_tls_client(fd, host, caFile, &error, error.count) else {
            throw Failure(description: "TLS: " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        ssl = made
    }

    deinit { close() }

    /// Writes all of `bytes`; false when the connection failed.
    public func write(_ bytes: [UInt8]) -> Bool {
        guard let ssl else { return false }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { nalcast_tls_client_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { return false }
            sent += Int(n)
        }
        return true
    }

    /// Reads into `buffer`: the byte count, 0 at the end, -1 on failure (or a timeout).
    public func read(into buffer: inout [UInt8]) -> Int {
        guard let ssl else { return -1 }
        return Int(buffer.withUnsafeMutableBytes { nalcast_tls_client_read(ssl, $0.baseAddress, Int32($0.count)) })
    }

    /// close_notify, then the session freed.
    public func close() {
        if let ssl { nalcast_tls_client_free(ssl) }
        ssl = nil
    }
}
