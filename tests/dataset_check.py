"""Helpers of tests/test_dataset.sh (`sam3 segment` on many images). numpy + stdlib only.

    dataset_check.py make DIR          writes small synthetic images into DIR (PNG, noise, several
                                       sizes) and the non-image files a dataset folder may hold
    dataset_check.py rle PNGDIR COCODIR STEM... [--prompts N]
                                       decodes every COCO RLE string that the --format coco run wrote
                                       (COCODIR/STEM/[NN_*/]results.json and COCODIR/STEM/coco.json)
                                       and checks it equals, pixel for pixel, the mask PNG that the
                                       --format png run with the same settings wrote (PNGDIR/...);
                                       checks the COCO structure; prints counts
    dataset_check.py coco FILE N_IMAGES N_CATS [--names NAME,...] [--date YYYY-MM-DD]
                                       checks one merged COCO file: ids, references, RLE sizes,
                                       bbox = the RLE mask's bounds, info and licenses as the COCO
                                       format has them (pycocotools' COCO.info() prints info's
                                       items; licenses a list), the images' file_names (--names,
                                       in id order) and info's date_created (--date)

The RLE decoder below restates the COCO compressed RLE string ("counts" of pycocotools'
mask.encode) from its definition, as read in cocodataset/cocoapi common/maskApi.c (rleFrString,
rleDecode) and PythonAPI/pycocotools/mask.py (masks are Fortran-order, i.e. column-major):
each count is stored in 5-bit groups, least significant first, as chr(48 + group), bit 0x20 of a
character saying that another group follows and bit 0x10 of the last group being the sign; from
the fourth count on, the count two before is added; runs alternate 0, 1, 0, ... starting with 0.
pycocotools itself is not installable here (no PyPI access, no Debian package).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_images  # noqa: E402  (png_bytes, read_png, bounds)

STATS = {"counts": 0, "negative_deltas": 0, "multi_char": 0, "first_set": 0}


def rle_counts(s):
    cnts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        start = p
        while more:
            c = ord(s[p]) - 48
            if not 0 <= c < 64:
                raise ValueError("character %r outside the RLE alphabet" % s[p])
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if x < 0:
            STATS["negative_deltas"] += 1
        if p - start > 1:
            STATS["multi_char"] += 1
        if len(cnts) > 2:
            x += cnts[-2]
        if x < 0:
            raise ValueError("negative run length")
        cnts.append(x)
    STATS["counts"] += len(cnts)
    return cnts


def rle_decode(rle):
    h, w = rle["size"]
    cnts = rle_counts(rle["counts"])
    if sum(cnts) != h * w:
        raise ValueError("runs cover %d pixels, not %d x %d" % (sum(cnts), h, w))
    if cnts and cnts[0] == 0:
        STATS["first_set"] += 1
    flat = np.repeat(np.arange(len(cnts)) % 2, cnts).astype(np.uint8)
    return flat.reshape(w, h).T  # column-major


def make(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(21)
    sizes = {"b_street": (64, 48), "a_dog": (40, 56), "c_cat": (72, 40), "e_grey": (33, 47), "d_field": (48, 48)}
    for name, (w, h) in sizes.items():
        if name == "e_grey":
            px = rng.integers(0, 256, (h, w), dtype=np.uint8)
        else:  # smooth blobs plus noise: masks with long runs and short ones
            yy, xx = np.mgrid[0:h, 0:w]
            base = (np.sin(xx / 5.0 + rng.random() * 6) * np.cos(yy / 7.0) * 100 + 128)[:, :, None]
            px = np.clip(base + rng.integers(-40, 40, (h, w, 3)), 0, 255).astype(np.uint8)
        ext = ".PNG" if name == "d_field" else ".png"
        with open(os.path.join(d, name + ext), "wb") as f:
            f.write(cli_images.png_bytes(px))
    with open(os.path.join(d, "README.txt"), "w") as f:  # not an image name: ignored
        f.write("not an image\n")
    with open(os.path.join(d, ".hidden.png"), "wb") as f:  # hidden: ignored
        f.write(b"junk")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)  # subfolders: ignored
    with open(os.path.join(d, "sub", "inner.png"), "wb") as f:
        f.write(cli_images.png_bytes(np.zeros((8, 8, 3), np.uint8)))


def prompt_dirs(root, stem, n_prompts):
    d = os.path.join(root, stem)
    if n_prompts == 1:
        return [d]
    subs = sorted(x for x in os.listdir(d) if os.path.isdir(os.path.join(d, x)))
    if len(subs) != n_prompts:
        raise ValueError("%s: %d prompt folders, want %d" % (d, len(subs), n_prompts))
    return [os.path.join(d, x) for x in subs]


def rle(png_root, coco_root, stems, n_prompts):
    n_inst = 0
    for stem in stems:
        cj = json.load(open(os.path.join(coco_root, stem, "coco.json")))
        if len(cj["images"]) != 1 or len(cj["categories"]) != n_prompts:
            raise ValueError("%s/coco.json: images/categories" % stem)
        img = cj["images"][0]
        anns = cj["annotations"]
        if [a["id"] for a in anns] != list(range(1, len(anns) + 1)):
            raise ValueError("%s/coco.json: annotation ids" % stem)
        k_ann = 0
        for p, (pd, cd) in enumerate(zip(prompt_dirs(png_root, stem, n_prompts), prompt_dirs(coco_root, stem, n_prompts))):
            rp = json.load(open(os.path.join(pd, "results.json")))
            rc = json.load(open(os.path.join(cd, "results.json")))
            if rp["settings"] == rc["settings"]:
                raise ValueError("png and coco runs share a settings key")
            if len(rp["instances"]) != len(rc["instances"]):
                raise ValueError("%s: %d instances in png, %d in coco" % (cd, len(rp["instances"]), len(rc["instances"])))
            if os.path.exists(os.path.join(cd, "mask_000.png")):
                raise ValueError("%s: mask PNGs written with --format coco" % cd)
            for ip, ic in zip(rp["instances"], rc["instances"]):
                want = cli_images.read_png(os.path.join(pd, ip["mask"]))
                want = (np.asarray(want).reshape(img["height"], img["width"], -1)[:, :, 0] > 127).astype(np.uint8)
                got = rle_decode(ic["segmentation"])
                if ic["segmentation"]["size"] != [img["height"], img["width"]] or got.shape != want.shape:
                    raise ValueError("%s: RLE size" % cd)
                if not np.array_equal(got, want):
                    raise ValueError("%s: RLE mask differs from %s in %d pixels" % (cd, ip["mask"], int((got != want).sum())))
                if int(got.sum()) != ic["area"] or ic["score"] != ip["score"] or ic["box"] != ip["box"] or ic["box"] != cli_images.bounds(got):
                    raise ValueError("%s: area/score/box" % cd)
                if ic["detector_box"] != ip["detector_box"]:
                    raise ValueError("%s: detector_box" % cd)
                a = anns[k_ann]
                k_ann += 1
                if a["segmentation"] != ic["segmentation"] or a["category_id"] != p + 1 or a["image_id"] != img["id"]:
                    raise ValueError("%s/coco.json: annotation %d differs from results.json" % (stem, a["id"]))
                x0, y0, x1, y1 = ic["box"]
                if a["area"] != ic["area"] or a["iscrowd"] != 0 or a["bbox"] != [x0, y0, x1 - x0, y1 - y0]:
                    raise ValueError("%s/coco.json: annotation %d fields" % (stem, a["id"]))
                if a["score"] != ic["score"] or a["detector_box"] != ic["detector_box"]:
                    raise ValueError("%s/coco.json: annotation %d score/detector_box" % (stem, a["id"]))
                n_inst += 1
        if k_ann != len(anns):
            raise ValueError("%s/coco.json: %d annotations, results.json files have %d" % (stem, len(anns), k_ann))
    if not STATS["negative_deltas"] or not STATS["multi_char"]:
        raise ValueError("the masks did not exercise negative deltas and multi-character counts: %r" % STATS)
    print("%d masks equal, %d runs (%d negative deltas, %d multi-character counts, %d masks starting with a set pixel)"
          % (n_inst, STATS["counts"], STATS["negative_deltas"], STATS["multi_char"], STATS["first_set"]))


def coco(path, n_images, n_cats, names=None, date=None):
    cj = json.load(open(path))
    info = cj["info"]
    if not isinstance(info, dict) or info.get("description") != "sam3.h" or not isinstance(info.get("year"), int):
        raise ValueError("info: %r" % info)
    if not isinstance(info.get("version"), str) or not info.get("model", "").endswith(".sam3") or "/" in info["model"]:
        raise ValueError("info: version or model file name: %r" % info)
    if date is not None and info.get("date_created") != date:
        raise ValueError("info: date_created %r, expected %r" % (info.get("date_created"), date))
    if cj["licenses"] != []:
        raise ValueError("licenses: %r" % cj["licenses"])
    if names is not None and [im["file_name"] for im in cj["images"]] != names:
        raise ValueError("file_names %r, expected %r" % ([im["file_name"] for im in cj["images"]], names))
    ids = [im["id"] for im in cj["images"]]
    if len(ids) != n_images or ids != sorted(set(ids)):
        raise ValueError("images: %r" % ids)
    if [c["id"] for c in cj["categories"]] != list(range(1, n_cats + 1)):
        raise ValueError("categories")
    anns = cj["annotations"]
    if [a["id"] for a in anns] != list(range(1, len(anns) + 1)):
        raise ValueError("annotation ids")
    sizes = {im["id"]: [im["height"], im["width"]] for im in cj["images"]}
    for a in anns:
        if a["image_id"] not in sizes or a["segmentation"]["size"] != sizes[a["image_id"]] or not 1 <= a["category_id"] <= n_cats:
            raise ValueError("annotation %d refers to nothing" % a["id"])
        m = rle_decode(a["segmentation"])
        if int(m.sum()) != a["area"]:
            raise ValueError("annotation %d: area" % a["id"])
        x0, y0, x1, y1 = cli_images.bounds(m)
        if a["bbox"] != [x0, y0, x1 - x0, y1 - y0] or len(a["detector_box"]) != 4:
            raise ValueError("annotation %d: bbox %r, mask bounds %r" % (a["id"], a["bbox"], [x0, y0, x1, y1]))
    print(len(anns))


if __name__ == "__main__":
    try:
        if sys.argv[1] == "make":
            make(sys.argv[2])
        elif sys.argv[1] == "rle":
            args = sys.argv[2:]
            n = 1
            if "--prompts" in args:
                i = args.index("--prompts")
                n = int(args[i + 1])
                del args[i : i + 2]
            rle(args[0], args[1], args[2:], n)
        elif sys.argv[1] == "coco":
            args = sys.argv[5:]
            opt = {args[i][2:]: args[i + 1] for i in range(0, len(args), 2)}
            coco(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                 opt["names"].split(",") if "names" in opt else None, opt.get("date"))
        else:
            raise SystemExit(__doc__)
    except (ValueError, KeyError, OSError, IndexError) as e:
        print("dataset_check: %s" % e)
        sys.exit(1)
