#ifndef CLIBEV_SHIM_H
#define CLIBEV_SHIM_H
#include <ev.h>

// ev_io_init is a macro (it also pokes at private fields): Swift cannot call it.
static inline void CLibEV_io_init(ev_io *w, void (*cb)(struct ev_loop *, ev_io *, int), int fd, int events) {
    ev_io_init(w, cb, fd, events);
}
// ev_io_set is a macro: changes the fd/events of a stopped watcher.
static inline void CLibEV_io_set(ev_io *w, int fd, int events) { ev_io_set(w, fd, events); }
// ev_timer_init is a macro.
static inline void CLibEV_timer_init(ev_timer *w, void (*cb)(struct ev_loop *, ev_timer *, int), double after, double repeat) {
    ev_timer_init(w, cb, after, repeat);
}
// ev_async_init is a macro.
static inline void CLibEV_async_init(ev_async *w, void (*cb)(struct ev_loop *, ev_async *, int)) {
    ev_async_init(w, cb);
}
// ev_prepare_init is a macro.
static inline void CLibEV_prepare_init(ev_prepare *w, void (*cb)(struct ev_loop *, ev_prepare *, int)) {
    ev_prepare_init(w, cb);
}
// ev_signal_init is a macro.
static inline void CLibEV_signal_init(ev_signal *w, void (*cb)(struct ev_loop *, ev_signal *, int), int signum) {
    ev_signal_init(w, cb, signum);
}
// ev_default_loop takes EVFLAG_AUTO, a macro constant; a fresh loop per owner is what we want.
static inline struct ev_loop *CLibEV_loop_new(void) { return ev_loop_new(EVFLAG_AUTO); }
// The watcher's `data` field sits behind EV_COMMON, a macro-expanded struct member.
static inline void CLibEV_set_data(void *w, void *data) { ((ev_watcher *)w)->data = data; }
static inline void *CLibEV_get_data(const void *w) { return ((const ev_watcher *)w)->data; }
// ev_is_active is a macro reading a field behind EV_WATCHER.
static inline int CLibEV_is_active(const void *w) { return ev_is_active((const ev_watcher *)w); }
// EV_READ / EV_WRITE are enum-in-macro constants; expose them as plain ints.
static inline int CLibEV_READ(void) { return EV_READ; }
static inline int CLibEV_WRITE(void) { return EV_WRITE; }
#endif
