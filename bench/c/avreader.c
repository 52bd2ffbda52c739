/* avreader: an H.264 Annex-B reader as ffplay is one, for measuring when a picture is
 * decoded. It reads the stream from a socket (or stdin), cuts it into access units with
 * libavcodec's H.264 parser (av_parser_parse2: an access unit is complete when the next
 * one begins) and decodes them with libavcodec (AV_CODEC_FLAG_LOW_DELAY, one thread: no
 * frame-threading delay), and prints one line per decoded picture:
 *
 *   n=N size=BYTES arrival_mono=NS decoded_mono=NS decoded_real=NS capture_real=NS seq=S luma=Y
 *
 * arrival_mono: CLOCK_MONOTONIC when the read that brought the access unit's last byte
 * returned; decoded_mono / decoded_real: CLOCK_MONOTONIC / CLOCK_REALTIME when the decoder
 * handed the picture out; capture_real and seq: the nalcast timestamp SEI's capture time
 * (CLOCK_REALTIME) and frame number, 0 and -1 when the access unit has none. The
 * difference decoded_mono - arrival_mono is the time the picture spent in the reader:
 * the wait for the next access unit in the parser, plus the decode. luma: the decoded
 * picture's Y at a quarter of its width and height (away from the cursor Xvfb puts in
 * the middle): how the capture benchmark tells which paint a picture of a stream without
 * timestamps shows.
 *
 * usage: avreader tcp://HOST:PORT | unix:PATH | -   [max_pictures]
 * build: gcc -O2 -Wall -o avreader avreader.c -lavcodec -lavutil
 */
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int connect_to(const char *where) {
    if (strcmp(where, "-") == 0) return 0;
    if (strncmp(where, "unix:", 5) == 0) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", where + 5);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) return -1;
        return fd;
    }
    if (strncmp(where, "tcp://", 6) != 0) return -1;
    char host[256];
    snprintf(host, sizeof host, "%s", where + 6);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) fd = -1;
    freeaddrinfo(ai);
    return fd;
}

/* The reads, as (stream offset one past their last byte, arrival time): a ring, enough for
 * the reads one access unit spans. */
#define READS 4096
static int64_t read_end[READS], read_time[READS];
static long reads;

static int64_t arrival_of(int64_t offset) {
    for (long i = reads - 1; i >= 0 && i >= reads - READS; i--) {
        long k = i % READS;
        if (read_end[k] > offset && (i == 0 || read_end[(i - 1) % READS] <= offset)) return read_time[k];
    }
    return 0;
}

/* Per access unit sent to the decoder, by the index put in its pts. */
#define UNITS 1024
static struct { int64_t arrival, capture; int64_t seq; int size; } units[UNITS];

static const uint8_t nalcast_uuid[16] = {0x0d, 0x64, 0xdd, 0x68, 0x59, 0x73, 0x44, 0xac,
                                         0x92, 0x82, 0x6e, 0x38, 0x0b, 0x34, 0xdc, 0xd1};

static uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* The nalcast timestamp SEI of an access unit: type 6, payload 5 (user data unregistered),
 * our UUID, version, flags, sequence u64, capture_time_ns u64, pts_90k u64. */
static void find_timestamp(const uint8_t *p, int n, int64_t *capture, int64_t *seq) {
    *capture = 0;
    *seq = -1;
    for (int i = 0; i + 4 < n; i++) {
        if (!(p[i] == 0 && p[i + 1] == 0 && p[i + 2] == 1 && (p[i + 3] & 0x1f) == 6)) continue;
        /* Unescape (drop emulation prevention bytes) what the payload needs. */
        uint8_t rbsp[64];
        int r = 0, zeros = 0;
        for (int j = i + 4; j < n && r < (int)sizeof rbsp; j++) {
            if (zeros >= 2 && p[j] == 3) { zeros = 0; continue; }
            if (zeros >= 2 && p[j] <= 1) break; /* the next start code */
            zeros = p[j] == 0 ? zeros + 1 : 0;
            rbsp[r++] = p[j];
        }
        if (r >= 2 + 16 + 2 + 16 && rbsp[0] == 5 && memcmp(rbsp + 2, nalcast_uuid, 16) == 0) {
            *seq = (int64_t)be64(rbsp + 2 + 16 + 2);
            *capture = (int64_t)be64(rbsp + 2 + 16 + 2 + 8);
            return;
        }
    }
}

static AVCodecContext *ctx;
static AVPacket *pkt;
static AVFrame *frame;
static long sent, pictures, max_pictures;
static int64_t packet_end; /* stream offset one past the last access unit the parser gave */

/* Prints every picture the decoder has ready; returns 1 once max_pictures are out. */
static int drain(void) {
    while (avcodec_receive_frame(ctx, frame) == 0) {
        int64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);
        int j = frame->pts % UNITS;
        int luma = frame->data[0][(frame->height / 4) * frame->linesize[0] + frame->width / 4];
        printf("n=%ld size=%d arrival_mono=%lld decoded_mono=%lld decoded_real=%lld capture_real=%lld seq=%lld "
               "luma=%d\n",
               pictures++, units[j].size, (long long)units[j].arrival, (long long)mono, (long long)real,
               (long long)units[j].capture, (long long)units[j].seq, luma);
        if (max_pictures > 0 && pictures >= max_pictures) return 1;
    }
    return 0;
}

/* One access unit from the parser to the decoder (NULL: the end). */
static int decode(uint8_t *out, int out_size) {
    if (out) {
        packet_end += out_size;
        int k = sent % UNITS;
        units[k].arrival = arrival_of(packet_end - 1);
        units[k].size = out_size;
        find_timestamp(out, out_size, &units[k].capture, &units[k].seq);
        pkt->data = out;
        pkt->size = out_size;
        pkt->pts = pkt->dts = sent++;
        /* An access unit with no picture (a delimited stream's tail) is refused: no matter. */
        avcodec_send_packet(ctx, pkt);
    } else {
        avcodec_send_packet(ctx, NULL);
    }
    return drain();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: avreader tcp://HOST:PORT | unix:PATH | -  [max_pictures]\n");
        return 64;
    }
    max_pictures = argc > 2 ? atol(argv[2]) : 0;
    int fd = connect_to(argv[1]);
    if (fd < 0) {
        fprintf(stderr, "avreader: cannot connect to %s: %s\n", argv[1], strerror(errno));
        return 69;
    }
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_H264);
    AVCodecParserContext *parser = av_parser_init(AV_CODEC_ID_H264);
    ctx = avcodec_alloc_context3(codec);
    ctx->flags |= AV_CODEC_FLAG_LOW_DELAY; /* as ffplay -flags low_delay: no reordering wait */
    ctx->thread_count = 1;                 /* frame threads would hold a picture each */
    if (!parser || avcodec_open2(ctx, codec, NULL) < 0) {
        fprintf(stderr, "avreader: cannot open the H.264 decoder\n");
        return 70;
    }
    av_log_set_level(AV_LOG_FATAL);
    pkt = av_packet_alloc();
    frame = av_frame_alloc();
    static uint8_t buf[1 << 16];
    int64_t stream_offset = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        stream_offset += got;
        read_end[reads % READS] = stream_offset;
        read_time[reads % READS] = now_ns(CLOCK_MONOTONIC);
        reads++;
        const uint8_t *data = buf;
        int left = (int)got;
        while (left > 0) {
            uint8_t *out;
            int out_size;
            int used = av_parser_parse2(parser, ctx, &out, &out_size, data, left, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
            data += used;
            left -= used;
            if (out_size > 0 && decode(out, out_size)) return 0;
        }
    }
    /* The end: the parser's last access unit, then what the decoder holds. */
    uint8_t *out;
    int out_size;
    av_parser_parse2(parser, ctx, &out, &out_size, NULL, 0, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
    if (out_size > 0 && decode(out, out_size)) return 0;
    decode(NULL, 0);
    return 0;
}
