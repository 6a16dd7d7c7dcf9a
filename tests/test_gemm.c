/* The built-in SGEMM (sam3__sgemm_builtin, used with SAM3_NO_BLAS) against a double-precision
   reference: every size 1..40 for M, N, K in turn around odd shapes, all four transposes,
   alpha/beta cases (beta 0 must not read C: C starts as NaN there), leading dimensions wider
   than the matrix, one and two threads, and shapes crossing the block sizes (MC, NC, KC).
   Then the bf16 products (test_bf16: each bf16 kernel this CPU has against the reference).
   usage: test_gemm            last line: "test_gemm: N passed, N failed"
          test_gemm --bench M N K THREADS [RUNS]   GFLOP/s of the built-in (and of cblas_sgemm
                                                   when built with a BLAS), C = A B^T as the model's
                                                   linear layers
          test_gemm --bench-bf16 M N K THREADS [RUNS]  GFLOP/s of each bf16 kernel (B bf16) */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 inlines the loader differently in this TU (which never loads) and guesses that its
   tensor names may not fit (-Wformat-truncation); the other TUs build without the warning */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <math.h>

static unsigned long long rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int check_one(int nt, int ta, int tb, int M, int N, int K, float alpha, float beta, int pad) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = (float *)malloc(na * sizeof(float) + 4), *B = (float *)malloc(nb * sizeof(float) + 4);
    float *C = (float *)malloc(nc * sizeof(float) + 4), *C0 = (float *)malloc(nc * sizeof(float) + 4);
    sam3__gemm_args g;
    size_t i;
    int r, q, k, ok = 1;
    for (i = 0; i < na; i++) A[i] = frand();
    for (i = 0; i < nb; i++) B[i] = frand();
    for (i = 0; i < nc; i++) C0[i] = C[i] = beta == 0 ? NAN : frand();
    memset(&g, 0, sizeof(g));
    g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = alpha, g.beta = beta;
    g.a = A, g.lda = lda, g.b = B, g.ldb = ldb, g.c = C, g.ldc = ldc;
    sam3__sgemm_builtin(NULL, nt, &g);
    for (r = 0; r < M && ok; r++)
        for (q = 0; q < ldc && ok; q++) {
            const float got = C[(size_t)r * ldc + q];
            if (q >= N) { /* padding untouched */
                const float was = C0[(size_t)r * ldc + q];
                if (!(got == was || (got != got && was != was))) ok = 0;
                continue;
            } else {
                double ref = 0, mag = 0, err;
                for (k = 0; k < K; k++) {
                    const double p = (double)(ta ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]) * (tb ? B[(size_t)q * ldb + k] : B[(size_t)k * ldb + q]);
                    ref += p;
                    mag += fabs(p);
                }
                ref = alpha * ref + (beta == 0 ? 0 : beta * (double)C0[(size_t)r * ldc + q]);
                mag = fabs(alpha) * mag + (beta == 0 ? 0 : fabs(beta * (double)C0[(size_t)r * ldc + q]));
                err = fabs((double)got - ref);
                /* float accumulation: a few ulps of the sum of magnitudes per term, K terms */
                if (!(err <= 1e-6 * (K + 4) * (mag + 1e-30) + 1e-30)) ok = 0;
            }
        }
    if (!ok) t_note("  built-in sgemm: nt %d ta %d tb %d M %d N %d K %d alpha %g beta %g pad %d: wrong at (%d, %d)", nt, ta, tb, M, N, K, alpha, beta, pad, r - 1, q - 1);
    free(A);
    free(B);
    free(C);
    free(C0);
    return ok;
}

static double now_ms(void) { return sam3__now_ms(); }

/* ---- bf16 products (sam3__gemm_bf16): the reference kernel against a double-precision sum of
   the bf16-rounded inputs, and each fast kernel this CPU has against the reference: the same
   bf16 products with f32 sums in another order, so agreement within a few f32 ulps of the sum of
   magnitudes per term. A operand bf16 (ah), B bf16 (bh), or f32 rounded by the kernel. */
#if defined(__aarch64__)
static const char *bk_name[] = {"reference", "BFDOT (NEON BF16)", "AMX-BF16"}; /* aarch64's level 1: SAM3__BK_NEON */
#else
static const char *bk_name[] = {"reference", "AVX512-BF16", "AMX-BF16"};
#endif
static int check_bf16(int kern, int nt, int ta, int tb, int M, int N, int K, float beta, int pad, int ah, int bh) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = (float *)malloc(na * sizeof(float) + 4), *B = (float *)malloc(nb * sizeof(float) + 4);
    uint16_t *Ah = (uint16_t *)malloc(na * sizeof(uint16_t) + 4), *Bh = (uint16_t *)malloc(nb * sizeof(uint16_t) + 4);
    float *C = (float *)malloc(nc * sizeof(float) + 4), *C0 = (float *)malloc(nc * sizeof(float) + 4), *R = (float *)malloc(nc * sizeof(float) + 4);
    sam3_ctx c;
    sam3__gemm_args g;
    size_t i;
    int r, q, k, ok = 1;
    memset(&c, 0, sizeof(c));
    c.nt = nt;
    c.a.alloc = sam3__default_alloc; /* kernel scratch comes from the context */
    c.a.free = sam3__default_free;
    for (i = 0; i < na; i++) Ah[i] = sam3__f32_bf16(A[i] = frand());
    for (i = 0; i < nb; i++) Bh[i] = sam3__f32_bf16(B[i] = frand() * 3);
    for (i = 0; i < nc; i++) C0[i] = C[i] = R[i] = beta == 0 ? NAN : frand();
    memset(&g, 0, sizeof(g));
    g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.beta = beta;
    g.a = A, g.ah = ah ? Ah : NULL, g.lda = lda, g.b = B, g.bh = bh ? Bh : NULL, g.ldb = ldb, g.c = C, g.ldc = ldc;
    sam3__gemm_bf16(&c, kern, &g);
    g.ah = NULL, g.bh = NULL, g.c = R; /* the reference on the f32 inputs, rounded by the kernel */
    if (kern != SAM3__BK_REF) sam3__gemm_bf16(&c, SAM3__BK_REF, &g);
    for (r = 0; r < M && ok; r++)
        for (q = 0; q < ldc && ok; q++) {
            const float got = C[(size_t)r * ldc + q];
            if (q >= N) { /* padding untouched */
                const float was = C0[(size_t)r * ldc + q];
                if (!(got == was || (got != got && was != was))) ok = 0;
            } else {
                double ref = 0, mag = 0, err;
                for (k = 0; k < K; k++) {
                    const double p = (double)sam3__bf16_f32(Ah[ta ? (size_t)k * lda + r : (size_t)r * lda + k]) *
                                     sam3__bf16_f32(Bh[tb ? (size_t)q * ldb + k : (size_t)k * ldb + q]);
                    ref += p;
                    mag += fabs(p);
                }
                ref += beta == 0 ? 0 : beta * (double)C0[(size_t)r * ldc + q];
                mag += beta == 0 ? 0 : fabs(beta * (double)C0[(size_t)r * ldc + q]);
                /* the reference: exact products, f32 sums; a fast kernel: the reference's value too */
                err = fabs((double)got - (kern == SAM3__BK_REF ? ref : (double)R[(size_t)r * ldc + q]));
                if (!(err <= 1e-6 * (K + 4) * (mag + 1e-30) + 1e-30)) ok = 0;
            }
        }
    if (!ok)
        t_note("  bf16 %s: nt %d ta %d tb %d M %d N %d K %d beta %g pad %d A %s B %s: wrong at (%d, %d)", bk_name[kern], nt, ta, tb, M, N, K,
               beta, pad, ah ? "bf16" : "f32", bh ? "bf16" : "f32", r - 1, q - 1);
    free(A);
    free(B);
    free(Ah);
    free(Bh);
    free(C);
    free(C0);
    free(R);
    return ok;
}
/* sam3__gemm_wide (CPUs without bf16 products: a bf16 operand widened, exactly, an f32 one as it
   is, then the f32 product) against a double-precision sum of the same values. */
static int check_wide(int nt, int ta, int tb, int M, int N, int K, float beta, int pad, int ah, int bh) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = (float *)malloc(na * sizeof(float) + 4), *B = (float *)malloc(nb * sizeof(float) + 4);
    uint16_t *Ah = (uint16_t *)malloc(na * sizeof(uint16_t) + 4), *Bh = (uint16_t *)malloc(nb * sizeof(uint16_t) + 4);
    float *C = (float *)malloc(nc * sizeof(float) + 4), *C0 = (float *)malloc(nc * sizeof(float) + 4);
    sam3_ctx c;
    sam3__gemm_args g;
    size_t i;
    int r = 0, q = 0, k, ok = 1;
    memset(&c, 0, sizeof(c));
    c.nt = nt;
    c.a.alloc = sam3__default_alloc; /* kernel scratch comes from the context */
    c.a.free = sam3__default_free;
    for (i = 0; i < na; i++) Ah[i] = sam3__f32_bf16(A[i] = frand());
    for (i = 0; i < nb; i++) Bh[i] = sam3__f32_bf16(B[i] = frand() * 3);
    for (i = 0; i < nc; i++) C0[i] = C[i] = beta == 0 ? NAN : frand();
    memset(&g, 0, sizeof(g));
    g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.beta = beta;
    g.a = A, g.ah = ah ? Ah : NULL, g.lda = lda, g.b = B, g.bh = bh ? Bh : NULL, g.ldb = ldb, g.c = C, g.ldc = ldc;
    ok = sam3__gemm_wide(&c, &g);
    for (r = 0; r < M && ok; r++)
        for (q = 0; q < ldc && ok; q++) {
            const float got = C[(size_t)r * ldc + q];
            if (q >= N) { /* padding untouched */
                const float was = C0[(size_t)r * ldc + q];
                if (!(got == was || (got != got && was != was))) ok = 0;
            } else {
                double ref = 0, mag = 0;
                for (k = 0; k < K; k++) {
                    const size_t ia = ta ? (size_t)k * lda + r : (size_t)r * lda + k, ib = tb ? (size_t)q * ldb + k : (size_t)k * ldb + q;
                    const double p = (double)(ah ? sam3__bf16_f32(Ah[ia]) : A[ia]) * (bh ? sam3__bf16_f32(Bh[ib]) : B[ib]);
                    ref += p;
                    mag += fabs(p);
                }
                ref += beta == 0 ? 0 : beta * (double)C0[(size_t)r * ldc + q];
                mag += beta == 0 ? 0 : fabs(beta * (double)C0[(size_t)r * ldc + q]);
                if (!(fabs((double)got - ref) <= 1e-6 * (K + 4) * (mag + 1e-30) + 1e-30)) ok = 0;
            }
        }
    if (!ok)
        t_note("  wide: nt %d ta %d tb %d M %d N %d K %d beta %g pad %d A %s B %s: wrong at (%d, %d)", nt, ta, tb, M, N, K, beta, pad,
               ah ? "bf16" : "f32", bh ? "bf16" : "f32", r - 1, q - 1);
    sam3__release_all(&c);
    free(A);
    free(B);
    free(Ah);
    free(Bh);
    free(C);
    free(C0);
    return ok;
}

/* sam3__gemm_bf16_gelu (fc1 with its bias and GELU on the tiles, output bf16) against its
   unfused form with the same kernel: the product, GELU(x + b) row by row, rounding; equal bit for
   bit, Ch's padding untouched. Returns -1 where the fused path declined (then Ch untouched). */
static int check_bf16_gelu(int kern, int nt, int M, int N, int K, int bias, int wh) {
    const int lda = K + 3, ldch = N + 5;
    float *A = (float *)malloc((size_t)M * lda * sizeof(float)), *W = (float *)malloc((size_t)N * K * sizeof(float));
    float *b = (float *)malloc((size_t)N * sizeof(float)), *C = (float *)malloc((size_t)M * N * sizeof(float));
    uint16_t *Wh = (uint16_t *)malloc((size_t)N * K * sizeof(uint16_t)), *Ch = (uint16_t *)malloc((size_t)M * ldch * sizeof(uint16_t));
    sam3_ctx c;
    size_t i;
    int r, q, ran, ok = 1;
    memset(&c, 0, sizeof(c));
    c.nt = nt;
    c.a.alloc = sam3__default_alloc; /* kernel scratch comes from the context */
    c.a.free = sam3__default_free;
    c.bk = kern;
    for (i = 0; i < (size_t)M * lda; i++) A[i] = frand();
    for (i = 0; i < (size_t)N * K; i++) Wh[i] = sam3__f32_bf16(W[i] = frand() * 0.2f);
    for (i = 0; i < (size_t)N; i++) b[i] = frand();
    for (i = 0; i < (size_t)M * ldch; i++) Ch[i] = 0xfbad;
    ran = sam3__gemm_bf16_gelu(&c, M, N, K, A, lda, wh ? NULL : W, wh ? Wh : NULL, K, bias ? b : NULL, Ch, ldch, 0);
    if (ran) {
        sam3__gemm_args g;
        memset(&g, 0, sizeof(g));
        g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.a = A, g.lda = lda, g.b = W, g.bh = wh ? Wh : NULL, g.ldb = K, g.c = C, g.ldc = N;
        sam3__gemm_bf16(&c, kern, &g);
        for (r = 0; r < M; r++) sam3__gelu_bias_row(C + (size_t)r * N, N, bias ? b : NULL);
    }
    for (r = 0; r < M && ok; r++)
        for (q = 0; q < ldch && ok; q++)
            ok = Ch[(size_t)r * ldch + q] == (ran && q < N ? sam3__f32_bf16(C[(size_t)r * N + q]) : 0xfbad);
    if (!ok)
        t_note("  bf16 GELU epilogue %s: nt %d M %d N %d K %d bias %d W %s: wrong at (%d, %d)", bk_name[kern], nt, M, N, K, bias, wh ? "bf16" : "f32",
               r - 1, q - 1);
    free(A);
    free(W);
    free(b);
    free(C);
    free(Wh);
    free(Ch);
    return ok ? ran : 0;
}
/* sam3__gemm_bf16_gelu asked for A tiles (AMX: returns 2), then sam3__gemm_bf16_at on them (a
   second product, N2 x N W2): the tiles hold the rows' values (zeros past M and N to whole tiles),
   the second product equals sam3__gemm_bf16 on those values as bf16 rows bit for bit. Returns what
   sam3__gemm_bf16_gelu returned (1: rows, as without tiles), 0 where anything differs. */
static int check_bf16_gelu_tiles(int kern, int nt, int M, int N, int K, int N2) {
    const size_t ldt = (size_t)16 * ((N + 31) / 32 * 32), mt = (size_t)(M + 31) / 32 * 32;
    float *A = (float *)malloc((size_t)M * K * sizeof(float)), *b = (float *)malloc((size_t)N * sizeof(float));
    float *C = (float *)malloc((size_t)M * N * sizeof(float)), *C2 = (float *)malloc((size_t)M * N2 * sizeof(float));
    float *C2r = (float *)malloc((size_t)M * N2 * sizeof(float));
    uint16_t *Wh = (uint16_t *)malloc((size_t)N * K * sizeof(uint16_t)), *W2h = (uint16_t *)malloc((size_t)N2 * N * sizeof(uint16_t));
    uint16_t *Ct = (uint16_t *)malloc(mt / 16 * ldt * sizeof(uint16_t)), *Cr = (uint16_t *)malloc((size_t)M * N * sizeof(uint16_t));
    sam3_ctx c;
    size_t i;
    int r, q, ran, ok = 1;
    memset(&c, 0, sizeof(c));
    c.nt = nt;
    c.a.alloc = sam3__default_alloc;
    c.a.free = sam3__default_free;
    c.bk = kern;
    for (i = 0; i < (size_t)M * K; i++) A[i] = frand();
    for (i = 0; i < (size_t)N * K; i++) Wh[i] = sam3__f32_bf16(frand() * 0.2f);
    for (i = 0; i < (size_t)N2 * N; i++) W2h[i] = sam3__f32_bf16(frand() * 0.2f);
    for (i = 0; i < (size_t)N; i++) b[i] = frand();
    for (i = 0; i < mt / 16 * ldt; i++) Ct[i] = 0xfbad;
    ran = sam3__gemm_bf16_gelu(&c, M, N, K, A, K, NULL, Wh, K, b, Ct, N, ldt);
    if (ran) { /* the unfused values, as bf16 rows */
        sam3__gemm_args g;
        memset(&g, 0, sizeof(g));
        g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.a = A, g.lda = K, g.bh = Wh, g.ldb = K, g.c = C, g.ldc = N;
        sam3__gemm_bf16(&c, kern, &g);
        for (r = 0; r < M; r++) sam3__gelu_bias_row(C + (size_t)r * N, N, b);
        for (i = 0; i < (size_t)M * N; i++) Cr[i] = sam3__f32_bf16(C[i]);
    }
    if (ran == 2) {
        for (r = 0; r < (int)mt && ok; r++)
            for (q = 0; q < (int)ldt / 16 && ok; q++)
                ok = Ct[SAM3__ATILE(r, q, ldt)] == (r < M && q < N ? Cr[(size_t)r * N + q] : 0);
        if (!ok) t_note("  bf16 GELU epilogue as A tiles: nt %d M %d N %d K %d: wrong at (%d, %d)", nt, M, N, K, r - 1, q - 1);
        if (ok) {
            sam3__gemm_args g;
            memset(&g, 0, sizeof(g));
            g.tb = 1, g.m = M, g.n = N2, g.k = N, g.alpha = 1.0f, g.ah = Cr, g.lda = N, g.bh = W2h, g.ldb = N, g.c = C2r, g.ldc = N2;
            sam3__gemm_bf16(&c, kern, &g);
            sam3__gemm_bf16_at(&c, M, N2, N, Ct, ldt, NULL, W2h, N, C2, N2);
            ok = memcmp(C2, C2r, (size_t)M * N2 * sizeof(float)) == 0;
            if (!ok) t_note("  bf16 product on A tiles: nt %d M %d N %d K %d N2 %d: differs from the product on rows", nt, M, N, K, N2);
        }
    } else if (ran) { /* rows, N apart */
        ok = memcmp(Ct, Cr, (size_t)M * N * sizeof(uint16_t)) == 0;
        if (!ok) t_note("  bf16 GELU epilogue (tiles declined): nt %d M %d N %d K %d: wrong", nt, M, N, K);
    }
    free(A);
    free(b);
    free(C);
    free(C2);
    free(C2r);
    free(Wh);
    free(W2h);
    free(Ct);
    free(Cr);
    return ok ? ran : 0;
}
static void test_bf16(void) {
    /* each block boundary crossed with the others' sides small (the AVX-512 k block is 4800:
       a product crossing every boundary at once would cost the double sums ~50 x the others) */
    static const int big[][3] = {{SAM3__BMC_MAX + 1, SAM3__BNR * 3 + 5, 300}, {2 * SAM3__BMC_MAX + 3, 40, SAM3__BKC_AMX + 33},
                                 {SAM3__BSMALL_M + 1, 40, SAM3__BKC + 3}, {SAM3__BSMALL_M + 1, 40, 2 * SAM3__BKC + 1},
                                 {5, SAM3__BNC + SAM3__BNR + 1, 3}, {9, SAM3__BNC + 7, SAM3__BKC + 33}, {300, 77, 0}, {1, 257, 513},
                                 {70, 96, 1024}, {40, SAM3__BNC_AMX + 33, 40}, {64, 64, 2 * SAM3__BKC_AMX + 5}};
    const int have = sam3__bf16_detect();
    int kern, nt, ta, tb, s;
    {
        /* rounding: to nearest even, ties to even, NaN quiet */
        const float v[] = {1.0f, 1.00390625f, 1.005859375f, 1.01171875f, -2.5f, 3.0e38f, 1e-40f};
        const uint16_t want[] = {0x3f80, 0x3f80, 0x3f81, 0x3f82, 0xc020, 0x7f62, 0x0001};
        int j, good = 1;
        for (j = 0; j < 7; j++) good &= sam3__f32_bf16(v[j]) == want[j];
        good &= sam3__f32_bf16(NAN) == 0x7fc0;
        t_check(good, "f32 -> bf16 rounds to nearest even");
    }
    { /* AMX's A layout (tests every value's place on any CPU; the AMX kernel only runs on one) */
        enum { MC = 45, KC = 70, KCP = 96, MCP = 64 };
        float *a = (float *)malloc((size_t)MC * KC * sizeof(float));
        uint16_t *rows = (uint16_t *)malloc((size_t)MCP * KCP * sizeof(uint16_t)), *tiles = (uint16_t *)malloc((size_t)MCP * KCP * sizeof(uint16_t));
        int r, k, good = 1;
        for (r = 0; r < MC * KC; r++) a[r] = frand();
        sam3__bgemm_pack_a(have, 0, a, NULL, KC, 0, 0, MC, KC, KCP, rows, 0);
        sam3__bgemm_pack_a(have, 0, a, NULL, KC, 0, 0, MC, KC, KCP, tiles, 1);
        for (r = 0; r < MCP; r++)
            for (k = 0; k < KCP; k++)
                good &= tiles[(r / 16) * 16 * KCP + (k / 32) * 512 + (r % 16) * 32 + k % 32] == rows[r * KCP + k] &&
                        rows[r * KCP + k] == (r < MC && k < KC ? sam3__f32_bf16(a[r * KC + k]) : 0);
        t_check(good, "bf16 A block packed as rows and as AMX tiles");
        free(a);
        free(rows);
        free(tiles);
    }
    for (nt = 1; nt <= 2; nt++)
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++)
                for (s = 1; s <= 24; s++) {
                    t_check(check_wide(nt, ta, tb, s, 13, 11, 0.0f, 0, s % 3 == 0, s % 3 != 0), "bf16 widened, M sweep");
                    t_check(check_wide(nt, ta, tb, 7, 5 * s, 300 + s, 1.0f, 2, s % 2, !(s % 2)), "bf16 widened, N and K sweep");
                }
    for (kern = SAM3__BK_REF; kern <= SAM3__BK_AMX; kern++) {
        int before = t_fail;
        if (kern > have) {
            t_note("  bf16 %s: not on this CPU (or not allowed by the OS), skipped", bk_name[kern]);
            t_skip++;
            continue;
        }
        for (nt = 1; nt <= 2; nt++)
            for (ta = 0; ta < 2; ta++)
                for (tb = 0; tb < 2; tb++) {
                    for (s = 1; s <= 40; s++) {
                        t_check(check_bf16(kern, nt, ta, tb, s, 13, 11, 0.0f, 0, s % 3 == 0, s % 2), "bf16, M sweep");
                        t_check(check_bf16(kern, nt, ta, tb, 7, s, 19, 1.0f, 1, 0, s % 3 != 1), "bf16, N sweep");
                        t_check(check_bf16(kern, nt, ta, tb, 9, 17, s + 30, -0.75f, 3, s % 2, 1), "bf16, K sweep");
                    }
                    for (s = 0; s < (int)(sizeof(big) / sizeof(big[0])); s++)
                        t_check(check_bf16(kern, nt, ta, tb, big[s][0], big[s][1], big[s][2], s % 3 ? 0.0f : 2.0f, s % 2, s % 2, s % 2 == 0),
                                "bf16, shapes across the blocks");
                    /* whole 32 x 32 tiles over three k blocks, C summed onto (AMX: in the tile registers) */
                    t_check(check_bf16(kern, nt, ta, tb, 64, 96, 2 * SAM3__BKC_AMX + 40, 1.0f, 0, 0, 1), "bf16, whole tiles, beta 1");
                }
        for (nt = 1; nt <= 2; nt++) {
            const int fast = kern != SAM3__BK_REF; /* the reference kernel declines: no tiles */
            t_check(check_bf16_gelu(kern, nt, SAM3__BSMALL_M + 1, 77, 70, 1, 1) == fast, "bf16 GELU epilogue, ragged tiles");
            t_check(check_bf16_gelu(kern, nt, 2 * SAM3__BMC_MAX + 5, 100, SAM3__MIN(1024, sam3__bgemm_kcb(sam3__bgemm_kern(kern))), nt == 1, 0) == fast,
                    "bf16 GELU epilogue, f32 W, blocks"); /* one k block of this kernel's (test_gemm_kb: AMX's is shorter) */
            t_check(check_bf16_gelu(kern, nt, 70, SAM3__BNC_AMX + 40, 33, 1, 1) == fast, "bf16 GELU epilogue, column blocks");
            t_check(check_bf16_gelu(kern, nt, SAM3__BSMALL_M, 40, 64, 1, 1) == 0, "bf16 GELU epilogue declines few rows");
            { /* AMX alone writes A tiles; the others rows */
                const int want = kern == SAM3__BK_AMX ? 2 : fast;
                t_check(check_bf16_gelu_tiles(kern, nt, 2 * SAM3__BMC_MAX + 5, 77, 70, 40) == want, "bf16 GELU epilogue as A tiles, ragged");
                t_check(check_bf16_gelu_tiles(kern, nt, SAM3__BSMALL_M + 17, 64, 33, 37) == want, "bf16 GELU epilogue as A tiles, whole");
                t_check(check_bf16_gelu_tiles(kern, nt, 70, SAM3__BKC_AMX + 40, 33, 37) == want,
                        "bf16 product on A tiles over k blocks");
            }
            t_check(check_bf16_gelu(kern, nt, 64, 40, sam3__bgemm_kcb(sam3__bgemm_kern(kern)) + 1, 1, 1) == 0,
                    "bf16 GELU epilogue declines more than one k block");
        }
        printf("bf16 %s kernel: %s\n", bk_name[kern], t_fail == before ? "agrees" : "DIFFERS");
    }
#ifdef _OPENMP
    { /* inside a parallel region */
        int ok = 1;
        SAM3__OMP(parallel num_threads(2) reduction(&&:ok))
        ok = check_bf16(have, 2, 0, 1, 70, 45, 33, 0.0f, 1, 0, 1) && check_bf16(have, 1, 1, 0, 33, 70, 300, 1.0f, 0, 1, 0);
        t_check(ok, "bf16 product inside a parallel region");
    }
#endif
}
/* GFLOP/s of each bf16 kernel the CPU has, C = A B^T with B bf16 (a converted file's linear layer) */
static int bench_bf16(int M, int N, int K, int nt, int runs) {
    float *A = (float *)malloc((size_t)M * K * sizeof(float)), *C = (float *)malloc((size_t)M * N * sizeof(float));
    uint16_t *B = (uint16_t *)malloc((size_t)N * K * sizeof(uint16_t));
    const int have = sam3__bf16_detect();
    sam3_ctx c;
    size_t i;
    int r, kern;
    double flop = 2.0 * M * N * K;
    sam3__gemm_args g;
    memset(&c, 0, sizeof(c));
    memset(&g, 0, sizeof(g));
    g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.a = A, g.lda = K, g.bh = B, g.ldb = K, g.c = C, g.ldc = N;
    c.nt = nt;
    c.a.alloc = sam3__default_alloc; /* kernel scratch comes from the context */
    c.a.free = sam3__default_free;
#ifdef _OPENMP
    omp_set_num_threads(nt);
#endif
#if defined(OPENBLAS_VERSION) && !defined(SAM3_NO_BLAS) && !defined(SAM3_SGEMM)
    openblas_set_num_threads(nt);
#endif
    for (i = 0; i < (size_t)M * K; i++) A[i] = frand();
    for (i = 0; i < (size_t)N * K; i++) B[i] = sam3__f32_bf16(frand());
    for (kern = 0; kern <= have; kern++) {
        double best = 1e30;
        for (r = 0; r < runs; r++) {
            double t0 = now_ms(), t;
            sam3__gemm_bf16(&c, kern, &g);
            t = now_ms() - t0;
            if (t < best) best = t;
        }
        printf("bf16 %s: %.1f GFLOP/s  (M %d N %d K %d, %d threads)\n", bk_name[kern], flop / best * 1e-6, M, N, K, nt);
    }
    free(A);
    free(B);
    free(C);
    return 0;
}

static int bench(int M, int N, int K, int nt, int runs) {
    float *A = (float *)malloc((size_t)M * K * sizeof(float)), *B = (float *)malloc((size_t)N * K * sizeof(float));
    float *C = (float *)malloc((size_t)M * N * sizeof(float));
    size_t i;
    int r;
    double best = 1e30, flop = 2.0 * M * N * K;
    sam3__gemm_args g;
    memset(&g, 0, sizeof(g));
    g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.a = A, g.lda = K, g.b = B, g.ldb = K, g.c = C, g.ldc = N;
    for (i = 0; i < (size_t)M * K; i++) A[i] = frand();
    for (i = 0; i < (size_t)N * K; i++) B[i] = frand();
    for (r = 0; r < runs; r++) {
        double t0 = now_ms(), t;
        sam3__sgemm_builtin(NULL, nt, &g);
        t = now_ms() - t0;
        if (t < best) best = t;
    }
    printf("sgemm (built-in): %.1f GFLOP/s  (M %d N %d K %d, %d threads)\n", flop / best * 1e-6, M, N, K, nt);
#if !defined(SAM3_NO_BLAS) && !defined(SAM3_SGEMM)
    best = 1e30;
#if defined(OPENBLAS_VERSION)
    openblas_set_num_threads(nt);
#endif
#ifdef _OPENMP
    omp_set_num_threads(nt);
#endif
    for (r = 0; r < runs; r++) {
        double t0 = now_ms(), t;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
        t = now_ms() - t0;
        if (t < best) best = t;
    }
    printf("sgemm (BLAS): %.1f GFLOP/s  (M %d N %d K %d, %d threads)\n", flop / best * 1e-6, M, N, K, nt);
#endif
    free(A);
    free(B);
    free(C);
    return 0;
}

int main(int argc, char **argv) {
    int nt, ta, tb, s;
    /* across MC, NC and KC one at a time (the reference's cost stays small under qemu) */
    static const int big[][3] = {{1, 1, 1}, {SAM3__GMC + 1, SAM3__GNR * 3 + 5, SAM3__GKC + 3}, {2 * SAM3__GMC + 3, 40, 2 * SAM3__GKC + 1},
                                 {5, SAM3__GNC + SAM3__GNR + 1, 3}, {9, SAM3__GNC + 7, SAM3__GKC + 1}, {300, 77, 0}, {1, 257, 513}};
#ifdef _OPENMP
    { /* called from inside a parallel region (as the Winograd convolution and the BLAS attention do) */
        int ok = 1;
        SAM3__OMP(parallel num_threads(2) reduction(&&:ok))
        ok = check_one(2, 0, 1, 70, 45, 33, 1.0f, 0.0f, 1) && check_one(1, 1, 0, 33, 70, 300, 1.0f, 1.0f, 0);
        t_check(ok, "built-in sgemm inside a parallel region");
    }
#endif
    if (argc >= 6 && strcmp(argv[1], "--bench") == 0)
        return bench(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc > 6 ? atoi(argv[6]) : 5);
    if (argc >= 6 && strcmp(argv[1], "--bench-bf16") == 0)
        return bench_bf16(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc > 6 ? atoi(argv[6]) : 5);
    test_bf16();
    for (nt = 1; nt <= 2; nt++)
        for (ta = 0; ta < 2; ta++)
            for (tb = 0; tb < 2; tb++) {
                /* each size 1..40 in one dimension, the others odd */
                for (s = 1; s <= 40; s++) {
                    t_check(check_one(nt, ta, tb, s, 13, 11, 1.0f, 0.0f, 0), "built-in sgemm, M sweep");
                    t_check(check_one(nt, ta, tb, 7, s, 19, 1.0f, 1.0f, 1), "built-in sgemm, N sweep");
                    t_check(check_one(nt, ta, tb, 9, 17, s, 0.5f, -0.75f, 3), "built-in sgemm, K sweep");
                }
                for (s = 0; s < (int)(sizeof(big) / sizeof(big[0])); s++)
                    t_check(check_one(nt, ta, tb, big[s][0], big[s][1], big[s][2], s % 2 ? 1.0f : -1.25f, s % 3 ? 0.0f : 2.0f, s % 2),
                            "built-in sgemm, shapes across the blocks");
            }
    return t_done("test_gemm");
}
