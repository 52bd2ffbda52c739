#ifndef CX264_SHIM_H
#define CX264_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <x264.h>

// x264 asks for transparent huge pages on each buffer of 2 MiB or more (madvise
// MADV_HUGEPAGE), which the kernel's default THP mode ("madvise") grants: each 2 MiB page is
// resident whole, used or not, so its frame and lookahead buffers cost 6.3 MiB more at
// 1080p (45.6 -> 39.3 MiB peak RSS for produce --preset ultrafast), for no CPU difference we
// could measure at that size. PR_SET_THP_DISABLE turns huge pages off for the whole process
// (and what it execs); prctl is variadic, which Swift cannot call. 0, or -1 with errno.
static inline int CX264_disable_huge_pages(void) { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }

// x264_encoder_open is a macro that pastes the ABI version (x264_encoder_open_164).
static inline x264_t *CX264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }
// X264_BUILD is a macro constant: the ABI version we compiled against.
static inline int CX264_build(void) { return X264_BUILD; }

// x264's pf_log receives a va_list, which Swift cannot take: format it here and pass the text on.
typedef struct CX264_log_target { void (*log)(void *context, int level, const char *message); void *context; } CX264_log_target;
static inline void CX264_log_trampoline(void *target, int level, const char *format, va_list args) {
    char message[512];
    vsnprintf(message, sizeof message, format, args);
    CX264_log_target *t = (CX264_log_target *)target;
    t->log(t->context, level, message);
}
static inline void CX264_param_set_log(x264_param_t *param, CX264_log_target *target) {
    param->pf_log = CX264_log_trampoline;
    param->p_log_private = target;
}
#endif
