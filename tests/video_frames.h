/* Test frames for the tracker: windows panned across a photo, as a camera sweeping a scene. The
   photo (../shared/images/test_image.jpg, decoded by stb_image) is not part of the project, so
   the frames are made where they are used: by tests/test_video.c, and by tests/make_video_frames.c
   as PNG files for the reference script on the GPU machine. Each reference dump records the CRC-32
   of every frame's RGB bytes, so a different photo or decoder is caught, not compared. */
#ifndef VIDEO_FRAMES_H
#define VIDEO_FRAMES_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Frame k of n from an sw x sh photo: frames 0..6 are 3/8 x 1/2 of it, later ones 5/16 x 5/12
   (the stream changes size mid-way), the window moving right and down. */
static void vf_rect(int k, int n, int sw, int sh, int *x0, int *y0, int *w, int *h) {
    int ww = k < 7 ? sw * 3 / 8 : sw * 5 / 16, hh = k < 7 ? sh / 2 : sh * 5 / 12;
    *w = ww;
    *h = hh;
    *x0 = n > 1 ? (int)((long)k * (sw - ww) / (n - 1)) : 0;
    *y0 = n > 1 ? (int)((long)k * (sh - hh) / (2 * (n - 1))) : 0;
}

/* RGB8 copy of frame k (malloc'd, w*h*3) from an RGB8 photo. */
static unsigned char *vf_frame(const unsigned char *rgb, int sw, int sh, int k, int n, int *w, int *h) {
    int x0, y0, y;
    unsigned char *out;
    vf_rect(k, n, sw, sh, &x0, &y0, w, h);
    out = (unsigned char *)malloc((size_t)*w * *h * 3);
    if (!out) return NULL;
    for (y = 0; y < *h; y++) memcpy(out + (size_t)y * *w * 3, rgb + ((size_t)(y0 + y) * sw + x0) * 3, (size_t)*w * 3);
    return out;
}

/* zlib's CRC-32 (what Python's zlib.crc32 computes). */
static uint32_t vf_crc32(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        c ^= p[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}
#endif
