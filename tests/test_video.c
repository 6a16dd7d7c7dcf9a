/* The video tracker against Hugging Face transformers 5.17 Sam3TrackerVideoModel in streaming mode.

     test_video --model build/video_a.sam3 --ref tests/data/video_a/ref_video.sam3 --photo PHOTO
                [--unsupported build/tiny_a.sam3] [--parity-only] [--bf16 [--bf16-attention]]

   The reference dump (tools/make_reference_video.py) holds each frame's prompts and outputs and the
   CRC-32 of each frame's pixels; the frames are made here from PHOTO (tests/video_frames.h), which is
   ../shared/images/test_image.jpg: without it the parity part is skipped with a message. Per frame:
   object ids and order, low-resolution logits (relative error <= 1e-4), object-score logits (<= 1e-4
   absolute), frame-size masks (IoU >= 0.99); the memories and pointers the tracker stores are printed
   against the reference's for debugging (checked loosely: they are bf16). Then the stream again with
   an abort in the middle of a frame (the frame is retried and must match), misuse of the API, and
   memory that stops growing once the memory bank is full (--parity-only: the first pass alone, for
   the full-size model in tools/check_fullsize.sh). --bf16: products in bf16 (a --dtype bf16 file's
   are anyway) with test_parity --bf16's bars: logits within 5e-2 relative, object scores within 2e-2,
   masks IoU >= 0.95 each and >= 0.98 on average over the stream; --bf16-attention: the memory
   attention on the bf16 tiles from AVX512-BF16 on and at any size (by default with AMX only, from
   1024 tokens on), so that a CPU without AMX and the tiny model check that path too. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"
#define TEST_DUMP_TAPS
#include "test_dump.h"
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#include "video_frames.h"

static int g_bf16, g_bf16_att; /* --bf16, --bf16-attention */
#define TOL (g_bf16 ? 5e-2 : 1e-4)
#define TOL_SCORE (g_bf16 ? 2e-2 : 1e-4)
#define MIN_IOU (g_bf16 ? 0.95 : 0.99)
#define MIN_MEAN_IOU 0.98 /* --bf16: over every object and frame of the stream */

static const sam3__tensor *dget(const dump *d, uint32_t dtype, const char *fmt, ...) {
    char name[128];
    va_list ap;
    const sam3__tensor *t;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    t = sam3__file_find(&d->f, name);
    return t && t->dtype == dtype ? t : NULL;
}
static int64_t dnum(const dump *d, const char *fmt, int f) {
    char key[64];
    const sam3__cfg *e;
    snprintf(key, sizeof(key), fmt, f);
    e = sam3__file_cfg(&d->f, key);
    return e ? (e->type == SAM3__T_F64 ? (int64_t)e->f : e->i) : -1;
}


static int g_abort_after = -1; /* abort at the n-th poll (-1: never) */
static int g_polls;             /* polls so far */
static int abort_fn(void *user) {
    (void)user;
    g_polls++;
    if (g_abort_after < 0) return 0;
    return g_abort_after-- == 0;
}

/* Adds the dump's prompts for frame f (objects in id order, as the scenario lists them). */
static int add_prompts(sam3_tracker *tr, const dump *d, int f) {
    int id, n = 0;
    for (id = 0; id < 64; id++) {
        const sam3__tensor *pt = dget(d, SAM3__DT_F32, "input.f%d.o%d.points", f, id);
        const sam3__tensor *lb = dget(d, SAM3__DT_I32, "input.f%d.o%d.labels", f, id);
        const sam3__tensor *bx = dget(d, SAM3__DT_F32, "input.f%d.o%d.box", f, id);
        const sam3__tensor *mk = dget(d, SAM3__DT_U8, "input.f%d.o%d.mask", f, id);
        sam3_point pts[SAM3_MAX_POINTS];
        sam3_box box;
        sam3_tracker_prompt p;
        int i;
        sam3_result rc;
        if (!pt && !bx && !mk) continue;
        memset(&p, 0, sizeof(p));
        if (pt && lb) {
            const float *xy = (const float *)pt->data;
            p.n_points = (int)pt->shape[0];
            for (i = 0; i < p.n_points; i++) {
                pts[i].x = xy[2 * i];
                pts[i].y = xy[2 * i + 1];
                pts[i].label = ((const int32_t *)lb->data)[i];
            }
            p.points = pts;
        }
        if (bx) {
            const float *v = (const float *)bx->data;
            box.x0 = v[0], box.y0 = v[1], box.x1 = v[2], box.y1 = v[3];
            p.box = &box;
        }
        if (mk) {
            p.mask = (const uint8_t *)mk->data;
            p.mask_height = (int)mk->shape[0];
            p.mask_width = (int)mk->shape[1];
        }
        rc = sam3_tracker_add_prompt(tr, f, id, &p);
        t_check(rc == SAM3_OK, "frame %d: prompt for object %d (%s)", f, id, rc == SAM3_OK ? "ok" : sam3_result_string(rc));
        n++;
    }
    return n;
}

static double bits_iou(const uint8_t *mask, const uint8_t *bits, size_t n) {
    size_t i, in = 0, un = 0;
    for (i = 0; i < n; i++) {
        const int a = mask[i] != 0, b = (bits[i / 8] >> (7 - i % 8)) & 1;
        in += a && b;
        un += a || b;
    }
    return un ? (double)in / (double)un : 1.0;
}

/* One pass over the reference stream. abort_frame >= 0: that frame is first pushed with an abort
   part-way (it must fail and leave the tracker as it was), then again. verbose: debug taps. */
static void run_stream(sam3_ctx *c, taps *tp, const dump *d, const unsigned char *photo, int pw, int ph, int abort_frame, const char *tag) {
    const sam3__cfg *nf = sam3__file_cfg(&d->f, "video.frames");
    const int n_frames = nf ? (int)nf->i : 0;
    sam3_tracker *tr = NULL;
    sam3_result rc = sam3_tracker_new(c, NULL, &tr);
    double iou_sum = 0, e_max = 0, ds_max = 0;
    int f, n_iou = 0;
    t_check(rc == SAM3_OK, "%s: sam3_tracker_new (%s)", tag, sam3_ctx_last_error(c));
    if (rc != SAM3_OK) return;
    for (f = 0; f < n_frames; f++) {
        int w, h, k;
        unsigned char *rgb = vf_frame(photo, pw, ph, f, n_frames, &w, &h);
        sam3_tracker_result out;
        const sam3__tensor *ids = dget(d, SAM3__DT_I32, "out.f%d.ids", f);
        const sam3__tensor *low = dget(d, SAM3__DT_F32, "out.f%d.low_res", f);
        const sam3__tensor *score = dget(d, SAM3__DT_F32, "out.f%d.score", f);
        const sam3__tensor *bits = dget(d, SAM3__DT_U8, "out.f%d.masks", f);
        if (!rgb || w != dnum(d, "frame.%d.width", f) || h != dnum(d, "frame.%d.height", f) ||
            (int64_t)vf_crc32(rgb, (size_t)w * h * 3) != dnum(d, "frame.%d.crc32", f)) {
            t_check(0, "%s: frame %d differs from the reference's (another photo or decoder?)", tag, f);
            free(rgb);
            break;
        }
        add_prompts(tr, d, f);
        taps_clear(tp);
        if (f == abort_frame) {
            /* late in the frame: two polls before the end of the previous frame's count (the memory
               encoder of the last object), after every object's prediction */
            const int before = sam3_tracker_next_frame(tr);
            g_abort_after = g_polls > 2 ? g_polls - 2 : 0;
            rc = sam3_tracker_push_frame(tr, rgb, w, h, w * 3, SAM3_RGB8, &out);
            g_abort_after = -1;
            t_check(rc == SAM3_ERR_ABORTED && sam3_tracker_next_frame(tr) == before, "%s: frame %d aborted part-way: %s, next frame still %d",
                    tag, f, sam3_result_string(rc), sam3_tracker_next_frame(tr));
            taps_clear(tp);
        }
        g_polls = 0;
        rc = sam3_tracker_push_frame(tr, rgb, w, h, w * 3, SAM3_RGB8, &out);
        free(rgb);
        t_check(rc == SAM3_OK, "%s: frame %d pushed (%s)", tag, f, rc == SAM3_OK ? "ok" : sam3_ctx_last_error(c));
        if (rc != SAM3_OK || !ids || !low || !score || !bits) {
            t_check(0, "%s: frame %d: reference tensors missing", tag, f);
            break;
        }
        t_check(out.frame == f && out.n_objects == (int)ids->shape[0], "%s: frame %d: %d objects (reference %d)", tag, f, out.n_objects,
                (int)ids->shape[0]);
        for (k = 0; k < out.n_objects && k < (int)ids->shape[0]; k++) {
            const sam3_tracker_object *ob = &out.objects[k];
            const int id = ((const int32_t *)ids->data)[k];
            const size_t lp = (size_t)out.low_res_width * out.low_res_height;
            const float *rl = (const float *)low->data + (size_t)k * lp;
            const float rs = ((const float *)score->data)[k];
            const double e = t_relerr(ob->low_res_logits, rl, lp);
            const double iou = bits_iou(ob->mask, (const uint8_t *)bits->data + (size_t)k * bits->shape[1], (size_t)w * h);
            int j;
            t_check(ob->id == id, "%s: frame %d object %d: id %d (reference %d)", tag, f, k, ob->id, id);
            t_check(e <= TOL, "%s: frame %d object %d: low-res logits rel err %.2e", tag, f, id, e);
            t_check(fabs(ob->object_score - rs) <= TOL_SCORE, "%s: frame %d object %d: object score %.6f (reference %.6f)", tag, f, id,
                    ob->object_score, rs);
            iou_sum += iou, n_iou++;
            e_max = e > e_max ? e : e_max;
            ds_max = fabs(ob->object_score - rs) > ds_max ? fabs(ob->object_score - rs) : ds_max;
            t_check(iou >= MIN_IOU, "%s: frame %d object %d: mask IoU %.5f (area %ld)", tag, f, id, iou, (long)ob->area);
            if (tp && abort_frame < 0) {
                static const char *what[3] = {"pix", "maskmem", "ptr"};
                char line[256];
                int pos = snprintf(line, sizeof(line), "  frame %d object %d: score %+.4f, logits %.1e", f, id, ob->object_score, e);
                for (j = 0; j < 3; j++) {
                    const sam3__tensor *rt = dget(d, SAM3__DT_F32, "dbg.f%d.o%d.%s", f, id, what[j]);
                    char nm[64];
                    int q;
                    snprintf(nm, sizeof(nm), "dbg.f%d.o%d.%s", f, id, what[j]);
                    for (q = 0; q < tp->count; q++)
                        if (!strcmp(tp->name[q], nm)) break;
                    if (!rt || q == tp->count) continue;
                    {
                        const double ej = (size_t)rt->nbytes / 4 == tp->n[q] ? t_relerr(tp->data[q], (const float *)rt->data, tp->n[q]) : 1e9;
                        /* bf16 memories: a value on a rounding boundary may land one bf16 step away;
                           with bf16 products the memory also follows the mask's boundary pixels */
                        t_check(ej <= (j == 1 ? (g_bf16 ? 0.25 : 1e-2) : g_bf16 ? 5e-2 : 1e-3), "%s: frame %d object %d: %s rel err %.2e", tag, f, id, what[j], ej);
                        pos += snprintf(line + pos, sizeof(line) - (size_t)pos, ", %s %.1e", what[j], ej);
                    }
                }
                if (getenv("SAM3_TEST_VERBOSE")) t_note("%s", line);
            }
        }
    }
    if (n_iou) t_note("%s: %d masks, IoU mean %.5f, logits rel err <= %.2e, object scores within %.2e", tag, n_iou, iou_sum / n_iou, e_max, ds_max);
    if (g_bf16) t_check(n_iou > 0 && iou_sum >= MIN_MEAN_IOU * n_iou, "%s: mask IoU mean %.5f over %d masks", tag, n_iou ? iou_sum / n_iou : 0, n_iou);
    sam3_tracker_free(tr);
}

/* Misuse: each call fails with a clear error and leaves the tracker usable. */
static void test_misuse(sam3_ctx *c, const char *unsupported) {
    sam3_tracker *tr = NULL;
    sam3_tracker_prompt p;
    sam3_point pt = {10, 10, 1};
    sam3_tracker_result out;
    unsigned char px[40 * 30 * 3];
    sam3_box box = {2, 2, 20, 20};
    uint8_t mk[4] = {1, 0, 0, 1};
    int i;
    sam3_result rc;
    memset(px, 90, sizeof(px));
    t_check(sam3_tracker_new(c, NULL, NULL) == SAM3_ERR_INVALID_ARG, "tracker_new with out NULL");
    if (sam3_tracker_new(c, NULL, &tr) != SAM3_OK) {
        t_check(0, "tracker_new: %s", sam3_ctx_last_error(c));
        return;
    }
    memset(&p, 0, sizeof(p));
    rc = sam3_tracker_add_prompt(tr, 0, 1, &p);
    t_check(rc == SAM3_ERR_INVALID_ARG, "empty prompt refused: %s", sam3_ctx_last_error(c));
    p.points = &pt;
    p.n_points = 1;
    t_check(sam3_tracker_add_prompt(tr, 1, 1, &p) == SAM3_ERR_INVALID_ARG, "prompt for a future frame refused: %s", sam3_ctx_last_error(c));
    t_check(sam3_tracker_add_prompt(tr, 0, 1, NULL) == SAM3_ERR_INVALID_ARG, "NULL prompt refused");
    pt.x = NAN;
    t_check(sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_ERR_INVALID_ARG, "NaN click refused: %s", sam3_ctx_last_error(c));
    pt.x = 10;
    pt.label = 2;
    t_check(sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_ERR_INVALID_ARG, "label 2 refused");
    pt.label = 1;
    box.x1 = INFINITY;
    p.box = &box;
    t_check(sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_ERR_INVALID_ARG, "infinite box refused");
    box.x1 = 20;
    p.mask = mk;
    p.mask_width = p.mask_height = 2;
    t_check(sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_ERR_INVALID_ARG, "mask with points refused: %s", sam3_ctx_last_error(c));
    p.mask = NULL;
    t_check(sam3_tracker_remove_object(tr, 7) == SAM3_ERR_INVALID_ARG, "removing an unknown object refused: %s", sam3_ctx_last_error(c));
    /* a frame with no objects is only counted */
    t_check(sam3_tracker_push_frame(tr, px, 32, 24, 32 * 3, SAM3_RGB8, &out) == SAM3_OK && out.n_objects == 0 && sam3_tracker_next_frame(tr) == 1,
            "an empty frame is counted");
    t_check(sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_ERR_INVALID_ARG, "prompt for a processed frame refused: %s", sam3_ctx_last_error(c));
    for (i = 0; i < SAM3_MAX_TRACKED_OBJECTS; i++)
        if (sam3_tracker_add_prompt(tr, 1, 100 + i, &p) != SAM3_OK) break;
    t_check(i == SAM3_MAX_TRACKED_OBJECTS, "%d objects accepted", i);
    t_check(sam3_tracker_add_prompt(tr, 1, 999, &p) == SAM3_ERR_INVALID_ARG, "object %d refused: %s", SAM3_MAX_TRACKED_OBJECTS + 1,
            sam3_ctx_last_error(c));
    for (i = 2; i < SAM3_MAX_TRACKED_OBJECTS; i++) sam3_tracker_remove_object(tr, 100 + i);
    t_check(sam3_tracker_push_frame(tr, px, 0, 24, 0, SAM3_RGB8, &out) == SAM3_ERR_INVALID_ARG && sam3_tracker_next_frame(tr) == 1,
            "a zero-width frame refused, not counted: %s", sam3_ctx_last_error(c));
    t_check(sam3_tracker_push_frame(tr, NULL, 32, 24, 96, SAM3_RGB8, &out) == SAM3_ERR_INVALID_ARG, "NULL pixels refused");
    rc = sam3_tracker_push_frame(tr, px, 32, 24, 32 * 3, SAM3_RGB8, &out);
    t_check(rc == SAM3_OK && out.n_objects == 2 && out.objects[0].id == 100 && out.objects[0].prompted, "usable after the refusals: %s",
            rc == SAM3_OK ? "ok" : sam3_ctx_last_error(c));
    t_check(sam3_tracker_remove_object(tr, 100) == SAM3_OK, "remove object 100");
    rc = sam3_tracker_push_frame(tr, px, 40, 30, 40 * 3, SAM3_RGB8, &out);
    t_check(rc == SAM3_OK && out.n_objects == 1 && out.objects[0].id == 101 && !out.objects[0].prompted && out.width == 40,
            "tracks the rest, a new frame size: %s", rc == SAM3_OK ? "ok" : sam3_ctx_last_error(c));
    {
        /* the bank stops growing: same memory after 12 and 40 more frames */
        size_t m12 = 0, m40;
        for (i = 0; i < 40; i++) {
            if (sam3_tracker_push_frame(tr, px, 32, 24, 32 * 3, SAM3_RGB8, &out) != SAM3_OK) break;
            if (i == 11) m12 = sam3_tracker_memory_used(tr);
        }
        m40 = sam3_tracker_memory_used(tr);
        t_check(i == 40 && m12 == m40 && m40 > 0, "memory after 12 frames %zu, after 40 %zu", m12, m40);
    }
    sam3_tracker_reset(tr);
    t_check(sam3_tracker_next_frame(tr) == 0, "reset restarts at frame 0");
    sam3_tracker_free(tr);
    sam3_tracker_free(NULL);
    {
        /* mask_threshold, a probability as in sam3_segment: NaN refused; a negative one sets every
           pixel, 1 none, the default 0.5 (0) lies between; the logits are the same in all four */
        static const float thr[4] = {0, -1, 1, 0.5f};
        sam3_tracker_options to = sam3_tracker_options_default();
        int64_t area[4];
        float logit0[4];
        to.mask_threshold = NAN;
        tr = NULL;
        t_check(sam3_tracker_new(c, &to, &tr) == SAM3_ERR_INVALID_ARG && tr == NULL, "tracker mask_threshold NaN refused: %s",
                sam3_ctx_last_error(c));
        p.mask = NULL;
        p.box = NULL;
        p.points = &pt;
        p.n_points = 1;
        for (i = 0; i < 4; i++) {
            to.mask_threshold = thr[i];
            area[i] = -1;
            logit0[i] = 0;
            if (sam3_tracker_new(c, &to, &tr) != SAM3_OK) break;
            if (sam3_tracker_add_prompt(tr, 0, 1, &p) == SAM3_OK && sam3_tracker_push_frame(tr, px, 40, 30, 40 * 3, SAM3_RGB8, &out) == SAM3_OK &&
                out.n_objects == 1) {
                area[i] = out.objects[0].area;
                logit0[i] = out.objects[0].low_res_logits[0];
            }
            sam3_tracker_free(tr);
        }
        t_check(i == 4 && area[1] == 40 * 30 && area[2] == 0 && area[0] == area[3] && area[0] >= 0 && logit0[0] == logit0[1] &&
                    logit0[0] == logit0[2],
                "tracker mask_threshold -1 / 1 / default / 0.5: areas %lld %lld %lld %lld of %d", (long long)area[1], (long long)area[2],
                (long long)area[0], (long long)area[3], 40 * 30);
    }
    if (unsupported) {
        sam3_model *m2 = NULL;
        sam3_ctx *c2 = NULL;
        if (sam3_load(unsupported, NULL, &m2) == SAM3_OK && sam3_ctx_new(m2, NULL, &c2) == SAM3_OK) {
            rc = sam3_tracker_new(c2, NULL, &tr);
            t_check(rc == SAM3_ERR_UNSUPPORTED && tr == NULL, "a file without memory modules: %s (%s)", sam3_result_string(rc), sam3_ctx_last_error(c2));
        } else {
            t_check(0, "cannot load %s", unsupported);
        }
        sam3_ctx_free(c2);
        sam3_free(m2);
    }
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *ref = NULL, *photo_path = NULL, *unsupported = NULL;
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co;
    taps tp;
    dump d;
    int i, pw = 0, ph = 0, ch, parity_only = 0;
    unsigned char *photo;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--parity-only")) parity_only = 1;
        if (!strcmp(argv[i], "--bf16")) g_bf16 = 1;
        if (!strcmp(argv[i], "--bf16-attention")) g_bf16_att = 1;
    }
    for (i = 1; i + 1 < argc; i += 2) {
        while (i < argc && (!strcmp(argv[i], "--parity-only") || !strcmp(argv[i], "--bf16") || !strcmp(argv[i], "--bf16-attention"))) i++;
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--model")) model_path = argv[i + 1];
        else if (!strcmp(argv[i], "--ref")) ref = argv[i + 1];
        else if (!strcmp(argv[i], "--photo")) photo_path = argv[i + 1];
        else if (!strcmp(argv[i], "--unsupported")) unsupported = argv[i + 1];
    }
    if (!model_path || !ref || !photo_path) {
        fprintf(stderr, "usage: test_video --model FILE --ref DUMP --photo PHOTO [--unsupported FILE] [--parity-only] [--bf16 [--bf16-attention]]\n");
        return 2;
    }
    sam3__allocator_resolve(NULL, &g_alloc);
    memset(&tp, 0, sizeof(tp));
    if (sam3_load(model_path, NULL, &m) != SAM3_OK) {
        t_check(0, "cannot load %s", model_path);
        return t_done("test_video");
    }
    co = sam3_ctx_options_default();
    co.blas_threads = 1;
    co.tap = tap_fn;
    co.tap_user = &tp;
    co.abort_fn = abort_fn;
    if (g_bf16) co.precision = SAM3_PRECISION_BF16;
    if (sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "sam3_ctx_new");
        return t_done("test_video");
    }
    if (g_bf16_att) c->bka = SAM3__BK_AVX512, c->att_min = 0;
    if (!parity_only) test_misuse(c, unsupported);
    photo = stbi_load(photo_path, &pw, &ph, &ch, 3);
    if (!photo) {
        t_note("test_video: %s is absent: parity with the reference skipped", photo_path);
        t_skip++;
    } else if (!dump_open(&d, ref)) {
        t_check(0, "cannot read %s", ref);
    } else {
        run_stream(c, &tp, &d, photo, pw, ph, -1, "stream");
        co.tap = NULL; /* the retried frame must match without taps too */
        sam3_ctx_free(c);
        c = NULL;
        if (!parity_only && sam3_ctx_new(m, &co, &c) == SAM3_OK) {
            if (g_bf16_att) c->bka = SAM3__BK_AVX512, c->att_min = 0;
            run_stream(c, NULL, &d, photo, pw, ph, 4, "abort");
        }
        dump_close(&d);
    }
    taps_clear(&tp);
    stbi_image_free(photo);
    sam3_ctx_free(c);
    sam3_free(m);
    return t_done("test_video");
}
