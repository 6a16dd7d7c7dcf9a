/* Saved concepts (sam3.h "concepts": sam3_concept_new / _save / _load / _free, and
   sam3_segment_prompt.concepts):

     test_saved_concept --model build/tiny_a.sam3 --data tests/data/tiny_a --other build/tiny_b.sam3 \
                        --same-config build/tiny_a_alt.sam3

   1. on the image it was made on, a concept (fresh, and after a save/load round trip) gives
      bit-identical results to its text and boxes given directly (every query: scores, boxes,
      low-resolution logits, masks);
   2. on another image it matches tools/make_reference_concept_xfer.py (HF transformers 5.17: the
      geometry encoder on image A, Sam3Model's forward on image B with those tokens): every query's
      score within 1e-4, the same kept queries, mask IoU >= 0.99, boxes within half a pixel;
   3. a concept of another model (another config; the same config with other weights) is refused,
      by sam3_concept_load and by sam3_segment;
   4. damaged bytes: every truncation, every single-byte change of the header and checksum, a
      changed float, trailing bytes, bad magic and version are each a clear error, never a concept;
   5. misuse: no image, NULL concepts, a short save buffer;
   6. (--video V.sam3) the concept tracker with a concept prompt: on the concept's own image the
      same objects, scores, boxes and masks as with its text and boxes.

   --seeds DIR also writes the concepts made here and damaged copies of one into DIR: the seeds of
   tests/fuzz_concept.c (for the model given with --model). */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"
#include "test_dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCORE_TOL 1e-4
#define MIN_IOU 0.99

static const char *g_seeds; /* --seeds DIR, or NULL */
static void write_seed(const char *name, const uint8_t *b, size_t n) {
    char path[512];
    FILE *f;
    if (!g_seeds) return;
    snprintf(path, sizeof(path), "%s/%s.concept", g_seeds, name);
    f = fopen(path, "wb");
    t_check(f && fwrite(b, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

static const sam3_box g_boxes[2] = {{15.0f, 20.0f, 82.5f, 70.0f}, {90.0f, 5.0f, 142.5f, 40.0f}};
static const int g_labels[2] = {1, 0};

/* Every query of `pr` on the context's image: all kept (threshold < 0), low-res logits, masks. */
static sam3_result run_all(sam3_ctx *c, const sam3_segment_prompt *pr, sam3_segment_result *out) {
    sam3_segment_options so = sam3_segment_options_default();
    so.score_threshold = -1;
    so.low_res = 1;
    return sam3_segment(c, pr, &so, out);
}

/* A copy of a result's instances (the context's next call reuses the buffers). */
typedef struct kept {
    int n;
    size_t lp, plane;
    sam3_instance *in;
    float *low;
    uint8_t *mask;
} kept;
static void keep(kept *k, const sam3_segment_result *r) {
    int i;
    k->n = r->n_instances;
    k->lp = (size_t)r->low_res_width * r->low_res_height;
    k->plane = (size_t)r->width * r->height;
    k->in = (sam3_instance *)malloc(sizeof(sam3_instance) * (size_t)(k->n + 1));
    k->low = (float *)malloc(sizeof(float) * k->lp * (size_t)(k->n + 1));
    k->mask = (uint8_t *)malloc(k->plane * (size_t)(k->n + 1));
    for (i = 0; i < k->n; i++) {
        k->in[i] = r->instances[i];
        memcpy(k->low + (size_t)i * k->lp, r->instances[i].low_res_logits, k->lp * sizeof(float));
        memcpy(k->mask + (size_t)i * k->plane, r->instances[i].mask, k->plane);
    }
}
static void unkeep(kept *k) {
    free(k->in);
    free(k->low);
    free(k->mask);
}
static int same_as(const kept *k, const sam3_segment_result *r) {
    int i;
    if (r->n_instances != k->n) return 0;
    for (i = 0; i < k->n; i++) {
        const sam3_instance *a = &k->in[i], *b = &r->instances[i];
        if (a->query != b->query || a->score != b->score || memcmp(&a->box, &b->box, sizeof(a->box)) || a->area != b->area ||
            memcmp(k->low + (size_t)i * k->lp, b->low_res_logits, k->lp * sizeof(float)) || memcmp(k->mask + (size_t)i * k->plane, b->mask, k->plane))
            return 0;
    }
    return 1;
}

/* The concept's bytes (malloc'd), or NULL. */
static uint8_t *save(const sam3_concept *k, size_t *n) {
    uint8_t *b;
    if (sam3_concept_save(k, NULL, 0, n) != SAM3_OK) return NULL;
    b = (uint8_t *)malloc(*n);
    if (b && sam3_concept_save(k, b, *n, n) != SAM3_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* 1: own image, three prompts, direct vs concept vs loaded concept. */
static void test_own_image(sam3_model *m, sam3_ctx *c, const dump *d) {
    static const char *names[3] = {"text", "boxes", "text + boxes"};
    const sam3__tensor *img = dump_get(d, "input.image_a", SAM3__DT_U8);
    int i;
    if (!img) {
        t_check(0, "dump lacks input.image_a");
        return;
    }
    t_check(sam3_set_image(c, (const uint8_t *)img->data, (int)img->shape[1], (int)img->shape[0], (int)img->shape[1] * 3, SAM3_RGB8) == SAM3_OK,
            "set_image A: %s", sam3_ctx_last_error(c));
    for (i = 0; i < 3; i++) {
        sam3_segment_prompt pr, pk;
        sam3_segment_result r;
        sam3_concept *k = NULL, *k2 = NULL;
        const sam3_concept *list[1];
        kept ref;
        uint8_t *bytes;
        size_t n = 0;
        char err[256];
        memset(&pr, 0, sizeof(pr));
        memset(&pk, 0, sizeof(pk));
        pr.text = i == 1 ? NULL : "a cat";
        pr.boxes = i ? g_boxes : NULL;
        pr.box_labels = i ? g_labels : NULL;
        pr.n_boxes = i ? 2 : 0;
        if (run_all(c, &pr, &r) < 0) {
            t_check(0, "%s: sam3_segment: %s", names[i], sam3_ctx_last_error(c));
            continue;
        }
        keep(&ref, &r);
        t_check(sam3_concept_new(c, &pr, &k) == SAM3_OK && k, "%s: sam3_concept_new: %s", names[i], sam3_ctx_last_error(c));
        list[0] = k;
        pk.concepts = list;
        pk.n_concepts = 1;
        t_check(k && run_all(c, &pk, &r) >= 0 && same_as(&ref, &r), "%s: the concept on its own image differs from the prompt (%d instances)",
                names[i], ref.n);
        bytes = k ? save(k, &n) : NULL;
        if (bytes) write_seed(i == 0 ? "text" : i == 1 ? "boxes" : "text_boxes", bytes, n);
        t_check(bytes && sam3_concept_load(m, bytes, n, &k2, err, sizeof(err)) == SAM3_OK, "%s: save/load: %s", names[i], bytes ? err : "save failed");
        list[0] = k2;
        t_check(k2 && run_all(c, &pk, &r) >= 0 && same_as(&ref, &r), "%s: the loaded concept differs from the prompt", names[i]);
        printf("  own image, %-13s %d queries bit-identical (direct, concept, saved %lu bytes and loaded)\n", names[i], ref.n, (unsigned long)n);
        free(bytes);
        unkeep(&ref);
        sam3_concept_free(k);
        sam3_concept_free(k2);
    }
}

/* 2: the concept of a reference dump's prompt, made on image A, used on image B. */
static void test_transfer(sam3_ctx *c, const char *dir, const char *name) {
    char path[512];
    dump d;
    const sam3__tensor *ia, *ib, *bx, *lb, *all, *pk, *ps, *pb, *pm;
    sam3_box b[SAM3_MAX_BOXES];
    int lab[SAM3_MAX_BOXES], i, nb, W, H, same;
    sam3_segment_prompt pr, pc;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_result r;
    sam3_concept *k = NULL;
    const sam3_concept *list[1];
    double sd = 0, worst = 1, bd = 0;
    snprintf(path, sizeof(path), "%s/ref_xfer_%s.sam3", dir, name);
    if (!dump_open(&d, path)) {
        t_check(0, "cannot open %s", path);
        return;
    }
    ia = dump_get(&d, "input.image_a", SAM3__DT_U8);
    ib = dump_get(&d, "input.image_b", SAM3__DT_U8);
    bx = dump_get(&d, "input.boxes", SAM3__DT_F32);
    lb = dump_get(&d, "input.labels", SAM3__DT_I32);
    all = dump_get(&d, "out.scores", SAM3__DT_F32);
    pk = dump_get(&d, "post.keep", SAM3__DT_I32);
    ps = dump_get(&d, "post.scores", SAM3__DT_F32);
    pb = dump_get(&d, "post.boxes", SAM3__DT_F32);
    pm = dump_get(&d, "post.masks", SAM3__DT_U8);
    if (!ia || !ib || !bx || !lb || !all || !pk || !ps || !pb || !pm || bx->shape[0] > SAM3_MAX_BOXES) {
        t_check(0, "%s: a tensor is missing", path);
        dump_close(&d);
        return;
    }
    memset(&pr, 0, sizeof(pr));
    memset(&pc, 0, sizeof(pc));
    nb = (int)bx->shape[0];
    for (i = 0; i < nb; i++) {
        const float *v = (const float *)bx->data + 4 * i;
        b[i].x0 = v[0], b[i].y0 = v[1], b[i].x1 = v[2], b[i].y1 = v[3];
        lab[i] = ((const int32_t *)lb->data)[i];
    }
    pr.text = dump_num(&d, "case.has_text", 1) != 0 ? dump_str(&d, "case.text") : NULL;
    pr.boxes = b;
    pr.box_labels = lab;
    pr.n_boxes = nb;
    t_check(sam3_set_image(c, (const uint8_t *)ia->data, (int)ia->shape[1], (int)ia->shape[0], (int)ia->shape[1] * 3, SAM3_RGB8) == SAM3_OK &&
                sam3_concept_new(c, &pr, &k) == SAM3_OK,
            "%s: concept on image A: %s", name, sam3_ctx_last_error(c));
    W = (int)ib->shape[1];
    H = (int)ib->shape[0];
    t_check(sam3_set_image(c, (const uint8_t *)ib->data, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "%s: image B: %s", name, sam3_ctx_last_error(c));
    list[0] = k;
    pc.concepts = list;
    pc.n_concepts = 1;
    same = k && run_all(c, &pc, &r) >= 0 && r.n_instances == (int)all->shape[0];
    for (i = 0; same && i < r.n_instances; i++) sd = fmax(sd, fabs(r.instances[i].score - ((const float *)all->data)[i]));
    t_check(same && sd <= SCORE_TOL, "%s: every query's score on image B within %g of HF's (max diff %.2e)", name, SCORE_TOL, sd);
    so.score_threshold = (float)dump_num(&d, "post.threshold", 0.5);
    same = k && sam3_segment(c, &pc, &so, &r) >= 0 && r.n_instances == (int)pk->shape[0];
    for (i = 0; same && i < r.n_instances; i++) {
        const float *rb = (const float *)pb->data + 4 * i;
        same = r.instances[i].query == ((const int32_t *)pk->data)[i];
        sd = fmax(sd, fabs(r.instances[i].score - ((const float *)ps->data)[i]));
        worst = fmin(worst, mask_iou(r.instances[i].mask, (const uint8_t *)pm->data + (size_t)i * W * H, (size_t)W * H));
        bd = fmax(bd, fmax(fmax(fabs(r.instances[i].box.x0 - rb[0]), fabs(r.instances[i].box.y0 - rb[1])),
                           fmax(fabs(r.instances[i].box.x1 - rb[2]), fabs(r.instances[i].box.y1 - rb[3]))));
    }
    t_check(same, "%s: kept %d instances on image B, HF %d (or other queries)", name, r.n_instances, (int)pk->shape[0]);
    t_check(sd <= SCORE_TOL && worst >= MIN_IOU && bd <= 0.5, "%s: score diff %.2e, worst mask IoU %.5f, box diff %.3f px", name, sd, worst, bd);
    printf("  image A -> B, %-10s %d kept of %d (HF %d), max score diff %.2e, worst mask IoU %.5f, max box diff %.2e px\n", name,
           r.n_instances, (int)all->shape[0], (int)pk->shape[0], sd, worst, bd);
    sam3_concept_free(k);
    dump_close(&d);
}

/* 3: concepts of other models, through sam3_concept_load and sam3_segment. */
static void test_other_models(sam3_ctx *c, const char *other_path, const char *alt_path, const dump *d) {
    const char *paths[2];
    const sam3__tensor *img = dump_get(d, "input.image_a", SAM3__DT_U8);
    int j;
    paths[0] = other_path;
    paths[1] = alt_path;
    for (j = 0; j < 2; j++) {
        sam3_model *m2 = NULL;
        sam3_ctx *c2 = NULL;
        sam3_concept *k = NULL, *k2 = NULL;
        sam3_segment_prompt pr, pc;
        sam3_segment_result r;
        const sam3_concept *list[1];
        uint8_t *bytes = NULL;
        size_t n = 0;
        char err[256] = "";
        sam3_result rc;
        if (!paths[j]) continue;
        if (sam3_load(paths[j], NULL, &m2) != SAM3_OK || sam3_ctx_new(m2, NULL, &c2) != SAM3_OK) {
            t_check(0, "cannot load %s", paths[j]);
            sam3_free(m2);
            continue;
        }
        memset(&pr, 0, sizeof(pr));
        memset(&pc, 0, sizeof(pc));
        pr.text = "a cat";
        pr.boxes = g_boxes;
        pr.n_boxes = 1;
        if (sam3_concept_new(c, &pr, &k) == SAM3_OK) bytes = save(k, &n);
        rc = bytes ? sam3_concept_load(m2, bytes, n, &k2, err, sizeof(err)) : SAM3_ERR_IO;
        t_check(rc == SAM3_ERR_INVALID_ARG && !k2 && strstr(err, "another model"), "%s: load gave %s, '%s'", paths[j], sam3_result_string(rc), err);
        printf("  %s: %s\n", paths[j], err);
        list[0] = k;
        pc.concepts = list;
        pc.n_concepts = 1;
        rc = sam3_set_image(c2, (const uint8_t *)img->data, (int)img->shape[1], (int)img->shape[0], (int)img->shape[1] * 3, SAM3_RGB8);
        rc = rc == SAM3_OK ? sam3_segment(c2, &pc, NULL, &r) : rc;
        t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c2), "another model"), "%s: segment with a foreign concept: %s, '%s'",
                paths[j], sam3_result_string(rc), sam3_ctx_last_error(c2));
        free(bytes);
        sam3_concept_free(k);
        sam3_ctx_free(c2);
        sam3_free(m2);
    }
}

/* 4: damaged bytes; never a concept, always a message. */
static void test_damaged(sam3_model *m, sam3_ctx *c) {
    sam3_segment_prompt pr;
    sam3_concept *k = NULL, *k2 = NULL;
    uint8_t *good, *bad;
    size_t n = 0, i;
    char err[256];
    int ok = 1, cut = 0, flips = 0;
    sam3_result rc;
    memset(&pr, 0, sizeof(pr));
    pr.text = "a cat";
    pr.boxes = g_boxes;
    pr.box_labels = g_labels;
    pr.n_boxes = 2;
    if (sam3_concept_new(c, &pr, &k) != SAM3_OK || !(good = save(k, &n))) {
        t_check(0, "damaged: no concept to damage");
        sam3_concept_free(k);
        return;
    }
    bad = (uint8_t *)malloc(n + 1);
    for (i = 0; i < n; i++) { /* every truncation */
        memcpy(bad, good, i);
        err[0] = 0;
        rc = sam3_concept_load(m, i ? bad : NULL, i, &k2, err, sizeof(err));
        if (rc >= 0 || k2 || !err[0]) ok = 0;
        cut += rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "truncated") != NULL;
    }
    write_seed("truncated", good, n / 2);
    t_check(ok && cut == (int)n, "damaged: all %lu truncations refused as truncated (%d said so)", (unsigned long)n, cut);
    for (i = 0; i < n; i++) { /* one byte changed: header, a float, the checksum */
        if (i >= 48 && i + 8 < n && i % 97) continue;
        memcpy(bad, good, n);
        bad[i] ^= 0x21;
        rc = sam3_concept_load(m, bad, n, &k2, err, sizeof(err));
        if (rc >= 0 || k2 || !err[0]) ok = 0;
        flips++;
    }
    t_check(ok, "damaged: a changed byte was accepted");
    memcpy(bad, good, n);
    bad[n - 20] ^= 1;
    write_seed("flipped", bad, n);
    rc = sam3_concept_load(m, bad, n, &k2, err, sizeof(err));
    t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "checksum"), "damaged float: %s '%s'", sam3_result_string(rc), err);
    printf("  damaged float: %s\n", err);
    memcpy(bad, good, n);
    bad[n] = 0;
    rc = sam3_concept_load(m, bad, n + 1, &k2, err, sizeof(err));
    t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "trailing"), "trailing byte: %s '%s'", sam3_result_string(rc), err);
    memcpy(bad, good, n);
    bad[0] = 'X';
    rc = sam3_concept_load(m, bad, n, &k2, err, sizeof(err));
    t_check(rc == SAM3_ERR_BAD_MAGIC, "bad magic: %s '%s'", sam3_result_string(rc), err);
    memcpy(bad, good, n);
    bad[8] = 2;
    rc = sam3_concept_load(m, bad, n, &k2, err, sizeof(err));
    t_check(rc == SAM3_ERR_BAD_VERSION && strstr(err, "version 2"), "version 2: %s '%s'", sam3_result_string(rc), err);
    memcpy(bad, good, n);
    bad[24] = 0xff, bad[25] = 0xff, bad[26] = 0xff, bad[27] = 0x7f; /* 2^31 - 1 tokens */
    rc = sam3_concept_load(m, bad, n, &k2, err, sizeof(err));
    t_check(rc == SAM3_ERR_CORRUPT_FILE && strstr(err, "header"), "huge token count: %s '%s'", sam3_result_string(rc), err);
    printf("  damaged: %lu truncations and %d changed bytes refused; %s\n", (unsigned long)n, flips, err);
    t_check(sam3_concept_save(k, bad, n - 1, &i) == SAM3_ERR_INVALID_ARG && i == n, "save into a short buffer is refused with the size");
    free(bad);
    free(good);
    sam3_concept_free(k);
}

/* 5: misuse. */
static void test_misuse(sam3_model *m) {
    sam3_ctx *c = NULL;
    sam3_segment_prompt pr;
    sam3_segment_result r;
    sam3_concept *k = (sam3_concept *)&pr;
    const sam3_concept *list[1] = {NULL};
    sam3_result rc;
    memset(&pr, 0, sizeof(pr));
    pr.text = "a cat";
    if (sam3_ctx_new(m, NULL, &c) != SAM3_OK) return;
    rc = sam3_concept_new(c, &pr, &k);
    t_check(rc == SAM3_ERR_NO_IMAGE && !k, "concept without an image: %s", sam3_result_string(rc));
    {
        uint8_t px[3 * 16 * 16];
        memset(px, 90, sizeof(px));
        sam3_set_image(c, px, 16, 16, 48, SAM3_RGB8);
    }
    pr.text = NULL;
    pr.n_concepts = 1;
    rc = sam3_segment(c, &pr, NULL, &r);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "concepts is NULL"), "NULL concepts: %s", sam3_ctx_last_error(c));
    pr.concepts = list;
    rc = sam3_segment(c, &pr, NULL, &r);
    t_check(rc == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "concept 0 is NULL"), "a NULL concept: %s", sam3_ctx_last_error(c));
    pr.n_concepts = SAM3_MAX_CONCEPTS + 1;
    rc = sam3_segment(c, &pr, NULL, &r);
    t_check(rc == SAM3_ERR_INVALID_ARG, "too many concepts: %s", sam3_ctx_last_error(c));
    t_check(sam3_concept_n_tokens(NULL, NULL) == 0, "n_tokens(NULL)");
    sam3_concept_free(NULL);
    sam3_ctx_free(c);
}

/* 6: the concept tracker (a video model) with a concept prompt: on the concept's own image the same
   objects, scores, boxes and masks as with its text and boxes; the concept is the tracker's own
   copy (freed by the caller before the next frame). */
static int same_objects(const sam3_concept_tracker_result *a, const sam3_concept_tracker_result *b) {
    int i;
    size_t plane = (size_t)a->width * a->height;
    if (a->n_objects != b->n_objects || a->frame != b->frame) return 0;
    for (i = 0; i < a->n_objects; i++) {
        const sam3_concept_tracker_object *x = &a->objects[i], *y = &b->objects[i];
        if (x->id != y->id || x->score != y->score || x->tracker_score != y->tracker_score || memcmp(&x->box, &y->box, sizeof(x->box)) ||
            x->area != y->area || memcmp(x->mask, y->mask, plane))
            return 0;
    }
    return 1;
}
static void test_concept_tracker(const char *video_path, const dump *d) {
    const sam3__tensor *ia = dump_get(d, "input.image_a", SAM3__DT_U8), *ib = dump_get(d, "input.image_b", SAM3__DT_U8);
    sam3_model *m = NULL;
    sam3_ctx *c[3] = {NULL, NULL, NULL};
    sam3_concept_tracker *t[2] = {NULL, NULL};
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    sam3_concept_tracker_result r[2];
    sam3_segment_prompt pr, pc;
    sam3_concept *k = NULL;
    const sam3_concept *list[1];
    int i, j, ok = 1, n0 = 0;
    if (sam3_load(video_path, NULL, &m) != SAM3_OK) {
        t_check(0, "cannot load %s", video_path);
        return;
    }
    for (i = 0; i < 3; i++) ok &= sam3_ctx_new(m, NULL, &c[i]) == SAM3_OK;
    memset(&pr, 0, sizeof(pr));
    memset(&pc, 0, sizeof(pc));
    pr.text = "a cat";
    pr.boxes = g_boxes;
    pr.box_labels = g_labels;
    pr.n_boxes = 2;
    ok = ok && sam3_set_image(c[2], (const uint8_t *)ia->data, (int)ia->shape[1], (int)ia->shape[0], (int)ia->shape[1] * 3, SAM3_RGB8) == SAM3_OK &&
         sam3_concept_new(c[2], &pr, &k) == SAM3_OK;
    list[0] = k;
    pc.concepts = list;
    pc.n_concepts = 1;
    o.detection_threshold = o.new_object_threshold = 1e-3f; /* random weights: every query a detection */
    ok = ok && sam3_concept_tracker_new(c[0], &o, &t[0]) == SAM3_OK && sam3_concept_tracker_new(c[1], &o, &t[1]) == SAM3_OK &&
         sam3_concept_tracker_add_prompt(t[0], &pr, NULL) == SAM3_OK && sam3_concept_tracker_add_prompt(t[1], &pc, NULL) == SAM3_OK;
    t_check(ok, "concept tracker: set up: %s / %s", sam3_ctx_last_error(c[0]), sam3_ctx_last_error(c[1]));
    sam3_concept_free(k); /* the tracker keeps its own copy */
    for (j = 0; ok && j < 2; j++) {
        const sam3__tensor *im = j ? ib : ia;
        for (i = 0; i < 2; i++)
            ok &= sam3_concept_tracker_push_frame(t[i], (const uint8_t *)im->data, (int)im->shape[1], (int)im->shape[0], (int)im->shape[1] * 3,
                                                  SAM3_RGB8, &r[i]) == SAM3_OK;
        t_check(ok, "concept tracker: frame %d: %s / %s", j, sam3_ctx_last_error(c[0]), sam3_ctx_last_error(c[1]));
        if (!ok) break;
        if (j == 0) {
            n0 = r[0].n_objects;
            t_check(n0 > 0 && same_objects(&r[0], &r[1]), "concept tracker: on the concept's image %d / %d objects, not all the same", n0,
                    r[1].n_objects);
        }
    }
    printf("  concept tracker (%s): frame 0 on the concept's image, %d objects bit-identical to its text and boxes; frame 1 %d / %d objects\n",
           video_path, n0, r[0].n_objects, r[1].n_objects);
    for (i = 0; i < 2; i++) sam3_concept_tracker_free(t[i]);
    for (i = 0; i < 3; i++) sam3_ctx_free(c[i]);
    sam3_free(m);
}

int main(int argc, char **argv) {
    const char *model = NULL, *data = NULL, *other = NULL, *alt = NULL, *video = NULL;
    char path[512];
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    dump d;
    int i;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--data")) data = argv[i + 1];
        else if (!strcmp(argv[i], "--other")) other = argv[i + 1];
        else if (!strcmp(argv[i], "--same-config")) alt = argv[i + 1];
        else if (!strcmp(argv[i], "--seeds")) g_seeds = argv[i + 1];
        else if (!strcmp(argv[i], "--video")) video = argv[i + 1];
    }
    if (!model || !data) {
        fprintf(stderr, "usage: test_saved_concept --model M.sam3 --data DIR [--other M2.sam3] [--same-config M3.sam3] [--seeds DIR] [--video V.sam3]\n");
        return 2;
    }
    sam3__allocator_resolve(NULL, &g_alloc);
    snprintf(path, sizeof(path), "%s/ref_xfer_text_boxes.sam3", data);
    if (sam3_load(model, NULL, &m) != SAM3_OK || sam3_ctx_new(m, NULL, &c) != SAM3_OK || !dump_open(&d, path)) {
        fprintf(stderr, "cannot load %s or %s\n", model, path);
        return 1;
    }
    test_own_image(m, c, &d);
    test_transfer(c, data, "text_boxes");
    test_transfer(c, data, "boxes");
    {
        const sam3__tensor *img = dump_get(&d, "input.image_a", SAM3__DT_U8);
        sam3_set_image(c, (const uint8_t *)img->data, (int)img->shape[1], (int)img->shape[0], (int)img->shape[1] * 3, SAM3_RGB8);
    }
    test_other_models(c, other, alt, &d);
    test_damaged(m, c);
    test_misuse(m);
    if (video) test_concept_tracker(video, &d);
    dump_close(&d);
    sam3_ctx_free(c);
    sam3_free(m);
    return t_done("test_saved_concept");
}
