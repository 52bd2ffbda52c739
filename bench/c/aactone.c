// aactone: the floor of sound for any libavcodec user. The tone nalcast's `--audio tone`
// makes (100 ms of 1 kHz at -6 dBFS from each whole second of CLOCK_REALTIME) encoded in real
// time by libavcodec's native AAC encoder, 48 kHz stereo AAC-LC 128 kb/s, packets counted and
// dropped: no capture, no resampler, no video, no output.
//
//     aactone SECONDS
//
// Paced like nalcast's audio thread: each 1024-sample frame is encoded once its last sample's
// time has passed (clock_nanosleep on CLOCK_REALTIME, absolute). Prints `packets=N bytes=B`.
// Build: gcc -O2 -Wall -o aactone c/aactone.c -lavcodec -lavutil -lm
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/log.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RATE 48000
#define CHANNELS 2

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void drain(AVCodecContext *ctx, AVPacket *pkt, long *packets, long *bytes) {
    while (avcodec_receive_packet(ctx, pkt) == 0) {
        (*packets)++;
        *bytes += pkt->size;
        av_packet_unref(pkt);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: aactone SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    av_log_set_level(AV_LOG_ERROR);  // not the encoder's closing Qavg notice
    const AVCodec *codec = avcodec_find_encoder_by_name("aac");
    AVCodecContext *ctx = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!ctx) {
        fprintf(stderr, "aactone: no AAC encoder\n");
        return 1;
    }
    ctx->sample_fmt = AV_SAMPLE_FMT_FLTP;
    ctx->sample_rate = RATE;
    av_channel_layout_default(&ctx->ch_layout, CHANNELS);
    ctx->bit_rate = 128000;
    ctx->profile = FF_PROFILE_AAC_LOW;
    ctx->time_base = (AVRational){1, RATE};
    ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (avcodec_open2(ctx, codec, NULL) < 0) {
        fprintf(stderr, "aactone: cannot open the AAC encoder\n");
        return 1;
    }
    AVFrame *frame = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    frame->format = ctx->sample_fmt;
    frame->nb_samples = ctx->frame_size;
    frame->sample_rate = RATE;
    av_channel_layout_default(&frame->ch_layout, CHANNELS);
    if (av_frame_get_buffer(frame, 0) < 0) {
        fprintf(stderr, "aactone: no frame buffer\n");
        return 1;
    }
    int64_t start = now_ns();
    int64_t total = (int64_t)(seconds * RATE);
    long packets = 0, bytes = 0;
    for (int64_t position = 0; position + ctx->frame_size <= total; position += ctx->frame_size) {
        int64_t due = start + (position + ctx->frame_size) * 1000000000 / RATE;
        struct timespec t = {due / 1000000000, due % 1000000000};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, NULL) != 0) {}
        av_frame_make_writable(frame);
        for (int i = 0; i < ctx->frame_size; i++) {
            int64_t phase = (start + (position + i) * 1000000000 / RATE) % 1000000000;
            float value = phase < 100000000 ? 0.501187f * (float)sin(2 * M_PI * 1000.0 * (double)phase / 1e9) : 0;
            for (int c = 0; c < CHANNELS; c++) ((float *)frame->data[c])[i] = value;
        }
        frame->pts = position;
        if (avcodec_send_frame(ctx, frame) < 0) {
            fprintf(stderr, "aactone: encoding failed\n");
            return 1;
        }
        drain(ctx, pkt, &packets, &bytes);
    }
    avcodec_send_frame(ctx, NULL);
    drain(ctx, pkt, &packets, &bytes);
    printf("packets=%ld bytes=%ld\n", packets, bytes);
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&ctx);
    return 0;
}
