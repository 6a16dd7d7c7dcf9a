#!/bin/sh
# The command-line tool against the findings of issue 36, one section a class: a link planted as
# a dataset's per-image folder; endless and oversized inputs (/dev/zero, /dev/urandom, huge Y4M
# frames and headers, long list lines) ending within a time and memory bound; `track -t` on an
# empty stream; `sam3 merge` on edited, missing and foreign shards; a second writer of one OUTDIR
# and the temporary files of a killed run; Y4M full range and CRLF headers; prompts checked before
# the first frame; a user's own mask file taken for sam3's. Every run must end with the exit code
# stated (1 failure, 2 bad command line) and one line on stderr naming the problem.
#   tests/test_hardening.sh [BUILD_DIR]   (needs BUILD_DIR/sam3, tiny_a.sam3 and video_a.sam3)
# LIMIT_KB (default 1500000): the address-space limit (ulimit -v) of the endless-input runs;
# LIMIT_KB=0 (sanitizer builds, which reserve terabytes of address space) runs them without one.
# Prints "test_hardening: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
SAM3=$(cd "$B" && pwd)/sam3
MODEL=$(cd "$B" && pwd)/tiny_a.sam3
VIDEO=$(cd "$B" && pwd)/video_a.sam3
LIMIT_KB=${LIMIT_KB:-1500000}
T=$B/test_hardening
rm -rf "$T" && mkdir -p "$T" || exit 1
T=$(cd "$T" && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# run WANT NAME ARGS... : exit status WANT; on failure (WANT != 0) exactly one line on stderr
run() {
    want=$1
    name=$2
    shift 2
    "$SAM3" "$@" >"$T/out" 2>"$T/err" </dev/null
    got=$?
    if [ "$got" -ne "$want" ]; then
        bad "$name: exit $got, expected $want; stderr: $(tail -c 400 "$T/err")"
    elif [ "$want" -ne 0 ] && [ "$(grep -c . "$T/err")" -ne 1 ]; then
        bad "$name: wanted one line on stderr, got: $(head -c 600 "$T/err")"
    else
        ok
    fi
    return 0
}
# runds WANT NAME ARGS... : a dataset run (a line per failed image and a summary): exit status only
runds() {
    want=$1
    name=$2
    shift 2
    "$SAM3" "$@" >"$T/out" 2>"$T/err" </dev/null
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, expected $want; stderr: $(tail -c 400 "$T/err")"; fi
    return 0
}
# bounded WANT NAME STDIN ARGS... : as run, with stdin from STDIN, within 20 s and LIMIT_KB of
# address space (time and memory bounds of the endless inputs)
bounded() {
    want=$1
    name=$2
    in=$3
    shift 3
    t0=$(date +%s)
    if [ "$LIMIT_KB" != 0 ]; then
        (ulimit -v "$LIMIT_KB" && exec timeout 20 "$SAM3" "$@" <"$in" >"$T/out" 2>"$T/err")
    else
        timeout 20 "$SAM3" "$@" <"$in" >"$T/out" 2>"$T/err"
    fi
    got=$?
    t1=$(date +%s)
    if [ "$got" -ne "$want" ]; then
        bad "$name: exit $got (124: still running after 20 s), expected $want, in $((t1 - t0)) s; stderr: $(tail -c 400 "$T/err")"
    elif [ "$(grep -c . "$T/err")" -ne 1 ]; then
        bad "$name: wanted one line on stderr, got: $(head -c 600 "$T/err")"
    else
        ok
    fi
    return 0
}
has() { # has NAME TEXT : the last stderr holds TEXT
    if grep -q -- "$2" "$T/err"; then ok; else bad "$1: stderr lacks '$2': $(head -c 400 "$T/err")"; fi
}

"$PY" tests/dataset_check.py make "$T/imgs" >/dev/null || exit 1
rm -f "$T"/imgs/*.txt "$T"/imgs/*.md 2>/dev/null
one=$(ls "$T/imgs" | grep '\.png$' | head -1)
stem=${one%.png}
SEG="segment -m $MODEL --threshold 0 --threads 1 -q"

# --- 1. a link planted as OUTDIR/STEM: refused, nothing written through it ---
mkdir -p "$T/victim" "$T/o1"
echo keep >"$T/victim/results.json"
ln -s "$T/victim" "$T/o1/$stem"
runds 1 "link at OUTDIR/STEM" $SEG -i "$T/imgs" -t x -o "$T/o1"
has "link at OUTDIR/STEM" "link"
runds 1 "link at OUTDIR/STEM, --force" $SEG -i "$T/imgs" -t x -o "$T/o1" --force
[ "$(ls "$T/victim")" = "results.json" ] && [ "$(cat "$T/victim/results.json")" = keep ] && ok || bad "wrote through the link: $(ls "$T/victim")"
printf '%s\n' "$T/imgs/$one" >"$T/list.txt"
runds 1 "link at OUTDIR/STEM, @LIST" $SEG -i "@$T/list.txt" -t x -o "$T/o1" --force
[ "$(ls "$T/victim")" = "results.json" ] && ok || bad "@LIST wrote through the link: $(ls "$T/victim")"

# --- 2. every input bounded: endless and oversized inputs end within 20 s and LIMIT_KB ---
bounded 1 "-i /dev/zero" /dev/null $SEG -i /dev/zero -t x -o "$T/o2"
has "-i /dev/zero" "not a supported format"
bounded 1 "-i @/dev/zero" /dev/null $SEG -i @/dev/zero -t x -o "$T/o2"
bounded 1 "-i @/dev/urandom" /dev/null $SEG -i @/dev/urandom -t x -o "$T/o2"
bounded 1 "track -i - </dev/zero" /dev/zero track -m "$VIDEO" -i - -o "$T/o2t" --point 0:1:3,3 -q
has "track -i - </dev/zero" "not a YUV4MPEG2 stream"
bounded 1 "track -i - </dev/urandom" /dev/urandom track -m "$VIDEO" -i - -o "$T/o2t" -t x -q
# a valid header, then endless zeros: no FRAME line
printf 'YUV4MPEG2 W64 H48 C420\n' >"$T/head.y4m"
cat "$T/head.y4m" /dev/zero | (if [ "$LIMIT_KB" != 0 ]; then ulimit -v "$LIMIT_KB"; fi; timeout 20 "$SAM3" track -m "$VIDEO" -i - -o "$T/o2t" --point 0:1:3,3 -q 2>"$T/err")
[ $? -eq 1 ] && grep -q "expected a FRAME line" "$T/err" && ok || bad "header then zeros: $(head -c 300 "$T/err")"
# a header without an end of line, a frame over --max-pixels (16384 x 8192: 1 GB a frame)
printf 'YUV4MPEG2 W64 H48 ' >"$T/nolf.y4m" && head -c 100000 /dev/zero | tr '\0' 'X' >>"$T/nolf.y4m"
bounded 1 "Y4M header without LF" "$T/nolf.y4m" track -m "$VIDEO" -i - -o "$T/o2t" --point 0:1:3,3 -q
has "Y4M header without LF" "longer than 4096"
printf 'YUV4MPEG2 W16384 H8192 C420\nFRAME\n' >"$T/big.y4m"
bounded 1 "Y4M 16384x8192" "$T/big.y4m" track -m "$VIDEO" -i - -o "$T/o2t" --point 0:1:3,3 -q
has "Y4M 16384x8192" "pixel budget"
bounded 1 "Y4M over --max-pixels" "$T/head.y4m" track -m "$VIDEO" -i - -o "$T/o2t" --point 0:1:3,3 -q --max-pixels 3000
# a list line without an end, longer than a path can be
head -c 100000 /dev/zero | tr '\0' 'a' >"$T/longline.txt"
bounded 1 "list line of 100000 bytes" /dev/null $SEG -i "@$T/longline.txt" -t x -o "$T/o2"
has "list line of 100000 bytes" "longer than"
# paths, then a NUL: refused after some were read (the list read so far is freed: make asan)
printf 'a.png\nb.png\n\000\n' >"$T/nul.txt"
bounded 1 "list with a NUL after paths" /dev/null $SEG -i "@$T/nul.txt" -t x -o "$T/o2"
has "list with a NUL after paths" "NUL byte"
run 1 "-i @FOLDER" $SEG -i "@$T/imgs" -t x -o "$T/o2"
has "-i @FOLDER" "without @"

# --- 3. track -t on a stream without frames: no false success ---
run 1 "track -t, no frames" track -m "$VIDEO" -i - -o "$T/o3" -t x -q
"$SAM3" track -m "$VIDEO" -i - -o "$T/o3" -t x -q <"$T/head.y4m" 2>"$T/err"
[ $? -eq 1 ] && grep -q "no frames" "$T/err" && [ ! -e "$T/o3/tracks.jsonl" ] && ok || bad "track -t, header only: $(cat "$T/err")"

# --- 9. Y4M colours: full range honoured; CR LF named ---
printf 'YUV4MPEG2 W2 H2 C444 XCOLORRANGE=FULL\nFRAME\n\310\310\200\200\200\240\200\240\200\200\200\200' >"$T/full.y4m"
[ "$("$B/fuzz_y4m_replay" --dump "$T/full.y4m" | tr '\n' ' ')" = "200 200 200 200 189 255 128 128 128 128 117 185 " ] && ok ||
    bad "XCOLORRANGE=FULL: $("$B/fuzz_y4m_replay" --dump "$T/full.y4m" | tr '\n' ' ')"
printf 'YUV4MPEG2 W2 H2 C444\nFRAME\n\310\310\200\200\200\240\200\240\200\200\200\200' >"$T/limited.y4m"
[ "$("$B/fuzz_y4m_replay" --dump "$T/limited.y4m" | head -1)" = "214 214 214" ] && ok || bad "limited range: $("$B/fuzz_y4m_replay" --dump "$T/limited.y4m" | head -1)"
printf 'YUV4MPEG2 W64 H48 C420\r\n' >"$T/crlf.y4m"
bounded 1 "Y4M CR LF" "$T/crlf.y4m" track -m "$VIDEO" -i - -o "$T/o9" --point 0:1:3,3 -q
has "Y4M CR LF" "CR LF"

# --- 10. prompts checked before the first frame; messages name what is wrong ---
"$PY" tests/track_frames.py make "$T/frames" 64 48 2 420 >/dev/null || exit 1
pts=""
i=0
while [ $i -lt 65 ]; do pts="$pts --point 1:$i:3,3"; i=$((i + 1)); done
# the 65th object is a bad command line (exit 2), refused before the model, the output or a frame
run 2 "65 objects" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" $pts -q
has "65 objects" "at most 64"
[ ! -e "$T/o10" ] && ok || bad "65 objects: the run wrote $T/o10 before refusing"
run 2 "65 objects, a missing model" track -m "$T/none.sam3" -i "$T/none" -o "$T/o10" $pts -q
has "65 objects, a missing model" "at most 64"
pts=""
i=0
while [ $i -lt 64 ]; do pts="$pts --point 1:$i:3,3 --box 0:$((i + 100)):1,1,9,9"; i=$((i + 1)); done
run 2 "128 objects over frames 0 and 1" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" $pts -q
has "128 objects over frames 0 and 1" "128 objects"
echo notapng >"$T/m.png"
run 1 "track --mask not an image" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" --mask 1:1:"$T/m.png" -q
has "track --mask not an image" "the mask"
run 1 "-i @FOLDER" $SEG -i "@$T/frames" -t x -o "$T/o10b"
has "-i @FOLDER" "the list is a folder"
mkdir -p "$T/maskdir"
run 1 "track --mask a folder" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" --mask 1:1:"$T/maskdir" -q
has "track --mask a folder" "cannot read the mask"
# every prompt is checked before the first frame: a bad mask on frame 1 fails with nothing written
run 1 "track, a bad mask on a later frame" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" --point 0:1:3,3 --mask 1:2:"$T/m.png" -q
"$SAM3" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" --point 0:1:3,3 --mask 1:2:"$T/m.png" >/dev/null 2>"$T/err"
[ $? -eq 1 ] && [ ! -e "$T/o10/tracks.jsonl" ] && ! grep -q "frame 0:" "$T/err" && ok || bad "a bad mask on frame 1: frame 0 ran or was written: $(cat "$T/err")"
run 1 "track, a prompt past a folder's end" track -m "$VIDEO" -i "$T/frames/png" -o "$T/o10" --point 0:1:3,3 --point 2:1:3,3 -q
has "track, a prompt past a folder's end" "only 2 frames"

# --- 4. sam3 merge checks what it joins ---
for i in 0 1 2; do runds 0 "shard $i/3" $SEG -i "$T/imgs" -t x --format coco --shard $i/3 -o "$T/m/s$i"; done
run 0 "merge of every shard" merge -q -o "$T/m/all.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["images"]) == 5' "$T/m/all.json" && ok || bad "merged file"
run 1 "merge, a shard missing" merge -q -o "$T/m/part.json" "$T/m/s0" "$T/m/s2"
has "merge, a shard missing" "shard 1/3"
[ ! -e "$T/m/part.json" ] && ok || bad "an incomplete merge wrote its output"
run 0 "merge --partial" merge -q --partial -o "$T/m/part.json" "$T/m/s0" "$T/m/s2"
echo "the user's" >"$T/m/all.json.tmp"
run 0 "merge beside a user's OUT.tmp" merge -q -o "$T/m/all.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
[ "$(cat "$T/m/all.json.tmp")" = "the user's" ] && ok || bad "merge removed or changed OUT.tmp"
ls -a "$T/m" | grep -q sam3-tmp && bad "merge left a temporary file" || ok
f=$(ls "$T"/m/s0/*/coco.json | head -1)
cp "$f" "$T/m/orig.json"
sed 's/"image_id": \([0-9]*\)/"image_id": 99/' "$T/m/orig.json" >"$f"
run 1 "merge, a dangling image_id" merge -q -o "$T/m/x.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
has "merge, a dangling image_id" "another image"
sed '0,/"image_id"/s/"image_id": /"image_id": [/' "$T/m/orig.json" >"$f"
run 1 "merge, an annotation that is not JSON" merge -q -o "$T/m/x.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
grep -v '"run": ' "$T/m/orig.json" >"$f"
run 1 "merge, no image count" merge -q -o "$T/m/x.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
head -c 100000 /dev/zero >"$f"
run 1 "merge, zeros" merge -q -o "$T/m/x.json" "$T/m/s0" "$T/m/s1" "$T/m/s2"
[ ! -e "$T/m/x.json" ] && ok || bad "a failed merge wrote its output"
cp "$T/m/orig.json" "$f"

# merge's reader on hostile files (tests/fuzz_merge.c's replay): only the two good seeds parse
rm -rf "$T/mseeds" && "$PY" tests/make_merge_seeds.py "$T/mseeds" && "$B/fuzz_merge_replay" -v "$T/mseeds" >"$T/mv" && ok || bad "merge seeds: $(tail -3 "$T/mv")"
[ "$(grep -c ': ok$' "$T/mv")" -eq 3 ] && grep -q 'good.json: ok' "$T/mv" && grep -q 'no_shard.json: ok' "$T/mv" && grep -q 'no_info.json: ok' "$T/mv" &&
    ok || bad "merge seeds: $(cat "$T/mv")"
"$B/fuzz_merge_replay" "$T"/m/s*/*/coco.json >"$T/mv" && ok || bad "merge replay of real files: $(cat "$T/mv")"

# --- 5. --verify covers every byte; sam3_load checks the small tensors for NaN ---
"$PY" - "$MODEL" "$T" <<'PYEOF' || exit 1
import struct, sys
sys.path.insert(0, "tools")
import numpy as np
import sam3file
src, t = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
n_cfg, cfg_off = struct.unpack_from("<I", b, 24)[0], 128
for i in range(n_cfg):  # the last bit of the first f64 config value (a hyper-parameter)
    e = cfg_off + 64 * i
    if struct.unpack_from("<I", b, e + 48)[0] == 2:
        c = bytearray(b)
        c[e + 56] ^= 1
        open(t + "/cfgbit.sam3", "wb").write(c)
        break
c = bytearray(b)
k = c.find(b"file.checksums.mx64")
c[k + 2] ^= 0x20  # the checksum key hidden by one bit
open(t + "/keybit.sam3", "wb").write(c)
c = bytearray(b)
c[72:80] = bytes(8)
k = c.find(b"file.checksums.mx64")
c[k] ^= 0x20
open(t + "/nosums.sam3", "wb").write(c)  # as an older converter wrote it
f = sam3file.read(src)
name = next(n for n in f.order if n.endswith("layer_norm.bias") or n.endswith("norm.bias"))
_, _, off, _ = f.tensors[name]
c = bytearray(b)
c[off:off + 4] = struct.pack("<f", float("nan"))
open(t + "/nanbias.sam3", "wb").write(c)
PYEOF
run 0 "info --verify, untouched" info -m "$MODEL" --verify
has "info --verify, untouched" "every byte checked"
run 1 "info --verify, a config bit" info -m "$T/cfgbit.sam3" --verify
has "info --verify, a config bit" "header and tables"
run 1 "info --verify, the checksum key hidden" info -m "$T/keybit.sam3" --verify
run 0 "info --verify, no checksums" info -m "$T/nosums.sam3" --verify
has "info --verify, no checksums" "no checksums"
run 1 "a NaN bias, without --verify" info -m "$T/nanbias.sam3"
has "a NaN bias, without --verify" "NaN or infinite"

# --- 8. one writer at a time; leftovers of a killed run removed ---
mkdir -p "$T/o8"
# (python holds the lock itself: flock(1) would leave it with its child after a kill)
"$PY" -c 'import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); time.sleep(30)' "$T/o8" &
lockpid=$!
sleep 1
run 1 "second writer (one image)" $SEG -i "$T/imgs/$one" -t x -o "$T/o8"
has "second writer (one image)" "another sam3 run"
run 1 "second writer (dataset)" $SEG -i "$T/imgs" -t x -o "$T/o8"
has "second writer (dataset)" "another sam3 run"
kill "$lockpid" 2>/dev/null
wait "$lockpid" 2>/dev/null
run 0 "first run" $SEG -i "$T/imgs/$one" -t x -o "$T/o8"
echo partial >"$T/o8/.sam3-tmp-99999-0"
run 0 "run after a killed one" $SEG -i "$T/imgs/$one" -t x -o "$T/o8"
[ ! -e "$T/o8/.sam3-tmp-99999-0" ] && ok || bad "a killed run's temporary file is still there"

# --- 11. a user's own mask_000.png (no results.json sam3 wrote) is not an earlier output ---
mkdir -p "$T/o11"
echo mine >"$T/o11/mask_000.png"
run 1 "user's mask_000.png" $SEG -i "$T/imgs/$one" -t x -o "$T/o11"
[ "$(cat "$T/o11/mask_000.png")" = mine ] && ok || bad "the user's mask_000.png was replaced"

echo "test_hardening: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
