// relay: the least a relay of a live Annex-B stream can do, the "limit" of a relay's CPU.
//
//   relay SRC_PORT PORT
//
// Connects to 127.0.0.1:SRC_PORT (relaysrc), reads the stream as it comes (read() into one
// buffer), cuts it into access units at their delimiters (00 00 01 09, found with memchr for
// the 09 and a look at the three bytes before it: the benchmark's source has an AUD in every
// access unit) and, as soon as the next one begins, writes the complete access unit to every
// reader with one sendmsg (MSG_DONTWAIT); a reader starts at an access unit with an IDR slice
// (type 5). Readers connect to 127.0.0.1:PORT (0: any free port). A reader whose socket does
// not take an access unit whole gets the rest later from a backlog of its own; one past
// 16 MiB is closed. No parsing beyond that, no timestamps, no joins with a cached GOP: what
// any relay must pay is reading the source and one sendmsg per access unit and reader.
//
// RELAY_SPIN_US=N (default 0): after each sendmsg, N microseconds of busy work, the time a
// relay with more to do per reader spends between its sends (bench/relay-switches).
//
// RELAY_CODE_LINES=N (default 0, at most 4000): per access unit, N cache lines of code run
// once each, 4160 bytes apart (each line 59 one-byte nops and a jump to the next), as a
// program whose per-unit code is spread over a large binary runs it. RELAY_SEQ_LINES=N: N
// lines that follow one another (a plain run of nops, which the processor's prefetcher
// fetches ahead). RELAY_LOOP_LINES=N: the same instructions from one line run N times: the
// instructions without the footprint (bench/relay-footprint).
//
// RELAY_SPLICE=1: one copy of each access unit for all readers, not one per reader: it is
// written once into a pipe, then for each reader tee()'d into the reader's own pipe (the
// kernel shares the pages, no copy) and splice()'d from there to the reader's socket. A
// reader's pipe (1 MiB) is its backlog: what its socket did not take waits there for the next
// access unit; a reader whose pipe cannot take an access unit whole is closed (an access unit
// larger than the pipes, too: this benchmark's are under 100 KiB). (bench/relay-footprint
// SPLICE=1: the kernel's copies to 16 readers are not what a relay's CPU is made of.)
//
// RELAY_SOCKOPTS=LIST: each reader's socket given nalcast's options for its readers (sndbuf,
// nodelay, lowat, or "nalcast" for all three: relaynet.h); relaygop.c takes it too.
//
// Built with -DRELAY_LIBEV (and -lev): the same relay driven by libev (an ev_io watcher for
// the source and one for the listening socket, epoll underneath) instead of a bare poll():
// the floor of a relay on nalcast's event library (bench/relay-switches' "C relay on libev").
//
// stderr: "serving tcp://127.0.0.1:PORT" once listening (as nalcast prints it), one line
// per reader dropped; on SIGTERM/SIGINT "relayed N access units" and exit 0. Exit 64 for bad
// arguments, 69 when the source cannot be reached or ends (or RELAY_SPLICE's pipes fail).
// Built with -DRELAY_PROBE (bench/relay-layers): the time per access unit in its read, its
// fan-out and the fan-out's sendmsg calls, every 300 access units on stderr, as nalcast's
// bench/relay-layers.patch writes its layers.
#define _GNU_SOURCE  // tee, splice, F_SETPIPE_SZ (RELAY_SPLICE)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef RELAY_LIBEV
#include <ev.h>
#endif
#include "relaynet.h"

#define MAX_CLIENTS 64

// RELAY_CODE_LINES and RELAY_SEQ_LINES: 4000 lines of each, entered so that N of them run.
#define CODE_LINES_MAX 4000
__asm__(".text\n.p2align 12\n.globl spread_lines\nspread_lines:\n"
        ".rept 4000\n.fill 59,1,0x90\n.byte 0xe9\n.long 4096\n.fill 4096,1,0xcc\n.endr\nret\n"
        ".p2align 12\n.globl packed_lines\npacked_lines:\n.rept 4000\n.fill 64,1,0x90\n.endr\nret\n");
extern void spread_lines(void);
extern void packed_lines(void);
static long spread_count, packed_count, loop_count;

static long lines_env(const char *name) {
    const char *v = getenv(name);
    long n = v ? atol(v) : 0;
    return n < 0 ? 0 : n > CODE_LINES_MAX ? CODE_LINES_MAX : n;
}

// The code lines asked for, once per access unit.
static void run_lines(void) {
    typedef void (*entry)(void);
    if (spread_count > 0) ((entry)((char *)spread_lines + (CODE_LINES_MAX - spread_count) * 4160))();
    if (packed_count > 0) ((entry)((char *)packed_lines + (CODE_LINES_MAX - packed_count) * 64))();
    for (long i = 0; i < loop_count; i++) ((entry)((char *)packed_lines + (CODE_LINES_MAX - 1) * 64))();
}

static double spin_us;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#ifdef RELAY_PROBE
enum { PROBE_READ, PROBE_PUMP, PROBE_SENDMSG, PROBE_LAYERS };
static uint64_t probe_sums[PROBE_LAYERS];  // ns
static int probe_units;
// One access unit out: every 300, the layers' ns per access unit.
static void probe_unit(void) {
    if (++probe_units < 300) return;
    uint64_t n = (uint64_t)probe_units;
    fprintf(stderr, "layers ns/unit: read=%llu pump=%llu sendmsg=%llu\n", (unsigned long long)(probe_sums[PROBE_READ] / n),
            (unsigned long long)(probe_sums[PROBE_PUMP] / n), (unsigned long long)(probe_sums[PROBE_SENDMSG] / n));
    memset(probe_sums, 0, sizeof probe_sums);
    probe_units = 0;
}
#else
static void probe_unit(void) {}
#endif

// RELAY_SPIN_US's busy work after a send.
static void spin(void) {
    if (spin_us <= 0) return;
    double until = now_s() + spin_us / 1e6;
    while (now_s() < until) {}
}
#define MAX_BACKLOG (16 << 20)
#define BUF (4 << 20)

struct client {
    int fd;
    // RELAY_SPLICE: the reader's pipe (0 until made) and the bytes waiting in it.
    int pipe_r, pipe_w;
    size_t piped;
    int started;
    uint8_t *backlog;
    size_t len, cap;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static void drop(struct client *c, const char *why) {
    fprintf(stderr, "relay: reader closed: %s\n", why);
    close(c->fd);
    if (c->pipe_r > 0) close(c->pipe_r), close(c->pipe_w);
    free(c->backlog);
    *c = (struct client){.fd = -1};
}

// Writes the backlog, then the access unit with one sendmsg; keeps the rest. 0 or -1.
static int push(struct client *c, const uint8_t *au, size_t n) {
    if (c->len > 0) {
        ssize_t w = send(c->fd, c->backlog, c->len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN) return -1;
        if (w > 0) memmove(c->backlog, c->backlog + w, c->len -= (size_t)w);
    }
    size_t sent = 0;
    if (c->len == 0) {
        struct iovec iov = {(void *)au, n};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        PROBE_START(sending);
        ssize_t w = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        PROBE_ADD(PROBE_SENDMSG, sending);
        if (w < 0 && errno != EAGAIN) return -1;
        if (w > 0) sent = (size_t)w;
    }
    if (sent == n) return 0;
    if (c->len + n - sent > MAX_BACKLOG) return -1;
    if (c->len + n - sent > c->cap) {
        c->cap = (c->len + n - sent) * 2;
        c->backlog = realloc(c->backlog, c->cap);
        if (!c->backlog) return -1;
    }
    memcpy(c->backlog + c->len, au + sent, n - sent);
    c->len += n - sent;
    return 0;
}

// RELAY_SPLICE: the pipe every access unit is written into once, its size, /dev/null (where
// the unit is spliced away once every reader has its copy).
static int splice_mode, unit_r, unit_w, dev_null;
static size_t pipe_size;

// Says why RELAY_SPLICE cannot go on, and exits 69.
static void fail(const char *why) {
    fprintf(stderr, "%s\n", why);
    exit(69);
}

// A pipe of pipe_size bytes (both ends non-blocking). 0 or -1.
static int make_pipe(int *r, int *w) {
    int p[2];
    if (pipe2(p, O_NONBLOCK) < 0) return -1;
    if (fcntl(p[1], F_SETPIPE_SZ, (int)pipe_size) < (int)pipe_size) {
        close(p[0]), close(p[1]);
        return -1;
    }
    *r = p[0], *w = p[1];
    return 0;
}

// RELAY_SPLICE: the access unit in unit_r (n bytes) to the reader: what its pipe still holds
// to its socket, the unit tee'd behind it, as much as the socket takes spliced on. 0 or -1.
static int push_spliced(struct client *c, size_t n) {
    if (c->pipe_r == 0 && make_pipe(&c->pipe_r, &c->pipe_w) < 0) return -1;
    if (c->piped + n > pipe_size) return -1;
    ssize_t t = tee(unit_r, c->pipe_w, n, SPLICE_F_NONBLOCK);
    if (t != (ssize_t)n) return -1;
    c->piped += n;
    ssize_t s = splice(c->pipe_r, NULL, c->fd, NULL, c->piped, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (s < 0 && errno != EAGAIN) return -1;
    if (s > 0) c->piped -= (size_t)s;
    return 0;
}

// Offset of the next access unit delimiter's first zero (00 00 01 09 or 00 00 00 01 09) at
// or after `from`, or -1.
static long next_aud(const uint8_t *b, size_t from, size_t end) {
    for (size_t i = from + 3; i < end;) {
        const uint8_t *p = memchr(b + i, 9, end - i);
        if (!p) return -1;
        size_t k = (size_t)(p - b);
        if ((b[k - 1] == 1 && b[k - 2] == 0 && b[k - 3] == 0)) return (long)(k >= 4 && b[k - 4] == 0 ? k - 4 : k - 3);
        i = k + 1;
    }
    return -1;
}

// Whether the access unit's first slice is an IDR slice (type 5, not 1).
static int has_idr(const uint8_t *b, size_t n) {
    for (size_t i = 2; i + 1 < n;) {
        const uint8_t *p = memchr(b + i, 1, n - 1 - i);
        if (!p) return 0;
        size_t k = (size_t)(p - b);
        i = k + 1;
        if (b[k - 1] != 0 || b[k - 2] != 0) continue;
        int type = b[k + 1] & 31;
        if (type == 5) return 1;
        if (type >= 1 && type <= 4) return 0;
    }
    return 0;
}

// The relay's state: its readers, and buf[0..len): once in sync, from the delimiter of the
// access unit in progress on.
static struct client clients[MAX_CLIENTS];
static uint8_t *buf;
static size_t len, searched;
static int synced;
static long units;
static int src, lfd;

static void accept_reader(void) {
    int fd = accept(lfd, NULL, NULL);
    int slot = 0;
    while (slot < MAX_CLIENTS && clients[slot].fd >= 0) slot++;
    if (fd >= 0 && slot < MAX_CLIENTS) {
        relay_reader_options(fd);
        clients[slot] = (struct client){.fd = fd};
    }
    else if (fd >= 0) close(fd);
}

// One read of the source; every access unit completed by it goes out. Exits when it ends.
static void read_source(void) {
    if (len == BUF) len = searched = 0;  // no delimiter in 4 MiB: not this benchmark's stream
    PROBE_START(reading);
    ssize_t r = read(src, buf + len, BUF - len);
    PROBE_ADD(PROBE_READ, reading);
    if (r <= 0) {
        fprintf(stderr, "relay: the source ended\n");
        exit(69);
    }
    len += (size_t)r;
    if (!synced) {
        long s = next_aud(buf, 0, len);
        if (s < 0) return;
        memmove(buf, buf + s, len -= (size_t)s);
        synced = 1;
    }
    // Every access unit whose successor's delimiter has arrived goes out. (From 2 on: the
    // front access unit's own delimiter is not its end.)
    for (long next; (next = next_aud(buf, searched > 6 ? searched - 4 : 2, len)) > 0;) {
        size_t n = (size_t)next;
        int idr = has_idr(buf, n);
        run_lines();
        int spliced = 0;
        if (splice_mode && n <= pipe_size) {
            // The unit's pipe is empty here: a short write would leave a piece to be tee'd later.
            if (write(unit_w, buf, n) != (ssize_t)n) fail("relay: an access unit did not go into the pipe whole");
            spliced = 1;
        }
        PROBE_START(pumping);
        for (int i = 0; i < MAX_CLIENTS; i++) {
            struct client *c = &clients[i];
            if (c->fd < 0 || (!c->started && !idr)) continue;
            c->started = 1;
            // A reader keeps its bytes in order: one with a pipe of its own never gets a
            // sendmsg (it would pass what waits in the pipe), nor one with a backlog a splice.
            if (c->pipe_r > 0 || (spliced && c->len == 0)) {
                if (!spliced || push_spliced(c, n) < 0) drop(c, "pipe full or splice failed");
            } else if (push(c, buf, n) < 0) {
                drop(c, "backlog full or send failed");
            }
            spin();
        }
        if (spliced && splice(unit_r, NULL, dev_null, NULL, n, SPLICE_F_NONBLOCK) != (ssize_t)n)
            fail("relay: the pipe did not empty after an access unit");
        PROBE_ADD(PROBE_PUMP, pumping);
        probe_unit();
        units++;
        memmove(buf, buf + n, len -= n);
        searched = 0;
    }
    searched = len;
}

#ifdef RELAY_LIBEV
static void on_source(struct ev_loop *loop, ev_io *w, int events) { (void)loop; (void)w; (void)events; read_source(); }
static void on_listen(struct ev_loop *loop, ev_io *w, int events) { (void)loop; (void)w; (void)events; accept_reader(); }
static void on_stop(struct ev_loop *loop, ev_signal *w, int events) { (void)w; (void)events; ev_break(loop, EVBREAK_ALL); }
#endif

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: relay SRC_PORT PORT\n");
        return 64;
    }
    const char *spin_env = getenv("RELAY_SPIN_US");
    spin_us = spin_env ? atof(spin_env) : 0;
    spread_count = lines_env("RELAY_CODE_LINES");
    packed_count = lines_env("RELAY_SEQ_LINES");
    loop_count = lines_env("RELAY_LOOP_LINES");
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int failed = relay_sockets("relay", argv[1], argv[2], &src, &lfd);
    if (failed) return failed;
    for (int i = 0; i < MAX_CLIENTS; i++) clients[i] = (struct client){.fd = -1};
    if (getenv("RELAY_SPLICE")) {
        pipe_size = 1 << 20;
        dev_null = open("/dev/null", O_WRONLY);
        if (dev_null < 0 || make_pipe(&unit_r, &unit_w) < 0) {
            fprintf(stderr, "relay: no pipe of %zu bytes for RELAY_SPLICE (/proc/sys/fs/pipe-max-size)\n", pipe_size);
            return 69;
        }
        splice_mode = 1;
    }
    buf = malloc(BUF);
#ifdef RELAY_LIBEV
    struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
    relay_run_libev(loop, src, lfd, on_source, on_listen, on_stop);
#else
    while (!stop) {
        struct pollfd p[2] = {{.fd = src, .events = POLLIN}, {.fd = lfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) continue;
        if (p[1].revents & POLLIN) accept_reader();
        if (p[0].revents & (POLLIN | POLLHUP)) read_source();
    }
#endif
    fprintf(stderr, "relayed %ld access units\n", units);
    return 0;
}
