// readers: N TCP readers of one stream in one cheap process, for the serve benchmark.
//
//   readers PORT N SECONDS
//
// Connects N sockets to 127.0.0.1:PORT, reads and discards with poll() for SECONDS,
// then prints one line per reader: "BYTES EOF COUNTED_MS" (EOF 1 if the server closed it).
// BYTES are counted from the moment every reader has had its first bytes, COUNTED_MS long:
// a server starts each reader at a keyframe, so the readers begin at different moments,
// and bytes counted from each one's connect would differ by when its keyframe came.
// Exit 0, or 69 when a connection fails. Cheap on purpose: it shares the machine with
// the producer whose CPU is being measured.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: readers PORT N SECONDS\n");
        return 64;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    double seconds = atof(argv[3]);
    if (port <= 0 || n <= 0 || seconds <= 0) {
        fprintf(stderr, "readers: bad arguments\n");
        return 64;
    }
    struct pollfd *fds = calloc((size_t)n, sizeof *fds);
    long long *bytes = calloc((size_t)n, sizeof *bytes);
    int *eof = calloc((size_t)n, sizeof *eof);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
            fprintf(stderr, "readers: connect %d: %s\n", i, strerror(errno));
            return 69;
        }
        fds[i].fd = fd;
        fds[i].events = POLLIN;
    }
    static char buf[1 << 16];
    int *began = calloc((size_t)n, sizeof *began);
    int waiting = n;       /* readers without their first bytes yet */
    double counting = -1;  /* when the last of them had them */
    double end = now_s() + seconds;
    for (double t = now_s(); t < end; t = now_s()) {
        int r = poll(fds, (nfds_t)n, (int)((end - t) * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            perror("poll");
            return 71;
        }
        for (int i = 0; i < n; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                if (!began[i]) {
                    began[i] = 1;
                    waiting--;
                }
                if (counting >= 0) bytes[i] += got;
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                eof[i] = 1;
                close(fds[i].fd);
                fds[i].fd = -1;  // poll ignores it from now on
            }
        }
        // From the next poll on, once all have begun: the same bytes for every reader.
        if (waiting == 0 && counting < 0) counting = now_s();
    }
    long long counted_ms = counting < 0 ? 0 : (long long)((now_s() - counting) * 1000);
    for (int i = 0; i < n; i++) printf("%lld %d %lld\n", bytes[i], eof[i], counted_ms);
    return 0;
}
