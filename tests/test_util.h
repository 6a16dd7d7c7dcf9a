/* Shared helpers of the C tests: pass/fail accounting, file reading, relative errors.
   Each test program ends by printing "N passed, N failed" and exits non-zero on failure. */
#ifndef SAM3_TEST_UTIL_H
#define SAM3_TEST_UTIL_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define T_UNUSED __attribute__((unused))
#else
#define T_UNUSED
#endif
static int t_pass, t_fail, t_skip;

static T_UNUSED void t_check(int ok, const char *fmt, ...) {
    va_list ap;
    if (ok) t_pass++;
    else t_fail++;
    if (!ok || getenv("SAM3_TEST_VERBOSE")) {
        printf("%s ", ok ? "ok  " : "FAIL");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
}

static T_UNUSED void t_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static T_UNUSED int t_done(const char *name) {
    printf("%s: %d passed, %d failed", name, t_pass, t_fail);
    if (t_skip) printf(", %d skipped", t_skip);
    printf("\n");
    return t_fail ? 1 : 0;
}

/* Whole file into a 64-byte aligned buffer (free with free_aligned). */
static T_UNUSED void *t_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    long n;
    unsigned char *raw, *p;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        return NULL;
    }
    raw = (unsigned char *)malloc((size_t)n + 128);
    if (!raw) {
        fclose(f);
        return NULL;
    }
    p = raw + 64 - ((size_t)raw % 64);
    ((unsigned char **)p)[-1] = raw;
    if (n && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(raw);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return p;
}
static T_UNUSED void t_free_file(void *p) {
    if (p) free(((unsigned char **)p)[-1]);
}

/* ||a - b|| / ||b||, with ||b|| floored at `floor` per element (b = 0 and no floor: the absolute
   norm). The floor is for logits that sit near 0 (an object score of 0.007 that is the difference
   of O(1) terms), whose norm-wise relative error measures the cancellation, not the
   implementation: a 256-term f32 dot product in another order moves it by ~1e-6 absolute. */
static T_UNUSED double t_relerr_floor(const float *a, const float *b, size_t n, double floor) {
    double num = 0, den = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    if (den < floor * floor * (double)n) den = floor * floor * (double)n;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static T_UNUSED double t_relerr(const float *a, const float *b, size_t n) { return t_relerr_floor(a, b, n, 0.0); }
static T_UNUSED double t_maxabs(const float *a, const float *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d;
    }
    return m;
}
#endif
