#ifndef CWLR_H
#define CWLR_H
// wlroots' screencopy (zwlr_screencopy_manager_v1) for Swift (wlr.c): a Wayland client that
// asks the compositor for copies of an output into shared memory, with damage (version 2:
// copy_with_damage answers only once the output changed). libwayland-client.so.0 is opened
// with dlopen when it is first asked for, never linked. The connection has a thread of its own
// (`nalcast-wlr`) that reads and answers the compositor as it sends (a capture's buffer
// description is answered with the copy at once); the capture thread polls the fd
// `nc_wlr_prepare` gives, calls `nc_wlr_dispatch` when it is readable, and takes frames.
#include <stddef.h>
#include <stdint.h>

enum { NC_WLR_WAITING = 0, NC_WLR_READY = 1, NC_WLR_FAILED = 2, NC_WLR_ENDED = 3 };
enum { NC_WLR_MAX_DAMAGE = 16 };

typedef struct {
    int state;                 // NC_WLR_*
    uint32_t width, height;    // of the frame waiting (or the last one)
    uint32_t stride;
    uint32_t format;           // wl_shm format: 0 ARGB8888, 1 XRGB8888 (bytes B,G,R,A/x), others as DRM fourcc
    uint32_t version;          // the manager's version (2 and up: with damage)
    uint64_t frames;           // frames copied
    uint64_t failed;           // copies the compositor failed
    char message[256];
} nc_wlr_info;

typedef struct nc_wlr nc_wlr;

/// Connects to the compositor (`display` or $WAYLAND_DISPLAY) and asks for the first copy of
/// the output named `output` (wl_output v4's name, or zxdg_output_v1's), or of its first
/// output when `output` is NULL. NULL and `error` on failure; `*code` 1 when there is no
/// compositor or no libwayland, 2 when it has no screencopy, 3 when it has no output of that
/// name (`error` lists those it has).
nc_wlr *nc_wlr_open(const char *display, const char *output, int overlay_cursor, char *error, size_t error_size, int *code);
void nc_wlr_close(nc_wlr *s);
/// The fd that becomes readable when the connection's thread handled something (a copy ready,
/// the end): poll it for reading.
int nc_wlr_prepare(nc_wlr *s);
/// Clears that fd (call when it is readable); -1 when the connection broke.
int nc_wlr_dispatch(nc_wlr *s);
void nc_wlr_peek(nc_wlr *s, nc_wlr_info *info);
/// The ready frame, without a copy: `*data` points at its rows (`info` gives their width,
/// height and stride) in the memory the compositor copied into, which stays the frame's
/// until `nc_wlr_release`; the next copy is asked at once, into the other buffer. The
/// frame's slot, or -1 when none is ready.
int nc_wlr_acquire(nc_wlr *s, uint8_t **data, nc_wlr_info *info);
/// The damage of the frame in `slot` (held): up to NC_WLR_MAX_DAMAGE boxes x, y, width, height
/// into `boxes` (4 * NC_WLR_MAX_DAMAGE numbers), what changed since the copy numbered
/// `*number - 1` (copies are numbered 1, 2, ... as they are ready, every one acquired in
/// turn). Their count, or -1 when unknown (the first copy, more boxes than kept, a failed or
/// upside-down copy before it, a compositor without damage): the whole output.
int nc_wlr_damage(nc_wlr *s, int slot, uint32_t *boxes, uint64_t *number);
/// Gives a frame's buffer back (a copy waiting for it is asked now).
void nc_wlr_release(nc_wlr *s, int slot);
#endif
