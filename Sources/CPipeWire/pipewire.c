// libpipewire for CPipeWire.h: a stream on a thread loop of its own, the newest frame kept
// (frames.c hands it to the capture thread). Everything shared between PipeWire's thread
// and the capture thread is read and written under the thread loop's lock.
#include "shim.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "params.h"
#include <spa/utils/result.h>

static void nc_pw_signal(nc_pw *s) {
    uint64_t one = 1;
    ssize_t r = write(s->event_fd, &one, 8);
    (void)r;
}

static void nc_pw_end(nc_pw *s, int state, const char *why) {
    if (s->info.state >= NC_PW_ENDED) return;
    s->info.state = state;
    snprintf(s->info.message, sizeof s->info.message, "%s", why);
    nc_pw_signal(s);
    pw_thread_loop_signal(s->loop, 0);
}

// MARK: the registry: which video nodes there are

/// The link's state: a link that fails (the node and we agree on a format but not on
/// buffers: it offers DMA-BUF only, we map memory) tells only the server, not our stream,
/// which would wait for frames forever.
static void nc_pw_link_info(void *data, const struct pw_link_info *info) {
    nc_pw *s = data;
    if (!(info->change_mask & PW_LINK_CHANGE_MASK_STATE) || info->state != PW_LINK_STATE_ERROR) return;
    char why[256];
    int buffers = info->error && strstr(info->error, "buffers");
    snprintf(why, sizeof why, "PipeWire could not link node %u to nalcast (%s)%s", s->target_id, info->error ? info->error : "error",
             buffers ? ": the node offers no buffers nalcast can map (DMA-BUF only?); it needs a source that offers shared memory (memfd)" : "");
    nc_pw_end(s, s->info.received > 0 ? NC_PW_ENDED : NC_PW_FAILED, why);
}

static const struct pw_link_events nc_pw_link_events = { PW_VERSION_LINK_EVENTS, .info = nc_pw_link_info };

/// Watches the link that brings the node to our stream, once it is there.
static void nc_pw_watch_link(nc_pw *s, uint32_t id, const struct spa_dict *props) {
    const char *input = spa_dict_lookup(props, PW_KEY_LINK_INPUT_NODE);
    if (s->link || s->stream == NULL || input == NULL || (uint32_t)atoi(input) != pw_stream_get_node_id(s->stream)) return;
    s->link = pw_registry_bind(s->registry, id, PW_TYPE_INTERFACE_Link, PW_VERSION_LINK, 0);
    if (s->link) pw_link_add_listener((struct pw_link *)s->link, &s->link_listener, &nc_pw_link_events, s);
}

static void nc_pw_global(void *data, uint32_t id, uint32_t permissions, const char *type,
                                uint32_t version, const struct spa_dict *props) {
    nc_pw *s = data;
    (void)permissions; (void)version;
    if (props && strcmp(type, PW_TYPE_INTERFACE_Link) == 0) nc_pw_watch_link(s, id, props);
    if (strcmp(type, PW_TYPE_INTERFACE_Node) != 0 || props == NULL) return;
    const char *klass = spa_dict_lookup(props, PW_KEY_MEDIA_CLASS);
    if (klass == NULL || strstr(klass, "Video") == NULL) return;
    const char *name = spa_dict_lookup(props, PW_KEY_NODE_NAME);
    const char *serial = spa_dict_lookup(props, PW_KEY_OBJECT_SERIAL);
    char idtext[16];
    snprintf(idtext, sizeof idtext, "%u", id);
    size_t used = strlen(s->nodes);
    if (used + 2 < sizeof s->nodes)
        snprintf(s->nodes + used, sizeof s->nodes - used, "%s%s (%u)", used ? ", " : "", name ? name : "?", id);
    if (s->stream != NULL || (s->target_id != SPA_ID_INVALID && !s->by_serial)) return;
    // An id or a name wins over a serial: node 35's serial may be 38, another node's id.
    int exact = strcmp(s->target, idtext) == 0 || (name && strcmp(s->target, name) == 0);
    if (exact || (s->target_id == SPA_ID_INVALID && serial && strcmp(s->target, serial) == 0)) {
        s->target_id = id;
        s->by_serial = !exact;
        s->info.node = id;
        snprintf(s->info.node_name, sizeof s->info.node_name, "%s", name ? name : "");
    }
}

static void nc_pw_global_remove(void *data, uint32_t id) {
    nc_pw *s = data;
    if (s->target_id != SPA_ID_INVALID && id == s->target_id && s->info.state == NC_PW_STREAMING)
        nc_pw_end(s, NC_PW_ENDED, "the PipeWire node went away (its stream ended)");
}

static const struct pw_registry_events nc_pw_registry_events = {
    PW_VERSION_REGISTRY_EVENTS, .global = nc_pw_global, .global_remove = nc_pw_global_remove,
};

static void nc_pw_core_done(void *data, uint32_t id, int seq) {
    nc_pw *s = data;
    if (id == PW_ID_CORE && seq == s->sync_seq) { s->synced = 1; pw_thread_loop_signal(s->loop, 0); }
}

static void nc_pw_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    nc_pw *s = data;
    (void)seq;
    char why[256];
    if (id == PW_ID_CORE && res == -EPIPE) {
        nc_pw_end(s, NC_PW_ENDED, "PipeWire closed the connection (the server or the compositor exited)");
    } else if (id == PW_ID_CORE) {
        snprintf(why, sizeof why, "PipeWire: %s (%s)", message ? message : "error", spa_strerror(res));
        nc_pw_end(s, s->info.state == NC_PW_STREAMING ? NC_PW_ENDED : NC_PW_FAILED, why);
    }
}

static const struct pw_core_events nc_pw_core_events = {
    PW_VERSION_CORE_EVENTS, .done = nc_pw_core_done, .error = nc_pw_core_error,
};

// MARK: the stream

static void nc_pw_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    nc_pw *s = data;
    (void)old;
    char why[256];
    snprintf(s->info.stream_state, sizeof s->info.stream_state, "%s", pw_stream_state_as_string(state));
    switch (state) {
    case PW_STREAM_STATE_ERROR:
        snprintf(why, sizeof why, "the PipeWire stream failed: %s", error ? error : "unknown error");
        nc_pw_end(s, s->info.state == NC_PW_STREAMING ? NC_PW_ENDED : NC_PW_FAILED, why);
        break;
    case PW_STREAM_STATE_UNCONNECTED:
        nc_pw_end(s, NC_PW_ENDED, "the PipeWire stream was disconnected (the sharing stopped)");
        break;
    default:
        break;
    }
}

static void nc_pw_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    nc_pw *s = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    struct spa_video_info_raw raw;
    uint32_t media_type, media_subtype;
    if (spa_format_parse(param, &media_type, &media_subtype) < 0 || media_type != SPA_MEDIA_TYPE_video ||
        media_subtype != SPA_MEDIA_SUBTYPE_raw || spa_format_video_raw_parse(param, &raw) < 0) {
        nc_pw_end(s, NC_PW_FAILED, "the PipeWire node offers no raw video");
        return;
    }
    uint32_t format = 0;
    switch (raw.format) {
    case SPA_VIDEO_FORMAT_BGRx: case SPA_VIDEO_FORMAT_BGRA: format = NC_PW_BGRX; break;
    case SPA_VIDEO_FORMAT_RGBx: case SPA_VIDEO_FORMAT_RGBA: format = NC_PW_RGBX; break;
    case SPA_VIDEO_FORMAT_xRGB: case SPA_VIDEO_FORMAT_ARGB: format = NC_PW_XRGB; break;
    default:
        nc_pw_end(s, NC_PW_FAILED, "the PipeWire node offers none of BGRx, RGBx, xRGB");
        return;
    }
    if (s->pending) { s->info.withdrawn += 1; pw_stream_queue_buffer(s->stream, s->pending); s->pending = NULL; }
    s->info.format = format;
    s->info.width = raw.size.width;
    s->info.height = raw.size.height;
    s->info.formats += 1;
    uint8_t bytes[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[4];
    pw_stream_update_params(s->stream, params, nc_pw_buffer_params(&b, params, s->want_cursor));
    nc_pw_signal(s);
}

/// True when the buffer carries pixels; counts damage.
static int nc_pw_has_pixels(nc_pw *s, struct pw_buffer *b) {
    struct spa_buffer *buf = b->buffer;
    if (buf->n_datas < 1 || buf->datas[0].chunk == NULL) return 0;
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof *h);
    if (h && (h->flags & SPA_META_HEADER_FLAG_CORRUPTED)) return 0;
    if (buf->datas[0].chunk->size == 0 || (buf->datas[0].chunk->flags & SPA_CHUNK_FLAG_CORRUPTED)) return 0;
    struct spa_meta *damage = spa_buffer_find_meta(buf, SPA_META_VideoDamage);
    if (damage) {
        struct spa_meta_region *r = spa_meta_first(damage);
        if (spa_meta_check(r, damage) && spa_meta_region_is_valid(r)) s->info.damaged += 1;
    }
    return 1;
}

static void nc_pw_process(void *data) {
    nc_pw *s = data;
    struct pw_buffer *b;
    int signal = 0;
    while ((b = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        struct spa_data *d = &b->buffer->datas[0];
        if (d->type == SPA_DATA_DmaBuf) {
            pw_stream_queue_buffer(s->stream, b);
            nc_pw_end(s, NC_PW_FAILED, "the PipeWire node sends DMA-BUF buffers only, which nalcast cannot map: "
                      "it needs a source that offers shared memory (memfd)");
            return;
        }
        if (s->want_cursor && nc_pw_pointer_read(&s->pointer, b->buffer)) {
            s->info.cursor_updates += 1;
            s->info.cursor_serial += 1;
            signal = 1;
        }
        if (d->data == NULL || !nc_pw_has_pixels(s, b)) {
            s->info.metadata_only += 1;
            pw_stream_queue_buffer(s->stream, b);
            continue;
        }
        s->info.received += 1;
        if (s->pending) { s->info.replaced += 1; pw_stream_queue_buffer(s->stream, s->pending); }
        s->pending = b;
        s->pending_picture = s->info.received;
        signal = 1;
    }
    if (s->info.state == NC_PW_CONNECTING) { s->info.state = NC_PW_STREAMING; signal = 1; }
    if (signal) nc_pw_signal(s);
}

/// A buffer going away (the stream renegotiated, or its peer left) must not stay kept: its
/// memory is unmapped after this.
static void nc_pw_remove_buffer(void *data, struct pw_buffer *buffer) {
    nc_pw *s = data;
    if (s->pending == buffer) { s->info.withdrawn += 1; s->pending = NULL; }
    // A frame still reads it in place: wait (the lock let go) until it is converted and
    // released, which needs nothing of this thread; then it is not given back.
    if (s->held == buffer) s->held_removed = 1;
    while (s->held == buffer) pw_thread_loop_wait(s->loop);
}

static const struct pw_stream_events nc_pw_stream_events = {
    PW_VERSION_STREAM_EVENTS, .state_changed = nc_pw_state_changed, .param_changed = nc_pw_param_changed,
    .remove_buffer = nc_pw_remove_buffer, .process = nc_pw_process,
};

// MARK: open and close (from the capture thread)

/// Waits (the loop locked) for the registry's first round of globals.
static int nc_pw_roundtrip(nc_pw *s) {
    s->synced = 0;
    s->sync_seq = pw_core_sync(s->core, PW_ID_CORE, 0);
    while (!s->synced && s->info.state < NC_PW_ENDED) pw_thread_loop_wait(s->loop);
    return s->synced;
}

/// Connects to PipeWire (its socket, or `fd` from the portal when >= 0) and starts a stream
/// from the video node `target` (its id, serial or name). NULL and `error` filled on failure;
/// `*missing` is set when PipeWire answered but has no such node.
nc_pw *nc_pw_open(const char *target, int fd, int cursor, char *error, size_t error_size, int *missing) {
    *missing = 0;
    const char *missing_library = nc_pw_library();
    if (missing_library) { snprintf(error, error_size, "%s", missing_library); *missing = 2; return NULL; }
    nc_pw *s = calloc(1, sizeof *s);
    if (s == NULL) { snprintf(error, error_size, "out of memory"); return NULL; }
    snprintf(s->target, sizeof s->target, "%s", target);
    s->target_id = SPA_ID_INVALID;
    s->want_cursor = cursor;
    s->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->loop = pw_thread_loop_new("nalcast-pw", NULL);
    if (s->event_fd < 0 || s->loop == NULL) { snprintf(error, error_size, "cannot make PipeWire's thread: %s", strerror(errno)); nc_pw_close(s); return NULL; }
    // Buffers mapped, not locked into memory: PipeWire's default mlock()s each as it is
    // mapped, touching every page of every buffer (4 of 8 MB at 1080p) before a frame
    // comes, and again to unlock them at the end (bench/c/pwrecv.c: 7-9 ms CPU a start).
    s->context = pw_context_new(pw_thread_loop_get_loop(s->loop), pw_properties_new("mem.allow-mlock", "false", NULL), 0);
    if (s->context == NULL || pw_thread_loop_start(s->loop) < 0) { snprintf(error, error_size, "cannot start PipeWire's loop"); nc_pw_close(s); return NULL; }
    pw_thread_loop_lock(s->loop);
    s->core = fd >= 0 ? pw_context_connect_fd(s->context, fd, NULL, 0) : pw_context_connect(s->context, NULL, 0);
    if (s->core == NULL) {
        // libpipewire says EHOSTDOWN ("Host is down") when there is no socket to connect to.
        snprintf(error, error_size, "cannot connect to PipeWire: %s (is pipewire running? XDG_RUNTIME_DIR=%s)",
                 errno == EHOSTDOWN ? "no PipeWire socket" : strerror(errno),
                 getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "unset");
        pw_thread_loop_unlock(s->loop); nc_pw_close(s); return NULL;
    }
    pw_core_add_listener(s->core, &s->core_listener, &nc_pw_core_events, s);
    s->registry = pw_core_get_registry(s->core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(s->registry, &s->registry_listener, &nc_pw_registry_events, s);
    if (!nc_pw_roundtrip(s) || s->target_id == SPA_ID_INVALID) {
        if (s->info.state >= NC_PW_ENDED) snprintf(error, error_size, "%s", s->info.message);
        else { *missing = 1; snprintf(error, error_size, "PipeWire has no video node %s (video nodes: %s)", target, s->nodes[0] ? s->nodes : "none"); }
        pw_thread_loop_unlock(s->loop); nc_pw_close(s); return NULL;
    }
    s->stream = pw_stream_new(s->core, "nalcast", pw_properties_new(
        PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen",
        PW_KEY_NODE_DONT_RECONNECT, "true", NULL));
    pw_stream_add_listener(s->stream, &s->stream_listener, &nc_pw_stream_events, s);
    uint8_t bytes[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[1] = { nc_pw_format_param(&b) };
    int rc = pw_stream_connect(s->stream, PW_DIRECTION_INPUT, s->target_id,
        PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_thread_loop_unlock(s->loop);
    if (rc < 0) { snprintf(error, error_size, "cannot connect to PipeWire node %s: %s", target, spa_strerror(rc)); nc_pw_close(s); return NULL; }
    return s;
}

void nc_pw_close(nc_pw *s) {
    if (s == NULL) return;
    if (s->loop) pw_thread_loop_stop(s->loop);
    if (s->link) pw_proxy_destroy(s->link);
    if (s->stream) pw_stream_destroy(s->stream);
    if (s->registry) pw_proxy_destroy((struct pw_proxy *)s->registry);
    if (s->core) pw_core_disconnect(s->core);
    if (s->context) pw_context_destroy(s->context);
    if (s->loop) pw_thread_loop_destroy(s->loop);
    if (s->event_fd >= 0) close(s->event_fd);
    free(s->pointer.pixels);
    free(s);
}
