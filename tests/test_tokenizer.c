/* The CLIP tokenizer against golden ids from the reference (transformers 5.17 CLIPTokenizer, made
   by tools/make_reference.py on the GPU machine): every line of a golden file is
   hex(UTF-8 bytes of the prompt) TAB ids (BOS ... EOS, untruncated).

   usage: test_tokenizer GOLDEN.txt TABLES.sam3 [GOLDEN.txt TABLES.sam3]... [--model MODEL.sam3]
   TABLES.sam3: tokenizer tables (tests/make_tokenizer_file.py); a missing pair is skipped with a
   note (the real CLIP vocabulary is only read from ../shared). --model: public-API checks. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

static sam3_allocator g_a;

static int hexval(int ch) { return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1; }

static int load_tables(const char *path, sam3__bpe *b, void **file, void **mem) {
    size_t size, need;
    sam3__file f;
    char err[256];
    const sam3__tensor *by, *of, *me;
    const sam3__cfg *bos, *eos;
    *file = t_read_file(path, &size);
    if (!*file) return 0;
    if (sam3__file_parse(&f, (const uint8_t *)*file, size, &g_a, err, sizeof(err)) != SAM3_OK) {
        printf("%s: %s\n", path, err);
        return 0;
    }
    by = sam3__file_find(&f, "tokenizer.vocab.bytes");
    of = sam3__file_find(&f, "tokenizer.vocab.offsets");
    me = sam3__file_find(&f, "tokenizer.merges");
    bos = sam3__file_cfg(&f, "tokenizer.bos_token_id");
    eos = sam3__file_cfg(&f, "tokenizer.eos_token_id");
    if (!by || !of || !me || !bos || !eos) {
        sam3__file_free(&f, &g_a);
        return 0;
    }
    need = sam3__bpe_memory_required((int)of->shape[0] - 1, (int)me->shape[0]);
    *mem = malloc(need);
    if (sam3__bpe_init(b, (const uint8_t *)by->data, (size_t)by->shape[0], (const int32_t *)of->data, (int)of->shape[0] - 1,
                       (const int32_t *)me->data, (int)me->shape[0], (int)bos->i, (int)eos->i, *mem, need, err, sizeof(err)) != 0) {
        printf("%s: %s\n", path, err);
        sam3__file_free(&f, &g_a);
        return 0;
    }
    sam3__file_free(&f, &g_a); /* the tables point into the file buffer, which stays */
    return 1;
}

static void run_goldens(const char *golden, const char *tables) {
    FILE *fp = fopen(golden, "r");
    sam3__bpe b;
    void *file = NULL, *mem = NULL;
    static char line[1 << 20];
    int lines = 0, full_ok = 0, trunc_ok = 0, n_trunc = 0;
    if (!fp || !load_tables(tables, &b, &file, &mem)) {
        t_note("test_tokenizer: %s or %s not available, skipped", golden, tables);
        t_skip++;
        if (fp) fclose(fp);
        t_free_file(file);
        free(mem);
        return;
    }
    while (fgets(line, sizeof(line), fp)) {
        char *tab = strchr(line, '\t'), *p;
        unsigned char *text;
        size_t len = 0, i;
        int32_t want[4096], got[4096], cut[32];
        int nw = 0, ng = 0, nc = 0, nfull = 0, tr = 0, ok, rc;
        if (!tab) continue;
        text = (unsigned char *)malloc((size_t)(tab - line) / 2 + 1);
        for (p = line; p + 1 < tab; p += 2) text[len++] = (unsigned char)(hexval(p[0]) * 16 + hexval(p[1]));
        for (p = tab + 1; *p && nw < 4096;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[nw++] = (int32_t)v;
            p = end;
        }
        lines++;
        rc = sam3__bpe_encode(&b, (const char *)text, len, got, 4096, &ng, &nfull, &tr, g_a.alloc, g_a.free, g_a.user);
        ok = rc == 0 && ng == nw && nfull == nw && !tr;
        for (i = 0; ok && i < (size_t)nw; i++) ok = got[i] == want[i];
        full_ok += ok;
        t_check(ok, "%s line %d: %d ids, reference %d (%.60s)", golden, lines, ng, nw, line);
        /* the model's context: 31 ids + EOS, truncated flag when the prompt was longer */
        rc = sam3__bpe_encode(&b, (const char *)text, len, cut, 32, &nc, NULL, &tr, g_a.alloc, g_a.free, g_a.user);
        ok = rc == 0 && nc == (nw <= 32 ? nw : 32) && tr == (nw > 32) && cut[nc - 1] == b.eos_id;
        for (i = 0; ok && i + 1 < (size_t)nc; i++) ok = cut[i] == want[i];
        n_trunc += nw > 32;
        trunc_ok += ok;
        t_check(ok, "%s line %d: truncation to 32 ids", golden, lines);
        free(text);
    }
    fclose(fp);
    printf("  %s: %d/%d prompts identical to the reference, %d/%d correct at the 32-id context (%d truncated)\n", golden, full_ok, lines,
           trunc_ok, lines, n_trunc);
    t_check(lines >= 60, "%s: %d golden prompts (at least 60)", golden, lines);
    /* awkward inputs never crash: empty, spaces only, controls, a megabyte of letters */
    {
        int32_t ids[40];
        int n = 0, t2 = 0;
        size_t big = (size_t)1 << 20, i;
        char *s = (char *)malloc(big);
        t_check(sam3__bpe_encode(&b, "", 0, ids, 40, &n, NULL, &t2, g_a.alloc, g_a.free, g_a.user) == 0 && n == 2 && ids[0] == b.bos_id &&
                    ids[1] == b.eos_id,
                "empty prompt -> BOS EOS");
        t_check(sam3__bpe_encode(&b, "  \t\n ", 5, ids, 40, &n, NULL, &t2, g_a.alloc, g_a.free, g_a.user) == 0 && n == 2, "spaces only -> BOS EOS");
        t_check(sam3__bpe_encode(&b, "\x01\x02\x1b[0m\x7f", 7, ids, 40, &n, NULL, &t2, g_a.alloc, g_a.free, g_a.user) == 0 && n >= 3,
                "control characters");
        for (i = 0; i < big; i++) s[i] = (char)('a' + (i * 7 + i / 13) % 26);
        t_check(sam3__bpe_encode(&b, s, big, ids, 32, &n, NULL, &t2, g_a.alloc, g_a.free, g_a.user) == 0 && n == 32 && t2 == 1,
                "1 MB of letters -> 32 ids, truncated");
        for (i = 0; i < big; i++) s[i] = (char)(0x80 + i % 64);
        t_check(sam3__bpe_encode(&b, s, big, ids, 32, &n, NULL, &t2, g_a.alloc, g_a.free, g_a.user) == 0 && n == 32,
                "1 MB of invalid UTF-8 -> 32 ids");
        free(s);
    }
    t_free_file(file);
    free(mem);
}

static void run_model(const char *path) {
    sam3_model *m;
    int32_t ids[64];
    int n = -1;
    char *long_text;
    size_t i;
    if (sam3_load(path, NULL, &m) != SAM3_OK) {
        t_check(0, "load %s", path);
        return;
    }
    t_check(sam3_tokenize(m, "a cat", ids, 64, &n) == SAM3_OK && n >= 3, "sam3_tokenize a short prompt");
    t_check(sam3_tokenize(m, "a cat", ids, 1, &n) == SAM3_ERR_INVALID_ARG, "capacity 1 -> invalid argument");
    t_check(sam3_tokenize(m, NULL, ids, 64, &n) == SAM3_ERR_INVALID_ARG, "NULL text -> invalid argument");
    t_check(sam3_tokenize(NULL, "x", ids, 64, &n) == SAM3_ERR_INVALID_ARG, "NULL model -> invalid argument");
    long_text = (char *)malloc(4001);
    for (i = 0; i < 4000; i++) long_text[i] = (char)(i % 5 == 4 ? ' ' : 'a' + (int)(i % 23));
    long_text[4000] = 0;
    t_check(sam3_tokenize(m, long_text, ids, 64, &n) == SAM3_TRUNCATED && n == 32 && ids[31] == m->tok.eos,
            "long prompt -> SAM3_TRUNCATED, 32 ids ending with EOS");
    t_check(sam3_tokenize(m, long_text, ids, 8, &n) == SAM3_TRUNCATED && n == 8 && ids[7] == m->tok.eos,
            "small capacity -> truncated to the capacity");
    free(long_text);
    sam3_free(m);
}

int main(int argc, char **argv) {
    int i;
    sam3__allocator_resolve(NULL, &g_a);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) run_model(argv[i + 1]);
        else run_goldens(argv[i], argv[i + 1]);
    }
    return t_done("test_tokenizer");
}
