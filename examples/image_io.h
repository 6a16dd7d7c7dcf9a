/* image_io.h - the sam3 command-line tool's image reader: JPEG and PNG only.

   JPEG goes through libjpeg-turbo and PNG through libpng (Debian: libjpeg62-turbo-dev and
   libpng-dev; link -ljpeg -lpng). Both libraries are fuzzed continuously upstream and patched by
   Debian security; stb_image 2.27, which this replaces, decoded nine formats and crashed, hung or
   leaked heap bytes on several of them (issue 19).
   The code is examples/image_io.c, linked into the CLI and into tests/fuzz_image.c, which fuzzes
   the very same code.

   What is read, and how:
   * Only JPEG (FF D8 FF) and PNG (89 'PNG' 0D 0A 1A 0A) by their first bytes; every other file
     is refused, named when recognised (GIF, BMP, TIFF, WebP, PSD, PNM, HDR, PIC, ...).
   * The header is read first. An image is refused before any pixel memory is allocated when a
     side is over SAM3_MAX_IMAGE_DIM or width * height is over the caller's pixel budget.
   * JPEG is decoded exactly as Pillow decodes it, so a JPEG gives the Python pipeline's pixels:
     libjpeg-turbo's defaults (JDCT_ISLOW integer IDCT, fancy upsampling), output JCS_RGB for
     YCbCr/RGB files and JCS_GRAYSCALE for grey ones. CMYK and YCCK JPEGs are refused: Pillow
     turns CMYK into RGB with a plain formula and no colour management, so its pixels are not the
     photo's colours either; rather than copy one such formula we ask for an RGB file. Any
     libjpeg warning about damaged data (a premature end of the file, a bad Huffman code, a
     marker inside the entropy-coded data, ...) is an error, not a partly grey image; only
     metadata warnings (an unknown JFIF version, a bad ICC marker, extraneous bytes between
     markers) are let through. More than CLI_IMG_MAX_SCANS scans is refused (a
     progressive file built to be slow).
   * PNG: palette and 1/2/4-bit grey are expanded to 8 bits, 16-bit samples keep their high byte
     (png_set_strip_16; what Pillow does for 16-bit RGB and RGBA), alpha and tRNS are dropped
     (as Pillow's convert("RGB") drops them), interlaced files are fine, gamma and colour chunks
     are ignored (as Pillow does). A CRC error in any chunk, a bad zlib stream, a truncated file
     (including a missing IEND) is an error.
   * EXIF: a JPEG's orientation tag is reported (cli_img.orientation), not applied:
     cli_img_apply_orientation turns the pixels upright. A block that does not parse is ignored.
     PNG eXIf chunks are not read.
   * Output: grey (1 channel) or RGB (3), rows packed, top-left first. The buffer is allocated
     zeroed and only returned when the whole image was decoded, so no uninitialised byte and no
     partly decoded image can reach the caller.
   * Errors from either library are caught with setjmp/longjmp; the decoder's own memory and the
     pixel buffer are freed on every path. Nothing is printed.

   Builds without libjpeg-turbo and libpng (Windows, where Debian ships neither for MinGW: the
   default there unless SAM3_CLI_IMAGE_LIBS is defined; elsewhere -DSAM3_CLI_STB_PNG) read PNG
   only, with stb_image compiled for PNG alone (STBI_ONLY_PNG), after the same header checks;
   JPEG is then refused with a message saying so. That decoder is not the fuzzed one.

   Names: cli_img_* public to the CLI (declared here), cli_img__* private to image_io.c. */
#ifndef SAM3_CLI_IMAGE_IO_H
#define SAM3_CLI_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>

#ifndef SAM3_MAX_IMAGE_DIM
#define SAM3_MAX_IMAGE_DIM 16384 /* sam3.h's default: the library refuses larger sides */
#endif
#define CLI_IMG_DEFAULT_MAX_PIXELS 100000000ull /* 100 megapixels: --max-pixels raises it */
#define CLI_IMG_MAX_SCANS 500                   /* libjpeg-turbo's own tools use this scan limit */

typedef struct cli_img {
    unsigned char *pixels; /* (h, w, channels), rows packed; free() it */
    int w, h, channels;    /* channels 1 (grey) or 3 (RGB) */
    const char *format;    /* "JPEG" or "PNG" */
    int orientation;       /* EXIF orientation 1-8 as stored (JPEG APP1 IFD0); 1: none, or PNG */
} cli_img;

/* Decodes a JPEG or PNG held in memory. 1 on success (out filled; free out->pixels), else 0 with
   a one-line reason in err (no file name) and out zeroed. max_pixels: 0 means the default. */
int cli_img_decode(const void *data, size_t size, uint64_t max_pixels, cli_img *out, char *err, size_t err_cap);
/* Reads a JPEG or PNG file. 1 on success, else 0 with a reason in err (no file name). Files
   larger than a 16-bit RGBA PNG within the budget could be (8 bytes a pixel + 64 MiB) are refused
   unread. */
int cli_img_read_file(const char *path, uint64_t max_pixels, cli_img *out, char *err, size_t err_cap);
/* The pixels turned upright as their EXIF orientation says (Pillow's ImageOps.exif_transpose, as
   transformers' load_image applies it); orientation becomes 1. 1 on success, 0 out of memory. */
int cli_img_apply_orientation(cli_img *img);
/* Grey in place, for mask prompts: RGB -> L with Pillow's convert("L") weights (ITU-R 601-2 luma,
   16-bit fixed point, rounded). */
void cli_img_to_grey(cli_img *img);

#endif /* SAM3_CLI_IMAGE_IO_H */
