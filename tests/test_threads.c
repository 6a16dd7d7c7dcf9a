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
#include <time.h>

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
    sam3_segment_result seg;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_prompt p;
    sam3_box boxes[2];
    int box_labels[2];
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
            put_int(o, seg.n_instances);
            put(o, &seg.presence, sizeof(float));
            for (k = 0; k < seg.n_instances; k++) {
                put(o, &seg.instances[k].score, sizeof(float));
                put(o, &seg.instances[k].box, 4 * sizeof(float));
                put(o, seg.instances[k].mask, plane);
                put(o, seg.instances[k].low_res_logits, lp * sizeof(float));
            }
            put(o, seg.semantic_logits, lp * sizeof(float));
        }
        boxes[0].x0 = 1.0f + (float)job;
        boxes[0].y0 = 2;
        boxes[0].x1 = (float)w - 3;
        boxes[0].y1 = (float)h / 2;
        box_labels[0] = 1;
        boxes[1].x0 = 0;
        boxes[1].y0 = (float)h / 3;
        boxes[1].x1 = (float)w / 2;
        boxes[1].y1 = (float)h;
        box_labels[1] = job & 1;
        p.boxes = boxes;
        p.box_labels = box_labels;
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

/* ---- one context, two threads: SAM3_ERR_BUSY, never a crash ---- */
typedef struct blocker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, release, calls, reentrant_rc;
    sam3_ctx *ctx;
} blocker;

/* progress_fn of the first set_image: from inside the call, try the context again on this thread,
   then tell the main thread we are inside and wait until it has tried too. */
static void block_in_call(void *user, const char *stage, int step, int n) {
    blocker *b = (blocker *)user;
    sam3_segment_result seg;
    sam3_segment_prompt p;
    (void)stage, (void)step, (void)n;
    if (b->calls++) return;
    memset(&p, 0, sizeof(p));
    p.text = "cat";
    b->reentrant_rc = sam3_segment(b->ctx, &p, NULL, &seg);
    pthread_mutex_lock(&b->mu);
    b->inside = 1;
    pthread_cond_broadcast(&b->cv);
    while (!b->release) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

typedef struct img_call {
    sam3_ctx *ctx;
    const uint8_t *img;
    int w, h, rc;
} img_call;
static void *set_image_thread(void *arg) {
    img_call *a = (img_call *)arg;
    a->rc = sam3_set_image(a->ctx, a->img, a->w, a->h, a->w * 3, SAM3_RGB8);
    return NULL;
}

typedef struct hammer {
    pthread_t tid;
    sam3_ctx *ctx;
    int index, want; /* calls to get through (BUSY ones are retried until a deadline) */
    long ok, busy, bad;
} hammer;
/* Calls on a shared context as fast as it can. Only status codes are looked at: the results
   belong to whichever call ran last, so reading them here would race with the other thread. */
static void *hammer_thread(void *arg) {
    hammer *h = (hammer *)arg;
    static const char *texts[3] = {"cat", "a red car", "dog"};
    const int w = 24 + 5 * h->index, hh = 19 + 3 * h->index;
    uint8_t *img = (uint8_t *)malloc((size_t)w * hh * 3);
    int i, x, rc;
    struct timespec t0, t1, nap = {0, 50000};
    if (!img) {
        h->bad++;
        return NULL;
    }
    for (x = 0; x < w * hh * 3; x++) img[x] = (uint8_t)(x * (h->index + 5));
    /* The cap is time, not attempts: a thread that keeps losing (the winner goes straight into its
       next call) may retry millions of times under TSan on 2 cores before the others finish their
       calls and leave the context to it. A refused thread sleeps 50 us instead of spinning, so it
       does not take the core the running call needs. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; h->ok < h->want && !h->bad; i++) {
        if (h->busy > 0 && (i & 1023) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (t1.tv_sec - t0.tv_sec > 600) break;
        }
        sam3_segment_result seg;
        sam3_points_result pr;
        sam3_segment_prompt p;
        sam3_point pt;
        sam3_points_prompt pp;
        memset(&p, 0, sizeof(p));
        memset(&pp, 0, sizeof(pp));
        p.text = texts[(i + h->index) % 3];
        pt.x = 5.0f;
        pt.y = 7.0f;
        pt.label = 1;
        pp.points = &pt;
        pp.n_points = 1;
        switch (i % 3) {
        case 0: rc = sam3_set_image(h->ctx, img, w, hh, w * 3, SAM3_RGB8); break;
        case 1: rc = sam3_segment(h->ctx, &p, NULL, &seg); break;
        default: rc = g_has_points ? sam3_segment_points(h->ctx, &pp, NULL, &pr) : sam3_segment(h->ctx, &p, NULL, &seg); break;
        }
        if (rc == SAM3_ERR_BUSY) h->busy++, nanosleep(&nap, NULL);
        else if (rc >= 0 || rc == SAM3_ERR_NO_IMAGE) h->ok++;
        else h->bad++;
    }
    free(img);
    return NULL;
}

static void test_busy(void) {
    blocker b;
    img_call a;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_ctx *c = NULL;
    sam3_segment_result seg;
    sam3_points_result pr;
    sam3_segment_prompt p;
    sam3_points_prompt pp;
    pthread_t tid;
    uint8_t img[32 * 24 * 3];
    hammer hs[3];
    int i, rc_seg, rc_img, rc_pts = SAM3_ERR_BUSY;
    long busy = 0, ok = 0, bad = 0;
    for (i = 0; i < (int)sizeof(img); i++) img[i] = (uint8_t)(i * 7);
    memset(&b, 0, sizeof(b));
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    co.n_threads = g_ctx_threads;
    co.progress_fn = block_in_call;
    co.progress_user = &b;
    if (sam3_ctx_new(g_model, &co, &c) != SAM3_OK) {
        t_check(0, "busy: ctx_new");
        return;
    }
    b.ctx = c;
    /* thread A holds the context (blocked in its progress callback) while this thread tries it */
    a.ctx = c;
    a.img = img;
    a.w = 32;
    a.h = 24;
    a.rc = 99;
    if (pthread_create(&tid, NULL, set_image_thread, &a) != 0) {
        t_check(0, "busy: pthread_create");
        sam3_ctx_free(c);
        return;
    }
    pthread_mutex_lock(&b.mu);
    while (!b.inside) pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    memset(&p, 0, sizeof(p));
    p.text = "cat";
    memset(&seg, 0x5a, sizeof(seg));
    rc_seg = sam3_segment(c, &p, NULL, &seg);
    rc_img = sam3_set_image(c, img, 32, 24, 96, SAM3_RGB8);
    memset(&pp, 0, sizeof(pp));
    if (g_has_points) rc_pts = sam3_segment_points(c, &pp, NULL, &pr);
    pthread_mutex_lock(&b.mu);
    b.release = 1;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    pthread_join(tid, NULL);
    t_check(rc_seg == SAM3_ERR_BUSY && rc_img == SAM3_ERR_BUSY && rc_pts == SAM3_ERR_BUSY,
            "a call while another thread's call runs on the context -> SAM3_ERR_BUSY (segment %d, set_image %d, points %d)", rc_seg,
            rc_img, rc_pts);
    t_check(seg.n_instances == 0 && seg.instances == NULL, "BUSY zeroes the caller's result struct");
    t_check(b.reentrant_rc == SAM3_ERR_BUSY, "a call from inside a callback of a running call -> SAM3_ERR_BUSY (%d)", b.reentrant_rc);
    t_check(a.rc == SAM3_OK, "the running call was not disturbed (%s; \"%s\")", sam3_result_string((sam3_result)a.rc), sam3_ctx_last_error(c));
    t_check(sam3_segment(c, &p, NULL, &seg) >= 0, "the context is usable again once the call returned (%s)", sam3_ctx_last_error(c));
    sam3_ctx_free(c);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);

    /* three threads hammering one context: every call succeeds or says BUSY; nothing crashes */
    c = make_ctx();
    if (!c) {
        t_check(0, "busy: ctx_new");
        return;
    }
    for (i = 0; i < 3; i++) {
        memset(&hs[i], 0, sizeof(hs[i]));
        hs[i].ctx = c;
        hs[i].index = i;
        hs[i].want = 12;
        if (pthread_create(&hs[i].tid, NULL, hammer_thread, &hs[i]) != 0) hs[i].tid = 0, hs[i].bad++;
    }
    for (i = 0; i < 3; i++) {
        if (hs[i].tid) pthread_join(hs[i].tid, NULL);
        busy += hs[i].busy;
        ok += hs[i].ok;
        bad += hs[i].bad;
    }
    t_check(bad == 0 && ok == 3 * 12, "3 threads on one context, each until 12 of its calls ran: %ld ran, %ld got BUSY, %ld other errors",
            ok, busy, bad);
    t_note("  one context, 3 threads: %ld calls ran interleaved, %ld refused with SAM3_ERR_BUSY", ok, busy);
    t_check(sam3_set_image(c, img, 32, 24, 96, SAM3_RGB8) == SAM3_OK && sam3_segment(c, &p, NULL, &seg) >= 0,
            "the hammered context still works (%s)", sam3_ctx_last_error(c));
    sam3_ctx_free(c);
}

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
    test_busy();
    for (j = 0; j < N_JOBS; j++) free(g_ref[j].p);
    sam3_free(m);
    return t_done("test_threads");
}
