#!/bin/sh
# Tests the command-line tool (examples/sam3_cli.c) on the tiny models: exit codes 0/1/2 with one
# line on stderr naming the problem, the files `sam3 segment` writes (results.json parses, one
# mask PNG per instance, at the image's size, area = pixels set), grey/RGBA/palette/16-bit/
# interlaced PNG and JPEG input (BMP and TGA refused),
# --quiet, several prompts, JSON escaping, and write failures; `sam3 points` on a SAM 3 and a SAM 1
# file (clicks, box, mask prompt, --single, the same checks on its files); `sam3 everything` on
# both (the parity case's masks, NMS, COCO, bad options); `sam3 bench` on both.
#   tests/test_cli.sh [BUILD_DIR]      (default build; needs BUILD_DIR/sam3, BUILD_DIR/tiny_a.sam3
#                                       and BUILD_DIR/sam1_a.sam3)
# Prints "test_cli: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
# OpenMP threads that spin while waiting make every run ~100x slower when the machine is busy
# with other work (measured: 2 s instead of 20 ms per tiny-model run); tests need not spin.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
SAM3=$B/sam3
MODEL=$B/tiny_a.sam3
IMAGE=tests/data/tiny_a/image.png
T=$B/test_cli
rm -rf "$T" && mkdir -p "$T/in" || exit 1
"$PY" tests/cli_images.py make "$T/in" || exit 1
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# run WANT_RC NAME ARGS...: runs sam3 ARGS, checks the exit code; stdout/stderr in $T/out, $T/err
run() {
    want=$1
    name=$2
    shift 2
    "$SAM3" "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, expected $want; stderr: $(head -c 300 "$T/err")"; fi
    return 0
}

# fails WANT_RC WORD NAME ARGS...: a failing run with -q prints exactly one line on stderr,
# "sam3 ...: ...", containing WORD (case-insensitive)
fails() {
    want=$1
    word=$2
    name=$3
    shift 3
    run "$want" "$name" "$@"
    if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q '^sam3' "$T/err" && grep -qi -- "$word" "$T/err"; then
        ok
    else
        bad "$name: wanted one line on stderr mentioning '$word', got: $(cat "$T/err")"
    fi
}

# outputs NAME DIR W H [MIN_INSTANCES]: DIR holds a consistent result set for a WxH image
outputs() {
    if n=$("$PY" tests/cli_images.py check "$2" "$3" "$4" 2>&1); then
        if [ "$n" -ge "${5:-0}" ]; then ok; else bad "$1: $n instances, expected at least $5"; fi
    else
        bad "$1: $n"
    fi
}

SEG="segment -m $MODEL"

# --- success ---
run 0 "text prompt" $SEG -i "$IMAGE" -t "a cat" -o "$T/text"
outputs "text prompt" "$T/text" 150 100
grep -q "image encoder" "$T/err" && ok || bad "progress: no 'image encoder' line on stderr"
grep -q "instances\? .*text .*DETR encoder .*decoder .*masks" "$T/err" && ok || bad "progress: no per-stage timings: $(cat "$T/err")"

run 0 "text + boxes, threshold 0 keeps every query" $SEG -i "$IMAGE" -t "a cat" --box 10,10,80,60 \
    --box=90,20,140,90,neg --threshold 0 --mask-threshold 0.4 -o "$T/all"
outputs "threshold 0" "$T/all" 150 100 12
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["prompt"]=="a cat" and len(r["boxes"])==2 and r["boxes"][1]["label"]=="neg", r' \
    "$T/all/results.json" && ok || bad "results.json: prompt and boxes not recorded"

run 0 "boxes only (visual prompt)" $SEG -i "$IMAGE" --box 10,10,80,60,pos --box 20,20,40,40,1 --box 50,50,60,60,0 --threshold 0.01 -o "$T/boxes"
outputs "boxes only" "$T/boxes" 150 100 1
"$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["prompt"] is None' "$T/boxes/results.json" && ok || bad "boxes only: prompt is not null"

run 0 "rerun into the same directory with fewer instances" $SEG -i "$IMAGE" -t "a cat" --threshold 0.99 -q -o "$T/all"
outputs "stale masks removed" "$T/all" 150 100

run 0 "--quiet" $SEG -i "$IMAGE" -t "a cat" -q -o "$T/quiet"
[ ! -s "$T/out" ] && [ ! -s "$T/err" ] && ok || bad "--quiet printed: $(cat "$T/out" "$T/err")"
outputs "--quiet" "$T/quiet" 150 100

run 0 "--threads 1 --blas-threads 0" $SEG -i "$IMAGE" -t "a cat" --threads 1 --blas-threads 0 -q -o "$T/threads"
cmp -s "$T/threads/results.json" "$T/text/results.json" && ok || bad "--threads 1 changed results.json"

# --image-size: the model at a 70-pixel input; consistent outputs, not those of the file's size
run 0 "--image-size 70" $SEG -i "$IMAGE" -t "a cat" --threshold 0.2 --image-size 70 -q -o "$T/s70"
outputs "--image-size 70" "$T/s70" 150 100
run 0 "points --image-size 98" points -m "$MODEL" -i "$IMAGE" -p 75,50 --image-size 98 -q -o "$T/pts_s98"
cmp -s "$T/s70/results.json" "$T/text/results.json" && bad "--image-size 70: the results of the file's size" || ok
fails 1 "image_size 100" "--image-size 100 (no multiple of the patch)" $SEG -i "$IMAGE" -t cat --image-size 100 -q -o "$T/x_s"
fails 2 "--image-size" "--image-size -14" $SEG -i "$IMAGE" -t cat --image-size -14 -q -o "$T/x_s"

# several prompts: one directory each, NN_SLUG
run 0 "several -t" $SEG -i "$IMAGE" -t "a cat" -t "Yellow school-bus!" -t "a cat" --threshold 0.2 -o "$T/multi"
for d in 00_a_cat 01_yellow_school_bus 02_a_cat; do outputs "several -t: $d" "$T/multi/$d" 150 100; done
[ "$(grep -c 'instance' "$T/err")" -eq 3 ] && ok || bad "several -t: expected 3 prompt lines on stderr: $(cat "$T/err")"
grep -q '"prompt": "Yellow school-bus!"' "$T/multi/01_yellow_school_bus/results.json" && ok || bad "several -t: prompt 1 not in its results.json"
cmp -s "$T/multi/00_a_cat/results.json" "$T/multi/02_a_cat/results.json" && ok || bad "several -t: the same prompt twice differs"

# image formats: grey, grey+alpha, RGB, RGBA, palette, 16-bit, interlaced PNG; JPEG (cjpeg); odd
# size 97x61. The same pixels in every PNG form give the same results.json.
if command -v cjpeg >/dev/null; then
    "$PY" -c 'import sys; sys.path.insert(0, "tests"); import cli_images as c; open(sys.argv[1], "wb").write(c.ppm_bytes(c.test_rgb()))' "$T/in/rgb.ppm" &&
        cjpeg -quality 90 "$T/in/rgb.ppm" >"$T/in/rgb.jpg" && cjpeg -quality 90 -grayscale "$T/in/rgb.ppm" >"$T/in/grey.jpg" &&
        cjpeg -quality 90 -progressive "$T/in/rgb.ppm" >"$T/in/progressive.jpg" && ok || bad "cjpeg could not make the test JPEGs"
    jpegs="rgb.jpg grey.jpg progressive.jpg"
else
    bad "cjpeg (libjpeg-turbo-progs) missing: JPEG input not tested"
    jpegs=
fi
for f in grey.png grey_alpha.png rgb.png rgba.png rgb_palette.png rgb_16bit.png rgba_16bit.png rgb_interlaced.png grey_2bit.png $jpegs; do
    run 0 "input $f" $SEG -i "$T/in/$f" -t "a cat" --threshold 0.2 -q -o "$T/fmt_$f"
    outputs "input $f" "$T/fmt_$f" 97 61
done
same_results() { # same_results A B: the two runs' results.json agree but for the image name
    "$PY" -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); a.pop("image"); b.pop("image"); assert a == b' \
        "$T/fmt_$1/results.json" "$T/fmt_$2/results.json" && ok || bad "input $2: results differ from $1's (same pixels)"
}
for f in rgba.png rgb_16bit.png rgba_16bit.png rgb_interlaced.png; do same_results rgb.png $f; done
run 0 "input rgb_q.png" $SEG -i "$T/in/rgb_q.png" -t "a cat" --threshold 0.2 -q -o "$T/fmt_rgb_q.png"
same_results rgb_q.png rgb_palette.png
for f in rgb.bmp rgba.tga; do
    fails 1 "JPEG and PNG only" "input $f is refused" $SEG -i "$T/in/$f" -t "a cat" -q -o "$T/fmt_$f"
done

# JSON escaping: quotes, backslash, control characters, non-ASCII and invalid UTF-8, in the
# prompt and in the image path
weird="$T/in/we\"ird \\ name é.png"
cp "$T/in/rgb.png" "$weird"
prompt=$(printf 'a "quoted" \\ back\tslash\nnew line, caf\303\251 \342\230\225 \360\237\220\261 bad \377 end\001')
run 0 "JSON escaping" $SEG -i "$weird" -t "$prompt" -q -o "$T/json"
"$PY" - "$T/json/results.json" "$weird" <<'EOF' && ok || bad "JSON escaping: results.json does not parse or round-trip"
import json, sys
raw = open(sys.argv[1], "rb").read()
r = json.loads(raw.decode("ascii"))
assert r["image"] == sys.argv[2], r["image"]
assert r["prompt"] == 'a "quoted" \\ back\tslash\nnew line, caf\u00e9 \u2615 \U0001f431 bad \ufffd end\x01', repr(r["prompt"])
EOF

# help and version
for c in segment points everything info tokenize bench; do
    run 0 "$c --help" "$c" --help
    grep -q "usage: sam3 $c" "$T/out" && ok || bad "$c --help: no usage line"
done
run 0 "--help" --help
run 0 "--version" --version
grep -q "^sam3 [0-9]" "$T/out" && ok || bad "--version: $(cat "$T/out")"

# --- runtime failures: exit 1 ---
fails 1 "no such file" "missing model" segment -m "$T/missing.sam3" -i "$IMAGE" -t cat -q -o "$T/x1"
fails 1 "not a .sam3 file" "not a .sam3 file" segment -m README.md -i "$IMAGE" -t cat -q -o "$T/x1"
head -c 1000 "$MODEL" >"$T/truncated.sam3"
fails 1 "model" "truncated .sam3" segment -m "$T/truncated.sam3" -i "$IMAGE" -t cat -q -o "$T/x1"
fails 1 "no such file" "missing image" $SEG -i "$T/in/missing.png" -t cat -q -o "$T/x1"
fails 1 "truncated" "truncated PNG" $SEG -i "$T/in/truncated.png" -t cat -q -o "$T/x1"
fails 1 "not a supported format" "text file as image" $SEG -i "$T/in/not_an_image.png" -t cat -q -o "$T/x1"
fails 1 "image" "directory as image" $SEG -i "$T" -t cat -q -o "$T/x1" # fopen of a directory may succeed; stb then fails
touch "$T/a_file"
fails 1 "output folder" "output under a file" $SEG -i "$IMAGE" -t cat -q -o "$T/a_file/out"
mkdir -p "$T/blocked/results.json"
fails 1 "results.json" "results.json cannot be written" $SEG -i "$IMAGE" -t cat -q -o "$T/blocked"
mkdir -p "$T/blocked2/mask_000.png"
fails 1 "mask_000.png" "mask PNG cannot be written" $SEG -i "$IMAGE" -t cat --threshold 0 -q -o "$T/blocked2"
[ ! -e "$T/blocked2/results.json" ] && ok || bad "a failed run left a results.json behind"
fails 1 "no such file" "info: missing model" info -m "$T/missing.sam3"

# --- usage errors: exit 2 ---
for box in 1,2,3 a,b,c,d 1,2,3,4,maybe 5,5,1,1 1,2,3,4,5,6 "" 1,,3,4 nan,1,2,3 1e40,0,1,1; do
    fails 2 "box" "bad box '$box'" $SEG -i "$IMAGE" --box "$box" -q -o "$T/x"
done
fails 2 "unknown option" "unknown option" $SEG -i "$IMAGE" -t cat --frobnicate -o "$T/x"
fails 2 "needs a value" "option without its value" $SEG -i "$IMAGE" -t cat -o
fails 2 "-o" "missing -o" $SEG -i "$IMAGE" -t cat
fails 2 "-i" "missing -i" $SEG -t cat -o "$T/x"
fails 2 "-m" "missing -m" segment -i "$IMAGE" -t cat -o "$T/x"
fails 2 "nothing to look for" "no prompt" $SEG -i "$IMAGE" -o "$T/x"
fails 2 "empty" "empty text, no box" $SEG -i "$IMAGE" -t "" -o "$T/x"
fails 2 "threshold" "threshold out of range" $SEG -i "$IMAGE" -t cat --threshold 1.5 -o "$T/x"
fails 2 "threshold" "threshold not a number" $SEG -i "$IMAGE" -t cat --threshold abc -o "$T/x"
fails 2 "mask-threshold" "mask threshold out of range" $SEG -i "$IMAGE" -t cat --mask-threshold -1 -o "$T/x"
fails 2 "threads" "--threads 0" $SEG -i "$IMAGE" -t cat --threads 0 -o "$T/x"
fails 2 "unexpected argument" "stray argument" $SEG -i "$IMAGE" -t cat -o "$T/x" stray
fails 2 "unknown command" "unknown command" frobnicate
run 2 "no command" # prints the help on stderr
[ ! -e "$T/x" ] && ok || bad "a usage error created the output directory"

# --- points: the interactive head, on a SAM 3 file and a SAM 1 file ---
# points_ok NAME DIR W H N_MASKS sam3|sam1: DIR holds a consistent `sam3 points` result set
points_ok() {
    if n=$("$PY" tests/cli_images.py points "$2" "$3" "$4" "$5" "$6" 2>&1); then ok; else bad "$1: $n"; fi
}
# field NAME FILE EXPR: the Python expression EXPR holds for r = FILE's JSON
field() {
    "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), r' "$2" "$3" 2>/dev/null && ok || bad "$1: $3 does not hold in $2"
}
S1=$B/sam1_a.sam3
S1IMAGE=tests/data/sam1_a/image.png
PTS="points -m $MODEL"

run 0 "points: two clicks" $PTS -i "$IMAGE" --point 75,50 --point=20,20,neg -o "$T/pts"
points_ok "points: two clicks" "$T/pts" 150 100 3 sam3
field "points: clicks recorded" "$T/pts/results.json" 'r["points"] == [[75, 50, 1], [20, 20, 0]] and r["box"] is None and r["mask_prompt"] is None and r["single"] is False'
grep -q "image encoder" "$T/err" && grep -q "3 masks, best" "$T/err" && ok || bad "points: progress lines: $(cat "$T/err")"
run 0 "points: same clicks, --threads 1" $PTS -i "$IMAGE" -p 75,50,pos -p 20,20,0 --threads 1 -q -o "$T/pts_t1"
cmp -s "$T/pts/results.json" "$T/pts_t1/results.json" && cmp -s "$T/pts/mask_001.png" "$T/pts_t1/mask_001.png" && ok ||
    bad "points: --threads 1 or the label words changed the result"
[ ! -s "$T/err" ] && ok || bad "points --quiet printed: $(cat "$T/err")"
run 0 "points: --single into the same directory" $PTS -i "$IMAGE" -p 75,50 --single -q -o "$T/pts_t1"
points_ok "points: --single (stale masks removed)" "$T/pts_t1" 150 100 1 sam3
run 0 "points: box only" $PTS -i "$IMAGE" --box 10,10,80,60 -q -o "$T/pts_box"
points_ok "points: box only" "$T/pts_box" 150 100 3 sam3
field "points: box recorded" "$T/pts_box/results.json" 'r["box"] == [10, 10, 80, 60] and r["points"] == []'
run 0 "points: --mask of another size + click" $PTS -i "$IMAGE" --mask "$T/in/mask_97x61.png" -p 75,50 --mask-threshold 0.4 -q -o "$T/pts_mask"
points_ok "points: --mask" "$T/pts_mask" 150 100 3 sam3
field "points: mask prompt recorded" "$T/pts_mask/results.json" 'r["mask_prompt"].endswith("mask_97x61.png") and r["mask_threshold"] == 0.4'
run 0 "points: an earlier mask as the prompt" $PTS -i "$IMAGE" --mask "$T/pts/mask_001.png" -q -o "$T/pts_mask2"
points_ok "points: earlier mask" "$T/pts_mask2" 150 100 3 sam3
run 0 "points: odd-size grey image" $PTS -i "$T/in/grey.png" -p 40,30 -p 90,5,neg -q -o "$T/pts_grey"
points_ok "points: odd-size grey image" "$T/pts_grey" 97 61 3 sam3

run 0 "points SAM 1: click" points -m "$S1" -i "$S1IMAGE" --point 75,50 -o "$T/s1"
points_ok "points SAM 1: click" "$T/s1" 150 100 3 sam1
grep -q "ViT + neck" "$T/err" && ok || bad "points SAM 1: no 'ViT + neck' timing: $(cat "$T/err")"
run 0 "points SAM 1: box + clicks, --single" points -m "$S1" -i "$S1IMAGE" --box 10,10,100,80 -p 50,40 -p 5,5,neg --single -q -o "$T/s1_single"
points_ok "points SAM 1: --single" "$T/s1_single" 150 100 1 sam1
run 0 "points SAM 1: --mask at the low-res size" points -m "$S1" -i "$S1IMAGE" --mask "$T/in/mask_32.png" -q -o "$T/s1_mask"
points_ok "points SAM 1: --mask" "$T/s1_mask" 150 100 3 sam1
fails 1 "32x32" "points SAM 1: --mask of another size" points -m "$S1" -i "$S1IMAGE" --mask "$T/in/mask_97x61.png" -q -o "$T/x2"
fails 1 "SAM 1" "segment on a SAM 1 file" segment -m "$S1" -i "$S1IMAGE" -t cat -q -o "$T/x2"
fails 1 "SAM 1" "tokenize on a SAM 1 file" tokenize -m "$S1" "a cat"

# a SAM 3 file without the interactive head (the detector's tensors only)
if "$PY" tests/cli_images.py detector_only tests/data/tiny_a "$T/det_src" && "$PY" tools/convert.py --quiet "$T/det_src" "$T/det.sam3" >/dev/null 2>&1; then
    fails 1 "interactive head" "points on a detector-only file" points -m "$T/det.sam3" -i "$IMAGE" -p 5,5 -q -o "$T/x2"
    run 0 "bench on a detector-only file" bench -m "$T/det.sam3" --runs 1 --size 40x30
    grep -q "click on the cached image  *n/a" "$T/out" && ok || bad "bench without an interactive head: clicks not n/a: $(cat "$T/out")"
else
    bad "could not make a detector-only file"
fi

# --- everything: the automatic mask generator. On sam1_a with the thresholds of its reference
# (tests/data/sam1_a/ref_sam1_everything.sam3) and no NMS: the 155 masks test_parity compares. ---
EVR="everything --points-per-side 12 --pred-iou-thresh 0.309483 --stability-thresh 0.382502 --stability-offset 0.05 --mask-threshold 0.5005"
run 0 "everything SAM 1: no NMS" $EVR --nms-thresh 1 -m "$S1" -i "$S1IMAGE" -o "$T/evr1"
outputs "everything SAM 1: no NMS" "$T/evr1" 150 100 155
field "everything: settings and per-mask fields" "$T/evr1/results.json" 'len(r["instances"]) == 155 and r["points_per_side"] == 12 and r["nms_thresh"] == 1 and all(0 <= i["stability"] <= 1 and len(i["point"]) == 2 and 0 <= i["query"] < 144 for i in r["instances"])'
grep -q "155 masks kept of 432 (155 passed the filters) from 144 clicks" "$T/err" && ok || bad "everything: progress line: $(cat "$T/err")"
run 0 "everything SAM 1: --threads 1, NMS 0.7" $EVR -m "$S1" -i "$S1IMAGE" --threads 1 -q -o "$T/evr1_t1"
field "everything SAM 1: NMS 0.7 keeps the reference's one mask" "$T/evr1_t1/results.json" 'len(r["instances"]) == 1 and r["instances"][0]["query"] == 10'
cmp -s "$T/evr1/mask_000.png" "$T/evr1_t1/mask_000.png" && ok || bad "everything: --threads 1 or NMS changed the best mask"
run 0 "everything SAM 3: defaults, --format coco" everything -m "$MODEL" -i "$IMAGE" --format coco -q -o "$T/evr3"
field "everything SAM 3: coco.json" "$T/evr3/coco.json" 'r["categories"] == [{"id": 1, "name": "object"}] and len(r["annotations"]) >= 0'
[ -f "$T/det.sam3" ] && fails 1 "interactive head" "everything on a detector-only file" everything -m "$T/det.sam3" -i "$IMAGE" -q -o "$T/x2"
fails 2 "points-per-side" "everything: --points-per-side 0" everything -m "$MODEL" -i "$IMAGE" --points-per-side 0 -o "$T/x3"
fails 2 "nms-thresh" "everything: --nms-thresh 1.5" everything -m "$MODEL" -i "$IMAGE" --nms-thresh 1.5 -o "$T/x3"
fails 2 "mask-threshold" "everything: --mask-threshold 1" everything -m "$MODEL" -i "$IMAGE" --mask-threshold 1 -o "$T/x3"
fails 2 "-i" "everything: missing -i" everything -m "$MODEL" -o "$T/x3"
# crop layers and small-region removal: the crops' masks in the output, the settings recorded; hostile values refused
run 0 "everything SAM 1: one crop layer, small regions" $EVR --mask-threshold 0.7 --nms-thresh 1 --crop-layers 1 --crop-nms-thresh 1 --min-region-area 20 -m "$S1" -i "$S1IMAGE" -q -o "$T/evr1c"
field "everything crops: settings, masks of the image and of crops" "$T/evr1c/results.json" '{0} < set(i["crop"] for i in r["instances"]) <= {0, 1, 2, 3, 4} and r["crop_layers"] == 1 and r["crop_nms_thresh"] == 1 and r["min_region_area"] == 20 and abs(r["crop_overlap"] - 512 / 1500) < 1e-6 and all(0 <= i["query"] < 144 for i in r["instances"])'
for a in "--crop-layers -1" "--crop-layers 7" "--crop-overlap 1" "--crop-overlap 0" "--crop-overlap nan" "--crop-points-downscale 0" "--crop-nms-thresh 0" "--min-region-area -5"; do
    fails 2 "${a%% *}" "everything: $a" everything -m "$MODEL" -i "$IMAGE" $a -o "$T/x3"
done
fails 1 "crop layer" "everything: crop layers past the image's size" everything -m "$MODEL" -i "$IMAGE" --crop-layers 6 -q -o "$T/x3"
fails 1 "under one point" "everything: a layer's grid under a point" everything -m "$MODEL" -i "$IMAGE" --points-per-side 2 --crop-layers 1 --crop-points-downscale 4 -q -o "$T/x3"
fails 2 "unknown option" "everything: a text prompt" everything -m "$MODEL" -i "$IMAGE" -t cat -o "$T/x3"

fails 1 "no such file" "points: missing image" $PTS -i "$T/in/missing.png" -p 1,1 -q -o "$T/x2"
fails 1 "not a supported format" "points: text file as image" $PTS -i "$T/in/not_an_image.png" -p 1,1 -q -o "$T/x2"
fails 1 "no such file" "points: missing mask" $PTS -i "$IMAGE" --mask "$T/in/missing.png" -q -o "$T/x2"
fails 1 "mask" "points: text file as mask" $PTS -i "$IMAGE" --mask "$T/in/not_an_image.png" -q -o "$T/x2"
fails 1 "no such file" "points: missing model" points -m "$T/missing.sam3" -i "$IMAGE" -p 1,1 -q -o "$T/x2"
mkdir -p "$T/blocked3/results.json"
fails 1 "results.json" "points: results.json cannot be written" $PTS -i "$IMAGE" -p 1,1 -q -o "$T/blocked3"
for p in 1 a,b 1,2,maybe 1,2,3,4 "" 1,,2 nan,1 1e40,1 ,; do
    fails 2 "point" "points: bad point '$p'" $PTS -i "$IMAGE" --point "$p" -q -o "$T/x3"
done
fails 2 "no label" "points: box with a label" $PTS -i "$IMAGE" --box 1,2,30,40,neg -o "$T/x3"
fails 2 "box" "points: box x0 > x1" $PTS -i "$IMAGE" --box 50,5,10,40 -o "$T/x3"
fails 2 "one --box" "points: two boxes" $PTS -i "$IMAGE" --box 1,2,30,40 --box 1,2,30,40 -o "$T/x3"
fails 2 "nothing to segment" "points: no prompt" $PTS -i "$IMAGE" -o "$T/x3"
fails 2 "-o" "points: missing -o" $PTS -i "$IMAGE" -p 1,1
fails 2 "-i" "points: missing -i" $PTS -p 1,1 -o "$T/x3"
fails 2 "mask-threshold" "points: bad --mask-threshold" $PTS -i "$IMAGE" -p 1,1 --mask-threshold abc -o "$T/x3"
fails 2 "mask-threshold" "points: --mask-threshold out of 0..1" $PTS -i "$IMAGE" -p 1,1 --mask-threshold -0.5 -o "$T/x3"
fails 2 "needs a value" "points: --mask without its value" $PTS -i "$IMAGE" -p 1,1 --mask
fails 2 "unknown option" "points: unknown option" $PTS -i "$IMAGE" -p 1,1 --multimask -o "$T/x3"
[ ! -e "$T/x3" ] && ok || bad "a points usage error created the output directory"

# --- bench: SAM 3 (text, detector, clicks) and SAM 1 (encoder, clicks) ---
run 0 "bench SAM 3" bench -m "$MODEL" --runs 2 --size 64x48
grep -q "first click (runs the interactive neck) *[0-9.]* ms" "$T/out" && grep -q "click on the cached image *[0-9.]* ms" "$T/out" &&
    grep -q "text encoder" "$T/out" && ok || bad "bench SAM 3: $(cat "$T/out")"
run 0 "bench SAM 1" bench -m "$S1" --runs 2 --size 64x48
grep -q "(SAM 1)" "$T/out" && grep -q "ViT + neck *[0-9.]* ms" "$T/out" && grep -q "click on the cached image *[0-9.]* ms" "$T/out" &&
    ! grep -q "text encoder" "$T/out" && grep -q "0.02215 GFLOP" "$T/out" && ok || bad "bench SAM 1: $(cat "$T/out")"
# --paired (tools/bench_pytorch.py --pair): "ready" after an untimed round, then one line a run,
# each run started by a line on stdin; stdin ending early is an error, not a short table
printf 'run\nrun\n' | "$SAM3" bench -m "$MODEL" --runs 2 --size 64x48 --paired >"$T/out" 2>"$T/err" &&
    [ "$(head -1 "$T/out")" = ready ] && [ "$(grep -c '^run [12]: image encoder [0-9.]* ms, first prompt [0-9.]* ms, new prompt [0-9.]* ms, new prompt without post-processing [0-9.]* ms$' "$T/out")" -eq 2 ] &&
    grep -q "2 runs (medians)" "$T/out" && ok || bad "bench --paired: $(cat "$T/out" "$T/err")"
printf 'run\n' | "$SAM3" bench -m "$MODEL" --runs 2 --size 64x48 --paired >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && grep -q "stdin ended before run 2 of 2" "$T/err" && ! grep -q "runs (medians)" "$T/out" && ok || bad "bench --paired, stdin short: $(cat "$T/out" "$T/err")"

# --load N: quiet and loaded medians and their ratio a stage (the new prompt's and the first
# click's by stage too); the busy processes are gone afterwards
busy_before=$(ps -eo args | grep -c '^sh -c while :; do :; done$')
run 0 "bench --load" bench -m "$MODEL" --runs 1 --size 64x48 --load 1
[ "$(grep -c '^  [a-z ]* *[0-9.]* *[0-9.]* *[0-9.]*x$' "$T/out")" -eq 5 ] && [ "$(grep -c '^    of it: ' "$T/out")" -eq 7 ] &&
    grep -q "^    of it: interactive neck *[0-9.]* *[0-9.]*" "$T/out" &&
    grep -q "beside 1 busy process" "$T/out" &&
    [ "$(ps -eo args | grep -c '^sh -c while :; do :; done$')" -eq "$busy_before" ] && ok || bad "bench --load: $(cat "$T/out" "$T/err")"
run 0 "bench --load SAM 1" bench -m "$S1" --runs 1 --size 64x48 --load 2
grep -q "first prompt *n/a" "$T/out" && grep -q "click on the cached image *[0-9.]* *[0-9.]* *[0-9.]*x$" "$T/out" && ok ||
    bad "bench --load SAM 1: $(cat "$T/out")"
fails 2 "load wants" "bench --load 0" bench -m "$MODEL" --load 0

# Without OMP_WAIT_POLICY the CLI runs itself again with it passive (Linux): a process blocked on
# --paired's stdin shows its environment; a policy the user set is kept
if [ "$(uname -s)" = Linux ] && [ -r /proc/self/environ ]; then
    for pol in passive active; do
        if [ $pol = passive ]; then E="env -u OMP_WAIT_POLICY"; else E="env OMP_WAIT_POLICY=active"; fi
        sleep 3 | $E "$SAM3" bench -m "$MODEL" --runs 1 --size 64x48 --paired >/dev/null 2>&1 &
        pid=$!
        sleep 1
        tr '\0' '\n' </proc/$pid/environ 2>/dev/null | grep -qx "OMP_WAIT_POLICY=$pol" && ok || bad "CLI wait policy: not $pol"
        wait $pid
    done
fi

# the same bytes whatever the thread count (README "Verification"): text + boxes on the SAM 3
# model, f32 and bf16 products; clicks
for prec in f32 bf16; do
    for th in 1 2 4; do
        "$SAM3" segment -m "$MODEL" -i "$IMAGE" -t "a cat" -t dog --box 20,15,90,70 --box 5,5,30,40,neg --threshold 0 \
            --precision $prec --threads $th -q -o "$T/thr_$prec$th" || bad "segment --threads $th --precision $prec failed"
        "$SAM3" points -m "$MODEL" -i "$IMAGE" -p 40,30 -p 90,60,neg --precision $prec --threads $th -q \
            -o "$T/thr_$prec$th/points" || bad "points --threads $th --precision $prec failed"
    done
    diff -r "$T/thr_${prec}1" "$T/thr_${prec}2" >/dev/null && diff -r "$T/thr_${prec}1" "$T/thr_${prec}4" >/dev/null && ok ||
        bad "segment/points --precision $prec: --threads 1, 2, 4 gave different files"
done

# EXIF orientation (a JPEG with orientation 6, rotate 90 clockwise): segment and points turn the
# image upright and say so; --keep-orientation keeps the stored order and says that too
"$PY" - "$T/exif_src.ppm" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, "tests")
from cli_images import ppm_bytes
y, x = np.mgrid[0:40, 0:64]
open(sys.argv[1], "wb").write(ppm_bytes(np.stack([x * 4, y * 6, (x + y) % 256], axis=2).astype(np.uint8)))
PYEOF
cjpeg "$T/exif_src.ppm" >"$T/exif_plain.jpg"
"$PY" - "$T/exif_plain.jpg" "$T/exif6.jpg" <<'PYEOF'
import struct, sys
j = open(sys.argv[1], "rb").read()
t = b"II" + struct.pack("<HIH", 42, 8, 1) + struct.pack("<HHIH", 0x0112, 3, 1, 6) + b"\0\0" + struct.pack("<I", 0)
body = b"Exif\0\0" + t
open(sys.argv[2], "wb").write(j[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + j[2:])
PYEOF
for keep in "" --keep-orientation; do
    for cmd in "segment -t cat" "points --point 5,5"; do
        rm -rf "$T/exif_out"
        # shellcheck disable=SC2086
        "$B/sam3" $cmd -m "$MODEL" -i "$T/exif6.jpg" -o "$T/exif_out" $keep -q 2>"$T/exif.err"
        "$PY" - "$T/exif_out/results.json" "$keep" <<'PYEOF' && ok || bad "sam3 $cmd $keep on an EXIF-6 JPEG: $(cat "$T/exif.err")"
import json, sys
r = json.load(open(sys.argv[1]))
keep = sys.argv[2] != ""
assert (r["width"], r["height"]) == ((64, 40) if keep else (40, 64)), (r["width"], r["height"])
assert r["exif_orientation"] == {"stored": 6, "applied": not keep}, r.get("exif_orientation")
PYEOF
    done
done
rm -rf "$T/exif_out"
"$B/sam3" segment -m "$MODEL" -i "$T/exif_plain.jpg" -t cat -o "$T/exif_out" -q &&
    ! grep -q exif_orientation "$T/exif_out/results.json" && ok || bad "a JPEG without EXIF orientation: results.json names one"

# sam3 concept, then segment --concept: on its own image the same instances and masks as -t and
# --box given directly; a concept of another model, a truncated one, a missing one: one line, exit 1
C=$T/concept
mkdir -p "$C"
run 0 "concept" concept -m "$MODEL" -i "$IMAGE" -t "a cat" --box 15,20,82.5,70 --box 90,5,142.5,40,neg -o "$C/cat.concept" -q
run 0 "segment direct" segment -m "$MODEL" -i "$IMAGE" -t "a cat" --box 15,20,82.5,70 --box 90,5,142.5,40,neg --threshold 0.2 -q -o "$C/direct"
run 0 "segment --concept" segment -m "$MODEL" -i "$IMAGE" --concept "$C/cat.concept" --threshold 0.2 -q -o "$C/via"
"$PY" - "$C/direct/results.json" "$C/via/results.json" <<'PYEOF' && ok || bad "segment --concept on its own image differs from -t and --box"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["concept"].endswith("cat.concept") and b["prompt"] is None, b
assert a["instances"] and a["instances"] == b["instances"] and a["presence"] == b["presence"], (a["instances"], b["instances"])
PYEOF
for f in "$C"/direct/mask_*.png; do cmp -s "$f" "$C/via/$(basename "$f")" || bad "segment --concept: $(basename "$f") differs"; done
run 0 "segment -t and --concept" segment -m "$MODEL" -i "$IMAGE" -t dog --concept "$C/cat.concept" -q -o "$C/two"
[ -f "$C/two/00_dog/results.json" ] && [ -f "$C/two/01_cat/results.json" ] && ok || bad "segment -t dog --concept cat.concept: folders $(ls "$C/two")"
fails 1 "another model" "a concept of another model" segment -m "$B/tiny_b.sam3" -i "$IMAGE" --concept "$C/cat.concept" -q -o "$C/x"
head -c 500 "$C/cat.concept" >"$C/cut.concept"
fails 1 "truncated" "a truncated concept" segment -m "$MODEL" -i "$IMAGE" --concept "$C/cut.concept" -q -o "$C/x"
fails 1 "nope.concept" "a missing concept" segment -m "$MODEL" -i "$IMAGE" --concept "$C/nope.concept" -q -o "$C/x"
fails 2 "nothing to save" "concept without -t or --box" concept -m "$MODEL" -i "$IMAGE" -o "$C/y.concept"
fails 2 "one -t" "concept with two -t" concept -m "$MODEL" -i "$IMAGE" -t a -t b -o "$C/y.concept"
[ ! -e "$C/y.concept" ] && [ ! -e "$C/x" ] && ok || bad "a failed concept or segment left files behind"

# --classes FILE: a vocabulary, its lines as -t prompts in one sam3_segment_many call, each
# results.json with its COCO category_id; every class's instances exactly as that class alone gives them
printf 'a cat\n# not a class\n\n  dog  \r\n' >"$C/classes.txt"
run 0 "segment --classes" segment -m "$MODEL" -i "$IMAGE" --classes "$C/classes.txt" --threshold 0.2 --format coco -q -o "$C/cl"
run 0 "segment -t dog alone" segment -m "$MODEL" -i "$IMAGE" -t dog --threshold 0.2 --format coco -q -o "$C/dog"
run 0 "segment -t 'a cat' alone" segment -m "$MODEL" -i "$IMAGE" -t "a cat" --threshold 0.2 --format coco -q -o "$C/cat"
"$PY" - "$C" <<'PYEOF' && ok || bad "segment --classes differs from one class at a time"
import json, sys
d = sys.argv[1]
for k, (name, alone) in enumerate([("a cat", "cat"), ("dog", "dog")]):
    v = json.load(open("%s/cl/%02d_%s/results.json" % (d, k, name.replace(" ", "_"))))
    a = json.load(open("%s/%s/results.json" % (d, alone)))
    assert v["prompt"] == name and v["category_id"] == k + 1 and "category_id" not in a, (v["prompt"], v.get("category_id"))
    assert len(v["instances"]) == len(a["instances"]) > 0, (name, len(v["instances"]), len(a["instances"]))
    for x, y in zip(v["instances"], a["instances"]):
        assert x == y, (x, y)
cats = json.load(open(d + "/cl/coco.json"))["categories"]
assert [(c["id"], c["name"]) for c in cats] == [(1, "a cat"), (2, "dog")], cats
PYEOF
fails 1 "nope.txt" "a missing --classes file" segment -m "$MODEL" -i "$IMAGE" --classes "$C/nope.txt" -q -o "$C/x"

# track --concept: on the concept's own frame the same objects as its -t and --concept-box
if [ -f "$B/video_a.sam3" ]; then
    mkdir -p "$C/frames" && cp "$IMAGE" "$C/frames/000.png" && cp tests/data/tiny_b/image.png "$C/frames/001.png"
    run 0 "concept (video model)" concept -m "$B/video_a.sam3" -i "$IMAGE" -t "a cat" --box 15,20,82.5,70 -o "$C/v.concept" -q
    run 0 "track --concept" track -m "$B/video_a.sam3" -i "$C/frames" --concept "$C/v.concept" --threshold 0.001 -o "$C/t1" -q
    run 0 "track -t --concept-box" track -m "$B/video_a.sam3" -i "$C/frames" -t "a cat" --concept-box 15,20,82.5,70 --threshold 0.001 -o "$C/t2" -q
    "$PY" - "$C/t1/tracks.jsonl" "$C/t2/tracks.jsonl" <<'PYEOF' && ok || bad "track --concept on its own frame differs from -t and --concept-box"
import json, sys
a, b = ([json.loads(l) for l in open(f)][1] for f in sys.argv[1:])
for o in a["objects"]:
    assert o.pop("concept").endswith("v.concept") and o.pop("prompt") is None, o
for o in b["objects"]:
    assert o.pop("prompt") == "a cat", o
assert a["objects"] and a["objects"] == b["objects"], (a, b)
PYEOF
    fails 1 "another model" "track with another model's concept" track -m "$B/video_a.sam3" -i "$C/frames" --concept "$C/cat.concept" -o "$C/t3" -q
fi

echo "test_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
