/* Writes the tracker's test frames (tests/video_frames.h) as PNG files, for the reference script
   on the GPU machine: make_video_frames PHOTO N OUTDIR  ->  OUTDIR/frame_000.png ... */
#include <stdio.h>
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
#include "video_frames.h"

int main(int argc, char **argv) {
    int sw, sh, ch, n, k;
    unsigned char *rgb;
    if (argc != 4) {
        fprintf(stderr, "usage: make_video_frames PHOTO N OUTDIR\n");
        return 2;
    }
    n = atoi(argv[2]);
    rgb = stbi_load(argv[1], &sw, &sh, &ch, 3);
    if (!rgb || n < 1) {
        fprintf(stderr, "make_video_frames: cannot read %s\n", argv[1]);
        return 1;
    }
    for (k = 0; k < n; k++) {
        int w, h;
        char path[4096];
        unsigned char *f = vf_frame(rgb, sw, sh, k, n, &w, &h);
        snprintf(path, sizeof(path), "%s/frame_%03d.png", argv[3], k);
        if (!f || !stbi_write_png(path, w, h, 3, f, w * 3)) {
            fprintf(stderr, "make_video_frames: cannot write %s\n", path);
            return 1;
        }
        printf("%s %dx%d crc32 %08x\n", path, w, h, vf_crc32(f, (size_t)w * h * 3));
        free(f);
    }
    stbi_image_free(rgb);
    return 0;
}
