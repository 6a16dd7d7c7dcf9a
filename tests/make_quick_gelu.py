#!/usr/bin/python3
"""A tiny SAM 3 whose CLIP text encoder uses hidden_act "quick_gelu" (x * sigmoid(1.702 x), what
transformers gives a text_config built from a dict), and the text features it must give, computed
by a numpy restatement of CLIPTextTransformer + Sam3Model.text_projection in float64 (written
from the Hugging Face code, not from sam3.h).

    /usr/bin/python3 tests/make_quick_gelu.py OUTDIR SAM3_CLI

Writes OUTDIR/model.sam3 (converted by tools/convert.py) and OUTDIR/ref_text.sam3 (the dump
that tests/test_parity.c's text test reads: prompts, their ids from `SAM3_CLI tokenize`, and the
reference features). Exits non-zero if the same restatement with the exact (erf) GELU is not
clearly different from the quick_gelu one: then the test could not tell the two apart.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import convert  # noqa: E402
import make_random_checkpoint as mrc  # noqa: E402
import sam3file  # noqa: E402

PROMPTS = ["a cat", "yellow school bus", "dog"]
TOL = 1e-4  # tests/test_parity.c's f32 tolerance


def quick_gelu(x):
    return x / (1.0 + np.exp(-1.702 * x))


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def text_features(f, ids, act):
    """CLIPTextTransformer (causal self-attention, pre-norm layers, final LayerNorm) on ids, then
    Sam3Model.text_projection: (n, D) in float64."""
    c = f.config
    H, nh, L, eps = c["text.hidden_size"], c["text.num_attention_heads"], c["text.num_hidden_layers"], c["text.layer_norm_eps"]
    hd = H // nh

    def g(name):
        return f.get(name).astype(np.float64)

    def lin(x, p):
        return x @ g(p + ".weight").T + g(p + ".bias")

    q = "text_encoder.text_model."
    n = len(ids)
    x = g(q + "embeddings.token_embedding.weight")[ids] + g(q + "embeddings.position_embedding.weight")[:n]
    causal = np.triu(np.full((n, n), -np.inf), 1)
    for i in range(L):
        r = f"{q}encoder.layers.{i}."
        h = layer_norm(x, g(r + "layer_norm1.weight"), g(r + "layer_norm1.bias"), eps)
        qh, kh, vh = (lin(h, r + f"self_attn.{t}_proj").reshape(n, nh, hd).transpose(1, 0, 2) for t in ("q", "k", "v"))
        s = qh @ kh.transpose(0, 2, 1) / math.sqrt(hd) + causal
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = x + lin((p @ vh).transpose(1, 0, 2).reshape(n, H), r + "self_attn.out_proj")
        h = layer_norm(x, g(r + "layer_norm2.weight"), g(r + "layer_norm2.bias"), eps)
        x = x + lin(act(lin(h, r + "mlp.fc1")), r + "mlp.fc2")
    x = layer_norm(x, g(q + "final_layer_norm.weight"), g(q + "final_layer_norm.bias"), eps)
    return lin(x, "text_projection")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, cli = argv[1], argv[2]
    src = os.path.join(out, "src")
    os.makedirs(src, exist_ok=True)
    vocab, _ = mrc.synthetic_vocab()
    cj = mrc.tiny_config(len(vocab))
    cj["detector_config"]["text_config"]["hidden_act"] = "quick_gelu"
    mrc.make_checkpoint(src, cj, seed=7, quiet=True)
    model = os.path.join(out, "model.sam3")
    if os.path.exists(model):
        os.unlink(model)
    if convert.main([src, model, "--quiet"]) != 0:
        return 1
    f = sam3file.read(model)
    if f.config["text.hidden_act"] != "quick_gelu":
        print("make_quick_gelu.py: the converted file does not say quick_gelu", file=sys.stderr)
        return 1
    cfg = {"arch": "dump", "dump.kind": "text", "text.count": len(PROMPTS)}
    tensors = []
    for k, text in enumerate(PROMPTS):
        p = subprocess.run([cli, "tokenize", "-m", model, text], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"make_quick_gelu.py: {cli} tokenize failed: {p.stderr.strip()}", file=sys.stderr)
            return 1
        ids = np.array([int(t) for t in p.stdout.split()], dtype=np.int32)
        want = text_features(f, ids, quick_gelu)
        other = text_features(f, ids, gelu)
        sep = float(np.sqrt(((want - other) ** 2).sum() / (want ** 2).sum()))
        if not sep > 10 * TOL:
            print(f"make_quick_gelu.py: \"{text}\": gelu and quick_gelu features differ by only {sep:.2e}", file=sys.stderr)
            return 1
        print(f"  quick_gelu reference \"{text}\": {len(ids)} ids; the erf GELU would differ by {sep:.2e} (relative)")
        cfg[f"text.{k}.prompt"] = text
        tensors.append((f"text.{k}.ids", ids))
        tensors.append((f"text.{k}.features", want.astype(np.float32)))
    del f
    sam3file.write(os.path.join(out, "ref_text.sam3"), cfg, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
