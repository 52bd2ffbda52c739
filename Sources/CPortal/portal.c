// org.freedesktop.portal.ScreenCast over sd-bus (CPortal.h). Each portal call returns a
// Request object path at once and answers later with its Response signal; the match for it
// is made before the call, on the path the portal documents (request/SENDER/TOKEN).
#include "CPortal.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#define NC_SD_FUNCTIONS(X) X(sd_bus_open_user) X(sd_bus_flush_close_unref) X(sd_bus_call) X(sd_bus_process) \
    X(sd_bus_wait) X(sd_bus_slot_unref) X(sd_bus_message_new_method_call) X(sd_bus_message_unref) \
    X(sd_bus_message_append_basic) X(sd_bus_message_open_container) X(sd_bus_message_close_container) \
    X(sd_bus_message_read_basic) X(sd_bus_message_skip) X(sd_bus_message_enter_container) \
    X(sd_bus_message_exit_container) X(sd_bus_message_peek_type) X(sd_bus_get_unique_name) \
    X(sd_bus_get_property_trivial) X(sd_bus_match_signal) X(sd_bus_error_free) X(sd_bus_message_ref) X(sd_bus_message_rewind)

static struct {
    void *handle;
#define NC_SD_POINTER(name) __typeof__(name) *name;
    NC_SD_FUNCTIONS(NC_SD_POINTER)
} lib;
static char lib_error[160];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void nc_sd_load(void) {
    void *handle = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) { snprintf(lib_error, sizeof lib_error, "libsystemd.so.0 (sd-bus) is not installed (Debian: libsystemd0)"); return; }
#define NC_SD_LOOKUP(name) lib.name = (__typeof__(name) *)dlsym(handle, #name); \
    if (lib.name == NULL) { snprintf(lib_error, sizeof lib_error, "libsystemd.so.0 has no %s", #name); return; }
    NC_SD_FUNCTIONS(NC_SD_LOOKUP)
    lib.handle = handle;
}

#define sd_bus_open_user lib.sd_bus_open_user
#define sd_bus_flush_close_unref lib.sd_bus_flush_close_unref
#define sd_bus_call lib.sd_bus_call
#define sd_bus_process lib.sd_bus_process
#define sd_bus_wait lib.sd_bus_wait
#define sd_bus_slot_unref lib.sd_bus_slot_unref
#define sd_bus_message_new_method_call lib.sd_bus_message_new_method_call
#define sd_bus_message_unref lib.sd_bus_message_unref
#define sd_bus_message_ref lib.sd_bus_message_ref
#define sd_bus_message_append_basic lib.sd_bus_message_append_basic
#define sd_bus_message_open_container lib.sd_bus_message_open_container
#define sd_bus_message_close_container lib.sd_bus_message_close_container
#define sd_bus_message_read_basic lib.sd_bus_message_read_basic
#define sd_bus_message_skip lib.sd_bus_message_skip
#define sd_bus_message_enter_container lib.sd_bus_message_enter_container
#define sd_bus_message_exit_container lib.sd_bus_message_exit_container
#define sd_bus_message_peek_type lib.sd_bus_message_peek_type
#define sd_bus_get_unique_name lib.sd_bus_get_unique_name
#define sd_bus_get_property_trivial lib.sd_bus_get_property_trivial
#define sd_bus_match_signal lib.sd_bus_match_signal
#define sd_bus_error_free lib.sd_bus_error_free
#define sd_bus_message_rewind lib.sd_bus_message_rewind

#define DESKTOP "org.freedesktop.portal.Desktop"
#define DESKTOP_PATH "/org/freedesktop/portal/desktop"
#define SCREENCAST "org.freedesktop.portal.ScreenCast"

struct nc_portal {
    sd_bus *bus;
    char session[256];
    char sender[128];   // our unique name without ':' and with '.' as '_'
    unsigned tokens;
};

/// One Response awaited.
typedef struct {
    int done;
    uint32_t response;
    sd_bus_message *results;  // the message, positioned at its a{sv}
} nc_response;

static int on_response(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    nc_response *r = userdata;
    if (sd_bus_message_read_basic(m, 'u', &r->response) < 0) r->response = 3;
    r->results = sd_bus_message_ref(m);
    r->done = 1;
    return 0;
}

// MARK: building a{sv}

static int dict_string(sd_bus_message *m, const char *key, const char *value) {
    int r = sd_bus_message_open_container(m, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "s");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', value);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

static int dict_uint(sd_bus_message *m, const char *key, uint32_t value) {
    int r = sd_bus_message_open_container(m, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "u");
    if (r >= 0) r = sd_bus_message_append_basic(m, 'u', &value);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

static int dict_bool(sd_bus_message *m, const char *key, int value) {
    int r = sd_bus_message_open_container(m, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', "b");
    if (r >= 0) r = sd_bus_message_append_basic(m, 'b', &value);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

// MARK: one request

/// Makes a call whose answer is a Response signal: `fill` appends the arguments after the
/// session (if any) and opens the options with the handle_token already in. Waits for the
/// Response; `*out` is its message, at the results.
static int portal_request(nc_portal *p, const char *method, int with_session, const char *parent,
                          int (*fill)(sd_bus_message *, const void *), const void *context,
                          nc_response *out, char *error, size_t error_size) {
    char token[32], path[320];
    snprintf(token, sizeof token, "nalcast%u", ++p->tokens);
    snprintf(path, sizeof path, DESKTOP_PATH "/request/%s/%s", p->sender, token);
    memset(out, 0, sizeof *out);
    sd_bus_slot *slot = NULL;
    int r = sd_bus_match_signal(p->bus, &slot, DESKTOP, path, "org.freedesktop.portal.Request", "Response", on_response, out);
    if (r < 0) { snprintf(error, error_size, "%s: cannot listen for the answer: %s", method, strerror(-r)); return -1; }
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    r = sd_bus_message_new_method_call(p->bus, &m, DESKTOP, DESKTOP_PATH, SCREENCAST, method);
    if (r >= 0 && with_session) r = sd_bus_message_append_basic(m, 'o', p->session);
    if (r >= 0 && parent) r = sd_bus_message_append_basic(m, 's', parent);
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0) r = dict_string(m, "handle_token", token);
    if (r >= 0 && fill) r = fill(m, context);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_call(p->bus, m, 0, &e, &reply);
    sd_bus_message_unref(m);
    sd_bus_message_unref(reply);
    if (r < 0) {
        snprintf(error, error_size, "%s: %s", method, e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
        sd_bus_slot_unref(slot);
        return -1;
    }
    // The answer may need the user (a dialog): no time limit, as for any program asking.
    while (!out->done) {
        r = sd_bus_process(p->bus, NULL);
        if (r < 0) { snprintf(error, error_size, "%s: the session bus went away: %s", method, strerror(-r)); break; }
        if (r == 0 && sd_bus_wait(p->bus, (uint64_t)-1) < 0) { snprintf(error, error_size, "%s: waiting on the bus failed", method); break; }
    }
    sd_bus_slot_unref(slot);
    return out->done ? 0 : -1;
}

/// Looks in a Response's a{sv} for `key`; leaves the message inside its variant (of
/// `contents`) and returns 1, or 0 when absent.
static int find_result(sd_bus_message *m, const char *key, const char *contents) {
    if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return 0;
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *name = NULL;
        sd_bus_message_read_basic(m, 's', &name);
        if (name && strcmp(name, key) == 0) {
            if (sd_bus_message_enter_container(m, 'v', contents) > 0) return 1;
            return 0;
        }
        sd_bus_message_skip(m, "v");
        sd_bus_message_exit_container(m);
    }
    return 0;
}

/// The Response's results from their start, then `key` in them.
static int lookup(nc_response *r, const char *key, const char *contents) {
    uint32_t response;
    if (sd_bus_message_rewind(r->results, 1) < 0 || sd_bus_message_read_basic(r->results, 'u', &response) < 0) return 0;
    return find_result(r->results, key, contents);
}

static const char *result_string(nc_response *r, const char *key) {
    const char *value = NULL;
    if (lookup(r, key, "s")) sd_bus_message_read_basic(r->results, 's', &value);
    else if (lookup(r, key, "o")) sd_bus_message_read_basic(r->results, 'o', &value);
    return value;
}

/// The first stream of Start's results: its node, and its size when given.
static int first_stream(nc_response *r, nc_portal_result *result) {
    if (!lookup(r, "streams", "a(ua{sv})")) return 0;
    if (sd_bus_message_enter_container(r->results, 'a', "(ua{sv})") <= 0) return 0;
    if (sd_bus_message_enter_container(r->results, 'r', "ua{sv}") <= 0) return 0;
    if (sd_bus_message_read_basic(r->results, 'u', &result->node) < 0) return 0;
    if (find_result(r->results, "size", "(ii)") && sd_bus_message_enter_container(r->results, 'r', "ii") > 0) {
        int32_t w = 0, h = 0;
        sd_bus_message_read_basic(r->results, 'i', &w);
        sd_bus_message_read_basic(r->results, 'i', &h);
        result->width = w;
        result->height = h;
    }
    return 1;
}

// MARK: the exchange

static int fill_create(sd_bus_message *m, const void *context) {
    (void)context;
    return dict_string(m, "session_handle_token", "nalcast");
}

static int fill_select(sd_bus_message *m, const void *context) {
    const nc_portal_request *q = ((const void *const *)context)[0];
    const nc_portal_result *result = ((const void *const *)context)[1];
    const uint32_t *version = &result->version;
    int r = dict_uint(m, "types", q->types);
    if (r >= 0) r = dict_bool(m, "multiple", 0);
    // cursor_mode is version 2, persist_mode and restore_token version 4.
    if (r >= 0 && *version >= 2) r = dict_uint(m, "cursor_mode", result->cursor_mode);
    if (r >= 0 && *version >= 4) r = dict_uint(m, "persist_mode", q->persist_mode);
    if (r >= 0 && *version >= 4 && q->restore_token && q->restore_token[0]) r = dict_string(m, "restore_token", q->restore_token);
    return r;
}

/// A Response that is not a success: the user's no (1) or an error (2).
static int refused(nc_response *r, const char *step, nc_portal_result *result, int *code) {
    if (r->response == 0) return 0;
    if (r->response == 1) {
        *code = NC_PORTAL_CANCELLED;
        snprintf(result->error, sizeof result->error, "the screen cast was not allowed (%s: cancelled)", step);
    } else {
        *code = NC_PORTAL_FAILED;
        snprintf(result->error, sizeof result->error, "the portal's %s failed (response %u: the desktop's portal backend could not do it; its log says why)",
                 step, r->response);
    }
    return 1;
}

static int open_remote(nc_portal *p, nc_portal_result *result) {
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_message_new_method_call(p->bus, &m, DESKTOP, DESKTOP_PATH, SCREENCAST, "OpenPipeWireRemote");
    if (r >= 0) r = sd_bus_message_append_basic(m, 'o', p->session);
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_call(p->bus, m, 0, &e, &reply);
    int fd = -1;
    if (r >= 0) r = sd_bus_message_read_basic(reply, 'h', &fd);
    if (r >= 0) result->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (r < 0 || result->fd < 0)
        snprintf(result->error, sizeof result->error, "OpenPipeWireRemote: %s", e.message ? e.message : strerror(r < 0 ? -r : errno));
    sd_bus_error_free(&e);
    sd_bus_message_unref(m);
    sd_bus_message_unref(reply);
    return result->fd >= 0 ? 0 : -1;
}

static nc_portal *fail(nc_portal *p, int *code, int value) {
    *code = value;
    nc_portal_close(p);
    return NULL;
}

nc_portal *nc_portal_open(const nc_portal_request *request, nc_portal_result *result, int *code) {
    memset(result, 0, sizeof *result);
    result->fd = -1;
    *code = NC_PORTAL_OK;
    pthread_once(&lib_once, nc_sd_load);
    if (lib.handle == NULL) { snprintf(result->error, sizeof result->error, "%s", lib_error); *code = NC_PORTAL_UNAVAILABLE; return NULL; }
    nc_portal *p = calloc(1, sizeof *p);
    if (p == NULL) { snprintf(result->error, sizeof result->error, "out of memory"); return fail(p, code, NC_PORTAL_FAILED); }
    int r = sd_bus_open_user(&p->bus);
    if (r < 0) {
        // sd-bus says ENOMEDIUM when neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR names a bus.
        snprintf(result->error, sizeof result->error, "no D-Bus session bus (%s): the portal needs a desktop session",
                 r == -ENOMEDIUM ? "DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR are not set" : strerror(-r));
        return fail(p, code, NC_PORTAL_UNAVAILABLE);
    }
    const char *unique = NULL;
    sd_bus_get_unique_name(p->bus, &unique);
    for (size_t i = 0; unique && unique[i + 1] && i + 1 < sizeof p->sender; i++) p->sender[i] = unique[i + 1] == '.' ? '_' : unique[i + 1];
    sd_bus_error e = SD_BUS_ERROR_NULL;
    r = sd_bus_get_property_trivial(p->bus, DESKTOP, DESKTOP_PATH, SCREENCAST, "version", &e, 'u', &result->version);
    if (r < 0) {
        snprintf(result->error, sizeof result->error, "no ScreenCast portal on the session bus (%s): is xdg-desktop-portal running, with a backend for this desktop?",
                 e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
        return fail(p, code, NC_PORTAL_UNAVAILABLE);
    }
    nc_response answer;
    if (portal_request(p, "CreateSession", 0, NULL, fill_create, NULL, &answer, result->error, sizeof result->error) < 0) return fail(p, code, NC_PORTAL_FAILED);
    if (refused(&answer, "CreateSession", result, code)) { sd_bus_message_unref(answer.results); return fail(p, code, *code); }
    const char *session = result_string(&answer, "session_handle");
    snprintf(p->session, sizeof p->session, "%s", session ? session : "");
    sd_bus_message_unref(answer.results);
    if (!p->session[0]) { snprintf(result->error, sizeof result->error, "CreateSession gave no session"); return fail(p, code, NC_PORTAL_FAILED); }

    // Metadata (the pointer beside the picture, drawn by us) when asked for and offered,
    // else embedded (the compositor draws it) when asked for too.
    result->cursor_mode = request->cursor_mode;
    uint32_t offered = 0;
    if (result->version >= 2 && (request->cursor_mode & 4) &&
        sd_bus_get_property_trivial(p->bus, DESKTOP, DESKTOP_PATH, SCREENCAST, "AvailableCursorModes", NULL, 'u', &offered) >= 0)
        result->cursor_mode = (offered & 4) ? 4 : (request->cursor_mode & 2) ? 2 : 1;
    else if (request->cursor_mode & 4)
        result->cursor_mode = (request->cursor_mode & 2) ? 2 : 1;
    const void *context[2] = { request, result };
    if (portal_request(p, "SelectSources", 1, NULL, fill_select, context, &answer, result->error, sizeof result->error) < 0) return fail(p, code, NC_PORTAL_FAILED);
    if (refused(&answer, "SelectSources", result, code)) { sd_bus_message_unref(answer.results); return fail(p, code, *code); }
    sd_bus_message_unref(answer.results);

    if (portal_request(p, "Start", 1, "", NULL, NULL, &answer, result->error, sizeof result->error) < 0) return fail(p, code, NC_PORTAL_FAILED);
    if (refused(&answer, "Start", result, code)) { sd_bus_message_unref(answer.results); return fail(p, code, *code); }
    const char *token = result_string(&answer, "restore_token");
    snprintf(result->restore_token, sizeof result->restore_token, "%s", token ? token : "");
    int streams = first_stream(&answer, result);
    sd_bus_message_unref(answer.results);
    if (!streams) { snprintf(result->error, sizeof result->error, "Start gave no stream"); return fail(p, code, NC_PORTAL_FAILED); }
    if (open_remote(p, result) < 0) return fail(p, code, NC_PORTAL_FAILED);
    return p;
}

void nc_portal_close(nc_portal *p) {
    if (p == NULL) return;
    if (p->bus && p->session[0]) {
        sd_bus_message *m = NULL;
        if (sd_bus_message_new_method_call(p->bus, &m, DESKTOP, p->session, "org.freedesktop.portal.Session", "Close") >= 0) {
            sd_bus_call(p->bus, m, 1000000, NULL, NULL);
            sd_bus_message_unref(m);
        }
    }
    if (p->bus) sd_bus_flush_close_unref(p->bus);
    free(p);
}
