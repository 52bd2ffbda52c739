// scan: the "limit" row of the scan benchmark. Counts the NAL units of an Annex-B
// stream as fast as plain C can: read() 1 MiB at a time, memchr for the 0x01 of a
// start code, then check the two zero bytes in front of it (which may sit at the
// end of the previous chunk).
//
//   scan FILE|-      prints: bytes=N nal=N aud=N idr=N sps=N
//
// A start code is 00 00 01 (a 4-byte 00 00 00 01 ends in one); the byte after it is
// the NAL header, whose low 5 bits are the type (9 AUD, 5 IDR slice, 7 SPS).
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#ifndef SCAN_CHUNK
#define SCAN_CHUNK (1 << 20)  // -DSCAN_CHUNK=1 tests the splits
#endif
enum { CHUNK = SCAN_CHUNK };
static uint8_t buf[CHUNK];

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: scan FILE|-\n");
        return 64;
    }
    int fd = strcmp(argv[1], "-") == 0 ? 0 : open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 66;
    }
    unsigned long long bytes = 0, types[32] = {0};
    int zeros = 0;        // zero bytes (0..2) ending the previous chunk
    int header_next = 0;  // the previous chunk ended right after a start code
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("read");
            return 74;
        }
        if (n == 0) break;
        bytes += (unsigned long long)n;
        const uint8_t *p = buf, *end = buf + n;
        if (header_next) {
            types[buf[0] & 31]++;
            header_next = 0;
        }
        while ((p = memchr(p, 1, (size_t)(end - p))) != NULL) {
            size_t i = (size_t)(p - buf);
            int start = i >= 2 ? (buf[i - 1] == 0 && buf[i - 2] == 0)
                      : i == 1 ? (buf[0] == 0 && zeros >= 1)
                      : zeros >= 2;
            p++;
            if (!start) continue;
            if (p < end) types[*p & 31]++;
            else header_next = 1;
        }
        if (buf[n - 1] != 0) zeros = 0;
        else if (n >= 2) zeros = buf[n - 2] == 0 ? 2 : 1;
        else zeros = zeros >= 1 ? 2 : 1;
    }
    unsigned long long nal = 0;
    for (int t = 0; t < 32; t++) nal += types[t];
    nal += (unsigned long long)header_next;  // a start code at the very end, header missing
    printf("bytes=%llu nal=%llu aud=%llu idr=%llu sps=%llu\n", bytes, nal, types[9], types[5], types[7]);
    return 0;
}
