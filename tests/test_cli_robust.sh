#!/bin/sh
# Hostile image files and odd prompts through the command-line tool (tests/test_cli.sh covers the
# ordinary failures: missing, truncated and non-image files): empty files, corrupt PNG data,
# headers claiming huge or zero sizes, sizes past SAM3_MAX_IMAGE_DIM, 1x1 / 1x5000 / 5000x1
# images, and absurd boxes and clicks. Each run must exit 0 with consistent output files, or 1
# with one line on stderr naming the problem; never crash.
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
echo "test_cli_robust: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
