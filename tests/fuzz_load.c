/* Fuzz target for the .sam3 loader: sam3_load_from_memory over arbitrary bytes, then, for a file
   that loads, every introspection call, the tokenizer built from the file's tables, and (when the
   file's model is small enough to run in milliseconds) a whole inference: ctx, image, text, boxes.

   Two builds of this one file:
     make fuzz            clang -fsanitize=fuzzer,address,undefined: libFuzzer drives
                          LLVMFuzzerTestOneInput (see the Makefile for the corpus and seeds)
     make test / asan     cc -DSAM3_FUZZ_REPLAY: a main() that replays files and directories
                          (the seeds from tests/make_fuzz_seeds.py, the committed corpus and every
                          crash reproducer in tests/fuzz/) once each; it passes when none crashes,
                          and checks each load's result is a sam3_result and the model pointer
                          agrees with it.

   usage (replay): fuzz_replay [-v] FILE_OR_DIR...   last line "N passed, N failed" */
#define SAM3_IMPLEMENTATION
#include "../sam3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t g_log_bytes; /* the log messages are read, so ASan checks they are well formed */
static int g_verbose;      /* replay -v: print what each inference call returned */
static void fz_note(const char *what, sam3_result rc) {
    if (g_verbose) printf("       %s -> %s\n", what, sam3_result_string(rc));
}
static void fz_log(void *user, int level, const char *msg) {
    (void)user;
    (void)level;
    g_log_bytes += strlen(msg);
}

static int fz_cfg(const sam3_model *m, const char *key, int64_t hi) {
    int64_t v = 0;
    return sam3_model_config_int(m, key, &v) && v >= 0 && v <= hi;
}

/* An optional key (the interactive head's): absent, or within bounds. */
static int fz_opt(const sam3_model *m, const char *key, int64_t hi) {
    int64_t v = 0;
    return !sam3_model_config_int(m, key, &v) || (v >= 0 && v <= hi);
}

/* Inference only where it is cheap: every size that sets the cost is bounded (the loader accepts
   much larger values, which cost time, not safety). */
static int fz_small(const sam3_model *m) {
    const char *arch = sam3_model_config_string(m, "arch");
    if (arch && !strcmp(arch, "sam1"))
        return fz_cfg(m, "sam1.vision.image_size", 128) && fz_cfg(m, "sam1.vision.hidden_size", 64) &&
               fz_cfg(m, "sam1.vision.output_channels", 64) && fz_cfg(m, "sam1.vision.num_hidden_layers", 4) &&
               fz_cfg(m, "sam1.vision.window_size", 16) && fz_cfg(m, "sam1.vision.mlp_dim", 256) &&
               fz_cfg(m, "sam1.prompt_encoder.hidden_size", 64) && fz_cfg(m, "sam1.prompt_encoder.image_size", 128) &&
               fz_cfg(m, "sam1.prompt_encoder.mask_input_channels", 64) && fz_cfg(m, "sam1.mask_decoder.hidden_size", 64) &&
               fz_cfg(m, "sam1.mask_decoder.mlp_dim", 256) && fz_cfg(m, "sam1.mask_decoder.num_hidden_layers", 4) &&
               fz_cfg(m, "sam1.mask_decoder.iou_head_depth", 4) && fz_cfg(m, "sam1.mask_decoder.iou_head_hidden_dim", 256) &&
               fz_cfg(m, "sam1.mask_decoder.num_multimask_outputs", 8) && fz_cfg(m, "processor.longest_edge", 128) &&
               fz_cfg(m, "processor.pad_size", 128);
    return fz_cfg(m, "vision.image_size", 112) && fz_cfg(m, "vision.hidden_size", 64) &&
           fz_cfg(m, "vision.intermediate_size", 256) && fz_cfg(m, "vision.num_hidden_layers", 4) &&
           fz_cfg(m, "vision.window_size", 16) && fz_cfg(m, "neck.fpn_hidden_size", 64) &&
           fz_cfg(m, "text.hidden_size", 64) && fz_cfg(m, "text.intermediate_size", 256) &&
           fz_cfg(m, "text.num_hidden_layers", 4) && fz_cfg(m, "text.max_position_embeddings", 64) &&
           fz_cfg(m, "tokenizer.max_length", 64) && fz_cfg(m, "geometry.num_layers", 4) &&
           fz_cfg(m, "geometry.intermediate_size", 256) && fz_cfg(m, "geometry.roi_size", 8) &&
           fz_cfg(m, "detr_encoder.num_layers", 4) && fz_cfg(m, "detr_encoder.intermediate_size", 256) &&
           fz_cfg(m, "detr_decoder.num_layers", 4) && fz_cfg(m, "detr_decoder.intermediate_size", 256) &&
           fz_cfg(m, "detr_decoder.num_queries", 32) && fz_cfg(m, "mask_decoder.num_upsampling_stages", 4) &&
           fz_opt(m, "tracker.prompt_encoder.image_size", 112) && fz_opt(m, "tracker.neck.fpn_hidden_size", 64) &&
           fz_opt(m, "tracker.prompt_encoder.hidden_size", 64) && fz_opt(m, "tracker.prompt_encoder.mask_input_channels", 64) &&
           fz_opt(m, "tracker.mask_decoder.hidden_size", 64) && fz_opt(m, "tracker.mask_decoder.mlp_dim", 256) &&
           fz_opt(m, "tracker.mask_decoder.num_hidden_layers", 4) && fz_opt(m, "tracker.mask_decoder.iou_head_depth", 4) &&
           fz_opt(m, "tracker.mask_decoder.iou_head_hidden_dim", 256) && fz_opt(m, "tracker.mask_decoder.num_multimask_outputs", 8);
}

static void fz_infer(const sam3_model *m) {
    sam3_ctx_options co = sam3_ctx_options_default();
    sam3_segment_options so = sam3_segment_options_default();
    sam3_ctx *ctx = NULL;
    sam3_segment_result seg;
    sam3_segment_prompt pr;
    sam3_box boxes[3] = {{1, 1, 9, 6}, {4, 2, 4, 2}, {-50, -50, 1e30f, 60}};
    int box_labels[3] = {1, 0, 1};
    uint8_t img[13 * 7 * 3];
    sam3_result rc;
    int i;
    for (i = 0; i < (int)sizeof(img); i++) img[i] = (uint8_t)(i * 37);
    co.n_threads = 1;
    if (sam3_ctx_new(m, &co, &ctx) != SAM3_OK) return;
    if ((rc = sam3_set_image(ctx, img, 13, 7, 13 * 3, SAM3_RGB8)) == SAM3_OK) {
        memset(&pr, 0, sizeof(pr));
        pr.text = "ab c";
        so.low_res = 1;
        so.semantic = 1;
        so.score_threshold = -1; /* every query, so post-processing runs on all of them */
        fz_note("segment text", sam3_segment(ctx, &pr, &so, &seg));
        pr.text = NULL;
        pr.boxes = boxes;
        pr.box_labels = box_labels;
        pr.n_boxes = 3;
        fz_note("segment boxes", sam3_segment(ctx, &pr, &so, &seg));
        pr.text = "a";
        pr.n_boxes = 1;
        fz_note("segment text + box", sam3_segment(ctx, &pr, NULL, &seg));
        {
            sam3_point pts[2] = {{3, 2, 1}, {12, 6, 0}};
            sam3_box box = {1, 1, 9, 6};
            sam3_points_prompt pp;
            sam3_points_result res;
            sam3_points_options po;
            memset(&pp, 0, sizeof(pp));
            memset(&po, 0, sizeof(po));
            pp.points = pts;
            pp.n_points = 2;
            rc = sam3_segment_points(ctx, &pp, &po, &res);
            fz_note("segment_points", rc);
            if (rc == SAM3_OK && res.low_res_logits) {
                /* refine with the previous mask, as an interactive client does */
                size_t lp = (size_t)res.low_res_width * res.low_res_height;
                float *mask = (float *)malloc(lp * sizeof(float) + 1);
                if (mask) {
                    memcpy(mask, res.low_res_logits, lp * sizeof(float));
                    pp.mask_logits = mask;
                    pp.mask_width = res.low_res_width;
                    pp.mask_height = res.low_res_height;
                    pp.box = &box;
                    po.single_mask = 1;
                    fz_note("segment_points refine", sam3_segment_points(ctx, &pp, &po, &res));
                    free(mask);
                }
            }
        }
    } else {
        fz_note("set_image", rc);
    }
    (void)sam3_ctx_last_error(ctx);
    sam3_ctx_free(ctx);
}

static void fz_inspect(const sam3_model *m) {
    static const char *texts[] = {"", "a", "ab ab c abc", "<|startoftext|>ab<|endoftext|>", "A\xcc\x81 \xff\xfe b\xe2\x80",
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b c ab ab ab ab ab ab ab ab ab ab ab ab ab"};
    char val[256];
    int32_t ids[80];
    int i, n, k;
    n = sam3_model_tensor_count(m);
    for (i = -1; i <= n; i++) {
        sam3_tensor_info ti;
        if (sam3_model_tensor_info(m, i, &ti)) g_log_bytes += (size_t)ti.name_len + strlen(ti.dtype) + (size_t)ti.nbytes % 7;
    }
    n = sam3_model_config_count(m);
    for (i = -1; i <= n; i++) {
        static const size_t caps[] = {0, 1, 5, 40, sizeof(val)};
        for (k = 0; k < 5; k++) {
            const char *key = sam3_model_config_entry(m, i, val, caps[k]);
            if (key) {
                int64_t iv;
                double fv;
                const char *s = sam3_model_config_string(m, key);
                g_log_bytes += strlen(key) + (caps[k] ? strlen(val) : 0) + (s ? strlen(s) : 0);
                g_log_bytes += (size_t)sam3_model_config_int(m, key, &iv) + (size_t)sam3_model_config_float(m, key, &fv);
            }
        }
    }
    g_log_bytes += (size_t)sam3_model_image_size(m) + sam3_model_file_size(m);
    for (i = 0; i < (int)(sizeof(texts) / sizeof(texts[0])); i++) {
        (void)sam3_tokenize(m, texts[i], ids, 80, &n);
        (void)sam3_tokenize(m, texts[i], ids, 2, &n);
    }
    if (fz_small(m)) fz_infer(m);
}

/* One input; returns 0 when the result is consistent (a crash never returns). */
static int fz_one(const uint8_t *data, size_t size) {
    sam3_load_options lo = sam3_load_options_default();
    sam3_model *m = (sam3_model *)(uintptr_t)1;
    sam3_result rc;
    unsigned char *raw, *p;
    int bad = 0;
    char err[512];
    /* the loader needs a 4-byte aligned blob (floats are used in place): 64, like mmap */
    raw = (unsigned char *)malloc(size + 64);
    if (!raw) return 0;
    p = raw + (64 - (uintptr_t)raw % 64) % 64;
    if (size) memcpy(p, data, size);
    lo.log = fz_log;
    lo.error = err;
    lo.error_size = sizeof(err);
    /* the verify pass (checksums, finiteness) on inputs whose last byte is odd: real files end in
       zero padding, so the seeds reach inference and their mutants reach verify too */
    lo.verify = size > 0 && (data[size - 1] & 1);
    rc = sam3_load_from_memory(p, size, &lo, &m);
    if (rc == SAM3_OK) {
        if (!m || err[0]) bad = 1;
        else fz_inspect(m);
    } else if (m != NULL || rc >= 0 || !strcmp(sam3_result_string(rc), "unknown sam3_result") || !err[0]) {
        bad = 1; /* every failed load must say why */
    }
    sam3_free(rc == SAM3_OK ? m : NULL);
    free(raw);
    return bad;
}

#include "fuzz_replay.h"
#ifdef SAM3_FUZZ_REPLAY
static void fz_verbose(const char *path, const unsigned char *buf, size_t n) {
    (void)buf;
    printf("%s (%lu bytes)\n", path, (unsigned long)n);
}
int main(int argc, char **argv) {
    int i;
    for (i = 1; i < argc; i++) g_verbose |= !strcmp(argv[i], "-v"); /* fz_note's lines too */
    return fzr_main(argc, argv, "fuzz_replay");
}
#endif
