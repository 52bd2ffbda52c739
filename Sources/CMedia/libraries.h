#ifndef CMEDIA_LIBRARIES_H
#define CMEDIA_LIBRARIES_H
// The one loader of the media libraries nalcast uses without linking them: FFmpeg's
// libavutil, libavcodec, libavformat and libswresample, and libpulse. Each is opened with
// dlopen the first time something asks for it, so a run that needs none (raw Annex-B,
// serving, inspect) maps none of them, nor the hundred codec libraries Debian's libavcodec
// depends on, nor libpulse's D-Bus. Only struct layouts and constants come from the
// headers; every function nalcast calls is a wrapper (containers.h, audio.h) that looks its
// symbol up once and keeps the pointer. The SONAMEs come from the headers' major versions,
// so the libraries opened are those the layouts were compiled against.
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <dlfcn.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/macros.h>
#include <libswresample/swresample.h>

enum {
    CMEDIA_AVUTIL = 0, CMEDIA_AVCODEC = 1, CMEDIA_AVFORMAT = 2, CMEDIA_SWRESAMPLE = 3,
    CMEDIA_PULSE = 4, CMEDIA_PULSE_SIMPLE = 5, CMEDIA_LIBRARIES = 6
};

static inline const char *CMedia_soname(int which) {
    static const char *const names[CMEDIA_LIBRARIES] = {
        "libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR),
        "libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR),
        "libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR),
        "libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR),
        // libpulse's SONAME major has been 0 since its first release; pulse/version.h does not name it.
        "libpulse.so.0",
        "libpulse-simple.so.0",
    };
    return which >= 0 && which < CMEDIA_LIBRARIES ? names[which] : "";
}

// libavformat's major version: Debian's package is libavformat<major> (it brings libavcodec
// and libavutil), for the message when they are missing.
static inline int CMedia_avformat_major(void) { return LIBAVFORMAT_VERSION_MAJOR; }

// The handle of one library, opened on first use; NULL when it cannot be opened. Racing
// threads may both call dlopen, which hands back the same handle (counted twice: harmless).
// libavutil's log is silenced as it opens, here and nowhere else: every failure comes back
// to nalcast as a code, which nalcast says in one line of its own.
static inline void *CMedia_library(int which) {
    static void *handles[CMEDIA_LIBRARIES];
    static int tried[CMEDIA_LIBRARIES];
    if (__atomic_load_n(&tried[which], __ATOMIC_ACQUIRE)) return __atomic_load_n(&handles[which], __ATOMIC_RELAXED);
    void *handle = dlopen(CMedia_soname(which), RTLD_NOW | RTLD_LOCAL);
    if (handle && which == CMEDIA_AVUTIL) {
        void (*set_level)(int) = (void (*)(int))dlsym(handle, "av_log_set_level");
        if (set_level) set_level(AV_LOG_QUIET);
    }
    __atomic_store_n(&handles[which], handle, __ATOMIC_RELAXED);
    __atomic_store_n(&tried[which], 1, __ATOMIC_RELEASE);
    return handle;
}

// One function's pointer, looked up once (NULL when missing: the wrappers then fail softly,
// but CMedia_require has refused the work before any of them runs).
#define CMEDIA_FN(lib, name) \
    static __typeof__(&name) fn_ = NULL; \
    if (!__atomic_load_n(&fn_, __ATOMIC_ACQUIRE)) { \
        void *h_ = CMedia_library(lib); \
        __atomic_store_n(&fn_, h_ ? (__typeof__(&name))dlsym(h_, #name) : NULL, __ATOMIC_RELEASE); \
    } \
    __typeof__(&name) f_ = __atomic_load_n(&fn_, __ATOMIC_ACQUIRE)

// A function some work needs, in the library that has it.
typedef struct CMedia_symbol { int lib; const char *name; } CMedia_symbol;

// 1 when the libraries `mask` names (1 << CMEDIA_...) open and have every one of `needed`
// that is in them; else 0, with what failed (dlerror's text, or the library and the missing
// symbol) copied into `why`. Called before the work that needs them starts.
static inline int CMedia_require(int mask, const CMedia_symbol *needed, size_t count, char *why, int size) {
    for (int lib = 0; lib < CMEDIA_LIBRARIES; lib++) {
        if (!(mask & (1 << lib))) continue;
        if (!CMedia_library(lib)) {
            const char *error = dlerror();
            snprintf(why, (size_t)size, "%s", error ? error : CMedia_soname(lib));
            return 0;
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (!(mask & (1 << needed[i].lib))) continue;
        if (!dlsym(CMedia_library(needed[i].lib), needed[i].name)) {
            snprintf(why, (size_t)size, "%s: no %s", CMedia_soname(needed[i].lib), needed[i].name);
            return 0;
        }
    }
    return 1;
}

// What both containers and sound call.
static inline int CMedia_av_strerror(int errnum, char *buf, size_t size) {
    CMEDIA_FN(CMEDIA_AVUTIL, av_strerror);
    if (f_) return f_(errnum, buf, size);
    if (size > 0) snprintf(buf, size, "error %d", errnum);
    return 0;
}
static inline AVPacket *CMedia_av_packet_alloc(void) { CMEDIA_FN(CMEDIA_AVCODEC, av_packet_alloc); return f_ ? f_() : NULL; }
static inline void CMedia_av_packet_free(AVPacket **pkt) { CMEDIA_FN(CMEDIA_AVCODEC, av_packet_free); if (f_) f_(pkt); }
static inline void CMedia_av_packet_unref(AVPacket *pkt) { CMEDIA_FN(CMEDIA_AVCODEC, av_packet_unref); if (f_) f_(pkt); }

// Macros Swift does not import as such.
static inline int CMedia_error_eof(void) { return AVERROR_EOF; }
static inline int CMedia_error_again(void) { return AVERROR(EAGAIN); }

#endif
