"""Helpers of tests/test_track.sh (and tests/test_python.py): synthetic frames for `sam3 track`, as
PNG files and as YUV4MPEG2 streams, and checks of what `sam3 track` writes. numpy + stdlib only.

    track_frames.py make DIR W H N CHROMA   N frames of a disc moving over a gradient: DIR/png/fNNN.png,
                                            DIR/stream.y4m (CHROMA 444 or 420) and DIR/mask.png (a
                                            disc, for a --mask prompt)
    track_frames.py check OUTDIR FRAMES IDS_BY_FRAME
                                            checks OUTDIR against the frames (a folder of PNGs, or
                                            N for a stream: names null); IDS_BY_FRAME is e.g.
                                            "1,2;1,2;1,2,3": the ids expected on each frame, in order;
                                            prints how many objects have a non-empty mask
    track_frames.py same OUT_A OUT_B        the two outputs are equal (tracks.jsonl but the image
                                            names, every mask PNG byte for byte)
    track_frames.py overlays OUTDIR FRAMES  one overlay per frame, at its size, differing from the
                                            frame where an object is listed (drawn, or lost)
    track_frames.py marks OUTDIR CLICKS     on each overlay the "lost" tag (its grey at the top left
                                            corner) where a clicked object has an empty mask or a
                                            concept object seen before is missing, and the clicks
                                            CLICKS ("F:x,y:pos|neg;...") as dots
    track_frames.py coco PNG_OUT COCO_OUT   a --format coco run is the --format png run with each
                                            non-empty mask as its RLE (decoded here, pixel for
                                            pixel), no "segmentation" on an empty one, no masks/
    track_frames.py y4m STREAM OUTDIR W H N FPS
                                            STREAM is a YUV4MPEG2 4:2:0 stream of N W x H frames at
                                            FPS ("25:1") whose frames are OUTDIR's overlays (BT.601
                                            limited range, chroma from 2x2 means); prints the mean
                                            colour error of the frames read back

The frames are made in YUV and turned into RGB with the exact integer BT.601 formula the CLI
documents (limited range, chroma replicated); the PNG files hold that RGB. A stream and its PNG
folder therefore give the tracker the same bytes, and `sam3 track` must give the same results for
both, to the bit: that checks the stream reader and its colour conversion without a tolerance.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_images  # noqa: E402  (png_bytes, read_png)


def yuv_frame(k, w, h, chroma):
    """Frame k: Y, U, V planes (U, V at half size, rounded up, for 420): a bright gradient with a
    dark, saturated disc moving right."""
    y, x = np.mgrid[0:h, 0:w]
    cx, cy, r = w * (0.25 + 0.1 * k), h * 0.5, min(w, h) * 0.22
    disc = (x - cx) ** 2 + (y - cy) ** 2 < r * r
    Y = np.where(disc, 50, 150 + (x * 80) // max(1, w - 1)).astype(np.uint8)
    U = np.where(disc, 200, 100 + (y * 40) // max(1, h - 1)).astype(np.uint8)
    V = np.where(disc, 70, 140).astype(np.uint8)
    if chroma == "420":
        U, V = U[::2, ::2].copy(), V[::2, ::2].copy()  # (h+1)//2, (w+1)//2
    return Y, U, V


def yuv_to_rgb(Y, U, V):
    """sam3 track's conversion: BT.601 limited range in 1/256ths, chroma replicated for 4:2:0."""
    h, w = Y.shape
    if U.shape != Y.shape:
        U = U.repeat(2, 0).repeat(2, 1)[:h, :w]
        V = V.repeat(2, 0).repeat(2, 1)[:h, :w]
    c, d, e = Y.astype(np.int64) - 16, U.astype(np.int64) - 128, V.astype(np.int64) - 128
    r = (298 * c + 409 * e + 128) >> 8
    g = (298 * c - 100 * d - 208 * e + 128) >> 8
    b = (298 * c + 516 * d + 128) >> 8
    return np.clip(np.stack([r, g, b], axis=2), 0, 255).astype(np.uint8)


def make(d, w, h, n, chroma):
    os.makedirs(os.path.join(d, "png"), exist_ok=True)
    frames = []
    with open(os.path.join(d, "stream.y4m"), "wb") as f:
        f.write(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C%s XCOMMENT=sam3\n" % (w, h, chroma.encode()))
        for k in range(n):
            Y, U, V = yuv_frame(k, w, h, chroma)
            f.write(b"FRAME\n" + Y.tobytes() + U.tobytes() + V.tobytes())
            rgb = yuv_to_rgb(Y, U, V)
            frames.append(rgb)
            with open(os.path.join(d, "png", "f%03d.png" % k), "wb") as g:
                g.write(cli_images.png_bytes(rgb))
    y, x = np.mgrid[0:h, 0:w]
    disc = ((x - w * 0.45) ** 2 + (y - h * 0.5) ** 2 < (min(w, h) * 0.22) ** 2).astype(np.uint8) * 255
    with open(os.path.join(d, "mask.png"), "wb") as g:
        g.write(cli_images.png_bytes(disc))
    return frames


def read_tracks(outdir):
    with open(os.path.join(outdir, "tracks.jsonl"), "rb") as f:
        raw = f.read().decode("ascii")
    if not raw.endswith("\n"):
        raise AssertionError("tracks.jsonl does not end with a newline")
    lines = [json.loads(line) for line in raw.split("\n")[:-1]]
    if not lines or not lines[0].get("generator", "").startswith("sam3 track"):
        raise AssertionError("tracks.jsonl does not start with its generator line")
    return lines[1:]


def check(outdir, frames, ids_by_frame):
    """Returns the number of objects with a non-empty mask; raises AssertionError on anything wrong."""
    if frames.isdigit():
        names, sizes = [None] * int(frames), None
    else:
        names = sorted(n for n in os.listdir(frames) if not n.startswith("."))
        sizes = [cli_images.read_png(os.path.join(frames, n)).shape[:2] for n in names]
    want_ids = [[int(v) for v in s.split(",")] for s in ids_by_frame.split(";")]
    tracks = read_tracks(outdir)
    assert len(tracks) == len(names) == len(want_ids), "%d lines, %d frames, %d id lists" % (len(tracks), len(names), len(want_ids))
    visible = 0
    for k, t in enumerate(tracks):
        assert sorted(t) in (["frame", "image", "objects"], ["frame", "image", "objects", "overlay"]), "frame %d: keys %s" % (k, sorted(t))
        assert t.get("overlay", "overlays/%05d.png" % k) == "overlays/%05d.png" % k, "frame %d: overlay %s" % (k, t.get("overlay"))
        assert t["frame"] == k and t["image"] == names[k], "line %d: frame %s image %s" % (k, t["frame"], t["image"])
        ids = [o["id"] for o in t["objects"]]
        assert ids == want_ids[k], "frame %d: ids %s, expected %s" % (k, ids, want_ids[k])
        for o in t["objects"]:
            what = "frame %d object %d" % (k, o["id"])
            assert sorted(o) == ["area", "box", "id", "mask", "object_score_logit"], "%s: keys %s" % (what, sorted(o))
            assert type(o["object_score_logit"]) in (int, float) and np.isfinite(o["object_score_logit"]), what
            assert o["mask"] == "masks/%05d_%d.png" % (k, o["id"]), "%s: mask %s" % (what, o["mask"])
            m = cli_images.read_png(os.path.join(outdir, o["mask"]))
            assert m.shape[2] == 1, "%s: mask has %d channels" % (what, m.shape[2])
            m = m[:, :, 0]
            if sizes is not None:
                assert m.shape == sizes[k], "%s: mask %s, frame %s" % (what, m.shape, sizes[k])
            assert set(np.unique(m)) <= {0, 255}, "%s: mask values %s" % (what, np.unique(m))
            on = m == 255
            area = int(on.sum())
            assert o["area"] == area, "%s: area %d, mask PNG %d" % (what, o["area"], area)
            if area:
                ys, xs = np.nonzero(on)
                box = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
                visible += 1
            else:
                box = [0, 0, 0, 0]
            assert o["box"] == box, "%s: box %s, mask PNG bounds %s" % (what, o["box"], box)
    return visible


def same(a, b):
    ta, tb = read_tracks(a), read_tracks(b)
    assert len(ta) == len(tb), "%d vs %d frames" % (len(ta), len(tb))
    for x, y in zip(ta, tb):
        x, y = dict(x, image=None, overlay=None), dict(y, image=None, overlay=None)
        assert x == y, "frame %d differs:\n  %s\n  %s" % (x["frame"], x, y)
        for o in x["objects"]:
            with open(os.path.join(a, o["mask"]), "rb") as f, open(os.path.join(b, o["mask"]), "rb") as g:
                assert f.read() == g.read(), "%s differs" % o["mask"]


def lost_by_frame(tracks):
    """Per frame, whether its overlay lists lost objects: a clicked object with an empty mask, or a
    concept object listed on an earlier frame and not on this one."""
    seen, out = set(), []
    for t in tracks:
        now = {o["id"] for o in t["objects"] if "prompt" in o}
        out.append(any(o["area"] == 0 for o in t["objects"] if "prompt" not in o) or bool(seen - now))
        seen |= now
    return out


def overlays(outdir, frames):
    names = sorted(n for n in os.listdir(frames) if not n.startswith("."))
    tracks = read_tracks(outdir)
    lost = lost_by_frame(tracks)
    for k, n in enumerate(names):
        rgb = cli_images.read_png(os.path.join(frames, n))
        ov = cli_images.read_png(os.path.join(outdir, "overlays", "%05d.png" % k))
        assert ov.shape == rgb.shape, "overlay %d: %s, frame %s" % (k, ov.shape, rgb.shape)
        drawn = bool(tracks[k]["objects"]) or lost[k]
        assert drawn == bool((ov != rgb).any()), "overlay %d: objects listed or lost %s, differs from the frame %s" % (k, drawn, (ov != rgb).any())


def overlays_marks(outdir, clicks):
    tracks = read_tracks(outdir)
    grey, green, red = [60, 60, 60], [40, 200, 60], [230, 30, 40]
    want = {}
    for c in filter(None, clicks.split(";")):
        f, xy, lab = c.split(":")
        want.setdefault(int(f), []).append([int(v) for v in xy.split(",")] + [lab])
    lost = lost_by_frame(tracks)
    assert any(lost), "no frame with a lost object: nothing checked"
    for k, t in enumerate(tracks):
        ov = cli_images.read_png(os.path.join(outdir, "overlays", "%05d.png" % k)).astype(int)
        assert (list(ov[0, 0]) == grey) == lost[k], "overlay %d: lost tag %s, objects %s" % (k, list(ov[0, 0]), t["objects"])
        for x, y, lab in want.get(k, []):
            assert list(ov[y, x]) == (green if lab == "pos" else red), "overlay %d: click %d,%d is %s" % (k, x, y, list(ov[y, x]))


def rle_decode(rle):
    """COCO compressed RLE (cocoapi maskApi.c rleFrString) -> a (h, w) 0/1 array."""
    h, w = rle["size"]
    s, counts, p = rle["counts"], [], 0
    while p < len(s):
        x, k, more = 0, 0, 1
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = c & 0x20
            p, k = p + 1, k + 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    flat = np.zeros(h * w, np.uint8)
    at = 0
    for i, n in enumerate(counts):
        assert n >= 0 and at + n <= h * w, "RLE run %d of %d past the mask" % (i, n)
        flat[at:at + n] = i % 2
        at += n
    assert at == h * w, "RLE covers %d of %d pixels" % (at, h * w)
    return flat.reshape(w, h).T  # column-major


def coco(png_out, coco_out):
    tp, tc = read_tracks(png_out), read_tracks(coco_out)
    assert len(tp) == len(tc), "%d vs %d frames" % (len(tp), len(tc))
    assert not os.path.exists(os.path.join(coco_out, "masks")), "--format coco wrote masks/"
    n = 0
    for x, y in zip(tp, tc):
        assert len(x["objects"]) == len(y["objects"]), (x, y)
        for a, b in zip(x["objects"], y["objects"]):
            m = cli_images.read_png(os.path.join(png_out, a["mask"]))[:, :, 0] > 0
            assert {k: v for k, v in a.items() if k != "mask"} == {k: v for k, v in b.items() if k != "segmentation"}, (a, b)
            if not m.any():
                assert "segmentation" not in b, "frame %d: an empty mask has a segmentation: %s" % (x["frame"], b)
                continue
            d = rle_decode(b["segmentation"])
            assert d.shape == m.shape and (d.astype(bool) == m).all(), "frame %d object %d: RLE differs from the PNG" % (x["frame"], a["id"])
            n += 1
    assert n > 0, "no non-empty mask to compare"
    return n


def y4m(stream, outdir, w, h, n, fps):
    data = open(stream, "rb").read()
    head, rest = data.split(b"\n", 1)
    want = b"YUV4MPEG2 W%d H%d F%s Ip A1:1 C420jpeg XCOLORRANGE=LIMITED" % (w, h, fps.encode())
    assert head == want, "header %r, expected %r" % (head, want)
    cw, ch = (w + 1) // 2, (h + 1) // 2
    size = 6 + w * h + 2 * cw * ch
    assert len(rest) == n * size, "%d bytes of frames, expected %d frames of %d" % (len(rest), n, size)
    worst = 0
    for k in range(n):
        fr = rest[k * size:(k + 1) * size]
        assert fr[:6] == b"FRAME\n", "frame %d: %r" % (k, fr[:6])
        Y = np.frombuffer(fr, np.uint8, w * h, 6).reshape(h, w)
        U = np.frombuffer(fr, np.uint8, cw * ch, 6 + w * h).reshape(ch, cw)
        V = np.frombuffer(fr, np.uint8, cw * ch, 6 + w * h + cw * ch).reshape(ch, cw)
        ov = cli_images.read_png(os.path.join(outdir, "overlays", "%05d.png" % k)).astype(int)
        luma = 16 + ((66 * ov[:, :, 0] + 129 * ov[:, :, 1] + 25 * ov[:, :, 2] + 128) >> 8)
        assert (np.abs(Y.astype(int) - luma) <= 0).all(), "frame %d: luma differs from the overlay's" % k
        # chroma: BT.601 of each 2x2 block's mean (the blocks of an odd size's last column and row
        # are halves), rounded
        for plane, cf, name in ((U, (-38, -74, 112), "U"), (V, (112, -94, -18), "V")):
            c = cf[0] * ov[:, :, 0] + cf[1] * ov[:, :, 1] + cf[2] * ov[:, :, 2]
            pad = np.zeros((2 * ch, 2 * cw), np.int64)
            cnt = np.zeros((2 * ch, 2 * cw), np.int64)
            pad[:h, :w], cnt[:h, :w] = c, 1
            s4 = pad.reshape(ch, 2, cw, 2).sum((1, 3))
            n4 = cnt.reshape(ch, 2, cw, 2).sum((1, 3))
            want = (s4 + 256 * 128 * n4 + 128 * n4) // (256 * n4)
            assert (plane.astype(int) == want).all(), "frame %d: %s differs from the overlay's" % (k, name)
        worst = max(worst, float(np.abs(yuv_to_rgb(Y, U, V).astype(int) - ov).mean()))
    return worst


def main(argv):
    try:
        if argv[0] == "make" and len(argv) == 6:
            make(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
        elif argv[0] == "check" and len(argv) == 4:
            print(check(argv[1], argv[2], argv[3]))
        elif argv[0] == "same" and len(argv) == 3:
            same(argv[1], argv[2])
        elif argv[0] == "overlays" and len(argv) == 3:
            overlays(argv[1], argv[2])
        elif argv[0] == "marks" and len(argv) == 3:
            overlays_marks(argv[1], argv[2])
        elif argv[0] == "coco" and len(argv) == 3:
            print(coco(argv[1], argv[2]))
        elif argv[0] == "y4m" and len(argv) == 7:
            print("%.2f" % y4m(argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5]), argv[6]))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (AssertionError, OSError, ValueError, KeyError) as e:
        print("%s: %s" % (type(e).__name__, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
