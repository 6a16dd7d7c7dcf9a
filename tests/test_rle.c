/* sam3_mask_to_rle against COCO's compressed RLE ("counts" of pycocotools' mask.encode):
   - known strings: masks whose strings follow by hand from cocoapi's common/maskApi.c (rleEncode on
     the Fortran-order array, then rleToString): empty, full, no pixels, 1xN, Nx1, a negative
     difference, runs longer than 2^15 and 2^16;
   - round trips through a decoder restated from maskApi.c's rleFrString + rleDecode: random masks
     of several shapes and densities, bytes other than 0 and 1, long runs;
   - the buffer contract: size query, exact fit, one byte short, bad arguments.
     tests/test_rle    (no files)
   Prints "test_rle: N passed, N failed" last; exits 1 on failure. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <stdint.h>

/* rleFrString: the counts of s, or -1 for a malformed string; at most cap counts. */
static long decode_counts(const char *s, int64_t *cnts, long cap) {
    long m = 0, p = 0;
    while (s[p]) {
        int64_t x = 0;
        int k = 0, more = 1;
        while (more) {
            int c = s[p] - 48;
            if (c < 0 || c > 63 || k > 12) return -1;
            x |= (int64_t)(c & 0x1f) << (5 * k);
            more = c & 0x20;
            p++, k++;
            if (!more && (c & 0x10)) x |= (int64_t)(-1) * ((int64_t)1 << (5 * k)); /* sign extension */
            if (more && !s[p]) return -1;
        }
        if (m > 2) x += cnts[m - 2];
        if (m >= cap || x < 0) return -1;
        cnts[m++] = x;
    }
    return m;
}

/* rleDecode into a row-major w x h mask (0/1); 1 when the counts cover exactly w*h pixels. */
static int decode_mask(const char *s, int w, int h, uint8_t *out) {
    const long np = (long)w * h;
    int64_t *cnts = (int64_t *)malloc(sizeof(int64_t) * (size_t)(np + 2));
    long m, j, i = 0, k;
    int v = 0, ok = 1;
    if (!cnts) return 0;
    m = decode_counts(s, cnts, np + 2);
    if (m < 1) ok = 0;
    for (j = 0; ok && j < m; j++, v = !v)
        for (k = 0; k < cnts[j]; k++, i++) {
            if (i >= np) {
                ok = 0;
                break;
            }
            out[(i % h) * w + i / h] = (uint8_t)v; /* column-major pixel i */
        }
    free(cnts);
    return ok && i == np;
}

/* The string of a mask through the size query and a buffer of exactly that size (NULL on failure). */
static char *encode(const uint8_t *mask, int w, int h) {
    size_t n = 7, n2 = 7;
    char *s;
    if (sam3_mask_to_rle(mask, w, h, NULL, 0, &n) != SAM3_OK) return NULL;
    if (!(s = (char *)malloc(n + 1))) return NULL;
    if (sam3_mask_to_rle(mask, w, h, s, n + 1, &n2) != SAM3_OK || n2 != n || strlen(s) != n) {
        free(s);
        return NULL;
    }
    return s;
}

static void check_known(const char *what, const uint8_t *mask, int w, int h, const char *want) {
    char *got = encode(mask, w, h);
    t_check(got && !strcmp(got, want), "%s (%dx%d): \"%s\", want \"%s\"", what, w, h, got ? got : "(failed)", want);
    free(got);
}

static void test_known(void) {
    static const uint8_t col5[5] = {1, 0, 1, 1, 0}, row5[5] = {0, 0, 1, 1, 1}, col9[9] = {0, 1, 1, 1, 1, 1, 0, 1, 1};
    static const uint8_t four_by_five[20] = {0, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1};
    uint8_t six[6] = {0, 0, 0, 0, 0, 0}, *big = (uint8_t *)calloc(70000, 1);
    int i;
    check_known("empty", six, 3, 2, "6"); /* counts [6] */
    memset(six, 9, sizeof(six));
    check_known("full, bytes 9", six, 3, 2, "06"); /* [0, 6] */
    check_known("no columns", NULL, 0, 4, "0");    /* [0], as rleEncode of no pixels */
    check_known("no rows", NULL, 4, 0, "0");
    check_known("1xN (one column)", col5, 1, 5, "01110");               /* [0, 1, 1, 2, 1]: 2-1, 1-1 */
    check_known("Nx1 (one row)", row5, 5, 1, "23");                     /* [2, 3] */
    check_known("a negative difference", col9, 1, 9, "151M");           /* [1, 5, 1, 2]: 2-5 = -3 -> 29 */
    check_known("4 rows x 5 columns", four_by_five, 5, 4, "341M00112O"); /* column order */
    if (!big) {
        t_check(0, "out of memory");
        return;
    }
    for (i = 40000; i < 60000; i++) big[(i % 200) * 300 + i / 200] = 1; /* column-major pixels 40000.. set */
    check_known("runs 40000 and 20000 (> 2^15)", big, 300, 200, "PRW1Pac0");
    memset(big, 0, 70000);
    memset(big + 3, 1, 69987); /* one column: [3, 69987, 10] */
    check_known("a run of 69987 (> 2^16)", big, 1, 70000, "3S[T2:");
    free(big);
}

/* Random masks: rectangles of set pixels over a background of density/256 noise. */
static void test_round_trips(void) {
    static const int shapes[][2] = {{1, 1}, {1, 37}, {37, 1}, {2, 3}, {64, 48}, {127, 65}, {300, 1}, {1, 300}, {640, 480}};
    uint32_t seed = 12345;
    int s, rep, same = 0, total = 0;
    for (s = 0; s < (int)(sizeof(shapes) / sizeof(shapes[0])); s++)
        for (rep = 0; rep < 4; rep++) {
            const int w = shapes[s][0], h = shapes[s][1], density = (int[]){0, 8, 128, 250}[rep];
            uint8_t *m = (uint8_t *)malloc((size_t)w * h), *back = (uint8_t *)malloc((size_t)w * h);
            char *str;
            int i, ok;
            for (i = 0; i < w * h; i++) {
                seed = seed * 1664525u + 1013904223u;
                m[i] = (uint8_t)((int)(seed >> 24) < density ? 1 + (seed >> 8) % 255 : 0); /* any non-zero byte is set */
            }
            if (rep == 3 && w > 2 && h > 2) memset(m + (size_t)(h / 3) * w, 0, (size_t)w * (h / 3)); /* a long empty band */
            str = encode(m, w, h);
            ok = str && decode_mask(str, w, h, back);
            for (i = 0; ok && i < w * h; i++) ok = back[i] == (m[i] != 0);
            same += ok, total++;
            t_check(ok, "round trip %dx%d density %d/256: %s", w, h, density, str ? "the decoded mask differs" : "no string");
            free(str), free(m), free(back);
        }
    t_check(same == total && total == 36, "%d of %d random masks decode to themselves", same, total);
}

static void test_buffer(void) {
    static const uint8_t m[6] = {0, 1, 1, 0, 0, 1};
    char buf[16];
    size_t n = 99, n2 = 99;
    sam3_result rc = sam3_mask_to_rle(m, 3, 2, NULL, 0, &n);
    t_check(rc == SAM3_OK && n > 0 && n < 16, "size query: ok, length %zu", n);
    memset(buf, 'x', sizeof(buf));
    rc = sam3_mask_to_rle(m, 3, 2, buf, n + 1, &n2);
    t_check(rc == SAM3_OK && n2 == n && strlen(buf) == n && buf[n + 1] == 'x', "capacity length + 1: ok, nothing past the NUL");
    memset(buf, 'x', sizeof(buf));
    n2 = 99;
    rc = sam3_mask_to_rle(m, 3, 2, buf, n, &n2);
    t_check(rc == SAM3_ERR_INVALID_ARG && n2 == n && buf[0] == 0, "capacity length: invalid, length still %zu, buffer \"\"", n2);
    rc = sam3_mask_to_rle(m, 3, 2, NULL, 5, &n2);
    t_check(rc == SAM3_ERR_INVALID_ARG, "NULL buffer with a capacity: invalid");
    t_check(sam3_mask_to_rle(m, 3, 2, buf, sizeof(buf), NULL) == SAM3_ERR_INVALID_ARG, "NULL length: invalid");
    t_check(sam3_mask_to_rle(m, -1, 2, buf, sizeof(buf), &n2) == SAM3_ERR_INVALID_ARG, "negative width: invalid");
    t_check(sam3_mask_to_rle(m, 3, -2, buf, sizeof(buf), &n2) == SAM3_ERR_INVALID_ARG, "negative height: invalid");
    t_check(sam3_mask_to_rle(NULL, 3, 2, buf, sizeof(buf), &n2) == SAM3_ERR_INVALID_ARG && buf[0] == 0, "NULL mask: invalid");
}

int main(void) {
    test_known();
    test_round_trips();
    test_buffer();
    return t_done("test_rle");
}
