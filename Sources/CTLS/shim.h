#ifndef CTLS_SHIM_H
#define CTLS_SHIM_H
// OpenSSL (libssl3, 3.0+) for the built-in TLS of --web and --metrics: a server context with
// Mozilla's "intermediate" configuration, its certificate from PEM files or made in memory,
// and the few calls a non-blocking connection needs. Several of OpenSSL's calls are macros
// or variadic, which Swift cannot call: they are wrapped here.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rand.h>
#include <string.h>

// OpenSSL's version as the headers say it and as the library that runs says it, for
// `nalcast --version`.
static inline const char *CTLS_header_version(void) { return OPENSSL_VERSION_TEXT; }
static inline const char *CTLS_running_version(void) { return OpenSSL_version(OPENSSL_VERSION); }

// Mozilla's "intermediate" TLS 1.2 ciphers (server-side-tls, version 5.7), without the DHE
// ones (no DH parameters): ECDHE with AES-GCM or ChaCha20-Poly1305 only. TLS 1.3 keeps
// OpenSSL's suites, which are the same as Mozilla's.
#define NALCAST_TLS12_CIPHERS "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

// A server context: TLS 1.2 and 1.3 only, the ciphers above, no renegotiation, no
// compression; partial writes (a record at a time) from a buffer that may move between
// retries; buffers given back while a connection is idle. NULL on failure.
static inline SSL_CTX *nalcast_tls_server_context(void) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) return NULL;
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) || !SSL_CTX_set_cipher_list(ctx, NALCAST_TLS12_CIPHERS)) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    // HTTP/1.1 only: a client that offers ALPN gets no h2.
    return ctx;
}

// The certificate chain and key of PEM files, checked to belong together. 1 on success.
static inline int nalcast_tls_use_files(SSL_CTX *ctx, const char *cert, const char *key) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) return 0;
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) return 0;
    return SSL_CTX_check_private_key(ctx) == 1;
}

// A self-signed certificate made now, in memory: an EC P-256 key, CN "nalcast", valid from an
// hour ago for 30 days, subjectAltName `san` (e.g. "DNS:localhost,IP:127.0.0.1"), signed with
// SHA-256; its SHA-256 fingerprint into `fingerprint` (32 bytes). 1 on success.
static inline int nalcast_tls_self_signed(SSL_CTX *ctx, const char *san, unsigned char *fingerprint) {
    int ok = 0;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = X509_new();
    X509_EXTENSION *ext = NULL;
    if (!key || !cert) goto done;
    if (!X509_set_version(cert, 2)) goto done;
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) goto done;
    serial[0] &= 0x7F;
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn) goto done;
    int set = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
    BN_free(bn);
    if (!set) goto done;
    if (!X509_gmtime_adj(X509_getm_notBefore(cert), -3600) || !X509_gmtime_adj(X509_getm_notAfter(cert), 30L * 24 * 3600)) goto done;
    if (!X509_set_pubkey(cert, key)) goto done;
    X509_NAME *name = X509_get_subject_name(cert);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"nalcast", -1, -1, 0)) goto done;
    if (!X509_set_issuer_name(cert, name)) goto done;
    ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    if (!ext || !X509_add_ext(cert, ext, -1)) goto done;
    if (!X509_sign(cert, key, EVP_sha256())) goto done;
    if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) goto done;
    unsigned int length = 0;
    if (!X509_digest(cert, EVP_sha256(), fingerprint, &length) || length != 32) goto done;
    ok = 1;
done:
    X509_EXTENSION_free(ext);
    X509_free(cert);
    EVP_PKEY_free(key);
    return ok;
}

// The SHA-256 fingerprint of the context's certificate (32 bytes). 1 on success.
static inline int nalcast_tls_fingerprint(SSL_CTX *ctx, unsigned char *fingerprint) {
    X509 *cert = SSL_CTX_get0_certificate(ctx);
    unsigned int length = 0;
    return cert && X509_digest(cert, EVP_sha256(), fingerprint, &length) && length == 32;
}

// The first error on this thread's OpenSSL queue, as text (empty when none); the queue is
// cleared.
static inline void nalcast_tls_error(char *buffer, size_t size) {
    unsigned long code = ERR_get_error();
    buffer[0] = 0;
    if (code) ERR_error_string_n(code, buffer, size);
    ERR_clear_error();
}

// The reason alone ("wrong version number"), for a connection's one line.
static inline const char *nalcast_tls_reason(void) {
    unsigned long code = ERR_peek_last_error();
    const char *reason = code ? ERR_reason_error_string(code) : NULL;
    return reason ? reason : "";
}
#endif
