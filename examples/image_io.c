/* image_io.c - the sam3 command-line tool's image reader (JPEG with libjpeg-turbo, PNG with
   libpng): what examples/image_io.h declares and describes. */
#define _POSIX_C_SOURCE 200809L /* as the CLI's other files */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include "image_io.h"

#if defined(_WIN32) && !defined(SAM3_CLI_IMAGE_LIBS) && !defined(SAM3_CLI_STB_PNG)
#define SAM3_CLI_STB_PNG
#endif
#if defined(SAM3_CLI_STB_PNG)
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"
#else
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#endif

/* One decode: everything a longjmp must find in memory lives here, in the caller's frame, so no
   local of the function that called setjmp is read after the jump. */
typedef struct cli_img__job {
    const unsigned char *data;
    size_t size, pos;
    uint64_t max_pixels;
    unsigned char *pixels; /* (h, w, channels) until handed to the caller */
#if !defined(SAM3_CLI_STB_PNG)
    png_bytep *rows; /* (h) PNG row pointers into pixels */
    png_structp png;
    png_infop png_info;
    struct jpeg_decompress_struct jpg;
    struct cli_img__jpeg_err {
        struct jpeg_error_mgr pub;
        jmp_buf jump;
        struct cli_img__job *job;
    } jerr;
    struct jpeg_progress_mgr jprog;
#endif
    char *err;
    size_t err_cap;
} cli_img__job;

static void cli_img__fail(cli_img__job *j, const char *fmt, ...) {
    va_list ap;
    if (!j->err_cap) return;
    va_start(ap, fmt);
    vsnprintf(j->err, j->err_cap, fmt, ap);
    va_end(ap);
}

/* The other formats people hand us, by magic bytes, for the message. */
static const char *cli_img__sniff(const unsigned char *d, size_t n) {
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "JPEG";
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return "PNG";
    if (n >= 4 && !memcmp(d, "GIF8", 4)) return "a GIF file";
    if (n >= 2 && !memcmp(d, "BM", 2)) return "a BMP file";
    if (n >= 4 && (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4))) return "a TIFF file";
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return "a WebP file";
    if (n >= 4 && !memcmp(d, "8BPS", 4)) return "a PSD file";
    if (n >= 2 && (!memcmp(d, "#?", 2))) return "a Radiance HDR file";
    if (n >= 4 && !memcmp(d, "\x53\x80\xF6\x34", 4)) return "a Softimage PIC file";
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7') return "a PNM (PBM/PGM/PPM/PAM) file";
    if (n >= 12 && !memcmp(d + 4, "ftyp", 4)) return "an HEIF/AVIF file";
    if (n >= 4 && !memcmp(d, "\x00\x00\x00\x0cjP", 4)) return "a JPEG 2000 file";
    if (n >= 2 && d[0] == 0xFF && d[1] == 0xD8) return "a damaged JPEG (no marker after SOI)";
    return NULL;
}

/* The pixel budget and the library's side limit, from the header, before any allocation. */
static int cli_img__check_size(cli_img__job *j, const char *fmt, uint64_t w, uint64_t h) {
    if (w < 1 || h < 1) {
        cli_img__fail(j, "%s header declares %llux%llu pixels", fmt, (unsigned long long)w, (unsigned long long)h);
        return 0;
    }
    if (w > SAM3_MAX_IMAGE_DIM || h > SAM3_MAX_IMAGE_DIM) {
        cli_img__fail(j, "%s image of %llux%llu pixels: a side is over %d (SAM3_MAX_IMAGE_DIM)", fmt, (unsigned long long)w,
                      (unsigned long long)h, SAM3_MAX_IMAGE_DIM);
        return 0;
    }
    if (w * h > j->max_pixels) {
        cli_img__fail(j, "%s image of %llux%llu pixels is over the budget of %llu pixels (raise it with --max-pixels)", fmt,
                      (unsigned long long)w, (unsigned long long)h, (unsigned long long)j->max_pixels);
        return 0;
    }
    return 1;
}

#if !defined(SAM3_CLI_STB_PNG)
/* ---- JPEG (libjpeg-turbo) ---- */

static void cli_img__jpeg_exit(j_common_ptr c) {
    struct cli_img__jpeg_err *e = (struct cli_img__jpeg_err *)c->err;
    char msg[JMSG_LENGTH_MAX];
    c->err->format_message(c, msg);
    cli_img__fail(e->job, "JPEG: %s", msg);
    longjmp(e->jump, 1);
}

/* Warnings (level -1) about damaged data are errors; trace messages (level >= 0) are dropped. */
static void cli_img__jpeg_emit(j_common_ptr c, int level) {
    int code = c->err->msg_code;
    if (level >= 0) return;
    if (code == JWRN_JFIF_MAJOR || code == JWRN_BOGUS_ICC || code == JWRN_EXTRANEOUS_DATA) return;
    cli_img__jpeg_exit(c);
}

static void cli_img__jpeg_progress(j_common_ptr c) {
    j_decompress_ptr d = (j_decompress_ptr)c;
    struct cli_img__jpeg_err *e = (struct cli_img__jpeg_err *)c->err;
    if (d->input_scan_number > CLI_IMG_MAX_SCANS) {
        cli_img__fail(e->job, "JPEG: more than %d scans", CLI_IMG_MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

static int cli_img__jpeg(cli_img__job *j, cli_img *out) {
    struct jpeg_decompress_struct *ci = &j->jpg;
    int ch;
    size_t row_bytes;
    ci->err = jpeg_std_error(&j->jerr.pub);
    j->jerr.pub.error_exit = cli_img__jpeg_exit;
    j->jerr.pub.emit_message = cli_img__jpeg_emit;
    j->jerr.job = j;
    if (setjmp(j->jerr.jump)) {
        jpeg_destroy_decompress(ci);
        free(j->pixels);
        j->pixels = NULL;
        return 0;
    }
    jpeg_create_decompress(ci);
    j->jprog.progress_monitor = cli_img__jpeg_progress;
    ci->progress = &j->jprog;
    /* libjpeg's own buffers (a progressive file's coefficients: up to 2 bytes a sample) */
    {
        uint64_t lim = (j->max_pixels < 100000000ull ? 100000000ull : j->max_pixels) * 8;
        ci->mem->max_memory_to_use = lim > (uint64_t)LONG_MAX ? LONG_MAX : (long)lim;
    }
    jpeg_mem_src(ci, j->data, (unsigned long)j->size);
    jpeg_read_header(ci, TRUE); /* an abbreviated (tables-only) file is an error here */
    if (!cli_img__check_size(j, "JPEG", ci->image_width, ci->image_height)) longjmp(j->jerr.jump, 1);
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE: ci->out_color_space = JCS_GRAYSCALE, ch = 1; break;
    case JCS_YCbCr:
    case JCS_RGB: ci->out_color_space = JCS_RGB, ch = 3; break;
    case JCS_CMYK:
    case JCS_YCCK:
        cli_img__fail(j, "JPEG: a CMYK%s image: not supported (convert it to RGB first)", ci->jpeg_color_space == JCS_YCCK ? " (YCCK)" : "");
        longjmp(j->jerr.jump, 1);
    default:
        cli_img__fail(j, "JPEG: %d components in an unknown colour space", ci->num_components);
        longjmp(j->jerr.jump, 1);
    }
    ci->dct_method = JDCT_ISLOW;   /* libjpeg's default, and Pillow's */
    ci->do_fancy_upsampling = TRUE; /* likewise: triangle-filtered chroma */
    jpeg_start_decompress(ci);
    if ((int)ci->output_components != ch || ci->output_width != ci->image_width || ci->output_height != ci->image_height) {
        cli_img__fail(j, "JPEG: unexpected output layout");
        longjmp(j->jerr.jump, 1);
    }
    row_bytes = (size_t)ci->output_width * ch;
    j->pixels = (unsigned char *)calloc((size_t)ci->output_height, row_bytes);
    if (!j->pixels) {
        cli_img__fail(j, "out of memory for a %ux%u image", (unsigned)ci->output_width, (unsigned)ci->output_height);
        longjmp(j->jerr.jump, 1);
    }
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = j->pixels + (size_t)ci->output_scanline * row_bytes;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) { /* only a suspending source returns 0 */
            cli_img__fail(j, "JPEG: the decoder stopped early");
            longjmp(j->jerr.jump, 1);
        }
    }
    jpeg_finish_decompress(ci); /* reads up to EOI: a file cut after the last scan is an error too */
    out->w = (int)ci->output_width;
    out->h = (int)ci->output_height;
    out->channels = ch;
    out->format = "JPEG";
    out->pixels = j->pixels;
    j->pixels = NULL;
    jpeg_destroy_decompress(ci);
    return 1;
}

/* ---- PNG (libpng) ---- */

static void cli_img__png_error(png_structp png, png_const_charp msg) {
    cli_img__job *j = (cli_img__job *)png_get_error_ptr(png);
    cli_img__fail(j, "PNG: %s", msg);
    png_longjmp(png, 1);
}

static void cli_img__png_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void cli_img__png_read(png_structp png, png_bytep out, size_t n) {
    cli_img__job *j = (cli_img__job *)png_get_io_ptr(png);
    if (n > j->size - j->pos) png_error(png, "truncated (the file ends inside the image)");
    memcpy(out, j->data + j->pos, n);
    j->pos += n;
}

static int cli_img__png(cli_img__job *j, cli_img *out) {
    png_uint_32 w, h, y;
    int depth, colour, interlace, ch;
    j->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, cli_img__png_error, cli_img__png_warning);
    if (!j->png) {
        cli_img__fail(j, "PNG: out of memory");
        return 0;
    }
    if (setjmp(png_jmpbuf(j->png))) {
        png_destroy_read_struct(&j->png, j->png_info ? &j->png_info : NULL, NULL);
        free(j->pixels);
        free(j->rows);
        j->pixels = NULL;
        j->rows = NULL;
        return 0;
    }
    j->png_info = png_create_info_struct(j->png);
    if (!j->png_info) png_error(j->png, "out of memory");
    png_set_read_fn(j->png, j, cli_img__png_read);
    png_set_crc_action(j->png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT); /* ancillary chunks too */
    png_set_chunk_malloc_max(j->png, 8u << 20);                            /* text, ICC, ... */
    png_read_info(j->png, j->png_info);
    png_get_IHDR(j->png, j->png_info, &w, &h, &depth, &colour, &interlace, NULL, NULL);
    if (!cli_img__check_size(j, "PNG", w, h)) png_longjmp(j->png, 1);
    if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
    if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
    if (depth == 16) png_set_strip_16(j->png); /* the high byte */
    png_set_strip_alpha(j->png);               /* also the alpha that tRNS expansion makes */
    png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->png_info);
    ch = png_get_channels(j->png, j->png_info);
    if ((ch != 1 && ch != 3) || png_get_bit_depth(j->png, j->png_info) != 8 || png_get_rowbytes(j->png, j->png_info) != (size_t)w * ch)
        png_error(j->png, "unexpected layout after the transformations");
    j->pixels = (unsigned char *)calloc((size_t)h, (size_t)w * ch);
    j->rows = (png_bytep *)malloc(sizeof(png_bytep) * h);
    if (!j->pixels || !j->rows) png_error(j->png, "out of memory for the image");
    for (y = 0; y < h; y++) j->rows[y] = j->pixels + (size_t)y * w * ch;
    png_read_image(j->png, j->rows);
    png_read_end(j->png, NULL); /* the chunks after the image, their CRCs and IEND */
    png_destroy_read_struct(&j->png, &j->png_info, NULL);
    free(j->rows);
    j->rows = NULL;
    out->w = (int)w;
    out->h = (int)h;
    out->channels = ch;
    out->format = "PNG";
    out->pixels = j->pixels;
    j->pixels = NULL;
    return 1;
}

#else /* SAM3_CLI_STB_PNG */

static int cli_img__jpeg(cli_img__job *j, cli_img *out) {
    (void)out;
    cli_img__fail(j, "JPEG: this build of sam3 reads PNG only (built without libjpeg-turbo and libpng)");
    return 0;
}

static int cli_img__png(cli_img__job *j, cli_img *out) {
    const unsigned char *d = j->data;
    unsigned char *px;
    int w, h, n, c, ch;
    size_t i, np;
    if (j->size < 33 || memcmp(d + 12, "IHDR", 4)) {
        cli_img__fail(j, "PNG: truncated or no IHDR chunk first");
        return 0;
    }
    if (!cli_img__check_size(j, "PNG", (uint64_t)d[16] << 24 | (uint64_t)d[17] << 16 | (uint64_t)d[18] << 8 | d[19],
                             (uint64_t)d[20] << 24 | (uint64_t)d[21] << 16 | (uint64_t)d[22] << 8 | d[23]))
        return 0;
    if (j->size > INT_MAX || !(px = stbi_load_from_memory(d, (int)j->size, &w, &h, &n, 0))) {
        const char *why = stbi_failure_reason();
        cli_img__fail(j, "PNG: %s (stb_image)", why && why[0] ? why : "cannot decode");
        return 0;
    }
    ch = n >= 3 ? 3 : 1;
    np = (size_t)w * h;
    if (!(j->pixels = (unsigned char *)malloc(np * ch))) {
        stbi_image_free(px);
        cli_img__fail(j, "out of memory for a %dx%d image", w, h);
        return 0;
    }
    for (i = 0; i < np; i++) /* alpha dropped */
        for (c = 0; c < ch; c++) j->pixels[i * ch + c] = px[i * n + c];
    stbi_image_free(px);
    out->w = w, out->h = h, out->channels = ch, out->format = "PNG";
    out->pixels = j->pixels;
    j->pixels = NULL;
    return 1;
}
#endif

/* ---- EXIF orientation ---- */

static unsigned cli_img__u16(const unsigned char *p, int be) { return be ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0]; }
static uint32_t cli_img__u32(const unsigned char *p, int be) {
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
/* The Orientation tag (0x0112, a SHORT) of IFD0 in a TIFF block t (n bytes), or 1. */
static int cli_img__tiff_orientation(const unsigned char *t, size_t n) {
    uint32_t ifd, k, count;
    int be;
    if (n < 8 || !((t[0] == 'I' && t[1] == 'I') || (t[0] == 'M' && t[1] == 'M'))) return 1;
    be = t[0] == 'M';
    if (cli_img__u16(t + 2, be) != 42 || (ifd = cli_img__u32(t + 4, be)) > n - 2) return 1;
    count = cli_img__u16(t + ifd, be);
    for (k = 0; k < count && (size_t)ifd + 2 + 12 * ((size_t)k + 1) <= n; k++) {
        const unsigned char *e = t + ifd + 2 + 12 * (size_t)k;
        if (cli_img__u16(e, be) == 0x0112) {
            const unsigned v = cli_img__u16(e + 8, be);
            return cli_img__u16(e + 2, be) == 3 && cli_img__u32(e + 4, be) >= 1 && v >= 1 && v <= 8 ? (int)v : 1;
        }
    }
    return 1;
}
/* The EXIF orientation (1-8) of a JPEG's first APP1 "Exif" segment before its first scan, or 1
   (none, or a block that does not parse: ignored, as Pillow ignores it). Every offset is checked
   against the segment. */
static int cli_img__jpeg_orientation(const unsigned char *d, size_t n) {
    size_t i = 2;
    int segs = 0;
    while (i + 4 <= n && segs++ < 4096) {
        unsigned m, len;
        if (d[i] != 0xFF) return 1;
        m = d[i + 1];
        if (m == 0xFF) { /* fill byte */
            i++;
            continue;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { /* markers without a length */
            i += 2;
            continue;
        }
        if (m == 0xDA || m == 0xD9) return 1; /* the scan: EXIF comes before it */
        len = (unsigned)d[i + 2] << 8 | d[i + 3];
        if (len < 2 || i + 2 + len > n) return 1;
        if (m == 0xE1 && len >= 8 && !memcmp(d + i + 4, "Exif\0\0", 6)) return cli_img__tiff_orientation(d + i + 10, len - 8);
        i += 2 + len;
    }
    return 1;
}

/* Applies out->orientation to the pixels as Pillow's ImageOps.exif_transpose does (2 mirror, 3
   rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
   anticlockwise; 5-8 swap the sides), leaving orientation 1. 0 when memory runs out. */
int cli_img_apply_orientation(cli_img *img) {
    const int o = img->orientation, W = img->w, H = img->h, ch = img->channels, swap = o >= 5;
    const int ow = swap ? H : W, oh = swap ? W : H;
    unsigned char *q;
    int x, y;
    if (o < 2 || o > 8 || !img->pixels) return 1;
    if (!(q = (unsigned char *)malloc((size_t)W * H * ch))) return 0;
    for (y = 0; y < oh; y++)
        for (x = 0; x < ow; x++) {
            int sx, sy; /* the source pixel of output (x, y) */
            switch (o) {
            case 2: sx = W - 1 - x, sy = y; break;
            case 3: sx = W - 1 - x, sy = H - 1 - y; break;
            case 4: sx = x, sy = H - 1 - y; break;
            case 5: sx = y, sy = x; break;
            case 6: sx = y, sy = H - 1 - x; break;
            case 7: sx = W - 1 - y, sy = H - 1 - x; break;
            default: sx = W - 1 - y, sy = x; break;
            }
            memcpy(q + ((size_t)y * ow + x) * ch, img->pixels + ((size_t)sy * W + sx) * ch, (size_t)ch);
        }
    free(img->pixels);
    img->pixels = q;
    img->w = ow, img->h = oh, img->orientation = 1;
    return 1;
}

/* ---- entry points ---- */

/* Decodes a JPEG or PNG held in memory. 1 on success (out filled; free out->pixels), else 0 with
   a one-line reason in err (no file name) and out zeroed. max_pixels: 0 means the default. */
int cli_img_decode(const void *data, size_t size, uint64_t max_pixels, cli_img *out, char *err, size_t err_cap) {
    cli_img__job *j;
    const char *kind = cli_img__sniff((const unsigned char *)data, size);
    int ok;
    memset(out, 0, sizeof(*out));
    if (err_cap) err[0] = 0;
    if (!kind || (strcmp(kind, "JPEG") && strcmp(kind, "PNG"))) {
        if (err_cap) {
            if (size == 0) snprintf(err, err_cap, "empty file: not a supported format (sam3 reads JPEG and PNG only)");
            else
                snprintf(err, err_cap, "%s%s: not a supported format (sam3 reads JPEG and PNG only)", kind ? "" : "unknown file type",
                         kind ? kind : "");
        }
        return 0;
    }
    j = (cli_img__job *)calloc(1, sizeof(*j));
    if (!j) {
        if (err_cap) snprintf(err, err_cap, "out of memory");
        return 0;
    }
    j->data = (const unsigned char *)data;
    j->size = size;
    j->max_pixels = max_pixels ? max_pixels : CLI_IMG_DEFAULT_MAX_PIXELS;
    j->err = err;
    j->err_cap = err_cap;
    ok = kind[0] == 'J' ? cli_img__jpeg(j, out) : cli_img__png(j, out);
    if (ok) out->orientation = kind[0] == 'J' ? cli_img__jpeg_orientation(j->data, size) : 1;
    if (!ok) memset(out, 0, sizeof(*out));
    if (!ok && err_cap && !err[0]) snprintf(err, err_cap, "%s: cannot decode", kind);
    free(j);
    return ok;
}

/* Reads a whole file (a regular file, a pipe or /dev/stdin), at most max_bytes; only its first
   64 KiB when they are not JPEG or PNG (/dev/zero, a video: the decoder then names the format).
   1 on success (*data malloc'ed, *size set), else 0 with errno set (EFBIG when over max_bytes). */
static int cli_img__slurp(const char *path, size_t max_bytes, unsigned char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL, *nb;
    size_t n = 0, cap = 0, got;
    int e;
    *data = NULL;
    *size = 0;
    if (!f) return 0;
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 1 << 16;
            if (cap >= max_bytes + 1) {
                e = EFBIG;
                goto fail;
            }
            if (nc > max_bytes + 1) nc = max_bytes + 1;
            if (!(nb = (unsigned char *)realloc(buf, nc))) {
                e = ENOMEM;
                goto fail;
            }
            buf = nb, cap = nc;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == got && n >= 16) { /* the first piece: read no further than that when it is neither JPEG nor PNG */
            const char *kind = cli_img__sniff(buf, n);
            if (!kind || (strcmp(kind, "JPEG") && strcmp(kind, "PNG"))) break;
        }
    }
    if (ferror(f)) {
        e = errno ? errno : EIO;
        goto fail;
    }
    if (n > max_bytes) {
        e = EFBIG;
        goto fail;
    }
    fclose(f);
    *data = buf;
    *size = n;
    return 1;
fail:
    fclose(f);
    free(buf);
    errno = e;
    return 0;
}

/* Reads a JPEG or PNG file. 1 on success, else 0 with a reason in err (no file name). Files
   larger than a 16-bit RGBA PNG within the budget could be (8 bytes a pixel + 64 MiB) are refused
   unread. */
int cli_img_read_file(const char *path, uint64_t max_pixels, cli_img *out, char *err, size_t err_cap) {
    unsigned char *data;
    size_t size;
    uint64_t mp = max_pixels ? max_pixels : CLI_IMG_DEFAULT_MAX_PIXELS, cap = mp * 8 + (64u << 20);
    int ok;
    memset(out, 0, sizeof(*out));
    if (cap > (uint64_t)SIZE_MAX / 2) cap = (uint64_t)SIZE_MAX / 2;
    if (!cli_img__slurp(path, (size_t)cap, &data, &size)) {
        if (err_cap) {
            if (errno == EFBIG) snprintf(err, err_cap, "file larger than %llu bytes, more than any image within the pixel budget", (unsigned long long)cap);
            else snprintf(err, err_cap, "%s", strerror(errno));
        }
        return 0;
    }
    ok = cli_img_decode(data, size, max_pixels, out, err, err_cap);
    free(data);
    return ok;
}

/* Grey in place, for mask prompts: RGB -> L with Pillow's convert("L") weights (ITU-R 601-2 luma,
   16-bit fixed point, rounded). */
void cli_img_to_grey(cli_img *img) {
    size_t i, np = (size_t)img->w * img->h;
    const unsigned char *s = img->pixels;
    if (img->channels != 3) return;
    for (i = 0; i < np; i++, s += 3) img->pixels[i] = (unsigned char)((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
    img->channels = 1;
}
