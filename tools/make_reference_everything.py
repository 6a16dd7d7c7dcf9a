#!/usr/bin/env python3
"""Reference dumps for sam3.h's "segment everything" (sam3_segment_everything), made with Hugging Face
transformers 5.17 on the tiny seeded models of tests/data (runs on the GPU machine's CPU in fp32):

    python3 tools/make_reference_everything.py OUTDIR [--data tests/data] [--only sam1_a,tiny_a]
                                               [--points-per-side N]
    python3 tools/make_reference_sam1.py DIR --fullsize vitb --image photo.jpg
    python3 tools/make_reference_everything.py DIR --data DIR --sam1 vitb --only vitb --points-per-side 16
        (SamConfig(), ViT-B, at a photo's size; then build/test_parity --model DIR/vitb/model.sam3 --data DIR/vitb)

SAM 1 (sam1_a, sam1_b): transformers' own pipeline("mask-generation") on SamModel.from_pretrained(dir)
and SamImageProcessor.from_pretrained(dir) with points_per_crop = N, crops_n_layers 0,
crops_nms_thresh 0.7, stability_score_offset 1, mask_threshold 0, output_bboxes_mask=True: its masks,
scores (predicted IoU) and boxes are the truth.

SAM 3's interactive head (tiny_a, tiny_b): the pipeline cannot drive Sam3TrackerModel (its processor's
post_process_masks takes other arguments), so the same algorithm runs from transformers' parts: the
grid of image_processing_sam._build_point_grid(N) scaled to the image's pixels, Sam3TrackerProcessor
for the point coordinates, Sam3TrackerModel (tools/make_reference_points.py's loader) with one
positive click per object and multimask_output=True, the processor's post_process_masks(binarize=False),
then SamImageProcessor's filter_masks and post_process_for_mask_generation, as the pipeline calls them.

Both: the stability score of every candidate mask comes from image_processing_sam's
_compute_stability_score_pt on the post-processed logits (the pipeline computes but does not return
it), and each kept mask is matched to its candidate (point * 3 + token) by its exact predicted IoU.
Random weights give logits, IoU and stability values with no natural 0 / 1 / 0.88 / 0.95 cut, so the
mask threshold, stability offset and thresholds are picked from the candidates' own values (the IoU
and stability cuts in the widest gap near a quantile, so that a 1e-5 difference cannot move a mask
across); all are recorded in the dump and given to the pipeline. Noisy random masks span the whole
image, so box NMS at 0.7 keeps one: the pipeline runs twice, at 0.7 (nms.candidate) and at 1.0
(nothing suppressed: out.*, every mask that passes the filters).

Writes OUTDIR/NAME/ref_sam1_everything.sam3 (SAM 1) or ref_points_everything.sam3 (SAM 3), arch
"dump", dump.kind "everything":
    input.grid   f32 [n,2]   the grid in image pixels (x, y), point i = row-major over the grid
    all.iou      f32 [3n]    every candidate's predicted IoU (candidate = point * 3 + token)
    all.stability f32 [3n]   every candidate's stability score
    out.candidate i32 [k]    the kept masks' candidates at NMS 1.0, in the output order (descending IoU)
    out.iou      f32 [k]     their predicted IoU
    out.stability f32 [k]    their stability score
    out.boxes    f32 [k,4]   x0, y0, x1, y1 (inclusive pixel bounds, as _batched_mask_to_box)
    out.masks    u8 [min(k,16), ceil(H*W/8)]  the first masks (H, W) row-major, np.packbits (MSB first)
    nms.candidate i32 [j]    the kept masks' candidates at NMS evr.nms_thresh (0.7)
    config: evr.points_per_side, evr.pred_iou_thresh, evr.stability_thresh, evr.stability_offset,
            evr.mask_threshold (a logit), evr.nms_thresh, image.width, image.height, ref.transformers
Every config runs in try/except; the exit status is non-zero if anything failed.
"""
import argparse
import os
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import sam3file  # noqa: E402

torch.set_grad_enabled(False)
SAM1 = ("sam1_a", "sam1_b")
SAM3 = ("tiny_a", "tiny_b")
NMS, MAX_MASKS = 0.7, 16


def log(*a):
    print(*a, flush=True)


def pick_threshold(vals, q, lo=0.0):
    """A cut in the widest gap between sorted values above lo within quantiles q +- 0.15."""
    v = np.sort(np.asarray([x for x in vals if x > lo], np.float64))
    if len(v) < 4:
        return 0.0
    a, b = max(int((q - 0.15) * len(v)), 1), min(int((q + 0.15) * len(v)), len(v) - 1)
    gaps = v[a:b + 1] - v[a - 1:b]
    j = int(np.argmax(gaps))
    return float(round(0.5 * (v[a - 1 + j] + v[a + j]), 6))


def choose(iou, stab):
    t_iou = pick_threshold(iou, 0.6)
    keep = iou > t_iou if t_iou > 0 else np.ones_like(iou, bool)
    t_stab = pick_threshold(stab[keep & np.isfinite(stab)], 0.3)
    log(f"  iou: min {iou.min():.4f} median {np.median(iou):.4f} max {iou.max():.4f} -> pred_iou_thresh {t_iou}; "
        f"stability (of those): median {np.nanmedian(stab[keep]):.4f} -> stability_score_thresh {t_stab}")
    return t_iou, t_stab


def sam_fn(*names):
    """A function of transformers' SAM image-processing modules (slow or fast), by its first found name."""
    import importlib
    for mod in ("transformers.models.sam.image_processing_sam", "transformers.models.sam.image_processing_sam_fast"):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        for n in names:
            if hasattr(m, n):
                return getattr(m, n)
    raise RuntimeError(f"none of {names} in transformers' SAM image processing")


def stability_of(logits, thr, off):
    return sam_fn("_compute_stability_score_pt", "_compute_stability_score")(logits, thr, off)


def choose_cut(logits):
    """Random weights leave most logits on one side of 0 and few past +-1: the mask threshold is
    the logits' median and the stability offset the largest of a list that leaves the median
    candidate's stability >= 0.4, so that masks, stability and NMS all have something to decide.
    (The median of at most ~5e7 of the logits, evenly strided, at the sizes of a real photo.)"""
    flat = logits.flatten()
    thr = float(round(float(flat[::max(1, flat.numel() // 50_000_000)].median()), 3))
    for off in (1.0, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01):
        st = stability_of(logits, thr, off).numpy()
        if np.nanmedian(st) >= 0.4:
            break
    log(f"  logits: median {float(logits.median()):.4f} -> mask_threshold {thr}, stability_score_offset {off}")
    return thr, off, st


def call(fn, *args, **kw):
    """fn with return_tensors="pt" where it takes that argument (the slow processor does, the fast not)."""
    import inspect
    if "return_tensors" in inspect.signature(fn).parameters:
        kw["return_tensors"] = "pt"
    return fn(*args, **kw)


def match(all_iou, scores):
    ids = []
    for s in scores:
        hit = np.nonzero(all_iou == np.float32(s))[0]
        if len(hit) != 1:
            raise RuntimeError(f"score {s} matches {len(hit)} candidates")
        ids.append(int(hit[0]))
    return ids


def write(path, cfg, grid, all_iou, all_stab, runs, masks, boxes, W, H):
    ids = runs[1]
    masks = np.asarray(masks, bool).reshape(len(ids), H * W)[:MAX_MASKS]
    packed = np.packbits(masks, axis=1) if len(ids) else np.zeros((0, (H * W + 7) // 8), np.uint8)
    t = [("input.grid", np.asarray(grid, np.float32).reshape(-1, 2)),
         ("all.iou", all_iou.astype(np.float32)), ("all.stability", all_stab.astype(np.float32)),
         ("out.candidate", np.asarray(ids, np.int32).reshape(-1)),
         ("out.iou", all_iou[ids].astype(np.float32).reshape(-1)),
         ("out.stability", all_stab[ids].astype(np.float32).reshape(-1)),
         ("out.boxes", np.asarray(boxes, np.float32).reshape(-1, 4)),
         ("out.masks", np.ascontiguousarray(packed, np.uint8)),
         ("nms.candidate", np.asarray(runs[0], np.int32).reshape(-1))]
    sam3file.write(path, cfg, t)
    log(f"  wrote {path} ({os.path.getsize(path)} bytes): {len(ids)} masks kept without NMS, "
        f"{len(runs[0])} with it: candidates {runs[0]}")


def candidates_sam1(model, ip, image, n):
    """Every candidate's IoU and stability through the pipeline's own preprocessing calls: all clicks
    in one batch on the tiny images; on a photo 64 at a time, the pipeline's points_per_batch (a
    32x32 grid's full-size logits at 1800x1200 would be 26 GB), the mask threshold and stability
    offset then chosen on the first batch's logits. Returns IoUs, stabilities, threshold, offset."""
    crop_boxes, grid, cropped, labels = ip.generate_crop_boxes(image, ip.size["longest_edge"], 0, 512 / 1500, n, 1)
    enc = ip(images=cropped, return_tensors="pt")
    emb = model.get_image_embeddings(enc["pixel_values"])
    W, H = image.size
    npt = grid.shape[1]
    batch = npt if npt * 3 * W * H <= 200_000_000 else 64
    ious, stabs, cut = [], [], None
    for i in range(0, npt, batch):
        out = model(image_embeddings=emb, input_points=torch.as_tensor(grid[:, i:i + batch], dtype=torch.float32),
                    input_labels=torch.as_tensor(labels[:, i:i + batch]), multimask_output=True)
        logits = ip.post_process_masks(out.pred_masks, enc["original_sizes"], enc["reshaped_input_sizes"], 0.0,
                                       binarize=False)[0].flatten(0, 1)  # [b * 3, H, W]
        if cut is None:
            thr, off, st = choose_cut(logits)
            cut = (thr, off)
        else:
            st = stability_of(logits, *cut).numpy()
        ious.append(out.iou_scores[0].flatten().numpy())
        stabs.append(np.asarray(st))
        del logits
    return np.concatenate(ious), np.concatenate(stabs), cut[0], cut[1]


def run_sam1(name, src, outdir, n, tfv):
    from PIL import Image
    from transformers import SamImageProcessor, SamModel, pipeline
    model = SamModel.from_pretrained(src).float().eval()
    ip = SamImageProcessor.from_pretrained(src)
    image = Image.open(os.path.join(src, "image.png")).convert("RGB")
    W, H = image.size
    all_iou, all_stab, thr, off = candidates_sam1(model, ip, image, n)
    t_iou, t_stab = choose(all_iou, all_stab)
    gen = pipeline("mask-generation", model=model, image_processor=ip, device="cpu")
    runs = []
    for nms in (NMS, 1.0):
        res = gen(image, points_per_crop=n, points_per_batch=64, pred_iou_thresh=t_iou, stability_score_thresh=t_stab,
                  stability_score_offset=off, crops_nms_thresh=nms, mask_threshold=thr, output_bboxes_mask=True)
        log(f"  crops_nms_thresh {nms}: {len(res['masks'])} masks")
        runs.append(match(all_iou, np.asarray(res["scores"], np.float32).reshape(-1)))
    grid = sam_fn("_build_point_grid")(n) * np.array([W, H])
    cfg = dict(arch="dump", **{"dump.kind": "everything", "evr.points_per_side": n, "evr.pred_iou_thresh": t_iou,
               "evr.stability_thresh": t_stab, "evr.stability_offset": off, "evr.mask_threshold": thr, "evr.nms_thresh": NMS,
               "image.width": W, "image.height": H, "ref.transformers": tfv, "ref.how": "pipeline(mask-generation)"})
    write(os.path.join(outdir, "ref_sam1_everything.sam3"), cfg, grid, all_iou, all_stab, runs,
          [np.asarray(m) for m in res["masks"]], np.asarray(res["bounding_boxes"]), W, H)


def run_sam3(name, src, outdir, n, tfv):
    import make_reference as mr
    import make_reference_points as mrp
    from transformers import SamImageProcessor
    model, S, g, D = mrp.load_tracker(src)
    proc = mrp.make_processor(S)
    img = np.ascontiguousarray(mr.read_image(os.path.join(src, "image.png"))[..., :3], dtype=np.uint8)
    H, W = img.shape[:2]
    enc = proc(images=img, return_tensors="pt")
    emb = model(pixel_values=enc["pixel_values"]).image_embeddings
    grid = sam_fn("_build_point_grid")(n) * np.array([W, H])
    pts = proc(original_sizes=enc["original_sizes"], input_points=[[[[float(x), float(y)]] for x, y in grid]],
               input_labels=[[[1] for _ in grid]], return_tensors="pt")
    out = model(image_embeddings=emb, input_points=pts["input_points"], input_labels=pts["input_labels"],
                multimask_output=True)
    logits = proc.post_process_masks(out.pred_masks, enc["original_sizes"], binarize=False)[0]  # [n, 3, H, W]
    iou = out.iou_scores[0]  # [n, 3]
    all_iou = iou.flatten().numpy()
    thr, off, all_stab = choose_cut(logits.flatten(0, 1))
    t_iou, t_stab = choose(all_iou, all_stab)
    sip = SamImageProcessor()
    rle, scores0, boxes0 = call(sip.filter_masks, logits, iou, [H, W], [0, 0, W, H], pred_iou_thresh=t_iou,
                                stability_score_thresh=t_stab, mask_threshold=thr, stability_score_offset=off)
    runs = []
    for nms in (NMS, 1.0):
        masks, scores, _, boxes = call(sip.post_process_for_mask_generation, rle, scores0, boxes0, nms)
        log(f"  crops_nms_thresh {nms}: {len(masks)} masks")
        runs.append(match(all_iou, np.asarray(scores, np.float32).reshape(-1)))
    cfg = dict(arch="dump", **{"dump.kind": "everything", "evr.points_per_side": n, "evr.pred_iou_thresh": t_iou,
               "evr.stability_thresh": t_stab, "evr.stability_offset": off, "evr.mask_threshold": thr, "evr.nms_thresh": NMS,
               "image.width": W, "image.height": H, "ref.transformers": tfv,
               "ref.how": "Sam3TrackerModel + SamImageProcessor.filter_masks / post_process_for_mask_generation"})
    write(os.path.join(outdir, "ref_points_everything.sam3"), cfg, grid, all_iou, all_stab, runs,
          [np.asarray(m) for m in masks], np.asarray(boxes), W, H)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data"))
    ap.add_argument("--only", default="")
    ap.add_argument("--points-per-side", type=int, default=12)
    ap.add_argument("--sam1", default="", help="comma-separated SAM 1 checkpoints under --data besides sam1_a, sam1_b "
                    "(make_reference_sam1.py --fullsize NAME's ViT-B)")
    a = ap.parse_args()
    import transformers
    tfv = transformers.__version__
    log(f"torch {torch.__version__}, transformers {tfv}")
    failures = []
    sam1 = SAM1 + tuple(x for x in a.sam1.split(",") if x)
    for name in sam1 + SAM3:
        if a.only and name not in a.only.split(","):
            continue
        log(f"== {name}")
        t0 = time.time()
        try:
            outdir = os.path.join(a.outdir, name)
            os.makedirs(outdir, exist_ok=True)
            (run_sam1 if name in sam1 else run_sam3)(name, os.path.join(a.data, name), outdir, a.points_per_side, tfv)
        except Exception:  # noqa: BLE001
            failures.append(name)
            traceback.print_exc()
        log(f"== {name} done in {time.time() - t0:.1f} s")
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
