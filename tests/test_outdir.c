/* examples/cli_outdir.c on its own, in the layout a subcommand writing OUTDIR/tracks.jsonl and
   OUTDIR/masks/NNNNNN_NNN.png would use (a manifest at the top that lists files in a subfolder
   without a manifest of its own): first run, rerun with fewer files (stale ones in the subfolder
   removed, a user's own file kept), a foreign file (refused, then --force), a link planted as the
   subfolder (never followed), a failed run (nothing changed, no temporary file left); a link
   planted as a dataset's per-image folder (cli_outdir_open_at: refused), a second writer while
   the lock is held (refused), temporary files a killed run left (removed by the next run), a
   user's own mask file without a manifest (foreign).
     test_outdir DIR      (DIR is removed and made afresh)
   Prints "test_outdir: N passed, N failed" last. */
#define _POSIX_C_SOURCE 200809L
#include "../examples/cli_outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int g_pass, g_fail;
#define CHECK(cond, ...)                                                                                                    \
    do {                                                                                                                   \
        if (cond) g_pass++;                                                                                                \
        else {                                                                                                             \
            g_fail++;                                                                                                      \
            printf("FAIL line %d: ", __LINE__);                                                                            \
            printf(__VA_ARGS__);                                                                                           \
            printf("\n");                                                                                                  \
        }                                                                                                                  \
    } while (0)

static const char *const NAMES[] = {"tracks.jsonl", "masks/", "#_#.png", NULL};
#define MARKER "\"generator\": \"sam3 "

static char g_root[1100];

static const char *at(const char *rel) {
    static char buf[8][4096];
    static int k;
    char *b = buf[k++ & 7];
    snprintf(b, 4096, "%s/%s", g_root, rel);
    return b;
}

static int exists(const char *rel) {
    struct stat st;
    return lstat(at(rel), &st) == 0;
}

static int file_is(const char *rel, const char *text) {
    char buf[256];
    FILE *f = fopen(at(rel), "rb");
    size_t n;
    if (!f) return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return !strcmp(buf, text);
}

static void put(const char *rel, const char *text) {
    FILE *f = fopen(at(rel), "wb");
    if (f) fputs(text, f), fclose(f);
}

/* One "track" run writing n masks into out/masks and a manifest listing them; fail_before_commit
   stops after writing. Returns 1 when the run (open, writes, commit) succeeded. */
static int run(const char *out, int n, int force, int fail_before_commit, char *why) {
    cli_outdir o, *masks;
    char name[64], manifest[4096];
    int k, ok = 0, len;
    why[0] = 0;
    if (!cli_outdir_open(&o, at(out), NAMES, "tracks.jsonl", MARKER, force)) goto done;
    if (!(masks = cli_outdir_open_sub(&o, "masks", NULL, MARKER, force))) goto done;
    len = snprintf(manifest, sizeof(manifest), "{\"generator\": \"sam3 track\"}\n");
    for (k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "%06d_%03d.png", k, 1);
        if (!cli_outdir_write(masks, name, name, strlen(name))) {
            snprintf(o.err, sizeof(o.err), "%s", masks->err);
            goto done;
        }
        len += snprintf(manifest + len, sizeof(manifest) - (size_t)len, "{\"frame\": %d, \"mask\": \"masks/%s\"}\n", k, name);
    }
    if (!cli_outdir_write(&o, "tracks.jsonl", manifest, (size_t)len)) goto done;
    if (fail_before_commit) goto done;
    ok = cli_outdir_commit(&o);
done:
    snprintf(why, 1024, "%s", o.err);
    cli_outdir_close(&o);
    return ok;
}

static int no_tmp(const char *rel) {
    DIR *d = opendir(at(rel));
    struct dirent *e;
    int clean = 1;
    if (!d) return 1;
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, CLI_OUTDIR_TMP_PREFIX, strlen(CLI_OUTDIR_TMP_PREFIX))) clean = 0;
    closedir(d);
    return clean;
}

int main(int argc, char **argv) {
    char why[1024], cmd[5000];
    if (argc != 2 || strlen(argv[1]) > 1000) {
        printf("usage: test_outdir DIR\n");
        return 2;
    }
    snprintf(g_root, sizeof(g_root), "%s", argv[1]);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", g_root, g_root);
    if (system(cmd) != 0) return 1;

    CHECK(run("t", 5, 0, 0, why), "first run: %s", why);
    CHECK(exists("t/tracks.jsonl") && file_is("t/masks/000004_001.png", "000004_001.png"), "first run: files missing");
    put("t/masks/000123_009.png", "mine");
    CHECK(run("t", 2, 0, 0, why), "rerun: %s", why);
    CHECK(exists("t/masks/000001_001.png") && !exists("t/masks/000002_001.png") && !exists("t/masks/000004_001.png"),
          "rerun: the stale masks the old manifest listed are not removed");
    CHECK(file_is("t/masks/000123_009.png", "mine"), "rerun: the user's own file was touched");
    CHECK(no_tmp("t") && no_tmp("t/masks"), "temporary files left");

    /* a failed run changes nothing */
    CHECK(!run("t", 7, 0, 1, why), "a run stopped before its commit succeeded");
    CHECK(!exists("t/masks/000006_001.png") && exists("t/masks/000001_001.png") && no_tmp("t") && no_tmp("t/masks"),
          "a failed run changed the folder or left temporary files");
    CHECK(!run("new", 3, 0, 1, why) && !exists("new"), "a failed run into a new folder left it behind");

    /* a foreign file: refused, then --force keeps it */
    put("t/notes.txt", "notes");
    CHECK(!run("t", 2, 0, 0, why) && strstr(why, "notes.txt") && strstr(why, "--force"), "foreign file not refused: %s", why);
    CHECK(run("t", 2, 1, 0, why) && file_is("t/notes.txt", "notes"), "--force: %s", why);
    remove(at("t/notes.txt"));

    /* a link planted as the subfolder: never followed */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/t/masks'", g_root);
    CHECK(system(cmd) == 0 && mkdir(at("elsewhere"), 0777) == 0 && symlink("../elsewhere", at("t/masks")) == 0, "cannot plant the link");
    CHECK(!run("t", 2, 0, 0, why), "a linked masks/ was accepted");
    CHECK(!run("t", 2, 1, 0, why), "a linked masks/ was accepted with --force");
    CHECK(!exists("elsewhere/000000_001.png") && !exists("elsewhere/000001_001.png"), "wrote through the linked folder");
    CHECK(exists("t/tracks.jsonl"), "the failed runs removed the old manifest");

    /* a manifest without the marker, a manifest that is a link */
    remove(at("t/masks"));
    put("t/tracks.jsonl", "{\"mask\": \"masks/000001_001.png\"}\n");
    CHECK(!run("t", 1, 0, 0, why) && strstr(why, "tracks.jsonl"), "a manifest sam3 did not write was accepted: %s", why);

    /* a dataset's per-image folder planted as a link: refused, nothing written through it */
    {
        cli_outdir d;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/ds' '%s/victim' && mkdir -p '%s/ds' '%s/victim'", g_root, g_root, g_root, g_root);
        CHECK(system(cmd) == 0 && symlink("../victim", at("ds/img1")) == 0, "cannot plant the per-image link");
        CHECK(!cli_outdir_open_at(&d, at("ds"), "img1", NAMES, "tracks.jsonl", MARKER, 1) && strstr(d.err, "link"),
              "a linked per-image folder was accepted: %s", d.err);
        cli_outdir_close(&d);
        CHECK(cli_outdir_open_at(&d, at("ds"), "img2", NAMES, "tracks.jsonl", MARKER, 0) &&
                  cli_outdir_write(&d, "tracks.jsonl", MARKER "x\"}\n", strlen(MARKER) + 4) && cli_outdir_commit(&d),
              "a new per-image folder: %s", d.err);
        cli_outdir_close(&d);
        CHECK(exists("ds/img2/tracks.jsonl") && !exists("victim/tracks.jsonl"), "per-image folder: wrong files");
    }

    /* one writer at a time: a second open of a locked folder is refused */
    {
        cli_outdir a, b;
        int oa = cli_outdir_open(&a, at("t"), NAMES, "tracks.jsonl", MARKER, 1);
        int ob = cli_outdir_open(&b, at("t"), NAMES, "tracks.jsonl", MARKER, 1);
        CHECK(oa && !ob && strstr(b.err, "another sam3 run"), "a second writer was not refused: %s / %s", a.err, b.err);
        cli_outdir_close(&b);
        cli_outdir_close(&a);
        CHECK(cli_outdir_lock_only(&a, at("t")) && !cli_outdir_lock_only(&b, at("t")), "cli_outdir_lock_only: %s", b.err);
        cli_outdir_close(&b);
        cli_outdir_close(&a);
    }

    /* temporary files a killed run left: removed by the next run */
    remove(at("t/tracks.jsonl"));
    CHECK(run("t", 2, 1, 0, why), "run before the leftovers: %s", why);
    put("t/" CLI_OUTDIR_TMP_PREFIX "999999-0", "left by kill -9");
    put("t/masks/" CLI_OUTDIR_TMP_PREFIX "999999-1", "left by kill -9");
    CHECK(run("t", 2, 0, 0, why) && no_tmp("t") && no_tmp("t/masks"), "leftover temporary files not removed: %s", why);

    /* a user's own file named like sam3's, in a folder without a manifest sam3 wrote: foreign */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/u' && mkdir -p '%s/u'", g_root, g_root);
    CHECK(system(cmd) == 0, "mkdir u");
    put("u/000000_001.png", "the user's");
    {
        static const char *const flat[] = {"tracks.jsonl", "#_#.png", NULL};
        cli_outdir d;
        CHECK(!cli_outdir_open(&d, at("u"), flat, "tracks.jsonl", MARKER, 0) && strstr(d.err, "000000_001.png"),
              "a user's mask file without a manifest was taken for sam3's: %s", d.err);
        cli_outdir_close(&d);
    }
    CHECK(file_is("u/000000_001.png", "the user's"), "the user's file was changed");
    /* ... but a run killed inside its commit (masks renamed, its manifest still a temporary file) is sam3's */
    put("u/" CLI_OUTDIR_TMP_PREFIX "999999-7", MARKER "track\"}\n");
    {
        static const char *const flat[] = {"tracks.jsonl", "#_#.png", NULL};
        cli_outdir d;
        CHECK(cli_outdir_open(&d, at("u"), flat, "tracks.jsonl", MARKER, 0) && no_tmp("u"),
              "a run killed inside its commit was not recognised: %s", d.err);
        cli_outdir_close(&d);
    }

    printf("test_outdir: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
