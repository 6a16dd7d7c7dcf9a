/* cli_common.c - what the sam3 command-line tool's commands share (examples/cli_common.h):
   messages and exit codes, loading a model, option parsing, the JSON text buffer, reading images
   (examples/image_io.c), writing PNGs (stb_image_write, compiled here) and drawing overlays
   (stb_easy_font). */
#define _POSIX_C_SOURCE 200809L
#include "cli_common.h"
#include "image_io.h"
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
#ifdef _OPENMP
#include <omp.h>
#endif
#ifndef S_ISDIR
#define S_ISDIR(mode) (((mode)&S_IFMT) == S_IFDIR)
#endif

/* ---- messages, the model ---- */

const char *cli_cmd = "segment"; /* the running command, for cli_error */

/* One line on stderr: "sam3 COMMAND: ...". */
void cli_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "sam3 %s: ", cli_cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, const char *arg) {
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
   or directory"); image_size: sam3_load_options.image_size (0: the file's). Returns 1 on success. */
int load_model_ex(const char *cmd, const char *path, int quiet, int verify, int image_size, sam3_model **out) {
    sam3_load_options lo = sam3_load_options_default();
    load_log ll;
    sam3_result r;
    char err[512];
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
    lo.verify = verify;
    lo.image_size = image_size;
    lo.error = err; /* the reason of a failure, from the library itself */
    lo.error_size = sizeof(err);
    if ((r = sam3_load(path, &lo, out)) != SAM3_OK) {
        const char *e = !strncmp(err, "sam3_load: ", 11) ? err + 11 : err;
        const size_t n = strlen(path);
        struct stat st;
        /* a Hugging Face checkpoint (its folder, or its safetensors file) where a .sam3 file goes */
        const int hf = (n >= 12 && !strcmp(path + n - 12, ".safetensors")) || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
        fprintf(stderr, "sam3 %s: cannot load model '%s': %s%s\n", cmd, path, e[0] ? e : sam3_result_string(r),
                hf ? " (a Hugging Face checkpoint? convert its folder first: python3 tools/convert.py FOLDER model.sam3)" : "");
        return 0;
    }
    return 1;
}

int load_concept(const char *path, const sam3_model *m, sam3_concept **out) {
    FILE *f = fopen(path, "rb");
    long len = -1;
    unsigned char *b = NULL;
    char err[256];
    sam3_result r;
    *out = NULL;
    if (!f) {
        cli_error("cannot open '%s': %s", path, strerror(errno));
        return 0;
    }
    if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) || !(b = (unsigned char *)malloc((size_t)len + 1)) ||
        fread(b, 1, (size_t)len, f) != (size_t)len) {
        cli_error("cannot read '%s'", path);
        free(b);
        fclose(f);
        return 0;
    }
    fclose(f);
    r = sam3_concept_load(m, b, (size_t)len, out, err, sizeof(err));
    free(b);
    if (r != SAM3_OK) cli_error("'%s': %s", path, err);
    return r == SAM3_OK;
}

int load_model(const char *cmd, const char *path, int quiet, sam3_model **out) {
    return load_model_ex(cmd, path, quiet, 0, 0, out);
}

/* SAM 1 files (arch "sam1") have only the interactive head: no text encoder, no detector. */
int model_is_sam1(const sam3_model *m) {
    const char *arch = sam3_model_config_string(m, "arch");
    return arch && !strcmp(arch, "sam1");
}

int64_t cfgi(const sam3_model *m, const char *key) {
    int64_t v = 0;
    sam3_model_config_int(m, key, &v);
    return v;
}

/* ---- options ---- */

/* Option with a value: "-x V", "--long V" or "--long=V". Returns 1 and sets *val (moving *i past
   the value) when argv[*i] is this option, 0 when it is not, -1 when its value is missing. */
int opt_value(int argc, char **argv, int *i, const char *short_name, const char *long_name, const char **val) {
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

int parse_float(const char *s, float *out) {
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || fabs(v) > 1e30) return 0;
    *out = (float)v;
    return 1;
}

int parse_int(const char *s, int lo, int hi, int *out) {
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
const char *parse_box(const char *s, sam3_box *b, int *label) {
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
    *label = 1;
    if (n == 5) {
        if (!strcmp(field[4], "pos") || !strcmp(field[4], "positive") || !strcmp(field[4], "1")) *label = 1;
        else if (!strcmp(field[4], "neg") || !strcmp(field[4], "negative") || !strcmp(field[4], "0")) *label = 0;
        else return "the label must be pos or neg (or 1 or 0)";
    }
    if (!(b->x0 < b->x1) || !(b->y0 < b->y1)) return "needs x0 < x1 and y0 < y1";
    return NULL;
}

/* "x,y" or "x,y,L" with L one of pos, positive, 1, neg, negative, 0. Returns NULL or what is wrong. */
const char *parse_point(const char *s, sam3_point *pt) {
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

/* "850 ms" or "31.2 s"; eight rotating buffers, so one printf can show up to eight. */
const char *fmt_ms(double ms) {
    static char buf[8][32];
    static int next;
    char *b = buf[next++ & 7];
    if (ms < 10000) snprintf(b, 32, "%.0f ms", ms);
    else snprintf(b, 32, "%.1f s", ms / 1000);
    return b;
}

/* ---- progress over many items ---- */

/* "m:ss", or "h:mm:ss" from an hour on */
static void cli_fmt_eta(double s, char *out, size_t cap) {
    long t = s < 0 ? 0 : s > 3.6e8 ? 360000000L : (long)(s + 0.5);
    if (t < 3600) snprintf(out, cap, "%ld:%02ld", t / 60, t % 60);
    else snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void cli_items_line(cli_items *p, long k, const char *name, double ms, const char *note) {
    char of[32], eta[32];
    if (p->n > 0) snprintf(of, sizeof(of), "%ld/%ld", k, p->n);
    else snprintf(of, sizeof(of), "%ld/?", k);
    if (ms < 0) {
        fprintf(stderr, "%s %s  %s\n", of, name, note ? note : "skipped");
        return;
    }
    p->n_timed++;
    p->ms += ms;
    if (p->ms <= 0) p->ms = 1e-3; /* (a clock too coarse to see the item) */
    fprintf(stderr, "%s %s  %.1f img/s", of, name, 1000.0 * (double)p->n_timed / p->ms);
    if (p->n > 0) {
        cli_fmt_eta((double)(p->n - k) * p->ms / (double)p->n_timed / 1000.0, eta, sizeof(eta));
        fprintf(stderr, "  ETA %s", eta);
    }
    fputc('\n', stderr);
}

/* ---- results.json and friends ---- */

/* Room for n more bytes and the terminating NUL (the buffer doubled past them); 0 and b->oom set
   when it cannot be had. */
static int tb_room(text_buf *b, size_t n) {
    if (b->cap - b->len <= n) {
        size_t cap = (b->cap + n + 1) * 2;
        char *p = (char *)realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return 0;
        }
        b->p = p;
        b->cap = cap;
    }
    return 1;
}

void tb_printf(text_buf *b, const char *fmt, ...) {
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
        if (!tb_room(b, (size_t)n)) return;
    }
    b->len += (size_t)n;
}

/* n bytes of s as they are */
static void tb_append(text_buf *b, const char *s, size_t n) {
    if (b->oom || !tb_room(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* A JSON string literal in pure ASCII: UTF-8 becomes \uXXXX (surrogate pairs above U+FFFF),
   invalid UTF-8 bytes become U+FFFD, control characters are escaped. */
void tb_json_string(text_buf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    tb_printf(b, "\"");
    while (*p) {
        unsigned long cp = *p;
        int extra = 0, k;
        if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\') { /* a run needing no escape, copied at once (an RLE is MBs of it) */
            const unsigned char *q = p;
            while (*q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\') q++;
            tb_append(b, (const char *)p, (size_t)(q - p));
            p = q;
            continue;
        }
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

void tb_json_number(text_buf *b, double v) {
    if (isfinite(v)) tb_printf(b, "%.6g", v);
    else tb_printf(b, "null");
}

char *cli_rle_string(const uint8_t *mask, int w, int h) {
    size_t len;
    char *s;
    if (sam3_mask_to_rle(mask, w, h, NULL, 0, &len) != SAM3_OK || !(s = (char *)malloc(len + 1))) return NULL;
    if (sam3_mask_to_rle(mask, w, h, s, len + 1, &len) != SAM3_OK) {
        free(s);
        return NULL;
    }
    return s;
}

/* The threads for the CLI's own parallel loops: threads, or OpenMP's default (1 without it). */
static int cli_threads(int threads) {
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

int cli_rle_strings(const uint8_t *const *masks, int n, int w, int h, int threads, char **out) {
    int k, ok = 1;
    (void)threads; /* only in the OpenMP clause */
    /* a noisy mask's RLE is long: encoding many costs more than the model's masks did */
#ifdef _OPENMP
#pragma omp parallel for num_threads(cli_threads(threads)) schedule(dynamic, 1) reduction(&& : ok)
#endif
    for (k = 0; k < n; k++) ok = (out[k] = cli_rle_string(masks[k], w, h)) != NULL && ok;
    return ok;
}

/* ---- images in and out ---- */

int read_image(const char *path, unsigned long long max_pixels, int keep_orientation, cli_image *img) {
    cli_img im;
    char why[512];
    int stored;
    if (!cli_img_read_file(path, max_pixels, &im, why, sizeof(why))) {
        cli_error("cannot read image '%s': %s", path, why);
        return CLI_FAIL;
    }
    stored = im.orientation;
    if (!keep_orientation && !cli_img_apply_orientation(&im)) {
        free(im.pixels);
        cli_error("out of memory turning '%s' upright (EXIF orientation %d)", path, stored);
        return CLI_FAIL;
    }
    img->orientation = stored;
    img->oriented = !keep_orientation && stored > 1;
    img->pixels = im.pixels;
    img->w = im.w;
    img->h = im.h;
    img->channels = im.channels;
    img->format = im.channels == 1 ? SAM3_GRAY8 : SAM3_RGB8;
    return CLI_OK;
}

void tb_orientation(text_buf *b, const cli_image *img) {
    if (img->orientation > 1)
        tb_printf(b, ", \"exif_orientation\": {\"stored\": %d, \"applied\": %s}", img->orientation, img->oriented ? "true" : "false");
}

/* Encodes a PNG and writes it as od/name (put in place at the commit). 0 after one line on stderr. */
int write_png(cli_outdir *od, const char *name, const unsigned char *pixels, int w, int h, int channels) {
    int len = 0, ok;
    unsigned char *png = stbi_write_png_to_mem(pixels, w * channels, w, h, channels, &len);
    if (!png) {
        cli_error("out of memory encoding '%s/%s'", od->path, name);
        return 0;
    }
    ok = cli_outdir_write(od, name, png, (size_t)len);
    STBIW_FREE(png);
    if (!ok) cli_error("%s", od->err);
    return ok;
}

/* The masks' 8-bit images: threads' buffers up to this many bytes in all. */
#define CLI_MASK_BUF_BYTES ((size_t)256 << 20)
int write_mask_pngs(cli_outdir *od, const uint8_t *const *masks, int n, int w, int h, int threads) {
    const size_t np = (size_t)w * h;
    const size_t cap = CLI_MASK_BUF_BYTES / (np ? np : 1); /* masks a batch at most */
    int nt = cli_threads(threads), k0, ok;
    unsigned char *buf, **png;
    int *len;
    char name[32];
    if (nt > n) nt = n;
    if ((size_t)nt > cap) nt = (int)cap;
    if (nt < 1) nt = 1;
    buf = (unsigned char *)malloc(np * (size_t)nt);
    png = (unsigned char **)calloc((size_t)nt, sizeof(unsigned char *));
    len = (int *)calloc((size_t)nt, sizeof(int));
    ok = buf && png && len;
    if (!ok) cli_error("out of memory encoding the masks of '%s'", od->path);
    /* a batch of nt masks encoded at once (deflate costs more than the model's masks did), then
       written in order */
    for (k0 = 0; ok && k0 < n; k0 += nt) {
        const int nb = n - k0 < nt ? n - k0 : nt;
        int j;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nb) schedule(static, 1)
#endif
        for (j = 0; j < nb; j++) {
            unsigned char *b = buf + (size_t)j * np;
            const uint8_t *m = masks[k0 + j];
            size_t i;
            for (i = 0; i < np; i++) b[i] = m[i] ? 255 : 0;
            png[j] = stbi_write_png_to_mem(b, w, w, h, 1, &len[j]);
        }
        for (j = 0; j < nb; j++) {
            snprintf(name, sizeof(name), "mask_%03d.png", k0 + j);
            if (ok && !png[j]) {
                cli_error("out of memory encoding '%s/%s'", od->path, name);
                ok = 0;
            }
            if (ok && !(ok = cli_outdir_write(od, name, png[j], (size_t)len[j]))) cli_error("%s", od->err);
            STBIW_FREE(png[j]);
            png[j] = NULL;
        }
    }
    free(buf);
    free(png);
    free(len);
    return ok;
}

/* ---- drawing the overlays ---- */

const unsigned char PALETTE[12][3] = {{230, 25, 75},  {60, 180, 75},   {255, 225, 25}, {0, 130, 200},
                                             {245, 130, 48}, {145, 30, 180},  {70, 240, 240}, {240, 50, 230},
                                             {210, 245, 60}, {250, 190, 212}, {0, 128, 128},  {170, 110, 40}};

/* Fills [x0,x1) x [y0,y1), clipped to the image. */
void fill_rect(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, const unsigned char *col) {
    int x, y;
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > w ? w : x1, y1 = y1 > h ? h : y1;
    for (y = y0; y < y1; y++)
        for (x = x0; x < x1; x++) memcpy(rgb + 3 * ((size_t)y * w + x), col, 3);
}

/* stb_easy_font text at (x, y), each font pixel drawn as scale x scale; returns its size. When
   draw is 0, only measures. */
void draw_text(unsigned char *rgb, int w, int h, int x, int y, int scale, const char *text, const unsigned char *col,
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

/* A mask (w*h bytes, non-zero = set) tinted half-way to col, with a solid one-pixel outline. */
void tint_mask(unsigned char *rgb, int w, int h, const uint8_t *m, const unsigned char *col) {
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
int line_scale(int w, int h) {
    int s = (w < h ? w : h) / 300;
    return s < 1 ? 1 : s;
}

/* The outline of the pixels x0..x1, y0..y1 (inclusive, inside the image), s pixels wide, inwards. */
void draw_box(unsigned char *rgb, int w, int h, int x0, int y0, int x1, int y1, int s, const unsigned char *col) {
    fill_rect(rgb, w, h, x0, y0, x1 + 1, y0 + s, col);
    fill_rect(rgb, w, h, x0, y1 + 1 - s, x1 + 1, y1 + 1, col);
    fill_rect(rgb, w, h, x0, y0, x0 + s, y1 + 1, col);
    fill_rect(rgb, w, h, x1 + 1 - s, y0, x1 + 1, y1 + 1, col);
}

/* A label on a filled tag of col (black or white text, whichever reads better on it): above the
   point (x, y) when it fits, else below it, moved left to stay inside the image. */
void draw_tag(unsigned char *rgb, int w, int h, int x, int y, int s, const char *label, const unsigned char *col) {
    static const unsigned char black[3] = {0, 0, 0}, white[3] = {255, 255, 255};
    int tw, th, lw, lh, lx, ly;
    draw_text(rgb, w, h, 0, 0, s, label, col, 0, &tw, &th);
    lw = tw + 3 * s, lh = th + 2 * s; /* the text with a margin */
    lx = x + lw > w ? (w - lw > 0 ? w - lw : 0) : x;
    ly = y - lh >= 0 ? y - lh : y;
    fill_rect(rgb, w, h, lx, ly, lx + lw, ly + lh, col);
    draw_text(rgb, w, h, lx + 2 * s, ly + s, s, label, 3 * col[1] + 2 * col[0] + col[2] > 900 ? black : white, 1, &tw, &th);
}

/* A filled disc of radius r (pixels) centred on pixel (cx, cy), clipped to the image. */
static void fill_disc(unsigned char *rgb, int w, int h, int cx, int cy, int r, const unsigned char *col) {
    int x, y;
    for (y = cy - r; y <= cy + r; y++)
        for (x = cx - r; x <= cx + r; x++)
            if (x >= 0 && y >= 0 && x < w && y < h && (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r + r)
                memcpy(rgb + 3 * ((size_t)y * w + x), col, 3);
}

static int clamp_px(double v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

/* A prompt: its box (when not NULL) outlined in box_col, then each click as a green (object) or
   red (background) dot with a white rim. */
void draw_prompt(unsigned char *rgb, int w, int h, const sam3_point *points, int n_points, const sam3_box *box, const unsigned char *box_col) {
    static const unsigned char white[3] = {255, 255, 255}, green[3] = {40, 200, 60}, red[3] = {230, 30, 40};
    int k, s = line_scale(w, h);
    if (box)
        draw_box(rgb, w, h, clamp_px(floor(box->x0), 0, w - 1), clamp_px(floor(box->y0), 0, h - 1), clamp_px(floor(box->x1), 0, w - 1),
                 clamp_px(floor(box->y1), 0, h - 1), s, box_col);
    for (k = 0; k < n_points; k++) {
        const sam3_point *p = &points[k];
        int cx = clamp_px(floor(p->x), -1000000, 1000000), cy = clamp_px(floor(p->y), -1000000, 1000000);
        fill_disc(rgb, w, h, cx, cy, 3 * s + 2, white);
        fill_disc(rgb, w, h, cx, cy, 2 * s + 1, p->label ? green : red);
    }
}
