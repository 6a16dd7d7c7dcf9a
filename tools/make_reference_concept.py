#!/usr/bin/env python3
"""Reference dump for sam3.h's concept tracker: HF transformers 5.17 Sam3VideoModel (text prompts,
every instance followed with its own ID), in both of HF's modes on the same frames:

  streaming ("s."): a session without a video, each frame given as model(inference_session, frame=...)
                    (HF switches the hotstart removals off here: they need future frames)
  clip      ("c."): every frame in the session first, then propagate_in_video_iterator, which runs the
                    hotstart heuristics and holds its outputs back by hotstart_delay frames

    python3 tools/make_reference_concept.py SRC FRAMES OUT.sam3 [--prompts "a,b"] [--fullsize]

SRC is a released-layout checkpoint dir (tests/data/video_a: model.safetensors, config.json of
model_type sam3_video, vocab.json, merges.txt); FRAMES holds frame_000.png ... from
tests/make_video_frames.c. Needs torch + transformers 5.17 + safetensors + PIL (the GPU machine's CPU,
fp32).

With random weights every detection scores near the same probability, so the thresholds are chosen
here from the detector's scores on these frames (between two scores, away from both, so that 1e-4
differences cannot flip a decision), trying a few settings and keeping the one under which objects
are created, matched, left unmatched, reconditioned and (clip mode) removed. The chosen config is
recorded in the dump (concept.*), and the C test runs with it.

--fullsize (tools/check_fullsize.sh concept: the 840M config, 10 frames): the streaming mode only (a
frame costs seconds there, so no search and no clip mode), thresholds from frame 0's detections alone
(the detection and new-object thresholds between its 3rd and 4th best probabilities over both prompts,
reconditioning between its 1st and 2nd: 3 objects start on frame 0, later detections above the
threshold that match no object start new ones), max_num_objects 5 (HF and sam3.h keep the best new
ones; it bounds the tracking cost), no dbg.* tensors. concept.fullsize = 1, concept.modes = "s", and
concept.margin: the smallest distance of any frame's detection probability from a threshold, logged.

--frame0 (the small references of tests/data/concept_*): the thresholds of --fullsize (from frame 0's
detections alone) at the tiny config, both modes, every frame's outputs and no dbg.* search
tensors: small dumps, objects that start on frame 0 and later ones wherever a detection clears the
threshold. --internals adds the tracker's state on the first --internals streaming frames:
  dbg.s.f{F}.o{ID}.maskmem [g*g,64], .ptr [D]   the memory and object pointer stored for frame F
  dbg.s.f{F}.o{ID}.pix [g*g,D]   the memory attention's output on frame F (token-major; the last
                                  call for the object on that frame)
  dbg.s.f{F}.o{ID}.ptr_offsets [k] i32, .ptr_max i32   the temporal offsets of the pointers read
                                  and max_object_pointers_to_use (its max - 1 divides the offsets)
concept.ckpt_crc32 is the CRC-32 of SRC/model.safetensors (the C test checks the model it runs was
converted from the same checkpoint, when told where it is).

HF facts recorded as found (the GPU machine has no `kernels` package): nms_masks keeps every
detection above the threshold (no NMS) and fill_holes_in_mask_scores changes nothing (no connected
components); the dump says so in concept.hf_nms = 0 and concept.hf_fill = 0.

Dump (prefix m = "s" or "c"; F the frame the output belongs to):
  frame.{F}.width/.height/.crc32                       the frame and the CRC-32 of its RGB bytes
  concept.prompt.{P}                                   the prompt texts
  concept.prompt.{P}.ids [t] i32                       their token ids (unpadded; HF pads to 32 with a mask)
  {m}.f{F}.ids [n] i32        objects in the processor's output (sorted ids, empty masks and
                              suppressed or hotstart-removed objects left out)
  {m}.f{F}.prompt [n] i32     the prompt index of each
  {m}.f{F}.score [n] f32      obj_id_to_score (the detection probability that created the object)
  {m}.f{F}.tscore [n] f32     the tracker's probability on this frame (detection's on the first)
  {m}.f{F}.box [n,4] f32      masks_to_boxes of the final masks (x1, y1 inclusive)
  {m}.f{F}.rle [r] i32, .rle_n [n] i32   final frame-size masks (after the per-prompt non-overlap
                              constraint), run lengths of row-major pixels starting with a run of 0s,
                              rle_n[i] runs for object i (runs, not bits, to keep the dump small)
  {m}.f{F}.low_res [n,4g,4g] f32     obj_id_to_mask of those objects (logits before resizing)
  {m}.f{F}.all_ids [k] i32    every object the model holds after the frame (its object_ids)
  {m}.f{F}.removed [r] i32    removed_obj_ids so far; .suppressed [s] i32 this frame's suppressed
  dbg.{m}.f{F}.det.scores [d] f32, .det.prompt [d] i32, .det.boxes [d,4] f32, .det.masks [d,4g,4g] f32
                              the merged detections above the threshold (the frame the model ran;
                              det.masks and trk.low in f16 and for the streaming mode only)
  dbg.{m}.f{F}.det.p{P}.probs [Q] f32   every query's probability (sigmoid(logit) * presence)
  dbg.{m}.f{F}.trk.ids [t] i32, .trk.low [t,4g,4g] f32, .trk.score [t] f32   tracker propagation
  dbg.{m}.f{F}.plan.new_det [k] i32, .new_ids [k] i32, .unmatched [u] i32, .recond [r] i32,
  .removed_now [x] i32        the association and state-machine decisions of that frame
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


def log(*a):
    print(*a, flush=True)


def i32(x):
    return np.array(sorted(x) if isinstance(x, set) else list(x), dtype=np.int32).reshape(-1)


def make_config(src, overrides):
    from transformers import Sam3VideoConfig
    with open(os.path.join(src, "config.json")) as f:
        full = json.load(f)
    full.pop("model_type", None)
    for k in ("architectures", "transformers_version", "_name_or_path"):
        full.pop(k, None)
    full.update(overrides)
    return Sam3VideoConfig(**full)


def load_model(src, overrides):
    from safetensors.torch import load_file
    from transformers import Sam3VideoModel
    config = make_config(src, overrides)
    model = Sam3VideoModel(config).float().eval()
    sd = {k: v.float() for k, v in load_file(os.path.join(src, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    params = dict(model.named_parameters())
    bad = [k for k in missing if k in params]
    if bad or unexpected:
        raise RuntimeError(f"checkpoint does not match Sam3VideoModel: missing {bad[:20]}, unexpected {list(unexpected)[:20]}")
    return model


def make_processor(src, S):
    from transformers import CLIPTokenizer, Sam3VideoProcessor
    from transformers.models.sam3.image_processing_sam3 import Sam3ImageProcessor
    # from_pretrained, as a user would: CLIPTokenizer(vocab_file=, merges_file=) builds a tokenizer
    # that maps every word of the synthetic vocabulary to id 2 (seen on transformers 5.17)
    tok = CLIPTokenizer.from_pretrained(src)
    with open(os.path.join(src, "vocab.json")) as f:
        vocab = json.load(f)
    ids = tok("a cat")["input_ids"]
    if ids[0] != vocab.get("<|startoftext|>") or ids[-1] != vocab.get("<|endoftext|>") or len(set(ids)) < 3:
        raise RuntimeError(f"tokenizer looks broken: 'a cat' -> {ids}")
    log(f"tokenizer: 'a cat' -> {ids}")
    ip = Sam3ImageProcessor(size={"height": S, "width": S})
    errs = []
    for kw in (dict(video_processor=None), dict()):
        try:
            return Sam3VideoProcessor(image_processor=ip, tokenizer=tok, target_size=S, **kw)
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))
    import transformers
    for n in [n for n in dir(transformers) if "VideoProcessor" in n and "Sam" in n]:
        try:
            return Sam3VideoProcessor(image_processor=ip, video_processor=getattr(transformers, n)(), tokenizer=tok, target_size=S)
        except Exception as e:  # noqa: BLE001
            errs.append(f"{n}: {e!r}")
    raise RuntimeError("cannot build Sam3VideoProcessor: " + " | ".join(errs))


class Recorder:
    """Wraps the model's per-frame steps to record what each decided (no behaviour change)."""

    def __init__(self, model):
        self.model = model
        self.cur = {}
        self.det_calls = []
        m = model
        orig_det_fwd = m.detector_model.forward

        def det_fwd(*a, **k):
            o = orig_det_fwd(*a, **k)
            probs = (o.pred_logits.sigmoid() * o.presence_logits.sigmoid())[0].float()
            self.det_calls.append(probs.reshape(-1).numpy().copy())
            return o
        m.detector_model.forward = det_fwd

        orig_merge = m._merge_detections_from_prompts

        def merge(all_det, sess):
            det, d2p = orig_merge(all_det, sess)
            self.cur["det.scores"] = det["scores"].float().reshape(-1).numpy().copy()
            self.cur["det.boxes"] = det["bbox"].float().reshape(-1, 4).numpy().copy()
            self.cur["det.masks"] = det["mask"].float().numpy().copy()
            self.cur["det.prompt"] = i32([d2p[i] for i in range(len(d2p))])
            return det, d2p
        m._merge_detections_from_prompts = merge

        orig_prop = m.run_tracker_propagation

        def prop(inference_session, frame_idx, reverse):
            ids = list(inference_session.obj_ids)
            low, sc = orig_prop(inference_session=inference_session, frame_idx=frame_idx, reverse=reverse)
            self.cur["trk.ids"] = i32(ids)
            self.cur["trk.low"] = low.float().numpy().copy()
            self.cur["trk.score"] = sc.float().reshape(-1).numpy().copy()
            return low, sc
        m.run_tracker_propagation = prop

        orig_plan = m.run_tracker_update_planning_phase

        def plan(**k):
            p, meta = orig_plan(**k)
            self.cur["plan.new_det"] = i32(p["new_det_out_inds"])
            self.cur["plan.new_ids"] = i32(p["new_det_obj_ids"])
            self.cur["plan.unmatched"] = i32(p["unmatched_trk_obj_ids"])
            self.cur["plan.recond"] = i32(p["reconditioned_obj_ids"])
            self.cur["plan.removed_now"] = i32(p["obj_ids_newly_removed"])
            return p, meta
        m.run_tracker_update_planning_phase = plan

    def take(self):
        c, d = self.cur, self.det_calls
        self.cur, self.det_calls = {}, []
        return c, d


class Internals:
    """Records the tracker's per-object state (memory attention output, pointer offsets) on the
    frames below `upto`; snapshot() reads what the session stored for a frame."""

    def __init__(self, model, upto):
        self.upto, self.cur, self.frame = upto, {}, -1
        tm = model.tracker_model
        orig_prep = tm._prepare_memory_conditioned_features
        orig_ptr = tm._process_object_pointers
        self.obj = None

        def prep(inference_session, frame_idx, obj_idx, is_initial_conditioning_frame, *a, **k):
            self.obj = inference_session.obj_idx_to_id(obj_idx)
            out = orig_prep(inference_session, frame_idx, obj_idx, is_initial_conditioning_frame, *a, **k)
            if frame_idx < self.upto and not is_initial_conditioning_frame:
                g = out.shape[-1]
                self.cur[f"o{self.obj}.pix"] = out[0].reshape(out.shape[1], -1).t().float().numpy().copy()
            return out
        tm._prepare_memory_conditioned_features = prep

        def ptrs(temporal_offsets, pointer_tokens, max_object_pointers_to_use, *a, **k):
            if self.obj is not None:
                self.cur[f"o{self.obj}.ptr_offsets"] = i32(temporal_offsets)
                self.cur[f"o{self.obj}.ptr_max"] = i32([max_object_pointers_to_use])
            return orig_ptr(temporal_offsets, pointer_tokens, max_object_pointers_to_use, *a, **k)
        tm._process_object_pointers = ptrs

    def snapshot(self, sess, f):
        rec, self.cur = self.cur, {}
        if f >= self.upto:
            return []
        out = [(f"dbg.s.f{f}.{k}", v) for k, v in sorted(rec.items())]
        for idx, oid in enumerate(sess.obj_ids):
            od = sess.output_dict_per_obj[idx]
            e = od["cond_frame_outputs"].get(f) or od["non_cond_frame_outputs"].get(f)
            if e is None or "maskmem_features" not in e:
                continue
            mm = e["maskmem_features"].float().reshape(-1, e["maskmem_features"].shape[-1])
            out.append((f"dbg.s.f{f}.o{oid}.maskmem", mm.numpy().astype(np.float32)))
            out.append((f"dbg.s.f{f}.o{oid}.ptr", e["object_pointer"].float().reshape(-1).numpy().astype(np.float32)))
        return out


def postprocess(proc, session, out, H, W):
    r = proc.postprocess_outputs(session, out, original_sizes=[[H, W]])
    ids = [int(i) for i in r["object_ids"].tolist()]
    return r, ids


def run_mode(mode, model, rec, proc, frames, prompts, want_tensors, g, probs_out=None, internals=None):
    """Runs one mode; returns (tensors, stats). Each output is post-processed as soon as HF hands it
    out (in clip mode hotstart_delay frames later), as an application would: the processor hides the
    objects removed by then. probs_out (a list) gets every detector probability of the run."""
    sess = proc.init_video_session(inference_device="cpu", dtype=torch.float32)
    proc.add_text_prompt(sess, list(prompts))
    tensors, stats = [], dict(created=0, matched=0, unmatched=0, recond=0, removed=0, max_obj=0, frames_with_obj=0,
                              enter=0, leave=0)
    outs = []  # (frame, Sam3VideoSegmentationOutput, record, detector probabilities, processor output, ids)
    rec.take()
    if mode == "s":
        for f, (img, pv, H, W) in enumerate(frames):
            o = model(inference_session=sess, frame=pv)
            r, ids = postprocess(proc, sess, o, H, W)
            outs.append((f, o) + rec.take() + (r, ids))
            if internals is not None:
                tensors += internals.snapshot(sess, f)
    else:
        for f, (img, pv, H, W) in enumerate(frames):
            sess.add_new_frame(pv)
        recs = {}
        orig_fwd = model.forward

        def fwd(*a, **k):
            o = orig_fwd(*a, **k)
            recs[int(o.frame_idx)] = rec.take()
            return o
        model.forward = fwd
        try:
            for o in model.propagate_in_video_iterator(sess):
                f = int(o.frame_idx)
                r, ids = postprocess(proc, sess, o, frames[f][2], frames[f][3])
                outs.append((f, o) + recs[f] + (r, ids))
        finally:
            del model.forward
    prev_ids = set()
    for f, o, rc, dc, r, ids in outs:
        H, W = frames[f][2], frames[f][3]
        n = len(ids)
        masks = r["masks"].numpy().astype(np.uint8).reshape(n, H, W)
        low = (torch.cat([o.obj_id_to_mask[i] for i in ids], 0).float().numpy() if n
               else np.zeros((0, 4 * g, 4 * g), np.float32))
        runs = [rle(m) for m in masks]
        rle_n = [len(x) for x in runs]
        rle_all = np.concatenate(runs).astype(np.int32) if runs else np.zeros(0, np.int32)
        tsc = [float(o.obj_id_to_tracker_score.get(i, 0.0)) for i in ids]
        pr = [int(sess.obj_id_to_prompt_id[i]) for i in ids]
        p = f"{mode}.f{f}."
        tensors += [(p + "ids", i32(ids)), (p + "prompt", i32(pr)),
                    (p + "score", np.array([float(x) for x in r["scores"].tolist()], np.float32).reshape(n)),
                    (p + "tscore", np.array(tsc, np.float32).reshape(n)),
                    (p + "box", r["boxes"].float().numpy().reshape(n, 4).astype(np.float32)),
                    (p + "rle", rle_all), (p + "rle_n", i32(rle_n)),
                    (p + "low_res", low.reshape(n, 4 * g, 4 * g).astype(np.float32)),
                    (p + "all_ids", i32(o.object_ids)), (p + "removed", i32(set(o.removed_obj_ids or ()))),
                    (p + "suppressed", i32(set(o.suppressed_obj_ids or ())))]
        if probs_out is not None:
            for probs in dc:
                probs_out += probs.tolist()
        if want_tensors:
            q = f"dbg.{mode}.f{f}."
            for k, v in rc.items():
                if k in ("det.masks", "trk.low"):
                    if mode != "s":
                        continue
                    v = v.astype(np.float16)
                tensors.append((q + k, v))
            for pi, probs in enumerate(dc):
                tensors.append((q + f"det.p{pi}.probs", probs.astype(np.float32)))
        stats["created"] += len(rc.get("plan.new_ids", ()))
        stats["unmatched"] += len(rc.get("plan.unmatched", ()))
        stats["recond"] += len(rc.get("plan.recond", ()))
        stats["removed"] += len(rc.get("plan.removed_now", ()))
        stats["matched"] += max(0, len(rc.get("trk.ids", ())) - len(rc.get("plan.unmatched", ())))
        stats["max_obj"] = max(stats["max_obj"], n)
        stats["frames_with_obj"] += n > 0
        stats["enter"] += len(set(ids) - prev_ids)
        stats["leave"] += len(prev_ids - set(ids))
        prev_ids = set(ids)
        log(f"  {mode} frame {f}: {W}x{H} ids {ids} prompts {pr} scores {[round(float(s), 4) for s in r['scores'].tolist()]} "
            f"area {[int(m.sum()) for m in masks]} det {len(rc.get('det.scores', ()))} trk {rc.get('trk.ids', i32([])).tolist()} "
            f"new {rc.get('plan.new_ids', i32([])).tolist()} unmatched {rc.get('plan.unmatched', i32([])).tolist()} "
            f"recond {rc.get('plan.recond', i32([])).tolist()} removed {rc.get('plan.removed_now', i32([])).tolist()} "
            f"suppressed {sorted(o.suppressed_obj_ids or ())}")
    return tensors, stats


# Sam3VideoConfig's thresholds under the dump's (shorter) keys
CFG_KEYS = (("score_threshold_detection", "det_thresh"), ("det_nms_thresh", "nms_thresh"), ("assoc_iou_thresh", "assoc_iou"),
            ("trk_assoc_iou_thresh", "trk_assoc_iou"), ("new_det_thresh", "new_det_thresh"),
            ("recondition_on_trk_masks", "recond_trk_masks"), ("hotstart_delay", "hs_delay"),
            ("hotstart_unmatch_thresh", "hs_unmatch"), ("hotstart_dup_thresh", "hs_dup"),
            ("suppress_unmatched_only_within_hotstart", "hs_suppress_only"), ("init_trk_keep_alive", "keep_alive_init"),
            ("max_trk_keep_alive", "keep_alive_max"), ("min_trk_keep_alive", "keep_alive_min"),
            ("suppress_overlapping_based_on_recent_occlusion_threshold", "occl_iou"),
            ("decrease_trk_keep_alive_for_empty_masklets", "keep_alive_empty"), ("fill_hole_area", "fill_area"),
            ("max_num_objects", "max_objects"), ("recondition_every_nth_frame", "recond_every"),
            ("high_conf_thresh", "high_conf"), ("high_iou_thresh", "high_iou"), ("low_res_mask_size", "low_res"))


def rle(mask):
    """Run lengths of a 0/1 mask's row-major pixels, the first run counting 0s (maybe 0 long)."""
    v = mask.reshape(-1).astype(np.int8)
    edges = np.flatnonzero(np.diff(v)) + 1
    bounds = np.concatenate([[0], edges, [v.size]])
    runs = np.diff(bounds)
    if v.size and v[0] == 1:
        runs = np.concatenate([[0], runs])
    return runs.astype(np.int32)


def between(sorted_vals, q):
    """A threshold near quantile q that lies in the widest gap among the scores around it."""
    v = np.asarray(sorted_vals)
    i = int(np.clip(round(q * (len(v) - 1)), 1, len(v) - 1))
    best, bi = -1.0, i
    for j in range(max(1, i - 3), min(len(v), i + 4)):
        if v[j] - v[j - 1] > best:
            best, bi = v[j] - v[j - 1], j
    return float(round((v[bi] + v[bi - 1]) / 2, 6)), float(best)


def apply_thresholds(model, cfg, ov):
    """Sets the thresholds ov on the model and its config, and records every CFG_KEYS value in cfg."""
    for k, v in ov.items():
        setattr(model, k, v)
        setattr(model.config, k, v)
    for k, short in CFG_KEYS:
        v = getattr(model, k)
        cfg[f"concept.{short}"] = float(v) if isinstance(v, float) else int(v)


def thresholds_from_frame0(model, cfg, p0):
    """Thresholds between frame 0's best probabilities p0 (ascending), so that objects start on
    frame 0 and later: detection between the 3rd and 4th best, high confidence between the 1st
    and 2nd; applied to the model and recorded in cfg."""
    d = p0[::-1]
    det = float(round((d[2] + d[3]) / 2, 6))
    ov = dict(score_threshold_detection=det, new_det_thresh=det, high_conf_thresh=float(round((d[0] + d[1]) / 2, 6)),
              high_iou_thresh=0.5, trk_assoc_iou_thresh=0.5)
    log(f"frame 0's best probabilities {[round(x, 6) for x in d[:6]]}: {ov}")
    apply_thresholds(model, cfg, ov)
    return ov


def full_size(args, model, rec, proc, frames, prompts, g, cfg, tok_ids, p0):
    """--fullsize: thresholds from frame 0's probabilities p0 (ascending), one streaming run."""
    ov = thresholds_from_frame0(model, cfg, p0)
    probs = []
    t0 = time.time()
    ts, ss = run_mode("s", model, rec, proc, frames, prompts, False, g, probs)
    cfg["concept.hf_ms_streaming"] = (time.time() - t0) * 1000
    margin = min(abs(p - t) for p in probs for t in (ov["score_threshold_detection"], ov["high_conf_thresh"]))
    cfg.update({"concept.fullsize": 1, "concept.modes": "s", "concept.margin": float(margin)})
    log(f"final: streaming {ss} ({time.time() - t0:.1f} s)\n  {len(probs)} detector probabilities over the run, the closest "
        f"{margin:.2e} from a threshold")
    sam3file.write(args.out, cfg, tok_ids + ts)
    log(f"wrote {args.out}: {len(tok_ids) + len(ts)} tensors, {os.path.getsize(args.out)} bytes")


def frame0(args, model, rec, proc, frames, prompts, g, cfg, tok_ids, p0):
    """--frame0: --fullsize's thresholds at the tiny config, both modes, no dbg.* search tensors."""
    ov = thresholds_from_frame0(model, cfg, p0)
    internals = Internals(model, args.internals) if args.internals else None
    probs = []
    t0 = time.time()
    ts, ss = run_mode("s", model, rec, proc, frames, prompts, False, g, probs, internals)
    cfg["concept.hf_ms_streaming"] = (time.time() - t0) * 1000
    if internals is not None:
        internals.upto = 0
    tc, sc = run_mode("c", model, rec, proc, frames, prompts, False, g, probs)
    margin = min(abs(p - t) for p in probs for t in (ov["score_threshold_detection"], ov["high_conf_thresh"]))
    cfg["concept.margin"] = float(margin)
    log(f"final: streaming {ss}\n       clip {sc}\n  the closest detector probability {margin:.2e} from a threshold")
    sam3file.write(args.out, cfg, tok_ids + ts + tc)
    log(f"wrote {args.out}: {len(tok_ids) + len(ts) + len(tc)} tensors, {os.path.getsize(args.out)} bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("frames")
    ap.add_argument("out")
    ap.add_argument("--prompts", default="a cat,the red car")
    ap.add_argument("--n", type=int, default=None, help="frames (default 14, 10 with --fullsize)")
    ap.add_argument("--fullsize", action="store_true", help="streaming only, thresholds from frame 0 (see above)")
    ap.add_argument("--frame0", action="store_true", help="thresholds from frame 0, both modes, no search (see above)")
    ap.add_argument("--internals", type=int, default=0, help="tracker state on the first N streaming frames")
    ap.add_argument("--max-objects", type=int, default=0, help="max_num_objects (default HF's)")
    args = ap.parse_args()
    from PIL import Image
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    try:
        import kernels  # noqa: F401
        have_kernels = True
    except ImportError:
        have_kernels = False
    log(f"kernels package: {have_kernels}")
    prompts = args.prompts.split(",")
    if args.n is None:
        args.n = 10 if args.fullsize else 14
    # from the config object: the full config.json leaves image_size and patch_size to the defaults
    c0 = make_config(args.src, {})
    S = int(c0.tracker_config.image_size)
    g = S // int(c0.detector_config.vision_config.backbone_config.patch_size)
    base = dict(low_res_mask_size=4 * g, hotstart_delay=4, hotstart_unmatch_thresh=2, hotstart_dup_thresh=2,
                recondition_every_nth_frame=4)
    if args.fullsize:
        base["max_num_objects"] = 5
    if args.max_objects:
        base["max_num_objects"] = args.max_objects
    model = load_model(args.src, base)
    proc = make_processor(args.src, S)
    cfg = {"arch": "dump", "dump.kind": "concept", "concept.frames": args.n, "transformers": transformers.__version__,
           "concept.hf_nms": int(have_kernels), "concept.hf_fill": int(have_kernels)}
    with open(os.path.join(args.src, "model.safetensors"), "rb") as fh:
        crc = 0
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            crc = zlib.crc32(chunk, crc)
    cfg["concept.ckpt_crc32"] = crc & 0xFFFFFFFF
    tok_ids = []
    for i, p in enumerate(prompts):
        cfg[f"concept.prompt.{i}"] = p
        tok_ids.append((f"concept.prompt.{i}.ids", np.array(proc.tokenizer(p)["input_ids"], np.int32)))
    cfg["concept.n_prompts"] = len(prompts)
    frames = []
    for f in range(args.n):
        img = Image.open(os.path.join(args.frames, f"frame_{f:03d}.png")).convert("RGB")
        rgb = np.asarray(img, dtype=np.uint8)
        H, W = rgb.shape[:2]
        cfg[f"frame.{f}.width"] = W
        cfg[f"frame.{f}.height"] = H
        cfg[f"frame.{f}.crc32"] = zlib.crc32(rgb.tobytes()) & 0xFFFFFFFF
        pv = proc(images=img, return_tensors="pt").pixel_values[0]
        frames.append((img, pv, H, W))

    # the detector's probabilities on every frame and prompt, to place the thresholds
    sess = proc.init_video_session(inference_device="cpu", dtype=torch.float32)
    proc.add_text_prompt(sess, list(prompts))
    allp = []
    for img, pv, H, W in frames[:1] if args.fullsize or args.frame0 else frames:
        ve = model.detector_model.get_vision_features(pixel_values=pv[None])
        for pid in sess.prompts:
            te = model.detector_model.get_text_features(input_ids=sess.prompt_input_ids[pid],
                                                        attention_mask=sess.prompt_attention_masks[pid], return_dict=True)
            o = model.detector_model(vision_embeds=ve, text_embeds=te, attention_mask=sess.prompt_attention_masks[pid])
            allp += (o.pred_logits.sigmoid() * o.presence_logits.sigmoid()).reshape(-1).tolist()
    allp = sorted(allp)
    log(f"detection probabilities: {len(allp)}, min {allp[0]:.4f} median {allp[len(allp) // 2]:.4f} max {allp[-1]:.4f}")

    rec = Recorder(model)
    if args.fullsize:
        full_size(args, model, rec, proc, frames, prompts, g, cfg, tok_ids, allp)
        return
    if args.frame0:
        frame0(args, model, rec, proc, frames, prompts, g, cfg, tok_ids, allp)
        return
    best = None
    for qs, qn, qh, hiou, tiou in ((0.6, 0.75, 0.85, 0.5, 0.5), (0.5, 0.7, 0.85, 0.5, 0.3), (0.7, 0.8, 0.9, 0.3, 0.5),
                                   (0.55, 0.8, 0.9, 0.4, 0.4), (0.65, 0.7, 0.8, 0.3, 0.3), (0.6, 0.75, 0.7, 0.1, 0.5),
                                   (0.6, 0.75, 0.6, 0.05, 0.3)):
        sth, gs = between(allp, qs)
        nth, gn = between(allp, qn)
        hth, gh = between(allp, qh)
        ov = dict(score_threshold_detection=sth, new_det_thresh=max(nth, sth), high_conf_thresh=hth,
                  high_iou_thresh=hiou, trk_assoc_iou_thresh=tiou)
        for k, v in ov.items():
            setattr(model, k, v)
            setattr(model.config, k, v)
        log(f"try {ov} (gaps {gs:.2e} {gn:.2e} {gh:.2e})")
        t0 = time.time()
        _, ss = run_mode("s", model, rec, proc, frames, prompts, False, g)
        _, sc = run_mode("c", model, rec, proc, frames, prompts, False, g)
        log(f"  streaming {ss}\n  clip {sc}  ({time.time() - t0:.1f} s)")
        score = (min(ss["created"], 6) + min(ss["unmatched"], 4) + 2 * min(ss["recond"], 2) + min(ss["enter"], 6) +
                 min(ss["leave"], 4) + 2 * min(sc["removed"], 2) + min(ss["matched"], 6) - max(0, ss["max_obj"] - 8))
        if best is None or score > best[0]:
            best = (score, ov)
    ov = best[1]
    log(f"chosen {ov} (score {best[0]})")
    apply_thresholds(model, cfg, ov)
    tensors = []
    t0 = time.time()
    ts, ss = run_mode("s", model, rec, proc, frames, prompts, True, g)
    cfg["concept.hf_ms_streaming"] = (time.time() - t0) * 1000
    tc, sc = run_mode("c", model, rec, proc, frames, prompts, True, g)
    log(f"final: streaming {ss}\n       clip {sc}")
    tensors = tok_ids + ts + tc
    sam3file.write(args.out, cfg, tensors)
    log(f"wrote {args.out}: {len(tensors)} tensors, {os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
