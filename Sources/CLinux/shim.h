#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Parts of glibc that Swift's Glibc module leaves out. Nothing to link: they are in libc.

// mallopt and its M_* parameters live in <malloc.h>, which the Glibc module does not include.
#include <malloc.h>

// eventfd lives in <sys/eventfd.h>, which the Glibc module does not include either.
#include <sys/eventfd.h>

/// A non-blocking, close-on-exec eventfd (`CaptureWakeUp`); -1 on failure.
static inline int CLinux_wakeup_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
#endif
