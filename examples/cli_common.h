/* cli_common.h - what the sam3 command-line tool's translation units share (defined in
   examples/cli_common.c), and the entry points of the commands that live in other units.

   The tool: examples/sam3_cli.c (main; segment, points, merge, info, tokenize; the one unit that
   compiles sam3.h's implementation), cli_track.c (track), cli_dataset.c (folders, lists, shards,
   COCO, merge), sam3_bench.c (bench), cli_common.c (this), cli_outdir.c (the output folder),
   image_io.c (JPEG/PNG in), cli_y4m.h (YUV4MPEG2 in, for track alone). */
#ifndef SAM3_CLI_COMMON_H
#define SAM3_CLI_COMMON_H

#include "../sam3.h"
#include "cli_outdir.h"

#include <stddef.h>
#include <stdint.h>

/* Exit codes: success, runtime failure, usage error (one line on stderr names the problem). */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

/* ---- messages ---- */

extern const char *cli_cmd; /* the running command, for cli_error ("segment" until set) */
/* One line on stderr: "sam3 COMMAND: ...". */
void cli_error(const char *fmt, ...);
/* "sam3 CMD: <fmt with arg> (try 'sam3 CMD --help')" on stderr; returns CLI_USAGE. */
int usage_error(const char *cmd, const char *fmt, const char *arg);
/* "850 ms" or "31.2 s"; eight rotating buffers, so one printf can show up to eight. */
const char *fmt_ms(double ms);

/* ---- progress over many items: the images of a folder or list, the frames of sam3 track ---- */

typedef struct cli_items {
    long n;        /* items in all; 0 when not known (a stream) */
    long n_timed;  /* items processed so far (skipped ones not counted) */
    double ms;     /* their time */
} cli_items;

/* One line on stderr after item k (1-based) of p->n took ms (ms < 0: skipped, and note says why):
   "k/N name  X.X img/s  ETA m:ss", the rate and the time left from the items processed so far
   ("k/? name  X.X img/s" when N is not known; h:mm:ss past an hour). */
void cli_items_line(cli_items *p, long k, const char *name, double ms, const char *note);

/* ---- the model ---- */

/* sam3_load with one line on stderr on failure ("sam3 CMD: cannot open model 'x': No such file
   or directory"); load notes on stderr unless quiet. Returns 1 on success. */
int load_model_ex(const char *cmd, const char *path, int quiet, int verify, int image_size, sam3_model **out);
int load_model(const char *cmd, const char *path, int quiet, sam3_model **out);
/* A sam3_concept file (sam3 concept -o) for the model m; one line on stderr ("sam3 CMD: 'f':
   concept: made with another model ...") on failure. Returns 1 on success. */
int load_concept(const char *path, const sam3_model *m, sam3_concept **out);
/* SAM 1 files (arch "sam1") have only the interactive head: no text encoder, no detector. */
int model_is_sam1(const sam3_model *m);
/* An integer config entry, 0 when absent. */
int64_t cfgi(const sam3_model *m, const char *key);

/* ---- options ---- */

/* Option with a value: "-x V", "--long V" or "--long=V". Returns 1 and sets *val (moving *i past
   the value) when argv[*i] is this option, 0 when it is not, -1 when its value is missing. */
int opt_value(int argc, char **argv, int *i, const char *short_name, const char *long_name, const char **val);
/* A finite number (|v| <= 1e30) / an integer in lo..hi; 1, or 0 when s is not one. */
int parse_float(const char *s, float *out);
int parse_int(const char *s, int lo, int hi, int *out);
/* "x0,y0,x1,y1" or "x0,y0,x1,y1,L" with L one of pos, positive, 1, neg, negative, 0. Returns NULL or
   what is wrong. */
const char *parse_box(const char *s, sam3_box *b, int *label);
/* "x,y" or "x,y,L" with L one of pos, positive, 1, neg, negative, 0. Returns NULL or what is wrong. */
const char *parse_point(const char *s, sam3_point *pt);

/* ---- results.json, tracks.jsonl: a growing text buffer and JSON ---- */

typedef struct text_buf {
    char *p;
    size_t len, cap;
    int oom; /* an allocation failed: later writes are dropped */
} text_buf;

void tb_printf(text_buf *b, const char *fmt, ...);
/* A JSON string literal in pure ASCII: UTF-8 becomes \uXXXX (surrogate pairs above U+FFFF),
   invalid UTF-8 bytes become U+FFFD, control characters are escaped. */
void tb_json_string(text_buf *b, const char *s);
/* %.6g, or null when not finite. */
void tb_json_number(text_buf *b, double v);
/* A mask's COCO compressed RLE (sam3_mask_to_rle) as a malloc'ed string; NULL: out of memory. */
char *cli_rle_string(const uint8_t *mask, int w, int h);
/* out[k] = cli_rle_string(masks[k], w, h) for n masks, on up to threads threads (0: OpenMP's
   default). 0 when any is out of memory (the others set or NULL: the caller frees them). */
int cli_rle_strings(const uint8_t *const *masks, int n, int w, int h, int threads, char **out);

/* ---- images in and out ---- */

/* What sam3 writes into its manifests' first entry ("generator": "sam3 ..."): how a rerun
   recognises its own folder (examples/cli_outdir.h). */
#define CLI_OUT_MARKER "\"generator\": \"sam3 "

typedef struct cli_image {
    unsigned char *pixels; /* (h, w, channels) from image_io.h; free() */
    int w, h, channels;    /* channels 1 (grey) or 3 (RGB) */
    sam3_pixel_format format;
    int orientation;       /* the file's EXIF orientation (1-8; 1: none) */
    int oriented;          /* 1: the pixels were turned upright by it (no --keep-orientation) */
} cli_image;

/* A JPEG or PNG file (examples/image_io.c); CLI_OK, or CLI_FAIL after one line on stderr. */
int read_image(const char *path, unsigned long long max_pixels, int keep_orientation, cli_image *img);
/* ", \"exif_orientation\": {...}" for an image whose file has an EXIF orientation, else nothing */
void tb_orientation(text_buf *b, const cli_image *img);
/* Encodes a PNG and writes it as od/name (put in place at the commit). 0 after one line on stderr. */
int write_png(cli_outdir *od, const char *name, const unsigned char *pixels, int w, int h, int channels);
/* od/mask_000.png, mask_001.png, ... for n masks (w x h bytes, nonzero = object, written 255),
   encoded on up to threads threads (0: OpenMP's default) a batch at a time and written in order:
   the same bytes at any thread count. 0 after one line on stderr. */
int write_mask_pngs(cli_outdir *od, const uint8_t *const *masks, int n, int w, int h, int threads);

/* ---- drawing the overlays (RGB8 images, w*h*3 bytes) ---- */

extern const unsigned char PALETTE[12][3]; /* the objects' colours, in turn */
/* Fills [x0,x1) x [y0,y1), clipped to the image. */
void fill_rect(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, const unsigned char *col);
/* stb_easy_font text at (x, y), each font pixel drawn as scale x scale; returns its size. When
   draw is 0, only measures. */
void draw_text(unsigned char *rgb, int w, int h, int x, int y, int scale, const char *text, const unsigned char *col, int draw, int *tw,
               int *th);
/* A mask (w*h bytes, non-zero = set) tinted half-way to col, with a solid one-pixel outline. */
void tint_mask(unsigned char *rgb, int w, int h, const uint8_t *m, const unsigned char *col);
/* Line width of the overlay's drawings: 1 pixel per 300 of the shorter side, at least 1. */
int line_scale(int w, int h);
/* The outline of the pixels x0..x1, y0..y1 (inclusive, inside the image), s pixels wide, inwards. */
void draw_box(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, int s, const unsigned char *col);
/* A label on a filled tag of col: above the point (x, y) when it fits, else below, kept inside. */
void draw_tag(unsigned char *rgb, int w, int h, int x, int y, int s, const char *label, const unsigned char *col);
/* A prompt: its box (when not NULL) outlined in box_col, each click a green (object) or red
   (background) dot with a white rim. */
void draw_prompt(unsigned char *rgb, int w, int h, const sam3_point *points, int n_points, const sam3_box *box, const unsigned char *box_col);

/* ---- the commands in other units (argv after the command's name) ---- */

int cmd_track(int argc, char **argv);  /* examples/cli_track.c */
int bench_main(int argc, char **argv); /* examples/sam3_bench.c, on the public API alone */

#endif /* SAM3_CLI_COMMON_H */
