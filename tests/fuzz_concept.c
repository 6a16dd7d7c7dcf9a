/* Fuzz target for the concept reader: sam3_concept_load over arbitrary bytes, for the model in
   $SAM3_FUZZ_CONCEPT_MODEL (default build/tiny_a.sam3, loaded once), and for a concept that
   loads, save (it must give back the same bytes) and a sam3_segment with it on a small image.

   Two builds of this one file, as tests/fuzz_load.c:
     make fuzz-concept    clang -fsanitize=fuzzer,address,undefined: libFuzzer drives
                          LLVMFuzzerTestOneInput (seeds: test_saved_concept --seeds DIR)
     make test / asan     cc -DSAM3_FUZZ_REPLAY: a main() that replays each given file (or every
                          file of a directory) once; -v prints each file's verdict

   Invariants: a failure has a message and no concept; a success saves to the same bytes, has
   1 or more tokens, and segments (result >= 0). */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model and context every input is read for: one per process, made on first use. */
static sam3_model *fz_model;
static sam3_ctx *fz_ctx;
static int fz_ready(void) {
    static int tried;
    const char *path = getenv("SAM3_FUZZ_CONCEPT_MODEL");
    uint8_t px[3 * 24 * 20];
    size_t i;
    if (tried) return fz_ctx != NULL;
    tried = 1;
    if (sam3_load(path ? path : "build/tiny_a.sam3", NULL, &fz_model) != SAM3_OK || sam3_ctx_new(fz_model, NULL, &fz_ctx) != SAM3_OK) {
        printf("fuzz_concept: cannot load %s\n", path ? path : "build/tiny_a.sam3");
        return 0;
    }
    for (i = 0; i < sizeof(px); i++) px[i] = (uint8_t)(i * 37 + (i / 72) * 11);
    return sam3_set_image(fz_ctx, px, 24, 20, 72, SAM3_RGB8) == SAM3_OK;
}

/* 0 when reading (data, size) keeps every invariant; 1 when one broke (or there is no model). */
static int fz_one(const uint8_t *data, size_t size) {
    sam3_concept *k = NULL;
    char err[256];
    sam3_result rc;
    int bad;
    if (!fz_ready()) return 1;
    err[0] = 0;
    rc = sam3_concept_load(fz_model, data, size, &k, err, sizeof(err));
    if (rc != SAM3_OK) return k != NULL || !err[0] || rc > 0;
    {
        size_t n = 0;
        uint8_t *back = (uint8_t *)malloc(size + 1);
        sam3_segment_prompt pr;
        sam3_segment_result res;
        const sam3_concept *list[1];
        bad = !back || sam3_concept_save(k, back, size, &n) != SAM3_OK || n != size || memcmp(back, data, size) || sam3_concept_n_tokens(k, NULL) < 1;
        memset(&pr, 0, sizeof(pr));
        list[0] = k;
        pr.concepts = list;
        pr.n_concepts = 1;
        bad |= sam3_segment(fz_ctx, &pr, NULL, &res) < 0;
        free(back);
    }
    sam3_concept_free(k);
    return bad;
}

#include "fuzz_replay.h"
#ifdef SAM3_FUZZ_REPLAY
static void fz_verbose(const char *path, const unsigned char *buf, size_t n) { /* "PATH: ok" or "PATH: the reason" */
    sam3_concept *k = NULL;
    char err[256] = "";
    if (!fz_ready()) return;
    printf("%s: %s\n", path, sam3_concept_load(fz_model, buf, n, &k, err, sizeof(err)) == SAM3_OK ? "ok" : err);
    sam3_concept_free(k);
}
int main(int argc, char **argv) {
    int rc = fzr_main(argc, argv, "fuzz_concept_replay");
    sam3_ctx_free(fz_ctx);
    sam3_free(fz_model);
    return rc;
}
#endif
