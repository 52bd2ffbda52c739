#ifndef CWEBRTC_H
#define CWEBRTC_H
// What WebRTC's sender needs of C libraries, for Swift: DTLS (OpenSSL, linked as for the
// built-in TLS) over datagrams the caller carries, the SRTP keys it exports, SRTP and SRTCP
// (libsrtp2, opened with dlopen when the first WebRTC viewer comes, never linked), and
// HMAC-SHA1 for STUN's MESSAGE-INTEGRITY. No cryptography here: OpenSSL and libsrtp2 do it.
// Every object is used on one thread at a time (the event loop's).
#include <stddef.h>
#include <stdint.h>

// ---- DTLS (webrtc.c) ----

// A DTLS server context: a fresh ECDSA P-256 certificate (self-signed, SHA-256) whose
// fingerprint goes in the SDP, DTLS 1.2, use_srtp with the SRTP profiles libsrtp2 can do
// (nc_srtp_profiles; each association sets them once libsrtp2 is loaded).
typedef struct nc_dtls_context nc_dtls_context;
// NULL on failure, with OpenSSL's reason in `error`.
nc_dtls_context *nc_dtls_context_new(char *error, int size);
void nc_dtls_context_free(nc_dtls_context *context);
// The certificate's SHA-256 fingerprint (32 bytes).
void nc_dtls_context_fingerprint(const nc_dtls_context *context, uint8_t *out);

enum {
    NC_DTLS_HANDSHAKING = 0,  // more datagrams are needed
    NC_DTLS_CONNECTED = 1,    // the handshake is done (reported once; then NC_DTLS_OPEN)
    NC_DTLS_OPEN = 2,         // connected, nothing new
    NC_DTLS_CLOSED = 3,       // the peer sent close_notify
    NC_DTLS_FAILED = -1,      // the handshake or a record failed: nc_dtls_error says why
};

// One association: `client` 0, the server (a=setup:passive here: a browser or a WHIP server
// connects); 1, the client (a=setup:active here: the other side's offer or answer said
// passive), which speaks first with nc_dtls_start.
typedef struct nc_dtls nc_dtls;
nc_dtls *nc_dtls_new(nc_dtls_context *context, int client);
// The client's first flight (a datagram to take with nc_dtls_next_datagram); NC_DTLS_*.
int nc_dtls_start(nc_dtls *dtls);
void nc_dtls_free(nc_dtls *dtls);
// Takes one datagram the peer sent (records of DTLS); returns NC_DTLS_*.
int nc_dtls_receive(nc_dtls *dtls, const uint8_t *bytes, size_t count);
// The retransmission timer: call when nc_dtls_timeout_ms says; returns NC_DTLS_*.
int nc_dtls_handle_timeout(nc_dtls *dtls);
// Milliseconds until the retransmission timer is due; -1 when none runs.
int nc_dtls_timeout_ms(nc_dtls *dtls);
// The next datagram to send (what OpenSSL wrote as one datagram), copied into `buffer`:
// its length, 0 when none is waiting, -1 when it does not fit (dropped).
int nc_dtls_next_datagram(nc_dtls *dtls, uint8_t *buffer, size_t capacity);
// The peer's certificate's SHA-256 fingerprint. 1 on success.
int nc_dtls_peer_fingerprint(nc_dtls *dtls, uint8_t *out);
// The SRTP keying material (RFC 5764 4.2) into `out` (60 bytes): client key (16), server
// key (16), client salt, server salt (14 each for NC_SRTP_AES128_CM_SHA1_80, 12 each for
// NC_SRTP_AEAD_AES_128_GCM: 56 bytes). The profile the handshake chose; 0 for none of those.
int nc_dtls_srtp_keys(nc_dtls *dtls, uint8_t *out);
// Sends close_notify (a datagram to take with nc_dtls_next_datagram).
void nc_dtls_shutdown(nc_dtls *dtls);
// Why the last call failed (OpenSSL's reason), "" when it did not.
const char *nc_dtls_error(const nc_dtls *dtls);

// ---- SRTP (srtp.c) ----

// 1 when libsrtp2 (libsrtp2.so.1) opens and initializes; else 0 with why in `why`.
int nc_srtp_load(char *why, int size);
// libsrtp2's version text ("libsrtp2 2.5.0"), "" when not loaded.
const char *nc_srtp_version(void);
typedef struct nc_srtp nc_srtp;
// The SRTP protection profiles (their DTLS-SRTP numbers, RFC 5764 and RFC 7714).
#define NC_SRTP_AES128_CM_SHA1_80 0x0001
#define NC_SRTP_AEAD_AES_128_GCM 0x0007
// The profiles to offer in use_srtp, in order of preference (OpenSSL's list form):
// AEAD_AES_128_GCM first when libsrtp2 can do it (one pass of AES-GCM: with Debian's
// libsrtp2 on NSS about a fifth of AES-CM with HMAC-SHA1's cost a packet), then
// AES128_CM_SHA1_80, which every browser offers. After nc_srtp_load.
const char *nc_srtp_profiles(void);
// A session of `profile` for RTP and RTCP, keyed with `key` (16 bytes) and `salt` (14 for
// AES_CM, 12 for GCM): for every outbound SSRC (`outbound` 1) or every inbound one (0).
// NULL on failure.
nc_srtp *nc_srtp_new(int profile, const uint8_t *key, const uint8_t *salt, int outbound);
void nc_srtp_free(nc_srtp *srtp);
// Protects the RTP (or RTCP) packet of `length` bytes in `buffer` in place; `capacity` must
// leave room for the trailer (NC_SRTP_TRAILER bytes). The new length, or -1.
int nc_srtp_protect(nc_srtp *srtp, uint8_t *buffer, int length, int capacity);
int nc_srtp_protect_rtcp(nc_srtp *srtp, uint8_t *buffer, int length, int capacity);
// Checks and decrypts an SRTCP packet in place: the new length, or -1 (forged, replayed).
int nc_srtp_unprotect_rtcp(nc_srtp *srtp, uint8_t *buffer, int length);
// Checks and decrypts an SRTP packet in place (a WHIP publisher's): the new length, or -1.
int nc_srtp_unprotect(nc_srtp *srtp, uint8_t *buffer, int length);
#define NC_SRTP_TRAILER 148  // SRTP_MAX_TRAILER_LEN + 4 (SRTCP's index)

// ---- STUN's MESSAGE-INTEGRITY ----

// HMAC-SHA1 of `data` with `key` into `out` (20 bytes).
void nc_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *data, size_t length, uint8_t *out);
// Random bytes (ICE credentials, SSRCs). 1 on success.
int nc_random(uint8_t *out, size_t count);
#endif
