// zwlr_screencopy_manager_v1 over libwayland-client (CWlr.h), opened with dlopen. The
// protocol's two interfaces, and xdg-output's two (an output's name where wl_output is older
// than version 4), are described here by hand (their requests and events, as the
// wlr-protocols and wayland-protocols XML define them), and every request is sent with
// wl_proxy_marshal_flags: the inline helpers of wayland-client-protocol.h would link the library.
#define _GNU_SOURCE
#include "CWlr.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <wayland-client-core.h>
#include <wayland-util.h>

// MARK: the library

static struct {
    void *handle;
    struct wl_display *(*display_connect)(const char *);
    void (*display_disconnect)(struct wl_display *);
    int (*display_get_fd)(struct wl_display *);
    int (*display_roundtrip)(struct wl_display *);
    int (*display_dispatch)(struct wl_display *);
    int (*display_dispatch_pending)(struct wl_display *);
    int (*display_flush)(struct wl_display *);
    int (*display_prepare_read)(struct wl_display *);
    int (*display_read_events)(struct wl_display *);
    void (*display_cancel_read)(struct wl_display *);
    struct wl_proxy *(*marshal_flags)(struct wl_proxy *, uint32_t, const struct wl_interface *, uint32_t, uint32_t, ...);
    int (*add_listener)(struct wl_proxy *, void (**)(void), void *);
    uint32_t (*get_version)(struct wl_proxy *);
    void (*proxy_destroy)(struct wl_proxy *);
    const struct wl_interface *registry, *output, *shm, *shm_pool, *buffer;
} wl;
static char lib_error[160];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

/// libwayland's own messages (to stderr) are left out: every failure comes back as a code,
/// which nalcast says in one line of its own.
static void quiet_log(const char *format, va_list arguments) { (void)format; (void)arguments; }

static void *sym(const char *name) {
    void *p = dlsym(wl.handle, name);
    if (p == NULL && !lib_error[0]) snprintf(lib_error, sizeof lib_error, "libwayland-client.so.0 has no %s", name);
    return p;
}

static const struct wl_message frame_requests[3], frame_events[7], manager_requests[3];
static const struct wl_message xdg_manager_requests[2], xdg_output_requests[1], xdg_output_events[5];
static struct wl_interface frame_interface, manager_interface, xdg_manager_interface, xdg_output_interface;
static const struct wl_interface *capture_types[7], *copy_types[1], *xdg_types[2];

static void nc_wlr_load(void) {
    wl.handle = dlopen("libwayland-client.so.0", RTLD_NOW | RTLD_LOCAL);
    if (wl.handle == NULL) { snprintf(lib_error, sizeof lib_error, "libwayland-client.so.0 is not installed (Debian: libwayland-client0)"); return; }
    wl.display_connect = sym("wl_display_connect");
    wl.display_disconnect = sym("wl_display_disconnect");
    wl.display_get_fd = sym("wl_display_get_fd");
    wl.display_roundtrip = sym("wl_display_roundtrip");
    wl.display_dispatch = sym("wl_display_dispatch");
    wl.display_dispatch_pending = sym("wl_display_dispatch_pending");
    wl.display_flush = sym("wl_display_flush");
    wl.display_prepare_read = sym("wl_display_prepare_read");
    wl.display_read_events = sym("wl_display_read_events");
    wl.display_cancel_read = sym("wl_display_cancel_read");
    wl.marshal_flags = sym("wl_proxy_marshal_flags");
    wl.add_listener = sym("wl_proxy_add_listener");
    wl.get_version = sym("wl_proxy_get_version");
    wl.proxy_destroy = sym("wl_proxy_destroy");
    wl.registry = sym("wl_registry_interface");
    wl.output = sym("wl_output_interface");
    wl.shm = sym("wl_shm_interface");
    wl.shm_pool = sym("wl_shm_pool_interface");
    wl.buffer = sym("wl_buffer_interface");
    if (lib_error[0]) { wl.handle = NULL; return; }
    void (*set_log)(void (*)(const char *, va_list)) = (void (*)(void (*)(const char *, va_list)))dlsym(wl.handle, "wl_log_set_handler_client");
    if (set_log) set_log(quiet_log);
    // zwlr_screencopy_frame_v1 and zwlr_screencopy_manager_v1, version 3.
    capture_types[0] = &frame_interface; capture_types[1] = NULL; capture_types[2] = wl.output;
    capture_types[3] = capture_types[4] = capture_types[5] = capture_types[6] = NULL;
    copy_types[0] = wl.buffer;
    frame_interface = (struct wl_interface){ "zwlr_screencopy_frame_v1", 3, 3, frame_requests, 7, frame_events };
    manager_interface = (struct wl_interface){ "zwlr_screencopy_manager_v1", 3, 3, manager_requests, 0, NULL };
    // zxdg_output_manager_v1 and zxdg_output_v1, version 3 (the name event from version 2).
    xdg_types[0] = &xdg_output_interface; xdg_types[1] = wl.output;
    xdg_manager_interface = (struct wl_interface){ "zxdg_output_manager_v1", 3, 2, xdg_manager_requests, 0, NULL };
    xdg_output_interface = (struct wl_interface){ "zxdg_output_v1", 3, 1, xdg_output_requests, 5, xdg_output_events };
}

static const struct wl_message manager_requests[3] = {
    { "capture_output", "nio", capture_types },
    { "capture_output_region", "nioiiii", capture_types },
    { "destroy", "", capture_types + 3 },
};
static const struct wl_message frame_requests[3] = {
    { "copy", "o", copy_types },
    { "destroy", "", capture_types + 3 },
    { "copy_with_damage", "2o", copy_types },
};
static const struct wl_message frame_events[7] = {
    { "buffer", "uuuu", capture_types + 3 },
    { "flags", "u", capture_types + 3 },
    { "ready", "uuu", capture_types + 3 },
    { "failed", "", capture_types + 3 },
    { "damage", "2uuuu", capture_types + 3 },
    { "linux_dmabuf", "3uuu", capture_types + 3 },
    { "buffer_done", "3", capture_types + 3 },
};
static const struct wl_message xdg_manager_requests[2] = {
    { "destroy", "", capture_types + 3 },
    { "get_xdg_output", "no", xdg_types },
};
static const struct wl_message xdg_output_requests[1] = {
    { "destroy", "", capture_types + 3 },
};
static const struct wl_message xdg_output_events[5] = {
    { "logical_position", "ii", capture_types + 3 },
    { "logical_size", "ii", capture_types + 3 },
    { "done", "", capture_types + 3 },
    { "name", "2s", capture_types + 3 },
    { "description", "2s", capture_types + 3 },
};

// MARK: the client

enum { MAX_OUTPUTS = 16, SLOTS = 2 };
enum { SLOT_FREE = 0, SLOT_COPYING = 1, SLOT_READY = 2, SLOT_HELD = 3 };

/// An output the compositor announced, and its name (wl_output v4's, else zxdg_output_v1's).
struct output {
    struct wl_proxy *proxy, *xdg;
    uint32_t version;
    char name[64], xdg_name[64];
};

struct nc_wlr {
    struct wl_display *display;
    struct wl_proxy *registry, *shm, *output, *manager, *xdg_manager, *frame, *pool;
    struct output outputs[MAX_OUTPUTS];
    int output_count;
    uint32_t manager_version;
    int overlay_cursor;
    // the shared memory the compositor copies into: SLOTS buffers of one size, one after
    // the other, so that it copies into one while the capture thread reads the other
    int memfd;
    uint8_t *memory;
    size_t memory_size, slot_size;
    struct wl_proxy *buffers[SLOTS];
    int slots[SLOTS];   // SLOT_*
    uint32_t buffer_width, buffer_height, buffer_stride, buffer_format;
    // the frame under way: its buffer as the compositor described it
    uint32_t width, height, stride, format;
    int copied;     // copy asked for
    int copying;    // into this slot (-1: none)
    int deferred;   // the copy waits for a held buffer's release
    // the damage of the copy under way (-1: unknown, the whole output), and of each slot's
    // copy with its number (info.frames when it was ready)
    uint32_t damage[NC_WLR_MAX_DAMAGE][4];
    int damage_count;
    int damage_lost;   // a copy failed, or came upside down, since the last ready one
    struct { uint32_t rects[NC_WLR_MAX_DAMAGE][4]; int count; uint64_t number; } slot_damage[SLOTS];
    nc_wlr_info info;
    // Once open, the connection's own thread reads and handles what the compositor sends, under
    // `lock`, which the capture thread's calls take too; `event_fd` tells the capture thread
    // that something was handled, `stop_fd` tells the thread to end.
    pthread_mutex_t lock;
    pthread_t thread;
    int thread_started;
    int event_fd, stop_fd;
};

static void end(nc_wlr *s, int state, const char *why) {
    if (s->info.state >= NC_WLR_FAILED) return;
    s->info.state = state;
    snprintf(s->info.message, sizeof s->info.message, "%s", why);
}

// MARK: outputs and their names

static void output_geometry(void *data, struct wl_proxy *o, int32_t x, int32_t y, int32_t w, int32_t h, int32_t subpixel,
                            const char *make, const char *model, int32_t transform) {
    (void)data; (void)o; (void)x; (void)y; (void)w; (void)h; (void)subpixel; (void)make; (void)model; (void)transform;
}
static void output_mode(void *data, struct wl_proxy *o, uint32_t flags, int32_t w, int32_t h, int32_t refresh) {
    (void)data; (void)o; (void)flags; (void)w; (void)h; (void)refresh;
}
static void output_done(void *data, struct wl_proxy *o) { (void)data; (void)o; }
static void output_scale(void *data, struct wl_proxy *o, int32_t factor) { (void)data; (void)o; (void)factor; }
static void output_name(void *data, struct wl_proxy *o, const char *name) {
    struct output *out = data;
    (void)o;
    snprintf(out->name, sizeof out->name, "%s", name);
}
static void output_description(void *data, struct wl_proxy *o, const char *text) { (void)data; (void)o; (void)text; }

static void (*output_listener[6])(void) = {
    (void (*)(void))output_geometry, (void (*)(void))output_mode, (void (*)(void))output_done,
    (void (*)(void))output_scale, (void (*)(void))output_name, (void (*)(void))output_description,
};

static void xdg_position(void *data, struct wl_proxy *o, int32_t x, int32_t y) { (void)data; (void)o; (void)x; (void)y; }
static void xdg_name(void *data, struct wl_proxy *o, const char *name) {
    struct output *out = data;
    (void)o;
    snprintf(out->xdg_name, sizeof out->xdg_name, "%s", name);
}

static void (*xdg_output_listener[5])(void) = {
    (void (*)(void))xdg_position, (void (*)(void))xdg_position, (void (*)(void))output_done,
    (void (*)(void))xdg_name, (void (*)(void))output_description,
};

static const char *output_label(const struct output *out) { return out->name[0] ? out->name : out->xdg_name; }

/// The outputs' names, asked of xdg-output where wl_output is older than version 4, come in
/// one round trip (wl_output v4 sends its name as it is bound, after the registry's).
static void name_outputs(nc_wlr *s) {
    for (int i = 0; i < s->output_count; i++) {
        struct output *out = &s->outputs[i];
        if (out->version >= 4 || !s->xdg_manager) continue;
        out->xdg = wl.marshal_flags(s->xdg_manager, 1, &xdg_output_interface, wl.get_version(s->xdg_manager), 0, NULL, out->proxy);
        wl.add_listener(out->xdg, xdg_output_listener, out);
    }
    wl.display_roundtrip(s->display);
}

/// The output named `name` (the first when NULL: no names asked); NULL and `error` listing
/// them when none is.
static struct output *choose_output(nc_wlr *s, const char *name, char *error, size_t error_size) {
    if (name == NULL) return &s->outputs[0];
    name_outputs(s);
    for (int i = 0; i < s->output_count; i++) if (strcmp(output_label(&s->outputs[i]), name) == 0) return &s->outputs[i];
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < s->output_count && used < sizeof list; i++) {
        const char *label = output_label(&s->outputs[i]);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", label[0] ? label : "(unnamed)");
    }
    if (!s->xdg_manager && s->outputs[0].version < 4) {
        snprintf(error, error_size, "wlr: the compositor names no outputs (no wl_output version 4, no zxdg_output_manager_v1): --source wlr takes its first");
    } else {
        snprintf(error, error_size, "wlr: the compositor has no output %s (it has %s)", name, list);
    }
    return NULL;
}

static void registry_global(void *data, struct wl_proxy *registry, uint32_t name, const char *interface, uint32_t version) {
    nc_wlr *s = data;
    if (strcmp(interface, "wl_shm") == 0 && !s->shm) {
        s->shm = wl.marshal_flags(registry, 0, wl.shm, 1, 0, name, wl.shm->name, 1, NULL);
    } else if (strcmp(interface, "wl_output") == 0 && s->output_count < MAX_OUTPUTS) {
        struct output *out = &s->outputs[s->output_count++];
        out->version = version < 4 ? version : 4;
        out->proxy = wl.marshal_flags(registry, 0, wl.output, out->version, 0, name, wl.output->name, out->version, NULL);
        wl.add_listener(out->proxy, output_listener, out);
    } else if (strcmp(interface, "zxdg_output_manager_v1") == 0 && version >= 2 && !s->xdg_manager) {
        uint32_t v = version < 3 ? version : 3;
        s->xdg_manager = wl.marshal_flags(registry, 0, &xdg_manager_interface, v, 0, name, xdg_manager_interface.name, v, NULL);
    } else if (strcmp(interface, "zwlr_screencopy_manager_v1") == 0 && !s->manager) {
        s->manager_version = version < 3 ? version : 3;
        s->manager = wl.marshal_flags(registry, 0, &manager_interface, s->manager_version, 0, name, manager_interface.name, s->manager_version, NULL);
    }
}

static void registry_global_remove(void *data, struct wl_proxy *registry, uint32_t name) { (void)data; (void)registry; (void)name; }

static void (*registry_listener[2])(void) = { (void (*)(void))registry_global, (void (*)(void))registry_global_remove };

static void capture(nc_wlr *s);
static void *nc_wlr_thread(void *data);

/// The buffers of the size asked for, in a memfd of ours (made again only when it grows).
/// 1 when they must change while the capture thread still reads one: the copy waits.
static int make_buffers(nc_wlr *s) {
    size_t slot = (size_t)s->stride * s->height, size = slot * SLOTS;
    if (s->buffers[0] && s->buffer_width == s->width && s->buffer_height == s->height && s->buffer_stride == s->stride && s->buffer_format == s->format) return 0;
    for (int i = 0; i < SLOTS; i++) if (s->slots[i] == SLOT_HELD) return 1;
    for (int i = 0; i < SLOTS; i++) {
        if (s->buffers[i]) wl.marshal_flags(s->buffers[i], 0, NULL, wl.get_version(s->buffers[i]), WL_MARSHAL_FLAG_DESTROY);
        s->buffers[i] = NULL;
        s->slots[i] = SLOT_FREE;
    }
    if (size > s->memory_size) {
        if (s->pool) { wl.marshal_flags(s->pool, 1, NULL, wl.get_version(s->pool), WL_MARSHAL_FLAG_DESTROY); s->pool = NULL; }
        if (s->memory) munmap(s->memory, s->memory_size);
        s->memory = NULL;
        if (s->memfd < 0) s->memfd = memfd_create("nalcast-wlr", MFD_CLOEXEC);
        if (s->memfd < 0 || ftruncate(s->memfd, (off_t)size) < 0) return -1;
        s->memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
        if (s->memory == MAP_FAILED) { s->memory = NULL; return -1; }
        s->memory_size = size;
        s->pool = wl.marshal_flags(s->shm, 0, wl.shm_pool, 1, 0, NULL, s->memfd, (int32_t)size);
    }
    for (int i = 0; i < SLOTS; i++) {
        s->buffers[i] = wl.marshal_flags(s->pool, 0, wl.buffer, 1, 0, NULL, (int32_t)(slot * (size_t)i), (int32_t)s->width, (int32_t)s->height,
                                         (int32_t)s->stride, s->format);
    }
    s->slot_size = slot;
    s->buffer_width = s->width; s->buffer_height = s->height; s->buffer_stride = s->stride; s->buffer_format = s->format;
    return 0;
}

static void copy(nc_wlr *s) {
    if (s->copied) return;
    if (s->format != 0 && s->format != 1) { end(s, NC_WLR_FAILED, "wlr: the compositor offers no XRGB8888/ARGB8888 shared-memory copy"); return; }
    int made = make_buffers(s);
    if (made < 0) { end(s, NC_WLR_FAILED, "wlr: cannot make the shared memory for a copy"); return; }
    int slot = -1;
    for (int i = 0; i < SLOTS && made == 0; i++) if (s->slots[i] == SLOT_FREE) { slot = i; break; }
    s->deferred = slot < 0;
    if (slot < 0) return;
    s->copied = 1;
    s->copying = slot;
    s->slots[slot] = SLOT_COPYING;
    // Version 2 and up: the copy waits until the output changed (damage-driven).
    wl.marshal_flags(s->frame, s->manager_version >= 2 ? 2 : 0, NULL, wl.get_version(s->frame), 0, s->buffers[slot]);
}

static void frame_buffer(void *data, struct wl_proxy *frame, uint32_t format, uint32_t width, uint32_t height, uint32_t stride) {
    nc_wlr *s = data;
    (void)frame;
    s->format = format; s->width = width; s->height = height; s->stride = stride;
    if (s->manager_version < 3) copy(s);
}
static void frame_flags(void *data, struct wl_proxy *frame, uint32_t flags) {
    nc_wlr *s = data;
    (void)frame;
    // y_invert: the damage is in the other rows; not used for this copy or the next.
    if (flags & 1) s->damage_lost = 1;
}
static void frame_ready(void *data, struct wl_proxy *frame, uint32_t sec_hi, uint32_t sec_lo, uint32_t nsec) {
    nc_wlr *s = data;
    (void)sec_hi; (void)sec_lo; (void)nsec;
    wl.marshal_flags(frame, 1, NULL, wl.get_version(frame), WL_MARSHAL_FLAG_DESTROY);
    s->frame = NULL;
    s->info.frames += 1;
    if (s->copying >= 0) {
        s->slots[s->copying] = SLOT_READY;
        int n = s->manager_version >= 2 && !s->damage_lost && s->damage_count > 0 ? s->damage_count : -1;
        s->slot_damage[s->copying].count = n;
        if (n > 0) memcpy(s->slot_damage[s->copying].rects, s->damage, sizeof s->damage);
        s->slot_damage[s->copying].number = s->info.frames;
        s->damage_lost = 0;
    }
    s->copying = -1;
}
static void frame_failed(void *data, struct wl_proxy *frame) {
    nc_wlr *s = data;
    if (s->copying >= 0) s->slots[s->copying] = SLOT_FREE;
    s->copying = -1;
    wl.marshal_flags(frame, 1, NULL, wl.get_version(frame), WL_MARSHAL_FLAG_DESTROY);
    s->frame = NULL;
    s->info.failed += 1;
    s->damage_lost = 1;
    // A copy fails when the output went away, or changed size under it: ask again, but
    // give up after a run of failures.
    if (s->info.failed > 100 && s->info.frames == 0) { end(s, NC_WLR_FAILED, "wlr: the compositor fails every copy"); return; }
    capture(s);
}
static void frame_damage(void *data, struct wl_proxy *frame, uint32_t x, uint32_t y, uint32_t w, uint32_t h) {
    nc_wlr *s = data;
    (void)frame;
    // More boxes than kept: the whole output (the converter would do it whole anyway).
    if (s->damage_count < 0 || s->damage_count == NC_WLR_MAX_DAMAGE) { s->damage_count = -1; return; }
    uint32_t *box = s->damage[s->damage_count++];
    box[0] = x; box[1] = y; box[2] = w; box[3] = h;
}
static void frame_dmabuf(void *data, struct wl_proxy *frame, uint32_t format, uint32_t w, uint32_t h) {
    (void)data; (void)frame; (void)format; (void)w; (void)h;
}
static void frame_buffer_done(void *data, struct wl_proxy *frame) { (void)frame; copy(data); }

static void (*frame_listener[7])(void) = {
    (void (*)(void))frame_buffer, (void (*)(void))frame_flags, (void (*)(void))frame_ready, (void (*)(void))frame_failed,
    (void (*)(void))frame_damage, (void (*)(void))frame_dmabuf, (void (*)(void))frame_buffer_done,
};

/// Asks for a copy of the output (the answer: buffer, buffer_done, then ready or failed).
static void capture(nc_wlr *s) {
    s->copied = 0;
    s->damage_count = 0;
    s->copying = -1;
    s->deferred = 0;
    s->frame = wl.marshal_flags(s->manager, 0, &frame_interface, wl.get_version(s->manager), 0, NULL, s->overlay_cursor, s->output);
    wl.add_listener(s->frame, frame_listener, s);
}

nc_wlr *nc_wlr_open(const char *display, const char *output, int overlay_cursor, char *error, size_t error_size, int *code) {
    *code = 1;
    pthread_once(&lib_once, nc_wlr_load);
    if (wl.handle == NULL) { snprintf(error, error_size, "wlr: %s", lib_error); return NULL; }
    nc_wlr *s = calloc(1, sizeof *s);
    if (s == NULL) { snprintf(error, error_size, "wlr: out of memory"); return NULL; }
    s->memfd = -1;
    s->copying = -1;
    s->event_fd = s->stop_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    s->overlay_cursor = overlay_cursor;
    const char *name = display ? display : getenv("WAYLAND_DISPLAY");
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if ((name == NULL || name[0] != '/') && (runtime == NULL || runtime[0] == 0)) {
        snprintf(error, error_size, "wlr: cannot connect to the Wayland compositor %s: XDG_RUNTIME_DIR is not set", name ? name : "wayland-0");
        nc_wlr_close(s);
        return NULL;
    }
    s->display = wl.display_connect(display);
    if (s->display == NULL) {
        snprintf(error, error_size, "wlr: cannot connect to the Wayland compositor %s: %s%s", name ? name : "wayland-0", strerror(errno),
                 name ? "" : " (WAYLAND_DISPLAY is not set)");
        nc_wlr_close(s);
        return NULL;
    }
    s->registry = wl.marshal_flags((struct wl_proxy *)s->display, 1, wl.registry, 1, 0, NULL);
    wl.add_listener(s->registry, registry_listener, s);
    wl.display_roundtrip(s->display);
    if (!s->manager || !s->shm || s->output_count == 0) {
        *code = 2;
        snprintf(error, error_size, "wlr: the compositor has %s (wlroots' screencopy: sway, Hyprland, river, Wayfire; elsewhere use --source portal)",
                 !s->manager ? "no zwlr_screencopy_manager_v1" : !s->shm ? "no wl_shm" : "no output");
        nc_wlr_close(s);
        return NULL;
    }
    struct output *chosen = choose_output(s, output, error, error_size);
    if (chosen == NULL) {
        *code = 3;
        nc_wlr_close(s);
        return NULL;
    }
    s->output = chosen->proxy;
    s->info.version = s->manager_version;
    capture(s);
    wl.display_flush(s->display);
    s->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->event_fd < 0 || s->stop_fd < 0 || pthread_create(&s->thread, NULL, nc_wlr_thread, s) != 0) {
        snprintf(error, error_size, "wlr: cannot start the connection's thread: %s", strerror(errno));
        nc_wlr_close(s);
        return NULL;
    }
    pthread_setname_np(s->thread, "nalcast-wlr");
    s->thread_started = 1;
    return s;
}

static void nc_wlr_signal(nc_wlr *s) {
    uint64_t one = 1;
    ssize_t written = write(s->event_fd, &one, sizeof one);
    (void)written;
}

/// The connection's own thread (`nalcast-wlr`): what the compositor sends is read the moment
/// it comes and handled under the lock, whatever the capture thread is doing (an encode of
/// 5-15 ms at 1080p): a capture's buffer_done is answered with the copy at once, so that the
/// compositor copies the next change during the encode; a ready copy, the end or a failure is
/// told to the capture thread through `event_fd`.
static void *nc_wlr_thread(void *data) {
    nc_wlr *s = data;
    int fd = wl.display_get_fd(s->display);
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (wl.display_prepare_read(s->display) != 0) wl.display_dispatch_pending(s->display);
        wl.display_flush(s->display);
        pthread_mutex_unlock(&s->lock);
        nc_wlr_signal(s);
        struct pollfd fds[2] = { { .fd = fd, .events = POLLIN }, { .fd = s->stop_fd, .events = POLLIN } };
        if (poll(fds, 2, -1) < 0 && errno == EINTR) { wl.display_cancel_read(s->display); continue; }
        if (fds[1].revents) { wl.display_cancel_read(s->display); return NULL; }
        if (wl.display_read_events(s->display) < 0) {
            pthread_mutex_lock(&s->lock);
            end(s, NC_WLR_ENDED, "wlr: the compositor closed the connection (it exited)");
            pthread_mutex_unlock(&s->lock);
            nc_wlr_signal(s);
            return NULL;
        }
    }
}

int nc_wlr_prepare(nc_wlr *s) {
    return s->event_fd;
}

int nc_wlr_dispatch(nc_wlr *s) {
    uint64_t count;
    ssize_t got = read(s->event_fd, &count, sizeof count);
    (void)got;
    pthread_mutex_lock(&s->lock);
    int ended = s->info.state == NC_WLR_ENDED;
    pthread_mutex_unlock(&s->lock);
    return ended ? -1 : 0;
}

static void nc_wlr_peek_locked(nc_wlr *s, nc_wlr_info *info) {
    *info = s->info;
    int ready = 0;
    for (int i = 0; i < SLOTS; i++) ready |= s->slots[i] == SLOT_READY;
    if (info->state < NC_WLR_FAILED) info->state = ready ? NC_WLR_READY : NC_WLR_WAITING;
    info->width = s->buffer_width; info->height = s->buffer_height; info->stride = s->buffer_stride; info->format = s->buffer_format;
}

void nc_wlr_peek(nc_wlr *s, nc_wlr_info *info) {
    pthread_mutex_lock(&s->lock);
    nc_wlr_peek_locked(s, info);
    pthread_mutex_unlock(&s->lock);
}

int nc_wlr_acquire(nc_wlr *s, uint8_t **data, nc_wlr_info *info) {
    pthread_mutex_lock(&s->lock);
    nc_wlr_peek_locked(s, info);
    int slot = -1;
    for (int i = 0; i < SLOTS; i++) if (s->slots[i] == SLOT_READY) slot = i;
    if (slot >= 0) {
        s->slots[slot] = SLOT_HELD;
        *data = s->memory + s->slot_size * (size_t)slot;
        capture(s);
        wl.display_flush(s->display);
    }
    pthread_mutex_unlock(&s->lock);
    return slot;
}

int nc_wlr_damage(nc_wlr *s, int slot, uint32_t *boxes, uint64_t *number) {
    if (slot < 0 || slot >= SLOTS) return -1;
    pthread_mutex_lock(&s->lock);
    *number = s->slot_damage[slot].number;
    int n = s->slot_damage[slot].count;
    if (n > 0) memcpy(boxes, s->slot_damage[slot].rects, (size_t)n * 4 * sizeof(uint32_t));
    pthread_mutex_unlock(&s->lock);
    return n;
}

void nc_wlr_release(nc_wlr *s, int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    pthread_mutex_lock(&s->lock);
    if (s->slots[slot] == SLOT_HELD) {
        s->slots[slot] = SLOT_FREE;
        if (s->deferred && s->frame) {
            copy(s);
            wl.display_flush(s->display);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void nc_wlr_close(nc_wlr *s) {
    if (s == NULL) return;
    if (s->thread_started) {
        uint64_t one = 1;
        ssize_t written = write(s->stop_fd, &one, sizeof one);
        (void)written;
        pthread_join(s->thread, NULL);
    }
    if (s->event_fd >= 0) close(s->event_fd);
    if (s->stop_fd >= 0) close(s->stop_fd);
    pthread_mutex_destroy(&s->lock);
    if (s->display) wl.display_disconnect(s->display);
    if (s->memory) munmap(s->memory, s->memory_size);
    if (s->memfd >= 0) close(s->memfd);
    free(s);
}
