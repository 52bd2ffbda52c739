// segmux: the floor of the container segment benchmarks (`segment mp4`, `segment ts`): the
// least a program can spend cutting an Annex-B stream into MP4 or MPEG-TS segments with
// libavformat's muxers, each segment fsync'ed as nalcast's are. It reads 1 MiB at a time,
// finds start codes with memchr (access units cut as c/segment.c cuts them), and hands
// each access unit to the muxer as it is (Annex-B: the MP4 muxer converts it, and the IDR's
// SPS/PPS given as Annex-B extradata, itself), at 30 fps (the input has no B-frames): no
// parser, no demuxer, no thread, no copy. A new segment at the first IDR after FRAMES
// access units; MP4 segments fragmented with nalcast's movflags (a fragment at every IDR
// and at least every second).
//
//   segmux FILE DIR mp4|ts [FRAMES] [--fsync]   prints: aus=N segments=N
//
// build: gcc -O2 -Wall -o segmux segmux.c -lavformat -lavcodec -lavutil
#include <errno.h>
#include <fcntl.h>
#include <libavformat/avformat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 1 << 20, CAP = 16 << 20 };
static uint8_t buf[CAP];

static const char *dir, *format;
static int do_fsync = 0, nseg = 0;
static char path[4096];
static AVFormatContext *oc;
static AVStream *st;
static AVPacket *pkt;
static long frames_in_segment = 0, frames_per_segment = 150;
static int64_t frame = 0;

// The SPS and PPS of an access unit, start codes in front, as extradata.
static int parameter_sets(const uint8_t *au, size_t n, uint8_t **out) {
    int size = 0;
    long start = -1;
    *out = av_mallocz(n + AV_INPUT_BUFFER_PADDING_SIZE);
    for (size_t i = 0; i + 3 < n; i++) {
        if (au[i] != 0 || au[i + 1] != 0 || au[i + 2] != 1) continue;
        size_t at = (i > 0 && au[i - 1] == 0) ? i - 1 : i;
        if (start >= 0) {
            memcpy(*out + size, au + start, at - start);
            size += at - start;
            start = -1;
        }
        int type = au[i + 3] & 31;
        if (type == 7 || type == 8) start = (long)at;
        if (type == 1 || type == 5) break;
        i += 2;
    }
    return size;
}

static void close_segment(void) {
    if (!oc) return;
    av_write_trailer(oc);
    avio_closep(&oc->pb);
    avformat_free_context(oc);
    oc = NULL;
    if (do_fsync) {
        int fd = open(path, O_WRONLY);
        if (fd < 0 || fsync(fd) != 0) {
            perror(path);
            exit(74);
        }
        close(fd);
    }
}

static void open_segment(const uint8_t *idr, size_t n) {
    close_segment();
    snprintf(path, sizeof path, "%s/seg%05d.%s", dir, ++nseg, format);
    if (avformat_alloc_output_context2(&oc, NULL, strcmp(format, "ts") == 0 ? "mpegts" : "mp4", path) < 0) exit(70);
    st = avformat_new_stream(oc, NULL);
    st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
    st->codecpar->codec_id = AV_CODEC_ID_H264;
    st->codecpar->extradata_size = parameter_sets(idr, n, &st->codecpar->extradata);
    st->codecpar->width = 1920;
    st->codecpar->height = 1080;
    st->time_base = (AVRational){1, 90000};
    AVDictionary *options = NULL;
    if (strcmp(format, "mp4") == 0) {
        av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
        av_dict_set(&options, "frag_duration", "1000000", 0);
    }
    if (avio_open(&oc->pb, path, AVIO_FLAG_WRITE) < 0 || avformat_write_header(oc, &options) < 0) {
        fprintf(stderr, "segmux: cannot open %s\n", path);
        exit(73);
    }
    av_dict_free(&options);
    frames_in_segment = 0;
}

static void access_unit(const uint8_t *au, size_t n, int idr) {
    if (idr && (!oc || frames_in_segment >= frames_per_segment)) open_segment(au, n);
    if (!oc) return;  // before the first IDR
    pkt->data = (uint8_t *)au;
    pkt->size = (int)n;
    pkt->stream_index = 0;
    pkt->pts = pkt->dts = av_rescale_q(frame, (AVRational){1, 30}, st->time_base);
    pkt->duration = 3000;
    pkt->flags = idr ? AV_PKT_FLAG_KEY : 0;
    if (av_write_frame(oc, pkt) < 0) {
        fprintf(stderr, "segmux: write failed\n");
        exit(74);
    }
    frame++;
    frames_in_segment++;
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[3], "mp4") != 0 && strcmp(argv[3], "ts") != 0)) {
        fprintf(stderr, "usage: segmux FILE DIR mp4|ts [FRAMES] [--fsync]\n");
        return 64;
    }
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--fsync") == 0) do_fsync = 1;
        else frames_per_segment = atol(argv[i]);
    }
    dir = argv[2];
    format = argv[3];
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 66;
    }
    pkt = av_packet_alloc();
    // buf[au, len): the current access unit and what follows it, scanned up to `scan`.
    size_t len = 0, scan = 0, au = 0;
    int in_vcl = 0, idr = 0, started = 0;
    long aus = 0;
    for (;;) {
        if (au > 0 && len + CHUNK > CAP) {
            memmove(buf, buf + au, len - au);
            len -= au;
            scan -= au;
            au = 0;
        }
        if (len + CHUNK > CAP) {
            fprintf(stderr, "segmux: an access unit longer than %d bytes\n", CAP - CHUNK);
            return 65;
        }
        ssize_t got = read(fd, buf + len, CHUNK);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            perror("read");
            return 74;
        }
        if (got == 0) break;
        len += (size_t)got;
        const uint8_t *p;
        while (scan + 2 < len && (p = memchr(buf + scan, 1, len - scan - 2)) != NULL) {
            size_t i = (size_t)(p - buf);
            scan = i + 1;
            if (i < 2 || buf[i - 1] != 0 || buf[i - 2] != 0) continue;
            size_t nal = (i >= 3 && buf[i - 3] == 0) ? i - 3 : i - 2;
            int type = buf[i + 1] & 31;
            int begins = 0;
            if ((type >= 6 && type <= 9) || (type >= 14 && type <= 18)) begins = in_vcl;
            else if (type == 1 || type == 5) begins = in_vcl && (buf[i + 2] & 0x80);
            if (begins) {
                access_unit(buf + au, nal - au, idr);
                aus++;
                au = nal;
                in_vcl = idr = 0;
            } else if (!started) {
                au = nal;
            }
            started = 1;
            if (type == 1 || type == 5) {
                in_vcl = 1;
                idr |= type == 5;
            }
        }
        if (len >= 2 && scan < len - 2) scan = len - 2;  // no start code before the last two bytes
    }
    if (started && len > au) {
        access_unit(buf + au, len - au, idr);
        aus++;
    }
    close_segment();
    av_packet_free(&pkt);
    printf("aus=%ld segments=%d\n", aus, nseg);
    return 0;
}
