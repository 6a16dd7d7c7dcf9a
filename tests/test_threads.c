/* Several contexts on one shared model, from several threads at once (pthreads): every result must
   be byte-identical to the same job run alone on one thread. Also checks that a context made on
   one thread can be used (one thread at a time) on another, and that nothing leaks.

   Built twice (see the Makefile):
     make test   with OpenMP and OpenBLAS, each context single-threaded (n_threads = 1,
                 blas_threads = 1: the README's advice for running contexts concurrently)
     make tsan   with -fsanitize=thread, -DSAM3_NO_BLAS and no OpenMP: then every thread in the
                 process is ours, so ThreadSanitizer sees all of them and needs no suppressions
                 (libgomp and OpenBLAS are not TSan-instrumented; their own thread pools would
                 report false races)

   usage: test_threads MODEL.sam3 [N_THREADS [ROUNDS [CTX_THREADS]]]   (defaults 4, 2, 1; CTX_THREADS
          is each context's n_threads, and blas_threads too when it is 1)
   last line: "test_threads: N passed, N failed" */
#define _POSIX_C_SOURCE 200112L
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <pthread.h>

#define N_JOBS 6

/* A job: an image, a text prompt, boxes and clicks. Its output, flattened: status codes, counts,
   scores, boxes, masks and low-res logits of every call, appended to one byte string. */
typedef struct out_buf {
    unsigned char *p;
    size_t n, cap;
    int ok;
} out_buf;

static void put(out_buf *o, const void *data, size_t n) {
    if (!o->ok) return;
    if (o->n + n > o->cap) {
        size_t cap = (o->n + n) * 2 + 1024;
        unsigned char *q = (unsigned char *)realloc(o->p, cap);
        if (!q) {
            o->ok = 0;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, data, n);
    o->n += n;
}
static void put_int(out_buf *o, int v) { put(o, &v, sizeof(v)); }

static const sam3_model *g_model;
static int g_has_points, g_ctx_threads = 1;

static void run_job(sam3_ctx *c, int job, out_buf *o) {
    static const char *texts[N_JOBS] = {"cat", "a red car", "dog", "yellow school bus", "the tree", "visual"};
    int w = 20 + 7 * job, h = 33 - 3 * job, x, y, rc, i;
    uint8_t *img = (uint8_t *)malloc((size_t)w * h * 3);
    sam3_segmentation seg;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_prompt p;
    sam3_box boxes[2];
    if (!img) {
        o->ok = 0;
        return;
    }
    for (y = 0; y < h; y++)
        for (x = 0; x < w * 3; x++) img[(size_t)y * w * 3 + x] = (uint8_t)(x * (job + 3) + y * 11 + (x ^ y) * job);
    rc = sam3_set_image(c, img, w, h, w * 3, SAM3_RGB8);
    put_int(o, rc);
    memset(&p, 0, sizeof(p));
    so.score_threshold = -1; /* every query */
    so.low_res = so.semantic = 1;
    p.text = texts[job];
    for (i = 0; i < 2; i++) {
        rc = sam3_segment(c, &p, &so, &seg);
        put_int(o, rc);
        if (rc >= 0) {
            int k;
            size_t plane = (size_t)seg.width * seg.height, lp = (size_t)seg.low_res_width * seg.low_res_height;
            put_int(o, seg.n);
            put(o, &seg.presence, sizeof(float));
            for (k = 0; k < seg.n; k++) {
                put(o, &seg.instances[k].score, sizeof(float));
                put(o, seg.instances[k].box, 4 * sizeof(float));
                put(o, seg.instances[k].mask, plane);
                put(o, seg.instances[k].low_res_logits, lp * sizeof(float));
            }
            put(o, seg.semantic_logits, lp * sizeof(float));
        }
        boxes[0].x0 = 1.0f + (float)job;
        boxes[0].y0 = 2;
        boxes[0].x1 = (float)w - 3;
        boxes[0].y1 = (float)h / 2;
        boxes[0].label = 1;
        boxes[1].x0 = 0;
        boxes[1].y0 = (float)h / 3;
        boxes[1].x1 = (float)w / 2;
        boxes[1].y1 = (float)h;
        boxes[1].label = job & 1;
        p.boxes = boxes;
        p.n_boxes = 2;
    }
    if (g_has_points) {
        sam3_point pt[2];
        sam3_points_prompt pp;
        sam3_points_result pr;
        memset(&pp, 0, sizeof(pp));
        pt[0].x = (float)w / 3;
        pt[0].y = (float)h / 2;
        pt[0].label = 1;
        pt[1].x = (float)w - 2;
        pt[1].y = 1;
        pt[1].label = 0;
        pp.points = pt;
        pp.n_points = 2;
        rc = sam3_segment_points(c, &pp, NULL, &pr);
        put_int(o, rc);
        if (rc >= 0) {
            put_int(o, pr.n_masks);
            put(o, pr.iou, (size_t)pr.n_masks * sizeof(float));
            put(o, pr.masks, (size_t)pr.n_masks * pr.width * pr.height);
            put(o, pr.low_res_logits, (size_t)pr.n_masks * pr.low_res_width * pr.low_res_height * sizeof(float));
        }
    }
    free(img);
}

static sam3_ctx *make_ctx(void) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_ctx *c = NULL;
    co.n_threads = g_ctx_threads;
#ifndef SAM3_NO_BLAS
    if (g_ctx_threads == 1) co.blas_threads = 1;
#endif
    if (sam3_ctx_new(g_model, &co, &c) != SAM3_OK) return NULL;
    return c;
}

static out_buf g_ref[N_JOBS];

typedef struct worker {
    pthread_t tid;
    int index, rounds;
    sam3_ctx *ctx; /* made by main (handed over) or NULL (the thread makes its own) */
    int mismatches, runs, errors;
} worker;

static void *work(void *arg) {
    worker *w = (worker *)arg;
    sam3_ctx *c = w->ctx ? w->ctx : make_ctx();
    int r, j;
    if (!c) {
        w->errors++;
        return NULL;
    }
    for (r = 0; r < w->rounds; r++)
        for (j = 0; j < N_JOBS; j++) {
            int job = (j + w->index + r) % N_JOBS; /* every thread in a different order */
            out_buf o = {NULL, 0, 0, 1};
            run_job(c, job, &o);
            w->runs++;
            if (!o.ok) w->errors++;
            else if (o.n != g_ref[job].n || memcmp(o.p, g_ref[job].p, o.n) != 0) w->mismatches++;
            free(o.p);
        }
    if (!w->ctx) sam3_ctx_free(c);
    return NULL;
}

int main(int argc, char **argv) {
    sam3_model *m = NULL;
    int n_threads = argc > 2 ? atoi(argv[2]) : 4, rounds = argc > 3 ? atoi(argv[3]) : 2, i, j, total_mis = 0, total_runs = 0, errors = 0;
    worker *ws;
    sam3_ctx *c;
    int64_t v = 0;
    if (argc > 4) g_ctx_threads = atoi(argv[4]);
    if (argc < 2 || n_threads < 1 || rounds < 1 || g_ctx_threads < 1) {
        fprintf(stderr, "usage: test_threads MODEL.sam3 [N_THREADS [ROUNDS [CTX_THREADS]]]\n");
        return 2;
    }
    if (sam3_load(argv[1], NULL, &m) != SAM3_OK) {
        printf("cannot load %s\n", argv[1]);
        return 1;
    }
    g_model = m;
    g_has_points = sam3_model_config_int(m, "tracker.present", &v) && v == 1;

    /* the reference: every job alone, on this thread, each on a fresh context */
    for (j = 0; j < N_JOBS; j++) {
        g_ref[j].ok = 1;
        c = make_ctx();
        if (!c) {
            t_check(0, "ctx_new");
            return t_done("test_threads");
        }
        run_job(c, j, &g_ref[j]);
        t_check(g_ref[j].ok && g_ref[j].n > 64, "reference job %d (%lu bytes of results)", j, (unsigned long)g_ref[j].n);
        sam3_ctx_free(c);
    }
    /* the same jobs again on one reused context, still one thread: identical (no state leaks
       from one image or prompt to the next) */
    c = make_ctx();
    for (j = N_JOBS - 1; j >= 0 && c; j--) {
        out_buf o = {NULL, 0, 0, 1};
        run_job(c, j, &o);
        t_check(o.ok && o.n == g_ref[j].n && !memcmp(o.p, g_ref[j].p, o.n), "job %d again on a reused context: identical", j);
        free(o.p);
    }

    /* n_threads threads at once: half make their own context, half get one made here */
    ws = (worker *)calloc((size_t)n_threads, sizeof(worker));
    for (i = 0; i < n_threads; i++) {
        ws[i].index = i;
        ws[i].rounds = rounds;
        ws[i].ctx = i % 2 ? make_ctx() : NULL;
        if (pthread_create(&ws[i].tid, NULL, work, &ws[i]) != 0) {
            t_check(0, "pthread_create %d", i);
            ws[i].tid = 0;
            ws[i].errors++;
        }
    }
    for (i = 0; i < n_threads; i++) {
        if (ws[i].tid) pthread_join(ws[i].tid, NULL);
        sam3_ctx_free(ws[i].ctx);
        total_mis += ws[i].mismatches;
        total_runs += ws[i].runs;
        errors += ws[i].errors;
    }
    t_check(errors == 0, "%d threads: no errors (%d)", n_threads, errors);
    t_check(total_runs == n_threads * rounds * N_JOBS, "%d threads ran %d jobs", n_threads, total_runs);
    t_check(total_mis == 0, "%d threads x %d rounds x %d jobs, concurrently: every result byte-identical to the single-threaded run (%d differ)",
            n_threads, rounds, N_JOBS, total_mis);

    /* the reused context from above, now driven from another thread (one at a time) */
    if (c) {
        worker w;
        memset(&w, 0, sizeof(w));
        w.rounds = 1;
        w.ctx = c;
        t_check(pthread_create(&w.tid, NULL, work, &w) == 0, "hand a context to another thread");
        pthread_join(w.tid, NULL);
        t_check(w.errors == 0 && w.mismatches == 0 && w.runs == N_JOBS, "a context made on one thread works on another");
        sam3_ctx_free(c);
    }
    free(ws);
    for (j = 0; j < N_JOBS; j++) free(g_ref[j].p);
    sam3_free(m);
    return t_done("test_threads");
}
