// The pointer from PipeWire's cursor metadata, for pipewire.c (pointer.h).
#include "pointer.h"
#include <stdlib.h>
#include <string.h>
#include <spa/param/video/raw.h>

/// Copies a cursor bitmap (RGBA, BGRA, ARGB or ABGR bytes, premultiplied as mutter and KWin
/// send it) into premultiplied ARGB words. 0 when its format or size is not one we take.
static int nc_pw_pointer_bitmap(nc_pw_pointer *s, const struct spa_meta_bitmap *bm, size_t room) {
    uint32_t w = bm->size.width, h = bm->size.height;
    int r, g, b, a;  // each channel's byte in a pixel
    switch (bm->format) {
    case SPA_VIDEO_FORMAT_RGBA: r = 0; g = 1; b = 2; a = 3; break;
    case SPA_VIDEO_FORMAT_BGRA: b = 0; g = 1; r = 2; a = 3; break;
    case SPA_VIDEO_FORMAT_ARGB: a = 0; r = 1; g = 2; b = 3; break;
    case SPA_VIDEO_FORMAT_ABGR: a = 0; b = 1; g = 2; r = 3; break;
    default: return 0;
    }
    if (w > NC_PW_CURSOR_MAX || h > NC_PW_CURSOR_MAX || bm->stride < (int32_t)(w * 4)) return 0;
    if (w > 0 && h > 0 && bm->offset + (size_t)bm->stride * (h - 1) + w * 4 > room) return 0;
    if ((size_t)w * h > s->capacity) {
        uint32_t *grown = realloc(s->pixels, (size_t)w * h * 4);
        if (grown == NULL) return 0;
        s->pixels = grown;
        s->capacity = (size_t)w * h;
    }
    const uint8_t *src = (const uint8_t *)bm + bm->offset;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)y * (size_t)bm->stride;
        for (uint32_t x = 0; x < w; x++) {
            const uint8_t *p = row + x * 4;
            s->pixels[y * w + x] = (uint32_t)p[a] << 24 | (uint32_t)p[r] << 16 | (uint32_t)p[g] << 8 | p[b];
        }
    }
    s->cursor.width = w;
    s->cursor.height = h;
    s->cursor.shape += 1;
    return 1;
}

/// Takes a buffer's cursor metadata: 1 when the pointer to draw changed (moved, showed,
/// hid, new bitmap). A valid id with no bitmap yet keeps the last one; an invalid id (mutter:
/// the pointer is off this stream's area) hides it, as OBS reads it.
int nc_pw_pointer_read(nc_pw_pointer *s, struct spa_buffer *buf) {
    struct spa_meta *meta = spa_buffer_find_meta(buf, SPA_META_Cursor);
    if (meta == NULL || meta->size < sizeof(struct spa_meta_cursor)) return 0;
    const struct spa_meta_cursor *mc = meta->data;
    nc_pw_cursor *c = &s->cursor;
    nc_pw_cursor before = *c;
    if (!spa_meta_cursor_is_valid(mc)) {
        c->visible = 0;
        return before.visible;
    }
    if (mc->bitmap_offset >= sizeof *mc && mc->bitmap_offset + sizeof(struct spa_meta_bitmap) <= meta->size) {
        const struct spa_meta_bitmap *bm = SPA_PTROFF(mc, mc->bitmap_offset, const struct spa_meta_bitmap);
        if (spa_meta_bitmap_is_valid(bm)) nc_pw_pointer_bitmap(s, bm, meta->size - mc->bitmap_offset);
        c->hot_x = mc->hotspot.x;
        c->hot_y = mc->hotspot.y;
    }
    c->x = mc->position.x;
    c->y = mc->position.y;
    c->visible = c->width > 0 && c->height > 0;
    return c->visible != before.visible || c->shape != before.shape ||
           (c->visible && (c->x != before.x || c->y != before.y || c->hot_x != before.hot_x || c->hot_y != before.hot_y));
}

