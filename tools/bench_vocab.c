/* A class vocabulary on one cached image, three ways, in one process (Linux):

     cc -O3 -march=native -fopenmp -isystem /usr/include/stb -o build/bench_vocab tools/bench_vocab.c \
        -L/usr/lib/x86_64-linux-gnu/openblas-openmp -l:libopenblas.so.0 -lm
     OMP_WAIT_POLICY=passive build/bench_vocab MODEL.sam3 IMAGE.jpg DIR [ROUNDS [THREADS]]

   Makes a concept of each of 16 class names (sam3_concept_new, saved to DIR/NAME.concept and loaded
   back), then ROUNDS times (default 3), one after the other: (a) the 16 names as 16 sam3_segment
   text prompts (the text encoder each time: 16 names do not fit the context's 8-entry text cache),
   (b) the 16 concepts as 16 sam3_segment calls, (c) the 16 concepts in one sam3_segment_many call
   (on a second context with the same image, so that each way keeps its own result buffers). Prints
   each round and the medians: total and the stages summed over the prompts.

     build/bench_vocab MODEL.sam3 IMAGE.jpg DIR --rss texts|concepts [THREADS]

   one sam3_segment_many of the 16 names as texts, or of DIR's 16 concepts, then the pages of the
   text tower's tensors (CLIP's text model) present in this process's page table (/proc/self/pagemap)
   and the file mapping's resident size (/proc/self/smaps): run it under /usr/bin/time -v for the
   peak RSS. */
#define _GNU_SOURCE
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

#include <fcntl.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NC 16
static const char *const g_names[NC] = {"person", "car", "dog", "cat", "bicycle", "bus", "traffic light", "chair",
                                        "bottle", "cup", "banana", "apple", "potted plant", "bird", "truck", "umbrella"};

static double median3(double *v, int n) {
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { T_ALL, T_CPU, T_TEXT, T_ENC, T_DEC, T_MASK, T_POST, T_N };
static const char *const g_tn[T_N] = {"total", "cpu", "text", "DETR encoder", "decoder", "masks", "post"};
/* CPU time of the process (all its threads) in ms: with OMP_WAIT_POLICY=passive the work done, less
   sensitive than the wall clock to other programs on the same cores. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void add_timings(double *acc, const sam3_ctx *c) {
    sam3_timings t = sam3_ctx_timings(c);
    acc[T_TEXT] += t.text;
    acc[T_ENC] += t.detr_encoder;
    acc[T_DEC] += t.detr_decoder;
    acc[T_MASK] += t.mask_decoder;
    acc[T_POST] += t.postprocess + t.geometry;
}

static void die(const char *what, sam3_ctx *c) {
    fprintf(stderr, "bench_vocab: %s: %s\n", what, c ? sam3_ctx_last_error(c) : "");
    exit(1);
}

static sam3_ctx *ctx_on(const sam3_model *m, int threads, const unsigned char *rgb, int w, int h) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_ctx *c = NULL;
    double t0;
    co.n_threads = threads;
    co.blas_threads = 1;
    if (sam3_ctx_new(m, &co, &c) != SAM3_OK) die("sam3_ctx_new", NULL);
    t0 = sam3_time_ms();
    if (sam3_set_image(c, rgb, w, h, w * 3, SAM3_RGB8) != SAM3_OK) die("sam3_set_image", c);
    fprintf(stderr, "image encoder: %.0f ms\n", sam3_time_ms() - t0);
    return c;
}

/* The concept of each name: made and saved when DIR lacks it, then loaded from DIR. */
static void concepts(const sam3_model *m, sam3_ctx *c, const char *dir, sam3_concept **k) {
    int i;
    for (i = 0; i < NC; i++) {
        char path[600], err[256];
        size_t n = 0;
        unsigned char *b = NULL;
        FILE *f;
        snprintf(path, sizeof(path), "%s/%02d.concept", dir, i);
        if (c && !(f = fopen(path, "rb"))) {
            sam3_segment_prompt pr;
            sam3_concept *made = NULL;
            memset(&pr, 0, sizeof(pr));
            pr.text = g_names[i];
            if (sam3_concept_new(c, &pr, &made) < 0 || sam3_concept_save(made, NULL, 0, &n) != SAM3_OK || !(b = (unsigned char *)malloc(n)) ||
                sam3_concept_save(made, b, n, &n) != SAM3_OK || !(f = fopen(path, "wb")) || fwrite(b, 1, n, f) != n || fclose(f))
                die("making a concept", c);
            sam3_concept_free(made);
            free(b);
        } else if (c) fclose(f);
        if (!(f = fopen(path, "rb"))) die(path, NULL);
        fseek(f, 0, SEEK_END);
        n = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        if (!(b = (unsigned char *)malloc(n)) || fread(b, 1, n, f) != n) die("reading a concept", NULL);
        fclose(f);
        if (sam3_concept_load(m, b, n, &k[i], err, sizeof(err)) != SAM3_OK) {
            fprintf(stderr, "bench_vocab: %s: %s\n", path, err);
            exit(1);
        }
        free(b);
    }
}

/* Pages of the text tower's tensors present in this process's page table, and all its pages. */
static void text_pages(const sam3_model *m, long *present, long *total) {
    const long ps = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint32_t i;
    *present = *total = 0;
    if (fd < 0) return;
    for (i = 0; i < m->file.n_tensors; i++) {
        const sam3__tensor *t = &m->file.tensors[i];
        uintptr_t a, e;
        if (t->name_len < 13 || memcmp(t->name, "text_encoder.", 13) || !t->nbytes) continue;
        a = (uintptr_t)t->data / ps * ps;
        e = (uintptr_t)t->data + t->nbytes;
        for (; a < e; a += ps) {
            uint64_t ent = 0;
            if (pread(fd, &ent, 8, (off_t)(a / ps * 8)) == 8 && (ent >> 63 & 1)) (*present)++;
            (*total)++;
        }
    }
    close(fd);
}

static int rss_run(const sam3_model *m, sam3_ctx *c, const char *dir, int texts) {
    sam3_concept *k[NC];
    sam3_segment_prompt pr[NC];
    sam3_segment_result res[NC];
    long present, total;
    char line[512];
    FILE *f;
    int i;
    memset(pr, 0, sizeof(pr));
    if (!texts) concepts(m, NULL, dir, k);
    for (i = 0; i < NC; i++) {
        if (texts) pr[i].text = g_names[i];
        else pr[i].concepts = (const sam3_concept *const *)&k[i], pr[i].n_concepts = 1;
    }
    if (sam3_segment_many(c, pr, NC, NULL, res) < 0) die("sam3_segment_many", c);
    text_pages(m, &present, &total);
    printf("%s: text tower pages present in this process: %ld of %ld (%.1f MB of %.1f MB)\n", texts ? "texts" : "concepts", present, total,
           present * 4096.0 / 1e6, total * 4096.0 / 1e6);
    if ((f = fopen("/proc/self/smaps_rollup", "r"))) {
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "Rss:", 4) || !strncmp(line, "Pss_File:", 9) || !strncmp(line, "Pss_Anon:", 9)) printf("  %s", line);
        fclose(f);
    }
    return 0;
}

int main(int argc, char **argv) {
    sam3_model *m = NULL;
    sam3_ctx *c, *c2;
    sam3_concept *k[NC];
    sam3_segment_prompt pt[NC], pk[NC];
    sam3_segment_result res, many[NC];
    double t[3][T_N][16], med[3][T_N];
    unsigned char *rgb;
    int w, h, ch, i, r, way, rounds = 3, threads = 2, nk[3] = {0, 0, 0};
    if (argc < 4) {
        fprintf(stderr, "usage: bench_vocab MODEL.sam3 IMAGE DIR [ROUNDS [THREADS]] | --rss texts|concepts [THREADS]\n");
        return 2;
    }
    if (!(rgb = stbi_load(argv[2], &w, &h, &ch, 3))) die(argv[2], NULL);
    if (sam3_load(argv[1], NULL, &m) != SAM3_OK) die(argv[1], NULL);
    if (argc > 5 && !strcmp(argv[4], "--rss")) {
        if (argc > 6) threads = atoi(argv[6]);
        c = ctx_on(m, threads, rgb, w, h);
        return rss_run(m, c, argv[3], !strcmp(argv[5], "texts"));
    }
    if (argc > 4) rounds = atoi(argv[4]);
    if (argc > 5) threads = atoi(argv[5]);
    if (rounds < 1 || rounds > 16) return 2;
    c = ctx_on(m, threads, rgb, w, h);
    c2 = ctx_on(m, threads, rgb, w, h);
    concepts(m, c, argv[3], k);
    memset(pt, 0, sizeof(pt));
    memset(pk, 0, sizeof(pk));
    for (i = 0; i < NC; i++) {
        pt[i].text = g_names[i];
        pk[i].concepts = (const sam3_concept *const *)&k[i], pk[i].n_concepts = 1;
    }
    memset(t, 0, sizeof(t));
    for (r = 0; r < rounds; r++)
        for (way = 0; way < 3; way++) {
            double *acc = (double *)t[way], t0 = sam3_time_ms(), c0 = cpu_ms(), v[T_N];
            int j;
            memset(v, 0, sizeof(v));
            nk[way] = 0;
            if (way < 2) {
                for (i = 0; i < NC; i++) {
                    if (sam3_segment(c, way ? &pk[i] : &pt[i], NULL, &res) < 0) die("sam3_segment", c);
                    add_timings(v, c);
                    nk[way] += res.n_instances;
                }
            } else {
                if (sam3_segment_many(c2, pk, NC, NULL, many) < 0) die("sam3_segment_many", c2);
                add_timings(v, c2);
                for (i = 0; i < NC; i++) nk[way] += many[i].n_instances;
            }
            v[T_ALL] = sam3_time_ms() - t0;
            v[T_CPU] = cpu_ms() - c0;
            for (j = 0; j < T_N; j++) acc[j * 16 + r] = v[j];
            printf("round %d, %s: %.0f ms (cpu %.0f; text %.0f, DETR encoder %.0f, decoder %.0f, masks %.0f, post %.0f), %d instances\n", r + 1,
                   way == 0 ? "16 text prompts, one at a time" : way == 1 ? "16 concepts, one at a time" : "16 concepts, sam3_segment_many",
                   v[T_ALL], v[T_CPU], v[T_TEXT], v[T_ENC], v[T_DEC], v[T_MASK], v[T_POST], nk[way]);
            fflush(stdout);
        }
    for (way = 0; way < 3; way++)
        for (i = 0; i < T_N; i++) med[way][i] = median3(t[way][i], rounds);
    printf("medians of %d, %d threads, %s, %dx%d:\n", rounds, threads, argv[1], w, h);
    for (way = 0; way < 3; way++) {
        printf("  %-34s", way == 0 ? "16 text prompts, one at a time" : way == 1 ? "16 concepts, one at a time" : "16 concepts, sam3_segment_many");
        for (i = 0; i < T_N; i++) printf("  %s %.0f", g_tn[i], med[way][i]);
        printf("  ms\n");
    }
    printf("ratio many / texts %.3f (cpu %.3f), many / concepts one at a time %.3f (cpu %.3f)\n", med[2][T_ALL] / med[0][T_ALL],
           med[2][T_CPU] / med[0][T_CPU], med[2][T_ALL] / med[1][T_ALL], med[2][T_CPU] / med[1][T_CPU]);
    return 0;
}
