/* The two mains of the fuzz targets (tests/fuzz_*.c), included after the target's
     static int fz_one(const uint8_t *data, size_t size);  0 when the invariants hold on the input
   Built for libFuzzer (clang -fsanitize=fuzzer), LLVMFuzzerTestOneInput: an input that breaks an
   invariant is a finding, as a crash is. Built with -DSAM3_FUZZ_REPLAY (make test, the sanitizers,
   valgrind), the replay: each file given, or every file of a directory in name order (the same
   order every run), read once and run through fz_one; the target then defines
     static void fz_verbose(const char *path, const unsigned char *buf, size_t n);  -v's line a file
   and ends its main() in fzr_main. */
#ifndef SAM3_FUZZ_REPLAY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (fz_one(data, size)) __builtin_trap();
    return 0;
}
#else
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void fz_verbose(const char *path, const unsigned char *buf, size_t n);
static int fzr_pass, fzr_fail, fzr_verbose;

static void fzr_file(const char *path) {
    FILE *f = fopen(path, "rb");
    long n;
    unsigned char *buf = NULL;
    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        !(buf = (unsigned char *)malloc((size_t)n + 1)) || (n && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        printf("FAIL cannot read %s\n", path);
        fzr_fail++;
        if (f) fclose(f);
        free(buf);
        return;
    }
    fclose(f);
    if (fzr_verbose) fz_verbose(path, buf, (size_t)n);
    if (fz_one(buf, (size_t)n)) {
        printf("FAIL %s: an invariant broke\n", path);
        fzr_fail++;
    } else {
        fzr_pass++;
    }
    free(buf);
}

static int fzr_name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void fzr_walk(const char *path) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    if (stat(path, &st) != 0) {
        printf("FAIL %s: no such file or directory\n", path);
        fzr_fail++;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        fzr_file(path);
        return;
    }
    if (!(d = opendir(path))) {
        printf("FAIL cannot open directory %s\n", path);
        fzr_fail++;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char *full;
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **nn = (char **)realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(char *));
            if (!nn) break;
            names = nn;
        }
        full = (char *)malloc(strlen(path) + strlen(e->d_name) + 2);
        if (!full) break;
        sprintf(full, "%s/%s", path, e->d_name);
        names[n++] = full;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof(char *), fzr_name_cmp);
    for (i = 0; i < n; i++) {
        fzr_walk(names[i]);
        free(names[i]);
    }
    free(names);
}

/* Replays argv[1..] (-v: fz_verbose on each file), prints "NAME: N passed, N failed" and returns
   the exit status: 1 if any input broke an invariant or could not be read, or there were none. */
static int fzr_main(int argc, char **argv, const char *name) {
    int i;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) fzr_verbose = 1;
        else fzr_walk(argv[i]);
    }
    if (fzr_pass + fzr_fail == 0) {
        printf("%s: no inputs (usage: %s [-v] FILE_OR_DIR...)\n", name, name);
        fzr_fail = 1;
    }
    printf("%s: %d passed, %d failed\n", name, fzr_pass, fzr_fail);
    return fzr_fail ? 1 : 0;
}
#endif
