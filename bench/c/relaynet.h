// relaynet.h: the two sockets of the relays in bench/c (relay.c, relaygop.c): the source they
// read, connected on 127.0.0.1:SRC_PORT, and the socket their readers connect to, listening
// on 127.0.0.1:PORT (0: any free port), announced on stderr as nalcast announces its own
// ("serving tcp://127.0.0.1:PORT"); with libev, the loop that reads the one and accepts on the
// other.
#ifndef RELAYNET_H
#define RELAYNET_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

// Built with -DRELAY_PROBE (bench/relay-layers): PROBE_START(name) reads the monotonic clock
// into `name`, PROBE_ADD(layer, name) adds the nanoseconds since to probe_sums[layer] (each
// relay declares its layers, probe_sums and the line it writes); without it both are nothing.
#ifdef RELAY_PROBE
static uint64_t probe_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define PROBE_START(name) uint64_t name = probe_now()
#define PROBE_ADD(layer, since) (probe_sums[layer] += probe_now() - (since))
#else
#define PROBE_START(name)
#define PROBE_ADD(layer, since)
#endif

// RELAY_SOCKOPTS: a reader's socket given some of the options nalcast gives its readers
// (Socket.configureForStreaming), a comma-separated list of sndbuf (SO_SNDBUF 128 KiB),
// nodelay (TCP_NODELAY) and lowat (TCP_NOTSENT_LOWAT 16 KiB), or all of them ("nalcast");
// unset: the kernel's defaults.
static void relay_reader_options(int fd) {
    const char *want = getenv("RELAY_SOCKOPTS");
    if (!want) return;
    int all = strstr(want, "nalcast") != NULL, one = 1, sndbuf = 128 << 10, lowat = 16 << 10;
    if (all || strstr(want, "sndbuf")) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (all || strstr(want, "nodelay")) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (all || strstr(want, "lowat")) setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
}

// Connects *src and opens *lfd; 0, or 69 after a line on stderr naming `name`.
static int relay_sockets(const char *name, const char *src_port, const char *port, int *src, int *lfd) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    *src = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons((uint16_t)atoi(src_port));
    if (connect(*src, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "%s: connect to the source: ", name);
        perror(NULL);
        return 69;
    }
    *lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(*lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_port = htons((uint16_t)atoi(port));
    socklen_t al = sizeof a;
    if (bind(*lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(*lfd, 64) < 0 ||
        getsockname(*lfd, (struct sockaddr *)&a, &al) < 0) {
        fprintf(stderr, "%s: listen: ", name);
        perror(NULL);
        return 69;
    }
    fprintf(stderr, "serving tcp://127.0.0.1:%d\n", ntohs(a.sin_port));
    return 0;
}

#ifdef EV_VERSION_MAJOR
// With libev (ev.h included before this file): runs `loop` with the source's and the listening
// socket's watchers and SIGTERM and SIGINT ending it; returns when a signal came.
static void relay_run_libev(struct ev_loop *loop, int src, int lfd, void (*on_source)(struct ev_loop *, ev_io *, int),
                            void (*on_listen)(struct ev_loop *, ev_io *, int), void (*on_stop)(struct ev_loop *, ev_signal *, int)) {
    ev_io source_watcher, listen_watcher;
    ev_signal term, interrupt;
    ev_io_init(&source_watcher, on_source, src, EV_READ);
    ev_io_init(&listen_watcher, on_listen, lfd, EV_READ);
    ev_signal_init(&term, on_stop, SIGTERM);
    ev_signal_init(&interrupt, on_stop, SIGINT);
    ev_io_start(loop, &source_watcher);
    ev_io_start(loop, &listen_watcher);
    ev_signal_start(loop, &term);
    ev_signal_start(loop, &interrupt);
    ev_run(loop, 0);
}
#endif
#endif
