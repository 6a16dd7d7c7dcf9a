/* Fuzz target for the command-line tool's YUV4MPEG2 reader, examples/cli_y4m.h: the exact code
   `sam3 track -i -` runs on its stdin (the input's bytes through a FILE, as stdin is read).

   Two builds of this one file, as tests/fuzz_image.c:
     make fuzz-y4m        clang -fsanitize=fuzzer,address,undefined: libFuzzer drives
                          LLVMFuzzerTestOneInput (seeds: tests/make_y4m_seeds.py)
     make test / asan     cc -DSAM3_FUZZ_REPLAY: a main() that reads each given file (or every
                          file of a directory) once and checks the invariants; and
                          `fuzz_y4m_replay --dump FILE` prints the first frame's pixels as text
                          (one "R G B" line a pixel: tests/test_hardening.sh checks the colours)

   Invariants on every input: a failure has a reason; every frame returned has the header's size
   within the budget and every RGB byte written (summed: ASan/valgrind see any byte that was not);
   the first frame, written by the writer (cli_y4m_out_*, what `sam3 track --video-out` writes),
   reads back as one frame of its size, each pixel's luma within 3. */
#define _POSIX_C_SOURCE 200809L
#include "../examples/cli_y4m.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_BUDGET (1u << 20) /* pixels: smaller than the CLI's, so each input runs fast */
#define FZ_FRAMES 16

static volatile unsigned fz_sink;

/* 0 when rgb (w x h) written as a stream reads back as one frame of that size, each pixel's luma
   within 3 of what was written. */
static int fz_roundtrip(const unsigned char *rgb, int w, int h) {
    cli_y4m_out o;
    cli_y4m y;
    char *buf = NULL;
    size_t len = 0, i;
    unsigned char *back = NULL, *again = NULL;
    FILE *f = open_memstream(&buf, &len);
    int bad = 1;
    if (!f) return 0; /* no memory: nothing to check */
    bad = !cli_y4m_out_open(&o, f, w, h, 25, 1) || !cli_y4m_out_frame(&o, rgb, w, h) || o.frames != 1;
    cli_y4m_out_free(&o);
    fclose(f);
    if (!bad && (f = fmemopen(buf, len, "rb")) != NULL) {
        bad = !cli_y4m_open(&y, f, FZ_BUDGET) || y.w != w || y.h != h || y.fps_n != 25 || y.fps_d != 1 || cli_y4m_next(&y, &back) != 1 ||
              cli_y4m_next(&y, &again) != 0;
        for (i = 0; !bad && i < (size_t)w * h; i++) {
            const unsigned char *p = rgb + 3 * i, *q = back + 3 * i;
            const int ya = 66 * p[0] + 129 * p[1] + 25 * p[2], yb = 66 * q[0] + 129 * q[1] + 25 * q[2];
            /* luma survives 4:2:0 (only chroma is shared) unless a channel clipped on the way back */
            if (q[0] > 0 && q[1] > 0 && q[2] > 0 && q[0] < 255 && q[1] < 255 && q[2] < 255) bad = abs(ya - yb) > 3 * 256;
        }
        free(back);
        free(again);
        cli_y4m_free(&y);
        fclose(f);
    }
    free(buf);
    return bad;
}

/* 0 when reading (data, size) as a stream keeps every invariant. */
static int fz_one(const uint8_t *data, size_t size) {
    cli_y4m y;
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    int k, r = 0, bad = 0;
    unsigned sum = 0;
    if (!f) return 0;
    if (!cli_y4m_open(&y, f, FZ_BUDGET)) {
        bad = !y.err[0] || y.yuv != NULL;
    } else {
        bad = y.w < 1 || y.h < 1 || (uint64_t)y.w * y.h > FZ_BUDGET;
        for (k = 0; !bad && k < FZ_FRAMES; k++) {
            unsigned char *rgb = NULL;
            size_t i;
            if ((r = cli_y4m_next(&y, &rgb)) <= 0) {
                bad = (r < 0 && !y.err[0]) || rgb != NULL;
                break;
            }
            for (i = 0; i < (size_t)y.w * y.h * 3; i++) sum += rgb[i];
            if (k == 0) bad = fz_roundtrip(rgb, y.w, y.h);
            free(rgb);
        }
    }
    if (sum == 0xFFFFFFFFu) fz_sink++; /* a branch on every pixel byte */
    fz_sink = sum;
    cli_y4m_free(&y);
    fclose(f);
    return bad;
}

#include "fuzz_replay.h"
#ifdef SAM3_FUZZ_REPLAY
static void fz_verbose(const char *path, const unsigned char *buf, size_t n) {
    (void)buf;
    printf("%s (%lu bytes)\n", path, (unsigned long)n);
}
int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--dump")) {
        cli_y4m y;
        unsigned char *rgb = NULL;
        FILE *f = fopen(argv[2], "rb");
        size_t k;
        if (!f) return 1;
        if (!cli_y4m_open(&y, f, FZ_BUDGET) || cli_y4m_next(&y, &rgb) != 1) {
            printf("error: %s\n", y.err);
            cli_y4m_free(&y);
            fclose(f);
            return 1;
        }
        for (k = 0; k < (size_t)y.w * y.h; k++) printf("%d %d %d\n", rgb[3 * k], rgb[3 * k + 1], rgb[3 * k + 2]);
        free(rgb);
        cli_y4m_free(&y);
        fclose(f);
        return 0;
    }
    return fzr_main(argc, argv, "fuzz_y4m_replay"); /* or --dump FILE */
}
#endif
