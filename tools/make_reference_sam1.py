#!/usr/bin/env python3
"""Reference dumps for sam3.h's SAM 1 path (HF SamModel), made with Hugging Face transformers 5.17.

Needs torch + transformers 5.17 + torchvision + safetensors + PIL, so it runs on the GPU machine (the
model runs on its CPU in fp32, like tools/make_reference.py; sam1.md section 14 recommends HF fp32 CPU
dumps, and the processor's bit-exact uint8 resize is the CPU AVX2/AVX512 kernel):

    python3 tools/make_reference_sam1.py OUTDIR [--only sam1_a,sam1_b] [--seed N]
    python3 tools/make_reference_sam1.py OUTDIR --fullsize NAME [--image PHOTO.jpg] [--seed N]

Default mode: for every tiny configuration in CONFIGS (sam1_a: 8x8 token grid, window 4, no window
padding; sam1_b: 6x6 grid, window 4, padded to 8x8, other widths/heads/depths so nothing can be
hard-coded) it
  * builds SamModel(SamConfig(...)) with seeded random weights scaled so activations are O(1)
    (HF's init makes the ViT near-identity and hides bugs): every tensor gets its own generator,
    numpy default_rng([seed, crc32(state-dict name)]), so values do not depend on module order:
      Linear / Conv weights N(0, 1/fan_in) (fan_in = in*kh*kw; ConvTranspose [in, out, kh, kw]: in),
      biases 0.1 N, LayerNorm / LN2d weights 1 + 0.1 N and biases 0.1 N,
      vision_encoder.pos_embed 0.5 N, rel_pos_h / rel_pos_w N(0, 1/head_dim) (so each bias term
      q.R is O(1), like the scaled q.k logits), the random-Fourier matrix
      shared_image_embedding.positional_embedding N(0, 1) (its tied prompt-encoder name is the same
      tensor), point / not-a-point / no-mask embeddings, iou_token and mask_tokens 0.5 N;
  * writes OUTDIR/NAME/: model.safetensors (safetensors.torch.save_file of cloned contiguous
    tensors; sam1_a holds only shared_image_embedding.positional_embedding, as HF 5.17's
    save_pretrained writes it, sam1_b both tied names, so the converter's two paths are exercised),
    config.json (config.to_dict()), preprocessor_config.json (SamImageProcessor with
    size.longest_edge = pad_size = image_size, saved by save_pretrained), image.png (the test image),
    state_dict.tsv (SamModel.state_dict() names and shapes in module order) and model.sam3
    (tools/convert.py run on the checkpoint: a check that it converts);
  * checks tools/convert.py's manifest against SamModel.state_dict() (names, shapes, order);
  * dumps, in the .sam3 container (tools/sam3file.py, arch "dump"):
      ref_sam1_image.sam3   input.image u8 [H0,W0,3]; pre.pixel_values f32 [3,S,S] (normalised and
                            zero-padded); pre.reshaped i32 [2] (h1, w1); pre.resized u8 [3,h1,w1]
                            (the uint8 resize alone, extra, when the processor allows it);
                            vit.embed f32 [N,C] (patch embedding + pos_embed, N = g*g grid order);
                            vit.layer.{i} f32 [N,C] (each block's output); vit.neck f32 [Cout,g,g]
                            (= the image embeddings); sam1.image_pe f32 [Cout,g,g]
                            (get_image_wide_positional_embeddings)
                            config: dump.kind, image.width, image.height
      ref_sam1_<case>.sam3  input.points f32 [n,2] (original-image pixels) + input.labels i32 [n]
                            when the case has points; input.box f32 [4] (x1,y1,x2,y2, original
                            pixels) when it has a box; input.mask f32 [4g,4g] (mask logits) when it
                            has a mask; pre.points f32 [n,2] / pre.box f32 [4] (extra: the
                            processor's float64 resized-frame coordinates, rounded to f32);
                            sam1.sparse f32 [Ns,Cout] and sam1.dense f32 [Cout,g,g] (the prompt
                            encoder's outputs, hooked); sam1.all_masks f32 [T,4g,4g] and
                            sam1.all_iou f32 [T] (all T = num_multimask_outputs + 1 mask tokens
                            before the multimask selection: token 0 from a multimask_output=False
                            run, tokens 1.. from a multimask_output=True run on the same
                            inputs; the IoU vector is also hooked from iou_prediction_head and
                            compared); out.masks f32 [k,4g,4g] + out.iou f32 [k] (SamModel's
                            pred_masks / iou_scores for the case's multimask setting: k = 3 or 1);
                            post.masks u8 [k,H0,W0] (SamProcessor.post_process_masks with its
                            defaults: mask_threshold 0.0, binarize True, pad_size = processor's)
                            config: dump.kind, case.name, case.multimask (0/1), image.width,
                            image.height
    Cases (coordinates are fractions of the image, rounded to 1/4 pixel so f32 holds them exactly):
      point      one positive click, multimask on
      points     two positive clicks and one negative, multimask on
      box        one box, multimask off
      box_point  a box and a positive click, multimask on
      single     one positive click, multimask off
      refine     the single case's prompt plus its own low-resolution mask logits (pred_masks of
                 the single case, [4g,4g]) as input_masks, multimask off

--fullsize NAME does the same for SamConfig() (ViT-B, facebook/sam-vit-base's architecture) with
random scaled weights, SamImageProcessor() defaults (1024) and --image (default: a 640x480
synthetic image), writing OUTDIR/NAME/ (checkpoint, dumps, model.sam3), so the lead can compare
sam3.h at ViT-B size.

How HF is called (batch 1, one prompt per image: P = 1):
  inputs = SamProcessor(image_processor=ip)(images=PIL image, input_points=[[[[x, y], ...]]],
           input_labels=[[[l, ...]]], input_boxes=[[[x1, y1, x2, y2]]], return_tensors="pt")
    -> input_points float64 [1,1,n,2], input_labels int64 [1,1,n], input_boxes float64 [1,1,4],
       all scaled to the resized frame by SamProcessor; original_sizes, reshaped_input_sizes
  emb  = model.get_image_embeddings(inputs["pixel_values"])          (computed once per image)
  out  = model(image_embeddings=emb, input_points=..., input_labels=..., input_boxes=...,
               input_masks=mask[None, None] (float32 [1,1,4g,4g]), multimask_output=...)
  post = processor.post_process_masks(out.pred_masks, inputs["original_sizes"],
                                      inputs["reshaped_input_sizes"])[0][0]
Prints library versions and per-case numbers; every case is in its own try/except; the exit status
is non-zero if anything failed.
"""
import argparse
import json
import math
import os
import shutil
import sys
import time
import traceback
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
import sam3file  # noqa: E402

torch.set_grad_enabled(False)

# ----------------------------------------------------------------------------------------------
# Tiny configurations.  sam1_a: image 128 / patch 16 -> grid 8, window 4 (2x2 windows, no padding).
# sam1_b: image 96 / patch 16 -> grid 6, window 4 (padded to 8: 2x2 windows, the right and bottom
# ones partly padding), 3 heads, two global blocks, 3 two-way decoder layers, other widths.
CONFIGS = {
    "sam1_a": dict(
        image_size=128, patch=16, window=4, vit_hidden=64, vit_heads=4, vit_layers=3, global_idx=[1],
        vit_mlp=128, out=32, mask_in=16, dec_layers=2, dec_heads=4, dec_mlp=64, iou_hidden=32,
        image_wh=(150, 100), save_both_fourier=False),
    "sam1_b": dict(
        image_size=96, patch=16, window=4, vit_hidden=48, vit_heads=3, vit_layers=4, global_idx=[1, 3],
        vit_mlp=96, out=32, mask_in=8, dec_layers=3, dec_heads=2, dec_mlp=48, iou_hidden=24,
        image_wh=(90, 131), save_both_fourier=True),
}

# (name, points as fractions of (W, H), labels, box as fractions, multimask, mask source case)
CASES = [
    dict(name="point", points=[(0.45, 0.55)], labels=[1], multimask=True),
    dict(name="points", points=[(0.30, 0.40), (0.70, 0.62), (0.52, 0.18)], labels=[1, 1, 0], multimask=True),
    dict(name="box", box=(0.20, 0.25, 0.80, 0.90), multimask=False),
    dict(name="box_point", box=(0.15, 0.10, 0.75, 0.70), points=[(0.40, 0.35)], labels=[1], multimask=True),
    dict(name="single", points=[(0.60, 0.35)], labels=[1], multimask=False),
    dict(name="refine", points=[(0.60, 0.35)], labels=[1], multimask=False, mask_from="single"),
]

FOURIER = "shared_image_embedding.positional_embedding"
FOURIER_COPY = "prompt_encoder.shared_embedding.positional_embedding"
EMBED_MARKERS = ("point_embed", "not_a_point_embed", "no_mask_embed", "iou_token", "mask_tokens")


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------------------------
def init_tensor(name, shape, seed):
    """Seeded, O(1)-scaled value for one state-dict tensor (see the module docstring)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    n = rng.standard_normal(shape)
    base = name.rsplit(".", 1)[-1]
    if name.endswith("positional_embedding"):  # random-Fourier matrix [2, num_pos_feats]
        return n
    if name.endswith("pos_embed"):  # absolute position embedding [1, g, g, C]
        return 0.5 * n
    if "rel_pos_" in name:  # [2S-1, head_dim]
        return n / math.sqrt(shape[1])
    if any(m in name for m in EMBED_MARKERS):
        return 0.5 * n
    if "norm" in name and len(shape) == 1:
        return 1.0 + 0.1 * n if base == "weight" else 0.1 * n
    if base == "bias" or len(shape) == 1:
        return 0.1 * n
    fan_in = shape[0] if ("upscale_conv" in name and len(shape) == 4) else int(np.prod(shape[1:]))
    return n / math.sqrt(max(fan_in, 1))


def init_model(model, seed):
    sd = model.state_dict()
    done = set()
    for k, v in sd.items():
        if k == FOURIER_COPY or not v.is_floating_point():
            continue
        v.copy_(torch.from_numpy(init_tensor(k, tuple(v.shape), seed)).to(v.dtype))
        done.add(k)
    if FOURIER_COPY in sd and sd[FOURIER_COPY].data_ptr() != sd[FOURIER].data_ptr():
        log("  note: the prompt encoder's Fourier matrix is not tied to shared_image_embedding; copying")
        sd[FOURIER_COPY].copy_(sd[FOURIER])
    # every parameter must have been set (a name we do not know would keep HF's init)
    for k, p in model.named_parameters():
        if k not in done and k != FOURIER_COPY:
            raise RuntimeError(f"parameter {k} was not initialised")


def tiny_config(c):
    from transformers import SamConfig
    return SamConfig(
        vision_config=dict(hidden_size=c["vit_hidden"], output_channels=c["out"],
                           num_hidden_layers=c["vit_layers"], num_attention_heads=c["vit_heads"],
                           image_size=c["image_size"], patch_size=c["patch"], window_size=c["window"],
                           global_attn_indexes=c["global_idx"], num_pos_feats=c["out"] // 2,
                           mlp_dim=c["vit_mlp"]),
        prompt_encoder_config=dict(hidden_size=c["out"], image_size=c["image_size"], patch_size=c["patch"],
                                   mask_input_channels=c["mask_in"]),
        mask_decoder_config=dict(hidden_size=c["out"], num_hidden_layers=c["dec_layers"],
                                 num_attention_heads=c["dec_heads"], mlp_dim=c["dec_mlp"],
                                 iou_head_hidden_dim=c["iou_hidden"]))


def test_image(w, h, seed):
    """The SAM 3 harness's deterministic test image (gradients, edges, noise)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    img[..., 0] = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    img[..., 1] = 255 * x / max(w - 1, 1)
    img[..., 2] = 255 * ((x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2)
    img += rng.normal(0, 12, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def f32(t):
    return np.ascontiguousarray(t.detach().cpu().float().numpy().astype(np.float32))


def first_tensor(o):
    """A module output as one tensor (tensor, tuple whose [0] is it, or a ModelOutput)."""
    if torch.is_tensor(o):
        return o
    if isinstance(o, (tuple, list)):
        return first_tensor(o[0])
    return first_tensor(o[0])  # ModelOutput: first non-None field


# ----------------------------------------------------------------------------------------------
def write_checkpoint(d, model, config, ip, save_both_fourier):
    from safetensors.torch import save_file
    os.makedirs(d, exist_ok=True)
    sd = model.state_dict()
    out = {}
    for k, v in sd.items():
        if k == FOURIER_COPY and not save_both_fourier:
            continue
        out[k] = v.detach().clone().contiguous()
    save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cj = config.to_dict()
    cj["model_type"] = cj.get("model_type") or "sam"
    cj["architectures"] = cj.get("architectures") or ["SamModel"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True, default=str)
    ip.save_pretrained(d)  # preprocessor_config.json, as the hub ships it
    with open(os.path.join(d, "state_dict.tsv"), "w") as f:
        for k, v in sd.items():
            f.write(f"{k}\t{list(v.shape)}\n")
    log(f"  checkpoint: {len(out)} tensors, {sum(v.numel() for v in out.values()):,} values; "
        f"preprocessor_config.json: {sorted(os.listdir(d))}")
    return cj


def check_manifest(model, cj):
    """tools/convert.py's manifest must list exactly SamModel's state dict (names, shapes, order)."""
    cfg = convert.fill_config(json.loads(json.dumps(cj, default=str)))
    man = [(n, tuple(s)) for n, s, _, _ in convert.manifest(cfg)]
    sd = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
    if set(man) != set(sd):
        only_m, only_s = sorted(set(man) - set(sd)), sorted(set(sd) - set(man))
        raise RuntimeError(f"convert.py manifest differs from SamModel.state_dict(): only in the manifest "
                           f"{only_m[:6]}, only in the model {only_s[:6]}")
    if man != sd:
        first = next(i for i, (a, b) in enumerate(zip(man, sd)) if a != b)
        log(f"  WARNING: manifest order differs from state_dict order at {first}: {man[first][0]} vs {sd[first][0]}")
    else:
        log(f"  manifest: {len(man)} names, identical to SamModel.state_dict() (names, shapes, order)")


def convert_checkpoint(d):
    rc = convert.main([d, os.path.join(d, "model.sam3"), "--quiet", "--verify"])
    if rc != 0:
        raise RuntimeError(f"tools/convert.py failed on {d}")


# ----------------------------------------------------------------------------------------------
def dump_image(model, proc, ip_cls, S, img, path):
    from PIL import Image
    pil = Image.fromarray(img)
    H0, W0 = img.shape[:2]
    inputs = proc(images=pil, return_tensors="pt")
    pv = inputs["pixel_values"]
    h1, w1 = (int(x) for x in inputs["reshaped_input_sizes"][0])
    t = [("input.image", np.ascontiguousarray(img)), ("pre.pixel_values", f32(pv[0])),
         ("pre.reshaped", np.array([h1, w1], np.int32))]
    try:
        raw = ip_cls(size={"longest_edge": S}, pad_size={"height": S, "width": S}, do_rescale=False,
                     do_normalize=False, do_pad=False)(images=pil, return_tensors="pt")["pixel_values"][0]
        raw = raw.float().round().clamp(0, 255).to(torch.uint8).numpy()
        if raw.shape == (3, h1, w1):
            t.append(("pre.resized", np.ascontiguousarray(raw)))
        else:
            log(f"  (pre.resized skipped: shape {raw.shape}, expected {(3, h1, w1)})")
    except Exception as e:  # noqa: BLE001
        log(f"  (pre.resized skipped: {e!r})")

    ve = model.vision_encoder
    rec = {}

    def pre0(m, args, kwargs):
        rec["embed_in"] = args[0] if args else kwargs.get("hidden_states")

    hooks = [ve.patch_embed.register_forward_hook(lambda m, a, o: rec.__setitem__("patch", first_tensor(o))),
             ve.layers[0].register_forward_pre_hook(pre0, with_kwargs=True),
             ve.neck.register_forward_hook(lambda m, a, o: rec.__setitem__("neck", first_tensor(o)))]
    for i, layer in enumerate(ve.layers):
        hooks.append(layer.register_forward_hook(lambda m, a, o, i=i: rec.__setitem__(f"layer{i}", first_tensor(o))))
    try:
        emb = model.get_image_embeddings(pv)
    finally:
        for h in hooks:
            h.remove()
    emb = first_tensor(emb)
    C = model.config.vision_config.hidden_size
    embed = rec.get("embed_in")
    manual = rec["patch"] + (ve.pos_embed if ve.pos_embed is not None else 0)
    if embed is None:
        log("  (layer 0 pre-hook saw no input: vit.embed = patch_embed + pos_embed)")
        embed = manual
    else:
        log(f"  vit.embed: hooked vs patch_embed + pos_embed max |diff| {float((embed - manual).abs().max()):.3g}")
    t.append(("vit.embed", f32(embed).reshape(-1, C)))
    for i in range(len(ve.layers)):
        t.append((f"vit.layer.{i}", f32(rec[f"layer{i}"]).reshape(-1, C)))
    log(f"  neck hook vs get_image_embeddings max |diff| {float((rec['neck'] - emb).abs().max()):.3g}")
    pe = first_tensor(model.get_image_wide_positional_embeddings())
    t += [("vit.neck", f32(emb[0])), ("sam1.image_pe", f32(pe[0]))]
    sam3file.write(path, {"arch": "dump", "dump.kind": "sam1_image", "image.width": W0, "image.height": H0}, t)
    log(f"  image {W0}x{H0} -> reshaped {h1}x{w1}, pixel_values {tuple(pv.shape)}; "
        f"vit.embed |max| {float(embed.abs().max()):.3g}, last block |max| "
        f"{float(rec[f'layer{len(ve.layers) - 1}'].abs().max()):.3g}, embeddings {tuple(emb.shape)} "
        f"|max| {float(emb.abs().max()):.3g}, image_pe {tuple(pe.shape)}")
    return pv, emb


def q4(v):
    """A coordinate rounded to 1/4 pixel: exact in f32, so the dump holds what HF was given."""
    return round(v * 4) / 4


def case_inputs(case, W0, H0):
    pts = [[q4(x * W0), q4(y * H0)] for x, y in case.get("points", [])]
    box = [q4(v * s) for v, s in zip(case["box"], (W0, H0, W0, H0))] if "box" in case else None
    return pts, list(case.get("labels", [])), box


def run_case(model, proc, pil, emb, case, W0, H0, mask=None):
    """Processor + SamModel for one case; returns everything the dump needs."""
    pts, labels, box = case_inputs(case, W0, H0)
    kw = {}
    if pts:
        kw["input_points"] = [[pts]]      # [image][prompt][point][xy]
        kw["input_labels"] = [[labels]]   # [image][prompt][point]
    if box is not None:
        kw["input_boxes"] = [[box]]       # [image][box][4]: one box = one prompt
    inputs = proc(images=pil, return_tensors="pt", **kw)
    fwd = dict(image_embeddings=emb)
    for k in ("input_points", "input_labels", "input_boxes"):
        if k in inputs:
            fwd[k] = inputs[k]
    if mask is not None:
        fwd["input_masks"] = mask[None, None].to(torch.float32)
    rec = {}

    def keep(key, fn=lambda o: o):
        def hook(m, a, o):  # returns None: a forward hook's return value would replace the output
            rec.setdefault(key, fn(o))
        return hook
    hooks = [model.prompt_encoder.register_forward_hook(keep("pe")),
             model.mask_decoder.iou_prediction_head.register_forward_hook(keep("iou_all", first_tensor))]
    try:
        mm = bool(case["multimask"])
        out = model(**fwd, multimask_output=mm)
    finally:
        for h in hooks:
            h.remove()
    other = model(**fwd, multimask_output=not mm)
    multi, single = (out, other) if mm else (other, out)
    all_masks = torch.cat([single.pred_masks[0, 0], multi.pred_masks[0, 0]], 0)
    all_iou = torch.cat([single.iou_scores[0, 0], multi.iou_scores[0, 0]], 0)
    hooked = rec["iou_all"].reshape(-1)
    d_iou = float((hooked - all_iou).abs().max())
    if hooked.shape != all_iou.shape or d_iou > 1e-5 * (1 + float(all_iou.abs().max())):
        raise RuntimeError(f"iou_prediction_head hook {hooked.tolist()} != combined {all_iou.tolist()}")
    sparse, dense = rec["pe"][0], rec["pe"][1]
    post = proc.post_process_masks(out.pred_masks, inputs["original_sizes"], inputs["reshaped_input_sizes"])[0]
    return dict(pts=pts, labels=labels, box=box, inputs=inputs, out=out, sparse=sparse, dense=dense,
                all_masks=all_masks, all_iou=all_iou, post=post, d_iou=d_iou)


def dump_case(model, proc, pil, pv, emb, case, path):
    H0, W0 = pil.height, pil.width
    mask = None
    if case.get("mask_from"):
        src = next(c for c in CASES if c["name"] == case["mask_from"])
        mask = run_case(model, proc, pil, emb, src, W0, H0)["out"].pred_masks[0, 0, 0].clone()
    r = run_case(model, proc, pil, emb, case, W0, H0, mask)
    inputs, out = r["inputs"], r["out"]
    if not torch.equal(inputs["pixel_values"], pv):
        raise RuntimeError("the case's pixel_values differ from the image dump's")
    t = []
    if r["pts"]:
        t += [("input.points", np.asarray(r["pts"], np.float32).reshape(-1, 2)),
              ("input.labels", np.asarray(r["labels"], np.int32))]
    if r["box"] is not None:
        t.append(("input.box", np.asarray(r["box"], np.float32)))
    if mask is not None:
        t.append(("input.mask", f32(mask)))
    if "input_points" in inputs:
        t.append(("pre.points", f32(inputs["input_points"][0, 0])))
    if "input_boxes" in inputs:
        t.append(("pre.box", f32(inputs["input_boxes"][0, 0])))
    sp = r["sparse"]
    sp = sp.reshape(-1, sp.shape[-1]) if sp is not None else torch.zeros(0, emb.shape[1])
    k = out.pred_masks.shape[2]
    post = r["post"].reshape(k, H0, W0)
    t += [("sam1.sparse", f32(sp)), ("sam1.dense", f32(r["dense"][0])),
          ("sam1.all_masks", f32(r["all_masks"])), ("sam1.all_iou", f32(r["all_iou"])),
          ("out.masks", f32(out.pred_masks[0, 0])), ("out.iou", f32(out.iou_scores[0, 0])),
          ("post.masks", np.ascontiguousarray(post.to(torch.uint8).numpy()))]
    cfg = {"arch": "dump", "dump.kind": "sam1_case", "case.name": case["name"],
           "case.multimask": int(case["multimask"]), "image.width": W0, "image.height": H0}
    sam3file.write(path, cfg, t)
    lo = out.pred_masks[0, 0]
    log(f"  case {case['name']}: {sp.shape[0]} sparse tokens, points {r['pts']} labels {r['labels']} box {r['box']}"
        f"{' + mask' if mask is not None else ''}; pre.points "
        f"{inputs['input_points'][0, 0].tolist() if 'input_points' in inputs else '-'} "
        f"({inputs['input_points'].dtype if 'input_points' in inputs else ''})")
    log(f"    iou all {[round(float(x), 4) for x in r['all_iou']]} (hook diff {r['d_iou']:.2g}); out {tuple(lo.shape)} "
        f"logits [{float(lo.min()):.3g}, {float(lo.max()):.3g}], positive "
        f"{[round(float((m > 0).float().mean()), 3) for m in lo]}; post {tuple(post.shape)} "
        f"foreground {[round(float(m.float().mean()), 3) for m in post]}")


# ----------------------------------------------------------------------------------------------
def run_config(name, model, config, ip, img, outdir, save_both_fourier, failures):
    from PIL import Image
    from transformers import SamImageProcessor, SamProcessor
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    cj = write_checkpoint(d, model, config, ip, save_both_fourier)
    Image.fromarray(img).save(os.path.join(d, "image.png"))
    for what, fn in (("manifest", lambda: check_manifest(model, cj)), ("convert", lambda: convert_checkpoint(d))):
        try:
            fn()
        except Exception:  # noqa: BLE001
            failures.append(f"{name}/{what}")
            traceback.print_exc()
    proc = SamProcessor(image_processor=ip)
    log(f"  processor: {type(proc).__name__} + {type(proc.image_processor).__name__}, "
        f"size {ip.size}, pad_size {ip.pad_size}; checkpoint written in {time.time() - t0:.1f} s")
    S = config.vision_config.image_size
    t0 = time.time()
    pv, emb = dump_image(model, proc, SamImageProcessor, S, img, os.path.join(d, "ref_sam1_image.sam3"))
    log(f"  image encoder in {time.time() - t0:.1f} s")
    pil = Image.fromarray(img)
    for case in CASES:
        try:
            t0 = time.time()
            dump_case(model, proc, pil, pv, emb, case, os.path.join(d, f"ref_sam1_{case['name']}.sam3"))
            log(f"    ({time.time() - t0:.1f} s)")
        except Exception:  # noqa: BLE001
            failures.append(f"{name}/{case['name']}")
            traceback.print_exc()


def versions():
    import PIL
    import safetensors
    import torchvision
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, torchvision {torchvision.__version__}, "
        f"safetensors {safetensors.__version__}, PIL {PIL.__version__}, numpy {np.__version__}; "
        f"cpu capability {torch.backends.cpu.get_cpu_capability()}, threads {torch.get_num_threads()}")
    if not transformers.__version__.startswith("5.17"):
        log(f"WARNING: transformers {transformers.__version__}, the reference is 5.17")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ", ".join(CONFIGS))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--fullsize", metavar="NAME", help="dump SamConfig() (ViT-B) with random weights into OUTDIR/NAME")
    ap.add_argument("--image", help="image file for --fullsize (default: a 640x480 synthetic image)")
    a = ap.parse_args()
    versions()
    from transformers import SamConfig, SamImageProcessor, SamModel
    os.makedirs(a.outdir, exist_ok=True)
    failures = []
    if a.fullsize:
        jobs = [(a.fullsize, None)]
    else:
        jobs = [(n, c) for n, c in CONFIGS.items() if not a.only or n in a.only.split(",")]
    for name, c in jobs:
        log(f"== {name}")
        try:
            t0 = time.time()
            if c is None:
                config = SamConfig()
                ip = SamImageProcessor()
                if a.image:
                    from PIL import Image
                    img = np.asarray(Image.open(a.image).convert("RGB"))
                else:
                    img = test_image(640, 480, a.seed)
                both = False
            else:
                config = tiny_config(c)
                S = c["image_size"]
                ip = SamImageProcessor(size={"longest_edge": S}, pad_size={"height": S, "width": S})
                img = test_image(*c["image_wh"], a.seed)
                both = c["save_both_fourier"]
            model = SamModel(config).eval()
            init_model(model, a.seed)
            vc = config.vision_config
            log(f"  SamModel: ViT {vc.hidden_size}x{vc.num_hidden_layers} heads {vc.num_attention_heads} image "
                f"{vc.image_size} patch {vc.patch_size} window {vc.window_size} global {vc.global_attn_indexes}; "
                f"{sum(p.numel() for p in model.parameters()):,} params; built in {time.time() - t0:.1f} s")
            run_config(name, model, config, ip, img, a.outdir, both, failures)
        except Exception:  # noqa: BLE001
            failures.append(name)
            traceback.print_exc()
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
