#!/usr/bin/python3
"""Write a random SAM 3 checkpoint in the released facebook/sam3 layout (numpy only).

    /usr/bin/python3 tools/make_random_checkpoint.py OUTDIR [--config default|tiny|JSONFILE]
        [--seed N] [--dtype f32|bf16] [--vocab DIR|synthetic]

OUTDIR gets model.safetensors (detector_model.*, tracker_model.* incl. the video-only
tensors, tracker_neck.*; names and shapes from tools/convert.py's manifest, so with
--config default they are exactly the released 1797 tensors), config.json (model_type
sam3_video), vocab.json and merges.txt.  For benchmarking the full 840M-parameter model
anywhere, and for tests (--config tiny).

Vocab: copied from --vocab DIR (default ../shared/clip beside the project root), or
--vocab synthetic: a small CLIP-style byte-level BPE vocab built here (256 byte symbols,
the same with </w>, merges spelling a few dozen common words, then <|startoftext|> and
<|endoftext|>).  --config tiny uses the synthetic vocab unless --vocab DIR is given, and
its text vocab_size is set to the vocab's size.

Values are seeded and scaled so activations stay O(1): Linear/Conv weights N(0, 1/fan_in)
(fan_in = in*kh*kw; ConvTranspose [in, out, kh, kw] uses in), biases N(0, 0.02),
LayerNorm/GroupNorm weight 1 + N(0, 0.05) and bias N(0, 0.05), embeddings, tokens and
learned position embeddings 0.5*N(0, 1), the random-Fourier matrix N(0, 1) (its prompt
encoder copy identical), the memory-fuser layer scales N(0, 0.05).  The file is written
tensor by tensor, so it never sits in memory.
"""
import argparse
import json
import os
import shutil
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_CLIP = os.path.join(ROOT, "..", "shared", "clip")

DEFAULT_CONFIG = {"model_type": "sam3_video",
                  "detector_config": {"model_type": "sam3"},
                  "tracker_config": {"model_type": "sam3_tracker_video"}}


def tiny_config(vocab_size):
    """A small but complete sam3_video config (HF config.json form) for tests."""
    vision = {"model_type": "sam3_vision_model",
              "backbone_config": {"model_type": "sam3_vit_model", "hidden_size": 32,
                                  "intermediate_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "image_size": 56, "patch_size": 14,
                                  "pretrain_image_size": 28, "window_size": 2,
                                  "global_attn_indexes": [1]},
              "fpn_hidden_size": 16, "scale_factors": [4.0, 2.0, 1.0, 0.5],
              "backbone_feature_sizes": [[16, 16], [8, 8], [4, 4]]}
    return {
        "model_type": "sam3_video",
        "detector_config": {
            "model_type": "sam3",
            "vision_config": vision,
            "text_config": {"model_type": "clip_text_model", "vocab_size": vocab_size,
                            "hidden_size": 32, "intermediate_size": 64, "projection_dim": 16,
                            "num_hidden_layers": 2, "num_attention_heads": 4,
                            "max_position_embeddings": 32, "hidden_act": "gelu"},
            "geometry_encoder_config": {"hidden_size": 16, "num_layers": 1, "num_attention_heads": 2,
                                        "intermediate_size": 32, "roi_size": 7},
            "detr_encoder_config": {"hidden_size": 16, "num_layers": 1, "num_attention_heads": 2,
                                    "intermediate_size": 32},
            "detr_decoder_config": {"hidden_size": 16, "num_layers": 2, "num_queries": 5,
                                    "num_attention_heads": 2, "intermediate_size": 32},
            "mask_decoder_config": {"hidden_size": 16, "num_upsampling_stages": 3,
                                    "num_attention_heads": 2},
        },
        "tracker_config": {
            "model_type": "sam3_tracker_video",
            "image_size": 56,
            "vision_config": json.loads(json.dumps(vision)),
            "prompt_encoder_config": {"hidden_size": 16, "image_size": 56, "patch_size": 14,
                                      "mask_input_channels": 8},
            "mask_decoder_config": {"hidden_size": 16, "mlp_dim": 32, "num_hidden_layers": 2,
                                    "num_attention_heads": 2, "iou_head_hidden_dim": 16},
            "memory_attention_hidden_size": 16, "memory_attention_num_layers": 1,
            "memory_attention_feed_forward_hidden_size": 32, "memory_attention_rope_feat_sizes": [4, 4],
            "memory_encoder_hidden_size": 16, "memory_encoder_output_channels": 64,
            "mask_downsampler_embed_dim": 16, "memory_fuser_embed_dim": 16,
            "memory_fuser_intermediate_dim": 32,
        },
    }


# ----------------------------------------------------------------------------------------
# Synthetic CLIP-style vocab
# ----------------------------------------------------------------------------------------

SYNTH_WORDS = ("a photo of the cat dog car truck person people red blue green yellow white black "
               "shirt ball tree apple banana bottle cup chair table bus bird horse sheep cow orange "
               "phone book clock grocery bag visual").split()


def bytes_to_unicode():
    """GPT-2 / CLIP byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def synthetic_vocab(words=SYNTH_WORDS):
    """(vocab dict token -> id, merges list of (left, right)) in CLIP's construction order."""
    base = list(bytes_to_unicode().values())
    tokens = base + [t + "</w>" for t in base]
    seen = set(tokens)
    merges = []
    for w in words:
        syms = list(w[:-1]) + [w[-1] + "</w>"]
        while len(syms) > 1:  # merge left to right: (s0, s1) -> s0 + s1
            pair = (syms[0], syms[1])
            merged = syms[0] + syms[1]
            if merged not in seen:
                merges.append(pair)
                tokens.append(merged)
                seen.add(merged)
            syms = [merged] + syms[2:]
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    return {t: i for i, t in enumerate(tokens)}, merges


def write_vocab(outdir, vocab, merges):
    with open(os.path.join(outdir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(outdir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")


# ----------------------------------------------------------------------------------------
# safetensors writing (streaming)
# ----------------------------------------------------------------------------------------

ST_ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2}


def to_st_dtype(a, dt):
    """float array -> raw little-endian array of safetensors dtype dt (BF16: round to nearest even)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if dt == "F32":
        return a.astype("<f4", copy=False)
    if dt == "F16":
        return a.astype("<f2")
    u = a.view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype("<u2")


def write_safetensors(path, items, metadata=None):
    """items: [(name, dtype "F32"/"F16"/"BF16", shape, data)] in file order, where data is a
    float array, a function returning one (called when its turn comes), or None (all zeros,
    left as a hole so a sparse file costs no disk).  Written to path.tmp, then renamed."""
    header, pos = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dt, shape, _ in items:
        n = int(np.prod(shape, dtype=np.int64)) * ST_ITEMSIZE[dt]
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [pos, pos + n]}
        pos += n
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name, dt, shape, data in items:
            n = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
            if data is None:
                f.seek(n, os.SEEK_CUR)
                continue
            a = data() if callable(data) else data
            if tuple(a.shape) != tuple(shape):
                raise ValueError(f"{name}: data shape {a.shape} != {tuple(shape)}")
            to_st_dtype(a, dt).tofile(f)
        f.truncate(8 + len(hb) + pos)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------
# Random values
# ----------------------------------------------------------------------------------------

def random_tensor(rng, shape, kind):
    n = int(np.prod(shape, dtype=np.int64))
    a = rng.standard_normal(n, dtype=np.float32).reshape(shape)
    if kind in ("linear", "conv"):
        a *= np.float32(np.sqrt(1.0 / int(np.prod(shape[1:]))))
    elif kind == "convT":
        a *= np.float32(np.sqrt(1.0 / shape[0]))
    elif kind == "bias":
        a *= np.float32(0.02)
    elif kind == "norm_w":
        a *= np.float32(0.05)
        a += np.float32(1.0)
    elif kind in ("norm_b", "scale"):
        a *= np.float32(0.05)
    elif kind == "embed":
        a *= np.float32(0.5)
    elif kind != "fourier":
        raise ValueError(f"unknown kind {kind}")
    return a


def write_processor(outdir, cfg):
    """A SAM 3 model whose vision image_size is not Sam3Processor's default 1008 needs a
    preprocessor_config.json saying so (as one saved by HF would); written only then."""
    if cfg.get("model_type") == "sam":
        return
    S = cfg["vit"]["image_size"]
    if S != convert.PROCESSOR_DEFAULTS["image_size"]:
        with open(os.path.join(outdir, "preprocessor_config.json"), "w") as f:
            json.dump({"size": {"height": S, "width": S}}, f)


def make_checkpoint(outdir, config_json, seed=0, dtype="f32", vocab_dir=None, quiet=False):
    """Write the four files; vocab_dir None = synthetic vocab.  Returns the safetensors path."""
    os.makedirs(outdir, exist_ok=True)
    if vocab_dir is None:
        vocab, merges = synthetic_vocab()
        write_vocab(outdir, vocab, merges)
        n_vocab = len(vocab)
    else:
        for fn in ("vocab.json", "merges.txt"):
            src = os.path.join(vocab_dir, fn)
            if not os.path.isfile(src):
                raise SystemExit(f"make_random_checkpoint.py: error: {src} not found")
            if os.path.abspath(src) != os.path.abspath(os.path.join(outdir, fn)):
                shutil.copyfile(src, os.path.join(outdir, fn))
        with open(os.path.join(outdir, "vocab.json"), encoding="utf-8") as f:
            n_vocab = len(json.load(f))
    cfg = convert.fill_config(config_json)
    if n_vocab > cfg["text"]["vocab_size"]:
        raise SystemExit(f"make_random_checkpoint.py: error: the vocab has {n_vocab} tokens, more "
                         f"than the config's text vocab_size {cfg['text']['vocab_size']}")
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(config_json, f, indent=2)
        f.write("\n")
    write_processor(outdir, cfg)

    rng = np.random.default_rng(seed)
    items = convert.manifest(cfg)
    fourier = {}  # the random-Fourier matrix and its prompt-encoder copy: one array
    st_dt = {"f32": "F32", "bf16": "BF16"}[dtype]

    def producer(shape, kind):
        def make():
            if kind != "fourier":
                return random_tensor(rng, shape, kind)
            if shape not in fourier:
                fourier[shape] = random_tensor(rng, shape, kind)
            return fourier[shape]
        return make

    entries = [(name, st_dt, shape, producer(shape, kind)) for name, shape, _, kind in items]
    path = os.path.join(outdir, "model.safetensors")
    t0 = time.time()
    write_safetensors(path, entries, metadata={"format": "pt"})
    if not quiet:
        n = sum(int(np.prod(s, dtype=np.int64)) for _, s, _, _ in items)
        print(f"wrote {path}: {len(items)} tensors, {n:,} params, {dtype}, "
              f"{os.path.getsize(path):,} bytes in {time.time() - t0:.1f} s")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="make_random_checkpoint.py", description=__doc__.split("\n")[0])
    ap.add_argument("outdir", metavar="OUTDIR")
    ap.add_argument("--config", default="default", help="default, tiny or a config.json file")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--vocab", default=None, help="directory with vocab.json + merges.txt, or 'synthetic'")
    args = ap.parse_args(argv)

    vocab_dir = args.vocab
    if vocab_dir is None and args.config != "tiny":
        vocab_dir = SHARED_CLIP
        if not os.path.isdir(vocab_dir):
            ap.error(f"no --vocab given and {os.path.normpath(SHARED_CLIP)} is absent: pass "
                     "--vocab DIR (with vocab.json and merges.txt) or --vocab synthetic")
    if vocab_dir == "synthetic":
        vocab_dir = None

    if args.config == "default":
        config_json = DEFAULT_CONFIG
    elif args.config == "tiny":
        if vocab_dir is None:
            n_vocab = len(synthetic_vocab()[0])
        else:
            with open(os.path.join(vocab_dir, "vocab.json"), encoding="utf-8") as f:
                n_vocab = len(json.load(f))
        config_json = tiny_config(n_vocab)
    else:
        with open(args.config) as f:
            config_json = json.load(f)
    try:
        make_checkpoint(args.outdir, config_json, args.seed, args.dtype, vocab_dir)
    except convert.ConvertError as e:
        ap.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
