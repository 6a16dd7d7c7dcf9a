#!/usr/bin/env python3
"""Times Hugging Face transformers' Sam3Model (fp32, CPU) the way `sam3 bench` times sam3.h, for
tools/bench_vs_pytorch.sh: image features (ViT + neck), one text prompt on the cached features,
peak RSS. Needs torch + transformers 5.17 (the GPU machine).

    python3 tools/bench_pytorch.py CHECKPOINT_DIR [--threads N] [--runs R] [--size WxH]
"""
import argparse
import os
import resource
import statistics
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
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
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
    tv, tp = [], []
    for _ in range(a.runs):
        t0 = time.time()
        vo = model.get_vision_features(pixel_values=pv)
        tv.append(time.time() - t0)
    for i in range(a.runs):
        enc = tok(f"red car {i}", padding="max_length", max_length=32, return_tensors="pt")
        t0 = time.time()
        model(vision_embeds=vo, input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        tp.append(time.time() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"pytorch bench: transformers Sam3Model fp32, image {W}x{H}, {a.runs} runs (medians), "
          f"threads {torch.get_num_threads()}")
    print(f"  {'load (from safetensors)':34s} {1000 * t_load:10.1f} ms")
    print(f"  {'image encoder (ViT + neck)':34s} {1000 * statistics.median(tv):10.1f} ms")
    print(f"  {'new prompt on the cached image':34s} {1000 * statistics.median(tp):10.1f} ms")
    print(f"  {'peak RSS':34s} {rss:10.1f} MB")


if __name__ == "__main__":
    main()
