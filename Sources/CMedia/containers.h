#ifndef CMEDIA_CONTAINERS_H
#define CMEDIA_CONTAINERS_H
#include "libraries.h"
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

// libavutil
static inline void *CMedia_av_malloc(size_t size) { CMEDIA_FN(CMEDIA_AVUTIL, av_malloc); return f_ ? f_(size) : NULL; }
static inline void *CMedia_av_mallocz(size_t size) { CMEDIA_FN(CMEDIA_AVUTIL, av_mallocz); return f_ ? f_(size) : NULL; }
static inline void CMedia_av_free(void *p) { CMEDIA_FN(CMEDIA_AVUTIL, av_free); if (f_) f_(p); }
static inline void CMedia_av_freep(void *p) { CMEDIA_FN(CMEDIA_AVUTIL, av_freep); if (f_) f_(p); }
static inline AVRational CMedia_av_d2q(double d, int max) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_d2q);
    if (f_) return f_(d, max);
    AVRational zero = { 0, 1 };
    return zero;
}
static inline int CMedia_av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_dict_set); return f_ ? f_(pm, key, value, flags) : AVERROR(ENOSYS);
}
static inline void CMedia_av_dict_free(AVDictionary **m) { CMEDIA_FN(CMEDIA_AVUTIL, av_dict_free); if (f_) f_(m); }
static inline int64_t CMedia_av_rescale_q(int64_t a, AVRational bq, AVRational cq) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_rescale_q); return f_ ? f_(a, bq, cq) : 0;
}
static inline char *CMedia_av_strdup(const char *s) { CMEDIA_FN(CMEDIA_AVUTIL, av_strdup); return f_ ? f_(s) : NULL; }

// libavcodec
static inline void CMedia_av_packet_rescale_ts(AVPacket *pkt, AVRational from, AVRational to) {
    CMEDIA_FN(CMEDIA_AVCODEC, av_packet_rescale_ts); if (f_) f_(pkt, from, to);
}

static inline const char *CMedia_avcodec_get_name(enum AVCodecID id) {
    CMEDIA_FN(CMEDIA_AVCODEC, avcodec_get_name); return f_ ? f_(id) : "unknown";
}
static inline uint8_t *CMedia_av_packet_get_side_data(const AVPacket *pkt, enum AVPacketSideDataType type, size_t *size) {
    CMEDIA_FN(CMEDIA_AVCODEC, av_packet_get_side_data); return f_ ? f_(pkt, type, size) : NULL;
}

// libavformat
static inline AVFormatContext *CMedia_avformat_alloc_context(void) { CMEDIA_FN(CMEDIA_AVFORMAT, avformat_alloc_context); return f_ ? f_() : NULL; }
static inline int CMedia_avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avformat_open_input); return f_ ? f_(ps, url, fmt, options) : AVERROR(ENOSYS);
}
static inline int CMedia_avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avformat_find_stream_info); return f_ ? f_(ic, options) : AVERROR(ENOSYS);
}
static inline int CMedia_av_find_best_stream(AVFormatContext *ic, enum AVMediaType type, int wanted, int related, const AVCodec **decoder, int flags) {
    CMEDIA_FN(CMEDIA_AVFORMAT, av_find_best_stream); return f_ ? f_(ic, type, wanted, related, decoder, flags) : AVERROR(ENOSYS);
}
static inline int CMedia_av_read_frame(AVFormatContext *s, AVPacket *pkt) {
    CMEDIA_FN(CMEDIA_AVFORMAT, av_read_frame); return f_ ? f_(s, pkt) : AVERROR(ENOSYS);
}
static inline void CMedia_avformat_close_input(AVFormatContext **s) { CMEDIA_FN(CMEDIA_AVFORMAT, avformat_close_input); if (f_) f_(s); }
static inline const char *CMedia_avio_enum_protocols(void **opaque, int output) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avio_enum_protocols); return f_ ? f_(opaque, output) : NULL;
}
static inline const AVInputFormat *CMedia_av_find_input_format(const char *name) {
    CMEDIA_FN(CMEDIA_AVFORMAT, av_find_input_format); return f_ ? f_(name) : NULL;
}
static inline int CMedia_avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avformat_alloc_output_context2); return f_ ? f_(ctx, oformat, format_name, filename) : AVERROR(ENOSYS);
}
static inline void CMedia_avformat_free_context(AVFormatContext *s) { CMEDIA_FN(CMEDIA_AVFORMAT, avformat_free_context); if (f_) f_(s); }
static inline AVStream *CMedia_avformat_new_stream(AVFormatContext *s, const AVCodec *c) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avformat_new_stream); return f_ ? f_(s, c) : NULL;
}
static inline int CMedia_avformat_write_header(AVFormatContext *s, AVDictionary **options) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avformat_write_header); return f_ ? f_(s, options) : AVERROR(ENOSYS);
}
static inline int CMedia_av_write_frame(AVFormatContext *s, AVPacket *pkt) {
    CMEDIA_FN(CMEDIA_AVFORMAT, av_write_frame); return f_ ? f_(s, pkt) : AVERROR(ENOSYS);
}
static inline int CMedia_av_write_trailer(AVFormatContext *s) { CMEDIA_FN(CMEDIA_AVFORMAT, av_write_trailer); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline AVIOContext *CMedia_avio_alloc_context(unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
        int (*read_packet)(void *, uint8_t *, int), int (*write_packet)(void *, uint8_t *, int), int64_t (*seek)(void *, int64_t, int)) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avio_alloc_context); return f_ ? f_(buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek) : NULL;
}
static inline void CMedia_avio_context_free(AVIOContext **s) { CMEDIA_FN(CMEDIA_AVFORMAT, avio_context_free); if (f_) f_(s); }
static inline void CMedia_avio_flush(AVIOContext *s) { CMEDIA_FN(CMEDIA_AVFORMAT, avio_flush); if (f_) f_(s); }
static inline int CMedia_avio_open2(AVIOContext **s, const char *url, int flags, const AVIOInterruptCB *cb, AVDictionary **options) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avio_open2); return f_ ? f_(s, url, flags, cb, options) : AVERROR(ENOSYS);
}
static inline int CMedia_avio_closep(AVIOContext **s) { CMEDIA_FN(CMEDIA_AVFORMAT, avio_closep); return f_ ? f_(s) : AVERROR(ENOSYS); }
static inline int CMedia_avformat_network_init(void) { CMEDIA_FN(CMEDIA_AVFORMAT, avformat_network_init); return f_ ? f_() : AVERROR(ENOSYS); }
static inline const char *CMedia_avio_find_protocol_name(const char *url) {
    CMEDIA_FN(CMEDIA_AVFORMAT, avio_find_protocol_name); return f_ ? f_(url) : NULL;
}

// 1 when libavutil, libavcodec and libavformat open and have every function this file wraps;
// else 0, with what failed (dlerror's text or the missing symbol) copied into `why`. Called
// before anything is written.
static inline int CMedia_load_containers(char *why, int size) {
    static const CMedia_symbol needed[] = {
        { CMEDIA_AVUTIL, "av_malloc" }, { CMEDIA_AVUTIL, "av_mallocz" }, { CMEDIA_AVUTIL, "av_free" },
        { CMEDIA_AVUTIL, "av_freep" }, { CMEDIA_AVUTIL, "av_log_set_level" }, { CMEDIA_AVUTIL, "av_d2q" },
        { CMEDIA_AVUTIL, "av_dict_set" }, { CMEDIA_AVUTIL, "av_dict_free" }, { CMEDIA_AVUTIL, "av_strerror" },
        { CMEDIA_AVUTIL, "av_strdup" },
        { CMEDIA_AVCODEC, "av_packet_alloc" }, { CMEDIA_AVCODEC, "av_packet_free" }, { CMEDIA_AVCODEC, "av_packet_unref" },
        { CMEDIA_AVCODEC, "av_packet_rescale_ts" },
        { CMEDIA_AVFORMAT, "avformat_alloc_output_context2" }, { CMEDIA_AVFORMAT, "avformat_free_context" },
        { CMEDIA_AVFORMAT, "avformat_new_stream" }, { CMEDIA_AVFORMAT, "avformat_write_header" },
        { CMEDIA_AVFORMAT, "av_write_frame" }, { CMEDIA_AVFORMAT, "av_write_trailer" },
        { CMEDIA_AVFORMAT, "avio_alloc_context" }, { CMEDIA_AVFORMAT, "avio_context_free" }, { CMEDIA_AVFORMAT, "avio_flush" },
        { CMEDIA_AVFORMAT, "avio_open2" }, { CMEDIA_AVFORMAT, "avio_closep" }, { CMEDIA_AVFORMAT, "avformat_network_init" },
        { CMEDIA_AVFORMAT, "avio_find_protocol_name" },
        // the demuxing side (consume --from a URL or a container file)
        { CMEDIA_AVUTIL, "av_rescale_q" }, { CMEDIA_AVCODEC, "avcodec_get_name" },
        { CMEDIA_AVCODEC, "av_packet_get_side_data" }, { CMEDIA_AVFORMAT, "avformat_alloc_context" },
        { CMEDIA_AVFORMAT, "avformat_open_input" }, { CMEDIA_AVFORMAT, "avformat_find_stream_info" },
        { CMEDIA_AVFORMAT, "av_find_best_stream" }, { CMEDIA_AVFORMAT, "av_read_frame" },
        { CMEDIA_AVFORMAT, "avformat_close_input" }, { CMEDIA_AVFORMAT, "avio_enum_protocols" },
        { CMEDIA_AVFORMAT, "av_find_input_format" },
    };
    return CMedia_require(1 << CMEDIA_AVUTIL | 1 << CMEDIA_AVCODEC | 1 << CMEDIA_AVFORMAT, needed, sizeof needed / sizeof needed[0], why, size);
}

// The state behind an AVIOContext that writes to our own fd: the C callbacks below need a
// plain struct as their opaque pointer, and keep the errno of a failed call for our message.
typedef struct CMedia_fd_io {
    int fd;
    int error;        // errno of the first failed write or seek, 0 while all is well
    int64_t written;  // bytes handed to write(2) so far
} CMedia_fd_io;

// AVIOContext's write callback is a C function pointer: write(2) all of it, EINTR retried.
static inline int CMedia_fd_write(void *opaque, uint8_t *buf, int size) {
    CMedia_fd_io *io = (CMedia_fd_io *)opaque;
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
static inline int64_t CMedia_fd_seek(void *opaque, int64_t offset, int whence) {
    CMedia_fd_io *io = (CMedia_fd_io *)opaque;
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
static inline int CMedia_fd_is_seekable(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0;
}

// avio_alloc_context wants an av_malloc'ed buffer and the two callbacks above; Swift cannot
// name C functions as pointers as simply, so the whole set-up is here.
static inline AVIOContext *CMedia_fd_avio(CMedia_fd_io *io, int seekable) {
    const int size = 256 * 1024;  // a 1080p IDR or a fragment in a few writes, not dozens
    unsigned char *buffer = (unsigned char *)CMedia_av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *pb = CMedia_avio_alloc_context(buffer, size, 1, io, NULL, CMedia_fd_write, seekable ? CMedia_fd_seek : NULL);
    if (!pb) {
        CMedia_av_free(buffer);
        return NULL;
    }
    pb->seekable = seekable ? AVIO_SEEKABLE_NORMAL : 0;
    return pb;
}

// The buffer is ours to free (av_freep through a field), then the context.
static inline void CMedia_avio_free(AVIOContext **pb) {
    if (!pb || !*pb) return;
    CMedia_av_freep(&(*pb)->buffer);
    CMedia_avio_context_free(pb);
}

// Extradata must come from av_malloc with AV_INPUT_BUFFER_PADDING_SIZE zeroed bytes after it.
static inline int CMedia_set_extradata(AVCodecParameters *par, const uint8_t *data, int size) {
    uint8_t *copy = (uint8_t *)CMedia_av_mallocz((size_t)size + AV_INPUT_BUFFER_PADDING_SIZE);
    if (!copy) return AVERROR(ENOMEM);
    memcpy(copy, data, (size_t)size);
    CMedia_av_freep(&par->extradata);
    par->extradata = copy;
    par->extradata_size = size;
    return 0;
}

// An AAC audio track's parameters, for the container writers: what a muxer needs besides
// the extradata (the AudioSpecificConfig). The channel layout is the native one for mono and
// stereo, unspecified beyond.
static inline void CMedia_aac_track(AVCodecParameters *par, int sample_rate, int channels, int frame_size, int64_t bit_rate) {
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
static inline int CMedia_track_channels(const AVCodecParameters *par) { return par->ch_layout.nb_channels; }

// AV_INPUT_BUFFER_PADDING_SIZE is a macro: packet buffers need that many zeros at their end.
static inline int CMedia_padding_size(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }

// av_strerror into a buffer; AVERROR(EPIPE) and friends are macros Swift does not import.
static inline int CMedia_errno_of(int averror) { return averror < 0 && averror > -4096 ? -averror : 0; }

// The deadline of a push's blocking calls (connect, handshake, a write the server does not
// take): libavformat's protocols poll the interrupt callback while they wait, and give up
// with AVERROR_EXIT once it returns 1. `deadline_ns` is CLOCK_MONOTONIC nanoseconds, 0 for
// none; `stop` ends every wait at once. Written by the one thread that uses the muxer.
typedef struct CMedia_interrupt {
    int64_t deadline_ns;
    int stop;
    int fired;  // set when the callback said stop: the call failed because time ran out
} CMedia_interrupt;

static inline int CMedia_interrupt_check(void *opaque) {
    CMedia_interrupt *state = (CMedia_interrupt *)opaque;
    if (__atomic_load_n(&state->stop, __ATOMIC_RELAXED)) return state->fired = 1;
    if (state->deadline_ns == 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec < state->deadline_ns) return 0;
    return state->fired = 1;
}

// The AVIOInterruptCB for `state` (a C function pointer, set here for Swift).
static inline AVIOInterruptCB CMedia_interrupt_callback(CMedia_interrupt *state) {
    AVIOInterruptCB cb = { CMedia_interrupt_check, state };
    return cb;
}

// The URL a muxer with its own protocol (RTSP) opens, av_strdup'ed as avformat wants it.
static inline int CMedia_set_url(AVFormatContext *s, const char *url) {
    char *copy = CMedia_av_strdup(url);
    if (!copy) return AVERROR(ENOMEM);
    CMedia_av_freep(&s->url);
    s->url = copy;
    return 0;
}

// True when the output format opens its own connection (no AVIOContext wanted): RTSP.
static inline int CMedia_format_has_no_file(const AVFormatContext *s) { return (s->oformat->flags & AVFMT_NOFILE) != 0; }

// AVERROR_EXIT is a macro Swift does not import.
static inline int CMedia_error_exit(void) { return AVERROR_EXIT; }

// Ends every wait of the thread using `state` at once: the one field another thread writes
// (a demuxer's reader is stopped from the main thread), so atomically.
static inline void CMedia_interrupt_request_stop(CMedia_interrupt *state) { __atomic_store_n(&state->stop, 1, __ATOMIC_RELAXED); }

// More macros Swift does not import: end of input, try again, no timestamp.
// A demuxer that cannot read on: bytes that make no sense, or a size in them no memory holds.
static inline int CMedia_error_invalid_data(void) { return AVERROR_INVALIDDATA; }
static inline int CMedia_error_no_memory(void) { return AVERROR(ENOMEM); }
static inline int64_t CMedia_no_pts(void) { return AV_NOPTS_VALUE; }

// libsrt, which libavformat links for srt://, logs its warnings (a rejected handshake, a
// connection lost) on stderr by itself, beside nalcast's one line: only its critical ones
// are kept. Looked up through libavformat's handle, which searches the libraries it loaded.
static inline void CMedia_quiet_srt(void) {
    void *h = CMedia_library(CMEDIA_AVFORMAT);
    if (!h) return;
    void (*set_level)(int) = (void (*)(int))dlsym(h, "srt_setloglevel");
    if (set_level) set_level(2);  // LOG_CRIT
}

// 1 when this libavformat has the input protocol `name` (tcp, udp, srt, rtmp, https...).
static inline int CMedia_has_input_protocol(const char *name) {
    void *opaque = NULL;
    const char *p;
    while ((p = CMedia_avio_enum_protocols(&opaque, 0)) != NULL) {
        if (strcmp(p, name) == 0) return 1;
    }
    return 0;
}

// Opens `url` for reading with the interrupt callback set before the first blocking call:
// the context must exist before avformat_open_input for that, so it is made here.
static inline int CMedia_open_input(AVFormatContext **ps, const char *url, CMedia_interrupt *state, AVDictionary **options) {
    AVFormatContext *ctx = CMedia_avformat_alloc_context();
    if (!ctx) return AVERROR(ENOMEM);
    ctx->interrupt_callback = CMedia_interrupt_callback(state);
    *ps = ctx;
    return CMedia_avformat_open_input(ps, url, NULL, options);  // frees the context on failure
}

// Packets read as the container holds them, without libavcodec's parser (and without the
// filling-in of missing times that works on the parser's frames): set after opening, before
// the first packet is read (avformat_find_stream_info reads some).
static inline void CMedia_read_unparsed(AVFormatContext *s) { s->flags |= AVFMT_FLAG_NOPARSE | AVFMT_FLAG_NOFILLIN; }

// The new extradata (avcC or Annex-B parameter sets) a packet carries as side data when the
// stream's parameters change mid-stream (FLV/RTMP after a new sequence header).
static inline const uint8_t *CMedia_new_extradata(const AVPacket *pkt, int *size) {
    size_t n = 0;
    const uint8_t *data = CMedia_av_packet_get_side_data(pkt, AV_PKT_DATA_NEW_EXTRADATA, &n);
    *size = data ? (int)n : 0;
    return data;
}

// The state behind an AVIOContext that writes into memory (the MPEG-TS listener's muxer,
// `TSStreamMuxer`): what the muxer wrote since the owner last took it (`size` reset to 0).
typedef struct CMedia_memory_io {
    uint8_t *data;
    int size;
    int capacity;
    int error;  // ENOMEM once a write could not grow the buffer
} CMedia_memory_io;

// AVIOContext's write callback into `CMedia_memory_io`: appends, growing by doubling.
static inline int CMedia_memory_write(void *opaque, uint8_t *buf, int size) {
    CMedia_memory_io *io = (CMedia_memory_io *)opaque;
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
static inline AVIOContext *CMedia_memory_avio(CMedia_memory_io *io) {
    const int size = 188 * 64;
    unsigned char *buffer = (unsigned char *)CMedia_av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *pb = CMedia_avio_alloc_context(buffer, size, 1, io, NULL, CMedia_memory_write, NULL);
    if (!pb) {
        CMedia_av_free(buffer);
        return NULL;
    }
    pb->seekable = 0;
    return pb;
}

static inline void CMedia_memory_free(CMedia_memory_io *io) {
    free(io->data);
    io->data = NULL;
    io->size = io->capacity = 0;
}

// av_opt_set, for the mpegts muxer's one-shot `resend_headers` flag (PAT and PMT with the next
// packet). Looked up on first use, not required by CMedia_load: without it, PAT and PMT
// come before a keyframe that follows another picture, and every 100 ms.
#include <libavutil/opt.h>
static inline int CMedia_av_opt_set(void *obj, const char *name, const char *val, int search_flags) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_opt_set); return f_ ? f_(obj, name, val, search_flags) : AVERROR(ENOSYS);
}

#endif
