/* cli_outdir.h - how the sam3 command-line tool writes into an output folder (POSIX).

   An output folder is shared with whatever else the user keeps there, and may hold links that
   someone else planted. So:
   * Every file is written to a fresh temporary file in the folder, created with
     O_CREAT | O_EXCL | O_NOFOLLOW (a planted link or file at that name is never opened), and
     renamed over its final name only when the whole run has succeeded (cli_outdir_commit): a
     rename replaces a link at the final name, never the file it points to. The folder itself and
     its subfolders are opened once and every later call is relative to that descriptor, with
     O_NOFOLLOW for subfolders.
   * The folder must be new, empty, or an earlier sam3 output: every entry a name sam3 writes
     (the `names` patterns), the manifest (results.json) a regular file carrying the marker, and
     subfolders likewise. Files named like sam3's count as sam3's only beside a file sam3 wrote
     that carries the marker (the manifest, coco.json, or the temporary manifest of a run killed
     inside its commit), in their folder or the one above: a user's own mask_000.png in a folder
     without one is foreign. Anything else is refused unless
     `force`; with `force` the foreign files are left alone.
   * One writer at a time: the folder is locked (flock) while open, and a second run gets a
     message naming the folder. Holding the lock, the run removes the temporary files
     (CLI_OUTDIR_TMP_PREFIX) that a killed run left behind.
   * A file is deleted only when this run replaces it, or when the previous manifest lists it (a
     file an earlier sam3 run wrote) and this run did not write it again (stale masks). A user's
     own mask_123.png that no manifest lists survives every run.
   * Order of a commit: the old manifest is removed first, then every new file is renamed into
     place, the stale files listed by the old manifest are removed, and the new manifest is
     renamed last. A run that fails before the commit changes nothing in the folder (its
     temporary files are removed); one that fails inside it leaves no manifest, never an old
     manifest listing deleted or replaced files.

   Patterns: '#' is one or more digits, '*' any run of characters but '/', anything else itself;
   a pattern ending in '/' names a subfolder, whose entries follow the same patterns (one level).
   The manifest may list files in subfolders as "dir/name".

   Use: cli_outdir_open (or cli_outdir_open_sub for a subfolder), cli_outdir_write for each
   file (the manifest last or not: it is renamed last anyway), cli_outdir_commit, cli_outdir_close
   (always; it removes what was not committed). Messages go to o->err (with the path), nothing is
   printed. Names: cli_outdir_* for the CLI, cli_outdir__* private (examples/cli_outdir.c). */
#ifndef SAM3_CLI_OUTDIR_H
#define SAM3_CLI_OUTDIR_H

#include <stddef.h>

#define CLI_OUTDIR_TMP_PREFIX ".sam3-tmp-"
#define CLI_OUTDIR_MAX_MANIFEST (64 << 20) /* bytes of an old manifest read to find what it lists */

typedef struct cli_outdir__file {
    char *tmp, *name; /* the temporary file written, the name it gets at the commit */
} cli_outdir__file;

typedef struct cli_outdir {
    char path[4096];
    int fd;                    /* the folder, open; -1 when not */
    const char *const *names;  /* patterns of what sam3 writes here, NULL-terminated */
    const char *manifest;      /* written last (e.g. "results.json"); NULL: none */
    int had_manifest;          /* the folder held our manifest when opened */
    char **listed;             /* (n_listed) files the old manifest lists, "name" or "dir/name" */
    int n_listed;
    cli_outdir__file *files;   /* (n_files) written this run, not yet committed */
    int n_files, cap_files;
    struct cli_outdir **kids;  /* (n_kids) subfolders opened with cli_outdir_open_sub */
    int n_kids;
    char *kid_name;            /* this folder's name in its parent, for a kid */
    int created, committed;    /* this run made the folder; the commit succeeded */
    int has_manifest;          /* set while inspecting: the folder (or its parent) holds our manifest */
    unsigned seq;
    char err[1024];
} cli_outdir;

/* Creates the folder if missing and checks it may be written (see the top). 1 on success, else 0
   with o->err set; call cli_outdir_close either way. The path itself may be a link to a folder
   (the user named it); nothing inside it is followed. */
int cli_outdir_open(cli_outdir *o, const char *path, const char *const *names, const char *manifest, const char *marker, int force);
/* As cli_outdir_open for the folder `name` inside `parent` (the user's folder, which may be a
   link the user named), where name is a folder sam3 makes (a dataset's OUTDIR/STEM): a link, or
   anything but a folder, found at parent/name is refused, never followed. */
int cli_outdir_open_at(cli_outdir *o, const char *parent, const char *name, const char *const *names, const char *manifest,
                       const char *marker, int force);
/* Only the lock of the folder at path (created if missing), held until cli_outdir_close: for a
   folder whose entries other cli_outdir_open_at calls write (a dataset's OUTDIR). The temporary
   files a killed run left in it are removed. 1, or 0 with o->err set. */
int cli_outdir_lock_only(cli_outdir *o, const char *path);
/* A subfolder `name` of parent (created if missing, never through a link), with its own
   manifest; committed with the parent. Returns NULL with parent->err set on failure. */
cli_outdir *cli_outdir_open_sub(cli_outdir *parent, const char *name, const char *manifest, const char *marker, int force);
/* Writes n bytes as `name` (a file name sam3 writes here): to a new temporary file now, renamed
   at the commit. 1 on success, else 0 with o->err set. */
int cli_outdir_write(cli_outdir *o, const char *name, const void *data, size_t n);
/* Puts every file written in place (this folder's and its subfolders'), removes the stale ones
   the old manifests listed, and the manifests last. 1 on success, else 0 with o->err set. */
int cli_outdir_commit(cli_outdir *o);
/* Removes the temporary files not committed (and the folder, when this run made it and nothing
   was committed: a failed run leaves no empty folder), closes, frees. Safe on a failed open. */
void cli_outdir_close(cli_outdir *o);

#endif /* SAM3_CLI_OUTDIR_H */
