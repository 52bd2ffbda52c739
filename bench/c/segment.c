// segment: the "limit" row of the segment benchmark. Cuts an Annex-B stream into files
// at IDR access units, as fast as plain C can: read() 1 MiB at a time, memchr for the
// 0x01 of each start code, look at the NAL header and the first slice byte, write().
//
//   segment FILE DIR [FRAMES] [--fsync]   prints: bytes=N aus=N segments=N
//
// Access units begin at an AUD, SPS, PPS or SEI after a picture's slices, or at a slice
// whose first_mb_in_slice is 0 (its ue(v) is the single bit 1: the top bit of the first
// byte after the header). A new segment starts at the first IDR access unit once the
// current one holds FRAMES (default 150: 5 s at 30 fps) access units. Segments are
// DIR/seg00001.h264, ...; with --fsync each is fsync'ed before the next one opens.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 1 << 20, CAP = 8 << 20 };
static uint8_t buf[CAP];

static const char *dir;
static int out = -1, nseg = 0, do_fsync = 0;

static void write_all(const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(out, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            perror("write");
            exit(74);
        }
        p += w;
        n -= (size_t)w;
    }
}

static void open_next(void) {
    if (out >= 0) {
        if (do_fsync) fsync(out);
        close(out);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/seg%05d.h264", dir, ++nseg);
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) {
        perror(path);
        exit(73);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: segment FILE DIR [FRAMES] [--fsync]\n");
        return 64;
    }
    long frames_per_segment = 150;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--fsync") == 0) do_fsync = 1;
        else frames_per_segment = atol(argv[i]);
    }
    dir = argv[2];
    int fd = strcmp(argv[1], "-") == 0 ? 0 : open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 66;
    }
    // buf[0, len): bytes not written yet; they begin at or before the current access unit.
    size_t len = 0, scan = 0, au_start = 0;
    int in_vcl = 0, au_has_vcl = 0, started = 0;
    unsigned long long bytes = 0, aus = 0;
    long frames = 0;
    for (;;) {
        if (len + CHUNK > CAP) {
            // An access unit longer than the buffer: write what we have (no cut inside it).
            if (out < 0) open_next();
            write_all(buf, au_start);
            memmove(buf, buf + au_start, len - au_start);
            len -= au_start;
            scan -= au_start;
            au_start = 0;
            if (len + CHUNK > CAP) {
                write_all(buf, len);
                len = scan = 0;
            }
        }
        ssize_t n = read(fd, buf + len, CHUNK);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("read");
            return 74;
        }
        if (n == 0) break;
        bytes += (unsigned long long)n;
        len += (size_t)n;
        const uint8_t *p;
        while (scan < len && (p = memchr(buf + scan, 1, len - scan)) != NULL) {
            size_t i = (size_t)(p - buf);
            if (i + 2 >= len) {  // need the header and one more byte: read on
                scan = i;
                goto more;
            }
            scan = i + 1;
            if (i < 2 || buf[i - 1] != 0 || buf[i - 2] != 0) continue;
            size_t nal = (i >= 3 && buf[i - 3] == 0) ? i - 3 : i - 2;
            int type = buf[i + 1] & 31;
            int begins = 0;
            if ((type >= 6 && type <= 9) || (type >= 14 && type <= 18)) {
                begins = in_vcl;
            } else if (type == 1 || type == 5) {
                begins = in_vcl && (buf[i + 2] & 0x80);
            }
            if (begins || !started) {
                if (started) {
                    aus++;
                    frames++;
                }
                started = 1;
                au_start = nal;
                in_vcl = 0;
                au_has_vcl = 0;
            }
            if (type == 1 || type == 5) {
                if (!au_has_vcl && type == 5 && (out < 0 || frames >= frames_per_segment)) {
                    if (out >= 0) write_all(buf, au_start);
                    open_next();
                    frames = 0;
                    memmove(buf, buf + au_start, len - au_start);
                    len -= au_start;
                    scan -= au_start;
                    au_start = 0;
                }
                au_has_vcl = 1;
                in_vcl = 1;
            }
        }
        scan = len;
    more:
        // Everything before the current access unit can go to the open segment now.
        if (out >= 0 && au_start > 0) {
            write_all(buf, au_start);
            memmove(buf, buf + au_start, len - au_start);
            len -= au_start;
            scan -= au_start;
            au_start = 0;
        }
    }
    if (started) aus++;
    if (out < 0 && len > 0) open_next();
    if (out >= 0) {
        write_all(buf, len);
        if (do_fsync) fsync(out);
        close(out);
    }
    printf("bytes=%llu aus=%llu segments=%d\n", bytes, aus, nseg);
    return 0;
}
