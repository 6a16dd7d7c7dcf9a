/* The built-in SGEMM (sam3__sgemm_builtin, used with SAM3_NO_BLAS) against a double-precision
   reference: every size 1..40 for M, N, K in turn around odd shapes, all four transposes,
   alpha/beta cases (beta 0 must not read C: C starts as NaN there), leading dimensions wider
   than the matrix, one and two threads, and shapes crossing the block sizes (MC, NC, KC).
   usage: test_gemm            last line: "test_gemm: N passed, N failed"
          test_gemm --bench M N K THREADS [RUNS]   GFLOP/s of the built-in (and of cblas_sgemm
                                                   when built with a BLAS), C = A B^T as the model's
                                                   linear layers */
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
    size_t i;
    int r, q, k, ok = 1;
    for (i = 0; i < na; i++) A[i] = frand();
    for (i = 0; i < nb; i++) B[i] = frand();
    for (i = 0; i < nc; i++) C0[i] = C[i] = beta == 0 ? NAN : frand();
    sam3__sgemm_builtin(nt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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

static int bench(int M, int N, int K, int nt, int runs) {
    float *A = (float *)malloc((size_t)M * K * sizeof(float)), *B = (float *)malloc((size_t)N * K * sizeof(float));
    float *C = (float *)malloc((size_t)M * N * sizeof(float));
    size_t i;
    int r;
    double best = 1e30, flop = 2.0 * M * N * K;
    for (i = 0; i < (size_t)M * K; i++) A[i] = frand();
    for (i = 0; i < (size_t)N * K; i++) B[i] = frand();
    for (r = 0; r < runs; r++) {
        double t0 = now_ms(), t;
        sam3__sgemm_builtin(nt, 0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
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
