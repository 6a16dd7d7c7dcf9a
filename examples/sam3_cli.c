/* sam3 - command-line front end of sam3.h.

   build/sam3 segment -m FILE -i IMAGE [-t TEXT]... [--box x0,y0,x1,y1[,neg]]... -o OUTDIR
   build/sam3 points -m FILE -i IMAGE [--point x,y[,neg]]... [--box x0,y0,x1,y1] [--mask PNG] -o OUTDIR
   build/sam3 track -m FILE -i FRAMES -o OUTDIR [--point F:ID:x,y[,neg]]... [--box F:ID:x0,y0,x1,y1]...
   build/sam3 tokenize -m FILE TEXT
   build/sam3 info -m FILE [--tensors]
   build/sam3 bench -m FILE               (examples/sam3_bench.c)
   build/sam3 --help | --version          (COMMAND --help for each command)

   Exit codes: 0 success, 1 runtime failure, 2 usage error; one line on stderr names the problem.
   This file: main and the commands segment, points, merge, info and tokenize, and sam3.h's
   implementation (the one unit of the CLI that compiles it). The other units: cli_common.c (what
   the commands share: messages, options, JSON, PNG out, overlays), cli_track.c (track),
   cli_dataset.c (folders, lists, shards, COCO files), sam3_bench.c (bench), cli_outdir.c,
   image_io.c. Images are read by examples/image_io.c (JPEG with libjpeg-turbo, PNG with libpng;
   nothing else), written with stb_image_write through examples/cli_outdir.c (temporary file,
   then rename; see cli_outdir.h for what is replaced and what is never touched), scores drawn
   with stb_easy_font (Debian: libjpeg62-turbo-dev, libpng-dev, libstb-dev). */
#define _POSIX_C_SOURCE 200809L /* fileno, isatty, lstat, access under -std=c99 */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include "cli_common.h"
#include "cli_dataset.h"
#include "cli_outdir.h"
#include "image_io.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#if defined(_WIN32)
#include <io.h>
#define cli_isatty(f) _isatty(_fileno(f))
#else
#include <unistd.h>
#define cli_isatty(f) isatty(fileno(f))
#endif
#ifndef S_ISDIR
#define S_ISDIR(mode) (((mode)&S_IFMT) == S_IFDIR)
#endif

static const char *MAIN_HELP =
    "usage: sam3 COMMAND [OPTIONS]\n"
    "\n"
    "Meta SAM 3 segmentation in plain C (sam3.h " SAM3_VERSION_STRING ").\n"
    "\n"
    "commands:\n"
    "  segment   find every instance of a text and/or box prompt: masks, boxes, scores, overlay\n"
    "  concept   save a text and/or boxes drawn on one image as a .concept file for segment\n"
    "  points    segment the one object that clicks and/or a box point at (SAM 3 and SAM 1 files)\n"
    "  everything  every object in an image, no prompt (SAM's automatic mask generator)\n"
    "  track     follow clicked, boxed or masked objects through video frames\n"
    "  merge     merge the per-image coco.json of dataset runs (shards) into one COCO file\n"
    "  info      print a .sam3 file's config, tensor count, dtypes and size\n"
    "  tokenize  print the CLIP token ids of a text prompt\n"
    "  bench     time every stage (medians) and report GFLOP/s and peak memory\n"
    "\n"
    "options:\n"
    "  --help     this text (COMMAND --help for a command)\n"
    "  --version  print the version\n";

static const char *INFO_HELP =
    "usage: sam3 info -m FILE [--tensors] [--verify]\n"
    "\n"
    "Loads and validates a .sam3 file and prints its config, tensor count, dtypes and byte size.\n"
    "  -m, --model FILE  the .sam3 file\n"
    "  --tensors         also list every tensor (name, dtype, shape)\n"
    "  --verify          also read every weight: each tensor's checksum must match the one the\n"
    "                    converter recorded and every float must be finite; exit status 1 naming\n"
    "                    the first bad tensor otherwise\n";

static const char *DTYPES[5] = {"f32", "f16", "bf16", "i32", "u8"};

static int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    int i, list = 0, verify = 0, n, counts[8] = {0};
    uint64_t bytes[8] = {0};
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
        } else if (!strcmp(argv[i], "--verify")) {
            verify = 1;
        } else {
            return usage_error("info", "unknown option '%s'", argv[i]);
        }
    }
    if (!path) return usage_error("info", "missing -m FILE%s", NULL);
    if (!load_model_ex("info", path, 0, verify, 0, &m)) return CLI_FAIL;
    printf("file: %s (%llu bytes)\n", path, (unsigned long long)sam3_model_file_size(m));
    printf("config:\n");
    n = sam3_model_config_count(m);
    for (i = 0; i < n; i++) {
        const char *key = sam3_model_config_entry(m, i, val, sizeof(val));
        if (!strcmp(key, "file.checksums.mx64")) /* one per tensor: a count says more than 1 KB of numbers */
            snprintf(val, sizeof(val), "(%d per-tensor checksums)", sam3_model_tensor_count(m));
        printf("  %-48s %s\n", key, val);
    }
    n = sam3_model_tensor_count(m);
    for (i = 0; i < n; i++) {
        sam3_tensor_info t;
        int d;
        sam3_model_tensor_info(m, i, &t);
        total += t.nbytes;
        for (d = 0; d < 5; d++)
            if (!strcmp(t.dtype, DTYPES[d])) counts[d]++, bytes[d] += t.nbytes;
        if (list) {
            printf("  %-72.*s %-4s [", t.name_len, t.name, t.dtype);
            for (d = 0; d < t.ndim; d++) printf("%s%lld", d ? "," : "", (long long)t.shape[d]);
            printf("]\n");
        }
    }
    printf("tensors: %d (f32 %d, f16 %d, bf16 %d, i32 %d, u8 %d), %llu data bytes\n", n, counts[0], counts[1], counts[2],
           counts[3], counts[4], (unsigned long long)total);
    printf("bytes by dtype: f32 %llu, f16 %llu, bf16 %llu, i32 %llu, u8 %llu\n", (unsigned long long)bytes[0], (unsigned long long)bytes[1],
           (unsigned long long)bytes[2], (unsigned long long)bytes[3], (unsigned long long)bytes[4]);
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

/* ================================================================================================
   segment
   ============================================================================================= */

/* The parts of segment's and points' help about what they read and how they write. */
#define CLI_IMAGES_HELP \
    "\n" \
    "IMAGES: JPEG (libjpeg-turbo) and PNG (libpng) only, recognised by their first bytes; any other\n" \
    "format is refused. The header is checked before anything is decoded: at most 16384 pixels a\n" \
    "side and --max-pixels pixels in all. JPEG is decoded as Pillow decodes it (integer IDCT, fancy\n" \
    "upsampling), so the pixels match the Python pipeline's; grey stays grey, CMYK is refused, and a\n" \
    "damaged or truncated JPEG is an error. PNG: palette, grey, alpha (ignored) and interlaced files;\n" \
    "16-bit samples keep their high byte; a CRC error or a truncated file is an error. A JPEG's EXIF\n" \
    "orientation is applied (as transformers' load_image does; results.json says so), unless\n" \
    "--keep-orientation.\n"
#define CLI_OUTDIR_HELP \
    "\n" \
    "OUTPUT FOLDER: every file is written to a temporary file in OUTDIR (never through a link) and\n" \
    "renamed into place once the whole run has succeeded; a failed run changes nothing. Files sam3\n" \
    "wrote before and no longer needs (masks listed by the old results.json) are removed; no other\n" \
    "file is. OUTDIR must be new, empty or an earlier sam3 output, unless --force.\n"

static const char *SEGMENT_HELP =
    "usage: sam3 segment -m FILE -i IMAGE [-t TEXT]... [--box x0,y0,x1,y1[,neg]]... -o OUTDIR [options]\n"
    "\n"
    "Finds every instance of a concept (a text, exemplar boxes, or both) in IMAGE and writes to OUTDIR:\n"
    "  results.json   {\"image\", \"width\", \"height\", \"prompt\", \"boxes\", \"presence\", \"instances\":\n"
    "                 [{\"score\", \"box\", \"detector_box\", \"area\", \"query\", \"mask\": \"mask_000.png\"}, ...]}\n"
    "                 instances best score first; box: the mask's pixel bounds [x0,y0,x1,y1], x1 and y1\n"
    "                 exclusive (zeros when empty); detector_box: the decoder's box, not clamped\n"
    "  mask_NNN.png   one 8-bit PNG per instance, the image's size: 255 = object, 0 = background\n"
    "  overlay.png    the image with each instance's mask, box and score in its own colour\n"
    "results.json is put in place last. With several -t, the image is encoded once and each prompt gets\n"
    "its own directory OUTDIR/NN_SLUG/ with those files (NN = 00, 01, ... in command-line order,\n"
    "SLUG = the text in lower-case letters, digits and '_'). Boxes go with every text; boxes\n"
    "without -t are a visual prompt (\"prompt\": null).\n"
    "\n"
    "  -m, --model FILE            the .sam3 file\n"
    "  -i, --image IMAGE           a JPEG or PNG file (nothing else: see IMAGES below), or many images:\n"
    "                              a FOLDER or @LIST (see DATASETS below)\n"
    "  -t, --text TEXT             the concept, e.g. \"yellow school bus\"; repeat for several prompts\n"
    "  -b, --box x0,y0,x1,y1[,L]   an exemplar box in image pixels, x0 < x1, y0 < y1; L is pos (the\n"
    "                              default) or neg (also 1 or 0); repeat for several boxes\n"
    "  --classes FILE              one -t a line of FILE (a vocabulary: blank and '#' lines skipped); each\n"
    "                              results.json then has \"category_id\" (COCO's: 1 + the prompt's index)\n"
    "  --concept FILE              a prompt saved by 'sam3 concept' (its boxes from its own image);\n"
    "                              repeatable, each a prompt like a -t (after them; --box goes with all)\n"
    "  --threshold T               keep instances scoring above T, 0..1 (default 0.5; 0 keeps all)\n"
    "  --mask-threshold M          mask probability threshold, 0..1 (default 0.5)\n"
    "  -o, --output OUTDIR         output folder, created if missing: new, empty or an earlier sam3\n"
    "                              output (see OUTPUT FOLDER below)\n"
    "  --force                     write into a folder that holds other files too (they are kept)\n"
    "  --max-pixels N              refuse images (and masks) over N pixels (default 100000000)\n"
    "  --keep-orientation          the pixels as stored: a JPEG's EXIF orientation is not applied\n"
    "  --threads N                 threads (default: all cores)\n"
    "  --blas-threads B            BLAS's own threads (default 1: sam3 splits every product over its\n"
    "                              threads, so one thread pool does the work; 0 leaves BLAS as it is)\n"
    "  --precision bf16|f32        products with weights in bf16 (f32 sums; AVX512-BF16 or AMX where\n"
    "                              the CPU has them) or f32 (default); a --dtype bf16 file is bf16 anyway\n"
    "  --image-size N              SAM 3's square input side, a multiple of 14 (default: the file's,\n"
    "                              1008): smaller is faster and coarser, e.g. 560 or 448\n"
    "  -q, --quiet                 print nothing on success (errors still go to stderr)\n"
    "  -v, --verbose               with many images: each one's stages and times too\n"
    "  --format png|coco           png (default): mask_NNN.png files; coco: no mask PNGs, each instance's\n"
    "                              mask in results.json as COCO compressed RLE, and coco.json (below)\n"
    "  --shard I/N                 with many images: only part I of N (0 <= I < N; see DATASETS)\n"
    "  --image-root DIR            with --format coco: file_names relative to DIR (see DATASETS)\n"
    "\n"
    "Progress and per-stage timings go to stderr. Exit status: 0 done, 1 failed (unreadable model\n"
    "or image, a refused output folder, a file that could not be written, ...), 2 bad command line.\n";
static const char *SEGMENT_DATASETS_HELP =
    "\n"
    "DATASETS: -i FOLDER takes the folder's *.jpg, *.jpeg and *.png files (any case; not hidden files,\n"
    "not subfolders; other files are ignored), sorted by name. -i @LIST takes one path per line in the\n"
    "list's order (blank lines and '#' lines skipped, spaces at both ends trimmed; a relative path is\n"
    "relative to the list file's folder). Each image's outputs go to OUTDIR/STEM/ (STEM: its file name\n"
    "without the extension) exactly as -o OUTDIR/STEM would write them for that image alone; two images\n"
    "with the same STEM are an error. The model is loaded once and one context serves every image. An\n"
    "image whose folder already holds complete outputs of the same settings (model file name and size,\n"
    "prompts, boxes, thresholds, format, version) is skipped, so a rerun resumes; a half-written one is\n"
    "redone. An image that fails (unreadable, refused folder) is reported and the run goes on; the last\n"
    "line counts done, skipped and failed images, and the exit status is 1 if any failed. Progress: a\n"
    "line an image on stderr, 'k/N NAME  X.X img/s  ETA m:ss' (k of this run's N; NAME as in file_name\n"
    "below; 'skipped (done before)' or 'failed' in place of the rate), with -v each image's stages too.\n"
    "--shard I/N takes the images at positions k (0-based, in the order above) with k % N == I; COCO\n"
    "image ids are k + 1 whatever the sharding. With --format coco and no --shard, OUTDIR/coco.json\n"
    "holds every image of the input; after a sharded run, 'sam3 merge -o coco.json OUTDIR...' makes the\n"
    "same file from the shards' OUTDIRs (or rerun without --shard into the shared OUTDIR: all skipped).\n"
    "coco.json: COCO's images (file_name: relative to FOLDER, or as the LIST line has it; with\n"
    "--image-root DIR, relative to DIR, both taken as written and made absolute, links not followed),\n"
    "annotations (bbox: the mask's bounds [x, y, width, height]; detector_box: the detector's [x0, y0,\n"
    "x1, y1], not clamped; area: mask pixels; score), categories (the prompts), info (sam3.h, version,\n"
    "model file name, date_created: today in UTC, or SOURCE_DATE_EPOCH's; a merge keeps the latest)\n"
    "and licenses (empty: sam3 knows no image's licence).\n";

#define SEG_MAX_PROMPTS 256 /* -t, --classes lines and --concept files together (COCO has 80 classes) */
#define SEG_GROUP (SAM3_MAX_SEGMENT_PROMPTS < 16 ? SAM3_MAX_SEGMENT_PROMPTS : 16) /* prompts a sam3_segment_many call: their masks are held together */

/* The options segment and points share: model, image, output directory, threads, quiet. */
typedef struct common_args {
    const char *model, *image, *outdir;
    int threads, blas_threads, quiet, force;
    int verbose;                   /* -v: with many images, each one's stages and times too */
    unsigned long long max_pixels; /* image budget; 0: CLI_IMG_DEFAULT_MAX_PIXELS */
    int precision;                 /* --precision: SAM3_PRECISION_* */
    int image_size;                /* --image-size: sam3_load_options.image_size, 0: the file's */
    int keep_orientation;          /* --keep-orientation: the stored pixel order, EXIF ignored */
} common_args;

typedef struct seg_args {
    common_args c;
    const char *texts[SEG_MAX_PROMPTS]; /* (n_texts) */
    int n_texts;
    const char *concept_paths[SEG_MAX_PROMPTS]; /* (n_concepts) --concept files: prompts after the texts */
    sam3_concept *concepts[SEG_MAX_PROMPTS];    /* (n_concepts) loaded once the model is (seg_load_concepts) */
    int n_concepts;
    char *classes;  /* --classes FILE's text (malloc'd); its lines are entries of texts */
    sam3_box boxes[SAM3_MAX_BOXES]; /* (n_boxes) */
    int box_labels[SAM3_MAX_BOXES]; /* (n_boxes) 1 positive, 0 negative */
    int n_boxes;
    float threshold, mask_threshold;
    int coco;             /* --format coco: RLE masks in JSON, coco.json, no mask PNGs */
    const char *image_root; /* --image-root: COCO file_names relative to it */
    int shard_i, shard_n; /* --shard I/N; shard_n 0: none */
    int everything;       /* sam3 everything: sam3_segment_everything with evr instead of prompts */
    sam3_everything_options evr;
} seg_args;

/* Takes argv[*i] when it is a shared option: returns 1 (moving *i past its value), 0 when it is
   not one, CLI_USAGE after printing what is wrong with it. */
static int parse_common_arg(const char *cmd, int argc, char **argv, int *i, common_args *ca) {
    const char *opt = argv[*i], *v = NULL;
    int r;
    if (!strcmp(opt, "--quiet") || !strcmp(opt, "-q")) {
        ca->quiet = 1;
        return 1;
    }
    if (!strcmp(opt, "--force")) {
        ca->force = 1;
        return 1;
    }
    if (!strcmp(opt, "--verbose") || !strcmp(opt, "-v")) {
        ca->verbose = 1;
        return 1;
    }
    if (!strcmp(opt, "--keep-orientation")) {
        ca->keep_orientation = 1;
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
    } else if (r == 0 && (r = opt_value(argc, argv, i, NULL, "--precision", &v)) > 0) {
        if (!strcmp(v, "bf16")) ca->precision = SAM3_PRECISION_BF16;
        else if (!strcmp(v, "f32")) ca->precision = SAM3_PRECISION_F32;
        else r = usage_error(cmd, "--precision wants bf16 or f32, got '%s'", v);
    } else if (r == 0 && (r = opt_value(argc, argv, i, NULL, "--image-size", &v)) > 0) {
        if (!parse_int(v, 1, 65536, &ca->image_size)) r = usage_error(cmd, "--image-size wants a side from 1 to 65536 pixels, got '%s'", v);
    } else if (r == 0 && (r = opt_value(argc, argv, i, NULL, "--max-pixels", &v)) > 0) {
        char *end;
        errno = 0;
        ca->max_pixels = strtoull(v, &end, 10);
        if (end == v || *end || errno == ERANGE || v[0] == '-' || ca->max_pixels < 1 ||
            ca->max_pixels > (unsigned long long)SAM3_MAX_IMAGE_DIM * SAM3_MAX_IMAGE_DIM)
            r = usage_error(cmd, "--max-pixels wants a number from 1 to 268435456 (16384 x 16384), got '%s'", v);
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

/* --classes FILE: one class a line (spaces at both ends trimmed; blank and '#' lines skipped), each
   a -t prompt in file order; at most 1 MiB. CLI_OK, CLI_FAIL (unreadable) or CLI_USAGE (printed). */
static int seg_read_classes(seg_args *a, const char *path) {
    FILE *f;
    long n = 0;
    char *p, *line, *next;
    if (a->classes) return usage_error("segment", "one --classes FILE%s", NULL);
    if (!(f = fopen(path, "rb"))) {
        cli_error("cannot open --classes '%s': %s", path, strerror(errno));
        return CLI_FAIL;
    }
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > (1L << 20) || fseek(f, 0, SEEK_SET) || !(a->classes = (char *)malloc((size_t)n + 1)) ||
        fread(a->classes, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        cli_error("cannot read --classes '%s'%s", path, n > (1L << 20) ? " (over 1 MiB)" : "");
        return CLI_FAIL;
    }
    fclose(f);
    a->classes[n] = 0;
    if (strlen(a->classes) != (size_t)n) return usage_error("segment", "--classes '%s' holds a NUL byte", path);
    for (line = a->classes; line; line = next) {
        if ((next = strchr(line, '\n')) != NULL) *next++ = 0;
        while (*line == ' ' || *line == '\t') line++;
        for (p = line + strlen(line); p > line && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\r'); p--) p[-1] = 0;
        if (!*line || *line == '#') continue;
        if (a->n_texts + a->n_concepts >= SEG_MAX_PROMPTS)
            return usage_error("segment", "too many -t, --classes and --concept prompts (at most 256)%s", NULL);
        a->texts[a->n_texts++] = line;
    }
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
            fputs(CLI_IMAGES_HELP, stdout); /* apart: C99 promises string literals of 4095 bytes */
            fputs(CLI_OUTDIR_HELP, stdout); /* apart: C99 promises string literals of 4095 bytes */
            fputs(SEGMENT_DATASETS_HELP, stdout);
            *help = 1;
            return CLI_OK;
        }
        if ((r = parse_common_arg("segment", argc, argv, &i, &a->c)) != 0) {
            if (r < 0) return CLI_USAGE;
            continue;
        }
        v = NULL;
        if ((r = opt_value(argc, argv, &i, "-t", "--text", &v)) > 0) {
            if (a->n_texts + a->n_concepts >= SEG_MAX_PROMPTS) return usage_error("segment", "too many -t, --classes and --concept prompts (at most 256)%s", NULL);
            a->texts[a->n_texts++] = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--classes", &v)) > 0) {
            if ((r = seg_read_classes(a, v)) != CLI_OK) return r;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--concept", &v)) > 0) {
            if (a->n_texts + a->n_concepts >= SEG_MAX_PROMPTS) return usage_error("segment", "too many -t, --classes and --concept prompts (at most 256)%s", NULL);
            if (!v[0]) return usage_error("segment", "--concept needs a file name%s", NULL);
            a->concept_paths[a->n_concepts++] = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, "-b", "--box", &v)) > 0) {
            const char *why;
            if (a->n_boxes == SAM3_MAX_BOXES) return usage_error("segment", "too many boxes%s", NULL);
            if ((why = parse_box(v, &a->boxes[a->n_boxes], &a->box_labels[a->n_boxes])) != NULL) {
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
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--format", &v)) > 0) {
            if (strcmp(v, "png") && strcmp(v, "coco")) return usage_error("segment", "--format wants png or coco, got '%s'", v);
            a->coco = !strcmp(v, "coco");
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--image-root", &v)) > 0) {
            a->image_root = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--shard", &v)) > 0) {
            if (!cli_ds_parse_shard(v, &a->shard_i, &a->shard_n))
                return usage_error("segment", "--shard wants I/N with 0 <= I < N (e.g. 0/4 ... 3/4), got '%s'", v);
        } else if (r < 0) {
            return usage_error("segment", "option '%s' needs a value", opt);
        } else {
            return usage_error("segment", opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
        }
    }
    if (check_common_args("segment", &a->c) != CLI_OK) return CLI_USAGE;
    if (!a->n_texts && !a->n_boxes && !a->n_concepts)
        return usage_error("segment", "nothing to look for: give -t TEXT, --box and/or --concept FILE%s", NULL);
    if (a->image_root && (!a->coco || !a->image_root[0]))
        return usage_error("segment", "--image-root '%s' names the folder COCO's file_names are relative to: it needs --format coco", a->image_root);
    for (i = 0; i < a->n_texts; i++)
        if (!a->texts[i][0] && !a->n_boxes) return usage_error("segment", "empty -t TEXT (give a text or a --box)%s", NULL);
    return CLI_OK;
}

static const char *EVERYTHING_HELP =
    "usage: sam3 everything -m FILE -i IMAGE -o OUTDIR [options]\n"
    "\n"
    "Segments every object in IMAGE without a prompt, as SAM's automatic mask generator (transformers'\n"
    "pipeline(\"mask-generation\")): a grid of single clicks through the interactive head (SAM 3 and\n"
    "SAM 1 files), masks filtered by predicted IoU and stability, overlapping ones removed by box NMS.\n"
    "OUTDIR gets what 'sam3 segment' writes (results.json, mask_NNN.png, overlay.png; --format coco;\n"
    "-i FOLDER or @LIST), each instance with \"score\" (predicted IoU), \"stability\", \"point\" (its\n"
    "click) and \"query\" (the click's index; with --crop-layers, in its \"crop\": 0 the whole image);\n"
    "\"box\" holds its first and last pixel column and row.\n"
    "\n"
    "  --points-per-side N     the grid: N x N clicks, 1..512 (default 32)\n"
    "  --pred-iou-thresh T     keep masks whose predicted IoU is above T (default 0.88; 0: no filter)\n"
    "  --stability-thresh T    keep masks whose stability is above T (default 0.95; 0: no filter)\n"
    "  --stability-offset O    the stability's logit shift, > 0 (default 1)\n"
    "  --nms-thresh T          box IoU above which the lower-scored mask goes, 0..1 (default 0.7; 1 keeps all)\n"
    "  --mask-threshold M      mask probability threshold, 0..1 exclusive (default 0.5)\n"
    "  --crop-layers L         also run the grid on 2^i x 2^i overlapping crops, i = 1..L, each encoded\n"
    "                          as its own image (0..6, default 0: the whole image only)\n"
    "  --crop-overlap R        layer 1's crop overlap as a fraction of the short side, above 0, below 1\n"
    "                          (default 512/1500)\n"
    "  --crop-points-downscale F  layer i's grid is N / F^i points a side (default 1)\n"
    "  --crop-nms-thresh T     box NMS across crops, 0..1 (default 0.7; 1 keeps all)\n"
    "  --min-region-area A     fill holes and drop islands under A pixels, then NMS again (SAM's\n"
    "                          postprocess_small_regions; default 0: off)\n"
    "  -m, -i, -o, --format, --shard, --force, --max-pixels, --keep-orientation, --threads,\n"
    "  --blas-threads, --precision, -q   as 'sam3 segment' (see sam3 segment --help)\n"
    "\n"
    "Exit status: 0 done, 1 failed, 2 bad command line.\n";

/* Returns CLI_OK with the arguments in *a, CLI_OK with *help set after printing the help, or
   CLI_USAGE after printing what is wrong. */
static int parse_everything_args(int argc, char **argv, seg_args *a, int *help) {
    int i, r, bad = CLI_OK;
    const char *v;
    memset(a, 0, sizeof(*a));
    a->everything = 1;
    a->evr = sam3_everything_options_default();
    a->mask_threshold = 0.5f;
    a->c.blas_threads = 1;
    *help = 0;
    for (i = 0; i < argc && bad == CLI_OK; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(EVERYTHING_HELP, stdout);
            *help = 1;
            return CLI_OK;
        }
        if ((r = parse_common_arg("everything", argc, argv, &i, &a->c)) != 0) {
            if (r < 0) return CLI_USAGE;
            continue;
        }
        v = NULL;
        if ((r = opt_value(argc, argv, &i, NULL, "--points-per-side", &v)) > 0) {
            if (!parse_int(v, 1, 512, &a->evr.points_per_side)) bad = usage_error("everything", "--points-per-side wants a number from 1 to 512, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--pred-iou-thresh", &v)) > 0) {
            if (!parse_float(v, &a->evr.pred_iou_thresh) || !isfinite(a->evr.pred_iou_thresh))
                bad = usage_error("everything", "--pred-iou-thresh wants a number, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--stability-thresh", &v)) > 0) {
            if (!parse_float(v, &a->evr.stability_score_thresh) || a->evr.stability_score_thresh < 0 || a->evr.stability_score_thresh > 1)
                bad = usage_error("everything", "--stability-thresh wants a number from 0 to 1, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--stability-offset", &v)) > 0) {
            if (!parse_float(v, &a->evr.stability_score_offset) || !(a->evr.stability_score_offset > 0) || !isfinite(a->evr.stability_score_offset))
                bad = usage_error("everything", "--stability-offset wants a number > 0, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--nms-thresh", &v)) > 0) {
            if (!parse_float(v, &a->evr.box_nms_thresh) || !(a->evr.box_nms_thresh > 0) || a->evr.box_nms_thresh > 1)
                bad = usage_error("everything", "--nms-thresh wants a number above 0, at most 1, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask-threshold", &v)) > 0) {
            if (!parse_float(v, &a->mask_threshold) || !(a->mask_threshold > 0) || !(a->mask_threshold < 1))
                bad = usage_error("everything", "--mask-threshold wants a number between 0 and 1 (exclusive), got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--crop-layers", &v)) > 0) {
            if (!parse_int(v, 0, SAM3_EVERYTHING_MAX_CROP_LAYERS, &a->evr.crop_layers))
                bad = usage_error("everything", "--crop-layers wants a number from 0 to 6, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--crop-overlap", &v)) > 0) {
            float f;
            if (!parse_float(v, &f) || !(f > 0) || !(f < 1)) bad = usage_error("everything", "--crop-overlap wants a number above 0, below 1, got '%s'", v);
            a->evr.crop_overlap_ratio = f;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--crop-points-downscale", &v)) > 0) {
            if (!parse_int(v, 1, 1 << 20, &a->evr.crop_points_downscale))
                bad = usage_error("everything", "--crop-points-downscale wants a number >= 1, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--crop-nms-thresh", &v)) > 0) {
            if (!parse_float(v, &a->evr.crop_nms_thresh) || !(a->evr.crop_nms_thresh > 0) || a->evr.crop_nms_thresh > 1)
                bad = usage_error("everything", "--crop-nms-thresh wants a number above 0, at most 1, got '%s'", v);
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--min-region-area", &v)) > 0) {
            int n;
            if (!parse_int(v, 0, 1 << 30, &n)) bad = usage_error("everything", "--min-region-area wants a number of pixels >= 0, got '%s'", v);
            a->evr.min_region_area = n;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--format", &v)) > 0) {
            if (strcmp(v, "png") && strcmp(v, "coco")) bad = usage_error("everything", "--format wants png or coco, got '%s'", v);
            a->coco = !strcmp(v, "coco");
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--shard", &v)) > 0) {
            if (!cli_ds_parse_shard(v, &a->shard_i, &a->shard_n))
                bad = usage_error("everything", "--shard wants I/N with 0 <= I < N (e.g. 0/4 ... 3/4), got '%s'", v);
        } else if (r < 0) {
            bad = usage_error("everything", "option '%s' needs a value", opt);
        } else {
            bad = usage_error("everything", opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
        }
    }
    if (bad != CLI_OK || check_common_args("everything", &a->c) != CLI_OK) return CLI_USAGE;
    /* the library reads 0 as "default": a filter turned off is a negative threshold */
    if (a->evr.pred_iou_thresh == 0) a->evr.pred_iou_thresh = -1;
    if (a->evr.stability_score_thresh == 0) a->evr.stability_score_thresh = -1;
    a->evr.mask_threshold = a->mask_threshold;
    return CLI_OK;
}

/* ---- the output folder ---- */

/* What segment and points write into OUTDIR (cli_outdir.h patterns): results.json (the manifest,
   marked by its "generator" key), overlay.png, mask_NNN.png, and NN_SLUG/ folders for several -t. */
static const char *const CLI_OUT_NAMES[] = {"results.json", "overlay.png", "mask_#.png", "#_*/", NULL};
/* segment's folders may also hold coco.json (--format coco) */
static const char *const SEG_OUT_NAMES[] = {"results.json", "overlay.png", "mask_#.png", "coco.json", "#_*/", NULL};
#define CLI_OUT_MANIFEST "results.json"

/* ---- the overlay ---- */

/* A mask's pixel bounds (x1, y1 exclusive), as the tracker gives them: the "box" of every output
   (the README's table); all 0 when the mask is empty. m: (h, w), non-zero = set. */
static sam3_box mask_bounds(const uint8_t *m, int w, int h) {
    sam3_box b = {0, 0, 0, 0};
    int x, y, x0 = w, y0 = h, x1 = 0, y1 = 0;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
            if (m[(size_t)y * w + x]) {
                if (x < x0) x0 = x;
                if (x >= x1) x1 = x + 1;
                if (y < y0) y0 = y;
                y1 = y + 1;
            }
    if (x1 > 0) b.x0 = (float)x0, b.y0 = (float)y0, b.x1 = (float)x1, b.y1 = (float)y1;
    return b;
}

/* "[x0, y0, x1, y1]" */
static void tb_box(text_buf *b, const sam3_box *bx) {
    tb_printf(b, "["), tb_json_number(b, bx->x0), tb_printf(b, ", "), tb_json_number(b, bx->y0), tb_printf(b, ", ");
    tb_json_number(b, bx->x1), tb_printf(b, ", "), tb_json_number(b, bx->y1), tb_printf(b, "]");
}

static int clamp_int(double v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* Each instance's mask tinted in its colour with a solid outline, then its box and score label. */
static void draw_overlay(unsigned char *rgb, int w, int h, const sam3_segment_result *seg, const int *order) {
    int k, s = line_scale(w, h);
    for (k = 0; k < seg->n_instances; k++)
        if (seg->instances[order[k]].mask) tint_mask(rgb, w, h, seg->instances[order[k]].mask, PALETTE[k % 12]);
    for (k = 0; k < seg->n_instances; k++) {
        const sam3_instance *in = &seg->instances[order[k]];
        const unsigned char *col = PALETTE[k % 12];
        int x0, y0, x1, y1;
        char label[32];
        if (!isfinite(in->box.x0) || !isfinite(in->box.y0) || !isfinite(in->box.x1) || !isfinite(in->box.y1)) continue;
        x0 = clamp_int(floor(in->box.x0), 0, w - 1), y0 = clamp_int(floor(in->box.y0), 0, h - 1);
        x1 = clamp_int(floor(in->box.x1), 0, w - 1), y1 = clamp_int(floor(in->box.y1), 0, h - 1);
        draw_box(rgb, w, h, x0, y0, x1, y1, s, col);
        snprintf(label, sizeof(label), "%.2f", in->score);
        draw_tag(rgb, w, h, x0, y0, s, label, col);
    }
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
    double now = sam3_time_ms();
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

/* segment's prompts: the -t texts, then the --concept files, or one prompt of boxes alone. */
static int seg_n_prompts(const seg_args *a) { return a->n_texts + a->n_concepts ? a->n_texts + a->n_concepts : 1; }
static const char *seg_text(const seg_args *a, int k) { return k < a->n_texts ? a->texts[k] : NULL; }
/* Prompt k's name (its folder's slug, its COCO category): the text, a concept file's name without
   folder and extension, or "boxes". */
static void seg_prompt_name(const seg_args *a, int k, char *out, size_t cap) {
    const char *p, *base, *dot;
    if (k < a->n_texts || !a->n_concepts) {
        snprintf(out, cap, "%s", a->n_texts ? a->texts[k] : "boxes");
        return;
    }
    p = a->concept_paths[k - a->n_texts];
    for (base = p; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;
    dot = strrchr(base, '.');
    snprintf(out, cap, "%.*s", (int)(dot && dot > base ? dot - base : (long)strlen(base)), base);
}

/* What one image's outputs carry besides the masks: the image's path, the settings line (the
   resumption key), and with --format coco the COCO annotations gathered over the prompts. */
typedef struct seg_image_out {
    const char *image;     /* as opened: results.json's "image" */
    const char *file_name; /* COCO's: relative to the input folder or --image-root, or as listed */
    char info[320];        /* coco.json's "info" line, without its indent */
    char settings[64]; /* "\"settings\": \"<16 hex digits>\"" */
    long image_id;     /* COCO id: 1 + the image's position in the input */
    long n_images;     /* images in the input (all shards) */
    text_buf *coco;    /* annotation lines, ",\n"-separated; NULL with --format png */
    long n_ann;
    int threads; /* the context's (sam3_ctx_n_threads): for encoding the masks */
} seg_image_out;

/* One COCO annotation line into io->coco: bbox [x, y, width, height] of the mask's bounds (mb),
   the detector's box as "detector_box" [x0, y0, x1, y1] (not clamped), area = mask pixels. */
static void coco_annotation(seg_image_out *io, int category, const sam3_instance *in, const sam3_box *mb, const char *rle, const cli_image *img) {
    text_buf *b = io->coco;
    tb_printf(b, "%s    {\"id\": %ld, \"image_id\": %ld, \"category_id\": %d, \"bbox\": [", io->n_ann ? ",\n" : "", io->n_ann + 1,
              io->image_id, category);
    tb_json_number(b, mb->x0), tb_printf(b, ", "), tb_json_number(b, mb->y0), tb_printf(b, ", ");
    tb_json_number(b, mb->x1 - mb->x0), tb_printf(b, ", "), tb_json_number(b, mb->y1 - mb->y0);
    tb_printf(b, "], \"area\": %lld, \"score\": ", (long long)in->area);
    tb_json_number(b, in->score);
    tb_printf(b, ", \"detector_box\": "), tb_box(b, &in->box);
    tb_printf(b, ", \"iscrowd\": 0, \"segmentation\": {\"size\": [%d, %d], \"counts\": ", img->h, img->w);
    tb_json_string(b, rle);
    tb_printf(b, "}}");
    io->n_ann++;
}

/* The head of results.json after the image: the prompt (its concept file, its class) and its
   settings (segment), or the grid and filters (everything). */
static void write_json_settings(text_buf *js, const seg_args *a, const char *text, const char *concept, int category,
                                const sam3_segment_result *seg) {
    int k;
    if (a->everything) {
        tb_printf(js, ",\n  \"points_per_side\": %d,\n  \"pred_iou_thresh\": ", a->evr.points_per_side);
        tb_json_number(js, a->evr.pred_iou_thresh > 0 ? a->evr.pred_iou_thresh : 0);
        tb_printf(js, ",\n  \"stability_thresh\": ");
        tb_json_number(js, a->evr.stability_score_thresh > 0 ? a->evr.stability_score_thresh : 0);
        tb_printf(js, ",\n  \"stability_offset\": ");
        tb_json_number(js, a->evr.stability_score_offset);
        tb_printf(js, ",\n  \"nms_thresh\": ");
        tb_json_number(js, a->evr.box_nms_thresh);
        tb_printf(js, ",\n  \"mask_threshold\": ");
        tb_json_number(js, a->mask_threshold);
        if (a->evr.crop_layers) {
            tb_printf(js, ",\n  \"crop_layers\": %d,\n  \"crop_overlap\": ", a->evr.crop_layers);
            tb_json_number(js, a->evr.crop_overlap_ratio);
            tb_printf(js, ",\n  \"crop_points_downscale\": %d,\n  \"crop_nms_thresh\": ", a->evr.crop_points_downscale);
            tb_json_number(js, a->evr.crop_nms_thresh);
        }
        if (a->evr.min_region_area) tb_printf(js, ",\n  \"min_region_area\": %lld", (long long)a->evr.min_region_area);
        return;
    }
    tb_printf(js, ",\n  \"prompt\": ");
    if (text) tb_json_string(js, text);
    else tb_printf(js, "null");
    if (concept) {
        tb_printf(js, ",\n  \"concept\": ");
        tb_json_string(js, concept);
    }
    if (a->classes) tb_printf(js, ",\n  \"category_id\": %d", category);
    tb_printf(js, ",\n  \"boxes\": [");
    for (k = 0; k < a->n_boxes; k++) {
        const sam3_box *b = &a->boxes[k];
        tb_printf(js, "%s{\"box\": ", k ? ", " : ""), tb_box(js, b);
        tb_printf(js, ", \"label\": \"%s\"}", a->box_labels[k] ? "pos" : "neg");
    }
    tb_printf(js, "],\n  \"threshold\": ");
    tb_json_number(js, a->threshold);
    tb_printf(js, ",\n  \"mask_threshold\": ");
    tb_json_number(js, a->mask_threshold);
    tb_printf(js, ",\n  \"presence\": ");
    tb_json_number(js, seg->presence);
}

/* Writes mask_NNN.png (--format png), overlay.png and results.json into od (put in place at the
   commit); with --format coco, the masks go into results.json and io->coco as RLE strings.
   overlay: w*h*3 scratch. ev: everything's result (seg holds it as instances), or NULL. */
static int write_outputs(cli_outdir *od, const seg_args *a, const char *text, const char *concept, int category, seg_image_out *io,
                         const cli_image *img, const unsigned char *rgb, unsigned char *overlay, const sam3_segment_result *seg,
                         const sam3_everything_result *ev) {
    int k, rc = CLI_FAIL;
    const size_t np = (size_t)img->w * img->h;
    by_score *order = (by_score *)malloc(sizeof(by_score) * (size_t)(seg->n_instances + 1));
    int *idx = (int *)malloc(sizeof(int) * (size_t)(seg->n_instances + 1));
    const uint8_t **masks = (const uint8_t **)malloc(sizeof(uint8_t *) * (size_t)(seg->n_instances + 1)); /* (n) best first */
    char **rle = (char **)calloc((size_t)(seg->n_instances + 1), sizeof(char *)); /* (n) with --format coco */
    text_buf js;
    memset(&js, 0, sizeof(js));
    if (!order || !idx || !masks || !rle) {
        cli_error("out of memory");
        goto done;
    }
    for (k = 0; k < seg->n_instances; k++) order[k].score = seg->instances[k].score, order[k].index = k;
    qsort(order, (size_t)seg->n_instances, sizeof(by_score), cmp_by_score);
    for (k = 0; k < seg->n_instances; k++) idx[k] = order[k].index;

    for (k = 0; k < seg->n_instances; k++) masks[k] = seg->instances[idx[k]].mask;
    if (io->coco && !cli_rle_strings(masks, seg->n_instances, img->w, img->h, io->threads, rle)) {
        cli_error("out of memory");
        goto done;
    }
    if (!io->coco && !write_mask_pngs(od, masks, seg->n_instances, img->w, img->h, io->threads)) goto done;

    memcpy(overlay, rgb, np * 3);
    draw_overlay(overlay, img->w, img->h, seg, idx);
    if (!write_png(od, "overlay.png", overlay, img->w, img->h, 3)) goto done;

    tb_printf(&js, "{\n  \"generator\": \"sam3 %s %s\",\n  %s,\n  \"image\": ", cli_cmd, SAM3_VERSION_STRING, io->settings);
    tb_json_string(&js, io->image);
    tb_printf(&js, ",\n  \"width\": %d,\n  \"height\": %d", img->w, img->h);
    tb_orientation(&js, img);
    write_json_settings(&js, a, text, concept, category, seg);
    tb_printf(&js, ",\n  \"instances\": [");
    for (k = 0; k < seg->n_instances; k++) {
        const sam3_instance *in = &seg->instances[idx[k]];
        const sam3_box mb = mask_bounds(in->mask, img->w, img->h);
        tb_printf(&js, "%s\n    {\"score\": ", k ? "," : "");
        tb_json_number(&js, in->score);
        if (ev) { /* instance i is everything's mask i */
            const sam3_everything_mask *e = &ev->masks[idx[k]];
            tb_printf(&js, ", \"stability\": ");
            tb_json_number(&js, e->stability);
            tb_printf(&js, ", \"point\": [");
            tb_json_number(&js, e->point.x), tb_printf(&js, ", "), tb_json_number(&js, e->point.y);
            tb_printf(&js, "]");
            if (ev->n_crops > 1) tb_printf(&js, ", \"crop\": %d", e->crop);
        }
        tb_printf(&js, ", \"box\": "), tb_box(&js, &mb), tb_printf(&js, ", \"detector_box\": "), tb_box(&js, &in->box);
        if (!io->coco) {
            tb_printf(&js, ", \"area\": %lld, \"query\": %d, \"mask\": \"mask_%03d.png\"}", (long long)in->area, in->query, k);
            continue;
        }
        /* the RLE alphabet (characters 48..111) holds '\\', escaped in JSON */
        tb_printf(&js, ", \"area\": %lld, \"query\": %d, \"segmentation\": {\"size\": [%d, %d], \"counts\": ", (long long)in->area,
                  in->query, img->h, img->w);
        tb_json_string(&js, rle[k]);
        tb_printf(&js, "}}");
        coco_annotation(io, category, in, &mb, rle[k], img);
    }
    tb_printf(&js, "%s]\n}\n", seg->n_instances ? "\n  " : "");
    if (js.oom || (io->coco && io->coco->oom)) {
        cli_error("out of memory");
        goto done;
    }
    if (!cli_outdir_write(od, CLI_OUT_MANIFEST, js.p, js.len)) {
        cli_error("%s", od->err);
        goto done;
    }
    rc = CLI_OK;
done:
    free(js.p);
    free(masks);
    free(order);
    free(idx);
    for (k = 0; rle && k < seg->n_instances; k++) free(rle[k]);
    free(rle);
    return rc;
}

/* ---- the command ---- */

static void print_prompt_name(FILE *f, const char *text, int concept, int n_boxes) {
    if (text && text[0]) fprintf(f, "%s\"%s\"%s", concept ? "concept " : "", text, n_boxes ? " + " : "");
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
    int precision;  /* SAM3_PRECISION_* for the context */
    int image_size; /* sam3_load_options.image_size for the model */
} cli_session;

static void session_free(cli_session *s) {
    sam3_ctx_free(s->ctx);
    sam3_free(s->model);
    free(s->img.pixels);
    free(s->rgb);
    free(s->overlay);
    memset(s, 0, sizeof(*s));
}

/* Loads the model (CLI_OK or CLI_FAIL after one line on stderr); s was zeroed. */
static int session_load(cli_session *s, const char *model, int quiet) {
    double t0;
    s->quiet = quiet;
    t0 = sam3_time_ms();
    if (!load_model_ex(cli_cmd, model, quiet, 0, s->image_size, &s->model)) return CLI_FAIL;
    if (!quiet) fprintf(stderr, "sam3: model %s (%.1f MB) loaded in %s\n", model, sam3_model_file_size(s->model) / 1e6, fmt_ms(sam3_time_ms() - t0));
    return CLI_OK;
}

/* Makes the context (if not yet made) and runs the image encoder on the image file. */
static int session_encode(cli_session *s, const char *image, int threads, int blas_threads, unsigned long long max_pixels, int keep) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_result r;
    double t0 = sam3_time_ms();
    size_t i, np;
    int c, n;
    if (read_image(image, max_pixels, keep, &s->img) != CLI_OK) return CLI_FAIL;
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
                n == 1 ? "grey" : "RGB", fmt_ms(sam3_time_ms() - t0));
    co.n_threads = threads;
    co.blas_threads = blas_threads;
    co.precision = s->precision;
    if (!s->quiet) {
        co.progress_fn = on_progress;
        co.progress_user = &s->prog;
        s->prog.tty = cli_isatty(stderr);
    }
    if (!s->ctx && (r = sam3_ctx_new(s->model, &co, &s->ctx)) != SAM3_OK) {
        cli_error("cannot create a context: %s", sam3_result_string(r));
        return CLI_FAIL;
    }
    s->prog.t_start = s->prog.t_last = sam3_time_ms();
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

/* Forgets the image (keeps the model and the context, whose image features the next
   sam3_set_image replaces). */
static void session_drop_image(cli_session *s) {
    free(s->img.pixels);
    free(s->rgb);
    free(s->overlay);
    memset(&s->img, 0, sizeof(s->img));
    s->rgb = s->overlay = NULL;
}

/* The file name in a path (after its last '/' or '\\'). */
static const char *path_base(const char *path) {
    const char *b = path + strlen(path);
    while (b > path && b[-1] != '/' && b[-1] != '\\') b--;
    return b;
}

/* coco.json's "info" entry: description, version, model file name, year and date_created (UTC;
   SOURCE_DATE_EPOCH, when set to seconds since 1970, stands for now: reproducible files). */
static void coco_info(const char *model, char *out, size_t cap) {
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t now = time(NULL);
    struct tm *t;
    text_buf b;
    char *end;
    if (sde && *sde) {
        long long v = strtoll(sde, &end, 10);
        if (!*end && v >= 0 && v < 253402300800ll) now = (time_t)v; /* before year 10000 */
    }
    t = gmtime(&now);
    memset(&b, 0, sizeof(b));
    tb_printf(&b, "\"info\": {\"description\": \"sam3.h\", \"version\": \"%s\", \"model\": ", SAM3_VERSION_STRING);
    tb_json_string(&b, path_base(model));
    if (t) tb_printf(&b, ", \"year\": %d, \"date_created\": \"%04d-%02d-%02d\"}", t->tm_year + 1900, t->tm_year + 1900, t->tm_mon + 1, t->tm_mday);
    else tb_printf(&b, "}");
    snprintf(out, cap, "%s", b.p && !b.oom && b.len < cap ? b.p : "\"info\": {\"description\": \"sam3.h\"}");
    free(b.p);
}

/* The --concept files, for the model m (one that another model made is refused, by name). */
static int seg_load_concepts(seg_args *a, const sam3_model *m) {
    int k;
    for (k = 0; k < a->n_concepts; k++)
        if (!load_concept(a->concept_paths[k], m, &a->concepts[k])) return CLI_FAIL;
    return CLI_OK;
}

/* The "settings" entry of results.json and coco.json: a hash of what changes an image's outputs
   (version, model file name and size, input size, prompts, boxes, thresholds, format). A dataset rerun skips
   an image whose outputs carry the same entry. */
static void seg_settings(const seg_args *a, const sam3_model *m, char *out, size_t cap) {
    uint64_t h = 14695981039346656037ull;
    const char *base = path_base(a->c.model);
    char num[128];
    int k;
    cli_ds_hash_str(&h, a->everything ? "sam3 everything " SAM3_VERSION_STRING : "sam3 segment " SAM3_VERSION_STRING);
    cli_ds_hash_str(&h, "outputs 2"); /* the layout (box = mask bounds, COCO info): older folders are redone */
    cli_ds_hash_str(&h, base);
    snprintf(num, sizeof(num), "%llu %d %d %.9g %.9g %d", (unsigned long long)sam3_model_file_size(m), a->n_texts, a->n_boxes,
             a->threshold, a->mask_threshold, a->coco);
    cli_ds_hash_str(&h, num);
    if (a->c.image_size) { /* the file's own size leaves the entry as it was */
        snprintf(num, sizeof(num), "image_size %d", a->c.image_size);
        cli_ds_hash_str(&h, num);
    }
    snprintf(num, sizeof(num), "%d %.9g %.9g %.9g %.9g", a->evr.points_per_side, a->evr.pred_iou_thresh, a->evr.stability_score_thresh,
             a->evr.stability_score_offset, a->evr.box_nms_thresh);
    if (a->everything) cli_ds_hash_str(&h, num);
    if (a->everything && (a->evr.crop_layers || a->evr.min_region_area)) { /* older folders keep their settings */
        snprintf(num, sizeof(num), "crops %d %.17g %d %.9g %lld", a->evr.crop_layers, a->evr.crop_overlap_ratio, a->evr.crop_points_downscale,
                 a->evr.crop_nms_thresh, (long long)a->evr.min_region_area);
        cli_ds_hash_str(&h, num);
    }
    for (k = 0; k < a->n_texts; k++) cli_ds_hash_str(&h, a->texts[k]);
    if (a->classes) cli_ds_hash_str(&h, "--classes"); /* results.json carries category_id */
    for (k = 0; k < a->n_concepts; k++) { /* a concept by its bytes: a new file under an old name is a new setting */
        size_t n = 0;
        unsigned char *b = NULL;
        cli_ds_hash_str(&h, a->concept_paths[k]);
        if (sam3_concept_save(a->concepts[k], NULL, 0, &n) == SAM3_OK && (b = (unsigned char *)malloc(n)) &&
            sam3_concept_save(a->concepts[k], b, n, &n) == SAM3_OK) {
            size_t j;
            for (j = 0; j < n; j++) h = (h ^ b[j]) * 1099511628211ull;
        }
        free(b);
    }
    for (k = 0; k < a->n_boxes; k++) {
        const sam3_box *b = &a->boxes[k];
        snprintf(num, sizeof(num), "%.9g %.9g %.9g %.9g %d", b->x0, b->y0, b->x1, b->y1, a->box_labels[k]);
        cli_ds_hash_str(&h, num);
    }
    snprintf(out, cap, "\"settings\": \"%016llx\"", (unsigned long long)h);
}

/* sam3 everything on the encoded image, its masks as segment's instances (score = predicted
   IoU, query = the click) so that one writer serves both; *inst (malloc'd) is the caller's. */
static int everything_run(sam3_ctx *ctx, const seg_args *a, const cli_image *img, sam3_everything_result *ev, sam3_segment_result *seg,
                          sam3_instance **inst) {
    const double t0 = sam3_time_ms();
    sam3_everything_options o = a->evr;
    sam3_result r;
    int k;
    o.pixels = img->pixels; /* the crop layers encode crops of the image sam3_set_image had */
    o.stride = img->w * img->channels;
    o.format = img->format;
    r = sam3_segment_everything(ctx, &o, ev);
    memset(seg, 0, sizeof(*seg));
    if (r < 0) {
        cli_error("%s", sam3_ctx_last_error(ctx));
        return CLI_FAIL;
    }
    if (!(*inst = (sam3_instance *)calloc((size_t)ev->n_masks + 1, sizeof(sam3_instance)))) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    for (k = 0; k < ev->n_masks; k++) {
        (*inst)[k].score = ev->masks[k].iou;
        (*inst)[k].box = ev->masks[k].box;
        (*inst)[k].query = ev->masks[k].click;
        (*inst)[k].area = ev->masks[k].area;
        (*inst)[k].mask = ev->masks[k].mask;
    }
    seg->n_instances = ev->n_masks;
    seg->instances = *inst;
    seg->width = ev->width;
    seg->height = ev->height;
    if (!a->c.quiet)
        fprintf(stderr, "sam3: everything: %d mask%s kept of %d (%d passed the filters) from %d clicks in %s (interactive neck %s)\n",
                ev->n_masks, ev->n_masks == 1 ? "" : "s", ev->n_candidates, ev->n_filtered, ev->n_points, fmt_ms(sam3_time_ms() - t0),
                fmt_ms(sam3_ctx_timings(ctx).interactive_neck));
    return CLI_OK;
}

/* Prompt k of segment: the k-th -t or --concept (after the texts), with the --box exemplars. */
static void seg_prompt_of(const seg_args *a, int k, sam3_segment_prompt *pr) {
    memset(pr, 0, sizeof(*pr));
    if (k >= a->n_texts && a->n_concepts) {
        pr->concepts = (const sam3_concept *const *)&a->concepts[k - a->n_texts];
        pr->n_concepts = 1;
    }
    pr->text = seg_text(a, k);
    pr->boxes = a->n_boxes ? a->boxes : NULL;
    pr->box_labels = a->n_boxes ? a->box_labels : NULL;
    pr->n_boxes = a->n_boxes;
}

/* Prompts k0 .. k0+n-1 in one sam3_segment_many call (the image's work shared, each result as
   that prompt alone gives it), then each one's outputs (NN_SLUG/ folders for several prompts). */
static int segment_group(cli_session *ss, const seg_args *a, cli_outdir *od, seg_image_out *io, const sam3_segment_options *so, int k0,
                         int n, double *t_write, int *n_last) {
    sam3_segment_prompt pr[SEG_GROUP];
    sam3_segment_result seg[SEG_GROUP];
    sam3_ctx *ctx = ss->ctx;
    int i, n_prompts = seg_n_prompts(a);
    double t0 = sam3_time_ms(), t_all;
    char sub[80], slug[64], name[256];
    sam3_result r;
    for (i = 0; i < n; i++) seg_prompt_of(a, k0 + i, &pr[i]);
    r = sam3_segment_many(ctx, pr, n, so, seg);
    t_all = sam3_time_ms() - t0;
    if (r < 0) {
        fprintf(stderr, "sam3 segment: %s\n", sam3_ctx_last_error(ctx));
        return CLI_FAIL;
    }
    for (i = 0; i < n; i++) {
        const int k = k0 + i;
        const char *text = seg_text(a, k);
        cli_outdir *dir = od;
        seg_prompt_name(a, k, name, sizeof(name));
        if (!ss->quiet) {
            sam3_timings t = sam3_ctx_timings(ctx);
            fprintf(stderr, "sam3: ");
            print_prompt_name(stderr, text ? text : pr[i].n_concepts ? name : NULL, pr[i].n_concepts, a->n_boxes);
            fprintf(stderr, ": %d instance%s (presence %.2f)", seg[i].n_instances, seg[i].n_instances == 1 ? "" : "s", seg[i].presence);
            if (n == 1)
                fprintf(stderr, " in %s (text %s, boxes %s, DETR encoder %s, decoder %s, masks %s, post %s)", fmt_ms(t_all), fmt_ms(t.text),
                        fmt_ms(t.geometry), fmt_ms(t.detr_encoder), fmt_ms(t.detr_decoder), fmt_ms(t.mask_decoder), fmt_ms(t.postprocess));
            fprintf(stderr, "\n");
            if (seg[i].text_truncated) fprintf(stderr, "sam3: note: the text was cut to the model's %d tokens\n", seg[i].n_text_tokens);
        }
        if (n_prompts > 1) {
            make_slug(name, slug, sizeof(slug));
            snprintf(sub, sizeof(sub), "%02d_%s", k, slug);
            if (!(dir = cli_outdir_open_sub(od, sub, CLI_OUT_MANIFEST, CLI_OUT_MARKER, a->c.force))) {
                cli_error("%s", od->err);
                return CLI_FAIL;
            }
        }
        t0 = sam3_time_ms();
        if (write_outputs(dir, a, text, pr[i].n_concepts ? a->concept_paths[k - a->n_texts] : NULL, k + 1, io, &ss->img, ss->rgb, ss->overlay,
                          &seg[i], NULL) != CLI_OK)
            return CLI_FAIL;
        *t_write += sam3_time_ms() - t0;
        *n_last = seg[i].n_instances;
    }
    if (n > 1 && !ss->quiet) {
        sam3_timings t = sam3_ctx_timings(ctx);
        fprintf(stderr, "sam3: %d prompts in one pass: %s (text %s, boxes %s, DETR encoder %s, decoder %s, masks %s, post %s)\n", n,
                fmt_ms(t_all), fmt_ms(t.text), fmt_ms(t.geometry), fmt_ms(t.detr_encoder), fmt_ms(t.detr_decoder), fmt_ms(t.mask_decoder),
                fmt_ms(t.postprocess));
    }
    return CLI_OK;
}

/* Runs every prompt on the image encoded in ss and writes the outputs into od (committed by the
   caller): results.json, masks and overlay.png (in NN_SLUG/ folders for several -t), and with
   --format coco the image's coco.json. */
static int segment_image(cli_session *ss, const seg_args *a, cli_outdir *od, seg_image_out *io, double *t_write, int *n_last) {
    sam3_segment_options so = sam3_segment_options_default();
    sam3_ctx *ctx = ss->ctx;
    int k, rc = CLI_FAIL, n_prompts = seg_n_prompts(a);
    double t0;
    text_buf coco, cj;
    memset(&coco, 0, sizeof(coco));
    memset(&cj, 0, sizeof(cj));
    io->coco = a->coco ? &coco : NULL;
    io->n_ann = 0;
    io->threads = sam3_ctx_n_threads(ctx);

    /* The library reads a threshold of 0 as "default"; every probability is above -1. */
    so.score_threshold = a->threshold > 0 ? a->threshold : -1.0f;
    so.mask_threshold = a->mask_threshold > 0 ? a->mask_threshold : -1.0f;
    if (a->everything) {
        sam3_segment_result seg;
        sam3_everything_result ev;
        sam3_instance *inst = NULL;
        int ok = everything_run(ctx, a, &ss->img, &ev, &seg, &inst) == CLI_OK;
        t0 = sam3_time_ms();
        ok = ok && write_outputs(od, a, NULL, NULL, 1, io, &ss->img, ss->rgb, ss->overlay, &seg, &ev) == CLI_OK;
        *t_write += sam3_time_ms() - t0;
        *n_last = seg.n_instances;
        free(inst);
        if (!ok) goto done;
    } else {
        /* SEG_GROUP prompts a call: their results (masks) are held together until written */
        for (k = 0; k < n_prompts; k += SEG_GROUP)
            if (segment_group(ss, a, od, io, &so, k, n_prompts - k < SEG_GROUP ? n_prompts - k : SEG_GROUP, t_write, n_last) != CLI_OK) goto done;
    }
    if (a->coco) { /* one line per item: cli_dataset.c's merge reads this layout */
        tb_printf(&cj, "{\n  \"generator\": \"sam3 %s %s\",\n  %s,\n  \"run\": {\"images\": %ld", cli_cmd, SAM3_VERSION_STRING, io->settings,
                  io->n_images);
        if (a->shard_n) tb_printf(&cj, ", \"shard\": \"%d/%d\"", a->shard_i, a->shard_n);
        tb_printf(&cj, "},\n  %s,\n  \"licenses\": [],\n  \"images\": [\n    {\"id\": %ld, \"file_name\": ", io->info, io->image_id);
        tb_json_string(&cj, io->file_name);
        tb_printf(&cj, ", \"width\": %d, \"height\": %d}\n  ],\n  \"annotations\": [\n", ss->img.w, ss->img.h);
        if (coco.len) tb_printf(&cj, "%s\n", coco.p);
        tb_printf(&cj, "  ],\n  \"categories\": [\n");
        for (k = 0; k < n_prompts; k++) {
            char name[256];
            seg_prompt_name(a, k, name, sizeof(name));
            tb_printf(&cj, "    {\"id\": %d, \"name\": ", k + 1);
            tb_json_string(&cj, a->everything ? "object" : name);
            tb_printf(&cj, "}%s\n", k + 1 < n_prompts ? "," : "");
        }
        tb_printf(&cj, "  ]\n}\n");
        if (cj.oom || coco.oom) {
            cli_error("out of memory");
            goto done;
        }
        if (!cli_outdir_write(od, "coco.json", cj.p, cj.len)) {
            cli_error("%s", od->err);
            goto done;
        }
    }
    rc = CLI_OK;
done:
    free(coco.p);
    free(cj.p);
    io->coco = NULL;
    return rc;
}

/* segment needs a SAM 3 detector, everything an interactive head; 0 after the message. */
static int model_fits(const cli_session *ss, const seg_args *a) {
    if (a->everything && !sam3_model_has_points(ss->model))
        cli_error("'%s' has no interactive head (a detector-only SAM 3 file): 'sam3 everything' needs one", a->c.model);
    else if (!a->everything && model_is_sam1(ss->model))
        cli_error("'%s' is a SAM 1 model, which has no text or exemplar-box head: use 'sam3 points' (clicks, a box)", a->c.model);
    else
        return 1;
    return 0;
}

static int run_segment(seg_args *a) {
    cli_session ss;
    cli_outdir od;
    seg_image_out io;
    int rc = CLI_FAIL, n_prompts = seg_n_prompts(a), n_last = 0, oom = 0;
    double t0, t_write = 0;
    char *rel_name = NULL; /* the --image-root file_name */

    cli_cmd = a->everything ? "everything" : "segment";
    memset(&ss, 0, sizeof(ss));
    ss.precision = a->c.precision;
    ss.image_size = a->c.image_size;
    memset(&io, 0, sizeof(io));
    if (!cli_outdir_open(&od, a->c.outdir, SEG_OUT_NAMES, CLI_OUT_MANIFEST, CLI_OUT_MARKER, a->c.force)) { /* before the slow parts */
        cli_error("%s", od.err);
        goto done;
    }
    if (session_load(&ss, a->c.model, a->c.quiet) != CLI_OK) goto done;
    if (!model_fits(&ss, a)) goto done;
    if (seg_load_concepts(a, ss.model) != CLI_OK) goto done;
    if (session_encode(&ss, a->c.image, a->c.threads, a->c.blas_threads, a->c.max_pixels, a->c.keep_orientation) != CLI_OK) goto done;
    io.image = io.file_name = a->c.image;
    io.image_id = 1;
    io.n_images = 1;
    if (a->image_root && !(io.file_name = rel_name = cli_ds_relative(a->c.image, a->image_root, &oom))) {
        cli_error(oom ? "out of memory%s%s" : "'%s' is not inside --image-root '%s' (compared as written, made absolute: links are not followed)",
                  oom ? "" : a->c.image, oom ? "" : a->image_root);
        goto done;
    }
    seg_settings(a, ss.model, io.settings, sizeof(io.settings));
    coco_info(a->c.model, io.info, sizeof(io.info));
    if (segment_image(&ss, a, &od, &io, &t_write, &n_last) != CLI_OK) goto done;
    t0 = sam3_time_ms();
    if (!cli_outdir_commit(&od)) {
        cli_error("%s", od.err);
        goto done;
    }
    t_write += sam3_time_ms() - t0;
    if (!a->c.quiet) {
        if (n_prompts == 1)
            fprintf(stderr, "sam3: wrote %s/: results.json, %d mask%s, overlay.png in %s\n", a->c.outdir, n_last, n_last == 1 ? "" : "s",
                    fmt_ms(t_write));
        else
            fprintf(stderr, "sam3: wrote %s/: %d folders (results.json, masks, overlay.png) in %s\n", a->c.outdir, n_prompts, fmt_ms(t_write));
    }
    rc = CLI_OK;
done:
    free(rel_name);
    cli_outdir_close(&od);
    session_free(&ss);
    return rc;
}

/* 1 when OUTDIR/STEM holds the complete outputs of this image with these settings: every
   manifest (results.json, or NN_SLUG/results.json for several -t; and coco.json with this
   image's id and path) present, written by sam3 and carrying the settings entry. A manifest is
   put in place after everything it lists, so a half-done image has none of them or old ones. */
static int seg_image_done(const seg_args *a, const char *dir, const seg_image_out *io) {
    char p[4200], slug[64], name[256];
    int k, n_prompts = seg_n_prompts(a);
#if !defined(_WIN32)
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return 0; /* a link there is refused when opened */
#endif
    for (k = 0; k < n_prompts; k++) {
        if (n_prompts == 1) {
            snprintf(p, sizeof(p), "%s/%s", dir, CLI_OUT_MANIFEST);
        } else {
            seg_prompt_name(a, k, name, sizeof(name));
            make_slug(name, slug, sizeof(slug));
            snprintf(p, sizeof(p), "%s/%02d_%s/%s", dir, k, slug, CLI_OUT_MANIFEST);
        }
        if (!cli_ds_file_has(p, CLI_OUT_MARKER, io->settings)) return 0;
    }
    if (a->coco) {
        text_buf want;
        int ok;
        memset(&want, 0, sizeof(want));
        tb_printf(&want, "    {\"id\": %ld, \"file_name\": ", io->image_id);
        tb_json_string(&want, io->file_name);
        snprintf(p, sizeof(p), "%s/coco.json", dir);
        ok = !want.oom && cli_ds_file_has(p, CLI_OUT_MARKER, io->settings) && cli_ds_file_has(p, CLI_OUT_MARKER, want.p);
        free(want.p);
        return ok;
    }
    return 1;
}

/* -i FOLDER or -i @LIST: every image (of this shard) into OUTDIR/STEM/, one model and one
   context for all; images done before with the same settings are skipped; a failed image is
   reported and the others go on (exit status 1 at the end). Without --shard and with --format
   coco, OUTDIR/coco.json merges every image's coco.json. */
static int run_segment_dataset(seg_args *a) {
    cli_ds_list l;
    cli_session ss;
    seg_image_out io;
    cli_outdir top_od;
    int k, n_done = 0, n_skipped = 0, n_failed = 0, n_mine = 0, rc = CLI_FAIL;
    char **coco_paths = NULL; /* (n_coco) the images' coco.json, in input order */
    int n_coco = 0;
    double t_run = sam3_time_ms();
    cli_items prog;

    cli_cmd = a->everything ? "everything" : "segment";
    memset(&ss, 0, sizeof(ss));
    ss.precision = a->c.precision;
    ss.image_size = a->c.image_size;
    memset(&io, 0, sizeof(io));
    memset(&top_od, 0, sizeof(top_od));
    top_od.fd = -1;
    if (cli_ds_list_build(&l, a->c.image) != CLI_OK) return CLI_FAIL;
    if (a->image_root && cli_ds_list_rebase(&l, a->image_root) != CLI_OK) {
        cli_ds_list_free(&l);
        return CLI_FAIL;
    }
    if (!a->c.quiet && l.ignored)
        fprintf(stderr, "sam3: %s: %d file%s not named *.jpg, *.jpeg or *.png ignored\n", a->c.image, l.ignored, l.ignored == 1 ? "" : "s");
    if (!cli_outdir_lock_only(&top_od, a->c.outdir)) { /* one run writes an OUTDIR at a time */
        cli_error("%s", top_od.err);
        goto done;
    }
    if (a->coco && !a->shard_n) {
        char top[4400];
        snprintf(top, sizeof(top), "%s/coco.json", a->c.outdir);
        if (!a->c.force && !access(top, F_OK) && !cli_ds_file_has(top, CLI_OUT_MARKER, "")) {
            cli_error("'%s' was not written by sam3: choose another OUTDIR, or pass --force to replace it", top);
            goto done;
        }
        if (!(coco_paths = (char **)calloc((size_t)l.n, sizeof(char *)))) {
            cli_error("out of memory");
            goto done;
        }
    }
    if (session_load(&ss, a->c.model, a->c.quiet) != CLI_OK) goto done;
    ss.quiet = a->c.quiet || !a->c.verbose; /* each image's stages: -v; else a line an image */
    if (!model_fits(&ss, a)) goto done;
    if (seg_load_concepts(a, ss.model) != CLI_OK) goto done;
    seg_settings(a, ss.model, io.settings, sizeof(io.settings));
    coco_info(a->c.model, io.info, sizeof(io.info));
    memset(&prog, 0, sizeof(prog));
    prog.n = a->shard_n ? (l.n - a->shard_i + a->shard_n - 1) / a->shard_n : l.n; /* this shard's images */
    for (k = 0; k < l.n; k++) {
        char dir[4096];
        cli_outdir od;
        double t_write = 0, t_img = sam3_time_ms();
        int n_last = 0, ok;
        if (a->shard_n && k % a->shard_n != a->shard_i) continue;
        n_mine++;
        io.image = l.paths[k];
        io.file_name = l.names[k];
        io.image_id = k + 1;
        io.n_images = l.n;
        if (snprintf(dir, sizeof(dir), "%s/%s", a->c.outdir, l.stems[k]) >= (int)sizeof(dir)) {
            cli_error("output folder path too long for '%s'", l.paths[k]);
            n_failed++;
            continue;
        }
        if (seg_image_done(a, dir, &io)) {
            n_skipped++;
            if (!a->c.quiet) cli_items_line(&prog, n_mine, l.names[k], -1, "skipped (done before)");
        } else {
            if (!ss.quiet) fprintf(stderr, "sam3: image %d of the input: %s -> %s/\n", k + 1, l.paths[k], dir);
            ok = cli_outdir_open_at(&od, a->c.outdir, l.stems[k], SEG_OUT_NAMES, CLI_OUT_MANIFEST, CLI_OUT_MARKER, a->c.force);
            if (!ok) cli_error("%s", od.err);
            ok = ok && session_encode(&ss, l.paths[k], a->c.threads, a->c.blas_threads, a->c.max_pixels, a->c.keep_orientation) == CLI_OK;
            ok = ok && segment_image(&ss, a, &od, &io, &t_write, &n_last) == CLI_OK;
            t_write -= sam3_time_ms();
            if (ok && !(ok = cli_outdir_commit(&od))) cli_error("%s", od.err);
            t_write += sam3_time_ms();
            cli_outdir_close(&od);
            session_drop_image(&ss);
            if (!ok) {
                fprintf(stderr, "sam3 %s: image '%s' failed (see above); going on with the others\n", cli_cmd, l.paths[k]);
                if (!a->c.quiet) cli_items_line(&prog, n_mine, l.names[k], -1, "failed");
                n_failed++;
                continue;
            }
            if (!ss.quiet) fprintf(stderr, "sam3: writing %s/: %s\n", dir, fmt_ms(t_write));
            if (!a->c.quiet) cli_items_line(&prog, n_mine, l.names[k], sam3_time_ms() - t_img, NULL);
            n_done++;
        }
        if (coco_paths) {
            if (!(coco_paths[n_coco] = (char *)malloc(strlen(dir) + 11))) {
                cli_error("out of memory");
                goto done;
            }
            sprintf(coco_paths[n_coco++], "%s/coco.json", dir);
        }
    }
    if (coco_paths && n_coco) {
        char top[4400];
        long n_ann = 0;
        snprintf(top, sizeof(top), "%s/coco.json", a->c.outdir);
        /* (images that failed are reported above and make the exit status 1: the rest is merged) */
        if (cli_ds_coco_merge((const char *const *)coco_paths, n_coco, top, n_failed > 0, &n_ann) != CLI_OK) n_failed++;
        else if (!a->c.quiet) fprintf(stderr, "sam3: wrote %s: %d images, %ld annotations\n", top, n_coco, n_ann);
    }
    if (!a->c.quiet || n_failed)
        fprintf(stderr, "sam3 %s: %d image%s%s: %d done, %d skipped (done before), %d failed in %s\n", cli_cmd, n_mine, n_mine == 1 ? "" : "s",
                a->shard_n ? " in this shard" : "", n_done, n_skipped, n_failed, fmt_ms(sam3_time_ms() - t_run));
    rc = n_failed ? CLI_FAIL : CLI_OK;
done:
    for (k = 0; k < n_coco; k++) free(coco_paths[k]);
    free(coco_paths);
    cli_ds_list_free(&l);
    session_free(&ss);
    cli_outdir_close(&top_od); /* (removes OUTDIR only when this run made it and it stayed empty) */
    return rc;
}

static int cmd_segment(int argc, char **argv) {
    seg_args a;
    int k, help, rc = parse_segment_args(argc, argv, &a, &help);
    if (rc != CLI_OK || help) {
        free(a.classes);
        return rc;
    }
    if (cli_ds_is_dataset(a.c.image)) rc = run_segment_dataset(&a);
    else if (a.shard_n) rc = usage_error("segment", "--shard needs -i FOLDER or -i @LIST (many images), not one file '%s'", a.c.image);
    else rc = run_segment(&a);
    for (k = 0; k < a.n_concepts; k++) sam3_concept_free(a.concepts[k]);
    free(a.classes);
    return rc;
}

static const char *CONCEPT_HELP =
    "usage: sam3 concept -m FILE -i IMAGE [-t TEXT] [--box x0,y0,x1,y1[,neg]]... -o NAME.concept [options]\n"
    "\n"
    "Saves a prompt for reuse: the text's features and the exemplar boxes' tokens, computed on IMAGE\n"
    "(where the boxes were drawn), with the model's fingerprint. 'sam3 segment --concept NAME.concept'\n"
    "then finds that concept in other images with the same model (another model's concept is refused).\n"
    "On IMAGE itself it gives exactly what -t and --box give.\n"
    "\n"
    "  -m, --model FILE            the .sam3 file\n"
    "  -i, --image IMAGE           the JPEG or PNG the boxes are drawn on\n"
    "  -t, --text TEXT             the concept's text (one)\n"
    "  -b, --box x0,y0,x1,y1[,L]   an exemplar box in IMAGE's pixels; L pos (default) or neg; repeatable\n"
    "  -o, --output FILE           the concept file to write (replaced if it exists)\n"
    "  --max-pixels N, --keep-orientation, --threads N, --blas-threads B, --precision bf16|f32, -q\n"
    "                              as for segment\n"
    "\n"
    "Exit status: 0 done, 1 failed, 2 bad command line.\n";

/* sam3 concept: one prompt on one image, saved (written to NAME.tmp, then renamed into place). */
static int cmd_concept(int argc, char **argv) {
    seg_args a;
    cli_session ss;
    sam3_concept *k = NULL;
    const char *v, *text = NULL;
    unsigned char *buf = NULL;
    char tmp[4200];
    size_t n = 0;
    int i, r, rc = CLI_FAIL, nt = 0;
    FILE *f;
    memset(&a, 0, sizeof(a));
    a.c.blas_threads = 1;
    cli_cmd = "concept";
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(CONCEPT_HELP, stdout);
            return CLI_OK;
        }
        if ((r = parse_common_arg("concept", argc, argv, &i, &a.c)) != 0) {
            if (r < 0) return CLI_USAGE;
            continue;
        }
        if ((r = opt_value(argc, argv, &i, "-t", "--text", &v)) > 0) {
            if (text) return usage_error("concept", "one -t TEXT per concept (got also '%s')", v);
            text = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, "-b", "--box", &v)) > 0) {
            const char *why;
            if (a.n_boxes == SAM3_MAX_BOXES) return usage_error("concept", "too many boxes%s", NULL);
            if ((why = parse_box(v, &a.boxes[a.n_boxes], &a.box_labels[a.n_boxes])) != NULL) {
                fprintf(stderr, "sam3 concept: bad box '%s': %s (try 'sam3 concept --help')\n", v, why);
                return CLI_USAGE;
            }
            a.n_boxes++;
        } else {
            return usage_error("concept", r < 0 ? "option '%s' needs a value" : argv[i][0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
                               argv[i]);
        }
    }
    if (check_common_args("concept", &a.c) != CLI_OK) return CLI_USAGE;
    if ((!text || !text[0]) && !a.n_boxes) return usage_error("concept", "nothing to save: give -t TEXT and/or --box%s", NULL);
    if (cli_ds_is_dataset(a.c.image)) return usage_error("concept", "-i takes one image (the one the boxes are drawn on), not '%s'", a.c.image);
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", a.c.outdir) >= (int)sizeof(tmp)) return usage_error("concept", "output path too long: '%s'", a.c.outdir);
    memset(&ss, 0, sizeof(ss));
    ss.precision = a.c.precision;
    if (session_load(&ss, a.c.model, a.c.quiet) != CLI_OK) goto done;
    if (model_is_sam1(ss.model)) {
        cli_error("'%s' is a SAM 1 model, which has no text or exemplar-box head", a.c.model);
        goto done;
    }
    if (session_encode(&ss, a.c.image, a.c.threads, a.c.blas_threads, a.c.max_pixels, a.c.keep_orientation) != CLI_OK) goto done;
    {
        sam3_segment_prompt pr;
        memset(&pr, 0, sizeof(pr));
        pr.text = text;
        pr.boxes = a.n_boxes ? a.boxes : NULL;
        pr.box_labels = a.n_boxes ? a.box_labels : NULL;
        pr.n_boxes = a.n_boxes;
        r = sam3_concept_new(ss.ctx, &pr, &k);
    }
    if (r < 0) {
        cli_error("%s", sam3_ctx_last_error(ss.ctx));
        goto done;
    }
    if (r == SAM3_TRUNCATED && !a.c.quiet) fprintf(stderr, "sam3: note: the text was cut to the model's context\n");
    if (sam3_concept_save(k, NULL, 0, &n) != SAM3_OK || !(buf = (unsigned char *)malloc(n)) || sam3_concept_save(k, buf, n, &n) != SAM3_OK) {
        cli_error("out of memory");
        goto done;
    }
    if (!(f = fopen(tmp, "wb"))) {
        cli_error("cannot write '%s': %s", tmp, strerror(errno));
        goto done;
    }
    r = fwrite(buf, 1, n, f) == n;
    r = (fclose(f) == 0) && r;
    if (!r || rename(tmp, a.c.outdir) != 0) {
        cli_error("cannot write '%s': %s", a.c.outdir, strerror(errno));
        remove(tmp);
        goto done;
    }
    if (!a.c.quiet) {
        int tok = sam3_concept_n_tokens(k, &nt);
        fprintf(stderr, "sam3: wrote %s: %d tokens (%d text, %d from %d box%s), %lu bytes\n", a.c.outdir, tok, nt, tok - nt, a.n_boxes,
                a.n_boxes == 1 ? "" : "es", (unsigned long)n);
    }
    rc = CLI_OK;
done:
    free(buf);
    sam3_concept_free(k);
    session_free(&ss);
    return rc;
}

static int cmd_everything(int argc, char **argv) {
    seg_args a;
    int help, rc = parse_everything_args(argc, argv, &a, &help);
    if (rc != CLI_OK || help) return rc;
    if (cli_ds_is_dataset(a.c.image)) return run_segment_dataset(&a);
    if (a.shard_n) return usage_error("everything", "--shard needs -i FOLDER or -i @LIST (many images), not one file '%s'", a.c.image);
    return run_segment(&a);
}

static const char *MERGE_HELP =
    "usage: sam3 merge -o OUT.json DIR... [--partial] [-q]\n"
    "\n"
    "Merges the per-image coco.json files that 'sam3 segment -i FOLDER|@LIST --format coco' wrote into\n"
    "DIR/STEM/ (every subfolder of every DIR that holds one; e.g. the OUTDIRs of the shards of a\n"
    "--shard run) into one COCO file: images sorted by id (1 + the image's position in the input),\n"
    "annotations numbered from 1 in that order, the categories (the prompts) once, the latest \"info\"\n"
    "(its date_created; runs on other days differ only there). The result is the coco.json an\n"
    "unsharded run writes. The files must come from runs with the same settings (model, prompts,\n"
    "boxes, thresholds, version) and have distinct image ids, or nothing is written. Every line is\n"
    "checked (JSON, an annotation of its own image and categories). Every image of the run must be\n"
    "there (the missing ones are named, with their shard) unless --partial.\n"
    "Exit status: 0 done, 1 failed (an incomplete set included), 2 bad command line.\n";

static int cmd_merge(int argc, char **argv) {
    const char *out = NULL, *v;
    const char **dirs = (const char **)malloc(sizeof(char *) * (size_t)(argc + 1));
    int i, r, n = 0, quiet = 0, partial = 0;
    cli_cmd = "merge";
    if (!dirs) return CLI_FAIL;
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(MERGE_HELP, stdout);
            free(dirs);
            return CLI_OK;
        }
        if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else if (!strcmp(argv[i], "--partial")) {
            partial = 1;
        } else if ((r = opt_value(argc, argv, &i, "-o", "--output", &v)) > 0) {
            out = v;
        } else if (r < 0 || argv[i][0] == '-') {
            free(dirs);
            return usage_error("merge", r < 0 ? "option '%s' needs a value" : "unknown option '%s'", argv[i]);
        } else {
            dirs[n++] = argv[i];
        }
    }
    if (!out || !n) {
        free(dirs);
        return usage_error("merge", "usage: sam3 merge -o OUT.json DIR...%s", "");
    }
    r = cli_ds_merge_dirs(dirs, n, out, partial, quiet);
    free(dirs);
    return r;
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
    "                 x1, y1] or null, \"mask_prompt\": the --mask file or null, \"object_score_logit\":\n"
    "                 > 0 when the model sees an object (null for SAM 1, which has no such head),\n"
    "                 \"best\": the index of the mask with the highest predicted IoU, \"masks\": [{\"iou\",\n"
    "                 \"box\" (the mask's bounds), \"area\", \"mask\": \"mask_000.png\"}, ...]}; point labels 1 =\n"
    "                 object, 0 = background\n"
    "  mask_NNN.png   one 8-bit PNG per mask, the image's size: 255 = object, 0 = background\n"
    "  overlay.png    the image with the best mask, the box (yellow) and the clicks (green: object,\n"
    "                 red: background; white rim)\n"
    "results.json is put in place last. By default the model gives 3 candidate masks (an ambiguous click\n"
    "may mean a part, the object or a group), in the model's order; --single asks for one.\n"
    "\n"
    "  -m, --model FILE            the .sam3 file\n"
    "  -i, --image IMAGE           a JPEG or PNG file (nothing else: see IMAGES below)\n"
    "  -p, --point x,y[,L]         a click in image pixels; L is pos (on the object, the default) or neg\n"
    "                              (background), also 1 or 0; repeat for several clicks (at most 64)\n"
    "  -b, --box x0,y0,x1,y1       a box around the object in image pixels, x0 < x1, y0 < y1 (one)\n"
    "  --mask PNG                  a rough mask to refine, e.g. an earlier mask_NNN.png: a PNG or\n"
    "                              JPEG, taken as grey; pixels above 127 become logit +8\n"
    "                              (object), the others -8. A SAM 3 model takes any size (resized); a\n"
    "                              SAM 1 model only its low-resolution mask size (256x256 at 1024 input)\n"
    "  --single                    one mask (the reference's choice) instead of the candidates\n"
    "  --mask-threshold M          mask probability threshold, 0..1 (default 0.5)\n"
    "  -o, --output OUTDIR         output folder, created if missing: new, empty or an earlier sam3\n"
    "                              output (see OUTPUT FOLDER below)\n"
    "  --force                     write into a folder that holds other files too (they are kept)\n"
    "  --max-pixels N              refuse images (and masks) over N pixels (default 100000000)\n"
    "  --keep-orientation          the pixels as stored: a JPEG's EXIF orientation is not applied\n"
    "  --threads N                 threads (default: all cores)\n"
    "  --blas-threads B            BLAS's own threads (default 1; 0 leaves BLAS as it is)\n"
    "  --precision bf16|f32        products with weights in bf16 or f32 (default; see segment --help)\n"
    "  --image-size N              SAM 3's input side, a multiple of 14 (default: the file's; see segment --help)\n"
    "  -q, --quiet                 print nothing on success (errors still go to stderr)\n"
    "\n"
    "Give at least one --point, --box or --mask. Progress and timings go to stderr. Exit status:\n"
    "0 done, 1 failed (unreadable model, image or mask, a model without an interactive head, a file\n"
    "that could not be written, ...), 2 bad command line.\n"
    CLI_IMAGES_HELP;

typedef struct pts_args {
    common_args c;
    const char *mask;
    sam3_point points[SAM3_MAX_POINTS]; /* (n_points) */
    int n_points;
    int has_box;
    sam3_box box;
    int single;
    float mask_threshold;
} pts_args;

static int parse_points_args(int argc, char **argv, pts_args *a, int *help) {
    int i, r;
    const char *v, *why;
    memset(a, 0, sizeof(*a));
    a->c.blas_threads = 1;
    a->mask_threshold = 0.5f;
    *help = 0;
    for (i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(POINTS_HELP, stdout);
            fputs(CLI_OUTDIR_HELP, stdout);
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
            const char *c;
            int commas = 0, label;
            if (a->has_box) return usage_error("points", "only one --box: the interactive head takes one box per object%s", NULL);
            for (c = v; *c; c++) commas += *c == ',';
            why = commas == 4 ? "expected x0,y0,x1,y1 (a box prompt has no label)" : parse_box(v, &a->box, &label);
            if (why) {
                fprintf(stderr, "sam3 points: bad box '%s': %s (try 'sam3 points --help')\n", v, why);
                return CLI_USAGE;
            }
            a->has_box = 1;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask", &v)) > 0) {
            if (a->mask) return usage_error("points", "only one --mask%s", NULL);
            if (!v[0]) return usage_error("points", "--mask needs a file name%s", NULL);
            a->mask = v;
        } else if (r == 0 && (r = opt_value(argc, argv, &i, NULL, "--mask-threshold", &v)) > 0) {
            if (!parse_float(v, &a->mask_threshold) || a->mask_threshold < 0 || a->mask_threshold > 1)
                return usage_error("points", "--mask-threshold wants a number from 0 to 1, got '%s'", v);
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
static int read_mask_prompt(const char *path, unsigned long long max_pixels, float **logits, int *w, int *h) {
    cli_img im;
    char why[512];
    size_t i, np;
    *logits = NULL;
    if (!cli_img_read_file(path, max_pixels, &im, why, sizeof(why))) {
        cli_error("cannot read mask '%s': %s", path, why);
        return CLI_FAIL;
    }
    cli_img_to_grey(&im);
    *w = im.w, *h = im.h;
    np = (size_t)im.w * im.h;
    *logits = (float *)malloc(np * sizeof(float));
    if (!*logits) {
        free(im.pixels);
        cli_error("out of memory for a %dx%d mask", im.w, im.h);
        return CLI_FAIL;
    }
    for (i = 0; i < np; i++) (*logits)[i] = im.pixels[i] > 127 ? 8.0f : -8.0f;
    free(im.pixels);
    return CLI_OK;
}

/* The best mask tinted blue, the box in yellow, then each click as a green (object) or red
   (background) dot with a white rim. */
static void draw_points_overlay(unsigned char *rgb, int w, int h, const uint8_t *mask, const pts_args *a) {
    static const unsigned char blue[3] = {0, 130, 200}, yellow[3] = {255, 225, 25};
    if (mask) tint_mask(rgb, w, h, mask, blue);
    draw_prompt(rgb, w, h, a->points, a->n_points, a->has_box ? &a->box : NULL, yellow);
}

/* Writes mask_NNN.png, overlay.png and results.json into od (put in place at the commit). */
static int write_points_outputs(cli_outdir *od, const pts_args *a, cli_session *ss, const sam3_points_result *res) {
    int k, rc = CLI_FAIL, w = ss->img.w, h = ss->img.h;
    size_t i, np = (size_t)w * h;
    const uint8_t **masks = (const uint8_t **)malloc(sizeof(uint8_t *) * ((size_t)res->n_masks + 1)); /* (n_masks) */
    int64_t *area = (int64_t *)calloc((size_t)res->n_masks + 1, sizeof(int64_t));
    text_buf js;
    memset(&js, 0, sizeof(js));
    if (!masks || !area) {
        cli_error("out of memory");
        goto done;
    }
    for (k = 0; k < res->n_masks; k++) {
        masks[k] = res->masks + (size_t)k * np;
        for (i = 0; i < np; i++) area[k] += masks[k][i] != 0;
    }
    if (!write_mask_pngs(od, masks, res->n_masks, w, h, sam3_ctx_n_threads(ss->ctx))) goto done;

    memcpy(ss->overlay, ss->rgb, np * 3);
    draw_points_overlay(ss->overlay, w, h, res->n_masks ? res->masks + (size_t)res->best * np : NULL, a);
    if (!write_png(od, "overlay.png", ss->overlay, w, h, 3)) goto done;

    tb_printf(&js, "{\n  \"generator\": \"sam3 points %s\",\n  \"image\": ", SAM3_VERSION_STRING);
    tb_json_string(&js, a->c.image);
    tb_printf(&js, ",\n  \"width\": %d,\n  \"height\": %d", w, h);
    tb_orientation(&js, &ss->img);
    tb_printf(&js, ",\n  \"points\": [");
    for (k = 0; k < a->n_points; k++) {
        tb_printf(&js, "%s[", k ? ", " : "");
        tb_json_number(&js, a->points[k].x), tb_printf(&js, ", "), tb_json_number(&js, a->points[k].y);
        tb_printf(&js, ", %d]", a->points[k].label);
    }
    tb_printf(&js, "],\n  \"box\": ");
    if (a->has_box) tb_box(&js, &a->box);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"mask_prompt\": ");
    if (a->mask) tb_json_string(&js, a->mask);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"single\": %s,\n  \"mask_threshold\": ", a->single ? "true" : "false");
    tb_json_number(&js, a->mask_threshold);
    tb_printf(&js, ",\n  \"object_score_logit\": ");
    if (res->has_object_score) tb_json_number(&js, res->object_score);
    else tb_printf(&js, "null");
    tb_printf(&js, ",\n  \"best\": %d,\n  \"masks\": [", res->best);
    for (k = 0; k < res->n_masks; k++) {
        const sam3_box mb = mask_bounds(res->masks + (size_t)k * np, w, h);
        tb_printf(&js, "%s\n    {\"iou\": ", k ? "," : "");
        tb_json_number(&js, res->iou[k]);
        tb_printf(&js, ", \"box\": "), tb_box(&js, &mb);
        tb_printf(&js, ", \"area\": %lld, \"mask\": \"mask_%03d.png\"}", (long long)area[k], k);
    }
    tb_printf(&js, "%s]\n}\n", res->n_masks ? "\n  " : "");
    if (js.oom) {
        cli_error("out of memory");
        goto done;
    }
    if (!cli_outdir_write(od, CLI_OUT_MANIFEST, js.p, js.len)) {
        cli_error("%s", od->err);
        goto done;
    }
    rc = CLI_OK;
done:
    free(js.p);
    free(masks);
    free(area);
    return rc;
}

static int run_points(const pts_args *a) {
    sam3_points_options po;
    sam3_points_prompt pp;
    sam3_points_result res;
    cli_session ss;
    cli_outdir od;
    float *mask = NULL;
    int rc = CLI_FAIL, mw = 0, mh = 0, k;
    double t0;
    sam3_result r;

    cli_cmd = "points";
    memset(&ss, 0, sizeof(ss));
    ss.precision = a->c.precision;
    ss.image_size = a->c.image_size;
    if (!cli_outdir_open(&od, a->c.outdir, CLI_OUT_NAMES, CLI_OUT_MANIFEST, CLI_OUT_MARKER, a->c.force)) { /* before the slow parts */
        cli_error("%s", od.err);
        goto done;
    }
    if (session_load(&ss, a->c.model, a->c.quiet) != CLI_OK) goto done;
    if (a->mask && read_mask_prompt(a->mask, a->c.max_pixels, &mask, &mw, &mh) != CLI_OK) goto done;
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
    if (session_encode(&ss, a->c.image, a->c.threads, a->c.blas_threads, a->c.max_pixels, a->c.keep_orientation) != CLI_OK) goto done;
    if (!a->c.quiet)
        for (k = 0; k < a->n_points; k++)
            if (a->points[k].x < 0 || a->points[k].y < 0 || a->points[k].x > ss.img.w || a->points[k].y > ss.img.h)
                fprintf(stderr, "sam3: note: point %g,%g is outside the %dx%d image\n", a->points[k].x, a->points[k].y, ss.img.w, ss.img.h);

    memset(&pp, 0, sizeof(pp));
    pp.points = a->n_points ? a->points : NULL;
    pp.n_points = a->n_points;
    pp.box = a->has_box ? &a->box : NULL;
    pp.mask_logits = mask;
    pp.mask_width = mw;
    pp.mask_height = mh;
    po = sam3_points_options_default();
    po.single_mask = a->single;
    po.mask_threshold = a->mask_threshold > 0 ? a->mask_threshold : -1.0f; /* 0 would be "the default" */
    t0 = sam3_time_ms();
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
        fprintf(stderr, ") in %s (%sprompt encoder, mask decoder, masks)\n", fmt_ms(sam3_time_ms() - t0),
                model_is_sam1(ss.model) ? "" : "interactive neck, ");
    }
    t0 = sam3_time_ms();
    if (write_points_outputs(&od, a, &ss, &res) != CLI_OK) goto done;
    if (!cli_outdir_commit(&od)) {
        cli_error("%s", od.err);
        goto done;
    }
    if (!a->c.quiet)
        fprintf(stderr, "sam3: wrote %s/: results.json, %d mask%s, overlay.png in %s\n", a->c.outdir, res.n_masks, res.n_masks == 1 ? "" : "s",
                fmt_ms(sam3_time_ms() - t0));
    rc = CLI_OK;
done:
    cli_outdir_close(&od);
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

/* OpenMP threads that sleep rather than spin while they wait (OMP_WAIT_POLICY=passive), unless
   the user chose: beside another busy program, a thread spinning at a barrier takes the share of
   a core that the thread it waits for needs (sam3.h, "Threading"). libgomp reads the variable when
   it loads, before main, so the CLI sets it and runs itself again; where that fails it goes on. */
static void cli_passive_waits(char **argv) {
#if defined(__linux__) && defined(_OPENMP)
    if (getenv("OMP_WAIT_POLICY") || setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
#else
    (void)argv;
#endif
}

/* $SAM3_ISA names a kernel path this build holds and this CPU runs, or is unset: else one line
   saying what runs here, and 0 */
static int check_isa(void) {
    const int isa = sam3_isa_default();
    const unsigned mask = sam3_isa_mask();
    int i;
    if (isa >= 0) return 1;
    fprintf(stderr, "sam3: SAM3_ISA=%s: %s; kernel paths here:", getenv("SAM3_ISA"),
            isa == SAM3_ERR_INVALID_ARG ? "no such kernel path" : "not in this build or not on this CPU");
    for (i = SAM3_ISA_REFERENCE; sam3_isa_name(i); i++)
        if (mask >> i & 1u) fprintf(stderr, " %s", sam3_isa_name(i));
    fputc('\n', stderr);
    return 0;
}

int main(int argc, char **argv) {
    cli_passive_waits(argv);
    if (argc < 2) {
        fputs(MAIN_HELP, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(MAIN_HELP, stdout);
        return CLI_OK;
    }
    if (!check_isa()) return CLI_FAIL;
    if (!strcmp(argv[1], "--version")) {
        printf("sam3 %s (file format %d)\nkernels: %s\n", sam3_version_string(), SAM3_FILE_FORMAT_VERSION, sam3_isa_name(sam3_isa_default()));
        return CLI_OK;
    }
    if (!strcmp(argv[1], "segment")) return cmd_segment(argc - 2, argv + 2);
    if (!strcmp(argv[1], "concept")) return cmd_concept(argc - 2, argv + 2);
    if (!strcmp(argv[1], "points")) return cmd_points(argc - 2, argv + 2);
    if (!strcmp(argv[1], "everything")) return cmd_everything(argc - 2, argv + 2);
    if (!strcmp(argv[1], "track")) return cmd_track(argc - 2, argv + 2);
    if (!strcmp(argv[1], "merge")) return cmd_merge(argc - 2, argv + 2);
    if (!strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench")) return bench_main(argc - 2, argv + 2);
    return usage_error(NULL, "unknown command '%s'", argv[1]);
}
