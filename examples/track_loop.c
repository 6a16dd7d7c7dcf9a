/* track_loop - a robot following one object through its camera with sam3.h's video tracker.

   build/track_loop MODEL.sam3 [--frames N] [--threads T] [--budget-ms B] [--click X,Y]
                    [--glitch K] [--save-frames DIR]

   * The model is loaded once; one context and one tracker on it follow the stream (a tracker is
     used by one thread at a time, like its context).
   * Frames arrive one at a time as RGBA buffers whose rows are padded (stride > width * 4), as
     capture APIs give them, and go to sam3 without a copy. A synthetic camera (a yellow ball
     moving over a gradient) stands in for a real one.
   * The operator clicks the object once, on the first frame (--click; default: where the ball
     is). From then on the tracker follows it from its memory of earlier frames, at a steady cost
     per frame (its memory bank has a fixed size).
   * Per frame it prints the object's box, area and object-score logit (visible when > 0), the
     target a robot steers to (the centroid of the mask, read in memory) and the frame's time; at
     the end a summary.
   * Errors, handled as a robot must (keep going on fresh frames, stop safely when broken):
     - each frame has a deadline (capture time + B ms); the abort callback, polled between blocks,
       stops a late frame with SAM3_ERR_ABORTED. The tracker is then exactly as before that frame
       (a prompt not yet used stays pending), so the frame is dropped and the next one taken;
     - the object out of sight (logit <= 0): reported as lost, no target; the tracker keeps looking
       and picks it up again when it reappears;
     - a frame the library refuses (here --glitch K: camera frame K arrives with a zero height, as
       a broken driver might hand over): reported with the library's message and skipped, the
       tracker unchanged; MAX_FAILS such frames in a row stop the loop (exit 1);
     - a model that cannot track (no memory modules): the library's message, exit 1.
   --save-frames DIR also writes every camera frame as DIR/NNNNN.ppm, so that `sam3 track` can
   replay the stream (tests/test_examples.sh checks that it finds the same objects).
   Exit status: 0 done, 1 setup failed or too many failed frames in a row, 2 bad command line. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define SAM3_IMPLEMENTATION
#include "sam3.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAME_W 160
#define FRAME_H 120
#define FRAME_STRIDE (FRAME_W * 4 + 32) /* padded rows */
#define OBJECT_ID 1
#define MAX_FAILS 3 /* failed frames in a row before the robot stops */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Where the ball is on camera frame k. */
static void ball_at(int k, int *cx, int *cy) {
    *cx = 30 + (k * 9) % (FRAME_W - 60);
    *cy = FRAME_H / 2 + (k % 4) * 4 - 6;
}

/* Camera frame k: a gradient with a yellow ball; the row padding is junk sam3 must never read. */
static void render_frame(uint8_t *rgba, int k) {
    int x, y, cx, cy;
    ball_at(k, &cx, &cy);
    for (y = 0; y < FRAME_H; y++) {
        uint8_t *row = rgba + (size_t)y * FRAME_STRIDE;
        for (x = 0; x < FRAME_W; x++) {
            int dx = x - cx, dy = y - cy, ball = dx * dx + dy * dy < 14 * 14;
            row[4 * x + 0] = ball ? 250 : (uint8_t)(60 + x * 120 / FRAME_W);
            row[4 * x + 1] = ball ? 215 : (uint8_t)(80 + y * 100 / FRAME_H);
            row[4 * x + 2] = ball ? 30 : 140;
            row[4 * x + 3] = 255;
        }
        memset(row + FRAME_W * 4, 0xCD, FRAME_STRIDE - FRAME_W * 4);
    }
}

/* The frame as a binary PPM (what `sam3 track` can read back). 0 or -1. */
static int save_ppm(const char *dir, int k, const uint8_t *rgba) {
    char path[4096];
    FILE *f;
    int x, y, ok;
    if (snprintf(path, sizeof(path), "%s/%05d.ppm", dir, k) >= (int)sizeof(path) || !(f = fopen(path, "wb"))) return -1;
    ok = fprintf(f, "P6\n%d %d\n255\n", FRAME_W, FRAME_H) > 0;
    for (y = 0; y < FRAME_H && ok; y++)
        for (x = 0; x < FRAME_W && ok; x++) ok = fwrite(rgba + (size_t)y * FRAME_STRIDE + 4 * x, 1, 3, f) == 3;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* What a consumer does with the mask in memory: the centroid of its pixels (w*h bytes, 1 = object). */
static void mask_centroid(const uint8_t *mask, int w, int h, double *cx, double *cy) {
    double sx = 0, sy = 0;
    int64_t n = 0;
    int x, y;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
            if (mask[(size_t)y * w + x]) sx += x, sy += y, n++;
    *cx = n ? sx / (double)n : -1;
    *cy = n ? sy / (double)n : -1;
}

/* sam3_ctx_options.abort_fn: polled between blocks; the frame's deadline is in *user. */
static int past_deadline(void *user) { return now_ms() > *(const double *)user; }

static int usage(const char *msg, const char *arg) {
    fprintf(stderr,
            "track_loop: %s%s\nusage: track_loop MODEL.sam3 [--frames N] [--threads T] [--budget-ms B] [--click X,Y] [--glitch K] "
            "[--save-frames DIR]\n",
            msg, arg ? arg : "");
    return 2;
}

int main(int argc, char **argv) {
    const char *path = NULL, *save_dir = NULL;
    int i, k, n_frames = 8, n_threads = 0, glitch = -1, has_click = 0, tracked = 0, visible = 0, dropped = 0, failed = 0, fails_in_row = 0;
    int status = 0;
    float click[2] = {0, 0};
    double budget_ms = 60000, deadline = 0, sum_ms = 0, max_ms = 0;
    sam3_model *model = NULL;
    sam3_ctx *ctx = NULL;
    sam3_tracker *tracker = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_result rc;
    uint8_t *rgba = NULL;

    for (i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--frames") && i + 1 < argc) n_frames = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_threads = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc) budget_ms = strtod(argv[++i], &end);
        else if (!strcmp(argv[i], "--glitch") && i + 1 < argc) glitch = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(argv[i], "--save-frames") && i + 1 < argc) save_dir = argv[++i];
        else if (!strcmp(argv[i], "--click") && i + 1 < argc) {
            if (sscanf(argv[++i], "%f,%f", &click[0], &click[1]) != 2) return usage("--click wants X,Y, got ", argv[i]);
            has_click = 1;
        } else if (argv[i][0] != '-' && !path) path = argv[i];
        else return usage("unknown or incomplete argument ", argv[i]);
        if (end && *end) return usage("not a number: ", argv[i]);
    }
    if (!path) return usage("missing MODEL.sam3", NULL);
    if (n_frames < 1 || n_threads < 0 || budget_ms < 0) return usage("--frames >= 1, --threads >= 0, --budget-ms >= 0", NULL);
    if (!has_click) { /* the operator clicks the ball on the first frame */
        int cx, cy;
        ball_at(0, &cx, &cy);
        click[0] = (float)cx;
        click[1] = (float)cy;
    }

    if ((rc = sam3_load(path, NULL, &model)) != SAM3_OK) {
        fprintf(stderr, "track_loop: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return 1;
    }
    co.n_threads = n_threads;
    co.blas_threads = 1; /* see sam3.h, section 3 (Threading) */
    co.abort_fn = past_deadline;
    co.abort_user = &deadline;
    if ((rc = sam3_ctx_new(model, &co, &ctx)) != SAM3_OK) {
        fprintf(stderr, "track_loop: sam3_ctx_new: %s\n", sam3_result_string(rc));
        status = 1;
        goto done;
    }
    if ((rc = sam3_tracker_new(ctx, NULL, &tracker)) != SAM3_OK) { /* e.g. a file without memory modules */
        fprintf(stderr, "track_loop: %s\n", sam3_ctx_last_error(ctx));
        status = 1;
        goto done;
    }
    if (!(rgba = (uint8_t *)malloc((size_t)FRAME_STRIDE * FRAME_H))) {
        fprintf(stderr, "track_loop: out of memory\n");
        status = 1;
        goto done;
    }
    printf("track_loop: %d frames %dx%d RGBA (stride %d), click at %.0f,%.0f on the first frame, budget %.0f ms a frame\n", n_frames,
           FRAME_W, FRAME_H, FRAME_STRIDE, click[0], click[1], budget_ms);

    for (k = 0; k < n_frames; k++) {
        sam3_tracker_result out;
        double t0, ms;
        render_frame(rgba, k); /* the camera's frame k */
        if (save_dir && save_ppm(save_dir, k, rgba) != 0) {
            fprintf(stderr, "track_loop: cannot write %s/%05d.ppm\n", save_dir, k);
            status = 1;
            goto done;
        }
        t0 = now_ms();
        deadline = t0 + budget_ms;
        if (k == 0) { /* the click, for the next frame the tracker sees (frame 0 unless dropped) */
            sam3_point pt;
            sam3_tracker_prompt prompt;
            memset(&prompt, 0, sizeof(prompt));
            pt.x = click[0];
            pt.y = click[1];
            pt.label = 1;
            prompt.points = &pt;
            prompt.n_points = 1;
            if ((rc = sam3_tracker_add_prompt(tracker, sam3_tracker_next_frame(tracker), OBJECT_ID, &prompt)) != SAM3_OK) {
                fprintf(stderr, "track_loop: the click: %s\n", sam3_ctx_last_error(ctx));
                status = 1;
                goto done;
            }
        }
        rc = sam3_tracker_push_frame(tracker, rgba, FRAME_W, k == glitch ? 0 : FRAME_H, FRAME_STRIDE, SAM3_RGBA8, &out);
        ms = now_ms() - t0;
        if (rc == SAM3_ERR_ABORTED) {
            dropped++;
            printf("frame %3d: dropped, deadline passed after %.1f ms (%s)\n", k, ms, sam3_ctx_last_error(ctx));
            continue;
        }
        if (rc != SAM3_OK) {
            failed++;
            printf("frame %3d: skipped: %s\n", k, sam3_ctx_last_error(ctx));
            if (++fails_in_row == MAX_FAILS) {
                fprintf(stderr, "track_loop: %d frames in a row failed: stopping\n", MAX_FAILS);
                status = 1;
                goto done;
            }
            continue;
        }
        fails_in_row = 0;
        tracked++;
        sum_ms += ms;
        if (ms > max_ms) max_ms = ms;
        for (i = 0; i < out.n_objects; i++) {
            const sam3_tracker_object *ob = &out.objects[i];
            if (ob->id != OBJECT_ID) continue;
            if (ob->object_score > 0) {
                double cx, cy;
                mask_centroid(ob->mask, out.width, out.height, &cx, &cy);
                visible++;
                printf("frame %3d: object %d visible, score %.6g, box %.0f,%.0f,%.0f,%.0f, area %lld, target %.1f,%.1f; %.1f ms, "
                       "tracker memory %zu KB\n",
                       k, ob->id, ob->object_score, ob->box.x0, ob->box.y0, ob->box.x1, ob->box.y1, (long long)ob->area, cx, cy, ms,
                       sam3_tracker_memory_used(tracker) / 1024);
            } else {
                printf("frame %3d: object %d lost, score %.6g, no target; %.1f ms, tracker memory %zu KB\n", k, ob->id, ob->object_score,
                       ms, sam3_tracker_memory_used(tracker) / 1024);
            }
        }
    }
    printf("track_loop: %d frames: %d tracked (%d with the object visible), %d dropped at the deadline, %d failed", n_frames, tracked,
           visible, dropped, failed);
    if (tracked) printf("; %.1f ms a frame on average, %.1f at most", sum_ms / tracked, max_ms);
    printf("\n");
done:
    free(rgba);
    sam3_tracker_free(tracker);
    sam3_ctx_free(ctx);
    sam3_free(model);
    return status;
}
