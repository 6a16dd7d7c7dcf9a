#!/usr/bin/env python3
"""Model-free reference tables for sam3.h's "segment everything" crop layers and small-region removal:

    python3 tools/make_reference_everything_tables.py OUT.sam3 [--transformers-source image_processing_sam.py]

crop boxes: transformers 5.17's _generate_per_layer_crops (what SamImageProcessor.generate_crop_boxes
calls) on the image sizes, layer counts and overlap ratios of TABLE; imported from transformers, or
taken from a copy of its source file where transformers is not installed (this one pure-Python function).

small regions: transformers has no such step. segment_anything's (and sam2's)
SamAutomaticMaskGenerator.postprocess_small_regions, restated in numpy (neither package is
installed on the reference machine): remove_small_regions(mask, min_area, "holes") then "islands"
with 8-connected components (cv2.connectedComponentsWithStats(..., 8) where cv2 is importable, else
scipy.ndimage.label with a 3x3 structure, else a flood fill: labels in the raster order of each
component's first pixel); a changed mask scores 0, the others 1; boxes recomputed; torchvision's
batched_nms (else a restatement: stable sort by score, float32 IoU, suppressed above the threshold),
whose order the output keeps. Inputs are seeded random blob masks with holes and specks, given in the
file, in their (descending predicted IoU) order.

    table.case i32 [t,4] (W, H, layers, ratio index), table.count i32 [t], table.box i32 [sum,4];
    config table.ratio0, table.ratio1, ... (the ratio indices' values)
    small.in u8 [K, ceil(H*W/8)] the input masks (np.packbits, MSB first), small.in_iou f32 [K]
    small<T>.keep i32 [j], small<T>.changed i32 [j], small<T>.boxes f32 [j,4], small<T>.area i32 [j],
    small<T>.masks u8 [j, ceil(H*W/8)] for NMS thresholds T in config small.nms (percent: small100, small70)
    config small.width, small.height, small.min_area, small.how
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sam3file  # noqa: E402

TABLE = [(1500, 1000, 2, 0), (1000, 1500, 3, 0), (150, 100, 1, 1), (17, 9, 2, 2), (640, 480, 2, 0),
         (1001, 999, 2, 3), (1024, 1024, 1, 4), (4000, 3000, 2, 0), (90, 131, 1, 0), (2, 2, 1, 0)]
RATIOS = [512 / 1500, 0.5, 0.25, 0.1, 0.9]
SW, SH, K, MIN_AREA, SEED = 32, 24, 14, 10, 38


def log(*a):
    print(*a, flush=True)


def label8(work):
    """8-connected components (labels in raster order of their first pixel, 0 = background)."""
    try:
        import cv2
        n, lab, stats, _ = cv2.connectedComponentsWithStats(work.astype(np.uint8), 8)
        return n, lab, stats[:, -1]
    except ImportError:
        pass
    try:
        from scipy import ndimage
        lab, n = ndimage.label(work, structure=np.ones((3, 3), int))
        return n + 1, lab, np.bincount(lab.ravel(), minlength=n + 1)
    except ImportError:
        pass
    H, W = work.shape  # plain BFS (tiny images only)
    lab = np.zeros((H, W), np.int64)
    n = 0
    for y0 in range(H):
        for x0 in range(W):
            if not work[y0, x0] or lab[y0, x0]:
                continue
            n += 1
            lab[y0, x0] = n
            st = [(y0, x0)]
            while st:
                y, x = st.pop()
                for yy in range(max(0, y - 1), min(H, y + 2)):
                    for xx in range(max(0, x - 1), min(W, x + 2)):
                        if work[yy, xx] and not lab[yy, xx]:
                            lab[yy, xx] = n
                            st.append((yy, xx))
    return n + 1, lab, np.bincount(lab.ravel(), minlength=n + 1)


def remove_small_regions(mask, area_thresh, mode):
    """Restatement of segment_anything.utils.amg.remove_small_regions."""
    correct_holes = mode == "holes"
    working_mask = (correct_holes ^ mask).astype(np.uint8)
    n_labels, regions, sizes_all = label8(working_mask)
    sizes = sizes_all[1:]
    small_regions = [i + 1 for i, s in enumerate(sizes) if s < area_thresh]
    if len(small_regions) == 0:
        return mask, False
    fill_labels = [0] + small_regions
    if not correct_holes:
        fill_labels = [i for i in range(n_labels) if i not in fill_labels]
        if len(fill_labels) == 0:
            fill_labels = [int(np.argmax(sizes)) + 1]
    return np.isin(regions, fill_labels), True


def nms(boxes, scores, thr):
    """torchvision.ops.nms on the CPU where torchvision is not installed: a stable sort by descending
    score, float32 areas and IoU, a box suppressed when its IoU with a kept one is above thr."""
    try:
        import torch
        from torchvision.ops.boxes import batched_nms
        return batched_nms(torch.as_tensor(np.asarray(boxes, np.float32)), torch.as_tensor(np.asarray(scores, np.float32)),
                           torch.zeros(len(scores)), iou_threshold=thr).tolist()
    except ImportError:
        pass
    b = np.asarray(boxes, np.float32).reshape(-1, 4)
    order = sorted(range(len(b)), key=lambda i: -float(scores[i]))
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    gone, keep = set(), []
    for a, i in enumerate(order):
        if i in gone:
            continue
        keep.append(i)
        for j in order[a + 1:]:
            w = np.float32(max(np.float32(0), min(b[i, 2], b[j, 2]) - max(b[i, 0], b[j, 0])))
            h = np.float32(max(np.float32(0), min(b[i, 3], b[j, 3]) - max(b[i, 1], b[j, 1])))
            inter = np.float32(w * h)
            with np.errstate(invalid="ignore"):  # two empty boxes: 0/0, never above
                over = inter / np.float32(area[i] + area[j] - inter) > thr
            if over:
                gone.add(j)
    return keep


def mask_box(m):
    """_batched_mask_to_box for one (H, W) mask: first and last set column and row, 0s when empty."""
    ys, xs = np.nonzero(m)
    return [0, 0, 0, 0] if len(xs) == 0 else [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())]


def per_layer_crops(source):
    """transformers' _generate_per_layer_crops (SamImageProcessor.generate_crop_boxes' crop boxes; the
    method itself stacks the crops into one tensor, which fails for crops of unequal sizes, i.e. for
    every crop layer): source is the function, or a path to a copy of transformers 5.17's
    models/sam/image_processing_sam.py whose one pure-Python function is taken where transformers is
    not installed."""
    if callable(source):
        return source
    import ast
    import itertools
    import math
    tree = ast.parse(open(source).read())
    fn = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "_generate_per_layer_crops"]
    g = {"math": math, "product": itertools.product}
    exec(compile(ast.Module(body=fn, type_ignores=[]), source, "exec"), g)
    return g["_generate_per_layer_crops"]


def crop_table(gen):
    cases, counts, allb = [], [], []
    for (W, H, L, r) in TABLE:
        b, _ = gen(L, RATIOS[r], (H, W))
        b = np.asarray(b).astype(np.int32).reshape(-1, 4)
        cases.append((W, H, L, r))
        counts.append(len(b))
        allb.append(b)
    return np.asarray(cases, np.int32), np.asarray(counts, np.int32), np.concatenate(allb)


def blobs(rng):
    """K masks (H, W): a few discs, some with holes, plus specks, in varied sizes; one empty, one full, one
    of specks only, and a duplicate."""
    yy, xx = np.mgrid[0:SH, 0:SW]
    out = []
    for k in range(K):
        m = np.zeros((SH, SW), bool)
        for _ in range(rng.randint(1, 4)):
            cx, cy, r = rng.uniform(0, SW), rng.uniform(0, SH), rng.uniform(2, 14)
            m |= (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        for _ in range(rng.randint(0, 3)):
            cx, cy, r = rng.uniform(0, SW), rng.uniform(0, SH), rng.uniform(0.5, 3)
            m &= ~((xx - cx) ** 2 + (yy - cy) ** 2 < r * r)
        if k % 3 == 0:
            m ^= rng.uniform(size=m.shape) < 0.004
        out.append(m)
    out[3] = np.zeros((SH, SW), bool)
    out[9] = np.ones((SH, SW), bool)
    out[11] = rng.uniform(size=(SH, SW)) < 0.01  # specks only: every island small, the largest stays
    out.append(out[5].copy())  # a duplicate: equal boxes, NMS decides on order
    return np.stack(out)


def small_regions(masks, min_area, nms_thresh):
    new, scores = [], []
    for m in masks:
        m, ch1 = remove_small_regions(np.asarray(m, bool), min_area, "holes")
        m, ch2 = remove_small_regions(m, min_area, "islands")
        new.append(m)
        scores.append(float(not (ch1 or ch2)))
    nm = np.stack(new)
    nb = np.asarray([mask_box(m) for m in nm], np.float32).reshape(-1, 4)
    keep = nms(nb, scores, nms_thresh)
    return keep, [int(scores[i] == 0) for i in keep], nb[keep], nm[keep]


def how():
    for mod in ("cv2", "scipy"):
        try:
            __import__(mod)
            return f"numpy restatement, {mod} components"
        except ImportError:
            pass
    return "numpy restatement, flood-fill components"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--transformers-source", default="")
    a = ap.parse_args()
    if a.transformers_source:
        gen = per_layer_crops(a.transformers_source)
    else:
        from transformers.models.sam import image_processing_sam
        gen = per_layer_crops(image_processing_sam._generate_per_layer_crops)
    tc, tn, tb = crop_table(gen)
    rng = np.random.RandomState(SEED)
    masks = blobs(rng)
    iou = np.sort(rng.uniform(0.5, 1.0, len(masks)).astype(np.float32))[::-1].copy()
    t = [("table.case", tc), ("table.count", tn), ("table.box", tb),
         ("small.in", np.packbits(masks.reshape(len(masks), -1), axis=1)), ("small.in_iou", iou)]
    for thr in (1.0, 0.7):
        keep, changed, boxes, nm = small_regions(masks, MIN_AREA, thr)
        tag = f"small{int(round(thr * 100))}"
        log(f"{tag}: keep {keep}, changed {changed}")
        t += [(f"{tag}.keep", np.asarray(keep, np.int32)), (f"{tag}.changed", np.asarray(changed, np.int32)),
              (f"{tag}.boxes", np.asarray(boxes, np.float32).reshape(-1, 4)),
              (f"{tag}.area", nm.reshape(len(nm), -1).sum(1).astype(np.int32)),
              (f"{tag}.masks", np.packbits(nm.reshape(len(nm), -1), axis=1))]
    cfg = {"arch": "dump", "dump.kind": "everything_tables", **{f"table.ratio{i}": float(r) for i, r in enumerate(RATIOS)},
           "small.width": SW, "small.height": SH, "small.min_area": MIN_AREA, "small.nms": [1.0, 0.7], "small.how": how()}
    sam3file.write(a.out, cfg, [(k, np.ascontiguousarray(v)) for k, v in t])
    log(f"wrote {a.out} ({os.path.getsize(a.out)} bytes): {len(tc)} crop tables ({int(tn.sum())} boxes), {len(masks)} masks")


if __name__ == "__main__":
    sys.exit(main())
