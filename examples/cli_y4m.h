/* cli_y4m.h - the sam3 command-line tool's YUV4MPEG2 reader (`sam3 track -i -`), on its own so
   that tests/fuzz_y4m.c fuzzes the very same code, and its writer (`sam3 track --video-out`). A
   header of static functions: of the CLI, only examples/cli_track.c includes it.

   What is read, and the bounds on it:
   * The stream header "YUV4MPEG2 W<w> H<h> [C<colour space>] [I<interlacing>] [X<extension>]..."
     and a LF. The first 10 bytes must be "YUV4MPEG2 " (anything else is refused after 10 bytes:
     /dev/zero or a video file are not read on); the whole line is at most CLI_Y4M_MAX_HEADER
     bytes (longer is an error, not a cut). A CR before the LF is an error naming it.
   * Frames must fit the caller's pixel budget (w * h, as images do) and SAM3_MAX_IMAGE_DIM a side.
   * Colour spaces: 8-bit 4:2:0 (C420, C420jpeg, C420paldv, C420mpeg2, none) and 4:4:4 (C444).
     Colours: BT.601, limited range unless XCOLORRANGE=FULL (what ffmpeg writes for yuvj420p,
     the format of MJPEG webcams), which is decoded as full range (JPEG's BT.601).
   * Each frame: a line "FRAME[ params]" of at most CLI_Y4M_MAX_FRAME_HEADER bytes, then exactly
     the planes' bytes. A stream that ends inside a frame is an error (the frames before it were
     returned); one that ends between frames is the end.
   * The frame rate F<n>:<d> is kept (fps_n, fps_d; 0 when absent or not two numbers).
   Memory: one frame's planes and its RGB, allocated once the header is read.

   What is written (cli_y4m_out_*): "YUV4MPEG2 W<w> H<h> F<n>:<d> Ip A1:1 C420jpeg
   XCOLORRANGE=LIMITED", then each RGB8 frame as BT.601 limited range, each chroma sample the mean
   of its 2x2 block (the blocks of the last column and row of an odd size are halves), what
   ffmpeg's yuv420p holds and the reader above reads back.

   Names: cli_y4m_* public to the CLI, cli_y4m__* private. Messages go to y->err; nothing is printed. */
#ifndef SAM3_CLI_Y4M_H
#define SAM3_CLI_Y4M_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SAM3_MAX_IMAGE_DIM
#define SAM3_MAX_IMAGE_DIM 16384 /* sam3.h's default: the library refuses larger sides */
#endif
#define CLI_Y4M_MAX_HEADER 4096       /* bytes of the stream header line, LF included */
#define CLI_Y4M_MAX_FRAME_HEADER 1024 /* bytes of a FRAME line, LF included */

typedef struct cli_y4m {
    FILE *f;
    int w, h, chroma444, full_range;
    int frames;         /* frames returned so far */
    int fps_n, fps_d;   /* the header's frame rate; 0 when it has none */
    unsigned char *yuv; /* one frame's planes */
    char err[512];
} cli_y4m;

static void cli_y4m_free(cli_y4m *y) {
    free(y->yuv);
    y->yuv = NULL;
}

/* One line into buf (NUL-terminated, the LF not kept), reading at most cap bytes. 1: a line; 0:
   the end of the stream before any byte; -1: no LF within cap bytes (reading stops there); -2:
   the stream ended inside the line. */
static int cli_y4m__line(FILE *f, char *buf, size_t cap) {
    size_t n = 0;
    int ch;
    while (n + 1 < cap && (ch = fgetc(f)) != EOF) {
        if (ch == '\n') {
            buf[n] = 0;
            return 1;
        }
        buf[n++] = (char)ch;
    }
    buf[n] = 0;
    if (n + 1 >= cap) return -1;
    return n ? -2 : 0;
}

static int cli_y4m__int(const char *s, int lo, int hi, int *out) {
    long v = 0;
    if (!*s) return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10 + (*s - '0');
        if (v > hi) return 0;
    }
    if (v < lo) return 0;
    *out = (int)v;
    return 1;
}

/* Reads and checks the stream header of f. 1, or 0 with y->err set. max_pixels: w * h budget. */
static int cli_y4m_open(cli_y4m *y, FILE *f, uint64_t max_pixels) {
    char line[CLI_Y4M_MAX_HEADER], *tok, *next;
    size_t n;
    int c420 = 1, r;
    memset(y, 0, sizeof(*y));
    y->f = f;
    n = fread(line, 1, 10, f);
    if (n != 10 || memcmp(line, "YUV4MPEG2 ", 10)) {
        snprintf(y->err, sizeof(y->err), "not a YUV4MPEG2 stream (try: ffmpeg -i clip.mp4 -f yuv4mpegpipe -pix_fmt yuv420p -)");
        return 0;
    }
    if ((r = cli_y4m__line(f, line, sizeof(line) - 10)) != 1) {
        snprintf(y->err, sizeof(y->err), r == -1 ? "YUV4MPEG2 header longer than %d bytes" : "YUV4MPEG2 header cut short (no end of line)",
                 CLI_Y4M_MAX_HEADER);
        return 0;
    }
    n = strlen(line);
    if (n && line[n - 1] == '\r') {
        snprintf(y->err, sizeof(y->err), "YUV4MPEG2 header ends in CR LF (a text-mode copy?): the format wants a plain LF");
        return 0;
    }
    for (tok = line; *tok; tok = next) {
        for (next = tok; *next && *next != ' '; next++) {}
        if (*next) *next++ = 0;
        if (!*tok) continue;
        if (tok[0] == 'W' || tok[0] == 'H') {
            if (!cli_y4m__int(tok + 1, 1, SAM3_MAX_IMAGE_DIM, tok[0] == 'W' ? &y->w : &y->h)) {
                snprintf(y->err, sizeof(y->err), "YUV4MPEG2 frame size: %s '%.40s' is not a number in 1..%d", tok[0] == 'W' ? "width" : "height",
                         tok + 1, SAM3_MAX_IMAGE_DIM);
                return 0;
            }
        } else if (tok[0] == 'C') {
            if (!strncmp(tok + 1, "444", 3) && (tok[4] == 0 || !strcmp(tok + 4, "p8"))) c420 = 0;
            else if (!strncmp(tok + 1, "420", 3) &&
                     (tok[4] == 0 || !strcmp(tok + 4, "jpeg") || !strcmp(tok + 4, "paldv") || !strcmp(tok + 4, "mpeg2")))
                c420 = 1;
            else {
                snprintf(y->err, sizeof(y->err), "YUV4MPEG2 colour space '%.40s' is not supported (8-bit 4:2:0 or 4:4:4: ffmpeg -pix_fmt yuv420p)",
                         tok + 1);
                return 0;
            }
        } else if (tok[0] == 'F') {
            char *colon = strchr(tok + 1, ':');
            if (colon) *colon = 0;
            if (!colon || !cli_y4m__int(tok + 1, 1, 1000000, &y->fps_n) || !cli_y4m__int(colon + 1, 1, 1000000, &y->fps_d))
                y->fps_n = y->fps_d = 0;
        } else if (tok[0] == 'I' && tok[1] != 'p' && tok[1] != '?') {
            snprintf(y->err, sizeof(y->err), "YUV4MPEG2 interlacing '%.40s' is not supported (progressive frames only)", tok + 1);
            return 0;
        } else if (!strcmp(tok, "XCOLORRANGE=FULL")) {
            y->full_range = 1;
        } else if (!strcmp(tok, "XCOLORRANGE=LIMITED")) {
            y->full_range = 0;
        }
    }
    if (y->w < 1 || y->h < 1) {
        snprintf(y->err, sizeof(y->err), "YUV4MPEG2 header has no frame size (W and H)");
        return 0;
    }
    if ((uint64_t)y->w * (uint64_t)y->h > max_pixels) {
        snprintf(y->err, sizeof(y->err), "YUV4MPEG2 frames of %dx%d are over the pixel budget of %llu (--max-pixels)", y->w, y->h,
                 (unsigned long long)max_pixels);
        return 0;
    }
    y->chroma444 = !c420;
    if (!(y->yuv = (unsigned char *)malloc((size_t)y->w * y->h * 3))) {
        snprintf(y->err, sizeof(y->err), "out of memory for %dx%d frames", y->w, y->h);
        return 0;
    }
    return 1;
}

static unsigned char cli_y4m__clip(int v) { return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* The next frame as RGB8 (malloc'ed, w * h * 3) in *rgb. 1: a frame; 0: the end; -1: an error in
   y->err (the stream is not read on). */
static int cli_y4m_next(cli_y4m *y, unsigned char **rgb) {
    const int W = y->w, H = y->h, cw = y->chroma444 ? W : (W + 1) / 2, chh = y->chroma444 ? H : (H + 1) / 2;
    const size_t ny = (size_t)W * H, nc = (size_t)cw * chh;
    char line[CLI_Y4M_MAX_FRAME_HEADER];
    int x, yy, r;
    unsigned char *o;
    *rgb = NULL;
    if ((r = cli_y4m__line(y->f, line, sizeof(line))) == 0) return 0;
    if (r != 1 || strncmp(line, "FRAME", 5) || (line[5] && line[5] != ' ')) {
        snprintf(y->err, sizeof(y->err), "YUV4MPEG2 stream: expected a FRAME line at frame %d, got '%.20s'%s", y->frames, line,
                 r == -1 ? " and no end of line" : "");
        return -1;
    }
    if (fread(y->yuv, 1, ny + 2 * nc, y->f) != ny + 2 * nc) {
        snprintf(y->err, sizeof(y->err), "YUV4MPEG2 stream truncated in frame %d", y->frames);
        return -1;
    }
    if (!(o = (unsigned char *)malloc(ny * 3))) {
        snprintf(y->err, sizeof(y->err), "out of memory for a %dx%d frame", W, H);
        return -1;
    }
    for (yy = 0; yy < H; yy++)
        for (x = 0; x < W; x++) {
            const size_t ci = y->chroma444 ? (size_t)yy * cw + x : (size_t)(yy / 2) * cw + x / 2;
            const int U = y->yuv[ny + ci] - 128, V = y->yuv[ny + nc + ci] - 128;
            unsigned char *p = o + ((size_t)yy * W + x) * 3;
            if (y->full_range) { /* BT.601 full range (JPEG), in 1/256ths */
                const int Y = y->yuv[(size_t)yy * W + x] * 256;
                p[0] = cli_y4m__clip((Y + 359 * V + 128) >> 8);
                p[1] = cli_y4m__clip((Y - 88 * U - 183 * V + 128) >> 8);
                p[2] = cli_y4m__clip((Y + 454 * U + 128) >> 8);
            } else { /* BT.601 limited range, in 1/256ths */
                const int Y = y->yuv[(size_t)yy * W + x] - 16;
                p[0] = cli_y4m__clip((298 * Y + 409 * V + 128) >> 8);
                p[1] = cli_y4m__clip((298 * Y - 100 * U - 208 * V + 128) >> 8);
                p[2] = cli_y4m__clip((298 * Y + 516 * U + 128) >> 8);
            }
        }
    y->frames++;
    *rgb = o;
    return 1;
}

/* ---- the writer ---- */

typedef struct cli_y4m_out {
    FILE *f;
    int w, h;           /* every frame's size, from the first */
    int frames;         /* frames written */
    unsigned char *yuv; /* one frame's planes: Y (h, w), then U and V ((h+1)/2, (w+1)/2) */
    char err[512];
} cli_y4m_out;

static void cli_y4m_out_free(cli_y4m_out *o) {
    free(o->yuv);
    o->yuv = NULL;
}

/* The stream header for w x h frames at fps_n/fps_d frames a second, to f. 1, or 0 with o->err. */
static int cli_y4m_out_open(cli_y4m_out *o, FILE *f, int w, int h, int fps_n, int fps_d) {
    memset(o, 0, sizeof(*o));
    o->f = f;
    o->w = w;
    o->h = h;
    if (w < 1 || h < 1 || w > SAM3_MAX_IMAGE_DIM || h > SAM3_MAX_IMAGE_DIM || fps_n < 1 || fps_d < 1) {
        snprintf(o->err, sizeof(o->err), "YUV4MPEG2 output: bad frame size %dx%d or rate %d:%d", w, h, fps_n, fps_d);
        return 0;
    }
    /* (w * h + 2 * cw * ch <= 3 * w * h, under 2^30 for the sides above) */
    if (!(o->yuv = (unsigned char *)malloc((size_t)w * h * 3))) {
        snprintf(o->err, sizeof(o->err), "out of memory for %dx%d frames", w, h);
        return 0;
    }
    if (fprintf(f, "YUV4MPEG2 W%d H%d F%d:%d Ip A1:1 C420jpeg XCOLORRANGE=LIMITED\n", w, h, fps_n, fps_d) < 0) {
        snprintf(o->err, sizeof(o->err), "YUV4MPEG2 output: cannot write the header");
        return 0;
    }
    return 1;
}

/* One RGB8 frame (w x h, rows of w * 3 bytes) onto the stream. 1, or 0 with o->err. */
static int cli_y4m_out_frame(cli_y4m_out *o, const unsigned char *rgb, int w, int h) {
    const int cw = (o->w + 1) / 2, chh = (o->h + 1) / 2;
    const size_t ny = (size_t)o->w * o->h, nc = (size_t)cw * chh;
    int x, y, dx, dy;
    if (w != o->w || h != o->h) {
        snprintf(o->err, sizeof(o->err), "frame %d is %dx%d, the video %dx%d: a YUV4MPEG2 stream holds frames of one size", o->frames, w, h,
                 o->w, o->h);
        return 0;
    }
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) {
            const unsigned char *p = rgb + ((size_t)y * w + x) * 3;
            o->yuv[(size_t)y * w + x] = (unsigned char)(16 + ((66 * p[0] + 129 * p[1] + 25 * p[2] + 128) >> 8));
        }
    for (y = 0; y < chh; y++)
        for (x = 0; x < cw; x++) {
            int u = 0, v = 0, n = 0; /* sums over the block's pixels, in 1/256ths */
            for (dy = 0; dy < 2 && 2 * y + dy < h; dy++)
                for (dx = 0; dx < 2 && 2 * x + dx < w; dx++, n++) {
                    const unsigned char *p = rgb + ((size_t)(2 * y + dy) * w + 2 * x + dx) * 3;
                    u += -38 * p[0] - 74 * p[1] + 112 * p[2];
                    v += 112 * p[0] - 94 * p[1] - 18 * p[2];
                }
            /* 128 + the mean, rounded: (sum + 128 n) / (256 n), over non-negative numerators */
            o->yuv[ny + (size_t)y * cw + x] = cli_y4m__clip((u + 256 * 128 * n + 128 * n) / (256 * n));
            o->yuv[ny + nc + (size_t)y * cw + x] = cli_y4m__clip((v + 256 * 128 * n + 128 * n) / (256 * n));
        }
    if (fputs("FRAME\n", o->f) < 0 || fwrite(o->yuv, 1, ny + 2 * nc, o->f) != ny + 2 * nc) {
        snprintf(o->err, sizeof(o->err), "YUV4MPEG2 output: cannot write frame %d", o->frames);
        return 0;
    }
    o->frames++;
    return 1;
}

#endif /* SAM3_CLI_Y4M_H */
