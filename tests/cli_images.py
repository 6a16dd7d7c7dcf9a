"""Helpers of tests/test_cli.sh: write test images, check `sam3 segment` output. numpy + stdlib only.

    cli_images.py make DIR            writes the input images the CLI test uses into DIR
    cli_images.py check OUTDIR W H    checks OUTDIR/results.json against the mask and overlay PNGs;
                                      prints the instance count, or what is wrong (exit 1)
    cli_images.py points OUTDIR W H N_MASKS sam3|sam1
                                      the same for `sam3 points` output: N_MASKS masks, best = the
                                      highest predicted IoU, object_score_logit a number (sam3) or null (sam1)
    cli_images.py detector_only SRC DST
                                      copies a checkpoint directory (released sam3_video layout)
                                      without its tracker tensors and with unprefixed detector names:
                                      a Sam3Model file without an interactive head, once converted
"""
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(pixels, depth=8, interlace=False, palette=None, extra=b""):
    """PNG of an (h, w) or (h, w, c) uint8 array, c = 1..4 (8-bit), or uint16 with depth=16; with
    palette ((n, 3) uint8) the array holds indices; depth 1/2/4 packs grey or indices; interlace:
    Adam7; extra: chunks put between PLTE and IDAT."""
    a = np.asarray(pixels)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, c = a.shape
    colour_type = 3 if palette is not None else {1: 0, 2: 4, 3: 2, 4: 6}[c]

    def rows(sub):  # filter type 0 rows of a sub-image
        out = b""
        for y in range(sub.shape[0]):
            r = sub[y]
            if depth == 16:
                data = r.astype(">u2").tobytes()
            elif depth < 8:
                v = r.reshape(-1).astype(np.uint8)
                per = 8 // depth
                v = np.concatenate([v, np.zeros((-len(v)) % per, np.uint8)]).reshape(-1, per)
                data = bytes(int(sum(int(x) << (8 - depth * (k + 1)) for k, x in enumerate(g))) for g in v)
            else:
                data = r.astype(np.uint8).tobytes()
            out += b"\0" + data
        return out

    if interlace:
        raw = b""
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
            sub = a[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += rows(sub)
    else:
        raw = rows(a)
    plte = png_chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes()) if palette is not None else b""
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour_type, 0, 0, int(interlace)))
            + plte + extra + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))


def ppm_bytes(rgb):
    h, w, _ = rgb.shape
    return b"P6\n%d %d\n255\n" % (w, h) + np.asarray(rgb, np.uint8).tobytes()


def test_rgb():
    """The 97x61 RGB picture of make(); odd sizes on purpose."""
    h, w = 61, 97
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // w, y * 255 // h, (x + y) % 256], axis=2).astype(np.uint8)
    rgb[20:40, 30:60] = (250, 220, 30)
    return rgb


def read_png(path):
    """(h, w, c) uint8 array of an 8-bit, non-interlaced PNG (what stb_image_write produces)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or interlace:
        raise ValueError(f"{path}: depth {depth}, interlace {interlace}")
    c = {0: 1, 4: 2, 2: 3, 6: 4}[colour_type]
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * c)
    out = np.zeros((h, w * c), dtype=np.int32)
    for y in range(h):
        f, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        up = out[y - 1] if y else np.zeros(w * c, dtype=np.int32)
        if f == 0:
            out[y] = row
        elif f == 1:  # sub: a running sum along the row, per channel
            out[y] = (np.cumsum(row.reshape(w, c), axis=0) & 255).reshape(-1)
        elif f == 2:
            out[y] = (row + up) & 255
        else:  # average, paeth: byte by byte, in plain Python ints (faster than numpy scalars)
            r, u, cur = row.tolist(), up.tolist(), [0] * (w * c)
            for x in range(w * c):
                left = cur[x - c] if x >= c else 0
                upleft = u[x - c] if x >= c else 0
                if f == 3:
                    p = (left + u[x]) // 2
                else:
                    pa, pb, pc = abs(u[x] - upleft), abs(left - upleft), abs(left + u[x] - 2 * upleft)
                    p = left if pa <= pb and pa <= pc else u[x] if pb <= pc else upleft
                cur[x] = (r[x] + p) & 255
            out[y] = cur
    return out.astype(np.uint8).reshape(h, w, c)


def bmp_bytes(rgb):
    """24-bit bottom-up BMP."""
    h, w, _ = rgb.shape
    stride = (w * 3 + 3) & ~3
    rows = b"".join(rgb[y, :, ::-1].tobytes().ljust(stride, b"\0") for y in range(h - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(rows), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    return header + info + rows


def tga_bytes(rgba):
    """Uncompressed 32-bit top-down TGA."""
    h, w, _ = rgba.shape
    header = struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, w, h, 32, 0x28)
    return header + rgba[:, :, [2, 1, 0, 3]].tobytes()


def make(d):
    rgb = test_rgb()
    h, w = rgb.shape[:2]
    y, x = np.mgrid[0:h, 0:w]
    grey = rgb.mean(axis=2).astype(np.uint8)
    alpha = np.where(x > w // 2, 255, 0).astype(np.uint8)
    files = {
        "rgb.png": png_bytes(rgb),
        "grey.png": png_bytes(grey),
        "grey_alpha.png": png_bytes(np.stack([grey, alpha], axis=2)),
        "rgba.png": png_bytes(np.concatenate([rgb, alpha[:, :, None]], axis=2)),
        "rgb_16bit.png": png_bytes(rgb.astype(np.uint16) * 256 + 200, depth=16),  # high bytes = rgb
        "rgba_16bit.png": png_bytes(np.concatenate([rgb, alpha[:, :, None]], axis=2).astype(np.uint16) * 256, depth=16),
        "rgb_interlaced.png": png_bytes(rgb, interlace=True),
        "grey_2bit.png": png_bytes(grey >> 6, depth=2),
        "rgb.bmp": bmp_bytes(rgb),
        "rgba.tga": tga_bytes(np.concatenate([rgb, alpha[:, :, None]], axis=2)),
        "truncated.png": png_bytes(rgb)[:60],
        "not_an_image.png": b"hello, I am text\n",
    }
    # the same (quantised) pixels as RGB and through a 4-bit palette with a tRNS chunk (ignored)
    q = (rgb // 128 * 255).astype(np.uint8)
    colours, index = np.unique(q.reshape(-1, 3), axis=0, return_inverse=True)
    files["rgb_q.png"] = png_bytes(q)
    files["rgb_palette.png"] = png_bytes(index.reshape(h, w).astype(np.uint8), depth=4, palette=colours,
                                         extra=png_chunk(b"tRNS", bytes([0, 128] + [255] * (len(colours) - 2))))
    disc = ((x - 48) ** 2 + (y - 30) ** 2 < 15 ** 2).astype(np.uint8) * 255
    files["mask_97x61.png"] = png_bytes(disc)  # a mask prompt at another size than the image
    yy, xx = np.mgrid[0:32, 0:32]
    files["mask_32.png"] = png_bytes(((xx - 16) ** 2 + (yy - 12) ** 2 < 64).astype(np.uint8) * 255)  # SAM 1 low-res size
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def bounds(m):
    """The box every sam3 output gives: a boolean mask's pixel bounds [x0, y0, x1, y1], x1 and y1
    exclusive, all 0 when empty (as the tracker's sam3_box)."""
    ys, xs = np.nonzero(m)
    return [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1] if len(xs) else [0, 0, 0, 0]


def check(outdir, w, h):
    with open(os.path.join(outdir, "results.json"), encoding="ascii") as f:
        r = json.load(f)
    assert r["width"] == w and r["height"] == h, f"size {r['width']}x{r['height']}, expected {w}x{h}"
    names = sorted(n for n in os.listdir(outdir) if n.startswith("mask_") and n.endswith(".png"))
    inst = r["instances"]
    assert len(names) == len(inst), f"{len(inst)} instances but {len(names)} mask files"
    prev = 2.0
    for k, i in enumerate(inst):
        assert i["mask"] == f"mask_{k:03d}.png", f"instance {k}: mask {i['mask']}"
        assert 0 <= i["score"] <= 1 and i["score"] <= prev, f"instance {k}: score {i['score']} (not sorted?)"
        prev = i["score"]
        assert len(i["detector_box"]) == 4 and all(isinstance(v, (int, float)) for v in i["detector_box"]), f"instance {k}: {i}"
        m = read_png(os.path.join(outdir, i["mask"]))
        assert i["box"] == bounds(m[:, :, 0] == 255), f"instance {k}: box {i['box']}, mask bounds {bounds(m[:, :, 0] == 255)}"
        assert m.shape == (h, w, 1), f"{i['mask']}: shape {m.shape}"
        assert set(np.unique(m)) <= {0, 255}, f"{i['mask']}: values other than 0 and 255"
        assert int((m == 255).sum()) == i["area"], f"{i['mask']}: {(m == 255).sum()} pixels set, area {i['area']}"
    ov = read_png(os.path.join(outdir, "overlay.png"))
    assert ov.shape == (h, w, 3), f"overlay.png: shape {ov.shape}"
    return len(inst)


def check_points(outdir, w, h, n_masks, arch):
    with open(os.path.join(outdir, "results.json"), encoding="ascii") as f:
        r = json.load(f)
    assert r["width"] == w and r["height"] == h, f"size {r['width']}x{r['height']}, expected {w}x{h}"
    masks = r["masks"]
    assert len(masks) == n_masks, f"{len(masks)} masks, expected {n_masks}"
    names = sorted(n for n in os.listdir(outdir) if n.startswith("mask_") and n.endswith(".png"))
    assert names == [f"mask_{k:03d}.png" for k in range(n_masks)], f"mask files {names}"
    ious = [m["iou"] for m in masks]
    assert all(isinstance(v, (int, float)) for v in ious), f"iou {ious}"
    if arch == "sam3":  # SAM 1's IoU head is a plain regression, not a probability
        assert all(0 <= v <= 1 for v in ious), f"iou {ious}"
    assert 0 <= r["best"] < n_masks and ious[r["best"]] == max(ious), f"best {r['best']}, iou {ious}"
    if arch == "sam3":
        assert isinstance(r["object_score_logit"], (int, float)), f"object_score_logit {r['object_score_logit']}"
    else:
        assert r["object_score_logit"] is None, f"object_score_logit {r['object_score_logit']}, expected null"
    for k, m in enumerate(masks):
        assert m["mask"] == f"mask_{k:03d}.png", f"mask {k}: {m['mask']}"
        a = read_png(os.path.join(outdir, m["mask"]))
        assert a.shape == (h, w, 1), f"{m['mask']}: shape {a.shape}"
        assert set(np.unique(a)) <= {0, 255}, f"{m['mask']}: values other than 0 and 255"
        assert int((a == 255).sum()) == m["area"], f"{m['mask']}: {(a == 255).sum()} pixels set, area {m['area']}"
        assert m["box"] == bounds(a[:, :, 0] == 255), f"mask {k}: box {m['box']}, mask bounds {bounds(a[:, :, 0] == 255)}"
    ov = read_png(os.path.join(outdir, "overlay.png"))
    assert ov.shape == (h, w, 3), f"overlay.png: shape {ov.shape}"
    for x, y, label in r["points"]:  # each click: a dot, green on the object, red on the background
        if 0 <= x < w and 0 <= y < h:
            want = [40, 200, 60] if label == 1 else [230, 30, 40]
            assert list(ov[int(y), int(x)]) == want, f"overlay at click {x},{y}: {list(ov[int(y), int(x)])}, expected {want}"
    return n_masks


def detector_only(src, dst):
    os.makedirs(dst, exist_ok=True)
    data = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body, out_header, chunks, pos = data[8 + n:], {}, [], 0
    for name, t in header.items():
        if name == "__metadata__" or not name.startswith("detector_model."):
            continue
        b, e = t["data_offsets"]
        out_header[name[len("detector_model."):]] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [pos, pos + e - b]}
        chunks.append(body[b:e])
        pos += e - b
    hj = json.dumps(out_header).encode()
    hj += b" " * (-len(hj) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(chunks))
    for name in ("config.json", "preprocessor_config.json", "vocab.json", "merges.txt"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dst)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "detector_only":
        detector_only(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 7 and sys.argv[1] == "points":
        try:
            print(check_points(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]))
        except (AssertionError, OSError, ValueError, KeyError, TypeError) as e:
            print(f"{sys.argv[2]}: {e}")
            sys.exit(1)
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        try:
            print(check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        except (AssertionError, OSError, ValueError, KeyError, TypeError) as e:
            print(f"{sys.argv[2]}: {e}")
            sys.exit(1)
    else:
        sys.exit(__doc__)
