#ifndef CMEDIA_SRTPUSH_H
#define CMEDIA_SRTPUSH_H
// The SRT connection under an `srt://` push: libavformat's libsrt protocol keeps its socket
// to itself (no AVOption, no public call hands it out), and libsrt's statistics and send
// buffer are what tell a push what SRT did with its packets. Reached without linking libsrt
// (nor needing its headers): the protocol's context is found through the AVOptions tree
// (`av_opt_child_next`: the AVIOContext's child is its URLContext, whose child is the
// protocol's private context), checked by its class name ("libsrt"), and libsrt's
// functions are looked up in the scope of the libavformat nalcast opened (dlsym searches
// a handle's dependencies: Debian's libavformat links libsrt).
//
// The one thing taken on trust is the start of libavformat's private SRTContext: its AVClass
// pointer, then the SRT socket (libavformat/libsrt.c, unchanged since the protocol came in
// FFmpeg 4.0). The socket is checked with srt_getsockstate before anything else is asked:
// a wrong one would be SRTS_NONEXIST.
#include <stddef.h>
#include <netdb.h>
#include <sys/socket.h>
#include "containers.h"

// From SRT's srt.h (1.4, 1.5): the values nalcast asks about, and the head of
// SRT_TRACEBSTATS (CBytePerfMon), which srt_bstats fills whole (496 bytes in 1.5).
enum { CMEDIA_SRTS_CONNECTED = 5, CMEDIA_SRTO_PEERLATENCY = 44 };
typedef struct CMedia_srt_perf {
    int64_t msTimeStamp;
    int64_t pktSentTotal;
    int64_t pktRecvTotal;
    int pktSndLossTotal;
    int pktRcvLossTotal;
    int pktRetransTotal;
    int pktSentACKTotal;
    int pktRecvACKTotal;
    int pktSentNAKTotal;
    int pktRecvNAKTotal;
    int64_t usSndDurationTotal;
    int pktSndDropTotal;
    int pktRcvDropTotal;
} CMedia_srt_perf;
_Static_assert(offsetof(CMedia_srt_perf, pktSndDropTotal) == 64, "SRT_TRACEBSTATS layout");

// What a push reports of its SRT connection.
typedef struct CMedia_srt_totals {
    int64_t sent;        // data packets sent, retransmissions included
    int retransmitted;
    int lost;            // reported lost by the receiver (NAKs), then retransmitted or dropped
    int dropped;         // too late to send: dropped by the sender (SRTO_TLPKTDROP)
    int peer_latency_ms; // the latency agreed with the receiver
} CMedia_srt_totals;

// One libsrt function, looked up once in libavformat's scope (NULL when it is not there).
#define CMEDIA_SRT_FN(type, name) \
    static void *fn_ = NULL; \
    static int tried_ = 0; \
    if (!__atomic_load_n(&tried_, __ATOMIC_ACQUIRE)) { \
        void *h_ = CMedia_library(CMEDIA_AVFORMAT); \
        __atomic_store_n(&fn_, h_ ? dlsym(h_, name) : NULL, __ATOMIC_RELAXED); \
        __atomic_store_n(&tried_, 1, __ATOMIC_RELEASE); \
    } \
    __typeof__(type) f_ = (__typeof__(type))__atomic_load_n(&fn_, __ATOMIC_RELAXED)

static inline int CMedia_srt_state(int sock) {
    CMEDIA_SRT_FN(int (*)(int), "srt_getsockstate");
    return f_ ? f_(sock) : -1;
}

// The SRT socket of a push's AVIOContext, or -1 (not libsrt, or not connected).
static inline int CMedia_srt_socket(AVIOContext *pb) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_opt_child_next);
    if (!f_ || !pb || !pb->av_class) return -1;
    void *url = f_(pb, NULL);
    if (!url || !*(const AVClass **)url || strcmp((*(const AVClass **)url)->class_name, "URLContext") != 0) return -1;
    void *priv = f_(url, NULL);
    if (!priv || !*(const AVClass **)priv || strcmp((*(const AVClass **)priv)->class_name, "libsrt") != 0) return -1;
    struct { const AVClass *cls; int fd; } *head = priv;
    return CMedia_srt_state(head->fd) == CMEDIA_SRTS_CONNECTED ? head->fd : -1;
}

// 1 while the socket is connected.
static inline int CMedia_srt_connected(int sock) { return CMedia_srt_state(sock) == CMEDIA_SRTS_CONNECTED; }

// Packets in the send buffer (sent and not acknowledged yet, or not sent yet); -1 on error.
static inline int CMedia_srt_unacknowledged(int sock) {
    CMEDIA_SRT_FN(int (*)(int, size_t *, size_t *), "srt_getsndbuffer");
    size_t blocks = 0, bytes = 0;
    if (!f_ || f_(sock, &blocks, &bytes) < 0) return -1;
    return (int)blocks;
}

// The receiver's latency agreed at the handshake, ms; -1 when libsrt cannot say.
static inline int CMedia_srt_peer_latency(int sock) {
    CMEDIA_SRT_FN(int (*)(int, int, void *, int *), "srt_getsockflag");
    int latency = -1, size = sizeof latency;
    if (!f_ || f_(sock, CMEDIA_SRTO_PEERLATENCY, &latency, &size) < 0) return -1;
    return latency;
}

// The connection's totals; 0, or -1 when libsrt cannot say.
static inline int CMedia_srt_totals_of(int sock, CMedia_srt_totals *out) {
    CMEDIA_SRT_FN(int (*)(int, void *, int), "srt_bstats");
    union { CMedia_srt_perf perf; char whole[2048]; } stats;
    memset(&stats, 0, sizeof stats);
    if (!f_ || f_(sock, &stats, 0) < 0) return -1;
    out->sent = stats.perf.pktSentTotal;
    out->retransmitted = stats.perf.pktRetransTotal;
    out->lost = stats.perf.pktSndLossTotal;
    out->dropped = stats.perf.pktSndDropTotal;
    out->peer_latency_ms = CMedia_srt_peer_latency(sock);
    return 0;
}

// A passphrase refused. libavformat reports any failed SRT connection as an I/O error, and
// closes its socket (and with it libsrt's reject reason) before returning. After a failed
// open with a passphrase, nalcast asks once more with a socket of its own, the same
// passphrase, key length and stream id, and reads the listener's reason from it: BADSECRET
// (a wrong passphrase) or UNSECURE (a passphrase on one side only).
enum { CMEDIA_SRTO_PASSPHRASE = 26, CMEDIA_SRTO_PBKEYLEN = 27, CMEDIA_SRTO_CONNTIMEO = 36, CMEDIA_SRTO_STREAMID = 46,
       CMEDIA_SRT_REJ_BADSECRET = 10, CMEDIA_SRT_REJ_UNSECURE = 11 };

static inline int CMedia_srt_startup(void) {
    CMEDIA_SRT_FN(int (*)(void), "srt_startup");
    return f_ ? f_() : -1;
}
static inline int CMedia_srt_create(void) {
    CMEDIA_SRT_FN(int (*)(void), "srt_create_socket");
    return f_ ? f_() : -1;
}
static inline int CMedia_srt_setflag(int sock, int option, const void *value, int length) {
    CMEDIA_SRT_FN(int (*)(int, int, const void *, int), "srt_setsockflag");
    return f_ ? f_(sock, option, value, length) : -1;
}
static inline int CMedia_srt_connect(int sock, const struct sockaddr *address, int length) {
    CMEDIA_SRT_FN(int (*)(int, const struct sockaddr *, int), "srt_connect");
    return f_ ? f_(sock, address, length) : -1;
}
static inline int CMedia_srt_reject_reason(int sock) {
    CMEDIA_SRT_FN(int (*)(int), "srt_getrejectreason");
    return f_ ? f_(sock) : -1;
}
static inline void CMedia_srt_close_socket(int sock) {
    CMEDIA_SRT_FN(int (*)(int), "srt_close");
    if (f_) f_(sock);
}

// libsrt writes its own warning about a refused passphrase to stderr, which nalcast says in
// a line of its own: with a passphrase configured, libsrt logs through this handler, which
// leaves those out and writes every other line as libsrt would have.
static inline void CMedia_srt_log(void *opaque, int level, const char *file, int line, const char *area, const char *message) {
    (void)opaque; (void)level; (void)file; (void)line; (void)area;
    if (!message || strstr(message, "Incorrect passphrase") || strstr(message, "Password required or unexpected")) return;
    size_t length = strlen(message);
    fprintf(stderr, "%s%s", message, length > 0 && message[length - 1] == '\n' ? "" : "\n");
}

static inline void CMedia_srt_quiet_refusals(void) {
    CMEDIA_SRT_FN(void (*)(void *, void (*)(void *, int, const char *, int, const char *, const char *)), "srt_setloghandler");
    if (f_) f_(NULL, CMedia_srt_log);
}

// 1 when the listener at host:port refuses this passphrase (BADSECRET or UNSECURE), 0 when
// it does not (it accepted, or refused for another reason), -1 when it cannot be asked.
static inline int CMedia_srt_refuses_passphrase(const char *host, const char *port, const char *passphrase, int pbkeylen,
                                                 const char *streamid, int timeout_ms) {
    struct addrinfo hints = {0}, *list = NULL;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, port, &hints, &list) != 0 || !list) return -1;
    int result = -1;
    CMedia_srt_startup();
    int sock = CMedia_srt_create();
    if (sock >= 0) {
        int ok = CMedia_srt_setflag(sock, CMEDIA_SRTO_PASSPHRASE, passphrase, (int)strlen(passphrase)) == 0
            && (pbkeylen == 0 || CMedia_srt_setflag(sock, CMEDIA_SRTO_PBKEYLEN, &pbkeylen, sizeof pbkeylen) == 0)
            && (!streamid || CMedia_srt_setflag(sock, CMEDIA_SRTO_STREAMID, streamid, (int)strlen(streamid)) == 0)
            && CMedia_srt_setflag(sock, CMEDIA_SRTO_CONNTIMEO, &timeout_ms, sizeof timeout_ms) == 0;
        if (ok) {
            if (CMedia_srt_connect(sock, list->ai_addr, (int)list->ai_addrlen) == 0) {
                result = 0;
            } else {
                int reason = CMedia_srt_reject_reason(sock);
                result = reason == CMEDIA_SRT_REJ_BADSECRET || reason == CMEDIA_SRT_REJ_UNSECURE;
            }
        }
        CMedia_srt_close_socket(sock);
    }
    freeaddrinfo(list);
    return result;
}

#endif
