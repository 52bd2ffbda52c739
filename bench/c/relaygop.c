// relaygop: the floor of a relay that must cut any Annex-B stream by the standard's rule and
// serve a cached GOP: what nalcast's relay does per access unit, in bare C.
//
//   relaygop SRC_PORT PORT
//   relaygop --file PATH
//
// Connects to 127.0.0.1:SRC_PORT (relaysrc) and reads the stream as it comes (read() into one
// growing buffer). Cuts it into NAL units at their start codes (memchr for the 01, a look at
// the zeros before it) and groups them into access units by H.264's rule (7.4.1.2.3 and
// 7.4.1.2.4), which needs no access unit delimiter: once the access unit in hand has a slice,
// an AUD, SPS, PPS, SEI or a NAL unit of type 14 to 18 begins the next one, and so does a
// slice of a new primary picture, told by its header (frame_num, pic_parameter_set_id, field
// and bottom field flags, nal_ref_idc zero or not, picture order count, IdrPicFlag,
// idr_pic_id) read with the SPS and PPS it names (kept by id) from its first 64 bytes, as
// soon as they are in. End of sequence and end of stream end the access unit they are in.
// An access unit goes out when the next one begins; one of only AUDs, ends of sequence or
// stream and filler data is not passed on. nalcast's timestamp SEI (user_data_unregistered
// with its UUID, Sources/Media/StreamTimestamp.swift) is read where it lies, its pts kept.
//
// Each access unit is copied into an allocation of its own with its record (size, IDR, pts)
// and kept in the GOP cache; at each IDR the previous GOP's access units are freed.
//
// Readers connect to 127.0.0.1:PORT (0: any free port). One is given the cached GOP at once
// (from its IDR), then the live access units; one that connects before the first IDR waits
// for it. Each access unit goes to each reader with one sendmsg (MSG_DONTWAIT); what the
// socket does not take goes to the reader's backlog, written first the next time and whenever
// the socket can take more (so a joining reader's GOP drains); a reader whose backlog would
// pass 16 MiB is closed. On libev: ev_io watchers for the source, the listening socket and
// each reader with a backlog, ev_signal for SIGTERM and SIGINT.
//
// --file PATH: the same cutting of a file, one line per access unit on stdout ("SIZE IDR PTS",
// PTS "-" without a timestamp), to hold the cut against another's (ffprobe's packets).
//
// stderr: "serving tcp://127.0.0.1:PORT" once listening (as nalcast prints it), one line per
// reader dropped; on SIGTERM/SIGINT "relayed N access units (M with a timestamp)" and exit 0.
// Exit 64 for bad arguments, 66 for an unreadable file, 69 when the source cannot be reached
// or ends.
//
// RELAY_SOCKOPTS=LIST: each reader's socket given nalcast's options for its readers
// (relaynet.h).
//
// Built with -DRELAY_PROBE (bench/relay-layers): the time per access unit in its read, its
// parse (cutting, deciding, reading SPS, PPS and timestamps, less what follows), the copy of
// each access unit into its allocation, its fan-out and the fan-out's sendmsg calls, every
// 300 access units on stderr, as nalcast's bench/relay-layers.patch writes its layers.
//
// Build: gcc -O2 -Wall -o relaygop bench/c/relaygop.c -lev
#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "relaynet.h"

#define MAX_CLIENTS 64
#define MAX_BACKLOG (16 << 20)
#define MAX_BUF (64 << 20)  // an access unit in hand past this is dropped, the stream cut again
#define HEAD 64             // escaped bytes of a slice its header is read from

#ifdef RELAY_PROBE
enum { PROBE_READ, PROBE_ADVANCE, PROBE_COPY, PROBE_PUMP, PROBE_SENDMSG, PROBE_LAYERS };
static uint64_t probe_sums[PROBE_LAYERS];  // ns
static int probe_units;
// One access unit out: every 300, the layers' ns per access unit (the parse: advance less
// the copy and the fan-out inside it).
static void probe_unit(void) {
    if (++probe_units < 300) return;
    uint64_t n = (uint64_t)probe_units, *s = probe_sums;
    fprintf(stderr, "layers ns/unit: read=%llu parse=%llu copy=%llu pump=%llu sendmsg=%llu\n",
            (unsigned long long)(s[PROBE_READ] / n),
            (unsigned long long)((s[PROBE_ADVANCE] - s[PROBE_COPY] - s[PROBE_PUMP]) / n),
            (unsigned long long)(s[PROBE_COPY] / n), (unsigned long long)(s[PROBE_PUMP] / n),
            (unsigned long long)(s[PROBE_SENDMSG] / n));
    memset(probe_sums, 0, sizeof probe_sums);
    probe_units = 0;
}
#else
static void probe_unit(void) {}
#endif

static const uint8_t UUID[16] = {0x0d, 0x64, 0xdd, 0x68, 0x59, 0x73, 0x44, 0xac,
                                 0x92, 0x82, 0x6e, 0x38, 0x0b, 0x34, 0xdc, 0xd1};
// Profiles whose SPS carries chroma_format_idc, bit depths and scaling lists.
static const uint8_t HIGH_PROFILES[] = {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135};

// Bits of an RBSP, most significant first; reading past its end sets `bad`.
struct bits { const uint8_t *p; size_t n, pos; int bad; };

static uint32_t u(struct bits *b, int k) {
    uint32_t v = 0;
    for (; k > 0; k--, b->pos++) {
        if (b->pos >= b->n * 8) return b->bad = 1, 0;
        v = v << 1 | (b->p[b->pos >> 3] >> (7 - (b->pos & 7)) & 1);
    }
    return v;
}

static uint32_t ue(struct bits *b) {
    int zeros = 0;
    while (!u(b, 1))
        if (b->bad || ++zeros > 31) return b->bad = 1, 0;
    return (uint32_t)((1ull << zeros) - 1 + u(b, zeros));
}

static int32_t se(struct bits *b) {
    uint32_t k = ue(b);
    return k & 1 ? (int32_t)((k + 1) / 2) : -(int32_t)(k / 2);
}

// The RBSP of the escaped bytes p[0..n) (00 00 03 gives 00 00), at most cap bytes of it.
static size_t unescape(uint8_t *out, size_t cap, const uint8_t *p, size_t n) {
    size_t o = 0;
    int zeros = 0;
    for (size_t i = 0; i < n && o < cap; i++) {
        if (zeros >= 2 && p[i] == 3) {
            zeros = 0;
            continue;
        }
        out[o++] = p[i];
        zeros = p[i] == 0 ? zeros + 1 : 0;
    }
    return o;
}

// The fields of the parameter sets that slice headers need, by id.
struct sps { int valid, separate_colour, log2_frame_num, poc_type, log2_poc_lsb, poc_always_zero, frame_mbs_only; };
struct pps { int valid, sps_id, bottom_poc_present; };
static struct sps spss[32];
static struct pps ppss[256];
static long parse_errors;

// An SPS's payload (escaped, after its NAL header).
static void read_sps(const uint8_t *p, size_t n) {
    uint8_t r[1024];
    struct bits b = {r, unescape(r, sizeof r, p, n), 0, 0};
    struct sps s = {.valid = 1};
    uint8_t profile = (uint8_t)u(&b, 8);
    u(&b, 16);  // constraint_set flags, level_idc
    uint32_t id = ue(&b);
    if (memchr(HIGH_PROFILES, profile, sizeof HIGH_PROFILES)) {
        uint32_t chroma = ue(&b);
        if (chroma == 3) s.separate_colour = (int)u(&b, 1);
        ue(&b), ue(&b), u(&b, 1);  // bit depths, qpprime_y_zero_transform_bypass_flag
        if (u(&b, 1))              // seq_scaling_matrix_present_flag: each list read to skip it
            for (int i = 0; i < (chroma != 3 ? 8 : 12) && !b.bad; i++) {
                if (!u(&b, 1)) continue;
                for (int j = 0, last = 8, next = 8; j < (i < 6 ? 16 : 64) && next != 0 && !b.bad; j++) {
                    int32_t delta = se(&b);
                    if (delta < -128 || delta > 127) b.bad = 1;
                    next = (last + delta + 256) % 256;
                    if (next != 0) last = next;
                }
            }
    }
    uint32_t frame_num = ue(&b), poc_type = ue(&b), poc_lsb = 0;
    if (poc_type == 0) poc_lsb = ue(&b);
    else if (poc_type == 1) {
        s.poc_always_zero = (int)u(&b, 1);
        se(&b), se(&b);  // offset_for_non_ref_pic, offset_for_top_to_bottom_field
        for (uint32_t i = 0, cycle = ue(&b); i < cycle && i < 256 && !b.bad; i++) se(&b);
    }
    ue(&b), u(&b, 1), ue(&b), ue(&b);  // max_num_ref_frames, gaps flag, width, height
    s.frame_mbs_only = (int)u(&b, 1);
    if (b.bad || id > 31 || frame_num > 12 || poc_type > 2 || poc_lsb > 12) { parse_errors++; return; }
    s.log2_frame_num = (int)frame_num + 4, s.poc_type = (int)poc_type, s.log2_poc_lsb = (int)poc_lsb + 4;
    spss[id] = s;
}

static void read_pps(const uint8_t *p, size_t n) {
    uint8_t r[64];
    struct bits b = {r, unescape(r, sizeof r, p, n), 0, 0};
    uint32_t id = ue(&b), sps_id = ue(&b);
    u(&b, 1);  // entropy_coding_mode_flag
    int bottom_poc_present = (int)u(&b, 1);
    if (b.bad || id > 255 || sps_id > 31) { parse_errors++; return; }
    ppss[id] = (struct pps){1, (int)sps_id, bottom_poc_present};
}

// What of a slice header tells one primary picture from the next (NONE: absent).
#define NONE INT64_MIN
struct slice { int64_t idr, ref_idc, frame_num, pps_id, field, bottom, idr_pic_id, poc_lsb, poc_bottom, poc0, poc1; };

// Reads a slice header from the first n escaped bytes after the NAL header: 2 when whole,
// 1 when only first_mb_in_slice could be (its parameter sets are not known yet), 0 unreadable.
static int read_slice(const uint8_t *p, size_t n, int type, int ref_idc, struct slice *s, uint32_t *first_mb) {
    uint8_t r[HEAD];
    struct bits b = {r, unescape(r, sizeof r, p, n), 0, 0};
    *first_mb = ue(&b);
    ue(&b);  // slice_type
    uint32_t pps_id = ue(&b);
    if (b.bad || pps_id > 255) return 0;
    const struct pps *pp = &ppss[pps_id];
    const struct sps *sp = &spss[pp->sps_id];
    if (!pp->valid || !sp->valid) return 1;
    *s = (struct slice){type == 5, ref_idc, 0, pps_id, 0, NONE, NONE, NONE, NONE, NONE, NONE};
    if (sp->separate_colour) u(&b, 2);  // colour_plane_id
    s->frame_num = u(&b, sp->log2_frame_num);
    if (!sp->frame_mbs_only && (s->field = u(&b, 1))) s->bottom = u(&b, 1);
    if (type == 5) s->idr_pic_id = ue(&b);
    if (sp->poc_type == 0) {
        s->poc_lsb = u(&b, sp->log2_poc_lsb);
        if (pp->bottom_poc_present && !s->field) s->poc_bottom = se(&b);
    }
    if (sp->poc_type == 1 && !sp->poc_always_zero) {
        s->poc0 = se(&b);
        if (pp->bottom_poc_present && !s->field) s->poc1 = se(&b);
    }
    return b.bad ? 0 : 2;
}

// Whether slice a is the first of a new primary picture after slice b (7.4.1.2.4).
static int new_picture(const struct slice *a, const struct slice *b) {
    return a->frame_num != b->frame_num || a->pps_id != b->pps_id || a->field != b->field || a->bottom != b->bottom ||
           (a->ref_idc != b->ref_idc && (a->ref_idc == 0 || b->ref_idc == 0)) || a->poc_lsb != b->poc_lsb ||
           a->poc_bottom != b->poc_bottom || a->poc0 != b->poc0 || a->poc1 != b->poc1 || a->idr != b->idr ||
           (a->idr && a->idr_pic_id != b->idr_pic_id);
}

// An SEI payload read one RBSP byte at a time where it lies, emulation prevention skipped.
struct esc { const uint8_t *p; size_t n, i; int zeros; };

static int next_byte(struct esc *e) {
    if (e->i >= e->n) return -1;
    int c = e->p[e->i++];
    if (e->zeros >= 2 && c == 3) {
        if (e->i >= e->n) return -1;
        c = e->p[e->i++];
    }
    e->zeros = c == 0 ? e->zeros + 1 : 0;
    return c;
}

// A payload type or size: a run of FF bytes, each adding 255, and the last byte. -1: none.
static long coded(struct esc *e) {
    long v = 0;
    for (int c; (c = next_byte(e)) >= 0;) {
        v += c;
        if (c != 0xff) return v;
        if (v > 1 << 24) return -1;
    }
    return -1;
}

static int skip(struct esc *e, long n) {
    while (n-- > 0)
        if (next_byte(e) < 0) return 0;
    return 1;
}

// No more messages: nothing left, or the stop bit's 80 with only zeros after it.
static int at_trailing_bits(struct esc e) {
    int c = next_byte(&e);
    if (c != 0x80) return c < 0;
    while ((c = next_byte(&e)) >= 0)
        if (c != 0) return 0;
    return 1;
}

// nalcast's timestamp among an SEI's messages (p[0..n): escaped, after the NAL header): the
// first user_data_unregistered message with its UUID, whole. 1 and its pts_90k, or 0.
static int read_timestamp(const uint8_t *p, size_t n, uint64_t *pts) {
    struct esc e = {p, n, 0, 0};
    while (!at_trailing_bits(e)) {
        long type = coded(&e), size = coded(&e);
        if (type < 0 || size < 0) return 0;
        struct esc payload = e;
        int ours = type == 5 && size >= 42;
        for (int i = 0; i < 16 && ours; i++) ours = next_byte(&e) == UUID[i];
        if (ours) {
            uint64_t v[3] = {0, 0, 0};  // sequence, capture_time_ns, pts_90k (after version, flags)
            if (!skip(&e, 2)) return 0;
            for (int k = 0, c; k < 24; k++) {
                if ((c = next_byte(&e)) < 0) return 0;
                v[k / 8] = v[k / 8] << 8 | (uint64_t)c;
            }
            if (!skip(&e, size - 42)) return 0;
            *pts = v[2];
            return 1;
        }
        e = payload;
        if (!skip(&e, size)) return 0;
    }
    return 0;
}

// An access unit as passed on and cached: its bytes in an allocation of their own.
struct unit { uint8_t *data; size_t n; int idr, stamped; uint64_t pts; };

struct client {
    ev_io w;  // writable, while it has a backlog
    int fd, started;
    uint8_t *backlog;
    size_t len, cap;
};

static struct ev_loop *loop;
static struct client clients[MAX_CLIENTS];
static struct unit *gop;  // the cached GOP, from its IDR
static size_t gop_len, gop_cap;
static int file_mode, lfd, src;
static long units, stamped_units;

// The stream: buf[0..len) from the start of the access unit in hand. The NAL unit open now
// has its start code at `nal` and its header byte at `hdr`; `next_at` (0: not found yet) is
// where the next start code begins, its header at `next_hdr`; the search goes on at `scan`.
// `decided`: whether the open NAL unit begins a new access unit has been settled.
static uint8_t *buf;
static size_t len, cap, nal, hdr, next_at, next_hdr, scan;
static int synced, decided;
// The access unit in hand.
static int saw_vcl, au_idr, au_content, au_stamped, close_next, have_last;
static uint64_t au_pts;
static struct slice last;  // the last slice header read whole

static void drop(struct client *c, const char *why) {
    fprintf(stderr, "relaygop: reader closed: %s\n", why);
    ev_io_stop(loop, &c->w);
    close(c->fd);
    free(c->backlog);
    *c = (struct client){.fd = -1};
}

// Writes what the backlog takes. 0 or -1.
static int flush(struct client *c) {
    ssize_t w = send(c->fd, c->backlog, c->len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (w > 0) memmove(c->backlog, c->backlog + w, c->len -= (size_t)w);
    return 0;
}

// Writes the backlog, then the access unit with one sendmsg; keeps the rest. 0, -1 (a send
// failed) or -2 (the backlog would pass 16 MiB).
static int push(struct client *c, const uint8_t *p, size_t n) {
    if (c->len > 0 && flush(c) < 0) return -1;
    size_t sent = 0;
    if (c->len == 0) {
        struct iovec iov = {(void *)p, n};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        PROBE_START(t_send);
        ssize_t w = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        PROBE_ADD(PROBE_SENDMSG, t_send);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (w > 0) sent = (size_t)w;
    }
    if (sent < n) {
        if (c->len + n - sent > MAX_BACKLOG) return -2;
        if (c->len + n - sent > c->cap) {
            uint8_t *grown = realloc(c->backlog, c->cap = (c->len + n - sent) * 2);
            if (!grown) return -2;
            c->backlog = grown;
        }
        memcpy(c->backlog + c->len, p + sent, n - sent);
        c->len += n - sent;
    }
    if (c->len > 0 && !ev_is_active(&c->w)) ev_io_start(loop, &c->w);
    return 0;
}

// A complete access unit: to every reader that has started (or starts at it), into the GOP.
static void pass(struct unit u) {
    if (u.idr) {
        for (size_t i = 0; i < gop_len; i++) free(gop[i].data);
        gop_len = 0;
    }
    for (int i = 0; i < MAX_CLIENTS; i++) {
        struct client *c = &clients[i];
        if (c->fd < 0 || (!c->started && !u.idr)) continue;
        c->started = 1;
        int r = push(c, u.data, u.n);
        if (r < 0) drop(c, r == -1 ? strerror(errno) : "backlog over 16 MiB");
    }
    if (!u.idr && gop_len == 0) {  // before the first IDR: no GOP to keep it in
        free(u.data);
        return;
    }
    if (gop_len == gop_cap) gop = realloc(gop, (gop_cap = gop_cap ? gop_cap * 2 : 64) * sizeof *gop);
    gop[gop_len++] = u;
}

static void shift(size_t n) {
    memmove(buf, buf + n, len -= n);
    nal -= n, hdr -= n, scan -= n;
    if (next_at) next_at -= n, next_hdr -= n;
}

// The access unit in hand is buf[0..n): out it goes, unless it has nothing to decode.
static void emit(size_t n) {
    if (au_content) {
        PROBE_START(t_copy);
        struct unit u = {malloc(n), n, au_idr, au_stamped, au_stamped ? au_pts : 0};
        memcpy(u.data, buf, n);
        PROBE_ADD(PROBE_COPY, t_copy);
        units++, stamped_units += au_stamped;
        if (!file_mode) {
            PROBE_START(t_pump);
            pass(u);
            PROBE_ADD(PROBE_PUMP, t_pump);
            probe_unit();
        } else {
            if (u.stamped) printf("%zu %d %llu\n", u.n, u.idr, (unsigned long long)u.pts);
            else printf("%zu %d -\n", u.n, u.idr);
            free(u.data);
        }
    } else have_last = 0;
    shift(n);
    saw_vcl = au_idr = au_content = au_stamped = close_next = 0;
}

// Looks for the start code after the open NAL unit's header.
static void search(void) {
    for (size_t i = scan > hdr + 3 ? scan : hdr + 3; i < len;) {
        const uint8_t *q = memchr(buf + i, 1, len - i);
        if (!q) break;
        size_t k = (size_t)(q - buf);
        i = k + 1;
        if (buf[k - 1] != 0 || buf[k - 2] != 0) continue;
        next_at = k - 3 > hdr && buf[k - 3] == 0 ? k - 3 : k - 2;
        next_hdr = scan = k + 1;
        return;
    }
    scan = len;
}

// Settles whether the open NAL unit begins a new access unit (the one in hand goes out if so)
// and adds it to the access unit in hand. 0: a slice whose first bytes are not all in yet.
static int decide(void) {
    int type = buf[hdr] & 31, ref_idc = buf[hdr] >> 5 & 3, kind = 0, begins = 0;
    int is_slice = type == 1 || type == 2 || type == 5;
    struct slice s;
    uint32_t first_mb = 1;
    if (is_slice) {
        size_t n = (next_at ? next_at : len) - hdr - 1;
        if (!next_at && n < HEAD + 2) return 0;  // (+2: zeros that may begin a start code)
        kind = read_slice(buf + hdr + 1, n < HEAD ? n : HEAD, type, ref_idc, &s, &first_mb);
    }
    if (nal == 0) begins = 0;
    else if (close_next) begins = type != 10 && type != 11;
    else if ((type >= 6 && type <= 9) || (type >= 14 && type <= 18)) begins = saw_vcl;
    else if (is_slice && saw_vcl) begins = kind == 2 ? (have_last ? new_picture(&s, &last) : first_mb == 0) : kind == 1 && first_mb == 0;
    if (begins) emit(nal);
    if (is_slice) {
        if (kind == 2) last = s, have_last = 1;
        else if (kind == 1) have_last = 0;
        else parse_errors++;
        saw_vcl = 1;
        au_idr |= type == 5;
    }
    if (type == 10 || type == 11) close_next = 1;
    if (type < 9 || type > 12) au_content = 1;
    return 1;
}

// The open NAL unit has ended (at next_at): parameter sets and timestamps are read whole.
static void end_nal(void) {
    int type = buf[hdr] & 31;
    const uint8_t *p = buf + hdr + 1;
    size_t n = next_at - hdr - 1;
    if (type == 7) read_sps(p, n);
    else if (type == 8) read_pps(p, n);
    else if (type == 6 && !au_stamped) au_stamped = read_timestamp(p, n, &au_pts);
}

// Takes in what has been read: every access unit completed by it goes out.
static void advance(void) {
    if (!synced) {  // the first start code: what comes before it is dropped
        for (size_t i = 2; i < len;) {
            const uint8_t *q = memchr(buf + i, 1, len - i);
            if (!q) break;
            size_t k = (size_t)(q - buf), at = k >= 3 && buf[k - 3] == 0 ? k - 3 : k - 2;
            i = k + 1;
            if (buf[k - 1] != 0 || buf[k - 2] != 0) continue;
            memmove(buf, buf + at, len -= at);
            nal = 0, hdr = k + 1 - at, scan = 0, next_at = 0, decided = 0, synced = 1;
            break;
        }
        if (!synced) {
            if (len > 2) memmove(buf, buf + len - 2, 2), len = 2;
            return;
        }
    }
    for (;;) {
        if (!next_at) search();
        if (hdr >= len) return;
        if (!decided && !(decided = decide())) return;
        if (!next_at) return;
        end_nal();
        nal = next_at, hdr = next_hdr, next_at = 0, decided = 0;
    }
}

// Room for the next read; an access unit in hand past MAX_BUF is dropped and the stream cut
// again from the next start code.
static void make_room(void) {
    if (len < cap) return;
    if (cap < MAX_BUF) {
        uint8_t *grown = realloc(buf, cap * 2);
        if (grown) {
            buf = grown, cap *= 2;
            return;
        }
    }
    fprintf(stderr, "relaygop: an access unit over %d MiB, dropped\n", MAX_BUF >> 20);
    len = 0, synced = 0;
    saw_vcl = au_idr = au_content = au_stamped = close_next = have_last = 0;
}

static void on_source(struct ev_loop *l, ev_io *w, int events) {
    (void)l, (void)w, (void)events;
    make_room();
    PROBE_START(t_read);
    ssize_t r = read(src, buf + len, cap - len);
    PROBE_ADD(PROBE_READ, t_read);
    if (r <= 0) {
        fprintf(stderr, "relaygop: the source ended\n");
        exit(69);
    }
    len += (size_t)r;
    PROBE_START(t_advance);
    advance();
    PROBE_ADD(PROBE_ADVANCE, t_advance);
}

static void on_writable(struct ev_loop *l, ev_io *w, int events) {
    (void)l, (void)events;
    struct client *c = w->data;
    if (flush(c) < 0) drop(c, strerror(errno));
    else if (c->len == 0) ev_io_stop(loop, &c->w);
}

// A new reader: the cached GOP at once, if there is one; else it waits for the next IDR.
static void on_listen(struct ev_loop *l, ev_io *w, int events) {
    (void)l, (void)w, (void)events;
    int fd = accept(lfd, NULL, NULL), slot = 0;
    if (fd < 0) return;
    while (slot < MAX_CLIENTS && clients[slot].fd >= 0) slot++;
    if (slot == MAX_CLIENTS) {
        close(fd);
        return;
    }
    relay_reader_options(fd);
    struct client *c = &clients[slot];
    *c = (struct client){.fd = fd, .started = gop_len > 0};
    ev_io_init(&c->w, on_writable, fd, EV_WRITE);
    c->w.data = c;
    for (size_t i = 0; i < gop_len && c->fd >= 0; i++) {
        int r = push(c, gop[i].data, gop[i].n);
        if (r < 0) drop(c, r == -1 ? strerror(errno) : "backlog over 16 MiB");
    }
}

static void on_stop(struct ev_loop *l, ev_signal *w, int events) {
    (void)w, (void)events;
    ev_break(l, EVBREAK_ALL);
}

int main(int argc, char **argv) {
    buf = malloc(cap = 4 << 20);
    if (argc == 3 && strcmp(argv[1], "--file") == 0) {
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0) {
            perror("relaygop: open");
            return 66;
        }
        file_mode = 1;
        for (ssize_t r;;) {
            make_room();
            if ((r = read(fd, buf + len, cap - len < 65536 ? cap - len : 65536)) < 0) return 66;
            if (r == 0) break;
            len += (size_t)r;
            advance();
        }
        // The last NAL unit ends with the file, and the last access unit with it.
        if (synced && hdr < len) {
            if (!next_at) next_at = next_hdr = len;
            if (!decided) decide();
            end_nal();
        }
        if (synced && len > 0) emit(len);
        fprintf(stderr, "%ld access units (%ld with a timestamp), %ld parse errors\n", units, stamped_units, parse_errors);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: relaygop SRC_PORT PORT | relaygop --file PATH\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    int failed = relay_sockets("relaygop", argv[1], argv[2], &src, &lfd);
    if (failed) return failed;
    for (int i = 0; i < MAX_CLIENTS; i++) clients[i] = (struct client){.fd = -1};
    loop = ev_default_loop(EVFLAG_AUTO);
    relay_run_libev(loop, src, lfd, on_source, on_listen, on_stop);
    fprintf(stderr, "relayed %ld access units (%ld with a timestamp)\n", units, stamped_units);
    return 0;
}
