#ifndef CXCBSHM_SHIM_H
#define CXCBSHM_SHIM_H
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/randr.h>

// xcb_shm_id is an extern of an incomplete struct type: Swift cannot take its address.
static inline xcb_extension_t *CXCBShm_extension_id(void) { return &xcb_shm_id; }
// Same for the XFixes extension (cursor image).
static inline xcb_extension_t *CXCBShm_xfixes_extension_id(void) { return &xcb_xfixes_id; }
// Same for RandR (screen size change notifications).
static inline xcb_extension_t *CXCBShm_randr_extension_id(void) { return &xcb_randr_id; }
#endif
