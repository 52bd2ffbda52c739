#ifndef CAUDIO_SHIM_H
#define CAUDIO_SHIM_H
// Sound for `produce --audio`: PulseAudio capture (pa_simple: PipeWire's pulse server speaks
// the same protocol), libswresample for rate/format conversion and clock-drift correction,
// libavcodec's native AAC encoder.
//
// As for the container libraries (Sources/CAVFormat/shim.h), nothing here is linked: each
// library is opened with dlopen the first time audio starts, so a run without --audio maps
// none of them (libpulse brings dbus and friends; libavcodec a hundred codec libraries).
// Only struct layouts and constants come from the headers; the SONAMEs come from the
// headers' major versions.
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

#define CAUDIO_SONAME_avutil "libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR)
#define CAUDIO_SONAME_avcodec "libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR)
#define CAUDIO_SONAME_swresample "libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR)
// libpulse's SONAME major has been 0 since its first release; pulse/version.h does not name it.
#define CAUDIO_SONAME_pulse "libpulse.so.0"
#define CAUDIO_SONAME_pulse_simple "libpulse-simple.so.0"

enum { CAUDIO_AVUTIL = 0, CAUDIO_AVCODEC = 1, CAUDIO_SWRESAMPLE = 2, CAUDIO_PULSE = 3, CAUDIO_PULSE_SIMPLE = 4, CAUDIO_LIBRARIES = 5 };

static inline const char *CAudio_soname(int which) {
    static const char *const names[CAUDIO_LIBRARIES] = {
        CAUDIO_SONAME_avutil, CAUDIO_SONAME_avcodec, CAUDIO_SONAME_swresample, CAUDIO_SONAME_pulse, CAUDIO_SONAME_pulse_simple };
    return which >= 0 && which < CAUDIO_LIBRARIES ? names[which] : "";
}

// The handle of one library, opened on first use; NULL when it cannot be opened. Racing
// threads may both call dlopen, which hands back the same handle (counted twice: harmless).
static inline void *CAudio_library(int which) {
    static void *handles[CAUDIO_LIBRARIES];
    static int tried[CAUDIO_LIBRARIES];
    if (__atomic_load_n(&tried[which], __ATOMIC_ACQUIRE)) return __atomic_load_n(&handles[which], __ATOMIC_RELAXED);
    void *handle = dlopen(CAudio_soname(which), RTLD_NOW | RTLD_LOCAL);
    __atomic_store_n(&handles[which], handle, __ATOMIC_RELAXED);
    __atomic_store_n(&tried[which], 1, __ATOMIC_RELEASE);
    return handle;
}

#define CAUDIO_FN(lib, name) \
    static __typeof__(&name) fn_ = NULL; \
    if (!__atomic_load_n(&fn_, __ATOMIC_ACQUIRE)) { \
        void *h_ = CAudio_library(lib); \
        __atomic_store_n(&fn_, h_ ? (__typeof__(&name))dlsym(h_, #name) : NULL, __ATOMIC_RELEASE); \
    } \
    __typeof__(&name) f_ = __atomic_load_n(&fn_, __ATOMIC_ACQUIRE)

// libavutil
static inline AVFrame *CAudio_av_frame_alloc(void) { CAUDIO_FN(CAUDIO_AVUTIL, av_frame_alloc); return f_ ? f_() : NULL; }
static inline void CAudio_av_frame_free(AVFrame **frame) { CAUDIO_FN(CAUDIO_AVUTIL, av_frame_free); if (f_) f_(frame); }
static inline int CAudio_av_frame_get_buffer(AVFrame *frame, int align) { CAUDIO_FN(CAUDIO_AVUTIL, av_frame_get_buffer); return f_ ? f_(frame, align) : AVERROR(ENOSYS); }
static inline int CAudio_av_frame_make_writable(AVFrame *frame) { CAUDIO_FN(CAUDIO_AVUTIL, av_frame_make_writable); return f_ ? f_(frame) : AVERROR(ENOSYS); }
static inline void CAudio_av_channel_layout_default(AVChannelLayout *layout, int channels) { CAUDIO_FN(CAUDIO_AVUTIL, av_channel_layout_default); if (f_) f_(layout, channels); }
static inline void CAudio_av_log_set_level(int level) { CAUDIO_FN(CAUDIO_AVUTIL, av_log_set_level); if (f_) f_(level); }
static inline int CAudio_av_strerror(int errnum, char *buf, size_t size) {
    CAUDIO_FN(CAUDIO_AVUTIL, av_strerror);
    if (f_) return f_(errnum, buf, size);
    if (size > 0) snprintf(buf, size, "error %d", errnum);
    return 0;
}

// libavcodec
static inline const AVCodec *CAudio_avcodec_find_encoder_by_name(const char *name) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_find_encoder_by_name); return f_ ? f_(name) : NULL; }
static inline AVCodecContext *CAudio_avcodec_alloc_context3(const AVCodec *codec) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_alloc_context3); return f_ ? f_(codec) : NULL; }
static inline int CAudio_avcodec_open2(AVCodecContext *ctx, const AVCodec *codec, AVDictionary **options) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_open2); return f_ ? f_(ctx, codec, options) : AVERROR(ENOSYS); }
static inline void CAudio_avcodec_free_context(AVCodecContext **ctx) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_free_context); if (f_) f_(ctx); }
static inline int CAudio_avcodec_send_frame(AVCodecContext *ctx, const AVFrame *frame) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_send_frame); return f_ ? f_(ctx, frame) : AVERROR(ENOSYS); }
static inline int CAudio_avcodec_receive_packet(AVCodecContext *ctx, AVPacket *pkt) { CAUDIO_FN(CAUDIO_AVCODEC, avcodec_receive_packet); return f_ ? f_(ctx, pkt) : AVERROR(ENOSYS); }
static inline AVPacket *CAudio_av_packet_alloc(void) { CAUDIO_FN(CAUDIO_AVCODEC, av_packet_alloc); return f_ ? f_() : NULL; }
static inline void CAudio_av_packet_free(AVPacket **pkt) { CAUDIO_FN(CAUDIO_AVCODEC, av_packet_free); if (f_) f_(pkt); }
static inline void CAudio_av_packet_unref(AVPacket *pkt) { CAUDIO_FN(CAUDIO_AVCODEC, av_packet_unref); if (f_) f_(pkt); }

// libswresample
static inline int CAudio_swr_alloc_set_opts2(SwrContext **ps, const AVChannelLayout *out_layout, enum AVSampleFormat out_fmt, int out_rate,
        const AVChannelLayout *in_layout, enum AVSampleFormat in_fmt, int in_rate, int log_offset, void *log_ctx) {
    CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_alloc_set_opts2);
    return f_ ? f_(ps, out_layout, out_fmt, out_rate, in_layout, in_fmt, in_rate, log_offset, log_ctx) : AVERROR(ENOSYS);
}
static inline int CAudio_swr_init(SwrContext *s) { CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_init); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline void CAudio_swr_free(SwrContext **s) { CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_free); if (f_) f_(s); }
static inline int CAudio_swr_convert(SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count) {
    CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_convert); return f_ ? f_(s, out, out_count, in, in_count) : AVERROR(ENOSYS);
}
static inline int CAudio_swr_set_compensation(SwrContext *s, int delta, int distance) {
    CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_set_compensation); return f_ ? f_(s, delta, distance) : AVERROR(ENOSYS);
}
static inline int64_t CAudio_swr_get_delay(SwrContext *s, int64_t base) { CAUDIO_FN(CAUDIO_SWRESAMPLE, swr_get_delay); return f_ ? f_(s, base) : 0; }

// libpulse-simple and libpulse (pa_strerror)
static inline pa_simple *CAudio_pa_simple_new(const char *server, const char *name, pa_stream_direction_t dir, const char *dev,
        const char *stream_name, const pa_sample_spec *ss, const pa_channel_map *map, const pa_buffer_attr *attr, int *error) {
    CAUDIO_FN(CAUDIO_PULSE_SIMPLE, pa_simple_new);
    if (!f_) { if (error) *error = PA_ERR_NOTSUPPORTED; return NULL; }
    return f_(server, name, dir, dev, stream_name, ss, map, attr, error);
}
static inline int CAudio_pa_simple_read(pa_simple *s, void *data, size_t bytes, int *error) { CAUDIO_FN(CAUDIO_PULSE_SIMPLE, pa_simple_read); return f_ ? f_(s, data, bytes, error) : -1; }
static inline pa_usec_t CAudio_pa_simple_get_latency(pa_simple *s, int *error) { CAUDIO_FN(CAUDIO_PULSE_SIMPLE, pa_simple_get_latency); return f_ ? f_(s, error) : (pa_usec_t)-1; }
static inline int CAudio_pa_simple_flush(pa_simple *s, int *error) { CAUDIO_FN(CAUDIO_PULSE_SIMPLE, pa_simple_flush); return f_ ? f_(s, error) : -1; }
static inline void CAudio_pa_simple_free(pa_simple *s) { CAUDIO_FN(CAUDIO_PULSE_SIMPLE, pa_simple_free); if (f_) f_(s); }
static inline const char *CAudio_pa_strerror(int error) { CAUDIO_FN(CAUDIO_PULSE, pa_strerror); return f_ ? f_(error) : "unknown error"; }

// libpulse's asynchronous API, for the one question pa_simple cannot ask: which sources the
// server has (CAudio_pulse_sources below).
static inline pa_mainloop *CAudio_pa_mainloop_new(void) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_new); return f_ ? f_() : NULL; }
static inline pa_mainloop_api *CAudio_pa_mainloop_get_api(pa_mainloop *m) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_get_api); return f_ ? f_(m) : NULL; }
static inline int CAudio_pa_mainloop_prepare(pa_mainloop *m, int timeout) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_prepare); return f_ ? f_(m, timeout) : -1; }
static inline int CAudio_pa_mainloop_poll(pa_mainloop *m) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_poll); return f_ ? f_(m) : -1; }
static inline int CAudio_pa_mainloop_dispatch(pa_mainloop *m) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_dispatch); return f_ ? f_(m) : -1; }
static inline void CAudio_pa_mainloop_free(pa_mainloop *m) { CAUDIO_FN(CAUDIO_PULSE, pa_mainloop_free); if (f_) f_(m); }
static inline pa_context *CAudio_pa_context_new(pa_mainloop_api *api, const char *name) { CAUDIO_FN(CAUDIO_PULSE, pa_context_new); return f_ ? f_(api, name) : NULL; }
static inline int CAudio_pa_context_connect(pa_context *c, const char *server, pa_context_flags_t flags, const pa_spawn_api *api) {
    CAUDIO_FN(CAUDIO_PULSE, pa_context_connect); return f_ ? f_(c, server, flags, api) : -1;
}
static inline pa_context_state_t CAudio_pa_context_get_state(pa_context *c) { CAUDIO_FN(CAUDIO_PULSE, pa_context_get_state); return f_ ? f_(c) : PA_CONTEXT_FAILED; }
static inline int CAudio_pa_context_errno(pa_context *c) { CAUDIO_FN(CAUDIO_PULSE, pa_context_errno); return f_ ? f_(c) : PA_ERR_NOTSUPPORTED; }
static inline void CAudio_pa_context_disconnect(pa_context *c) { CAUDIO_FN(CAUDIO_PULSE, pa_context_disconnect); if (f_) f_(c); }
static inline void CAudio_pa_context_unref(pa_context *c) { CAUDIO_FN(CAUDIO_PULSE, pa_context_unref); if (f_) f_(c); }
static inline pa_operation *CAudio_pa_context_get_server_info(pa_context *c, pa_server_info_cb_t cb, void *userdata) {
    CAUDIO_FN(CAUDIO_PULSE, pa_context_get_server_info); return f_ ? f_(c, cb, userdata) : NULL;
}
static inline pa_operation *CAudio_pa_context_get_source_info_list(pa_context *c, pa_source_info_cb_t cb, void *userdata) {
    CAUDIO_FN(CAUDIO_PULSE, pa_context_get_source_info_list); return f_ ? f_(c, cb, userdata) : NULL;
}
static inline void CAudio_pa_operation_unref(pa_operation *o) { CAUDIO_FN(CAUDIO_PULSE, pa_operation_unref); if (f_) f_(o); }

// Names the calling thread (top, /proc/PID/task/*/comm), at most 15 characters: prctl is
// variadic, which Swift cannot call.
static inline void CAudio_name_thread(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

// Macros and enum values Swift does not import as such.
static inline int CAudio_error_eof(void) { return AVERROR_EOF; }
static inline int CAudio_error_again(void) { return AVERROR(EAGAIN); }
static inline int CAudio_stream_record(void) { return PA_STREAM_RECORD; }
static inline int CAudio_format_float32le(void) { return PA_SAMPLE_FLOAT32LE; }
static inline int CAudio_profile_aac_low(void) { return FF_PROFILE_AAC_LOW; }

// 1 when the libraries `mask` names (1 << CAUDIO_...) open and have every function this file
// wraps; else 0 with dlerror's text or the missing symbol in `why`.
static inline int CAudio_load(int mask, char *why, int size) {
    static const struct { int lib; const char *name; } needed[] = {
        { CAUDIO_AVUTIL, "av_frame_alloc" }, { CAUDIO_AVUTIL, "av_frame_free" }, { CAUDIO_AVUTIL, "av_frame_get_buffer" },
        { CAUDIO_AVUTIL, "av_frame_make_writable" }, { CAUDIO_AVUTIL, "av_channel_layout_default" },
        { CAUDIO_AVUTIL, "av_log_set_level" }, { CAUDIO_AVUTIL, "av_strerror" },
        { CAUDIO_AVCODEC, "avcodec_find_encoder_by_name" }, { CAUDIO_AVCODEC, "avcodec_alloc_context3" },
        { CAUDIO_AVCODEC, "avcodec_open2" }, { CAUDIO_AVCODEC, "avcodec_free_context" }, { CAUDIO_AVCODEC, "avcodec_send_frame" },
        { CAUDIO_AVCODEC, "avcodec_receive_packet" }, { CAUDIO_AVCODEC, "av_packet_alloc" }, { CAUDIO_AVCODEC, "av_packet_free" },
        { CAUDIO_AVCODEC, "av_packet_unref" },
        { CAUDIO_SWRESAMPLE, "swr_alloc_set_opts2" }, { CAUDIO_SWRESAMPLE, "swr_init" }, { CAUDIO_SWRESAMPLE, "swr_free" },
        { CAUDIO_SWRESAMPLE, "swr_convert" }, { CAUDIO_SWRESAMPLE, "swr_set_compensation" }, { CAUDIO_SWRESAMPLE, "swr_get_delay" },
        { CAUDIO_PULSE, "pa_strerror" }, { CAUDIO_PULSE, "pa_mainloop_new" }, { CAUDIO_PULSE, "pa_mainloop_get_api" },
        { CAUDIO_PULSE, "pa_mainloop_prepare" }, { CAUDIO_PULSE, "pa_mainloop_poll" }, { CAUDIO_PULSE, "pa_mainloop_dispatch" },
        { CAUDIO_PULSE, "pa_mainloop_free" }, { CAUDIO_PULSE, "pa_context_new" }, { CAUDIO_PULSE, "pa_context_connect" },
        { CAUDIO_PULSE, "pa_context_get_state" }, { CAUDIO_PULSE, "pa_context_errno" }, { CAUDIO_PULSE, "pa_context_disconnect" },
        { CAUDIO_PULSE, "pa_context_unref" }, { CAUDIO_PULSE, "pa_context_get_server_info" },
        { CAUDIO_PULSE, "pa_context_get_source_info_list" }, { CAUDIO_PULSE, "pa_operation_unref" },
        { CAUDIO_PULSE_SIMPLE, "pa_simple_new" }, { CAUDIO_PULSE_SIMPLE, "pa_simple_read" }, { CAUDIO_PULSE_SIMPLE, "pa_simple_get_latency" },
        { CAUDIO_PULSE_SIMPLE, "pa_simple_free" }, { CAUDIO_PULSE_SIMPLE, "pa_simple_flush" },
    };
    for (int lib = 0; lib < CAUDIO_LIBRARIES; lib++) {
        if (!(mask & (1 << lib))) continue;
        if (!CAudio_library(lib)) {
            const char *error = dlerror();
            snprintf(why, (size_t)size, "%s", error ? error : CAudio_soname(lib));
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        if (!(mask & (1 << needed[i].lib))) continue;
        if (!dlsym(CAudio_library(needed[i].lib), needed[i].name)) {
            snprintf(why, (size_t)size, "%s: no %s", CAudio_soname(needed[i].lib), needed[i].name);
            return 0;
        }
    }
    return 1;
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
static inline unsigned long *CAudio_file_mappings(size_t *count) {
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

// On every file-backed mapping whose start is not in `before` (CAudio_file_mappings taken
// before loading, `count` of them; freed here): MADV_PAGEOUT,
// which reclaims the clean pages no other process maps (Linux >= 5.4; EINVAL before: nothing
// lost but the saving). The kernel skips the page-cache folios that other processes map or
// that straddle the loader's segments, so then, on the mappings that cannot be written
// (code, read-only data) and hold no private copy of a page ("Anonymous: 0 kB" in smaps:
// nothing there was ever written, and nothing can be now), MADV_DONTNEED unmaps what is
// left: a page used again is read back from the page cache, identical. Writable mappings
// and relocated read-only data (their private copies would be lost) get MADV_PAGEOUT only.
// Returns the bytes unmapped with MADV_DONTNEED plus those advised with MADV_PAGEOUT.
static inline unsigned long CAudio_page_out_loaded(unsigned long *before, size_t count) {
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
static inline AVCodecContext *CAudio_open_aac(int rate, int channels, int64_t bitrate, int *error) {
    const AVCodec *codec = CAudio_avcodec_find_encoder_by_name("aac");
    if (!codec) { *error = AVERROR_ENCODER_NOT_FOUND; return NULL; }
    AVCodecContext *ctx = CAudio_avcodec_alloc_context3(codec);
    if (!ctx) { *error = AVERROR(ENOMEM); return NULL; }
    ctx->sample_fmt = AV_SAMPLE_FMT_FLTP;
    ctx->sample_rate = rate;
    CAudio_av_channel_layout_default(&ctx->ch_layout, channels);
    ctx->bit_rate = bitrate;
    ctx->profile = FF_PROFILE_AAC_LOW;
    ctx->time_base.num = 1;
    ctx->time_base.den = rate;
    // Extradata (the AudioSpecificConfig) out of band: the packets stay raw, no ADTS.
    ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int r = CAudio_avcodec_open2(ctx, codec, NULL);
    if (r < 0) { *error = r; CAudio_avcodec_free_context(&ctx); return NULL; }
    *error = 0;
    return ctx;
}

// One planar float frame of `samples` samples for `ctx`, its buffers allocated.
static inline AVFrame *CAudio_audio_frame(const AVCodecContext *ctx, int samples) {
    AVFrame *frame = CAudio_av_frame_alloc();
    if (!frame) return NULL;
    frame->format = ctx->sample_fmt;
    frame->nb_samples = samples;
    frame->sample_rate = ctx->sample_rate;
    CAudio_av_channel_layout_default(&frame->ch_layout, ctx->ch_layout.nb_channels);
    if (CAudio_av_frame_get_buffer(frame, 0) < 0) { CAudio_av_frame_free(&frame); return NULL; }
    return frame;
}

// A resampler from interleaved `in_fmt` at `in_rate` with `in_channels` to interleaved float
// stereo (or `out_channels`) at `out_rate`; NULL with the AVERROR in *error.
static inline SwrContext *CAudio_resampler(int in_fmt, int in_rate, int in_channels, int out_rate, int out_channels, int *error) {
    AVChannelLayout in_layout, out_layout;
    CAudio_av_channel_layout_default(&in_layout, in_channels);
    CAudio_av_channel_layout_default(&out_layout, out_channels);
    SwrContext *s = NULL;
    int r = CAudio_swr_alloc_set_opts2(&s, &out_layout, AV_SAMPLE_FMT_FLT, out_rate, &in_layout, (enum AVSampleFormat)in_fmt, in_rate, 0, NULL);
    if (r < 0) { *error = r; return NULL; }
    r = CAudio_swr_init(s);
    if (r < 0) { *error = r; CAudio_swr_free(&s); return NULL; }
    *error = 0;
    return s;
}

// swr_convert for one interleaved input buffer and one interleaved output buffer.
static inline int CAudio_swr_convert_interleaved(SwrContext *s, void *out, int out_count, const void *in, int in_count) {
    uint8_t *outs[1] = { (uint8_t *)out };
    const uint8_t *ins[1] = { (const uint8_t *)in };
    return CAudio_swr_convert(s, outs, out_count, in ? ins : NULL, in_count);
}

static inline int CAudio_sample_fmt_s16(void) { return AV_SAMPLE_FMT_S16; }
static inline int CAudio_sample_fmt_s32(void) { return AV_SAMPLE_FMT_S32; }
static inline int CAudio_sample_fmt_flt(void) { return AV_SAMPLE_FMT_FLT; }
static inline int CAudio_sample_fmt_u8(void) { return AV_SAMPLE_FMT_U8; }

// A record stream of float32le at `rate`/`channels` from `device` (NULL: the default source)
// of `server` (NULL: $PULSE_SERVER or the default), fragments of `fragment_bytes` so that
// each read returns about that much.
static inline pa_simple *CAudio_record(const char *server, const char *device, int rate, int channels, uint32_t fragment_bytes, int *error) {
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
    return CAudio_pa_simple_new(server, "nalcast", PA_STREAM_RECORD, device, "capture", &spec, NULL, &attr, error);
}

// The sources of a PulseAudio server, as text into `out` (`size` bytes, NUL-terminated): a
// line "d NAME" for the default source, then one line per source, "m NAME" for a sink's
// monitor and "s NAME" for any other (a capture device, a filter). 0 on success; else -1
// with a PulseAudio error code in `*error`. Gives up after 5 s (a server that accepts and
// never answers). Lines that do not fit are left out.
struct CAudio_source_list { char *text; size_t used, size; int pending; };

static inline void CAudio_source_line(struct CAudio_source_list *list, char kind, const char *name) {
    size_t length = strlen(name);
    if (list->used + length + 3 >= list->size) return;
    list->text[list->used++] = kind;
    list->text[list->used++] = ' ';
    memcpy(list->text + list->used, name, length);
    list->used += length;
    list->text[list->used++] = '\n';
    list->text[list->used] = 0;
}

static inline void CAudio_server_info(pa_context *c, const pa_server_info *info, void *userdata) {
    (void)c;
    struct CAudio_source_list *list = userdata;
    if (info && info->default_source_name) CAudio_source_line(list, 'd', info->default_source_name);
    list->pending--;
}

static inline void CAudio_source_info(pa_context *c, const pa_source_info *info, int eol, void *userdata) {
    (void)c;
    struct CAudio_source_list *list = userdata;
    if (eol) { list->pending--; return; }
    if (info && info->name) CAudio_source_line(list, info->monitor_of_sink != PA_INVALID_INDEX ? 'm' : 's', info->name);
}

// One turn of the loop, waiting at most 100 ms; < 0 when the loop failed or `deadline`
// (CLOCK_MONOTONIC ns) has passed.
static inline int CAudio_pulse_turn(pa_mainloop *loop, int64_t deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec > deadline) return -1;
    if (CAudio_pa_mainloop_prepare(loop, 100000) < 0 || CAudio_pa_mainloop_poll(loop) < 0) return -1;
    return CAudio_pa_mainloop_dispatch(loop);
}

static inline int CAudio_pulse_sources(const char *server, char *out, int size, int *error) {
    struct CAudio_source_list list = { out, 0, (size_t)size, 2 };
    if (size > 0) out[0] = 0;
    *error = PA_ERR_INTERNAL;
    pa_mainloop *loop = CAudio_pa_mainloop_new();
    if (!loop) return -1;
    pa_context *context = CAudio_pa_context_new(CAudio_pa_mainloop_get_api(loop), "nalcast");
    int result = -1;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int64_t deadline = (int64_t)start.tv_sec * 1000000000 + start.tv_nsec + 5000000000LL;
    if (context && CAudio_pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, NULL) >= 0) {
        while (CAudio_pa_context_get_state(context) != PA_CONTEXT_READY && PA_CONTEXT_IS_GOOD(CAudio_pa_context_get_state(context)))
            if (CAudio_pulse_turn(loop, deadline) < 0) break;
        if (CAudio_pa_context_get_state(context) == PA_CONTEXT_READY) {
            pa_operation *info = CAudio_pa_context_get_server_info(context, CAudio_server_info, &list);
            pa_operation *sources = CAudio_pa_context_get_source_info_list(context, CAudio_source_info, &list);
            if (!info) list.pending--;
            if (!sources) list.pending--;
            while (list.pending > 0 && PA_CONTEXT_IS_GOOD(CAudio_pa_context_get_state(context)))
                if (CAudio_pulse_turn(loop, deadline) < 0) break;
            if (info) CAudio_pa_operation_unref(info);
            if (sources) CAudio_pa_operation_unref(sources);
            if (info && sources && list.pending == 0) result = 0;
        }
        *error = result == 0 ? 0 : CAudio_pa_context_errno(context);
        if (result < 0 && *error == PA_OK) *error = PA_ERR_TIMEOUT;
        CAudio_pa_context_disconnect(context);
    } else if (context) {
        *error = CAudio_pa_context_errno(context);
    }
    if (context) CAudio_pa_context_unref(context);
    CAudio_pa_mainloop_free(loop);
    return result;
}
#endif
