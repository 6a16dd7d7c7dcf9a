"""Tests the Python package sam3h (examples/python) against the CLI on the tiny models.

    tests/test_python.py [BUILD_DIR]     (needs BUILD_DIR/libsam3.so (make lib), BUILD_DIR/sam3,
                                          BUILD_DIR/tiny_a.sam3, BUILD_DIR/sam1_a.sam3,
                                          BUILD_DIR/video_a.sam3; $CC for the layout check)

- `pip install --no-build-isolation --no-index ./examples/python` into a fresh venv (made with
  --system-site-packages, for numpy) works offline and bundles BUILD_DIR/libsam3.so; the rest runs
  in that venv: `import sam3h` is the installed package, with its version and its library, and a
  module named sam3 (a stand-in for Meta's package) imports next to it; README's Python example
  runs (on the tiny model);
- the ctypes mirrors of the C structs have the C compiler's field offsets and sizes;
- `sam3 segment` (text + boxes, text alone, boxes alone) and `sam3 points` (clicks + box, --single,
  a SAM 1 file) give exactly the binding's results: scores, boxes, IoUs, object score and
  presence as results.json prints them (%.6g), areas, every mask PNG pixel for pixel;
- mask_to_rle, Segmentation.rle() and to_coco(): known COCO RLE strings, the masks decoded back,
  the CLI's --format coco strings;
- the video Tracker and `sam3 track` on the same synthetic stream (tests/track_frames.py: clicks, a
  box, a mask prompt mid-stream, a correction) give exactly the same objects on every frame: ids,
  object-score logits (%.6g), boxes, areas, every mask pixel; its errors, remove_object, reset;
- errors are sam3h.Error subclasses that are also the fitting builtins (FileNotFoundError,
  ValueError, TypeError, ...), with the library's code and message;
- examples/python/segment.py runs.
Prints "test_python: N passed, N failed" last; exits 1 on failure, 77 (skipped) when Python here
has no venv or pip.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import cli_images  # noqa: E402  (read_png)
import dataset_check  # noqa: E402  (rle_decode)
import track_frames  # noqa: E402  (synthetic frames for the tracker)

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # tests need not spin (see tests/test_cli.sh)
LIB = os.path.join(B, "libsam3.so")
IN_VENV = os.environ.get("SAM3H_TEST_VENV") == "1"  # the second run: in the venv the first made
if IN_VENV:
    import sam3h  # noqa: E402  (the installed package: tests/ is sys.path[0], examples/python is not on it)

MODEL, SAM1 = os.path.join(B, "tiny_a.sam3"), os.path.join(B, "sam1_a.sam3")
VIDEO = os.path.join(B, "video_a.sam3")
IMAGE = os.path.join(ROOT, "tests", "data", "tiny_a", "image.png")
T = os.path.join(B, "test_python")
THREADS = 2
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)
    return ok


def g6(v):
    return "%.6g" % v  # how the CLI writes numbers into results.json


def cli(*args):
    r = subprocess.run([os.path.join(B, "sam3")] + list(args) + ["--threads", str(THREADS), "-q"], capture_output=True, text=True)
    check(r.returncode == 0, "sam3 %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.returncode == 0


def mask_png(d, name):
    return cli_images.read_png(os.path.join(d, name))[:, :, 0] > 0


def test_layout():
    """offsetof/sizeof of every mirrored struct field, from the C compiler."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "sam3.h"', "int main(void) {"]
    expect = []
    for cname, cls in sam3h.C_STRUCTS.items():
        padded = any(f.startswith("_") for f, _ in cls._fields_)
        if not padded:
            lines.append('    printf("%%zu\\n", sizeof(%s));' % cname)
            expect.append(("sizeof(%s)" % cname, sam3h.ctypes.sizeof(cls)))
        for f, _ in cls._fields_:
            if f.startswith("_"):
                continue
            lines.append('    printf("%%zu\\n", offsetof(%s, %s));' % (cname, f))
            expect.append(("offsetof(%s, %s)" % (cname, f), getattr(cls, f).offset))
    lines += ["    return 0;", "}"]
    src, exe = os.path.join(T, "layout.c"), os.path.join(T, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    cc = shlex.split(os.environ.get("CC", "cc"))
    r = subprocess.run(cc + ["-std=c99", "-I", ROOT, "-o", exe, src], capture_output=True, text=True)
    if not check(r.returncode == 0, "layout.c compiles (a field the binding names is gone?): %s" % r.stderr[:600]):
        return
    got = subprocess.run([exe], capture_output=True, text=True).stdout.split()
    bad = [("%s: C %s, ctypes %d" % (what, g, want)) for (what, want), g in zip(expect, got) if int(g) != want]
    check(len(got) == len(expect) and not bad, "ctypes structs match sam3.h: %s" % "; ".join(bad[:5]))


def compare_segment(ctx, img, name, text, boxes, labels):
    d = os.path.join(T, name)
    args = ["segment", "-m", MODEL, "-i", IMAGE, "--threshold", "0", "-o", d]
    if text is not None:
        args += ["-t", text]
    for b, l in zip(boxes, labels):
        args += ["--box", ",".join(str(v) for v in b) + ("" if l else ",neg")]
    if not cli(*args):
        return
    js = json.load(open(os.path.join(d, "results.json")))
    seg = ctx.segment(text, boxes=boxes or None, box_labels=labels or None, score_threshold=0)
    n = len(seg)
    check(n == len(js["instances"]) and n > 0, "%s: %d instances, CLI %d" % (name, n, len(js["instances"])))
    check(g6(seg.presence) == g6(js["presence"]), "%s: presence %s, CLI %s" % (name, g6(seg.presence), js["presence"]))
    check(seg.masks.shape == (n, img.shape[0], img.shape[1]) and seg.masks.dtype == bool, "%s: masks shape %s" % (name, seg.masks.shape))
    same = 0
    for inst in js["instances"]:
        i = [k for k in range(n) if seg.queries[k] == inst["query"]]
        if not check(len(i) == 1, "%s: query %d once in the binding's results" % (name, inst["query"])):
            continue
        i = i[0]
        ok = g6(seg.scores[i]) == g6(inst["score"])
        ok &= [g6(v) for v in seg.boxes[i]] == [g6(v) for v in inst["detector_box"]]
        ok &= int(seg.areas[i]) == inst["area"] == int(seg.masks[i].sum())
        ok &= bool(np.array_equal(seg.masks[i], mask_png(d, inst["mask"])))
        same += bool(ok)
        check(ok, "%s: query %d: score %s box %s area %d vs CLI %s" % (name, inst["query"], g6(seg.scores[i]),
                                                                       [g6(v) for v in seg.boxes[i]], seg.areas[i], inst))
    check(same == n, "%s: %d of %d instances equal to the CLI's (score, box, area, mask)" % (name, same, n))


def compare_points(ctx, name, model, points, labels, box=None, single=False):
    d = os.path.join(T, name)
    args = ["points", "-m", model, "-i", IMAGE, "-o", d]
    for p, l in zip(points, labels):
        args += ["-p", "%s,%s%s" % (p[0], p[1], "" if l else ",neg")]
    if box is not None:
        args += ["--box", ",".join(str(v) for v in box)]
    if single:
        args += ["--single"]
    if not cli(*args):
        return
    js = json.load(open(os.path.join(d, "results.json")))
    r = ctx.segment_points(points=points, point_labels=labels, box=box, single_mask=single)
    k = len(r)
    check(k == len(js["masks"]) and k == (1 if single else 3), "%s: %d masks, CLI %d" % (name, k, len(js["masks"])))
    check(r.best == js["best"], "%s: best %d, CLI %d" % (name, r.best, js["best"]))
    os_cli = js["object_score_logit"]
    check((r.object_score is None and os_cli is None) or (r.object_score is not None and os_cli is not None and
                                                          g6(r.object_score) == g6(os_cli)),
          "%s: object_score %s, CLI %s" % (name, r.object_score, os_cli))
    for j, m in enumerate(js["masks"]):
        ok = g6(r.iou[j]) == g6(m["iou"]) and int(r.masks[j].sum()) == m["area"]
        ok &= bool(np.array_equal(r.masks[j], mask_png(d, m["mask"])))
        check(ok, "%s: mask %d: iou %s area %d vs CLI %s" % (name, j, g6(r.iou[j]), r.masks[j].sum(), m))
    check(r.low_res_logits is not None and r.low_res_logits.ndim == 3 and r.low_res_logits.shape[0] == k,
          "%s: low_res_logits (K, h, w)" % name)
    return r


def test_arguments(img):
    """Issue 36: every argument checked before C: ValueError for NaN/inf numbers, OverflowError for
    ints wider than 32 bits (ctypes would wrap them), TypeError for the wrong types; each with a message."""
    def raises(exc, what, fn, *words):
        try:
            fn()
            check(False, "%s raises %s" % (what, exc.__name__))
        except exc as e:
            check(isinstance(e, sam3h.Error) and e.code == sam3h.ERR_INVALID_ARG and str(e).startswith("sam3: ") and
                  all(w in str(e) for w in words), "%s: %s %s" % (what, exc.__name__, e))
        except Exception as e:  # noqa: BLE001 (the wrong kind is the failure reported)
            check(False, "%s raises %s, not %s: %s" % (what, exc.__name__, type(e).__name__, e))
    nan, inf = float("nan"), float("inf")
    with sam3h.Model(VIDEO) as m, sam3h.Context(m, n_threads=1) as c:
        c.set_image(img)
        raises(ValueError, "segment(score_threshold=NaN)", lambda: c.segment("a cat", score_threshold=nan), "score_threshold")
        raises(ValueError, "segment(mask_threshold=inf)", lambda: c.segment("a cat", mask_threshold=inf), "mask_threshold")
        raises(TypeError, "segment(score_threshold='0.5')", lambda: c.segment("a cat", score_threshold="0.5"), "score_threshold")
        raises(TypeError, "segment(text=5)", lambda: c.segment(5), "text")
        raises(ValueError, "segment_points(mask_threshold=NaN)", lambda: c.segment_points(points=[(3, 3)], mask_threshold=nan))
        raises(ValueError, "segment_points(a NaN mask logit)", lambda: c.segment_points(points=[(3, 3)], mask_logits=np.full((8, 8), nan)),
               "mask_logits")
        raises(ValueError, "segment_points(an infinite click)", lambda: c.segment_points(points=[(inf, 3)]), "points")
        raises(ValueError, "segment_points(a click beyond float32)", lambda: c.segment_points(points=[(1e300, 3)]), "points")
        raises(TypeError, "segment_points(points='ab')", lambda: c.segment_points(points="ab"), "points")
        raises(OverflowError, "segment_points(label 2**32 + 1)", lambda: c.segment_points(points=[(3, 3)], point_labels=[2**32 + 1]))
        raises(TypeError, "set_image(a str)", lambda: c.set_image("photo.png"), "image")
        raises(TypeError, "config_int(5)", lambda: m.config_int(5), "key")
        raises(TypeError, "Context(a str)", lambda: sam3h.Context("model.sam3"), "Model")
        raises(OverflowError, "Context(n_threads=2**40)", lambda: sam3h.Context(m, n_threads=2**40), "n_threads")
        raises(TypeError, "Tracker(a Model)", lambda: sam3h.Tracker(m), "Context")
        raises(ValueError, "Tracker(mask_threshold=NaN)", lambda: sam3h.Tracker(c, mask_threshold=nan), "mask_threshold")
        with sam3h.Tracker(c) as tr:
            raises(OverflowError, "add_prompt(frame 2**32)", lambda: tr.add_prompt(2**32, 1, points=[(3, 3)]), "frame")
            raises(OverflowError, "add_prompt(object 2**32 + 7)", lambda: tr.add_prompt(0, 2**32 + 7, points=[(3, 3)]), "object_id")
            raises(TypeError, "add_prompt(frame '0')", lambda: tr.add_prompt("0", 1, points=[(3, 3)]), "frame")
            raises(TypeError, "add_prompt(frame 0.0)", lambda: tr.add_prompt(0.0, 1, points=[(3, 3)]), "frame")
            raises(OverflowError, "remove_object(2**32 + 7)", lambda: tr.remove_object(2**32 + 7), "object_id")


def expect(what, fn, cls, builtin, code, *words):
    """fn() raises cls, which is also the builtin exception `builtin` and a sam3h.Error with .code
    `code`, its message naming every word."""
    try:
        fn()
        check(False, "%s raises %s" % (what, cls.__name__))
    except Exception as e:  # noqa: BLE001 (the wrong kind is the failure reported)
        check(type(e) is cls and isinstance(e, builtin) and isinstance(e, sam3h.Error) and e.code == code and
              all(w in str(e) for w in words), "%s: %s (a %s, code %s): %s" % (what, type(e).__name__, builtin.__name__,
                                                                              getattr(e, "code", None), e))


def test_errors(img):
    """Each failure is a sam3h.Error subclass that is also the fitting builtin exception."""
    expect("Model(missing file)", lambda: sam3h.Model(os.path.join(T, "missing.sam3")), sam3h.NotFoundError, FileNotFoundError,
           sam3h.ERR_IO, "missing.sam3")
    expect("Model(a folder)", lambda: sam3h.Model(T), sam3h.FileReadError, OSError, sam3h.ERR_IO)
    bad = os.path.join(T, "bad.sam3")
    with open(bad, "wb") as f:
        f.write(b"NOPE" + bytes(200))
    expect("Model(not a .sam3)", lambda: sam3h.Model(bad), sam3h.FileFormatError, ValueError, sam3h.ERR_BAD_MAGIC)
    with open(MODEL, "rb") as f:
        head = f.read(4096)
    cut = os.path.join(T, "cut.sam3")
    with open(cut, "wb") as f:
        f.write(head)
    expect("Model(a cut .sam3)", lambda: sam3h.Model(cut), sam3h.FileFormatError, ValueError, sam3h.ERR_CORRUPT_FILE)
    with sam3h.Model(MODEL, image_size=70) as m:
        check(m.image_size == 70, "Model(image_size=70): input side %d" % m.image_size)
    expect("Model(image_size=71)", lambda: sam3h.Model(MODEL, image_size=71), sam3h.InvalidArgumentError, ValueError,
           sam3h.ERR_INVALID_ARG, "image_size 71")
    expect("Model(SAM 1, image_size=64)", lambda: sam3h.Model(SAM1, image_size=64), sam3h.UnsupportedError, ValueError,
           sam3h.ERR_UNSUPPORTED, "SAM 1")
    with sam3h.Model(MODEL) as m, sam3h.Context(m, n_threads=1) as c:
        expect("segment before set_image", lambda: c.segment("a cat"), sam3h.NoImageError, RuntimeError, sam3h.ERR_NO_IMAGE)
        expect("set_image(float image)", lambda: c.set_image(img.astype(np.float32)), sam3h.ArgumentTypeError, TypeError,
               sam3h.ERR_INVALID_ARG, "uint8")
        expect("set_image(2-channel image)", lambda: c.set_image(img[:, :, :2]), sam3h.ArgumentTypeError, TypeError,
               sam3h.ERR_INVALID_ARG, "(H, W, 3)")
        expect("set_image(0 x 0)", lambda: c.set_image(np.zeros((0, 0, 3), np.uint8)), sam3h.InvalidArgumentError, ValueError,
               sam3h.ERR_INVALID_ARG)
        c.set_image(img)
        expect("segment(a NaN box)", lambda: c.segment("a cat", boxes=[(float("nan"), 5, 10, 10)]), sam3h.InvalidArgumentError,
               ValueError, sam3h.ERR_INVALID_ARG, "NaN")
        expect("segment(boxes (N, 3))", lambda: c.segment("a cat", boxes=[(1, 2, 3)]), sam3h.ArgumentTypeError, TypeError,
               sam3h.ERR_INVALID_ARG, "(N, 4)")
        expect("segment_points(65 points)", lambda: c.segment_points(points=[(1, 1)] * 65), sam3h.InvalidArgumentError, ValueError,
               sam3h.ERR_INVALID_ARG, "65 points")
        expect("segment(masks=False).rle()", lambda: c.segment("a cat", masks=False).rle(), sam3h.InvalidArgumentError,
               ValueError, sam3h.ERR_INVALID_ARG, "masks=False")
        check(m.tokenize("a cat")[0] == m.config_int("text.bos_token_id") if _has_key(m, "text.bos_token_id") else
              len(m.tokenize("a cat")) >= 3, "tokenize: BOS first: %s" % m.tokenize("a cat"))
    with sam3h.Model(SAM1) as m, sam3h.Context(m, n_threads=1) as c:
        c.set_image(img)
        expect("segment on a SAM 1 file", lambda: c.segment("a cat"), sam3h.UnsupportedError, ValueError, sam3h.ERR_UNSUPPORTED,
               "SAM 3")
    m3 = sam3h.Model(MODEL)
    c3 = sam3h.Context(m3, n_threads=1)
    m3.close()
    expect("a context whose model is closed", lambda: c3.set_image(img), sam3h.InvalidArgumentError, ValueError,
           sam3h.ERR_INVALID_ARG, "model is closed")
    c3.close()
    c2 = sam3h.Context(sam3h.Model(MODEL), n_threads=1)
    c2.close()
    expect("a closed context", lambda: c2.set_image(img), sam3h.InvalidArgumentError, ValueError, sam3h.ERR_INVALID_ARG, "closed")
    # every error code of sam3.h has its class, and the builtin each stands for
    codes = re.findall(r"X\((SAM3_ERR_\w+), (-\d+),", open(os.path.join(ROOT, "sam3.h")).read())
    classes = {name: sam3h.ERRORS.get(int(v)) for name, v in codes}
    check(len(codes) >= 12 and all(classes.values()), "sam3h.ERRORS covers every SAM3_ERR_ code: %s" % classes)
    for code, builtin in ((sam3h.ERR_OUT_OF_MEMORY, MemoryError), (sam3h.ERR_IO, OSError), (sam3h.ERR_INVALID_ARG, ValueError),
                          (sam3h.ERR_SHAPE_MISMATCH, ValueError), (sam3h.ERR_MISSING_TENSOR, ValueError), (-99, Exception)):
        e = sam3h._error(code, "x")
        check(isinstance(e, builtin) and isinstance(e, sam3h.Error) and e.code == code and str(e) == "x",
              "code %d raises %s, a %s" % (code, type(e).__name__, builtin.__name__))


def test_rle(ctx, img):
    """mask_to_rle, Segmentation.rle() and to_coco(): the strings of COCO's compressed RLE (known ones
    worked by hand from cocoapi's maskApi.c; the masks decoded again by tests/dataset_check.py's
    restatement of pycocotools' decoder), the CLI's --format coco strings, the annotation fields."""
    hand = np.array([[0, 1, 1, 0, 0], [0, 1, 0, 1, 0], [0, 1, 1, 1, 0], [1, 0, 0, 0, 1]])  # counts 3 4 1 2 0 0 1 1 2 2 1
    for mask, want in ((hand, "341M00112O"), (hand.astype(bool), "341M00112O"), (np.zeros((2, 3)), "6"), (np.ones((2, 3)), "06"),
                       (np.zeros((0, 3)), "0"), (np.array([[1], [0], [1], [1], [0]]), "01110"), (np.array([[0, 0, 7, 7, 7]]), "23")):
        got = sam3h.mask_to_rle(mask)
        check(got == want, "mask_to_rle(%s %s) = %r, want %r" % (mask.dtype, mask.shape, got, want))
    expect("mask_to_rle(a 3-D array)", lambda: sam3h.mask_to_rle(np.zeros((2, 2, 2))), sam3h.ArgumentTypeError, TypeError,
           sam3h.ERR_INVALID_ARG, "2-D")
    expect("mask_to_rle(strings)", lambda: sam3h.mask_to_rle(np.array([["a"]])), sam3h.ArgumentTypeError, TypeError,
           sam3h.ERR_INVALID_ARG)
    d = os.path.join(T, "seg_coco")
    if not cli("segment", "-m", MODEL, "-i", IMAGE, "-t", "a cat", "--threshold", "0", "--format", "coco", "-o", d):
        return
    cli_counts = {inst["query"]: inst["segmentation"]["counts"] for inst in json.load(open(os.path.join(d, "results.json")))["instances"]}
    seg = ctx.segment("a cat", score_threshold=0)
    rle, ann = seg.rle(), seg.to_coco(image_id=7, category_id=3)
    json.dumps(ann)  # plain Python types
    same = 0
    for i in range(len(seg)):
        a = ann[i]
        back = dataset_check.rle_decode(a["segmentation"]).astype(bool)
        x0, y0, x1, y1 = seg.boxes[i]  # float32: the width is a float32 difference, as the CLI's
        ok = a["segmentation"] == {"size": [img.shape[0], img.shape[1]], "counts": rle[i]} and np.array_equal(back, seg.masks[i])
        ok &= rle[i] == cli_counts.get(int(seg.queries[i]))
        ok &= a["image_id"] == 7 and a["category_id"] == 3 and a["iscrowd"] == 0 and a["area"] == int(seg.masks[i].sum())
        ok &= a["bbox"] == [float(x0), float(y0), float(x1 - x0), float(y1 - y0)] and a["score"] == float(seg.scores[i])
        same += bool(ok)
        check(ok, "to_coco()[%d]: decodes to the mask, the CLI's string, fields: %s" % (i, {k: a[k] for k in a if k != "segmentation"}))
    check(same == len(seg) == len(cli_counts) > 0, "to_coco: %d of %d instances round-trip (CLI %d)" % (same, len(seg), len(cli_counts)))


def test_tracker():
    """The same stream through Tracker and through `sam3 track`; then the Tracker's errors."""
    d = os.path.join(T, "track")
    frames = track_frames.make(d, 64, 48, 5, "444")
    mask = cli_images.read_png(os.path.join(d, "mask.png"))[:, :, 0]
    # frame: [(id, prompt)]: objects 1 (a click) and 2 (a box) from frame 0, 3 (a mask) joins on
    # frame 2, 1 corrected on frame 3 (a click and a negative click)
    prompts = {0: [(1, dict(points=[(16, 24)])), (2, dict(box=(30, 10, 60, 40)))],
               2: [(3, dict(mask=mask))],
               3: [(1, dict(points=[(22, 24), (5, 5)], labels=[1, 0]))]}
    out = os.path.join(T, "track_cli")
    args = ["track", "-m", VIDEO, "-i", os.path.join(d, "png"), "-o", out, "--point", "0:1:16,24", "--box", "0:2:30,10,60,40",
            "--mask", "2:3:" + os.path.join(d, "mask.png"), "--point", "3:1:22,24", "--point", "3:1:5,5,neg"]
    if not cli(*args):
        return
    lines = track_frames.read_tracks(out)
    with sam3h.Model(VIDEO) as m, sam3h.Context(m, n_threads=THREADS, blas_threads=1) as ctx, sam3h.Tracker(ctx) as tr:
        same = visible = 0
        for k, rgb in enumerate(frames):
            check(tr.next_frame == k, "next_frame %d, expected %d" % (tr.next_frame, k))
            for oid, p in prompts.get(k, []):
                tr.add_prompt(k, oid, **p)
            objs = tr.push_frame(rgb)
            js = lines[k]["objects"]
            if not check([o["id"] for o in objs] == [o["id"] for o in js], "frame %d: ids %s, CLI %s" % (k, [o["id"] for o in objs], js)):
                continue
            for o, j in zip(objs, js):
                png = mask_png(out, j["mask"])
                ok = g6(o["object_score"]) == g6(j["object_score_logit"])
                ok &= [int(v) for v in o["box"]] == j["box"] and o["area"] == j["area"] == int(o["mask"].sum())
                ok &= o["mask"].dtype == bool and bool(np.array_equal(o["mask"], png))
                ok &= o["prompted"] == any(oid == o["id"] for oid, _ in prompts.get(k, []))
                ok &= o["low_res_logits"].dtype == np.float32 and o["low_res_logits"].ndim == 2
                same += bool(ok)
                visible += o["area"] > 0
                check(ok, "frame %d object %d: score %s box %s area %d vs CLI %s" % (k, o["id"], g6(o["object_score"]), o["box"],
                                                                                    o["area"], j))
        n = sum(len(line["objects"]) for line in lines)
        check(same == n == 13 and visible >= 3, "tracker: %d of %d objects equal to sam3 track's (%d visible)" % (same, n, visible))
        check(tr.memory_used > 0, "memory_used %d" % tr.memory_used)
        for what, call, word in (("a prompt for frame 9", lambda: tr.add_prompt(9, 1, points=[(5, 5)]), "frame"),
                                 ("removing an unknown object", lambda: tr.remove_object(77), "77"),
                                 ("a mask with points", lambda: tr.add_prompt(5, 4, points=[(5, 5)], mask=mask), "mask")):
            try:
                call()
                check(False, "tracker: %s raises" % what)
            except sam3h.Error as e:
                check(e.code == sam3h.ERR_INVALID_ARG and word in str(e), "tracker: %s: ERR_INVALID_ARG with the library's detail: %s" % (what, e))
        try:  # the binding's own check, before C (issue 36)
            tr.add_prompt(5, 4, points=[(float("nan"), 5)])
            check(False, "tracker: a NaN click raises")
        except ValueError as e:
            check("NaN" in str(e), "tracker: a NaN click: ValueError naming NaN: %s" % e)
        tr.remove_object(2)
        check([o["id"] for o in tr.push_frame(frames[0])] == [1, 3], "remove_object(2): objects 1 and 3 left")
        tr.reset()
        check(tr.next_frame == 0, "reset: next_frame 0")
        tr.add_prompt(0, 1, points=[(16, 24)])
        tr.add_prompt(0, 2, box=(30, 10, 60, 40))
        again = tr.push_frame(frames[0])
        check([g6(o["object_score"]) for o in again] == [g6(o["object_score_logit"]) for o in lines[0]["objects"]],
              "reset: frame 0 again gives the first run's scores")
        with sam3h.Tracker(ctx, masks=False) as t2:
            t2.add_prompt(0, 5, points=[(16, 24)])
            o = t2.push_frame(frames[0])[0]
            check(o["mask"] is None and o["area"] == 0 and g6(o["object_score"]) == g6(lines[0]["objects"][0]["object_score_logit"]),
                  "Tracker(masks=False): no mask, the same score: %s" % o)
        t3 = sam3h.Tracker(ctx)
    try:
        t3.push_frame(frames[0])
        check(False, "a tracker whose context is closed raises")
    except sam3h.Error as e:
        check(e.code == sam3h.ERR_INVALID_ARG and "closed" in str(e), "a tracker whose context is closed: %s" % e)
    with sam3h.Model(MODEL) as m, sam3h.Context(m, n_threads=1) as c:
        try:
            sam3h.Tracker(c)
            check(False, "Tracker on a model without memory modules raises")
        except sam3h.Error as e:
            check(e.code == sam3h.ERR_UNSUPPORTED and "memory modules" in str(e), "Tracker without memory modules: ERR_UNSUPPORTED: %s" % e)


def _has_key(m, key):
    try:
        m.config_int(key)
        return True
    except KeyError:
        return False


def test_concepts(img):
    """Concept: made on the image, the same results as its prompt, through to_bytes / from_bytes;
    another model's refused; a damaged one an Error naming the damage."""
    boxes, labels = [(15, 20, 82.5, 70), (90, 5, 142.5, 40)], [1, 0]
    with sam3h.Model(MODEL) as m, sam3h.Context(m, n_threads=THREADS, blas_threads=1) as ctx:
        ctx.set_image(img)
        direct = ctx.segment("a cat", boxes, labels, score_threshold=0)
        with ctx.concept("a cat", boxes, labels) as k:
            data = k.to_bytes()
            check(k.n_tokens == (7, 4), "Concept.n_tokens: %s" % (k.n_tokens,))
        with sam3h.Concept.from_bytes(m, data) as k2:
            via = ctx.segment(concepts=[k2], score_threshold=0)
            check(len(via) == len(direct) > 0 and np.array_equal(via.scores, direct.scores) and np.array_equal(via.masks, direct.masks)
                  and np.array_equal(via.boxes, direct.boxes), "segment(concepts=[loaded]) = segment(text, boxes): %d / %d" % (len(via), len(direct)))
            with sam3h.Model(os.path.join(B, "tiny_b.sam3")) as mb, sam3h.Context(mb) as cb:
                cb.set_image(img)
                try:
                    cb.segment(concepts=[k2])
                    check(False, "a concept of another model is refused by segment")
                except sam3h.Error as e:
                    check(e.code == sam3h.ERR_INVALID_ARG and "another model" in str(e), "segment with another model's concept: %s" % e)
                try:
                    sam3h.Concept.from_bytes(mb, data)
                    check(False, "a concept of another model is refused by from_bytes")
                except sam3h.Error as e:
                    check(e.code == sam3h.ERR_INVALID_ARG and "another model" in str(e), "from_bytes with another model: %s" % e)
        try:
            sam3h.Concept.from_bytes(m, data[:-3])
            check(False, "a truncated concept is refused")
        except sam3h.Error as e:
            check(e.code == sam3h.ERR_CORRUPT_FILE and "truncated" in str(e), "truncated concept: %s" % e)
        try:
            ctx.segment(concepts=["a cat"])
            check(False, "concepts=[str] is refused")
        except TypeError:
            check(True, "")



def test_everything_many(ctx, img):
    """Context.everything against sam3 everything's files; segment_many against segment one prompt
    at a time (texts, a Concept, a dict with boxes), equal arrays; the arguments' errors."""
    d = os.path.join(T, "everything")
    if cli("everything", "-m", MODEL, "-i", IMAGE, "-o", d, "--points-per-side", "6", "--pred-iou-thresh", "0",
           "--stability-thresh", "0", "--nms-thresh", "1"):
        js = json.load(open(os.path.join(d, "results.json")))["instances"]
        e = ctx.everything(points_per_side=6, pred_iou_thresh=0, stability_score_thresh=0, box_nms_thresh=1)
        check(len(e) == len(js) > 1 and e.n_points == 36 and e.masks.shape == (len(e),) + img.shape[:2],
              "everything: %d masks of %d clicks, CLI %d" % (len(e), e.n_points, len(js)))
        for i, m in enumerate(js[:len(e)]):
            ok = g6(e.iou[i]) == g6(m["score"]) and g6(e.stability[i]) == g6(m["stability"]) and int(e.areas[i]) == m["area"]
            ok &= int(e.clicks[i]) == m["query"] and [float(v) for v in e.boxes[i]] == m["detector_box"]
            ok &= bool(np.array_equal(e.masks[i], mask_png(d, m["mask"])))
            check(ok, "everything: mask %d: iou %s stability %s area %d click %d vs CLI %s" % (i, g6(e.iou[i]), g6(e.stability[i]),
                                                                                          e.areas[i], e.clicks[i], m))
        nms = ctx.everything(points_per_side=6, pred_iou_thresh=0, stability_score_thresh=0)
        check(0 < len(nms) <= len(e) and nms.n_candidates == e.n_candidates, "everything with NMS 0.7: %d of %d" % (len(nms), len(e)))
    d = os.path.join(T, "everything_crops")
    if cli("everything", "-m", MODEL, "-i", IMAGE, "-o", d, "--points-per-side", "4", "--pred-iou-thresh", "0",
           "--stability-thresh", "0", "--nms-thresh", "1", "--crop-layers", "1", "--crop-nms-thresh", "1", "--min-region-area", "6"):
        js = json.load(open(os.path.join(d, "results.json")))["instances"]
        e = ctx.everything(points_per_side=4, pred_iou_thresh=0, stability_score_thresh=0, box_nms_thresh=1, crop_layers=1,
                           crop_nms_thresh=1, min_region_area=6)
        check(len(e) == len(js) > 1 and e.n_crops == 5 and e.n_points == 80 and set(e.crops.tolist()) <= set(range(5)),
              "everything with crops: %d masks of %d crops, CLI %d" % (len(e), e.n_crops, len(js)))
        for i, m in enumerate(js[:len(e)]):
            ok = g6(e.iou[i]) == g6(m["score"]) and int(e.areas[i]) == m["area"] and bool(np.array_equal(e.masks[i], mask_png(d, m["mask"])))
            check(ok, "everything with crops: mask %d vs CLI %s" % (i, m))
    for kw, cls in (({"points_per_side": 0}, ValueError), ({"box_nms_thresh": 0}, ValueError), ({"points_per_side": 2.5}, TypeError),
                    ({"pred_iou_thresh": float("nan")}, ValueError), ({"crop_layers": -1}, ValueError), ({"crop_layers": 99}, ValueError),
                    ({"crop_overlap_ratio": 1.0}, ValueError), ({"min_region_area": -3}, ValueError), ({"crop_nms_thresh": 0}, ValueError)):
        try:
            ctx.everything(**kw)
            check(False, "everything(%s) refused" % kw)
        except cls as ex:
            check(isinstance(ex, sam3h.Error), "everything(%s): %s" % (kw, ex))
    boxes = [(20, 15, 90, 70), (5, 5, 30, 40)]
    with ctx.concept("a cat", boxes, [1, 0]) as k:
        prompts = ["a cat", k, {"boxes": boxes[:1]}, "a dog"]
        many = ctx.segment_many(prompts, score_threshold=0)
        alone = [ctx.segment("a cat", score_threshold=0), ctx.segment(concepts=[k], score_threshold=0),
                 ctx.segment(None, boxes[:1], score_threshold=0), ctx.segment("a dog", score_threshold=0)]
    check(len(many) == 4, "segment_many: 4 results, got %d" % len(many))
    for i, (a, b) in enumerate(zip(many, alone)):
        check(len(a) == len(b) > 0 and np.array_equal(a.scores, b.scores) and np.array_equal(a.boxes, b.boxes)
              and np.array_equal(a.masks, b.masks) and a.presence == b.presence,
              "segment_many: prompt %d as alone: %d / %d instances" % (i, len(a), len(b)))
    for bad, cls in (([], ValueError), ([3], TypeError), ([{"txt": "a cat"}], TypeError)):
        try:
            ctx.segment_many(bad)
            check(False, "segment_many(%r) refused" % (bad,))
        except cls as ex:
            check(isinstance(ex, sam3h.Error), "segment_many(%r): %s" % (bad, ex))


def install():
    """A fresh venv with sam3h installed offline; then this test again in it. Returns the exit code."""
    shutil.rmtree(T, ignore_errors=True)  # the CLI refuses output folders it did not write
    os.makedirs(T, exist_ok=True)
    venv = os.path.join(T, "venv")
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
    py = os.path.join(venv, "bin", "python")
    if r.returncode != 0 or subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        print("skipped: %s cannot make a venv with pip (Debian: apt-get install python3-venv): %s" % (sys.executable, r.stderr.strip()[-300:]))
        return 77
    env = dict(os.environ, SAM3_LIB=LIB, PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", os.path.join(ROOT, "examples", "python")],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print("FAIL pip install ./examples/python: exit %d\n%s%s" % (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
        print("test_python: 0 passed, 1 failed")
        return 1
    print("pip install ./examples/python: %s" % r.stdout.strip().splitlines()[-1])
    env = dict(os.environ, SAM3H_TEST_VENV="1")
    env.pop("SAM3_LIB", None)  # the bundled copy
    return subprocess.run([py, os.path.abspath(__file__), B], env=env).returncode


def test_package():
    """The installed package: where it is, its version and library, a module named sam3 beside it,
    README's Python example."""
    import importlib.metadata
    site = os.path.join(sys.prefix, "lib")
    check(sys.prefix != sys.base_prefix and os.path.abspath(sam3h.__file__).startswith(site + os.sep),
          "sam3h is the venv's installed copy: %s" % sam3h.__file__)
    want = open(os.path.join(ROOT, "sam3.h")).read().split('#define SAM3_VERSION_STRING "')[1].split('"')[0]
    check(importlib.metadata.version("sam3h") == want, "the distribution's version %s is sam3.h's %s" % (
        importlib.metadata.version("sam3h"), want))
    bundled = os.path.join(os.path.dirname(sam3h.__file__), "libsam3.so")
    check(os.path.isfile(bundled) and sam3h.load_library()._name == bundled, "the bundled libsam3.so is loaded: %s" % sam3h.load_library()._name)
    with open(bundled, "rb") as f1, open(LIB, "rb") as f2:
        check(f1.read() == f2.read(), "the bundled libsam3.so is the build's")
    fake = os.path.join(T, "fake_meta")  # a stand-in for Meta's own `sam3` package
    os.makedirs(os.path.join(fake, "sam3"), exist_ok=True)
    with open(os.path.join(fake, "sam3", "__init__.py"), "w") as f:
        f.write('WHO = "meta"\n')
    sys.path.insert(0, fake)
    import sam3  # noqa: F401  (the stand-in)
    sys.path.remove(fake)
    check(sam3.WHO == "meta" and sam3 is not sam3h and not hasattr(sam3, "Model") and sam3h.Model,
          "a module named sam3 and sam3h import side by side")
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    check(len(blocks) == 1 and re.search(r"^import .*\bsam3h\b", blocks[0], re.M) and "sys.path" not in readme and
          "pip install ./examples/python" in readme, "README: pip install ./examples/python, one Python example importing sam3h")
    if blocks:
        code = blocks[0].replace('"weights/sam3.sam3"', repr(MODEL))
        scope = {}
        try:
            exec(compile(code, "README.md", "exec"), scope)
            ok = isinstance(scope.get("seg"), sam3h.Segmentation) and isinstance(scope.get("annotations"), list)
            check(ok and len(scope["annotations"]) == len(scope["seg"]), "README's Python example runs: %d instances" % len(scope["seg"]))
        except Exception as e:  # noqa: BLE001
            check(False, "README's Python example: %s: %s" % (type(e).__name__, e))


def main():
    if not IN_VENV:
        return install()
    test_package()
    check(sam3h.version() == open(os.path.join(ROOT, "sam3.h")).read().split('#define SAM3_VERSION_STRING "')[1].split('"')[0],
          "sam3h.version() = SAM3_VERSION_STRING: %s" % sam3h.version())
    check(sam3h.version().split(".")[0] == str(sam3h.API_MAJOR), "the binding's API_MAJOR %d is the library's major" % sam3h.API_MAJOR)
    test_layout()
    img = cli_images.read_png(IMAGE)
    with sam3h.Model(MODEL) as m, sam3h.Context(m, n_threads=THREADS, blas_threads=1) as ctx:
        check(m.arch == "sam3" and m.has_text and m.has_points and m.image_size > 0, "model properties: %s" % m.arch)
        ctx.set_image(img)
        compare_segment(ctx, img, "seg_text_boxes", "a cat", [(20, 15, 90, 70), (5, 5, 30, 40)], [1, 0])
        compare_segment(ctx, img, "seg_text", "a cat", [], [])
        compare_segment(ctx, img, "seg_boxes", None, [(20, 15, 90, 70)], [1])
        r = compare_points(ctx, "pts_clicks_box", MODEL, [(40, 30), (90, 60)], [1, 0], box=(20, 15, 90, 70))
        compare_points(ctx, "pts_single", MODEL, [(40, 30)], [1], single=True)
        if r is not None:  # the mask prompt round trip: a previous result's logits refine the next click
            r2 = ctx.segment_points(points=[(40, 30), (60, 50)], point_labels=[1, 1], mask_logits=r.low_res_logits[r.best])
            check(len(r2) == 3 and r2.masks.shape[1:] == img.shape[:2], "segment_points with mask_logits")
        test_rle(ctx, img)
        test_everything_many(ctx, img)
        t = ctx.timings()
        check(t["vision_trunk"] > 0 and t["points"] > 0 and t["everything"] > 0, "timings: %s" % t)
    with sam3h.Model(SAM1) as m1, sam3h.Context(m1, n_threads=THREADS, blas_threads=1) as ctx:
        check(m1.arch == "sam1" and not m1.has_text and m1.has_points, "SAM 1 model properties")
        ctx.set_image(img)
        compare_points(ctx, "pts_sam1", SAM1, [(40, 30)], [1])
    test_errors(img)
    test_arguments(img)
    test_tracker()
    test_concepts(img)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "segment.py"), MODEL, IMAGE, "a cat",
                        "--threshold", "0", "--threads", "1", "--save", os.path.join(T, "ex.npz")], capture_output=True, text=True,
                       env=dict(os.environ, SAM3_LIB=LIB))
    check(r.returncode == 0 and "instances" in r.stdout and "click at" in r.stdout,
          "examples/python/segment.py runs: %d %s %s" % (r.returncode, r.stdout[-300:], r.stderr[-300:]))
    if r.returncode == 0:
        z = np.load(os.path.join(T, "ex.npz"))
        check(z["masks"].shape[0] == z["scores"].shape[0] > 0 and z["click_masks"].shape[0] == 3, "segment.py --save")
    print("test_python: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
