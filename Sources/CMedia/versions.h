#ifndef CMEDIA_VERSIONS_H
#define CMEDIA_VERSIONS_H
#include "libraries.h"
#include <libavutil/avutil.h>
#include <pulse/version.h>
// The versions of the media libraries for `nalcast --version`: the headers nalcast was built
// against, and the library the loader opens (0 or NULL when it does not open). Asking opens
// the library, as any use of it does.

// FFmpeg's AV_VERSION_INT (major << 16 | minor << 8 | micro) of the headers.
static inline unsigned CMedia_header_version(int which) {
    switch (which) {
    case CMEDIA_AVUTIL: return LIBAVUTIL_VERSION_INT;
    case CMEDIA_AVCODEC: return LIBAVCODEC_VERSION_INT;
    case CMEDIA_AVFORMAT: return LIBAVFORMAT_VERSION_INT;
    case CMEDIA_SWRESAMPLE: return LIBSWRESAMPLE_VERSION_INT;
    default: return 0;
    }
}

// The same of the library that runs: its avutil_version(), avcodec_version()...
static inline unsigned CMedia_running_version(int which) {
    static const char *const functions[] = { "avutil_version", "avcodec_version", "avformat_version", "swresample_version" };
    if (which < CMEDIA_AVUTIL || which > CMEDIA_SWRESAMPLE) return 0;
    void *handle = CMedia_library(which);
    if (!handle) return 0;
    unsigned (*version)(void) = (unsigned (*)(void))dlsym(handle, functions[which]);
    return version ? version() : 0;
}

// libpulse's headers' version ("16.1.0") and the running library's.
static inline const char *CMedia_pulse_header_version(void) { return pa_get_headers_version(); }
static inline const char *CMedia_pulse_running_version(void) {
    void *handle = CMedia_library(CMEDIA_PULSE);
    if (!handle) return NULL;
    const char *(*version)(void) = (const char *(*)(void))dlsym(handle, "pa_get_library_version");
    return version ? version() : NULL;
}
#endif
