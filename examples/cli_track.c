/* cli_track.c - `sam3 track`: follow prompted objects through frames (sam3.h's video tracker and
   concept tracker) from a folder of images or a YUV4MPEG2 stream (examples/cli_y4m.h). Its entry
   point, cmd_track, is declared in examples/cli_common.h with the helpers it uses (options,
   messages, JSON, PNG out, overlays). */
#define _POSIX_C_SOURCE 200809L /* fileno, lstat under -std=c99 */
#include "cli_common.h"
#include "cli_outdir.h"
#include "cli_y4m.h"
#include "image_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <fcntl.h> /* _O_BINARY */
#include <io.h>
#include <windows.h> /* FindFirstFileA */
#else
#include <dirent.h>
#endif

static const char *TRACK_HELP =
    "usage: sam3 track -m FILE -i FRAMES -o OUTDIR [--point F:ID:x,y[,neg]]... [--box F:ID:x0,y0,x1,y1]...\n"
    "                  [--mask F:ID:PNG]... [--overlay] [--video-out FILE|-] [--format png|coco] [--force] ...\n"
    "       sam3 track -m FILE -i FRAMES -o OUTDIR -t TEXT [-t TEXT]... [--point/--box/--mask ...] ...\n"
    "\n"
    "Follows objects through a stream of frames: each object is given by clicks, a box or a mask on\n"
    "some frame F (0 = the first) under an id ID >= 0 of your choice, and is then tracked on every later\n"
    "frame (the SAM 3 tracker's memory); a prompt on a later frame corrects it there. All --point/--box\n"
    "given for one F:ID make one prompt. Writes to OUTDIR, when the whole input has been processed:\n"
    "  tracks.jsonl   a first line {\"generator\": \"sam3 track VERSION\", \"model\": ..., \"input\": ...}, then\n"
    "                 one line per frame: {\"frame\": F, \"image\": NAME, \"objects\": [{\"id\": ID,\n"
    "                 \"object_score_logit\": L, \"box\": [x0,y0,x1,y1], \"area\": N, \"mask\":\n"
    "                 \"masks/FFFFF_ID.png\"}, ...]} (NAME null for a stream; with --overlay also\n"
    "                 \"overlay\": \"overlays/FFFFF.png\"; box: the mask's pixel bounds, x1 and y1\n"
    "                 exclusive, zeros when empty; an object is visible where its logit L > 0)\n"
    "  masks/         FFFFF_ID.png: 255 = object, 0 = background, the frame's size; with --format coco\n"
    "                 none: \"segmentation\": {\"size\": [h, w], \"counts\": COCO RLE} in place of \"mask\",\n"
    "                 left out when the mask is empty\n"
    "  overlays/      FFFFF.png with --overlay: the frame with each object's mask, box and id, the\n"
    "                 prompts given on it, and \"lost: 3, 5\": the clicked objects with an empty mask,\n"
    "                 the -t objects seen before and not on it\n"
    "OUTDIR must be new, empty or an earlier sam3 output (else --force; other files are left alone);\n"
    "files are written to temporary names and renamed into place when the run succeeds, and the masks\n"
    "and overlays an earlier run listed and this one did not write are removed. Progress: a line a\n"
    "frame on stderr, 'k/N NAME  X.X img/s  ETA m:ss' (a stream: 'k/? frame F  X.X img/s'). If the input fails part-way (a truncated stream, an unreadable frame), the frames\n"
    "before it are written and the run exits 1.\n"
    "With -t (experimental) every instance of each text concept is found and followed too (SAM 3's\n"
    "detector on every frame, the tracker's memory; one image encoder pass a frame serves both kinds of\n"
    "object). Concept objects get IDs K, K+1, ... in order of appearance, K = 1 + the largest ID given\n"
    "to --point/--box/--mask (0 without them), and have \"prompt\": TEXT, \"score\" (the detection that\n"
    "started it) and \"tracker_score\" (the probability it is visible) in place of\n"
    "\"object_score_logit\"; only visible ones are listed, after the clicked objects.\n"
    "\n";
/* (two strings: C99 promises only 4095 characters in one literal) */
static const char *TRACK_HELP_OPTIONS =
    "  -m, --model FILE           the .sam3 file (a SAM 3 checkpoint converted with its memory modules)\n"
    "  -i, --input FRAMES         a folder of JPEG or PNG frames (every file in it, in byte-wise sorted\n"
    "                             name order: name them frame_00001.png, ...), or - for a YUV4MPEG2\n"
    "                             stream on stdin (8-bit 4:2:0 or 4:4:4, progressive), e.g.\n"
    "                               ffmpeg -i clip.mp4 -f yuv4mpegpipe -pix_fmt yuv420p - | sam3 track -i - ...\n"
    "                             (colours: BT.601 limited range, chroma replicated)\n"
    "  --point F:ID:x,y[,neg]     a click on frame F for object ID, in that frame's pixels\n"
    "  --box F:ID:x0,y0,x1,y1     a box on frame F for object ID\n"
    "  -t, --text TEXT            a text concept to find and follow (repeatable)\n"
    "  --threshold P              with -t: a detection counts above P and starts an object at P or more\n"
    "                             (default 0.5 and 0.7, the reference's)\n"
    "  --clip                     with -t: clip mode, for a whole file (HF's pre-loaded video): a new\n"
    "                             object is judged over its first 15 frames and removed from them all\n"
    "                             when it stayed unmatched or duplicated an older one on 8 of them;\n"
    "                             without it, streaming mode (a camera's: frames one at a time)\n"
    "  --hotstart N               --clip judging new objects over N frames instead of 15\n"
    "  --concept FILE             a saved concept (sam3 concept) to find and follow, like a -t\n"
    "  --concept-box x0,y0,x1,y1[,neg]  a box exemplar (negative with ,neg) for the -t before it (before\n"
    "                             any -t: a prompt of boxes only, \"prompt\": null), as sam3 segment's\n"
    "                             --box; the detector sees it on every frame at that place in the frame\n"
    "                             (it does not follow what it framed; HF's video model has no such prompt)\n"
    "  --mask F:ID:PNG            a mask on frame F for object ID: a PNG (or JPEG) whose first channel is\n"
    "                             non-zero on the object; any size; not with --point/--box for F:ID\n"
    "  -o, --output OUTDIR        output folder, created if missing\n"
    "  --overlay                  also write overlays/\n"
    "  --video-out FILE|-         the overlays as a YUV4MPEG2 video (4:2:0; the input stream's frame rate,\n"
    "                             else 25/s), - for stdout; frames of one size. For an MP4:\n"
    "                               sam3 track ... --video-out - | ffmpeg -i - -c:v libx264 out.mp4\n"
    "  --format png|coco          masks as masks/ PNGs (default) or as RLE in tracks.jsonl\n"
    "  --force                    write into a folder that holds other files (they are kept)\n"
    "  --max-pixels N             refuse frames and masks over N pixels (default 100000000)\n"
    "  --keep-orientation         JPEG frames as stored: their EXIF orientation is not applied\n"
    "  --threads N                threads (default: all cores)\n"
    "  --precision bf16|f32       weight products in bf16 (f32 sums), as in `sam3 segment`\n"
    "  --image-size N             the model's input side, a multiple of 14, as in `sam3 segment`\n"
    "  -q, --quiet                no progress on stderr\n"
    "  -v, --verbose              each frame's objects and times (image encoder, tracking) too\n"
    "\n"
    "Exit status: 0 done, 1 failed (unreadable model or frame, truncated stream, a prompt for a frame\n"
    "the input does not have, a file that could not be written), 2 bad command line.\n";

#define TRACK_MAX_PROMPTS 256
#define TRACK_END (-1) /* frame_src_next: no more frames (CLI_FAIL is 1) */

typedef struct track_prompt {
    int frame, id;
    sam3_point points[SAM3_MAX_POINTS];
    int n_points, has_box, used;
    sam3_box box;
    const char *mask_path;
} track_prompt;

typedef struct track_args {
    const char *model, *input, *outdir;
    int threads, quiet, verbose, overlay, force;
    int coco;              /* --format coco: masks as RLE in tracks.jsonl, no mask PNGs */
    const char *video_out; /* --video-out: a file, or "-" for stdout; NULL: none */
    int keep_orientation; /* --keep-orientation: frames as stored, EXIF ignored */
    int precision;        /* --precision: SAM3_PRECISION_* */
    int image_size;       /* --image-size: sam3_load_options.image_size, 0: the file's */
    unsigned long long max_pixels;
    track_prompt *prompts; /* (n_prompts) */
    int n_prompts;
    const char *texts[SAM3_MAX_CONCEPT_PROMPTS]; /* -t, one a concept prompt; NULL: --concept or --concept-box before any -t */
    const char *cfiles[SAM3_MAX_CONCEPT_PROMPTS]; /* --concept FILE of the prompt, or NULL */
    int n_texts;
    sam3_box cbox[SAM3_MAX_CONCEPT_PROMPTS][SAM3_MAX_BOXES]; /* --concept-box, per prompt */
    int cbox_label[SAM3_MAX_CONCEPT_PROMPTS][SAM3_MAX_BOXES];
    int n_cbox[SAM3_MAX_CONCEPT_PROMPTS];
    int prompt_arg[SAM3_MAX_CONCEPT_PROMPTS]; /* the concept tracker's prompt index -> texts[] index */
    float threshold; /* --threshold; 0: the defaults */
    int hotstart;    /* --clip / --hotstart: the concept tracker's hotstart_delay; 0: streaming */
} track_args;

/* "F:ID:rest" -> frame, id and a pointer to rest. NULL or what is wrong. */
static const char *parse_frame_id(const char *s, int *frame, int *id, const char **rest) {
    char buf[32];
    const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2) return "expected F:ID:...";
    if ((size_t)(c1 - s) >= sizeof(buf) || (size_t)(c2 - c1 - 1) >= sizeof(buf)) return "frame or id too long";
    memcpy(buf, s, (size_t)(c1 - s));
    buf[c1 - s] = 0;
    if (!parse_int(buf, 0, 1 << 30, frame)) return "the frame F must be a number >= 0";
    memcpy(buf, c1 + 1, (size_t)(c2 - c1 - 1));
    buf[c2 - c1 - 1] = 0;
    if (!parse_int(buf, 0, 2147483647, id)) return "the object ID must be a number >= 0";
    *rest = c2 + 1;
    return NULL;
}

static track_prompt *track_prompt_for(track_args *a, int frame, int id) {
    int i;
    for (i = 0; i < a->n_prompts; i++)
        if (a->prompts[i].frame == frame && a->prompts[i].id == id) return &a->prompts[i];
    if (a->n_prompts == TRACK_MAX_PROMPTS) return NULL;
    memset(&a->prompts[a->n_prompts], 0, sizeof(track_prompt));
    a->prompts[a->n_prompts].frame = frame;
    a->prompts[a->n_prompts].id = id;
    return &a->prompts[a->n_prompts++];
}

/* What the options must hold together, after them all. CLI_OK or CLI_USAGE (printed). */
static int check_track_args(const track_args *a) {
    int i, j, n_ids;
    for (i = 0; i < a->n_prompts; i++)
        if (a->prompts[i].mask_path && (a->prompts[i].n_points || a->prompts[i].has_box)) {
            fprintf(stderr, "sam3 track: frame %d object %d: a mask cannot go with clicks or a box (try 'sam3 track --help')\n",
                    a->prompts[i].frame, a->prompts[i].id);
            return CLI_USAGE;
        }
    /* the tracker's object limit, from the command line alone: before the model, the output and
       the first frame */
    for (i = 0, n_ids = 0; i < a->n_prompts; i++) {
        for (j = 0; j < i && a->prompts[j].id != a->prompts[i].id; j++) {}
        n_ids += j == i;
    }
    if (n_ids > SAM3_MAX_TRACKED_OBJECTS) {
        fprintf(stderr, "sam3 track: %d objects given (IDs): a tracker follows at most %d (try 'sam3 track --help')\n", n_ids,
                SAM3_MAX_TRACKED_OBJECTS);
        return CLI_USAGE;
    }
    if (!a->model) return usage_error("track", "missing -m FILE (the .sam3 model)%s", NULL);
    if (!a->input) return usage_error("track", "missing -i FRAMES (a folder, or - for YUV4MPEG2 on stdin)%s", NULL);
    if (!a->outdir || !a->outdir[0]) return usage_error("track", "missing -o OUTDIR%s", NULL);
    if (!a->n_prompts && !a->n_texts) return usage_error("track", "no objects: give --point, --box, --mask, -t, --concept or --concept-box%s", NULL);
    if (a->threshold > 0 && !a->n_texts) return usage_error("track", "--threshold goes with -t%s", NULL);
    if (a->hotstart && !a->n_texts) return usage_error("track", "--clip and --hotstart go with -t%s", NULL);
    return CLI_OK;
}

static int parse_track_args(int argc, char **argv, track_args *a, int *help) {
    int i, r;
    const char *v;
    *help = 0;
    for (i = 0; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            fputs(TRACK_HELP, stdout);
            fputs(TRACK_HELP_OPTIONS, stdout);
            *help = 1;
            return CLI_OK;
        }
        if (!strcmp(opt, "-v") || !strcmp(opt, "--verbose")) {
            a->verbose = 1;
        } else if (!strcmp(opt, "-q") || !strcmp(opt, "--quiet")) {
            a->quiet = 1;
        } else if (!strcmp(opt, "--overlay")) {
            a->overlay = 1;
        } else if (!strcmp(opt, "--force")) {
            a->force = 1;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--format", &v)) != 0) {
            if (r < 0 || (strcmp(v, "png") && strcmp(v, "coco"))) return usage_error("track", "--format wants png or coco, got '%s'", r < 0 ? "" : v);
            a->coco = !strcmp(v, "coco");
        } else if ((r = opt_value(argc, argv, &i, NULL, "--video-out", &v)) != 0) {
            if (r < 0 || !v[0]) return usage_error("track", "--video-out wants a file name or - (stdout), got '%s'", r < 0 ? "" : v);
            a->video_out = v;
        } else if (!strcmp(opt, "--keep-orientation")) {
            a->keep_orientation = 1;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--max-pixels", &v)) != 0) {
            char *end;
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            errno = 0;
            a->max_pixels = strtoull(v, &end, 10);
            if (end == v || *end || errno == ERANGE || v[0] == '-' || a->max_pixels < 1 ||
                a->max_pixels > (unsigned long long)SAM3_MAX_IMAGE_DIM * SAM3_MAX_IMAGE_DIM)
                return usage_error("track", "--max-pixels wants a number from 1 to 268435456 (16384 x 16384), got '%s'", v);
        } else if ((r = opt_value(argc, argv, &i, "-m", "--model", &v)) != 0) {
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            a->model = v;
        } else if ((r = opt_value(argc, argv, &i, "-i", "--input", &v)) != 0) {
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            a->input = v;
        } else if ((r = opt_value(argc, argv, &i, "-o", "--output", &v)) != 0) {
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            a->outdir = v;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--threads", &v)) != 0) {
            if (r < 0 || !parse_int(v, 1, 4096, &a->threads)) return usage_error("track", "--threads wants a number >= 1, got '%s'", r < 0 ? "" : v);
        } else if ((r = opt_value(argc, argv, &i, NULL, "--precision", &v)) != 0) {
            if (r < 0 || (strcmp(v, "bf16") && strcmp(v, "f32")))
                return usage_error("track", "--precision wants bf16 or f32, got '%s'", r < 0 ? "" : v);
            a->precision = strcmp(v, "bf16") ? SAM3_PRECISION_F32 : SAM3_PRECISION_BF16;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--image-size", &v)) != 0) {
            if (r < 0 || !parse_int(v, 1, 65536, &a->image_size))
                return usage_error("track", "--image-size wants a side from 1 to 65536 pixels, got '%s'", r < 0 ? "" : v);
        } else if ((r = opt_value(argc, argv, &i, NULL, "--threshold", &v)) != 0) {
            if (r < 0 || !parse_float(v, &a->threshold) || !(a->threshold > 0) || a->threshold >= 1)
                return usage_error("track", "--threshold wants a number between 0 and 1, got '%s'", r < 0 ? "" : v);
        } else if (!strcmp(opt, "--clip")) {
            if (!a->hotstart) a->hotstart = 15; /* Sam3VideoConfig's hotstart_delay */
        } else if ((r = opt_value(argc, argv, &i, NULL, "--hotstart", &v)) != 0) {
            if (r < 0 || !parse_int(v, 1, 1024, &a->hotstart)) return usage_error("track", "--hotstart wants a number from 1 to 1024, got '%s'", r < 0 ? "" : v);
        } else if ((r = opt_value(argc, argv, &i, "-t", "--text", &v)) != 0) {
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            if (!v[0]) return usage_error("track", "-t: the text is empty%s", "");
            if (a->n_texts == SAM3_MAX_CONCEPT_PROMPTS) return usage_error("track", "too many -t prompts (at most %s)", "16");
            a->texts[a->n_texts++] = v;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--concept", &v)) != 0) {
            if (r < 0 || !v[0]) return usage_error("track", "--concept needs a file name%s", "");
            if (a->n_texts == SAM3_MAX_CONCEPT_PROMPTS) return usage_error("track", "too many -t and --concept prompts (at most %s)", "16");
            a->cfiles[a->n_texts++] = v;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--concept-box", &v)) != 0) {
            const char *err;
            int k;
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            if (!a->n_texts) a->texts[a->n_texts++] = NULL; /* a prompt of boxes only */
            k = a->n_texts - 1;
            if (a->n_cbox[k] == SAM3_MAX_BOXES) return usage_error("track", "too many --concept-box for one prompt (at most %s)", "64");
            if ((err = parse_box(v, &a->cbox[k][a->n_cbox[k]], &a->cbox_label[k][a->n_cbox[k]])) != NULL) {
                fprintf(stderr, "sam3 track: --concept-box '%s': %s (try 'sam3 track --help')\n", v, err);
                return CLI_USAGE;
            }
            a->n_cbox[k]++;
        } else if ((r = opt_value(argc, argv, &i, NULL, "--point", &v)) != 0 || (r = opt_value(argc, argv, &i, NULL, "--box", &v)) != 0 ||
                   (r = opt_value(argc, argv, &i, NULL, "--mask", &v)) != 0) {
            const char *rest = NULL, *err;
            int frame = 0, id = 0;
            track_prompt *p;
            if (r < 0) return usage_error("track", "option '%s' needs a value", opt);
            if ((err = parse_frame_id(v, &frame, &id, &rest)) != NULL) {
                fprintf(stderr, "sam3 track: %s '%s': %s (try 'sam3 track --help')\n", opt, v, err);
                return CLI_USAGE;
            }
            if (!(p = track_prompt_for(a, frame, id))) return usage_error("track", "too many prompts (at most 256 frame:id pairs)%s", NULL);
            if (!strncmp(opt, "--point", 7)) {
                if (p->n_points == SAM3_MAX_POINTS) return usage_error("track", "too many points for one frame and object%s", NULL);
                if ((err = parse_point(rest, &p->points[p->n_points])) != NULL) {
                    fprintf(stderr, "sam3 track: --point '%s': %s (try 'sam3 track --help')\n", v, err);
                    return CLI_USAGE;
                }
                p->n_points++;
            } else if (!strncmp(opt, "--box", 5)) {
                int label;
                if (p->has_box) return usage_error("track", "two boxes for one frame and object: '%s'", v);
                if ((err = parse_box(rest, &p->box, &label)) != NULL || label != 1) {
                    fprintf(stderr, "sam3 track: --box '%s': %s (try 'sam3 track --help')\n", v, err ? err : "a box has no label here");
                    return CLI_USAGE;
                }
                p->has_box = 1;
            } else {
                if (p->mask_path || !rest[0]) return usage_error("track", "--mask '%s': one PNG per frame and object", v);
                p->mask_path = rest;
            }
        } else {
            return usage_error("track", "unknown option '%s'", opt);
        }
    }
    return check_track_args(a);
}

/* ---- frames: a folder of images, or YUV4MPEG2 on stdin ---- */

typedef struct frame_src {
    /* folder */
    char **names; /* (n_names) sorted */
    int n_names, next;
    const char *dir;
    /* YUV4MPEG2 */
    FILE *y4m;  /* the stream, once its header was read */
    cli_y4m y4; /* its reader (examples/cli_y4m.h) */
    unsigned long long max_pixels; /* the image reader's budget */
    int keep_orientation;          /* JPEG frames as stored (--keep-orientation) */
} frame_src;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void frame_src_free(frame_src *s) {
    int i;
    for (i = 0; i < s->n_names; i++) free(s->names[i]);
    free(s->names);
    cli_y4m_free(&s->y4);
    memset(s, 0, sizeof(*s));
}

/* Image files of a folder (regular files not starting with '.'), sorted by name. */
static int frame_src_dir(frame_src *s, const char *dir) {
    int cap = 0;
#if defined(_WIN32)
    char pat[4096];
    WIN32_FIND_DATAA fd;
    HANDLE h;
    snprintf(pat, sizeof(pat), "%s\\*", dir);
    h = FindFirstFileA(pat, &fd);
    if (h == INVALID_HANDLE_VALUE) {
        cli_error("cannot read the folder '%s'", dir);
        return CLI_FAIL;
    }
    do {
        const char *nm = fd.cFileName;
        if (nm[0] == '.' || (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) continue;
#else
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) {
        cli_error("cannot read the folder '%s': %s", dir, strerror(errno));
        return CLI_FAIL;
    }
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        char path[4096];
        struct stat st;
        if (nm[0] == '.') continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, nm) >= (int)sizeof(path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
#endif
        if (s->n_names == cap) {
            char **nn = (char **)realloc(s->names, (size_t)(cap ? 2 * cap : 64) * sizeof(char *));
            if (!nn) break;
            s->names = nn;
            cap = cap ? 2 * cap : 64;
        }
        if (!(s->names[s->n_names] = (char *)malloc(strlen(nm) + 1))) break;
        strcpy(s->names[s->n_names++], nm);
#if defined(_WIN32)
    } while (FindNextFileA(h, &fd));
    FindClose(h);
#else
    }
    closedir(d);
#endif
    if (!s->n_names) {
        cli_error("no image files in the folder '%s'", dir);
        return CLI_FAIL;
    }
    qsort(s->names, (size_t)s->n_names, sizeof(char *), cmp_str);
    s->dir = dir;
    return CLI_OK;
}

/* The stream header (examples/cli_y4m.h: its bounds, colour spaces and ranges). */
static int frame_src_y4m(frame_src *s, FILE *f) {
    if (!cli_y4m_open(&s->y4, f, s->max_pixels ? s->max_pixels : CLI_IMG_DEFAULT_MAX_PIXELS)) {
        cli_error("stdin: %s", s->y4.err);
        return CLI_FAIL;
    }
    s->y4m = f;
    return CLI_OK;
}

/* Next frame as RGB8 (malloc'd) into *rgb. CLI_OK, TRACK_END at the end, or CLI_FAIL (printed). */
static int frame_src_next(frame_src *s, unsigned char **rgb, int *w, int *h, char *name, size_t name_cap) {
    *rgb = NULL;
    if (!s->y4m) {
        char path[4096];
        cli_image img;
        size_t i, np;
        int c;
        if (s->next >= s->n_names) return TRACK_END;
        snprintf(name, name_cap, "%s", s->names[s->next]);
        if (snprintf(path, sizeof(path), "%s/%s", s->dir, s->names[s->next++]) >= (int)sizeof(path)) {
            cli_error("path too long: %s/%s", s->dir, name);
            return CLI_FAIL;
        }
        memset(&img, 0, sizeof(img));
        if (read_image(path, s->max_pixels, s->keep_orientation, &img) != CLI_OK) return CLI_FAIL;
        np = (size_t)img.w * img.h;
        if (!(*rgb = (unsigned char *)malloc(np * 3))) {
            free(img.pixels);
            cli_error("out of memory for a %dx%d frame", img.w, img.h);
            return CLI_FAIL;
        }
        for (i = 0; i < np; i++)
            for (c = 0; c < 3; c++) (*rgb)[3 * i + c] = img.pixels[img.channels * i + (img.channels == 1 ? 0 : c)];
        *w = img.w;
        *h = img.h;
        free(img.pixels);
        return CLI_OK;
    } else {
        int r = cli_y4m_next(&s->y4, rgb);
        if (r == 0) return TRACK_END;
        if (r < 0) {
            cli_error("stdin: %s", s->y4.err);
            return CLI_FAIL;
        }
        snprintf(name, name_cap, "%d", s->next++);
        *w = s->y4.w;
        *h = s->y4.h;
        return CLI_OK;
    }
}

/* A --mask PNG as 0/1 bytes (first channel non-zero). */
static int read_track_mask(const char *path, unsigned long long max_pixels, uint8_t **mask, int *w, int *h) {
    cli_img img;
    char why[512];
    size_t i, np;
    if (!cli_img_read_file(path, max_pixels, &img, why, sizeof(why))) {
        cli_error("cannot read the mask '%s': %s", path, why);
        return CLI_FAIL;
    }
    np = (size_t)img.w * img.h;
    if (!(*mask = (uint8_t *)malloc(np))) {
        free(img.pixels);
        cli_error("out of memory for the mask '%s'", path);
        return CLI_FAIL;
    }
    for (i = 0; i < np; i++) (*mask)[i] = img.pixels[(size_t)img.channels * i] != 0;
    *w = img.w;
    *h = img.h;
    free(img.pixels);
    return CLI_OK;
}

/* What sam3 track writes into OUTDIR (examples/cli_outdir.h: files are renamed into place when the
   run has succeeded; files an earlier run listed in its tracks.jsonl and this one did not write are
   removed; anything else in the folder is the user's). */
static const char *const TRACK_OUT_NAMES[] = {"tracks.jsonl", "masks/", "overlays/", "#_#.png", "#.png", NULL};

/* One frame on its way to tracks.jsonl. With -t in clip mode the concept tracker gives a frame's
   objects out some pushes later, so its clicked objects (already in objs) and overlay wait here. */
typedef struct track_pending {
    int frame, w, h;
    char name[1024];
    unsigned char *ov; /* (h, w, 3) the frame with the objects drawn so far, with --overlay or --video-out */
    text_buf objs;     /* the clicked objects' JSON */
    int n_obj;
    int lost[SAM3_MAX_TRACKED_OBJECTS]; /* (n_lost) the clicked objects with an empty mask */
    int n_lost;
} track_pending;

/* One run of sam3 track: what its stages share. */
typedef struct track_run {
    track_args *a;
    sam3_model *m;
    sam3_ctx *c;
    sam3_tracker *tr;         /* the click tracker (--point/--box/--mask) */
    sam3_concept_tracker *ct; /* -t */
    frame_src src;
    cli_outdir od, *md, *ovd; /* OUTDIR, masks/ (not with --format coco), overlays/ (with --overlay) */
    text_buf jl;              /* tracks.jsonl */
    track_pending *pend;      /* (n_pend) frames not written yet, frame f in pend[f % n_pend] */
    int n_pend;
    long long id0;    /* the concept objects' first id */
    int f;            /* frames read */
    int input_failed; /* the input failed part-way */
    cli_items prog;   /* the progress line's counts */
    long long *seen;  /* (n_seen) the concept objects given out so far, for the overlays' lost list */
    int n_seen, cap_seen;
    FILE *vf;         /* --video-out's stream (stdout for -), NULL without */
    cli_y4m_out vo;   /* its writer, opened on the first frame written (vo.f NULL before) */
} track_run;

/* One object of frame p->frame: masks/FFFFF_ID.png (--format png), its JSON from "box" on into js
   (the mask's file, or with --format coco its RLE when not empty), and the object drawn on p->ov
   (when not NULL). 0: failed (printed). */
static int track_object_out(const track_run *t, track_pending *p, text_buf *js, long long id, const uint8_t *mask, const sam3_box *box,
                            long long area) {
    const int w = p->w, h = p->h, f = p->frame;
    char mname[64];
    tb_printf(js, ", \"box\": [%.0f, %.0f, %.0f, %.0f], \"area\": %lld", box->x0, box->y0, box->x1, box->y1, area);
    if (!t->a->coco) {
        unsigned char *m255 = (unsigned char *)malloc((size_t)w * h);
        size_t q;
        int ok;
        if (!m255) {
            cli_error("out of memory");
            return 0;
        }
        snprintf(mname, sizeof(mname), "%05d_%lld.png", f, id);
        for (q = 0; q < (size_t)w * h; q++) m255[q] = mask[q] ? 255 : 0;
        ok = write_png(t->md, mname, m255, w, h, 1); /* (it printed why) */
        free(m255);
        if (!ok) return 0;
        tb_printf(js, ", \"mask\": \"masks/%s\"", mname);
    } else if (area > 0) {
        char *rle = cli_rle_string(mask, w, h);
        if (!rle) {
            cli_error("out of memory");
            return 0;
        }
        /* the RLE alphabet (characters 48..111) holds '\\', escaped in JSON */
        tb_printf(js, ", \"segmentation\": {\"size\": [%d, %d], \"counts\": ", h, w);
        tb_json_string(js, rle);
        tb_printf(js, "}");
        free(rle);
    }
    tb_printf(js, "}");
    if (p->ov && area > 0) {
        const unsigned char *col = PALETTE[(unsigned long long)id % 12];
        const int s = line_scale(w, h);
        char label[32];
        tint_mask(p->ov, w, h, mask, col);
        snprintf(label, sizeof(label), "%lld", id);
        draw_box(p->ov, w, h, (int)box->x0, (int)box->y0, (int)box->x1 - 1, (int)box->y1 - 1, s, col);
        draw_tag(p->ov, w, h, (int)box->x0, (int)box->y0, s, label, col);
    }
    return 1;
}

/* "lost: 3, 5": as many ids as draw_text's 63 characters hold, then how many more. */
static void track_lost_add(char *label, size_t cap, int *len, int *more, long long id) {
    if (*len < 36) *len += snprintf(label + *len, cap - (size_t)*len, "%s%lld", *len ? ", " : "lost: ", id);
    else ++*more;
}

/* On p->ov: in the top left corner the objects lost on this frame (clicked ones with an empty
   mask, concept ones given out before and not in cout), then the prompts given on it (boxes in
   their object's colour, clicks as dots) over everything. */
static void track_draw_marks(const track_run *t, track_pending *p, const sam3_concept_tracker_result *cout) {
    static const unsigned char grey[3] = {60, 60, 60};
    const track_args *a = t->a;
    char label[64];
    int i, k, len = 0, more = 0;
    for (i = 0; i < p->n_lost; i++) track_lost_add(label, sizeof(label), &len, &more, p->lost[i]);
    for (k = 0; k < t->n_seen; k++) {
        for (i = 0; cout && i < cout->n_objects && t->id0 + cout->objects[i].id != t->seen[k]; i++) {}
        if (!cout || i == cout->n_objects) track_lost_add(label, sizeof(label), &len, &more, t->seen[k]);
    }
    if (more) snprintf(label + len, sizeof(label) - (size_t)len, " and %d more", more);
    if (len) draw_tag(p->ov, p->w, p->h, 0, 0, line_scale(p->w, p->h), label, grey);
    for (i = 0; i < a->n_prompts; i++) {
        const track_prompt *tp = &a->prompts[i];
        if (tp->frame == p->frame)
            draw_prompt(p->ov, p->w, p->h, tp->points, tp->n_points, tp->has_box ? &tp->box : NULL, PALETTE[(unsigned)tp->id % 12]);
    }
}

/* The concept objects of cout not given out before, into t->seen. 0: out of memory (printed). */
static int track_concept_seen(track_run *t, const sam3_concept_tracker_result *cout) {
    int i, k;
    for (i = 0; i < cout->n_objects; i++) {
        const long long id = t->id0 + cout->objects[i].id;
        for (k = 0; k < t->n_seen && t->seen[k] != id; k++) {}
        if (k < t->n_seen) continue;
        if (t->n_seen == t->cap_seen) {
            const int cap = t->cap_seen ? 2 * t->cap_seen : 64;
            long long *ns = (long long *)realloc(t->seen, (size_t)cap * sizeof(long long));
            if (!ns) {
                cli_error("out of memory");
                return 0;
            }
            t->seen = ns;
            t->cap_seen = cap;
        }
        t->seen[t->n_seen++] = id;
    }
    return 1;
}

/* Frame p->frame's overlay into the --video-out stream. The file is created, and the stream's
   header written (the input stream's frame rate, else 25 a second), with the first frame: a run
   that fails before it leaves an existing file alone. 0: failed (printed). */
static int track_video_frame(track_run *t, const track_pending *p) {
    const char *path = t->a->video_out;
    if (!t->vf && !strcmp(path, "-")) {
#if defined(_WIN32)
        _setmode(_fileno(stdout), _O_BINARY); /* no LF -> CR-LF in the frames' bytes */
#endif
        t->vf = stdout;
    } else if (!t->vf && !(t->vf = fopen(path, "wb"))) {
        cli_error("--video-out: cannot create '%s': %s", path, strerror(errno));
        return 0;
    }
    if (!t->vo.f && !cli_y4m_out_open(&t->vo, t->vf, p->w, p->h, t->src.y4.fps_n ? t->src.y4.fps_n : 25, t->src.y4.fps_n ? t->src.y4.fps_d : 1)) {
        cli_error("--video-out: %s", t->vo.err);
        return 0;
    }
    if (!cli_y4m_out_frame(&t->vo, p->ov, p->w, p->h) || fflush(t->vf) != 0) {
        cli_error("--video-out %s: %s", path, t->vo.err[0] ? t->vo.err : "cannot write");
        return 0;
    }
    return 1;
}

/* Frame p->frame's line: its clicked objects, then the concept tracker's (cout, or NULL) with ids
   from t->id0 on (1 + the largest clicked id, so the two kinds never share an id); their masks,
   the overlay and the video frame. 0: failed (printed). */
static int track_finish(track_run *t, track_pending *p, const sam3_concept_tracker_result *cout) {
    const track_args *a = t->a;
    text_buf *jl = &t->jl;
    char oname[32];
    int i, n = p->n_obj;
    tb_printf(jl, "{\"frame\": %d, \"image\": ", p->frame);
    if (t->src.y4m) tb_printf(jl, "null");
    else tb_json_string(jl, p->name);
    if (a->overlay) tb_printf(jl, ", \"overlay\": \"overlays/%05d.png\"", p->frame);
    tb_printf(jl, ", \"objects\": [%s", p->objs.len ? p->objs.p : "");
    for (i = 0; cout && i < cout->n_objects; i++) {
        const sam3_concept_tracker_object *co = &cout->objects[i];
        const long long id = t->id0 + co->id;
        tb_printf(jl, "%s{\"id\": %lld, \"prompt\": ", n++ ? ", " : "", id);
        if (a->texts[a->prompt_arg[co->prompt]]) tb_json_string(jl, a->texts[a->prompt_arg[co->prompt]]);
        else tb_printf(jl, "null");
        if (a->cfiles[a->prompt_arg[co->prompt]]) {
            tb_printf(jl, ", \"concept\": ");
            tb_json_string(jl, a->cfiles[a->prompt_arg[co->prompt]]);
        }
        tb_printf(jl, ", \"score\": ");
        tb_json_number(jl, co->score);
        tb_printf(jl, ", \"tracker_score\": ");
        tb_json_number(jl, co->tracker_score);
        if (!track_object_out(t, p, jl, id, co->mask, &co->box, (long long)co->area)) return 0;
    }
    tb_printf(jl, "]}\n");
    if (jl->oom || p->objs.oom) {
        cli_error("out of memory");
        return 0;
    }
    if (!p->ov) return 1;
    track_draw_marks(t, p, cout);
    if (cout && !track_concept_seen(t, cout)) return 0;
    snprintf(oname, sizeof(oname), "%05d.png", p->frame);
    return (!a->overlay || write_png(t->ovd, oname, p->ov, p->w, p->h, 3)) && (!a->video_out || track_video_frame(t, p));
}

/* The concept tracker and its prompts (-t, --concept-box), with a->prompt_arg. */
static int track_open_concepts(track_run *t) {
    track_args *a = t->a;
    sam3_concept_tracker_options cto = sam3_concept_tracker_options_default();
    int i, n_api = 0; /* distinct prompts so far */
    cto.detection_threshold = cto.new_object_threshold = a->threshold;
    cto.hotstart_delay = a->hotstart;
    t->n_pend = a->hotstart > 1 ? a->hotstart : 1;
    if (sam3_concept_tracker_new(t->c, &cto, &t->ct) != SAM3_OK) {
        cli_error("%s", sam3_ctx_last_error(t->c));
        return CLI_FAIL;
    }
    for (i = 0; i < a->n_texts; i++) {
        sam3_segment_prompt sp;
        sam3_concept *k = NULL;
        int idx = 0, ok;
        memset(&sp, 0, sizeof(sp));
        if (a->cfiles[i] && !load_concept(a->cfiles[i], t->m, &k)) return CLI_FAIL;
        sp.text = a->texts[i];
        sp.concepts = (const sam3_concept *const *)&k;
        sp.n_concepts = k != NULL;
        sp.boxes = a->cbox[i];
        sp.box_labels = a->cbox_label[i];
        sp.n_boxes = a->n_cbox[i];
        ok = sam3_concept_tracker_add_prompt(t->ct, &sp, &idx) == SAM3_OK; /* (the tracker copies the concept) */
        sam3_concept_free(k);
        if (!ok) {
            cli_error("%s '%s': %s", a->cfiles[i] ? "--concept" : "-t", a->cfiles[i] ? a->cfiles[i] : a->texts[i] ? a->texts[i] : "(boxes)",
                      sam3_ctx_last_error(t->c));
            return CLI_FAIL;
        }
        if (idx == n_api) a->prompt_arg[n_api++] = i; /* a new prompt (a repeated one keeps its first -t) */
    }
    return CLI_OK;
}

/* The output folder (before the slow parts: new, empty, an earlier sam3 output, or --force), the
   model, a context, the trackers. CLI_OK, or CLI_FAIL after one line on stderr. */
static int track_open(track_run *t) {
    track_args *a = t->a;
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_result r;
    int i;
    if (!cli_outdir_open(&t->od, a->outdir, TRACK_OUT_NAMES, "tracks.jsonl", CLI_OUT_MARKER, a->force) ||
        (!a->coco && !(t->md = cli_outdir_open_sub(&t->od, "masks", NULL, CLI_OUT_MARKER, a->force))) ||
        (a->overlay && !(t->ovd = cli_outdir_open_sub(&t->od, "overlays", NULL, CLI_OUT_MARKER, a->force)))) {
        cli_error("%s", t->od.err);
        return CLI_FAIL;
    }
    if (!load_model_ex("track", a->model, a->quiet, 0, a->image_size, &t->m)) return CLI_FAIL;
    co.n_threads = a->threads;
    co.blas_threads = 1;
    co.precision = a->precision;
    if ((r = sam3_ctx_new(t->m, &co, &t->c)) != SAM3_OK) {
        cli_error("cannot create a context: %s", sam3_result_string(r));
        return CLI_FAIL;
    }
    if (a->n_texts && track_open_concepts(t) != CLI_OK) return CLI_FAIL;
    if (a->n_prompts && sam3_tracker_new(t->c, NULL, &t->tr) != SAM3_OK) {
        cli_error("%s", sam3_ctx_last_error(t->c));
        return CLI_FAIL;
    }
    for (i = 0; i < a->n_prompts; i++)
        if (a->prompts[i].id >= t->id0) t->id0 = (long long)a->prompts[i].id + 1;
    if (!(t->pend = (track_pending *)calloc((size_t)t->n_pend, sizeof(track_pending)))) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* The input (a folder, or YUV4MPEG2 on stdin), every prompt checked against it before the first
   frame, and the first line of tracks.jsonl. */
static int track_open_source(track_run *t) {
    const track_args *a = t->a;
    int i;
    if (!strcmp(a->input, "-")) {
#if defined(_WIN32)
        _setmode(_fileno(stdin), _O_BINARY); /* no CR-LF or ^Z translation of the frames' bytes */
#endif
        if (frame_src_y4m(&t->src, stdin) != CLI_OK) return CLI_FAIL;
    } else if (frame_src_dir(&t->src, a->input) != CLI_OK) {
        return CLI_FAIL;
    }
    t->prog.n = t->src.y4m ? 0 : t->src.n_names;
    /* a folder's length is known: a prompt past its end fails now rather than after the last frame */
    for (i = 0; !t->src.y4m && i < a->n_prompts; i++)
        if (a->prompts[i].frame >= t->src.n_names) {
            cli_error("frame %d object %d: the input has only %d frames (0..%d)", a->prompts[i].frame, a->prompts[i].id, t->src.n_names,
                      t->src.n_names - 1);
            return CLI_FAIL;
        }
    /* each mask readable (the object count was checked with the command line) */
    for (i = 0; i < a->n_prompts; i++)
        if (a->prompts[i].mask_path) {
            uint8_t *mk = NULL;
            int mw, mh;
            if (read_track_mask(a->prompts[i].mask_path, a->max_pixels, &mk, &mw, &mh) != CLI_OK) return CLI_FAIL;
            free(mk);
        }
    /* the first line says who wrote the file (how a rerun recognises the folder), then a line a frame */
    tb_printf(&t->jl, "{\"generator\": \"sam3 track %s\", \"model\": ", SAM3_VERSION_STRING);
    tb_json_string(&t->jl, a->model);
    tb_printf(&t->jl, ", \"input\": ");
    tb_json_string(&t->jl, a->input);
    tb_printf(&t->jl, "}\n");
    return CLI_OK;
}

/* The prompts given for frame t->f, into the click tracker. */
static int track_add_prompts(track_run *t) {
    track_args *a = t->a;
    int i;
    for (i = 0; i < a->n_prompts; i++) {
        track_prompt *tp_ = &a->prompts[i];
        sam3_tracker_prompt tp;
        uint8_t *mk = NULL;
        sam3_result r;
        if (tp_->frame != t->f) continue;
        memset(&tp, 0, sizeof(tp));
        tp.points = tp_->points;
        tp.n_points = tp_->n_points;
        tp.box = tp_->has_box ? &tp_->box : NULL;
        if (tp_->mask_path) {
            if (read_track_mask(tp_->mask_path, a->max_pixels, &mk, &tp.mask_width, &tp.mask_height) != CLI_OK) return CLI_FAIL;
            tp.mask = mk;
        }
        r = sam3_tracker_add_prompt(t->tr, t->f, tp_->id, &tp);
        free(mk);
        if (r != SAM3_OK) {
            cli_error("frame %d object %d: %s", t->f, tp_->id, sam3_ctx_last_error(t->c));
            return CLI_FAIL;
        }
        tp_->used = 1;
    }
    return CLI_OK;
}

/* A frame's progress line on stderr. */
static void track_progress(const track_run *t, const sam3_tracker_result *out, const sam3_concept_tracker_result *cout, int w, int h,
                           double t0) {
    int i, visible = 0, f = t->f;
    for (i = 0; i < out->n_objects; i++) visible += out->objects[i].object_score > 0;
    fprintf(stderr, "sam3 track: frame %d: %dx%d", f, w, h);
    if (t->tr) fprintf(stderr, ", %d object%s (%d visible)", out->n_objects, out->n_objects == 1 ? "" : "s", visible);
    if (t->ct && cout->frame == f)
        fprintf(stderr, "%s %d %sobject%s visible", t->tr ? " and" : ",", cout->n_objects, t->tr ? "concept " : "", cout->n_objects == 1 ? "" : "s");
    else if (t->ct && cout->frame >= 0)
        fprintf(stderr, ", frame %d out (%d object%s visible)", cout->frame, cout->n_objects, cout->n_objects == 1 ? "" : "s");
    else if (t->ct) fprintf(stderr, ", held back");
    fprintf(stderr, ", %s", fmt_ms(sam3_time_ms() - t0));
    if (t->tr && !t->ct) { /* (the concept tracker's frame has stages of its own: the total alone) */
        const sam3_timings tm = sam3_ctx_timings(t->c);
        fprintf(stderr, " (image encoder %s, tracking %s)", fmt_ms(tm.preprocess + tm.vision_trunk + tm.vision_neck), fmt_ms(tm.tracking));
    }
    fputc('\n', stderr);
}

/* Frame t->f (rgb, w x h, its name) through the trackers: its prompts, its clicked objects' masks
   and JSON, and the lines of the frames that are complete (this one, or with clip mode an earlier
   one). t0: when the frame's reading began. */
static int track_frame(track_run *t, const unsigned char *rgb, int w, int h, const char *name, double t0) {
    const track_args *a = t->a;
    const int f = t->f;
    track_pending *p = &t->pend[f % t->n_pend];
    sam3_tracker_result out;
    sam3_concept_tracker_result cout;
    int i;
    if (track_add_prompts(t) != CLI_OK) return CLI_FAIL;
    free(p->ov);
    p->ov = NULL;
    p->objs.len = 0;
    p->n_obj = p->n_lost = 0;
    p->frame = f;
    p->w = w;
    p->h = h;
    snprintf(p->name, sizeof(p->name), "%s", name);
    if (a->overlay || a->video_out) {
        if (!(p->ov = (unsigned char *)malloc((size_t)w * h * 3))) {
            cli_error("out of memory");
            return CLI_FAIL;
        }
        memcpy(p->ov, rgb, (size_t)w * h * 3);
    }
    memset(&out, 0, sizeof(out));
    memset(&cout, 0, sizeof(cout));
    cout.frame = -1;
    /* with both kinds of object the concept tracker encodes the frame and the click tracker
       reuses that encoding (one image encoder pass a frame) */
    if ((t->ct && sam3_concept_tracker_push_frame(t->ct, rgb, w, h, w * 3, SAM3_RGB8, &cout) != SAM3_OK) ||
        (t->tr && (t->ct ? sam3_tracker_push_encoded(t->tr, &out) : sam3_tracker_push_frame(t->tr, rgb, w, h, w * 3, SAM3_RGB8, &out)) != SAM3_OK)) {
        cli_error("frame %d (%s): %s", f, name, sam3_ctx_last_error(t->c));
        return CLI_FAIL;
    }
    for (i = 0; i < out.n_objects; i++) {
        const sam3_tracker_object *to = &out.objects[i];
        tb_printf(&p->objs, "%s{\"id\": %d, \"object_score_logit\": ", p->n_obj++ ? ", " : "", to->id);
        tb_json_number(&p->objs, to->object_score);
        if (!track_object_out(t, p, &p->objs, to->id, to->mask, &to->box, (long long)to->area)) return CLI_FAIL;
        if (!to->area) p->lost[p->n_lost++] = to->id;
    }
    if (!a->quiet && a->verbose) track_progress(t, &out, &cout, w, h, t0);
    if (!a->quiet) {
        char label[64];
        snprintf(label, sizeof(label), "frame %d", f);
        cli_items_line(&t->prog, f + 1, t->src.y4m ? label : name, sam3_time_ms() - t0, NULL);
    }
    if (!t->ct) return track_finish(t, p, NULL) ? CLI_OK : CLI_FAIL;
    if (cout.frame >= 0 && !track_finish(t, &t->pend[cout.frame % t->n_pend], &cout))
        return CLI_FAIL;
    return CLI_OK;
}

/* Every frame of the input, then (clip mode) the frames the concept tracker still holds back.
   CLI_OK also when the input failed part-way (t->input_failed: the frames before are kept). */
static int track_frames(track_run *t) {
    unsigned char *rgb = NULL;
    char name[1024];
    int w = 0, h = 0, res, rc = CLI_FAIL;
    for (t->f = 0;; t->f++) {
        double t0 = sam3_time_ms();
        free(rgb);
        rgb = NULL;
        if ((res = frame_src_next(&t->src, &rgb, &w, &h, name, sizeof(name))) == TRACK_END) break;
        if (res != CLI_OK) { /* a truncated stream or a bad frame: keep the frames done, exit 1 */
            t->input_failed = 1;
            break;
        }
        if (track_frame(t, rgb, w, h, name, t0) != CLI_OK) goto done;
    }
    while (t->ct) {
        sam3_concept_tracker_result cout;
        if (sam3_concept_tracker_flush(t->ct, &cout) != SAM3_OK) {
            cli_error("%s", sam3_ctx_last_error(t->c));
            goto done;
        }
        if (cout.frame < 0) break;
        if (!track_finish(t, &t->pend[cout.frame % t->n_pend], &cout)) goto done;
    }
    rc = CLI_OK;
done:
    free(rgb);
    return rc;
}

/* tracks.jsonl and the commit (the frames processed are written even when the input failed
   part-way, a camera stream cut off: the run still exits 1), then the checks and the summary. */
static int track_end(track_run *t, double t_all) {
    const track_args *a = t->a;
    int i;
    if (t->f > 0 && (!cli_outdir_write(&t->od, "tracks.jsonl", t->jl.p, t->jl.len) || !cli_outdir_commit(&t->od))) {
        cli_error("%s", t->od.err);
        return CLI_FAIL;
    }
    if (t->vf && t->vf != stdout) { /* (stdout was flushed after every frame) */
        FILE *vf = t->vf;
        t->vf = NULL;
        if (fclose(vf) != 0) {
            cli_error("--video-out %s: cannot write: %s", a->video_out, strerror(errno));
            return CLI_FAIL;
        }
    }
    if (t->input_failed) return CLI_FAIL;
    if (t->f == 0) { /* a stream with a header and no frame: nothing tracked, nothing written */
        cli_error("%s: no frames: nothing tracked, nothing written", t->src.y4m ? "stdin" : a->input);
        return CLI_FAIL;
    }
    for (i = 0; i < a->n_prompts; i++)
        if (!a->prompts[i].used) {
            cli_error("frame %d object %d: the input has only %d frames: the prompt was not used", a->prompts[i].frame, a->prompts[i].id, t->f);
            return CLI_FAIL;
        }
    if (!a->quiet) fprintf(stderr, "sam3 track: %d frames in %s; wrote %s/tracks.jsonl\n", t->f, fmt_ms(sam3_time_ms() - t_all), a->outdir);
    return CLI_OK;
}

/* Frees what the run holds; the output folder's close removes what was not committed. */
static void track_close(track_run *t) {
    int i;
    cli_outdir_close(&t->od);
    free(t->jl.p);
    for (i = 0; t->pend && i < t->n_pend; i++) {
        free(t->pend[i].ov);
        free(t->pend[i].objs.p);
    }
    free(t->pend);
    free(t->seen);
    cli_y4m_out_free(&t->vo);
    if (t->vf && t->vf != stdout) {
        fclose(t->vf);
        if (!t->vo.frames) remove(t->a->video_out); /* created by this run, which wrote no frame into it */
    }
    frame_src_free(&t->src);
    sam3_tracker_free(t->tr);
    sam3_concept_tracker_free(t->ct);
    sam3_ctx_free(t->c);
    sam3_free(t->m);
}

static int run_track(track_args *a) {
    track_run t;
    int rc = CLI_FAIL;
    double t_all = sam3_time_ms();
    memset(&t, 0, sizeof(t));
    t.a = a;
    t.n_pend = 1;
    t.src.max_pixels = a->max_pixels;
    t.src.keep_orientation = a->keep_orientation;
    /* (track_open opens t.od first, whatever happens next: track_close may close it) */
    if (track_open(&t) == CLI_OK && track_open_source(&t) == CLI_OK && track_frames(&t) == CLI_OK) rc = track_end(&t, t_all);
    track_close(&t);
    return rc;
}

int cmd_track(int argc, char **argv) {
    static track_prompt prompts[TRACK_MAX_PROMPTS];
    track_args a;
    int help, rc;
    memset(&a, 0, sizeof(a));
    a.prompts = prompts;
    cli_cmd = "track";
    rc = parse_track_args(argc, argv, &a, &help);
    if (rc != CLI_OK || help) return rc;
    return run_track(&a);
}

