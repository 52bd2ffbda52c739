#ifndef CTLS_SHIM_H
#define CTLS_SHIM_H
// OpenSSL (libssl3, 3.0+) for the built-in TLS of --web and --metrics: a server context with
// Mozilla's "intermediate" configuration, its certificate from PEM files or made in memory,
// and the few calls a non-blocking connection needs; and a blocking client, for a WHIP push
// to an https:// URL. Several of OpenSSL's calls are macros or variadic, which Swift cannot
// call: they are wrapped here.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rand.h>
#include <stdio.h>
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
// ---- The client (a WHIP push over https) ----

// A TLS client on a connected, blocking socket `fd`: TLS 1.2 and 1.3, the server's
// certificate checked against the system's CAs (or those of the PEM file `ca_file`), with
// SNI and the host name (or IP address) `host` checked against it; the handshake done. NULL
// with one line in `error` (OpenSSL's reason, or the certificate check's).
static inline SSL *nalcast_tls_client(int fd, const char *host, const char *ca_file, char *error, size_t size) {
    error[0] = 0;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = NULL;
    if (!ctx) goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx)) != 1) goto fail;
    ssl = SSL_new(ctx);
    if (!ssl) goto fail;
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(host);
    if (ip) {
        ASN1_OCTET_STRING_free(ip);
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1) goto fail;
    } else if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1) {
        goto fail;
    }
    if (SSL_set_fd(ssl, fd) != 1) goto fail;
    if (SSL_connect(ssl) != 1) {
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK) snprintf(error, size, "the server's certificate: %s", X509_verify_cert_error_string(verify));
        goto fail;
    }
    SSL_CTX_free(ctx);  // the SSL holds its own reference
    return ssl;
fail:
    if (!error[0]) nalcast_tls_error(error, size);
    if (!error[0]) snprintf(error, size, "the TLS handshake failed");
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return NULL;
}

// SSL_write, SSL_read of a blocking client: the bytes, 0 at the end (read), -1 on failure.
static inline int nalcast_tls_client_write(SSL *ssl, const void *bytes, int count) {
    int n = SSL_write(ssl, bytes, count);
    if (n <= 0) { ERR_clear_error(); return -1; }
    return n;
}
static inline int nalcast_tls_client_read(SSL *ssl, void *bytes, int count) {
    int n = SSL_read(ssl, bytes, count);
    if (n > 0) return n;
    int reason = SSL_get_error(ssl, n);
    ERR_clear_error();
    return reason == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}
static inline void nalcast_tls_client_free(SSL *ssl) {
    SSL_shutdown(ssl);
    ERR_clear_error();
    SSL_free(ssl);
}
#endif
