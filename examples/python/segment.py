#!/usr/bin/env python3
"""segment.py - sam3h from Python: every instance of a text prompt, then a click, on one image.

    make lib
    python3 examples/python/segment.py weights/sam3.sam3 photo.png "yellow school bus" [--click X,Y]
        [--threshold T] [--save masks.npz]

Prints each instance (score, box, mask area), then the masks a click gives (at the first instance's
box centre, or --click). Images: PNG through the small reader below, or anything Pillow reads when
it is installed. --save writes the masks and scores to an .npz file. It imports the sam3h package
next to it (Python puts this folder first on sys.path), else the one pip installed.
"""
import argparse
import struct
import sys
import zlib

import numpy as np

import sam3h


def read_image(path):
    """(H, W, 3) uint8 RGB: Pillow when installed, else an 8-bit non-interlaced PNG by hand."""
    try:
        from PIL import Image
        return np.asarray(Image.open(path).convert("RGB"))
    except ImportError:
        pass
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("segment.py: %s: not a PNG (install Pillow for other formats)" % path)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    if depth != 8 or interlace or colour not in (0, 2, 4, 6):
        sys.exit("segment.py: %s: only 8-bit non-interlaced PNGs without a palette here (install Pillow)" % path)
    c = {0: 1, 4: 2, 2: 3, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = w * c
    out = bytearray(h * stride)
    for y in range(h):  # undo the per-row filters (PNG spec 9.2)
        f, row = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        for x in range(stride):
            a = out[y * stride + x - c] if x >= c else 0
            b = out[(y - 1) * stride + x] if y else 0
            d = out[(y - 1) * stride + x - c] if x >= c and y else 0
            p = (0, a, b, (a + b) // 2)[f] if f < 4 else (
                a if abs(b - d) <= abs(a - d) and abs(b - d) <= abs(a + b - 2 * d) else b if abs(a - d) <= abs(a + b - 2 * d) else d)
            out[y * stride + x] = (row[x] + p) & 255
    img = np.frombuffer(bytes(out), dtype=np.uint8).reshape(h, w, c)
    return np.repeat(img[:, :, :1], 3, axis=2) if c <= 2 else img[:, :, :3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("text")
    ap.add_argument("--click", help="X,Y in image pixels (default: the best instance's box centre)")
    ap.add_argument("--threshold", type=float, default=0.5, help="keep instances scoring above this (0: all)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--save", help="write masks and scores to this .npz file")
    a = ap.parse_args()

    rgb = read_image(a.image)
    try:
        with sam3h.Model(a.model) as model, sam3h.Context(model, n_threads=a.threads) as ctx:
            ctx.set_image(rgb)
            seg = ctx.segment(a.text, score_threshold=a.threshold)
            print("%r: %d instance%s (presence %.3f)" % (a.text, len(seg), "" if len(seg) == 1 else "s", seg.presence))
            for i in np.argsort(-seg.scores, kind="stable"):
                x0, y0, x1, y1 = seg.boxes[i]
                print("  score %.3f  box %.0f,%.0f,%.0f,%.0f  %d pixels" % (seg.scores[i], x0, y0, x1, y1, seg.masks[i].sum()))
            if a.click:
                x, y = (float(v) for v in a.click.split(","))
            elif len(seg):
                x0, y0, x1, y1 = seg.boxes[int(np.argmax(seg.scores))]
                x, y = (x0 + x1) / 2, (y0 + y1) / 2
            else:
                x, y = rgb.shape[1] / 2, rgb.shape[0] / 2
            pts = None
            if model.has_points:
                pts = ctx.segment_points(points=[(x, y)])
                print("click at %.0f,%.0f: %d masks, predicted IoU %s, best %d (%d pixels)" % (
                    x, y, len(pts), " ".join("%.3f" % v for v in pts.iou), pts.best, pts.masks[pts.best].sum()))
            if a.save:
                np.savez_compressed(a.save, masks=seg.masks, boxes=seg.boxes, scores=seg.scores,
                                    click_masks=pts.masks if pts else np.zeros((0,) + rgb.shape[:2], bool))
    except sam3h.Error as e:
        sys.exit("segment.py: %s" % e)


if __name__ == "__main__":
    main()
