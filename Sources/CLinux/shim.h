#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Parts of glibc that Swift's Glibc module leaves out. Nothing to link: they are in libc.

// mallopt and its M_* parameters live in <malloc.h>, which the Glibc module does not include.
#include <malloc.h>
#endif
