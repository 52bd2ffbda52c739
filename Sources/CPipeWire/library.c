// libpipewire-0.3.so.0, opened with dlopen on the first nc_pw_open: every function shim.h
// names, looked up once (a nalcast that captures no PipeWire stream needs none installed).
#define NC_PW_NO_NAMES  // the functions' own names, not shim.h's calls through nc_pw_lib
#include "shim.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct nc_pw_lib nc_pw_lib;
static char lib_error[160];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void nc_pw_load(void) {
    void *handle = dlopen("libpipewire-0.3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(lib_error, sizeof lib_error, "libpipewire-0.3.so.0 is not installed (Debian: libpipewire-0.3-0)");
        return;
    }
#define NC_PW_LOOKUP(name) nc_pw_lib.name = (__typeof__(name) *)dlsym(handle, #name); \
    if (nc_pw_lib.name == NULL) { snprintf(lib_error, sizeof lib_error, "libpipewire-0.3.so.0 has no %s", #name); return; }
    NC_PW_FUNCTIONS(NC_PW_LOOKUP)
    nc_pw_lib.handle = handle;
    nc_pw_lib.pw_init(NULL, NULL);
}

const char *nc_pw_library(void) {
    pthread_once(&lib_once, nc_pw_load);
    return nc_pw_lib.handle ? NULL : lib_error;
}
