/* prof_encoder - the image encoder alone, timed: sam3_set_image on a synthetic image, one untimed
   run, then R timed runs; prints each run's ViT trunk and neck (ms) and their medians. Built with
   -DSAM3_PROFILE (make build/prof_encoder) it also prints where the trunk's time went: by stage
   (the calling thread's clock) and, inside the bf16 products and the bf16 attention, by part
   summed over the threads (a thread's time in a parallel region less its parts is its wait at the
   joins). For tuning runs on a full-size file; not part of make test.

   usage: prof_encoder MODEL.sam3 [THREADS [RUNS [WxH]]]     (SAM3_ISA picks the kernel path) */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    sam3_model *m;
    sam3_ctx *c;
    sam3_ctx_options o = sam3_ctx_options_default();
    const int nt = argc > 2 ? atoi(argv[2]) : 0, runs = argc > 3 ? atoi(argv[3]) : 3;
    int W = 1280, H = 960, i, x, y;
    double trunk[64], neck[64];
    unsigned char *img;
    if (argc < 2 || runs < 1 || runs > 64 || (argc > 4 && sscanf(argv[4], "%dx%d", &W, &H) != 2) || W < 1 || H < 1) {
        fprintf(stderr, "usage: prof_encoder MODEL.sam3 [THREADS [RUNS (1..64) [WxH]]]\n");
        return 2;
    }
    if (!(img = (unsigned char *)malloc((size_t)W * H * 3))) return 1;
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) {
            unsigned char *p = img + ((size_t)y * W + x) * 3;
            p[0] = (unsigned char)(x * 255 / W), p[1] = (unsigned char)(y * 255 / H), p[2] = (unsigned char)((x ^ y) & 255);
        }
    if (sam3_load(argv[1], NULL, &m) != SAM3_OK) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    o.n_threads = nt;
    if (sam3_ctx_new(m, &o, &c) != SAM3_OK) return fprintf(stderr, "cannot make a context\n"), 1;
    printf("prof_encoder: %s, threads %d, path %s, bf16 kernel %d, image %dx%d, %d runs\n", argv[1], sam3_ctx_n_threads(c), c->k->name, c->bk,
           W, H, runs);
    for (i = -1; i < runs; i++) {
        sam3_timings t;
#if defined(SAM3_PROFILE)
        if (i == 0) memset(c->prof, 0, sizeof(c->prof)), memset(c->prof_thr, 0, sizeof(c->prof_thr));
#endif
        if (sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8) != SAM3_OK) return fprintf(stderr, "%s\n", sam3_ctx_last_error(c)), 1;
        t = sam3_ctx_timings(c);
        if (i < 0) continue;
        trunk[i] = t.vision_trunk, neck[i] = t.vision_neck;
        printf("run %d: trunk %.1f ms, neck %.1f ms\n", i + 1, trunk[i], neck[i]);
    }
    qsort(trunk, (size_t)runs, sizeof(double), cmp_double);
    qsort(neck, (size_t)runs, sizeof(double), cmp_double);
    printf("median: trunk %.1f ms, neck %.1f ms\n", trunk[runs / 2], neck[runs / 2]);
    { /* the trunk's output bits, to compare builds (FNV-1a) */
        const unsigned char *p = (const unsigned char *)c->vit_out;
        const size_t nb = (size_t)c->m->vit.grid * c->m->vit.grid * c->m->vit.hidden * sizeof(float);
        unsigned long long hsh = 1469598103934665603ull;
        size_t u;
        for (u = 0; u < nb; u++) hsh = (hsh ^ p[u]) * 1099511628211ull;
        printf("trunk output hash %016llx\n", hsh);
    }
#if defined(SAM3_PROFILE)
    {
        static const char *sn[SAM3__PS_N] = {"embed+ln_pre", "ln1 (windows)", "qkv product", "rope+k/v pack", "attention",
                                             "proj product", "proj bias+residual", "ln2", "fc1+gelu", "fc2 product", "fc2 bias+residual"};
        static const char *tn[SAM3__PT_N] = {"gemm total", "gemm pack B", "gemm pack A", "gemm tiles", "attn total",
                                             "attn q split", "attn QK tiles", "attn softmax", "attn PV+out"};
        double tick0 = sam3__prof_now(), ms0 = sam3__now_ms(), tot = 0, tms, sum[SAM3__PT_N];
        int t, k;
        while (sam3__now_ms() - ms0 < 200) {
        }
        tms = (sam3__prof_now() - tick0) / (sam3__now_ms() - ms0); /* ticks a millisecond */
        for (k = 0; k < SAM3__PS_N; k++) tot += c->prof[k];
        printf("stage (ms an image, calling thread)\n");
        for (k = 0; k < SAM3__PS_N; k++) printf("  %-20s %8.1f  %5.1f %%\n", sn[k], c->prof[k] / tms / runs, 100.0 * c->prof[k] / tot);
        printf("  %-20s %8.1f\n", "sum", tot / tms / runs);
        for (k = 0; k < SAM3__PT_N; k++)
            for (sum[k] = 0, t = 0; t < SAM3__PROF_THR; t++) sum[k] += c->prof_thr[t][k];
        printf("threads' parts (ms an image, summed over threads; / threads in brackets)\n");
        for (k = 0; k < SAM3__PT_N; k++) printf("  %-20s %9.1f  (%7.1f)\n", tn[k], sum[k] / tms / runs, sum[k] / tms / runs / sam3_ctx_n_threads(c));
        printf("  %-20s %9.1f\n", "gemm wait", (sum[0] - sum[1] - sum[2] - sum[3]) / tms / runs);
        printf("  %-20s %9.1f\n", "attn wait", (sum[4] - sum[5] - sum[6] - sum[7] - sum[8]) / tms / runs);
    }
#endif
    sam3_ctx_free(c);
    sam3_free(m);
    free(img);
    return 0;
}
