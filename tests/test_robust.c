/* Robustness of the public API on a real (tiny, random-weight) model: hostile images, prompts,
   boxes, points, NULL pointers and call order; an abort callback that fires at every poll in
   turn; an allocator that fails the k-th allocation, for every k. Every case must return its
   documented code, leave the context usable, and leak nothing (a counting allocator checks that
   every allocation the library made was freed). Runs under ASan/UBSan and valgrind too.

   usage: test_robust MODEL.sam3 [-q]   (-q, quick, for valgrind: no 1 MB / 4 MB prompts, and the
                                        abort and allocation sweeps take every 8th / 25th point)
   last line: "test_robust: N passed, N failed" */
#define _POSIX_C_SOURCE 200112L
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

static double now_s(void) {
#ifdef _WIN32
    return (double)clock() / CLOCKS_PER_SEC; /* wall time there */
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}
#define TIMED(call)                                                      \
    do {                                                                 \
        double t0_ = now_s();                                            \
        call;                                                            \
        if (getenv("SAM3_TEST_VERBOSE") || now_s() - t0_ > 5)            \
            t_note("  %-40s %.2f s", #call, now_s() - t0_);              \
    } while (0)

/* ---- counting allocator: live allocations, total calls, and a failure to inject ---- */
typedef struct counter {
    long calls;    /* allocations asked for */
    long live;     /* not yet freed */
    long fail_at;  /* 1-based call number that fails (0: none) */
    int fail_rest; /* also fail every call after fail_at */
    long failed;   /* failures injected */
} counter;

#ifdef _WIN32
#include <malloc.h>
#define t_memalign(pp, align, size) ((*(pp) = _aligned_malloc((size), (align))) ? 0 : -1)
#define t_alignfree(p) _aligned_free(p)
#else
#define t_memalign(pp, align, size) posix_memalign((pp), (align), (size))
#define t_alignfree(p) free(p)
#endif
static void *c_alloc(size_t size, size_t align, void *user) {
    counter *k = (counter *)user;
    void *p = NULL;
    k->calls++;
    if (k->fail_at && (k->calls == k->fail_at || (k->fail_rest && k->calls > k->fail_at))) {
        k->failed++;
        return NULL;
    }
    if (align < sizeof(void *)) align = sizeof(void *);
    if (t_memalign(&p, align, size ? size : 1) != 0) return NULL;
    if (((uintptr_t)p & (align - 1)) != 0) t_check(0, "allocator returned misaligned memory");
    k->live++;
    return p;
}
static void c_free(void *p, void *user) {
    counter *k = (counter *)user;
    if (!p) {
        t_check(0, "library freed a NULL pointer through the allocator");
        return;
    }
    k->live--;
    t_alignfree(p);
}
static sam3_allocator counted(counter *k) {
    sam3_allocator a;
    a.alloc = c_alloc;
    a.free = c_free;
    a.user = k;
    return a;
}

/* ---- snapshots of results, to compare runs byte for byte ---- */
typedef struct snap {
    int rc, n, w, h, n_queries, lw, lh, n_text_tokens, truncated;
    float presence;
    float *scores_boxes; /* (n, 5) */
    uint8_t *masks;      /* (n, w*h) */
    float *low;          /* (n, lw*lh) or NULL */
    float *sem;          /* (lw*lh) or NULL */
} snap;

static void snap_free(snap *s) {
    free(s->scores_boxes);
    free(s->masks);
    free(s->low);
    free(s->sem);
    memset(s, 0, sizeof(*s));
}

static void snap_take(snap *s, int rc, const sam3_segment_result *g) {
    int i;
    size_t plane = (size_t)g->width * g->height, lp = (size_t)g->low_res_width * g->low_res_height;
    memset(s, 0, sizeof(*s));
    s->rc = rc;
    if (rc < 0) return;
    s->n = g->n_instances;
    s->w = g->width;
    s->h = g->height;
    s->n_queries = g->n_queries;
    s->lw = g->low_res_width;
    s->lh = g->low_res_height;
    s->presence = g->presence;
    s->n_text_tokens = g->n_text_tokens;
    s->truncated = g->text_truncated;
    s->scores_boxes = (float *)calloc((size_t)g->n_instances * 5 + 1, sizeof(float));
    s->masks = (uint8_t *)calloc((size_t)g->n_instances * plane + 1, 1);
    if (g->n_instances && g->instances[0].low_res_logits) s->low = (float *)calloc((size_t)g->n_instances * lp + 1, sizeof(float));
    if (g->semantic_logits) {
        s->sem = (float *)malloc(lp * sizeof(float) + 1);
        memcpy(s->sem, g->semantic_logits, lp * sizeof(float));
    }
    for (i = 0; i < g->n_instances; i++) {
        const sam3_instance *in = &g->instances[i];
        s->scores_boxes[5 * i] = in->score;
        memcpy(s->scores_boxes + 5 * i + 1, &in->box, 4 * sizeof(float));
        if (in->mask) memcpy(s->masks + (size_t)i * plane, in->mask, plane);
        if (s->low && in->low_res_logits) memcpy(s->low + (size_t)i * lp, in->low_res_logits, lp * sizeof(float));
    }
}

static int snap_eq(const snap *a, const snap *b) {
    size_t plane = (size_t)a->w * a->h, lp = (size_t)a->lw * a->lh;
    if (a->rc != b->rc || a->n != b->n || a->w != b->w || a->h != b->h || a->n_queries != b->n_queries || a->lw != b->lw ||
        a->lh != b->lh || a->n_text_tokens != b->n_text_tokens || a->truncated != b->truncated)
        return 0;
    if (a->rc < 0) return 1;
    if (memcmp(&a->presence, &b->presence, sizeof(float))) return 0;
    if (memcmp(a->scores_boxes, b->scores_boxes, (size_t)a->n * 5 * sizeof(float))) return 0;
    if (memcmp(a->masks, b->masks, (size_t)a->n * plane)) return 0;
    if (!a->low != !b->low || (a->low && memcmp(a->low, b->low, (size_t)a->n * lp * sizeof(float)))) return 0;
    if (!a->sem != !b->sem || (a->sem && memcmp(a->sem, b->sem, lp * sizeof(float)))) return 0;
    return 1;
}

typedef struct psnap {
    int rc, n, w, h, lw, lh, best;
    float obj;
    float *iou;
    uint8_t *masks;
    float *low;
} psnap;
static void psnap_free(psnap *s) {
    free(s->iou);
    free(s->masks);
    free(s->low);
    memset(s, 0, sizeof(*s));
}
static void psnap_take(psnap *s, int rc, const sam3_points_result *r) {
    size_t plane = (size_t)r->width * r->height, lp = (size_t)r->low_res_width * r->low_res_height;
    memset(s, 0, sizeof(*s));
    s->rc = rc;
    if (rc < 0) return;
    s->n = r->n_masks;
    s->w = r->width;
    s->h = r->height;
    s->lw = r->low_res_width;
    s->lh = r->low_res_height;
    s->best = r->best;
    s->obj = r->object_score;
    s->iou = (float *)malloc((size_t)s->n * sizeof(float) + 1);
    s->masks = (uint8_t *)calloc((size_t)s->n * plane + 1, 1);
    s->low = (float *)malloc((size_t)s->n * lp * sizeof(float) + 1);
    memcpy(s->iou, r->iou, (size_t)s->n * sizeof(float));
    if (r->masks) memcpy(s->masks, r->masks, (size_t)s->n * plane);
    memcpy(s->low, r->low_res_logits, (size_t)s->n * lp * sizeof(float));
}
static int psnap_eq(const psnap *a, const psnap *b) {
    size_t plane = (size_t)a->w * a->h, lp = (size_t)a->lw * a->lh;
    if (a->rc != b->rc || a->n != b->n || a->w != b->w || a->h != b->h || a->lw != b->lw || a->lh != b->lh || a->best != b->best)
        return 0;
    if (a->rc < 0) return 1;
    return !memcmp(&a->obj, &b->obj, sizeof(float)) && !memcmp(a->iou, b->iou, (size_t)a->n * sizeof(float)) &&
           !memcmp(a->masks, b->masks, (size_t)a->n * plane) && !memcmp(a->low, b->low, (size_t)a->n * lp * sizeof(float));
}

/* ---- shared state ---- */
static const char *g_path;
static void *g_blob;
static size_t g_size;
static int g_has_points;
static long g_step_abort = 1, g_step_alloc = 1; /* sweep strides (-q: 8, 25) */
static char g_log[1024];
static void capture(void *user, int level, const char *msg) {
    (void)user;
    (void)level;
    snprintf(g_log, sizeof(g_log), "%s", msg);
}

/* A deterministic test picture: w x h, bpp bytes a pixel, rows `stride` apart. */
static uint8_t *picture(int w, int h, int bpp, int stride) {
    uint8_t *p = (uint8_t *)malloc((size_t)stride * h + 1);
    int x, y, k;
    for (y = 0; y < h; y++)
        for (x = 0; x < stride; x++) p[(size_t)y * stride + x] = 0xEE; /* padding bytes must not matter */
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
            for (k = 0; k < bpp; k++) p[(size_t)y * stride + (size_t)x * bpp + k] = (uint8_t)((x * 7 + y * 13 + k * 50) ^ (x * y));
    return p;
}

/* Checks the invariants of a successful sam3_segment result. */
static void check_seg(const char *what, const sam3_segment_result *s, int w, int h) {
    int i, ok = s->n_instances >= 0 && s->n_instances <= s->n_queries && s->width == w && s->height == h && (s->n_instances == 0 || s->instances);
    for (i = 0; ok && i < s->n_instances; i++) {
        const sam3_instance *in = &s->instances[i];
        int64_t area = 0;
        size_t j;
        if (!(in->score >= 0 && in->score <= 1) || in->query < 0 || in->query >= s->n_queries) ok = 0;
        if (in->mask) {
            for (j = 0; j < (size_t)w * h; j++) {
                if (in->mask[j] > 1) ok = 0;
                area += in->mask[j];
            }
            if (area != in->area) ok = 0;
        }
    }
    t_check(ok, "%s: result well formed (n %d of %d, %dx%d)", what, s->n_instances, s->n_queries, s->width, s->height);
}

static sam3_ctx *new_ctx(const sam3_model *m, counter *k) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_ctx *c = NULL;
    co.n_threads = 1;
    co.blas_threads = 1;
    if (k) co.allocator = counted(k);
    if (sam3_ctx_new(m, &co, &c) != SAM3_OK) return NULL;
    return c;
}

/* ================================================================================================ */
static void test_nulls(const sam3_model *m) {
    sam3_ctx *c = NULL;
    sam3_segment_result seg;
    sam3_points_result pr;
    sam3_segment_prompt p;
    sam3_points_prompt pp;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *mm = (sam3_model *)(uintptr_t)1;
    int32_t ids[8];
    int n = 5;
    uint8_t px[12] = {0};
    sam3_timings tm;
    char val[16];

    memset(&p, 0, sizeof(p));
    memset(&pp, 0, sizeof(pp));
    p.text = "cat";
    t_check(sam3_load(NULL, NULL, &mm) == SAM3_ERR_INVALID_ARG && mm == NULL, "sam3_load(NULL path) -> INVALID_ARG, *out = NULL");
    t_check(sam3_load(g_path, NULL, NULL) == SAM3_ERR_INVALID_ARG, "sam3_load(NULL out) -> INVALID_ARG");
    t_check(sam3_load("", NULL, &mm) == SAM3_ERR_IO && !mm, "sam3_load(\"\") -> IO");
    t_check(sam3_load("/", NULL, &mm) == SAM3_ERR_IO && !mm, "sam3_load(a directory) -> IO");
    lo.no_mmap = 1;
    /* a directory opens and seeks on Linux (ftell: 2^63 - 1); it must not be allocated for */
    t_check(sam3_load("/", &lo, &mm) == SAM3_ERR_IO && !mm, "sam3_load(a directory, no_mmap) -> IO");
    t_check(sam3_load("/dev/null", NULL, &mm) < 0 && !mm, "sam3_load(/dev/null) -> error");
#if defined(_WIN32) && !defined(SAM3_NO_STDIO)
    {
        /* a UTF-8 path outside any ANSI code page (U+03B1 U+6F22): CreateFileW and _wfopen */
        static const char name[] = "sam3_robust_\xce\xb1\xe6\xbc\xa2.sam3";
        wchar_t *src = sam3__win_path(g_path), *dst = sam3__win_path(name);
        const int copied = src && dst && CopyFileW(src, dst, FALSE);
        t_check(copied, "copy the model to a UTF-8 (non-ANSI) name");
        if (copied) {
            sam3_load_options lu = sam3_load_options_default();
            t_check(sam3_load(name, NULL, &mm) == SAM3_OK && mm, "sam3_load(UTF-8 path), mapped");
            sam3_free(mm);
            mm = NULL;
            lu.no_mmap = 1;
            t_check(sam3_load(name, &lu, &mm) == SAM3_OK && mm, "sam3_load(UTF-8 path, no_mmap)");
            sam3_free(mm);
            mm = NULL;
            DeleteFileW(dst);
        }
        SAM3_FREE(src);
        SAM3_FREE(dst);
        t_check(sam3_load("\xff\xfe.sam3", NULL, &mm) == SAM3_ERR_IO && !mm, "sam3_load(invalid UTF-8 path) -> IO");
    }
#endif
    t_check(sam3_load_from_memory(NULL, 0, NULL, &mm) == SAM3_ERR_INVALID_ARG && !mm, "load_from_memory(NULL, 0) -> INVALID_ARG");
    t_check(sam3_load_from_memory(g_blob, 0, NULL, &mm) == SAM3_ERR_BAD_MAGIC && !mm, "load_from_memory(blob, 0 bytes) -> BAD_MAGIC");
    t_check(sam3_load_from_memory(g_blob, g_size, NULL, NULL) == SAM3_ERR_INVALID_ARG, "load_from_memory(NULL out) -> INVALID_ARG");
    lo = sam3_load_options_default();
    lo.allocator.free = c_free;
    t_check(sam3_load_from_memory(g_blob, g_size, &lo, &mm) == SAM3_ERR_INVALID_ARG && !mm, "half-filled allocator (free only) -> INVALID_ARG");

    t_check(sam3_ctx_new(NULL, NULL, &c) == SAM3_ERR_INVALID_ARG && c == NULL, "ctx_new(NULL model) -> INVALID_ARG");
    t_check(sam3_ctx_new(m, NULL, NULL) == SAM3_ERR_INVALID_ARG, "ctx_new(NULL out) -> INVALID_ARG");
    co.n_threads = -1;
    t_check(sam3_ctx_new(m, &co, &c) == SAM3_ERR_INVALID_ARG && !c, "ctx_new(n_threads -1) -> INVALID_ARG");
    co = sam3_ctx_options_default();
    co.blas_threads = -3;
    t_check(sam3_ctx_new(m, &co, &c) == SAM3_ERR_INVALID_ARG && !c, "ctx_new(blas_threads -3) -> INVALID_ARG");
    co = sam3_ctx_options_default();
    co.allocator.alloc = c_alloc;
    t_check(sam3_ctx_new(m, &co, &c) == SAM3_ERR_INVALID_ARG && !c, "ctx_new(half-filled allocator) -> INVALID_ARG");

    t_check(sam3_set_image(NULL, px, 2, 2, 6, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image(NULL ctx) -> INVALID_ARG");
    t_check(sam3_segment(NULL, &p, NULL, &seg) == SAM3_ERR_INVALID_ARG, "segment(NULL ctx) -> INVALID_ARG");
    t_check(sam3_segment_points(NULL, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "segment_points(NULL ctx) -> INVALID_ARG");
    t_check(sam3_tokenize(NULL, "a", ids, 8, &n) == SAM3_ERR_INVALID_ARG && n == 0, "tokenize(NULL model) -> INVALID_ARG, n = 0");
    t_check(sam3_tokenize(m, NULL, ids, 8, &n) == SAM3_ERR_INVALID_ARG, "tokenize(NULL text) -> INVALID_ARG");
    t_check(sam3_tokenize(m, "a", NULL, 8, &n) == SAM3_ERR_INVALID_ARG, "tokenize(NULL ids) -> INVALID_ARG");
    t_check(sam3_tokenize(m, "a", ids, 8, NULL) == SAM3_ERR_INVALID_ARG, "tokenize(NULL n_ids) -> INVALID_ARG");
    t_check(sam3_tokenize(m, "a", ids, 1, &n) == SAM3_ERR_INVALID_ARG, "tokenize(capacity 1) -> INVALID_ARG");
    t_check(sam3_tokenize(m, "a", ids, -5, &n) == SAM3_ERR_INVALID_ARG, "tokenize(capacity -5) -> INVALID_ARG");
    t_check(sam3_tokenize(m, "a b a b a b a b", ids, 3, &n) == SAM3_TRUNCATED && n == 3, "tokenize(capacity 3) -> TRUNCATED, 3 ids");

    /* getters and frees on NULL */
    sam3_free(NULL);
    sam3_ctx_free(NULL);
    tm = sam3_ctx_timings(NULL);
    t_check(tm.preprocess == 0 && sam3_ctx_memory_used(NULL) == 0 && sam3_ctx_last_error(NULL) != NULL, "ctx getters accept NULL");
    t_check(sam3_model_image_size(NULL) == 0 && sam3_model_file_size(NULL) == 0 && sam3_model_tensor_count(NULL) == 0 &&
                sam3_model_config_count(NULL) == 0 && sam3_model_config_entry(NULL, 0, val, sizeof(val)) == NULL &&
                sam3_model_tensor_info(NULL, 0, NULL) == 0 && sam3_model_config_int(NULL, "x", NULL) == 0 &&
                sam3_model_config_float(NULL, "x", NULL) == 0 && sam3_model_config_string(NULL, "x") == NULL,
            "model getters accept NULL");
    t_check(sam3_model_config_int(m, NULL, NULL) == 0 && sam3_model_config_string(m, NULL) == NULL && sam3_model_tensor_info(m, 0, NULL) == 0 &&
                sam3_model_tensor_info(m, -1, NULL) == 0 && sam3_model_config_entry(m, -1, val, 4) == NULL &&
                sam3_model_config_entry(m, sam3_model_config_count(m), val, 4) == NULL && sam3_model_config_entry(m, 0, NULL, 0) != NULL,
            "model getters reject NULL keys and bad indices");
    t_check(strcmp(sam3_result_string((sam3_result)12345), "unknown sam3_result") == 0 && sam3_result_string(SAM3_ERR_NO_IMAGE)[0],
            "sam3_result_string of an unknown code");
    t_check(sam3_version_string() && strcmp(sam3_version_string(), SAM3_VERSION_STRING) == 0, "sam3_version_string");
}

/* ================================================================================================ */
static void test_images(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_segment_result seg;
    sam3_segment_prompt p;
    sam3_box box = {0, 0, 0, 0}; /* box_labels NULL: a positive exemplar */
    uint8_t *img;
    int rc;
    static const struct {
        int w, h;
    } sizes[] = {{1, 1}, {1, 5000}, {5000, 1}, {2, 3}, {SAM3_MAX_IMAGE_DIM, 1}, {1, SAM3_MAX_IMAGE_DIM}, {113, 111}};
    size_t i;
    if (!c) {
        t_check(0, "ctx_new");
        return;
    }
    memset(&p, 0, sizeof(p));
    p.text = "cat";

    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_ERR_NO_IMAGE && strstr(sam3_ctx_last_error(c), "set_image"), "segment before set_image -> NO_IMAGE \"%s\"",
            sam3_ctx_last_error(c));

    img = picture(8, 8, 4, 32);
    t_check(sam3_set_image(c, NULL, 8, 8, 24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "NULL"),
            "set_image(NULL pixels) -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    t_check(sam3_set_image(c, img, 0, 0, 0, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image 0x0 -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    t_check(sam3_set_image(c, img, 0, 8, 24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image 0x8 -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 0, 24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image 8x0 -> INVALID_ARG");
    t_check(sam3_set_image(c, img, -8, 8, 24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image -8x8 -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, INT_MIN, 24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "set_image 8xINT_MIN -> INVALID_ARG");
    t_check(sam3_set_image(c, img, SAM3_MAX_IMAGE_DIM + 1, 1, INT_MAX, SAM3_RGB8) == SAM3_ERR_INVALID_ARG &&
                strstr(sam3_ctx_last_error(c), "outside"),
            "set_image wider than SAM3_MAX_IMAGE_DIM -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    t_check(sam3_set_image(c, img, 1, SAM3_MAX_IMAGE_DIM + 1, 3, SAM3_RGB8) == SAM3_ERR_INVALID_ARG,
            "set_image taller than SAM3_MAX_IMAGE_DIM -> INVALID_ARG");
    t_check(sam3_set_image(c, img, INT_MAX, INT_MAX, INT_MAX, SAM3_RGBA8) == SAM3_ERR_INVALID_ARG, "set_image INT_MAX x INT_MAX -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 8, 23, SAM3_RGB8) == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "stride"),
            "stride one byte short of an RGB row -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    t_check(sam3_set_image(c, img, 8, 8, 31, SAM3_RGBA8) == SAM3_ERR_INVALID_ARG, "stride short of an RGBA row -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 8, 0, SAM3_GRAY8) == SAM3_ERR_INVALID_ARG, "stride 0 -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 8, -24, SAM3_RGB8) == SAM3_ERR_INVALID_ARG, "negative stride -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 8, 32, (sam3_pixel_format)7) == SAM3_ERR_INVALID_ARG, "unknown pixel format -> INVALID_ARG");
    t_check(sam3_set_image(c, img, 8, 8, 32, (sam3_pixel_format)-1) == SAM3_ERR_INVALID_ARG, "pixel format -1 -> INVALID_ARG");
    t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_NO_IMAGE, "segment after only failed set_image calls -> NO_IMAGE");

    /* formats and strides agree: RGBA with padding == RGB packed == the same pixels */
    {
        uint8_t *rgb = (uint8_t *)malloc(8 * 8 * 3), *gray = (uint8_t *)malloc(8 * 8), *gray3 = (uint8_t *)malloc(8 * 8 * 3);
        snap a, b;
        int x;
        for (x = 0; x < 64; x++) {
            memcpy(rgb + 3 * x, img + (size_t)(x / 8) * 32 + (size_t)(x % 8) * 4, 3);
            gray[x] = img[(size_t)(x / 8) * 32 + (size_t)(x % 8) * 4];
            memset(gray3 + 3 * x, gray[x], 3);
        }
        t_check(sam3_set_image(c, img, 8, 8, 32, SAM3_RGBA8) == SAM3_OK, "RGBA 8x8, stride 32");
        snap_take(&a, sam3_segment(c, &p, NULL, &seg), &seg);
        t_check(sam3_set_image(c, rgb, 8, 8, 24, SAM3_RGB8) == SAM3_OK, "RGB 8x8, stride 24");
        snap_take(&b, sam3_segment(c, &p, NULL, &seg), &seg);
        t_check(a.rc >= 0 && snap_eq(&a, &b), "RGBA (alpha and row padding ignored) and RGB give identical results");
        snap_free(&a);
        snap_free(&b);
        t_check(sam3_set_image(c, gray, 8, 8, 8, SAM3_GRAY8) == SAM3_OK, "GRAY 8x8");
        snap_take(&a, sam3_segment(c, &p, NULL, &seg), &seg);
        t_check(sam3_set_image(c, gray3, 8, 8, 24, SAM3_RGB8) == SAM3_OK, "RGB 8x8 grey");
        snap_take(&b, sam3_segment(c, &p, NULL, &seg), &seg);
        t_check(a.rc >= 0 && snap_eq(&a, &b), "GRAY and the same grey as RGB give identical results");
        snap_free(&a);
        snap_free(&b);
        free(rgb);
        free(gray);
        free(gray3);
    }
    /* a failed set_image drops the previous image (documented: the context has no image) */
    t_check(sam3_set_image(c, img, 0, 8, 32, SAM3_RGBA8) == SAM3_ERR_INVALID_ARG && sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_NO_IMAGE,
            "a failed set_image leaves no image: segment -> NO_IMAGE");
    free(img);

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int w = sizes[i].w, h = sizes[i].h;
        sam3_segment_options so = sam3_segment_options_default();
        img = picture(w, h, 3, w * 3);
        rc = sam3_set_image(c, img, w, h, w * 3, SAM3_RGB8);
        t_check(rc == SAM3_OK, "set_image %dx%d -> %s %s", w, h, sam3_result_string((sam3_result)rc), sam3_ctx_last_error(c));
        so.score_threshold = -1; /* every query, with its full-size mask */
        so.low_res = so.semantic = 1;
        rc = sam3_segment(c, &p, &so, &seg);
        t_check(rc == SAM3_OK, "segment on %dx%d -> %s", w, h, sam3_result_string((sam3_result)rc));
        if (rc == SAM3_OK) check_seg("text on a thin/small image", &seg, w, h);
        box.x0 = 0;
        box.y0 = 0;
        box.x1 = (float)w;
        box.y1 = (float)h;
        p.boxes = &box;
        p.n_boxes = 1;
        rc = sam3_segment(c, &p, &so, &seg);
        t_check(rc == SAM3_OK, "segment with a whole-image box on %dx%d -> %s", w, h, sam3_result_string((sam3_result)rc));
        if (rc == SAM3_OK) check_seg("box on a thin/small image", &seg, w, h);
        p.boxes = NULL;
        p.n_boxes = 0;
        if (g_has_points) {
            sam3_point pt;
            sam3_points_prompt pp;
            sam3_points_result pr;
            memset(&pp, 0, sizeof(pp));
            pt.x = (float)w / 2;
            pt.y = (float)h / 2;
            pt.label = 1;
            pp.points = &pt;
            pp.n_points = 1;
            rc = sam3_segment_points(c, &pp, NULL, &pr);
            t_check(rc == SAM3_OK && pr.width == w && pr.height == h, "segment_points on %dx%d -> %s", w, h, sam3_result_string((sam3_result)rc));
        }
        free(img);
    }
    sam3_ctx_free(c);
    t_check(k.live == 0, "images: every allocation freed (%ld live)", k.live);
}

/* ================================================================================================ */
static void test_prompts(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_segment_result seg;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_prompt p;
    sam3_box boxes[SAM3_MAX_BOXES + 1];
    int labels[SAM3_MAX_BOXES + 1];
    uint8_t *img = picture(40, 30, 3, 120);
    int rc, i;
    const float nan = (float)NAN, inf = (float)INFINITY;
    if (!c) {
        t_check(0, "ctx_new");
        return;
    }
    t_check(sam3_set_image(c, img, 40, 30, 120, SAM3_RGB8) == SAM3_OK, "set_image 40x30");
    memset(&p, 0, sizeof(p));
    memset(boxes, 0, sizeof(boxes));
    for (i = 0; i <= SAM3_MAX_BOXES; i++) {
        boxes[i].x0 = (float)(i % 7);
        boxes[i].y0 = (float)(i % 5);
        boxes[i].x1 = (float)(i % 7 + 10 + i % 3);
        boxes[i].y1 = (float)(i % 5 + 8);
        labels[i] = i % 3 != 0;
    }

    t_check(sam3_segment(c, NULL, NULL, &seg) == SAM3_ERR_INVALID_ARG, "segment(NULL prompt) -> INVALID_ARG");
    p.text = "cat";
    t_check(sam3_segment(c, &p, NULL, NULL) == SAM3_ERR_INVALID_ARG, "segment(NULL out) -> INVALID_ARG");
    p.text = NULL;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "empty"), "no text, no boxes -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    p.text = "";
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "empty"), "\"\" and no boxes -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    p.text = "   ";
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_OK, "whitespace-only text -> %s (BOS, EOS only)", sam3_result_string((sam3_result)rc));
    p.text = "";
    p.boxes = boxes;
    p.box_labels = labels;
    p.n_boxes = -1;
    t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_INVALID_ARG, "n_boxes -1 -> INVALID_ARG");
    p.n_boxes = SAM3_MAX_BOXES + 1;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "SAM3_MAX_BOXES"), "SAM3_MAX_BOXES + 1 boxes -> INVALID_ARG \"%s\"",
            sam3_ctx_last_error(c));
    p.n_boxes = INT_MAX;
    t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_INVALID_ARG, "n_boxes INT_MAX -> INVALID_ARG");
    p.n_boxes = SAM3_MAX_BOXES;
    so.score_threshold = -1;
    rc = sam3_segment(c, &p, &so, &seg);
    t_check(rc == SAM3_OK, "exactly SAM3_MAX_BOXES boxes -> %s", sam3_result_string((sam3_result)rc));
    if (rc == SAM3_OK) check_seg("64 boxes", &seg, 40, 30);
    p.boxes = NULL;
    p.n_boxes = 2;
    t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_INVALID_ARG, "n_boxes 2 with boxes NULL -> INVALID_ARG");
    p.boxes = boxes;
    p.n_boxes = 0;
    p.text = "cat";
    t_check(sam3_segment(c, &p, NULL, &seg) >= 0, "text with boxes != NULL but n_boxes 0 -> ok (boxes ignored)");

    /* non-finite coordinates: a clear error; labels other than 0/1 too */
    {
        static const int which[4] = {0, 1, 2, 3};
        const float bad[3] = {nan, inf, -inf};
        int j, b;
        for (j = 0; j < 4; j++)
            for (b = 0; b < 3; b++) {
                sam3_box bx = {1, 2, 20, 25};
                float *f = which[j] == 0 ? &bx.x0 : which[j] == 1 ? &bx.y0 : which[j] == 2 ? &bx.x1 : &bx.y1;
                *f = bad[b];
                p.boxes = &bx;
                p.n_boxes = 1;
                rc = sam3_segment(c, &p, NULL, &seg);
                t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "NaN or infinite"), "box coordinate %d = %g -> INVALID_ARG", j,
                        (double)bad[b]);
            }
        for (j = -2; j <= 3; j++) {
            sam3_box bx = {1, 2, 20, 25};
            p.boxes = &bx;
            p.box_labels = &j;
            p.n_boxes = 1;
            rc = sam3_segment(c, &p, NULL, &seg);
            t_check(j == 0 || j == 1 ? rc >= 0 : rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "label"), "box label %d -> %s", j,
                    sam3_result_string((sam3_result)rc));
        }
        /* the bad one last of several: nothing is half-done */
        labels[5] = 7;
        p.boxes = boxes;
        p.box_labels = labels;
        p.n_boxes = 6;
        t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_ERR_INVALID_ARG, "sixth of six boxes with label 7 -> INVALID_ARG");
        labels[5] = 1;
    }
    /* finite but odd boxes: accepted as given (not clamped, as the reference), no crash, a
       well-formed result. The scores of absurd boxes are meaningless but must stay in [0, 1]. */
    {
        static const float odd[][4] = {
            {-10, -10, -1, -1},       /* entirely outside, up-left */
            {50, 40, 90, 80},         /* entirely outside, down-right (image is 40x30) */
            {5, 5, 5, 5},             /* zero area */
            {10, 3, 10, 20},          /* zero width */
            {30, 20, 5, 2},           /* inverted */
            {-1e6f, -1e6f, 1e6f, 1e6f},
            {0, 0, 1e30f, 1e30f},     /* huge: sampling grids are clamped */
            {-FLT_MAX, -FLT_MAX, FLT_MAX, FLT_MAX}, /* overflows to inf once normalised */
            {FLT_MAX, 0, FLT_MAX, 10},
            {1e-30f, 1e-30f, 2e-30f, 2e-30f},
            {-0.0f, -0.0f, 40, 30},
        };
        size_t j;
        for (j = 0; j < sizeof(odd) / sizeof(odd[0]); j++) {
            sam3_box bx[2];
            static const int bl[2] = {1, 0};
            bx[0].x0 = odd[j][0];
            bx[0].y0 = odd[j][1];
            bx[0].x1 = odd[j][2];
            bx[0].y1 = odd[j][3];
            bx[1] = bx[0];
            p.text = j % 2 ? "cat" : NULL;
            p.boxes = bx;
            p.box_labels = bl;
            p.n_boxes = 2;
            so = sam3_segment_options_default();
            so.score_threshold = -1;
            so.low_res = so.semantic = 1;
            rc = sam3_segment(c, &p, &so, &seg);
            t_check(rc == SAM3_OK, "box [%g %g %g %g] -> %s %s", (double)odd[j][0], (double)odd[j][1], (double)odd[j][2], (double)odd[j][3],
                    sam3_result_string((sam3_result)rc), sam3_ctx_last_error(c));
            if (rc == SAM3_OK) check_seg("odd box", &seg, 40, 30);
        }
    }
    /* options */
    p.text = "cat";
    p.boxes = NULL;
    p.n_boxes = 0;
    so = sam3_segment_options_default();
    so.score_threshold = nan;
    t_check(sam3_segment(c, &p, &so, &seg) == SAM3_ERR_INVALID_ARG, "score_threshold NaN -> INVALID_ARG");
    so = sam3_segment_options_default();
    so.mask_threshold = inf;
    t_check(sam3_segment(c, &p, &so, &seg) == SAM3_ERR_INVALID_ARG, "mask_threshold inf -> INVALID_ARG");
    so = sam3_segment_options_default();
    so.score_threshold = 2;
    rc = sam3_segment(c, &p, &so, &seg);
    t_check(rc == SAM3_OK && seg.n_instances == 0, "score_threshold 2 -> ok, no instance");
    so.score_threshold = -1;
    so.no_masks = 1;
    rc = sam3_segment(c, &p, &so, &seg);
    t_check(rc == SAM3_OK && seg.n_instances == seg.n_queries && (seg.n_instances == 0 || seg.instances[0].mask == NULL), "no_masks: every query, masks NULL");

    /* text: invalid UTF-8, NUL-free binary, specials, long */
    {
        static const char *texts[] = {"\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80", "\xc0\xaf overlong",
                                      "a\x01\x02\x7f b", "<|endoftext|><|startoftext|>", "<|startoftext|", "\xef\xbb\xbf BOM",
                                      "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x90\x88 emoji", "A\xcc\x81\xcc\x81\xcc\x81\xcc\x81"};
        size_t j;
        so = sam3_segment_options_default();
        for (j = 0; j < sizeof(texts) / sizeof(texts[0]); j++) {
            p.text = texts[j];
            rc = sam3_segment(c, &p, &so, &seg);
            t_check(rc == SAM3_OK || rc == SAM3_TRUNCATED, "odd text %lu -> %s", (unsigned long)j, sam3_result_string((sam3_result)rc));
        }
    }
    {
        /* 33 words: more ids than the 32 the text encoder holds -> truncated, still valid */
        p.text = "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g";
        rc = sam3_segment(c, &p, &so, &seg);
        t_check(rc == SAM3_TRUNCATED && seg.text_truncated && seg.n_text_tokens == 32, "33-word prompt -> TRUNCATED (%d ids)", seg.n_text_tokens);
    }
    free(img);
    sam3_ctx_free(c);
    t_check(k.live == 0, "prompts: every allocation freed (%ld live)", k.live);
}

/* Prompts of 1 MB and of SAM3_MAX_PROMPT_BYTES(+1) bytes. */
static void test_big_prompts(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_segment_result seg;
    sam3_segment_prompt p;
    uint8_t *img = picture(16, 16, 3, 48);
    size_t n, i;
    char *big;
    int rc;
    int32_t ids[64];
    int nids = 0;
    if (!c) return;
    t_check(sam3_set_image(c, img, 16, 16, 48, SAM3_RGB8) == SAM3_OK, "set_image 16x16");
    memset(&p, 0, sizeof(p));
    n = SAM3_MAX_PROMPT_BYTES + 1;
    big = (char *)malloc(n + 1);
    for (i = 0; i < n; i++) big[i] = "cat dog "[i % 8];
    big[(size_t)1 << 20] = 0;
    p.text = big;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_TRUNCATED && seg.n_text_tokens == 32, "1 MB text prompt -> TRUNCATED, 32 ids (%s)", sam3_result_string((sam3_result)rc));
    big[(size_t)1 << 20] = 'x';
    big[SAM3_MAX_PROMPT_BYTES] = 0;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_TRUNCATED, "SAM3_MAX_PROMPT_BYTES text prompt -> TRUNCATED (%s)", sam3_result_string((sam3_result)rc));
    big[SAM3_MAX_PROMPT_BYTES] = 'x';
    big[n] = 0;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "SAM3_MAX_PROMPT_BYTES"),
            "SAM3_MAX_PROMPT_BYTES + 1 text prompt -> INVALID_ARG \"%s\"", sam3_ctx_last_error(c));
    t_check(sam3_tokenize(m, big, ids, 64, &nids) == SAM3_ERR_INVALID_ARG, "tokenize of SAM3_MAX_PROMPT_BYTES + 1 -> INVALID_ARG");
    /* one 1 MB "word" of invalid UTF-8: the tokenizer's worst case (documented: ~100 MB scratch) */
    memset(big, 0xff, (size_t)1 << 20);
    big[(size_t)1 << 20] = 0;
    rc = sam3_segment(c, &p, NULL, &seg);
    t_check(rc == SAM3_TRUNCATED, "1 MB of 0xff bytes -> TRUNCATED (%s)", sam3_result_string((sam3_result)rc));
    p.text = "cat";
    t_check(sam3_segment(c, &p, NULL, &seg) == SAM3_OK, "the context still works after the big prompts");
    free(big);
    free(img);
    sam3_ctx_free(c);
    t_check(k.live == 0, "big prompts: every allocation freed (%ld live)", k.live);
}

/* sam3_segment_everything: bad arguments and options refused before anything runs, then the
   result's invariants on a tiny grid with every filter off (each mask's area and box from its
   pixels, scores in range) and on a 1x1 image; every allocation freed. */
static void test_everything(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_everything_options o = sam3_everything_options_default(), b;
    sam3_everything_result r;
    uint8_t *img = picture(30, 20, 3, 90);
    const float bad_f[] = {NAN, INFINITY};
    int rc, i, j;
    if (!c) return;
    t_check(sam3_segment_everything(NULL, &o, &r) == SAM3_ERR_INVALID_ARG, "everything(NULL ctx) -> INVALID_ARG");
    rc = sam3_segment_everything(c, &o, &r);
    t_check(rc == SAM3_ERR_NO_IMAGE, "everything before set_image -> NO_IMAGE (%s)", sam3_result_string((sam3_result)rc));
    t_check(sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK, "set_image 30x20");
    t_check(sam3_segment_everything(c, &o, NULL) == SAM3_ERR_INVALID_ARG, "everything(NULL out) -> INVALID_ARG");
    for (i = 0; i < 4; i++) {
        b = o;
        b.points_per_side = i == 0 ? -1 : i == 1 ? 513 : i == 2 ? INT_MIN : INT_MAX;
        t_check(sam3_segment_everything(c, &b, &r) == SAM3_ERR_INVALID_ARG && r.n_masks == 0, "points_per_side %d -> INVALID_ARG",
                b.points_per_side);
    }
    for (i = 0; i < 2; i++)
        for (j = 0; j < 5; j++) {
            float *f;
            b = o;
            f = j == 0 ? &b.pred_iou_thresh : j == 1 ? &b.stability_score_thresh : j == 2 ? &b.stability_score_offset
                : j == 3 ? &b.box_nms_thresh : &b.mask_threshold;
            *f = bad_f[i];
            t_check(sam3_segment_everything(c, &b, &r) == SAM3_ERR_INVALID_ARG, "option %d = %g -> INVALID_ARG", j, (double)*f);
        }
    b = o;
    b.stability_score_offset = -1;
    t_check(sam3_segment_everything(c, &b, &r) == SAM3_ERR_INVALID_ARG, "stability_score_offset -1 -> INVALID_ARG");
    b = o;
    b.box_nms_thresh = -0.5f;
    t_check(sam3_segment_everything(c, &b, &r) == SAM3_ERR_INVALID_ARG, "box_nms_thresh -0.5 -> INVALID_ARG");
    o.points_per_side = 4;
    o.pred_iou_thresh = o.stability_score_thresh = -1;
    o.box_nms_thresh = 1;
    rc = sam3_segment_everything(c, &o, &r);
    t_check(rc == SAM3_OK && r.n_points == 16 && r.n_candidates == 48 && r.n_filtered == 48 && r.n_masks == 48 && r.width == 30 &&
                r.height == 20, "everything, 4x4 grid, no filters: %d of %d masks (%s)", r.n_masks, r.n_candidates, sam3_ctx_last_error(c));
    for (i = 0; rc == SAM3_OK && i < r.n_masks; i++) {
        const sam3_everything_mask *e = &r.masks[i];
        int64_t area = 0;
        int x0 = 30, y0 = 20, x1 = 0, y1 = 0, x, y;
        for (y = 0; y < 20; y++)
            for (x = 0; x < 30; x++)
                if (e->mask[y * 30 + x]) {
                    area++;
                    x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
                }
        if (!area) x0 = y0 = 0;
        t_check(area == e->area && e->box.x0 == x0 && e->box.y0 == y0 && e->box.x1 == x1 && e->box.y1 == y1,
                "everything mask %d: area %lld / box %g %g %g %g from its pixels (%lld, %d %d %d %d)", i, (long long)e->area, e->box.x0,
                e->box.y0, e->box.x1, e->box.y1, (long long)area, x0, y0, x1, y1);
        t_check(e->stability >= 0 && e->stability <= 1 && e->iou == e->iou && e->click >= 0 && e->click < 16 && e->token >= 0 && e->token < 3 &&
                    (i == 0 || e->iou <= r.masks[i - 1].iou),
                "everything mask %d: stability %g, iou %g, click %d, token %d, in order", i, e->stability, e->iou, e->click, e->token);
    }
    t_check(sam3_set_image(c, img, 1, 1, 3, SAM3_RGB8) == SAM3_OK, "set_image 1x1");
    rc = sam3_segment_everything(c, &o, &r);
    t_check(rc == SAM3_OK && r.n_masks == 48 && r.width == 1, "everything on 1x1 -> %s", sam3_result_string((sam3_result)rc));
    sam3_ctx_free(c);
    t_check(k.live == 0, "everything: every allocation freed (%ld live)", k.live);
    /* every allocation of a fresh context's image and everything call failing in turn: the call
       reports OUT_OF_MEMORY (or absorbs it), and nothing leaks */
    for (i = 1, j = 0; i <= k.calls; i++) {
        counter f = {0, 0, 0, 0, 0};
        f.fail_at = i;
        if (!(c = new_ctx(m, &f))) continue;
        if (sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK) {
            rc = sam3_segment_everything(c, &o, &r);
            t_check(rc == SAM3_OK || rc == SAM3_ERR_OUT_OF_MEMORY, "everything with allocation %d failing -> %s", i,
                    sam3_result_string((sam3_result)rc));
            j += rc == SAM3_ERR_OUT_OF_MEMORY;
        }
        sam3_ctx_free(c);
        t_check(f.live == 0, "everything with allocation %d failing: %ld live", i, f.live);
    }
    t_check(j > 0, "everything: %d injected failures reported as OUT_OF_MEMORY", j);
    free(img);
}

/* sam3_segment_everything's crop layers and small-region removal: hostile values refused with a
   message before anything runs (negative or huge layer counts, overlaps outside [0, 1), a layer
   whose grid or crops would be empty, missing or short pixels); a run with one crop layer and
   small-region removal keeps the context's image and its invariants; every allocation of it
   failing in turn is reported or absorbed, and nothing leaks (the crops' second context included). */
static void test_everything_crops(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_everything_options o = sam3_everything_options_default(), b;
    sam3_everything_result r, r0;
    uint8_t *img = picture(30, 20, 3, 90);
    int rc, i, j, n_oom = 0;
    if (!c) return;
    o.points_per_side = 3;
    o.pred_iou_thresh = o.stability_score_thresh = -1;
    o.box_nms_thresh = 1;
    o.crop_layers = 1;
    o.min_region_area = 4;
    o.pixels = img, o.stride = 90, o.format = SAM3_RGB8;
    rc = sam3_segment_everything(c, &o, &r);
    t_check(rc == SAM3_ERR_NO_IMAGE, "everything crops before set_image -> NO_IMAGE (%s)", sam3_result_string((sam3_result)rc));
    t_check(sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK, "set_image 30x20");
    for (i = 0; i < 16; i++) {
        b = o;
        switch (i) {
        case 0: b.crop_layers = -1; break;
        case 1: b.crop_layers = SAM3_EVERYTHING_MAX_CROP_LAYERS + 1; break;
        case 2: b.crop_layers = INT_MAX; break;
        case 3: b.crop_overlap_ratio = -0.1; break;
        case 4: b.crop_overlap_ratio = 1.0; break;
        case 5: b.crop_overlap_ratio = NAN; break;
        case 6: b.crop_points_downscale = -2; break;
        case 7: b.crop_points_downscale = 4; break;   /* layer 1's grid: int(3 / 4) = 0 points */
        case 8: b.crop_nms_thresh = -1; break;
        case 9: b.crop_nms_thresh = NAN; break;
        case 10: b.min_region_area = -1; break;
        case 11: b.pixels = NULL; break;
        case 12: b.stride = 89; break;
        case 13: b.format = (sam3_pixel_format)7; break;
        case 14: b.crop_layers = SAM3_EVERYTHING_MAX_CROP_LAYERS; break; /* 64 x 64 crops of a 30 x 20 image: empty ones */
        default: b.crop_layers = INT_MIN; break;
        }
        rc = sam3_segment_everything(c, &b, &r);
        t_check(rc == SAM3_ERR_INVALID_ARG && r.n_masks == 0 && sam3_ctx_last_error(c)[0], "everything crops, hostile case %d -> INVALID_ARG (%s: %s)", i,
                sam3_result_string((sam3_result)rc), sam3_ctx_last_error(c));
    }
    b = o;
    b.crop_layers = 0;
    b.min_region_area = 0;
    t_check(sam3_segment_everything(c, &b, &r0) == SAM3_OK && r0.n_crops == 1, "everything, no crops: %s", sam3_ctx_last_error(c));
    j = r0.n_masks;
    rc = sam3_segment_everything(c, &o, &r);
    t_check(rc == SAM3_OK && r.n_crops == 5 && r.n_points == 45 && r.n_candidates == 135 && r.n_masks > 0 && r.width == 30 && r.height == 20,
            "everything, one crop layer and small regions: %d masks, %d crops (%s)", r.n_masks, r.n_crops, sam3_ctx_last_error(c));
    for (i = 0; rc == SAM3_OK && i < r.n_masks; i++) {
        const sam3_everything_mask *e = &r.masks[i];
        int64_t area = 0;
        int x, y;
        for (y = 0; y < 20; y++)
            for (x = 0; x < 30; x++) area += e->mask[y * 30 + x] != 0;
        t_check(area == e->area && e->crop >= 0 && e->crop < 5 && e->click >= 0 && e->click < 9 && e->point.x >= 0 && e->point.x < 30,
                "everything crops mask %d: area %lld (pixels %lld), crop %d, click %d", i, (long long)e->area, (long long)area, e->crop, e->click);
    }
    t_check(sam3_segment_everything(c, &b, &r0) == SAM3_OK && r0.n_masks == j, "everything after crops: the same image (%d masks, %d)", r0.n_masks, j);
    sam3_ctx_free(c);
    t_check(k.live == 0, "everything crops: every allocation freed (%ld live)", k.live);
    for (i = 1; i <= k.calls; i += (int)g_step_alloc) { /* -q: every 25th */
        counter f = {0, 0, 0, 0, 0};
        f.fail_at = i;
        if (!(c = new_ctx(m, &f))) continue;
        if (sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK) {
            rc = sam3_segment_everything(c, &o, &r);
            t_check(rc == SAM3_OK || rc == SAM3_ERR_OUT_OF_MEMORY, "everything crops with allocation %d failing -> %s", i,
                    sam3_result_string((sam3_result)rc));
            n_oom += rc == SAM3_ERR_OUT_OF_MEMORY;
        }
        sam3_ctx_free(c);
        t_check(f.live == 0, "everything crops with allocation %d failing: %ld live", i, f.live);
        if (f.calls < i) break; /* the run made fewer allocations: every one has failed once */
    }
    t_check(n_oom > 0, "everything crops: %d injected failures reported as OUT_OF_MEMORY", n_oom);
    free(img);
}

/* ================================================================================================ */
static void test_points(const sam3_model *m) {
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx *c = new_ctx(m, &k);
    sam3_points_prompt pp;
    sam3_points_result pr;
    sam3_point pts[SAM3_MAX_POINTS + 1];
    uint8_t *img = picture(30, 20, 3, 90);
    sam3_box box = {2, 3, 20, 15};
    int rc, i;
    if (!c) return;
    memset(&pp, 0, sizeof(pp));
    for (i = 0; i <= SAM3_MAX_POINTS; i++) {
        pts[i].x = (float)(i % 30);
        pts[i].y = (float)(i % 20);
        pts[i].label = i & 1;
    }
    pp.points = pts;
    pp.n_points = 1;
    rc = sam3_segment_points(c, &pp, NULL, &pr);
    t_check(rc == SAM3_ERR_NO_IMAGE, "segment_points before set_image -> NO_IMAGE (%s)", sam3_result_string((sam3_result)rc));
    t_check(sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK, "set_image 30x20");
    t_check(sam3_segment_points(c, NULL, NULL, &pr) == SAM3_ERR_INVALID_ARG, "segment_points(NULL prompt) -> INVALID_ARG");
    t_check(sam3_segment_points(c, &pp, NULL, NULL) == SAM3_ERR_INVALID_ARG, "segment_points(NULL out) -> INVALID_ARG");
    pp.n_points = 0;
    rc = sam3_segment_points(c, &pp, NULL, &pr);
    /* the reference accepts an empty prompt (a padding point); an error is fine too */
    t_check(rc == SAM3_OK || rc == SAM3_ERR_INVALID_ARG, "no clicks, box or mask -> %s", sam3_result_string((sam3_result)rc));
    pp.n_points = -1;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "n_points -1 -> INVALID_ARG");
    pp.n_points = SAM3_MAX_POINTS + 1;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "SAM3_MAX_POINTS + 1 points -> INVALID_ARG");
    pp.n_points = SAM3_MAX_POINTS;
    rc = sam3_segment_points(c, &pp, NULL, &pr);
    t_check(rc == SAM3_OK, "SAM3_MAX_POINTS points -> %s", sam3_result_string((sam3_result)rc));
    pp.points = NULL;
    pp.n_points = 3;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "n_points 3, points NULL -> INVALID_ARG");
    pp.points = pts;
    pp.n_points = 2;
    pts[1].x = (float)NAN;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "NaN point -> INVALID_ARG");
    pts[1].x = 1;
    pts[1].y = -(float)INFINITY;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "-inf point -> INVALID_ARG");
    pts[1].y = 1;
    pts[1].label = -1;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "point label -1 -> INVALID_ARG");
    pts[1].label = 2;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "point label 2 -> INVALID_ARG");
    pts[1].label = 0;
    pp.box = &box;
    box.x1 = (float)NAN;
    t_check(sam3_segment_points(c, &pp, NULL, &pr) == SAM3_ERR_INVALID_ARG, "NaN box -> INVALID_ARG");
    {
        static const float odd[][4] = {{-100, -100, -50, -50}, {5, 5, 5, 5}, {20, 15, 2, 3}, {0, 0, 1e30f, 1e30f}, {-FLT_MAX, -FLT_MAX, FLT_MAX, FLT_MAX}};
        static const float opts[][2] = {{-1e30f, 1e30f}, {FLT_MAX, -FLT_MAX}, {1e9f, 1e9f}};
        size_t j;
        for (j = 0; j < sizeof(odd) / sizeof(odd[0]); j++) {
            box.x0 = odd[j][0], box.y0 = odd[j][1], box.x1 = odd[j][2], box.y1 = odd[j][3];
            rc = sam3_segment_points(c, &pp, NULL, &pr);
            t_check(rc == SAM3_OK, "odd box [%g %g %g %g] with clicks -> %s", (double)box.x0, (double)box.y0, (double)box.x1, (double)box.y1,
                    sam3_result_string((sam3_result)rc));
        }
        pp.box = NULL;
        for (j = 0; j < sizeof(opts) / sizeof(opts[0]); j++) {
            pts[0].x = opts[j][0];
            pts[0].y = opts[j][1];
            rc = sam3_segment_points(c, &pp, NULL, &pr);
            t_check(rc == SAM3_OK, "click at (%g, %g) -> %s", (double)pts[0].x, (double)pts[0].y, sam3_result_string((sam3_result)rc));
        }
        pts[0].x = pts[0].y = 3;
    }
    /* mask refinement: only the result's own low-res size is accepted */
    {
        sam3_points_options po;
        float *mask;
        size_t lp;
        memset(&po, 0, sizeof(po));
        pp.box = NULL;
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_OK, "two clicks -> ok");
        lp = (size_t)pr.low_res_width * pr.low_res_height;
        mask = (float *)malloc(lp * sizeof(float));
        memcpy(mask, pr.low_res_logits, lp * sizeof(float));
        pp.mask_logits = mask;
        pp.mask_width = pr.low_res_width;
        pp.mask_height = pr.low_res_height;
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_OK, "refine with the previous low-res mask -> ok");
        {
            /* SAM 3 resizes a mask of another size (SAM 1 takes only its own): any size in
               1..SAM3_MAX_IMAGE_DIM works or is refused cleanly; 0 and larger are refused */
            static const int sizes[][2] = {{1, 1}, {1, 3000}, {3000, 1}, {7, 5}};
            const int lw = pr.low_res_width, lh = pr.low_res_height;
            float *any = (float *)calloc(3000, sizeof(float));
            size_t j;
            pp.mask_logits = any;
            for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
                pp.mask_width = sizes[j][0];
                pp.mask_height = sizes[j][1];
                rc = sam3_segment_points(c, &pp, &po, &pr);
                t_check(rc == SAM3_OK || rc == SAM3_ERR_INVALID_ARG, "mask prompt of %dx%d -> %s", sizes[j][0], sizes[j][1],
                        sam3_result_string((sam3_result)rc));
            }
            pp.mask_width = lw;
            pp.mask_height = 0;
            t_check(sam3_segment_points(c, &pp, &po, &pr) == SAM3_ERR_INVALID_ARG, "mask height 0 -> INVALID_ARG");
            pp.mask_height = -lh;
            t_check(sam3_segment_points(c, &pp, &po, &pr) == SAM3_ERR_INVALID_ARG, "negative mask height -> INVALID_ARG");
            pp.mask_height = SAM3_MAX_IMAGE_DIM + 1;
            pp.mask_width = 1;
            t_check(sam3_segment_points(c, &pp, &po, &pr) == SAM3_ERR_INVALID_ARG, "mask taller than SAM3_MAX_IMAGE_DIM -> INVALID_ARG");
            pp.mask_width = lw;
            pp.mask_height = lh;
            pp.mask_logits = mask;
            free(any);
        }
        mask[0] = (float)NAN;
        mask[1] = (float)INFINITY;
        mask[2] = -(float)INFINITY;
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_ERR_INVALID_ARG, "mask logits with NaN/inf -> %s, expected INVALID_ARG", sam3_result_string((sam3_result)rc));
        mask[0] = mask[1] = mask[2] = 0.0f;
        mask[lp - 1] = (float)INFINITY; /* the last one too: every logit is read */
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_ERR_INVALID_ARG, "an infinite last mask logit -> %s, expected INVALID_ARG", sam3_result_string((sam3_result)rc));
        mask[lp - 1] = 0.0f;
        pp.n_points = 0;
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_OK || rc == SAM3_ERR_INVALID_ARG, "mask only -> %s", sam3_result_string((sam3_result)rc));
        pp.mask_logits = NULL;
        pp.n_points = 2;
        po.mask_threshold = (float)NAN;
        t_check(sam3_segment_points(c, &pp, &po, &pr) == SAM3_ERR_INVALID_ARG, "points mask_threshold NaN -> INVALID_ARG");
        {
            /* a probability, as in sam3_segment: 0 is the default 0.5; a higher one keeps a subset of
               the pixels of a lower one; a negative one keeps every pixel, 1 none */
            static const float thr[6] = {0, 0.5f, 0.1f, 0.9f, -1, 1};
            uint8_t *mk[6];
            size_t plane = 0, j, area[6];
            int ok = 1;
            for (i = 0; i < 6; i++) {
                mk[i] = NULL;
                area[i] = 0;
                po.mask_threshold = thr[i];
                rc = sam3_segment_points(c, &pp, &po, &pr);
                if (rc != SAM3_OK || !pr.masks) {
                    ok = 0;
                    continue;
                }
                plane = (size_t)pr.n_masks * pr.width * pr.height;
                mk[i] = (uint8_t *)malloc(plane);
                if (!mk[i]) {
                    ok = 0;
                    continue;
                }
                memcpy(mk[i], pr.masks, plane);
                for (j = 0; j < plane; j++) area[i] += mk[i][j];
            }
            for (j = 0; ok && j < plane; j++)
                ok = mk[0][j] == mk[1][j] && mk[1][j] <= mk[2][j] && mk[3][j] <= mk[1][j] && mk[4][j] == 1 && mk[5][j] == 0;
            t_check(ok, "points mask_threshold 0/0.5/0.1/0.9/-1/1: pixels %zu %zu %zu %zu %zu %zu of %zu, nested", area[0], area[1], area[2],
                    area[3], area[4], area[5], plane);
            for (i = 0; i < 6; i++) free(mk[i]);
        }
        po.mask_threshold = 0;
        po.single_mask = 1;
        po.no_masks = 1;
        rc = sam3_segment_points(c, &pp, &po, &pr);
        t_check(rc == SAM3_OK && pr.n_masks == 1 && pr.masks == NULL, "single_mask + no_masks -> one mask, no full-size planes");
        free(mask);
    }
    free(img);
    sam3_ctx_free(c);
    t_check(k.live == 0, "points: every allocation freed (%ld live)", k.live);
}

/* ================================================================================================
   The reference sequence for the abort and allocation sweeps: set_image, three segment calls
   (text; boxes with low-res and semantic outputs; text + box), two segment_points calls, and the
   first two segment prompts again in one sam3_segment_many call. */
typedef struct seq_out {
    snap s[5];
    psnap p[2];
} seq_out;
static void seq_free(seq_out *o) {
    int i;
    for (i = 0; i < 5; i++) snap_free(&o->s[i]);
    for (i = 0; i < 2; i++) psnap_free(&o->p[i]);
}
static int seq_eq(const seq_out *a, const seq_out *b) {
    int i;
    for (i = 0; i < 5; i++)
        if (!snap_eq(&a->s[i], &b->s[i])) return 0;
    for (i = 0; i < 2; i++)
        if (!psnap_eq(&a->p[i], &b->p[i])) return 0;
    return 1;
}

static uint8_t *g_img;
#define SEQ_W 37
#define SEQ_H 29
#define SEQ_STEPS 7

/* Runs step `i` of the sequence on c; stores its output in o. */
static int seq_step(sam3_ctx *c, int i, seq_out *o) {
    static const sam3_box boxes[3] = {{3, 4, 20, 25}, {10, 2, 30, 12}, {0, 0, SEQ_W, SEQ_H}};
    static const int box_labels[3] = {1, 0, 1};
    static const sam3_point pts[2] = {{5, 6, 1}, {25, 20, 0}};
    static const sam3_box box = {4, 4, 30, 25};
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_result seg, many[2];
    sam3_segment_prompt p, ps[2];
    sam3_points_prompt pp;
    sam3_points_result pr;
    int rc, j;
    memset(&p, 0, sizeof(p));
    memset(&pp, 0, sizeof(pp));
    so.score_threshold = -1;
    switch (i) {
    case 0: return sam3_set_image(c, g_img, SEQ_W, SEQ_H, SEQ_W * 3, SAM3_RGB8);
    case 1:
        p.text = "red cat";
        rc = sam3_segment(c, &p, &so, &seg);
        snap_free(&o->s[0]);
        snap_take(&o->s[0], rc, &seg);
        return rc;
    case 2:
        p.boxes = boxes;
        p.box_labels = box_labels;
        p.n_boxes = 2;
        so.low_res = so.semantic = 1;
        rc = sam3_segment(c, &p, &so, &seg);
        snap_free(&o->s[1]);
        snap_take(&o->s[1], rc, &seg);
        return rc;
    case 3:
        p.text = "a blue dog";
        p.boxes = boxes + 2;
        p.box_labels = box_labels + 2;
        p.n_boxes = 1;
        rc = sam3_segment(c, &p, &so, &seg);
        snap_free(&o->s[2]);
        snap_take(&o->s[2], rc, &seg);
        return rc;
    case 4:
    case 5:
        if (!g_has_points) return SAM3_OK;
        pp.points = pts;
        pp.n_points = i == 4 ? 1 : 2;
        pp.box = i == 5 ? &box : NULL;
        rc = sam3_segment_points(c, &pp, NULL, &pr);
        psnap_free(&o->p[i - 4]);
        psnap_take(&o->p[i - 4], rc, &pr);
        return rc;
    case 6:
        memset(ps, 0, sizeof(ps));
        ps[0].text = "red cat";
        ps[1].boxes = boxes, ps[1].box_labels = box_labels, ps[1].n_boxes = 2;
        so.low_res = 1;
        rc = sam3_segment_many(c, ps, 2, &so, many);
        for (j = 0; j < 2; j++) {
            snap_free(&o->s[3 + j]);
            snap_take(&o->s[3 + j], rc, &many[j]);
        }
        return rc;
    }
    return SAM3_ERR_INVALID_ARG;
}

/* ---- abort: the callback fires at its n-th poll, for every n ---- */
typedef struct abort_state {
    long polls, fire_at;
} abort_state;
static int abort_cb(void *user) {
    abort_state *s = (abort_state *)user;
    s->polls++;
    return s->fire_at && s->polls == s->fire_at;
}

/* sam3_segment_everything on a context of 3 threads, whose clicks run on workers: the same
   masks, scores and order as on one thread; an abort at each of the call's polls returns ABORTED
   and leaves the context usable; each allocation of the call failing in turn gives OUT_OF_MEMORY
   (or is absorbed), and nothing leaks. */
static int evr_same(const sam3_everything_result *a, const sam3_everything_mask *b, const uint8_t *bm, int n) {
    int i;
    if (a->n_masks != n) return 0;
    for (i = 0; i < n; i++) {
        const sam3_everything_mask *x = &a->masks[i], *y = &b[i];
        if (x->iou != y->iou || x->stability != y->stability || x->area != y->area || x->click != y->click || x->token != y->token ||
            memcmp(&x->box, &y->box, sizeof(x->box)) || memcmp(x->mask, bm + (size_t)i * 600, 600))
            return 0;
    }
    return 1;
}
static void test_everything_workers(const sam3_model *m) {
    sam3_everything_options o = sam3_everything_options_default();
    sam3_everything_result r;
    sam3_ctx_options co = sam3_ctx_options_default();
    abort_state st = {0, 0};
    counter k = {0, 0, 0, 0, 0};
    uint8_t *img = picture(30, 20, 3, 90), *m1 = NULL;
    sam3_everything_mask *e1 = NULL;
    sam3_ctx *c1 = new_ctx(m, NULL), *c3 = NULL;
    long total, n, base, calls, fired = 0, oom = 0;
    int rc, i, n1 = 0;
    o.points_per_side = 4;
    o.pred_iou_thresh = o.stability_score_thresh = -1;
    o.box_nms_thresh = 1;
    co.n_threads = 3;
    co.blas_threads = 1;
    co.abort_fn = abort_cb;
    co.abort_user = &st;
    co.allocator = counted(&k);
    if (!c1 || !img || sam3_ctx_new(m, &co, &c3) != SAM3_OK || sam3_set_image(c1, img, 30, 20, 90, SAM3_RGB8) != SAM3_OK ||
        sam3_set_image(c3, img, 30, 20, 90, SAM3_RGB8) != SAM3_OK || sam3_segment_everything(c1, &o, &r) != SAM3_OK) {
        t_check(0, "everything on 1 and 3 threads: setup");
        goto done;
    }
    n1 = r.n_masks;
    e1 = (sam3_everything_mask *)malloc((size_t)SAM3__MAX(n1, 1) * sizeof(*e1));
    m1 = (uint8_t *)malloc((size_t)SAM3__MAX(n1, 1) * 600);
    if (!e1 || !m1) goto done;
    memcpy(e1, r.masks, (size_t)n1 * sizeof(*e1));
    for (i = 0; i < n1; i++) memcpy(m1 + (size_t)i * 600, r.masks[i].mask, 600);
    st.polls = 0;
    base = k.calls; /* a fresh context's and its image's allocations */
    rc = sam3_segment_everything(c3, &o, &r);
    calls = k.calls;
    total = st.polls;
    t_check(rc == SAM3_OK && n1 == 48 && evr_same(&r, e1, m1, n1), "everything on 3 threads: %d masks as on 1 thread's %d, in order", r.n_masks, n1);
    t_check(total >= 1, "everything on 3 threads polls abort_fn (%ld times)", total);
    /* which worker takes which click varies from run to run, and so does the number of polls
       (only the first worker polls between its clicks): a poll past a run's last is never reached */
    for (n = 1; n <= total; n += g_step_abort) {
        st.polls = 0;
        st.fire_at = n;
        rc = sam3_segment_everything(c3, &o, &r);
        if (rc == SAM3_ERR_ABORTED && strstr(sam3_ctx_last_error(c3), "abort") != NULL) fired++;
        else t_check(rc == SAM3_OK && st.polls < n, "everything on 3 threads, abort at poll %ld of %ld: %s", n, st.polls,
                     sam3_result_string((sam3_result)rc));
        if (n == 1) t_check(rc == SAM3_ERR_ABORTED, "everything on 3 threads: an abort at the first poll -> ABORTED");
    }
    st.fire_at = 0;
    t_check(fired >= 1, "everything on 3 threads: %ld of %ld aborts reported as ABORTED", fired, total);
    rc = sam3_segment_everything(c3, &o, &r);
    t_check(rc == SAM3_OK && evr_same(&r, e1, m1, n1), "everything on 3 threads after the aborts: the same masks");
    sam3_ctx_free(c3);
    c3 = NULL;
    t_check(k.live == 0, "everything on 3 threads: every allocation freed (%ld live)", k.live);
    for (n = base + 1; n <= calls; n += g_step_alloc) {
        counter f = {0, 0, 0, 0, 0};
        sam3_ctx *c = NULL;
        f.fail_at = n;
        co.allocator = counted(&f);
        co.abort_fn = NULL;
        if (sam3_ctx_new(m, &co, &c) == SAM3_OK) {
            if (sam3_set_image(c, img, 30, 20, 90, SAM3_RGB8) == SAM3_OK) {
                rc = sam3_segment_everything(c, &o, &r);
                t_check(rc == SAM3_OK || rc == SAM3_ERR_OUT_OF_MEMORY, "everything on 3 threads, allocation %ld failing -> %s", n,
                        sam3_result_string((sam3_result)rc));
                if (rc == SAM3_OK) t_check(evr_same(&r, e1, m1, n1), "everything on 3 threads, allocation %ld failing and absorbed: the same masks", n);
                oom += rc == SAM3_ERR_OUT_OF_MEMORY;
            }
            sam3_ctx_free(c);
        }
        t_check(f.live == 0, "everything on 3 threads, allocation %ld failing: %ld live", n, f.live);
        if (f.calls < n) break; /* the run made fewer allocations: every one has failed once */
    }
    t_check(oom > 0, "everything on 3 threads: %ld injected failures reported as OUT_OF_MEMORY", oom);
done:
    sam3_ctx_free(c3);
    sam3_ctx_free(c1);
    free(e1);
    free(m1);
    free(img);
}

static void test_abort(const sam3_model *m, const seq_out *ref) {
    abort_state st = {0, 0};
    long total, n, fired = 0, bad = 0, badres = 0, tried = 0, expected = 0;
    counter k = {0, 0, 0, 0, 0};
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_ctx *c = NULL;
    int i;
    seq_out o;
    memset(&o, 0, sizeof(o));
    co.n_threads = 1;
    co.blas_threads = 1;
    co.abort_fn = abort_cb;
    co.abort_user = &st;
    co.allocator = counted(&k);
    /* count the polls of one sequence on a fresh context */
    if (sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "ctx_new with abort_fn");
        return;
    }
    for (i = 0; i < SEQ_STEPS; i++) (void)seq_step(c, i, &o);
    total = st.polls;
    t_check(seq_eq(&o, ref), "abort_fn returning 0 changes nothing (%ld polls in the sequence)", total);
    t_check(total >= 5, "the sequence polls abort_fn (%ld times)", total);
    sam3_ctx_free(c);
    /* for every poll n: a fresh context, the sequence, abort at poll n; the interrupted step
       returns ABORTED and is then retried (abort_fn now silent): the results must equal the
       reference, and the context must hold no more memory than the reference run. The same
       with one context reused across all n (state left by an abort must not leak into the next). */
    {
        sam3_ctx *shared = NULL;
        sam3_ctx_options co2 = co;
        abort_state st2 = {0, 0};
        co2.abort_user = &st2;
        if (sam3_ctx_new(m, &co2, &shared) != SAM3_OK) return;
        for (n = 1; n <= total; n = n == total ? total + 1 : SAM3__MIN(n + g_step_abort, total)) { /* always the last poll too */
            int pass;
            for (pass = 0; pass < 2; pass++) {
                abort_state *s = pass ? &st2 : &st;
                sam3_ctx *cc;
                if (pass == 0) {
                    if (sam3_ctx_new(m, &co, &c) != SAM3_OK) return;
                    cc = c;
                } else {
                    cc = shared;
                }
                s->polls = 0;
                s->fire_at = n;
                for (i = 0; i < SEQ_STEPS; i++) {
                    int rc = seq_step(cc, i, &o);
                    if (rc == SAM3_ERR_ABORTED) {
                        fired++;
                        if (!strstr(sam3_ctx_last_error(cc), "abort")) bad++;
                        /* after an aborted set_image the context has no image */
                        if (i == 0) {
                            sam3_segment_result sg;
                            sam3_segment_prompt p;
                            memset(&p, 0, sizeof(p));
                            p.text = "x";
                            if (sam3_segment(cc, &p, NULL, &sg) != SAM3_ERR_NO_IMAGE) bad++;
                        }
                        s->fire_at = 0;
                        rc = seq_step(cc, i, &o);
                    }
                    if (rc < 0) bad++;
                }
                /* a reused context polls less (its text features are cached), so poll n may
                   never come: it then must not have fired either */
                if (s->fire_at == 0 || pass == 0) expected++;
                if (!seq_eq(&o, ref)) badres++;
                if (pass == 0) sam3_ctx_free(c);
            }
            tried++;
        }
        sam3_ctx_free(shared);
    }
    t_check(fired == expected && expected >= tried, "abort at %ld of the %ld polls -> SAM3_ERR_ABORTED each time (%ld of %ld)", tried, total,
            fired, expected);
    t_check(bad == 0, "abort: every aborted call said so, left the context usable (%ld problems)", bad);
    t_check(badres == 0, "abort: the retried sequence gives the reference results (%ld differ)", badres);
    t_check(k.live == 0, "abort: every allocation freed (%ld live)", k.live);
    seq_free(&o);
}

/* ---- allocation failure: the k-th allocation fails, for every k ---- */
static void test_alloc_failures(const sam3_model *ref_model, const seq_out *ref, int fail_rest) {
    long total = 0, kk, oom_ok = 0, bad = 0, badres = 0, leaks = 0, silent = 0, calls_ref;
    counter k = {0, 0, 0, 0, 0};
    seq_out o;
    int i;
    char first_bad[256] = "";
    memset(&o, 0, sizeof(o));
    (void)ref_model;
    /* count the allocations of: sam3_load (no_mmap: the file buffer too), ctx_new, the sequence */
    for (kk = 0;; kk++) {
        sam3_load_options lo = sam3_load_options_default();
        sam3_ctx_options co = sam3_ctx_options_default();
        sam3_model *m = NULL;
        sam3_ctx *c = NULL;
        int rc, stage = -2, failed_here;
        memset(&k, 0, sizeof(k));
        k.fail_at = kk;
        k.fail_rest = fail_rest;
        lo.allocator = counted(&k);
        lo.no_mmap = 1;
        lo.log = capture;
        co.allocator = lo.allocator;
        co.n_threads = 1;
        co.blas_threads = 1;
        /* each stage: run it; on OUT_OF_MEMORY (only if a failure was injected in it) retry it
           with failures off, so the later stages run and the context's state is checked */
        rc = sam3_load(g_path, &lo, &m);
        failed_here = k.failed > 0;
        if (rc == SAM3_ERR_OUT_OF_MEMORY && failed_here) {
            oom_ok++;
            if (m) bad++;
            k.fail_at = 0;
            rc = sam3_load(g_path, &lo, &m);
        } else if (failed_here && !snprintf(first_bad, sizeof(first_bad), "k=%ld: sam3_load -> %s", kk, sam3_result_string((sam3_result)rc))) {
        }
        if (rc != SAM3_OK) {
            bad++;
            goto done;
        }
        stage = -1;
        if (k.fail_at && k.failed) k.fail_at = 0;
        rc = sam3_ctx_new(m, &co, &c);
        if (k.failed && k.fail_at) {
            if (rc == SAM3_ERR_OUT_OF_MEMORY) {
                oom_ok++;
                if (c) bad++;
                k.fail_at = 0;
                rc = sam3_ctx_new(m, &co, &c);
            } else if (!first_bad[0]) {
                snprintf(first_bad, sizeof(first_bad), "k=%ld: ctx_new -> %s", kk, sam3_result_string((sam3_result)rc));
                silent++;
            }
        }
        if (rc != SAM3_OK) {
            bad++;
            goto done;
        }
        for (i = 0; i < SEQ_STEPS; i++) {
            long before = k.failed;
            stage = i;
            rc = seq_step(c, i, &o);
            if (k.failed > before && k.fail_at) {
                if (rc == SAM3_ERR_OUT_OF_MEMORY) {
                    oom_ok++;
                    if (!strstr(sam3_ctx_last_error(c), "memory")) {
                        bad++;
                        if (!first_bad[0])
                            snprintf(first_bad, sizeof(first_bad), "k=%ld step %d: message \"%.150s\"", kk, i, sam3_ctx_last_error(c));
                    }
                } else if (rc < 0) {
                    bad++;
                    if (!first_bad[0])
                        snprintf(first_bad, sizeof(first_bad), "k=%ld step %d -> %s \"%.150s\"", kk, i, sam3_result_string((sam3_result)rc),
                                 sam3_ctx_last_error(c));
                } else {
                    silent++; /* a failed allocation the call recovered from */
                }
                k.fail_at = 0;
                if (rc < 0) {
                    if (i > 0 && i < 4 && g_has_points) (void)0;
                    /* after a failed set_image there is no image; retry it */
                    rc = seq_step(c, i, &o);
                }
            }
            if (rc < 0) {
                bad++;
                if (!first_bad[0])
                    snprintf(first_bad, sizeof(first_bad), "k=%ld step %d retry -> %s \"%.150s\"", kk, i, sam3_result_string((sam3_result)rc),
                             sam3_ctx_last_error(c));
                break;
            }
        }
        if (i == SEQ_STEPS && !seq_eq(&o, ref)) {
            badres++;
            if (!first_bad[0]) snprintf(first_bad, sizeof(first_bad), "k=%ld: results differ from the reference", kk);
        }
    done:
        sam3_ctx_free(c);
        sam3_free(m);
        if (k.live != 0) {
            leaks++;
            if (!first_bad[0]) snprintf(first_bad, sizeof(first_bad), "k=%ld (stage %d): %ld allocations leaked", kk, stage, k.live);
        }
        if (kk == 0) {
            total = k.calls;
            calls_ref = k.calls;
            (void)calls_ref;
        } else if (kk >= total) {
            break;
        } else if (kk + g_step_alloc > total) {
            kk = total - 1; /* always the last allocation too */
        } else {
            kk += g_step_alloc - 1;
        }
    }
    t_check(total > 20, "%s: the whole run makes %ld allocations", fail_rest ? "fail from k on" : "fail the k-th", total);
    t_check(bad == 0, "%s: every injected failure -> SAM3_ERR_OUT_OF_MEMORY with a message, retry works (%ld problems; first: %s)",
            fail_rest ? "fail from k on" : "fail the k-th", bad, first_bad);
    t_check(badres == 0, "%s: after the retries the results equal the reference (%ld differ)", fail_rest ? "fail from k on" : "fail the k-th",
            badres);
    t_check(leaks == 0, "%s: no leak for any k (%ld runs leaked)", fail_rest ? "fail from k on" : "fail the k-th", leaks);
    t_note("  allocation sweep (%s): %ld allocations, %ld injected failures reported as OUT_OF_MEMORY, %ld absorbed", fail_rest ? "from k on" : "k-th only",
           total, oom_ok, silent);
    seq_free(&o);
}

/* The benchmark helpers (sam3 bench): arguments checked, the error kept in the context, a clock that moves. */
static void test_bench_api(const sam3_model *m) {
    sam3_ctx *c = new_ctx(m, NULL);
    double ms = -1, t0 = sam3_time_ms(), t1;
    sam3_result rc;
    t_check(sam3_bench_gemm(NULL, SAM3_GEMM_CTX, 8, 8, 8, 1, &ms) == SAM3_ERR_INVALID_ARG, "bench_gemm(NULL ctx) -> INVALID_ARG");
    t_check(sam3_bench_gemm(c, SAM3_GEMM_CTX, 8, 8, 8, 1, NULL) == SAM3_ERR_INVALID_ARG, "bench_gemm(NULL ms) -> INVALID_ARG");
    t_check(sam3_bench_gemm(c, SAM3_GEMM_CTX, 0, 8, 8, 1, &ms) == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "m 0"),
            "bench_gemm(m 0) -> INVALID_ARG with a message: %s", sam3_ctx_last_error(c));
    t_check(sam3_bench_gemm(c, SAM3_GEMM_CTX, 8, 8, 8, 101, &ms) == SAM3_ERR_INVALID_ARG, "bench_gemm(reps 101) -> INVALID_ARG");
    t_check(sam3_bench_gemm(c, (sam3_gemm_path)7, 8, 8, 8, 1, &ms) == SAM3_ERR_INVALID_ARG, "bench_gemm(path 7) -> INVALID_ARG");
    t_check(sam3_bench_gemm(c, SAM3_GEMM_CTX, INT_MAX, INT_MAX, INT_MAX, 1, &ms) < 0, "bench_gemm(INT_MAX^3) fails cleanly");
    ms = -1;
    t_check(sam3_bench_gemm(c, SAM3_GEMM_CTX, 33, 65, 70, 3, &ms) == SAM3_OK && ms >= 0 && !sam3_ctx_last_error(c)[0],
            "bench_gemm(33 x 65 x 70, 3 reps) -> OK, %.3f ms", ms);
    rc = sam3_bench_gemm(c, SAM3_GEMM_BLAS_THREADS, 64, 64, 64, 1, &ms);
    t_check(rc == SAM3_OK || (rc == SAM3_ERR_UNSUPPORTED && sam3_ctx_last_error(c)[0]), "bench_gemm(BLAS threads) -> OK or UNSUPPORTED (%d)",
            (int)rc);
    t_check(sam3_ctx_n_threads(c) >= 1 && sam3_ctx_n_threads(NULL) == 0 && sam3_ctx_splits_products(NULL) == 0, "sam3_ctx_n_threads %d",
            sam3_ctx_n_threads(c));
    {
        /* the split follows the BLAS, never the thread count (the same bits on any number of threads) */
        sam3_ctx_options o1 = sam3_ctx_options_default();
        sam3_ctx *c1 = NULL;
        o1.n_threads = 1;
        t_check(sam3_ctx_new(m, &o1, &c1) == SAM3_OK && sam3_ctx_splits_products(c1) == sam3_ctx_splits_products(c),
                "a context splits products on 1 thread as on %d", sam3_ctx_n_threads(c));
        sam3_ctx_free(c1);
    }
    t1 = sam3_time_ms();
    t_check(t1 >= t0 && t1 - t0 < 600000.0, "sam3_time_ms moves forward (%.3f ms)", t1 - t0);
    sam3_ctx_free(c);
}

/* ---- load errors without a log callback; verify; memory accounting ---- */
static void test_load_errors(void) {
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m = NULL;
    char err[256], tiny[12];
    unsigned char *bad;
    sam3_result rc;
    lo.error = err;
    lo.error_size = sizeof(err);
    strcpy(err, "stale");
    rc = sam3_load("/nonexistent/dir/model.sam3", &lo, &m);
    t_check(rc == SAM3_ERR_IO && m == NULL && strstr(err, "cannot open") && strstr(err, "no such file"),
            "missing file, no log callback: the reason is in opt.error (\"%s\")", err);
    bad = (unsigned char *)malloc(g_size);
    if (!bad) return;
    memcpy(bad, g_blob, g_size);
    bad[0] = 'X';
    rc = sam3_load_from_memory(bad, g_size, &lo, &m);
    t_check(rc == SAM3_ERR_BAD_MAGIC && strstr(err, "magic"), "bad magic: \"%s\"", err);
    lo.error = tiny;
    lo.error_size = sizeof(tiny);
    memset(tiny, 'z', sizeof(tiny));
    rc = sam3_load_from_memory(bad, g_size, &lo, &m);
    t_check(rc == SAM3_ERR_BAD_MAGIC && memchr(tiny, 0, sizeof(tiny)) != NULL, "a small error buffer is cut and NUL-terminated");
    lo.error = err;
    lo.error_size = sizeof(err);
    rc = sam3_load_from_memory(g_blob, g_size, &lo, &m);
    t_check(rc == SAM3_OK && err[0] == 0, "a successful load leaves opt.error empty (\"%s\")", err);
    sam3_free(m);
    free(bad);
}

/* Flips bytes in one weight, or makes one NaN/inf with its checksum rewritten to match: the load
   without verify does not read the weights (it succeeds), verify names the tensor. */
static void test_verify(void) {
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m = NULL;
    char err[512];
    unsigned char *blob = (unsigned char *)t_read_file(g_path, &g_size), *ck;
    const sam3__cfg *cc;
    const sam3__tensor *t = NULL;
    size_t off, idx = 0, j;
    uint32_t i;
    sam3__mx64_state st;
    uint64_t h;
    float inf = (float)HUGE_VAL;
    sam3_result rc;
    if (!blob) return;
    lo.error = err;
    lo.error_size = sizeof(err);
    lo.verify = 1;
    rc = sam3_load_from_memory(blob, g_size, &lo, &m);
    t_check(rc == SAM3_OK, "untouched file: verify passes (%s)", err);
    if (rc != SAM3_OK) return;
    cc = sam3__file_cfg(&m->file, "file.checksums.mx64");
    t_check(cc && cc->count == m->file.n_tensors, "the converter recorded one checksum per tensor");
    for (i = 0; i < m->file.n_tensors; i++) /* a mid-sized f32 weight */
        if (m->file.tensors[i].dtype == 0 && m->file.tensors[i].nbytes >= 1024) {
            t = &m->file.tensors[i];
            idx = i;
            break;
        }
    if (!cc || !t) {
        sam3_free(m);
        t_free_file(blob);
        return;
    }
    {
        char name[256];
        /* offsets and sizes kept: t and cc point into the model, freed below */
        const size_t data_off = (size_t)((const unsigned char *)t->data - blob), ck_off = (size_t)(cc->data - blob);
        const uint64_t t_nbytes = t->nbytes;
        unsigned char orig4[4], orig_ck[8];
        snprintf(name, sizeof(name), "'%.*s'", (int)t->name_len, t->name);
        off = data_off + 100;
        sam3_free(m);
        /* 1. flipped bytes */
        for (j = 0; j < 8; j++) blob[off + j] ^= 0xA5;
        rc = sam3_load_from_memory(blob, g_size, &lo, &m);
        t_check(rc == SAM3_ERR_CORRUPT_FILE && m == NULL && strstr(err, name) && strstr(err, "checksum"),
                "8 flipped bytes in a weight: verify fails naming the tensor (\"%s\")", err);
        lo.verify = 0;
        rc = sam3_load_from_memory(blob, g_size, &lo, &m);
        t_check(rc == SAM3_OK, "without verify the same file loads (the weights are not read at load)");
        sam3_free(m);
        m = NULL;
        for (j = 0; j < 8; j++) blob[off + j] ^= 0xA5;
        /* 2. one infinite weight, its checksum made to match: only the finiteness check sees it */
        memcpy(orig4, blob + data_off + 4 * 3, 4);
        memcpy(orig_ck, blob + ck_off + 8 * idx, 8);
        memcpy(blob + data_off + 4 * 3, &inf, 4);
        st.s = st.i = 0;
        sam3__mx64_update(&st, blob + data_off, (size_t)t_nbytes);
        h = sam3__mx64_final(&st, t_nbytes);
        ck = blob + ck_off + 8 * idx;
        for (j = 0; j < 8; j++) ck[j] = (unsigned char)(h >> (8 * j));
        lo.verify = 1;
        rc = sam3_load_from_memory(blob, g_size, &lo, &m);
        t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, name) && strstr(err, "infinite"),
                "an infinite weight (checksum matching): verify fails naming the tensor (\"%s\")", err);
        {
            const uint32_t qnan = 0x7fc00000u;
            memcpy(blob + data_off + 4 * 3, &qnan, 4);
            st.s = st.i = 0;
            sam3__mx64_update(&st, blob + data_off, (size_t)t_nbytes);
            h = sam3__mx64_final(&st, t_nbytes);
            for (j = 0; j < 8; j++) ck[j] = (unsigned char)(h >> (8 * j));
            rc = sam3_load_from_memory(blob, g_size, &lo, &m);
            t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, name) && strstr(err, "NaN"), "a NaN weight: verify fails (\"%s\")", err);
        }
        /* 3. a file from before checksums (the key renamed away, no header checksum): loads, and
              verify still checks finiteness; the key renamed alone is damage */
        {
            unsigned char *key = NULL;
            size_t k;
            for (k = 0; k + 19 <= g_size && !key; k++)
                if (!memcmp(blob + k, "file.checksums.mx64", 19)) key = blob + k;
            t_check(key != NULL, "found the checksum key in the config table");
            if (key) {
                unsigned char meta[8];
                key[15] = 'o';
                key[16] = 'l';
                key[17] = 'd';
                rc = sam3_load_from_memory(blob, g_size, &lo, &m);
                t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "missing"),
                        "the checksum key renamed, the header's checksum kept: verify fails (\"%s\")", err);
                memcpy(meta, blob + 72, 8);
                memset(blob + 72, 0, 8); /* an older converter: no header checksum either */
                rc = sam3_load_from_memory(blob, g_size, &lo, &m);
                t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "NaN"), "no checksums, a NaN weight: verify still fails (\"%s\")", err);
                {
                    const uint32_t one = 0x3f800000u;
                    memcpy(blob + data_off + 4 * 3, &one, 4);
                }
                rc = sam3_load_from_memory(blob, g_size, &lo, &m);
                t_check(rc == SAM3_OK, "no checksums (an older file): loads with verify, finiteness checked (%s)", err);
                sam3_free(m);
                m = NULL;
                /* the file as converted, but one bit of the header's checksum flipped: the header and
                   tables fail */
                memcpy(blob + 72, meta, 8);
                blob[79] ^= 0x80;
                key[15] = 'm', key[16] = 'x', key[17] = '6';
                memcpy(blob + data_off + 4 * 3, orig4, 4);
                memcpy(blob + ck_off + 8 * idx, orig_ck, 8);
                rc = sam3_load_from_memory(blob, g_size, &lo, &m);
                t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "header and tables"),
                        "a flipped bit in the header's checksum: verify fails (\"%s\")", err);
                sam3_free(m);
                m = NULL;
            }
        }
    }
    t_free_file(blob);
}

/* A byte-counting allocator: sam3_ctx_memory_used must account for what the context holds. */
typedef struct byte_counter { size_t live; } byte_counter;
static void *b_alloc(size_t size, size_t align, void *user) {
    byte_counter *k = (byte_counter *)user;
    unsigned char *p;
    (void)align; /* <= 64: the 64-byte header keeps 64-byte alignment */
    if (t_memalign((void **)&p, 64, size + 64) != 0) return NULL;
    memcpy(p, &size, sizeof(size));
    k->live += size;
    return p + 64;
}
static void b_free(void *q, void *user) {
    byte_counter *k = (byte_counter *)user;
    unsigned char *p = (unsigned char *)q - 64;
    size_t size;
    memcpy(&size, p, sizeof(size));
    k->live -= size;
    t_alignfree(p);
}

static void test_accounting(const sam3_model *m) {
    sam3_ctx_options co = sam3_ctx_options_default();
    byte_counter k = {0};
    sam3_ctx *c = NULL;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_result seg;
    sam3_segment_prompt p;
    uint8_t *img = picture(61, 47, 3, 61 * 3);
    size_t before, after, live;
    static const char *texts[10] = {"cat", "dog", "a red car", "bus", "tree", "the sky", "a", "b", "c", "d"};
    int i;
    co.allocator.alloc = b_alloc;
    co.allocator.free = b_free;
    co.allocator.user = &k;
    co.n_threads = 1;
    co.blas_threads = 1;
    if (!img || sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "accounting: ctx");
        free(img);
        return;
    }
    t_check(sam3_set_image(c, img, 61, 47, 61 * 3, SAM3_RGB8) == SAM3_OK, "accounting: set_image");
    before = sam3_ctx_memory_used(c);
    memset(&p, 0, sizeof(p));
    so.score_threshold = -1; /* every query: the most result memory */
    so.low_res = so.semantic = 1;
    for (i = 0; i < 10; i++) {
        p.text = texts[i];
        t_check(sam3_segment(c, &p, &so, &seg) >= 0, "accounting: segment \"%s\" (%s)", texts[i], sam3_ctx_last_error(c));
    }
    p.text = texts[9]; /* once more: the arena is now settled at its high-water mark */
    t_check(sam3_segment(c, &p, &so, &seg) >= 0, "accounting: segment");
    after = sam3_ctx_memory_used(c);
    live = k.live;
    t_check(after >= before + (size_t)seg.n_instances * seg.width * seg.height + (size_t)seg.width * seg.height,
            "memory_used grows when results are held: %lu -> %lu bytes (%d masks of %dx%d held)", (unsigned long)before,
            (unsigned long)after, seg.n_instances, seg.width, seg.height);
    t_check(after <= live + sizeof(sam3_ctx) && after + after / 100 >= live,
            "memory_used %lu = the bytes the context holds through its allocator (%lu) within 1%%", (unsigned long)after,
            (unsigned long)live);
    sam3_ctx_free(c);
    t_check(k.live == 0, "accounting: every byte freed (%lu)", (unsigned long)k.live);
    free(img);
}

int main(int argc, char **argv) {
    sam3_model *m = NULL;
    counter k = {0, 0, 0, 0, 0};
    sam3_load_options lo = sam3_load_options_default();
    int quick = argc > 2 && !strcmp(argv[2], "-q"), i;
    if (quick) {
        g_step_abort = 8;
        g_step_alloc = 25;
    }
    seq_out ref;
    sam3_ctx *c;
    if (argc < 2) {
        fprintf(stderr, "usage: test_robust MODEL.sam3 [-q]\n");
        return 2;
    }
    g_path = argv[1];
    g_blob = t_read_file(g_path, &g_size);
    lo.allocator = counted(&k);
    lo.log = capture;
    if (!g_blob || sam3_load(g_path, &lo, &m) != SAM3_OK) {
        printf("cannot load %s: %s\n", g_path, g_log);
        return 1;
    }
    g_has_points = sam3_model_config_int(m, "tracker.present", NULL) ? 1 : 0;
    {
        int64_t v = 0;
        g_has_points = sam3_model_config_int(m, "tracker.present", &v) && v == 1;
    }
    g_img = picture(SEQ_W, SEQ_H, 3, SEQ_W * 3);
    memset(&ref, 0, sizeof(ref));
    c = new_ctx(m, NULL);
    for (i = 0; i < SEQ_STEPS; i++) t_check(seq_step(c, i, &ref) >= 0, "reference sequence step %d: %s", i, sam3_ctx_last_error(c));
    sam3_ctx_free(c);

    TIMED(test_load_errors());
    TIMED(test_verify());
    TIMED(test_accounting(m));
    TIMED(test_nulls(m));
    TIMED(test_bench_api(m));
    TIMED(test_images(m));
    TIMED(test_prompts(m));
    if (g_has_points) TIMED(test_points(m));
    if (g_has_points) TIMED(test_everything(m));
    if (g_has_points) TIMED(test_everything_crops(m));
    if (!quick) TIMED(test_big_prompts(m));
    if (g_has_points) TIMED(test_everything_workers(m));
    TIMED(test_abort(m, &ref));
    TIMED(test_alloc_failures(m, &ref, 0));
    TIMED(test_alloc_failures(m, &ref, 1));

    seq_free(&ref);
    sam3_free(m);
    t_check(k.live == 0, "model: every allocation freed (%ld live)", k.live);
    free(g_img);
    t_free_file(g_blob);
    return t_done("test_robust");
}
