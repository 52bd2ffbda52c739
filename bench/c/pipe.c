// pipe: how long a 1080p I420 frame (3 110 400 bytes) takes to cross a pipe, first byte
// written to last byte read, for a given pipe buffer size. Behind FileInput's choice of
// 256 KiB for raw and Y4M input from a pipe (see Sources/Capture/FileInput.swift).
//
//   gcc -O2 -o out/bin/pipe c/pipe.c && out/bin/pipe 0 && out/bin/pipe 262144 && out/bin/pipe 1048576
//
// A child process reads whole frames (as `produce --source raw:-` does) and reports the
// time it has the last byte; the parent writes one frame every 33 ms. 0 = the default
// buffer (64 KiB). Prints the median, p90 and p99 over 200 frames.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { FRAMES = 200 };

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: pipe BUFFER_BYTES (0: the default)\n");
        return 64;
    }
    int size = atoi(argv[1]);
    size_t frame = 1920 * 1080 * 3 / 2;
    int data[2], done[2];
    if (pipe(data) != 0 || pipe(done) != 0) return 71;
    if (size > 0 && fcntl(data[0], F_SETPIPE_SZ, size) < 0) perror("F_SETPIPE_SZ");
    if (fork() == 0) {
        close(data[1]);
        unsigned char *buf = malloc(frame);
        memset(buf, 0, frame);
        for (int f = 0; f < FRAMES; f++) {
            size_t got = 0;
            while (got < frame) {
                ssize_t n = read(data[0], buf + got, frame - got);
                if (n <= 0) _exit(1);
                got += (size_t)n;
            }
            long long t = now_ns();
            if (write(done[1], &t, sizeof t) != sizeof t) _exit(1);
        }
        _exit(0);
    }
    close(data[0]);
    unsigned char *src = malloc(frame);
    memset(src, 1, frame);
    long long took[FRAMES];
    for (int f = 0; f < FRAMES; f++) {
        usleep(33000);
        long long start = now_ns(), end;
        for (size_t off = 0; off < frame;) {
            ssize_t n = write(data[1], src + off, frame - off);
            if (n <= 0) return 74;
            off += (size_t)n;
        }
        if (read(done[0], &end, sizeof end) != sizeof end) return 74;
        took[f] = end - start;
    }
    qsort(took, FRAMES, sizeof took[0], by_value);
    printf("buffer %d: median %.3f ms, p90 %.3f, p99 %.3f\n", size, took[FRAMES / 2] / 1e6,
           took[FRAMES * 9 / 10] / 1e6, took[FRAMES * 99 / 100] / 1e6);
    wait(NULL);
    return 0;
}
