#!/usr/bin/env python3
"""Reference dumps for the interactive tracker head (points / boxes / masks) of sam3.h.

What it dumps.  For HF transformers 5.17 `Sam3TrackerModel` (the SAM-1/2-style promptable
segmentation head of SAM 3: shared ViT, the tracker's own FPN neck, random-Fourier PE, prompt encoder,
two-way mask decoder, stability-based single-mask selection) it writes, in the .sam3 container
(tools/sam3file.py, arch = "dump", dump.kind = "points"):

    OUTDIR/NAME/ref_points_image.sam3     once per image: input.image (u8 HxWx3) and the image-level
                                          tensors the C code caches per image:
                                          trk.fpn.{0,1,2}  tracker-neck levels 4x/2x/1x [D,s,s]
                                                           (before conv_s0/conv_s1; the 0.5x level is unused)
                                          trk.feat_s0 [D/8,4g,4g], trk.feat_s1 [D/4,2g,2g]
                                                           (conv_s0/conv_s1 outputs, the decoder's skips)
                                          trk.image_embed [D,g,g]  the 1x map exactly as it enters the mask
                                                           decoder (HF Sam3TrackerModel adds
                                                           no_memory_embedding to the unused 0.5x level, so
                                                           this equals trk.fpn.2; config trk.no_mem_added
                                                           says what 5.17 really did)
                                          trk.image_pe [D,g,g]  the dense random-Fourier image PE
    OUTDIR/NAME/ref_points_<case>.sam3    one per prompt case (one object per call, no object batching):
                                          input.points [n,2] (original-image pixels), input.labels [n] i32,
                                          input.box [4] (x0,y0,x1,y1 pixels), input.mask [mh,mw] (logits
                                          fed back as the mask prompt), trk.sparse [Ns,D], trk.dense [D,g,g],
                                          trk.all_masks [4,4g,4g] / trk.all_iou [4] / trk.object_score [1]
                                          (decoder outputs before the selection, from hooks), out.masks
                                          [k,4g,4g] / out.iou [k] / out.object_score [1] (the public output,
                                          k = 3 with multimask else 1), post.masks u8 [k,H0,W0] (the
                                          processor's post_process_masks, binarized > 0.0 as by default).
                                          An input tensor is omitted when the case has no such input.

Why.  sam3.h's parity target is HF 5.17 on seeded random weights (O(1) activations); these files let
the C tests check every stage of the tracker head separately (neck, PE, prompt encoder, decoder,
selection, post-processing) instead of only end-to-end masks.

Cases: point (1 positive click, multimask), points (2 positive + 1 negative, multimask), box (box only,
single mask), box_point (box + 1 positive click, single mask), edge (click on the corner pixel
(W0-1,H0-1), multimask), single (1 click, single mask: stability selection), refine (single's click +
single's out.masks[0] as mask prompt, single mask).  Extras (not required by the C tests): none (no
prompt at all: HF inserts a not-a-point), mask_resized (mask prompt only, given at the original image
size so HF's antialiased bilinear resize to 4g x 4g runs), single_alt (a single-mask prompt searched from
a deterministic set of clicks, boxes, multi-click sets and mask-refinement chains that takes the *other*
branch of the stability rule than `single`, so both branches are covered; written only if one is found,
see the log: random weights make token 0 rarely stable).  Every case records config case.stability
(token-0 stability score), case.stab_area_i / case.stab_area_u (its pixel counts > +delta / > -delta) and
case.selected_token (0..3 with single-mask output; -1 with multimask).

Usage (needs torch + transformers 5.17 + safetensors + PIL; runs on CPU in fp32):

    python3 tools/make_reference_points.py OUTDIR [--data tests/data] [--only tiny_a,tiny_b]
    python3 tools/make_reference_points.py OUTDIR --from-checkpoint SRC --name NAME [--image IMG]

The model is built from the checkpoint dir's config.json (`tracker_config` of a sam3_video config) and
loaded with load_state_dict from model.safetensors in the released layout, renaming
detector_model.vision_encoder.backbone. -> vision_encoder.backbone., tracker_neck. -> vision_encoder.neck.,
tracker_model. -> '' (the rules transformers registers for sam3_tracker).  As a cross-check the same
dir is also loaded with Sam3TrackerModel.from_pretrained and the state dicts compared
(--skip-hf-load-check to skip).  Every case runs in try/except; the exit code is non-zero if anything
failed.
"""
import argparse
import copy
import json
import os
import re
import sys
import tempfile
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never wait on the hub

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_reference as mr  # noqa: E402  (CONFIGS, read_image, test_image, f32, log)
import sam3file  # noqa: E402

torch.set_grad_enabled(False)
log = mr.log
f32 = mr.f32

# Released-layout key -> Sam3TrackerModel key (transformers' conversion rules for sam3_tracker).
RENAMES = (("detector_model.vision_encoder.backbone.", "vision_encoder.backbone."),
           ("tracker_neck.", "vision_encoder.neck."),
           ("tracker_model.", ""))
# Video-only tracker keys that Sam3TrackerModel ignores (its _keys_to_ignore_on_load_unexpected minus
# ^detector_model., which never reaches load_state_dict here); used if the class attribute is absent.
IGNORE_UNEXPECTED = (r"^memory_.*", r"^mask_downsample.*", r"^object_pointer_proj.*",
                     r"^temporal_positional_encoding_projection_layer.*", "no_memory_positional_encoding",
                     "no_object_pointer", "occlusion_spatial_embedding_parameter")

# Prompt cases. Points and boxes as fractions of (W0, H0); "corner" = the pixel (W0-1, H0-1).
CASES = [
    dict(name="point", points=[(0.45, 0.55)], labels=[1], multimask=True),
    dict(name="points", points=[(0.30, 0.40), (0.62, 0.52), (0.80, 0.22)], labels=[1, 1, 0], multimask=True),
    dict(name="box", box=(0.20, 0.25, 0.75, 0.85), multimask=False),
    dict(name="box_point", box=(0.15, 0.20, 0.70, 0.80), points=[(0.40, 0.50)], labels=[1], multimask=False),
    dict(name="edge", points="corner", labels=[1], multimask=True),
    dict(name="single", points=[(0.62, 0.38)], labels=[1], multimask=False),
    dict(name="refine", points="from:single", labels=[1], mask="from:single", multimask=False),
    # extras
    dict(name="none", multimask=True),
    dict(name="mask_resized", mask="from:single:resized", multimask=False),
]


def versions():
    import platform
    out = [f"python {platform.python_version()}", f"torch {torch.__version__}", f"numpy {np.__version__}"]
    for mod in ("transformers", "torchvision", "safetensors", "PIL"):
        try:
            m = __import__(mod)
            out.append(f"{mod} {getattr(m, '__version__', '?')}")
        except Exception as e:  # noqa: BLE001
            out.append(f"{mod} unavailable ({e!r})")
    log("versions: " + ", ".join(out) + f"; threads {torch.get_num_threads()}")
    import transformers
    if not transformers.__version__.startswith("5.17"):
        log(f"WARNING: transformers {transformers.__version__}, the reference is 5.17")
    return transformers.__version__


# ----------------------------------------------------------------------------------------------
# Model and processor
def read_config(src):
    with open(os.path.join(src, "config.json")) as f:
        full = json.load(f)
    if "tracker_config" in full or full.get("model_type") == "sam3_video":
        trk = copy.deepcopy(full.get("tracker_config") or {})
    else:
        trk = copy.deepcopy(full)
    det = full.get("detector_config") or {}
    return full, trk, det


def checkpoint_files(src):
    idx = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            return sorted({os.path.join(src, v) for v in json.load(f)["weight_map"].values()})
    return [os.path.join(src, "model.safetensors")]


def load_tracker(src, attn=None):
    """Sam3TrackerModel from a released-layout checkpoint dir, loaded with our own load_state_dict."""
    from safetensors.torch import load_file
    from transformers import Sam3TrackerConfig, Sam3TrackerModel
    full, trk, det = read_config(src)
    for k in ("model_type", "architectures", "transformers_version", "_name_or_path"):
        trk.pop(k, None)
    config = Sam3TrackerConfig(**trk)
    t0 = time.time()
    model = Sam3TrackerModel(config)
    model = model.float().eval()
    log(f"  built Sam3TrackerModel in {time.time() - t0:.1f} s")

    sd, dropped = {}, {}
    for fn in checkpoint_files(src):
        for k, v in load_file(fn).items():
            for a, b in RENAMES:
                if k.startswith(a):
                    sd[b + k[len(a):]] = v.float()
                    break
            else:
                p = k.split(".", 1)[0] + "." + (k.split(".")[1] if "." in k else "")
                dropped[p] = dropped.get(p, 0) + 1
    log(f"  checkpoint: {len(sd)} tensors for the tracker, dropped (not the tracker's): {dropped}")
    missing, unexpected = model.load_state_dict(sd, strict=False)
    pats = getattr(Sam3TrackerModel, "_keys_to_ignore_on_load_unexpected", None) or IGNORE_UNEXPECTED
    pats = [p for p in pats if not p.startswith("^detector_model")]
    ignorable = [k for k in unexpected if any(re.search(p, k) for p in pats)]
    bad_unexpected = [k for k in unexpected if k not in ignorable]
    log(f"  load_state_dict: {len(missing)} missing: {list(missing)}")
    log(f"  load_state_dict: {len(unexpected)} unexpected ({len(ignorable)} video-only, ignored as HF does): "
        f"{list(unexpected)}")
    params = dict(model.named_parameters())
    bad_missing = [k for k in missing if k in params or "positional_embedding" in k]
    if missing and not bad_missing:
        log(f"  WARNING: missing buffers (left at their constructed values): {list(missing)}")
    if bad_missing or bad_unexpected:
        raise RuntimeError(f"checkpoint does not match Sam3TrackerModel: missing {bad_missing}, "
                           f"unexpected {bad_unexpected}")
    pe_a = model.shared_image_embedding.positional_embedding
    pe_b = model.prompt_encoder.shared_embedding.positional_embedding
    log(f"  random-Fourier matrices: image {tuple(pe_a.shape)}, prompt {tuple(pe_b.shape)}, "
        f"identical: {bool(torch.equal(pe_a, pe_b))}")

    if attn:
        try:
            model.set_attn_implementation(attn)
        except Exception as e:  # noqa: BLE001
            log(f"  set_attn_implementation({attn}) failed: {e!r}; setting the config attribute")
            model.config._attn_implementation = attn
        model.mask_decoder.config._attn_implementation = attn
    md_cfg = model.mask_decoder.config
    if getattr(md_cfg, "_attn_implementation", None) is None:
        md_cfg._attn_implementation = getattr(model.config, "_attn_implementation", None) or "eager"
    log(f"  attention: model {getattr(model.config, '_attn_implementation', None)}, "
        f"mask decoder {md_cfg._attn_implementation}")

    # Sizes. The tracker's ViT is the detector's (same tensors), so the image size must agree.
    vc = model.config.vision_config
    S = int(vc.backbone_config.image_size)
    patch = int(vc.backbone_config.patch_size)
    pc = model.config.prompt_encoder_config
    det_S = (det.get("vision_config") or {}).get("backbone_config", {}).get("image_size")
    if det_S is not None and int(det_S) != S:
        raise RuntimeError(f"detector image_size {det_S} != tracker vision image_size {S}")
    if int(pc.image_size) != S or int(pc.patch_size) != patch:
        raise RuntimeError(f"prompt encoder image/patch {pc.image_size}/{pc.patch_size} != vision {S}/{patch}")
    g = S // patch
    fs = [list(x) for x in model.backbone_feature_sizes]
    if fs != [[4 * g, 4 * g], [2 * g, 2 * g], [g, g]]:
        raise RuntimeError(f"backbone_feature_sizes {fs} do not match the grid {g}")
    if tuple(model.prompt_encoder.image_embedding_size) != (g, g) or \
            tuple(model.prompt_encoder.mask_input_size) != (4 * g, 4 * g):
        raise RuntimeError("prompt encoder sizes do not match the grid")
    D = int(vc.fpn_hidden_size)
    log(f"  image_size {S}, patch {patch}, grid {g}, D {D}, scale_factors {list(vc.scale_factors)}, "
        f"dynamic_multimask_via_stability {model.mask_decoder.dynamic_multimask_via_stability} "
        f"(delta {model.mask_decoder.dynamic_multimask_stability_delta}, "
        f"thresh {model.mask_decoder.dynamic_multimask_stability_thresh})")
    return model, S, g, D


def hf_load_check(src, model):
    """Load the same dir with HF's own from_pretrained (conversion mapping) and compare state dicts.
    Returns a list of problems; an exception inside from_pretrained is only logged."""
    from transformers import Sam3TrackerModel
    t0 = time.time()
    try:
        ref = Sam3TrackerModel.from_pretrained(src)
    except Exception:  # noqa: BLE001
        log("  HF from_pretrained cross-check could not run (not counted as a failure):")
        traceback.print_exc()
        return []
    a, b = model.state_dict(), ref.state_dict()
    diff = [k for k in a if k in b and (a[k].shape != b[k].shape or not torch.equal(a[k].float(), b[k].float()))]
    only_a = [k for k in a if k not in b]
    only_b = [k for k in b if k not in a]
    log(f"  HF from_pretrained cross-check ({time.time() - t0:.1f} s): {len(a)} keys, {len(diff)} differ, "
        f"{len(only_a)} only ours, {len(only_b)} only HF's" + (f"; differ: {diff[:10]}" if diff else ""))
    del ref
    probs = []
    if diff or only_a or only_b:
        probs.append(f"from_pretrained disagrees: differ {diff[:5]}, only ours {only_a[:5]}, only HF {only_b[:5]}")
    return probs


def make_processor(S):
    """Sam3TrackerProcessor (the class the 5.17 docs use with Sam3TrackerModel) around a
    Sam3ImageProcessor resized to the checkpoint's own image size S (112 / 126 for the tiny configs,
    1008 at full size), never the 1008 default: size={"height": S, "width": S}.  target_size=S too, so
    the processor's point/box normalisation is x * S / W0, y * S / H0, matching the prompt encoder's
    input_image_size S.  Both are checked after construction."""
    from transformers import Sam3TrackerProcessor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    ip = Sam3ImageProcessor(size={"height": S, "width": S})
    try:
        proc = Sam3TrackerProcessor(image_processor=ip, target_size=S)
        how = "Sam3TrackerProcessor(image_processor=Sam3ImageProcessor(size=SxS), target_size=S)"
    except Exception as e:  # noqa: BLE001
        log(f"  direct Sam3TrackerProcessor construction failed ({e!r}); using from_pretrained on a saved "
            "image-processor config")
        tmp = tempfile.mkdtemp(prefix="sam3proc_")
        ip.save_pretrained(tmp)
        proc = Sam3TrackerProcessor.from_pretrained(tmp)
        if getattr(proc, "target_size", S) != S:
            proc.target_size = S
        how = "Sam3TrackerProcessor.from_pretrained(dir with Sam3ImageProcessor(size=SxS))"
    size = proc.image_processor.size
    h = size["height"] if isinstance(size, dict) else getattr(size, "height", None)
    w = size["width"] if isinstance(size, dict) else getattr(size, "width", None)
    if (h, w) != (S, S) or getattr(proc, "target_size", S) != S:
        raise RuntimeError(f"processor size {size} / target_size {getattr(proc, 'target_size', None)} != {S}")
    log(f"  processor: {how}; {type(proc).__name__} + {type(proc.image_processor).__name__}, "
        f"size {h}x{w}, target_size {getattr(proc, 'target_size', None)}")
    return proc


# ----------------------------------------------------------------------------------------------
# Hooks
class Taps:
    def __init__(self, model):
        self.rec = {"act": []}
        md = model.mask_decoder
        self.nmt = md.num_mask_tokens
        h = [model.vision_encoder.register_forward_hook(self._vision),
             md.register_forward_pre_hook(self._md_in, with_kwargs=True),
             model.prompt_encoder.register_forward_hook(lambda m, a, o: self.rec.__setitem__("pe_out", o)),
             md.iou_prediction_head.register_forward_hook(lambda m, a, o: self.rec.__setitem__("iou_all", o)),
             md.pred_obj_score_head.register_forward_hook(lambda m, a, o: self.rec.__setitem__("obj", o))]
        self.all_masks_ok = True
        try:
            # The decoder's own GELU module runs twice (upscaling); its 2nd output is the 32x(4g)^2 map
            # the hypernetwork vectors multiply.  All 4 masks = stack(hyper_i) @ that map, as HF does it.
            h.append(md.activation.register_forward_hook(lambda m, a, o: self.rec["act"].append(o)))
            for i, mlp in enumerate(md.output_hypernetworks_mlps):
                h.append(mlp.register_forward_hook(lambda m, a, o, i=i: self.rec.__setitem__(f"hyper{i}", o)))
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            self.all_masks_ok = False
        self.handles = h

    def _vision(self, m, a, o):
        self.rec["fpn"] = [t.detach().clone() for t in o.fpn_hidden_states]

    def _md_in(self, m, args, kwargs):
        self.rec["md_in"] = dict(kwargs)

    def reset(self):
        self.rec.clear()
        self.rec["act"] = []

    def remove(self):
        for x in self.handles:
            x.remove()

    def all_masks(self):
        """[b, p, 4, 4g, 4g] decoder masks before selection, or None."""
        r = self.rec
        if not self.all_masks_ok or len(r["act"]) < 2 or any(f"hyper{i}" not in r for i in range(self.nmt)):
            return None
        up = r["act"][-1]
        hyper = torch.stack([r[f"hyper{i}"] for i in range(self.nmt)], dim=2)
        b, p = hyper.shape[:2]
        _, c, hh, ww = up.shape
        return (hyper @ up.view(b, p, c, hh * ww)).view(b, p, -1, hh, ww)


def stability(logits, delta):
    """HF's _get_stability_scores for one [H,W] map: (score, area_i, area_u)."""
    m = logits.flatten()
    ai = int(torch.sum(m > delta))
    au = int(torch.sum(m > -delta))
    return (ai / au if au > 0 else 1.0), ai, au


# ----------------------------------------------------------------------------------------------
class Ctx:
    pass


def image_pass(ctx, img, path):
    """The public forward on pixel_values with no prompt; records and writes the image-level tensors."""
    model, proc, taps, S, g, D = ctx.model, ctx.proc, ctx.taps, ctx.S, ctx.g, ctx.D
    H0, W0 = img.shape[:2]
    enc = proc(images=img, return_tensors="pt")
    pv = enc["pixel_values"]
    orig = enc["original_sizes"]
    if tuple(pv.shape) != (1, 3, S, S):
        raise RuntimeError(f"pixel_values {tuple(pv.shape)}, expected (1, 3, {S}, {S})")
    osz = orig.tolist() if hasattr(orig, "tolist") else orig
    if [list(map(int, x)) for x in osz] != [[H0, W0]]:
        raise RuntimeError(f"original_sizes {osz} != [[{H0}, {W0}]]")
    taps.reset()
    t0 = time.time()
    out = model(pixel_values=pv)
    log(f"  image pass (pixel_values {tuple(pv.shape)}, |pv| max {float(pv.abs().max()):.3f}) in "
        f"{time.time() - t0:.1f} s")
    rec = taps.rec
    fpn = rec["fpn"]
    log(f"  tracker neck levels: {[tuple(t.shape[1:]) for t in fpn]} (the last one is unused)")
    md_in = rec.get("md_in", {})
    emb = list(out.image_embeddings)
    ie = md_in.get("image_embeddings", emb[-1])
    pe = md_in.get("image_positional_embeddings", model.get_image_wide_positional_embeddings())
    hr = md_in.get("high_resolution_features", emb[:-1])
    checks = {
        "image_embed == out.image_embeddings[-1]": torch.equal(ie, emb[-1]),
        "feat_s0 == out.image_embeddings[0]": torch.equal(hr[0], emb[0]),
        "feat_s1 == out.image_embeddings[1]": torch.equal(hr[1], emb[1]),
        "image_pe == get_image_wide_positional_embeddings()":
            torch.equal(pe[:1], model.get_image_wide_positional_embeddings()),
    }
    d_s0 = float((model.mask_decoder.conv_s0(fpn[0]) - hr[0]).abs().max())
    d_s1 = float((model.mask_decoder.conv_s1(fpn[1]) - hr[1]).abs().max())
    nm = model.no_memory_embedding.reshape(1, -1, 1, 1)
    d_plain = float((ie - fpn[2]).abs().max())
    d_nomem = float((ie - (fpn[2] + nm)).abs().max())
    no_mem_added = int(d_nomem < d_plain)
    log(f"  checks: {checks}; |conv_s0(fpn0) - feat_s0| {d_s0:.3g}, |conv_s1(fpn1) - feat_s1| {d_s1:.3g}")
    log(f"  no_memory_embedding (|max| {float(nm.abs().max()):.3g}): |image_embed - fpn2| {d_plain:.3g}, "
        f"|image_embed - (fpn2 + no_mem)| {d_nomem:.3g} -> added to the decoder input: "
        f"{'YES (spec says no: 5.17 differs!)' if no_mem_added else 'no (as the spec says)'}")
    if float(nm.abs().max()) == 0.0:
        log("  WARNING: no_memory_embedding is all zero, the check above is inconclusive")
    problems = [k for k, v in checks.items() if not v]
    t = [("input.image", np.ascontiguousarray(img, dtype=np.uint8))]
    for j in range(3):
        t.append((f"trk.fpn.{j}", f32(fpn[j][0])))
    t += [("trk.feat_s0", f32(hr[0][0])), ("trk.feat_s1", f32(hr[1][0])),
          ("trk.image_embed", f32(ie[0])), ("trk.image_pe", f32(pe[0]))]
    exp = {"trk.fpn.0": (D, 4 * g, 4 * g), "trk.fpn.1": (D, 2 * g, 2 * g), "trk.fpn.2": (D, g, g),
           "trk.feat_s0": (D // 8, 4 * g, 4 * g), "trk.feat_s1": (D // 4, 2 * g, 2 * g),
           "trk.image_embed": (D, g, g), "trk.image_pe": (D, g, g)}
    for n, a in t[1:]:
        if tuple(a.shape) != exp[n]:
            problems.append(f"{n} shape {a.shape} != {exp[n]}")
    cfg = {"arch": "dump", "dump.kind": "points", "case.name": "image", "case.multimask": 0,
           "image.width": W0, "image.height": H0, "trk.image_size": S, "trk.grid": g, "trk.hidden": D,
           "trk.no_mem_added": no_mem_added, "ref.attn": str(ctx.attn_impl), "ref.transformers": ctx.tf_version}
    sam3file.write(path, cfg, t)
    log(f"  wrote {path}: " + ", ".join(f"{n} {list(a.shape)}" for n, a in t))
    ctx.orig = orig
    ctx.image_embeddings = out.image_embeddings
    ctx.no_mem_added = no_mem_added
    ctx.image_out = out
    return problems


def run_case(ctx, name, multimask, points=None, labels=None, box=None, mask=None):
    """One prompted forward through the public API with image_embeddings from the image pass.
    Returns a dict with the tensors to write, info for the log, and the output."""
    model, proc, taps = ctx.model, ctx.proc, ctx.taps
    S = ctx.S
    W0, H0 = ctx.W0, ctx.H0
    kw = {}
    if points is not None:
        kw["input_points"] = [[[[float(x), float(y)] for x, y in points]]]   # [image][object][point][xy]
        kw["input_labels"] = [[[int(v) for v in labels]]]                    # [image][object][point]
    if box is not None:
        kw["input_boxes"] = [[[float(v) for v in box]]]                      # [image][box][x0,y0,x1,y1]
    enc = proc(original_sizes=ctx.orig, return_tensors="pt", **kw)
    fwd = dict(image_embeddings=ctx.image_embeddings, multimask_output=multimask)
    for k in ("input_points", "input_labels", "input_boxes"):
        if k in enc:
            fwd[k] = enc[k]
    if mask is not None:
        fwd["input_masks"] = mask
    # The processor's coordinate normalisation must be x*S/W0, y*S/H0 (no +0.5: the model adds it).
    if points is not None:
        want = torch.tensor(points, dtype=torch.float32) * torch.tensor([S / W0, S / H0])
        got = enc["input_points"][0, 0]
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-4):
            raise RuntimeError(f"processor point normalisation: got {got.tolist()}, want {want.tolist()}")
    if box is not None:
        want = torch.tensor(box, dtype=torch.float32) * torch.tensor([S / W0, S / H0, S / W0, S / H0])
        got = enc["input_boxes"].reshape(-1)
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-4):
            raise RuntimeError(f"processor box normalisation: got {got.tolist()}, want {want.tolist()}")
    taps.reset()
    out = model(**fwd)
    rec = taps.rec
    md_in = rec.get("md_in", {})
    sparse = md_in.get("sparse_prompt_embeddings")
    dense = md_in.get("dense_prompt_embeddings")
    if sparse is None or dense is None:
        sparse, dense = rec["pe_out"]
    k = out.pred_masks.shape[2]
    info = {"prompt_shapes": {kk: tuple(v.shape) for kk, v in fwd.items() if torch.is_tensor(v)},
            "Ns": int(sparse.shape[2])}
    problems = []

    masks_out = out.pred_masks[0, 0]            # [k, 4g, 4g]
    iou_out = out.iou_scores[0, 0]              # [k]
    obj_out = out.object_score_logits.reshape(1)
    all_m = taps.all_masks()
    all_iou = rec.get("iou_all")
    obj_all = rec.get("obj")
    md = model.mask_decoder
    sel = -1
    stab = None
    ai = au = -1
    if all_m is not None and all_iou is not None:
        all_m = all_m[0, 0]
        all_iou = all_iou[0, 0]
        delta, thresh = md.dynamic_multimask_stability_delta, md.dynamic_multimask_stability_thresh
        s, ai, au = stability(all_m[0], delta)
        stab = s
        best = 1 + int(torch.argmax(all_iou[1:]))
        srt = torch.sort(all_iou[1:], descending=True).values
        info["iou_gap_top2"] = float(srt[0] - srt[1]) if len(srt) > 1 else float("inf")
        info["stability"] = f"{s:.5f} (area {ai}/{au}, thresh {thresh}, delta {delta})"
        if multimask:
            ok = torch.equal(masks_out, all_m[1:]) and torch.equal(iou_out, all_iou[1:])
            info["branch"] = "multimask: tokens 1..3"
        else:
            dyn = md.dynamic_multimask_via_stability and not md.training
            stable = (s >= thresh) if dyn else True
            sel = 0 if stable else best
            ok = torch.equal(masks_out[0], all_m[sel]) and torch.equal(iou_out[0], all_iou[sel])
            if not dyn:
                info["branch"] = "token 0 (dynamic selection off)"
            elif stable:
                robust = (ai - 2) / (au + 2) >= thresh
                info["branch"] = (f"STABLE -> token 0 (margin ~{ai - thresh * au:.1f} px)"
                                  f"{'' if robust else ' (BORDERLINE: within 2 px of thresh)'}")
            else:
                robust = au <= 2 or (ai + 2) / (au - 2) < thresh
                info["branch"] = (f"FALLBACK -> token {best} (best IoU of 1..3; margin ~{thresh * au - ai:.1f} px)"
                                  f"{'' if robust else ' (BORDERLINE: within 2 px of thresh)'}")
                if info["iou_gap_top2"] < 1e-4:
                    info["branch"] += " (WARNING: near-tie of IoU scores)"
            info["robust"] = bool(robust) if dyn else True
        if not ok:
            md_diff = float((masks_out - (all_m[1:] if multimask else all_m[sel:sel + 1])).abs().max())
            problems.append(f"hooked pre-selection masks do not reproduce the public output (max diff {md_diff:.3g}); "
                            "trk.all_* omitted")
            all_m = None
    else:
        problems.append("could not hook the pre-selection masks; trk.all_* omitted")
        all_m = None

    post = ctx.proc.post_process_masks(out.pred_masks, enc["original_sizes"])[0][0]   # [k, H0, W0] bool
    t = []
    if points is not None:
        t.append(("input.points", np.asarray(points, np.float32).reshape(-1, 2)))
        t.append(("input.labels", np.asarray(labels, np.int32).reshape(-1)))
    if box is not None:
        t.append(("input.box", np.asarray(box, np.float32).reshape(4)))
    if mask is not None:
        t.append(("input.mask", f32(mask[0, 0])))
    t += [("trk.sparse", f32(sparse[0, 0])), ("trk.dense", f32(dense[0]))]
    if all_m is not None:
        t += [("trk.all_masks", f32(all_m)), ("trk.all_iou", f32(all_iou))]
        if obj_all is not None:
            t.append(("trk.object_score", f32(obj_all.reshape(1))))
    t += [("out.masks", f32(masks_out)), ("out.iou", f32(iou_out)), ("out.object_score", f32(obj_out)),
          ("post.masks", np.ascontiguousarray(post.to(torch.uint8).numpy()))]
    cfg = {"arch": "dump", "dump.kind": "points", "case.name": name, "case.multimask": int(multimask),
           "image.width": W0, "image.height": H0, "case.selected_token": int(sel),
           "case.stability": float(stab) if stab is not None else -1.0,
           "case.stab_area_i": int(ai), "case.stab_area_u": int(au),
           "trk.no_mem_added": int(ctx.no_mem_added), "post.mask_threshold": 0.0}
    info["iou_all"] = [round(float(x), 5) for x in all_iou] if all_iou is not None else None
    info["iou_out"] = [round(float(x), 5) for x in iou_out]
    info["object_score"] = round(float(obj_out[0]), 5)
    if all_m is not None:
        info["fg_all"] = [round(float((m > 0).float().mean()), 4) for m in all_m]
    info["fg_out"] = [round(float((m > 0).float().mean()), 4) for m in masks_out]
    info["fg_post"] = [round(float(m.float().mean()), 4) for m in post]
    info["logit_range"] = (round(float(masks_out.min()), 3), round(float(masks_out.max()), 3))
    if k != (3 if multimask else 1):
        problems.append(f"{k} masks returned with multimask={multimask}")
    return dict(name=name, tensors=t, cfg=cfg, info=info, out=out, problems=problems,
                points=points, labels=labels, stable=(sel == 0) if not multimask else None,
                robust=info.get("robust", True))


def alt_candidates(ctx, seed):
    """Deterministic single-mask prompts for the single_alt search: clicks on a 7x7 grid, boxes,
    click pairs, random multi-click sets (seeded)."""
    W0, H0 = ctx.W0, ctx.H0
    fr = [0.07, 0.21, 0.36, 0.5, 0.64, 0.79, 0.93]
    for fy in fr:
        for fx in fr:
            yield dict(points=[(fx * W0, fy * H0)], labels=[1])
    for b in ((0.05, 0.05, 0.95, 0.95), (0.1, 0.1, 0.5, 0.5), (0.5, 0.5, 0.9, 0.9), (0.3, 0.2, 0.7, 0.8),
              (0.0, 0.0, 1.0, 0.5), (0.0, 0.5, 1.0, 1.0), (0.2, 0.4, 0.25, 0.45), (0.45, 0.1, 0.55, 0.9)):
        yield dict(box=(b[0] * W0, b[1] * H0, b[2] * W0, b[3] * H0))
    rng = np.random.default_rng([seed, 7])
    for n in (2, 2, 2, 2, 3, 3, 3, 5, 5, 5, 8, 8, 8):
        pts = rng.uniform(0.05, 0.95, size=(n, 2)) * np.array([W0, H0])
        labels = [1] + [int(v) for v in rng.integers(0, 2, size=n - 1)]
        yield dict(points=[(float(x), float(y)) for x, y in pts], labels=labels)


def search_alt(ctx, results, seed):
    """Find a single-mask prompt whose stability-rule branch is the other one than `single`'s (robustly,
    i.e. not within 2 pixels of the threshold), then also try feeding the most promising candidates'
    masks back (refinement chains).  Writes ref_points_single_alt.sam3 if one is found."""
    base = results.get("single")
    if base is None or base["stable"] is None:
        raise RuntimeError("case single failed or has no selection info")
    want = not base["stable"]
    log(f"  single_alt: searching a prompt whose single-mask selection is {'STABLE' if want else 'FALLBACK'} "
        f"(single was {'STABLE' if base['stable'] else 'FALLBACK'})")
    tried, scored, chosen = 0, [], None

    def score(r):
        s = r["cfg"]["case.stability"]
        return s if want else -s

    for cand in alt_candidates(ctx, seed):
        r = run_case(ctx, "single_alt", False, cand.get("points"), cand.get("labels"), cand.get("box"))
        tried += 1
        if r["problems"]:
            continue
        scored.append((score(r), cand, r))
        if r["stable"] == want and r["robust"]:
            chosen = (cand, r)
            break
    if chosen is None:
        # Refinement chains from the 4 candidates closest to the wanted branch: feed out.masks[0] back.
        scored.sort(key=lambda x: -x[0])
        for _, cand, r in scored[:4]:
            for _ in range(3):
                mask = r["out"].pred_masks[:, :, 0].clone()
                r = run_case(ctx, "single_alt", False, cand.get("points"), cand.get("labels"), cand.get("box"), mask)
                tried += 1
                scored.append((score(r), dict(cand, mask=True), r))
                if not r["problems"] and r["stable"] == want and r["robust"]:
                    chosen = (cand, r)
                    break
            if chosen is not None:
                break
    stabs = sorted(x[2]["cfg"]["case.stability"] for x in scored)
    if stabs:
        log(f"  single_alt: {tried} prompts tried; token-0 stability min {stabs[0]:.4f}, median "
            f"{stabs[len(stabs) // 2]:.4f}, max {stabs[-1]:.4f} (threshold "
            f"{ctx.model.mask_decoder.dynamic_multimask_stability_thresh})")
    if chosen is None:
        log(f"  single_alt: no prompt took the {'STABLE' if want else 'FALLBACK'} branch robustly; not written")
        return
    cand, r = chosen
    log(f"  single_alt: found one after {tried} prompts ({sorted(k for k in cand)}"
        f"{' + its own mask fed back' if 'input.mask' in dict(r['tensors']) else ''})")
    write_case(ctx, r)


def write_case(ctx, res):
    path = os.path.join(ctx.outdir, f"ref_points_{res['name']}.sam3")
    sam3file.write(path, res["cfg"], res["tensors"])
    i = res["info"]
    log(f"  case {res['name']}: multimask {res['cfg']['case.multimask']}, prompt {i['prompt_shapes']}, Ns {i['Ns']}")
    log(f"    iou all {i['iou_all']} -> out {i['iou_out']}, object score {i['object_score']}, "
        f"logits {i['logit_range']}")
    log(f"    stability {i.get('stability')}; branch: {i.get('branch')}")
    log(f"    fg fraction: all {i.get('fg_all')}, out {i['fg_out']}, post {i['fg_post']}")
    log(f"    wrote {os.path.basename(path)}: " + ", ".join(f"{n} {list(a.shape)}" for n, a in res["tensors"]))
    for p in res["problems"]:
        log(f"    PROBLEM: {p}")


def resolve_case(ctx, case, results):
    W0, H0 = ctx.W0, ctx.H0
    pts = case.get("points")
    if pts == "corner":
        pts = [(float(W0 - 1), float(H0 - 1))]
    elif isinstance(pts, str) and pts.startswith("from:"):
        src = results.get(pts[5:])
        if src is None:
            raise RuntimeError(f"case {case['name']} needs case {pts[5:]}, which failed")
        pts = src["points"]
    elif pts is not None:
        pts = [(fx * W0, fy * H0) for fx, fy in pts]
    box = case.get("box")
    if box is not None:
        box = (box[0] * W0, box[1] * H0, box[2] * W0, box[3] * H0)
    mask = None
    m = case.get("mask")
    if m is not None:
        parts = m.split(":")
        src = results.get(parts[1])
        if src is None:
            raise RuntimeError(f"case {case['name']} needs case {parts[1]}, which failed")
        # The previous low-res logits, as in the HF docs: outputs.pred_masks[:, :, idx] -> [1, 1, 4g, 4g].
        mask = src["out"].pred_masks[:, :, 0].clone()
        if len(parts) > 2 and parts[2] == "resized":
            # Given at the original image size: HF resizes it to 4g x 4g (bilinear, antialias).
            mask = F.interpolate(mask, size=(H0, W0), mode="bilinear", align_corners=False)
        log(f"    mask prompt {tuple(mask.shape)} from {parts[1]}: logits [{float(mask.min()):.3f}, "
            f"{float(mask.max()):.3f}] (not clamped, as HF)")
    return pts, case.get("labels"), box, mask


def dump_model(src, img, outdir, args, tf_version):
    failures = []
    os.makedirs(outdir, exist_ok=True)
    model, S, g, D = load_tracker(src, args.attn)
    if not args.skip_hf_load_check:
        failures += hf_load_check(src, model)
    ctx = Ctx()
    ctx.model, ctx.S, ctx.g, ctx.D, ctx.outdir = model, S, g, D, outdir
    ctx.H0, ctx.W0 = img.shape[:2]
    ctx.proc = make_processor(S)
    ctx.taps = Taps(model)
    ctx.attn_impl = model.mask_decoder.config._attn_implementation
    ctx.tf_version = tf_version
    try:
        probs = image_pass(ctx, img, os.path.join(outdir, "ref_points_image.sam3"))
        for p in probs:
            log(f"  PROBLEM (image): {p}")
            failures.append(f"image: {p}")
        results = {}
        for case in CASES:
            name = case["name"]
            try:
                pts, labels, box, mask = resolve_case(ctx, case, results)
                res = run_case(ctx, name, case["multimask"], pts, labels, box, mask)
                write_case(ctx, res)
                results[name] = res
                failures += [f"{name}: {p}" for p in res["problems"]]
                if res.get("robust") is False:
                    log(f"    WARNING: case {name}'s selection is within 2 pixels of the stability threshold")
                if name == "none":
                    same = torch.equal(res["out"].pred_masks, ctx.image_out.pred_masks)
                    log(f"    pixel_values path == image_embeddings path for the no-prompt forward: {same}")
                    if not same:
                        failures.append("none: pixel_values and image_embeddings paths differ")
            except Exception:  # noqa: BLE001
                failures.append(name)
                traceback.print_exc()
        # single_alt: a prompt taking the other stability branch than `single`.
        try:
            search_alt(ctx, results, args.seed)
        except Exception:  # noqa: BLE001
            failures.append("single_alt")
            traceback.print_exc()
        branches = {n: r["info"].get("branch") for n, r in results.items() if not r["cfg"]["case.multimask"]}
        log(f"  single-mask selection branches: {branches}")
    finally:
        ctx.taps.remove()
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data"),
                    help="dir holding the tiny config dirs (config.json, model.safetensors, image.png)")
    ap.add_argument("--only", default="", help="comma-separated tiny config names (default: all of CONFIGS)")
    ap.add_argument("--from-checkpoint", metavar="SRC", help="a full-size checkpoint dir in the released layout "
                    "(e.g. tools/make_random_checkpoint.py's output) instead of the tiny ones")
    ap.add_argument("--name", default="full", help="output subfolder with --from-checkpoint")
    ap.add_argument("--image", help="image for --from-checkpoint (default: make_reference's synthetic 640x480)")
    ap.add_argument("--seed", type=int, default=1234, help="seed of the synthetic image")
    ap.add_argument("--attn", choices=("eager", "sdpa"), default=None,
                    help="attention implementation (default: HF's default, which is logged)")
    ap.add_argument("--skip-hf-load-check", action="store_true",
                    help="skip the Sam3TrackerModel.from_pretrained state-dict cross-check")
    a = ap.parse_args()
    tf_version = versions()
    os.makedirs(a.outdir, exist_ok=True)
    failures = []
    if a.from_checkpoint:
        jobs = [(a.name, a.from_checkpoint, a.image)]
    else:
        names = [n for n in a.only.split(",") if n and mr.config_of(n)] if a.only else list(mr.CONFIGS)
        unknown = [n for n in a.only.split(",") if n and not mr.config_of(n)]
        if unknown:
            log(f"unknown config names: {unknown}")
            failures += unknown
        jobs = [(n, os.path.join(a.data, n), os.path.join(a.data, n, "image.png")) for n in names]
    for name, src, image in jobs:
        log(f"== {name} ({src})")
        t0 = time.time()
        try:
            if image:
                img = mr.read_image(image)
            else:
                img = mr.test_image(640, 480, a.seed)
            img = np.ascontiguousarray(img[..., :3], dtype=np.uint8)
            log(f"  image {image or 'synthetic'}: {img.shape[1]}x{img.shape[0]}")
            if mr.config_of(name) and not a.from_checkpoint and tuple(mr.config_of(name)["image_wh"]) != \
                    (img.shape[1], img.shape[0]):
                log(f"  WARNING: image is not the {mr.config_of(name)['image_wh']} that make_reference.py wrote")
            fails = dump_model(src, img, os.path.join(a.outdir, name), a, tf_version)
            failures += [f"{name}/{x}" for x in fails]
        except Exception:  # noqa: BLE001
            failures.append(name)
            traceback.print_exc()
        log(f"== {name} done in {time.time() - t0:.1f} s")
    log("failures: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
