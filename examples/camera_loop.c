/* camera_loop - the robotics / game pattern with sam3.h.

   build/camera_loop MODEL.sam3 [--frames N] [--workers W] [--threads T] [--budget-ms B]

   * The model is loaded once and shared, read-only, by every thread.
   * Frames arrive as RGBA buffers whose rows are padded (stride > width * 4), as capture APIs and
     GPU read-backs give them; they are passed to sam3 as they are, without a copy.
   * W worker threads (pthreads) each own one sam3_ctx: a context is used by one thread at a time.
   * Every frame gets several prompts; the image is encoded once and each prompt reuses it.
   * Masks are consumed in memory, here as what a robot steers to: the centroid of the best
     instance of each prompt.
   * Per-stage timings come from sam3_ctx_timings().
   * Cancellation: each frame has a deadline (capture time + B ms). The abort callback, which sam3
     polls between blocks, returns 1 once it has passed; the call then returns SAM3_ERR_ABORTED
     and the worker drops that frame and takes the next. A late frame costs at most one block.

   A synthetic camera (a yellow ball moving over a gradient) stands in for a real one. It hands
   over frames through a small pool of buffers and waits when all are in use, so with a generous
   budget every frame is processed, and with a tight one the late frames are dropped.
   Prints one line per frame and a summary; exits 0 unless something failed (a dropped frame is
   not a failure), 1 on errors, 2 on a bad command line.

   BLAS: contexts on several threads call sgemm concurrently. We set blas_threads = 1, so sam3
   splits every product over its own threads (n_threads per context) and BLAS itself stays
   single-threaded; see sam3.h, section 3 (Threading). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#define SAM3_IMPLEMENTATION
#include "sam3.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FRAME_W 320
#define FRAME_H 240
#define FRAME_STRIDE (FRAME_W * 4 + 64) /* padded rows */
#define POOL 4                          /* frame buffers shared by the camera and the workers */
#define MAX_WORKERS 16

static const char *PROMPTS[] = {"yellow ball", "person", "red car"};
#define N_PROMPTS ((int)(sizeof(PROMPTS) / sizeof(PROMPTS[0])))

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* ---- the camera: a pool of frame buffers, filled in order, taken oldest first ---- */

enum { SLOT_FREE, SLOT_READY, SLOT_BUSY };

typedef struct frame {
    uint8_t *rgba;   /* FRAME_H rows of FRAME_STRIDE bytes */
    int state;       /* SLOT_* */
    int index;       /* frame number */
    double deadline; /* now_ms() by which the results are needed */
} frame;

typedef struct camera {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    frame pool[POOL];
    int n_frames, produced, finished; /* finished: no more frames will come */
    double budget_ms;
} camera;

/* A gradient with a yellow ball moving across it; the row padding is filled with junk that sam3
   must never read. */
static void render_frame(uint8_t *rgba, int index) {
    int x, y, cx = 40 + (index * 23) % (FRAME_W - 80), cy = FRAME_H / 2 + (index % 5) * 10 - 20;
    for (y = 0; y < FRAME_H; y++) {
        uint8_t *row = rgba + (size_t)y * FRAME_STRIDE;
        for (x = 0; x < FRAME_W; x++) {
            int dx = x - cx, dy = y - cy, ball = dx * dx + dy * dy < 30 * 30;
            row[4 * x + 0] = ball ? 250 : (uint8_t)(x * 255 / FRAME_W);
            row[4 * x + 1] = ball ? 215 : (uint8_t)(y * 255 / FRAME_H);
            row[4 * x + 2] = ball ? 30 : 120;
            row[4 * x + 3] = 255;
        }
        memset(row + FRAME_W * 4, 0xCD, FRAME_STRIDE - FRAME_W * 4);
    }
}

static void *camera_thread(void *arg) {
    camera *cam = (camera *)arg;
    int i, k;
    for (i = 0; i < cam->n_frames; i++) {
        frame *f = NULL;
        pthread_mutex_lock(&cam->lock);
        for (;;) {
            for (k = 0; k < POOL && !f; k++)
                if (cam->pool[k].state == SLOT_FREE) f = &cam->pool[k];
            if (f) break;
            pthread_cond_wait(&cam->changed, &cam->lock);
        }
        f->state = SLOT_BUSY; /* ours while we draw into it */
        pthread_mutex_unlock(&cam->lock);

        render_frame(f->rgba, i);

        pthread_mutex_lock(&cam->lock);
        f->index = i;
        f->deadline = now_ms() + cam->budget_ms;
        f->state = SLOT_READY;
        cam->produced++;
        pthread_cond_broadcast(&cam->changed);
        pthread_mutex_unlock(&cam->lock);
    }
    pthread_mutex_lock(&cam->lock);
    cam->finished = 1;
    pthread_cond_broadcast(&cam->changed);
    pthread_mutex_unlock(&cam->lock);
    return NULL;
}

/* The oldest ready frame, marked busy; NULL when the camera is done and nothing is left. */
static frame *take_frame(camera *cam) {
    frame *f = NULL;
    int k;
    pthread_mutex_lock(&cam->lock);
    for (;;) {
        for (k = 0; k < POOL; k++)
            if (cam->pool[k].state == SLOT_READY && (!f || cam->pool[k].index < f->index)) f = &cam->pool[k];
        if (f || cam->finished) break;
        pthread_cond_wait(&cam->changed, &cam->lock);
    }
    if (f) f->state = SLOT_BUSY;
    pthread_mutex_unlock(&cam->lock);
    return f;
}

static void give_back(camera *cam, frame *f) {
    pthread_mutex_lock(&cam->lock);
    f->state = SLOT_FREE;
    pthread_cond_broadcast(&cam->changed);
    pthread_mutex_unlock(&cam->lock);
}

/* ---- the workers ---- */

typedef struct worker {
    int id;
    pthread_t thread;
    camera *cam;
    const sam3_model *model;
    int n_threads;
    double deadline; /* of the frame in hand; read by the abort callback on this worker's thread */
    /* results */
    int processed, dropped, failed;
    double image_ms, prompt_ms; /* sums over processed frames */
} worker;

/* sam3_ctx_options.abort_fn: polled between blocks on the thread running the call. */
static int past_deadline(void *user) {
    const worker *w = (const worker *)user;
    return now_ms() > w->deadline;
}

/* What a consumer does with a mask in memory: the centroid of the instance's pixels. */
static void mask_centroid(const sam3_segment_result *seg, const sam3_instance *in, double *cx, double *cy) {
    double sx = 0, sy = 0;
    int64_t n = 0;
    int x, y;
    for (y = 0; y < seg->height; y++) {
        const uint8_t *row = in->mask + (size_t)y * seg->width;
        for (x = 0; x < seg->width; x++)
            if (row[x]) sx += x, sy += y, n++;
    }
    *cx = n ? sx / (double)n : -1;
    *cy = n ? sy / (double)n : -1;
}

static void *worker_thread(void *arg) {
    worker *w = (worker *)arg;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_segment_options so = sam3_segment_options_default();
    sam3_ctx *ctx = NULL;
    sam3_result rc;
    frame *f;

    co.n_threads = w->n_threads;
    co.blas_threads = 1;
    co.abort_fn = past_deadline;
    co.abort_user = w;
    if ((rc = sam3_ctx_new(w->model, &co, &ctx)) != SAM3_OK) {
        fprintf(stderr, "worker %d: sam3_ctx_new: %s\n", w->id, sam3_result_string(rc));
        w->failed++;
    }
    so.score_threshold = 0.3f; /* Hugging Face's default; Meta's is 0.5 */
    while ((f = take_frame(w->cam)) != NULL) {
        char line[512];
        int len, p;
        double t_prompts = 0;
        sam3_timings t;
        if (!ctx) { /* keep draining so the camera can finish */
            give_back(w->cam, f);
            continue;
        }
        w->deadline = f->deadline;
        len = snprintf(line, sizeof(line), "frame %3d (worker %d):", f->index, w->id);
        rc = sam3_set_image(ctx, f->rgba, FRAME_W, FRAME_H, FRAME_STRIDE, SAM3_RGBA8);
        t = sam3_ctx_timings(ctx);
        for (p = 0; p < N_PROMPTS && rc >= 0; p++) {
            sam3_segment_prompt prompt;
            sam3_segment_result seg;
            memset(&prompt, 0, sizeof(prompt));
            prompt.text = PROMPTS[p];
            rc = sam3_segment(ctx, &prompt, &so, &seg);
            if (rc >= 0) {
                sam3_timings ts = sam3_ctx_timings(ctx);
                int i, best = -1;
                double cx, cy;
                t_prompts += ts.text + ts.geometry + ts.detr_encoder + ts.detr_decoder + ts.mask_decoder + ts.postprocess;
                for (i = 0; i < seg.n_instances; i++)
                    if (best < 0 || seg.instances[i].score > seg.instances[best].score) best = i;
                if (best >= 0) {
                    mask_centroid(&seg, &seg.instances[best], &cx, &cy);
                    len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %d (best %.2f at %.0f,%.0f);", PROMPTS[p], seg.n_instances,
                                    seg.instances[best].score, cx, cy);
                } else {
                    len += snprintf(line + len, sizeof(line) - (size_t)len, " %s 0;", PROMPTS[p]);
                }
            }
        }
        if (rc == SAM3_ERR_ABORTED) {
            w->dropped++;
            printf("frame %3d (worker %d): dropped, deadline passed (%s)\n", f->index, w->id, sam3_ctx_last_error(ctx));
        } else if (rc < 0) {
            w->failed++;
            fprintf(stderr, "frame %d (worker %d): %s\n", f->index, w->id, sam3_ctx_last_error(ctx));
        } else {
            double image_ms = t.preprocess + t.vision_trunk + t.vision_neck;
            w->processed++;
            w->image_ms += image_ms;
            w->prompt_ms += t_prompts;
            printf("%s image %.1f ms (resize %.1f, trunk %.1f, neck %.1f), %d prompts %.1f ms\n", line, image_ms, t.preprocess,
                   t.vision_trunk, t.vision_neck, N_PROMPTS, t_prompts);
        }
        give_back(w->cam, f);
    }
    sam3_ctx_free(ctx);
    return NULL;
}

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "camera_loop: %s%s\nusage: camera_loop MODEL.sam3 [--frames N] [--workers W] [--threads T] [--budget-ms B]\n", msg,
            arg ? arg : "");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int i, n_workers = 2, n_threads = 0, processed = 0, dropped = 0, failed = 0;
    double image_ms = 0, prompt_ms = 0, t0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    sam3_model *model;
    sam3_result rc;
    camera cam;
    worker workers[MAX_WORKERS];
    pthread_t cam_thread;

    memset(&cam, 0, sizeof(cam));
    cam.n_frames = 8;
    cam.budget_ms = 60000;
    for (i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--frames") && i + 1 < argc) cam.n_frames = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc) n_workers = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_threads = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) cam.budget_ms = strtod(argv[++i], &end);
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else return usage("unknown or incomplete argument ", argv[i]);
        if (end && *end) return usage("not a number: ", argv[i]);
    }
    if (!path) return usage("missing MODEL.sam3", NULL);
    if (cam.n_frames < 1 || n_workers < 1 || n_workers > MAX_WORKERS || n_threads < 0 || cam.budget_ms < 0)
        return usage("--frames >= 1, --workers 1..16, --threads >= 0, --budget-ms >= 0", NULL);
    if (!n_threads) n_threads = cores > n_workers ? (int)(cores / n_workers) : 1; /* share the cores */

    if ((rc = sam3_load(path, NULL, &model)) != SAM3_OK) {
        fprintf(stderr, "camera_loop: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return 1;
    }
    pthread_mutex_init(&cam.lock, NULL);
    pthread_cond_init(&cam.changed, NULL);
    for (i = 0; i < POOL; i++)
        if (!(cam.pool[i].rgba = (uint8_t *)malloc((size_t)FRAME_STRIDE * FRAME_H))) {
            fprintf(stderr, "camera_loop: out of memory\n");
            return 1;
        }
    printf("camera_loop: %d frames %dx%d RGBA (stride %d), %d workers x %d threads, %d prompts a frame, budget %.0f ms a frame\n",
           cam.n_frames, FRAME_W, FRAME_H, FRAME_STRIDE, n_workers, n_threads, N_PROMPTS, cam.budget_ms);

    t0 = now_ms();
    memset(workers, 0, sizeof(workers));
    for (i = 0; i < n_workers; i++) {
        workers[i].id = i;
        workers[i].cam = &cam;
        workers[i].model = model;
        workers[i].n_threads = n_threads;
        if (pthread_create(&workers[i].thread, NULL, worker_thread, &workers[i]) != 0) {
            fprintf(stderr, "camera_loop: cannot start worker %d\n", i);
            return 1;
        }
    }
    if (pthread_create(&cam_thread, NULL, camera_thread, &cam) != 0) {
        fprintf(stderr, "camera_loop: cannot start the camera\n");
        return 1;
    }
    pthread_join(cam_thread, NULL);
    for (i = 0; i < n_workers; i++) {
        pthread_join(workers[i].thread, NULL);
        processed += workers[i].processed;
        dropped += workers[i].dropped;
        failed += workers[i].failed;
        image_ms += workers[i].image_ms;
        prompt_ms += workers[i].prompt_ms;
    }
    printf("camera_loop: %d frames in %.0f ms: %d processed, %d dropped at the deadline, %d failed", cam.n_frames, now_ms() - t0,
           processed, dropped, failed);
    if (processed) printf("; mean image encoder %.1f ms, mean prompt %.1f ms", image_ms / processed, prompt_ms / processed / N_PROMPTS);
    printf("\n");

    for (i = 0; i < POOL; i++) free(cam.pool[i].rgba);
    pthread_cond_destroy(&cam.changed);
    pthread_mutex_destroy(&cam.lock);
    sam3_free(model);
    return failed ? 1 : 0;
}
