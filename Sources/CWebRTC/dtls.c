// DTLS for WebRTC over OpenSSL (include/CWebRTC.h). OpenSSL reads records from a memory BIO
// the caller fills one datagram at a time, and writes through a BIO of our own that keeps
// each write as one datagram: a memory BIO would run a flight's records together, and
// OpenSSL 3.0 has no datagram memory BIO (3.2's BIO_s_dgram_mem).
#include "CWebRTC.h"
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#define NC_MTU 1200
#define NC_QUEUE 64

struct nc_dtls_context {
    SSL_CTX *ctx;
    uint8_t fingerprint[32];
};

struct nc_dtls {
    SSL *ssl;
    BIO *in;
    // Datagrams OpenSSL wrote and the caller has not taken, oldest first.
    uint8_t *datagrams[NC_QUEUE];
    int lengths[NC_QUEUE];
    int head, count;
    int connected;
    char error[160];
};

static void nc_note_error(char *buffer, int size) {
    unsigned long code = ERR_get_error();
    if (size > 0) buffer[0] = 0;
    if (code && size > 0) ERR_error_string_n(code, buffer, (size_t)size);
    ERR_clear_error();
}

// The browser's certificate is self-signed: it is checked against the SDP's fingerprint once
// the handshake is done (nc_dtls_peer_fingerprint), not against a CA.
static int nc_accept_any(int ok, X509_STORE_CTX *store) { (void)ok; (void)store; return 1; }

static X509 *nc_certificate(EVP_PKEY *key) {
    X509 *cert = X509_new();
    if (!cert) return NULL;
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    if (RAND_bytes(serial, sizeof serial) != 1) goto fail;
    serial[0] &= 0x7F;
    bn = BN_bin2bn(serial, sizeof serial, NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert))) goto fail;
    BN_free(bn);
    bn = NULL;
    if (!X509_set_version(cert, 2)) goto fail;
    if (!X509_gmtime_adj(X509_getm_notBefore(cert), -3600) || !X509_gmtime_adj(X509_getm_notAfter(cert), 30L * 24 * 3600)) goto fail;
    if (!X509_set_pubkey(cert, key)) goto fail;
    X509_NAME *name = X509_get_subject_name(cert);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"nalcast", -1, -1, 0)) goto fail;
    if (!X509_set_issuer_name(cert, name)) goto fail;
    if (!X509_sign(cert, key, EVP_sha256())) goto fail;
    return cert;
fail:
    BN_free(bn);
    X509_free(cert);
    return NULL;
}

nc_dtls_context *nc_dtls_context_new(char *error, int size) {
    nc_dtls_context *context = calloc(1, sizeof *context);
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? nc_certificate(key) : NULL;
    // DTLS_method: either role (the server for WHEP viewers; the client or server a WHIP
    // server's answer picks).
    SSL_CTX *ctx = SSL_CTX_new(DTLS_method());
    unsigned int length = 0;
    if (!context || !cert || !ctx) goto fail;
    if (!SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION)) goto fail;
    if (SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) goto fail;
    // use_srtp: 0 on success, against OpenSSL's habit.
    if (SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AES128_CM_SHA1_80") != 0) goto fail;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nc_accept_any);
    SSL_CTX_set_options(ctx, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_read_ahead(ctx, 1);
    if (!X509_digest(cert, EVP_sha256(), context->fingerprint, &length) || length != 32) goto fail;
    context->ctx = ctx;
    X509_free(cert);
    EVP_PKEY_free(key);
    return context;
fail:
    nc_note_error(error, size);
    if (size > 0 && !error[0]) snprintf(error, (size_t)size, "could not make the DTLS certificate");
    SSL_CTX_free(ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    free(context);
    return NULL;
}

void nc_dtls_context_free(nc_dtls_context *context) {
    if (!context) return;
    SSL_CTX_free(context->ctx);
    free(context);
}

void nc_dtls_context_fingerprint(const nc_dtls_context *context, uint8_t *out) {
    memcpy(out, context->fingerprint, 32);
}

// ---- the BIO that keeps each write as a datagram ----

static int nc_bio_write(BIO *bio, const char *data, int length) {
    nc_dtls *dtls = BIO_get_data(bio);
    if (!dtls || length <= 0) return length;
    if (dtls->count == NC_QUEUE) return length;  // the caller is not taking them: dropped, as a lost datagram
    uint8_t *copy = malloc((size_t)length);
    if (!copy) return -1;
    memcpy(copy, data, (size_t)length);
    int slot = (dtls->head + dtls->count) % NC_QUEUE;
    dtls->datagrams[slot] = copy;
    dtls->lengths[slot] = length;
    dtls->count++;
    return length;
}

static long nc_bio_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)bio; (void)number; (void)pointer;
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_DGRAM_QUERY_MTU: return NC_MTU;
    case BIO_CTRL_DGRAM_GET_FALLBACK_MTU: return NC_MTU;
    case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD: return 0;
    case BIO_CTRL_WPENDING: return 0;
    case BIO_CTRL_PENDING: return 0;
    default: return 0;
    }
}

static int nc_bio_create(BIO *bio) { BIO_set_init(bio, 1); return 1; }

static BIO_METHOD *nc_bio_method(void) {
    static BIO_METHOD *method;
    if (!method) {
        BIO_METHOD *made = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nalcast datagrams");
        if (!made) return NULL;
        BIO_meth_set_write(made, nc_bio_write);
        BIO_meth_set_ctrl(made, nc_bio_ctrl);
        BIO_meth_set_create(made, nc_bio_create);
        method = made;
    }
    return method;
}

nc_dtls *nc_dtls_new(nc_dtls_context *context, int client) {
    BIO_METHOD *method = nc_bio_method();
    if (!method) return NULL;
    nc_dtls *dtls = calloc(1, sizeof *dtls);
    if (!dtls) return NULL;
    dtls->ssl = SSL_new(context->ctx);
    dtls->in = BIO_new(BIO_s_mem());
    BIO *out = BIO_new(method);
    if (!dtls->ssl || !dtls->in || !out) {
        BIO_free(out);
        BIO_free(dtls->in);
        SSL_free(dtls->ssl);
        free(dtls);
        return NULL;
    }
    BIO_set_mem_eof_return(dtls->in, -1);
    BIO_set_data(out, dtls);
    SSL_set_bio(dtls->ssl, dtls->in, out);  // the SSL owns both now
    // The profiles libsrtp2 can do (loaded by now), the context's AES_CM-only list otherwise.
    // use_srtp: 0 on success, against OpenSSL's habit.
    if (SSL_set_tlsext_use_srtp(dtls->ssl, nc_srtp_profiles()) != 0) {
        SSL_free(dtls->ssl);
        free(dtls);
        return NULL;
    }
    if (client) SSL_set_connect_state(dtls->ssl);
    else SSL_set_accept_state(dtls->ssl);
    SSL_set_mtu(dtls->ssl, NC_MTU);
    DTLS_set_link_mtu(dtls->ssl, NC_MTU);
    return dtls;
}

void nc_dtls_free(nc_dtls *dtls) {
    if (!dtls) return;
    BIO_set_data(SSL_get_wbio(dtls->ssl), NULL);
    SSL_free(dtls->ssl);
    while (dtls->count > 0) {
        free(dtls->datagrams[dtls->head]);
        dtls->head = (dtls->head + 1) % NC_QUEUE;
        dtls->count--;
    }
    free(dtls);
}

// After input or a timeout: the handshake goes on, or records are read (and dropped: the
// data channel is not offered).
static int nc_dtls_step(nc_dtls *dtls) {
    if (!dtls->connected) {
        int result = SSL_do_handshake(dtls->ssl);
        if (result == 1) {
            dtls->connected = 1;
            return NC_DTLS_CONNECTED;
        }
        int reason = SSL_get_error(dtls->ssl, result);
        if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE) return NC_DTLS_HANDSHAKING;
        nc_note_error(dtls->error, sizeof dtls->error);
        if (!dtls->error[0]) snprintf(dtls->error, sizeof dtls->error, "the DTLS handshake failed (%d)", reason);
        return NC_DTLS_FAILED;
    }
    uint8_t sink[2048];
    for (;;) {
        int result = SSL_read(dtls->ssl, sink, sizeof sink);
        if (result > 0) continue;
        int reason = SSL_get_error(dtls->ssl, result);
        if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE) return NC_DTLS_OPEN;
        if (reason == SSL_ERROR_ZERO_RETURN) return NC_DTLS_CLOSED;
        nc_note_error(dtls->error, sizeof dtls->error);
        return NC_DTLS_FAILED;
    }
}

int nc_dtls_receive(nc_dtls *dtls, const uint8_t *bytes, size_t count) {
    dtls->error[0] = 0;
    if (BIO_write(dtls->in, bytes, (int)count) != (int)count) return NC_DTLS_FAILED;
    return nc_dtls_step(dtls);
}

int nc_dtls_start(nc_dtls *dtls) {
    dtls->error[0] = 0;
    return nc_dtls_step(dtls);
}

int nc_dtls_handle_timeout(nc_dtls *dtls) {
    if (dtls->connected) return NC_DTLS_OPEN;
    if (DTLSv1_handle_timeout(dtls->ssl) < 0) {
        nc_note_error(dtls->error, sizeof dtls->error);
        return NC_DTLS_FAILED;
    }
    return NC_DTLS_HANDSHAKING;
}

int nc_dtls_timeout_ms(nc_dtls *dtls) {
    struct timeval left;
    if (!DTLSv1_get_timeout(dtls->ssl, &left)) return -1;
    return (int)(left.tv_sec * 1000 + left.tv_usec / 1000);
}

int nc_dtls_next_datagram(nc_dtls *dtls, uint8_t *buffer, size_t capacity) {
    if (dtls->count == 0) return 0;
    uint8_t *datagram = dtls->datagrams[dtls->head];
    int length = dtls->lengths[dtls->head];
    dtls->head = (dtls->head + 1) % NC_QUEUE;
    dtls->count--;
    if ((size_t)length > capacity) length = -1;
    else memcpy(buffer, datagram, (size_t)length);
    free(datagram);
    return length;
}

int nc_dtls_peer_fingerprint(nc_dtls *dtls, uint8_t *out) {
    X509 *peer = SSL_get1_peer_certificate(dtls->ssl);
    unsigned int length = 0;
    int ok = peer && X509_digest(peer, EVP_sha256(), out, &length) && length == 32;
    X509_free(peer);
    return ok;
}

int nc_dtls_srtp_keys(nc_dtls *dtls, uint8_t *out) {
    SRTP_PROTECTION_PROFILE *profile = SSL_get_selected_srtp_profile(dtls->ssl);
    if (!profile) return 0;
    size_t length;
    if (profile->id == NC_SRTP_AES128_CM_SHA1_80) length = 2 * (16 + 14);
    else if (profile->id == NC_SRTP_AEAD_AES_128_GCM) length = 2 * (16 + 12);
    else return 0;
    static const char label[] = "EXTRACTOR-dtls_srtp";
    if (SSL_export_keying_material(dtls->ssl, out, length, label, sizeof label - 1, NULL, 0, 0) != 1) return 0;
    return (int)profile->id;
}

void nc_dtls_shutdown(nc_dtls *dtls) {
    if (dtls->connected) SSL_shutdown(dtls->ssl);
    ERR_clear_error();
}

const char *nc_dtls_error(const nc_dtls *dtls) { return dtls->error; }

void nc_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *data, size_t length, uint8_t *out) {
    unsigned int size = 20;
    HMAC(EVP_sha1(), key, (int)key_length, data, length, out, &size);
}

int nc_random(uint8_t *out, size_t count) { return RAND_bytes(out, (int)count) == 1; }
