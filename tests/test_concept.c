/* The concept tracker (sam3.h, "concept tracker" section): its mask primitives against a
   plain-Python restatement of Sam3VideoModel's mask_iou, nms_masks and fill_holes_in_mask_scores,
   and the streaming loop against HF transformers 5.17 Sam3VideoModel:

     python3 tests/concept_ops.py build/concept_ops.sam3
     test_concept --ops build/concept_ops.sam3
     test_concept --model build/video_a.sam3 --ref tests/data/concept_a/ref_concept.sam3 --photo PHOTO
     test_concept --model full.sam3 --ref ref_concept_full.sam3 --photo PHOTO --parity-only

   (the last: tools/check_fullsize.sh concept, the 840M config; a dump from make_reference_concept.py
   --fullsize holds the streaming mode alone, 10 frames, and the max_num_objects HF ran with).
   tests/test_concept_refs.sh runs the --parity-only form on tests/data/concept_b..f (other seeds,
   photos and prompts; dumps from --frame0 --internals 3, whose dbg.s.f*.o* tensors are compared
   too: memory attention output and object pointer within TOL_TRACK, memory within 1e-2 (bf16)).

   The reference dump (tools/make_reference_concept.py) holds the config HF ran under, each frame's
   size and CRC-32, and per frame the objects HF's processor returns; the frames are cut here from
   PHOTO (../shared/images/test_image.jpg; without it the parity part is skipped with a message).
   Per frame: the same object ids with the same prompt indices, detection scores within 1e-4,
   tracker probabilities within TOL_TRACK, low-resolution logits within TOL_LOGITS relative,
   frame-size masks differing only where the logits allow (MASK_EPS), boxes within a pixel. Then
   misuse of the API, a frame where nothing matches, and aborts inside frames; box exemplars
   against sam3_segment (HF has no box prompts for concepts). Both of the dump's modes are
   compared: streaming ("s.") and clip ("c.": HF's hotstart removals, outputs held back by
   hotstart_delay frames).

   HF 5.17 runs NMS and hole filling only with the optional `kernels` package (absent on the
   reference machine), so these two steps have no HF dump to compare with; tests/concept_ops.py
   states them as the kernels compute them (greedy NMS by probability, 8-connected components). */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"
#define TEST_DUMP_TAPS
#include "test_dump.h"
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#include "video_frames.h"

#define TOL 1e-4
/* Downstream of a memory: the reference stores each frame's memory in bf16 (sam3.h rounds where it
   does), so an f32 value within float noise of a rounding boundary lands one bf16 step (2^-8
   relative) away on one side or the other, and BLAS kernels with other summation orders move which
   elements do (compare_internals counts them). What the memory feeds (the memory attention's output,
   the object pointer, the tracker probability, the logits) is then bounded by those steps, not by
   float noise: TOL_TRACK for the tracker's internals and probabilities, TOL_LOGITS for the
   low-resolution logits (relative). */
#ifndef TOL_TRACK
#define TOL_TRACK 2e-3
#endif
#ifndef TOL_LOGITS
#define TOL_LOGITS 1e-2
#endif
/* A frame-size mask is the bilinear upsampling of its low-resolution logits, thresholded at 0; the
   upsampling is a convex combination, so a pixel can come out differently from HF's only where HF's
   upsampled logit is within the largest low-resolution difference (plus float noise of the resize)
   of 0. Every differing pixel must be such a pixel: a tiny mask may differ by a pixel, a large one
   by its boundary, never by a region. */
#define MASK_EPS 1e-5

static const sam3__tensor *get(const dump *d, uint32_t dtype, const char *fmt, int i) {
    char name[64];
    snprintf(name, sizeof(name), fmt, i);
    return dump_get(d, name, dtype);
}

static void test_ops(const char *path) {
    dump d;
    const sam3__cfg *e;
    int nf, nn, i, j, k;
    if (!dump_open(&d, path)) {
        t_check(0, "cannot read %s", path);
        return;
    }
    e = sam3__file_cfg(&d.f, "fill.n");
    nf = e ? (int)e->i : 0;
    e = sam3__file_cfg(&d.f, "nms.n");
    nn = e ? (int)e->i : 0;
    t_check(nf > 0 && nn > 0, "ops dump has %d fill and %d nms cases", nf, nn);
    for (i = 0; i < nf; i++) {
        const sam3__tensor *in = get(&d, SAM3__DT_F32, "fill.%d.in", i), *out = get(&d, SAM3__DT_F32, "fill.%d.out", i),
                           *ma = get(&d, SAM3__DT_I32, "fill.%d.max_area", i);
        int h, w, bad = 0, changed = 0;
        size_t n, q;
        float *x;
        uint8_t *bin;
        int32_t *area, *stack;
        if (!in || !out || !ma || in->ndim != 2) {
            t_check(0, "fill case %d missing", i);
            continue;
        }
        h = (int)in->shape[0];
        w = (int)in->shape[1];
        n = (size_t)h * w;
        x = (float *)malloc(n * sizeof(float));
        bin = (uint8_t *)malloc(n);
        area = (int32_t *)malloc(n * sizeof(int32_t));
        stack = (int32_t *)malloc(n * sizeof(int32_t));
        memcpy(x, in->data, n * sizeof(float));
        sam3__fill_holes(x, h, w, ((const int32_t *)ma->data)[0], bin, area, stack);
        for (q = 0; q < n; q++) {
            bad += x[q] != ((const float *)out->data)[q];
            changed += ((const float *)in->data)[q] != ((const float *)out->data)[q];
        }
        t_check(bad == 0, "fill_holes case %d (%dx%d, max_area %d): %d of %zu pixels differ from the restatement (%d changed by it)", i, h, w,
                ((const int32_t *)ma->data)[0], bad, n, changed);
        free(x);
        free(bin);
        free(area);
        free(stack);
    }
    for (i = 0; i < nn; i++) {
        const sam3__tensor *pr = get(&d, SAM3__DT_F32, "nms.%d.probs", i), *mk = get(&d, SAM3__DT_U8, "nms.%d.masks", i),
                           *kp = get(&d, SAM3__DT_U8, "nms.%d.keep", i), *io = get(&d, SAM3__DT_F32, "nms.%d.ious", i),
                           *th = get(&d, SAM3__DT_F32, "nms.%d.thr", i);
        int n, bad = 0, kept = 0;
        size_t hw;
        uint8_t *keep;
        int *order;
        double maxd = 0;
        if (!pr || !mk || !kp || !io || !th) {
            t_check(0, "nms case %d missing", i);
            continue;
        }
        n = (int)pr->shape[0];
        hw = (size_t)mk->shape[1];
        if (n < 1 || mk->shape[0] != n) {
            t_check(0, "nms case %d has %d detections", i, n);
            continue;
        }
        for (j = 0; j < n; j++)
            for (k = 0; k < n; k++) {
                const double dd = fabs(sam3__mask_iou((const uint8_t *)mk->data + j * hw, (const uint8_t *)mk->data + k * hw, hw) -
                                       ((const float *)io->data)[j * n + k]);
                if (dd > maxd) maxd = dd;
            }
        t_check(maxd < 1e-6, "mask_iou case %d: max |iou - restatement| = %.2e over %dx%d pairs", i, maxd, n, n);
        keep = (uint8_t *)malloc((size_t)n);
        order = (int *)malloc((size_t)n * sizeof(int));
        sam3__nms_masks((const float *)pr->data, (const uint8_t *)mk->data, n, hw, ((const float *)th->data)[0], ((const float *)th->data)[1], keep, order);
        for (j = 0; j < n; j++) {
            bad += keep[j] != ((const uint8_t *)kp->data)[j];
            kept += keep[j];
        }
        t_check(bad == 0, "nms case %d (%d detections, thresholds %.2f/%.2f): %d kept, %d decisions differ from the restatement", i, n,
                ((const float *)th->data)[0], ((const float *)th->data)[1], kept, bad);
        free(keep);
        free(order);
    }
    dump_close(&d);
}

static const sam3__tensor *fget(const dump *d, uint32_t dtype, const char *mode, int f, const char *what) {
    char name[96];
    snprintf(name, sizeof(name), "%s.f%d.%s", mode, f, what);
    return dump_get(d, name, dtype);
}
static double cnum(const dump *d, const char *key, double dflt) {
    const sam3__cfg *e = sam3__file_cfg(&d->f, key);
    if (!e) return dflt;
    return e->type == SAM3__T_F64 ? e->f : (double)e->i;
}
static int int_list(const sam3__tensor *t, const int32_t **v) {
    *v = t ? (const int32_t *)t->data : NULL;
    return t ? (int)t->shape[0] : -1;
}

/* HF's upsampled logit of object i at the pixel with taps a (row) and b (column). */
static double hf_logit(const dump *d, const char *mode, int f, int L, const sam3__lerp *a, const sam3__lerp *b, int i) {
    const sam3__tensor *t = fget(d, SAM3__DT_F32, mode, f, "low_res");
    const float *lo = (const float *)t->data + (size_t)i * L * L;
    return a->l0 * (b->l0 * lo[a->i0 * L + b->i0] + b->l1 * lo[a->i0 * L + b->i1]) + a->l1 * (b->l0 * lo[a->i1 * L + b->i0] + b->l1 * lo[a->i1 * L + b->i1]);
}

/* Whether object i's mask may come out differently from HF's at a pixel: its own logit there is
   within band[i] of 0 (MASK_EPS), or the pixel's owner may change: another object of its prompt
   (each pixel goes to the one with the highest tracker probability) whose logit there is within its
   band of 0 and whose probability is not clearly below i's, or whose mask is on there and whose
   probability is within twice TOL_TRACK of i's. */
static int pixel_may_differ(const dump *d, const char *mode, int f, int L, const sam3__lerp *a, const sam3__lerp *b, const double *band, int i,
                            int n, const int32_t *prompt) {
    const float *ts = (const float *)fget(d, SAM3__DT_F32, mode, f, "tscore")->data;
    int k;
    if (fabs(hf_logit(d, mode, f, L, a, b, i)) <= band[i]) return 1;
    for (k = 0; k < n; k++) {
        double v;
        if (k == i || prompt[k] != prompt[i]) continue;
        v = hf_logit(d, mode, f, L, a, b, k);
        if (fabs(v) <= band[k] && ts[k] >= ts[i] - 2 * TOL_TRACK) return 1;
        if (v > -band[k] && fabs(ts[k] - ts[i]) <= 2 * TOL_TRACK) return 1;
    }
    return 0;
}

/* One frame's output against the dump's frame res->frame of mode ("s" streaming, "c" clip). */
static void compare(const dump *dp, const char *mode, const sam3_concept_tracker_result *res) {
    const dump d = *dp;
    const sam3_concept_tracker_result fr = *res;
    const int f = fr.frame, w = fr.width, h = fr.height;
    int n_ref, ok_ids, worst_box = 0, i, L;
    sam3__lerp *ty = NULL, *tx = NULL;
    double band[SAM3_MAX_TRACKED_OBJECTS];
    const int32_t *rid, *rpr, *rn, *rl;
    const sam3__tensor *tsc = fget(&d, SAM3__DT_F32, mode, f, "score"), *tts = fget(&d, SAM3__DT_F32, mode, f, "tscore"),
                       *tlo = fget(&d, SAM3__DT_F32, mode, f, "low_res"), *tbx = fget(&d, SAM3__DT_F32, mode, f, "box");
    double e_sc = 0, e_ts = 0, e_lo = 0, min_iou = 1;
    long n_bad_mask = 0, worst_px = 0, worst_px_area = 0, worst_unexpl = 0;
    int worst_lo = -1;
    long off = 0;
    n_ref = int_list(fget(&d, SAM3__DT_I32, mode, f, "ids"), &rid);
    int_list(fget(&d, SAM3__DT_I32, mode, f, "prompt"), &rpr);
    int_list(fget(&d, SAM3__DT_I32, mode, f, "rle_n"), &rn);
    int_list(fget(&d, SAM3__DT_I32, mode, f, "rle"), &rl);
    if (n_ref < 0 || !rpr || !rn || !rl || !tsc || !tts || !tlo || !tbx) {
        t_check(0, "frame %d: the dump lacks outputs", f);
        return;
    }
    ok_ids = fr.n_objects == n_ref;
    for (i = 0; ok_ids && i < n_ref; i++) ok_ids = fr.objects[i].id == rid[i] && fr.objects[i].prompt == rpr[i];
    {
        char got[256] = "", want[256] = "";
        size_t a = 0, b = 0;
        for (i = 0; i < fr.n_objects && a < 200; i++) a += (size_t)snprintf(got + a, sizeof(got) - a, " %d/%d", fr.objects[i].id, fr.objects[i].prompt);
        for (i = 0; i < n_ref && b < 200; i++) b += (size_t)snprintf(want + b, sizeof(want) - b, " %d/%d", rid[i], rpr[i]);
        t_check(ok_ids, "frame %d (%dx%d): objects (id/prompt)%s, HF%s", f, w, h, got, want);
    }
    if (!ok_ids) return;
    L = fr.low_res_width;
    ty = (sam3__lerp *)malloc((size_t)h * sizeof(*ty));
    tx = (sam3__lerp *)malloc((size_t)w * sizeof(*tx));
    if (!ty || !tx || fr.low_res_height != L) {
        t_check(0, "frame %d: out of memory or low-resolution logits not square", f);
        free(ty);
        free(tx);
        return;
    }
    sam3__lerp_table(L, h, ty);
    sam3__lerp_table(L, w, tx);
    for (i = 0; i < n_ref && i < SAM3_MAX_TRACKED_OBJECTS; i++) {
        const float *mine = fr.objects[i].low_res_logits, *hf = (const float *)tlo->data + (size_t)i * L * L;
        double big = 0;
        size_t q;
        band[i] = 0;
        for (q = 0; q < (size_t)L * L; q++) {
            if (fabs((double)mine[q] - hf[q]) > band[i]) band[i] = fabs((double)mine[q] - hf[q]);
            if (fabs(hf[q]) > big) big = fabs(hf[q]);
        }
        band[i] += MASK_EPS * big;
    }
    for (i = 0; i < n_ref; i++) {
        const sam3_concept_tracker_object *ob = &fr.objects[i];
        const float *hb = (const float *)tbx->data + 4 * i;
        const size_t lp = (size_t)fr.low_res_width * fr.low_res_height;
        double de = fabs(ob->score - ((const float *)tsc->data)[i]), dt = fabs(ob->tracker_score - ((const float *)tts->data)[i]);
        double dl = t_relerr(ob->low_res_logits, (const float *)tlo->data + i * lp, lp);
        long inter = 0, uni = 0, px = 0, unexplained = 0;
        int r, k2;
        if (de > e_sc) e_sc = de;
        if (dt > e_ts) e_ts = dt;
        if (dl > e_lo) {
            e_lo = dl;
            worst_lo = ob->id;
        }
        /* HF's runs: 0s first, then alternating */
        for (r = 0; r < rn[i]; r++) {
            const int len = rl[off + r], on = r & 1;
            for (k2 = 0; k2 < len; k2++, px++) {
                const int mine = ob->mask[px] != 0;
                inter += mine && on;
                uni += mine || on;
                if (mine != on && px < (long)w * h) unexplained += !pixel_may_differ(&d, mode, f, L, ty + px / w, tx + px % w, band, i, n_ref, rpr);
            }
        }
        off += rn[i];
        if (px != (long)w * h) uni = -1;
        if (uni > 0 && (double)inter / uni < min_iou) min_iou = (double)inter / uni;
        if (uni < 0) min_iou = -1;
        if (uni < 0 || unexplained > 0) n_bad_mask++;
        if (unexplained > worst_unexpl) worst_unexpl = unexplained;
        if (uni - inter > worst_px) worst_px = uni - inter, worst_px_area = uni;
        {
            const int db = (int)SAM3__MAX(SAM3__MAX(fabsf(ob->box.x0 - hb[0]), fabsf(ob->box.y0 - hb[1])),
                                          SAM3__MAX(fabsf(ob->box.x1 - 1 - hb[2]), fabsf(ob->box.y1 - 1 - hb[3])));
            if (db > worst_box) worst_box = db;
        }
    }
    t_check(e_sc <= TOL && e_ts <= TOL_TRACK, "frame %d: scores max err %.2e, tracker probabilities %.2e", f, e_sc, e_ts);
    t_check(e_lo <= TOL_LOGITS, "frame %d: low-res logits max rel err %.2e (object %d)", f, e_lo, worst_lo);
    t_check(n_bad_mask == 0, "frame %d: masks min IoU %.4f over %d objects, at most %ld pixels differ (of %ld in the union), %ld where HF's logit is clear of 0",
            f, min_iou, n_ref, worst_px, worst_px_area, worst_unexpl);
    t_check(worst_box <= 1, "frame %d: boxes within %d px of HF's", f, worst_box);
    free(ty);
    free(tx);
}

/* The tracker's internals of a --internals dump (streaming frames 0..K-1): each object's memory
   attention output (the last one of the frame), and the memory and object pointer stored for the
   frame, against sam3.h's (taps and the tracker's entries). The memory is bf16 in both: a value on
   a rounding boundary may land one bf16 step away. */
static void compare_internals(const dump *d, const sam3_concept_tracker *ct, const taps *tp, int f) {
    const sam3_tracker *t = ct->t;
    const sam3_model *m = t->c->m;
    const size_t nm = (size_t)m->trk.grid * m->trk.grid * m->vid.mem_dim;
    int i, k;
    for (i = 0; i < t->n_obj; i++) {
        const sam3__trk_obj *o = &t->obj[i];
        const sam3__trk_entry *me = NULL, *pe = NULL;
        const sam3__tensor *rt;
        char nm_[64];
        for (k = 0; k < o->n_cond; k++)
            if (o->cond[k].frame == f) me = pe = &o->cond[k];
        if (!me && o->mems[f % t->n_mem_ring].frame == f) me = &o->mems[f % t->n_mem_ring];
        if (!pe && o->ptrs[f % t->n_ptr_ring].frame == f) pe = &o->ptrs[f % t->n_ptr_ring];
        snprintf(nm_, sizeof(nm_), "dbg.s.f%d.o%d.pix", f, o->id);
        if ((rt = dump_get(d, nm_, SAM3__DT_F32)) != NULL) {
            int q, last = -1;
            snprintf(nm_, sizeof(nm_), "dbg.f%d.o%d.pix", f, o->id);
            for (q = 0; q < tp->count; q++)
                if (!strcmp(tp->name[q], nm_)) last = q;
            t_check(last >= 0 && tp->data[last] && tp->n[last] == rt->nbytes / 4, "frame %d object %d: memory attention output missing", f, o->id);
            if (last >= 0 && tp->data[last] && tp->n[last] == rt->nbytes / 4) {
                const double e = t_relerr(tp->data[last], (const float *)rt->data, tp->n[last]);
                t_check(e <= TOL_TRACK, "frame %d object %d: memory attention output rel err %.2e", f, o->id, e);
            }
        }
        snprintf(nm_, sizeof(nm_), "dbg.s.f%d.o%d.maskmem", f, o->id);
        if ((rt = dump_get(d, nm_, SAM3__DT_F32)) != NULL) {
            t_check(me && me->mem && rt->nbytes / 4 == nm, "frame %d object %d: no memory stored", f, o->id);
            if (me && me->mem && rt->nbytes / 4 == nm) {
                float *x = (float *)malloc(nm * sizeof(float));
                size_t j;
                double e;
                if (!x) continue;
                size_t n_step = 0, n_far = 0;
                for (j = 0; j < nm; j++) {
                    /* the reference's value, already a bf16 number, against sam3.h's in bf16 steps */
                    const uint16_t hr = sam3__to_bf16(((const float *)rt->data)[j]);
                    const long dd = (long)(me->mem[j] & 0x7fff) * ((me->mem[j] >> 15) ? -1 : 1) - (long)(hr & 0x7fff) * ((hr >> 15) ? -1 : 1);
                    x[j] = sam3__from_bf16(me->mem[j]);
                    n_step += dd == 1 || dd == -1;
                    n_far += dd > 1 || dd < -1;
                }
                e = t_relerr(x, (const float *)rt->data, nm);
                t_check(e <= 1e-2, "frame %d object %d: memory rel err %.2e (%zu of %zu values one bf16 step from HF's, %zu further)", f, o->id,
                        e, n_step, nm, n_far);
                free(x);
            }
        }
        snprintf(nm_, sizeof(nm_), "dbg.s.f%d.o%d.ptr", f, o->id);
        if ((rt = dump_get(d, nm_, SAM3__DT_F32)) != NULL) {
            t_check(pe && pe->ptr && rt->nbytes / 4 == (size_t)m->trk.D, "frame %d object %d: no object pointer stored", f, o->id);
            if (pe && pe->ptr && rt->nbytes / 4 == (size_t)m->trk.D) {
                const double e = t_relerr(pe->ptr, (const float *)rt->data, (size_t)m->trk.D);
                t_check(e <= TOL_TRACK, "frame %d object %d: object pointer rel err %.2e", f, o->id, e);
            }
        }
    }
}

/* One stream through the concept tracker, compared frame by frame with the dump's mode: "s"
   streaming, "c" clip (hotstart on, outputs held back, the rest flushed at the end). */
static void test_stream(const char *model, const char *ref, const char *photo, const char *mode) {
    dump d;
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_concept_tracker *ct = NULL;
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    sam3_ctx_options co = sam3_ctx_options_default();
    static taps tp;
    unsigned char *rgb;
    int pw, ph, pc, nf, np, f, p, n_out = 0;
    char key[64];
    if (!dump_open(&d, ref)) {
        t_check(0, "cannot read %s", ref);
        return;
    }
    { /* a --fullsize dump holds the streaming mode alone (concept.modes "s") */
        const sam3__cfg *e = sam3__file_cfg(&d.f, "concept.modes");
        if (e && e->type == SAM3__T_STR && !memchr(e->data, mode[0], e->count)) {
            printf("test_concept: %s has no \"%s\" mode: not compared\n", ref, mode);
            dump_close(&d);
            return;
        }
    }
    rgb = stbi_load(photo, &pw, &ph, &pc, 3);
    if (!rgb) {
        printf("test_concept: %s not found: parity against HF skipped\n", photo);
        t_skip++;
        dump_close(&d);
        return;
    }
    t_check(sam3_load(model, NULL, &m) == SAM3_OK, "load %s", model);
    if (!m) goto out;
    co.tap = tap_fn;
    co.tap_user = &tp;
    t_check(sam3_ctx_new(m, &co, &c) == SAM3_OK, "ctx");
    if (!c) goto out;
    o.detection_threshold = (float)cnum(&d, "concept.det_thresh", 0.5);
    o.new_object_threshold = (float)cnum(&d, "concept.new_det_thresh", 0.7);
    o.match_iou = (float)cnum(&d, "concept.assoc_iou", 0.1);
    o.track_match_iou = (float)cnum(&d, "concept.trk_assoc_iou", 0.5);
    o.recondition_score = (float)cnum(&d, "concept.high_conf", 0.8);
    o.recondition_iou = (float)cnum(&d, "concept.high_iou", 0.8);
    o.recondition_every = (int)cnum(&d, "concept.recond_every", 16);
    o.occlusion_iou = (float)cnum(&d, "concept.occl_iou", 0.7);
    o.nms_iou = cnum(&d, "concept.hf_nms", 0) ? (float)cnum(&d, "concept.nms_thresh", 0.1) : -1.0f;
    o.fill_hole_area = cnum(&d, "concept.hf_fill", 0) ? (int)cnum(&d, "concept.fill_area", 16) : -1;
    if (cnum(&d, "concept.max_objects", 0) <= SAM3_MAX_TRACKED_OBJECTS) o.max_objects = (int)cnum(&d, "concept.max_objects", 0);
    if (mode[0] == 'c') {
        o.hotstart_delay = (int)cnum(&d, "concept.hs_delay", 15);
        o.hotstart_unmatch = (int)cnum(&d, "concept.hs_unmatch", 8);
        o.hotstart_dup = (int)cnum(&d, "concept.hs_dup", 8);
        /* HF's keep-alive suppression is not implemented; the dump ran with it off */
        t_check(cnum(&d, "concept.hs_suppress_only", 1) != 0, "the dump ran with suppress_unmatched_only_within_hotstart");
    }
    t_check(sam3_concept_tracker_new(c, &o, &ct) == SAM3_OK, "sam3_concept_tracker_new: %s", sam3_ctx_last_error(c));
    if (!ct) goto out;
    np = (int)cnum(&d, "concept.n_prompts", 0);
    for (p = 0; p < np; p++) {
        const sam3__cfg *e;
        char text[256];
        int idx = -1;
        snprintf(key, sizeof(key), "concept.prompt.%d", p);
        e = sam3__file_cfg(&d.f, key);
        if (!e || e->type != SAM3__T_STR || e->count >= sizeof(text)) {
            t_check(0, "dump lacks %s", key);
            goto out;
        }
        memcpy(text, e->data, e->count);
        text[e->count] = 0;
        t_check(sam3_concept_tracker_add_text(ct, text, &idx) == SAM3_OK && idx == p, "prompt %d \"%s\" -> index %d", p, text, idx);
    }
    nf = (int)cnum(&d, "concept.frames", 0);
    t_check(nf >= 10, "the dump has %d frames", nf);
    for (f = 0; f < nf; f++) {
        sam3_concept_tracker_result fr;
        int w, h;
        unsigned char *img = vf_frame(rgb, pw, ph, f, nf, &w, &h);
        sam3_result rc;
        snprintf(key, sizeof(key), "frame.%d.crc32", f);
        if (!img || (uint32_t)cnum(&d, key, -1) != vf_crc32(img, (size_t)w * h * 3)) {
            t_check(0, "frame %d: pixels differ from the reference's (CRC-32): a different photo or decoder", f);
            free(img);
            break;
        }
        taps_clear(&tp);
        rc = sam3_concept_tracker_push_frame(ct, img, w, h, w * 3, SAM3_RGB8, &fr);
        free(img);
        t_check(rc == SAM3_OK, "frame %d: push: %s", f, sam3_ctx_last_error(c));
        if (rc != SAM3_OK) break;
        if (mode[0] == 's') compare_internals(&d, ct, &tp, f);
        /* clip mode: frame f - (delay - 1) comes out, none before */
        t_check(fr.frame == f - SAM3__MAX(o.hotstart_delay - 1, 0) || (fr.frame == -1 && f < o.hotstart_delay - 1),
                "%s: push %d gives frame %d", mode, f, fr.frame);
        if (fr.frame < 0) continue;
        t_check(fr.frame == n_out, "%s: frame %d comes out in order (%d expected)", mode, fr.frame, n_out);
        n_out++;
        compare(&d, mode, &fr);
    }
    for (;;) { /* the frames still held back */
        sam3_concept_tracker_result fr;
        sam3_result rc = sam3_concept_tracker_flush(ct, &fr);
        t_check(rc == SAM3_OK, "%s: flush: %s", mode, sam3_ctx_last_error(c));
        if (rc != SAM3_OK || fr.frame < 0) break;
        t_check(fr.frame == n_out, "%s: flush gives frame %d (%d expected)", mode, fr.frame, n_out);
        n_out++;
        compare(&d, mode, &fr);
    }
    t_check(n_out == nf, "%s: %d of %d frames came out", mode, n_out, nf);
out:
    taps_clear(&tp);
    sam3_concept_tracker_free(ct);
    sam3_ctx_free(c);
    sam3_free(m);
    stbi_image_free(rgb);
    dump_close(&d);
}

/* Bad input leaves the tracker usable; a frame where nothing is detected is an empty list, not an
   error. */
static void test_api(const char *model) {
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_concept_tracker *ct = NULL;
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    sam3_concept_tracker_result fr;
    unsigned char img[64 * 48 * 3];
    int i, idx = -1;
    for (i = 0; i < (int)sizeof(img); i++) img[i] = (unsigned char)(i * 7 + (i / 3) * 13);
    if (sam3_load(model, NULL, &m) != SAM3_OK || sam3_ctx_new(m, NULL, &c) != SAM3_OK) {
        t_check(0, "load %s", model);
        goto out;
    }
    t_check(sam3_concept_tracker_new(c, NULL, NULL) == SAM3_ERR_INVALID_ARG, "new: NULL out");
    o.detection_threshold = 0.99f; /* random weights score ~0.3: nothing is ever detected */
    t_check(sam3_concept_tracker_new(c, &o, &ct) == SAM3_OK && ct, "new");
    if (!ct) goto out;
    t_check(sam3_concept_tracker_push_frame(ct, img, 64, 48, 64 * 3, SAM3_RGB8, &fr) == SAM3_ERR_INVALID_ARG, "push before any prompt: %s",
            sam3_ctx_last_error(c));
    t_check(sam3_concept_tracker_add_text(ct, "", &idx) == SAM3_ERR_INVALID_ARG, "empty prompt rejected");
    t_check(sam3_concept_tracker_add_text(ct, NULL, &idx) == SAM3_ERR_INVALID_ARG, "NULL prompt rejected");
    t_check(sam3_concept_tracker_add_text(ct, "a cat", &idx) == SAM3_OK && idx == 0, "first prompt -> 0");
    t_check(sam3_concept_tracker_add_text(ct, "a dog", &idx) == SAM3_OK && idx == 1, "second prompt -> 1");
    t_check(sam3_concept_tracker_add_text(ct, "a cat", &idx) == SAM3_OK && idx == 0, "the same text again -> its index");
    t_check(sam3_concept_tracker_push_frame(ct, img, 0, 48, 64 * 3, SAM3_RGB8, &fr) == SAM3_ERR_INVALID_ARG, "zero-width frame rejected");
    t_check(sam3_concept_tracker_push_frame(ct, NULL, 64, 48, 64 * 3, SAM3_RGB8, &fr) == SAM3_ERR_INVALID_ARG, "NULL pixels rejected");
    t_check(sam3_concept_tracker_push_frame(ct, img, 64, 48, 64 * 3, SAM3_RGB8, NULL) == SAM3_ERR_INVALID_ARG, "NULL out rejected");
    for (i = 0; i < 2; i++) {
        sam3_result rc = sam3_concept_tracker_push_frame(ct, img, 64, 48, 64 * 3, SAM3_RGB8, &fr);
        t_check(rc == SAM3_OK && fr.frame == i && fr.n_objects == 0 && fr.width == 64 && fr.height == 48,
                "frame %d with nothing detected: rc %d, frame %d, %d objects", i, (int)rc, fr.frame, fr.n_objects);
    }
    { /* a click tracker on the same context takes the frame the concept tracker encoded */
        sam3_tracker *tr = NULL;
        sam3_tracker_result tres;
        sam3_ctx *c2 = NULL;
        sam3_result rc;
        t_check(sam3_ctx_new(m, NULL, &c2) == SAM3_OK && sam3_tracker_new(c2, NULL, &tr) == SAM3_OK, "tracker on a fresh context");
        t_check(tr && sam3_tracker_push_encoded(tr, &tres) == SAM3_ERR_NO_IMAGE, "push_encoded with nothing encoded: %s", sam3_ctx_last_error(c2));
        sam3_tracker_free(tr);
        sam3_ctx_free(c2);
        tr = NULL;
        t_check(sam3_tracker_new(c, NULL, &tr) == SAM3_OK, "tracker beside the concept tracker");
        memset(&tres, 0, sizeof(tres));
        rc = tr ? sam3_tracker_push_encoded(tr, &tres) : SAM3_ERR_INVALID_ARG;
        t_check(rc == SAM3_OK && tres.frame == 0 && tres.width == 64 && tres.height == 48, "push_encoded after a concept frame: frame %d, %dx%d",
                tres.frame, tres.width, tres.height);
        t_check(sam3_tracker_push_encoded(NULL, &tres) == SAM3_ERR_INVALID_ARG && sam3_tracker_push_encoded(tr, NULL) == SAM3_ERR_INVALID_ARG,
                "push_encoded: NULL rejected");
        sam3_tracker_free(tr);
    }
    t_check(sam3_concept_tracker_flush(ct, &fr) == SAM3_OK && fr.frame == -1 && fr.n_objects == 0, "streaming mode: nothing to flush");
    t_check(sam3_concept_tracker_flush(ct, NULL) == SAM3_ERR_INVALID_ARG && sam3_concept_tracker_flush(NULL, &fr) == SAM3_ERR_INVALID_ARG,
            "flush: NULL rejected");
    sam3_concept_tracker_free(ct);
    ct = NULL;
    o.hotstart_delay = 1025;
    t_check(sam3_concept_tracker_new(c, &o, &ct) == SAM3_ERR_INVALID_ARG && !ct, "hotstart_delay above 1024 rejected");
    o.hotstart_delay = 3; /* clip mode: frames 0, 1 held back, then one out per push, the last two flushed */
    t_check(sam3_concept_tracker_new(c, &o, &ct) == SAM3_OK && ct, "new, clip mode");
    if (!ct) goto out;
    t_check(sam3_concept_tracker_add_text(ct, "a cat", &idx) == SAM3_OK, "clip mode prompt");
    for (i = 0; i < 4; i++) {
        sam3_result rc = sam3_concept_tracker_push_frame(ct, img, 64, 48, 64 * 3, SAM3_RGB8, &fr);
        t_check(rc == SAM3_OK && fr.frame == (i < 2 ? -1 : i - 2) && fr.n_objects == 0, "clip push %d gives frame %d", i, fr.frame);
    }
    for (i = 2; i < 5; i++) {
        sam3_result rc = sam3_concept_tracker_flush(ct, &fr);
        t_check(rc == SAM3_OK && fr.frame == (i < 4 ? i : -1), "flush %d gives frame %d", i - 2, fr.frame);
    }
out:
    sam3_concept_tracker_free(ct);
    sam3_concept_tracker_free(NULL);
    sam3_ctx_free(c);
    sam3_free(m);
}

/* Box exemplars as concept prompts. HF 5.17's Sam3VideoModel takes text only, so there is no
   reference to compare with: the detector must see on each frame what sam3_segment sees on that
   frame alone with the same prompt (with NMS off, every detection above the threshold, in query
   order, the same scores and mask logits to the bit), and the prompts are checked as
   sam3_segment checks them. */
static void test_exemplars(const char *model) {
    sam3_model *m = NULL;
    sam3_ctx *c = NULL, *c2 = NULL;
    sam3_concept_tracker *ct = NULL;
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    static unsigned char img[2][64 * 48 * 3];
    const sam3_box boxes[2] = {{10, 8, 40, 30}, {40, 20, 60, 44}}, nan_box = {10, 8, NAN, 30};
    const int labels[2] = {1, 0}, bad_label[1] = {2};
    sam3_segment_prompt pr[2], q;
    sam3_result rc;
    int f, i, p, idx = -1;
    for (f = 0; f < 2; f++)
        for (i = 0; i < 64 * 48 * 3; i++) img[f][i] = (unsigned char)((i + 9 * f) * 7 + (i / 3) * 13 + (i / 192) * 5 * f);
    memset(pr, 0, sizeof(pr));
    pr[0].text = "a cat"; /* text with a positive and a negative exemplar */
    pr[0].boxes = boxes;
    pr[0].box_labels = labels;
    pr[0].n_boxes = 2;
    pr[1].boxes = boxes; /* one exemplar, no text ("visual"), labels NULL: positive */
    pr[1].n_boxes = 1;
    if (sam3_load(model, NULL, &m) != SAM3_OK || sam3_ctx_new(m, NULL, &c) != SAM3_OK || sam3_ctx_new(m, NULL, &c2) != SAM3_OK) {
        t_check(0, "load %s", model);
        goto out;
    }
    o.detection_threshold = o.new_object_threshold = 0.4f; /* random weights: a few of the 200 queries */
    o.nms_iou = -1;
    if (sam3_concept_tracker_new(c, &o, &ct) != SAM3_OK) {
        t_check(0, "exemplars: new: %s", sam3_ctx_last_error(c));
        goto out;
    }
    for (p = 0; p < 2; p++) {
        rc = sam3_concept_tracker_add_prompt(ct, &pr[p], &idx);
        t_check(rc == SAM3_OK && idx == p, "exemplar prompt %d -> %d", p, idx);
    }
    q = pr[0];
    rc = sam3_concept_tracker_add_prompt(ct, &q, &idx);
    t_check(rc == SAM3_OK && idx == 0, "the same text and boxes again -> %d", idx);
    q.box_labels = NULL;
    rc = sam3_concept_tracker_add_prompt(ct, &q, &idx);
    t_check(rc == SAM3_OK && idx == 2, "the same boxes, other labels -> a new prompt (%d)", idx);
    memset(&q, 0, sizeof(q));
    t_check(sam3_concept_tracker_add_prompt(ct, &q, &idx) == SAM3_ERR_INVALID_ARG, "an empty prompt: %s", sam3_ctx_last_error(c));
    q.n_boxes = 1;
    t_check(sam3_concept_tracker_add_prompt(ct, &q, &idx) == SAM3_ERR_INVALID_ARG, "n_boxes 1, boxes NULL: %s", sam3_ctx_last_error(c));
    q.boxes = &nan_box;
    t_check(sam3_concept_tracker_add_prompt(ct, &q, &idx) == SAM3_ERR_INVALID_ARG, "a NaN box: %s", sam3_ctx_last_error(c));
    q.boxes = boxes;
    q.box_labels = bad_label;
    t_check(sam3_concept_tracker_add_prompt(ct, &q, &idx) == SAM3_ERR_INVALID_ARG, "label 2: %s", sam3_ctx_last_error(c));
    q.box_labels = NULL;
    q.n_boxes = SAM3_MAX_BOXES + 1;
    t_check(sam3_concept_tracker_add_prompt(ct, &q, &idx) == SAM3_ERR_INVALID_ARG, "too many boxes: %s", sam3_ctx_last_error(c));
    t_check(sam3_concept_tracker_add_prompt(ct, NULL, &idx) == SAM3_ERR_INVALID_ARG && sam3_concept_tracker_add_prompt(NULL, &pr[0], &idx) == SAM3_ERR_INVALID_ARG,
            "add_prompt: NULL rejected");
    sam3_concept_tracker_free(ct); /* again with the two prompts only (a third would cost a detector pass a frame) */
    ct = NULL;
    if (sam3_concept_tracker_new(c, &o, &ct) != SAM3_OK || sam3_concept_tracker_add_prompt(ct, &pr[0], NULL) != SAM3_OK ||
        sam3_concept_tracker_add_prompt(ct, &pr[1], NULL) != SAM3_OK) {
        t_check(0, "exemplars: %s", sam3_ctx_last_error(c));
        goto out;
    }
    for (f = 0; f < 2; f++) {
        sam3_concept_tracker_result fr;
        int nd = 0, bad = 0, per[2] = {0, 0};
        const size_t lp = (size_t)4 * m->trk.grid * 4 * m->trk.grid;
        if (sam3_concept_tracker_push_frame(ct, img[f], 64, 48, 64 * 3, SAM3_RGB8, &fr) != SAM3_OK || sam3_set_image(c2, img[f], 64, 48, 64 * 3, SAM3_RGB8) != SAM3_OK) {
            t_check(0, "exemplars: frame %d: %s / %s", f, sam3_ctx_last_error(c), sam3_ctx_last_error(c2));
            goto out;
        }
        for (p = 0; p < 2; p++) {
            sam3_segment_options so = sam3_segment_options_default();
            sam3_segment_result seg;
            so.score_threshold = o.detection_threshold;
            so.no_masks = so.low_res = 1;
            if (sam3_segment(c2, &pr[p], &so, &seg) != SAM3_OK) {
                t_check(0, "sam3_segment: %s", sam3_ctx_last_error(c2));
                goto out;
            }
            for (i = 0; i < seg.n_instances && nd < (int)ct->cap_det; i++, nd++)
                bad += ct->det_prompt[nd] != p || ct->det_prob[nd] != seg.instances[i].score ||
                       memcmp(ct->det_low + (size_t)nd * lp, seg.instances[i].low_res_logits, lp * sizeof(float)) != 0;
            per[p] = seg.n_instances;
        }
        t_check(nd > 0 && bad == 0, "frame %d: the detector's %d + %d detections are sam3_segment's on the frame (%d differ)", f, per[0], per[1], bad);
        if (f == 0) {
            bad = 0;
            for (i = 0; i < ct->t->n_obj && i < nd; i++) bad += ct->prompt[i] != ct->det_prompt[i] || ct->score[i] != ct->det_prob[i];
            t_check(ct->t->n_obj == nd && bad == 0, "frame 0: every detection starts an object (%d objects, %d detections)", ct->t->n_obj, nd);
        }
    }
out:
    sam3_concept_tracker_free(ct);
    sam3_ctx_free(c2);
    sam3_ctx_free(c);
    sam3_free(m);
}

static int g_abort_after = -1; /* abort at the n-th poll (-1: never) */
static int g_polls;             /* polls so far */
static int abort_fn(void *user) {
    (void)user;
    g_polls++;
    if (g_abort_after < 0) return 0;
    return g_abort_after-- == 0;
}

/* What a frame gave, to compare a run with aborted frames against a clean one. */
#define AB_FRAMES 5
#define AB_MAX 64
typedef struct ab_frame {
    int n, id[AB_MAX];
    int64_t area[AB_MAX];
    double logit_sum[AB_MAX];
} ab_frame;
static void ab_take(const sam3_concept_tracker_result *fr, ab_frame *r) {
    int i, q;
    r->n = fr->n_objects < AB_MAX ? fr->n_objects : AB_MAX;
    for (i = 0; i < r->n; i++) {
        r->id[i] = fr->objects[i].id;
        r->area[i] = fr->objects[i].area;
        r->logit_sum[i] = 0;
        for (q = 0; q < fr->low_res_width * fr->low_res_height; q++) r->logit_sum[i] += fr->objects[i].low_res_logits[q];
    }
}

/* An abort inside a frame (early: in the detector; late: in the memory encoders) leaves the tracker
   as before it: the frame pushed again gives what a run without aborts gave. Synthetic frames and a
   threshold low enough for the random weights to find objects. */
static void test_abort(const char *model) {
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    static unsigned char img[AB_FRAMES][64 * 48 * 3];
    static ab_frame clean[AB_FRAMES];
    int run, f, i, total = 0;
    for (f = 0; f < AB_FRAMES; f++)
        for (i = 0; i < 64 * 48 * 3; i++) img[f][i] = (unsigned char)((i + 9 * f) * 7 + (i / 3) * 13 + (i / 192) * 5 * f);
    co.abort_fn = abort_fn;
    if (sam3_load(model, NULL, &m) != SAM3_OK || sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "load %s", model);
        goto out;
    }
    o.detection_threshold = o.new_object_threshold = 0.3f;
    for (run = 0; run < 2; run++) {
        sam3_concept_tracker *ct = NULL;
        if (sam3_concept_tracker_new(c, &o, &ct) != SAM3_OK || sam3_concept_tracker_add_text(ct, "a cat", NULL) != SAM3_OK ||
            sam3_concept_tracker_add_text(ct, "the red car", NULL) != SAM3_OK) {
            t_check(0, "abort test: tracker: %s", sam3_ctx_last_error(c));
            sam3_concept_tracker_free(ct);
            goto out;
        }
        for (f = 0; f < AB_FRAMES; f++) {
            sam3_concept_tracker_result fr;
            ab_frame got;
            sam3_result rc;
            if (run == 1 && (f == 2 || f == 3)) {
                const int late = g_polls > 2 ? g_polls - 2 : 0;
                g_abort_after = f == 2 ? late : 3;
                rc = sam3_concept_tracker_push_frame(ct, img[f], 64, 48, 64 * 3, SAM3_RGB8, &fr);
                g_abort_after = -1;
                t_check(rc == SAM3_ERR_ABORTED, "frame %d aborted %s: %s", f, f == 2 ? "late" : "early", sam3_result_string(rc));
            }
            g_polls = 0;
            rc = sam3_concept_tracker_push_frame(ct, img[f], 64, 48, 64 * 3, SAM3_RGB8, &fr);
            if (rc != SAM3_OK || fr.frame != f) {
                t_check(0, "abort test run %d frame %d: %s, frame %d", run, f, sam3_ctx_last_error(c), fr.frame);
                break;
            }
            if (run == 0) {
                ab_take(&fr, &clean[f]);
                total += clean[f].n;
            } else {
                int same;
                ab_take(&fr, &got);
                same = got.n == clean[f].n;
                for (i = 0; same && i < got.n; i++)
                    same = got.id[i] == clean[f].id[i] && got.area[i] == clean[f].area[i] && got.logit_sum[i] == clean[f].logit_sum[i];
                t_check(same, "frame %d after %s: %d objects, as without aborts (%d)", f, f == 2 || f == 3 ? "an abort" : "no abort", got.n,
                        clean[f].n);
            }
        }
        if (run == 0) t_check(total > 0, "abort test: %d objects over %d frames (some needed)", total, AB_FRAMES);
        sam3_concept_tracker_free(ct);
    }
out:
    sam3_ctx_free(c);
    sam3_free(m);
}

/* --frame mode, for tests/test_track.sh (what `sam3 track -t ... --hotstart N` must write): the
   concept tracker on the given frames, every object of every frame it gives out (pushes, then
   flush) as a line "frame id prompt area score tracker_score x0 y0 x1 y1 crc32-of-the-0/1-mask".
   Prompts: --text T, and --box x0,y0,x1,y1,label for the --text before it (before any: a prompt
   of boxes only), as sam3 track's -t and --concept-box; its context as sam3 track's (--threads N,
   one BLAS thread: the BLAS's own threads sum products in another order). */
#define FP_BOXES 8
static int print_frames(const char *model, char **frames, int n_frames, const sam3_segment_prompt *prompts, int n_prompts, int hotstart,
                        float threshold, int threads) {
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_concept_tracker *ct = NULL;
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    int f, i, ok = 1;
    o.hotstart_delay = hotstart;
    o.detection_threshold = o.new_object_threshold = threshold;
    co.n_threads = threads;
    co.blas_threads = 1;
    if (sam3_load(model, NULL, &m) != SAM3_OK || sam3_ctx_new(m, &co, &c) != SAM3_OK || sam3_concept_tracker_new(c, &o, &ct) != SAM3_OK) ok = 0;
    for (i = 0; ok && i < n_prompts; i++) ok = sam3_concept_tracker_add_prompt(ct, &prompts[i], NULL) == SAM3_OK;
    for (f = 0; ok && f <= n_frames; f++) {
        sam3_concept_tracker_result fr;
        int w, h, ch;
        if (f < n_frames) {
            unsigned char *img = stbi_load(frames[f], &w, &h, &ch, 3);
            ok = img && sam3_concept_tracker_push_frame(ct, img, w, h, w * 3, SAM3_RGB8, &fr) == SAM3_OK;
            stbi_image_free(img);
        } else {
            ok = sam3_concept_tracker_flush(ct, &fr) == SAM3_OK;
            f -= fr.frame >= 0; /* flush until nothing is left */
        }
        for (i = 0; ok && i < fr.n_objects; i++) {
            const sam3_concept_tracker_object *ob = &fr.objects[i];
            printf("%d %d %d %lld %.6g %.6g %.0f %.0f %.0f %.0f %u\n", fr.frame, ob->id, ob->prompt, (long long)ob->area, ob->score, ob->tracker_score,
                   ob->box.x0, ob->box.y0, ob->box.x1, ob->box.y1, (unsigned)vf_crc32(ob->mask, (size_t)fr.width * fr.height));
        }
    }
    if (!ok) fprintf(stderr, "test_concept --frame: %s\n", c ? sam3_ctx_last_error(c) : "cannot load the model");
    sam3_concept_tracker_free(ct);
    sam3_ctx_free(c);
    sam3_free(m);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *ops = NULL, *model = NULL, *ref = NULL, *photo = NULL;
    char *frames[64];
    static sam3_segment_prompt fp[SAM3_MAX_CONCEPT_PROMPTS];
    static sam3_box fbox[SAM3_MAX_CONCEPT_PROMPTS][FP_BOXES];
    static int flab[SAM3_MAX_CONCEPT_PROMPTS][FP_BOXES];
    int i, n_frames = 0, n_fp = 0, hotstart = 0, threads = 0, parity_only = 0;
    float threshold = 0;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--parity-only")) parity_only = 1;
    for (i = 1; i + 1 < argc; i += 2) {
        while (i < argc && !strcmp(argv[i], "--parity-only")) i++;
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--ops")) ops = argv[i + 1];
        else if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--ref")) ref = argv[i + 1];
        else if (!strcmp(argv[i], "--photo")) photo = argv[i + 1];
        else if (!strcmp(argv[i], "--frame") && n_frames < 64) frames[n_frames++] = argv[i + 1];
        else if (!strcmp(argv[i], "--text") && n_fp < SAM3_MAX_CONCEPT_PROMPTS) {
            fp[n_fp].boxes = fbox[n_fp];
            fp[n_fp].box_labels = flab[n_fp];
            fp[n_fp++].text = argv[i + 1];
        } else if (!strcmp(argv[i], "--box")) {
            sam3_segment_prompt *q;
            sam3_box *b;
            if (!n_fp) { /* boxes only */
                fp[0].boxes = fbox[0];
                fp[0].box_labels = flab[0];
                n_fp = 1;
            }
            q = &fp[n_fp - 1];
            b = &fbox[n_fp - 1][q->n_boxes];
            if (q->n_boxes == FP_BOXES ||
                sscanf(argv[i + 1], "%f,%f,%f,%f,%d", &b->x0, &b->y0, &b->x1, &b->y1, &flab[n_fp - 1][q->n_boxes]) != 5)
                return 2;
            q->n_boxes++;
        }
        else if (!strcmp(argv[i], "--hotstart")) hotstart = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threshold")) threshold = (float)atof(argv[i + 1]);
    }
    if (n_frames) return model ? print_frames(model, frames, n_frames, fp, n_fp, hotstart, threshold, threads) : 2;
    sam3__allocator_resolve(NULL, &g_alloc);
    if (ops) test_ops(ops);
    if (model && ref && photo) {
        test_stream(model, ref, photo, "s");
        test_stream(model, ref, photo, "c");
    }
    if (model && !parity_only) test_api(model);
    if (model && !parity_only) test_abort(model);
    if (model && !parity_only) test_exemplars(model);
    return t_done("test_concept");
}
