/* Reading the reference dumps (.sam3 files with arch "dump", tools/sam3file.py) in the C tests,
   through sam3.h's own file parser: include after sam3.h's implementation and test_util.h, and
   resolve g_alloc (sam3__allocator_resolve(NULL, &g_alloc)) before the first dump_open. */
#ifndef SAM3_TEST_DUMP_H
#define SAM3_TEST_DUMP_H

typedef struct dump {
    void *buf;
    size_t size;
    sam3__file f;
} dump;

static sam3_allocator g_alloc;

static T_UNUSED int dump_open(dump *d, const char *path) {
    char err[256];
    memset(d, 0, sizeof(*d));
    d->buf = t_read_file(path, &d->size);
    if (!d->buf) return 0;
    if (sam3__file_parse(&d->f, (const uint8_t *)d->buf, d->size, &g_alloc, err, sizeof(err)) != SAM3_OK) {
        printf("cannot parse %s: %s\n", path, err);
        t_free_file(d->buf);
        d->buf = NULL;
        return 0;
    }
    return 1;
}
static T_UNUSED void dump_close(dump *d) {
    if (!d->buf) return;
    sam3__file_free(&d->f, &g_alloc);
    t_free_file(d->buf);
    d->buf = NULL;
}
/* The tensor `name`, or NULL when absent or of another dtype. */
static T_UNUSED const sam3__tensor *dump_get(const dump *d, const char *name, uint32_t dtype) {
    const sam3__tensor *t = sam3__file_find(&d->f, name);
    if (t && t->dtype != dtype) return NULL;
    return t;
}
/* A config string or number of the dump (dflt when absent). */
static T_UNUSED const char *dump_str(const dump *d, const char *key) {
    uint32_t i;
    for (i = 0; i < d->f.n_cfg; i++)
        if (!strcmp(d->f.cfg[i].key, key)) return d->f.strings[i];
    return NULL;
}
static T_UNUSED double dump_num(const dump *d, const char *key, double dflt) {
    const sam3__cfg *e = sam3__file_cfg(&d->f, key);
    if (!e) return dflt;
    return e->type == SAM3__T_F64 ? e->f : (double)e->i;
}
/* Intersection over union of two 0/1 masks of n pixels (1 when both are empty). */
static T_UNUSED double mask_iou(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t j, inter = 0, uni = 0;
    for (j = 0; j < n; j++) {
        inter += a[j] && b[j];
        uni += a[j] || b[j];
    }
    return uni ? (double)inter / (double)uni : 1.0;
}
#if defined(TEST_DUMP_TAPS)
/* The "dbg.*" taps of one frame (sam3_ctx_options.tap = tap_fn, user a taps), kept by name for the
   debug comparisons; taps_clear frees them for the next frame. */
#define MAX_TAPS 256
typedef struct taps {
    char name[MAX_TAPS][64];
    float *data[MAX_TAPS];
    size_t n[MAX_TAPS];
    int count;
} taps;
static void tap_fn(void *user, const char *name, const float *data, int nd, const int64_t *shape) {
    taps *tp = (taps *)user;
    size_t n = 1;
    int i;
    if (strncmp(name, "dbg.", 4) || tp->count >= MAX_TAPS) return;
    for (i = 0; i < nd; i++) n *= (size_t)shape[i];
    snprintf(tp->name[tp->count], sizeof(tp->name[0]), "%s", name);
    tp->data[tp->count] = (float *)malloc(n * sizeof(float));
    if (tp->data[tp->count]) memcpy(tp->data[tp->count], data, n * sizeof(float));
    tp->n[tp->count++] = n;
}
static void taps_clear(taps *tp) {
    int i;
    if (!tp) return;
    for (i = 0; i < tp->count; i++) free(tp->data[i]);
    tp->count = 0;
}
#endif
#endif
