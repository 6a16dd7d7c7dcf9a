#!/usr/bin/env python3
"""Reference dumps for sam3.h's "segment everything" with crop layers and small-region removal
(sam3_everything_options.crop_layers, min_region_area), made with Hugging Face transformers 5.17 on
the tiny seeded models of tests/data (the GPU machine's CPU, fp32):

    python3 tools/make_reference_everything_crops.py OUTDIR [--data tests/data] [--only sam1_a,tiny_a]
                                                     [--points-per-side N] [--layers L] [--min-area A]

transformers 5.17's pipeline("mask-generation") cannot run crop layers: SamImageProcessor.generate_crop_boxes
stacks the cropped images into one tensor, which fails for crops of unequal sizes (any crop layer), and
the pipeline would send each click with one point per crop against a batch of crop embeddings. So the
crops come from transformers' own functions, glued per crop as the pipeline would: _generate_per_layer_crops
(what generate_crop_boxes calls for the boxes; the crops are cut from the image here), the model on each crop as its own image (SamModel with
SamProcessor, or Sam3TrackerModel with its processor, as tools/make_reference_everything.py), the
grid of _build_point_grid(N) scaled to the crop's pixels and given to the processor with the crop's
size (generate_crop_boxes' own points are normalised with the whole image's size, which puts them
in the crop's top-left part: sam3.h follows SAM, where each crop's points cover it), post_process_masks,
SamImageProcessor.filter_masks with the crop box (IoU and stability filters, crop-edge filter,
masks padded into the image), post_process_for_mask_generation per crop (box NMS at box_nms_thresh),
the boxes moved by the crop's corner (filter_masks returns them in the crop's frame), then
post_process_for_mask_generation over all crops (NMS at crops_nms_thresh, by predicted IoU).

Small-region removal: transformers has none. The reference is segment_anything's (or sam2's)
SamAutomaticMaskGenerator.postprocess_small_regions where importable; else a numpy/scipy
restatement of it (remove_small_regions: holes then islands, 8-connected components as
cv2.connectedComponentsWithStats(..., 8); changed masks score 0; torchvision batched_nms;
boxes recomputed). Which one ran is in the dump's small.how.

Thresholds: the mask threshold, stability offset and the IoU/stability cuts are picked on the whole
image's candidates as tools/make_reference_everything.py does (random weights have no natural cut).

Writes OUTDIR/NAME/ref_<sam1|points>_everything_crops.sam3 (arch "dump", dump.kind "everything_crops"):
    crops.box     i32 [c,4]  _generate_per_layer_crops' boxes (x0, y0, x1, y1)
    out.crop, out.candidate i32 [k]  kept masks with box_nms_thresh = crops_nms_thresh = 1 (none
                             suppressed): their crop and candidate (point * 3 + token in that crop)
    out.boxes f32 [k,4] (in the image), out.area i32 [k], out.masks u8 [min(k,16), ceil(H*W/8)]
    nms.crop, nms.candidate i32 [j]  the same at box_nms_thresh = crops_nms_thresh = evr.nms_thresh
    small.crop, small.candidate, small.changed i32 [k], small.boxes f32 [k,4], small.area i32 [k],
    small.masks u8 [min(k,16), ...]  postprocess_small_regions(out's masks, small.min_area, 1.0)
    smallnms.crop, smallnms.candidate i32 [j2]  postprocess_small_regions(nms's masks, min_area, nms thresh)
    config: evr.* as make_reference_everything.py (evr.mask_quantile: the mask threshold's quantile),
            crop.layers, crop.overlap, small.min_area, small.how, image.width, image.height, ref.transformers
Read by tests/test_parity.c (test_everything_crops_hf), which skips with a note where a dump is absent.
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
import make_reference_everything as mre  # noqa: E402
from make_reference_everything_tables import mask_box, nms, per_layer_crops, remove_small_regions  # noqa: E402

torch.set_grad_enabled(False)
OVERLAP, NMS, MAX_MASKS = 512 / 1500, 0.7, 16
log = mre.log


def small_regions_fn():
    """postprocess_small_regions(mask_data, min_area, nms_thresh) and MaskData, Meta's where importable."""
    for pkg in ("segment_anything", "sam2"):
        try:
            __import__("cv2")  # Meta's remove_small_regions imports it
            if pkg == "segment_anything":
                from segment_anything.automatic_mask_generator import SamAutomaticMaskGenerator as G
                from segment_anything.utils.amg import MaskData, mask_to_rle_pytorch, rle_to_mask
            else:
                from sam2.automatic_mask_generator import SAM2AutomaticMaskGenerator as G
                from sam2.utils.amg import MaskData, mask_to_rle_pytorch, rle_to_mask
            return pkg, G.postprocess_small_regions, MaskData, mask_to_rle_pytorch, rle_to_mask
        except Exception as e:  # noqa: BLE001
            log(f"  {pkg}: not importable ({type(e).__name__}: {e})")
    return "restatement", None, None, None, None


def small_regions(masks, boxes, min_area, nms_thresh, how):
    """postprocess_small_regions on binary masks [k,H,W]: returns keep order, changed flags, boxes, masks."""
    pkg, fn, MaskData, to_rle, from_rle = how
    if fn is not None:
        md = MaskData(rles=to_rle(torch.as_tensor(masks)), boxes=torch.as_tensor(boxes, dtype=torch.float32),
                      idx=torch.arange(len(masks)))
        out = fn(md, min_area, nms_thresh)
        keep = [int(i) for i in out["idx"]]
        nm = np.stack([from_rle(r) for r in out["rles"]]) if keep else np.zeros((0,) + masks.shape[1:], bool)
        amg = __import__(fn.__module__.rsplit(".", 1)[0] + ".utils.amg", fromlist=["remove_small_regions"])
        changed = []
        for i in keep:  # the score it gave: 0 where either pass found a small region
            m, c1 = amg.remove_small_regions(np.asarray(masks[i], bool), min_area, "holes")
            _, c2 = amg.remove_small_regions(m, min_area, "islands")
            changed.append(int(c1 or c2))
        return keep, changed, np.asarray(out["boxes"], np.float32).reshape(-1, 4), nm
    new, scores = [], []
    for m in masks:
        m, ch1 = remove_small_regions(np.asarray(m, bool), min_area, "holes")
        m, ch2 = remove_small_regions(m, min_area, "islands")
        new.append(m)
        scores.append(float(not (ch1 or ch2)))
    nm = np.stack(new) if new else np.zeros((0,) + masks.shape[1:], bool)
    nb = np.asarray([mask_box(m) for m in nm], np.float32).reshape(-1, 4)
    keep = nms(nb, scores, nms_thresh)
    return keep, [int(scores[i] == 0) for i in keep], nb[keep].reshape(-1, 4), nm[keep]


class Sam1:
    def __init__(self, src):
        from transformers import SamImageProcessor, SamModel, SamProcessor
        from PIL import Image
        self.model = SamModel.from_pretrained(src).float().eval()
        self.ip = SamImageProcessor.from_pretrained(src)
        self.proc = SamProcessor(image_processor=self.ip)
        self.image = Image.open(os.path.join(src, "image.png")).convert("RGB")
        self.target = self.ip.size["longest_edge"]

    def crop(self, img, n):
        """Every click of an n x n grid on crop img (numpy HWC): logits [n*n,3,h,w], IoU [n*n,3]."""
        from PIL import Image
        h, w = img.shape[:2]
        grid = mre.sam_fn("_build_point_grid")(n) * np.array([w, h])
        enc = self.proc(images=Image.fromarray(np.ascontiguousarray(img)), input_points=[[[[float(x), float(y)]] for x, y in grid]],
                        input_labels=[[[1] for _ in grid]], return_tensors="pt")
        emb = self.model.get_image_embeddings(enc["pixel_values"])
        out = self.model(image_embeddings=emb, input_points=enc["input_points"], input_labels=enc["input_labels"],
                         multimask_output=True)
        logits = self.ip.post_process_masks(out.pred_masks, enc["original_sizes"], enc["reshaped_input_sizes"], 0.0,
                                            binarize=False)[0]
        return logits, out.iou_scores[0]


class Sam3Head:
    def __init__(self, src):
        import make_reference as mr
        import make_reference_points as mrp
        from transformers import SamImageProcessor
        self.model, S, _, _ = mrp.load_tracker(src)
        self.proc = mrp.make_processor(S)
        self.ip = SamImageProcessor()
        self.image = np.ascontiguousarray(mr.read_image(os.path.join(src, "image.png"))[..., :3], dtype=np.uint8)
        self.target = S

    def crop(self, img, n):
        h, w = img.shape[:2]
        img = np.ascontiguousarray(img)
        enc = self.proc(images=img, return_tensors="pt")
        emb = self.model(pixel_values=enc["pixel_values"]).image_embeddings
        grid = mre.sam_fn("_build_point_grid")(n) * np.array([w, h])
        pts = self.proc(original_sizes=enc["original_sizes"], input_points=[[[[float(x), float(y)]] for x, y in grid]],
                        input_labels=[[[1] for _ in grid]], return_tensors="pt")
        out = self.model(image_embeddings=emb, input_points=pts["input_points"], input_labels=pts["input_labels"],
                         multimask_output=True)
        return self.proc.post_process_masks(out.pred_masks, enc["original_sizes"], binarize=False)[0], out.iou_scores[0]


def run_crops(ip, crops, boxes, W, H, cut, box_nms, crops_nms):
    """filter_masks + per-crop NMS, boxes into the image, NMS across crops. crops: [(logits, iou)]."""
    thr, off, t_iou, t_stab = cut
    rles, scores, bxs, ids = [], [], [], []
    for j, ((logits, iou), box) in enumerate(zip(crops, boxes)):
        rle, sc, bx = mre.call(ip.filter_masks, logits, iou, [H, W], [int(v) for v in box], pred_iou_thresh=t_iou,
                               stability_score_thresh=t_stab, mask_threshold=thr, stability_score_offset=off)
        if len(sc) == 0:
            continue
        _, sc, rle, bx = mre.call(ip.post_process_for_mask_generation, rle, sc, bx, box_nms)
        cand = mre.match(iou.flatten().numpy(), np.asarray(sc, np.float32).reshape(-1))
        rles += list(rle)
        scores.append(torch.as_tensor(sc).reshape(-1))
        bx = torch.as_tensor(bx).reshape(-1, 4).float()
        moved = bx + torch.tensor([box[0], box[1], box[0], box[1]], dtype=torch.float32)
        if j > 0:  # filter_masks' boxes in the crop's frame (moved here) or already in the image's: their masks say
            mb = mre.sam_fn("_batched_mask_to_box")(torch.stack([torch.as_tensor(np.asarray(mre.sam_fn("_rle_to_mask")(r)))
                                                                 for r in rle]).bool()).float()
            frame = "crop" if torch.equal(mb, moved) else "image" if torch.equal(mb, bx) else "neither"
            log(f"  crop {j}: {len(cand)} masks, filter_masks' boxes in the {frame}'s frame")
            if frame == "image":
                moved = bx
        bxs.append(moved)
        ids += [(j, c) for c in cand]
    if not ids:
        return [], np.zeros((0, 4), np.float32), np.zeros((0, H, W), bool), np.zeros(0, np.float32)
    sc_all, bx_all = torch.cat(scores), torch.cat(bxs)
    masks, sc, _, bx = mre.call(ip.post_process_for_mask_generation, rles, sc_all, bx_all, crops_nms)
    order = mre.match(sc_all.numpy().astype(np.float32), np.asarray(sc, np.float32).reshape(-1))
    return ([ids[i] for i in order], np.asarray(bx, np.float32).reshape(-1, 4),
            np.stack([np.asarray(m, bool) for m in masks]), np.asarray(sc, np.float32).reshape(-1))


def packed(masks, H, W):
    m = np.asarray(masks, bool).reshape(len(masks), H * W)[:MAX_MASKS]
    return np.packbits(m, axis=1) if len(m) else np.zeros((0, (H * W + 7) // 8), np.uint8)


def choose_cut(logits, q):
    """make_reference_everything.choose_cut with the mask threshold at the logits' q quantile instead of
    their median: random masks at the median span whole crops, so that the crop-edge filter would drop
    every crop's mask; higher, they are blobs, some inside a crop."""
    flat = logits.flatten()
    thr = float(round(float(torch.quantile(flat[::max(1, flat.numel() // 10_000_000)].double(), q)), 3))
    for off in (1.0, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01):
        st = mre.stability_of(logits, thr, off).numpy()
        if np.nanmedian(st) >= 0.4:
            break
    log(f"  logits: {q} quantile -> mask_threshold {thr}, stability_score_offset {off}")
    return thr, off, st


def run(name, src, outdir, n, layers, min_area, tfv, how, quantile):
    sam1 = name.startswith("sam1")
    net = Sam1(src) if sam1 else Sam3Head(src)
    ip = net.ip
    img = np.asarray(net.image)
    H, W = img.shape[:2]
    logits0, iou0 = net.crop(img, n)
    thr, off, st = choose_cut(logits0.flatten(0, 1), quantile)
    t_iou, t_stab = mre.choose(iou0.flatten().numpy(), np.asarray(st))
    cut = (thr, off, t_iou, t_stab)
    boxes, _ = per_layer_crops(mre.sam_fn("_generate_per_layer_crops"))(layers, OVERLAP, (H, W))
    boxes = np.asarray(boxes).astype(np.int64).reshape(-1, 4)
    log(f"  crop boxes {boxes.tolist()}")
    crops = [(logits0, iou0)] + [net.crop(img[b[1]:b[3], b[0]:b[2]], n) for b in boxes[1:]]
    ids1, bx1, m1, _ = run_crops(ip, crops, boxes, W, H, cut, 1.0, 1.0)
    idsn, bxn, mn, _ = run_crops(ip, crops, boxes, W, H, cut, NMS, NMS)
    log(f"  crops: {len(ids1)} masks kept without NMS, {len(idsn)} with NMS {NMS}: {idsn}")
    keep, changed, bxs, ms, keep2 = [], [], np.zeros((0, 4), np.float32), np.zeros((0, H, W), bool), []
    try:
        keep, changed, bxs, ms = small_regions(m1, bx1, min_area, 1.0, how)
        keep2, _, _, _ = small_regions(mn, bxn, min_area, NMS, how)
        log(f"  small regions ({how[0]}, min area {min_area}): {sum(changed)} of {len(keep)} changed; with NMS: {keep2}")
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        how = ("failed",) + tuple(how[1:])
    i32 = lambda v: np.asarray(v, np.int32).reshape(-1)  # noqa: E731
    t = [("crops.box", boxes.astype(np.int32)),
         ("out.crop", i32([a for a, _ in ids1])), ("out.candidate", i32([b for _, b in ids1])),
         ("out.boxes", bx1), ("out.area", i32(m1.reshape(len(m1), -1).sum(1))), ("out.masks", packed(m1, H, W)),
         ("nms.crop", i32([a for a, _ in idsn])), ("nms.candidate", i32([b for _, b in idsn])),
         ("small.crop", i32([ids1[i][0] for i in keep])), ("small.candidate", i32([ids1[i][1] for i in keep])),
         ("small.changed", i32(changed)), ("small.boxes", bxs), ("small.area", i32(ms.reshape(len(ms), -1).sum(1))),
         ("small.masks", packed(ms, H, W)),
         ("smallnms.crop", i32([idsn[i][0] for i in keep2])), ("smallnms.candidate", i32([idsn[i][1] for i in keep2]))]
    cfg = dict(arch="dump", **{"dump.kind": "everything_crops", "evr.points_per_side": n, "evr.pred_iou_thresh": t_iou,
               "evr.stability_thresh": t_stab, "evr.stability_offset": off, "evr.mask_threshold": thr,
               "evr.nms_thresh": NMS, "crop.layers": layers, "crop.overlap": OVERLAP, "evr.mask_quantile": quantile, "small.min_area": min_area,
               "small.how": how[0], "image.width": W, "image.height": H, "ref.transformers": tfv})
    path = os.path.join(outdir, f"ref_{'sam1' if sam1 else 'points'}_everything_crops.sam3")
    sam3file.write(path, cfg, [(k, np.ascontiguousarray(v)) for k, v in t])
    log(f"  wrote {path} ({os.path.getsize(path)} bytes)")


def dump_sources(path):
    """The transformers functions this reference glues, as installed, for the record."""
    import importlib
    import inspect
    with open(path, "w") as f:
        for mod in ("transformers.models.sam.image_processing_sam", "transformers.models.sam.image_processing_sam_fast",
                    "transformers.models.sam.image_processing_pil_sam", "transformers.pipelines.mask_generation"):
            try:
                m = importlib.import_module(mod)
                f.write(f"##### {mod}\n{inspect.getsource(m)}\n")
            except Exception as e:  # noqa: BLE001
                f.write(f"##### {mod}: {type(e).__name__}: {e}\n")
        for mod in ("segment_anything.automatic_mask_generator", "segment_anything.utils.amg", "sam2.utils.amg"):
            try:
                f.write(f"##### {mod}\n{inspect.getsource(importlib.import_module(mod))}\n")
            except Exception as e:  # noqa: BLE001
                f.write(f"##### {mod}: {type(e).__name__}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data"))
    ap.add_argument("--only", default="sam1_a,sam1_b,tiny_a")
    ap.add_argument("--points-per-side", type=int, default=8)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--min-area", type=int, default=25)
    ap.add_argument("--mask-quantile", type=float, default=0.95)
    ap.add_argument("--sources", default="", help="write the glued transformers modules' source here")
    a = ap.parse_args()
    if a.sources:
        dump_sources(a.sources)
    import transformers
    tfv = transformers.__version__
    log(f"torch {torch.__version__}, transformers {tfv}")
    for mod in ("segment_anything", "sam2", "cv2", "scipy"):
        try:
            __import__(mod)
            log(f"  {mod}: importable")
        except Exception as e:  # noqa: BLE001
            log(f"  {mod}: not importable ({type(e).__name__})")
    how = small_regions_fn()
    failures = []
    for name in a.only.split(","):
        log(f"== {name}")
        t0 = time.time()
        try:
            outdir = os.path.join(a.outdir, name)
            os.makedirs(outdir, exist_ok=True)
            run(name, os.path.join(a.data, name), outdir, a.points_per_side, a.layers, a.min_area, tfv, how, a.mask_quantile)
        except Exception:  # noqa: BLE001
            failures.append(name)
            traceback.print_exc()
        log(f"== {name} done in {time.time() - t0:.1f} s")
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
