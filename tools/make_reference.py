#!/usr/bin/env python3
"""Reference dumps for the sam3.h parity tests, made with Hugging Face transformers 5.17.

Needs torch + transformers 5.17 (+ safetensors), so it runs on the GPU machine (on its CPU, fp32):

    python3 tools/make_reference.py OUTDIR [--clip DIR] [--only NAME,...] [--image-size N]

For every tiny configuration in CONFIGS it
  * builds Sam3Model and Sam3TrackerModel from small configs with seeded random weights, scaled so
    activations are O(1) (HF's 0.02-std init makes everything near zero and hides bugs), the
    tracker sharing the detector's ViT exactly as the released checkpoint does;
  * writes the checkpoint in the released facebook/sam3 layout: OUTDIR/NAME/model.safetensors
    (detector_model.*, tracker_neck.*, tracker_model.*), config.json (model_type sam3_video),
    vocab.json + merges.txt (a synthetic CLIP-format vocabulary: the real one must not be committed);
  * writes a test image (OUTDIR/NAME/image.png) and dumps, in the .sam3 container (tools/sam3file.py,
    arch = "dump"), the inputs and every stage's tensors:
      ref_vision.sam3   input image, uint8 resize, pixel values, ViT embeddings / pre-LN / every block,
                        every FPN level and its sine position map
      ref_text.sam3     token ids and projected text features for several prompts
      ref_case_*.sam3   one per prompt case: inputs, geometry features, combined prompt, DETR encoder
                        memory, decoder queries/boxes/presence per layer, pred_logits, pred_boxes,
                        presence, pred_masks, semantic_seg, and the post-processed instances
With --image-size N every selected configuration is built with image_size N instead (the same
weights: they are seeded per tensor name and no shape depends on the input size) into OUTDIR/NAME_sN,
as sam3_load_options.image_size = N must reproduce it (tools/make_reference_points.py takes NAME_sN).
It also writes tokenizer goldens (OUTDIR/tokenizer_golden_*.txt: one line per prompt,
`hex(utf-8 bytes)<TAB>ids`, BOS/EOS included, no padding, no truncation) for the prompts in
tests/data/tokenizer_prompts.json, with the synthetic vocabulary and, when --clip is given, the
real CLIP vocabulary.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import traceback
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import sam3file  # noqa: E402

torch.set_grad_enabled(False)

# ----------------------------------------------------------------------------------------------
# Tiny configurations. tiny_a: token grid 8 = 2 windows of 4, abs-pos grid 4 tiled 2x2.
# tiny_b: grid 9 needs window padding (9 -> 12), abs-pos grid 4 tiled 3x3 and cropped, other
# head counts and widths so nothing can be hard-coded.
CONFIGS = {
    "tiny_a": dict(
        image_size=112, patch=14, pretrain=56, window=4, vit_hidden=64, vit_heads=4, vit_inter=128,
        vit_layers=4, global_idx=[1, 3], fpn=32, text_hidden=64, text_heads=4, text_inter=128,
        text_layers=2, heads=4, ffn=64, geo_layers=2, enc_layers=2, dec_layers=3, queries=12,
        trk_mlp=64, trk_heads=4, image_wh=(150, 100)),
    "tiny_b": dict(
        image_size=126, patch=14, pretrain=56, window=4, vit_hidden=48, vit_heads=3, vit_inter=96,
        vit_layers=3, global_idx=[2], fpn=24, text_hidden=48, text_heads=2, text_inter=80,
        text_layers=2, heads=2, ffn=48, geo_layers=1, enc_layers=2, dec_layers=2, queries=9,
        trk_mlp=48, trk_heads=2, image_wh=(90, 131)),
}

TEXT_PROMPTS = ["yellow school bus", "a cat", "person in a red hat", "visual"]

# Prompt cases: (name, text or None, boxes xyxy in original-image pixels as fractions of (W,H), labels)
CASES = [
    ("text", "yellow school bus", None, None),
    ("text_boxes", "a cat", [[0.10, 0.20, 0.55, 0.70], [0.60, 0.05, 0.95, 0.40]], [1, 0]),
    ("boxes", None, [[0.25, 0.30, 0.80, 0.90]], [1]),
    # box partly outside the image and a box thinner than one feature pixel (roi_align edge cases)
    ("boxes_edge", "dog", [[-0.20, 0.50, 0.40, 1.30], [0.50, 0.50, 0.52, 0.51], [0.0, 0.0, 1.0, 1.0]], [1, 1, 0]),
]


def log(*a):
    print(*a, flush=True)


def sized(name, image_size):
    """CONFIGS[name] at another input side: (NAME_sN, config), or (name, CONFIGS[name]) for None."""
    c = CONFIGS[name]
    if image_size is None:
        return name, c
    if image_size % c["patch"] or image_size < 2 * c["patch"]:
        raise ValueError(f"--image-size {image_size}: not a multiple of {name}'s patch {c['patch']} (at least two patches)")
    return f"{name}_s{image_size}", dict(c, image_size=image_size)


def config_of(name):
    """The configuration of a name make_reference writes: NAME or NAME_sN."""
    if name in CONFIGS:
        return CONFIGS[name]
    base, _, n = name.rpartition("_s")
    if base in CONFIGS and n.isdigit():
        return sized(base, int(n))[1]
    return None


# ----------------------------------------------------------------------------------------------
# Weights: per-tensor seeded (crc32 of the released name), independent of module order.
CONVT_MARKERS = ("scale_layers.", "upscale_conv")
EMBED_MARKERS = ("position_embeddings", "token_embedding", "position_embedding", "query_embed",
                 "presence_token", "label_embed", "cls_embed", "point_embed", "not_a_point_embed",
                 "no_mask_embed", "iou_token", "mask_tokens", "obj_score_token", "no_memory_embedding",
                 "reference_points")


# Random decoders wash out query identity (attention averages over shared keys), which would make
# every query's score, box and mask nearly the same and the tests blind; these gains keep queries
# distinct and logits spread, so some instances pass the threshold and some do not.
GAINS = (("detr_decoder.layers.", "_attn.o_proj.weight", 0.25), ("dot_product_scoring.query_proj.weight", "", 2.0))


def init_tensor(name, shape, seed):
    for pre, suf, gain in GAINS:
        if pre in name and name.endswith(suf):
            return gain * init_tensor_base(name, shape, seed)
    return init_tensor_base(name, shape, seed)


def init_tensor_base(name, shape, seed):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    base = name.rsplit(".", 1)[-1]
    n = rng.standard_normal(shape)
    if "positional_embedding" in name and "shared" in name:   # random-Fourier matrix of the tracker
        return n
    if any(m in name for m in EMBED_MARKERS):
        return 0.5 * n
    is_norm = ("norm" in name) and len(shape) == 1
    if is_norm:
        return 1.0 + 0.1 * n if base == "weight" else 0.1 * n
    if base == "bias" or len(shape) == 1:
        return 0.1 * n
    if any(m in name for m in CONVT_MARKERS) and len(shape) == 4:
        fan_in = shape[0]
    else:
        fan_in = int(np.prod(shape[1:]))
    return n / np.sqrt(max(fan_in, 1))


def init_module(mod, prefix, seed, skip=()):
    sd = mod.state_dict()
    for k, v in sd.items():
        if any(k.startswith(s) for s in skip) or not v.is_floating_point():
            continue
        v.copy_(torch.from_numpy(init_tensor(prefix + k, tuple(v.shape), seed)).to(v.dtype))


# ----------------------------------------------------------------------------------------------
def synthetic_vocab(outdir):
    os.makedirs(outdir, exist_ok=True)
    subprocess.check_call([sys.executable, os.path.join(HERE, "make_synthetic_vocab.py"), outdir])
    with open(os.path.join(outdir, "vocab.json"), encoding="utf-8") as f:
        return len(json.load(f))


def make_tokenizer(d):
    """The reference tokenizer class, built from vocab.json + merges.txt as a user would."""
    from transformers import CLIPTokenizer
    errs = []
    for how in ("from_pretrained", "files", "objects", "fast"):
        try:
            if how == "from_pretrained":
                tok = CLIPTokenizer.from_pretrained(d)
            elif how == "files":
                tok = CLIPTokenizer(vocab_file=os.path.join(d, "vocab.json"), merges_file=os.path.join(d, "merges.txt"))
            elif how == "objects":
                with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
                    vocab = json.load(f)
                with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
                    merges = [tuple(l.split()) for l in f.read().split("\n")[1:] if l.strip()]
                tok = CLIPTokenizer(vocab=vocab, merges=merges)
            else:
                from transformers import CLIPTokenizerFast
                tok = CLIPTokenizerFast.from_pretrained(d)
            ids = tok("a cat")["input_ids"]
            log(f"tokenizer {type(tok).__name__} via {how}: 'a cat' -> {ids}")
            return tok
        except Exception as e:  # noqa: BLE001
            errs.append(f"{how}: {e!r}")
    raise RuntimeError("cannot build CLIPTokenizer: " + "; ".join(errs))


def test_image(w, h, seed):
    """A deterministic RGB image with smooth gradients, edges and noise (exercises the resize)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    img[..., 0] = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    img[..., 1] = 255 * x / max(w - 1, 1)
    img[..., 2] = 255 * ((x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2)
    img += rng.normal(0, 12, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def write_png(path, img):
    from PIL import Image
    Image.fromarray(img).save(path)


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().float().numpy().astype(np.float32))


# ----------------------------------------------------------------------------------------------
def build(name, c, vocab_size, bos, eos, seed):
    from transformers import Sam3Config, Sam3Model
    from transformers import Sam3TrackerConfig, Sam3TrackerModel
    g = c["image_size"] // c["patch"]
    vision = dict(
        backbone_config=dict(hidden_size=c["vit_hidden"], intermediate_size=c["vit_inter"],
                             num_hidden_layers=c["vit_layers"], num_attention_heads=c["vit_heads"],
                             image_size=c["image_size"], patch_size=c["patch"],
                             pretrain_image_size=c["pretrain"], window_size=c["window"],
                             global_attn_indexes=c["global_idx"]),
        fpn_hidden_size=c["fpn"], scale_factors=[4.0, 2.0, 1.0, 0.5],
        backbone_feature_sizes=[[4 * g, 4 * g], [2 * g, 2 * g], [g, g]])
    text = dict(vocab_size=vocab_size, hidden_size=c["text_hidden"], intermediate_size=c["text_inter"],
                projection_dim=c["text_hidden"] // 2, num_hidden_layers=c["text_layers"],
                num_attention_heads=c["text_heads"], max_position_embeddings=32, hidden_act="gelu",
                bos_token_id=bos, eos_token_id=eos, pad_token_id=eos)
    d = c["fpn"]
    det_cfg = Sam3Config(
        vision_config=vision, text_config=text,
        geometry_encoder_config=dict(hidden_size=d, num_layers=c["geo_layers"], num_attention_heads=c["heads"],
                                     intermediate_size=c["ffn"], roi_size=7),
        detr_encoder_config=dict(hidden_size=d, num_layers=c["enc_layers"], num_attention_heads=c["heads"],
                                 intermediate_size=c["ffn"]),
        detr_decoder_config=dict(hidden_size=d, num_layers=c["dec_layers"], num_queries=c["queries"],
                                 num_attention_heads=c["heads"], intermediate_size=c["ffn"]),
        mask_decoder_config=dict(hidden_size=d, num_upsampling_stages=3, num_attention_heads=c["heads"]))
    det = Sam3Model(det_cfg).eval()
    init_module(det, "detector_model.", seed)

    trk_cfg = Sam3TrackerConfig(
        vision_config=json.loads(json.dumps(vision)),
        prompt_encoder_config=dict(hidden_size=d, image_size=c["image_size"], patch_size=c["patch"]),
        mask_decoder_config=dict(hidden_size=d, mlp_dim=c["trk_mlp"], num_attention_heads=c["trk_heads"],
                                 iou_head_hidden_dim=d))
    trk = Sam3TrackerModel(trk_cfg).eval()
    # The tracker's ViT is the detector's (same tensors in the released checkpoint).
    trk.vision_encoder.backbone.load_state_dict(det.vision_encoder.backbone.state_dict())
    tsd = trk.state_dict()
    for k, v in tsd.items():
        if k.startswith("vision_encoder.backbone.") or not v.is_floating_point():
            continue
        rel = ("tracker_neck." + k[len("vision_encoder.neck."):]) if k.startswith("vision_encoder.neck.") \
            else "tracker_model." + k
        v.copy_(torch.from_numpy(init_tensor(rel, tuple(v.shape), seed)).to(v.dtype))
    pe = "prompt_encoder.shared_embedding.positional_embedding"
    if pe in tsd and "shared_image_embedding.positional_embedding" in tsd:
        tsd[pe].copy_(tsd["shared_image_embedding.positional_embedding"])
    return det, det_cfg, trk, trk_cfg


def released_state_dict(det, trk):
    out = {}
    for k, v in det.state_dict().items():
        out["detector_model." + k] = v.detach().clone().contiguous()
    for k, v in trk.state_dict().items():
        if k.startswith("vision_encoder.backbone."):
            continue
        if k.startswith("vision_encoder.neck."):
            out["tracker_neck." + k[len("vision_encoder.neck."):]] = v.detach().clone().contiguous()
        else:
            out["tracker_model." + k] = v.detach().clone().contiguous()
    return out


def write_config(path, det_cfg, trk_cfg):
    det = det_cfg.to_dict()
    trk = trk_cfg.to_dict()
    trk["model_type"] = "sam3_tracker_video"
    # Sam3TrackerVideoConfig derives the prompt encoder's image size from its own image_size
    # (default 1008): state it, so every reader of this file sees the tiny size.
    trk["image_size"] = trk_cfg.prompt_encoder_config.image_size
    cfg = {"architectures": ["Sam3VideoModel"], "model_type": "sam3_video",
           "detector_config": det, "tracker_config": trk}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True, default=str)


# ----------------------------------------------------------------------------------------------
def dump_vision(det, proc_cls, c, img, path):
    S = c["image_size"]
    pre_u8 = proc_cls(size={"height": S, "width": S}, do_rescale=False, do_normalize=False)(
        images=img, return_tensors="pt")["pixel_values"][0]
    pv = proc_cls(size={"height": S, "width": S})(images=img, return_tensors="pt")["pixel_values"]
    rec = {}
    bb = det.vision_encoder.backbone
    hooks = [bb.embeddings.register_forward_hook(lambda m, a, o: rec.__setitem__("embed", o)),
             bb.layer_norm.register_forward_hook(lambda m, a, o: rec.__setitem__("ln_pre", o))]
    for i, layer in enumerate(bb.layers):
        hooks.append(layer.register_forward_hook(lambda m, a, o, i=i: rec.__setitem__(f"layer{i}", o)))
    vo = det.get_vision_features(pixel_values=pv)
    for h in hooks:
        h.remove()
    C = c["vit_hidden"]
    t = [("input.image", img), ("pre.resized", pre_u8.float().round().to(torch.uint8).numpy()),
         ("pre.pixel_values", f32(pv[0])),
         ("vit.embed", f32(rec["embed"]).reshape(-1, C)), ("vit.ln_pre", f32(rec["ln_pre"]).reshape(-1, C))]
    for i in range(c["vit_layers"]):
        o = rec[f"layer{i}"]
        o = o[0] if isinstance(o, tuple) else o
        t.append((f"vit.layer.{i}", f32(o).reshape(-1, C)))
    t.append(("vit.out", f32(vo.last_hidden_state[0])))
    for j, (fh, fp) in enumerate(zip(vo.fpn_hidden_states, vo.fpn_position_encoding)):
        t.append((f"fpn.{j}", f32(fh[0])))
        t.append((f"fpn_pos.{j}", f32(fp[0])))
    sam3file.write(path, {"arch": "dump", "dump.kind": "vision", "image.width": img.shape[1],
                          "image.height": img.shape[0]}, t)
    log(f"  vision: vit.out |max| {float(vo.last_hidden_state.abs().max()):.3g}, fpn0 {tuple(vo.fpn_hidden_states[0].shape)}")
    return vo


def dump_text(det, tok, path):
    t = []
    cfg = {"arch": "dump", "dump.kind": "text", "text.count": len(TEXT_PROMPTS)}
    for k, p in enumerate(TEXT_PROMPTS):
        enc = tok(p, padding="max_length", max_length=32, return_tensors="pt")
        ids, am = enc["input_ids"], enc["attention_mask"]
        n = int(am.sum())
        feats = det.get_text_features(input_ids=ids, attention_mask=am).pooler_output[0, :n]
        cfg[f"text.{k}.prompt"] = p
        t.append((f"text.{k}.ids", ids[0, :n].numpy().astype(np.int32)))
        t.append((f"text.{k}.features", f32(feats)))
        log(f"  text {p!r}: {n} ids, |max| {float(feats.abs().max()):.3g}")
    sam3file.write(path, cfg, t)


def dump_case(det, proc, c, img, vo, case, path):
    from transformers import Sam3Model  # noqa: F401
    cname, text, boxes, labels = case
    H0, W0 = img.shape[:2]
    kw = {}
    if boxes is not None:
        px = [[b[0] * W0, b[1] * H0, b[2] * W0, b[3] * H0] for b in boxes]
        kw = dict(input_boxes=[px], input_boxes_labels=[labels])
    text_in = text if text is not None else "visual"
    inputs = proc(images=img, text=text_in, return_tensors="pt", **kw)
    rec = {}
    hooks = [det.geometry_encoder.register_forward_hook(lambda m, a, o: rec.__setitem__("geo", o)),
             det.detr_encoder.register_forward_hook(lambda m, a, o: rec.__setitem__("enc", o)),
             det.detr_decoder.register_forward_hook(lambda m, a, o: rec.__setitem__("dec", o))]
    # The image features are the ones dump_vision computed from the same pixels: reuse them.
    fwd = dict(vision_embeds=vo, input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    if boxes is not None:
        fwd["input_boxes"] = inputs["input_boxes"]
        fwd["input_boxes_labels"] = inputs["input_boxes_labels"]
    out = det(**fwd)
    for h in hooks:
        h.remove()
    am = inputs["attention_mask"][0].bool()
    n = int(am.sum())
    tfe = det.get_text_features(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).pooler_output[0]
    prompt = [tfe[:n]]
    t = [("input.ids", inputs["input_ids"][0, :n].numpy().astype(np.int32)), ("text.features", f32(tfe[:n]))]
    if boxes is not None:
        t += [("input.boxes", np.asarray(kw["input_boxes"][0], np.float32)),
              ("input.labels", np.asarray(labels, np.int32)),
              ("geo.input_boxes", f32(inputs["input_boxes"][0]))]
        go = rec["geo"]
        gm = go.attention_mask[0].bool() if go.attention_mask is not None else torch.ones(go.last_hidden_state.shape[1], dtype=torch.bool)
        gf = go.last_hidden_state[0][gm]
        t.append(("geo.features", f32(gf)))
        prompt.append(gf)
    t.append(("prompt.features", f32(torch.cat(prompt, 0))))
    t.append(("detr_enc.out", f32(rec["enc"].last_hidden_state[0])))
    dec = rec["dec"]
    t.append(("detr_dec.hidden", f32(dec.intermediate_hidden_states[:, 0])))
    t.append(("detr_dec.ref_boxes", f32(dec.reference_boxes[:, 0])))
    t.append(("detr_dec.presence", f32(dec.presence_logits.reshape(-1))))
    t += [("out.pred_logits", f32(out.pred_logits[0])), ("out.pred_boxes", f32(out.pred_boxes[0])),
          ("out.presence_logits", f32(out.presence_logits.reshape(-1))), ("out.pred_masks", f32(out.pred_masks[0])),
          ("out.semantic_seg", f32(out.semantic_seg[0, 0]))]
    # Post-processing exactly as the processor does it (threshold 0.3, mask threshold 0.5).
    scores = torch.sigmoid(out.pred_logits[0]) * torch.sigmoid(out.presence_logits.reshape(-1)[0])
    keep = torch.nonzero(scores > 0.3).flatten()
    res = proc.post_process_instance_segmentation(out, threshold=0.3, mask_threshold=0.5, target_sizes=[(H0, W0)])[0]
    masks = res["masks"].to(torch.uint8).numpy().reshape(-1, H0, W0)
    t += [("post.keep", keep.numpy().astype(np.int32)), ("post.scores", f32(res["scores"])),
          ("post.boxes", f32(res["boxes"]).reshape(-1, 4)), ("post.masks", np.ascontiguousarray(masks))]
    try:
        sem = proc.post_process_semantic_segmentation(out, target_sizes=[(H0, W0)])[0]
        t.append(("post.semantic", np.ascontiguousarray(sem.to(torch.uint8).numpy())))
    except Exception as e:  # noqa: BLE001
        log(f"  (semantic post-processing skipped: {e!r})")
    cfg = {"arch": "dump", "dump.kind": "case", "case.name": cname, "case.text": text_in,
           "case.has_text": int(text is not None), "post.threshold": 0.3, "post.mask_threshold": 0.5,
           "image.width": W0, "image.height": H0}
    sam3file.write(path, cfg, t)
    log(f"  case {cname}: prompt {len(torch.cat(prompt, 0))} tokens, "
        f"presence {float(out.presence_logits.reshape(-1)[0]):.3f}, kept {len(keep)} of {len(scores)}: "
        f"scores {[round(float(s), 3) for s in scores]}")


def tokenizer_goldens(tok, prompts, extra_bytes, path):
    with open(path, "w", encoding="ascii") as f:
        for p in prompts:
            ids = tok(p)["input_ids"]
            f.write(p.encode("utf-8").hex() + "\t" + " ".join(str(i) for i in ids) + "\n")
        for b in extra_bytes:  # invalid UTF-8: we document U+FFFD replacement, as Python decodes it
            ids = tok(b.decode("utf-8", errors="replace"))["input_ids"]
            f.write(b.hex() + "\t" + " ".join(str(i) for i in ids) + "\n")


INVALID_UTF8 = [b"caf\xe9 au lait", b"\xff\xfe dog", b"truncated \xe2\x82", b"\xc0\xaf slash", b"ok \xed\xa0\x80 surrogate"]


def load_detector(src):
    """Sam3Model from a checkpoint dir in either layout; every detector key must load."""
    from safetensors.torch import load_file
    from transformers import Sam3Config, Sam3Model
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    det = cfg["detector_config"] if cfg.get("model_type") == "sam3_video" else cfg
    det = {k: v for k, v in det.items() if k not in ("model_type", "architectures", "transformers_version")}
    model = Sam3Model(Sam3Config(**det)).eval()
    files = [os.path.join(src, "model.safetensors")]
    idx = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted({os.path.join(src, v) for v in json.load(f)["weight_map"].values()})
    sd = {}
    for fn in files:
        for k, v in load_file(fn).items():
            if k.startswith("detector_model."):
                sd[k[len("detector_model."):]] = v.float()
            elif not k.startswith(("tracker_model.", "tracker_neck.")):
                sd[k] = v.float()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"checkpoint does not match Sam3Model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model, model.config


def cfg_summary(cfg):
    b = cfg.vision_config.backbone_config
    return dict(image_size=b.image_size, vit_hidden=b.hidden_size, vit_layers=b.num_hidden_layers)


def read_image(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB"))


def from_checkpoint(a):
    from transformers import Sam3Processor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    import time
    t0 = time.time()
    det, cfg = load_detector(a.from_checkpoint)
    log(f"loaded {a.from_checkpoint} in {time.time() - t0:.1f} s")
    tok = make_tokenizer(a.from_checkpoint)
    c = cfg_summary(cfg)
    S = c["image_size"]
    img = read_image(a.image) if a.image else test_image(640, 480, a.seed)
    d = os.path.join(a.outdir, a.name)
    os.makedirs(d, exist_ok=True)
    ip = Sam3ImageProcessor(size={"height": S, "width": S})
    proc = Sam3Processor(image_processor=ip, tokenizer=tok)
    t0 = time.time()
    vo = dump_vision(det, Sam3ImageProcessor, c, img, os.path.join(d, "ref_vision.sam3"))
    log(f"vision in {time.time() - t0:.1f} s")
    dump_text(det, tok, os.path.join(d, "ref_text.sam3"))
    failures = []
    for case in CASES:
        try:
            t0 = time.time()
            dump_case(det, proc, c, img, vo, case, os.path.join(d, f"ref_case_{case[0]}.sam3"))
            log(f"case {case[0]} in {time.time() - t0:.1f} s")
        except Exception:  # noqa: BLE001
            failures.append(case[0])
            traceback.print_exc()
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--clip", help="dir with the real CLIP vocab.json + merges.txt (goldens only)")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--image-size", type=int, help="build the configurations at this input side (into NAME_sN)")
    ap.add_argument("--from-checkpoint", metavar="SRC", help="dump an existing checkpoint dir (config.json, "
                    "model.safetensors, vocab.json, merges.txt) instead of building the tiny ones")
    ap.add_argument("--name", default="full", help="output subfolder with --from-checkpoint")
    ap.add_argument("--image", help="image file for --from-checkpoint (default: the synthetic test image)")
    a = ap.parse_args()
    if a.from_checkpoint:
        return from_checkpoint(a)
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    from transformers import Sam3Processor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    os.makedirs(a.outdir, exist_ok=True)
    failures = []

    vocab_dir = os.path.join(a.outdir, "synthetic_vocab")
    vocab_size = synthetic_vocab(vocab_dir)
    tok = make_tokenizer(vocab_dir)
    bos, eos = tok.convert_tokens_to_ids("<|startoftext|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    log(f"synthetic vocab {vocab_size}, bos {bos}, eos {eos}")
    prompts_path = os.path.join(ROOT, "tests", "data", "tokenizer_prompts.json")
    if os.path.exists(prompts_path):
        with open(prompts_path, encoding="utf-8") as f:
            prompts = json.load(f)
        for label, d in (("synth", vocab_dir), ("clip", a.clip)):
            if not d:
                continue
            try:
                tokenizer_goldens(make_tokenizer(d), prompts, INVALID_UTF8, os.path.join(a.outdir, f"tokenizer_golden_{label}.txt"))
                log(f"tokenizer goldens {label}: {len(prompts) + len(INVALID_UTF8)} prompts")
            except Exception:  # noqa: BLE001
                failures.append(f"goldens {label}")
                traceback.print_exc()

    for name in CONFIGS:
        if a.only and name not in a.only.split(","):
            continue
        name, c = sized(name, a.image_size)
        log(f"== {name} (image_size {c['image_size']})")
        try:
            d = os.path.join(a.outdir, name)
            os.makedirs(d, exist_ok=True)
            for fn in ("vocab.json", "merges.txt"):
                shutil.copy(os.path.join(vocab_dir, fn), os.path.join(d, fn))
            det, det_cfg, trk, trk_cfg = build(name, c, vocab_size, bos, eos, a.seed)
            from safetensors.torch import save_file
            save_file(released_state_dict(det, trk), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
            write_config(os.path.join(d, "config.json"), det_cfg, trk_cfg)
            W0, H0 = c["image_wh"]
            img = test_image(W0, H0, a.seed)
            write_png(os.path.join(d, "image.png"), img)
            S = c["image_size"]
            ip = Sam3ImageProcessor(size={"height": S, "width": S})
            ip.save_pretrained(d)  # preprocessor_config.json, as the hub ships it
            proc = Sam3Processor(image_processor=ip, tokenizer=tok)
            vo = dump_vision(det, Sam3ImageProcessor, c, img, os.path.join(d, "ref_vision.sam3"))
            dump_text(det, tok, os.path.join(d, "ref_text.sam3"))
            for case in CASES:
                try:
                    dump_case(det, proc, c, img, vo, case, os.path.join(d, f"ref_case_{case[0]}.sam3"))
                except Exception:  # noqa: BLE001
                    failures.append(f"{name}/{case[0]}")
                    traceback.print_exc()
        except Exception:  # noqa: BLE001
            failures.append(name)
            traceback.print_exc()
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
