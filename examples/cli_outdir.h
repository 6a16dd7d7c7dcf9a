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
     subfolders likewise. Anything else is refused unless `force`; with `force` the foreign files
     are left alone.
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
   printed. Names: cli_outdir_* for the CLI, cli_outdir__* private. */
#ifndef SAM3_CLI_OUTDIR_H
#define SAM3_CLI_OUTDIR_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    unsigned seq;
    char err[1024];
} cli_outdir;

static void cli_outdir__fail(cli_outdir *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof(o->err), fmt, ap);
    va_end(ap);
}

static char *cli_outdir__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int cli_outdir__match(const char *pat, const char *s) {
    for (;; pat++, s++) {
        if (*pat == '*') {
            for (;; s++) {
                if (cli_outdir__match(pat + 1, s)) return 1;
                if (!*s || *s == '/') return 0;
            }
        }
        if (*pat == '#') {
            if (*s < '0' || *s > '9') return 0;
            while (s[1] >= '0' && s[1] <= '9') s++;
            continue;
        }
        if (*pat != *s) return 0;
        if (!*pat) return 1;
    }
}

/* 1: a file sam3 writes here; 2: a subfolder sam3 writes here; 0: neither. */
static int cli_outdir__owned(const cli_outdir *o, const char *name) {
    char dir[300];
    int k, n = (int)strlen(name);
    if (!n || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/')) return 0;
    for (k = 0; o->names[k]; k++)
        if (o->names[k][strlen(o->names[k]) - 1] != '/' && cli_outdir__match(o->names[k], name)) return 1;
    if (n + 2 > (int)sizeof(dir)) return 0;
    memcpy(dir, name, (size_t)n);
    dir[n] = '/', dir[n + 1] = 0;
    for (k = 0; o->names[k]; k++)
        if (o->names[k][strlen(o->names[k]) - 1] == '/' && cli_outdir__match(o->names[k], dir)) return 2;
    return 0;
}

static int cli_outdir__is_tmp(const char *name) { return !strncmp(name, CLI_OUTDIR_TMP_PREFIX, strlen(CLI_OUTDIR_TMP_PREFIX)); }

/* Reads the manifest at dfd/name without following a link. Returns 1 when it is a regular file
   carrying the marker (then its listed names are added to o->listed), 0 when absent, -1 when it
   is something else (reason in o->err). */
static int cli_outdir__read_manifest(cli_outdir *o, int dfd, const char *name, const char *marker) {
    struct stat st;
    int fd, n, i, keep;
    char *buf, *p, *end, *s;
    size_t len = 0;
    ssize_t got;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        cli_outdir__fail(o, "cannot inspect '%s/%s': %s", o->path, name, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > CLI_OUTDIR_MAX_MANIFEST) {
        cli_outdir__fail(o, "'%s' holds a '%s' that sam3 did not write (%s)", o->path, name,
                         S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a folder" : !S_ISREG(st.st_mode) ? "not a file" : "too large");
        return -1;
    }
    if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        cli_outdir__fail(o, "cannot read '%s/%s': %s", o->path, name, strerror(errno));
        return -1;
    }
    buf = (char *)malloc((size_t)st.st_size + 1);
    while (buf && len < (size_t)st.st_size && (got = read(fd, buf + len, (size_t)st.st_size - len)) > 0) len += (size_t)got;
    close(fd);
    if (!buf) {
        cli_outdir__fail(o, "out of memory reading '%s/%s'", o->path, name);
        return -1;
    }
    buf[len] = 0;
    n = (int)(len < 4096 ? len : 4096);
    for (i = 0; i + (int)strlen(marker) <= n; i++)
        if (!memcmp(buf + i, marker, strlen(marker))) break;
    if (i + (int)strlen(marker) > n) {
        free(buf);
        cli_outdir__fail(o, "'%s' holds a '%s' that sam3 did not write", o->path, name);
        return -1;
    }
    /* every JSON string that is a name sam3 writes here ("name" or "dir/name") */
    for (p = buf, end = buf + len; p < end; p++) {
        char *q, *slash;
        if (*p != '"') continue;
        for (q = p + 1; q < end && *q != '"' && *q != '\\'; q++) {}
        if (q >= end) break;
        if (*q == '\\') { /* escapes: not one of our names; skip the string */
            for (q++; q < end && *q != '"'; q++)
                if (*q == '\\') q++;
            p = q;
            continue;
        }
        *q = 0;
        s = p + 1;
        slash = strchr(s, '/');
        keep = 0;
        if (!slash) {
            keep = strcmp(s, name) && cli_outdir__owned(o, s) == 1;
        } else if (!o->kid_name && !strchr(slash + 1, '/')) {
            *slash = 0;
            keep = cli_outdir__owned(o, s) == 2 && cli_outdir__owned(o, slash + 1) == 1;
            *slash = '/';
        }
        if (keep) {
            char **nl = (char **)realloc(o->listed, sizeof(char *) * (size_t)(o->n_listed + 1));
            if (nl) o->listed = nl;
            if (!nl || !(nl[o->n_listed] = cli_outdir__strdup(s))) {
                free(buf);
                cli_outdir__fail(o, "out of memory reading '%s/%s'", o->path, name);
                return -1;
            }
            o->n_listed++;
        }
        p = q;
    }
    free(buf);
    return 1;
}

/* 1 when every entry of the folder dfd is something sam3 writes there (subfolders checked one
   level down), else 0 with the first foreign entry's description in o->err; -1 on an i/o error. */
static int cli_outdir__all_owned(cli_outdir *o, int dfd, const char *where, const char *marker, int depth) {
    int fd2 = dup(dfd), r = 1;
    DIR *d;
    struct dirent *e;
    if (fd2 < 0 || !(d = fdopendir(fd2))) {
        if (fd2 >= 0) close(fd2);
        cli_outdir__fail(o, "cannot list '%s': %s", where, strerror(errno));
        return -1;
    }
    rewinddir(d);
    while (r == 1 && (e = readdir(d)) != NULL) {
        struct stat st;
        int kind;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || cli_outdir__is_tmp(e->d_name)) continue;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            cli_outdir__fail(o, "cannot inspect '%s/%s': %s", where, e->d_name, strerror(errno));
            r = -1;
            break;
        }
        kind = cli_outdir__owned(o, e->d_name);
        if (o->manifest && !strcmp(e->d_name, o->manifest)) {
            cli_outdir probe;
            memset(&probe, 0, sizeof(probe));
            probe.names = o->names;
            snprintf(probe.path, sizeof(probe.path), "%s", where);
            if (cli_outdir__read_manifest(&probe, dfd, e->d_name, marker) != 1) {
                snprintf(o->err, sizeof(o->err), "%s", probe.err);
                r = 0;
            }
            while (probe.n_listed) free(probe.listed[--probe.n_listed]);
            free(probe.listed);
        } else if (kind == 1 && !S_ISDIR(st.st_mode)) {
            continue;
        } else if (kind == 2 && S_ISDIR(st.st_mode) && depth == 0) {
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            char sub_where[4400];
            snprintf(sub_where, sizeof(sub_where), "%s/%s", where, e->d_name);
            if (sub < 0) {
                cli_outdir__fail(o, "cannot open '%s': %s", sub_where, strerror(errno));
                r = -1;
            } else {
                r = cli_outdir__all_owned(o, sub, sub_where, marker, 1);
                close(sub);
            }
        } else {
            cli_outdir__fail(o, "'%s' holds '%s', which sam3 did not write", where, e->d_name);
            r = 0;
        }
    }
    closedir(d);
    return r;
}

/* Opens (and inspects) the folder o->fd already refers to. */
static int cli_outdir__inspect(cli_outdir *o, const char *marker, int force) {
    int r;
    if (o->manifest) {
        r = cli_outdir__read_manifest(o, o->fd, o->manifest, marker);
        if (r < 0 && !force) goto foreign;
        o->had_manifest = r == 1;
    }
    r = cli_outdir__all_owned(o, o->fd, o->path, marker, o->kid_name ? 1 : 0);
    if (r < 0) return 0;
    if (r == 0 && !force) goto foreign;
    o->err[0] = 0;
    return 1;
foreign: {
    char why[1024];
    snprintf(why, sizeof(why), "%s", o->err);
    cli_outdir__fail(o, "%s: the output folder is neither empty nor an earlier sam3 output; choose a new folder, or pass --force "
                        "(sam3 then adds and replaces only its own files)", why);
    return 0;
}
}

/* mkdir -p; 0 or -1 with errno set. */
static int cli_outdir__mkdirs(const char *path) {
    char buf[4096];
    size_t i, n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        char c = buf[i];
        if (c != '/' && c != 0) continue;
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        buf[i] = c;
    }
    return 0;
}

static void cli_outdir__init(cli_outdir *o, const char *const *names, const char *manifest) {
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    o->names = names;
    o->manifest = manifest;
}

/* Creates the folder if missing and checks it may be written (see the top). 1 on success, else 0
   with o->err set; call cli_outdir_close either way. The path itself may be a link to a folder
   (the user named it); nothing inside it is followed. */
static int cli_outdir_open(cli_outdir *o, const char *path, const char *const *names, const char *manifest, const char *marker,
                           int force) {
    cli_outdir__init(o, names, manifest);
    snprintf(o->path, sizeof(o->path), "%s", path);
    if (strlen(path) >= sizeof(o->path) - 300) {
        cli_outdir__fail(o, "output folder path too long: '%s'", path);
        return 0;
    }
    {
        struct stat st;
        o->created = lstat(path, &st) != 0 && errno == ENOENT;
    }
    if (cli_outdir__mkdirs(path) != 0 || (o->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        cli_outdir__fail(o, "cannot create output folder '%s': %s", path, strerror(errno));
        return 0;
    }
    return cli_outdir__inspect(o, marker, force);
}

/* A subfolder `name` of parent (created if missing, never through a link), with its own
   manifest; committed with the parent. Returns NULL with parent->err set on failure. */
static cli_outdir *cli_outdir_open_sub(cli_outdir *parent, const char *name, const char *manifest, const char *marker, int force) {
    cli_outdir *o = (cli_outdir *)malloc(sizeof(cli_outdir)), **nk;
    size_t nl = strlen(name);
    int k;
    if (!o || !(nk = (cli_outdir **)realloc(parent->kids, sizeof(cli_outdir *) * (size_t)(parent->n_kids + 1)))) {
        free(o);
        cli_outdir__fail(parent, "out of memory");
        return NULL;
    }
    parent->kids = nk;
    cli_outdir__init(o, parent->names, manifest);
    parent->kids[parent->n_kids++] = o;
    if (strlen(parent->path) + nl + 2 > sizeof(o->path) || cli_outdir__owned(parent, name) != 2 ||
        !(o->kid_name = cli_outdir__strdup(name))) {
        cli_outdir__fail(parent, "'%s/%s': not a subfolder name sam3 writes", parent->path, name);
        return NULL;
    }
    strcpy(o->path, parent->path);
    strcat(strcat(o->path, "/"), name);
    if (mkdirat(parent->fd, name, 0777) == 0) o->created = 1;
    if ((!o->created && errno != EEXIST) || (o->fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        cli_outdir__fail(parent, "cannot create output folder '%s': %s", o->path, strerror(errno));
        return NULL;
    }
    for (k = 0; k < parent->n_listed; k++) /* what the parent's manifest lists in here */
        if (!strncmp(parent->listed[k], name, nl) && parent->listed[k][nl] == '/') {
            char **l = (char **)realloc(o->listed, sizeof(char *) * (size_t)(o->n_listed + 1));
            if (!l || !(l[o->n_listed] = cli_outdir__strdup(parent->listed[k] + nl + 1))) {
                if (l) o->listed = l;
                cli_outdir__fail(parent, "out of memory");
                return NULL;
            }
            o->listed = l;
            o->n_listed++;
        }
    if (!cli_outdir__inspect(o, marker, force)) {
        snprintf(parent->err, sizeof(parent->err), "%s", o->err);
        return NULL;
    }
    return o;
}

/* Writes n bytes as `name` (a file name sam3 writes here): to a new temporary file now, renamed
   at the commit. 1 on success, else 0 with o->err set. */
static int cli_outdir_write(cli_outdir *o, const char *name, const void *data, size_t n) {
    char tmp[64];
    int fd = -1, tries, k;
    size_t done = 0;
    if (cli_outdir__owned(o, name) != 1) {
        cli_outdir__fail(o, "'%s/%s': not a file name sam3 writes", o->path, name);
        return 0;
    }
    for (tries = 0; tries < 1000 && fd < 0; tries++) {
        snprintf(tmp, sizeof(tmp), CLI_OUTDIR_TMP_PREFIX "%ld-%u", (long)getpid(), o->seq++);
        fd = openat(o->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        cli_outdir__fail(o, "cannot write '%s/%s': %s", o->path, name, strerror(errno));
        return 0;
    }
    while (done < n) {
        ssize_t w = write(fd, (const char *)data + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    if (done < n || close(fd) != 0) {
        int e = done < n ? (errno ? errno : EIO) : errno;
        if (done < n) close(fd);
        unlinkat(o->fd, tmp, 0);
        cli_outdir__fail(o, "cannot write '%s/%s': %s", o->path, name, strerror(e));
        return 0;
    }
    for (k = 0; k < o->n_files; k++) /* written twice: the later one wins */
        if (!strcmp(o->files[k].name, name)) break;
    if (k < o->n_files) {
        char *t = cli_outdir__strdup(tmp);
        if (!t) goto oom;
        unlinkat(o->fd, o->files[k].tmp, 0);
        free(o->files[k].tmp);
        o->files[k].tmp = t;
        return 1;
    }
    if (o->n_files == o->cap_files) {
        int nc = o->cap_files ? 2 * o->cap_files : 16;
        cli_outdir__file *nf = (cli_outdir__file *)realloc(o->files, sizeof(cli_outdir__file) * (size_t)nc);
        if (!nf) goto oom;
        o->files = nf, o->cap_files = nc;
    }
    o->files[k].tmp = cli_outdir__strdup(tmp);
    o->files[k].name = cli_outdir__strdup(name);
    if (!o->files[k].tmp || !o->files[k].name) {
        free(o->files[k].tmp);
        free(o->files[k].name);
        goto oom;
    }
    o->n_files++;
    return 1;
oom:
    unlinkat(o->fd, tmp, 0);
    cli_outdir__fail(o, "out of memory");
    return 0;
}

static int cli_outdir__written(const cli_outdir *o, const char *name) {
    int k;
    for (k = 0; k < o->n_files; k++)
        if (!strcmp(o->files[k].name, name)) return 1;
    return 0;
}

/* No final name is a folder (a rename onto one would fail half way through the commit). */
static int cli_outdir__precheck(cli_outdir *o, cli_outdir *report) {
    int k;
    struct stat st;
    for (k = 0; k < o->n_files; k++)
        if (fstatat(o->fd, o->files[k].name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            cli_outdir__fail(report, "cannot write '%s/%s': %s", o->path, o->files[k].name, strerror(EISDIR));
            return 0;
        }
    for (k = 0; k < o->n_kids; k++)
        if (!cli_outdir__precheck(o->kids[k], report)) return 0;
    return 1;
}

static int cli_outdir__commit(cli_outdir *o, cli_outdir *report) {
    int k, j, manifest = -1;
    if (o->manifest && o->had_manifest && unlinkat(o->fd, o->manifest, 0) != 0 && errno != ENOENT) {
        cli_outdir__fail(report, "cannot replace '%s/%s': %s", o->path, o->manifest, strerror(errno));
        return 0;
    }
    o->had_manifest = 0;
    for (k = 0; k < o->n_kids; k++)
        if (!cli_outdir__commit(o->kids[k], report)) return 0;
    for (k = 0; k < o->n_files; k++) {
        if (o->manifest && !strcmp(o->files[k].name, o->manifest)) {
            manifest = k;
            continue;
        }
        if (renameat(o->fd, o->files[k].tmp, o->fd, o->files[k].name) != 0) {
            cli_outdir__fail(report, "cannot write '%s/%s': %s", o->path, o->files[k].name, strerror(errno));
            return 0;
        }
        free(o->files[k].tmp);
        o->files[k].tmp = NULL;
    }
    for (k = 0; k < o->n_listed; k++) { /* stale: listed by the old manifest, not written again */
        const char *l = o->listed[k], *slash = strchr(l, '/');
        if (!slash) {
            if (!cli_outdir__written(o, l)) unlinkat(o->fd, l, 0);
        } else {
            char dir[300];
            int sub;
            size_t dn = (size_t)(slash - l);
            for (j = 0; j < o->n_kids; j++)
                if (strlen(o->kids[j]->kid_name) == dn && !strncmp(o->kids[j]->kid_name, l, dn)) break;
            if (j < o->n_kids || dn >= sizeof(dir)) continue; /* the kid has it in its own list */
            memcpy(dir, l, dn);
            dir[dn] = 0;
            if ((sub = openat(o->fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
                unlinkat(sub, slash + 1, 0);
                close(sub);
            }
        }
    }
    if (manifest >= 0) {
        if (renameat(o->fd, o->files[manifest].tmp, o->fd, o->manifest) != 0) {
            cli_outdir__fail(report, "cannot write '%s/%s': %s", o->path, o->manifest, strerror(errno));
            return 0;
        }
        free(o->files[manifest].tmp);
        o->files[manifest].tmp = NULL;
    }
    o->committed = 1;
    return 1;
}

/* Puts every file written in place (this folder's and its subfolders'), removes the stale ones
   the old manifests listed, and the manifests last. 1 on success, else 0 with o->err set. */
static int cli_outdir_commit(cli_outdir *o) {
    if (!cli_outdir__precheck(o, o)) return 0;
    return cli_outdir__commit(o, o);
}

/* Removes the temporary files not committed (and the folder, when this run made it and nothing
   was committed: a failed run leaves no empty folder), closes, frees. Safe on a failed open. */
static void cli_outdir_close(cli_outdir *o) {
    int k;
    for (k = 0; k < o->n_kids; k++) {
        cli_outdir *kid = o->kids[k];
        int rm = kid->created && !kid->committed && o->fd >= 0;
        char *name = kid->kid_name;
        kid->kid_name = NULL;
        kid->created = 0; /* removed here, relative to this folder, not by its path */
        cli_outdir_close(kid);
        if (rm && name) unlinkat(o->fd, name, AT_REMOVEDIR); /* only when still empty */
        free(name);
        free(kid);
    }
    for (k = 0; k < o->n_files; k++) {
        if (o->files[k].tmp && o->fd >= 0) unlinkat(o->fd, o->files[k].tmp, 0);
        free(o->files[k].tmp);
        free(o->files[k].name);
    }
    for (k = 0; k < o->n_listed; k++) free(o->listed[k]);
    if (o->fd >= 0) close(o->fd);
    if (o->created && !o->committed && o->path[0]) rmdir(o->path); /* only when still empty */
    free(o->kids);
    free(o->files);
    free(o->listed);
    free(o->kid_name);
    o->kids = NULL, o->files = NULL, o->listed = NULL, o->kid_name = NULL;
    o->n_kids = o->n_files = o->n_listed = 0;
    o->fd = -1;
}

#endif /* SAM3_CLI_OUTDIR_H */
