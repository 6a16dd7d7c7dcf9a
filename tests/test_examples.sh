#!/bin/sh
# Runs the embedding examples on the tiny model: examples/embed_min.c (the QUICK START) and
# examples/camera_loop.c (threads, RGBA frames with a stride, several prompts, deadline aborts);
# checks that no example uses a private name.
#   tests/test_examples.sh [BUILD_DIR]      (default build; needs BUILD_DIR/tiny_a.sam3)
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

echo "test_examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
