/* cli_dataset.c - `sam3 segment` on many images (the input list, shards) and the
   merge of per-image COCO files (`sam3 merge`): what examples/cli_dataset.h declares and describes. */
#define _POSIX_C_SOURCE 200809L /* lstat, fdopen, O_NOFOLLOW under -std=c99 */
#include "cli_dataset.h"
#include "cli_common.h"
#include "cli_outdir.h" /* CLI_OUTDIR_TMP_PREFIX */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <direct.h> /* _getcwd */
#include <io.h>
#include <process.h>
#include <windows.h> /* FindFirstFileA, MoveFileExA */
#else
#include <dirent.h>
#include <unistd.h>
#endif
#ifndef S_ISDIR
#define S_ISDIR(mode) (((mode)&S_IFMT) == S_IFDIR)
#endif

static int cli_ds__is_abs(const char *p) {
#if defined(_WIN32)
    if (isalpha((unsigned char)p[0]) && p[1] == ':') return 1;
    if (p[0] == '\\') return 1;
#endif
    return p[0] == '/';
}

void cli_ds_list_free(cli_ds_list *l) {
    int i;
    for (i = 0; i < l->n; i++) free(l->paths[i]), free(l->stems[i]), free(l->names[i]);
    free(l->paths);
    free(l->stems);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

/* Grows the three arrays to hold one more image; 0 when out of memory. */
static int cli_ds__grow(cli_ds_list *l) {
    int nc = l->cap ? 2 * l->cap : 64;
    char **np, **ns, **nm;
    if (l->n < l->cap) return 1;
    if ((np = (char **)realloc(l->paths, sizeof(char *) * (size_t)nc)) != NULL) l->paths = np;
    if (np && (ns = (char **)realloc(l->stems, sizeof(char *) * (size_t)nc)) != NULL) l->stems = ns;
    else return 0;
    if (!(nm = (char **)realloc(l->names, sizeof(char *) * (size_t)nc))) return 0;
    l->names = nm;
    l->cap = nc;
    return 1;
}

/* One image: dir/name (name alone without dir), its STEM, and name as its COCO file_name. */
static int cli_ds__add(cli_ds_list *l, const char *dir, const char *name) {
    size_t nd = dir ? strlen(dir) : 0, nn = strlen(name);
    const char *base = name + nn, *dot;
    char *p, *s, *c;
    if (!cli_ds__grow(l)) return 0;
    while (base > name && base[-1] != '/' && base[-1] != '\\') base--;
    dot = strrchr(base, '.');
    if (!dot || dot == base) dot = base + strlen(base);
    p = (char *)malloc(nd + nn + 2);
    s = (char *)malloc((size_t)(dot - base) + 1);
    c = (char *)malloc(nn + 1);
    if (!p || !s || !c) {
        free(p);
        free(s);
        free(c);
        return 0;
    }
    if (nd) memcpy(p, dir, nd), p[nd] = '/';
    memcpy(p + (nd ? nd + 1 : 0), name, nn + 1);
    memcpy(s, base, (size_t)(dot - base));
    s[dot - base] = 0;
    memcpy(c, name, nn + 1);
    l->paths[l->n] = p;
    l->names[l->n] = c;
    l->stems[l->n++] = s;
    return 1;
}

/* path made absolute (the working directory before a relative one) and normalised as text: '.',
   empty components and NAME/.. dropped ('\\' read as '/' on Windows). Malloc'ed, or NULL. */
static char *cli_ds__abs_norm(const char *path) {
    char cwd[4096], *buf, *out;
    size_t n, len = 0, i = 0;
    if (cli_ds__is_abs(path)) cwd[0] = 0;
#if defined(_WIN32)
    else if (!_getcwd(cwd, sizeof(cwd))) return NULL;
#else
    else if (!getcwd(cwd, sizeof(cwd))) return NULL;
#endif
    n = strlen(cwd) + strlen(path) + 2;
    if (!(buf = (char *)malloc(n)) || !(out = (char *)malloc(n + 1))) {
        free(buf);
        return NULL;
    }
    snprintf(buf, n, "%s%s%s", cwd, cwd[0] ? "/" : "", path);
#if defined(_WIN32)
    for (i = 0; buf[i]; i++)
        if (buf[i] == '\\') buf[i] = '/';
    i = 0;
    if (isalpha((unsigned char)buf[0]) && buf[1] == ':') out[len++] = buf[0], out[len++] = ':', i = 2; /* the drive stays */
#endif
    while (buf[i]) {
        size_t e = i;
        while (buf[e] && buf[e] != '/') e++;
        if (e - i == 2 && buf[i] == '.' && buf[i + 1] == '.') {
            while (len > 0 && out[len - 1] != '/') len--;
            if (len > 0) len--; /* (above the root: stays at the root) */
        } else if (e > i && !(e - i == 1 && buf[i] == '.')) {
            out[len++] = '/';
            memcpy(out + len, buf + i, e - i);
            len += e - i;
        }
        i = buf[e] ? e + 1 : e;
    }
    out[len] = 0;
    free(buf);
    return out;
}

/* path relative to root (a malloc'ed string, e.g. "sub/a.jpg"), both read as cli_ds__abs_norm
   reads them: links are not followed, so give both the same way. NULL when path is not inside
   root (or out of memory: *oom set). */
char *cli_ds_relative(const char *path, const char *root, int *oom) {
    char *p = cli_ds__abs_norm(path), *r = cli_ds__abs_norm(root), *out = NULL;
    size_t nr;
    *oom = !p || !r;
    if (p && r) {
        nr = strlen(r);
        while (nr > 0 && r[nr - 1] == '/') nr--; /* the root "/" is "" */
        if (!strncmp(p, r, nr) && p[nr] == '/' && p[nr + 1]) {
            if ((out = (char *)malloc(strlen(p + nr + 1) + 1)) != NULL) strcpy(out, p + nr + 1);
            else *oom = 1;
        }
    }
    free(p);
    free(r);
    return out;
}

/* Every image's COCO file_name made relative to root. CLI_OK, or CLI_FAIL after one line on
   stderr naming an image outside it. */
int cli_ds_list_rebase(cli_ds_list *l, const char *root) {
    int k, oom;
    for (k = 0; k < l->n; k++) {
        char *rel = cli_ds_relative(l->paths[k], root, &oom);
        if (!rel) {
            if (oom) cli_error("out of memory");
            else cli_error("'%s' is not inside --image-root '%s' (compared as written, made absolute: links are not followed)", l->paths[k], root);
            return CLI_FAIL;
        }
        free(l->names[k]);
        l->names[k] = rel;
    }
    return CLI_OK;
}

static int cli_ds__is_image_name(const char *nm) {
    const char *dot = strrchr(nm, '.');
    char ext[8];
    size_t i;
    if (!dot || strlen(dot) >= sizeof(ext)) return 0;
    for (i = 0; dot[i]; i++) ext[i] = (char)tolower((unsigned char)dot[i]);
    ext[i] = 0;
    return !strcmp(ext, ".jpg") || !strcmp(ext, ".jpeg") || !strcmp(ext, ".png");
}

static int cli_ds__cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entries of a folder, sorted by name (byte order), not hidden ones: its regular files
   (dirs 0) or its subfolders (dirs 1). A malloc'ed array of malloc'ed names in *out, their count,
   or -1 after a line on stderr. */
static int cli_ds__scan(const char *dir, int dirs, char ***out) {
    char **names = NULL;
    int n = 0, cap = 0, ok = 1;
#if defined(_WIN32)
    char pat[4096];
    WIN32_FIND_DATAA fd;
    HANDLE h;
    snprintf(pat, sizeof(pat), "%s\\*", dir);
    if ((h = FindFirstFileA(pat, &fd)) == INVALID_HANDLE_VALUE) {
        cli_error("cannot read the folder '%s'", dir);
        return -1;
    }
    do {
        const char *nm = fd.cFileName;
        if (nm[0] == '.' || (fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ||
            !(fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != !dirs)
            continue;
#else
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) {
        cli_error("cannot read the folder '%s': %s", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        char path[4096];
        struct stat st;
        if (nm[0] == '.') continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, nm) >= (int)sizeof(path) || (dirs ? lstat(path, &st) : stat(path, &st)) != 0 ||
            !(dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)))
            continue;
#endif
        if (n == cap) {
            char **nn = (char **)realloc(names, (size_t)(cap ? 2 * cap : 64) * sizeof(char *));
            if (!nn) {
                ok = 0;
                break;
            }
            names = nn;
            cap = cap ? 2 * cap : 64;
        }
        if (!(names[n] = (char *)malloc(strlen(nm) + 1))) {
            ok = 0;
            break;
        }
        strcpy(names[n++], nm);
#if defined(_WIN32)
    } while (FindNextFileA(h, &fd));
    FindClose(h);
#else
    }
    closedir(d);
#endif
    if (!ok) {
        while (n) free(names[--n]);
        free(names);
        cli_error("out of memory listing '%s'", dir);
        return -1;
    }
    if (n) qsort(names, (size_t)n, sizeof(char *), cli_ds__cmp_str);
    *out = names;
    return n;
}

static void cli_ds__free_names(char **names, int n) {
    while (n > 0) free(names[--n]);
    free(names);
}

/* The image files of a folder, sorted by name. */
static int cli_ds__from_dir(cli_ds_list *l, const char *dir) {
    char **names;
    int k, ok = 1, n = cli_ds__scan(dir, 0, &names);
    if (n < 0) return CLI_FAIL;
    for (k = 0; k < n && ok; k++) {
        if (!cli_ds__is_image_name(names[k])) l->ignored++;
        else if (!cli_ds__add(l, dir, names[k])) ok = 0;
    }
    cli_ds__free_names(names, n);
    if (!ok) cli_error("out of memory listing '%s'", dir);
    return ok ? CLI_OK : CLI_FAIL;
}

#define CLI_DS_MAX_LINE 4096          /* bytes of a list line, its end included */
#define CLI_DS_MAX_IMAGES 4000000     /* paths in one list */
#define CLI_DS_MAX_LIST (128ull << 20) /* bytes of a list file */

/* @LIST: one path a line (see the top). Bounded: lines of CLI_DS_MAX_LINE bytes, CLI_DS_MAX_LIST
   bytes, CLI_DS_MAX_IMAGES paths; a NUL byte (a binary file, /dev/zero) is an error at once. */
static int cli_ds__from_list(cli_ds_list *l, const char *list) {
    FILE *f;
    char line[CLI_DS_MAX_LINE], dir[4096];
    const char *slash = strrchr(list, '/');
    int lineno = 0, ch = 0;
    unsigned long long total = 0;
    struct stat st;
#if defined(_WIN32)
    if (strrchr(list, '\\') > slash) slash = strrchr(list, '\\');
#endif
    if (stat(list, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("'@%s': the list is a folder; for the images in a folder give -i '%s' (without @)", list, list);
        return CLI_FAIL;
    }
    if (!(f = fopen(list, "rb"))) {
        cli_error("cannot read the list '%s': %s", list, strerror(errno));
        return CLI_FAIL;
    }
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - list) : 0, list);
    if (slash == list) snprintf(dir, sizeof(dir), "/");
    while (ch != EOF) {
        char *s = line, *e;
        size_t n = 0;
        while ((ch = fgetc(f)) != EOF && ch != '\n' && ch != 0 && n + 1 < sizeof(line)) line[n++] = (char)ch;
        line[n] = 0;
        total += n + 1;
        lineno++;
        if (ch == 0 || (ch != EOF && ch != '\n') || total > CLI_DS_MAX_LIST) {
            cli_error(ch == 0 ? "'%s' line %d: a NUL byte: not a text file of paths" : ch != EOF && ch != '\n' ? "'%s' line %d: longer than %d bytes"
                                                                                          : "'%s' line %d: the list is over %d MiB",
                      list, lineno, ch == 0 || (ch != EOF && ch != '\n') ? (int)sizeof(line) - 2 : (int)(CLI_DS_MAX_LIST >> 20));
            fclose(f);
            return CLI_FAIL;
        }
        if (ch == EOF && ferror(f)) {
            cli_error("cannot read the list '%s': %s", list, strerror(errno));
            fclose(f);
            return CLI_FAIL;
        }
        while (*s == ' ' || *s == '\t') s++;
        for (e = s + strlen(s); e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'); e--) {}
        *e = 0;
        if (!*s || *s == '#') continue;
        if (l->n >= CLI_DS_MAX_IMAGES) {
            cli_error("'%s': more than %d paths", list, CLI_DS_MAX_IMAGES);
            fclose(f);
            return CLI_FAIL;
        }
        if (!cli_ds__add(l, cli_ds__is_abs(s) || !slash ? NULL : dir, s)) {
            cli_error("out of memory reading '%s'", list);
            fclose(f);
            return CLI_FAIL;
        }
    }
    fclose(f);
    return CLI_OK;
}

/* 1 when -i names many images (a folder or @LIST). */
int cli_ds_is_dataset(const char *arg) {
    struct stat st;
    return arg[0] == '@' || (stat(arg, &st) == 0 && S_ISDIR(st.st_mode));
}

static int cli_ds__list_build(cli_ds_list *l, const char *arg) {
    char **sorted;
    int k, rc;
    memset(l, 0, sizeof(*l));
    rc = arg[0] == '@' ? cli_ds__from_list(l, arg + 1) : cli_ds__from_dir(l, arg);
    if (rc != CLI_OK) return rc;
    if (l->n <= 0) { /* (<= : so that GCC 13 sees a positive count in the sizes below) */
        cli_error(arg[0] == '@' ? "no image paths in the list '%s'" : "no image files (*.jpg, *.jpeg, *.png) in the folder '%s'",
                  arg[0] == '@' ? arg + 1 : arg);
        return CLI_FAIL;
    }
    for (k = 0; k < l->n; k++) {
        const char *s = l->stems[k];
        if (!s[0] || !strcmp(s, ".") || !strcmp(s, "..") || !strcmp(s, "coco.json") || !strncmp(s, CLI_OUTDIR_TMP_PREFIX, strlen(CLI_OUTDIR_TMP_PREFIX))) {
            cli_error("'%s': its name gives no usable output folder name ('%s')", l->paths[k], s);
            return CLI_FAIL;
        }
    }
    /* same STEM twice: sort pointers to the stems (the list keeps its order) */
    if (!(sorted = (char **)malloc(sizeof(char *) * (size_t)l->n))) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    memcpy(sorted, l->stems, sizeof(char *) * (size_t)l->n);
    qsort(sorted, (size_t)l->n, sizeof(char *), cli_ds__cmp_str);
    for (k = 1; k < l->n; k++)
        if (!strcmp(sorted[k], sorted[k - 1])) {
            int a = -1, b = -1, j;
            for (j = 0; j < l->n; j++)
                if (!strcmp(l->stems[j], sorted[k])) {
                    if (a < 0) a = j;
                    else if (b < 0) b = j;
                }
            cli_error("'%s' and '%s' would both write OUTDIR/%s/ (each image's folder is its file name without the "
                      "extension): rename one, or list them in separate runs", l->paths[a], l->paths[b], sorted[k]);
            free(sorted);
            return CLI_FAIL;
        }
    free(sorted);
    return CLI_OK;
}

/* Builds the image list of -i (a folder or @LIST) and checks the STEMs. CLI_OK, or CLI_FAIL after
   one line on stderr with the list empty (nothing to free). */
int cli_ds_list_build(cli_ds_list *l, const char *arg) {
    const int rc = cli_ds__list_build(l, arg);
    if (rc != CLI_OK) cli_ds_list_free(l);
    return rc;
}

/* "I/N" with 0 <= I < N <= 1000000. */
int cli_ds_parse_shard(const char *s, int *i, int *n) {
    char *end;
    long a, b;
    errno = 0;
    a = strtol(s, &end, 10);
    if (end == s || *end != '/' || errno) return 0;
    s = end + 1;
    b = strtol(s, &end, 10);
    if (end == s || *end || errno || b < 1 || b > 1000000 || a < 0 || a >= b) return 0;
    *i = (int)a, *n = (int)b;
    return 1;
}

/* ---- settings: a 64-bit FNV-1a of everything that changes an image's outputs ---- */

static void cli_ds_hash(uint64_t *h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    size_t i;
    for (i = 0; i < n; i++) *h = (*h ^ p[i]) * 1099511628211ull;
}
void cli_ds_hash_str(uint64_t *h, const char *s) { cli_ds_hash(h, s ? s : "\xff(null)", s ? strlen(s) + 1 : 8); }

/* 1 when the file at path is a regular file whose first 12 KiB hold both marker and line (the
   "settings" entry, the image line; both come before the first mask): the manifest of an image
   done with the same settings. */
int cli_ds_file_has(const char *path, const char *marker, const char *line) {
    char buf[12289];
    size_t n;
    struct stat st;
    FILE *f;
#if !defined(_WIN32)
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
#else
    if (stat(path, &st) != 0 || !(st.st_mode & S_IFREG)) return 0;
#endif
    if (!(f = fopen(path, "rb"))) return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, marker) && strstr(buf, line);
}

/* ---- merging per-image coco.json files ----
   A per-image coco.json is written one item per line: "generator", "settings" and "run" lines
   ("run": the number of images in the run's input and its --shard), "info" (COCO's: its
   date_created, the one thing that may differ between the files, comes last but for the closing
   brace, so the greatest line is the latest) and "licenses": [] lines, then "images" with one line,
   "annotations" with one line each, "categories" with one line each. The merge reads that layout
   only (its own files), checks every line is the JSON it should be (an annotation refers to its
   file's image and to a category there; nothing else on the line), sorts the images by id,
   numbers the annotations from 1 in that order, and requires the same generator, settings,
   categories and image count everywhere: merging runs with other prompts or thresholds is an
   error. Every image of the run must be there (the missing ones are named, with their shard)
   unless `partial`. Bounds: a file of at most CLI_DS_MAX_COCO bytes, JSON nested at most
   CLI_DS__JSON_DEPTH deep. */
#define CLI_DS_MAX_COCO (1u << 30)
#define CLI_DS__JSON_DEPTH 32

/* ---- a JSON checker (RFC 8259 syntax), enough to validate the lines merge copies ---- */
static const char *cli_ds__json_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}
static const char *cli_ds__json_string(const char *p) { /* p at '"'; returns past the closing quote, or NULL */
    for (p++;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL; /* (NUL: the end of the text) */
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                int k;
                for (k = 1; k <= 4; k++)
                    if (!isxdigit((unsigned char)p[k])) return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
}
static const char *cli_ds__json_number(const char *p) {
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (isdigit((unsigned char)*p)) p++;
    else return NULL;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    return p;
}
/* One JSON value at p (after white space); returns past it, or NULL when it is not one. */
static const char *cli_ds__json_value(const char *p, int depth) {
    p = cli_ds__json_ws(p);
    if (depth > CLI_DS__JSON_DEPTH) return NULL;
    if (*p == '"') return cli_ds__json_string(p);
    if (*p == '-' || isdigit((unsigned char)*p)) return cli_ds__json_number(p);
    if (!strncmp(p, "true", 4)) return p + 4;
    if (!strncmp(p, "false", 5)) return p + 5;
    if (!strncmp(p, "null", 4)) return p + 4;
    if (*p == '[' || *p == '{') {
        const char close = *p == '[' ? ']' : '}';
        int obj = *p == '{';
        p = cli_ds__json_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (obj) {
                if (*p != '"' || !(p = cli_ds__json_string(p))) return NULL;
                p = cli_ds__json_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = cli_ds__json_value(p, depth + 1))) return NULL;
            p = cli_ds__json_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
            p = cli_ds__json_ws(p);
        }
    }
    return NULL;
}
/* 1 when line (after the indent) is one JSON object and nothing else. */
int cli_ds__json_object_line(const char *line) {
    const char *p = cli_ds__json_ws(line);
    return *p == '{' && (p = cli_ds__json_value(p, 0)) != NULL && !*cli_ds__json_ws(p);
}
/* The integer value of the top-level key of the object at obj (a checked object), in *v: 1, or 0
   when the key is absent or its value is not an integer that fits a long. */
static int cli_ds__json_int(const char *obj, const char *key, long *v) {
    const char *p = cli_ds__json_ws(obj) + 1;
    size_t kn = strlen(key);
    for (;;) {
        const char *k, *e;
        p = cli_ds__json_ws(p);
        if (*p != '"') return 0;
        k = p + 1;
        p = cli_ds__json_string(p);
        e = p - 1;
        p = cli_ds__json_ws(p) + 1; /* the ':' */
        p = cli_ds__json_ws(p);
        if ((size_t)(e - k) == kn && !strncmp(k, key, kn)) {
            char *end;
            errno = 0;
            *v = strtol(p, &end, 10);
            return end != p && !errno && (*end == ',' || *end == '}' || *end == ' ');
        }
        p = cli_ds__json_ws(cli_ds__json_value(p, 1));
        if (*p++ != ',') return 0;
    }
}

/* A whole file at most max bytes (NUL-terminated); NULL with errno set (EFBIG when longer,
   EILSEQ when it holds a NUL byte). */
static char *cli_ds__read_all(const char *path, size_t max) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (!f) return NULL;
    for (;;) {
        if (cap - n < 65536) {
            char *nb;
            if (cap > max) {
                free(buf);
                fclose(f);
                errno = EFBIG;
                return NULL;
            }
            if (!(nb = (char *)realloc(buf, cap ? 2 * cap : 65536))) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb, cap = cap ? 2 * cap : 65536;
        }
        if ((got = fread(buf + n, 1, cap - n - 1, f)) == 0) break;
        n += got;
    }
    fclose(f);
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        errno = EILSEQ;
        return NULL;
    }
    return buf;
}

void cli_ds__coco_free(cli_ds__coco *c) {
    free(c->text);
    free(c->ann);
    free(c->cats);
    memset(c, 0, sizeof(*c));
}

/* Parses one per-image coco.json held in text (malloc'ed, NUL-terminated; c takes it). 1, or 0
   with a line in why (cap bytes) saying what is wrong. */
int cli_ds__coco_parse_text(cli_ds__coco *c, char *text, const char *path, char *why, size_t cap) {
    char *line, *next;
    int section = 0, k; /* 1 images, 2 annotations, 3 categories */
    size_t cats_len = 0;
    long v;
    memset(c, 0, sizeof(*c));
    c->path = path;
    c->text = text;
    why[0] = 0;
    for (line = c->text; line && *line; line = next) {
        size_t n;
        if ((next = strchr(line, '\n')) != NULL) *next++ = 0;
        n = strlen(line);
        if (n && line[n - 1] == ',') line[--n] = 0;
        if (!strncmp(line, "  \"generator\": ", 15)) {
            if (c->generator || !cli_ds__json_value(line + 15, 0) || *cli_ds__json_ws(cli_ds__json_value(line + 15, 0))) goto bad;
            c->generator = line;
        } else if (!strncmp(line, "  \"info\": ", 10)) {
            if (c->info || !cli_ds__json_object_line(line + 10)) goto bad;
            c->info = line;
        } else if (!strcmp(line, "  \"licenses\": []")) {
            /* (sam3 knows no licence of the images: the merge writes the same empty list) */
        } else if (!strncmp(line, "  \"settings\": ", 14)) {
            if (c->settings || !cli_ds__json_value(line + 14, 0) || *cli_ds__json_ws(cli_ds__json_value(line + 14, 0))) goto bad;
            c->settings = line;
        } else if (!strncmp(line, "  \"run\": ", 9)) {
            char sh[32];
            if (c->n_images || !cli_ds__json_object_line(line + 9) || !cli_ds__json_int(line + 9, "images", &c->n_images) ||
                c->n_images < 1 || c->n_images > CLI_DS_MAX_IMAGES)
                goto bad;
            if (strstr(line + 9, "\"shard\": \"")) {
                const char *q = strstr(line + 9, "\"shard\": \"") + 10;
                size_t m = strcspn(q, "\"");
                if (m >= sizeof(sh)) goto bad;
                memcpy(sh, q, m);
                sh[m] = 0;
                if (!cli_ds_parse_shard(sh, &c->shard_i, &c->shard_n)) goto bad;
            }
        } else if (!strcmp(line, "  \"images\": [")) section = 1;
        else if (!strcmp(line, "  \"annotations\": [")) section = 2;
        else if (!strcmp(line, "  \"categories\": [")) section = 3;
        else if (!strcmp(line, "  ]")) section = 0;
        else if (section && !strncmp(line, "    {\"id\": ", 11)) {
            if (!cli_ds__json_object_line(line + 4) || !cli_ds__json_int(line + 4, "id", &v) || v < 1) {
                snprintf(why, cap, "a line in \"%s\" is not the JSON object it should be",
                         section == 1 ? "images" : section == 2 ? "annotations" : "categories");
                goto bad;
            }
            if (section == 1) {
                if (c->image) goto bad;
                c->image = line;
                c->id = v;
            } else if (section == 2) {
                char **na = (char **)realloc(c->ann, sizeof(char *) * (size_t)(c->n_ann + 1));
                if (!na) goto oom;
                c->ann = na;
                c->ann[c->n_ann++] = line;
            } else {
                char *nc = (char *)realloc(c->cats, cats_len + n + 2);
                if (!nc) goto oom;
                c->cats = nc;
                if (v != ++c->n_cats) goto bad;
                memcpy(c->cats + cats_len, line, n);
                cats_len += n;
                c->cats[cats_len++] = '\n';
                c->cats[cats_len] = 0;
            }
        } else if (strcmp(line, "{") && strcmp(line, "}") && n) {
            goto bad;
        }
    }
    if (!c->generator || (!strstr(c->generator, "\"sam3 segment ") && !strstr(c->generator, "\"sam3 everything ")) || !c->settings || !c->image || c->id < 1 || !c->cats) goto bad;
    if (!c->n_images) {
        snprintf(why, cap, "it does not say how many images its run had (written by an older sam3?): run that image again");
        return 0;
    }
    if (c->id > c->n_images) {
        snprintf(why, cap, "image %ld of a run of %ld images", c->id, c->n_images);
        return 0;
    }
    for (k = 0; k < c->n_ann; k++) { /* each annotation: of this image, in one of its categories */
        long img, cat;
        if (!cli_ds__json_int(c->ann[k] + 4, "image_id", &img) || img != c->id || !cli_ds__json_int(c->ann[k] + 4, "category_id", &cat) ||
            cat < 1 || cat > c->n_cats) {
            snprintf(why, cap, "annotation %d refers to another image or to a category the file does not have", k + 1);
            return 0;
        }
    }
    return 1;
bad:
    if (!why[0]) snprintf(why, cap, "not a per-image coco.json written by sam3 segment");
    return 0;
oom:
    snprintf(why, cap, "out of memory");
    return 0;
}

/* Parses one per-image coco.json; 0 with a message on stderr when it is not one. */
static int cli_ds__coco_parse(cli_ds__coco *c, const char *path) {
    char why[300], *text;
    memset(c, 0, sizeof(*c));
    if (!(text = cli_ds__read_all(path, CLI_DS_MAX_COCO))) {
        cli_error("cannot read '%s': %s", path,
                  errno == EFBIG ? "over 1 GiB" : errno == EILSEQ ? "a NUL byte: not a per-image coco.json written by sam3 segment" : strerror(errno));
        return 0;
    }
    if (!cli_ds__coco_parse_text(c, text, path, why, sizeof(why))) {
        cli_error("'%s': %s", path, why);
        return 0;
    }
    return 1;
}

static int cli_ds__cmp_coco(const void *a, const void *b) {
    const cli_ds__coco *x = (const cli_ds__coco *)a, *y = (const cli_ds__coco *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A new temporary file beside out, named CLI_OUTDIR_TMP_PREFIX... (O_EXCL: never an existing
   file or a planted link; a dataset run's OUTDIR lock removes one a killed merge left). Its name
   in tmp. */
static FILE *cli_ds__create_tmp(const char *out, char *tmp, size_t cap) {
    const char *slash = strrchr(out, '/');
    int k, dn = slash ? (int)(slash - out) + 1 : 0;
    for (k = 0; k < 1000; k++) {
        FILE *f;
#if defined(_WIN32)
        int fd;
        if (snprintf(tmp, cap, "%.*s" CLI_OUTDIR_TMP_PREFIX "merge-%ld-%d", dn, out, (long)_getpid(), k) >= (int)cap) break;
        fd = _open(tmp, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
        f = fd < 0 ? NULL : _fdopen(fd, "wb");
#else
        int fd;
        if (snprintf(tmp, cap, "%.*s" CLI_OUTDIR_TMP_PREFIX "merge-%ld-%d", dn, out, (long)getpid(), k) >= (int)cap) break;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        f = fd < 0 ? NULL : fdopen(fd, "wb");
#endif
        if (f || errno != EEXIST) return f;
    }
    errno = EEXIST;
    return NULL;
}

/* Merges the per-image coco.json files at paths (n of them) into one COCO file at out (written to
   a temporary file, renamed when complete). Without partial, every image of the run must be
   there. CLI_OK, or CLI_FAIL after a line on stderr. *n_ann gets the number of annotations. */
int cli_ds_coco_merge(const char *const *paths, int n, const char *out, int partial, long *n_ann) {
    cli_ds__coco *cs = (cli_ds__coco *)calloc((size_t)(n ? n : 1), sizeof(cli_ds__coco));
    char tmp[4200];
    FILE *f = NULL;
    long next_id = 1;
    int k, j, rc = CLI_FAIL;
    if (!cs) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (!n) {
        cli_error("nothing to merge: no per-image coco.json files");
        goto done;
    }
    for (k = 0; k < n; k++) {
        if (!cli_ds__coco_parse(&cs[k], paths[k])) goto done;
        if (k && (strcmp(cs[k].generator, cs[0].generator) || strcmp(cs[k].settings, cs[0].settings) || strcmp(cs[k].cats, cs[0].cats))) {
            cli_error("'%s' and '%s' come from runs with different settings (model, prompts, thresholds or version): not merged",
                      paths[0], paths[k]);
            goto done;
        }
        if (k && cs[k].n_images != cs[0].n_images) {
            cli_error("'%s' and '%s' come from runs over different inputs (%ld and %ld images): not merged", paths[0], paths[k],
                      cs[0].n_images, cs[k].n_images);
            goto done;
        }
    }
    qsort(cs, (size_t)n, sizeof(cli_ds__coco), cli_ds__cmp_coco);
    for (k = 1; k < n; k++)
        if (cs[k].id == cs[k - 1].id) {
            cli_error("'%s' and '%s' are both image %ld: outputs of different input lists?", cs[k - 1].path, cs[k].path, cs[k].id);
            goto done;
        }
    if (!partial && n < cs[0].n_images) { /* the ids missing, with the shard each belongs to */
        char list[400];
        size_t len = 0;
        long id, shown = 0, sn = 0;
        for (k = 0; k < n; k++)
            if (cs[k].shard_n) sn = cs[k].shard_n;
        list[0] = 0;
        for (id = 1, k = 0; id <= cs[0].n_images && len + 40 < sizeof(list); id++) {
            while (k < n && cs[k].id < id) k++;
            if (k < n && cs[k].id == id) continue;
            if (shown++ < 8) {
                if (sn) len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%ld (shard %ld/%ld)", len ? ", " : "", id, (id - 1) % sn, sn);
                else len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%ld", len ? ", " : "", id);
            }
        }
        cli_error("incomplete: %ld of the run's %ld images have no coco.json here (image%s %s%s): give every shard's folder, "
                  "finish the run, or pass --partial", cs[0].n_images - n, cs[0].n_images, cs[0].n_images - n == 1 ? "" : "s", list,
                  cs[0].n_images - n > 8 ? ", ..." : "");
        goto done;
    }
    if (!(f = cli_ds__create_tmp(out, tmp, sizeof(tmp)))) {
        cli_error("cannot write beside '%s': %s", out, strerror(errno));
        goto done;
    }
    for (k = 0, j = -1; k < n; k++) /* the latest "info" (its date_created), as of a run over them all */
        if (cs[k].info && (j < 0 || strcmp(cs[k].info, cs[j].info) > 0)) j = k;
    fprintf(f, "{\n%s,\n%s,\n", cs[0].generator, cs[0].settings);
    if (j >= 0) fprintf(f, "%s,\n", cs[j].info);
    fprintf(f, "  \"licenses\": [],\n  \"images\": [\n");
    for (k = 0; k < n; k++) fprintf(f, "%s%s\n", cs[k].image, k + 1 < n ? "," : "");
    fprintf(f, "  ],\n  \"annotations\": [\n");
    for (k = 0; k < n; k++)
        for (j = 0; j < cs[k].n_ann; j++) {
            const char *rest = cs[k].ann[j] + 11;
            while (*rest >= '0' && *rest <= '9') rest++;
            fprintf(f, "%s    {\"id\": %ld%s", next_id > 1 ? ",\n" : "", next_id, rest);
            next_id++;
        }
    fprintf(f, "%s  ],\n  \"categories\": [\n", next_id > 1 ? "\n" : "");
    {
        const char *c = cs[0].cats;
        while (*c) {
            const char *e = strchr(c, '\n');
            fprintf(f, "%.*s%s\n", (int)(e - c), c, e[1] ? "," : "");
            c = e + 1;
        }
    }
    fprintf(f, "  ]\n}\n");
    if (ferror(f) | fclose(f)) {
        f = NULL;
        cli_error("cannot write '%s'", tmp);
        remove(tmp);
        goto done;
    }
    f = NULL;
#if defined(_WIN32)
    if (!MoveFileExA(tmp, out, MOVEFILE_REPLACE_EXISTING)) {
#else
    if (rename(tmp, out) != 0) {
#endif
        cli_error("cannot write '%s': %s", out, strerror(errno));
        remove(tmp);
        goto done;
    }
    if (n_ann) *n_ann = next_id - 1;
    rc = CLI_OK;
done:
    for (k = 0; k < n; k++) cli_ds__coco_free(&cs[k]);
    free(cs);
    return rc;
}

/* `sam3 merge -o OUT.json DIR...`: every DIR/SUB/coco.json (SUB a subfolder, sorted by name),
   merged as above. */
int cli_ds_merge_dirs(const char *const *dirs, int n_dirs, const char *out, int partial, int quiet) {
    char **paths = NULL, **subs;
    int n = 0, cap = 0, d, k, rc = CLI_FAIL, skipped = 0;
    long n_ann = 0;
    for (d = 0; d < n_dirs; d++) {
        int ns = cli_ds__scan(dirs[d], 1, &subs);
        if (ns < 0) goto done;
        for (k = 0; k < ns; k++) {
            char p[4400];
            struct stat st;
            snprintf(p, sizeof(p), "%s/%s/coco.json", dirs[d], subs[k]);
            if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
                skipped++;
                continue;
            }
            if (n == cap) {
                char **np = (char **)realloc(paths, sizeof(char *) * (size_t)(cap ? 2 * cap : 256));
                if (!np) break;
                paths = np, cap = cap ? 2 * cap : 256;
            }
            if (!(paths[n] = (char *)malloc(strlen(p) + 1))) break;
            strcpy(paths[n++], p);
        }
        cli_ds__free_names(subs, ns);
        if (k < ns) {
            cli_error("out of memory");
            goto done;
        }
    }
    if ((rc = cli_ds_coco_merge((const char *const *)paths, n, out, partial, &n_ann)) == CLI_OK && !quiet)
        fprintf(stderr, "sam3 merge: %s: %d images, %ld annotations (%d folders without coco.json left out)\n", out, n, n_ann, skipped);
done:
    cli_ds__free_names(paths, n);
    return rc;
}
