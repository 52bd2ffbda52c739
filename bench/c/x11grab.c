// x11grab: the "limit" row of the x11 grab+convert benchmark.
// Grabs the root window of DISPLAY with MIT-SHM (xcb_shm_get_image into one SysV
// segment) on a 30 fps timer and converts each frame BGRA -> I420 with libyuv
// (ARGBToI420); nothing else: no cursor, no output. Whatever a screen grabber spends
// beyond this is its own overhead.
//
//   x11grab DISPLAY WIDTH HEIGHT FRAMES FPS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <time.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>
#include <libyuv/convert.h>

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: x11grab DISPLAY WIDTH HEIGHT FRAMES FPS\n");
        return 64;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]), frames = atoi(argv[4]), fps = atoi(argv[5]);
    xcb_connection_t *c = xcb_connect(argv[1], NULL);
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "x11grab: cannot open display %s\n", argv[1]);
        return 69;
    }
    xcb_window_t root = xcb_setup_roots_iterator(xcb_get_setup(c)).data->root;
    size_t bytes = (size_t)w * h * 4;
    int shmid = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
    uint8_t *shm = shmat(shmid, NULL, 0);
    xcb_shm_seg_t seg = xcb_generate_id(c);
    xcb_generic_error_t *e = xcb_request_check(c, xcb_shm_attach_checked(c, seg, shmid, 0));
    shmctl(shmid, IPC_RMID, NULL);
    if (e) {
        fprintf(stderr, "x11grab: MIT-SHM attach failed\n");
        return 69;
    }
    uint8_t *yuv = malloc((size_t)w * h * 3 / 2);
    uint8_t *y = yuv, *u = yuv + w * h, *v = u + (w / 2) * (h / 2);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < frames; i++) {
        long long due = start.tv_sec * 1000000000LL + start.tv_nsec + (long long)i * 1000000000LL / fps;
        struct timespec ts = {due / 1000000000LL, due % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        xcb_shm_get_image_reply_t *r = xcb_shm_get_image_reply(
            c, xcb_shm_get_image(c, root, 0, 0, w, h, ~0u, XCB_IMAGE_FORMAT_Z_PIXMAP, seg, 0), NULL);
        if (!r) {
            fprintf(stderr, "x11grab: ShmGetImage failed\n");
            return 74;
        }
        free(r);
        ARGBToI420(shm, w * 4, y, w, u, w / 2, v, w / 2, w, h);
    }
    printf("%d frames\n", frames);
    xcb_shm_detach(c, seg);
    xcb_disconnect(c);
    shmdt(shm);
    free(yuv);
    return 0;
}
