// What the capture thread takes from the stream (CPipeWire.h): the newest frame, read in
// place or copied out, and the pointer; all under the thread loop's lock.
#include "shim.h"
#include <stdint.h>
#include <string.h>
#include <unistd.h>

int nc_pw_event_fd(nc_pw *s) { return s->event_fd; }

/// Clears the eventfd.
void nc_pw_drain(nc_pw *s) {
    uint64_t n;
    ssize_t r = read(s->event_fd, &n, 8);
    (void)r;
}

/// The state now, without taking anything.
void nc_pw_peek(nc_pw *s, nc_pw_info *info) {
    pw_thread_loop_lock(s->loop);
    *info = s->info;
    info->has_frame = s->pending != NULL;
    if (s->pending) info->stride = s->pending->buffer->datas[0].chunk->stride;
    pw_thread_loop_unlock(s->loop);
}

/// Where the rows of a frame's buffer are: its first row's offset and the bytes from one row
/// to the next (the picture's own row bytes when the node gives no stride).
static void nc_pw_rows(const nc_pw *s, const struct spa_data *d, uint32_t *offset, size_t *stride) {
    int32_t given = d->chunk->stride;
    *stride = given > 0 ? (size_t)given : (size_t)s->info.width * 4;
    *offset = d->chunk->offset % (d->maxsize ? d->maxsize : 1);
}

/// The waiting frame's number and damage into `info` (the buffer still ours). The node's
/// regions up to the first invalid one (a size of 0: the list's end), clipped to the
/// picture; none valid, too many, or no damage metadata: -1, all of it. A compositor that
/// fills fewer regions than the metadata holds may leave older ones behind it: more than
/// changed, never less.
static void nc_pw_take_damage(const nc_pw *s, struct pw_buffer *b, nc_pw_info *info) {
    info->picture = s->pending_picture;
    info->damage_count = -1;
    struct spa_meta *meta = spa_buffer_find_meta(b->buffer, SPA_META_VideoDamage);
    if (meta == NULL) return;
    int n = 0;
    struct spa_meta_region *r;
    spa_meta_for_each(r, meta) {
        if (!spa_meta_region_is_valid(r)) break;
        if (n == NC_PW_MAX_DAMAGE) return;
        int64_t x0 = r->region.position.x, y0 = r->region.position.y;
        int64_t x1 = x0 + r->region.size.width, y1 = y0 + r->region.size.height;
        if (x0 < 0) x0 = 0;
        if (y0 < 0) y0 = 0;
        if (x1 > s->info.width) x1 = s->info.width;
        if (y1 > s->info.height) y1 = s->info.height;
        if (x1 <= x0 || y1 <= y0) continue;
        uint32_t *box = info->damage[n++];
        box[0] = (uint32_t)x0; box[1] = (uint32_t)y0; box[2] = (uint32_t)(x1 - x0); box[3] = (uint32_t)(y1 - y0);
    }
    if (n > 0) info->damage_count = n;
}

/// Copies the waiting frame into `dst` (rows of width*4 bytes) and gives its buffer back.
/// Returns 1 when copied, 0 when there was none, or -needed when `capacity` is too small.
long nc_pw_take(nc_pw *s, uint8_t *dst, size_t capacity, nc_pw_info *info) {
    pw_thread_loop_lock(s->loop);
    *info = s->info;
    info->has_frame = 0;
    long result = 0;
    struct pw_buffer *b = s->pending;
    if (b) {
        struct spa_data *d = &b->buffer->datas[0];
        size_t row = (size_t)s->info.width * 4, rows = s->info.height, stride;
        uint32_t offset;
        nc_pw_rows(s, d, &offset, &stride);
        if (row * rows > capacity) {
            result = -(long)(row * rows);
        } else {
            const uint8_t *src = (const uint8_t *)d->data + offset;
            size_t available = d->maxsize - offset;
            size_t copy_rows = rows;
            if (stride * (rows - 1) + row > available) copy_rows = available / stride;
            for (size_t y = 0; y < copy_rows; y++) memcpy(dst + y * row, src + y * stride, row);
            if (copy_rows < rows) memset(dst + copy_rows * row, 0, (rows - copy_rows) * row);
            info->stride = (uint32_t)row;
            nc_pw_take_damage(s, b, info);
            pw_stream_queue_buffer(s->stream, b);
            s->pending = NULL;
            result = 1;
        }
    }
    pw_thread_loop_unlock(s->loop);
    return result;
}

/// Holds the waiting frame for reading in place: `*data` its first row, `info->stride` its
/// row bytes; 1 when held, 0 when there is none or one is held already.
int nc_pw_acquire(nc_pw *s, uint8_t **data, nc_pw_info *info) {
    pw_thread_loop_lock(s->loop);
    *info = s->info;
    info->has_frame = 0;
    struct pw_buffer *b = s->pending;
    int held = 0;
    if (b && s->held == NULL) {
        struct spa_data *d = &b->buffer->datas[0];
        size_t row = (size_t)s->info.width * 4, rows = s->info.height, stride;
        uint32_t offset;
        nc_pw_rows(s, d, &offset, &stride);
        // A chunk shorter than the picture (a node's odd stride) is copied instead (nc_pw_take).
        if (stride >= row && offset + stride * rows <= d->maxsize) {
            *data = (uint8_t *)d->data + offset;
            info->stride = (uint32_t)stride;
            nc_pw_take_damage(s, b, info);
            s->held = b;
            s->held_removed = 0;
            s->pending = NULL;
            held = 1;
        }
    }
    pw_thread_loop_unlock(s->loop);
    return held;
}

/// Gives the held frame's buffer back to PipeWire (the frame was converted).
void nc_pw_release(nc_pw *s) {
    pw_thread_loop_lock(s->loop);
    if (s->held && !s->held_removed) pw_stream_queue_buffer(s->stream, s->held);
    s->held = NULL;
    pw_thread_loop_signal(s->loop, 0);
    pw_thread_loop_unlock(s->loop);
}

void nc_pw_take_cursor(nc_pw *s, nc_pw_cursor *cursor, uint32_t *pixels, size_t capacity) {
    pw_thread_loop_lock(s->loop);
    *cursor = s->pointer.cursor;
    cursor->serial = s->info.cursor_serial;
    size_t words = (size_t)cursor->width * cursor->height;
    if (pixels && words <= capacity && words > 0) memcpy(pixels, s->pointer.pixels, words * 4);
    pw_thread_loop_unlock(s->loop);
}

