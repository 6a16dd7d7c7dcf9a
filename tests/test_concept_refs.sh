#!/bin/sh
# The concept tracker against more HF Sam3VideoModel references (tests/data/concept_b..f): each
# its own seeded width-128 checkpoint (video_a's config, tools/make_random_checkpoint.py, rebuilt
# here into BUILD/concept_ck and checked against the CRC-32 the dump recorded), photo and prompts,
# 10 frames, both modes, the tracker's internals on streaming frames 0-2.
#   sh tests/test_concept_refs.sh BUILD SHARED
set -e
B=${1:-build}
S=${2:-../shared}
PY=${PYTHON:-python3}
# dir seed photo
for row in "b 11 truck" "c 31 test_image" "d 41 groceries" "e 67 test_image" "f 53 groceries"; do
    set -- $row
    ck=$B/concept_ck/s$2
    if [ ! -f $ck.sam3 ]; then
        rm -rf $ck
        $PY tools/make_random_checkpoint.py $ck --config tests/data/video_a/config.json --vocab synthetic --seed $2 --dtype bf16 >/dev/null
        $PY tools/patch_tensor.py $ck/model.safetensors tracker_model.mask_decoder.pred_obj_score_head.proj_out.bias 0.15 >/dev/null
        cp tests/data/video_a/preprocessor_config.json $ck/
        $PY - $ck/model.safetensors tests/data/concept_$1/ref_concept.sam3 <<'PYEOF'
import sys, zlib
sys.path.insert(0, "tools")
import sam3file
crc = zlib.crc32(open(sys.argv[1], "rb").read()) & 0xFFFFFFFF
want = sam3file.read(sys.argv[2]).config["concept.ckpt_crc32"]
if crc != want:
    sys.exit(f"{sys.argv[1]}: CRC-32 {crc:08x}, the reference was made from {want:08x} (another numpy?)")
PYEOF
        $PY tools/convert.py --quiet $ck $ck.sam3.tmp >/dev/null && mv $ck.sam3.tmp $ck.sam3
    fi
    out=$($B/test_concept --model $ck.sam3 --ref tests/data/concept_$1/ref_concept.sam3 --photo $S/images/$3.jpg --parity-only) ||
        { echo "$out"; echo "concept_$1 (seed $2, $3.jpg): FAILED"; exit 1; }
    echo "concept_$1 (seed $2, $3.jpg): $(echo "$out" | tail -1)"
done
