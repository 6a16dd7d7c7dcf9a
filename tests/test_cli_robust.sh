#!/bin/sh
# Hostile image files and odd prompts through the command-line tool (tests/test_cli.sh covers the
# ordinary failures: missing, truncated and non-image files): empty files, corrupt PNG data,
# headers claiming huge or zero sizes, sizes past SAM3_MAX_IMAGE_DIM, 1x1 / 1x5000 / 5000x1
# images, and absurd boxes and clicks; the hostile files of issue 19 (tests/make_test_images.py:
# formats stb_image used to crash or hang on, hostile JPEG and PNG), as images and as --mask; the
# pixel budget (--max-pixels); output folders with planted links, a user's own files, foreign
# folders (--force) and failed reruns. Each run must exit 0 with consistent output files, or 1
# (2 for a bad command line) with one line on stderr naming the problem; never crash.
#   tests/test_cli_robust.sh [BUILD_DIR]    (needs BUILD_DIR/sam3 and BUILD_DIR/tiny_a.sam3)
# Prints "test_cli_robust: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
SAM3=$B/sam3
MODEL=$B/tiny_a.sam3
T=$B/test_cli_robust
rm -rf "$T" && mkdir -p "$T/in" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

"$PY" - "$T/in" <<'EOF' || exit 1
import os, struct, sys, zlib
sys.path.insert(0, "tests")
import numpy as np
from cli_images import png_bytes

d = sys.argv[1]

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

def png_header_only(w, h, idat=b""):
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))

def grad(h, w):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x % 256, y % 256, (x * 7 + y) % 256], axis=2).astype(np.uint8)

good = png_bytes(grad(40, 50))
corrupt = bytearray(good)
for i in range(60, len(corrupt) - 20, 7):  # inside the zlib stream
    corrupt[i] ^= 0x5A
files = {
    "empty.png": b"",
    "one_byte.png": b"\x89",
    "magic_only.png": b"\x89PNG\r\n\x1a\n",
    "corrupt_idat.png": bytes(corrupt),
    "huge_header.png": png_header_only(70000, 70000, zlib.compress(b"\0" * 100)),
    "zero_width.png": png_header_only(0, 10, zlib.compress(b"\0" * 10)),
    "wide_20000.png": png_bytes(grad(1, 20000)),
    "tall_20000.png": png_bytes(grad(20000, 1)),
    "px_1x1.png": png_bytes(grad(1, 1)),
    "strip_1x5000.png": png_bytes(grad(5000, 1)),
    "strip_5000x1.png": png_bytes(grad(1, 5000)),
    "pnm_huge.ppm": b"P6\n100000 100000\n255\n" + b"\0" * 30,
    "bmp_lie.bmp": b"BM" + struct.pack("<IHHI", 70, 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, 2000000000, 2000000000, 1, 24, 0, 0, 0, 0, 0, 0) + b"\0" * 16,
}
for name, data in files.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
EOF

# case WANT NAME ARGS...: exit status WANT (0 or 1); on 1, exactly one line on stderr, from sam3
case_() {
    want=$1
    name=$2
    shift 2
    "$SAM3" "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        bad "$name: exit $got, expected $want; stderr: $(head -c 300 "$T/err")"
    elif [ "$want" -eq 1 ] && { [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q '^sam3' "$T/err"; }; then
        bad "$name: wanted one 'sam3 ...' line on stderr, got: $(cat "$T/err")"
    else
        ok
    fi
}
SEG="segment -m $MODEL -q"
for f in empty.png one_byte.png magic_only.png corrupt_idat.png huge_header.png zero_width.png pnm_huge.ppm bmp_lie.bmp; do
    case_ 1 "image $f" $SEG -i "$T/in/$f" -t cat -o "$T/o_$f"
done
case_ 1 "image wider than SAM3_MAX_IMAGE_DIM" $SEG -i "$T/in/wide_20000.png" -t cat -o "$T/o_wide"
grep -q "16384" "$T/err" && ok || bad "wide image: the message does not name the limit: $(cat "$T/err")"
case_ 1 "image taller than SAM3_MAX_IMAGE_DIM" $SEG -i "$T/in/tall_20000.png" -t cat -o "$T/o_tall"
for s in "px_1x1 1 1" "strip_1x5000 1 5000" "strip_5000x1 5000 1"; do
    set -- $s
    case_ 0 "image $1" $SEG -i "$T/in/$1.png" -t cat --box 0,0,$2,$3 --threshold 0 -o "$T/o_$1"
    if n=$("$PY" tests/cli_images.py check "$T/o_$1" "$2" "$3" 2>&1); then ok; else bad "image $1: $n"; fi
    case_ 0 "points on $1" points -m "$MODEL" -q -i "$T/in/$1.png" -p 0,0 -o "$T/p_$1"
done
IMG=$T/in/px_1x1.png
case_ 0 "boxes far outside, huge" $SEG -i "$T/in/strip_5000x1.png" -t cat --box -100,-100,-50,-50 \
    --box 1e29,1e29,1e30,1e30 --box -1e30,-1e30,1e30,1e30,neg -o "$T/o_boxes"
case_ 2 "a zero-area box (the CLI wants x0 < x1, y0 < y1)" $SEG -i "$IMG" -t cat --box 10,0,10,0 -o "$T/o_zero"
case_ 2 "a NaN box" $SEG -i "$IMG" -t cat --box nan,0,1,1 -o "$T/o_nan"
case_ 2 "an inf box" $SEG -i "$IMG" -t cat --box 0,0,inf,1 -o "$T/o_inf"
case_ 0 "clicks far outside" points -m "$MODEL" -q -i "$IMG" -p -1e30,1e30 -p 5,5,neg -o "$T/p_far"
case_ 0 "invalid UTF-8 text" $SEG -i "$IMG" -t "$(printf 'caf\351 \377\376 \300\257')" -o "$T/o_utf8"
# --- hostile image files (issue 19; tests/make_test_images.py): every one refused with exit 1 and
# one line naming the problem, as the image and as a --mask, and nothing written: not even OUTDIR
"$PY" tests/make_test_images.py hostile "$T/hostile" || exit 1
while IFS="$(printf '\t')" read -r hn hw; do
    case_ 1 "hostile image $hn" $SEG -i "$T/hostile/$hn" -t cat -o "$T/h_$hn"
    grep -q -- "cannot read image.*$hw" "$T/err" && ok || bad "hostile image $hn: the message does not say '$hw': $(cat "$T/err")"
    [ ! -e "$T/h_$hn" ] && ok || bad "hostile image $hn: $T/h_$hn was created"
    case_ 1 "hostile mask $hn" points -m "$MODEL" -q -i "$T/in/px_1x1.png" --mask "$T/hostile/$hn" -o "$T/hm_$hn"
    grep -q -- "cannot read mask.*$hw" "$T/err" && ok || bad "hostile mask $hn: the message does not say '$hw': $(cat "$T/err")"
    [ ! -e "$T/hm_$hn" ] && ok || bad "hostile mask $hn: $T/hm_$hn was created"
done <"$T/hostile/cases.txt"
[ "$(wc -l <"$T/hostile/cases.txt")" -ge 35 ] && ok || bad "make_test_images.py hostile: too few cases"
# cjpeg-made JPEGs cut short, and the pixel budget: refused by default, read with --max-pixels
if command -v cjpeg >/dev/null; then
    "$PY" -c 'import sys; sys.path.insert(0, "tests"); import cli_images as c; open(sys.argv[1], "wb").write(c.ppm_bytes(c.test_rgb()))' "$T/in/rgb.ppm"
    cjpeg "$T/in/rgb.ppm" >"$T/in/rgb.jpg"
    cjpeg -progressive "$T/in/rgb.ppm" >"$T/in/prog.jpg"
    n=$(wc -c <"$T/in/rgb.jpg")
    for cut in 2 100 $((n / 2)) $((n - 2)); do
        head -c "$cut" "$T/in/rgb.jpg" >"$T/in/cut.jpg"
        case_ 1 "JPEG cut to $cut of $n bytes" $SEG -i "$T/in/cut.jpg" -t cat -o "$T/o_cut"
    done
    head -c "$(($(wc -c <"$T/in/prog.jpg") * 2 / 3))" "$T/in/prog.jpg" >"$T/in/cut.jpg"
    case_ 1 "progressive JPEG cut" $SEG -i "$T/in/cut.jpg" -t cat -o "$T/o_cut"
    [ ! -e "$T/o_cut" ] && ok || bad "a cut JPEG left an output folder"
    case_ 1 "97x61 JPEG over --max-pixels 5000" $SEG -i "$T/in/rgb.jpg" -t cat --max-pixels 5000 -o "$T/o_budget"
    grep -q "over the budget of 5000 pixels" "$T/err" && ok || bad "--max-pixels: $(cat "$T/err")"
    case_ 0 "97x61 JPEG within --max-pixels 5917" $SEG -i "$T/in/rgb.jpg" -t cat --max-pixels 5917 -o "$T/o_budget"
else
    bad "cjpeg (libjpeg-turbo-progs) missing"
fi
for v in 0 -5 abc 268435457 1e9; do
    case_ 2 "--max-pixels $v" $SEG -i "$IMG" -t cat --max-pixels "$v" -o "$T/o_mp"
done

# --- output folders: never follow a planted link, never delete what sam3 did not write ---
O=$T/outdir
mkdir -p "$O"
echo "precious" >"$T/target_json" && echo "precious" >"$T/target_overlay" && echo "precious" >"$T/target_mask"
case_ 0 "first run" $SEG -i "$IMG" -t cat --threshold 0 -o "$O/a"
n0=$(ls "$O/a" | grep -c '^mask_')
[ "$n0" -ge 3 ] && ok || bad "first run: $n0 masks, expected at least 3"
# links planted over our files in an earlier output: replaced as links, their targets untouched
ln -sf "$T/target_json" "$O/a/results.json"
ln -sf "$T/target_overlay" "$O/a/overlay.png"
ln -sf "$T/target_mask" "$O/a/mask_000.png"
case_ 1 "links planted: refused without --force (results.json is a link)" $SEG -i "$IMG" -t cat -o "$O/a"
grep -q "force" "$T/err" && ok || bad "planted links: the message does not mention --force: $(cat "$T/err")"
case_ 0 "links planted, --force" $SEG -i "$IMG" -t cat --threshold 0 --force -o "$O/a"
for t in json overlay mask; do
    [ "$(cat "$T/target_$t")" = precious ] && ok || bad "the file a planted link pointed at was overwritten ($t)"
done
for f in results.json overlay.png mask_000.png; do
    [ -f "$O/a/$f" ] && [ ! -L "$O/a/$f" ] && ok || bad "$f is still a link after the run"
done
if n=$("$PY" tests/cli_images.py check "$O/a" 1 1 2>&1); then ok; else bad "after --force: $n"; fi
# a link at a mask name that no results.json lists: neither followed nor removed
ln -s "$T/target_mask" "$O/a/mask_999.png"
case_ 0 "a link at an unlisted mask name" $SEG -i "$IMG" -t cat --threshold 0 -o "$O/a"
[ -L "$O/a/mask_999.png" ] && [ "$(cat "$T/target_mask")" = precious ] && ok || bad "the link at mask_999.png was followed or removed"
rm "$O/a/mask_999.png"
# a user's own file named like a mask survives reruns (only listed masks are removed)
echo mine >"$O/a/mask_123.png"
case_ 0 "rerun with a user's mask_123.png" $SEG -i "$IMG" -t cat --threshold 0.99 -o "$O/a"
[ "$(cat "$O/a/mask_123.png")" = mine ] && ok || bad "the user's mask_123.png was touched"
n1=$(ls "$O/a" | grep -c '^mask_')
[ "$n1" -eq 1 ] && ok || bad "rerun with fewer instances: $n1 mask files, expected 1 (the user's mask_123.png only)"
rm "$O/a/mask_123.png"
# a foreign non-empty folder: refused without --force; with --force its files are kept
mkdir -p "$O/foreign" && echo notes >"$O/foreign/notes.txt" && echo old >"$O/foreign/mask_000.png"
case_ 1 "a foreign folder" $SEG -i "$IMG" -t cat -o "$O/foreign"
grep -q "notes.txt" "$T/err" && grep -q -- "--force" "$T/err" && ok || bad "foreign folder: $(cat "$T/err")"
[ "$(ls "$O/foreign" | wc -l)" -eq 2 ] && ok || bad "a refused run changed the foreign folder: $(ls "$O/foreign")"
case_ 1 "points into a foreign folder" points -m "$MODEL" -q -i "$IMG" -p 0,0 -o "$O/foreign"
case_ 0 "a foreign folder, --force" $SEG -i "$IMG" -t cat --threshold 0.99 --force -o "$O/foreign"
[ "$(cat "$O/foreign/notes.txt")" = notes ] && ok || bad "--force: notes.txt was touched"
[ -f "$O/foreign/results.json" ] && ok || bad "--force: no results.json"
case_ 1 "the same folder again: still holds notes.txt" $SEG -i "$IMG" -t cat -o "$O/foreign"
mkdir -p "$O/theirs" && echo '{"instances": [{"mask": "mask_000.png"}]}' >"$O/theirs/results.json"
case_ 1 "somebody else's results.json" $SEG -i "$IMG" -t cat -o "$O/theirs"
grep -q "results.json" "$T/err" && ok || bad "somebody else's results.json: $(cat "$T/err")"
# a failed rerun (the image cannot be read) leaves the earlier output exactly as it was
cp -r "$O/a" "$O/a_before"
case_ 1 "failed rerun (bad image)" $SEG -i "$T/hostile/png_truncated_idat.png" -t cat -o "$O/a"
diff -r "$O/a" "$O/a_before" >/dev/null && ok || bad "a failed rerun changed the folder"
# a failed rerun at the commit (a folder where a mask goes) leaves no results.json at all
mkdir "$O/a/mask_001.png"
case_ 1 "a folder named mask_001.png: refused" $SEG -i "$IMG" -t cat --threshold 0 -o "$O/a"
case_ 1 "a folder named mask_001.png, --force" $SEG -i "$IMG" -t cat --threshold 0 --force -o "$O/a"
grep -q "mask_001.png" "$T/err" && ok || bad "mask_001.png folder: $(cat "$T/err")"
diff -r -x mask_001.png "$O/a" "$O/a_before" >/dev/null && ok || bad "a failure before the commit changed files"
[ -z "$(ls -a "$O/a" | grep '^\.sam3-tmp-')" ] && ok || bad "temporary files left behind: $(ls -a "$O/a")"
rmdir "$O/a/mask_001.png"
# several prompts: subfolders; a link planted as a subfolder is not followed
case_ 0 "several prompts" $SEG -i "$IMG" -t cat -t dog -o "$O/multi"
[ -f "$O/multi/00_cat/results.json" ] && [ -f "$O/multi/01_dog/results.json" ] && ok || bad "several prompts: $(ls -R "$O/multi")"
case_ 0 "several prompts again" $SEG -i "$IMG" -t cat -t dog -o "$O/multi"
mkdir -p "$T/elsewhere"
rm -r "$O/multi/01_dog" && ln -s "$T/elsewhere" "$O/multi/01_dog"
case_ 1 "a link as a prompt subfolder" $SEG -i "$IMG" -t cat -t dog -o "$O/multi"
case_ 1 "a link as a prompt subfolder, --force" $SEG -i "$IMG" -t cat -t dog --force -o "$O/multi"
[ -z "$(ls "$T/elsewhere")" ] && ok || bad "wrote through a linked subfolder: $(ls "$T/elsewhere")"
# points reuses a segment folder; a single-prompt output replaces an earlier one's listed masks
case_ 0 "points into a segment output" points -m "$MODEL" -q -i "$IMG" -p 0,0 --single -o "$O/a"
n2=$(ls "$O/a" | grep -c '^mask_')
[ "$n2" -eq 1 ] && ok || bad "points after segment: $n2 masks, expected 1"

# -m naming a Hugging Face checkpoint (its safetensors file, or its folder): exit 1 and a hint to
# convert it
mkdir -p "$T/hf_ck" && printf '{"a": 1}' >"$T/hf_ck/model.safetensors"
for m in "$T/hf_ck/model.safetensors" "$T/hf_ck"; do
    "$B/sam3" segment -m "$m" -i "$IMG" -t cat -o "$T/o_hf" -q 2>"$T/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "tools/convert.py" "$T/err" && ok || bad "-m $m: exit $rc, no hint to convert: $(cat "$T/err")"
done

echo "test_cli_robust: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
