// SRTP and SRTCP through libsrtp2 (include/CWebRTC.h), opened with dlopen when the first
// WebRTC viewer needs it, as the media libraries are (CMedia): a producer without WebRTC
// viewers maps nothing of it, and the package only recommends it. Its header gives the
// policy's layout; every call goes through a pointer looked up once.
#include "CWebRTC.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <srtp2/srtp.h>

static struct {
    srtp_err_status_t (*init)(void);
    srtp_err_status_t (*create)(srtp_t *, const srtp_policy_t *);
    srtp_err_status_t (*dealloc)(srtp_t);
    srtp_err_status_t (*protect)(srtp_t, void *, int *);
    srtp_err_status_t (*protect_rtcp)(srtp_t, void *, int *);
    srtp_err_status_t (*unprotect)(srtp_t, void *, int *);
    srtp_err_status_t (*unprotect_rtcp)(srtp_t, void *, int *);
    void (*rtp_default)(srtp_crypto_policy_t *);
    void (*rtcp_default)(srtp_crypto_policy_t *);
    void (*gcm_128)(srtp_crypto_policy_t *);  // NULL when this libsrtp2 has no AES-GCM
    const char *(*version)(void);
    int loaded;
    char why[200];
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
struct nc_srtp { srtp_t session; };

static void nc_srtp_open(void) {
    void *handle = dlopen("libsrtp2.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(lib.why, sizeof lib.why, "%s (Debian: apt-get install libsrtp2-1)", dlerror());
        return;
    }
#define NC_SYM(field, name) \
    if (!(*(void **)&lib.field = dlsym(handle, name))) { snprintf(lib.why, sizeof lib.why, "libsrtp2.so.1 has no %s", name); return; }
    NC_SYM(init, "srtp_init")
    NC_SYM(create, "srtp_create")
    NC_SYM(dealloc, "srtp_dealloc")
    NC_SYM(protect, "srtp_protect")
    NC_SYM(protect_rtcp, "srtp_protect_rtcp")
    NC_SYM(unprotect, "srtp_unprotect")
    NC_SYM(unprotect_rtcp, "srtp_unprotect_rtcp")
    NC_SYM(rtp_default, "srtp_crypto_policy_set_rtp_default")
    NC_SYM(rtcp_default, "srtp_crypto_policy_set_rtcp_default")
    NC_SYM(version, "srtp_get_version_string")
#undef NC_SYM
    if (lib.init() != srtp_err_status_ok) {
        snprintf(lib.why, sizeof lib.why, "srtp_init failed");
        return;
    }
    lib.loaded = 1;
    // AES-GCM only where a session of it can be made: libsrtp2 built without a crypto
    // library (its own AES) has the setter but no GCM cipher.
    *(void **)&lib.gcm_128 = dlsym(handle, "srtp_crypto_policy_set_aes_gcm_128_16_auth");
    uint8_t key[16] = {0}, salt[14] = {0};
    nc_srtp *probe = lib.gcm_128 ? nc_srtp_new(NC_SRTP_AEAD_AES_128_GCM, key, salt, 1) : NULL;
    if (!probe) lib.gcm_128 = NULL;
    nc_srtp_free(probe);
}

const char *nc_srtp_profiles(void) {
    return lib.gcm_128 ? "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80" : "SRTP_AES128_CM_SHA1_80";
}

int nc_srtp_load(char *why, int size) {
    pthread_once(&once, nc_srtp_open);
    if (!lib.loaded && size > 0) snprintf(why, (size_t)size, "%s", lib.why);
    return lib.loaded;
}

const char *nc_srtp_version(void) { return lib.loaded ? lib.version() : ""; }

nc_srtp *nc_srtp_new(int profile, const uint8_t *key, const uint8_t *salt, int outbound) {
    if (!lib.loaded) return NULL;
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    // The master key then the master salt: 16 + 14 bytes for AES_CM, 16 + 12 for GCM.
    uint8_t master[30];
    memcpy(master, key, 16);
    if (profile == NC_SRTP_AEAD_AES_128_GCM && lib.gcm_128) {
        memcpy(master + 16, salt, 12);
        lib.gcm_128(&policy.rtp);
        lib.gcm_128(&policy.rtcp);
    } else if (profile == NC_SRTP_AES128_CM_SHA1_80) {
        memcpy(master + 16, salt, 14);
        lib.rtp_default(&policy.rtp);
        lib.rtcp_default(&policy.rtcp);
    } else {
        return NULL;
    }
    policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
    policy.key = master;
    policy.window_size = 1024;
    // A NACK is answered with the packet as first protected (kept), never protected again.
    policy.allow_repeat_tx = 0;
    nc_srtp *srtp = calloc(1, sizeof *srtp);
    if (!srtp) return NULL;
    if (lib.create(&srtp->session, &policy) != srtp_err_status_ok) {
        free(srtp);
        return NULL;
    }
    return srtp;
}

void nc_srtp_free(nc_srtp *srtp) {
    if (!srtp) return;
    lib.dealloc(srtp->session);
    free(srtp);
}

int nc_srtp_protect(nc_srtp *srtp, uint8_t *buffer, int length, int capacity) {
    if (capacity - length < SRTP_MAX_TRAILER_LEN) return -1;
    int size = length;
    return lib.protect(srtp->session, buffer, &size) == srtp_err_status_ok ? size : -1;
}

int nc_srtp_protect_rtcp(nc_srtp *srtp, uint8_t *buffer, int length, int capacity) {
    if (capacity - length < SRTP_MAX_TRAILER_LEN + 4) return -1;
    int size = length;
    return lib.protect_rtcp(srtp->session, buffer, &size) == srtp_err_status_ok ? size : -1;
}

int nc_srtp_unprotect_rtcp(nc_srtp *srtp, uint8_t *buffer, int length) {
    int size = length;
    return lib.unprotect_rtcp(srtp->session, buffer, &size) == srtp_err_status_ok ? size : -1;
}

int nc_srtp_unprotect(nc_srtp *srtp, uint8_t *buffer, int length) {
    int size = length;
    return lib.unprotect(srtp->session, buffer, &size) == srtp_err_status_ok ? size : -1;
}
