/* sam3.h - v1.0.0 - Meta SAM 3 (Segment Anything Model 3) segmentation in C - MIT licence (see end of file)

   Do this:
      #define SAM3_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the implementation.
   Link with OpenBLAS and libm:   cc app.c -O2 -fopenmp -lopenblas -lm

QUICK START
   A complete program (examples/embed_min.c holds the same lines, and `make test` checks that, so
   this cannot rot). Build: cc app.c -O2 -fopenmp -I/usr/include/stb -lopenblas -lm
   Run:   ./app weights/sam3.sam3 photo.jpg "yellow school bus"

      #define SAM3_IMPLEMENTATION
      #include "sam3.h"
      #define STB_IMAGE_IMPLEMENTATION
      #include "stb_image.h"  // any way of getting RGB, RGBA or gray pixels will do
      #include <stdio.h>

      int main(int argc, char **argv) {
          sam3_model *model;  sam3_ctx *ctx;  sam3_segment_result seg;
          sam3_segment_prompt prompt = {0};
          int width, height, channels, i;
          unsigned char *rgb;
          if (argc != 4 || !(rgb = stbi_load(argv[2], &width, &height, &channels, 3))) return 2;
          if (sam3_load(argv[1], NULL, &model) != SAM3_OK) return 1;
          if (sam3_ctx_new(model, NULL, &ctx) != SAM3_OK) return 1;
          if (sam3_set_image(ctx, rgb, width, height, width * 3, SAM3_RGB8) != SAM3_OK) {
              fprintf(stderr, "%s\n", sam3_ctx_last_error(ctx)); return 1;   // the slow part
          }
          prompt.text = argv[3];                                   // e.g. "yellow school bus"
          if (sam3_segment(ctx, &prompt, NULL, &seg) < 0) {
              fprintf(stderr, "%s\n", sam3_ctx_last_error(ctx)); return 1;
          }
          for (i = 0; i < seg.n_instances; i++) {   // mask: seg.width*seg.height bytes, 1 = object
              const sam3_instance *in = &seg.instances[i];
              printf("%.2f  box %.0f,%.0f,%.0f,%.0f  %lld pixels, image centre %s\n", in->score,
                     in->box.x0, in->box.y0, in->box.x1, in->box.y1, (long long)in->area,
                     in->mask[(height / 2) * width + width / 2] ? "inside" : "outside");
          }
          sam3_ctx_free(ctx);
          sam3_free(model);
          stbi_image_free(rgb);
          return 0;
      }

DOCUMENTATION

1. Concepts
   * Images are 8-bit, top-left origin, rows `stride` bytes apart: RGB (3 bytes a pixel), RGBA (4,
     alpha ignored) or gray (1). Any size from 1x1 to SAM3_MAX_IMAGE_DIM on each side.
     `sam3_set_image` squashes the image to the model's square input (1008x1008 for SAM 3, or
     sam3_load_options.image_size; aspect ratio NOT kept, exactly as Meta's and Hugging Face's processors do) with the reference's
     two-pass fixed-point antialiased bilinear resize (bit-identical to torchvision's uint8 kernel),
     then normalises with the file's mean/std. The result is cached in the context: every prompt
     on that image reuses the image features.
   * Names: each way to segment has a prompt, an options and a result struct named alike:
     sam3_segment_{prompt,options,result} (sam3_segment), sam3_points_{prompt,options,result}
     (sam3_segment_points), sam3_tracker_{prompt,options,result} (sam3_tracker_*), and
     sam3_everything_{options,result} (sam3_segment_everything: no prompt). Every options
     struct has a *_default() and reads all zero as the defaults. An array of things comes as
     n_<things> and <things> (n_boxes, n_points, n_instances, n_masks, n_objects).
   * Coordinates (boxes, points) are floats in pixels of the image you passed in, x right, y down.
     Every box, in prompts and in results, is one type, sam3_box: x0, y0, x1, y1.
   * Scores are probabilities in [0,1]: score = sigmoid(query logit) * sigmoid(presence logit).
   * Masks are width*height bytes of 0/1 at the size of the image you passed in;
     sam3_mask_to_rle writes one as COCO compressed RLE into your buffer (no allocation).
   * Mask thresholds (mask_threshold of sam3_segment_options, sam3_points_options,
     sam3_everything_options and sam3_tracker_options) are probabilities in [0,1], one unit for all:
     a pixel is set where the mask's probability is above it. A probability rather than a logit
     because it is the unit of every score the API returns and of score_threshold, so one number
     means the same in every call. 0 means the default, 0.5; a negative value sets every pixel, 1 or
     more none; NaN and infinities are SAM3_ERR_INVALID_ARG. sam3_segment thresholds the resized
     sigmoid of the mask logits, as the reference's Sam3 post-processing does; sam3_segment_points,
     everything and the tracker threshold the resized logits at ln(p / (1 - p)), as the reference's
     SAM 2-style post-processing does, which at the default is exactly its logits > 0. Logits stay
     logits where the API returns them (low_res_logits, object_score).
   * Video (sam3_tracker_*): a tracker on a context follows objects, each named by the caller's id,
     through frames pushed one at a time (any sizes); an object is prompted (clicks, a box, or a
     mask) on the frame about to be pushed and tracked on every later one. Per object and frame:
     an object-score logit (> 0: visible), the mask at the frame's size (above mask_threshold), its
     box and area, and the decoder's logits. Files converted without the memory modules cannot track.

2. Memory and ownership
   * `sam3_load` maps the file read-only (or reads it, SAM3_NO_MMAP / no_mmap) and uses its f32 and
     bf16 weights in place (tools/convert.py --dtype bf16: Linear and Conv weights in bf16, half the
     memory, their products in bf16 with f32 sums); `sam3_load_from_memory` borrows your buffer,
     which must outlive the model and stay unchanged.
   * A context owns all scratch and cached image state. Results returned by a call stay valid
     until the next call on the same context that returns results or sets an image, or until
     `sam3_ctx_free`; copy what you keep.
   * Scratch memory is one stack arena that grows to the peak of the first image and prompt (with
     1/8 headroom, not resident until touched) and is reused after that. `sam3_ctx_memory_used`
     reports everything a context holds: image state, arena, result buffers, text-feature cache.
   * A tracker holds each object's memory bank (64-channel memories of its conditioning frames and
     last frames, in bf16; pointers), bounded by the model's config, so its memory stops growing
     once the bank is full; its results live until its next push_frame. sam3_tracker_memory_used.
   * `sam3_load` reads no weights (pages come in as the model uses them). With
     `sam3_load_options.verify = 1` it reads every tensor once, at memory speed (~10 GB/s a core,
     more with AVX-512): the checksum the converter recorded for it, and that every float is finite.

3. Threading
   The model is read-only after sam3_load returns and can be shared by any number of threads. A
   context may only be used by one thread at a time; give each thread its own context. A call on a
   context while another call runs on it (another thread, or a callback of the running call)
   returns SAM3_ERR_BUSY at once and changes nothing in the context; the getters
   (sam3_ctx_last_error, _timings, _memory_used) read it unguarded, so call them between calls. sam3 has no
   mutable global state. Our own loops use OpenMP (when compiled with -fopenmp), capped by
   sam3_ctx_options.n_threads. Matrix products go to BLAS, whose threading belongs to you: sam3
   never changes it unless sam3_ctx_options.blas_threads > 0, which calls
   openblas_set_num_threads() and is process-global. Running several contexts concurrently needs a
   BLAS that is safe for concurrent calls (Debian's OpenBLAS pthread build is, since 0.3.7, but its
   threads then compete for cores: set blas_threads = 1 and n_threads per context instead). With
   that pthread build, set blas_threads = 1 for a single context too (the CLI and the Python
   binding do): left at 0, its own pool wakes for every small product beside sam3's OpenMP
   threads, and the two pools fight over the cores.
   OpenBLAS's OpenMP build (libopenblas0-openmp) sizes each call by the calling thread's OpenMP
   setting, which openblas_set_num_threads() changes only on the thread that calls it; so with
   that build sam3 sets the calling thread's omp_set_num_threads() to the context's count
   (blas_threads, else n_threads) around each BLAS call made outside its own parallel regions and
   restores it after. A context thus uses the threads it was given, and computes the same bits, on
   whatever thread runs it, and for any n_threads where the BLAS runs single-threaded inside sam3's
   loops (OpenBLAS's OpenMP build, blas_threads = 1, SAM3_NO_BLAS): products are cut by their
   shape, never by the thread count. A BLAS running threads of its own may differ in the last bits.
   On a CPU shared with other busy programs, run with OMP_WAIT_POLICY=passive (read by the OpenMP
   runtime when it loads, so set it before your program starts; the sam3 CLI does): a thread
   spinning at a barrier takes the share of a core that the thread it waits for needs, and small
   steps (a click, a prompt's decoder) then wait much longer beside one busy process.

4. Errors
   Every call returns a sam3_result: SAM3_OK (0), a positive note (success with a remark, e.g.
   SAM3_TRUNCATED), or a negative error. sam3_result_string() names it; sam3_ctx_last_error(ctx)
   gives the detail of the last failed call on that context (e.g. "tensor 'x.weight': shape
   [256,1024], expected [256,512]"). Errors during loading, where no context exists yet, are written
   to sam3_load_options.error (error_size bytes, when set) and go to its log callback. Library code
   never prints, exits or aborts on bad input. SAM3_ERR_BUSY: see 3. A failed verify (see 2) is
   SAM3_ERR_CORRUPT_FILE naming the tensor.

5. Configuration macros (define before including the implementation)
   SAM3_STATIC             make every function static (private copy in one translation unit)
   SAM3DEF                 decoration of public functions (e.g. for dllexport)
   SAM3_SHARED             sam3 as a shared library (examples/sam3_lib.c, `make lib`): the public functions
                           are exported from a -fvisibility=hidden build (dllexport/dllimport on Windows)
   SAM3_MALLOC / SAM3_FREE default allocator (define both or neither); aligned internally
   SAM3_ASSERT(x)          internal invariant checks (default: assert)
   SAM3_NO_STDIO           no path-based loading (sam3_load_from_memory only)
   SAM3_NO_MMAP            sam3_load reads the file into memory instead of mapping it
   SAM3_SGEMM(...)         replace the GEMM: row-major cblas_sgemm signature (MKL, BLIS, Accelerate);
                           the attention kernels and products of <= 32 rows by a weight matrix
                           stay sam3.h's own (AVX2 / AVX-512 / NEON builds); no cblas.h needed
                           (-DSAM3_SGEMM=cblas_sgemm; a cblas.h of your own goes before sam3.h)
   SAM3_NO_BLAS            no BLAS: sam3's own blocked, vectorised SGEMM (~90 % of OpenBLAS on
                           Zen 4 with GCC/clang; a plain-C tile with other compilers)
   SAM3_REFERENCE_KERNELS  only the plain-C reference kernels (GEMM, attention, softmax, GELU, layer
                           norm, direct conv, resizes): no intrinsics, no vector types, no BLAS (slow;
                           for testing, odd compilers and checking a port); SAM3_ISA=reference is
                           the same path in any build
   SAM3_NO_DISPATCH        one kernel path, the one the compiler's flags name (-march), called
                           directly, instead of every path with the choice at run time (see
                           "kernel paths" in the implementation); a context then offers that path alone
   SAM3_HEADER_NAME        this file's name as #include finds it from its own folder (default
                           "sam3.h"): the implementation includes itself once per kernel path
   SAM3_MAX_IMAGE_DIM      largest accepted image side (default 16384)
   SAM3_BF16_KERNEL        the fastest bf16 product kernel used where the CPU has it: 2 AMX
                           (default), 1 AVX512-BF16 (aarch64: BFDOT), 0 the portable reference
                           (bf16 rounding, f32 products)
   SAM3_BF16_ATTENTION_KERNEL  the ViT's and the DETR encoder's self-attention run in bf16 (where
                           their weights' products do) from this bf16 kernel on: 2 AMX (default;
                           with AVX512-BF16 or BFDOT alone their P.V runs in bf16, the scores
                           f32), 1 AVX512-BF16 or BFDOT too (no faster with AVX512-BF16), 3 never
   SAM3_BF16_CONV_KERNEL   a bf16 file's 3x3 convs (necks, pixel decoder) run directly in bf16
                           from this bf16 kernel on: 1 AVX512-BF16, BFDOT or AMX (default), 2 AMX
                           only, 3 never (Winograd in f32, as for f32 weights)
   SAM3_MAX_POINTS         clicks per prompt (default 64)
   SAM3_MAX_BOXES          box exemplars per sam3_segment prompt (default 64)
   SAM3_MAX_CONCEPTS       saved concepts (sam3_concept) per sam3_segment prompt (default 64)
   SAM3_MAX_SEGMENT_PROMPTS prompts per sam3_segment_many call (default 256)
   SAM3_MAX_PROMPT_BYTES   longest text prompt in bytes (default 4 MB; longer is SAM3_ERR_INVALID_ARG)
   SAM3_MAX_TRACKED_OBJECTS objects one tracker follows at once (default 64)
   SAM3_MAX_CONCEPT_PROMPTS text prompts one concept tracker follows (default 16)
   SAM3_EVERYTHING_MAX_CROP_LAYERS sam3_segment_everything's crop layers (default 6: 5461 crops)
   SAM3_NO_FAST_ATTENTION  the reference attention kernel instead of sam3's fused one (GCC/clang)
   SAM3_PROFILE            the context counts the image encoder's time by stage, and by thread in its
                           bf16 products and attention (tuning: tests/prof_encoder.c prints them;
                           without it nothing of that is compiled in)

6. Weight file format (.sam3)
   One little-endian file: a 128-byte header (magic "SAM3", format version, sizes and absolute
   offsets), a key/value config table (64-byte entries, every hyper-parameter copied from the
   Hugging Face config.json), a tensor table (64-byte entries: name in the string table, dtype,
   PyTorch-order shape, 64-byte aligned absolute offset and byte size), the string table, then
   the tensor data. Tensor names are the Hugging Face state-dict names verbatim. The CLIP
   tokenizer (vocabulary and merges) travels inside as ordinary tensors. tools/convert.py writes
   it from a Hugging Face checkpoint; tools/sam3file.py documents every byte. Config key
   file.checksums.mx64 (i64 per tensor, table order) holds each tensor's checksum: mx64 of its
   bytes as little-endian u64 words w[i] (the last zero-extended): s = sum of mix((w[i] ^ i*K1) *
   K2) mod 2^64, mix(x) = x ^ (x >> 32), checksum mix((s ^ nbytes) * K2), K1 = 0x9E3779B97F4A7C15,
   K2 = 0xD6E8FEB86659FD93. Header bytes 72..79 hold the same checksum of every byte before the
   data (header, tables, strings; those 8 bytes read as zero) with bits 0 and 63 set; 0: none.
   Against accidents, not attackers. Files without them load (verify checks what it can and says so). The SAM 3 weights
   are Meta's, under the SAM License, and converted files carry that licence.

7. Limits
   * Batch size 1; one image per context at a time. Several prompts on it: sam3_segment_many, at
     most SAM3_MAX_SEGMENT_PROMPTS a call.
   * Text prompts are at most text.max_position_embeddings ids (32 for SAM 3) including BOS and
     EOS: longer prompts are truncated (EOS kept) and the call returns SAM3_TRUNCATED.
   * At most SAM3_MAX_BOXES boxes per prompt, SAM3_MAX_POINTS clicks per click prompt.
   * The model's input is square: the file's side (1008 for SAM 3) or sam3_load_options.image_size,
     a multiple of the patch from two patches to 65536 (SAM 1: its own only). A token grid that is
     no multiple of the window (24 tokens) pads the windowed layers' windows, as the reference
     does, so 784 (grid 56 -> 72) costs nearly what 1008 does; 672 and 336 pad nothing.
   * A tracker follows at most SAM3_MAX_TRACKED_OBJECTS objects; each correction adds one object
     pointer (D floats) for the rest of the stream (transformers 5.17 reads every past conditioning
     frame's pointer).

8. Versions and stability
   SAM3_VERSION_MAJOR.MINOR.PATCH is a semantic version; SAM3_VERSION is the same as one number
   (MAJOR * 10000 + MINOR * 100 + PATCH) and sam3_version() / sam3_version_string() give the
   compiled library's, so a program or binding linked to a shared libsam3 can check that the
   library's major version is the one it was written for. The file format has its own number,
   SAM3_FILE_FORMAT_VERSION. What 1.x promises, from 1.0.0 until 2.0.0:
   * Source compatibility: code that compiles against 1.y compiles and behaves the same against any
     later 1.x. Every public function keeps its name, parameters and return type; every struct
     field its name, type and meaning, units included (section 1); all-zero options (and
     *_default()) keep meaning the defaults, and the defaults keep their effect.
   * Result codes keep their names and values. New ones may come: negative ones are errors,
     positive ones successes with a remark, so test r < 0 for failure and treat an unknown
     negative code as an error.
   * Files: every .sam3 file a 1.x tools/convert.py writes loads in every later 1.x (format
     version 1; new hyper-parameters and tensors come as new keys and names, not as a new format).
   * May change in a minor version (1.y -> 1.y+1): new functions, result codes, configuration
     macros; new fields at the END of public structs (zero keeps the old behaviour, so zeroed or
     *_default() options stay right). Struct sizes may therefore grow: layouts are fixed only
     within one MAJOR.MINOR, and the shared library's soname (libsam3.so.MAJOR.MINOR) says so.
     sam3.h compiled into your program, the normal use, never sees that difference.
   * May change in a patch version: only what a bug fix needs (results that were wrong), and
     speed; results can move in the last bits when kernels change (parity with the reference
     stays within a few 1e-6).
   * Not part of the API: anything named sam3__ or SAM3__, the tap names and tensors of
     sam3_tap_fn (debugging aid, they follow the reference's modules), timings, memory figures,
     error message texts (sam3_ctx_last_error is for people), and the CLI's and the Python
     binding's own interfaces (versioned with it, documented in README.md).

RECENT REVISIONS
   1.6.4  The mask product (kept queries x pixel features) runs in bf16 where the weights' products
          do, as the other products between activations. Few-row bf16 products (the text
          encoder's) fetch their weight rows ahead; attentions of up to 16 keys run directly.
   1.6.3  On AMX a bf16 file's 3x3 conv loads its B tiles straight from the input, laid out with
          channel pairs interleaved (no im2col); the C tiles start from the bias. The Python
          binding's Context defaults to blas_threads=1, as the CLI.
   1.6.2  The bf16 3x3 conv's im2col panels: gathered with AVX-512 on x86, and every row the
          packing reads fetched 48 rows ahead (a panel reads up to 768 rows of the input at once).
          A prompt's few-keys attention: one product for all heads, its softmax over the threads;
          attentions of a few tokens on the calling thread, CLIP's quick GELU over the threads.
   1.6.1  The bf16 attention tiles fetch a task's query rows ahead of their split (a head's rows
          are a token's q, k and v apart, each in a page the hardware prefetchers do not reach).
   1.6.0  A bf16 file's 3x3 convs (necks, pixel decoder) run directly on the bf16 kernels (the
          im2col packed panel by panel) instead of Winograd in f32: SAM3_BF16_CONV_KERNEL.
   1.5.2  AMX: B prefetched into L1 a step ahead and the next panel into L2; a product's tasks
          take at most 2 MB of B panels, group by group, and A blocks of 64 rows.
   1.5.1  C++20: no parameter named concept; bf16 products: weight panels transposed in
          registers, a k block's packing inside its tasks (one join), AMX's P.V from tiles.
   1.5.0  sam3_everything_options: crop layers (crop_layers, crop_overlap_ratio,
          crop_points_downscale, crop_nms_thresh; the caller's pixels, stride and format, which
          each crop is encoded from; SAM3_EVERYTHING_MAX_CROP_LAYERS) and min_region_area (SAM's
          small-region removal); sam3_everything_mask.crop, sam3_everything_result.n_crops;
          everything's clicks run one a thread on several threads.
   1.4.0  sam3_segment_many (several prompts on the cached image, each as alone;
          SAM3_MAX_SEGMENT_PROMPTS); sam3_ctx_flops (each stage's counted FLOPs, for a roofline;
          sam3_bench_gemm's SAM3_GEMM_CTX_BF16); SAM3_ISA_NEONBF16 (BFDOT on aarch64 with
          HWCAP2_BF16); the tracker's memory attention on the bf16 tiles; SAM3_PROFILE builds.
   1.3.0  sam3_load_options.image_size: SAM 3 at a smaller (or larger) square input, any multiple
          of the patch, as the reference with that config.image_size; concepts (sam3_concept_new,
          _save, _load, _n_tokens, _free; sam3_segment_prompt.concepts, SAM3_MAX_CONCEPTS): a
          prompt made once and reused on other images; sam3_segment_everything (SAM's automatic
          mask generator; sam3_timings.everything); sam3_mask_to_rle (COCO compressed RLE).
   1.2.0  kernels chosen at run time (sam3_isa, sam3_ctx_options.isa, $SAM3_ISA, sam3_isa_name,
          sam3_isa_mask, sam3_isa_default, sam3_ctx_isa; SAM3_NO_DISPATCH, SAM3_HEADER_NAME):
          one build runs AVX2, AVX-512, AVX512-BF16, AMX or NEON where the CPU has them; the
          same bits for any thread count (the f32 products' tiles from their shape alone); the
          concept tracker's pointer window grows with the stream, as the reference's; --verify
          covers every byte of a file; non-finite caller floats refused.
   1.1.0  sam3_tracker_push_encoded (a frame encoded once for a click tracker and a concept
          tracker); concept tracker box exemplars (sam3_concept_tracker_add_prompt, experimental);
          bf16: the ViT's and the DETR encoder's self-attention in bf16 with AMX
          (SAM3_BF16_ATTENTION_KERNEL), their P.V in bf16 with AVX512-BF16 alone; k blocks of
          up to 4800 (AMX: 1024), AMX's A blocks packed as whole tiles; the ViT's fc1 bias and
          GELU on its bf16 product's tiles, its output bf16 (the same values).
   1.0.0  API 1.0 (breaking): one box type, sam3_box (no label; exemplar labels in
          sam3_segment_prompt.box_labels, NULL = positive), in every prompt and result; every
          mask_threshold a probability (sam3_points_options' was a logit; sam3_tracker_options
          gains one); names sam3_{segment,points,tracker}_{prompt,options,result}, n_instances;
          SAM3_VERSION and sam3_version(); SAM3_RESULT_END_ removed; section 8 (stability).
   0.2.0  video: sam3_tracker_* (the SAM 3 tracker's memory, streaming); SAM3_ERR_BUSY; load
          errors without a log callback; per-tensor checksums and verify; sam3_time_ms,
          sam3_bench_gemm; SAM3_SHARED.
   0.1.0  first release: loader, converter, vision encoder.
*/

#ifndef SAM3_H_INCLUDED
#define SAM3_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define SAM3_VERSION_MAJOR 1
#define SAM3_VERSION_MINOR 6
#define SAM3_VERSION_PATCH 4
#define SAM3_VERSION_STRING "1.6.4"
#define SAM3_VERSION (SAM3_VERSION_MAJOR * 10000 + SAM3_VERSION_MINOR * 100 + SAM3_VERSION_PATCH)
#define SAM3_FILE_FORMAT_VERSION 1

#ifndef SAM3DEF
#ifdef SAM3_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define SAM3DEF static __attribute__((unused)) /* a private copy need not use every function */
#else
#define SAM3DEF static
#endif
#elif defined(SAM3_SHARED) && defined(_WIN32)
#ifdef SAM3_IMPLEMENTATION
#define SAM3DEF extern __declspec(dllexport)
#else
#define SAM3DEF extern __declspec(dllimport)
#endif
#elif defined(SAM3_SHARED) && (defined(__GNUC__) || defined(__clang__))
#define SAM3DEF extern __attribute__((visibility("default"))) /* exported from a -fvisibility=hidden build */
#else
#define SAM3DEF extern
#endif
#endif

#ifndef SAM3_MAX_BOXES
#define SAM3_MAX_BOXES 64
#endif
#ifndef SAM3_MAX_CONCEPTS
#define SAM3_MAX_CONCEPTS 64
#endif
#ifndef SAM3_MAX_SEGMENT_PROMPTS
#define SAM3_MAX_SEGMENT_PROMPTS 256
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================================================
   Types
   ============================================================================================= */

/* Result codes: negative = error, 0 = ok, positive = success with a remark. One X-macro list
   defines the enum and the strings, so sam3_result_string() cannot go stale. */
#define SAM3_RESULT_LIST(X)                                                                  \
    X(SAM3_OK, 0, "ok")                                                                      \
    X(SAM3_TRUNCATED, 1, "ok, but the text prompt was truncated to the model's context")     \
    X(SAM3_ERR_INVALID_ARG, -1, "invalid argument")                                          \
    X(SAM3_ERR_OUT_OF_MEMORY, -2, "out of memory")                                           \
    X(SAM3_ERR_IO, -3, "i/o error")                                                          \
    X(SAM3_ERR_BAD_MAGIC, -4, "not a .sam3 file")                                            \
    X(SAM3_ERR_BAD_VERSION, -5, "unsupported .sam3 format version")                          \
    X(SAM3_ERR_CORRUPT_FILE, -6, "corrupt or inconsistent .sam3 file")                       \
    X(SAM3_ERR_MISSING_TENSOR, -7, "a required tensor is missing")                           \
    X(SAM3_ERR_SHAPE_MISMATCH, -8, "a tensor has the wrong shape or dtype")                  \
    X(SAM3_ERR_UNSUPPORTED, -9, "not supported by this model or build")                      \
    X(SAM3_ERR_ABORTED, -10, "aborted by the abort callback")                                \
    X(SAM3_ERR_NO_IMAGE, -11, "no image set on this context")                                \
    X(SAM3_ERR_BUSY, -12, "the context is in use by a call on another thread")

typedef enum sam3_result {
#define SAM3__ENUM(name, value, text) name = value,
    SAM3_RESULT_LIST(SAM3__ENUM) /* the last one's comma: allowed since C99 and C++11 */
#undef SAM3__ENUM
} sam3_result;

/* The one box type of the API, in prompts and in results: x0, y0 (top left) and x1, y1 (bottom
   right) in pixels of the image given to sam3_set_image (of the frame, for a tracker), x right, y
   down. Prompt boxes are not clamped to the image (as the reference); what a result's box means
   exactly is written at its field. */
typedef struct sam3_box {
    float x0, y0, x1, y1;
} sam3_box;

typedef struct sam3_model sam3_model; /* weights: immutable after load, shareable across threads */
typedef struct sam3_ctx sam3_ctx;     /* per-thread scratch and cached image state */

/* Run-time allocator. All three zero: the compile-time SAM3_MALLOC/SAM3_FREE. Half filled:
   SAM3_ERR_INVALID_ARG. `align` is a power of two <= 64. */
typedef struct sam3_allocator {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} sam3_allocator;

enum { SAM3_LOG_ERROR = 0, SAM3_LOG_WARN = 1, SAM3_LOG_INFO = 2 };
typedef void (*sam3_log_fn)(void *user, int level, const char *message);

typedef struct sam3_load_options {
    sam3_allocator allocator;
    sam3_log_fn log; /* load errors and notes; NULL = silent */
    void *log_user;
    int no_mmap; /* 1: read the file into memory instead of mapping it */
    int verify;  /* 1: read every weight once: each tensor's checksum (files from a converter that
                    writes them) and every float weight finite, else SAM3_ERR_CORRUPT_FILE naming
                    the tensor. 0 (default): the weights are not read at load (zero-copy, fast) */
    char *error;       /* optional: a failed load writes its reason here (NUL-terminated, cut to */
    size_t error_size; /* error_size bytes); "" after a successful one. No log callback needed. */
    int image_size;    /* SAM 3: square input side in pixels, a multiple of the patch (14): smaller is
                          faster (e.g. 560: ~1/3 of the encoder's time at 1008). 0 = the file's.
                          Fixed at load, as every size-dependent table and buffer follows from it;
                          the model equals HF's with that config.image_size (video: memory RoPE grid
                          image_size / patch). SAM 1 (learned position grid) takes only its own. */
} sam3_load_options;

typedef enum sam3_pixel_format { SAM3_RGB8 = 0, SAM3_RGBA8 = 1, SAM3_GRAY8 = 2 } sam3_pixel_format;

/* Called with every intermediate tensor the pipeline produces, named as in the reference dumps
   (tools/make_reference.py), e.g. "vit.layer.3" (tokens, channels) or "fpn.0" (channels, h, w).
   For parity debugging; NULL (the default) costs nothing. */
typedef void (*sam3_tap_fn)(void *user, const char *name, const float *data, int ndim, const int64_t *shape);

/* Precision of the matrix products with weights (sam3_ctx_options.precision). BF16 rounds both
   inputs of each such product to bf16 and sums in f32 on CPUs with bf16 products (AVX512-BF16,
   AMX, aarch64's BF16) and on the reference path; norms, softmax, residual sums stay f32, and so
   do the 3x3 convs of f32 weights. A file converted with --dtype bf16 runs its bf16 weights'
   products, its 3x3 convs too (SAM3_BF16_CONV_KERNEL), in bf16 whatever this says. Either way
   a few products between activations go bf16 with them: the mask product (queries x pixel
   features) and the tracker's two-way transformer's attention (clicks, video). On the other paths
   (avx512, avx2, neon, portable) BF16 is F32, and a bf16 weight is widened to f32 (exactly) for
   an f32 product: there rounding the activations would only cost time. */
typedef enum sam3_precision { SAM3_PRECISION_F32 = 0, SAM3_PRECISION_BF16 = 1 } sam3_precision;

/* Kernel paths (sam3_ctx_options.isa; $SAM3_ISA takes their sam3_isa_name). A build holds the
   paths of its passes (sam3.h "kernel paths": all of them where paths are chosen at run time,
   else the one its compiler flags name); the results of two paths differ in the last bits. */
typedef enum sam3_isa {
    SAM3_ISA_AUTO = 0,
    SAM3_ISA_REFERENCE = 1,  /* plain-C reference kernels and products, no BLAS: slow; the tests' yardstick */
    SAM3_ISA_PORTABLE = 2,   /* plain-C kernels, products through the BLAS (or the built-in SGEMM) */
    SAM3_ISA_AVX2 = 3,       /* AVX2 + FMA (x86-64-v3) */
    SAM3_ISA_AVX512 = 4,     /* AVX-512 F/DQ/BW/VL; bf16 products widened to f32 */
    SAM3_ISA_AVX512BF16 = 5, /* and bf16 products on AVX512-BF16 */
    SAM3_ISA_AMX = 6,        /* and bf16 products on AMX tiles (Linux) */
    SAM3_ISA_NEON = 7,       /* aarch64; bf16 products widened to f32 */
    SAM3_ISA_NEONBF16 = 8    /* and bf16 products with BFDOT (FEAT_BF16: Linux's HWCAP2_BF16) */
} sam3_isa;

typedef struct sam3_ctx_options {
    sam3_allocator allocator;
    int n_threads;    /* our own loops; 0 = all cores (OpenMP default) */
    int blas_threads; /* > 0: openblas_set_num_threads(blas_threads), process-global */
    int (*abort_fn)(void *user); /* polled between blocks; non-zero aborts with SAM3_ERR_ABORTED */
    void *abort_user;
    void (*progress_fn)(void *user, const char *stage, int step, int n_steps); /* called before step `step`
                              (0-based) of n_steps of the stages "vision trunk" (per block) and "vision neck" */
    void *progress_user;
    sam3_tap_fn tap; /* debugging: see sam3_tap_fn */
    void *tap_user;
    int precision; /* sam3_precision: SAM3_PRECISION_F32 (0, default) or SAM3_PRECISION_BF16 */
    int isa;       /* sam3_isa: the kernel path; SAM3_ISA_AUTO (0, default): $SAM3_ISA, else the best the CPU runs */
} sam3_ctx_options;

/* Milliseconds spent in each stage by the last calls on a context. */
typedef struct sam3_timings {
    double preprocess, vision_trunk, vision_neck; /* sam3_set_image */
    double text, geometry, detr_encoder, detr_decoder, mask_decoder, postprocess; /* sam3_segment */
    double interactive_neck; /* sam3_segment_points: the interactive neck (first call after an image; SAM 3) */
    double points;           /* sam3_segment_points: prompt encoder, mask decoder and post-processing */
    double tracking;         /* sam3_tracker_push_frame: everything after the image encoder, all objects */
    double everything;       /* sam3_segment_everything: every click's decoder, the filters and NMS; with
                                crop layers also the crops' image encoder runs (last:
                                fields are appended, so that older bindings keep their layout) */
} sam3_timings;

/* ================================================================================================
   Version, errors
   ============================================================================================= */
SAM3DEF int sam3_version(void);                /* the library's SAM3_VERSION, e.g. 10000 for 1.0.0 (see 8.) */
SAM3DEF const char *sam3_version_string(void); /* the library's SAM3_VERSION_STRING, e.g. "1.0.0" */
SAM3DEF const char *sam3_result_string(sam3_result r);

/* ================================================================================================
   Model
   ============================================================================================= */
SAM3DEF sam3_load_options sam3_load_options_default(void);
#ifndef SAM3_NO_STDIO
SAM3DEF sam3_result sam3_load(const char *path, const sam3_load_options *opt, sam3_model **out);
#endif
/* blob must stay valid and unchanged until sam3_free; it is only read. */
SAM3DEF sam3_result sam3_load_from_memory(const void *blob, size_t size, const sam3_load_options *opt,
                                          sam3_model **out);
SAM3DEF void sam3_free(sam3_model *model); /* NULL is a no-op */

/* Config access (values exactly as stored in the file). Return 0 if the key is absent or not of
   that type. */
SAM3DEF int sam3_model_config_int(const sam3_model *model, const char *key, int64_t *out);
SAM3DEF int sam3_model_config_float(const sam3_model *model, const char *key, double *out);
SAM3DEF const char *sam3_model_config_string(const sam3_model *model, const char *key); /* NUL-terminated copy owned by the model */
SAM3DEF int sam3_model_image_size(const sam3_model *model); /* square input side, e.g. 1008 (SAM 1: 1024) */
SAM3DEF const char *sam3_model_arch(const sam3_model *model);  /* "sam3" or "sam1" */
SAM3DEF int sam3_model_has_text(const sam3_model *model);      /* 1: sam3_segment / sam3_tokenize work (SAM 3) */
SAM3DEF int sam3_model_has_points(const sam3_model *model);    /* 1: sam3_segment_points works (an interactive head) */
SAM3DEF size_t sam3_model_file_size(const sam3_model *model);

/* Introspection of the file's tables (for tools such as `sam3 info`). Strings are owned by the model. */
typedef struct sam3_tensor_info {
    const char *name; /* not NUL-terminated: name_len bytes */
    int name_len;
    const char *dtype; /* "f32", "f16", "bf16", "i32", "u8" */
    int ndim;
    int64_t shape[4];
    uint64_t nbytes;
} sam3_tensor_info;
SAM3DEF int sam3_model_tensor_count(const sam3_model *model);
SAM3DEF int sam3_model_tensor_info(const sam3_model *model, int index, sam3_tensor_info *out); /* 1 ok, 0 bad index */
SAM3DEF int sam3_model_config_count(const sam3_model *model);
/* Key of config entry `index` and its value printed as text into value (NUL-terminated, cut to cap). */
SAM3DEF const char *sam3_model_config_entry(const sam3_model *model, int index, char *value, size_t cap);

/* ================================================================================================
   Context
   ============================================================================================= */
SAM3DEF sam3_ctx_options sam3_ctx_options_default(void);
SAM3DEF sam3_result sam3_ctx_new(const sam3_model *model, const sam3_ctx_options *opt, sam3_ctx **out);
SAM3DEF void sam3_ctx_free(sam3_ctx *ctx); /* NULL is a no-op */
SAM3DEF const char *sam3_ctx_last_error(const sam3_ctx *ctx);
SAM3DEF sam3_timings sam3_ctx_timings(const sam3_ctx *ctx);
/* The floating-point operations of the last run of each stage sam3_ctx_timings times, field by
   field: 2 per multiply-add of the products the kernel path ran in it (every GEMM; an attention's
   q.k and P.V, its scores thrice where the bf16 tiles split them into 3 products; a 3x3 conv's 36
   Winograd products, or its 9 taps on the reference path). Element-wise passes are not counted.
   With sam3_ctx_timings: a stage's achieved rate. */
SAM3DEF sam3_timings sam3_ctx_flops(const sam3_ctx *ctx);
SAM3DEF size_t sam3_ctx_memory_used(const sam3_ctx *ctx); /* bytes held by the context now: everything it allocated */

/* ---- Threads, clock and GEMM rate, for benchmarks and tools (nothing here is needed to segment) ---- */
SAM3DEF int sam3_ctx_n_threads(const sam3_ctx *ctx);       /* threads the context's loops use (n_threads resolved); 0 for NULL */
SAM3DEF int sam3_ctx_splits_products(const sam3_ctx *ctx); /* 1: the BLAS runs single-threaded and sam3 splits every
                                                              product over the context's threads */
SAM3DEF const char *sam3_isa_name(int isa); /* "auto", "reference", "portable", "avx2", ...; NULL past SAM3_ISA_NEONBF16 */
SAM3DEF unsigned sam3_isa_mask(void);        /* bit (1u << SAM3_ISA_x) for each path this build holds and this CPU runs */
SAM3DEF int sam3_isa_default(void);          /* the path sam3_ctx_new gives isa AUTO: $SAM3_ISA where set, else the best of
                                                sam3_isa_mask; SAM3_ERR_INVALID_ARG for an unknown name, SAM3_ERR_UNSUPPORTED
                                                for a path not in the mask */
SAM3DEF int sam3_ctx_isa(const sam3_ctx *ctx); /* the path the context runs (SAM3_ISA_*); 0 for NULL */
SAM3DEF double sam3_time_ms(void); /* wall clock in milliseconds, arbitrary origin: only differences mean something */

/* The matrix products sam3_bench_gemm can time. */
typedef enum sam3_gemm_path {
    SAM3_GEMM_CTX = 0,         /* as the model's products run on this context (split over its threads, or the BLAS's own) */
    SAM3_GEMM_BLAS_THREADS = 1, /* one OpenBLAS call on OpenBLAS's own threads (the context's n_threads of them); only in
                                   builds on OpenBLAS where the context splits products, else SAM3_ERR_UNSUPPORTED */
    SAM3_GEMM_BLAS = 2,         /* sam3_bench_sgemm: one call to the BLAS this build uses (OpenBLAS on `threads` of its
                                   threads; SAM3_SGEMM as given); SAM3_ERR_UNSUPPORTED in a SAM3_NO_BLAS build */
    SAM3_GEMM_BUILTIN = 3,      /* sam3_bench_sgemm: sam3's built-in SGEMM (what a SAM3_NO_BLAS build runs) on `threads` */
    SAM3_GEMM_CTX_BF16 = 4      /* as the model's products with a bf16 weight run on this context: B in bf16, through the
                                   bf16 kernels (AMX, AVX512-BF16) where the path has them, else widened to f32 */
} sam3_gemm_path;

/* Times C (m x n) = A (m x k) . B (n x k)^T in fp32 (SAM3_GEMM_CTX_BF16: B in bf16), row-major,
   `reps` times (1..100) on synthetic matrices allocated for the call with the context's
   allocator, and writes the median time in milliseconds to *ms (GFLOP/s = 2 m n k / (*ms * 1e6)).
   It is the rate the model's products can reach, next to which `sam3 bench` puts each stage's.
   SAM3_GEMM_BLAS_THREADS sets OpenBLAS's process-global thread count for the call and restores
   it after: no other context may compute meanwhile. Needs no image or model state; the context's error says what failed. */
SAM3DEF sam3_result sam3_bench_gemm(sam3_ctx *ctx, sam3_gemm_path path, int m, int n, int k, int reps, double *ms);
/* The same product without a model or context, for SAM3_GEMM_BLAS and SAM3_GEMM_BUILTIN (threads >= 1;
   OpenBLAS's count is restored after): the median of `reps` after one untimed run, in *ms.
   SAM3_ERR_INVALID_ARG, SAM3_ERR_UNSUPPORTED (no BLAS in this build) or SAM3_ERR_OUT_OF_MEMORY. */
SAM3DEF sam3_result sam3_bench_sgemm(sam3_gemm_path path, int threads, int m, int n, int k, int reps, double *ms);

/* Runs the image encoder (the expensive part: ~6 TFLOP at 1008x1008) and caches its output.
   pixels: width*height pixels in `format`, rows `stride` bytes apart (stride >= width*bpp). */
SAM3DEF sam3_result sam3_set_image(sam3_ctx *ctx, const uint8_t *pixels, int width, int height, int stride,
                                   sam3_pixel_format format);

/* ================================================================================================
   Text
   ============================================================================================= */
/* CLIP byte-level BPE exactly as the reference tokenizer: ids[0] = BOS, ..., EOS. Writes at most
   min(capacity, model context) ids; a longer prompt is cut to fit with EOS kept and the call
   returns SAM3_TRUNCATED. Invalid UTF-8 bytes are read as U+FFFD. */
SAM3DEF sam3_result sam3_tokenize(const sam3_model *model, const char *text, int32_t *ids, int capacity, int *n_ids);

/* ================================================================================================
   Concept segmentation: text and/or box exemplars -> every matching instance
   ============================================================================================= */
typedef struct sam3_concept sam3_concept; /* a saved prompt: see sam3_concept_new */
typedef struct sam3_segment_prompt {
    const char *text;       /* UTF-8; NULL or "" with boxes: the reference's "visual" placeholder */
    const sam3_box *boxes;  /* n_boxes exemplars, or NULL */
    const int *box_labels;  /* n_boxes labels, 1 positive exemplar, 0 negative; NULL: all positive */
    int n_boxes;            /* 0..SAM3_MAX_BOXES */
    const sam3_concept *const *concepts; /* n_concepts saved prompts (sam3_concept_new), or NULL */
    int n_concepts;         /* 0..SAM3_MAX_CONCEPTS; their tokens follow the text's and boxes' */
} sam3_segment_prompt;

typedef struct sam3_segment_options {
    float score_threshold; /* keep instances with score > this; 0 = default 0.5 (Meta's processor;
                              Hugging Face's post-processor uses 0.3); negative keeps every query */
    float mask_threshold;  /* a probability (see 1. Concepts); 0 = default 0.5 */
    int no_masks;          /* 1: skip the full-size masks (scores and boxes only) */
    int low_res;           /* 1: also return each instance's mask logits at the decoder resolution */
    int semantic;          /* 1: also return the semantic map */
} sam3_segment_options;

typedef struct sam3_instance {
    float score;                  /* sigmoid(query logit) * sigmoid(presence logit) */
    sam3_box box;                 /* the decoder's box in image pixels (not clamped, as the reference) */
    int query;                    /* index of the decoder query it came from */
    int64_t area;                 /* pixels set in mask */
    const uint8_t *mask;          /* width*height bytes, 1 = object; NULL with no_masks */
    const float *low_res_logits;  /* low_res_height*low_res_width logits when low_res, else NULL */
} sam3_instance;

typedef struct sam3_segment_result {
    int n_instances;                /* instances kept, in query order */
    const sam3_instance *instances; /* (n_instances) */
    int width, height;              /* mask size: the image's */
    float presence;                 /* sigmoid of the presence logit: is the concept in the image at all */
    int n_queries;                  /* queries scored (the model's num_queries) */
    int low_res_width, low_res_height;
    const float *semantic_logits;   /* low_res_height*low_res_width when semantic, else NULL */
    const uint8_t *semantic_mask;   /* width*height 0/1 (sigmoid > 0.5) when semantic, else NULL */
    int n_text_tokens;              /* ids used, BOS and EOS included */
    int text_truncated;             /* the prompt was longer than the model's context */
} sam3_segment_result;

SAM3DEF sam3_segment_options sam3_segment_options_default(void);
/* Segments every instance of the prompt's concept in the context's image. The image features are
   reused; a text prompt seen before on this context reuses its features too. Cost on top of
   sam3_set_image: text encoder (first use of a text), geometry encoder (boxes), DETR encoder
   (its first self-attention, which reads only the image, on the first prompt after an image),
   DETR decoder, mask decoder (masks for the kept instances only; skipped when none is kept and
   no semantic map is asked for), post-processing; see README "Performance".
   Returns SAM3_OK, SAM3_TRUNCATED (text cut to the context; results valid), or an error.
   *out and everything it points to stay valid until the next sam3_set_image / sam3_segment on
   this context or sam3_ctx_free. */
SAM3DEF sam3_result sam3_segment(sam3_ctx *ctx, const sam3_segment_prompt *prompt, const sam3_segment_options *opt, sam3_segment_result *out);
/* A vocabulary in one call: n independent prompts (1..SAM3_MAX_SEGMENT_PROMPTS) on the cached
   image, out[i] the result of prompts[i], each exactly (bit for bit) what sam3_segment gives for
   that prompt alone with the same options. Every prompt is checked before any work: an error names
   the prompt (its index) and leaves every out[i] zeroed. The work that does not depend on the prompt
   is done once for all of them (the image's features, the DETR encoder's first self-attention, the
   DETR decoder's first self-attention of its learned queries); what does (the DETR encoder fuses
   the prompt into every image token, the decoder, the masks) is done per prompt. Saved concepts as
   prompts need no text encoder at all. The n results all stay valid until the next call that returns
   results or sets an image on this context, or sam3_ctx_free, so their masks are held together:
   n x kept x width x height bytes; call it on fewer prompts at a time to bound that. Returns
   SAM3_OK, SAM3_TRUNCATED (some prompt's text was cut: see out[i].text_truncated), or an error.
   sam3_ctx_timings gives each stage's time summed over the prompts. */
SAM3DEF sam3_result sam3_segment_many(sam3_ctx *ctx, const sam3_segment_prompt *prompts, int n, const sam3_segment_options *opt,
                                      sam3_segment_result *out);

/* A mask as COCO compressed RLE: the "counts" string pycocotools' mask.encode gives for it (as
   its Fortran-order array), e.g. for an instance's mask in a COCO results file. mask is width x
   height bytes, row-major, non-zero = set. Writes the string and its NUL into rle (capacity
   bytes) and its length without the NUL to *length. To size the buffer, call with rle NULL and
   capacity 0 (only *length is set), then with *length + 1 bytes. SAM3_ERR_INVALID_ARG for a
   negative or overflowing size, a NULL mask (unless width or height is 0, which gives "0"), a
   NULL length, or a capacity below *length + 1 (*length is still set; rle then holds ""). */
SAM3DEF sam3_result sam3_mask_to_rle(const uint8_t *mask, int width, int height, char *rle, size_t capacity, size_t *length);
/* A concept: a prompt made once and reused, on other images and in other processes. It holds
   the prompt's tokens as sam3_segment computes them: the text encoder's features (of "visual" for
   boxes alone) and, with boxes, the geometry encoder's tokens of the boxes on the image they were
   drawn on (the context's image at sam3_concept_new). Given in sam3_segment_prompt.concepts, its
   tokens are used as they are: on its own image, a concept gives exactly the results of its prompt.
   It records a fingerprint of the model (config, tensor names, shapes and sampled bytes); a
   concept from another model is refused (SAM3_ERR_INVALID_ARG naming both fingerprints). A concept
   is immutable: share it between contexts and threads of one model. Its memory comes from the
   allocator of the context (sam3_concept_new) or model (sam3_concept_load) that made it, which
   must outlive it; the context and model themselves need not. */
/* The concept of `prompt` on the context's image (sam3_set_image first; the prompt's own concepts,
   if any, are folded in). SAM3_TRUNCATED: the text was cut to the model's context (concept valid). */
SAM3DEF sam3_result sam3_concept_new(sam3_ctx *ctx, const sam3_segment_prompt *prompt, sam3_concept **out);
/* The concept as bytes (a versioned format: magic, version, fingerprint, sizes, f32 data, FNV-1a
   checksum): *size = the bytes it takes; with buf NULL only that (SAM3_OK); cap < *size is
   SAM3_ERR_INVALID_ARG and writes nothing. */
SAM3DEF sam3_result sam3_concept_save(const sam3_concept *cpt, void *buf, size_t cap, size_t *size);
/* A concept from sam3_concept_save's bytes, for `model`: every field checked (a truncated or damaged
   file is SAM3_ERR_CORRUPT_FILE or SAM3_ERR_BAD_MAGIC/_BAD_VERSION; another model's concept is
   SAM3_ERR_INVALID_ARG), the message in err (err_cap bytes, may be NULL). The data is copied. */
SAM3DEF sam3_result sam3_concept_load(const sam3_model *model, const void *data, size_t size, sam3_concept **out, char *err, size_t err_cap);
/* Tokens it holds, and of them text tokens (NULL-safe: 0). */
SAM3DEF int sam3_concept_n_tokens(const sam3_concept *cpt, int *n_text);
SAM3DEF void sam3_concept_free(sam3_concept *cpt);

/* ================================================================================================
   Interactive segmentation: clicks, a box and/or a previous mask -> one object (SAM 2-style head)
   ============================================================================================= */
#ifndef SAM3_MAX_POINTS
#define SAM3_MAX_POINTS 64
#endif

typedef struct sam3_point {
    float x, y; /* pixels of the image given to sam3_set_image */
    int label;  /* 1 on the object (positive click), 0 background (negative click) */
} sam3_point;

typedef struct sam3_points_prompt {
    const sam3_point *points; /* n_points clicks, or NULL */
    int n_points;             /* 0..SAM3_MAX_POINTS */
    const sam3_box *box;      /* one box, or NULL */
    const float *mask_logits; /* a logit mask to refine, usually a previous result's low_res_logits plane, or NULL */
    int mask_width, mask_height; /* its size: low_res_width x low_res_height, or (SAM 3 only) any size,
                                    resized as the reference does (antialiased bilinear) */
} sam3_points_prompt;

typedef struct sam3_points_options {
    int single_mask;      /* 0: the three candidate masks (default, as the reference's multimask_output);
                             1: one mask, chosen by the reference's stability rule */
    float mask_threshold; /* of the full-size masks, a probability (see 1. Concepts); 0 = default 0.5 */
    int no_masks;         /* 1: skip the full-size masks (low-resolution logits and scores only) */
} sam3_points_options;

typedef struct sam3_points_result {
    int n_masks;                 /* 3 (or the model's multimask count), or 1 with single_mask */
    const uint8_t *masks;        /* n_masks planes of width*height bytes, 1 = object; NULL with no_masks */
    const float *iou;            /* (n_masks) predicted IoU of each mask: in [0,1] for SAM 3; SAM 1's head has
                                    no sigmoid, so its values are raw regressions and may fall outside */
    int best;                    /* index of the mask with the highest predicted IoU */
    float object_score;          /* logit that an object is there at all (> 0: yes) */
    int has_object_score;        /* 0 for SAM 1 models, which have no such head (object_score is then 0) */
    const float *low_res_logits; /* n_masks planes of low_res_height*low_res_width logits: pass one back
                                    as mask_logits with the next click to refine */
    int low_res_width, low_res_height;
    int width, height;           /* the image's */
} sam3_points_result;

/* Segments the one object the clicks/box/mask point at (an empty prompt is allowed: the model then
   picks what it sees as the main object, as the reference does), with the model's interactive head (a
   second FPN neck, prompt encoder and two-way mask decoder on the cached ViT features: the first
   call after sam3_set_image runs that neck, every later click costs only the small decoder).
   SAM3_ERR_UNSUPPORTED when the file has no interactive head (a plain Sam3Model checkpoint).
   *out stays valid until the next call on this context that returns results or sets an image. */
SAM3DEF sam3_result sam3_segment_points(sam3_ctx *ctx, const sam3_points_prompt *prompt, const sam3_points_options *opt,
                                        sam3_points_result *out);
/* The defaults (mask_threshold 0.5; all zero reads the same), for C++ where `= {0}` on a struct warns. */
SAM3DEF sam3_points_options sam3_points_options_default(void);

/* ================================================================================================
   Segment everything: SAM's automatic mask generator (a grid of clicks, no prompt)
   ============================================================================================= */
#ifndef SAM3_EVERYTHING_MAX_CROP_LAYERS
#define SAM3_EVERYTHING_MAX_CROP_LAYERS 6 /* 5461 crops */
#endif
typedef struct sam3_everything_options {
    /* Defaults are transformers' pipeline("mask-generation"); a field left 0 takes its default. */
    int points_per_side;          /* the grid: points_per_side^2 single clicks, 1..1024; 0 = 32 */
    float pred_iou_thresh;        /* keep masks whose predicted IoU is above; 0 = 0.88, < 0 = no IoU filter */
    float stability_score_thresh; /* keep masks whose stability score is above; 0 = 0.95, < 0 = no filter */
    float stability_score_offset; /* the stability's logit shift (see below); 0 = 1 */
    float box_nms_thresh;         /* box IoU above which the lower-scored mask goes; 0 = 0.7, >= 1 keeps all */
    float mask_threshold;         /* a probability (see 1. Concepts); 0 = 0.5 (logits > 0) */
    /* Crop layers (SamImageProcessor.generate_crop_boxes): layer i >= 1 cuts the image into 2^i x 2^i
       overlapping crops, each encoded as its own image (one image encoder run a crop) and given a
       grid of points_per_side / crop_points_downscale^i (truncated) clicks a side that covers the
       crop, as SAM places it (transformers scales a crop's grid by the whole image's size). */
    int crop_layers;              /* 0..SAM3_EVERYTHING_MAX_CROP_LAYERS; 0 = the whole image only */
    double crop_overlap_ratio;    /* layer 1's overlap as a fraction of the short side, in [0,1); 0 = 512/1500 */
    int crop_points_downscale;    /* >= 1; 0 = 1 */
    float crop_nms_thresh;        /* box NMS across crops' masks (by predicted IoU); 0 = 0.7, >= 1 keeps all */
    int64_t min_region_area;      /* > 0: SAM's small-region removal (holes, then islands, below this many
                                     pixels, 8-connected), then box NMS again; 0 = off */
    /* With crop_layers > 0: the pixels given to sam3_set_image (the same image: the context keeps
       only its features), as sam3_set_image takes them; the call reads them, never keeps them. */
    const uint8_t *pixels;
    int stride;                   /* bytes between rows, >= width * bytes a pixel */
    sam3_pixel_format format;
} sam3_everything_options;

typedef struct sam3_everything_mask {
    const uint8_t *mask; /* width*height bytes, 1 = object */
    sam3_box box;        /* the mask's first and last pixel column and row (inclusive; all 0 when empty) */
    int64_t area;        /* pixels set */
    float iou;           /* predicted IoU (SAM 1's is a raw regression, see sam3_points_result) */
    float stability;     /* |logits > t + offset| / |logits > t - offset| on the full-size logits, t the
                            mask threshold as a logit */
    sam3_point point;    /* the grid click that gave it, in pixels */
    int click;           /* that click's index in the grid (row-major, x fastest) */
    int token;           /* which of its multimask outputs (0..2) */
    int crop;            /* the crop it came from: 0 the whole image, then layer by layer in
                            generate_crop_boxes' order (columns outer); click indexes that crop's grid */
} sam3_everything_mask;

typedef struct sam3_everything_result {
    int n_masks;                        /* kept, highest predicted IoU first */
    const sam3_everything_mask *masks;  /* (n_masks) */
    int n_points, n_candidates;         /* the grid's clicks and the masks they gave before any filter */
    int n_filtered;                     /* of those, passing the IoU and stability filters (before the
                                           crop-edge rule and NMS) */
    int width, height;                  /* the image's */
    int n_crops;                        /* crops run (1 without crop layers); the counts above sum over them */
} sam3_everything_result;

/* Every object in the cached image (sam3_set_image), as SAM's automatic mask generator: a grid of
   single positive clicks through the interactive head (see sam3_segment_points), each giving its
   multimask outputs; masks with a low predicted IoU or stability are dropped, then box NMS keeps the
   best of overlapping ones. Every click costs one run of the decoder's two-way transformer (what
   no click changes made once per call), and its upscaling only when one of its outputs passes
   pred_iou_thresh. With several threads the clicks run one a thread, each thread's scratch (tens
   of MB at full size) from the default allocator (SAM3_MALLOC), not counted by
   sam3_ctx_memory_used. With crop layers, each crop runs the same grid pass on its own encoding (in a
   second context the call makes and frees, so this one keeps its image), drops the masks whose box
   lies within 20 pixels of a crop edge that is not an image edge, keeps its best by box NMS at
   box_nms_thresh; the crops' masks, moved into the image, then go through box NMS at
   crop_nms_thresh. min_region_area runs last, as SAM's postprocess_small_regions (a mask it changes
   gets the NMS score 0 and goes after the unchanged ones; its box and area are recomputed; the NMS
   is at the larger of the two thresholds).
   SAM3_ERR_UNSUPPORTED without an interactive head. *out stays valid until the
   next call on this context that returns results or sets an image. */
SAM3DEF sam3_result sam3_segment_everything(sam3_ctx *ctx, const sam3_everything_options *opt, sam3_everything_result *out);
/* The defaults (points_per_side 32, pred_iou_thresh 0.88, stability_score_thresh 0.95,
   stability_score_offset 1, box_nms_thresh 0.7, mask_threshold 0.5, no crop layers (overlap 512/1500,
   downscale 1, crop_nms_thresh 0.7), no small-region removal). */
SAM3DEF sam3_everything_options sam3_everything_options_default(void);

/* ================================================================================================
   Video: follow prompted objects through a stream of frames (the SAM 3 tracker's memory)
   ============================================================================================= */
#ifndef SAM3_MAX_TRACKED_OBJECTS
#define SAM3_MAX_TRACKED_OBJECTS 64
#endif
#ifndef SAM3_MAX_CONCEPT_PROMPTS
#define SAM3_MAX_CONCEPT_PROMPTS 16
#endif

/* A stream's tracking state, on one context (so on one thread at a time). Frames are numbered
   0, 1, ... in the order they are pushed. */
typedef struct sam3_tracker sam3_tracker;

/* What says where an object is on the next frame: clicks and/or a box, or a mask. */
typedef struct sam3_tracker_prompt {
    const sam3_point *points;    /* n_points clicks in that frame's pixels, or NULL */
    int n_points;                /* 0..SAM3_MAX_POINTS */
    const sam3_box *box;         /* one box in that frame's pixels, or NULL */
    const uint8_t *mask;         /* mask_width*mask_height bytes, non-zero = object, or NULL; any size (it is
                                    resized to the model's input as the reference does); not with points or box */
    int mask_width, mask_height;
} sam3_tracker_prompt;

typedef struct sam3_tracker_options {
    int no_masks;         /* 1: skip the frame-size masks (low-resolution logits, scores; boxes and areas are 0) */
    float mask_threshold; /* of the frame-size masks, a probability (see 1. Concepts); 0 = default 0.5 */
} sam3_tracker_options;

typedef struct sam3_tracker_object {
    int id;                      /* the caller's object id */
    float object_score;          /* logit that the object is visible in this frame (> 0: yes) */
    int prompted;                /* 1: a prompt was given for it on this frame (a conditioning frame) */
    sam3_box box;                /* the mask's pixel bounds (x1, y1 exclusive: integers); all 0 when empty */
    int64_t area;                /* pixels set in mask */
    const uint8_t *mask;         /* width*height bytes, 1 = object (the logits resized bilinearly, above
                                    mask_threshold, as the reference post-processes); NULL with no_masks */
    const float *low_res_logits; /* low_res_height*low_res_width logits; -1024 everywhere when absent */
} sam3_tracker_object;

typedef struct sam3_tracker_result {
    int frame;                   /* this frame's index in the stream */
    int n_objects;
    const sam3_tracker_object *objects; /* (n_objects), in the order the objects were first prompted */
    int width, height;           /* the frame's (mask size) */
    int low_res_width, low_res_height;
} sam3_tracker_result;

SAM3DEF sam3_tracker_options sam3_tracker_options_default(void);
/* A tracker on ctx (which it uses for every frame: the context's image and results are replaced).
   SAM3_ERR_UNSUPPORTED when the model file has no memory modules (converted without the video
   tensors) or is a SAM 1 model. */
SAM3DEF sam3_result sam3_tracker_new(sam3_ctx *ctx, const sam3_tracker_options *opt, sam3_tracker **out);
/* Gives object `object_id` a prompt for frame `frame`, which must be the next frame to be pushed
   (sam3_tracker_next_frame): an object seen for the first time starts being tracked there; a known
   one is corrected (that frame becomes one of its conditioning frames). A second prompt for the
   same object and frame replaces the first. At most SAM3_MAX_TRACKED_OBJECTS objects. The prompt's
   arrays are copied. */
SAM3DEF sam3_result sam3_tracker_add_prompt(sam3_tracker *t, int frame, int object_id, const sam3_tracker_prompt *prompt);
/* Forgets an object (and a prompt pending for it). SAM3_ERR_INVALID_ARG for an unknown id. */
SAM3DEF sam3_result sam3_tracker_remove_object(sam3_tracker *t, int object_id);
/* Index of the next frame to be pushed (the number pushed so far). */
SAM3DEF int sam3_tracker_next_frame(const sam3_tracker *t);
/* Processes the next frame (pixels as sam3_set_image takes them; frames may change size): the
   image encoder once, then per object its prompt, or memory attention over what the stream
   remembers of it, the mask decoder, and the memory encoder. With no objects yet the frame is only
   counted. *out stays valid until the next call on this tracker. On any error, an abort included,
   the tracker is as it was before the call (pending prompts kept), and the frame is not counted. */
SAM3DEF sam3_result sam3_tracker_push_frame(sam3_tracker *t, const uint8_t *pixels, int w, int h, int stride, sam3_pixel_format format,
                                            sam3_tracker_result *out);
/* As sam3_tracker_push_frame, on the frame the tracker's context encoded last (sam3_set_image, or
   the push_frame of another tracker or of a concept tracker on the same context) without running
   the image encoder again: a concept tracker and a tracker of clicked objects on one context cost
   one encoder pass per frame (push the frame to the concept tracker, then this). The frame's size
   is the encoded image's. SAM3_ERR_NO_IMAGE when the context holds no encoded frame (none yet, or
   the last encoding failed). */
SAM3DEF sam3_result sam3_tracker_push_encoded(sam3_tracker *t, sam3_tracker_result *out);
/* Forgets every object and restarts the frame count at 0. */
SAM3DEF sam3_result sam3_tracker_reset(sam3_tracker *t);
/* Bytes the tracker holds (memories, prompts, results), beyond its context's. */
SAM3DEF size_t sam3_tracker_memory_used(const sam3_tracker *t);
SAM3DEF void sam3_tracker_free(sam3_tracker *t);

/* ---- Concept tracking (EXPERIMENTAL: outside section 8's promise; names and fields may still change in a minor version) ----
   Every instance of one or more concepts (texts, or box exemplars as sam3_segment takes them)
   followed through a stream, each with an ID of its own: Hugging Face Sam3VideoModel (streaming or
   clip mode, below). Per frame: the image encoder once; the detector for each prompt; every tracked
   object propagated by the memory tracker; detections matched to tracked masks by mask IoU (never
   across prompts); unmatched confident detections start new objects (their detector mask becomes a
   conditioning frame); overlapping masks of recently occluded objects are suppressed; every
   object's memory encoded. In streaming mode objects are never removed (as the reference's): an
   object out of view has an empty mask and is left out of the frame's list until it shows again.
   Clip mode (options.hotstart_delay > 0, HF's mode for a whole video) holds outputs back and
   removes doubtful new objects (the hotstart rules). */
typedef struct sam3_concept_tracker sam3_concept_tracker;

/* Thresholds of Sam3VideoConfig; 0 selects the reference's default (in brackets). */
typedef struct sam3_concept_tracker_options {
    float detection_threshold;  /* a detection counts when sigmoid(logit) * presence > this [0.5] */
    float new_object_threshold; /* an unmatched detection starts an object at >= this [0.7] */
    float match_iou;            /* a detection matches a tracked mask at mask IoU >= this [0.1] */
    float track_match_iou;      /* a tracked mask counts as matched at IoU >= this [0.5] */
    float recondition_score;    /* reconditioning: detection score and tracker logit above this [0.8] */
    float recondition_iou;      /* reconditioning: detection-to-mask IoU at least this [0.8] */
    int recondition_every;      /* reconditioning on every Nth frame [16]; negative: never */
    float occlusion_iou;        /* overlap above which the more recently occluded object is hidden [0.7]; negative: off */
    float nms_iou;              /* mask NMS among one prompt's detections [0.1]; negative: none (HF 5.17 without
                                   the `kernels` package runs none) */
    int fill_hole_area;         /* low-resolution holes and sprinkles up to this many pixels are filled [16];
                                   negative: none (HF 5.17 without `kernels` fills none) */
    int max_objects;            /* objects tracked at most [SAM3_MAX_TRACKED_OBJECTS]; the best new ones win */
    /* Clip mode (HF's pre-loaded video, propagate_in_video_iterator) when hotstart_delay > 0 (HF uses
       15); 0 is the streaming mode. Each frame's output then comes hotstart_delay - 1 pushes later
       (sam3_concept_tracker_flush gives the last ones at the end), and an object that started less
       than hotstart_delay frames ago is removed when it was unmatched on hotstart_unmatch frames, or
       matched the same detection as an older object on hotstart_dup frames: removed objects vanish
       from every output not yet given out. */
    int hotstart_delay;
    int hotstart_unmatch;       /* [8] */
    int hotstart_dup;           /* [8] */
} sam3_concept_tracker_options;

typedef struct sam3_concept_tracker_object {
    int id;                      /* 0, 1, ... in order of appearance; kept while the object is tracked */
    int prompt;                  /* index of the prompt that found it (sam3_concept_tracker_add_text / _add_prompt) */
    float score;                 /* the detection score that started it */
    float tracker_score;         /* probability it is visible in this frame (its detection score on the first) */
    sam3_box box;                /* x1, y1 exclusive: the mask's bounds before the overlap
                                    removal below, as the reference's processor computes them */
    int64_t area;                /* pixels set in mask */
    const uint8_t *mask;         /* width*height bytes, 1 = object; within one prompt no pixel belongs to two
                                    objects (the one with the higher tracker_score keeps it) */
    const float *low_res_logits; /* low_res_height*low_res_width logits */
} sam3_concept_tracker_object;

typedef struct sam3_concept_tracker_result {
    int frame;                          /* the index in the stream of the frame described (in clip mode an earlier
                                           one); -1: none (clip mode, still held back; nothing left to flush) */
    int n_objects;                      /* visible objects (0 is not an error) */
    const sam3_concept_tracker_object *objects; /* (n_objects), ascending id */
    int width, height;
    int low_res_width, low_res_height;
} sam3_concept_tracker_result;

SAM3DEF sam3_concept_tracker_options sam3_concept_tracker_options_default(void);
/* A concept tracker on ctx (its image and results are replaced on every frame). SAM3_ERR_UNSUPPORTED
   when the model file has no video memory modules. */
SAM3DEF sam3_result sam3_concept_tracker_new(sam3_ctx *ctx, const sam3_concept_tracker_options *opt, sam3_concept_tracker **out);
/* Adds a text prompt (UTF-8, not empty) from the next frame on; *index (may be NULL) gets its
   index. The same text twice gives the same index. At most SAM3_MAX_CONCEPT_PROMPTS. */
SAM3DEF sam3_result sam3_concept_tracker_add_text(sam3_concept_tracker *t, const char *text, int *index);
/* Adds a prompt of text and/or box exemplars, as sam3_segment takes them (labels 1 positive, 0
   negative; boxes without text use the reference's "visual" placeholder), from the next frame on;
   *index as _add_text (the same text, boxes and labels twice: the same index). The detector gets
   the boxes on every frame in that frame's pixels, as sam3_segment would on the frame alone: they
   mark a place in the picture, not an object, so they do not follow what they framed. Not in the
   reference (HF 5.17's Sam3VideoProcessor takes text only); the arrays are copied. The prompt's
   concepts (sam3_concept) are copied too and never merged with another prompt: their box tokens
   stay those of the image they were made on, on every frame. */
SAM3DEF sam3_result sam3_concept_tracker_add_prompt(sam3_concept_tracker *t, const sam3_segment_prompt *prompt, int *index);
/* Processes the next frame (pixels as sam3_set_image takes them). *out stays valid until the next
   call on this tracker. On an error, an abort included, the tracker is as before the call. */
SAM3DEF sam3_result sam3_concept_tracker_push_frame(sam3_concept_tracker *t, const uint8_t *pixels, int w, int h, int stride,
                                                    sam3_pixel_format format, sam3_concept_tracker_result *out);
/* Clip mode, after the last frame: the oldest output still held back, one per call (out->frame is -1
   when none is left). Streaming mode holds nothing back. Frames may be pushed again afterwards. */
SAM3DEF sam3_result sam3_concept_tracker_flush(sam3_concept_tracker *t, sam3_concept_tracker_result *out);
SAM3DEF void sam3_concept_tracker_free(sam3_concept_tracker *t);

#ifdef __cplusplus
}
#endif
#endif /* SAM3_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION
   ============================================================================================= */
#if defined(__INTELLISENSE__) || defined(__CDT_PARSER__)
#define SAM3_IMPLEMENTATION
#endif

#ifdef SAM3_IMPLEMENTATION
#ifndef SAM3_IMPLEMENTATION_INCLUDED
#define SAM3_IMPLEMENTATION_INCLUDED
/* ==== sam3.h contents: the rooms below, in file order (tests/check_layout.py holds them to it) ====
   configuration macros  includes, SAM3_MALLOC/SAM3_FREE, SAM3_ASSERT, BLAS and OpenMP glue
   platform  the clock, the busy flag's atomics, file mapping and UTF-8 paths on Windows
   internal utils  version and result strings, checked sizes, the default allocator
   file-format reader  the .sam3 container: header, config table, tensor table, checksums
   tokenizer  CLIP byte-level BPE: special tokens, normalisation, merges
   model (config and weights)  config and weight structs, read from the file by key, name and shape
   loading  sam3_load, sam3_load_from_memory, sam3_free, the model's queries
   context, scratch arena  sam3_ctx, the arena and its marks, kernel scratch
   portable helpers (the kernels and the model both use them)  sine codes, RoPE tables, constants
   kernel paths  how the kernel section is compiled once per path and renamed (SAM3__KN)
   built-in SGEMM  the blocked f32 GEMM for builds without BLAS
   bf16 kernels  bf16 GEMMs (AVX512-BF16, AMX, aarch64's BFDOT, reference), the fused fc1 + GELU
   kernels  reference kernels, GEMM dispatch, the SIMD layer, resize, attention, convs, norms
   preprocessing (Sam3ImageProcessor)  resize, rescale, normalise
   vision backbone (Sam3ViTModel)  patch embedding, windowed and global RoPE attention layers
   neck (Sam3VisionNeck)  the FPN levels and their sine position maps
   SAM 1 vision encoder (SamVisionEncoder)  SAM 1's ViT with relative positions, its neck
   tokenizer API  sam3_tokenize
   text encoder (CLIPTextTransformer + Sam3Model.text_projection)  the prompt's features
   geometry encoder (Sam3GeometryEncoder)  box exemplars into prompt tokens
   DETR encoder (Sam3DetrEncoder)  image features fused with the prompt
   DETR decoder (Sam3DetrDecoder)  queries, boxes, the box relative position bias
   scoring (Sam3DotProductScoring)  each query's score against the prompt
   mask decoder (Sam3MaskDecoder)  pixel decoder and instance masks
   post-processing  thresholds, NMS, boxes to the image, masks to the image
   interactive head (Sam3TrackerModel)  clicks and boxes: prompt encoder, two-way mask decoder
   video memory (Sam3TrackerVideoModel: memory attention, memory encoder)  what a tracker remembers
   public API  model and context lifetime, options, the kernel path choice
   benchmark support  threads, clock and GEMM rates for benchmarks and tools
   concepts (sam3_concept: a prompt's tokens, saved and reused)  fingerprint, file format, load and save
   images (sam3_set_image, sam3_segment, sam3_segment_points)  the image entry points and their drivers
   video tracker (Sam3TrackerVideoModel in streaming mode)  sam3_tracker_*: clicked objects frame by frame
   concept tracker (Sam3VideoModel: detections and masklets of text concepts)  sam3_concept_tracker_*
   unicode tables (generated by tools/gen_unicode_tables.py, do not edit)  the tokenizer's Unicode data
   unicode lookups (the tokenizer's reads of the tables above)  class, combining class, lowercase, NFC pairs
*/
/* ==== sam3: configuration macros ==== */
#include <float.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SAM3_MALLOC) && defined(SAM3_FREE)
#elif !defined(SAM3_MALLOC) && !defined(SAM3_FREE)
#define SAM3_MALLOC(sz) malloc(sz)
#define SAM3_FREE(p) free(p)
#else
#error "sam3.h: define both SAM3_MALLOC and SAM3_FREE, or neither"
#endif

#ifndef SAM3_ASSERT
#include <assert.h>
#define SAM3_ASSERT(x) assert(x)
#endif

#ifndef SAM3_MAX_IMAGE_DIM
#define SAM3_MAX_IMAGE_DIM 16384
#endif
#ifndef SAM3_BF16_KERNEL
#define SAM3_BF16_KERNEL 2 /* the fastest bf16 kernel to use where the CPU has it: 0 reference, 1 AVX512-BF16 (aarch64: BFDOT), 2 AMX */
#endif
#ifndef SAM3_BF16_ATTENTION_KERNEL
#define SAM3_BF16_ATTENTION_KERNEL 2 /* the ViT and DETR encoder attention in bf16 from this bf16 kernel on (1: AVX512-BF16 or BFDOT too; 3: never, not even P.V) */
#endif
#ifndef SAM3_BF16_CONV_KERNEL
#define SAM3_BF16_CONV_KERNEL 1 /* a bf16 file's 3x3 convs in bf16 from this bf16 kernel on (2: AMX only; 3: never) */
#endif
#ifndef SAM3_MAX_PROMPT_BYTES
#define SAM3_MAX_PROMPT_BYTES ((size_t)4 << 20) /* the context holds 32 ids; 4 MB is already absurd */
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

/* the reference kernels' build has no BLAS (its GEMM is the plain-C sam3__ref_sgemm) */
#if defined(SAM3_REFERENCE_KERNELS) && !defined(SAM3_NO_BLAS) && !defined(SAM3_SGEMM)
#define SAM3_NO_BLAS
#endif
#if defined(SAM3_SGEMM) || defined(SAM3_NO_BLAS)
#else
#include <cblas.h>
#endif
#if defined(SAM3_SGEMM) && !defined(CBLAS_H) && !defined(__MKL_CBLAS_H__) && !defined(CBLAS_ENUM_DEFINED_H)
/* SAM3_SGEMM is called with the standard CBLAS constants; without a cblas.h seen before this
   point they, and cblas_sgemm, are declared here as the CBLAS standard (netlib, OpenBLAS,
   Accelerate, MKL) declares them, so -DSAM3_SGEMM=cblas_sgemm needs no include. A cblas.h
   included in this translation unit must come before sam3.h. */
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };
#ifdef __cplusplus
extern "C"
#endif
void cblas_sgemm(const enum CBLAS_ORDER Order, const enum CBLAS_TRANSPOSE TransA, const enum CBLAS_TRANSPOSE TransB, const int M,
                 const int N, const int K, const float alpha, const float *A, const int lda, const float *B, const int ldb,
                 const float beta, float *C, const int ldc);
#endif

#if !defined(SAM3_NO_STDIO) && !defined(_WIN32) && !defined(SAM3_NO_MMAP)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define SAM3__HAVE_MMAP 1
#endif

#if defined(_WIN32)
#include <windows.h>
#else
#include <sys/time.h>
#endif
#if !defined(SAM3_NO_STDIO) && defined(_WIN32) && !defined(SAM3_NO_MMAP)
#define SAM3__HAVE_MMAP 1
#define SAM3__WIN_MMAP 1
#endif

#define SAM3__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SAM3__MAX(a, b) ((a) > (b) ? (a) : (b))
#define SAM3__ALIGN 64
#define SAM3__PI 3.14159265358979323846

/* The fast exp/erf must inline into the loops calling them, or those loops do not vectorize
   (GCC left sam3__fexp out of line: a third of the attention time). */
#if defined(__GNUC__) || defined(__clang__)
#define SAM3__INLINE __attribute__((always_inline)) inline
#elif defined(_MSC_VER)
#define SAM3__INLINE __forceinline
#else
#define SAM3__INLINE inline
#endif
/* ISO modes (-std=c99) turn GCC's floating-point contraction off, so a += b * c in the attention
   kernels would be a multiply and an add instead of one FMA (clang contracts within an expression
   by default). Only for leaf kernels: GCC does not inline across differing optimize options. */
#if defined(__GNUC__) && !defined(__clang__)
#define SAM3__CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define SAM3__CONTRACT
#endif

/* Prefetches for writing (see sam3__gelu_bias) and for reading. */
#if defined(__GNUC__) || defined(__clang__)
#define SAM3__PREFETCHW(p) __builtin_prefetch((p), 1, 3)
#define SAM3__PREFETCHR(p) __builtin_prefetch((p), 0, 3)
#else
#define SAM3__PREFETCHW(p) ((void)0)
#define SAM3__PREFETCHR(p) ((void)0)
#endif

/* OpenMP pragmas through one macro, so the code compiles to plain loops without -fopenmp. */
#ifdef _OPENMP
#define SAM3__STR_(x) #x
#define SAM3__OMP(args) _Pragma(SAM3__STR_(omp args))
#else
#define SAM3__OMP(args)
#endif
/* A max reduction marked simd: clang (14) cannot vectorise one without -ffast-math and then warns
   that it did not (-Wpass-failed, an error under -Werror); it gets the plain loop. */
#if defined(__clang__)
#define SAM3__OMP_SIMD_MAX(v)
#else
#define SAM3__OMP_SIMD_MAX(v) SAM3__OMP(simd reduction(max:v))
#endif
/* Element-wise passes and small row loops over fewer values than this run on the calling thread:
   a fork/join costs microseconds on idle cores, but beside other work each one waits for its
   slowest thread, which may be descheduled for a whole time slice (milliseconds); a prompt's
   decoder (200 queries x 256) would otherwise pay that in every one of its ~70 small steps. */
#define SAM3__PAR_MIN 262144.0
/* An exponential counts as this many element-wise operations against SAM3__PAR_MIN. */
#define SAM3__PAR_EXP 16
#if defined(SAM3_PROFILE)
/* SAM3_PROFILE builds: the image encoder's stages (sam3_ctx.prof) and the per-thread parts of its
   bf16 products and attention (sam3_ctx.prof_thr; a thread's total in the region less its parts
   is its wait at the joins) */
enum {
    SAM3__PS_EMBED, SAM3__PS_LN1, SAM3__PS_QKV, SAM3__PS_PACK, SAM3__PS_ATT, SAM3__PS_PROJ, SAM3__PS_ADD1,
    SAM3__PS_LN2, SAM3__PS_FC1, SAM3__PS_FC2, SAM3__PS_ADD2, SAM3__PS_N
};
enum {
    SAM3__PT_GTOTAL, SAM3__PT_PACKB, SAM3__PT_PACKA, SAM3__PT_TILES, SAM3__PT_ATOTAL, SAM3__PT_AQ, SAM3__PT_AQK, SAM3__PT_ASM,
    SAM3__PT_APV, SAM3__PT_N
};
#define SAM3__PROF_THR 64
#define SAM3__PROF_T(v) double v = sam3__prof_now()
#define SAM3__PROF_ADD(dst, t0) ((dst) += sam3__prof_now() - (t0))
#define SAM3__PROF_LAP(dst, t0) ((dst) += sam3__prof_now() - (t0), (t0) = sam3__prof_now())
#else
#define SAM3__PROF_T(v)
#define SAM3__PROF_ADD(dst, t0)
#define SAM3__PROF_LAP(dst, t0)
#endif

/* ==== sam3: platform ==== */
static double sam3__now_ms(void) {
#if defined(_WIN32)
    LARGE_INTEGER f, t;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&t);
    return 1000.0 * (double)t.QuadPart / (double)f.QuadPart;
#else
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec * 1000.0 + (double)tv.tv_usec / 1000.0;
#endif
}
#if defined(SAM3_PROFILE)
/* A time stamp for SAM3_PROFILE builds' stage profile: the CPU's time-stamp counter where there
   is one (a few cycles to read, fine enough for one attention task), else milliseconds. */
static double sam3__prof_now(void) {
#if defined(__GNUC__) && defined(__x86_64__)
    return (double)__builtin_ia32_rdtsc();
#else
    return sam3__now_ms();
#endif
}
#endif

/* The in-use flag of a context (SAM3_ERR_BUSY): one compare-and-swap at the entry of a call, one
   store at its exit. GCC and clang (and MinGW) builtins, MSVC's Interlocked functions, C11 atomics
   elsewhere; a compiler with none of these gets a plain flag, which still catches calls that do
   not overlap exactly but is not a guarantee (define SAM3_BUSY_FLAG_NONE to see where). */
#if defined(__GNUC__) || defined(__clang__)
typedef int sam3__flag;
static int sam3__flag_take(sam3__flag *f) {
    int expected = 0;
    return __atomic_compare_exchange_n(f, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static void sam3__flag_drop(sam3__flag *f) { __atomic_store_n(f, 0, __ATOMIC_RELEASE); }
#elif defined(_MSC_VER)
typedef volatile long sam3__flag;
static int sam3__flag_take(sam3__flag *f) { return InterlockedCompareExchange(f, 1, 0) == 0; }
static void sam3__flag_drop(sam3__flag *f) { InterlockedExchange(f, 0); }
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
typedef atomic_int sam3__flag;
static int sam3__flag_take(sam3__flag *f) {
    int expected = 0;
    return atomic_compare_exchange_strong_explicit(f, &expected, 1, memory_order_acquire, memory_order_relaxed);
}
static void sam3__flag_drop(sam3__flag *f) { atomic_store_explicit(f, 0, memory_order_release); }
#else
#define SAM3_BUSY_FLAG_NONE 1
typedef volatile int sam3__flag;
static int sam3__flag_take(sam3__flag *f) {
    if (*f) return 0;
    *f = 1;
    return 1;
}
static void sam3__flag_drop(sam3__flag *f) { *f = 0; }
#endif
#if !defined(SAM3_NO_STDIO) && defined(_WIN32)
/* UTF-8 path -> UTF-16 for the W functions (the A ones take the ANSI code page, which cannot name
   every file); NULL when the path is not valid UTF-8 or memory runs out. Free with
   sam3__win_path_free. */
static wchar_t *sam3__win_path(const char *path) {
    wchar_t *w;
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    if (n <= 0 || (size_t)n > SIZE_MAX / sizeof(wchar_t)) return NULL;
    w = (wchar_t *)SAM3_MALLOC((size_t)n * sizeof(wchar_t));
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n) != n) {
        SAM3_FREE(w);
        w = NULL;
    }
    return w;
}
static void sam3__win_path_free(wchar_t *w) { SAM3_FREE(w); }
#endif
#if defined(SAM3__WIN_MMAP)
/* Maps the file read-only; NULL on failure, with *empty set for a 0-byte file (which cannot be
   mapped, and is reported as a bad magic like on POSIX) and *why saying what failed, as
   sam3__errno_text does on POSIX. */
static const void *sam3__win_map(const char *path, size_t *size, int *empty, const char **why) {
    HANDLE f, mp;
    LARGE_INTEGER sz;
    const void *p = NULL;
    wchar_t *w = sam3__win_path(path);
    *empty = 0;
    *why = "cannot be mapped";
    if (!w) {
        *why = "not a valid UTF-8 file name";
        return NULL;
    }
    f = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    sam3__win_path_free(w);
    if (f == INVALID_HANDLE_VALUE) {
        const DWORD e = GetLastError();
        *why = e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? "no such file or directory"
               : e == ERROR_ACCESS_DENIED                            ? "permission denied (or a directory)"
                                                                     : "cannot be opened";
        return NULL;
    }
    if (!GetFileSizeEx(f, &sz)) sz.QuadPart = -1;
    *empty = sz.QuadPart == 0;
    if (sz.QuadPart > 0 && (uint64_t)sz.QuadPart <= (uint64_t)SIZE_MAX) {
        /* the view keeps the mapping and the file open after both handles are closed */
        mp = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
        if (mp) {
            p = MapViewOfFile(mp, FILE_MAP_READ, 0, 0, 0);
            CloseHandle(mp);
        }
    }
    CloseHandle(f);
    if (p) *size = (size_t)sz.QuadPart;
    return p;
}
#define SAM3__UNMAP(p, size) ((void)(size), UnmapViewOfFile(p))
#elif defined(SAM3__HAVE_MMAP)
#define SAM3__UNMAP(p, size) munmap((p), (size))
#endif

/* ==== sam3: internal utils ==== */
SAM3DEF int sam3_version(void) { return SAM3_VERSION; }
SAM3DEF const char *sam3_version_string(void) { return SAM3_VERSION_STRING; }

SAM3DEF const char *sam3_result_string(sam3_result r) {
    switch (r) {
#define SAM3__CASE(name, value, text) \
    case name:                        \
        return text;
        SAM3_RESULT_LIST(SAM3__CASE)
#undef SAM3__CASE
    default:
        return "unknown sam3_result";
    }
}

/* Overflow-checked size arithmetic: every size derived from a file or a caller goes through
   these, so a hostile value fails cleanly instead of wrapping. */
static int sam3__mul(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}
static int sam3__add(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return 0;
    *out = a + b;
    return 1;
}

static void *sam3__default_alloc(size_t size, size_t align, void *user) {
    /* Over-allocate and keep the raw pointer just below the aligned block. */
    size_t total;
    unsigned char *raw, *p;
    (void)user;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (!sam3__add(size, align + sizeof(void *), &total)) return NULL;
    raw = (unsigned char *)SAM3_MALLOC(total);
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (align - ((uintptr_t)p & (align - 1))) & (align - 1);
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}
static void sam3__default_free(void *ptr, void *user) {
    void *raw;
    (void)user;
    if (!ptr) return;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof(void *));
    SAM3_FREE(raw);
}

/* Zeroed allocator = defaults; half-filled = error (returns 0). */
static int sam3__allocator_resolve(const sam3_allocator *in, sam3_allocator *out) {
    if (!in || (!in->alloc && !in->free)) {
        out->alloc = sam3__default_alloc;
        out->free = sam3__default_free;
        out->user = NULL;
        return 1;
    }
    if (!in->alloc || !in->free) return 0;
    *out = *in;
    return 1;
}

static void *sam3__aalloc(const sam3_allocator *a, size_t size) {
    return a->alloc(size ? size : 1, SAM3__ALIGN, a->user);
}
static void *sam3__acalloc(const sam3_allocator *a, size_t n, size_t each) {
    size_t size;
    void *p;
    if (!sam3__mul(n, each, &size)) return NULL;
    p = sam3__aalloc(a, size);
    if (p) memset(p, 0, size);
    return p;
}
static void sam3__afree(const sam3_allocator *a, void *p) {
    if (p) a->free(p, a->user);
}

static void sam3__vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap) {
    if (cap == 0) return;
    if (vsnprintf(buf, cap, fmt, ap) < 0) buf[0] = 0;
    buf[cap - 1] = 0;
}

/* ==== sam3: file-format reader ==== */
/* The .sam3 container (tools/sam3file.py documents every byte). Everything here is validated
   before use: the same code parses converted models and the reference dumps, and the fuzz target
   runs exactly this. */
enum { SAM3__T_I64 = 1, SAM3__T_F64 = 2, SAM3__T_STR = 3, SAM3__T_I64_ARRAY = 4, SAM3__T_F64_ARRAY = 5 };
enum { SAM3__DT_F32 = 0, SAM3__DT_F16 = 1, SAM3__DT_BF16 = 2, SAM3__DT_I32 = 3, SAM3__DT_U8 = 4, SAM3__DT_COUNT };
static const struct {
    const char *name;
    size_t size;
} sam3__dtypes[SAM3__DT_COUNT] = {{"f32", 4}, {"f16", 2}, {"bf16", 2}, {"i32", 4}, {"u8", 1}};

#define SAM3__HEADER_BYTES 128
#define SAM3__ENTRY_BYTES 64
#define SAM3__KEY_BYTES 48

typedef struct sam3__cfg {
    char key[SAM3__KEY_BYTES]; /* NUL-terminated */
    uint32_t type, count;
    int64_t i;           /* T_I64 */
    double f;            /* T_F64 */
    const uint8_t *data; /* strings and arrays: count items inside the string table (unaligned) */
} sam3__cfg;

typedef struct sam3__tensor {
    const char *name; /* inside the file, not NUL-terminated */
    uint32_t name_len, dtype;
    int ndim;
    int64_t shape[4];
    const void *data; /* 64-byte aligned when the file is */
    uint64_t nbytes;
} sam3__tensor;

typedef struct sam3__file {
    const uint8_t *base;
    size_t size;
    uint32_t n_cfg, n_tensors;
    sam3__cfg *cfg;           /* (n_cfg) */
    sam3__tensor *tensors;    /* (n_tensors) in file order */
    sam3__tensor **by_name;   /* (n_tensors) sorted by name for lookup */
    char **strings;           /* (n_cfg) NUL-terminated copies of string values, or NULL */
} sam3__file;

static uint32_t sam3__rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t sam3__rd64(const uint8_t *p) { return (uint64_t)sam3__rd32(p) | ((uint64_t)sam3__rd32(p + 4) << 32); }

static int sam3__name_cmp(const char *a, size_t na, const char *b, size_t nb) {
    int c = memcmp(a, b, SAM3__MIN(na, nb));
    if (c) return c;
    return na < nb ? -1 : na > nb ? 1 : 0;
}
static int sam3__tensor_ptr_cmp(const void *x, const void *y) {
    const sam3__tensor *a = *(const sam3__tensor *const *)x, *b = *(const sam3__tensor *const *)y;
    return sam3__name_cmp(a->name, a->name_len, b->name, b->name_len);
}

static void sam3__file_free(sam3__file *f, const sam3_allocator *a) {
    uint32_t i;
    if (f->strings)
        for (i = 0; i < f->n_cfg; i++) sam3__afree(a, f->strings[i]);
    sam3__afree(a, f->strings);
    sam3__afree(a, f->cfg);
    sam3__afree(a, f->tensors);
    sam3__afree(a, f->by_name);
    memset(f, 0, sizeof(*f));
}

/* What the stages of sam3__file_parse share: the table offsets from the header (each checked to
   lie inside the file before a later stage reads through it) and where a failure's message goes. */
typedef struct sam3__fparse {
    sam3__file *f;
    const sam3_allocator *a;
    char *err;
    size_t cap;
    uint64_t cfg_off, tt_off, st_off, st_bytes, data_off;
    const uint8_t *st; /* the string table */
    uint64_t prev_end; /* where the previous tensor's data ends: the next may not start before */
    size_t sz;         /* the last byte count a tensor's shape and dtype gave (a size message quotes it) */
} sam3__fparse;

static sam3_result sam3__fparse_fail(sam3__fparse *P, sam3_result code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err, P->cap, fmt, ap);
    va_end(ap);
    return code;
}

/* The 128-byte header: magic, version, size, then the tables in order without overlap. */
static sam3_result sam3__fparse_header(sam3__fparse *P) {
    sam3__file *f = P->f;
    const uint8_t *base = f->base;
    const size_t size = f->size;
    uint64_t file_bytes;
    uint32_t version;
    if (!base || size < 4 || base[0] != 'S' || base[1] != 'A' || base[2] != 'M' || base[3] != '3')
        return sam3__fparse_fail(P, SAM3_ERR_BAD_MAGIC, "not a .sam3 file (magic is not \"SAM3\")");
    if (size < SAM3__HEADER_BYTES)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "file is %lu bytes, shorter than the %d-byte header", (unsigned long)size,
                                 SAM3__HEADER_BYTES);
    version = sam3__rd32(base + 4);
    if (version != SAM3_FILE_FORMAT_VERSION)
        return sam3__fparse_fail(P, SAM3_ERR_BAD_VERSION,
                                 "format version %u, this build reads version %d (re-convert with tools/convert.py of sam3.h %s)",
                                 version, SAM3_FILE_FORMAT_VERSION, SAM3_VERSION_STRING);
    if (sam3__rd32(base + 8) != SAM3__HEADER_BYTES || sam3__rd32(base + 12) != SAM3__ALIGN)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "header: header_bytes %u / alignment %u, expected %d / %d",
                                 sam3__rd32(base + 8), sam3__rd32(base + 12), SAM3__HEADER_BYTES, SAM3__ALIGN);
    file_bytes = sam3__rd64(base + 16);
    if (file_bytes != (uint64_t)size)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "header says %llu bytes but the file has %llu (truncated or padded?)",
                                 (unsigned long long)file_bytes, (unsigned long long)size);
    f->n_cfg = sam3__rd32(base + 24);
    f->n_tensors = sam3__rd32(base + 28);
    P->cfg_off = sam3__rd64(base + 32);
    P->tt_off = sam3__rd64(base + 40);
    P->st_off = sam3__rd64(base + 48);
    P->st_bytes = sam3__rd64(base + 56);
    P->data_off = sam3__rd64(base + 64);
    /* Tables must lie inside the file, in order, without overlap: header, config, tensors, strings. */
    if (P->cfg_off < SAM3__HEADER_BYTES || P->cfg_off > size || (uint64_t)f->n_cfg * SAM3__ENTRY_BYTES > size - P->cfg_off)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config table (offset %llu, %u entries) lies outside the file",
                                 (unsigned long long)P->cfg_off, f->n_cfg);
    if (P->tt_off < P->cfg_off + (uint64_t)f->n_cfg * SAM3__ENTRY_BYTES || P->tt_off > size ||
        (uint64_t)f->n_tensors * SAM3__ENTRY_BYTES > size - P->tt_off)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor table (offset %llu, %u entries) overlaps or lies outside the file",
                                 (unsigned long long)P->tt_off, f->n_tensors);
    if (P->st_off < P->tt_off + (uint64_t)f->n_tensors * SAM3__ENTRY_BYTES || P->st_off > size || P->st_bytes > size - P->st_off)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "string table (offset %llu, %llu bytes) overlaps or lies outside the file",
                                 (unsigned long long)P->st_off, (unsigned long long)P->st_bytes);
    if (P->data_off < P->st_off + P->st_bytes || P->data_off > size || P->data_off % SAM3__ALIGN)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "data offset %llu is misaligned, overlaps the tables or lies outside the file",
                                 (unsigned long long)P->data_off);
    P->st = base + P->st_off;
    return SAM3_OK;
}

/* Config entry i: a unique NUL-terminated key, a known type, its value inside the string table
   (strings also copied out, NUL-terminated). */
static sam3_result sam3__fparse_cfg(sam3__fparse *P, uint32_t i) {
    sam3__file *f = P->f;
    const uint8_t *e = f->base + P->cfg_off + (uint64_t)i * SAM3__ENTRY_BYTES;
    sam3__cfg *c = &f->cfg[i];
    uint32_t j;
    size_t item = 0;
    if (!memchr(e, 0, SAM3__KEY_BYTES) || e[0] == 0)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config entry %u: key is empty or not NUL-terminated", i);
    memcpy(c->key, e, SAM3__KEY_BYTES);
    c->type = sam3__rd32(e + 48);
    c->count = sam3__rd32(e + 52);
    for (j = 0; j < i; j++)
        if (strcmp(f->cfg[j].key, c->key) == 0) return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config key '%s' appears twice", c->key);
    switch (c->type) {
    case SAM3__T_I64: c->i = (int64_t)sam3__rd64(e + 56); break;
    case SAM3__T_F64: { uint64_t u = sam3__rd64(e + 56); memcpy(&c->f, &u, 8); } break;
    case SAM3__T_STR: item = 1; break;
    case SAM3__T_I64_ARRAY:
    case SAM3__T_F64_ARRAY: item = 8; break;
    default: return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config key '%s': unknown value type %u", c->key, c->type);
    }
    if ((c->type == SAM3__T_I64 || c->type == SAM3__T_F64) && c->count != 1)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config key '%s': scalar with count %u", c->key, c->count);
    if (item) {
        uint64_t off = sam3__rd64(e + 56);
        if (off > P->st_bytes || (uint64_t)c->count * item > P->st_bytes - off)
            return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "config key '%s': value (offset %llu, %u items) lies outside the string table",
                                     c->key, (unsigned long long)off, c->count);
        c->data = P->st + off;
        if (c->type == SAM3__T_STR) {
            f->strings[i] = (char *)sam3__aalloc(P->a, (size_t)c->count + 1);
            if (!f->strings[i]) return sam3__fparse_fail(P, SAM3_ERR_OUT_OF_MEMORY, "out of memory reading config strings");
            memcpy(f->strings[i], c->data, c->count);
            f->strings[i][c->count] = 0;
        }
    }
    return SAM3_OK;
}

/* Tensor entry i: its name inside the string table, ndim 1..4, a known dtype, dimensions that
   multiply out to its byte count, data aligned, inside the file and after the previous tensor's. */
static sam3_result sam3__fparse_tensor(sam3__fparse *P, uint32_t i) {
    sam3__file *f = P->f;
    const uint8_t *e = f->base + P->tt_off + (uint64_t)i * SAM3__ENTRY_BYTES;
    sam3__tensor *t = &f->tensors[i];
    uint32_t name_off = sam3__rd32(e), j;
    uint64_t off, nbytes;
    size_t elems = 1;
    t->name_len = sam3__rd32(e + 4);
    t->dtype = sam3__rd32(e + 8);
    if (name_off > P->st_bytes || t->name_len > P->st_bytes - name_off || t->name_len == 0)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor %u: name (offset %u, %u bytes) lies outside the string table", i,
                                 name_off, t->name_len);
    t->name = (const char *)P->st + name_off;
    if (sam3__rd32(e + 12) < 1 || sam3__rd32(e + 12) > 4)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s': ndim %u not in 1..4", (int)SAM3__MIN(t->name_len, 200u),
                                 t->name, sam3__rd32(e + 12));
    t->ndim = (int)sam3__rd32(e + 12);
    if (t->dtype >= SAM3__DT_COUNT)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s': unknown dtype code %u", (int)SAM3__MIN(t->name_len, 200u),
                                 t->name, t->dtype);
    for (j = 0; j < 4; j++) {
        uint64_t d = sam3__rd64(e + 16 + 8 * j);
        if ((int)j >= t->ndim ? d != 0 : d > (uint64_t)INT32_MAX)
            return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s': bad dimension %u = %llu",
                                     (int)SAM3__MIN(t->name_len, 200u), t->name, j, (unsigned long long)d);
        t->shape[j] = (int64_t)d;
        if ((int)j < t->ndim && !sam3__mul(elems, (size_t)d, &elems))
            return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s': element count overflows", (int)SAM3__MIN(t->name_len, 200u),
                                     t->name);
    }
    off = sam3__rd64(e + 48);
    nbytes = sam3__rd64(e + 56);
    if (!sam3__mul(elems, sam3__dtypes[t->dtype].size, &P->sz) || (uint64_t)P->sz != nbytes)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s': %llu data bytes, but its shape and dtype need %llu",
                                 (int)SAM3__MIN(t->name_len, 200u), t->name, (unsigned long long)nbytes, (unsigned long long)P->sz);
    if (off % SAM3__ALIGN || off < P->prev_end || off > f->size || nbytes > f->size - off)
        return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE,
                                 "tensor '%.*s': data (offset %llu, %llu bytes) is misaligned, overlaps the previous tensor or lies outside the file",
                                 (int)SAM3__MIN(t->name_len, 200u), t->name, (unsigned long long)off, (unsigned long long)nbytes);
    P->prev_end = off + nbytes;
    t->data = f->base + off;
    t->nbytes = nbytes;
    f->by_name[i] = t;
    return SAM3_OK;
}

/* The tables, then the name index (sorted for sam3__file_find), which also finds a name twice. */
static sam3_result sam3__fparse_tables(sam3__fparse *P) {
    sam3__file *f = P->f;
    const sam3_allocator *a = P->a;
    sam3_result rc;
    uint32_t i;
    f->cfg = (sam3__cfg *)sam3__acalloc(a, f->n_cfg, sizeof(sam3__cfg));
    f->strings = (char **)sam3__acalloc(a, f->n_cfg, sizeof(char *));
    f->tensors = (sam3__tensor *)sam3__acalloc(a, f->n_tensors, sizeof(sam3__tensor));
    f->by_name = (sam3__tensor **)sam3__acalloc(a, f->n_tensors, sizeof(sam3__tensor *));
    if (!f->cfg || !f->strings || !f->tensors || !f->by_name)
        return sam3__fparse_fail(P, SAM3_ERR_OUT_OF_MEMORY, "out of memory reading the tables");
    for (i = 0; i < f->n_cfg; i++)
        if ((rc = sam3__fparse_cfg(P, i)) != SAM3_OK) return rc;
    P->prev_end = P->data_off;
    for (i = 0; i < f->n_tensors; i++)
        if ((rc = sam3__fparse_tensor(P, i)) != SAM3_OK) return rc;
    if (f->n_tensors) qsort(f->by_name, f->n_tensors, sizeof(sam3__tensor *), sam3__tensor_ptr_cmp);
    for (i = 1; i < f->n_tensors; i++)
        if (sam3__tensor_ptr_cmp(&f->by_name[i - 1], &f->by_name[i]) == 0)
            return sam3__fparse_fail(P, SAM3_ERR_CORRUPT_FILE, "tensor '%.*s' appears twice", (int)SAM3__MIN(f->by_name[i]->name_len, 200u),
                                     f->by_name[i]->name);
    return SAM3_OK;
}

/* Parses and validates the container. On failure returns the error code and writes a message. */
static sam3_result sam3__file_parse(sam3__file *f, const uint8_t *base, size_t size, const sam3_allocator *a,
                                    char *err, size_t cap) {
    sam3__fparse P;
    sam3_result rc;
    memset(f, 0, sizeof(*f));
    memset(&P, 0, sizeof(P));
    f->base = base;
    f->size = size;
    P.f = f;
    P.a = a;
    P.err = err;
    P.cap = cap;
    rc = sam3__fparse_header(&P);
    if (rc == SAM3_OK) rc = sam3__fparse_tables(&P);
    if (rc != SAM3_OK) sam3__file_free(f, a);
    return rc;
}

static const sam3__tensor *sam3__file_find(const sam3__file *f, const char *name) {
    size_t lo = 0, hi = f->n_tensors, n = strlen(name);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = sam3__name_cmp(f->by_name[mid]->name, f->by_name[mid]->name_len, name, n);
        if (c == 0) return f->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static const sam3__cfg *sam3__file_cfg(const sam3__file *f, const char *key) {
    uint32_t i;
    for (i = 0; i < f->n_cfg; i++)
        if (strcmp(f->cfg[i].key, key) == 0) return &f->cfg[i];
    return NULL;
}

/* Per-tensor checksums (config key "file.checksums.mx64": one i64 per tensor, in table order;
   files without it load, and verify checks finiteness only). mx64 of n bytes, read as
   little-endian u64 words w[i] (the last one zero-extended):
       s = sum over i of mix((w[i] ^ (i * K1)) * K2)  mod 2^64,   mix(x) = x ^ (x >> 32)
       h = mix((s ^ n) * K2)
   Every word is mixed independently, so numpy computes it in vectorised passes (the converter)
   and C at memory speed; one changed word always changes the sum (both steps are bijections).
   A check against accidents (bit rot, truncated copies), not against an attacker, who could
   rewrite the checksums as well. */
#define SAM3__MX64_K1 0x9E3779B97F4A7C15ull
#define SAM3__MX64_K2 0xD6E8FEB86659FD93ull
typedef struct sam3__mx64_state { uint64_t s, i; } sam3__mx64_state;
/* Adds nbytes (a multiple of 8 except in the last call) to the running sum. */
static void sam3__mx64_update(sam3__mx64_state *st, const uint8_t *p, size_t nbytes) {
    uint64_t s = st->s, i = st->i, w, x;
    size_t k, nw = nbytes / 8;
    for (k = 0; k < nw; k++) {
        memcpy(&w, p + 8 * k, 8); /* little-endian hosts only, as the weights themselves */
        x = (w ^ ((i + k) * SAM3__MX64_K1)) * SAM3__MX64_K2;
        s += x ^ (x >> 32);
    }
    i += nw;
    if (nbytes % 8) {
        w = 0;
        memcpy(&w, p + 8 * nw, nbytes % 8);
        x = (w ^ (i * SAM3__MX64_K1)) * SAM3__MX64_K2;
        s += x ^ (x >> 32);
        i++;
    }
    st->s = s;
    st->i = i;
}
static uint64_t sam3__mx64_final(const sam3__mx64_state *st, uint64_t nbytes) {
    uint64_t h = (st->s ^ nbytes) * SAM3__MX64_K2;
    return h ^ (h >> 32);
}

/* 1 when one of the n bytes at p, read as dtype, is a NaN or an infinity (f32, f16, bf16 only). */
static int sam3__any_nonfinite(const uint8_t *p, size_t n, uint32_t dt) {
    size_t k;
    if (dt == SAM3__DT_F32) {
        uint32_t u, b = 0;
        for (k = 0; k + 4 <= n; k += 4) {
            memcpy(&u, p + k, 4);
            b |= (u & 0x7f800000u) == 0x7f800000u;
        }
        return (int)b;
    }
    if (dt == SAM3__DT_F16 || dt == SAM3__DT_BF16) {
        const uint16_t e = dt == SAM3__DT_F16 ? 0x7c00u : 0x7f80u;
        uint16_t u, b = 0;
        for (k = 0; k + 2 <= n; k += 2) {
            memcpy(&u, p + k, 2);
            b |= (u & e) == e;
        }
        return (int)b;
    }
    return 0;
}

/* At every load: the 1-D float tensors (norms, biases, scales; a few MB in the 840M model) hold
   no NaN or infinity, which would otherwise silently empty every result. Larger weights are read
   only by verify. SAM3_OK, or SAM3_ERR_CORRUPT_FILE naming the tensor. */
#define SAM3__SMALL_TENSOR_BYTES (1u << 20)
static sam3_result sam3__file_check_small(const sam3__file *f, char *err, size_t cap) {
    uint32_t i;
    for (i = 0; i < f->n_tensors; i++) {
        const sam3__tensor *t = &f->tensors[i];
        if (t->ndim == 1 && t->nbytes <= SAM3__SMALL_TENSOR_BYTES && sam3__any_nonfinite((const uint8_t *)t->data, (size_t)t->nbytes, t->dtype)) {
            snprintf(err, cap, "tensor '%.*s': a weight is NaN or infinite (the file or the checkpoint it came from is damaged)",
                     (int)SAM3__MIN(t->name_len, 200u), t->name);
            return SAM3_ERR_CORRUPT_FILE;
        }
    }
    return SAM3_OK;
}

/* The checksum of the header and tables (header bytes 72..79): mx64 of every byte before the
   data (the magic included) with those 8 bytes read as zero, its top and bottom bits set, so that
   no single flipped bit turns it into 0, which stands for "none" (an older converter). */
#define SAM3__META_CHECKSUM_AT 72
static uint64_t sam3__file_meta_checksum(const sam3__file *f) {
    const uint64_t data_off = sam3__rd64(f->base + 64); /* <= size: checked by the parser */
    static const uint8_t zero[8] = {0};
    sam3__mx64_state st;
    st.s = st.i = 0;
    sam3__mx64_update(&st, f->base, SAM3__META_CHECKSUM_AT);
    sam3__mx64_update(&st, zero, 8);
    sam3__mx64_update(&st, f->base + SAM3__META_CHECKSUM_AT + 8, (size_t)data_off - SAM3__META_CHECKSUM_AT - 8);
    return sam3__mx64_final(&st, data_off) | 0x8000000000000001ull;
}

/* Reads every byte of the file once: each tensor's checksum when the file has them and that
   every f32/f16/bf16 value is finite, then that the padding between tensors is zero, and the
   header's and tables' checksum. SAM3_OK, or SAM3_ERR_CORRUPT_FILE with the first bad tensor
   named in err. *n_checked: the tensor checksums matched; *meta: the header's matched (0: the
   file has none). */
static sam3_result sam3__file_verify(const sam3__file *f, char *err, size_t cap, int *n_checked, int *meta) {
    const sam3__cfg *ck = sam3__file_cfg(f, "file.checksums.mx64");
    const uint64_t meta_want = sam3__rd64(f->base + SAM3__META_CHECKSUM_AT);
    uint64_t pos = sam3__rd64(f->base + 64);
    uint32_t i;
    *n_checked = *meta = 0;
    if (meta_want && !ck) {
        snprintf(err, cap, "the header records checksums but config key 'file.checksums.mx64' is missing (the file is damaged)");
        return SAM3_ERR_CORRUPT_FILE;
    }
    if (ck && (ck->type != SAM3__T_I64_ARRAY || ck->count != f->n_tensors)) {
        snprintf(err, cap, "config key 'file.checksums.mx64' must be an i64 array of %u entries (one per tensor)", f->n_tensors);
        return SAM3_ERR_CORRUPT_FILE;
    }
    for (i = 0; i < f->n_tensors; i++) {
        const sam3__tensor *t = &f->tensors[i];
        const uint8_t *p = (const uint8_t *)t->data;
        const uint64_t nb = t->nbytes;
        const uint32_t dt = t->dtype;
        sam3__mx64_state st;
        uint64_t off = 0, bad = 0;
        st.s = st.i = 0;
        /* in 64 KB pieces, each hashed and checked while it is in L1/L2 */
        while (off < nb && !bad) {
            const size_t n = (size_t)SAM3__MIN(nb - off, (uint64_t)65536);
            size_t k;
            if (ck) sam3__mx64_update(&st, p + off, n);
            if (dt == SAM3__DT_F32) {
                uint32_t u, b = 0;
                for (k = 0; k + 4 <= n; k += 4) {
                    memcpy(&u, p + off + k, 4);
                    b |= (u & 0x7f800000u) == 0x7f800000u;
                }
                bad = b;
            } else if (dt == SAM3__DT_F16 || dt == SAM3__DT_BF16) {
                const uint16_t e = dt == SAM3__DT_F16 ? 0x7c00u : 0x7f80u;
                uint16_t u, b = 0;
                for (k = 0; k + 2 <= n; k += 2) {
                    memcpy(&u, p + off + k, 2);
                    b |= (u & e) == e;
                }
                bad = b;
            }
            off += n;
        }
        if (bad) {
            snprintf(err, cap, "tensor '%.*s': a weight is NaN or infinite", (int)SAM3__MIN(t->name_len, 200u), t->name);
            return SAM3_ERR_CORRUPT_FILE;
        }
        if (ck) {
            const uint64_t want = sam3__rd64(ck->data + 8 * (size_t)i), got = sam3__mx64_final(&st, nb);
            if (got != want) {
                snprintf(err, cap, "tensor '%.*s': checksum %016llx, the file records %016llx (the data is damaged)",
                         (int)SAM3__MIN(t->name_len, 200u), t->name, (unsigned long long)got, (unsigned long long)want);
                return SAM3_ERR_CORRUPT_FILE;
            }
            (*n_checked)++;
        }
    }
    for (i = 0; i <= f->n_tensors; i++) { /* the padding: from each tensor's end to the next one (or the file's end) */
        const uint64_t end = i < f->n_tensors ? (uint64_t)((const uint8_t *)f->tensors[i].data - f->base) : (uint64_t)f->size;
        for (; pos < end; pos++)
            if (f->base[pos]) {
                snprintf(err, cap, "byte %llu, between tensors, is not zero (the file is damaged)", (unsigned long long)pos);
                return SAM3_ERR_CORRUPT_FILE;
            }
        if (i < f->n_tensors) pos = end + f->tensors[i].nbytes;
    }
    if (meta_want) {
        const uint64_t got = sam3__file_meta_checksum(f);
        if (got != meta_want) {
            snprintf(err, cap, "the header and tables: checksum %016llx, the file records %016llx (config or tables damaged)",
                     (unsigned long long)got, (unsigned long long)meta_want);
            return SAM3_ERR_CORRUPT_FILE;
        }
        *meta = 1;
    }
    return SAM3_OK;
}

/* ==== sam3: tokenizer ==== */
/*
 * CLIP byte-level BPE, reproducing transformers 5.17 `CLIPTokenizer` (tokenizers backend) on
 * any UTF-8 input.  Needs <stddef.h>, <stdint.h>, <string.h>.
 *
 * Interface
 *   sam3__bpe                 read-only after sam3__bpe_init; shareable across threads.
 *   sam3__bpe_memory_required(n_vocab, n_merges)
 *                             bytes of lookup tables sam3__bpe_init needs (0: sizes invalid).
 *   sam3__bpe_init(b, bytes, n_bytes, offsets, n_vocab, merges, n_merges, bos_id, eos_id,
 *                  mem, mem_bytes, err, err_cap)
 *                             validates the tables (offsets start at 0, strictly increase and
 *                             end at n_bytes; no two tokens equal; merge ids in range and each
 *                             merged token the concatenation of its pair; bos/eos are the
 *                             <|startoftext|>/<|endoftext|> strings) and builds the hashes in
 *                             `mem` (4-aligned, >= sam3__bpe_memory_required bytes).  mem,
 *                             bytes, offsets and merges must outlive b.  0 = ok; -1 = bad
 *                             tables or args, with a message in err (NUL-terminated when
 *                             err_cap > 0).
 *   sam3__bpe_encode(b, text, len, ids, max_ids, &n_ids, &n_full, &truncated,
 *                    alloc, free_fn, user)
 *                             ids = BOS, tokens..., EOS.  At most max_ids (>= 2) are written;
 *                             when more are needed, the first max_ids - 1 are kept, then EOS,
 *                             and *truncated = 1.  *n_full = untruncated length.  n_full and
 *                             truncated may be NULL.  len <= SAM3__TOK_MAX_BYTES.  Working memory
 *                             comes from alloc and is freed before returning: 12 bytes per
 *                             input byte, plus 28 bytes per byte of the longest pre-token
 *                             after normalization (a 1 MB prompt of one invalid-UTF-8 "word"
 *                             peaks at 96 MB).  Returns 0 ok, -1 out of memory, -2 bad args.
 *
 * Pipeline (HF: AddedVocabulary, normalizers.Sequence, pre_tokenizers.Sequence, BPE model):
 *   1. UTF-8 -> code points; each maximal ill-formed subsequence becomes U+FFFD, exactly as
 *      Python's bytes.decode("utf-8", "replace") does (the golden ids come from Python str).
 *   2. Special tokens `<|startoftext|>` / `<|endoftext|>` -> bos_id / eos_id.  A special token
 *      whose SAM3__TOK_*_NORMALIZED is 0 is matched on the raw text, which is then split
 *      around it and each piece normalized separately; one whose flag is 1 is matched on the
 *      normalized text of each piece (AddedVocabulary::extract_and_normalize).
 *   3. Normalize: NFC (Unicode 9.0 data, like tokenizers' unicode-normalization-alignments),
 *      every run of \s -> one space, lowercase one code point at a time (Rust
 *      char::to_lowercase: full mapping, no final-sigma context).
 *   4. Pre-tokenize, left to right, dropping what no alternative matches (whitespace):
 *      <\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
 *      The ByteLevel pre-tokenizer's GPT-2 split that follows changes none of these pieces
 *      except a special-token string that step 2 did not take: it becomes "<|", the letters,
 *      "|>".
 *   5. Each piece's UTF-8 bytes -> GPT-2 bytes_to_unicode chars -> initial symbols, "</w>"
 *      appended to the last; a symbol missing from the vocab becomes the unk token, which
 *      for CLIP is <|endoftext|> = eos_id (cannot happen with CLIP's vocab, which has all
 *      512 byte symbols).
 *   6. BPE exactly as tokenizers' Word::merge_all: a min-heap of (rank, position); an entry
 *      is stale when its left symbol is gone, has no right neighbour, or the current pair's
 *      merged id differs from the entry's.  O(n log n) per piece.
 * Unicode tables: see tools/gen_unicode_tables.py.
 */

/* ---- special-token matching ----
 * 0: the token is matched on the raw text only (added token `normalized: false`), so
 *    "<|StartOfText|>" goes through BPE as "<|", "startoftext", "|>".
 * 1: matched after normalization (`normalized: true`), so "<|StartOfText|>" is the token too.
 * transformers 5.17's CLIPTokenizer built from vocab.json + merges.txt gives 0 for both
 * (tests/data/tokenizer_golden_*.txt: "<|StartOfText|>" and "<|startofText|>." settle
 * <|startoftext|>, "<|ENDOFTEXT|>", "cat<|EndOfText|>!!" and "<|endoftext|>\u0338" settle
 * <|endoftext|>).  A tokenizer_config.json whose added_tokens_decoder says `normalized: true`
 * would flip them.  "cat<|EndOfText|>!!" also shows the pre-tokenizer regex carries the
 * special-token alternatives (without them "|>!!" would stay one piece). */
#ifndef SAM3__TOK_BOS_NORMALIZED
#define SAM3__TOK_BOS_NORMALIZED 0
#endif
#ifndef SAM3__TOK_EOS_NORMALIZED
#define SAM3__TOK_EOS_NORMALIZED 0
#endif

#define SAM3__TOK_MAX_BYTES ((size_t)1 << 28)  /* keeps every count below INT_MAX */
#define SAM3__TOK_MAX_VOCAB (1 << 26)         /* keeps the hash capacities in int32 range */
#define SAM3__UC_MAX_DECOMP 4                 /* longest full canonical decomposition */

/* ---- Unicode lookups ----
   Declared here, defined at the end of the file after the generated tables they read (C++ has no
   declaration of a static array ahead of its definition). */

#define SAM3__UC_OTHER 0
#define SAM3__UC_LETTER 1
#define SAM3__UC_NUMBER 2
#define SAM3__UC_SPACE 3
#define SAM3__UC_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Hangul syllable arithmetic (Unicode 3.12), as tokenizers' NFC does it. */
#define SAM3__HANGUL_S 0xAC00u
#define SAM3__HANGUL_L 0x1100u
#define SAM3__HANGUL_V 0x1161u
#define SAM3__HANGUL_T 0x11A7u
#define SAM3__HANGUL_LN 19u
#define SAM3__HANGUL_VN 21u
#define SAM3__HANGUL_TN 28u
#define SAM3__HANGUL_SN (SAM3__HANGUL_LN * SAM3__HANGUL_VN * SAM3__HANGUL_TN)

static int sam3__uc_class_of(uint32_t cp);
static int sam3__uc_ccc_of(uint32_t cp);
static int sam3__uc_lower(uint32_t cp, uint32_t *out);
static int sam3__uc_decompose(uint32_t cp, uint32_t *out);
static uint32_t sam3__uc_compose(uint32_t a, uint32_t b);

/* ---- normalization ---- */

/* Stable sort of a run of non-starters by combining class.  Runs are almost always 1-3
   long (insertion sort); a long run (adversarial input) uses a counting sort through
   tmp (n) so the whole normalization stays O(n). */
static void sam3__nfc_sort_run(uint32_t *cp, size_t n, uint32_t *tmp)
{
    size_t i, j;
    if (n < 2) return;
    if (n <= 32) {
        for (i = 1; i < n; i++) {
            uint32_t c = cp[i];
            int k = sam3__uc_ccc_of(c);
            for (j = i; j > 0 && sam3__uc_ccc_of(cp[j - 1]) > k; j--) cp[j] = cp[j - 1];
            cp[j] = c;
        }
    } else {
        size_t start[257]; /* start[k]: first output slot of class k */
        memset(start, 0, sizeof(start));
        for (i = 0; i < n; i++) start[sam3__uc_ccc_of(cp[i]) + 1]++;
        for (i = 1; i < 257; i++) start[i] += start[i - 1];
        for (i = 0; i < n; i++) tmp[start[sam3__uc_ccc_of(cp[i])]++] = cp[i];
        memcpy(cp, tmp, n * sizeof(*cp));
    }
}

/* Full decomposition length of in[0..n): an upper bound for the NFC output. */
static size_t sam3__nfc_bound(const uint32_t *in, size_t n)
{
    size_t i, total = 0;
    uint32_t tmp[SAM3__UC_MAX_DECOMP];
    for (i = 0; i < n; i++) total += in[i] < 0xC0 ? 1u : (size_t)sam3__uc_decompose(in[i], tmp);
    return total;
}

/* NFC of in[0..n) into out (capacity >= 2 * sam3__nfc_bound(in, n): the upper half is sort
   scratch).  Composition follows tokenizers' Recompositions step by step. */
static size_t sam3__nfc(const uint32_t *in, size_t n, uint32_t *out, size_t bound)
{
    size_t i, o = 0, r, starter = 0;
    int have_starter = 0, last_ccc = -1; /* -1: nothing between the starter and here */
    for (i = 0; i < n; i++) {
        if (in[i] < 0xC0) out[o++] = in[i];
        else o += (size_t)sam3__uc_decompose(in[i], out + o);
    }
    for (i = 0; i < o;) {
        size_t j = i;
        while (j < o && sam3__uc_ccc_of(out[j]) != 0) j++;
        if (j > i) sam3__nfc_sort_run(out + i, j - i, out + bound);
        i = j + 1;
    }
    n = o;
    for (i = 0, r = 0; r < n; r++) {
        uint32_t ch = out[r], comp;
        int cc = sam3__uc_ccc_of(ch);
        if (!have_starter) {
            out[i++] = ch;
            if (cc == 0) { have_starter = 1; starter = i - 1; last_ccc = -1; }
            continue;
        }
        if (last_ccc >= cc && last_ccc != -1) {   /* blocked from the starter */
            if (cc == 0) { starter = i; last_ccc = -1; }
            else last_ccc = cc;
            out[i++] = ch;
            continue;
        }
        comp = sam3__uc_compose(out[starter], ch);
        if (comp) { out[starter] = comp; continue; }
        if (cc == 0 && last_ccc == -1) { starter = i; out[i++] = ch; continue; }
        last_ccc = cc;
        out[i++] = ch;
    }
    return i;
}

/* NFC, whitespace runs -> ' ', lowercase: in[0..n) -> out (capacity 2 * bound, bound =
   sam3__nfc_bound(in, n)).  Returns the length. */
static size_t sam3__tok_normalize(const uint32_t *in, size_t n, uint32_t *out, size_t bound)
{
    size_t i, m, grown;
    int in_space = 0;
    m = sam3__nfc(in, n, out, bound);
    for (i = 0, n = m, m = 0; i < n; i++) {
        if (sam3__uc_class_of(out[i]) == SAM3__UC_SPACE) {
            if (!in_space) out[m++] = ' ';
            in_space = 1;
        } else {
            out[m++] = out[i];
            in_space = 0;
        }
    }
    /* lowercase in place; U+0130 grows by one, so expand from the back when needed */
    for (i = 0, grown = m; i < m; i++) {
        uint32_t lw[2];
        if (out[i] >= 0x80) grown += (size_t)sam3__uc_lower(out[i], lw) - 1;
    }
    if (grown == m) {
        for (i = 0; i < m; i++) {
            uint32_t lw[2];
            sam3__uc_lower(out[i], lw);
            out[i] = lw[0];
        }
    } else {
        size_t w = grown; /* grown <= 2 * m <= 2 * bound */
        for (i = m; i-- > 0;) {
            uint32_t lw[2];
            int k = sam3__uc_lower(out[i], lw);
            if (k == 2) out[--w] = lw[1];
            out[--w] = lw[0];
        }
    }
    return grown;
}

/* ---- UTF-8 ---- */

/* Decode one code point at s[*i]; invalid input yields U+FFFD for each maximal subpart
   of an ill-formed sequence (Unicode 3.9 / Python's "replace"). */
static uint32_t sam3__utf8_next(const uint8_t *s, size_t n, size_t *i)
{
    uint32_t c, b0 = s[*i];
    unsigned lo = 0x80, hi = 0xBF;
    int need, k;
    size_t j = *i + 1;
    if (b0 < 0x80) { *i = j; return b0; }
    if (b0 < 0xC2 || b0 > 0xF4) { *i = j; return 0xFFFD; }
    if (b0 < 0xE0) { need = 1; c = b0 & 0x1F; }
    else if (b0 < 0xF0) {
        need = 2; c = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F; /* no surrogates */
    } else {
        need = 3; c = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    }
    for (k = 0; k < need; k++) {
        unsigned b;
        if (j >= n) { *i = j; return 0xFFFD; }
        b = s[j];
        if (b < lo || b > hi) { *i = j; return 0xFFFD; }
        c = (c << 6) | (b & 0x3F);
        lo = 0x80; hi = 0xBF;
        j++;
    }
    *i = j;
    return c;
}

static int sam3__utf8_put(uint32_t c, uint8_t *out)
{
    if (c < 0x80) { out[0] = (uint8_t)c; return 1; }
    if (c < 0x800) { out[0] = (uint8_t)(0xC0 | (c >> 6)); out[1] = (uint8_t)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (c >> 12)); out[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (c >> 18)); out[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)); out[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

/* ---- vocabulary and merge tables ---- */

typedef struct sam3__bpe {            /* read-only after init; shareable across threads */
    const uint8_t *bytes;             /* (offsets[n_vocab]) concatenated vocab.json token strings */
    const int32_t *offsets;           /* (n_vocab + 1) token i = bytes[offsets[i] .. offsets[i+1]) */
    const int32_t *merges;            /* (n_merges, 3) left id, right id, merged id; row = rank */
    int n_vocab, n_merges, bos_id, eos_id;
    int unk_id;                       /* CLIP's unk token is <|endoftext|>: eos_id */
    int32_t *vocab_hash;              /* (vocab_mask + 1) token id or -1, keyed by token bytes */
    int32_t *merge_hash;              /* (merge_mask + 1) rank or -1, keyed by (left, right) */
    uint32_t vocab_mask, merge_mask;
    int32_t byte_id[2][256];          /* [eow][byte]: id of the byte's char (+ "</w>"), -1 if absent */
} sam3__bpe;

static const char sam3__tok_bos_text[] = "<|startoftext|>";
static const char sam3__tok_eos_text[] = "<|endoftext|>";

static uint32_t sam3__tok_hash_bytes(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint32_t sam3__tok_hash_pair(int32_t a, int32_t b)
{
    uint32_t h = (uint32_t)a * 0x9E3779B1u ^ ((uint32_t)b + 0x7F4A7C15u) * 0x85EBCA77u;
    return h ^ (h >> 15);
}

/* Power of two >= 2 * n (n <= SAM3__TOK_MAX_VOCAB), at least 16. */
static uint32_t sam3__tok_hash_cap(int n)
{
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n) cap <<= 1;
    return cap;
}

static size_t sam3__bpe_memory_required(int n_vocab, int n_merges)
{
    if (n_vocab < 1 || n_vocab > SAM3__TOK_MAX_VOCAB || n_merges < 0 || n_merges > SAM3__TOK_MAX_VOCAB)
        return 0;
    return ((size_t)sam3__tok_hash_cap(n_vocab) + sam3__tok_hash_cap(n_merges)) * sizeof(int32_t);
}

/* Token id of the byte string p[0..n), or -1. */
static int32_t sam3__bpe_find(const sam3__bpe *b, const uint8_t *p, size_t n)
{
    uint32_t h = sam3__tok_hash_bytes(p, n) & b->vocab_mask;
    for (;;) {
        int32_t id = b->vocab_hash[h];
        if (id < 0) return -1;
        if ((size_t)(b->offsets[id + 1] - b->offsets[id]) == n &&
            memcmp(b->bytes + b->offsets[id], p, n) == 0)
            return id;
        h = (h + 1) & b->vocab_mask;
    }
}

/* Rank of the merge (left, right), or -1. */
static int32_t sam3__bpe_rank(const sam3__bpe *b, int32_t left, int32_t right)
{
    uint32_t h = sam3__tok_hash_pair(left, right) & b->merge_mask;
    for (;;) {
        int32_t r = b->merge_hash[h];
        if (r < 0) return -1;
        if (b->merges[3 * (size_t)r] == left && b->merges[3 * (size_t)r + 1] == right) return r;
        h = (h + 1) & b->merge_mask;
    }
}

/* Writes msg into err, replacing each "%d" with the next of a, b, c (no stdio). */
static void sam3__tok_err(char *err, size_t cap, const char *msg, long a, long b, long c)
{
    long args[3];
    size_t o = 0;
    int na = 0;
    args[0] = a; args[1] = b; args[2] = c;
    if (!err || cap == 0) return;
    for (; *msg && o + 1 < cap; msg++) {
        if (msg[0] == '%' && msg[1] == 'd' && na < 3) {
            char digits[24];
            int nd = 0;
            long v = args[na++];
            unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
            do { digits[nd++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
            if (v < 0 && o + 1 < cap) err[o++] = '-';
            while (nd > 0 && o + 1 < cap) err[o++] = digits[--nd];
            msg++;
        } else {
            err[o++] = *msg;
        }
    }
    err[o] = 0;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes
   to U+0100.. in byte order. */
static uint32_t sam3__tok_byte_char(int byte)
{
    int k, n = 0;
    if ((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF))
        return (uint32_t)byte;
    for (k = 0; k < byte; k++)
        if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) n++;
    return 0x100u + (uint32_t)n;
}

static int sam3__bpe_init(sam3__bpe *b, const uint8_t *bytes, size_t n_bytes, const int32_t *offsets, int n_vocab,
                          const int32_t *merges, int n_merges, int bos_id, int eos_id,
                          void *mem, size_t mem_bytes, char *err, size_t err_cap)
{
    size_t need = sam3__bpe_memory_required(n_vocab, n_merges), i;
    uint32_t h;
    int id, e;
    if (err && err_cap) err[0] = 0;
    if (!b || !offsets || (n_merges > 0 && !merges) || !mem) {
        sam3__tok_err(err, err_cap, "tokenizer: NULL argument", 0, 0, 0);
        return -1;
    }
    if (need == 0) {
        sam3__tok_err(err, err_cap, "tokenizer: bad sizes (n_vocab %d, n_merges %d)", n_vocab, n_merges, 0);
        return -1;
    }
    if (mem_bytes < need || ((uintptr_t)mem & 3u) != 0) {
        sam3__tok_err(err, err_cap, "tokenizer: table memory too small or misaligned (%d bytes, need %d)",
                      (long)mem_bytes, (long)need, 0);
        return -1;
    }
    memset(b, 0, sizeof(*b));
    b->bytes = bytes;
    b->offsets = offsets;
    b->merges = merges;
    b->n_vocab = n_vocab;
    b->n_merges = n_merges;
    b->bos_id = bos_id;
    b->eos_id = eos_id;
    b->unk_id = eos_id;
    b->vocab_mask = sam3__tok_hash_cap(n_vocab) - 1;
    b->merge_mask = sam3__tok_hash_cap(n_merges) - 1;
    b->vocab_hash = (int32_t *)mem;
    b->merge_hash = b->vocab_hash + b->vocab_mask + 1;
    memset(mem, 0xFF, need); /* every slot -1 */

    if (offsets[0] != 0 || offsets[n_vocab] < 0 || (size_t)offsets[n_vocab] != n_bytes || (n_bytes && !bytes)) {
        sam3__tok_err(err, err_cap, "tokenizer: vocab offsets run from %d to %d, expected 0 to the %d bytes",
                      offsets[0], offsets[n_vocab], (long)n_bytes);
        return -1;
    }
    for (id = 0; id < n_vocab; id++) {
        int32_t lo = offsets[id], hi = offsets[id + 1], other;
        if (hi <= lo || (size_t)hi > n_bytes) { /* lo >= 0 by induction from offsets[0] == 0 */
            sam3__tok_err(err, err_cap, "tokenizer: token %d is empty, or its offsets decrease or pass the bytes (%d -> %d)", id, lo, hi);
            return -1;
        }
        h = sam3__tok_hash_bytes(bytes + lo, (size_t)(hi - lo)) & b->vocab_mask;
        for (;;) {
            other = b->vocab_hash[h];
            if (other < 0) break;
            if (offsets[other + 1] - offsets[other] == hi - lo &&
                memcmp(bytes + offsets[other], bytes + lo, (size_t)(hi - lo)) == 0) {
                sam3__tok_err(err, err_cap, "tokenizer: tokens %d and %d are the same string", other, id, 0);
                return -1;
            }
            h = (h + 1) & b->vocab_mask;
        }
        b->vocab_hash[h] = id;
    }
    if (bos_id < 0 || bos_id >= n_vocab || eos_id < 0 || eos_id >= n_vocab) {
        sam3__tok_err(err, err_cap, "tokenizer: bos %d / eos %d outside the vocab (%d)", bos_id, eos_id, n_vocab);
        return -1;
    }
    if (sam3__bpe_find(b, (const uint8_t *)sam3__tok_bos_text, sizeof(sam3__tok_bos_text) - 1) != bos_id ||
        sam3__bpe_find(b, (const uint8_t *)sam3__tok_eos_text, sizeof(sam3__tok_eos_text) - 1) != eos_id) {
        sam3__tok_err(err, err_cap, "tokenizer: token %d / %d are not <|startoftext|> / <|endoftext|>",
                      bos_id, eos_id, 0);
        return -1;
    }
    for (e = 0; e < n_merges; e++) {
        int32_t l = merges[3 * (size_t)e], r = merges[3 * (size_t)e + 1], m = merges[3 * (size_t)e + 2];
        size_t ll, rl;
        if (l < 0 || l >= n_vocab || r < 0 || r >= n_vocab || m < 0 || m >= n_vocab) {
            sam3__tok_err(err, err_cap, "tokenizer: merge %d has an id outside the vocab (%d)", e, n_vocab, 0);
            return -1;
        }
        ll = (size_t)(offsets[l + 1] - offsets[l]);
        rl = (size_t)(offsets[r + 1] - offsets[r]);
        if ((size_t)(offsets[m + 1] - offsets[m]) != ll + rl ||
            memcmp(bytes + offsets[m], bytes + offsets[l], ll) != 0 ||
            memcmp(bytes + offsets[m] + ll, bytes + offsets[r], rl) != 0) {
            sam3__tok_err(err, err_cap, "tokenizer: merge %d: token %d is not its pair's concatenation", e, m, 0);
            return -1;
        }
        h = sam3__tok_hash_pair(l, r) & b->merge_mask;
        for (;;) {
            int32_t other = b->merge_hash[h];
            /* a repeated pair keeps its last rank, as tokenizers' merge HashMap does */
            if (other < 0 || (merges[3 * (size_t)other] == l && merges[3 * (size_t)other + 1] == r)) break;
            h = (h + 1) & b->merge_mask;
        }
        b->merge_hash[h] = e;
    }
    for (i = 0; i < 256; i++) {
        uint8_t s[8];
        int n = sam3__utf8_put(sam3__tok_byte_char((int)i), s);
        memcpy(s + n, "</w>", 4);
        b->byte_id[0][i] = sam3__bpe_find(b, s, (size_t)n);
        b->byte_id[1][i] = sam3__bpe_find(b, s, (size_t)n + 4);
    }
    return 0;
}

/* ---- encoding ---- */

typedef struct sam3__tok_run {
    const sam3__bpe *b;
    int32_t *ids;          /* (max_ids) caller's output */
    int max_ids;
    size_t n_tok;          /* ids produced so far, BOS included */
    int32_t *sym;          /* (cap) symbol ids; -1 = merged into its left neighbour */
    int32_t *prev, *next;  /* (cap) linked list over sym */
    uint64_t *heap;        /* (2 * cap) (rank << 32) | position, a min-heap */
    size_t cap;
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free_fn)(void *p, void *user);
    void *user;
} sam3__tok_run;

static void sam3__tok_emit(sam3__tok_run *t, int32_t id)
{
    if (t->n_tok < (size_t)t->max_ids - 1) t->ids[t->n_tok] = id;
    t->n_tok++;
}

static void *sam3__tok_alloc(sam3__tok_run *t, size_t count, size_t size)
{
    if (count == 0 || count > (size_t)-1 / size) return NULL;
    return t->alloc(count * size, 8, t->user);
}

static void sam3__tok_free(sam3__tok_run *t, void *p)
{
    if (p) t->free_fn(p, t->user);
}

/* Make room for a word of n symbols; 0 ok, -1 out of memory.  The heap never holds more
   than 2n entries: it starts with at most n - 1, and each of the at most n - 1 merges pops
   one entry and pushes at most two. */
static int sam3__tok_reserve(sam3__tok_run *t, size_t n)
{
    size_t cap = t->cap + t->cap / 2; /* geometric growth: O(n) total over increasing words */
    if (n <= t->cap) return 0;
    if (cap < n) cap = n;
    if (cap < 64) cap = 64;
    if (cap > (size_t)-1 / 4) return -1;
    sam3__tok_free(t, t->sym); sam3__tok_free(t, t->prev); sam3__tok_free(t, t->next);
    sam3__tok_free(t, t->heap);
    t->sym = (int32_t *)sam3__tok_alloc(t, cap, sizeof(int32_t));
    t->prev = (int32_t *)sam3__tok_alloc(t, cap, sizeof(int32_t));
    t->next = (int32_t *)sam3__tok_alloc(t, cap, sizeof(int32_t));
    t->heap = (uint64_t *)sam3__tok_alloc(t, 2 * cap, sizeof(uint64_t));
    t->cap = cap;
    if (!t->sym || !t->prev || !t->next || !t->heap) return -1;
    return 0;
}

static int sam3__tok_push(sam3__tok_run *t, size_t *len, uint32_t rank, size_t pos)
{
    uint64_t v = ((uint64_t)rank << 32) | (uint64_t)pos;
    size_t i = (*len)++;
    if (i >= 2 * t->cap) return -1; /* cannot happen, see sam3__tok_reserve */
    while (i > 0 && t->heap[(i - 1) / 2] > v) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = v;
    return 0;
}

static uint64_t sam3__tok_pop(sam3__tok_run *t, size_t *len)
{
    uint64_t top = t->heap[0], v = t->heap[--*len];
    size_t i = 0, n = *len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && t->heap[c + 1] < t->heap[c]) c++;
        if (t->heap[c] >= v) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n > 0) t->heap[i] = v;
    return top;
}

/* BPE of one pre-token (code points cp[0..n)); appends its ids.  0 ok, -1 out of memory. */
static int sam3__tok_word(sam3__tok_run *t, const uint32_t *cp, size_t n)
{
    const sam3__bpe *b = t->b;
    size_t i, nb = 0, hl = 0;
    for (i = 0; i < n; i++) nb += cp[i] < 0x80 ? 1 : cp[i] < 0x800 ? 2 : cp[i] < 0x10000 ? 3 : 4;
    if (nb == 0) return 0;
    if (sam3__tok_reserve(t, nb) != 0) return -1;
    for (i = 0, nb = 0; i < n; i++) {
        uint8_t u[4];
        int k, m = sam3__utf8_put(cp[i], u);
        for (k = 0; k < m; k++) t->sym[nb++] = (int32_t)u[k]; /* bytes for now */
    }
    for (i = 0; i < nb; i++) {
        int32_t id = b->byte_id[i + 1 == nb][t->sym[i]];
        t->sym[i] = id >= 0 ? id : b->unk_id;
        t->prev[i] = (int32_t)i - 1;
        t->next[i] = i + 1 < nb ? (int32_t)i + 1 : -1;
    }
    for (i = 0; i + 1 < nb; i++) {
        int32_t r = sam3__bpe_rank(b, t->sym[i], t->sym[i + 1]);
        if (r >= 0 && sam3__tok_push(t, &hl, (uint32_t)r, i) != 0) return -1;
    }
    while (hl > 0) {
        uint64_t top = sam3__tok_pop(t, &hl);
        int32_t rank = (int32_t)(top >> 32), pos = (int32_t)(top & 0xFFFFFFFFu), nx, r;
        int32_t new_id = b->merges[3 * (size_t)rank + 2];
        if (t->sym[pos] < 0) continue;        /* merged into its left neighbour */
        nx = t->next[pos];
        if (nx < 0) continue;                 /* last symbol */
        r = sam3__bpe_rank(b, t->sym[pos], t->sym[nx]);
        if (r < 0 || b->merges[3 * (size_t)r + 2] != new_id) continue; /* stale entry */
        t->sym[pos] = new_id;
        t->next[pos] = t->next[nx];
        t->sym[nx] = -1;
        if (t->next[nx] >= 0) t->prev[t->next[nx]] = pos;
        if (t->prev[pos] >= 0) {
            r = sam3__bpe_rank(b, t->sym[t->prev[pos]], new_id);
            if (r >= 0 && sam3__tok_push(t, &hl, (uint32_t)r, (size_t)t->prev[pos]) != 0) return -1;
        }
        if (t->next[pos] >= 0) {
            r = sam3__bpe_rank(b, new_id, t->sym[t->next[pos]]);
            if (r >= 0 && sam3__tok_push(t, &hl, (uint32_t)r, (size_t)pos) != 0) return -1;
        }
    }
    for (i = 0; i < nb; i++)
        if (t->sym[i] >= 0) sam3__tok_emit(t, t->sym[i]);
    return 0;
}

/* Length of the special-token text at s[0..n) (code points), or 0.  which: bit 0 bos, bit 1 eos.
   *id gets the token's id. */
static size_t sam3__tok_special_at(const sam3__bpe *b, const uint32_t *s, size_t n, int which, int32_t *id)
{
    int k;
    if (n == 0 || s[0] != '<') return 0;
    for (k = 0; k < 2; k++) {
        const char *lit = k == 0 ? sam3__tok_bos_text : sam3__tok_eos_text;
        size_t len = k == 0 ? sizeof(sam3__tok_bos_text) - 1 : sizeof(sam3__tok_eos_text) - 1, j;
        if (!(which & (1 << k)) || n < len) continue;
        for (j = 0; j < len && s[j] == (uint32_t)(unsigned char)lit[j]; j++) {}
        if (j == len) {
            *id = k == 0 ? b->bos_id : b->eos_id;
            return len;
        }
    }
    return 0;
}

/* Pre-tokenize normalized text s[0..n) (no special tokens extracted from it) and BPE each
   piece.  Special-token strings still here are those step 2 left alone. */
static int sam3__tok_pretokenize(sam3__tok_run *t, const uint32_t *s, size_t n)
{
    size_t i = 0, j;
    while (i < n) {
        uint32_t c = s[i];
        int32_t id = 0;
        size_t sl = sam3__tok_special_at(t->b, s + i, n - i, 3, &id);
        int cls;
        if (sl) {
            /* the ByteLevel GPT-2 split makes "<|", the letters, "|>" of it */
            if (sam3__tok_word(t, s + i, 2) || sam3__tok_word(t, s + i + 2, sl - 4) ||
                sam3__tok_word(t, s + i + sl - 2, 2))
                return -1;
            i += sl;
            continue;
        }
        if (c == '\'' && i + 1 < n) {
            uint32_t d = s[i + 1], e = i + 2 < n ? s[i + 2] : 0;
            size_t len = (d == 's' || d == 't' || d == 'm' || d == 'd') ? 2
                       : ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) ? 3 : 0;
            if (len) {
                if (sam3__tok_word(t, s + i, len)) return -1;
                i += len;
                continue;
            }
        }
        cls = sam3__uc_class_of(c);
        if (cls == SAM3__UC_SPACE) { i++; continue; }
        j = i + 1;
        if (cls == SAM3__UC_LETTER) {
            while (j < n && sam3__uc_class_of(s[j]) == SAM3__UC_LETTER) j++;
        } else if (cls == SAM3__UC_OTHER) {
            while (j < n && sam3__uc_class_of(s[j]) == SAM3__UC_OTHER) j++;
        }
        if (sam3__tok_word(t, s + i, j - i)) return -1;
        i = j;
    }
    return 0;
}

/* Normalize raw[0..n) (no raw-matched special tokens inside), then split off the specials
   matched after normalization, pre-tokenize and BPE the rest.  work: 2 * bound entries. */
static int sam3__tok_segment(sam3__tok_run *t, const uint32_t *raw, size_t n, uint32_t *work, size_t bound)
{
    const int which = (SAM3__TOK_BOS_NORMALIZED ? 1 : 0) | (SAM3__TOK_EOS_NORMALIZED ? 2 : 0);
    size_t m, i, start = 0;
    if (n == 0) return 0;
    m = sam3__tok_normalize(raw, n, work, bound);
    for (i = 0; i < m;) {
        int32_t id = 0;
        size_t sl = which ? sam3__tok_special_at(t->b, work + i, m - i, which, &id) : 0;
        if (!sl) { i++; continue; }
        if (sam3__tok_pretokenize(t, work + start, i - start)) return -1;
        sam3__tok_emit(t, id);
        i += sl;
        start = i;
    }
    return sam3__tok_pretokenize(t, work + start, m - start);
}

static int sam3__bpe_encode(const sam3__bpe *b, const char *text, size_t len, int32_t *ids, int max_ids,
                            int *n_ids, int *n_full, int *truncated,
                            void *(*alloc)(size_t size, size_t align, void *user),
                            void (*free_fn)(void *p, void *user), void *user)
{
    const int which = (SAM3__TOK_BOS_NORMALIZED ? 0 : 1) | (SAM3__TOK_EOS_NORMALIZED ? 0 : 2);
    const uint8_t *s = (const uint8_t *)text;
    sam3__tok_run t;
    uint32_t *raw = NULL;  /* (n_raw) code points of text */
    uint32_t *work = NULL; /* (2 * bound) normalized segment, upper half scratch */
    size_t n_raw = 0, i, bound, start;
    int rc = 0;
    if (n_ids) *n_ids = 0;
    if (n_full) *n_full = 0;
    if (truncated) *truncated = 0;
    if (!b || (!text && len) || !ids || max_ids < 2 || !n_ids || !alloc || !free_fn || len > SAM3__TOK_MAX_BYTES)
        return -2;
    memset(&t, 0, sizeof(t));
    t.b = b;
    t.ids = ids;
    t.max_ids = max_ids;
    t.alloc = alloc;
    t.free_fn = free_fn;
    t.user = user;
    sam3__tok_emit(&t, b->bos_id);

    for (i = 0; i < len; n_raw++) sam3__utf8_next(s, len, &i);
    if (n_raw > 0) {
        raw = (uint32_t *)sam3__tok_alloc(&t, n_raw, sizeof(uint32_t));
        if (!raw) { rc = -1; goto done; }
        for (i = 0, n_raw = 0; i < len;) raw[n_raw++] = sam3__utf8_next(s, len, &i);
        bound = sam3__nfc_bound(raw, n_raw);
        work = (uint32_t *)sam3__tok_alloc(&t, bound, 2 * sizeof(uint32_t));
        if (!work) { rc = -1; goto done; }
        for (i = 0, start = 0; i < n_raw;) {
            int32_t id = 0;
            size_t sl = which ? sam3__tok_special_at(b, raw + i, n_raw - i, which, &id) : 0;
            if (!sl) { i++; continue; }
            if (sam3__tok_segment(&t, raw + start, i - start, work, bound)) { rc = -1; goto done; }
            sam3__tok_emit(&t, id);
            i += sl;
            start = i;
        }
        if (sam3__tok_segment(&t, raw + start, n_raw - start, work, bound)) { rc = -1; goto done; }
    }
    if (t.n_tok + 1 <= (size_t)max_ids) {
        ids[t.n_tok] = b->eos_id;
        *n_ids = (int)t.n_tok + 1;
    } else {
        ids[max_ids - 1] = b->eos_id;
        *n_ids = max_ids;
        if (truncated) *truncated = 1;
    }
    if (n_full) *n_full = (int)t.n_tok + 1;
done:
    sam3__tok_free(&t, raw);
    sam3__tok_free(&t, work);
    sam3__tok_free(&t, t.sym);
    sam3__tok_free(&t, t.prev);
    sam3__tok_free(&t, t.next);
    sam3__tok_free(&t, t.heap);
    if (rc != 0) *n_ids = 0;
    return rc;
}

/* ==== sam3: model (config and weights) ==== */
#define SAM3__MAX_LEVELS 8

/* Linear w (out,in) b (out); Conv w (out,in,kh,kw). The weight is f32 (w) or bf16 (wh, from a file
   converted with --dtype bf16; w is NULL then): products with it go through sam3__gemm_xw/_wx,
   element reads through sam3__lw. */
typedef struct sam3__lin { const float *w, *b; const uint16_t *wh; } sam3__lin;
typedef struct sam3__norm { const float *w, *b; } sam3__norm; /* LayerNorm / GroupNorm affine (dim) */
typedef struct sam3__attn_w { sam3__lin q, k, v, o; } sam3__attn_w;
static SAM3__INLINE float sam3__bf16_f32(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
/* Element i of l's weight, whichever its dtype (the few consumers that read weights one by one). */
static SAM3__INLINE float sam3__lw(const sam3__lin *l, size_t i) { return l->w ? l->w[i] : sam3__bf16_f32(l->wh[i]); }

typedef struct sam3__vit_cfg {
    int hidden, inter, layers, heads, head_dim, channels, image, patch, grid, pretrain_grid, window;
    float ln_eps;
    double rope_theta;
    unsigned char *is_global; /* (layers) */
} sam3__vit_cfg;

typedef struct sam3__neck_cfg {
    int fpn, n_levels, n_kept;        /* the last level is computed by the reference but discarded */
    int scale_x2[SAM3__MAX_LEVELS];   /* 2*scale factor: 8, 4, 2 or 1 */
    int side[SAM3__MAX_LEVELS];       /* square side of each level's map */
} sam3__neck_cfg;

typedef struct sam3__text_cfg { int vocab, hidden, inter, layers, heads, max_pos; float ln_eps; int quick_gelu; } sam3__text_cfg;
typedef struct sam3__tok_cfg { int vocab, n_merges, bos, eos, pad, max_length; } sam3__tok_cfg;
typedef struct sam3__geo_cfg { int hidden, layers, heads, inter, roi; } sam3__geo_cfg;
typedef struct sam3__enc_cfg { int hidden, layers, heads, inter; } sam3__enc_cfg;
typedef struct sam3__dec_cfg { int hidden, layers, queries, heads, inter; } sam3__dec_cfg;
typedef struct sam3__mask_cfg { int hidden, stages, heads; } sam3__mask_cfg;
typedef struct sam3__proc_cfg { int image; float mean[3], std[3]; double rescale; } sam3__proc_cfg;

typedef struct sam3__vit_layer_w {
    sam3__norm ln1, ln2;
    sam3__attn_w attn;
    sam3__lin qkv; /* (3C, C): attn.q's weight when the k and v weights follow it in the file (w or wh), else both NULL */
    sam3__lin fc1, fc2;
} sam3__vit_layer_w;
typedef struct sam3__vit_w {
    sam3__lin patch;    /* (C, channels, p, p), no bias */
    const float *pos;   /* (pretrain_grid^2, C) */
    sam3__norm ln_pre;
    sam3__vit_layer_w *layers; /* (layers) */
} sam3__vit_w;
typedef struct sam3__fpn_w { sam3__lin up1, up2, proj1, proj2; } sam3__fpn_w; /* up*: ConvTranspose (in,out,2,2) */

typedef struct sam3__clip_layer_w { sam3__norm ln1, ln2; sam3__attn_w attn; sam3__lin fc1, fc2; } sam3__clip_layer_w;
typedef struct sam3__text_w {
    const float *tok_emb, *pos_emb; /* (vocab, T), (max_pos, T) */
    sam3__clip_layer_w *layers;
    sam3__norm final_ln;
    sam3__lin proj; /* text_projection (D, T) */
} sam3__text_w;

/* Pre-norm layer with self-attention, cross-attention and an MLP: geometry and DETR encoder. */
typedef struct sam3__xlayer_w { sam3__norm ln1, ln2, ln3; sam3__attn_w self_attn, cross_attn; sam3__lin fc1, fc2; } sam3__xlayer_w;
typedef struct sam3__geo_w {
    sam3__lin direct, pool, pos_enc, final_proj;
    sam3__norm vision_ln, prompt_ln, out_ln;
    const float *label_embed, *cls_embed; /* (2, D), (1, D) */
    sam3__xlayer_w *layers;
} sam3__geo_w;
typedef struct sam3__dec_layer_w {
    sam3__attn_w self_attn, text_attn, vision_attn;
    sam3__norm self_ln, text_ln, vision_ln, mlp_ln;
    sam3__lin fc1, fc2;
} sam3__dec_layer_w;
typedef struct sam3__dec_w {
    const float *query_embed, *ref_points, *presence_token; /* (Q, D), (Q, 4), (1, D) */
    sam3__lin ref_head[2], rpb_x[2], rpb_y[2], box_head[3], presence_head[3];
    sam3__norm out_ln, presence_ln;
    sam3__dec_layer_w *layers;
} sam3__dec_w;
typedef struct sam3__score_w { sam3__lin text_mlp[2], text_proj, query_proj; sam3__norm text_ln; } sam3__score_w;
typedef struct sam3__mask_w {
    sam3__norm cross_ln;
    sam3__attn_w cross_attn;
    sam3__lin conv[SAM3__MAX_LEVELS];
    sam3__norm gn[SAM3__MAX_LEVELS];
    sam3__lin embed[3], inst_proj, sem_proj;
} sam3__mask_w;

/* The interactive head (Sam3TrackerModel: tracker neck, prompt encoder, two-way mask decoder). */
#define SAM3__MAX_FFN 8
typedef struct sam3__ffn_w { sam3__lin in, hidden[SAM3__MAX_FFN], out; int n_hidden; } sam3__ffn_w; /* Sam3TrackerFeedForward */
typedef struct sam3__twoway_layer_w {
    sam3__attn_w self_attn, t2i, i2t; /* token self-attention, token->image, image->token */
    sam3__norm ln1, ln2, ln3, ln4;
    sam3__ffn_w mlp;
} sam3__twoway_layer_w;
typedef struct sam3__trk_cfg {
    int present;
    int fpn, n_levels, n_kept, scale_x2[SAM3__MAX_LEVELS], side[SAM3__MAX_LEVELS]; /* tracker neck */
    int D, image, grid, mask_in_ch, n_point_emb;                                   /* prompt encoder */
    float pe_ln_eps;
    int mlp_dim, layers, heads, down, n_mask_tokens, iou_depth, iou_hidden, dynamic; /* mask decoder */
    float stab_delta, stab_thresh;
    /* where transformers' Sam3Tracker{PromptEncoder,MaskDecoder} and SAM 1's differ; values are the tracker's / SAM 1's */
    float tw_eps;     /* two-way LayerNorms: 1e-5 / the config's 1e-6 */
    int obj_token;    /* an object-score token before the IoU token, and its head: 1 / 0 */
    int iou_sigmoid;  /* IoU head ends in a sigmoid: 1 / 0 */
    int box_pad;      /* a box adds a not-a-point token after its corners: 1 / 0 */
    int empty_pad;    /* no prompt at all becomes a (0,0) label -1 point, then padding: 1 / 0 tokens */
    int mlp_depth;    /* Linear layers of the two-way MLP: num_hidden_layers (HF quirk) / 2 */
} sam3__trk_cfg;
typedef struct sam3__trk_w {
    sam3__fpn_w fpn[SAM3__MAX_LEVELS];
    const float *gauss;                         /* (2, D/2) random-Fourier matrix */
    sam3__lin mask_conv1, mask_conv2, mask_conv3; /* mask prompt path: 2x2/2, 2x2/2, 1x1 */
    sam3__norm mask_ln1, mask_ln2;
    const float *no_mask, *not_a_point;            /* (1, D) each */
    const float *point_rows[SAM3__MAX_FFN];        /* (D) per label 0..n_point_emb-1 (SAM 1 stores them apart) */
    const float *obj_token, *iou_token, *mask_tokens; /* (1, D), (1, D), (n_mask_tokens, D) */
    sam3__twoway_layer_w *layers;
    sam3__attn_w final_attn;
    sam3__norm final_ln, up_ln;
    sam3__lin up1, up2, conv_s0, conv_s1; /* conv_s0/conv_s1: tracker only (w NULL for SAM 1) */
    sam3__ffn_w hypernet[SAM3__MAX_FFN], iou_head, obj_head;
} sam3__trk_w;

/* The video tracker's memory (Sam3TrackerVideoModel on top of the interactive head): memory
   attention, memory encoder, object pointers. Widths are the tracker's D except the memory's. */
#define SAM3__MAX_VID_LAYERS 16
typedef struct sam3__vid_cfg {
    int present;
    int num_maskmem;     /* memories: conditioning frames + the last num_maskmem - 1 frames */
    int max_cond;        /* conditioning frames attended (-1: all) */
    int max_ptr;         /* object pointers: conditioning frames + the last max_ptr - 1 frames */
    int mem_dim;         /* memory width (64: HF's memory attention reads 64-wide keys) */
    int multimask, mm_min, mm_max, mm_tracking; /* when the decoder's multimask output is used */
    int occlusion, ptr_tpe;                     /* occlusion embedding; temporal PE of pointers */
    float sig_scale, sig_bias, rope_theta;
    int ma_layers, ma_heads, ma_di, ma_ffn;     /* memory attention */
    int ds_layers, ds_kernel, ds_stride, ds_pad; /* mask downsampler */
    int ds_ch[SAM3__MAX_VID_LAYERS + 1], ds_side[SAM3__MAX_VID_LAYERS + 1]; /* channels, sides: 1 x 16g .. */
    int fu_layers, fu_inter, fu_kernel, fu_pad; /* memory fuser (ConvNeXt blocks) */
} sam3__vid_cfg;
typedef struct sam3__memattn_layer_w {
    sam3__attn_w self_attn, cross_attn; /* cross_attn k, v: (di, mem_dim) */
    sam3__lin fc1, fc2;
    sam3__norm ln1, ln2, ln3;
} sam3__memattn_layer_w;
typedef struct sam3__fuser_w { sam3__lin dw, pw1, pw2; sam3__norm ln; const float *scale; } sam3__fuser_w;
typedef struct sam3__vid_w {
    sam3__memattn_layer_w ma[SAM3__MAX_VID_LAYERS];
    sam3__norm ma_ln;
    sam3__lin ds_conv[SAM3__MAX_VID_LAYERS], ds_final;
    sam3__norm ds_ln[SAM3__MAX_VID_LAYERS];
    sam3__lin feat_proj, proj, mask_ds, tpos_proj; /* 1x1 D->D, 1x1 D->mem, 4x4/4 1->1, Linear D->mem */
    sam3__fuser_w fu[SAM3__MAX_VID_LAYERS];
    sam3__ffn_w ptr_proj;
    const float *no_mem; /* (D) no_memory_embedding: added to a conditioning frame's features */
    const float *tpos;   /* (num_maskmem, mem_dim) temporal encodings of the memories */
    const float *no_ptr; /* (D) the pointer of an absent object */
    const float *occl;   /* (mem_dim) occlusion embedding, or NULL */
} sam3__vid_w;

/* SAM 1 (HF SamModel): its ViT with decomposed relative positions and its neck; the prompt
   encoder and mask decoder are the interactive head above with SAM 1's flags. */
enum { SAM3__ARCH_SAM3 = 0, SAM3__ARCH_SAM1 = 1 };
typedef struct sam3__s1_cfg {
    int hidden, out_ch, layers, heads, head_dim, image, patch, grid, window, mlp, qkv_bias, use_abs, use_rel;
    float ln_eps;
    unsigned char *is_global; /* (layers) */
    int longest_edge, pad_size;
} sam3__s1_cfg;
typedef struct sam3__s1_layer_w {
    sam3__norm ln1, ln2;
    sam3__lin qkv, proj, fc1, fc2; /* qkv: (3C, C) fused q, k, v */
    const float *rel_h, *rel_w;    /* (2S-1, hd) each, S = window or grid */
} sam3__s1_layer_w;
typedef struct sam3__s1_w {
    sam3__lin patch;       /* (C, 3, p, p) with bias */
    const float *pos;      /* (g, g, C) or NULL */
    sam3__s1_layer_w *layers;
    sam3__lin neck1, neck2; /* 1x1 and 3x3, no bias */
    sam3__norm neck_ln1, neck_ln2;
} sam3__s1_w;

struct sam3_model {
    sam3_allocator a;
    int arch; /* SAM3__ARCH_* */
    const uint8_t *blob;
    size_t size;
    int free_method; /* 0 borrowed (from_memory), 1 unmap, 2 free */
    sam3__file file;
    sam3__vit_cfg vit;
    sam3__neck_cfg neck;
    sam3__text_cfg text;
    sam3__tok_cfg tok;
    sam3__geo_cfg geo;
    sam3__enc_cfg enc;
    sam3__dec_cfg dec;
    sam3__mask_cfg mask;
    sam3__proc_cfg proc;
    sam3__vit_w vit_w;
    sam3__fpn_w fpn_w[SAM3__MAX_LEVELS];
    sam3__text_w text_w;
    sam3__geo_w geo_w;
    sam3__xlayer_w *enc_w; /* (enc.layers) */
    sam3__dec_w dec_w;
    sam3__score_w score_w;
    sam3__mask_w mask_w;
    sam3__trk_cfg trk;
    sam3__trk_w trk_w;
    sam3__vid_cfg vid;
    sam3__vid_w vid_w;
    sam3__s1_cfg s1;
    sam3__s1_w s1_w;
    void *layer_mem; /* backing store of the per-layer arrays above */
    const uint8_t *tok_bytes; const int32_t *tok_offsets, *tok_merges;
    size_t tok_n_bytes;
    sam3__bpe bpe;  /* CLIP BPE tables over the file's vocabulary */
    void *bpe_mem;  /* its hash tables */
};

/* Collects the first error while the loader walks the config and the tensor table. */
typedef struct sam3__loader {
    const sam3__file *f;
    char name[512];
    char *err;
    size_t cap;
    sam3_result rc;
    int image_size; /* sam3_load_options.image_size: 0, or the side that replaces the file's */
} sam3__loader;

static void sam3__lfail(sam3__loader *L, sam3_result rc, const char *fmt, ...) {
    va_list ap;
    if (L->rc != SAM3_OK) return;
    L->rc = rc;
    va_start(ap, fmt);
    sam3__vsnprintf(L->err, L->cap, fmt, ap);
    va_end(ap);
}

static int64_t sam3__cfg_i(sam3__loader *L, const char *key, int64_t lo, int64_t hi) {
    const sam3__cfg *c = sam3__file_cfg(L->f, key);
    if (L->rc != SAM3_OK) return lo;
    if (!c) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is missing (re-convert with tools/convert.py)", key); return lo; }
    if (c->type != SAM3__T_I64) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is not an integer", key); return lo; }
    if (c->i < lo || c->i > hi) {
        sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' = %lld, expected %lld..%lld", key, (long long)c->i, (long long)lo, (long long)hi);
        return lo;
    }
    return c->i;
}
static double sam3__cfg_f(sam3__loader *L, const char *key, double lo, double hi) {
    const sam3__cfg *c = sam3__file_cfg(L->f, key);
    if (L->rc != SAM3_OK) return lo;
    if (!c) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is missing (re-convert with tools/convert.py)", key); return lo; }
    if (c->type != SAM3__T_F64 && c->type != SAM3__T_I64) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is not a number", key); return lo; }
    {
        double v = c->type == SAM3__T_F64 ? c->f : (double)c->i;
        if (!(v >= lo && v <= hi)) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' = %g, expected %g..%g", key, v, lo, hi); return lo; }
        return v;
    }
}
/* Reads an array key (either kind) into out[0..cap); returns its length (0 on error). */
static int sam3__cfg_array(sam3__loader *L, const char *key, double *out, int cap) {
    const sam3__cfg *c = sam3__file_cfg(L->f, key);
    uint32_t i;
    if (L->rc != SAM3_OK) return 0;
    if (!c) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is missing (re-convert with tools/convert.py)", key); return 0; }
    if (c->type != SAM3__T_I64_ARRAY && c->type != SAM3__T_F64_ARRAY) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is not an array", key); return 0; }
    if (c->count > (uint32_t)cap) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "config key '%s' has %u entries, at most %d supported", key, c->count, cap); return 0; }
    for (i = 0; i < c->count; i++) {
        uint64_t u = sam3__rd64(c->data + 8 * i);
        if (c->type == SAM3__T_I64_ARRAY) out[i] = (double)(int64_t)u;
        else memcpy(&out[i], &u, 8);
    }
    return (int)c->count;
}
static void sam3__cfg_act(sam3__loader *L, const char *key, const char *want) {
    const sam3__cfg *c = sam3__file_cfg(L->f, key);
    if (L->rc != SAM3_OK) return;
    if (!c || c->type != SAM3__T_STR) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key '%s' is missing or not a string", key); return; }
    if (c->count != strlen(want) || memcmp(c->data, want, c->count) != 0)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "config key '%s' = '%.*s': only '%s' is implemented", key, (int)SAM3__MIN(c->count, 64u),
                    (const char *)c->data, want);
}

static void sam3__shape_str(char *buf, size_t cap, int nd, const int64_t *s) {
    size_t n = 0;
    int i;
    buf[0] = 0;
    for (i = 0; i < nd && n + 24 < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "[", (long long)s[i]);
    if (n + 2 < cap) snprintf(buf + n, cap - n, "]");
}

/* Looks up L->name (set by sam3__nm) and checks it is f32 with exactly this shape. */
static const void *sam3__get_any(sam3__loader *L, uint32_t dtype, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t want[4];
    const sam3__tensor *t;
    int i, ok;
    char got_s[96], want_s[96];
    want[0] = d0; want[1] = d1; want[2] = d2; want[3] = d3;
    if (L->rc != SAM3_OK) return NULL;
    t = sam3__file_find(L->f, L->name);
    if (!t) { sam3__lfail(L, SAM3_ERR_MISSING_TENSOR, "tensor '%s' is missing", L->name); return NULL; }
    ok = t->ndim == nd;
    for (i = 0; ok && i < nd; i++) ok = t->shape[i] == want[i];
    if (!ok) {
        sam3__shape_str(got_s, sizeof(got_s), t->ndim, t->shape);
        sam3__shape_str(want_s, sizeof(want_s), nd, want);
        sam3__lfail(L, SAM3_ERR_SHAPE_MISMATCH, "tensor '%s': shape %s, expected %s", L->name, got_s, want_s);
        return NULL;
    }
    if (t->dtype != dtype) {
        /* only Linear and Conv weights may be bf16 (sam3__get_weight); norms, biases, embeddings and
           position tables are read as f32 */
        sam3__lfail(L, SAM3_ERR_SHAPE_MISMATCH, "tensor '%s': dtype %s, expected %s%s", L->name, sam3__dtypes[t->dtype].name,
                    sam3__dtypes[dtype].name,
                    dtype == SAM3__DT_F32 ? " (only Linear and Conv weights may be bf16: convert with tools/convert.py --dtype f32 or bf16)" : "");
        return NULL;
    }
    return t->data;
}
static const float *sam3__get(sam3__loader *L, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return (const float *)sam3__get_any(L, SAM3__DT_F32, nd, d0, d1, d2, d3);
}
/* L->name as a Linear or Conv weight of this shape: f32 (l->w) or bf16 (l->wh), the other NULL. */
static void sam3__get_weight(sam3__loader *L, sam3__lin *l, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    const sam3__tensor *t = L->rc == SAM3_OK ? sam3__file_find(L->f, L->name) : NULL;
    l->w = NULL;
    l->wh = NULL;
    if (t && t->dtype == SAM3__DT_BF16) l->wh = (const uint16_t *)sam3__get_any(L, SAM3__DT_BF16, nd, d0, d1, d2, d3);
    else if (t && t->dtype != SAM3__DT_F32 && t->ndim == nd)
        sam3__lfail(L, SAM3_ERR_SHAPE_MISMATCH, "tensor '%s': dtype %s, expected f32 or bf16", L->name, sam3__dtypes[t->dtype].name);
    else l->w = sam3__get(L, nd, d0, d1, d2, d3);
}
static void sam3__nm(sam3__loader *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sam3__vsnprintf(L->name, sizeof(L->name), fmt, ap);
    va_end(ap);
}
/* Tensor `prefix.suffix`, f32, given shape. */
static const float *sam3__getp(sam3__loader *L, const char *prefix, const char *suffix, int nd, int64_t d0, int64_t d1,
                               int64_t d2, int64_t d3) {
    sam3__nm(L, "%s.%s", prefix, suffix);
    return sam3__get(L, nd, d0, d1, d2, d3);
}
/* `prefix.weight` of the given shape and `prefix.bias` of n_bias values. */
static sam3__lin sam3__get_wb(sam3__loader *L, const char *prefix, int nd, int d0, int d1, int d2, int d3, int n_bias) {
    sam3__lin l;
    sam3__nm(L, "%s.weight", prefix);
    sam3__get_weight(L, &l, nd, d0, d1, d2, d3);
    l.b = sam3__getp(L, prefix, "bias", 1, n_bias, 0, 0, 0);
    return l;
}
static sam3__lin sam3__get_lin(sam3__loader *L, const char *prefix, int out, int in) {
    return sam3__get_wb(L, prefix, 2, out, in, 0, 0, out);
}
static sam3__lin sam3__get_conv(sam3__loader *L, const char *prefix, int out, int in, int k) {
    return sam3__get_wb(L, prefix, 4, out, in, k, k, out);
}
static sam3__lin sam3__get_convt(sam3__loader *L, const char *prefix, int in, int out) {
    return sam3__get_wb(L, prefix, 4, in, out, 2, 2, out);
}
static sam3__norm sam3__get_norm(sam3__loader *L, const char *prefix, int dim) {
    sam3__norm n;
    n.w = sam3__getp(L, prefix, "weight", 1, dim, 0, 0, 0);
    n.b = sam3__getp(L, prefix, "bias", 1, dim, 0, 0, 0);
    return n;
}
/* Attention whose q/k/v project D -> di and o_proj di -> D (the tracker's downsampled attention). */
static sam3__attn_w sam3__get_attn_ex(sam3__loader *L, const char *prefix, int D, int di, const char *out_name) {
    char p[256];
    sam3__attn_w a;
    snprintf(p, sizeof(p), "%s.q_proj", prefix); a.q = sam3__get_lin(L, p, di, D);
    snprintf(p, sizeof(p), "%s.k_proj", prefix); a.k = sam3__get_lin(L, p, di, D);
    snprintf(p, sizeof(p), "%s.v_proj", prefix); a.v = sam3__get_lin(L, p, di, D);
    snprintf(p, sizeof(p), "%s.%s", prefix, out_name); a.o = sam3__get_lin(L, p, D, di);
    return a;
}
static sam3__attn_w sam3__get_attn(sam3__loader *L, const char *prefix, int dim, const char *out_name) {
    return sam3__get_attn_ex(L, prefix, dim, dim, out_name);
}
/* Sam3TrackerFeedForward with n_layers Linear layers: proj_in, layers.{0..n-3}, proj_out. */
static sam3__ffn_w sam3__get_ffn(sam3__loader *L, const char *prefix, int n_layers, int in, int hidden, int out) {
    char p[256 + 32]; /* callers' prefixes are up to 255 characters */
    sam3__ffn_w f;
    int i;
    memset(&f, 0, sizeof(f));
    f.n_hidden = n_layers - 2;
    snprintf(p, sizeof(p), "%s.proj_in", prefix); f.in = sam3__get_lin(L, p, hidden, in);
    for (i = 0; i < f.n_hidden; i++) {
        snprintf(p, sizeof(p), "%s.layers.%d", prefix, i);
        f.hidden[i] = sam3__get_lin(L, p, hidden, hidden);
    }
    snprintf(p, sizeof(p), "%s.proj_out", prefix); f.out = sam3__get_lin(L, p, out, hidden);
    return f;
}
static sam3__xlayer_w sam3__get_xlayer(sam3__loader *L, const char *prefix, int d, int inter) {
    char p[256];
    sam3__xlayer_w w;
    snprintf(p, sizeof(p), "%s.layer_norm1", prefix); w.ln1 = sam3__get_norm(L, p, d);
    snprintf(p, sizeof(p), "%s.layer_norm2", prefix); w.ln2 = sam3__get_norm(L, p, d);
    snprintf(p, sizeof(p), "%s.layer_norm3", prefix); w.ln3 = sam3__get_norm(L, p, d);
    snprintf(p, sizeof(p), "%s.self_attn", prefix); w.self_attn = sam3__get_attn(L, p, d, "o_proj");
    snprintf(p, sizeof(p), "%s.cross_attn", prefix); w.cross_attn = sam3__get_attn(L, p, d, "o_proj");
    snprintf(p, sizeof(p), "%s.mlp.fc1", prefix); w.fc1 = sam3__get_lin(L, p, inter, d);
    snprintf(p, sizeof(p), "%s.mlp.fc2", prefix); w.fc2 = sam3__get_lin(L, p, d, inter);
    return w;
}
static void sam3__get_mlp(sam3__loader *L, const char *prefix, sam3__lin *out, int n, int in, int hidden, int outd) {
    char p[256];
    int i;
    for (i = 0; i < n; i++) {
        snprintf(p, sizeof(p), "%s.layer%d", prefix, i + 1);
        out[i] = sam3__get_lin(L, p, i == n - 1 ? outd : hidden, i == 0 ? in : hidden);
    }
}

/* The attentions and norms of two-way transformer layer i under prefix (SAM 1 and the tracker
   differ in the prefix, the output projection's name and the MLP, which the callers load). */
static void sam3__get_twoway_layer(sam3__loader *L, const char *prefix, int i, int D, int di, const char *oname, sam3__twoway_layer_w *lw) {
    char p[256];
    snprintf(p, sizeof(p), "%s.%d.self_attn", prefix, i); lw->self_attn = sam3__get_attn_ex(L, p, D, D, oname);
    snprintf(p, sizeof(p), "%s.%d.cross_attn_token_to_image", prefix, i); lw->t2i = sam3__get_attn_ex(L, p, D, di, oname);
    snprintf(p, sizeof(p), "%s.%d.cross_attn_image_to_token", prefix, i); lw->i2t = sam3__get_attn_ex(L, p, D, di, oname);
    snprintf(p, sizeof(p), "%s.%d.layer_norm1", prefix, i); lw->ln1 = sam3__get_norm(L, p, D);
    snprintf(p, sizeof(p), "%s.%d.layer_norm2", prefix, i); lw->ln2 = sam3__get_norm(L, p, D);
    snprintf(p, sizeof(p), "%s.%d.layer_norm3", prefix, i); lw->ln3 = sam3__get_norm(L, p, D);
    snprintf(p, sizeof(p), "%s.%d.layer_norm4", prefix, i); lw->ln4 = sam3__get_norm(L, p, D);
}

static int sam3__check_heads(sam3__loader *L, const char *what, int dim, int heads) {
    if (L->rc == SAM3_OK && (heads <= 0 || dim % heads != 0))
        sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "%s: hidden size %d is not divisible by %d heads", what, dim, heads);
    return L->rc == SAM3_OK;
}

/* A SAM 3 input side: the file's key, or sam3_load_options.image_size in its place (the
   vision, processor and prompt-encoder sides are one size and change together). */
static int sam3__image_size(sam3__loader *L, const char *key) {
    const int s = (int)sam3__cfg_i(L, key, 1, 65536);
    return L->image_size ? L->image_size : s;
}

/* The input side must tile into patches, give a grid whose half (the neck's 0.5x level, which the
   reference computes) is not empty, and keep the token rows, g^2 x widest floats, within an int
   (the neck checks its own 4x level). */
static int sam3__check_image_size(sam3__loader *L, int image, int patch, int widest) {
    const sam3_result bad = L->image_size ? SAM3_ERR_INVALID_ARG : SAM3_ERR_CORRUPT_FILE;
    if (L->rc != SAM3_OK) return 0;
    if (image < 2 * patch || image > 65536 || image % patch)
        sam3__lfail(L, bad, "image_size %d: must be a multiple of the patch size %d, from %d to 65536", image, patch, 2 * patch);
    else if ((double)(image / patch) * (image / patch) * widest > (double)INT_MAX)
        sam3__lfail(L, bad, "image_size %d: too large (a %dx%d token grid overflows the buffers)", image, image / patch, image / patch);
    return L->rc == SAM3_OK;
}

/* The prompt encoder and mask decoder keys that the SAM 3 interactive head ("tracker") and SAM 1
   ("sam1") share, in the order both read them. */
static void sam3__load_head_config(sam3__loader *L, const char *pre, sam3__trk_cfg *t) {
    const int64_t BIG = 1 << 20;
    char k[96];
#define SAM3__HKEY(name) (snprintf(k, sizeof(k), "%s.%s", pre, name), k)
    t->D = (int)sam3__cfg_i(L, SAM3__HKEY("prompt_encoder.hidden_size"), 1, BIG);
    t->image = sam3__image_size(L, SAM3__HKEY("prompt_encoder.image_size"));
    t->grid = t->image / (int)sam3__cfg_i(L, SAM3__HKEY("prompt_encoder.patch_size"), 1, 65536);
    t->mask_in_ch = (int)sam3__cfg_i(L, SAM3__HKEY("prompt_encoder.mask_input_channels"), 4, BIG);
    t->n_point_emb = (int)sam3__cfg_i(L, SAM3__HKEY("prompt_encoder.num_point_embeddings"), 4, SAM3__MAX_FFN);
    t->pe_ln_eps = (float)sam3__cfg_f(L, SAM3__HKEY("prompt_encoder.layer_norm_eps"), 0, 1);
    t->mlp_dim = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.mlp_dim"), 1, BIG);
    t->layers = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.num_hidden_layers"), 1, 64);
    t->heads = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.num_attention_heads"), 1, 4096);
    t->down = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.attention_downsample_rate"), 1, 4096);
    t->n_mask_tokens = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.num_multimask_outputs"), 1, SAM3__MAX_FFN - 1) + 1;
    t->iou_depth = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.iou_head_depth"), 2, SAM3__MAX_FFN + 1);
    t->iou_hidden = (int)sam3__cfg_i(L, SAM3__HKEY("mask_decoder.iou_head_hidden_dim"), 1, BIG);
#undef SAM3__HKEY
}

/* The interactive head is optional (a plain Sam3Model checkpoint has none). */
static void sam3__load_tracker_config(sam3_model *m, sam3__loader *L) {
    sam3__trk_cfg *t = &m->trk;
    const int64_t BIG = 1 << 20;
    double arr[SAM3__MAX_LEVELS];
    int i, n;
    const sam3__cfg *pc = sam3__file_cfg(L->f, "tracker.present");
    if (L->rc != SAM3_OK || !pc || pc->type != SAM3__T_I64 || pc->i == 0) return;
    t->fpn = (int)sam3__cfg_i(L, "tracker.neck.fpn_hidden_size", 1, BIG);
    n = sam3__cfg_array(L, "tracker.neck.scale_factors", arr, SAM3__MAX_LEVELS);
    sam3__load_head_config(L, "tracker", t);
    t->dynamic = (int)sam3__cfg_i(L, "tracker.mask_decoder.dynamic_multimask", 0, 1);
    t->stab_delta = (float)sam3__cfg_f(L, "tracker.mask_decoder.stability_delta", -1e30, 1e30);
    t->stab_thresh = (float)sam3__cfg_f(L, "tracker.mask_decoder.stability_thresh", -1e30, 1e30);
    if (L->rc != SAM3_OK) return;
    if ((int)sam3__cfg_i(L, "tracker.mask_decoder.hidden_size", 1, BIG) != t->D || t->fpn != t->D)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker: neck %d, prompt encoder %d and mask decoder widths must be equal", t->fpn, t->D);
    else if (t->D % 8 || (t->D / t->down) % t->heads || t->D % t->heads || t->D % 2 || t->mask_in_ch % 4)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker: width %d does not split into the decoder's heads/upscaling", t->D);
    else if (t->layers > 64 || t->layers - 2 > SAM3__MAX_FFN)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker: %d two-way layers", t->layers);
    else if (t->grid != m->vit.grid)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker: prompt grid %d differs from the vision grid %d", t->grid, m->vit.grid);
    else if (n < 4)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker.neck.scale_factors: the interactive head needs the 4x, 2x and 1x levels");
    if (L->rc != SAM3_OK) return;
    t->n_levels = n;
    t->n_kept = 3; /* the decoder reads the 4x and 2x maps as skips and the 1x map as the image */
    t->tw_eps = 1e-5f;
    t->obj_token = t->iou_sigmoid = t->box_pad = t->empty_pad = 1;
    t->mlp_depth = t->layers;
    for (i = 0; i < 3; i++) {
        if (arr[i] * 2 != (double)(8 >> i)) { /* compared as a double: (int) of NaN/huge is UB */
            sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker.neck.scale_factors must start 4, 2, 1");
            return;
        }
        t->scale_x2[i] = 8 >> i;
        t->side[i] = m->vit.grid * t->scale_x2[i] / 2;
    }
    t->present = 1;
}

/* The memory modules are optional: without them the file serves images only and the tracker
   API answers SAM3_ERR_UNSUPPORTED. */
static void sam3__load_video_config(sam3_model *m, sam3__loader *L) {
    sam3__vid_cfg *v = &m->vid;
    const sam3__trk_cfg *t = &m->trk;
    const int64_t BIG = 1 << 20;
    const sam3__cfg *pc = sam3__file_cfg(L->f, "tracker.video.present");
    int D = t->D, down, total, n, i, hid[4];
    if (L->rc != SAM3_OK || !t->present || !pc || pc->type != SAM3__T_I64 || pc->i == 0) return;
    v->num_maskmem = (int)sam3__cfg_i(L, "tracker.video.num_maskmem", 1, 256);
    v->max_cond = (int)sam3__cfg_i(L, "tracker.video.max_cond_frames", -1, 1 << 16);
    v->max_ptr = (int)sam3__cfg_i(L, "tracker.video.max_object_pointers", 1, 1 << 16);
    v->multimask = (int)sam3__cfg_i(L, "tracker.video.multimask", 0, 1);
    v->mm_min = (int)sam3__cfg_i(L, "tracker.video.multimask_min_points", 0, BIG);
    v->mm_max = (int)sam3__cfg_i(L, "tracker.video.multimask_max_points", 0, BIG);
    v->mm_tracking = (int)sam3__cfg_i(L, "tracker.video.multimask_tracking", 0, 1);
    v->sig_scale = (float)sam3__cfg_f(L, "tracker.video.sigmoid_scale", -1e6, 1e6);
    v->sig_bias = (float)sam3__cfg_f(L, "tracker.video.sigmoid_bias", -1e6, 1e6);
    v->occlusion = (int)sam3__cfg_i(L, "tracker.video.occlusion_embedding", 0, 1);
    v->ptr_tpe = (int)sam3__cfg_i(L, "tracker.video.pointer_temporal_pe", 0, 1);
    v->rope_theta = (float)sam3__cfg_f(L, "tracker.video.rope_theta", 1.0, 1e12);
    hid[0] = (int)sam3__cfg_i(L, "tracker.video.attn.hidden_size", 1, BIG);
    v->ma_layers = (int)sam3__cfg_i(L, "tracker.video.attn.num_layers", 1, SAM3__MAX_VID_LAYERS);
    v->ma_heads = (int)sam3__cfg_i(L, "tracker.video.attn.num_heads", 1, 4096);
    down = (int)sam3__cfg_i(L, "tracker.video.attn.downsample_rate", 1, 4096);
    v->ma_ffn = (int)sam3__cfg_i(L, "tracker.video.attn.ffn_size", 1, BIG);
    hid[1] = (int)sam3__cfg_i(L, "tracker.video.encoder.hidden_size", 1, BIG);
    v->mem_dim = (int)sam3__cfg_i(L, "tracker.video.encoder.out_channels", 1, BIG);
    hid[2] = (int)sam3__cfg_i(L, "tracker.video.downsampler.embed_dim", 1, BIG);
    v->ds_kernel = (int)sam3__cfg_i(L, "tracker.video.downsampler.kernel", 1, 15);
    v->ds_stride = (int)sam3__cfg_i(L, "tracker.video.downsampler.stride", 2, 16);
    v->ds_pad = (int)sam3__cfg_i(L, "tracker.video.downsampler.padding", 0, 15);
    total = (int)sam3__cfg_i(L, "tracker.video.downsampler.total_stride", 2, 4096);
    v->fu_layers = (int)sam3__cfg_i(L, "tracker.video.fuser.num_layers", 0, SAM3__MAX_VID_LAYERS);
    hid[3] = (int)sam3__cfg_i(L, "tracker.video.fuser.embed_dim", 1, BIG);
    v->fu_inter = (int)sam3__cfg_i(L, "tracker.video.fuser.intermediate", 1, BIG);
    v->fu_kernel = (int)sam3__cfg_i(L, "tracker.video.fuser.kernel", 1, 31);
    v->fu_pad = (int)sam3__cfg_i(L, "tracker.video.fuser.padding", 0, 15);
    if (L->rc != SAM3_OK) return;
    for (i = 0; i < 4; i++)
        if (hid[i] != D) {
            sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker.video: memory attention, encoder, downsampler and fuser widths must equal the tracker's %d", D);
            return;
        }
    v->ma_di = D / down;
    if (v->max_cond == 0 || D % down || v->ma_di % v->ma_heads || (v->ma_di / v->ma_heads) % 4 || D % v->mem_dim ||
        v->fu_kernel != 2 * v->fu_pad + 1) {
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker.video: unsupported sizes (width %d, downsample %d, %d heads, memory %d, fuser kernel %d pad %d)",
                    D, down, v->ma_heads, v->mem_dim, v->fu_kernel, v->fu_pad);
        return;
    }
    /* HF: int(log2(total_stride) // log2(stride)) layers, each multiplying channels by stride^2 */
    for (n = 0, i = 1; (int64_t)i * v->ds_stride <= total; i *= v->ds_stride) n++;
    v->ds_ch[0] = 1;
    v->ds_side[0] = 16 * t->grid; /* the decoder's mask size 4g, times 4 */
    for (i = 0; i < n && i < SAM3__MAX_VID_LAYERS; i++) {
        v->ds_ch[i + 1] = v->ds_ch[i] * v->ds_stride * v->ds_stride;
        v->ds_side[i + 1] = (v->ds_side[i] + 2 * v->ds_pad - v->ds_kernel) / v->ds_stride + 1;
        if (v->ds_ch[i + 1] > BIG || v->ds_side[i + 1] < 1) break;
    }
    if (n < 1 || i != n || v->ds_side[n] != t->grid) {
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "tracker.video: the mask downsampler does not take %d-pixel masks to the %d grid", 16 * t->grid, t->grid);
        return;
    }
    v->ds_layers = n;
    v->present = 1;
}

/* The pixel normalisation SAM 1 and SAM 3 read alike: 3 means, 3 positive deviations. */
static void sam3__load_norm_config(sam3_model *m, sam3__loader *L) {
    double arr[64];
    int i;
    if (sam3__cfg_array(L, "processor.image_mean", arr, 64) != 3 && L->rc == SAM3_OK) sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "processor.image_mean must have 3 entries");
    for (i = 0; i < 3 && L->rc == SAM3_OK; i++) m->proc.mean[i] = (float)arr[i];
    if (sam3__cfg_array(L, "processor.image_std", arr, 64) != 3 && L->rc == SAM3_OK) sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "processor.image_std must have 3 entries");
    for (i = 0; i < 3 && L->rc == SAM3_OK; i++) {
        m->proc.std[i] = (float)arr[i];
        if (!(arr[i] > 0)) sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "processor.image_std must be positive");
    }
}

/* One step of the SAM 3 config or weights, run in order while the load is still good: the
   first failure's message is the one reported. */
typedef void (*sam3__load_stage)(sam3_model *m, sam3__loader *L);

/* SAM 1 (HF SamModel): ViT-B/L/H, its neck, and the interactive head with SAM 1's flags. */
static void sam3__load_sam1_config(sam3_model *m, sam3__loader *L) {
    const int64_t BIG = 1 << 20;
    sam3__s1_cfg *v = &m->s1;
    sam3__trk_cfg *t = &m->trk;
    double arr[64];
    int i, n;
    v->hidden = (int)sam3__cfg_i(L, "sam1.vision.hidden_size", 1, BIG);
    v->out_ch = (int)sam3__cfg_i(L, "sam1.vision.output_channels", 1, BIG);
    v->layers = (int)sam3__cfg_i(L, "sam1.vision.num_hidden_layers", 1, 4096);
    v->heads = (int)sam3__cfg_i(L, "sam1.vision.num_attention_heads", 1, 4096);
    if (L->image_size && L->rc == SAM3_OK) {
        /* SamVisionEncoder's absolute position embedding is a learned (image/patch)^2 grid */
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "image_size %d: a SAM 1 model runs only at its own input size", L->image_size);
        return;
    }
    v->image = (int)sam3__cfg_i(L, "sam1.vision.image_size", 1, 65536);
    v->patch = (int)sam3__cfg_i(L, "sam1.vision.patch_size", 1, 65536);
    v->window = (int)sam3__cfg_i(L, "sam1.vision.window_size", 0, 65536);
    v->mlp = (int)sam3__cfg_i(L, "sam1.vision.mlp_dim", 1, BIG);
    v->qkv_bias = (int)sam3__cfg_i(L, "sam1.vision.qkv_bias", 0, 1);
    v->use_abs = (int)sam3__cfg_i(L, "sam1.vision.use_abs_pos", 0, 1);
    v->use_rel = (int)sam3__cfg_i(L, "sam1.vision.use_rel_pos", 0, 1);
    v->ln_eps = (float)sam3__cfg_f(L, "sam1.vision.layer_norm_eps", 0, 1);
    if (sam3__cfg_i(L, "sam1.vision.num_channels", 1, 3) != 3 && L->rc == SAM3_OK) sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "only RGB models are supported");
    sam3__cfg_act(L, "sam1.vision.hidden_act", "gelu");
    sam3__cfg_act(L, "sam1.prompt_encoder.hidden_act", "gelu");
    sam3__cfg_act(L, "sam1.mask_decoder.hidden_act", "relu");
    n = sam3__cfg_array(L, "sam1.vision.global_attn_indexes", arr, 64);
    if (L->rc != SAM3_OK) return;
    v->grid = v->image / v->patch;
    if (v->grid < 1 || !sam3__check_heads(L, "sam1 vision", v->hidden, v->heads)) {
        if (L->rc == SAM3_OK) sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "sam1: image smaller than one patch");
        return;
    }
    v->head_dim = v->hidden / v->heads;
    v->is_global = (unsigned char *)sam3__acalloc(&m->a, (size_t)v->layers, 1);
    if (!v->is_global) { sam3__lfail(L, SAM3_ERR_OUT_OF_MEMORY, "out of memory"); return; }
    for (i = 0; i < v->layers; i++) v->is_global[i] = v->window == 0; /* HF: window 0 = every block global */
    for (i = 0; i < n; i++) {
        if (!(arr[i] >= 0 && arr[i] < v->layers && arr[i] == floor(arr[i]))) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "sam1.vision.global_attn_indexes: %g out of range", arr[i]); return; }
        v->is_global[(int)arr[i]] = 1;
    }
    v->longest_edge = (int)sam3__cfg_i(L, "processor.longest_edge", 1, 65536);
    v->pad_size = (int)sam3__cfg_i(L, "processor.pad_size", 1, 65536);
    m->proc.rescale = sam3__cfg_f(L, "processor.rescale_factor", 1e-12, 1e12);
    sam3__load_norm_config(m, L);
    if (L->rc != SAM3_OK) return;
    if (v->pad_size != v->image || v->longest_edge > v->pad_size) {
        /* SamModel accepts only image_size x image_size pixel values */
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "processor: pad_size %d / longest_edge %d do not fit vision image_size %d", v->pad_size, v->longest_edge, v->image);
        return;
    }
    m->proc.image = v->pad_size;
    sam3__load_head_config(L, "sam1", t);
    t->tw_eps = (float)sam3__cfg_f(L, "sam1.mask_decoder.layer_norm_eps", 0, 1);
    if (L->rc != SAM3_OK) return;
    if ((int)sam3__cfg_i(L, "sam1.mask_decoder.hidden_size", 1, BIG) != t->D || v->out_ch != t->D)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "sam1: neck %d, prompt encoder %d and mask decoder widths must be equal", v->out_ch, t->D);
    else if (t->D % 8 || (t->D / t->down) % t->heads || t->D % 2 || t->mask_in_ch % 4)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "sam1: width %d does not split into the decoder's heads/upscaling", t->D);
    else if (t->grid != v->grid)
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "sam1: prompt grid %d differs from the vision grid %d", t->grid, v->grid);
    if (L->rc != SAM3_OK) return;
    t->fpn = t->D;
    t->tw_eps = t->tw_eps; /* two-way LNs use the config's eps (1e-6), unlike the SAM 3 tracker */
    t->obj_token = t->iou_sigmoid = t->box_pad = t->empty_pad = t->dynamic = 0;
    t->mlp_depth = 2;
    t->present = 1;
}

/* The vision trunk (Sam3ViTModel): its sizes, and the patch grid and head width they give. */
static void sam3__load_vision_config(sam3_model *m, sam3__loader *L) {
    const int64_t BIG = 1 << 20;
    sam3__vit_cfg *v = &m->vit;
    v->hidden = (int)sam3__cfg_i(L, "vision.hidden_size", 1, BIG);
    v->inter = (int)sam3__cfg_i(L, "vision.intermediate_size", 1, BIG);
    v->layers = (int)sam3__cfg_i(L, "vision.num_hidden_layers", 1, 4096);
    v->heads = (int)sam3__cfg_i(L, "vision.num_attention_heads", 1, 4096);
    v->channels = (int)sam3__cfg_i(L, "vision.num_channels", 1, 3);
    v->image = sam3__image_size(L, "vision.image_size");
    v->patch = (int)sam3__cfg_i(L, "vision.patch_size", 1, 65536);
    v->pretrain_grid = (int)sam3__cfg_i(L, "vision.pretrain_image_size", 1, 65536);
    v->window = (int)sam3__cfg_i(L, "vision.window_size", 1, 65536);
    v->rope_theta = sam3__cfg_f(L, "vision.rope_theta", 1e-30, 1e30);
    v->ln_eps = (float)sam3__cfg_f(L, "vision.layer_norm_eps", 0, 1);
    sam3__cfg_act(L, "vision.hidden_act", "gelu");
    if (L->rc != SAM3_OK) return;
    if (v->channels != 3) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "vision.num_channels = %d: only RGB models are supported", v->channels); return; }
    if (!sam3__check_image_size(L, v->image, v->patch, SAM3__MAX(3 * v->hidden, v->inter))) return;
    v->grid = v->image / v->patch;
    v->pretrain_grid /= v->patch;
    if (v->grid < 1 || v->pretrain_grid < 1) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "vision: image/pretrain size smaller than one patch"); return; }
    if (!sam3__check_heads(L, "vision", v->hidden, v->heads)) return;
    v->head_dim = v->hidden / v->heads;
    if (v->head_dim % 4) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "vision: head dim %d must be divisible by 4 for axial RoPE", v->head_dim); return; }
}

/* The processor: the size it resizes to and its pixel normalisation. */
static void sam3__load_processor_config(sam3_model *m, sam3__loader *L) {
    m->proc.image = sam3__image_size(L, "processor.image_size");
    m->proc.rescale = sam3__cfg_f(L, "processor.rescale_factor", 1e-12, 1e12);
    sam3__load_norm_config(m, L);
    if (L->rc != SAM3_OK) return;
    if (m->proc.image != m->vit.image) {
        /* The global layers' RoPE grid is fixed by vision.image_size (the reference cannot run
           other sizes either), so the processor must resize to exactly that. */
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "processor.image_size %d differs from vision.image_size %d", m->proc.image, m->vit.image);
        return;
    }
}

/* Which trunk layers attend globally (the others attend within windows). */
static void sam3__load_global_config(sam3_model *m, sam3__loader *L) {
    sam3__vit_cfg *v = &m->vit;
    double arr[64];
    int i, n = sam3__cfg_array(L, "vision.global_attn_indexes", arr, 64);
    if (L->rc != SAM3_OK) return;
    v->is_global = (unsigned char *)sam3__acalloc(&m->a, (size_t)v->layers, 1);
    if (!v->is_global) { sam3__lfail(L, SAM3_ERR_OUT_OF_MEMORY, "out of memory"); return; }
    for (i = 0; i < n; i++) {
        if (!(arr[i] >= 0 && arr[i] < v->layers && arr[i] == floor(arr[i]))) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "vision.global_attn_indexes: %g out of range", arr[i]); return; }
        v->is_global[(int)arr[i]] = 1;
    }
}

/* The FPN neck (Sam3VisionNeck): one level per scale factor, the last one discarded. */
static void sam3__load_neck_config(sam3_model *m, sam3__loader *L) {
    const sam3__vit_cfg *v = &m->vit;
    sam3__neck_cfg *nk = &m->neck;
    double arr[SAM3__MAX_LEVELS];
    int i, n;
    nk->fpn = (int)sam3__cfg_i(L, "neck.fpn_hidden_size", 1, 1 << 20);
    n = sam3__cfg_array(L, "neck.scale_factors", arr, SAM3__MAX_LEVELS);
    if (L->rc != SAM3_OK) return;
    if (n < 2) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck.scale_factors: need at least 2 levels, got %d", n); return; }
    nk->n_levels = n;
    nk->n_kept = n - 1;
    for (i = 0; i < n; i++) {
        /* compared as a double: (int) of an out-of-range or NaN double is undefined behaviour */
        const double x2 = arr[i] * 2;
        const int s2 = x2 == 8 ? 8 : x2 == 4 ? 4 : x2 == 2 ? 2 : x2 == 1 ? 1 : 0;
        if (!s2) {
            sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck.scale_factors: %g not one of 4, 2, 1, 0.5", arr[i]);
            return;
        }
        nk->scale_x2[i] = s2;
        nk->side[i] = s2 == 1 ? v->grid / 2 : v->grid * s2 / 2;
        if (nk->side[i] < 1) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck level %d would be empty", i); return; }
        if ((double)nk->side[i] * nk->side[i] * SAM3__MAX(nk->fpn, v->hidden) > (double)INT_MAX) {
            sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck level %d: a %dx%d map is too large", i, nk->side[i], nk->side[i]);
            return;
        }
        if (s2 == 8 && v->hidden % 4) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck: vision hidden %d not divisible by 4", v->hidden); return; }
        if (s2 == 4 && v->hidden % 2) { sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck: vision hidden %d not divisible by 2", v->hidden); return; }
    }
}

/* The CLIP text encoder and its BPE tokenizer, whose ids must fit the encoder's vocabulary. */
static void sam3__load_text_config(sam3_model *m, sam3__loader *L) {
    const int64_t BIG = 1 << 20;
    m->text.vocab = (int)sam3__cfg_i(L, "text.vocab_size", 1, 1 << 24);
    m->text.hidden = (int)sam3__cfg_i(L, "text.hidden_size", 1, BIG);
    m->text.inter = (int)sam3__cfg_i(L, "text.intermediate_size", 1, BIG);
    m->text.layers = (int)sam3__cfg_i(L, "text.num_hidden_layers", 1, 4096);
    m->text.heads = (int)sam3__cfg_i(L, "text.num_attention_heads", 1, 4096);
    m->text.max_pos = (int)sam3__cfg_i(L, "text.max_position_embeddings", 2, 65536);
    m->text.ln_eps = (float)sam3__cfg_f(L, "text.layer_norm_eps", 0, 1);
    {
        /* CLIP's own activation, quick_gelu, is what transformers gives a text_config built from a dict */
        const sam3__cfg *ca = sam3__file_cfg(L->f, "text.hidden_act");
        m->text.quick_gelu = ca && ca->type == SAM3__T_STR && ca->count == 10 && memcmp(ca->data, "quick_gelu", 10) == 0;
        if (!m->text.quick_gelu) sam3__cfg_act(L, "text.hidden_act", "gelu");
    }
    sam3__check_heads(L, "text", m->text.hidden, m->text.heads);

    m->tok.vocab = (int)sam3__cfg_i(L, "tokenizer.vocab_size", 1, 1 << 24);
    m->tok.n_merges = (int)sam3__cfg_i(L, "tokenizer.n_merges", 0, 1 << 24);
    m->tok.bos = (int)sam3__cfg_i(L, "tokenizer.bos_token_id", 0, (1 << 24) - 1);
    m->tok.eos = (int)sam3__cfg_i(L, "tokenizer.eos_token_id", 0, (1 << 24) - 1);
    m->tok.pad = (int)sam3__cfg_i(L, "tokenizer.pad_token_id", 0, (1 << 24) - 1);
    m->tok.max_length = (int)sam3__cfg_i(L, "tokenizer.max_length", 2, 65536);
    if (L->rc != SAM3_OK) return;
    if (m->tok.bos >= m->tok.vocab || m->tok.eos >= m->tok.vocab || m->tok.vocab > m->text.vocab) {
        sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "tokenizer: vocab %d (bos %d, eos %d) does not fit the text model's vocab %d", m->tok.vocab,
                    m->tok.bos, m->tok.eos, m->text.vocab);
        return;
    }
}

/* The prompt modules: geometry encoder, DETR encoder and decoder, mask decoder. */
static void sam3__load_prompt_config(sam3_model *m, sam3__loader *L) {
    const int64_t BIG = 1 << 20;
    m->geo.hidden = (int)sam3__cfg_i(L, "geometry.hidden_size", 1, BIG);
    m->geo.layers = (int)sam3__cfg_i(L, "geometry.num_layers", 0, 4096);
    m->geo.heads = (int)sam3__cfg_i(L, "geometry.num_attention_heads", 1, 4096);
    m->geo.inter = (int)sam3__cfg_i(L, "geometry.intermediate_size", 1, BIG);
    m->geo.roi = (int)sam3__cfg_i(L, "geometry.roi_size", 1, 64);
    sam3__cfg_act(L, "geometry.hidden_act", "relu");
    m->enc.hidden = (int)sam3__cfg_i(L, "detr_encoder.hidden_size", 1, BIG);
    m->enc.layers = (int)sam3__cfg_i(L, "detr_encoder.num_layers", 0, 4096);
    m->enc.heads = (int)sam3__cfg_i(L, "detr_encoder.num_attention_heads", 1, 4096);
    m->enc.inter = (int)sam3__cfg_i(L, "detr_encoder.intermediate_size", 1, BIG);
    sam3__cfg_act(L, "detr_encoder.hidden_act", "relu");
    m->dec.hidden = (int)sam3__cfg_i(L, "detr_decoder.hidden_size", 1, BIG);
    m->dec.layers = (int)sam3__cfg_i(L, "detr_decoder.num_layers", 1, 4096);
    m->dec.queries = (int)sam3__cfg_i(L, "detr_decoder.num_queries", 1, 1 << 16);
    m->dec.heads = (int)sam3__cfg_i(L, "detr_decoder.num_attention_heads", 1, 4096);
    m->dec.inter = (int)sam3__cfg_i(L, "detr_decoder.intermediate_size", 1, BIG);
    sam3__cfg_act(L, "detr_decoder.hidden_act", "relu");
    m->mask.hidden = (int)sam3__cfg_i(L, "mask_decoder.hidden_size", 1, BIG);
    m->mask.stages = (int)sam3__cfg_i(L, "mask_decoder.num_upsampling_stages", 0, SAM3__MAX_LEVELS);
    m->mask.heads = (int)sam3__cfg_i(L, "mask_decoder.num_attention_heads", 1, 4096);
    if (L->rc != SAM3_OK) return;
    sam3__check_heads(L, "geometry", m->geo.hidden, m->geo.heads);
    sam3__check_heads(L, "detr_encoder", m->enc.hidden, m->enc.heads);
    sam3__check_heads(L, "detr_decoder", m->dec.hidden, m->dec.heads);
    sam3__check_heads(L, "mask_decoder", m->mask.hidden, m->mask.heads);
    if (L->rc != SAM3_OK) return;
    {
        int d = m->neck.fpn;
        /* One width flows from the neck through every prompt module (the reference wires them
           together without projections), so they must agree. */
        if (m->geo.hidden != d || m->enc.hidden != d || m->dec.hidden != d || m->mask.hidden != d)
            sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck %d, geometry %d, DETR encoder %d, decoder %d and mask decoder %d widths must be equal", d,
                        m->geo.hidden, m->enc.hidden, m->dec.hidden, m->mask.hidden);
        if (d % 2) sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "neck width %d must be even (sine position features)", d);
        if (m->mask.stages < m->neck.n_kept - 1)
            sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "mask_decoder.num_upsampling_stages %d < %d kept FPN levels - 1", m->mask.stages, m->neck.n_kept);
    }
}

/* Reads every hyper-parameter the code needs and checks they fit together: 'arch' picks SAM 1's
   reader or the SAM 3 stages, each after the ones whose sizes it checks against. */
static void sam3__load_config(sam3_model *m, sam3__loader *L) {
    static const sam3__load_stage stages[] = {sam3__load_vision_config, sam3__load_processor_config, sam3__load_global_config,
                                              sam3__load_neck_config,   sam3__load_text_config,      sam3__load_prompt_config,
                                              sam3__load_tracker_config, sam3__load_video_config};
    const sam3__cfg *c = sam3__file_cfg(L->f, "arch");
    size_t i;
    if (!c || c->type != SAM3__T_STR) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "config key 'arch' is missing: not a converted model"); return; }
    if (c->count == 4 && memcmp(c->data, "sam1", 4) == 0) {
        m->arch = SAM3__ARCH_SAM1;
        sam3__load_sam1_config(m, L);
        return;
    }
    if (!(c->count == 4 && memcmp(c->data, "sam3", 4) == 0)) {
        sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "file holds arch '%.*s', this build runs 'sam3' and 'sam1'", (int)SAM3__MIN(c->count, 64u),
                    (const char *)c->data);
        return;
    }
    for (i = 0; i < sizeof(stages) / sizeof(stages[0]) && L->rc == SAM3_OK; i++) stages[i](m, L);
}

/* The prompt encoder's image-wide part under root ("" for SAM 1's SamPromptEncoder,
   "tracker_model." for SAM 3's): the random Fourier features, the mask embedding's convolutions
   and norms, no_mask_embed. D: the prompt width; mi: the mask embedding's channels. */
static void sam3__get_prompt_mask_embed(sam3__loader *L, const char *root, int D, int mi, sam3__trk_w *w) {
    char p[128];
    sam3__nm(L, "%sshared_image_embedding.positional_embedding", root); w->gauss = sam3__get(L, 2, 2, D / 2, 0, 0);
    snprintf(p, sizeof(p), "%sprompt_encoder.mask_embed.conv1", root); w->mask_conv1 = sam3__get_conv(L, p, mi / 4, 1, 2);
    snprintf(p, sizeof(p), "%sprompt_encoder.mask_embed.conv2", root); w->mask_conv2 = sam3__get_conv(L, p, mi, mi / 4, 2);
    snprintf(p, sizeof(p), "%sprompt_encoder.mask_embed.conv3", root); w->mask_conv3 = sam3__get_conv(L, p, D, mi, 1);
    snprintf(p, sizeof(p), "%sprompt_encoder.mask_embed.layer_norm1", root); w->mask_ln1 = sam3__get_norm(L, p, mi / 4);
    snprintf(p, sizeof(p), "%sprompt_encoder.mask_embed.layer_norm2", root); w->mask_ln2 = sam3__get_norm(L, p, mi);
    sam3__nm(L, "%sprompt_encoder.no_mask_embed.weight", root); w->no_mask = sam3__get(L, 2, 1, D, 0, 0);
}

static void sam3__load_sam1_weights(sam3_model *m, sam3__loader *L) {
    const sam3__s1_cfg *v = &m->s1;
    const sam3__trk_cfg *t = &m->trk;
    sam3__s1_w *w = &m->s1_w;
    sam3__trk_w *h = &m->trk_w;
    const int C = v->hidden, D = t->D, di = t->D / t->down, mi = t->mask_in_ch;
    char p[256];
    int i;
    size_t bytes = (size_t)v->layers * sizeof(sam3__s1_layer_w) + SAM3__ALIGN + (size_t)t->layers * sizeof(sam3__twoway_layer_w) + SAM3__ALIGN;
    unsigned char *mem = (unsigned char *)sam3__acalloc(&m->a, bytes, 1);
    if (!mem) { sam3__lfail(L, SAM3_ERR_OUT_OF_MEMORY, "out of memory"); return; }
    m->layer_mem = mem;
    w->layers = (sam3__s1_layer_w *)(void *)mem;
    h->layers = (sam3__twoway_layer_w *)(void *)(mem + ((size_t)v->layers * sizeof(sam3__s1_layer_w) + SAM3__ALIGN - 1) / SAM3__ALIGN * SAM3__ALIGN);
    /* SamVisionEncoder */
    w->patch = sam3__get_conv(L, "vision_encoder.patch_embed.projection", C, 3, v->patch);
    if (v->use_abs) { sam3__nm(L, "vision_encoder.pos_embed"); w->pos = sam3__get(L, 4, 1, v->grid, v->grid, C); }
    for (i = 0; i < v->layers && L->rc == SAM3_OK; i++) {
        sam3__s1_layer_w *lw = &w->layers[i];
        int S = v->is_global[i] ? v->grid : v->window;
        snprintf(p, sizeof(p), "vision_encoder.layers.%d.layer_norm1", i); lw->ln1 = sam3__get_norm(L, p, C);
        snprintf(p, sizeof(p), "vision_encoder.layers.%d.layer_norm2", i); lw->ln2 = sam3__get_norm(L, p, C);
        sam3__nm(L, "vision_encoder.layers.%d.attn.qkv.weight", i); sam3__get_weight(L, &lw->qkv, 2, 3 * C, C, 0, 0);
        lw->qkv.b = NULL;
        if (v->qkv_bias) { sam3__nm(L, "vision_encoder.layers.%d.attn.qkv.bias", i); lw->qkv.b = sam3__get(L, 1, 3 * C, 0, 0, 0); }
        snprintf(p, sizeof(p), "vision_encoder.layers.%d.attn.proj", i); lw->proj = sam3__get_lin(L, p, C, C);
        if (v->use_rel) {
            /* exactly 2S-1 rows, so transformers' SamVisionAttention.get_rel_pos's linear resize to 2S-1 is the identity */
            sam3__nm(L, "vision_encoder.layers.%d.attn.rel_pos_h", i); lw->rel_h = sam3__get(L, 2, 2 * S - 1, v->head_dim, 0, 0);
            sam3__nm(L, "vision_encoder.layers.%d.attn.rel_pos_w", i); lw->rel_w = sam3__get(L, 2, 2 * S - 1, v->head_dim, 0, 0);
        }
        snprintf(p, sizeof(p), "vision_encoder.layers.%d.mlp.lin1", i); lw->fc1 = sam3__get_lin(L, p, v->mlp, C);
        snprintf(p, sizeof(p), "vision_encoder.layers.%d.mlp.lin2", i); lw->fc2 = sam3__get_lin(L, p, C, v->mlp);
    }
    sam3__nm(L, "vision_encoder.neck.conv1.weight"); sam3__get_weight(L, &w->neck1, 4, v->out_ch, C, 1, 1);
    sam3__nm(L, "vision_encoder.neck.conv2.weight"); sam3__get_weight(L, &w->neck2, 4, v->out_ch, v->out_ch, 3, 3);
    w->neck1.b = w->neck2.b = NULL;
    w->neck_ln1 = sam3__get_norm(L, "vision_encoder.neck.layer_norm1", v->out_ch);
    w->neck_ln2 = sam3__get_norm(L, "vision_encoder.neck.layer_norm2", v->out_ch);
    /* SamPromptEncoder */
    sam3__get_prompt_mask_embed(L, "", D, mi, h);
    sam3__nm(L, "prompt_encoder.not_a_point_embed.weight"); h->not_a_point = sam3__get(L, 2, 1, D, 0, 0);
    for (i = 0; i < t->n_point_emb; i++) { sam3__nm(L, "prompt_encoder.point_embed.%d.weight", i); h->point_rows[i] = sam3__get(L, 2, 1, D, 0, 0); }
    /* SamMaskDecoder */
    sam3__nm(L, "mask_decoder.iou_token.weight"); h->iou_token = sam3__get(L, 2, 1, D, 0, 0);
    sam3__nm(L, "mask_decoder.mask_tokens.weight"); h->mask_tokens = sam3__get(L, 2, t->n_mask_tokens, D, 0, 0);
    for (i = 0; i < t->layers && L->rc == SAM3_OK; i++) {
        sam3__twoway_layer_w *lw = &h->layers[i];
        sam3__get_twoway_layer(L, "mask_decoder.transformer.layers", i, D, di, "out_proj", lw);
        memset(&lw->mlp, 0, sizeof(lw->mlp));
        snprintf(p, sizeof(p), "mask_decoder.transformer.layers.%d.mlp.lin1", i); lw->mlp.in = sam3__get_lin(L, p, t->mlp_dim, D);
        snprintf(p, sizeof(p), "mask_decoder.transformer.layers.%d.mlp.lin2", i); lw->mlp.out = sam3__get_lin(L, p, D, t->mlp_dim);
    }
    h->final_attn = sam3__get_attn_ex(L, "mask_decoder.transformer.final_attn_token_to_image", D, di, "out_proj");
    h->final_ln = sam3__get_norm(L, "mask_decoder.transformer.layer_norm_final_attn", D);
    h->up1 = sam3__get_convt(L, "mask_decoder.upscale_conv1", D, D / 4);
    h->up2 = sam3__get_convt(L, "mask_decoder.upscale_conv2", D / 4, D / 8);
    h->up_ln = sam3__get_norm(L, "mask_decoder.upscale_layer_norm", D / 4);
    for (i = 0; i < t->n_mask_tokens; i++) {
        snprintf(p, sizeof(p), "mask_decoder.output_hypernetworks_mlps.%d", i);
        h->hypernet[i] = sam3__get_ffn(L, p, 3, D, D, D / 8);
    }
    h->iou_head = sam3__get_ffn(L, "mask_decoder.iou_prediction_head", t->iou_depth, D, t->iou_hidden, t->n_mask_tokens);
}

/* FPN level j under prefix (the SAM 3 neck and the interactive head's neck are built alike): a
   2x transposed convolution for each doubling of its scale, then 1x1 and 3x3 projections to out. */
static void sam3__get_fpn_level(sam3__loader *L, const char *prefix, int j, int s2, int C, int out, sam3__fpn_w *f) {
    char p[200];
    int cin = C;
    memset(f, 0, sizeof(*f));
    if (s2 >= 4) {
        snprintf(p, sizeof(p), "%s.%d.scale_layers.0", prefix, j); f->up1 = sam3__get_convt(L, p, C, C / 2);
        cin = C / 2;
    }
    if (s2 == 8) {
        snprintf(p, sizeof(p), "%s.%d.scale_layers.2", prefix, j); f->up2 = sam3__get_convt(L, p, C / 2, C / 4);
        cin = C / 4;
    }
    snprintf(p, sizeof(p), "%s.%d.proj1", prefix, j); f->proj1 = sam3__get_conv(L, p, out, cin, 1);
    snprintf(p, sizeof(p), "%s.%d.proj2", prefix, j); f->proj2 = sam3__get_conv(L, p, out, out, 3);
}

/* One block for all per-layer weight arrays, cut in 64-byte aligned pieces. */
static void sam3__load_layer_arrays(sam3_model *m, sam3__loader *L) {
    size_t bytes = 0, off = 0, s;
    unsigned char *mem;
    bytes += (size_t)m->vit.layers * sizeof(sam3__vit_layer_w) + SAM3__ALIGN;
    bytes += (size_t)m->text.layers * sizeof(sam3__clip_layer_w) + SAM3__ALIGN;
    bytes += (size_t)m->geo.layers * sizeof(sam3__xlayer_w) + SAM3__ALIGN;
    bytes += (size_t)m->enc.layers * sizeof(sam3__xlayer_w) + SAM3__ALIGN;
    bytes += (size_t)m->dec.layers * sizeof(sam3__dec_layer_w) + SAM3__ALIGN;
    bytes += (size_t)m->trk.layers * sizeof(sam3__twoway_layer_w) + SAM3__ALIGN;
    mem = (unsigned char *)sam3__acalloc(&m->a, bytes, 1);
    if (!mem) { sam3__lfail(L, SAM3_ERR_OUT_OF_MEMORY, "out of memory"); return; }
    m->layer_mem = mem;
#define SAM3__TAKE(ptr, type, n)                                     \
    do {                                                             \
        s = (size_t)(n) * sizeof(type);                              \
        (ptr) = (type *)(void *)(mem + off);                         \
        off += (s + SAM3__ALIGN - 1) / SAM3__ALIGN * SAM3__ALIGN;     \
    } while (0)
    SAM3__TAKE(m->vit_w.layers, sam3__vit_layer_w, m->vit.layers);
    SAM3__TAKE(m->text_w.layers, sam3__clip_layer_w, m->text.layers);
    SAM3__TAKE(m->geo_w.layers, sam3__xlayer_w, m->geo.layers);
    SAM3__TAKE(m->enc_w, sam3__xlayer_w, m->enc.layers);
    SAM3__TAKE(m->dec_w.layers, sam3__dec_layer_w, m->dec.layers);
    SAM3__TAKE(m->trk_w.layers, sam3__twoway_layer_w, m->trk.layers);
#undef SAM3__TAKE
}

/* Vision trunk: Sam3ViTModel (vision_encoder.backbone) */
static void sam3__load_vision_weights(sam3_model *m, sam3__loader *L) {
    const sam3__vit_cfg *v = &m->vit;
    const int C = v->hidden;
    char p[200];
    int i;
    sam3__nm(L, "vision_encoder.backbone.embeddings.patch_embeddings.projection.weight");
    sam3__get_weight(L, &m->vit_w.patch, 4, C, v->channels, v->patch, v->patch);
    m->vit_w.patch.b = NULL;
    sam3__nm(L, "vision_encoder.backbone.embeddings.position_embeddings");
    m->vit_w.pos = sam3__get(L, 3, 1, (int64_t)v->pretrain_grid * v->pretrain_grid, C, 0);
    m->vit_w.ln_pre = sam3__get_norm(L, "vision_encoder.backbone.layer_norm", C);
    for (i = 0; i < v->layers && L->rc == SAM3_OK; i++) {
        sam3__vit_layer_w *w = &m->vit_w.layers[i];
        snprintf(p, sizeof(p), "vision_encoder.backbone.layers.%d.layer_norm1", i); w->ln1 = sam3__get_norm(L, p, C);
        snprintf(p, sizeof(p), "vision_encoder.backbone.layers.%d.layer_norm2", i); w->ln2 = sam3__get_norm(L, p, C);
        snprintf(p, sizeof(p), "vision_encoder.backbone.layers.%d.attention", i); w->attn = sam3__get_attn(L, p, C, "o_proj");
        /* tools/convert.py stores the three projections together: one product for q, k and v
           (pointers compared only when all three were found: q + C*C is then q's end) */
        {
            const float *wq = w->attn.q.w, *wk = w->attn.k.w, *wv = w->attn.v.w;
            const uint16_t *hq = w->attn.q.wh, *hk = w->attn.k.wh, *hv = w->attn.v.wh;
            memset(&w->qkv, 0, sizeof(w->qkv));
            w->qkv.w = wq && wk && wv && wk == wq + (size_t)C * C && wv == wk + (size_t)C * C ? wq : NULL;
            w->qkv.wh = hq && hk && hv && hk == hq + (size_t)C * C && hv == hk + (size_t)C * C ? hq : NULL;
        }
        snprintf(p, sizeof(p), "vision_encoder.backbone.layers.%d.mlp.fc1", i); w->fc1 = sam3__get_lin(L, p, v->inter, C);
        snprintf(p, sizeof(p), "vision_encoder.backbone.layers.%d.mlp.fc2", i); w->fc2 = sam3__get_lin(L, p, C, v->inter);
    }
}

/* FPN neck: Sam3VisionNeck (vision_encoder.neck), the discarded last level is not needed */
static void sam3__load_neck_weights(sam3_model *m, sam3__loader *L) {
    int j;
    for (j = 0; j < m->neck.n_kept && L->rc == SAM3_OK; j++)
        sam3__get_fpn_level(L, "vision_encoder.neck.fpn_layers", j, m->neck.scale_x2[j], m->vit.hidden, m->neck.fpn, &m->fpn_w[j]);
}

/* Text encoder: CLIPTextModel (text_encoder.text_model) + Sam3Model.text_projection */
static void sam3__load_text_weights(sam3_model *m, sam3__loader *L) {
    const int D = m->neck.fpn, T = m->text.hidden;
    char p[200];
    int i;
    sam3__nm(L, "text_encoder.text_model.embeddings.token_embedding.weight");
    m->text_w.tok_emb = sam3__get(L, 2, m->text.vocab, T, 0, 0);
    sam3__nm(L, "text_encoder.text_model.embeddings.position_embedding.weight");
    m->text_w.pos_emb = sam3__get(L, 2, m->text.max_pos, T, 0, 0);
    for (i = 0; i < m->text.layers && L->rc == SAM3_OK; i++) {
        sam3__clip_layer_w *w = &m->text_w.layers[i];
        snprintf(p, sizeof(p), "text_encoder.text_model.encoder.layers.%d.layer_norm1", i); w->ln1 = sam3__get_norm(L, p, T);
        snprintf(p, sizeof(p), "text_encoder.text_model.encoder.layers.%d.layer_norm2", i); w->ln2 = sam3__get_norm(L, p, T);
        snprintf(p, sizeof(p), "text_encoder.text_model.encoder.layers.%d.self_attn", i); w->attn = sam3__get_attn(L, p, T, "out_proj");
        snprintf(p, sizeof(p), "text_encoder.text_model.encoder.layers.%d.mlp.fc1", i); w->fc1 = sam3__get_lin(L, p, m->text.inter, T);
        snprintf(p, sizeof(p), "text_encoder.text_model.encoder.layers.%d.mlp.fc2", i); w->fc2 = sam3__get_lin(L, p, T, m->text.inter);
    }
    m->text_w.final_ln = sam3__get_norm(L, "text_encoder.text_model.final_layer_norm", T);
    m->text_w.proj = sam3__get_lin(L, "text_projection", D, T);
}

/* Geometry encoder: Sam3GeometryEncoder */
static void sam3__load_geometry_weights(sam3_model *m, sam3__loader *L) {
    sam3__geo_w *g = &m->geo_w;
    const int D = m->neck.fpn;
    char p[200];
    int i;
    g->direct = sam3__get_lin(L, "geometry_encoder.boxes_direct_project", D, 4);
    g->vision_ln = sam3__get_norm(L, "geometry_encoder.vision_layer_norm", D);
    g->pool = sam3__get_conv(L, "geometry_encoder.boxes_pool_project", D, D, m->geo.roi);
    g->pos_enc = sam3__get_lin(L, "geometry_encoder.boxes_pos_enc_project", D, D + 2);
    sam3__nm(L, "geometry_encoder.label_embed.weight"); g->label_embed = sam3__get(L, 2, 2, D, 0, 0);
    sam3__nm(L, "geometry_encoder.cls_embed.weight"); g->cls_embed = sam3__get(L, 2, 1, D, 0, 0);
    g->final_proj = sam3__get_lin(L, "geometry_encoder.final_proj", D, D);
    g->prompt_ln = sam3__get_norm(L, "geometry_encoder.prompt_layer_norm", D);
    g->out_ln = sam3__get_norm(L, "geometry_encoder.output_layer_norm", D);
    for (i = 0; i < m->geo.layers && L->rc == SAM3_OK; i++) {
        snprintf(p, sizeof(p), "geometry_encoder.layers.%d", i);
        g->layers[i] = sam3__get_xlayer(L, p, D, m->geo.inter);
    }
}

/* DETR encoder: Sam3DetrEncoder */
static void sam3__load_detr_encoder_weights(sam3_model *m, sam3__loader *L) {
    char p[200];
    int i;
    for (i = 0; i < m->enc.layers && L->rc == SAM3_OK; i++) {
        snprintf(p, sizeof(p), "detr_encoder.layers.%d", i);
        m->enc_w[i] = sam3__get_xlayer(L, p, m->neck.fpn, m->enc.inter);
    }
}

/* DETR decoder: Sam3DetrDecoder */
static void sam3__load_detr_decoder_weights(sam3_model *m, sam3__loader *L) {
    sam3__dec_w *d = &m->dec_w;
    const int D = m->neck.fpn, Q = m->dec.queries, nh = m->dec.heads;
    char p[200];
    int i;
    sam3__nm(L, "detr_decoder.query_embed.weight"); d->query_embed = sam3__get(L, 2, Q, D, 0, 0);
    sam3__nm(L, "detr_decoder.reference_points.weight"); d->ref_points = sam3__get(L, 2, Q, 4, 0, 0);
    sam3__nm(L, "detr_decoder.presence_token.weight"); d->presence_token = sam3__get(L, 2, 1, D, 0, 0);
    sam3__get_mlp(L, "detr_decoder.ref_point_head", d->ref_head, 2, 2 * D, D, D);
    sam3__get_mlp(L, "detr_decoder.box_rpb_embed_x", d->rpb_x, 2, 2, D, nh);
    sam3__get_mlp(L, "detr_decoder.box_rpb_embed_y", d->rpb_y, 2, 2, D, nh);
    sam3__get_mlp(L, "detr_decoder.box_head", d->box_head, 3, D, D, 4);
    sam3__get_mlp(L, "detr_decoder.presence_head", d->presence_head, 3, D, D, 1);
    d->out_ln = sam3__get_norm(L, "detr_decoder.output_layer_norm", D);
    d->presence_ln = sam3__get_norm(L, "detr_decoder.presence_layer_norm", D);
    for (i = 0; i < m->dec.layers && L->rc == SAM3_OK; i++) {
        sam3__dec_layer_w *w = &d->layers[i];
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.self_attn", i); w->self_attn = sam3__get_attn(L, p, D, "o_proj");
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.text_cross_attn", i); w->text_attn = sam3__get_attn(L, p, D, "o_proj");
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.vision_cross_attn", i); w->vision_attn = sam3__get_attn(L, p, D, "o_proj");
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.self_attn_layer_norm", i); w->self_ln = sam3__get_norm(L, p, D);
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.text_cross_attn_layer_norm", i); w->text_ln = sam3__get_norm(L, p, D);
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.vision_cross_attn_layer_norm", i); w->vision_ln = sam3__get_norm(L, p, D);
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.mlp_layer_norm", i); w->mlp_ln = sam3__get_norm(L, p, D);
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.mlp.fc1", i); w->fc1 = sam3__get_lin(L, p, m->dec.inter, D);
        snprintf(p, sizeof(p), "detr_decoder.layers.%d.mlp.fc2", i); w->fc2 = sam3__get_lin(L, p, D, m->dec.inter);
    }
}

/* Dot-product scoring: Sam3DotProductScoring (widths from the decoder config) */
static void sam3__load_scoring_weights(sam3_model *m, sam3__loader *L) {
    const int D = m->neck.fpn;
    sam3__get_mlp(L, "dot_product_scoring.text_mlp", m->score_w.text_mlp, 2, D, m->dec.inter, D);
    m->score_w.text_ln = sam3__get_norm(L, "dot_product_scoring.text_mlp_out_norm", D);
    m->score_w.text_proj = sam3__get_lin(L, "dot_product_scoring.text_proj", D, D);
    m->score_w.query_proj = sam3__get_lin(L, "dot_product_scoring.query_proj", D, D);
}

/* Mask decoder: Sam3MaskDecoder; only the stages the kept FPN levels drive */
static void sam3__load_mask_weights(sam3_model *m, sam3__loader *L) {
    sam3__mask_w *w = &m->mask_w;
    const int D = m->neck.fpn;
    char p[200];
    int i;
    w->cross_ln = sam3__get_norm(L, "mask_decoder.prompt_cross_attn_norm", D);
    w->cross_attn = sam3__get_attn(L, "mask_decoder.prompt_cross_attn", D, "o_proj");
    for (i = 0; i < m->neck.n_kept - 1 && L->rc == SAM3_OK; i++) {
        snprintf(p, sizeof(p), "mask_decoder.pixel_decoder.conv_layers.%d", i); w->conv[i] = sam3__get_conv(L, p, D, D, 3);
        snprintf(p, sizeof(p), "mask_decoder.pixel_decoder.norms.%d", i); w->gn[i] = sam3__get_norm(L, p, D);
    }
    for (i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "mask_decoder.mask_embedder.layers.%d", i);
        w->embed[i] = sam3__get_lin(L, p, D, D);
    }
    w->inst_proj = sam3__get_conv(L, "mask_decoder.instance_projection", D, D, 1);
    w->sem_proj = sam3__get_conv(L, "mask_decoder.semantic_projection", 1, D, 1);
    if (D % 8 && L->rc == SAM3_OK) sam3__lfail(L, SAM3_ERR_UNSUPPORTED, "mask decoder width %d is not divisible by GroupNorm's 8 groups", D);
}

/* Interactive head (Sam3TrackerModel), when present: its neck and prompt encoder */
static void sam3__load_tracker_prompt_weights(sam3_model *m, sam3__loader *L) {
    const sam3__trk_cfg *t = &m->trk;
    sam3__trk_w *w = &m->trk_w;
    const int TD = t->D, mi = t->mask_in_ch;
    int i, j;
    if (!t->present) return;
    for (j = 0; j < t->n_kept && L->rc == SAM3_OK; j++)
        sam3__get_fpn_level(L, "tracker_neck.fpn_layers", j, t->scale_x2[j], m->vit.hidden, t->fpn, &w->fpn[j]);
    sam3__get_prompt_mask_embed(L, "tracker_model.", TD, mi, w);
    sam3__nm(L, "tracker_model.prompt_encoder.point_embed.weight");
    {
        const float *pe = sam3__get(L, 2, t->n_point_emb, TD, 0, 0);
        for (i = 0; pe && i < t->n_point_emb && i < SAM3__MAX_FFN; i++) w->point_rows[i] = pe + (size_t)i * TD;
    }
    sam3__nm(L, "tracker_model.prompt_encoder.not_a_point_embed.weight"); w->not_a_point = sam3__get(L, 2, 1, TD, 0, 0);
}

/* Interactive head, when present: its mask decoder */
static void sam3__load_tracker_decoder_weights(sam3_model *m, sam3__loader *L) {
    const sam3__trk_cfg *t = &m->trk;
    sam3__trk_w *w = &m->trk_w;
    const int TD = t->D;
    char p[200];
    int i, di;
    if (!t->present) return;
    di = TD / t->down; /* down > 0 once the head is present (sam3__load_tracker_config) */
    sam3__nm(L, "tracker_model.mask_decoder.obj_score_token.weight"); w->obj_token = sam3__get(L, 2, 1, TD, 0, 0);
    sam3__nm(L, "tracker_model.mask_decoder.iou_token.weight"); w->iou_token = sam3__get(L, 2, 1, TD, 0, 0);
    sam3__nm(L, "tracker_model.mask_decoder.mask_tokens.weight"); w->mask_tokens = sam3__get(L, 2, t->n_mask_tokens, TD, 0, 0);
    for (i = 0; i < t->layers && L->rc == SAM3_OK; i++) {
        sam3__twoway_layer_w *lw = &w->layers[i];
        sam3__get_twoway_layer(L, "tracker_model.mask_decoder.transformer.layers", i, TD, di, "o_proj", lw);
        /* the reference gives the block MLP as many layers as there are blocks (HF quirk) */
        snprintf(p, sizeof(p), "tracker_model.mask_decoder.transformer.layers.%d.mlp", i); lw->mlp = sam3__get_ffn(L, p, t->mlp_depth, TD, t->mlp_dim, TD);
    }
    w->final_attn = sam3__get_attn_ex(L, "tracker_model.mask_decoder.transformer.final_attn_token_to_image", TD, di, "o_proj");
    w->final_ln = sam3__get_norm(L, "tracker_model.mask_decoder.transformer.layer_norm_final_attn", TD);
    w->up1 = sam3__get_convt(L, "tracker_model.mask_decoder.upscale_conv1", TD, TD / 4);
    w->up2 = sam3__get_convt(L, "tracker_model.mask_decoder.upscale_conv2", TD / 4, TD / 8);
    w->up_ln = sam3__get_norm(L, "tracker_model.mask_decoder.upscale_layer_norm", TD / 4);
    w->conv_s0 = sam3__get_conv(L, "tracker_model.mask_decoder.conv_s0", TD / 8, TD, 1);
    w->conv_s1 = sam3__get_conv(L, "tracker_model.mask_decoder.conv_s1", TD / 4, TD, 1);
    for (i = 0; i < t->n_mask_tokens; i++) {
        snprintf(p, sizeof(p), "tracker_model.mask_decoder.output_hypernetworks_mlps.%d", i);
        w->hypernet[i] = sam3__get_ffn(L, p, 3, TD, TD, TD / 8);
    }
    w->iou_head = sam3__get_ffn(L, "tracker_model.mask_decoder.iou_prediction_head", t->iou_depth, TD, t->iou_hidden, t->n_mask_tokens);
    w->obj_head = sam3__get_ffn(L, "tracker_model.mask_decoder.pred_obj_score_head", 3, TD, TD, 1);
}

/* Video tracker, when present: the memory embeddings and the memory attention */
static void sam3__load_memory_attention_weights(sam3_model *m, sam3__loader *L) {
    const sam3__vid_cfg *v = &m->vid;
    sam3__vid_w *w = &m->vid_w;
    const int TD = m->trk.D, mem = v->mem_dim, di = v->ma_di;
    char p[200];
    int i;
    if (!v->present) return;
    sam3__nm(L, "tracker_model.no_memory_embedding"); w->no_mem = sam3__get(L, 3, 1, 1, TD, 0);
    sam3__nm(L, "tracker_model.memory_temporal_positional_encoding"); w->tpos = sam3__get(L, 4, v->num_maskmem, 1, 1, mem);
    sam3__nm(L, "tracker_model.no_object_pointer"); w->no_ptr = sam3__get(L, 2, 1, TD, 0, 0);
    w->occl = NULL;
    if (v->occlusion) { sam3__nm(L, "tracker_model.occlusion_spatial_embedding_parameter"); w->occl = sam3__get(L, 2, 1, mem, 0, 0); }
    for (i = 0; i < v->ma_layers; i++) {
        sam3__memattn_layer_w *lw = &w->ma[i];
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.self_attn", i); lw->self_attn = sam3__get_attn_ex(L, p, TD, di, "o_proj");
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.cross_attn_image.q_proj", i); lw->cross_attn.q = sam3__get_lin(L, p, di, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.cross_attn_image.k_proj", i); lw->cross_attn.k = sam3__get_lin(L, p, di, mem);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.cross_attn_image.v_proj", i); lw->cross_attn.v = sam3__get_lin(L, p, di, mem);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.cross_attn_image.o_proj", i); lw->cross_attn.o = sam3__get_lin(L, p, TD, di);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.linear1", i); lw->fc1 = sam3__get_lin(L, p, v->ma_ffn, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.linear2", i); lw->fc2 = sam3__get_lin(L, p, TD, v->ma_ffn);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.layer_norm1", i); lw->ln1 = sam3__get_norm(L, p, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.layer_norm2", i); lw->ln2 = sam3__get_norm(L, p, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_attention.layers.%d.layer_norm3", i); lw->ln3 = sam3__get_norm(L, p, TD);
    }
    w->ma_ln = sam3__get_norm(L, "tracker_model.memory_attention.layer_norm", TD);
}

/* Video tracker, when present: the memory encoder and the object pointers */
static void sam3__load_memory_encoder_weights(sam3_model *m, sam3__loader *L) {
    const sam3__vid_cfg *v = &m->vid;
    sam3__vid_w *w = &m->vid_w;
    const int TD = m->trk.D, mem = v->mem_dim;
    char p[200];
    int i;
    if (!v->present) return;
    for (i = 0; i < v->ds_layers; i++) {
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.mask_downsampler.layers.%d.conv", i);
        w->ds_conv[i] = sam3__get_conv(L, p, v->ds_ch[i + 1], v->ds_ch[i], v->ds_kernel);
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.mask_downsampler.layers.%d.layer_norm", i);
        w->ds_ln[i] = sam3__get_norm(L, p, v->ds_ch[i + 1]);
    }
    w->ds_final = sam3__get_conv(L, "tracker_model.memory_encoder.mask_downsampler.final_conv", TD, v->ds_ch[v->ds_layers], 1);
    w->feat_proj = sam3__get_conv(L, "tracker_model.memory_encoder.feature_projection", TD, TD, 1);
    for (i = 0; i < v->fu_layers; i++) {
        sam3__fuser_w *f = &w->fu[i];
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.memory_fuser.layers.%d.scale", i); sam3__nm(L, "%s", p);
        f->scale = sam3__get(L, 1, TD, 0, 0, 0);
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.memory_fuser.layers.%d.depthwise_conv", i); f->dw = sam3__get_conv(L, p, TD, 1, v->fu_kernel);
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.memory_fuser.layers.%d.layer_norm", i); f->ln = sam3__get_norm(L, p, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.memory_fuser.layers.%d.pointwise_conv1", i); f->pw1 = sam3__get_lin(L, p, v->fu_inter, TD);
        snprintf(p, sizeof(p), "tracker_model.memory_encoder.memory_fuser.layers.%d.pointwise_conv2", i); f->pw2 = sam3__get_lin(L, p, TD, v->fu_inter);
    }
    w->proj = sam3__get_conv(L, "tracker_model.memory_encoder.projection", mem, TD, 1);
    w->mask_ds = sam3__get_conv(L, "tracker_model.mask_downsample", 1, 1, 4);
    w->ptr_proj = sam3__get_ffn(L, "tracker_model.object_pointer_proj", 3, TD, TD, TD);
    memset(&w->tpos_proj, 0, sizeof(w->tpos_proj));
    if (v->ptr_tpe) w->tpos_proj = sam3__get_lin(L, "tracker_model.temporal_positional_encoding_projection_layer", mem, TD);
}

/* Tokenizer tables (validated in depth when the tokenizer is built), then the tokenizer itself */
static void sam3__load_tokenizer_weights(sam3_model *m, sam3__loader *L) {
    const sam3__tensor *t;
    sam3__nm(L, "tokenizer.vocab.offsets");
    m->tok_offsets = (const int32_t *)sam3__get_any(L, SAM3__DT_I32, 1, (int64_t)m->tok.vocab + 1, 0, 0, 0);
    sam3__nm(L, "tokenizer.merges");
    m->tok_merges = (const int32_t *)sam3__get_any(L, SAM3__DT_I32, 2, m->tok.n_merges, 3, 0, 0);
    t = sam3__file_find(L->f, "tokenizer.vocab.bytes");
    if (L->rc == SAM3_OK && (!t || t->dtype != SAM3__DT_U8 || t->ndim != 1))
        sam3__lfail(L, t ? SAM3_ERR_SHAPE_MISMATCH : SAM3_ERR_MISSING_TENSOR, "tensor 'tokenizer.vocab.bytes' is missing or not a 1-D u8 tensor");
    else if (t) {
        m->tok_bytes = (const uint8_t *)t->data;
        m->tok_n_bytes = (size_t)t->shape[0];
    }
    if (L->rc == SAM3_OK) {
        size_t need = sam3__bpe_memory_required(m->tok.vocab, m->tok.n_merges);
        char terr[256];
        if (!need) { sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "tokenizer: bad table sizes"); return; }
        if (!(m->bpe_mem = sam3__aalloc(&m->a, need))) { sam3__lfail(L, SAM3_ERR_OUT_OF_MEMORY, "out of memory for the tokenizer"); return; }
        if (sam3__bpe_init(&m->bpe, m->tok_bytes, m->tok_n_bytes, m->tok_offsets, m->tok.vocab, m->tok_merges, m->tok.n_merges,
                           m->tok.bos, m->tok.eos, m->bpe_mem, need, terr, sizeof(terr)) != 0)
            sam3__lfail(L, SAM3_ERR_CORRUPT_FILE, "%s", terr);
    }
}

/* Finds every tensor the config calls for, with its shape and dtype, part by part in the order
   of the model. */
static void sam3__load_weights(sam3_model *m, sam3__loader *L) {
    static const sam3__load_stage stages[] = {
        sam3__load_layer_arrays,           sam3__load_vision_weights,           sam3__load_neck_weights,
        sam3__load_text_weights,           sam3__load_geometry_weights,         sam3__load_detr_encoder_weights,
        sam3__load_detr_decoder_weights,   sam3__load_scoring_weights,          sam3__load_mask_weights,
        sam3__load_tracker_prompt_weights, sam3__load_tracker_decoder_weights,  sam3__load_memory_attention_weights,
        sam3__load_memory_encoder_weights, sam3__load_tokenizer_weights};
    size_t i;
    if (m->arch == SAM3__ARCH_SAM1) {
        sam3__load_sam1_weights(m, L);
        return;
    }
    for (i = 0; i < sizeof(stages) / sizeof(stages[0]) && L->rc == SAM3_OK; i++) stages[i](m, L);
}

/* ==== sam3: loading ==== */
static void sam3__log(const sam3_load_options *opt, int level, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    if (!opt || (!opt->log && !(level == SAM3_LOG_ERROR && opt->error && opt->error_size))) return;
    va_start(ap, fmt);
    sam3__vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* a load fails with one error message: the caller's buffer gets it, with or without a logger */
    if (level == SAM3_LOG_ERROR && opt->error && opt->error_size) snprintf(opt->error, opt->error_size, "%s", buf);
    if (opt->log) opt->log(opt->log_user, level, buf);
}
#ifndef SAM3_NO_STDIO
/* The reason an open failed, without strerror (not required to be thread-safe). */
static const char *sam3__errno_text(int e) {
    switch (e) {
    case ENOENT: return "no such file or directory";
    case EACCES: return "permission denied";
    case EISDIR: return "is a directory";
    case ENOTDIR: return "a path component is not a directory";
    case ENAMETOOLONG: return "file name too long";
    case EMFILE: case ENFILE: return "too many open files";
    case ENOMEM: return "out of memory";
    default: return "cannot be opened";
    }
}
#endif
static void sam3__load_error_clear(const sam3_load_options *opt) {
    if (opt && opt->error && opt->error_size) opt->error[0] = 0;
}

SAM3DEF sam3_load_options sam3_load_options_default(void) {
    sam3_load_options o;
    memset(&o, 0, sizeof(o));
    return o;
}

static void sam3__model_release(sam3_model *m) {
    sam3_allocator a = m->a;
    sam3__file_free(&m->file, &a);
    sam3__afree(&a, m->vit.is_global);
    sam3__afree(&a, m->s1.is_global);
    sam3__afree(&a, m->layer_mem);
    sam3__afree(&a, m->bpe_mem);
#ifdef SAM3__HAVE_MMAP
    if (m->free_method == 1 && m->blob) SAM3__UNMAP((void *)m->blob, m->size);
#endif
    if (m->free_method == 2) sam3__afree(&a, (void *)m->blob);
    sam3__afree(&a, m);
}

/* Takes ownership of blob according to free_method, also on failure. */
static sam3_result sam3__model_open(const uint8_t *blob, size_t size, int free_method, const sam3_allocator *a,
                                    const sam3_load_options *opt, sam3_model **out) {
    sam3_model *m;
    sam3__loader L;
    char err[512];
    sam3_result rc;

    m = (sam3_model *)sam3__acalloc(a, 1, sizeof(sam3_model));
    if (!m) {
#ifdef SAM3__HAVE_MMAP
        if (free_method == 1) SAM3__UNMAP((void *)blob, size);
#endif
        if (free_method == 2) sam3__afree(a, (void *)blob);
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: out of memory");
        return SAM3_ERR_OUT_OF_MEMORY;
    }
    m->a = *a;
    m->blob = blob;
    m->size = size;
    m->free_method = free_method;
    err[0] = 0;
    rc = sam3__file_parse(&m->file, blob, size, a, err, sizeof(err));
    if (rc != SAM3_OK) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: %s", err);
        sam3__model_release(m);
        return rc;
    }
    if ((uintptr_t)blob % 4) {
        /* the parser reads bytes; the weights are used in place as floats */
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load_from_memory: the blob must be at least 4-byte aligned (64 recommended)");
        sam3__model_release(m);
        return SAM3_ERR_INVALID_ARG;
    }
    memset(&L, 0, sizeof(L));
    L.f = &m->file;
    L.err = err;
    L.cap = sizeof(err);
    L.rc = SAM3_OK;
    L.image_size = opt ? opt->image_size : 0;
    sam3__load_config(m, &L);
    if (L.rc == SAM3_OK) sam3__load_weights(m, &L);
    if (L.rc == SAM3_OK) L.rc = sam3__file_check_small(&m->file, err, sizeof(err));
    if (L.rc != SAM3_OK) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: %s", err);
        sam3__model_release(m);
        return L.rc;
    }
    if (opt && opt->verify) {
        int n_checked = 0, meta = 0;
        if ((rc = sam3__file_verify(&m->file, err, sizeof(err), &n_checked, &meta)) != SAM3_OK) {
            sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: verify: %s", err);
            sam3__model_release(m);
            return rc;
        }
        if (n_checked && meta)
            sam3__log(opt, SAM3_LOG_INFO, "verify: every byte checked: the header's and tables' checksum and %d tensor checksums match, "
                                          "the padding is zero, every weight is finite", n_checked);
        else if (n_checked)
            sam3__log(opt, SAM3_LOG_WARN, "verify: %d tensor checksums match, every weight is finite; the header and tables have no "
                                          "checksum (an older converter: re-convert with tools/convert.py to cover them)", n_checked);
        else sam3__log(opt, SAM3_LOG_WARN, "verify: the file has no checksums (converted before they were added: re-convert "
                                           "with tools/convert.py); every weight is finite");
    }
    *out = m;
    return SAM3_OK;
}

SAM3DEF sam3_result sam3_load_from_memory(const void *blob, size_t size, const sam3_load_options *opt, sam3_model **out) {
    sam3_allocator a;
    sam3__load_error_clear(opt);
    if (!out) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load_from_memory: out is NULL");
        return SAM3_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (!blob || !sam3__allocator_resolve(opt ? &opt->allocator : NULL, &a)) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load_from_memory: %s", blob ? "allocator must set both alloc and free" : "blob is NULL");
        return SAM3_ERR_INVALID_ARG;
    }
    return sam3__model_open((const uint8_t *)blob, size, 0, &a, opt, out);
}

#ifndef SAM3_NO_STDIO
SAM3DEF sam3_result sam3_load(const char *path, const sam3_load_options *opt, sam3_model **out) {
    sam3_allocator a;
    FILE *fp;
    long end;
    size_t size, got;
    uint8_t *buf;
    sam3__load_error_clear(opt);
    if (!out) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: out is NULL");
        return SAM3_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (!path || !sam3__allocator_resolve(opt ? &opt->allocator : NULL, &a)) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: %s", path ? "allocator must set both alloc and free" : "path is NULL");
        return SAM3_ERR_INVALID_ARG;
    }
#if defined(SAM3__WIN_MMAP)
    if (!opt || !opt->no_mmap) {
        int empty;
        const char *why;
        const void *p = sam3__win_map(path, &size, &empty, &why);
        if (!p) {
            if (empty) sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot map the empty file '%s'", path);
            else sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot open '%s': %s", path, why);
            return empty ? SAM3_ERR_BAD_MAGIC : SAM3_ERR_IO;
        }
        return sam3__model_open((const uint8_t *)p, size, 1, &a, opt, out);
    }
#elif defined(SAM3__HAVE_MMAP)
    if (!opt || !opt->no_mmap) {
        struct stat st;
        void *p;
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot open '%s': %s", path, sam3__errno_text(errno));
            return SAM3_ERR_IO;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
            close(fd);
            sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: '%s' is not a regular non-empty file", path);
            return st.st_size == 0 ? SAM3_ERR_BAD_MAGIC : SAM3_ERR_IO;
        }
        size = (size_t)st.st_size;
        p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (p == MAP_FAILED) {
            sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot map '%s'", path);
            return SAM3_ERR_IO;
        }
        return sam3__model_open((const uint8_t *)p, size, 1, &a, opt, out);
    }
#endif
#if defined(_WIN32)
    {
        wchar_t *w = sam3__win_path(path);
        fp = w ? _wfopen(w, L"rb") : NULL;
        sam3__win_path_free(w);
    }
#else
    fp = fopen(path, "rb");
#endif
    if (!fp) {
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot open '%s': %s", path, sam3__errno_text(errno));
        return SAM3_ERR_IO;
    }
    /* the one-byte read: a directory opens and seeks on Linux (its "size" is 2^63 - 1) but cannot
       be read, and must not be allocated for */
    if (fseek(fp, 0, SEEK_END) != 0 || (end = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
        (end > 0 && (fgetc(fp) == EOF || fseek(fp, 0, SEEK_SET) != 0))) {
        fclose(fp);
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: cannot read '%s' (not a regular file?)", path);
        return SAM3_ERR_IO;
    }
    size = (size_t)end;
    buf = (uint8_t *)sam3__aalloc(&a, size);
    if (!buf) {
        fclose(fp);
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: out of memory reading '%s' (%lu bytes)", path, (unsigned long)size);
        return SAM3_ERR_OUT_OF_MEMORY;
    }
    got = size ? fread(buf, 1, size, fp) : 0;
    fclose(fp);
    if (got != size) {
        sam3__afree(&a, buf);
        sam3__log(opt, SAM3_LOG_ERROR, "sam3_load: short read on '%s'", path);
        return SAM3_ERR_IO;
    }
    return sam3__model_open(buf, size, 2, &a, opt, out);
}
#endif

SAM3DEF void sam3_free(sam3_model *m) {
    if (m) sam3__model_release(m);
}

SAM3DEF int sam3_model_config_int(const sam3_model *m, const char *key, int64_t *out) {
    const sam3__cfg *c = (m && key) ? sam3__file_cfg(&m->file, key) : NULL;
    if (!c || c->type != SAM3__T_I64) return 0;
    if (out) *out = c->i;
    return 1;
}
SAM3DEF int sam3_model_config_float(const sam3_model *m, const char *key, double *out) {
    const sam3__cfg *c = (m && key) ? sam3__file_cfg(&m->file, key) : NULL;
    if (!c || (c->type != SAM3__T_F64 && c->type != SAM3__T_I64)) return 0;
    if (out) *out = c->type == SAM3__T_F64 ? c->f : (double)c->i;
    return 1;
}
SAM3DEF const char *sam3_model_config_string(const sam3_model *m, const char *key) {
    uint32_t i;
    if (!m || !key) return NULL;
    for (i = 0; i < m->file.n_cfg; i++)
        if (strcmp(m->file.cfg[i].key, key) == 0) return m->file.strings[i];
    return NULL;
}
SAM3DEF int sam3_model_image_size(const sam3_model *m) { return m ? m->proc.image : 0; }
SAM3DEF const char *sam3_model_arch(const sam3_model *m) { return !m ? NULL : m->arch == SAM3__ARCH_SAM1 ? "sam1" : "sam3"; }
SAM3DEF int sam3_model_has_text(const sam3_model *m) { return m && m->arch == SAM3__ARCH_SAM3; }
SAM3DEF int sam3_model_has_points(const sam3_model *m) { return m && m->trk.present; }
SAM3DEF size_t sam3_model_file_size(const sam3_model *m) { return m ? m->size : 0; }

SAM3DEF int sam3_model_tensor_count(const sam3_model *m) { return m ? (int)m->file.n_tensors : 0; }
SAM3DEF int sam3_model_tensor_info(const sam3_model *m, int i, sam3_tensor_info *out) {
    const sam3__tensor *t;
    int j;
    if (!m || !out || i < 0 || (uint32_t)i >= m->file.n_tensors) return 0;
    t = &m->file.tensors[i];
    out->name = t->name;
    out->name_len = (int)t->name_len;
    out->dtype = sam3__dtypes[t->dtype].name;
    out->ndim = t->ndim;
    for (j = 0; j < 4; j++) out->shape[j] = t->shape[j];
    out->nbytes = t->nbytes;
    return 1;
}
SAM3DEF int sam3_model_config_count(const sam3_model *m) { return m ? (int)m->file.n_cfg : 0; }
SAM3DEF const char *sam3_model_config_entry(const sam3_model *m, int i, char *value, size_t cap) {
    const sam3__cfg *c;
    size_t n = 0;
    uint32_t k;
    if (!m || i < 0 || (uint32_t)i >= m->file.n_cfg) return NULL;
    c = &m->file.cfg[i];
    if (!value || cap == 0) return c->key;
    value[0] = 0;
    switch (c->type) {
    case SAM3__T_I64: snprintf(value, cap, "%lld", (long long)c->i); break;
    case SAM3__T_F64: snprintf(value, cap, "%.9g", c->f); break;
    case SAM3__T_STR: snprintf(value, cap, "%s", m->file.strings[i]); break;
    default:
        for (k = 0; k < c->count && n + 32 < cap; k++) {
            uint64_t u = sam3__rd64(c->data + 8 * k);
            double d;
            memcpy(&d, &u, 8);
            if (c->type == SAM3__T_I64_ARRAY) n += (size_t)snprintf(value + n, cap - n, "%s%lld", k ? "," : "[", (long long)(int64_t)u);
            else n += (size_t)snprintf(value + n, cap - n, "%s%.9g", k ? "," : "[", d);
        }
        if (n + 2 < cap) snprintf(value + n, cap - n, "%s]", c->count ? "" : "[");
    }
    return c->key;
}

/* ==== sam3: context, scratch arena ==== */
typedef struct sam3__chunk { struct sam3__chunk *next; } sam3__chunk;
#define SAM3__TEXT_CACHE 8
typedef struct sam3__text_entry {
    char *text;          /* copy of the prompt, NUL-terminated */
    int n, truncated;    /* ids used */
    float *feat;         /* (max ids, D) projected text features, n rows valid */
    unsigned long stamp; /* last use, for LRU replacement; 0 = empty */
} sam3__text_entry;
typedef struct sam3__mark { size_t top, live; sam3__chunk *chunks; } sam3__mark;
/* The stages sam3_ctx_timings times, each with the floating-point operations of its products
   (sam3_ctx_flops); NONE: work outside them, whose count nobody reads. */
enum {
    SAM3__ST_NONE, SAM3__ST_PRE, SAM3__ST_TRUNK, SAM3__ST_NECK, SAM3__ST_TEXT, SAM3__ST_GEOMETRY, SAM3__ST_DETR_ENC, SAM3__ST_DETR_DEC,
    SAM3__ST_MASK, SAM3__ST_POST, SAM3__ST_INECK, SAM3__ST_POINTS, SAM3__ST_TRACKING, SAM3__ST_EVERYTHING, SAM3__ST_N
};
/* One sam3_segment result's buffers (sam3_segment: slot 0; sam3_segment_many: one a prompt),
   reused from call to call. */
typedef struct sam3__seg_bufs {
    sam3_instance *inst;
    uint8_t *mask, *sem_mask;
    float *low, *sem;
    size_t inst_cap, mask_cap, sem_mask_cap, low_cap, sem_cap;
} sam3__seg_bufs;

struct sam3_ctx {
    const sam3_model *m;
    sam3_allocator a;
    sam3_ctx_options opt;
    int nt;    /* threads for our own loops */
    int split; /* BLAS is single-threaded: we split products over our threads (sam3__gemm) */
    int omp_blas; /* OpenBLAS's OpenMP build: each call is sized by the calling thread's OpenMP setting */
    int bf16;     /* products with f32 weights in bf16 too (SAM3_PRECISION_BF16) */
    const struct sam3__ktab *k; /* the kernel path's entry points (sam3__ktab_of(isa)) */
    int isa;                    /* SAM3_ISA_*, never AUTO */
    int bk;       /* the bf16 kernel, SAM3__BK_* (sam3__bf16_detect, within what isa allows) */
    int bka;      /* the ViT attention in bf16 from bf16 kernel bka on (SAM3_BF16_ATTENTION_KERNEL; tests lower it) */
    int bkc;      /* a bf16 file's 3x3 convs in bf16 from bf16 kernel bkc on (SAM3_BF16_CONV_KERNEL; tests change it) */
    int att_min;  /* other self-attentions too from this many tokens on (SAM3__ATT_BF16_MIN; tests lower it) */
    int wino_tiles; /* the pipelined Winograd conv's tiles a task at least (SAM3__WINO_TILES; tests lower it) */
#if defined(SAM3_PROFILE)
    /* SAM3_PROFILE builds only: the image encoder's time by stage (SAM3__PS_*, the calling
       thread's) and by thread inside the bf16 products and attention (SAM3__PT_*), in
       sam3__prof_now's ticks, summed over calls until the caller clears them */
    double prof[SAM3__PS_N];
    double prof_thr[SAM3__PROF_THR][SAM3__PT_N];
#endif
    char err[512];
    sam3_timings t;
    int stage;                     /* SAM3__ST_*: the stage whose products are counted now */
    double flops[SAM3__ST_N];      /* floating-point operations of each stage's products, last run */
    /* Scratch: a stack arena; what does not fit goes to overflow chunks until the next entry
       point grows the arena to the high-water mark, so steady state allocates nothing. */
    unsigned char *arena;
    size_t arena_cap, arena_top, live, high;
    sam3__chunk *chunks;
    size_t persistent_bytes;
    /* Cached image state (valid when has_image) */
    int has_image, img_w, img_h;
    int vit_ready;                       /* vit_out holds the image img_w x img_h's trunk output (trackers reuse it) */
    float *vit_out;                      /* (N, C) trunk output, token-major, N = grid^2 */
    float *fpn[SAM3__MAX_LEVELS];        /* (D, side, side) kept FPN levels, channel-major */
    float *l2_tok;                       /* (Ng, D) last kept level, token-major */
    float *l2_pos;                       /* (Ng, D) its sine position map, token-major */
    int enc0_ready;                      /* enc0 holds this image's */
    float *enc0;                         /* (Ng, D) l2_tok after the DETR encoder's first self-attention */
    int dec0_ready;                      /* dec0 holds the DETR decoder's first layer up to its text attention */
    float *dec0;                         /* that layer's h and qpos (Q+1, D) each, relh and relw (nh, Q+1, S) each */
    float *rope_win;                     /* (window^2, hd/2, 2) cos, sin for windowed blocks */
    float *rope_glb;                     /* (N, hd/2, 2) cos, sin for global blocks */
    /* Interactive head's image state, computed on the first sam3_segment_points after an image */
    int trk_ready;
    float *trk_e;    /* (D, g, g) tracker neck 1x level: the decoder's image embedding */
    float *trk_s0;   /* (D/8, 4g, 4g) high-resolution skip, after conv_s0 */
    float *trk_s1;   /* (D/4, 2g, 2g) after conv_s1 */
    float *trk_pe;   /* (g*g, D) dense random-Fourier position of the grid, token-major */
    /* (2 Ng D + 2 Ng di) during sam3_segment_everything, NULL otherwise: the mask decoder's start
       that no click changes (no mask prompt): image tokens (Ng, D), the same plus position (Ng,
       D), layer 0's token->image keys and values (Ng, di) each */
    const float *trk_img0;
    int s1_h1, s1_w1; /* SAM 1: the resized image inside the padded frame */
    float res_iou[SAM3__MAX_FFN];
    /* Text features of recent prompts: a prompt used again on any image costs nothing. */
    sam3__text_entry tcache[SAM3__TEXT_CACHE];
    unsigned long tstamp;
    /* Result buffers, reused from call to call (valid until the next call). */
    sam3_everything_mask *res_evr;
    uint8_t *res_mask;
    float *res_low;
    size_t res_evr_cap, res_mask_cap, res_low_cap;
    sam3__seg_bufs *segb; /* (segb_cap) sam3_segment's results: slot 0, and sam3_segment_many's one a prompt */
    int segb_cap;
    sam3__flag busy; /* 1 while a public call runs on this context (SAM3_ERR_BUSY for a second one) */
    int own_thread;  /* a worker's copy inside a parallel region (sam3__everything_par): its arena is
                        its thread's alone, kernel scratch included */
};

/* Makes *p hold at least `need` bytes (contents not kept). */
static int sam3__grow(sam3_ctx *c, void **p, size_t *cap, size_t need) {
    void *q;
    if (need <= *cap && *p) return 1;
    q = sam3__aalloc(&c->a, need);
    if (!q) return 0;
    sam3__afree(&c->a, *p);
    *p = q;
    *cap = need;
    return 1;
}

/* Makes c->segb hold n result slots (n <= SAM3_MAX_SEGMENT_PROMPTS) and frees the buffers of the
   slots past n, so that a large earlier sam3_segment_many does not keep its masks; 0: out of memory. */
static int sam3__seg_slots(sam3_ctx *c, int n) {
    int j;
    if (n > c->segb_cap) {
        int cap = SAM3__MAX(n, SAM3__MIN(2 * c->segb_cap, SAM3_MAX_SEGMENT_PROMPTS));
        sam3__seg_bufs *nb = (sam3__seg_bufs *)sam3__aalloc(&c->a, (size_t)cap * sizeof(*nb));
        if (!nb) return 0;
        memset(nb, 0, (size_t)cap * sizeof(*nb));
        if (c->segb_cap) memcpy(nb, c->segb, (size_t)c->segb_cap * sizeof(*nb));
        sam3__afree(&c->a, c->segb);
        c->segb = nb;
        c->segb_cap = cap;
    }
    for (j = n; j < c->segb_cap; j++) {
        sam3__seg_bufs *b = &c->segb[j];
        sam3__afree(&c->a, b->inst);
        sam3__afree(&c->a, b->mask);
        sam3__afree(&c->a, b->sem_mask);
        sam3__afree(&c->a, b->low);
        sam3__afree(&c->a, b->sem);
        memset(b, 0, sizeof(*b));
    }
    return 1;
}

static sam3_result sam3__fail(sam3_ctx *c, sam3_result rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sam3__vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    return rc;
}

static sam3__mark sam3__mark_get(const sam3_ctx *c) {
    sam3__mark mk;
    mk.top = c->arena_top;
    mk.live = c->live;
    mk.chunks = c->chunks;
    return mk;
}
static void sam3__release(sam3_ctx *c, sam3__mark mk) {
    while (c->chunks != mk.chunks) {
        sam3__chunk *n = c->chunks->next;
        sam3__afree(&c->a, c->chunks);
        c->chunks = n;
    }
    c->arena_top = mk.top;
    c->live = mk.live;
}
static void sam3__release_all(sam3_ctx *c) {
    sam3__mark mk;
    mk.top = 0;
    mk.live = 0;
    mk.chunks = NULL;
    sam3__release(c, mk);
}
/* 64-byte aligned scratch; NULL (with the context error set) when memory runs out. */
static void *sam3__salloc_ex(sam3_ctx *c, size_t bytes, int quiet) {
    void *p;
    if (!sam3__add(bytes, SAM3__ALIGN - 1, &bytes)) return NULL;
    bytes = bytes / SAM3__ALIGN * SAM3__ALIGN;
    if (bytes <= c->arena_cap - c->arena_top) {
        p = c->arena + c->arena_top;
        c->arena_top += bytes;
    } else {
        size_t total;
        sam3__chunk *ch;
        if (!sam3__add(bytes, SAM3__ALIGN, &total) || !(ch = (sam3__chunk *)sam3__aalloc(&c->a, total))) {
            if (!quiet) sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory (scratch request of %lu bytes)", (unsigned long)bytes);
            return NULL;
        }
        ch->next = c->chunks;
        c->chunks = ch;
        p = (unsigned char *)ch + SAM3__ALIGN;
    }
    c->live += bytes;
    if (c->live > c->high) c->high = c->live;
    return p;
}
static void *sam3__salloc(sam3_ctx *c, size_t bytes) { return sam3__salloc_ex(c, bytes, 0); }
static float *sam3__sallocf(sam3_ctx *c, size_t n) {
    size_t b;
    if (!sam3__mul(n, sizeof(float), &b)) {
        sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "scratch size overflows");
        return NULL;
    }
    return (float *)sam3__salloc(c, b);
}
/* A kernel's scratch (packing panels, widened operands), 64-byte aligned: from the context's arena
   where the kernel runs on the context's own thread (c set, outside any parallel region: the arena
   is not shared between threads), so that sam3_ctx_memory_used counts it and it is reused from
   call to call; else (a product inside a caller's parallel region, no context, or an arena that
   cannot grow: a kernel's fallback sums in another order, so a failing context allocator must not
   change the results) from SAM3_MALLOC. NULL when memory runs out, the context's error untouched:
   the kernels then take a path that needs no scratch. Give back with sam3__kbuf_put, last taken
   first. */
typedef struct sam3__kbuf {
    void *raw;      /* SAM3_MALLOC's block, or NULL */
    sam3__mark mk;  /* the arena as it was, where arena */
    int arena;
} sam3__kbuf;
static void *sam3__kbuf_get(sam3_ctx *c, size_t bytes, sam3__kbuf *b) {
    int nested = 0;
#ifdef _OPENMP
    nested = omp_in_parallel();
#endif
    memset(b, 0, sizeof(*b));
    if (c && (!nested || c->own_thread)) {
        void *p;
        b->mk = sam3__mark_get(c);
        if ((p = sam3__salloc_ex(c, bytes, 1)) != NULL) {
            b->arena = 1;
            return p;
        }
    }
    if (!sam3__add(bytes, SAM3__ALIGN, &bytes) || !(b->raw = SAM3_MALLOC(bytes))) return NULL;
    return (unsigned char *)b->raw + ((SAM3__ALIGN - ((uintptr_t)b->raw & (SAM3__ALIGN - 1))) & (SAM3__ALIGN - 1));
}
static void sam3__kbuf_put(sam3_ctx *c, sam3__kbuf *b) {
    if (b->arena) sam3__release(c, b->mk);
    else SAM3_FREE(b->raw);
}
/* Inside a parallel region: this thread's slice of scratch holding per floats a thread. */
static float *sam3__thread_slice(float *base, size_t per) {
#ifdef _OPENMP
    return base + (size_t)omp_get_thread_num() * per;
#else
    (void)per;
    return base;
#endif
}
/* At an entry point, with nothing live: grow the arena to the high-water mark seen so far. */
static sam3_result sam3__arena_settle(sam3_ctx *c) {
    SAM3_ASSERT(c->live == 0 && !c->chunks);
    if (c->high > c->arena_cap) {
        /* With 1/8 headroom: the mark moves by a few KB with the prompt's length, and regrowing a
           full-size arena (~280 MB) for that would fault all its pages in again on the next call.
           Pages never touched are not resident. */
        size_t want = c->high;
        unsigned char *p;
        if (!sam3__add(want, want / 8, &want)) want = c->high;
        p = (unsigned char *)sam3__aalloc(&c->a, want);
        if (!p) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory (scratch arena of %lu bytes)", (unsigned long)want);
        sam3__afree(&c->a, c->arena);
        c->arena = p;
        c->arena_cap = want;
    }
    c->arena_top = 0;
    return SAM3_OK;
}

static int sam3__aborted(sam3_ctx *c) { return c->opt.abort_fn && c->opt.abort_fn(c->opt.abort_user); }
static void sam3__progress(sam3_ctx *c, const char *stage, int step, int n) {
    if (c->opt.progress_fn) c->opt.progress_fn(c->opt.progress_user, stage, step, n);
}
static void sam3__tap(sam3_ctx *c, const char *name, const float *data, int nd, int64_t d0, int64_t d1, int64_t d2) {
    int64_t s[3];
    if (!c->opt.tap) return;
    s[0] = d0; s[1] = d1; s[2] = d2;
    c->opt.tap(c->opt.tap_user, name, data, nd, s);
}
/* A product's f floating-point operations (2 a multiply-add) to the stage running: a few adds a
   kernel call. Atomic, as a product may start inside a caller's parallel region. */
static void sam3__count(sam3_ctx *c, double f) {
    double *at = &c->flops[c->stage];
    SAM3__OMP(atomic)
    *at += f;
}
/* A timed stage begins: its count starts from 0 and the products count to it. Returns the clock. */
static double sam3__stage_begin(sam3_ctx *c, int stage) {
    c->flops[stage] = 0;
    c->stage = stage;
    return sam3__now_ms();
}
/* The stage begun at t0 ends: later products count to no stage. Returns its milliseconds. */
static double sam3__stage_end(sam3_ctx *c, double t0) {
    c->stage = SAM3__ST_NONE;
    return sam3__now_ms() - t0;
}

/* ==== sam3: portable helpers (the kernels and the model both use them) ==== */
/* constants the model and the kernels share: bf16 kernels (SAM3__BK_*, see "bf16 kernels"), the
   attention modes (sam3__att_bf16_mode), the bf16 B panel width, the split scores' factor and the
   cross-attention's chunks, the Winograd task size, the bf16 attention's least keys; and the
   widest f32 key panel of any pass */
enum { SAM3__BK_REF = 0, SAM3__BK_AVX512 = 1, SAM3__BK_AMX = 2, SAM3__BK_NEON = 1 /* aarch64's BFDOT: AVX512-BF16's level */ };
enum { SAM3__ATT_PV = 1, SAM3__ATT_TILES = 2 };
#define SAM3__BNR 32   /* columns per B panel */
/* Element (i, k) of a matrix of AMX A tiles with 16-row tile rows ld apart: row i % 16 of the 1 KB
   tile (i / 16, k / 32), as sam3__bgemm_pack_a lays out an A block (there ld = 16 kcp) */
#define SAM3__ATILE(i, k, ld) ((size_t)(i) / 16 * (ld) + (size_t)(k) / 32 * 512 + (size_t)(i) % 16 * 32 + (size_t)(k) % 32)
#define SAM3__ATT_KSPLIT 3 /* the scores' product over 3 hdp k: [q_hi, q_hi, q_lo] . [k_hi, k_lo, k_hi] */
#define SAM3__ATT_XSPLIT 1 /* the cross-attention's scores over the first XSPLIT hdp of those k: q_hi . k_hi */
#define SAM3__ATT_KC 256   /* keys a chunk of the bf16 cross-attention (sam3__attn_rows_bf16_long) */
#define SAM3__ATT_G 8      /* tiles of query rows a task of it at most */
#define SAM3__WINO_TILES 144
/* keys from which a self-attention outside the ViT runs as the ViT's does in bf16: the DETR
   encoder's (the image's tokens) is most of a prompt's arithmetic; the attentions over a few
   hundred tokens (the decoders') stay f32, a small part of the time */
#define SAM3__ATT_BF16_MIN 1024
#define SAM3__ATT_PW_MAX 32
/* The x pass's plan for the taps tx (ow). With AVX-512, when upsampling, 16 outputs read at most
   16 consecutive inputs: one (masked) load and two permutes give both taps of all 16, where the
   scalar loop gathered them one by one (half of the resize). bx[b] is block b's first input, or -1
   where its taps span more than 16; rel, wl (nbq, 2, 16) the taps' offsets and weights. Elsewhere
   empty (nbq 0). From the context's arena: the caller's mark releases it. */
typedef struct sam3__lerp_x { int nbq; int *bx; int32_t *rel; float *wl; } sam3__lerp_x;

/* Bilinear resize taps (align_corners=False, no antialias, as F.interpolate): output i reads inputs
   i0 and i1 with weights l0 and l1. */
typedef struct sam3__lerp { int i0, i1; float l0, l1; } sam3__lerp;

/* f32 -> bf16, round to nearest even; NaN -> the quiet NaN 0x7fc0 (as torch). */
static SAM3__INLINE uint16_t sam3__f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static void sam3__lerp_table(int in, int out, sam3__lerp *t) {
    const float scale = (float)in / (float)out;
    int i;
    for (i = 0; i < out; i++) {
        float src = scale * ((float)i + 0.5f) - 0.5f;
        if (src < 0) src = 0;
        t[i].i0 = (int)src;
        if (t[i].i0 > in - 1) t[i].i0 = in - 1;
        t[i].i1 = t[i].i0 + (t[i].i0 < in - 1 ? 1 : 0);
        t[i].l1 = src - (float)t[i].i0;
        t[i].l0 = 1.0f - t[i].l1;
    }
}

/* dim: the nf / 2 + 1 values of dim_t (sam3__sine_dims), or NULL to compute them here */
static void sam3__sine_dims(int nf, float *dim) {
    int i;
    for (i = 0; i < nf; i += 2) dim[i / 2] = (float)pow(10000.0, (double)(2 * (i / 2)) / (double)nf);
}

/* Interleaved sine code S(v) of Sam3SinePositionEmbedding with nf features:
   out[i] = sin(v / T^(2 floor(i/2) / nf)) for even i, cos(...) for odd i. fp32 as the reference. */
static void sam3__sine(float v, int nf, const float *dim, float *out) {
    int i;
    for (i = 0; i < nf; i += 2) {
        float dim_t = dim ? dim[i / 2] : (float)pow(10000.0, (double)(2 * (i / 2)) / (double)nf);
        float p = v / dim_t;
        out[i] = sinf(p);
        if (i + 1 < nf) out[i + 1] = cosf(p);
    }
}

/* 2-D sine position map (normalize=True, scale 2 pi) for an H x W map with D channels, token-major
   (H*W, D): channels [0, D/2) encode the row (y), [D/2, D) the column (x), positions 1-based and
   divided by (size + 1e-6). */
static void sam3__sine_pos2d(int H, int W, int D, float *out) {
    int y, x, nf = D / 2;
    const float eps = 1e-6f, scale = (float)(2 * SAM3__PI);
    for (y = 0; y < H; y++) {
        float yv = (float)(y + 1) / ((float)H + eps) * scale;
        for (x = 0; x < W; x++) {
            float xv = (float)(x + 1) / ((float)W + eps) * scale;
            float *o = out + ((size_t)y * W + x) * D;
            sam3__sine(yv, nf, NULL, o);
            sam3__sine(xv, nf, NULL, o + nf);
        }
    }
}

/* Sam3TrackerPositionalEmbedding of a point (u, v) normalised to [0,1]: the random-Fourier
   features [sin(a), cos(a)] with a = 2 pi (2(u,v) - 1) G, G (2, D/2). */
static void sam3__fourier_pe(const float *G, int D, float u, float v, float *out) {
    const int h = D / 2;
    const float cx = 2.0f * u - 1.0f, cy = 2.0f * v - 1.0f;
    int k;
    for (k = 0; k < h; k++) {
        float a = (cx * G[k] + cy * G[h + k]) * (float)(2 * SAM3__PI);
        out[k] = sinf(a);
        out[h + k] = cosf(a);
    }
}

static float sam3__sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ==== sam3: kernel paths ==== */
/* The kernel section (from "built-in SGEMM" to the end of "kernels") is compiled once for each
   kernel path this build holds, each time by including this file again with SAM3__KPASS set
   (then only that section is read) and the path's macro: SAM3__KREF (plain C), SAM3__KAVX2,
   SAM3__KAVX512 (with the AVX512-BF16 and AMX kernels where SAM3__KBF16), SAM3__KNEON, or none
   (the portable vector-extension code). Every name the section defines is renamed per pass
   (SAM3__KN: sam3__gemm is sam3__gemm_avx2 in the avx2 pass), and each pass ends in a table of
   its entry points (sam3__ktab). A context picks one table at creation (sam3_ctx_options.isa,
   else $SAM3_ISA, else the best path the CPU runs) and the model calls the kernels through it.
   Paths chosen at run time (SAM3__DISPATCH): GCC, and clang without OpenMP (clang's outlined
   parallel regions do not take their function's target), on x86-64 (passes reference, avx2 and
   avx512, each under its target pragma, so no -march is needed) and aarch64 (reference, neon: its
   BFDOT kernels, for the path neonbf16, carry their own target attribute, as the rest of the pass
   runs on any ARMv8).
   Otherwise, or with SAM3_NO_DISPATCH or SAM3_REFERENCE_KERNELS: one pass, the path the
   compiler's flags name, called directly. */
#ifndef SAM3_HEADER_NAME
#define SAM3_HEADER_NAME "sam3.h" /* this file, for the passes' #include (its own folder is searched first) */
#endif
#if !defined(SAM3_NO_DISPATCH) && !defined(SAM3_REFERENCE_KERNELS) && defined(__GNUC__) && (!defined(__clang__) || !defined(_OPENMP)) && \
    (defined(__x86_64__) || defined(__aarch64__))
#define SAM3__DISPATCH 1
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__GNUC__) && defined(__aarch64__)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h> /* getauxval: the CPU's features (HWCAP2_BF16) */
#endif
#endif
#if defined(__SSE__)
#include <xmmintrin.h> /* _mm_getcsr, _mm_setcsr */
#endif
/* the AVX512-BF16 and AMX kernels need GCC 11 or clang 12 */
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define SAM3__CC_BF16 1
#endif
/* aarch64's bf16 kernels (BFDOT under a target attribute) need GCC 11, and Linux's HWCAP2 to
   find FEAT_BF16 */
#if defined(__aarch64__) && defined(__linux__) && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11
#define SAM3__CC_BF16_ARM 1
#endif
#define SAM3__KN(n) SAM3__KN_(n, SAM3__KSFX)
#define SAM3__KN_(n, s) SAM3__KN__(n, s)
#define SAM3__KN__(n, s) n##s
#if defined(__GNUC__) && defined(__aarch64__) && !defined(__SSE__)
/* FPCR, whose FZ bit (24) is aarch64's flush-to-zero (denormal inputs too), for the attention
   tasks as MXCSR's FTZ/DAZ on x86 */
#define SAM3__FPCR_FZ ((uint64_t)1 << 24)
static SAM3__INLINE uint64_t sam3__fpcr_get(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
    return v;
}
static SAM3__INLINE void sam3__fpcr_set(uint64_t v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v)); }
#endif

/* Flush to zero (and denormal inputs as zero) for an attention task, the caller's mode given back
   by sam3__ftz_leave: probabilities of keys scoring more than ~87 below the row's maximum
   underflow, and each such result takes a microcode assist. With one key far above the rest (the
   DETR encoder's queries can score one key ~140 above the others) nearly every probability
   underflows and the assists dominate. Values below 1.2e-38 against a row sum of at least 1
   change nothing. */
static SAM3__INLINE uint64_t sam3__ftz_enter(void) {
#if defined(__SSE__)
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u);
    return csr;
#elif defined(SAM3__FPCR_FZ)
    const uint64_t fpcr = sam3__fpcr_get();
    sam3__fpcr_set(fpcr | SAM3__FPCR_FZ);
    return fpcr;
#else
    return 0;
#endif
}
static SAM3__INLINE void sam3__ftz_leave(uint64_t mode) {
#if defined(__SSE__)
    _mm_setcsr((unsigned)mode);
#elif defined(SAM3__FPCR_FZ)
    sam3__fpcr_set(mode);
#else
    (void)mode;
#endif
}

/* One matrix product, as the GEMM kernels take it (row-major): C (m, n) = alpha op(A) op(B) +
   beta C, op(X) = X^T where tX. A and B are f32 (a, b) or, for the bf16 kernels, bf16 (ah, bh:
   then a, b are not read); the bf16 kernels take alpha as 1. beta 0: C is not read. With ch (the
   blocked bf16 kernels' epilogue, k within one k block): ch (m, n; rows ldch apart) =
   bf16(GELU(C + bias)), and C is not written. AMX alone: A may come as at, and ch go, as whole
   matrices of A tiles (SAM3__ATILE: sam3__bgemm_pack_a's layout over all of k), which the next
   product then reads as they are, with no packing. */
typedef struct sam3__gemm_args {
    int ta, tb, m, n, k;
    float alpha, beta;
    const float *a;     /* A: (m, k) or, where ta, (k, m); rows lda apart */
    const uint16_t *ah; /* A in bf16, or NULL */
    int lda;
    const float *b;     /* B: (k, n) or, where tb, (n, k); rows ldb apart */
    const uint16_t *bh; /* B in bf16, or NULL */
    int ldb;
    float *c; /* (m, n), rows ldc apart */
    int ldc;
    const float *bias; /* (n) or NULL, added before ch's GELU */
    uint16_t *ch;      /* (m, n) in bf16, rows ldch apart, or NULL */
    int ldch;
    int cht;           /* ch as A tiles (SAM3__ATILE), 16-row tile rows ldch apart */
    const uint16_t *at; /* op(A) (m, k) as A tiles (SAM3__ATILE), 16-row tile rows ldat apart, or NULL (AMX only) */
    size_t ldat;
    /* or NULL: B's panels written by bpack(bpack_arg, p0, kc, kcp, col, nr, pb) as
       sam3__bgemm_pack_b writes them (k p0 .. p0 + kc, columns col .. col + nr), b and bh not
       read: a B that is never a matrix (sam3__conv3x3_bf16's im2col). Blocked kernels only
       (sam3__bgemm_run). */
    void (*bpack)(const void *bpack_arg, int p0, int kc, int kcp, int col, int nr, uint16_t *pb);
    const void *bpack_arg;
#if defined(SAM3_PROFILE)
    double (*prof)[SAM3__PT_N]; /* the blocked bf16 kernels' time by thread (sam3_ctx.prof_thr), or NULL */
#endif
} sam3__gemm_args;

/* One multi-head attention, as the attention kernels take it: for each head h (hd columns from
   h hd in q, k, v and out) and query i, out[i] = sum_j softmax_j(q[i] . k[j] / sqrt(hd) +
   relh[h, i, j / rel_s] + relw[h, i, j % rel_s]) v[j], over keys j <= i where causal. */
typedef struct sam3__attn_args {
    int nq, nk, nh, hd;
    const float *q; /* (nq, nh hd), rows ldq apart */
    const float *k; /* (nk, nh hd), rows ldk apart */
    const float *v; /* (nk, nh hd), rows ldv apart */
    float *out;     /* (nq, nh hd), rows ldo apart; may be q */
    int ldq, ldk, ldv, ldo, causal;
    const float *relh, *relw; /* decomposed relative positions (nh, nq, rel_s) each, or NULL */
    int rel_s;
} sam3__attn_args;

/* The ViT's self-attention over packed keys, as sam3__attention_rope and its packers take it: nb
   batches (windows, or the one global grid) of nk tokens, nh heads of hd; token j of batch b is
   row b nk + j of q, k and v. */
typedef struct sam3__rope_args {
    float *q;           /* (nb nk, nh hd), rows ld apart: biased and rotated in place, then the output */
    const float *k, *v; /* (nb nk, nh hd), rows ld apart */
    int ld;
    const float *bq, *bk, *bv; /* the projections' biases (nh hd) each, or NULL */
    int nb, nk, nh, hd;
    const float *tab; /* (nk, hd): (cos, sin) per pair of channels and position, or NULL: no rotation */
    int nq;           /* queries a batch where they are not its keys (a cross-attention, bf16 tiles
                         only; q (nb nq, nh hd) is then taken as it is: bq and tab touch the keys
                         alone), or 0: the nk tokens are the queries */
    int vd, ldv;      /* a cross-attention's values where they are not projected to hd a head
                         (nh 1: v (nk, vd) rows ldv apart, the output (nq, vd) over q), or 0 */
} sam3__rope_args;

/* One attention module's inputs, as sam3__mha_core takes them: nq queries qin (nq, D) attend to nk
   keys kin and values vin (nk, D) through projections to di channels in nh heads (w). */
typedef struct sam3__mha_args {
    const float *qin, *kin, *vin;
    int nq, nk, D, di, nh, causal;
    const float *relh, *relw; /* decomposed relative positions (nh, nq, rel_s) each, or NULL */
    int rel_s;
    int few_queries; /* a few queries on many keys may run reassociated (sam3__mha_few_queries) */
    int act_bf16;    /* the reassociated forms' products between activations (scores, probabilities
                        times values) run as bf16 products where the weights are bf16 or the
                        context runs bf16 products (sam3__gemm_act): the tracker's two-way
                        transformer, whose per-click products these are */
} sam3__mha_args;

/* A kernel path's entry points: one table per pass of the kernel section (c->k). */
typedef struct sam3__ktab {
    const char *name; /* the pass: "reference", "portable", "avx2", "avx512", "neon" */
    int (*att_bf16_mode)(const sam3_ctx *c, int hd);
    sam3_result (*attention_rel)(sam3_ctx *c, const sam3__attn_args *at);
    sam3_result (*attention_rope)(sam3_ctx *c, int abf, const sam3__rope_args *ra, float *kbuf, float *vbuf);
    int (*bf16_detect)(void);
    sam3_result (*box_rpb)(sam3_ctx *c, const float *ref, int Q, int S, float *relh, float *relw);
    void (*conv1x1)(sam3_ctx *c, const float *x, int x_tokens, int cin, int hw, const sam3__lin *l, int cout, float *y);
    sam3_result (*conv3x3)(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l, int cout, float *y, double *st);
    sam3_result (*convt2x2)(sam3_ctx *c, const float *x, int x_tokens, int cin, int H, int W, const sam3__lin *l, int cout, const float *add, int gelu, float *y);
    sam3_result (*ffn)(sam3_ctx *c, const sam3__ffn_w *f, const float *x, int n, int in, int hidden, int out, float *y);
    void (*gelu_bias)(sam3_ctx *c, float *x, size_t rows, int d, const float *b);
    void (*gemm)(sam3_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
    void (*gemm_act)(sam3_ctx *c, int bf, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
    int (*gemm_bf16_gelu)(sam3_ctx *c, int M, int N, int K, const float *A, int lda, const float *W, const uint16_t *Wh, int ldw, const float *b, uint16_t *Ch, int ldch, size_t ldt);
    void (*gemm_bf16_at)(sam3_ctx *c, int M, int N, int K, const uint16_t *At, size_t ldt, const float *W, const uint16_t *Wh, int ldw, float *C, int ldc);
    void (*gemm_mixed)(sam3_ctx *c, int ta, int tb, int M, int N, int K, const float *A, const uint16_t *Ah, int lda, const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc);
    void (*gemm_wx)(sam3_ctx *c, int ta, int tb, int M, int N, int K, const sam3__lin *l, size_t off, int ldw, const float *x, int ldx, float beta, float *C, int ldc);
    void (*gemm_xw)(sam3_ctx *c, int ta, int tb, int M, int N, int K, const float *x, int ldx, const sam3__lin *l, size_t off, int ldw, float beta, float *C, int ldc);
    sam3_result (*groupnorm)(sam3_ctx *c, float *x, int C, size_t hw, int groups, const double *st, int np, const sam3__norm *w, float eps, int relu);
    void (*layernorm)(sam3_ctx *c, const float *x, float *y, int n, int d, const sam3__norm *w, float eps);
    void (*layernorm2d)(sam3_ctx *c, float *x, int C, size_t hw, const sam3__norm *w, float eps, int gelu);
    void (*layernorm_pos)(sam3_ctx *c, const float *x, float *y, const float *pos, float *yp, int n, int d, const sam3__norm *w, float eps);
    sam3_result (*lerp_x_plan)(sam3_ctx *c, const sam3__lerp *tx, int ow, sam3__lerp_x *px);
    void (*lerp_x_row)(const sam3__lerp_x *px, const sam3__lerp *tx, const float *a, int iw, int ow, float *h);
    long (*lerp_y_threshold_row)(const float *a, const float *b, float l0, float l1, float thr, uint8_t *o, int ow, int stream);
    void (*linear)(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int out, float *y);
    void (*linear_res)(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int out, float *y, float *res);
    void (*ln_row)(const float *r, float *o, int d, const sam3__norm *w, float eps);
    sam3_result (*mha)(sam3_ctx *c, const sam3__attn_w *w, const float *qin, const float *kin, const float *vin, int nq, int nk, int D, int nh, int causal, float *out);
    sam3_result (*mha_core)(sam3_ctx *c, const sam3__attn_w *w, const sam3__mha_args *ma, float *out, float *res);
    sam3_result (*mha_res)(sam3_ctx *c, const sam3__attn_w *w, const float *qin, const float *kin, const float *vin, int nq, int nk, int D, int nh, float *tmp, float *res);
    sam3_result (*mlp2)(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l1, int hidden, const sam3__lin *l2, int out, int relu, float *y);
    sam3_result (*mlp2_res)(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l1, int hidden, const sam3__lin *l2, int out, int relu, float *y, float *res);
    sam3_result (*mlp3)(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int hidden, int out, float *y);
    void (*sgemm_builtin)(sam3_ctx *c, int nt, const sam3__gemm_args *g);
    void (*sigmoid_row)(const float *x, float *y, size_t n);
    void (*stream_fence)(int stream);
    void (*vadd)(sam3_ctx *c, float *y, const float *x, size_t n);
    void (*vadd_bias)(sam3_ctx *c, float *y, const float *x, const float *b, int rows, int d);
    int (*wino_rows)(const sam3_ctx *c, int nty, int ntx);
} sam3__ktab;

/* The kernel section's names, renamed per pass: every function, type and table the section
   defines has its line here (a name without one is defined twice, a compile error). */
#define sam3__amx_begin SAM3__KN(sam3__amx_begin)
#define sam3__amx_cfg SAM3__KN(sam3__amx_cfg)
#define sam3__amx_end SAM3__KN(sam3__amx_end)
#define sam3__att_bf16_mode SAM3__KN(sam3__att_bf16_mode)
#define sam3__att_kb SAM3__KN(sam3__att_kb)
#define sam3__attention_cross_bf16 SAM3__KN(sam3__attention_cross_bf16)
#define sam3__attention_fast SAM3__KN(sam3__attention_fast)
#define sam3__attention_packed SAM3__KN(sam3__attention_packed)
#define sam3__attention_packed_bf16 SAM3__KN(sam3__attention_packed_bf16)
#define sam3__attention_packed_fast SAM3__KN(sam3__attention_packed_fast)
#define sam3__attention_rel SAM3__KN(sam3__attention_rel)
#define sam3__attention_rope SAM3__KN(sam3__attention_rope)
#define sam3__attention_tiny SAM3__KN(sam3__attention_tiny)
#define sam3__attn_flops SAM3__KN(sam3__attn_flops)
#define sam3__attn_rows SAM3__KN(sam3__attn_rows)
#define sam3__attn_job SAM3__KN(sam3__attn_job)
#define sam3__attn_scores SAM3__KN(sam3__attn_scores)
#define sam3__attn_raise_max SAM3__KN(sam3__attn_raise_max)
#define sam3__attn_block_fused SAM3__KN(sam3__attn_block_fused)
#define sam3__attn_block SAM3__KN(sam3__attn_block)
#define sam3__attn_rows_bf16 SAM3__KN(sam3__attn_rows_bf16)
#define sam3__attn_rows_bf16_long SAM3__KN(sam3__attn_rows_bf16_long)
#define sam3__bf16_detect SAM3__KN(sam3__bf16_detect)
#define sam3__bf16_round_rows SAM3__KN(sam3__bf16_round_rows)
#define sam3__bf16_round_run SAM3__KN(sam3__bf16_round_run)
#define sam3__bf16_load32 SAM3__KN(sam3__bf16_load32)
#define sam3__bf16_row_avx512 SAM3__KN(sam3__bf16_row_avx512)
#define sam3__bf16_row_neon SAM3__KN(sam3__bf16_row_neon)
#define sam3__bgemm_blocks SAM3__KN(sam3__bgemm_blocks)
#define sam3__bgemm_kcb SAM3__KN(sam3__bgemm_kcb)
#define sam3__bgemm_kern SAM3__KN(sam3__bgemm_kern)
#define sam3__bgemm_kstep SAM3__KN(sam3__bgemm_kstep)
#define sam3__bgemm_mcb SAM3__KN(sam3__bgemm_mcb)
#define sam3__bgemm_ncb SAM3__KN(sam3__bgemm_ncb)
#define sam3__bgemm_pack_a SAM3__KN(sam3__bgemm_pack_a)
#define sam3__bgemm_pack_b SAM3__KN(sam3__bgemm_pack_b)
#define sam3__bgemm_pack_b_cols SAM3__KN(sam3__bgemm_pack_b_cols)
#define sam3__bgemm_pack_b_rows SAM3__KN(sam3__bgemm_pack_b_rows)
#define sam3__bgemm_ref SAM3__KN(sam3__bgemm_ref)
#define sam3__gemm_wide SAM3__KN(sam3__gemm_wide)
#define sam3__bgemm_run SAM3__KN(sam3__bgemm_run)
#define sam3__bgemm_small SAM3__KN(sam3__bgemm_small)
#define sam3__bgemm_small_cols SAM3__KN(sam3__bgemm_small_cols)
#define sam3__bgemm_store SAM3__KN(sam3__bgemm_store)
#define sam3__bgemm_task SAM3__KN(sam3__bgemm_task)
#define sam3__bepi SAM3__KN(sam3__bepi)
#define sam3__bepi_rows SAM3__KN(sam3__bepi_rows)
#define sam3__bop SAM3__KN(sam3__bop)
#define sam3__box_rpb SAM3__KN(sam3__box_rpb)
#define sam3__btile SAM3__KN(sam3__btile)
#define sam3__btile8_avx512 SAM3__KN(sam3__btile8_avx512)
#define sam3__btile_amx SAM3__KN(sam3__btile_amx)
#define sam3__btile_avx512 SAM3__KN(sam3__btile_avx512)
#define sam3__btile4_neon SAM3__KN(sam3__btile4_neon)
#define sam3__btile_neon SAM3__KN(sam3__btile_neon)
#define sam3__conv1x1 SAM3__KN(sam3__conv1x1)
#define sam3__conv3x3 SAM3__KN(sam3__conv3x3)
#define sam3__conv3x3_wino SAM3__KN(sam3__conv3x3_wino)
#define sam3__conv3x3_bf16 SAM3__KN(sam3__conv3x3_bf16)
#define sam3__conv_bpack SAM3__KN(sam3__conv_bpack)
#define sam3__conv_bsrc SAM3__KN(sam3__conv_bsrc)
#define sam3__conv_src SAM3__KN(sam3__conv_src)
#define sam3__conv_prefetch SAM3__KN(sam3__conv_prefetch)
#define sam3__conv3x3_amx SAM3__KN(sam3__conv3x3_amx)
#define sam3__conv_amx_row SAM3__KN(sam3__conv_amx_row)
#define sam3__conv_pairs_row SAM3__KN(sam3__conv_pairs_row)
#define sam3__store_pairs SAM3__KN(sam3__store_pairs)
#define sam3__conv_in_row SAM3__KN(sam3__conv_in_row)
#define sam3__band_stats SAM3__KN(sam3__band_stats)
#define sam3__convt2x2 SAM3__KN(sam3__convt2x2)
#define sam3__exp_sum SAM3__KN(sam3__exp_sum)
#define sam3__exp_p_bf16 SAM3__KN(sam3__exp_p_bf16)
#define sam3__tile_max SAM3__KN(sam3__tile_max)
#define sam3__ferf SAM3__KN(sam3__ferf)
#define sam3__fexp SAM3__KN(sam3__fexp)
#define sam3__ffn SAM3__KN(sam3__ffn)
#define sam3__gelu_bias SAM3__KN(sam3__gelu_bias)
#define sam3__gelu_bias_row SAM3__KN(sam3__gelu_bias_row)
#define sam3__gemm SAM3__KN(sam3__gemm)
#define sam3__gemm_act SAM3__KN(sam3__gemm_act)
#define sam3__gemm_bf16 SAM3__KN(sam3__gemm_bf16)
#define sam3__gemm_bf16_gelu SAM3__KN(sam3__gemm_bf16_gelu)
#define sam3__gemm_bf16_at SAM3__KN(sam3__gemm_bf16_at)
#define sam3__gemm_blocks SAM3__KN(sam3__gemm_blocks)
#define sam3__gemm_mixed SAM3__KN(sam3__gemm_mixed)
#define sam3__gemm_mixed_bf SAM3__KN(sam3__gemm_mixed_bf)
#define sam3__gemm_pack_a SAM3__KN(sam3__gemm_pack_a)
#define sam3__gemm_pack_b SAM3__KN(sam3__gemm_pack_b)
#define sam3__gemm_small SAM3__KN(sam3__gemm_small)
#define sam3__gemm_small_rows SAM3__KN(sam3__gemm_small_rows)
#define sam3__gemm_tile SAM3__KN(sam3__gemm_tile)
#define sam3__gemm_wx SAM3__KN(sam3__gemm_wx)
#define sam3__gemm_xw SAM3__KN(sam3__gemm_xw)
#define sam3__groupnorm SAM3__KN(sam3__groupnorm)
#define sam3__gv SAM3__KN(sam3__gv)
#define sam3__gv_zero SAM3__KN(sam3__gv_zero)
#define sam3__layernorm SAM3__KN(sam3__layernorm)
#define sam3__layernorm2d SAM3__KN(sam3__layernorm2d)
#define sam3__layernorm_pos SAM3__KN(sam3__layernorm_pos)
#define sam3__lerp_x_plan SAM3__KN(sam3__lerp_x_plan)
#define sam3__lerp_x_row SAM3__KN(sam3__lerp_x_row)
#define sam3__lerp_y_threshold_row SAM3__KN(sam3__lerp_y_threshold_row)
#define sam3__linear SAM3__KN(sam3__linear)
#define sam3__linear_relu SAM3__KN(sam3__linear_relu)
#define sam3__linear_res SAM3__KN(sam3__linear_res)
#define sam3__ln_row SAM3__KN(sam3__ln_row)
#define sam3__mha SAM3__KN(sam3__mha)
#define sam3__mha_core SAM3__KN(sam3__mha_core)
#define sam3__mha_few_keys SAM3__KN(sam3__mha_few_keys)
#define sam3__mha_few_queries SAM3__KN(sam3__mha_few_queries)
#define sam3__mha_res SAM3__KN(sam3__mha_res)
#define sam3__mlp2 SAM3__KN(sam3__mlp2)
#define sam3__mlp2_res SAM3__KN(sam3__mlp2_res)
#define sam3__mlp3 SAM3__KN(sam3__mlp3)
#define sam3__pv_acc SAM3__KN(sam3__pv_acc)
#define sam3__pv_acc_bf16 SAM3__KN(sam3__pv_acc_bf16)
#define sam3__pv_tiles SAM3__KN(sam3__pv_tiles)
#define sam3__qk_exp_panel SAM3__KN(sam3__qk_exp_panel)
#define sam3__qk_panel SAM3__KN(sam3__qk_panel)
#define sam3__ref_attention SAM3__KN(sam3__ref_attention)
#define sam3__ref_attention_packed SAM3__KN(sam3__ref_attention_packed)
#define sam3__ref_conv3x3 SAM3__KN(sam3__ref_conv3x3)
#define sam3__ref_gelu_bias SAM3__KN(sam3__ref_gelu_bias)
#define sam3__ref_ln_row SAM3__KN(sam3__ref_ln_row)
#define sam3__ref_resize_threshold SAM3__KN(sam3__ref_resize_threshold)
#define sam3__ref_sgemm SAM3__KN(sam3__ref_sgemm)
#define sam3__ref_sigmoid_row SAM3__KN(sam3__ref_sigmoid_row)
#define sam3__ref_softmax_row SAM3__KN(sam3__ref_softmax_row)
#define sam3__q_split_bf16 SAM3__KN(sam3__q_split_bf16)
#define sam3__p_row_bf16 SAM3__KN(sam3__p_row_bf16)
#define sam3__bg_claim SAM3__KN(sam3__bg_claim)
#define sam3__bg_wait SAM3__KN(sam3__bg_wait)
#define sam3__bgemm_pack_item SAM3__KN(sam3__bgemm_pack_item)
#define sam3__bgemm_task_item SAM3__KN(sam3__bgemm_task_item)
#define sam3__bkb SAM3__KN(sam3__bkb)
#define sam3__rope_pack SAM3__KN(sam3__rope_pack)
#define sam3__rope_key_bf16 SAM3__KN(sam3__rope_key_bf16)
#define sam3__rope_pack_bf16 SAM3__KN(sam3__rope_pack_bf16)
#define sam3__rope_row SAM3__KN(sam3__rope_row)
#define sam3__row_max SAM3__KN(sam3__row_max)
#define sam3__rpb_log SAM3__KN(sam3__rpb_log)
#define sam3__self_attention_bf16 SAM3__KN(sam3__self_attention_bf16)
#define sam3__sgemm SAM3__KN(sam3__sgemm)
#define sam3__sgemm_builtin SAM3__KN(sam3__sgemm_builtin)
#define sam3__sigmoid_row SAM3__KN(sam3__sigmoid_row)
#define sam3__softmax_groups SAM3__KN(sam3__softmax_groups)
#define sam3__softmax_rows SAM3__KN(sam3__softmax_rows)
#define sam3__stream_fence SAM3__KN(sam3__stream_fence)
#define sam3__v_pack SAM3__KN(sam3__v_pack)
#define sam3__v_pack_bf16 SAM3__KN(sam3__v_pack_bf16)
#define sam3__v_pair_bf16 SAM3__KN(sam3__v_pair_bf16)
#define sam3__vadd SAM3__KN(sam3__vadd)
#define sam3__vadd_bias SAM3__KN(sam3__vadd_bias)
#define sam3__vf SAM3__KN(sam3__vf)
#define sam3__vf_zero SAM3__KN(sam3__vf_zero)
#define sam3__vfu SAM3__KN(sam3__vfu)
#define sam3__vx SAM3__KN(sam3__vx)
#define sam3__vx_copysign SAM3__KN(sam3__vx_copysign)
#define sam3__vx_exp SAM3__KN(sam3__vx_exp)
#define sam3__vx_exp2_row SAM3__KN(sam3__vx_exp2_row)
#define sam3__vx_exp_reduced SAM3__KN(sam3__vx_exp_reduced)
#define sam3__vx_gelu SAM3__KN(sam3__vx_gelu)
#define sam3__vx_hmax SAM3__KN(sam3__vx_hmax)
#define sam3__vx_hsum SAM3__KN(sam3__vx_hsum)
#define sam3__vx_max SAM3__KN(sam3__vx_max)
#define sam3__vx_min SAM3__KN(sam3__vx_min)
#define sam3__vx_pow2n SAM3__KN(sam3__vx_pow2n)
#define sam3__wino_block SAM3__KN(sam3__wino_block)
#define sam3__wino_in SAM3__KN(sam3__wino_in)
#define sam3__wino_out SAM3__KN(sam3__wino_out)
#define sam3__wino_rows SAM3__KN(sam3__wino_rows)
#define sam3__wino_weights SAM3__KN(sam3__wino_weights)

#if defined(SAM3__DISPATCH)
/* a pass's target for every function it defines, and back */
#define SAM3__KSTR(x) #x
#if defined(__clang__)
#define SAM3__KPUSH(t) _Pragma(SAM3__KSTR(clang attribute push(__attribute__((target(t))), apply_to = function)))
#define SAM3__KPOP _Pragma("clang attribute pop")
#else
#define SAM3__KPUSH(t) _Pragma("GCC push_options") _Pragma(SAM3__KSTR(GCC target(t)))
#define SAM3__KPOP _Pragma("GCC pop_options")
#endif
#if defined(__aarch64__)
#define SAM3__KTARGET(t) __attribute__((target(t))) /* no pass pragma on aarch64: the BFDOT kernels carry theirs */
#else
#define SAM3__KTARGET(t) /* the pass's pragma gives the whole pass its target */
#endif
#define SAM3__KPASS 1
#define SAM3__KSFX __ref
#define SAM3__KNAME "reference"
#define SAM3__KREF 1
#include SAM3_HEADER_NAME
#undef SAM3__KREF
#undef SAM3__KNAME
#undef SAM3__KSFX
#if defined(__x86_64__)
#define SAM3__KSFX __avx2
#define SAM3__KNAME "avx2"
#define SAM3__KAVX2 1
SAM3__KPUSH("avx,avx2,fma,f16c")
#include SAM3_HEADER_NAME
SAM3__KPOP
#undef SAM3__KAVX2
#undef SAM3__KNAME
#undef SAM3__KSFX
#define SAM3__KSFX __avx512
#define SAM3__KNAME "avx512"
#define SAM3__KAVX512 1
#if defined(SAM3__CC_BF16)
#define SAM3__KBF16 1
SAM3__KPUSH("avx,avx2,fma,f16c,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")
#else
SAM3__KPUSH("avx,avx2,fma,f16c,avx512f,avx512dq,avx512bw,avx512vl")
#endif
#include SAM3_HEADER_NAME
SAM3__KPOP
#undef SAM3__KBF16
#undef SAM3__KAVX512
#undef SAM3__KNAME
#undef SAM3__KSFX
#elif defined(__aarch64__)
#define SAM3__KSFX __neon
#define SAM3__KNAME "neon"
#define SAM3__KNEON 1
#include SAM3_HEADER_NAME
#undef SAM3__KNEON
#undef SAM3__KNAME
#undef SAM3__KSFX
#endif
#undef SAM3__KPASS
/* outside the kernel section only the entry points, through the context's table */
#define SAM3__KSFX __is_internal_to_the_kernels
#undef sam3__bf16_detect
#undef sam3__lerp_x_row
#undef sam3__lerp_y_threshold_row
#undef sam3__ln_row
#undef sam3__sgemm_builtin
#undef sam3__sigmoid_row
#undef sam3__stream_fence
#undef sam3__att_bf16_mode
#define sam3__att_bf16_mode(c, ...) ((c)->k->att_bf16_mode((c), __VA_ARGS__))
#undef sam3__attention_rel
#define sam3__attention_rel(c, ...) ((c)->k->attention_rel((c), __VA_ARGS__))
#undef sam3__attention_rope
#define sam3__attention_rope(c, ...) ((c)->k->attention_rope((c), __VA_ARGS__))
#undef sam3__box_rpb
#define sam3__box_rpb(c, ...) ((c)->k->box_rpb((c), __VA_ARGS__))
#undef sam3__conv1x1
#define sam3__conv1x1(c, ...) ((c)->k->conv1x1((c), __VA_ARGS__))
#undef sam3__conv3x3
#define sam3__conv3x3(c, ...) ((c)->k->conv3x3((c), __VA_ARGS__))
#undef sam3__convt2x2
#define sam3__convt2x2(c, ...) ((c)->k->convt2x2((c), __VA_ARGS__))
#undef sam3__ffn
#define sam3__ffn(c, ...) ((c)->k->ffn((c), __VA_ARGS__))
#undef sam3__gelu_bias
#define sam3__gelu_bias(c, ...) ((c)->k->gelu_bias((c), __VA_ARGS__))
#undef sam3__gemm
#define sam3__gemm(c, ...) ((c)->k->gemm((c), __VA_ARGS__))
#undef sam3__gemm_act
#define sam3__gemm_act(c, ...) ((c)->k->gemm_act((c), __VA_ARGS__))
#undef sam3__gemm_bf16_gelu
#define sam3__gemm_bf16_gelu(c, ...) ((c)->k->gemm_bf16_gelu((c), __VA_ARGS__))
#undef sam3__gemm_bf16_at
#define sam3__gemm_bf16_at(c, ...) ((c)->k->gemm_bf16_at((c), __VA_ARGS__))
#undef sam3__gemm_mixed
#define sam3__gemm_mixed(c, ...) ((c)->k->gemm_mixed((c), __VA_ARGS__))
#undef sam3__gemm_wx
#define sam3__gemm_wx(c, ...) ((c)->k->gemm_wx((c), __VA_ARGS__))
#undef sam3__gemm_xw
#define sam3__gemm_xw(c, ...) ((c)->k->gemm_xw((c), __VA_ARGS__))
#undef sam3__groupnorm
#define sam3__groupnorm(c, ...) ((c)->k->groupnorm((c), __VA_ARGS__))
#undef sam3__layernorm
#define sam3__layernorm(c, ...) ((c)->k->layernorm((c), __VA_ARGS__))
#undef sam3__layernorm2d
#define sam3__layernorm2d(c, ...) ((c)->k->layernorm2d((c), __VA_ARGS__))
#undef sam3__layernorm_pos
#define sam3__layernorm_pos(c, ...) ((c)->k->layernorm_pos((c), __VA_ARGS__))
#undef sam3__lerp_x_plan
#define sam3__lerp_x_plan(c, ...) ((c)->k->lerp_x_plan((c), __VA_ARGS__))
#undef sam3__linear
#define sam3__linear(c, ...) ((c)->k->linear((c), __VA_ARGS__))
#undef sam3__linear_res
#define sam3__linear_res(c, ...) ((c)->k->linear_res((c), __VA_ARGS__))
#undef sam3__mha
#define sam3__mha(c, ...) ((c)->k->mha((c), __VA_ARGS__))
#undef sam3__mha_core
#define sam3__mha_core(c, ...) ((c)->k->mha_core((c), __VA_ARGS__))
#undef sam3__mha_res
#define sam3__mha_res(c, ...) ((c)->k->mha_res((c), __VA_ARGS__))
#undef sam3__mlp2
#define sam3__mlp2(c, ...) ((c)->k->mlp2((c), __VA_ARGS__))
#undef sam3__mlp2_res
#define sam3__mlp2_res(c, ...) ((c)->k->mlp2_res((c), __VA_ARGS__))
#undef sam3__mlp3
#define sam3__mlp3(c, ...) ((c)->k->mlp3((c), __VA_ARGS__))
#undef sam3__vadd
#define sam3__vadd(c, ...) ((c)->k->vadd((c), __VA_ARGS__))
#undef sam3__vadd_bias
#define sam3__vadd_bias(c, ...) ((c)->k->vadd_bias((c), __VA_ARGS__))
#undef sam3__wino_rows
#define sam3__wino_rows(c, ...) ((c)->k->wino_rows((c), __VA_ARGS__))
#else
#if defined(__GNUC__)
#define SAM3__KTARGET(t) __attribute__((target(t)))
#else
#define SAM3__KTARGET(t)
#endif
#define SAM3__KPASS 1
#define SAM3__KSFX __k
#if defined(SAM3_REFERENCE_KERNELS)
#define SAM3__KREF 1
#define SAM3__KNAME "reference"
#elif defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SAM3__KAVX512 1
#define SAM3__KNAME "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#define SAM3__KAVX2 1
#define SAM3__KNAME "avx2"
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define SAM3__KNEON 1
#define SAM3__KNAME "neon"
#else
#define SAM3__KNAME "portable"
#endif
#if defined(SAM3__CC_BF16)
#define SAM3__KBF16 1 /* the bf16 kernels carry their own target attributes (SAM3__KTARGET) */
#endif
#include SAM3_HEADER_NAME
#undef SAM3__KPASS
#endif
#endif /* SAM3_IMPLEMENTATION_INCLUDED */
#endif /* SAM3_IMPLEMENTATION */

#if defined(SAM3__KPASS)
/* ==== sam3: built-in SGEMM ==== */
/* Row-major C = alpha op(A) op(B) + beta C without a BLAS (SAM3_NO_BLAS), as GotoBLAS/BLIS do it:
   op(B) in blocks of KC x NC packed into panels of NR columns (k-major: NR floats per k), op(A) in
   blocks of MC x KC packed per thread into panels of MR rows, and an MR x NR register tile that
   loads two vectors of B and broadcasts one A value per row at each k (2 MR FMAs per 2 loads).
   The tile keeps the B panel (KC NR floats) in L1, the A block in L2 and the B block in L3.
   Vectors through GCC/clang vector extensions: 16 floats with AVX-512 (8 x 32 tile: 16 of 32
   registers), 8 with AVX (6 x 16: 12 of 16), 4 otherwise (SSE: 6 x 8; NEON: 8 x 8 of 32); other
   compilers get a plain-C 4 x 8 tile. The packing buffers are kernel scratch (sam3__kbuf_get); where
   none can be had the product is computed unblocked. */
#define SAM3__GKC 256 /* k per block */
#define SAM3__UNROLL_G _Pragma("GCC unroll 16")
#if defined(__GNUC__) && !defined(SAM3__KREF)
#if defined(SAM3__KAVX512)
#define SAM3__GW 16
#define SAM3__GMR 8
#elif defined(SAM3__KAVX2)
#define SAM3__GW 8
#define SAM3__GMR 6
#elif defined(SAM3__KNEON)
#define SAM3__GW 4
#define SAM3__GMR 8
#else
#define SAM3__GW 4
#define SAM3__GMR 6
#endif
#define SAM3__GNR (2 * SAM3__GW)
typedef float sam3__gv __attribute__((vector_size(SAM3__GW * sizeof(float))));
static const sam3__gv sam3__gv_zero = {0};
#else
#define SAM3__GMR 4
#define SAM3__GNR 8
#endif
#define SAM3__GMC (SAM3__GMR * 16)   /* rows per A block: 64..128 x KC floats, in L2 */
#define SAM3__GNC (SAM3__GNR * 64)   /* columns per B block: up to 2 MB with AVX-512, in L3 */

/* pa: (MR-row panels of the mc x kc block of op(A) at (i0, p0), each (kc, MR), zero rows past mc) */
static void sam3__gemm_pack_a(int ta, const float *A, int lda, int i0, int p0, int mc, int kc, float *pa) {
    int ip, r, k;
    for (ip = 0; ip < mc; ip += SAM3__GMR, pa += (size_t)SAM3__GMR * kc) {
        const int mr = SAM3__MIN(SAM3__GMR, mc - ip);
        if (!ta) {
            for (r = 0; r < mr; r++) {
                const float *a = A + (size_t)(i0 + ip + r) * lda + p0;
                for (k = 0; k < kc; k++) pa[(size_t)k * SAM3__GMR + r] = a[k];
            }
        } else {
            for (k = 0; k < kc; k++) {
                const float *a = A + (size_t)(p0 + k) * lda + i0 + ip;
                for (r = 0; r < mr; r++) pa[(size_t)k * SAM3__GMR + r] = a[r];
            }
        }
        for (r = mr; r < SAM3__GMR; r++)
            for (k = 0; k < kc; k++) pa[(size_t)k * SAM3__GMR + r] = 0;
    }
}
/* pb: panel jp (NR columns from j0 + jp NR) of the kc x nc block of op(B) at (p0, j0): (kc, NR), zero columns past nc */
static void sam3__gemm_pack_b(int tb, const float *B, int ldb, int p0, int j0, int kc, int nc, int jp, float *pb) {
    const int j = jp * SAM3__GNR, nr = SAM3__MIN(SAM3__GNR, nc - j);
    int k, q;
    if (!tb) {
        for (k = 0; k < kc; k++) {
            const float *b = B + (size_t)(p0 + k) * ldb + j0 + j;
            float *d = pb + (size_t)k * SAM3__GNR;
            for (q = 0; q < nr; q++) d[q] = b[q];
            for (; q < SAM3__GNR; q++) d[q] = 0;
        }
    } else {
        for (q = 0; q < nr; q++) {
            const float *b = B + (size_t)(j0 + j + q) * ldb + p0;
            for (k = 0; k < kc; k++) pb[(size_t)k * SAM3__GNR + q] = b[k];
        }
        for (; q < SAM3__GNR; q++)
            for (k = 0; k < kc; k++) pb[(size_t)k * SAM3__GNR + q] = 0;
    }
}

/* The mr x nr corner of the tile pa (kc, MR) x pb (kc, NR) into C: C = alpha t + beta C on the
   first k block (beta 0: C not read), C += alpha t after. */
static SAM3__CONTRACT void sam3__gemm_tile(int kc, const float *pa, const float *pb, float *C, int ldc, int mr, int nr, float alpha,
                                           float beta, int first) {
    float t[SAM3__GMR][SAM3__GNR];
    int r, q, k;
#if defined(__GNUC__) && !defined(SAM3__KREF)
    sam3__gv acc[SAM3__GMR][2];
    SAM3__UNROLL_G
    for (r = 0; r < SAM3__GMR; r++) acc[r][0] = acc[r][1] = sam3__gv_zero;
    for (k = 0; k < kc; k++, pa += SAM3__GMR, pb += SAM3__GNR) {
        const sam3__gv b0 = *(const sam3__gv *)(const void *)pb, b1 = *(const sam3__gv *)(const void *)(pb + SAM3__GW);
        SAM3__UNROLL_G
        for (r = 0; r < SAM3__GMR; r++) {
            const float a = pa[r];
            acc[r][0] += a * b0;
            acc[r][1] += a * b1;
        }
    }
    if (mr == SAM3__GMR && nr == SAM3__GNR) {
        SAM3__UNROLL_G
        for (r = 0; r < SAM3__GMR; r++) {
            float *c = C + (size_t)r * ldc;
            sam3__gv c0, c1;
            memcpy(&c0, c, sizeof(c0));
            memcpy(&c1, c + SAM3__GW, sizeof(c1));
            if (first) {
                c0 = beta == 0 ? alpha * acc[r][0] : alpha * acc[r][0] + beta * c0;
                c1 = beta == 0 ? alpha * acc[r][1] : alpha * acc[r][1] + beta * c1;
            } else {
                c0 += alpha * acc[r][0];
                c1 += alpha * acc[r][1];
            }
            memcpy(c, &c0, sizeof(c0));
            memcpy(c + SAM3__GW, &c1, sizeof(c1));
        }
        return;
    }
    for (r = 0; r < SAM3__GMR; r++) {
        memcpy(t[r], &acc[r][0], sizeof(acc[r][0]));
        memcpy(t[r] + SAM3__GW, &acc[r][1], sizeof(acc[r][1]));
    }
#else
    for (r = 0; r < SAM3__GMR; r++)
        for (q = 0; q < SAM3__GNR; q++) t[r][q] = 0;
    for (k = 0; k < kc; k++, pa += SAM3__GMR, pb += SAM3__GNR)
        for (r = 0; r < SAM3__GMR; r++)
            for (q = 0; q < SAM3__GNR; q++) t[r][q] += pa[r] * pb[q];
#endif
    for (r = 0; r < mr; r++) {
        float *c = C + (size_t)r * ldc;
        for (q = 0; q < nr; q++)
            c[q] = first ? (beta == 0 ? alpha * t[r][q] : alpha * t[r][q] + beta * c[q]) : c[q] + alpha * t[r][q];
    }
}

/* Runs on every thread of the caller's team (or alone): the k blocks of one B block in order, the
   B panels shared out, then (A row block, group of B panels) tasks. */
static void sam3__gemm_blocks(const sam3__gemm_args *g, float *pb, float *pa_all, int ngrp) {
    const int M = g->m, N = g->n, K = g->k, ldc = g->ldc;
    int jc, pc;
    for (jc = 0; jc < N; jc += SAM3__GNC) {
        const int nc = SAM3__MIN(SAM3__GNC, N - jc), npan = (nc + SAM3__GNR - 1) / SAM3__GNR;
        for (pc = 0; pc < K || pc == 0; pc += SAM3__GKC) {
            const int kc = SAM3__MIN(SAM3__GKC, K - pc), nmb = (M + SAM3__GMC - 1) / SAM3__GMC, ntask = nmb * ngrp;
            int jp, task;
#ifdef _OPENMP
            float *pa = pa_all + (size_t)omp_get_thread_num() * SAM3__GMC * SAM3__GKC;
#else
            float *pa = pa_all;
#endif
            SAM3__OMP(for schedule(static))
            for (jp = 0; jp < npan; jp++) sam3__gemm_pack_b(g->tb, g->b, g->ldb, pc, jc, kc, nc, jp, pb + (size_t)jp * SAM3__GNR * kc);
            SAM3__OMP(for schedule(dynamic, 1))
            for (task = 0; task < ntask; task++) {
                const int ib = task / ngrp, gi = task % ngrp, i0 = ib * SAM3__GMC, mc = SAM3__MIN(SAM3__GMC, M - i0);
                const int j0 = (int)((long long)npan * gi / ngrp), j1 = (int)((long long)npan * (gi + 1) / ngrp);
                int ip;
                if (kc > 0) sam3__gemm_pack_a(g->ta, g->a, g->lda, i0, pc, mc, kc, pa);
                for (jp = j0; jp < j1; jp++) {
                    const int nr = SAM3__MIN(SAM3__GNR, nc - jp * SAM3__GNR);
                    for (ip = 0; ip < mc; ip += SAM3__GMR)
                        sam3__gemm_tile(kc, pa + (size_t)ip * kc, pb + (size_t)jp * SAM3__GNR * kc,
                                        g->c + (size_t)(i0 + ip) * ldc + jc + jp * SAM3__GNR, ldc, SAM3__MIN(SAM3__GMR, mc - ip), nr,
                                        g->alpha, g->beta, pc == 0);
                }
            }
            if (K == 0) break;
        }
    }
}

/* g's product (f32 operands; g->ah, g->bh, g->ch not used); nt: threads to use (1 inside a
   parallel region). */
static void sam3__sgemm_builtin(sam3_ctx *c, int nt, const sam3__gemm_args *g) {
    const int M = g->m, N = g->n, K = g->k, kc = SAM3__MIN(SAM3__GKC, K > 0 ? K : 1);
    const int ncp = (SAM3__MIN(SAM3__GNC, N) + SAM3__GNR - 1) / SAM3__GNR * SAM3__GNR, nmb = (M + SAM3__GMC - 1) / SAM3__GMC;
    int ngrp = 1;
    size_t nb, na;
    sam3__kbuf kb;
    float *pb, *pa;
    if (M <= 0 || N <= 0) return;
#ifdef _OPENMP
    if (omp_in_parallel()) nt = 1;
#else
    nt = 1;
#endif
    if (nt < 1) nt = 1;
    /* too few row blocks for the threads: the B panels are shared out too */
    while (nmb * ngrp < 2 * nt && ngrp * SAM3__GNR < N) ngrp *= 2;
    nb = (size_t)kc * ncp;
    na = (size_t)nt * SAM3__GMC * SAM3__GKC;
    if (!(pb = (float *)sam3__kbuf_get(c, (nb + na) * sizeof(float), &kb))) {
        /* unblocked: slow, but the right answer */
        int i, j, k;
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                float acc = 0;
                float *cij = g->c + (size_t)i * g->ldc + j;
                for (k = 0; k < K; k++)
                    acc += (g->ta ? g->a[(size_t)k * g->lda + i] : g->a[(size_t)i * g->lda + k]) *
                           (g->tb ? g->b[(size_t)j * g->ldb + k] : g->b[(size_t)k * g->ldb + j]);
                *cij = g->alpha * acc + (g->beta == 0 ? 0.0f : g->beta * *cij);
            }
        return;
    }
    pa = pb + nb;
    /* a region of its own also with one thread: inside the caller's parallel region, the
       work-sharing loops of sam3__gemm_blocks would otherwise bind to the caller's team */
    SAM3__OMP(parallel num_threads(nt))
    sam3__gemm_blocks(g, pb, pa, ngrp);
    sam3__kbuf_put(c, &kb);
}

/* ==== sam3: bf16 kernels ==== */
/* Matrix products with bf16 inputs and f32 accumulation: C = op(A) op(B) + beta C where either
   operand is f32 (rounded to bf16, to nearest even as torch's .to(torch.bfloat16), when packed) or
   bf16 (a weight from a file converted with --dtype bf16). Three kernels behind one entry point
   (sam3__gemm_bf16), chosen per context by sam3__bf16_detect:
     SAM3__BK_REF     the reference: op(A) and op(B) rounded to bf16 and widened back to f32 a
                      slice at a time, then the f32 product (sam3__gemm); every platform
     SAM3__BK_AVX512  AVX512-BF16 (vdpbf16ps: Zen 4, Cooper Lake, Sapphire Rapids); on aarch64
                      at the same level SAM3__BK_NEON, BFDOT (FEAT_BF16: Neoverse V1/N2/V2,
                      Graviton 3/4; Linux), on the same panels
     SAM3__BK_AMX     AMX-BF16 tiles (Sapphire Rapids and later; Linux, after the kernel grants
                      the tile state with arch_prctl(ARCH_REQ_XCOMP_PERM))
   The fast kernels are blocked as the built-in SGEMM: op(B) in KC x NC blocks of NR-column panels
   (k pairs interleaved: panel[k/2][col][k%2], the layout of vdpbf16ps's and AMX's B operand),
   op(A) in MC x KC blocks (all of a k block's packed before its tiles run, shared by the threads)
   stored row by row (AVX-512) or as AMX A tiles (sam3__bgemm_pack_a), K padded with zeros to a multiple of 32. They compute the same bf16 products as the
   reference, in another order. Compiled through target attributes: a build without -mavx512bf16
   (or +bf16) has them and uses them where the CPU does. */
/* AVX-512's k blocks: up to 4800 k, K split into equal blocks (multiples of 32). Each k block
   after the first loads every C tile again, rows a whole output row apart and long out of cache,
   so few long k blocks beat many short ones: the ViT's widest K (fc2's 4736) is one block, its A
   blocks of 64 rows (600 KB) fitting a 1 MB L2 beside the B panel. (Numbers: the commit that set
   these.) */
#ifndef SAM3__BKC
#define SAM3__BKC 4800 /* k per block at most (a multiple of 32) */
#endif
#define SAM3__BMR 32   /* rows per micro-tile (AMX: two 16-row A tiles; AVX-512: four passes of 8) */
#ifndef SAM3__BMC
#define SAM3__BMC 64 /* AVX-512's rows per A block: 64 x 4736 bf16 = 600 KB, in L2 */
#endif
#define SAM3__BNC (SAM3__BNR * 64)
/* AMX's blocks: a tile step (four tdpbf16ps) takes 32 k, and each k block after the first sends
   every 32 x 32 tile's sums through memory again, so a k block is long (1024: the B panel past
   L1, the A block of 128 KB in L2). The columns of a ViT layer's widest product (4736) fit one B
   block, so the activations are rounded and packed once per k block. (-D overrides: for tuning
   runs; test_gemm's shapes follow them.) */
#ifndef SAM3__BKC_AMX
#define SAM3__BKC_AMX 1024
#endif
#ifndef SAM3__BMC_AMX
#define SAM3__BMC_AMX 64 /* rows per A block: 64 x 1024 bf16 = 128 KB, in L2 beside a task's B panels */
#endif
#define SAM3__BNC_AMX (SAM3__BNR * 150)
#ifndef SAM3__BGRP_BYTES
#define SAM3__BGRP_BYTES (2 << 20) /* AMX: a task's packed B panels at most, about a core's L2 (0: no limit) */
#endif
#ifndef SAM3__AMX_PFN
#define SAM3__AMX_PFN 1 /* a B panel's tiles fetch the next panel into L2 (0: not) */
#endif
#ifndef SAM3__AMX_PFB
#define SAM3__AMX_PFB 2 /* k steps ahead that a tile prefetches its B panel (0: none) */
#endif
#define SAM3__BKC_MAX (SAM3__BKC > SAM3__BKC_AMX ? SAM3__BKC : SAM3__BKC_AMX)
#define SAM3__BMC_MAX (SAM3__BMC > SAM3__BMC_AMX ? SAM3__BMC : SAM3__BMC_AMX)
static int sam3__bgemm_kcb(int kern) { return kern == SAM3__BK_AMX ? SAM3__BKC_AMX : SAM3__BKC; }
static int sam3__bgemm_mcb(int kern) { return kern == SAM3__BK_AMX ? SAM3__BMC_AMX : SAM3__BMC; }
/* the k block for a product with K k: AMX's fixed size; AVX-512's largest up to SAM3__BKC that
   splits K evenly (4736: one block; 9000: two of 4512 and 4488, not one of 4800 and one of 4200) */
static int sam3__bgemm_kstep(int kern, int K) {
    const int kmax = sam3__bgemm_kcb(kern);
    int nb;
    if (kern == SAM3__BK_AMX || K <= kmax) return kmax;
    nb = (K + kmax - 1) / kmax;
    return ((K + nb - 1) / nb + 31) / 32 * 32;
}
/* Columns per B block for k blocks of kcp: the kernel's own width, or wider up to a packed block
   of SAM3__BNB bytes where k is short. A block ends in two barriers (its packing, its tiles), and
   beside a busy process each barrier can wait out the time slice of a descheduled thread: the
   neck's 1x1 convs (K 256, N up to a whole map's pixels) take few wide blocks, not many narrow. */
#ifndef SAM3__BNB
#define SAM3__BNB (8 << 20)
#endif
#define SAM3__BNC_MAX (SAM3__BNR * 512)
static int sam3__bgemm_ncb(int kern, int kcp) {
    const int base = kern == SAM3__BK_AMX ? SAM3__BNC_AMX : SAM3__BNC;
    const int wide = SAM3__MIN(SAM3__BNC_MAX, SAM3__BNB / (2 * SAM3__MAX(kcp, 32)) / SAM3__BNR * SAM3__BNR);
    return SAM3__MAX(base, wide);
}

#if defined(SAM3__KBF16)
#define SAM3__BF16_X86 1
#if defined(__linux__)
#define SAM3__BF16_AMX 1
#endif
#endif
#if defined(SAM3__KNEON) && defined(SAM3__CC_BF16_ARM)
#define SAM3__BF16_ARM 1
#endif
/* the pass's level-1 bf16 kernel (AVX512-BF16 or BFDOT): its row rounding and its BMR x BNR tile */
#if defined(SAM3__BF16_X86)
#define SAM3__BF16_VEC 1
#define SAM3__BF16_ROW sam3__bf16_row_avx512
#define SAM3__BTILE_VEC sam3__btile_avx512
#elif defined(SAM3__BF16_ARM)
#define SAM3__BF16_VEC 1
#define SAM3__BF16_ROW sam3__bf16_row_neon
#define SAM3__BTILE_VEC sam3__btile_neon
#endif


/* The fastest kernel this CPU and OS allow (SAM3__BK_*). Asks Linux for the AMX tile state once
   per call; the grant is the process's, so asking again is harmless. */
static int sam3__bf16_detect(void) {
#if defined(SAM3__BF16_X86)
    unsigned a, b, c, d, xlo, xhi;
    int k = SAM3__BK_REF;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return k; /* OSXSAVE */
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if ((xlo & 0xe6u) != 0xe6u) return k; /* the OS saves the YMM, opmask and ZMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 16)) || !(b & (1u << 30))) return k; /* AVX512F, BW */
    {
        unsigned a1, b1, c1, d1;
        if (!__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) || !(a1 & (1u << 5))) return k; /* AVX512_BF16 */
    }
    k = SAM3__BK_AVX512;
#if defined(SAM3__BF16_AMX)
    /* AMX-BF16 and AMX-TILE, the tile state enabled in XCR0 (bits 17, 18), and the process
       allowed to use it: ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18) */
    if ((d & (1u << 22)) && (d & (1u << 24)) && (xlo & (3u << 17)) == (3u << 17)) {
        long r; /* the syscall itself (arch_prctl is 158 on x86-64): no _GNU_SOURCE needed for syscall() */
        __asm__ volatile("syscall" : "=a"(r) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
        if (r == 0) k = SAM3__BK_AMX;
    }
#endif
    return k;
#elif defined(SAM3__BF16_ARM)
    /* AT_HWCAP2's HWCAP2_BF16 (bit 14): BFDOT, BFMMLA and BFCVT */
    return getauxval(AT_HWCAP2) >> 14 & 1u ? SAM3__BK_NEON : SAM3__BK_REF;
#else
    return SAM3__BK_REF;
#endif
}

/* Element (i, k) of op(X), X f32 (x) or bf16 (xh), as bf16 bits. */
static SAM3__INLINE uint16_t sam3__bop(int t, const float *x, const uint16_t *xh, int ld, int i, int k) {
    const size_t o = t ? (size_t)k * ld + i : (size_t)i * ld + k;
    return xh ? xh[o] : sam3__f32_bf16(x[o]);
}

#if defined(SAM3__BF16_X86)
/* n f32 -> bf16 (round to nearest even), 32 at a time */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__bf16_row_avx512(const float *s, uint16_t *d, int n) {
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + i + 16), _mm512_loadu_ps(s + i));
        _mm512_storeu_si512((void *)(d + i), (__m512i)v);
    }
    for (; i < n; i++) d[i] = sam3__f32_bf16(s[i]);
}
#endif
#if defined(SAM3__BF16_ARM)
/* n f32 -> bf16 (round to nearest even: BFCVTN in FPCR's default rounding mode), 8 at a time, the
   last ones through a zero-padded copy (no sam3__f32_bf16 here: under -march=armv8.6-a this
   function's target is below the file's, and GCC will not inline a forced-inline helper into it) */
SAM3__KTARGET("arch=armv8.2-a+bf16") static void sam3__bf16_row_neon(const float *s, uint16_t *d, int n) {
    int i = 0;
    for (;; i += 8) {
        float x[8] = {0}; /* the last < 8 values, zero-padded */
        uint16_t y[8];
        const float *p = s + i;
        bfloat16x8_t v;
        if (i + 8 > n) {
            if (i >= n) break;
            memcpy(x, s + i, (size_t)(n - i) * sizeof(float));
            p = x;
        }
        v = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vld1q_f32(p)), vld1q_f32(p + 4));
        if (p == x) {
            vst1q_u16(y, vreinterpretq_u16_bf16(v));
            memcpy(d + i, y, (size_t)(n - i) * sizeof(uint16_t));
            break;
        }
        vst1q_u16(d + i, vreinterpretq_u16_bf16(v));
    }
}
#endif

/* pa: the mc x kc block of op(A) at (i0, p0), zero past kc and in rows mc .. mcp (mc rounded up to
   SAM3__BMR; kcp = kc rounded up to 32). Rows (AVX-512): row r at pa + r kcp. Tiles (AMX): each
   16-row x 32-k A tile is 1 KB of its own, tile (r / 16, k / 32) at pa + (r / 16) 16 kcp +
   (k / 32) 512: a tile load then reads 16 consecutive cache lines instead of 16 lines a row apart. */
static void sam3__bgemm_pack_a(int kern, int ta, const float *A, const uint16_t *Ah, int lda, int i0, int p0, int mc, int kc, int kcp,
                               uint16_t *pa, int tiles) {
    const int mcp = (mc + SAM3__BMR - 1) / SAM3__BMR * SAM3__BMR;
    uint16_t row[SAM3__BKC_MAX]; /* one row before it is cut into tiles */
    int r, k;
    for (r = 0; r < mcp; r++) {
        uint16_t *d = tiles ? row : pa + (size_t)r * kcp;
        k = 0;
        if (r < mc) {
            if (!ta && Ah) {
                memcpy(d, Ah + (size_t)(i0 + r) * lda + p0, (size_t)kc * sizeof(uint16_t));
                k = kc;
            }
#if defined(SAM3__BF16_VEC)
            else if (!ta && kern != SAM3__BK_REF) {
                SAM3__BF16_ROW(A + (size_t)(i0 + r) * lda + p0, d, kc);
                k = kc;
            }
#else
            (void)kern;
#endif
            for (; k < kc; k++) d[k] = sam3__bop(ta, A, Ah, lda, i0 + r, p0 + k);
        }
        for (; k < kcp; k++) d[k] = 0;
        if (tiles)
            for (k = 0; k < kcp; k += 32)
                memcpy(pa + SAM3__ATILE(r, k, (size_t)16 * kcp), row + k, 32 * sizeof(uint16_t));
    }
}
/* pb: panel jp (NR columns from j0 + jp NR) of the kc x nc block of op(B) at (p0, j0), as
   (kcp / 2, NR, 2): the pair (k, k + 1) of column q at pb[(k / 2) NR 2 + 2 q], zero past kc and nc. */
#if defined(SAM3__BF16_X86)
/* 32 k of row w (f32 or bf16) from k on, zero past n, as bf16 pairs */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static SAM3__INLINE __m512bh sam3__bf16_load32(const float *w, const uint16_t *wh,
                                                                                                        int k, int n) {
    if (wh) {
        if (k + 32 <= n) return (__m512bh)_mm512_loadu_si512((const void *)(wh + k));
        return (__m512bh)_mm512_maskz_loadu_epi16((__mmask32)((1ull << (n - k)) - 1), (const void *)(wh + k));
    }
    if (k + 32 <= n) return _mm512_cvtne2ps_pbh(_mm512_loadu_ps(w + k + 16), _mm512_loadu_ps(w + k));
    {
        const int r = n - k, lo = SAM3__MIN(r, 16), hi = r - lo;
        const __m512 a = _mm512_maskz_loadu_ps((__mmask16)((1u << lo) - 1), w + k);
        const __m512 b = hi > 0 ? _mm512_maskz_loadu_ps((__mmask16)((1u << hi) - 1), w + k + 16) : _mm512_setzero_ps();
        return _mm512_cvtne2ps_pbh(b, a);
    }
}
/* Panel columns from rows of B (op(B) = B^T: a Linear weight, or activations token-major): 32 k of
   16 rows rounded at a time (16 vectors of 16 k pairs), a 16 x 16 transpose of those pairs in
   registers, then each k pair's 16 columns stored as one 64-byte run; columns nr .. NR zero.
   (maskz forms with every lane set: g++ 12 warns inside the plain ones, as in pack_b_rows.) */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__bgemm_pack_b_cols(const float *B, const uint16_t *Bh, int ldb,
                                                                                             int p0, int row0, int nr, int kc, int kcp,
                                                                                             uint16_t *pb) {
    int q0, k, i, j;
    for (q0 = 0; q0 < SAM3__BNR; q0 += 16)
        for (k = 0; k < kcp; k += 32) {
            __m512i r[16], a[16]; /* r[i]: row q0 + i's 16 k pairs; then its transpose, a pair's 16 rows */
            for (i = 0; i < 16; i++) {
                const int q = q0 + i;
                r[i] = q < nr && k < kc ? (__m512i)sam3__bf16_load32(B ? B + (size_t)(row0 + q) * ldb + p0 : NULL,
                                                                     Bh ? Bh + (size_t)(row0 + q) * ldb + p0 : NULL, k, kc)
                                        : _mm512_setzero_si512();
            }
            for (i = 0; i < 16; i += 2) { /* within 128-bit lanes: rows i, i + 1 interleaved */
                a[i] = _mm512_maskz_unpacklo_epi32(0xffff, r[i], r[i + 1]);
                a[i + 1] = _mm512_maskz_unpackhi_epi32(0xffff, r[i], r[i + 1]);
            }
            for (i = 0; i < 16; i += 4) { /* r[i + j]'s lane L: rows i .. i + 3 at pair 4 L + j */
                r[i] = _mm512_maskz_unpacklo_epi64(0xff, a[i], a[i + 2]);
                r[i + 1] = _mm512_maskz_unpackhi_epi64(0xff, a[i], a[i + 2]);
                r[i + 2] = _mm512_maskz_unpacklo_epi64(0xff, a[i + 1], a[i + 3]);
                r[i + 3] = _mm512_maskz_unpackhi_epi64(0xff, a[i + 1], a[i + 3]);
            }
            for (j = 0; j < 4; j++) { /* pair 4 L + j: lane L of r[j], r[4 + j], r[8 + j], r[12 + j] */
                const __m512i lo1 = _mm512_maskz_shuffle_i32x4(0xffff, r[j], r[4 + j], 0x44);
                const __m512i lo2 = _mm512_maskz_shuffle_i32x4(0xffff, r[8 + j], r[12 + j], 0x44);
                const __m512i hi1 = _mm512_maskz_shuffle_i32x4(0xffff, r[j], r[4 + j], 0xee);
                const __m512i hi2 = _mm512_maskz_shuffle_i32x4(0xffff, r[8 + j], r[12 + j], 0xee);
                a[j] = _mm512_maskz_shuffle_i32x4(0xffff, lo1, lo2, 0x88);
                a[4 + j] = _mm512_maskz_shuffle_i32x4(0xffff, lo1, lo2, 0xdd);
                a[8 + j] = _mm512_maskz_shuffle_i32x4(0xffff, hi1, hi2, 0x88);
                a[12 + j] = _mm512_maskz_shuffle_i32x4(0xffff, hi1, hi2, 0xdd);
            }
            for (i = 0; i < 16; i++) _mm512_storeu_si512((void *)(pb + ((size_t)(k / 2 + i) * SAM3__BNR + q0) * 2), a[i]);
        }
}
/* A whole panel of row-major f32 B (op(B) = B: activations, as in a 1x1 convolution): rows k and
   k + 1, 16 columns at a time, rounded and interleaved into pairs. */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__bgemm_pack_b_rows(const float *B, int ldb, int p0, int col0, int kc,
                                                                                             int kcp, uint16_t *pb) {
    int k, h;
    for (k = 0; k < kcp; k += 2)
        for (h = 0; h < 2; h++) {
            __m512i lo = _mm512_setzero_si512(), hi = lo;
            /* (maskz forms: g++ 12 warns inside the plain ones, -Wmaybe-uninitialized on _mm512_undefined) */
            if (k < kc)
                lo = _mm512_maskz_cvtepu16_epi32(0xffff, (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(B + (size_t)(p0 + k) * ldb + col0 + 16 * h)));
            if (k + 1 < kc)
                hi = _mm512_maskz_slli_epi32(
                    0xffff,
                    _mm512_maskz_cvtepu16_epi32(0xffff, (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(B + (size_t)(p0 + k + 1) * ldb + col0 + 16 * h))),
                    16);
            _mm512_storeu_si512((void *)(pb + (size_t)(k >> 1) * 2 * SAM3__BNR + 32 * h), _mm512_or_si512(lo, hi));
        }
}
#endif
static void sam3__bgemm_pack_b(int kern, int tb, const float *B, const uint16_t *Bh, int ldb, int p0, int j0, int kc, int kcp, int nc, int jp,
                               uint16_t *pb) {
    const int j = jp * SAM3__BNR, nr = SAM3__MIN(SAM3__BNR, nc - j);
    int k, q;
#if defined(SAM3__BF16_X86)
    if (!tb && !Bh && kern != SAM3__BK_REF && nr == SAM3__BNR) {
        sam3__bgemm_pack_b_rows(B, ldb, p0, j0 + j, kc, kcp, pb);
        return;
    }
    if (tb && kern != SAM3__BK_REF) {
        sam3__bgemm_pack_b_cols(Bh ? NULL : B, Bh, ldb, p0, j0 + j, nr, kc, kcp, pb);
        return;
    }
#else
    (void)kern;
#endif
    for (q = 0; q < SAM3__BNR; q++) {
        uint16_t *d = pb + 2 * q;
        if (q >= nr) {
            for (k = 0; k < kcp; k++) d[(size_t)(k >> 1) * 2 * SAM3__BNR + (k & 1)] = 0;
            continue;
        }
        if (tb && Bh) { /* a weight row (out, in): pairs copied as they are */
            const uint16_t *s = Bh + (size_t)(j0 + j + q) * ldb + p0;
            for (k = 0; k + 1 < kc; k += 2) {
                d[(size_t)(k >> 1) * 2 * SAM3__BNR] = s[k];
                d[(size_t)(k >> 1) * 2 * SAM3__BNR + 1] = s[k + 1];
            }
        } else {
            for (k = 0; k + 1 < kc; k += 2) {
                d[(size_t)(k >> 1) * 2 * SAM3__BNR] = sam3__bop(!tb, B, Bh, ldb, j0 + j + q, p0 + k);
                d[(size_t)(k >> 1) * 2 * SAM3__BNR + 1] = sam3__bop(!tb, B, Bh, ldb, j0 + j + q, p0 + k + 1);
            }
        }
        for (; k < kcp; k++) d[(size_t)(k >> 1) * 2 * SAM3__BNR + (k & 1)] = k < kc ? sam3__bop(!tb, B, Bh, ldb, j0 + j + q, p0 + k) : 0;
    }
}

/* The mr x nr corner of a BMR x BNR tile t (row stride BNR) into C: C = t + beta C on the first k
   block (beta 0: C not read), C += t after. */
static void sam3__bgemm_store(const float *t, float *C, int ldc, int mr, int nr, float beta, int first) {
    int r, q;
    for (r = 0; r < mr; r++) {
        float *c = C + (size_t)r * ldc;
        const float *s = t + (size_t)r * SAM3__BNR;
        if (!first)
            for (q = 0; q < nr; q++) c[q] += s[q];
        else if (beta == 0)
            for (q = 0; q < nr; q++) c[q] = s[q];
        else
            for (q = 0; q < nr; q++) c[q] = s[q] + beta * c[q];
    }
}

#if defined(SAM3__BF16_X86)
/* 8 rows x BNR of a tile from pa (rows of kcp bf16) and pb (kcp / 2, NR, 2): 16 accumulators, two
   B vectors and a broadcast A pair a k pair, vdpbf16ps adding both products of a pair. Its own
   function, the 16 sums in named registers: inside the whole tile's function GCC 12 kept one B
   vector on the stack (a store and a load every k pair). The sums go to C (C += on a later k block, C = sums + beta C on the first; beta 0: C not read). */
#define SAM3__BROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__btile8_avx512(int kcp, const uint16_t *pa, const uint16_t *pb,
                                                                                         float *C, int ldc, float beta, int first) {
    const uint16_t *b = pb;
    int k;
#define SAM3__BDECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
    SAM3__BROWS(SAM3__BDECL)
#undef SAM3__BDECL
    for (k = 0; k < kcp; k += 2, b += 2 * SAM3__BNR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)b), b1 = (__m512bh)_mm512_loadu_si512((const void *)(b + 32));
#define SAM3__BSTEP(r)                                                                                                                         \
    {                                                                                                                                          \
        uint32_t pair;                                                                                                                         \
        __m512bh av;                                                                                                                           \
        memcpy(&pair, pa + (size_t)(r) * kcp + k, sizeof(pair));                                                                               \
        av = (__m512bh)_mm512_set1_epi32((int)pair);                                                                                           \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, av, b0);                                                                                           \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, av, b1);                                                                                           \
    }
        SAM3__BROWS(SAM3__BSTEP)
#undef SAM3__BSTEP
    }
#define SAM3__BSTORE(r)                                                                                                                        \
    {                                                                                                                                          \
        float *c = C + (size_t)(r) * ldc;                                                                                                      \
        if (!first) {                                                                                                                          \
            c##r##0 = _mm512_add_ps(c##r##0, _mm512_loadu_ps(c));                                                                             \
            c##r##1 = _mm512_add_ps(c##r##1, _mm512_loadu_ps(c + 16));                                                                         \
        } else if (beta != 0) {                                                                                                                \
            c##r##0 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c), c##r##0);                                                     \
            c##r##1 = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(c + 16), c##r##1);                                                \
        }                                                                                                                                      \
        _mm512_storeu_ps(c, c##r##0);                                                                                                          \
        _mm512_storeu_ps(c + 16, c##r##1);                                                                                                     \
    }
    SAM3__BROWS(SAM3__BSTORE)
#undef SAM3__BSTORE
}
#undef SAM3__BROWS
/* BMR x BNR tile: a whole one straight into C, 8 rows at a time; a ragged one into t first. */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__btile_avx512(int kcp, const uint16_t *pa, const uint16_t *pb,
                                                                                        float *C, int ldc, int mr, int nr, float beta,
                                                                                        int first) {
    float t[SAM3__BMR * SAM3__BNR];
    const int full = mr == SAM3__BMR && nr == SAM3__BNR;
    int r0;
    /* C's rows lie a row of the output apart and were last touched one k block ago (the k blocks
       above keep that rare): fetched at the tile's start. */
    if (full && (!first || beta != 0))
        for (r0 = 0; r0 < SAM3__BMR; r0++) {
            _mm_prefetch((const char *)(C + (size_t)r0 * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(C + (size_t)r0 * ldc + 16), _MM_HINT_T0);
        }
    for (r0 = 0; r0 < mr; r0 += 8)
        if (full) sam3__btile8_avx512(kcp, pa + (size_t)r0 * kcp, pb, C + (size_t)r0 * ldc, ldc, beta, first);
        else sam3__btile8_avx512(kcp, pa + (size_t)r0 * kcp, pb, t + (size_t)r0 * SAM3__BNR, SAM3__BNR, 0.0f, 1);
    if (!full) sam3__bgemm_store(t, C, ldc, mr, nr, beta, first);
}
#endif

static void sam3__gelu_bias_row(float *x, int n, const float *b);
#if defined(SAM3__BF16_ARM)
/* 4 rows x 16 columns of a tile from pa (rows lda bf16 apart) and pb (the panel's (kcp / 2, BNR,
   2) pairs from this tile's first column on), kcp even: 16 accumulators of 4 columns, BFDOT adding
   both products of a k pair in each lane, an A row's four k pairs in one register taken by lane.
   The sums go to C as sam3__btile8_avx512's (C += on a later k block, C = sums + beta C on the
   first; beta 0: C not read). */
SAM3__KTARGET("arch=armv8.2-a+bf16") static void sam3__btile4_neon(int kcp, const uint16_t *pa, int lda, const uint16_t *pb, float *C,
                                                                  int ldc, float beta, int first) {
    float32x4_t acc[4][4]; /* (row, 4 columns) */
    int r, q, k;
    for (r = 0; r < 4; r++)
        for (q = 0; q < 4; q++) acc[r][q] = vdupq_n_f32(0.0f);
    for (k = 0; k + 8 <= kcp; k += 8) {
        bfloat16x8_t a[4];
        for (r = 0; r < 4; r++) a[r] = vreinterpretq_bf16_u16(vld1q_u16(pa + (size_t)r * lda + k));
#define SAM3__NSTEP(u)                                                                                                   \
    for (q = 0; q < 4; q++) {                                                                                            \
        const bfloat16x8_t b = vreinterpretq_bf16_u16(vld1q_u16(pb + (size_t)(k / 2 + (u)) * 2 * SAM3__BNR + 8 * q));     \
        for (r = 0; r < 4; r++) acc[r][q] = vbfdotq_laneq_f32(acc[r][q], b, a[r], (u));                                  \
    }
        SAM3__NSTEP(0)
        SAM3__NSTEP(1)
        SAM3__NSTEP(2)
        SAM3__NSTEP(3)
#undef SAM3__NSTEP
    }
    for (; k < kcp; k += 2) /* the last k pairs, one A pair broadcast */
        for (q = 0; q < 4; q++) {
            const bfloat16x8_t b = vreinterpretq_bf16_u16(vld1q_u16(pb + (size_t)(k / 2) * 2 * SAM3__BNR + 8 * q));
            for (r = 0; r < 4; r++) {
                uint32_t pair;
                memcpy(&pair, pa + (size_t)r * lda + k, sizeof(pair));
                acc[r][q] = vbfdotq_f32(acc[r][q], b, vreinterpretq_bf16_u32(vdupq_n_u32(pair)));
            }
        }
    for (r = 0; r < 4; r++)
        for (q = 0; q < 4; q++) {
            float *c = C + (size_t)r * ldc + 4 * q;
            float32x4_t v = acc[r][q];
            if (!first) v = vaddq_f32(v, vld1q_f32(c));
            else if (beta != 0) v = vfmaq_n_f32(v, vld1q_f32(c), beta);
            vst1q_f32(c, v);
        }
}
/* BMR x BNR tile: a whole one straight into C, 4 rows x 16 columns at a time; a ragged one into t
   first (its rows to mr rounded up to 4, from pa's zero rows; its columns to nr rounded up to 16). */
SAM3__KTARGET("arch=armv8.2-a+bf16") static void sam3__btile_neon(int kcp, const uint16_t *pa, const uint16_t *pb, float *C, int ldc,
                                                                 int mr, int nr, float beta, int first) {
    float t[SAM3__BMR * SAM3__BNR]; /* (BMR, BNR) */
    const int full = mr == SAM3__BMR && nr == SAM3__BNR;
    int r0, h;
    for (r0 = 0; r0 < mr; r0 += 4)
        for (h = 0; h < nr; h += 16) {
            if (full) sam3__btile4_neon(kcp, pa + (size_t)r0 * kcp, kcp, pb + 2 * h, C + (size_t)r0 * ldc + h, ldc, beta, first);
            else sam3__btile4_neon(kcp, pa + (size_t)r0 * kcp, kcp, pb + 2 * h, t + (size_t)r0 * SAM3__BNR + h, SAM3__BNR, 0.0f, 1);
        }
    if (!full) sam3__bgemm_store(t, C, ldc, mr, nr, beta, first);
}
#endif

#if defined(SAM3__BF16_AMX)
/* A tile's pending epilogue in the GELU product (sam3__gemm_bf16_gelu): rows r .. mr of its sums t
   (BMR, BNR) plus bias (nr, or NULL) through the GELU, rounded into ch (rows ldch apart; where cht,
   ch the tile's first A tile, SAM3__ATILE with ld ldch, zeros past nr). AMX runs
   it a row or so at a time between the next tile's products: the vector units' work then
   overlaps the tiles', where after the tile it would leave them idle. */
typedef struct sam3__bepi {
    float *t; /* NULL: none pending */
    uint16_t *ch;
    const float *bias;
    int ldch, cht, mr, nr, r;
} sam3__bepi;
static void sam3__bepi_rows(sam3__bepi *e, int upto) {
    if (!e || !e->t) return;
    for (; e->r < SAM3__MIN(upto, e->mr); e->r++) {
        float *row = e->t + (size_t)e->r * SAM3__BNR;
        sam3__gelu_bias_row(row, e->nr, e->bias);
        if (e->cht) {
            uint16_t *d = e->ch + SAM3__ATILE(e->r, 0, e->ldch);
            sam3__bf16_row_avx512(row, d, e->nr);
            if (e->nr < 32) memset(d + e->nr, 0, (size_t)(32 - e->nr) * sizeof(uint16_t));
        } else {
            sam3__bf16_row_avx512(row, e->ch + (size_t)e->r * e->ldch, e->nr);
        }
    }
}
/* The tile configuration: palette 1, eight tiles of 16 rows x 64 bytes. */
typedef struct sam3__amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} sam3__amx_cfg;
SAM3__KTARGET("amx-tile") static void sam3__amx_begin(void) {
    sam3__amx_cfg cfg;
    int i;
    memset(&cfg, 0, sizeof(cfg));
    cfg.palette = 1;
    for (i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
    _tile_loadconfig(&cfg);
}
SAM3__KTARGET("amx-tile") static void sam3__amx_end(void) { _tile_release(); }
/* BMR x BNR tile: C tiles 0..3 (rows 0-15 / 16-31 x columns 0-15 / 16-31), A tiles 4, 5 (16
   rows x 32 k), B tiles 6, 7 (16 k pairs x 16 columns), 32 k a step. A whole tile sums in the
   tile registers straight onto C (loaded on a later k block or with beta 1, zeroed with beta 0)
   and is stored once; a ragged one, or another beta, goes through t. epi (or NULL): another
   tile's epilogue, run a part after each step. pn (or NULL): pnl cache lines a step from there
   fetched into L2. ats: 0, A's rows kcp apart; else A as tiles (SAM3__ATILE), their 16-row tile
   rows ats apart. */
SAM3__KTARGET("amx-tile,amx-bf16") static void sam3__btile_amx(int kcp, const uint16_t *pa, size_t ats, const uint16_t *pb,
                                                                          float *C, int ldc, int mr, int nr, float beta, int first,
                                                                          sam3__bepi *epi, const char *pn, int pnl) {
    float t[SAM3__BMR * SAM3__BNR];
    const int direct = mr == SAM3__BMR && nr == SAM3__BNR && (!first || beta == 0 || beta == 1);
    const long ldb = (long)ldc * 4;                   /* bytes */
    const long alda = ats ? 64 : (long)kcp * 2;     /* bytes from an A tile's row to the next */
    const size_t astep = ats ? 512 : 32, ah = ats ? ats : (size_t)16 * kcp; /* to the next k step's A tile; to rows 16-31 */
    int k;
    if (direct && (!first || beta == 1)) {
        _tile_loadd(0, C, ldb);
        _tile_loadd(1, C + 16, ldb);
        _tile_loadd(2, C + (size_t)16 * ldc, ldb);
        _tile_loadd(3, C + (size_t)16 * ldc + 16, ldb);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    /* each load just before the first product that reads it: a product waits only for its own
       operands, and the tiles are not renamed, so the next step's loads wait for the products
       reading the tiles they overwrite */
    for (k = 0; k < kcp; k += 32, pa += astep) {
#if SAM3__AMX_PFB > 0
        /* the B step SAM3__AMX_PFB ahead into L1: the attention reads a key panel once a tile
           and a product's 1024-k panel (64 KB) outgrows L1, so B's tile loads, which the products
           wait for, would come from L2 or L3 (prefetches never fault: past the end is harmless) */
        {
            const char *f = (const char *)(pb + (size_t)(k + 32 * SAM3__AMX_PFB) * SAM3__BNR);
            int l;
            for (l = 0; l < 32 * SAM3__BNR * 2; l += 64) _mm_prefetch(f + l, _MM_HINT_T0);
        }
#endif
        if (pn) {
            int l;
            for (l = 0; l < pnl; l++) _mm_prefetch(pn + (size_t)((k / 32) * pnl + l) * 64, _MM_HINT_T1);
        }
        _tile_loadd(4, pa, alda);
        _tile_loadd(6, pb + (size_t)k * SAM3__BNR, SAM3__BNR * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, pb + (size_t)k * SAM3__BNR + 32, SAM3__BNR * 4);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, pa + ah, alda);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        if (epi) sam3__bepi_rows(epi, (int)(((long)k + 32) * SAM3__BMR / kcp));
    }
    if (epi) sam3__bepi_rows(epi, SAM3__BMR);
    if (direct) {
        _tile_stored(0, C, ldb);
        _tile_stored(1, C + 16, ldb);
        _tile_stored(2, C + (size_t)16 * ldc, ldb);
        _tile_stored(3, C + (size_t)16 * ldc + 16, ldb);
        return;
    }
    _tile_stored(0, t, SAM3__BNR * 4);
    _tile_stored(1, t + 16, SAM3__BNR * 4);
    _tile_stored(2, t + 16 * SAM3__BNR, SAM3__BNR * 4);
    _tile_stored(3, t + 16 * SAM3__BNR + 16, SAM3__BNR * 4);
    sam3__bgemm_store(t, C, ldc, mr, nr, beta, first);
}
#endif

/* One task of sam3__bgemm_blocks: rows i0 .. i0 + mc (their A block packed at pa) times the panels
   j0 .. j1 of the B block at column jc (nc columns, packed at pb), k block pc (kcp k). */
static void sam3__bgemm_task(int kern, const sam3__gemm_args *g, const uint16_t *pa, const uint16_t *pb, int i0, int mc, int j0, int j1,
                             int jc, int nc, int pc, int kcp) {
    const int ldc = g->ldc;
    const float beta = g->beta;
    float *C = g->c;
    const size_t ats = g->at ? g->ldat : (size_t)16 * kcp; /* from A's rows ip to ip + 16 (AMX: a tile row) */
    int jp, ip;
    (void)kern; /* only AMX tells kernels apart here */
#if defined(SAM3__BF16_AMX)
    float tb[2 * SAM3__BMR * SAM3__BNR]; /* (2, BMR, BNR): a tile's sums while the last one's epilogue runs */
    sam3__bepi epi;
    int flip = 0;
    memset(&epi, 0, sizeof(epi));
#endif
    for (jp = j0; jp < j1; jp++) {
        const int nr = SAM3__MIN(SAM3__BNR, nc - jp * SAM3__BNR);
        for (ip = 0; ip < mc; ip += SAM3__BMR) {
            const uint16_t *a = pa + (size_t)ip / 16 * ats, *b = pb + (size_t)jp * SAM3__BNR * kcp;
#if defined(SAM3__BF16_AMX)
            /* the next panel (BNR kcp bf16) into L2 while this one's ntl tiles run: each tile its
               share, pnl lines a k step */
            const int ntl = (mc + SAM3__BMR - 1) / SAM3__BMR, steps = ntl * (kcp / 32);
            const int pnl = SAM3__AMX_PFN && jp + 1 < j1 && steps > 0 ? (SAM3__BNR * kcp * 2 / 64 + steps - 1) / steps : 0;
            const char *pn = pnl ? (const char *)(b + (size_t)SAM3__BNR * kcp) + (size_t)(ip / SAM3__BMR) * pnl * (kcp / 32) * 64 : NULL;
#endif
            float *cc = C + (size_t)(i0 + ip) * ldc + jc + jp * SAM3__BNR;
            const int mr = SAM3__MIN(SAM3__BMR, mc - ip);
            if (g->ch) {
                /* the whole tile (A rows and B columns past mr, nr are zeros) into t: the f32
                   product never goes through memory */
                float t[SAM3__BMR * SAM3__BNR]; /* (BMR, BNR) */
                const int col = jc + jp * SAM3__BNR;
                int r;
#if defined(SAM3__BF16_AMX)
                if (kern == SAM3__BK_AMX) { /* this tile's epilogue runs inside the next tile's products */
                    float *tt = tb + (size_t)flip * SAM3__BMR * SAM3__BNR;
                    sam3__btile_amx(kcp, a, ats, b, tt, SAM3__BNR, SAM3__BMR, SAM3__BNR, 0.0f, 1, &epi, pn, pnl);
                    epi.t = tt, epi.bias = g->bias ? g->bias + col : NULL;
                    epi.ch = g->ch + (g->cht ? SAM3__ATILE(i0 + ip, col, g->ldch) : (size_t)(i0 + ip) * g->ldch + col);
                    epi.ldch = g->ldch, epi.cht = g->cht, epi.mr = mr, epi.nr = nr, epi.r = 0;
                    flip ^= 1;
                    continue;
                }
#endif
#if defined(SAM3__BF16_VEC)
                SAM3__BTILE_VEC(kcp, a, b, t, SAM3__BNR, SAM3__BMR, SAM3__BNR, 0.0f, 1);
                for (r = 0; r < mr; r++) {
                    sam3__gelu_bias_row(t + (size_t)r * SAM3__BNR, nr, g->bias ? g->bias + col : NULL);
                    SAM3__BF16_ROW(t + (size_t)r * SAM3__BNR, g->ch + (size_t)(i0 + ip + r) * g->ldch + col, nr);
                }
#else
                (void)t, (void)col, (void)r; /* not reached */
#endif
                continue;
            }
#if defined(SAM3__BF16_AMX)
            if (kern == SAM3__BK_AMX) {
                /* the next tile's C (rows a whole output row apart, out of cache since the last k
                   block) fetched while this one runs */
                const int down = ip + SAM3__BMR < mc;
                const int nrow = down ? SAM3__MIN(SAM3__BMR, mc - ip - SAM3__BMR) : jp + 1 < j1 ? SAM3__MIN(SAM3__BMR, mc) : 0;
                const float *cn = down ? cc + (size_t)SAM3__BMR * ldc : C + (size_t)i0 * ldc + jc + (jp + 1) * SAM3__BNR;
                int r;
                for (r = 0; r < nrow; r++) {
                    _mm_prefetch((const char *)(cn + (size_t)r * ldc), _MM_HINT_T0);
                    _mm_prefetch((const char *)(cn + (size_t)r * ldc + 16), _MM_HINT_T0);
                }
                sam3__btile_amx(kcp, a, ats, b, cc, ldc, mr, nr, beta, pc == 0, NULL, pn, pnl);
                continue;
            }
#endif
#if defined(SAM3__BF16_VEC)
            SAM3__BTILE_VEC(kcp, a, b, cc, ldc, mr, nr, beta, pc == 0);
#else
            (void)a, (void)b, (void)cc, (void)mr, (void)nr, (void)beta, (void)kern, (void)pc, (void)sam3__bgemm_store; /* not reached */
#endif
        }
    }
#if defined(SAM3__BF16_AMX)
    sam3__bepi_rows(&epi, SAM3__BMR);
#endif
}

/* Each k block's packing and its tiles in one loop, so one join a k block, not two: where the
   compiler has atomics and the threads are OpenMP's, a task packs or waits for just the A block and
   B panels it reads. Item x of the k block numbered gen (from 1) is free below 2 gen - 1, claimed
   at 2 gen - 1 (being packed by a running thread, which waits for nothing), packed at 2 gen; a task
   packs what is still free itself, so no order of handing out items can leave it waiting on one
   that no thread holds. Values only grow, so nothing is reset between k blocks. */
#if defined(_OPENMP) && defined(__GNUC__)
#define SAM3__BG_FLAGS 1
static int sam3__bg_claim(int *f, int gen) {
    int v = __atomic_load_n(f, __ATOMIC_ACQUIRE);
    while (v < 2 * gen - 1)
        if (__atomic_compare_exchange_n(f, &v, 2 * gen - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 1;
    return 0;
}
static void sam3__bg_wait(int *f, int gen) {
    while (__atomic_load_n(f, __ATOMIC_ACQUIRE) != 2 * gen) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}
#endif
/* One k block of sam3__bgemm_blocks, as its items see it: columns jc .. jc + nc of B (npan
   panels), k pc .. pc + kc (kcp rounded up), nmb A blocks of mcb rows, each in ngrp tasks; the
   items' states and this block's generation (SAM3__BG_FLAGS); the thread's profile or NULL. */
typedef struct sam3__bkb {
    int jc, nc, npan, pc, kc, kcp, nmb, mcb, ngrp, gen;
    int gmaj; /* tasks numbered group by group (an A block's tasks ngrp apart), else A block by A block */
    int *flags;
    double *pf;
} sam3__bkb;
/* Item it of a k block's packing (A block it where it < nmb, else B panel it - nmb), packed here
   unless another thread has claimed it (SAM3__BG_FLAGS), then waited for where wait is set. */
static void sam3__bgemm_pack_item(int kern, const sam3__gemm_args *g, uint16_t *pb, uint16_t *pa_all, const sam3__bkb *kb, int it, int wait) {
    const int nmb = kb->nmb, mcb = kb->mcb, pc = kb->pc, kc = kb->kc, kcp = kb->kcp;
    SAM3__PROF_T(tp);
#if defined(SAM3__BG_FLAGS)
    if (!sam3__bg_claim(kb->flags + it, kb->gen)) {
        if (wait) sam3__bg_wait(kb->flags + it, kb->gen);
        return;
    }
#else
    (void)wait; /* the packing's own loop has packed every item before any task runs */
#endif
    if (it < nmb) {
        if (!g->at) /* else A's tiles are read where they are */
            sam3__bgemm_pack_a(kern, g->ta, g->a, g->ah, g->lda, it * mcb, pc, SAM3__MIN(mcb, g->m - it * mcb), kc, kcp,
                               pa_all + (size_t)it * mcb * kcp, kern == SAM3__BK_AMX);
    }
    else if (g->bpack)
        g->bpack(g->bpack_arg, pc, kc, kcp, kb->jc + (it - nmb) * SAM3__BNR, SAM3__MIN(SAM3__BNR, kb->nc - (it - nmb) * SAM3__BNR),
                 pb + (size_t)(it - nmb) * SAM3__BNR * kcp);
    else
        sam3__bgemm_pack_b(kern, g->tb, g->b, g->bh, g->ldb, pc, kb->jc, kc, kcp, kb->nc, it - nmb, pb + (size_t)(it - nmb) * SAM3__BNR * kcp);
#if defined(SAM3__BG_FLAGS)
    __atomic_store_n(kb->flags + it, 2 * kb->gen, __ATOMIC_RELEASE);
#endif
#if defined(SAM3_PROFILE)
    if (kb->pf) SAM3__PROF_ADD(kb->pf[it < nmb ? SAM3__PT_PACKA : SAM3__PT_PACKB], tp);
#endif
}
/* Task task of a k block: its A block's rows times panels j0 .. j1 of its B block, once those are
   packed (by this thread if no other has claimed them). */
static void sam3__bgemm_task_item(int kern, const sam3__gemm_args *g, uint16_t *pb, uint16_t *pa_all, const sam3__bkb *kb, int task) {
    const int ib = kb->gmaj ? task % kb->nmb : task / kb->ngrp, gi = kb->gmaj ? task / kb->nmb : task % kb->ngrp;
    const int i0 = ib * kb->mcb, mc = SAM3__MIN(kb->mcb, g->m - i0);
    const int j0 = (int)((long long)kb->npan * gi / kb->ngrp), j1 = (int)((long long)kb->npan * (gi + 1) / kb->ngrp);
#if defined(SAM3__BG_FLAGS)
    int x;
    for (x = -1; x < j1 - j0; x++) sam3__bgemm_pack_item(kern, g, pb, pa_all, kb, x < 0 ? ib : kb->nmb + j0 + x, 1); /* A block, B panels */
#endif
    {
        const uint16_t *pa = g->at ? g->at + SAM3__ATILE(i0, kb->pc, g->ldat) : pa_all + (size_t)ib * kb->mcb * kb->kcp;
        SAM3__PROF_T(tt);
        sam3__bgemm_task(kern, g, pa, pb, i0, mc, j0, j1, kb->jc, kb->nc, kb->pc, kb->kcp);
#if defined(SAM3_PROFILE)
        if (kb->pf) SAM3__PROF_ADD(kb->pf[SAM3__PT_TILES], tt);
#endif
    }
}
/* Runs on every thread of the caller's team (or alone), as sam3__gemm_blocks: pb holds a B block's
   panels, pa_all all of op(A)'s blocks of a k block (ceil(M / MC), MC, kcp), flags (ceil(M / MC) +
   B block's panels, zero at the first call) the items' states (SAM3__BG_FLAGS). With g->ch (one k
   block only): ch = bf16(GELU(C + bias)), each tile's sums kept on the stack and C not written. */
static void sam3__bgemm_blocks(int kern, const sam3__gemm_args *g, uint16_t *pb, uint16_t *pa_all, int *flags, int ngrp) {
    const int M = g->m, N = g->n, K = g->k;
    const int kcb = sam3__bgemm_kstep(kern, K), mcb = sam3__bgemm_mcb(kern);
    const int ncb = sam3__bgemm_ncb(kern, (SAM3__MIN(kcb, K > 0 ? K : 1) + 31) / 32 * 32);
    sam3__bkb kb;
#if defined(SAM3_PROFILE)
    const double tg0 = sam3__prof_now();
#endif
    memset(&kb, 0, sizeof(kb));
    kb.mcb = mcb, kb.ngrp = ngrp, kb.flags = flags, kb.nmb = (M + mcb - 1) / mcb;
    kb.gmaj = SAM3__BGRP_BYTES > 0 && kern == SAM3__BK_AMX;
#if defined(SAM3_PROFILE)
#ifdef _OPENMP
    if (g->prof && omp_get_thread_num() < SAM3__PROF_THR) kb.pf = g->prof[omp_get_thread_num()];
#else
    if (g->prof) kb.pf = g->prof[0];
#endif
#endif
#if defined(SAM3__BF16_AMX)
    if (kern == SAM3__BK_AMX) sam3__amx_begin();
#endif
    for (kb.jc = 0; kb.jc < N; kb.jc += ncb) {
        kb.nc = SAM3__MIN(ncb, N - kb.jc), kb.npan = (kb.nc + SAM3__BNR - 1) / SAM3__BNR;
        for (kb.pc = 0; kb.pc < K || kb.pc == 0; kb.pc += kcb) {
            const int npk = kb.nmb + kb.npan, ntask = kb.nmb * ngrp;
            int it;
            kb.kc = SAM3__MIN(kcb, K - kb.pc), kb.kcp = (kb.kc + 31) / 32 * 32, kb.gen++;
            /* the packing first, in dynamic chunks (a thread descheduled mid-pack holds back one
               block, not half); then the tasks share the packed blocks, so that a task can be a
               small part of an A block's columns */
#if defined(SAM3__BG_FLAGS)
            SAM3__OMP(for schedule(dynamic, 1))
            for (it = 0; it < npk + ntask; it++) {
                if (it < npk) sam3__bgemm_pack_item(kern, g, pb, pa_all, &kb, it, 0);
                else sam3__bgemm_task_item(kern, g, pb, pa_all, &kb, it - npk);
            }
#else
            SAM3__OMP(for schedule(dynamic, 1))
            for (it = 0; it < npk; it++) sam3__bgemm_pack_item(kern, g, pb, pa_all, &kb, it, 0);
            SAM3__OMP(for schedule(dynamic, 1))
            for (it = 0; it < ntask; it++) sam3__bgemm_task_item(kern, g, pb, pa_all, &kb, it);
#endif
            if (K == 0) break;
        }
    }
#if defined(SAM3__BF16_AMX)
    if (kern == SAM3__BK_AMX) sam3__amx_end();
#endif
#if defined(SAM3_PROFILE)
    if (kb.pf) SAM3__PROF_ADD(kb.pf[SAM3__PT_GTOTAL], tg0);
#endif
}

static void sam3__gemm(sam3_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc);

/* n values of X from element off, X f32 (x) or bf16 (xh), rounded to bf16 and widened back into d
   (sam3__f32_bf16's rounding, NaN to the quiet NaN); plain loops the compiler vectorises. */
static void sam3__bf16_round_run(const float *x, const uint16_t *xh, size_t off, int n, float *d) {
    int k;
    if (xh)
        for (k = 0; k < n; k++) {
            const uint32_t u = (uint32_t)xh[off + k] << 16;
            memcpy(d + k, &u, sizeof(u));
        }
    else
        for (k = 0; k < n; k++) {
            uint32_t u;
            memcpy(&u, x + off + k, sizeof(u));
            u = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
            memcpy(d + k, &u, sizeof(u));
        }
}
/* rows r0..r1 of X (rows of n values, ld apart) through sam3__bf16_round_run into d (n apart) */
static void sam3__bf16_round_rows(sam3_ctx *c, const float *x, const uint16_t *xh, int ld, int r0, int r1, int n, float *d) {
    int r;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 16) if((double)(r1 - r0) * n >= SAM3__PAR_MIN))
    for (r = r0; r < r1; r++) sam3__bf16_round_run(x, xh, (size_t)r * ld, n, d + (size_t)(r - r0) * n);
}
/* The reference, and the bf16 path of CPUs without bf16 products: A and B rounded to bf16 and
   widened to f32 as they lie in memory (B whole; A whole where transposed, else in blocks of rows of
   up to SAM3__BREF_BYTES), then the f32 product of each block (sam3__gemm). Few blocks, so that
   the products' tiles are the f32 path's: more and smaller BLAS calls pack their panels more
   often. Returns 0 when its buffers cannot be had. */
#define SAM3__BREF_BYTES ((size_t)64 << 20)
static int sam3__bgemm_ref(sam3_ctx *c, const sam3__gemm_args *g) {
    const int ta = g->ta, tb = g->tb, M = g->m, N = g->n, K = g->k, lda = g->lda, kk = K > 0 ? K : 1;
    const int mbmax = ta ? M : (int)SAM3__MAX(1, SAM3__MIN((size_t)M, SAM3__BREF_BYTES / ((size_t)kk * sizeof(float))));
    const int lb = tb ? kk : N, la = ta ? M : kk; /* the widened copies' leading dimensions */
    sam3__kbuf kb;
    float *b = (float *)sam3__kbuf_get(c, ((size_t)N + mbmax) * kk * sizeof(float), &kb), *a; /* b as op(B) lies (N K floats), a (mbmax K) */
    int i0;
    if (!b) return 0;
    a = b + (size_t)N * kk;
    sam3__bf16_round_rows(c, g->b, g->bh, g->ldb, 0, tb ? N : K, tb ? K : N, b);
    if (ta) sam3__bf16_round_rows(c, g->a, g->ah, lda, 0, K, M, a);
    for (i0 = 0; i0 < M; i0 += mbmax) {
        const int mb = SAM3__MIN(mbmax, M - i0);
        if (!ta) sam3__bf16_round_rows(c, g->a, g->ah, lda, i0, i0 + mb, K, a);
        sam3__gemm(c, ta, tb, mb, N, K, 1.0f, a, la, b, lb, g->beta, g->c + (size_t)i0 * g->ldc, g->ldc);
    }
    sam3__kbuf_put(c, &kb);
    return 1;
}

#if defined(SAM3__BF16_X86)
/* A few rows times a weight, C (M, N) = A (M, K) B^T + beta C with B (N, K) f32 or bf16, no
   packing of B: the rows of A rounded to bf16 once (a, (M, kp)), then 4 rows of B at a time, in
   L1 while every row of A passes over them, 4 x 4 sums of 32-wide vdpbf16ps reduced at the end.
   For the text encoder's 32 tokens, the prompt's and the tracker's few: packing the whole weight
   for them would cost as much as the product. One call: B's rows j0 .. j0 + nb of N. */
#ifndef SAM3__BSMALL_PFD
#define SAM3__BSMALL_PFD 4 /* rows ahead that sam3__bgemm_small_cols fetches (0: none) */
#endif
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__bgemm_small_cols(int M, int K, int kp, const uint16_t *a,
                                                                                            const float *B, const uint16_t *Bh, int ldb,
                                                                                            int j0, int nb, int N, float beta, float *C, int ldc) {
    int m0, q, k, r;
    const float *w[4];
    const uint16_t *wh[4];
    /* the 4 rows SAM3__BSMALL_PFD ahead (where B has them) fetched as these stream: a weight row
       of a few-token product is read once, 2-8 KB, too short for the hardware prefetchers to run
       ahead of it, and one core's own misses are too few to reach the memory's rate */
    const size_t pfs = Bh ? sizeof(uint16_t) : sizeof(float); /* bytes a value */
    const char *pf = SAM3__BSMALL_PFD > 0 && j0 + SAM3__BSMALL_PFD + 4 <= N
                         ? (const char *)(Bh ? (const void *)Bh : (const void *)B) + (size_t)(j0 + SAM3__BSMALL_PFD) * ldb * pfs
                         : NULL;
    for (q = 0; q < 4; q++) { /* past nb: the last row again, not stored */
        const size_t o = (size_t)(j0 + SAM3__MIN(q, nb - 1)) * ldb;
        w[q] = B ? B + o : NULL;
        wh[q] = Bh ? Bh + o : NULL;
    }
    for (m0 = 0; m0 < M; m0 += 4) {
        const int mr = SAM3__MIN(4, M - m0);
        __m512 acc[4][4];
        for (r = 0; r < 4; r++)
            for (q = 0; q < 4; q++) acc[r][q] = _mm512_setzero_ps();
        for (k = 0; k < K; k += 32) {
            __m512bh bv[4];
            if (m0 == 0 && pf)
                for (q = 0; q < 4; q++) {
                    const char *l = pf + ((size_t)q * ldb + (size_t)k) * pfs; /* 32 values: a line, two in f32 */
                    _mm_prefetch(l, _MM_HINT_T0);
                    if (pfs == sizeof(float) && k + 16 < K) _mm_prefetch(l + 64, _MM_HINT_T0);
                }
            for (q = 0; q < 4; q++) bv[q] = sam3__bf16_load32(w[q], wh[q], k, K);
            for (r = 0; r < 4; r++) {
                const __m512bh av = (__m512bh)_mm512_loadu_si512((const void *)(a + (size_t)(m0 + SAM3__MIN(r, mr - 1)) * kp + k));
                for (q = 0; q < 4; q++) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], av, bv[q]);
            }
        }
        for (r = 0; r < mr; r++)
            for (q = 0; q < nb; q++) {
                float *cc = C + (size_t)(m0 + r) * ldc + j0 + q, t[16], s = 0;
                int u;
                _mm512_storeu_ps(t, acc[r][q]); /* not _mm512_reduce_add_ps: g++ 12 warns inside it (-Wmaybe-uninitialized) */
                for (u = 0; u < 16; u++) s += t[u];
                *cc = beta == 0 ? s : s + beta * *cc;
            }
    }
}
#endif
#define SAM3__BSMALL_M 48 /* rows up to which sam3__bgemm_small_cols takes a product */
/* Returns 0 where it does not apply (A transposed, B not, too many rows, no AVX512-BF16). */
static int sam3__bgemm_small(sam3_ctx *c, int kern, const sam3__gemm_args *g) {
#if defined(SAM3__BF16_X86)
    const int M = g->m, N = g->n, K = g->k, kp = (K + 31) / 32 * 32;
    sam3__kbuf kb;
    uint16_t *a;
    int i, jq;
    if (kern == SAM3__BK_REF || g->ta || !g->tb || M > SAM3__BSMALL_M || K < 1) return 0;
    if (!(a = (uint16_t *)sam3__kbuf_get(c, (size_t)M * kp * sizeof(uint16_t), &kb))) return 0;
    for (i = 0; i < M; i++) {
        uint16_t *d = a + (size_t)i * kp;
        int k;
        if (g->ah) memcpy(d, g->ah + (size_t)i * g->lda, (size_t)K * sizeof(uint16_t));
        else sam3__bf16_row_avx512(g->a + (size_t)i * g->lda, d, K);
        for (k = K; k < kp; k++) d[k] = 0;
    }
    (void)c; /* only in OpenMP clauses */
    /* in dynamic chunks: a thread slowed by other work beside it leaves its share to the others */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 4) if((double)M * N * K > 2e5 && !omp_in_parallel()))
    for (jq = 0; jq < (N + 3) / 4; jq++)
        sam3__bgemm_small_cols(M, K, kp, a, g->bh ? NULL : g->b, g->bh, g->ldb, 4 * jq, SAM3__MIN(4, N - 4 * jq), N, g->beta, g->c, g->ldc);
    sam3__kbuf_put(c, &kb);
    return 1;
#else
    (void)c, (void)kern, (void)g;
    return 0;
#endif
}

/* The kernel a bf16 product runs with where kern is asked for: what this build has. */
static int sam3__bgemm_kern(int kern) {
#if !defined(SAM3__BF16_VEC)
    kern = SAM3__BK_REF;
#endif
#if !defined(SAM3__BF16_AMX)
    if (kern == SAM3__BK_AMX) kern = SAM3__BK_AVX512;
#endif
    return kern;
}
#define SAM3__BPAR_MIN 1e6 /* multiply-adds from which a blocked bf16 product uses all threads */
#ifndef SAM3__BPA_BYTES
#define SAM3__BPA_BYTES ((size_t)16 << 20) /* packed A blocks a pass at most (sam3__bgemm_run) */
#endif
/* The blocked product on the caller's threads, kernel kern (not the reference), with the
   epilogue of sam3__bgemm_blocks where g->ch is given. Returns 0 when its buffers cannot be had. */
static int sam3__bgemm_run(sam3_ctx *c, int kern, const sam3__gemm_args *g) {
    const int M = g->m, N = g->n, K = g->k, mcb = sam3__bgemm_mcb(kern);
    const int kcp = (SAM3__MIN(sam3__bgemm_kstep(kern, K), K > 0 ? K : 1) + 31) / 32 * 32;
    const int ncp = (SAM3__MIN(sam3__bgemm_ncb(kern, kcp), N) + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR;
    /* rows a pass: every A block of a k block is packed before the tiles run, up to
       SAM3__BPA_BYTES of them; more rows take more passes, each packing B again */
    const int mrows = SAM3__MIN(M, SAM3__MAX(1, (int)(SAM3__BPA_BYTES / ((size_t)kcp * sizeof(uint16_t)) / (size_t)mcb)) * mcb);
    const int nmb = (mrows + mcb - 1) / mcb, amb = g->at ? 0 : nmb; /* A blocks packed (none where A comes as tiles) */
    int nt = c->nt, ngrp = 1, i0;
    sam3__kbuf kb;
    uint16_t *pb, *pa;
    int *flags;
#ifdef _OPENMP
    if (omp_in_parallel()) nt = 1;
#else
    nt = 1;
#endif
    /* a product of a few thousand multiply-adds (a head's slice of a weight times a prompt's
       few tokens, ~100 of them in a prompt) costs less on one thread than waking the others */
    if (nt < 1 || (double)M * N * K < SAM3__BPAR_MIN) nt = 1;
    /* at least 8 tasks a thread (each A block's columns in ngrp groups of 4+ panels), so that
       the last round's tasks are short and a thread slowed by other work beside it leaves the
       rest to the others */
    while (nmb * ngrp < SAM3__MAX(8 * nt, 16) && 8 * ngrp * SAM3__BNR <= ncp) ngrp *= 2;
    /* AMX: a task's panels within SAM3__BGRP_BYTES, and the tasks taken group by group
       (sam3__bgemm_blocks), so that a thread's next task finds them in its L2 and reads only an A
       block anew, where a task of a whole wide B block would stream all of it from L3 for one A
       block */
    if (SAM3__BGRP_BYTES > 0 && kern == SAM3__BK_AMX)
        while (ngrp < ncp / SAM3__BNR &&
               (size_t)((ncp / SAM3__BNR + ngrp - 1) / ngrp) * SAM3__BNR * kcp * sizeof(uint16_t) > (size_t)SAM3__BGRP_BYTES)
            ngrp++;
    /* the flags (ints) after the A blocks: kcp is a multiple of 32, so they are aligned */
    pb = (uint16_t *)sam3__kbuf_get(c, ((size_t)kcp * ncp + (size_t)amb * mcb * kcp) * sizeof(uint16_t) + (size_t)(nmb + ncp / SAM3__BNR) * sizeof(int), &kb);
    if (!pb) return 0;
    pa = pb + (size_t)kcp * ncp; /* (amb, mcb, kcp): the pass's A blocks */
    flags = (int *)(void *)(pa + (size_t)amb * mcb * kcp); /* (nmb + ncp / BNR): the packing's states */
    for (i0 = 0; i0 < M; i0 += mrows) {
        sam3__gemm_args p = *g;
        const size_t ao = g->ta ? (size_t)i0 : (size_t)i0 * g->lda; /* row i0 of op(A) */
        p.m = SAM3__MIN(mrows, M - i0);
        if (p.a) p.a += ao;
        if (p.ah) p.ah += ao;
        if (p.c) p.c += (size_t)i0 * p.ldc;
        if (p.ch) p.ch += p.cht ? SAM3__ATILE(i0, 0, p.ldch) : (size_t)i0 * p.ldch; /* i0: a multiple of mcb, of 16 */
        if (p.at) p.at += SAM3__ATILE(i0, 0, p.ldat);
#if defined(SAM3_PROFILE)
        p.prof = c->prof_thr;
#endif
        memset(flags, 0, (size_t)(nmb + ncp / SAM3__BNR) * sizeof(int));
        SAM3__OMP(parallel num_threads(nt))
        sam3__bgemm_blocks(kern, &p, pb, pa, flags, ngrp);
    }
    sam3__kbuf_put(c, &kb);
    return 1;
}

/* g's product in bf16 with f32 sums (alpha 1; g->ch not used), with kernel kern (SAM3__BK_*).
   Counted here where the bf16 kernels run it; sam3__bgemm_ref's f32 products count themselves. */
static void sam3__gemm_bf16(sam3_ctx *c, int kern, const sam3__gemm_args *g) {
    sam3__gemm_args p = *g;
    if (g->m <= 0 || g->n <= 0) return;
    kern = sam3__bgemm_kern(kern);
    p.bias = NULL, p.ch = NULL, p.ldch = 0;
    if (sam3__bgemm_small(c, kern, &p) || (kern != SAM3__BK_REF && sam3__bgemm_run(c, kern, &p))) {
        sam3__count(c, 2.0 * p.m * p.n * p.k);
        return;
    }
    if (!sam3__bgemm_ref(c, &p)) {
        /* no memory for any buffer: unblocked, slow, but the same products */
        int i, j, k;
        sam3__count(c, 2.0 * p.m * p.n * p.k);
        for (i = 0; i < p.m; i++)
            for (j = 0; j < p.n; j++) {
                float acc = 0, *cij = p.c + (size_t)i * p.ldc + j;
                for (k = 0; k < p.k; k++)
                    acc += sam3__bf16_f32(sam3__bop(p.ta, p.a, p.ah, p.lda, i, k)) * sam3__bf16_f32(sam3__bop(!p.tb, p.b, p.bh, p.ldb, j, k));
                *cij = acc + (p.beta == 0 ? 0.0f : p.beta * *cij);
            }
    }
}

/* Ch (M, N; rows ldch apart) = bf16(GELU(A W^T + b)), W (N, K) as nn.Linear keeps it (f32 W or
   bf16 Wh): a Linear, its bias and the exact GELU, rounded to bf16 as the next product rounds its
   input. For the ViT's fc1, whose f32 output (98 MB at full size) was otherwise written, read and
   written again by the GELU, and read by fc2's packing. The same values as sam3__gemm_bf16, then
   sam3__gelu_bias, then the rounding (where rows are whole vectors: the GELU's vector and scalar
   forms may differ in the last bit). Returns 0, having done nothing, where it does not apply (no
   bf16 kernel in this build or CPU, K past one k block, rows few enough for the small-product
   path) or its buffers cannot be had. With ldt > 0 (at least 16 N rounded up to 32, and Ch
   room for M rounded up to 32 rows of tiles), where AMX runs it, Ch is written as A tiles instead
   (SAM3__ATILE, tile rows ldt apart, zeros past N and M) for sam3__gemm_bf16_at: it returns 2. */
static int sam3__gemm_bf16_gelu(sam3_ctx *c, int M, int N, int K, const float *A, int lda, const float *W, const uint16_t *Wh, int ldw,
                                const float *b, uint16_t *Ch, int ldch, size_t ldt) {
    const int kern = sam3__bgemm_kern(c->bk);
#if !defined(SAM3__BF16_VEC)
    (void)sam3__gelu_bias_row; /* the tiles' epilogue's (there are no bf16 tiles here) */
#endif
    sam3__gemm_args g;
    if (kern == SAM3__BK_REF || M <= SAM3__BSMALL_M || N <= 0 || K < 1 || K > sam3__bgemm_kstep(kern, K)) return 0;
    memset(&g, 0, sizeof(g));
    g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.a = A, g.lda = lda, g.b = W, g.bh = Wh, g.ldb = ldw;
    g.bias = b, g.ch = Ch, g.ldch = ldch;
    if (ldt > 0 && kern == SAM3__BK_AMX && ldt <= INT_MAX) {
        /* the rows past M up to the last tile row of 32: zeros (the tile rows from M's on, of
           which the product then writes the rows below M) */
        const int m32 = (M + 31) / 32 * 32;
        if (m32 > M) memset(Ch + SAM3__ATILE(M / 16 * 16, 0, ldt), 0, (size_t)(m32 / 16 - M / 16) * ldt * sizeof(uint16_t));
        g.cht = 1, g.ldch = (int)ldt;
    }
    if (!sam3__bgemm_run(c, kern, &g)) return 0;
    sam3__count(c, 2.0 * M * N * K);
    return g.cht ? 2 : 1;
}
/* C (M, N; rows ldc apart) = A W^T, A (M, K) bf16 as sam3__gemm_bf16_gelu's A tiles (tile rows ldt
   apart), W (N, K) f32 or bf16 (Wh): read where they are, with no packing of A. The same sums as
   sam3__gemm_bf16 on A as rows. AMX only (where sam3__gemm_bf16_gelu wrote tiles). */
static void sam3__gemm_bf16_at(sam3_ctx *c, int M, int N, int K, const uint16_t *At, size_t ldt, const float *W, const uint16_t *Wh,
                               int ldw, float *C, int ldc) {
    sam3__gemm_args g;
    int i, j, k;
    memset(&g, 0, sizeof(g));
    g.tb = 1, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.at = At, g.ldat = ldt, g.b = W, g.bh = Wh, g.ldb = ldw, g.c = C, g.ldc = ldc;
    sam3__count(c, 2.0 * M * N * K);
    if (M <= 0 || N <= 0 || sam3__bgemm_run(c, sam3__bgemm_kern(c->bk), &g)) return;
    /* no memory for the B panels: unblocked, slow, but the same products */
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            float acc = 0;
            for (k = 0; k < K; k++)
                acc += sam3__bf16_f32(At[SAM3__ATILE(i, k, ldt)]) * sam3__bf16_f32(sam3__bop(0, W, Wh, ldw, j, k));
            C[(size_t)i * ldc + j] = acc;
        }
}

/* ==== sam3: kernels ==== */
/* The kernel layer: everything numeric that the model code calls in its loops, in one place.
   Convention (new kernels, e.g. bf16 GEMMs, follow it):
   - Reference: every hot kernel has a version named sam3__ref_<kernel> in plain C99: short,
     obviously correct, with no intrinsics, vector types or pragmas beyond OpenMP's. It is the
     spec and the oracle (tests/test_kernels.c compares the fast versions with it on random and
     hostile inputs) and what a SAM3_REFERENCE_KERNELS build runs.
   - Fast: the optimised versions sit beside their reference (named by kernel, _fast or by
     technique). SIMD appears only in this section, through the small helper layer sam3__vx_*
     (AVX-512, AVX2 + FMA and NEON mappings, and a scalar one of width 1 for every other target),
     plus the GCC vector types of the register tiles (built-in SGEMM, attention), which compile to
     the same instructions on every target GCC and clang know.
   - Dispatch: one function per kernel, the name the model code calls (sam3__sgemm,
     sam3__attention_rel, sam3__attention_packed, sam3__softmax_rows, sam3__gelu_bias,
     sam3__sigmoid_row, sam3__ln_row, sam3__conv3x3, the mask resize rows), chooses the reference or
     the fast version by preprocessor tests made here and nowhere else. The model code (from
     "preprocessing" on) has no intrinsics and no #if on the instruction set.
   Kernels with one plain-C version only (group norm, layer norm 2d, the transposed 2x2 conv, the
   uint8 antialiased resize of the preprocessing) are their own reference. */
#if !defined(SAM3__KREF) && (defined(SAM3__KAVX512) || defined(SAM3__KAVX2) || defined(SAM3__KNEON))
#define SAM3__SIMD 1 /* the helper layer has vector registers (else the scalar mapping, SAM3__VX 1) */
#endif

/* ---- reference kernels ---- */
/* g's f32 product (sam3__gemm_args), sums in double; beta 0: C is not read (it may hold NaN). */
static void sam3__ref_sgemm(const sam3__gemm_args *g) {
    const float *A = g->a, *B = g->b, alpha = g->alpha, beta = g->beta;
    const int ta = g->ta, tb = g->tb, lda = g->lda, ldb = g->ldb;
    int i, j, k;
    for (i = 0; i < g->m; i++)
        for (j = 0; j < g->n; j++) {
            float *cij = g->c + (size_t)i * g->ldc + j;
            double s = 0;
            for (k = 0; k < g->k; k++) s += (double)(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) * (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
            *cij = beta == 0 ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *cij);
        }
}
/* r[0..n) = softmax(r) in place: exp(r - max) / sum. */
static void sam3__ref_softmax_row(float *r, int n) {
    float mx = -FLT_MAX, sum = 0;
    int j;
    for (j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
    for (j = 0; j < n; j++) sum += r[j] = expf(r[j] - mx);
    for (j = 0; j < n; j++) r[j] /= sum;
}
/* y = 1 / (1 + exp(-x)) over n values. */
static void sam3__ref_sigmoid_row(const float *x, float *y, size_t n) {
    size_t j;
    for (j = 0; j < n; j++) y[j] = 1.0f / (1.0f + expf(-x[j]));
}
/* x (rows, d) = GELU(x + b), exact: 0.5 v (1 + erf(v / sqrt 2)); b (d) or NULL. */
static void sam3__ref_gelu_bias(float *x, size_t rows, int d, const float *b) {
    size_t i;
    int j;
    for (i = 0; i < rows; i++)
        for (j = 0; j < d; j++) {
            const float v = x[i * (size_t)d + j] + (b ? b[j] : 0.0f);
            x[i * (size_t)d + j] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
        }
}
/* LayerNorm of one row r (d) into o (may alias r): (r - mean) / sqrt(var + eps) w + b, the
   biased variance as PyTorch, statistics in double. */
static void sam3__ref_ln_row(const float *r, float *o, int d, const sam3__norm *w, float eps) {
    double mu = 0, var = 0;
    int j;
    for (j = 0; j < d; j++) mu += r[j];
    mu /= d;
    for (j = 0; j < d; j++) var += ((double)r[j] - mu) * ((double)r[j] - mu);
    var /= d;
    for (j = 0; j < d; j++) o[j] = (r[j] - (float)mu) * (float)(1.0 / sqrt(var + (double)eps)) * w->w[j] + w->b[j];
}
/* The floating-point operations of attention at (sam3__count): per query-key pair (j <= i where
   causal) and head, hd multiply-adds in q.k and hd in P.V. */
static double sam3__attn_flops(const sam3__attn_args *at) {
    const double nq = at->nq, nk = at->nk;
    const double pairs = !at->causal ? nq * nk : nq <= nk ? nq * (nq + 1) / 2 : nk * (nk + 1) / 2 + (nq - nk) * nk;
    return 4.0 * at->nh * at->hd * pairs;
}
/* Multi-head attention, one (head, query) at a time: out[i, h hd..] = softmax(scale q_ih . k_jh +
   bias_h[i, j]) . v_jh over keys j (j <= i when causal), scale = hd^-1/2, bias_h[i, ky S + kx] =
   relh[h, i, ky] + relw[h, i, kx] (S = rel_s) or 0. out may alias q: a task reads q only at the
   row and head it writes, and all of it first. */
static sam3_result sam3__ref_attention(sam3_ctx *c, const sam3__attn_args *at) {
    const int nq = at->nq, nk = at->nk, hd = at->hd, rel_s = at->rel_s;
    const float *relh = at->relh, *relw = at->relw;
    sam3__mark mk = sam3__mark_get(c);
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t per = (size_t)nk + (size_t)hd;
    float *buf = sam3__sallocf(c, (size_t)c->nt * per); /* per thread: (nk) probabilities, (hd) an output row */
    int task;
    if (!buf) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, sam3__attn_flops(at));
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < at->nh * nq; task++) {
        const int h = task / nq, i = task % nq, lim = at->causal ? SAM3__MIN(i + 1, nk) : nk;
        const float *qi = at->q + (size_t)i * at->ldq + (size_t)h * hd;
        float *p = sam3__thread_slice(buf, per), *o = p + nk;
        int j, d;
        for (j = 0; j < lim; j++) {
            const float *kj = at->k + (size_t)j * at->ldk + (size_t)h * hd;
            float s = 0;
            for (d = 0; d < hd; d++) s += qi[d] * kj[d];
            p[j] = s * scale;
            if (relh) p[j] += relh[((size_t)h * nq + i) * rel_s + j / rel_s] + relw[((size_t)h * nq + i) * rel_s + j % rel_s];
        }
        sam3__ref_softmax_row(p, lim);
        for (d = 0; d < hd; d++) {
            float s = 0;
            for (j = 0; j < lim; j++) s += p[j] * at->v[(size_t)j * at->ldv + (size_t)h * hd + d];
            o[d] = s;
        }
        memcpy(at->out + (size_t)i * at->ldo + (size_t)h * hd, o, (size_t)hd * sizeof(float));
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
/* The ViT's nb self-attentions of n tokens over keys and values laid out by sam3__rope_pack and
   sam3__v_pack: key j of (batch b, head h) at kt[(((b nh + h) npan + j / PW) hd + d) PW + j % PW]
   (npan = ceil(n / PW) panels, PW = SAM3__ATT_PW), values vp (nb, nh, n, hd), n = ra->nk; the
   queries are ra->q, which then holds the output (ra->k, v, biases and tab are not read).
   Otherwise as sam3__ref_attention. */
static sam3_result sam3__ref_attention_packed(sam3_ctx *c, const sam3__rope_args *ra, const float *kt, const float *vp);
/* 3x3 conv, stride 1, zero padding 1, directly: y[o, r, x] = b[o] + sum_i,ky,kx w[o, i, ky, kx]
   xs[i, r + ky - 1, x + kx - 1], with xs = x (cin, H, W) plus, when lo is given,
   lo (cin, lh, lw) upsampled by nearest neighbour (source index floor(dst in / out), as
   F.interpolate). st (cout, ceil(H / 4), 3) or NULL: per output channel and band of 4 rows, the
   count, mean and sum of squared deviations (what sam3__groupnorm takes). */
static sam3_result sam3__ref_conv3x3(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l,
                                     int cout, float *y, double *st) {
    sam3__mark mk = sam3__mark_get(c);
    const int nty = (H + 3) / 4;
    float *xs = lo ? sam3__sallocf(c, (size_t)cin * H * W) : NULL;                 /* (cin, H, W) x + upsampled lo */
    float *acc = sam3__sallocf(c, (size_t)c->nt * W); /* per thread: (W) an output row */
    int task;
    if ((lo && !xs) || !acc) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, 18.0 * cout * cin * H * W); /* 9 taps an output and input channel, the padding's too */
    if (lo) {
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
        for (task = 0; task < cin * H; task++) {
            const int i = task / H, r = task % H, sr = SAM3__MIN((int)floorf((float)r * ((float)lh / (float)H)), lh - 1);
            int q;
            for (q = 0; q < W; q++)
                xs[((size_t)i * H + r) * W + q] = x[((size_t)i * H + r) * W + q] +
                                                  lo[((size_t)i * lh + sr) * lw + SAM3__MIN((int)floorf((float)q * ((float)lw / (float)W)), lw - 1)];
        }
        x = xs;
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < cout * H; task++) {
        const int o = task / H, r = task % H;
        float *s = sam3__thread_slice(acc, (size_t)W);
        int i, ky, q;
        for (q = 0; q < W; q++) s[q] = l->b ? l->b[o] : 0.0f;
        for (i = 0; i < cin; i++)
            for (ky = 0; ky < 3; ky++) {
                const int yy = r + ky - 1;
                if (yy < 0 || yy >= H) continue;
                {
                    const size_t wi = (((size_t)o * cin + i) * 3 + ky) * 3;
                    const float wk[3] = {sam3__lw(l, wi), sam3__lw(l, wi + 1), sam3__lw(l, wi + 2)}; /* f32 or bf16 file */
                    const float *xr = x + ((size_t)i * H + yy) * W;
                    /* the three taps of the row; columns -1 and W are the zero padding */
                    s[0] += wk[1] * xr[0] + (W > 1 ? wk[2] * xr[1] : 0.0f);
                    for (q = 1; q < W - 1; q++) s[q] += wk[0] * xr[q - 1] + wk[1] * xr[q] + wk[2] * xr[q + 1];
                    if (W > 1) s[W - 1] += wk[0] * xr[W - 2] + wk[1] * xr[W - 1];
                }
            }
        memcpy(y + ((size_t)o * H + r) * W, s, (size_t)W * sizeof(float));
    }
    if (st)
        for (task = 0; task < cout * nty; task++) {
            const float *y0 = y + ((size_t)(task / nty) * H + 4 * (size_t)(task % nty)) * W;
            const size_t n = (size_t)SAM3__MIN(4, H - 4 * (task % nty)) * W;
            double sum = 0, mean, dev = 0;
            size_t j;
            for (j = 0; j < n; j++) sum += y0[j];
            mean = sum / (double)n;
            for (j = 0; j < n; j++) dev += ((double)y0[j] - mean) * ((double)y0[j] - mean);
            st[3 * (size_t)task] = (double)n, st[3 * (size_t)task + 1] = mean, st[3 * (size_t)task + 2] = dev;
        }
    sam3__release(c, mk);
    return SAM3_OK;
}
/* One map src (ih, iw), through a sigmoid first when sig, resized by the taps ty (oh), tx (ow)
   and thresholded: mask (oh, ow) = [ly0 (lx0 a00 + lx1 a01) + ly1 (lx0 a10 + lx1 a11) > thr] (the
   products and sums in the order sam3__resize_threshold_n makes them). Returns the mask's area. */
static long sam3__ref_resize_threshold(const float *src, int sig, int iw, const sam3__lerp *ty, const sam3__lerp *tx, int oh, int ow, float thr,
                                       uint8_t *mask) {
    long area = 0;
    int r, q;
    for (r = 0; r < oh; r++)
        for (q = 0; q < ow; q++) {
            const float *a = src + (size_t)ty[r].i0 * iw, *b = src + (size_t)ty[r].i1 * iw;
            float a0 = a[tx[q].i0], a1 = a[tx[q].i1], b0 = b[tx[q].i0], b1 = b[tx[q].i1], v;
            if (sig) {
                a0 = 1.0f / (1.0f + expf(-a0)), a1 = 1.0f / (1.0f + expf(-a1));
                b0 = 1.0f / (1.0f + expf(-b0)), b1 = 1.0f / (1.0f + expf(-b1));
            }
            v = ty[r].l0 * (tx[q].l0 * a0 + tx[q].l1 * a1) + ty[r].l1 * (tx[q].l0 * b0 + tx[q].l1 * b1);
            mask[(size_t)r * ow + q] = (uint8_t)(v > thr);
            area += v > thr;
        }
    return area;
}

/* ---- GEMM dispatch ---- */
/* g's f32 product: the reference, SAM3_SGEMM, the built-in SGEMM (SAM3_NO_BLAS) or one BLAS call. */
static void sam3__sgemm(sam3_ctx *c, const sam3__gemm_args *g) {
#if defined(SAM3_SGEMM) || !defined(SAM3_NO_BLAS) /* the BLAS call's arguments */
    const int ta = g->ta, tb = g->tb, M = g->m, N = g->n, K = g->k, lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    const float alpha = g->alpha, beta = g->beta, *A = g->a, *B = g->b;
    float *C = g->c;
#endif
    (void)c;
    (void)sam3__sgemm_builtin; /* with a BLAS, only `sam3 bench --gemm` calls it */
    /* the reference kernels that a fast build does not call: tests/test_kernels.c does */
    (void)sam3__ref_resize_threshold, (void)sam3__ref_attention, (void)sam3__ref_attention_packed, (void)sam3__ref_conv3x3;
    (void)sam3__ref_gelu_bias, (void)sam3__ref_ln_row, (void)sam3__ref_sigmoid_row, (void)sam3__ref_sgemm;
    if (g->m <= 0 || g->n <= 0) return;
#if defined(SAM3__KREF)
    if (c->isa == SAM3_ISA_REFERENCE) { /* the plain-C path has no BLAS either */
        sam3__ref_sgemm(g);
        return;
    }
#endif
#if defined(SAM3_SGEMM)
    SAM3_SGEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#elif defined(SAM3_NO_BLAS)
    sam3__sgemm_builtin(c, c->nt, g);
#else
#if defined(_OPENMP) && defined(OPENBLAS_VERSION)
    if (c->omp_blas && !omp_in_parallel()) {
        /* OpenBLAS's OpenMP build sizes a call by the calling thread's omp_get_max_threads(), an
           OpenMP per-thread setting (openblas_set_num_threads changes it only on the thread that
           calls it): pin it to the context's count for the call, so a context uses the threads it
           was given and computes the same bits on whatever thread runs it. */
        const int prev = omp_get_max_threads(), want = c->opt.blas_threads > 0 ? c->opt.blas_threads : c->nt;
        if (prev != want) omp_set_num_threads(want);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        if (prev != want) omp_set_num_threads(prev);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

/* C = alpha op(A) op(B) + beta C for the context. With a multi-threaded BLAS this is one call.
   When the BLAS runs single-threaded inside our regions (c->split: blas_threads = 1, OpenBLAS's
   OpenMP build, the built-in SGEMM), the product is cut into a grid of tiles computed in one
   OpenMP region, so a single thread pool does all the work: two pools (OpenBLAS pthreads spinning
   between calls while our OpenMP loops run) fight over the cores. The grid comes from the
   product's shape alone, never from the thread count: OpenBLAS's sums depend on the shape of the
   call that makes them (and on its own thread count), so each element is then made by the same
   single-threaded call whatever the context's threads, and the results are the same bits. */
static int sam3__gemm_small(sam3_ctx *c, const sam3__gemm_args *g);
#define SAM3__GEMM_TILE_MIN 2e6 /* multiply-adds a tile at least */
#define SAM3__GEMM_TILES 48     /* tiles a product at most: 3 a thread at 16 threads */
static void sam3__gemm(sam3_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc) {
    const double mnk = (double)M * N * K;
    /* tile counts with many divisors, so that the grid can be near square */
    static const int counts[] = {SAM3__GEMM_TILES, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1};
    int tiles = 1, pm, pn, t, best = 0;
    double cost = 0;
    sam3__gemm_args g;
    sam3__count(c, 2 * mnk);
    memset(&g, 0, sizeof(g));
    g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = alpha, g.beta = beta;
    g.a = A, g.lda = lda, g.b = B, g.ldb = ldb, g.c = C, g.ldc = ldc;
    for (t = 0; t < (int)(sizeof(counts) / sizeof(counts[0])); t++)
        if (mnk >= counts[t] * SAM3__GEMM_TILE_MIN) {
            tiles = counts[t];
            break;
        }
    if (sam3__gemm_small(c, &g)) return;
    if (!c->split || tiles < 2) {
        sam3__sgemm(c, &g);
        return;
    }
    /* pick pm x pn = tiles (pm a divisor) making tiles closest to square, which minimises the A
       and B panels each thread packs; the tiles are taken as they come */
    for (pm = 1; pm <= tiles; pm++) {
        double tm, tn, cst;
        if (tiles % pm) continue;
        pn = tiles / pm;
        if (pm > M || pn > N) continue;
        tm = (double)M / pm;
        tn = (double)N / pn;
        cst = tm > tn ? tm / tn : tn / tm;
        if (!best || cst < cost) {
            best = pm;
            cost = cst;
        }
    }
    if (!best) {
        sam3__sgemm(c, &g);
        return;
    }
    pm = best;
    pn = tiles / pm;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
    for (t = 0; t < pm * pn; t++) {
        int i = t / pn, j = t % pn;
        int m0 = (int)((int64_t)M * i / pm), m1 = (int)((int64_t)M * (i + 1) / pm);
        int n0 = (int)((int64_t)N * j / pn), n1 = (int)((int64_t)N * (j + 1) / pn);
        sam3__gemm_args tile = g; /* the product's tile (m0..m1, n0..n1) */
        tile.m = m1 - m0, tile.n = n1 - n0, tile.a = ta ? A + m0 : A + (size_t)m0 * lda, tile.b = tb ? B + (size_t)n0 * ldb : B + n0;
        tile.c = C + (size_t)m0 * ldc + n0;
        sam3__sgemm(c, &tile);
    }
}

/* A CPU without bf16 products (a fast path below avx512bf16): C = op(A) op(B) + beta C with the
   bf16 operand(s) widened to f32, which is exact, the f32 ones as they are, then the f32 product
   (sam3__gemm): the f32 path's tiles and sums on the file's bf16 weights, at the f32 file's speed
   (rounding the activations too, as bf16 hardware does, would cost a pass over them per product
   and buy nothing). Returns 0, having done nothing, when its buffers cannot be had. */
static int sam3__gemm_wide(sam3_ctx *c, const sam3__gemm_args *g) {
    const int ta = g->ta, tb = g->tb, M = g->m, N = g->n, K = g->k;
    const uint16_t *Ah = g->ah, *Bh = g->bh;
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N; /* the operands as they lie */
    sam3__kbuf ka, kb;
    float *a = NULL, *b = NULL;
    if (Ah && !(a = (float *)sam3__kbuf_get(c, (size_t)ar * ac * sizeof(float), &ka))) return 0;
    if (Bh && !(b = (float *)sam3__kbuf_get(c, (size_t)br * bc * sizeof(float), &kb))) {
        if (a) sam3__kbuf_put(c, &ka);
        return 0;
    }
    if (a) sam3__bf16_round_rows(c, NULL, Ah, g->lda, 0, ar, ac, a); /* (ar, ac) */
    if (b) sam3__bf16_round_rows(c, NULL, Bh, g->ldb, 0, br, bc, b); /* (br, bc) */
    sam3__gemm(c, ta, tb, M, N, K, 1.0f, a ? a : g->a, a ? ac : g->lda, b ? b : g->b, b ? bc : g->ldb, g->beta, g->c, g->ldc);
    if (b) sam3__kbuf_put(c, &kb);
    if (a) sam3__kbuf_put(c, &ka);
    return 1;
}

/* The products with a weight, all through here: C (M, N) = op(A) op(B) + beta C where A or B is
   a weight (f32 A/B or bf16 Ah/Bh). In bf16 (sam3__gemm_bf16) when a weight is bf16 or the
   context runs bf16 products (SAM3_PRECISION_BF16) and the CPU has bf16 products; on the other
   fast paths a bf16 weight is widened (sam3__gemm_wide) and SAM3_PRECISION_BF16 is the f32 path;
   the reference path rounds both operands as bf16 hardware does (sam3__bgemm_ref). */
static void sam3__gemm_mixed_bf(sam3_ctx *c, int bf, int ta, int tb, int M, int N, int K, const float *A, const uint16_t *Ah, int lda,
                                const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
    const int wide = c->bk == SAM3__BK_REF && c->isa != SAM3_ISA_REFERENCE;
    sam3__gemm_args g;
    if (!(Ah || Bh || bf) || (wide && !Ah && !Bh)) {
        sam3__gemm(c, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    memset(&g, 0, sizeof(g));
    g.ta = ta, g.tb = tb, g.m = M, g.n = N, g.k = K, g.alpha = 1.0f, g.beta = beta;
    g.a = A, g.ah = Ah, g.lda = lda, g.b = B, g.bh = Bh, g.ldb = ldb, g.c = C, g.ldc = ldc;
    if (!wide || !sam3__gemm_wide(c, &g)) sam3__gemm_bf16(c, c->bk, &g);
}
static void sam3__gemm_mixed(sam3_ctx *c, int ta, int tb, int M, int N, int K, const float *A, const uint16_t *Ah, int lda,
                             const float *B, const uint16_t *Bh, int ldb, float beta, float *C, int ldc) {
    sam3__gemm_mixed_bf(c, c->bf16, ta, tb, M, N, K, A, Ah, lda, B, Bh, ldb, beta, C, ldc);
}
/* A product of two f32 activations: as a bf16 product where bf is set (both operands rounded, as
   sam3__gemm_mixed rounds the activation of a bf16 product; f32 where the CPU has no bf16
   products), else sam3__gemm. */
static void sam3__gemm_act(sam3_ctx *c, int bf, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                           float beta, float *C, int ldc) {
    if (bf) sam3__gemm_mixed_bf(c, 1, ta, tb, M, N, K, A, NULL, lda, B, NULL, ldb, beta, C, ldc);
    else sam3__gemm(c, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
/* C = op(X) op(W) + beta C, W = l's weight from element off on (leading dimension ldw). */
static void sam3__gemm_xw(sam3_ctx *c, int ta, int tb, int M, int N, int K, const float *x, int ldx, const sam3__lin *l, size_t off,
                          int ldw, float beta, float *C, int ldc) {
    sam3__gemm_mixed(c, ta, tb, M, N, K, x, NULL, ldx, l->w ? l->w + off : NULL, l->wh ? l->wh + off : NULL, ldw, beta, C, ldc);
}
/* C = op(W) op(X) + beta C. */
static void sam3__gemm_wx(sam3_ctx *c, int ta, int tb, int M, int N, int K, const sam3__lin *l, size_t off, int ldw, const float *x, int ldx,
                          float beta, float *C, int ldc) {
    sam3__gemm_mixed(c, ta, tb, M, N, K, l->w ? l->w + off : NULL, l->wh ? l->wh + off : NULL, ldw, x, NULL, ldx, beta, C, ldc);
}

/* y (n, out) = x (n, in) . W^T + b, W as stored by nn.Linear (out, in). y may not alias x. */
static void sam3__linear(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int out, float *y) {
    int i;
    sam3__gemm_xw(c, 0, 1, n, out, in, x, in, l, 0, in, 0.0f, y, out);
    if (!l->b) return;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n * out) >= SAM3__PAR_MIN))
    for (i = 0; i < n; i++) {
        float *r = y + (size_t)i * out;
        int j;
        for (j = 0; j < out; j++) r[j] += l->b[j];
    }
}

/* LayerNorm of one row over d (biased variance, as PyTorch); y may alias x. sam3__ref_ln_row
   with its sums marked simd. */
static void sam3__ln_row(const float *r, float *o, int d, const sam3__norm *w, float eps) {
#if defined(SAM3__KREF)
    sam3__ref_ln_row(r, o, d, w, eps);
#else
    double mu = 0, var = 0;
    float inv, fmu;
    int j;
    SAM3__OMP(simd reduction(+:mu))
    for (j = 0; j < d; j++) mu += r[j];
    mu /= d;
    SAM3__OMP(simd reduction(+:var))
    for (j = 0; j < d; j++) var += ((double)r[j] - mu) * ((double)r[j] - mu);
    var /= d;
    inv = (float)(1.0 / sqrt(var + (double)eps));
    fmu = (float)mu;
    for (j = 0; j < d; j++) o[j] = (r[j] - fmu) * inv * w->w[j] + w->b[j];
#endif
}
static void sam3__layernorm(sam3_ctx *c, const float *x, float *y, int n, int d, const sam3__norm *w, float eps) {
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n * d) >= SAM3__PAR_MIN))
    for (i = 0; i < n; i++) sam3__ln_row(x + (size_t)i * d, y + (size_t)i * d, d, w, eps);
}
/* The same, and yp = y + pos beside it while the row is in L1 (a self-attention's queries and
   keys): a copy and a pass over the map fewer. */
static void sam3__layernorm_pos(sam3_ctx *c, const float *x, float *y, const float *pos, float *yp, int n, int d, const sam3__norm *w,
                                float eps) {
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n * d) >= SAM3__PAR_MIN))
    for (i = 0; i < n; i++) {
        const float *pr = pos + (size_t)i * d;
        float *yr = y + (size_t)i * d, *o = yp + (size_t)i * d;
        int j;
        sam3__ln_row(x + (size_t)i * d, yr, d, w, eps);
        for (j = 0; j < d; j++) o[j] = yr[j] + pr[j];
    }
}

/* exp(x), Cephes-style: x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial for e^r, 2^n from
   the exponent bits. Within 2 ulp of expf, and branch-free so the loops calling it vectorize
   (libm's expf and erff do not, and the model takes ~4.4 G exps and ~0.8 G erfs per image). */
static SAM3__INLINE float sam3__fexp(float x) {
    float n, r, p, s, z;
    uint32_t bits;
    x = x < -87.33654f ? -87.33654f : x;
    x = x > 88.72283f ? 88.72283f : x;
    z = x - x;             /* 0, or NaN for a NaN x: added to the result, so NaN stays NaN */
    x = x == x ? x : 0.0f; /* and the int conversion below never sees a NaN (undefined behaviour) */
    n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(x / ln2), 1.5*2^23 trick */
    r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    bits = (uint32_t)((int32_t)n + 127) << 23;
    memcpy(&s, &bits, sizeof(s));
    return p * s + z;
}
/* erf(x) by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), branch-free. */
static SAM3__INLINE float sam3__ferf(float x) {
    float ax = x < 0 ? -x : x, t = 1.0f / (1.0f + 0.3275911f * ax), y;
    y = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    y = 1.0f - y * sam3__fexp(-ax * ax);
    return x < 0 ? -y : y;
}

/* ---- the SIMD helper layer: sam3__vx, SAM3__VX floats, and its operations ---- */
/* sam3__fexp and the GELU on whole vectors, in intrinsics. The compiler's vectorisation of the
   scalar loops is not to be relied on: GCC 12 vectorises them 8 wide at most (its tuning for
   AVX-512 machines prefers 256-bit vectors), GCC 13 not at all. A scalar GELU is about ten
   times the cost of this one and a large share of a ViT block, and scalar exponentials make the
   softmax a large share of the attention. */
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
typedef __m512 sam3__vx;
#define SAM3__VX 16
#define sam3__vx_set1 _mm512_set1_ps
#define sam3__vx_load _mm512_loadu_ps
#define sam3__vx_store _mm512_storeu_ps
#define sam3__vx_add _mm512_add_ps
#define sam3__vx_sub _mm512_sub_ps
/* the masked forms where the plain ones start from _mm512_undefined_*: GCC 12 warns on those in
   C++ (-Wmaybe-uninitialized, its bug 105593) */
static SAM3__INLINE __m512 sam3__vx_max(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, (__mmask16)0xFFFF, a, b); }
static SAM3__INLINE __m512 sam3__vx_min(__m512 a, __m512 b) { return _mm512_mask_min_ps(a, (__mmask16)0xFFFF, a, b); }
#define sam3__vx_fmadd _mm512_fmadd_ps
#define sam3__vx_fnmadd _mm512_fnmadd_ps
#define sam3__vx_mul _mm512_mul_ps
#define sam3__vx_div _mm512_div_ps
#define sam3__vx_abs _mm512_abs_ps
/* a with the sign of s, for a >= 0 */
static SAM3__INLINE __m512 sam3__vx_copysign(__m512 a, __m512 s) {
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_and_si512(_mm512_set1_epi32((int)0x80000000u), _mm512_castps_si512(s))));
}
static SAM3__INLINE __m512 sam3__vx_pow2n(__m512 n) {
    const __m512i z = _mm512_setzero_si512(), e = _mm512_add_epi32(_mm512_mask_cvtps_epi32(z, (__mmask16)0xFFFF, n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_mask_slli_epi32(z, (__mmask16)0xFFFF, e, 23));
}
#elif defined(SAM3__SIMD) && defined(SAM3__KNEON)
/* NEON (aarch64): 4 floats, 32 registers, FMA in every core; the same operations as the x86
   helpers (fmadd(a, b, c) = a b + c, fnmadd(a, b, c) = c - a b). */
typedef float32x4_t sam3__vx;
#define SAM3__VX 4
#define sam3__vx_set1 vdupq_n_f32
#define sam3__vx_load vld1q_f32
#define sam3__vx_store vst1q_f32
#define sam3__vx_add vaddq_f32
#define sam3__vx_sub vsubq_f32
#undef sam3__vx_max
#define sam3__vx_max vmaxq_f32
#undef sam3__vx_min
#define sam3__vx_min vminq_f32
#define sam3__vx_fmadd(a, b, c) vfmaq_f32((c), (a), (b))
#define sam3__vx_fnmadd(a, b, c) vfmsq_f32((c), (a), (b))
#define sam3__vx_mul vmulq_f32
#define sam3__vx_div vdivq_f32
#define sam3__vx_abs vabsq_f32
#undef sam3__vx_copysign
#define sam3__vx_copysign(a, s) vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), vandq_u32(vreinterpretq_u32_f32(s), vdupq_n_u32(0x80000000u)))) /* a >= 0 */
static SAM3__INLINE float32x4_t sam3__vx_pow2n(float32x4_t n) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23));
}
#elif defined(SAM3__SIMD)
typedef __m256 sam3__vx;
#define SAM3__VX 8
#define sam3__vx_set1 _mm256_set1_ps
#define sam3__vx_load _mm256_loadu_ps
#define sam3__vx_store _mm256_storeu_ps
#define sam3__vx_add _mm256_add_ps
#define sam3__vx_sub _mm256_sub_ps
#undef sam3__vx_max
#define sam3__vx_max _mm256_max_ps
#undef sam3__vx_min
#define sam3__vx_min _mm256_min_ps
#define sam3__vx_fmadd _mm256_fmadd_ps
#define sam3__vx_fnmadd _mm256_fnmadd_ps
#define sam3__vx_mul _mm256_mul_ps
#define sam3__vx_div _mm256_div_ps
#define sam3__vx_abs(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (a))
#undef sam3__vx_copysign
#define sam3__vx_copysign(a, s) _mm256_or_ps((a), _mm256_and_ps(_mm256_set1_ps(-0.0f), (s))) /* a >= 0 */
static SAM3__INLINE __m256 sam3__vx_pow2n(__m256 n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
#else
/* Scalar (any other target, and the reference build): one float; the operations as above. */
typedef float sam3__vx;
#define SAM3__VX 1
static SAM3__INLINE float sam3__vx_set1(float a) { return a; }
static SAM3__INLINE float sam3__vx_load(const float *p) { return *p; }
static SAM3__INLINE void sam3__vx_store(float *p, float a) { *p = a; }
static SAM3__INLINE float sam3__vx_add(float a, float b) { return a + b; }
static SAM3__INLINE float sam3__vx_sub(float a, float b) { return a - b; }
static SAM3__INLINE float sam3__vx_max(float a, float b) { return a > b ? a : b; }
static SAM3__INLINE float sam3__vx_min(float a, float b) { return a < b ? a : b; }
static SAM3__INLINE float sam3__vx_fmadd(float a, float b, float c) { return a * b + c; }
static SAM3__INLINE float sam3__vx_fnmadd(float a, float b, float c) { return c - a * b; }
static SAM3__INLINE float sam3__vx_mul(float a, float b) { return a * b; }
static SAM3__INLINE float sam3__vx_div(float a, float b) { return a / b; }
static SAM3__INLINE float sam3__vx_abs(float a) { return a < 0 ? -a : a; }
static SAM3__INLINE float sam3__vx_copysign(float a, float s) { return copysignf(a, s); }
static SAM3__INLINE float sam3__vx_pow2n(float n) { return ldexpf(1.0f, (int)n); } /* n integral, in [-127, 128] */
#endif
/* through memory: GCC 12's _mm512_reduce_* trip -Wmaybe-uninitialized in its own headers */
static SAM3__INLINE float sam3__vx_hmax(sam3__vx v) {
    float t[SAM3__VX], m;
    int i;
    sam3__vx_store(t, v);
    m = t[0];
    for (i = 1; i < SAM3__VX; i++) m = t[i] > m ? t[i] : m;
    return m;
}
static SAM3__INLINE float sam3__vx_hsum(sam3__vx v) {
    float t[SAM3__VX], r = 0;
    int i;
    sam3__vx_store(t, v);
    for (i = 0; i < SAM3__VX; i++) r += t[i];
    return r;
}
/* exp(x - n ln 2) for |x - n ln 2| <= ln 2 / 2, as sam3__fexp's reduction and polynomial */
static SAM3__INLINE sam3__vx sam3__vx_exp_reduced(sam3__vx x, sam3__vx n) {
    sam3__vx r, p;
    r = sam3__vx_fnmadd(n, sam3__vx_set1(0.693359375f), x);
    r = sam3__vx_fnmadd(n, sam3__vx_set1(-2.12194440e-4f), r);
    p = sam3__vx_set1(1.9875691500e-4f);
    p = sam3__vx_fmadd(p, r, sam3__vx_set1(1.3981999507e-3f));
    p = sam3__vx_fmadd(p, r, sam3__vx_set1(8.3334519073e-3f));
    p = sam3__vx_fmadd(p, r, sam3__vx_set1(4.1665795894e-2f));
    p = sam3__vx_fmadd(p, r, sam3__vx_set1(1.6666665459e-1f));
    p = sam3__vx_fmadd(p, r, sam3__vx_set1(5.0000001201e-1f));
    return sam3__vx_fmadd(sam3__vx_mul(p, r), r, sam3__vx_add(r, sam3__vx_set1(1.0f)));
}
/* The same steps as sam3__fexp. A NaN input clamps to a finite x and z = x - x carries it. */
static SAM3__INLINE sam3__vx sam3__vx_exp(sam3__vx x) {
    const sam3__vx z = sam3__vx_sub(x, x);
    sam3__vx n;
    x = sam3__vx_min(sam3__vx_max(x, sam3__vx_set1(-87.33654f)), sam3__vx_set1(88.72283f));
    n = sam3__vx_sub(sam3__vx_fmadd(x, sam3__vx_set1(1.44269504088896341f), sam3__vx_set1(12582912.0f)), sam3__vx_set1(12582912.0f));
    return sam3__vx_fmadd(sam3__vx_exp_reduced(x, n), sam3__vx_pow2n(n), z);
}
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
/* exp(s - m) for the softmax as 2^t, t = s log2(e) - m log2(e) by one fma: its rounding is that
   of s - m, and the constant's scales the whole row, which the normalisation cancels. 2^t =
   2^floor(t) 2^f: f = t - floor(t) in [0, 1) by one vreduce, 2^f by a degree-5 minimax polynomial
   (Remez, relative error 7.5e-8, 1.7e-7 as evaluated in f32: Cephes' degree 6 on [-0.5, 0.5]
   gives 1.5e-7), and vscalef, which floors its exponent itself (0 below the range, NaN carried).
   8 operations where exp(s - m) takes 14 and the rounding and Cephes' polynomial 10: on cores
   with two 512-bit FMA ports the products are fast enough that the softmax is a large share of
   the attention. nml: -m log2(e). */
#define SAM3__EXP2_ROW 1
static SAM3__INLINE __m512 sam3__vx_exp2_row(__m512 t) {
    const __m512 f = _mm512_mask_reduce_ps(t, (__mmask16)0xFFFF, t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 p = _mm512_set1_ps(1.8775766948e-3f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.9893396944e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5826317519e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4015361071e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9315308332e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.9999994040e-1f));
    return _mm512_mask_scalef_ps(p, (__mmask16)0xFFFF, p, t);
}
static SAM3__INLINE __m512 sam3__vx_exp_row(__m512 s, __m512 nml) {
    return sam3__vx_exp2_row(_mm512_fmadd_ps(s, _mm512_set1_ps(1.44269504088896341f), nml));
}
#define SAM3__EXP_ROW_ARG(mx) sam3__vx_set1(-(mx) * 1.44269504088896341f)
#else
#define sam3__vx_exp_row(s, vmx) sam3__vx_exp(sam3__vx_sub((s), (vmx)))
#define SAM3__EXP_ROW_ARG(mx) sam3__vx_set1(mx)
#endif
/* GELU(v) = 0.5 v (1 + erf(v / sqrt 2)), erf as sam3__ferf. |u| is clamped at 4, where
   erf(u) is already 1.0f, so exp(-u^2) never comes near the subnormals. */
static SAM3__INLINE sam3__vx sam3__vx_gelu(sam3__vx v) {
    const sam3__vx one = sam3__vx_set1(1.0f), u = sam3__vx_mul(v, sam3__vx_set1(0.70710678118654752f));
    const sam3__vx au = sam3__vx_min(sam3__vx_abs(u), sam3__vx_set1(4.0f));
    const sam3__vx t = sam3__vx_div(one, sam3__vx_fmadd(au, sam3__vx_set1(0.3275911f), one));
    sam3__vx y = sam3__vx_fmadd(t, sam3__vx_set1(1.061405429f), sam3__vx_set1(-1.453152027f));
    y = sam3__vx_fmadd(y, t, sam3__vx_set1(1.421413741f));
    y = sam3__vx_fmadd(y, t, sam3__vx_set1(-0.284496736f));
    y = sam3__vx_fmadd(y, t, sam3__vx_set1(0.254829592f));
    y = sam3__vx_mul(y, t);
    y = sam3__vx_fnmadd(y, sam3__vx_exp(sam3__vx_mul(au, sam3__vx_sub(sam3__vx_set1(0.0f), au))), one); /* erf |u| */
    y = sam3__vx_copysign(y, u);
    return sam3__vx_mul(sam3__vx_mul(sam3__vx_set1(0.5f), v), sam3__vx_add(one, y));
}

/* ---- the mask resize's rows (sam3__resize_threshold_n), the spec sam3__ref_resize_threshold ---- */
static sam3_result sam3__lerp_x_plan(sam3_ctx *c, const sam3__lerp *tx, int ow, sam3__lerp_x *px) {
    memset(px, 0, sizeof(*px));
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
    {
        const int nbq = ow / 16;
        int bd, u;
        px->bx = (int *)sam3__salloc(c, (size_t)SAM3__MAX(nbq, 1) * sizeof(int));
        px->rel = (int32_t *)sam3__salloc(c, (size_t)SAM3__MAX(2 * nbq * 16, 1) * sizeof(int32_t));
        px->wl = sam3__sallocf(c, (size_t)SAM3__MAX(2 * nbq * 16, 1));
        if (!px->bx || !px->rel || !px->wl) return SAM3_ERR_OUT_OF_MEMORY;
        px->nbq = nbq;
        for (bd = 0; bd < nbq; bd++) {
            const int base = tx[16 * bd].i0;
            px->bx[bd] = tx[16 * bd + 15].i1 - base < 16 ? base : -1;
            for (u = 0; u < 16; u++) {
                px->rel[(size_t)bd * 32 + u] = tx[16 * bd + u].i0 - base;
                px->rel[(size_t)bd * 32 + 16 + u] = tx[16 * bd + u].i1 - base;
                px->wl[(size_t)bd * 32 + u] = tx[16 * bd + u].l0;
                px->wl[(size_t)bd * 32 + 16 + u] = tx[16 * bd + u].l1;
            }
        }
    }
#else
    (void)c, (void)tx, (void)ow;
#endif
    return SAM3_OK;
}
/* h (ow) = the row a (iw) resized along x: h[q] = l0 a[i0] + l1 a[i1] (products, then the sum). */
static void sam3__lerp_x_row(const sam3__lerp_x *px, const sam3__lerp *tx, const float *a, int iw, int ow, float *h) {
    int q = 0;
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
    int bq;
    for (bq = 0; bq < px->nbq; bq++, q += 16) {
        if (px->bx[bq] >= 0) {
            const int nv = SAM3__MIN(16, iw - px->bx[bq]); /* the taps never reach past it */
            const __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << nv) - 1u), a + px->bx[bq]);
            /* masked forms: the plain permute starts from _mm512_undefined_ps (GCC 12's C++ warning, see sam3__vx_max) */
            const __m512 a0 = _mm512_mask_permutexvar_ps(v, (__mmask16)0xFFFF, _mm512_loadu_si512(px->rel + (size_t)bq * 32), v);
            const __m512 a1 = _mm512_mask_permutexvar_ps(v, (__mmask16)0xFFFF, _mm512_loadu_si512(px->rel + (size_t)bq * 32 + 16), v);
            _mm512_storeu_ps(h + q, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(px->wl + (size_t)bq * 32), a0),
                                                  _mm512_mul_ps(_mm512_loadu_ps(px->wl + (size_t)bq * 32 + 16), a1)));
        } else {
            int u;
            for (u = q; u < q + 16; u++) h[u] = tx[u].l0 * a[tx[u].i0] + tx[u].l1 * a[tx[u].i1];
        }
    }
#else
    (void)px, (void)iw;
#endif
    for (; q < ow; q++) h[q] = tx[q].l0 * a[tx[q].i0] + tx[q].l1 * a[tx[q].i1];
}
/* o (ow) = [l0 a + l1 b > thr] as 0/1 bytes; returns how many are 1. stream: the row goes around
   the caches (non-temporal stores, AVX-512 builds; sam3__stream_fence after the last). */
static long sam3__lerp_y_threshold_row(const float *a, const float *b, float l0, float l1, float thr, uint8_t *o, int ow, int stream) {
    long ar = 0;
    int q = 0;
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
    const __m512 v0 = _mm512_set1_ps(l0), v1 = _mm512_set1_ps(l1), vt = _mm512_set1_ps(thr);
    __m512i cnt = _mm512_setzero_si512();
    for (; q + 16 <= ow; q += 16) {
        const __m512 v = _mm512_add_ps(_mm512_mul_ps(v0, _mm512_loadu_ps(a + q)), _mm512_mul_ps(v1, _mm512_loadu_ps(b + q)));
        const __mmask16 k = _mm512_cmp_ps_mask(v, vt, _CMP_GT_OQ);
        const __m512i one = _mm512_maskz_set1_epi32(k, 1);
        /* the masked form: the plain one starts from _mm_undefined_si128 (GCC 12's C++ warning) */
        const __m128i b8 = _mm512_mask_cvtepi32_epi8(_mm_setzero_si128(), (__mmask16)0xFFFF, one);
        if (stream && ((uintptr_t)(o + q) & 15) == 0)
            _mm_stream_si128((__m128i *)(void *)(o + q), b8);
        else
            _mm_storeu_si128((__m128i *)(void *)(o + q), b8);
        cnt = _mm512_add_epi32(cnt, one);
    }
    {
        int32_t cs[16], u;
        _mm512_storeu_si512(cs, cnt);
        for (u = 0; u < 16; u++) ar += cs[u];
    }
#else
    (void)stream;
#endif
    for (; q < ow; q++) {
        const float v = l0 * a[q] + l1 * b[q];
        o[q] = (uint8_t)(v > thr);
        ar += v > thr;
    }
    return ar;
}
/* Orders a task's streaming stores before the join. */
static void sam3__stream_fence(int stream) {
#if defined(SAM3__SIMD) && defined(SAM3__KAVX512)
    if (stream) _mm_sfence();
#else
    (void)stream;
#endif
}

/* C (M, N) = alpha A (M, K) B^T + beta C, B (N, K), for M <= 32 rows: a few tokens through a
   weight matrix, as the text encoder's 3 to 32 tokens through 1.2 GB of weights a prompt. A BLAS
   packs each weight panel for those few rows (three passes over 1.2 GB); this reads each weight
   row once, four at a time against up to G rows of A from L1 / L2, so it runs at the memory rate
   (the prefetchers keep four streams busier than one or two, and the next four rows are
   prefetched into L2 meanwhile, so the weights are read once at close to the memory rate).
   Each output is the same sum, in the same order, as a one-row-at-a-time loop would make.
   Returns 0 for the shapes it leaves to sgemm. */
#define SAM3__SMALL_M 32
#ifdef SAM3__SIMD
#if defined(__SSE__)
#define SAM3__PREFETCH_L2(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)
#else
#define SAM3__PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#endif
#define SAM3__SMALL_G (SAM3__VX == 16 ? 6 : 2) /* rows of A a pass: 4 G sums + 5 live in 32 / 16 registers */
static SAM3__INLINE void sam3__gemm_small_rows(const int R, int K, float alpha, const float *A, int lda, const float *const *b, int nb,
                                               float beta, float *C, int ldc, size_t pf) {
    sam3__vx acc[SAM3__SMALL_G][4];
    int m, k, q;
    for (m = 0; m < R; m++)
        for (q = 0; q < 4; q++) acc[m][q] = sam3__vx_set1(0.0f);
    for (k = 0; k + SAM3__VX <= K; k += SAM3__VX) {
        const sam3__vx w0 = sam3__vx_load(b[0] + k), w1 = sam3__vx_load(b[1] + k), w2 = sam3__vx_load(b[2] + k), w3 = sam3__vx_load(b[3] + k);
        /* the next four rows into L2 meanwhile (a prefetch never faults, past the matrix too): one
           core's own misses are too few to reach the memory's rate */
        SAM3__PREFETCH_L2(b[0] + k + pf);
        SAM3__PREFETCH_L2(b[1] + k + pf);
        SAM3__PREFETCH_L2(b[2] + k + pf);
        SAM3__PREFETCH_L2(b[3] + k + pf);
        for (m = 0; m < R; m++) {
            const sam3__vx x = sam3__vx_load(A + (size_t)m * lda + k);
            acc[m][0] = sam3__vx_fmadd(x, w0, acc[m][0]);
            acc[m][1] = sam3__vx_fmadd(x, w1, acc[m][1]);
            acc[m][2] = sam3__vx_fmadd(x, w2, acc[m][2]);
            acc[m][3] = sam3__vx_fmadd(x, w3, acc[m][3]);
        }
    }
    for (m = 0; m < R; m++) {
        const float *x = A + (size_t)m * lda;
        for (q = 0; q < nb; q++) {
            float s0 = sam3__vx_hsum(acc[m][q]);
            int kk;
            for (kk = k; kk < K; kk++) s0 += x[kk] * b[q][kk];
            C[(size_t)m * ldc + q] = alpha * s0 + (beta == 0 ? 0.0f : beta * C[(size_t)m * ldc + q]);
        }
    }
}
static int sam3__gemm_small(sam3_ctx *c, const sam3__gemm_args *g) {
    const int M = g->m, N = g->n, K = g->k, lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    const float alpha = g->alpha, beta = g->beta, *A = g->a, *B = g->b;
    float *C = g->c;
    int jq;
    if (g->ta || !g->tb || M > SAM3__SMALL_M || M <= 0 || N <= 0 || K < 4 * SAM3__VX) return 0;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)M * N * K > 2e5))
    for (jq = 0; jq < (N + 3) / 4; jq++) {
        const int j = 4 * jq, nb = SAM3__MIN(4, N - j);
        const float *b[4];
        int m0, q;
        for (q = 0; q < 4; q++) b[q] = B + (size_t)(j + SAM3__MIN(q, nb - 1)) * ldb; /* past N: the last row again, not stored */
        /* constant row counts, so the sums stay in registers */
        for (m0 = 0; m0 < M; m0 += SAM3__SMALL_G) {
            const float *a = A + (size_t)m0 * lda;
            float *cc = C + (size_t)m0 * ldc + j;
            switch (SAM3__MIN(SAM3__SMALL_G, M - m0)) {
            case 1: sam3__gemm_small_rows(1, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
#if SAM3__VX == 16
            case 2: sam3__gemm_small_rows(2, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
            case 3: sam3__gemm_small_rows(3, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
            case 4: sam3__gemm_small_rows(4, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
            case 5: sam3__gemm_small_rows(5, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
#endif
            default: sam3__gemm_small_rows(SAM3__SMALL_G, K, alpha, a, lda, b, nb, beta, cc, ldc, (size_t)4 * ldb); break;
            }
        }
    }
    return 1;
}
#else
static int sam3__gemm_small(sam3_ctx *c, const sam3__gemm_args *g) {
    (void)c, (void)g;
    return 0;
}
#endif

/* Exact (erf) GELU of x + b, in place: x (rows, d), b (d) or NULL (then any rows x d split).
   By chunks of 256, each prefetching the chunk 4 KB ahead: the loop body is long (~35
   instructions a vector), so the out-of-order window holds only a few of its loads, and on a
   buffer that lives in L3 or DRAM (fc1's output, 98 MB at full size) the pass would run at about
   a third of its in-cache speed without the prefetch. */
static void sam3__gelu_bias(sam3_ctx *c, float *x, size_t rows, int d, const float *b) {
    const size_t n = rows * (size_t)d, nb = (n + 255) / 256;
    ptrdiff_t blk;
    (void)c; /* only in OpenMP clauses */
#if defined(SAM3__KREF)
    (void)nb;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n) >= SAM3__PAR_MIN))
    for (blk = 0; blk < (ptrdiff_t)rows; blk++) sam3__ref_gelu_bias(x + (size_t)blk * d, 1, d, b);
#else
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n) >= SAM3__PAR_MIN))
    for (blk = 0; blk < (ptrdiff_t)nb; blk++) {
        const size_t i0 = (size_t)blk * 256, i1 = SAM3__MIN(n, i0 + 256);
        size_t i = i0, j;
        for (j = i0 + 1024; j < i1 + 1024 && j < n; j += 16) SAM3__PREFETCHW(x + j);
        while (i < i1) { /* runs inside one row */
            const size_t col = b ? i % (size_t)d : 0, e = b ? SAM3__MIN(i1, i + ((size_t)d - col)) : i1;
            j = i;
#ifdef SAM3__SIMD
            if (b)
                for (; j + SAM3__VX <= e; j += SAM3__VX)
                    sam3__vx_store(x + j, sam3__vx_gelu(sam3__vx_add(sam3__vx_load(x + j), sam3__vx_load(b + col + (j - i)))));
            else
                for (; j + SAM3__VX <= e; j += SAM3__VX) sam3__vx_store(x + j, sam3__vx_gelu(sam3__vx_load(x + j)));
#endif
            for (; j < e; j++) {
                const float v = b ? x[j] + b[col + (j - i)] : x[j];
                x[j] = 0.5f * v * (1.0f + sam3__ferf(v * 0.70710678118654752f));
            }
            i = e;
        }
    }
#endif
}
/* GELU(x + b) over one row of n values in place (b NULL: none), on the calling thread, with
   sam3__gelu_bias's arithmetic: for sam3__gemm_bf16_gelu's tiles. */
static void sam3__gelu_bias_row(float *x, int n, const float *b) {
#if defined(SAM3__KREF)
    sam3__ref_gelu_bias(x, 1, n, b);
#else
    int j = 0;
#ifdef SAM3__SIMD
    if (b)
        for (; j + SAM3__VX <= n; j += SAM3__VX) sam3__vx_store(x + j, sam3__vx_gelu(sam3__vx_add(sam3__vx_load(x + j), sam3__vx_load(b + j))));
    else
        for (; j + SAM3__VX <= n; j += SAM3__VX) sam3__vx_store(x + j, sam3__vx_gelu(sam3__vx_load(x + j)));
#endif
    for (; j < n; j++) {
        const float v = b ? x[j] + b[j] : x[j];
        x[j] = 0.5f * v * (1.0f + sam3__ferf(v * 0.70710678118654752f));
    }
#endif
}
/* y = 1 / (1 + exp(-x)) over n values, on the calling thread. */
static void sam3__sigmoid_row(const float *x, float *y, size_t n) {
    size_t j = 0;
#if defined(SAM3__KREF)
    (void)j;
    sam3__ref_sigmoid_row(x, y, n);
#else
#if defined(SAM3__SIMD)
    for (; j + SAM3__VX <= n; j += SAM3__VX) {
        const sam3__vx one = sam3__vx_set1(1.0f);
        sam3__vx_store(y + j, sam3__vx_div(one, sam3__vx_add(one, sam3__vx_exp(sam3__vx_sub(sam3__vx_set1(0.0f), sam3__vx_load(x + j))))));
    }
#endif
    for (; j < n; j++) y[j] = 1.0f / (1.0f + sam3__fexp(-x[j]));
#endif
}
/* A linear layer followed by ReLU, the bias added in the ReLU's pass: y (n, out) = max(x W^T + b, 0).
   A pass fewer over the hidden map (42 MB in each DETR encoder layer's MLP). */
static void sam3__linear_relu(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int out, float *y) {
    int i;
    sam3__gemm_xw(c, 0, 1, n, out, in, x, in, l, 0, in, 0.0f, y, out);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n * out) >= SAM3__PAR_MIN))
    for (i = 0; i < n; i++) {
        float *r = y + (size_t)i * out;
        int j;
        if (l->b)
            for (j = 0; j < out; j++) {
                const float v = r[j] + l->b[j];
                r[j] = v > 0 ? v : 0;
            }
        else
            for (j = 0; j < out; j++) r[j] = r[j] > 0 ? r[j] : 0;
    }
}
static void sam3__vadd(sam3_ctx *c, float *y, const float *x, size_t n) {
    ptrdiff_t i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n) >= SAM3__PAR_MIN))
    for (i = 0; i < (ptrdiff_t)n; i++) y[i] += x[i];
}
/* y (rows, d) += x + b: a linear layer's bias (b (d) or NULL) added with its residual in one pass */
static void sam3__vadd_bias(sam3_ctx *c, float *y, const float *x, const float *b, int rows, int d) {
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(rows * d) >= SAM3__PAR_MIN))
    for (i = 0; i < rows; i++) {
        float *yr = y + (size_t)i * d;
        const float *xr = x + (size_t)i * d;
        int j;
        if (b)
            for (j = 0; j < d; j++) yr[j] += xr[j] + b[j];
        else
            for (j = 0; j < d; j++) yr[j] += xr[j];
    }
}
/* The output projection of an attention or MLP: y = x W^T + b, or with res, y = x W^T and then
   res += y + b, the bias riding on the residual's pass (bit for bit the same sums as y + b, then
   res + y: one pass over y fewer, 5184 x 256 in the DETR encoder's three a layer). */
static void sam3__linear_res(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int out, float *y, float *res) {
    if (!res) {
        sam3__linear(c, x, n, in, l, out, y);
        return;
    }
    sam3__gemm_xw(c, 0, 1, n, out, in, x, in, l, 0, in, 0.0f, y, out);
    sam3__vadd_bias(c, res, y, l->b, n, out);
}

/* Softmax over each of nh rows of n, one after another in r (a query's scores for each head).
   The exps run over all nh n values in one vector loop: rows of a few keys (the tracker's
   image-to-token attentions: 8 heads of 8) rarely fill a vector on their own. */
static void sam3__softmax_rows(float *r, int nh, int n) {
    int h, j;
#if defined(SAM3__KREF)
    (void)j;
    for (h = 0; h < nh; h++) sam3__ref_softmax_row(r + (size_t)h * n, n);
#else
    const int m = nh * n;
    for (h = 0; h < nh; h++) {
        float *x = r + (size_t)h * n, mx = -FLT_MAX;
        SAM3__OMP_SIMD_MAX(mx)
        for (j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
        for (j = 0; j < n; j++) x[j] -= mx;
    }
    SAM3__OMP(simd)
    for (j = 0; j < m; j++) r[j] = sam3__fexp(r[j]);
    for (h = 0; h < nh; h++) {
        float *x = r + (size_t)h * n, sum = 0, inv;
        SAM3__OMP(simd reduction(+:sum))
        for (j = 0; j < n; j++) sum += x[j];
        inv = 1.0f / sum;
        for (j = 0; j < n; j++) x[j] *= inv;
    }
#endif
}

/* A row of nh groups of n scores s (the few-keys attention's): x = (s + cb) scale, then each
   group's softmax, in place. The whole row's exponentials and scalings as single passes over it,
   with each group's maximum and 1 / sum spread over a row mb (nh n), where nh n <= SAM3__SMG_MAX
   (else group by group). */
#define SAM3__SMG_MAX 512
static void sam3__softmax_groups(float *r, const float *cb, float scale, int nh, int n) {
    const int m = nh * n;
    int h, j;
#if defined(SAM3__KREF)
    for (j = 0; j < m; j++) r[j] = (r[j] + cb[j]) * scale;
    for (h = 0; h < nh; h++) sam3__ref_softmax_row(r + (size_t)h * n, n);
#else
    float mb[SAM3__SMG_MAX]; /* (nh n) */
    if (m > SAM3__SMG_MAX) {
        for (j = 0; j < m; j++) r[j] = (r[j] + cb[j]) * scale;
        sam3__softmax_rows(r, nh, n);
        return;
    }
    SAM3__OMP(simd)
    for (j = 0; j < m; j++) r[j] = (r[j] + cb[j]) * scale;
    for (h = 0; h < nh; h++) {
        const float *x = r + (size_t)h * n;
        float mx = x[0];
        for (j = 1; j < n; j++) mx = x[j] > mx ? x[j] : mx;
        for (j = 0; j < n; j++) mb[h * n + j] = mx;
    }
    SAM3__OMP(simd)
    for (j = 0; j < m; j++) r[j] = sam3__fexp(r[j] - mb[j]);
    for (h = 0; h < nh; h++) {
        const float *x = r + (size_t)h * n;
        float sum = 0, inv;
        for (j = 0; j < n; j++) sum += x[j];
        inv = 1.0f / sum;
        for (j = 0; j < n; j++) mb[h * n + j] = inv;
    }
    SAM3__OMP(simd)
    for (j = 0; j < m; j++) r[j] *= mb[j];
#endif
}

/* ---- attention: the fast kernel (GCC and clang; SAM3_NO_FAST_ATTENTION or SAM3_REFERENCE_KERNELS: the reference) ---- */
#if defined(__GNUC__) && !defined(SAM3_NO_FAST_ATTENTION) && !defined(SAM3__KREF)
/* Attention without BLAS. Per (head, block of 4 MR query rows) task, by blocks of keys: scores
   from K packed once into zero-padded panels of 2 VW keys (register tiles of MR rows x 2 vectors
   of keys, one pass over the head dim), an online softmax without the normalising pass, then P.V
   for the same rows (tiles of MR rows x 2 vectors of the head dim), scaled by 1/sum at the end
   (sam3__attn_rows). Only the query rows are packed per task, and a block's scores stay in
   L1/L2. Per-block BLAS calls spend most of their time packing K and V for head dims of 16..64,
   so this runs at more than twice their rate. */
#define SAM3__FAST_ATTENTION 1
#if defined(SAM3__KAVX512)
#define SAM3__VW 16 /* floats per vector */
#define SAM3__MR 8  /* query rows per register tile: MR x 2 accumulators + 3 live = 19 of 32 registers */
#else
#define SAM3__VW 8
#define SAM3__MR 4  /* 8 + 3 of 16 registers */
#endif
typedef float sam3__vf __attribute__((vector_size(SAM3__VW * sizeof(float))));
/* Register tiles: loads and stores through an unaligned, may-alias variant of the type (as the
   intrinsics' __m512_u), and the tiles' row loops unrolled whole. With memcpy and rolled loops GCC
   kept the tiles in stack arrays around every panel and copied 64-byte vectors as two 32-byte
   halves, so loading a tile back read across two stores, which Intel cores do not forward (each
   such load waited for both stores to retire). Macros: a 64-byte vector passed or returned by
   value is an ABI warning (-Wpsabi) without AVX-512. */
#define SAM3__UNROLL_MR _Pragma("GCC unroll 16")
typedef float sam3__vfu __attribute__((vector_size(SAM3__VW * sizeof(float)), aligned(4), may_alias));
#define SAM3__VF_LOAD(p) (*(const sam3__vfu *)(const void *)(p))
#define SAM3__VF_STORE(p, x) (*(sam3__vfu *)(void *)(p) = (x))
static const sam3__vf sam3__vf_zero = {0};
/* a[MR][2] (declared by the caller, with int d, r) = q . k for one panel of 2 VW keys: qp (hd, MR)
   holds the MR query rows transposed (zeros for missing rows), kp (hd, 2 VW) the panel's keys,
   transposed. A macro, so that the tile stays in the caller's registers. */
#define SAM3__QK_TILE(a, qp, kp, hd)                                                                       \
    do {                                                                                                   \
        SAM3__UNROLL_MR                                                                                    \
        for (r = 0; r < SAM3__MR; r++) (a)[r][0] = (a)[r][1] = sam3__vf_zero;                              \
        for (d = 0; d < (hd); d++) {                                                                       \
            const float *qd_ = (qp) + (size_t)d * SAM3__MR;                                                \
            const sam3__vf k0_ = SAM3__VF_LOAD((kp) + (size_t)d * 2 * SAM3__VW),                           \
                           k1_ = SAM3__VF_LOAD((kp) + (size_t)d * 2 * SAM3__VW + SAM3__VW);                \
            SAM3__UNROLL_MR                                                                                \
            for (r = 0; r < SAM3__MR; r++) {                                                               \
                (a)[r][0] += qd_[r] * k0_;                                                                 \
                (a)[r][1] += qd_[r] * k1_;                                                                 \
            }                                                                                              \
        }                                                                                                  \
    } while (0)
/* s (MR, 2 VW; stride lds) = scale * q . k for one panel (SAM3__QK_TILE). */
static SAM3__CONTRACT void sam3__qk_panel(const float *qp, const float *kp, int hd, float scale, float *s, int lds) {
    sam3__vf a[SAM3__MR][2];
    int d, r;
    SAM3__QK_TILE(a, qp, kp, hd);
    SAM3__UNROLL_MR
    for (r = 0; r < SAM3__MR; r++) {
        a[r][0] *= scale;
        a[r][1] *= scale;
        SAM3__VF_STORE(s + (size_t)r * lds, a[r][0]);
        SAM3__VF_STORE(s + (size_t)r * lds + SAM3__VW, a[r][1]);
    }
}
#if defined(SAM3__EXP2_ROW) && SAM3__VW == 16
#define SAM3__FUSED_EXP 1
/* The probabilities straight from the products for one panel, once the rows' maxima are known
   (sam3__attn_rows): s (MR, 2 VW; stride lds) = exp(scale q . k - m_r) = 2^(q . k c1 + nml_r),
   c1 = scale log2(e), nml_r = -m_r log2(e), and sv (MR, VW) += their sums by lane. The scale
   and the offset ride in the exponential's one fma, and the scores are neither stored, read for
   their maximum nor read again for the exponential: 73 vector operations a vector of 16 keys
   (hd 32) where separate passes for the maximum and the exponential take 75 plus the scores'
   stores and loads, on the ports that also run the products. */
static SAM3__CONTRACT void sam3__qk_exp_panel(const float *qp, const float *kp, int hd, float c1, const float *nml, float *s, int lds,
                                              float *sv) {
    sam3__vf a[SAM3__MR][2];
    int d, r;
    SAM3__QK_TILE(a, qp, kp, hd);
    SAM3__UNROLL_MR
    for (r = 0; r < SAM3__MR; r++) {
        const __m512 vc = _mm512_set1_ps(c1), vn = _mm512_set1_ps(nml[r]);
        const __m512 e0 = sam3__vx_exp2_row(_mm512_fmadd_ps((__m512)a[r][0], vc, vn));
        const __m512 e1 = sam3__vx_exp2_row(_mm512_fmadd_ps((__m512)a[r][1], vc, vn));
        SAM3__VF_STORE(s + (size_t)r * lds, (sam3__vf)e0);
        SAM3__VF_STORE(s + (size_t)r * lds + SAM3__VW, (sam3__vf)e1);
        SAM3__VF_STORE(sv + (size_t)r * SAM3__VW, SAM3__VF_LOAD(sv + (size_t)r * SAM3__VW) + (sam3__vf)_mm512_add_ps(e0, e1));
    }
}
#endif
/* acc (MR, hd) += p[:, j0:j1] (rows of stride ps) . v[j0:j1] (nk, hd) for one tile of MR rows;
   rows of p past the real ones are finite (zeros or a real row) and their sums never stored. */
static SAM3__CONTRACT void sam3__pv_acc(const float *p, int ps, int j0, int j1, const float *v, int hd, float *acc) {
    int c0 = 0, j, r, d;
    for (; c0 + 2 * SAM3__VW <= hd; c0 += 2 * SAM3__VW) {
        sam3__vf a[SAM3__MR][2];
        SAM3__UNROLL_MR
        for (r = 0; r < SAM3__MR; r++) {
            a[r][0] = SAM3__VF_LOAD(acc + (size_t)r * hd + c0);
            a[r][1] = SAM3__VF_LOAD(acc + (size_t)r * hd + c0 + SAM3__VW);
        }
        for (j = j0; j < j1; j++) {
            sam3__vf v0, v1;
            v0 = SAM3__VF_LOAD(v + (size_t)j * hd + c0);
            v1 = SAM3__VF_LOAD(v + (size_t)j * hd + c0 + SAM3__VW);
            SAM3__UNROLL_MR
            for (r = 0; r < SAM3__MR; r++) {
                const float pr = p[(size_t)r * ps + j];
                a[r][0] += pr * v0;
                a[r][1] += pr * v1;
            }
        }
        SAM3__UNROLL_MR
        for (r = 0; r < SAM3__MR; r++) {
            SAM3__VF_STORE(acc + (size_t)r * hd + c0, a[r][0]);
            SAM3__VF_STORE(acc + (size_t)r * hd + c0 + SAM3__VW, a[r][1]);
        }
    }
    for (; c0 + SAM3__VW <= hd; c0 += SAM3__VW) {
        sam3__vf a[SAM3__MR];
        SAM3__UNROLL_MR
        for (r = 0; r < SAM3__MR; r++) a[r] = SAM3__VF_LOAD(acc + (size_t)r * hd + c0);
        for (j = j0; j < j1; j++) {
            sam3__vf v0;
            v0 = SAM3__VF_LOAD(v + (size_t)j * hd + c0);
            SAM3__UNROLL_MR
            for (r = 0; r < SAM3__MR; r++) a[r] += p[(size_t)r * ps + j] * v0;
        }
        SAM3__UNROLL_MR
        for (r = 0; r < SAM3__MR; r++) SAM3__VF_STORE(acc + (size_t)r * hd + c0, a[r]);
    }
    for (d = c0; d < hd; d++)
        for (r = 0; r < SAM3__MR; r++) {
            float t = acc[(size_t)r * hd + d];
            for (j = j0; j < j1; j++) t += p[(size_t)r * ps + j] * v[(size_t)j * hd + d];
            acc[(size_t)r * hd + d] = t;
        }
}
/* The largest of r[0..n). */
static float sam3__row_max(const float *r, int n) {
    float mx = -FLT_MAX;
    int j = 0;
#ifdef SAM3__SIMD
    {
        /* four chains: with one, each vmax would wait for the last (4 cycles on Intel cores),
           where the scores' products take 4 FMAs a vector */
        sam3__vx v0 = sam3__vx_set1(-FLT_MAX), v1 = v0, v2 = v0, v3 = v0;
        for (; j + 4 * SAM3__VX <= n; j += 4 * SAM3__VX) {
            v0 = sam3__vx_max(v0, sam3__vx_load(r + j));
            v1 = sam3__vx_max(v1, sam3__vx_load(r + j + SAM3__VX));
            v2 = sam3__vx_max(v2, sam3__vx_load(r + j + 2 * SAM3__VX));
            v3 = sam3__vx_max(v3, sam3__vx_load(r + j + 3 * SAM3__VX));
        }
        for (; j + SAM3__VX <= n; j += SAM3__VX) v0 = sam3__vx_max(v0, sam3__vx_load(r + j));
        mx = sam3__vx_hmax(sam3__vx_max(sam3__vx_max(v0, v1), sam3__vx_max(v2, v3)));
    }
    for (; j < n; j++) mx = r[j] > mx ? r[j] : mx;
#else
    SAM3__OMP_SIMD_MAX(mx)
    for (j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
#endif
    return mx;
}
/* r[j] = exp(r[j] - mx) for j < n; returns their sum. */
static SAM3__CONTRACT float sam3__exp_sum(float *r, int n, float mx) {
    float sum = 0;
    int j = 0;
#ifdef SAM3__SIMD
    {
        const sam3__vx vmx = SAM3__EXP_ROW_ARG(mx);
        sam3__vx vs = sam3__vx_set1(0.0f), vs2 = vs;
        for (; j + 2 * SAM3__VX <= n; j += 2 * SAM3__VX) { /* two sums: the adds' latency */
            const sam3__vx e0 = sam3__vx_exp_row(sam3__vx_load(r + j), vmx);
            const sam3__vx e1 = sam3__vx_exp_row(sam3__vx_load(r + j + SAM3__VX), vmx);
            sam3__vx_store(r + j, e0);
            sam3__vx_store(r + j + SAM3__VX, e1);
            vs = sam3__vx_add(vs, e0);
            vs2 = sam3__vx_add(vs2, e1);
        }
        for (; j + SAM3__VX <= n; j += SAM3__VX) {
            const sam3__vx e = sam3__vx_exp_row(sam3__vx_load(r + j), vmx);
            sam3__vx_store(r + j, e);
            vs = sam3__vx_add(vs, e);
        }
        sum = sam3__vx_hsum(sam3__vx_add(vs, vs2));
    }
#endif
    for (; j < n; j++) {
        r[j] = sam3__fexp(r[j] - mx);
        sum += r[j];
    }
    return sum;
}
#define SAM3__ATT_PW (2 * SAM3__VW) /* keys per packed panel */
#define SAM3__ATT_ROWS (4 * SAM3__MR) /* query rows per task: 4 register tiles */
#define SAM3__ATT_KB (16 * SAM3__ATT_PW) /* at most this many keys per block of the online softmax */
#define SAM3__EXP_SUM_MAX 1e20f /* a block's probabilities against an earlier maximum may sum to this */
/* Keys per block for nk keys: equal blocks of whole panels (576 keys: 2 x 288, not 512 + 64). */
static int sam3__att_kb(int nk) {
    const int nbk = (nk + SAM3__ATT_KB - 1) / SAM3__ATT_KB;
    return SAM3__MAX(1, ((nk + nbk - 1) / SAM3__MAX(nbk, 1) + SAM3__ATT_PW - 1) / SAM3__ATT_PW) * SAM3__ATT_PW;
}
/* One task: query rows r0..r1 of one head against its packed keys kh (npan, hd, PW) and values
   vh (nk, hd). qh, oh: the head's first column of q and out. Keys go by blocks of KB with an
   online softmax (Milakov and Gimelshein, 2018): each row keeps its running maximum and sum, and
   its P.V sums are rescaled when a block raises the maximum. All scores of a task at once, (ROWS,
   5184) at the DETR encoder's size, would be 663 KB: with the head's K and V, 2 MB, a server core's
   whole L2. Per block, the 4 tiles of MR query rows go through each key panel and the block's
   values together, so a head's K and V stream from L3 once per 4 MR rows rather than per MR (at
   5184 keys they are 0.7-1.3 MB each). Scratch: s (ROWS, KB) scores, qp (4, hd, MR) query tiles
   transposed, acc (ROWS, hd) P.V sums, sv (ROWS, VW) sums by lane; KB from sam3__att_kb. relh,
   relw: this head's (nq, rel_s) factors or NULL. */
#if (defined(SAM3__BF16_X86) && SAM3__MR == 8) || (defined(SAM3__BF16_ARM) && SAM3__MR == 4)
#define SAM3__ATT_PV_BF16 1
/* acc (MR, hd) += p[:, 0:nb] . v[j0:j0 + nb] with the probabilities and V in bf16 (sums in f32):
   the ViT's P.V where its weight products run in bf16 on AVX512-BF16 without AMX (twice the f32
   rate there) or with BFDOT. The scores stay f32 (bf16 scores cost a full-size click's mask, see
   sam3__attention_packed_bf16); the probabilities lie in [0, 1] and are rounded as the AMX path
   and PyTorch's bf16 attention round them. vb: the head's values as (hd / BNR, nkp / 2, BNR, 2)
   (sam3__v_pack_bf16), hd a multiple of BNR; pb: (MR, nb + 1) bf16 scratch. */
static void sam3__pv_acc_bf16(const float *p, int ps, int nb, const uint16_t *vb, int nkp, int j0, int hd, float *acc, uint16_t *pb) {
    const int nbp = (nb + 1) / 2 * 2; /* whole key pairs: an odd last one pairs with a zero key */
    int r, d;
    for (r = 0; r < SAM3__MR; r++) {
        SAM3__BF16_ROW(p + (size_t)r * ps, pb + (size_t)r * nbp, nb);
        if (nbp > nb) pb[(size_t)r * nbp + nb] = 0;
    }
    for (d = 0; d < hd; d += SAM3__BNR) {
        const uint16_t *v = vb + (size_t)d * nkp + (size_t)j0 * SAM3__BNR; /* the panel of channels d.., from key pair j0 / 2 */
#if defined(SAM3__BF16_X86)
        sam3__btile8_avx512(nbp, pb, v, acc + d, hd, 0.0f, 0);
#else
        sam3__btile4_neon(nbp, pb, nbp, v, acc + d, hd, 0.0f, 0);
        sam3__btile4_neon(nbp, pb, nbp, v + 32, acc + d + 16, hd, 0.0f, 0); /* channels d + 16..: 16 columns of pairs on */
#endif
    }
}
#endif
/* The P.V step of sam3__attn_rows for its ntl tiles: in bf16 where vb is given, else f32. */
static void sam3__pv_tiles(const float *s, int KB, int ntl, int nb, const float *vh, const uint16_t *vb, int nk, int j0, int hd, float *acc,
                           uint16_t *pb) {
    int t;
#if defined(SAM3__ATT_PV_BF16)
    if (vb) {
        for (t = 0; t < ntl; t++)
            sam3__pv_acc_bf16(s + (size_t)t * SAM3__MR * KB, KB, nb, vb, (nk + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, j0, hd,
                              acc + (size_t)t * SAM3__MR * hd, pb);
        return;
    }
#else
    (void)vb, (void)pb, (void)nk;
#endif
    for (t = 0; t < ntl; t++) sam3__pv_acc(s + (size_t)t * SAM3__MR * KB, KB, 0, nb, vh + (size_t)j0 * hd, hd, acc + (size_t)t * SAM3__MR * hd);
}
/* One task of the fast attention: query rows of one head against all its keys, in blocks of KB
   keys (sam3__attn_rows), or all at once on the bf16 tiles (sam3__attn_rows_bf16: kb, vb, qb,
   s, pb and acc). */
typedef struct sam3__attn_job {
    const float *qh;         /* the head's queries, rows ldq apart */
    const float *kh;         /* its keys packed (nk / PW panels, hd, PW) */
    const uint16_t *kb;      /* its keys in bf16 (sam3__rope_pack_bf16), where the tiles run */
    const float *vh;         /* its values (nk, hd), or NULL where vb */
    const uint16_t *vb;      /* its values in bf16 (sam3__v_pack_bf16), or NULL */
    const float *relh, *relw; /* decomposed relative positions (nq, rel_s) each, or NULL */
    const float *tab, *bq;   /* sam3__attn_rows_bf16: the queries' rotation by row (nq, hd) and bias (hd), or NULL */
    float scale;
    int ldq, nk, hd, causal, rel_s, KB;
    int hv; /* the bf16 cross-attention's value channels (hd, or the unprojected values') */
    float *s, *qp, *acc, *sv; /* the task's scratch: scores (ATT_ROWS, KB), query tiles (ntl, hd, MR),
                                 sums (ATT_ROWS, hd), the fused path's partial sums (ATT_ROWS, VW) */
    uint16_t *pb;            /* a tile's probabilities in bf16 (MR, KB + 2), where vb */
    uint16_t *qb;            /* the tiles' query rows, split in bf16 pairs */
    float *oh;               /* the head's output, rows ldo apart */
    int ldo;
#if defined(SAM3_PROFILE)
    double *prof; /* the bf16 attention's time on this thread (sam3_ctx.prof_thr's row), or NULL */
#endif
} sam3__attn_job;

/* The scores of a block's keys j0..j0+nb for the ntl query tiles, into j->s. */
static void sam3__attn_scores(const sam3__attn_job *j, int ntl, int j0, int np) {
    const int PW = SAM3__ATT_PW;
    int jb, t;
    for (jb = 0; jb < np; jb++)
        for (t = 0; t < ntl; t++)
            sam3__qk_panel(j->qp + (size_t)t * j->hd * SAM3__MR, j->kh + ((size_t)j0 / PW + jb) * j->hd * PW, j->hd, j->scale,
                           j->s + (size_t)t * SAM3__MR * j->KB + (size_t)jb * PW, j->KB);
}

/* Row r's maximum raised to bm where that is larger: its earlier sums (and accumulated P.V),
   taken against the smaller maximum, scaled down to the new one. */
static void sam3__attn_raise_max(const sam3__attn_job *j, int r, float bm, float *mx, float *sum) {
    int d;
    if (bm <= mx[r]) return;
    if (mx[r] != -FLT_MAX) {
        const float f = sam3__fexp(mx[r] - bm);
        sum[r] *= f;
        for (d = 0; d < j->hd; d++) j->acc[(size_t)r * j->hd + d] *= f;
    }
    mx[r] = bm;
}

#ifdef SAM3__FUSED_EXP
/* A block past the first without masks or relative positions: every row has a maximum, so its
   probabilities come straight from the products against it (sam3__qk_exp_panel), not raised to
   a later block's maximum. That one is a score of the row's, so its sum already holds a 1 and a
   block's terms that underflow are below 1e-38 of it. A tile with a row whose block sums past
   SAM3__EXP_SUM_MAX (terms up to e^88 stay finite) is redone in two passes, its rows' maxima
   raised as sam3__attn_block does: the sums and the P.V products stay far from the float range,
   and a key far above the rest costs one block twice per tile at worst. */
static void sam3__attn_block_fused(const sam3__attn_job *j, int nr, int ntl, int j0, int nb, float *mx, float *sum) {
    const int PW = SAM3__ATT_PW, np = (nb + PW - 1) / PW, nf = nb / PW; /* panels; full ones (a last, partial one goes the two-pass way) */
    const size_t KB = (size_t)j->KB;
    float nml[SAM3__ATT_ROWS];
    int t, r, d, jb;
    for (r = 0; r < ntl * SAM3__MR; r++) nml[r] = r < nr ? -mx[r] * 1.44269504088896341f : 0.0f;
    memset(j->sv, 0, (size_t)ntl * SAM3__MR * SAM3__VW * sizeof(float));
    for (jb = 0; jb < nf; jb++)
        for (t = 0; t < ntl; t++)
            sam3__qk_exp_panel(j->qp + (size_t)t * j->hd * SAM3__MR, j->kh + ((size_t)j0 / PW + jb) * j->hd * PW, j->hd,
                               j->scale * 1.44269504088896341f, nml + t * SAM3__MR, j->s + (size_t)t * SAM3__MR * KB + (size_t)jb * PW, j->KB,
                               j->sv + (size_t)t * SAM3__MR * SAM3__VW);
    if (nf < np)
        for (t = 0; t < ntl; t++)
            sam3__qk_panel(j->qp + (size_t)t * j->hd * SAM3__MR, j->kh + ((size_t)j0 / PW + nf) * j->hd * PW, j->hd, j->scale,
                           j->s + (size_t)t * SAM3__MR * KB + (size_t)nf * PW, j->KB);
    for (t = 0; t < ntl; t++) {
        const int ra = t * SAM3__MR, rb = SAM3__MIN(nr, ra + SAM3__MR);
        float bs[SAM3__MR];
        int redo = 0;
        for (r = ra; r < rb; r++) {
            float *row = j->s + (size_t)r * KB, b = 0;
            for (d = 0; d < SAM3__VW; d++) b += j->sv[(size_t)r * SAM3__VW + d];
            if (nf < np) b += sam3__exp_sum(row + nf * PW, nb - nf * PW, mx[r]);
            bs[r - ra] = b;
            redo |= !(b <= SAM3__EXP_SUM_MAX);
        }
        if (redo) { /* the tile's block again, two passes */
            for (jb = 0; jb < np; jb++)
                sam3__qk_panel(j->qp + (size_t)t * j->hd * SAM3__MR, j->kh + ((size_t)j0 / PW + jb) * j->hd * PW, j->hd, j->scale,
                               j->s + (size_t)t * SAM3__MR * KB + (size_t)jb * PW, j->KB);
            for (r = ra; r < rb; r++) {
                float *row = j->s + (size_t)r * KB;
                sam3__attn_raise_max(j, r, sam3__row_max(row, nb), mx, sum);
                bs[r - ra] = sam3__exp_sum(row, nb, mx[r]);
            }
        }
        for (r = ra; r < rb; r++) sum[r] += bs[r - ra];
    }
}
#endif

/* A block of keys j0..j0+nb in two passes: the scores (with the causal mask and relative
   positions), each row's maximum raised, then the exponentials' sums against it. */
static void sam3__attn_block(const sam3__attn_job *j, int r0, int nr, int ntl, int j0, int nb, float *mx, float *sum) {
    const int PW = SAM3__ATT_PW;
    int r;
    sam3__attn_scores(j, ntl, j0, (nb + PW - 1) / PW);
    for (r = 0; r < nr; r++) {
        float *row = j->s + (size_t)r * j->KB;
        /* causal: key j > query i gets probability exactly 0, as a -inf mask gives */
        const int lim = j->causal ? SAM3__MAX(0, SAM3__MIN(r0 + r + 1 - j0, nb)) : nb;
        if (j->relh) {
            /* decomposed relative position: key u = ky * S + kx gets rh[ky] + rw[kx] */
            const float *rh = j->relh + (size_t)(r0 + r) * j->rel_s, *rw = j->relw + (size_t)(r0 + r) * j->rel_s;
            int jj = 0, ky = j0 / j->rel_s, kx = j0 % j->rel_s, u;
            for (; jj < lim; ky++, kx = 0) { /* by runs of one key row: the inner loop vectorises */
                const int run = SAM3__MIN(j->rel_s - kx, lim - jj);
                const float a = rh[ky];
                for (u = 0; u < run; u++) row[jj + u] += a + rw[kx + u];
                jj += run;
            }
        }
        if (lim < nb) memset(row + lim, 0, (size_t)(nb - lim) * sizeof(float));
        if (lim == 0) continue;
        sam3__attn_raise_max(j, r, sam3__row_max(row, lim), mx, sum);
        sum[r] += sam3__exp_sum(row, lim, mx[r]);
    }
}

/* Rows r0..r1 of the job's head: the queries packed into tiles, then block by block the scores,
   the running maxima and sums, and the P.V products; the sums divided out at the end. */
static void sam3__attn_rows(const sam3__attn_job *j, int r0, int r1) {
    const int ntl = (r1 - r0 + SAM3__MR - 1) / SAM3__MR, nr = r1 - r0, hd = j->hd;
    float mx[SAM3__ATT_ROWS], sum[SAM3__ATT_ROWS];
    int t, j0, r, d;
    const uint64_t fpmode = sam3__ftz_enter(); /* sam3__ftz_enter says why */
    for (t = 0; t < ntl; t++)
        for (d = 0; d < hd; d++)
            for (r = 0; r < SAM3__MR; r++) {
                const int i = r0 + t * SAM3__MR + r;
                j->qp[((size_t)t * hd + d) * SAM3__MR + r] = i < r1 ? j->qh[(size_t)i * j->ldq + d] : 0.0f;
            }
    for (r = 0; r < nr; r++) mx[r] = -FLT_MAX, sum[r] = 0;
    /* rows past nr hold the zero query's scores: finite, never stored */
    memset(j->acc, 0, (size_t)ntl * SAM3__MR * hd * sizeof(float));
    for (j0 = 0; j0 < j->nk; j0 += j->KB) {
        const int nb = SAM3__MIN(j->KB, j->nk - j0); /* keys in the block */
#ifdef SAM3__FUSED_EXP
        if (j0 > 0 && !j->causal && !j->relh) sam3__attn_block_fused(j, nr, ntl, j0, nb, mx, sum);
        else
#endif
            sam3__attn_block(j, r0, nr, ntl, j0, nb, mx, sum);
        sam3__pv_tiles(j->s, j->KB, ntl, nb, j->vh, j->vb, j->nk, j0, hd, j->acc, j->pb);
    }
    for (r = 0; r < nr; r++) {
        float *o = j->oh + (size_t)(r0 + r) * j->ldo;
        const float inv = 1.0f / sum[r];
        for (d = 0; d < hd; d++) o[d] = j->acc[(size_t)r * hd + d] * inv;
    }
    sam3__ftz_leave(fpmode);
}

/* An attention of a few keys (the text encoder's, 5 x 5 a head) directly, one (head, query) at a
   time on the calling thread, as sam3__ref_attention with its dot products vectorised: the
   blocked path's key panels, query tiles and scratch (keys padded to a whole panel) cost several
   times all of its products there. nk <= SAM3__ATT_TINY_NK, hd <= SAM3__ATT_TINY_HD, no bias. */
#define SAM3__ATT_TINY_NK 16
#define SAM3__ATT_TINY_HD 256
static void sam3__attention_tiny(const sam3__attn_args *at) {
    const int nk = at->nk, hd = at->hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float p[SAM3__ATT_TINY_NK], o[SAM3__ATT_TINY_HD]; /* a row's probabilities, its output */
    int h, i, j, d;
    for (h = 0; h < at->nh; h++)
        for (i = 0; i < at->nq; i++) {
            const int lim = at->causal ? SAM3__MIN(i + 1, nk) : nk;
            const float *qi = at->q + (size_t)i * at->ldq + (size_t)h * hd;
            float *oi = at->out + (size_t)i * at->ldo + (size_t)h * hd; /* may be qi: written last */
            float mx = -FLT_MAX, inv;
            for (j = 0; j < lim; j++) {
                const float *kj = at->k + (size_t)j * at->ldk + (size_t)h * hd;
                sam3__vx acc = sam3__vx_set1(0.0f);
                float s;
                for (d = 0; d + SAM3__VX <= hd; d += SAM3__VX) acc = sam3__vx_fmadd(sam3__vx_load(qi + d), sam3__vx_load(kj + d), acc);
                s = sam3__vx_hsum(acc);
                for (; d < hd; d++) s += qi[d] * kj[d];
                p[j] = s * scale;
                mx = p[j] > mx ? p[j] : mx;
            }
            inv = 1.0f / sam3__exp_sum(p, lim, mx);
            for (d = 0; d < hd; d++) o[d] = 0;
            for (j = 0; j < lim; j++) {
                const float *vj = at->v + (size_t)j * at->ldv + (size_t)h * hd, pj = p[j];
                for (d = 0; d < hd; d++) o[d] += pj * vj[d];
            }
            for (d = 0; d < hd; d++) oi[d] = o[d] * inv;
        }
}

/* One attention (DETR, CLIP, SAM 1 and the heads), K and V packed here first: the ViT's go
   through sam3__attention_packed, packed by the passes that produce them. */
static sam3_result sam3__attention_fast(sam3_ctx *c, const sam3__attn_args *at) {
    const int nq = at->nq, nk = at->nk, nh = at->nh, hd = at->hd;
    sam3__mark mk;
    const float scale = 1.0f / sqrtf((float)hd);
    const int PW = SAM3__ATT_PW, rows = SAM3__ATT_ROWS, nblk = (nq + rows - 1) / rows;
    const int npan = (nk + PW - 1) / PW, nkp = npan * PW;
    const int kb = sam3__att_kb(nk);
    const size_t per_thr = (size_t)rows * kb + (size_t)rows * hd * 2 + (size_t)rows * SAM3__VW; /* scores, query tiles, sums */
    float *kt, *vp, *sbuf;
    if (nk >= 1 && nk <= SAM3__ATT_TINY_NK && hd <= SAM3__ATT_TINY_HD && !at->relh && sam3__attn_flops(at) < 2 * SAM3__PAR_MIN) {
        sam3__count(c, sam3__attn_flops(at));
        sam3__attention_tiny(at);
        return SAM3_OK;
    }
    mk = sam3__mark_get(c);
    kt = sam3__sallocf(c, (size_t)nh * nkp * hd);        /* (nh, npan, hd, PW) key panels, zero-padded */
    vp = sam3__sallocf(c, (size_t)nh * nk * hd);         /* (nh, nk, hd) values per head, contiguous */
    sbuf = sam3__sallocf(c, (size_t)c->nt * per_thr);
    if (!kt || !vp || !sbuf) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, sam3__attn_flops(at));
    /* a small attention with more keys than sam3__attention_tiny takes on the calling thread
       too: a team's fork and two joins cost more than all of it */
    SAM3__OMP(parallel num_threads(c->nt) if(sam3__attn_flops(at) >= 2 * SAM3__PAR_MIN))
    {
        float *s = sam3__thread_slice(sbuf, per_thr); /* (rows, KB) scores */
        float *qp = s + (size_t)rows * kb;   /* (4, hd, MR) query tiles, transposed */
        float *acc = qp + (size_t)rows * hd; /* (rows, hd) P.V sums */
        float *sv = acc + (size_t)rows * hd;  /* (rows, VW) */
        int task, h;
        /* Keys as panels of PW keys, each (hd, PW) contiguous: a tile's pass over a panel reads
           8 KB in order. With K transposed whole, (hd, nkp), that pass touched hd rows 20 KB
           apart (at 5184 keys), more streams than the prefetchers follow: Q.K waited on loads.
           Keys in contiguous runs a thread, each key's row read whole and in order:
           packed into its panel for every head, its values copied per head (a strided V, rows
           1-4 KB apart, made the P.V loop wait on the TLB; so did per-head packing tasks). */
        SAM3__OMP(for schedule(dynamic, 64))
        for (task = 0; task < nkp; task++) {
            const int jb = task / PW, jr = task % PW;
            const float *ks = at->k + (size_t)task * at->ldk, *vs = at->v + (size_t)task * at->ldv;
            int d;
            for (h = 0; h < nh; h++) {
                float *dst = kt + ((size_t)h * npan + jb) * hd * PW + jr;
                if (task < nk) {
                    for (d = 0; d < hd; d++) dst[(size_t)d * PW] = ks[(size_t)h * hd + d];
                    memcpy(vp + ((size_t)h * nk + task) * hd, vs + (size_t)h * hd, (size_t)hd * sizeof(float));
                } else {
                    for (d = 0; d < hd; d++) dst[(size_t)d * PW] = 0;
                }
            }
        }
        /* Head-major tasks: the threads working at the same time share one head's K and V. */
        SAM3__OMP(for schedule(dynamic, 1))
        for (task = 0; task < nh * nblk; task++) {
            const int hh = task / nblk, r0 = (task % nblk) * rows, r1 = SAM3__MIN(nq, r0 + rows);
            sam3__attn_job jb;
            memset(&jb, 0, sizeof(jb));
            jb.qh = at->q + (size_t)hh * hd, jb.ldq = at->ldq, jb.kh = kt + (size_t)hh * nkp * hd, jb.vh = vp + (size_t)hh * nk * hd;
            jb.relh = at->relh ? at->relh + (size_t)hh * nq * at->rel_s : NULL;
            jb.relw = at->relw ? at->relw + (size_t)hh * nq * at->rel_s : NULL, jb.rel_s = at->rel_s;
            jb.nk = nk, jb.hd = hd, jb.scale = scale, jb.causal = at->causal, jb.KB = kb;
            jb.s = s, jb.qp = qp, jb.acc = acc, jb.sv = sv, jb.oh = at->out + (size_t)hh * hd, jb.ldo = at->ldo;
            sam3__attn_rows(&jb, r0, r1);
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* nb self-attentions of n tokens (ViT windows, or one global) over K and V already packed by
   the passes that produced them (sam3__rope_pack, sam3__v_pack): kt (nb, nh, npan, hd, PW) and
   vp (nb, nh, n, hd). All batches' tasks in one loop, batch-major so that the threads working
   at the same time share a batch's K and V: packing a window at a time (as sam3__attention_fast
   does) costs a pass over K and V and two joins a window, a large share of a window layer's
   attention. The output over ra->q, as sam3__ref_attention_packed; values vp, or vb in bf16
   (sam3__v_pack_bf16: then vp is not read). */
static sam3_result sam3__attention_packed_fast(sam3_ctx *c, const sam3__rope_args *ra, const float *kt, const float *vp, const uint16_t *vb) {
    const int nb = ra->nb, n = ra->nk, nh = ra->nh, hd = ra->hd, ldq = ra->ld, ldo = ra->ld;
    const float *q = ra->q;
    float *out = ra->q; /* each task reads only the query rows it writes */
    sam3__mark mk = sam3__mark_get(c);
    const float scale = 1.0f / sqrtf((float)hd);
    const int PW = SAM3__ATT_PW, rows = SAM3__ATT_ROWS, nblk = (n + rows - 1) / rows, nkp = (n + PW - 1) / PW * PW;
    const int kb = sam3__att_kb(n), nkb = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR; /* vb's keys a head */
    /* scores, query tiles, sums, and with vb a tile's probabilities in bf16 (MR, kb + 1) */
    const size_t per_thr = (size_t)rows * kb + (size_t)rows * hd * 2 + (size_t)rows * SAM3__VW + (vb ? (size_t)SAM3__MR * (kb + 2) / 2 : 0);
    float *sbuf = sam3__sallocf(c, (size_t)c->nt * per_thr);
    int task;
    if (!sbuf) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, 4.0 * nb * nh * hd * n * n);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
    for (task = 0; task < nb * nh * nblk; task++) {
        const int bh = task / nblk, bt = bh / nh, hh = bh % nh, r0 = (task % nblk) * rows, r1 = SAM3__MIN(n, r0 + rows);
        float *s = sam3__thread_slice(sbuf, per_thr);
        float *qp = s + (size_t)rows * kb, *acc = qp + (size_t)rows * hd, *sv = acc + (size_t)rows * hd;
        uint16_t *pb = vb ? (uint16_t *)(void *)(sv + (size_t)rows * SAM3__VW) : NULL;
        sam3__attn_job jb;
        memset(&jb, 0, sizeof(jb));
        jb.qh = q + (size_t)bt * n * ldq + (size_t)hh * hd, jb.ldq = ldq, jb.kh = kt + (size_t)bh * nkp * hd;
        jb.vh = vb ? NULL : vp + (size_t)bh * n * hd, jb.vb = vb ? vb + (size_t)bh * nkb * hd : NULL;
        jb.nk = n, jb.hd = hd, jb.scale = scale, jb.KB = kb;
        jb.s = s, jb.qp = qp, jb.acc = acc, jb.sv = sv, jb.pb = pb, jb.oh = out + (size_t)bt * n * ldo + (size_t)hh * hd, jb.ldo = ldo;
        sam3__attn_rows(&jb, r0, r1);
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
#if defined(SAM3__BF16_VEC)
#define SAM3__ATT_BF16 1
/* The ViT's self-attention with bf16 products (AMX tiles, through the bf16 GEMM's tile kernels),
   where its weight products run in bf16: AMX makes those several times faster than f32, and the
   f32 attention would then take most of the encoder's time. The scores need more than
   bf16: an error of 2^-8 |s| in a score of 30 is 0.1 in its exponent, and with q and k rounded
   to bf16 (as PyTorch's bf16 attention does) a full-size click's mask fell to IoU 0.93 against
   fp32. So q and k are split into bf16 pairs, x = hi + lo, and the scores summed from
   q_hi k_hi + q_hi k_lo + q_lo k_hi (an error of ~2^-16 |s|) in one product of 3 hdp k: q as
   [hi, hi, lo], k as [hi, lo, hi]. The probabilities are rounded to bf16 for P.V, V too, sums in
   f32. One task: BMR query rows of a head against all its n keys at once: scores (BMR, nkp) f32
   and probabilities (BMR, nkp) bf16 are 1 MB at 5184 keys, in a server core's L2, and the softmax
   is exact (no online rescaling). kh: the head's keys as B panels (nkp / BNR, 3 hdp / 2, BNR, 2)
   (sam3__rope_pack_bf16), vh: its values as (hdp / BNR, nkp / 2, BNR, 2) (sam3__v_pack_bf16),
   nkp = n rounded up to BNR, hdp = hd rounded up to the tiles' 32 k, zero past n and hd.
   Scratch: qb (BMR, 3 hdp) bf16, s (BMR, nkp), p (BMR, nkp) bf16, acc (BMR, hdp). */
static void sam3__rope_row(float *r, const float *b, const float *cs, int C, int hd);
/* Query row qr (hd), with its bias bq (hd) and rotation cs (hd) where not NULL, as sam3__rope_row
   would apply them in place, times scale into its split bf16 row qr3 (3 hdp: [hi, hi, lo], zero
   past hd), as sam3__attn_rows_bf16 takes it; t (hdp) scratch. Rotated here, q is read once where
   a pass of its own would read and write all of it once more. */
static void sam3__q_split_bf16(const float *qr, const float *bq, const float *cs, float scale, int hd, int hdp, float *t, uint16_t *qr3) {
    int d;
    if (bq || cs) {
        memcpy(t, qr, (size_t)hd * sizeof(float));
        sam3__rope_row(t, bq, cs, hd, hd);
        qr = t;
    }
    for (d = 0; d < hdp; d++) t[d] = d < hd ? qr[d] * scale : 0.0f;
    SAM3__BF16_ROW(t, qr3, hdp);
    memcpy(qr3 + hdp, qr3, (size_t)hdp * sizeof(uint16_t));
    for (d = 0; d < hdp; d++) t[d] -= sam3__bf16_f32(qr3[d]); /* exact: the low half of each value */
    SAM3__BF16_ROW(t, qr3 + 2 * hdp, hdp);
}
/* A whole BMR x BNR tile, C = op(A) op(B) (C not read), or C += op(A) op(B) with add, with kernel
   kern (AVX512-BF16 or AMX, the tile state already configured): for the bf16 attention. */
static void sam3__btile(int kern, int kcp, const uint16_t *pa, int tiles, const uint16_t *pb, float *C, int ldc, int add) {
#if defined(SAM3__BF16_AMX)
    if (kern == SAM3__BK_AMX) {
        sam3__btile_amx(kcp, pa, tiles ? (size_t)16 * kcp : 0, pb, C, ldc, SAM3__BMR, SAM3__BNR, 0.0f, !add, NULL, NULL, 0);
        return;
    }
#endif
    (void)kern, (void)tiles; /* only AMX takes A as tiles */
    SAM3__BTILE_VEC(kcp, pa, pb, C, ldc, SAM3__BMR, SAM3__BNR, 0.0f, !add);
}
/* Row r of the probabilities P (BMR, kc) bf16 from key k0 (a multiple of 32) on: the first nv of
   row (f32) rounded, zero past them (padded keys, or rows past the task's: probability 0). As
   rows of kc (tiles 0) or, for AMX, as sam3__bgemm_pack_a's A tiles (SAM3__ATILE): row r % 16 of
   tile (r / 16, k / 32), each tile 1 KB of its own, so that a tile load takes 16 consecutive cache
   lines, not 16 lines a row of kc keys apart. */
static void sam3__p_row_bf16(const float *row, int nv, int kc, int r, int tiles, uint16_t *p, int k0) {
    if (!tiles) {
        uint16_t *pr = p + (size_t)r * kc;
        const int e = SAM3__MAX(nv, k0);
        if (nv > k0) SAM3__BF16_ROW(row + k0, pr + k0, nv - k0);
        if (kc > e) memset(pr + e, 0, (size_t)(kc - e) * sizeof(uint16_t));
        return;
    }
    for (; k0 < kc; k0 += 32) { /* 32 at a time, rounded as one call over the row rounds them */
        uint16_t *pr = p + SAM3__ATILE(r, k0, (size_t)16 * kc);
        const int nn = SAM3__MAX(0, SAM3__MIN(32, nv - k0));
        if (nn) SAM3__BF16_ROW(row + k0, pr, nn);
        if (nn < 32) memset(pr + nn, 0, (size_t)(32 - nn) * sizeof(uint16_t));
    }
}
/* sam3__exp_sum(row, nv, mx) then sam3__p_row_bf16(row, nv, kc, r, tiles, p, 0) in one pass where
   32 keys fit: each 32 exponentials rounded and stored into P from registers, not stored as f32
   and read back. The same values in the same sums' order, so the same P and the same sum; the f32
   row holds the exponentials only past the last whole 32. */
#if defined(SAM3__BF16_X86) && defined(SAM3__EXP2_ROW)
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static SAM3__CONTRACT float sam3__exp_p_bf16(float *row, int nv, float mx, int kc, int r, int tiles, uint16_t *p) {
    const __m512 vmx = SAM3__EXP_ROW_ARG(mx);
    __m512 vs = _mm512_setzero_ps(), vs2 = vs;
    float sum;
    int j = 0;
    for (; j + 32 <= nv; j += 32) { /* sam3__exp_sum's two sums: e0 in vs, e1 in vs2 */
        uint16_t *pr = tiles ? p + SAM3__ATILE(r, j, (size_t)16 * kc) : p + (size_t)r * kc + j;
        const __m512 e0 = sam3__vx_exp_row(_mm512_loadu_ps(row + j), vmx);
        const __m512 e1 = sam3__vx_exp_row(_mm512_loadu_ps(row + j + 16), vmx);
        _mm512_storeu_si512((void *)pr, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
        vs = _mm512_add_ps(vs, e0);
        vs2 = _mm512_add_ps(vs2, e1);
    }
    if (j + 16 <= nv) { /* sam3__exp_sum's one-vector step */
        const __m512 e = sam3__vx_exp_row(_mm512_loadu_ps(row + j), vmx);
        _mm512_storeu_ps(row + j, e);
        vs = _mm512_add_ps(vs, e);
    }
    sum = sam3__vx_hsum(_mm512_add_ps(vs, vs2));
    {
        int i;
        for (i = j + (j + 16 <= nv ? 16 : 0); i < nv; i++) {
            row[i] = sam3__fexp(row[i] - mx);
            sum += row[i];
        }
    }
    sam3__p_row_bf16(row, nv, kc, r, tiles, p, j);
    return sum;
}
/* The row maxima of a BMR x BNR tile of scores s (rows lds apart), its first nv columns, folded
   lane by lane into vm (BMR, 16) while the tile is in L1: the softmax then needs no pass over its
   rows for their maxima (the same maxima: a maximum does not depend on the order). */
#define SAM3__ATT_TILE_MAX 1
SAM3__KTARGET("avx512f") static void sam3__tile_max(const float *s, int lds, int nv, float *vm) {
    const __mmask16 m0 = (__mmask16)(nv >= 16 ? 0xFFFFu : (1u << SAM3__MAX(nv, 0)) - 1);
    const __mmask16 m1 = (__mmask16)(nv >= 32 ? 0xFFFFu : nv <= 16 ? 0u : (1u << (nv - 16)) - 1);
    int r;
    for (r = 0; r < SAM3__BMR; r++) {
        __m512 v = _mm512_loadu_ps(vm + r * 16);
        v = _mm512_mask_max_ps(v, m0, v, _mm512_loadu_ps(s + (size_t)r * lds));
        v = _mm512_mask_max_ps(v, m1, v, _mm512_loadu_ps(s + (size_t)r * lds + 16));
        _mm512_storeu_ps(vm + r * 16, v);
    }
}
#else
static SAM3__CONTRACT float sam3__exp_p_bf16(float *row, int nv, float mx, int kc, int r, int tiles, uint16_t *p) {
    const float sum = sam3__exp_sum(row, nv, mx);
    sam3__p_row_bf16(row, nv, kc, r, tiles, p, 0);
    return sum;
}
#endif
/* Prefetches the first n floats of rows r0..r1 of x (rows ld apart): a head's rows of q are a
   whole token's q, k and v apart (12 KB in the ViT), each in a page of its own, where the
   hardware's prefetchers, which follow a stream within a page, do not reach. */
static void sam3__prefetch_rows(const float *x, size_t ld, int r0, int r1, int n) {
    int r, k;
    for (r = r0; r < r1; r++)
        for (k = 0; k < n; k += 16) SAM3__PREFETCHR(x + (size_t)r * ld + k);
}
#define SAM3__ATT_QPF 4 /* query rows ahead that sam3__attn_rows_bf16 fetches */
static void sam3__attn_rows_bf16(int kern, const sam3__attn_job *jb, int r0, int r1) {
    const int n = jb->nk, hd = jb->hd, ldq = jb->ldq;
    const float *qh = jb->qh, scale = jb->scale;
    uint16_t *qb = jb->qb, *p = jb->pb;
    float *s = jb->s, *acc = jb->acc;
    const int nkp = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, nr = r1 - r0, hdp = (hd + 31) / 32 * 32;
    const int ptiles = kern == SAM3__BK_AMX; /* P as A tiles (sam3__p_row_bf16) */
    float sum[SAM3__BMR];
#if defined(SAM3__ATT_TILE_MAX)
    float vm[SAM3__BMR * 16]; /* (BMR, 16): each row's maxima so far, lane by lane (sam3__tile_max) */
#endif
    int r, j, d;
    const uint64_t fpmode = sam3__ftz_enter(); /* sam3__ftz_enter says why */
#if defined(SAM3_PROFILE)
    double t0 = sam3__prof_now(), dummy[SAM3__PT_N], *pf = jb->prof ? jb->prof : dummy;
#endif
    sam3__prefetch_rows(qh, (size_t)ldq, r0, r0 + SAM3__MIN(nr, SAM3__ATT_QPF), hd);
    for (r = 0; r < SAM3__BMR; r++) { /* the scale folded into q (exact for a power of 2, as hd 64's 1/8) */
        if (r + SAM3__ATT_QPF < nr) sam3__prefetch_rows(qh, (size_t)ldq, r0 + r + SAM3__ATT_QPF, r0 + r + SAM3__ATT_QPF + 1, hd);
        if (r < nr) {
            sam3__q_split_bf16(qh + (size_t)(r0 + r) * ldq, jb->bq, jb->tab ? jb->tab + (size_t)(r0 + r) * hd : NULL, scale, hd, hdp, acc,
                               qb + (size_t)r * SAM3__ATT_KSPLIT * hdp);
        } else {
            memset(qb + (size_t)r * SAM3__ATT_KSPLIT * hdp, 0, (size_t)SAM3__ATT_KSPLIT * hdp * sizeof(uint16_t));
        }
    }
    SAM3__PROF_LAP(pf[SAM3__PT_AQ], t0);
#if defined(SAM3__ATT_TILE_MAX)
    for (j = 0; j < SAM3__BMR * 16; j++) vm[j] = -FLT_MAX;
#endif
    for (j = 0; j < nkp / SAM3__BNR; j++) {
        sam3__btile(kern, SAM3__ATT_KSPLIT * hdp, qb, 0, jb->kb + (size_t)j * SAM3__ATT_KSPLIT * hdp * SAM3__BNR, s + (size_t)j * SAM3__BNR, nkp, 0);
#if defined(SAM3__ATT_TILE_MAX)
        sam3__tile_max(s + (size_t)j * SAM3__BNR, nkp, n - j * SAM3__BNR, vm);
#endif
    }
    SAM3__PROF_LAP(pf[SAM3__PT_AQK], t0);
    for (r = 0; r < SAM3__BMR; r++) {
        float *row = s + (size_t)r * nkp;
#if defined(SAM3__ATT_TILE_MAX)
        float mx = vm[r * 16];
        for (j = 1; j < 16; j++) mx = vm[r * 16 + j] > mx ? vm[r * 16 + j] : mx;
#else
        const float mx = r < nr ? sam3__row_max(row, n) : 0;
#endif
        if (r < nr) sum[r] = sam3__exp_p_bf16(row, n, mx, nkp, r, ptiles, p);
        else sam3__p_row_bf16(row, 0, nkp, r, ptiles, p, 0);
    }
    SAM3__PROF_LAP(pf[SAM3__PT_ASM], t0);
    for (d = 0; d < hdp / SAM3__BNR; d++) {
        sam3__btile(kern, nkp, p, ptiles, jb->vb + (size_t)d * nkp * SAM3__BNR, acc + (size_t)d * SAM3__BNR, hdp, 0);
    }
    for (r = 0; r < nr; r++) {
        float *o = jb->oh + (size_t)(r0 + r) * jb->ldo;
        const float inv = 1.0f / sum[r];
        for (d = 0; d < hd; d++) o[d] = acc[(size_t)r * hdp + d] * inv;
    }
    SAM3__PROF_ADD(pf[SAM3__PT_APV], t0);
    sam3__ftz_leave(fpmode);
}
/* sam3__attn_rows_bf16 for many keys (the memory attention's cross-attention: ~36k keys, 2 KB of
   packed K and V each at hd 256, far past a core's L2, which sam3__attn_rows_bf16 would read again
   for every 32 rows): rows r0..r1 (at most G BMR, G tiles of BMR) against chunks of ATT_KC keys,
   each chunk's K and V read once for all G tiles, the softmax online (per row a running max, the
   sums so far scaled down when it grows). The scores over the first ATT_XSPLIT hdp of the split
   pairs' 3 (1: q_hi . k_hi), the values jb->hv channels (hvp rounded up to 32). Scratch: qb
   (G, BMR, 3 hdp) bf16, s (BMR, KC), p (BMR, KC) bf16, acc (G, BMR, hvp), mx and sm (G BMR). */
static void sam3__attn_rows_bf16_long(int kern, const sam3__attn_job *jb, int r0, int r1, float *mx, float *sm) {
    const int n = jb->nk, hd = jb->hd, hdp = (hd + 31) / 32 * 32, kq = SAM3__ATT_KSPLIT * hdp, nr = r1 - r0;
    const int hv = jb->hv, hvp = (hv + 31) / 32 * 32, kqs = SAM3__ATT_XSPLIT * hdp;
    const int nkp = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, ntl = (nr + SAM3__BMR - 1) / SAM3__BMR;
    uint16_t *qb = jb->qb, *p = jb->pb;
    float *s = jb->s, *acc = jb->acc;
    const int ptiles = kern == SAM3__BK_AMX; /* P as A tiles (sam3__p_row_bf16) */
    int r, j, d, c0, tl;
    const uint64_t fpmode = sam3__ftz_enter(); /* sam3__ftz_enter says why */
    for (r = 0; r < ntl * SAM3__BMR; r++) {
        /* rows kqs apart, in order: a row's third (q_lo), where kqs < kq, is the next row's start */
        if (r < nr) sam3__q_split_bf16(jb->qh + (size_t)(r0 + r) * jb->ldq, NULL, NULL, jb->scale, hd, hdp, s, qb + (size_t)r * kqs);
        else memset(qb + (size_t)r * kqs, 0, (size_t)kqs * sizeof(uint16_t));
        mx[r] = -FLT_MAX, sm[r] = 0;
    }
    memset(acc, 0, (size_t)ntl * SAM3__BMR * hvp * sizeof(float));
    for (c0 = 0; c0 < nkp; c0 += SAM3__ATT_KC) {
        const int kc = SAM3__MIN(SAM3__ATT_KC, nkp - c0), nv = SAM3__MIN(kc, n - c0); /* the chunk's keys, those not padding */
        for (tl = 0; tl < ntl; tl++) {
            float *at = acc + (size_t)tl * SAM3__BMR * hvp, *mt = mx + tl * SAM3__BMR, *st = sm + tl * SAM3__BMR;
            for (j = 0; j < kc / SAM3__BNR; j++)
                sam3__btile(kern, kqs, qb + (size_t)tl * SAM3__BMR * kqs, 0, jb->kb + (size_t)(c0 / SAM3__BNR + j) * kq * SAM3__BNR,
                            s + (size_t)j * SAM3__BNR, kc, 0);
            for (r = 0; r < SAM3__BMR; r++) {
                float *row = s + (size_t)r * kc;
                const float m = sam3__row_max(row, nv);
                if (m > mt[r]) { /* the sums so far, to the new max */
                    const float a = sam3__fexp(mt[r] - m);
                    st[r] *= a;
                    for (d = 0; d < hvp; d++) at[(size_t)r * hvp + d] *= a;
                    mt[r] = m;
                }
                st[r] += sam3__exp_p_bf16(row, nv, mt[r], kc, r, ptiles, p);
            }
            for (d = 0; d < hvp / SAM3__BNR; d++)
                sam3__btile(kern, kc, p, ptiles, jb->vb + (size_t)d * nkp * SAM3__BNR + (size_t)c0 * SAM3__BNR, at + (size_t)d * SAM3__BNR, hvp, 1);
        }
    }
    for (r = 0; r < nr; r++) {
        float *o = jb->oh + (size_t)(r0 + r) * jb->ldo;
        const float inv = 1.0f / sm[r];
        for (d = 0; d < hv; d++) o[d] = acc[(size_t)r * hvp + d] * inv;
    }
    sam3__ftz_leave(fpmode);
}
/* The cross-attention of nq = ra->nq queries on n = ra->nk keys of one batch (the memory
   attention's), by sam3__attn_rows_bf16_long on tasks of G tiles of BMR rows: G as large as
   keeps two tasks a thread (up to ATT_G; any G gives the same bits: every row is summed alone).
   kt, vp and the output as sam3__attention_packed_bf16's. */
static sam3_result sam3__attention_cross_bf16(sam3_ctx *c, int kern, const sam3__rope_args *ra, const uint16_t *kt, const uint16_t *vp) {
    const int n = ra->nk, nq = ra->nq, nh = ra->nh, hd = ra->hd, hdp = (hd + 31) / 32 * 32, nkp = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR;
    const int hv = ra->vd ? ra->vd : hd, hvp = (hv + 31) / 32 * 32;
    const int ntl = (nq + SAM3__BMR - 1) / SAM3__BMR, G = SAM3__MAX(1, SAM3__MIN(SAM3__ATT_G, ntl * nh / (2 * c->nt)));
    const int ntask = nh * ((ntl + G - 1) / G), kq = SAM3__ATT_KSPLIT * hdp, R = G * SAM3__BMR;
    sam3__mark mk = sam3__mark_get(c);
    /* per thread, in floats: qb, s, p, acc, mx, sm */
    const size_t per_thr = (size_t)R * kq / 2 + (size_t)SAM3__BMR * SAM3__ATT_KC * 3 / 2 + (size_t)R * hvp + (size_t)2 * R;
    float *sbuf = sam3__sallocf(c, (size_t)c->nt * per_thr);
    if (!sbuf) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3_ASSERT(ra->nb == 1 && (!ra->vd || nh == 1));
    SAM3__OMP(parallel num_threads(c->nt))
    {
        float *base = sam3__thread_slice(sbuf, per_thr);
        sam3__attn_job jb;
        int task;
        memset(&jb, 0, sizeof(jb));
        jb.qb = (uint16_t *)(void *)base;
        jb.s = base + (size_t)R * kq / 2;
        jb.pb = (uint16_t *)(void *)(jb.s + (size_t)SAM3__BMR * SAM3__ATT_KC);
        jb.acc = jb.s + (size_t)SAM3__BMR * SAM3__ATT_KC * 3 / 2;
        jb.ldq = jb.ldo = ra->ld, jb.nk = n, jb.hd = hd, jb.hv = hv, jb.scale = 1.0f / sqrtf((float)hd);
#if defined(SAM3__BF16_AMX)
        if (kern == SAM3__BK_AMX) sam3__amx_begin();
#endif
        SAM3__OMP(for schedule(dynamic, 1))
        for (task = 0; task < ntask; task++) {
            const int hh = task % nh, r0 = task / nh * R, r1 = SAM3__MIN(nq, r0 + R);
            float *mx = jb.acc + (size_t)R * hvp;
            jb.qh = ra->q + (size_t)hh * hd, jb.oh = ra->q + (size_t)hh * hv;
            jb.kb = kt + (size_t)hh * nkp * kq, jb.vb = vp + (size_t)hh * nkp * hvp;
            sam3__attn_rows_bf16_long(kern, &jb, r0, r1, mx, mx + R);
        }
#if defined(SAM3__BF16_AMX)
        if (kern == SAM3__BK_AMX) sam3__amx_end();
#endif
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
/* nb self-attentions of n tokens over bf16 K and V packed by sam3__rope_pack_bf16 and
   sam3__v_pack_bf16: kt (nb, nh, nkp / BNR, 3 hdp / 2, BNR, 2), vp (nb, nh, hdp / BNR, nkp / 2, BNR, 2).
   kern: SAM3__BK_AVX512 or SAM3__BK_AMX. The queries ra->q before their bias and rotation (ra's,
   applied to each row as sam3__q_split_bf16 reads it); the output over them. */
static sam3_result sam3__attention_packed_bf16(sam3_ctx *c, int kern, const sam3__rope_args *ra, const uint16_t *kt, const uint16_t *vp) {
    const int nb = ra->nb, n = ra->nk, nh = ra->nh, hd = ra->hd, ldq = ra->ld, ldo = ra->ld;
    const float *q = ra->q;
    float *out = ra->q; /* each task reads only the query rows it writes */
    sam3__mark mk = sam3__mark_get(c);
    const int nkp = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, nblk = (n + SAM3__BMR - 1) / SAM3__BMR, hdp = (hd + 31) / 32 * 32;
    /* per thread, in floats: qb, s, p, acc */
    const size_t per_thr = (size_t)SAM3__BMR * SAM3__ATT_KSPLIT * hdp / 2 + (size_t)SAM3__BMR * nkp + (size_t)SAM3__BMR * nkp / 2 + (size_t)SAM3__BMR * hdp;
    float *sbuf = sam3__sallocf(c, (size_t)c->nt * per_thr);
    if (!sbuf) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, 2.0 * (SAM3__ATT_KSPLIT + 1) * nb * nh * hd * n * n); /* the split scores: 3 products */
    SAM3__OMP(parallel num_threads(c->nt))
    {
        float *base = sam3__thread_slice(sbuf, per_thr);
        uint16_t *qb = (uint16_t *)(void *)base;
        float *s = base + (size_t)SAM3__BMR * SAM3__ATT_KSPLIT * hdp / 2;
        uint16_t *pp = (uint16_t *)(void *)(s + (size_t)SAM3__BMR * nkp);
        float *acc = s + (size_t)SAM3__BMR * nkp + (size_t)SAM3__BMR * nkp / 2;
        sam3__attn_job jb;
        int task;
        memset(&jb, 0, sizeof(jb));
        jb.ldq = ldq, jb.nk = n, jb.hd = hd, jb.scale = 1.0f / sqrtf((float)hd), jb.qb = qb, jb.s = s, jb.pb = pp, jb.acc = acc, jb.ldo = ldo;
#if defined(SAM3_PROFILE)
        SAM3__PROF_T(ta);
#ifdef _OPENMP
        if (omp_get_thread_num() < SAM3__PROF_THR) jb.prof = c->prof_thr[omp_get_thread_num()];
#else
        jb.prof = c->prof_thr[0];
#endif
#endif
#if defined(SAM3__BF16_AMX)
        if (kern == SAM3__BK_AMX) sam3__amx_begin();
#endif
        SAM3__OMP(for schedule(dynamic, 1))
        for (task = 0; task < nb * nh * nblk; task++) {
            const int bh = task / nblk, bt = bh / nh, hh = bh % nh, r0 = (task % nblk) * SAM3__BMR, r1 = SAM3__MIN(n, r0 + SAM3__BMR);
            jb.qh = q + (size_t)bt * n * ldq + (size_t)hh * hd, jb.kb = kt + (size_t)bh * nkp * SAM3__ATT_KSPLIT * hdp;
            jb.vb = vp + (size_t)bh * nkp * hdp, jb.oh = out + (size_t)bt * n * ldo + (size_t)hh * hd;
            jb.tab = ra->tab, jb.bq = ra->bq ? ra->bq + (size_t)hh * hd : NULL; /* q's rotation and bias (sam3__rope_pack_bf16 leaves them) */
            sam3__attn_rows_bf16(kern, &jb, r0, r1);
        }
#if defined(SAM3__BF16_AMX)
        if (kern == SAM3__BK_AMX) sam3__amx_end();
#endif
#if defined(SAM3_PROFILE)
        if (jb.prof) SAM3__PROF_ADD(jb.prof[SAM3__PT_ATOTAL], ta);
#endif
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
#endif
#else
#define SAM3__ATT_PW 16 /* keys per panel of the packed layout (sam3__rope_pack) */
#endif

/* Multi-head scaled dot-product attention over projected q, k, v (no masks: callers drop padded
   tokens, which no kept token attends to in the reference). out[i, h*hd:(h+1)*hd] = softmax(q_h k_h^T *
   hd^-0.5 + bias_h) v_h. Scores are never materialised for all heads at once. causal: query i sees
   keys 0..i only (CLIP); relh, relw (nh, nq, rel_s) with nk = rel_s^2 or NULL: a bias decomposed by
   key row and column, bias_h[i, ky * rel_s + kx] = relh[h, i, ky] + relw[h, i, kx], added unscaled
   (SAM 1's relative positions, the DETR decoder's box bias). out may alias q. The spec is
   sam3__ref_attention. */
static sam3_result sam3__attention_rel(sam3_ctx *c, const sam3__attn_args *at) {
#ifdef SAM3__FAST_ATTENTION
    return sam3__attention_fast(c, at);
#else
    return sam3__ref_attention(c, at);
#endif
}
static sam3_result sam3__ref_attention_packed(sam3_ctx *c, const sam3__rope_args *ra, const float *kt, const float *vp) {
    const int nb = ra->nb, n = ra->nk, nh = ra->nh, hd = ra->hd, ldq = ra->ld, ldo = ra->ld;
    const float *q = ra->q;
    float *out = ra->q; /* each task reads only the query rows it writes */
    sam3__mark mk = sam3__mark_get(c);
    const float scale = 1.0f / sqrtf((float)hd);
    const int PW = SAM3__ATT_PW, npan = (n + PW - 1) / PW;
    const size_t per = (size_t)n + (size_t)hd;
    float *buf = sam3__sallocf(c, (size_t)c->nt * per); /* per thread: (n) probabilities, (hd) an output row */
    int task;
    if (!buf) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, 4.0 * nb * nh * hd * n * n);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < nb * nh * n; task++) {
        const int b = task / (nh * n), h = task / n % nh, i = task % n;
        const float *qi = q + ((size_t)b * n + i) * ldq + (size_t)h * hd;
        const float *kh = kt + ((size_t)b * nh + h) * npan * hd * PW, *vh = vp + ((size_t)b * nh + h) * n * hd;
        float *p = sam3__thread_slice(buf, per), *o = p + n;
        int j, d;
        for (j = 0; j < n; j++) {
            float s = 0;
            for (d = 0; d < hd; d++) s += qi[d] * kh[((size_t)(j / PW) * hd + d) * PW + j % PW];
            p[j] = s * scale;
        }
        sam3__ref_softmax_row(p, n);
        for (d = 0; d < hd; d++) {
            float s = 0;
            for (j = 0; j < n; j++) s += p[j] * vh[(size_t)j * hd + d];
            o[d] = s;
        }
        memcpy(out + ((size_t)b * n + i) * ldo + (size_t)h * hd, o, (size_t)hd * sizeof(float));
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
/* nb self-attentions of n tokens over K and V already packed (sam3__rope_pack, sam3__v_pack; the
   layout at sam3__ref_attention_packed). The output over ra->q. */
static sam3_result sam3__attention_packed(sam3_ctx *c, const sam3__rope_args *ra, const float *kt, const float *vp) {
#ifdef SAM3__FAST_ATTENTION
    return sam3__attention_packed_fast(c, ra, kt, vp, NULL);
#else
    return sam3__ref_attention_packed(c, ra, kt, vp);
#endif
}

/* Channel-major convolutions (x: (cin, H, W), y: (cout, H, W), as PyTorch NCHW without N). */

/* 1x1 conv; x may be given token-major (HW, cin) with x_tokens = 1. */
static void sam3__conv1x1(sam3_ctx *c, const float *x, int x_tokens, int cin, int hw, const sam3__lin *l, int cout, float *y) {
    int o;
    sam3__gemm_wx(c, 0, x_tokens, cout, hw, cin, l, 0, cin, x, x_tokens ? cin : hw, 0.0f, y, hw);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (o = 0; o < cout; o++) {
        float *r = y + (size_t)o * hw, b = l->b ? l->b[o] : 0.0f;
        int j;
        for (j = 0; j < hw; j++) r[j] += b;
    }
}

/* 3x3 conv, stride 1, zero padding 1, by Winograd F(4x4, 3x3) (Lavin and Gray, 2016; points 0,
   +-1, +-2): each 4x4 output tile is A^T [U . (B^T d B)] A with d its 6x6 input tile and U = G g G^T
   the transformed weights, so the conv becomes 36 products (cout, cin) x (cin, tiles), 2.25
   multiplies per output and input channel instead of 9. Direct, the pixel decoder's 288 x 288 conv
   is 98 GFLOP, a large part of a prompt. The price is rounding: ~2e-6 relative error (norm) against
   an f64 direct conv where a direct f32 conv has ~3e-7 (random 256-channel maps; test_conv3x3 in
   tests/test_parity.c checks it); the parity bars are 1e-4. Tiles go by chunks of whole tile rows,
   so the transformed input V and the products M, (36, channels, tiles) each, stay ~10 MB (smaller
   chunks gain nothing: the products (256, 256) x (256, n) reach their full rate from n ~ 144 on). */
/* U (36, cout, cin) from w (cout, cin, 3, 3), in double: G has thirds and sixths. Per output
   channel, the taps go to g9 (9, cin) and G g to t (6, 3, cin), so every loop runs along the input
   channels: U written in runs of cin floats (written directly, each step would scatter 36 values
   256 KB apart), and the products vectorise. ut: per thread, 27 cin doubles. */
#if !defined(SAM3__KREF)
static void sam3__wino_weights(sam3_ctx *c, const sam3__lin *w, int cout, int cin, float *u, double *ut) {
    static const double G[6][3] = {{0.25, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}};
    const size_t po = (size_t)cout * cin;
    int o;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (o = 0; o < cout; o++) {
#ifdef _OPENMP
        double *g9 = ut + (size_t)omp_get_thread_num() * 27 * cin; /* (9, cin) the taps */
#else
        double *g9 = ut;
#endif
        double *t = g9 + (size_t)9 * cin; /* (6, 3, cin) G g */
        int i, k, j, a;
        for (i = 0; i < cin; i++)
            for (a = 0; a < 9; a++) g9[(size_t)a * cin + i] = sam3__lw(w, ((size_t)o * cin + i) * 9 + a);
        for (k = 0; k < 6; k++)
            for (j = 0; j < 3; j++) {
                const double *g0 = g9 + (size_t)j * cin, *g1 = g9 + (size_t)(3 + j) * cin, *g2 = g9 + (size_t)(6 + j) * cin;
                double *tk = t + (size_t)(k * 3 + j) * cin;
                for (i = 0; i < cin; i++) tk[i] = G[k][0] * g0[i] + G[k][1] * g1[i] + G[k][2] * g2[i];
            }
        for (k = 0; k < 6; k++)
            for (j = 0; j < 6; j++) {
                const double *t0 = t + (size_t)k * 3 * cin, *t1 = t0 + cin, *t2 = t1 + cin;
                float *row = u + (size_t)(k * 6 + j) * po + (size_t)o * cin;
                for (i = 0; i < cin; i++) row[i] = (float)(t0[i] * G[j][0] + t1[i] * G[j][1] + t2[i] * G[j][2]);
            }
    }
}
/* Row r of a 3x3 conv's input into o (W): x's row of channel xc (H, W), plus, where lc (lh, lw) is
   given, lc upsampled by nearest neighbour (source index floor(i * in / out), as F.interpolate). */
static void sam3__conv_in_row(const float *xc, int H, int W, const float *lc, int lh, int lw, int r, float *o) {
    const float *a = xc + (size_t)r * W;
    int q;
    if (!lc) {
        memcpy(o, a, (size_t)W * sizeof(float));
    } else {
        const float sy = (float)lh / (float)H, sx = (float)lw / (float)W;
        const float *b = lc + (size_t)(H == 2 * lh ? r >> 1 : SAM3__MIN((int)floorf((float)r * sy), lh - 1)) * lw;
        if (W == 2 * lw)
            for (q = 0; q < lw; q++) { /* in pairs: vectorises where b[q >> 1] did not */
                o[2 * q] = a[2 * q] + b[q];
                o[2 * q + 1] = a[2 * q + 1] + b[q];
            }
        else
            for (q = 0; q < W; q++) o[q] = a[q] + b[SAM3__MIN((int)floorf((float)q * sx), lw - 1)];
    }
}
/* st (3) = the count, mean and sum of squared deviations of y0 (n), in double: a band of a
   conv's output channel, for sam3__groupnorm. */
static void sam3__band_stats(const float *y0, size_t n, double *st) {
    double sum = 0, mean, dev = 0;
    size_t i;
    SAM3__OMP(simd reduction(+:sum))
    for (i = 0; i < n; i++) sum += y0[i];
    mean = sum / (double)n;
    SAM3__OMP(simd reduction(+:dev))
    for (i = 0; i < n; i++) dev += ((double)y0[i] - mean) * ((double)y0[i] - mean);
    st[0] = (double)n, st[1] = mean, st[2] = dev;
}
/* One input channel's tile row ty: v[p * vs + t] = (B^T d B)[p / 6][p % 6] of tile t. P and T are
   (6, 4, ntx + 1) scratch: the tile row's six zero-padded input rows split by column phase, so
   every transform below runs on contiguous vectors of tiles (column 4 t + f of the padded row is
   phase f of tile t, and the tile's columns 4, 5 are phases 0, 1 of tile t + 1). With lc (lh, lw)
   the input is xc plus lc upsampled to (H, W) by nearest neighbour (the pixel decoder's skip
   connection), added as the rows are read. The transforms' loops are marked simd: reading six
   rows and writing four to six, they need more overlap checks than GCC makes at run time, and
   unmarked it leaves them scalar. The marking holds: they read P and write T, then read T and
   write v, so no loop reads what it writes. */
static SAM3__CONTRACT void sam3__wino_in(const float *xc, int H, int W, const float *lc, int lh, int lw, int ty, int ntx, float *P, float *T,
                                         float *v, size_t vs) {
    const int n1 = ntx + 1, n = 4 * n1;
    int i, t, k;
    for (i = 0; i < 6; i++) {
        const int r = 4 * ty + i - 1;
        float *p0 = P + (size_t)i * n, *p1 = p0 + n1, *p2 = p0 + 2 * n1, *p3 = p0 + 3 * n1;
        if (r < 0 || r >= H) {
            memset(p0, 0, (size_t)n * sizeof(float));
            continue;
        }
        /* the padded row (T as scratch), then split by phase: a branch-free loop that vectorises */
        T[0] = 0;
        sam3__conv_in_row(xc, H, W, lc, lh, lw, r, T + 1);
        memset(T + 1 + W, 0, (size_t)(n - 1 - W) * sizeof(float));
        for (t = 0; t < n1; t++) {
            p0[t] = T[4 * t];
            p1[t] = T[4 * t + 1];
            p2[t] = T[4 * t + 2];
            p3[t] = T[4 * t + 3];
        }
    }
    {
        const float *d0 = P, *d1 = P + n, *d2 = P + 2 * n, *d3 = P + 3 * n, *d4 = P + 4 * n, *d5 = P + 5 * n;
        SAM3__OMP(simd)
        for (t = 0; t < n; t++) { /* B^T along the rows */
            T[t] = 4 * d0[t] - 5 * d2[t] + d4[t];
            T[n + t] = d3[t] + d4[t] - 4 * (d1[t] + d2[t]);
            T[2 * n + t] = d4[t] - d3[t] + 4 * (d1[t] - d2[t]);
            T[3 * n + t] = d4[t] - d2[t] + 2 * (d3[t] - d1[t]);
            T[4 * n + t] = d4[t] - d2[t] + 2 * (d1[t] - d3[t]);
            T[5 * n + t] = 4 * d1[t] - 5 * d3[t] + d5[t];
        }
    }
    for (k = 0; k < 6; k++) { /* and along the columns */
        const float *a = T + (size_t)k * n, *b = a + n1, *cc = a + 2 * n1, *d = a + 3 * n1;
        float *o = v + (size_t)k * 6 * vs;
        SAM3__OMP(simd)
        for (t = 0; t < ntx; t++) {
            o[t] = 4 * a[t] - 5 * cc[t] + a[t + 1];
            o[vs + t] = d[t] + a[t + 1] - 4 * (b[t] + cc[t]);
            o[2 * vs + t] = a[t + 1] - d[t] + 4 * (b[t] - cc[t]);
            o[3 * vs + t] = a[t + 1] - cc[t] + 2 * (d[t] - b[t]);
            o[4 * vs + t] = a[t + 1] - cc[t] + 2 * (b[t] - d[t]);
            o[5 * vs + t] = 4 * b[t] - 5 * d[t] + b[t + 1];
        }
    }
}
/* One output channel's tile row ty: rows 4 ty.. of yc (H, W) = A^T M A + bias, from the products
   m[p * ms + t]. S is (4, 6, ntx) scratch, R a row of 4 ntx (the output row when W = 4 ntx). st
   (3) or NULL: the rows' count, mean and sum of squared deviations, in double, from L1 (a
   GroupNorm's statistics without its two passes over the map, sam3__groupnorm). */
static SAM3__CONTRACT void sam3__wino_out(const float *m, size_t ms, int ntx, float bias, float *S, float *R, float *yc, int H, int W,
                                          int ty, double *st) {
    int j, a, t;
    for (j = 0; j < 6; j++) { /* A^T along the rows */
        const float *m0 = m + (size_t)j * ms, *m1 = m + (size_t)(6 + j) * ms, *m2 = m + (size_t)(12 + j) * ms;
        const float *m3 = m + (size_t)(18 + j) * ms, *m4 = m + (size_t)(24 + j) * ms, *m5 = m + (size_t)(30 + j) * ms;
        float *s0 = S + (size_t)j * ntx, *s1 = s0 + (size_t)6 * ntx, *s2 = s0 + (size_t)12 * ntx, *s3 = s0 + (size_t)18 * ntx;
        SAM3__OMP(simd)
        for (t = 0; t < ntx; t++) {
            const float p1 = m1[t] + m2[t], d1 = m1[t] - m2[t], p2 = m3[t] + m4[t], d2 = m3[t] - m4[t];
            s0[t] = m0[t] + p1 + p2;
            s1[t] = d1 + 2 * d2;
            s2[t] = p1 + 4 * p2;
            s3[t] = d1 + 8 * d2 + m5[t];
        }
    }
    for (a = 0; a < 4 && 4 * ty + a < H; a++) { /* and along the columns, interleaved into a row */
        const float *q0 = S + (size_t)a * 6 * ntx, *q1 = q0 + ntx, *q2 = q0 + 2 * ntx, *q3 = q0 + 3 * ntx, *q4 = q0 + 4 * ntx,
                    *q5 = q0 + 5 * ntx;
        float *row = yc + (size_t)(4 * ty + a) * W, *o = W == 4 * ntx ? row : R;
        SAM3__OMP(simd)
        for (t = 0; t < ntx; t++) {
            const float p1 = q1[t] + q2[t], d1 = q1[t] - q2[t], p2 = q3[t] + q4[t], d2 = q3[t] - q4[t];
            o[4 * t] = q0[t] + p1 + p2 + bias;
            o[4 * t + 1] = d1 + 2 * d2 + bias;
            o[4 * t + 2] = p1 + 4 * p2 + bias;
            o[4 * t + 3] = d1 + 8 * d2 + q5[t] + bias;
        }
        if (o != row) memcpy(row, R, (size_t)W * sizeof(float));
    }
    if (st) sam3__band_stats(yc + (size_t)4 * ty * W, (size_t)SAM3__MIN(4, H - 4 * ty) * W, st);
}
static int sam3__wino_rows(const sam3_ctx *c, int nty, int ntx); /* pipelined or phased: see there */
static int sam3__wino_block(const sam3_ctx *c, int ntx);
/* x (cin, H, W) -> y (cout, H, W), not aliased; lo (cin, lh, lw) or NULL: the input is x + lo
   upsampled by nearest neighbour (sam3__wino_in). st (cout, (H + 3) / 4, 3) or NULL: each output
   channel's statistics by tile row (sam3__wino_out), for sam3__groupnorm. */
static sam3_result sam3__conv3x3_wino(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l,
                                      int cout, float *y, double *st) {
    sam3__mark mk = sam3__mark_get(c);
    const int ntx = (W + 3) / 4, nty = (H + 3) / 4, gb = sam3__wino_block(c, ntx), gr = sam3__wino_rows(c, nty, ntx) ? gb : 0;
    /* phased: with our threads splitting the products, each of the 36 goes in blocks of gb tile
       rows, the pipelined tasks' products (so both give the same bits): 36 tasks on 16 threads
       would leave a quarter of them idle in the last round. Chunks of whole blocks. */
    const int nbk = c->split && c->nt > 1 ? (c->nt + 11) / 12 : 1;
    const int ntr = gr ? gr : (SAM3__MAX(1, SAM3__MIN(nty, 256 * nbk / ntx)) + gb - 1) / gb * gb, nc = ntr * ntx;
    const size_t scr = SAM3__MAX((size_t)48 * (ntx + 1) + (size_t)28 * ntx, (size_t)54 * cin);
    /* pipelined, each thread's V and M follow its scratch */
    const size_t per_thr = gr ? scr + (size_t)36 * (cin + cout) * nc : scr;
    float *u = sam3__sallocf(c, (size_t)36 * cout * cin);                /* (36, cout, cin) transformed weights */
    float *v = gr ? NULL : sam3__sallocf(c, (size_t)36 * cin * nc);     /* (36, cin, nc) transformed input tiles */
    float *mm = gr ? NULL : sam3__sallocf(c, (size_t)36 * cout * nc);   /* (36, cout, nc) their products */
    float *tb = sam3__sallocf(c, (size_t)c->nt * per_thr); /* per thread: P, T (6, 4, ntx + 1); S (4, 6, ntx); R (4 ntx); or 27 cin doubles; then (pipelined) V, M */
    sam3__gemm_args wg; /* the 36 products M_p (cout, n) = U_p (cout, cin) V_p (cin, n), rows nc apart */
    int ty0;
    if (!u || !tb || (!gr && (!v || !mm))) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__count(c, 72.0 * cout * cin * ntx * nty); /* the 36 products; the transforms are not counted */
    memset(&wg, 0, sizeof(wg));
    wg.m = cout, wg.k = cin, wg.alpha = 1.0f, wg.lda = cin, wg.ldb = wg.ldc = nc;
    sam3__wino_weights(c, l, cout, cin, u, (double *)(void *)tb);
    if (gr) {
        const int ntask = (nty + gr - 1) / gr;
        int task;
        SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
        for (task = 0; task < ntask; task++) {
            const int t0 = task * gr, nr = SAM3__MIN(gr, nty - t0), ncur = nr * ntx;
            float *P = sam3__thread_slice(tb, per_thr), *vt = P + scr, *mt = vt + (size_t)36 * cin * nc; /* vt (36, cin, nc), mt (36, cout, nc) */
            sam3__gemm_args pg = wg;
            int ci, o, p, r;
            for (ci = 0; ci < cin; ci++)
                for (r = 0; r < nr; r++)
                    sam3__wino_in(x + (size_t)ci * H * W, H, W, lo ? lo + (size_t)ci * lh * lw : NULL, lh, lw, t0 + r, ntx, P, P + (size_t)24 * (ntx + 1),
                                  vt + (size_t)ci * nc + (size_t)r * ntx, (size_t)cin * nc);
            for (p = 0; p < 36; p++) {
                pg.n = ncur, pg.a = u + (size_t)p * cout * cin, pg.b = vt + (size_t)p * cin * nc, pg.c = mt + (size_t)p * cout * nc;
                sam3__sgemm(c, &pg);
            }
            for (o = 0; o < cout; o++)
                for (r = 0; r < nr; r++)
                    sam3__wino_out(mt + (size_t)o * nc + (size_t)r * ntx, (size_t)cout * nc, ntx, l->b ? l->b[o] : 0.0f, P, P + (size_t)24 * ntx,
                                   y + (size_t)o * H * W, H, W, t0 + r, st ? st + ((size_t)o * nty + t0 + r) * 3 : NULL);
        }
        sam3__release(c, mk);
        return SAM3_OK;
    }
    for (ty0 = 0; ty0 < nty; ty0 += ntr) {
        const int nr = SAM3__MIN(ntr, nty - ty0), ncur = nr * ntx;
        int task;
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
        for (task = 0; task < cin * nr; task++) {
            const int ci = task / nr, r = task % nr;
            float *P = sam3__thread_slice(tb, per_thr);
            sam3__wino_in(x + (size_t)ci * H * W, H, W, lo ? lo + (size_t)ci * lh * lw : NULL, lh, lw, ty0 + r, ntx, P, P + (size_t)24 * (ntx + 1),
                          v + (size_t)ci * nc + (size_t)r * ntx, (size_t)cin * nc);
        }
        if (c->split) {
            const int nblk = (nr + gb - 1) / gb;
            SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
            for (task = 0; task < 36 * nblk; task++) {
                const int p = task / nblk, b = task % nblk, n0 = b * gb * ntx, n1 = SAM3__MIN(ncur, n0 + gb * ntx);
                sam3__gemm_args pg = wg;
                pg.n = n1 - n0, pg.a = u + (size_t)p * cout * cin, pg.b = v + (size_t)p * cin * nc + n0, pg.c = mm + (size_t)p * cout * nc + n0;
                sam3__sgemm(c, &pg);
            }
        } else
            for (task = 0; task < 36; task++) {
                wg.n = ncur, wg.a = u + (size_t)task * cout * cin, wg.b = v + (size_t)task * cin * nc, wg.c = mm + (size_t)task * cout * nc;
                sam3__sgemm(c, &wg);
            }
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
        for (task = 0; task < cout * nr; task++) {
            const int o = task / nr, r = task % nr;
            float *S = sam3__thread_slice(tb, per_thr);
            sam3__wino_out(mm + (size_t)o * nc + (size_t)r * ntx, (size_t)cout * nc, ntx, l->b ? l->b[o] : 0.0f, S, S + (size_t)24 * ntx,
                           y + (size_t)o * H * W, H, W, ty0 + r, st ? st + ((size_t)o * nty + ty0 + r) * 3 : NULL);
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
#if defined(SAM3__BF16_VEC)
#define SAM3__CONV_BF16 1
/* The 3x3 conv (sam3__ref_conv3x3's sums) of a bf16 weight (a --dtype bf16 file) from bf16 kernel
   c->bkc on: directly, as one product C (cout, H W) = W (cout, 9 cin) B (9 cin, H W), W the
   weight as the file keeps it (k = 9 i + 3 ky + kx) and B the im2col of the input (x plus the
   upsampled lo) rounded to bf16, as every product of a bf16 file rounds its activations. On the
   bf16 kernels the direct conv's 9 multiplies an output and input channel outrun Winograd's 2.25
   in f32. An f32 weight (SAM3_PRECISION_BF16) keeps the f32 conv: with both operands rounded,
   the tiny models' worst mask falls below test_parity --bf16's bar. B is never formed: the
   product's packing asks sam3__conv_bpack for each of its panels, gathered from xp, the rounded
   input with a zero row and column on each side. On AMX, sam3__conv3x3_amx runs the same conv
   with no panels at all (its tiles loaded from the input). */
typedef struct sam3__conv_bsrc {
    const uint16_t *xp; /* (cin, H + 2, wp): input (r, q) of channel i at row r + 1, column q + 1 */
    size_t plane;       /* (H + 2) wp: a channel's padded map */
    int W, wp;          /* output width; padded width W + 2 */
} sam3__conv_bsrc;
/* Rows ahead (in k) that the packing prefetches: a panel reads a run of 64 bytes from each of
   up to 768 rows of xp (256 channels, 3 rows each), the next row's from another channel or map
   row, where no hardware prefetcher looks; and with many threads the panels of a map row go to
   different threads, so that the last panel's lines are not in this core's caches either. */
#define SAM3__CONV_PF 48
/* xp's address of row k (= 9 i + 3 ky + kx) for output (0, 0) */
static SAM3__INLINE const uint16_t *sam3__conv_src(const sam3__conv_bsrc *s, int k) {
    const int t = k % 9;
    return s->xp + (size_t)(k / 9) * s->plane + (size_t)(t / 3) * s->wp + t % 3;
}
/* The cache lines of row k's runs (offsets ro, last elements re), where k < kc. */
static SAM3__INLINE void sam3__conv_prefetch(const sam3__conv_bsrc *s, int k, int kc, const size_t *ro, const int *re, int nrun) {
    const uint16_t *src;
    int u;
    if (k >= kc) return;
    src = sam3__conv_src(s, k);
    for (u = 0; u < nrun; u++) {
        SAM3__PREFETCHR(src + ro[u]);
        SAM3__PREFETCHR(src + ro[u] + re[u]);
    }
}
/* B's panel of columns col .. col + nr (outputs in raster order), k p0 .. p0 + kc: the k pair
   (k, k + 1) of column q at pb[k NR + 2 q] (sam3__bgemm_pack_b's layout), zeros past kc and nr.
   The panel's columns fall in runs along output rows; row k = 9 i + 3 ky + kx of a run from
   output (r, q) is xp's run from (r + ky, q + kx) in channel i. */
#if defined(SAM3__BF16_X86)
/* a and b's 32 16-bit lanes as 32 pairs (a[q], b[q]) into dst (64): rows k and k + 1 of a panel,
   as its products take them */
SAM3__KTARGET("avx512f,avx512bw") static SAM3__INLINE void sam3__store_pairs(__m512i a, __m512i b, uint16_t *dst) {
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2,
                                        33, 1, 32, 0); /* lanes 0..15 of a and b, interleaved */
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    _mm512_storeu_si512((void *)dst, _mm512_permutex2var_epi16(a, lo, b));
    _mm512_storeu_si512((void *)(dst + 32), _mm512_permutex2var_epi16(a, hi, b));
}
/* With AVX-512 (every CPU that runs the x86 bf16 kernels): each of a k pair's rows as one vector
   of the panel's 32 columns (BNR), a masked load a run (a run from panel column j placed there by
   a lane permutation), the pair interleaved by two more; the same panel as the scalar gather. */
SAM3__KTARGET("avx512f,avx512bw") static void sam3__conv_bpack(const void *arg, int p0, int kc, int kcp, int col, int nr, uint16_t *pb) {
    const sam3__conv_bsrc *s = (const sam3__conv_bsrc *)arg;
    __m512i sh[SAM3__BNR];   /* per run: lane q takes the loaded lane q - j */
    __mmask32 lm[SAM3__BNR]; /* per run: its lanes as loaded (0 .. len) */
    __mmask32 pm[SAM3__BNR]; /* per run: its lanes in the panel (j .. j + len) */
    size_t ro[SAM3__BNR];    /* per run: its xp offset for tap (0, 0) */
    int re[SAM3__BNR];       /* per run: its last element */
    int nrun = 0, full, j, k, h, u;
    for (j = 0; j < nr; nrun++) {
        const int n = col + j, r = n / s->W, x = n % s->W, len = SAM3__MIN(nr - j, s->W - x);
        uint16_t idx[32];
        int q;
        for (q = 0; q < 32; q++) idx[q] = (uint16_t)((q - j) & 31);
        sh[nrun] = _mm512_loadu_si512((const void *)idx);
        lm[nrun] = (__mmask32)((1ull << len) - 1);
        pm[nrun] = (__mmask32)(((1ull << len) - 1) << j);
        ro[nrun] = (size_t)r * s->wp + x, re[nrun] = len - 1;
        j += len;
    }
    full = nrun == 1 && nr == 32;
    for (k = 0; k < SAM3__MIN(SAM3__CONV_PF, kc); k++) sam3__conv_prefetch(s, p0 + k, p0 + kc, ro, re, nrun);
    for (k = 0; k < kcp; k += 2) {
        __m512i v[2];
        for (h = 0; h < 2; h++) {
            const uint16_t *src;
            v[h] = _mm512_setzero_si512();
            sam3__conv_prefetch(s, p0 + k + h + SAM3__CONV_PF, p0 + kc, ro, re, nrun);
            if (k + h >= kc) continue;
            src = sam3__conv_src(s, p0 + k + h);
            if (full) { /* one run of all 32 columns */
                v[h] = _mm512_loadu_si512((const void *)(src + ro[0]));
                continue;
            }
            for (u = 0; u < nrun; u++)
                v[h] = _mm512_mask_mov_epi16(v[h], pm[u], _mm512_permutexvar_epi16(sh[u], _mm512_maskz_loadu_epi16(lm[u], (const void *)(src + ro[u]))));
        }
        sam3__store_pairs(v[0], v[1], pb + (size_t)k * SAM3__BNR);
    }
}
#else
static void sam3__conv_bpack(const void *arg, int p0, int kc, int kcp, int col, int nr, uint16_t *pb) {
    const sam3__conv_bsrc *s = (const sam3__conv_bsrc *)arg;
    int rj[SAM3__BNR], rl[SAM3__BNR], re[SAM3__BNR]; /* runs: first panel column, length, last element */
    size_t ro[SAM3__BNR];                            /* their xp offset for tap (0, 0) */
    uint16_t row[2][SAM3__BNR];                      /* rows k and k + 1 of the panel */
    int nrun = 0, j, k, h, q, u;
    for (j = 0; j < nr; nrun++) {
        const int n = col + j, r = n / s->W, x = n % s->W, len = SAM3__MIN(nr - j, s->W - x);
        rj[nrun] = j, rl[nrun] = len, re[nrun] = len - 1, ro[nrun] = (size_t)r * s->wp + x;
        j += len;
    }
    for (k = 0; k < SAM3__MIN(SAM3__CONV_PF, kc); k++) sam3__conv_prefetch(s, p0 + k, p0 + kc, ro, re, nrun);
    for (k = 0; k < kcp; k += 2) {
        uint16_t *d = pb + (size_t)k * SAM3__BNR;
        for (h = 0; h < 2; h++) {
            memset(row[h], 0, sizeof(row[h]));
            sam3__conv_prefetch(s, p0 + k + h + SAM3__CONV_PF, p0 + kc, ro, re, nrun);
            if (k + h < kc) {
                const uint16_t *src = sam3__conv_src(s, p0 + k + h);
                for (u = 0; u < nrun; u++) memcpy(row[h] + rj[u], src + ro[u], (size_t)rl[u] * sizeof(uint16_t));
            }
        }
        for (q = 0; q < SAM3__BNR; q++) {
            d[2 * q] = row[0][q];
            d[2 * q + 1] = row[1][q];
        }
    }
}
#endif
#if defined(SAM3__BF16_AMX)
/* The same conv on AMX with no im2col: a B tile (16 k pairs x 16 outputs) is a plain strided
   load from xq, the rounded input with channel pairs interleaved, (H + 2, cpp, wq, 2): channels
   2p and 2p + 1 of input (r, q) at row r + 1, pair p, column q + 1, zeros around and past cin.
   16 pairs of one map row lie wq pairs apart, so tap (ky, kx) of outputs (r, x0 .. x0 + 15) is
   the tile at row r + ky, column x0 + kx, and k runs tap by tap, 32 channels a step. A tiles
   are the weight regrouped so (wt: (nob, 9, nks, 16, 32), output channel ob 16 + o, input
   channel s 32 + c, tap t); C tiles start from the bias and are stored into y once. */
/* Output row r, all output channels: blocks of 32 outputs (2 B tiles) x 32 channels (2 A
   tiles). wt's tiles of a 16-channel block lie tsz apart; bt (nob, 16, 16): the bias, each row
   one channel's. */
SAM3__KTARGET("amx-tile,amx-bf16") static void sam3__conv_amx_row(const uint16_t *xq, int cpp, int wq, int nks, const uint16_t *wt,
                                                                   const float *bt, int r, int W, int cout, size_t hw, float *y) {
    float t[4 * 256]; /* (32, 32): a ragged block's tiles */
    const size_t rowq = (size_t)cpp * wq * 2, tsz = (size_t)9 * nks * 512;
    const long bs = (long)wq * 4, ys = (long)(hw * 4); /* bytes: from a B tile's pair to the next; from an output channel to the next */
    int x0, o0, tap, s, i, j;
    for (x0 = 0; x0 < W; x0 += 32) {
        const int nx = SAM3__MIN(32, W - x0), two = nx > 16;
        for (o0 = 0; o0 < cout; o0 += 32) {
            const int no = SAM3__MIN(32, cout - o0);
            const uint16_t *a = wt + (size_t)(o0 / 16) * tsz;
            const float *b = bt + (size_t)o0 * 16;
            float *yo = y + (size_t)o0 * hw + (size_t)r * W + x0;
            _tile_loadd(0, b, 64);
            _tile_loadd(1, b, 64);
            _tile_loadd(2, b + 256, 64);
            _tile_loadd(3, b + 256, 64);
            for (tap = 0; tap < 9; tap++) {
                const uint16_t *xs = xq + (size_t)(r + tap / 3) * rowq + (size_t)2 * (x0 + tap % 3);
                for (s = 0; s < nks; s++, a += 512) {
                    const uint16_t *bsrc = xs + (size_t)s * 32 * wq;
                    _tile_loadd(4, a, 64);
                    _tile_loadd(6, bsrc, bs);
                    _tile_dpbf16ps(0, 4, 6);
                    if (two) {
                        _tile_loadd(7, bsrc + 32, bs);
                        _tile_dpbf16ps(1, 4, 7);
                    }
                    _tile_loadd(5, a + tsz, 64);
                    _tile_dpbf16ps(2, 5, 6);
                    if (two) _tile_dpbf16ps(3, 5, 7);
                }
            }
            if (nx == 32 && no == 32) {
                _tile_stored(0, yo, ys);
                _tile_stored(1, yo + 16, ys);
                _tile_stored(2, yo + 16 * hw, ys);
                _tile_stored(3, yo + 16 * hw + 16, ys);
                continue;
            }
            _tile_stored(0, t, 128);
            _tile_stored(1, t + 16, 128);
            _tile_stored(2, t + 512, 128);
            _tile_stored(3, t + 528, 128);
            for (i = 0; i < no; i++)
                for (j = 0; j < nx; j++) yo[(size_t)i * hw + j] = t[i * 32 + j];
        }
    }
}
/* xq's row of a channel pair (wx + 2, 2) into d from its two channels' rows t (2, wx), zeros
   past the map; u (2, wx): their bf16. */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__conv_pairs_row(const float *t, uint16_t *u, int wx, uint16_t *d) {
    int q;
    sam3__bf16_row_avx512(t, u, 2 * wx);
    d[0] = d[1] = 0;
    for (q = 0; q < wx; q += 32)
        sam3__store_pairs(_mm512_loadu_si512((const void *)(u + q)), _mm512_loadu_si512((const void *)(u + wx + q)), d + 2 + 2 * q);
    d[2 * wx + 2] = d[2 * wx + 3] = 0;
}
static sam3_result sam3__conv3x3_amx(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l,
                                     int cout, float *y, double *st) {
    sam3__mark mk = sam3__mark_get(c);
    const int nks = (cin + 31) / 32, cpp = 16 * nks;     /* k steps a tap (32 channels each); channel pairs, padded */
    const int wx = (W + 31) / 32 * 32, wq = wx + 2;      /* outputs a row in whole blocks; xq's row width */
    const int nob = (cout + 31) / 32 * 2, nty = (H + 3) / 4; /* 16-channel blocks, whole pairs of them; GroupNorm bands */
    const size_t hw = (size_t)H * W, tsz = (size_t)9 * nks * 512;
    size_t nxq = 0, per = (size_t)3 * wx; /* per thread, floats: two input rows, then their bf16 */
    uint16_t *xq, *wt;
    float *bt, *tb;
    ptrdiff_t task;
    if (hw > INT_MAX || !sam3__mul((size_t)(H + 2) * cpp, (size_t)wq * 2, &nxq)) return SAM3_ERR_OUT_OF_MEMORY;
    xq = (uint16_t *)(void *)sam3__sallocf(c, (nxq + 1) / 2);          /* (H + 2, cpp, wq, 2) */
    wt = (uint16_t *)(void *)sam3__sallocf(c, (size_t)nob * tsz / 2);  /* (nob, 9, nks, 16, 32) */
    bt = sam3__sallocf(c, (size_t)nob * 256);                            /* (nob, 16, 16) */
    tb = sam3__sallocf(c, (size_t)c->nt * per);
    if (!xq || !wt || !bt || !tb) {
        sam3__release(c, mk);
        return SAM3_ERR_OUT_OF_MEMORY;
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < (ptrdiff_t)(H + 2) * cpp; task++) {
        const int r = (int)(task / cpp) - 1, p = (int)(task % cpp);
        uint16_t *d = xq + (size_t)task * wq * 2; /* (wq, 2): pair p of row r */
        float *tr = sam3__thread_slice(tb, per);  /* (2, wx) */
        uint16_t *u = (uint16_t *)(void *)(tr + 2 * wx); /* (2, wx) */
        int h;
        if (r < 0 || r >= H || 2 * p >= cin) {
            memset(d, 0, (size_t)wq * 2 * sizeof(uint16_t));
            continue;
        }
        for (h = 0; h < 2; h++) {
            const int ch = 2 * p + h;
            float *o = tr + (size_t)h * wx;
            if (ch < cin) sam3__conv_in_row(x + (size_t)ch * hw, H, W, lo ? lo + (size_t)ch * lh * lw : NULL, lh, lw, r, o);
            else memset(o, 0, (size_t)W * sizeof(float));
            memset(o + W, 0, (size_t)(wx - W) * sizeof(float));
        }
        sam3__conv_pairs_row(tr, u, wx, d);
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < (ptrdiff_t)nob * 9; task++) {
        const int ob = (int)(task / 9), tap = (int)(task % 9);
        uint16_t *d = wt + (size_t)task * nks * 512; /* (nks, 16, 32) */
        int s, o, i;
        for (s = 0; s < nks; s++)
            for (o = 0; o < 16; o++)
                for (i = 0; i < 32; i++) {
                    const int oc = 16 * ob + o, ic = 32 * s + i;
                    d[((size_t)s * 16 + o) * 32 + i] = oc < cout && ic < cin ? l->wh[(size_t)oc * 9 * cin + (size_t)9 * ic + tap] : 0;
                }
        if (tap == 0)
            for (o = 0; o < 16; o++)
                for (i = 0; i < 16; i++) bt[((size_t)ob * 16 + o) * 16 + i] = l->b && 16 * ob + o < cout ? l->b[16 * ob + o] : 0.0f;
    }
    SAM3__OMP(parallel num_threads(c->nt))
    {
        int r;
        sam3__amx_begin();
        SAM3__OMP(for schedule(dynamic, 1))
        for (r = 0; r < H; r++) sam3__conv_amx_row(xq, cpp, wq, nks, wt, bt, r, W, cout, hw, y);
        sam3__amx_end();
    }
    sam3__count(c, 18.0 * cout * cin * H * W); /* 9 taps an output and input channel, as the direct conv counts */
    if (st) {
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
        for (task = 0; task < (ptrdiff_t)cout * nty; task++) {
            const int o = (int)(task / nty), b = (int)(task % nty);
            sam3__band_stats(y + (size_t)o * hw + (size_t)4 * b * W, (size_t)SAM3__MIN(4, H - 4 * b) * W, st + (size_t)task * 3);
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
#endif
/* x (cin, H, W) -> y (cout, H, W) as sam3__conv3x3_wino takes them, l->wh the weight. Returns
   SAM3_ERR_OUT_OF_MEMORY, y unwritten or part written, when its buffers cannot be had. */
static sam3_result sam3__conv3x3_bf16(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l,
                                      int cout, float *y, double *st) {
    sam3__mark mk = sam3__mark_get(c);
    const int wp = W + 2, nty = (H + 3) / 4;
    const size_t plane = (size_t)(H + 2) * wp, hw = (size_t)H * W;
    uint16_t *xp = (uint16_t *)(void *)sam3__sallocf(c, ((size_t)cin * plane + 1) / 2); /* (cin, H + 2, wp) */
    float *tb = sam3__sallocf(c, (size_t)c->nt * W);                                       /* per thread: (W) an input row */
    sam3__conv_bsrc src;
    sam3__gemm_args g;
    ptrdiff_t task;
    if (!xp || !tb || hw > INT_MAX || (size_t)9 * cin > INT_MAX) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < (ptrdiff_t)cin * (H + 2); task++) {
        const int i = (int)(task / (H + 2)), r = (int)(task % (H + 2)) - 1;
        uint16_t *d = xp + (size_t)i * plane + (size_t)(r + 1) * wp;
        float *t = sam3__thread_slice(tb, (size_t)W);
        if (r < 0 || r >= H) {
            memset(d, 0, (size_t)wp * sizeof(uint16_t));
            continue;
        }
        sam3__conv_in_row(x + (size_t)i * hw, H, W, lo ? lo + (size_t)i * lh * lw : NULL, lh, lw, r, t);
        d[0] = d[W + 1] = 0;
        SAM3__BF16_ROW(t, d + 1, W);
    }
    src.xp = xp, src.plane = plane, src.W = W, src.wp = wp;
    memset(&g, 0, sizeof(g));
    g.m = cout, g.n = (int)hw, g.k = 9 * cin, g.alpha = 1.0f, g.ah = l->wh, g.lda = 9 * cin;
    g.c = y, g.ldc = (int)hw, g.bpack = sam3__conv_bpack, g.bpack_arg = &src;
    if (!sam3__bgemm_run(c, sam3__bgemm_kern(c->bk), &g)) {
        sam3__release(c, mk);
        return SAM3_ERR_OUT_OF_MEMORY;
    }
    sam3__count(c, 18.0 * cout * cin * H * W); /* 9 taps an output and input channel, as the direct conv counts */
    /* the bias, and the bands' statistics while they are in cache */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (task = 0; task < (ptrdiff_t)cout * nty; task++) {
        const int o = (int)(task / nty), b = (int)(task % nty);
        const float bias = l->b ? l->b[o] : 0.0f;
        float *y0 = y + (size_t)o * hw + (size_t)4 * b * W;
        const size_t n = (size_t)SAM3__MIN(4, H - 4 * b) * W;
        size_t u;
        for (u = 0; u < n; u++) y0[u] += bias;
        if (st) sam3__band_stats(y0, n, st + (size_t)task * 3);
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
#endif
#endif
/* Tile rows per task of the pipelined Winograd conv (sam3__conv3x3_wino), or 0 for the phased
   one. Pipelined, each task takes a few tile rows through the input transform, the 36 products
   and the output transform on one thread, in buffers of its own, so the conv is one parallel
   region ending in one barrier; phased, every chunk of rows is three regions (transform in,
   products, transform out) over all threads. Beside a busy process a thread that shares its core
   is off for whole time slices, and every barrier then waits for it: the phased conv's many
   barriers cost it most of a thread. Quiet, the pipelined conv's smaller products make it a little
   slower. So pipelined where it can be: products split over our threads (a single-threaded BLAS),
   tasks of SAM3__WINO_TILES+ tiles (smaller ones lose to their products' overhead) and 4+ tasks a
   thread (the last round's imbalance): on 2 threads the maps from 144 x 144 on, on 16 none of the
   model's. Each thread holds 36 (cin + cout) floats a tile, 10.6 MB for 144 tiles of 256
   channels, within the bf16 file's peak. (Timings: the commits that set this.) */
/* Tile rows a product of the Winograd conv covers (with our threads splitting the products):
   SAM3__WINO_TILES+ tiles, from the map's width alone, so that its sums do not depend on the
   thread count. */
static int sam3__wino_block(const sam3_ctx *c, int ntx) { return SAM3__MAX(1, (c->wino_tiles + ntx - 1) / ntx); }
static int sam3__wino_rows(const sam3_ctx *c, int nty, int ntx) {
    const int gr = sam3__wino_block(c, ntx);
    return c->split && c->nt >= 2 && nty / gr >= 4 * c->nt ? gr : 0;
}
/* The dispatch: in bf16 for a bf16 weight (sam3__conv3x3_amx on AMX, else sam3__conv3x3_bf16),
   else Winograd; the direct sam3__ref_conv3x3 (the spec) in a reference build. */
static sam3_result sam3__conv3x3(sam3_ctx *c, const float *x, const float *lo, int lh, int lw, int cin, int H, int W, const sam3__lin *l,
                                 int cout, float *y, double *st) {
#if defined(SAM3__KREF)
    (void)sam3__wino_rows; /* the Winograd conv's, not built here */
    return sam3__ref_conv3x3(c, x, lo, lh, lw, cin, H, W, l, cout, y, st);
#else
#if defined(SAM3__BF16_VEC)
    if (l->wh && c->bk >= c->bkc && sam3__bgemm_kern(c->bk) != SAM3__BK_REF) {
#if defined(SAM3__BF16_AMX)
        if (sam3__bgemm_kern(c->bk) == SAM3__BK_AMX) return sam3__conv3x3_amx(c, x, lo, lh, lw, cin, H, W, l, cout, y, st);
#endif
        return sam3__conv3x3_bf16(c, x, lo, lh, lw, cin, H, W, l, cout, y, st);
    }
#endif
    return sam3__conv3x3_wino(c, x, lo, lh, lw, cin, H, W, l, cout, y, st);
#endif
}

/* ConvTranspose2d kernel 2 stride 2 (taps do not overlap), weight (cin, cout, 2, 2):
   y[o, 2r+dy, 2q+dx] = b[o] + sum_i W[i, o, dy, dx] x[i, r, q]. One GEMM for the four taps, then a
   scatter. x may be token-major (HW, cin) with x_tokens = 1. The GEMM runs in bf16 where the
   weights' products do (bf16 weights, or SAM3_PRECISION_BF16), as a Linear's would. The scatter
   also takes what follows the conv in the model, where asked: add (cout, 2H, 2W) added after the
   bias (the tracker's skips), then the exact GELU: the same sums as separate passes, in one pass
   over y instead of three (and one parallel region instead of three). */
static sam3_result sam3__convt2x2(sam3_ctx *c, const float *x, int x_tokens, int cin, int H, int W, const sam3__lin *l, int cout,
                                  const float *add, int gelu, float *y) {
    sam3__mark mk = sam3__mark_get(c);
    const size_t hw = (size_t)H * W;
    const int bf = l->wh || c->bf16;
    /* (4, cout, cin): row (t, o) = W[:, o, t], f32 or (bf) bf16 */
    float *wt = sam3__sallocf(c, bf ? ((size_t)4 * cout * cin + 1) / 2 : (size_t)4 * cout * cin);
    uint16_t *wth = (uint16_t *)(void *)wt;
    float *tmp = sam3__sallocf(c, (size_t)4 * cout * hw); /* (4, cout, H*W) */
    ptrdiff_t t;
    int i;
    if (!wt || !tmp) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)4 * cout * cin >= SAM3__PAR_MIN))
    for (i = 0; i < cin; i++) {
        int oo, tp;
        for (oo = 0; oo < cout; oo++)
            for (tp = 0; tp < 4; tp++) {
                const size_t d = ((size_t)tp * cout + oo) * cin + i, s = ((size_t)i * cout + oo) * 4 + tp;
                if (!bf) wt[d] = l->w[s];
                else wth[d] = l->wh ? l->wh[s] : sam3__f32_bf16(l->w[s]);
            }
    }
    sam3__gemm_mixed(c, 0, x_tokens, 4 * cout, (int)hw, cin, bf ? NULL : wt, bf ? wth : NULL, cin, x, NULL, x_tokens ? cin : (int)hw, 0.0f,
                     tmp, (int)hw);
    /* one task per output row (o, 2r + dy): taps (dy, 0) and (dy, 1) interleaved */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 16))
    for (t = 0; t < (ptrdiff_t)cout * 2 * H; t++) {
        const int o = (int)(t / (2 * H)), yy = (int)(t % (2 * H)), r = yy >> 1, dy = yy & 1;
        const float b = l->b[o];
        const float *s0 = tmp + ((size_t)(2 * dy) * cout + o) * hw + (size_t)r * W, *s1 = s0 + (size_t)cout * hw;
        float *dst = y + ((size_t)o * 2 * H + yy) * 2 * W;
        int q;
        if (add) {
            const float *ar = add + ((size_t)o * 2 * H + yy) * 2 * W;
            for (q = 0; q < W; q++) {
                dst[2 * q] = (s0[q] + b) + ar[2 * q];
                dst[2 * q + 1] = (s1[q] + b) + ar[2 * q + 1];
            }
        } else {
            for (q = 0; q < W; q++) {
                dst[2 * q] = s0[q] + b;
                dst[2 * q + 1] = s1[q] + b;
            }
        }
        if (gelu) sam3__gelu_bias_row(dst, 2 * W, NULL);
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* GroupNorm(groups) over (C, HW) with biased variance, then per-channel affine; in place. */
/* GroupNorm over x (C, hw) channel-major, in place, then ReLU when relu is set (the pixel
   decoder always follows it with one). The statistics come from the conv that wrote x, as np
   partials a channel (count, mean, sum of squared deviations; sam3__conv3x3), merged in double
   by Chan, Golub and LeVeque's pairwise update, which saves two passes over the map here (85 MB
   each at 288 x 288). */
static sam3_result sam3__groupnorm(sam3_ctx *c, float *x, int C, size_t hw, int groups, const double *st, int np, const sam3__norm *w,
                                   float eps, int relu) {
    const int cg = C / groups;
    const size_t BL = 16384, nbh = (hw + BL - 1) / BL;
    sam3__mark mk = sam3__mark_get(c);
    double *mu = (double *)sam3__salloc(c, (size_t)groups * 2 * sizeof(double)); /* (groups) means, (groups) 1/std */
    ptrdiff_t t;
    int g;
    if (!mu) return SAM3_ERR_OUT_OF_MEMORY;
    for (g = 0; g < groups; g++) {
        const double *p = st + (size_t)g * cg * np * 3;
        double n = 0, mean = 0, m2 = 0;
        int k;
        for (k = 0; k < cg * np; k++) {
            const double nb = p[3 * k], d = p[3 * k + 1] - mean, nn = n + nb;
            mean += d * nb / nn;
            m2 += p[3 * k + 2] + d * d * n * nb / nn;
            n = nn;
        }
        mu[g] = mean;
        mu[groups + g] = 1.0 / sqrt(m2 / n + eps);
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < (ptrdiff_t)((size_t)C * nbh); t++) {
        const int ch = (int)((size_t)t / nbh), gi = ch / cg;
        const size_t i0 = (size_t)t % nbh * BL, i1 = SAM3__MIN(hw, i0 + BL);
        const float inv = (float)mu[groups + gi], fmu = (float)mu[gi], a = w->w[ch], b = w->b[ch];
        float *q = x + (size_t)ch * hw;
        size_t i;
        if (relu)
            for (i = i0; i < i1; i++) {
                const float v = (q[i] - fmu) * inv * a + b;
                q[i] = v > 0 ? v : 0;
            }
        else
            for (i = i0; i < i1; i++) q[i] = (q[i] - fmu) * inv * a + b;
    }
    sam3__release(c, mk);
    return SAM3_OK;
}



/* The attentions below (sam3__mha_core and its wrappers) have an inner width di (the tracker's
   token<->image attentions project 256 -> 128): project q, k, v (D -> di), attend with nh heads of
   di/nh, project out (di -> D). qin (nq, D), kin and vin (nk, D), out (nq, D); out may alias qin. */
/* Many queries attending to a few keys (a prompt's tokens), reassociated: the scores
   q_h k_h^T = x (Wq_h^T k_h^T) + bq_h . k_h and the output sum_h P_h (v_h Wo_h^T) + bo, so the
   queries are never projected to width di and back: two (nq, D) x (D, nh nk) products instead of
   two (nq, D) x (D, di) ones (for the DETR encoder's cross-attention to a 5-token prompt, about a
   sixth of the arithmetic). The same sums in another order: ~1e-7 relative. */
static sam3_result sam3__mha_few_keys(sam3_ctx *c, const sam3__attn_w *w, const sam3__mha_args *ma, float *out, float *res) {
    const int nq = ma->nq, nk = ma->nk, D = ma->D, di = ma->di, nh = ma->nh;
    sam3__mark mk = sam3__mark_get(c);
    const int hd = di / nh, m = nh * nk, bf = ma->act_bf16 && (w->q.wh || c->bf16);
    const float scale = 1.0f / sqrtf((float)hd);
    float *k = sam3__sallocf(c, (size_t)nk * di);  /* (nk, di) */
    float *v = sam3__sallocf(c, (size_t)nk * di);  /* (nk, di) */
    float *g = sam3__sallocf(c, (size_t)m * D);    /* (nh nk, D) rows k_h[j] Wq_h */
    float *u = sam3__sallocf(c, (size_t)m * D);    /* (nh nk, D) rows v_h[j] Wo_h^T */
    float *cb = sam3__sallocf(c, (size_t)m);       /* (nh nk) bq_h . k_h[j] */
    float *sc = sam3__sallocf(c, (size_t)nq * m);  /* (nq, nh nk) scores, then probabilities */
    /* kd, vd (nh nk, di): row (h, j) k_h[j] (v_h[j]) at columns h hd .. (h + 1) hd, zero elsewhere:
       g = kd Wq and u = vd Wo^T are then one product each where a head's would be 2 nh small
       ones; the zeros add nothing to the sums */
    float *kd = sam3__sallocf(c, (size_t)m * di), *vd = sam3__sallocf(c, (size_t)m * di);
    int h, i;
    if (!k || !v || !g || !u || !cb || !sc || !kd || !vd) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear(c, ma->kin, nk, D, &w->k, di, k);
    sam3__linear(c, ma->vin, nk, D, &w->v, di, v);
    memset(kd, 0, (size_t)m * di * sizeof(float));
    memset(vd, 0, (size_t)m * di * sizeof(float));
    for (h = 0; h < nh; h++) {
        int j, d;
        for (j = 0; j < nk; j++) {
            const float *kj = k + (size_t)j * di + (size_t)h * hd;
            float t = 0;
            memcpy(kd + (size_t)(h * nk + j) * di + (size_t)h * hd, kj, (size_t)hd * sizeof(float));
            memcpy(vd + (size_t)(h * nk + j) * di + (size_t)h * hd, v + (size_t)j * di + (size_t)h * hd, (size_t)hd * sizeof(float));
            if (w->q.b)
                for (d = 0; d < hd; d++) t += w->q.b[h * hd + d] * kj[d];
            cb[h * nk + j] = t;
        }
    }
    sam3__gemm_xw(c, 0, 0, m, D, di, kd, di, &w->q, 0, D, 0.0f, g, D);
    sam3__gemm_xw(c, 0, 1, m, D, di, vd, di, &w->o, 0, di, 0.0f, u, D);
    sam3__gemm_act(c, bf, 0, 1, nq, m, D, ma->qin, D, g, D, 0.0f, sc, m);
    /* an exponential a score (on the calling thread, the DETR encoder's 5184 x 40 scores kept
       every other thread waiting) */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 64) if((double)nq * m * SAM3__PAR_EXP >= SAM3__PAR_MIN))
    for (i = 0; i < nq; i++) sam3__softmax_groups(sc + (size_t)i * m, cb, scale, nh, nk);
    sam3__gemm_act(c, bf, 0, 0, nq, D, m, sc, m, u, D, 0.0f, out, D);
    if (res) {
        sam3__vadd_bias(c, res, out, w->o.b, nq, D);
    } else if (w->o.b) {
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(nq * D) >= SAM3__PAR_MIN))
        for (i = 0; i < nq; i++) {
            float *r = out + (size_t)i * D;
            int j;
            for (j = 0; j < D; j++) r[j] += w->o.b[j];
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}
/* A few queries attending to many keys (the tracker's tokens to the image), reassociated the
   other way: the scores q_h k_h^T = (q_h Wk_h) x^T + q_h . bk_h, whose last term, one number per
   query row, the softmax cancels, and the output P_h v_h = (P_h x) Wv_h^T + bv_h (each row of P_h
   sums to 1), so the keys are never projected to width di: two (nh nq, D) x (D, nk) products
   instead of two (nk, D) x (D, di) ones. The same sums in another order, ~1e-7 relative. */
static sam3_result sam3__mha_few_queries(sam3_ctx *c, const sam3__attn_w *w, const sam3__mha_args *ma, float *out, float *res) {
    const int nq = ma->nq, nk = ma->nk, D = ma->D, di = ma->di, nh = ma->nh, hd = di / nh, m = nh * nq;
    const int bf = ma->act_bf16 && (w->k.wh || c->bf16);
    const float scale = 1.0f / sqrtf((float)hd);
    sam3__mark mk = sam3__mark_get(c);
    float *q = sam3__sallocf(c, (size_t)nq * di);  /* (nq, di), then the attention's output */
    float *g = sam3__sallocf(c, (size_t)m * D);    /* (nh nq, D) rows q_h[i] Wk_h, then P_h x */
    float *sc = sam3__sallocf(c, (size_t)m * nk);  /* (nh nq, nk) scores, then probabilities */
    int h, i;
    if (!q || !g || !sc) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear(c, ma->qin, nq, D, &w->q, di, q);
    for (h = 0; h < nh; h++)
        sam3__gemm_xw(c, 0, 0, nq, D, hd, q + (size_t)h * hd, di, &w->k, (size_t)h * hd * D, D, 0.0f, g + (size_t)h * nq * D, D);
    if (bf) { /* the scale on g rather than on the product: the bf16 products take alpha 1 */
        for (i = 0; i < m * D; i++) g[i] *= scale;
        sam3__gemm_act(c, 1, 0, 1, m, nk, D, g, D, ma->kin, D, 0.0f, sc, nk);
    } else {
        sam3__gemm(c, 0, 1, m, nk, D, scale, g, D, ma->kin, D, 0.0f, sc, nk);
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)m * nk >= SAM3__PAR_MIN))
    for (i = 0; i < m; i++) sam3__softmax_rows(sc + (size_t)i * nk, 1, nk);
    sam3__gemm_act(c, bf, 0, 0, m, D, nk, sc, nk, ma->vin, D, 0.0f, g, D);
    for (h = 0; h < nh; h++)
        sam3__gemm_xw(c, 0, 1, nq, hd, D, g + (size_t)h * nq * D, D, &w->v, (size_t)h * hd * D, D, 0.0f, q + (size_t)h * hd, di);
    if (w->v.b)
        for (i = 0; i < nq; i++) {
            int j;
            for (j = 0; j < di; j++) q[(size_t)i * di + j] += w->v.b[j];
        }
    sam3__linear_res(c, q, nq, di, &w->o, D, out, res);
    sam3__release(c, mk);
    return SAM3_OK;
}
/* One row of q or k (C, heads of hd): + bias b (C, or NULL), then adjacent pairs (2m, 2m+1) of
   every head rotated by the table row cs (hd/2 cos, sin pairs; NULL: not rotated). */
static void sam3__rope_row(float *r, const float *b, const float *cs, int C, int hd) {
    int h, m;
    if (b)
        for (m = 0; m < C; m++) r[m] += b[m];
    if (!cs) return;
    for (h = 0; h < C; h += hd)
        for (m = 0; m < hd / 2; m++) {
            float a = r[h + 2 * m], bb = r[h + 2 * m + 1], co = cs[2 * m], si = cs[2 * m + 1];
            r[h + 2 * m] = a * co - bb * si;
            r[h + 2 * m + 1] = bb * co + a * si;
        }
}

/* Adds the projections' biases bq, bk (C, or NULL) to q and k and rotates adjacent pairs (2m, 2m+1)
   of every head: q in place, k written straight into the key panels sam3__attention_packed reads,
   kt (nb, nh, npan, hd, PW), zero-padded: the pass over K that packing needs is this one (and the
   biases added here rather than after the products save two passes over q and k). Row i of q and k
   is key i % nk of batch i / nk and takes table row i % nk (its position in the window, or in the
   grid). */
static void sam3__rope_pack(sam3_ctx *c, const sam3__rope_args *ra, float *kt) {
    const int PW = SAM3__ATT_PW, nk = ra->nk, hd = ra->hd, nh = ra->nh, C = nh * hd, npan = (nk + PW - 1) / PW, nkp = npan * PW;
    const float *tab = ra->tab, *bk = ra->bk;
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < ra->nb * nkp; i++) {
        const int b = i / nkp, j = i % nkp, jb = j / PW, jr = j % PW;
        const float *cs = tab ? tab + (size_t)j * hd : NULL;
        int h, m;
        if (j >= nk) { /* panel padding */
            for (h = 0; h < nh; h++)
                for (m = 0; m < hd; m++) kt[(((size_t)b * nh + h) * npan + jb) * hd * PW + (size_t)m * PW + jr] = 0;
            continue;
        }
        sam3__rope_row(ra->q + ((size_t)b * nk + j) * ra->ld, ra->bq, cs, C, hd);
        {
            const float *r = ra->k + ((size_t)b * nk + j) * ra->ld;
            for (h = 0; h < nh; h++) {
                float *dst = kt + (((size_t)b * nh + h) * npan + jb) * hd * PW + jr;
                const float *rh = r + (size_t)h * hd, *bh = bk ? bk + (size_t)h * hd : NULL;
                if (!cs)
                    for (m = 0; m < hd; m++) dst[(size_t)m * PW] = rh[m] + (bh ? bh[m] : 0.0f);
                else
                    for (m = 0; m < hd / 2; m++) {
                        float a = rh[2 * m], bb = rh[2 * m + 1], co = cs[2 * m], si = cs[2 * m + 1];
                        if (bh) a += bh[2 * m], bb += bh[2 * m + 1];
                        dst[(size_t)(2 * m) * PW] = a * co - bb * si;
                        dst[(size_t)(2 * m + 1) * PW] = bb * co + a * si;
                    }
            }
        }
    }
}

/* v + bias into per-head rows vp (nb, nh, nk, hd) for sam3__attention_packed. */
static void sam3__v_pack(sam3_ctx *c, const sam3__rope_args *ra, float *vp) {
    const int nk = ra->nk, nh = ra->nh, hd = ra->hd;
    const float *bv = ra->bv;
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < ra->nb * nk; i++) {
        const int b = i / nk, j = i % nk;
        const float *r = ra->v + (size_t)i * ra->ld;
        int h, m;
        for (h = 0; h < nh; h++) {
            float *dst = vp + (((size_t)b * nh + h) * nk + j) * hd;
            const float *rh = r + (size_t)h * hd;
            if (bv)
                for (m = 0; m < hd; m++) dst[m] = rh[m] + bv[(size_t)h * hd + m];
            else
                memcpy(dst, rh, (size_t)hd * sizeof(float));
        }
    }
}

#if defined(SAM3__ATT_BF16)
#if defined(SAM3__BF16_X86)
/* One key's head for sam3__rope_pack_bf16, hd a multiple of 32: r (hd) + b (or NULL) rotated by cs
   (hd / 2 (cos, sin) pairs, or NULL: none), as that function's scalar loop rotates it (the same
   products and sums, unfused), split into bf16 halves and scattered into its column of a key
   panel: pair m's (hi, lo, hi) at 32-bit offsets m BNR, (hd / 2 + m) BNR and (hd + m) BNR of dst. */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__rope_key_bf16(const float *r, const float *b, const float *cs, int hd,
                                                                                        void *dst) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(SAM3__BNR));
    const __m512i sgn = _mm512_set1_epi64(0x80000000ll); /* the sign bit of each pair's first value */
    uint32_t *d32 = (uint32_t *)dst;
    int d;
    for (d = 0; d < hd; d += 32) {
        __m512 x[2];
        __m512i hi, lo, w;
        int u;
        for (u = 0; u < 2; u++) {
            x[u] = _mm512_loadu_ps(r + d + 16 * u);
            if (b) x[u] = _mm512_add_ps(x[u], _mm512_loadu_ps(b + d + 16 * u));
            if (cs) { /* (a, b) -> (a cos - b sin, b cos + a sin) */
                const __m512 t = _mm512_loadu_ps(cs + d + 16 * u);
                /* (maskz forms: g++ 12 warns inside the plain ones, -Wmaybe-uninitialized on _mm512_undefined) */
                const __m512 sw = _mm512_mul_ps(_mm512_maskz_permute_ps(0xffff, x[u], 0xb1), _mm512_maskz_movehdup_ps(0xffff, t));
                x[u] = _mm512_add_ps(_mm512_mul_ps(x[u], _mm512_maskz_moveldup_ps(0xffff, t)),
                                     _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(sw), sgn)));
            }
        }
        hi = (__m512i)_mm512_cvtne2ps_pbh(x[1], x[0]);
        for (u = 0; u < 2; u++) { /* x - hi: exact, the low half */
            const __m256i half = u ? _mm512_maskz_extracti64x4_epi64(0xff, hi, 1) : _mm512_maskz_extracti64x4_epi64(0xff, hi, 0);
            w = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, half), 16);
            x[u] = _mm512_sub_ps(x[u], _mm512_castsi512_ps(w));
        }
        lo = (__m512i)_mm512_cvtne2ps_pbh(x[1], x[0]);
        _mm512_i32scatter_epi32(d32 + (size_t)(d / 2) * SAM3__BNR, idx, hi, 4);
        _mm512_i32scatter_epi32(d32 + (size_t)(hd / 2 + d / 2) * SAM3__BNR, idx, lo, 4);
        _mm512_i32scatter_epi32(d32 + (size_t)(hd + d / 2) * SAM3__BNR, idx, hi, 4);
    }
}
#endif
/* sam3__rope_pack for the bf16 attention, q left as it is (sam3__attention_packed_bf16 adds its
   bias and rotates each row as it reads it): k rotated and split into bf16
   halves (sam3__attn_rows_bf16 says why) in B panels of BNR keys, kt (nb, nh, nkp / BNR, 3 hdp / 2,
   BNR, 2): key j's pair (2m, 2m + 1) of head h at [b][h][j / BNR][m][j % BNR] (high halves), at
   pair m + hdp / 2 (low halves) and m + hdp (high halves again); zero past nk and hd (hdp: hd
   rounded up to 32). A task is a panel of keys, head by head: a head's panel (6 KB at hd 64) is
   filled while it sits in L1, where key by key every head's would be (96 KB). */
static void sam3__rope_pack_bf16(sam3_ctx *c, const sam3__rope_args *ra, uint16_t *kt) {
    const int R = SAM3__BNR, nk = ra->nk, hd = ra->hd, nh = ra->nh, nkp = (nk + R - 1) / R * R, npan = nkp / R;
    const int hdp = (hd + 31) / 32 * 32;
    const float *tab = ra->tab, *bk = ra->bk;
    const int kq = SAM3__ATT_KSPLIT * hdp; /* bf16 values a key */
    int i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
    for (i = 0; i < ra->nb * npan; i++) {
        const int b = i / npan, p = i % npan;
        int h, m, u, q;
        for (h = 0; h < nh; h++)
            for (q = 0; q < R; q++) {
                const int j = p * R + q;
                const float *cs = tab && j < nk ? tab + (size_t)j * hd : NULL;
                const float *rh = j < nk ? ra->k + ((size_t)b * nk + j) * ra->ld + (size_t)h * hd : NULL, *bh = bk ? bk + (size_t)h * hd : NULL;
                uint16_t *dst = kt + (((size_t)b * nh + h) * npan + p) * kq * R + (size_t)q * 2;
#if defined(SAM3__BF16_X86)
                if (j < nk && hd % 32 == 0) { /* AVX-512 (the bf16 attention runs only where it is) */
                    sam3__rope_key_bf16(rh, bh, cs, hd, dst);
                    continue;
                }
#endif
                for (u = 0; u < SAM3__ATT_KSPLIT; u++)
                    for (m = j < nk ? hd / 2 : 0; m < hdp / 2; m++) {
                        const size_t o = (size_t)(u * hdp / 2 + m) * 2 * R;
                        dst[o] = dst[o + 1] = 0;
                    }
                if (j >= nk) continue;
                for (m = 0; m < hd / 2; m++) {
                    float a = rh[2 * m], bb = rh[2 * m + 1], x[2];
                    int e;
                    if (bh) a += bh[2 * m], bb += bh[2 * m + 1];
                    x[0] = cs ? a * cs[2 * m] - bb * cs[2 * m + 1] : a;
                    x[1] = cs ? bb * cs[2 * m] + a * cs[2 * m + 1] : bb;
                    for (e = 0; e < 2; e++) {
                        const uint16_t hi = sam3__f32_bf16(x[e]), lo = sam3__f32_bf16(x[e] - sam3__bf16_f32(hi));
                        dst[(size_t)m * 2 * R + e] = hi;
                        dst[(size_t)(hdp / 2 + m) * 2 * R + e] = lo;
                        dst[(size_t)(hdp + m) * 2 * R + e] = hi;
                    }
                }
            }
    }
}
#if defined(SAM3__BF16_X86)
/* Keys j, j + 1 (rows a, b), channels 0..31 (+ bias bv or NULL), into the 64 bf16 of their
   panel row: (32, 2), rounded as sam3__bf16_row_avx512 rounds. */
SAM3__KTARGET("avx512f,avx512bw,avx512bf16") static void sam3__v_pair_bf16(const float *a, const float *b, const float *bv,
                                                                                       uint16_t *dst) {
    __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16), b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
    __m512i ka, kb;
    if (bv) {
        const __m512 c0 = _mm512_loadu_ps(bv), c1 = _mm512_loadu_ps(bv + 16);
        a0 = _mm512_add_ps(a0, c0), a1 = _mm512_add_ps(a1, c1), b0 = _mm512_add_ps(b0, c0), b1 = _mm512_add_ps(b1, c1);
    }
    ka = (__m512i)_mm512_cvtne2ps_pbh(a1, a0); /* key j's 32 channels */
    kb = (__m512i)_mm512_cvtne2ps_pbh(b1, b0);
    sam3__store_pairs(ka, kb, dst);
}
#endif
/* sam3__v_pack for the bf16 attention: v + bias rounded to bf16 as B panels of BNR channels with
   keys in pairs, vp (nb, nh, hdp / BNR, nkp / 2, BNR, 2): key j's channel d of head h at
   [b][h][d / BNR][j / 2][d % BNR][j % 2], zero past nk and hd (ra->vd where set, no bias). */
static void sam3__v_pack_bf16(sam3_ctx *c, const sam3__rope_args *ra, uint16_t *vp) {
    const int R = SAM3__BNR, nk = ra->nk, nh = ra->nh, hd = ra->vd ? ra->vd : ra->hd, ldv = ra->vd ? ra->ldv : ra->ld;
    const int nkp = (nk + R - 1) / R * R, hdp = (hd + 31) / 32 * 32;
    const float *v = ra->v, *bv = ra->vd ? NULL : ra->bv;
#if defined(SAM3__BF16_X86)
    const int pairs = hd % R == 0 && c->bk != SAM3__BK_REF; /* keys in pairs, through sam3__v_pair_bf16 */
#else
    const int pairs = 0;
    (void)c; /* only in OpenMP clauses */
#endif
    int i;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < ra->nb * nkp; i++) {
        const int b = i / nkp, j = i % nkp;
        int h, d;
#if defined(SAM3__BF16_X86)
        if (pairs && j % 2 == 0 && j + 1 < nk) {
            /* a whole pair of keys, 32 channels at a time: a 128-byte row of the panel */
            for (h = 0; h < nh; h++)
                for (d = 0; d < hd; d += R)
                    sam3__v_pair_bf16(v + ((size_t)b * nk + j) * ldv + (size_t)h * hd + d, v + ((size_t)b * nk + j + 1) * ldv + (size_t)h * hd + d,
                                      bv ? bv + (size_t)h * hd + d : NULL,
                                      vp + ((size_t)b * nh + h) * nkp * hdp + (size_t)(d / R) * nkp * R + (size_t)(j / 2) * 2 * R);
            continue;
        }
#endif
        if (pairs && j % 2 == 1 && j < nk) continue; /* its pair's */
        for (h = 0; h < nh; h++) {
            uint16_t *dst = vp + ((size_t)b * nh + h) * nkp * hdp + (size_t)(j / 2) * 2 * R + (j % 2);
            for (d = j < nk ? hd : 0; d < hdp; d++) dst[(size_t)(d / R) * nkp * R + (size_t)(d % R) * 2] = 0;
            if (j >= nk) continue;
            {
                const float *rh = v + ((size_t)b * nk + j) * ldv + (size_t)h * hd;
                for (d = 0; d < hd; d++)
                    dst[(size_t)(d / R) * nkp * R + (size_t)(d % R) * 2] = sam3__f32_bf16(bv ? rh[d] + bv[(size_t)h * hd + d] : rh[d]);
            }
        }
    }
}
#endif

/* How an attention with head dim hd runs where its weights' products run in bf16 (the ViT's, the
   DETR encoder's): SAM3__ATT_TILES the whole attention on the bf16 tiles (from bf16 kernel bka
   on: AMX by default), SAM3__ATT_PV f32 scores and P.V in bf16 (AVX512-BF16 without AMX), or 0
   all f32. */
static int sam3__att_bf16_mode(const sam3_ctx *c, int hd) {
#if defined(SAM3__ATT_BF16)
    if (c->bk >= c->bka && c->bk != SAM3__BK_REF) return SAM3__ATT_TILES;
#endif
#if defined(SAM3__ATT_PV_BF16) && defined(SAM3__FAST_ATTENTION)
    if (c->bk == SAM3__BK_AVX512 && c->bka <= SAM3__BK_AMX && hd % SAM3__BNR == 0) return SAM3__ATT_PV;
#endif
    (void)c, (void)hd;
    return 0;
}
#if defined(SAM3__ATT_BF16)
/* The self-attention of q, k, v (n, di; biases added) into q, with bf16 products where the
   weights' run in bf16, as sam3__vit_layer runs the ViT's (sam3__att_bf16_mode). Returns 0 when
   it does not apply (the caller runs the f32 attention), 1 with *rc set when it ran. */
static int sam3__self_attention_bf16(sam3_ctx *c, const sam3__attn_w *w, int n, int nh, int di, float *q, const float *k, const float *v,
                                     sam3_result *rc) {
    const int hd = di / nh, nkb = (n + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, hdp = (hd + 31) / 32 * 32;
    const int mode = sam3__att_bf16_mode(c, hd);
    sam3__rope_args ra;
    sam3__mark mk;
    uint16_t *vb;
    if (n < c->att_min || hd % 2 || !(c->bf16 || w->q.wh) || !mode) return 0;
    memset(&ra, 0, sizeof(ra)); /* one batch, no biases, no rotation */
    ra.q = q, ra.k = k, ra.v = v, ra.ld = di, ra.nb = 1, ra.nk = n, ra.nh = nh, ra.hd = hd;
    mk = sam3__mark_get(c);
    vb = (uint16_t *)(void *)sam3__sallocf(c, ((size_t)nh * nkb * hdp + 1) / 2); /* (nh, hdp / BNR, nkb / 2, BNR, 2) bf16 */
    if (!vb) return (*rc = SAM3_ERR_OUT_OF_MEMORY), 1;
    sam3__v_pack_bf16(c, &ra, vb);
    if (mode == SAM3__ATT_TILES) {
        uint16_t *kt = (uint16_t *)(void *)sam3__sallocf(c, ((size_t)nh * nkb * SAM3__ATT_KSPLIT * hdp + 1) / 2); /* (nh, nkb / BNR, 3 hdp / 2, BNR, 2) */
        if (!kt) return (*rc = SAM3_ERR_OUT_OF_MEMORY), 1;
        sam3__rope_pack_bf16(c, &ra, kt);
        *rc = sam3__attention_packed_bf16(c, c->bk, &ra, kt, vb);
    } else {
#if defined(SAM3__ATT_PV_BF16) && defined(SAM3__FAST_ATTENTION)
        const int npw = (n + SAM3__ATT_PW - 1) / SAM3__ATT_PW * SAM3__ATT_PW;
        float *kt = sam3__sallocf(c, (size_t)nh * npw * hd); /* (nh, npw / PW, hd, PW) */
        if (!kt) return (*rc = SAM3_ERR_OUT_OF_MEMORY), 1;
        sam3__rope_pack(c, &ra, kt);
        *rc = sam3__attention_packed_fast(c, &ra, kt, NULL, vb);
#endif
    }
    sam3__release(c, mk);
    return 1;
}
#endif
/* out (nq, D) = the attention's output; with res, out is scratch and res += it (sam3__linear_res). */
static sam3_result sam3__mha_core(sam3_ctx *c, const sam3__attn_w *w, const sam3__mha_args *ma, float *out, float *res) {
    const int nq = ma->nq, nk = ma->nk, D = ma->D, di = ma->di, nh = ma->nh, causal = ma->causal;
    const float *relh = ma->relh;
    sam3__mark mk;
    float *q, *k, *v;
    sam3__attn_args at;
    sam3_result rc;
    if (!relh && !causal && nk > 0 && nh * nk < di && nq >= 8 * nk) return sam3__mha_few_keys(c, w, ma, out, res);
    /* with bf16 weights the keys' and values' bf16 products are the faster way, unless the
       reassociated form's own products run in bf16 too */
    if (ma->few_queries && (!w->k.wh || ma->act_bf16) && !relh && !causal && nq > 0 && nk >= 8 * nq) return sam3__mha_few_queries(c, w, ma, out, res);
    mk = sam3__mark_get(c);
    q = sam3__sallocf(c, (size_t)nq * di); /* (nq, di) */
    k = sam3__sallocf(c, (size_t)nk * di); /* (nk, di) */
    v = sam3__sallocf(c, (size_t)nk * di); /* (nk, di) */
    if (!q || !k || !v) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear(c, ma->qin, nq, D, &w->q, di, q);
    sam3__linear(c, ma->kin, nk, D, &w->k, di, k);
    sam3__linear(c, ma->vin, nk, D, &w->v, di, v);
    memset(&at, 0, sizeof(at)); /* q becomes the output */
    at.nq = nq, at.nk = nk, at.nh = nh, at.hd = di / nh, at.q = at.out = q, at.k = k, at.v = v;
    at.ldq = at.ldk = at.ldv = at.ldo = di, at.causal = causal, at.relh = relh, at.relw = ma->relw, at.rel_s = ma->rel_s;
#if defined(SAM3__ATT_BF16)
    if (!relh && !causal && nq == nk && sam3__self_attention_bf16(c, w, nq, nh, di, q, k, v, &rc)) {
        if (rc != SAM3_OK) return rc;
    } else
#endif
    if ((rc = sam3__attention_rel(c, &at)) != SAM3_OK) return rc;
    sam3__linear_res(c, q, nq, di, &w->o, D, out, res);
    sam3__release(c, mk);
    return SAM3_OK;
}
/* Sam3Attention (and CLIP's attention): width D throughout. */
static sam3_result sam3__mha(sam3_ctx *c, const sam3__attn_w *w, const float *qin, const float *kin, const float *vin, int nq,
                             int nk, int D, int nh, int causal, float *out) {
    sam3__mha_args ma;
    memset(&ma, 0, sizeof(ma));
    ma.qin = qin, ma.kin = kin, ma.vin = vin, ma.nq = nq, ma.nk = nk, ma.D = ma.di = D, ma.nh = nh, ma.causal = causal;
    return sam3__mha_core(c, w, &ma, out, NULL);
}
/* res (nq, D) += the attention, its output bias added in the residual's pass; tmp (nq, D) scratch. */
static sam3_result sam3__mha_res(sam3_ctx *c, const sam3__attn_w *w, const float *qin, const float *kin, const float *vin, int nq,
                                 int nk, int D, int nh, float *tmp, float *res) {
    sam3__mha_args ma;
    memset(&ma, 0, sizeof(ma));
    ma.qin = qin, ma.kin = kin, ma.vin = vin, ma.nq = nq, ma.nk = nk, ma.D = ma.di = D, ma.nh = nh;
    return sam3__mha_core(c, w, &ma, tmp, res);
}

/* Sam3MLP / Sam3DecoderMLP: Linear, activation, Linear (relu = 1: ReLU, else exact GELU).
   x (n, in) -> y (n, out); y may alias x only when out <= in. */
static sam3_result sam3__mlp2_res(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l1, int hidden, const sam3__lin *l2,
                                  int out, int relu, float *y, float *res);
static sam3_result sam3__mlp2(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l1, int hidden, const sam3__lin *l2,
                              int out, int relu, float *y) {
    return sam3__mlp2_res(c, x, n, in, l1, hidden, l2, out, relu, y, NULL);
}
/* The same with res: y is scratch and res += the MLP's output (sam3__linear_res). */
static sam3_result sam3__mlp2_res(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l1, int hidden, const sam3__lin *l2,
                                  int out, int relu, float *y, float *res) {
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, (size_t)n * hidden); /* (n, hidden) */
    if (!h) return SAM3_ERR_OUT_OF_MEMORY;
    if (relu) {
        sam3__linear_relu(c, x, n, in, l1, hidden, h);
    } else {
        sam3__gemm_xw(c, 0, 1, n, hidden, in, x, in, l1, 0, in, 0.0f, h, hidden);
        sam3__gelu_bias(c, h, (size_t)n, hidden, l1->b);
    }
    sam3__linear_res(c, h, n, hidden, l2, out, y, res);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3DecoderMLP with three layers (ReLU, ReLU): x (n, in) -> y (n, out). */
static sam3_result sam3__mlp3(sam3_ctx *c, const float *x, int n, int in, const sam3__lin *l, int hidden, int out, float *y) {
    sam3__mark mk = sam3__mark_get(c);
    float *a = sam3__sallocf(c, (size_t)n * hidden), *b = sam3__sallocf(c, (size_t)n * hidden); /* (n, hidden) each */
    if (!a || !b) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear_relu(c, x, n, in, &l[0], hidden, a);
    sam3__linear_relu(c, a, n, hidden, &l[1], hidden, b);
    sam3__linear(c, b, n, hidden, &l[2], out, y);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* LayerNorm2d (channels_first): normalise each pixel of a (C, hw) map over its C channels, then
   the exact GELU where gelu is set (the tracker's upscaling follows it with one). SAM3__LN2D_P
   pixels at a time, so that every pass reads rows of the map: per pixel the same double sums, in
   the same channel order, as one pixel at a time (which strided over the channels: 3x the time
   on the tracker's 64 x 288 x 288 map, 2 threads). */
#define SAM3__LN2D_P 64
static void sam3__layernorm2d(sam3_ctx *c, float *x, int C, size_t hw, const sam3__norm *w, float eps, int gelu) {
    const ptrdiff_t nb = (ptrdiff_t)((hw + SAM3__LN2D_P - 1) / SAM3__LN2D_P);
    ptrdiff_t blk;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 4) if((double)C * hw >= SAM3__PAR_MIN))
    for (blk = 0; blk < nb; blk++) {
        const size_t p0 = (size_t)blk * SAM3__LN2D_P;
        const int np = (int)SAM3__MIN((size_t)SAM3__LN2D_P, hw - p0);
        double mu[SAM3__LN2D_P], var[SAM3__LN2D_P]; /* (np) */
        float fmu[SAM3__LN2D_P], inv[SAM3__LN2D_P];  /* (np) */
        int ch, j;
        for (j = 0; j < np; j++) mu[j] = var[j] = 0;
        for (ch = 0; ch < C; ch++) {
            const float *r = x + (size_t)ch * hw + p0;
            for (j = 0; j < np; j++) mu[j] += r[j];
        }
        for (j = 0; j < np; j++) mu[j] /= C;
        for (ch = 0; ch < C; ch++) {
            const float *r = x + (size_t)ch * hw + p0;
            for (j = 0; j < np; j++) var[j] += ((double)r[j] - mu[j]) * ((double)r[j] - mu[j]);
        }
        for (j = 0; j < np; j++) {
            inv[j] = (float)(1.0 / sqrt(var[j] / C + (double)eps));
            fmu[j] = (float)mu[j];
        }
        for (ch = 0; ch < C; ch++) {
            float *r = x + (size_t)ch * hw + p0;
            const float a = w->w[ch], b = w->b[ch];
            for (j = 0; j < np; j++) r[j] = (r[j] - fmu[j]) * inv[j] * a + b;
            if (gelu) sam3__gelu_bias_row(r, np, NULL);
        }
    }
}

/* Sam3TrackerFeedForward: proj_in, ReLU, (Linear, ReLU) x n_hidden, proj_out. x (n, in) -> y (n, out). */
static sam3_result sam3__ffn(sam3_ctx *c, const sam3__ffn_w *f, const float *x, int n, int in, int hidden, int out, float *y) {
    sam3__mark mk = sam3__mark_get(c);
    float *a = sam3__sallocf(c, (size_t)n * hidden), *b = sam3__sallocf(c, (size_t)n * hidden); /* (n, hidden) */
    int i;
    if (!a || !b) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear_relu(c, x, n, in, &f->in, hidden, a);
    for (i = 0; i < f->n_hidden; i++) {
        float *t;
        sam3__linear_relu(c, a, n, hidden, &f->hidden[i], hidden, b);
        t = a; a = b; b = t;
    }
    sam3__linear(c, a, n, hidden, &f->out, out, y);
    sam3__release(c, mk);
    return SAM3_OK;
}



/* A RoPE self-attention over packed keys (the ViT's): the biases added, q and k rotated, K packed
   into kbuf and V into vbuf, then the attention in mode abf (sam3__att_bf16_mode): the whole
   attention on the bf16 tiles, f32 scores with P.V in bf16, or f32. ra->q holds the output. A
   cross-attention (ra->nq, the memory attention's) runs on the tiles alone. */
static sam3_result sam3__attention_rope(sam3_ctx *c, int abf, const sam3__rope_args *ra, float *kbuf, float *vbuf) {
#if defined(SAM3__ATT_BF16)
    if (abf == SAM3__ATT_TILES) {
        sam3_result rc;
        SAM3__PROF_T(t0);
        sam3__rope_pack_bf16(c, ra, (uint16_t *)(void *)kbuf);
        sam3__v_pack_bf16(c, ra, (uint16_t *)(void *)vbuf);
        SAM3__PROF_LAP(c->prof[SAM3__PS_PACK], t0);
        rc = ra->nq ? sam3__attention_cross_bf16(c, c->bk, ra, (const uint16_t *)(void *)kbuf, (const uint16_t *)(void *)vbuf)
                    : sam3__attention_packed_bf16(c, c->bk, ra, (const uint16_t *)(void *)kbuf, (const uint16_t *)(void *)vbuf);
        SAM3__PROF_ADD(c->prof[SAM3__PS_ATT], t0);
        return rc;
    }
    SAM3_ASSERT(!ra->nq);
#if defined(SAM3__ATT_PV_BF16) && defined(SAM3__FAST_ATTENTION)
    if (abf == SAM3__ATT_PV) {
        sam3__rope_pack(c, ra, kbuf);
        sam3__v_pack_bf16(c, ra, (uint16_t *)(void *)vbuf);
        return sam3__attention_packed_fast(c, ra, kbuf, NULL, (const uint16_t *)(void *)vbuf);
    }
#endif
#endif
    (void)abf;
    SAM3_ASSERT(!ra->nq);
    sam3__rope_pack(c, ra, kbuf);
    sam3__v_pack(c, ra, vbuf);
    return sam3__attention_packed(c, ra, kbuf, vbuf);
}

/* The DETR decoder's box relative position bias (Sam3DetrDecoder's boxRPB): */
static float sam3__rpb_log(float d) {
    /* sign(8d) log2(|8d| + 1) / log2(8) */
    float v = d * 8.0f, s = v > 0 ? 1.0f : v < 0 ? -1.0f : 0.0f;
    return s * log2f(fabsf(v) + 1.0f) / 3.0f;
}

/* Box relative-position bias (Sam3DetrDecoder._get_rpb_matrix) in its two factors: the bias of
   query q (row 0 the presence token, zero) and head h at key (r, c) is relh[h, q, r] + relw[h, q, c],
   which the attention adds itself, as the reference's broadcast sum of the y and x terms does, so
   the (nh, Q + 1, H*W) matrix (33 MB a layer) is never materialised.
   ref: (Q, 4) cx, cy, w, h. */
static sam3_result sam3__box_rpb(sam3_ctx *c, const float *ref, int Q, int S, float *relh, float *relw) {
    const sam3_model *m = c->m;
    const sam3__dec_w *w = &m->dec_w;
    const int D = m->neck.fpn, nh = m->dec.heads;
    sam3__mark mk = sam3__mark_get(c);
    float *hbuf = sam3__sallocf(c, (size_t)c->nt * D * 16); /* per thread (D, 16) */
    int i, t;
    if (!hbuf) return SAM3_ERR_OUT_OF_MEMORY;
    for (i = 0; i < nh; i++) {
        memset(relh + (size_t)i * (Q + 1) * S, 0, (size_t)S * sizeof(float));
        memset(relw + (size_t)i * (Q + 1) * S, 0, (size_t)S * sizeof(float));
    }
    /* The two MLPs (2 -> D -> nh, ReLU) evaluated directly, 16 key rows or columns at a time with
       their hidden layer in L1: as products of K = 2 and N = nh = 8 (through a 15 MB hidden map
       each) they would be bound by memory. Task: (axis, query); axis 0 is x (key columns), 1 y. */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 4))
    for (t = 0; t < 2 * Q; t++) {
        const int ax = t / Q, q = t % Q;
        const sam3__lin *l1 = ax ? &w->rpb_y[0] : &w->rpb_x[0], *l2 = ax ? &w->rpb_y[1] : &w->rpb_x[1];
        const float *b = ref + 4 * q;
        const float lo = ax ? b[1] - 0.5f * b[3] : b[0] - 0.5f * b[2], hi = ax ? b[1] + 0.5f * b[3] : b[0] + 0.5f * b[2];
        float *dst = (ax ? relh : relw) + (size_t)(1 + q) * S; /* head h at + h (Q + 1) S */
        float *hid = sam3__thread_slice(hbuf, (size_t)D * 16); /* (D, 16) hidden layer */
        int i0, r, j, hh, h0;
        for (i0 = 0; i0 < S; i0 += 16) {
            const int n = SAM3__MIN(16, S - i0);
            float d0[16], d1[16];
            for (r = 0; r < 16; r++) {
                const float co = (float)SAM3__MIN(i0 + r, S - 1) / (float)S;
                d0[r] = sam3__rpb_log(co - lo);
                d1[r] = sam3__rpb_log(co - hi);
            }
            for (j = 0; j < D; j++) {
                const float wa = sam3__lw(l1, 2 * (size_t)j), wb = sam3__lw(l1, 2 * (size_t)j + 1), bj = l1->b ? l1->b[j] : 0.0f;
                float *hv = hid + (size_t)j * 16;
                int u;
                for (u = 0; u < 16; u += SAM3__VX) {
                    const sam3__vx v = sam3__vx_add(sam3__vx_fmadd(sam3__vx_load(d1 + u), sam3__vx_set1(wb), sam3__vx_mul(sam3__vx_load(d0 + u), sam3__vx_set1(wa))),
                                                    sam3__vx_set1(bj));
                    sam3__vx_store(hv + u, sam3__vx_max(v, sam3__vx_set1(0.0f)));
                }
            }
            for (h0 = 0; h0 < nh; h0 += 8) { /* 8 heads together: 8 independent sums (one chain would wait on each add) */
                const int nhh = SAM3__MIN(8, nh - h0);
                float acc[8][16];
                sam3__vx av[8][16 / SAM3__VX];
                int u;
                for (hh = 0; hh < 8; hh++)
                    for (u = 0; u < 16 / SAM3__VX; u++) av[hh][u] = sam3__vx_set1(0.0f);
                for (j = 0; j < D; j++) {
                    sam3__vx hv[16 / SAM3__VX];
                    for (u = 0; u < 16 / SAM3__VX; u++) hv[u] = sam3__vx_load(hid + (size_t)j * 16 + u * SAM3__VX);
                    for (hh = 0; hh < nhh; hh++) {
                        const sam3__vx wv = sam3__vx_set1(sam3__lw(l2, (size_t)(h0 + hh) * D + j));
                        for (u = 0; u < 16 / SAM3__VX; u++) av[hh][u] = sam3__vx_fmadd(wv, hv[u], av[hh][u]);
                    }
                }
                for (hh = 0; hh < nhh; hh++)
                    for (u = 0; u < 16 / SAM3__VX; u++) sam3__vx_store(acc[hh] + u * SAM3__VX, av[hh][u]);
                for (hh = 0; hh < nhh; hh++) {
                    const float b2 = l2->b ? l2->b[h0 + hh] : 0.0f;
                    for (r = 0; r < n; r++) dst[(size_t)(h0 + hh) * (Q + 1) * S + i0 + r] = acc[hh][r] + b2;
                }
            }
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ---- this pass's kernel table (sam3__ktab) ---- */
static const sam3__ktab SAM3__KN(sam3__kt) = {SAM3__KNAME,
    sam3__att_bf16_mode,
    sam3__attention_rel,
    sam3__attention_rope,
    sam3__bf16_detect,
    sam3__box_rpb,
    sam3__conv1x1,
    sam3__conv3x3,
    sam3__convt2x2,
    sam3__ffn,
    sam3__gelu_bias,
    sam3__gemm,
    sam3__gemm_act,
    sam3__gemm_bf16_gelu,
    sam3__gemm_bf16_at,
    sam3__gemm_mixed,
    sam3__gemm_wx,
    sam3__gemm_xw,
    sam3__groupnorm,
    sam3__layernorm,
    sam3__layernorm2d,
    sam3__layernorm_pos,
    sam3__lerp_x_plan,
    sam3__lerp_x_row,
    sam3__lerp_y_threshold_row,
    sam3__linear,
    sam3__linear_res,
    sam3__ln_row,
    sam3__mha,
    sam3__mha_core,
    sam3__mha_res,
    sam3__mlp2,
    sam3__mlp2_res,
    sam3__mlp3,
    sam3__sgemm_builtin,
    sam3__sigmoid_row,
    sam3__stream_fence,
    sam3__vadd,
    sam3__vadd_bias,
    sam3__wino_rows,
};
#if defined(SAM3__DISPATCH) /* the next pass defines these again */
#undef SAM3__GKC
#undef SAM3__UNROLL_G
#undef SAM3__GW
#undef SAM3__GMR
#undef SAM3__GNR
#undef SAM3__GMC
#undef SAM3__GNC
#undef SAM3__BKC
#undef SAM3__BMR
#undef SAM3__BMC
#undef SAM3__BNC
#undef SAM3__BKC_AMX
#undef SAM3__BMC_AMX
#undef SAM3__BNC_AMX
#undef SAM3__BKC_MAX
#undef SAM3__BMC_MAX
#undef SAM3__BNB
#undef SAM3__BNC_MAX
#undef SAM3__BF16_X86
#undef SAM3__BF16_AMX
#undef SAM3__BG_FLAGS
#undef SAM3__BF16_ARM
#undef SAM3__BF16_VEC
#undef SAM3__BF16_ROW
#undef SAM3__BTILE_VEC
#undef SAM3__BROWS
#undef SAM3__BDECL
#undef SAM3__BSTEP
#undef SAM3__BSTORE
#undef SAM3__BREF
#undef SAM3__BSMALL_M
#undef SAM3__BPAR_MIN
#undef SAM3__SIMD
#undef SAM3__GEMM_TILE_MIN
#undef SAM3__GEMM_TILES
#undef SAM3__VX
#undef sam3__vx_set1
#undef sam3__vx_load
#undef sam3__vx_store
#undef sam3__vx_add
#undef sam3__vx_sub
#undef sam3__vx_fmadd
#undef sam3__vx_fnmadd
#undef sam3__vx_mul
#undef sam3__vx_div
#undef sam3__vx_abs
#undef sam3__vx_max
#define sam3__vx_max SAM3__KN(sam3__vx_max)
#undef sam3__vx_min
#define sam3__vx_min SAM3__KN(sam3__vx_min)
#undef sam3__vx_copysign
#define sam3__vx_copysign SAM3__KN(sam3__vx_copysign)
#undef SAM3__ATT_TILE_MAX
#undef SAM3__EXP2_ROW
#undef SAM3__EXP_ROW_ARG
#undef sam3__vx_exp_row
#undef SAM3__SMALL_M
#undef SAM3__PREFETCH_L2
#undef SAM3__SMALL_G
#undef SAM3__VW
#undef SAM3__MR
#undef SAM3__UNROLL_MR
#undef SAM3__VF_LOAD
#undef SAM3__VF_STORE
#undef SAM3__QK_TILE
#undef SAM3__FUSED_EXP
#undef SAM3__ATT_PW
#undef SAM3__ATT_ROWS
#undef SAM3__ATT_KB
#undef SAM3__EXP_SUM_MAX
#undef SAM3__ATT_PV_BF16
#undef SAM3__ATT_BF16
#undef SAM3__LN2D_P
#endif
#endif /* SAM3__KPASS */

#if defined(SAM3_IMPLEMENTATION) && !defined(SAM3__KPASS) && !defined(SAM3__IMPL2_INCLUDED)
#define SAM3__IMPL2_INCLUDED
/* ==== sam3: preprocessing (Sam3ImageProcessor) ==== */
/* Antialiased bilinear resize on uint8, bit-exact with torchvision's uint8 CPU kernel (the one
   the reference runs on x86 with AVX2): per axis, triangle-filter weights computed in double,
   normalised, quantised to int16 with the largest precision that keeps them below 2^15, then two
   fixed-point passes (horizontal, then vertical) with a uint8 intermediate. */
typedef struct sam3__aa_weights {
    int prec, taps;  /* fixed-point precision; taps per output (max) */
    int *xmin, *n;   /* (out) first input index and tap count */
    int32_t *w;      /* (out, taps) quantised */
    double *wd;      /* (out, taps) before quantisation (the float antialiased resize uses these) */
} sam3__aa_weights;

static sam3_result sam3__aa_weights_make(sam3_ctx *c, int in, int out, sam3__aa_weights *aw) {
    double scale = (double)in / out, support = scale >= 1.0 ? scale : 1.0, inv = scale >= 1.0 ? 1.0 / scale : 1.0;
    double wmax = 0, *wd;
    int i, j, taps = (int)ceil(support) * 2 + 1;
    aw->taps = taps;
    aw->xmin = (int *)sam3__salloc(c, (size_t)out * sizeof(int));
    aw->n = (int *)sam3__salloc(c, (size_t)out * sizeof(int));
    aw->w = (int32_t *)sam3__salloc(c, (size_t)out * taps * sizeof(int32_t));
    wd = aw->wd = (double *)sam3__salloc(c, (size_t)out * taps * sizeof(double));
    if (!aw->xmin || !aw->n || !aw->w || !wd) return SAM3_ERR_OUT_OF_MEMORY;
    for (i = 0; i < out; i++) {
        double ctr = scale * (i + 0.5), total = 0;
        int64_t xmin = (int64_t)(ctr - support + 0.5), xmax = (int64_t)(ctr + support + 0.5);
        double *w = wd + (size_t)i * taps;
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        if (xmax - xmin > taps) xmax = xmin + taps; /* cannot happen; keeps the table in bounds */
        aw->xmin[i] = (int)xmin;
        aw->n[i] = (int)(xmax - xmin);
        for (j = 0; j < aw->n[i]; j++) {
            double t = fabs((j + xmin - ctr + 0.5) * inv);
            w[j] = t < 1.0 ? 1.0 - t : 0.0;
            total += w[j];
        }
        for (j = 0; j < aw->n[i]; j++) {
            if (total != 0.0) w[j] /= total;
            if (w[j] > wmax) wmax = w[j];
        }
    }
    aw->prec = 0;
    while (aw->prec < 22 && (int)(0.5 + wmax * (double)(1 << (aw->prec + 1))) < 32768) aw->prec++;
    for (i = 0; i < out; i++)
        for (j = 0; j < taps; j++) {
            double v = j < aw->n[i] ? wd[(size_t)i * taps + j] * (double)(1 << aw->prec) : 0.0;
            aw->w[(size_t)i * taps + j] = (int32_t)(int16_t)(v >= 0 ? (int)(0.5 + v) : (int)(-0.5 + v));
        }
    return SAM3_OK;
}

static unsigned char sam3__clip_u8(int32_t v) { return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* Antialiased bilinear resize of a float map (F.interpolate(bilinear, antialias=True,
   align_corners=False)): the same separable triangle weights as the uint8 kernel, unquantised,
   width first. in (ih, iw) -> out (oh, ow). */
static sam3_result sam3__aa_resize_f32(sam3_ctx *c, const float *in, int ih, int iw, float *out, int oh, int ow) {
    sam3__mark mk = sam3__mark_get(c);
    sam3__aa_weights ax, ay;
    float *mid = sam3__sallocf(c, (size_t)ih * ow); /* (ih, ow) */
    int y, x, j;
    sam3_result rc;
    if (!mid) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__aa_weights_make(c, iw, ow, &ax)) != SAM3_OK || (rc = sam3__aa_weights_make(c, ih, oh, &ay)) != SAM3_OK) return rc;
    for (y = 0; y < ih; y++)
        for (x = 0; x < ow; x++) {
            float acc = 0;
            for (j = 0; j < ax.n[x]; j++) acc += (float)ax.wd[(size_t)x * ax.taps + j] * in[(size_t)y * iw + ax.xmin[x] + j];
            mid[(size_t)y * ow + x] = acc;
        }
    for (y = 0; y < oh; y++)
        for (x = 0; x < ow; x++) {
            float acc = 0;
            for (j = 0; j < ay.n[y]; j++) acc += (float)ay.wd[(size_t)y * ay.taps + j] * mid[(size_t)(ay.xmin[y] + j) * ow + x];
            out[(size_t)y * ow + x] = acc;
        }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Reads the caller's pixels as planar RGB uint8 (3, h, w): gray is replicated and alpha dropped,
   as PIL's convert("RGB") does. */
static void sam3__to_planar_rgb(sam3_ctx *c, const uint8_t *px, int w, int h, int stride, int bpp, unsigned char *out) {
    int y;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (y = 0; y < h; y++) {
        const uint8_t *row = px + (size_t)y * stride;
        int x, ch;
        for (ch = 0; ch < 3; ch++) {
            unsigned char *o = out + ((size_t)ch * h + y) * w;
            int src = bpp == 1 ? 0 : ch;
            for (x = 0; x < w; x++) o[x] = row[(size_t)x * bpp + src];
        }
    }
}

/* pixel_values (3, S, S) from planar RGB (3, h, w): resize to ow x oh (skipping an axis whose size
   already matches, as the reference does), then (v - mean/rescale) / (std/rescale) in fp32 (the
   constants are fp32 products, as the reference fuses rescale and normalize), then zero padding
   to the bottom/right of the S x S frame (SAM 1; SAM 3 squashes to ow = oh = S). The resized
   uint8 image goes to u8_out when not NULL (3, oh, ow). */
static sam3_result sam3__preprocess_to(sam3_ctx *c, const unsigned char *rgb, int w, int h, int ow, int oh, int S, float *pix,
                                       unsigned char *u8_out) {
    sam3__mark mk = sam3__mark_get(c);
    sam3__aa_weights ww, wh;
    unsigned char *mid, *fin;
    int ch;
    sam3_result rc;
    mid = (unsigned char *)sam3__salloc(c, (size_t)3 * h * ow);  /* (3, h, ow) after the horizontal pass */
    fin = (unsigned char *)sam3__salloc(c, (size_t)3 * oh * ow); /* (3, oh, ow) */
    if (!mid || !fin) return SAM3_ERR_OUT_OF_MEMORY;
    if (w != ow) {
        if ((rc = sam3__aa_weights_make(c, w, ow, &ww)) != SAM3_OK) return rc;
        for (ch = 0; ch < 3; ch++) {
            int y;
            SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
            for (y = 0; y < h; y++) {
                const unsigned char *src = rgb + ((size_t)ch * h + y) * w;
                unsigned char *dst = mid + ((size_t)ch * h + y) * ow;
                int x, j;
                for (x = 0; x < ow; x++) {
                    const int32_t *k = ww.w + (size_t)x * ww.taps;
                    const unsigned char *sp = src + ww.xmin[x];
                    int32_t acc = 1 << (ww.prec - 1);
                    for (j = 0; j < ww.n[x]; j++) acc += k[j] * (int32_t)sp[j];
                    dst[x] = sam3__clip_u8(acc >> ww.prec);
                }
            }
        }
    } else {
        memcpy(mid, rgb, (size_t)3 * h * ow);
    }
    if (h != oh) {
        if ((rc = sam3__aa_weights_make(c, h, oh, &wh)) != SAM3_OK) return rc;
        for (ch = 0; ch < 3; ch++) {
            int y;
            SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
            for (y = 0; y < oh; y++) {
                const int32_t *k = wh.w + (size_t)y * wh.taps;
                unsigned char *dst = fin + ((size_t)ch * oh + y) * ow;
                int x, j;
                for (x = 0; x < ow; x++) {
                    int32_t acc = 1 << (wh.prec - 1);
                    for (j = 0; j < wh.n[y]; j++) acc += k[j] * (int32_t)mid[((size_t)ch * h + wh.xmin[y] + j) * ow + x];
                    dst[x] = sam3__clip_u8(acc >> wh.prec);
                }
            }
        }
    } else {
        memcpy(fin, mid, (size_t)3 * oh * ow);
    }
    for (ch = 0; ch < 3; ch++) {
        const float inv_r = (float)(1.0 / c->m->proc.rescale);
        const float mean = c->m->proc.mean[ch] * inv_r, sd = c->m->proc.std[ch] * inv_r;
        int y, x;
        for (y = 0; y < S; y++) {
            float *dst = pix + ((size_t)ch * S + y) * S;
            const unsigned char *src = fin + ((size_t)ch * oh + y) * ow;
            for (x = 0; x < S; x++) dst[x] = (y < oh && x < ow) ? ((float)src[x] - mean) / sd : 0.0f;
        }
    }
    if (u8_out) memcpy(u8_out, fin, (size_t)3 * oh * ow);
    sam3__release(c, mk);
    return SAM3_OK;
}
static sam3_result sam3__preprocess(sam3_ctx *c, const unsigned char *rgb, int w, int h, float *pix, unsigned char *u8_out) {
    const int S = c->m->proc.image;
    return sam3__preprocess_to(c, rgb, w, h, S, S, S, pix, u8_out);
}
/* SAM 1's pixel_values (SamImageProcessor): the longest side to longest_edge (aspect kept, the
   short side rounded half up), normalised, zero-padded to the square frame; *w1, *h1 get the
   image's size inside the frame. */
static sam3_result sam3__sam1_preprocess(sam3_ctx *c, const unsigned char *rgb, int w, int h, float *pix, int *w1, int *h1) {
    const double sc = (double)c->m->s1.longest_edge / (double)SAM3__MAX(w, h);
    *h1 = SAM3__MAX(1, (int)(h * sc + 0.5));
    *w1 = SAM3__MAX(1, (int)(w * sc + 0.5));
    return sam3__preprocess_to(c, rgb, w, h, *w1, *h1, c->m->proc.image, pix, NULL);
}

/* ==== sam3: vision backbone (Sam3ViTModel) ==== */
/* Axial 2-D RoPE tables (Sam3ViTRotaryEmbedding), (n_pos, hd/2, 2) = cos, sin per rotated pair.
   Pair m < hd/4 turns with the column (x), pair m >= hd/4 with the row (y), both with the same
   frequencies theta^(-4k/hd). The token at flat index t of an end x end grid sits at
   (t % end, t / end) * scale; fp32 throughout, as the reference computes it. */
static void sam3__rope_table(const sam3__vit_cfg *v, int end, float scale, float *tab) {
    int hd = v->head_dim, nq = hd / 4, t, m;
    for (t = 0; t < end * end; t++) {
        float px = (float)(t % end) * scale, py = (float)(t / end) * scale;
        for (m = 0; m < hd / 2; m++) {
            int k = m < nq ? m : m - nq;
            float freq = 1.0f / powf((float)v->rope_theta, (float)(4 * k) / (float)hd);
            float ang = (m < nq ? px : py) * freq;
            tab[((size_t)t * (hd / 2) + m) * 2] = cosf(ang);
            tab[((size_t)t * (hd / 2) + m) * 2 + 1] = sinf(ang);
        }
    }
}

/* Sam3ViTPatchEmbeddings + Sam3ViTEmbeddings: conv patch x patch (no bias) as im2col GEMM, plus
   the pretrain-grid absolute position embedding tiled (not interpolated) over the token grid. */
static sam3_result sam3__vit_embeddings(sam3_ctx *c, const float *pix, float *x) {
    const sam3__vit_cfg *v = &c->m->vit;
    const int g = v->grid, p = v->patch, S = c->m->proc.image, C = v->hidden, K = 3 * p * p, pg = v->pretrain_grid;
    sam3__mark mk = sam3__mark_get(c);
    float *cols = sam3__sallocf(c, (size_t)g * g * K); /* (N, 3*p*p), column = ch*p*p + ky*p + kx */
    int t;
    if (!cols) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < g * g; t++) {
        int ty = t / g, tx = t % g, ch, ky;
        float *o = cols + (size_t)t * K;
        for (ch = 0; ch < 3; ch++)
            for (ky = 0; ky < p; ky++)
                memcpy(o + (size_t)(ch * p + ky) * p, pix + ((size_t)ch * S + (size_t)ty * p + ky) * S + (size_t)tx * p,
                       (size_t)p * sizeof(float));
    }
    sam3__gemm_xw(c, 0, 1, g * g, C, K, cols, K, &c->m->vit_w.patch, 0, K, 0.0f, x, C);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < g * g; t++) {
        const float *pe = c->m->vit_w.pos + ((size_t)((t / g) % pg) * pg + (t % g) % pg) * C;
        float *r = x + (size_t)t * C;
        int j;
        for (j = 0; j < C; j++) r[j] += pe[j];
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Window partition fused with the block's first LayerNorm, shared by the SAM 3 and SAM 1 ViTs:
   h gets window (wy, wx) row-major, tokens row-major inside each window, ws = g for a global
   block (then the order is the grid's). The reference pads after the norm, so padded tokens are
   zero rows. x (g*g, C) -> h (nwy*nwy*ws*ws, C). */
static void sam3__window_layernorm(sam3_ctx *c, const float *x, int g, int ws, int C, const sam3__norm *ln, float eps, float *h) {
    const int nwy = (g + ws - 1) / ws, wt = ws * ws, n = nwy * nwy * wt;
    int u;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (u = 0; u < n; u++) {
        int win = u / wt, t = u % wt;
        int gy = (win / nwy) * ws + t / ws, gx = (win % nwy) * ws + t % ws;
        if (gy < g && gx < g) c->k->ln_row(x + ((size_t)gy * g + gx) * C, h + (size_t)u * C, C, ln, eps);
        else memset(h + (size_t)u * C, 0, (size_t)C * sizeof(float));
    }
}
/* The inverse: x (g*g, C) += the window-ordered rows of src (+ b, (C) or NULL), padding dropped. */
static void sam3__window_add(sam3_ctx *c, float *x, const float *src, const float *b, int g, int ws, int C) {
    const int nwy = (g + ws - 1) / ws, wt = ws * ws, n = nwy * nwy * wt;
    int u;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (u = 0; u < n; u++) {
        int win = u / wt, t = u % wt, j;
        int gy = (win / nwy) * ws + t / ws, gx = (win % nwy) * ws + t % ws;
        if (gy < g && gx < g) {
            float *dst = x + ((size_t)gy * g + gx) * C;
            const float *r = src + (size_t)u * C;
            if (b)
                for (j = 0; j < C; j++) dst[j] += r[j] + b[j];
            else
                for (j = 0; j < C; j++) dst[j] += r[j];
        }
    }
}
/* The second half of a ViT block: x += fc2(GELU(fc1(LayerNorm(x)))). h (N, C) and mlp
   (N, inter) are scratch. */
static void sam3__vit_mlp(sam3_ctx *c, float *x, int N, int C, int inter, const sam3__norm *ln, float eps, const sam3__lin *fc1,
                          const sam3__lin *fc2, float *h, float *mlp) {
    /* where both products run in bf16, fc1's bias and GELU ride on its tiles and its output is
       bf16 (the first half of mlp), fc2's input as it is (sam3__gemm_bf16_gelu); with AMX as the
       A tiles fc2 reads, where mlp holds them (ldt: their tile rows apart) */
    const size_t ldt = (size_t)16 * (((size_t)inter + 31) / 32 * 32);
    const int tiles = ((size_t)N + 31) / 32 * 2 * ldt <= (size_t)N * inter * 2; /* bf16 values mlp holds */
    int r;
    SAM3__PROF_T(t0);
    sam3__layernorm(c, x, h, N, C, ln, eps);
    SAM3__PROF_LAP(c->prof[SAM3__PS_LN2], t0);
    if ((c->bf16 || (fc1->wh && fc2->wh)) &&
        (r = sam3__gemm_bf16_gelu(c, N, inter, C, h, C, fc1->w, fc1->wh, C, fc1->b, (uint16_t *)(void *)mlp, inter, tiles ? ldt : 0)) != 0) {
        SAM3__PROF_LAP(c->prof[SAM3__PS_FC1], t0);
        if (r == 2) sam3__gemm_bf16_at(c, N, C, inter, (const uint16_t *)(void *)mlp, ldt, fc2->w, fc2->wh, inter, h, C);
        else sam3__gemm_mixed(c, 0, 1, N, C, inter, NULL, (const uint16_t *)(void *)mlp, inter, fc2->w, fc2->wh, inter, 0.0f, h, C);
    } else {
        sam3__gemm_xw(c, 0, 1, N, inter, C, h, C, fc1, 0, C, 0.0f, mlp, inter);
        sam3__gelu_bias(c, mlp, (size_t)N, inter, fc1->b);
        SAM3__PROF_LAP(c->prof[SAM3__PS_FC1], t0);
        sam3__gemm_xw(c, 0, 1, N, C, inter, mlp, inter, fc2, 0, inter, 0.0f, h, C);
    }
    SAM3__PROF_LAP(c->prof[SAM3__PS_FC2], t0);
    sam3__vadd_bias(c, x, h, fc2->b, N, C);
    SAM3__PROF_ADD(c->prof[SAM3__PS_ADD2], t0);
}

/* Sam3ViTLayer: pre-norm block, windowed (with zero padding to a multiple of the window, padded
   tokens attending as ordinary keys, as the reference does) or global RoPE attention, then the
   exact-GELU MLP. x: (N, C) token-major, updated in place. */
static sam3_result sam3__vit_layer(sam3_ctx *c, int li, float *x, float *h, float *q, float *k, float *vv, float *mlp) {
    const sam3__vit_cfg *v = &c->m->vit;
    const sam3__vit_layer_w *w = &c->m->vit_w.layers[li];
    const int g = v->grid, C = v->hidden, hd = v->head_dim, N = g * g;
    const int ws = v->window, nwy = (g + ws - 1) / ws, wt = ws * ws;
    const int global = v->is_global[li];
    const int n = global ? N : nwy * nwy * wt; /* tokens attended over, padding included */
    sam3_result rc;

    SAM3__PROF_T(t0);
    /* padded tokens are zero rows after the norm: their q, k, v are the biases */
    sam3__window_layernorm(c, x, g, global ? g : ws, C, &w->ln1, v->ln_eps, h);
    SAM3__PROF_LAP(c->prof[SAM3__PS_LN1], t0);
    {
        /* q, k, v as one (n, 3C) product when the file keeps their weights together (one wider
           product splits into fuller tiles over the threads), else three (n, C) products;
           their biases and the packing for the attention in the passes after them: K packed
           into h (free now), V into mlp (free until the MLP); the attention writes over q. */
        const int fused = w->qkv.w || w->qkv.wh, ld = fused ? 3 * C : C;
        float *qq = q, *kk = fused ? q + C : k, *vs = fused ? q + 2 * C : vv;
        const int nb = global ? 1 : n / wt, nk = global ? N : wt;
        const int abf = (c->bf16 || w->qkv.wh || w->attn.q.wh) ? sam3__att_bf16_mode(c, hd) : 0;
        sam3__rope_args ra;
        if (fused) {
            sam3__gemm_xw(c, 0, 1, n, 3 * C, C, h, C, &w->qkv, 0, C, 0.0f, q, 3 * C);
        } else {
            sam3__gemm_xw(c, 0, 1, n, C, C, h, C, &w->attn.q, 0, C, 0.0f, qq, C);
            sam3__gemm_xw(c, 0, 1, n, C, C, h, C, &w->attn.k, 0, C, 0.0f, kk, C);
            sam3__gemm_xw(c, 0, 1, n, C, C, h, C, &w->attn.v, 0, C, 0.0f, vs, C);
        }
        SAM3__PROF_LAP(c->prof[SAM3__PS_QKV], t0);
        memset(&ra, 0, sizeof(ra));
        ra.q = qq, ra.k = kk, ra.v = vs, ra.ld = ld, ra.bq = w->attn.q.b, ra.bk = w->attn.k.b, ra.bv = w->attn.v.b;
        ra.nb = nb, ra.nk = nk, ra.nh = v->heads, ra.hd = hd, ra.tab = global ? c->rope_glb : c->rope_win;
        rc = sam3__attention_rope(c, abf, &ra, h, mlp);
        if (rc != SAM3_OK) return rc;
        SAM3__PROF_T(t1);
        sam3__gemm_xw(c, 0, 1, n, C, C, qq, ld, &w->attn.o, 0, C, 0.0f, h, C);
        SAM3__PROF_LAP(c->prof[SAM3__PS_PROJ], t1);
        if (global) sam3__vadd_bias(c, x, h, w->attn.o.b, N, C);
        else sam3__window_add(c, x, h, w->attn.o.b, g, ws, C);
        SAM3__PROF_ADD(c->prof[SAM3__PS_ADD1], t1);
    }
    sam3__vit_mlp(c, x, N, C, v->inter, &w->ln2, v->ln_eps, &w->fc1, &w->fc2, h, mlp);
    return SAM3_OK;
}

/* Sam3ViTModel: embeddings, pre-LayerNorm (no final norm), the blocks. pix (3, S, S) -> x (N, C). */
static sam3_result sam3__vit_model(sam3_ctx *c, const float *pix, float *x) {
    const sam3__vit_cfg *v = &c->m->vit;
    const int g = v->grid, C = v->hidden, N = g * g;
    const int nwy = (g + v->window - 1) / v->window, np = SAM3__MAX(N, nwy * nwy * v->window * v->window);
    /* h also holds the key panels, each batch's keys padded to whole panels */
    /* keys padded to whole panels: of the f32 attention (ATT_PW) and of the bf16 one (BNR, 2 bytes a value) */
    const int nkpf = SAM3__MAX(nwy * nwy * ((v->window * v->window + SAM3__ATT_PW_MAX - 1) / SAM3__ATT_PW_MAX * SAM3__ATT_PW_MAX),
                               (N + SAM3__ATT_PW_MAX - 1) / SAM3__ATT_PW_MAX * SAM3__ATT_PW_MAX);
    const int nph = SAM3__MAX(np, nkpf);
    const int nkph = SAM3__MAX(nwy * nwy * ((v->window * v->window + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR),
                               (N + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR);
    /* bf16 K (V: a third), in floats, where the attention can run on the bf16 tiles */
    const size_t bneed = sam3__att_bf16_mode(c, v->head_dim) == SAM3__ATT_TILES ?
                             ((size_t)nkph * v->heads * ((v->head_dim + 31) / 32 * 32) * SAM3__ATT_KSPLIT + 1) / 2 : 0;
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, SAM3__MAX((size_t)nph * C, bneed)); /* (nph, C) normed input, then key panels or attention output */
    /* (np, 3C) q, k, v of one product, or three (np, C) blocks; attention output, projections */
    float *q = sam3__sallocf(c, (size_t)3 * np * C);
    float *k = q ? q + (size_t)np * C : NULL, *vv = q ? q + (size_t)2 * np * C : NULL;
    /* (N, intermediate); before the MLP, the attention's per-head values (np, C) (f32) or bneed (bf16) */
    float *mlp = sam3__sallocf(c, SAM3__MAX(SAM3__MAX((size_t)N * v->inter, (size_t)np * C), bneed));
    sam3_result rc;
    int i;
    char name[32];
    if (!h || !q || !mlp) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__PROF_T(t0);
    if ((rc = sam3__vit_embeddings(c, pix, x)) != SAM3_OK) return rc;
    sam3__tap(c, "vit.embed", x, 2, N, C, 0);
    sam3__layernorm(c, x, x, N, C, &c->m->vit_w.ln_pre, v->ln_eps);
    SAM3__PROF_ADD(c->prof[SAM3__PS_EMBED], t0);
    sam3__tap(c, "vit.ln_pre", x, 2, N, C, 0);
    for (i = 0; i < v->layers; i++) {
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the vision trunk (block %d)", i);
        sam3__progress(c, "vision trunk", i, v->layers);
        if ((rc = sam3__vit_layer(c, i, x, h, q, k, vv, mlp)) != SAM3_OK) return rc;
        snprintf(name, sizeof(name), "vit.layer.%d", i);
        sam3__tap(c, name, x, 2, N, C, 0);
    }
    sam3__tap(c, "vit.out", x, 2, N, C, 0);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: neck (Sam3VisionNeck) ==== */
/* Sam3FPNLayer for each kept level: scale 4 = ConvT, GELU, ConvT; scale 2 = ConvT; scale 1 =
   nothing; scale 0.5 = MaxPool 2x2; then proj1 (1x1) and proj2 (3x3). xt: trunk output (N, C)
   token-major; out: (D, side, side) channel-major. */
static sam3_result sam3__fpn_layer(sam3_ctx *c, const sam3__fpn_w *w, int s2, int side, const float *xt, float *out) {
    const sam3_model *m = c->m;
    const int g = m->vit.grid, C = m->vit.hidden, D = m->neck.fpn;
    sam3__mark mk = sam3__mark_get(c);
    const float *src = xt;
    int src_tokens = 1, cin = C, hw = g;
    float *p1;
    sam3_result rc;
    if (s2 >= 4) {
        float *a1 = sam3__sallocf(c, (size_t)(C / 2) * 4 * g * g); /* (C/2, 2g, 2g) */
        if (!a1) return SAM3_ERR_OUT_OF_MEMORY;
        if ((rc = sam3__convt2x2(c, xt, 1, C, g, g, &w->up1, C / 2, NULL, s2 == 8, a1)) != SAM3_OK) return rc; /* GELU before up2 */
        src = a1; src_tokens = 0; cin = C / 2; hw = 2 * g;
        if (s2 == 8) {
            float *a2 = sam3__sallocf(c, (size_t)(C / 4) * 16 * g * g); /* (C/4, 4g, 4g) */
            if (!a2) return SAM3_ERR_OUT_OF_MEMORY;
            if ((rc = sam3__convt2x2(c, a1, 0, C / 2, 2 * g, 2 * g, &w->up2, C / 4, NULL, 0, a2)) != SAM3_OK) return rc;
            src = a2; cin = C / 4; hw = 4 * g;
        }
    } else if (s2 == 1) {
        float *mp = sam3__sallocf(c, (size_t)C * side * side); /* (C, g/2, g/2) */
        int ch;
        if (!mp) return SAM3_ERR_OUT_OF_MEMORY;
        SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
        for (ch = 0; ch < C; ch++) {
            int y, x2;
            for (y = 0; y < side; y++)
                for (x2 = 0; x2 < side; x2++) {
                    const float *r0 = xt + ((size_t)(2 * y) * g + 2 * x2) * C + ch, *r1 = r0 + (size_t)g * C;
                    float a = SAM3__MAX(r0[0], r0[C]), b = SAM3__MAX(r1[0], r1[C]);
                    mp[((size_t)ch * side + y) * side + x2] = SAM3__MAX(a, b);
                }
        }
        src = mp; src_tokens = 0; hw = side;
    }
    SAM3_ASSERT(hw == side);
    (void)hw; /* only the assertion reads it */
    p1 = sam3__sallocf(c, (size_t)D * side * side); /* (D, side, side) */
    if (!p1) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__conv1x1(c, src, src_tokens, cin, side * side, &w->proj1, D, p1);
    if ((rc = sam3__conv3x3(c, p1, NULL, 0, 0, D, side, side, &w->proj2, D, out, NULL)) != SAM3_OK) return rc;
    sam3__release(c, mk);
    return SAM3_OK;
}

static sam3_result sam3__vision_neck(sam3_ctx *c) {
    const sam3_model *m = c->m;
    const int D = m->neck.fpn, last = m->neck.n_kept - 1, side = m->neck.side[last];
    int j, t;
    char name[32];
    sam3_result rc;
    for (j = 0; j < m->neck.n_kept; j++) {
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the neck");
        sam3__progress(c, "vision neck", j, m->neck.n_kept);
        if ((rc = sam3__fpn_layer(c, &m->fpn_w[j], m->neck.scale_x2[j], m->neck.side[j], c->vit_out, c->fpn[j])) != SAM3_OK) return rc;
        snprintf(name, sizeof(name), "fpn.%d", j);
        sam3__tap(c, name, c->fpn[j], 3, D, m->neck.side[j], m->neck.side[j]);
    }
    /* The detector reads the last kept level as a token sequence. */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < side * side; t++) {
        int ch;
        for (ch = 0; ch < D; ch++) c->l2_tok[(size_t)t * D + ch] = c->fpn[last][(size_t)ch * side * side + t];
    }
    return SAM3_OK;
}

/* ==== sam3: SAM 1 vision encoder (SamVisionEncoder) ==== */
/* Decomposed relative position of SamVisionAttention for one S x S block of tokens: with the
   unscaled queries q (S*S rows, stride ldq, heads of hd), relh[h][t][ky] = q_h[t] . Th[y - ky + S - 1]
   and relw[h][t][kx] = q_h[t] . Tw[x - kx + S - 1] for t = y*S + x. */
static void sam3__sam1_relpos(sam3_ctx *c, const float *q, int ldq, int S, int nh, int hd, const float *th, const float *tw, float *relh,
                              float *relw) {
    int t;
    sam3__count(c, 4.0 * S * S * nh * S * hd); /* two dot products of hd per token, head and k */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < S * S; t++) {
        int y = t / S, x = t % S, h, k, d;
        for (h = 0; h < nh; h++) {
            const float *qv = q + (size_t)t * ldq + (size_t)h * hd;
            float *rh = relh + ((size_t)h * S * S + t) * S, *rw = relw + ((size_t)h * S * S + t) * S;
            for (k = 0; k < S; k++) {
                const float *a = th + (size_t)(y - k + S - 1) * hd, *b = tw + (size_t)(x - k + S - 1) * hd;
                float sa = 0, sb = 0;
                for (d = 0; d < hd; d++) {
                    sa += qv[d] * a[d];
                    sb += qv[d] * b[d];
                }
                rh[k] = sa;
                rw[k] = sb;
            }
        }
    }
}

/* SamVisionLayer: pre-norm block with windowed (zero-padded after the norm, padded tokens as
   ordinary keys) or global attention with decomposed relative position, and the GELU MLP. */
static sam3_result sam3__sam1_layer(sam3_ctx *c, int li, float *x, float *h, float *qkv, float *a, float *mlp) {
    const sam3__s1_cfg *v = &c->m->s1;
    const sam3__s1_layer_w *w = &c->m->s1_w.layers[li];
    const int g = v->grid, C = v->hidden, hd = v->head_dim, nh = v->heads, N = g * g, global = v->is_global[li];
    const int ws = global ? g : v->window, nwy = (g + ws - 1) / ws, wt = ws * ws, n = global ? N : nwy * nwy * wt;
    sam3__mark mk = sam3__mark_get(c);
    float *relh = NULL, *relw = NULL;
    sam3__attn_args at;
    int wi;
    sam3_result rc;
    if (v->use_rel && (!(relh = sam3__sallocf(c, (size_t)nh * wt * ws)) || !(relw = sam3__sallocf(c, (size_t)nh * wt * ws))))
        return SAM3_ERR_OUT_OF_MEMORY;
    sam3__window_layernorm(c, x, g, ws, C, &w->ln1, v->ln_eps, h);
    sam3__linear(c, h, n, C, &w->qkv, 3 * C, qkv);
    memset(&at, 0, sizeof(at)); /* a window's attention: q, k, v side by side in qkv rows */
    at.nq = at.nk = wt, at.nh = nh, at.hd = hd, at.ldq = at.ldk = at.ldv = 3 * C, at.ldo = C;
    at.relh = relh, at.relw = relw, at.rel_s = ws;
    for (wi = 0; wi < n / wt; wi++) {
        const float *q = qkv + (size_t)wi * wt * 3 * C;
        if (relh) sam3__sam1_relpos(c, q, 3 * C, ws, nh, hd, w->rel_h, w->rel_w, relh, relw);
        at.q = q, at.k = q + C, at.v = q + 2 * C, at.out = a + (size_t)wi * wt * C;
        if ((rc = sam3__attention_rel(c, &at)) != SAM3_OK) return rc;
    }
    sam3__linear(c, a, n, C, &w->proj, C, h);
    sam3__window_add(c, x, h, NULL, g, ws, C);
    sam3__vit_mlp(c, x, N, C, v->mlp, &w->ln2, v->ln_eps, &w->fc1, &w->fc2, h, mlp);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* SamVisionEncoder: patch embedding (with bias) + absolute position, the blocks (no pre- or
   final norm), then the neck: 1x1 conv, LN2d, 3x3 conv, LN2d (no biases, eps 1e-6) -> E. */
static sam3_result sam3__sam1_vision(sam3_ctx *c, const float *pix, float *E) {
    const sam3__s1_cfg *v = &c->m->s1;
    const sam3__s1_w *w = &c->m->s1_w;
    const int g = v->grid, p = v->patch, S = v->image, C = v->hidden, K = 3 * p * p, N = g * g, ws = v->window ? v->window : g;
    const int nwy = (g + ws - 1) / ws, np = SAM3__MAX(N, nwy * nwy * ws * ws);
    sam3__mark mk = sam3__mark_get(c);
    float *x = sam3__sallocf(c, (size_t)N * C);       /* (N, C) residual stream */
    float *h = sam3__sallocf(c, (size_t)np * C);      /* (np, C) */
    float *qkv = sam3__sallocf(c, (size_t)np * 3 * C); /* (np, 3C) */
    float *a = sam3__sallocf(c, (size_t)np * C);      /* (np, C) attention output */
    float *mlp = sam3__sallocf(c, (size_t)N * v->mlp); /* (N, mlp) */
    float *cols, *y;
    int t, i;
    char name[32];
    sam3_result rc;
    if (!x || !h || !qkv || !a || !mlp) return SAM3_ERR_OUT_OF_MEMORY;
    cols = qkv; /* (N, 3 p p) im2col, reusing qkv before the blocks */
    if ((size_t)N * K > (size_t)np * 3 * C && !(cols = sam3__sallocf(c, (size_t)N * K))) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < N; t++) {
        int ty = t / g, tx = t % g, ch, ky;
        float *o = cols + (size_t)t * K;
        for (ch = 0; ch < 3; ch++)
            for (ky = 0; ky < p; ky++)
                memcpy(o + (size_t)(ch * p + ky) * p, pix + ((size_t)ch * S + (size_t)ty * p + ky) * S + (size_t)tx * p, (size_t)p * sizeof(float));
    }
    sam3__linear(c, cols, N, K, &w->patch, C, x);
    if (w->pos) sam3__vadd(c, x, w->pos, (size_t)N * C);
    sam3__tap(c, "vit.embed", x, 2, N, C, 0);
    for (i = 0; i < v->layers; i++) {
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the vision encoder (block %d)", i);
        sam3__progress(c, "vision trunk", i, v->layers);
        if ((rc = sam3__sam1_layer(c, i, x, h, qkv, a, mlp)) != SAM3_OK) return rc;
        snprintf(name, sizeof(name), "vit.layer.%d", i);
        sam3__tap(c, name, x, 2, N, C, 0);
    }
    y = h; /* (out, g, g) */
    sam3__conv1x1(c, x, 1, C, N, &w->neck1, v->out_ch, y);
    sam3__layernorm2d(c, y, v->out_ch, (size_t)N, &w->neck_ln1, 1e-6f, 0);
    if ((rc = sam3__conv3x3(c, y, NULL, 0, 0, v->out_ch, g, g, &w->neck2, v->out_ch, E, NULL)) != SAM3_OK) return rc;
    sam3__layernorm2d(c, E, v->out_ch, (size_t)N, &w->neck_ln2, 1e-6f, 0);
    sam3__tap(c, "vit.neck", E, 3, v->out_ch, g, g);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* The grid's random-Fourier position (g*g, D) token-major, once per image for the decoder. */
static void sam3__grid_pe(sam3_ctx *c) {
    const sam3__trk_cfg *t = &c->m->trk;
    const int g = t->grid, D = t->D;
    int i, j;
    for (i = 0; i < g; i++)
        for (j = 0; j < g; j++)
            sam3__fourier_pe(c->m->trk_w.gauss, D, ((float)j + 0.5f) / (float)g, ((float)i + 0.5f) / (float)g, c->trk_pe + ((size_t)i * g + j) * D);
}

/* ==== sam3: tokenizer API ==== */
/* ids of `text` (len bytes) with BOS and EOS, at most cap; *truncated when the prompt was longer. */
static sam3_result sam3__tokenize_with(const sam3_model *m, const sam3_allocator *a, const char *text, size_t len, int32_t *ids,
                                       int cap, int *n, int *truncated) {
    int rc;
    *n = 0;
    *truncated = 0;
    if (len > SAM3_MAX_PROMPT_BYTES) return SAM3_ERR_INVALID_ARG;
    rc = sam3__bpe_encode(&m->bpe, text, len, ids, cap, n, NULL, truncated, a->alloc, a->free, a->user);
    return rc == 0 ? SAM3_OK : rc == -1 ? SAM3_ERR_OUT_OF_MEMORY : SAM3_ERR_INVALID_ARG;
}
static sam3_result sam3__tokenize_internal(sam3_ctx *c, const char *text, size_t len, int32_t *ids, int cap, int *n, int *truncated) {
    sam3_result rc = sam3__tokenize_with(c->m, &c->a, text, len, ids, cap, n, truncated);
    if (rc == SAM3_ERR_INVALID_ARG)
        return sam3__fail(c, rc, "text prompt of %lu bytes is longer than SAM3_MAX_PROMPT_BYTES (%lu)", (unsigned long)len,
                          (unsigned long)SAM3_MAX_PROMPT_BYTES);
    if (rc != SAM3_OK) return sam3__fail(c, rc, "out of memory tokenizing the prompt");
    return SAM3_OK;
}
SAM3DEF sam3_result sam3_tokenize(const sam3_model *m, const char *text, int32_t *ids, int capacity, int *n_ids) {
    int trunc = 0, n = 0, cap;
    sam3_result rc;
    if (n_ids) *n_ids = 0;
    if (!m || !text || !ids || !n_ids || capacity < 2) return SAM3_ERR_INVALID_ARG;
    if (m->arch != SAM3__ARCH_SAM3) return SAM3_ERR_UNSUPPORTED; /* SAM 1 has no text encoder */
    cap = SAM3__MIN(capacity, SAM3__MIN(m->tok.max_length, m->text.max_pos));
    rc = sam3__tokenize_with(m, &m->a, text, strlen(text), ids, cap, &n, &trunc);
    if (rc != SAM3_OK) return rc;
    *n_ids = n;
    return trunc ? SAM3_TRUNCATED : SAM3_OK;
}

/* ==== sam3: text encoder (CLIPTextTransformer + Sam3Model.text_projection) ==== */
/* sam3__clip_text_model: CLIP on the n valid tokens only. With the causal mask, tokens 0..n-1 never
   see the padding, so this equals transformers' padded CLIPTextTransformer run on those tokens (to
   1e-14), and every later use masks the padding out anyway. ids (n) -> out (n, D), at detector width. */
/* CLIPMLP with hidden_act "quick_gelu": fc2(q(fc1(x))), q(v) = v * sigmoid(1.702 v). x (n, T) -> y (n, T).
   At most 32 tokens, so plain expf. */
static sam3_result sam3__clip_mlp_quick(sam3_ctx *c, const float *x, int n, int T, const sam3__lin *fc1, int TI,
                                        const sam3__lin *fc2, float *y) {
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, (size_t)n * TI); /* (n, TI) */
    const ptrdiff_t nh = (ptrdiff_t)n * TI;
    ptrdiff_t i;
    if (!h) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear(c, x, n, T, fc1, TI, h);
    /* an exponential a value: a 5-token prompt's 20k values on the calling thread would keep every
       other thread waiting, 24 times a prompt */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)nh * SAM3__PAR_EXP >= SAM3__PAR_MIN))
    for (i = 0; i < nh; i++) h[i] = h[i] / (1.0f + expf(-1.702f * h[i]));
    sam3__linear(c, h, n, TI, fc2, T, y);
    sam3__release(c, mk);
    return SAM3_OK;
}

static sam3_result sam3__clip_text_model(sam3_ctx *c, const int32_t *ids, int n, float *out) {
    const sam3_model *m = c->m;
    const int T = m->text.hidden, TI = m->text.inter, D = m->neck.fpn;
    sam3__mark mk = sam3__mark_get(c);
    float *x = sam3__sallocf(c, (size_t)n * T); /* (n, T) residual stream */
    float *h = sam3__sallocf(c, (size_t)n * T); /* (n, T) */
    float *y = sam3__sallocf(c, (size_t)n * T); /* (n, T) */
    int i, l;
    sam3_result rc;
    if (!x || !h || !y) return SAM3_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n; i++) {
        const float *te = m->text_w.tok_emb + (size_t)ids[i] * T, *pe = m->text_w.pos_emb + (size_t)i * T;
        int j;
        for (j = 0; j < T; j++) x[(size_t)i * T + j] = te[j] + pe[j];
    }
    for (l = 0; l < m->text.layers; l++) {
        const sam3__clip_layer_w *w = &m->text_w.layers[l];
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the text encoder (layer %d)", l);
        sam3__layernorm(c, x, h, n, T, &w->ln1, m->text.ln_eps);
        if ((rc = sam3__mha(c, &w->attn, h, h, h, n, n, T, m->text.heads, 1, y)) != SAM3_OK) return rc;
        sam3__vadd(c, x, y, (size_t)n * T);
        sam3__layernorm(c, x, h, n, T, &w->ln2, m->text.ln_eps);
        if (m->text.quick_gelu) {
            if ((rc = sam3__clip_mlp_quick(c, h, n, T, &w->fc1, TI, &w->fc2, y)) != SAM3_OK) return rc;
        } else if ((rc = sam3__mlp2(c, h, n, T, &w->fc1, TI, &w->fc2, T, 0, y)) != SAM3_OK) {
            return rc;
        }
        sam3__vadd(c, x, y, (size_t)n * T);
    }
    sam3__layernorm(c, x, x, n, T, &m->text_w.final_ln, m->text.ln_eps);
    sam3__linear(c, x, n, T, &m->text_w.proj, D, out);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: geometry encoder (Sam3GeometryEncoder) ==== */
/* The sample indices i in [0, n) of one bin whose coordinate base + (i + 0.5) * step / n can fall in
   [-1, size]: every other sample is skipped by roi_align's bounds test anyway, so iterating only
   these gives the same sums (the exact test stays in the loop; the range is widened by more than
   float rounding can move a sample). Without it an absurd box costs its whole 4096 x 4096 grid per
   bin (~1 s a box, ~1 min for SAM3_MAX_BOXES of them). */
static void sam3__roi_range(float base, float step, int n, int size, int *i0, int *i1) {
    double d = (double)step / n, slack, lo, hi;
    slack = 2.0 + ((double)fabsf(base) + (double)fabsf(step) + size + 1.0) * 1e-6 / d;
    lo = (-1.0 - (double)base) / d - 0.5 - slack;
    hi = ((double)size - (double)base) / d - 0.5 + slack + 1.0;
    if (!(lo == lo && hi == hi)) { /* NaN base or step: no sample passes the bounds test */
        *i0 = *i1 = 0;
        return;
    }
    *i0 = lo <= 0 ? 0 : lo >= n ? n : (int)lo;
    *i1 = hi <= 0 ? 0 : hi >= n ? n : (int)hi;
}

/* torchvision.ops.roi_align(feat, box, out, spatial_scale=1, sampling_ratio=-1, aligned=False) on a
   token-major map f (H*W, D) for one box already in feature pixels: out (D, r, r) channel-major.
   Adaptive sampling grid ceil(roi/r) per bin; samples outside [-1, size] count as zeros. */
static void sam3__roi_align(const float *f, int H, int W, int D, const float box[4], int r, float *out) {
    float x1 = box[0], y1 = box[1], roi_w = box[2] - box[0], roi_h = box[3] - box[1];
    float bin_w, bin_h, cnt;
    int gw, gh, ph, pw, ch;
    if (!(roi_w > 1.0f)) roi_w = 1.0f; /* also catches NaN */
    if (!(roi_h > 1.0f)) roi_h = 1.0f;
    bin_w = roi_w / (float)r;
    bin_h = roi_h / (float)r;
    /* absurd boxes (1e30 px, or inf after normalising) stay bounded; sampling is then coarse.
       Clamped in float: converting an out-of-range float to int is undefined behaviour. */
    gw = ceilf(roi_w / (float)r) < 4096.0f ? (int)ceilf(roi_w / (float)r) : 4096;
    gh = ceilf(roi_h / (float)r) < 4096.0f ? (int)ceilf(roi_h / (float)r) : 4096;
    if (gw < 1) gw = 1;
    if (gh < 1) gh = 1;
    cnt = (float)SAM3__MAX(gw * gh, 1);
    memset(out, 0, sizeof(float) * (size_t)D * r * r);
    for (ph = 0; ph < r; ph++)
        for (pw = 0; pw < r; pw++) {
            int iy, ix, iy0, iy1, ix0, ix1;
            sam3__roi_range(y1 + (float)ph * bin_h, bin_h, gh, H, &iy0, &iy1);
            sam3__roi_range(x1 + (float)pw * bin_w, bin_w, gw, W, &ix0, &ix1);
            for (iy = iy0; iy < iy1; iy++) {
                float y = y1 + (float)ph * bin_h + ((float)iy + 0.5f) * bin_h / (float)gh;
                for (ix = ix0; ix < ix1; ix++) {
                    float x = x1 + (float)pw * bin_w + ((float)ix + 0.5f) * bin_w / (float)gw;
                    float yy = y, xx = x, ly, lx, hy, hx;
                    int y0, x0, y1i, x1i;
                    const float *a, *b, *cc, *d;
                    if (!(yy >= -1.0f && yy <= (float)H && xx >= -1.0f && xx <= (float)W)) continue;
                    if (yy <= 0) yy = 0;
                    if (xx <= 0) xx = 0;
                    y0 = (int)yy;
                    x0 = (int)xx;
                    if (y0 >= H - 1) { y0 = y1i = H - 1; yy = (float)y0; } else y1i = y0 + 1;
                    if (x0 >= W - 1) { x0 = x1i = W - 1; xx = (float)x0; } else x1i = x0 + 1;
                    ly = yy - (float)y0; lx = xx - (float)x0; hy = 1.0f - ly; hx = 1.0f - lx;
                    a = f + ((size_t)y0 * W + x0) * D; b = f + ((size_t)y0 * W + x1i) * D;
                    cc = f + ((size_t)y1i * W + x0) * D; d = f + ((size_t)y1i * W + x1i) * D;
                    for (ch = 0; ch < D; ch++)
                        out[((size_t)ch * r + ph) * r + pw] += hy * hx * a[ch] + hy * lx * b[ch] + ly * hx * cc[ch] + ly * lx * d[ch];
                }
            }
            for (ch = 0; ch < D; ch++) out[((size_t)ch * r + ph) * r + pw] /= cnt;
        }
}

/* Pre-norm layer shared by the geometry and DETR encoders (Sam3GeometryEncoderLayer,
   Sam3DetrEncoderLayer) in its two halves: sam3__xlayer_self, the self-attention (with `pos` added
   to queries and keys after the norm when given), then sam3__xlayer_cross, the cross-attention to
   `mem` (keys mem + mem_pos when given) and the ReLU MLP. Split because the DETR encoder's first
   self-attention reads only the image and is kept per image (sam3__detr_encoder). x (n, D) in place. */
static sam3_result sam3__xlayer_self(sam3_ctx *c, const sam3__xlayer_w *w, float *x, int n, const float *pos, int heads) {
    const int D = c->m->neck.fpn;
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, (size_t)n * D);  /* (n, D) */
    float *qk = sam3__sallocf(c, (size_t)n * D); /* (n, D) */
    float *y = sam3__sallocf(c, (size_t)n * D);  /* (n, D) */
    sam3_result rc;
    if (!h || !qk || !y) return SAM3_ERR_OUT_OF_MEMORY;
    if (pos)
        sam3__layernorm_pos(c, x, h, pos, qk, n, D, &w->ln1, 1e-5f);
    else
        sam3__layernorm(c, x, h, n, D, &w->ln1, 1e-5f);
    if ((rc = sam3__mha_res(c, &w->self_attn, pos ? qk : h, pos ? qk : h, h, n, n, D, heads, y, x)) != SAM3_OK) return rc;
    sam3__release(c, mk);
    return SAM3_OK;
}

static sam3_result sam3__xlayer_cross(sam3_ctx *c, const sam3__xlayer_w *w, float *x, int n, const float *mem, const float *mem_pos, int nm,
                                      int heads, int inter) {
    const int D = c->m->neck.fpn;
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, (size_t)n * D); /* (n, D) */
    float *y = sam3__sallocf(c, (size_t)n * D); /* (n, D) */
    float *km = NULL;                           /* (nm, D) mem + mem_pos */
    sam3_result rc;
    if (!h || !y) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__layernorm(c, x, h, n, D, &w->ln2, 1e-5f);
    if (mem_pos) {
        if (!(km = sam3__sallocf(c, (size_t)nm * D))) return SAM3_ERR_OUT_OF_MEMORY;
        memcpy(km, mem, (size_t)nm * D * sizeof(float));
        sam3__vadd(c, km, mem_pos, (size_t)nm * D);
    }
    if ((rc = sam3__mha_res(c, &w->cross_attn, h, km ? km : mem, mem, n, nm, D, heads, y, x)) != SAM3_OK) return rc;
    sam3__layernorm(c, x, h, n, D, &w->ln3, 1e-5f);
    if ((rc = sam3__mlp2_res(c, h, n, D, &w->fc1, inter, &w->fc2, D, 1, y, x)) != SAM3_OK) return rc;
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3GeometryEncoder: nb boxes (cx, cy, w, h normalised, label 0/1) -> out (nb + 1, D), the CLS
   token last. Every LayerNorm here is eps 1e-5 (the config's 1e-6 is not used by the reference). */
static sam3_result sam3__geometry_encoder(sam3_ctx *c, const float *boxes, const int *labels, int nb, float *out) {
    const sam3_model *m = c->m;
    const sam3__geo_w *g = &m->geo_w;
    const int D = m->neck.fpn, last = m->neck.n_kept - 1, S = m->neck.side[last], Ng = S * S, r = m->geo.roi, nf = D / 2;
    sam3__mark mk = sam3__mark_get(c);
    float *fn = sam3__sallocf(c, (size_t)Ng * D);        /* (Ng, D) LayerNorm-ed last level */
    float *roi = sam3__sallocf(c, (size_t)D * r * r);    /* (D, r, r) */
    float *pe = sam3__sallocf(c, (size_t)nb * (D + 2));  /* (nb, D + 2) centre code */
    float *tmp = sam3__sallocf(c, (size_t)(nb + 1) * D); /* (nb + 1, D) */
    int i, l;
    sam3_result rc;
    if (!fn || !roi || !pe || !tmp) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__layernorm(c, c->l2_tok, fn, Ng, D, &g->vision_ln, 1e-5f);
    sam3__linear(c, boxes, nb, 4, &g->direct, D, out);
    for (i = 0; i < nb; i++) {
        const float *b = boxes + 4 * i;
        float xyxy[4];
        xyxy[0] = (b[0] - 0.5f * b[2]) * (float)S;
        xyxy[1] = (b[1] - 0.5f * b[3]) * (float)S;
        xyxy[2] = (b[0] + 0.5f * b[2]) * (float)S;
        xyxy[3] = (b[1] + 0.5f * b[3]) * (float)S;
        sam3__roi_align(fn, S, S, D, xyxy, r, roi);
        /* boxes_pool_project: a r x r "valid" conv on an r x r input is a full contraction. */
        sam3__gemm_xw(c, 0, 1, 1, D, D * r * r, roi, D * r * r, &g->pool, 0, D * r * r, 1.0f, out + (size_t)i * D, D);
        {
            int j;
            for (j = 0; j < D; j++) out[(size_t)i * D + j] += g->pool.b[j];
        }
        /* centre code: [S(cy 2pi), S(cx 2pi), h, w] */
        sam3__sine(b[1] * (float)(2 * SAM3__PI), nf, NULL, pe + (size_t)i * (D + 2));
        sam3__sine(b[0] * (float)(2 * SAM3__PI), nf, NULL, pe + (size_t)i * (D + 2) + nf);
        pe[(size_t)i * (D + 2) + D] = b[3];
        pe[(size_t)i * (D + 2) + D + 1] = b[2];
    }
    sam3__linear(c, pe, nb, D + 2, &g->pos_enc, D, tmp);
    sam3__vadd(c, out, tmp, (size_t)nb * D);
    for (i = 0; i < nb; i++) {
        const float *le = g->label_embed + (size_t)labels[i] * D;
        int j;
        for (j = 0; j < D; j++) out[(size_t)i * D + j] += le[j];
    }
    memcpy(out + (size_t)nb * D, g->cls_embed, (size_t)D * sizeof(float));
    sam3__linear(c, out, nb + 1, D, &g->final_proj, D, tmp);
    sam3__layernorm(c, tmp, out, nb + 1, D, &g->prompt_ln, 1e-5f);
    for (l = 0; l < m->geo.layers; l++) {
        if ((rc = sam3__xlayer_self(c, &g->layers[l], out, nb + 1, NULL, m->geo.heads)) != SAM3_OK ||
            (rc = sam3__xlayer_cross(c, &g->layers[l], out, nb + 1, c->l2_tok, c->l2_pos, Ng, m->geo.heads, m->geo.inter)) != SAM3_OK)
            return rc;
    }
    sam3__layernorm(c, out, out, nb + 1, D, &g->out_ln, 1e-5f);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: DETR encoder (Sam3DetrEncoder) ==== */
/* Six pre-norm layers over the last FPN level's tokens: self-attention with the sine position
   added to queries and keys after the norm, cross-attention to the prompt, ReLU MLP.
   The first layer's self-attention sees only the image, so its result is kept in the context on
   the first prompt after an image and reused by the next ones (1/6 of the encoder's attention).
   mem (Ng, D) in: the level's tokens, out: the encoder memory. */
static sam3_result sam3__detr_encoder(sam3_ctx *c, float *mem, const float *prompt, int np) {
    const sam3_model *m = c->m;
    const int last = m->neck.n_kept - 1, Ng = m->neck.side[last] * m->neck.side[last], D = m->neck.fpn;
    int l;
    sam3_result rc;
    for (l = 0; l < m->enc.layers; l++) {
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the DETR encoder");
        if (l == 0 && c->enc0_ready) {
            memcpy(mem, c->enc0, (size_t)Ng * D * sizeof(float));
        } else {
            if ((rc = sam3__xlayer_self(c, &m->enc_w[l], mem, Ng, c->l2_pos, m->enc.heads)) != SAM3_OK) return rc;
            if (l == 0) {
                memcpy(c->enc0, mem, (size_t)Ng * D * sizeof(float));
                c->enc0_ready = 1;
            }
        }
        if ((rc = sam3__xlayer_cross(c, &m->enc_w[l], mem, Ng, prompt, NULL, np, m->enc.heads, m->enc.inter)) != SAM3_OK) return rc;
    }
    return SAM3_OK;
}


/* ==== sam3: DETR decoder (Sam3DetrDecoder) ==== */
static float sam3__inverse_sigmoid(float x) {
    float x1, x2;
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    x1 = x > 1e-3f ? x : 1e-3f;
    x2 = (1 - x) > 1e-3f ? (1 - x) : 1e-3f;
    return logf(x1 / x2);
}

/* Output of the decoder that the heads need. */
typedef struct sam3__dec_out {
    float *queries;  /* (Q, D) last layer, output_layer_norm applied */
    float *boxes;    /* (Q, 4) cx, cy, w, h after the last refinement */
    float presence;  /* last layer's presence logit, clamped to +-10 */
} sam3__dec_out;

/* The decoder's first layer up to its text attention reads only the learned queries and reference
   boxes, so it is the same for every prompt and image: kept in the context (c->dec0) the first
   time (keep = 1) and copied back for the next prompts (keep = 0). h, qpos (Q+1, D); relh, relw
   (nh, Q+1, S). */
static void sam3__dec0_keep(sam3_ctx *c, int keep, float *h, float *qpos, float *relh, float *relw) {
    const sam3_model *m = c->m;
    const size_t hd = (size_t)(m->dec.queries + 1) * m->neck.fpn, rel = (size_t)m->dec.heads * (m->dec.queries + 1) * m->neck.side[m->neck.n_kept - 1];
    float *b[4];
    int i;
    b[0] = h, b[1] = qpos, b[2] = relh, b[3] = relw;
    for (i = 0; i < 4; i++) {
        float *kept = c->dec0 + (i < 2 ? (size_t)i * hd : 2 * hd + (size_t)(i - 2) * rel);
        if (keep) memcpy(kept, b[i], (i < 2 ? hd : rel) * sizeof(float));
        else memcpy(b[i], kept, (i < 2 ? hd : rel) * sizeof(float));
    }
    c->dec0_ready = 1;
}

/* Sam3DetrDecoderLayer + the per-layer heads of Sam3DetrDecoder: post-norm layers over
   [presence token; queries], iterative box refinement in sigmoid space. */
static sam3_result sam3__detr_decoder(sam3_ctx *c, const float *mem, const float *prompt, int np, sam3__dec_out *out) {
    const sam3_model *m = c->m;
    const sam3__dec_w *w = &m->dec_w;
    const int D = m->neck.fpn, Q = m->dec.queries, L = m->dec.layers, nh = m->dec.heads, last = m->neck.n_kept - 1;
    const int S = m->neck.side[last], Ng = S * S, nf = D / 2;
    sam3__mark mk = sam3__mark_get(c);
    float *h = sam3__sallocf(c, (size_t)(Q + 1) * D);       /* (Q+1, D) presence token, queries */
    float *qpos = sam3__sallocf(c, (size_t)(Q + 1) * D);    /* (Q+1, D) query position, row 0 zero */
    float *t = sam3__sallocf(c, (size_t)(Q + 1) * D);       /* (Q+1, D) */
    float *y = sam3__sallocf(c, (size_t)(Q + 1) * D);       /* (Q+1, D) */
    float *se = sam3__sallocf(c, (size_t)Q * 2 * D);        /* (Q, 2D) sine box code */
    float *km = sam3__sallocf(c, (size_t)Ng * D);           /* (Ng, D) memory + position */
    float *relh = sam3__sallocf(c, (size_t)nh * (Q + 1) * S);  /* (nh, Q+1, S) box bias by key row */
    float *relw = sam3__sallocf(c, (size_t)nh * (Q + 1) * S);  /* (nh, Q+1, S) and by key column */
    float *delta = sam3__sallocf(c, (size_t)Q * 4);         /* (Q, 4) */
    float *dims = sam3__sallocf(c, (size_t)nf / 2 + 1);     /* (nf / 2 + 1) sine frequencies */
    float *ref = out->boxes;
    float *hist_h = NULL, *hist_ref = NULL, *hist_p = NULL; /* per-layer taps */
    float pres = 0;
    sam3__mha_args va;
    int l, q, i;
    sam3_result rc;
    if (!h || !qpos || !t || !y || !se || !km || !relh || !relw || !delta || !dims) return SAM3_ERR_OUT_OF_MEMORY;
    memset(&va, 0, sizeof(va)); /* the vision cross-attention with the box bias: q t, k memory + pos, v memory */
    va.qin = t, va.kin = km, va.vin = mem, va.nq = Q + 1, va.nk = Ng, va.D = va.di = D, va.nh = nh;
    va.relh = relh, va.relw = relw, va.rel_s = S;
    sam3__sine_dims(nf, dims);
    if (c->opt.tap) {
        hist_h = sam3__sallocf(c, (size_t)L * Q * D);
        hist_ref = sam3__sallocf(c, (size_t)L * Q * 4);
        hist_p = sam3__sallocf(c, (size_t)L);
        if (!hist_h || !hist_ref || !hist_p) return SAM3_ERR_OUT_OF_MEMORY;
    }
    memcpy(h, w->presence_token, (size_t)D * sizeof(float));
    memcpy(h + D, w->query_embed, (size_t)Q * D * sizeof(float));
    for (i = 0; i < Q * 4; i++) ref[i] = sam3__sigmoid(w->ref_points[i]);
    memcpy(km, mem, (size_t)Ng * D * sizeof(float));
    sam3__vadd(c, km, c->l2_pos, (size_t)Ng * D);
    memset(qpos, 0, (size_t)D * sizeof(float));
    for (l = 0; l < L; l++) {
        const sam3__dec_layer_w *lw = &w->layers[l];
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the DETR decoder");
        if (hist_ref) memcpy(hist_ref + (size_t)l * Q * 4, ref, (size_t)Q * 4 * sizeof(float));
        if (l == 0 && c->dec0_ready) {
            sam3__dec0_keep(c, 0, h, qpos, relh, relw);
        } else {
            /* query position from the current boxes: [S(cy), S(cx), S(w), S(h)] (scale 2 pi) -> MLP
               (threaded: 200 queries' 100 k sines a layer are too slow for one thread) */
            SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
            for (q = 0; q < Q; q++) {
                const float *b = ref + 4 * q;
                float *o = se + (size_t)q * 2 * D;
                sam3__sine(b[1] * (float)(2 * SAM3__PI), nf, dims, o);
                sam3__sine(b[0] * (float)(2 * SAM3__PI), nf, dims, o + nf);
                sam3__sine(b[2] * (float)(2 * SAM3__PI), nf, dims, o + 2 * nf);
                sam3__sine(b[3] * (float)(2 * SAM3__PI), nf, dims, o + 3 * nf);
            }
            if ((rc = sam3__mlp2(c, se, Q, 2 * D, &w->ref_head[0], D, &w->ref_head[1], D, 1, qpos + D)) != SAM3_OK) return rc;
            if ((rc = sam3__box_rpb(c, ref, Q, S, relh, relw)) != SAM3_OK) return rc;
            /* self-attention: q = k = h + qpos, v = h; post-norm */
            memcpy(t, h, (size_t)(Q + 1) * D * sizeof(float));
            sam3__vadd(c, t, qpos, (size_t)(Q + 1) * D);
            if ((rc = sam3__mha(c, &lw->self_attn, t, t, h, Q + 1, Q + 1, D, nh, 0, y)) != SAM3_OK) return rc;
            sam3__vadd(c, h, y, (size_t)(Q + 1) * D);
            sam3__layernorm(c, h, h, Q + 1, D, &lw->self_ln, 1e-5f);
            if (l == 0) sam3__dec0_keep(c, 1, h, qpos, relh, relw);
        }
        /* text cross-attention: q = h + qpos, k = v = prompt */
        memcpy(t, h, (size_t)(Q + 1) * D * sizeof(float));
        sam3__vadd(c, t, qpos, (size_t)(Q + 1) * D);
        if ((rc = sam3__mha(c, &lw->text_attn, t, prompt, prompt, Q + 1, np, D, nh, 0, y)) != SAM3_OK) return rc;
        sam3__vadd(c, h, y, (size_t)(Q + 1) * D);
        sam3__layernorm(c, h, h, Q + 1, D, &lw->text_ln, 1e-5f);
        /* vision cross-attention with the box bias: k = memory + pos, v = memory */
        memcpy(t, h, (size_t)(Q + 1) * D * sizeof(float));
        sam3__vadd(c, t, qpos, (size_t)(Q + 1) * D);
        if ((rc = sam3__mha_core(c, &lw->vision_attn, &va, y, NULL)) != SAM3_OK) return rc;
        sam3__vadd(c, h, y, (size_t)(Q + 1) * D);
        sam3__layernorm(c, h, h, Q + 1, D, &lw->vision_ln, 1e-5f);
        /* MLP */
        if ((rc = sam3__mlp2(c, h, Q + 1, D, &lw->fc1, m->dec.inter, &lw->fc2, D, 1, y)) != SAM3_OK) return rc;
        sam3__vadd(c, h, y, (size_t)(Q + 1) * D);
        sam3__layernorm(c, h, h, Q + 1, D, &lw->mlp_ln, 1e-5f);
        /* heads: refine the boxes from the normed queries, presence from the presence token */
        sam3__layernorm(c, h + D, out->queries, Q, D, &w->out_ln, 1e-5f);
        if ((rc = sam3__mlp3(c, out->queries, Q, D, w->box_head, D, 4, delta)) != SAM3_OK) return rc;
        for (i = 0; i < Q * 4; i++) ref[i] = sam3__sigmoid(delta[i] + sam3__inverse_sigmoid(ref[i]));
        sam3__layernorm(c, h, t, 1, D, &w->presence_ln, 1e-5f);
        if ((rc = sam3__mlp3(c, t, 1, D, w->presence_head, D, 1, y)) != SAM3_OK) return rc;
        pres = y[0] < -10.0f ? -10.0f : y[0] > 10.0f ? 10.0f : y[0];
        if (hist_h) {
            memcpy(hist_h + (size_t)l * Q * D, out->queries, (size_t)Q * D * sizeof(float));
            hist_p[l] = pres;
        }
    }
    out->presence = pres;
    if (hist_h) {
        sam3__tap(c, "detr_dec.hidden", hist_h, 3, L, Q, D);
        sam3__tap(c, "detr_dec.ref_boxes", hist_ref, 3, L, Q, 4);
        sam3__tap(c, "detr_dec.presence", hist_p, 1, L, 0, 0);
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: scoring (Sam3DotProductScoring) ==== */
/* logits (Q) = clamp(query_proj(Q) . text_proj(mean(LN(p + MLP(p)))) / sqrt(D), +-12) */
static sam3_result sam3__dot_product_scoring(sam3_ctx *c, const float *queries, const float *prompt, int np, float *logits) {
    const sam3_model *m = c->m;
    const sam3__score_w *w = &m->score_w;
    const int D = m->neck.fpn, Q = m->dec.queries;
    sam3__mark mk = sam3__mark_get(c);
    float *t = sam3__sallocf(c, (size_t)np * D);  /* (np, D) */
    float *pq = sam3__sallocf(c, (size_t)Q * D);  /* (Q, D) */
    float *pool = sam3__sallocf(c, (size_t)D), *pt = sam3__sallocf(c, (size_t)D);
    const float scale = (float)(1.0 / sqrt((double)D));
    int i, j;
    sam3_result rc;
    if (!t || !pq || !pool || !pt) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__mlp2(c, prompt, np, D, &w->text_mlp[0], m->dec.inter, &w->text_mlp[1], D, 1, t)) != SAM3_OK) return rc;
    sam3__vadd(c, t, prompt, (size_t)np * D);
    sam3__layernorm(c, t, t, np, D, &w->text_ln, 1e-5f);
    for (j = 0; j < D; j++) {
        float s = 0;
        for (i = 0; i < np; i++) s += t[(size_t)i * D + j];
        pool[j] = s / (float)np;
    }
    sam3__linear(c, pool, 1, D, &w->text_proj, D, pt);
    sam3__linear(c, queries, Q, D, &w->query_proj, D, pq);
    for (i = 0; i < Q; i++) {
        float s = 0, v;
        for (j = 0; j < D; j++) s += pq[(size_t)i * D + j] * pt[j];
        v = s * scale;
        logits[i] = v < -12.0f ? -12.0f : v > 12.0f ? 12.0f : v;
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: mask decoder (Sam3MaskDecoder) ==== */
/* The pixel decoder's nearest-neighbour upsampling (F.interpolate(mode="nearest")) plus skip is
   not a pass of its own: sam3__conv3x3 forms it as it reads its input rows (sam3__wino_in). */
/* Prompt cross-attention on the encoder memory, the pixel decoder (the memory replaces the last
   kept FPN level; nearest upsampling + skip, 3x3 conv, GroupNorm(8), ReLU per stage), instance and
   semantic projections, and the query-pixel product, for nq query rows (all Q, or the ones kept):
   masks (nq, side0, side0) and semantic (side0, side0, skipped when NULL) are logits. */
static sam3_result sam3__mask_decoder(sam3_ctx *c, const float *mem, const float *prompt, int np, const float *queries, int nq,
                                      float *masks, float *semantic) {
    const sam3_model *m = c->m;
    const sam3__mask_w *w = &m->mask_w;
    const int D = m->neck.fpn, Q = nq, last = m->neck.n_kept - 1, S = m->neck.side[last], Ng = S * S;
    const int S0 = m->neck.side[0];
    const size_t hw0 = (size_t)S0 * S0;
    sam3__mark mk = sam3__mark_get(c);
    float *enc = sam3__sallocf(c, (size_t)Ng * D);  /* (Ng, D) */
    float *h = sam3__sallocf(c, (size_t)Ng * D);    /* (Ng, D) */
    /* x, up: (D + 1, side, side), row D of the last one all ones for the mask product's bias */
    float *x = sam3__sallocf(c, (size_t)(D + 1) * hw0);  /* (D, side, side) current pixel features */
    float *up = sam3__sallocf(c, (size_t)(D + 1) * hw0); /* (D, side, side) the next stage's, then swapped */
    float *me = sam3__sallocf(c, (size_t)Q * D);         /* (Q, D) mask embeddings */
    float *mw = sam3__sallocf(c, (size_t)Q * (D + 1));   /* (Q, D + 1) the same through the instance projection, and its bias */
    const int kb = w->inst_proj.b ? D + 1 : D;           /* the mask product's depth */
    double *st = (double *)sam3__salloc(c, (size_t)D * ((S0 + 3) / 4) * 3 * sizeof(double)); /* (D, tile rows, 3) GroupNorm partials */
    int k, side = S, t;
    sam3_result rc;
    if (!enc || !h || !x || !up || !me || !mw || !st) return SAM3_ERR_OUT_OF_MEMORY;
    memcpy(enc, mem, (size_t)Ng * D * sizeof(float));
    sam3__layernorm(c, enc, h, Ng, D, &w->cross_ln, 1e-5f);
    if ((rc = sam3__mha(c, &w->cross_attn, h, prompt, prompt, Ng, np, D, m->mask.heads, 0, h)) != SAM3_OK) return rc;
    sam3__vadd(c, enc, h, (size_t)Ng * D);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (t = 0; t < Ng; t++) {
        int ch;
        for (ch = 0; ch < D; ch++) x[(size_t)ch * Ng + t] = enc[(size_t)t * D + ch];
    }
    for (k = 0; k < m->neck.n_kept - 1; k++) {
        int level = m->neck.n_kept - 2 - k, os = m->neck.side[level];
        float *nx = up;
        /* the skip plus the upsampled map is formed as the conv reads its rows: an 85 MB map at
           288 x 288 neither written nor read again */
        if ((rc = sam3__conv3x3(c, c->fpn[level], x, side, side, D, os, os, &w->conv[k], D, nx, st)) != SAM3_OK) return rc;
        if ((rc = sam3__groupnorm(c, nx, D, (size_t)os * os, 8, st, (os + 3) / 4, &w->gn[k], 1e-5f, 1)) != SAM3_OK) return rc;
        up = x, x = nx;
        side = os;
    }
    SAM3_ASSERT(side == S0);
    if (Q > 0 && (rc = sam3__mlp3(c, queries, Q, D, w->embed, D, D, me)) != SAM3_OK) return rc;
    /* masks = me . (W_inst x + b) = (me W_inst) x + me . b: the instance projection (a 1x1 conv,
       11 GFLOP at 288 x 288, and an 85 MB map written and read) folded into the Q embeddings, and
       me . b into the product as a column against a row of ones (mw (Q, D + 1) has it as column D,
       x has the ones as row D), which saves adding it in a pass of its own over the 66 MB of
       mask logits */
    sam3__gemm_xw(c, 0, 0, Q, D, D, me, D, &w->inst_proj, 0, D, 0.0f, mw, D + 1);
    if (w->inst_proj.b) {
        size_t j;
        for (k = 0; k < Q; k++) {
            float s = 0;
            int i;
            for (i = 0; i < D; i++) s += me[(size_t)k * D + i] * w->inst_proj.b[i];
            mw[(size_t)k * (D + 1) + D] = s;
        }
        for (j = 0; j < hw0; j++) x[(size_t)D * hw0 + j] = 1.0f;
    }
    /* a bf16 product where the file's weights are bf16 or the context runs bf16 products, as the
       other products between activations (sam3__gemm_act); the f32 path stays f32 */
    sam3__gemm_act(c, w->inst_proj.wh || c->bf16, 0, 0, Q, (int)hw0, kb, mw, D + 1, x, (int)hw0, 0.0f, masks, (int)hw0);
    if (semantic) sam3__conv1x1(c, x, 0, D, (int)hw0, &w->sem_proj, 1, semantic);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: post-processing ==== */
/* Bilinear resize (align_corners=False, no antialias, as F.interpolate) of ih x iw maps of
   probabilities (or logits) straight into 0/1 masks of oh x ow, thresholded > thr (the taps:
   sam3__lerp_table, the rows' kernels and their spec: the kernels section). */
/* Output rows per task of sam3__resize_threshold_n. */
#define SAM3__RT_BAND 32
/* n maps at once: map i, src[i] (ih, iw), through a sigmoid first when sig, resized to oh x ow
   into masks + i * oh * ow; area[i] its area. Separable: a task's input rows are resized along x
   first (into the thread's scratch), then each output row is made from two of those, so both
   passes are contiguous and vectorise; the same products and sums in the same order as the
   one-step formula. Tasks are (map, band of SAM3__RT_BAND output rows): a map at a time, its rows
   split over the threads, would cost three joins a map and send its 1.5 MB of x-resized rows
   (at 1280 x 960) through L2. */
static sam3_result sam3__resize_threshold_n(sam3_ctx *c, int n, const float *const *src, int sig, int ih, int iw, const sam3__lerp *ty,
                                            const sam3__lerp *tx, int oh, int ow, float thr, uint8_t *masks, long *area) {
    sam3__mark mk = sam3__mark_get(c);
    const int nbd = (oh + SAM3__RT_BAND - 1) / SAM3__RT_BAND;
    const size_t plane = (size_t)oh * ow;
    long *barea = (long *)sam3__salloc(c, (size_t)SAM3__MAX(n * nbd, 1) * sizeof(long)); /* (n, nbd) per band */
    float *sbuf;
    size_t per_thr;
    int span = 1, bd, task;
    sam3__lerp_x px;
    /* Masks past any cache are written around it: no line read for ownership first (200 masks at
       1280 x 960 are 245 MB, so that read would double the traffic). Fewer stay in the cache for the caller. */
    const int stream = (double)n * (double)plane > 32e6;
    if (sam3__lerp_x_plan(c, tx, ow, &px) != SAM3_OK) return SAM3_ERR_OUT_OF_MEMORY;
    for (bd = 0; bd < nbd; bd++) { /* the most input rows a band reads (ty is non-decreasing) */
        const int r0 = bd * SAM3__RT_BAND, r1 = SAM3__MIN(oh, r0 + SAM3__RT_BAND);
        span = SAM3__MAX(span, ty[r1 - 1].i1 - ty[r0].i0 + 1);
    }
    SAM3_ASSERT(ty[oh - 1].i1 < ih);
    (void)ih; /* only asserted */
    per_thr = (size_t)span * ow + (size_t)iw;
    sbuf = sam3__sallocf(c, (size_t)c->nt * per_thr);
    if (!barea || !sbuf) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 1))
    for (task = 0; task < n * nbd; task++) {
        const int i = task / nbd, r0 = (task % nbd) * SAM3__RT_BAND, r1 = SAM3__MIN(oh, r0 + SAM3__RT_BAND);
        const int y0 = ty[r0].i0, y1 = ty[r1 - 1].i1;
        float *hz = sam3__thread_slice(sbuf, per_thr); /* (span, ow) the band's input rows resized along x */
        float *srow = hz + (size_t)span * ow;          /* (iw) an input row through the sigmoid */
        uint8_t *mask = masks + (size_t)i * plane;
        long ar = 0;
        int y, r;
        for (y = y0; y <= y1; y++) {
            const float *a = src[i] + (size_t)y * iw;
            float *h = hz + (size_t)(y - y0) * ow;
            if (sig) {
                c->k->sigmoid_row(a, srow, (size_t)iw);
                a = srow;
            }
            c->k->lerp_x_row(&px, tx, a, iw, ow, h);
        }
        for (r = r0; r < r1; r++)
            ar += c->k->lerp_y_threshold_row(hz + (size_t)(ty[r].i0 - y0) * ow, hz + (size_t)(ty[r].i1 - y0) * ow, ty[r].l0, ty[r].l1, thr,
                                             mask + (size_t)r * ow, ow, stream);
        barea[task] = ar;
        c->k->stream_fence(stream);
    }
    for (task = 0; task < n; task++) {
        long s = 0;
        for (bd = 0; bd < nbd; bd++) s += barea[(size_t)task * nbd + bd];
        area[task] = s;
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* One count of sam3_mask_to_rle's string (d: the count, or its difference to the count two
   before): 5-bit groups, least significant first, each as the character 48 + (group | 0x20 when
   more follow), the last group's 0x10 bit the sign (pycocotools' rleToString). Writes what fits
   below capacity - 1 (room for the NUL); *len counts every character. */
static void sam3__rle_put(int64_t d, char *rle, size_t capacity, size_t *len) {
    int more = 1;
    while (more) {
        int g = (int)(d & 0x1f);
        d = (d - g) / 32; /* floor(d / 32), as pycocotools' arithmetic shift of a negative long */
        more = (g & 0x10) ? d != -1 : d != 0;
        if (more) g |= 0x20;
        if (rle && *len + 1 < capacity) rle[*len] = (char)(48 + g);
        (*len)++;
    }
}

/* sam3_mask_to_rle (pycocotools' rleEncode + rleToString, cocodataset/cocoapi common/maskApi.c):
   runs over the mask column by column (x outer, y inner: pycocotools takes Fortran-order
   arrays), starting with a run of zeros (0 long when the first pixel is set), the last run
   included; each count from the fourth on is stored minus the count two before it. */
SAM3DEF sam3_result sam3_mask_to_rle(const uint8_t *mask, int width, int height, char *rle, size_t capacity, size_t *length) {
    int64_t before2 = 0, before1 = 0, cnt = 0; /* the two counts before this one, this one */
    size_t n_counts = 0, len = 0, npix;
    int x, y, prev = 0;
    if (rle && capacity) rle[0] = 0;
    if (!length || width < 0 || height < 0 || !sam3__mul((size_t)width, (size_t)height, &npix)) return SAM3_ERR_INVALID_ARG;
    if (!mask && npix) return SAM3_ERR_INVALID_ARG;
    for (x = 0; x < width; x++)
        for (y = 0; y < height; y++) {
            const int v = mask[(size_t)y * (size_t)width + (size_t)x] != 0;
            if (v != prev) {
                sam3__rle_put(n_counts > 2 ? cnt - before2 : cnt, rle, capacity, &len);
                before2 = before1, before1 = cnt, cnt = 0, n_counts++, prev = v;
            }
            cnt++;
        }
    sam3__rle_put(n_counts > 2 ? cnt - before2 : cnt, rle, capacity, &len);
    *length = len;
    if (!rle && !capacity) return SAM3_OK; /* the size query */
    if (!rle || len + 1 > capacity) {
        if (rle && capacity) rle[0] = 0;
        return SAM3_ERR_INVALID_ARG;
    }
    rle[len] = 0;
    return SAM3_OK;
}

/* ==== sam3: interactive head (Sam3TrackerModel) ==== */
/* The interactive head's image features, from the cached trunk output: its own FPN neck (levels
   4x, 2x, 1x), the decoder's conv_s0 / conv_s1 on the two high-resolution levels, and the grid's
   position encoding. The reference (transformers Sam3TrackerModel) adds no_memory_embedding only
   to the 0.5x level, which it then discards, so the 1x map goes to the decoder as it is. */
static sam3_result sam3__tracker_features(sam3_ctx *c) {
    const sam3_model *m = c->m;
    const sam3__trk_cfg *t = &m->trk;
    const sam3__trk_w *w = &m->trk_w;
    const int D = t->D, g = m->vit.grid;
    sam3__mark mk = sam3__mark_get(c);
    float *l0 = sam3__sallocf(c, (size_t)D * 16 * g * g); /* (D, 4g, 4g) */
    float *l1 = sam3__sallocf(c, (size_t)D * 4 * g * g);  /* (D, 2g, 2g) */
    int i, j;
    sam3_result rc;
    if (c->trk_ready) return SAM3_OK;
    if (!l0 || !l1) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__fpn_layer(c, &w->fpn[0], t->scale_x2[0], t->side[0], c->vit_out, l0)) != SAM3_OK) return rc;
    if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the interactive neck");
    if ((rc = sam3__fpn_layer(c, &w->fpn[1], t->scale_x2[1], t->side[1], c->vit_out, l1)) != SAM3_OK) return rc;
    if ((rc = sam3__fpn_layer(c, &w->fpn[2], t->scale_x2[2], t->side[2], c->vit_out, c->trk_e)) != SAM3_OK) return rc;
    sam3__tap(c, "trk.fpn.0", l0, 3, D, 4 * g, 4 * g);
    sam3__tap(c, "trk.fpn.1", l1, 3, D, 2 * g, 2 * g);
    sam3__tap(c, "trk.fpn.2", c->trk_e, 3, D, g, g);
    sam3__conv1x1(c, l0, 0, D, 16 * g * g, &w->conv_s0, D / 8, c->trk_s0);
    sam3__conv1x1(c, l1, 0, D, 4 * g * g, &w->conv_s1, D / 4, c->trk_s1);
    sam3__tap(c, "trk.feat_s0", c->trk_s0, 3, D / 8, 4 * g, 4 * g);
    sam3__tap(c, "trk.feat_s1", c->trk_s1, 3, D / 4, 2 * g, 2 * g);
    sam3__tap(c, "trk.image_embed", c->trk_e, 3, D, g, g);
    sam3__grid_pe(c);
    if (c->opt.tap) {
        float *cm = sam3__sallocf(c, (size_t)D * g * g); /* (D, g, g) for the tap */
        if (!cm) return SAM3_ERR_OUT_OF_MEMORY;
        for (i = 0; i < g * g; i++)
            for (j = 0; j < D; j++) cm[(size_t)j * g * g + i] = c->trk_pe[(size_t)i * D + j];
        sam3__tap(c, "trk.image_pe", cm, 3, D, g, g);
    }
    c->trk_ready = 1;
    sam3__release(c, mk);
    return SAM3_OK;
}

/* 2x2 stride-2 convolution with bias on a (cin, H, W) map -> (cout, H/2, W/2) (mask prompt path). */
static void sam3__conv2x2s2(const float *x, int cin, int H, int W, const sam3__lin *l, int cout, float *y) {
    int o, r, q, ch, dy, dx;
    for (o = 0; o < cout; o++)
        for (r = 0; r < H / 2; r++)
            for (q = 0; q < W / 2; q++) {
                float acc = l->b[o];
                for (ch = 0; ch < cin; ch++)
                    for (dy = 0; dy < 2; dy++)
                        for (dx = 0; dx < 2; dx++)
                            acc += sam3__lw(l, ((size_t)(o * cin + ch) * 2 + dy) * 2 + dx) * x[((size_t)ch * H + 2 * r + dy) * W + 2 * q + dx];
                y[((size_t)o * (H / 2) + r) * (W / 2) + q] = acc;
            }
}

/* Sam3TrackerPromptEncoder for one object: sparse (ns, D) tokens from the clicks and box, dense
   (D, g, g) from the mask prompt (or no_mask_embed). Coordinates go to the model's input frame as
   the processor maps them (x * S / width), then +0.5 (pixel centre) and / S. The box's corners
   (points labelled 2 and 3) follow the clicks, as Sam3TrackerProcessor sends them; box_first puts
   them before the clicks, as Sam3TrackerVideoProcessor does (the video tracker). */
static sam3_result sam3__trk_prompt_encoder(sam3_ctx *c, const sam3_points_prompt *pp, float rx, float ry, int box_first, float *sparse,
                                            int *ns, float *dense) {
    const sam3_model *m = c->m;
    const sam3__trk_cfg *t = &m->trk;
    const sam3__trk_w *w = &m->trk_w;
    const int D = t->D, g = t->grid, S = t->image;
    int i, n = 0, k, pass;
    for (pass = 0; pass < 3; pass++) { /* box first (0) or last (2), clicks between */
        if (pass == 1) { /* the clicks */
            for (i = 0; i < pp->n_points; i++) {
                const sam3_point *p = &pp->points[i];
                float *o = sparse + (size_t)n++ * D;
                sam3__fourier_pe(w->gauss, D, (p->x * rx + 0.5f) / (float)S, (p->y * ry + 0.5f) / (float)S, o);
                for (k = 0; k < D; k++) o[k] += w->point_rows[p->label][k];
            }
        } else if (pp->box && pass == (box_first ? 0 : 2)) { /* the box's corners */
            const sam3_box *b = pp->box;
            float *o = sparse + (size_t)n * D;
            sam3__fourier_pe(w->gauss, D, (b->x0 * rx + 0.5f) / (float)S, (b->y0 * ry + 0.5f) / (float)S, o);
            sam3__fourier_pe(w->gauss, D, (b->x1 * rx + 0.5f) / (float)S, (b->y1 * ry + 0.5f) / (float)S, o + D);
            for (k = 0; k < D; k++) {
                o[k] += w->point_rows[2][k];
                o[D + k] += w->point_rows[3][k];
            }
            n += 2;
        }
    }
    if (pp->box) {
        if (t->box_pad) memcpy(sparse + (size_t)n++ * D, w->not_a_point, (size_t)D * sizeof(float)); /* the SAM 3 tracker pads */
    } else if (pp->n_points || t->empty_pad) {
        if (pp->n_points == 0) /* the tracker inserts one point (0, 0) labelled -1 when nothing is given */
            memcpy(sparse + (size_t)n++ * D, w->not_a_point, (size_t)D * sizeof(float));
        memcpy(sparse + (size_t)n++ * D, w->not_a_point, (size_t)D * sizeof(float)); /* padding point */
    }
    *ns = n;
    if (pp->mask_logits) {
        sam3__mark mk = sam3__mark_get(c);
        const int mi = t->mask_in_ch, H = 4 * g;
        float *a = sam3__sallocf(c, (size_t)(mi / 4) * 2 * g * 2 * g); /* (mi/4, 2g, 2g) */
        float *b = sam3__sallocf(c, (size_t)mi * g * g);               /* (mi, g, g) */
        const float *mask = pp->mask_logits;
        if (!a || !b) return SAM3_ERR_OUT_OF_MEMORY;
        if (pp->mask_width != H || pp->mask_height != H) {
            /* the tracker resizes other mask sizes with antialiased bilinear (SAM 1 refuses them) */
            float *r = sam3__sallocf(c, (size_t)H * H); /* (4g, 4g) */
            sam3_result rc;
            if (!r) return SAM3_ERR_OUT_OF_MEMORY;
            if ((rc = sam3__aa_resize_f32(c, pp->mask_logits, pp->mask_height, pp->mask_width, r, H, H)) != SAM3_OK) return rc;
            mask = r;
        }
        sam3__conv2x2s2(mask, 1, H, H, &w->mask_conv1, mi / 4, a);
        sam3__layernorm2d(c, a, mi / 4, (size_t)4 * g * g, &w->mask_ln1, t->pe_ln_eps, 1);
        sam3__conv2x2s2(a, mi / 4, 2 * g, 2 * g, &w->mask_conv2, mi, b);
        sam3__layernorm2d(c, b, mi, (size_t)g * g, &w->mask_ln2, t->pe_ln_eps, 1);
        sam3__conv1x1(c, b, 0, mi, g * g, &w->mask_conv3, D, dense);
        sam3__release(c, mk);
    } else {
        for (k = 0; k < D; k++)
            for (i = 0; i < g * g; i++) dense[(size_t)k * g * g + i] = w->no_mask[k];
    }
    return SAM3_OK;
}

/* y (cols, rows) = (x + a)^T for x, a (rows, cols) (a may be NULL), and yp = y + pos (pos (cols,
   rows)) where yp is given: between channel-major maps and token rows. By 32 x 32 tiles through a
   buffer in L1, so that both sides are read and written by rows (element by element, the writes
   of one side stride a whole row apart). */
static void sam3__transpose(sam3_ctx *c, const float *x, const float *a, int rows, int cols, float *y, const float *pos, float *yp) {
    const ptrdiff_t nbr = (rows + 31) / 32, nbc = (cols + 31) / 32;
    ptrdiff_t task;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(dynamic, 8) if((double)rows * cols >= SAM3__PAR_MIN))
    for (task = 0; task < nbr * nbc; task++) {
        const int r0 = (int)(task % nbr) * 32, c0 = (int)(task / nbr) * 32;
        const int nr = SAM3__MIN(rows - r0, 32), nc = SAM3__MIN(cols - c0, 32);
        float t[32][33]; /* (nc, nr) */
        int i, j;
        for (i = 0; i < nr; i++) {
            const float *xr = x + (size_t)(r0 + i) * cols + c0, *ar = a ? a + (size_t)(r0 + i) * cols + c0 : NULL;
            if (ar)
                for (j = 0; j < nc; j++) t[j][i] = xr[j] + ar[j];
            else
                for (j = 0; j < nc; j++) t[j][i] = xr[j];
        }
        for (j = 0; j < nc; j++) {
            float *yr = y + (size_t)(c0 + j) * rows + r0;
            for (i = 0; i < nr; i++) yr[i] = t[j][i];
            if (yp) {
                const float *pr = pos + (size_t)(c0 + j) * rows + r0;
                float *o = yp + (size_t)(c0 + j) * rows + r0;
                for (i = 0; i < nr; i++) o[i] = t[j][i] + pr[i];
            }
        }
    }
}

/* Token->image attention on keys and values already projected: k, v (nk, di); qin (nq, D) ->
   out (nq, D). The same products as sam3__mha_core's, the keys' and values' made once. */
static sam3_result sam3__mha_kv(sam3_ctx *c, const sam3__attn_w *w, const float *qin, int nq, const float *k, const float *v, int nk, int D,
                                int di, int nh, float *out) {
    sam3__mark mk = sam3__mark_get(c);
    float *q = sam3__sallocf(c, (size_t)nq * di); /* (nq, di), then the attention's output */
    sam3__attn_args at;
    sam3_result rc;
    if (!q) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__linear(c, qin, nq, D, &w->q, di, q);
    memset(&at, 0, sizeof(at));
    at.nq = nq, at.nk = nk, at.nh = nh, at.hd = di / nh, at.q = at.out = q, at.k = k, at.v = v;
    at.ldq = at.ldk = at.ldv = at.ldo = di;
    if ((rc = sam3__attention_rel(c, &at)) != SAM3_OK) return rc;
    sam3__linear_res(c, q, nq, di, &w->o, D, out, NULL);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* The mask decoder's start that every click without a mask prompt shares (c->trk_img0): the cached
   1x map plus no_mask_embed as tokens, with position, and layer 0's token->image keys and values
   of them. img0 (2 Ng D + 2 Ng di). */
static sam3_result sam3__trk_img0(sam3_ctx *c, float *img0) {
    const sam3__trk_cfg *t = &c->m->trk;
    const sam3__twoway_layer_w *lw = &c->m->trk_w.layers[0];
    const int D = t->D, di = D / t->down, Ng = t->grid * t->grid;
    float *im = img0, *ik = im + (size_t)Ng * D, *k = ik + (size_t)Ng * D, *v = k + (size_t)Ng * di;
    sam3__mark mk = sam3__mark_get(c);
    float *dense = sam3__sallocf(c, (size_t)D * Ng); /* (D, g, g) */
    int ch, i;
    if (!dense) return SAM3_ERR_OUT_OF_MEMORY;
    for (ch = 0; ch < D; ch++)
        for (i = 0; i < Ng; i++) dense[(size_t)ch * Ng + i] = c->m->trk_w.no_mask[ch];
    sam3__transpose(c, c->trk_e, dense, D, Ng, im, c->trk_pe, ik);
    sam3__linear(c, ik, Ng, D, &lw->t2i.k, di, k);
    sam3__linear(c, im, Ng, D, &lw->t2i.v, di, v);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3TrackerMaskDecoder's two-way transformer over [object-score token, IoU token, mask tokens,
   sparse prompt] and the image tokens, then its IoU and object-score heads. img (D, g, g) the
   image embedding (the cached 1x map, or the tracker's memory-conditioned one); with c->trk_img0
   (img the cached map, dense no_mask_embed) its start is read from there. im (Ng, D) ends as the
   image tokens the upscaling reads, tk (n, D) the tokens; iou (n_mask_tokens) after the sigmoid,
   obj (1). */
static sam3_result sam3__trk_twoway(sam3_ctx *c, const float *img, const float *sparse, int ns, const float *dense, float *im, float *tk,
                                    float *iou, float *obj) {
    const sam3_model *m = c->m;
    const sam3__trk_cfg *t = &m->trk;
    const sam3__trk_w *w = &m->trk_w;
    const int D = t->D, di = D / t->down, nh = t->heads, Ng = t->grid * t->grid, nm = t->n_mask_tokens;
    const int it = t->obj_token, n = it + 1 + nm + ns; /* [object-score], IoU, mask tokens, prompt */
    const float *img0 = c->trk_img0;
    sam3__mark mk = sam3__mark_get(c);
    float *t0 = sam3__sallocf(c, (size_t)n * D);  /* (n, D) initial tokens = their position */
    float *q = sam3__sallocf(c, (size_t)n * D);   /* (n, D) */
    float *y = sam3__sallocf(c, (size_t)n * D);   /* (n, D) */
    float *ik = sam3__sallocf(c, (size_t)Ng * D); /* (Ng, D) image tokens + position */
    float *iy = sam3__sallocf(c, (size_t)Ng * D); /* (Ng, D) */
    sam3__mha_args t2i, i2t;
    int l, j;
    sam3_result rc;
    if (!t0 || !q || !y || !ik || !iy) return SAM3_ERR_OUT_OF_MEMORY;
    /* the cross-attentions through di channels: the tokens (q) to the image (keys ik, values im),
       and the image (ik) to the tokens (keys q, values tk) */
    memset(&t2i, 0, sizeof(t2i));
    t2i.qin = q, t2i.kin = ik, t2i.vin = im, t2i.nq = n, t2i.nk = Ng, t2i.D = D, t2i.di = di, t2i.nh = nh, t2i.act_bf16 = 1;
    i2t = t2i;
    t2i.few_queries = 1;
    i2t.qin = ik, i2t.kin = q, i2t.vin = tk, i2t.nq = Ng, i2t.nk = n;
    if (it) memcpy(t0, w->obj_token, (size_t)D * sizeof(float));
    memcpy(t0 + (size_t)it * D, w->iou_token, (size_t)D * sizeof(float));
    memcpy(t0 + (size_t)(it + 1) * D, w->mask_tokens, (size_t)nm * D * sizeof(float));
    memcpy(t0 + (size_t)(it + 1 + nm) * D, sparse, (size_t)ns * D * sizeof(float));
    memcpy(tk, t0, (size_t)n * D * sizeof(float));
    if (img0) { /* layer 0 reads its image tokens with position from img0, and ik is written at its end */
        memcpy(im, img0, (size_t)Ng * D * sizeof(float));
    } else {
        sam3__transpose(c, img, dense, D, Ng, im, c->trk_pe, ik); /* ik: the keys' (and queries') image tokens + position */
    }
    for (l = 0; l < t->layers; l++) {
        const sam3__twoway_layer_w *lw = &w->layers[l];
        /* self-attention; the first block has no position and no residual */
        if (l == 0) {
            if ((rc = sam3__mha(c, &lw->self_attn, tk, tk, tk, n, n, D, nh, 0, tk)) != SAM3_OK) return rc;
        } else {
            memcpy(q, tk, (size_t)n * D * sizeof(float));
            sam3__vadd(c, q, t0, (size_t)n * D);
            if ((rc = sam3__mha(c, &lw->self_attn, q, q, tk, n, n, D, nh, 0, y)) != SAM3_OK) return rc;
            sam3__vadd(c, tk, y, (size_t)n * D);
        }
        sam3__layernorm(c, tk, tk, n, D, &lw->ln1, t->tw_eps);
        /* tokens -> image (layer 0's keys and values from c->trk_img0 where it is set) */
        memcpy(q, tk, (size_t)n * D * sizeof(float));
        sam3__vadd(c, q, t0, (size_t)n * D);
        rc = l == 0 && img0 ? sam3__mha_kv(c, &lw->t2i, q, n, img0 + (size_t)2 * Ng * D, img0 + (size_t)2 * Ng * D + (size_t)Ng * di, Ng, D, di, nh, y)
                            : sam3__mha_core(c, &lw->t2i, &t2i, y, NULL);
        if (rc != SAM3_OK) return rc;
        sam3__vadd(c, tk, y, (size_t)n * D);
        sam3__layernorm(c, tk, tk, n, D, &lw->ln2, t->tw_eps);
        /* MLP */
        if ((rc = sam3__ffn(c, &lw->mlp, tk, n, D, t->mlp_dim, D, y)) != SAM3_OK) return rc;
        sam3__vadd(c, tk, y, (size_t)n * D);
        sam3__layernorm(c, tk, tk, n, D, &lw->ln3, t->tw_eps);
        /* image -> tokens: the image tokens (with position) query the tokens (with position) */
        memcpy(q, tk, (size_t)n * D * sizeof(float));
        sam3__vadd(c, q, t0, (size_t)n * D);
        i2t.qin = l == 0 && img0 ? img0 + (size_t)Ng * D : ik;
        if ((rc = sam3__mha_core(c, &lw->i2t, &i2t, iy, im)) != SAM3_OK) return rc;
        sam3__layernorm_pos(c, im, im, c->trk_pe, ik, Ng, D, &lw->ln4, t->tw_eps); /* and the next keys, ik */
    }
    memcpy(q, tk, (size_t)n * D * sizeof(float));
    sam3__vadd(c, q, t0, (size_t)n * D);
    if ((rc = sam3__mha_core(c, &w->final_attn, &t2i, y, NULL)) != SAM3_OK) return rc;
    sam3__vadd(c, tk, y, (size_t)n * D);
    sam3__layernorm(c, tk, tk, n, D, &w->final_ln, 1e-5f);
    if ((rc = sam3__ffn(c, &w->iou_head, tk + (size_t)it * D, 1, D, t->iou_hidden, nm, iou)) != SAM3_OK) return rc;
    if (t->iou_sigmoid)
        for (j = 0; j < nm; j++) iou[j] = sam3__sigmoid(iou[j]);
    *obj = 0;
    if (t->obj_token && (rc = sam3__ffn(c, &w->obj_head, tk, 1, D, D, 1, obj)) != SAM3_OK) return rc;
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3TrackerMaskDecoder's upscaling with the high-resolution skips and its hypernetwork masks:
   im (Ng, D) and tk (n, D) from sam3__trk_twoway -> all_masks (n_mask_tokens, 4g, 4g) logits. */
static sam3_result sam3__trk_upscale(sam3_ctx *c, const float *im, const float *tk, float *all_masks) {
    const sam3_model *m = c->m;
    const sam3__trk_cfg *t = &m->trk;
    const sam3__trk_w *w = &m->trk_w;
    const int D = t->D, g = t->grid, Ng = g * g, nm = t->n_mask_tokens, it = t->obj_token;
    sam3__mark mk = sam3__mark_get(c);
    float *u1 = sam3__sallocf(c, (size_t)(D / 4) * 4 * Ng);  /* (D/4, 2g, 2g) */
    float *u2 = sam3__sallocf(c, (size_t)(D / 8) * 16 * Ng); /* (D/8, 4g, 4g) */
    float *hyp = sam3__sallocf(c, (size_t)nm * (D / 8));     /* (nm, D/8) */
    float *cm = sam3__sallocf(c, (size_t)D * Ng);            /* (D, g, g) */
    int j;
    sam3_result rc;
    if (!u1 || !u2 || !hyp || !cm) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__transpose(c, im, NULL, Ng, D, cm, NULL, NULL);
    /* SAM 1 has no skips (trk_s1, trk_s0 NULL) */
    if ((rc = sam3__convt2x2(c, cm, 0, D, g, g, &w->up1, D / 4, c->trk_s1, 0, u1)) != SAM3_OK) return rc;
    sam3__layernorm2d(c, u1, D / 4, (size_t)4 * Ng, &w->up_ln, 1e-6f, 1);
    if ((rc = sam3__convt2x2(c, u1, 0, D / 4, 2 * g, 2 * g, &w->up2, D / 8, c->trk_s0, 1, u2)) != SAM3_OK) return rc;
    /* one hypernetwork per mask token, then masks = hyper . upscaled */
    for (j = 0; j < nm; j++)
        if ((rc = sam3__ffn(c, &w->hypernet[j], tk + (size_t)(it + 1 + j) * D, 1, D, D, D / 8, hyp + (size_t)j * (D / 8))) != SAM3_OK)
            return rc;
    sam3__gemm(c, 0, 0, nm, 16 * Ng, D / 8, 1.0f, hyp, D / 8, u2, 16 * Ng, 0.0f, all_masks, 16 * Ng);
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3TrackerMaskDecoder: the two-way transformer and heads, then the masks. all_masks
   (n_mask_tokens, 4g, 4g) logits, iou (n_mask_tokens), obj (1); tokens (n_mask_tokens, D) the mask
   tokens' outputs (the video tracker's object pointers), or NULL. */
static sam3_result sam3__trk_mask_decoder(sam3_ctx *c, const float *img, const float *sparse, int ns, const float *dense, float *all_masks,
                                          float *iou, float *obj, float *tokens) {
    const sam3__trk_cfg *t = &c->m->trk;
    const int D = t->D, Ng = t->grid * t->grid, nm = t->n_mask_tokens, it = t->obj_token, n = it + 1 + nm + ns;
    sam3__mark mk = sam3__mark_get(c);
    float *im = sam3__sallocf(c, (size_t)Ng * D); /* (Ng, D) image tokens */
    float *tk = sam3__sallocf(c, (size_t)n * D);  /* (n, D) tokens */
    sam3_result rc;
    if (!im || !tk) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__trk_twoway(c, img, sparse, ns, dense, im, tk, iou, obj)) != SAM3_OK) return rc;
    if ((rc = sam3__trk_upscale(c, im, tk, all_masks)) != SAM3_OK) return rc;
    if (tokens) memcpy(tokens, tk + (size_t)(it + 1) * D, (size_t)nm * D * sizeof(float));
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: video memory (Sam3TrackerVideoModel: memory attention, memory encoder) ==== */
/* bf16 of x, rounded to nearest even as torch's .to(torch.bfloat16): the reference keeps every
   memory in bf16, so a memory read back differs from the f32 one by up to 2^-9 relative. */
static uint16_t sam3__to_bf16(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    if ((b & 0x7F800000u) == 0x7F800000u) return (uint16_t)((b >> 16) | ((b & 0xFFFFu) ? 0x40u : 0u)); /* inf, NaN stays NaN */
    b += 0x7FFFu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}
static float sam3__from_bf16(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float x;
    memcpy(&x, &b, sizeof(x));
    return x;
}

/* Sam3TrackerVideoVisionRotaryEmbedding: axial RoPE over the g x g grid for heads of hd. Token
   n = y g + x; pair p < hd/4 turns by x f_p, the next hd/4 pairs by y f_(p - hd/4), with
   f_j = theta^(-4j / hd). tab (g*g, hd/2, 2): cos, sin. */
static void sam3__mem_rope_table(int g, int hd, float theta, float *tab) {
    const int q = hd / 4;
    int n, p;
    for (n = 0; n < g * g; n++) {
        const float xs = (float)(n % g), ys = (float)(n / g);
        for (p = 0; p < hd / 2; p++) {
            const float f = (float)(1.0 / pow((double)theta, (double)(4 * (p % q)) / (double)hd));
            const float a = (p < q ? xs : ys) * f;
            tab[((size_t)n * (hd / 2) + p) * 2] = cosf(a);
            tab[((size_t)n * (hd / 2) + p) * 2 + 1] = sinf(a);
        }
    }
}

/* apply_rotary_pos_emb_2d on n rows of nh heads of hd (row stride ld): row i turns by table row
   i mod N, so memory keys, frames of N tokens one after another, reuse the table per frame. */
static void sam3__mem_rope_apply(sam3_ctx *c, float *x, int n, int ld, int nh, int hd, const float *tab, int N) {
    ptrdiff_t i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static) if((double)(n * nh * hd) >= SAM3__PAR_MIN))
    for (i = 0; i < (ptrdiff_t)n; i++) {
        const float *cs = tab + (size_t)(i % N) * hd;
        int h, p;
        for (h = 0; h < nh; h++) {
            float *r = x + (size_t)i * ld + (size_t)h * hd;
            for (p = 0; p < hd / 2; p++) {
                const float a = r[2 * p], b = r[2 * p + 1], co = cs[2 * p], si = cs[2 * p + 1];
                r[2 * p] = a * co - b * si;
                r[2 * p + 1] = b * co + a * si;
            }
        }
    }
}

/* Sam3TrackerVideoMemoryAttention for one object: the frame's 1x features plus 0.1 x their sine
   position attend to themselves and to the memory, pre-norm layers, a final LayerNorm.
   feat (D, g, g) channel-major; pos (N, D); mem, mem_pos (nk, mem_dim): nk - n_ptr spatial keys
   (frames of N tokens, RoPE'd with the table repeated per frame) then n_ptr pointer tokens (no
   RoPE); rope (N, hd/2, 2). out (D, g, g), the image embedding of the mask decoder. Where the
   weights' products run in bf16 and the CPU has the bf16 attention tiles (sam3__att_bf16_mode), both
   attentions run on them, by the chunked kernel of sam3__attention_cross_bf16 (queries apart from
   keys, ra.nq), RoPE applied in f32 before, with q and k rounded to bf16 for the scores (ATT_XSPLIT,
   as PyTorch's bf16 attention: unlike the ViT's 32 layers, these 4 keep the masks within the bf16
   bars without the split pairs); the cross-attention's P.V (one head) on the memory itself, M channels, and its
   value projection after it, as the softmax's rows sum to 1. x1 (N, D) or NULL: the stream
   after the first self-attention, which depends on the frame alone: taken from x1 where *x1_ok,
   else kept there for the frame's other objects. */
static sam3_result sam3__memory_attention(sam3_ctx *c, const float *feat, const float *pos, const float *mem, const float *mem_pos, int nk,
                                          int n_ptr, const float *rope, float *x1, int *x1_ok, float *out) {
    const sam3_model *m = c->m;
    const sam3__vid_cfg *v = &m->vid;
    const sam3__vid_w *w = &m->vid_w;
    const int D = m->trk.D, g = m->trk.grid, N = g * g, di = v->ma_di, nh = v->ma_heads, hd = di / nh, M = v->mem_dim;
    const int nkv = SAM3__MAX(N, nk), nkb = (nkv + SAM3__BNR - 1) / SAM3__BNR * SAM3__BNR, hdp = (hd + 31) / 32 * 32;
    const int abf = (c->bf16 || w->ma[0].self_attn.q.wh) && N >= c->att_min && hd % 2 == 0 && sam3__att_bf16_mode(c, hd) == SAM3__ATT_TILES
                        ? SAM3__ATT_TILES : 0;
    const int reuse = x1 && *x1_ok, rv = abf && nh == 1 && M <= hd; /* rv: P.V on the unprojected memory */
    sam3__mark mk = sam3__mark_get(c);
    float *x = sam3__sallocf(c, (size_t)N * D);    /* (N, D) the queries' stream */
    float *h = sam3__sallocf(c, (size_t)N * D);    /* (N, D) normed */
    float *t = sam3__sallocf(c, (size_t)N * D);    /* (N, D) scratch of the residual products */
    float *q = sam3__sallocf(c, (size_t)N * di);   /* (N, di) */
    float *k = sam3__sallocf(c, (size_t)nkv * di); /* (max(N, nk), di) */
    float *vv = sam3__sallocf(c, (size_t)nkv * di);
    float *kin = sam3__sallocf(c, (size_t)nk * M); /* (nk, M) memory + its position */
    /* the tiles' packed K (nh, nkb / BNR, 3 hdp / 2, BNR, 2) and V (nh, hdp / BNR, nkb / 2, BNR, 2), bf16 */
    float *kb = abf ? sam3__sallocf(c, ((size_t)nh * nkb * SAM3__ATT_KSPLIT * hdp + 1) / 2) : NULL;
    float *vb = abf ? sam3__sallocf(c, ((size_t)nh * nkb * hdp + 1) / 2) : NULL;
    sam3__attn_args at;
    sam3__rope_args ra;
    ptrdiff_t i;
    int l;
    sam3_result rc;
    if (!x || !h || !t || !q || !k || !vv || !kin || (abf && (!kb || !vb))) return SAM3_ERR_OUT_OF_MEMORY;
    memset(&ra, 0, sizeof(ra)); /* the same for the tiles: one batch, biases added by the products */
    ra.q = q, ra.k = k, ra.v = vv, ra.ld = di, ra.nb = 1, ra.nh = nh, ra.hd = hd;
    memset(&at, 0, sizeof(at)); /* both attentions: the N queries of q (q becomes the output) on k, vv */
    at.nq = N, at.nh = nh, at.hd = hd, at.q = at.out = q, at.k = k, at.v = vv, at.ldq = at.ldk = at.ldv = at.ldo = di;
    if (reuse) memcpy(x, x1, (size_t)N * D * sizeof(float));
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < (ptrdiff_t)(reuse ? 0 : N); i++) {
        int ch;
        for (ch = 0; ch < D; ch++) x[(size_t)i * D + ch] = feat[(size_t)ch * N + i] + 0.1f * pos[(size_t)i * D + ch];
    }
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < (ptrdiff_t)nk * M; i++) kin[i] = mem[i] + mem_pos[i];
    for (l = 0; l < v->ma_layers; l++) {
        const sam3__memattn_layer_w *lw = &w->ma[l];
        if (l > 0 || !reuse) { /* self-attention, RoPE on queries and keys (layer 0's: the frame's alone) */
            sam3__layernorm(c, x, h, N, D, &lw->ln1, 1e-5f);
            sam3__linear(c, h, N, D, &lw->self_attn.q, di, q);
            sam3__linear(c, h, N, D, &lw->self_attn.k, di, k);
            sam3__linear(c, h, N, D, &lw->self_attn.v, di, vv);
            sam3__mem_rope_apply(c, q, N, di, nh, hd, rope, N);
            sam3__mem_rope_apply(c, k, N, di, nh, hd, rope, N);
            at.nk = ra.nk = N, ra.nq = N;
            if ((rc = abf ? sam3__attention_rope(c, abf, &ra, kb, vb) : sam3__attention_rel(c, &at)) != SAM3_OK) return rc;
            sam3__linear_res(c, q, N, di, &lw->self_attn.o, D, t, x);
            if (l == 0 && x1) memcpy(x1, x, (size_t)N * D * sizeof(float)), *x1_ok = 1;
        }
        /* cross-attention to the memory: keys from memory + position, values from the memory */
        sam3__layernorm(c, x, h, N, D, &lw->ln2, 1e-5f);
        sam3__linear(c, h, N, D, &lw->cross_attn.q, di, q);
        sam3__mem_rope_apply(c, q, N, di, nh, hd, rope, N);
        sam3__linear(c, kin, nk, M, &lw->cross_attn.k, di, k);
        if (!rv) sam3__linear(c, mem, nk, M, &lw->cross_attn.v, di, vv);
        sam3__mem_rope_apply(c, k, nk - n_ptr, di, nh, hd, rope, N);
        at.nk = ra.nk = nk, ra.nq = N;
        if (rv) ra.v = mem, ra.vd = ra.ldv = M; /* P (mem W_v^T + b_v) = (P mem) W_v^T + b_v: P.V over M, not di, channels */
        if ((rc = abf ? sam3__attention_rope(c, abf, &ra, kb, vb) : sam3__attention_rel(c, &at)) != SAM3_OK) return rc;
        if (rv) {
            ra.v = vv, ra.vd = ra.ldv = 0;
            for (i = 0; i < (ptrdiff_t)N; i++) memcpy(h + (size_t)i * M, q + (size_t)i * di, (size_t)M * sizeof(float));
            sam3__linear(c, h, N, M, &lw->cross_attn.v, di, q); /* (N, di) */
        }
        sam3__linear_res(c, q, N, di, &lw->cross_attn.o, D, t, x);
        /* MLP */
        sam3__layernorm(c, x, h, N, D, &lw->ln3, 1e-5f);
        if ((rc = sam3__mlp2_res(c, h, N, D, &lw->fc1, v->ma_ffn, &lw->fc2, D, 1, t, x)) != SAM3_OK) return rc;
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the memory attention");
    }
    sam3__layernorm(c, x, h, N, D, &w->ma_ln, 1e-5f);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < (ptrdiff_t)D; i++) {
        int n;
        for (n = 0; n < N; n++) out[(size_t)i * N + n] = h[(size_t)n * D + i];
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* k x k convolution with stride s and zero padding pad, channel-major: x (cin, H, W) ->
   y (cout, Ho, Wo), by im2col and one product (the mask downsampler's and mask_downsample's). */
static sam3_result sam3__conv2d(sam3_ctx *c, const float *x, int cin, int H, int W, const sam3__lin *l, int cout, int k, int s, int pad,
                                float *y, int Ho, int Wo) {
    sam3__mark mk = sam3__mark_get(c);
    const int K = cin * k * k;
    const size_t P = (size_t)Ho * Wo;
    float *col = sam3__sallocf(c, (size_t)K * P); /* (cin k k, Ho Wo) */
    ptrdiff_t r;
    if (!col) return SAM3_ERR_OUT_OF_MEMORY;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (r = 0; r < (ptrdiff_t)K; r++) {
        const int ci = (int)(r / (k * k)), ky = (int)(r / k % k), kx = (int)(r % k);
        float *o = col + (size_t)r * P;
        int oy, ox;
        for (oy = 0; oy < Ho; oy++) {
            const int iy = oy * s - pad + ky;
            for (ox = 0; ox < Wo; ox++) {
                const int ix = ox * s - pad + kx;
                o[(size_t)oy * Wo + ox] = (iy < 0 || iy >= H || ix < 0 || ix >= W) ? 0.0f : x[((size_t)ci * H + iy) * W + ix];
            }
        }
    }
    sam3__gemm_wx(c, 0, 0, cout, (int)P, K, l, 0, K, col, (int)P, 0.0f, y, (int)P);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (r = 0; r < (ptrdiff_t)cout; r++) {
        float *o = y + (size_t)r * P, b = l->b ? l->b[r] : 0.0f;
        size_t j;
        for (j = 0; j < P; j++) o[j] += b;
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3TrackerVideoMemoryFuserCXBlock, in place on x (D, g, g): depthwise k x k, LayerNorm2d,
   Linear D -> inter, GELU, Linear inter -> D, times the layer scale, plus the input. */
static sam3_result sam3__memory_fuser_block(sam3_ctx *c, const sam3__fuser_w *f, float *x) {
    const sam3_model *m = c->m;
    const sam3__vid_cfg *v = &m->vid;
    const int D = m->trk.D, g = m->trk.grid, N = g * g, k = v->fu_kernel, pad = v->fu_pad;
    sam3__mark mk = sam3__mark_get(c);
    float *y = sam3__sallocf(c, (size_t)D * N);           /* (D, g, g) */
    float *tt = sam3__sallocf(c, (size_t)N * D);          /* (N, D) */
    float *hh = sam3__sallocf(c, (size_t)N * v->fu_inter); /* (N, inter) */
    float *wd = sam3__sallocf(c, (size_t)D * k * k);       /* (D, k, k) the depthwise taps, widened from a bf16 file */
    ptrdiff_t ch, tk;
    if (!y || !tt || !hh || !wd) return SAM3_ERR_OUT_OF_MEMORY;
    for (ch = 0; ch < (ptrdiff_t)D * k * k; ch++) wd[ch] = sam3__lw(&f->dw, (size_t)ch);
    /* a row of outputs at a time, each tap over the row's valid columns: every output sums its
       taps in the order (dy, dx), the bias first, so the loops over xx vectorise */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (ch = 0; ch < (ptrdiff_t)D; ch++) {
        const float *xc = x + (size_t)ch * N, *wc = wd + (size_t)ch * k * k;
        int yy, xx, dy, dx;
        for (yy = 0; yy < g; yy++) {
            float *yr = y + (size_t)ch * N + (size_t)yy * g;
            for (xx = 0; xx < g; xx++) yr[xx] = f->dw.b[ch];
            for (dy = 0; dy < k; dy++) {
                const int iy = yy + dy - pad;
                if (iy < 0 || iy >= g) continue;
                for (dx = 0; dx < k; dx++) {
                    const int x0 = SAM3__MAX(0, pad - dx), x1 = SAM3__MIN(g, g + pad - dx); /* 0 <= xx + dx - pad < g */
                    const float wt = wc[dy * k + dx], *xr = xc + (size_t)iy * g;
                    const int sh = dx - pad;
                    for (xx = x0; xx < x1; xx++) yr[xx] += wt * xr[xx + sh];
                }
            }
        }
    }
    sam3__layernorm2d(c, y, D, (size_t)N, &f->ln, 1e-6f, 0);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (tk = 0; tk < (ptrdiff_t)N; tk++) {
        int d;
        for (d = 0; d < D; d++) tt[(size_t)tk * D + d] = y[(size_t)d * N + tk];
    }
    sam3__gemm_xw(c, 0, 1, N, v->fu_inter, D, tt, D, &f->pw1, 0, D, 0.0f, hh, v->fu_inter);
    sam3__gelu_bias(c, hh, (size_t)N, v->fu_inter, f->pw1.b);
    sam3__linear(c, hh, N, v->fu_inter, &f->pw2, D, tt);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (ch = 0; ch < (ptrdiff_t)D; ch++) {
        int n;
        for (n = 0; n < N; n++) x[(size_t)ch * N + n] += f->scale[ch] * tt[(size_t)n * D + ch];
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Sam3TrackerVideoMemoryEncoder for one object: mask (16g, 16g), already scaled to the encoder's
   range, through the mask downsampler (stride-s convs, LayerNorm2d, GELU; a final 1x1), plus the
   projected 1x features feat (D, g, g); the fuser; a 1x1 to the memory width. An absent object
   (score <= 0) gets the occlusion embedding. mem (N, mem_dim) token-major, in bf16. */
static sam3_result sam3__memory_encoder(sam3_ctx *c, const float *feat, const float *mask, float score, uint16_t *mem) {
    const sam3_model *m = c->m;
    const sam3__vid_cfg *v = &m->vid;
    const sam3__vid_w *w = &m->vid_w;
    const int D = m->trk.D, g = m->trk.grid, N = g * g, M = v->mem_dim;
    sam3__mark mk = sam3__mark_get(c);
    float *a = sam3__sallocf(c, (size_t)v->ds_ch[1] * v->ds_side[1] * v->ds_side[1]); /* the largest downsampler map */
    float *b = sam3__sallocf(c, (size_t)v->ds_ch[1] * v->ds_side[1] * v->ds_side[1]);
    float *x = sam3__sallocf(c, (size_t)D * N);  /* (D, g, g) */
    float *fp = sam3__sallocf(c, (size_t)D * N); /* (D, g, g) projected features */
    float *pm = sam3__sallocf(c, (size_t)M * N); /* (M, g, g) */
    const float *in = mask;
    int i;
    ptrdiff_t n;
    sam3_result rc;
    if (!a || !b || !x || !fp || !pm) return SAM3_ERR_OUT_OF_MEMORY;
    for (i = 1; i < v->ds_layers; i++) /* every later map is smaller: ch x stride^2, side / stride */
        if ((size_t)v->ds_ch[i + 1] * v->ds_side[i + 1] * v->ds_side[i + 1] > (size_t)v->ds_ch[1] * v->ds_side[1] * v->ds_side[1])
            return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "mask downsampler: layer %d is larger than the first", i);
    for (i = 0; i < v->ds_layers; i++) {
        float *o = (i % 2) ? b : a;
        const int S = v->ds_side[i + 1];
        if ((rc = sam3__conv2d(c, in, v->ds_ch[i], v->ds_side[i], v->ds_side[i], &w->ds_conv[i], v->ds_ch[i + 1], v->ds_kernel,
                               v->ds_stride, v->ds_pad, o, S, S)) != SAM3_OK)
            return rc;
        sam3__layernorm2d(c, o, v->ds_ch[i + 1], (size_t)S * S, &w->ds_ln[i], 1e-6f, 1);
        in = o;
    }
    sam3__conv1x1(c, in, 0, v->ds_ch[v->ds_layers], N, &w->ds_final, D, x);
    sam3__conv1x1(c, feat, 0, D, N, &w->feat_proj, D, fp);
    sam3__vadd(c, x, fp, (size_t)D * N);
    for (i = 0; i < v->fu_layers; i++)
        if ((rc = sam3__memory_fuser_block(c, &w->fu[i], x)) != SAM3_OK) return rc;
    sam3__conv1x1(c, x, 0, D, N, &w->proj, M, pm);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (n = 0; n < (ptrdiff_t)N; n++) {
        int ch;
        for (ch = 0; ch < M; ch++) {
            float val = pm[(size_t)ch * N + n];
            if (w->occl && !(score > 0)) val += w->occl[ch];
            mem[(size_t)n * M + ch] = sam3__to_bf16(val);
        }
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* get_1d_sine_pe: out (dim) = [sin(t / T_i) for i < dim/2, cos(t / T_i) for i < dim/2],
   T_i = 10000^(2 floor(i/2) / (dim/2)) (the object pointers' temporal position). */
static void sam3__sine_1d(float t, int dim, float *out) {
    const int h = dim / 2;
    int i;
    for (i = 0; i < h; i++) {
        const float dt = (float)pow(10000.0, (double)(2 * (i / 2)) / (double)h);
        const float a = t / dt;
        out[i] = sinf(a);
        out[h + i] = cosf(a);
    }
}

/* Bilinear resize without antialiasing (F.interpolate, align_corners=False) of a float map. */
static sam3_result sam3__bilinear_f32(sam3_ctx *c, const float *in, int ih, int iw, float *out, int oh, int ow) {
    sam3__mark mk = sam3__mark_get(c);
    sam3__lerp *ty = (sam3__lerp *)sam3__salloc(c, (size_t)oh * sizeof(sam3__lerp));
    sam3__lerp *tx = (sam3__lerp *)sam3__salloc(c, (size_t)ow * sizeof(sam3__lerp));
    ptrdiff_t y;
    if (!ty || !tx) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__lerp_table(ih, oh, ty);
    sam3__lerp_table(iw, ow, tx);
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (y = 0; y < (ptrdiff_t)oh; y++) {
        const float *a = in + (size_t)ty[y].i0 * iw, *b = in + (size_t)ty[y].i1 * iw;
        int x;
        for (x = 0; x < ow; x++)
            out[(size_t)y * ow + x] = ty[y].l0 * (tx[x].l0 * a[tx[x].i0] + tx[x].l1 * a[tx[x].i1]) +
                                      ty[y].l1 * (tx[x].l0 * b[tx[x].i0] + tx[x].l1 * b[tx[x].i1]);
    }
    sam3__release(c, mk);
    return SAM3_OK;
}

/* ==== sam3: public API ==== */
SAM3DEF sam3_ctx_options sam3_ctx_options_default(void) {
    sam3_ctx_options o;
    memset(&o, 0, sizeof(o));
    return o;
}

static void *sam3__ctx_persist(sam3_ctx *c, size_t n_floats, int *ok) {
    size_t b;
    void *p = NULL;
    if (*ok && sam3__mul(n_floats, sizeof(float), &b) && (p = sam3__aalloc(&c->a, b)) != NULL) c->persistent_bytes += b;
    else *ok = 0;
    return p;
}

SAM3DEF void sam3_ctx_free(sam3_ctx *c) {
    int j;
    if (!c) return;
    sam3__release_all(c);
    sam3__afree(&c->a, c->arena);
    sam3__afree(&c->a, c->vit_out);
    for (j = 0; j < SAM3__MAX_LEVELS; j++) sam3__afree(&c->a, c->fpn[j]);
    sam3__afree(&c->a, c->l2_tok);
    sam3__afree(&c->a, c->l2_pos);
    sam3__afree(&c->a, c->enc0);
    sam3__afree(&c->a, c->dec0);
    sam3__afree(&c->a, c->rope_win);
    sam3__afree(&c->a, c->rope_glb);
    sam3__afree(&c->a, c->trk_e);
    sam3__afree(&c->a, c->trk_s0);
    sam3__afree(&c->a, c->trk_s1);
    sam3__afree(&c->a, c->trk_pe);
    for (j = 0; j < SAM3__TEXT_CACHE; j++) {
        sam3__afree(&c->a, c->tcache[j].text);
        sam3__afree(&c->a, c->tcache[j].feat);
    }
    sam3__afree(&c->a, c->res_evr);
    sam3__afree(&c->a, c->res_mask);
    sam3__afree(&c->a, c->res_low);
    sam3__seg_slots(c, 0);
    sam3__afree(&c->a, c->segb);
    sam3__afree(&c->a, c);
}

/* ---- kernel path choice (sam3.h "kernel paths") ---- */
static const char *const sam3__isa_names[] = {"auto", "reference", "portable", "avx2", "avx512", "avx512bf16", "amx", "neon", "neonbf16"};
SAM3DEF const char *sam3_isa_name(int isa) { return isa >= 0 && isa <= SAM3_ISA_NEONBF16 ? sam3__isa_names[isa] : NULL; }

#if defined(SAM3__DISPATCH) && defined(__x86_64__)
/* 1: AVX2, FMA and F16C with the YMM state saved by the OS; 2: and AVX-512 F, DQ, BW and VL with
   the opmask and ZMM state; 0: neither */
static int sam3__cpu_x86(void) {
    unsigned a, b, c, d, xlo, xhi, avx;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    avx = (c >> 28 & 1u) && (c >> 12 & 1u) && (c >> 29 & 1u); /* AVX, FMA, F16C */
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    (void)xhi;
    if (!avx || (xlo & 6u) != 6u || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 5))) return 0; /* AVX2 */
    if ((xlo & 0xe6u) != 0xe6u || !(b >> 16 & 1u) || !(b >> 17 & 1u) || !(b >> 30 & 1u) || !(b >> 31 & 1u)) return 1;
    return 2;
}
#endif

/* The table of the pass that runs path isa. */
static const sam3__ktab *sam3__ktab_of(int isa) {
#if defined(SAM3__DISPATCH) && defined(__x86_64__)
    return isa == SAM3_ISA_AVX2 ? &sam3__kt__avx2 : isa >= SAM3_ISA_AVX512 ? &sam3__kt__avx512 : &sam3__kt__ref;
#elif defined(SAM3__DISPATCH)
    return isa == SAM3_ISA_NEON || isa == SAM3_ISA_NEONBF16 ? &sam3__kt__neon : &sam3__kt__ref;
#else
    (void)isa;
    return &sam3__kt__k;
#endif
}

SAM3DEF unsigned sam3_isa_mask(void) {
    unsigned m;
    int wide = 0; /* the AVX-512 pass runs here: its bf16 kernels are asked what the CPU has */
    int arm = 0;  /* the NEON pass runs here: its bf16 kernels likewise */
#if defined(SAM3__DISPATCH) && defined(__x86_64__)
    const int x = sam3__cpu_x86();
    m = 1u << SAM3_ISA_REFERENCE | 1u << SAM3_ISA_PORTABLE | (x >= 1 ? 1u << SAM3_ISA_AVX2 : 0);
    wide = x >= 2;
#elif defined(SAM3__DISPATCH)
    m = 1u << SAM3_ISA_REFERENCE | 1u << SAM3_ISA_PORTABLE | 1u << SAM3_ISA_NEON;
    arm = 1;
#elif defined(SAM3__KREF)
    m = 1u << SAM3_ISA_REFERENCE;
#elif defined(SAM3__KAVX512)
    m = 1u << SAM3_ISA_AVX512; /* the compiler's flags promise it */
    wide = 1;
#elif defined(SAM3__KAVX2)
    m = 1u << SAM3_ISA_AVX2;
#elif defined(SAM3__KNEON)
    m = 1u << SAM3_ISA_NEON;
    arm = 1;
#else
    m = 1u << SAM3_ISA_PORTABLE;
#endif
    if (wide) {
        const int bk = sam3__ktab_of(SAM3_ISA_AVX512)->bf16_detect();
        m |= 1u << SAM3_ISA_AVX512 | (bk >= SAM3__BK_AVX512 ? 1u << SAM3_ISA_AVX512BF16 : 0) | (bk >= SAM3__BK_AMX ? 1u << SAM3_ISA_AMX : 0);
    }
    if (arm && sam3__ktab_of(SAM3_ISA_NEON)->bf16_detect() >= SAM3__BK_NEON) m |= 1u << SAM3_ISA_NEONBF16;
    return m;
}

/* The best path of mask m. */
static int sam3__isa_best(unsigned m) {
    static const int order[] = {SAM3_ISA_AMX, SAM3_ISA_AVX512BF16, SAM3_ISA_AVX512, SAM3_ISA_AVX2, SAM3_ISA_NEONBF16, SAM3_ISA_NEON, SAM3_ISA_PORTABLE};
    int i;
    for (i = 0; i < (int)(sizeof(order) / sizeof(order[0])); i++)
        if (m >> order[i] & 1u) return order[i];
    return SAM3_ISA_REFERENCE;
}

SAM3DEF int sam3_isa_default(void) {
    const unsigned m = sam3_isa_mask();
    const char *e = getenv("SAM3_ISA");
    int i;
    if (!e || !*e || !strcmp(e, "auto")) return sam3__isa_best(m);
    for (i = SAM3_ISA_REFERENCE; i <= SAM3_ISA_NEONBF16; i++)
        if (!strcmp(e, sam3__isa_names[i])) return m >> i & 1u ? i : SAM3_ERR_UNSUPPORTED;
    return SAM3_ERR_INVALID_ARG;
}

SAM3DEF int sam3_ctx_isa(const sam3_ctx *c) { return c ? c->isa : 0; }

SAM3DEF sam3_result sam3_ctx_new(const sam3_model *m, const sam3_ctx_options *opt, sam3_ctx **out) {
    sam3_allocator a;
    sam3_ctx *c;
    int ok = 1, j;
    const sam3__vit_cfg *v;
    int isa;
    if (!out) return SAM3_ERR_INVALID_ARG;
    *out = NULL;
    if (!m || !sam3__allocator_resolve(opt ? &opt->allocator : NULL, &a)) return SAM3_ERR_INVALID_ARG;
    if (opt && (opt->n_threads < 0 || opt->blas_threads < 0)) return SAM3_ERR_INVALID_ARG;
    if (opt && opt->precision != SAM3_PRECISION_F32 && opt->precision != SAM3_PRECISION_BF16) return SAM3_ERR_INVALID_ARG;
    if (opt && (opt->isa < SAM3_ISA_AUTO || opt->isa > SAM3_ISA_NEONBF16)) return SAM3_ERR_INVALID_ARG;
    isa = opt && opt->isa ? (sam3_isa_mask() >> opt->isa & 1u ? opt->isa : SAM3_ERR_UNSUPPORTED) : sam3_isa_default();
    if (isa < 0) return (sam3_result)isa;
    c = (sam3_ctx *)sam3__acalloc(&a, 1, sizeof(sam3_ctx));
    if (!c) return SAM3_ERR_OUT_OF_MEMORY;
    c->m = m;
    c->a = a;
    if (opt) c->opt = *opt;
#ifdef _OPENMP
    c->nt = c->opt.n_threads > 0 ? c->opt.n_threads : omp_get_max_threads();
#else
    c->nt = 1;
#endif
    if (c->opt.blas_threads > 0) {
#if defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM) && !defined(SAM3_NO_BLAS)
        openblas_set_num_threads(c->opt.blas_threads);
#endif
    }
#if defined(SAM3_NO_BLAS)
    c->split = 1;
#elif defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM)
    /* OpenBLAS's OpenMP build runs single-threaded inside our parallel regions; its pthread build
       does when limited to one thread */
    c->split = openblas_get_parallel() == 2 || openblas_get_num_threads() == 1;
    c->omp_blas = openblas_get_parallel() == 2;
#else
    c->split = c->opt.blas_threads == 1;
#endif
    c->bf16 = c->opt.precision == SAM3_PRECISION_BF16;
    c->isa = isa;
    c->k = sam3__ktab_of(isa);
    /* bf16 products on bf16 hardware only where the path names it */
    c->bk = isa == SAM3_ISA_AMX ? SAM3__MIN(c->k->bf16_detect(), SAM3_BF16_KERNEL)
            : isa == SAM3_ISA_AVX512BF16 || isa == SAM3_ISA_NEONBF16 ? SAM3__MIN(SAM3__MIN(c->k->bf16_detect(), SAM3__BK_AVX512), SAM3_BF16_KERNEL)
                                                                      : SAM3__BK_REF;
    c->bka = SAM3_BF16_ATTENTION_KERNEL;
    c->bkc = SAM3_BF16_CONV_KERNEL;
    c->att_min = SAM3__ATT_BF16_MIN;
    c->wino_tiles = SAM3__WINO_TILES;
    v = &m->vit;
    if (m->arch == SAM3__ARCH_SAM1) {
        const size_t gg = (size_t)m->trk.grid * m->trk.grid, D = (size_t)m->trk.D;
        c->trk_e = (float *)sam3__ctx_persist(c, D * gg, &ok);
        c->trk_pe = (float *)sam3__ctx_persist(c, D * gg, &ok);
        if (!ok) {
            sam3_ctx_free(c);
            return SAM3_ERR_OUT_OF_MEMORY;
        }
        *out = c;
        return SAM3_OK;
    }
    c->vit_out = (float *)sam3__ctx_persist(c, (size_t)v->grid * v->grid * v->hidden, &ok);
    for (j = 0; j < m->neck.n_kept; j++)
        c->fpn[j] = (float *)sam3__ctx_persist(c, (size_t)m->neck.fpn * m->neck.side[j] * m->neck.side[j], &ok);
    {
        int side = m->neck.side[m->neck.n_kept - 1];
        c->l2_tok = (float *)sam3__ctx_persist(c, (size_t)side * side * m->neck.fpn, &ok);
        c->l2_pos = (float *)sam3__ctx_persist(c, (size_t)side * side * m->neck.fpn, &ok);
        c->enc0 = (float *)sam3__ctx_persist(c, (size_t)side * side * m->neck.fpn, &ok);
        c->dec0 = (float *)sam3__ctx_persist(c, (size_t)(m->dec.queries + 1) * 2 * (m->neck.fpn + (size_t)m->dec.heads * side), &ok);
        if (ok) sam3__sine_pos2d(side, side, m->neck.fpn, c->l2_pos);
    }
    if (m->trk.present) {
        const size_t gg = (size_t)v->grid * v->grid, D = (size_t)m->trk.D;
        c->trk_e = (float *)sam3__ctx_persist(c, D * gg, &ok);
        c->trk_s0 = (float *)sam3__ctx_persist(c, D / 8 * 16 * gg, &ok);
        c->trk_s1 = (float *)sam3__ctx_persist(c, D / 4 * 4 * gg, &ok);
        c->trk_pe = (float *)sam3__ctx_persist(c, D * gg, &ok);
    }
    c->rope_win = (float *)sam3__ctx_persist(c, (size_t)v->window * v->window * v->head_dim, &ok);
    c->rope_glb = (float *)sam3__ctx_persist(c, (size_t)v->grid * v->grid * v->head_dim, &ok);
    if (!ok) {
        sam3_ctx_free(c);
        return SAM3_ERR_OUT_OF_MEMORY;
    }
    /* Windowed blocks rotate by position inside the window (scale window/window = 1); global
       blocks by grid position scaled by window/grid, so both span the same range. */
    sam3__rope_table(v, v->window, 1.0f, c->rope_win);
    sam3__rope_table(v, v->grid, (float)((double)v->window / (double)v->grid), c->rope_glb);
    *out = c;
    return SAM3_OK;
}

SAM3DEF const char *sam3_ctx_last_error(const sam3_ctx *c) { return c ? c->err : "ctx is NULL"; }
SAM3DEF sam3_timings sam3_ctx_timings(const sam3_ctx *c) {
    sam3_timings t;
    if (c) return c->t;
    memset(&t, 0, sizeof(t));
    return t;
}
/* Everything the context owns: itself, the image state, the scratch arena (or its high-water mark,
   which the next call grows it to), the result buffers and the text-feature cache. */
SAM3DEF size_t sam3_ctx_memory_used(const sam3_ctx *c) {
    size_t n;
    int j;
    if (!c) return 0;
    n = sizeof(*c) + c->persistent_bytes + SAM3__MAX(c->arena_cap, c->high);
    n += c->res_evr_cap + c->res_mask_cap + c->res_low_cap + (size_t)c->segb_cap * sizeof(sam3__seg_bufs);
    for (j = 0; j < c->segb_cap; j++) {
        const sam3__seg_bufs *b = &c->segb[j];
        n += b->inst_cap + b->mask_cap + b->sem_mask_cap + b->low_cap + b->sem_cap;
    }
    for (j = 0; j < SAM3__TEXT_CACHE; j++) {
        if (c->tcache[j].text) n += strlen(c->tcache[j].text) + 1;
        if (c->tcache[j].feat) n += (size_t)SAM3__MIN(c->m->tok.max_length, c->m->text.max_pos) * c->m->neck.fpn * sizeof(float);
    }
    return n;
}

/* ==== sam3: benchmark support ==== */
SAM3DEF int sam3_ctx_n_threads(const sam3_ctx *c) { return c ? c->nt : 0; }
SAM3DEF int sam3_ctx_splits_products(const sam3_ctx *c) { return c ? c->split : 0; }
SAM3DEF double sam3_time_ms(void) { return sam3__now_ms(); }
SAM3DEF sam3_timings sam3_ctx_flops(const sam3_ctx *c) {
    sam3_timings f;
    memset(&f, 0, sizeof(f));
    if (!c) return f;
    f.preprocess = c->flops[SAM3__ST_PRE], f.vision_trunk = c->flops[SAM3__ST_TRUNK], f.vision_neck = c->flops[SAM3__ST_NECK];
    f.text = c->flops[SAM3__ST_TEXT], f.geometry = c->flops[SAM3__ST_GEOMETRY], f.detr_encoder = c->flops[SAM3__ST_DETR_ENC];
    f.detr_decoder = c->flops[SAM3__ST_DETR_DEC], f.mask_decoder = c->flops[SAM3__ST_MASK], f.postprocess = c->flops[SAM3__ST_POST];
    f.interactive_neck = c->flops[SAM3__ST_INECK], f.points = c->flops[SAM3__ST_POINTS], f.tracking = c->flops[SAM3__ST_TRACKING];
    f.everything = c->flops[SAM3__ST_EVERYTHING];
    return f;
}

SAM3DEF sam3_result sam3_bench_gemm(sam3_ctx *c, sam3_gemm_path path, int m, int n, int k, int reps, double *ms) {
    double t[100], t0;
    size_t na, nb, nc, bytes, i;
    float *a, *b, *cc;
    int r, j;
    if (!c) return SAM3_ERR_INVALID_ARG;
    c->err[0] = 0;
    if (!ms) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_bench_gemm: ms is NULL");
    *ms = 0;
    if (m < 1 || n < 1 || k < 1 || reps < 1 || reps > 100)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_bench_gemm: m %d, n %d, k %d must be >= 1 and reps %d 1..100", m, n, k, reps);
    if (!sam3__mul((size_t)m, (size_t)k, &na) || !sam3__mul((size_t)n, (size_t)k, &nb) || !sam3__mul((size_t)m, (size_t)n, &nc) ||
        !sam3__add(na, nb, &bytes) || !sam3__add(bytes, nc, &bytes) || !sam3__mul(bytes, sizeof(float), &bytes))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_bench_gemm: %d x %d x %d is too large", m, n, k);
    if (path != SAM3_GEMM_CTX && path != SAM3_GEMM_BLAS_THREADS && path != SAM3_GEMM_CTX_BF16)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_bench_gemm: unknown path %d", (int)path);
#if defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM) && !defined(SAM3_NO_BLAS)
    if (path == SAM3_GEMM_BLAS_THREADS && (!c->split || c->nt <= 1))
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "sam3_bench_gemm: OpenBLAS's threads already run this context's products");
#else
    if (path == SAM3_GEMM_BLAS_THREADS)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "sam3_bench_gemm: this build does not call OpenBLAS");
#endif
    if (!(a = (float *)sam3__aalloc(&c->a, bytes))) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_bench_gemm: %.0f bytes", (double)bytes);
    b = a + na;
    cc = b + nb;
    for (i = 0; i < na; i++) a[i] = (float)(i % 17) * 0.01f;
    for (i = 0; i < nb; i++) b[i] = (float)(i % 17) * 0.01f;
    if (path == SAM3_GEMM_CTX_BF16) /* B in bf16, over its f32 copy's first half */
        for (i = 0; i < nb; i++) ((uint16_t *)(void *)b)[i] = sam3__f32_bf16(b[i]);
    for (r = 0; r < reps; r++) {
        t0 = sam3__now_ms();
#if defined(OPENBLAS_VERSION) && !defined(SAM3_SGEMM) && !defined(SAM3_NO_BLAS)
        if (path == SAM3_GEMM_BLAS_THREADS) {
            const int prev = openblas_get_num_threads();
            openblas_set_num_threads(c->nt);
            t0 = sam3__now_ms();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, cc, n);
            t[r] = sam3__now_ms() - t0;
            openblas_set_num_threads(c->opt.blas_threads > 0 ? c->opt.blas_threads : prev);
            continue;
        }
#endif
        if (path == SAM3_GEMM_CTX_BF16) sam3__gemm_mixed(c, 0, 1, m, n, k, a, NULL, k, NULL, (const uint16_t *)(void *)b, k, 0.0f, cc, n);
        else sam3__gemm(c, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, cc, n);
        t[r] = sam3__now_ms() - t0;
    }
    sam3__afree(&c->a, a);
    for (r = 1; r < reps; r++) /* insertion sort: reps is small */
        for (j = r; j > 0 && t[j - 1] > t[j]; j--) t0 = t[j], t[j] = t[j - 1], t[j - 1] = t0;
    *ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    return SAM3_OK;
}

SAM3DEF sam3_result sam3_bench_sgemm(sam3_gemm_path path, int threads, int m, int n, int k, int reps, double *ms) {
    double t[100], t0;
    size_t na, nb, nc, bytes, i;
    float *a, *b, *cc;
    sam3__gemm_args g;
    int r, j;
    if (!ms || threads < 1 || m < 1 || n < 1 || k < 1 || reps < 1 || reps > 100 || (path != SAM3_GEMM_BLAS && path != SAM3_GEMM_BUILTIN))
        return SAM3_ERR_INVALID_ARG;
    *ms = 0;
#if defined(SAM3_NO_BLAS)
    if (path == SAM3_GEMM_BLAS) return SAM3_ERR_UNSUPPORTED;
#endif
    if (!sam3__mul((size_t)m, (size_t)k, &na) || !sam3__mul((size_t)n, (size_t)k, &nb) || !sam3__mul((size_t)m, (size_t)n, &nc) ||
        !sam3__add(na, nb, &bytes) || !sam3__add(bytes, nc, &bytes) || !sam3__mul(bytes, sizeof(float), &bytes))
        return SAM3_ERR_INVALID_ARG;
    if (!(a = (float *)sam3__default_alloc(bytes, SAM3__ALIGN, NULL))) return SAM3_ERR_OUT_OF_MEMORY;
    b = a + na;
    cc = b + nb;
    for (i = 0; i < na; i++) a[i] = (float)(i % 17) * 0.01f;
    for (i = 0; i < nb; i++) b[i] = (float)(i % 13) * 0.01f;
    memset(&g, 0, sizeof(g)); /* the built-in path's product: cc (m, n) = a (m, k) b^T */
    g.tb = 1, g.m = m, g.n = n, g.k = k, g.alpha = 1.0f, g.a = a, g.lda = k, g.b = b, g.ldb = k, g.c = cc, g.ldc = n;
    for (r = -1; r < reps; r++) { /* the first run warms caches and thread pools */
        t0 = sam3__now_ms();
        if (path == SAM3_GEMM_BUILTIN) {
            sam3__ktab_of(sam3__isa_best(sam3_isa_mask()))->sgemm_builtin(NULL, threads, &g);
        } else {
#if defined(SAM3_SGEMM)
            SAM3_SGEMM(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, cc, n);
#elif defined(OPENBLAS_VERSION) && !defined(SAM3_NO_BLAS)
            const int prev = openblas_get_num_threads();
            openblas_set_num_threads(threads);
            t0 = sam3__now_ms();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, cc, n);
            if (r >= 0) t[r] = sam3__now_ms() - t0;
            openblas_set_num_threads(prev);
            continue;
#elif !defined(SAM3_NO_BLAS)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, cc, n);
#endif
        }
        if (r >= 0) t[r] = sam3__now_ms() - t0;
    }
    sam3__default_free(a, NULL);
    for (r = 1; r < reps; r++)
        for (j = r; j > 0 && t[j - 1] > t[j]; j--) t0 = t[j], t[j] = t[j - 1], t[j - 1] = t0;
    *ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    return SAM3_OK;
}

/* ==== sam3: concepts (sam3_concept: a prompt's tokens, saved and reused) ==== */
/* A concept is the prompt token sequence sam3_segment builds (text features, then the geometry
   encoder's tokens of the boxes on their own image), kept with the fingerprint of the model that
   made it. The file (sam3_concept_save), little-endian:
     0  "SAM3CPT\0"   8  u32 version (1)   12 u32 D   16 u64 model fingerprint
     24 u32 n_tok     28 u32 n_text        32 u32 flags (bit 0: the text was truncated)   36 u32 0
     40 f32 tokens (n_tok, D)              then u64 FNV-1a 64 of every byte before it */
#define SAM3__CPT_MAGIC "SAM3CPT"
#define SAM3__CPT_VERSION 1u
#define SAM3__CPT_HEADER 40u
#define SAM3__CPT_MAX_TOKENS 8192 /* a text's context plus SAM3_MAX_BOXES + 1 tokens, many times over */
#define SAM3__CPT_MAX_D 65536

struct sam3_concept {
    sam3_allocator a; /* the one it was allocated with (the context's or the model's) */
    uint64_t fp;      /* sam3__cpt_fingerprint of the model that made it */
    int D, n_tok, n_text, truncated;
    float *tok; /* (n_tok, D) prompt tokens */
};

static uint64_t sam3__fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = (const uint8_t *)p;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
/* A failure of a call without a context: the message into err (cap bytes; NULL or 0: none), rc back. */
static sam3_result sam3__efail(char *err, size_t cap, sam3_result rc, const char *fmt, ...) {
    va_list ap;
    if (!err || !cap) return rc;
    va_start(ap, fmt);
    sam3__vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return rc;
}
static void sam3__wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static void sam3__wr64(uint8_t *p, uint64_t v) {
    sam3__wr32(p, (uint32_t)v);
    sam3__wr32(p + 4, (uint32_t)(v >> 32));
}

/* The model's fingerprint: FNV-1a 64 over its config entries (key, type, values) and every tensor's
   name, dtype, shape and 3 x 32 sampled bytes (start, middle, end). Cheap (no pass over the
   weights) yet two random-weight models of one config differ in every sample. */
static uint64_t sam3__cpt_fingerprint(const sam3_model *m) {
    const sam3__file *f = &m->file;
    uint64_t h = 14695981039346656037ull;
    uint32_t i;
    h = sam3__fnv(h, &m->arch, sizeof(m->arch));
    for (i = 0; i < f->n_cfg; i++) {
        const sam3__cfg *c = &f->cfg[i];
        h = sam3__fnv(h, c->key, strlen(c->key));
        h = sam3__fnv(h, &c->type, sizeof(c->type));
        h = sam3__fnv(h, &c->i, sizeof(c->i));
        h = sam3__fnv(h, &c->f, sizeof(c->f));
    }
    for (i = 0; i < f->n_tensors; i++) {
        const sam3__tensor *t = &f->tensors[i];
        const uint8_t *d = (const uint8_t *)t->data;
        const size_t n = (size_t)t->nbytes, s = SAM3__MIN(n, (size_t)32);
        h = sam3__fnv(h, t->name, t->name_len);
        h = sam3__fnv(h, &t->dtype, sizeof(t->dtype));
        h = sam3__fnv(h, t->shape, sizeof(t->shape));
        h = sam3__fnv(h, d, s);
        h = sam3__fnv(h, d + (n - s) / 2, s);
        h = sam3__fnv(h, d + (n - s), s);
    }
    return h;
}

/* A concept of n_tok tokens of width D, from allocator a (tokens uninitialised); NULL out of memory. */
static sam3_concept *sam3__cpt_alloc(const sam3_allocator *a, int D, int n_tok) {
    sam3_concept *k = (sam3_concept *)sam3__acalloc(a, 1, sizeof(*k));
    if (!k) return NULL;
    k->a = *a;
    k->D = D;
    k->n_tok = n_tok;
    if (!(k->tok = (float *)sam3__acalloc(a, (size_t)n_tok * D, sizeof(float)))) {
        sam3__afree(a, k);
        return NULL;
    }
    return k;
}

/* Concept i of a sam3_segment prompt (fn names the entry point): given, and made by this model. */
static sam3_result sam3__cpt_check(sam3_ctx *c, const char *fn, int i, const sam3_concept *k, uint64_t fp) {
    if (!k) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: concept %d is NULL", fn, i);
    if (k->fp != fp || k->D != c->m->neck.fpn)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: concept %d was made with another model (fingerprint %016llx, this model's %016llx)", fn, i,
                          (unsigned long long)k->fp, (unsigned long long)fp);
    return SAM3_OK;
}

/* A prompt's concepts (fn names the entry point): 0..SAM3_MAX_CONCEPTS, each given and made by
   c's model. */
static sam3_result sam3__cpt_check_all(sam3_ctx *c, const char *fn, const sam3_segment_prompt *pr) {
    uint64_t fp;
    int i;
    sam3_result rc;
    if (pr->n_concepts < 0 || pr->n_concepts > SAM3_MAX_CONCEPTS)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %d concepts, expected 0..%d (SAM3_MAX_CONCEPTS)", fn, pr->n_concepts, SAM3_MAX_CONCEPTS);
    if (!pr->n_concepts) return SAM3_OK;
    if (!pr->concepts) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: n_concepts = %d but concepts is NULL", fn, pr->n_concepts);
    fp = sam3__cpt_fingerprint(c->m);
    for (i = 0; i < pr->n_concepts; i++)
        if ((rc = sam3__cpt_check(c, fn, i, pr->concepts[i], fp)) != SAM3_OK) return rc;
    return SAM3_OK;
}

/* A prompt's concepts joined into one the caller owns (from c's allocator; tokens in order), for
   the concept tracker, which keeps its prompts; *out NULL when the prompt has none. */
static sam3_result sam3__cpt_join(sam3_ctx *c, const char *fn, const sam3_segment_prompt *pr, sam3_concept **out) {
    sam3_concept *k;
    sam3_result rc;
    int i, n = 0, at = 0;
    *out = NULL;
    if ((rc = sam3__cpt_check_all(c, fn, pr)) != SAM3_OK || !pr->n_concepts) return rc;
    for (i = 0; i < pr->n_concepts; i++) n += pr->concepts[i]->n_tok; /* each <= SAM3__CPT_MAX_TOKENS, at most 64 */
    if (n > SAM3__CPT_MAX_TOKENS) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %d concept tokens, at most %d", fn, n, SAM3__CPT_MAX_TOKENS);
    if (!(k = sam3__cpt_alloc(&c->a, c->m->neck.fpn, n))) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    k->fp = pr->concepts[0]->fp;
    for (i = 0; i < pr->n_concepts; i++) {
        const sam3_concept *q = pr->concepts[i];
        memcpy(k->tok + (size_t)at * k->D, q->tok, (size_t)q->n_tok * q->D * sizeof(float));
        at += q->n_tok;
        k->n_text += q->n_text;
        k->truncated |= q->truncated;
    }
    *out = k;
    return SAM3_OK;
}

SAM3DEF int sam3_concept_n_tokens(const sam3_concept *k, int *n_text) {
    if (n_text) *n_text = k ? k->n_text : 0;
    return k ? k->n_tok : 0;
}

SAM3DEF void sam3_concept_free(sam3_concept *k) {
    sam3_allocator a;
    if (!k) return;
    a = k->a;
    sam3__afree(&a, k->tok);
    sam3__afree(&a, k);
}

SAM3DEF sam3_result sam3_concept_save(const sam3_concept *k, void *buf, size_t cap, size_t *size) {
    uint8_t *p = (uint8_t *)buf;
    size_t i, data, need;
    if (!k || !size) return SAM3_ERR_INVALID_ARG;
    data = (size_t)k->n_tok * (size_t)k->D * 4; /* both bounded at creation: no overflow */
    need = SAM3__CPT_HEADER + data + 8;
    *size = need;
    if (!buf) return SAM3_OK;
    if (cap < need) return SAM3_ERR_INVALID_ARG;
    memset(p, 0, SAM3__CPT_HEADER);
    memcpy(p, SAM3__CPT_MAGIC, 8);
    sam3__wr32(p + 8, SAM3__CPT_VERSION);
    sam3__wr32(p + 12, (uint32_t)k->D);
    sam3__wr64(p + 16, k->fp);
    sam3__wr32(p + 24, (uint32_t)k->n_tok);
    sam3__wr32(p + 28, (uint32_t)k->n_text);
    sam3__wr32(p + 32, k->truncated ? 1u : 0u);
    for (i = 0; i < data / 4; i++) {
        uint32_t u;
        memcpy(&u, &k->tok[i], 4);
        sam3__wr32(p + SAM3__CPT_HEADER + 4 * i, u);
    }
    sam3__wr64(p + SAM3__CPT_HEADER + data, sam3__fnv(14695981039346656037ull, p, SAM3__CPT_HEADER + data));
    return SAM3_OK;
}

/* sam3_concept_load's checks of the bytes, in an order that names the first thing wrong: size,
   magic, version, the sizes in the header, the exact length, the checksum, the model. */
static sam3_result sam3__cpt_parse(const sam3_model *m, const uint8_t *p, size_t size, char *err, size_t cap, int *n_tok, int *n_text) {
    uint32_t D, nt, nx, flags;
    size_t need;
    uint64_t fp;
    if (size < SAM3__CPT_HEADER + 8 || !p)
        return sam3__efail(err, cap, SAM3_ERR_CORRUPT_FILE, "concept: %lu bytes, truncated (a concept has at least %u)", (unsigned long)size,
                           SAM3__CPT_HEADER + 8);
    if (memcmp(p, SAM3__CPT_MAGIC, 8) != 0) return sam3__efail(err, cap, SAM3_ERR_BAD_MAGIC, "concept: not a sam3 concept (bad magic)");
    if (sam3__rd32(p + 8) != SAM3__CPT_VERSION)
        return sam3__efail(err, cap, SAM3_ERR_BAD_VERSION, "concept: format version %u, this build reads %u", sam3__rd32(p + 8), SAM3__CPT_VERSION);
    D = sam3__rd32(p + 12);
    nt = sam3__rd32(p + 24);
    nx = sam3__rd32(p + 28);
    flags = sam3__rd32(p + 32);
    if (D < 1 || D > SAM3__CPT_MAX_D || nt < 1 || nt > SAM3__CPT_MAX_TOKENS || nx > nt || flags > 1 || sam3__rd32(p + 36))
        return sam3__efail(err, cap, SAM3_ERR_CORRUPT_FILE, "concept: damaged header (width %u, %u tokens, %u text tokens, flags %u)", D, nt, nx,
                           flags);
    need = SAM3__CPT_HEADER + (size_t)nt * D * 4 + 8; /* <= 40 + 2^13 * 2^16 * 4 + 8: no overflow */
    if (size != need)
        return sam3__efail(err, cap, SAM3_ERR_CORRUPT_FILE, "concept: %lu bytes where its header says %lu (%s)", (unsigned long)size,
                           (unsigned long)need, size < need ? "truncated" : "trailing bytes");
    if (sam3__rd64(p + need - 8) != sam3__fnv(14695981039346656037ull, p, need - 8))
        return sam3__efail(err, cap, SAM3_ERR_CORRUPT_FILE, "concept: checksum mismatch (the file is damaged)");
    fp = sam3__cpt_fingerprint(m);
    if (sam3__rd64(p + 16) != fp || (int)D != m->neck.fpn)
        return sam3__efail(err, cap, SAM3_ERR_INVALID_ARG, "concept: made with another model (fingerprint %016llx, this model's %016llx)",
                           (unsigned long long)sam3__rd64(p + 16), (unsigned long long)fp);
    *n_tok = (int)nt;
    *n_text = (int)nx;
    return SAM3_OK;
}

SAM3DEF sam3_result sam3_concept_load(const sam3_model *m, const void *data, size_t size, sam3_concept **out, char *err, size_t cap) {
    const uint8_t *p = (const uint8_t *)data;
    sam3_concept *k;
    sam3_result rc;
    int nt = 0, nx = 0;
    size_t i, n;
    if (err && cap) err[0] = 0;
    if (!out) return sam3__efail(err, cap, SAM3_ERR_INVALID_ARG, "sam3_concept_load: out is NULL");
    *out = NULL;
    if (!m) return sam3__efail(err, cap, SAM3_ERR_INVALID_ARG, "sam3_concept_load: model is NULL");
    if (m->arch != SAM3__ARCH_SAM3) return sam3__efail(err, cap, SAM3_ERR_UNSUPPORTED, "sam3_concept_load: concepts need a SAM 3 model");
    if ((rc = sam3__cpt_parse(m, p, size, err, cap, &nt, &nx)) != SAM3_OK) return rc;
    if (!(k = sam3__cpt_alloc(&m->a, m->neck.fpn, nt))) return sam3__efail(err, cap, SAM3_ERR_OUT_OF_MEMORY, "sam3_concept_load: out of memory");
    n = (size_t)nt * k->D;
    for (i = 0; i < n; i++) {
        uint32_t u = sam3__rd32(p + SAM3__CPT_HEADER + 4 * i);
        memcpy(&k->tok[i], &u, 4);
        if ((u & 0x7f800000u) == 0x7f800000u) { /* NaN or infinity */
            sam3_concept_free(k);
            return sam3__efail(err, cap, SAM3_ERR_CORRUPT_FILE, "concept: token value %lu is NaN or infinite", (unsigned long)i);
        }
    }
    k->fp = sam3__rd64(p + 16);
    k->n_text = nx;
    k->truncated = (int)(sam3__rd32(p + 32) & 1u);
    *out = k;
    return SAM3_OK;
}

/* ==== sam3: images (sam3_set_image, sam3_segment, sam3_segment_points) ==== */
/* Entry-point prologue: clear the error, settle the arena. */
static sam3_result sam3__begin(sam3_ctx *c) {
    c->err[0] = 0;
    c->stage = SAM3__ST_NONE; /* a stage that failed ended there */
    return sam3__arena_settle(c);
}
static sam3_result sam3__end(sam3_ctx *c, sam3_result rc) {
    c->stage = SAM3__ST_NONE;
    sam3__release_all(c);
    if (rc < 0 && !c->err[0]) sam3__fail(c, rc, "%s", sam3_result_string(rc));
    return rc;
}

/* SAM 1's image encoder on the planar image (3, h, w), pix (3, S, S) scratch: its preprocessing,
   the ViT with its neck, the dense positional encoding; the context then holds the image for
   sam3_segment_points. t0: when the call's preprocessing began. */
static sam3_result sam3__sam1_image_encode(sam3_ctx *c, const unsigned char *rgb, int w, int h, float *pix, double t0) {
    const sam3_model *m = c->m;
    int h1, w1;
    sam3_result rc;
    if ((rc = sam3__sam1_preprocess(c, rgb, w, h, pix, &w1, &h1)) != SAM3_OK) return rc;
    sam3__tap(c, "pre.pixel_values", pix, 3, 3, m->proc.image, m->proc.image);
    c->t.preprocess = sam3__stage_end(c, t0);
    t0 = sam3__stage_begin(c, SAM3__ST_TRUNK);
    if ((rc = sam3__sam1_vision(c, pix, c->trk_e)) != SAM3_OK) return rc;
    sam3__grid_pe(c);
    if (c->opt.tap) {
        const int g = m->trk.grid, D = m->trk.D;
        float *cm = sam3__sallocf(c, (size_t)D * g * g); /* (D, g, g) for the tap */
        int i2, j2;
        if (!cm) return SAM3_ERR_OUT_OF_MEMORY;
        for (i2 = 0; i2 < g * g; i2++)
            for (j2 = 0; j2 < D; j2++) cm[(size_t)j2 * g * g + i2] = c->trk_pe[(size_t)i2 * D + j2];
        sam3__tap(c, "sam1.image_pe", cm, 3, D, g, g);
    }
    c->t.vision_trunk = sam3__stage_end(c, t0);
    c->t.vision_neck = 0;
    c->s1_h1 = h1;
    c->s1_w1 = w1;
    c->img_w = w;
    c->img_h = h;
    c->trk_ready = 1;
    c->has_image = 1;
    return SAM3_OK;
}

/* The image encoder on the caller's pixels: preprocessing and the ViT, then the detector's neck
   when `neck` (sam3_set_image; the video tracker reads only the trunk, through its own neck, so it
   skips the detector's and leaves the context without an image for sam3_segment). fn names the
   public entry in messages. */
static sam3_result sam3__image_encode(sam3_ctx *c, const char *fn, const uint8_t *pixels, int w, int h, int stride, sam3_pixel_format format,
                                      int neck) {
    const sam3_model *m;
    int bpp;
    unsigned char *rgb;
    float *pix;
    double t0;
    sam3_result rc;
    m = c->m;
    c->has_image = 0;
    c->vit_ready = 0;
    c->trk_ready = 0;
    c->enc0_ready = 0;
    c->t.preprocess = c->t.vision_trunk = c->t.vision_neck = 0;
    c->flops[SAM3__ST_PRE] = c->flops[SAM3__ST_TRUNK] = c->flops[SAM3__ST_NECK] = 0;
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    bpp = format == SAM3_RGB8 ? 3 : format == SAM3_RGBA8 ? 4 : format == SAM3_GRAY8 ? 1 : 0;
    if (!pixels) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: pixels is NULL", fn);
    if (!bpp) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: unknown pixel format %d", fn, (int)format);
    if (w < 1 || h < 1 || w > SAM3_MAX_IMAGE_DIM || h > SAM3_MAX_IMAGE_DIM)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: image %dx%d outside 1x1..%dx%d", fn, w, h, SAM3_MAX_IMAGE_DIM,
                          SAM3_MAX_IMAGE_DIM);
    if (stride < w * bpp)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: stride %d is smaller than a row (%d pixels x %d bytes)", fn, stride, w, bpp);
    t0 = sam3__stage_begin(c, SAM3__ST_PRE);
    rgb = (unsigned char *)sam3__salloc(c, (size_t)3 * w * h); /* (3, h, w) planar */
    pix = sam3__sallocf(c, (size_t)3 * m->proc.image * m->proc.image); /* (3, S, S) */
    if (!rgb || !pix) return sam3__end(c, SAM3_ERR_OUT_OF_MEMORY);
    sam3__to_planar_rgb(c, pixels, w, h, stride, bpp, rgb);
    if (m->arch == SAM3__ARCH_SAM1) return sam3__end(c, sam3__sam1_image_encode(c, rgb, w, h, pix, t0));
    if ((rc = sam3__preprocess(c, rgb, w, h, pix, NULL)) != SAM3_OK) return sam3__end(c, rc);
    sam3__tap(c, "pre.pixel_values", pix, 3, 3, m->proc.image, m->proc.image);
    c->t.preprocess = sam3__stage_end(c, t0);
    t0 = sam3__stage_begin(c, SAM3__ST_TRUNK);
    if ((rc = sam3__vit_model(c, pix, c->vit_out)) != SAM3_OK) return sam3__end(c, rc);
    c->t.vision_trunk = sam3__stage_end(c, t0);
    if (neck) {
        t0 = sam3__stage_begin(c, SAM3__ST_NECK);
        if ((rc = sam3__vision_neck(c)) != SAM3_OK) return sam3__end(c, rc);
        c->t.vision_neck = sam3__stage_end(c, t0);
    }
    c->img_w = w;
    c->img_h = h;
    c->has_image = neck;
    c->vit_ready = 1;
    return sam3__end(c, SAM3_OK);
}

/* The public calls that use a context: each holds the context's in-use flag for its duration, so
   a second call from another thread gets SAM3_ERR_BUSY (touching nothing in the context) instead
   of corrupting the first one's state. */
static sam3_result sam3__segment_run(sam3_ctx *c, const sam3_segment_prompt *pr, const sam3_segment_options *opt, sam3_segment_result *out);
static sam3_result sam3__segment_many_run(sam3_ctx *c, const sam3_segment_prompt *prs, int n, const sam3_segment_options *opt,
                                          sam3_segment_result *out);
static sam3_result sam3__segment_points_run(sam3_ctx *c, const sam3_points_prompt *pp, const sam3_points_options *opt,
                                            sam3_points_result *out);
static sam3_result sam3__segment_everything_run(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_result *out);
/* A public call's hold on its context's in-use flag: sam3__hold takes it (0), or says the context
   is busy (1, with the caller's result struct out, of size bytes, zeroed where given); sam3__let
   drops it and passes the call's result through. */
static int sam3__hold(sam3_ctx *c, void *out, size_t size) {
    if (sam3__flag_take(&c->busy)) return 0;
    if (out) memset(out, 0, size);
    return 1;
}
static sam3_result sam3__let(sam3_ctx *c, sam3_result rc) {
    sam3__flag_drop(&c->busy);
    return rc;
}
SAM3DEF sam3_result sam3_set_image(sam3_ctx *c, const uint8_t *pixels, int w, int h, int stride, sam3_pixel_format format) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(c, NULL, 0)) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__image_encode(c, "sam3_set_image", pixels, w, h, stride, format, 1));
}
SAM3DEF sam3_result sam3_segment(sam3_ctx *c, const sam3_segment_prompt *pr, const sam3_segment_options *opt, sam3_segment_result *out) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__segment_run(c, pr, opt, out));
}
SAM3DEF sam3_result sam3_segment_many(sam3_ctx *c, const sam3_segment_prompt *prs, int n, const sam3_segment_options *opt,
                                      sam3_segment_result *out) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(c, out, out && n > 0 && n <= SAM3_MAX_SEGMENT_PROMPTS ? (size_t)n * sizeof(*out) : 0)) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__segment_many_run(c, prs, n, opt, out));
}
SAM3DEF sam3_result sam3_segment_points(sam3_ctx *c, const sam3_points_prompt *pp, const sam3_points_options *opt, sam3_points_result *out) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__segment_points_run(c, pp, opt, out));
}
SAM3DEF sam3_result sam3_segment_everything(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_result *out) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__segment_everything_run(c, opt, out));
}

SAM3DEF sam3_segment_options sam3_segment_options_default(void) {
    sam3_segment_options o;
    memset(&o, 0, sizeof(o));
    o.score_threshold = 0.5f;
    o.mask_threshold = 0.5f;
    return o;
}

/* Projected text features of `text` (n, D), from the cache or computed and cached. */
static sam3_result sam3__text_features(sam3_ctx *c, const char *text, const float **feat, int *n, int *truncated) {
    const sam3_model *m = c->m;
    const int maxn = SAM3__MIN(m->tok.max_length, m->text.max_pos), D = m->neck.fpn;
    sam3__text_entry *e = NULL;
    int i, trunc = 0, cnt = 0;
    int32_t *ids;
    sam3_result rc;
    size_t len = strlen(text);
    for (i = 0; i < SAM3__TEXT_CACHE; i++)
        if (c->tcache[i].stamp && strcmp(c->tcache[i].text, text) == 0) {
            e = &c->tcache[i];
            e->stamp = ++c->tstamp;
            *feat = e->feat;
            *n = e->n;
            *truncated = e->truncated;
            return SAM3_OK;
        }
    for (i = 0; i < SAM3__TEXT_CACHE; i++)
        if (!e || c->tcache[i].stamp < e->stamp) e = &c->tcache[i];
    ids = (int32_t *)sam3__salloc(c, (size_t)maxn * sizeof(int32_t));
    if (!ids) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__tokenize_internal(c, text, len, ids, maxn, &cnt, &trunc)) < 0) return rc;
    e->stamp = 0;
    sam3__afree(&c->a, e->text);
    e->text = (char *)sam3__aalloc(&c->a, len + 1);
    if (!e->text) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory caching the prompt");
    memcpy(e->text, text, len + 1);
    if (!e->feat && !(e->feat = (float *)sam3__aalloc(&c->a, (size_t)maxn * D * sizeof(float))))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory caching text features");
    if ((rc = sam3__clip_text_model(c, ids, cnt, e->feat)) != SAM3_OK) return rc;
    e->n = cnt;
    e->truncated = trunc;
    e->stamp = ++c->tstamp;
    *feat = e->feat;
    *n = cnt;
    *truncated = trunc;
    return SAM3_OK;
}

static int sam3__finite(float v) { return v == v && v <= FLT_MAX && v >= -FLT_MAX; }
/* Clicks and a box from a caller (fn: the entry point, for the message): 0..SAM3_MAX_POINTS
   points, set where counted, finite, labels 0 or 1; a finite box. */
static sam3_result sam3__check_clicks(sam3_ctx *c, const char *fn, const sam3_point *pts, int n, const sam3_box *box) {
    int i;
    if (n < 0 || n > SAM3_MAX_POINTS) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %d points, expected 0..%d (SAM3_MAX_POINTS)", fn, n, SAM3_MAX_POINTS);
    if (n && !pts) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: n_points = %d but points is NULL", fn, n);
    for (i = 0; i < n; i++) {
        if (!sam3__finite(pts[i].x) || !sam3__finite(pts[i].y))
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: point %d has a NaN or infinite coordinate", fn, i);
        if (pts[i].label != 0 && pts[i].label != 1)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: point %d has label %d, expected 1 (object) or 0 (background)", fn, i, pts[i].label);
    }
    if (box && !(sam3__finite(box->x0) && sam3__finite(box->y0) && sam3__finite(box->x1) && sam3__finite(box->y1)))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: the box has a NaN or infinite coordinate", fn);
    return SAM3_OK;
}


/* A mask threshold p (a probability: the API's one unit for mask thresholds) as the logit the
   SAM 2-style heads compare their upsampled logits with: ln(p / (1 - p)), exactly 0 at p = 0.5 (the
   reference's logits > 0). p <= 0 sets every pixel and p >= 1 none, as a probability threshold would. */
static float sam3__mask_logit_threshold(float p) {
    if (p <= 0) return -HUGE_VALF; /* every finite logit is above it */
    if (p >= 1) return HUGE_VALF;
    return logf(p / (1.0f - p));
}

/* One sam3_segment call's state, stage to stage (sam3__segment_run); buffers from the arena. */
typedef struct sam3__seg_state {
    sam3_segment_options o;
    const char *text; /* the prompt's text, "visual" for boxes alone */
    int nb, n_text, truncated, np; /* boxes; text tokens, and whether cut; prompt tokens */
    int D, Q, S0, Ng;              /* width, queries, mask side, encoder tokens */
    float *prompt;                 /* (np, D) text tokens, then geometry tokens */
    float *mem;                    /* (Ng, D) the DETR encoder's memory */
    sam3__dec_out dec;             /* queries (Q, D), boxes (Q, 4), presence */
    float *logits, *score, pres;   /* (Q) logits; (Q) sigmoid(logit) * presence; presence */
    int kept, nm, all;             /* queries over the threshold; with masks; all (tapping) */
    float *masks, *sem;            /* (nm, S0, S0) mask logits; (S0, S0) semantic logits */
} sam3__seg_state;

/* The stage timings and FLOPs a sam3_segment call sums into (sam3_ctx_timings, _flops), zeroed at
   its start. */
static void sam3__segment_timings_zero(sam3_ctx *c) {
    int i;
    c->t.text = c->t.geometry = c->t.detr_encoder = c->t.detr_decoder = c->t.mask_decoder = c->t.postprocess = 0;
    for (i = SAM3__ST_TEXT; i <= SAM3__ST_POST; i++) c->flops[i] = 0;
}

/* sam3_segment's arguments: a SAM 3 model with an image, finite thresholds, 0..SAM3_MAX_BOXES
   finite boxes with labels 0 or 1, and a text or boxes. Fills st->o, st->nb, st->text. */
static sam3_result sam3__segment_check(sam3_ctx *c, const char *fn, const sam3_segment_prompt *pr, const sam3_segment_options *opt,
                                       sam3__seg_state *st) {
    sam3_result rc;
    int i;
    st->o = sam3_segment_options_default();
    if (c->m->arch != SAM3__ARCH_SAM3)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "%s: text and box-exemplar prompts need a SAM 3 model; use sam3_segment_points", fn);
    if (!c->has_image) return sam3__fail(c, SAM3_ERR_NO_IMAGE, "%s: no image: call sam3_set_image first", fn);
    if (opt) {
        if (opt->score_threshold != 0) st->o.score_threshold = opt->score_threshold;
        if (opt->mask_threshold != 0) st->o.mask_threshold = opt->mask_threshold;
        st->o.no_masks = opt->no_masks;
        st->o.low_res = opt->low_res;
        st->o.semantic = opt->semantic;
        if (!sam3__finite(st->o.score_threshold) || !sam3__finite(st->o.mask_threshold))
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: thresholds must be finite", fn);
    }
    st->nb = pr->n_boxes;
    if (st->nb < 0 || st->nb > SAM3_MAX_BOXES)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %d boxes, expected 0..%d (SAM3_MAX_BOXES)", fn, st->nb, SAM3_MAX_BOXES);
    if (st->nb && !pr->boxes) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: n_boxes = %d but boxes is NULL", fn, st->nb);
    for (i = 0; i < st->nb; i++) {
        const sam3_box *b = &pr->boxes[i];
        if (!sam3__finite(b->x0) || !sam3__finite(b->y0) || !sam3__finite(b->x1) || !sam3__finite(b->y1))
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: box %d has a NaN or infinite coordinate", fn, i);
        if (pr->box_labels && pr->box_labels[i] != 0 && pr->box_labels[i] != 1)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: box %d has label %d, expected 1 (positive) or 0 (negative)", fn, i,
                              pr->box_labels[i]);
    }
    st->text = pr->text && pr->text[0] ? pr->text : st->nb ? "visual" : NULL;
    if ((rc = sam3__cpt_check_all(c, fn, pr)) != SAM3_OK) return rc;
    if (!st->text && !pr->n_concepts) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: empty prompt: give a text, boxes, concepts, or some of them", fn);
    return SAM3_OK;
}

/* The prompt's tokens: the text encoder's, then the geometry encoder's for the boxes (cx, cy, w,
   h normalised by the image size, as Sam3Processor gives them). */
static sam3_result sam3__segment_prompt(sam3_ctx *c, const sam3_segment_prompt *pr, sam3__seg_state *st) {
    const int D = st->D, nb = st->nb;
    const float *tfeat = NULL;
    double t0 = sam3__stage_begin(c, SAM3__ST_TEXT);
    sam3_result rc;
    int i, own, at;
    if (st->text) {
        if ((rc = sam3__text_features(c, st->text, &tfeat, &st->n_text, &st->truncated)) != SAM3_OK) return rc;
        sam3__tap(c, "text.features", tfeat, 2, st->n_text, D, 0);
    }
    c->t.text += sam3__stage_end(c, t0);
    t0 = sam3__stage_begin(c, SAM3__ST_GEOMETRY);
    own = st->np = st->n_text + (nb ? nb + 1 : 0);
    for (i = 0; i < pr->n_concepts; i++) st->np += pr->concepts[i]->n_tok; /* each <= SAM3__CPT_MAX_TOKENS: no overflow */
    if (!(st->prompt = sam3__sallocf(c, (size_t)st->np * D))) return SAM3_ERR_OUT_OF_MEMORY;
    if (tfeat) memcpy(st->prompt, tfeat, (size_t)st->n_text * D * sizeof(float));
    if (nb) {
        float *boxes_n = sam3__sallocf(c, (size_t)nb * 4); /* (nb, 4) cx, cy, w, h */
        int *labels = (int *)sam3__salloc(c, (size_t)nb * sizeof(int));
        float *geo = st->prompt + (size_t)st->n_text * D;
        if (!boxes_n || !labels) return SAM3_ERR_OUT_OF_MEMORY;
        for (i = 0; i < nb; i++) {
            const sam3_box *b = &pr->boxes[i];
            float x0 = b->x0 / (float)c->img_w, y0 = b->y0 / (float)c->img_h, x1 = b->x1 / (float)c->img_w, y1 = b->y1 / (float)c->img_h;
            boxes_n[4 * i] = (x0 + x1) / 2;
            boxes_n[4 * i + 1] = (y0 + y1) / 2;
            boxes_n[4 * i + 2] = x1 - x0;
            boxes_n[4 * i + 3] = y1 - y0;
            labels[i] = pr->box_labels ? pr->box_labels[i] : 1;
        }
        sam3__tap(c, "geo.input_boxes", boxes_n, 2, nb, 4, 0);
        if ((rc = sam3__geometry_encoder(c, boxes_n, labels, nb, geo)) != SAM3_OK) return rc;
        sam3__tap(c, "geo.features", geo, 2, nb + 1, D, 0);
    }
    for (i = 0, at = own; i < pr->n_concepts; i++) { /* each concept's tokens after the prompt's own, in order */
        const sam3_concept *k = pr->concepts[i];
        memcpy(st->prompt + (size_t)at * D, k->tok, (size_t)k->n_tok * D * sizeof(float));
        at += k->n_tok;
        st->n_text += k->n_text;
        st->truncated |= k->truncated;
    }
    sam3__tap(c, "prompt.features", st->prompt, 2, st->np, D, 0);
    c->t.geometry += sam3__stage_end(c, t0);
    return SAM3_OK;
}

/* The DETR encoder over the cached image tokens with the prompt, the decoder's queries and boxes,
   and each query's score against the prompt. */
static sam3_result sam3__segment_detr(sam3_ctx *c, sam3__seg_state *st) {
    const int D = st->D, Q = st->Q;
    double t0 = sam3__stage_begin(c, SAM3__ST_DETR_ENC);
    sam3_result rc;
    int i;
    if (!(st->mem = sam3__sallocf(c, (size_t)st->Ng * D))) return SAM3_ERR_OUT_OF_MEMORY;
    memcpy(st->mem, c->l2_tok, (size_t)st->Ng * D * sizeof(float));
    if ((rc = sam3__detr_encoder(c, st->mem, st->prompt, st->np)) != SAM3_OK) return rc;
    sam3__tap(c, "detr_enc.out", st->mem, 2, st->Ng, D, 0);
    c->t.detr_encoder += sam3__stage_end(c, t0);
    t0 = sam3__stage_begin(c, SAM3__ST_DETR_DEC);
    st->dec.queries = sam3__sallocf(c, (size_t)Q * D); /* (Q, D) */
    st->dec.boxes = sam3__sallocf(c, (size_t)Q * 4);   /* (Q, 4) */
    st->logits = sam3__sallocf(c, (size_t)Q);          /* (Q) */
    if (!st->dec.queries || !st->dec.boxes || !st->logits) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__detr_decoder(c, st->mem, st->prompt, st->np, &st->dec)) != SAM3_OK) return rc;
    if ((rc = sam3__dot_product_scoring(c, st->dec.queries, st->prompt, st->np, st->logits)) != SAM3_OK) return rc;
    c->t.detr_decoder += sam3__stage_end(c, t0);
    if (c->opt.tap) {
        float *xyxy = sam3__sallocf(c, (size_t)Q * 4);
        if (!xyxy) return SAM3_ERR_OUT_OF_MEMORY;
        for (i = 0; i < Q; i++) {
            const float *b = st->dec.boxes + 4 * i;
            xyxy[4 * i] = b[0] - 0.5f * b[2];
            xyxy[4 * i + 1] = b[1] - 0.5f * b[3];
            xyxy[4 * i + 2] = b[0] + 0.5f * b[2];
            xyxy[4 * i + 3] = b[1] + 0.5f * b[3];
        }
        sam3__tap(c, "out.pred_logits", st->logits, 1, Q, 0, 0);
        sam3__tap(c, "out.pred_boxes", xyxy, 2, Q, 4, 0);
        sam3__tap(c, "out.presence_logits", &st->dec.presence, 1, 1, 0, 0);
    }
    return SAM3_OK;
}

/* Scores, and masks only for the queries kept (all of them when tapping, for the parity dumps):
   no pixel decoder at all when nothing needs it, so a prompt that matches nothing costs no mask
   decoder and one that keeps 5 instances computes 5 of the query-pixel products. */
static sam3_result sam3__segment_masks(sam3_ctx *c, sam3__seg_state *st) {
    const int D = st->D, Q = st->Q, S0 = st->S0;
    double t0 = sam3__stage_begin(c, SAM3__ST_MASK);
    float *mq;
    int i, k;
    st->pres = sam3__sigmoid(st->dec.presence);
    st->all = c->opt.tap != NULL;
    if (!(st->score = sam3__sallocf(c, (size_t)Q))) return SAM3_ERR_OUT_OF_MEMORY;
    st->kept = 0;
    for (i = 0; i < Q; i++) {
        st->score[i] = sam3__sigmoid(st->logits[i]) * st->pres;
        st->kept += st->score[i] > st->o.score_threshold;
    }
    st->nm = st->all ? Q : (!st->o.no_masks || st->o.low_res) ? st->kept : 0;
    st->masks = sam3__sallocf(c, (size_t)st->nm * S0 * S0);   /* (nm, S0, S0) mask logits */
    st->sem = sam3__sallocf(c, (size_t)S0 * S0);              /* (S0, S0) semantic logits */
    mq = sam3__sallocf(c, (size_t)SAM3__MAX(st->nm, 1) * D); /* (nm, D) their queries */
    if (!st->masks || !st->sem || !mq) return SAM3_ERR_OUT_OF_MEMORY;
    for (i = 0, k = 0; i < Q && k < st->nm; i++)
        if (st->all || st->score[i] > st->o.score_threshold) memcpy(mq + (size_t)k++ * D, st->dec.queries + (size_t)i * D, (size_t)D * sizeof(float));
    if (st->nm || st->all || st->o.semantic) {
        const sam3_result rc = sam3__mask_decoder(c, st->mem, st->prompt, st->np, mq, st->nm, st->masks, st->all || st->o.semantic ? st->sem : NULL);
        if (rc != SAM3_OK) return rc;
    }
    sam3__tap(c, "out.pred_masks", st->masks, 3, Q, S0, S0);
    sam3__tap(c, "out.semantic_seg", st->sem, 2, S0, S0, 0);
    c->t.mask_decoder += sam3__stage_end(c, t0);
    return SAM3_OK;
}

/* Sam3ImageProcessor.post_process_instance_segmentation: the kept queries' boxes in image pixels,
   their masks (sigmoid, bilinear resize of the probabilities, threshold), the semantic map; in the
   result buffers rb. */
static sam3_result sam3__segment_post(sam3_ctx *c, sam3__seg_state *st, sam3__seg_bufs *rb, sam3_segment_result *out) {
    const int W = c->img_w, H = c->img_h, S0 = st->S0, kept = st->kept, nm = st->nm;
    const size_t plane = (size_t)W * H, lp = (size_t)S0 * S0;
    const sam3_segment_options *o = &st->o;
    double t0 = sam3__stage_begin(c, SAM3__ST_POST);
    const float **src;
    sam3__lerp *ty, *tx;
    sam3_result rc;
    long *area;
    int i, k;
    if (!sam3__grow(c, (void **)&rb->inst, &rb->inst_cap, (size_t)SAM3__MAX(kept, 1) * sizeof(sam3_instance)) ||
        (!o->no_masks && !sam3__grow(c, (void **)&rb->mask, &rb->mask_cap, (size_t)SAM3__MAX(kept, 1) * plane)) ||
        (o->low_res && !sam3__grow(c, (void **)&rb->low, &rb->low_cap, (size_t)SAM3__MAX(kept, 1) * lp * sizeof(float))) ||
        (o->semantic && (!sam3__grow(c, (void **)&rb->sem, &rb->sem_cap, lp * sizeof(float)) ||
                         !sam3__grow(c, (void **)&rb->sem_mask, &rb->sem_mask_cap, plane))))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d result masks of %dx%d", kept, W, H);
    ty = (sam3__lerp *)sam3__salloc(c, (size_t)H * sizeof(sam3__lerp));
    tx = (sam3__lerp *)sam3__salloc(c, (size_t)W * sizeof(sam3__lerp));
    src = (const float **)sam3__salloc(c, (size_t)SAM3__MAX(kept, 1) * sizeof(*src)); /* (kept) their mask logits */
    area = (long *)sam3__salloc(c, (size_t)SAM3__MAX(kept, 1) * sizeof(long));        /* (kept) */
    if (!ty || !tx || !src || !area) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__lerp_table(S0, H, ty);
    sam3__lerp_table(S0, W, tx);
    for (i = 0, k = 0; i < st->Q; i++) {
        const float sc = st->score[i], *b = st->dec.boxes + 4 * i, *ml;
        sam3_instance *in;
        if (!(sc > o->score_threshold)) continue;
        in = &rb->inst[k];
        memset(in, 0, sizeof(*in));
        in->score = sc;
        in->query = i;
        in->box.x0 = (b[0] - 0.5f * b[2]) * (float)W;
        in->box.y0 = (b[1] - 0.5f * b[3]) * (float)H;
        in->box.x1 = (b[0] + 0.5f * b[2]) * (float)W;
        in->box.y1 = (b[1] + 0.5f * b[3]) * (float)H;
        src[k] = ml = nm ? st->masks + (size_t)(st->all ? i : k) * lp : NULL;
        if (o->low_res) {
            memcpy(rb->low + (size_t)k * lp, ml, lp * sizeof(float));
            in->low_res_logits = rb->low + (size_t)k * lp;
        }
        k++;
    }
    if (!o->no_masks && kept) { /* sigmoid first, then the bilinear resize of probabilities, then the threshold */
        if ((rc = sam3__resize_threshold_n(c, kept, src, 1, S0, S0, ty, tx, H, W, o->mask_threshold, rb->mask, area)) != SAM3_OK) return rc;
        for (k = 0; k < kept; k++) {
            rb->inst[k].mask = rb->mask + (size_t)k * plane;
            rb->inst[k].area = area[k];
        }
    }
    if (o->semantic) {
        memcpy(rb->sem, st->sem, lp * sizeof(float));
        src[0] = st->sem;
        if ((rc = sam3__resize_threshold_n(c, 1, src, 1, S0, S0, ty, tx, H, W, 0.5f, rb->sem_mask, area)) != SAM3_OK) return rc;
        out->semantic_logits = rb->sem;
        out->semantic_mask = rb->sem_mask;
    }
    out->n_instances = kept;
    out->instances = rb->inst;
    out->width = W;
    out->height = H;
    out->presence = st->pres;
    out->n_queries = st->Q;
    out->low_res_width = out->low_res_height = S0;
    out->n_text_tokens = st->n_text;
    out->text_truncated = st->truncated;
    c->t.postprocess += sam3__stage_end(c, t0);
    return SAM3_OK;
}

/* Sam3Model's forward for one checked prompt (st from sam3__segment_check) on the cached image:
   prompt tokens, DETR, masks, post-processing into the result buffers rb; its scratch released. */
static sam3_result sam3__segment_one(sam3_ctx *c, const sam3_segment_prompt *pr, sam3__seg_state *st, sam3__seg_bufs *rb,
                                     sam3_segment_result *out) {
    const sam3_model *m = c->m;
    sam3__mark mk = sam3__mark_get(c);
    sam3_result rc;
    st->D = m->neck.fpn;
    st->Q = m->dec.queries;
    st->Ng = m->neck.side[m->neck.n_kept - 1] * m->neck.side[m->neck.n_kept - 1];
    st->S0 = m->neck.side[0];
    if ((rc = sam3__segment_prompt(c, pr, st)) != SAM3_OK || (rc = sam3__segment_detr(c, st)) != SAM3_OK ||
        (rc = sam3__segment_masks(c, st)) != SAM3_OK || (rc = sam3__segment_post(c, st, rb, out)) != SAM3_OK)
        return rc;
    sam3__release(c, mk);
    return st->truncated ? SAM3_TRUNCATED : SAM3_OK;
}

/* sam3_segment: check, then the forward into result slot 0. */
static sam3_result sam3__segment_run(sam3_ctx *c, const sam3_segment_prompt *pr, const sam3_segment_options *opt, sam3_segment_result *out) {
    sam3__seg_state st;
    sam3_result rc;
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (!pr || !out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment: prompt and out must not be NULL");
    memset(out, 0, sizeof(*out));
    memset(&st, 0, sizeof(st));
    c->err[0] = 0;
    if ((rc = sam3__segment_check(c, "sam3_segment", pr, opt, &st)) != SAM3_OK) return rc;
    sam3__segment_timings_zero(c);
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    if (!sam3__seg_slots(c, 1)) return sam3__end(c, sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_segment: out of memory"));
    return sam3__end(c, sam3__segment_one(c, pr, &st, &c->segb[0], out));
}

/* "sam3_segment_many: prompt I", the name errors of prompt i give (buf: cap bytes). */
static void sam3__segment_many_fn(char *buf, size_t cap, int i) { snprintf(buf, cap, "sam3_segment_many: prompt %d", i); }

/* sam3_segment_many: every prompt checked first (nothing done on a bad one), then each prompt's
   forward into its own result slot; the prompt-independent steps are kept in the context by the
   first prompt and reused by the others (sam3__detr_encoder, sam3__detr_decoder). */
static sam3_result sam3__segment_many_run(sam3_ctx *c, const sam3_segment_prompt *prs, int n, const sam3_segment_options *opt,
                                          sam3_segment_result *out) {
    sam3__seg_state st;
    sam3_result rc = SAM3_OK, r;
    char fn[48];
    int i;
    c->err[0] = 0;
    if (!prs || !out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_many: prompts and out must not be NULL");
    if (n < 1 || n > SAM3_MAX_SEGMENT_PROMPTS)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_many: %d prompts, expected 1..%d (SAM3_MAX_SEGMENT_PROMPTS)", n,
                          SAM3_MAX_SEGMENT_PROMPTS);
    memset(out, 0, (size_t)n * sizeof(*out));
    for (i = 0; i < n; i++) {
        memset(&st, 0, sizeof(st));
        sam3__segment_many_fn(fn, sizeof(fn), i);
        if ((rc = sam3__segment_check(c, fn, &prs[i], opt, &st)) != SAM3_OK) return rc;
    }
    sam3__segment_timings_zero(c);
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    if (!sam3__seg_slots(c, n)) return sam3__end(c, sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_segment_many: out of memory"));
    for (i = 0; i < n; i++) {
        memset(&st, 0, sizeof(st));
        sam3__segment_many_fn(fn, sizeof(fn), i);
        if ((r = sam3__segment_check(c, fn, &prs[i], opt, &st)) == SAM3_OK) r = sam3__segment_one(c, &prs[i], &st, &c->segb[i], &out[i]);
        if (r < 0) {
            memset(out, 0, (size_t)n * sizeof(*out));
            if (c->err[0]) {
                char e[sizeof(c->err)];
                memcpy(e, c->err, sizeof(e));
                sam3__fail(c, r, "%s: %s", fn, e);
            }
            return sam3__end(c, r);
        }
        if (r == SAM3_TRUNCATED) rc = r;
    }
    return sam3__end(c, rc);
}

/* sam3_concept_new: sam3_segment's checks and prompt tokens on the context's image, kept. */
static sam3_result sam3__concept_new_run(sam3_ctx *c, const sam3_segment_prompt *pr, sam3_concept **out) {
    sam3__seg_state st;
    sam3_concept *k;
    sam3_result rc;
    if (!pr || !out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_new: prompt and out must not be NULL");
    *out = NULL;
    memset(&st, 0, sizeof(st));
    c->err[0] = 0;
    if ((rc = sam3__segment_check(c, "sam3_concept_new", pr, NULL, &st)) != SAM3_OK) return rc;
    sam3__segment_timings_zero(c);
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    st.D = c->m->neck.fpn;
    if ((rc = sam3__segment_prompt(c, pr, &st)) != SAM3_OK) return sam3__end(c, rc);
    if (st.np > SAM3__CPT_MAX_TOKENS)
        return sam3__end(c, sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_new: %d prompt tokens, a concept holds at most %d", st.np,
                                       SAM3__CPT_MAX_TOKENS));
    if (!(k = sam3__cpt_alloc(&c->a, st.D, st.np))) return sam3__end(c, sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_concept_new: out of memory"));
    memcpy(k->tok, st.prompt, (size_t)st.np * st.D * sizeof(float));
    k->fp = sam3__cpt_fingerprint(c->m);
    k->n_text = st.n_text;
    k->truncated = st.truncated;
    *out = k;
    return sam3__end(c, st.truncated ? SAM3_TRUNCATED : SAM3_OK);
}
SAM3DEF sam3_result sam3_concept_new(sam3_ctx *c, const sam3_segment_prompt *pr, sam3_concept **out) {
    if (!c) return SAM3_ERR_INVALID_ARG;
    if (out) *out = NULL;
    if (sam3__hold(c, NULL, 0)) return SAM3_ERR_BUSY;
    return sam3__let(c, sam3__concept_new_run(c, pr, out));
}


SAM3DEF sam3_points_options sam3_points_options_default(void) {
    sam3_points_options o;
    memset(&o, 0, sizeof(o));
    o.mask_threshold = 0.5f;
    return o;
}

/* One sam3_segment_points call's state, stage to stage (the interactive head's forward, then
   SamProcessor's post-processing). */
typedef struct sam3__pts_step {
    sam3_points_options o; /* the caller's, defaults where left 0 */
    float thr;             /* the mask threshold as a logit */
    int g, nm, ns;         /* the head's grid side, mask tokens, sparse prompt tokens */
    size_t lp;             /* (4g)^2: one low-resolution mask */
    float *sparse, *dense; /* (ns, D) sparse prompt tokens; (D, g, g) dense prompt */
    float *all;            /* (nm, 4g, 4g) every mask token's logits; their IoUs in c->res_iou */
    float obj;             /* the object score logit (heads with an object token) */
    int first, n_out;      /* the masks given out: tokens first..first + n_out - 1 */
    double t0;             /* the start of the decoder's stages, for c->t.points */
} sam3__pts_step;

/* sam3_segment_points's checks, before anything runs: an interactive head, an image, the clicks
   and box, a mask prompt of an accepted size and finite, a finite threshold. */
static sam3_result sam3__points_check(sam3_ctx *c, const sam3_points_prompt *pp, const sam3_points_options *opt, sam3_points_result *out,
                                      sam3__pts_step *s) {
    const sam3_model *m;
    const sam3__trk_cfg *t;
    sam3_result rc;
    int g;
    if (!pp || !out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_points: prompt and out must not be NULL");
    memset(out, 0, sizeof(*out));
    memset(s, 0, sizeof(*s));
    m = c->m;
    t = &m->trk;
    c->err[0] = 0;
    if (opt) s->o = *opt;
    if (!t->present)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "sam3_segment_points: this model file has no interactive head (tracker_model.* tensors)");
    if (!c->has_image) return sam3__fail(c, SAM3_ERR_NO_IMAGE, "sam3_segment_points: no image: call sam3_set_image first");
    if ((rc = sam3__check_clicks(c, "sam3_segment_points", pp->points, pp->n_points, pp->box)) != SAM3_OK) return rc;
    g = t->grid;
    if (pp->mask_logits && (pp->mask_width < 1 || pp->mask_height < 1 || pp->mask_width > SAM3_MAX_IMAGE_DIM || pp->mask_height > SAM3_MAX_IMAGE_DIM))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_points: mask_logits size %dx%d outside 1x1..%dx%d", pp->mask_width,
                          pp->mask_height, SAM3_MAX_IMAGE_DIM, SAM3_MAX_IMAGE_DIM);
    if (pp->mask_logits && m->arch == SAM3__ARCH_SAM1 && (pp->mask_width != 4 * g || pp->mask_height != 4 * g))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_points: SAM 1 takes mask_logits of exactly %dx%d (a previous result's low_res_logits), got %dx%d",
                          4 * g, 4 * g, pp->mask_width, pp->mask_height);
    if (pp->mask_logits) { /* a NaN would spread through the mask embedding into every mask and IoU */
        size_t k, nm = (size_t)pp->mask_width * (size_t)pp->mask_height;
        for (k = 0; k < nm; k++)
            if (!sam3__finite(pp->mask_logits[k]))
                return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_points: mask_logits[%lu] is NaN or infinite", (unsigned long)k);
    }
    if (s->o.mask_threshold == 0) s->o.mask_threshold = 0.5f;
    if (!sam3__finite(s->o.mask_threshold)) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_points: mask_threshold must be finite");
    s->thr = sam3__mask_logit_threshold(s->o.mask_threshold);
    s->g = g;
    s->nm = t->n_mask_tokens;
    s->lp = (size_t)16 * g * g;
    c->t.interactive_neck = c->t.points = 0;
    c->flops[SAM3__ST_INECK] = c->flops[SAM3__ST_POINTS] = 0;
    return SAM3_OK;
}

/* The interactive head's own neck on the image's trunk features (once per image). */
static sam3_result sam3__points_neck(sam3_ctx *c) {
    const double t0 = sam3__stage_begin(c, SAM3__ST_INECK);
    sam3_result rc;
    if (!c->trk_ready && (rc = sam3__tracker_features(c)) != SAM3_OK) return rc;
    c->t.interactive_neck = sam3__stage_end(c, t0);
    if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted before the mask decoder");
    return SAM3_OK;
}

/* The prompt encoder on the clicks, box and mask, then the mask decoder: every mask token's
   logits, IoU and the object score. */
static sam3_result sam3__points_decode(sam3_ctx *c, const sam3_points_prompt *pp, sam3__pts_step *s) {
    const sam3_model *m = c->m;
    const sam3__trk_cfg *t = &m->trk;
    const int g = s->g, sam1 = m->arch == SAM3__ARCH_SAM1;
    /* prompt coordinates in the model's input frame, as the processors map them: SAM 3 squashes
       the image to the frame, SAM 1 scales it into the top-left of a padded one */
    const float rx = sam1 ? (float)((double)c->s1_w1 / c->img_w) : (float)((double)t->image / c->img_w);
    const float ry = sam1 ? (float)((double)c->s1_h1 / c->img_h) : (float)((double)t->image / c->img_h);
    sam3_result rc;
    s->t0 = sam3__stage_begin(c, SAM3__ST_POINTS);
    s->sparse = sam3__sallocf(c, (size_t)(pp->n_points + 4) * t->D); /* (ns, D) */
    s->dense = sam3__sallocf(c, (size_t)t->D * g * g);               /* (D, g, g) */
    s->all = sam3__sallocf(c, (size_t)s->nm * s->lp);                /* (nm, 4g, 4g) */
    if (!s->sparse || !s->dense || !s->all) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__trk_prompt_encoder(c, pp, rx, ry, 0, s->sparse, &s->ns, s->dense)) != SAM3_OK) return rc;
    /* tap names follow the reference dumps: trk.* (SAM 3 tracker), sam1.* (SAM 1) */
    sam3__tap(c, sam1 ? "sam1.sparse" : "trk.sparse", s->sparse, 2, s->ns, t->D, 0);
    sam3__tap(c, sam1 ? "sam1.dense" : "trk.dense", s->dense, 3, t->D, g, g);
    if ((rc = sam3__trk_mask_decoder(c, c->trk_e, s->sparse, s->ns, s->dense, s->all, c->res_iou, &s->obj, NULL)) != SAM3_OK) return rc;
    sam3__tap(c, sam1 ? "sam1.all_masks" : "trk.all_masks", s->all, 3, s->nm, 4 * g, 4 * g);
    sam3__tap(c, sam1 ? "sam1.all_iou" : "trk.all_iou", c->res_iou, 1, s->nm, 0, 0);
    if (t->obj_token) sam3__tap(c, "trk.object_score", &s->obj, 1, 1, 0, 0);
    return SAM3_OK;
}

/* Token 0 unless its stability (|logits > d| / |logits > -d|) is below the threshold: then the
   best predicted IoU of tokens 1.. (first on ties, as argmax). all: (nm, lp) logits. */
static int sam3__trk_stable_token(const sam3__trk_cfg *tc, const float *all, const float *iou, int nm, size_t lp) {
    long ai = 0, au = 0;
    size_t q;
    int i, best = 1;
    for (i = 2; i < nm; i++)
        if (iou[i] > iou[best]) best = i;
    for (q = 0; q < lp; q++) {
        ai += all[q] > tc->stab_delta;
        au += all[q] > -tc->stab_delta;
    }
    return (!tc->dynamic || (au > 0 ? (float)ai / (float)au : 1.0f) >= tc->stab_thresh) ? 0 : best;
}

/* The selection, as the reference: multimask -> tokens 1..; single -> sam3__trk_stable_token;
   the chosen logits and IoUs to the front of the context's result buffers. */
static sam3_result sam3__points_select(sam3_ctx *c, sam3__pts_step *s) {
    const int W = c->img_w, H = c->img_h, g = s->g;
    const size_t lp = s->lp;
    s->first = 1;
    s->n_out = s->nm - 1;
    if (s->o.single_mask) {
        s->first = sam3__trk_stable_token(&c->m->trk, s->all, c->res_iou, s->nm, lp);
        s->n_out = 1;
    }
    if (!sam3__grow(c, (void **)&c->res_low, &c->res_low_cap, (size_t)s->n_out * lp * sizeof(float)) ||
        (!s->o.no_masks && !sam3__grow(c, (void **)&c->res_mask, &c->res_mask_cap, (size_t)s->n_out * W * H)))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d masks of %dx%d", s->n_out, W, H);
    memcpy(c->res_low, s->all + (size_t)s->first * lp, (size_t)s->n_out * lp * sizeof(float));
    memmove(c->res_iou, c->res_iou + s->first, (size_t)s->n_out * sizeof(float));
    sam3__tap(c, "out.masks", c->res_low, 3, s->n_out, 4 * g, 4 * g);
    sam3__tap(c, "out.iou", c->res_iou, 1, s->n_out, 0, 0);
    if (c->m->trk.obj_token) sam3__tap(c, "out.object_score", &s->obj, 1, 1, 0, 0);
    return SAM3_OK;
}

/* SAM 1's low-resolution logits lg (4g, 4g) bilinearly up to the padded frame, only its image
   part (h1, w1) into crop. uy, ux: (S) tables from 4g to the frame side S. */
static void sam3__sam1_frame_crop(sam3_ctx *c, const float *lg, int g, const sam3__lerp *uy, const sam3__lerp *ux, int h1, int w1, float *crop) {
    int k;
    (void)c; /* its thread count, with OpenMP */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (k = 0; k < h1; k++) {
        const float *a = lg + (size_t)uy[k].i0 * 4 * g, *b = lg + (size_t)uy[k].i1 * 4 * g;
        int q;
        for (q = 0; q < w1; q++)
            crop[(size_t)k * w1 + q] = uy[k].l0 * (ux[q].l0 * a[ux[q].i0] + ux[q].l1 * a[ux[q].i1]) +
                                       uy[k].l1 * (ux[q].l0 * b[ux[q].i0] + ux[q].l1 * b[ux[q].i1]);
    }
}

/* SAM 1's masks as SamProcessor.post_process_masks: logits up to the padded frame, crop the
   image's part, down to the image size, > threshold (no sigmoid). ty, tx: (H), (W) tables. */
static sam3_result sam3__points_masks_sam1(sam3_ctx *c, const sam3__pts_step *s, sam3__lerp *ty, sam3__lerp *tx) {
    const int W = c->img_w, H = c->img_h, g = s->g, S = c->m->trk.image, h1 = c->s1_h1, w1 = c->s1_w1;
    const size_t lp = s->lp, plane = (size_t)W * H;
    sam3__lerp *uy = (sam3__lerp *)sam3__salloc(c, (size_t)S * sizeof(sam3__lerp));
    sam3__lerp *ux = (sam3__lerp *)sam3__salloc(c, (size_t)S * sizeof(sam3__lerp));
    float *crop = sam3__sallocf(c, (size_t)h1 * w1); /* (h1, w1) logits in the image's part of the frame */
    const float *src = crop;
    sam3_result rc;
    long area;
    int i;
    if (!uy || !ux || !crop) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__lerp_table(4 * g, S, uy);
    sam3__lerp_table(4 * g, S, ux);
    sam3__lerp_table(h1, H, ty);
    sam3__lerp_table(w1, W, tx);
    for (i = 0; i < s->n_out; i++) {
        sam3__sam1_frame_crop(c, c->res_low + (size_t)i * lp, g, uy, ux, h1, w1, crop);
        if ((rc = sam3__resize_threshold_n(c, 1, &src, 0, h1, w1, ty, tx, H, W, s->thr, c->res_mask + (size_t)i * plane, &area)) != SAM3_OK)
            return rc;
    }
    return SAM3_OK;
}

/* The masks at the image size (SAM 3: a bilinear resize of the logits straight to it, then >
   threshold; SAM 1: sam3__points_masks_sam1) and the result. */
static sam3_result sam3__points_postprocess(sam3_ctx *c, const sam3__pts_step *s, sam3_points_result *out) {
    const int W = c->img_w, H = c->img_h, g = s->g, n_out = s->n_out;
    sam3_result rc;
    int i;
    if (!s->o.no_masks) {
        sam3__lerp *ty = (sam3__lerp *)sam3__salloc(c, (size_t)H * sizeof(sam3__lerp));
        sam3__lerp *tx = (sam3__lerp *)sam3__salloc(c, (size_t)W * sizeof(sam3__lerp));
        if (!ty || !tx) return SAM3_ERR_OUT_OF_MEMORY;
        if (c->m->arch == SAM3__ARCH_SAM1) {
            if ((rc = sam3__points_masks_sam1(c, s, ty, tx)) != SAM3_OK) return rc;
        } else {
            sam3__lerp_table(4 * g, H, ty);
            sam3__lerp_table(4 * g, W, tx);
            const float **src = (const float **)sam3__salloc(c, (size_t)n_out * sizeof(*src)); /* (n_out) */
            long *area = (long *)sam3__salloc(c, (size_t)n_out * sizeof(long));                 /* (n_out) */
            if (!src || !area) return SAM3_ERR_OUT_OF_MEMORY;
            for (i = 0; i < n_out; i++) src[i] = c->res_low + (size_t)i * s->lp;
            if ((rc = sam3__resize_threshold_n(c, n_out, src, 0, 4 * g, 4 * g, ty, tx, H, W, s->thr, c->res_mask, area)) != SAM3_OK) return rc;
        }
        out->masks = c->res_mask;
    }
    out->n_masks = n_out;
    out->iou = c->res_iou;
    out->best = 0;
    for (i = 1; i < n_out; i++)
        if (c->res_iou[i] > c->res_iou[out->best]) out->best = i;
    out->object_score = s->obj;
    out->has_object_score = c->m->trk.obj_token;
    out->low_res_logits = c->res_low;
    out->low_res_width = out->low_res_height = 4 * g;
    out->width = W;
    out->height = H;
    c->t.points = sam3__stage_end(c, s->t0);
    return SAM3_OK;
}

/* sam3_segment_points (Sam3TrackerModel / SamModel on one image): the head's neck, the prompt
   encoder and mask decoder, the mask selection, then the processor's post-processing. */
static sam3_result sam3__segment_points_run(sam3_ctx *c, const sam3_points_prompt *pp, const sam3_points_options *opt, sam3_points_result *out) {
    sam3__pts_step s;
    sam3_result rc;
    if (!c) return SAM3_ERR_INVALID_ARG;
    if ((rc = sam3__points_check(c, pp, opt, out, &s)) != SAM3_OK) return rc;
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    rc = sam3__points_neck(c);
    if (rc == SAM3_OK) rc = sam3__points_decode(c, pp, &s);
    if (rc == SAM3_OK) rc = sam3__points_select(c, &s);
    if (rc == SAM3_OK) rc = sam3__points_postprocess(c, &s, out);
    return sam3__end(c, rc);
}

/* ---- segment everything: pipeline("mask-generation") on one crop (SamImageProcessor's
   generate_crop_boxes grid, filter_masks, post_process_for_mask_generation) ---- */
#define SAM3__EVR_MAX_SIDE 512
#define SAM3__EVR_EDGE 20.0f /* _is_box_near_crop_edge's atol, in pixels */

/* One candidate mask: a click's multimask output that passed the filters. */
typedef struct sam3__evr_cand {
    float iou, stab;
    sam3_box box;
    long area;
    int point, token;
} sam3__evr_cand;

/* One sam3_segment_everything call's state. */
typedef struct sam3__evr {
    sam3_everything_options o; /* the caller's, defaults where left 0 */
    float thr, hi, lo;         /* the mask threshold and the stability's two cuts, as logits */
    int n_points, n_tok;       /* clicks; multimask outputs a click */
    int ih, iw;                /* the maps resized to the image: (4g, 4g), or SAM 1's (h1, w1) frame part */
    sam3__pts_step s;          /* the click decoder's (sam3__points_decode) */
    sam3__lerp *ty, *tx;       /* (H), (W) from (ih, iw) to the image */
    sam3__lerp *uy, *ux;       /* (S), (S) SAM 1: from 4g to its padded frame */
    float *crop;               /* (n_tok, h1, w1) SAM 1's logits in its frame's image part */
    uint8_t *planes;           /* (n_tok, H, W) masks at one cut */
    sam3__evr_cand *cand;      /* (n_points * n_tok) the candidates passing the filters */
    int n_cand, n_all;
    int cx0, cy0, cx1, cy1;    /* this pass's crop in the whole image (the whole image: 0, 0, fw, fh) */
    int fw, fh;                /* the whole image's size */
    double t0;
} sam3__evr;

SAM3DEF sam3_everything_options sam3_everything_options_default(void) {
    sam3_everything_options o;
    memset(&o, 0, sizeof(o));
    o.points_per_side = 32;
    o.pred_iou_thresh = 0.88f;
    o.stability_score_thresh = 0.95f;
    o.stability_score_offset = 1.0f;
    o.box_nms_thresh = 0.7f;
    o.mask_threshold = 0.5f;
    o.crop_overlap_ratio = 512.0 / 1500.0;
    o.crop_points_downscale = 1;
    o.crop_nms_thresh = 0.7f;
    return o;
}

/* sam3_segment_everything's checks and defaults, before anything runs. */
static sam3_result sam3__everything_check(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_result *out, sam3__evr *e) {
    const char *fn = "sam3_segment_everything";
    const sam3_everything_options d = sam3_everything_options_default();
    sam3_everything_options *o = &e->o;
    const sam3__trk_cfg *t = &c->m->trk;
    if (!out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: out must not be NULL", fn);
    memset(out, 0, sizeof(*out));
    memset(e, 0, sizeof(*e));
    c->err[0] = 0;
    if (opt) *o = *opt;
    if (!t->present || t->n_mask_tokens < 2)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "%s: this model file has no interactive head (tracker_model.* tensors)", fn);
    if (!c->has_image) return sam3__fail(c, SAM3_ERR_NO_IMAGE, "%s: no image: call sam3_set_image first", fn);
    if (!o->points_per_side) o->points_per_side = d.points_per_side;
    if (o->pred_iou_thresh == 0) o->pred_iou_thresh = d.pred_iou_thresh;
    if (o->stability_score_thresh == 0) o->stability_score_thresh = d.stability_score_thresh;
    if (o->stability_score_offset == 0) o->stability_score_offset = d.stability_score_offset;
    if (o->box_nms_thresh == 0) o->box_nms_thresh = d.box_nms_thresh;
    if (o->mask_threshold == 0) o->mask_threshold = d.mask_threshold;
    if (o->points_per_side < 1 || o->points_per_side > SAM3__EVR_MAX_SIDE)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: points_per_side %d outside 1..%d", fn, o->points_per_side, SAM3__EVR_MAX_SIDE);
    if (!sam3__finite(o->pred_iou_thresh) || !sam3__finite(o->stability_score_thresh) || !sam3__finite(o->mask_threshold))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: a threshold is NaN or infinite", fn);
    if (!sam3__finite(o->stability_score_offset) || o->stability_score_offset < 0)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: stability_score_offset must be finite and >= 0", fn);
    if (!sam3__finite(o->box_nms_thresh) || o->box_nms_thresh < 0)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: box_nms_thresh must be finite and >= 0", fn);
    e->thr = sam3__mask_logit_threshold(o->mask_threshold);
    e->hi = e->thr + o->stability_score_offset;
    e->lo = e->thr - o->stability_score_offset;
    e->n_points = o->points_per_side * o->points_per_side;
    e->n_tok = t->n_mask_tokens - 1;
    e->s.g = t->grid;
    e->s.nm = t->n_mask_tokens;
    e->s.lp = (size_t)16 * t->grid * t->grid;
    c->t.interactive_neck = c->t.everything = 0;
    c->flops[SAM3__ST_INECK] = c->flops[SAM3__ST_EVERYTHING] = 0;
    return SAM3_OK;
}

/* The scratch every click reuses: resize tables, SAM 1's frame crops, the mask planes and the
   candidate list. */
static sam3_result sam3__everything_setup(sam3_ctx *c, sam3__evr *e) {
    const int W = c->img_w, H = c->img_h, g = e->s.g, S = c->m->trk.image, sam1 = c->m->arch == SAM3__ARCH_SAM1;
    size_t plane = (size_t)W * H, crop = sam1 ? (size_t)c->s1_h1 * c->s1_w1 : 0;
    e->ih = sam1 ? c->s1_h1 : 4 * g;
    e->iw = sam1 ? c->s1_w1 : 4 * g;
    e->ty = (sam3__lerp *)sam3__salloc(c, (size_t)H * sizeof(sam3__lerp));
    e->tx = (sam3__lerp *)sam3__salloc(c, (size_t)W * sizeof(sam3__lerp));
    e->uy = (sam3__lerp *)sam3__salloc(c, (size_t)S * sizeof(sam3__lerp));
    e->ux = (sam3__lerp *)sam3__salloc(c, (size_t)S * sizeof(sam3__lerp));
    e->planes = (uint8_t *)sam3__salloc(c, (size_t)e->n_tok * plane);
    e->crop = sam3__sallocf(c, SAM3__MAX((size_t)e->n_tok * crop, 1));
    e->cand = (sam3__evr_cand *)sam3__salloc(c, (size_t)e->n_points * e->n_tok * sizeof(sam3__evr_cand));
    if (!e->ty || !e->tx || !e->uy || !e->ux || !e->planes || !e->crop || !e->cand) return SAM3_ERR_OUT_OF_MEMORY;
    sam3__lerp_table(e->ih, H, e->ty);
    sam3__lerp_table(e->iw, W, e->tx);
    sam3__lerp_table(4 * g, S, e->uy);
    sam3__lerp_table(4 * g, S, e->ux);
    return SAM3_OK;
}

/* The decoder's start that no click changes (sam3__trk_img0), in the arena until the call ends. */
static sam3_result sam3__everything_img0(sam3_ctx *c) {
    const sam3__trk_cfg *t = &c->m->trk;
    const size_t Ng = (size_t)t->grid * t->grid;
    float *img0 = sam3__sallocf(c, 2 * Ng * t->D + 2 * Ng * (t->D / t->down)); /* (2 Ng D + 2 Ng di) */
    sam3_result rc;
    if (!img0) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__trk_img0(c, img0)) != SAM3_OK) return rc;
    c->trk_img0 = img0;
    return SAM3_OK;
}

/* Click i of the grid, in image pixels: SamImageProcessor's _build_point_grid (cell centres,
   row-major, x fastest) times the image size. */
static sam3_point sam3__everything_point(const sam3_ctx *c, int n, int i) {
    const double off = 1.0 / (2.0 * n), step = n > 1 ? (1.0 - 2.0 * off) / (n - 1) : 0;
    sam3_point p;
    p.x = (float)((off + step * (i % n)) * c->img_w);
    p.y = (float)((off + step * (i / n)) * c->img_h);
    p.label = 1;
    return p;
}

/* Click i through the prompt encoder and the decoder's two-way transformer (its start from
   c->trk_img0): every mask token's IoU in c->res_iou; then, where all is set or a multimask output
   passes the IoU filter (*masks = 1), the upscaling: every mask token's low-resolution logits in
   e->s.all. A click none of whose outputs can pass skips the upscaling, the larger part of the
   decoder. */
static sam3_result sam3__everything_decode(sam3_ctx *c, sam3__evr *e, int i, int all, int *masks) {
    const sam3__trk_cfg *t = &c->m->trk;
    const int sam1 = c->m->arch == SAM3__ARCH_SAM1, D = t->D, g = e->s.g, Ng = g * g;
    const float rx = sam1 ? (float)((double)c->s1_w1 / c->img_w) : (float)((double)t->image / c->img_w);
    const float ry = sam1 ? (float)((double)c->s1_h1 / c->img_h) : (float)((double)t->image / c->img_h);
    sam3_point pt = sam3__everything_point(c, e->o.points_per_side, i);
    sam3_points_prompt pp;
    float *sparse = sam3__sallocf(c, (size_t)(1 + 4) * D); /* (ns, D) */
    float *dense = sam3__sallocf(c, (size_t)D * Ng);       /* (D, g, g) */
    float *im = sam3__sallocf(c, (size_t)Ng * D);          /* (Ng, D) the image tokens */
    float *tk = sam3__sallocf(c, (size_t)(t->obj_token + 1 + t->n_mask_tokens + 1 + 4) * D); /* (n, D) the tokens */
    int ns, j;
    sam3_result rc;
    *masks = 0;
    if (!sparse || !dense || !im || !tk) return SAM3_ERR_OUT_OF_MEMORY;
    memset(&pp, 0, sizeof(pp));
    pp.points = &pt;
    pp.n_points = 1;
    if ((rc = sam3__trk_prompt_encoder(c, &pp, rx, ry, 0, sparse, &ns, dense)) != SAM3_OK) return rc;
    if ((rc = sam3__trk_twoway(c, c->trk_e, sparse, ns, dense, im, tk, c->res_iou, &e->s.obj)) != SAM3_OK) return rc;
    for (j = 0; j < e->n_tok; j++) all |= e->o.pred_iou_thresh <= 0 || c->res_iou[1 + j] > e->o.pred_iou_thresh;
    if (!all) return SAM3_OK;
    if (!(e->s.all = sam3__sallocf(c, (size_t)e->s.nm * e->s.lp))) return SAM3_ERR_OUT_OF_MEMORY; /* (nm, 4g, 4g) */
    *masks = 1;
    return sam3__trk_upscale(c, im, tk, e->s.all);
}

/* The sources of the full-size logits of the last click's multimask outputs tok[0..nt): the
   low-resolution logits (SAM 3, resized straight to the image) or SAM 1's frame crops. */
static void sam3__everything_sources(sam3_ctx *c, sam3__evr *e, const int *tok, int nt, const float **src) {
    int j;
    for (j = 0; j < nt; j++) {
        const float *lg = e->s.all + (size_t)(1 + tok[j]) * e->s.lp;
        src[j] = lg;
        if (c->m->arch == SAM3__ARCH_SAM1) {
            float *cr = e->crop + (size_t)j * e->ih * e->iw;
            sam3__sam1_frame_crop(c, lg, e->s.g, e->uy, e->ux, e->ih, e->iw, cr);
            src[j] = cr;
        }
    }
}

/* _batched_mask_to_box: the first and last set column and row of a (H, W) mask, 0s when empty. */
static sam3_box sam3__mask_box(const uint8_t *m, int W, int H) {
    int x0 = W, x1 = -1, y0 = H, y1 = -1, y;
    sam3_box b;
    for (y = 0; y < H; y++) {
        const uint8_t *r = m + (size_t)y * W;
        int a = 0, z = W - 1;
        while (a < W && !r[a]) a++;
        if (a == W) continue;
        while (!r[z]) z--;
        if (y0 == H) y0 = y;
        y1 = y;
        x0 = SAM3__MIN(x0, a);
        x1 = SAM3__MAX(x1, z);
    }
    if (y1 < 0) x0 = x1 = y0 = y1 = 0;
    b.x0 = (float)x0, b.y0 = (float)y0, b.x1 = (float)x1, b.y1 = (float)y1;
    return b;
}

/* Click i: the decoder, then for each multimask output the IoU filter, the stability of its
   full-size logits (the pixels above the two cuts) and its filter, and the mask's box and area at
   the threshold; the survivors are appended to e->cand. */
static sam3_result sam3__everything_click(sam3_ctx *c, sam3__evr *e, int i) {
    const int W = c->img_w, H = c->img_h;
    const size_t plane = (size_t)W * H;
    const float *src[SAM3__MAX_FFN], *sub[SAM3__MAX_FFN];
    int tok[SAM3__MAX_FFN], nt = 0, ns = 0, j;
    long ai[SAM3__MAX_FFN], au[SAM3__MAX_FFN], area[SAM3__MAX_FFN];
    float stab[SAM3__MAX_FFN];
    sam3_result rc;
    if ((rc = sam3__everything_decode(c, e, i, 0, &nt)) != SAM3_OK) return rc;
    nt = 0;
    for (j = 0; j < e->n_tok; j++) {
        e->n_all++;
        if (e->o.pred_iou_thresh <= 0 || c->res_iou[1 + j] > e->o.pred_iou_thresh) tok[nt++] = j;
    }
    if (!nt) return SAM3_OK;
    sam3__everything_sources(c, e, tok, nt, src);
    if ((rc = sam3__resize_threshold_n(c, nt, src, 0, e->ih, e->iw, e->ty, e->tx, H, W, e->hi, e->planes, ai)) != SAM3_OK ||
        (rc = sam3__resize_threshold_n(c, nt, src, 0, e->ih, e->iw, e->ty, e->tx, H, W, e->lo, e->planes, au)) != SAM3_OK)
        return rc;
    for (j = 0; j < nt; j++) { /* the reference's 0/0 is NaN, which no threshold passes: 0 here */
        stab[j] = au[j] ? (float)ai[j] / (float)au[j] : 0.0f;
        if (e->o.stability_score_thresh <= 0 || stab[j] > e->o.stability_score_thresh) {
            sub[ns] = src[j];
            tok[ns] = tok[j];
            stab[ns++] = stab[j];
        }
    }
    if (!ns) return SAM3_OK;
    if ((rc = sam3__resize_threshold_n(c, ns, sub, 0, e->ih, e->iw, e->ty, e->tx, H, W, e->thr, e->planes, area)) != SAM3_OK) return rc;
    for (j = 0; j < ns; j++) {
        sam3__evr_cand *k = &e->cand[e->n_cand++];
        k->iou = c->res_iou[1 + tok[j]];
        k->stab = stab[j];
        k->box = sam3__mask_box(e->planes + (size_t)j * plane, W, H);
        k->area = area[j];
        k->point = i;
        k->token = tok[j];
    }
    return SAM3_OK;
}

/* Candidates by descending predicted IoU (ties: grid order; a NaN, which only an unfiltered run
   keeps, last), a total order for qsort. */
static int sam3__evr_cmp(const void *a, const void *b) {
    const sam3__evr_cand *p = (const sam3__evr_cand *)a, *q = (const sam3__evr_cand *)b;
    const int pn = p->iou != p->iou, qn = q->iou != q->iou;
    if (pn != qn) return pn ? 1 : -1;
    if (!pn && p->iou != q->iou) return p->iou > q->iou ? -1 : 1;
    if (p->point != q->point) return p->point < q->point ? -1 : 1;
    return p->token < q->token ? -1 : p->token > q->token;
}

/* torchvision's nms (batched_nms with one class) on the candidates' boxes, as floats: sorted by
   score, a box goes when its IoU with a kept higher one is above the threshold (an IoU of two
   empty boxes, 0/0, never is). The kept ones are moved to the front; returns their count. */
static int sam3__everything_nms(sam3__evr *e, uint8_t *gone) {
    const double thr = e->o.box_nms_thresh;
    int i, j, nk = 0;
    qsort(e->cand, (size_t)e->n_cand, sizeof(sam3__evr_cand), sam3__evr_cmp);
    memset(gone, 0, (size_t)SAM3__MAX(e->n_cand, 1));
    for (i = 0; i < e->n_cand; i++) {
        const sam3_box a = e->cand[i].box;
        const float aa = (a.x1 - a.x0) * (a.y1 - a.y0);
        if (gone[i]) continue;
        e->cand[nk++] = e->cand[i];
        for (j = i + 1; j < e->n_cand; j++) {
            const sam3_box b = e->cand[j].box;
            const float w = SAM3__MAX(0.0f, SAM3__MIN(a.x1, b.x1) - SAM3__MAX(a.x0, b.x0));
            const float h = SAM3__MAX(0.0f, SAM3__MIN(a.y1, b.y1) - SAM3__MAX(a.y0, b.y0));
            const float inter = w * h, den = aa + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
            if (!gone[j] && den > 0 && (double)(inter / den) > thr) gone[j] = 1;
        }
    }
    return nk;
}

/* Kept mask j (candidate k) at the image size: its click decoded again (the same bits as the
   first time) and its output resized at the threshold into the context's result buffers (grown by
   the caller). */
static sam3_result sam3__everything_keep(sam3_ctx *c, sam3__evr *e, const sam3__evr_cand *k, int j) {
    const int W = c->img_w, H = c->img_h;
    const size_t plane = (size_t)W * H;
    sam3_everything_mask *r = &c->res_evr[j];
    const sam3__mark mk = sam3__mark_get(c);
    const float *src;
    long area;
    int made;
    sam3_result rc;
    if ((rc = sam3__everything_decode(c, e, k->point, 1, &made)) != SAM3_OK) return rc;
    sam3__everything_sources(c, e, &k->token, 1, &src);
    rc = sam3__resize_threshold_n(c, 1, &src, 0, e->ih, e->iw, e->ty, e->tx, H, W, e->thr, c->res_mask + (size_t)j * plane, &area);
    sam3__release(c, mk);
    if (rc != SAM3_OK) return rc;
    r->mask = c->res_mask + (size_t)j * plane;
    r->box = k->box;
    r->area = area;
    r->iou = k->iou;
    r->stability = k->stab;
    r->point = sam3__everything_point(c, e->o.points_per_side, k->point);
    r->click = k->point;
    r->token = k->token;
    r->crop = 0;
    return SAM3_OK;
}

/* The context's result buffers grown for n masks at the image's size. */
static sam3_result sam3__everything_grow(sam3_ctx *c, int n) {
    size_t bytes;
    if (!sam3__mul((size_t)SAM3__MAX(n, 1), (size_t)c->img_w * c->img_h, &bytes) ||
        !sam3__grow(c, (void **)&c->res_evr, &c->res_evr_cap, (size_t)SAM3__MAX(n, 1) * sizeof(sam3_everything_mask)) ||
        !sam3__grow(c, (void **)&c->res_mask, &c->res_mask_cap, bytes))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d masks of %dx%d", n, c->img_w, c->img_h);
    return SAM3_OK;
}

static sam3_result sam3__everything_jobs(sam3_ctx *c, sam3__evr *e, int n, int keep);
/* The nk kept masks at the image size (sam3__everything_keep), and the result. */
static sam3_result sam3__everything_output(sam3_ctx *c, sam3__evr *e, int nk, sam3_everything_result *out) {
    const int W = c->img_w, H = c->img_h;
    sam3_result rc;
    if ((rc = sam3__everything_grow(c, nk)) != SAM3_OK || (rc = sam3__everything_jobs(c, e, nk, 1)) != SAM3_OK) return rc;
    out->n_masks = nk;
    out->masks = c->res_evr;
    out->n_points = e->n_points;
    out->n_candidates = e->n_all;
    out->n_filtered = e->n_cand;
    out->width = W;
    out->height = H;
    out->n_crops = 1;
    return SAM3_OK;
}

/* A click worker of sam3__everything_par: a copy of the context with one thread and its own
   arena, and its own mask planes and candidate slots (one click's). */
typedef struct sam3__evr_worker {
    sam3_ctx c;
    sam3__evr e;
    sam3_result rc;
    int click; /* the click it stopped at (failed, or the abort seen), else -1 */
} sam3__evr_worker;

/* The workers' start: copies of c with one thread, whose arenas grow from the default allocator
   (the caller's is not asked from several threads at once, as kernel scratch inside a parallel
   region is not), and their scratch from c's arena. */
static sam3_result sam3__everything_workers(sam3_ctx *c, const sam3__evr *e, sam3__evr_worker *w, int nw) {
    const size_t plane = (size_t)c->img_w * c->img_h;
    const size_t crop = c->m->arch == SAM3__ARCH_SAM1 ? (size_t)c->s1_h1 * c->s1_w1 : 0;
    int t;
    for (t = 0; t < nw; t++) {
        sam3__evr_worker *k = &w[t];
        k->c = *c;
        k->c.nt = 1;
        k->c.own_thread = 1;
        k->c.a.alloc = sam3__default_alloc, k->c.a.free = sam3__default_free, k->c.a.user = NULL;
        k->c.arena = NULL, k->c.chunks = NULL;
        k->c.arena_cap = k->c.arena_top = k->c.live = k->c.high = 0;
        memset(k->c.flops, 0, sizeof(k->c.flops));
        k->c.err[0] = 0;
        k->e = *e;
        k->e.n_cand = k->e.n_all = 0;
        k->e.planes = (uint8_t *)sam3__salloc(c, (size_t)e->n_tok * plane);                 /* (n_tok, H, W) */
        k->e.crop = sam3__sallocf(c, SAM3__MAX((size_t)e->n_tok * crop, 1));                /* (n_tok, h1, w1) */
        k->e.cand = (sam3__evr_cand *)sam3__salloc(c, (size_t)e->n_tok * sizeof(sam3__evr_cand)); /* (n_tok) */
        k->rc = SAM3_OK;
        k->click = -1;
        if (!k->e.planes || !k->e.crop || !k->e.cand) return SAM3_ERR_OUT_OF_MEMORY;
    }
    return SAM3_OK;
}

/* One worker's share of n jobs: the next one not yet taken, until none is left or one worker
   stopped. A job is click i, its candidates appended to e's, or (keep) kept mask i. Only the first
   worker asks the caller's abort function, between clicks (it may not expect calls from several
   threads). */
static void sam3__everything_work(sam3_ctx *c, sam3__evr *e, sam3__evr_worker *k, int first, int n, int keep, int *next, int *stop) {
    for (;;) {
        int i, s;
        SAM3__OMP(atomic capture)
        i = (*next)++;
        SAM3__OMP(atomic read)
        s = *stop;
        if (s || i >= n) return;
        if (keep) {
            k->rc = sam3__everything_keep(&k->c, &k->e, &e->cand[i], i);
        } else if (first && sam3__aborted(c)) {
            k->rc = SAM3_ERR_ABORTED;
        } else if ((k->rc = sam3__everything_click(&k->c, &k->e, i)) == SAM3_OK) {
            SAM3__OMP(critical(sam3__evr_merge))
            {
                memcpy(e->cand + e->n_cand, k->e.cand, (size_t)k->e.n_cand * sizeof(sam3__evr_cand));
                e->n_cand += k->e.n_cand;
                e->n_all += k->e.n_all;
            }
            k->e.n_cand = k->e.n_all = 0;
        }
        sam3__release_all(&k->c);
        if (k->rc == SAM3_OK) k->rc = sam3__arena_settle(&k->c);
        if (k->rc != SAM3_OK) {
            k->click = i;
            SAM3__OMP(atomic write)
            *stop = 1;
            return;
        }
    }
}

/* n jobs (sam3__everything_work) on nw workers, one job a thread at a time: a click's products
   are small, and their threads' fork and join (each a wake-up of sleeping threads) cost more than
   the split saves. A click's values do not depend on the thread count, the candidates are sorted
   by a total order afterwards, and kept mask i has its own result slot, so which worker took
   which job changes nothing. The workers' arenas are not counted in sam3_ctx_memory_used. */
static sam3_result sam3__everything_par(sam3_ctx *c, sam3__evr *e, int nw, int n, int keep) {
    sam3__evr_worker *w = (sam3__evr_worker *)sam3__salloc(c, (size_t)nw * sizeof(sam3__evr_worker)); /* (nw) */
    sam3__evr_worker *bad = NULL;
    int next = 0, stop = 0, t, s;
    sam3_result rc;
    if (!w) return SAM3_ERR_OUT_OF_MEMORY;
    memset(w, 0, (size_t)nw * sizeof(*w));
    rc = sam3__everything_workers(c, e, w, nw);
    if (rc == SAM3_OK && !keep && sam3__aborted(c)) rc = sam3__fail(c, SAM3_ERR_ABORTED, "aborted at click 0 of %d", e->n_points);
    if (rc == SAM3_OK) {
        SAM3__OMP(parallel num_threads(nw))
        {
            int id = 0;
#ifdef _OPENMP
            id = omp_get_thread_num();
#endif
            sam3__everything_work(c, e, &w[id], id == 0, n, keep, &next, &stop);
        }
    }
    for (t = 0; t < nw; t++) {
        sam3__evr_worker *k = &w[t];
        for (s = 0; s < SAM3__ST_N; s++) c->flops[s] += k->c.flops[s];
        sam3__release_all(&k->c);
        sam3__afree(&k->c.a, k->c.arena);
        if (k->click >= 0 && (!bad || k->click < bad->click)) bad = k;
    }
    if (rc != SAM3_OK || !bad) return rc;
    if (bad->rc == SAM3_ERR_ABORTED) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted at click %d of %d", bad->click, e->n_points);
    if (bad->c.err[0]) memcpy(c->err, bad->c.err, sizeof(c->err));
    return bad->rc;
}

/* The n clicks (sam3__everything_click) or, with keep, the n kept masks (sam3__everything_keep):
   on workers (sam3__everything_par) where the context has several threads (and no tap, whose
   function may not expect calls from several threads), else one after another with the threads
   inside each product. */
static sam3_result sam3__everything_jobs(sam3_ctx *c, sam3__evr *e, int n, int keep) {
    sam3_result rc = SAM3_OK;
    int i, nw = c->nt;
#ifdef _OPENMP
    if (omp_in_parallel()) nw = 1;
#else
    nw = 1;
#endif
    if (nw > 1 && !c->opt.tap && n >= 2 * nw) return sam3__everything_par(c, e, nw, n, keep);
    for (i = 0; rc == SAM3_OK && i < n; i++) {
        const sam3__mark mk = sam3__mark_get(c);
        if (!keep && sam3__aborted(c)) rc = sam3__fail(c, SAM3_ERR_ABORTED, "aborted at click %d of %d", i, n);
        if (rc == SAM3_OK) rc = keep ? sam3__everything_keep(c, e, &e->cand[i], i) : sam3__everything_click(c, e, i);
        sam3__release(c, mk);
    }
    return rc;
}

/* filter_masks' _is_box_near_crop_edge: drops the candidates whose box, moved into the whole
   image, lies within 20 pixels of a side of the crop that is not within 20 pixels of the image's
   (an empty mask's box is the crop's corner). Nothing goes when the crop is the whole image. */
static void sam3__everything_edge(sam3__evr *e) {
    const float crop[4] = {(float)e->cx0, (float)e->cy0, (float)e->cx1, (float)e->cy1};
    const float img[4] = {0.0f, 0.0f, (float)e->fw, (float)e->fh};
    int i, k, n = 0;
    for (i = 0; i < e->n_cand; i++) {
        const sam3_box b = e->cand[i].box;
        const float v[4] = {b.x0 + (float)e->cx0, b.y0 + (float)e->cy0, b.x1 + (float)e->cx0, b.y1 + (float)e->cy0};
        int at_edge = 0; /* (not "near": a macro of windows.h) */
        for (k = 0; k < 4; k++) at_edge |= fabsf(v[k] - crop[k]) <= SAM3__EVR_EDGE && !(fabsf(v[k] - img[k]) <= SAM3__EVR_EDGE);
        if (!at_edge) e->cand[n++] = e->cand[i];
    }
    e->n_cand = n;
}

/* One grid pass on the image this context holds: the head's neck, every click through the
   decoder and the filters, the crop-edge filter where the image is crop (x0, y0, x1, y1) of a
   whole image fw x fh (NULL: the image is the whole), NMS, then the kept masks. */
static sam3_result sam3__everything_pass(sam3_ctx *c, const sam3_everything_options *opt, const int *crop, int fw, int fh,
                                         sam3_everything_result *out) {
    sam3__evr e;
    uint8_t *gone;
    sam3_result rc;
    int nk = 0, n_filtered;
    if ((rc = sam3__everything_check(c, opt, out, &e)) != SAM3_OK) return rc;
    e.cx0 = crop ? crop[0] : 0;
    e.cy0 = crop ? crop[1] : 0;
    e.cx1 = crop ? crop[2] : c->img_w;
    e.cy1 = crop ? crop[3] : c->img_h;
    e.fw = crop ? fw : c->img_w;
    e.fh = crop ? fh : c->img_h;
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    rc = sam3__points_neck(c);
    e.t0 = sam3__stage_begin(c, SAM3__ST_EVERYTHING);
    if (rc == SAM3_OK) rc = sam3__everything_setup(c, &e);
    if (rc == SAM3_OK) rc = sam3__everything_img0(c);
    if (rc == SAM3_OK) rc = sam3__everything_jobs(c, &e, e.n_points, 0);
    n_filtered = e.n_cand;
    if (rc == SAM3_OK) sam3__everything_edge(&e);
    gone = rc == SAM3_OK ? (uint8_t *)sam3__salloc(c, (size_t)SAM3__MAX(e.n_cand, 1)) : NULL;
    if (rc == SAM3_OK && !gone) rc = SAM3_ERR_OUT_OF_MEMORY;
    if (rc == SAM3_OK) nk = sam3__everything_nms(&e, gone);
    if (rc == SAM3_OK) rc = sam3__everything_output(c, &e, nk, out);
    if (rc == SAM3_OK) out->n_filtered = n_filtered;
    c->trk_img0 = NULL;
    c->t.everything = sam3__stage_end(c, e.t0);
    return sam3__end(c, rc);
}

/* ---- segment everything with crop layers and small-region removal (generate_crop_boxes' crops,
   each through the grid pass above; SamAutomaticMaskGenerator.postprocess_small_regions) ---- */
/* A kept mask of one crop: its bits packed at the crop's size (row-major, most significant bit
   first) in the call's store. */
typedef struct sam3__evr_keep {
    sam3_everything_mask m; /* box and point in the whole image; mask NULL until the output */
    int cx, cy, cw, ch;     /* where its bits lie in the image */
    size_t bits;            /* their byte offset in the store */
    int seq;                /* its place in the crops' order (a total order on ties) */
    float score;            /* the last NMS's score */
} sam3__evr_keep;

/* One sam3_segment_everything call with crop layers or small-region removal. */
typedef struct sam3__evr_crops {
    sam3_everything_options o; /* the caller's, the crop fields' defaults where left 0 */
    int bpp, n_crops;
    int *box;                  /* (n_crops, 4) x0, y0, x1, y1 (exclusive) in the image */
    int *side;                 /* (n_crops) the grid's points a side */
    sam3__evr_keep *keep;      /* (n_keep) */
    size_t n_keep, cap_keep;   /* cap in bytes */
    uint8_t *store;            /* the kept masks' packed bits */
    size_t n_store, cap_store; /* bytes */
    int n_points, n_all, n_filtered;
    double ms;
} sam3__evr_crops;

/* Makes *p hold at least `need` bytes, keeping its first `used` (at least doubling). */
static int sam3__grow_keep(sam3_ctx *c, void **p, size_t *cap, size_t used, size_t need) {
    void *q;
    size_t n = need;
    if (need <= *cap && *p) return 1;
    if (*cap <= ((size_t)-1) / 2 && 2 * *cap > n) n = 2 * *cap;
    if (!(q = sam3__aalloc(&c->a, n))) return 0;
    if (used) memcpy(q, *p, used);
    sam3__afree(&c->a, *p);
    *p = q;
    *cap = n;
    return 1;
}

/* _generate_per_layer_crops: the whole image, then for layer i = 1..layers a k x k cut (k = 2^i)
   whose crops overlap by int(ratio * short side * 2 / k) pixels, columns outer (itertools.product
   of the left and top edges), into box (n, 4) and side (n): points_per_side / downscale^i,
   truncated as int(). Returns the count, or -1 (an empty crop: the image is too small for the
   layers) or -2 (a layer's grid under one point a side), with the layer in *bad. */
static int sam3__everything_crop_boxes(int W, int H, int layers, double ratio, int pps, int down, int *box, int *side, int *bad) {
    const int s = SAM3__MIN(W, H);
    int n = 1, i, a, b;
    double f = 1;
    box[0] = box[1] = 0;
    box[2] = W;
    box[3] = H;
    side[0] = pps;
    for (i = 0; i < layers; i++) {
        const int k = 1 << (i + 1);
        const int ov = (int)(ratio * s * (2.0 / k));
        const int cw = (int)ceil((double)(ov * (k - 1) + W) / k), ch = (int)ceil((double)(ov * (k - 1) + H) / k);
        f *= down;
        *bad = i + 1;
        if ((int)(pps / f) < 1) return -2;
        for (a = 0; a < k; a++)
            for (b = 0; b < k; b++, n++) {
                int *q = box + 4 * n;
                q[0] = (cw - ov) * a;
                q[1] = (ch - ov) * b;
                q[2] = SAM3__MIN(q[0] + cw, W);
                q[3] = SAM3__MIN(q[1] + ch, H);
                side[n] = (int)(pps / f);
                if (q[2] <= q[0] || q[3] <= q[1]) return -1;
            }
    }
    return n;
}

/* The crop fields' checks and defaults into *o (a copy of opt), run on every call. */
static sam3_result sam3__everything_crop_opts(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_options *o) {
    const char *fn = "sam3_segment_everything";
    *o = *opt;
    if (o->crop_overlap_ratio == 0) o->crop_overlap_ratio = 512.0 / 1500.0;
    if (!o->crop_points_downscale) o->crop_points_downscale = 1;
    if (o->crop_nms_thresh == 0) o->crop_nms_thresh = 0.7f;
    if (o->crop_layers < 0 || o->crop_layers > SAM3_EVERYTHING_MAX_CROP_LAYERS)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop_layers %d outside 0..%d", fn, o->crop_layers, SAM3_EVERYTHING_MAX_CROP_LAYERS);
    if (!(o->crop_overlap_ratio >= 0 && o->crop_overlap_ratio < 1))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop_overlap_ratio %g outside [0, 1)", fn, o->crop_overlap_ratio);
    if (o->crop_points_downscale < 1)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop_points_downscale %d is below 1", fn, o->crop_points_downscale);
    if (!sam3__finite(o->crop_nms_thresh) || o->crop_nms_thresh < 0)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop_nms_thresh must be finite and >= 0", fn);
    if (o->min_region_area < 0)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: min_region_area %lld is negative", fn, (long long)o->min_region_area);
    return SAM3_OK;
}

/* The crop fields' checks, the pixels and the crop boxes (in the context's allocator: freed by
   sam3__everything_crops). */
static sam3_result sam3__everything_crop_check(sam3_ctx *c, const sam3_everything_options *opt, sam3__evr_crops *k) {
    const char *fn = "sam3_segment_everything";
    sam3_everything_options *o = &k->o;
    int n = 1, i, bad = 0, pps;
    sam3_result rc;
    memset(k, 0, sizeof(*k));
    if ((rc = sam3__everything_crop_opts(c, opt, o)) != SAM3_OK) return rc;
    if (!c->has_image) return sam3__fail(c, SAM3_ERR_NO_IMAGE, "%s: no image: call sam3_set_image first", fn);
    k->bpp = o->format == SAM3_RGB8 ? 3 : o->format == SAM3_RGBA8 ? 4 : o->format == SAM3_GRAY8 ? 1 : 0;
    if (o->crop_layers > 0 && (!o->pixels || !k->bpp || o->stride < c->img_w * k->bpp))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop layers need the image's pixels (%dx%d): pixels %s, format %d, stride %d", fn,
                          c->img_w, c->img_h, o->pixels ? "set" : "NULL", (int)o->format, o->stride);
    for (i = 1; i <= o->crop_layers; i++) n += 1 << (2 * i);
    k->box = (int *)sam3__aalloc(&c->a, (size_t)n * 4 * sizeof(int));
    k->side = (int *)sam3__aalloc(&c->a, (size_t)n * sizeof(int));
    if (!k->box || !k->side) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "%s: out of memory for %d crops", fn, n);
    pps = o->points_per_side ? o->points_per_side : 32;
    k->n_crops = sam3__everything_crop_boxes(c->img_w, c->img_h, o->crop_layers, o->crop_overlap_ratio, pps, o->crop_points_downscale, k->box,
                                             k->side, &bad);
    if (k->n_crops == -1)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop layer %d leaves an empty crop of the %dx%d image: use fewer layers", fn, bad,
                          c->img_w, c->img_h);
    if (k->n_crops < 0)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: crop layer %d's grid: %d / %d^%d is under one point a side", fn, bad, pps,
                          o->crop_points_downscale, bad);
    return SAM3_OK;
}

/* Appends pass result r of crop j (masks at the crop's size) to the store: bits packed, box and
   point moved into the image. */
static sam3_result sam3__everything_crop_keep(sam3_ctx *c, sam3__evr_crops *k, int j, const sam3_everything_result *r) {
    const int *b = k->box + 4 * j, cw = b[2] - b[0], ch = b[3] - b[1];
    const size_t per = ((size_t)cw * ch + 7) / 8;
    int i;
    if (!sam3__grow_keep(c, (void **)&k->keep, &k->cap_keep, k->n_keep * sizeof(sam3__evr_keep), (k->n_keep + (size_t)r->n_masks) * sizeof(sam3__evr_keep)) ||
        !sam3__grow_keep(c, (void **)&k->store, &k->cap_store, k->n_store, k->n_store + per * (size_t)r->n_masks))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for crop %d's %d masks", j, r->n_masks);
    for (i = 0; i < r->n_masks; i++) {
        sam3__evr_keep *q = &k->keep[k->n_keep];
        uint8_t *dst = k->store + k->n_store;
        size_t p;
        memset(dst, 0, per);
        for (p = 0; p < (size_t)cw * ch; p++)
            if (r->masks[i].mask[p]) dst[p >> 3] |= (uint8_t)(0x80u >> (p & 7));
        q->m = r->masks[i];
        q->m.mask = NULL;
        q->m.box.x0 += (float)b[0], q->m.box.x1 += (float)b[0];
        q->m.box.y0 += (float)b[1], q->m.box.y1 += (float)b[1];
        q->m.point.x += (float)b[0], q->m.point.y += (float)b[1];
        q->m.crop = j;
        q->cx = b[0], q->cy = b[1], q->cw = cw, q->ch = ch;
        q->bits = k->n_store;
        q->seq = (int)k->n_keep++;
        q->score = r->masks[i].iou;
        k->n_store += per;
    }
    k->n_points += r->n_points;
    k->n_all += r->n_candidates;
    k->n_filtered += r->n_filtered;
    return SAM3_OK;
}

/* Crop j through the grid pass: the whole image (j = 0) on this context's cached encoding, any
   other crop encoded first on ic from the caller's pixels; its kept masks to the store. */
static sam3_result sam3__everything_crop_run(sam3_ctx *c, sam3__evr_crops *k, sam3_ctx *ic, int j) {
    const int *b = k->box + 4 * j;
    sam3_everything_options o = k->o;
    sam3_everything_result r;
    sam3_ctx *x = j ? ic : c;
    sam3_result rc = SAM3_OK;
    o.points_per_side = k->side[j];
    if (j) {
        const uint8_t *px = k->o.pixels + (size_t)b[1] * (size_t)k->o.stride + (size_t)b[0] * k->bpp;
        rc = sam3__image_encode(ic, "sam3_segment_everything", px, b[2] - b[0], b[3] - b[1], k->o.stride, k->o.format, 1);
        k->ms += ic->t.preprocess + ic->t.vision_trunk + ic->t.vision_neck;
    }
    if (rc == SAM3_OK) rc = sam3__everything_pass(x, &o, b, c->img_w, c->img_h, &r);
    k->ms += x->t.interactive_neck + x->t.everything;
    if (rc != SAM3_OK && j) return sam3__fail(c, rc, "crop %d (%d,%d)-(%d,%d): %.400s", j, b[0], b[1], b[2], b[3], ic->err);
    return rc != SAM3_OK ? rc : sam3__everything_crop_keep(c, k, j, &r);
}

/* Kept masks by descending score (a NaN last; ties: the crops' order), a total order for qsort. */
static int sam3__evr_keep_cmp(const void *a, const void *b) {
    const sam3__evr_keep *p = (const sam3__evr_keep *)a, *q = (const sam3__evr_keep *)b;
    const int pn = p->score != p->score, qn = q->score != q->score;
    if (pn != qn) return pn ? 1 : -1;
    if (!pn && p->score != q->score) return p->score > q->score ? -1 : 1;
    return p->seq < q->seq ? -1 : p->seq > q->seq;
}

/* torchvision's nms on the kept masks' boxes by their score (as sam3__everything_nms): sorted,
   the survivors moved to the front; returns their count. gone: (n_keep) scratch. */
static size_t sam3__everything_keep_nms(sam3__evr_crops *k, double thr, uint8_t *gone) {
    size_t i, j, nk = 0;
    qsort(k->keep, k->n_keep, sizeof(sam3__evr_keep), sam3__evr_keep_cmp);
    memset(gone, 0, SAM3__MAX(k->n_keep, 1));
    for (i = 0; i < k->n_keep; i++) {
        const sam3_box a = k->keep[i].m.box;
        const float aa = (a.x1 - a.x0) * (a.y1 - a.y0);
        if (gone[i]) continue;
        k->keep[nk++] = k->keep[i];
        for (j = i + 1; j < k->n_keep; j++) {
            const sam3_box b = k->keep[j].m.box;
            const float w = SAM3__MAX(0.0f, SAM3__MIN(a.x1, b.x1) - SAM3__MAX(a.x0, b.x0));
            const float h = SAM3__MAX(0.0f, SAM3__MIN(a.y1, b.y1) - SAM3__MAX(a.y0, b.y0));
            const float inter = w * h, den = aa + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
            if (!gone[j] && den > 0 && (double)(inter / den) > thr) gone[j] = 1;
        }
    }
    k->n_keep = nk;
    return nk;
}

/* Kept mask q's bits into plane (H, W) of the image (0 outside its crop). */
static void sam3__everything_unpack(const sam3__evr_crops *k, const sam3__evr_keep *q, int W, int H, uint8_t *plane) {
    const uint8_t *bits = k->store + q->bits;
    int y, x;
    memset(plane, 0, (size_t)W * H);
    for (y = 0; y < q->ch; y++)
        for (x = 0; x < q->cw; x++) {
            const size_t p = (size_t)y * q->cw + x;
            plane[(size_t)(q->cy + y) * W + q->cx + x] = (uint8_t)((bits[p >> 3] >> (7 - (p & 7))) & 1);
        }
}

/* cv2.connectedComponentsWithStats(m == v, 8) less its background: the 8-connected components of
   the pixels of plane m (H, W) that are v (0 or 1), labelled 1..n in the raster order of their
   first pixel in lab (H W) (0 elsewhere), their pixel counts in size[1..n]; q (H W) scratch.
   Returns n. */
static int sam3__evr_label(const uint8_t *m, int W, int H, int v, int32_t *lab, int32_t *q, int64_t *size) {
    const size_t P = (size_t)W * H;
    size_t i;
    int n = 0;
    memset(lab, 0, P * sizeof(int32_t));
    for (i = 0; i < P; i++) {
        size_t head = 0, tail = 0;
        if ((m[i] != 0) != v || lab[i]) continue;
        lab[i] = ++n;
        size[n] = 0;
        q[tail++] = (int32_t)i;
        while (head < tail) {
            const size_t p = (size_t)q[head++];
            const int y = (int)(p / (size_t)W), x = (int)(p % (size_t)W);
            int dy, dx;
            size[n]++;
            for (dy = -1; dy <= 1; dy++)
                for (dx = -1; dx <= 1; dx++) {
                    const int yy = y + dy, xx = x + dx;
                    size_t t;
                    if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                    t = (size_t)yy * W + xx;
                    if ((m[t] != 0) == v && !lab[t]) {
                        lab[t] = n;
                        q[tail++] = (int32_t)t;
                    }
                }
        }
    }
    return n;
}

/* segment_anything's remove_small_regions on plane m (H, W): v = 0 ("holes") fills the
   background's components under `area` pixels; v = 1 ("islands") keeps the mask's components of at
   least `area` pixels, or the largest (the first in label order among equals) when none is.
   Returns whether any component was under `area` (the reference's `changed`). */
static int sam3__evr_small(uint8_t *m, int W, int H, int v, int64_t area, int32_t *lab, int32_t *q, int64_t *size) {
    const size_t P = (size_t)W * H;
    const int n = sam3__evr_label(m, W, H, v, lab, q, size);
    int i, small = 0, best = 1;
    size_t p;
    for (i = 1; i <= n; i++) {
        small += size[i] < area;
        if (size[i] > size[best]) best = i;
    }
    if (!small) return 0;
    for (p = 0; p < P; p++) {
        const int l = lab[p];
        if (!v) {
            if (l && size[l] < area) m[p] = 1;
        } else if (l) {
            m[p] = (uint8_t)(small < n ? size[l] >= area : l == best);
        }
    }
    return 1;
}

/* SamAutomaticMaskGenerator.postprocess_small_regions on the kept masks: holes then islands; a
   changed mask is stored again at the image's size with its box and area recomputed and score 0,
   the others score 1; then box NMS at max(box_nms_thresh, crop_nms_thresh), which keeps the
   unchanged ones first (each group in its order). W x H: the image. In the arena: the caller
   brackets it. */
static sam3_result sam3__everything_small(sam3_ctx *c, sam3__evr_crops *k, int W, int H) {
    const size_t P = (size_t)W * H, per = (P + 7) / 8;
    const double thr = SAM3__MAX(k->o.box_nms_thresh == 0 ? 0.7 : (double)k->o.box_nms_thresh, (double)k->o.crop_nms_thresh);
    uint8_t *m = (uint8_t *)sam3__salloc(c, P), *gone = (uint8_t *)sam3__salloc(c, SAM3__MAX(k->n_keep, 1)); /* (H, W), (n_keep) */
    int32_t *lab = (int32_t *)sam3__salloc(c, P * sizeof(int32_t)), *q = (int32_t *)sam3__salloc(c, P * sizeof(int32_t)); /* (H W) each */
    int64_t *size = (int64_t *)sam3__salloc(c, (P + 1) * sizeof(int64_t)); /* (H W + 1) */
    size_t i, p;
    if (!m || !gone || !lab || !q || !size) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for small-region removal at %dx%d", W, H);
    for (i = 0; i < k->n_keep; i++) {
        sam3__evr_keep *e = &k->keep[i];
        int changed;
        sam3__everything_unpack(k, e, W, H, m);
        changed = sam3__evr_small(m, W, H, 0, k->o.min_region_area, lab, q, size);
        changed |= sam3__evr_small(m, W, H, 1, k->o.min_region_area, lab, q, size);
        e->score = changed ? 0.0f : 1.0f;
        e->seq = (int)i;
        if (!changed) continue;
        if (!sam3__grow_keep(c, (void **)&k->store, &k->cap_store, k->n_store, k->n_store + per))
            return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for small-region removal's masks");
        memset(k->store + k->n_store, 0, per);
        e->m.area = 0;
        for (p = 0; p < P; p++)
            if (m[p]) k->store[k->n_store + (p >> 3)] |= (uint8_t)(0x80u >> (p & 7)), e->m.area++;
        e->m.box = sam3__mask_box(m, W, H);
        e->cx = e->cy = 0, e->cw = W, e->ch = H;
        e->bits = k->n_store;
        k->n_store += per;
    }
    sam3__everything_keep_nms(k, thr, gone);
    return SAM3_OK;
}

/* The kept masks at the image's size into the context's result buffers. */
static sam3_result sam3__everything_crops_output(sam3_ctx *c, sam3__evr_crops *k, sam3_everything_result *out) {
    const int W = c->img_w, H = c->img_h, n = (int)k->n_keep;
    const size_t plane = (size_t)W * H;
    sam3_result rc;
    int j;
    if ((rc = sam3__everything_grow(c, n)) != SAM3_OK) return rc;
    for (j = 0; j < n; j++) {
        uint8_t *dst = c->res_mask + (size_t)j * plane;
        sam3__everything_unpack(k, &k->keep[j], W, H, dst);
        c->res_evr[j] = k->keep[j].m;
        c->res_evr[j].mask = dst;
    }
    out->n_masks = n;
    out->masks = c->res_evr;
    out->n_points = k->n_points;
    out->n_candidates = k->n_all;
    out->n_filtered = k->n_filtered;
    out->width = W;
    out->height = H;
    out->n_crops = k->n_crops;
    return SAM3_OK;
}

/* sam3_segment_everything with crop layers or small-region removal: every crop's grid pass (the
   crops past the whole image on a second context, so that this one keeps its image), box NMS
   across crops, small-region removal, the kept masks. */
static sam3_result sam3__everything_crops(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_result *out) {
    sam3__evr_crops k;
    sam3_ctx *ic = NULL;
    uint8_t *gone;
    sam3_result rc;
    double t0;
    int j;
    if (!out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_segment_everything: out must not be NULL");
    memset(out, 0, sizeof(*out));
    c->err[0] = 0;
    rc = sam3__everything_crop_check(c, opt, &k);
    for (j = 0; rc == SAM3_OK && j < k.n_crops; j++) {
        if (j == 1 && (rc = sam3_ctx_new(c->m, &c->opt, &ic)) != SAM3_OK) {
            sam3__fail(c, rc, "sam3_segment_everything: no second context for the crops (%s)", sam3_result_string(rc));
            break;
        }
        if (j == 1) ic->bka = c->bka, ic->bkc = c->bkc, ic->att_min = c->att_min, ic->wino_tiles = c->wino_tiles;
        rc = sam3__everything_crop_run(c, &k, ic, j);
    }
    sam3_ctx_free(ic);
    if (rc == SAM3_OK) rc = sam3__begin(c);
    t0 = sam3__stage_begin(c, SAM3__ST_EVERYTHING);
    gone = rc == SAM3_OK ? (uint8_t *)sam3__salloc(c, SAM3__MAX(k.n_keep, 1)) : NULL;
    if (rc == SAM3_OK && !gone) rc = SAM3_ERR_OUT_OF_MEMORY;
    if (rc == SAM3_OK && k.n_crops > 1) sam3__everything_keep_nms(&k, k.o.crop_nms_thresh, gone);
    if (rc == SAM3_OK && k.o.min_region_area > 0) rc = sam3__everything_small(c, &k, c->img_w, c->img_h);
    if (rc == SAM3_OK) rc = sam3__everything_crops_output(c, &k, out);
    c->t.everything = k.ms + sam3__stage_end(c, t0);
    sam3__afree(&c->a, k.box);
    sam3__afree(&c->a, k.side);
    sam3__afree(&c->a, k.keep);
    sam3__afree(&c->a, k.store);
    if (rc != SAM3_OK) memset(out, 0, sizeof(*out));
    return sam3__end(c, rc);
}

/* sam3_segment_everything: one grid pass on the cached image, or the crop loop around it. */
static sam3_result sam3__segment_everything_run(sam3_ctx *c, const sam3_everything_options *opt, sam3_everything_result *out) {
    sam3_everything_options o;
    sam3_result rc;
    if (!opt) return sam3__everything_pass(c, opt, NULL, 0, 0, out);
    if ((rc = sam3__everything_crop_opts(c, opt, &o)) != SAM3_OK) {
        if (out) memset(out, 0, sizeof(*out));
        return rc;
    }
    if (!opt->crop_layers && !opt->min_region_area) return sam3__everything_pass(c, opt, NULL, 0, 0, out);
    return sam3__everything_crops(c, opt, out);
}


/* ==== sam3: video tracker (Sam3TrackerVideoModel in streaming mode) ==== */
/* What one frame left of one object: its pointer, score and (while a later frame can still read
   it) its memory. */
typedef struct sam3__trk_entry {
    int frame;     /* -1: empty */
    float score;   /* object score logit */
    float *ptr;    /* (D) object pointer */
    uint16_t *mem; /* (N, mem_dim) bf16 memory, or NULL once no later frame can read it */
} sam3__trk_entry;

typedef struct sam3__trk_obj {
    int id;
    sam3__trk_entry *cond; /* (n_cond) conditioning frames (prompted), in the order given */
    int n_cond, cap_cond;
    sam3__trk_entry *ptrs; /* (n_ptr_ring) last tracked frames' pointers, slot frame % n_ptr_ring */
    sam3__trk_entry *mems; /* (n_mem_ring) last tracked frames' memories, slot frame % n_mem_ring */
    /* the prompt for the next frame */
    int pending;
    sam3_point *points; /* (SAM3_MAX_POINTS) */
    int n_points, has_box;
    sam3_box box;
    uint8_t *mask;
    int mask_w, mask_h;
    int mask_soft; /* the concept tracker's detector mask: upsampled without the processor's >= 0.5 */
} sam3__trk_obj;

struct sam3_tracker {
    sam3_ctx *c;
    sam3_tracker_options opt;
    int next;                /* frames pushed so far */
    /* The pointer window (max_object_pointers_to_use) grows with the stream: min(next + 1, max_ptr)
       instead of max_ptr. Sam3VideoModel's streaming mode calls its tracker without a frame, so the
       tracker takes the session's frame count (the frames given so far) for a video's length and
       uses min(num_frames, max_object_pointers_in_encoder) pointers; a pointer's temporal offset
       is divided by that window - 1 (1 on frame 1, 2 on frame 2, ...). Sam3TrackerVideoModel fed
       frame by frame (streaming=True) uses max_ptr from the start. */
    int ptr_window_grows;
    sam3__trk_obj *obj;      /* (n_obj), SAM3_MAX_TRACKED_OBJECTS allocated */
    int n_obj;
    int n_ptr_ring, n_mem_ring; /* max_ptr - 1 and num_maskmem - 1 (at least 1 slot each) */
    float *rope;             /* (N, hd/2, 2) memory attention RoPE */
    float *pos;              /* (N, D) sine position of the 1x map */
    float *mem_pos;          /* (N, mem_dim) sine position of a memory */
    float *ma_x1;            /* during a push, or NULL: the memory attention's stream after its first
                                self-attention (N, D), the same for every object (arena scratch) */
    int ma_x1_ok;            /* ma_x1 holds this frame's */
    size_t bytes;            /* held, beyond the result buffers */
    sam3_tracker_object *res;  /* (SAM3_MAX_TRACKED_OBJECTS) */
    float *res_low;
    uint8_t *res_mask;
    size_t res_low_cap, res_mask_cap;
};

static void *sam3__trk_alloc(sam3_tracker *t, size_t bytes) {
    void *p = sam3__aalloc(&t->c->a, bytes);
    if (p) t->bytes += bytes;
    return p;
}
static void sam3__trk_free(sam3_tracker *t, void *p, size_t bytes) {
    if (!p) return;
    sam3__afree(&t->c->a, p);
    t->bytes -= bytes;
}

/* The next conditioning entry of o, its list grown when full (4, then doubled), with its pointer
   (pb bytes) and memory (mb bytes) allocated; either may be NULL when out of memory (the caller
   frees what was had). NULL when the list cannot grow. For the video and the concept tracker. */
static sam3__trk_entry *sam3__trk_cond_add(sam3_tracker *t, sam3__trk_obj *o, size_t pb, size_t mb) {
    sam3__trk_entry *e;
    if (o->n_cond == o->cap_cond) {
        const int cap = o->cap_cond ? 2 * o->cap_cond : 4;
        sam3__trk_entry *ne = (sam3__trk_entry *)sam3__trk_alloc(t, (size_t)cap * sizeof(sam3__trk_entry));
        if (!ne) return NULL;
        if (o->n_cond) memcpy(ne, o->cond, (size_t)o->n_cond * sizeof(sam3__trk_entry));
        sam3__trk_free(t, o->cond, (size_t)o->cap_cond * sizeof(sam3__trk_entry));
        o->cond = ne;
        o->cap_cond = cap;
    }
    e = &o->cond[o->n_cond];
    e->ptr = (float *)sam3__trk_alloc(t, pb);
    e->mem = (uint16_t *)sam3__trk_alloc(t, mb);
    return e;
}

static void sam3__trk_obj_free(sam3_tracker *t, sam3__trk_obj *o) {
    const sam3_model *m = t->c->m;
    const size_t pb = (size_t)m->trk.D * sizeof(float), mb = (size_t)m->trk.grid * m->trk.grid * m->vid.mem_dim * sizeof(uint16_t);
    int i;
    for (i = 0; i < o->n_cond; i++) {
        sam3__trk_free(t, o->cond[i].ptr, pb);
        sam3__trk_free(t, o->cond[i].mem, mb);
    }
    sam3__trk_free(t, o->cond, (size_t)o->cap_cond * sizeof(sam3__trk_entry));
    for (i = 0; o->ptrs && i < t->n_ptr_ring; i++) sam3__trk_free(t, o->ptrs[i].ptr, pb);
    for (i = 0; o->mems && i < t->n_mem_ring; i++) sam3__trk_free(t, o->mems[i].mem, mb);
    sam3__trk_free(t, o->ptrs, (size_t)t->n_ptr_ring * sizeof(sam3__trk_entry));
    sam3__trk_free(t, o->mems, (size_t)t->n_mem_ring * sizeof(sam3__trk_entry));
    sam3__trk_free(t, o->points, (size_t)SAM3_MAX_POINTS * sizeof(sam3_point));
    sam3__trk_free(t, o->mask, (size_t)o->mask_w * o->mask_h);
    memset(o, 0, sizeof(*o));
}

/* A new object's rings, every slot's buffers allocated up front so that committing a frame
   cannot fail. */
static int sam3__trk_obj_init(sam3_tracker *t, sam3__trk_obj *o, int id) {
    const sam3_model *m = t->c->m;
    const size_t pb = (size_t)m->trk.D * sizeof(float), mb = (size_t)m->trk.grid * m->trk.grid * m->vid.mem_dim * sizeof(uint16_t);
    int i, ok;
    memset(o, 0, sizeof(*o));
    o->id = id;
    o->ptrs = (sam3__trk_entry *)sam3__trk_alloc(t, (size_t)t->n_ptr_ring * sizeof(sam3__trk_entry));
    o->mems = (sam3__trk_entry *)sam3__trk_alloc(t, (size_t)t->n_mem_ring * sizeof(sam3__trk_entry));
    o->points = (sam3_point *)sam3__trk_alloc(t, (size_t)SAM3_MAX_POINTS * sizeof(sam3_point));
    ok = o->ptrs && o->mems && o->points;
    if (o->ptrs) memset(o->ptrs, 0, (size_t)t->n_ptr_ring * sizeof(sam3__trk_entry));
    if (o->mems) memset(o->mems, 0, (size_t)t->n_mem_ring * sizeof(sam3__trk_entry));
    for (i = 0; ok && i < t->n_ptr_ring; i++) {
        o->ptrs[i].frame = -1;
        o->ptrs[i].mem = NULL;
        ok = (o->ptrs[i].ptr = (float *)sam3__trk_alloc(t, pb)) != NULL;
    }
    for (i = 0; ok && i < t->n_mem_ring; i++) {
        o->mems[i].frame = -1;
        o->mems[i].ptr = NULL;
        ok = (o->mems[i].mem = (uint16_t *)sam3__trk_alloc(t, mb)) != NULL;
    }
    if (!ok) sam3__trk_obj_free(t, o); /* the slots not reached are zero */
    return ok;
}

SAM3DEF sam3_tracker_options sam3_tracker_options_default(void) {
    sam3_tracker_options o;
    memset(&o, 0, sizeof(o));
    o.mask_threshold = 0.5f;
    return o;
}

SAM3DEF void sam3_tracker_free(sam3_tracker *t) {
    sam3_allocator a;
    int i;
    if (!t) return;
    a = t->c->a;
    for (i = 0; i < t->n_obj; i++) sam3__trk_obj_free(t, &t->obj[i]);
    sam3__afree(&a, t->obj);
    sam3__afree(&a, t->rope);
    sam3__afree(&a, t->pos);
    sam3__afree(&a, t->mem_pos);
    sam3__afree(&a, t->res);
    sam3__afree(&a, t->res_low);
    sam3__afree(&a, t->res_mask);
    sam3__afree(&a, t);
}

SAM3DEF sam3_result sam3_tracker_new(sam3_ctx *c, const sam3_tracker_options *opt, sam3_tracker **out) {
    const sam3_model *m;
    sam3_tracker *t;
    int N, hd;
    if (!out) return c ? sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_new: out is NULL") : SAM3_ERR_INVALID_ARG;
    *out = NULL;
    if (!c) return SAM3_ERR_INVALID_ARG;
    m = c->m;
    if (m->arch != SAM3__ARCH_SAM3 || !m->trk.present || !m->vid.present)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "sam3_tracker_new: this model file has no video memory modules (tracker_model.memory_*); "
                                                   "convert the full SAM 3 checkpoint (sam3_video layout) to track objects");
    if (opt && !sam3__finite(opt->mask_threshold))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_new: mask_threshold must be finite");
    N = m->trk.grid * m->trk.grid;
    hd = m->vid.ma_di / m->vid.ma_heads;
    t = (sam3_tracker *)sam3__acalloc(&c->a, 1, sizeof(*t));
    if (!t) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_tracker_new: out of memory");
    t->c = c;
    if (opt) t->opt = *opt;
    if (t->opt.mask_threshold == 0) t->opt.mask_threshold = 0.5f;
    t->n_ptr_ring = SAM3__MAX(1, m->vid.max_ptr - 1);
    t->n_mem_ring = SAM3__MAX(1, m->vid.num_maskmem - 1);
    t->obj = (sam3__trk_obj *)sam3__acalloc(&c->a, SAM3_MAX_TRACKED_OBJECTS, sizeof(sam3__trk_obj));
    t->res = (sam3_tracker_object *)sam3__acalloc(&c->a, SAM3_MAX_TRACKED_OBJECTS, sizeof(sam3_tracker_object));
    t->rope = (float *)sam3__aalloc(&c->a, (size_t)N * hd * sizeof(float));
    t->pos = (float *)sam3__aalloc(&c->a, (size_t)N * m->trk.D * sizeof(float));
    t->mem_pos = (float *)sam3__aalloc(&c->a, (size_t)N * m->vid.mem_dim * sizeof(float));
    if (!t->obj || !t->res || !t->rope || !t->pos || !t->mem_pos) {
        sam3_tracker_free(t);
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_tracker_new: out of memory");
    }
    t->bytes = sizeof(*t) + (size_t)SAM3_MAX_TRACKED_OBJECTS * (sizeof(sam3__trk_obj) + sizeof(sam3_tracker_object)) +
               (size_t)N * (hd + m->trk.D + m->vid.mem_dim) * sizeof(float);
    sam3__mem_rope_table(m->trk.grid, hd, m->vid.rope_theta, t->rope);
    sam3__sine_pos2d(m->trk.grid, m->trk.grid, m->trk.D, t->pos);
    sam3__sine_pos2d(m->trk.grid, m->trk.grid, m->vid.mem_dim, t->mem_pos);
    *out = t;
    return SAM3_OK;
}

SAM3DEF int sam3_tracker_next_frame(const sam3_tracker *t) { return t ? t->next : -1; }

SAM3DEF size_t sam3_tracker_memory_used(const sam3_tracker *t) {
    return t ? t->bytes + t->res_low_cap + t->res_mask_cap : 0;
}

static int sam3__trk_find(const sam3_tracker *t, int id) {
    int i;
    for (i = 0; i < t->n_obj; i++)
        if (t->obj[i].id == id) return i;
    return -1;
}

static sam3_result sam3__tracker_add_prompt_run(sam3_tracker *t, int frame, int object_id, const sam3_tracker_prompt *p) {
    sam3_ctx *c;
    sam3__trk_obj *o;
    sam3_result rc;
    int k, fresh = 0;
    if (!t) return SAM3_ERR_INVALID_ARG;
    c = t->c;
    c->err[0] = 0;
    if (!p) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: prompt is NULL");
    if (frame < t->next)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: frame %d was already processed (the next frame is %d)", frame, t->next);
    if (frame > t->next)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: frame %d is not the next frame (%d): prompts are given for the next frame",
                          frame, t->next);
    if ((rc = sam3__check_clicks(c, "sam3_tracker_add_prompt", p->points, p->n_points, p->box)) != SAM3_OK) return rc;
    if (p->mask) {
        if (p->n_points || p->box) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: a mask prompt cannot have points or a box (as the reference)");
        if (p->mask_width < 1 || p->mask_height < 1 || p->mask_width > SAM3_MAX_IMAGE_DIM || p->mask_height > SAM3_MAX_IMAGE_DIM)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: mask size %dx%d outside 1x1..%dx%d", p->mask_width, p->mask_height,
                              SAM3_MAX_IMAGE_DIM, SAM3_MAX_IMAGE_DIM);
    } else if (!p->n_points && !p->box) {
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: the prompt is empty (give points, a box or a mask)");
    }
    k = sam3__trk_find(t, object_id);
    if (k < 0) {
        if (t->n_obj >= SAM3_MAX_TRACKED_OBJECTS)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_add_prompt: already %d objects (SAM3_MAX_TRACKED_OBJECTS)", SAM3_MAX_TRACKED_OBJECTS);
        if (!sam3__trk_obj_init(t, &t->obj[t->n_obj], object_id)) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_tracker_add_prompt: out of memory");
        k = t->n_obj;
        fresh = 1;
    }
    o = &t->obj[k];
    if (p->mask) {
        size_t nb = (size_t)p->mask_width * p->mask_height;
        uint8_t *mk = (uint8_t *)sam3__trk_alloc(t, nb);
        if (!mk) {
            if (fresh) sam3__trk_obj_free(t, o);
            return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_tracker_add_prompt: out of memory for a %dx%d mask", p->mask_width, p->mask_height);
        }
        memcpy(mk, p->mask, nb);
        sam3__trk_free(t, o->mask, (size_t)o->mask_w * o->mask_h);
        o->mask = mk;
        o->mask_w = p->mask_width;
        o->mask_h = p->mask_height;
    } else {
        sam3__trk_free(t, o->mask, (size_t)o->mask_w * o->mask_h);
        o->mask = NULL;
        o->mask_w = o->mask_h = 0;
    }
    o->n_points = p->n_points;
    if (p->n_points) memcpy(o->points, p->points, (size_t)p->n_points * sizeof(sam3_point));
    o->has_box = p->box != NULL;
    if (p->box) o->box = *p->box;
    o->pending = 1;
    if (fresh) t->n_obj++;
    return SAM3_OK;
}

/* The tracker's calls hold its context's in-use flag, as the context's own calls do. */
SAM3DEF sam3_result sam3_tracker_add_prompt(sam3_tracker *t, int frame, int object_id, const sam3_tracker_prompt *p) {
    if (!t) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(t->c, NULL, 0)) return SAM3_ERR_BUSY;
    return sam3__let(t->c, sam3__tracker_add_prompt_run(t, frame, object_id, p));
}

static sam3_result sam3__tracker_remove_object_run(sam3_tracker *t, int object_id) {
    int k;
    t->c->err[0] = 0;
    k = sam3__trk_find(t, object_id);
    if (k < 0) return sam3__fail(t->c, SAM3_ERR_INVALID_ARG, "sam3_tracker_remove_object: no object with id %d", object_id);
    sam3__trk_obj_free(t, &t->obj[k]);
    memmove(&t->obj[k], &t->obj[k + 1], (size_t)(t->n_obj - k - 1) * sizeof(sam3__trk_obj));
    t->n_obj--;
    memset(&t->obj[t->n_obj], 0, sizeof(sam3__trk_obj));
    return SAM3_OK;
}
SAM3DEF sam3_result sam3_tracker_remove_object(sam3_tracker *t, int object_id) {
    if (!t) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(t->c, NULL, 0)) return SAM3_ERR_BUSY;
    return sam3__let(t->c, sam3__tracker_remove_object_run(t, object_id));
}

SAM3DEF sam3_result sam3_tracker_reset(sam3_tracker *t) {
    int i;
    if (!t) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(t->c, NULL, 0)) return SAM3_ERR_BUSY;
    for (i = 0; i < t->n_obj; i++) sam3__trk_obj_free(t, &t->obj[i]);
    t->n_obj = 0;
    t->next = 0;
    return sam3__let(t->c, SAM3_OK);
}

/* _select_closest_cond_frames for frame f: which conditioning frames the memory attention reads,
   in the reference's order (all, in the order given, when there are at most max_cond; else the
   closest before, the closest at or after, then the nearest others). sel (n_cond) gets 1/0;
   order (n_sel) the chosen indices. */
static int sam3__trk_select_cond(const sam3__trk_obj *o, int f, int max_cond, unsigned char *sel, int *order) {
    int i, n = 0, before = -1, after = -1;
    memset(sel, 0, (size_t)o->n_cond);
    if (max_cond < 0 || o->n_cond <= max_cond) {
        for (i = 0; i < o->n_cond; i++) {
            sel[i] = 1;
            order[n++] = i;
        }
        return n;
    }
    for (i = 0; i < o->n_cond; i++) {
        const int fr = o->cond[i].frame;
        if (fr < f && (before < 0 || fr > o->cond[before].frame)) before = i;
        if (fr >= f && (after < 0 || fr < o->cond[after].frame)) after = i;
    }
    if (before >= 0) { sel[before] = 1; order[n++] = before; }
    if (after >= 0) { sel[after] = 1; order[n++] = after; }
    while (n < max_cond) { /* the nearest remaining; ties keep the order given (a stable sort) */
        int best = -1, bd = 0;
        for (i = 0; i < o->n_cond; i++) {
            int d = o->cond[i].frame - f;
            if (sel[i]) continue;
            d = d < 0 ? -d : d;
            if (best < 0 || d < bd) { best = i; bd = d; }
        }
        if (best < 0) break;
        sel[best] = 1;
        order[n++] = best;
    }
    return n;
}

/* A stored memory src (N, M) bf16 into the memory attention's inputs: mem (N, M) widened, mem_pos
   (N, M) = the grid's position pos (N, M) + the frame slot's temporal embedding tp (M). */
static void sam3__trk_put_mem(sam3_ctx *c, const uint16_t *src, const float *pos, const float *tp, int N, int M, float *mem, float *mem_pos) {
    ptrdiff_t i;
    (void)c; /* only in OpenMP clauses */
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (i = 0; i < (ptrdiff_t)N; i++) {
        int j;
        for (j = 0; j < M; j++) {
            mem[(size_t)i * M + j] = sam3__from_bf16(src[(size_t)i * M + j]);
            mem_pos[(size_t)i * M + j] = pos[(size_t)i * M + j] + tp[j];
        }
    }
}

/* The object's memory for frame f (_gather_memory_frame_outputs, _build_memory_attention_inputs,
   _get_object_pointers, _process_object_pointers): spatial memories of the chosen conditioning
   frames (temporal slot num_maskmem - 1), then of frames f - (num_maskmem - 1) .. f - 1 (slot r - 1,
   an unchosen conditioning frame standing in where one is there), then the object pointers of every
   conditioning frame up to f and of frames f - 1 .. f - (max_ptr - 1), each split into D / mem_dim
   tokens sharing one temporal position. mem, mem_pos (nk, mem_dim); counts in *nk, *n_ptr_tok. */
static sam3_result sam3__trk_gather(sam3_tracker *t, const sam3__trk_obj *o, int f, float *mem, float *mem_pos, int *nk, int *n_ptr_tok) {
    sam3_ctx *c = t->c;
    const sam3_model *m = c->m;
    const sam3__vid_cfg *v = &m->vid;
    const sam3__vid_w *w = &m->vid_w;
    const int D = m->trk.D, N = m->trk.grid * m->trk.grid, M = v->mem_dim, split = D / M;
    sam3__mark mk = sam3__mark_get(c);
    unsigned char *sel = (unsigned char *)sam3__salloc(c, (size_t)o->n_cond + 1);
    int *order = (int *)sam3__salloc(c, ((size_t)o->n_cond + 1) * sizeof(int));
    float *pe = sam3__sallocf(c, (size_t)D);      /* (D) sine of a pointer's temporal offset */
    float *pp = sam3__sallocf(c, (size_t)M);      /* (M) its projection */
    int n_sel, i, r, n = 0, np = 0;
    if (!sel || !order || !pe || !pp) return SAM3_ERR_OUT_OF_MEMORY;
#define SAM3__PUT_MEM(src, slot)                                                                                  \
    do {                                                                                                          \
        sam3__trk_put_mem(c, (src), t->mem_pos, w->tpos + (size_t)(slot) * M, N, M, mem + (size_t)n * N * M,      \
                          mem_pos + (size_t)n * N * M);                                                           \
        n++;                                                                                                      \
    } while (0)
    n_sel = sam3__trk_select_cond(o, f, v->max_cond, sel, order);
    for (i = 0; i < n_sel; i++)
        if (o->cond[order[i]].mem) SAM3__PUT_MEM(o->cond[order[i]].mem, v->num_maskmem - 1);
    for (r = v->num_maskmem - 1; r >= 1; r--) {
        const int pf = f - r;
        const sam3__trk_entry *e = &o->mems[pf >= 0 ? pf % t->n_mem_ring : 0];
        if (pf < 0) continue;
        if (e->frame == pf) {
            SAM3__PUT_MEM(e->mem, r - 1);
            continue;
        }
        for (i = 0; i < o->n_cond; i++)
            if (!sel[i] && o->cond[i].frame == pf && o->cond[i].mem) {
                SAM3__PUT_MEM(o->cond[i].mem, r - 1);
                break;
            }
    }
#undef SAM3__PUT_MEM
    /* object pointers after the spatial memories */
    {
        float *pm = mem + (size_t)n * N * M, *ppos = mem_pos + (size_t)n * N * M;
        /* HF divides the offsets by the window - 1 and reads the window - 1 frames before this one */
        const int win = t->ptr_window_grows ? SAM3__MIN(f + 1, v->max_ptr) : v->max_ptr;
        const float den = (float)SAM3__MAX(1, win - 1);
        int pass;
        for (pass = 0; pass < 2; pass++) {
            const int cnt = pass == 0 ? o->n_cond : win - 1;
            for (i = 0; i < cnt; i++) {
                const sam3__trk_entry *e;
                int off, s2;
                if (pass == 0) {
                    e = &o->cond[i];
                    if (e->frame > f) continue;
                    off = f - e->frame;
                } else {
                    const int pf = f - (i + 1);
                    if (pf < 0) break;
                    e = &o->ptrs[pf % t->n_ptr_ring];
                    if (e->frame != pf) continue;
                    off = i + 1;
                }
                if (v->ptr_tpe) {
                    sam3__sine_1d((float)off / den, D, pe);
                    sam3__linear(c, pe, 1, D, &w->tpos_proj, M, pp);
                } else {
                    memset(pp, 0, (size_t)M * sizeof(float));
                }
                for (s2 = 0; s2 < split; s2++) {
                    memcpy(pm + (size_t)np * M, e->ptr + (size_t)s2 * M, (size_t)M * sizeof(float));
                    memcpy(ppos + (size_t)np * M, pp, (size_t)M * sizeof(float));
                    np++;
                }
            }
        }
    }
    *nk = n * N + np;
    *n_ptr_tok = np;
    sam3__release(c, mk);
    return SAM3_OK;
}

/* Per-object results of one frame, before they are committed. */
typedef struct sam3__trk_out {
    float score;
    int prompted, from_mask;
    float *low;   /* (4g, 4g) */
    float *high;  /* (S, S) */
    float *ptr;   /* (D) */
    uint16_t *mem; /* (N, mem_dim) */
} sam3__trk_out;

/* One object's decoder scratch on one frame (sam3__trk_object's), from the prompt or memory stage
   to the mask decoder. */
typedef struct sam3__trk_scr {
    float *img;    /* (D, g, g) the decoder's image embedding */
    float *sparse; /* (ns, D) sparse prompt tokens */
    float *dense;  /* (D, g, g) dense prompt */
    float *all;    /* (nm, 4g, 4g) every mask token's logits */
    float *tok;    /* (nm, D) the mask tokens' output */
    float iou[SAM3__MAX_FFN], obj;
    int ns, multimask;
} sam3__trk_scr;

/* _use_mask_as_output: a mask prompt taken as the frame's output (the processor: the mask to
   S x S, antialiased bilinear, >= 0.5); the pointer from the decoder on the raw features with the
   downsampled mask as its mask prompt. */
static sam3_result sam3__trk_object_mask(sam3_tracker *t, const sam3__trk_obj *o, sam3__trk_scr *s, sam3__trk_out *r) {
    sam3_ctx *c = t->c;
    const sam3__vid_w *w = &c->m->vid_w;
    const int D = c->m->trk.D, g = c->m->trk.grid, S = c->m->trk.image, nm = c->m->trk.n_mask_tokens;
    float *mf = sam3__sallocf(c, (size_t)o->mask_w * o->mask_h); /* (mh, mw) */
    float *ms = sam3__sallocf(c, (size_t)S * S);                 /* (S, S) binary */
    float *md = sam3__sallocf(c, (size_t)(S / 4) * (S / 4));     /* (S/4, S/4) mask_downsample */
    sam3_points_prompt pp;
    sam3_result rc;
    size_t j;
    int i, any = 0, best;
    if (!mf || !ms || !md) return SAM3_ERR_OUT_OF_MEMORY;
    for (j = 0; j < (size_t)o->mask_w * o->mask_h; j++) mf[j] = o->mask[j] ? 1.0f : 0.0f;
    if (o->mask_w != S || o->mask_h != S) {
        if ((rc = sam3__aa_resize_f32(c, mf, o->mask_h, o->mask_w, ms, S, S)) != SAM3_OK) return rc;
        /* Sam3VideoModel hands its detector mask (>= 0.5, at the low resolution) straight to the
           session: _use_mask_as_output upsamples it without binarising again */
        if (!o->mask_soft)
            for (j = 0; j < (size_t)S * S; j++) ms[j] = ms[j] >= 0.5f ? 1.0f : 0.0f;
    } else {
        memcpy(ms, mf, (size_t)S * S * sizeof(float));
    }
    for (j = 0; j < (size_t)S * S; j++) {
        r->high[j] = ms[j] * 20.0f - 10.0f;
        any |= ms[j] > 0;
    }
    if ((rc = sam3__aa_resize_f32(c, r->high, S, S, r->low, 4 * g, 4 * g)) != SAM3_OK) return rc;
    if ((rc = sam3__conv2d(c, ms, 1, S, S, &w->mask_ds, 1, 4, 4, 0, md, S / 4, S / 4)) != SAM3_OK) return rc;
    memset(&pp, 0, sizeof(pp));
    pp.mask_logits = md;
    pp.mask_width = pp.mask_height = S / 4;
    if ((rc = sam3__trk_prompt_encoder(c, &pp, 1.0f, 1.0f, 1, s->sparse, &s->ns, s->dense)) != SAM3_OK) return rc;
    if ((rc = sam3__trk_mask_decoder(c, c->trk_e, s->sparse, s->ns, s->dense, s->all, s->iou, &s->obj, s->tok)) != SAM3_OK) return rc;
    best = 1;
    for (i = 2; i < nm; i++)
        if (s->iou[i] > s->iou[best]) best = i;
    if (s->obj > 0 && any) {
        if ((rc = sam3__ffn(c, &w->ptr_proj, s->tok + (size_t)best * D, 1, D, D, D, r->ptr)) != SAM3_OK) return rc;
    } else {
        memcpy(r->ptr, w->no_ptr, (size_t)D * sizeof(float));
    }
    r->score = any ? 10.0f : -10.0f;
    return SAM3_OK;
}

/* A conditioning frame: no memory; the 1x map plus no_memory_embedding, and the object's clicks
   and box through the prompt encoder. */
static sam3_result sam3__trk_object_prompt(sam3_tracker *t, const sam3__trk_obj *o, int W, int H, sam3__trk_scr *s) {
    sam3_ctx *c = t->c;
    const sam3__vid_cfg *v = &c->m->vid;
    const int D = c->m->trk.D, N = c->m->trk.grid * c->m->trk.grid, S = c->m->trk.image, npts = o->n_points + (o->has_box ? 2 : 0);
    const float rx = (float)((double)S / W), ry = (float)((double)S / H);
    sam3_points_prompt pp;
    int i, k;
    for (k = 0; k < D; k++)
        for (i = 0; i < N; i++) s->img[(size_t)k * N + i] = c->trk_e[(size_t)k * N + i] + c->m->vid_w.no_mem[k];
    memset(&pp, 0, sizeof(pp));
    pp.points = o->points;
    pp.n_points = o->n_points;
    pp.box = o->has_box ? &o->box : NULL;
    s->multimask = v->multimask && v->mm_min <= npts && npts <= v->mm_max;
    return sam3__trk_prompt_encoder(c, &pp, rx, ry, 1, s->sparse, &s->ns, s->dense);
}

/* A tracked frame: memory attention over what the stream remembers of the object, and the prompt
   encoder with no prompt (its (0, 0) point labelled -1, then padding). */
static sam3_result sam3__trk_object_memory(sam3_tracker *t, const sam3__trk_obj *o, sam3__trk_scr *s) {
    sam3_ctx *c = t->c;
    const sam3__vid_cfg *v = &c->m->vid;
    const int D = c->m->trk.D, N = c->m->trk.grid * c->m->trk.grid, M = v->mem_dim;
    const int maxk = (v->max_cond < 0 ? o->n_cond : SAM3__MIN(o->n_cond, v->max_cond)) + v->num_maskmem;
    const size_t cap = (size_t)maxk * N + (size_t)(o->n_cond + v->max_ptr) * (D / M);
    float *mem = sam3__sallocf(c, cap * M);     /* (nk, M) */
    float *mem_pos = sam3__sallocf(c, cap * M); /* (nk, M) */
    sam3_points_prompt pp;
    sam3_result rc;
    int nk = 0, n_ptr = 0, i, k;
    if (!mem || !mem_pos) return SAM3_ERR_OUT_OF_MEMORY;
    if ((rc = sam3__trk_gather(t, o, t->next, mem, mem_pos, &nk, &n_ptr)) != SAM3_OK) return rc;
    if ((rc = sam3__memory_attention(c, c->trk_e, t->pos, mem, mem_pos, nk, n_ptr, t->rope, t->ma_x1, &t->ma_x1_ok, s->img)) != SAM3_OK) return rc;
    if (c->opt.tap) { /* token-major, as the reference dump's */
        float *tm = sam3__sallocf(c, (size_t)N * D); /* (N, D) */
        char nm_[64];
        if (!tm) return SAM3_ERR_OUT_OF_MEMORY;
        for (k = 0; k < D; k++)
            for (i = 0; i < N; i++) tm[(size_t)i * D + k] = s->img[(size_t)k * N + i];
        snprintf(nm_, sizeof(nm_), "dbg.f%d.o%d.pix", t->next, o->id);
        sam3__tap(c, nm_, tm, 2, N, D, 0);
    }
    memset(&pp, 0, sizeof(pp));
    if ((rc = sam3__trk_prompt_encoder(c, &pp, 1.0f, 1.0f, 1, s->sparse, &s->ns, s->dense)) != SAM3_OK) return rc;
    s->multimask = v->multimask && v->mm_tracking && v->mm_min <= 0 && 0 <= v->mm_max;
    return SAM3_OK;
}

/* One object on the current frame (_run_single_frame_inference): its prompt through the decoder
   (or a mask prompt taken as the output, _use_mask_as_output), else memory attention and the
   decoder without a prompt; the mask gated by the object score, upsampled to the input size for
   the memory; the pointer from the chosen mask token. */
static sam3_result sam3__trk_object(sam3_tracker *t, const sam3__trk_obj *o, int W, int H, sam3__trk_out *r) {
    sam3_ctx *c = t->c;
    const sam3__trk_cfg *tc = &c->m->trk;
    const sam3__vid_w *w = &c->m->vid_w;
    const int D = tc->D, g = tc->grid, N = g * g, S = tc->image, nm = tc->n_mask_tokens;
    const size_t lp = (size_t)16 * N;
    sam3__mark mk = sam3__mark_get(c);
    sam3__trk_scr s;
    sam3_result rc;
    int i, sel, tok_sel;
    memset(&s, 0, sizeof(s));
    s.img = sam3__sallocf(c, (size_t)D * N);                        /* (D, g, g) */
    s.sparse = sam3__sallocf(c, (size_t)(SAM3_MAX_POINTS + 4) * D); /* (ns, D) */
    s.dense = sam3__sallocf(c, (size_t)D * N);                      /* (D, g, g) */
    s.all = sam3__sallocf(c, (size_t)nm * lp);                      /* (nm, 4g, 4g) */
    s.tok = sam3__sallocf(c, (size_t)nm * D);                       /* (nm, D) */
    if (!s.img || !s.sparse || !s.dense || !s.all || !s.tok) return SAM3_ERR_OUT_OF_MEMORY;
    r->prompted = o->pending;
    r->from_mask = o->pending && o->mask != NULL;
    if (r->from_mask) {
        if ((rc = sam3__trk_object_mask(t, o, &s, r)) != SAM3_OK) return rc;
        sam3__release(c, mk);
        return SAM3_OK;
    }
    rc = o->pending ? sam3__trk_object_prompt(t, o, W, H, &s) : sam3__trk_object_memory(t, o, &s);
    if (rc != SAM3_OK) return rc;
    if ((rc = sam3__trk_mask_decoder(c, s.img, s.sparse, s.ns, s.dense, s.all, s.iou, &s.obj, s.tok)) != SAM3_OK) return rc;
    if (s.multimask) { /* the best predicted IoU of tokens 1.. (first on ties, as argmax) */
        sel = 1;
        for (i = 2; i < nm; i++)
            if (s.iou[i] > s.iou[sel]) sel = i;
        tok_sel = sel;
    } else { /* token 0 unless unstable; the pointer reads token 0 either way (as the reference) */
        sel = sam3__trk_stable_token(tc, s.all, s.iou, nm, lp);
        tok_sel = 0;
    }
    if (s.obj > 0) {
        memcpy(r->low, s.all + (size_t)sel * lp, lp * sizeof(float));
        if ((rc = sam3__ffn(c, &w->ptr_proj, s.tok + (size_t)tok_sel * D, 1, D, D, D, r->ptr)) != SAM3_OK) return rc;
    } else {
        for (i = 0; i < (int)lp; i++) r->low[i] = -1024.0f;
        memcpy(r->ptr, w->no_ptr, (size_t)D * sizeof(float));
    }
    r->score = s.obj;
    if ((rc = sam3__bilinear_f32(c, r->low, 4 * g, 4 * g, r->high, S, S)) != SAM3_OK) return rc;
    sam3__release(c, mk);
    return SAM3_OK;
}

/* The per-object output buffers of ro[0..n) (arena scratch); 0 when out of memory. */
static int sam3__trk_outs_alloc(sam3_ctx *c, sam3__trk_out *ro, int n) {
    const int g = c->m->trk.grid, S = c->m->trk.image;
    const size_t mb = (size_t)g * g * c->m->vid.mem_dim * sizeof(uint16_t);
    int i;
    for (i = 0; i < n; i++) {
        ro[i].low = sam3__sallocf(c, (size_t)16 * g * g);  /* (4g, 4g) */
        ro[i].high = sam3__sallocf(c, (size_t)S * S);      /* (S, S) */
        ro[i].ptr = sam3__sallocf(c, (size_t)c->m->trk.D); /* (D) */
        ro[i].mem = (uint16_t *)sam3__salloc(c, mb);       /* (N, mem_dim) */
        if (!ro[i].low || !ro[i].high || !ro[i].ptr || !ro[i].mem) return 0;
    }
    return 1;
}

/* An object's memory from its high-resolution mask logits (S, S): down to the memory encoder's
   input (16g, 16g), binarised (> 0) or through a sigmoid, scaled and shifted; mask16 scratch. */
static sam3_result sam3__trk_encode_memory(sam3_ctx *c, const float *high, int binarise, float *mask16, float score, uint16_t *mem) {
    const sam3__vid_cfg *v = &c->m->vid;
    const int g = c->m->trk.grid, S = c->m->trk.image;
    sam3_result rc;
    ptrdiff_t j;
    if ((rc = sam3__aa_resize_f32(c, high, S, S, mask16, 16 * g, 16 * g)) != SAM3_OK) return rc;
    SAM3__OMP(parallel for num_threads(c->nt) schedule(static))
    for (j = 0; j < (ptrdiff_t)256 * g * g; j++) {
        const float p = binarise ? (mask16[j] > 0 ? 1.0f : 0.0f) : 1.0f / (1.0f + expf(-mask16[j]));
        mask16[j] = p * v->sig_scale + v->sig_bias;
    }
    return sam3__memory_encoder(c, c->trk_e, mask16, score, mem);
}

/* A frame's output r kept as an entry (conditioning or tracked): frame, score, pointer, memory. */
static void sam3__trk_entry_set(sam3__trk_entry *e, int f, const sam3__trk_out *r, size_t pb, size_t mb) {
    e->frame = f;
    e->score = r->score;
    memcpy(e->ptr, r->ptr, pb);
    memcpy(e->mem, r->mem, mb);
}

/* A tracked (unprompted) frame f's output r into the object's pointer and memory rings. */
static void sam3__trk_ring_set(const sam3_tracker *t, sam3__trk_obj *o, int f, const sam3__trk_out *r, size_t pb, size_t mb) {
    sam3__trk_entry *pe = &o->ptrs[f % t->n_ptr_ring], *me = &o->mems[f % t->n_mem_ring];
    pe->frame = f;
    pe->score = r->score;
    memcpy(pe->ptr, r->ptr, pb);
    me->frame = f;
    memcpy(me->mem, r->mem, mb);
}

/* After frame f: a conditioning frame's memory is read while it is among the last max_cond
   conditioning frames (what the selection picks when every one lies in the past) or within the
   last num_maskmem - 1 frames; its pointer always (HF 5.17 reads every past conditioning frame's
   pointer). The others' memories are freed. */
static void sam3__trk_cond_trim(sam3_tracker *t, sam3__trk_obj *o, int f, size_t mb) {
    const sam3__vid_cfg *v = &t->c->m->vid;
    int j, later = 0;
    for (j = o->n_cond - 1; j >= 0; j--) {
        sam3__trk_entry *e = &o->cond[j];
        const int keep = v->max_cond < 0 || later < v->max_cond || e->frame > f - v->num_maskmem + 1;
        later++;
        if (!keep && e->mem) {
            sam3__trk_free(t, e->mem, mb);
            e->mem = NULL;
        }
    }
}

/* A binary mask's pixel bounds (x1, y1 exclusive); box untouched when the mask is empty. */
static void sam3__mask_bounds(const uint8_t *mk, int W, int H, long area, sam3_box *box) {
    int x0 = W, y0 = H, x1 = -1, y1 = -1, y, x;
    if (area > 0)
        for (y = 0; y < H; y++) {
            const uint8_t *row = mk + (size_t)y * W;
            for (x = 0; x < W; x++)
                if (row[x]) {
                    if (x < x0) x0 = x;
                    if (x > x1) x1 = x;
                    if (y < y0) y0 = y;
                    y1 = y;
                }
        }
    if (x1 >= 0) {
        box->x0 = (float)x0;
        box->y0 = (float)y0;
        box->x1 = (float)(x1 + 1);
        box->y1 = (float)(y1 + 1);
    }
}

/* One tracker frame's state (sam3_tracker_push_frame), from the objects' outputs to the commit. */
typedef struct sam3__trk_step {
    int W, H, n;        /* the frame's size; the objects tracked */
    size_t lp, pb, mb;  /* floats of a low-res mask, (4g)^2; bytes of a pointer; bytes of a memory */
    sam3__trk_out *ro;  /* (n) each object's output on this frame */
    float *mask16;      /* (16g, 16g) the memory encoder's input */
    sam3__trk_entry *newcond[SAM3_MAX_TRACKED_OBJECTS]; /* (n) prompted objects' new conditioning entries */
} sam3__trk_step;

/* The frame in: through the image encoder, or (encoded) the context's last encoding, or only
   checked when nothing is tracked (the frame is then only counted). *W, *H get its size. */
static sam3_result sam3__tracker_frame_in(sam3_tracker *t, const uint8_t *pixels, int *W, int *H, int stride, sam3_pixel_format format,
                                          int encoded) {
    sam3_ctx *c = t->c;
    if (encoded) {
        if (!c->vit_ready)
            return sam3__fail(c, SAM3_ERR_NO_IMAGE, "sam3_tracker_push_encoded: the context holds no encoded frame (push the frame to a tracker "
                                                    "or concept tracker on this context, or sam3_set_image, first)");
        *W = c->img_w;
        *H = c->img_h;
    } else if (t->n_obj == 0) {
        const int bpp = format == SAM3_RGB8 ? 3 : format == SAM3_RGBA8 ? 4 : format == SAM3_GRAY8 ? 1 : 0;
        if (!pixels || !bpp || *W < 1 || *H < 1 || *W > SAM3_MAX_IMAGE_DIM || *H > SAM3_MAX_IMAGE_DIM || stride < *W * bpp)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_push_frame: bad frame (pixels %s, format %d, %dx%d, stride %d)",
                              pixels ? "set" : "NULL", (int)format, *W, *H, stride);
    } else {
        return sam3__image_encode(c, "sam3_tracker_push_frame", pixels, *W, *H, stride, format, 0);
    }
    return SAM3_OK;
}

/* Every object on this frame (sam3__trk_object), after the tracker's neck. */
static sam3_result sam3__tracker_track_objects(sam3_tracker *t, sam3__trk_step *s) {
    sam3_ctx *c = t->c;
    const int n = s->n;
    sam3_result rc;
    int i;
    if ((rc = sam3__tracker_features(c)) != SAM3_OK) return rc;
    s->ro = (sam3__trk_out *)sam3__salloc(c, (size_t)n * sizeof(*s->ro));
    s->mask16 = sam3__sallocf(c, (size_t)256 * c->m->trk.grid * c->m->trk.grid); /* (16g, 16g) */
    t->ma_x1 = sam3__sallocf(c, (size_t)c->m->trk.grid * c->m->trk.grid * c->m->trk.D); /* (N, D) shared by the objects */
    t->ma_x1_ok = 0;
    if (!s->ro || !s->mask16 || !t->ma_x1 || !sam3__trk_outs_alloc(c, s->ro, n)) rc = SAM3_ERR_OUT_OF_MEMORY;
    for (i = 0; i < n && rc == SAM3_OK; i++) {
        if (sam3__aborted(c)) rc = sam3__fail(c, SAM3_ERR_ABORTED, "aborted before object %d of frame %d", t->obj[i].id, t->next);
        else rc = sam3__trk_object(t, &t->obj[i], s->W, s->H, &s->ro[i]);
    }
    t->ma_x1 = NULL; /* arena scratch of this push */
    return rc;
}

/* _batch_encode_memories: one binarise-or-sigmoid choice for the whole frame (HF 5.17 passes
   any() of the objects' "mask from a prompt" flags, so a prompt on one object binarises every
   object's memory on that frame) */
static sam3_result sam3__tracker_encode_memories(sam3_tracker *t, sam3__trk_step *s) {
    sam3_ctx *c = t->c;
    const int N = c->m->trk.grid * c->m->trk.grid, M = c->m->vid.mem_dim;
    sam3_result rc;
    int i, any_prompt = 0;
    for (i = 0; i < s->n; i++) any_prompt |= s->ro[i].prompted;
    for (i = 0; i < s->n; i++) {
        const sam3__trk_out *r = &s->ro[i];
        size_t j;
        if ((rc = sam3__trk_encode_memory(c, r->high, any_prompt, s->mask16, r->score, r->mem)) != SAM3_OK) return rc;
        if (c->opt.tap) {
            float *tm = sam3__sallocf(c, (size_t)N * M); /* (N, M) the memory as stored, widened */
            char nm_[64];
            if (!tm) return SAM3_ERR_OUT_OF_MEMORY;
            for (j = 0; j < (size_t)N * M; j++) tm[j] = sam3__from_bf16(r->mem[j]);
            snprintf(nm_, sizeof(nm_), "dbg.f%d.o%d.maskmem", t->next, t->obj[i].id);
            sam3__tap(c, nm_, tm, 2, N, M, 0);
            snprintf(nm_, sizeof(nm_), "dbg.f%d.o%d.ptr", t->next, t->obj[i].id);
            sam3__tap(c, nm_, r->ptr, 1, c->m->trk.D, 0, 0);
        }
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the memory encoder of frame %d", t->next);
    }
    return SAM3_OK;
}

/* Everything that can fail comes before the commit: the result buffers and the prompted objects'
   new conditioning entries (all of them freed again when one fails). */
static sam3_result sam3__tracker_prepare_commit(sam3_tracker *t, sam3__trk_step *s) {
    sam3_ctx *c = t->c;
    const int n = s->n;
    int i, j;
    if (!sam3__grow(c, (void **)&t->res_low, &t->res_low_cap, (size_t)n * s->lp * sizeof(float)) ||
        (!t->opt.no_masks && !sam3__grow(c, (void **)&t->res_mask, &t->res_mask_cap, (size_t)n * s->W * s->H)))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d masks of %dx%d", n, s->W, s->H);
    for (i = 0; i < n; i++) {
        sam3__trk_obj *o = &t->obj[i];
        s->newcond[i] = NULL;
        if (!s->ro[i].prompted) continue;
        s->newcond[i] = sam3__trk_cond_add(t, o, s->pb, s->mb);
        if (!s->newcond[i] || !s->newcond[i]->ptr || !s->newcond[i]->mem) {
            for (j = 0; j <= i; j++)
                if (s->newcond[j]) {
                    sam3__trk_free(t, s->newcond[j]->ptr, s->pb);
                    sam3__trk_free(t, s->newcond[j]->mem, s->mb);
                    s->newcond[j]->ptr = NULL;
                    s->newcond[j]->mem = NULL;
                }
            return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for object %d's memory", o->id);
        }
    }
    return SAM3_OK;
}

/* The outputs: each object's low-resolution logits, and (unless no_masks) them bilinearly to the
   frame, > the threshold, with the mask's area and bounds. */
static sam3_result sam3__tracker_outputs(sam3_tracker *t, const sam3__trk_step *s) {
    sam3_ctx *c = t->c;
    const int n = s->n, W = s->W, H = s->H, L = 4 * c->m->trk.grid;
    const size_t lp = s->lp, plane = (size_t)W * H;
    sam3_result rc;
    int i;
    for (i = 0; i < n; i++) {
        sam3_tracker_object *ob = &t->res[i];
        memset(ob, 0, sizeof(*ob));
        ob->id = t->obj[i].id;
        ob->object_score = s->ro[i].score;
        ob->prompted = s->ro[i].prompted;
        memcpy(t->res_low + (size_t)i * lp, s->ro[i].low, lp * sizeof(float));
        ob->low_res_logits = t->res_low + (size_t)i * lp;
    }
    if (!t->opt.no_masks) {
        sam3__lerp *ty = (sam3__lerp *)sam3__salloc(c, (size_t)H * sizeof(sam3__lerp));
        sam3__lerp *tx = (sam3__lerp *)sam3__salloc(c, (size_t)W * sizeof(sam3__lerp));
        const float **src = (const float **)sam3__salloc(c, (size_t)n * sizeof(*src)); /* (n) */
        const float thr = sam3__mask_logit_threshold(t->opt.mask_threshold);
        long *area = (long *)sam3__salloc(c, (size_t)n * sizeof(long)); /* (n) */
        if (!ty || !tx || !src || !area) return SAM3_ERR_OUT_OF_MEMORY;
        sam3__lerp_table(L, H, ty);
        sam3__lerp_table(L, W, tx);
        for (i = 0; i < n; i++) src[i] = t->res_low + (size_t)i * lp;
        if ((rc = sam3__resize_threshold_n(c, n, src, 0, L, L, ty, tx, H, W, thr, t->res_mask, area)) != SAM3_OK) return rc;
        for (i = 0; i < n; i++) {
            sam3_tracker_object *ob = &t->res[i];
            ob->mask = t->res_mask + (size_t)i * plane;
            ob->area = area[i];
            sam3__mask_bounds(ob->mask, W, H, area[i], &ob->box);
        }
    }
    return SAM3_OK;
}

/* The commit (nothing here can fail): a prompted object's output as its new conditioning frame,
   a tracked one's into its rings; conditioning memories no later frame reads freed. */
static void sam3__tracker_commit(sam3_tracker *t, const sam3__trk_step *s) {
    int i;
    for (i = 0; i < s->n; i++) {
        sam3__trk_obj *o = &t->obj[i];
        if (s->ro[i].prompted) {
            sam3__trk_entry_set(s->newcond[i], t->next, &s->ro[i], s->pb, s->mb);
            o->n_cond++;
            o->pending = 0;
        } else {
            sam3__trk_ring_set(t, o, t->next, &s->ro[i], s->pb, s->mb);
        }
        sam3__trk_cond_trim(t, o, t->next, s->mb);
    }
}

/* sam3_tracker_push_frame (Sam3TrackerVideoModel, one frame in streaming mode): the frame in,
   every object through sam3__trk_object, their memories encoded, the outputs, then the commit.
   encoded: the context's last encoding is the frame (sam3_tracker_push_encoded; pixels unused). */
static sam3_result sam3__tracker_push_frame_run(sam3_tracker *t, const uint8_t *pixels, int W, int H, int stride, sam3_pixel_format format,
                                                int encoded, sam3_tracker_result *out) {
    sam3_ctx *c;
    sam3__trk_step s;
    double t0;
    sam3_result rc;
    if (!t) return SAM3_ERR_INVALID_ARG;
    c = t->c;
    if (!out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_tracker_push_frame: out is NULL");
    memset(out, 0, sizeof(*out));
    c->err[0] = 0;
    if ((rc = sam3__tracker_frame_in(t, pixels, &W, &H, stride, format, encoded)) != SAM3_OK) return rc;
    out->frame = t->next;
    out->width = W;
    out->height = H;
    out->low_res_width = out->low_res_height = 4 * c->m->trk.grid;
    out->objects = t->res;
    if (t->n_obj == 0) {
        t->next++;
        return SAM3_OK;
    }
    memset(&s, 0, sizeof(s));
    s.W = W;
    s.H = H;
    s.n = t->n_obj;
    s.lp = (size_t)16 * c->m->trk.grid * c->m->trk.grid;
    s.pb = (size_t)c->m->trk.D * sizeof(float);
    s.mb = (size_t)c->m->trk.grid * c->m->trk.grid * c->m->vid.mem_dim * sizeof(uint16_t);
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    t0 = sam3__stage_begin(c, SAM3__ST_TRACKING);
    rc = sam3__tracker_track_objects(t, &s);
    if (rc == SAM3_OK) rc = sam3__tracker_encode_memories(t, &s);
    if (rc == SAM3_OK) rc = sam3__tracker_prepare_commit(t, &s);
    if (rc == SAM3_OK) rc = sam3__tracker_outputs(t, &s);
    if (rc != SAM3_OK) return sam3__end(c, rc);
    sam3__tracker_commit(t, &s);
    t->next++;
    out->n_objects = s.n;
    c->t.tracking = sam3__stage_end(c, t0);
    return sam3__end(c, SAM3_OK);
}

SAM3DEF sam3_result sam3_tracker_push_frame(sam3_tracker *t, const uint8_t *pixels, int W, int H, int stride, sam3_pixel_format format,
                                            sam3_tracker_result *out) {
    if (!t) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(t->c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(t->c, sam3__tracker_push_frame_run(t, pixels, W, H, stride, format, 0, out));
}

SAM3DEF sam3_result sam3_tracker_push_encoded(sam3_tracker *t, sam3_tracker_result *out) {
    if (!t) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(t->c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(t->c, sam3__tracker_push_frame_run(t, NULL, 0, 0, 0, SAM3_RGB8, 1, out));
}

/* ==== sam3: concept tracker (Sam3VideoModel: detections and masklets of text concepts) ==== */
/* Sam3VideoModel, built on the video tracker's objects and memory bank: streaming mode (frames one
   at a time, model(frame=...)) and clip mode (propagate_in_video_iterator over a pre-loaded video:
   the hotstart removals and outputs held back hotstart_delay - 1 frames, given out by push_frame
   and, at the end, flush). Not here yet: the keep-alive suppression of the clip mode (off under
   HF's default suppress_unmatched_only_within_hotstart).
   First, the mask primitives of the per-frame loop, on binary masks (one byte per pixel, 0/1) or
   logits. They need no context, so the tests call them directly. */

/* mask_iou: |a & b| / max(|a | b|, 1) over n pixels. */
static float sam3__mask_iou(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i, in = 0, un = 0;
    for (i = 0; i < n; i++) {
        in += (size_t)(a[i] & b[i]);
        un += (size_t)(a[i] | b[i]);
    }
    return (float)in / (float)(un ? un : 1);
}

/* nms_masks: keep[i] = 1 for the detections above prob_thr that survive greedy mask NMS (highest
   probability first, ties in index order; a detection goes when its IoU with a kept one exceeds
   iou_thr), as the cv-utils kernel's generic_nms that HF 5.17 loads from the `kernels` package. HF
   without that package (the GPU machine here) keeps every detection above prob_thr: the concept
   tracker's nms option chooses. masks (n, hw) binary; order (n) ints of scratch. */
static void sam3__nms_masks(const float *prob, const uint8_t *masks, int n, size_t hw, float prob_thr, float iou_thr, uint8_t *keep, int *order) {
    int i, j, m = 0;
    for (i = 0; i < n; i++) {
        keep[i] = prob[i] > prob_thr;
        if (keep[i]) order[m++] = i;
    }
    for (i = 1; i < m; i++) { /* insertion sort, descending, stable */
        const int k = order[i];
        for (j = i; j > 0 && prob[order[j - 1]] < prob[k]; j--) order[j] = order[j - 1];
        order[j] = k;
    }
    for (i = 0; i < m; i++) {
        if (!keep[order[i]]) continue;
        for (j = i + 1; j < m; j++)
            if (keep[order[j]] && sam3__mask_iou(masks + (size_t)order[i] * hw, masks + (size_t)order[j] * hw, hw) > iou_thr) keep[order[j]] = 0;
    }
}

/* Areas of the 8-connected components of the pixels where on[i] == want: area[i] = the size of the
   component holding pixel i (0 for the other pixels). stack (h*w) ints of scratch. The reference's
   cc_2d (and its CPU fallback, skimage.measure.label at full connectivity) connect diagonals too. */
static void sam3__cc_areas(const uint8_t *on, uint8_t want, int h, int w, int32_t *area, int32_t *stack) {
    const size_t n = (size_t)h * w;
    size_t i;
    for (i = 0; i < n; i++) area[i] = on[i] == want ? -1 : 0; /* -1: not yet labelled */
    for (i = 0; i < n; i++) {
        size_t top = 0, start, k;
        if (area[i] != -1) continue;
        /* flood fill, then write the count over the component (its pixels sit in stack[0..cnt)) */
        stack[top++] = (int32_t)i;
        area[i] = -2;
        for (start = 0; start < top; start++) {
            const int p = stack[start], y = p / w, x = p % w;
            int dy, dx;
            for (dy = -1; dy <= 1; dy++)
                for (dx = -1; dx <= 1; dx++) {
                    const int yy = y + dy, xx = x + dx;
                    size_t q;
                    if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    q = (size_t)yy * w + xx;
                    if (area[q] == -1) {
                        area[q] = -2;
                        stack[top++] = (int32_t)q;
                    }
                }
        }
        for (k = 0; k < top; k++) area[stack[k]] = (int32_t)top;
    }
}

/* fill_holes_in_mask_scores on one (h, w) map of logits: background components (<= 0) of at most
   max_area pixels become 0.1 (holes filled), then foreground components (> 0) of at most
   min(max_area, foreground area / 2) pixels become -0.1 (sprinkles removed). HF 5.17 skips both
   without the `kernels` package; the concept tracker's fill option chooses. bin (h*w) bytes, area
   and stack (h*w) ints of scratch. */
static void sam3__fill_holes(float *logits, int h, int w, int max_area, uint8_t *bin, int32_t *area, int32_t *stack) {
    const size_t n = (size_t)h * w;
    size_t i, fg = 0;
    int32_t thr;
    if (max_area <= 0) return;
    for (i = 0; i < n; i++) bin[i] = logits[i] > 0;
    sam3__cc_areas(bin, 0, h, w, area, stack);
    for (i = 0; i < n; i++)
        if (!bin[i] && area[i] <= max_area) logits[i] = 0.1f;
    for (i = 0; i < n; i++) fg += (bin[i] = logits[i] > 0);
    thr = (int32_t)SAM3__MIN(fg / 2, (size_t)max_area);
    sam3__cc_areas(bin, 1, h, w, area, stack);
    for (i = 0; i < n; i++)
        if (bin[i] && area[i] <= thr) logits[i] = -0.1f;
}

/* One frame's output as build_outputs leaves it, before the processor: held back in clip mode. */
typedef struct sam3__concept_frame {
    int frame, w, h, n; /* n objects, ascending id */
    int id[SAM3_MAX_TRACKED_OBJECTS], prompt[SAM3_MAX_TRACKED_OBJECTS];
    float score[SAM3_MAX_TRACKED_OBJECTS], tscore[SAM3_MAX_TRACKED_OBJECTS];
    float *low; /* (n, L, L) logits */
    size_t low_cap;
} sam3__concept_frame;

#define SAM3__OCC_NONE INT_MIN /* no obj_id_to_last_occluded entry yet (the object's first frame) */
#define SAM3__OCC_REMOVED 100000 /* HF's ALWAYS_OCCLUDED: an object removed before it had an entry */

struct sam3_concept_tracker {
    sam3_tracker *t; /* the objects and their memory banks */
    sam3_concept_tracker_options opt;
    int n_prompts;
    char *text[SAM3_MAX_CONCEPT_PROMPTS];     /* NULL: boxes only */
    sam3_concept *cpt[SAM3_MAX_CONCEPT_PROMPTS]; /* the prompt's concepts joined (its own copy), or NULL */
    sam3_box *boxes[SAM3_MAX_CONCEPT_PROMPTS]; /* (n_boxes[p]) exemplars, or NULL */
    int *labels[SAM3_MAX_CONCEPT_PROMPTS];     /* (n_boxes[p]) 1 positive, 0 negative */
    int n_boxes[SAM3_MAX_CONCEPT_PROMPTS];
    int next_id;
    /* per object, parallel to t->obj */
    int prompt[SAM3_MAX_TRACKED_OBJECTS];
    float score[SAM3_MAX_TRACKED_OBJECTS];
    int last_occluded[SAM3_MAX_TRACKED_OBJECTS]; /* -1: never; SAM3__OCC_NONE: no entry yet */
    int first_frame[SAM3_MAX_TRACKED_OBJECTS];   /* clip mode: obj_first_frame_idx */
    int n_unmatched[SAM3_MAX_TRACKED_OBJECTS];   /* clip mode: len(unmatched_frame_inds[obj]) */
    int *dup; /* (MAX, MAX) clip mode: dup[b * MAX + a] frames on which b matched a detection with older a */
    /* the current frame's detections over all prompts (cap_det of them) */
    float *det_prob, *det_low;
    int *det_prompt;
    size_t cap_det;
    sam3__concept_frame *held; /* (n_held) outputs, frame x in held[x % n_held] */
    int n_held, next_out;      /* next_out: the next frame to give out */
    sam3_concept_tracker_object *res; /* (SAM3_MAX_TRACKED_OBJECTS) */
    uint8_t *res_mask;
    size_t res_mask_cap;
};

SAM3DEF sam3_concept_tracker_options sam3_concept_tracker_options_default(void) {
    sam3_concept_tracker_options o;
    memset(&o, 0, sizeof(o));
    return o;
}

/* The options with the reference's defaults filled in (Sam3VideoConfig). */
static sam3_concept_tracker_options sam3__concept_resolve(const sam3_concept_tracker_options *in) {
    sam3_concept_tracker_options o = in ? *in : sam3_concept_tracker_options_default();
    if (o.detection_threshold == 0) o.detection_threshold = 0.5f;
    if (o.new_object_threshold == 0) o.new_object_threshold = 0.7f;
    if (o.match_iou == 0) o.match_iou = 0.1f;
    if (o.track_match_iou == 0) o.track_match_iou = 0.5f;
    if (o.recondition_score == 0) o.recondition_score = 0.8f;
    if (o.recondition_iou == 0) o.recondition_iou = 0.8f;
    if (o.recondition_every == 0) o.recondition_every = 16;
    if (o.occlusion_iou == 0) o.occlusion_iou = 0.7f;
    if (o.nms_iou == 0) o.nms_iou = 0.1f;
    if (o.fill_hole_area == 0) o.fill_hole_area = 16;
    if (o.max_objects <= 0 || o.max_objects > SAM3_MAX_TRACKED_OBJECTS) o.max_objects = SAM3_MAX_TRACKED_OBJECTS;
    if (o.hotstart_delay < 0) o.hotstart_delay = 0;
    if (o.hotstart_unmatch <= 0) o.hotstart_unmatch = 8;
    if (o.hotstart_dup <= 0) o.hotstart_dup = 8;
    return o;
}

SAM3DEF void sam3_concept_tracker_free(sam3_concept_tracker *ct) {
    sam3_allocator a;
    int i;
    if (!ct) return;
    a = ct->t->c->a;
    for (i = 0; i < ct->n_prompts; i++) {
        sam3__afree(&a, ct->text[i]);
        sam3_concept_free(ct->cpt[i]);
        sam3__afree(&a, ct->boxes[i]);
        sam3__afree(&a, ct->labels[i]);
    }
    sam3__afree(&a, ct->det_prob);
    sam3__afree(&a, ct->det_low);
    sam3__afree(&a, ct->det_prompt);
    sam3__afree(&a, ct->res);
    sam3__afree(&a, ct->res_mask);
    sam3__afree(&a, ct->dup);
    if (ct->held)
        for (i = 0; i < ct->n_held; i++) sam3__afree(&a, ct->held[i].low);
    sam3__afree(&a, ct->held);
    sam3_tracker_free(ct->t);
    sam3__afree(&a, ct);
}

SAM3DEF sam3_result sam3_concept_tracker_new(sam3_ctx *c, const sam3_concept_tracker_options *opt, sam3_concept_tracker **out) {
    sam3_concept_tracker *ct;
    sam3_concept_tracker_options o;
    sam3_result rc;
    if (!out) return c ? sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_new: out is NULL") : SAM3_ERR_INVALID_ARG;
    *out = NULL;
    if (!c) return SAM3_ERR_INVALID_ARG;
    o = sam3__concept_resolve(opt);
    if (!sam3__finite(o.detection_threshold) || !sam3__finite(o.new_object_threshold) || !sam3__finite(o.match_iou) ||
        !sam3__finite(o.track_match_iou) || !sam3__finite(o.recondition_score) || !sam3__finite(o.recondition_iou) ||
        !sam3__finite(o.occlusion_iou) || !sam3__finite(o.nms_iou))
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_new: thresholds must be finite");
    if (o.hotstart_delay > 1024) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_new: hotstart_delay %d, at most 1024", o.hotstart_delay);
    if (c->m->arch == SAM3__ARCH_SAM3 && c->m->trk.present && c->m->neck.side[0] != 4 * c->m->trk.grid)
        return sam3__fail(c, SAM3_ERR_UNSUPPORTED, "sam3_concept_tracker_new: the detector's masks (%d) and the tracker's (%d) differ in size",
                          c->m->neck.side[0], 4 * c->m->trk.grid);
    ct = (sam3_concept_tracker *)sam3__acalloc(&c->a, 1, sizeof(*ct));
    if (!ct) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_concept_tracker_new: out of memory");
    if ((rc = sam3_tracker_new(c, NULL, &ct->t)) != SAM3_OK) {
        sam3__afree(&c->a, ct);
        return rc;
    }
    ct->opt = o;
    /* streaming mode: HF's session counts the frames given so far as the video's length (clip
       mode: the whole clip, taken here as at least max_object_pointers_in_encoder frames long) */
    ct->t->ptr_window_grows = o.hotstart_delay == 0;
    ct->n_held = SAM3__MAX(o.hotstart_delay, 1);
    ct->res = (sam3_concept_tracker_object *)sam3__acalloc(&c->a, SAM3_MAX_TRACKED_OBJECTS, sizeof(sam3_concept_tracker_object));
    ct->dup = (int *)sam3__acalloc(&c->a, (size_t)SAM3_MAX_TRACKED_OBJECTS * SAM3_MAX_TRACKED_OBJECTS, sizeof(int));
    ct->held = (sam3__concept_frame *)sam3__acalloc(&c->a, (size_t)ct->n_held, sizeof(sam3__concept_frame));
    if (!ct->res || !ct->dup || !ct->held) {
        sam3_concept_tracker_free(ct);
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "sam3_concept_tracker_new: out of memory");
    }
    *out = ct;
    return SAM3_OK;
}

/* A concept prompt: text and/or box exemplars (sam3_concept_tracker_add_text / _add_prompt). The
   same prompt (text, boxes and labels) twice gives the same index, as the reference's add_prompt
   does for texts. */
static sam3_result sam3__concept_add_prompt(sam3_concept_tracker *ct, const char *fn, const sam3_segment_prompt *pr, int *index) {
    sam3_ctx *c;
    size_t len = 0, nd, lp;
    int i, Q, nb;
    const char *text;
    char *copy = NULL;
    sam3_box *bx = NULL;
    int *lb = NULL;
    float *dp, *dl;
    int *dq;
    sam3_concept *joined = NULL;
    sam3_result rc;
    if (!ct) return SAM3_ERR_INVALID_ARG;
    c = ct->t->c;
    c->err[0] = 0;
    if (!pr) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: prompt is NULL", fn);
    text = pr->text && pr->text[0] ? pr->text : NULL;
    nb = pr->n_boxes;
    if (nb < 0 || nb > SAM3_MAX_BOXES) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %d boxes, expected 0..%d (SAM3_MAX_BOXES)", fn, nb, SAM3_MAX_BOXES);
    if (nb && !pr->boxes) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: n_boxes = %d but boxes is NULL", fn, nb);
    for (i = 0; i < nb; i++) {
        const sam3_box *b = &pr->boxes[i];
        if (!sam3__finite(b->x0) || !sam3__finite(b->y0) || !sam3__finite(b->x1) || !sam3__finite(b->y1))
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: box %d has a NaN or infinite coordinate", fn, i);
        if (pr->box_labels && pr->box_labels[i] != 0 && pr->box_labels[i] != 1)
            return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: box %d has label %d, expected 1 (positive) or 0 (negative)", fn, i, pr->box_labels[i]);
    }
    if (!text && !nb && !pr->n_concepts) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: the prompt is empty (give a text, boxes, concepts)", fn);
    if (text && (len = strlen(text)) > SAM3_MAX_PROMPT_BYTES)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: %zu bytes, more than SAM3_MAX_PROMPT_BYTES", fn, len);
    for (i = 0; i < ct->n_prompts; i++) {
        int k, same = !pr->n_concepts && !ct->cpt[i] && (text ? ct->text[i] && !strcmp(ct->text[i], text) : !ct->text[i]) && ct->n_boxes[i] == nb;
        for (k = 0; same && k < nb; k++)
            same = !memcmp(&ct->boxes[i][k], &pr->boxes[k], sizeof(sam3_box)) && ct->labels[i][k] == (pr->box_labels ? pr->box_labels[k] : 1);
        if (same) {
            if (index) *index = i;
            return SAM3_OK;
        }
    }
    if (ct->n_prompts >= SAM3_MAX_CONCEPT_PROMPTS)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "%s: already %d prompts (SAM3_MAX_CONCEPT_PROMPTS)", fn, SAM3_MAX_CONCEPT_PROMPTS);
    if ((rc = sam3__cpt_join(c, fn, pr, &joined)) != SAM3_OK) return rc;
    Q = c->m->dec.queries;
    lp = (size_t)c->m->neck.side[0] * c->m->neck.side[0];
    nd = (size_t)Q * (ct->n_prompts + 1);
    if (text) copy = (char *)sam3__aalloc(&c->a, len + 1);
    if (nb) {
        bx = (sam3_box *)sam3__aalloc(&c->a, (size_t)nb * sizeof(sam3_box));
        lb = (int *)sam3__aalloc(&c->a, (size_t)nb * sizeof(int));
    }
    dp = (float *)sam3__aalloc(&c->a, nd * sizeof(float));
    dq = (int *)sam3__aalloc(&c->a, nd * sizeof(int));
    dl = (float *)sam3__aalloc(&c->a, nd * lp * sizeof(float));
    if ((text && !copy) || (nb && (!bx || !lb)) || !dp || !dq || !dl) {
        sam3__afree(&c->a, copy);
        sam3__afree(&c->a, bx);
        sam3__afree(&c->a, lb);
        sam3__afree(&c->a, dp);
        sam3__afree(&c->a, dq);
        sam3__afree(&c->a, dl);
        sam3_concept_free(joined);
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    if (text) memcpy(copy, text, len + 1);
    for (i = 0; i < nb; i++) {
        bx[i] = pr->boxes[i];
        lb[i] = pr->box_labels ? pr->box_labels[i] : 1;
    }
    sam3__afree(&c->a, ct->det_prob);
    sam3__afree(&c->a, ct->det_prompt);
    sam3__afree(&c->a, ct->det_low);
    ct->det_prob = dp;
    ct->det_prompt = dq;
    ct->det_low = dl;
    ct->cap_det = nd;
    ct->text[ct->n_prompts] = copy;
    ct->cpt[ct->n_prompts] = joined;
    ct->boxes[ct->n_prompts] = bx;
    ct->labels[ct->n_prompts] = lb;
    ct->n_boxes[ct->n_prompts] = nb;
    if (index) *index = ct->n_prompts;
    ct->n_prompts++;
    return SAM3_OK;
}

SAM3DEF sam3_result sam3_concept_tracker_add_text(sam3_concept_tracker *ct, const char *text, int *index) {
    sam3_segment_prompt pr;
    if (!ct) return SAM3_ERR_INVALID_ARG;
    if (!text || !text[0]) return sam3__fail(ct->t->c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_add_text: the text is empty");
    memset(&pr, 0, sizeof(pr));
    pr.text = text;
    return sam3__concept_add_prompt(ct, "sam3_concept_tracker_add_text", &pr, index);
}

SAM3DEF sam3_result sam3_concept_tracker_add_prompt(sam3_concept_tracker *ct, const sam3_segment_prompt *prompt, int *index) {
    return sam3__concept_add_prompt(ct, "sam3_concept_tracker_add_prompt", prompt, index);
}

/* _apply_non_overlapping_constraints + _suppress_shrunk_masks on one prompt's masks (idx, n of
   them, (L*L) logits each): a mask that keeps less than 0.3 of its area where it is not the
   highest logit (first on ties) is pushed to <= -10 everywhere. */
static void sam3__concept_shrink(float *const *mk, int n, size_t lp, uint8_t *drop) {
    int i, j;
    size_t q;
    for (i = 0; i < n; i++) {
        long before = 0, after = 0;
        for (q = 0; q < lp; q++) {
            const float v = mk[i][q];
            int best = 0;
            if (!(v > 0)) continue;
            before++;
            for (j = 1; j < n; j++)
                if (mk[j][q] > mk[best][q]) best = j;
            after += best == i;
        }
        drop[i] = (float)after / (float)(before > 0 ? before : 1) < 0.3f;
    }
}

/* _process_hotstart (clip mode) for the n tracked objects: unm (n) the unmatched counts with this
   frame's (a non-empty tracked mask that reaches no detection at track_match_iou), dup (n, n) the
   duplicate counts with this frame's (per detection matched at match_iou by two or more objects,
   every one but the first started counts once against it), removed (n) the objects that started
   within the last hotstart_delay frames and reach either count. iou (nd, n) zero across prompts;
   tbin (n, lp). The keep-alive suppression is not here: HF's default
   (suppress_unmatched_only_within_hotstart) switches it off. */
static void sam3__concept_process_hotstart(const sam3_concept_tracker *ct, int f, int n, int nd, const float *iou, const uint8_t *tbin, size_t lp,
                                           int *unm, int *dup, uint8_t *removed) {
    const sam3_concept_tracker_options *op = &ct->opt;
    const int M = SAM3_MAX_TRACKED_OBJECTS, since = f - op->hotstart_delay;
    int i, k, a;
    for (i = 0; i < n; i++) {
        int nonempty = 0, matched = 0;
        size_t q;
        for (q = 0; q < lp && !nonempty; q++) nonempty = tbin[(size_t)i * lp + q];
        for (k = 0; k < nd && !matched; k++) matched = iou[(size_t)k * n + i] >= op->track_match_iou;
        unm[i] = ct->n_unmatched[i] + (nonempty && !matched);
        for (a = 0; a < n; a++) dup[i * n + a] = ct->dup[i * M + a];
        removed[i] = unm[i] >= op->hotstart_unmatch && ct->first_frame[i] > since;
    }
    for (k = 0; k < nd; k++) {
        int first = -1, cnt = 0;
        for (i = 0; i < n; i++) /* the earliest started, the first in id order on ties (Python's min) */
            if (iou[(size_t)k * n + i] >= op->match_iou) {
                cnt++;
                if (first < 0 || ct->first_frame[i] < ct->first_frame[first]) first = i;
            }
        if (cnt < 2) continue;
        for (i = 0; i < n; i++)
            if (i != first && iou[(size_t)k * n + i] >= op->match_iou) dup[i * n + first]++;
    }
    for (i = 0; i < n; i++)
        if (!removed[i] && ct->first_frame[i] > since)
            for (a = 0; a < n; a++)
                if (dup[i * n + a] >= op->hotstart_dup) removed[i] = 1;
}

/* build_outputs into fr: the objects after this frame's removals (the n - removed tracked ones, then
   the n_new new ones) with their low-resolution masks and tracker probabilities. Transformers 5.17
   pairs the object list taken after the removals with the tracker's masks and scores taken before
   them (zip(inference_session.obj_ids, tracker_low_res_masks_global), and the same for the tracker
   scores), so on a frame where an object is removed each later object gets the mask and tracker
   probability of the one before it; a new object keeps its own detection mask (written after) but
   not its probability when it lands on a tracked slot. That is copied here for parity. tlow (n, lp)
   the suppressed tracked masks; tsc (n) tracker logits; recond/hc_det (n) reconditioning (the
   object's own detection mask); new_det (n_new) detection indices; fill: hole filling for new ones. */
static void sam3__concept_build_outputs(sam3_concept_tracker *ct, sam3__concept_frame *fr, int n, const uint8_t *removed, const float *tlow,
                                        const float *tsc, const uint8_t *recond, const int *hc_det, const int *new_det, int n_new, size_t lp,
                                        int L, uint8_t *fbin, int32_t *farea, int32_t *fstack) {
    const sam3_tracker *t = ct->t;
    int i, j = 0, pos = 0;
    for (i = 0; i < n + n_new; i++) {
        float *dst = fr->low + (size_t)pos * lp;
        if (i < n && removed[i]) continue;
        if (i < n) {
            fr->id[pos] = t->obj[i].id;
            fr->prompt[pos] = ct->prompt[i];
            fr->score[pos] = ct->score[i];
            memcpy(dst, recond[i] ? ct->det_low + (size_t)hc_det[i] * lp : tlow + (size_t)pos * lp, lp * sizeof(float));
        } else {
            j = new_det[i - n];
            fr->id[pos] = ct->next_id + (i - n);
            fr->prompt[pos] = ct->det_prompt[j];
            fr->score[pos] = ct->det_prob[j];
            memcpy(dst, ct->det_low + (size_t)j * lp, lp * sizeof(float));
            if (ct->opt.fill_hole_area > 0) sam3__fill_holes(dst, L, L, ct->opt.fill_hole_area, fbin, farea, fstack);
        }
        fr->tscore[pos] = pos < n ? sam3__sigmoid(tsc[pos]) : ct->det_prob[j];
        pos++;
    }
    fr->n = pos;
}

/* Sam3VideoProcessor.postprocess_outputs on a held frame: the low-resolution masks to the frame's
   size, > 0; empty ones and objects removed since (not among the live ids) left out; boxes; then
   per prompt each pixel to the visible object with the highest tracker probability. Writes ct->res
   and ct->res_mask; call between sam3__begin and sam3__end. */
static sam3_result sam3__concept_postprocess_outputs(sam3_concept_tracker *ct, const sam3__concept_frame *fr, const int *live, int n_live, int L,
                                                     sam3_concept_tracker_result *out) {
    sam3_ctx *c = ct->t->c;
    const int W = fr->w, H = fr->h, n = fr->n;
    const size_t lp = (size_t)L * L, plane = (size_t)W * H;
    const float **srcs = (const float **)sam3__salloc(c, (size_t)SAM3__MAX(n, 1) * sizeof(float *));
    long *area = (long *)sam3__salloc(c, (size_t)SAM3__MAX(n, 1) * sizeof(long));
    int grp[SAM3_MAX_TRACKED_OBJECTS];
    int i, k, p, n_vis = 0;
    sam3_result rc;
    if (!srcs || !area) return SAM3_ERR_OUT_OF_MEMORY;
    if (!sam3__grow(c, (void **)&ct->res_mask, &ct->res_mask_cap, (size_t)SAM3__MAX(n, 1) * plane))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d masks of %dx%d", n, W, H);
    for (i = 0; i < n; i++) srcs[i] = fr->low + (size_t)i * lp;
    if (n) {
        sam3__lerp *ty = (sam3__lerp *)sam3__salloc(c, (size_t)H * sizeof(sam3__lerp));
        sam3__lerp *tx = (sam3__lerp *)sam3__salloc(c, (size_t)W * sizeof(sam3__lerp));
        if (!ty || !tx) return SAM3_ERR_OUT_OF_MEMORY;
        sam3__lerp_table(L, H, ty);
        sam3__lerp_table(L, W, tx);
        if ((rc = sam3__resize_threshold_n(c, n, srcs, 0, L, L, ty, tx, H, W, 0.0f, ct->res_mask, area)) != SAM3_OK) return rc;
    }
    for (i = 0; i < n; i++) {
        sam3_concept_tracker_object *ob = &ct->res[n_vis];
        const uint8_t *mk = ct->res_mask + (size_t)i * plane;
        int alive = 0;
        for (k = 0; k < n_live && !alive; k++) alive = live[k] == fr->id[i];
        if (area[i] <= 0 || !alive) continue;
        memset(ob, 0, sizeof(*ob));
        ob->id = fr->id[i];
        ob->prompt = fr->prompt[i];
        ob->score = fr->score[i];
        ob->tracker_score = fr->tscore[i];
        ob->mask = mk;
        ob->low_res_logits = fr->low + (size_t)i * lp;
        sam3__mask_bounds(mk, W, H, area[i], &ob->box);
        grp[n_vis] = i;
        n_vis++;
    }
    /* _apply_object_wise_non_overlapping_constraints, per prompt, on the visible objects */
    for (i = 0; i < n_vis; i++) ct->res[i].area = 0;
    {
        size_t q;
        for (q = 0; q < plane; q++) {
            for (p = 0; p < ct->n_prompts; p++) {
                int best = -1;
                for (i = 0; i < n_vis; i++) {
                    const int oi = grp[i];
                    if (ct->res[i].prompt != p || !ct->res_mask[(size_t)oi * plane + q]) continue;
                    if (best < 0 || fr->tscore[oi] > fr->tscore[grp[best]]) best = i;
                }
                for (i = 0; i < n_vis; i++) {
                    const int oi = grp[i];
                    if (ct->res[i].prompt != p || !ct->res_mask[(size_t)oi * plane + q]) continue;
                    if (i != best) ct->res_mask[(size_t)oi * plane + q] = 0;
                    else ct->res[i].area++;
                }
            }
        }
    }
    out->frame = fr->frame;
    out->n_objects = n_vis;
    out->objects = ct->res;
    out->width = W;
    out->height = H;
    out->low_res_width = out->low_res_height = L;
    return SAM3_OK;
}

/* The scratch of one frame of the concept tracker, from the detections (nd after NMS) and the n
   tracked objects to the memories: made by sam3__concept_step_alloc, read and written by the steps
   below in the reference's order. */
typedef struct sam3__concept_step {
    int f, n, nd, n_new, W, H;
    sam3__trk_out *ro;     /* (n + nd) per object: tracker outputs (masks, pointer, memory) */
    float *tlow;           /* (n, L, L) tracked logits, hole-filled, then suppressed */
    uint8_t *tbin, *dbin;  /* (n, L, L) tlow > 0; (nd, L, L) detection logits > 0 */
    float *iou;            /* (nd, n) detection to tracked-mask IoU, zero across prompts */
    uint8_t *keep;         /* (nd) is_new_det */
    int *new_det, *hc_det; /* (nd) the new detections; (n) each object's reconditioning detection or -1 */
    int *occ_new, *occ_prev; /* (n) last occluded frame after and before this one */
    int *grp;              /* (n + nd) index scratch */
    float **srcs;          /* (n + nd) mask pointers */
    uint8_t *supp, *recond, *drop, *gdrop, *removed; /* (n) suppressed, reconditioned, shrunk, removed */
    float *mask16, *hm;    /* (16g, 16g) the memory encoder's input; (L, L) */
    uint8_t *fbin;         /* (L, L) hole-filling scratch, with farea, fstack */
    int32_t *farea, *fstack;
    int *order;            /* (nd) NMS scratch */
    int *unm, *dup;        /* (n) clip mode's unmatched counts; (n, n) duplicate counts */
    float *tsc;            /* (n) tracker logits */
    size_t pb, mb;         /* bytes of an object pointer, of a memory */
    sam3__trk_entry *newcond[SAM3_MAX_TRACKED_OBJECTS]; /* (n) reconditioned objects' new entries */
    int fresh, yield;      /* new objects made so far (for the undo); a frame is given out */
} sam3__concept_step;

/* run_detection: the detector per prompt (its text and box exemplars, as sam3_segment: HF 5.17's
   Sam3VideoModel has text prompts only) on the shared image features, detections above the
   threshold merged in prompt order (_merge_detections_from_prompts); *nd gets the number of detections (in ct->det_*). */
static sam3_result sam3__concept_run_detection(sam3_concept_tracker *ct, int *n_det) {
    sam3_ctx *c = ct->t->c;
    const int L = 4 * c->m->trk.grid;
    const size_t lp = (size_t)L * L;
    int p, k, nd = 0;
    sam3_result rc;
    for (p = 0; p < ct->n_prompts; p++) {
        sam3_segment_options so = sam3_segment_options_default();
        sam3_segment_result seg;
        sam3_segment_prompt pr;
        memset(&pr, 0, sizeof(pr));
        pr.text = ct->text[p];
        pr.concepts = (const sam3_concept *const *)&ct->cpt[p];
        pr.n_concepts = ct->cpt[p] != NULL;
        pr.boxes = ct->boxes[p];
        pr.box_labels = ct->labels[p];
        pr.n_boxes = ct->n_boxes[p];
        so.score_threshold = ct->opt.detection_threshold;
        so.no_masks = 1;
        so.low_res = 1;
        if ((rc = sam3__segment_run(c, &pr, &so, &seg)) < 0) return rc;
        for (k = 0; k < seg.n_instances && (size_t)nd < ct->cap_det; k++) {
            ct->det_prob[nd] = seg.instances[k].score;
            ct->det_prompt[nd] = p;
            memcpy(ct->det_low + (size_t)nd * lp, seg.instances[k].low_res_logits, lp * sizeof(float));
            nd++;
        }
    }
    *n_det = nd;
    return SAM3_OK;
}

/* nms_masks per prompt on the st->nd detections (off when nms_iou < 0, as HF without the kernels
   package): dbin gets their binary masks, the survivors are moved to the front (det_* and dbin);
   returns their number. order (nd) ints of scratch. */
static int sam3__concept_nms_masks(sam3_concept_tracker *ct, sam3__concept_step *st, int *order) {
    const sam3_concept_tracker_options *op = &ct->opt;
    const int L = 4 * ct->t->c->m->trk.grid;
    const size_t lp = (size_t)L * L;
    uint8_t *dbin = st->dbin, *keep = st->keep;
    int nd = st->nd, p, k;
    for (k = 0; k < nd; k++) {
        size_t q;
        for (q = 0; q < lp; q++) dbin[(size_t)k * lp + q] = ct->det_low[(size_t)k * lp + q] > 0;
    }
    if (op->nms_iou >= 0 && nd > 1) {
        int w2 = 0;
        for (k = 0; k < nd; k++) keep[k] = 1;
        for (p = 0; p < ct->n_prompts; p++) {
            int cnt = 0, a0 = -1;
            for (k = 0; k < nd; k++)
                if (ct->det_prompt[k] == p) {
                    if (a0 < 0) a0 = k;
                    cnt++;
                }
            /* a prompt's detections are contiguous (merged in prompt order) */
            if (cnt > 1) sam3__nms_masks(ct->det_prob + a0, dbin + (size_t)a0 * lp, cnt, lp, -1.0f, op->nms_iou, keep + a0, order);
        }
        for (k = 0; k < nd; k++) {
            if (!keep[k]) continue;
            if (w2 != k) {
                ct->det_prob[w2] = ct->det_prob[k];
                ct->det_prompt[w2] = ct->det_prompt[k];
                memcpy(ct->det_low + (size_t)w2 * lp, ct->det_low + (size_t)k * lp, lp * sizeof(float));
                memcpy(dbin + (size_t)w2 * lp, dbin + (size_t)k * lp, lp);
            }
            w2++;
        }
        nd = w2;
    }
    return nd;
}

/* The frame's scratch, once the detector has run (nd detections): every buffer of st, then NMS on
   the detections (st->nd: the kept) and the output buffers of the n tracked objects and the kept
   detections. */
static sam3_result sam3__concept_step_alloc(sam3_concept_tracker *ct, sam3__concept_step *st, int nd, int W, int H) {
    sam3_tracker *t = ct->t;
    sam3_ctx *c = t->c;
    const int g = c->m->trk.grid, N = g * g, n = t->n_obj, n1 = SAM3__MAX(n, 1), d1 = SAM3__MAX(nd, 1), a1 = SAM3__MAX(n + nd, 1);
    const size_t lp = (size_t)16 * N;
    memset(st, 0, sizeof(*st));
    st->f = t->next;
    st->n = n;
    st->nd = nd;
    st->W = W;
    st->H = H;
    st->pb = (size_t)c->m->trk.D * sizeof(float);
    st->mb = (size_t)N * c->m->vid.mem_dim * sizeof(uint16_t);
    st->ro = (sam3__trk_out *)sam3__salloc(c, (size_t)a1 * sizeof(*st->ro));
    st->tlow = sam3__sallocf(c, (size_t)n1 * lp);
    st->tbin = (uint8_t *)sam3__salloc(c, (size_t)n1 * lp);
    st->dbin = (uint8_t *)sam3__salloc(c, (size_t)d1 * lp);
    st->iou = sam3__sallocf(c, (size_t)SAM3__MAX(nd * n, 1));
    st->keep = (uint8_t *)sam3__salloc(c, (size_t)d1);
    st->order = (int *)sam3__salloc(c, (size_t)d1 * sizeof(int));
    st->new_det = (int *)sam3__salloc(c, (size_t)d1 * sizeof(int));
    st->hc_det = (int *)sam3__salloc(c, (size_t)n1 * sizeof(int));
    st->occ_new = (int *)sam3__salloc(c, (size_t)n1 * sizeof(int));
    st->occ_prev = (int *)sam3__salloc(c, (size_t)n1 * sizeof(int));
    st->unm = (int *)sam3__salloc(c, (size_t)n1 * sizeof(int));
    st->dup = (int *)sam3__salloc(c, (size_t)SAM3__MAX(n * n, 1) * sizeof(int));
    st->removed = (uint8_t *)sam3__salloc(c, (size_t)n1);
    st->grp = (int *)sam3__salloc(c, (size_t)a1 * sizeof(int));
    st->supp = (uint8_t *)sam3__salloc(c, (size_t)n1);
    st->recond = (uint8_t *)sam3__salloc(c, (size_t)n1);
    st->drop = (uint8_t *)sam3__salloc(c, (size_t)n1);
    st->gdrop = (uint8_t *)sam3__salloc(c, (size_t)n1);
    st->mask16 = sam3__sallocf(c, (size_t)256 * N);
    st->hm = sam3__sallocf(c, lp);
    st->tsc = sam3__sallocf(c, (size_t)n1);
    st->srcs = (float **)sam3__salloc(c, (size_t)a1 * sizeof(float *));
    st->fbin = (uint8_t *)sam3__salloc(c, lp);
    st->farea = (int32_t *)sam3__salloc(c, lp * sizeof(int32_t));
    st->fstack = (int32_t *)sam3__salloc(c, lp * sizeof(int32_t));
    if (!st->ro || !st->tlow || !st->tbin || !st->dbin || !st->iou || !st->keep || !st->order || !st->new_det || !st->hc_det || !st->occ_new ||
        !st->occ_prev || !st->unm || !st->dup || !st->removed || !st->grp || !st->supp || !st->recond || !st->drop || !st->gdrop ||
        !st->mask16 || !st->hm || !st->tsc || !st->srcs || !st->fbin || !st->farea || !st->fstack)
        return SAM3_ERR_OUT_OF_MEMORY;
    st->nd = sam3__concept_nms_masks(ct, st, st->order);
    return sam3__trk_outs_alloc(c, st->ro, n + st->nd) ? SAM3_OK : SAM3_ERR_OUT_OF_MEMORY;
}

/* run_tracker_propagation: every tracked object on this frame, its memory left for later; hole
   filling on the low-resolution masks */
static sam3_result sam3__concept_run_tracker_propagation(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    sam3_ctx *c = t->c;
    const sam3_concept_tracker_options *op = &ct->opt;
    const int L = 4 * c->m->trk.grid, f = st->f, n = st->n;
    const size_t lp = (size_t)L * L;
    const int W = st->W, H = st->H, fill = op->fill_hole_area > 0;
    sam3__trk_out *ro = st->ro;
    float *tlow = st->tlow;
    uint8_t *tbin = st->tbin;
    sam3_result rc;
    int i;
    for (i = 0; i < n; i++) {
        size_t q;
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted before object %d of frame %d", t->obj[i].id, f);
        if ((rc = sam3__trk_object(t, &t->obj[i], W, H, &ro[i])) != SAM3_OK) return rc;
        memcpy(tlow + (size_t)i * lp, ro[i].low, lp * sizeof(float));
        if (fill) sam3__fill_holes(tlow + (size_t)i * lp, L, L, op->fill_hole_area, st->fbin, st->farea, st->fstack);
        for (q = 0; q < lp; q++) tbin[(size_t)i * lp + q] = tlow[(size_t)i * lp + q] > 0;
    }
    return SAM3_OK;
}

/* _associate_det_trk: IoUs zero across prompts; a detection is new when it reaches no tracked
   mask at match_iou (and scores new_object_threshold; with nothing tracked every detection is
   new, as the reference); reconditioning pairs from confident, well-overlapping detections.
   Returns the number of new objects (new_det). */
static int sam3__concept_associate_det_trk(sam3_concept_tracker *ct, sam3__concept_step *st) {
    const sam3_concept_tracker_options *op = &ct->opt;
    const int L = 4 * ct->t->c->m->trk.grid, n = st->n, nd = st->nd;
    const size_t lp = (size_t)L * L;
    const uint8_t *dbin = st->dbin, *tbin = st->tbin;
    float *iou = st->iou;
    uint8_t *keep = st->keep;
    int *new_det = st->new_det, *hc_det = st->hc_det;
    int i, j, k, n_new = 0;
    for (i = 0; i < n; i++) hc_det[i] = -1;
    for (k = 0; k < nd; k++) {
        int matches = 0, best = 0;
        for (i = 0; i < n; i++) {
            const float u = ct->det_prompt[k] == ct->prompt[i] ? sam3__mask_iou(dbin + (size_t)k * lp, tbin + (size_t)i * lp, lp) : 0.0f;
            iou[(size_t)k * n + i] = u;
            matches |= u >= op->match_iou;
            if (u > iou[(size_t)k * n + best]) best = i;
        }
        keep[k] = n == 0 || (ct->det_prob[k] >= op->new_object_threshold && !matches); /* is_new_det */
        if (n > 0 && !keep[k] && ct->det_prob[k] >= op->recondition_score && iou[(size_t)k * n + best] >= op->recondition_iou) hc_det[best] = k;
    }
    for (k = 0; k < nd; k++)
        if (keep[k]) new_det[n_new++] = k;
    if (n + n_new > op->max_objects) { /* the best-scoring new ones, best first (topk) */
        const int room = SAM3__MAX(0, op->max_objects - n);
        for (j = 1; j < n_new; j++) {
            const int x = new_det[j];
            for (k = j; k > 0 && ct->det_prob[new_det[k - 1]] < ct->det_prob[x]; k--) new_det[k] = new_det[k - 1];
            new_det[k] = x;
        }
        n_new = room;
    }
    return n_new;
}

/* _suppress_overlapping_based_on_recent_occlusion, per prompt: of two tracked masks overlapping at
   occlusion_iou, the one occluded more recently goes to -10 (an object removed now without a
   last-occluded entry counts as always occluded); occ_new gets each object's last occluded frame. */
static void sam3__concept_suppress_overlapping_based_on_recent_occlusion(sam3_concept_tracker *ct, sam3__concept_step *st) {
    const sam3_concept_tracker_options *op = &ct->opt;
    const int L = 4 * ct->t->c->m->trk.grid, f = st->f, n = st->n;
    const size_t lp = (size_t)L * L;
    const uint8_t *tbin = st->tbin, *removed = st->removed;
    float *tlow = st->tlow;
    uint8_t *supp = st->supp;
    int *occ_new = st->occ_new, *occ_prev = st->occ_prev;
    int i, j;
    for (i = 0; i < n; i++) {
        size_t q;
        int any = 0;
        supp[i] = 0;
        occ_prev[i] = ct->last_occluded[i] != SAM3__OCC_NONE ? ct->last_occluded[i] : removed[i] ? SAM3__OCC_REMOVED : -1;
        for (q = 0; q < lp && !any; q++) any = tbin[(size_t)i * lp + q];
        occ_new[i] = any ? occ_prev[i] : f;
    }
    if (op->occlusion_iou >= 0)
        for (i = 0; i < n; i++)
            for (j = i + 1; j < n; j++) {
                const int li = occ_prev[i], lj = occ_prev[j];
                if (ct->prompt[i] != ct->prompt[j] || sam3__mask_iou(tbin + (size_t)i * lp, tbin + (size_t)j * lp, lp) < op->occlusion_iou) continue;
                if (li > lj && lj > -1) supp[i] = 1;
                if (lj > li && li > -1) supp[j] = 1;
            }
    for (i = 0; i < n; i++)
        if (supp[i]) {
            size_t q;
            occ_new[i] = f;
            for (q = 0; q < lp; q++) tlow[(size_t)i * lp + q] = -10.0f;
        }
}

/* _prepare_recondition_masks: every recondition_every-th frame, an object whose best confident
   detection overlaps it and whose tracker logit is above recondition_score makes this frame a
   conditioning frame (with its own tracked mask: recondition_on_trk_masks) */
static void sam3__concept_prepare_recondition_masks(sam3_concept_tracker *ct, sam3__concept_step *st) {
    const sam3_concept_tracker_options *op = &ct->opt;
    const int f = st->f, n = st->n;
    const int recond_frame = op->recondition_every > 0 && f % op->recondition_every == 0;
    int i;
    for (i = 0; i < n; i++) st->recond[i] = recond_frame && st->hc_det[i] >= 0 && st->ro[i].score > op->recondition_score;
}

/* _tracker_update_memories: the (suppressed) masks, the shrinkage rule per prompt, object score
   +-10 from the area, memory through the sigmoid. When new objects join, the reference runs the
   tracker again on this frame for every object not reconditioned, and that run's memories
   (binarised: a mask prompt is in the batch) replace these: only the reconditioned keep them. */
static sam3_result sam3__concept_tracker_update_memories(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_ctx *c = ct->t->c;
    const int L = 4 * c->m->trk.grid, n = st->n;
    const size_t lp = (size_t)L * L;
    const sam3__vid_cfg *v = &c->m->vid;
    const int g = c->m->trk.grid, N = g * g, n_new = st->n_new;
    const float *tlow = st->tlow;
    const uint8_t *recond = st->recond;
    uint8_t *drop = st->drop, *gdrop = st->gdrop;
    int *grp = st->grp;
    float **srcs = st->srcs, *hm = st->hm, *mask16 = st->mask16;
    sam3__trk_out *ro = st->ro;
    sam3_result rc;
    int i, p;
    for (p = 0; p < ct->n_prompts; p++) {
        int gn = 0;
        for (i = 0; i < n; i++)
            if (ct->prompt[i] == p) {
                grp[gn] = i;
                srcs[gn++] = (float *)tlow + (size_t)i * lp;
            }
        for (i = 0; i < gn; i++) gdrop[i] = 0;
        if (gn > 1) sam3__concept_shrink(srcs, gn, lp, gdrop);
        for (i = 0; i < gn; i++) drop[grp[i]] = gdrop[i];
    }
    for (i = 0; i < n; i++) {
        size_t q;
        int any = 0;
        if (n_new && !recond[i]) continue;
        for (q = 0; q < lp; q++) {
            hm[q] = drop[i] ? SAM3__MIN(tlow[(size_t)i * lp + q], -10.0f) : tlow[(size_t)i * lp + q];
            any |= hm[q] > 0;
        }
        if ((rc = sam3__aa_resize_f32(c, hm, L, L, mask16, 16 * g, 16 * g)) != SAM3_OK) return rc;
        for (q = 0; q < (size_t)256 * N; q++) mask16[q] = sam3__sigmoid(mask16[q]) * v->sig_scale + v->sig_bias;
        if ((rc = sam3__memory_encoder(c, c->trk_e, mask16, any ? 10.0f : -10.0f, ro[i].mem)) != SAM3_OK) return rc;
    }
    return SAM3_OK;
}

/* _tracker_add_new_objects: each new detection's mask (>= 0.5) as a mask prompt on a fresh object
   (st->fresh counts those made, for the undo), run on this frame. */
static sam3_result sam3__concept_tracker_add_new_objects(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    sam3_ctx *c = t->c;
    const int L = 4 * c->m->trk.grid, n = st->n;
    const size_t lp = (size_t)L * L;
    sam3_result rc;
    int j;
    for (j = 0; j < st->n_new; j++) {
        sam3__trk_obj *o = &t->obj[n + j];
        const float *dl = ct->det_low + (size_t)st->new_det[j] * lp;
        size_t q;
        if (!sam3__trk_obj_init(t, o, ct->next_id + j)) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for a new object");
        st->fresh = j + 1;
        o->mask = (uint8_t *)sam3__trk_alloc(t, lp);
        if (!o->mask) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for a new object");
        o->mask_w = o->mask_h = L;
        for (q = 0; q < lp; q++) o->mask[q] = dl[q] >= 0.5f;
        o->mask_soft = 1;
        o->pending = 1;
        if ((rc = sam3__trk_object(t, o, st->W, st->H, &st->ro[n + j])) != SAM3_OK) return rc;
    }
    return SAM3_OK;
}

/* With new objects on the frame, the memories of the new objects and of the old ones not
   reconditioned are encoded again from their masks, binarised (the frame's prompts make every
   memory's mask binary, as sam3__tracker_encode_memories). */
static sam3_result sam3__concept_encode_new_memories(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_ctx *c = ct->t->c;
    const int n = st->n;
    sam3_result rc;
    int i;
    if (!st->n_new) return SAM3_OK;
    for (i = 0; i < n + st->n_new; i++) {
        if (i < n && st->recond[i]) continue;
        if ((rc = sam3__trk_encode_memory(c, st->ro[i].high, 1, st->mask16, st->ro[i].score, st->ro[i].mem)) != SAM3_OK) return rc;
        if (sam3__aborted(c)) return sam3__fail(c, SAM3_ERR_ABORTED, "aborted in the memory encoder of frame %d", st->f);
    }
    return SAM3_OK;
}

/* build_outputs into this frame's slot; the processor on the frame given out now (this one in
   streaming mode, the one hotstart_delay - 1 frames back in clip mode), hiding objects removed
   since: the live ones are those left after this frame. st->yield: a frame is given out. */
static sam3_result sam3__concept_outputs(sam3_concept_tracker *ct, sam3__concept_step *st, sam3_concept_tracker_result *out) {
    sam3_ctx *c = ct->t->c;
    const int L = 4 * c->m->trk.grid, n = st->n, f = st->f;
    sam3__concept_frame *fr = &ct->held[f % ct->n_held];
    int live[SAM3_MAX_TRACKED_OBJECTS], n_live = 0, i;
    sam3_result rc;
    for (i = 0; i < n; i++) st->tsc[i] = st->ro[i].score;
    if (!sam3__grow(c, (void **)&fr->low, &fr->low_cap, (size_t)SAM3__MAX(n + st->n_new, 1) * L * L * sizeof(float)))
        return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for %d masks", n + st->n_new);
    fr->frame = f;
    fr->w = st->W;
    fr->h = st->H;
    sam3__concept_build_outputs(ct, fr, n, st->removed, st->tlow, st->tsc, st->recond, st->hc_det, st->new_det, st->n_new, (size_t)L * L, L,
                                st->fbin, st->farea, st->fstack);
    for (i = 0; i < fr->n; i++) live[n_live++] = fr->id[i];
    st->yield = f + 1 - ct->next_out >= ct->n_held;
    if (st->yield && (rc = sam3__concept_postprocess_outputs(ct, &ct->held[ct->next_out % ct->n_held], live, n_live, L, out)) != SAM3_OK) {
        out->frame = -1;
        out->n_objects = 0;
        return rc;
    }
    return SAM3_OK;
}

/* Everything that can fail comes before the commit: the conditioning entries of reconditioned
   objects, and each new object's first (it has none). */
static sam3_result sam3__concept_prepare_commit(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    sam3_ctx *c = t->c;
    const int n = st->n;
    int i, j;
    for (i = 0; i < n; i++) {
        sam3__trk_obj *o = &t->obj[i];
        st->newcond[i] = NULL;
        if (!st->recond[i]) continue;
        st->newcond[i] = sam3__trk_cond_add(t, o, st->pb, st->mb);
        if (!st->newcond[i] || !st->newcond[i]->ptr || !st->newcond[i]->mem)
            return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for object %d's memory", o->id);
    }
    for (j = 0; j < st->n_new; j++) {
        sam3__trk_obj *o = &t->obj[n + j];
        sam3__trk_entry *e = sam3__trk_cond_add(t, o, st->pb, st->mb);
        if (e) {
            e->frame = -1;
            o->n_cond = 1; /* so that sam3__trk_obj_free releases them on the way out of a failure */
        }
        if (!e || !e->ptr || !e->mem) return sam3__fail(c, SAM3_ERR_OUT_OF_MEMORY, "out of memory for a new object");
    }
    return SAM3_OK;
}

/* A new object i (at st->n + j) committed: its output as its first conditioning frame, its mask
   prompt dropped, its bookkeeping from the detection that started it. */
static void sam3__concept_commit_new(sam3_concept_tracker *ct, const sam3__concept_step *st, int i) {
    sam3_tracker *t = ct->t;
    sam3__trk_obj *o = &t->obj[i];
    const int d = st->new_det[i - st->n], L = 4 * t->c->m->trk.grid;
    int j;
    sam3__trk_entry_set(&o->cond[0], st->f, &st->ro[i], st->pb, st->mb);
    o->n_cond = 1;
    o->pending = 0;
    sam3__trk_free(t, o->mask, (size_t)L * L);
    o->mask = NULL;
    o->mask_w = o->mask_h = 0;
    ct->prompt[i] = ct->det_prompt[d];
    ct->score[i] = ct->det_prob[d];
    ct->last_occluded[i] = SAM3__OCC_NONE;
    ct->first_frame[i] = st->f;
    ct->n_unmatched[i] = 0;
    for (j = 0; j < SAM3_MAX_TRACKED_OBJECTS; j++) ct->dup[i * SAM3_MAX_TRACKED_OBJECTS + j] = ct->dup[j * SAM3_MAX_TRACKED_OBJECTS + i] = 0;
}

/* The commit (nothing here can fail): new objects, reconditioned ones (a new conditioning frame)
   and tracked ones (their rings); conditioning memories no later frame reads freed; clip mode's
   hotstart counts; the frame counted. */
static void sam3__concept_commit(sam3_concept_tracker *ct, const sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    const int n = st->n, f = st->f;
    int i, j;
    for (i = 0; i < n + st->n_new; i++) {
        sam3__trk_obj *o = &t->obj[i];
        if (i >= n) {
            sam3__concept_commit_new(ct, st, i);
        } else if (st->recond[i]) {
            sam3__trk_entry_set(st->newcond[i], f, &st->ro[i], st->pb, st->mb);
            o->n_cond++;
            ct->last_occluded[i] = st->occ_new[i];
        } else {
            sam3__trk_ring_set(t, o, f, &st->ro[i], st->pb, st->mb);
            ct->last_occluded[i] = st->occ_new[i];
        }
        sam3__trk_cond_trim(t, o, f, st->mb);
    }
    if (ct->opt.hotstart_delay > 0)
        for (i = 0; i < n; i++) {
            ct->n_unmatched[i] = st->unm[i];
            for (j = 0; j < n; j++) ct->dup[i * SAM3_MAX_TRACKED_OBJECTS + j] = st->dup[i * n + j];
        }
    t->n_obj = n + st->n_new;
    t->next++;
    ct->next_id += st->n_new;
    ct->next_out += st->yield;
}

/* run_tracker_update_execution_phase, step 2: the removed objects go (after their memories were
   encoded and the new objects added, as the reference does it) */
static void sam3__concept_remove_objects(sam3_concept_tracker *ct, const sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    int i, j;
    for (i = st->n - 1; i >= 0; i--) {
        const int mx = SAM3_MAX_TRACKED_OBJECTS, rest = t->n_obj - i - 1;
        if (!st->removed[i]) continue;
        sam3__trk_obj_free(t, &t->obj[i]);
        memmove(&t->obj[i], &t->obj[i + 1], (size_t)rest * sizeof(sam3__trk_obj));
        memmove(&ct->prompt[i], &ct->prompt[i + 1], (size_t)rest * sizeof(int));
        memmove(&ct->score[i], &ct->score[i + 1], (size_t)rest * sizeof(float));
        memmove(&ct->last_occluded[i], &ct->last_occluded[i + 1], (size_t)rest * sizeof(int));
        memmove(&ct->first_frame[i], &ct->first_frame[i + 1], (size_t)rest * sizeof(int));
        memmove(&ct->n_unmatched[i], &ct->n_unmatched[i + 1], (size_t)rest * sizeof(int));
        for (j = 0; j < t->n_obj; j++) /* drop column i, then row i */
            memmove(&ct->dup[j * mx + i], &ct->dup[j * mx + i + 1], (size_t)(mx - i - 1) * sizeof(int));
        memmove(&ct->dup[i * mx], &ct->dup[(i + 1) * mx], (size_t)rest * mx * sizeof(int));
        t->n_obj--;
        memset(&t->obj[t->n_obj], 0, sizeof(sam3__trk_obj));
    }
}

/* A failure after the new objects' stage: the fresh objects freed, and the reconditioned ones'
   new entries (a grown conditioning array stays: it holds the old entries). */
static void sam3__concept_undo(sam3_concept_tracker *ct, sam3__concept_step *st) {
    sam3_tracker *t = ct->t;
    int i, j;
    for (j = 0; j < st->fresh; j++) sam3__trk_obj_free(t, &t->obj[st->n + j]);
    for (i = 0; i < st->n; i++)
        if (st->newcond[i]) {
            sam3__trk_free(t, st->newcond[i]->ptr, st->pb);
            sam3__trk_free(t, st->newcond[i]->mem, st->mb);
            st->newcond[i]->ptr = NULL;
            st->newcond[i]->mem = NULL;
        }
}

/* sam3_concept_tracker_push_frame (Sam3VideoModel, one frame): the image encoder once for both
   heads, run_detection, then run_tracker_propagation, the association of detections to tracked
   objects, the hotstart removals, suppression and reconditioning, the memories, the new objects,
   build_outputs and the commit. */
static sam3_result sam3__concept_push_run(sam3_concept_tracker *ct, const uint8_t *pixels, int W, int H, int stride, sam3_pixel_format format,
                                          sam3_concept_tracker_result *out) {
    sam3_tracker *t = ct->t;
    sam3_ctx *c = t->c;
    sam3__concept_step st;
    int nd = 0, i;
    sam3_result rc;
    c->err[0] = 0;
    if (!out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_push_frame: out is NULL");
    memset(out, 0, sizeof(*out));
    out->frame = -1;
    if (!ct->n_prompts)
        return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_push_frame: no prompt: call sam3_concept_tracker_add_text or _add_prompt first");
    if ((rc = sam3__image_encode(c, "sam3_concept_tracker_push_frame", pixels, W, H, stride, format, 1)) != SAM3_OK) return rc;
    if ((rc = sam3__concept_run_detection(ct, &nd)) != SAM3_OK) return rc;
    if ((rc = sam3__begin(c)) != SAM3_OK) return rc;
    if ((rc = sam3__tracker_features(c)) != SAM3_OK) return sam3__end(c, rc);
    if ((rc = sam3__concept_step_alloc(ct, &st, nd, W, H)) != SAM3_OK) return sam3__end(c, rc);
    if ((rc = sam3__concept_run_tracker_propagation(ct, &st)) != SAM3_OK) return sam3__end(c, rc);
    st.n_new = sam3__concept_associate_det_trk(ct, &st);
    /* _process_hotstart: the removals (clip mode only, as the reference's streaming flag) */
    for (i = 0; i < st.n; i++) st.removed[i] = 0;
    if (ct->opt.hotstart_delay > 0)
        sam3__concept_process_hotstart(ct, st.f, st.n, st.nd, st.iou, st.tbin, (size_t)16 * c->m->trk.grid * c->m->trk.grid, st.unm, st.dup,
                                       st.removed);
    sam3__concept_suppress_overlapping_based_on_recent_occlusion(ct, &st);
    sam3__concept_prepare_recondition_masks(ct, &st);
    if ((rc = sam3__concept_tracker_update_memories(ct, &st)) != SAM3_OK) return sam3__end(c, rc);
    rc = sam3__concept_tracker_add_new_objects(ct, &st);
    if (rc == SAM3_OK) rc = sam3__concept_encode_new_memories(ct, &st);
    if (rc == SAM3_OK) rc = sam3__concept_outputs(ct, &st, out);
    if (rc == SAM3_OK) rc = sam3__concept_prepare_commit(ct, &st);
    if (rc != SAM3_OK) {
        sam3__concept_undo(ct, &st);
        return sam3__end(c, rc);
    }
    sam3__concept_commit(ct, &st);
    sam3__concept_remove_objects(ct, &st);
    return sam3__end(c, SAM3_OK);
}

SAM3DEF sam3_result sam3_concept_tracker_flush(sam3_concept_tracker *ct, sam3_concept_tracker_result *out) {
    sam3_tracker *t;
    sam3_ctx *c;
    sam3_result rc;
    int live[SAM3_MAX_TRACKED_OBJECTS], i;
    if (!ct) return SAM3_ERR_INVALID_ARG;
    t = ct->t;
    c = t->c;
    if (!out) return sam3__fail(c, SAM3_ERR_INVALID_ARG, "sam3_concept_tracker_flush: out is NULL");
    memset(out, 0, sizeof(*out));
    out->frame = -1;
    if (ct->next_out >= t->next) return SAM3_OK;
    if (sam3__hold(c, NULL, 0)) return SAM3_ERR_BUSY;
    for (i = 0; i < t->n_obj; i++) live[i] = t->obj[i].id;
    if ((rc = sam3__begin(c)) == SAM3_OK)
        rc = sam3__end(c, sam3__concept_postprocess_outputs(ct, &ct->held[ct->next_out % ct->n_held], live, t->n_obj, 4 * c->m->trk.grid, out));
    if (rc == SAM3_OK) ct->next_out++;
    else {
        memset(out, 0, sizeof(*out));
        out->frame = -1;
    }
    return sam3__let(c, rc);
}

SAM3DEF sam3_result sam3_concept_tracker_push_frame(sam3_concept_tracker *ct, const uint8_t *pixels, int w, int h, int stride,
                                                    sam3_pixel_format format, sam3_concept_tracker_result *out) {
    if (!ct) return SAM3_ERR_INVALID_ARG;
    if (sam3__hold(ct->t->c, out, sizeof(*out))) return SAM3_ERR_BUSY;
    return sam3__let(ct->t->c, sam3__concept_push_run(ct, pixels, w, h, stride, format, out));
}

/* ==== sam3: unicode tables (generated by tools/gen_unicode_tables.py, do not edit) ==== */
/* Unicode data for the CLIP tokenizer (see tools/gen_unicode_tables.py for what each
   table encodes and why the versions are mixed): unicodedata 14.0.0, plus the
   Unicode 16.0/17.0 letters, numbers and lowercase mappings tokenizers uses;
   normalization (NFC) data restricted to Unicode 9.0 like tokenizers' NFC. */
/* (start << 2) | class; class 0 other, 1 \p{L}, 2 \p{N}, 3 \s */
static const uint32_t sam3__uc_class[1610] = {
    0,39,56,131,132,194,232,261,364,389,492,535,
    536,643,644,681,684,714,720,725,728,742,745,748,
    754,764,769,860,865,988,993,2824,2841,2888,2945,2964,
    2993,2996,3001,3004,3521,3540,3545,3552,3561,3576,3581,3584,
    3609,3612,3617,3628,3633,3636,3641,3720,3725,4056,4061,4616,
    4649,5312,5317,5468,5477,5480,5505,5668,5953,6060,6077,6092,
    6273,6444,6530,6568,6585,6592,6597,6992,6997,7000,7061,7068,
    7097,7106,7145,7156,7165,7168,7233,7236,7241,7360,7477,7832,
    7877,7880,7938,7977,8108,8145,8152,8169,8172,8193,8280,8297,
    8300,8337,8340,8353,8356,8449,8548,8577,8620,8641,8736,8741,
    8764,8833,9000,9233,9448,9461,9464,9537,9540,9569,9608,9626,
    9664,9669,9732,9749,9780,9789,9796,9805,9892,9897,9924,9929,
    9932,9945,9960,9973,9976,10041,10044,10097,10104,10109,10120,10138,
    10177,10184,10194,10216,10225,10228,10261,10284,10301,10308,10317,10404,
    10409,10436,10441,10448,10453,10460,10465,10472,10597,10612,10617,10620,
    10650,10688,10697,10708,10773,10808,10813,10824,10829,10916,10921,10948,
    10953,10960,10965,10984,10997,11000,11073,11076,11137,11144,11162,11200,
    11237,11240,11285,11316,11325,11332,11341,11428,11433,11460,11465,11472,
    11477,11496,11509,11512,11633,11640,11645,11656,11674,11712,11717,11722,
    11744,11789,11792,11797,11820,11833,11844,11849,11864,11877,11884,11889,
    11892,11897,11904,11917,11924,11937,11948,11961,12008,12097,12100,12186,
    12236,12309,12340,12345,12356,12361,12452,12457,12520,12533,12536,12641,
    12652,12661,12664,12673,12680,12698,12736,12770,12796,12801,12804,12821,
    12852,12857,12868,12873,12964,12969,13008,13013,13032,13045,13048,13173,
    13180,13185,13192,13210,13248,13253,13260,13329,13364,13369,13380,13385,
    13548,13557,13560,13625,13628,13649,13660,13666,13693,13704,13722,13796,
    13801,13824,13845,13916,13929,14024,14029,14064,14069,14072,14081,14108,
    14234,14272,14341,14532,14537,14544,14593,14620,14658,14696,14853,14860,
    14865,14868,14873,14892,14897,14992,14997,15000,15005,15044,15049,15056,
    15093,15096,15105,15124,15129,15132,15170,15208,15217,15232,15361,15364,
    15490,15568,15617,15648,15653,15796,15905,15924,16385,16556,16637,16642,
    16680,16705,16728,16745,16760,16773,16776,16789,16796,16825,16836,16853,
    16904,16953,16956,16962,17000,17025,17176,17181,17184,17205,17208,17217,
    17388,17393,18724,18729,18744,18753,18780,18785,18788,18793,18808,18817,
    18980,18985,19000,19009,19140,19145,19160,19169,19196,19201,19204,19209,
    19224,19233,19292,19297,19524,19529,19544,19553,19820,19878,19956,19969,
    20032,20097,20440,20449,20472,20485,22964,22973,23043,23045,23148,23169,
    23468,23482,23493,23524,23553,23624,23677,23752,23809,23880,23937,23988,
    23993,24004,24065,24272,24413,24416,24433,24436,24450,24488,24514,24552,
    24642,24680,24705,25060,25089,25108,25117,25252,25257,25260,25281,25560,
    25601,25724,25882,25921,26040,26049,26068,26113,26288,26305,26408,26434,
    26476,26625,26716,26753,26964,27138,27176,27202,27240,27293,27296,27669,
    27856,27925,27956,27970,28008,28173,28292,28345,28354,28393,28568,28673,
    28816,28930,28968,28981,28994,29033,29176,29185,29228,29249,29420,29429,
    29440,29605,29620,29625,29648,29653,29660,29673,29676,29697,30464,30721,
    31832,31841,31864,31873,32024,32033,32056,32065,32096,32101,32104,32109,
    32112,32117,32120,32125,32248,32257,32468,32473,32500,32505,32508,32521,
    32532,32537,32564,32577,32592,32601,32624,32641,32692,32713,32724,32729,
    32756,32771,32812,32931,32936,32959,32960,33151,33152,33218,33221,33224,
    33234,33256,33277,33282,33320,33345,33396,33801,33804,33821,33824,33833,
    33872,33877,33880,33893,33912,33937,33940,33945,33948,33953,33956,33961,
    33976,33981,34024,34033,34048,34069,34088,34105,34108,34114,34317,34326,
    34344,37250,37488,37802,37888,40410,40528,45057,45972,45997,46012,46025,
    46032,46070,46072,46081,46232,46237,46240,46261,46264,46273,46496,46525,
    46528,46593,46684,46721,46748,46753,46780,46785,46812,46817,46844,46849,
    46876,46881,46908,46913,46940,46945,46972,47293,47296,49155,49156,49173,
    49182,49184,49286,49320,49349,49368,49378,49389,49396,49413,49756,49781,
    49792,49797,50156,50161,50176,50197,50368,50373,50748,50762,50776,50817,
    50944,51137,51200,51330,51368,51490,51520,51526,51584,51714,51752,51910,
    51968,53249,79616,79873,168500,168769,168952,168961,170036,170049,170114,170153,
    170160,170241,170428,170493,170616,170625,170906,170944,171101,171136,171145,171556,
    171565,171832,171841,171848,171853,171856,171861,171892,171977,172040,172045,172056,
    172061,172076,172081,172172,172226,172248,172289,172496,172553,172752,172866,172904,
    173001,173024,173037,173040,173045,173052,173058,173097,173208,173249,173340,173441,
    173556,173585,173772,173885,173890,173928,173953,173972,173977,174018,174057,174076,
    174081,174244,174337,174348,174353,174384,174402,174440,174465,174556,174569,174572,
    174585,174784,174789,174792,174805,174812,174821,174840,174849,174852,174857,174860,
    174957,174968,174977,175020,175049,175060,175109,175132,175141,175164,175173,175196,
    175233,175260,175265,175292,175297,175468,175473,175528,175553,176012,176066,176104,
    176129,220816,220865,220956,220973,221168,254977,256440,256449,256872,257025,257052,
    257101,257120,257141,257144,257149,257188,257193,257244,257249,257268,257273,257276,
    257281,257288,257293,257300,257305,257736,257869,259320,259393,259648,259657,259872,
    260033,260080,260545,260564,260569,261108,261186,261224,261253,261356,261381,261484,
    261529,261884,261897,261920,261929,261952,261961,261984,261993,262004,262145,262192,
    262197,262300,262305,262380,262385,262392,262397,262456,262465,262520,262657,263148,
    263198,263376,263426,263652,263722,263728,264705,264820,264833,265028,265094,265200,
    265217,265346,265360,265397,265478,265481,265514,265516,265537,265688,265729,265848,
    265857,266000,266017,266048,266054,266072,266241,266872,266882,266920,266945,267088,
    267105,267248,267265,267424,267457,267664,267713,267756,267761,267820,267825,267852,
    267857,267864,267869,267912,267917,267976,267981,268008,268013,268020,268033,268240,
    268289,269532,269569,269656,269697,269728,269825,269848,269853,270020,270025,270060,
    270337,270360,270369,270372,270377,270552,270557,270564,270577,270580,270589,270680,
    270690,270721,270812,270822,270849,270972,271006,271040,271233,271308,271313,271320,
    271342,271361,271450,271472,271489,271592,271873,272096,272114,272121,272130,272192,
    272202,272385,272388,272449,272464,272469,272480,272485,272600,272642,272676,272769,
    272886,272892,272897,273014,273024,273153,273184,273189,273300,273326,273344,273409,
    273624,273665,273752,273762,273793,273868,273890,273921,273992,274086,274112,274433,
    274724,274945,275148,275201,275404,275434,275457,275600,275650,275688,275714,275753,
    275864,275901,275992,276866,276988,276993,277160,277185,277192,277257,277268,277505,
    277622,277661,277664,277697,277784,277830,277844,277953,278024,278209,278294,278320,
    278401,278492,278541,278752,278858,278976,278981,278988,278997,279000,279053,279232,
    279361,279460,279490,279528,279565,279708,279770,279808,279825,279828,279837,279840,
    279873,280012,280025,280028,280077,280268,280325,280340,280386,280425,280428,280433,
    280436,280454,280532,280577,280648,280653,280752,280829,280836,281089,281116,281121,
    281124,281129,281144,281149,281208,281213,281252,281281,281468,281538,281576,281621,
    281652,281661,281668,281677,281764,281769,281796,281801,281808,281813,281832,281845,
    281848,281921,281924,281973,281992,282113,282152,282157,282160,282169,282172,282177,
    282328,282333,282336,282437,282440,282445,282448,282625,282836,282909,282924,282946,
    282984,283005,283016,283137,283328,283409,283416,283421,283424,283458,283496,284161,
    284348,284513,284528,284673,284864,284945,284948,284994,285032,285185,285356,285409,
    285412,285442,285480,285506,285584,285697,285804,285890,285936,285953,285980,286721,
    286896,287361,287618,287692,287741,287772,287781,287784,287793,287824,287829,287836,
    287841,287936,287997,288000,288005,288008,288066,288104,288385,288416,288425,288580,
    288645,288648,288653,288656,288769,288772,288813,288972,289001,289004,289089,289092,
    289137,289320,289397,289400,289473,289764,290561,290692,290754,290792,290817,290852,
    290857,291004,291073,291076,291138,291252,291273,291392,291841,291868,291873,291880,
    291885,292036,292121,292124,292162,292200,292225,292248,292253,292260,292265,292392,
    292449,292452,292482,292520,293761,293836,293897,293900,293905,293956,293961,294096,
    294210,294248,294593,294596,294658,294740,294913,298600,299010,299452,299521,300304,
    310849,311236,311297,315584,315653,315676,315777,331756,331777,334108,361473,361592,
    361666,361704,368641,370916,370945,371068,371074,371112,371137,371452,371458,371496,
    371521,371640,371713,371904,371969,371984,372034,372072,372078,372104,372109,372192,
    372213,372288,374017,374196,374210,374248,375041,375298,375388,375809,376108,376129,
    376132,376397,376448,376705,376712,376717,376720,376833,401376,401409,406360,406525,
    406564,442305,442320,442325,442352,442357,442364,442369,443532,443593,443596,443713,
    443724,443733,443736,443793,443808,443841,445424,454657,455084,455105,455156,455169,
    455204,455233,455272,472002,472040,477954,478032,478082,478160,478594,478692,479233,
    479572,479577,479860,479865,479872,479881,479884,479893,479900,479909,479924,479929,
    479976,479981,479984,479989,480016,480021,480280,480285,480300,480309,480340,480345,
    480372,480377,480488,480493,480508,480513,480532,480537,480540,480553,480580,480585,
    481944,481953,482052,482057,482156,482161,482284,482289,482388,482393,482516,482521,
    482620,482625,482748,482753,482852,482857,482980,482985,483084,483089,483120,483130,
    483328,490497,490620,490645,490668,491713,491960,492545,492724,492765,492792,492802,
    492840,492857,492860,494145,494264,494337,494512,494530,494568,496449,496560,496578,
    496616,497473,497592,497601,497606,497644,499585,499612,499617,499632,499637,499644,
    499649,499708,499713,500500,500510,500544,500737,501008,501037,501040,501058,501096,
    504262,504496,504502,504512,504518,504532,504838,505016,505022,505080,505857,505872,
    505877,505984,505989,505996,506001,506004,506013,506016,506021,506060,506065,506080,
    506085,506088,506093,506096,506121,506124,506141,506144,506149,506152,506157,506160,
    506165,506176,506181,506188,506193,506196,506205,506208,506213,506216,506221,506224,
    506229,506232,506237,506240,506245,506252,506257,506260,506269,506284,506289,506316,
    506321,506336,506341,506356,506361,506364,506369,506408,506413,506480,506501,506512,
    506517,506536,506541,506608,508930,508980,520130,520168,524289,695168,695297,711912,
    711937,712824,712833,735880,735937,765828,765889,768376,778241,780408,786433,806188,
    806209,822976,
};
/* (start << 8) | canonical combining class */
static const uint32_t sam3__uc_ccc[496] = {
    0,196838,202216,202460,203496,203736,203996,205258,205788,206794,207324,209921,
    211420,212454,214512,214758,215004,215782,216540,216832,217318,218076,219110,219368,
    219612,220134,220393,220650,221161,221418,221929,222182,225280,295910,296960,365020,
    365286,366300,366566,367326,367580,367846,369372,370918,371420,371686,372190,372452,
    372710,372746,373003,373260,373517,373774,374031,374288,374545,374802,375059,375572,
    375829,376086,376320,376599,376832,377112,377369,377600,378086,378332,378368,378642,
    378880,397542,399390,399647,399904,400128,412443,412700,412957,413214,413471,413728,
    413985,414242,414694,415196,415718,416988,417254,417756,417792,421923,422144,448230,
    449792,450534,451548,451814,451840,452582,452864,453340,453606,454108,454144,463140,
    463360,471270,471516,471782,472284,472550,473052,473830,474076,474598,474844,475110,
    475868,476134,476380,476646,476892,477158,477404,477670,477952,519142,520924,521190,
    521216,530150,530944,531430,533504,533990,534528,535014,536064,547292,547840,578790,
    582144,582620,582886,583388,583654,584156,584422,585180,585755,586012,586269,586726,
    587484,587750,588252,588774,589824,605191,605440,609545,609792,610790,611036,611302,
    611584,637959,638208,642313,642560,670727,670976,675081,675328,703495,703744,707849,
    708096,736263,736512,740617,740864,773385,773632,806153,806400,808276,808539,808704,
    834567,834816,838921,839168,871689,871936,903689,903936,931943,932361,932608,936043,
    936960,964726,965120,968826,969728,989404,989696,996828,996864,997340,997376,997848,
    997888,1012097,1012354,1012480,1012868,1012992,1014402,1015296,1015938,1016064,1016550,1016841,
    1017088,1017574,1017856,1033948,1033984,1062663,1062912,1063177,1063680,1084892,1084928,1269222,
    1269760,1512457,1512704,1520649,1520896,1561097,1561344,1564134,1564160,1616356,1616384,1653214,
    1653478,1653724,1653760,1710054,1710300,1710336,1728521,1728768,1734118,1735936,1736668,1736704,
    1749222,1750492,1752038,1752540,1752576,1782791,1783040,1786889,1787136,1797094,1797340,1797606,
    1799168,1813001,1813504,1828359,1828608,1831433,1831936,1849095,1849344,1888486,1889024,1889281,
    1889756,1891046,1891548,1892582,1892608,1892865,1894656,1895900,1895936,1897702,1897728,1898726,
    1899008,1949926,1950428,1950694,1952476,1952742,1953258,1953494,1953756,1953994,1954278,1963520,
    1965030,1965289,1965532,1965798,1966044,1966080,2150630,2150913,2151654,2152449,2153446,2153728,
    2154982,2155008,2155777,2156518,2156764,2157030,2157057,2157788,2158822,2158848,2944998,2945536,
    2981641,2981888,3006694,3014656,3156698,3156964,3157224,3157470,3157728,3158016,3184904,3185408,
    10907622,10907648,10908902,10911232,10919654,10919936,10940646,10940928,11011593,11011840,11060233,11060480,
    11067622,11072000,11086812,11087360,11096841,11097088,11121415,11121664,11124745,11124992,11186406,11186432,
    11186918,11187420,11187456,11188198,11188480,11189990,11190272,11190758,11190784,11204105,11204352,11267337,
    11267584,16457242,16457472,16654566,16656348,16658150,16658432,16907740,16907776,16965852,16965888,17004262,
    17005312,17436124,17436160,17436646,17436672,17447142,17447169,17447644,17447680,17448713,17448960,17491430,
    17491676,17491712,17843721,17843968,17858313,17858560,17873161,17873415,17873664,17891558,17892096,17904393,
    17904896,17920775,17921024,17940489,17940736,17943047,17943296,17970441,17970695,17970944,18016519,18016777,
    18017024,18037767,18038016,18042121,18042368,18048742,18050304,18051302,18052352,18104841,18105088,18105863,
    18106112,18137609,18137863,18138112,18202377,18202631,18202880,18235145,18235392,18265609,18265863,18266112,
    18295561,18295808,18628361,18628608,23785473,23786752,23802086,23803648,29138433,29138688,30500312,30500609,
    30501376,30502370,30502616,30503680,30505948,30507776,30508518,30509788,30510080,30517990,30518784,30556902,
    30557440,31457510,31459072,31459558,31463680,31464422,31465984,31466470,31466752,31467238,31468288,32035036,
    32036608,32064742,32066055,32066304,
};
/* (start << 11) | (count << 1) | (stride == 2) */
static const uint32_t sam3__uc_lower_run[185] = {
    133172,393262,442382,524337,626695,641041,675887,770050,772103,788482,790533,798722,
    800770,804868,808962,815106,817154,819202,821250,825346,827394,831490,833538,835586,
    843778,845826,849922,851975,864258,866306,870402,876546,880642,882690,886788,890885,
    899074,901122,909314,925698,927746,931842,933890,937986,940051,978963,1017858,1019909,
    1028098,1030146,1032233,1114114,1118227,1167362,1169410,1173506,1175554,1181698,1185794,1187842,
    1189890,1191947,1802245,1814530,1832962,1847298,1851398,1859586,1863684,1869858,1906706,1996802,
    2015257,2072578,2078722,2082818,2084866,2091014,2097184,2129984,2293795,2379831,2490370,2492431,
    2523233,2721868,8716364,8796162,8808450,10289312,10453004,14960642,14975062,15067142,15728791,16052226,
    16056417,16269328,16302092,16334864,16367632,16400396,16435209,16465936,16531472,16564240,16597008,16629764,
    16633860,16637954,16662536,16670722,16695300,16699396,16728068,16732164,16736258,16760836,16764932,16769026,
    17379330,17387522,17389570,17403906,17498144,17569794,19247156,23068768,23265282,23269378,23271426,23273474,
    23279623,23291906,23293954,23296002,23298050,23302146,23308290,23326724,23330917,23549957,23564290,87162927,
    87293981,87625743,87658559,87803909,87812098,87814155,87840770,87844866,87851013,87863317,87904258,87906306,
    87908354,87910402,87912450,87916546,87918594,87920642,87922690,87924753,87957506,87959554,87961602,87963653,
    87971842,87973905,88006658,88057858,133761076,136314960,136675400,137068566,137093150,137125902,137142276,140771430,
    141197356,147128384,192020544,192217138,256376900,
};
/* lowercase = code point + delta, per run */
static const int32_t sam3__uc_lower_delta[185] = {
    32,32,32,1,1,1,1,-121,1,210,1,206,
    1,205,1,79,202,203,1,205,207,211,209,1,
    211,213,214,1,218,1,218,1,218,1,217,1,
    219,1,1,2,1,2,1,2,1,1,2,1,
    -97,-56,1,-130,1,10795,1,-163,10792,1,-195,69,
    71,1,1,1,116,38,37,64,63,32,32,8,
    1,-60,1,-7,1,-130,80,32,1,1,15,1,
    1,48,7264,7264,7264,38864,8,1,-3008,-3008,1,-7615,
    1,-8,-8,-8,-8,-8,-8,-8,-8,-8,-8,-8,
    -74,-9,-86,-9,-8,-100,-8,-112,-7,-128,-126,-9,
    -7517,-8383,-8262,28,16,1,26,48,1,-10743,-3814,-10727,
    1,-10780,-10749,-10783,-10782,1,1,-10815,1,1,1,1,
    1,1,1,1,-35332,1,1,-42280,1,1,-42308,-42319,
    -42315,-42305,-42308,-42258,-42282,-42261,928,1,-48,-42307,-35384,1,
    -42343,1,-42561,1,32,40,40,39,39,39,39,64,
    32,32,32,27,34,
};
/* (code point, lowercase first, lowercase second) triples */
static const uint32_t sam3__uc_lower_multi[3] = {
    304,105,775,
};
/* (start << 11) | count of consecutive code points that decompose */
static const uint32_t sam3__uc_decomp_run[230] = {
    393222,407561,428038,444421,458758,473097,493574,509957,522257,561172,606217,630788,
    641030,661510,679942,696338,737303,851970,882690,944144,978950,995339,1024002,1032228,
    1110018,1126414,1703938,1710082,1810433,1830913,1845254,1859585,1863683,1921031,1986565,2004994,
    2097154,2103297,2111489,2121731,2148353,2213889,2260994,2267137,2275329,2285571,2338818,2492418,
    2523140,2535426,2543622,2560006,2576396,2605058,3215365,3538945,3543041,3577857,4802561,4818945,
    4825089,4898824,5134338,5169154,5175297,5347329,5353473,5425155,5435393,5914625,5920770,5955586,
    6070273,6180867,6438913,6684673,6699010,6705154,6967299,7262209,7266307,8001537,8022017,8032257,
    8042497,8052737,8079361,8099841,8103938,8110081,8128513,8165377,8185857,8196097,8206337,8216577,
    8243201,8466433,14168065,14172161,14176257,14180353,14184449,14192641,14276609,14280705,14286850,14292993,
    15728794,16046081,16056410,16252950,16302086,16318502,16400390,16416776,16435201,16439297,16443393,16447519,
    16515125,16625671,16642049,16648196,16658446,16691206,16705555,16748547,16756744,16777218,17379329,17387522,
    17616898,17657857,17721347,17833985,17844225,17850369,17899521,17903617,17958913,17965057,17971201,17975297,
    18022401,18026497,18049029,18063362,18071554,18087938,18096130,18104322,18178052,18284548,18305028,18434050,
    22470657,25321473,25325569,25329665,25333761,25337857,25341953,25346049,25350145,25354241,25358337,25362433,
    25366529,25372673,25376769,25380865,25395202,25401346,25407490,25413634,25419778,25468929,25489409,25518081,
    25522177,25526273,25530369,25534465,25538561,25542657,25546753,25550849,25554945,25559041,25563137,25569281,
    25573377,25577473,25591810,25597954,25604098,25610242,25616386,25665537,25671684,25686017,130547982,131104769,
    131108865,131115018,131137537,131141633,131147778,131158084,131301482,131655681,131659777,131682317,131710981,131723265,
    131727362,131733506,131739657,142921729,142925825,142956545,143224834,144332802,145086466,145092609,145608706,243986439,
    244176902,398459422,
};
/* index of each run's first value in sam3__uc_decomp_val */
static const uint16_t sam3__uc_decomp_off[230] = {
    0,6,15,21,26,32,41,47,52,69,89,98,102,108,114,120,
    138,161,163,165,181,187,198,200,236,238,252,254,256,257,258,264,
    265,268,275,280,282,284,285,286,289,290,291,293,294,295,298,300,
    302,306,308,314,320,332,334,339,340,341,342,343,344,345,353,355,
    357,358,359,360,363,364,365,367,369,370,373,374,375,377,379,382,
    383,386,387,388,389,390,391,392,393,395,396,397,398,399,400,401,
    402,403,404,405,406,407,408,409,410,411,412,414,415,569,570,660,
    682,688,726,732,740,741,742,743,774,827,834,835,839,853,859,878,
    881,889,891,892,894,896,897,900,901,902,903,904,905,906,907,908,
    909,910,911,916,918,920,922,924,926,930,934,938,940,941,942,943,
    944,945,946,947,948,949,950,951,952,953,954,955,956,958,960,962,
    964,966,967,968,969,970,971,972,973,974,975,976,977,978,979,980,
    981,982,983,985,987,989,991,993,994,998,999,1269,1270,1271,1281,1282,
    1283,1285,1353,1459,1460,1461,1474,1479,1480,1482,1484,1493,1494,1495,1496,1498,
    1500,1502,1503,1505,1512,1518,
};
/* first | (second_index << 18); second_index 0 = singleton */
static const uint32_t sam3__uc_decomp_val[2060] = {
    262209,524353,786497,1048641,2097217,2621505,5767235,262213,524357,786501,2097221,262217,
    524361,786505,2097225,1048654,262223,524367,786511,1048655,2097231,262229,524373,786517,
    2097237,524377,262241,524385,786529,1048673,2097249,2621537,5767267,262245,524389,786533,
    2097253,262249,524393,786537,2097257,1048686,262255,524399,786543,1048687,2097263,262261,
    524405,786549,2097269,524409,2097273,1310785,1310817,1572929,1572961,6029377,6029409,524355,
    524387,786499,786531,1835075,1835107,3145795,3145827,3145796,3145828,1310789,1310821,1572933,
    1572965,1835077,1835109,6029381,6029413,3145797,3145829,786503,786535,1572935,1572967,1835079,
    1835111,5767239,5767271,786504,786536,1048649,1048681,1310793,1310825,1572937,1572969,6029385,
    6029417,1835081,786506,786538,5767243,5767275,524364,524396,5767244,5767276,3145804,3145836,
    524366,524398,5767246,5767278,3145806,3145838,1310799,1310831,1572943,1572975,2883663,2883695,
    524370,524402,5767250,5767282,3145810,3145842,524371,524403,786515,786547,5767251,5767283,
    3145811,3145843,5767252,5767284,3145812,3145844,1048661,1048693,1310805,1310837,1572949,1572981,
    2621525,2621557,2883669,2883701,6029397,6029429,786519,786551,786521,786553,2097241,524378,
    524410,1835098,1835130,3145818,3145850,4456527,4456559,4456533,4456565,3145793,3145825,3145801,
    3145833,3145807,3145839,3145813,3145845,1310940,1310972,524508,524540,3145948,3145980,262364,
    262396,1310916,1310948,1311270,1311271,1310918,1310950,3145799,3145831,3145803,3145835,6029391,
    6029423,1311210,1311211,3146167,3146386,3145834,524359,524391,262222,262254,524485,524517,
    524486,524518,524504,524536,3407937,3407969,3670081,3670113,3407941,3407973,3670085,3670117,
    3407945,3407977,3670089,3670121,3407951,3407983,3670095,3670127,3407954,3407986,3670098,3670130,
    3407957,3407989,3670101,3670133,5505107,5505139,5505108,5505140,3145800,3145832,1835073,1835105,
    5767237,5767269,1310934,1310966,1310933,1310965,1835087,1835119,1311278,1311279,1310809,1310841,
    768,769,787,525064,697,59,524456,525201,183,525205,525207,525209,
    525215,525221,525225,525258,2098073,2098085,525233,525237,525239,525241,525259,2098105,
    2098117,525247,525253,525257,525266,2098130,263189,2098197,525331,2098182,525338,263192,
    1573923,1573912,1573944,263221,2098229,525363,2098262,525370,263224,1573955,3409012,3409013,
    1573910,1573942,1573904,1573936,2098192,2098224,1573909,1573941,2098392,2098393,2098198,2098230,
    2098199,2098231,1311768,1311800,2098200,2098232,2098206,2098238,2098408,2098409,2098221,2098253,
    1311779,1311811,2098211,2098243,2884643,2884675,2098215,2098247,2098219,2098251,10225191,10487335,
    10487368,10749479,10487370,10487509,10487489,10487506,11012392,11012400,11012403,11012373,11012374,11012375,
    11012380,11012385,11012386,11012395,11012399,11536839,11798983,11274657,11274658,11274671,12061234,12061240,
    12061206,12061207,12061212,12061227,12847943,12585799,13110087,12323617,12323618,13634450,13372358,13372359,
    13634502,13896774,14421183,14421190,14683334,14159046,14421194,14945606,14945607,15207750,15470041,15732185,
    15470044,15994329,17305410,17305420,17305425,17305430,17305435,17043264,16256881,16519025,16781234,16781235,
    16781169,17305490,17305500,17305505,17305510,17305515,17043344,17567781,17832709,17832711,17832713,17832715,
    17832717,17832721,17832762,17832764,17832766,17832767,17832770,5242945,5242977,1835074,1835106,4718658,
    4718690,7077954,7077986,524487,524519,1835076,1835108,4718660,4718692,7077956,7077988,5767236,
    5767268,6291524,6291556,262418,262419,524562,524563,6291525,6291557,6815813,6815845,1573416,
    1573417,1835078,1835110,1310791,1310823,1835080,1835112,4718664,4718696,2097224,2097256,5767240,
    5767272,6553672,6553704,6815817,6815849,524495,524527,524363,524395,4718667,4718699,7077963,
    7077995,4718668,4718700,1318454,1318455,7077964,7077996,6291532,6291564,524365,524397,1835085,
    1835117,4718669,4718701,1835086,1835118,4718670,4718702,7077966,7077998,6291534,6291566,524501,
    524533,2097365,2097397,262476,262477,524620,524621,524368,524400,1835088,1835120,1835090,
    1835122,4718674,4718706,1318490,1318491,7077970,7078002,1835091,1835123,4718675,4718707,1835354,
    1835355,1835360,1835361,1842786,1842787,1835092,1835124,4718676,4718708,7077972,7078004,6291540,
    6291572,4980821,4980853,6815829,6815861,6291541,6291573,524648,524649,2097514,2097515,1048662,
    1048694,4718678,4718710,262231,262263,524375,524407,2097239,2097271,1835095,1835127,4718679,
    4718711,1835096,1835128,2097240,2097272,1835097,1835129,786522,786554,4718682,4718714,7077978,
    7078010,7077992,2097268,2621559,2621561,1835391,4718657,4718689,2359361,2359393,524482,524514,
    262338,262370,2359490,2359522,1048770,1048802,794272,794273,524546,524547,262402,262403,
    2359554,2359555,1048834,1048835,1580704,1580705,4718661,4718693,2359365,2359397,1048645,1048677,
    524490,524522,262346,262378,2359498,2359530,1048778,1048810,794296,794297,2359369,2359401,
    4718665,4718697,4718671,4718703,2359375,2359407,524500,524532,262356,262388,2359508,2359540,
    1048788,1048820,794316,794317,524704,524705,262560,262561,2359712,2359713,1048992,1048993,
    4719008,4719009,4718677,4718709,2359381,2359413,524719,524720,262575,262576,2359727,2359728,
    1049007,1049008,4719023,4719024,262233,262265,4718681,4718713,2359385,2359417,1048665,1048697,
    3933105,4195249,270080,270081,532224,532225,7610112,7610113,3933073,4195217,270088,270089,
    532232,532233,7610120,7610121,3933109,4195253,270096,270097,532240,532241,3933077,4195221,
    270104,270105,532248,532249,3933111,4195255,270112,270113,532256,532257,7610144,7610145,
    3933079,4195223,270120,270121,532264,532265,7610152,7610153,3933113,4195257,270128,270129,
    532272,532273,7610160,7610161,3933081,4195225,270136,270137,532280,532281,7610168,7610169,
    3933119,4195263,270144,270145,532288,532289,3933087,4195231,270152,270153,532296,532297,
    3933125,4195269,270160,270161,532304,532305,7610192,7610193,4195237,270169,532313,7610201,
    3933129,4195273,270176,270177,532320,532321,7610208,7610209,3933097,4195241,270184,270185,
    532328,532329,7610216,7610217,263089,940,263093,941,263095,942,263097,943,
    263103,972,263109,973,263113,974,7872256,7872257,7872258,7872259,7872260,7872261,
    7872262,7872263,7872264,7872265,7872266,7872267,7872268,7872269,7872270,7872271,7872288,7872289,
    7872290,7872291,7872292,7872293,7872294,7872295,7872296,7872297,7872298,7872299,7872300,7872301,
    7872302,7872303,7872352,7872353,7872354,7872355,7872356,7872357,7872358,7872359,7872360,7872361,
    7872362,7872363,7872364,7872365,7872366,7872367,1573809,1311665,7872368,7865265,7865260,7603121,
    7872438,1573777,1311633,263057,902,7865233,953,7602344,7872372,7865271,7865262,7603127,
    7872454,263061,904,263063,905,7865239,270271,532415,7610303,1573817,1311673,263114,
    912,7603129,7603146,1573785,1311641,263065,906,270334,532478,7610366,1573829,1311685,
    263115,944,3933121,4195265,7603141,7603147,1573797,1311653,263077,910,4195233,262312,
    901,96,7872380,7865289,7865294,7603145,7872502,263071,908,263081,911,7865257,
    180,8194,8195,937,75,197,7348624,7348626,7348628,7348688,7348692,7348690,
    7348739,7348744,7348747,7348771,7348773,7348796,7348803,7348805,7348808,7340093,7348833,7348813,
    7340092,7340094,7348836,7348837,7348850,7348851,7348854,7348855,7348858,7348859,7348866,7348867,
    7348870,7348871,7348898,7348904,7348905,7348907,7348860,7348861,7348881,7348882,7348914,7348915,
    7348916,7348917,12296,12297,7351005,18100299,18100301,18100303,18100305,18100307,18100309,18100311,
    18100313,18100315,18100317,18100319,18100321,18100324,18100326,18100328,18100335,18362479,18100338,18362482,
    18100341,18362485,18100344,18362488,18100347,18362491,18100294,18100381,18100395,18100397,18100399,18100401,
    18100403,18100405,18100407,18100409,18100411,18100413,18100415,18100417,18100420,18100422,18100424,18100431,
    18362575,18100434,18362578,18100437,18362581,18100440,18362584,18100443,18362587,18100390,18100463,18100464,
    18100465,18100466,18100477,35912,26356,36554,36040,28369,20018,21477,40860,40860,
    22865,37329,21895,22856,25078,30313,32645,34367,34746,35064,37007,27138,
    27931,28889,29662,33853,37226,39409,20098,21365,27396,29211,34349,40478,
    23888,28651,34253,35172,25289,33240,34847,24266,26391,28010,29436,37070,
    20358,20919,21214,25796,27347,29200,30439,32769,34310,34396,36335,38706,
    39791,40442,30860,31103,32160,33737,37636,40575,35542,22751,24324,31840,
    32894,29282,30922,36034,38647,22744,23650,27155,28122,28431,32047,32311,
    38475,21202,32907,20956,20940,31260,32190,33777,38517,35712,25295,27138,
    35582,20025,23527,24594,29575,30064,21271,30971,20415,24489,19981,27852,
    25976,32034,21443,22622,30465,33865,35498,27578,36784,27784,25342,33509,
    25504,30053,20142,20841,20937,26753,31975,33391,35538,37327,21237,21570,
    22899,24300,26053,28670,31018,38317,39530,40599,40654,21147,26310,27511,
    36706,24180,24976,25088,25754,28451,29001,29833,31178,32244,32879,36646,
    34030,36899,37706,21015,21155,21693,28872,35010,35498,24265,24565,25467,
    27566,31806,29557,20196,22265,23527,23994,24604,29618,29801,32666,32838,
    37428,38646,38728,38936,20363,31150,37300,38584,24801,20102,20698,23534,
    23615,26009,27138,29134,30274,34044,36988,40845,26248,38446,21129,26491,
    26611,27969,28316,29705,30041,30827,32016,39006,20845,25134,38520,20523,
    23833,28138,36650,24459,24900,26647,29575,38534,21033,21519,23653,26131,
    26446,26792,27877,29702,30178,32633,35023,35041,37324,38626,21311,28346,
    21533,29136,29848,34298,38563,40023,40607,26519,28107,33256,31435,31520,
    31890,29376,28825,35672,20160,33590,21050,20999,24230,25299,31958,23429,
    27934,26292,36667,34892,38477,35211,24275,20800,21952,22618,26228,20958,
    29482,30410,31036,31070,31077,31119,38742,31934,32701,34322,35576,36920,
    37117,39151,39164,39208,40372,37086,38583,20398,20711,20813,21193,21220,
    21329,21917,22022,22120,22592,22696,23652,23662,24724,24936,24974,25074,
    25935,26082,26257,26757,28023,28186,28450,29038,29227,29730,30865,31038,
    31049,31048,31056,31062,31069,31117,31118,31296,31361,31680,32244,32265,
    32321,32626,32773,33261,33401,33401,33879,35088,35222,35585,35641,36051,
    36104,36790,36920,38627,38911,38971,24693,148206,33304,20006,20917,20840,
    20352,20805,20864,21191,21242,21917,21845,21913,21986,22618,22707,22852,
    22868,23138,23336,24274,24281,24425,24493,24792,24910,24840,24974,24928,
    25074,25140,25540,25628,25682,25942,26228,26391,26395,26454,27513,27578,
    27969,28379,28363,28450,28702,29038,30631,29237,29359,29482,29809,29958,
    30011,30237,30239,30410,30427,30452,30538,30528,30924,31409,31680,31867,
    32091,32244,32574,32773,33618,33775,34681,35137,35206,35222,35519,35576,
    35531,35585,35582,35565,35641,35722,36104,36664,36978,37273,37494,38524,
    38627,38742,38875,38911,38923,38971,39698,40860,141386,141380,144341,15261,
    16408,16441,152137,154832,163539,40771,40846,8127961,8390130,9700841,9962985,9763657,
    10025801,8390096,8652240,9176528,9176529,9176530,9176531,9176532,9176533,9176534,9176536,9176537,
    9176538,9176539,9176540,9176542,9176544,9176545,9176547,9176548,9176550,9176551,9176552,9176553,
    9176554,8914389,9438673,9438683,9438692,18682009,18682011,18682021,18944305,18944306,19206983,19469127,
    19993785,19731641,20255929,20518328,20518329,20828503,20828504,21090655,21352799,21614943,21877087,22139231,
    20828601,20828602,21090747,21090748,21352891,21352892,20029,20024,20033,131362,20320,20398,
    20411,20482,20602,20633,20711,20687,13470,132666,20813,20820,20836,20855,
    132380,13497,20839,20877,132427,20887,20900,20172,20908,20917,168415,20981,
    20995,13535,21051,21062,21106,21111,13589,21191,21193,21220,21242,21253,
    21254,21271,21321,21329,21338,21363,21373,21375,21375,21375,133676,28784,
    21450,21471,133987,21483,21489,21510,21662,21560,21576,21608,21666,21750,
    21776,21843,21859,21892,21892,21913,21931,21939,21954,22294,22022,22295,
    22097,22132,20999,22766,22478,22516,22541,22411,22578,22577,22700,136420,
    22770,22775,22790,22810,22818,22882,136872,136938,23020,23067,23079,23000,
    23142,14062,14076,23304,23358,23358,137672,23491,23512,23527,23539,138008,
    23551,23558,24403,23586,14209,23648,23662,23744,23693,138724,23875,138726,
    23918,23915,23932,24033,24034,14383,24061,24104,24125,24169,14434,139651,
    14460,24240,24243,24246,24266,172946,24318,140081,140081,33281,24354,24354,
    14535,144056,156122,24418,24427,14563,24474,24525,24535,24569,24705,14650,
    14620,24724,141012,24775,24904,24908,24910,24908,24954,24974,25010,24996,
    25007,25054,25074,25078,25104,25115,25181,25265,25300,25424,142092,25405,
    25340,25448,25475,25572,142321,25634,25541,25513,14894,25705,25726,25757,
    25719,14956,25935,25964,143370,26083,26360,26185,15129,26257,15112,15076,
    20882,20885,26368,26268,32941,17369,26391,26395,26401,26462,26451,144323,
    15177,26618,26501,26706,26757,144493,26766,26655,26900,15261,26946,27043,
    27114,27304,145059,27355,15384,27425,145575,27476,15438,27506,27551,27578,
    27579,146061,138507,146170,27726,146620,27839,27853,27751,27926,27966,28023,
    27969,28009,28024,28037,146718,27956,28207,28270,15667,28363,28359,147153,
    28153,28526,147294,147342,28614,28729,28702,28699,15766,28746,28797,28791,
    28845,132389,28997,148067,29084,148395,29224,29237,29264,149000,29312,29333,
    149301,149524,29562,29579,16044,29605,16056,16056,29767,29788,29809,29829,
    29898,16155,29988,150582,30014,150674,30064,139679,30224,151457,151480,151620,
    16380,16392,30452,151795,151794,151833,151859,30494,30495,30495,30538,16441,
    30603,16454,16534,152605,30798,30860,30924,16611,153126,31062,153242,153285,
    31119,31211,16687,31296,31306,31311,153980,154279,154279,31470,16898,154539,
    31686,31689,16935,154752,31954,17056,31976,31971,32000,155526,32099,17153,
    32199,32258,32325,17204,156200,156231,17241,156377,32634,156478,32661,32762,
    32773,156890,156963,32864,157096,32880,144223,17365,32946,33027,17419,33086,
    23221,157607,157621,144275,144284,33281,33284,36766,17515,33425,33419,33437,
    21171,33457,33459,33469,33510,158524,33509,33565,33635,33709,33571,33725,
    33767,33879,33619,33738,33740,33756,158774,159083,158933,17707,34033,34035,
    34070,160714,34148,159532,17757,17761,159665,159954,17771,34384,34396,34407,
    34409,34473,34440,34574,34530,34681,34600,34667,34694,17879,34785,34817,
    17913,34912,34915,161383,35031,35038,17973,35066,13499,161966,162150,18110,
    18119,35488,35565,35722,35925,162984,36011,36033,36123,36215,163631,133124,
    36299,36284,36336,133342,36564,36664,165330,165357,37012,37105,37137,165678,
    37147,37432,37591,37592,37500,37881,37909,166906,38283,18837,38327,167287,
    18918,38595,23986,38691,168261,168474,19054,19062,38880,168970,19122,169110,
    38923,38923,38953,169398,39138,19251,39209,39335,39362,39422,19406,170800,
    39698,40000,40189,19662,19693,40295,172238,19704,172293,172558,172689,40635,
    19798,40697,40702,40709,40719,40726,40763,173568,
};
/* second code points of two-code-point decompositions */
static const uint32_t sam3__uc_decomp_second[84] = {
    768,769,770,771,772,774,775,776,777,778,779,780,
    783,785,787,788,795,803,804,805,806,807,808,813,
    814,816,817,824,834,837,1460,1463,1464,1465,1468,1471,
    1473,1474,1619,1620,1621,2364,2492,2494,2519,2620,2876,2878,
    2902,2903,3006,3031,3158,3266,3285,3286,3390,3415,3530,3535,
    3551,3954,3956,3968,4021,4023,4142,6965,12441,12442,69818,69927,
    70462,70487,70832,70842,70845,71087,119141,119150,119151,119152,119153,119154,
};
/* sam3__uc_decomp_val indexes of primary composites, by (first, second) */
static const uint16_t sam3__uc_comp[940] = {
    912,909,913,0,1,2,3,53,55,238,4,572,5,165,208,210,
    570,415,57,417,419,421,59,61,63,65,6,425,67,427,431,433,
    429,7,8,9,598,69,71,73,10,596,77,212,214,594,240,75,
    439,441,445,198,79,447,81,83,187,85,87,449,453,236,451,455,
    457,11,12,13,89,91,93,97,14,610,167,216,218,612,95,459,
    98,463,189,465,100,467,102,106,469,104,475,473,477,479,481,200,
    108,15,483,112,485,110,489,487,16,17,18,19,114,116,246,20,
    616,118,169,220,222,161,614,191,499,501,120,503,124,224,226,505,
    122,509,126,128,511,132,513,232,130,521,136,523,234,134,527,525,
    21,22,23,138,140,142,24,640,144,146,171,228,230,163,638,529,
    148,533,531,539,541,543,545,150,549,547,551,553,555,652,25,152,
    658,250,557,154,656,654,155,559,157,159,561,563,26,27,28,29,
    54,56,239,30,573,31,166,209,211,571,416,58,418,420,422,60,
    62,64,66,32,426,68,428,432,434,430,33,34,35,599,70,72,
    74,36,597,78,213,215,595,241,76,440,442,446,199,80,448,82,
    84,188,86,88,450,454,237,452,456,458,565,37,38,39,90,92,
    94,40,611,168,217,219,613,96,460,99,197,464,190,466,101,468,
    103,107,470,105,476,474,478,480,482,201,109,41,484,113,486,111,
    490,488,42,43,44,45,115,117,247,46,617,119,170,221,223,162,
    615,192,500,502,121,504,125,225,227,506,123,510,127,129,512,133,
    514,233,131,522,566,137,524,235,135,528,526,47,48,49,139,141,
    143,50,641,145,147,172,229,231,164,639,530,149,534,532,540,542,
    544,546,151,550,548,567,552,554,556,653,51,153,659,251,558,52,
    657,568,655,156,560,158,160,562,564,875,258,835,576,574,580,578,
    181,202,204,185,423,602,600,606,604,461,620,618,624,622,491,244,
    493,242,206,179,175,173,177,577,575,581,579,182,203,205,186,424,
    603,601,607,605,462,621,619,625,623,492,245,494,243,207,180,176,
    174,178,586,584,590,588,587,585,591,589,435,437,436,438,495,497,
    496,498,515,516,517,518,535,536,537,538,569,630,628,634,632,636,
    631,629,635,633,637,644,642,648,646,650,645,643,649,647,651,195,
    193,194,183,184,443,444,248,249,196,831,259,830,829,668,669,833,
    841,261,682,683,843,262,696,697,845,857,263,856,855,268,712,713,
    883,264,726,727,874,872,265,871,870,269,740,885,266,752,753,887,
    826,838,760,270,823,822,660,661,827,825,762,271,676,677,764,272,
    688,689,839,837,766,273,850,849,275,704,705,853,768,277,720,721,
    866,867,770,278,863,862,276,732,733,868,772,279,744,745,881,879,
    851,267,854,864,274,869,880,280,281,285,302,304,284,282,306,283,
    300,310,312,287,314,289,316,286,318,324,288,326,328,330,332,322,
    303,305,293,291,307,292,301,311,313,296,315,290,317,295,319,325,
    297,327,329,331,333,323,294,298,299,308,309,320,321,334,335,337,
    336,338,340,341,339,342,343,344,353,354,365,364,366,369,370,372,
    371,373,374,377,375,376,378,379,381,380,382,383,385,384,403,404,
    405,406,407,408,409,410,411,412,413,414,471,472,507,508,519,520,
    582,592,583,593,608,609,626,627,662,664,666,774,663,665,667,775,
    776,777,778,779,780,781,670,672,674,782,671,673,675,783,784,785,
    786,787,788,789,678,680,679,681,684,686,685,687,690,692,694,790,
    691,693,695,791,792,793,794,795,796,797,698,700,702,798,699,701,
    703,799,800,801,802,803,804,805,706,708,710,707,709,711,714,716,
    718,715,717,719,722,724,723,725,728,730,729,731,734,736,738,735,
    737,739,741,742,743,746,748,750,806,747,749,751,807,808,809,810,
    811,812,813,754,756,758,814,755,757,759,815,816,817,818,819,820,
    821,824,836,878,828,846,847,848,840,882,859,860,861,894,895,896,
    897,899,898,900,901,902,903,904,905,906,907,908,911,910,914,915,
    916,917,918,919,920,921,930,931,922,923,924,925,932,933,926,927,
    928,929,934,935,936,937,966,941,942,943,944,945,946,947,948,949,
    950,951,952,953,954,955,956,957,958,959,960,961,962,963,964,965,
    967,993,968,969,970,971,972,973,974,975,976,977,978,979,980,981,
    982,983,984,985,986,987,988,989,990,991,992,994,995,996,997,998,
    1493,1494,1495,1496,1497,1498,1499,1501,1500,1502,1503,1504,
};
/* ==== sam3: end of unicode tables ==== */

/* ==== sam3: unicode lookups (the tokenizer's reads of the tables above) ==== */

/* Index of the last entry <= key in a sorted table, or -1. */
static int sam3__uc_last_le(const uint32_t *tab, int n, uint32_t key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (tab[mid] <= key) lo = mid + 1; else hi = mid;
    }
    return lo - 1;
}

static int sam3__uc_class_of(uint32_t cp)
{
    int i;
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return SAM3__UC_LETTER;
        if (cp >= '0' && cp <= '9') return SAM3__UC_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return SAM3__UC_SPACE;
        return SAM3__UC_OTHER;
    }
    if (cp > 0x10FFFF) return SAM3__UC_OTHER;
    i = sam3__uc_last_le(sam3__uc_class, SAM3__UC_COUNT(sam3__uc_class), (cp << 2) | 3u);
    return i < 0 ? SAM3__UC_OTHER : (int)(sam3__uc_class[i] & 3u);
}

static int sam3__uc_ccc_of(uint32_t cp)
{
    int i;
    if (cp < 0x300 || cp > 0x10FFFF) return 0;
    i = sam3__uc_last_le(sam3__uc_ccc, SAM3__UC_COUNT(sam3__uc_ccc), (cp << 8) | 0xFFu);
    return i < 0 ? 0 : (int)(sam3__uc_ccc[i] & 0xFFu);
}

/* Lowercase of one code point into out[0..2); returns how many (1 or 2). */
static int sam3__uc_lower(uint32_t cp, uint32_t *out)
{
    int i;
    if (cp < 0x80) {
        out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32u : cp;
        return 1;
    }
    out[0] = cp;
    if (cp > 0x10FFFF) return 1;
    for (i = 0; i + 2 < SAM3__UC_COUNT(sam3__uc_lower_multi); i += 3) {
        if (sam3__uc_lower_multi[i] == cp) {
            out[0] = sam3__uc_lower_multi[i + 1];
            out[1] = sam3__uc_lower_multi[i + 2];
            return 2;
        }
    }
    i = sam3__uc_last_le(sam3__uc_lower_run, SAM3__UC_COUNT(sam3__uc_lower_run), (cp << 11) | 0x7FFu);
    if (i >= 0) {
        uint32_t e = sam3__uc_lower_run[i], start = e >> 11, count = (e >> 1) & 0x3FFu;
        uint32_t stride = (e & 1u) ? 2u : 1u;
        if (cp < start + count * stride && (cp - start) % stride == 0)
            out[0] = (uint32_t)((int32_t)cp + sam3__uc_lower_delta[i]);
    }
    return 1;
}

/* One level of canonical decomposition: returns 0 if none, else the packed table value. */
static uint32_t sam3__uc_decomp_value(uint32_t cp)
{
    int i;
    uint32_t e, start, count;
    if (cp < 0xC0 || cp > 0x10FFFF) return 0;
    i = sam3__uc_last_le(sam3__uc_decomp_run, SAM3__UC_COUNT(sam3__uc_decomp_run), (cp << 11) | 0x7FFu);
    if (i < 0) return 0;
    e = sam3__uc_decomp_run[i];
    start = e >> 11;
    count = e & 0x7FFu;
    if (cp >= start + count) return 0;
    return sam3__uc_decomp_val[sam3__uc_decomp_off[i] + (cp - start)];
}

/* Full canonical decomposition of cp into out[0..SAM3__UC_MAX_DECOMP); returns the count. */
static int sam3__uc_decompose(uint32_t cp, uint32_t *out)
{
    uint32_t tail[SAM3__UC_MAX_DECOMP]; /* pending second code points, innermost last */
    int nt = 0, n = 0;
    if (cp - SAM3__HANGUL_S < SAM3__HANGUL_SN) {
        uint32_t s = cp - SAM3__HANGUL_S, t = s % SAM3__HANGUL_TN;
        out[n++] = SAM3__HANGUL_L + s / (SAM3__HANGUL_VN * SAM3__HANGUL_TN);
        out[n++] = SAM3__HANGUL_V + (s % (SAM3__HANGUL_VN * SAM3__HANGUL_TN)) / SAM3__HANGUL_TN;
        if (t) out[n++] = SAM3__HANGUL_T + t;
        return n;
    }
    for (;;) {
        uint32_t v = sam3__uc_decomp_value(cp);
        if (!v || nt >= SAM3__UC_MAX_DECOMP - 1) break;
        if (v >> 18) tail[nt++] = sam3__uc_decomp_second[(v >> 18) - 1];
        cp = v & 0x3FFFFu;
    }
    out[n++] = cp;
    while (nt > 0) out[n++] = tail[--nt];
    return n;
}

/* Primary composite of (a, b), or 0. */
static uint32_t sam3__uc_compose(uint32_t a, uint32_t b)
{
    int lo, hi;
    if (a - SAM3__HANGUL_L < SAM3__HANGUL_LN && b - SAM3__HANGUL_V < SAM3__HANGUL_VN)
        return SAM3__HANGUL_S + ((a - SAM3__HANGUL_L) * SAM3__HANGUL_VN + (b - SAM3__HANGUL_V)) * SAM3__HANGUL_TN;
    if (a - SAM3__HANGUL_S < SAM3__HANGUL_SN && (a - SAM3__HANGUL_S) % SAM3__HANGUL_TN == 0 &&
        b > SAM3__HANGUL_T && b < SAM3__HANGUL_T + SAM3__HANGUL_TN)
        return a + (b - SAM3__HANGUL_T);
    if (b < sam3__uc_decomp_second[0]) return 0; /* every second code point is >= U+0300 */
    lo = 0;
    hi = SAM3__UC_COUNT(sam3__uc_comp);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        uint32_t v = sam3__uc_decomp_val[sam3__uc_comp[mid]];
        uint32_t f = v & 0x3FFFFu, s = sam3__uc_decomp_second[(v >> 18) - 1];
        if (f < a || (f == a && s < b)) lo = mid + 1;
        else if (f == a && s == b) {
            /* the composite is the code point whose decomposition this is */
            int idx = sam3__uc_comp[mid], rl = 0, rh = SAM3__UC_COUNT(sam3__uc_decomp_off);
            while (rl < rh) { /* last run whose first value index is <= idx */
                int rm = rl + (rh - rl) / 2;
                if (sam3__uc_decomp_off[rm] <= idx) rl = rm + 1; else rh = rm;
            }
            return (sam3__uc_decomp_run[rl - 1] >> 11) + (uint32_t)(idx - sam3__uc_decomp_off[rl - 1]);
        } else hi = mid;
    }
    return 0;
}

#endif /* SAM3__IMPL2_INCLUDED */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the sam3.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.

The SAM 3 model weights are not covered by this licence: they are Meta's, under
the SAM License, and files converted from them carry that licence.
------------------------------------------------------------------------------
*/
