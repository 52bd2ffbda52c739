// relaysrc: a live Annex-B H.264 source for the relay benchmark, as cheap as a source can be.
//
//   relaysrc FILE FPS PORT
//
// Reads FILE (Annex-B, starting with an IDR) into memory once, cuts it into access units,
// and serves it on 127.0.0.1:PORT (0: any free port) in real time: one access unit every
// 1/FPS s on an absolute CLOCK_MONOTONIC schedule, looping at the end of the file. Every
// access unit is written to every client with one sendmsg(), with a fresh nalcast timestamp
// SEI right before its first slice, after any AUD, SPS, PPS (sequence = access units sent since the start, capture time = the
// CLOCK_REALTIME moment it is sent, pts_90k from the sequence): a reader can tell how far
// behind this source it is, and whether it missed a picture, as it would for a stream of
// `nalcast produce`. The file should carry no timestamp SEI of its own (the benchmark's is
// made by FFmpeg): readers take the first one of an access unit. The SEI goes after the
// parameter sets because GStreamer's h264parse drops what comes before the first SPS.
//
// A client gets the stream from the next IDR on. A client that cannot take an access unit
// whole into its socket buffer gets the rest later from a per-client backlog; one whose
// backlog passes 16 MiB is closed (the relays under test read as they go). Every close
// of that kind is counted and reported on stderr.
//
// stderr: "serving tcp://127.0.0.1:PORT" once listening (the line nalcast prints), then
// one line per client dropped; on SIGTERM/SIGINT a summary line "sent N access units, ..."
// and exit 0. Exit 64 for bad arguments, 66 for an unreadable or unusable file.
#define _GNU_SOURCE  // ppoll
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define MAX_BACKLOG (16 << 20)

static const uint8_t UUID[16] = {0x0d, 0x64, 0xdd, 0x68, 0x59, 0x73, 0x44, 0xac,
                                 0x92, 0x82, 0x6e, 0x38, 0x0b, 0x34, 0xdc, 0xd1};

struct au {
    size_t head, head_len;  // from its start to its first slice: the SEI goes after it
    size_t rest, rest_len;  // its slices
    int idr;
};

struct client {
    int fd;
    int started;  // an IDR has been sent to it
    uint8_t *backlog;
    size_t len, cap;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static int64_t ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Start code at p[i] (00 00 01): returns its length (3, or 4 with a zero in front), 0 if none.
static size_t next_nal(const uint8_t *p, size_t n, size_t from, size_t *at) {
    for (size_t i = from; i + 3 <= n; i++) {
        if (p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1) {
            *at = (i > 0 && p[i - 1] == 0 && i - 1 >= from) ? i - 1 : i;
            return i + 3 - *at;
        }
    }
    return 0;
}

// The SEI NAL unit (4-byte start code) with emulation prevention; returns its length.
static size_t make_sei(uint8_t *out, uint64_t seq, uint64_t capture_ns, uint64_t pts_90k, int key) {
    uint8_t rbsp[64];
    size_t n = 0;
    rbsp[n++] = 5;
    rbsp[n++] = 42;
    memcpy(rbsp + n, UUID, 16);
    n += 16;
    rbsp[n++] = 1;
    rbsp[n++] = key ? 1 : 0;
    uint64_t v[3] = {seq, capture_ns, pts_90k};
    for (int k = 0; k < 3; k++)
        for (int s = 56; s >= 0; s -= 8) rbsp[n++] = (uint8_t)(v[k] >> s);
    rbsp[n++] = 0x80;
    size_t o = 0;
    out[o++] = 0, out[o++] = 0, out[o++] = 0, out[o++] = 1, out[o++] = 0x06;
    int zeros = 0;
    for (size_t i = 0; i < n; i++) {
        if (zeros >= 2 && rbsp[i] <= 3) {
            out[o++] = 3;
            zeros = 0;
        }
        out[o++] = rbsp[i];
        zeros = rbsp[i] == 0 ? zeros + 1 : 0;
    }
    return o;
}

static void drop_client(struct client *c, const char *why) {
    fprintf(stderr, "relaysrc: client closed: %s\n", why);
    close(c->fd);
    c->fd = -1;
    free(c->backlog);
    c->backlog = NULL;
    c->len = c->cap = 0;
}

// Sends what the client's backlog holds, then the parts (one sendmsg); keeps what does not
// fit. 0, or -1 (a send error: errno) or -2 (the backlog would pass MAX_BACKLOG).
static int push(struct client *c, const uint8_t *const *parts, const size_t *lens, int nparts) {
    if (c->len > 0) {
        ssize_t w = send(c->fd, c->backlog, c->len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (w > 0) {
            memmove(c->backlog, c->backlog + w, c->len - (size_t)w);
            c->len -= (size_t)w;
        }
    }
    size_t sent = 0;
    if (c->len == 0 && nparts > 0) {
        struct iovec iov[4];
        for (int k = 0; k < nparts; k++) iov[k] = (struct iovec){(void *)parts[k], lens[k]};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)nparts};
        ssize_t w = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (w > 0) sent = (size_t)w;
    }
    for (int k = 0; k < nparts; k++) {
        size_t skip = sent < lens[k] ? sent : lens[k];
        sent -= skip;
        size_t left = lens[k] - skip;
        if (left == 0) continue;
        if (c->len + left > MAX_BACKLOG) return -2;
        if (c->len + left > c->cap) {
            c->cap = (c->len + left) * 2;
            uint8_t *grown = realloc(c->backlog, c->cap);
            if (!grown) return -2;
            c->backlog = grown;
        }
        memcpy(c->backlog + c->len, parts[k] + skip, left);
        c->len += left;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: relaysrc FILE FPS PORT\n");
        return 64;
    }
    double fps = atof(argv[2]);
    int port = atoi(argv[3]);
    if (fps <= 0 || port < 0 || port > 65535) {
        fprintf(stderr, "relaysrc: bad arguments\n");
        return 64;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 8) {
        fprintf(stderr, "relaysrc: cannot read %s\n", argv[1]);
        return 66;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *data = malloc(n);
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, data + got, n - got);
        if (r <= 0) {
            fprintf(stderr, "relaysrc: cannot read %s\n", argv[1]);
            return 66;
        }
        got += (size_t)r;
    }
    close(fd);

    // Cut into access units: one starts at an AUD, or at the first non-VCL NAL unit (or a
    // slice with first_mb_in_slice 0) after a slice.
    size_t cap = 1024, count = 0;
    struct au *aus = calloc(cap, sizeof *aus);
    int in_vcl = 0;  // the current access unit has a slice already
    size_t at, sc = next_nal(data, n, 0, &at);
    struct au *cur = NULL;
    while (sc) {
        size_t body = at + sc, next_at = n;
        size_t next_sc = next_nal(data, n, body, &next_at);
        if (!next_sc) next_at = n;
        int type = data[body] & 0x1f;
        int vcl = type == 1 || type == 5;
        int starts = !cur || type == 9 || (in_vcl && (!vcl || (body + 1 < n && (data[body + 1] & 0x80))));
        if (starts) {
            if (count == cap) aus = realloc(aus, (cap *= 2) * sizeof *aus);
            cur = &aus[count++];
            memset(cur, 0, sizeof *cur);
            cur->head = at;
            in_vcl = 0;
        }
        if (!in_vcl && vcl) cur->rest = at;
        if (in_vcl || vcl) cur->rest_len = next_at - cur->rest;
        else cur->head_len = next_at - cur->head;
        if (type == 5) cur->idr = 1;
        if (vcl) in_vcl = 1;
        sc = next_sc;
        at = next_at;
    }
    if (count == 0 || !aus[0].idr) {
        fprintf(stderr, "relaysrc: %s does not start with an IDR access unit\n", argv[1]);
        return 66;
    }

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    socklen_t alen = sizeof addr;
    if (bind(ls, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(ls, 64) < 0 ||
        getsockname(ls, (struct sockaddr *)&addr, &alen) < 0) {
        fprintf(stderr, "relaysrc: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 69;
    }
    fcntl(ls, F_SETFL, O_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    fprintf(stderr, "serving tcp://127.0.0.1:%d\n", ntohs(addr.sin_port));
    fprintf(stderr, "relaysrc: %zu access units from %s, %g fps, looped\n", count, argv[1], fps);

    struct client clients[MAX_CLIENTS];
    for (int i = 0; i < MAX_CLIENTS; i++) clients[i].fd = -1;
    int64_t interval = (int64_t)(1e9 / fps), next = ns(CLOCK_MONOTONIC);
    uint64_t seq = 0, dropped = 0, accepted = 0;
    uint8_t sei[128];
    while (!stop) {
        // Until the next access unit is due: accept clients, drain backlogs.
        for (;;) {
            int64_t wait = next - ns(CLOCK_MONOTONIC);
            if (wait <= 0 || stop) break;
            struct pollfd pfd[MAX_CLIENTS + 1];
            int map[MAX_CLIENTS + 1], m = 0;
            pfd[m].fd = ls, pfd[m].events = POLLIN, map[m++] = -1;
            for (int i = 0; i < MAX_CLIENTS; i++)
                if (clients[i].fd >= 0) {
                    pfd[m].fd = clients[i].fd;
                    pfd[m].events = clients[i].len ? POLLOUT : POLLIN;  // POLLIN: hang-ups
                    map[m++] = i;
                }
            struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
            if (ppoll(pfd, (nfds_t)m, &ts, NULL) <= 0) continue;
            for (int k = 1; k < m; k++) {
                struct client *c = &clients[map[k]];
                if (pfd[k].revents & POLLIN) {
                    char junk[256];
                    ssize_t r = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
                    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                        close(c->fd), c->fd = -1, free(c->backlog), c->backlog = NULL, c->len = c->cap = 0;
                        continue;
                    }
                }
                if (c->len && (pfd[k].revents & (POLLOUT | POLLERR | POLLHUP))) {
                    int r = push(c, NULL, NULL, 0);
                    if (r < 0) {
                        dropped++;
                        drop_client(c, r == -1 ? strerror(errno) : "backlog over 16 MiB");
                    }
                }
            }
            if (pfd[0].revents & POLLIN) {
                int cfd;
                while ((cfd = accept(ls, NULL, NULL)) >= 0) {
                    int i = 0;
                    while (i < MAX_CLIENTS && clients[i].fd >= 0) i++;
                    if (i == MAX_CLIENTS) {
                        fprintf(stderr, "relaysrc: more than %d clients, refused\n", MAX_CLIENTS);
                        close(cfd);
                        continue;
                    }
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    clients[i] = (struct client){.fd = cfd};
                    accepted++;
                }
            }
        }
        if (stop) break;
        struct au *a = &aus[seq % count];
        size_t sei_len = make_sei(sei, seq, (uint64_t)ns(CLOCK_REALTIME), (uint64_t)(seq * 90000 / fps), a->idr);
        const uint8_t *parts[3] = {data + a->head, sei, data + a->rest};
        size_t lens[3] = {a->head_len, sei_len, a->rest_len};
        for (int i = 0; i < MAX_CLIENTS; i++) {
            struct client *c = &clients[i];
            if (c->fd < 0) continue;
            if (!c->started && !a->idr) continue;
            c->started = 1;
            int r = push(c, parts, lens, 3);
            if (r < 0) {
                dropped++;
                drop_client(c, r == -1 ? strerror(errno) : "backlog over 16 MiB");
            }
        }
        seq++;
        next += interval;
    }
    fprintf(stderr, "relaysrc: sent %llu access units, %llu clients, %llu closed for not reading\n",
            (unsigned long long)seq, (unsigned long long)accepted, (unsigned long long)dropped);
    return 0;
}
