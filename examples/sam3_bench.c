/* sam3 bench - per-stage timings of sam3.h (medians), peak memory, the image encoder's GFLOP/s
   next to a large sgemm's, measured in the same run, and a roofline: each stage's counted FLOPs
   against the kernel path's peak, measured at the start. Part of the `sam3` CLI
   (examples/sam3_cli.c calls bench_main, declared in cli_common.h, for `sam3 bench`), in its own
   translation unit: it sees only sam3.h's public API. `make bench` and tools/bench_vs_pytorch.sh (--paired) run it.

   build/sam3 bench -m FILE [--threads N] [--blas-threads B] [--runs R] [--size WxH] [--paired] */
#define _POSIX_C_SOURCE 200809L /* getrusage under -std=c99 */
#include "../sam3.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define BENCH_HAVE_FORK 1
#endif

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

int bench_main(int argc, char **argv);

/* As the CLI's: one line on stderr, exit status 2. */
static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "sam3 bench: ");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, " (try 'sam3 bench --help')\n");
    return CLI_USAGE;
}

/* The first load error, kept to be printed with the file name. */
static void on_load_log(void *user, int level, const char *msg) {
    char *err = (char *)user;
    if (level != SAM3_LOG_ERROR || err[0]) return;
    if (!strncmp(msg, "sam3_load: ", 11)) msg += 11;
    snprintf(err, 512, "%s", msg);
}

static const char *BENCH_HELP =
    "usage: sam3 bench -m FILE [--threads N] [--runs R] [--size WxH] [--paired] [--precision bf16|f32]\n"
    "       [--image-size N] [--video K [--frames N] | --concept K [--threshold T]] [--warm W]\n"
    "\n"
    "Times, as medians over R runs (default 3): load (open + validate + map), the image encoder\n"
    "(ViT trunk, neck), the text encoder, the detector and masks for a first prompt on the image, a\n"
    "new prompt on the cached image (also without its post-processing, the stages a PyTorch forward\n"
    "runs), the first click after an image (it runs the interactive head's own neck) and a\n"
    "click on the cached image, sam3_segment_everything's 32x32 clicks (once; / the encoder's time)\n"
    "(\"n/a\" without an interactive head); then peak RSS, the context's memory and the encoder's\n"
    "GFLOP/s next to a large sgemm's GFLOP/s measured in the same run. A SAM 1 file has no text\n"
    "encoder or detector: its image encoder (ViT + neck) and clicks are timed. The image is synthetic\n"
    "(default 1280x960); each click is at a new place.\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --threads N       threads (default: all cores)\n"
    "  --blas-threads B  BLAS's own threads (default 1: sam3 splits every product over its threads,\n"
    "                    so one thread pool does all the work; 0 leaves BLAS as it is)\n"
    "  --runs R          repetitions (default 3)\n"
    "  --precision P     bf16: products with weights in bf16 (a --dtype bf16 file's are anyway); f32 (default)\n"
    "  --size WxH        the synthetic image's size\n"
    "  --image-size N    the model's input side, a multiple of 14 (default: the file's)\n"
    "  --paired          for tools/bench_vs_pytorch.sh: after an untimed round prints \"ready\", then\n"
    "                    each run (image, first prompt, new prompt) waits for a line on stdin and\n"
    "                    prints its times, so that another program's runs alternate with ours\n"
    "  --video K         instead: the video tracker with K objects (a box and a click each on the\n"
    "                    first frame, then --warm W untimed frames (default 8: its memory fills up in\n"
    "                    the released config's 7), then R frames timed: the whole\n"
    "                    frame and the tracking beyond the image encoder (also per object); with\n"
    "                    --paired, one frame per line on stdin (tools/bench_video_pytorch.py)\n"
    "  --frames N        with --video: N more untimed frames first, then peak RSS and the tracker's memory\n"
    "  --concept K       instead: the concept tracker with the text prompts \"a cat\" and \"the red car\" and\n"
    "                    at most K objects: the first frame (where K objects start) and --warm W more untimed,\n"
    "                    then R frames timed: the whole frame (image encoder, the detector for both prompts,\n"
    "                    tracking, post-processing) and the part beyond the image encoder; with --paired, one\n"
    "                    frame per line on stdin (tools/bench_video_pytorch.py --concept). No NMS and no hole\n"
    "                    filling, as Hugging Face transformers runs without its optional `kernels` package\n"
    "  --threshold T     with --concept: the detection and new-object threshold (default: halfway between\n"
    "                    the 2K-th and 2K+1-th best detection probability on the synthetic image over both\n"
    "                    prompts, so that 2K detections pass and the best K start objects; random weights\n"
    "                    score near 0.5)\n"
    "  --load N          instead: latency beside other work. R rounds, each timing the image encoder, a\n"
    "                    first and a new prompt, a first click and a click once quiet and once beside N\n"
    "                    busy processes (one spinning thread each; the order alternates per round),\n"
    "                    then the medians and their ratios, the new prompt's and the first click's by stage\n"
    "                    (not on Windows)\n"
    "\n";
static const char *BENCH_HELP_ROOF = /* apart: one string literal would pass C99's 4095 characters */
    "The roofline: first the peak, C = A B^T in the ViT MLP's two shapes as the model's products run\n"
    "(on the bf16 kernels where its weights are bf16), the best of 3 each; then per stage its FLOPs as the\n"
    "library counts them (sam3_ctx_flops: every product the kernel path ran), GFLOP/s and \"NN % of\n"
    "peak\"; a stage with no products is memory-bound. With --video: the frame's ViT and the tracking.\n"
    "\n";
static const char *BENCH_HELP_GEMM = /* apart: one string literal would pass C99's 4095 characters */
    "usage: sam3 bench --gemm [MxNxK] [--threads N] [--runs R]\n"
    "  --gemm            no model: C = A B^T (M x K times (N x K)^T, as the linear layers; default\n"
    "                    5184x1024x1024, the ViT's tokens at 1008 px) on N threads, the median of R runs,\n"
    "                    with the BLAS sam3 was built with and with sam3's built-in SGEMM (what a\n"
    "                    -DSAM3_NO_BLAS build runs): lines \"sgemm (built-in): Y GFLOP/s\", \"sgemm (BLAS): X GFLOP/s\"\n";

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
    int64_t g = sam3_model_image_size(m) / cfgi(m, "vision.patch_size"), ws = cfgi(m, "vision.window_size"); /* the size it runs at */
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

/* The command line. A new option: a field here, its default in parse_args, one branch there and a
   line in BENCH_HELP. */
typedef struct bench_args {
    const char *path;
    int threads, blas_threads, runs, width, height, paired;
    int video, frames, warm; /* --video K objects, --frames N, --warm W */
    int gemm, gm, gn, gk;    /* --gemm [MxNxK] */
    int load;                /* --load N busy processes */
    int precision;           /* --precision bf16|f32: SAM3_PRECISION_* */
    int image_size;          /* --image-size N: sam3_load_options.image_size, 0: the file's */
    int concept;             /* --concept K objects at most */
    double threshold;        /* --threshold T (with --concept); < 0: chosen from the image */
} bench_args;

/* Returns -1 to go on, else the exit status (--help: 0, a usage error: 2). */
static int parse_args(int argc, char **argv, bench_args *a) {
    int i;
    memset(a, 0, sizeof(*a));
    a->blas_threads = 1;
    a->runs = 3;
    a->width = 1280;
    a->height = 960;
    a->warm = 8;
    a->threshold = -1;
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs(BENCH_HELP, stdout);
            fputs(BENCH_HELP_ROOF, stdout);
            fputs(BENCH_HELP_GEMM, stdout);
            return CLI_OK;
        } else if ((!strcmp(arg, "-m") || !strcmp(arg, "--model")) && val) {
            a->path = val, i++;
        } else if (!strcmp(arg, "--threads") && val) {
            a->threads = atoi(val), i++;
            if (a->threads < 1) return usage_error("--threads must be >= 1, got '%s'", val);
        } else if (!strcmp(arg, "--precision") && val) {
            if (!strcmp(val, "bf16")) a->precision = SAM3_PRECISION_BF16;
            else if (!strcmp(val, "f32")) a->precision = SAM3_PRECISION_F32;
            else return usage_error("--precision wants bf16 or f32, got '%s'", val);
            i++;
        } else if (!strcmp(arg, "--image-size") && val) {
            a->image_size = atoi(val), i++;
            if (a->image_size < 1 || a->image_size > 65536) return usage_error("--image-size wants a side from 1 to 65536 pixels, got '%s'", val);
        } else if (!strcmp(arg, "--blas-threads") && val) {
            a->blas_threads = atoi(val), i++;
            if (a->blas_threads < 0) return usage_error("--blas-threads must be >= 0, got '%s'", val);
        } else if (!strcmp(arg, "--runs") && val) {
            a->runs = atoi(val), i++;
            if (a->runs < 1 || a->runs > 1000) return usage_error("--runs must be 1..1000, got '%s'", val);
        } else if (!strcmp(arg, "--size") && val) {
            i++;
            if (sscanf(val, "%dx%d", &a->width, &a->height) != 2 || a->width < 1 || a->height < 1 || a->width > 16384 ||
                a->height > 16384)
                return usage_error("--size wants WxH, got '%s'", val);
        } else if (!strcmp(arg, "--paired")) {
            a->paired = 1;
        } else if (!strcmp(arg, "--video") && val) {
            a->video = atoi(val), i++;
            if (a->video < 1 || a->video > SAM3_MAX_TRACKED_OBJECTS) return usage_error("--video wants 1..64 objects, got '%s'", val);
        } else if (!strcmp(arg, "--gemm")) {
            a->gemm = 1;
            if (val && val[0] >= '0' && val[0] <= '9') {
                i++;
                if (sscanf(val, "%dx%dx%d", &a->gm, &a->gn, &a->gk) != 3 || a->gm < 1 || a->gn < 1 || a->gk < 1 || a->gm > 65536 ||
                    a->gn > 65536 || a->gk > 65536)
                    return usage_error("--gemm wants MxNxK, got '%s'", val);
            }
        } else if (!strcmp(arg, "--warm") && val) {
            a->warm = atoi(val), i++;
            if (a->warm < 0) return usage_error("--warm wants a number >= 0, got '%s'", val);
        } else if (!strcmp(arg, "--load") && val) {
            a->load = atoi(val), i++;
            if (a->load < 1 || a->load > 256) return usage_error("--load wants 1..256 busy processes, got '%s'", val);
        } else if (!strcmp(arg, "--concept") && val) {
            a->concept = atoi(val), i++;
            if (a->concept < 1 || a->concept > SAM3_MAX_TRACKED_OBJECTS) return usage_error("--concept wants 1..64 objects, got '%s'", val);
        } else if (!strcmp(arg, "--threshold") && val) {
            char *end;
            a->threshold = strtod(val, &end), i++;
            if (end == val || *end || !(a->threshold > 0 && a->threshold < 1)) return usage_error("--threshold wants a probability in (0, 1), got '%s'", val);
        } else if (!strcmp(arg, "--frames") && val) {
            a->frames = atoi(val), i++;
            if (a->frames < 0) return usage_error("--frames wants a number >= 0, got '%s'", val);
        } else {
            return usage_error("unknown or incomplete option '%s'", arg);
        }
    }
    if (!a->path && !a->gemm) return usage_error("missing -m FILE%s", NULL);
    return -1;
}

/* GFLOP/s of a 2048^3 sgemm on the context, median of 3; 0 where `path` is not available. */
static int sgemm_rate(sam3_ctx *c, sam3_gemm_path path, double *gflops) {
    const int n = 2048;
    double ms = 0;
    sam3_result rc = sam3_bench_gemm(c, path, n, n, n, 3, &ms);
    *gflops = 0;
    if (rc == SAM3_ERR_UNSUPPORTED) return 1;
    if (rc != SAM3_OK) {
        fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
        return 0;
    }
    *gflops = 2.0 * n * n * n / 1e9 / (ms / 1000.0);
    return 1;
}

/* ---- the roofline: each stage's rate against the kernel path's own best product ---- */

/* 1: the model's products with a weight run in bf16 (a bf16 tensor in the file, or --precision bf16). */
static int weights_bf16(const sam3_model *m, int precision) {
    sam3_tensor_info ti;
    int i, n = sam3_model_tensor_count(m);
    if (precision == SAM3_PRECISION_BF16) return 1;
    for (i = 0; i < n; i++)
        if (sam3_model_tensor_info(m, i, &ti) && !strcmp(ti.dtype, "bf16")) return 1;
    return 0;
}

/* The peak the roofline divides by: C = A B^T as the model's products with a weight run on the
   context (B in bf16 where they are bf16), in the shapes of the ViT's MLP (tokens x intermediate
   x width, and tokens x width x intermediate), three times each, the best rate (other work on
   the machine only slows a run down); measured before anything else runs and printed with the
   path and the threads. 1, or 0 after a line on stderr. */
static int bench_peak(sam3_ctx *c, const sam3_model *m, int bf16, FILE *out, double *peak) {
    const int sam1 = !strcmp(sam3_model_arch(m), "sam1");
    const int64_t p = cfgi(m, sam1 ? "sam1.vision.patch_size" : "vision.patch_size"), g = p > 0 ? sam3_model_image_size(m) / p : 0;
    const int C = (int)cfgi(m, sam1 ? "sam1.vision.hidden_size" : "vision.hidden_size");
    const int I = (int)cfgi(m, sam1 ? "sam1.vision.mlp_dim" : "vision.intermediate_size");
    const int ok = g > 0 && g * g <= 65536 && C > 0 && I > 0; /* else 2048^3 */
    const int shapes[2][3] = {{ok ? (int)(g * g) : 2048, ok ? I : 2048, ok ? C : 2048}, {ok ? (int)(g * g) : 2048, ok ? C : 2048, ok ? I : 2048}};
    int s;
    *peak = 0;
    for (s = 0; s < 6; s++) {
        const int *sh = shapes[s % 2];
        double ms = 0, rate;
        if (sam3_bench_gemm(c, bf16 ? SAM3_GEMM_CTX_BF16 : SAM3_GEMM_CTX, sh[0], sh[1], sh[2], 1, &ms) != SAM3_OK) {
            fprintf(stderr, "sam3 bench: peak: %s\n", sam3_ctx_last_error(c));
            return 0;
        }
        rate = 2.0 * sh[0] * sh[1] * sh[2] / 1e6 / (ms > 0 ? ms : 1e-9);
        if (rate > *peak) *peak = rate;
    }
    fprintf(out, "peak: %.1f GFLOP/s, %s products on %s, %d threads (C = A B^T in the ViT MLP's shapes %dx%dx%d and %dx%dx%d, the best of 3 each)\n",
            *peak, bf16 ? "bf16-weight" : "f32", sam3_isa_name(sam3_ctx_isa(c)), sam3_ctx_n_threads(c), shapes[0][0], shapes[0][1],
            shapes[0][2], shapes[1][0], shapes[1][1], shapes[1][2]);
    return 1;
}

/* A stage of the roofline: its median time, the FLOPs the library counted in it, the rate and
   its share of the peak; "no products" where none was counted (copies, element-wise passes:
   memory-bound). ms < 0: the stage did not run. */
static void roof_line(const char *what, double ms, double flop, double peak) {
    double rate;
    if (ms < 0) {
        printf("  %-34s %10s\n", what, "n/a");
        return;
    }
    if (flop <= 0) {
        printf("  %-34s %10.1f ms  no products%s\n", what, ms, ms >= 0.1 ? " (memory-bound)" : "");
        return;
    }
    rate = ms > 0 ? flop / 1e6 / ms : 0;
    printf("  %-34s %10.1f ms %10.4g GFLOP %9.1f GFLOP/s %4.0f %% of peak\n", what, ms, flop / 1e9, rate, peak > 0 ? 100 * rate / peak : 0);
}

/* --paired: waits for the line on stdin that starts run i of runs (one line, whatever its
   length); 0 when stdin ended first (said on stderr). */
static int paired_wait(int i, int runs) {
    int ch, got = 0;
    while ((ch = getchar()) != EOF && ch != '\n') got = 1;
    if (ch == EOF && !got) {
        fprintf(stderr, "sam3 bench: --paired: stdin ended before run %d of %d\n", i + 1, runs);
        return 0;
    }
    return 1;
}

/* ---- sam3 bench --video: the tracker per frame ---- */

/* Per-frame cost of tracking n_obj objects on a W x H synthetic stream: objects prompted on frame 0
   (a box and a click each, untimed), then `warm` untimed frames so the memory bank fills, then runs timed
   frames; paired: one line on stdin starts each timed frame, which prints its times. */
static int bench_video(sam3_ctx *c, const unsigned char *img, int W, int H, int n_obj, int runs, int paired, int frames_rss, int warm,
                       double peak) {
    sam3_tracker *tr = NULL;
    sam3_tracker_result out;
    double *t_frame = (double *)calloc((size_t)runs * 3, sizeof(double)), *t_trk, *t_vit;
    sam3_timings fl;
    int i, k, rc = CLI_FAIL;
    if (!t_frame) return CLI_FAIL;
    t_trk = t_frame + runs;
    t_vit = t_trk + runs;
    if (sam3_tracker_new(c, NULL, &tr) != SAM3_OK) {
        fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
        free(t_frame);
        return CLI_FAIL;
    }
    for (k = 0; k < n_obj; k++) {
        sam3_tracker_prompt p;
        sam3_point pt;
        sam3_box box;
        const float cx = (float)W * (k + 1) / (n_obj + 1), cy = 0.5f * H;
        memset(&p, 0, sizeof(p));
        box.x0 = cx - 0.15f * W, box.y0 = cy - 0.2f * H, box.x1 = cx + 0.15f * W, box.y1 = cy + 0.2f * H;
        pt.x = cx, pt.y = cy, pt.label = 1;
        p.points = &pt;
        p.n_points = 1;
        p.box = &box;
        if (sam3_tracker_add_prompt(tr, 0, k + 1, &p) != SAM3_OK) goto fail;
    }
    for (i = 0; i < 1 + warm + (frames_rss > 0 ? frames_rss : 0); i++)
        if (sam3_tracker_push_frame(tr, img, W, H, W * 3, SAM3_RGB8, &out) != SAM3_OK) goto fail;
    if (frames_rss > 0) {
        printf("  %-40s %10.1f MB\n", "peak RSS after the frames", peak_rss_kb() / 1024.0);
        printf("  %-40s %10.1f MB\n", "tracker memory (its bank and results)", sam3_tracker_memory_used(tr) / 1e6);
    }
    if (paired) {
        printf("ready\n");
        fflush(stdout);
    }
    for (i = 0; i < runs; i++) {
        double t0;
        if (paired && !paired_wait(i, runs)) goto done;
        t0 = sam3_time_ms();
        if (sam3_tracker_push_frame(tr, img, W, H, W * 3, SAM3_RGB8, &out) != SAM3_OK) goto fail;
        t_frame[i] = sam3_time_ms() - t0;
        t_trk[i] = sam3_ctx_timings(c).tracking;
        t_vit[i] = sam3_ctx_timings(c).vision_trunk;
        fl = sam3_ctx_flops(c);
        if (paired) {
            printf("run %d: frame %.1f ms, tracking %.1f ms\n", i + 1, t_frame[i], t_trk[i]);
            fflush(stdout);
        }
    }
    printf("sam3 bench --video: %d object%s, image %dx%d, threads %d, the prompted frame and %d more untimed, %d timed frames (medians)\n", n_obj,
           n_obj == 1 ? "" : "s", W, H, sam3_ctx_n_threads(c), warm, runs);
    bench_line("frame (image encoder + tracking)", median(t_frame, runs));
    bench_line("tracking beyond the image encoder", median(t_trk, runs));
    bench_line("  per object", median(t_trk, runs) / n_obj);
    printf("roofline (FLOPs counted by the library; the peak above):\n");
    roof_line("image encoder: ViT trunk", median(t_vit, runs), fl.vision_trunk, peak);
    roof_line("tracking beyond the image encoder", median(t_trk, runs), fl.tracking, peak);
    rc = CLI_OK;
    goto done;
fail:
    fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
done:
    sam3_tracker_free(tr);
    free(t_frame);
    return rc;
}

/* ---- sam3 bench --concept: the concept tracker per frame ---- */

/* Halfway between the k-th and k+1-th best detection probability over the prompts on the image
   (every query kept: score_threshold < 0, no masks). */
static int concept_threshold(sam3_ctx *c, const unsigned char *img, int W, int H, const char *const *texts, int n_texts, int k, double *thr,
                             int *n_det) {
    double *p = NULL;
    int n = 0, cap = 0, i, j;
    sam3_segment_options so;
    memset(&so, 0, sizeof(so));
    so.score_threshold = -1;
    so.no_masks = 1;
    if (sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8) != SAM3_OK) return 0;
    for (i = 0; i < n_texts; i++) {
        sam3_segment_prompt pr;
        sam3_segment_result seg;
        memset(&pr, 0, sizeof(pr));
        pr.text = texts[i];
        if (sam3_segment(c, &pr, &so, &seg) < 0) {
            free(p);
            return 0;
        }
        if (n + seg.n_instances > cap) {
            double *q;
            cap = n + seg.n_instances;
            q = (double *)realloc(p, (size_t)cap * sizeof(double));
            if (!q) {
                free(p);
                return 0;
            }
            p = q;
        }
        for (j = 0; j < seg.n_instances; j++) p[n++] = -seg.instances[j].score; /* descending after the sort */
    }
    *n_det = n;
    if (n <= k) {
        free(p);
        return 0;
    }
    qsort(p, (size_t)n, sizeof(double), cmp_double);
    *thr = -0.5 * (p[k - 1] + p[k]);
    free(p);
    return 1;
}

/* Per-frame cost of the concept tracker on a W x H synthetic stream with two text prompts and at most
   k objects (the same image every frame: its detections match the objects they started, so k stay
   tracked): the first frame and `warm` more untimed, then runs timed; paired as bench_video. */
static int bench_concept(sam3_ctx *c, const unsigned char *img, int W, int H, int k, double thr, int runs, int paired, int warm) {
    static const char *const texts[2] = {"a cat", "the red car"};
    sam3_concept_tracker *ct = NULL;
    sam3_concept_tracker_options o = sam3_concept_tracker_options_default();
    sam3_concept_tracker_result out;
    double *t_frame = (double *)calloc((size_t)runs * 2, sizeof(double)), *t_enc;
    int i, n_first = 0, n_vis = 0, n_det = -1, rc = CLI_FAIL;
    if (!t_frame) return CLI_FAIL;
    t_enc = t_frame + runs;
    /* 2k detections pass, max_objects keeps the best k: k objects on both sides of a paired run even
       where a bf16 file's probabilities differ a little from PyTorch's */
    if (thr < 0 && !concept_threshold(c, img, W, H, texts, 2, 2 * k, &thr, &n_det)) {
        if (n_det >= 0)
            fprintf(stderr, "sam3 bench: --concept %d: the model gives %d detections, %d needed to place the threshold (give --threshold)\n", k,
                    n_det, 2 * k + 1);
        else fprintf(stderr, "sam3 bench: --concept: cannot place the threshold: %s\n", sam3_ctx_last_error(c));
        free(t_frame);
        return CLI_FAIL;
    }
    o.detection_threshold = o.new_object_threshold = (float)thr;
    o.max_objects = k;
    /* as HF 5.17 without the `kernels` package (the GPU machine's) runs: no NMS, no hole filling, so
       that both sides start the same objects and do the same work */
    o.nms_iou = -1;
    o.fill_hole_area = -1;
    if (sam3_concept_tracker_new(c, &o, &ct) != SAM3_OK || sam3_concept_tracker_add_text(ct, texts[0], NULL) != SAM3_OK ||
        sam3_concept_tracker_add_text(ct, texts[1], NULL) != SAM3_OK)
        goto fail;
    for (i = 0; i < 1 + warm; i++) {
        if (sam3_concept_tracker_push_frame(ct, img, W, H, W * 3, SAM3_RGB8, &out) != SAM3_OK) goto fail;
        if (i == 0) n_first = out.n_objects;
    }
    if (paired) {
        printf("ready\n");
        fflush(stdout);
    }
    for (i = 0; i < runs; i++) {
        sam3_timings tm;
        double t0;
        if (paired && !paired_wait(i, runs)) goto done;
        t0 = sam3_time_ms();
        if (sam3_concept_tracker_push_frame(ct, img, W, H, W * 3, SAM3_RGB8, &out) != SAM3_OK) goto fail;
        t_frame[i] = sam3_time_ms() - t0;
        tm = sam3_ctx_timings(c);
        t_enc[i] = tm.preprocess + tm.vision_trunk + tm.vision_neck;
        n_vis = out.n_objects;
        if (paired) {
            printf("run %d: frame %.1f ms, tracking %.1f ms beyond the image encoder, %d objects visible\n", i + 1, t_frame[i],
                   t_frame[i] - t_enc[i], out.n_objects);
            fflush(stdout);
        }
    }
    printf("sam3 bench --concept: 2 prompts, at most %d object%s (threshold %.6f), image %dx%d, threads %d, the first frame and %d more "
           "untimed, %d timed frames (medians); %d objects visible on the first frame (where they start), %d on the last\n",
           k, k == 1 ? "" : "s", thr, W, H, sam3_ctx_n_threads(c), warm, runs, n_first, n_vis);
    bench_line("frame (encoder + detector + tracking)", median(t_frame, runs));
    bench_line("image encoder (with preprocessing)", median(t_enc, runs));
    for (i = 0; i < runs; i++) t_frame[i] -= t_enc[i];
    bench_line("detector + tracking beyond the encoder", median(t_frame, runs));
    rc = CLI_OK;
    goto done;
fail:
    fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
done:
    sam3_concept_tracker_free(ct);
    free(t_frame);
    return rc;
}

/* sam3 bench --gemm: both GEMMs on one shape, the built-in first: a pthreads OpenBLAS's threads
   keep spinning for a while after its call, and beside them the built-in's threads would share the
   cores (while the OpenMP threads sleep between calls: the CLI sets OMP_WAIT_POLICY=passive). */
static int bench_gemm(int threads, int runs, int M, int N, int K) {
    const sam3_gemm_path paths[2] = {SAM3_GEMM_BUILTIN, SAM3_GEMM_BLAS};
    int p;
    printf("sgemm %dx%dx%d (C = A B^T), %d thread%s, median of %d\n", M, N, K, threads, threads == 1 ? "" : "s", runs);
    for (p = 0; p < 2; p++) {
        double ms = 0;
        sam3_result rc = sam3_bench_sgemm(paths[p], threads, M, N, K, runs, &ms);
        if (rc == SAM3_ERR_UNSUPPORTED) printf("sgemm (%s): n/a (built with SAM3_NO_BLAS)\n", p ? "BLAS" : "built-in");
        else if (rc != SAM3_OK) {
            fprintf(stderr, "sam3 bench: --gemm: %s\n", sam3_result_string(rc));
            return CLI_FAIL;
        } else printf("sgemm (%s): %.1f GFLOP/s\n", p ? "BLAS" : "built-in", 2.0 * M * N * K / (ms * 1e6));
    }
    return CLI_OK;
}

/* ---- sam3 bench --load N: latency beside other work ---- */

#ifdef BENCH_HAVE_FORK
/* One round's latencies (ms): image encoder, first prompt, new prompt, first click, click on
   the cached image; -1 for what the file cannot do. `k` varies the texts and click places. */
enum { LOAD_ENCODER, LOAD_FIRST_PROMPT, LOAD_NEW_PROMPT, LOAD_P_TEXT, LOAD_P_DETR_ENC, LOAD_P_DETR_DEC, LOAD_P_MASKS, LOAD_P_POST,
       LOAD_FIRST_CLICK, LOAD_C_NECK, LOAD_C_POINTS, LOAD_CLICK, LOAD_N };
static int load_round(sam3_ctx *c, const unsigned char *img, int W, int H, int sam1, int k, double *t) {
    sam3_timings tm;
    sam3_point pt;
    sam3_points_prompt pp;
    sam3_points_result res;
    sam3_result rc;
    double t0;
    int i;
    for (i = 0; i < LOAD_N; i++) t[i] = -1;
    if (sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8) != SAM3_OK) return 0;
    tm = sam3_ctx_timings(c);
    t[LOAD_ENCODER] = tm.vision_trunk + tm.vision_neck;
    if (!sam1) {
        char text[64];
        sam3_segment_prompt pr;
        sam3_segment_result seg;
        memset(&pr, 0, sizeof(pr));
        pr.text = text;
        snprintf(text, sizeof(text), "yellow school bus %d", k % 10); /* new texts, same token count */
        t0 = sam3_time_ms();
        if (sam3_segment(c, &pr, NULL, &seg) < 0) return 0;
        t[LOAD_FIRST_PROMPT] = sam3_time_ms() - t0;
        snprintf(text, sizeof(text), "red car %d", k % 10);
        t0 = sam3_time_ms();
        if (sam3_segment(c, &pr, NULL, &seg) < 0) return 0;
        t[LOAD_NEW_PROMPT] = sam3_time_ms() - t0;
        tm = sam3_ctx_timings(c); /* where the new prompt's time went */
        t[LOAD_P_TEXT] = tm.text;
        t[LOAD_P_DETR_ENC] = tm.geometry + tm.detr_encoder;
        t[LOAD_P_DETR_DEC] = tm.detr_decoder;
        t[LOAD_P_MASKS] = tm.mask_decoder;
        t[LOAD_P_POST] = tm.postprocess;
    }
    memset(&pp, 0, sizeof(pp));
    pp.points = &pt;
    pp.n_points = 1;
    pt.label = 1;
    for (i = 0; i < 2; i++) {
        pt.x = (float)(W * (0.15 + 0.7 * ((k * 2 + i) * 7 % 11) / 10.0));
        pt.y = (float)(H * (0.15 + 0.7 * ((k * 2 + i) * 5 % 7) / 6.0));
        t0 = sam3_time_ms();
        rc = sam3_segment_points(c, &pp, NULL, &res);
        if (rc == SAM3_ERR_UNSUPPORTED) return 1;
        if (rc < 0) return 0;
        t[i ? LOAD_CLICK : LOAD_FIRST_CLICK] = sam3_time_ms() - t0;
        if (!i) { /* where the first click's time went */
            tm = sam3_ctx_timings(c);
            t[LOAD_C_NECK] = tm.interactive_neck;
            t[LOAD_C_POINTS] = tm.points;
        }
    }
    return 1;
}

/* A busy process: a shell's endless loop, one thread of work until killed, as another program
   beside ours. It is exec'd at once: a plain fork() would share our pages copy-on-write, and every
   first write to the scratch would then pay a page copy, which is not what another program costs. */
static pid_t load_spawn(void) {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "while :; do :; done", (char *)NULL);
        _exit(127);
    }
    return pid;
}
#endif

static int bench_load(sam3_ctx *c, const unsigned char *img, int W, int H, int sam1, int runs, int n_load) {
#ifdef BENCH_HAVE_FORK
    static const char *names[LOAD_N] = {"image encoder", "first prompt", "new prompt on the cached image", "  of it: text encoder",
                                        "  of it: geometry + DETR encoder", "  of it: DETR decoder", "  of it: mask decoder",
                                        "  of it: post-processing", "first click", "  of it: interactive neck",
                                        "  of it: prompt + mask decoder", "click on the cached image"};
    double *t = (double *)calloc((size_t)runs * LOAD_N * 2, sizeof(double)), col[1000], one[LOAD_N];
    pid_t *pids = (pid_t *)calloc((size_t)n_load, sizeof(pid_t));
    int r, q, i, s, ok = 1, rc = CLI_FAIL;
    if (!t || !pids) {
        fprintf(stderr, "sam3 bench: out of memory\n");
        goto done;
    }
    if (!load_round(c, img, W, H, sam1, 0, one)) goto fail; /* untimed: first-touch of the scratch */
    for (r = 0; r < runs && ok; r++)
        for (q = 0; q < 2 && ok; q++) {
            const int loaded = (q + r) % 2; /* quiet first on even rounds, loaded first on odd */
            if (loaded) {
                struct timespec ts = {0, 200000000}; /* the busy processes reach the scheduler */
                for (i = 0; i < n_load; i++)
                    if ((pids[i] = load_spawn()) < 0) {
                        fprintf(stderr, "sam3 bench: --load: cannot start a busy process\n");
                        ok = 0;
                        break;
                    }
                if (ok) nanosleep(&ts, NULL);
            }
            /* texts of their own for each call: the quiet and the loaded call of a round with the
               same ones made the second find its text features cached (text encoder 0 ms) */
            if (ok && !load_round(c, img, W, H, sam1, 2 * r + 1 + loaded, t + ((size_t)r * 2 + loaded) * LOAD_N)) ok = -1;
            if (loaded)
                for (i = 0; i < n_load; i++)
                    if (pids[i] > 0) kill(pids[i], SIGKILL), waitpid(pids[i], NULL, 0), pids[i] = 0;
        }
    if (ok < 0) goto fail;
    if (!ok) goto done;
    printf("sam3 bench --load %d: image %dx%d, threads %d, %d round%s alternating quiet and beside %d busy process%s (medians)\n",
           n_load, W, H, sam3_ctx_n_threads(c), runs, runs > 1 ? "s" : "", n_load, n_load > 1 ? "es" : "");
    printf("  %-40s %10s %10s %7s\n", "", "quiet ms", "loaded ms", "ratio");
    for (s = 0; s < LOAD_N; s++) {
        double med[2];
        for (q = 0; q < 2; q++) {
            for (r = 0; r < runs; r++) col[r] = t[((size_t)r * 2 + q) * LOAD_N + s];
            med[q] = median(col, runs);
        }
        if (med[0] < 0) printf("  %-40s %10s %10s %7s\n", names[s], "n/a", "n/a", "");
        else if (med[0] == 0) printf("  %-40s %10.1f %10.1f %7s\n", names[s], med[0], med[1], "");
        else printf("  %-40s %10.1f %10.1f %6.2fx\n", names[s], med[0], med[1], med[1] / med[0]);
    }
    rc = CLI_OK;
    goto done;
fail:
    fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
done:
    free(t);
    free(pids);
    return rc;
#else
    (void)c, (void)img, (void)W, (void)H, (void)sam1, (void)runs, (void)n_load;
    fprintf(stderr, "sam3 bench: --load needs fork(), which this platform does not have\n");
    return CLI_FAIL;
#endif
}

/* The per-run timings of the default bench (runs values each), and the first click's. */
typedef struct bench_times {
    double *load, *trunk, *neck, *pre, *text, *det, *new_prompt, *nopost, *click;
    double *geo, *denc, *ddec, *mask, *post, *pts; /* the first prompt's stages, each click's decoder */
    double ineck;     /* the first click's interactive neck */
    sam3_timings fl;  /* each stage's FLOPs (sam3_ctx_flops), from its last run */
    double first_click;
    size_t ctx_image; /* sam3_ctx_memory_used after the first image: what the input size drives */
    double everything; /* one sam3_segment_everything (32 x 32 grid) on the cached image; -1: no head */
} bench_times;

/* The rounds: the image, a first prompt on it, then a new prompt on the cached image. Paired
   (tools/bench_vs_pytorch.sh): one untimed round, "ready", then each round waits for a line on
   stdin and prints its times, so that another program's runs can alternate with ours. 1, or 0
   after a line on stderr. */
static int bench_rounds(sam3_ctx *c, const unsigned char *img, int W, int H, int sam1, int runs, int paired, bench_times *bt) {
    int i;
    sam3_result rc;
    double t0;
    for (i = paired ? -1 : 0; i < runs; i++) {
        sam3_timings t;
        double t_img = 0, t_first_prompt = 0;
        if (paired && i >= 0 && !paired_wait(i, runs)) return 0;
        if ((rc = sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8)) != SAM3_OK) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            return 0;
        }
        t = sam3_ctx_timings(c);
        t_img = t.vision_trunk + t.vision_neck;
        if (!bt->ctx_image) bt->ctx_image = sam3_ctx_memory_used(c);
        if (i >= 0) {
            const sam3_timings f = sam3_ctx_flops(c);
            bt->pre[i] = t.preprocess;
            bt->trunk[i] = t.vision_trunk; /* SAM 1: ViT + neck */
            bt->neck[i] = t.vision_neck;
            bt->fl.preprocess = f.preprocess, bt->fl.vision_trunk = f.vision_trunk, bt->fl.vision_neck = f.vision_neck;
        }
        if (!sam1) {
            char text[64];
            sam3_segment_prompt pr;
            sam3_segment_result seg;
            const int k = (i + 10) % 10;
            memset(&pr, 0, sizeof(pr));
            snprintf(text, sizeof(text), "yellow school bus %d", k); /* a new text each time: same token count */
            pr.text = text;
            t0 = sam3_time_ms();
            rc = sam3_segment(c, &pr, NULL, &seg);
            t_first_prompt = sam3_time_ms() - t0;
            t = sam3_ctx_timings(c);
            if (i >= 0) {
                const sam3_timings f = sam3_ctx_flops(c);
                bt->text[i] = t.text;
                bt->det[i] = t.geometry + t.detr_encoder + t.detr_decoder + t.mask_decoder + t.postprocess;
                bt->geo[i] = t.geometry, bt->denc[i] = t.detr_encoder, bt->ddec[i] = t.detr_decoder;
                bt->mask[i] = t.mask_decoder, bt->post[i] = t.postprocess;
                bt->fl.text = f.text, bt->fl.geometry = f.geometry, bt->fl.detr_encoder = f.detr_encoder;
                bt->fl.detr_decoder = f.detr_decoder, bt->fl.mask_decoder = f.mask_decoder, bt->fl.postprocess = f.postprocess;
            }
            snprintf(text, sizeof(text), "red car %d", k);
            t0 = sam3_time_ms();
            rc = rc < 0 ? rc : sam3_segment(c, &pr, NULL, &seg);
            if (i >= 0) bt->new_prompt[i] = sam3_time_ms() - t0;
            if (rc < 0) {
                fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
                return 0;
            }
            t = sam3_ctx_timings(c);
            if (i >= 0) bt->nopost[i] = t.text + t.geometry + t.detr_encoder + t.detr_decoder + t.mask_decoder;
        }
        if (paired) {
            if (i < 0)
                printf("ready\n");
            else if (sam1)
                printf("run %d: image encoder %.1f ms\n", i + 1, t_img);
            else
                printf("run %d: image encoder %.1f ms, first prompt %.1f ms, new prompt %.1f ms, new prompt without post-processing %.1f ms\n",
                       i + 1, t_img, t_first_prompt, bt->new_prompt[i], bt->nopost[i]);
            fflush(stdout);
        }
    }
    return 1;
}

/* Clicks: the first after the image runs the interactive neck (SAM 3), then one click at a new
   place each run, three candidate masks at the image's size each time. first_click -1: the model
   has no interactive head. 1, or 0 after a line on stderr. */
static int bench_clicks(sam3_ctx *c, int W, int H, int runs, bench_times *bt) {
    sam3_point pt;
    sam3_points_prompt pp;
    sam3_points_result res;
    sam3_result rc;
    double t0;
    int i;
    memset(&pp, 0, sizeof(pp));
    pp.points = &pt;
    pp.n_points = 1;
    pt.x = 0.5f * W, pt.y = 0.5f * H, pt.label = 1;
    t0 = sam3_time_ms();
    rc = sam3_segment_points(c, &pp, NULL, &res);
    bt->first_click = sam3_time_ms() - t0;
    bt->ineck = sam3_ctx_timings(c).interactive_neck;
    bt->fl.interactive_neck = sam3_ctx_flops(c).interactive_neck;
    if (rc == SAM3_ERR_UNSUPPORTED) bt->first_click = -1;
    for (i = 0; i < runs && rc != SAM3_ERR_UNSUPPORTED; i++) {
        if (rc < 0) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            return 0;
        }
        pt.x = (float)(W * (0.15 + 0.7 * ((i * 7 + 3) % 11) / 10.0));
        pt.y = (float)(H * (0.15 + 0.7 * ((i * 5 + 1) % 7) / 6.0));
        t0 = sam3_time_ms();
        rc = sam3_segment_points(c, &pp, NULL, &res);
        bt->click[i] = sam3_time_ms() - t0;
        bt->pts[i] = sam3_ctx_timings(c).points;
        bt->fl.points = sam3_ctx_flops(c).points;
    }
    if (rc < 0 && rc != SAM3_ERR_UNSUPPORTED) {
        fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
        return 0;
    }
    bt->everything = -1;
    if (rc != SAM3_ERR_UNSUPPORTED) { /* once: 1024 clicks are a run of their own */
        sam3_everything_result ev;
        t0 = sam3_time_ms();
        if (sam3_segment_everything(c, NULL, &ev) < 0) {
            fprintf(stderr, "sam3 bench: %s\n", sam3_ctx_last_error(c));
            return 0;
        }
        bt->everything = sam3_time_ms() - t0;
    }
    return 1;
}

/* The default bench's table: medians, peak RSS, the image encoder's GFLOP/s against sgemm's. */
static void bench_report(const bench_args *a, sam3_model *m, sam3_ctx *c, int sam1, const bench_times *bt, double sg, double sg_ob,
                         double peak) {
    const int runs = a->runs, threads = a->threads;
    double gf = sam1 ? sam1_vision_gflop(m) : vision_gflop(m);
    double tl = median(bt->load, runs), tp = median(bt->pre, runs), tt = median(bt->trunk, runs), tn = median(bt->neck, runs);
    double enc = gf / ((tt + tn) / 1000.0), ref = sg > sg_ob ? sg : sg_ob;
    long rss_kb = peak_rss_kb();
    printf("sam3 bench: %s (%s), image %dx%d, input %d, %d run%s, threads %s%d, BLAS threads %d%s, precision %s\n", a->path, sam1 ? "SAM 1" : "SAM 3",
           a->width, a->height, sam3_model_image_size(m), runs, runs > 1 ? "s (medians)" : "", threads ? "" : "all = ", threads ? threads : sam3_ctx_n_threads(c),
           a->blas_threads, sam3_ctx_splits_products(c) ? " (products split by sam3)" : "",
           a->precision == SAM3_PRECISION_BF16 ? "bf16" : "f32 (bf16 weights: bf16)");
    bench_line("load (open + validate + map)", tl);
    if (sam1) {
        bench_line("preprocess (resize + normalise + pad)", tp);
        bench_line("image encoder: ViT + neck", tt);
    } else {
        bench_line("preprocess (resize + normalise)", tp);
        bench_line("image encoder: ViT trunk", tt);
        bench_line("image encoder: neck", tn);
        bench_line("text encoder (new prompt)", median(bt->text, runs));
        bench_line("detector + masks (one prompt)", median(bt->det, runs));
        bench_line("new prompt on the cached image", median(bt->new_prompt, runs));
        bench_line("  the same without post-processing", median(bt->nopost, runs));
    }
    bench_line(sam1 ? "first click" : "first click (runs the interactive neck)", bt->first_click);
    bench_line("click on the cached image", bt->first_click < 0 ? -1 : median(bt->click, runs));
    bench_line("everything, 32x32 clicks (one run)", bt->everything);
    if (bt->everything >= 0) printf("  %-40s %10.2f x the image encoder\n", "  of it", bt->everything / (tp + tt + tn));
    printf("  %-40s %10.1f MB\n", "peak RSS", rss_kb / 1024.0);
    printf("  %-40s %10.1f MB\n", "context after the first image", bt->ctx_image / 1e6);
    printf("  %-40s %10.1f MB\n", "context at the end (results too)", sam3_ctx_memory_used(c) / 1e6);
    printf("  %-40s %10.1f GFLOP/s (%.4g GFLOP)\n", "image encoder", enc, gf);
    printf("  %-40s %10.1f GFLOP/s\n", "sgemm 2048^3, split over our threads", sg);
    if (sg_ob > 0) printf("  %-40s %10.1f GFLOP/s\n", "sgemm 2048^3, OpenBLAS's threads", sg_ob);
    printf("  %-40s %10.0f %% of the faster sgemm\n", "image encoder reaches", 100.0 * enc / ref);
    printf("roofline (FLOPs counted by the library; the peak above):\n");
    roof_line("preprocess", tp, bt->fl.preprocess, peak);
    roof_line(sam1 ? "image encoder: ViT + neck" : "image encoder: ViT trunk", tt, bt->fl.vision_trunk, peak);
    if (!sam1) {
        roof_line("image encoder: neck", tn, bt->fl.vision_neck, peak);
        roof_line("text encoder", median(bt->text, runs), bt->fl.text, peak);
        roof_line("prompt tokens (geometry encoder)", median(bt->geo, runs), bt->fl.geometry, peak);
        roof_line("DETR encoder", median(bt->denc, runs), bt->fl.detr_encoder, peak);
        roof_line("DETR decoder + scoring", median(bt->ddec, runs), bt->fl.detr_decoder, peak);
        roof_line("mask decoder", median(bt->mask, runs), bt->fl.mask_decoder, peak);
        roof_line("post-processing", median(bt->post, runs), bt->fl.postprocess, peak);
    }
    if (!sam1) roof_line("click: interactive neck (first)", bt->first_click < 0 ? -1 : bt->ineck, bt->fl.interactive_neck, peak);
    roof_line("click: prompt + mask decoder", bt->first_click < 0 ? -1 : median(bt->pts, runs), bt->fl.points, peak);
}

int bench_main(int argc, char **argv) {
    bench_args a;
    const int parsed = parse_args(argc, argv, &a);
    const char *path = a.path;
    const int threads = a.threads, runs = a.runs, W = a.width, H = a.height, blas_threads = a.blas_threads, paired = a.paired;
    int i, sam1, rc_cli = CLI_FAIL;
    sam3_model *m = NULL;
    sam3_ctx *c = NULL;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_load_options lo = sam3_load_options_default();
    char load_error[512];
    sam3_result rc;
    bench_times bt;
    double t0, sg, sg_ob, peak = 0;
    unsigned char *img;
    if (parsed >= 0) return parsed;
    if (a.gemm) {
        int nt = threads;
        if (nt < 1) {
#ifdef _OPENMP /* no model: the default count is OpenMP's */
            nt = omp_get_max_threads();
#else
            nt = 1;
#endif
        }
        return bench_gemm(nt, runs, a.gm ? a.gm : 5184, a.gn ? a.gn : 1024, a.gk ? a.gk : 1024);
    }
    memset(&bt, 0, sizeof(bt));
    bt.first_click = bt.everything = -1;
    bt.load = (double *)calloc((size_t)runs * 15, sizeof(double));
    img = (unsigned char *)malloc((size_t)W * H * 3);
    if (!bt.load || !img) {
        fprintf(stderr, "sam3 bench: out of memory\n");
        free(bt.load);
        free(img);
        return CLI_FAIL;
    }
    bt.trunk = bt.load + runs; bt.neck = bt.trunk + runs; bt.pre = bt.neck + runs; bt.text = bt.pre + runs; bt.det = bt.text + runs;
    bt.new_prompt = bt.det + runs; bt.nopost = bt.new_prompt + runs; bt.click = bt.nopost + runs;
    bt.geo = bt.click + runs; bt.denc = bt.geo + runs; bt.ddec = bt.denc + runs; bt.mask = bt.ddec + runs; bt.post = bt.mask + runs;
    bt.pts = bt.post + runs;
    for (i = 0; i < W * H * 3; i++) img[i] = (unsigned char)((i % (W * 3)) * 255 / (W * 3) ^ (i / (W * 3)) % 256);
    load_error[0] = 0;
    lo.log = on_load_log;
    lo.log_user = load_error;
    lo.image_size = a.image_size;
    for (i = 0; i < runs; i++) {
        t0 = sam3_time_ms();
        rc = sam3_load(path, &lo, &m);
        bt.load[i] = sam3_time_ms() - t0;
        if (rc != SAM3_OK) {
            fprintf(stderr, "sam3 bench: cannot load model '%s': %s\n", path, load_error[0] ? load_error : sam3_result_string(rc));
            goto done;
        }
        if (i + 1 < runs) sam3_free(m), m = NULL;
    }
    sam1 = !strcmp(sam3_model_arch(m), "sam1"); /* SAM 1: an image encoder and clicks, no text or detector */
    co.n_threads = threads;
    co.blas_threads = blas_threads;
    co.precision = a.precision;
    if ((rc = sam3_ctx_new(m, &co, &c)) != SAM3_OK) {
        fprintf(stderr, "sam3 bench: cannot create a context: %s\n", sam3_result_string(rc));
        goto done;
    }
    /* the kernel path, on its own line (on stderr when paired: stdout then speaks the protocol) */
    fprintf(paired ? stderr : stdout, "kernels: %s\n", sam3_isa_name(sam3_ctx_isa(c)));
    if (a.load) {
        rc_cli = bench_load(c, img, W, H, sam1, runs, a.load);
        goto done;
    }
    if (!a.concept && !bench_peak(c, m, weights_bf16(m, a.precision), paired ? stderr : stdout, &peak)) goto done;
    if (a.video) {
        rc_cli = bench_video(c, img, W, H, a.video, runs, paired, a.frames, a.warm, peak);
        goto done;
    }
    if (a.concept) {
        rc_cli = bench_concept(c, img, W, H, a.concept, a.threshold, runs, paired, a.warm);
        goto done;
    }
    if (!bench_rounds(c, img, W, H, sam1, runs, paired, &bt) || !bench_clicks(c, W, H, runs, &bt)) goto done;
    /* same-run sgemm reference: split over our threads, then OpenBLAS's own threads on the same
       product (last, as OpenBLAS's pthread workers keep spinning after it); the reference is the
       faster of the two */
    if (!sgemm_rate(c, SAM3_GEMM_CTX, &sg) || !sgemm_rate(c, SAM3_GEMM_BLAS_THREADS, &sg_ob)) goto done;
    bench_report(&a, m, c, sam1, &bt, sg, sg_ob, peak);
    rc_cli = CLI_OK;
done:
    sam3_ctx_free(c);
    sam3_free(m);
    free(bt.load);
    free(img);
    return rc_cli;
}
