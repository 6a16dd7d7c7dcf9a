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
   within the budget and every RGB byte written (summed: ASan/valgrind see any byte that was not). */
#define _POSIX_C_SOURCE 200809L
#include "../examples/cli_y4m.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_BUDGET (1u << 20) /* pixels: smaller than the CLI's, so each input runs fast */
#define FZ_FRAMES 16

static volatile unsigned fz_sink;

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
