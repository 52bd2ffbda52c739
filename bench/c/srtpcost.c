// srtpcost: what protecting one RTP packet costs with this machine's libsrtp2, for each SRTP
// profile nalcast offers in DTLS-SRTP's use_srtp (SRTP_AEAD_AES_128_GCM first where libsrtp2
// can do it, then SRTP_AES128_CM_SHA1_80): the per-packet, per-viewer part of a WebRTC
// viewer's cost (`web viewers` in bench/README.md). Each profile protects N packets of
// SIZE bytes (RTP header + payload, sequence numbers in order, one outbound session), three
// rounds alternated; prints microseconds a packet.
//
//   srtpcost [N] [SIZE]   (default 20000 packets of 1200 bytes)
//
// build: gcc -O2 -Wall -o srtpcost srtpcost.c -lsrtp2
#include <srtp2/srtp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void measure(const char *name, int gcm, int count, int size) {
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    if (gcm) {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
    } else {
        srtp_crypto_policy_set_rtp_default(&policy.rtp);
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp);
    }
    unsigned char key[30];
    for (int i = 0; i < 30; i++) key[i] = (unsigned char)(i * 7);
    policy.key = key;
    policy.ssrc.type = ssrc_any_outbound;
    policy.window_size = 1024;
    srtp_t session;
    if (srtp_create(&session, &policy) != srtp_err_status_ok) {
        printf("%s: no session (this libsrtp2 cannot do it)\n", name);
        return;
    }
    unsigned char packet[2048];
    double start = seconds();
    for (int i = 0; i < count; i++) {
        memset(packet, 0, 12);
        packet[0] = 0x80, packet[1] = 96, packet[2] = (unsigned char)(i >> 8), packet[3] = (unsigned char)i, packet[11] = 1;
        int length = size;
        if (srtp_protect(session, packet, &length) != srtp_err_status_ok) {
            printf("%s: protect failed at packet %d\n", name, i);
            break;
        }
    }
    printf("%s: %.2f us a packet\n", name, (seconds() - start) / count * 1e6);
    srtp_dealloc(session);
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 20000, size = argc > 2 ? atoi(argv[2]) : 1200;
    if (count <= 0 || size < 12 || size > 1400) {
        fprintf(stderr, "usage: srtpcost [N] [SIZE 12-1400]\n");
        return 64;
    }
    srtp_init();
    printf("%s, %d packets of %d bytes\n", srtp_get_version_string(), count, size);
    for (int round = 0; round < 3; round++) {
        measure("SRTP_AES128_CM_SHA1_80", 0, count, size);
        measure("SRTP_AEAD_AES_128_GCM", 1, count, size);
    }
    return 0;
}
