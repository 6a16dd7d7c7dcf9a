#!/bin/sh
# Runs the embedding examples on the tiny model: examples/embed_min.c (the QUICK START) and
# examples/camera_loop.c (threads, RGBA frames with a stride, several prompts, deadline aborts);
# examples/track_loop.c on the tiny video model (a line per frame, the same objects as `sam3 track`
# on the frames it saved, deadline drops, a refused frame skipped, a model that cannot track);
# checks that no example uses a private name.
#   tests/test_examples.sh [BUILD_DIR]      (default build; needs BUILD_DIR/tiny_a.sam3, BUILD_DIR/video_a.sam3,
#                                            BUILD_DIR/sam3)
# Prints "test_examples: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
# OpenMP threads that spin while waiting make every run ~100x slower when the machine is busy
# with other work (measured: 2 s instead of 20 ms per tiny-model run); tests need not spin.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
MODEL=$B/tiny_a.sam3
IMAGE=tests/data/tiny_a/image.png
T=$B/test_examples
rm -rf "$T" && mkdir -p "$T" || exit 1
pass=0
fail=0

check() { # check NAME COMMAND...: the command must succeed
    name=$1
    shift
    if "$@"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name"
    fi
}

# The examples use sam3.h's public API alone: no private name (sam3__*, SAM3__*) in any of them.
# (examples/sam3_bench.c is also compiled without the implementation, so the compiler checks it.)
private=$(grep -in 'sam3__' examples/*.c | head -n 5)
check "no examples/*.c names a private sam3__ symbol: $private" test -z "$private"

# embed_min: the documented program runs, and rejects a bad command line
"$B/embed_min" "$MODEL" "$IMAGE" "a cat" >"$T/embed.out" 2>"$T/embed.err"
rc=$?
check "embed_min exits 0 on the tiny model (got $rc: $(cat "$T/embed.err"))" test $rc -eq 0
"$B/embed_min" "$MODEL" >/dev/null 2>&1
rc=$?
check "embed_min without an image exits 2 (got $rc)" test $rc -eq 2
"$B/embed_min" "$T/missing.sam3" "$IMAGE" "a cat" >/dev/null 2>&1
rc=$?
check "embed_min with a missing model exits 1 (got $rc)" test $rc -eq 1

# camera_loop: every frame processed with a generous budget
"$B/camera_loop" "$MODEL" --frames 6 --workers 2 >"$T/cam.out" 2>"$T/cam.err"
rc=$?
check "camera_loop exits 0 (got $rc: $(cat "$T/cam.err"))" test $rc -eq 0
check "camera_loop processes 6 of 6 frames: $(tail -n 1 "$T/cam.out")" grep -q "6 processed, 0 dropped at the deadline, 0 failed" "$T/cam.out"
check "camera_loop prints a line per frame" test "$(grep -c '^frame .*image .* ms' "$T/cam.out")" -eq 6

# camera_loop: a budget of 0 ms aborts every frame through the abort callback, cleanly
"$B/camera_loop" "$MODEL" --frames 4 --workers 2 --budget-ms 0 >"$T/abort.out" 2>"$T/abort.err"
rc=$?
check "camera_loop with a 0 ms budget exits 0 (got $rc: $(cat "$T/abort.err"))" test $rc -eq 0
check "camera_loop drops 4 of 4 late frames: $(tail -n 1 "$T/abort.out")" grep -q "0 processed, 4 dropped at the deadline, 0 failed" "$T/abort.out"

# several contexts on several threads give the same results as one
per_frame() { grep '^frame' "$1" | sed -e 's/(worker [0-9]*)//' -e 's/ image [0-9].*//' | sort; }
"$B/camera_loop" "$MODEL" --frames 8 --workers 1 --threads 1 >"$T/w1.out" 2>&1
"$B/camera_loop" "$MODEL" --frames 8 --workers 3 --threads 2 >"$T/w3.out" 2>&1
per_frame "$T/w1.out" >"$T/w1.txt"
per_frame "$T/w3.out" >"$T/w3.txt"
check "camera_loop: 3 workers give the results of 1" cmp -s "$T/w1.txt" "$T/w3.txt"
check "camera_loop: 8 frames compared" test "$(wc -l <"$T/w1.txt")" -eq 8

# track_loop: one click, then a line per frame (box, area, score, time) ...
VIDEO=$B/video_a.sam3
mkdir -p "$T/frames"
"$B/track_loop" "$VIDEO" --frames 8 --threads 2 --save-frames "$T/frames" >"$T/trk.out" 2>"$T/trk.err"
rc=$?
check "track_loop exits 0 (got $rc: $(cat "$T/trk.err"))" test $rc -eq 0
check "track_loop prints a line per frame" test "$(grep -c '^frame .*: object 1 .*score .*ms, tracker memory' "$T/trk.out")" -eq 8
check "track_loop tracks 8 of 8 frames: $(tail -n 1 "$T/trk.out")" grep -q "8 tracked (.*), 0 dropped at the deadline, 0 failed; .* ms a frame" "$T/trk.out"
# ... and finds what `sam3 track` finds on the frames it saved (scores as both print them, %.6g;
# box, area and the target, the centroid of the mask PNG, where visible)
click=$(sed -n 's/.*click at \([0-9]*,[0-9]*\) .*/\1/p' "$T/trk.out")
# the example saves binary PPMs (no image library); sam3 reads JPEG and PNG: the same pixels as PNG
mkdir -p "$T/frames_png"
"${PYTHON:-/usr/bin/python3}" - "$T/frames" "$T/frames_png" <<'PYEOF'
import os, sys
import numpy as np
sys.path.insert(0, "tests")
import cli_images
for n in sorted(os.listdir(sys.argv[1])):
    d = open(os.path.join(sys.argv[1], n), "rb").read()
    parts = d.split(maxsplit=4)  # P6 W H 255 pixels
    w, h = int(parts[1]), int(parts[2])
    px = np.frombuffer(d[len(d) - w * h * 3:], np.uint8).reshape(h, w, 3)
    open(os.path.join(sys.argv[2], n[:-4] + ".png"), "wb").write(cli_images.png_bytes(px))
PYEOF
"$B/sam3" track -m "$VIDEO" -i "$T/frames_png" -o "$T/trk_cli" --point "0:1:$click" --threads 2 -q 2>"$T/trk_cli.err"
rc=$?
check "sam3 track on track_loop's frames exits 0 (got $rc: $(cat "$T/trk_cli.err"))" test $rc -eq 0
"${PYTHON:-/usr/bin/python3}" - "$T/trk.out" "$T/trk_cli/tracks.jsonl" >"$T/trk_cmp.txt" 2>&1 <<'PYEOF'
import json, os, re, sys
import numpy as np
sys.path.insert(0, "tests")
import cli_images
loop = [l for l in open(sys.argv[1]) if l.startswith("frame ")]
cli = [json.loads(l) for l in open(sys.argv[2])][1:]  # after the generator line
assert len(loop) == len(cli) == 8, (len(loop), len(cli))
for l, c in zip(loop, cli):
    o = c["objects"][0]
    m = re.match(r"frame +(\d+): object 1 (visible|lost), score (\S+?),", l)
    assert m and int(m.group(1)) == c["frame"] and m.group(3) == "%.6g" % o["object_score_logit"], (l, o)
    assert (m.group(2) == "visible") == (o["object_score_logit"] > 0), (l, o)
    if m.group(2) == "visible":
        m = cli_images.read_png(os.path.join(os.path.dirname(sys.argv[2]), o["mask"]))[:, :, 0] > 0
        ys, xs = np.nonzero(m)
        want = "box %s, area %d, target %.1f,%.1f;" % (",".join(str(v) for v in o["box"]), o["area"], xs.mean(), ys.mean())
        assert want in l, (l, want)
PYEOF
rc=$?
check "track_loop finds the objects sam3 track finds on its frames: $(cat "$T/trk_cmp.txt")" test $rc -eq 0
# a 0 ms budget drops every frame at the deadline, cleanly
"$B/track_loop" "$VIDEO" --frames 3 --budget-ms 0 >"$T/trk0.out" 2>&1
rc=$?
check "track_loop with a 0 ms budget exits 0 (got $rc)" test $rc -eq 0
check "track_loop drops 3 of 3 late frames: $(tail -n 1 "$T/trk0.out")" grep -q "0 tracked (0 .*), 3 dropped at the deadline, 0 failed" "$T/trk0.out"
# a frame the library refuses (a zero height) is skipped with its message; tracking goes on
"$B/track_loop" "$VIDEO" --frames 4 --glitch 1 >"$T/trkg.out" 2>&1
rc=$?
check "track_loop with a broken frame exits 0 (got $rc)" test $rc -eq 0
check "track_loop skips the broken frame with the library's message" grep -q "^frame   1: skipped: .*160x0" "$T/trkg.out"
check "track_loop tracks the other 3: $(tail -n 1 "$T/trkg.out")" grep -q "3 tracked (.*), 0 dropped at the deadline, 1 failed" "$T/trkg.out"
# a model without memory modules: the library's message, exit 1
"$B/track_loop" "$MODEL" >"$T/trkt.out" 2>"$T/trkt.err"
rc=$?
check "track_loop on a model that cannot track exits 1 (got $rc)" test $rc -eq 1
check "track_loop says why: $(cat "$T/trkt.err")" grep -q "memory modules" "$T/trkt.err"
"$B/track_loop" "$VIDEO" --click 5 >/dev/null 2>&1
rc=$?
check "track_loop --click 5 exits 2 (got $rc)" test $rc -eq 2

echo "test_examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
