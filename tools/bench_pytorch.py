#!/usr/bin/env python3
"""Times Hugging Face transformers' Sam3Model (fp32, CPU) the way `sam3 bench` times sam3.h, for
tools/bench_vs_pytorch.sh: image features (ViT + neck), a first text prompt and a new one on the
cached features, peak RSS. Needs torch + transformers 5.17 (the GPU machine).

    python3 tools/bench_pytorch.py CHECKPOINT_DIR [--threads N] [--runs R] [--size WxH] [--pair CMD]

--pair "build/sam3 bench -m MODEL.sam3 --paired ..." runs that command beside this one and
alternates the two run by run (after one untimed run each), so that both see the same machine:
the shared hosts' speed drifts by tens of percent within minutes, so timing all of one and then
all of the other compared two different machines. Prints both tables, then each stage's medians
and the median of the per-run ratios.
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
from make_reference import load_detector, make_tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", default="1280x960")
    ap.add_argument("--bf16", action="store_true",
                    help="run PyTorch under torch.autocast('cpu', dtype=torch.bfloat16) (oneDNN's bf16/AMX kernels)")
    ap.add_argument("--pair", default="", help="a `sam3 bench ... --paired` command to alternate with")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    # bf16 autocast: what a PyTorch user flips for speed; weights stay f32, products run in bf16
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext
    prec = "bf16 autocast" if a.bf16 else "fp32"
    from transformers import Sam3Processor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    t0 = time.time()
    model, cfg = load_detector(a.src)
    t_load = time.time() - t0
    tok = make_tokenizer(a.src)
    S = cfg.vision_config.backbone_config.image_size
    proc = Sam3Processor(image_processor=Sam3ImageProcessor(size={"height": S, "width": S}), tokenizer=tok)
    W, H = (int(v) for v in a.size.split("x"))
    img = (np.arange(W * H * 3).reshape(H, W, 3) % 251).astype(np.uint8)
    pv = proc(images=img, return_tensors="pt")["pixel_values"]

    def torch_run(k):
        """One run: image features, a first prompt, a new prompt on the same features (ms)."""
        t0 = time.time()
        with autocast():
            vo = model.get_vision_features(pixel_values=pv)
        t = [time.time() - t0]
        for text in (f"yellow school bus {k}", f"red car {k}"):  # the texts sam3 bench uses
            enc = tok(text, padding="max_length", max_length=32, return_tensors="pt")
            t0 = time.time()
            with autocast():
                model(vision_embeds=vo, input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            t.append(time.time() - t0)
        return [1000 * x for x in t]

    sam3 = None
    if a.pair:
        sam3 = subprocess.Popen(shlex.split(a.pair), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        line = sam3.stdout.readline()
        if line.strip() != "ready":
            sys.exit(f"bench_pytorch: --pair: expected 'ready' from sam3, got {line!r}")
        torch_run(9)  # untimed, as sam3's
    runs_t, runs_s = [], []
    pat = re.compile(r"image encoder ([0-9.]+) ms, first prompt ([0-9.]+) ms, new prompt ([0-9.]+) ms, "
                     r"new prompt without post-processing ([0-9.]+) ms")

    def sam3_run():
        sam3.stdin.write("run\n")
        sam3.stdin.flush()
        line = sam3.stdout.readline()
        m = pat.search(line)
        if not m:
            sys.exit(f"bench_pytorch: --pair: unexpected line from sam3: {line!r}")
        runs_s.append([float(x) for x in m.groups()])

    for i in range(a.runs):
        if sam3 and i % 2:  # ABBA: neither goes first every time
            sam3_run()
        runs_t.append(torch_run(i % 10))
        if sam3 and not i % 2:
            sam3_run()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    med = lambda v: statistics.median(v)  # noqa: E731
    col = lambda rs, j: [r[j] for r in rs]  # noqa: E731
    print(f"pytorch bench: transformers Sam3Model {prec}, image {W}x{H}, {a.runs} runs (medians), "
          f"threads {torch.get_num_threads()}")
    print(f"  {'load (from safetensors)':34s} {1000 * t_load:10.1f} ms")
    print(f"  {'image encoder (ViT + neck)':34s} {med(col(runs_t, 0)):10.1f} ms")
    print(f"  {'first prompt on the image':34s} {med(col(runs_t, 1)):10.1f} ms")
    print(f"  {'new prompt on the cached image':34s} {med(col(runs_t, 2)):10.1f} ms")
    print(f"  {'peak RSS':34s} {rss:10.1f} MB")
    if sam3:
        sam3.stdin.close()
        sys.stdout.write(sam3.stdout.read())
        if sam3.wait() != 0:
            sys.exit("bench_pytorch: --pair: sam3 bench failed")
        print(f"paired: {a.runs} alternating runs after one untimed run each; medians, and the median of the "
              f"per-run ratios PyTorch / sam3")
        rows = [("image encoder (ViT + neck)", 0, 0), ("first prompt on the image", 1, 1),
                ("new prompt on the cached image", 2, 2), ("  sam3 without post-processing", 2, 3)]
        for name, jt, js in rows:
            t, s_ = col(runs_t, jt), col(runs_s, js)
            ratio = med([x / y for x, y in zip(t, s_)])
            print(f"  {name:34s} PyTorch {med(t):9.1f} ms   sam3 {med(s_):9.1f} ms   {ratio:5.2f}x")


if __name__ == "__main__":
    main()
