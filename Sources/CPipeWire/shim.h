#ifndef NC_PW_SHIM_H
#define NC_PW_SHIM_H
// What pipewire.c (the library, the stream, open and close) and frames.c (what the capture
// thread takes) share: libpipewire's functions, looked up once with dlopen and called through
// `nc_pw_lib` under their own names, and the stream's state.
#include "CPipeWire.h"
#include <pipewire/pipewire.h>
#include "pointer.h"

// Every libpipewire function used.

#define NC_PW_FUNCTIONS(X) X(pw_init) X(pw_thread_loop_new) X(pw_thread_loop_get_loop) X(pw_thread_loop_start) \
    X(pw_thread_loop_stop) X(pw_thread_loop_destroy) X(pw_thread_loop_lock) X(pw_thread_loop_unlock) \
    X(pw_thread_loop_wait) X(pw_thread_loop_signal) X(pw_context_new) X(pw_context_destroy) X(pw_context_connect) \
    X(pw_context_connect_fd) X(pw_core_disconnect) X(pw_proxy_destroy) X(pw_stream_new) X(pw_stream_add_listener) \
    X(pw_stream_connect) X(pw_stream_dequeue_buffer) X(pw_stream_queue_buffer) X(pw_stream_update_params) \
    X(pw_stream_destroy) X(pw_stream_state_as_string) X(pw_properties_new) X(pw_stream_get_node_id)

struct nc_pw_lib {
    void *handle;
#define NC_PW_POINTER(name) __typeof__(name) *name;
    NC_PW_FUNCTIONS(NC_PW_POINTER)
};
extern struct nc_pw_lib nc_pw_lib;
/// Opens libpipewire once (library.c): NULL when it is there, else why not.
const char *nc_pw_library(void);

#ifndef NC_PW_NO_NAMES
#define pw_thread_loop_new nc_pw_lib.pw_thread_loop_new
#define pw_thread_loop_get_loop nc_pw_lib.pw_thread_loop_get_loop
#define pw_thread_loop_start nc_pw_lib.pw_thread_loop_start
#define pw_thread_loop_stop nc_pw_lib.pw_thread_loop_stop
#define pw_thread_loop_destroy nc_pw_lib.pw_thread_loop_destroy
#define pw_thread_loop_lock nc_pw_lib.pw_thread_loop_lock
#define pw_thread_loop_unlock nc_pw_lib.pw_thread_loop_unlock
#define pw_thread_loop_wait nc_pw_lib.pw_thread_loop_wait
#define pw_thread_loop_signal nc_pw_lib.pw_thread_loop_signal
#define pw_context_new nc_pw_lib.pw_context_new
#define pw_context_destroy nc_pw_lib.pw_context_destroy
#define pw_context_connect nc_pw_lib.pw_context_connect
#define pw_context_connect_fd nc_pw_lib.pw_context_connect_fd
#define pw_core_disconnect nc_pw_lib.pw_core_disconnect
#define pw_proxy_destroy nc_pw_lib.pw_proxy_destroy
#define pw_stream_new nc_pw_lib.pw_stream_new
#define pw_stream_add_listener nc_pw_lib.pw_stream_add_listener
#define pw_stream_connect nc_pw_lib.pw_stream_connect
#define pw_stream_dequeue_buffer nc_pw_lib.pw_stream_dequeue_buffer
#define pw_stream_queue_buffer nc_pw_lib.pw_stream_queue_buffer
#define pw_stream_update_params nc_pw_lib.pw_stream_update_params
#define pw_stream_destroy nc_pw_lib.pw_stream_destroy
#define pw_stream_state_as_string nc_pw_lib.pw_stream_state_as_string
#define pw_properties_new nc_pw_lib.pw_properties_new
#define pw_stream_get_node_id nc_pw_lib.pw_stream_get_node_id
#endif

struct nc_pw {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_registry *registry;
    struct pw_stream *stream;
    struct pw_proxy *link;      // the link from the node to our stream, watched for its errors
    struct spa_hook core_listener, registry_listener, stream_listener, link_listener;
    int event_fd;
    int sync_seq;
    int synced;
    struct pw_buffer *pending;  // the newest frame, dequeued and kept until taken
    uint64_t pending_picture;   // its number (info.received when it came)
    struct pw_buffer *held;     // a frame the capture thread reads in place (nc_pw_acquire)
    int held_removed;           // PipeWire took `held` away (it waits for its release)
    nc_pw_info info;
    // the target, as given; matched against the registry's video nodes
    char target[128];
    uint32_t target_id;         // SPA_ID_INVALID until found
    int by_serial;              // found by its serial only (an id or name seen later wins)
    char nodes[512];            // "name (id), ..." of the video nodes seen, for the error
    int want_cursor;            // SPA_META_Cursor asked for (--cursor)
    nc_pw_pointer pointer;      // the pointer as the last cursor metadata gave it
};

#endif
