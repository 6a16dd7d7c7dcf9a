#!/usr/bin/env python3
"""Plain-Python restatement of the concept tracker's mask primitives (Sam3VideoModel's mask_iou,
nms_masks with the cv-utils kernel's greedy generic_nms, fill_holes_in_mask_scores with 8-connected
components as cc_2d / skimage.measure.label find them), written as cases for tests/test_concept.c:

    python3 tests/concept_ops.py OUT.sam3

HF 5.17 runs NMS and hole filling only with the optional `kernels` package, which the reference
machine lacks, so these steps are checked against this restatement rather than against HF dumps.
Inputs are seeded random logits (smoothed noise, so masks have holes, sprinkles and diagonal
contacts); the expected outputs come from the straightforward loops below, not from numpy tricks."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import sam3file  # noqa: E402


def mask_iou(a, b):
    inter = sum(1 for x, y in zip(a, b) if x and y)
    union = sum(1 for x, y in zip(a, b) if x or y)
    return inter / max(union, 1)


def nms(probs, masks, prob_thr, iou_thr):
    valid = [i for i in range(len(probs)) if probs[i] > prob_thr]
    order = sorted(valid, key=lambda i: -probs[i])  # stable: ties keep index order
    kept = []
    for i in order:
        if all(mask_iou(masks[i], masks[k]) <= iou_thr for k in kept):
            kept.append(i)
    return [1 if i in kept else 0 for i in range(len(probs))]


def component_areas(on, h, w):
    """area[y][x] = size of the 8-connected component of True pixels holding (y, x), else 0."""
    area = [[0] * w for _ in range(h)]
    seen = [[False] * w for _ in range(h)]
    for y in range(h):
        for x in range(w):
            if not on[y][x] or seen[y][x]:
                continue
            comp, todo = [], [(y, x)]
            seen[y][x] = True
            while todo:
                cy, cx = todo.pop()
                comp.append((cy, cx))
                for dy in (-1, 0, 1):
                    for dx in (-1, 0, 1):
                        ny, nx = cy + dy, cx + dx
                        if 0 <= ny < h and 0 <= nx < w and on[ny][nx] and not seen[ny][nx]:
                            seen[ny][nx] = True
                            todo.append((ny, nx))
            for cy, cx in comp:
                area[cy][cx] = len(comp)
    return area


def fill_holes(logits, max_area):
    h, w = len(logits), len(logits[0])
    m = [row[:] for row in logits]
    if max_area <= 0:
        return m
    bg = [[v <= 0 for v in row] for row in m]
    a = component_areas(bg, h, w)
    for y in range(h):
        for x in range(w):
            if bg[y][x] and a[y][x] <= max_area:
                m[y][x] = 0.1
    fg = [[v > 0 for v in row] for row in m]
    thr = min(sum(sum(r) for r in fg) // 2, max_area)
    a = component_areas(fg, h, w)
    for y in range(h):
        for x in range(w):
            if fg[y][x] and a[y][x] <= thr:
                m[y][x] = -0.1
    return m


def noise(rng, h, w, k):
    z = rng.standard_normal((h + 2 * k, w + 2 * k))
    c = np.cumsum(np.cumsum(z, 0), 1)
    s = c[2 * k:, 2 * k:] - c[:-2 * k, 2 * k:] - c[2 * k:, :-2 * k] + c[:-2 * k, :-2 * k]
    return (s[:h, :w] / (2 * k)).astype(np.float32)


def main():
    rng = np.random.default_rng(23)
    tensors, cfg = [], {"arch": "dump", "dump.kind": "concept_ops"}
    fills = [(32, 32, 16, 1), (32, 32, 16, 2), (20, 13, 4, 1), (7, 9, 16, 1), (32, 32, 0, 1), (1, 17, 3, 1), (32, 32, 40, 1)]
    for i, (h, w, area, k) in enumerate(fills):
        x = noise(rng, h, w, k) + np.float32(rng.uniform(-0.3, 0.3))
        y = np.array(fill_holes(x.tolist(), area), np.float32)
        tensors += [(f"fill.{i}.in", x), (f"fill.{i}.out", y), (f"fill.{i}.max_area", np.array([area], np.int32))]
    cfg["fill.n"] = len(fills)
    nmss = [(8, 0.3, 0.5), (8, 0.0, 0.1), (12, 0.5, 0.3), (1, 0.2, 0.5), (6, 0.9, 0.5)]
    for i, (n, pthr, ithr) in enumerate(nmss):
        bases = [noise(rng, 32, 32, 3) for _ in range(3)]  # three groups of overlapping masks
        masks = np.stack([(bases[j % 3] + 0.7 * noise(rng, 32, 32, 2) + np.float32(rng.uniform(-0.5, 0.5))) > 0
                          for j in range(n)]).astype(np.uint8).reshape(n, -1)
        probs = np.round(rng.uniform(0, 1, n), 2).astype(np.float32)  # 2 decimals: ties happen
        keep = nms(probs.tolist(), masks.tolist(), float(np.float32(pthr)), float(np.float32(ithr)))
        ious = np.array([[mask_iou(a, b) for b in masks.tolist()] for a in masks.tolist()], np.float32)
        tensors += [(f"nms.{i}.probs", probs), (f"nms.{i}.masks", masks), (f"nms.{i}.keep", np.array(keep, np.uint8)),
                    (f"nms.{i}.ious", ious), (f"nms.{i}.thr", np.array([pthr, ithr], np.float32))]
    cfg["nms.n"] = len(nmss)
    sam3file.write(sys.argv[1], cfg, tensors)


if __name__ == "__main__":
    main()
