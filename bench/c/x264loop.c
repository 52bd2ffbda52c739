// x264loop: the "limit" row of the encode benchmark (see "Anchors" in bench/README.md).
// Raw I420 frames on stdin, libx264 with the zerolatency tune, Annex-B on stdout;
// nothing else. Whatever nalcast produce spends beyond this is its own overhead.
//
//   x264loop WIDTH HEIGHT FPS PRESET BITRATE_KBPS BUFSIZE_KBIT
//
// Settings match the FFmpeg and GStreamer anchor commands: keyint 60, no scenecut,
// ABR at BITRATE with maxrate = BITRATE and a VBV of BUFSIZE (CBR-like), SPS/PPS
// in front of every IDR. The x264 options SEI in the output is the fairness check.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x264.h>

// Reads exactly n bytes. Returns n, 0 at a clean end of input, -1 on a short read or error.
static ssize_t read_full(int fd, uint8_t *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return (ssize_t)n;
}

static int write_full(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int write_nals(x264_nal_t *nals, int size) {
    // The payloads of one encode call are contiguous in memory.
    if (size > 0 && write_full(1, nals[0].p_payload, (size_t)size) < 0) {
        perror("write");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: x264loop WIDTH HEIGHT FPS PRESET BITRATE_KBPS BUFSIZE_KBIT\n");
        return 64;
    }
    int width = atoi(argv[1]), height = atoi(argv[2]), fps = atoi(argv[3]);
    int kbps = atoi(argv[5]), bufsize = atoi(argv[6]);
    if (width <= 0 || height <= 0 || width % 2 || height % 2 || fps <= 0 || kbps <= 0 || bufsize <= 0) {
        fprintf(stderr, "x264loop: bad size, rate or bitrate\n");
        return 64;
    }

    x264_param_t param;
    if (x264_param_default_preset(&param, argv[4], "zerolatency") < 0) {
        fprintf(stderr, "x264loop: unknown preset %s\n", argv[4]);
        return 64;
    }
    param.i_log_level = X264_LOG_WARNING;
    param.i_csp = X264_CSP_I420;
    param.i_width = width;
    param.i_height = height;
    param.i_fps_num = (uint32_t)fps;
    param.i_fps_den = 1;
    param.i_timebase_num = 1;
    param.i_timebase_den = (uint32_t)fps;
    param.b_vfr_input = 0;
    param.i_keyint_max = 60;
    param.i_scenecut_threshold = 0;
    param.rc.i_rc_method = X264_RC_ABR;
    param.rc.i_bitrate = kbps;
    param.rc.i_vbv_max_bitrate = kbps;
    param.rc.i_vbv_buffer_size = bufsize;
    param.b_annexb = 1;
    param.b_repeat_headers = 1;

    x264_t *encoder = x264_encoder_open(&param);
    if (!encoder) {
        fprintf(stderr, "x264loop: x264_encoder_open failed\n");
        return 70;
    }
    x264_picture_t pic, out;
    if (x264_picture_alloc(&pic, X264_CSP_I420, width, height) < 0) {
        fprintf(stderr, "x264loop: out of memory\n");
        return 70;
    }
    // Planes of x264_picture_alloc are tightly packed (stride = plane width).
    const size_t plane_size[3] = {
        (size_t)width * height, (size_t)width / 2 * height / 2, (size_t)width / 2 * height / 2};

    x264_nal_t *nals;
    int nal_count;
    int64_t frame = 0;
    for (;; frame++) {
        ssize_t r = 0;
        for (int i = 0; i < 3; i++) {
            r = read_full(0, pic.img.plane[i], plane_size[i]);
            if (r <= 0) break;
        }
        if (r == 0) break;
        if (r < 0) {
            fprintf(stderr, "x264loop: short frame %lld on stdin\n", (long long)frame);
            return 66;
        }
        pic.i_pts = frame;
        int size = x264_encoder_encode(encoder, &nals, &nal_count, &pic, &out);
        if (size < 0) {
            fprintf(stderr, "x264loop: x264_encoder_encode failed\n");
            return 70;
        }
        if (write_nals(nals, size) < 0) return 74;
    }
    while (x264_encoder_delayed_frames(encoder) > 0) {
        int size = x264_encoder_encode(encoder, &nals, &nal_count, NULL, &out);
        if (size < 0) return 70;
        if (write_nals(nals, size) < 0) return 74;
    }
    x264_picture_clean(&pic);
    x264_encoder_close(encoder);
    return 0;
}
