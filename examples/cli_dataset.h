/* cli_dataset.h - `sam3 segment` on many images: the input list, shards, resumption, and the
   merge of per-image COCO files (`sam3 merge`; their RLE masks come from sam3_mask_to_rle). The code is examples/cli_dataset.c
   (messages through cli_error, examples/cli_common.h); names cli_ds_*, cli_ds__* private to it
   but for the COCO reader below, which tests/fuzz_merge.c fuzzes.

   Input (-i): a file is one image (the output folder is OUTDIR itself). A folder gives its regular
   files named *.jpg, *.jpeg or *.png (any case), not hidden ones, not subfolders, sorted by name
   (byte order); other files are ignored (their count is printed). @LIST gives one path per line,
   in the list's order; blank lines and lines starting with '#' are skipped, spaces and tabs at
   both ends of a line are trimmed, and a relative path is relative to the list file's folder (so a
   list kept next to its images works from any working directory and on any machine). Every image
   gets OUTDIR/STEM/, STEM = its file name without the last extension; two images with the same
   STEM (a.jpg and a.png, or two folders' a.jpg) are an error before anything runs.

   Shards: --shard I/N (0 <= I < N) keeps the images whose 0-based position k in that list has
   k % N == I. Image ids (COCO "image_id") are k + 1, so they do not depend on the sharding. */
#ifndef SAM3_CLI_DATASET_H
#define SAM3_CLI_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_ds_list {
    char **paths; /* (n) the image files as opened */
    char **stems; /* (n) OUTDIR/STEM/ names */
    char **names; /* (n) COCO file_name: the folder's entry or the list's line as written */
    int n, cap;
    int ignored; /* folder entries that are not .jpg/.jpeg/.png files */
} cli_ds_list;

/* Builds the image list of -i (a folder or @LIST) and checks the STEMs. CLI_OK, or CLI_FAIL after
   one line on stderr with the list empty (nothing to free). */
int cli_ds_list_build(cli_ds_list *l, const char *arg);
void cli_ds_list_free(cli_ds_list *l);
/* path relative to root, both made absolute and normalised as text ('.', '..', '//'; links not
   followed): malloc'ed, or NULL when path is not inside root (or out of memory: *oom set). */
char *cli_ds_relative(const char *path, const char *root, int *oom);
/* Every image's COCO file_name made relative to root (--image-root). CLI_OK, or CLI_FAIL after
   one line on stderr naming an image outside it. */
int cli_ds_list_rebase(cli_ds_list *l, const char *root);
/* 1 when -i names many images (a folder or @LIST). */
int cli_ds_is_dataset(const char *arg);
/* "I/N" with 0 <= I < N <= 1000000. */
int cli_ds_parse_shard(const char *s, int *i, int *n);

/* The settings hash: a 64-bit FNV-1a (start at 14695981039346656037) of the string with its NUL
   (NULL hashes as a string of its own). */
void cli_ds_hash_str(uint64_t *h, const char *s);
/* 1 when the file at path is a regular file whose first 12 KiB hold both marker and line: the
   manifest of an image done with the same settings. */
int cli_ds_file_has(const char *path, const char *marker, const char *line);

/* Merges the per-image coco.json files at paths (n of them) into one COCO file at out (written to
   a temporary file, renamed when complete). Without partial, every image of the run must be
   there. CLI_OK, or CLI_FAIL after a line on stderr. *n_ann gets the number of annotations. */
int cli_ds_coco_merge(const char *const *paths, int n, const char *out, int partial, long *n_ann);
/* `sam3 merge -o OUT.json DIR...`: every DIR/SUB/coco.json (SUB a subfolder, sorted by name),
   merged as cli_ds_coco_merge does. */
int cli_ds_merge_dirs(const char *const *dirs, int n_dirs, const char *out, int partial, int quiet);

/* ---- the reader of one per-image coco.json (the layout cli_dataset.c describes), exposed for
   tests/fuzz_merge.c ---- */
typedef struct cli_ds__coco {
    char *text;        /* the file, lines NUL-terminated in place */
    char *generator;   /* its lines */
    char *settings;
    char *info;        /* NULL in files of older versions */
    char *image;
    char **ann;        /* (n_ann) */
    int n_ann;
    char *cats;        /* the categories lines, '\n'-joined copy */
    int n_cats;
    long id;           /* the image's id */
    long n_images;     /* images in the run's input */
    int shard_i, shard_n; /* the run's --shard, 0/0 without */
    const char *path;
} cli_ds__coco;

/* Parses one per-image coco.json held in text (malloc'ed, NUL-terminated; c takes it). 1, or 0
   with a line in why (cap bytes) saying what is wrong. */
int cli_ds__coco_parse_text(cli_ds__coco *c, char *text, const char *path, char *why, size_t cap);
void cli_ds__coco_free(cli_ds__coco *c);
/* 1 when line (after the indent) is one JSON object and nothing else. */
int cli_ds__json_object_line(const char *line);

#endif /* SAM3_CLI_DATASET_H */
