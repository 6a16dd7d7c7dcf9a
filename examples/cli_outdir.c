/* cli_outdir.c - the safe output-folder writer of the sam3 command-line tool: what
   examples/cli_outdir.h declares and describes (the rules it keeps are listed there). */
#define _POSIX_C_SOURCE 200809L /* openat, O_NOFOLLOW, O_CLOEXEC under -std=c99 */
#include "cli_outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the file-system calls, relative to an open folder (dfd; its path dpath for messages) ----
   POSIX: the *at() calls with O_NOFOLLOW. Windows (MinGW, MSVC): the same by path, where creating
   links needs privileges; O_EXCL still never opens an existing name and a rename replaces a link
   at the final name, but a folder swapped for a link between calls is not detected there. */
enum { CLI_OUTDIR__NONE = 0, CLI_OUTDIR__FILE = 1, CLI_OUTDIR__DIR = 2, CLI_OUTDIR__OTHER = 3 };

#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#include <process.h>
#include <windows.h>
static void cli_outdir__join(char *buf, size_t cap, const char *dpath, const char *name) { snprintf(buf, cap, "%s/%s", dpath, name); }
/* kind of dpath/name, without following a link; -1 with errno on an error other than absence */
static int cli_outdir__kind(int dfd, const char *dpath, const char *name, long long *size) {
    char p[4400];
    WIN32_FILE_ATTRIBUTE_DATA a;
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    if (!GetFileAttributesExA(p, GetFileExInfoStandard, &a)) {
        DWORD e = GetLastError();
        if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND) return CLI_OUTDIR__NONE;
        errno = EACCES;
        return -1;
    }
    if (size) *size = (long long)a.nFileSizeHigh << 32 | a.nFileSizeLow;
    if (a.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) return CLI_OUTDIR__OTHER;
    return a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY ? CLI_OUTDIR__DIR : CLI_OUTDIR__FILE;
}
static int cli_outdir__open_rd(int dfd, const char *dpath, const char *name) {
    char p[4400];
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    return _open(p, _O_RDONLY | _O_BINARY);
}
static int cli_outdir__create(int dfd, const char *dpath, const char *name) {
    char p[4400];
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    return _open(p, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
}
static int cli_outdir__rename(int dfd, const char *dpath, const char *from, const char *to) {
    char a[4400], b[4400];
    (void)dfd;
    cli_outdir__join(a, sizeof(a), dpath, from);
    cli_outdir__join(b, sizeof(b), dpath, to);
    if (MoveFileExA(a, b, MOVEFILE_REPLACE_EXISTING)) return 0;
    errno = GetLastError() == ERROR_ACCESS_DENIED ? EISDIR : EIO;
    return -1;
}
static int cli_outdir__unlink(int dfd, const char *dpath, const char *name) {
    char p[4400];
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    return _unlink(p);
}
static int cli_outdir__rmdir(int dfd, const char *dpath, const char *name) {
    char p[4400];
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    return _rmdir(p);
}
static int cli_outdir__mkdir(int dfd, const char *dpath, const char *name) {
    char p[4400];
    (void)dfd;
    cli_outdir__join(p, sizeof(p), dpath, name);
    return _mkdir(p);
}
/* a subfolder, not through a link: a descriptor (0 stands for the path on Windows) or -1 */
static int cli_outdir__sub(int dfd, const char *dpath, const char *name) {
    int k = cli_outdir__kind(dfd, dpath, name, NULL);
    if (k == CLI_OUTDIR__DIR) return 0;
    errno = k == CLI_OUTDIR__NONE ? ENOENT : ENOTDIR;
    return -1;
}
static int cli_outdir__top(const char *path) {
    DWORD a = GetFileAttributesA(path);
    if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) return 0;
    errno = a == INVALID_FILE_ATTRIBUTES ? ENOENT : ENOTDIR;
    return -1;
}
static void cli_outdir__closedir_fd(int fd) { (void)fd; }
static int cli_outdir__mkdir_path(const char *path) { return _mkdir(path); }
static int cli_outdir__rmdir_path(const char *path) { return _rmdir(path); }
static long cli_outdir__pid(void) { return (long)_getpid(); }
#define cli_outdir__read _read
#define cli_outdir__write _write
#define cli_outdir__close _close
/* the entries of a folder (not . and ..): a malloc'ed array of malloc'ed names, or -1 */
static int cli_outdir__list(int dfd, const char *dpath, char ***out) {
    char p[4400];
    WIN32_FIND_DATAA f;
    HANDLE h;
    char **v = NULL;
    int n = 0;
    (void)dfd;
    *out = NULL;
    cli_outdir__join(p, sizeof(p), dpath, "*");
    if ((h = FindFirstFileA(p, &f)) == INVALID_HANDLE_VALUE) {
        errno = EIO;
        return -1;
    }
    do {
        char **nv;
        if (!strcmp(f.cFileName, ".") || !strcmp(f.cFileName, "..")) continue;
        if (!(nv = (char **)realloc(v, sizeof(char *) * (size_t)(n + 1))) || !(nv[n] = (char *)malloc(strlen(f.cFileName) + 1))) {
            if (nv) v = nv;
            while (n) free(v[--n]);
            free(v);
            FindClose(h);
            errno = ENOMEM;
            return -1;
        }
        v = nv;
        strcpy(v[n++], f.cFileName);
    } while (FindNextFileA(h, &f));
    FindClose(h);
    *out = v;
    return n;
}
/* no advisory lock on Windows: a second writer is not detected there (nor are temporary files
   removed, which might be a live run's) */
#define CLI_OUTDIR__LOCKS 0
static int cli_outdir__lock(int fd) { (void)fd; return 0; }
#else
#include <dirent.h>
#include <sys/file.h>
#include <unistd.h>
#define CLI_OUTDIR__LOCKS 1
/* 0 when this process now holds the folder's lock, -1 with errno (EWOULDBLOCK: another holds it) */
static int cli_outdir__lock(int fd) {
    int r;
    while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {}
    return r;
}
static int cli_outdir__kind(int dfd, const char *dpath, const char *name, long long *size) {
    struct stat st;
    (void)dpath;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? CLI_OUTDIR__NONE : -1;
    if (size) *size = (long long)st.st_size;
    return S_ISREG(st.st_mode) ? CLI_OUTDIR__FILE : S_ISDIR(st.st_mode) ? CLI_OUTDIR__DIR : CLI_OUTDIR__OTHER;
}
static int cli_outdir__open_rd(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}
static int cli_outdir__create(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}
static int cli_outdir__rename(int dfd, const char *dpath, const char *from, const char *to) {
    (void)dpath;
    return renameat(dfd, from, dfd, to);
}
static int cli_outdir__unlink(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return unlinkat(dfd, name, 0);
}
static int cli_outdir__rmdir(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return unlinkat(dfd, name, AT_REMOVEDIR);
}
static int cli_outdir__mkdir(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return mkdirat(dfd, name, 0777);
}
static int cli_outdir__sub(int dfd, const char *dpath, const char *name) {
    (void)dpath;
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}
static int cli_outdir__top(const char *path) { return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }
static void cli_outdir__closedir_fd(int fd) { close(fd); }
static int cli_outdir__mkdir_path(const char *path) { return mkdir(path, 0777); }
static int cli_outdir__rmdir_path(const char *path) { return rmdir(path); }
static long cli_outdir__pid(void) { return (long)getpid(); }
#define cli_outdir__read read
#define cli_outdir__write write
#define cli_outdir__close close
static int cli_outdir__list(int dfd, const char *dpath, char ***out) {
    int fd2 = dup(dfd), n = 0;
    DIR *d;
    struct dirent *e;
    char **v = NULL;
    (void)dpath;
    *out = NULL;
    if (fd2 < 0 || !(d = fdopendir(fd2))) {
        if (fd2 >= 0) close(fd2);
        return -1;
    }
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        char **nv;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!(nv = (char **)realloc(v, sizeof(char *) * (size_t)(n + 1))) || !(nv[n] = (char *)malloc(strlen(e->d_name) + 1))) {
            if (nv) v = nv;
            while (n) free(v[--n]);
            free(v);
            closedir(d);
            errno = ENOMEM;
            return -1;
        }
        v = nv;
        strcpy(v[n++], e->d_name);
    }
    closedir(d);
    *out = v;
    return n;
}
#endif

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
    int fd, n, i, keep, kind;
    char *buf, *p, *end, *s;
    size_t len = 0;
    long long size = 0, got;
    if ((kind = cli_outdir__kind(dfd, o->path, name, &size)) == CLI_OUTDIR__NONE) return 0;
    if (kind < 0) {
        cli_outdir__fail(o, "cannot inspect '%s/%s': %s", o->path, name, strerror(errno));
        return -1;
    }
    if (kind != CLI_OUTDIR__FILE || size > CLI_OUTDIR_MAX_MANIFEST) {
        cli_outdir__fail(o, "'%s' holds a '%s' that sam3 did not write (%s)", o->path, name,
                         kind == CLI_OUTDIR__DIR ? "a folder" : kind == CLI_OUTDIR__OTHER ? "a link or not a file" : "too large");
        return -1;
    }
    if ((fd = cli_outdir__open_rd(dfd, o->path, name)) < 0) {
        cli_outdir__fail(o, "cannot read '%s/%s': %s", o->path, name, strerror(errno));
        return -1;
    }
    buf = (char *)malloc((size_t)size + 1);
    while (buf && len < (size_t)size && (got = (long long)cli_outdir__read(fd, buf + len, (unsigned)((size_t)size - len))) > 0) len += (size_t)got;
    cli_outdir__close(fd);
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

/* 1 when the regular file dfd/name carries the marker in its first 4 KiB (a JSON file sam3 wrote). */
static int cli_outdir__file_marked(int dfd, const char *where, const char *name, const char *marker) {
    char buf[4097];
    long got;
    size_t len = 0;
    int fd = cli_outdir__open_rd(dfd, where, name);
    if (fd < 0) return 0;
    while (len < sizeof(buf) - 1 && (got = (long)cli_outdir__read(fd, buf + len, (unsigned)(sizeof(buf) - 1 - len))) > 0) len += (size_t)got;
    cli_outdir__close(fd);
    buf[len] = 0;
    return memchr(buf, 0, len) == NULL && strstr(buf, marker) != NULL;
}

/* Removes the regular files named CLI_OUTDIR_TMP_PREFIX... in the folder dfd: what a run killed
   before its commit left. Called only while holding the folder's lock, so no live run owns them. */
static void cli_outdir__clean_tmp(int dfd, const char *where) {
    char **names;
    int k, n = cli_outdir__list(dfd, where, &names);
    for (k = 0; k < n; k++) {
        if (cli_outdir__is_tmp(names[k]) && cli_outdir__kind(dfd, where, names[k], NULL) == CLI_OUTDIR__FILE)
            cli_outdir__unlink(dfd, where, names[k]);
        free(names[k]);
    }
    if (n >= 0) free(names);
}

/* 1 when every entry of the folder dfd is something sam3 writes there (subfolders checked one
   level down), else 0 with the first foreign entry's description in o->err; -1 on an i/o error.
   parent_has: the folder above holds a file sam3 wrote (it vouches for files in here); *has_out:
   whether this folder does, or the one above. */
static int cli_outdir__all_owned(cli_outdir *o, int dfd, const char *where, const char *marker, int depth, int parent_has, int *has_out) {
    char **names;
    int r = 1, k, has = parent_has, n = cli_outdir__list(dfd, where, &names);
    char unvouched[600]; /* the first file named like sam3's that nothing vouches for */
    unvouched[0] = 0;
    if (n < 0) {
        cli_outdir__fail(o, "cannot list '%s': %s", where, strerror(errno));
        return -1;
    }
    /* first what vouches for the files named like sam3's: the manifest, a JSON file of ours beside
       it (coco.json), or the temporary manifest of a run killed inside its commit */
    for (k = 0; k < n; k++)
        if (!o->manifest || strcmp(names[k], o->manifest)) {
            if (!has && (cli_outdir__is_tmp(names[k]) || cli_outdir__owned(o, names[k]) == 1) &&
                cli_outdir__kind(dfd, where, names[k], NULL) == CLI_OUTDIR__FILE && cli_outdir__file_marked(dfd, where, names[k], marker))
                has = 1;
        } else {
            cli_outdir probe;
            int pr;
            memset(&probe, 0, sizeof(probe));
            probe.names = o->names;
            snprintf(probe.path, sizeof(probe.path), "%s", where);
            if ((pr = cli_outdir__read_manifest(&probe, dfd, names[k], marker)) < 0) {
                snprintf(o->err, sizeof(o->err), "%s", probe.err);
                r = 0;
            }
            has |= pr == 1;
            while (probe.n_listed) free(probe.listed[--probe.n_listed]);
            free(probe.listed);
        }
    for (k = 0; r == 1 && k < n; k++) {
        const char *name = names[k];
        int kind, owned;
        if (cli_outdir__is_tmp(name) || (o->manifest && !strcmp(name, o->manifest))) continue;
        if ((kind = cli_outdir__kind(dfd, where, name, NULL)) < 0) {
            cli_outdir__fail(o, "cannot inspect '%s/%s': %s", where, name, strerror(errno));
            r = -1;
            break;
        }
        owned = cli_outdir__owned(o, name);
        if (owned == 1 && kind != CLI_OUTDIR__DIR) {
            /* (a link at such a name is neither followed nor removed: it is left, as a user's file) */
            if (has || unvouched[0]) continue;
            snprintf(unvouched, sizeof(unvouched), "'%s' holds '%s' but no %s that sam3 wrote: it is not an earlier sam3 output", where,
                     name, o->manifest ? o->manifest : "manifest");
        } else if (owned == 2 && kind == CLI_OUTDIR__DIR && depth == 0) {
            int sub = cli_outdir__sub(dfd, where, name);
            char sub_where[4400];
            snprintf(sub_where, sizeof(sub_where), "%s/%s", where, name);
            if (sub < 0) {
                cli_outdir__fail(o, "cannot open '%s': %s", sub_where, strerror(errno));
                r = -1;
            } else {
                int sub_has;
                r = cli_outdir__all_owned(o, sub, sub_where, marker, 1, has, &sub_has);
                cli_outdir__closedir_fd(sub);
            }
        } else {
            cli_outdir__fail(o, "'%s' holds '%s', which sam3 did not write", where, name);
            r = 0;
        }
    }
    *has_out = has;
    if (r == 1 && unvouched[0]) { /* reported after any entry that is foreign by its name */
        cli_outdir__fail(o, "%s", unvouched);
        r = 0;
    }
    for (k = 0; k < n; k++) free(names[k]);
    free(names);
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
    r = cli_outdir__all_owned(o, o->fd, o->path, marker, o->kid_name ? 1 : 0, o->has_manifest, &o->has_manifest);
    if (CLI_OUTDIR__LOCKS && r >= 0 && (r == 1 || force)) cli_outdir__clean_tmp(o->fd, o->path); /* (after: a killed run's manifest vouched above) */
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
#if defined(_WIN32)
        if (c != '/' && c != '\\' && c != 0) continue;
#else
        if (c != '/' && c != 0) continue;
#endif
        buf[i] = 0;
        if (cli_outdir__mkdir_path(buf) != 0 && errno != EEXIST) return -1;
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

/* Takes the lock of the folder o->fd (see the top); 0 with o->err set when another run holds it. */
static int cli_outdir__take_lock(cli_outdir *o) {
    if (cli_outdir__lock(o->fd) == 0) return 1;
    if (errno == EWOULDBLOCK || errno == EAGAIN)
        cli_outdir__fail(o, "'%s' is being written by another sam3 run (it holds the folder's lock): wait for it to end, or choose "
                            "another output folder", o->path);
    else cli_outdir__fail(o, "cannot lock the output folder '%s': %s", o->path, strerror(errno));
    return 0;
}

/* Creates the folder if missing and checks it may be written (see the top). 1 on success, else 0
   with o->err set; call cli_outdir_close either way. The path itself may be a link to a folder
   (the user named it); nothing inside it is followed. */
int cli_outdir_open(cli_outdir *o, const char *path, const char *const *names, const char *manifest, const char *marker,
                           int force) {
    cli_outdir__init(o, names, manifest);
    snprintf(o->path, sizeof(o->path), "%s", path);
    if (strlen(path) >= sizeof(o->path) - 300) {
        cli_outdir__fail(o, "output folder path too long: '%s'", path);
        return 0;
    }
    {
        struct stat st;
        o->created = stat(path, &st) != 0 && errno == ENOENT;
    }
    if (cli_outdir__mkdirs(path) != 0 || (o->fd = cli_outdir__top(path)) < 0) {
        cli_outdir__fail(o, "cannot create output folder '%s': %s", path, strerror(errno));
        return 0;
    }
    return cli_outdir__take_lock(o) && cli_outdir__inspect(o, marker, force);
}

/* As cli_outdir_open for the folder `name` inside `parent` (the user's folder, which may be a
   link the user named), where name is a folder sam3 makes (a dataset's OUTDIR/STEM): a link, or
   anything but a folder, found at parent/name is refused, never followed. */
int cli_outdir_open_at(cli_outdir *o, const char *parent, const char *name, const char *const *names, const char *manifest,
                              const char *marker, int force) {
    int pfd;
    cli_outdir__init(o, names, manifest);
    if (strlen(parent) + strlen(name) + 2 >= sizeof(o->path) - 300 || !name[0] || strchr(name, '/')) {
        cli_outdir__fail(o, "output folder path too long or not a folder name: '%s/%s'", parent, name);
        return 0;
    }
    strcpy(o->path, parent);
    strcat(strcat(o->path, "/"), name);
    if (cli_outdir__mkdirs(parent) != 0 || (pfd = cli_outdir__top(parent)) < 0) {
        cli_outdir__fail(o, "cannot create output folder '%s': %s", parent, strerror(errno));
        return 0;
    }
    if (cli_outdir__mkdir(pfd, parent, name) == 0) o->created = 1;
    else if (errno != EEXIST) {
        cli_outdir__fail(o, "cannot create output folder '%s': %s", o->path, strerror(errno));
        cli_outdir__closedir_fd(pfd);
        return 0;
    }
    o->fd = cli_outdir__sub(pfd, parent, name);
    cli_outdir__closedir_fd(pfd);
    if (o->fd < 0) {
        int e = errno;
        if (e == ELOOP || e == ENOTDIR || e == EMLINK)
            cli_outdir__fail(o, "'%s' is a link or not a folder: sam3 does not write through links; remove it or choose another "
                                "output folder", o->path);
        else cli_outdir__fail(o, "cannot open output folder '%s': %s", o->path, strerror(e));
        return 0;
    }
    return cli_outdir__take_lock(o) && cli_outdir__inspect(o, marker, force);
}

/* Only the lock of the folder at path (created if missing), held until cli_outdir_close: for a
   folder whose entries other cli_outdir_open_at calls write (a dataset's OUTDIR). The temporary
   files a killed run left in it are removed. 1, or 0 with o->err set. */
int cli_outdir_lock_only(cli_outdir *o, const char *path) {
    static const char *const none[] = {NULL};
    cli_outdir__init(o, none, NULL);
    snprintf(o->path, sizeof(o->path), "%s", path);
    {
        struct stat st;
        o->created = stat(path, &st) != 0 && errno == ENOENT;
    }
    if (cli_outdir__mkdirs(path) != 0 || (o->fd = cli_outdir__top(path)) < 0) {
        cli_outdir__fail(o, "cannot create output folder '%s': %s", path, strerror(errno));
        return 0;
    }
    if (!cli_outdir__take_lock(o)) return 0;
    if (CLI_OUTDIR__LOCKS) cli_outdir__clean_tmp(o->fd, o->path);
    return 1;
}

/* A subfolder `name` of parent (created if missing, never through a link), with its own
   manifest; committed with the parent. Returns NULL with parent->err set on failure. */
cli_outdir *cli_outdir_open_sub(cli_outdir *parent, const char *name, const char *manifest, const char *marker, int force) {
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
    o->has_manifest = parent->has_manifest;
    if (strlen(parent->path) + nl + 2 > sizeof(o->path) || cli_outdir__owned(parent, name) != 2 ||
        !(o->kid_name = cli_outdir__strdup(name))) {
        cli_outdir__fail(parent, "'%s/%s': not a subfolder name sam3 writes", parent->path, name);
        return NULL;
    }
    strcpy(o->path, parent->path);
    strcat(strcat(o->path, "/"), name);
    if (cli_outdir__mkdir(parent->fd, parent->path, name) == 0) o->created = 1;
    if ((!o->created && errno != EEXIST) || (o->fd = cli_outdir__sub(parent->fd, parent->path, name)) < 0) {
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
int cli_outdir_write(cli_outdir *o, const char *name, const void *data, size_t n) {
    char tmp[64];
    int fd = -1, tries, k;
    size_t done = 0;
    if (cli_outdir__owned(o, name) != 1) {
        cli_outdir__fail(o, "'%s/%s': not a file name sam3 writes", o->path, name);
        return 0;
    }
    for (tries = 0; tries < 1000 && fd < 0; tries++) {
        snprintf(tmp, sizeof(tmp), CLI_OUTDIR_TMP_PREFIX "%ld-%u", cli_outdir__pid(), o->seq++);
        fd = cli_outdir__create(o->fd, o->path, tmp);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        cli_outdir__fail(o, "cannot write '%s/%s': %s", o->path, name, strerror(errno));
        return 0;
    }
    while (done < n) {
        size_t chunk = n - done < (1u << 30) ? n - done : (1u << 30);
        long w = (long)cli_outdir__write(fd, (const char *)data + done, (unsigned)chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    if (done < n || cli_outdir__close(fd) != 0) {
        int e = done < n ? (errno ? errno : EIO) : errno;
        if (done < n) cli_outdir__close(fd);
        cli_outdir__unlink(o->fd, o->path, tmp);
        cli_outdir__fail(o, "cannot write '%s/%s': %s", o->path, name, strerror(e));
        return 0;
    }
    for (k = 0; k < o->n_files; k++) /* written twice: the later one wins */
        if (!strcmp(o->files[k].name, name)) break;
    if (k < o->n_files) {
        char *t = cli_outdir__strdup(tmp);
        if (!t) goto oom;
        cli_outdir__unlink(o->fd, o->path, o->files[k].tmp);
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
    cli_outdir__unlink(o->fd, o->path, tmp);
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
    for (k = 0; k < o->n_files; k++)
        if (cli_outdir__kind(o->fd, o->path, o->files[k].name, NULL) == CLI_OUTDIR__DIR) {
            cli_outdir__fail(report, "cannot write '%s/%s': %s", o->path, o->files[k].name, strerror(EISDIR));
            return 0;
        }
    for (k = 0; k < o->n_kids; k++)
        if (!cli_outdir__precheck(o->kids[k], report)) return 0;
    return 1;
}

static int cli_outdir__commit(cli_outdir *o, cli_outdir *report) {
    int k, j, manifest = -1;
    if (o->manifest && o->had_manifest && cli_outdir__unlink(o->fd, o->path, o->manifest) != 0 && errno != ENOENT) {
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
        if (cli_outdir__rename(o->fd, o->path, o->files[k].tmp, o->files[k].name) != 0) {
            cli_outdir__fail(report, "cannot write '%s/%s': %s", o->path, o->files[k].name, strerror(errno));
            return 0;
        }
        free(o->files[k].tmp);
        o->files[k].tmp = NULL;
    }
    for (k = 0; k < o->n_listed; k++) { /* stale: listed by the old manifest, not written again */
        const char *l = o->listed[k], *slash = strchr(l, '/');
        if (!slash) {
            if (!cli_outdir__written(o, l)) cli_outdir__unlink(o->fd, o->path, l);
        } else {
            char dir[300], sub_path[4400];
            int sub;
            size_t dn = (size_t)(slash - l);
            for (j = 0; j < o->n_kids; j++)
                if (strlen(o->kids[j]->kid_name) == dn && !strncmp(o->kids[j]->kid_name, l, dn)) break;
            if (j < o->n_kids || dn >= sizeof(dir)) continue; /* the kid has it in its own list */
            memcpy(dir, l, dn);
            dir[dn] = 0;
            snprintf(sub_path, sizeof(sub_path), "%s/%s", o->path, dir);
            if ((sub = cli_outdir__sub(o->fd, o->path, dir)) >= 0) {
                cli_outdir__unlink(sub, sub_path, slash + 1);
                cli_outdir__closedir_fd(sub);
            }
        }
    }
    if (manifest >= 0) {
        if (cli_outdir__rename(o->fd, o->path, o->files[manifest].tmp, o->manifest) != 0) {
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
int cli_outdir_commit(cli_outdir *o) {
    if (!cli_outdir__precheck(o, o)) return 0;
    return cli_outdir__commit(o, o);
}

/* Removes the temporary files not committed (and the folder, when this run made it and nothing
   was committed: a failed run leaves no empty folder), closes, frees. Safe on a failed open. */
void cli_outdir_close(cli_outdir *o) {
    int k;
    for (k = 0; k < o->n_kids; k++) {
        cli_outdir *kid = o->kids[k];
        int rm = kid->created && !kid->committed && o->fd >= 0;
        char *name = kid->kid_name;
        kid->kid_name = NULL;
        kid->created = 0; /* removed here, relative to this folder, not by its path */
        cli_outdir_close(kid);
        if (rm && name) cli_outdir__rmdir(o->fd, o->path, name); /* only when still empty */
        free(name);
        free(kid);
    }
    for (k = 0; k < o->n_files; k++) {
        if (o->files[k].tmp && o->fd >= 0) cli_outdir__unlink(o->fd, o->path, o->files[k].tmp);
        free(o->files[k].tmp);
        free(o->files[k].name);
    }
    for (k = 0; k < o->n_listed; k++) free(o->listed[k]);
    if (o->fd >= 0) cli_outdir__closedir_fd(o->fd);
    if (o->created && !o->committed && o->path[0]) cli_outdir__rmdir_path(o->path); /* only when still empty */
    free(o->kids);
    free(o->files);
    free(o->listed);
    free(o->kid_name);
    o->kids = NULL, o->files = NULL, o->listed = NULL, o->kid_name = NULL;
    o->n_kids = o->n_files = o->n_listed = 0;
    o->fd = -1;
}
