#ifndef CPORTAL_H
#define CPORTAL_H
// The ScreenCast portal (org.freedesktop.portal.ScreenCast) over sd-bus, for Swift: the
// exchange is D-Bus messages of nested variants that sd-bus builds with C varargs, so it is
// done here (portal.c), in one blocking call. libsystemd.so.0 is opened with dlopen when the
// portal is first asked for, never linked.
#include <stddef.h>
#include <stdint.h>

enum {
    NC_PORTAL_OK = 0,
    NC_PORTAL_UNAVAILABLE = 1,  // no session bus, no portal, no ScreenCast, no libsystemd
    NC_PORTAL_CANCELLED = 2,    // the user said no (or closed the dialog)
    NC_PORTAL_FAILED = 3,       // the portal answered with an error
};

typedef struct {
    uint32_t types;             // 1 monitor, 2 window, 3 either
    uint32_t cursor_mode;       // 1 hidden, 2 embedded, 4 metadata; 4|2: metadata if the portal offers it, else embedded
    uint32_t persist_mode;      // 0 none, 1 while the app runs, 2 until revoked
    const char *restore_token;  // from an earlier run, or NULL
} nc_portal_request;

typedef struct {
    uint32_t node;              // the PipeWire node of the (first) stream
    int fd;                     // the PipeWire connection (OpenPipeWireRemote), ours to close
    uint32_t version;           // the portal's ScreenCast version
    uint32_t cursor_mode;       // the cursor mode asked for (1, 2 or 4)
    int width, height;          // the stream's size as the portal says, 0 if it does not
    char restore_token[256];    // to pass next time ("" when none was given)
    char error[320];
} nc_portal_result;

typedef struct nc_portal nc_portal;

/// Runs CreateSession, SelectSources, Start, OpenPipeWireRemote. Returns the session (kept
/// open for as long as the capture runs: closing the bus ends the cast) or NULL, with
/// `*code` one of NC_PORTAL_* and `result->error` the reason.
nc_portal *nc_portal_open(const nc_portal_request *request, nc_portal_result *result, int *code);
/// Closes the session and the bus.
void nc_portal_close(nc_portal *p);
#endif
