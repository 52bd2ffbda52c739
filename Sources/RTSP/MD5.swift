import CTLS

/// MD5 (RFC 1321), for RTSP's Digest authentication (RFC 2617), which cameras still ask for:
/// OpenSSL's (`EVP_md5`, libcrypto, which nalcast links for TLS), as no hash is written here.
/// Not for anything that needs a secure hash: Digest defines its responses with MD5.
enum MD5 {
    /// The digest of `text`'s UTF-8 bytes as 32 lowercase hex digits.
    static func hex(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        var size: UInt32 = 0
        let bytes = Array(text.utf8)
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &size, EVP_md5(), nil) }
        precondition(ok == 1 && size == 16, "EVP_Digest(MD5) failed")
        return digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
