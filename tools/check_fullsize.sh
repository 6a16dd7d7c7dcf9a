#!/bin/sh
# Full-size parity on the GPU machine's CPU (it has torch + transformers 5.17; CI machines do not):
#   sam3: the default 840M SAM 3 config with seeded random weights (tools/make_random_checkpoint.py),
#         converted by our converter; HF Sam3Model (detector) and Sam3TrackerModel (interactive head)
#         dump every stage (tools/make_reference.py, tools/make_reference_points.py);
#   sam1: HF SamModel at ViT-B size with random weights (tools/make_reference_sam1.py --fullsize).
# build/test_parity then runs sam3.h on the same inputs and compares every stage. ~15 GB of disk.
#
#   tools/check_fullsize.sh [all|sam3|sam1] [CLIP_VOCAB_DIR] [IMAGE]
#
# CLIP_VOCAB_DIR holds the real vocab.json + merges.txt (default ../shared/clip); IMAGE defaults to
# ../shared/images/truck.jpg. Work files go to $FULLSIZE_DIR (default /tmp/sam3_full).
set -eu
cd "$(dirname "$0")/.."
WHAT=${1:-all}
CLIP=${2:-../shared/clip}
IMG=${3:-../shared/images/truck.jpg}
W=${FULLSIZE_DIR:-/tmp/sam3_full}
PY=${PYTHON:-python3}
mkdir -p "$W"
t0=$(date +%s)
make -s build/test_parity
if [ "$WHAT" = all ] || [ "$WHAT" = sam3 ]; then
    [ -f "$W/src/model.safetensors" ] || $PY tools/make_random_checkpoint.py "$W/src" --vocab "$CLIP"
    [ -f "$W/full.sam3" ] || $PY tools/convert.py --quiet "$W/src" "$W/full.sam3"
    echo "sam3 checkpoint + conversion: $(( $(date +%s) - t0 )) s"
    [ -f "$W/ref/full/ref_case_boxes_edge.sam3" ] || $PY tools/make_reference.py "$W/ref" --from-checkpoint "$W/src" --name full --image "$IMG"
    [ -f "$W/ref/full/ref_points_image.sam3" ] || $PY tools/make_reference_points.py "$W/ref" --from-checkpoint "$W/src" --name full --image "$IMG"
    echo "sam3 reference dumps: $(( $(date +%s) - t0 )) s"
    build/test_parity --model "$W/full.sam3" --data "$W/ref/full"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = sam1 ]; then
    [ -f "$W/sam1/vitb/ref_sam1_image.sam3" ] || $PY tools/make_reference_sam1.py "$W/sam1" --fullsize vitb --image "$IMG"
    [ -f "$W/sam1_vitb.sam3" ] || $PY tools/convert.py --quiet "$W/sam1/vitb" "$W/sam1_vitb.sam3"
    echo "sam1 reference + conversion: $(( $(date +%s) - t0 )) s"
    build/test_parity --model "$W/sam1_vitb.sam3" --data "$W/sam1/vitb"
fi
echo "total: $(( $(date +%s) - t0 )) s"
