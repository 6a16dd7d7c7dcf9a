#!/usr/bin/env python3
"""Reference dumps for sam3.h's saved concepts (sam3_concept) used on another image, made with
Hugging Face transformers 5.17 (torch on CPU, fp32; the GPU machine):

    python3 tools/make_reference_concept_xfer.py SRC OUTDIR

SRC is a tiny checkpoint dir (tests/data/tiny_a). A concept holds the prompt's tokens: the text
features and the geometry encoder's tokens of its boxes on the image they were drawn on (image A).
Used on image B it is the composition of transformers' own modules that this script runs:
Sam3Model's forward on image B's features with the geometry encoder's output replaced, through a
forward hook, by that module's output on image A (same text, same boxes). Nothing is restated here:
every stage is transformers' module.

Images: A = SRC/image.png, B = test_image(131, 90) of tools/make_reference.py (another size, so the
boxes' normalisation by image A's size matters). Per case OUTDIR/ref_xfer_NAME.sam3 holds the two
images, the prompt (text, boxes in image A pixels, labels), every query's score on B
(out.scores: sigmoid(logit) * sigmoid(presence)), and the processor's post-processing at a threshold
chosen between two scores (post.threshold, away from both so that 1e-4 cannot flip a decision):
post.keep, post.scores, post.boxes, post.masks (B's size).
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sam3file  # noqa: E402
from make_reference import f32, load_detector, log, make_tokenizer, read_image, test_image  # noqa: E402

torch.set_grad_enabled(False)

# (name, text or None, boxes xyxy as fractions of image A's (W, H), labels)
CASES = [
    ("text_boxes", "a cat", [[0.10, 0.20, 0.55, 0.70], [0.60, 0.05, 0.95, 0.40]], [1, 0]),
    ("boxes", None, [[0.25, 0.30, 0.80, 0.90]], [1]),
]


def pick_threshold(scores):
    """Midway across the widest gap among the top 6 scores (at least one instance kept)."""
    s = sorted((float(x) for x in scores), reverse=True)
    best, thr = -1.0, None
    for k in range(1, min(6, len(s))):
        if s[k - 1] - s[k] > best:
            best, thr = s[k - 1] - s[k], (s[k - 1] + s[k]) / 2
    return thr, best


def run_case(det, proc, img_a, img_b, case, path):
    name, text, boxes, labels = case
    Ha, Wa = img_a.shape[:2]
    Hb, Wb = img_b.shape[:2]
    text_in = text if text is not None else "visual"
    px = [[b[0] * Wa, b[1] * Ha, b[2] * Wa, b[3] * Ha] for b in boxes]
    in_a = proc(images=img_a, text=text_in, input_boxes=[px], input_boxes_labels=[labels], return_tensors="pt")
    in_b = proc(images=img_b, text=text_in, return_tensors="pt")
    rec = {}
    h = det.geometry_encoder.register_forward_hook(lambda m, a, o: rec.__setitem__("geo", o))
    det(pixel_values=in_a["pixel_values"], input_ids=in_a["input_ids"], attention_mask=in_a["attention_mask"],
        input_boxes=in_a["input_boxes"], input_boxes_labels=in_a["input_boxes_labels"])
    h.remove()
    geo_a = rec["geo"]
    # Image B: the same prompt, with the geometry tokens the encoder made on image A.
    h = det.geometry_encoder.register_forward_hook(lambda m, a, o: geo_a)
    out = det(pixel_values=in_b["pixel_values"], input_ids=in_b["input_ids"], attention_mask=in_b["attention_mask"],
              input_boxes=in_a["input_boxes"], input_boxes_labels=in_a["input_boxes_labels"])
    h.remove()
    scores = torch.sigmoid(out.pred_logits[0]) * torch.sigmoid(out.presence_logits.reshape(-1)[0])
    thr, gap = pick_threshold(scores)
    keep = torch.nonzero(scores > thr).flatten()
    res = proc.post_process_instance_segmentation(out, threshold=thr, mask_threshold=0.5, target_sizes=[(Hb, Wb)])[0]
    masks = res["masks"].to(torch.uint8).numpy().reshape(-1, Hb, Wb)
    t = [("input.image_a", img_a), ("input.image_b", img_b), ("input.boxes", np.asarray(px, np.float32)),
         ("input.labels", np.asarray(labels, np.int32)), ("out.scores", f32(scores)),
         ("post.keep", keep.numpy().astype(np.int32)), ("post.scores", f32(res["scores"])),
         ("post.boxes", f32(res["boxes"]).reshape(-1, 4)), ("post.masks", np.ascontiguousarray(masks))]
    cfg = {"arch": "dump", "dump.kind": "concept_xfer", "case.name": name, "case.text": text_in,
           "case.has_text": int(text is not None), "post.threshold": thr, "post.gap": gap, "post.mask_threshold": 0.5}
    sam3file.write(path, cfg, t)
    log(f"  {name}: kept {len(keep)} of {len(scores)} at {thr:.5f} (gap {gap:.2e}), presence "
        f"{float(torch.sigmoid(out.presence_logits.reshape(-1)[0])):.4f}")


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    import transformers
    from transformers import Sam3Processor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    log(f"torch {torch.__version__}, transformers {transformers.__version__}")
    det, cfg = load_detector(src)
    S = cfg.vision_config.backbone_config.image_size
    proc = Sam3Processor(image_processor=Sam3ImageProcessor(size={"height": S, "width": S}), tokenizer=make_tokenizer(src))
    img_a = read_image(os.path.join(src, "image.png"))
    img_b = test_image(131, 90, 4321)
    os.makedirs(outdir, exist_ok=True)
    for case in CASES:
        run_case(det, proc, img_a, img_b, case, os.path.join(outdir, f"ref_xfer_{case[0]}.sam3"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
