/* Fuzz target for `sam3 merge`'s reader of per-image coco.json files (examples/cli_dataset.c,
   linked with this file: cli_ds__coco_parse_text, its JSON checker and field reader): the exact
   code the merge runs on each file before it copies a line.

   Two builds of this one file, as tests/fuzz_image.c:
     make fuzz-merge      clang -fsanitize=fuzzer,address,undefined: libFuzzer drives
                          LLVMFuzzerTestOneInput (seeds: tests/make_merge_seeds.py)
     make test / asan     cc -DSAM3_FUZZ_REPLAY: a main() that parses each given file (or every
                          file of a directory) once and checks the invariants; -v prints each
                          file's verdict ("PATH: ok" or the reason)

   Invariants: a failure has a reason; a success has an image id in 1..n_images, at least one
   category, and annotations whose lines are each one JSON object. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../examples/cli_common.h"
#include "../examples/cli_dataset.h"

/* The CLI's stderr line (examples/cli_common.c): not wanted here. */
void cli_error(const char *fmt, ...) { (void)fmt; }

/* 0 when parsing (data, size) keeps every invariant. */
static int fz_one(const uint8_t *data, size_t size) {
    cli_ds__coco c;
    char why[300], *text = (char *)malloc(size + 1);
    int ok, bad = 0, k;
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* (a NUL inside: the file reader refuses it; here the text ends there) */
    ok = cli_ds__coco_parse_text(&c, text, "fuzz", why, sizeof(why));
    if (!ok) bad = !why[0];
    else {
        bad = c.id < 1 || c.id > c.n_images || c.n_cats < 1 || !c.generator || !c.settings || !c.image;
        for (k = 0; k < c.n_ann && !bad; k++) bad = !cli_ds__json_object_line(c.ann[k]);
    }
    cli_ds__coco_free(&c);
    return bad;
}

#include "fuzz_replay.h"
#ifdef SAM3_FUZZ_REPLAY
static void fz_verbose(const char *path, const unsigned char *buf, size_t n) { /* "PATH: ok" or "PATH: the reason" */
    cli_ds__coco c;
    char why[300], *text = (char *)malloc(n + 1);
    if (!text) return;
    memcpy(text, buf, n);
    text[n] = 0;
    printf("%s: %s\n", path, cli_ds__coco_parse_text(&c, text, path, why, sizeof(why)) ? "ok" : why);
    cli_ds__coco_free(&c);
}
int main(int argc, char **argv) { return fzr_main(argc, argv, "fuzz_merge_replay"); }
#endif
