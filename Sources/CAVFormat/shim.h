#ifndef CAVFORMAT_SHIM_H
#define CAVFORMAT_SHIM_H
// FFmpeg's muxers (libavformat) for nalcast's container output: files go through a file
// descriptor nalcast opened itself; pushes to a server (RTMP, SRT, RTSP, UDP) go through
// libavformat's own protocols, each blocking call bounded by an interrupt callback.
// Its demuxers and protocols for consume's input (`Demuxer`): container files and live URLs
// (RTSP, SRT, RTMP, UDP, HTTP), bounded by the same interrupt callback.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/macros.h>
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>
#include <dlfcn.h>
#include <time.h>

// The FFmpeg libraries are not linked: they are opened with dlopen the first time a container
// is written, so that every other run of nalcast (raw Annex-B, serving, inspect) does not map
// libavformat and the hundred codec libraries Debian's libavcodec depends on. Only the struct
// layouts and constants come from the headers; each function nalcast calls is a wrapper below
// that looks its symbol up once and keeps the pointer. The SONAMEs come from the headers'
// major versions, so the libraries opened are the ones the layouts were compiled against.
#define CAVFORMAT_SONAME_avutil "libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR)
#define CAVFORMAT_SONAME_avcodec "libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR)
#define CAVFORMAT_SONAME_avformat "libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR)

// libavformat's SONAME and major version (Debian's package is libavformat<major>, which
// brings libavcodec and libavutil): for the message when they are missing.
static inline const char *CAVFormat_soname(void) { return CAVFORMAT_SONAME_avformat; }
static inline int CAVFormat_major(void) { return LIBAVFORMAT_VERSION_MAJOR; }

enum { CAVFORMAT_AVUTIL = 0, CAVFORMAT_AVCODEC = 1, CAVFORMAT_AVFORMAT = 2 };

// The handle of one library, opened on first use; NULL when it cannot be opened. Racing
// threads may both call dlopen, which hands back the same handle (counted twice: harmless).
static inline void *CAVFormat_library(int which) {
    static void *handles[3];
    static int tried[3];
    if (__atomic_load_n(&tried[which], __ATOMIC_ACQUIRE)) return __atomic_load_n(&handles[which], __ATOMIC_RELAXED);
    static const char *const names[3] = { CAVFORMAT_SONAME_avutil, CAVFORMAT_SONAME_avcodec, CAVFORMAT_SONAME_avformat };
    void *handle = dlopen(names[which], RTLD_NOW | RTLD_LOCAL);
    __atomic_store_n(&handles[which], handle, __ATOMIC_RELAXED);
    __atomic_store_n(&tried[which], 1, __ATOMIC_RELEASE);
    return handle;
}

// 1 when the three libraries open and have every function below; else 0, with what failed
// (dlerror's text or the missing symbol) copied into `why`. Call it before writing anything.
static inline int CAVFormat_load(char *why, int size);

// One function's pointer, looked up once (NULL when missing: the wrappers then fail softly,
// but CAVFormat_load has refused the container before any of them runs).
#define CAVFORMAT_FN(lib, name) \
    static __typeof__(&name) fn_ = NULL; \
    if (!__atomic_load_n(&fn_, __ATOMIC_ACQUIRE)) { \
        void *h_ = CAVFormat_library(lib); \
        __atomic_store_n(&fn_, h_ ? (__typeof__(&name))dlsym(h_, #name) : NULL, __ATOMIC_RELEASE); \
    } \
    __typeof__(&name) f_ = __atomic_load_n(&fn_, __ATOMIC_ACQUIRE)

// libavutil
static inline void *CAVFormat_av_malloc(size_t size) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_malloc); return f_ ? f_(size) : NULL; }
static inline void *CAVFormat_av_mallocz(size_t size) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_mallocz); return f_ ? f_(size) : NULL; }
static inline void CAVFormat_av_free(void *p) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_free); if (f_) f_(p); }
static inline void CAVFormat_av_freep(void *p) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_freep); if (f_) f_(p); }
static inline void CAVFormat_av_log_set_level(int level) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_log_set_level); if (f_) f_(level); }
static inline AVRational CAVFormat_av_d2q(double d, int max) {
    CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_d2q);
    if (f_) return f_(d, max);
    AVRational zero = { 0, 1 };
    return zero;
}
static inline int CAVFormat_av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags) {
    CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_dict_set); return f_ ? f_(pm, key, value, flags) : AVERROR(ENOSYS);
}
static inline void CAVFormat_av_dict_free(AVDictionary **m) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_dict_free); if (f_) f_(m); }
static inline int64_t CAVFormat_av_rescale_q(int64_t a, AVRational bq, AVRational cq) {
    CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_rescale_q); return f_ ? f_(a, bq, cq) : 0;
}
static inline char *CAVFormat_av_strdup(const char *s) { CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_strdup); return f_ ? f_(s) : NULL; }
static inline int CAVFormat_av_strerror(int errnum, char *buf, size_t size) {
    CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_strerror);
    if (f_) return f_(errnum, buf, size);
    if (size > 0) snprintf(buf, size, "error %d", errnum);
    return 0;
}

// libavcodec
static inline AVPacket *CAVFormat_av_packet_alloc(void) { CAVFORMAT_FN(CAVFORMAT_AVCODEC, av_packet_alloc); return f_ ? f_() : NULL; }
static inline void CAVFormat_av_packet_free(AVPacket **pkt) { CAVFORMAT_FN(CAVFORMAT_AVCODEC, av_packet_free); if (f_) f_(pkt); }
static inline void CAVFormat_av_packet_unref(AVPacket *pkt) { CAVFORMAT_FN(CAVFORMAT_AVCODEC, av_packet_unref); if (f_) f_(pkt); }
static inline void CAVFormat_av_packet_rescale_ts(AVPacket *pkt, AVRational from, AVRational to) {
    CAVFORMAT_FN(CAVFORMAT_AVCODEC, av_packet_rescale_ts); if (f_) f_(pkt, from, to);
}

static inline const char *CAVFormat_avcodec_get_name(enum AVCodecID id) {
    CAVFORMAT_FN(CAVFORMAT_AVCODEC, avcodec_get_name); return f_ ? f_(id) : "unknown";
}
static inline uint8_t *CAVFormat_av_packet_get_side_data(const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size) {
    CAVFORMAT_FN(CAVFORMAT_AVCODEC, av_packet_get_side_data); return f_ ? f_(pkt, type, size) : NULL;
}

// libavformat
static inline AVFormatContext *CAVFormat_avformat_alloc_context(void) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_alloc_context); return f_ ? f_() : NULL; }
static inline int CAVFormat_avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_open_input); return f_ ? f_(ps, url, fmt, options) : AVERROR(ENOSYS);
}
static inline int CAVFormat_avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_find_stream_info); return f_ ? f_(ic, options) : AVERROR(ENOSYS);
}
static inline int CAVFormat_av_find_best_stream(AVFormatContext *ic, enum AVMediaType type, int wanted, int related, const AVCodec **decoder, int flags) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, av_find_best_stream); return f_ ? f_(ic, type, wanted, related, decoder, flags) : AVERROR(ENOSYS);
}
static inline int CAVFormat_av_read_frame(AVFormatContext *s, AVPacket *pkt) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, av_read_frame); return f_ ? f_(s, pkt) : AVERROR(ENOSYS);
}
static inline void CAVFormat_avformat_close_input(AVFormatContext **s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_close_input); if (f_) f_(s); }
static inline const char *CAVFormat_avio_enum_protocols(void **opaque, int output) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_enum_protocols); return f_ ? f_(opaque, output) : NULL;
}
static inline const AVInputFormat *CAVFormat_av_find_input_format(const char *name) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, av_find_input_format); return f_ ? f_(name) : NULL;
}
static inline int CAVFormat_avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_alloc_output_context2); return f_ ? f_(ctx, oformat, format_name, filename) : AVERROR(ENOSYS);
}
static inline void CAVFormat_avformat_free_context(AVFormatContext *s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_free_context); if (f_) f_(s); }
static inline AVStream *CAVFormat_avformat_new_stream(AVFormatContext *s, const AVCodec *c) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_new_stream); return f_ ? f_(s, c) : NULL;
}
static inline int CAVFormat_avformat_write_header(AVFormatContext *s, AVDictionary **options) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_write_header); return f_ ? f_(s, options) : AVERROR(ENOSYS);
}
static inline int CAVFormat_av_write_frame(AVFormatContext *s, AVPacket *pkt) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, av_write_frame); return f_ ? f_(s, pkt) : AVERROR(ENOSYS);
}
static inline int CAVFormat_av_write_trailer(AVFormatContext *s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, av_write_trailer); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline AVIOContext *CAVFormat_avio_alloc_context(unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
        int (*read_packet)(void *, uint8_t *, int), int (*write_packet)(void *, uint8_t *, int), int64_t (*seek)(void *, int64_t, int)) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_alloc_context); return f_ ? f_(buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek) : NULL;
}
static inline void CAVFormat_avio_context_free(AVIOContext **s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_context_free); if (f_) f_(s); }
static inline void CAVFormat_avio_flush(AVIOContext *s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_flush); if (f_) f_(s); }
static inline int CAVFormat_avio_open2(AVIOContext **s, const char *url, int flags, const AVIOInterruptCB *cb, AVDictionary **options) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_open2); return f_ ? f_(s, url, flags, cb, options) : AVERROR(ENOSYS);
}
static inline int CAVFormat_avio_closep(AVIOContext **s) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_closep); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline int CAVFormat_avformat_network_init(void) { CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avformat_network_init); return f_ ? f_() : AVERROR(ENOSYS); }
static inline const char *CAVFormat_avio_find_protocol_name(const char *url) {
    CAVFORMAT_FN(CAVFORMAT_AVFORMAT, avio_find_protocol_name); return f_ ? f_(url) : NULL;
}

static inline int CAVFormat_load(char *why, int size) {
    static const struct { int lib; const char *name; } needed[] = {
        { CAVFORMAT_AVUTIL, "av_malloc" }, { CAVFORMAT_AVUTIL, "av_mallocz" }, { CAVFORMAT_AVUTIL, "av_free" },
        { CAVFORMAT_AVUTIL, "av_freep" }, { CAVFORMAT_AVUTIL, "av_log_set_level" }, { CAVFORMAT_AVUTIL, "av_d2q" },
        { CAVFORMAT_AVUTIL, "av_dict_set" }, { CAVFORMAT_AVUTIL, "av_dict_free" }, { CAVFORMAT_AVUTIL, "av_strerror" },
        { CAVFORMAT_AVUTIL, "av_strdup" },
        { CAVFORMAT_AVCODEC, "av_packet_alloc" }, { CAVFORMAT_AVCODEC, "av_packet_free" }, { CAVFORMAT_AVCODEC, "av_packet_unref" },
        { CAVFORMAT_AVCODEC, "av_packet_rescale_ts" },
        { CAVFORMAT_AVFORMAT, "avformat_alloc_output_context2" }, { CAVFORMAT_AVFORMAT, "avformat_free_context" },
        { CAVFORMAT_AVFORMAT, "avformat_new_stream" }, { CAVFORMAT_AVFORMAT, "avformat_write_header" },
        { CAVFORMAT_AVFORMAT, "av_write_frame" }, { CAVFORMAT_AVFORMAT, "av_write_trailer" },
        { CAVFORMAT_AVFORMAT, "avio_alloc_context" }, { CAVFORMAT_AVFORMAT, "avio_context_free" }, { CAVFORMAT_AVFORMAT, "avio_flush" },
        { CAVFORMAT_AVFORMAT, "avio_open2" }, { CAVFORMAT_AVFORMAT, "avio_closep" }, { CAVFORMAT_AVFORMAT, "avformat_network_init" },
        { CAVFORMAT_AVFORMAT, "avio_find_protocol_name" },
        // the demuxing side (consume --from a URL or a container file)
        { CAVFORMAT_AVUTIL, "av_rescale_q" }, { CAVFORMAT_AVCODEC, "avcodec_get_name" },
        { CAVFORMAT_AVCODEC, "av_packet_get_side_data" }, { CAVFORMAT_AVFORMAT, "avformat_alloc_context" },
        { CAVFORMAT_AVFORMAT, "avformat_open_input" }, { CAVFORMAT_AVFORMAT, "avformat_find_stream_info" },
        { CAVFORMAT_AVFORMAT, "av_find_best_stream" }, { CAVFORMAT_AVFORMAT, "av_read_frame" },
        { CAVFORMAT_AVFORMAT, "avformat_close_input" }, { CAVFORMAT_AVFORMAT, "avio_enum_protocols" },
        { CAVFORMAT_AVFORMAT, "av_find_input_format" },
    };
    static const char *const names[3] = { CAVFORMAT_SONAME_avutil, CAVFORMAT_SONAME_avcodec, CAVFORMAT_SONAME_avformat };
    for (int lib = 0; lib < 3; lib++) {
        if (!CAVFormat_library(lib)) {
            const char *error = dlerror();
            snprintf(why, (size_t)size, "%s", error ? error : names[lib]);
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        if (!dlsym(CAVFormat_library(needed[i].lib), needed[i].name)) {
            snprintf(why, (size_t)size, "%s: no %s", names[needed[i].lib], needed[i].name);
            return 0;
        }
    }
    return 1;
}

// The state behind an AVIOContext that writes to our own fd: the C callbacks below need a
// plain struct as their opaque pointer, and keep the errno of a failed call for our message.
typedef struct CAVFormat_fd_io {
    int fd;
    int error;        // errno of the first failed write or seek, 0 while all is well
    int64_t written;  // bytes handed to write(2) so far
} CAVFormat_fd_io;

// AVIOContext's write callback is a C function pointer: write(2) all of it, EINTR retried.
static inline int CAVFormat_fd_write(void *opaque, uint8_t *buf, int size) {
    CAVFormat_fd_io *io = (CAVFormat_fd_io *)opaque;
    if (io->error) return AVERROR(io->error);
    int done = 0;
    while (done < size) {
        ssize_t n = write(io->fd, buf + done, (size_t)(size - done));
        if (n < 0) {
            if (errno == EINTR) continue;
            io->error = errno;
            return AVERROR(io->error);
        }
        done += (int)n;
        io->written += n;
    }
    return size;
}

// AVIOContext's seek callback, C too; AVSEEK_SIZE (a macro) asks for the file's size.
static inline int64_t CAVFormat_fd_seek(void *opaque, int64_t offset, int whence) {
    CAVFormat_fd_io *io = (CAVFormat_fd_io *)opaque;
    if (whence & AVSEEK_SIZE) {
        struct stat st;
        return fstat(io->fd, &st) == 0 ? (int64_t)st.st_size : AVERROR(errno);
    }
    off_t at = lseek(io->fd, (off_t)offset, whence & ~AVSEEK_FORCE);
    if (at < 0) {
        io->error = errno;
        return AVERROR(io->error);
    }
    return (int64_t)at;
}

// True for a regular file, the only output an MP4 muxer can go back into (moov, mdat size).
static inline int CAVFormat_fd_is_seekable(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0;
}

// avio_alloc_context wants an av_malloc'ed buffer and the two callbacks above; Swift cannot
// name C functions as pointers as simply, so the whole set-up is here.
static inline AVIOContext *CAVFormat_fd_avio(CAVFormat_fd_io *io, int seekable) {
    const int size = 256 * 1024;  // a 1080p IDR or a fragment in a few writes, not dozens
    unsigned char *buffer = (unsigned char *)CAVFormat_av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *pb = CAVFormat_avio_alloc_context(buffer, size, 1, io, NULL, CAVFormat_fd_write, seekable ? CAVFormat_fd_seek : NULL);
    if (!pb) {
        CAVFormat_av_free(buffer);
        return NULL;
    }
    pb->seekable = seekable ? AVIO_SEEKABLE_NORMAL : 0;
    return pb;
}

// The buffer is ours to free (av_freep through a field), then the context.
static inline void CAVFormat_avio_free(AVIOContext **pb) {
    if (!pb || !*pb) return;
    CAVFormat_av_freep(&(*pb)->buffer);
    CAVFormat_avio_context_free(pb);
}

// Extradata must come from av_malloc with AV_INPUT_BUFFER_PADDING_SIZE zeroed bytes after it.
static inline int CAVFormat_set_extradata(AVCodecParameters *par, const uint8_t *data, int size) {
    uint8_t *copy = (uint8_t *)CAVFormat_av_mallocz((size_t)size + AV_INPUT_BUFFER_PADDING_SIZE);
    if (!copy) return AVERROR(ENOMEM);
    memcpy(copy, data, (size_t)size);
    CAVFormat_av_freep(&par->extradata);
    par->extradata = copy;
    par->extradata_size = size;
    return 0;
}

// An AAC audio track's parameters, for the container writers: what a muxer needs besides
// the extradata (the AudioSpecificConfig). The channel layout is the native one for mono and
// stereo, unspecified beyond.
static inline void CAVFormat_aac_track(AVCodecParameters *par, int sample_rate, int channels, int frame_size, int64_t bit_rate) {
    par->codec_type = AVMEDIA_TYPE_AUDIO;
    par->codec_id = AV_CODEC_ID_AAC;
    par->sample_rate = sample_rate;
    par->frame_size = frame_size;
    par->bit_rate = bit_rate;
    par->ch_layout.order = channels <= 2 ? AV_CHANNEL_ORDER_NATIVE : AV_CHANNEL_ORDER_UNSPEC;
    par->ch_layout.nb_channels = channels;
    par->ch_layout.u.mask = channels == 1 ? AV_CH_LAYOUT_MONO : channels == 2 ? AV_CH_LAYOUT_STEREO : 0;
}

// The channel count of a track read from a container (ch_layout is a struct with a union).
static inline int CAVFormat_track_channels(const AVCodecParameters *par) { return par->ch_layout.nb_channels; }

// AV_INPUT_BUFFER_PADDING_SIZE is a macro: packet buffers need that many zeros at their end.
static inline int CAVFormat_padding_size(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }

// av_strerror into a buffer; AVERROR(EPIPE) and friends are macros Swift does not import.
static inline int CAVFormat_errno_of(int averror) { return averror < 0 && averror > -4096 ? -averror : 0; }

// The deadline of a push's blocking calls (connect, handshake, a write the server does not
// take): libavformat's protocols poll the interrupt callback while they wait, and give up
// with AVERROR_EXIT once it returns 1. `deadline_ns` is CLOCK_MONOTONIC nanoseconds, 0 for
// none; `stop` ends every wait at once. Written by the one thread that uses the muxer.
typedef struct CAVFormat_interrupt {
    int64_t deadline_ns;
    int stop;
    int fired;  // set when the callback said stop: the call failed because time ran out
} CAVFormat_interrupt;

static inline int CAVFormat_interrupt_check(void *opaque) {
    CAVFormat_interrupt *state = (CAVFormat_interrupt *)opaque;
    if (__atomic_load_n(&state->stop, __ATOMIC_RELAXED)) return state->fired = 1;
    if (state->deadline_ns == 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec < state->deadline_ns) return 0;
    return state->fired = 1;
}

// The AVIOInterruptCB for `state` (a C function pointer, set here for Swift).
static inline AVIOInterruptCB CAVFormat_interrupt_callback(CAVFormat_interrupt *state) {
    AVIOInterruptCB cb = { CAVFormat_interrupt_check, state };
    return cb;
}

// The URL a muxer with its own protocol (RTSP) opens, av_strdup'ed as avformat wants it.
static inline int CAVFormat_set_url(AVFormatContext *s, const char *url) {
    char *copy = CAVFormat_av_strdup(url);
    if (!copy) return AVERROR(ENOMEM);
    CAVFormat_av_freep(&s->url);
    s->url = copy;
    return 0;
}

// True when the output format opens its own connection (no AVIOContext wanted): RTSP.
static inline int CAVFormat_format_has_no_file(const AVFormatContext *s) { return (s->oformat->flags & AVFMT_NOFILE) != 0; }

// AVERROR_EXIT is a macro Swift does not import.
static inline int CAVFormat_error_exit(void) { return AVERROR_EXIT; }

// Ends every wait of the thread using `state` at once: the one field another thread writes
// (a demuxer's reader is stopped from the main thread), so atomically.
static inline void CAVFormat_interrupt_request_stop(CAVFormat_interrupt *state) { __atomic_store_n(&state->stop, 1, __ATOMIC_RELAXED); }

// More macros Swift does not import: end of input, try again, no timestamp.
static inline int CAVFormat_error_eof(void) { return AVERROR_EOF; }
static inline int CAVFormat_error_again(void) { return AVERROR(EAGAIN); }
// A demuxer that cannot read on: bytes that make no sense, or a size in them no memory holds.
static inline int CAVFormat_error_invalid_data(void) { return AVERROR_INVALIDDATA; }
static inline int CAVFormat_error_no_memory(void) { return AVERROR(ENOMEM); }
static inline int64_t CAVFormat_no_pts(void) { return AV_NOPTS_VALUE; }

// libsrt, which libavformat links for srt://, logs its warnings (a rejected handshake, a
// connection lost) on stderr by itself, beside nalcast's one line: only its critical ones
// are kept. Looked up through libavformat's handle, which searches the libraries it loaded.
static inline void CAVFormat_quiet_srt(void) {
    void *h = CAVFormat_library(CAVFORMAT_AVFORMAT);
    if (!h) return;
    void (*set_level)(int) = (void (*)(int))dlsym(h, "srt_setloglevel");
    if (set_level) set_level(2);  // LOG_CRIT
}

// 1 when this libavformat has the input protocol `name` (tcp, udp, srt, rtmp, https...).
static inline int CAVFormat_has_input_protocol(const char *name) {
    void *opaque = NULL;
    const char *p;
    while ((p = CAVFormat_avio_enum_protocols(&opaque, 0)) != NULL) {
        if (strcmp(p, name) == 0) return 1;
    }
    return 0;
}

// Opens `url` for reading with the interrupt callback set before the first blocking call:
// the context must exist before avformat_open_input for that, so it is made here.
static inline int CAVFormat_open_input(AVFormatContext **ps, const char *url, CAVFormat_interrupt *state, AVDictionary **options) {
    AVFormatContext *ctx = CAVFormat_avformat_alloc_context();
    if (!ctx) return AVERROR(ENOMEM);
    ctx->interrupt_callback = CAVFormat_interrupt_callback(state);
    *ps = ctx;
    return CAVFormat_avformat_open_input(ps, url, NULL, options);  // frees the context on failure
}

// The new extradata (avcC or Annex-B parameter sets) a packet carries as side data when the
// stream's parameters change mid-stream (FLV/RTMP after a new sequence header).
static inline const uint8_t *CAVFormat_new_extradata(const AVPacket *pkt, int *size) {
    size_t n = 0;
    const uint8_t *data = CAVFormat_av_packet_get_side_data(pkt, AV_PKT_DATA_NEW_EXTRADATA, &n);
    *size = data ? (int)n : 0;
    return data;
}

// The state behind an AVIOContext that writes into memory (the MPEG-TS listener's muxer,
// `TSStreamMuxer`): what the muxer wrote since the owner last took it (`size` reset to 0).
typedef struct CAVFormat_memory_io {
    uint8_t *data;
    int size;
    int capacity;
    int error;  // ENOMEM once a write could not grow the buffer
} CAVFormat_memory_io;

// AVIOContext's write callback into `CAVFormat_memory_io`: appends, growing by doubling.
static inline int CAVFormat_memory_write(void *opaque, uint8_t *buf, int size) {
    CAVFormat_memory_io *io = (CAVFormat_memory_io *)opaque;
    if (io->error) return AVERROR(io->error);
    if (io->size + size > io->capacity) {
        int capacity = io->capacity ? io->capacity : 64 * 1024;
        while (capacity < io->size + size) capacity *= 2;
        uint8_t *grown = (uint8_t *)realloc(io->data, (size_t)capacity);
        if (!grown) {
            io->error = ENOMEM;
            return AVERROR(ENOMEM);
        }
        io->data = grown;
        io->capacity = capacity;
    }
    memcpy(io->data + io->size, buf, (size_t)size);
    io->size += size;
    return size;
}

// A write-only, unseekable AVIOContext over `io`, with a buffer of whole TS packets (188 × 64).
static inline AVIOContext *CAVFormat_memory_avio(CAVFormat_memory_io *io) {
    const int size = 188 * 64;
    unsigned char *buffer = (unsigned char *)CAVFormat_av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *pb = CAVFormat_avio_alloc_context(buffer, size, 1, io, NULL, CAVFormat_memory_write, NULL);
    if (!pb) {
        CAVFormat_av_free(buffer);
        return NULL;
    }
    pb->seekable = 0;
    return pb;
}

static inline void CAVFormat_memory_free(CAVFormat_memory_io *io) {
    free(io->data);
    io->data = NULL;
    io->size = io->capacity = 0;
}

// av_opt_set, for the mpegts muxer's one-shot `resend_headers` flag (PAT and PMT with the next
// packet). Looked up on first use, not required by CAVFormat_load: without it, PAT and PMT
// come before a keyframe that follows another picture, and every 100 ms.
#include <libavutil/opt.h>
static inline int CAVFormat_av_opt_set(void *obj, const char *name, const char *val, int search_flags) {
    CAVFORMAT_FN(CAVFORMAT_AVUTIL, av_opt_set); return f_ ? f_(obj, name, val, search_flags) : AVERROR(ENOSYS);
}

#endif
