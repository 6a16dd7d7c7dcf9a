#!/bin/sh
# Tests `sam3 track` (examples/cli_track.c) on the tiny video model with synthetic frames (made by
# tests/track_frames.py: 64x48, 5 frames): a folder of PNG frames with clicks, a box, a correction
# and a --mask prompt for an object joining mid-stream (tracks.jsonl: one valid line per frame with
# the documented fields; mask PNGs at frame size, 0/255, box and area those of the PNG; the mask
# prompt's own mask; overlays); the same frames as YUV4MPEG2 4:4:4 and 4:2:0 (odd size) streams on
# stdin give the same results to the bit; a truncated or garbled stream, a prompt for a frame the
# input does not have and a model without memory modules fail with exit 1 and one clear line; bad
# command lines exit 2. -t (text concepts): tracks.jsonl with a prompt per object; -t with clicked
# objects: each kind as in a run of its own; --hotstart (clip mode) as the API's clip mode.
# Overlays show the clicks and a "lost" tag; --format coco gives the PNG run's masks as RLE;
# --video-out writes the overlays as a YUV4MPEG2 stream (to a file, or to stdout with nothing else).
#   tests/test_track.sh [BUILD_DIR]     (needs BUILD_DIR/sam3, BUILD_DIR/video_a.sam3, BUILD_DIR/tiny_a.sam3,
#                                        BUILD_DIR/test_concept)
# Prints "test_track: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" # see tests/test_cli.sh
SAM3=$B/sam3
MODEL=$B/video_a.sam3
T=$B/test_track
rm -rf "$T" && mkdir -p "$T" || exit 1
"$PY" tests/track_frames.py make "$T/a" 64 48 5 444 || exit 1
"$PY" tests/track_frames.py make "$T/b" 63 47 5 420 || exit 1
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# run WANT_RC NAME ARGS...: sam3 track ARGS (stdin from $IN, /dev/null by default), checks the exit
# code; stdout/stderr in $T/out, $T/err
run() {
    want=$1
    name=$2
    shift 2
    "$SAM3" track "$@" <"${IN:-/dev/null}" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, expected $want; stderr: $(head -c 300 "$T/err")"; fi
    return 0
}

# fails WANT_RC WORD NAME ARGS...: exactly one line on stderr, "sam3 track: ...", containing WORD
fails() {
    want=$1
    word=$2
    name=$3
    shift 3
    run "$want" "$name" "$@" -q
    if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q '^sam3 track: ' "$T/err" && grep -qi -- "$word" "$T/err"; then
        ok
    else
        bad "$name: wanted one line on stderr mentioning '$word', got: $(cat "$T/err")"
    fi
}

# tracks NAME OUTDIR FRAMES IDS: OUTDIR is consistent (tests/track_frames.py check); sets $visible
tracks() {
    if visible=$("$PY" tests/track_frames.py check "$2" "$3" "$4" 2>&1); then ok; else bad "$1: $visible"; visible=0; fi
}

# Objects 1 (a click) and 2 (a box) from frame 0; object 3 joins on frame 2 with a mask; object 1
# is corrected on frame 3 (a click and a negative click).
PROMPTS="--point 0:1:16,24 --box 0:2:30,10,60,40 --mask 2:3:$T/a/mask.png --point 3:1:22,24 --point 3:1:5,5,neg"
IDS="1,2;1,2;1,2,3;1,2,3;1,2,3"

# --- a folder of PNG frames ---
run 0 "PNG folder" -m "$MODEL" -i "$T/a/png" -o "$T/png" $PROMPTS --overlay --threads 2
tracks "PNG folder" "$T/png" "$T/a/png" "$IDS"
[ "$visible" -ge 3 ] && ok || bad "PNG folder: only $visible non-empty masks: the box/area checks need some"
# progress: a line a frame, "k/N NAME  X.X img/s  ETA m:ss"; -v adds each frame's objects
[ "$(grep -c '^[1-5]/5 f00[0-4]\.png  [0-9]*\.[0-9] img/s  ETA [0-9]*:[0-5][0-9]$' "$T/err")" -eq 5 ] &&
    ! grep -q '^sam3 track: frame ' "$T/err" && ok || bad "PNG folder: not one progress line per frame on stderr: $(cat "$T/err")"
run 0 "PNG folder, -v" -m "$MODEL" -i "$T/a/png" -o "$T/png_v" $PROMPTS --threads 2 -v
[ "$(grep -c '^sam3 track: frame [0-9]: 64x48, [23] objects ([0-9] visible), [0-9]* ms (image encoder [0-9]* ms, tracking [0-9]* ms)$' "$T/err")" -eq 5 ] &&
    [ "$(grep -c '^[1-5]/5 f00[0-4]\.png  [0-9]*\.[0-9] img/s  ETA ' "$T/err")" -eq 5 ] && ok ||
    bad "PNG folder, -v: not a detailed line and a progress line per frame on stderr: $(cat "$T/err")"
grep -q "^sam3 track: 5 frames in .*tracks.jsonl" "$T/err" && ok || bad "PNG folder: no summary line: $(tail -n 1 "$T/err")"
"$PY" tests/track_frames.py overlays "$T/png" "$T/a/png" && ok || bad "--overlay: overlays/ wrong"
msg=$("$PY" tests/track_frames.py marks "$T/png" "0:16,24:pos;3:22,24:pos;3:5,5:neg") && ok || bad "--overlay: clicks or lost tag: $msg"

# --format coco and --video-out: the same objects, each non-empty mask as RLE (decoded, pixel for
# pixel the PNG run's), no masks/; the video's frames the overlays
run 0 "--format coco --video-out FILE" -m "$MODEL" -i "$T/a/png" -o "$T/coco" $PROMPTS --overlay --threads 2 -q --format coco \
    --video-out "$T/coco.y4m"
msg=$("$PY" tests/track_frames.py coco "$T/png" "$T/coco" 2>&1) && ok || bad "--format coco: $msg"
[ "$msg" -ge 3 ] 2>/dev/null && ok || bad "--format coco: only '$msg' masks compared"
for f in 0 1 2 3 4; do cmp -s "$T/png/overlays/0000$f.png" "$T/coco/overlays/0000$f.png" || bad "--format coco: overlay $f differs"; done
msg=$("$PY" tests/track_frames.py y4m "$T/coco.y4m" "$T/coco" 64 48 5 25:1 2>&1) && ok || bad "--video-out FILE: $msg"
# to stdout from a 63x47 4:2:0 stream at 30000/1001 a second: only the stream on stdout, at that rate
sed '1s/F25:1/F30000:1001/' "$T/b/stream.y4m" >"$T/b30.y4m" || exit 1
IN=$T/b30.y4m run 0 "--video-out -" -m "$MODEL" -i - -o "$T/vo" $PROMPTS --overlay --video-out - --threads 2
msg=$("$PY" tests/track_frames.py y4m "$T/out" "$T/vo" 63 47 5 30000:1001 2>&1) && ok || bad "--video-out -, 63x47: $msg"
[ "$(grep -c '^[0-9]*/? frame ' "$T/err")" -eq 5 ] && ok || bad "--video-out -: progress not on stderr: $(cat "$T/err")"
if command -v ffprobe >/dev/null 2>&1; then
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height -of csv=p=0 "$T/coco.y4m")
    [ "$n" = "64,48,5" ] && ok || bad "ffprobe reads --video-out as '$n', expected 64,48,5"
else
    echo "test_track: ffprobe not installed: the --video-out stream is checked by tests/track_frames.py alone"
fi
# the --mask prompt: object 3 on frame 2 is that mask (through the model's 4x-smaller grid and back)
"$PY" - "$T/png" "$T/a/mask.png" <<'EOF' && ok || bad "--mask prompt: object 3's mask on frame 2 is not the prompt's"
import json, sys
sys.path.insert(0, "tests")
import cli_images
t = [json.loads(l) for l in open(sys.argv[1] + "/tracks.jsonl")][1:][2]
o = [o for o in t["objects"] if o["id"] == 3][0]
a = cli_images.read_png(sys.argv[2])[:, :, 0] > 0
b = cli_images.read_png(sys.argv[1] + "/" + o["mask"])[:, :, 0] > 0
iou = (a & b).sum() / (a | b).sum()
assert o["object_score_logit"] > 0 and iou >= 0.95, (o, iou)
EOF
run 0 "-q" -m "$MODEL" -i "$T/a/png" -o "$T/quiet" $PROMPTS -q --threads 1
[ ! -s "$T/out" ] && [ ! -s "$T/err" ] && ok || bad "-q printed: $(cat "$T/out" "$T/err")"
"$PY" tests/track_frames.py same "$T/png" "$T/quiet" && ok || bad "--threads 1 changed the results"
run 0 "--threads 4" -m "$MODEL" -i "$T/a/png" -o "$T/four" $PROMPTS -q --threads 4
"$PY" tests/track_frames.py same "$T/png" "$T/four" && ok || bad "--threads 4 changed the results"

# --precision bf16: the same objects on every frame (the masks may differ by bf16 rounding)
run 0 "--precision bf16" -m "$MODEL" -i "$T/a/png" -o "$T/bf16" $PROMPTS -q --precision bf16
tracks "--precision bf16" "$T/bf16" "$T/a/png" "$IDS"
fails 2 "precision" "--precision f16" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --precision f16

# rerun into a used folder with fewer frames and objects: the earlier run's masks and overlays go
# (the ones its tracks.jsonl lists), other files stay; files that are not sam3's need --force
cp -R "$T/png" "$T/rerun" && mkdir -p "$T/two" && cp "$T/a/png/f000.png" "$T/a/png/f001.png" "$T/two/" &&
    printf 'x' >"$T/rerun/masks/notes.png" && printf 'x' >"$T/rerun/masks/00001_1.png.bak" || exit 1
fails 1 "neither empty nor an earlier sam3 output" "rerun into a folder with other files, no --force" -m "$MODEL" -i "$T/two" -o "$T/rerun" --point 0:1:16,24
[ -f "$T/rerun/masks/00004_3.png" ] && ok || bad "a refused rerun changed the folder"
run 0 "rerun into a used folder" -m "$MODEL" -i "$T/two" -o "$T/rerun" --point 0:1:16,24 --force -q
tracks "rerun into a used folder" "$T/rerun" "$T/two" "1;1"
[ "$(ls "$T/rerun/masks" | tr '\n' ' ')" = "00000_1.png 00001_1.png 00001_1.png.bak notes.png " ] && [ -z "$(ls "$T/rerun/overlays")" ] && ok ||
    bad "rerun into a used folder: stale or missing files: $(ls "$T/rerun/masks" "$T/rerun/overlays" | tr '\n' ' ')"

# --- the same frames as YUV4MPEG2 on stdin: the same bytes in, so the same results out ---
IN=$T/a/stream.y4m run 0 "Y4M 4:4:4" -m "$MODEL" -i - -o "$T/y444" $PROMPTS --threads 2
[ "$(grep -c '^[1-5]/? frame [0-4]  [0-9]*\.[0-9] img/s$' "$T/err")" -eq 5 ] && ok || bad "Y4M: progress lines (no ETA): $(cat "$T/err")"
tracks "Y4M 4:4:4" "$T/y444" 5 "$IDS"
"$PY" tests/track_frames.py same "$T/png" "$T/y444" && ok || bad "Y4M 4:4:4 differs from its PNG frames"
run 0 "PNG folder, 63x47" -m "$MODEL" -i "$T/b/png" -o "$T/png420" $PROMPTS --threads 2 -q
tracks "PNG folder, 63x47" "$T/png420" "$T/b/png" "$IDS"
IN=$T/b/stream.y4m run 0 "Y4M 4:2:0, 63x47" -m "$MODEL" -i - -o "$T/y420" $PROMPTS --threads 2 -q
tracks "Y4M 4:2:0" "$T/y420" 5 "$IDS"
"$PY" tests/track_frames.py same "$T/png420" "$T/y420" && ok || bad "Y4M 4:2:0 differs from its PNG frames"

# --- failures: exit 1, one line ---
mkdir -p "$T/mixed" && cp "$T/a/png/f000.png" "$T/mixed/f000.png" && cp "$T/b/png/f001.png" "$T/mixed/f001.png" || exit 1
fails 1 "one size" "--video-out with frames of two sizes" -m "$MODEL" -i "$T/mixed" -o "$T/o" --point 0:1:16,24 --video-out "$T/mixed.y4m"
fails 1 "$T/none/v.y4m" "--video-out into a missing folder" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --video-out "$T/none/v.y4m"
[ ! -e "$T/o/tracks.jsonl" ] && ok || bad "--video-out into a missing folder: tracks.jsonl written"
fails 1 "cannot create" "--video-out a folder" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --video-out "$T/a"
if [ -c /dev/full ] && [ -w /dev/full ]; then # (a container may have a plain file there)
    fails 1 "video-out" "--video-out /dev/full" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --video-out /dev/full
fi
head -c 30000 "$T/a/stream.y4m" >"$T/cut.y4m" # 3 frames of 9222 bytes and part of the 4th
IN=$T/cut.y4m fails 1 "truncated in frame 3" "truncated Y4M" -m "$MODEL" -i - -o "$T/cut" --point 0:1:16,24
[ "$(wc -l <"$T/cut/tracks.jsonl")" -eq 4 ] && ok || bad "truncated Y4M: the generator line and the 3 whole frames are not in tracks.jsonl"
printf 'P6 64 48 255\n' >"$T/notes.y4m"
IN=$T/notes.y4m fails 1 "not a YUV4MPEG2" "not a Y4M stream" -m "$MODEL" -i - -o "$T/o" --point 0:1:16,24
printf 'YUV4MPEG2 W64 H48 Cmono\n' >"$T/mono.y4m"
IN=$T/mono.y4m fails 1 "mono" "Y4M in an unsupported colour space" -m "$MODEL" -i - -o "$T/o" --point 0:1:16,24
printf 'YUV4MPEG2 W64 H99999999999 C444\n' >"$T/huge.y4m"
IN=$T/huge.y4m fails 1 "size" "Y4M with an absurd height" -m "$MODEL" -i - -o "$T/o" --point 0:1:16,24
fails 1 "only 5 frames" "a prompt for frame 5 of 5" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --box 5:2:1,1,9,9
IN=$T/a/stream.y4m fails 1 "only 5 frames" "a prompt for frame 7 of a 5-frame stream" -m "$MODEL" -i - -o "$T/o" --point 7:1:16,24
fails 1 "memory modules" "a model without memory modules" -m "$B/tiny_a.sam3" -i "$T/a/png" -o "$T/o" --point 0:1:16,24
fails 1 "mask.png" "a missing --mask PNG" -m "$MODEL" -i "$T/a/png" -o "$T/o" --mask 0:1:"$T/none/mask.png"
fails 1 "folder" "a missing input folder" -m "$MODEL" -i "$T/none" -o "$T/o" --point 0:1:16,24
fails 1 "$T/none.sam3" "a missing model" -m "$T/none.sam3" -i "$T/a/png" -o "$T/o" --point 0:1:16,24
printf 'keep' >"$T/keep.y4m" || exit 1
fails 1 "$T/none.sam3" "a missing model, --video-out" -m "$T/none.sam3" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --video-out "$T/keep.y4m"
[ "$(cat "$T/keep.y4m")" = keep ] && ok || bad "a run that failed before its first frame changed the --video-out file"
many=""
for i in $(seq 1 65); do many="$many --point 0:$i:5,5"; done
fails 2 "at most 64" "65 objects (the library's limit)" -m "$MODEL" -i "$T/a/png" -o "$T/o" $many
mkdir -p "$T/junk" && printf 'not an image' >"$T/junk/f000.png"
fails 1 "f000.png" "an unreadable frame" -m "$MODEL" -i "$T/junk" -o "$T/o" --point 0:1:16,24

# --- -t: every instance of two text concepts (--threshold low enough for the random weights to
# find some): one line per frame, each object with its prompt, scores, a mask PNG matching its
# area, and one prompt per id over the whole stream ---
run 0 "-t" -m "$MODEL" -i "$T/a/png" -o "$T/c" -t "a cat" -t "the red car" --threshold 0.3 -q
if msg=$("$PY" - "$T/c" 5 <<'PYEOF' 2>&1
import json, os, sys, zlib
d, n = sys.argv[1], int(sys.argv[2])
lines = open(os.path.join(d, "tracks.jsonl")).read().splitlines()
assert len(lines) == n + 1, f"{len(lines)} lines for {n} frames"
seen, total = {}, 0
for f, line in enumerate(lines[1:]):
    fr = json.loads(line)
    assert fr["frame"] == f, fr
    for o in fr["objects"]:
        assert o["prompt"] in ("a cat", "the red car"), o
        assert seen.setdefault(o["id"], o["prompt"]) == o["prompt"], f"object {o['id']} changed prompt"
        assert 0 < o["score"] < 1 and 0 < o["tracker_score"] < 1 and o["area"] > 0, o
        png = open(os.path.join(d, o["mask"]), "rb").read()
        assert png[:8] == b"\x89PNG\r\n\x1a\n", o["mask"]
        total += 1
assert total > 0 and len(seen) > 1, f"{total} objects, ids {sorted(seen)}"
print(total)
PYEOF
); then ok; else bad "-t: $msg"; fi
# -t with clicked objects in one run: its clicked objects are the clicks-only run's and its concept
# objects the -t-only run's (ids from 1 + the largest clicked id, 3 here), mask for mask
run 0 "-t with clicks" -m "$MODEL" -i "$T/a/png" -o "$T/mix" $PROMPTS -t "a cat" -t "the red car" --threshold 0.3 --threads 2 -q
if msg=$("$PY" - "$T/mix" "$T/png" "$T/c" 4 <<'PYEOF' 2>&1
import json, os, sys
mix, clk, con, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = lambda d: [json.loads(l) for l in open(os.path.join(d, "tracks.jsonl"))][1:]
mask = lambda d, o: open(os.path.join(d, o["mask"]), "rb").read()
n_clk = n_con = 0
for fm, fc, ft in zip(lines(mix), lines(clk), lines(con), strict=True):
    mo = fm["objects"]
    c = [o for o in mo if "object_score_logit" in o]
    t = [o for o in mo if "prompt" in o]
    assert len(c) + len(t) == len(mo) and mo == c + t, fm
    assert c == fc["objects"], (fm["frame"], c, fc["objects"])
    for a in c:
        assert mask(mix, a) == mask(clk, a), a
    assert len(t) == len(ft["objects"]), (fm["frame"], t, ft["objects"])
    for a, b in zip(t, ft["objects"]):
        assert a["id"] == b["id"] + k and a["mask"].endswith(f"_{a['id']}.png"), (a, b)
        assert {x: a[x] for x in a if x not in ("id", "mask")} == {x: b[x] for x in b if x not in ("id", "mask")}, (a, b)
        assert mask(mix, a) == mask(con, b), (a, b)
    n_clk += len(c)
    n_con += len(t)
assert n_clk > 0 and n_con > 0, (n_clk, n_con)
print(n_clk, n_con)
PYEOF
); then ok; else bad "-t with clicks: $msg"; fi
# --hotstart 3 (clip mode, frames held back 2 pushes, then flushed) with clicked objects: the
# clicked objects as above, the concept objects what the API's clip mode gives on these frames
# (test_concept --frame prints them)
run 0 "-t --hotstart 3 with clicks" -m "$MODEL" -i "$T/a/png" -o "$T/clip" $PROMPTS -t "a cat" -t "the red car" --threshold 0.3 --hotstart 3 --threads 2 -v
grep -q "^sam3 track: frame 0: 64x48, 2 objects (0 visible), held back, " "$T/err" && grep -q "^sam3 track: frame 2: .*, frame 0 out (" "$T/err" && ok ||
    bad "--hotstart 3: progress lines: $(cat "$T/err")"
# like_api NAME DIR CLICKDIR K TEXTS TEST_CONCEPT_ARGS...: DIR's clicked objects are CLICKDIR's (- for
# none), its concept objects (ids +K; prompts TEXTS, a JSON list) those of test_concept --frame on
# the same frames with TEST_CONCEPT_ARGS
like_api() {
    name=$1 dir=$2 clk=$3 k=$4 texts=$5
    shift 5
    if "$B/test_concept" --model "$MODEL" $(for f in "$T"/a/png/*.png; do printf -- '--frame %s ' "$f"; done) "$@" >"$T/api.txt" &&
        msg=$("$PY" - "$dir" "$clk" "$T/api.txt" "$k" "$texts" <<'PYEOF' 2>&1
import json, os, sys, zlib
sys.path.insert(0, "tests")
import cli_images
d, clk, api, k, texts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
lines = lambda d: [json.loads(l) for l in open(os.path.join(d, "tracks.jsonl"))][1:]
want = {}
for l in open(api):
    f, i, p, area, sc, ts, x0, y0, x1, y1, crc = l.split()
    want.setdefault(int(f), []).append((int(i) + k, texts[int(p)], int(area), float(sc), float(ts), [float(x0), float(y0), float(x1), float(y1)], int(crc)))
n = 0
for f, fm in enumerate(lines(d)):
    c = [o for o in fm["objects"] if "object_score_logit" in o]
    t = [o for o in fm["objects"] if "prompt" in o]
    assert c == (lines(clk)[f]["objects"] if clk != "-" else []), (fm["frame"], c)
    w = want.get(fm["frame"], [])
    assert [o["id"] for o in t] == [x[0] for x in w], (fm["frame"], t, w)
    for o, x in zip(t, w):
        m = (cli_images.read_png(os.path.join(d, o["mask"]))[:, :, 0] > 0).astype("uint8")
        assert (o["prompt"], o["area"], o["box"]) == (x[1], x[2], x[5]) and abs(o["score"] - x[3]) < 2e-6 and abs(o["tracker_score"] - x[4]) < 2e-6, (o, x)
        assert zlib.crc32(m.tobytes()) == x[6], (o, "mask differs")
        n += 1
assert n > 0 and len(lines(d)) == 5, n
print(n)
PYEOF
        ); then ok; else bad "$name: ${msg:-test_concept --frame failed}"; fi
}
like_api "--hotstart 3" "$T/clip" "$T/png" 4 '["a cat", "the red car"]' --text "a cat" --text "the red car" --hotstart 3 --threshold 0.3 \
    --threads 2
# the same run with --format coco and --video-out: the frames held back reach the video in order
run 0 "-t --hotstart 3 --format coco --video-out" -m "$MODEL" -i "$T/a/png" -o "$T/clipc" $PROMPTS -t "a cat" -t "the red car" \
    --threshold 0.3 --hotstart 3 --threads 2 -q --format coco --overlay --video-out "$T/clip.y4m"
msg=$("$PY" tests/track_frames.py coco "$T/clip" "$T/clipc" 2>&1) && ok || bad "-t --format coco: $msg"
msg=$("$PY" tests/track_frames.py y4m "$T/clip.y4m" "$T/clipc" 64 48 5 25:1 2>&1) && ok || bad "-t --video-out: $msg"
msg=$("$PY" tests/track_frames.py marks "$T/clipc" "0:16,24:pos;3:22,24:pos;3:5,5:neg" 2>&1) && ok || bad "-t --overlay: clicks or lost tag: $msg"
# box exemplars (--concept-box): a prompt of a box only (before any -t), and a text with a positive
# and a negative box, as the API's concept tracker given the same prompts
run 0 "--concept-box" -m "$MODEL" -i "$T/a/png" -o "$T/ex" --concept-box 10,8,40,30 -t "a cat" --concept-box 10,8,40,30 \
    --concept-box 40,20,60,44,neg --threshold 0.3 -q
like_api "--concept-box" "$T/ex" - 0 '[null, "a cat"]' --box 10,8,40,30,1 --text "a cat" --box 10,8,40,30,1 --box 40,20,60,44,0 --threshold 0.3
grep -q '"prompt": null' "$T/ex/tracks.jsonl" && grep -q '"prompt": "a cat"' "$T/ex/tracks.jsonl" && ok || bad "--concept-box: not both prompts found objects"
fails 2 "x0 < x1" "an inverted --concept-box" -m "$MODEL" -i "$T/a/png" -o "$T/o" -t "a cat" --concept-box 30,10,20,40
fails 2 "go with -t" "--clip without -t" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:5,5 --clip
fails 2 "hotstart" "--hotstart 0" -m "$MODEL" -i "$T/a/png" -o "$T/o" -t "a cat" --hotstart 0
fails 2 "empty" "an empty -t" -m "$MODEL" -i "$T/a/png" -o "$T/o" -t ""
fails 2 "goes with -t" "--threshold without -t" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:5,5 --threshold 0.3

# --- bad command lines: exit 2, one line ---
fails 2 "F:ID" "--point 0:1" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1
fails 2 "--box" "--box with 3 numbers" -m "$MODEL" -i "$T/a/png" -o "$T/o" --box 0:1:1,2,3
fails 2 "mask" "a mask and a click for one F:ID" -m "$MODEL" -i "$T/a/png" -o "$T/o" --mask 0:1:"$T/a/mask.png" --point 0:1:5,5
fails 2 "numbers" "a NaN click" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:nan,5
fails 2 "x0 < x1" "an inverted box" -m "$MODEL" -i "$T/a/png" -o "$T/o" --box 0:1:30,10,20,40
fails 2 "two boxes" "two boxes for one F:ID" -m "$MODEL" -i "$T/a/png" -o "$T/o" --box 0:1:1,2,3,4 --box 0:1:1,2,3,5
fails 2 "frame" "a negative frame" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point -1:1:5,5
fails 2 "ID" "a non-numeric id" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:cat:5,5
fails 2 "no objects" "no prompt" -m "$MODEL" -i "$T/a/png" -o "$T/o"
fails 2 "-o" "no output" -m "$MODEL" -i "$T/a/png" --point 0:1:5,5
fails 2 "png or coco" "--format jpeg" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:5,5 --format jpeg
fails 2 "--video-out" "an empty --video-out" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:5,5 --video-out ""
fails 2 "unknown option" "an unknown option" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:5,5 --frobnicate
# --image-size: the model at a 70-pixel input (grid 5: windows padded, position grid cropped,
# memory RoPE and mask downsampler on 5x5): outputs consistent and not those of the file's size
run 0 "--image-size 70" -m "$MODEL" -i "$T/a/png" -o "$T/s70" $PROMPTS --image-size 70 --threads 2 -q
tracks "--image-size 70" "$T/s70" "$T/a/png" "$IDS"
cmp -s "$T/s70/tracks.jsonl" "$T/png/tracks.jsonl" && bad "--image-size 70: the tracks of the file's size" || ok
fails 1 "image_size 71" "--image-size 71 (no multiple of the patch)" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --image-size 71
fails 2 "image-size" "--image-size x" -m "$MODEL" -i "$T/a/png" -o "$T/o" --point 0:1:16,24 --image-size x
run 0 "--help" --help
grep -q "usage: sam3 track" "$T/out" && ok || bad "--help: no usage line"

echo "test_track: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
