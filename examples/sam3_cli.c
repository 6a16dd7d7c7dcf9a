/* sam3 - command-line front end of sam3.h.

   build/sam3 segment -m FILE -i IMAGE [-t TEXT]... [--box x0,y0,x1,y1[,neg]]... -o OUTDIR
   build/sam3 points -m FILE -i IMAGE [--point x,y[,neg]]... [--box x0,y0,x1,y1] [--mask PNG] -o OUTDIR
   build/sam3 tokenize -m FILE TEXT
   build/sam3 info -m FILE [--tensors]
   build/sam3 bench -m FILE
   build/sam3 --help | --version          (COMMAND --help for each command)

   Exit codes: 0 success, 1 runtime failure, 2 usage error; one line on stderr names the problem.
   Images are read with stb_image and written with stb_image_write, scores drawn with
   stb_easy_font (Debian: libstb-dev, headers in /usr/include/stb). */
#define _POSIX_C_SOURCE 200809L /* fileno, isatty, mkdir under -std=c99 */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
#include "stb_easy_font.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#define cli_mkdir(path) _mkdir(path)
#define cli_isatty(f) _isatty(_fileno(f))
#else
#include <unistd.h>
#define cli_mkdir(path) mkdir(path, 0777)
#define cli_isatty(f) isatty(fileno(f))
#endif
#ifndef S_ISDIR
#define S_ISDIR(mode) (((mode)&S_IFMT) == S_IFDIR)
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#endif

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "sam3%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, " (try 'sam3 %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
    return CLI_USAGE;
}

/* Load errors are kept, to be printed on one line with the command and file name; notes go to
   stderr unless quiet. */
typedef struct load_log {
    char error[512];
    int quiet;
} load_log;

static void on_load_log(void *user, int level, const char *msg) {
    load_log *l = (load_log *)user;
    if (level == SAM3_LOG_ERROR) {
        if (!strncmp(msg, "sam3_load: ", 11)) msg += 11;
        if (!l->error[0]) snprintf(l->error, sizeof(l->error), "%s", msg);
    } else if (!l->quiet) {
        fprintf(stderr, "sam3: %s\n", msg);
    }
}

/* sam3_load with one line on stderr on failure ("sam3 CMD: cannot open model 'x': No such file
   or directory"). Returns 1 on success. */
static int load_model(const char *cmd, const char *path, int quiet, sam3_model **out) {
    sam3_load_options lo = sam3_load_options_default();
    load_log ll;
    sam3_result r;
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (!f) {
        fprintf(stderr, "sam3 %s: cannot open model '%s': %s\n", cmd, path, strerror(errno));
        return 0;
    }
    fclose(f);
    memset(&ll, 0, sizeof(ll));
    ll.quiet = quiet;
    lo.log = on_load_log;
    lo.log_user = &ll;
    if ((r = sam3_load(path, &lo, out)) != SAM3_OK) {
        fprintf(stderr, "sam3 %s: cannot load model '%s': %s\n", cmd, path, ll.error[0] ? ll.error : sam3_result_string(r));
        return 0;
    }
    return 1;
}

/* SAM 1 files (arch "sam1") have only the interactive head: no text encoder, no detector. */
static int model_is_sam1(const sam3_model *m) {
    const char *arch = sam3_model_config_string(m, "arch");
    return arch && !strcmp(arch, "sam1");
}

static const char *MAIN_HELP =
    "usage: sam3 COMMAND [OPTIONS]\n"
    "\n"
    "Meta SAM 3 segmentation in plain C (sam3.h " SAM3_VERSION_STRING ").\n"
    "\n"
    "commands:\n"
    "  segment   find every instance of a text and/or box prompt: masks, boxes, scores, overlay\n"
    "  points    segment the one object that clicks and/or a box point at (SAM 3 and SAM 1 files)\n"
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
    sam3_model *m;
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
    if (!load_model("info", path, 0, &m)) return CLI_FAIL;
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
    if (!load_model("tokenize", path, 0, &m)) return CLI_FAIL;
    if (model_is_sam1(m)) {
        fprintf(stderr, "sam3 tokenize: '%s' is a SAM 1 model, which has no text encoder or tokenizer\n", path);
        sam3_free(m);
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
    "usage: sam3 bench -m FILE [--threads N] [--runs R] [--size WxH] [--paired]\n"
    "\n"
    "Times, as medians over R runs (default 3): load (open + validate + map), the image encoder\n"
    "(ViT trunk, neck), the text encoder, the detector and masks for a first prompt on the image, a\n"
    "new prompt on the cached image (also without its post-processing, the stages a PyTorch forward\n"
    "runs), the first click after an image (it runs the interactive head's own neck) and a\n"
    "click on the cached image (\"n/a\" for a file without an interactive head); then peak RSS, and\n"
    "the encoder's GFLOP/s next to a large sgemm's GFLOP/s measured in the same run. A SAM 1 file\n"
    "has no text encoder or detector: its image encoder (ViT + neck) and clicks are timed. The image\n"
    "is synthetic (default 1280x960); each click is at a new place.\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --threads N       threads (default: all cores)\n"
    "  --blas-threads B  BLAS's own threads (default 1: sam3 splits every product over its threads,\n"
    "                    so one thread pool does all the work; 0 leaves BLAS as it is)\n"
    "  --runs R          repetitions (default 3)\n"
    "  --size WxH        the synthetic image's size\n"
    "  --paired          for tools/bench_vs_pytorch.sh: after an untimed round prints \"ready\", then\n"
    "                    each run (image, first prompt, new prompt) waits for a line on stdin and\n"
    "                    prints its times, so that another program's runs alternate with ours\n"
    "\n"
    "usage: sam3 bench --gemm [MxNxK] [--threads N] [--runs R]\n"
    "  --gemm            no model: the best of R runs of C = A B^T (M x K times (N x K)^T, as the linear\n"
    "                    layers; default 5184x1024x1024, the ViT's tokens at 1008 px) on N threads with\n"
    "                    the BLAS sam3 was built with and with sam3's built-in SGEMM (-DSAM3_NO_BLAS)\n";

static double bench_now(void) { return sam3__now_ms(); }

/* sam3 bench --gemm: the BLAS and the built-in SGEMM on one shape, each the best of `runs`. */
static int bench_gemm(int threads, int runs, int M, int N, int K) {
    float *a = (float *)malloc(sizeof(float) * M * K), *b = (float *)malloc(sizeof(float) * N * K), *cc = (float *)malloc(sizeof(float) * M * N);
    double best, t0, t, flop = 2.0 * M * N * K;
    size_t k;
    int r, pass;
    if (!a || !b || !cc) {
        fprintf(stderr, "sam3 bench: out of memory\n");
        free(a), free(b), free(cc);
        return CLI_FAIL;
    }
#ifdef _OPENMP
    if (threads < 1) threads = omp_get_max_threads();
#else
    if (threads < 1) threads = 1;
#endif
    for (k = 0; k < (size_t)M * K; k++) a[k] = (float)(k % 17) * 0.01f;
    for (k = 0; k < (size_t)N * K; k++) b[k] = (float)(k % 13) * 0.01f;
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    printf("sgemm %dx%dx%d (C = A B^T), %d thread%s, best of %d\n", M, N, K, threads, threads == 1 ? "" : "s", runs);
    for (pass = 0; pass < 2; pass++) {
#if defined(SAM3_NO_BLAS)
        if (pass == 0) {
            printf("sgemm (BLAS): n/a (built with SAM3_NO_BLAS)\n");
            continue;
        }
#endif
#if defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM) && !defined(SAM3_NO_BLAS)
        if (pass == 0) openblas_set_num_threads(threads);
#endif
        best = 1e30;
        for (r = 0; r <= runs; r++) { /* the first run warms up */
            t0 = bench_now();
#if !defined(SAM3_NO_BLAS)
            if (pass == 0)
#if defined(SAM3_SGEMM)
                SAM3_SGEMM(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, cc, N);
#else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, cc, N);
#endif
            else
#endif
                sam3__sgemm_builtin(threads, 0, 1, M, N, K, 1.0f, a, K, b, K, 0.0f, cc, N);
            t = bench_now() - t0;
            if (r > 0 && t < best) best = t;
        }
        printf("sgemm (%s): %.1f GFLOP/s\n", pass == 0 ? "BLAS" : "built-in", flop / best * 1e-6);
    }
    free(a), free(b), free(cc);
    return CLI_OK;
}
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
/* A config array ("[2,5,8,11]") into v; returns its length (at most cap), 0 if absent. */
static int cfg_array(const sam3_model *m, const char *key, double *v, int cap) {
    char val[512];
    int i, n = 0, k = sam3_model_config_count(m);
    for (i = 0; i < k; i++) {
        const char *q0 = sam3_model_config_entry(m, i, val, sizeof(val));
        char *q = val;
        if (!q0 || strcmp(q0, key)) continue;
        if (*q == '[') q++;
        while (*q && *q != ']' && n < cap) {
            char *e;
            double x = strtod(q, &e);
            if (e == q) break;
            v[n++] = x;
            q = e;
            if (*q == ',') q++;
        }
        break;
    }
    return n;
}
/* Multiply-adds x 2 of the SAM 3 image encoder (GEMMs, convs and attention products), from the config. */
static double vision_gflop(const sam3_model *m) {
    double C = (double)cfgi(m, "vision.hidden_size"), Ih = (double)cfgi(m, "vision.intermediate_size");
    double p = (double)cfgi(m, "vision.patch_size"), D = (double)cfgi(m, "neck.fpn_hidden_size");
    int64_t g = cfgi(m, "vision.image_size") / cfgi(m, "vision.patch_size"), ws = cfgi(m, "vision.window_size");
    int64_t L = cfgi(m, "vision.num_hidden_layers"), nwy = (g + ws - 1) / ws, l;
    double N = (double)(g * g), nwin = (double)(nwy * nwy * ws * ws), f = 2 * N * C * 3 * p * p;
    double scales[8], gi[64];
    int n = cfg_array(m, "neck.scale_factors", scales, 8), ng = cfg_array(m, "vision.global_attn_indexes", gi, 64), j;
    char glob[64];
    memset(glob, 0, sizeof(glob));
    for (j = 0; j < ng; j++)
        if (gi[j] >= 0 && gi[j] < 64) glob[(int)gi[j]] = 1;
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
/* The same for SAM 1's image encoder, as spec sam1.md section 12 (972 GFLOP for ViT-B at 1024):
   patch embed 2*N*3p^2*D; a windowed block 8*Np*D^2 (qkv + proj on the zero-padded windows) +
   4*N*D*mlp + nw*4*ws^4*D (attention) + nw*4*ws^3*D (relative positions); a global block
   8*N*D^2 + 4*N*D*mlp + 4*N^2*D + 4*N*G*D; the neck 2*N*D*out + 2*N*out^2*9. */
static double sam1_vision_gflop(const sam3_model *m) {
    double D = (double)cfgi(m, "sam1.vision.hidden_size"), mlp = (double)cfgi(m, "sam1.vision.mlp_dim");
    double out = (double)cfgi(m, "sam1.vision.output_channels"), p = (double)cfgi(m, "sam1.vision.patch_size");
    int64_t G = cfgi(m, "sam1.vision.image_size") / cfgi(m, "sam1.vision.patch_size"), ws = cfgi(m, "sam1.vision.window_size");
    int64_t L = cfgi(m, "sam1.vision.num_hidden_layers"), l;
    int rel = cfgi(m, "sam1.vision.use_rel_pos") != 0, ng, j;
    double N = (double)(G * G), f = 2 * N * 3 * p * p * D, gi[64];
    char glob[64];
    memset(glob, 0, sizeof(glob));
    ng = cfg_array(m, "sam1.vision.global_attn_indexes", gi, 64);
    for (j = 0; j < ng; j++)
        if (gi[j] >= 0 && gi[j] < 64) glob[(int)gi[j]] = 1;
    for (l = 0; l < L; l++) {
        if (ws > 0 && !glob[l < 64 ? l : 63]) {
            double nw = (double)(((G + ws - 1) / ws) * ((G + ws - 1) / ws)), w2 = (double)(ws * ws);
            f += 8 * nw * w2 * D * D + 4 * N * D * mlp + nw * 4 * w2 * w2 * D + (rel ? nw * 4 * w2 * (double)ws * D : 0);
        } else {
            f += 8 * N * D * D + 4 * N * D * mlp + 4 * N * N * D + (rel ? 4 * N * (double)G * D : 0);
        }
    }
    f += 2 * N * D * out + 2 * N * out * out * 9;
    return f / 1e9;
}

/* Peak resident set of this process in KB: Linux's VmHWM, which starts afresh at exec, where
   getrusage's ru_maxrss keeps the parent's peak when it is larger (a bench started by PyTorch's
   process, tools/bench_pytorch.py --pair, read PyTorch's 7 GB). */
static long peak_rss_kb(void) {
    long kb = 0;
#if defined(__linux__)
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    if (f) fclose(f);
    if (kb > 0) return kb;
#endif
#if defined(__unix__) || defined(__APPLE__)
    {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) kb = ru.ru_maxrss;
#if defined(__APPLE__)
        kb /= 1024; /* bytes there */
#endif
    }
#endif
    return kb;
}

static void bench_line(const char *what, double ms) {
    if (ms < 0) printf("  %-40s %10s\n", what, "n/a");
    else printf("  %-40s %10.1f ms\n", what, ms);
}

static int cmd_bench(int argc, char **argv) {
    const char *path = NULL;
    int i, threads = 0, runs = 3, W = 1280, H = 960, blas_threads = 1, sam1, paired = 0, rc_cli = CLI_FAIL, gemm = 0, gM = 5184, gN = 1024, gK = 1024;
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_load_options lo = sam3_load_options_default();
    load_log ll;
    sam3_result rc;
    double *t_load, *t_trunk, *t_neck, *t_pre, *t_text, *t_det, *t_new, *t_nopost, *t_click, t_first = -1, t0, sg_ms[3], sg_ob_ms[3] = {0, 0, 0}, gf;
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
        } else if (!strcmp(argv[i], "--paired")) {
            paired = 1;
        } else if (!strcmp(argv[i], "--gemm")) {
            gemm = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') {
                if (sscanf(argv[++i], "%dx%dx%d", &gM, &gN, &gK) != 3 || gM < 1 || gN < 1 || gK < 1 || gM > 65536 || gN > 65536 || gK > 65536)
                    return usage_error("bench", "--gemm wants MxNxK (each 1..65536), got '%s'", argv[i]);
            }
        } else {
            return usage_error("bench", "unknown or incomplete option '%s'", argv[i]);
        }
    }
    if (gemm) return bench_gemm(threads, runs, gM, gN, gK);
    if (!path) return usage_error("bench", "missing -m FILE%s", NULL);
    t_load = (double *)calloc((size_t)runs * 9, sizeof(double));
    img = (unsigned char *)malloc((size_t)W * H * 3);
    if (!t_load || !img) {
        fprintf(stderr, "sam3 bench: out of memory\n");
        free(t_load);
        free(img);
        return CLI_FAIL;
    }
    t_trunk = t_load + runs; t_neck = t_trunk + runs; t_pre = t_neck + runs; t_text = t_pre + runs; t_det = t_text + runs;
    t_new = t_det + runs; t_nopost = t_new + runs; t_click = t_nopost + runs;
    for (i = 0; i < W * H * 3; i++) img[i] = (unsigned char)((i % (W * 3)) * 255 / (W * 3) ^ (i / (W * 3)) % 256);
    memset(&ll, 0, sizeof(ll));
    ll.quiet = 1;
    lo.log = on_load_log;
    lo.log_user = &ll;
    for (i = 0; i < runs; i++) {
        t0 = bench_now();
        rc = sam3_load(path, &lo, &m);
        t_load[i] = bench_now() - t0;
        if (rc != SAM3_OK) {
            fprintf(stderr, "sam3 bench: cannot load model '%s': %s\n", path, ll.error[0] ? ll.error : sam3_result_string(rc));
            goto done;
        }
        if (i + 1 < runs) sam3_free(m), m = NULL;
    }
    sam1 = model_is_sam1(m);
    co.n_threads = threads;
    co.blas_threads = blas_threads;
    if ((rc = sam3_ctx_new(m, &co, &c)) != SAM3_OK) {
        fprintf(stderr, "sam3 bench: cannot create a context: %s\n", sam3_result_string(rc));
        goto done;
    }
    /* A round: the image, a first prompt on it, then a new prompt on the cached image. Paired
       (tools/bench_vs_pytorch.sh): one untimed round, "ready", then each round waits for a line on
       stdin and prints its times, so that another program's runs can alternate with ours. */
    for (i = paired ? -1 : 0; i < runs; i++) {
        sam3_timings t;
        double t_img = 0, t_first_prompt = 0;
        if (paired && i >= 0) {
            int ch, got = 0;
            while ((ch = getchar()) != EOF && ch != '\n') got = 1; /* one line, whatever its length, starts a run */
            if (ch == EOF && !got) {
                fprintf(stderr, "sam3 bench: --paired: stdin ended before run %d of %d\n", i + 1, runs);
                goto done;
            }
        }
        if ((rc = sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8)) != SAM3_OK) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            goto done;
        }
        t = sam3_ctx_timings(c);
        t_img = t.vision_trunk + t.vision_neck;
        if (i >= 0) {
            t_pre[i] = t.preprocess;
            t_trunk[i] = t.vision_trunk; /* SAM 1: ViT + neck */
            t_neck[i] = t.vision_neck;
        }
        if (!sam1) {
            char text[64];
            sam3_prompt pr;
            sam3_segmentation seg;
            const int k = (i + 10) % 10;
            memset(&pr, 0, sizeof(pr));
            snprintf(text, sizeof(text), "yellow school bus %d", k); /* a new text each time: same token count */
            pr.text = text;
            t0 = bench_now();
            rc = sam3_segment(c, &pr, NULL, &seg);
            t_first_prompt = bench_now() - t0;
            t = sam3_ctx_timings(c);
            if (i >= 0) {
                t_text[i] = t.text;
                t_det[i] = t.geometry + t.detr_encoder + t.detr_decoder + t.mask_decoder + t.postprocess;
            }
            snprintf(text, sizeof(text), "red car %d", k);
            t0 = bench_now();
            rc = rc < 0 ? rc : sam3_segment(c, &pr, NULL, &seg);
            if (i >= 0) t_new[i] = bench_now() - t0;
            if (rc < 0) {
                fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
                goto done;
            }
            t = sam3_ctx_timings(c);
            if (i >= 0) t_nopost[i] = t.text + t.geometry + t.detr_encoder + t.detr_decoder + t.mask_decoder;
        }
        if (paired) {
            if (i < 0)
                printf("ready\n");
            else if (sam1)
                printf("run %d: image encoder %.1f ms\n", i + 1, t_img);
            else
                printf("run %d: image encoder %.1f ms, first prompt %.1f ms, new prompt %.1f ms, new prompt without post-processing %.1f ms\n",
                       i + 1, t_img, t_first_prompt, t_new[i], t_nopost[i]);
            fflush(stdout);
        }
    }
    {
        /* clicks: the first after the image runs the interactive neck (SAM 3), then one click at a
           new place each run, three candidate masks at the image's size each time */
        sam3_point pt;
        sam3_points_prompt pp;
        sam3_points_result res;
        memset(&pp, 0, sizeof(pp));
        pp.points = &pt;
        pp.n_points = 1;
        pt.x = 0.5f * W, pt.y = 0.5f * H, pt.label = 1;
        t0 = bench_now();
        rc = sam3_segment_points(c, &pp, NULL, &res);
        t_first = bench_now() - t0;
        if (rc == SAM3_ERR_UNSUPPORTED) t_first = -1;
        for (i = 0; i < runs && rc != SAM3_ERR_UNSUPPORTED; i++) {
            if (rc < 0) {
                fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
                goto done;
            }
            pt.x = (float)(W * (0.15 + 0.7 * ((i * 7 + 3) % 11) / 10.0));
            pt.y = (float)(H * (0.15 + 0.7 * ((i * 5 + 1) % 7) / 6.0));
            t0 = bench_now();
            rc = sam3_segment_points(c, &pp, NULL, &res);
            t_click[i] = bench_now() - t0;
        }
        if (rc < 0 && rc != SAM3_ERR_UNSUPPORTED) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            goto done;
        }
    }
    {
        /* same-run sgemm reference: 2048^3, best of 3 */
        int n = 2048, k;
        float *a = (float *)malloc(sizeof(float) * n * n), *b = (float *)malloc(sizeof(float) * n * n), *cc = (float *)malloc(sizeof(float) * n * n);
        if (!a || !b || !cc) {
            fprintf(stderr, "sam3 bench: out of memory\n");
            free(a), free(b), free(cc);
            goto done;
        }
        for (k = 0; k < n * n; k++) a[k] = b[k] = (float)(k % 17) * 0.01f;
        for (k = 0; k < 3; k++) {
            t0 = bench_now();
            sam3__gemm(c, 0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
            sg_ms[k] = bench_now() - t0;
        }
#if defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM) && !defined(SAM3_NO_BLAS)
        /* and OpenBLAS's own threads on the same product: the reference is the faster of the two
           (last, as OpenBLAS's pthread workers keep spinning after it) */
        if (c->split && c->nt > 1) {
            openblas_set_num_threads(c->nt);
            for (k = 0; k < 3; k++) {
                t0 = bench_now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
                sg_ob_ms[k] = bench_now() - t0;
            }
            openblas_set_num_threads(blas_threads > 0 ? blas_threads : 1);
        }
#endif
        free(a); free(b); free(cc);
    }
    gf = sam1 ? sam1_vision_gflop(m) : vision_gflop(m);
    {
        double tl = median(t_load, runs), tp = median(t_pre, runs), tt = median(t_trunk, runs), tn = median(t_neck, runs);
        double sg = 2.0 * 2048.0 * 2048.0 * 2048.0 / 1e9 / (median(sg_ms, 3) / 1000.0), enc = gf / ((tt + tn) / 1000.0);
        double sg_ob = sg_ob_ms[0] > 0 ? 2.0 * 2048.0 * 2048.0 * 2048.0 / 1e9 / (median(sg_ob_ms, 3) / 1000.0) : 0, ref = sg > sg_ob ? sg : sg_ob;
        long rss_kb = peak_rss_kb();
        printf("sam3 bench: %s (%s), image %dx%d, %d run%s, threads %s%d, BLAS threads %d%s\n", path, sam1 ? "SAM 1" : "SAM 3", W, H, runs,
               runs > 1 ? "s (medians)" : "", threads ? "" : "all = ", threads ? threads : c->nt, blas_threads,
               c->split ? " (products split by sam3)" : "");
        bench_line("load (open + validate + map)", tl);
        if (sam1) {
            bench_line("preprocess (resize + normalise + pad)", tp);
            bench_line("image encoder: ViT + neck", tt);
        } else {
            bench_line("preprocess (resize + normalise)", tp);
            bench_line("image encoder: ViT trunk", tt);
            bench_line("image encoder: neck", tn);
            bench_line("text encoder (new prompt)", median(t_text, runs));
            bench_line("detector + masks (one prompt)", median(t_det, runs));
            bench_line("new prompt on the cached image", median(t_new, runs));
            bench_line("  the same without post-processing", median(t_nopost, runs));
        }
        bench_line(sam1 ? "first click" : "first click (runs the interactive neck)", t_first);
        bench_line("click on the cached image", t_first < 0 ? -1 : median(t_click, runs));
        printf("  %-40s %10.1f MB\n", "peak RSS", rss_kb / 1024.0);
        printf("  %-40s %10.1f GFLOP/s (%.4g GFLOP)\n", "image encoder", enc, gf);
        printf("  %-40s %10.1f GFLOP/s\n", "sgemm 2048^3, split over our threads", sg);
        if (sg_ob > 0) printf("  %-40s %10.1f GFLOP/s\n", "sgemm 2048^3, OpenBLAS's threads", sg_ob);
        printf("  %-40s %10.0f %% of the faster sgemm\n", "image encoder reaches", 100.0 * enc / ref);
    }
    rc_cli = CLI_OK;
done:
    sam3_ctx_free(c);
    sam3_free(m);
    free(t_load);
    free(img);
    return rc_cli;
}

/* ================================================================================================
   segment
   ============================================================================================= */

static const char *SEGMENT_HELP =
    "usage: sam3 segment -m FILE -i IMAGE [-t TEXT]... [--box x0,y0,x1,y1[,neg]]... -o OUTDIR [options]\n"
    "\n"
    "Finds every instance of a concept (a text, exemplar boxes, or both) in IMAGE and writes to OUTDIR:\n"
    "  results.json   {\"image\", \"width\", \"height\", \"prompt\", \"boxes\", \"presence\", \"instances\":\n"
    "                 [{\"score\", \"box\": [x0,y0,x1,y1], \"area\", \"query\", \"mask\": \"mask_000.png\"}, ...]}\n"
    "                 instances best score first; boxes in image pixels, not clamped to the image\n"
    "  mask_NNN.png   one 8-bit PNG per instance, the image's size: 255 = object, 0 = background\n"
    "  overlay.png    the image with each instance's mask, box and score in its own colour\n"
    "results.json is written last. With several -t, the image is encoded once and each prompt gets\n"
    "its own directory OUTDIR/NN_SLUG/ with those files (NN = 00, 01, ... in command-line order,\n"
    "SLUG = the text in lower-case letters, digits and '_'). Boxes go with every text; boxes\n"
    "without -t are a visual prompt (\"prompt\": null).\n"
    "\n"
    "  -m, --model FILE            the .sam3 file\n"
    "  -i, --image IMAGE           JPEG, PNG, BMP, TGA, PSD, GIF (first frame), HDR or PNM; grey,\n"
    "                              grey+alpha, RGB or RGBA (alpha is ignored)\n"
    "  -t, --text TEXT             the concept, e.g. \"yellow school bus\"; repeat for several prompts\n"
    "  -b, --box x0,y0,x1,y1[,L]   an exemplar box in image pixels, x0 < x1, y0 < y1; L is pos (the\n"
    "                              default) or neg (also 1 or 0); repeat for several boxes\n"
    "  --threshold T               keep instances scoring above T, 0..1 (default 0.5; 0 keeps all)\n"
    "  --mask-threshold M          mask probability threshold, 0..1 (default 0.5)\n"
    "  -o, --output OUTDIR         output directory, created if missing; our files in it are replaced\n"
    "  --threads N                 threads (default: all cores)\n"
    "  --blas-threads B            BLAS's own threads (default 1: sam3 splits every product over its\n"
    "                              threads, so one thread pool does the work; 0 leaves BLAS as it is)\n"
    "  -q, --quiet                 print nothing on success (errors still go to stderr)\n"
    "\n"
    "Progress and per-stage timings go to stderr. Exit status: 0 done, 1 failed (unreadable model\n"
    "or image, a file that could not be written, ...), 2 bad command line.\n";

#define SEG_MAX_PROMPTS 64

/* The options segment and points share: model, image, output directory, threads, quiet. */
typedef struct common_args {
    const char *model, *image, *outdir;
    int threads, blas_threads, quiet;
} common_args;

typedef struct seg_args {
    common_args c;
    const char *texts[SEG_MAX_PROMPTS]; /* (n_texts) */
    int n_texts;
    sam3_box boxes[SAM3_MAX_BOXES]; /* (n_boxes) */
    int n_boxes;
    float threshold, mask_threshold;
} seg_args;

/* Option with a value: "-x V", "--long V" or "--long=V". Returns 1 and sets *val (moving *i past
   the value) when argv[*i] is this option, 0 when it is not, -1 when its value is missing. */
static int opt_value(int argc, char **argv, int *i, const char *short_name, const char *long_name, const char **val) {
    const char *arg = argv[*i];
    size_t n = strlen(long_name);
    if (!strncmp(arg, long_name, n) && arg[n] == '=') {
        *val = arg + n + 1;
        return 1;
    }
    if (strcmp(arg, long_name) && (!short_name || strcmp(arg, short_name))) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

static int parse_float(const char *s, float *out) {
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || fabs(v) > 1e30) return 0;
    *out = (float)v;
    return 1;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

/* "x0,y0,x1,y1" or "x0,y0,x1,y1,L" with L one of pos, positive, 1, neg, negative, 0. Returns NULL or
   what is wrong. */
static const char *parse_box(const char *s, sam3_box *b) {
    char buf[256], *field[6], *p;
    float v[4];
    int n = 0, k;
    if (strlen(s) >= sizeof(buf)) return "too long";
    strcpy(buf, s);
    field[n++] = buf;
    for (p = buf; *p; p++)
        if (*p == ',') {
            *p = 0;
            if (n == 6) return "expected x0,y0,x1,y1[,pos|neg]";
            field[n++] = p + 1;
        }
    if (n != 4 && n != 5) return "expected x0,y0,x1,y1[,pos|neg]";
    for (k = 0; k < 4; k++)
        if (!parse_float(field[k], &v[k])) return "coordinates must be numbers: x0,y0,x1,y1[,pos|neg]";
    b->x0 = v[0], b->y0 = v[1], b->x1 = v[2], b->y1 = v[3];
    b->label = 1;
    if (n == 5) {
        if (!strcmp(field[4], "pos") || !strcmp(field[4], "positive") || !strcmp(field[4], "1")) b->label = 1;
        else if (!strcmp(field[4], "neg") || !strcmp(field[4], "negative") || !strcmp(field[4], "0")) b->label = 0;
        else return "the label must be pos or neg (or 1 or 0)";
    }
    if (!(b->x0 < b->x1) || !(b->y0 < b->y1)) return "needs x0 < x1 and y0 < y1";
    return NULL;
}

/* Takes argv[*i] when it is a shared option: returns 1 (moving *i past its value), 0 when it is
   not one, CLI_USAGE after printing what is wrong with it. */
static int parse_common_arg(const char *cmd, int argc, char **argv, int *i, common_args *ca) {
    const char *opt = argv[*i], *v = NULL;
    int r;
    if (!strcmp(opt, "--quiet") || !strcmp(opt, "-q")) {
        ca->quiet = 1;
        return 1;
    }
    if ((r = opt_value(argc, argv, i, "-m", "--model", &v)) > 0) {
        ca->model = v;
    } else if (r == 0 && (r = opt_value(argc, argv, i, "-i", "--image", &v)) > 0) {
        ca->image = v;
    } else if (r == 0 && (r = opt_value(argc, argv, i, "-o", "--output", &v)) > 0) {
        ca->outdir = v;
    } else if (r == 0 && (r = opt_value(argc, argv, i, NULL, "--threads", &v)) > 0) {
        if (!parse_int(v, 1, 4096, &ca->threads)) r = usage_error(cmd, "--threads wants a number >= 1, got '%s'", v);
    } else if (r == 0 && (r = opt_value(argc, argv, i, NULL, "--blas-threads", &v)) > 0) {
        if (!parse_int(v, 0, 4096, &ca->blas_threads)) r = usage_error(cmd, "--blas-threads wants a number >= 0, got '%s'", v);
    }
    if (r < 0) r = usage_error(cmd, "option '%s' needs a value", opt);
    return r > 1 ? -1 : r;
}

/* After the options: what every command needs. CLI_OK or CLI_USAGE (printed). */
static int check_common_args(const char *cmd, const common_args *ca) {
    if (!ca->model) return usage_error(cmd, "missing -m FILE (the .sam3 model)%s", NULL);
    if (!ca->image) return usage_error(cmd, "missing -i IMAGE%s", NULL);
    if (!ca->outdir || !ca->outdir[0]) return usage_error(cmd, "missing -o OUTDIR%s", NULL);
    return CLI_OK;
}

/* Returns CLI_OK with the arguments in *a, CLI_OK with *help set after printing the help, or
   CLI_USAGE after printing what is wrong. */
static int parse_segment_args(int argc, char **argv, seg_args *a, int *help) {
    int i, r;
    const char *v;
    memset(a, 0, sizeof(*a));
    a->threshold = 0.5f;
    a->mask_threshold = 0.5f;
    a->c.blas_threads = 1;
    *help = 0;
    for (i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(SEGMENT_HELP, stdout);
            *help = 1;
            return CLI_OK;
        }
        if ((r = parse_common_arg("segment", argc, argv, &i, &a->c)) != 0) {
            if (r < 0) return CLI_USAGE;
            continue;
        }
        v = NULL;
        if ((r = opt_value(argc, argv, &i, "-t", "--text", &v)) > 0) {
            if (a->n_texts == SEG_MAX_PROMPTS) return usage_error("segment", "too many -t prompts (at most 64)%s", NULL);
            a->texts[a->n_texts++] = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, "-b", "--box", &v)) > 0) {
            const char *why;
            if (a->n_boxes == SAM3_MAX_BOXES) return usage_error("segment", "too many boxes%s", NULL);
            if ((why = parse_box(v, &a->boxes[a->n_boxes])) != NULL) {
                fprintf(stderr, "sam3 segment: bad box '%s': %s (try 'sam3 segment --help')\n", v, why);
                return CLI_USAGE;
            }
            a->n_boxes++;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--threshold", &v)) > 0) {
            if (!parse_float(v, &a->threshold) || a->threshold < 0 || a->threshold > 1)
                return usage_error("segment", "--threshold wants a number from 0 to 1, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask-threshold", &v)) > 0) {
            if (!parse_float(v, &a->mask_threshold) || a->mask_threshold < 0 || a->mask_threshold > 1)
                return usage_error("segment", "--mask-threshold wants a number from 0 to 1, got '%s'", v);
        } else if (r < 0) {
            return usage_error("segment", "option '%s' needs a value", opt);
        } else {
            return usage_error("segment", opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
        }
    }
    if (check_common_args("segment", &a->c) != CLI_OK) return CLI_USAGE;
    if (!a->n_texts && !a->n_boxes) return usage_error("segment", "nothing to look for: give -t TEXT and/or --box%s", NULL);
    for (i = 0; i < a->n_texts; i++)
        if (!a->texts[i][0] && !a->n_boxes) return usage_error("segment", "empty -t TEXT (give a text or a --box)%s", NULL);
    return CLI_OK;
}

/* ---- small helpers: messages, timings, files ---- */

static const char *cli_cmd = "segment"; /* the running command, for cli_error */

/* One line on stderr: "sam3 COMMAND: ...". */
static void cli_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "sam3 %s: ", cli_cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* "850 ms" or "31.2 s"; eight rotating buffers, so one printf can show up to eight. */
static const char *fmt_ms(double ms) {
    static char buf[8][32];
    static int next;
    char *b = buf[next++ & 7];
    if (ms < 10000) snprintf(b, 32, "%.0f ms", ms);
    else snprintf(b, 32, "%.1f s", ms / 1000);
    return b;
}

/* mkdir -p. 0 on success, else -1 with errno set. */
static int make_dirs(const char *path) {
    char buf[4096];
    size_t i, n = strlen(path);
    struct stat st;
    if (n == 0 || n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        char c = buf[i];
        if (c != '/' && c != '\\' && c != 0) continue;
        buf[i] = 0;
        if (cli_mkdir(buf) != 0 && errno != EEXIST) return -1;
        buf[i] = c;
    }
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Writes n bytes to path. 0 on success; else -1 with errno set, and no file is left behind. */
static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok, err;
    if (!f) return -1;
    ok = fwrite(data, 1, n, f) == n;
    err = errno;
    if (fclose(f) != 0 && ok) ok = 0, err = errno;
    if (!ok) {
        remove(path);
        errno = err ? err : EIO;
        return -1;
    }
    return 0;
}

static int write_png(const char *path, const unsigned char *pixels, int w, int h, int channels) {
    int len = 0, rc;
    unsigned char *png = stbi_write_png_to_mem(pixels, w * channels, w, h, channels, &len);
    if (!png) {
        errno = ENOMEM;
        return -1;
    }
    rc = write_file(path, png, (size_t)len);
    STBIW_FREE(png);
    return rc;
}

/* A growing text buffer for results.json. */
typedef struct text_buf {
    char *p;
    size_t len, cap;
    int oom;
} text_buf;

static void tb_printf(text_buf *b, const char *fmt, ...) {
    va_list ap;
    int n;
    if (b->oom) return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < room) break;
        {
            size_t cap = (b->cap + (size_t)n + 1) * 2;
            char *p = (char *)realloc(b->p, cap);
            if (!p) {
                b->oom = 1;
                return;
            }
            b->p = p;
            b->cap = cap;
        }
    }
    b->len += (size_t)n;
}

/* A JSON string literal in pure ASCII: UTF-8 becomes \uXXXX (surrogate pairs above U+FFFF),
   invalid UTF-8 bytes become U+FFFD, control characters are escaped. */
static void tb_json_string(text_buf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    tb_printf(b, "\"");
    while (*p) {
        unsigned long cp = *p;
        int extra = 0, k;
        if (cp < 0x80) {
            if (cp == '"' || cp == '\\') tb_printf(b, "\\%c", (int)cp);
            else if (cp == '\n') tb_printf(b, "\\n");
            else if (cp == '\t') tb_printf(b, "\\t");
            else if (cp == '\r') tb_printf(b, "\\r");
            else if (cp < 0x20 || cp == 0x7f) tb_printf(b, "\\u%04lx", cp);
            else tb_printf(b, "%c", (int)cp);
            p++;
            continue;
        }
        if (cp >= 0xc2 && cp <= 0xdf) extra = 1, cp &= 0x1f;
        else if (cp >= 0xe0 && cp <= 0xef) extra = 2, cp &= 0x0f;
        else if (cp >= 0xf0 && cp <= 0xf4) extra = 3, cp &= 0x07;
        for (k = 1; k <= extra; k++) {
            if ((p[k] & 0xc0) != 0x80) break;
            cp = (cp << 6) | (p[k] & 0x3f);
        }
        if (!extra || k <= extra || (extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            tb_printf(b, "\\ufffd"); /* one replacement per bad byte */
            p++;
            continue;
        }
        if (cp >= 0x10000) tb_printf(b, "\\u%04lx\\u%04lx", 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
        else tb_printf(b, "\\u%04lx", cp);
        p += extra + 1;
    }
    tb_printf(b, "\"");
}

static void tb_json_number(text_buf *b, double v) {
    if (isfinite(v)) tb_printf(b, "%.6g", v);
    else tb_printf(b, "null");
}

/* ---- the overlay ---- */

static const unsigned char PALETTE[12][3] = {{230, 25, 75},  {60, 180, 75},   {255, 225, 25}, {0, 130, 200},
                                             {245, 130, 48}, {145, 30, 180},  {70, 240, 240}, {240, 50, 230},
                                             {210, 245, 60}, {250, 190, 212}, {0, 128, 128},  {170, 110, 40}};

/* Fills [x0,x1) x [y0,y1), clipped to the image. */
static void fill_rect(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, const unsigned char *col) {
    int x, y;
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1, y1 = y1 > h ? h : y1;
    for (y = y0; y < y1; y++)
        for (x = x0; x < x1; x++) memcpy(rgb + 3 * ((size_t)y * w + x), col, 3);
}

/* stb_easy_font text at (x, y), each font pixel drawn as scale x scale; returns its size. When
   draw is 0, only measures. */
static void draw_text(unsigned char *rgb, int w, int h, int x, int y, int scale, const char *text, const unsigned char *col,
                      int draw, int *tw, int *th) {
    float vb[4096]; /* quads of 4 vertices: x, y, z, colour (16 bytes each) */
    char str[64];
    int q, nq;
    snprintf(str, sizeof(str), "%s", text);
    nq = stb_easy_font_print(0, 0, str, NULL, vb, (int)sizeof(vb));
    *tw = *th = 0;
    for (q = 0; q < nq; q++) {
        const float *v0 = vb + 16 * q, *v2 = vb + 16 * q + 8; /* opposite corners */
        int x0 = (int)v0[0], y0 = (int)v0[1], x1 = (int)v2[0], y1 = (int)v2[1];
        if (x1 > *tw) *tw = x1;
        if (y1 > *th) *th = y1;
        if (draw) fill_rect(rgb, w, h, x + x0 * scale, y + y0 * scale, x + x1 * scale, y + y1 * scale, col);
    }
    *tw *= scale;
    *th *= scale;
}

static int clamp_int(double v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* Each instance's mask tinted in its colour with a solid outline, then its box and score label. */
/* A mask (w*h bytes, non-zero = set) tinted half-way to col, with a solid one-pixel outline. */
static void tint_mask(unsigned char *rgb, int w, int h, const uint8_t *m, const unsigned char *col) {
    int x, y;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            unsigned char *p = rgb + 3 * i;
            int c, edge;
            if (!m[i]) continue;
            edge = (x > 0 && !m[i - 1]) || (x + 1 < w && !m[i + 1]) || (y > 0 && !m[i - w]) || (y + 1 < h && !m[i + w]);
            for (c = 0; c < 3; c++) p[c] = edge ? col[c] : (unsigned char)((p[c] + col[c] + 1) / 2);
        }
}

/* Line width of the overlay's drawings: 1 pixel per 300 of the shorter side, at least 1. */
static int line_scale(int w, int h) {
    int s = (w < h ? w : h) / 300;
    return s < 1 ? 1 : s;
}

/* The outline of the pixels x0..x1, y0..y1 (inclusive, inside the image), s pixels wide, inwards. */
static void draw_box(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, int s, const unsigned char *col) {
    fill_rect(rgb, w, h, x0, y0, x1 + 1, y0 + s, col);
    fill_rect(rgb, w, h, x0, y1 + 1 - s, x1 + 1, y1 + 1, col);
    fill_rect(rgb, w, h, x0, y0, x0 + s, y1 + 1, col);
    fill_rect(rgb, w, h, x1 + 1 - s, y0, x1 + 1, y1 + 1, col);
}

static void draw_overlay(unsigned char *rgb, int w, int h, const sam3_segmentation *seg, const int *order) {
    int k, s = line_scale(w, h);
    for (k = 0; k < seg->n; k++)
        if (seg->instances[order[k]].mask) tint_mask(rgb, w, h, seg->instances[order[k]].mask, PALETTE[k % 12]);
    for (k = 0; k < seg->n; k++) {
        const sam3_instance *in = &seg->instances[order[k]];
        const unsigned char *col = PALETTE[k % 12];
        const unsigned char black[3] = {0, 0, 0}, white[3] = {255, 255, 255};
        int x0, y0, x1, y1, tw, th, lw, lh, lx, ly;
        char label[32];
        if (!isfinite(in->box[0]) || !isfinite(in->box[1]) || !isfinite(in->box[2]) || !isfinite(in->box[3])) continue;
        x0 = clamp_int(floor(in->box[0]), 0, w - 1), y0 = clamp_int(floor(in->box[1]), 0, h - 1);
        x1 = clamp_int(floor(in->box[2]), 0, w - 1), y1 = clamp_int(floor(in->box[3]), 0, h - 1);
        draw_box(rgb, w, h, x0, y0, x1, y1, s, col);
        snprintf(label, sizeof(label), "%.2f", in->score);
        draw_text(rgb, w, h, 0, 0, s, label, col, 0, &tw, &th);
        lw = tw + 3 * s, lh = th + 2 * s; /* label: the text with a margin, above the box if it fits */
        lx = x0 + lw > w ? (w - lw > 0 ? w - lw : 0) : x0;
        ly = y0 - lh >= 0 ? y0 - lh : y0;
        fill_rect(rgb, w, h, lx, ly, lx + lw, ly + lh, col);
        draw_text(rgb, w, h, lx + 2 * s, ly + s, s, label, 3 * col[1] + 2 * col[0] + col[2] > 900 ? black : white, 1, &tw, &th);
    }
}

/* ---- reading the image ---- */

typedef struct cli_image {
    unsigned char *pixels; /* (h, w, channels) as stb_image gives them, grey+alpha reduced to grey */
    int w, h, channels;    /* channels 1, 3 or 4 */
    sam3_pixel_format format;
} cli_image;

static int read_image(const char *path, cli_image *img) {
    FILE *f = fopen(path, "rb");
    int n = 0;
    if (!f) {
        cli_error("cannot open image '%s': %s", path, strerror(errno));
        return CLI_FAIL;
    }
    img->pixels = stbi_load_from_file(f, &img->w, &img->h, &n, 0);
    fclose(f);
    if (!img->pixels) {
        cli_error("cannot read image '%s': corrupt, truncated or not a supported format (stb_image: %s)", path,
                  stbi_failure_reason() ? stbi_failure_reason() : "?");
        return CLI_FAIL;
    }
    if (n == 2) { /* grey + alpha: keep the grey */
        size_t i, np = (size_t)img->w * img->h;
        for (i = 0; i < np; i++) img->pixels[i] = img->pixels[2 * i];
        n = 1;
    }
    img->channels = n;
    img->format = n == 1 ? SAM3_GRAY8 : n == 3 ? SAM3_RGB8 : SAM3_RGBA8;
    return CLI_OK;
}

/* ---- progress on stderr ---- */

typedef struct cli_progress {
    int tty;        /* stderr is a terminal: one status line, rewritten */
    double t_start; /* the image encoder started */
    double t_last;  /* last line printed (not a terminal: at most one every 5 s) */
    int width;      /* characters of the status line now on the terminal */
} cli_progress;

static void on_progress(void *user, const char *stage, int step, int n_steps) {
    cli_progress *p = (cli_progress *)user;
    double now = sam3__now_ms();
    char line[200];
    int n;
    if (!p->tty && now - p->t_last < 5000) return;
    p->t_last = now;
    n = snprintf(line, sizeof(line), "sam3: image encoder: %s %d/%d, %.1f s", stage, step + 1, n_steps, (now - p->t_start) / 1000);
    if (p->tty) {
        fprintf(stderr, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
        p->width = n;
    } else {
        fprintf(stderr, "%s\n", line);
    }
}

static void progress_clear(cli_progress *p) {
    if (p->tty && p->width) fprintf(stderr, "\r%*s\r", p->width, "");
    p->width = 0;
}

/* ---- one prompt's output ---- */

typedef struct by_score {
    float score;
    int index;
} by_score;

static int cmp_by_score(const void *a, const void *b) {
    const by_score *x = (const by_score *)a, *y = (const by_score *)b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->index - y->index;
}

/* "Yellow school-bus!" -> "yellow_school_bus"; "boxes" when nothing is left. */
static void make_slug(const char *text, char *out, size_t cap) {
    size_t n = 0;
    int gap = 0;
    for (; text && *text && n + 2 < cap && n < 40; text++) {
        char c = *text;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (gap && n) out[n++] = '_';
            out[n++] = c;
            gap = 0;
        } else {
            gap = 1;
        }
    }
    out[n] = 0;
    if (!n) snprintf(out, cap, "%s", text && *text ? "prompt" : "boxes");
}

static int join_path(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        cli_error("path too long: '%s/%s'", dir, name);
        return 0;
    }
    return 1;
}

/* Writes mask_NNN.png, overlay.png and then results.json into dir. overlay: w*h*3 scratch. */
static int write_outputs(const char *dir, const seg_args *a, const char *text, const cli_image *img, const unsigned char *rgb,
                         unsigned char *overlay, const sam3_segmentation *seg) {
    char path[4096], name[64];
    int k, rc = CLI_FAIL;
    size_t i, np = (size_t)img->w * img->h;
    unsigned char *png = (unsigned char *)malloc(np);
    by_score *order = (by_score *)malloc(sizeof(by_score) * (size_t)(seg->n + 1));
    int *idx = (int *)malloc(sizeof(int) * (size_t)(seg->n + 1));
    text_buf js;
    memset(&js, 0, sizeof(js));
    if (!png || !order || !idx) {
        cli_error("out of memory");
        goto done;
    }
    for (k = 0; k < seg->n; k++) order[k].score = seg->instances[k].score, order[k].index = k;
    qsort(order, (size_t)seg->n, sizeof(by_score), cmp_by_score);
    for (k = 0; k < seg->n; k++) idx[k] = order[k].index;

    for (k = 0; k < seg->n; k++) {
        const uint8_t *m = seg->instances[idx[k]].mask;
        for (i = 0; i < np; i++) png[i] = m[i] ? 255 : 0;
        snprintf(name, sizeof(name), "mask_%03d.png", k);
        if (!join_path(path, sizeof(path), dir, name)) goto done;
        if (write_png(path, png, img->w, img->h, 1) != 0) {
            cli_error("cannot write '%s': %s", path, strerror(errno));
            goto done;
        }
    }
    for (k = seg->n;; k++) { /* masks left over from an earlier run with more instances */
        snprintf(name, sizeof(name), "mask_%03d.png", k);
        if (!join_path(path, sizeof(path), dir, name) || remove(path) != 0) break;
    }

    memcpy(overlay, rgb, np * 3);
    draw_overlay(overlay, img->w, img->h, seg, idx);
    if (!join_path(path, sizeof(path), dir, "overlay.png")) goto done;
    if (write_png(path, overlay, img->w, img->h, 3) != 0) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        goto done;
    }

    tb_printf(&js, "{\n  \"image\": ");
    tb_json_string(&js, a->c.image);
    tb_printf(&js, ",\n  \"width\": %d,\n  \"height\": %d,\n  \"prompt\": ", img->w, img->h);
    if (text) tb_json_string(&js, text);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"boxes\": [");
    for (k = 0; k < a->n_boxes; k++) {
        const sam3_box *b = &a->boxes[k];
        tb_printf(&js, "%s{\"box\": [", k ? ", " : "");
        tb_json_number(&js, b->x0), tb_printf(&js, ", "), tb_json_number(&js, b->y0), tb_printf(&js, ", ");
        tb_json_number(&js, b->x1), tb_printf(&js, ", "), tb_json_number(&js, b->y1);
        tb_printf(&js, "], \"label\": \"%s\"}", b->label ? "pos" : "neg");
    }
    tb_printf(&js, "],\n  \"threshold\": ");
    tb_json_number(&js, a->threshold);
    tb_printf(&js, ",\n  \"mask_threshold\": ");
    tb_json_number(&js, a->mask_threshold);
    tb_printf(&js, ",\n  \"presence\": ");
    tb_json_number(&js, seg->presence);
    tb_printf(&js, ",\n  \"instances\": [");
    for (k = 0; k < seg->n; k++) {
        const sam3_instance *in = &seg->instances[idx[k]];
        int c;
        tb_printf(&js, "%s\n    {\"score\": ", k ? "," : "");
        tb_json_number(&js, in->score);
        tb_printf(&js, ", \"box\": [");
        for (c = 0; c < 4; c++) {
            if (c) tb_printf(&js, ", ");
            tb_json_number(&js, in->box[c]);
        }
        tb_printf(&js, "], \"area\": %lld, \"query\": %d, \"mask\": \"mask_%03d.png\"}", (long long)in->area, in->query, k);
    }
    tb_printf(&js, "%s]\n}\n", seg->n ? "\n  " : "");
    if (js.oom) {
        cli_error("out of memory");
        goto done;
    }
    if (!join_path(path, sizeof(path), dir, "results.json")) goto done;
    if (write_file(path, js.p, js.len) != 0) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        goto done;
    }
    rc = CLI_OK;
done:
    free(js.p);
    free(png);
    free(order);
    free(idx);
    return rc;
}

/* ---- the command ---- */

static void print_prompt_name(FILE *f, const char *text, int n_boxes) {
    if (text && text[0]) fprintf(f, "\"%s\"%s", text, n_boxes ? " + " : "");
    if (n_boxes) fprintf(f, "%d box%s", n_boxes, n_boxes > 1 ? "es" : "");
}

/* What segment and points share: the model, the image (as read and as RGB for the overlay), a
   context holding the encoded image, and the progress state. */
typedef struct cli_session {
    sam3_model *model;
    sam3_ctx *ctx;
    cli_image img;
    unsigned char *rgb;     /* (h, w, 3) the image as RGB */
    unsigned char *overlay; /* (h, w, 3) scratch for overlay.png */
    cli_progress prog;
    int quiet;
} cli_session;

static void session_free(cli_session *s) {
    sam3_ctx_free(s->ctx);
    sam3_free(s->model);
    stbi_image_free(s->img.pixels);
    free(s->rgb);
    free(s->overlay);
    memset(s, 0, sizeof(*s));
}

/* Creates outdir and loads the model (CLI_OK or CLI_FAIL after one line on stderr). */
static int session_load(cli_session *s, const char *outdir, const char *model, int quiet) {
    double t0;
    memset(s, 0, sizeof(*s));
    s->quiet = quiet;
    if (make_dirs(outdir) != 0) {
        cli_error("cannot create output directory '%s': %s", outdir, strerror(errno));
        return CLI_FAIL;
    }
    t0 = sam3__now_ms();
    if (!load_model(cli_cmd, model, quiet, &s->model)) return CLI_FAIL;
    if (!quiet) fprintf(stderr, "sam3: model %s (%.1f MB) loaded in %s\n", model, sam3_model_file_size(s->model) / 1e6, fmt_ms(sam3__now_ms() - t0));
    return CLI_OK;
}

/* Makes the context (if not yet made) and runs the image encoder on the image file. */
static int session_encode(cli_session *s, const char *image, int threads, int blas_threads) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_result r;
    double t0 = sam3__now_ms();
    size_t i, np;
    int c, n;
    if (read_image(image, &s->img) != CLI_OK) return CLI_FAIL;
    np = (size_t)s->img.w * s->img.h;
    s->rgb = (unsigned char *)malloc(np * 3);
    s->overlay = (unsigned char *)malloc(np * 3);
    if (!s->rgb || !s->overlay) {
        cli_error("out of memory for a %dx%d image", s->img.w, s->img.h);
        return CLI_FAIL;
    }
    n = s->img.channels;
    for (i = 0; i < np; i++)
        for (c = 0; c < 3; c++) s->rgb[3 * i + c] = s->img.pixels[n * i + (n == 1 ? 0 : c)];
    if (!s->quiet)
        fprintf(stderr, "sam3: image %s: %dx%d, %s, read in %s\n", image, s->img.w, s->img.h,
                n == 1 ? "grey" : n == 3 ? "RGB" : "RGBA", fmt_ms(sam3__now_ms() - t0));
    co.n_threads = threads;
    co.blas_threads = blas_threads;
    if (!s->quiet) {
        co.progress_fn = on_progress;
        co.progress_user = &s->prog;
        s->prog.tty = cli_isatty(stderr);
    }
    if (!s->ctx && (r = sam3_ctx_new(s->model, &co, &s->ctx)) != SAM3_OK) {
        cli_error("cannot create a context: %s", sam3_result_string(r));
        return CLI_FAIL;
    }
    s->prog.t_start = s->prog.t_last = sam3__now_ms();
    r = sam3_set_image(s->ctx, s->img.pixels, s->img.w, s->img.h, s->img.w * n, s->img.format);
    progress_clear(&s->prog);
    if (r != SAM3_OK) {
        cli_error("image encoder failed on '%s': %s", image, sam3_ctx_last_error(s->ctx));
        return CLI_FAIL;
    }
    if (!s->quiet) {
        sam3_timings t = sam3_ctx_timings(s->ctx);
        if (model_is_sam1(s->model)) /* SAM 1's neck runs inside the trunk's timing */
            fprintf(stderr, "sam3: image encoder: %s (resize %s, ViT + neck %s)\n", fmt_ms(t.preprocess + t.vision_trunk),
                    fmt_ms(t.preprocess), fmt_ms(t.vision_trunk));
        else
            fprintf(stderr, "sam3: image encoder: %s (resize %s, ViT trunk %s, neck %s)\n", fmt_ms(t.preprocess + t.vision_trunk + t.vision_neck),
                    fmt_ms(t.preprocess), fmt_ms(t.vision_trunk), fmt_ms(t.vision_neck));
    }
    return CLI_OK;
}

static int run_segment(const seg_args *a) {
    sam3_segment_options so = sam3_segment_options_default();
    cli_session ss;
    sam3_ctx *ctx;
    const cli_image *im;
    int rc = CLI_FAIL, k, n_prompts = a->n_texts ? a->n_texts : 1;
    double t0;
    sam3_result r;

    cli_cmd = "segment";
    if (session_load(&ss, a->c.outdir, a->c.model, a->c.quiet) != CLI_OK) goto done;
    if (model_is_sam1(ss.model)) {
        cli_error("'%s' is a SAM 1 model, which has no text or exemplar-box head: use 'sam3 points' (clicks, a box)", a->c.model);
        goto done;
    }
    if (session_encode(&ss, a->c.image, a->c.threads, a->c.blas_threads) != CLI_OK) goto done;
    ctx = ss.ctx;
    im = &ss.img;

    /* The library reads a threshold of 0 as "default"; every probability is above -1. */
    so.score_threshold = a->threshold > 0 ? a->threshold : -1.0f;
    so.mask_threshold = a->mask_threshold > 0 ? a->mask_threshold : -1.0f;
    for (k = 0; k < n_prompts; k++) {
        const char *text = a->n_texts ? a->texts[k] : NULL;
        sam3_prompt pr;
        sam3_segmentation seg;
        char dir[4096], slug[64];
        memset(&pr, 0, sizeof(pr));
        pr.text = text;
        pr.boxes = a->n_boxes ? a->boxes : NULL;
        pr.n_boxes = a->n_boxes;
        t0 = sam3__now_ms();
        r = sam3_segment(ctx, &pr, &so, &seg);
        if (r < 0) {
            fprintf(stderr, "sam3 segment: prompt ");
            print_prompt_name(stderr, text, a->n_boxes);
            fprintf(stderr, " failed: %s\n", sam3_ctx_last_error(ctx));
            goto done;
        }
        if (!a->c.quiet) {
            sam3_timings t = sam3_ctx_timings(ctx);
            fprintf(stderr, "sam3: ");
            print_prompt_name(stderr, text, a->n_boxes);
            fprintf(stderr, ": %d instance%s (presence %.2f) in %s (text %s, boxes %s, DETR encoder %s, decoder %s, masks %s, post %s)\n",
                    seg.n, seg.n == 1 ? "" : "s", seg.presence, fmt_ms(sam3__now_ms() - t0), fmt_ms(t.text), fmt_ms(t.geometry),
                    fmt_ms(t.detr_encoder), fmt_ms(t.detr_decoder), fmt_ms(t.mask_decoder), fmt_ms(t.postprocess));
            if (r == SAM3_TRUNCATED) fprintf(stderr, "sam3: note: the text was cut to the model's %d tokens\n", seg.n_text_tokens);
        }
        if (n_prompts == 1) {
            snprintf(dir, sizeof(dir), "%s", a->c.outdir);
        } else {
            int n;
            make_slug(text, slug, sizeof(slug));
            n = snprintf(dir, sizeof(dir), "%s/%02d_%s", a->c.outdir, k, slug);
            if (n < 0 || (size_t)n >= sizeof(dir)) {
                cli_error("output path too long under '%s'", a->c.outdir);
                goto done;
            }
            if (make_dirs(dir) != 0) {
                cli_error("cannot create output directory '%s': %s", dir, strerror(errno));
                goto done;
            }
        }
        t0 = sam3__now_ms();
        if (write_outputs(dir, a, text, im, ss.rgb, ss.overlay, &seg) != CLI_OK) goto done;
        if (!a->c.quiet)
            fprintf(stderr, "sam3: wrote %s/: results.json, %d mask%s, overlay.png in %s\n", dir, seg.n, seg.n == 1 ? "" : "s",
                    fmt_ms(sam3__now_ms() - t0));
    }
    rc = CLI_OK;
done:
    session_free(&ss);
    return rc;
}

static int cmd_segment(int argc, char **argv) {
    seg_args a;
    int help, rc = parse_segment_args(argc, argv, &a, &help);
    if (rc != CLI_OK || help) return rc;
    return run_segment(&a);
}

/* ================================================================================================
   points
   ============================================================================================= */

static const char *POINTS_HELP =
    "usage: sam3 points -m FILE -i IMAGE [--point x,y[,neg]]... [--box x0,y0,x1,y1] [--mask PNG] -o OUTDIR [options]\n"
    "\n"
    "Segments the one object that clicks, a box and/or a rough mask point at, with the model's\n"
    "interactive head (SAM 3 files that carry it, and SAM 1 files), and writes to OUTDIR:\n"
    "  results.json   {\"image\", \"width\", \"height\", \"points\": [[x, y, label], ...], \"box\": [x0, y0,\n"
    "                 x1, y1] or null, \"mask_prompt\": the --mask file or null, \"object_score\": a logit,\n"
    "                 > 0 when the model sees an object (null for SAM 1, which has no such head),\n"
    "                 \"best\": the index of the mask with the highest predicted IoU, \"masks\":\n"
    "                 [{\"iou\", \"area\", \"mask\": \"mask_000.png\"}, ...]}; labels 1 = object, 0 = background\n"
    "  mask_NNN.png   one 8-bit PNG per mask, the image's size: 255 = object, 0 = background\n"
    "  overlay.png    the image with the best mask, the box (yellow) and the clicks (green: object,\n"
    "                 red: background; white rim)\n"
    "results.json is written last. By default the model gives 3 candidate masks (an ambiguous click\n"
    "may mean a part, the object or a group), in the model's order; --single asks for one.\n"
    "\n"
    "  -m, --model FILE            the .sam3 file\n"
    "  -i, --image IMAGE           JPEG, PNG, BMP, TGA, PSD, GIF (first frame), HDR or PNM; grey,\n"
    "                              grey+alpha, RGB or RGBA (alpha is ignored)\n"
    "  -p, --point x,y[,L]         a click in image pixels; L is pos (on the object, the default) or neg\n"
    "                              (background), also 1 or 0; repeat for several clicks (at most 64)\n"
    "  -b, --box x0,y0,x1,y1       a box around the object in image pixels, x0 < x1, y0 < y1 (one)\n"
    "  --mask PNG                  a rough mask to refine, e.g. an earlier mask_NNN.png: any image\n"
    "                              stb_image reads, taken as grey; pixels above 127 become logit +8\n"
    "                              (object), the others -8. A SAM 3 model takes any size (resized); a\n"
    "                              SAM 1 model only its low-resolution mask size (256x256 at 1024 input)\n"
    "  --single                    one mask (the reference's choice) instead of the candidates\n"
    "  --mask-threshold T          logit above which a pixel is the object (default 0: probability 0.5)\n"
    "  -o, --output OUTDIR         output directory, created if missing; our files in it are replaced\n"
    "  --threads N                 threads (default: all cores)\n"
    "  --blas-threads B            BLAS's own threads (default 1; 0 leaves BLAS as it is)\n"
    "  -q, --quiet                 print nothing on success (errors still go to stderr)\n"
    "\n"
    "Give at least one --point, --box or --mask. Progress and timings go to stderr. Exit status:\n"
    "0 done, 1 failed (unreadable model, image or mask, a model without an interactive head, a file\n"
    "that could not be written, ...), 2 bad command line.\n";

typedef struct pts_args {
    common_args c;
    const char *mask;
    sam3_point points[SAM3_MAX_POINTS]; /* (n_points) */
    int n_points;
    int has_box;
    float box[4]; /* x0, y0, x1, y1 */
    int single;
    float mask_threshold;
} pts_args;

/* "x,y" or "x,y,L" with L one of pos, positive, 1, neg, negative, 0. Returns NULL or what is wrong. */
static const char *parse_point(const char *s, sam3_point *pt) {
    char buf[256], *field[3], *p;
    int n = 0;
    if (strlen(s) >= sizeof(buf)) return "too long";
    strcpy(buf, s);
    field[n++] = buf;
    for (p = buf; *p; p++)
        if (*p == ',') {
            *p = 0;
            if (n == 3) return "expected x,y[,pos|neg]";
            field[n++] = p + 1;
        }
    if (n < 2) return "expected x,y[,pos|neg]";
    if (!parse_float(field[0], &pt->x) || !parse_float(field[1], &pt->y)) return "coordinates must be numbers: x,y[,pos|neg]";
    pt->label = 1;
    if (n == 3) {
        if (!strcmp(field[2], "pos") || !strcmp(field[2], "positive") || !strcmp(field[2], "1")) pt->label = 1;
        else if (!strcmp(field[2], "neg") || !strcmp(field[2], "negative") || !strcmp(field[2], "0")) pt->label = 0;
        else return "the label must be pos or neg (or 1 or 0)";
    }
    return NULL;
}

static int parse_points_args(int argc, char **argv, pts_args *a, int *help) {
    int i, r;
    const char *v, *why;
    memset(a, 0, sizeof(*a));
    a->c.blas_threads = 1;
    *help = 0;
    for (i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(POINTS_HELP, stdout);
            *help = 1;
            return CLI_OK;
        }
        if ((r = parse_common_arg("points", argc, argv, &i, &a->c)) != 0) {
            if (r < 0) return CLI_USAGE;
            continue;
        }
        if (!strcmp(opt, "--single")) {
            a->single = 1;
            continue;
        }
        v = NULL;
        if ((r = opt_value(argc, argv, &i, "-p", "--point", &v)) > 0) {
            if (a->n_points == SAM3_MAX_POINTS) return usage_error("points", "too many --point clicks (at most 64)%s", NULL);
            if ((why = parse_point(v, &a->points[a->n_points])) != NULL) {
                fprintf(stderr, "sam3 points: bad point '%s': %s (try 'sam3 points --help')\n", v, why);
                return CLI_USAGE;
            }
            a->n_points++;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, "-b", "--box", &v)) > 0) {
            sam3_box b;
            const char *c;
            int commas = 0;
            if (a->has_box) return usage_error("points", "only one --box: the interactive head takes one box per object%s", NULL);
            for (c = v; *c; c++) commas += *c == ',';
            why = commas == 4 ? "expected x0,y0,x1,y1 (a box prompt has no label)" : parse_box(v, &b);
            if (why) {
                fprintf(stderr, "sam3 points: bad box '%s': %s (try 'sam3 points --help')\n", v, why);
                return CLI_USAGE;
            }
            a->box[0] = b.x0, a->box[1] = b.y0, a->box[2] = b.x1, a->box[3] = b.y1;
            a->has_box = 1;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask", &v)) > 0) {
            if (a->mask) return usage_error("points", "only one --mask%s", NULL);
            if (!v[0]) return usage_error("points", "--mask needs a file name%s", NULL);
            a->mask = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask-threshold", &v)) > 0) {
            if (!parse_float(v, &a->mask_threshold)) return usage_error("points", "--mask-threshold wants a number (a logit), got '%s'", v);
        } else if (r < 0) {
            return usage_error("points", "option '%s' needs a value", opt);
        } else {
            return usage_error("points", opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
        }
    }
    if (check_common_args("points", &a->c) != CLI_OK) return CLI_USAGE;
    if (!a->n_points && !a->has_box && !a->mask) return usage_error("points", "nothing to segment: give --point, --box and/or --mask%s", NULL);
    return CLI_OK;
}

/* Reads a mask prompt image as grey and turns it into logits: > 127 -> +8, else -8. */
static int read_mask_prompt(const char *path, float **logits, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    unsigned char *px;
    size_t i, np;
    int n = 0;
    *logits = NULL;
    if (!f) {
        cli_error("cannot open mask '%s': %s", path, strerror(errno));
        return CLI_FAIL;
    }
    px = stbi_load_from_file(f, w, h, &n, 1);
    fclose(f);
    if (!px) {
        cli_error("cannot read mask '%s': corrupt, truncated or not a supported format (stb_image: %s)", path,
                  stbi_failure_reason() ? stbi_failure_reason() : "?");
        return CLI_FAIL;
    }
    np = (size_t)*w * *h;
    *logits = (float *)malloc(np * sizeof(float));
    if (!*logits) {
        stbi_image_free(px);
        cli_error("out of memory for a %dx%d mask", *w, *h);
        return CLI_FAIL;
    }
    for (i = 0; i < np; i++) (*logits)[i] = px[i] > 127 ? 8.0f : -8.0f;
    stbi_image_free(px);
    return CLI_OK;
}

/* A filled disc of radius r (pixels) centred on pixel (cx, cy), clipped to the image. */
static void fill_disc(unsigned char *rgb, int w, int h, int cx, int cy, int r, const unsigned char *col) {
    int x, y;
    for (y = cy - r; y <= cy + r; y++)
        for (x = cx - r; x <= cx + r; x++)
            if (x >= 0 && y >= 0 && x < w && y < h && (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r + r)
                memcpy(rgb + 3 * ((size_t)y * w + x), col, 3);
}

/* The best mask tinted blue, the box in yellow, then each click as a green (object) or red
   (background) dot with a white rim. */
static void draw_points_overlay(unsigned char *rgb, int w, int h, const uint8_t *mask, const pts_args *a) {
    static const unsigned char blue[3] = {0, 130, 200}, yellow[3] = {255, 225, 25}, white[3] = {255, 255, 255},
                               green[3] = {40, 200, 60}, red[3] = {230, 30, 40};
    int k, s = line_scale(w, h);
    if (mask) tint_mask(rgb, w, h, mask, blue);
    if (a->has_box)
        draw_box(rgb, w, h, clamp_int(floor(a->box[0]), 0, w - 1), clamp_int(floor(a->box[1]), 0, h - 1),
                 clamp_int(floor(a->box[2]), 0, w - 1), clamp_int(floor(a->box[3]), 0, h - 1), s, yellow);
    for (k = 0; k < a->n_points; k++) {
        const sam3_point *p = &a->points[k];
        int cx = clamp_int(floor(p->x), -1000000, 1000000), cy = clamp_int(floor(p->y), -1000000, 1000000);
        fill_disc(rgb, w, h, cx, cy, 3 * s + 2, white);
        fill_disc(rgb, w, h, cx, cy, 2 * s + 1, p->label ? green : red);
    }
}

/* Writes mask_NNN.png, overlay.png and then results.json into dir. */
static int write_points_outputs(const pts_args *a, cli_session *ss, const sam3_points_result *res) {
    char path[4096], name[64];
    int k, rc = CLI_FAIL, w = ss->img.w, h = ss->img.h;
    size_t i, np = (size_t)w * h;
    unsigned char *png = (unsigned char *)malloc(np);
    int64_t *area = (int64_t *)calloc((size_t)res->n_masks + 1, sizeof(int64_t));
    text_buf js;
    memset(&js, 0, sizeof(js));
    if (!png || !area) {
        cli_error("out of memory");
        goto done;
    }
    for (k = 0; k < res->n_masks; k++) {
        const uint8_t *m = res->masks + (size_t)k * np;
        for (i = 0; i < np; i++) png[i] = m[i] ? 255 : 0, area[k] += m[i] != 0;
        snprintf(name, sizeof(name), "mask_%03d.png", k);
        if (!join_path(path, sizeof(path), a->c.outdir, name)) goto done;
        if (write_png(path, png, w, h, 1) != 0) {
            cli_error("cannot write '%s': %s", path, strerror(errno));
            goto done;
        }
    }
    for (k = res->n_masks;; k++) { /* masks left over from an earlier run with more masks */
        snprintf(name, sizeof(name), "mask_%03d.png", k);
        if (!join_path(path, sizeof(path), a->c.outdir, name) || remove(path) != 0) break;
    }

    memcpy(ss->overlay, ss->rgb, np * 3);
    draw_points_overlay(ss->overlay, w, h, res->n_masks ? res->masks + (size_t)res->best * np : NULL, a);
    if (!join_path(path, sizeof(path), a->c.outdir, "overlay.png")) goto done;
    if (write_png(path, ss->overlay, w, h, 3) != 0) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        goto done;
    }

    tb_printf(&js, "{\n  \"image\": ");
    tb_json_string(&js, a->c.image);
    tb_printf(&js, ",\n  \"width\": %d,\n  \"height\": %d,\n  \"points\": [", w, h);
    for (k = 0; k < a->n_points; k++) {
        tb_printf(&js, "%s[", k ? ", " : "");
        tb_json_number(&js, a->points[k].x), tb_printf(&js, ", "), tb_json_number(&js, a->points[k].y);
        tb_printf(&js, ", %d]", a->points[k].label);
    }
    tb_printf(&js, "],\n  \"box\": ");
    if (a->has_box) {
        for (k = 0; k < 4; k++) tb_printf(&js, k ? ", " : "["), tb_json_number(&js, a->box[k]);
        tb_printf(&js, "]");
    } else {
        tb_printf(&js, "null");
    }
    tb_printf(&js, ",\n  \"mask_prompt\": ");
    if (a->mask) tb_json_string(&js, a->mask);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"single\": %s,\n  \"mask_threshold\": ", a->single ? "true" : "false");
    tb_json_number(&js, a->mask_threshold);
    tb_printf(&js, ",\n  \"object_score\": ");
    if (res->has_object_score) tb_json_number(&js, res->object_score);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"best\": %d,\n  \"masks\": [", res->best);
    for (k = 0; k < res->n_masks; k++) {
        tb_printf(&js, "%s\n    {\"iou\": ", k ? "," : "");
        tb_json_number(&js, res->iou[k]);
        tb_printf(&js, ", \"area\": %lld, \"mask\": \"mask_%03d.png\"}", (long long)area[k], k);
    }
    tb_printf(&js, "%s]\n}\n", res->n_masks ? "\n  " : "");
    if (js.oom) {
        cli_error("out of memory");
        goto done;
    }
    if (!join_path(path, sizeof(path), a->c.outdir, "results.json")) goto done;
    if (write_file(path, js.p, js.len) != 0) {
        cli_error("cannot write '%s': %s", path, strerror(errno));
        goto done;
    }
    rc = CLI_OK;
done:
    free(js.p);
    free(png);
    free(area);
    return rc;
}

static int run_points(const pts_args *a) {
    sam3_points_options po;
    sam3_points_prompt pp;
    sam3_points_result res;
    cli_session ss;
    float *mask = NULL;
    int rc = CLI_FAIL, mw = 0, mh = 0, k;
    double t0;
    sam3_result r;

    cli_cmd = "points";
    if (session_load(&ss, a->c.outdir, a->c.model, a->c.quiet) != CLI_OK) goto done;
    if (a->mask && read_mask_prompt(a->mask, &mask, &mw, &mh) != CLI_OK) goto done;
    if (!model_is_sam1(ss.model) && cfgi(ss.model, "tracker.present") == 0) { /* before the slow image encoder */
        cli_error("'%s' has no interactive head (a detector-only SAM 3 file): use 'sam3 segment'", a->c.model);
        goto done;
    }
    if (mask && model_is_sam1(ss.model)) { /* the library would say so too, but after the image encoder */
        int64_t ps = cfgi(ss.model, "sam1.prompt_encoder.patch_size"), side = ps > 0 ? 4 * (cfgi(ss.model, "sam1.prompt_encoder.image_size") / ps) : 0;
        if (side > 0 && (mw != side || mh != side)) {
            cli_error("a SAM 1 model takes a --mask of exactly %lldx%lld (its low-resolution mask size), got %dx%d in '%s'", (long long)side,
                      (long long)side, mw, mh, a->mask);
            goto done;
        }
    }
    if (session_encode(&ss, a->c.image, a->c.threads, a->c.blas_threads) != CLI_OK) goto done;
    if (!a->c.quiet)
        for (k = 0; k < a->n_points; k++)
            if (a->points[k].x < 0 || a->points[k].y < 0 || a->points[k].x > ss.img.w || a->points[k].y > ss.img.h)
                fprintf(stderr, "sam3: note: point %g,%g is outside the %dx%d image\n", a->points[k].x, a->points[k].y, ss.img.w, ss.img.h);

    memset(&pp, 0, sizeof(pp));
    pp.points = a->n_points ? a->points : NULL;
    pp.n_points = a->n_points;
    pp.box = a->has_box ? a->box : NULL;
    pp.mask_logits = mask;
    pp.mask_width = mw;
    pp.mask_height = mh;
    memset(&po, 0, sizeof(po));
    po.single_mask = a->single;
    po.mask_threshold = a->mask_threshold;
    t0 = sam3__now_ms();
    r = sam3_segment_points(ss.ctx, &pp, &po, &res);
    if (r < 0) {
        const char *msg = sam3_ctx_last_error(ss.ctx);
        if (!strncmp(msg, "sam3_segment_points: ", 21)) msg += 21;
        cli_error("%s", msg[0] ? msg : sam3_result_string(r));
        goto done;
    }
    if (!a->c.quiet) {
        fprintf(stderr, "sam3: %d mask%s, best %d (predicted IoU %.3f", res.n_masks, res.n_masks == 1 ? "" : "s", res.best, res.iou[res.best]);
        if (res.has_object_score) fprintf(stderr, ", object score %.2f", res.object_score);
        fprintf(stderr, ") in %s (%sprompt encoder, mask decoder, masks)\n", fmt_ms(sam3__now_ms() - t0),
                model_is_sam1(ss.model) ? "" : "interactive neck, ");
    }
    t0 = sam3__now_ms();
    if (write_points_outputs(a, &ss, &res) != CLI_OK) goto done;
    if (!a->c.quiet)
        fprintf(stderr, "sam3: wrote %s/: results.json, %d mask%s, overlay.png in %s\n", a->c.outdir, res.n_masks, res.n_masks == 1 ? "" : "s",
                fmt_ms(sam3__now_ms() - t0));
    rc = CLI_OK;
done:
    session_free(&ss);
    free(mask);
    return rc;
}

static int cmd_points(int argc, char **argv) {
    pts_args a;
    int help, rc = parse_points_args(argc, argv, &a, &help);
    if (rc != CLI_OK || help) return rc;
    return run_points(&a);
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
    if (!strcmp(argv[1], "segment")) return cmd_segment(argc - 2, argv + 2);
    if (!strcmp(argv[1], "points")) return cmd_points(argc - 2, argv + 2);
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench")) return cmd_bench(argc - 2, argv + 2);
    return usage_error(NULL, "unknown command '%s'", argv[1]);
}
