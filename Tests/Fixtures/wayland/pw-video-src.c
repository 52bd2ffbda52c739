// A PipeWire video source for the Wayland tests, doing what a compositor's screen cast does
// and what headless mutter here cannot be made to: change its size while streaming, send a
// pointer move alone as a buffer without pixels and with cursor metadata, or offer DMA-BUF
// buffers only. Built by the tests with `cc pw-video-src.c $(pkg-config --cflags --libs
// libpipewire-0.3)` (Tests/WaylandTests/PipeWireProducerTests.swift).
//
//   pw-video-src NAME WIDTH HEIGHT CONTROL [dmabuf]
//
// It drives its own graph (a cycle 20 times a second) and sends a frame only when something
// changed, as a compositor does; the first, red (ff0000), once its stream streams. It makes the FIFO CONTROL and reads commands from it, one
// a line:
//   color RRGGBB    fill the picture with this colour (a frame)
//   size W H        offer only W x H: the consumer renegotiates (a frame at the new size)
//   pointer X Y     move the pointer (a 16x16 black square, hotspot at its corner): a buffer
//                   with cursor metadata and no pixels
//   rect X Y W H RRGGBB [DX DY DW DH]
//                   fill that rectangle with this colour (a frame), its damage the rectangle
//                   or, given, DX DY DW DH (what a compositor that got its damage wrong sends)
// Every picture carries SPA_META_VideoDamage, as mutter 44 and later send it: what changed
// since the picture before (the whole of it after a colour or a new size), the rectangles
// of the commands since then.
// and prints "node ID" once its node is there and "format W H" at each format negotiated.
#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/buffer/meta.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <signal.h>

#define CURSOR 16
#define CURSOR_META_SIZE (sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + CURSOR * CURSOR * 4)

struct source {
    struct pw_main_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    uint32_t width, height, stride;
    int dmabuf, said_node, streaming;
    uint32_t color;             // 0xRRGGBB
    int pending_frame, pending_pointer;
    int32_t pointer_x, pointer_y;
    uint32_t *picture;          // width x height, what every frame sends
    int whole;                  // the damage since the last frame: all, or `damage` (count of it)
    int damage_count;
    struct spa_region damage[4];
};

static void fill(struct source *s, uint32_t x0, uint32_t y0, uint32_t w, uint32_t h, uint32_t color) {
    for (uint32_t y = y0; y < y0 + h && y < s->height; y++)
        for (uint32_t x = x0; x < x0 + w && x < s->width; x++) s->picture[y * s->width + x] = color;  // B,G,R,x bytes
}

/// The damage since the last frame, into the buffer's damage metadata (the list ends at the
/// first region of size 0).
static void put_damage(struct source *s, struct spa_buffer *buf) {
    struct spa_meta *meta = spa_buffer_find_meta(buf, SPA_META_VideoDamage);
    if (meta == NULL) return;
    struct spa_meta_region *r;
    int i = 0;
    spa_meta_for_each(r, meta) {
        if (s->whole && i == 0) r->region = SPA_REGION(0, 0, s->width, s->height);
        else if (!s->whole && i < s->damage_count) r->region = s->damage[i];
        else r->region = SPA_REGION(0, 0, 0, 0);
        i++;
    }
}

static const struct spa_pod *enum_format(struct spa_pod_builder *b, uint32_t width, uint32_t height) {
    return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(width, height)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)));
}

/// The pointer: its position always; its bitmap with every picture, never with a pointer
/// move alone (which keeps the bitmap last sent). A buffer can be lost while the link
/// starts (one sent as the stream turns to streaming may never reach the consumer), so the
/// bitmap rides on the pictures, each of which the tests see arrive, not on the first
/// buffer only.
static void put_cursor(struct source *s, struct spa_buffer *buf, int bitmap) {
    struct spa_meta_cursor *mc = spa_buffer_find_meta_data(buf, SPA_META_Cursor, sizeof *mc);
    if (mc == NULL) return;
    mc->id = 1;
    mc->position.x = s->pointer_x;
    mc->position.y = s->pointer_y;
    mc->hotspot.x = 0;
    mc->hotspot.y = 0;
    mc->bitmap_offset = 0;
    if (!bitmap) return;
    mc->bitmap_offset = sizeof *mc;
    struct spa_meta_bitmap *bm = SPA_PTROFF(mc, mc->bitmap_offset, struct spa_meta_bitmap);
    bm->format = SPA_VIDEO_FORMAT_RGBA;
    bm->size.width = CURSOR;
    bm->size.height = CURSOR;
    bm->stride = CURSOR * 4;
    bm->offset = sizeof *bm;
    uint8_t *pixels = SPA_PTROFF(bm, bm->offset, uint8_t);
    for (int i = 0; i < CURSOR * CURSOR; i++) { pixels[i * 4] = 0; pixels[i * 4 + 1] = 0; pixels[i * 4 + 2] = 0; pixels[i * 4 + 3] = 255; }
}

/// Sends what is pending, once the stream is streaming (as mutter records only then): a
/// buffer queued while it is still paused never reaches the consumer.
static void on_process(void *data) {
    struct source *s = data;
    if (!s->streaming || (!s->pending_frame && !s->pending_pointer)) return;
    struct pw_buffer *b = pw_stream_dequeue_buffer(s->stream);
    if (b == NULL) return;
    struct spa_buffer *buf = b->buffer;
    struct spa_data *d = &buf->datas[0];
    put_cursor(s, buf, s->pending_frame && d->data != NULL);
    if (s->pending_frame && d->data != NULL) {
        for (uint32_t y = 0; y < s->height; y++) memcpy(SPA_PTROFF(d->data, y * s->stride, void), s->picture + y * s->width, s->width * 4);
        put_damage(s, buf);
        s->whole = 0;
        s->damage_count = 0;
        d->chunk->offset = 0;
        d->chunk->stride = (int32_t)s->stride;
        d->chunk->size = s->stride * s->height;
    } else {
        d->chunk->size = 0;  // the pointer alone
    }
    s->pending_frame = s->pending_pointer = 0;
    pw_stream_queue_buffer(s->stream, b);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct source *s = data;
    (void)old;
    if (state == PW_STREAM_STATE_ERROR) { printf("error %s\n", error ? error : "?"); fflush(stdout); }
    if (!s->said_node && pw_stream_get_node_id(s->stream) != SPA_ID_INVALID) {
        s->said_node = 1;
        printf("node %u\n", pw_stream_get_node_id(s->stream));
        fflush(stdout);
    }
    s->streaming = state == PW_STREAM_STATE_STREAMING;
    if (s->streaming && (s->pending_frame || s->pending_pointer)) pw_stream_trigger_process(s->stream);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct source *s = data;
    struct spa_video_info_raw raw;
    if (param == NULL || id != SPA_PARAM_Format || spa_format_video_raw_parse(param, &raw) < 0) return;
    s->width = raw.size.width;
    s->height = raw.size.height;
    s->stride = SPA_ROUND_UP_N(s->width * 4, 4);
    free(s->picture);
    s->picture = malloc((size_t)s->width * s->height * 4);
    fill(s, 0, 0, s->width, s->height, s->color);
    s->whole = 1;
    uint8_t bytes[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[4];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 8),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(s->stride * s->height),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int(s->stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(s->dmabuf ? (1 << SPA_DATA_DmaBuf) : (1 << SPA_DATA_MemFd)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header), SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor), SPA_PARAM_META_size, SPA_POD_Int(CURSOR_META_SIZE));
    params[3] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * 4, sizeof(struct spa_meta_region),
                                                      sizeof(struct spa_meta_region) * 16));
    pw_stream_update_params(s->stream, params, 4);
    s->pending_frame = 1;
    printf("format %u %u\n", s->width, s->height);
    fflush(stdout);
}

static const struct pw_stream_events events = {
    PW_VERSION_STREAM_EVENTS, .process = on_process, .state_changed = on_state_changed, .param_changed = on_param_changed,
};

static void command(struct source *s, const char *line) {
    unsigned w, h, color;
    int x, y;
    unsigned rw, rh, dw, dh;
    int dx, dy;
    if (sscanf(line, "color %x", &color) == 1) {
        s->color = color;
        if (s->picture) fill(s, 0, 0, s->width, s->height, color);
        s->whole = 1;
        s->pending_frame = 1;
    } else if (sscanf(line, "rect %d %d %u %u %x", &x, &y, &rw, &rh, &color) == 5) {
        if (s->picture) fill(s, (uint32_t)x, (uint32_t)y, rw, rh, color);
        struct spa_region damage = SPA_REGION(x, y, rw, rh);
        if (sscanf(line, "rect %*d %*d %*u %*u %*x %d %d %u %u", &dx, &dy, &dw, &dh) == 4) damage = SPA_REGION(dx, dy, dw, dh);
        if (s->damage_count < 4) s->damage[s->damage_count++] = damage; else s->whole = 1;
        s->pending_frame = 1;
    } else if (sscanf(line, "size %u %u", &w, &h) == 2) {
        uint8_t bytes[256];
        struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
        const struct spa_pod *params[1] = { enum_format(&b, w, h) };
        pw_stream_update_params(s->stream, params, 1);
        return;
    } else if (sscanf(line, "pointer %d %d", &x, &y) == 2) {
        s->pointer_x = x;
        s->pointer_y = y;
        s->pending_pointer = 1;
    }
    pw_stream_trigger_process(s->stream);
}

/// The graph cycles 20 times a second, as a clocked driver's does, whether or not something
/// is pending. A buffer queued while the consumer has not yet taken the one before (it runs
/// late on a loaded machine, or its link is still starting) waits in the stream's queue for
/// the next cycle (pw_stream's process_output): with cycles only on a command, a picture sent
/// right after another (a colour after a new size's first frame) waited for the test's next
/// command, while the test waited for that picture. A trigger that
/// found no buffer (one renegotiating, or all with the consumer) is tried again here too.
/// Before the stream streams, the move to streaming sends what is pending (on_state_changed).
static void on_timer(void *data, uint64_t expirations) {
    struct source *s = data;
    (void)expirations;
    if (s->streaming || s->pending_frame || s->pending_pointer) pw_stream_trigger_process(s->stream);
}

/// SIGTERM ends it, whatever signals the program that started it blocked (a signalfd).
static void on_stop(void *data, int signal_number) {
    struct source *s = data;
    (void)signal_number;
    pw_main_loop_quit(s->loop);
}

static void on_command(void *data, int fd, uint32_t mask) {
    char text[512];
    (void)mask;
    ssize_t n = read(fd, text, sizeof text - 1);
    if (n <= 0) return;
    text[n] = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) command(data, line);
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: pw-video-src NAME WIDTH HEIGHT CONTROL [dmabuf]\n"); return 64; }
    mkfifo(argv[4], 0600);
    int control = open(argv[4], O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (control < 0) { perror(argv[4]); return 66; }
    pw_init(&argc, &argv);
    struct source s = { .color = 0xff0000, .dmabuf = argc > 5 && strcmp(argv[5], "dmabuf") == 0, .pointer_x = -100 };
    s.loop = pw_main_loop_new(NULL);
    s.stream = pw_stream_new_simple(pw_main_loop_get_loop(s.loop), argv[1],
        pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_NODE_NAME, argv[1], NULL), &events, &s);
    uint8_t bytes[256];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(bytes, sizeof bytes);
    const struct spa_pod *params[1] = { enum_format(&b, (uint32_t)atoi(argv[2]), (uint32_t)atoi(argv[3])) };
    pw_stream_connect(s.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY, PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_loop_add_io(pw_main_loop_get_loop(s.loop), control, SPA_IO_IN, true, on_command, &s);
    pw_loop_add_signal(pw_main_loop_get_loop(s.loop), SIGTERM, on_stop, &s);
    struct spa_source *timer = pw_loop_add_timer(pw_main_loop_get_loop(s.loop), on_timer, &s);
    struct timespec interval = { 0, 50 * 1000 * 1000 };
    pw_loop_update_timer(pw_main_loop_get_loop(s.loop), timer, &interval, &interval, false);
    pw_main_loop_run(s.loop);
    pw_stream_destroy(s.stream);
    pw_main_loop_destroy(s.loop);
    free(s.picture);
    return 0;
}
