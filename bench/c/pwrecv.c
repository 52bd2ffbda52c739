// pwrecv: the floor of a PipeWire screen capture, for bench/wayland-cpu's still rows.
// Connects to the video node NODE (a PipeWire thread loop, as nalcast's CPipeWire shim),
// negotiates with nalcast's own parameters (Sources/CPipeWire/params.h: its formats at any
// size; memfd or plain memory, mapped; header and damage metadata), and for SECONDS takes each
// buffer and gives it back at once: no copy, no conversion, no encode. What a PipeWire
// capture spends beyond this is its own; this much is PipeWire's (the library's start,
// the connection, the negotiation, the buffers mapped).
//
//   pwrecv NODE SECONDS [mlock]
//
// Without `mlock` the context is made with mem.allow-mlock=false (as nalcast's is): the
// buffers are mapped, not locked. With it, PipeWire's default: every buffer locked into
// memory as it is mapped. Prints the buffers received and their size to stderr.
#include <pipewire/pipewire.h>
#include "../../Sources/CPipeWire/params.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct state {
    struct pw_thread_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    unsigned long received, size;
    uint32_t width, height;
};

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct state *s = data;
    struct spa_video_info_raw raw;
    uint32_t type, subtype;
    if (param == NULL || id != SPA_PARAM_Format) return;
    if (spa_format_parse(param, &type, &subtype) < 0 || spa_format_video_raw_parse(param, &raw) < 0) return;
    s->width = raw.size.width;
    s->height = raw.size.height;
    uint8_t bytes[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[4];
    pw_stream_update_params(s->stream, params, nc_pw_buffer_params(&b, params, 0));
}

static void on_process(void *data) {
    struct state *s = data;
    struct pw_buffer *b;
    while ((b = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        if (b->buffer->datas[0].chunk->size > 0) {
            s->received += 1;
            s->size = b->buffer->datas[0].maxsize;
        }
        pw_stream_queue_buffer(s->stream, b);
    }
}

static const struct pw_stream_events events = {
    PW_VERSION_STREAM_EVENTS, .param_changed = on_param_changed, .process = on_process,
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: pwrecv NODE SECONDS [mlock]\n");
        return 64;
    }
    int lock = argc > 3 && strcmp(argv[3], "mlock") == 0;
    pw_init(NULL, NULL);
    struct state s = { 0 };
    s.loop = pw_thread_loop_new("pwrecv", NULL);
    struct pw_context *context = pw_context_new(pw_thread_loop_get_loop(s.loop),
        lock ? NULL : pw_properties_new("mem.allow-mlock", "false", NULL), 0);
    pw_thread_loop_start(s.loop);
    pw_thread_loop_lock(s.loop);
    struct pw_core *core = pw_context_connect(context, NULL, 0);
    if (core == NULL) {
        fprintf(stderr, "pwrecv: cannot connect to PipeWire\n");
        return 69;
    }
    s.stream = pw_stream_new(core, "pwrecv", pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture",
                                                             PW_KEY_MEDIA_ROLE, "Screen", NULL));
    pw_stream_add_listener(s.stream, &s.listener, &events, &s);
    uint8_t bytes[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[1] = { nc_pw_format_param(&b) };
    pw_stream_connect(s.stream, PW_DIRECTION_INPUT, (uint32_t)atoi(argv[1]),
                      PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_thread_loop_unlock(s.loop);
    sleep((unsigned)atoi(argv[2]));
    pw_thread_loop_lock(s.loop);
    fprintf(stderr, "pwrecv: %lu buffers of %ux%u (%lu bytes each)\n", s.received, s.width, s.height, s.size);
    pw_thread_loop_unlock(s.loop);
    pw_thread_loop_stop(s.loop);
    pw_stream_destroy(s.stream);
    pw_core_disconnect(core);
    pw_context_destroy(context);
    pw_thread_loop_destroy(s.loop);
    return 0;
}
