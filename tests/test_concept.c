/* The concept tracker's mask primitives (sam3.h, "concept tracker" section) against a plain-Python
   restatement of Sam3VideoModel's mask_iou, nms_masks and fill_holes_in_mask_scores:

     python3 tests/concept_ops.py build/concept_ops.sam3
     test_concept --ops build/concept_ops.sam3

   HF 5.17 runs NMS and hole filling only with the optional `kernels` package (absent on the
   reference machine), so these two steps have no HF dump to compare with; tests/concept_ops.py
   states them as the kernels compute them (greedy NMS by probability, 8-connected components). */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"
#include "test_dump.h"

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

int main(int argc, char **argv) {
    const char *ops = NULL;
    int i;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ops")) ops = argv[i + 1];
    }
    sam3__allocator_resolve(NULL, &g_alloc);
    if (ops) test_ops(ops);
    return t_done("test_concept");
}
