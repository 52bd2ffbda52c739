#ifndef CPIPEWIRE_H
#define CPIPEWIRE_H
// A video stream from PipeWire for Swift (pipewire.c): libpipewire's API is callbacks and
// pod-building macros that Swift cannot spell, so this runs the stream on a thread loop of its
// own ("nalcast-pw"), keeps the newest frame it was given, and lets the capture thread read it
// in place (`nc_pw_acquire`) or copy it out (`nc_pw_take`) when it wants one. An eventfd says something happened (a frame, a
// format, the end). libpipewire-0.3.so.0 is opened with dlopen on the first `nc_pw_open`,
// never linked: a nalcast that captures no PipeWire stream needs no PipeWire installed.
#include <stddef.h>
#include <stdint.h>

enum { NC_PW_CONNECTING = 0, NC_PW_STREAMING = 1, NC_PW_ENDED = 2, NC_PW_FAILED = 3 };
// Our pixel formats (Capture's PixelFormat): bytes B,G,R,x / R,G,B,x / x,R,G,B.
enum { NC_PW_BGRX = 1, NC_PW_RGBX = 2, NC_PW_XRGB = 3 };
// Damage rectangles kept per picture taken; more, and the picture is taken as all damage.
enum { NC_PW_MAX_DAMAGE = 16 };

typedef struct {
    int state;                 // NC_PW_*
    int has_frame;             // a frame waits to be taken
    uint32_t width, height;    // the negotiated size (0 before)
    uint32_t format;           // NC_PW_* format, 0 before negotiation
    uint32_t stride;           // bytes per row of the frame taken
    uint64_t received;         // buffers with pixels received
    uint64_t replaced;         // of those, replaced by a newer one before they were taken
    uint64_t withdrawn;        // of those, not taken when PipeWire took their buffer back (a new format, the end)
    uint64_t metadata_only;    // buffers without pixels (a cursor move, no damage)
    uint64_t damaged;          // buffers that carried damage rectangles
    uint64_t formats;          // formats negotiated (1, then one more per size change)
    uint64_t cursor_updates;   // buffers whose cursor metadata moved, showed, hid or reshaped the pointer
    uint64_t cursor_serial;    // bumps at each of those (the pointer to draw changed)
    uint32_t node;             // the node captured
    char node_name[128];
    char message[256];         // why it ended or failed
    char stream_state[32];     // the stream's last state (pw_stream_state_as_string)
    // Of the picture taken (nc_pw_acquire, nc_pw_take): its number among the buffers with
    // pixels received (1 for the first; a gap: pictures replaced or unread between), and what
    // changed since the picture before it as the node's SPA_META_VideoDamage said, x, y,
    // width, height each; damage_count -1 when it did not say (no valid region: all of it).
    uint64_t picture;
    int32_t damage_count;
    uint32_t damage[NC_PW_MAX_DAMAGE][4];
} nc_pw_info;

/// The pointer as the node's cursor metadata (SPA_META_Cursor) last gave it.
typedef struct {
    int visible;               // shown in the stream's area with a bitmap of some size
    int32_t x, y;              // the hotspot's place in the frame, pixels
    int32_t hot_x, hot_y;      // the hotspot in the bitmap
    uint32_t width, height;    // the bitmap's size (0 before any)
    uint64_t serial;           // as info.cursor_serial when this was taken
    uint64_t shape;            // bumps when the bitmap changed
} nc_pw_cursor;

typedef struct nc_pw nc_pw;

/// Connects to PipeWire (its socket, or `fd` from the portal when >= 0) and starts a stream
/// from the video node `target` (its id, serial or name; "" with a portal fd: `node_id`),
/// asking for cursor metadata when `cursor` is set. NULL and `error` filled on failure;
/// `*missing` is set when PipeWire answered but has no such node, 2 when libpipewire is not
/// installed.
nc_pw *nc_pw_open(const char *target, int fd, int cursor, char *error, size_t error_size, int *missing);
/// Stops the stream, its thread and connection, and frees it.
void nc_pw_close(nc_pw *s);
/// Readable when something happened; `nc_pw_drain` clears it.
int nc_pw_event_fd(nc_pw *s);
void nc_pw_drain(nc_pw *s);
/// The state now, without taking anything.
void nc_pw_peek(nc_pw *s, nc_pw_info *info);
/// Copies the waiting frame into `dst` (rows of width*4 bytes) and gives its buffer back.
/// Returns 1 when copied, 0 when there was none, or -needed when `capacity` is too small.
long nc_pw_take(nc_pw *s, uint8_t *dst, size_t capacity, nc_pw_info *info);
/// Holds the waiting frame for reading in place, without a copy: `*data` is its first row,
/// `info->stride` its row bytes, until `nc_pw_release` gives the buffer back (a new format
/// meanwhile waits for that). Returns 1 when held, 0 when there is none, one is held
/// already, or its rows do not fit its chunk (then `nc_pw_take` copies it).
int nc_pw_acquire(nc_pw *s, uint8_t **data, nc_pw_info *info);
void nc_pw_release(nc_pw *s);
/// The pointer now; its bitmap as premultiplied ARGB words (XFixes' layout, what Capture's
/// CursorOverlay blends) into `pixels` when `capacity` (words) holds it.
void nc_pw_take_cursor(nc_pw *s, nc_pw_cursor *cursor, uint32_t *pixels, size_t capacity);
#endif
