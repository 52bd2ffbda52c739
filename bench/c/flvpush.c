/* flvpush: the least a relay can spend pushing a live Annex-B stream over RTMP with
 * libavformat, the floor of the push benchmark. It reads the stream from a TCP server with
 * recv() into one buffer, cuts access units at their AUDs with memchr (nalcast's stream and
 * the benchmark's source begin every access unit with one), and hands each to libavformat's
 * FLV muxer over its RTMP protocol with av_write_frame, timed at 30 fps: no parser, no
 * demuxer, no thread. The FLV muxer turns the Annex-B access units into length-prefixed
 * ones itself (and the first IDR's SPS/PPS, given as Annex-B extradata, into its avcC).
 * What is left is what libavformat's RTMP writer costs: two send() and two poll() per RTMP
 * chunk (the chunk's bytes, then the one-byte header of the next), at the server's chunk
 * size.
 *
 * usage: flvpush tcp://HOST:PORT rtmp://HOST:PORT/APP/KEY WIDTH HEIGHT
 * (the picture size is only for the stream's metadata, which libavformat wants set)
 * build: gcc -O2 -Wall -o flvpush flvpush.c -lavformat -lavcodec -lavutil
 * Runs until the source closes or SIGINT/SIGTERM; then writes the trailer.
 */
#include <libavformat/avformat.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static int connect_tcp(const char *url) {
    char host[256];
    const char *hp = url + strlen("tcp://");
    const char *colon = strrchr(hp, ':');
    if (strncmp(url, "tcp://", 6) != 0 || !colon || (size_t)(colon - hp) >= sizeof host) return -1;
    memcpy(host, hp, colon - hp);
    host[colon - hp] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) { close(fd); fd = -1; }
    freeaddrinfo(ai);
    return fd;
}

/* Offset of the next AUD start code (00 00 01 09) in buf[from, len), or -1. */
static long next_aud(const uint8_t *buf, long from, long len) {
    long i = from;
    while (i + 3 < len) {
        const uint8_t *one = memchr(buf + i + 2, 1, len - i - 3);
        if (!one) return -1;
        long at = one - buf;
        if (buf[at - 1] == 0 && buf[at - 2] == 0 && (buf[at + 1] & 0x1f) == 9) return at - 2;
        i = at - 1;
    }
    return -1;
}

/* The SPS and PPS of an IDR access unit, start codes in front, as extradata. */
static int parameter_sets(const uint8_t *au, long n, uint8_t **out, int *size) {
    long i = 0, start = -1;
    *size = 0;
    *out = av_mallocz(n + AV_INPUT_BUFFER_PADDING_SIZE);
    while (i + 3 < n) {
        if (au[i] == 0 && au[i + 1] == 0 && au[i + 2] == 1) {
            if (start >= 0) { memcpy(*out + *size, au + start, i - start); *size += i - start; start = -1; }
            int type = au[i + 3] & 0x1f;
            if (type == 7 || type == 8) start = i;
            i += 3;
        } else {
            i++;
        }
    }
    return *size > 0;
}

/* Whether the access unit holds an IDR slice: its NAL unit headers, found with memchr. */
static int has_idr(const uint8_t *au, long n) {
    const uint8_t *p = au, *end = au + n;
    while (p + 3 < end && (p = memchr(p + 2, 1, end - p - 3))) {
        if (p[-1] == 0 && p[-2] == 0) {
            int type = p[1] & 0x1f;
            if (type == 5) return 1;
            if (type == 1) return 0;  /* a non-IDR slice: the picture is not an IDR */
        }
        p -= 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: flvpush tcp://HOST:PORT rtmp://HOST:PORT/APP/KEY WIDTH HEIGHT\n");
        return 64;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    avformat_network_init();
    int fd = connect_tcp(argv[1]);
    if (fd < 0) { fprintf(stderr, "flvpush: cannot connect to %s\n", argv[1]); return 69; }

    long cap = 8 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    AVFormatContext *oc = NULL;
    AVStream *st = NULL;
    AVPacket *pkt = av_packet_alloc();
    int64_t frames = 0;
    while (!stopping) {
        ssize_t got = recv(fd, buf + len, cap - len, 0);
        if (got <= 0) break;
        len += got;
        long first = next_aud(buf, 0, len), at = first;
        if (first < 0) { if (len == cap) len = 0; continue; }
        for (long next; (next = next_aud(buf, at + 4, len)) >= 0; at = next) {
            const uint8_t *au = buf + at;
            long n = next - at;
            if (!oc) {
                uint8_t *extra;
                int extra_size;
                if (!has_idr(au, n) || !parameter_sets(au, n, &extra, &extra_size)) continue;
                if (avformat_alloc_output_context2(&oc, NULL, "flv", argv[2]) < 0) return 70;
                st = avformat_new_stream(oc, NULL);
                st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
                st->codecpar->codec_id = AV_CODEC_ID_H264;
                st->codecpar->extradata = extra;
                st->codecpar->extradata_size = extra_size;
                st->codecpar->width = atoi(argv[3]);
                st->codecpar->height = atoi(argv[4]);
                st->time_base = (AVRational){1, 1000};
                if (avio_open(&oc->pb, argv[2], AVIO_FLAG_WRITE) < 0) { fprintf(stderr, "flvpush: cannot open %s\n", argv[2]); return 69; }
                if (avformat_write_header(oc, NULL) < 0) return 69;
            }
            pkt->data = (uint8_t *)au;
            pkt->size = (int)n;
            pkt->stream_index = 0;
            pkt->pts = pkt->dts = av_rescale_q(frames++, (AVRational){1, 30}, st->time_base);
            pkt->flags = has_idr(au, n) ? AV_PKT_FLAG_KEY : 0;
            if (av_write_frame(oc, pkt) < 0) { fprintf(stderr, "flvpush: write failed\n"); stopping = 1; break; }
        }
        /* keep the unfinished access unit at the front */
        memmove(buf, buf + at, len - at);
        len -= at;
    }
    if (oc) {
        av_write_trailer(oc);
        avio_closep(&oc->pb);
        avformat_free_context(oc);
    }
    av_packet_free(&pkt);
    fprintf(stderr, "flvpush: %lld access units\n", (long long)frames);
    return 0;
}
