/* A vocabulary in one pass (sam3_segment_many):

     test_vocab --model build/tiny_a.sam3 [--model build/tiny_a_bf16.sam3 ...]

   For each model, on a synthetic image:
   1. seven prompts (texts, boxes, text + boxes, a concept made on this image, one made on another
      image, text + concept, a text repeated) in one sam3_segment_many call give, prompt by prompt,
      bit-identical results to sam3_segment one at a time (every query kept: scores, boxes, queries,
      areas, low-resolution logits, masks, presence, semantic map), with 1 thread and with 2, and
      the two thread counts the same bytes; a second call on the warm context (decoder and encoder
      caches filled) the same again, and the context's timings summed over the prompts;
   2. errors: NULL context, prompts or out, n = 0, negative, SAM3_MAX_SEGMENT_PROMPTS + 1, a bad
      prompt in the middle (named by its index, every out zeroed, nothing computed), no image. */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 96
#define H 72
#define NP 7

/* A deterministic RGB picture: a gradient with two blocks, and a second one (for a concept made on
   another image). */
static void picture(uint8_t *rgb, int variant) {
    int x, y;
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) {
            uint8_t *p = rgb + 3 * ((size_t)y * W + x);
            int in1 = x > 10 && x < 40 && y > 12 && y < 50, in2 = x > 55 && x < 85 && y > 30 && y < 66;
            p[0] = (uint8_t)(variant ? 255 - 2 * x : 2 * x + (in1 ? 90 : 0));
            p[1] = (uint8_t)(3 * y + (in2 ? 60 : 0));
            p[2] = (uint8_t)((x * y + variant * 77) & 255);
        }
}

/* A deep copy of one result (the context's next call reuses its buffers); k->r points into it. */
typedef struct kept {
    sam3_segment_result r;
    sam3_instance *in;
    float *low, *sem;
    uint8_t *mask, *sem_mask;
} kept;
static void keep(kept *k, const sam3_segment_result *r) {
    const size_t lp = (size_t)r->low_res_width * r->low_res_height, plane = (size_t)r->width * r->height;
    int i, n = r->n_instances;
    k->r = *r;
    k->in = (sam3_instance *)calloc((size_t)n + 1, sizeof(sam3_instance));
    k->low = (float *)malloc(sizeof(float) * lp * ((size_t)n + 1));
    k->mask = (uint8_t *)malloc(plane * ((size_t)n + 1));
    k->sem = (float *)malloc(sizeof(float) * lp);
    k->sem_mask = (uint8_t *)malloc(plane);
    if (!k->in || !k->low || !k->mask || !k->sem || !k->sem_mask) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        k->in[i] = r->instances[i];
        memcpy(k->low + (size_t)i * lp, r->instances[i].low_res_logits, lp * sizeof(float));
        memcpy(k->mask + (size_t)i * plane, r->instances[i].mask, plane);
    }
    memcpy(k->sem, r->semantic_logits, lp * sizeof(float));
    memcpy(k->sem_mask, r->semantic_mask, plane);
    for (i = 0; i < n; i++) { /* k->r then reads the copies: same_as(k1, &k2->r) compares two kept results */
        k->in[i].low_res_logits = k->low + (size_t)i * lp;
        k->in[i].mask = k->mask + (size_t)i * plane;
    }
    k->r.instances = k->in;
    k->r.semantic_logits = k->sem;
    k->r.semantic_mask = k->sem_mask;
}
static void unkeep(kept *k) {
    free(k->in);
    free(k->low);
    free(k->mask);
    free(k->sem);
    free(k->sem_mask);
}
/* 1 when r holds exactly k's bytes. */
static int same_as(const kept *k, const sam3_segment_result *r) {
    const size_t lp = (size_t)r->low_res_width * r->low_res_height, plane = (size_t)r->width * r->height;
    int i;
    if (r->n_instances != k->r.n_instances || r->presence != k->r.presence || r->n_queries != k->r.n_queries || r->width != k->r.width ||
        r->height != k->r.height || r->n_text_tokens != k->r.n_text_tokens || r->text_truncated != k->r.text_truncated ||
        memcmp(k->sem, r->semantic_logits, lp * sizeof(float)) || memcmp(k->sem_mask, r->semantic_mask, plane))
        return 0;
    for (i = 0; i < r->n_instances; i++) {
        const sam3_instance *a = &k->in[i], *b = &r->instances[i];
        if (a->query != b->query || a->score != b->score || memcmp(&a->box, &b->box, sizeof(a->box)) || a->area != b->area ||
            memcmp(k->low + (size_t)i * lp, b->low_res_logits, lp * sizeof(float)) || memcmp(k->mask + (size_t)i * plane, b->mask, plane))
            return 0;
    }
    return 1;
}

static sam3_segment_options all_queries(void) {
    sam3_segment_options so = sam3_segment_options_default();
    so.score_threshold = -1;
    so.low_res = 1;
    so.semantic = 1;
    return so;
}

static const sam3_box g_boxes[2] = {{12.0f, 14.0f, 38.0f, 48.0f}, {56.0f, 31.0f, 84.0f, 64.0f}};
static const int g_labels[2] = {1, 0};

/* The seven prompts; k_here, k_there: concepts made on this image and on the other one. */
static void prompts(sam3_segment_prompt *pr, const sam3_concept *const *k_here, const sam3_concept *const *k_there) {
    memset(pr, 0, sizeof(*pr) * NP);
    pr[0].text = "a cat";
    pr[1].boxes = g_boxes, pr[1].box_labels = g_labels, pr[1].n_boxes = 2;
    pr[2].text = "the red car", pr[2].boxes = g_boxes, pr[2].n_boxes = 1;
    pr[3].concepts = k_here, pr[3].n_concepts = 1;
    pr[4].concepts = k_there, pr[4].n_concepts = 1;
    pr[5].text = "a bird", pr[5].concepts = k_here, pr[5].n_concepts = 1;
    pr[6].text = "a cat";
}

/* Part 1 on one model and thread count; the batched results (deep copies) left in got[NP]. */
static void test_equal(sam3_model *m, int threads, const uint8_t *img, const uint8_t *other, kept *got) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_segment_options so = all_queries();
    sam3_segment_prompt pr[NP], mk;
    sam3_segment_result one, many[NP];
    sam3_ctx *c1 = NULL, *c2 = NULL;
    sam3_concept *k_here = NULL, *k_there = NULL;
    const sam3_concept *lh[1], *lt[1];
    sam3_timings t;
    kept ref[NP];
    int i, j, ok;
    co.n_threads = threads;
    co.blas_threads = 1; /* as the CLI: the BLAS single-threaded inside sam3's splits, the same bits for any n_threads */
    if (sam3_ctx_new(m, &co, &c1) != SAM3_OK || sam3_ctx_new(m, &co, &c2) != SAM3_OK) {
        t_check(0, "sam3_ctx_new");
        return;
    }
    memset(&mk, 0, sizeof(mk));
    mk.boxes = g_boxes, mk.n_boxes = 2, mk.box_labels = g_labels;
    t_check(sam3_set_image(c1, other, W, H, W * 3, SAM3_RGB8) == SAM3_OK && sam3_concept_new(c1, &mk, &k_there) == SAM3_OK,
            "concept on the other image: %s", sam3_ctx_last_error(c1));
    mk.text = "a dog", mk.boxes = NULL, mk.n_boxes = 0, mk.box_labels = NULL;
    t_check(sam3_set_image(c1, img, W, H, W * 3, SAM3_RGB8) == SAM3_OK && sam3_concept_new(c1, &mk, &k_here) == SAM3_OK,
            "concept on the image: %s", sam3_ctx_last_error(c1));
    lh[0] = k_here, lt[0] = k_there;
    prompts(pr, lh, lt);
    for (i = 0; i < NP; i++) {
        t_check(sam3_segment(c1, &pr[i], &so, &one) >= 0, "prompt %d alone: %s", i, sam3_ctx_last_error(c1));
        keep(&ref[i], &one);
    }
    /* a fresh context: the batched call fills the encoder and decoder caches itself */
    t_check(sam3_set_image(c2, img, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "set_image: %s", sam3_ctx_last_error(c2));
    for (j = 0; j < 2; j++) {
        t_check(sam3_segment_many(c2, pr, NP, &so, many) == SAM3_OK, "sam3_segment_many (call %d): %s", j + 1, sam3_ctx_last_error(c2));
        for (i = 0, ok = 0; i < NP; i++) {
            t_check(same_as(&ref[i], &many[i]), "threads %d, call %d: prompt %d differs from it alone (%d vs %d instances)", threads, j + 1, i,
                    many[i].n_instances, ref[i].r.n_instances);
            ok += many[i].n_instances;
        }
        /* prompt 6 repeats prompt 0, which ran first on c1: the decoder's kept first layer changes nothing */
        t_check(same_as(&ref[0], &many[6]), "a repeated prompt differs from its first run");
        t = sam3_ctx_timings(c2);
        t_check(t.detr_encoder > 0 && t.detr_decoder > 0 && t.mask_decoder > 0, "timings not summed over the prompts");
        printf("  threads %d, call %d: %d prompts, %d instances, each bit-identical to sam3_segment alone\n", threads, j + 1, NP, ok);
    }
    for (i = 0; i < NP; i++) keep(&got[i], &many[i]);
    /* one prompt: the same as sam3_segment */
    t_check(sam3_segment_many(c2, &pr[4], 1, &so, many) == SAM3_OK && same_as(&ref[4], &many[0]), "one prompt differs from sam3_segment");
    for (i = 0; i < NP; i++) unkeep(&ref[i]);
    sam3_concept_free(k_here);
    sam3_concept_free(k_there);
    sam3_ctx_free(c1);
    sam3_ctx_free(c2);
}

/* Part 2: every bad call fails cleanly, naming what is wrong, and zeroes out. */
static void test_errors(sam3_model *m, const uint8_t *img) {
    sam3_segment_prompt pr[3];
    sam3_segment_result out[3];
    sam3_box nan_box = {0, 0, 10, 10};
    sam3_ctx *c = NULL;
    volatile float zero = 0.0f;
    sam3_result r;
    int i, zeroed;
    if (sam3_ctx_new(m, NULL, &c) != SAM3_OK) {
        t_check(0, "sam3_ctx_new");
        return;
    }
    memset(pr, 0, sizeof(pr));
    pr[0].text = "a cat", pr[1].text = "a dog", pr[2].text = "a cow";
    t_check(sam3_segment_many(c, pr, 3, NULL, out) == SAM3_ERR_NO_IMAGE, "no image: not SAM3_ERR_NO_IMAGE");
    t_check(sam3_set_image(c, img, W, H, W * 3, SAM3_RGB8) == SAM3_OK, "set_image");
    t_check(sam3_segment_many(NULL, pr, 3, NULL, out) == SAM3_ERR_INVALID_ARG, "NULL context accepted");
    t_check(sam3_segment_many(c, NULL, 3, NULL, out) == SAM3_ERR_INVALID_ARG, "NULL prompts accepted");
    t_check(sam3_segment_many(c, pr, 3, NULL, NULL) == SAM3_ERR_INVALID_ARG, "NULL out accepted");
    t_check(sam3_segment_many(c, pr, 0, NULL, out) == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "0 prompts"), "n = 0: %s",
            sam3_ctx_last_error(c));
    t_check(sam3_segment_many(c, pr, -1, NULL, out) == SAM3_ERR_INVALID_ARG, "n = -1 accepted");
    t_check(sam3_segment_many(c, pr, SAM3_MAX_SEGMENT_PROMPTS + 1, NULL, out) == SAM3_ERR_INVALID_ARG &&
                strstr(sam3_ctx_last_error(c), "SAM3_MAX_SEGMENT_PROMPTS"),
            "too many prompts: %s", sam3_ctx_last_error(c));
    nan_box.x1 = zero / zero;
    pr[1].boxes = &nan_box, pr[1].n_boxes = 1;
    memset(out, 0x5a, sizeof(out));
    r = sam3_segment_many(c, pr, 3, NULL, out);
    for (i = 0, zeroed = 1; i < 3; i++) zeroed &= out[i].n_instances == 0 && out[i].instances == NULL;
    t_check(r == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "prompt 1") && zeroed, "a NaN box in prompt 1: %d, '%s', out %s", (int)r,
            sam3_ctx_last_error(c), zeroed ? "zeroed" : "not zeroed");
    t_check(sam3_ctx_timings(c).detr_encoder == 0, "a refused call ran the DETR encoder");
    pr[1].boxes = NULL, pr[1].n_boxes = 0, pr[1].text = "";
    r = sam3_segment_many(c, pr, 3, NULL, out);
    t_check(r == SAM3_ERR_INVALID_ARG && strstr(sam3_ctx_last_error(c), "prompt 1"), "an empty prompt 1: %d, '%s'", (int)r, sam3_ctx_last_error(c));
    pr[1].text = "a dog";
    t_check(sam3_segment_many(c, pr, 3, NULL, out) == SAM3_OK, "after the errors: %s", sam3_ctx_last_error(c));
    printf("  errors: no image, NULL context / prompts / out, n 0, -1, %d, a bad prompt 1 (named, out zeroed)\n", SAM3_MAX_SEGMENT_PROMPTS + 1);
    sam3_ctx_free(c);
}

int main(int argc, char **argv) {
    static uint8_t img[W * H * 3], other[W * H * 3];
    int a, i;
    picture(img, 0);
    picture(other, 1);
    for (a = 1; a + 1 < argc; a += 2) {
        sam3_model *m = NULL;
        kept got1[NP], got2[NP];
        if (strcmp(argv[a], "--model")) continue;
        if (sam3_load(argv[a + 1], NULL, &m) != SAM3_OK) {
            fprintf(stderr, "cannot load %s\n", argv[a + 1]);
            return 1;
        }
        printf("%s\n", argv[a + 1]);
        test_equal(m, 1, img, other, got1);
        test_equal(m, 2, img, other, got2);
        printf("  threads 1 and 2: the same bytes\n");
        for (i = 0; i < NP; i++) {
            t_check(same_as(&got1[i], &got2[i].r), "prompt %d: 1 and 2 threads differ", i);
            unkeep(&got1[i]);
            unkeep(&got2[i]);
        }
        test_errors(m, img);
        sam3_free(m);
    }
    return t_done("test_vocab");
}
