#!/bin/sh
# Full-size parity check on the GPU machine's CPU: the default 840M SAM 3 config with seeded random
# weights (tools/make_random_checkpoint.py), converted by our converter, run by sam3.h and by
# Hugging Face transformers 5.17 (tools/make_reference.py --from-checkpoint), every stage compared
# by build/test_parity. Needs torch + transformers (not installed on CI machines) and ~15 GB disk.
#
#   tools/check_fullsize.sh [CLIP_VOCAB_DIR] [IMAGE]
#
# CLIP_VOCAB_DIR holds the real vocab.json + merges.txt (default ../shared/clip); IMAGE defaults to
# ../shared/images/truck.jpg. Work files go to $FULLSIZE_DIR (default /tmp/sam3_full).
set -eu
cd "$(dirname "$0")/.."
CLIP=${1:-../shared/clip}
IMG=${2:-../shared/images/truck.jpg}
W=${FULLSIZE_DIR:-/tmp/sam3_full}
PY=${PYTHON:-python3}
mkdir -p "$W"
t0=$(date +%s)
[ -f "$W/src/model.safetensors" ] || $PY tools/make_random_checkpoint.py "$W/src" --vocab "$CLIP"
[ -f "$W/full.sam3" ] || $PY tools/convert.py --quiet "$W/src" "$W/full.sam3"
echo "checkpoint + conversion: $(( $(date +%s) - t0 )) s"
[ -f "$W/ref/full/ref_case_boxes_edge.sam3" ] || $PY tools/make_reference.py "$W/ref" --from-checkpoint "$W/src" --name full --image "$IMG"
echo "reference dumps: $(( $(date +%s) - t0 )) s"
make -s build/test_parity
build/test_parity --model "$W/full.sam3" --data "$W/ref/full"
echo "total: $(( $(date +%s) - t0 )) s"
