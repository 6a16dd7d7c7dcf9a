#!/usr/bin/env python3
"""Times Hugging Face transformers' Sam3TrackerVideoModel (fp32, CPU, streaming) per frame the way
`sam3 bench --video K` times sam3.h's tracker, optionally alternating with it run by run.
Needs torch + transformers 5.17 (the GPU machine).

    python3 tools/bench_video_pytorch.py CHECKPOINT_DIR [--objects K] [--threads N] [--runs R]
        [--warm W] [--size WxH] [--pair "build/sam3 bench -m MODEL.sam3 --video K --paired ..."]

Both sides: K objects prompted on frame 0 with a box and a click each (the same places), that frame
and W more untimed (the memory bank fills in num_maskmem frames), then R timed frames of a synthetic
WxH image. A frame is the model call on the preprocessed frame (HF) / sam3_tracker_push_frame on the
pixels, preprocessing included (sam3). With --pair the two alternate frame by frame (ABBA), after the
same untimed frames each, and the median of the per-frame ratios is printed: shared hosts drift by tens
of percent within minutes.

    python3 tools/bench_video_pytorch.py CHECKPOINT_DIR --concept K [--threshold T] [--threads N] [--runs R]
        [--warm W] [--size WxH] [--pair "build/sam3 bench -m MODEL.sam3 --concept K --paired ..."]

--concept K: Sam3VideoModel instead (text prompts "a cat" and "the red car", streaming, max_num_objects
K), timed as `sam3 bench --concept K`: the detection and new-object threshold halfway between the 2K-th
and 2K+1-th best detection probability on the image over both prompts (from one untimed detector pass,
or --threshold T), so that 2K detections pass and the best K start objects on the first frame and stay
tracked (the same image every frame; K on both sides even where a bf16 file's probabilities differ a
little). With --pair the threshold is appended to sam3's command line (--threshold T).
"""
import argparse
import contextlib
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reference_video import load_model, make_processor  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--objects", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warm", type=int, default=8)
    ap.add_argument("--size", default="1280x960")
    ap.add_argument("--bf16", action="store_true",
                    help="run PyTorch under torch.autocast('cpu', dtype=torch.bfloat16) (oneDNN's bf16/AMX kernels)")
    ap.add_argument("--pair", default="")
    ap.add_argument("--concept", type=int, default=0, help="Sam3VideoModel with text prompts and at most K objects")
    ap.add_argument("--threshold", type=float, default=0.0, help="with --concept: the detection threshold")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    # bf16 autocast: what a PyTorch user flips for speed; weights stay f32, products run in bf16
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext
    prec = "bf16 autocast" if a.bf16 else "fp32"
    W, H = (int(v) for v in a.size.split("x"))
    i = np.arange(W * H * 3)
    img = (((i % (W * 3)) * 255 // (W * 3)) ^ ((i // (W * 3)) % 256)).astype(np.uint8).reshape(H, W, 3)
    n_tracked = []  # --concept: objects the model holds after each frame
    if a.concept:
        model, proc, pv, session, K, thr = concept_setup(a, img)
        what = f"Sam3VideoModel {prec} streaming, prompts 'a cat' + 'the red car', at most {K} objects (threshold {thr:.6f})"
        if a.pair:
            a.pair += f" --threshold {thr:.6f}"
    else:
        model, S, g, D = load_model(a.src)
        proc = make_processor(S)
        pv = proc(images=img, return_tensors="pt").pixel_values[0]
        session = proc.init_video_session(inference_device="cpu", dtype=torch.float32)
        K = a.objects
        what = f"Sam3TrackerVideoModel {prec} streaming, {K} objects"
        boxes, points = [], []
        for k in range(K):
            cx, cy = W * (k + 1) / (K + 1), 0.5 * H
            boxes.append([cx - 0.15 * W, cy - 0.2 * H, cx + 0.15 * W, cy + 0.2 * H])
            points.append([[cx, cy]])
        proc.add_inputs_to_inference_session(session, frame_idx=0, obj_ids=list(range(1, K + 1)), input_points=[points],
                                             input_labels=[[[1]] * K], input_boxes=[boxes], original_size=(H, W))

    def torch_frame():
        t0 = time.time()
        with autocast():
            o = model(inference_session=session, frame=pv)
        t = 1000 * (time.time() - t0)
        if a.concept:
            n_tracked.append(len(o.object_ids))
        return t

    t_warm = [torch_frame() for _ in range(1 + a.warm)]
    print(f"PyTorch untimed frames: {[round(x) for x in t_warm]} ms", flush=True)
    sam3 = None
    if a.pair:
        sam3 = subprocess.Popen(shlex.split(a.pair), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        line = sam3.stdout.readline()
        if line.strip() != "ready":
            sys.exit(f"bench_video_pytorch: --pair: expected 'ready' from sam3, got {line!r}")
    pat = re.compile(r"frame ([0-9.]+) ms, tracking ([0-9.]+) ms")
    runs_t, runs_s = [], []

    def sam3_run():
        sam3.stdin.write("run\n")
        sam3.stdin.flush()
        line = sam3.stdout.readline()
        m = pat.search(line)
        if not m:
            sys.exit(f"bench_video_pytorch: --pair: unexpected line from sam3: {line!r}")
        runs_s.append([float(x) for x in m.groups()])

    for r in range(a.runs):
        if sam3 and r % 2:
            sam3_run()
        runs_t.append(torch_frame())
        if sam3 and not r % 2:
            sam3_run()
        print(f"run {r + 1}: PyTorch {runs_t[-1]:.1f} ms" + (f", sam3 {runs_s[-1][0]:.1f} ms" if sam3 else ""), flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    med = statistics.median
    print(f"pytorch bench: transformers {what}, image {W}x{H}, threads "
          f"{torch.get_num_threads()}; untimed frames {[round(x) for x in t_warm]} ms")
    if a.concept:
        print(f"  objects the model holds after each frame (untimed, then timed): {n_tracked}")
    print(f"  {'frame (model call)':34s} {med(runs_t):10.1f} ms   runs {[round(x) for x in runs_t]}")
    print(f"  {'peak RSS':34s} {rss:10.1f} MB")
    if sam3:
        sam3.stdin.close()
        sys.stdout.write(sam3.stdout.read())
        if sam3.wait() != 0:
            sys.exit("bench_video_pytorch: --pair: sam3 bench failed")
        s_frame = [x[0] for x in runs_s]
        ratio = med([t / s for t, s in zip(runs_t, s_frame)])
        print(f"paired: {a.runs} alternating frames after {1 + a.warm} untimed each; medians and the median of the "
              f"per-frame ratios PyTorch / sam3")
        print(f"  {'frame (encoder + tracking)':34s} PyTorch {med(runs_t):9.1f} ms   sam3 {med(s_frame):9.1f} ms   {ratio:5.2f}x")
        print(f"  {'sam3 ' + ('detector + tracking' if a.concept else 'tracking') + ' beyond the encoder':34s} "
              f"{med([x[1] for x in runs_s]):9.1f} ms")


def concept_setup(a, img):
    """--concept: Sam3VideoModel, its processor, the frame's pixel values, a streaming session with the
    two prompts, K, and the threshold (placed on the detector's probabilities unless given)."""
    from make_reference_concept import load_model as load_concept, make_config, make_processor as concept_processor
    K = a.concept
    S = int(make_config(a.src, {}).tracker_config.image_size)
    model = load_concept(a.src, {"max_num_objects": K})
    proc = concept_processor(a.src, S)
    pv = proc(images=img, return_tensors="pt").pixel_values[0]
    session = proc.init_video_session(inference_device="cpu", dtype=torch.float32)
    proc.add_text_prompt(session, ["a cat", "the red car"])
    thr = a.threshold
    if not thr:
        t0 = time.time()
        ve = model.detector_model.get_vision_features(pixel_values=pv[None])
        probs = []
        for pid in session.prompts:
            te = model.detector_model.get_text_features(input_ids=session.prompt_input_ids[pid],
                                                        attention_mask=session.prompt_attention_masks[pid], return_dict=True)
            o = model.detector_model(vision_embeds=ve, text_embeds=te, attention_mask=session.prompt_attention_masks[pid])
            probs += (o.pred_logits.sigmoid() * o.presence_logits.sigmoid()).reshape(-1).tolist()
        d = sorted(probs, reverse=True)
        thr = round((d[2 * K - 1] + d[2 * K]) / 2, 6)
        print(f"threshold {thr:.6f} between the best probabilities {[round(x, 6) for x in d[:2 * K + 2]]} "
              f"({time.time() - t0:.1f} s, untimed)", flush=True)
    for k in ("score_threshold_detection", "new_det_thresh"):
        setattr(model, k, thr)
        setattr(model.config, k, thr)
    return model, proc, pv, session, K, thr


if __name__ == "__main__":
    main()
