import CWebRTC

/// DTLS for WebRTC's DTLS-SRTP (RFC 5764), over OpenSSL (`CWebRTC`): the server for WHEP
/// viewers, else the role the other side's SDP leaves (a WHIP server's answer, a WHIP
/// publisher's offer that says a=setup:passive makes this side the client). One
/// certificate for the process, made at start (ECDSA P-256, its SHA-256 fingerprint in every
/// answer), and an association per peer fed the datagrams that arrive and giving back the
/// ones to send. Loop-owned.
public final class DTLSContext {
    let raw: OpaquePointer
    /// The certificate's SHA-256 fingerprint (32 bytes), for `a=fingerprint`.
    public let fingerprint: [UInt8]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws(Failure) {
        var error = [CChar](repeating: 0, count: 256)
        guard let made = nc_dtls_context_new(&error, Int32(error.count)) else {
            throw Failure(description: "DTLS: " + String(decoding: error.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        raw = made
        var print = [UInt8](repeating: 0, count: 32)
        nc_dtls_context_fingerprint(made, &print)
        fingerprint = print
    }

    deinit { nc_dtls_context_free(raw) }
}

/// One peer's DTLS association. Loop-owned.
final class DTLSAssociation {
    enum State { case handshaking, connected, open, closed, failed(String) }

    private let raw: OpaquePointer
    /// Keeps the context (and its SSL_CTX) alive as long as the association.
    private let context: DTLSContext

    /// The handshake's client (a WHIP server answered a=setup:passive) rather than its server.
    let isClient: Bool

    init?(_ context: DTLSContext, client: Bool) {
        guard let made = nc_dtls_new(context.raw, client ? 1 : 0) else { return nil }
        raw = made
        self.context = context
        isClient = client
    }

    /// The client's first flight (the ClientHello), once ICE has a path.
    func start() -> State { state(nc_dtls_start(raw)) }

    deinit { nc_dtls_free(raw) }

    func receive(_ datagram: [UInt8]) -> State { state(datagram.withUnsafeBufferPointer { nc_dtls_receive(raw, $0.baseAddress, $0.count) }) }

    func handleTimeout() -> State { state(nc_dtls_handle_timeout(raw)) }

    /// Seconds until the retransmission timer is due; nil when none runs.
    var timeout: Double? {
        let ms = nc_dtls_timeout_ms(raw)
        return ms < 0 ? nil : Double(ms) / 1000
    }

    /// The datagrams OpenSSL wrote since the last call, oldest first.
    func outgoing() -> [[UInt8]] {
        var out: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = nc_dtls_next_datagram(raw, &buffer, buffer.count)
            if n == 0 { return out }
            if n > 0 { out.append(Array(buffer[0..<Int(n)])) }
        }
    }

    var peerFingerprint: [UInt8]? {
        var print = [UInt8](repeating: 0, count: 32)
        return nc_dtls_peer_fingerprint(raw, &print) == 1 ? print : nil
    }

    /// The SRTP profile the handshake chose and the keys and salts this side protects with
    /// (`local`) and the peer does (`remote`): the client's write key and salt and the
    /// server's (RFC 5764 §4.2), by this side's role; nil when the profile is none nalcast takes.
    var srtpKeys: (profile: SRTPProfile, local: (key: [UInt8], salt: [UInt8]), remote: (key: [UInt8], salt: [UInt8]))? {
        var material = [UInt8](repeating: 0, count: 60)
        guard let profile = SRTPProfile(rawValue: nc_dtls_srtp_keys(raw, &material)) else { return nil }
        let salt = profile.saltLength
        let client = (key: Array(material[0..<16]), salt: Array(material[32..<32 + salt]))
        let server = (key: Array(material[16..<32]), salt: Array(material[32 + salt..<32 + 2 * salt]))
        return isClient ? (profile, client, server) : (profile, server, client)
    }

    func shutdown() { nc_dtls_shutdown(raw) }

    private func state(_ code: Int32) -> State {
        switch code {
        case Int32(NC_DTLS_HANDSHAKING): return .handshaking
        case Int32(NC_DTLS_CONNECTED): return .connected
        case Int32(NC_DTLS_OPEN): return .open
        case Int32(NC_DTLS_CLOSED): return .closed
        default: return .failed(String(cString: nc_dtls_error(raw)))
        }
    }
}

/// The SRTP protection profiles nalcast offers and takes in DTLS-SRTP's use_srtp, by their
/// numbers there: AES-GCM first when libsrtp2 can do it (`nc_srtp_profiles`).
public enum SRTPProfile: Int32, Sendable {
    case aes128CMSHA1_80 = 0x0001
    case aeadAES128GCM = 0x0007

    /// The master salt's length (RFC 5764 §4.1.2, RFC 7714 §12).
    var saltLength: Int { self == .aeadAES128GCM ? 12 : 14 }

    /// Its name in IANA's DTLS-SRTP registry, as a browser's `srtpCipher` statistic gives it.
    public var name: String { self == .aeadAES128GCM ? "SRTP_AEAD_AES_128_GCM" : "SRTP_AES128_CM_HMAC_SHA1_80" }
}

/// An SRTP session of libsrtp2 (opened with dlopen: `SRTPSession.load()` first). Loop-owned.
final class SRTPSession {
    private let raw: OpaquePointer

    /// Opens libsrtp2 once; nil when it opened, else why not (one line).
    static func load() -> String? {
        var why = [CChar](repeating: 0, count: 256)
        if nc_srtp_load(&why, Int32(why.count)) == 1 { return nil }
        return "libsrtp2: " + String(decoding: why.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    init?(_ profile: SRTPProfile, key: [UInt8], salt: [UInt8], outbound: Bool) {
        guard let made = nc_srtp_new(profile.rawValue, key, salt, outbound ? 1 : 0) else { return nil }
        raw = made
    }

    deinit { nc_srtp_free(raw) }

    /// `packet` protected (RTP, or RTCP when `rtcp`), nil when libsrtp2 refused it.
    func protect(_ packet: [UInt8], rtcp: Bool = false) -> [UInt8]? {
        var buffer = packet + [UInt8](repeating: 0, count: Int(NC_SRTP_TRAILER))
        let length = buffer.withUnsafeMutableBufferPointer { b in
            rtcp ? nc_srtp_protect_rtcp(raw, b.baseAddress, Int32(packet.count), Int32(b.count))
                : nc_srtp_protect(raw, b.baseAddress, Int32(packet.count), Int32(b.count))
        }
        guard length > 0 else { return nil }
        buffer.removeLast(buffer.count - Int(length))
        return buffer
    }

    /// `packet` checked and decrypted (RTCP, or RTP when not `rtcp`), nil when it does not check.
    func unprotect(_ packet: [UInt8], rtcp: Bool = true) -> [UInt8]? {
        var buffer = packet
        let length = buffer.withUnsafeMutableBufferPointer { b in
            rtcp ? nc_srtp_unprotect_rtcp(raw, b.baseAddress, Int32(b.count)) : nc_srtp_unprotect(raw, b.baseAddress, Int32(b.count))
        }
        guard length > 0 else { return nil }
        buffer.removeLast(buffer.count - Int(length))
        return buffer
    }
}
