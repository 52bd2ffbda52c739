import CTLS
import IO

/// The server side of the built-in TLS (`--tls-cert`/`--tls-key`, `--tls self-signed`): one
/// OpenSSL context with Mozilla's "intermediate" configuration (TLS 1.2 and 1.3, ECDHE with
/// AES-GCM or ChaCha20-Poly1305; `CTLS/shim.h`), and a `TLSTransport` for each accepted
/// connection (`makeTransport`).
///
/// `reload()` reads the certificate files again (SIGHUP): connections made from now on use
/// the new context, those open keep the one they were made with (OpenSSL counts its users),
/// so no viewer is dropped.
///
/// Loop-owned: made before the loop runs, used on the loop thread.
public final class TLSContext {
    public enum Source: Sendable, Equatable {
        /// PEM files: the certificate (with its chain) and the private key.
        case files(certificate: String, key: String)
        /// A certificate made at start, in memory, for these subject alternative names
        /// (`DNS:localhost`, `IP:127.0.0.1`).
        case selfSigned(names: [String])
    }

    public let source: Source
    private var context: OpaquePointer
    /// The certificate's SHA-256 fingerprint, `AB:CD:…`.
    public private(set) var fingerprint: String

    public init(_ source: Source) throws(TLSError) {
        self.source = source
        (context, fingerprint) = try Self.make(source)
    }

    deinit { SSL_CTX_free(context) }

    /// Reads the files again; on failure the context in use stays, and the error says why.
    public func reload() throws(TLSError) {
        let (made, print) = try Self.make(source)
        SSL_CTX_free(context)
        context = made
        fingerprint = print
    }

    /// A TLS transport over `socket` (a server's end, the handshake to come), or nil when
    /// OpenSSL cannot make one (out of memory).
    public func makeTransport(_ socket: Socket) -> (any ByteTransport)? {
        TLSTransport(context: context, fd: socket.fd)
    }

    private static func make(_ source: Source) throws(TLSError) -> (OpaquePointer, String) {
        guard let context = nalcast_tls_server_context() else { throw TLSError(what: "TLS", reason: lastError()) }
        var digest = [UInt8](repeating: 0, count: 32)
        let ok: Int32
        switch source {
        case .files(let certificate, let key):
            ok = nalcast_tls_use_files(context, certificate, key) == 1 ? nalcast_tls_fingerprint(context, &digest) : 0
            if ok != 1 {
                SSL_CTX_free(context)
                throw TLSError(what: "--tls-cert \(certificate) --tls-key \(key)", reason: lastError())
            }
        case .selfSigned(let names):
            ok = nalcast_tls_self_signed(context, names.joined(separator: ","), &digest)
            if ok != 1 {
                SSL_CTX_free(context)
                throw TLSError(what: "--tls self-signed", reason: lastError())
            }
        }
        let hex = Array("0123456789ABCDEF".utf8)
        let print = digest.map { String(decoding: [hex[Int($0 >> 4)], hex[Int($0 & 15)]], as: UTF8.self) }.joined(separator: ":")
        return (context, print)
    }

    /// OpenSSL's first error, cleared.
    static func lastError() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        nalcast_tls_error(&buffer, buffer.count)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? "unknown error" : text
    }
}

/// A certificate or key that cannot be used, or OpenSSL failing: what, and OpenSSL's reason.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public let what: String
    public let reason: String
    public var description: String { "\(what): \(reason)" }
}

/// The OpenSSL nalcast was built against and the one it runs with (`nalcast --version`).
public enum OpenSSLVersion {
    public static var built: String { String(cString: CTLS_header_version()) }
    public static var running: String { String(cString: CTLS_running_version()) }
}
