/* The fast kernels against their reference versions (sam3__ref_* in sam3.h's kernel section), on
   random inputs of ragged sizes (not multiples of the vector width, the register tiles or the
   attention's key panels and blocks) and hostile ones: softmax rows far from zero or spanning
   far more than the float range of exp (denormal and zero probabilities), GELU and sigmoid
   arguments whose exponentials underflow to denormals, denormal inputs, one key scoring far above
   the rest. Whatever SIMD the build has (AVX-512, AVX2, NEON under qemu in `make test-cross`, or
   the scalar mapping) is what is checked, against the same tolerances everywhere.
   usage: test_kernels MODEL.sam3   (any model: only for a context; last line "test_kernels: N passed, N failed";
          SAM3_TEST_VERBOSE=1 lists the passing checks too) */
#if defined(__GNUC__) && !defined(__clang__)
/* as tests/test_gemm.c: GCC 12 guesses tensor names may not fit in this TU, which never loads them */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <math.h>

#if defined(SAM3_REFERENCE_KERNELS)
#error "test_kernels compares the fast kernels with the reference ones: build it without SAM3_REFERENCE_KERNELS"
#endif

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *fbuf(size_t n) { return (float *)malloc((n ? n : 1) * sizeof(float)); }

/* |got - want| <= rel |want| + abs at every i; reports the first miss */
static int close_all(const float *got, const float *want, size_t n, double rel, double abs_tol, size_t *bad) {
    size_t i;
    for (i = 0; i < n; i++) {
        const double g = got[i], w = want[i];
        if (!(fabs(g - w) <= rel * fabs(w) + abs_tol)) {
            *bad = i;
            return 0;
        }
    }
    return 1;
}
static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    size_t i;
    for (i = 0; i < n; i++) num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), den += (double)b[i] * b[i];
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void test_softmax(void) {
    static const int lens[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 65, 100, 257};
    static const int heads[] = {1, 3, 8};
    /* 0: plain; 1: offset 1e4 (exp(x) overflows without the max); 2: spread 300 (most terms
       underflow, many to denormals); 3: all equal; 4: a -inf-like -FLT_MAX entry. Several rows
       (heads) at once, each with its own offset, so that a row's max must not leak into the next. */
    int li, hi, kind, fails = 0;
    for (kind = 0; kind < 5; kind++)
        for (hi = 0; hi < (int)(sizeof(heads) / sizeof(heads[0])); hi++)
            for (li = 0; li < (int)(sizeof(lens) / sizeof(lens[0])); li++) {
                const int n = lens[li], nh = heads[hi];
                float *a = fbuf((size_t)nh * n), *b = fbuf((size_t)nh * n);
                size_t bad = 0;
                int h, j;
                for (h = 0; h < nh; h++)
                    for (j = 0; j < n; j++) {
                        float x = 4 * frand() + 40 * h;
                        if (kind == 1) x += 1e4f;
                        if (kind == 2) x = 150 * frand();
                        if (kind == 3) x = 0.25f;
                        if (kind == 4 && j == n / 2 && n > 1) x = -FLT_MAX;
                        a[h * n + j] = b[h * n + j] = x;
                    }
                sam3__softmax_rows(a, nh, n);
                for (h = 0; h < nh; h++) sam3__ref_softmax_row(b + (size_t)h * n, n);
                /* a few ulp of exp per term; probabilities below 1e-30 of the row's sum may flush */
                if (!close_all(a, b, (size_t)nh * n, 4e-6, 1e-30, &bad)) {
                    fails++;
                    t_note("  softmax kind %d rows %d of %d: [%d] %.9g, reference %.9g", kind, nh, n, (int)bad, a[bad], b[bad]);
                }
                free(a);
                free(b);
            }
    t_check(fails == 0, "softmax rows (1, 3, 8 rows of ragged lengths, offset 1e4, spread past the float range, -FLT_MAX): %d bad", fails);
}

static void test_sigmoid_gelu(sam3_ctx *c) {
    static const int dims[] = {1, 5, 8, 16, 17, 33, 100, 255, 256, 257, 1000};
    int di, fails = 0, gfails = 0;
    for (di = 0; di < (int)(sizeof(dims) / sizeof(dims[0])); di++) {
        const int d = dims[di], rows = 3;
        const size_t n = (size_t)rows * d;
        float *x = fbuf(n), *y = fbuf(n), *yr = fbuf(n), *g = fbuf(n), *gr = fbuf(n), *bias = fbuf((size_t)d);
        size_t i, bad = 0;
        int wb;
        for (i = 0; i < n; i++) {
            switch (i % 5) {
            case 0: x[i] = 8 * frand(); break;
            case 1: x[i] = 95 * frand(); break;              /* exp(-x) past the float range, or a denormal */
            case 2: x[i] = 1e-39f * frand(); break;          /* denormal inputs */
            case 3: x[i] = -12.0f + 0.5f * frand(); break;   /* GELU's tail: exp(-u^2) far below the normals */
            default: x[i] = 1e-3f * frand(); break;
            }
        }
        for (i = 0; i < (size_t)d; i++) bias[i] = 0.5f * frand();
        sam3__sigmoid_row(x, y, n);
        sam3__ref_sigmoid_row(x, yr, n);
        if (!close_all(y, yr, n, 2e-6, 1e-37, &bad)) {
            fails++;
            t_note("  sigmoid d %d: x %.9g: %.9g, reference %.9g", d, x[bad], y[bad], yr[bad]);
        }
        for (wb = 0; wb < 2; wb++) {
            memcpy(g, x, n * sizeof(float));
            memcpy(gr, x, n * sizeof(float));
            sam3__gelu_bias(c, g, (size_t)rows, d, wb ? bias : NULL);
            sam3__ref_gelu_bias(gr, (size_t)rows, d, wb ? bias : NULL);
            /* erf by Abramowitz & Stegun 7.1.26: absolute error 1.5e-7, times 0.5 |v| */
            for (i = 0; i < n; i++) {
                const double v = (double)x[i] + (wb ? bias[i % (size_t)d] : 0.0);
                if (!(fabs((double)g[i] - gr[i]) <= 2e-7 * fabs(v) + 2e-7 * fabs((double)gr[i]) + 1e-37)) {
                    gfails++;
                    t_note("  gelu d %d bias %d: v %.9g: %.9g, reference %.9g", d, wb, v, g[i], gr[i]);
                    break;
                }
            }
        }
        free(x), free(y), free(yr), free(g), free(gr), free(bias);
    }
    t_check(fails == 0, "sigmoid rows (ragged, exponentials past the float range, denormal inputs): %d bad", fails);
    t_check(gfails == 0, "GELU with and without bias (ragged widths, denormal inputs and results): %d bad", gfails);
}

static void test_layernorm(void) {
    static const int dims[] = {1, 2, 7, 16, 31, 64, 100, 257, 1024};
    int di, fails = 0;
    for (di = 0; di < (int)(sizeof(dims) / sizeof(dims[0])); di++) {
        const int d = dims[di];
        float *x = fbuf((size_t)d), *y = fbuf((size_t)d), *yr = fbuf((size_t)d), *w = fbuf((size_t)d), *b = fbuf((size_t)d);
        sam3__norm nw;
        size_t bad = 0;
        int j, off;
        for (j = 0; j < d; j++) w[j] = 1 + 0.5f * frand(), b[j] = 0.1f * frand();
        nw.w = w, nw.b = b;
        for (off = 0; off < 2; off++) {
            for (j = 0; j < d; j++) x[j] = (off ? 3e3f : 0.0f) + frand();
            sam3__ln_row(x, y, d, &nw, 1e-6f);
            sam3__ref_ln_row(x, yr, d, &nw, 1e-6f);
            if (!close_all(y, yr, (size_t)d, 1e-6, 1e-6, &bad)) {
                fails++;
                t_note("  layer norm d %d offset %d: [%d] %.9g, reference %.9g", d, off, (int)bad, y[bad], yr[bad]);
            }
        }
        free(x), free(y), free(yr), free(w), free(b);
    }
    t_check(fails == 0, "layer norm rows (ragged, mean 3e3 against unit spread): %d bad", fails);
}

/* the small-M GEMM and the built-in SGEMM against sam3__ref_sgemm (its sums in double) */
static void test_gemm(sam3_ctx *c) {
    static const int ms[] = {1, 2, 3, 5, 6, 7, 13, 32, 33};
    static const int ns[] = {1, 3, 4, 5, 17, 33};
    static const int ks[] = {1, 15, 64, 65, 100, 257};
    int mi, ni, ki, fails = 0, cases = 0;
    for (mi = 0; mi < (int)(sizeof(ms) / sizeof(ms[0])); mi++)
        for (ni = 0; ni < (int)(sizeof(ns) / sizeof(ns[0])); ni++)
            for (ki = 0; ki < (int)(sizeof(ks) / sizeof(ks[0])); ki++) {
                const int M = ms[mi], N = ns[ni], K = ks[ki], ta = (mi + ki) % 2, tb = (ni + ki) % 3 != 0, pad = (mi + ni) % 3;
                const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
                const float alpha = ki % 2 ? 0.75f : 1.0f, beta = ni % 2 ? 0.0f : 0.5f;
                float *A = fbuf((size_t)(ta ? K : M) * lda), *B = fbuf((size_t)(tb ? N : K) * ldb);
                float *C = fbuf((size_t)M * ldc), *Cb = fbuf((size_t)M * ldc), *Cr = fbuf((size_t)M * ldc);
                size_t i, bad = 0;
                int path, small = 0;
                sam3__gemm_args g;
                memset(&g, 0, sizeof(g));
                g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = alpha, g.beta = beta, g.a = A, g.lda = lda, g.b = B, g.ldb = ldb, g.ldc = ldc;
                for (i = 0; i < (size_t)(ta ? K : M) * lda; i++) A[i] = frand();
                for (i = 0; i < (size_t)(tb ? N : K) * ldb; i++) B[i] = frand();
                for (i = 0; i < (size_t)M * ldc; i++) Cr[i] = frand();
                for (path = 0; path < 2; path++) {
                    float *out = path ? Cb : C;
                    memcpy(out, Cr, (size_t)M * ldc * sizeof(float));
                    if (beta == 0)
                        for (i = 0; i < (size_t)M * ldc; i++)
                            if (i % (size_t)ldc < (size_t)N) out[i] = NAN; /* beta 0: C must not be read */
                    g.c = out;
                    if (path == 0) small = sam3__gemm_small(c, &g); /* 0: not its shape */
                    else sam3__sgemm_builtin(ki % 3 ? c : NULL, 1 + (ki % 2), &g);
                }
                g.c = Cr;
                sam3__ref_sgemm(&g);
                for (path = 0; path < 2; path++) {
                    const float *out = path ? Cb : C;
                    if (path == 0 && !small) continue;
                    cases++;
                    /* float sums of K terms of magnitude <= 1 */
                    if (!close_all(out, Cr, (size_t)M * ldc, 1e-5, 2e-7 * (K + 4), &bad)) {
                        fails++;
                        t_note("  gemm %s ta %d tb %d M %d N %d K %d: [%d] %.9g, reference %.9g", path ? "built-in" : "small-M", ta, tb, M, N,
                               K, (int)bad, out[bad], Cr[bad]);
                    }
                }
                free(A), free(B), free(C), free(Cb), free(Cr);
            }
    t_check(fails == 0, "GEMM (small-M and built-in, %d ragged cases, transposes, padded strides, beta 0 on NaN): %d bad", cases, fails);
}

/* reference: (nq, ld) rows of q, k, v per head; variants as in test_parity's attention test */
static void test_attention(sam3_ctx *c) {
    static const int cfg[][4] = {/* nq, nk, nh, hd */
                                 {1, 1, 1, 8},    {5, 7, 2, 12},  {33, 45, 3, 16}, {17, 300, 2, 32},
                                 {40, 577, 1, 40}, {9, 1369, 2, 64}, {70, 33, 4, 24}};
    int ci, variant, fails = 0;
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++)
        for (variant = 0; variant < 4; variant++) {
            const int nq = cfg[ci][0], nh = cfg[ci][2], hd = cfg[ci][3], ld = nh * hd + 3;
            const int S = variant == 2 ? (int)ceil(sqrt((double)cfg[ci][1])) : 0, nk = variant == 2 ? S * S : cfg[ci][1];
            const int causal = variant == 1, spike = variant == 3;
            float *q = fbuf((size_t)nq * ld), *k = fbuf((size_t)nk * ld), *v = fbuf((size_t)nk * ld);
            float *o = fbuf((size_t)nq * ld), *r = fbuf((size_t)nq * ld);
            float *rh = fbuf((size_t)nh * nq * (S ? S : 1)), *rw = fbuf((size_t)nh * nq * (S ? S : 1));
            size_t i;
            double err;
            sam3_result rc, rr;
            sam3__attn_args at;
            for (i = 0; i < (size_t)nq * ld; i++) q[i] = frand();
            for (i = 0; i < (size_t)nk * ld; i++) k[i] = 2 * frand(), v[i] = frand();
            for (i = 0; i < (size_t)nh * nq * (S ? S : 1); i++) rh[i] = 3 * frand(), rw[i] = 3 * frand();
            if (spike && nk > 1) { /* one key ~120 above the rest in every head: all others' probabilities denormal or zero */
                int h;
                for (h = 0; h < nh; h++) {
                    for (i = 0; i < (size_t)nq; i++) q[i * ld + (size_t)h * hd] = 1.0f;
                    k[(size_t)(nk * 2 / 3) * ld + (size_t)h * hd] = 120.0f * sqrtf((float)hd);
                }
            }
            memset(&at, 0, sizeof(at));
            at.nq = nq, at.nk = nk, at.nh = nh, at.hd = hd, at.q = q, at.k = k, at.v = v, at.out = o;
            at.ldq = at.ldk = at.ldv = at.ldo = ld, at.causal = causal, at.relh = S ? rh : NULL, at.relw = S ? rw : NULL, at.rel_s = S;
            rc = sam3__attention_rel(c, &at);
            at.out = r;
            rr = sam3__ref_attention(c, &at);
            for (i = 0; i < (size_t)nq * ld; i++)
                if (i % (size_t)ld >= (size_t)nh * hd) o[i] = r[i] = 0; /* the padding columns: neither writes them */
            err = rel_l2(o, r, (size_t)nq * ld);
            if (rc != SAM3_OK || rr != SAM3_OK || !(err <= 2e-6)) {
                fails++;
                t_note("  attention nq %d nk %d nh %d hd %d variant %d: %s / %s, relative error %.3g", nq, nk, nh, hd, variant,
                       sam3_result_string(rc), sam3_result_string(rr), err);
            }
            free(q), free(k), free(v), free(o), free(r), free(rh), free(rw);
        }
    t_check(fails == 0, "attention (ragged queries, keys, heads, head dims; causal, decomposed bias, one key far up): %d bad", fails);
}

/* the ViT's packed layout: keys into panels of SAM3__ATT_PW as sam3__rope_pack writes them */
static void test_attention_packed(sam3_ctx *c) {
    static const int cfg[][4] = {{2, 5, 2, 8}, {3, 49, 2, 16}, {1, 200, 3, 32}, {2, 97, 1, 64}}; /* nb, n, nh, hd */
    int ci, fails = 0;
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
        const int nb = cfg[ci][0], n = cfg[ci][1], nh = cfg[ci][2], hd = cfg[ci][3], C = nh * hd, ld = C + 1;
        const int PW = SAM3__ATT_PW, npan = (n + PW - 1) / PW;
        float *q = fbuf((size_t)nb * n * ld), *q2 = fbuf((size_t)nb * n * ld), *kt = fbuf((size_t)nb * nh * npan * hd * PW);
        float *vp = fbuf((size_t)nb * nh * n * hd), *o = fbuf((size_t)nb * n * ld);
        size_t i;
        int b, h, j, d;
        double err;
        sam3_result rc, rr;
        sam3__rope_args ra;
        for (i = 0; i < (size_t)nb * n * ld; i++) q[i] = q2[i] = 2 * frand();
        for (i = 0; i < (size_t)nb * nh * n * hd; i++) vp[i] = frand();
        for (b = 0; b < nb; b++)
            for (h = 0; h < nh; h++)
                for (j = 0; j < npan * PW; j++)
                    for (d = 0; d < hd; d++)
                        kt[((((size_t)b * nh + h) * npan + j / PW) * hd + d) * PW + j % PW] = j < n ? 2 * frand() : 0.0f;
        /* in place, as the ViT calls it: the output over q */
        memset(&ra, 0, sizeof(ra));
        ra.q = q, ra.ld = ld, ra.nb = nb, ra.nk = n, ra.nh = nh, ra.hd = hd;
        rc = sam3__attention_packed(c, &ra, kt, vp);
        ra.q = q2;
        rr = sam3__ref_attention_packed(c, &ra, kt, vp);
        (void)o;
        err = rel_l2(q, q2, (size_t)nb * n * ld);
        if (rc != SAM3_OK || rr != SAM3_OK || !(err <= 2e-6)) {
            fails++;
            t_note("  packed attention nb %d n %d nh %d hd %d: relative error %.3g", nb, n, nh, hd, err);
        }
        free(q), free(q2), free(kt), free(vp), free(o);
    }
    t_check(fails == 0, "packed (ViT) attention, in place, ragged windows: %d bad", fails);
}

#if defined(__aarch64__)
#define BK1_NAME "BFDOT" /* the bf16 kernel of level 1 (SAM3__BK_AVX512 / SAM3__BK_NEON) */
#else
#define BK1_NAME "AVX512-BF16"
#endif

#if defined(SAM3__ATT_PV_BF16) && defined(SAM3__FAST_ATTENTION)
/* The ViT's attention with f32 scores and P.V in bf16 (AVX512-BF16 without AMX, or BFDOT): V packed by
   sam3__v_pack_bf16, against the f32 reference. The bound is bf16's: probabilities and values
   each rounded once (2^-9 relative); the error must also be above f32's, or the bf16 path did
   not run. */
static void test_attention_pv_bf16(sam3_ctx *c) {
    static const int cfg[][4] = {{2, 5, 2, 32}, {3, 97, 2, 64}, {1, 577, 1, 64}, {1, 1100, 2, 32}}; /* nb, n, nh, hd */
    int ci, fails = 0;
    if (sam3__bf16_detect() < SAM3__BK_AVX512) {
        t_note("  P.V in bf16: no " BK1_NAME " on this CPU, skipped");
        return;
    }
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
        const int nb = cfg[ci][0], n = cfg[ci][1], nh = cfg[ci][2], hd = cfg[ci][3], C = nh * hd, ld = C + 1;
        const int PW = SAM3__ATT_PW, npan = (n + PW - 1) / PW, nkb = (n + 31) / 32 * 32;
        float *q = fbuf((size_t)nb * n * ld), *q2 = fbuf((size_t)nb * n * ld), *kt = fbuf((size_t)nb * nh * npan * hd * PW);
        float *v = fbuf((size_t)nb * n * C), *vp = fbuf((size_t)nb * nh * n * hd);
        uint16_t *vb = (uint16_t *)malloc((size_t)nb * nh * nkb * hd * sizeof(uint16_t));
        size_t i;
        int b, h, j, d;
        double err;
        sam3_result rc, rr;
        sam3__rope_args ra;
        for (i = 0; i < (size_t)nb * n * ld; i++) q[i] = q2[i] = 2 * frand();
        for (i = 0; i < (size_t)nb * n * C; i++) v[i] = frand();
        for (b = 0; b < nb; b++)
            for (h = 0; h < nh; h++) {
                for (j = 0; j < n; j++) memcpy(vp + (((size_t)b * nh + h) * n + j) * hd, v + ((size_t)b * n + j) * C + (size_t)h * hd, (size_t)hd * sizeof(float));
                for (j = 0; j < npan * PW; j++)
                    for (d = 0; d < hd; d++)
                        kt[((((size_t)b * nh + h) * npan + j / PW) * hd + d) * PW + j % PW] = j < n ? 2 * frand() : 0.0f;
            }
        memset(vb, 0xff, (size_t)nb * nh * nkb * hd * sizeof(uint16_t)); /* NaN: the packer must write the padding */
        memset(&ra, 0, sizeof(ra)); /* v's rows alone, C apart */
        ra.v = v, ra.ld = C, ra.nb = nb, ra.nk = n, ra.nh = nh, ra.hd = hd;
        sam3__v_pack_bf16(c, &ra, vb);
        ra.q = q, ra.ld = ld; /* the queries' rows, ld apart, then the output */
        rc = sam3__attention_packed_fast(c, &ra, kt, NULL, vb);
        ra.q = q2;
        rr = sam3__ref_attention_packed(c, &ra, kt, vp);
        err = rel_l2(q, q2, (size_t)nb * n * ld);
        if (rc != SAM3_OK || rr != SAM3_OK || !(err <= 4e-3 && err > 1e-5)) {
            fails++;
            t_note("  P.V in bf16, nb %d n %d nh %d hd %d: relative error %.3g (bf16's ~2e-3 expected)", nb, n, nh, hd, err);
        }
        free(q), free(q2), free(kt), free(v), free(vp), free(vb);
    }
    t_check(fails == 0, "ViT attention with P.V in bf16 (ragged windows, keys past one block): %d bad", fails);
}
#endif

#if defined(SAM3__ATT_BF16)
/* Self-attention outside the ViT in bf16 (sam3__self_attention_bf16, the full-size DETR encoder's):
   K and V packed without RoPE, then the path the CPU takes (AVX512-BF16 alone: P.V in bf16, head
   dims that are multiples of 32; AMX: the split-score attention) and the split-score path forced
   on AVX512-BF16, against the f32 attention. The error must be bf16's: above 1e-5 (the bf16 path
   ran) and at most 4e-3. The token floor lowered from 1024 so that ragged small sizes run. */
static void test_self_attention_bf16(sam3_ctx *c) {
    static const int cfg[][3] = {{70, 2, 32}, {33, 1, 64}, {129, 2, 64}, {40, 3, 16}}; /* n, nh, hd */
    const int bka0 = c->bka, bf0 = c->bf16, min0 = c->att_min;
    sam3__attn_w w;
    int ci, pass, fails = 0, ran = 0, want;
    if (c->bk < SAM3__BK_AVX512) { /* the context's kernel: the CPU's, or less in a -DSAM3_BF16_KERNEL build */
        t_note("  self-attention in bf16: no " BK1_NAME " kernel in this context, skipped");
        return;
    }
    memset(&w, 0, sizeof(w));
    c->bf16 = 1, c->att_min = 0;
    for (pass = 0; pass < 2; pass++) {
        c->bka = pass ? SAM3__BK_AVX512 : bka0; /* pass 1: the split-score path on any bf16 CPU */
        for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
            const int n = cfg[ci][0], nh = cfg[ci][1], hd = cfg[ci][2], di = nh * hd;
            float *q = fbuf((size_t)n * di), *q2 = fbuf((size_t)n * di), *k = fbuf((size_t)n * di), *v = fbuf((size_t)n * di);
            sam3_result rc = SAM3_OK, rr;
            sam3__attn_args at;
            size_t i;
            int took;
            double err;
            for (i = 0; i < (size_t)n * di; i++) q[i] = q2[i] = 2 * frand(), k[i] = 2 * frand(), v[i] = frand();
            took = sam3__self_attention_bf16(c, &w, n, nh, di, q, k, v, &rc);
            memset(&at, 0, sizeof(at));
            at.nq = at.nk = n, at.nh = nh, at.hd = hd, at.q = at.out = q2, at.k = k, at.v = v, at.ldq = at.ldk = at.ldv = at.ldo = di;
            rr = sam3__attention_rel(c, &at);
            err = rel_l2(q, q2, (size_t)n * di);
            ran += took; /* not taken: this CPU's path needs hd a multiple of 32 */
            if (took && (rc != SAM3_OK || rr != SAM3_OK || !(err <= 4e-3 && err > 1e-5))) {
                fails++;
                t_note("  self-attention in bf16 (bka %d), n %d nh %d hd %d: relative error %.3g", c->bka, n, nh, hd, err);
            }
            free(q), free(q2), free(k), free(v);
        }
    }
    c->bka = bka0, c->bf16 = bf0, c->att_min = min0;
#if defined(SAM3__ATT_PV_BF16)
    want = 6; /* the P.V path takes the head dims that are multiples of 32 too */
#else
    want = 4;
#endif
    t_check(fails == 0 && ran >= want, "self-attention without RoPE in bf16 (%d sizes ran, %d wanted): %d bad", ran, want, fails);
}
#endif

#if defined(SAM3__ATT_BF16)
/* The memory attention's cross-attention on the bf16 tiles (sam3__attention_rope with ra.nq: keys in
   chunks, the softmax online, tasks of several 32-row tiles) against the f32 attention: nq queries
   apart from nk keys, ragged counts, several chunks, one and two heads. The error must be bf16's:
   scores from q and k rounded to bf16 (SAM3__ATT_XSPLIT 1, as PyTorch's bf16 attention) and the
   probabilities rounded (above 1e-5, at most 8e-3), and the bits the same on 1 thread and on 2
   (the rows a task takes change with the threads). */
static void test_cross_attention_bf16(sam3_ctx *c) {
    static const int cfg[][4] = {{70, 600, 1, 64}, {33, 257, 2, 32}, {300, 1000, 1, 256}, {5, 31, 1, 16}}; /* nq, nk, nh, hd */
    const int nt0 = c->nt;
    int ci, fails = 0;
    if (c->bk < SAM3__BK_AVX512) {
        t_note("  cross-attention in bf16: no AVX512-BF16 kernel in this context, skipped");
        return;
    }
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
        const int nq = cfg[ci][0], nk = cfg[ci][1], nh = cfg[ci][2], hd = cfg[ci][3], di = nh * hd, hdp = (hd + 31) / 32 * 32;
        const size_t nkb = (size_t)(nk + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR;
        float *q = fbuf((size_t)nq * di), *q1 = fbuf((size_t)nq * di), *q2 = fbuf((size_t)nq * di), *k = fbuf((size_t)nk * di);
        float *v = fbuf((size_t)nk * di), *kb = fbuf((size_t)nh * nkb * SAM3__ATT_KSPLIT * hdp), *vb = fbuf((size_t)nh * nkb * hdp);
        sam3_result rc, r1, rr;
        sam3__rope_args ra;
        sam3__attn_args at;
        size_t i;
        double err;
        for (i = 0; i < (size_t)nq * di; i++) q[i] = q1[i] = q2[i] = 2 * frand();
        for (i = 0; i < (size_t)nk * di; i++) k[i] = 2 * frand(), v[i] = frand();
        memset(&ra, 0, sizeof(ra));
        ra.k = k, ra.v = v, ra.ld = di, ra.nb = 1, ra.nk = nk, ra.nq = nq, ra.nh = nh, ra.hd = hd;
        ra.q = q;
        rc = sam3__attention_rope(c, SAM3__ATT_TILES, &ra, kb, vb);
        c->nt = 1, ra.q = q1;
        r1 = sam3__attention_rope(c, SAM3__ATT_TILES, &ra, kb, vb);
        c->nt = nt0;
        memset(&at, 0, sizeof(at));
        at.nq = nq, at.nk = nk, at.nh = nh, at.hd = hd, at.q = at.out = q2, at.k = k, at.v = v, at.ldq = at.ldk = at.ldv = at.ldo = di;
        rr = sam3__attention_rel(c, &at);
        err = rel_l2(q, q2, (size_t)nq * di);
        if (rc != SAM3_OK || r1 != SAM3_OK || rr != SAM3_OK || !(err <= 8e-3 && err > 1e-5) || memcmp(q, q1, (size_t)nq * di * sizeof(float))) {
            fails++;
            t_note("  cross-attention in bf16, nq %d nk %d nh %d hd %d: relative error %.3g, 1 thread %s", nq, nk, nh, hd, err,
                   memcmp(q, q1, (size_t)nq * di * sizeof(float)) ? "differs" : "the same");
        }
        free(q), free(q1), free(q2), free(k), free(v), free(kb), free(vb);
    }
    t_check(fails == 0, "cross-attention in bf16 (keys in chunks, online softmax): %d bad", fails);
}
#endif

#if defined(SAM3__ATT_BF16)
/* The ViT's bf16 attention (sam3__rope_pack_bf16, sam3__v_pack_bf16, sam3__attention_packed_bf16)
   with each bf16 kernel this CPU has, against its definition in double: q (scaled) and k rotated
   in f32, the scores exact (the kernel's split products leave ~2^-16 of them), probabilities and
   values rounded to bf16 for P.V, the sum unrounded. Ragged keys and query rows (not multiples of
   the 32-key panels and 32-row tasks), head dims padded to 32. The bound: one bf16 rounding of a
   probability (2^-9 relative) may differ where the inputs to its rounding differ. */
static void test_attention_bf16(sam3_ctx *c) {
    static const int cfg[][4] = {{2, 5, 2, 16}, {1, 33, 2, 64}, {2, 100, 1, 40}, {1, 577, 2, 64}}; /* nb, n, nh, hd */
    const int have = sam3__bf16_detect();
    int kern, ci;
    for (kern = SAM3__BK_AVX512; kern <= have; kern++) {
        int fails = 0;
        for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
            const int nb = cfg[ci][0], n = cfg[ci][1], nh = cfg[ci][2], hd = cfg[ci][3], C = nh * hd, ld = C + 3;
            const int nkp = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, hdp = (hd + 31) / 32 * 32;
            const size_t rows = (size_t)nb * n * ld;
            float *q = fbuf(rows), *k = fbuf(rows), *v = fbuf(rows), *q0 = fbuf(rows), *bq = fbuf(C), *bk = fbuf(C), *bv = fbuf(C);
            float *tab = fbuf((size_t)n * hd);
            uint16_t *kt = (uint16_t *)malloc((size_t)nb * nh * nkp * SAM3__ATT_KSPLIT * hdp * sizeof(uint16_t));
            uint16_t *vp = (uint16_t *)malloc((size_t)nb * nh * nkp * hdp * sizeof(uint16_t));
            double *s = (double *)malloc((size_t)n * sizeof(double)), vmax = 0, worst = 0, flops = c->flops[SAM3__ST_NONE];
            const float scale = 1.0f / sqrtf((float)hd);
            size_t i;
            int b, h, qi, j, d, m;
            sam3_result rc;
            sam3__rope_args ra;
            /* scores up to ~50, as a trained ViT's: rounded to bf16 they would be off by ~0.1 */
            for (i = 0; i < rows; i++) q0[i] = q[i] = 6 * frand(), k[i] = 6 * frand(), v[i] = frand();
            for (i = 0; i < (size_t)C; i++) bq[i] = 0.5f * frand(), bk[i] = 0.5f * frand(), bv[i] = 0.5f * frand();
            for (j = 0; j < n; j++)
                for (m = 0; m < hd / 2; m++) {
                    const float a = 3.0f * frand();
                    tab[(size_t)j * hd + 2 * m] = cosf(a), tab[(size_t)j * hd + 2 * m + 1] = sinf(a);
                }
            for (i = 0; i < rows; i++)
                if (i % ld < (size_t)C && fabs(v[i] + bv[i % ld]) > vmax) vmax = fabs(v[i] + bv[i % ld]);
            /* NaN everywhere first: the packers must write every padding value */
            memset(kt, 0xff, (size_t)nb * nh * nkp * SAM3__ATT_KSPLIT * hdp * sizeof(uint16_t));
            memset(vp, 0xff, (size_t)nb * nh * nkp * hdp * sizeof(uint16_t));
            memset(&ra, 0, sizeof(ra));
            ra.q = q, ra.k = k, ra.v = v, ra.ld = ld, ra.bq = bq, ra.bk = bk, ra.bv = bv;
            ra.nb = nb, ra.nk = n, ra.nh = nh, ra.hd = hd, ra.tab = tab;
            sam3__rope_pack_bf16(c, &ra, kt);
            sam3__v_pack_bf16(c, &ra, vp);
            rc = sam3__attention_packed_bf16(c, kern, &ra, kt, vp);
            flops = c->flops[SAM3__ST_NONE] - flops; /* q.k as 3 products (split scores), P.V as 1 */
            for (b = 0; b < nb && rc == SAM3_OK; b++)
                for (h = 0; h < nh; h++)
                    for (qi = 0; qi < n; qi++) {
                        const float *cq = tab + (size_t)qi * hd;
                        double mx = -1e300, sum = 0;
                        for (j = 0; j < n; j++) {
                            const float *ck = tab + (size_t)j * hd;
                            double acc = 0;
                            for (m = 0; m < hd / 2; m++) {
                                const float *qr = q0 + ((size_t)b * n + qi) * ld + (size_t)h * hd, *kr = k + ((size_t)b * n + j) * ld + (size_t)h * hd;
                                const float *bqh = bq + (size_t)h * hd, *bkh = bk + (size_t)h * hd;
                                const float qa = qr[2 * m] + bqh[2 * m], qb = qr[2 * m + 1] + bqh[2 * m + 1];
                                const float ka = kr[2 * m] + bkh[2 * m], kb = kr[2 * m + 1] + bkh[2 * m + 1];
                                const float q1 = qa * cq[2 * m] - qb * cq[2 * m + 1], q2 = qb * cq[2 * m] + qa * cq[2 * m + 1];
                                const float k1 = ka * ck[2 * m] - kb * ck[2 * m + 1], k2 = kb * ck[2 * m] + ka * ck[2 * m + 1];
                                acc += (double)(q1 * scale) * k1 + (double)(q2 * scale) * k2;
                            }
                            s[j] = acc;
                            if (acc > mx) mx = acc;
                        }
                        for (j = 0; j < n; j++) sum += s[j] = exp(s[j] - mx);
                        for (d = 0; d < hd; d++) {
                            double o = 0, err;
                            for (j = 0; j < n; j++)
                                o += (double)sam3__bf16_f32(sam3__f32_bf16((float)s[j])) *
                                     sam3__bf16_f32(sam3__f32_bf16(v[((size_t)b * n + j) * ld + (size_t)h * hd + d] + bv[(size_t)h * hd + d]));
                            err = fabs(q[((size_t)b * n + qi) * ld + (size_t)h * hd + d] - o / sum);
                            if (!(err <= worst)) worst = err; /* NaN sticks */
                        }
                    }
            if (rc != SAM3_OK || !(worst <= 4e-3 * vmax + 1e-5) || flops != 2.0 * 4 * nb * nh * hd * n * n) {
                fails++;
                t_note("  bf16 attention (%s) nb %d n %d nh %d hd %d: worst error %.3g of max |v| %.3g, %.0f FLOPs counted",
                       kern == SAM3__BK_AMX ? "AMX" : BK1_NAME, nb, n, nh, hd, worst, vmax, flops);
            }
            free(q), free(k), free(v), free(q0), free(bq), free(bk), free(bv), free(tab), free(kt), free(vp), free(s);
        }
        t_check(fails == 0, "bf16 ViT attention, %s (ragged keys and rows, head dims padded to 32; its FLOPs counted): %d bad",
                kern == SAM3__BK_AMX ? "AMX" : BK1_NAME, fails);
    }
    if (have < SAM3__BK_AVX512) t_note("  bf16 attention: no " BK1_NAME " on this CPU, skipped");
}
#endif

static void test_conv3x3(sam3_ctx *c) {
    static const int cfg[][6] = {/* cin, cout, H, W, lh, lw */
                                 {1, 1, 1, 1, 0, 0},  {3, 5, 5, 7, 0, 0},   {8, 4, 9, 15, 0, 0},
                                 {6, 7, 14, 22, 7, 11}, {16, 8, 13, 17, 6, 9}, {24, 16, 33, 40, 17, 20}};
    int ci, fails = 0;
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
        const int cin = cfg[ci][0], cout = cfg[ci][1], H = cfg[ci][2], W = cfg[ci][3], lh = cfg[ci][4], lw = cfg[ci][5], nty = (H + 3) / 4;
        float *x = fbuf((size_t)cin * H * W), *lo = fbuf((size_t)cin * (lh ? lh : 1) * (lw ? lw : 1)), *w = fbuf((size_t)cout * cin * 9);
        float *b = fbuf((size_t)cout), *y = fbuf((size_t)cout * H * W), *yr = fbuf((size_t)cout * H * W);
        double *st = (double *)malloc(sizeof(double) * 3 * cout * nty), *str = (double *)malloc(sizeof(double) * 3 * cout * nty);
        sam3__lin l;
        size_t i;
        double err, serr = 0;
        sam3_result rc, rr;
        for (i = 0; i < (size_t)cin * H * W; i++) x[i] = frand();
        for (i = 0; i < (size_t)cin * lh * lw; i++) lo[i] = frand();
        for (i = 0; i < (size_t)cout * cin * 9; i++) w[i] = 0.3f * frand();
        for (i = 0; i < (size_t)cout; i++) b[i] = frand();
        memset(&l, 0, sizeof(l)); /* an f32 weight: wh (bf16) stays NULL */
        l.w = w, l.b = b;
        rc = sam3__conv3x3(c, x, lh ? lo : NULL, lh, lw, cin, H, W, &l, cout, y, st);
        rr = sam3__ref_conv3x3(c, x, lh ? lo : NULL, lh, lw, cin, H, W, &l, cout, yr, str);
        err = rel_l2(y, yr, (size_t)cout * H * W);
        for (i = 0; i < (size_t)cout * nty; i++) {
            /* counts exact; means and squared deviations of outputs that differ by ~1e-6 */
            serr = SAM3__MAX(serr, fabs(st[3 * i] - str[3 * i]));
            serr = SAM3__MAX(serr, fabs(st[3 * i + 1] - str[3 * i + 1]) / (1 + fabs(str[3 * i + 1])) * 1e-2);
            serr = SAM3__MAX(serr, fabs(st[3 * i + 2] - str[3 * i + 2]) / (1 + str[3 * i + 2]) * 1e-2);
        }
        if (rc != SAM3_OK || rr != SAM3_OK || !(err <= 1e-5) || !(serr <= 1e-7)) {
            fails++;
            t_note("  conv3x3 cin %d cout %d %dx%d + %dx%d: relative error %.3g, statistics %.3g", cin, cout, H, W, lh, lw, err, serr);
        }
        free(x), free(lo), free(w), free(b), free(y), free(yr), free(st), free(str);
    }
    t_check(fails == 0, "conv3x3 (Winograd against direct; ragged maps, upsampled skip input, GroupNorm statistics): %d bad", fails);
}

#if defined(SAM3__CONV_BF16)
/* The 3x3 conv of a bf16 weight (sam3__conv3x3_bf16: the im2col packed panel by panel; on AMX
   sam3__conv3x3_amx, tiles loaded from the input) on each bf16 kernel this CPU has, bkc lowered
   to it: against the direct conv in double on the rounded input (x plus the upsampled lo, in
   bf16), which it must match to f32's sums; and it must differ from the f32 conv of the
   unrounded input by bf16's rounding (else it did not run). Maps narrower than a panel (runs
   across output rows) and wider, K = 9 cin past one k block (AVX512-BF16's split); on AMX, rows
   of whole 32-output blocks, a last block of 16 or fewer, channels past a 32 block in and out;
   the GroupNorm statistics. An f32 weight, even with SAM3_PRECISION_BF16, keeps the f32 conv. */
static float bf16_round(float x) { return sam3__bf16_f32(sam3__f32_bf16(x)); }
static void test_conv3x3_bf16(sam3_ctx *c) {
    static const int cfg[][6] = {/* cin, cout, H, W, lh, lw */
                                 {8, 3, 1, 2, 0, 0},    {3, 5, 5, 7, 0, 0},      {6, 7, 14, 22, 7, 11},
                                 {16, 8, 13, 40, 6, 20}, {120, 9, 9, 15, 0, 0}, {540, 4, 6, 5, 3, 5},
                                 {40, 40, 5, 48, 0, 0},  {64, 64, 6, 64, 3, 32}};
    const int bk0 = c->bk, bkc0 = c->bkc, bf0 = c->bf16, have = c->bk;
    int kern, ci, fails = 0, ran = 0;
    if (have < SAM3__BK_AVX512) {
        t_note("  conv3x3 of a bf16 weight: no " BK1_NAME " kernel in this context, skipped");
        return;
    }
    for (kern = SAM3__BK_AVX512; kern <= have; kern++)
        for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++) {
            const int cin = cfg[ci][0], cout = cfg[ci][1], H = cfg[ci][2], W = cfg[ci][3], lh = cfg[ci][4], lw = cfg[ci][5];
            const int nty = (H + 3) / 4;
            const size_t hw = (size_t)H * W;
            float *x = fbuf((size_t)cin * hw), *lo = fbuf((size_t)cin * (lh ? lh : 1) * (lw ? lw : 1)), *w = fbuf((size_t)cout * cin * 9);
            float *xs = fbuf((size_t)cin * hw), *b = fbuf((size_t)cout), *y = fbuf((size_t)cout * hw), *yd = fbuf((size_t)cout * hw);
            float *yf = fbuf((size_t)cout * hw), *yb = fbuf((size_t)cout * hw);
            uint16_t *wh = (uint16_t *)malloc(sizeof(uint16_t) * cout * cin * 9);
            double *st = (double *)malloc(sizeof(double) * 3 * cout * nty), serr = 0, err, ferr, berr;
            sam3__lin l;
            size_t i;
            int o, r, q, ii, ky, kx;
            sam3_result rc, rf, rb;
            for (i = 0; i < (size_t)cin * hw; i++) x[i] = frand();
            for (i = 0; i < (size_t)cin * lh * lw; i++) lo[i] = frand();
            for (i = 0; i < (size_t)cout * cin * 9; i++) w[i] = 0.3f * frand(), wh[i] = sam3__f32_bf16(w[i]);
            for (i = 0; i < (size_t)cout; i++) b[i] = frand();
            /* the input as the conv reads it (sam3__ref_conv3x3's upsampling), rounded */
            for (ii = 0; ii < cin; ii++)
                for (r = 0; r < H; r++)
                    for (q = 0; q < W; q++) {
                        float v = x[((size_t)ii * H + r) * W + q];
                        if (lh) v += lo[((size_t)ii * lh + SAM3__MIN((int)floorf((float)r * ((float)lh / (float)H)), lh - 1)) * lw +
                                        SAM3__MIN((int)floorf((float)q * ((float)lw / (float)W)), lw - 1)];
                        xs[((size_t)ii * H + r) * W + q] = bf16_round(v);
                    }
            for (o = 0; o < cout; o++)
                for (r = 0; r < H; r++)
                    for (q = 0; q < W; q++) {
                        double s = b[o];
                        for (ii = 0; ii < cin; ii++)
                            for (ky = 0; ky < 3; ky++)
                                for (kx = 0; kx < 3; kx++) {
                                    const int yy = r + ky - 1, xx = q + kx - 1;
                                    if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                                        s += (double)bf16_round(w[(((size_t)o * cin + ii) * 3 + ky) * 3 + kx]) * xs[((size_t)ii * H + yy) * W + xx];
                                }
                        yd[((size_t)o * H + r) * W + q] = (float)s;
                    }
            memset(&l, 0, sizeof(l));
            l.b = b, l.wh = wh;
            c->bk = kern, c->bkc = kern;
            rc = sam3__conv3x3(c, x, lh ? lo : NULL, lh, lw, cin, H, W, &l, cout, y, st);
            l.w = w, l.wh = NULL; /* an f32 weight: the f32 conv, bf16 products or not */
            rf = sam3__conv3x3(c, x, lh ? lo : NULL, lh, lw, cin, H, W, &l, cout, yf, NULL);
            c->bf16 = 1;
            rb = sam3__conv3x3(c, x, lh ? lo : NULL, lh, lw, cin, H, W, &l, cout, yb, NULL);
            c->bf16 = bf0;
            berr = rel_l2(yb, yf, (size_t)cout * hw);
            err = rel_l2(y, yd, (size_t)cout * hw);
            ferr = rel_l2(y, yf, (size_t)cout * hw);
            for (o = 0; o < cout; o++)
                for (r = 0; r < nty; r++) {
                    const float *y0 = yd + (size_t)o * hw + (size_t)4 * r * W;
                    const size_t n = (size_t)SAM3__MIN(4, H - 4 * r) * W;
                    const double *s3 = st + ((size_t)o * nty + r) * 3;
                    double sum = 0, mean, dev = 0;
                    for (i = 0; i < n; i++) sum += y0[i];
                    mean = sum / (double)n;
                    for (i = 0; i < n; i++) dev += ((double)y0[i] - mean) * ((double)y0[i] - mean);
                    serr = SAM3__MAX(serr, fabs(s3[0] - (double)n));
                    serr = SAM3__MAX(serr, fabs(s3[1] - mean) / (1 + fabs(mean)) * 1e-2);
                    serr = SAM3__MAX(serr, fabs(s3[2] - dev) / (1 + dev) * 1e-2);
                }
            ran++;
            if (rc != SAM3_OK || rf != SAM3_OK || rb != SAM3_OK || !(err <= 2e-6) || !(ferr > 1e-4) || berr != 0 || !(serr <= 1e-7)) {
                fails++;
                t_note("  conv3x3 in bf16 (kernel %d) cin %d cout %d %dx%d + %dx%d: error %.3g against the rounded input, %.3g against f32, "
                       "f32 weight with bf16 products %.3g from f32, statistics %.3g", kern, cin, cout, H, W, lh, lw, err, ferr, berr, serr);
            }
            free(x), free(lo), free(w), free(xs), free(b), free(y), free(yd), free(yf), free(yb), free(wh), free(st);
        }
    c->bk = bk0, c->bkc = bkc0;
    t_check(fails == 0, "conv3x3 of a bf16 weight in bf16 on %d kernel%s (im2col by panel, ragged maps, k blocks, upsampled skip, statistics; f32 weights f32): %d of %d bad",
            have - SAM3__BK_AVX512 + 1, have > SAM3__BK_AVX512 ? "s" : "", fails, ran);
}
#endif

/* the mask resize + threshold against the per-pixel reference; a pixel may differ only where its
   value is within 1e-5 of the threshold (the sigmoid's exponentials differ by ulps) */
static void test_resize(sam3_ctx *c) {
    static const int cfg[][4] = {{1, 1, 3, 5},   {7, 9, 16, 33}, {32, 24, 100, 131}, {20, 20, 20, 20},
                                 {50, 41, 17, 9}, {13, 70, 64, 47}, {9, 17, 9, 16}, {20, 35, 21, 33}}; /* ih, iw, oh, ow */
    int ci, sig, fails = 0;
    for (ci = 0; ci < (int)(sizeof(cfg) / sizeof(cfg[0])); ci++)
        for (sig = 0; sig < 2; sig++) {
            const int ih = cfg[ci][0], iw = cfg[ci][1], oh = cfg[ci][2], ow = cfg[ci][3], n = 2;
            const float thr = sig ? 0.5f : 0.0f;
            float *src = fbuf((size_t)n * ih * iw);
            const float *srcs[2];
            uint8_t *m = (uint8_t *)malloc((size_t)n * oh * ow), *mr = (uint8_t *)malloc((size_t)oh * ow);
            sam3__lerp *ty = (sam3__lerp *)malloc(sizeof(sam3__lerp) * oh), *tx = (sam3__lerp *)malloc(sizeof(sam3__lerp) * ow);
            long area[2];
            size_t i;
            int mi, bad = 0;
            sam3_result rc;
            for (i = 0; i < (size_t)n * ih * iw; i++) src[i] = 6 * frand();
            srcs[0] = src, srcs[1] = src + (size_t)ih * iw;
            sam3__lerp_table(ih, oh, ty);
            sam3__lerp_table(iw, ow, tx);
            rc = sam3__resize_threshold_n(c, n, srcs, sig, ih, iw, ty, tx, oh, ow, thr, m, area);
            for (mi = 0; mi < n; mi++) {
                const long ar = sam3__ref_resize_threshold(srcs[mi], sig, iw, ty, tx, oh, ow, thr, mr);
                long diff = 0;
                int r, q;
                for (r = 0; r < oh; r++)
                    for (q = 0; q < ow; q++) {
                        const float *a = srcs[mi] + (size_t)ty[r].i0 * iw, *bb = srcs[mi] + (size_t)ty[r].i1 * iw;
                        double a0 = a[tx[q].i0], a1 = a[tx[q].i1], b0 = bb[tx[q].i0], b1 = bb[tx[q].i1], v;
                        if (sig) a0 = 1 / (1 + exp(-a0)), a1 = 1 / (1 + exp(-a1)), b0 = 1 / (1 + exp(-b0)), b1 = 1 / (1 + exp(-b1));
                        v = ty[r].l0 * (tx[q].l0 * a0 + tx[q].l1 * a1) + ty[r].l1 * (tx[q].l0 * b0 + tx[q].l1 * b1);
                        if (m[(size_t)mi * oh * ow + (size_t)r * ow + q] != mr[(size_t)r * ow + q]) {
                            diff += m[(size_t)mi * oh * ow + (size_t)r * ow + q] ? 1 : -1;
                            if (!(fabs(v - thr) <= 1e-5)) bad++;
                        }
                    }
                if (area[mi] != ar + diff) bad++;
            }
            if (rc != SAM3_OK || bad) {
                fails++;
                t_note("  mask resize %dx%d -> %dx%d sigmoid %d: %s, %d bad pixels or areas", ih, iw, oh, ow, sig, sam3_result_string(rc), bad);
            }
            free(src), free(m), free(mr), free(ty), free(tx);
        }
    t_check(fails == 0, "mask resize + threshold (up and down, ragged widths, through the sigmoid): %d bad", fails);
}

/* The FLOP counter (sam3_ctx_flops) against formulas written here from the shapes: kernel by
   kernel (GEMMs, attentions, convs, counted to no stage outside the entry points), then the tiny
   model's image encoder and text encoder stage by stage (f32 file and products: f32 attention,
   Winograd convs, as this one-path build runs them). */
static double flops_vit(const sam3_model *m) {
    const sam3__vit_cfg *v = &m->vit;
    const double C = v->hidden, In = v->inter, N = (double)v->grid * v->grid, nwy = (v->grid + v->window - 1) / v->window;
    double f = 2 * N * C * 3 * v->patch * v->patch;
    int l;
    for (l = 0; l < v->layers; l++) {
        const double n = v->is_global[l] ? N : nwy * nwy * v->window * v->window, nk = v->is_global[l] ? N : (double)v->window * v->window;
        f += 2 * n * 3 * C * C + 4 * n * nk * C + 2 * n * C * C + 4 * N * C * In; /* qkv, q.k and P.V, out, the MLP */
    }
    return f;
}
static double flops_neck(const sam3_model *m) {
    const double C = m->vit.hidden, D = m->neck.fpn, g = m->vit.grid;
    double f = 0;
    int j;
    for (j = 0; j < m->neck.n_kept; j++) {
        const int s2 = m->neck.scale_x2[j];
        const double side = m->neck.side[j], cin = s2 == 8 ? C / 4 : s2 == 4 ? C / 2 : C, tiles = ceil(side / 4) * ceil(side / 4);
        if (s2 >= 4) f += 2 * (4 * C / 2) * g * g * C;                     /* ConvT 2x2 to C/2 */
        if (s2 == 8) f += 2 * (4 * C / 4) * (4 * g * g) * (C / 2);         /* and to C/4 */
        f += 2 * D * side * side * cin + 2 * 36 * D * D * tiles;           /* 1x1, then 3x3 by Winograd */
    }
    return f;
}
static double flops_text(const sam3_model *m, int n) {
    const double T = m->text.hidden, TI = m->text.inter;
    return m->text.layers * (2.0 * n * 4 * T * T + 4 * T * (n * (n + 1.0) / 2) + 4.0 * n * T * TI) + 2.0 * n * T * m->neck.fpn;
}
static void test_flops(sam3_ctx *c) {
    static const int causal_cfg[][4] = {{5, 3, 2, 8}, {3, 5, 1, 4}, {4, 4, 3, 2}}; /* nq, nk, nh, hd */
    float *a = fbuf(4096), *b = fbuf(4096), *o = fbuf(4096);
    unsigned char *img = (unsigned char *)malloc(64 * 48 * 3);
    double before, want;
    int i, n_ids = 0, bad = 0;
    int32_t ids[64];
    sam3__lin l;
    sam3__attn_args at;
    sam3_segment_prompt pr;
    sam3_segment_result seg;
    sam3_timings f;
    for (i = 0; i < 4096; i++) a[i] = frand(), b[i] = frand();
    for (i = 0; i < 64 * 48 * 3; i++) img[i] = (unsigned char)(i * 7 % 251);
    before = c->flops[SAM3__ST_NONE];
    sam3__gemm(c, 0, 1, 7, 5, 3, 1.0f, a, 3, b, 3, 0.0f, o, 5);
    bad += c->flops[SAM3__ST_NONE] - before != 2.0 * 7 * 5 * 3;
    for (i = 0; i < 3; i++) {
        const int nq = causal_cfg[i][0], nk = causal_cfg[i][1], nh = causal_cfg[i][2], hd = causal_cfg[i][3];
        int q, pairs = 0;
        for (q = 0; q < nq; q++) pairs += q + 1 < nk ? q + 1 : nk;
        memset(&at, 0, sizeof(at));
        at.nq = nq, at.nk = nk, at.nh = nh, at.hd = hd, at.q = a, at.k = b, at.v = b, at.out = o, at.causal = 1;
        at.ldq = at.ldk = at.ldv = at.ldo = nh * hd;
        before = c->flops[SAM3__ST_NONE];
        sam3__attention_rel(c, &at);
        sam3__ref_attention(c, &at);
        bad += c->flops[SAM3__ST_NONE] - before != 2 * 4.0 * nh * hd * pairs;
    }
    memset(&l, 0, sizeof(l));
    l.w = a; /* (4, 4, 3, 3) */
    before = c->flops[SAM3__ST_NONE];
    sam3__conv3x3(c, b, NULL, 0, 0, 4, 9, 6, &l, 4, o, NULL);
    bad += c->flops[SAM3__ST_NONE] - before != 2 * 36.0 * 4 * 4 * 3 * 2; /* 3 x 2 tiles of 4 x 4 */
    before = c->flops[SAM3__ST_NONE];
    sam3__ref_conv3x3(c, b, NULL, 0, 0, 4, 9, 6, &l, 4, o, NULL);
    bad += c->flops[SAM3__ST_NONE] - before != 2 * 9.0 * 4 * 4 * 9 * 6;
    t_check(bad == 0, "FLOPs counted by the kernels: GEMM, causal attention (fast and reference), conv3x3 (Winograd and direct): %d bad", bad);
    memset(&pr, 0, sizeof(pr));
    pr.text = "a cat";
    if (sam3_set_image(c, img, 64, 48, 64 * 3, SAM3_RGB8) != SAM3_OK || sam3_segment(c, &pr, NULL, &seg) < 0 ||
        sam3_tokenize(c->m, pr.text, ids, 64, &n_ids) != SAM3_OK) {
        t_check(0, "FLOPs by stage: %s", sam3_ctx_last_error(c));
    } else {
        f = sam3_ctx_flops(c);
        want = flops_vit(c->m);
        t_check(f.vision_trunk == want, "FLOPs of the ViT trunk: counted %.0f, formula %.0f", f.vision_trunk, want);
        want = flops_neck(c->m);
        t_check(f.vision_neck == want, "FLOPs of the neck: counted %.0f, formula %.0f", f.vision_neck, want);
        want = flops_text(c->m, n_ids);
        t_check(f.text == want, "FLOPs of the text encoder (%d tokens): counted %.0f, formula %.0f", n_ids, f.text, want);
        t_check(f.preprocess == 0 && f.detr_encoder > 0 && f.detr_decoder > 0, "FLOPs: none in the preprocessing, some in the DETR");
    }
    free(a), free(b), free(o), free(img);
}

int main(int argc, char **argv) {
    sam3_model *m = NULL;
    sam3_ctx *c1 = NULL, *c2 = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    if (argc != 2) {
        fprintf(stderr, "usage: test_kernels MODEL.sam3\n");
        return 2;
    }
    if (sam3_load(argv[1], NULL, &m) != SAM3_OK) {
        fprintf(stderr, "test_kernels: cannot load %s\n", argv[1]);
        return 2;
    }
    co.blas_threads = 1;
    co.n_threads = 1;
    if (sam3_ctx_new(m, &co, &c1) != SAM3_OK) return 2;
    co.n_threads = 2;
    if (sam3_ctx_new(m, &co, &c2) != SAM3_OK) return 2;
    printf("test_kernels: SIMD %s, %d float%s a vector, attention %s\n",
#if defined(SAM3__SIMD) && defined(__AVX512F__)
           "AVX-512",
#elif defined(SAM3__SIMD) && defined(__aarch64__)
           "NEON",
#elif defined(SAM3__SIMD)
           "AVX2",
#else
           "none (scalar mapping)",
#endif
           SAM3__VX, SAM3__VX > 1 ? "s" : "",
#ifdef SAM3__FAST_ATTENTION
           "fast"
#else
           "reference"
#endif
    );
    test_softmax();
    test_sigmoid_gelu(c2);
    test_layernorm();
    test_gemm(c2);
    test_attention(c1);
    test_attention(c2);
    test_attention_packed(c2);
#if defined(SAM3__ATT_PV_BF16) && defined(SAM3__FAST_ATTENTION)
    test_attention_pv_bf16(c2);
#endif
#if defined(SAM3__ATT_BF16)
    test_attention_bf16(c2);
    test_self_attention_bf16(c2);
    test_cross_attention_bf16(c2);
#endif
    test_conv3x3(c2);
#if defined(SAM3__CONV_BF16)
    test_conv3x3_bf16(c2);
#endif
    test_resize(c2);
    test_flops(c2);
    sam3_ctx_free(c1);
    sam3_ctx_free(c2);
    sam3_free(m);
    return t_done("test_kernels");
}
