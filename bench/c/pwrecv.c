// pwrecv: the floor of a PipeWire screen capture, for bench/wayland-cpu's still rows.
// Connects to the video node NODE (a PipeWire thread loop, as nalcast's CPipeWire shim),
// negotiates with nalcast's own parameters (Sources/CPipeWire/params.h: its formats at any
// size; memfd or plain memory, mapped; header and damage metadata), and for SECONDS takes each
// buffer and gives it back at once: no copy, no conversion, no encode. What a PipeWire
// capture spends beyond this is its own; this much is PipeWire's (the library's start,
// the connection, the negotiation, the buffers mapped).
//
//   pwrecv NODE SECONDS [mlock] [times] [cursor]
//
// Without `mlock` the context is made with mem.allow-mlock=false (as nalcast's is): the
// buffers are mapped, not locked. With it, PipeWire's default: every buffer locked into
// memory as it is mapped. Prints the buffers received and their size to stderr. Ends after
// SECONDS, or sooner at SIGINT or SIGTERM (what it received until then is printed).
//
// With `times` (bench/lib/wayland_floor.py: when a bare PipeWire client has the compositor's
// picture), it also notes each buffer as it arrives: both clocks read first thing in the
// process callback, kept in memory (nothing written while it runs), and at the end one line
// per buffer on stdout:
//
//   buffer REALTIME_NS MONOTONIC_NS PTS CLOCK SEQ SIZE
//
// the arrival (CLOCK_REALTIME, then CLOCK_MONOTONIC, read one after the other); the buffer's own
// timestamp, spa_meta_header's pts ("-" without the metadata), and CLOCK, the clock it is
// on as far as it can be told: "monotonic" or "realtime" when it lies within 10 s before the
// arrival on that clock, else "unknown"; the header's seq; the chunk's size (0: a buffer
// without pixels). A buffer the node marked corrupted is listed with size 0. Before them one
// line "clocks REALTIME_NS MONOTONIC_NS", the two read together at the start.
//
// With `cursor` it asks for the pointer's metadata too, as nalcast does unless `--cursor off`
// (params.h's cursor parameter); without, the buffers and damage only.
#include <pipewire/pipewire.h>
#include "../../Sources/CPipeWire/params.h"
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/// One buffer as it arrived (`times`).
struct arrival {
    int64_t realtime, monotonic, pts, seq;
    uint32_t size;
    int has_header;
};
#define MAX_ARRIVALS 100000

struct state {
    struct pw_thread_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    unsigned long received, size;
    uint32_t width, height;
    int cursor;
    struct arrival *arrivals;  // NULL without `times`
    unsigned long noted;
};

static int64_t now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

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
    pw_stream_update_params(s->stream, params, nc_pw_buffer_params(&b, params, s->cursor));
}

static void on_process(void *data) {
    struct state *s = data;
    int64_t realtime = 0, monotonic = 0;
    if (s->arrivals) {
        realtime = now_ns(CLOCK_REALTIME);
        monotonic = now_ns(CLOCK_MONOTONIC);
    }
    struct pw_buffer *b;
    while ((b = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        struct spa_chunk *chunk = b->buffer->datas[0].chunk;
        if (chunk->size > 0) {
            s->received += 1;
            s->size = b->buffer->datas[0].maxsize;
        }
        if (s->arrivals && s->noted < MAX_ARRIVALS) {
            struct arrival *a = &s->arrivals[s->noted++];
            struct spa_meta_header *h = spa_buffer_find_meta_data(b->buffer, SPA_META_Header, sizeof *h);
            int corrupted = (chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) || (h && (h->flags & SPA_META_HEADER_FLAG_CORRUPTED));
            *a = (struct arrival){ realtime, monotonic, h ? h->pts : 0, h ? (int64_t)h->seq : 0,
                                   corrupted ? 0 : chunk->size, h != NULL };
        }
        pw_stream_queue_buffer(s->stream, b);
    }
}

static const struct pw_stream_events events = {
    PW_VERSION_STREAM_EVENTS, .param_changed = on_param_changed, .process = on_process,
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: pwrecv NODE SECONDS [mlock] [times] [cursor]\n");
        return 64;
    }
    int lock = 0, times = 0, cursor = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "mlock") == 0) lock = 1;
        else if (strcmp(argv[i], "times") == 0) times = 1;
        else if (strcmp(argv[i], "cursor") == 0) cursor = 1;
        else {
            fprintf(stderr, "pwrecv: unknown word %s (mlock, times, cursor)\n", argv[i]);
            return 64;
        }
    }
    // SIGINT and SIGTERM blocked in every thread (PipeWire's inherits the mask) and waited
    // for below: an end before SECONDS still prints.
    sigset_t ending;
    sigemptyset(&ending);
    sigaddset(&ending, SIGINT);
    sigaddset(&ending, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &ending, NULL);
    pw_init(NULL, NULL);
    struct state s = { 0 };
    s.cursor = cursor;
    if (times && (s.arrivals = calloc(MAX_ARRIVALS, sizeof *s.arrivals)) == NULL) return 71;
    int64_t start_realtime = now_ns(CLOCK_REALTIME), start_monotonic = now_ns(CLOCK_MONOTONIC);
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
    struct timespec wait = { atoi(argv[2]), 0 };
    while (sigtimedwait(&ending, NULL, &wait) < 0 && errno == EINTR) {}
    pw_thread_loop_lock(s.loop);
    fprintf(stderr, "pwrecv: %lu buffers of %ux%u (%lu bytes each)\n", s.received, s.width, s.height, s.size);
    unsigned long noted = s.noted;
    pw_thread_loop_unlock(s.loop);
    if (times) {
        printf("clocks %lld %lld\n", (long long)start_realtime, (long long)start_monotonic);
        for (unsigned long i = 0; i < noted; i++) {
            const struct arrival *a = &s.arrivals[i];
            const char *clock = "unknown";
            if (a->has_header && a->pts <= a->monotonic && a->monotonic - a->pts < 10000000000LL) clock = "monotonic";
            else if (a->has_header && a->pts <= a->realtime && a->realtime - a->pts < 10000000000LL) clock = "realtime";
            if (a->has_header)
                printf("buffer %lld %lld %lld %s %lld %u\n", (long long)a->realtime, (long long)a->monotonic,
                       (long long)a->pts, clock, (long long)a->seq, a->size);
            else
                printf("buffer %lld %lld - - - %u\n", (long long)a->realtime, (long long)a->monotonic, a->size);
        }
        if (noted == MAX_ARRIVALS) fprintf(stderr, "pwrecv: only the first %d buffers noted\n", MAX_ARRIVALS);
        fflush(stdout);
    }
    pw_thread_loop_stop(s.loop);
    pw_stream_destroy(s.stream);
    pw_core_disconnect(core);
    pw_context_destroy(context);
    pw_thread_loop_destroy(s.loop);
    return 0;
}
