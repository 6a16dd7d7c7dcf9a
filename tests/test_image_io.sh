#!/bin/sh
# The CLI's image reader (examples/image_io.c) against known-good decodes: JPEGs made by cjpeg in
# every layout it writes (4:2:0, 4:2:2, 4:4:0, 4:4:4, grey, RGB, progressive, arithmetic, restart
# markers, optimised tables, odd sizes) decode byte for byte as djpeg decodes them (the same
# libjpeg-turbo with the same settings: ISLOW IDCT, fancy upsampling, the settings Pillow uses);
# PNGs in every colour type, depth and interlacing decode to the pixels they were made from; and
# the hostile files and fuzz seeds (tests/make_test_images.py) replay through the fuzz target.
#   tests/test_image_io.sh [BUILD_DIR]   (needs BUILD_DIR/fuzz_image_replay; cjpeg, djpeg)
# Prints "test_image_io: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
R=$B/fuzz_image_replay
T=$B/test_image_io
rm -rf "$T" && mkdir -p "$T" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# noisy pictures (the IDCT and upsampling differ most on texture) of odd and even sizes
"$PY" - "$T" <<'PYEOF' || exit 1
import sys
sys.path.insert(0, "tests")
import numpy as np
from cli_images import png_bytes, ppm_bytes
d = sys.argv[1]
rng = np.random.default_rng(19)
for name, (h, w) in {"a": (61, 97), "b": (64, 48), "c": (1, 1), "d": (3, 700)}.items():
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x * 5 + y * 3) % 256], axis=2)
    rgb = np.clip(rgb + rng.integers(-60, 60, rgb.shape), 0, 255).astype(np.uint8)
    open(f"{d}/{name}.ppm", "wb").write(ppm_bytes(rgb))
    grey = rgb[:, :, 1]
    open(f"{d}/{name}.pgm", "wb").write(b"P5\n%d %d\n255\n" % (w, h) + grey.tobytes())
    # PNG forms and the pixels each must decode to
    forms = {
        "rgb8": (png_bytes(rgb), rgb),
        "rgba8": (png_bytes(np.concatenate([rgb, grey[:, :, None]], axis=2)), rgb),
        "rgb16": (png_bytes(rgb.astype(np.uint16) * 256 + 255, depth=16), rgb),
        "rgba16_interlaced": (png_bytes(np.concatenate([rgb, grey[:, :, None]], axis=2).astype(np.uint16) * 256 + 7, depth=16, interlace=True), rgb),
        "grey8_interlaced": (png_bytes(grey, interlace=True), grey),
        "grey_alpha8": (png_bytes(np.stack([grey, 255 - grey], axis=2)), grey),
        "grey16": (png_bytes(grey.astype(np.uint16) * 256 + 128, depth=16), grey),
        "grey1": (png_bytes(grey >> 7, depth=1), (grey >> 7) * 255),
        "grey4_interlaced": (png_bytes(grey >> 4, depth=4, interlace=True), (grey >> 4) * 17),
    }
    pal = np.array([[0, 0, 0], [255, 0, 0], [0, 255, 0], [10, 20, 30]], np.uint8)
    idx = (grey >> 6).astype(np.uint8)
    forms["palette2"] = (png_bytes(idx, depth=2, palette=pal), pal[idx])
    forms["palette8_interlaced"] = (png_bytes(idx, palette=pal, interlace=True), pal[idx])
    for f, (data, want) in forms.items():
        open(f"{d}/{name}_{f}.png", "wb").write(data)
        hdr = b"P6" if want.ndim == 3 else b"P5"
        open(f"{d}/{name}_{f}.want", "wb").write(hdr + b"\n%d %d\n255\n" % (w, h) + want.astype(np.uint8).tobytes())
PYEOF

for p in a b c d; do
    for o in "" "-sample 2x1" "-sample 1x2" "-sample 1x1" "-progressive" "-arithmetic" "-restart 1" "-optimize -quality 40" \
        "-rgb" "-quality 100 -sample 1x1 -progressive" "-grayscale" "-grayscale -progressive"; do
        in=$T/$p.ppm
        if cjpeg $o "$in" >"$T/x.jpg" 2>"$T/err" && djpeg -pnm "$T/x.jpg" >"$T/djpeg.pnm" 2>>"$T/err"; then
            if "$R" --dump "$T/x.jpg" "$T/ours.pnm" && cmp -s "$T/djpeg.pnm" "$T/ours.pnm"; then ok; else bad "JPEG $p.ppm 'cjpeg $o': differs from djpeg"; fi
        else
            bad "cjpeg/djpeg failed on $p 'cjpeg $o': $(cat "$T/err")"
        fi
    done
    cjpeg -grayscale "$T/$p.pgm" >"$T/x.jpg" && djpeg -pnm "$T/x.jpg" >"$T/djpeg.pnm" && "$R" --dump "$T/x.jpg" "$T/ours.pnm" &&
        cmp -s "$T/djpeg.pnm" "$T/ours.pnm" && ok || bad "JPEG from $p.pgm differs from djpeg"
    for f in "$T/$p"_*.png; do
        "$R" --dump "$f" "$T/ours.pnm" && cmp -s "${f%.png}.want" "$T/ours.pnm" && ok || bad "PNG $f: not the pixels it was made from"
    done
done
[ "$pass" -ge 96 ] && ok || bad "only $pass checks ran"

# EXIF orientation: a.ppm's JPEG with an APP1 "Exif" segment spliced in after SOI, orientation
# 1-8 in little- and big-endian TIFF, must decode (turned upright, --dump-oriented) to djpeg's
# pixels of the plain file transformed as Pillow's exif_transpose does; hostile EXIF blocks (IFD
# past the block, a huge entry count, the tag with another type or value, a truncated entry)
# decode as the plain file
cjpeg "$T/a.ppm" >"$T/plain.jpg" && djpeg -pnm "$T/plain.jpg" >"$T/plain.pnm" || bad "cjpeg/djpeg on a.ppm"
"$PY" - "$T" <<'PYEOF' || bad "making the EXIF files"
import struct, sys
import numpy as np
d = sys.argv[1]
jpg = open(f"{d}/plain.jpg", "rb").read()
raw = open(f"{d}/plain.pnm", "rb").read()
w, h = 97, 61
px = np.frombuffer(raw[len(raw) - w * h * 3:], np.uint8).reshape(h, w, 3)
def app1(tiff):
    body = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body
def tiff(order, entries, ifd=8, count=None):
    e = order.encode()
    f = "<" if order == "II" else ">"
    out = e + struct.pack(f + "HI", 42, ifd) + struct.pack(f + "H", len(entries) if count is None else count)
    for tag, typ, cnt, val in entries:
        out += struct.pack(f + "HHI", tag, typ, cnt) + struct.pack(f + "H", val) + b"\0\0"
    return out + struct.pack(f + "I", 0)
# Pillow's exif_transpose: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE,
# 6 ROTATE_270, 7 TRANSVERSE, 8 ROTATE_90 (PIL's rotations are anticlockwise)
ops = {1: lambda a: a, 2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
       5: lambda a: a.transpose(1, 0, 2), 6: lambda a: np.rot90(a, -1), 7: lambda a: np.rot90(a, 2).transpose(1, 0, 2),
       8: lambda a: np.rot90(a, 1)}
for o in range(1, 9):
    for order in ("II", "MM"):
        t = tiff(order, [(0x010F, 2, 4, 0), (0x0112, 3, 1, o)])
        open(f"{d}/exif_{o}_{order}.jpg", "wb").write(jpg[:2] + app1(t) + jpg[2:])
    want = np.ascontiguousarray(ops[o](px))
    open(f"{d}/exif_{o}.want", "wb").write(b"P6\n%d %d\n255\n" % (want.shape[1], want.shape[0]) + want.tobytes())
hostile = {
    "ifd_past": tiff("II", [(0x0112, 3, 1, 6)], ifd=100000),
    "huge_count": tiff("II", [(0x010F, 2, 4, 0)], count=65535),
    "wrong_type": tiff("MM", [(0x0112, 4, 1, 6)]),
    "bad_value": tiff("II", [(0x0112, 3, 1, 9)]),
    "truncated_entry": tiff("II", [(0x0112, 3, 1, 6)])[:16],
    "not_tiff": b"XX\0*\0\0\0\x08",
}
for name, t in hostile.items():
    open(f"{d}/exif_hostile_{name}.jpg", "wb").write(jpg[:2] + app1(t) + jpg[2:])
PYEOF
for o in 1 2 3 4 5 6 7 8; do
    for order in II MM; do
        "$R" --dump-oriented "$T/exif_${o}_$order.jpg" "$T/ours.pnm" && cmp -s "$T/exif_$o.want" "$T/ours.pnm" && ok ||
            bad "EXIF orientation $o ($order): not the plain file's pixels turned as Pillow turns them"
    done
    "$R" --dump "$T/exif_${o}_II.jpg" "$T/ours.pnm" && cmp -s "$T/plain.pnm" "$T/ours.pnm" && ok ||
        bad "EXIF orientation $o: --dump (no orientation applied) is not the stored pixels"
done
for f in "$T"/exif_hostile_*.jpg; do
    "$R" --dump-oriented "$f" "$T/ours.pnm" && cmp -s "$T/plain.pnm" "$T/ours.pnm" && ok || bad "$(basename "$f"): not decoded as the plain file"
done

# the hostile files and the fuzz seeds: each decodes or fails with a reason, no crash, no leak
"$PY" tests/make_test_images.py seeds "$T/seeds" || exit 1
"$R" "$T/seeds" >"$T/replay" 2>&1 && ok || bad "fuzz_image_replay: $(tail -5 "$T/replay")"

echo "test_image_io: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
