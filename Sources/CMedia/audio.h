#ifndef CMEDIA_AUDIO_H
#define CMEDIA_AUDIO_H
#include "libraries.h"
#include "containers.h"  // av_mallocz, av_opt_set
// Sound for `produce --audio`: PulseAudio capture (pa_simple: PipeWire's pulse server speaks
// the same protocol), libswresample for rate/format conversion and clock-drift correction,
// libavcodec's native AAC encoder.
// Opened by the one loader (libraries.h) the first time audio starts: a run without --audio
// maps none of them (libpulse brings D-Bus and friends; libavcodec a hundred codec libraries).
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/macros.h>
#include <libavutil/opt.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <pulse/context.h>
#include <pulse/error.h>
#include <pulse/introspect.h>
#include <pulse/mainloop.h>
#include <pulse/simple.h>
#include <pulse/version.h>

// libavutil
static inline AVFrame *CMedia_av_frame_alloc(void) { CMEDIA_FN(CMEDIA_AVUTIL, av_frame_alloc); return f_ ? f_() : NULL; }
static inline void CMedia_av_frame_free(AVFrame **frame) { CMEDIA_FN(CMEDIA_AVUTIL, av_frame_free); if (f_) f_(frame); }
static inline int CMedia_av_frame_get_buffer(AVFrame *frame, int align) { CMEDIA_FN(CMEDIA_AVUTIL, av_frame_get_buffer); return f_ ? f_(frame, align) : AVERROR(ENOSYS); }
static inline int CMedia_av_frame_make_writable(AVFrame *frame) { CMEDIA_FN(CMEDIA_AVUTIL, av_frame_make_writable); return f_ ? f_(frame) : AVERROR(ENOSYS); }
static inline void CMedia_av_channel_layout_default(AVChannelLayout *layout, int channels) { CMEDIA_FN(CMEDIA_AVUTIL, av_channel_layout_default); if (f_) f_(layout, channels); }

// libavcodec
static inline const AVCodec *CMedia_avcodec_find_encoder_by_name(const char *name) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_find_encoder_by_name); return f_ ? f_(name) : NULL; }
static inline AVCodecContext *CMedia_avcodec_alloc_context3(const AVCodec *codec) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_alloc_context3); return f_ ? f_(codec) : NULL; }
static inline int CMedia_avcodec_open2(AVCodecContext *ctx, const AVCodec *codec, AVDictionary **options) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_open2); return f_ ? f_(ctx, codec, options) : AVERROR(ENOSYS); }
static inline void CMedia_avcodec_free_context(AVCodecContext **ctx) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_free_context); if (f_) f_(ctx); }
static inline int CMedia_avcodec_send_frame(AVCodecContext *ctx, const AVFrame *frame) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_send_frame); return f_ ? f_(ctx, frame) : AVERROR(ENOSYS); }
static inline int CMedia_avcodec_receive_packet(AVCodecContext *ctx, AVPacket *pkt) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_receive_packet); return f_ ? f_(ctx, pkt) : AVERROR(ENOSYS); }

// libswresample
static inline int CMedia_swr_alloc_set_opts2(SwrContext **ps, const AVChannelLayout *out_layout, enum AVSampleFormat out_fmt, int out_rate,
        const AVChannelLayout *in_layout, enum AVSampleFormat in_fmt, int in_rate, int log_offset, void *log_ctx) {
    CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_alloc_set_opts2);
    return f_ ? f_(ps, out_layout, out_fmt, out_rate, in_layout, in_fmt, in_rate, log_offset, log_ctx) : AVERROR(ENOSYS);
}
static inline int CMedia_swr_init(SwrContext *s) { CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_init); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline void CMedia_swr_free(SwrContext **s) { CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_free); if (f_) f_(s); }
static inline int CMedia_swr_convert(SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count) {
    CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_convert); return f_ ? f_(s, out, out_count, in, in_count) : AVERROR(ENOSYS);
}
static inline int CMedia_swr_set_compensation(SwrContext *s, int delta, int distance) {
    CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_set_compensation); return f_ ? f_(s, delta, distance) : AVERROR(ENOSYS);
}
static inline int64_t CMedia_swr_get_delay(SwrContext *s, int64_t base) { CMEDIA_FN(CMEDIA_SWRESAMPLE, swr_get_delay); return f_ ? f_(s, base) : 0; }

// libpulse-simple and libpulse (pa_strerror)
static inline pa_simple *CMedia_pa_simple_new(const char *server, const char *name, pa_stream_direction_t dir, const char *dev,
        const char *stream_name, const pa_sample_spec *ss, const pa_channel_map *map, const pa_buffer_attr *attr, int *error) {
    CMEDIA_FN(CMEDIA_PULSE_SIMPLE, pa_simple_new);
    if (!f_) { if (error) *error = PA_ERR_NOTSUPPORTED; return NULL; }
    return f_(server, name, dir, dev, stream_name, ss, map, attr, error);
}
static inline int CMedia_pa_simple_read(pa_simple *s, void *data, size_t bytes, int *error) { CMEDIA_FN(CMEDIA_PULSE_SIMPLE, pa_simple_read); return f_ ? f_(s, data, bytes, error) : -1; }
static inline pa_usec_t CMedia_pa_simple_get_latency(pa_simple *s, int *error) { CMEDIA_FN(CMEDIA_PULSE_SIMPLE, pa_simple_get_latency); return f_ ? f_(s, error) : (pa_usec_t)-1; }
static inline int CMedia_pa_simple_flush(pa_simple *s, int *error) { CMEDIA_FN(CMEDIA_PULSE_SIMPLE, pa_simple_flush); return f_ ? f_(s, error) : -1; }
static inline void CMedia_pa_simple_free(pa_simple *s) { CMEDIA_FN(CMEDIA_PULSE_SIMPLE, pa_simple_free); if (f_) f_(s); }
static inline const char *CMedia_pa_strerror(int error) { CMEDIA_FN(CMEDIA_PULSE, pa_strerror); return f_ ? f_(error) : "unknown error"; }

// libpulse's asynchronous API, for the one question pa_simple cannot ask: which sources the
// server has (CMedia_pulse_sources below).
static inline pa_mainloop *CMedia_pa_mainloop_new(void) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_new); return f_ ? f_() : NULL; }
static inline pa_mainloop_api *CMedia_pa_mainloop_get_api(pa_mainloop *m) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_get_api); return f_ ? f_(m) : NULL; }
static inline int CMedia_pa_mainloop_prepare(pa_mainloop *m, int timeout) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_prepare); return f_ ? f_(m, timeout) : -1; }
static inline int CMedia_pa_mainloop_poll(pa_mainloop *m) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_poll); return f_ ? f_(m) : -1; }
static inline int CMedia_pa_mainloop_dispatch(pa_mainloop *m) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_dispatch); return f_ ? f_(m) : -1; }
static inline void CMedia_pa_mainloop_free(pa_mainloop *m) { CMEDIA_FN(CMEDIA_PULSE, pa_mainloop_free); if (f_) f_(m); }
static inline pa_context *CMedia_pa_context_new(pa_mainloop_api *api, const char *name) { CMEDIA_FN(CMEDIA_PULSE, pa_context_new); return f_ ? f_(api, name) : NULL; }
static inline int CMedia_pa_context_connect(pa_context *c, const char *server, pa_context_flags_t flags, const pa_spawn_api *api) {
    CMEDIA_FN(CMEDIA_PULSE, pa_context_connect); return f_ ? f_(c, server, flags, api) : -1;
}
static inline pa_context_state_t CMedia_pa_context_get_state(pa_context *c) { CMEDIA_FN(CMEDIA_PULSE, pa_context_get_state); return f_ ? f_(c) : PA_CONTEXT_FAILED; }
static inline int CMedia_pa_context_errno(pa_context *c) { CMEDIA_FN(CMEDIA_PULSE, pa_context_errno); return f_ ? f_(c) : PA_ERR_NOTSUPPORTED; }
static inline void CMedia_pa_context_disconnect(pa_context *c) { CMEDIA_FN(CMEDIA_PULSE, pa_context_disconnect); if (f_) f_(c); }
static inline void CMedia_pa_context_unref(pa_context *c) { CMEDIA_FN(CMEDIA_PULSE, pa_context_unref); if (f_) f_(c); }
static inline pa_operation *CMedia_pa_context_get_server_info(pa_context *c, pa_server_info_cb_t cb, void *userdata) {
    CMEDIA_FN(CMEDIA_PULSE, pa_context_get_server_info); return f_ ? f_(c, cb, userdata) : NULL;
}
static inline pa_operation *CMedia_pa_context_get_source_info_list(pa_context *c, pa_source_info_cb_t cb, void *userdata) {
    CMEDIA_FN(CMEDIA_PULSE, pa_context_get_source_info_list); return f_ ? f_(c, cb, userdata) : NULL;
}
static inline void CMedia_pa_operation_unref(pa_operation *o) { CMEDIA_FN(CMEDIA_PULSE, pa_operation_unref); if (f_) f_(o); }

// Names the calling thread (top, /proc/PID/task/*/comm), at most 15 characters: prctl is
// variadic, which Swift cannot call.
static inline void CMedia_name_thread(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

// Macros and enum values Swift does not import as such.
static inline int CMedia_stream_record(void) { return PA_STREAM_RECORD; }
static inline int CMedia_format_float32le(void) { return PA_SAMPLE_FLOAT32LE; }
static inline int CMedia_profile_aac_low(void) { return FF_PROFILE_AAC_LOW; }

// 1 when the libraries `mask` names (1 << CMEDIA_...) open and have every function this file
// wraps; else 0 with dlerror's text or the missing symbol in `why`.
static inline int CMedia_load_audio(int mask, char *why, int size) {
    static const CMedia_symbol needed[] = {
        { CMEDIA_AVUTIL, "av_frame_alloc" }, { CMEDIA_AVUTIL, "av_frame_free" }, { CMEDIA_AVUTIL, "av_frame_get_buffer" },
        { CMEDIA_AVUTIL, "av_frame_make_writable" }, { CMEDIA_AVUTIL, "av_channel_layout_default" },
        { CMEDIA_AVUTIL, "av_log_set_level" }, { CMEDIA_AVUTIL, "av_strerror" },
        { CMEDIA_AVCODEC, "avcodec_find_encoder_by_name" }, { CMEDIA_AVCODEC, "avcodec_alloc_context3" },
        { CMEDIA_AVCODEC, "avcodec_open2" }, { CMEDIA_AVCODEC, "avcodec_free_context" }, { CMEDIA_AVCODEC, "avcodec_send_frame" },
        { CMEDIA_AVCODEC, "avcodec_receive_packet" }, { CMEDIA_AVCODEC, "av_packet_alloc" }, { CMEDIA_AVCODEC, "av_packet_free" },
        { CMEDIA_AVCODEC, "av_packet_unref" },
        { CMEDIA_SWRESAMPLE, "swr_alloc_set_opts2" }, { CMEDIA_SWRESAMPLE, "swr_init" }, { CMEDIA_SWRESAMPLE, "swr_free" },
        { CMEDIA_SWRESAMPLE, "swr_convert" }, { CMEDIA_SWRESAMPLE, "swr_set_compensation" }, { CMEDIA_SWRESAMPLE, "swr_get_delay" },
        { CMEDIA_PULSE, "pa_strerror" }, { CMEDIA_PULSE, "pa_mainloop_new" }, { CMEDIA_PULSE, "pa_mainloop_get_api" },
        { CMEDIA_PULSE, "pa_mainloop_prepare" }, { CMEDIA_PULSE, "pa_mainloop_poll" }, { CMEDIA_PULSE, "pa_mainloop_dispatch" },
        { CMEDIA_PULSE, "pa_mainloop_free" }, { CMEDIA_PULSE, "pa_context_new" }, { CMEDIA_PULSE, "pa_context_connect" },
        { CMEDIA_PULSE, "pa_context_get_state" }, { CMEDIA_PULSE, "pa_context_errno" }, { CMEDIA_PULSE, "pa_context_disconnect" },
        { CMEDIA_PULSE, "pa_context_unref" }, { CMEDIA_PULSE, "pa_context_get_server_info" },
        { CMEDIA_PULSE, "pa_context_get_source_info_list" }, { CMEDIA_PULSE, "pa_operation_unref" },
        { CMEDIA_PULSE_SIMPLE, "pa_simple_new" }, { CMEDIA_PULSE_SIMPLE, "pa_simple_read" }, { CMEDIA_PULSE_SIMPLE, "pa_simple_get_latency" },
        { CMEDIA_PULSE_SIMPLE, "pa_simple_free" }, { CMEDIA_PULSE_SIMPLE, "pa_simple_flush" },
    };
    return CMedia_require(mask, needed, sizeof needed / sizeof needed[0], why, size);
}

// Giving back what loading alone touched. Loading libavcodec maps ~40 libraries (Debian's
// libavcodec links librsvg, glib, ICU, x265, aom, rav1e...), all built BIND_NOW: the loader
// reads their symbol tables, hash tables and relocations and runs their constructors, which
// faults in some 14 MiB of clean file pages that sound never uses again. Once the encoder is
// open, MADV_PAGEOUT (Linux >= 5.4) on exactly the file-backed mappings loading added asks
// the kernel to reclaim those clean pages now: a page used again faults back in and counts
// again. Dirty private pages (the relocated data) cannot be reclaimed without swap and stay.
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

// The start addresses of the file-backed mappings of this process, sorted; *count of them.
// NULL when /proc/self/maps cannot be read. (The caller keeps it: a static here would be one
// per Swift file that inlines these functions.)
static inline unsigned long *CMedia_file_mappings(size_t *count) {
    *count = 0;
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return NULL;
    size_t capacity = 1024;
    unsigned long *starts = (unsigned long *)malloc(capacity * sizeof *starts);
    char line[4096];
    while (starts && fgets(line, sizeof line, maps)) {
        unsigned long start, end, inode;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &start, &end, &inode) != 3 || inode == 0) continue;
        if (*count == capacity) {
            capacity *= 2;
            unsigned long *grown = (unsigned long *)realloc(starts, capacity * sizeof *starts);
            if (!grown) { free(starts); starts = NULL; break; }
            starts = grown;
        }
        starts[(*count)++] = start;  // /proc/self/maps lists mappings in address order
    }
    fclose(maps);
    return starts;
}

// On every file-backed mapping whose start is not in `before` (CMedia_file_mappings taken
// before loading, `count` of them; freed here): MADV_PAGEOUT,
// which reclaims the clean pages no other process maps (Linux >= 5.4; EINVAL before: nothing
// lost but the saving). The kernel skips the page-cache folios that other processes map or
// that straddle the loader's segments, so then, on the mappings that cannot be written
// (code, read-only data) and hold no private copy of a page ("Anonymous: 0 kB" in smaps:
// nothing there was ever written, and nothing can be now), MADV_DONTNEED unmaps what is
// left: a page used again is read back from the page cache, identical. Writable mappings
// and relocated read-only data (their private copies would be lost) get MADV_PAGEOUT only.
// Returns the bytes unmapped with MADV_DONTNEED plus those advised with MADV_PAGEOUT.
static inline unsigned long CMedia_page_out_loaded(unsigned long *before, size_t count) {
    if (!before) return 0;
    unsigned long advised = 0;
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps) {
        char line[4096];
        unsigned long start = 0, end = 0;
        int candidate = 0, writable = 0;
        while (fgets(line, sizeof line, smaps)) {
            unsigned long s, e, inode;
            char perms[8];
            if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &s, &e, perms, &inode) == 4) {
                start = s;
                end = e;
                writable = perms[1] == 'w';
                size_t low = 0, high = count;  // binary search in the sorted snapshot
                while (low < high) {
                    size_t mid = (low + high) / 2;
                    if (before[mid] < start) low = mid + 1; else high = mid;
                }
                candidate = inode != 0 && !(low < count && before[low] == start);
                continue;
            }
            unsigned long anonymous;
            if (!candidate || sscanf(line, "Anonymous: %lu kB", &anonymous) != 1) continue;
            candidate = 0;
            if (madvise((void *)start, end - start, MADV_PAGEOUT) == 0) advised += end - start;
            if (!writable && anonymous == 0 && madvise((void *)start, end - start, MADV_DONTNEED) == 0) advised += end - start;
        }
        fclose(smaps);
    }
    free(before);
    return advised;
}

// The native AAC encoder for 48 kHz (or `rate`) interleaved-to-planar float, `channels`
// channels, `bitrate` bits per second; NULL with an AVERROR in *error when it cannot open.
static inline AVCodecContext *CMedia_open_aac(int rate, int channels, int64_t bitrate, int *error) {
    const AVCodec *codec = CMedia_avcodec_find_encoder_by_name("aac");
    if (!codec) { *error = AVERROR_ENCODER_NOT_FOUND; return NULL; }
    AVCodecContext *ctx = CMedia_avcodec_alloc_context3(codec);
    if (!ctx) { *error = AVERROR(ENOMEM); return NULL; }
    ctx->sample_fmt = AV_SAMPLE_FMT_FLTP;
    ctx->sample_rate = rate;
    CMedia_av_channel_layout_default(&ctx->ch_layout, channels);
    ctx->bit_rate = bitrate;
    ctx->profile = FF_PROFILE_AAC_LOW;
    ctx->time_base.num = 1;
    ctx->time_base.den = rate;
    // Extradata (the AudioSpecificConfig) out of band: the packets stay raw, no ADTS.
    ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int r = CMedia_avcodec_open2(ctx, codec, NULL);
    if (r < 0) { *error = r; CMedia_avcodec_free_context(&ctx); return NULL; }
    *error = 0;
    return ctx;
}

// One planar float frame of `samples` samples for `ctx`, its buffers allocated.
static inline AVFrame *CMedia_audio_frame(const AVCodecContext *ctx, int samples) {
    AVFrame *frame = CMedia_av_frame_alloc();
    if (!frame) return NULL;
    frame->format = ctx->sample_fmt;
    frame->nb_samples = samples;
    frame->sample_rate = ctx->sample_rate;
    CMedia_av_channel_layout_default(&frame->ch_layout, ctx->ch_layout.nb_channels);
    if (CMedia_av_frame_get_buffer(frame, 0) < 0) { CMedia_av_frame_free(&frame); return NULL; }
    return frame;
}

// A resampler from interleaved `in_fmt` at `in_rate` with `in_channels` to interleaved float
// stereo (or `out_channels`) at `out_rate`; NULL with the AVERROR in *error.
static inline SwrContext *CMedia_resampler(int in_fmt, int in_rate, int in_channels, int out_rate, int out_channels, int *error) {
    AVChannelLayout in_layout, out_layout;
    CMedia_av_channel_layout_default(&in_layout, in_channels);
    CMedia_av_channel_layout_default(&out_layout, out_channels);
    SwrContext *s = NULL;
    int r = CMedia_swr_alloc_set_opts2(&s, &out_layout, AV_SAMPLE_FMT_FLT, out_rate, &in_layout, (enum AVSampleFormat)in_fmt, in_rate, 0, NULL);
    if (r < 0) { *error = r; return NULL; }
    r = CMedia_swr_init(s);
    if (r < 0) { *error = r; CMedia_swr_free(&s); return NULL; }
    *error = 0;
    return s;
}

// swr_convert for one interleaved input buffer and one interleaved output buffer.
static inline int CMedia_swr_convert_interleaved(SwrContext *s, void *out, int out_count, const void *in, int in_count) {
    uint8_t *outs[1] = { (uint8_t *)out };
    const uint8_t *ins[1] = { (const uint8_t *)in };
    return CMedia_swr_convert(s, outs, out_count, in ? ins : NULL, in_count);
}

// Decoding, and the Opus encoder: what turns the AAC track into Opus for WebRTC viewers
// (Opus is the one codec every browser takes over WebRTC; AAC is what containers take).
static inline const AVCodec *CMedia_avcodec_find_decoder_by_name(const char *name) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_find_decoder_by_name); return f_ ? f_(name) : NULL; }
static inline int CMedia_avcodec_send_packet(AVCodecContext *ctx, const AVPacket *pkt) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_send_packet); return f_ ? f_(ctx, pkt) : AVERROR(ENOSYS); }
static inline int CMedia_avcodec_receive_frame(AVCodecContext *ctx, AVFrame *frame) { CMEDIA_FN(CMEDIA_AVCODEC, avcodec_receive_frame); return f_ ? f_(ctx, frame) : AVERROR(ENOSYS); }
static inline void CMedia_av_frame_unref(AVFrame *frame) { CMEDIA_FN(CMEDIA_AVUTIL, av_frame_unref); if (f_) f_(frame); }

// A decoder by name (aac, opus) for `channels` at `rate` with the codec's configuration
// (AudioSpecificConfig for AAC; none for Opus); NULL with the AVERROR in *error.
static inline AVCodecContext *CMedia_open_decoder(const char *name, int rate, int channels, const uint8_t *config, int size, int *error) {
    const AVCodec *codec = CMedia_avcodec_find_decoder_by_name(name);
    if (!codec) { *error = AVERROR_DECODER_NOT_FOUND; return NULL; }
    AVCodecContext *ctx = CMedia_avcodec_alloc_context3(codec);
    if (!ctx) { *error = AVERROR(ENOMEM); return NULL; }
    ctx->sample_rate = rate;
    CMedia_av_channel_layout_default(&ctx->ch_layout, channels);
    if (size > 0) {
        ctx->extradata = CMedia_av_mallocz((size_t)size + AV_INPUT_BUFFER_PADDING_SIZE);
        if (!ctx->extradata) { *error = AVERROR(ENOMEM); CMedia_avcodec_free_context(&ctx); return NULL; }
        memcpy(ctx->extradata, config, (size_t)size);
        ctx->extradata_size = size;
    }
    int r = CMedia_avcodec_open2(ctx, codec, NULL);
    if (r < 0) { *error = r; CMedia_avcodec_free_context(&ctx); return NULL; }
    *error = 0;
    return ctx;
}

// libopus through libavcodec: 48 kHz interleaved float, 20 ms frames (960 samples), tuned for
// low delay (what WebRTC receivers expect: opus/48000/2).
static inline AVCodecContext *CMedia_open_opus(int channels, int64_t bitrate, int *error) {
    const AVCodec *codec = CMedia_avcodec_find_encoder_by_name("libopus");
    if (!codec) { *error = AVERROR_ENCODER_NOT_FOUND; return NULL; }
    AVCodecContext *ctx = CMedia_avcodec_alloc_context3(codec);
    if (!ctx) { *error = AVERROR(ENOMEM); return NULL; }
    ctx->sample_fmt = AV_SAMPLE_FMT_FLT;
    ctx->sample_rate = 48000;
    CMedia_av_channel_layout_default(&ctx->ch_layout, channels);
    ctx->bit_rate = bitrate;
    ctx->time_base.num = 1;
    ctx->time_base.den = 48000;
    CMedia_av_opt_set(ctx->priv_data, "application", "lowdelay", 0);
    CMedia_av_opt_set(ctx->priv_data, "frame_duration", "20", 0);
    int r = CMedia_avcodec_open2(ctx, codec, NULL);
    if (r < 0) { *error = r; CMedia_avcodec_free_context(&ctx); return NULL; }
    *error = 0;
    return ctx;
}

// swr_convert from a decoded frame's planes (planar or not) into one interleaved buffer.
static inline int CMedia_swr_convert_frame_planes(SwrContext *s, void *out, int out_count, const AVFrame *frame) {
    uint8_t *outs[1] = { (uint8_t *)out };
    return CMedia_swr_convert(s, outs, out_count, frame ? (const uint8_t **)frame->extended_data : NULL, frame ? frame->nb_samples : 0);
}

// 1 when the decoding and Opus functions above are there (after CMedia_load_audio).
static inline int CMedia_load_transcoding(char *why, int size) {
    static const CMedia_symbol needed[] = {
        { CMEDIA_AVCODEC, "avcodec_find_decoder_by_name" }, { CMEDIA_AVCODEC, "avcodec_send_packet" },
        { CMEDIA_AVCODEC, "avcodec_receive_frame" }, { CMEDIA_AVUTIL, "av_frame_unref" }, { CMEDIA_AVUTIL, "av_mallocz" },
        { CMEDIA_AVUTIL, "av_opt_set" },
    };
    return CMedia_require(1 << CMEDIA_AVUTIL | 1 << CMEDIA_AVCODEC, needed, sizeof needed / sizeof needed[0], why, size);
}

static inline int CMedia_sample_fmt_s16(void) { return AV_SAMPLE_FMT_S16; }
static inline int CMedia_sample_fmt_s32(void) { return AV_SAMPLE_FMT_S32; }
static inline int CMedia_sample_fmt_flt(void) { return AV_SAMPLE_FMT_FLT; }
static inline int CMedia_sample_fmt_u8(void) { return AV_SAMPLE_FMT_U8; }

// A record stream of float32le at `rate`/`channels` from `device` (NULL: the default source)
// of `server` (NULL: $PULSE_SERVER or the default), fragments of `fragment_bytes` so that
// each read returns about that much.
static inline pa_simple *CMedia_record(const char *server, const char *device, int rate, int channels, uint32_t fragment_bytes, int *error) {
    pa_sample_spec spec;
    spec.format = PA_SAMPLE_FLOAT32LE;
    spec.rate = (uint32_t)rate;
    spec.channels = (uint8_t)channels;
    pa_buffer_attr attr;
    attr.maxlength = (uint32_t)-1;
    attr.tlength = (uint32_t)-1;
    attr.prebuf = (uint32_t)-1;
    attr.minreq = (uint32_t)-1;
    attr.fragsize = fragment_bytes;
    return CMedia_pa_simple_new(server, "nalcast", PA_STREAM_RECORD, device, "capture", &spec, NULL, &attr, error);
}

// The sources of a PulseAudio server, as text into `out` (`size` bytes, NUL-terminated): a
// line "d NAME" for the default source, then one line per source, "m NAME" for a sink's
// monitor and "s NAME" for any other (a capture device, a filter). 0 on success; else -1
// with a PulseAudio error code in `*error`. Gives up after 5 s (a server that accepts and
// never answers). Lines that do not fit are left out.
struct CMedia_source_list { char *text; size_t used, size; int pending; };

static inline void CMedia_source_line(struct CMedia_source_list *list, char kind, const char *name) {
    size_t length = strlen(name);
    if (list->used + length + 3 >= list->size) return;
    list->text[list->used++] = kind;
    list->text[list->used++] = ' ';
    memcpy(list->text + list->used, name, length);
    list->used += length;
    list->text[list->used++] = '\n';
    list->text[list->used] = 0;
}

static inline void CMedia_server_info(pa_context *c, const pa_server_info *info, void *userdata) {
    (void)c;
    struct CMedia_source_list *list = userdata;
    if (info && info->default_source_name) CMedia_source_line(list, 'd', info->default_source_name);
    list->pending--;
}

static inline void CMedia_source_info(pa_context *c, const pa_source_info *info, int eol, void *userdata) {
    (void)c;
    struct CMedia_source_list *list = userdata;
    if (eol) { list->pending--; return; }
    if (info && info->name) CMedia_source_line(list, info->monitor_of_sink != PA_INVALID_INDEX ? 'm' : 's', info->name);
}

// One turn of the loop, waiting at most 100 ms; < 0 when the loop failed or `deadline`
// (CLOCK_MONOTONIC ns) has passed.
static inline int CMedia_pulse_turn(pa_mainloop *loop, int64_t deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec > deadline) return -1;
    if (CMedia_pa_mainloop_prepare(loop, 100000) < 0 || CMedia_pa_mainloop_poll(loop) < 0) return -1;
    return CMedia_pa_mainloop_dispatch(loop);
}

static inline int CMedia_pulse_sources(const char *server, char *out, int size, int *error) {
    struct CMedia_source_list list = { out, 0, (size_t)size, 2 };
    if (size > 0) out[0] = 0;
    *error = PA_ERR_INTERNAL;
    pa_mainloop *loop = CMedia_pa_mainloop_new();
    if (!loop) return -1;
    pa_context *context = CMedia_pa_context_new(CMedia_pa_mainloop_get_api(loop), "nalcast");
    int result = -1;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int64_t deadline = (int64_t)start.tv_sec * 1000000000 + start.tv_nsec + 5000000000LL;
    if (context && CMedia_pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, NULL) >= 0) {
        while (CMedia_pa_context_get_state(context) != PA_CONTEXT_READY && PA_CONTEXT_IS_GOOD(CMedia_pa_context_get_state(context)))
            if (CMedia_pulse_turn(loop, deadline) < 0) break;
        if (CMedia_pa_context_get_state(context) == PA_CONTEXT_READY) {
            pa_operation *info = CMedia_pa_context_get_server_info(context, CMedia_server_info, &list);
            pa_operation *sources = CMedia_pa_context_get_source_info_list(context, CMedia_source_info, &list);
            if (!info) list.pending--;
            if (!sources) list.pending--;
            while (list.pending > 0 && PA_CONTEXT_IS_GOOD(CMedia_pa_context_get_state(context)))
                if (CMedia_pulse_turn(loop, deadline) < 0) break;
            if (info) CMedia_pa_operation_unref(info);
            if (sources) CMedia_pa_operation_unref(sources);
            if (info && sources && list.pending == 0) result = 0;
        }
        *error = result == 0 ? 0 : CMedia_pa_context_errno(context);
        if (result < 0 && *error == PA_OK) *error = PA_ERR_TIMEOUT;
        CMedia_pa_context_disconnect(context);
    } else if (context) {
        *error = CMedia_pa_context_errno(context);
    }
    if (context) CMedia_pa_context_unref(context);
    CMedia_pa_mainloop_free(loop);
    return result;
}
#endif
