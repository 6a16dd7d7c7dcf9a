/* sam3 - command-line front end of sam3.h.

   build/sam3 info -m FILE
   build/sam3 --help | --version

   Exit codes: 0 success, 1 runtime failure, 2 usage error; one line on stderr names the problem. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

static int g_quiet;

static void cli_log(void *user, int level, const char *msg) {
    (void)user;
    if (level == SAM3_LOG_ERROR || !g_quiet) fprintf(stderr, "sam3: %s\n", msg);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "sam3%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, " (try 'sam3 %s--help')\n", cmd ? cmd : "");
    return CLI_USAGE;
}

static const char *MAIN_HELP =
    "usage: sam3 COMMAND [OPTIONS]\n"
    "\n"
    "Meta SAM 3 segmentation in plain C (sam3.h " SAM3_VERSION_STRING ").\n"
    "\n"
    "commands:\n"
    "  info      print a .sam3 file's config, tensor count, dtypes and size\n"
    "  tokenize  print the CLIP token ids of a text prompt\n"
    "  bench     time every stage (medians) and report GFLOP/s and peak memory\n"
    "\n"
    "options:\n"
    "  --help     this text (COMMAND --help for a command)\n"
    "  --version  print the version\n";

static const char *INFO_HELP =
    "usage: sam3 info -m FILE [--tensors]\n"
    "\n"
    "Loads and validates a .sam3 file and prints its config, tensor count, dtypes and byte size.\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --tensors         also list every tensor (name, dtype, shape)\n";

static const char *DTYPES[5] = {"f32", "f16", "bf16", "i32", "u8"};

static int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int i, list = 0, n, counts[8] = {0};
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m;
    sam3_result rc;
    uint64_t total = 0;
    char val[1024];
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(INFO_HELP, stdout);
            return CLI_OK;
        } else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) return usage_error("info", "%s needs a file name", argv[i - 1]);
            path = argv[i];
        } else if (!strcmp(argv[i], "--tensors")) {
            list = 1;
        } else {
            return usage_error("info", "unknown option '%s'", argv[i]);
        }
    }
    if (!path) return usage_error("info", "missing -m FILE%s", NULL);
    lo.log = cli_log;
    rc = sam3_load(path, &lo, &m);
    if (rc != SAM3_OK) {
        fprintf(stderr, "sam3 info: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return CLI_FAIL;
    }
    printf("file: %s (%llu bytes)\n", path, (unsigned long long)sam3_model_file_size(m));
    printf("config:\n");
    n = sam3_model_config_count(m);
    for (i = 0; i < n; i++) {
        const char *key = sam3_model_config_entry(m, i, val, sizeof(val));
        printf("  %-48s %s\n", key, val);
    }
    n = sam3_model_tensor_count(m);
    for (i = 0; i < n; i++) {
        sam3_tensor_info t;
        int d;
        sam3_model_tensor_info(m, i, &t);
        total += t.nbytes;
        for (d = 0; d < 5; d++)
            if (!strcmp(t.dtype, DTYPES[d])) counts[d]++;
        if (list) {
            printf("  %-72.*s %-4s [", t.name_len, t.name, t.dtype);
            for (d = 0; d < t.ndim; d++) printf("%s%lld", d ? "," : "", (long long)t.shape[d]);
            printf("]\n");
        }
    }
    printf("tensors: %d (f32 %d, f16 %d, bf16 %d, i32 %d, u8 %d), %llu data bytes\n", n, counts[0], counts[1], counts[2],
           counts[3], counts[4], (unsigned long long)total);
    sam3_free(m);
    return CLI_OK;
}

static const char *TOKENIZE_HELP =
    "usage: sam3 tokenize -m FILE TEXT\n"
    "\n"
    "Prints the ids of TEXT (BOS and EOS included, no padding) space-separated on one line, exactly\n"
    "as the reference CLIP tokenizer. Prompts longer than the model's context (32 ids) are cut to\n"
    "fit with EOS kept, and a note goes to stderr.\n"
    "  -m, --model FILE  the .sam3 file (its vocabulary is used)\n";

static int cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL;
    int i, n = 0;
    int32_t ids[4096];
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m;
    sam3_result rc;
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(TOKENIZE_HELP, stdout);
            return CLI_OK;
        } else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) return usage_error("tokenize", "%s needs a file name", argv[i - 1]);
            path = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--")) {
            return usage_error("tokenize", "unknown option '%s'", argv[i]);
        } else {
            if (!strcmp(argv[i], "--") && i + 1 < argc) i++;
            if (text) return usage_error("tokenize", "give one TEXT argument (quote it), got also '%s'", argv[i]);
            text = argv[i];
        }
    }
    if (!path) return usage_error("tokenize", "missing -m FILE%s", NULL);
    if (!text) return usage_error("tokenize", "missing TEXT%s", NULL);
    lo.log = cli_log;
    if ((rc = sam3_load(path, &lo, &m)) != SAM3_OK) {
        fprintf(stderr, "sam3 tokenize: cannot load '%s': %s\n", path, sam3_result_string(rc));
        return CLI_FAIL;
    }
    rc = sam3_tokenize(m, text, ids, 4096, &n);
    if (rc < 0) {
        fprintf(stderr, "sam3 tokenize: %s\n", sam3_result_string(rc));
        sam3_free(m);
        return CLI_FAIL;
    }
    for (i = 0; i < n; i++) printf("%s%d", i ? " " : "", (int)ids[i]);
    printf("\n");
    if (rc == SAM3_TRUNCATED) fprintf(stderr, "sam3 tokenize: note: the prompt was truncated to %d ids\n", n);
    sam3_free(m);
    return CLI_OK;
}


static const char *BENCH_HELP =
    "usage: sam3 bench -m FILE [--threads N] [--runs R] [--size WxH]\n"
    "\n"
    "Times, as medians over R runs (default 3): load (open + validate + map), the image encoder\n"
    "(ViT trunk, neck), the text encoder, the detector and masks for one prompt, and a new prompt on\n"
    "the cached image; then peak RSS, and the encoder's GFLOP/s next to a large sgemm's GFLOP/s\n"
    "measured in the same run. The image is synthetic (default 1280x960).\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --threads N       threads (default: all cores)\n"
    "  --blas-threads B  BLAS's own threads (default 1: sam3 splits every product over its threads,\n"
    "                    so one thread pool does all the work; 0 leaves BLAS as it is)\n"
    "  --runs R          repetitions (default 3)\n";

static double bench_now(void) { return sam3__now_ms(); }
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static int64_t cfgi(const sam3_model *m, const char *key) {
    int64_t v = 0;
    sam3_model_config_int(m, key, &v);
    return v;
}
/* Multiply-adds x 2 of the image encoder (GEMMs, convs and attention products), from the config. */
static double vision_gflop(const sam3_model *m) {
    double C = (double)cfgi(m, "vision.hidden_size"), Ih = (double)cfgi(m, "vision.intermediate_size");
    double p = (double)cfgi(m, "vision.patch_size"), D = (double)cfgi(m, "neck.fpn_hidden_size");
    int64_t g = cfgi(m, "vision.image_size") / cfgi(m, "vision.patch_size"), ws = cfgi(m, "vision.window_size");
    int64_t L = cfgi(m, "vision.num_hidden_layers"), nwy = (g + ws - 1) / ws, l;
    double N = (double)(g * g), nwin = (double)(nwy * nwy * ws * ws), f = 2 * N * C * 3 * p * p;
    double scales[8];
    int n = 0, j;
    int64_t glob[64];
    memset(glob, 0, sizeof(glob));
    {
        char val[512];
        int i, k = sam3_model_config_count(m);
        for (i = 0; i < k; i++) {
            const char *key = sam3_model_config_entry(m, i, val, sizeof(val));
            if (!strcmp(key, "vision.global_attn_indexes")) {
                char *q = val + 1;
                while (*q && *q != ']') {
                    long x = strtol(q, &q, 10);
                    if (x >= 0 && x < 64) glob[x] = 1;
                    if (*q == ',') q++;
                }
            }
            if (!strcmp(key, "neck.scale_factors")) {
                char *q = val + 1;
                while (*q && *q != ']' && n < 8) {
                    scales[n++] = strtod(q, &q);
                    if (*q == ',') q++;
                }
            }
        }
    }
    for (l = 0; l < L; l++) {
        double nt = glob[l < 64 ? l : 63] ? N : nwin;
        f += 8 * nt * C * C + 4 * N * C * Ih + (glob[l < 64 ? l : 63] ? 4 * N * N * C : 4 * (nt / (ws * ws)) * (double)(ws * ws) * (ws * ws) * C);
    }
    for (j = 0; j + 1 < n; j++) {
        double s = scales[j], hw = N * s * s, cin = C;
        if (s >= 2) f += 2 * N * 4 * C * (C / 2), cin = C / 2;
        if (s >= 4) f += 2 * (4 * N) * 4 * (C / 2) * (C / 4), cin = C / 4;
        f += 2 * hw * cin * D + 2 * hw * D * D * 9;
    }
    return f / 1e9;
}

static int cmd_bench(int argc, char **argv) {
    const char *path = NULL;
    int i, threads = 0, runs = 3, W = 1280, H = 960, blas_threads = 1;
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_result rc;
    double *t_load, *t_trunk, *t_neck, *t_pre, *t_text, *t_det, *t_new, t0, sg_ms[3], gf;
    unsigned char *img;
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(BENCH_HELP, stdout);
            return CLI_OK;
        } else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1) return usage_error("bench", "--threads must be >= 1, got '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--blas-threads") && i + 1 < argc) {
            blas_threads = atoi(argv[++i]);
            if (blas_threads < 0) return usage_error("bench", "--blas-threads must be >= 0, got '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1 || runs > 1000) return usage_error("bench", "--runs must be 1..1000, got '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (sscanf(argv[++i], "%dx%d", &W, &H) != 2 || W < 1 || H < 1 || W > 16384 || H > 16384)
                return usage_error("bench", "--size wants WxH, got '%s'", argv[i]);
        } else {
            return usage_error("bench", "unknown or incomplete option '%s'", argv[i]);
        }
    }
    if (!path) return usage_error("bench", "missing -m FILE%s", NULL);
    t_load = (double *)calloc((size_t)runs * 7, sizeof(double));
    img = (unsigned char *)malloc((size_t)W * H * 3);
    if (!t_load || !img) return CLI_FAIL;
    t_trunk = t_load + runs; t_neck = t_trunk + runs; t_pre = t_neck + runs; t_text = t_pre + runs; t_det = t_text + runs; t_new = t_det + runs;
    for (i = 0; i < W * H * 3; i++) img[i] = (unsigned char)((i % (W * 3)) * 255 / (W * 3) ^ (i / (W * 3)) % 256);
    for (i = 0; i < runs; i++) {
        t0 = bench_now();
        rc = sam3_load(path, NULL, &m);
        t_load[i] = bench_now() - t0;
        if (rc != SAM3_OK) {
            fprintf(stderr, "sam3 bench: cannot load '%s': %s\n", path, sam3_result_string(rc));
            return CLI_FAIL;
        }
        if (i + 1 < runs) sam3_free(m);
    }
    co.n_threads = threads;
    co.blas_threads = blas_threads;
    if ((rc = sam3_ctx_new(m, &co, &c)) != SAM3_OK) {
        fprintf(stderr, "sam3 bench: %s\n", sam3_result_string(rc));
        return CLI_FAIL;
    }
    for (i = 0; i < runs; i++) {
        sam3_timings t;
        if ((rc = sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8)) != SAM3_OK) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            return CLI_FAIL;
        }
        t = sam3_ctx_timings(c);
        t_pre[i] = t.preprocess;
        t_trunk[i] = t.vision_trunk;
        t_neck[i] = t.vision_neck;
    }
    for (i = 0; i < runs; i++) {
        char text[64];
        sam3_prompt pr;
        sam3_segmentation seg;
        sam3_timings t;
        memset(&pr, 0, sizeof(pr));
        snprintf(text, sizeof(text), "yellow school bus %d", i % 10); /* a new text each run: same token count */
        pr.text = text;
        rc = sam3_segment(c, &pr, NULL, &seg);
        t = sam3_ctx_timings(c);
        t_text[i] = t.text;
        t_det[i] = t.geometry + t.detr_encoder + t.detr_decoder + t.mask_decoder + t.postprocess;
        snprintf(text, sizeof(text), "red car %d", i % 10);
        t0 = bench_now();
        rc = rc < 0 ? rc : sam3_segment(c, &pr, NULL, &seg);
        t_new[i] = bench_now() - t0;
        if (rc < 0) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            return CLI_FAIL;
        }
    }
    {
        /* same-run sgemm reference: 2048^3, best of 3 */
        int n = 2048, k;
        float *a = (float *)malloc(sizeof(float) * n * n), *b = (float *)malloc(sizeof(float) * n * n), *cc = (float *)malloc(sizeof(float) * n * n);
        for (k = 0; k < n * n; k++) a[k] = b[k] = (float)(k % 17) * 0.01f;
        for (k = 0; k < 3; k++) {
            t0 = bench_now();
            sam3__gemm(c, 0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
            sg_ms[k] = bench_now() - t0;
        }
        free(a); free(b); free(cc);
    }
    gf = vision_gflop(m);
    {
        double tl = median(t_load, runs), tp = median(t_pre, runs), tt = median(t_trunk, runs), tn = median(t_neck, runs);
        double sg = 2.0 * 2048.0 * 2048.0 * 2048.0 / 1e9 / (median(sg_ms, 3) / 1000.0), enc = gf / ((tt + tn) / 1000.0);
        long rss_kb = 0;
#if defined(__unix__) || defined(__APPLE__)
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) rss_kb = ru.ru_maxrss;
#endif
        printf("sam3 bench: %s, image %dx%d, %d run%s, threads %s%d, BLAS threads %d%s\n", path, W, H, runs, runs > 1 ? "s (medians)" : "",
               threads ? "" : "all = ", threads ? threads : c->nt, blas_threads, c->split ? " (products split by sam3)" : "");
        printf("  %-34s %10.1f ms\n", "load (open + validate + map)", tl);
        printf("  %-34s %10.1f ms\n", "preprocess (resize + normalise)", tp);
        printf("  %-34s %10.1f ms\n", "image encoder: ViT trunk", tt);
        printf("  %-34s %10.1f ms\n", "image encoder: neck", tn);
        printf("  %-34s %10.1f ms\n", "text encoder (new prompt)", median(t_text, runs));
        printf("  %-34s %10.1f ms\n", "detector + masks (one prompt)", median(t_det, runs));
        printf("  %-34s %10.1f ms\n", "new prompt on the cached image", median(t_new, runs));
        printf("  %-34s %10.1f MB\n", "peak RSS", rss_kb / 1024.0);
        printf("  %-34s %10.1f GFLOP/s (%.0f GFLOP)\n", "image encoder", enc, gf);
        printf("  %-34s %10.1f GFLOP/s (%.0f%% reached by the encoder)\n", "sgemm 2048^3, same run", sg, 100.0 * enc / sg);
    }
    sam3_ctx_free(c);
    sam3_free(m);
    free(t_load);
    free(img);
    return CLI_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(MAIN_HELP, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(MAIN_HELP, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sam3 %s (file format %d)\n", sam3_version_string(), SAM3_FILE_FORMAT_VERSION);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench")) return cmd_bench(argc - 2, argv + 2);
    return usage_error(NULL, "unknown command '%s'", argv[1]);
}
