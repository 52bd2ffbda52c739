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

#endif
