/* embed_min - the shortest complete program using sam3.h: load, context, set image, segment, read
   the masks, free. The code below is the QUICK START at the top of sam3.h, line for line;
   tests/test_quickstart.py checks that, so the documentation cannot drift from code that compiles.

   build/embed_min MODEL.sam3 IMAGE "text prompt"      (built and run on the tiny model by make test)
*/
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
