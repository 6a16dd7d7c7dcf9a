/* Loader validation: hand-made broken .sam3 files, each must give its own error code and a
   message naming the problem, never a crash (this test also runs under ASan/UBSan).

   usage: test_format MODEL.sam3 [MODEL.sam3 ...]  (valid converted models to mutate) */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

static char g_msg[1024];
static void capture(void *user, int level, const char *msg) {
    (void)user;
    (void)level;
    snprintf(g_msg, sizeof(g_msg), "%s", msg);
}

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24); }
static void wr64(unsigned char *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

typedef struct blob {
    unsigned char *p;
    size_t n;
} blob;

static blob copy_of(const unsigned char *src, size_t n) {
    blob b;
    unsigned char *raw = (unsigned char *)malloc(n + 128);
    b.p = raw + 64 - ((size_t)raw % 64);
    ((unsigned char **)b.p)[-1] = raw;
    memcpy(b.p, src, n);
    b.n = n;
    return b;
}
static void blob_free(blob *b) { free(((unsigned char **)b->p)[-1]); }

/* Loads from memory; checks the code and that the message holds `want` (when given). */
static void expect(const char *what, const blob *b, sam3_result want_rc, const char *want) {
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m = NULL;
    sam3_result rc;
    lo.log = capture;
    g_msg[0] = 0;
    rc = sam3_load_from_memory(b->p, b->n, &lo, &m);
    t_check(rc == want_rc && (!want || strstr(g_msg, want)), "%-44s -> %s \"%s\" (expected %s%s%s)", what, sam3_result_string(rc), g_msg,
            sam3_result_string(want_rc), want ? " with " : "", want ? want : "");
    t_check(rc == SAM3_OK ? m != NULL : m == NULL, "%s: model pointer matches the result", what);
    sam3_free(m);
}

static uint64_t H(const blob *b, int off) { return rd64(b->p + off); }
#define HDR_FILE_BYTES 16
#define HDR_N_CFG 24
#define HDR_N_T 28
#define HDR_CFG 32
#define HDR_TT 40
#define HDR_ST 48
#define HDR_STB 56
#define HDR_DATA 64

/* Byte offset of the tensor-table entry whose name is `name` (or 0). */
static size_t tensor_entry(const blob *b, const char *name) {
    uint32_t i, n = rd32(b->p + HDR_N_T);
    uint64_t tt = H(b, HDR_TT), st = H(b, HDR_ST);
    for (i = 0; i < n; i++) {
        const unsigned char *e = b->p + tt + 64 * (uint64_t)i;
        if (rd32(e + 4) == strlen(name) && !memcmp(b->p + st + rd32(e), name, strlen(name))) return (size_t)(tt + 64 * (uint64_t)i);
    }
    return 0;
}
static size_t config_entry(const blob *b, const char *key) {
    uint32_t i, n = rd32(b->p + HDR_N_CFG);
    uint64_t co = H(b, HDR_CFG);
    for (i = 0; i < n; i++)
        if (!strcmp((const char *)b->p + co + 64 * (uint64_t)i, key)) return (size_t)(co + 64 * (uint64_t)i);
    return 0;
}

static void run(const char *path) {
    size_t size;
    unsigned char *orig = (unsigned char *)t_read_file(path, &size);
    blob b;
    size_t e, e2;
    char name[128];
    if (!orig) {
        t_check(0, "cannot read %s", path);
        return;
    }
    printf("%s (%lu bytes)\n", path, (unsigned long)size);

#define CASE(what, mutate, rc, msg)  \
    do {                            \
        b = copy_of(orig, size);    \
        mutate;                     \
        expect(what, &b, rc, msg);  \
        blob_free(&b);              \
    } while (0)

    CASE("valid file", (void)0, SAM3_OK, NULL);
    {
        sam3_model *m = NULL;
        sam3_load_options lo = sam3_load_options_default();
        t_check(sam3_load(path, NULL, &m) == SAM3_OK, "sam3_load (mmap) of a valid file");
        sam3_free(m);
        lo.no_mmap = 1;
        t_check(sam3_load(path, &lo, &m) == SAM3_OK, "sam3_load (read into memory) of a valid file");
        sam3_free(m);
        lo.log = capture;
        t_check(sam3_load("/nonexistent/x.sam3", &lo, &m) == SAM3_ERR_IO && m == NULL && strstr(g_msg, "/nonexistent/x.sam3"),
                "missing file -> SAM3_ERR_IO naming the path");
        t_check(sam3_load(NULL, NULL, &m) == SAM3_ERR_INVALID_ARG, "NULL path -> SAM3_ERR_INVALID_ARG");
        t_check(sam3_load(path, NULL, NULL) == SAM3_ERR_INVALID_ARG, "NULL out -> SAM3_ERR_INVALID_ARG");
        t_check(sam3_load_from_memory(NULL, 10, NULL, &m) == SAM3_ERR_INVALID_ARG, "NULL blob -> SAM3_ERR_INVALID_ARG");
        lo.allocator.alloc = sam3__default_alloc; /* half-filled allocator */
        t_check(sam3_load(path, &lo, &m) == SAM3_ERR_INVALID_ARG, "half-filled allocator -> SAM3_ERR_INVALID_ARG");
    }
    CASE("empty file", b.n = 0, SAM3_ERR_BAD_MAGIC, "magic");
    CASE("wrong magic", b.p[0] = 'G', SAM3_ERR_BAD_MAGIC, "magic");
    CASE("future format version", wr32(b.p + 4, 2), SAM3_ERR_BAD_VERSION, "re-convert");
    CASE("shorter than the header", b.n = 100, SAM3_ERR_CORRUPT_FILE, "header");
    CASE("truncated after the header", b.n = 128, SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated in the config table", b.n = (size_t)H(&b, HDR_CFG) + 70, SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated in the tensor table", b.n = (size_t)H(&b, HDR_TT) + 70, SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated in the string table", b.n = (size_t)H(&b, HDR_ST) + 10, SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated at the data", b.n = (size_t)H(&b, HDR_DATA), SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated by one byte", b.n -= 1, SAM3_ERR_CORRUPT_FILE, "truncated");
    CASE("truncated, header size adjusted", (b.n = (size_t)H(&b, HDR_DATA) + 4096, wr64(b.p + HDR_FILE_BYTES, b.n)),
         SAM3_ERR_CORRUPT_FILE, "outside the file");
    CASE("bad header_bytes", wr32(b.p + 8, 64), SAM3_ERR_CORRUPT_FILE, "header_bytes");
    CASE("config table past the end", wr64(b.p + HDR_CFG, (uint64_t)1 << 40), SAM3_ERR_CORRUPT_FILE, "config table");
    CASE("huge config count", wr32(b.p + HDR_N_CFG, 0xFFFFFFFFu), SAM3_ERR_CORRUPT_FILE, "config table");
    CASE("huge tensor count", wr32(b.p + HDR_N_T, 0x7FFFFFFFu), SAM3_ERR_CORRUPT_FILE, "tensor table");
    CASE("string table past the end", wr64(b.p + HDR_STB, (uint64_t)-1), SAM3_ERR_CORRUPT_FILE, "string table");
    CASE("misaligned data offset", wr64(b.p + HDR_DATA, H(&b, HDR_DATA) + 4), SAM3_ERR_CORRUPT_FILE, "data offset");

    b = copy_of(orig, size);
    e = tensor_entry(&b, "vision_encoder.backbone.layer_norm.weight");
    blob_free(&b);
    t_check(e != 0, "found a tensor entry to mutate");
    if (!e) return;
    CASE("tensor data misaligned", wr64(b.p + e + 48, rd64(b.p + e + 48) + 4), SAM3_ERR_CORRUPT_FILE, "misaligned");
    CASE("tensor data past the end", wr64(b.p + e + 48, (uint64_t)b.n + 64 * 1000), SAM3_ERR_CORRUPT_FILE, "outside the file");
    CASE("tensor data overlapping the previous", wr64(b.p + e + 48, rd64(b.p + e - 64 + 48)), SAM3_ERR_CORRUPT_FILE, "overlaps");
    CASE("tensor offset near 2^64", wr64(b.p + e + 48, (uint64_t)-64), SAM3_ERR_CORRUPT_FILE, "vision_encoder.backbone.layer_norm.weight");
    CASE("shape product overflows", (wr32(b.p + e + 12, 4), wr64(b.p + e + 16, 0x7FFFFFFF), wr64(b.p + e + 24, 0x7FFFFFFF),
                                     wr64(b.p + e + 32, 0x7FFFFFFF), wr64(b.p + e + 40, 0x7FFFFFFF)),
         SAM3_ERR_CORRUPT_FILE, "layer_norm.weight");
    CASE("dimension past INT32_MAX", wr64(b.p + e + 16, (uint64_t)1 << 40), SAM3_ERR_CORRUPT_FILE, "bad dimension");
    CASE("ndim 0", wr32(b.p + e + 12, 0), SAM3_ERR_CORRUPT_FILE, "ndim");
    CASE("ndim 7", wr32(b.p + e + 12, 7), SAM3_ERR_CORRUPT_FILE, "ndim");
    CASE("unknown dtype code", wr32(b.p + e + 8, 99), SAM3_ERR_CORRUPT_FILE, "dtype");
    CASE("data bytes disagree with the shape", wr64(b.p + e + 56, rd64(b.p + e + 56) - 4), SAM3_ERR_CORRUPT_FILE, "data bytes");
    CASE("name past the string table", wr32(b.p + e, 0x7FFFFFF0u), SAM3_ERR_CORRUPT_FILE, "name");
    CASE("empty name", wr32(b.p + e + 4, 0), SAM3_ERR_CORRUPT_FILE, "name");
    /* the same name twice: point entry e's name at the previous entry's */
    CASE("duplicated tensor name", (wr32(b.p + e, rd32(b.p + e - 64)), wr32(b.p + e + 4, rd32(b.p + e - 64 + 4))), SAM3_ERR_CORRUPT_FILE,
         "appears twice");
    /* a required tensor renamed away: change one letter of its name in the string table */
    CASE("missing tensor", b.p[H(&b, HDR_ST) + rd32(b.p + e) + 0] = 'V', SAM3_ERR_MISSING_TENSOR,
         "'vision_encoder.backbone.layer_norm.weight' is missing");
    /* f16 where this build needs f32: a consistent f16 tensor of the same shape (half the bytes) */
    CASE("wrong dtype for a weight", (wr32(b.p + e + 8, 1), wr64(b.p + e + 56, rd64(b.p + e + 56) / 2)), SAM3_ERR_SHAPE_MISMATCH,
         "dtype f16, expected f32");
    CASE("bf16 where only f32 is read (a norm)", (wr32(b.p + e + 8, 2), wr64(b.p + e + 56, rd64(b.p + e + 56) / 2)), SAM3_ERR_SHAPE_MISMATCH,
         "dtype bf16, expected f32 (only Linear and Conv weights may be bf16");
    b = copy_of(orig, size);
    e2 = tensor_entry(&b, "vision_encoder.backbone.layers.0.mlp.fc1.weight");
    blob_free(&b);
    if (e2) {
        /* mixed files (tools/convert.py --dtype bf16): a Linear weight is f32 or bf16, mapped in place */
        const uint32_t dt = rd32(orig + e2 + 8);
        const uint64_t nb = rd64(orig + e2 + 56);
        sam3_model *m = NULL;
        b = copy_of(orig, size);
        if (sam3_load_from_memory(b.p, b.n, NULL, &m) == SAM3_OK) {
            const sam3__lin *l = &m->vit_w.layers[0].fc1;
            const unsigned char *w = dt == 2 ? (const unsigned char *)l->wh : (const unsigned char *)l->w;
            t_check((dt == 2 ? !l->w : !l->wh) && w == b.p + rd64(orig + e2 + 48), "fc1 weight (%s) used in place", dt == 2 ? "bf16" : "f32");
            sam3_free(m);
        } else {
            t_check(0, "the valid file loads");
        }
        blob_free(&b);
        if (dt == 0) /* f32 -> a consistent bf16 tensor (half the bytes): loads */
            CASE("bf16 Linear weight in an f32 file", (wr32(b.p + e2 + 8, 2), wr64(b.p + e2 + 56, nb / 2)), SAM3_OK, NULL);
        CASE("f16 Linear weight", (wr32(b.p + e2 + 8, 1), wr64(b.p + e2 + 56, dt == 0 ? nb / 2 : nb)), SAM3_ERR_SHAPE_MISMATCH,
             "fc1.weight': dtype f16, expected f32 or bf16");
        snprintf(name, sizeof(name), "fc1.weight': shape [%llu,%llu]", (unsigned long long)rd64(orig + e2 + 24),
                 (unsigned long long)rd64(orig + e2 + 16));
        CASE("transposed weight (shape mismatch)", (wr64(b.p + e2 + 16, rd64(orig + e2 + 24)), wr64(b.p + e2 + 24, rd64(orig + e2 + 16))),
             SAM3_ERR_SHAPE_MISMATCH, name);
    }
    b = copy_of(orig, size);
    e = config_entry(&b, "vision.hidden_size");
    blob_free(&b);
    t_check(e != 0, "found config key vision.hidden_size");
    if (!e) return;
    CASE("missing config key", b.p[e] = 'V', SAM3_ERR_CORRUPT_FILE, "'vision.hidden_size' is missing");
    CASE("config key not NUL-terminated", memset(b.p + e, 'x', 48), SAM3_ERR_CORRUPT_FILE, "NUL-terminated");
    CASE("unknown config value type", wr32(b.p + e + 48, 42), SAM3_ERR_CORRUPT_FILE, "unknown value type");
    CASE("config value out of range", wr64(b.p + e + 56, (uint64_t)-5), SAM3_ERR_CORRUPT_FILE, "vision.hidden_size");
    CASE("config value of the wrong type", wr32(b.p + e + 48, 2), SAM3_ERR_CORRUPT_FILE, "not an integer");
    CASE("config value contradicting the tensors", wr64(b.p + e + 56, rd64(b.p + e + 56) * 2), SAM3_ERR_SHAPE_MISMATCH, "expected");
    b = copy_of(orig, size);
    e = config_entry(&b, "arch");
    blob_free(&b);
    if (e) CASE("other architecture", memcpy(b.p + H(&b, HDR_ST) + rd64(b.p + e + 56), "sam9", 4), SAM3_ERR_UNSUPPORTED, "sam9");
    b = copy_of(orig, size);
    e = config_entry(&b, "vision.global_attn_indexes");
    blob_free(&b);
    if (e) CASE("array past the string table", wr64(b.p + e + 56, (uint64_t)1 << 50), SAM3_ERR_CORRUPT_FILE, "outside the string table");
    /* Found by the fuzzer (tests/fuzz_load.c); each once undefined behaviour or an out-of-bounds
       read, now a clean error. Float config values that reach an int conversion: */
    if (e) {
        uint64_t ai = rd64(orig + HDR_ST) + rd64(orig + e + 56);
        if (rd32(orig + e + 48) == 4) /* i64 array: rewrite its first entry as a fraction */
            CASE("global_attn_indexes entry 1.5", (wr32(b.p + e + 48, 5), wr64(b.p + ai, 0x3FF8000000000000ull)), SAM3_ERR_CORRUPT_FILE,
                 "global_attn_indexes");
    }
    b = copy_of(orig, size);
    e = config_entry(&b, "neck.scale_factors");
    blob_free(&b);
    if (e && rd32(orig + e + 48) == 5) {
        uint64_t ai = rd64(orig + HDR_ST) + rd64(orig + e + 56);
        CASE("neck.scale_factors entry NaN", wr64(b.p + ai, 0x7FF8000000000000ull), SAM3_ERR_UNSUPPORTED, "scale_factors");
        CASE("neck.scale_factors entry 1e300", wr64(b.p + ai, 0x7E37E43C8800759Cull), SAM3_ERR_UNSUPPORTED, "scale_factors");
        CASE("neck.scale_factors entry -inf", wr64(b.p + ai, 0xFFF0000000000000ull), SAM3_ERR_UNSUPPORTED, "scale_factors");
        CASE("neck.scale_factors entry 4.2", wr64(b.p + ai, 0x4010CCCCCCCCCCCDull), SAM3_ERR_UNSUPPORTED, "scale_factors");
    }
    b = copy_of(orig, size);
    e = config_entry(&b, "tracker.neck.scale_factors");
    blob_free(&b);
    if (e && rd32(orig + e + 48) == 5) {
        uint64_t ai = rd64(orig + HDR_ST) + rd64(orig + e + 56);
        CASE("tracker.neck.scale_factors entry NaN", wr64(b.p + ai, 0x7FF8000000000000ull), SAM3_ERR_UNSUPPORTED, "scale_factors");
        CASE("tracker.neck.scale_factors entry 1e300", wr64(b.p + ai, 0x7E37E43C8800759Cull), SAM3_ERR_UNSUPPORTED, "scale_factors");
        CASE("tracker.neck.scale_factors entry 4.2", wr64(b.p + ai, 0x4010CCCCCCCCCCCDull), SAM3_ERR_UNSUPPORTED, "scale_factors");
    }
    /* tokenizer tables: an offset in the middle pointing far past the byte table (token 0 would
       be hashed over 2 GB before token 1's decreasing offsets were seen) */
    b = copy_of(orig, size);
    e = tensor_entry(&b, "tokenizer.vocab.offsets");
    blob_free(&b);
    if (e) {
        uint64_t d = rd64(orig + e + 48);
        CASE("tokenizer offset past the byte table", wr32(b.p + d + 4, 0x7FFFFFF0u), SAM3_ERR_CORRUPT_FILE, "tokenizer");
        CASE("tokenizer offsets[1] = n_bytes + 1", wr32(b.p + d + 4, (uint32_t)rd32(orig + d + 4 * rd64(orig + e + 16) - 4) + 1),
             SAM3_ERR_CORRUPT_FILE, "tokenizer");
        CASE("tokenizer offset negative", wr32(b.p + d + 8, 0xFFFFFFF0u), SAM3_ERR_CORRUPT_FILE, "tokenizer");
    }
    b = copy_of(orig, size);
    e = tensor_entry(&b, "tokenizer.merges");
    blob_free(&b);
    if (e && rd64(orig + e + 16) > 0) {
        uint64_t d = rd64(orig + e + 48);
        CASE("tokenizer merge id past the vocab", wr32(b.p + d, 0x7FFFFFFFu), SAM3_ERR_CORRUPT_FILE, "merge");
        CASE("tokenizer merge id -1", wr32(b.p + d + 8, 0xFFFFFFFFu), SAM3_ERR_CORRUPT_FILE, "merge");
    }
    CASE("no tensors at all", wr32(b.p + HDR_N_T, 0), SAM3_ERR_MISSING_TENSOR, "missing");
    CASE("no config entries", wr32(b.p + HDR_N_CFG, 0), SAM3_ERR_CORRUPT_FILE, "arch");
    {
        /* a borrowed blob must be 4-byte aligned to use its floats in place */
        unsigned char *raw = (unsigned char *)malloc(size + 8);
        sam3_model *m = NULL;
        memcpy(raw + 1, orig, size);
        t_check(sam3_load_from_memory(raw + 1, size, NULL, &m) == SAM3_ERR_INVALID_ARG && !m, "misaligned blob -> SAM3_ERR_INVALID_ARG");
        free(raw);
    }
    t_free_file(orig);
}

int main(int argc, char **argv) {
    int i;
    if (argc < 2) {
        fprintf(stderr, "usage: test_format MODEL.sam3...\n");
        return 2;
    }
    for (i = 1; i < argc; i++) run(argv[i]);
    return t_done("test_format");
}
