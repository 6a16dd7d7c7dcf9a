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
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    # bf16 autocast: what a PyTorch user flips for speed; weights stay f32, products run in bf16
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext
    prec = "bf16 autocast" if a.bf16 else "fp32"
    model, S, g, D = load_model(a.src)
    proc = make_processor(S)
    W, H = (int(v) for v in a.size.split("x"))
    i = np.arange(W * H * 3)
    img = (((i % (W * 3)) * 255 // (W * 3)) ^ ((i // (W * 3)) % 256)).astype(np.uint8).reshape(H, W, 3)
    pv = proc(images=img, return_tensors="pt").pixel_values[0]
    session = proc.init_video_session(inference_device="cpu", dtype=torch.float32)
    K = a.objects
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
            model(inference_session=session, frame=pv)
        return 1000 * (time.time() - t0)

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
    print(f"pytorch bench: transformers Sam3TrackerVideoModel {prec} streaming, {K} objects, image {W}x{H}, threads "
          f"{torch.get_num_threads()}; untimed frames {[round(x) for x in t_warm]} ms")
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
        print(f"  {'sam3 tracking beyond the encoder':34s} {med([x[1] for x in runs_s]):9.1f} ms")


if __name__ == "__main__":
    main()
