/* flasher: the sync reference for a screen + sound recording, the X11 twin of nalcast's
 * `--flash` test pattern with `--audio tone`.
 *
 *   flasher DISPLAY SECONDS
 *
 * At each whole second of CLOCK_REALTIME for SECONDS seconds it paints the X root window
 * white (for 100 ms, then dark again) and makes a beep (1 kHz, 100 ms, -6 dBFS) start
 * playing at that same instant on the default sink of the PulseAudio server that
 * $PULSE_SERVER names (the benchmark's private null sink).
 *
 * Picture: a thread sleeps until the second (clock_nanosleep on CLOCK_REALTIME), fills the
 * root with xcb_poly_fill_rectangle and waits for the server's reply to a round trip, so
 * the paint is done when it returns. Sound: one playback stream runs all along (silence
 * between beeps) with a 100 ms target buffer (room for a loaded machine); before each 5 ms chunk it asks the server's
 * latency (pa_simple_get_latency: when the next sample written will be played) and puts
 * the beep's first sample where that says the second falls. Both instants are printed to
 * stdout, one line each: `paint S LATE_NS` (paint done, ns after the second) and
 * `beep S LATENCY_US` (the latency the placement used; 0 after an underrun, when the beep
 * may start late). It runs at real-time priority (SCHED_FIFO) when it may.
 *
 * Build: gcc -O2 -o flasher flasher.c -lxcb -lpulse-simple -lpulse -lpthread -lm
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pulse/error.h>
#include <pulse/simple.h>
#include <xcb/xcb.h>

#define RATE 48000
#define CHUNK 240 /* 5 ms */
#define BEEP_SAMPLES (RATE / 10)
#define NS 1000000000LL

static int64_t first_second, last_second; /* the seconds that flash and beep: [first, last) */

static int64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
    struct timespec ts = {.tv_sec = t / NS, .tv_nsec = t % NS};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void *sound(void *arg) {
    (void)arg;
    pa_sample_spec spec = {.format = PA_SAMPLE_S16LE, .rate = RATE, .channels = 2};
    pa_buffer_attr attr = {.maxlength = (uint32_t)-1, .tlength = RATE / 10 * 4, .prebuf = (uint32_t)-1,
                           .minreq = (uint32_t)-1, .fragsize = (uint32_t)-1};
    int err = 0;
    pa_simple *s = pa_simple_new(NULL, "nalcast-bench-flasher", PA_STREAM_PLAYBACK, NULL, "beep", &spec, NULL, &attr, &err);
    if (!s) {
        fprintf(stderr, "flasher: pulse: %s\n", pa_strerror(err));
        exit(69);
    }
    int16_t buf[CHUNK * 2];
    int64_t n = 0;           /* samples written */
    int64_t beep_start = -1; /* sample index of the current beep's first sample */
    int64_t next = first_second;
    for (;;) {
        pa_usec_t latency = pa_simple_get_latency(s, &err);
        int64_t play_at = realtime_ns() + (int64_t)latency * 1000; /* when sample n plays */
        if (next < last_second && next < play_at + (int64_t)CHUNK * NS / RATE) {
            int64_t offset = next >= play_at ? (next - play_at) * RATE / NS : 0;
            beep_start = n + offset;
            printf("beep %lld %llu\n", (long long)(next / NS), (unsigned long long)latency);
            fflush(stdout);
            next += NS;
        }
        for (int i = 0; i < CHUNK; i++) {
            int64_t k = n + i - beep_start;
            int16_t v = 0;
            if (beep_start >= 0 && k >= 0 && k < BEEP_SAMPLES)
                v = (int16_t)lrint(16384.0 * sin(2 * M_PI * 1000.0 * (double)k / RATE)); /* -6 dBFS */
            buf[2 * i] = buf[2 * i + 1] = v;
        }
        if (pa_simple_write(s, buf, sizeof buf, &err) < 0) {
            fprintf(stderr, "flasher: pulse write: %s\n", pa_strerror(err));
            exit(74);
        }
        n += CHUNK;
        if (next >= last_second && n - beep_start > BEEP_SAMPLES + RATE / 5) break;
    }
    pa_simple_drain(s, &err);
    pa_simple_free(s);
    return NULL;
}

static void fill(xcb_connection_t *c, xcb_screen_t *screen, xcb_gcontext_t gc, uint32_t pixel) {
    xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &pixel);
    xcb_rectangle_t r = {0, 0, screen->width_in_pixels, screen->height_in_pixels};
    xcb_poly_fill_rectangle(c, screen->root, gc, 1, &r);
    free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL)); /* round trip: painted */
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: flasher DISPLAY SECONDS\n");
        return 64;
    }
    int screen_number = 0;
    xcb_connection_t *c = xcb_connect(argv[1], &screen_number);
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "flasher: cannot open display %s\n", argv[1]);
        return 69;
    }
    xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(c));
    for (int i = 0; i < screen_number; i++) xcb_screen_next(&it);
    xcb_screen_t *screen = it.data;
    xcb_gcontext_t gc = xcb_generate_id(c);
    uint32_t values[2] = {screen->black_pixel, XCB_SUBWINDOW_MODE_INCLUDE_INFERIORS};
    xcb_create_gc(c, gc, screen->root, XCB_GC_FOREGROUND | XCB_GC_SUBWINDOW_MODE, values);
    const uint32_t dark = 0x202020, white = 0xffffff; /* TrueColor 24-bit: 0xRRGGBB */
    fill(c, screen, gc, dark);

    /* Real-time priority when allowed (root, CAP_SYS_NICE): on a loaded machine a paint or a
     * chunk of sound that comes late would be the flasher's error, not the recorder's. The
     * sound thread inherits it. */
    struct sched_param prio = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &prio) != 0) printf("note: no real-time priority\n");

    /* Start one whole second after the next one: time for the sound stream to settle. */
    first_second = (realtime_ns() / NS + 2) * NS;
    last_second = first_second + (int64_t)atoi(argv[2]) * NS;
    pthread_t t;
    pthread_create(&t, NULL, sound, NULL);
    for (int64_t s = first_second; s < last_second; s += NS) {
        sleep_until(s);
        fill(c, screen, gc, white);
        printf("paint %lld %lld\n", (long long)(s / NS), (long long)(realtime_ns() - s));
        fflush(stdout);
        sleep_until(s + NS / 10);
        fill(c, screen, gc, dark);
    }
    pthread_join(t, NULL);
    xcb_disconnect(c);
    return 0;
}
