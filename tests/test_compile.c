/* Compiles the header alone (declarations only) as C99 and as C++ with -Wall -Wextra -pedantic
   -Werror, links it against test_compile_impl.c (the implementation) and two SAM3_STATIC copies
   (test_compile_static.c built twice), and checks a few things that need no model. */
#include "../sam3.h"
#include <stdio.h>
#include <string.h>

int sam3_test_static_a(void);
int sam3_test_static_b(void);

static int pass, fail;
static void check(int ok, const char *what) {
    if (ok) pass++;
    else {
        fail++;
        printf("FAIL %s\n", what);
    }
}

int main(void) {
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_load_options lo = sam3_load_options_default();
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_segment_options so = sam3_segment_options_default();
    sam3_points_options po = sam3_points_options_default();
    sam3_tracker_options to = sam3_tracker_options_default();
    int r;
    check(strcmp(sam3_version_string(), SAM3_VERSION_STRING) == 0, "version string");
    check(sam3_version() == SAM3_VERSION && SAM3_VERSION == SAM3_VERSION_MAJOR * 10000 + SAM3_VERSION_MINOR * 100 + SAM3_VERSION_PATCH,
          "sam3_version() = SAM3_VERSION = MAJOR * 10000 + MINOR * 100 + PATCH");
    {
        char v[32];
        snprintf(v, sizeof(v), "%d.%d.%d", SAM3_VERSION_MAJOR, SAM3_VERSION_MINOR, SAM3_VERSION_PATCH);
        check(strcmp(v, SAM3_VERSION_STRING) == 0, "SAM3_VERSION_STRING is MAJOR.MINOR.PATCH");
    }
    for (r = -12; r <= 1; r++) check(strcmp(sam3_result_string((sam3_result)r), "unknown sam3_result") != 0, "every result has a string");
    check(strcmp(sam3_result_string((sam3_result)-99), "unknown sam3_result") == 0, "unknown result string");
    check(lo.no_mmap == 0 && lo.log == NULL && co.n_threads == 0 && co.tap == NULL, "zeroed defaults");
    check(so.score_threshold == 0.5f && so.mask_threshold == 0.5f, "segment defaults");
    check(po.single_mask == 0 && po.mask_threshold == 0.5f && po.no_masks == 0, "points defaults");
    check(to.no_masks == 0 && to.mask_threshold == 0.5f, "tracker defaults: the same mask threshold unit and value");
    check(sam3_load_from_memory("xx", 2, &lo, &m) == SAM3_ERR_BAD_MAGIC && m == NULL, "garbage blob");
    check(sam3_ctx_new(NULL, &co, &c) == SAM3_ERR_INVALID_ARG && c == NULL, "ctx without model");
    check(sam3_set_image(NULL, NULL, 1, 1, 3, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image NULL ctx");
    sam3_free(NULL);
    sam3_ctx_free(NULL);
    check(sam3_test_static_a() == 1 && sam3_test_static_b() == 1, "two SAM3_STATIC copies link together");
    printf("test_compile (%s): %d passed, %d failed\n",
#ifdef __cplusplus
           "C++",
#else
           "C99",
#endif
           pass, fail);
    return fail != 0;
}
