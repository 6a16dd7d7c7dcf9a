#!/bin/sh
# Full-size parity on the GPU machine's CPU (it has torch + transformers 5.17; CI machines do not):
#   sam3: the default 840M SAM 3 config with seeded random weights (tools/make_random_checkpoint.py),
#         converted by our converter; HF Sam3Model (detector) and Sam3TrackerModel (interactive head)
#         dump every stage (tools/make_reference.py, tools/make_reference_points.py);
#   sam1: HF SamModel at ViT-B size with random weights (tools/make_reference_sam1.py --fullsize).
#   video: the same 840M checkpoint's tracker: HF Sam3TrackerVideoModel streaming 10 frames of PHOTO
#         (tests/video_frames.h; 2 objects, a box and a click each, object 1 corrected on frame 5;
#         tools/make_reference_video.py --scenario full) against build/test_video --parity-only.
#   concept: the same checkpoint as HF Sam3VideoModel in streaming mode on those 10 frames, prompts "a cat"
#         and "the red car", thresholds from frame 0's detections so that objects start on frame 0 and
#         later (tools/make_reference_concept.py --fullsize) against build/test_concept --parity-only:
#         every frame's object ids and prompts equal, scores within 1e-4, masks IoU >= 0.99.
# build/test_parity then runs sam3.h on the same inputs and compares every stage. ~15 GB of disk.
#
#   xfer: a saved concept used on another image: the geometry encoder on IMAGE's features, the DETR
#         on a second image with those tokens (tools/make_reference_concept_xfer.py, transformers'
#         modules composed) against build/test_saved_concept: scores within 1e-4, masks IoU >= 0.99.
#
#   tools/check_fullsize.sh [all|sam3|sam1|video|concept|xfer] [CLIP_VOCAB_DIR] [IMAGE] [PHOTO]
#
# IMAGE_SIZE=N (sam3 only): HF built with image_size N (detector and tracker; a config written beside
# the checkpoint, same tensors) against full.sam3 loaded with sam3_load_options.image_size = N.
#
# CLIP_VOCAB_DIR holds the real vocab.json + merges.txt (default ../shared/clip); IMAGE defaults to
# ../shared/images/truck.jpg. Work files go to $FULLSIZE_DIR (default /tmp/sam3_full).
#
# DTYPE=bf16: the same checkpoints converted with --dtype bf16 (full_bf16.sam3, sam1_vitb_bf16.sam3)
# against the same fp32 references, with test_parity --bf16's bars instead of the f32 ones: every
# instance the reference keeps kept (one within 2e-2 of the threshold may fall on the other side),
# scores, IoU predictions and object scores within 2e-2 (absolute), masks IoU >= 0.98 mean and
# >= 0.95 worst, stages within 5e-2 relative (or 2e-2 absolute); the video check with test_video --bf16's
# bars (logits within 5e-2 relative, object scores within 2e-2, masks IoU >= 0.95, mean >= 0.98). The
# concept check is f32 only.
set -eu
cd "$(dirname "$0")/.."
WHAT=${1:-all}
CLIP=${2:-../shared/clip}
IMG=${3:-../shared/images/truck.jpg}
PHOTO=${4:-../shared/images/test_image.jpg}
W=${FULLSIZE_DIR:-/tmp/sam3_full}
PY=${PYTHON:-python3}
DTYPE=${DTYPE:-f32}
case "$DTYPE" in
f32) SFX= BF= ;;
bf16) SFX=_bf16 BF=--bf16
      echo "DTYPE=bf16: --dtype bf16 files against the fp32 references; bars: kept instances kept (2e-2 margin at the threshold),"
      echo "  scores / IoU predictions / object scores within 2e-2, mask IoU mean >= 0.98 and worst >= 0.95, stages within 5e-2 rel" ;;
*) echo "DTYPE must be f32 or bf16, not $DTYPE" >&2; exit 2 ;;
esac
mkdir -p "$W"
t0=$(date +%s)
make -s build/test_parity build/test_video build/make_video_frames
make -s build/test_concept build/test_saved_concept
if [ "$WHAT" != sam1 ]; then
    if [ ! -f "$W/src/model.safetensors" ]; then
        $PY tools/make_random_checkpoint.py "$W/src" --vocab "$CLIP"
        # random weights leave every tracked object "absent" (object scores ~ -1): move the score head's
        # bias so that objects fall on both sides of 0 and the video check reaches masks and pointers
        $PY tools/patch_tensor.py "$W/src/model.safetensors" tracker_model.mask_decoder.pred_obj_score_head.proj_out.bias 1.0
    fi
    [ -f "$W/full$SFX.sam3" ] || $PY tools/convert.py --quiet --dtype "$DTYPE" "$W/src" "$W/full$SFX.sam3"
    echo "sam3 checkpoint + conversion: $(( $(date +%s) - t0 )) s"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = video ]; then
    mkdir -p "$W/frames"
    build/make_video_frames "$PHOTO" 10 "$W/frames" >/dev/null
    [ -f "$W/ref_video_full.sam3" ] || $PY tools/make_reference_video.py "$W/src" "$W/frames" "$W/ref_video_full.sam3" --scenario full
    echo "video reference: $(( $(date +%s) - t0 )) s"
    build/test_video --model "$W/full$SFX.sam3" --ref "$W/ref_video_full.sam3" --photo "$PHOTO" --parity-only $BF
fi
if [ "$DTYPE" = bf16 ] && [ "$WHAT" = concept ]; then echo "concept: f32 only (DTYPE=bf16 has no concept check)"; fi
if [ "$DTYPE" = f32 ] && { [ "$WHAT" = all ] || [ "$WHAT" = concept ]; }; then
    mkdir -p "$W/frames"
    build/make_video_frames "$PHOTO" 10 "$W/frames" >/dev/null
    [ -f "$W/ref_concept_full.sam3" ] || $PY tools/make_reference_concept.py "$W/src" "$W/frames" "$W/ref_concept_full.sam3" --fullsize
    echo "concept reference: $(( $(date +%s) - t0 )) s"
    SAM3_TEST_VERBOSE=1 build/test_concept --model "$W/full.sam3" --ref "$W/ref_concept_full.sam3" --photo "$PHOTO" --parity-only
fi
if [ "$WHAT" = xfer ]; then
    mkdir -p "$W/srcx"
    for f in model.safetensors vocab.json merges.txt config.json; do ln -sf "$W/src/$f" "$W/srcx/$f"; done
    $PY -c "import sys; from PIL import Image; Image.open(sys.argv[1]).convert('RGB').save(sys.argv[2])" "$IMG" "$W/srcx/image.png"
    $PY tools/make_reference_concept_xfer.py "$W/srcx" "$W/xfer"
    echo "xfer reference: $(( $(date +%s) - t0 )) s"
    build/test_saved_concept --model "$W/full$SFX.sam3" --data "$W/xfer"
fi
if [ -n "${IMAGE_SIZE:-}" ] && [ "$WHAT" = sam3 ]; then
    # the released config.json states no sizes (HF defaults): spell out the ones image_size moves
    S=$IMAGE_SIZE; mkdir -p "$W/src_s$S"
    for f in model.safetensors vocab.json merges.txt; do ln -sf "$W/src/$f" "$W/src_s$S/$f"; done
    $PY - "$S" "$W/src_s$S/config.json" <<'PY'
import json, sys
S, g = int(sys.argv[1]), int(sys.argv[1]) // 14
vision = {"model_type": "sam3_vision_model", "backbone_config": {"model_type": "sam3_vit_model", "image_size": S},
          "backbone_feature_sizes": [[4 * g, 4 * g], [2 * g, 2 * g], [g, g]]}
json.dump({"model_type": "sam3_video", "detector_config": {"model_type": "sam3", "vision_config": vision},
           "tracker_config": {"model_type": "sam3_tracker_video", "image_size": S, "vision_config": vision,
                              "prompt_encoder_config": {"image_size": S, "patch_size": 14}}}, open(sys.argv[2], "w"), indent=2)
PY
    R="$W/ref_s$S"
    [ -f "$R/full/ref_case_boxes_edge.sam3" ] || $PY tools/make_reference.py "$R" --from-checkpoint "$W/src_s$S" --name full --image "$IMG"
    [ -f "$R/full/ref_points_image.sam3" ] || $PY tools/make_reference_points.py "$R" --from-checkpoint "$W/src_s$S" --name full --image "$IMG"
    echo "sam3 reference dumps at $S: $(( $(date +%s) - t0 )) s"
    build/test_parity --model "$W/full$SFX.sam3" --data "$R/full" --image-size "$S" $BF
elif [ "$WHAT" = all ] || [ "$WHAT" = sam3 ]; then
    [ -f "$W/ref/full/ref_case_boxes_edge.sam3" ] || $PY tools/make_reference.py "$W/ref" --from-checkpoint "$W/src" --name full --image "$IMG"
    [ -f "$W/ref/full/ref_points_image.sam3" ] || $PY tools/make_reference_points.py "$W/ref" --from-checkpoint "$W/src" --name full --image "$IMG"
    echo "sam3 reference dumps: $(( $(date +%s) - t0 )) s"
    build/test_parity --model "$W/full$SFX.sam3" --data "$W/ref/full" $BF
fi
if [ "$WHAT" = all ] || [ "$WHAT" = sam1 ]; then
    [ -f "$W/sam1/vitb/ref_sam1_image.sam3" ] || $PY tools/make_reference_sam1.py "$W/sam1" --fullsize vitb --image "$IMG"
    [ -f "$W/sam1_vitb$SFX.sam3" ] || $PY tools/convert.py --quiet --dtype "$DTYPE" "$W/sam1/vitb" "$W/sam1_vitb$SFX.sam3"
    echo "sam1 reference + conversion: $(( $(date +%s) - t0 )) s"
    build/test_parity --model "$W/sam1_vitb$SFX.sam3" --data "$W/sam1/vitb" $BF
fi
echo "total: $(( $(date +%s) - t0 )) s"
