// painter: a typing-like workload for the capture benchmarks.
// Repaints one small box of the root window of DISPLAY (W x H at X,Y) HZ times a
// second for SECONDS (0: until killed): the box's background, then a line of "glyphs"
// (small filled rectangles from a fixed pseudo-random sequence, one more each time and
// starting over when the line is full), as a text field being typed into looks to a
// screen grabber. Each repaint damages the whole box, and only the box: the rest of the
// screen stays still. Drawn straight onto the root window (no window manager on Xvfb,
// nothing covers it), flushed at once.
//
//   painter DISPLAY X Y W H HZ SECONDS
//
// With SECONDS "-", it paints on demand instead, for the latency benchmarks: each line
// RRGGBB read from stdin fills the whole box with that colour, waits for the server's
// answer to a request sent behind it (so the fill has been done), and prints
// "BEFORE AFTER", CLOCK_REALTIME ns just before the fill was sent and just after that
// answer came: the paint happened in between (a fraction of a millisecond apart on
// Xvfb). An X11 screen grabber woken by the DAMAGE event grabs within that window or
// just after, sooner than a painting process such as xsetroot has even exited.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xcb/xcb.h>

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: painter DISPLAY X Y W H HZ SECONDS\n");
        return 64;
    }
    int x = atoi(argv[2]), y = atoi(argv[3]), w = atoi(argv[4]), h = atoi(argv[5]);
    double hz = atof(argv[6]), seconds = atof(argv[7]);
    if (w < 8 || h < 8 || (hz <= 0 && strcmp(argv[7], "-") != 0)) {
        fprintf(stderr, "painter: the box must be at least 8x8 and HZ above 0\n");
        return 64;
    }
    xcb_connection_t *c = xcb_connect(argv[1], NULL);
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "painter: cannot open display %s\n", argv[1]);
        return 69;
    }
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    xcb_window_t root = screen->root;
    xcb_gcontext_t gc = xcb_generate_id(c);
    uint32_t values[] = {0xf0f0f0, 0};  // foreground, graphics exposures off
    xcb_create_gc(c, gc, root, XCB_GC_FOREGROUND | XCB_GC_GRAPHICS_EXPOSURES, values);

    if (strcmp(argv[7], "-") == 0) {
        char line[64];
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof line, stdin)) {
            uint32_t colour = (uint32_t)strtoul(line, NULL, 16);
            xcb_rectangle_t box = {(int16_t)x, (int16_t)y, (uint16_t)w, (uint16_t)h};
            struct timespec before, after;
            clock_gettime(CLOCK_REALTIME, &before);
            xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &colour);
            xcb_poly_fill_rectangle(c, root, gc, 1, &box);
            free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
            clock_gettime(CLOCK_REALTIME, &after);
            if (xcb_connection_has_error(c)) {
                fprintf(stderr, "painter: the X connection broke\n");
                return 74;
            }
            printf("%lld %lld\n", (long long)before.tv_sec * 1000000000LL + before.tv_nsec,
                   (long long)after.tv_sec * 1000000000LL + after.tv_nsec);
        }
        xcb_disconnect(c);
        return 0;
    }

    int glyph_w = 9, glyph_h = h * 6 / 10, per_line = (w - 4) / (glyph_w + 1);
    if (per_line < 1) per_line = 1;
    uint32_t rng = 12345;
    long long period_ns = (long long)(1e9 / hz);
    long long ticks = seconds > 0 ? (long long)(seconds * hz) : -1;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long long start_ns = start.tv_sec * 1000000000LL + start.tv_nsec;
    for (long long i = 0; ticks < 0 || i < ticks; i++) {
        long long due = start_ns + i * period_ns;
        struct timespec ts = {due / 1000000000LL, due % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        // the background, alternating between two light greys so even an empty line
        // changes the box
        uint32_t bg = (i % 2) ? 0xf0f0f0 : 0xe8e8e8;
        xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &bg);
        xcb_rectangle_t box = {(int16_t)x, (int16_t)y, (uint16_t)w, (uint16_t)h};
        xcb_poly_fill_rectangle(c, root, gc, 1, &box);
        int count = (int)(i % per_line) + 1;
        xcb_rectangle_t glyphs[256];
        if (count > 256) count = 256;
        for (int g = 0; g < count; g++) {
            rng = rng * 1103515245u + 12345u;
            int gh = glyph_h / 2 + (int)((rng >> 16) % (uint32_t)(glyph_h / 2 + 1));
            glyphs[g] = (xcb_rectangle_t){(int16_t)(x + 2 + g * (glyph_w + 1)), (int16_t)(y + 2 + glyph_h - gh),
                                          (uint16_t)glyph_w, (uint16_t)gh};
        }
        uint32_t ink = 0x202020 + (uint32_t)(i % 7) * 0x080808;
        xcb_change_gc(c, gc, XCB_GC_FOREGROUND, &ink);
        xcb_poly_fill_rectangle(c, root, gc, (uint32_t)count, glyphs);
        if (xcb_flush(c) <= 0 || xcb_connection_has_error(c)) {
            fprintf(stderr, "painter: the X connection broke\n");
            return 74;
        }
    }
    xcb_disconnect(c);
    return 0;
}
