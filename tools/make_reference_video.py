#!/usr/bin/env python3
"""Reference dump for sam3.h's video tracker: HF transformers 5.17 Sam3TrackerVideoModel in streaming
mode (a session without a video, one frame at a time, prompts added before the frame they belong to).

    python3 tools/make_reference_video.py SRC FRAMES OUT.sam3 [--scenario tiny|full]

SRC is a checkpoint dir in the released facebook/sam3 layout (model.safetensors + config.json, e.g.
tests/data/video_a or a tools/make_random_checkpoint.py output); FRAMES holds frame_000.png ... as
written by tests/make_video_frames.c (windows panned across a photo). Needs torch + transformers 5.17 +
safetensors + PIL, so it runs on the GPU machine's CPU in fp32.

The scenario (the prompts on each frame) is fixed per --scenario and recorded in the dump, so the C test
replays exactly what HF saw:
  input.f{F}.o{ID}.points [n,2] f32, .labels [n] i32, .box [4] f32, .mask [H,W] u8 (frame pixels)
  frame.{F}.width/.height/.crc32 (config)   the frame's size and the CRC-32 of its RGB bytes
and per frame the outputs:
  out.f{F}.ids [n] i32          object ids in HF's order (order of first prompt)
  out.f{F}.low_res [n,4g,4g]    pred_masks (logits; -1024 where the object score is <= 0)
  out.f{F}.score [n]            object_score_logits
  out.f{F}.masks [n,ceil(HW/8)] u8  the logits bilinearly resized to the frame, > 0, bit-packed
                                (numpy packbits: row-major pixels, first pixel in the high bit)
  dbg.f{F}.o{ID}.maskmem [g*g,64], .ptr [D]   memory and object pointer stored for that frame (for
                                              debugging the C code; not every test reads them)
  dbg.f{F}.o{ID}.pix [g*g,D]    the memory-conditioned features on tracked frames (memory attention
                                output, token-major, from a forward hook)

HF traps handled here (issue 18): all objects' prompts for one frame go into one
add_inputs_to_inference_session call with the same number of points per object (the scenario is built
so), and obj_ids is passed as a fresh list each time (the processor empties the list it is given).
"""
import argparse
import json
import os
import sys
import time
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sam3file  # noqa: E402

torch.set_grad_enabled(False)

RENAMES = (("detector_model.vision_encoder.backbone.", "vision_encoder.backbone."),
           ("tracker_neck.", "vision_encoder.neck."),
           ("tracker_model.", ""))


def log(*a):
    print(*a, flush=True)


# Prompts in frame pixels. Each entry: frame -> list of (obj_id, dict(points, labels, box, mask)).
# tiny: two objects (box + click each) on frame 0, corrections of object 1 on frames 3 (one click:
# multimask) and 5 (two clicks), object 3 joins on frame 6 (box only), object 2 re-prompted by a mask on
# frame 8; with the tiny config's 2 conditioning frames and 4 memories the bank drops and selects.
def scenario(name):
    if name == "tiny":
        return 10, {
            0: [(1, dict(box=[60, 40, 260, 300], points=[[150, 170]], labels=[1])),
                (2, dict(box=[250, 150, 460, 350], points=[[330, 260]], labels=[1]))],
            3: [(1, dict(points=[[170, 180]], labels=[1]))],
            5: [(1, dict(points=[[190, 190], [60, 60]], labels=[1, 0]))],
            6: [(3, dict(box=[20, 200, 200, 350]))],
            8: [(2, dict(mask="ellipse:150,160,90,70"))],
        }
    if name == "full":
        return 10, {
            0: [(1, dict(box=[60, 40, 260, 300], points=[[150, 170]], labels=[1])),
                (2, dict(box=[250, 150, 460, 350], points=[[330, 260]], labels=[1]))],
            5: [(1, dict(points=[[190, 190]], labels=[1]))],
        }
    raise SystemExit(f"unknown scenario {name}")


def make_mask(spec, W, H):
    kind, args = spec.split(":")
    cx, cy, rx, ry = (float(v) for v in args.split(","))
    yy, xx = np.mgrid[0:H, 0:W]
    assert kind == "ellipse"
    return ((((xx + 0.5 - cx) / rx) ** 2 + ((yy + 0.5 - cy) / ry) ** 2) <= 1.0).astype(np.uint8)


def load_model(src):
    from safetensors.torch import load_file
    from transformers import Sam3TrackerVideoConfig, Sam3TrackerVideoModel
    with open(os.path.join(src, "config.json")) as f:
        full = json.load(f)
    trk = dict(full["tracker_config"])
    for k in ("model_type", "architectures", "transformers_version", "_name_or_path"):
        trk.pop(k, None)
    config = Sam3TrackerVideoConfig(**trk)
    model = Sam3TrackerVideoModel(config).float().eval()
    sd = {}
    for k, v in load_file(os.path.join(src, "model.safetensors")).items():
        for a, b in RENAMES:
            if k.startswith(a):
                sd[b + k[len(a):]] = v.float()
                break
    missing, unexpected = model.load_state_dict(sd, strict=False)
    params = dict(model.named_parameters())
    bad = [k for k in missing if k in params or "positional_embedding" in k]
    log(f"load_state_dict: {len(sd)} tensors, missing {list(missing)}, unexpected {list(unexpected)}")
    if bad or unexpected:
        raise RuntimeError(f"checkpoint does not match Sam3TrackerVideoModel: missing {bad}, unexpected {unexpected}")
    pa = model.shared_image_embedding.positional_embedding
    pb = model.prompt_encoder.shared_embedding.positional_embedding
    if not torch.equal(pa, pb):
        log("WARNING: the two random-Fourier matrices differ")
    vc = model.config.vision_config
    S = int(vc.backbone_config.image_size)
    g = S // int(vc.backbone_config.patch_size)
    D = int(vc.fpn_hidden_size)
    log(f"model: image {S}, grid {g}, D {D}, num_maskmem {model.num_maskmem}, max_cond {config.max_cond_frame_num}, "
        f"max_ptr {config.max_object_pointers_in_encoder}, mem_dim {model.mem_dim}, "
        f"attn {getattr(model.config, '_attn_implementation', None)}")
    return model, S, g, D


def make_processor(S):
    from transformers import Sam3TrackerVideoProcessor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    ip = Sam3ImageProcessor(size={"height": S, "width": S})
    errs = []
    for kw in (dict(video_processor=None), dict()):
        try:
            p = Sam3TrackerVideoProcessor(image_processor=ip, target_size=S, **kw)
            log(f"processor: Sam3TrackerVideoProcessor(image_processor=Sam3ImageProcessor({S}x{S}), "
                f"target_size={S}, {kw})")
            return p
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))
    try:
        from transformers import AutoVideoProcessor  # noqa: F401
        import transformers
        cands = [n for n in dir(transformers) if "VideoProcessor" in n and "Sam" in n]
        log(f"video processor candidates: {cands}")
        for n in cands:
            try:
                vp = getattr(transformers, n)()
                p = Sam3TrackerVideoProcessor(image_processor=ip, video_processor=vp, target_size=S)
                log(f"processor: Sam3TrackerVideoProcessor with video_processor={n}()")
                return p
            except Exception as e:  # noqa: BLE001
                errs.append(f"{n}: {e!r}")
    except Exception as e:  # noqa: BLE001
        errs.append(repr(e))
    raise RuntimeError("cannot build Sam3TrackerVideoProcessor: " + " | ".join(errs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("frames")
    ap.add_argument("out")
    ap.add_argument("--scenario", default="tiny")
    args = ap.parse_args()
    from PIL import Image
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    model, S, g, D = load_model(args.src)
    proc = make_processor(S)
    n_frames, prompts = scenario(args.scenario)
    session = proc.init_video_session(inference_device="cpu", dtype=torch.float32)

    pix_calls = []  # memory-attention outputs, one per tracked object, in object order
    model.memory_attention.register_forward_hook(lambda m, a, o: pix_calls.append(o.detach().float().clone()))

    cfg = {"arch": "dump", "dump.kind": "video", "video.scenario": args.scenario, "video.frames": n_frames,
           "transformers": transformers.__version__}
    tensors = []
    t_total = 0.0
    for f in range(n_frames):
        img = Image.open(os.path.join(args.frames, f"frame_{f:03d}.png")).convert("RGB")
        rgb = np.asarray(img, dtype=np.uint8)
        H, W = rgb.shape[:2]
        cfg[f"frame.{f}.width"] = W
        cfg[f"frame.{f}.height"] = H
        cfg[f"frame.{f}.crc32"] = zlib.crc32(rgb.tobytes()) & 0xFFFFFFFF
        pv = proc(images=img, return_tensors="pt").pixel_values[0]
        plist = prompts.get(f, [])
        masks = [(i, p) for i, p in plist if "mask" in p]
        pts = [(i, p) for i, p in plist if "mask" not in p]
        if masks:
            ids = [i for i, _ in masks]
            ms = []
            for i, p in masks:
                m = make_mask(p["mask"], W, H)
                tensors.append((f"input.f{f}.o{i}.mask", m))
                ms.append(m.astype(bool))
            proc.add_inputs_to_inference_session(session, frame_idx=f, obj_ids=list(ids), input_masks=ms,
                                                 original_size=(H, W))
        if pts:
            ids = [i for i, _ in pts]
            has_pts = [("points" in p) for _, p in pts]
            has_box = [("box" in p) for _, p in pts]
            assert all(has_pts) or not any(has_pts), "points for all objects of a frame or none (HF trap)"
            assert all(has_box) or not any(has_box), "boxes for all objects of a frame or none"
            kw = {}
            if has_pts[0]:
                n = {len(p["points"]) for _, p in pts}
                assert len(n) == 1, "same number of points per object (HF pads with -10 otherwise)"
                kw["input_points"] = [[p["points"] for _, p in pts]]
                kw["input_labels"] = [[p["labels"] for _, p in pts]]
            if has_box[0]:
                kw["input_boxes"] = [[p["box"] for _, p in pts]]
            for i, p in pts:
                if "points" in p:
                    tensors.append((f"input.f{f}.o{i}.points", np.array(p["points"], np.float32)))
                    tensors.append((f"input.f{f}.o{i}.labels", np.array(p["labels"], np.int32)))
                if "box" in p:
                    tensors.append((f"input.f{f}.o{i}.box", np.array(p["box"], np.float32)))
            proc.add_inputs_to_inference_session(session, frame_idx=f, obj_ids=list(ids), original_size=(H, W), **kw)
        pix_calls.clear()
        t0 = time.time()
        out = model(inference_session=session, frame=pv)
        dt = time.time() - t0
        t_total += dt
        ids = [int(i) for i in out.object_ids]
        low = out.pred_masks.float()  # (n, 1, 4g, 4g)
        low = low.reshape(len(ids), 4 * g, 4 * g)
        score = out.object_score_logits.float().reshape(len(ids))
        up = torch.nn.functional.interpolate(low[:, None], size=(H, W), mode="bilinear", align_corners=False)[:, 0]
        post = (up > 0).to(torch.uint8).numpy()
        tensors.append((f"out.f{f}.ids", np.array(ids, np.int32)))
        tensors.append((f"out.f{f}.low_res", low.numpy().astype(np.float32)))
        tensors.append((f"out.f{f}.score", score.numpy().astype(np.float32)))
        tensors.append((f"out.f{f}.masks", np.packbits(post.reshape(len(ids), -1), axis=1)))
        prompted = {i for i, _ in plist}
        tracked = [oid for oid in ids if oid not in prompted]
        if len(tracked) != len(pix_calls):
            log(f"WARNING: {len(pix_calls)} memory-attention calls for tracked objects {tracked}")
        for oid, pc in zip(tracked, pix_calls):
            tensors.append((f"dbg.f{f}.o{oid}.pix", pc.reshape(-1, D).numpy().astype(np.float32)))
        for k, oid in enumerate(ids):
            oi = session.obj_id_to_idx(oid)
            od = session.output_dict_per_obj[oi]
            e = od["cond_frame_outputs"].get(f) or od["non_cond_frame_outputs"].get(f)
            if e is not None and "maskmem_features" in e:
                mm = e["maskmem_features"].float().reshape(-1, e["maskmem_features"].shape[-1])
                tensors.append((f"dbg.f{f}.o{oid}.maskmem", mm.numpy().astype(np.float32)))
                tensors.append((f"dbg.f{f}.o{oid}.ptr", e["object_pointer"].float().reshape(-1).numpy()))
        log(f"frame {f}: {W}x{H}, prompts {[(i, sorted(p)) for i, p in plist]}, ids {ids}, scores "
            f"{[round(float(s), 4) for s in score]}, fg {[int(m.sum()) for m in post]}, "
            f"logits [{float(low.min()):.3f}, {float(low.max()):.3f}], {dt * 1000:.0f} ms")
    cfg["video.hf_ms"] = t_total * 1000
    sam3file.write(args.out, cfg, tensors)
    log(f"wrote {args.out}: {len(tensors)} tensors, HF total {t_total:.2f} s")


if __name__ == "__main__":
    main()
