/* Parity with Hugging Face transformers 5.17 on tiny random-weight models.

   For each configuration NAME given on the command line, loads build/NAME.sam3 (converted by
   tools/convert.py from tests/data/NAME/) and compares every stage against the reference dumps
   in tests/data/NAME/ (written by tools/make_reference.py), printing the relative error
   ||c - ref|| / ||ref|| of each stage. f32 stages fail above 1e-4; the resized uint8 image must be
   bit-identical.

   --bf16 (after --model FILE --data DIR): the products in bf16 (SAM3_PRECISION_BF16; a file
   converted with --dtype bf16 runs them so anyway) against the same f32 reference, with the
   issue's bars instead: every instance the reference keeps kept (one whose score is within the
   score tolerance of the threshold may fall on the other side), scores, IoU predictions and
   object scores within 2e-2, masks IoU >= 0.98 on average and >= 0.95 at worst; the stages only
   within 5e-2 relative (a guard against gross errors). The measured figures end the output.

   --image-size N (after --data DIR, before --bf16): loads FILE with sam3_load_options.image_size
   = N, against dumps made by HF with that config.image_size (make_reference.py --image-size);
   sides that are no multiple of the patch, or below two patches, must be refused. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"
#include "test_dump.h"

static int g_bf16;      /* --bf16 */
static int g_image_size; /* --image-size N: sam3_load_options.image_size */
#define TOL (g_bf16 ? 5e-2 : 1e-4)      /* f32 stages */
#define TOL_MASK (g_bf16 ? 5e-2 : 1e-3) /* mask and semantic logits (the bar) */
#define MIN_IOU (g_bf16 ? 0.95 : 0.99)
#define BF16_SCORE 2e-2     /* bf16: scores, IoU predictions, object scores (absolute) */
#define BF16_MEAN_IOU 0.98  /* bf16: mean mask IoU over the run */
/* bf16 figures over the run */
static struct { int masks, flips; double iou_sum, iou_worst, score_diff; } g_bf;
static void bf16_mask(double iou) {
    g_bf.masks++;
    g_bf.iou_sum += iou;
    if (g_bf.masks == 1 || iou < g_bf.iou_worst) g_bf.iou_worst = iou;
}
static void bf16_score(double a, double b) {
    const double d = fabs(a - b);
    if (d > g_bf.score_diff) g_bf.score_diff = d;
}


/* --bf16-attention: the ViT attention in bf16 from AVX512-BF16 on (by default only with AMX),
   so that a CPU without AMX checks that path of the model too; and every other self-attention
   that can (by default only those over 1024 tokens or more: the full-size DETR encoder's) */
static int g_bf16_att;
static sam3_result test_ctx_new(const sam3_model *m, const sam3_ctx_options *o, sam3_ctx **c) {
    const sam3_result rc = sam3_ctx_new(m, o, c);
    if (rc == SAM3_OK && g_bf16_att) (*c)->bka = SAM3__BK_AVX512, (*c)->att_min = 0;
    return rc;
}
#define sam3_ctx_new test_ctx_new

/* One thread pool: sam3 splits products over its threads with BLAS single-threaded (fast and free
   of oversubscription with Debian's pthread OpenBLAS; also exercises the split path). */
static sam3_ctx_options test_ctx_options(void) {
    sam3_ctx_options o = sam3_ctx_options_default();
    o.blas_threads = 1;
    if (g_bf16) o.precision = SAM3_PRECISION_BF16;
    return o;
}

static size_t t_numel(const sam3__tensor *t) {
    size_t n = 1;
    int i;
    for (i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

/* Compares every tapped tensor the dump also has. */
typedef struct tapper {
    const char *cfg;
    const dump *d, *d2; /* looked up in d, then in d2 */
    int seen, compare;
    float *copy_out; /* when set, vit.out is copied here */
} tapper;

static void tap_compare(void *user, const char *name, const float *data, int nd, const int64_t *shape) {
    tapper *tp = (tapper *)user;
    const sam3__tensor *t;
    size_t n = 1;
    int i;
    double rel;
    for (i = 0; i < nd; i++) n *= (size_t)shape[i];
    if (tp->copy_out && !strcmp(name, "vit.out")) memcpy(tp->copy_out, data, n * sizeof(float));
    if (!tp->compare || (!(t = dump_get(tp->d, name, 0)) && !(tp->d2 && (t = dump_get(tp->d2, name, 0))))) return;
    tp->seen++;
    if (t_numel(t) != n) {
        t_check(0, "%s %-20s element count %lu, reference %lu", tp->cfg, name, (unsigned long)n, (unsigned long)t_numel(t));
        return;
    }
    /* object-score logits: relative to at least 1 (t_relerr_floor says why) */
    rel = strstr(name, "object_score") ? t_relerr_floor(data, (const float *)t->data, n, 1.0) : t_relerr(data, (const float *)t->data, n);
    {
        double tol = strstr(name, "pred_masks") || strstr(name, "semantic_seg") ? TOL_MASK : TOL;
        printf("  %s %-22s rel %.2e  maxabs %.2e\n", tp->cfg, name, rel, t_maxabs(data, (const float *)t->data, n));
        /* bf16: or within the score tolerance (IoU predictions and object scores near 0) */
        t_check(rel <= tol || (g_bf16 && t_maxabs(data, (const float *)t->data, n) <= BF16_SCORE), "%s %s relative error %.3g > %g",
                tp->cfg, name, rel, tol);
    }
}

static void test_vision(const char *cfg, const char *dir, sam3_model *m) {
    char path[512];
    dump d;
    const sam3__tensor *img, *resized, *pv;
    int W, H, j;
    sam3_ctx *c;
    sam3_ctx_options co = test_ctx_options();
    tapper tp;
    sam3_result rc;

    snprintf(path, sizeof(path), "%s/ref_vision.sam3", dir);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, skipped", cfg, path);
        t_skip++;
        return;
    }
    img = dump_get(&d, "input.image", SAM3__DT_U8);
    resized = dump_get(&d, "pre.resized", SAM3__DT_U8);
    pv = dump_get(&d, "pre.pixel_values", SAM3__DT_F32);
    if (!img || !resized || !pv || img->ndim != 3 || img->shape[2] != 3) {
        t_check(0, "%s: dump lacks input.image / pre.resized / pre.pixel_values", cfg);
        dump_close(&d);
        return;
    }
    H = (int)img->shape[0];
    W = (int)img->shape[1];

    /* Preprocessing: the uint8 resize must be bit-identical, the normalisation too. */
    rc = sam3_ctx_new(m, &co, &c);
    t_check(rc == SAM3_OK, "%s: sam3_ctx_new: %s", cfg, sam3_result_string(rc));
    if (rc != SAM3_OK) {
        dump_close(&d);
        return;
    }
    {
        const int S = m->proc.image;
        unsigned char *rgb = (unsigned char *)malloc((size_t)3 * W * H), *u8 = (unsigned char *)malloc((size_t)3 * S * S);
        float *pix = (float *)malloc(sizeof(float) * 3 * S * S);
        size_t i, bad = 0;
        sam3__begin(c);
        sam3__to_planar_rgb(c, (const uint8_t *)img->data, W, H, W * 3, 3, rgb);
        rc = sam3__preprocess(c, rgb, W, H, pix, u8);
        sam3__end(c, rc);
        t_check(rc == SAM3_OK && (int)resized->shape[1] == S, "%s: preprocess ran", cfg);
        for (i = 0; i < (size_t)3 * S * S; i++) bad += u8[i] != ((const unsigned char *)resized->data)[i];
        printf("  %s %-22s %lu of %lu bytes differ (%dx%d -> %dx%d)\n", cfg, "pre.resized", (unsigned long)bad,
               (unsigned long)(3 * S * S), W, H, S, S);
        t_check(bad == 0, "%s: uint8 resize differs from the reference in %lu bytes", cfg, (unsigned long)bad);
        printf("  %s %-22s maxabs %.2e\n", cfg, "pre.pixel_values", t_maxabs(pix, (const float *)pv->data, (size_t)3 * S * S));
        t_check(t_maxabs(pix, (const float *)pv->data, (size_t)3 * S * S) == 0, "%s: pixel values differ", cfg);
        free(rgb);
        free(u8);
        free(pix);
    }
    sam3_ctx_free(c);

    /* The whole encoder through the public call, every stage tapped. */
    memset(&tp, 0, sizeof(tp));
    tp.cfg = cfg;
    tp.d = &d;
    tp.compare = 1;
    tp.copy_out = (float *)malloc(sizeof(float) * (size_t)m->vit.grid * m->vit.grid * m->vit.hidden);
    co.tap = tap_compare;
    co.tap_user = &tp;
    rc = sam3_ctx_new(m, &co, &c);
    if (rc == SAM3_OK) rc = sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8);
    t_check(rc == SAM3_OK, "%s: sam3_set_image: %s %s", cfg, sam3_result_string(rc), c ? sam3_ctx_last_error(c) : "");
    t_check(tp.seen >= m->vit.layers + 3 + m->neck.n_kept, "%s: %d stages compared", cfg, tp.seen);

    /* Sine position maps of every level, including the discarded one. */
    for (j = 0; j < 8; j++) {
        char name[32];
        const sam3__tensor *t;
        snprintf(name, sizeof(name), "fpn_pos.%d", j);
        t = dump_get(&d, name, SAM3__DT_F32);
        if (!t) break;
        {
            int D = (int)t->shape[0], h = (int)t->shape[1], w = (int)t->shape[2], y, ch;
            float *tok = (float *)malloc(sizeof(float) * D * h * w), *cm = (float *)malloc(sizeof(float) * D * h * w);
            double rel;
            sam3__sine_pos2d(h, w, D, tok);
            for (y = 0; y < h * w; y++)
                for (ch = 0; ch < D; ch++) cm[(size_t)ch * h * w + y] = tok[(size_t)y * D + ch];
            rel = t_relerr(cm, (const float *)t->data, (size_t)D * h * w);
            printf("  %s %-22s rel %.2e\n", cfg, name, rel);
            t_check(rel <= TOL, "%s %s relative error %.3g", cfg, name, rel);
            free(tok);
            free(cm);
        }
    }

    /* Other pixel layouts of the same image give the same features: RGBA with junk alpha and a
       padded stride, and gray (compared with its RGB replication). */
    if (rc == SAM3_OK) {
        int stride = W * 4 + 12, x, y;
        unsigned char *rgba = (unsigned char *)malloc((size_t)stride * H);
        float *ref = (float *)malloc(sizeof(float) * (size_t)m->vit.grid * m->vit.grid * m->vit.hidden);
        size_t n = (size_t)m->vit.grid * m->vit.grid * m->vit.hidden;
        memset(rgba, 0xab, (size_t)stride * H); /* junk in the row padding too: it must not matter */
        memcpy(ref, tp.copy_out, n * sizeof(float));
        for (y = 0; y < H; y++)
            for (x = 0; x < W; x++) {
                memcpy(rgba + (size_t)y * stride + 4 * x, (const unsigned char *)img->data + ((size_t)y * W + x) * 3, 3);
                rgba[(size_t)y * stride + 4 * x + 3] = (unsigned char)(x * 7 + y);
            }
        tp.compare = 0;
        rc = sam3_set_image(c, rgba, W, H, stride, SAM3_RGBA8);
        t_check(rc == SAM3_OK && t_maxabs(tp.copy_out, ref, n) == 0, "%s: RGBA with stride gives the RGB result", cfg);
        {
            unsigned char *gray = (unsigned char *)malloc((size_t)W * H), *rgb3 = (unsigned char *)malloc((size_t)W * H * 3);
            float *g1 = (float *)malloc(n * sizeof(float));
            for (y = 0; y < W * H; y++) {
                gray[y] = ((const unsigned char *)img->data)[3 * y + 1];
                rgb3[3 * y] = rgb3[3 * y + 1] = rgb3[3 * y + 2] = gray[y];
            }
            rc = sam3_set_image(c, gray, W, H, W, SAM3_GRAY8);
            memcpy(g1, tp.copy_out, n * sizeof(float));
            rc = rc == SAM3_OK ? sam3_set_image(c, rgb3, W, H, W * 3, SAM3_RGB8) : rc;
            t_check(rc == SAM3_OK && t_maxabs(tp.copy_out, g1, n) == 0, "%s: gray equals its RGB replication", cfg);
            free(gray);
            free(rgb3);
            free(g1);
        }
        {
            /* A file whose q, k, v weights lie apart (older converters) takes three products
               instead of one: the same trunk output. */
            sam3__lin *saved = (sam3__lin *)malloc(sizeof(*saved) * (size_t)m->vit.layers);
            int li, fused = 0;
            double rel;
            for (li = 0; li < m->vit.layers; li++) {
                saved[li] = m->vit_w.layers[li].qkv;
                fused += saved[li].w || saved[li].wh;
                memset(&m->vit_w.layers[li].qkv, 0, sizeof(saved[li]));
            }
            t_check(fused == m->vit.layers, "%s: convert.py stores every block's q, k, v weights together (%d of %d)", cfg, fused, m->vit.layers);
            rc = sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8);
            rel = t_relerr(tp.copy_out, ref, n);
            printf("  %s %-22s rel %.2e\n", cfg, "vit.out, 3 products", rel);
            t_check(rc == SAM3_OK && rel <= 1e-6, "%s: q, k, v by three products: trunk output rel %.3g", cfg, rel);
            for (li = 0; li < m->vit.layers; li++) m->vit_w.layers[li].qkv = saved[li];
            free((void *)saved);
        }
        free(rgba);
        free(ref);
    }
    sam3_ctx_free(c);
    free(tp.copy_out);
    dump_close(&d);
}

/* Token ids (public tokenizer) and text features (on the reference ids) of every dumped prompt. */
static void test_text(const char *cfg, const char *dir, sam3_model *m) {
    char path[512], key[64];
    dump d;
    int k;
    int64_t count = 0;
    sam3_ctx *c;
    snprintf(path, sizeof(path), "%s/ref_text.sam3", dir);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, skipped", cfg, path);
        t_skip++;
        return;
    }
    {
        sam3_ctx_options o1 = test_ctx_options();
        if (sam3_ctx_new(m, &o1, &c) != SAM3_OK) {
            t_check(0, "%s: ctx", cfg);
            dump_close(&d);
            return;
        }
    }
    {
        const sam3__cfg *e = sam3__file_cfg(&d.f, "text.count");
        count = e ? e->i : 0;
    }
    for (k = 0; k < count; k++) {
        const sam3__tensor *ids, *feat;
        const char *prompt;
        int32_t mine[64];
        int n = 0, j, same;
        sam3_result rc;
        snprintf(key, sizeof(key), "text.%d.prompt", k);
        prompt = NULL;
        {
            uint32_t i2;
            for (i2 = 0; i2 < d.f.n_cfg; i2++)
                if (!strcmp(d.f.cfg[i2].key, key)) prompt = d.f.strings[i2];
        }
        snprintf(key, sizeof(key), "text.%d.ids", k);
        ids = dump_get(&d, key, SAM3__DT_I32);
        snprintf(key, sizeof(key), "text.%d.features", k);
        feat = dump_get(&d, key, SAM3__DT_F32);
        if (!prompt || !ids || !feat) {
            t_check(0, "%s: text %d missing in the dump", cfg, k);
            continue;
        }
        rc = sam3_tokenize(m, prompt, mine, 64, &n);
        same = rc >= 0 && n == (int)ids->shape[0];
        for (j = 0; same && j < n; j++) same = mine[j] == ((const int32_t *)ids->data)[j];
        t_check(same, "%s: token ids of \"%s\" differ from the reference (%s, %d ids vs %d)", cfg, prompt, sam3_result_string(rc), n,
                (int)ids->shape[0]);
        {
            const int D = m->neck.fpn, nn = (int)ids->shape[0];
            float *out = (float *)malloc(sizeof(float) * (size_t)nn * D);
            double rel;
            sam3__begin(c);
            rc = sam3__clip_text_model(c, (const int32_t *)ids->data, nn, out);
            sam3__end(c, rc);
            rel = t_relerr(out, (const float *)feat->data, (size_t)nn * D);
            printf("  %s %-22s rel %.2e  (\"%s\", %d tokens)\n", cfg, "text.features", rel, prompt, nn);
            t_check(rc == SAM3_OK && rel <= TOL, "%s: text features of \"%s\" relative error %.3g", cfg, prompt, rel);
            free(out);
        }
    }
    sam3_ctx_free(c);
    dump_close(&d);
}

/* The same prompt on a context without taps, where only the kept queries get masks and a prompt
   that keeps nothing skips the pixel decoder: the same instances, low-resolution logits and
   semantic map as the tapped run (ref, which computed all of them). */
static void test_untapped(const char *cfg, const char *name, sam3_ctx *c2, const sam3_segment_prompt *pr, const sam3_segment_options *so,
                          const sam3_segment_result *ref) {
    sam3_segment_options o2 = *so;
    sam3_segment_result s2;
    const size_t lp = (size_t)ref->low_res_width * ref->low_res_height, plane = (size_t)ref->width * ref->height;
    double worst_rel = 0, worst_iou = 1;
    int i, same;
    sam3_result rc = sam3_segment(c2, pr, &o2, &s2);
    same = rc >= 0 && s2.n_instances == ref->n_instances;
    for (i = 0; same && i < ref->n_instances; i++) {
        const sam3_instance *a = &s2.instances[i], *b = &ref->instances[i];
        double rel = t_relerr(a->low_res_logits, b->low_res_logits, lp), iou = mask_iou(a->mask, b->mask, plane);
        same = a->query == b->query && a->score == b->score && !memcmp(&a->box, &b->box, sizeof(a->box));
        if (rel > worst_rel) worst_rel = rel;
        if (iou < worst_iou) worst_iou = iou;
    }
    printf("  %s %-22s %d kept, low-res logits rel %.2e, worst mask IoU %.5f\n", cfg, "untapped", s2.n_instances, worst_rel, worst_iou);
    t_check(same, "%s %s: untapped run kept %d instances (tapped %d) or different scores / boxes", cfg, name, s2.n_instances, ref->n_instances);
    t_check(worst_rel <= 1e-6 && worst_iou >= 0.999, "%s %s: untapped masks differ (logits rel %.3g, IoU %.5f)", cfg, name, worst_rel, worst_iou);
    o2.score_threshold = 2.0f; /* above any score: nothing kept, only the semantic map */
    rc = sam3_segment(c2, pr, &o2, &s2);
    t_check(rc >= 0 && s2.n_instances == 0 && s2.semantic_logits && t_relerr(s2.semantic_logits, ref->semantic_logits, lp) <= 1e-6,
            "%s %s: nothing kept: %d instances, semantic map %s", cfg, name, rc >= 0 ? s2.n_instances : -1, rc >= 0 && s2.semantic_logits ? "differs" : "missing");
}

/* A new image on a context that has segmented another must not reuse the old image's state (the
   DETR encoder's first self-attention is kept per image): the mirrored image segmented on c2 after
   the cases equals it segmented on a fresh context, every query's score and low-res mask. */
static void test_image_switch(const char *cfg, sam3_model *m, sam3_ctx *c2, const sam3__tensor *img) {
    const int W = (int)img->shape[1], H = (int)img->shape[0];
    unsigned char *mir = (unsigned char *)malloc((size_t)W * H * 3);
    sam3_ctx_options co = test_ctx_options();
    sam3_ctx *c3 = NULL;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_result s2, s3;
    sam3_segment_prompt pr;
    float *keep = NULL;
    size_t lp = 0;
    int x, y, ok = 0, n2 = -1;
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) memcpy(mir + ((size_t)y * W + x) * 3, (const unsigned char *)img->data + ((size_t)y * W + W - 1 - x) * 3, 3);
    memset(&pr, 0, sizeof(pr));
    pr.text = "a";
    so.score_threshold = -1.0f; /* every query, so every score is compared */
    so.low_res = 1;
    so.no_masks = 1;
    if (sam3_set_image(c2, mir, W, H, W * 3, SAM3_RGB8) == SAM3_OK && sam3_segment(c2, &pr, &so, &s2) >= 0) {
        lp = (size_t)s2.low_res_width * s2.low_res_height;
        n2 = s2.n_instances;
        keep = (float *)malloc(sizeof(float) * (size_t)s2.n_instances * (lp + 1));
        for (x = 0; x < s2.n_instances; x++) {
            keep[(size_t)x * (lp + 1)] = s2.instances[x].score;
            memcpy(keep + (size_t)x * (lp + 1) + 1, s2.instances[x].low_res_logits, lp * sizeof(float));
        }
    }
    if (keep && sam3_ctx_new(m, &co, &c3) == SAM3_OK && sam3_set_image(c3, mir, W, H, W * 3, SAM3_RGB8) == SAM3_OK &&
        sam3_segment(c3, &pr, &so, &s3) >= 0 && s3.n_instances == n2) {
        ok = 1;
        for (x = 0; ok && x < s3.n_instances; x++)
            ok = keep[(size_t)x * (lp + 1)] == s3.instances[x].score &&
                 !memcmp(keep + (size_t)x * (lp + 1) + 1, s3.instances[x].low_res_logits, lp * sizeof(float));
    }
    t_check(ok, "%s: a new image on a used context gives a fresh context's scores and masks (%d queries)", cfg, n2);
    sam3_ctx_free(c3);
    free(keep);
    free(mir);
}

/* One prompt case end to end through sam3_segment, every stage tapped, then the post-processed
   instances against the reference's: same kept queries, scores, boxes, masks (IoU). */
static void test_case(const char *cfg, const char *dir, const char *name, sam3_model *m, sam3_ctx *c, sam3_ctx *c2, tapper *tp) {
    char path[512];
    dump d;
    const sam3__tensor *bx, *lb, *keep, *sc, *boxes, *masks, *ids;
    sam3_box b[SAM3_MAX_BOXES];
    int bl[SAM3_MAX_BOXES];
    sam3_segment_prompt pr;
    sam3_segment_options so = sam3_segment_options_default();
    sam3_segment_result seg;
    sam3_result rc;
    int nb = 0, i, W, H;
    snprintf(path, sizeof(path), "%s/ref_case_%s.sam3", dir, name);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, skipped", cfg, path);
        t_skip++;
        return;
    }
    W = c->img_w;
    H = c->img_h;
    memset(&pr, 0, sizeof(pr));
    bx = dump_get(&d, "input.boxes", SAM3__DT_F32);
    lb = dump_get(&d, "input.labels", SAM3__DT_I32);
    if (bx && lb) {
        nb = (int)bx->shape[0];
        for (i = 0; i < nb && i < SAM3_MAX_BOXES; i++) {
            const float *v = (const float *)bx->data + 4 * i;
            b[i].x0 = v[0]; b[i].y0 = v[1]; b[i].x1 = v[2]; b[i].y1 = v[3];
            bl[i] = ((const int32_t *)lb->data)[i];
        }
        pr.boxes = b;
        pr.box_labels = bl;
        pr.n_boxes = nb;
    }
    pr.text = dump_num(&d, "case.has_text", 1) != 0 ? dump_str(&d, "case.text") : NULL;
    ids = dump_get(&d, "input.ids", SAM3__DT_I32);
    if (ids) {
        int32_t mine[64];
        int n = 0, j, same;
        rc = sam3_tokenize(m, pr.text ? pr.text : "visual", mine, 64, &n);
        same = rc >= 0 && n == (int)ids->shape[0];
        for (j = 0; same && j < n; j++) same = mine[j] == ((const int32_t *)ids->data)[j];
        t_check(same, "%s %s: prompt ids differ from the reference", cfg, name);
    }
    so.score_threshold = (float)dump_num(&d, "post.threshold", 0.3);
    so.mask_threshold = (float)dump_num(&d, "post.mask_threshold", 0.5);
    so.low_res = 1;
    so.semantic = 1;
    tp->d = &d;
    tp->seen = 0;
    tp->compare = 1;
    printf(" %s case %s (%s%s%d boxes)\n", cfg, name, pr.text ? pr.text : "", pr.text ? ", " : "", nb);
    rc = sam3_segment(c, &pr, &so, &seg);
    tp->compare = 0;
    t_check(rc >= 0, "%s %s: sam3_segment: %s (%s)", cfg, name, sam3_result_string(rc), sam3_ctx_last_error(c));
    keep = dump_get(&d, "post.keep", SAM3__DT_I32);
    sc = dump_get(&d, "post.scores", SAM3__DT_F32);
    boxes = dump_get(&d, "post.boxes", SAM3__DT_F32);
    masks = dump_get(&d, "post.masks", SAM3__DT_U8);
    if (rc >= 0 && keep && sc && boxes && masks && g_bf16) {
        /* instances matched by query; one only on one side must lie within BF16_SCORE of the threshold */
        const int nk = (int)keep->shape[0];
        const double thr = so.score_threshold;
        double worst_iou = 1, sdiff = 0;
        int flips = 0, matched = 0, ok_flip = 1;
        for (i = 0; i < nk; i++) {
            const int qi = ((const int32_t *)keep->data)[i];
            const double rs = ((const float *)sc->data)[i];
            int j, found = -1;
            for (j = 0; j < seg.n_instances; j++)
                if (seg.instances[j].query == qi) found = j;
            if (found < 0) {
                flips++;
                ok_flip &= fabs(rs - thr) <= BF16_SCORE;
                continue;
            }
            {
                const double iou = mask_iou(seg.instances[found].mask, (const uint8_t *)masks->data + (size_t)i * W * H, (size_t)W * H);
                matched++;
                bf16_mask(iou);
                bf16_score(seg.instances[found].score, rs);
                if (iou < worst_iou) worst_iou = iou;
                if (fabs(seg.instances[found].score - rs) > sdiff) sdiff = fabs(seg.instances[found].score - rs);
            }
        }
        for (i = 0; i < seg.n_instances; i++) {
            int j, found = 0;
            for (j = 0; j < nk; j++) found |= ((const int32_t *)keep->data)[j] == seg.instances[i].query;
            if (!found) {
                flips++;
                ok_flip &= fabs(seg.instances[i].score - thr) <= BF16_SCORE;
            }
        }
        g_bf.flips += flips;
        printf("  %s %-22s %d kept (reference %d, %d matched, %d at the threshold), max score diff %.2e, worst mask IoU %.5f\n", cfg,
               "post bf16", seg.n_instances, nk, matched, flips, sdiff, worst_iou);
        t_check(ok_flip, "%s %s: bf16 kept %d instances, reference %d, and one that differs is not at the threshold", cfg, name, seg.n_instances, nk);
        t_check(sdiff <= BF16_SCORE, "%s %s: bf16 score differs by %.3g > %g", cfg, name, sdiff, BF16_SCORE);
        t_check(worst_iou >= MIN_IOU, "%s %s: worst mask IoU %.4f < %.2f", cfg, name, worst_iou, MIN_IOU);
    } else if (rc >= 0 && keep && sc && boxes && masks) {
        int nk = (int)keep->shape[0], same = seg.n_instances == nk;
        double worst_iou = 1, srel, brel;
        float *s2 = (float *)malloc(sizeof(float) * (nk + 1)), *b2 = (float *)malloc(sizeof(float) * 4 * (nk + 1));
        for (i = 0; same && i < nk; i++) same = seg.instances[i].query == ((const int32_t *)keep->data)[i];
        t_check(same, "%s %s: kept %d instances, reference kept %d (or different queries)", cfg, name, seg.n_instances, nk);
        if (same) {
            for (i = 0; i < nk; i++) {
                const uint8_t *rm = (const uint8_t *)masks->data + (size_t)i * W * H, *mm = seg.instances[i].mask;
                size_t j, inter = 0, uni = 0;
                double iou;
                s2[i] = seg.instances[i].score;
                memcpy(b2 + 4 * i, &seg.instances[i].box, 4 * sizeof(float));
                for (j = 0; j < (size_t)W * H; j++) {
                    inter += rm[j] && mm[j];
                    uni += rm[j] || mm[j];
                }
                iou = uni ? (double)inter / (double)uni : 1.0;
                if (iou < worst_iou) worst_iou = iou;
            }
            srel = t_relerr(s2, (const float *)sc->data, (size_t)nk);
            brel = t_relerr(b2, (const float *)boxes->data, (size_t)nk * 4);
            printf("  %s %-22s %d kept, scores rel %.2e, boxes rel %.2e, worst mask IoU %.5f\n", cfg, "post", nk, srel, brel, worst_iou);
            t_check(srel <= TOL && brel <= TOL, "%s %s: post scores/boxes relative error %.3g / %.3g", cfg, name, srel, brel);
            t_check(worst_iou >= MIN_IOU, "%s %s: worst mask IoU %.4f < %.2f", cfg, name, worst_iou, MIN_IOU);
        }
        free(s2);
        free(b2);
    }
    t_check(tp->seen >= 8, "%s %s: %d stages compared", cfg, name, tp->seen);
    if (rc >= 0 && c2) test_untapped(cfg, name, c2, &pr, &so, &seg);
    dump_close(&d);
}

/* The interactive head: every ref_points_<case>.sam3 through sam3_segment_points on one context. */
static void test_points(const char *cfg, const char *dir, sam3_model *m, const char *prefix) {
    static const char *cases[] = {"point", "points", "box", "box_point", "edge", "single", "refine", "single_alt", "none", "mask_resized"};
    char path[512];
    dump im;
    const sam3__tensor *img;
    sam3_ctx_options co = test_ctx_options();
    sam3_ctx *c = NULL;
    tapper tp;
    int k, W, H, ran = 0;
    snprintf(path, sizeof(path), "%s/%s_image.sam3", dir, prefix);
    if (!dump_open(&im, path)) {
        t_note("  %s: no %s, interactive head not compared", cfg, path);
        t_skip++;
        return;
    }
    img = dump_get(&im, "input.image", SAM3__DT_U8);
    memset(&tp, 0, sizeof(tp));
    tp.cfg = cfg;
    co.tap = tap_compare;
    co.tap_user = &tp;
    if (!img || sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "%s: points image / context", cfg);
        dump_close(&im);
        return;
    }
    W = (int)img->shape[1];
    H = (int)img->shape[0];
    /* SAM 1 computes its whole image state in sam3_set_image: compare those stages there */
    tp.d = &im;
    tp.compare = m->arch == SAM3__ARCH_SAM1;
    t_check(sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "%s: set_image for points", cfg);
    if (tp.compare) t_check(tp.seen >= m->s1.layers + 3, "%s: %d image stages compared", cfg, tp.seen);
    tp.compare = 0;
    for (k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
        dump d;
        const sam3__tensor *pts, *lab, *box, *msk, *pm, *iou, *obj;
        sam3_point p[SAM3_MAX_POINTS];
        sam3_box pbox;
        sam3_points_prompt pr;
        sam3_points_options po;
        sam3_points_result r;
        sam3_result rc;
        int i, n = 0;
        snprintf(path, sizeof(path), "%s/%s_%s.sam3", dir, prefix, cases[k]);
        if (!dump_open(&d, path)) continue;
        ran++;
        memset(&pr, 0, sizeof(pr));
        memset(&po, 0, sizeof(po));
        pts = dump_get(&d, "input.points", SAM3__DT_F32);
        lab = dump_get(&d, "input.labels", SAM3__DT_I32);
        box = dump_get(&d, "input.box", SAM3__DT_F32);
        msk = dump_get(&d, "input.mask", SAM3__DT_F32);
        if (pts && lab) {
            n = (int)pts->shape[0];
            for (i = 0; i < n && i < SAM3_MAX_POINTS; i++) {
                p[i].x = ((const float *)pts->data)[2 * i];
                p[i].y = ((const float *)pts->data)[2 * i + 1];
                p[i].label = ((const int32_t *)lab->data)[i];
            }
            pr.points = p;
            pr.n_points = n;
        }
        if (box) {
            const float *v = (const float *)box->data;
            pbox.x0 = v[0], pbox.y0 = v[1], pbox.x1 = v[2], pbox.y1 = v[3];
            pr.box = &pbox;
        }
        if (msk) {
            pr.mask_logits = (const float *)msk->data;
            pr.mask_height = (int)msk->shape[0];
            pr.mask_width = (int)msk->shape[1];
        }
        po.single_mask = dump_num(&d, "case.multimask", 1) == 0;
        tp.d = &d;
        tp.d2 = &im;
        tp.seen = 0;
        tp.compare = 1;
        printf(" %s points case %s (%d points%s%s, %s)\n", cfg, cases[k], n, box ? ", box" : "", msk ? ", mask" : "",
               po.single_mask ? "single mask" : "multimask");
        rc = sam3_segment_points(c, &pr, &po, &r);
        tp.compare = 0;
        t_check(rc == SAM3_OK, "%s %s: sam3_segment_points: %s (%s)", cfg, cases[k], sam3_result_string(rc), sam3_ctx_last_error(c));
        pm = dump_get(&d, "post.masks", SAM3__DT_U8);
        iou = dump_get(&d, "out.iou", SAM3__DT_F32);
        obj = dump_get(&d, "out.object_score", SAM3__DT_F32);
        if (rc == SAM3_OK && pm && iou && (obj || !r.has_object_score)) {
            double worst = 1, irel = t_relerr(r.iou, (const float *)iou->data, (size_t)r.n_masks);
            double orel = obj ? t_relerr_floor(&r.object_score, (const float *)obj->data, 1, 1.0) : 0;
            t_check(r.n_masks == (int)pm->shape[0], "%s %s: %d masks, reference %d", cfg, cases[k], r.n_masks, (int)pm->shape[0]);
            for (i = 0; i < r.n_masks && i < (int)pm->shape[0]; i++) {
                double v = mask_iou(r.masks + (size_t)i * W * H, (const uint8_t *)pm->data + (size_t)i * W * H, (size_t)W * H);
                if (v < worst) worst = v;
                if (g_bf16) {
                    bf16_mask(v);
                    bf16_score(r.iou[i], ((const float *)iou->data)[i]);
                }
            }
            printf("  %s %-22s iou rel %.2e, object score rel %.2e, worst mask IoU %.5f\n", cfg, "post", irel, orel, worst);
            if (g_bf16) {
                double d = 0;
                for (i = 0; i < r.n_masks; i++) d = SAM3__MAX(d, fabs(r.iou[i] - ((const float *)iou->data)[i]));
                if (obj) {
                    d = SAM3__MAX(d, fabs(r.object_score - *(const float *)obj->data));
                    bf16_score(r.object_score, *(const float *)obj->data);
                }
                t_check(d <= BF16_SCORE, "%s %s: bf16 IoU prediction / object score differs by %.3g > %g", cfg, cases[k], d, BF16_SCORE);
            } else
                t_check(irel <= TOL && orel <= TOL, "%s %s: IoU predictions / object score relative error %.3g / %.3g", cfg, cases[k], irel,
                        orel);
            t_check(worst >= MIN_IOU, "%s %s: worst mask IoU %.4f < %.2f", cfg, cases[k], worst, MIN_IOU);
        }
        t_check(tp.seen >= 4, "%s %s: %d stages compared", cfg, cases[k], tp.seen);
        dump_close(&d);
    }
    t_check(ran > 0, "%s: at least one points case", cfg);
    sam3_ctx_free(c);
    dump_close(&im);
}

/* sam3_segment_everything against the reference's automatic mask generator
   (tools/make_reference_everything.py, <prefix>_everything.sam3): without NMS (box_nms_thresh 1)
   the same masks in the same order, each from the same click and multimask output, predicted IoU
   within TOL, boxes within a pixel, masks at IoU >= MIN_IOU, stability within TOL or two pixels
   of its counts (a ratio of pixel counts: a logit 1e-6 from a cut, which float noise moves
   across, changes it by 1/|logits > t - offset| <= 1/area); with the reference's NMS the same
   masks kept. The reference's thresholds were picked from its own values (random
   weights have no natural cut); a threshold it turned off (<= 0) is a negative one here. */
static void test_everything(const char *cfg, const char *dir, sam3_model *m, const char *prefix) {
    char path[512];
    dump im, d;
    const sam3__tensor *img, *cand, *iou, *stab, *box, *msk, *nms;
    sam3_ctx *c = NULL;
    sam3_everything_options o = sam3_everything_options_default();
    sam3_everything_result r;
    int W, H, i, k, n_tok = m->trk.n_mask_tokens - 1, boxes_exact = 0;
    double worst = 1, iou_d = 0, stab_d = 0, stab_px = 0;
    snprintf(path, sizeof(path), "%s/%s_everything.sam3", dir, prefix);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, segment everything not compared", cfg, path);
        t_skip++;
        return;
    }
    snprintf(path, sizeof(path), "%s/%s_image.sam3", dir, prefix);
    t_check(dump_open(&im, path), "%s: %s for segment everything", cfg, path);
    img = dump_get(&im, "input.image", SAM3__DT_U8);
    cand = dump_get(&d, "out.candidate", SAM3__DT_I32);
    iou = dump_get(&d, "out.iou", SAM3__DT_F32);
    stab = dump_get(&d, "out.stability", SAM3__DT_F32);
    box = dump_get(&d, "out.boxes", SAM3__DT_F32);
    msk = dump_get(&d, "out.masks", SAM3__DT_U8);
    nms = dump_get(&d, "nms.candidate", SAM3__DT_I32);
    if (!img || !cand || !iou || !stab || !box || !msk || !nms || sam3_ctx_new(m, NULL, &c) != SAM3_OK) {
        t_check(0, "%s: everything dump tensors / context", cfg);
        dump_close(&d);
        dump_close(&im);
        return;
    }
    W = (int)img->shape[1];
    H = (int)img->shape[0];
    o.points_per_side = (int)dump_num(&d, "evr.points_per_side", 0);
    o.pred_iou_thresh = (float)dump_num(&d, "evr.pred_iou_thresh", 0);
    o.stability_score_thresh = (float)dump_num(&d, "evr.stability_thresh", 0);
    if (o.pred_iou_thresh <= 0) o.pred_iou_thresh = -1;
    if (o.stability_score_thresh <= 0) o.stability_score_thresh = -1;
    o.stability_score_offset = (float)dump_num(&d, "evr.stability_offset", 1);
    o.mask_threshold = (float)(1.0 / (1.0 + exp(-dump_num(&d, "evr.mask_threshold", 0))));
    o.box_nms_thresh = 1;
    t_check(sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "%s: set_image for everything", cfg);
    t_check(sam3_segment_everything(c, &o, &r) == SAM3_OK, "%s: sam3_segment_everything: %s", cfg, sam3_ctx_last_error(c));
    k = (int)cand->shape[0];
    t_check(r.n_masks == k && r.n_candidates == n_tok * o.points_per_side * o.points_per_side, "%s everything: %d of %d masks kept, reference %d",
            cfg, r.n_masks, r.n_candidates, k);
    for (i = 0; i < k && i < r.n_masks; i++) {
        const sam3_everything_mask *e = &r.masks[i];
        const float *b = (const float *)box->data + 4 * i;
        const int id = ((const int32_t *)cand->data)[i];
        const double bd = SAM3__MAX(SAM3__MAX(fabs(e->box.x0 - b[0]), fabs(e->box.y0 - b[1])), SAM3__MAX(fabs(e->box.x1 - b[2]), fabs(e->box.y1 - b[3])));
        iou_d = SAM3__MAX(iou_d, fabs(e->iou - ((const float *)iou->data)[i]));
        stab_d = SAM3__MAX(stab_d, fabs(e->stability - ((const float *)stab->data)[i]));
        if (fabs(e->stability - ((const float *)stab->data)[i]) > TOL)
            stab_px = SAM3__MAX(stab_px, fabs(e->stability - ((const float *)stab->data)[i]) * (double)SAM3__MAX(e->area, 1));
        boxes_exact += bd == 0;
        t_check(bd <= 1, "%s everything mask %d: box %g %g %g %g, reference %g %g %g %g", cfg, i, e->box.x0, e->box.y0, e->box.x1, e->box.y1, b[0],
                b[1], b[2], b[3]);
        if (i < (int)msk->shape[0]) { /* the reference's bits, most significant first */
            const uint8_t *p = (const uint8_t *)msk->data + (size_t)i * msk->shape[1];
            size_t j, in = 0, un = 0;
            for (j = 0; j < (size_t)W * H; j++) {
                const int a = e->mask[j] != 0, bb = (p[j >> 3] >> (7 - (j & 7))) & 1;
                in += a && bb;
                un += a || bb;
            }
            worst = SAM3__MIN(worst, un ? (double)in / (double)un : 1.0);
        }
        t_check(id == e->click * n_tok + e->token, "%s everything mask %d: click %d output %d, reference candidate %d", cfg, i, e->click, e->token, id);
    }
    printf("  %s everything: %d of %d candidates kept (no NMS), IoU diff %.2e, stability diff %.2e (past %.0e: <= %.2f pixels), %d/%d boxes "
           "exact, worst mask IoU %.5f\n", cfg, r.n_masks, r.n_candidates, iou_d, stab_d, TOL, stab_px, boxes_exact, k, worst);
    t_check(iou_d <= TOL && stab_px <= 2 && worst >= MIN_IOU, "%s everything: IoU diff %.3g, stability %.3g pixels off, worst mask IoU %.4f",
            cfg, iou_d, stab_px, worst);
    o.box_nms_thresh = (float)dump_num(&d, "evr.nms_thresh", 0.7);
    t_check(sam3_segment_everything(c, &o, &r) == SAM3_OK && r.n_masks == (int)nms->shape[0], "%s everything with NMS %g: %d masks, reference %d",
            cfg, o.box_nms_thresh, r.n_masks, (int)nms->shape[0]);
    for (i = 0; i < r.n_masks && i < (int)nms->shape[0]; i++)
        t_check(r.masks[i].click * n_tok + r.masks[i].token == ((const int32_t *)nms->data)[i], "%s everything with NMS: mask %d differs", cfg, i);
    printf("  %s everything with NMS %g: %d masks kept\n", cfg, o.box_nms_thresh, r.n_masks);
    sam3_ctx_free(c);
    dump_close(&d);
    dump_close(&im);
}

/* The crop boxes and small-region removal against tests/data/everything_tables.sam3
   (tools/make_reference_everything_tables.py): sam3__everything_crop_boxes against transformers'
   _generate_per_layer_crops on ten image sizes, layer counts and overlaps; sam3__everything_small
   on seeded blob masks against a numpy restatement of segment_anything's postprocess_small_regions
   (Meta's code is not installed where the references are made): the kept masks, their order, which
   changed, their boxes, areas and bits, at NMS 1 and 0.7. Model-free: it needs a context only for
   its allocator and arena. */
static void test_everything_tables(const char *cfg, const char *dir, sam3_model *m) {
    char path[512];
    dump d;
    const sam3__tensor *tc, *tn, *tb, *in, *iou;
    int i, j, off = 0, bad_boxes = 0, t;
    sam3_ctx *c = NULL;
    snprintf(path, sizeof(path), "%s/../everything_tables.sam3", dir);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, crop boxes and small regions not compared", cfg, path);
        t_skip++;
        return;
    }
    tc = dump_get(&d, "table.case", SAM3__DT_I32);
    tn = dump_get(&d, "table.count", SAM3__DT_I32);
    tb = dump_get(&d, "table.box", SAM3__DT_I32);
    in = dump_get(&d, "small.in", SAM3__DT_U8);
    iou = dump_get(&d, "small.in_iou", SAM3__DT_F32);
    if (!tc || !tn || !tb || !in || !iou || sam3_ctx_new(m, NULL, &c) != SAM3_OK) {
        t_check(0, "%s: everything tables: tensors / context", cfg);
        dump_close(&d);
        return;
    }
    for (i = 0; i < (int)tc->shape[0]; i++) {
        const int32_t *cs = (const int32_t *)tc->data + 4 * i, n = ((const int32_t *)tn->data)[i];
        char key[32];
        int box[4 * 400], side[400], bad = 0, got;
        snprintf(key, sizeof(key), "table.ratio%d", cs[3]);
        got = sam3__everything_crop_boxes(cs[0], cs[1], cs[2], dump_num(&d, key, -1), 32, 1, box, side, &bad);
        t_check(got == n, "%s crop boxes %dx%d, %d layers: %d crops, reference %d", cfg, cs[0], cs[1], cs[2], got, n);
        for (j = 0; j < 4 * n && got == n; j++) bad_boxes += box[j] != ((const int32_t *)tb->data)[4 * off + j];
        off += n;
    }
    t_check(bad_boxes == 0, "%s crop boxes: %d coordinates differ from transformers'", cfg, bad_boxes);
    { /* _is_box_near_crop_edge at its 20-pixel boundary, boxes in the crop's frame: an inner crop of a
         200x160 image (0..4), then one sharing the image's right and bottom edges (5, 6) */
        static const float bx[7][4] = {{30, 30, 80, 50}, {30, 30, 79, 50}, {20, 30, 60, 50}, {21, 21, 60, 59}, {0, 0, 0, 0},
                                       {30, 30, 99, 79}, {0, 30, 99, 79}};
        sam3__evr_cand cand[7];
        sam3__evr e;
        int got = 0;
        memset(&e, 0, sizeof(e));
        for (i = 0; i < 7; i++) {
            memset(&cand[i], 0, sizeof(cand[i]));
            cand[i].box.x0 = bx[i][0], cand[i].box.y0 = bx[i][1], cand[i].box.x1 = bx[i][2], cand[i].box.y1 = bx[i][3], cand[i].point = i;
        }
        e.fw = 200, e.fh = 160;
        e.cand = cand, e.n_cand = 5, e.cx0 = 50, e.cy0 = 40, e.cx1 = 150, e.cy1 = 120;
        sam3__everything_edge(&e);
        for (i = 0; i < e.n_cand; i++) got |= 1 << cand[i].point;
        e.cand = cand + 5, e.n_cand = 2, e.cx0 = 100, e.cy0 = 80, e.cx1 = 200, e.cy1 = 160;
        sam3__everything_edge(&e);
        for (i = 0; i < e.n_cand; i++) got |= 1 << cand[5 + i].point;
        t_check(got == (1 << 1 | 1 << 3 | 1 << 5), "%s crop edge rule: kept set %#x, want %#x", cfg, got, 1 << 1 | 1 << 3 | 1 << 5);
    }
    printf("  %s everything crop boxes: %d sizes, %d boxes, %d differ\n", cfg, (int)tc->shape[0], off, bad_boxes);
    for (t = 100; t >= 70; t -= 30) {
        char name[64];
        const sam3__tensor *kp, *ch, *bx, *ar, *mk;
        const int W = (int)dump_num(&d, "small.width", 0), H = (int)dump_num(&d, "small.height", 0), K = (int)in->shape[0];
        const size_t per = ((size_t)W * H + 7) / 8;
        sam3__evr_crops k;
        uint8_t *plane = (uint8_t *)malloc((size_t)W * H);
        int bad = 0, bits = 0;
        sam3_result rc;
        snprintf(name, sizeof(name), "small%d.keep", t), kp = dump_get(&d, name, SAM3__DT_I32);
        snprintf(name, sizeof(name), "small%d.changed", t), ch = dump_get(&d, name, SAM3__DT_I32);
        snprintf(name, sizeof(name), "small%d.boxes", t), bx = dump_get(&d, name, SAM3__DT_F32);
        snprintf(name, sizeof(name), "small%d.area", t), ar = dump_get(&d, name, SAM3__DT_I32);
        snprintf(name, sizeof(name), "small%d.masks", t), mk = dump_get(&d, name, SAM3__DT_U8);
        memset(&k, 0, sizeof(k));
        k.o.min_region_area = (int64_t)dump_num(&d, "small.min_area", 0);
        k.o.box_nms_thresh = k.o.crop_nms_thresh = (float)(t / 100.0);
        k.keep = (sam3__evr_keep *)sam3__aalloc(&c->a, (size_t)K * sizeof(sam3__evr_keep));
        k.store = (uint8_t *)sam3__aalloc(&c->a, (size_t)K * per);
        if (!kp || !ch || !bx || !ar || !mk || !plane || !k.keep || !k.store || in->shape[1] != (int64_t)per) {
            t_check(0, "%s small regions %d: tensors / memory", cfg, t);
            free(plane);
            break;
        }
        k.n_keep = (size_t)K, k.cap_keep = (size_t)K * sizeof(sam3__evr_keep);
        k.n_store = k.cap_store = (size_t)K * per;
        memcpy(k.store, in->data, (size_t)K * per);
        for (i = 0; i < K; i++) {
            sam3__evr_keep *q = &k.keep[i];
            memset(q, 0, sizeof(*q));
            q->cw = W, q->ch = H, q->bits = (size_t)i * per, q->seq = i;
            q->m.click = i;
            q->m.iou = ((const float *)iou->data)[i];
            sam3__everything_unpack(&k, q, W, H, plane);
            q->m.box = sam3__mask_box(plane, W, H);
        }
        rc = sam3__begin(c);
        if (rc == SAM3_OK) rc = sam3__everything_small(c, &k, W, H);
        sam3__end(c, rc);
        t_check(rc == SAM3_OK && k.n_keep == (size_t)kp->shape[0], "%s small regions, NMS %d%%: %d kept, reference %d (%s)", cfg, t, (int)k.n_keep,
                (int)kp->shape[0], sam3_ctx_last_error(c));
        for (i = 0; rc == SAM3_OK && i < (int)k.n_keep && i < (int)kp->shape[0]; i++) {
            const sam3__evr_keep *q = &k.keep[i];
            const float *b = (const float *)bx->data + 4 * i;
            const uint8_t *rb = (const uint8_t *)mk->data + (size_t)i * per;
            size_t p;
            bad += q->m.click != ((const int32_t *)kp->data)[i] || (q->score == 0) != (((const int32_t *)ch->data)[i] != 0);
            bad += q->m.box.x0 != b[0] || q->m.box.y0 != b[1] || q->m.box.x1 != b[2] || q->m.box.y1 != b[3];
            sam3__everything_unpack(&k, q, W, H, plane);
            for (p = 0; p < (size_t)W * H; p++) bits += plane[p] != ((rb[p >> 3] >> (7 - (p & 7))) & 1);
            if (q->score == 0) bad += q->m.area != ((const int32_t *)ar->data)[i];
        }
        t_check(bad == 0 && bits == 0, "%s small regions, NMS %d%%: %d masks' order / changed / box / area differ, %d pixels", cfg, t, bad, bits);
        printf("  %s everything small regions (min area %lld, NMS %d%%, %s): %d of %d kept, %d differ, %d pixels\n", cfg,
               (long long)k.o.min_region_area, t, dump_str(&d, "small.how") ? dump_str(&d, "small.how") : "?", (int)k.n_keep, K, bad, bits);
        sam3__afree(&c->a, k.keep);
        sam3__afree(&c->a, k.store);
        free(plane);
    }
    sam3_ctx_free(c);
    dump_close(&d);
}

/* The edge rule of filter_masks' _is_box_near_crop_edge, restated: box b of crop (x0, y0, x1, y1)
   of a W x H image, in the crop's frame. */
static int evr_near_edge(sam3_box b, const int *cr, int W, int H) {
    const float v[4] = {b.x0 + cr[0], b.y0 + cr[1], b.x1 + cr[0], b.y1 + cr[1]}, im[4] = {0, 0, (float)W, (float)H};
    int k, at_edge = 0;
    for (k = 0; k < 4; k++) at_edge |= fabsf(v[k] - (float)cr[k]) <= 20 && fabsf(v[k] - im[k]) > 20;
    return at_edge;
}

/* Crop layers against the whole-image pass run by hand on each crop (a context of its own, the
   crop's pixels): every mask a crop keeps is that pass's mask (same click, output, IoU, stability,
   bits) moved by the crop's corner, and a crop keeps exactly that pass's masks that no crop-edge
   rule drops; the output is in descending IoU; the context still holds its image afterwards (the
   same whole-image result before and after). Thresholds picked for random weights: blobs, not
   whole-crop masks, so that the edge rule both keeps and drops. */
static void test_everything_crops(const char *cfg, const char *dir, sam3_model *m, const char *prefix) {
    char path[512];
    dump im;
    const sam3__tensor *img;
    sam3_ctx *c = NULL, *c2 = NULL;
    sam3_everything_options o = sam3_everything_options_default(), o1;
    sam3_everything_result r, r0;
    int W, H, j, i, bad = 0, n_before, kept = 0, dropped = 0, crops[5 * 4], side[5], b2;
    uint8_t *first = NULL;
    snprintf(path, sizeof(path), "%s/%s_image.sam3", dir, prefix);
    if (!dump_open(&im, path)) return;
    img = dump_get(&im, "input.image", SAM3__DT_U8);
    if (!img || sam3_ctx_new(m, NULL, &c) != SAM3_OK || sam3_ctx_new(m, NULL, &c2) != SAM3_OK) {
        t_check(0, "%s: everything crops: image / contexts", cfg);
        goto done;
    }
    W = (int)img->shape[1], H = (int)img->shape[0];
    o.points_per_side = 6;
    o.pred_iou_thresh = o.stability_score_thresh = -1;
    o.box_nms_thresh = 1;
    o.mask_threshold = 0.7f;
    t_check(sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "%s: set_image for crops", cfg);
    t_check(sam3_segment_everything(c, &o, &r0) == SAM3_OK && r0.n_masks > 0, "%s: everything before the crops", cfg);
    n_before = r0.n_masks;
    first = (uint8_t *)malloc((size_t)W * H);
    if (first && n_before) memcpy(first, r0.masks[0].mask, (size_t)W * H);
    o1 = o;
    o.crop_layers = 1;
    o.crop_nms_thresh = 1;
    o.pixels = (const uint8_t *)img->data, o.stride = W * 3, o.format = SAM3_RGB8;
    t_check(sam3_segment_everything(c, &o, &r) == SAM3_OK && r.n_crops == 5 && r.n_points == 5 * 36,
            "%s everything, one crop layer: %s (%d crops, %d points)", cfg, sam3_ctx_last_error(c), r.n_crops, r.n_points);
    t_check(sam3__everything_crop_boxes(W, H, 1, 512.0 / 1500.0, 6, 1, crops, side, &b2) == 5, "%s: crop boxes", cfg);
    for (i = 1; i < r.n_masks; i++) bad += !(r.masks[i - 1].iou >= r.masks[i].iou);
    t_check(bad == 0, "%s everything crops: output not in descending IoU (%d)", cfg, bad);
    for (j = 0; j < 5; j++) { /* each crop by hand */
        const int *cr = crops + 4 * j, cw = cr[2] - cr[0], ch = cr[3] - cr[1];
        sam3_everything_result rj;
        int n_in = 0, n_pass = 0, x, y;
        t_check(sam3_set_image(c2, (const uint8_t *)img->data + ((size_t)cr[1] * W + cr[0]) * 3, cw, ch, W * 3, SAM3_RGB8) == SAM3_OK &&
                    sam3_segment_everything(c2, &o1, &rj) == SAM3_OK, "%s crop %d by hand", cfg, j);
        for (i = 0; i < rj.n_masks; i++) n_pass += !evr_near_edge(rj.masks[i].box, cr, W, H);
        for (i = 0; i < r.n_masks; i++) {
            const sam3_everything_mask *e = &r.masks[i], *f = NULL;
            int k2, diff = 0;
            if (e->crop != j) continue;
            n_in++;
            for (k2 = 0; k2 < rj.n_masks && !f; k2++)
                if (rj.masks[k2].click == e->click && rj.masks[k2].token == e->token) f = &rj.masks[k2];
            if (!f || evr_near_edge(f->box, cr, W, H) || f->iou != e->iou || f->stability != e->stability || f->box.x0 + cr[0] != e->box.x0 ||
                f->box.x1 + cr[0] != e->box.x1 || f->box.y0 + cr[1] != e->box.y0 || f->box.y1 + cr[1] != e->box.y1 || f->area != e->area ||
                f->point.x + cr[0] != e->point.x || f->point.y + cr[1] != e->point.y) {
                bad++;
                continue;
            }
            for (y = 0; y < H; y++)
                for (x = 0; x < W; x++) {
                    const int in = x >= cr[0] && x < cr[2] && y >= cr[1] && y < cr[3];
                    diff += e->mask[(size_t)y * W + x] != (in ? f->mask[(size_t)(y - cr[1]) * cw + x - cr[0]] : 0);
                }
            bad += diff != 0;
        }
        bad += n_in != n_pass;
        kept += n_pass, dropped += rj.n_masks - n_pass;
    }
    t_check(bad == 0 && kept == r.n_masks, "%s everything crops: %d masks differ from the crops run by hand (%d kept of %d)", cfg, bad, kept, r.n_masks);
    t_check(dropped > 0 && kept > n_before, "%s everything crops: the edge rule dropped %d, kept %d (want both)", cfg, dropped, kept);
    t_check(sam3_segment_everything(c, &o1, &r0) == SAM3_OK && r0.n_masks == n_before && first && !memcmp(first, r0.masks[0].mask, (size_t)W * H),
            "%s everything after the crops: the context's image changed", cfg);
    printf("  %s everything, one crop layer: %d masks from 5 crops (the edge rule dropped %d), equal to the crops by hand\n", cfg, r.n_masks, dropped);
done:
    free(first);
    sam3_ctx_free(c);
    sam3_ctx_free(c2);
    dump_close(&im);
}

/* One HF crops case: the kept masks' crops and candidates (click * n_tok + token) in order, boxes
   within a pixel, areas within 1% + 2 pixels, the first masks at IoU >= MIN_IOU. Returns the
   differing masks. */
static int evr_crops_compare(const char *what, const dump *d, const char *pre, const sam3_everything_result *r, int n_tok, double *worst) {
    char name[64];
    const sam3__tensor *cr, *ca, *bx, *ar, *mk;
    int i, bad = 0, k;
    snprintf(name, sizeof(name), "%s.crop", pre), cr = dump_get(d, name, SAM3__DT_I32);
    snprintf(name, sizeof(name), "%s.candidate", pre), ca = dump_get(d, name, SAM3__DT_I32);
    snprintf(name, sizeof(name), "%s.boxes", pre), bx = dump_get(d, name, SAM3__DT_F32);
    snprintf(name, sizeof(name), "%s.area", pre), ar = dump_get(d, name, SAM3__DT_I32);
    snprintf(name, sizeof(name), "%s.masks", pre), mk = dump_get(d, name, SAM3__DT_U8);
    if (!cr || !ca) {
        t_check(0, "%s: %s.crop / .candidate missing", what, pre);
        return 1;
    }
    k = (int)cr->shape[0];
    t_check(r->n_masks == k, "%s: %d masks kept, reference %d", what, r->n_masks, k);
    for (i = 0; i < k && i < r->n_masks; i++) {
        const sam3_everything_mask *e = &r->masks[i];
        int diff = e->crop != ((const int32_t *)cr->data)[i] || e->click * n_tok + e->token != ((const int32_t *)ca->data)[i];
        if (bx) {
            const float *b = (const float *)bx->data + 4 * i;
            diff |= fabs(e->box.x0 - b[0]) > 1 || fabs(e->box.y0 - b[1]) > 1 || fabs(e->box.x1 - b[2]) > 1 || fabs(e->box.y1 - b[3]) > 1;
        }
        if (ar) diff |= fabs((double)e->area - ((const int32_t *)ar->data)[i]) > 2 + 0.01 * (double)e->area;
        if (mk && i < (int)mk->shape[0]) {
            const uint8_t *p = (const uint8_t *)mk->data + (size_t)i * mk->shape[1];
            size_t j, in = 0, un = 0;
            for (j = 0; j < (size_t)r->width * r->height; j++) {
                const int a = e->mask[j] != 0, b = (p[j >> 3] >> (7 - (j & 7))) & 1;
                in += a && b, un += a || b;
            }
            *worst = SAM3__MIN(*worst, un ? (double)in / (double)un : 1.0);
        }
        if (diff) t_note("  %s mask %d: crop %d candidate %d box %g %g %g %g area %lld; reference crop %d candidate %d", what, i, e->crop,
                         e->click * n_tok + e->token, e->box.x0, e->box.y0, e->box.x1, e->box.y1, (long long)e->area,
                         ((const int32_t *)cr->data)[i], ((const int32_t *)ca->data)[i]);
        bad += diff;
    }
    return bad + (r->n_masks != k);
}

/* sam3_segment_everything with crop layers against tools/make_reference_everything_crops.py
   (<prefix>_everything_crops.sam3: transformers' crop boxes, filter_masks, per-crop and cross-crop
   post_process_for_mask_generation, composed; small regions by a restatement of Meta's function):
   without NMS, with NMS at the reference's threshold, then small-region removal on each. */
static void test_everything_crops_hf(const char *cfg, const char *dir, sam3_model *m, const char *prefix) {
    static const char *pre[4] = {"out", "nms", "small", "smallnms"};
    char path[512], what[128];
    dump im, d;
    const sam3__tensor *img;
    sam3_ctx *c = NULL;
    sam3_everything_options o = sam3_everything_options_default();
    sam3_everything_result r;
    int W, H, v, bad = 0, n_tok = m->trk.n_mask_tokens - 1;
    double worst = 1, nms;
    snprintf(path, sizeof(path), "%s/%s_everything_crops.sam3", dir, prefix);
    if (!dump_open(&d, path)) {
        t_note("  %s: no %s, crop layers not compared with transformers", cfg, path);
        t_skip++;
        return;
    }
    snprintf(path, sizeof(path), "%s/%s_image.sam3", dir, prefix);
    t_check(dump_open(&im, path), "%s: %s for everything crops", cfg, path);
    img = dump_get(&im, "input.image", SAM3__DT_U8);
    if (!img || sam3_ctx_new(m, NULL, &c) != SAM3_OK) {
        t_check(0, "%s: everything crops: image / context", cfg);
        dump_close(&d), dump_close(&im);
        return;
    }
    W = (int)img->shape[1], H = (int)img->shape[0];
    o.points_per_side = (int)dump_num(&d, "evr.points_per_side", 0);
    o.pred_iou_thresh = (float)dump_num(&d, "evr.pred_iou_thresh", 0);
    o.stability_score_thresh = (float)dump_num(&d, "evr.stability_thresh", 0);
    if (o.pred_iou_thresh <= 0) o.pred_iou_thresh = -1;
    if (o.stability_score_thresh <= 0) o.stability_score_thresh = -1;
    o.stability_score_offset = (float)dump_num(&d, "evr.stability_offset", 1);
    o.mask_threshold = (float)(1.0 / (1.0 + exp(-dump_num(&d, "evr.mask_threshold", 0))));
    o.crop_layers = (int)dump_num(&d, "crop.layers", 1);
    o.crop_overlap_ratio = dump_num(&d, "crop.overlap", 512.0 / 1500.0);
    o.pixels = (const uint8_t *)img->data, o.stride = W * 3, o.format = SAM3_RGB8;
    nms = dump_num(&d, "evr.nms_thresh", 0.7);
    t_check(sam3_set_image(c, (const uint8_t *)img->data, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "%s: set_image for everything crops", cfg);
    for (v = 0; v < 4; v++) {
        o.box_nms_thresh = o.crop_nms_thresh = (float)(v & 1 ? nms : 1.0);
        o.min_region_area = v & 2 ? (int64_t)dump_num(&d, "small.min_area", 0) : 0;
        snprintf(what, sizeof(what), "%s everything crops (%s)", cfg, pre[v]);
        if (sam3_segment_everything(c, &o, &r) != SAM3_OK) {
            t_check(0, "%s: %s", what, sam3_ctx_last_error(c));
            bad++;
            continue;
        }
        bad += evr_crops_compare(what, &d, pre[v], &r, n_tok, &worst);
        if (v == 0) printf("  %s everything, %d crop layer(s): %d masks from %d crops\n", cfg, o.crop_layers, r.n_masks, r.n_crops);
    }
    t_check(bad == 0 && worst >= MIN_IOU, "%s everything crops vs transformers: %d masks differ, worst mask IoU %.4f", cfg, bad, worst);
    printf("  %s everything crops vs transformers (small regions: %s): %d differ, worst mask IoU %.5f\n", cfg,
           dump_str(&d, "small.how") ? dump_str(&d, "small.how") : "?", bad, worst);
    sam3_ctx_free(c);
    dump_close(&d), dump_close(&im);
}

/* The attention kernel against a double-precision softmax(q k^T / sqrt(hd) + bias) v, with more
   keys than one block of its online softmax, so that rows' maxima rise from block to block (a
   key scale growing with the key index) and fall (growing backwards): the rescaling of the
   earlier blocks' sums is what a missing or wrong factor would break. Plain, causal (CLIP) and
   with a decomposed relative-position bias (SAM 1, the DETR decoder's box bias). Past the first
   block the kernel takes exponentials against the earlier maximum; the last variant puts a key
   far above it in a later block, 50-100 (sums past the kernel's bound) and 100-200 (past the
   float range), which it must take again in two passes. */
static void test_attention_kernel(const char *cfg, sam3_model *m) {
    const int nq = 45, nh = 2, hd = 32, S = 37, nk = S * S, ld = nh * hd; /* 1369 keys: 3 blocks or more */
    sam3_ctx_options co = test_ctx_options();
    sam3_ctx *c = NULL;
    float *q = malloc(sizeof(float) * nq * ld), *k = malloc(sizeof(float) * nk * ld), *v = malloc(sizeof(float) * nk * ld);
    float *rh = malloc(sizeof(float) * nh * nq * S), *rw = malloc(sizeof(float) * nh * nq * S), *o = malloc(sizeof(float) * nq * ld);
    float *ref = malloc(sizeof(float) * nq * ld);
    double *p = malloc(sizeof(double) * nk);
    unsigned seed = 12345;
    int variant, i, j, h, d;
    if (!q || !k || !v || !rh || !rw || !o || !ref || !p || sam3_ctx_new(m, &co, &c) != SAM3_OK) {
        t_check(0, "%s: attention kernel test setup", cfg);
        goto done;
    }
    for (variant = 0; variant < 5; variant++) {
        const int causal = variant == 2, rel = variant == 3, spike = variant == 4;
        double err;
        sam3_result rc;
        sam3__attn_args at;
        memset(&at, 0, sizeof(at));
        at.nq = nq, at.nk = nk, at.nh = nh, at.hd = hd, at.q = q, at.k = k, at.v = v, at.out = o;
        at.ldq = at.ldk = at.ldv = at.ldo = ld, at.causal = causal, at.relh = rel ? rh : NULL, at.relw = rel ? rw : NULL, at.rel_s = rel ? S : 0;
        for (i = 0; i < nq * ld; i++) q[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (j = 0; j < nk; j++) {
            /* variant 0, 2, 3: scale rising with j; 1: falling */
            const float sc = 1.0f + 6.0f * (float)(variant == 1 ? nk - 1 - j : j) / (float)nk;
            for (d = 0; d < ld; d++) {
                k[(size_t)j * ld + d] = sc * ((float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f) * 4;
                v[(size_t)j * ld + d] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
            }
        }
        /* every query's first component in [1, 2): keys 700 and 1360 score 50-100 and 100-200 (with
           AVX-512, key 1360 is in the last block's partial panel) */
        if (spike)
            for (h = 0; h < nh; h++) {
                for (i = 0; i < nq; i++) q[(size_t)i * ld + h * hd] += 1.5f;
                k[(size_t)700 * ld + h * hd] = 50.0f * (float)sqrt((double)hd);
                k[(size_t)1360 * ld + h * hd] = 100.0f * (float)sqrt((double)hd);
            }
        for (i = 0; i < nh * nq * S; i++) {
            rh[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f * 3;
            rw[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f * 3;
        }
        for (h = 0; h < nh; h++)
            for (i = 0; i < nq; i++) {
                const int lim = causal ? (i + 1 < nk ? i + 1 : nk) : nk;
                double mx = -1e300, sum = 0;
                for (j = 0; j < lim; j++) {
                    double t = 0;
                    for (d = 0; d < hd; d++) t += (double)q[(size_t)i * ld + h * hd + d] * k[(size_t)j * ld + h * hd + d];
                    t /= sqrt((double)hd);
                    if (rel) t += (double)rh[((size_t)h * nq + i) * S + j / S] + rw[((size_t)h * nq + i) * S + j % S];
                    p[j] = t;
                    if (t > mx) mx = t;
                }
                for (j = 0; j < lim; j++) sum += p[j] = exp(p[j] - mx);
                for (d = 0; d < hd; d++) {
                    double t = 0;
                    for (j = 0; j < lim; j++) t += p[j] * v[(size_t)j * ld + h * hd + d];
                    ref[(size_t)i * ld + h * hd + d] = (float)(t / sum);
                }
            }
#if defined(__SSE__) && defined(SAM3__FAST_ATTENTION)
        {
            /* the kernel flushes underflows to zero for its tasks: the caller's mode (MXCSR bits 6-15;
               bits 0-5 are the sticky exception flags the arithmetic sets) comes back */
            const unsigned csr = _mm_getcsr() & 0xffc0u;
            rc = sam3__attention_rel(c, &at);
            t_check((_mm_getcsr() & 0xffc0u) == csr, "%s: attention kernel variant %d: MXCSR mode %#x after the call, %#x before", cfg,
                    variant, _mm_getcsr() & 0xffc0u, csr);
        }
#elif defined(SAM3__FPCR_FZ) && defined(SAM3__FAST_ATTENTION)
        {
            /* the same on aarch64 with FPCR.FZ */
            const uint64_t fpcr = sam3__fpcr_get();
            rc = sam3__attention_rel(c, &at);
            t_check(sam3__fpcr_get() == fpcr, "%s: attention kernel variant %d: FPCR %#llx after the call, %#llx before", cfg, variant,
                    (unsigned long long)sam3__fpcr_get(), (unsigned long long)fpcr);
        }
#else
        rc = sam3__attention_rel(c, &at);
#endif
        err = t_relerr(o, ref, (size_t)nq * ld);
        printf("  %s attention kernel %-22s rel %.2e\n", cfg,
               variant == 0   ? "(maxima rising)"
               : variant == 1 ? "(maxima falling)"
               : variant == 2 ? "(causal)"
               : variant == 3 ? "(relative bias)"
                              : "(a late maximum far up)",
               err);
        t_check(rc == SAM3_OK && err <= 1e-5, "%s: attention kernel variant %d: %s, relative error %.3g", cfg, variant, sam3_result_string(rc), err);
    }
done:
    sam3_ctx_free(c);
    free(q), free(k), free(v), free(rh), free(rw), free(o), free(ref), free(p);
}

/* The Winograd 3x3 conv against a double-precision direct conv: as the pixel decoder runs it, on a
   map upsampled by nearest neighbour plus a skip map (2x, and a ratio that is not 2, as a neck
   without the 2x level would give), and plain (the FPN's). Sides that leave partial 4x4 tiles.
   The statistics it leaves for GroupNorm (count, mean, squared deviations by tile row) must
   describe its own output: merged here, against each channel's mean and variance in double. */
static void test_conv3x3(const char *cfg, sam3_model *m) {
    /* h, w (0: no upsampled map), H, W; the last two tall enough for the pipelined form on 2
       threads with tasks of 16+ tiles (2 tile rows a task) */
    static const int sz[6][4] = {{7, 11, 14, 22}, {10, 5, 20, 10}, {6, 9, 13, 17}, {0, 0, 9, 15}, {0, 0, 66, 33}, {17, 11, 66, 33}};
    const int cin = 24, cout = 16;
    sam3_ctx_options co = test_ctx_options();
    sam3_ctx *c = NULL;
    int nth;
    float *wt = malloc(sizeof(float) * cout * cin * 9), *bias = malloc(sizeof(float) * cout);
    float *x = malloc(sizeof(float) * cin * 17 * 11), *sk = malloc(sizeof(float) * cin * 66 * 33);
    float *y = malloc(sizeof(float) * cout * 66 * 33), *ref = malloc(sizeof(float) * cout * 66 * 33);
    double *st = malloc(sizeof(double) * cout * 17 * 3); /* (cout, tile rows, 3) at most */
    unsigned seed = 777;
    int t, i;
    if (!wt || !bias || !x || !sk || !y || !ref || !st) {
        t_check(0, "%s: conv3x3 test setup", cfg);
        goto done;
    }
    for (i = 0; i < cout * cin * 9; i++) wt[i] = ((float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f) * 0.3f;
    for (i = 0; i < cout; i++) bias[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    /* 1 thread: the phased form; 2: the pipelined one where the map is tall enough */
    for (nth = 1; nth <= 2; nth++)
    for (t = 0; t < 6; t++) {
        const int h = sz[t][0], w = sz[t][1], H = sz[t][2], W = sz[t][3];
        const sam3__lin l = {wt, bias, NULL};
        int o, r, q, ci, dy, dx;
        sam3_result rc;
        double err;
        if (t == 0) {
            sam3_ctx_free(c);
            c = NULL;
            co.n_threads = nth;
            if (sam3_ctx_new(m, &co, &c) != SAM3_OK) {
                t_check(0, "%s: conv3x3 test context", cfg);
                goto done;
            }
            c->wino_tiles = 16; /* the model's maps at the test's scale */
        }
        if (t >= 4 && c->nt == 2 && c->split) /* (a build without OpenMP runs one thread) */
            t_check(sam3__wino_rows(c, (H + 3) / 4, (W + 3) / 4) > 0, "%s: conv3x3 %dx%d takes the pipelined form on 2 threads", cfg, H, W);
        for (i = 0; i < cin * h * w; i++) x[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (i = 0; i < cin * H * W; i++) sk[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (o = 0; o < cout; o++)
            for (r = 0; r < H; r++)
                for (q = 0; q < W; q++) {
                    double s = bias[o];
                    for (ci = 0; ci < cin; ci++)
                        for (dy = 0; dy < 3; dy++)
                            for (dx = 0; dx < 3; dx++) {
                                const int yy = r + dy - 1, xx = q + dx - 1;
                                double v;
                                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                                v = sk[((size_t)ci * H + yy) * W + xx];
                                if (h) { /* nearest source pixel as F.interpolate computes it, in float */
                                    int sy = (int)floorf((float)yy * ((float)h / (float)H)), sx = (int)floorf((float)xx * ((float)w / (float)W));
                                    sy = sy < h - 1 ? sy : h - 1, sx = sx < w - 1 ? sx : w - 1;
                                    v += x[(ci * h + sy) * w + sx];
                                }
                                s += (double)wt[((o * cin + ci) * 3 + dy) * 3 + dx] * v;
                            }
                    ref[((size_t)o * H + r) * W + q] = (float)s;
                }
        rc = sam3__conv3x3(c, sk, h ? x : NULL, h, w, cin, H, W, &l, cout, y, st);
        err = t_relerr(y, ref, (size_t)cout * H * W);
        printf("  %s conv3x3 %dx%d + %dx%d upsampled, %d thread%s %s  rel %.2e\n", cfg, H, W, h, w, nth, nth > 1 ? "s" : "",
               sam3__wino_rows(c, (H + 3) / 4, (W + 3) / 4) ? "pipelined" : "phased", err); /* (the reference build: direct) */
        t_check(rc == SAM3_OK && err <= 1e-5, "%s: conv3x3 %dx%d + %dx%d upsampled: %s, relative error %.3g", cfg, H, W, h, w,
                sam3_result_string(rc), err);
        for (o = 0; o < cout; o++) {
            const int nt = (H + 3) / 4;
            const double *p = st + (size_t)o * nt * 3;
            double n = 0, mean = 0, m2 = 0, rm = 0, rv = 0;
            for (r = 0; r < nt; r++) n += p[3 * r], mean += p[3 * r] * p[3 * r + 1];
            mean /= n;
            for (r = 0; r < nt; r++) m2 += p[3 * r + 2] + p[3 * r] * (p[3 * r + 1] - mean) * (p[3 * r + 1] - mean);
            for (i = 0; i < H * W; i++) rm += y[(size_t)o * H * W + i];
            rm /= H * W;
            for (i = 0; i < H * W; i++) rv += (y[(size_t)o * H * W + i] - rm) * (y[(size_t)o * H * W + i] - rm);
            t_check(n == H * W && fabs(mean - rm) <= 1e-9 * (1 + sqrt(rv / (H * W))) && fabs(m2 - rv) <= 1e-9 * rv,
                    "%s: conv3x3 %dx%d statistics of channel %d: count %g mean %.9g var %.9g, its output's %d, %.9g, %.9g", cfg, H, W, o, n, mean,
                    m2 / n, H * W, rm, rv / (H * W));
        }
    }
done:
    sam3_ctx_free(c);
    free(wt), free(bias), free(x), free(sk), free(y), free(ref), free(st);
}

/* Input sides the patch does not divide, one patch (its 0.5x neck level would be empty) and
   beyond the limit are invalid arguments that name the size. */
static void test_bad_image_sizes(const char *cfg, const char *model_path, int p) {
    const int bad[] = {g_image_size + 1, g_image_size - 1, p, (65536 / p + 1) * p, -2 * p};
    size_t i;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256], want[32];
        sam3_load_options lo = sam3_load_options_default();
        sam3_model *m = NULL;
        sam3_result rc;
        lo.image_size = bad[i];
        lo.error = err;
        lo.error_size = sizeof(err);
        rc = sam3_load(model_path, &lo, &m);
        snprintf(want, sizeof(want), "image_size %d", bad[i]);
        t_check(rc == SAM3_ERR_INVALID_ARG && !m && strstr(err, want), "%s: image_size %d: %s (%s)", cfg, bad[i], sam3_result_string(rc), err);
        sam3_free(m);
    }
}

static void run_config(const char *cfg, const char *model_path, const char *dir) {
    static const char *cases[] = {"text", "text_boxes", "boxes", "boxes_edge"};
    sam3_model *m;
    sam3_result rc;
    dump vis;
    int i;
    char path[512];
    sam3_load_options lo = sam3_load_options_default();
    lo.image_size = g_image_size;
    rc = sam3_load(model_path, &lo, &m);
    t_check(rc == SAM3_OK, "%s: sam3_load(%s): %s", cfg, model_path, sam3_result_string(rc));
    if (rc != SAM3_OK) return;
    t_check(!g_image_size || sam3_model_image_size(m) == g_image_size, "%s: model input side %d, asked %d", cfg,
            sam3_model_image_size(m), g_image_size);
    if (g_image_size) test_bad_image_sizes(cfg, model_path, m->arch == SAM3__ARCH_SAM1 ? m->s1.patch : m->vit.patch);
    if (m->arch == SAM3__ARCH_SAM1) {
        printf("%s: SAM 1 (vision encoder and interactive head)\n", cfg);
        test_points(cfg, dir, m, "ref_sam1");
        if (!g_bf16) test_everything(cfg, dir, m, "ref_sam1");
        if (!g_bf16) test_everything_crops(cfg, dir, m, "ref_sam1");
        if (!g_bf16) test_everything_crops_hf(cfg, dir, m, "ref_sam1");
        if (!g_bf16 && !strcmp(cfg + strlen(cfg) - SAM3__MIN(strlen(cfg), 6), "sam1_a")) test_everything_tables(cfg, dir, m);
        sam3_free(m);
        return;
    }
    test_attention_kernel(cfg, m);
    test_conv3x3(cfg, m);
    printf("%s: vision encoder\n", cfg);
    test_vision(cfg, dir, m);
    printf("%s: text encoder\n", cfg);
    test_text(cfg, dir, m);
    snprintf(path, sizeof(path), "%s/ref_vision.sam3", dir);
    if (dump_open(&vis, path)) {
        /* all cases on one context and one image, as an application would run several prompts */
        const sam3__tensor *img = dump_get(&vis, "input.image", SAM3__DT_U8);
        sam3_ctx_options co = test_ctx_options();
        sam3_ctx *c = NULL, *c2 = NULL;
        tapper tp;
        memset(&tp, 0, sizeof(tp));
        tp.cfg = cfg;
        co.tap = tap_compare;
        co.tap_user = &tp;
        printf("%s: segmentation\n", cfg);
        if (img && sam3_ctx_new(m, &co, &c) == SAM3_OK &&
            sam3_set_image(c, (const uint8_t *)img->data, (int)img->shape[1], (int)img->shape[0], (int)img->shape[1] * 3, SAM3_RGB8) == SAM3_OK) {
            sam3_ctx_options co2 = test_ctx_options();
            if (sam3_ctx_new(m, &co2, &c2) != SAM3_OK ||
                sam3_set_image(c2, (const uint8_t *)img->data, (int)img->shape[1], (int)img->shape[0], (int)img->shape[1] * 3, SAM3_RGB8) != SAM3_OK) {
                t_check(0, "%s: untapped context", cfg);
                sam3_ctx_free(c2);
                c2 = NULL;
            }
            for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) test_case(cfg, dir, cases[i], m, c, c2, &tp);
            if (c2) test_image_switch(cfg, m, c2, img);
        } else {
            t_check(0, "%s: image for the cases", cfg);
        }
        sam3_ctx_free(c2);
        sam3_ctx_free(c);
        dump_close(&vis);
    }
    printf("%s: interactive head\n", cfg);
    test_points(cfg, dir, m, "ref_points");
    if (!g_bf16) test_everything(cfg, dir, m, "ref_points");
    if (!g_bf16) test_everything_crops(cfg, dir, m, "ref_points");
    if (!g_bf16) test_everything_crops_hf(cfg, dir, m, "ref_points");
    sam3_free(m);
}

int main(int argc, char **argv) {
    int i;
    sam3__allocator_resolve(NULL, &g_alloc);
    if (argc >= 5 && !strcmp(argv[1], "--model") && !strcmp(argv[3], "--data")) {
        int a = 5;
        if (argc >= 7 && !strcmp(argv[5], "--image-size")) {
            g_image_size = atoi(argv[6]);
            if (g_image_size <= 0) { fprintf(stderr, "test_parity: --image-size takes a positive side, got '%s'\n", argv[6]); return 2; }
            a = 7;
        }
        g_bf16 = argc > a && !strcmp(argv[a], "--bf16");
        g_bf16_att = g_bf16 && argc > a + 1 && !strcmp(argv[a + 1], "--bf16-attention");
        run_config(argv[4], argv[2], argv[4]);
        if (g_bf16) {
            const double mean = g_bf.masks ? g_bf.iou_sum / g_bf.masks : 1;
            printf("bf16 %s: %d masks, mask IoU mean %.5f worst %.5f; max score diff %.2e; %d instances at the threshold kept on "
                   "the other side\n", argv[2], g_bf.masks, mean, g_bf.masks ? g_bf.iou_worst : 1.0, g_bf.score_diff, g_bf.flips);
            t_check(g_bf.masks > 0, "bf16: masks compared");
            t_check(mean >= BF16_MEAN_IOU, "bf16: mean mask IoU %.4f < %.2f", mean, BF16_MEAN_IOU);
        }
        return t_done("test_parity");
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_parity NAME...        (build/NAME.sam3 against tests/data/NAME/)\n"
                        "       test_parity --model FILE --data DIR [--image-size N] [--bf16 [--bf16-attention]]\n");
        return 2;
    }
    for (i = 1; i < argc; i++) {
        char model_path[512], dir[512];
        snprintf(model_path, sizeof(model_path), "build/%s.sam3", argv[i]);
        snprintf(dir, sizeof(dir), "tests/data/%s", argv[i]);
        run_config(argv[i], model_path, dir);
    }
    return t_done("test_parity");
}
