#ifndef NC_PW_POINTER_H
#define NC_PW_POINTER_H
// The pointer as a PipeWire node's cursor metadata (SPA_META_Cursor) gives it: a position
// and hotspot in every buffer that has the metadata, a bitmap only when it changed. Kept
// here (pointer.c) and read under the thread loop's lock, like the rest of nc_pw.
#include "CPipeWire.h"
#include <spa/buffer/buffer.h>
#include <spa/buffer/meta.h>
#include "params.h"  // NC_PW_CURSOR_MAX

typedef struct {
    nc_pw_cursor cursor;        // where, and the bitmap's size
    uint32_t *pixels;           // the bitmap, premultiplied ARGB words, width*height
    size_t capacity;            // words allocated
} nc_pw_pointer;

/// Takes a buffer's cursor metadata: 1 when the pointer to draw changed.
int nc_pw_pointer_read(nc_pw_pointer *s, struct spa_buffer *buf);
#endif
