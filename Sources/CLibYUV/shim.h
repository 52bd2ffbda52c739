#ifndef CLIBYUV_SHIM_H
#define CLIBYUV_SHIM_H
#include <stdint.h>
#include <libyuv.h>

// libyuv's C++-only overloads hide behind __cplusplus; this checks we see the C entry points
// and gives Swift one symbol with a fixed name for the filter enum it cannot spell portably.
static inline int CLibYUV_filter_box(void) { return (int)kFilterBox; }
#endif
