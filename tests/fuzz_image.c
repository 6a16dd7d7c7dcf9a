/* Fuzz target for the command-line tool's image reader, examples/image_io.c: the exact code
   `sam3 segment -i` and `sam3 points --mask` run (cli_img_decode over the file's bytes, then the
   grey conversion of a mask prompt).

   Two builds of this one file:
     make fuzz-image      clang -fsanitize=fuzzer,address,undefined: libFuzzer drives
                          LLVMFuzzerTestOneInput (seeds: tests/make_test_images.py seeds)
     make test / asan     cc -DSAM3_FUZZ_REPLAY: a main() that decodes each given file (or every
                          file of a directory) once and checks the result's invariants; and
                          `fuzz_image_replay --dump FILE OUT.pnm` writes the decoded pixels as a
                          PGM/PPM (the JPEG parity test compares it with djpeg's)

   Invariants checked on every input: a failure has a reason; a success has 1 <= w, h <= 16384,
   w * h within the budget, 1 or 3 channels, an EXIF orientation 1-8 that can be applied, and
   every pixel byte is read (so ASan/valgrind see
   any byte that was not written; `make valgrind` replays the seeds under memcheck). */
#include "../examples/image_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_BUDGET (1u << 22) /* pixels: a smaller budget than the CLI's, so each input runs fast */

static volatile unsigned fz_sink;

/* 0 when the decode of (data, size) keeps every invariant. */
static int fz_one(const uint8_t *data, size_t size) {
    cli_img img;
    char err[512];
    size_t i, n;
    unsigned sum = 0;
    if (!cli_img_decode(data, size, FZ_BUDGET, &img, err, sizeof(err))) return err[0] && !img.pixels ? 0 : 1;
    if (img.w < 1 || img.h < 1 || img.w > SAM3_MAX_IMAGE_DIM || img.h > SAM3_MAX_IMAGE_DIM ||
        (uint64_t)img.w * img.h > FZ_BUDGET || (img.channels != 1 && img.channels != 3) || !img.pixels) {
        free(img.pixels);
        return 1;
    }
    n = (size_t)img.w * img.h * img.channels;
    for (i = 0; i < n; i++) sum += img.pixels[i];
    if (img.orientation < 1 || img.orientation > 8 || !cli_img_apply_orientation(&img)) { /* what an image goes through */
        free(img.pixels);
        return 1;
    }
    cli_img_to_grey(&img); /* what a mask prompt goes through */
    for (i = 0; i < (size_t)img.w * img.h; i++) sum += img.pixels[i];
    if (sum == 0xFFFFFFFFu) fz_sink++; /* a branch on every pixel byte: valgrind reports any unwritten one */
    fz_sink = sum;
    free(img.pixels);
    return img.channels == 1 ? 0 : 1;
}

#include "fuzz_replay.h"
#ifdef SAM3_FUZZ_REPLAY
static void fz_verbose(const char *path, const unsigned char *buf, size_t n) {
    cli_img img;
    char err[512];
    if (cli_img_decode(buf, n, FZ_BUDGET, &img, err, sizeof(err))) printf("%s: %s %dx%dx%d\n", path, img.format, img.w, img.h, img.channels);
    else printf("%s: %s\n", path, err);
    free(img.pixels);
}
/* --dump FILE OUT: the decoded pixels as binary PGM (grey) or PPM (RGB), what djpeg writes;
   --dump-oriented: turned upright by their EXIF orientation first, as the CLI reads images. */
static int dump(const char *in, const char *out, int oriented) {
    cli_img img;
    char err[512];
    FILE *f;
    int ok;
    if (!cli_img_read_file(in, 0, &img, err, sizeof(err))) {
        fprintf(stderr, "fuzz_image_replay: %s: %s\n", in, err);
        return 1;
    }
    if (oriented && !cli_img_apply_orientation(&img)) {
        free(img.pixels);
        fprintf(stderr, "fuzz_image_replay: out of memory\n");
        return 1;
    }
    f = fopen(out, "wb");
    ok = f && fprintf(f, "P%c\n%d %d\n255\n", img.channels == 1 ? '5' : '6', img.w, img.h) > 0 &&
         fwrite(img.pixels, 1, (size_t)img.w * img.h * img.channels, f) == (size_t)img.w * img.h * img.channels;
    if (f && fclose(f) != 0) ok = 0;
    free(img.pixels);
    if (!ok) fprintf(stderr, "fuzz_image_replay: cannot write %s\n", out);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--dump")) return dump(argv[2], argv[3], 0);
    if (argc == 4 && !strcmp(argv[1], "--dump-oriented")) return dump(argv[2], argv[3], 1);
    return fzr_main(argc, argv, "fuzz_image_replay"); /* or --dump FILE OUT.pnm */
}
#endif
