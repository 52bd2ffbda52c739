// pwrecv: the floor of a PipeWire screen capture, for bench/wayland-cpu's still rows.
// Connects to the video node NODE (a PipeWire thread loop, as nalcast's CPipeWire shim),
// negotiates BGRx/RGBx/xRGB of any size with the same buffer and metadata parameters
// (memfd or plain memory, mapped; header and damage metadata), and for SECONDS takes each
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
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>
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
    const struct spa_pod *params[3];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header), SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * 16, sizeof(struct spa_meta_region),
                                                      sizeof(struct spa_meta_region) * 16));
    pw_stream_update_params(s->stream, params, 3);
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
    struct spa_rectangle def = SPA_RECTANGLE(1280, 720), min = SPA_RECTANGLE(2, 2), max = SPA_RECTANGLE(16384, 16384);
    struct spa_fraction rdef = SPA_FRACTION(30, 1), rmin = SPA_FRACTION(0, 1), rmax = SPA_FRACTION(1000, 1);
    const struct spa_pod *params[1] = { spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video), SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(4, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_RGBx,
                                                        SPA_VIDEO_FORMAT_xRGB),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&def, &min, &max),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&rdef, &rmin, &rmax)) };
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
