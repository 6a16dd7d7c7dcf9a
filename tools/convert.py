#!/usr/bin/python3
"""Convert a Hugging Face SAM 3 (or SAM 1) checkpoint to a .sam3 file for sam3.h.

    /usr/bin/python3 tools/convert.py SRC_DIR OUT.sam3 [--dtype f32] [--verify] [--quiet] [--image-size N]

SRC_DIR holds what the Hugging Face hub gives for facebook/sam3: config.json,
model.safetensors (or model.safetensors.index.json + shards), vocab.json, merges.txt
and optionally preprocessor_config.json.  Or, for the original Segment Anything
(facebook/sam-vit-base|large|huge, HF SamModel, config.json model_type "sam"):
config.json, model.safetensors (or shards) and optionally preprocessor_config.json;
no tokenizer files.  See "SAM 1" at the end.  json + numpy only.

Exit status: 0 converted; 1 any failure, reported as exactly one line
"convert.py: error: ..." on stderr (no traceback) with no OUT and no OUT.tmp left behind;
2 bad command line (argparse's usage line and its "convert.py: error: ..." line); 130
interrupted.  Refused as well as malformed inputs: a folder holding both model.safetensors and
a shard index (ambiguous); JSON (config.json, safetensors headers, ...) nested deeper than 64
levels; an OUT that is, or links to, a file in SRC_DIR (same inode, or same resolved path); an
existing OUT.tmp (created exclusively, never through a link); a config sam3.h cannot run
(_check_runnable: e.g. a processor image size other than vision image_size, an activation
sam3.h does not implement), with the reason.

--image-size N (SAM 3 only): the file's model input side becomes N, a multiple of the patch size
(14) from two patches to 65536: vision.image_size, processor.image_size and
tracker.prompt_encoder.image_size are written as N (the weights do not change), as HF's
config.image_size = N sets them; the same as sam3_load_options.image_size = N on the original file.

Input
-----
safetensors: u64 little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
raw little-endian data; offsets are relative to the end of the header.  Files are
memory-mapped, never read whole.  Accepted dtypes F32, F16, BF16; all become f32 exactly.

config.json: model_type "sam3_video" (the released layout: detector_config = Sam3Config,
tracker_config = Sam3TrackerVideoConfig) or "sam3" (a plain Sam3Config, no tracker).
Fields that config.json leaves out take the transformers 5.17 config-class defaults, the
way transformers itself fills them (a missing text_config is Sam3Config's CLIP-L text
config; a present but partial one is filled from CLIPTextConfig's defaults).

Tensor layouts: the released checkpoint (detector_model.*, tracker_model.*, tracker_neck.*)
or a plain Sam3Model state dict without prefixes (then no tracker is written).
expected_tensors(cfg) lists every tensor the checkpoint may hold, with its shape from the
config and a role: "keep" (written) or "drop" (checked, then left out: the last FPN level
of both necks, CLIP's own text_projection, the pixel-decoder stages beyond the kept FPN
levels, the video-only tracker tensors and the duplicate prompt-encoder positional
matrix).  Any other tensor, any missing kept tensor and any shape difference is an error.

Output: the .sam3 container (see tools/sam3file.py for the authoritative byte layout)
------
  128-byte header  "SAM3", u32 version 1, u32 header_bytes 128, u32 alignment 64,
                   u64 file_bytes, u32 n_config, u32 n_tensors, u64 offsets of the config
                   table, tensor table, string table (+ its size) and the data
  config table     n_config x 64 B: char key[48], u32 type (1 i64, 2 f64, 3 str,
                   4 i64[], 5 f64[]), u32 count, 8-byte value or string-table offset
  tensor table     n_tensors x 64 B: u32 name_off, u32 name_len, u32 dtype (0 f32, 1 f16,
                   2 bf16, 3 i32, 4 u8), u32 ndim, u64 shape[4] (PyTorch order),
                   u64 data_off (absolute, 64-aligned), u64 data_bytes
  string table     names, config strings and arrays
  data             each tensor 64-byte aligned, zero padding between
All little-endian.  The file is written to OUT.tmp and renamed, so OUT is never
half-written; the same input gives the same bytes.  Config key file.checksums.mx64 [i64[]]
holds each tensor's checksum, in table order (sam3file.mx64; sam3.h verifies them when asked).

Tensor order: the order of expected_tensors(cfg), which is the released state-dict order
(detector in model order, then tracker_model.*, then tracker_neck.*), keeping role "keep"
only, except that each ViT block's attention k_proj and v_proj weights follow its q_proj
weight (one (3C, C) matrix for sam3.h); then tokenizer.vocab.bytes, tokenizer.vocab.offsets,
tokenizer.merges.
Names: detector tensors lose the "detector_model." prefix (HF Sam3Model names);
tracker tensors keep theirs.  All model tensors are f32.

Tokenizer tensors:
  tokenizer.vocab.bytes    u8  [total]        vocab.json token strings, concatenated by id
  tokenizer.vocab.offsets  i32 [n_vocab + 1]  token i = bytes[offsets[i]:offsets[i+1]]
  tokenizer.merges         i32 [n_merges, 3]  (left id, right id, merged id); row = rank

Config keys (type in brackets):
  arch [str] = "sam3"; file.converter [str]; file.source [str]; file.license [str]
  vision.hidden_size, vision.intermediate_size, vision.num_hidden_layers,
  vision.num_attention_heads, vision.num_channels, vision.image_size, vision.patch_size,
  vision.pretrain_image_size, vision.window_size [i64]; vision.global_attn_indexes [i64[]];
  vision.rope_theta, vision.layer_norm_eps [f64]; vision.hidden_act [str]
  neck.fpn_hidden_size [i64]; neck.scale_factors [f64[]] (all levels, incl. the dropped last)
  text.vocab_size, text.hidden_size, text.intermediate_size, text.num_hidden_layers,
  text.num_attention_heads, text.max_position_embeddings [i64]; text.layer_norm_eps [f64];
  text.hidden_act [str]
  geometry.hidden_size, geometry.num_layers, geometry.num_attention_heads,
  geometry.intermediate_size, geometry.roi_size [i64]; geometry.hidden_act [str]
  detr_encoder.hidden_size, detr_encoder.num_layers, detr_encoder.num_attention_heads,
  detr_encoder.intermediate_size [i64]; detr_encoder.hidden_act [str]
  detr_decoder.hidden_size, detr_decoder.num_layers, detr_decoder.num_queries,
  detr_decoder.num_attention_heads, detr_decoder.intermediate_size [i64];
  detr_decoder.hidden_act [str]
  mask_decoder.hidden_size, mask_decoder.num_upsampling_stages,
  mask_decoder.num_attention_heads [i64]
  processor.image_size [i64]; processor.image_mean, processor.image_std [f64[3]];
  processor.rescale_factor [f64]   (preprocessor_config.json, else 1008, 0.5, 0.5, 1/255)
  tokenizer.vocab_size, tokenizer.n_merges, tokenizer.bos_token_id, tokenizer.eos_token_id,
  tokenizer.pad_token_id, tokenizer.max_length [i64]   (pad = eos, max_length = 32)
  tracker.present [i64 0/1]; when 1 also:
  tracker.neck.fpn_hidden_size [i64]; tracker.neck.scale_factors [f64[]]
  tracker.prompt_encoder.hidden_size, tracker.prompt_encoder.image_size,
  tracker.prompt_encoder.patch_size, tracker.prompt_encoder.mask_input_channels,
  tracker.prompt_encoder.num_point_embeddings [i64]; tracker.prompt_encoder.layer_norm_eps [f64]
  tracker.mask_decoder.hidden_size, tracker.mask_decoder.mlp_dim,
  tracker.mask_decoder.num_hidden_layers, tracker.mask_decoder.num_attention_heads,
  tracker.mask_decoder.attention_downsample_rate, tracker.mask_decoder.num_multimask_outputs,
  tracker.mask_decoder.iou_head_depth, tracker.mask_decoder.iou_head_hidden_dim,
  tracker.mask_decoder.dynamic_multimask [i64 0/1];
  tracker.mask_decoder.stability_delta, tracker.mask_decoder.stability_thresh [f64]
  (the last three are HF's dynamic_multimask_via_stability, dynamic_multimask_stability_delta
  and dynamic_multimask_stability_thresh, shortened to fit the 47-byte key limit)
  tracker.video.present [i64 0/1]: the memory modules (video tracking) are in the file; when 1
  also tracker.video.<short> for each (short, Sam3TrackerVideoConfig field) in VIDEO_KEYS
  ([i64], except tracker.video.sigmoid_scale, tracker.video.sigmoid_bias [f64]), and
  tracker.video.rope_theta [f64] (rope_parameters.rope_theta, default 10000). They are kept
  when the checkpoint has every memory tensor and sam3.h can run them (_check_video); a
  checkpoint with some but not all of them is an error.

SAM 1 (config.json model_type "sam", HF SamModel; arch "sam1")
-----
config.json: vision_config (SamVisionConfig), prompt_encoder_config (SamPromptEncoderConfig),
mask_decoder_config (SamMaskDecoderConfig); absent fields take the transformers 5.17 class
defaults, i.e. ViT-B (SamConfig() is facebook/sam-vit-base).  vision_config.mlp_dim null or
absent means int(hidden_size * mlp_ratio) (mlp_ratio default 4.0), as HF computes it.
The config must describe a model HF can run: prompt_encoder hidden_size = 2 * num_pos_feats =
vision output_channels = mask_decoder hidden_size, and the prompt encoder's image_size //
patch_size equal to the ViT token grid; otherwise it is an error.

Tensors: the HF SamModel state-dict names verbatim (no prefix), in state-dict order:
shared_image_embedding.positional_embedding, vision_encoder.* (pos_embed if use_abs_pos,
patch_embed, layers.{i}.{layer_norm1, attn.rel_pos_h/w if use_rel_pos, attn.qkv (bias if
qkv_bias), attn.proj, layer_norm2, mlp.lin1/lin2}, neck.conv1/layer_norm1/conv2/layer_norm2),
prompt_encoder.*, mask_decoder.*.  The relative-position tables have 2S-1 rows, S = window_size
for windowed blocks and the token grid for global blocks (and for every block when
window_size is 0).  For ViT-B sam1_manifest lists 315 names; 314 are written (93,735,728
params).  The random-Fourier matrix is one tensor under two names (HF ties them):
shared_image_embedding.positional_embedding is written;
prompt_encoder.shared_embedding.positional_embedding is "drop" (checked, not written).  A file
holding only the prompt-encoder name (HF loads that too) has it written under the
shared_image_embedding name; a file holding both with different values is an error (HF would
silently keep two different matrices).

Config keys (type in brackets):
  arch [str] = "sam1"; file.converter, file.source, file.license [str]
  sam1.vision.hidden_size, sam1.vision.output_channels, sam1.vision.num_hidden_layers,
  sam1.vision.num_attention_heads, sam1.vision.num_channels, sam1.vision.image_size,
  sam1.vision.patch_size, sam1.vision.window_size, sam1.vision.mlp_dim,
  sam1.vision.num_pos_feats [i64]; sam1.vision.global_attn_indexes [i64[]];
  sam1.vision.qkv_bias, sam1.vision.use_abs_pos, sam1.vision.use_rel_pos [i64 0/1];
  sam1.vision.layer_norm_eps [f64]; sam1.vision.hidden_act [str]
  sam1.prompt_encoder.hidden_size, sam1.prompt_encoder.image_size,
  sam1.prompt_encoder.patch_size, sam1.prompt_encoder.mask_input_channels,
  sam1.prompt_encoder.num_point_embeddings [i64]; sam1.prompt_encoder.layer_norm_eps [f64];
  sam1.prompt_encoder.hidden_act [str]
  sam1.mask_decoder.hidden_size, sam1.mask_decoder.num_hidden_layers,
  sam1.mask_decoder.num_attention_heads, sam1.mask_decoder.mlp_dim,
  sam1.mask_decoder.attention_downsample_rate, sam1.mask_decoder.num_multimask_outputs,
  sam1.mask_decoder.iou_head_depth, sam1.mask_decoder.iou_head_hidden_dim [i64];
  sam1.mask_decoder.layer_norm_eps [f64]; sam1.mask_decoder.hidden_act [str]
  processor.longest_edge, processor.pad_size [i64]; processor.image_mean,
  processor.image_std [f64[3]]; processor.rescale_factor [f64]
  (preprocessor_config.json size.longest_edge, pad_size {height = width}, image_mean, image_std,
  rescale_factor; else SamImageProcessor's defaults 1024, 1024, ImageNet mean/std, 1/255.
  do_resize / do_rescale / do_normalize / do_pad false and a resample other than 2 (bilinear)
  are errors, and so is a pad_size other than vision image_size: SamModel accepts only
  image_size x image_size pixel_values.)
Constants HF hard-codes (not keys): the neck and upscale LN2d eps 1e-6, layer_norm_final_attn
eps 1e-5, the mask threshold 0.0 of post_process_masks.
"""
import argparse
import json
import math
import os
import re
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sam3file  # noqa: E402

CONVERTER = "sam3.h tools/convert.py v1"
LICENSE = ("Contains Meta's SAM 3 model weights, which are licensed under the SAM License; "
           "this file carries them under that licence and its use is subject to it.")
DETECTOR_PREFIX = "detector_model."


class ConvertError(Exception):
    pass


def fail(msg):
    raise ConvertError(msg)


# ----------------------------------------------------------------------------------------
# Config: transformers 5.17 class defaults, and filling config.json from them
# ----------------------------------------------------------------------------------------

VIT_DEFAULTS = dict(  # Sam3ViTConfig
    hidden_size=1024, intermediate_size=4736, num_hidden_layers=32, num_attention_heads=16,
    num_channels=3, image_size=1008, patch_size=14, hidden_act="gelu", layer_norm_eps=1e-6,
    rope_theta=10000.0, window_size=24, global_attn_indexes=[7, 15, 23, 31],
    pretrain_image_size=336)
NECK_DEFAULTS = dict(fpn_hidden_size=256, scale_factors=[4.0, 2.0, 1.0, 0.5])  # Sam3VisionConfig
CLIP_TEXT_DEFAULTS = dict(  # CLIPTextConfig class defaults (used when text_config is given)
    vocab_size=49408, hidden_size=512, intermediate_size=2048, projection_dim=512,
    num_hidden_layers=12, num_attention_heads=8, max_position_embeddings=77,
    hidden_act="quick_gelu", layer_norm_eps=1e-5)
SAM3_TEXT_DEFAULTS = dict(  # the CLIPTextConfig that Sam3Config builds when text_config is absent
    CLIP_TEXT_DEFAULTS, hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
    num_attention_heads=16, max_position_embeddings=32, hidden_act="gelu")
GEOMETRY_DEFAULTS = dict(hidden_size=256, num_layers=3, num_attention_heads=8,
                         intermediate_size=2048, hidden_act="relu", roi_size=7)
DETR_ENCODER_DEFAULTS = dict(hidden_size=256, num_layers=6, num_attention_heads=8,
                             intermediate_size=2048, hidden_act="relu")
DETR_DECODER_DEFAULTS = dict(hidden_size=256, num_layers=6, num_queries=200, num_attention_heads=8,
                             intermediate_size=2048, hidden_act="relu")
MASK_DECODER_DEFAULTS = dict(hidden_size=256, num_upsampling_stages=3, num_attention_heads=8)
PROMPT_ENCODER_DEFAULTS = dict(  # Sam3TrackerVideoPromptEncoderConfig
    hidden_size=256, image_size=1008, patch_size=14, mask_input_channels=16,
    num_point_embeddings=4, hidden_act="gelu", layer_norm_eps=1e-6)
TRACKER_MASK_DECODER_DEFAULTS = dict(  # Sam3TrackerVideoMaskDecoderConfig
    hidden_size=256, hidden_act="gelu", mlp_dim=2048, num_hidden_layers=2, num_attention_heads=8,
    attention_downsample_rate=2, num_multimask_outputs=3, iou_head_depth=3,
    iou_head_hidden_dim=256, dynamic_multimask_via_stability=True,
    dynamic_multimask_stability_delta=0.05, dynamic_multimask_stability_thresh=0.98)
TRACKER_VIDEO_DEFAULTS = dict(  # Sam3TrackerVideoConfig fields that shape the video-only tensors
    image_size=1008, num_maskmem=7, enable_occlusion_spatial_embedding=True,
    enable_temporal_pos_encoding_for_object_pointers=True, memory_attention_hidden_size=256,
    memory_attention_num_layers=4, memory_attention_num_attention_heads=1,
    memory_attention_downsample_rate=1, memory_attention_feed_forward_hidden_size=2048,
    memory_encoder_hidden_size=256, memory_encoder_output_channels=64,
    mask_downsampler_embed_dim=256, mask_downsampler_kernel_size=3, mask_downsampler_stride=2,
    mask_downsampler_total_stride=16, memory_fuser_num_layers=2, memory_fuser_embed_dim=256,
    memory_fuser_intermediate_dim=1024, memory_fuser_kernel_size=7,
    # the rest shape no tensor but the tracking loop (kept in the file when the video tensors are)
    max_cond_frame_num=4, max_object_pointers_in_encoder=16, multimask_output_in_sam=True,
    multimask_min_pt_num=0, multimask_max_pt_num=1, multimask_output_for_tracking=True,
    sigmoid_scale_for_mem_enc=20.0, sigmoid_bias_for_mem_enc=-10.0, mask_downsampler_padding=1,
    memory_fuser_padding=3, memory_attention_feed_forward_hidden_act="relu",
    mask_downsampler_hidden_act="gelu", memory_fuser_hidden_act="gelu")
PROCESSOR_DEFAULTS = dict(image_size=1008, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5],
                          rescale_factor=1.0 / 255.0)
MAX_TEXT_LENGTH = 32  # what Sam3Processor pads to

SAM1_LICENSE = ("Contains Meta's Segment Anything (SAM 1) model weights, which Meta released under the "
                "Apache License 2.0; this file carries them under that licence.")
SAM1_VISION_DEFAULTS = dict(  # SamVisionConfig (mlp_dim: None -> int(hidden_size * mlp_ratio))
    hidden_size=768, output_channels=256, num_hidden_layers=12, num_attention_heads=12,
    num_channels=3, image_size=1024, patch_size=16, hidden_act="gelu", layer_norm_eps=1e-6,
    qkv_bias=True, mlp_ratio=4.0, use_abs_pos=True, use_rel_pos=True, window_size=14,
    global_attn_indexes=[2, 5, 8, 11], num_pos_feats=128)
SAM1_PROMPT_ENCODER_DEFAULTS = dict(  # SamPromptEncoderConfig
    hidden_size=256, image_size=1024, patch_size=16, mask_input_channels=16, num_point_embeddings=4,
    hidden_act="gelu", layer_norm_eps=1e-6)
SAM1_MASK_DECODER_DEFAULTS = dict(  # SamMaskDecoderConfig
    hidden_size=256, hidden_act="relu", mlp_dim=2048, num_hidden_layers=2, num_attention_heads=8,
    attention_downsample_rate=2, num_multimask_outputs=3, iou_head_depth=3, iou_head_hidden_dim=256,
    layer_norm_eps=1e-6)
SAM1_PROCESSOR_DEFAULTS = dict(  # SamImageProcessor
    longest_edge=1024, pad_size=1024, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225],
    rescale_factor=1.0 / 255.0)
SAM1_FOURIER = "shared_image_embedding.positional_embedding"
SAM1_FOURIER_COPY = "prompt_encoder.shared_embedding.positional_embedding"


def _square(v, where):
    """image_size / patch_size may be an int or an [h, w] pair; only square is supported."""
    if isinstance(v, (list, tuple)) and len(v) == 2 and v[0] == v[1]:
        return v[0]
    if isinstance(v, (list, tuple)):
        fail(f"config: {where} = {v!r}: only square sizes are supported")
    return v


def _fill(defaults, src, where):
    """defaults overridden by src's values of the same keys, each type-checked."""
    if src is None:
        src = {}
    if not isinstance(src, dict):
        fail(f"config: {where} must be a JSON object, got {type(src).__name__}")
    out = {}
    for key, dflt in defaults.items():
        v = src.get(key, dflt)
        name = f"{where}.{key}" if where else key
        if key in ("image_size", "patch_size", "pretrain_image_size"):
            v = _square(v, name)
        if isinstance(dflt, bool):
            ok = isinstance(v, bool) or (isinstance(v, int) and v in (0, 1))
            v = bool(v)
        elif isinstance(dflt, int):
            ok = isinstance(v, int) and not isinstance(v, bool)
        elif isinstance(dflt, float):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            v = float(v) if ok else v
        elif isinstance(dflt, str):
            ok = isinstance(v, str)
        else:  # list of numbers
            elem = int if all(isinstance(x, int) for x in dflt) else (int, float)
            ok = isinstance(v, list) and all(isinstance(x, elem) and not isinstance(x, bool) for x in v)
            if ok and elem is not int:
                v = [float(x) for x in v]
        if not ok:
            fail(f"config: {name} = {v!r} has the wrong type (default is {dflt!r})")
        out[key] = v
    return out


def _sub(d, key, where):
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        fail(f"config: {where}{key} must be a JSON object")
    return v


def _vision(vc, where):
    bb = _sub(vc, "backbone_config", where)
    vit = _fill(VIT_DEFAULTS, bb, where + "backbone_config")
    rp = bb.get("rope_parameters")
    if "rope_theta" not in bb and isinstance(rp, dict) and "rope_theta" in rp:
        vit["rope_theta"] = _fill({"rope_theta": 1.0}, rp, where + "backbone_config.rope_parameters")["rope_theta"]
    neck = _fill(NECK_DEFAULTS, vc, where.rstrip("."))
    return vit, neck


def fill_config(cj):
    """config.json dict -> the filled config every other step uses.

    {"model_type", "prefix" (checkpoint name prefix of the detector), "vit", "neck", "text",
     "geometry", "detr_encoder", "detr_decoder", "mask_decoder", "tracker" (None or
     {"vit", "neck", "prompt_encoder", "mask_decoder", "video"})}
    """
    if not isinstance(cj, dict):
        fail("config.json: not a JSON object")
    mt = cj.get("model_type")
    if mt == "sam":
        return fill_config_sam1(cj)
    if mt == "sam3_video":
        det = _sub(cj, "detector_config", "")
        trk = _sub(cj, "tracker_config", "")
        if det.get("model_type", "sam3") != "sam3":
            fail(f"config: detector_config.model_type {det.get('model_type')!r}, expected 'sam3'")
        if trk.get("model_type", "sam3_tracker_video") != "sam3_tracker_video":
            fail(f"config: tracker_config.model_type {trk.get('model_type')!r}, "
                 "expected 'sam3_tracker_video'")
        dw = "detector_config."
    elif mt == "sam3":
        det, trk, dw = cj, None, ""
    else:
        fail(f"config.json: model_type {mt!r} is not supported (expected 'sam3_video', 'sam3' or 'sam')")

    cfg = {"model_type": mt, "prefix": DETECTOR_PREFIX if mt == "sam3_video" else ""}
    cfg["vit"], cfg["neck"] = _vision(_sub(det, "vision_config", dw), dw + "vision_config.")
    if det.get("text_config") is None:
        cfg["text"] = dict(SAM3_TEXT_DEFAULTS)
    else:
        cfg["text"] = _fill(CLIP_TEXT_DEFAULTS, _sub(det, "text_config", dw), dw + "text_config")
    cfg["geometry"] = _fill(GEOMETRY_DEFAULTS, _sub(det, "geometry_encoder_config", dw),
                            dw + "geometry_encoder_config")
    cfg["detr_encoder"] = _fill(DETR_ENCODER_DEFAULTS, _sub(det, "detr_encoder_config", dw),
                                dw + "detr_encoder_config")
    cfg["detr_decoder"] = _fill(DETR_DECODER_DEFAULTS, _sub(det, "detr_decoder_config", dw),
                                dw + "detr_decoder_config")
    cfg["mask_decoder"] = _fill(MASK_DECODER_DEFAULTS, _sub(det, "mask_decoder_config", dw),
                                dw + "mask_decoder_config")
    cfg["tracker"] = None
    if trk is not None:
        tw = "tracker_config."
        t = {}
        t["vit"], t["neck"] = _vision(_sub(trk, "vision_config", tw), tw + "vision_config.")
        t["prompt_encoder"] = _fill(PROMPT_ENCODER_DEFAULTS, _sub(trk, "prompt_encoder_config", tw),
                                    tw + "prompt_encoder_config")
        t["mask_decoder"] = _fill(TRACKER_MASK_DECODER_DEFAULTS, _sub(trk, "mask_decoder_config", tw),
                                  tw + "mask_decoder_config")
        t["video"] = _fill(TRACKER_VIDEO_DEFAULTS, trk, "tracker_config")
        rp = trk.get("rope_parameters")
        t["video"]["rope_theta"] = float(rp["rope_theta"]) if isinstance(rp, dict) and isinstance(
            rp.get("rope_theta"), (int, float)) and not isinstance(rp.get("rope_theta"), bool) else 10000.0
        # Sam3TrackerVideoConfig sets prompt_encoder_config.image_size from its own image_size.
        t["prompt_encoder"]["image_size"] = t["video"]["image_size"]
        # The checkpoint's tracker_neck is built from the detector's vision config
        # (Sam3VideoModel); the tracker model reads its own. They must agree.
        for k in ("hidden_size", "patch_size"):
            if t["vit"][k] != cfg["vit"][k]:
                fail(f"config: tracker_config.vision_config.backbone_config.{k} = {t['vit'][k]} "
                     f"differs from the detector's {cfg['vit'][k]} (they share one ViT)")
        for k in ("fpn_hidden_size", "scale_factors"):
            if t["neck"][k] != cfg["neck"][k]:
                fail(f"config: tracker_config.vision_config.{k} = {t['neck'][k]} differs from "
                     f"detector_config.vision_config.{k} = {cfg['neck'][k]}")
        cfg["tracker"] = t
    _check_config(cfg)
    return cfg


def default_config(model_type="sam3_video"):
    return fill_config({"model_type": model_type})


def fill_config_sam1(cj):
    """SamConfig config.json dict -> {"model_type": "sam", "vision", "prompt_encoder", "mask_decoder"}."""
    vc = _sub(cj, "vision_config", "")
    mlp = vc.get("mlp_dim")
    v = _fill(SAM1_VISION_DEFAULTS, vc, "vision_config")
    if mlp is None:  # SamVisionConfig: mlp_dim = int(hidden_size * mlp_ratio) when None
        mlp = int(v["hidden_size"] * v["mlp_ratio"])
    elif type(mlp) is not int:
        fail(f"config: vision_config.mlp_dim = {mlp!r} has the wrong type (need an integer or null)")
    v["mlp_dim"] = mlp
    cfg = {"model_type": "sam", "prefix": "", "vision": v,
           "prompt_encoder": _fill(SAM1_PROMPT_ENCODER_DEFAULTS, _sub(cj, "prompt_encoder_config", ""),
                                   "prompt_encoder_config"),
           "mask_decoder": _fill(SAM1_MASK_DECODER_DEFAULTS, _sub(cj, "mask_decoder_config", ""),
                                 "mask_decoder_config")}
    _check_config_sam1(cfg)
    return cfg


def _check_config_sam1(cfg):
    v, pe, md = cfg["vision"], cfg["prompt_encoder"], cfg["mask_decoder"]

    def pos(sec, d, *keys):
        for k in keys:
            if d[k] <= 0:
                fail(f"config: {sec}.{k} = {d[k]} must be positive")

    pos("vision_config", v, "hidden_size", "output_channels", "num_hidden_layers", "num_attention_heads",
        "num_channels", "image_size", "patch_size", "mlp_dim", "num_pos_feats")
    if v["window_size"] < 0:
        fail(f"config: vision_config.window_size = {v['window_size']} must be >= 0 (0: every block global)")
    if v["hidden_size"] % v["num_attention_heads"]:
        fail(f"config: vision_config.hidden_size = {v['hidden_size']} is not a multiple of "
             f"num_attention_heads = {v['num_attention_heads']}")
    if v["image_size"] % v["patch_size"]:
        fail(f"config: vision_config.image_size = {v['image_size']} is not a multiple of "
             f"patch_size {v['patch_size']}")
    for i in v["global_attn_indexes"]:
        if not 0 <= i < v["num_hidden_layers"]:
            fail(f"config: vision_config.global_attn_indexes has {i}, outside 0..{v['num_hidden_layers'] - 1}")
    pos("prompt_encoder_config", pe, "hidden_size", "image_size", "patch_size", "mask_input_channels",
        "num_point_embeddings")
    if pe["mask_input_channels"] % 4:
        fail(f"config: prompt_encoder_config.mask_input_channels = {pe['mask_input_channels']} "
             "is not a multiple of 4")
    if pe["num_point_embeddings"] < 4:
        fail(f"config: prompt_encoder_config.num_point_embeddings = {pe['num_point_embeddings']}: "
             "SamPromptEncoder uses point_embed.0..3 (negative, positive, box corners)")
    pos("mask_decoder_config", md, *[k for k in md if type(md[k]) is int])
    h = md["hidden_size"]
    if h % 8 or h % md["num_attention_heads"] or (h // md["attention_downsample_rate"]) % md["num_attention_heads"]:
        fail(f"config: mask_decoder_config.hidden_size = {h} must be a multiple of 8 and of "
             f"num_attention_heads = {md['num_attention_heads']}, and so must hidden_size // "
             f"attention_downsample_rate = {h // md['attention_downsample_rate']} (of the heads)")
    if md["iou_head_depth"] < 2:
        fail("config: mask_decoder_config.iou_head_depth must be >= 2")
    # HF builds such models but cannot run them: catch it here rather than in sam3.h.
    widths = {"prompt_encoder_config.hidden_size": pe["hidden_size"],
              "2 * vision_config.num_pos_feats": 2 * v["num_pos_feats"],
              "vision_config.output_channels": v["output_channels"],
              "mask_decoder_config.hidden_size": h}
    if len(set(widths.values())) != 1:
        fail("config: these widths must be equal: " + ", ".join(f"{k} = {x}" for k, x in widths.items()))
    g = v["image_size"] // v["patch_size"]
    if pe["image_size"] // pe["patch_size"] != g:
        fail(f"config: prompt_encoder_config image_size // patch_size = "
             f"{pe['image_size']} // {pe['patch_size']} differs from the ViT token grid {g}")


def _check_config(cfg):
    def pos(sec, d, *keys):
        for k in keys:
            if d[k] <= 0:
                fail(f"config: {sec}.{k} = {d[k]} must be positive")

    def heads(sec, d, hk="hidden_size", nk="num_attention_heads"):
        if d[hk] % d[nk]:
            fail(f"config: {sec}.{hk} = {d[hk]} is not a multiple of {nk} = {d[nk]}")

    v = cfg["vit"]
    pos("vision", v, "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_channels", "image_size", "patch_size", "pretrain_image_size", "window_size")
    heads("vision", v)
    for k in ("image_size", "pretrain_image_size"):
        if v[k] % v["patch_size"]:
            fail(f"config: vision.{k} = {v[k]} is not a multiple of patch_size {v['patch_size']}")
    for i in v["global_attn_indexes"]:
        if not 0 <= i < v["num_hidden_layers"]:
            fail(f"config: vision.global_attn_indexes has {i}, outside 0..{v['num_hidden_layers'] - 1}")
    sf = cfg["neck"]["scale_factors"]
    if len(sf) < 2 or any(s not in (4.0, 2.0, 1.0, 0.5) for s in sf):
        fail(f"config: neck.scale_factors = {sf}: need >= 2 levels, each 4, 2, 1 or 0.5")
    pos("neck", cfg["neck"], "fpn_hidden_size")
    t = cfg["text"]
    pos("text", t, "vocab_size", "hidden_size", "intermediate_size", "projection_dim",
        "num_hidden_layers", "num_attention_heads", "max_position_embeddings")
    heads("text", t)
    for sec in ("geometry", "detr_encoder", "detr_decoder"):
        d = cfg[sec]
        pos(sec, d, *[k for k in d if isinstance(d[k], int)])
        heads(sec, d)
    md = cfg["mask_decoder"]
    pos("mask_decoder", md, "hidden_size", "num_attention_heads")
    heads("mask_decoder", md)
    if md["num_upsampling_stages"] < len(sf) - 2:
        fail(f"config: mask_decoder.num_upsampling_stages = {md['num_upsampling_stages']} but "
             f"{len(sf) - 2} stages are needed for {len(sf) - 1} kept FPN levels")
    if cfg["tracker"]:
        pe, tm = cfg["tracker"]["prompt_encoder"], cfg["tracker"]["mask_decoder"]
        pos("tracker.prompt_encoder", pe, "hidden_size", "image_size", "patch_size",
            "mask_input_channels", "num_point_embeddings")
        if pe["hidden_size"] % 2 or pe["mask_input_channels"] % 4:
            fail("config: tracker prompt encoder hidden_size must be even and "
                 "mask_input_channels a multiple of 4")
        pos("tracker.mask_decoder", tm, *[k for k in tm if type(tm[k]) is int])
        if tm["hidden_size"] % 8 or (tm["hidden_size"] // tm["attention_downsample_rate"]) % tm["num_attention_heads"]:
            fail("config: tracker mask decoder hidden_size must be a multiple of 8 and its "
                 "attention width a multiple of num_attention_heads")
        if tm["iou_head_depth"] < 2:
            fail("config: tracker_config.mask_decoder_config.iou_head_depth must be >= 2")


def _check_runnable(cfg, proc):
    """What sam3.h's loader (sam3__load_config, sam3__load_tracker_config and the GroupNorm check
    of sam3__load_weights) requires beyond HF's own constraints, so that a config sam3.h cannot
    run fails here, with the reason, instead of converting and then failing every load. Keep in
    step with those functions (tests/test_convert_robust.py converts variants and loads each
    result with build/sam3 info to catch drift)."""
    BIG = 1 << 20

    def rng(name, v, lo, hi):
        if not lo <= v <= hi:
            fail(f"config: {name} = {v}: sam3.h runs {lo}..{hi}")

    def act(name, v, ok):
        if v not in ok:
            fail(f"config: {name} = {v!r}: sam3.h implements {' and '.join(repr(a) for a in ok)} here")

    v, nk, t = cfg["vit"], cfg["neck"], cfg["text"]
    for k in ("hidden_size", "intermediate_size"):
        rng(f"vision.{k}", v[k], 1, BIG)
    for k in ("num_hidden_layers", "num_attention_heads"):
        rng(f"vision.{k}", v[k], 1, 4096)
    for k in ("image_size", "patch_size", "pretrain_image_size", "window_size"):
        rng(f"vision.{k}", v[k], 1, 65536)
    if v["num_channels"] != 3:
        fail(f"config: vision.num_channels = {v['num_channels']}: only RGB models are supported")
    act("vision.hidden_act", v["hidden_act"], ("gelu",))
    rng("vision.layer_norm_eps", v["layer_norm_eps"], 0, 1)
    if (v["hidden_size"] // v["num_attention_heads"]) % 4:
        fail(f"config: vision head dim {v['hidden_size'] // v['num_attention_heads']} must be divisible by 4 "
             "(axial RoPE)")
    if len(v["global_attn_indexes"]) > 64:
        fail("config: vision.global_attn_indexes: at most 64 entries")
    if proc["image_size"] != v["image_size"]:
        fail(f"processor image size {proc['image_size']} (preprocessor_config.json, or Sam3Processor's default 1008 "
             f"without one) differs from vision image_size {v['image_size']}: the model's RoPE grid is fixed by "
             "the latter, so the processor must resize to exactly that (add a preprocessor_config.json with "
             f"'size': {{'height': {v['image_size']}, 'width': {v['image_size']}}})")
    if any(not x > 0 for x in proc["image_std"]):
        fail(f"processor image_std {proc['image_std']} must be positive")
    rng("processor.rescale_factor", proc["rescale_factor"], 1e-12, 1e12)
    sf = nk["scale_factors"]
    if len(sf) > 8:
        fail(f"config: neck.scale_factors has {len(sf)} levels, at most 8")
    g = v["image_size"] // v["patch_size"]
    for s_ in sf:
        side = int(g * s_) if s_ >= 1 else g // 2
        if side < 1:
            fail(f"config: neck level {s_}x of the {g}x{g} token grid would be empty")
        if s_ == 4.0 and v["hidden_size"] % 4 or s_ == 2.0 and v["hidden_size"] % 2:
            fail(f"config: vision hidden_size {v['hidden_size']} must be divisible by {int(s_)} for the {s_}x neck level")
    rng("neck.fpn_hidden_size", nk["fpn_hidden_size"], 1, BIG)
    rng("text.vocab_size", t["vocab_size"], 1, 1 << 24)
    for k in ("hidden_size", "intermediate_size"):
        rng(f"text.{k}", t[k], 1, BIG)
    for k in ("num_hidden_layers", "num_attention_heads"):
        rng(f"text.{k}", t[k], 1, 4096)
    rng("text.max_position_embeddings", t["max_position_embeddings"], 2, 65536)
    rng("text.layer_norm_eps", t["layer_norm_eps"], 0, 1)
    act("text.hidden_act", t["hidden_act"], ("gelu", "quick_gelu"))
    for sec, lo in (("geometry", 0), ("detr_encoder", 0), ("detr_decoder", 1)):
        d = cfg[sec]
        act(f"{sec}.hidden_act", d["hidden_act"], ("relu",))
        rng(f"{sec}.num_layers", d["num_layers"], lo, 4096)
        rng(f"{sec}.num_attention_heads", d["num_attention_heads"], 1, 4096)
        for k in ("hidden_size", "intermediate_size"):
            rng(f"{sec}.{k}", d[k], 1, BIG)
    rng("geometry.roi_size", cfg["geometry"]["roi_size"], 1, 64)
    rng("detr_decoder.num_queries", cfg["detr_decoder"]["num_queries"], 1, 1 << 16)
    md = cfg["mask_decoder"]
    rng("mask_decoder.num_upsampling_stages", md["num_upsampling_stages"], 0, 8)
    rng("mask_decoder.num_attention_heads", md["num_attention_heads"], 1, 4096)
    D = nk["fpn_hidden_size"]
    widths = {"neck.fpn_hidden_size": D, "geometry.hidden_size": cfg["geometry"]["hidden_size"],
              "detr_encoder.hidden_size": cfg["detr_encoder"]["hidden_size"],
              "detr_decoder.hidden_size": cfg["detr_decoder"]["hidden_size"], "mask_decoder.hidden_size": md["hidden_size"]}
    if len(set(widths.values())) != 1:
        fail("config: sam3.h wires these without projections, so they must be equal: " +
             ", ".join(f"{k} = {x}" for k, x in widths.items()))
    if D % 2:
        fail(f"config: neck width {D} must be even (sine position features)")
    if D % 8:
        fail(f"config: mask decoder width {D} is not divisible by GroupNorm's 8 groups")
    tr = cfg["tracker"]
    if tr is None:
        return
    pe, tm, tn = tr["prompt_encoder"], tr["mask_decoder"], tr["neck"]
    TD = pe["hidden_size"]
    if tm["hidden_size"] != TD or tn["fpn_hidden_size"] != TD:
        fail(f"config: tracker neck {tn['fpn_hidden_size']}, prompt encoder {TD} and mask decoder "
             f"{tm['hidden_size']} widths must be equal")
    rng("tracker prompt_encoder.hidden_size", TD, 1, BIG)
    rng("tracker prompt_encoder.mask_input_channels", pe["mask_input_channels"], 4, BIG)
    rng("tracker prompt_encoder.num_point_embeddings", pe["num_point_embeddings"], 4, 8)
    rng("tracker prompt_encoder.layer_norm_eps", pe["layer_norm_eps"], 0, 1)
    rng("tracker mask_decoder.num_hidden_layers", tm["num_hidden_layers"], 1, 10)
    rng("tracker mask_decoder.num_multimask_outputs", tm["num_multimask_outputs"], 1, 7)
    rng("tracker mask_decoder.iou_head_depth", tm["iou_head_depth"], 2, 9)
    rng("tracker mask_decoder.mlp_dim", tm["mlp_dim"], 1, BIG)
    rng("tracker mask_decoder.iou_head_hidden_dim", tm["iou_head_hidden_dim"], 1, BIG)
    rng("tracker mask_decoder.num_attention_heads", tm["num_attention_heads"], 1, 4096)
    rng("tracker mask_decoder.attention_downsample_rate", tm["attention_downsample_rate"], 1, 4096)
    if (TD % 8 or (TD // tm["attention_downsample_rate"]) % tm["num_attention_heads"] or
            TD % tm["num_attention_heads"] or pe["mask_input_channels"] % 4):
        fail(f"config: tracker width {TD} does not split into the decoder's heads/upscaling")
    if pe["image_size"] // pe["patch_size"] != g:
        fail(f"config: tracker prompt grid {pe['image_size']} // {pe['patch_size']} differs from the vision grid {g}")
    if len(tn["scale_factors"]) < 4 or [float(x) for x in tn["scale_factors"][:3]] != [4.0, 2.0, 1.0]:
        fail(f"config: tracker neck scale_factors {tn['scale_factors']}: the interactive head needs 4 levels "
             "starting 4, 2, 1")


def _check_runnable_sam1(cfg):
    """The SAM 1 counterpart (sam3__load_sam1_config): what _check_config_sam1 does not cover."""
    v, pe, md = cfg["vision"], cfg["prompt_encoder"], cfg["mask_decoder"]
    if v["num_channels"] != 3:
        fail(f"config: vision_config.num_channels = {v['num_channels']}: only RGB models are supported")
    for name, a, ok in (("vision_config.hidden_act", v["hidden_act"], "gelu"),
                        ("prompt_encoder_config.hidden_act", pe["hidden_act"], "gelu"),
                        ("mask_decoder_config.hidden_act", md["hidden_act"], "relu")):
        if a != ok:
            fail(f"config: {name} = {a!r}: sam3.h implements only {ok!r} here")
    if len(v["global_attn_indexes"]) > 64 or v["num_hidden_layers"] > 4096 or v["num_attention_heads"] > 4096:
        fail("config: vision_config: at most 4096 layers and heads and 64 global_attn_indexes")
    if pe["num_point_embeddings"] > 8 or md["num_multimask_outputs"] > 7 or md["iou_head_depth"] > 9 or \
            md["num_hidden_layers"] > 64:
        fail("config: sam3.h runs at most 8 point embeddings, 7 multimask outputs, iou_head_depth 9 and 64 "
             "two-way layers")


# ----------------------------------------------------------------------------------------
# The tensor manifest, derived from the config alone
# ----------------------------------------------------------------------------------------

class _Manifest:
    """Ordered list of (name, shape, role, kind); kind says what the tensor is
    (linear / conv / convT / bias / norm_w / norm_b / embed / fourier / scale)."""

    def __init__(self):
        self.items = []
        self.role = "keep"

    def add(self, name, shape, kind, role=None):
        self.items.append((name, tuple(int(s) for s in shape), role or self.role, kind))

    def linear(self, p, n_out, n_in, bias=True):
        self.add(p + ".weight", [n_out, n_in], "linear")
        if bias:
            self.add(p + ".bias", [n_out], "bias")

    def conv(self, p, n_out, n_in, k):
        self.add(p + ".weight", [n_out, n_in, k, k], "conv")
        self.add(p + ".bias", [n_out], "bias")

    def conv_t(self, p, n_in, n_out, k):  # ConvTranspose2d weight is [in, out, kh, kw]
        self.add(p + ".weight", [n_in, n_out, k, k], "convT")
        self.add(p + ".bias", [n_out], "bias")

    def norm(self, p, n):
        self.add(p + ".weight", [n], "norm_w")
        self.add(p + ".bias", [n], "norm_b")

    def attn(self, p, hidden, internal=None, kv_in=None, names="qkvo"):
        internal = internal or hidden
        kv_in = kv_in or hidden
        for x in names:
            if x == "q":
                self.linear(p + ".q_proj", internal, hidden)
            elif x in "kv":
                self.linear(f"{p}.{x}_proj", internal, kv_in)
            elif x == "o":
                self.linear(p + ".o_proj", hidden, internal)

    def mlp(self, p, hidden, inner, a="fc1", b="fc2"):
        self.linear(f"{p}.{a}", inner, hidden)
        self.linear(f"{p}.{b}", hidden, inner)

    def feed_forward(self, p, n_in, hidden, n_out, num_layers):  # Sam3TrackerVideoFeedForward
        self.linear(p + ".proj_in", hidden, n_in)
        self.linear(p + ".proj_out", n_out, hidden)
        for i in range(num_layers - 2):
            self.linear(f"{p}.layers.{i}", hidden, hidden)


def _vit(m, p, v):
    H, I, ps = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    g = v["pretrain_image_size"] // ps
    m.add(p + "embeddings.position_embeddings", [1, g * g, H], "embed")
    m.add(p + "embeddings.patch_embeddings.projection.weight", [H, v["num_channels"], ps, ps], "conv")
    m.norm(p + "layer_norm", H)
    for i in range(v["num_hidden_layers"]):
        q = f"{p}layers.{i}."
        m.norm(q + "layer_norm1", H)
        m.attn(q + "attention", H)
        m.norm(q + "layer_norm2", H)
        m.mlp(q + "mlp", H, I)


def _neck(m, p, C, neck):
    """Sam3VisionNeck. The model uses every level but the last (fpn_hidden_states[:-1])."""
    F, scales = neck["fpn_hidden_size"], neck["scale_factors"]
    for j, s in enumerate(scales):
        m.role = "drop" if j == len(scales) - 1 else "keep"
        q = f"{p}fpn_layers.{j}."
        mid = C
        if s == 4.0:
            m.conv_t(q + "scale_layers.0", C, C // 2, 2)  # scale_layers.1 is the GELU
            m.conv_t(q + "scale_layers.2", C // 2, C // 4, 2)
            mid = C // 4
        elif s == 2.0:
            m.conv_t(q + "scale_layers.0", C, C // 2, 2)
            mid = C // 2
        m.conv(q + "proj1", F, mid, 1)
        m.conv(q + "proj2", F, F, 3)
    m.role = "keep"


def _detector(m, cfg):
    P = cfg["prefix"]
    v, t = cfg["vit"], cfg["text"]
    _vit(m, P + "vision_encoder.backbone.", v)
    _neck(m, P + "vision_encoder.neck.", v["hidden_size"], cfg["neck"])

    H, I = t["hidden_size"], t["intermediate_size"]
    q = P + "text_encoder.text_model."
    m.add(q + "embeddings.token_embedding.weight", [t["vocab_size"], H], "embed")
    m.add(q + "embeddings.position_embedding.weight", [t["max_position_embeddings"], H], "embed")
    for i in range(t["num_hidden_layers"]):
        r = f"{q}encoder.layers.{i}."
        for x in ("k", "v", "q", "out"):
            m.linear(f"{r}self_attn.{x}_proj", H, H)
        m.norm(r + "layer_norm1", H)
        m.mlp(r + "mlp", H, I)
        m.norm(r + "layer_norm2", H)
    m.norm(q + "final_layer_norm", H)
    m.add(P + "text_encoder.text_projection.weight", [t["projection_dim"], H], "linear", "drop")
    m.linear(P + "text_projection", cfg["detr_encoder"]["hidden_size"], H)

    g = cfg["geometry"]
    G, q = g["hidden_size"], P + "geometry_encoder."
    m.add(q + "label_embed.weight", [2, G], "embed")
    m.add(q + "cls_embed.weight", [1, G], "embed")
    m.linear(q + "boxes_direct_project", G, 4)
    m.conv(q + "boxes_pool_project", G, G, g["roi_size"])
    m.linear(q + "boxes_pos_enc_project", G, G + 2)
    m.norm(q + "vision_layer_norm", G)
    m.linear(q + "final_proj", G, G)
    m.norm(q + "prompt_layer_norm", G)
    for i in range(g["num_layers"]):
        r = f"{q}layers.{i}."
        m.norm(r + "layer_norm1", G)
        m.attn(r + "self_attn", G)
        m.attn(r + "cross_attn", G)
        m.norm(r + "layer_norm2", G)
        m.mlp(r + "mlp", G, g["intermediate_size"])
        m.norm(r + "layer_norm3", G)
    m.norm(q + "output_layer_norm", G)

    e = cfg["detr_encoder"]
    for i in range(e["num_layers"]):
        r = f"{P}detr_encoder.layers.{i}."
        m.norm(r + "layer_norm1", e["hidden_size"])
        m.attn(r + "self_attn", e["hidden_size"])
        m.attn(r + "cross_attn", e["hidden_size"])
        m.norm(r + "layer_norm2", e["hidden_size"])
        m.mlp(r + "mlp", e["hidden_size"], e["intermediate_size"])
        m.norm(r + "layer_norm3", e["hidden_size"])

    d = cfg["detr_decoder"]
    D, q = d["hidden_size"], P + "detr_decoder."
    for i in range(d["num_layers"]):
        r = f"{q}layers.{i}."
        for a in ("self_attn", "text_cross_attn", "vision_cross_attn"):
            m.attn(r + a, D)
            m.norm(r + a + "_layer_norm", D)
        m.mlp(r + "mlp", D, d["intermediate_size"])
        m.norm(r + "mlp_layer_norm", D)
    m.norm(q + "output_layer_norm", D)
    m.linear(q + "box_head.layer1", D, D)
    m.linear(q + "box_head.layer2", D, D)
    m.linear(q + "box_head.layer3", 4, D)
    m.add(q + "query_embed.weight", [d["num_queries"], D], "embed")
    m.add(q + "reference_points.weight", [d["num_queries"], 4], "embed")
    m.add(q + "presence_token.weight", [1, D], "embed")
    m.linear(q + "presence_head.layer1", D, D)
    m.linear(q + "presence_head.layer2", D, D)
    m.linear(q + "presence_head.layer3", 1, D)
    m.norm(q + "presence_layer_norm", D)
    m.linear(q + "ref_point_head.layer1", D, 2 * D)
    m.linear(q + "ref_point_head.layer2", D, D)
    for xy in "xy":
        m.linear(f"{q}box_rpb_embed_{xy}.layer1", D, 2)
        m.linear(f"{q}box_rpb_embed_{xy}.layer2", d["num_attention_heads"], D)

    md = cfg["mask_decoder"]
    M, q = md["hidden_size"], P + "mask_decoder."
    used = len(cfg["neck"]["scale_factors"]) - 2  # kept FPN levels - 1
    for k in range(md["num_upsampling_stages"]):  # stages beyond the kept levels are unused
        m.role = "drop" if k >= used else "keep"
        m.conv(f"{q}pixel_decoder.conv_layers.{k}", M, M, 3)
    for k in range(md["num_upsampling_stages"]):
        m.role = "drop" if k >= used else "keep"
        m.norm(f"{q}pixel_decoder.norms.{k}", M)
    m.role = "keep"
    for k in range(3):
        m.linear(f"{q}mask_embedder.layers.{k}", M, M)
    m.conv(q + "instance_projection", M, M, 1)
    m.conv(q + "semantic_projection", 1, M, 1)
    m.attn(q + "prompt_cross_attn", M)
    m.norm(q + "prompt_cross_attn_norm", M)

    q = P + "dot_product_scoring."
    m.linear(q + "text_mlp.layer1", d["intermediate_size"], D)
    m.linear(q + "text_mlp.layer2", D, d["intermediate_size"])
    m.norm(q + "text_mlp_out_norm", D)
    m.linear(q + "text_proj", D, D)
    m.linear(q + "query_proj", D, D)


def _tracker(m, cfg):
    """Sam3TrackerVideoModel (prefix tracker_model.) and Sam3VideoModel's tracker_neck."""
    t = cfg["tracker"]
    pe, md, vid = t["prompt_encoder"], t["mask_decoder"], t["video"]
    hd = t["neck"]["fpn_hidden_size"]
    mem = vid["memory_encoder_output_channels"]
    q = "tracker_model."
    m.add(q + "no_memory_embedding", [1, 1, hd], "embed")
    m.add(q + "no_memory_positional_encoding", [1, 1, hd], "embed", "drop")  # unused by HF's forward
    # role "video": the memory modules, kept when the checkpoint has all of them (plan())
    m.role = "video"
    m.add(q + "memory_temporal_positional_encoding", [vid["num_maskmem"], 1, 1, mem], "embed")
    m.add(q + "no_object_pointer", [1, hd], "embed")
    if vid["enable_occlusion_spatial_embedding"]:
        m.add(q + "occlusion_spatial_embedding_parameter", [1, mem], "embed")
    m.role = "keep"

    P = pe["hidden_size"]
    m.add(q + "shared_image_embedding.positional_embedding", [2, P // 2], "fourier")
    r = q + "prompt_encoder."
    m.add(r + "shared_embedding.positional_embedding", [2, P // 2], "fourier", "drop")
    mic = pe["mask_input_channels"]
    m.conv(r + "mask_embed.conv1", mic // 4, 1, 2)
    m.conv(r + "mask_embed.conv2", mic, mic // 4, 2)
    m.conv(r + "mask_embed.conv3", P, mic, 1)
    m.norm(r + "mask_embed.layer_norm1", mic // 4)
    m.norm(r + "mask_embed.layer_norm2", mic)
    m.add(r + "no_mask_embed.weight", [1, P], "embed")
    m.add(r + "point_embed.weight", [pe["num_point_embeddings"], P], "embed")
    m.add(r + "not_a_point_embed.weight", [1, P], "embed")

    h = md["hidden_size"]
    inner = h // md["attention_downsample_rate"]
    ntok = md["num_multimask_outputs"] + 1
    r = q + "mask_decoder."
    m.add(r + "iou_token.weight", [1, h], "embed")
    m.add(r + "mask_tokens.weight", [ntok, h], "embed")
    for i in range(md["num_hidden_layers"]):
        s = f"{r}transformer.layers.{i}."
        m.attn(s + "self_attn", h)
        m.norm(s + "layer_norm1", h)
        m.attn(s + "cross_attn_token_to_image", h, inner)
        m.norm(s + "layer_norm2", h)
        # HF quirk: the block MLP's depth is the decoder's num_hidden_layers
        m.feed_forward(s + "mlp", h, md["mlp_dim"], h, md["num_hidden_layers"])
        m.norm(s + "layer_norm3", h)
        m.norm(s + "layer_norm4", h)
        m.attn(s + "cross_attn_image_to_token", h, inner)
    m.attn(r + "transformer.final_attn_token_to_image", h, inner)
    m.norm(r + "transformer.layer_norm_final_attn", h)
    m.conv_t(r + "upscale_conv1", h, h // 4, 2)
    m.conv_t(r + "upscale_conv2", h // 4, h // 8, 2)
    m.norm(r + "upscale_layer_norm", h // 4)
    for k in range(ntok):
        m.feed_forward(f"{r}output_hypernetworks_mlps.{k}", h, h, h // 8, 3)
    m.feed_forward(r + "iou_prediction_head", h, md["iou_head_hidden_dim"], ntok, md["iou_head_depth"])
    m.conv(r + "conv_s0", h // 8, h, 1)
    m.conv(r + "conv_s1", h // 4, h, 1)
    m.add(r + "obj_score_token.weight", [1, h], "embed")
    m.feed_forward(r + "pred_obj_score_head", h, h, 1, 3)

    m.role = "video"  # everything below is video-only
    mh = vid["memory_attention_hidden_size"]
    mi = mh // vid["memory_attention_downsample_rate"]
    for i in range(vid["memory_attention_num_layers"]):
        s = f"{q}memory_attention.layers.{i}."
        m.attn(s + "self_attn", mh, mi)
        m.attn(s + "cross_attn_image", mh, mi, kv_in=64)  # kv_in_dim=64 is hard-coded in HF
        m.linear(s + "linear1", vid["memory_attention_feed_forward_hidden_size"], mh)
        m.linear(s + "linear2", mh, vid["memory_attention_feed_forward_hidden_size"])
        for k in (1, 2, 3):
            m.norm(f"{s}layer_norm{k}", mh)
    m.norm(q + "memory_attention.layer_norm", mh)
    s = q + "memory_encoder."
    stride, ks = vid["mask_downsampler_stride"], vid["mask_downsampler_kernel_size"]
    c_in = c_out = 1
    for i in range(int(math.log2(vid["mask_downsampler_total_stride"]) // math.log2(stride))):
        c_out = c_in * stride * stride
        m.conv(f"{s}mask_downsampler.layers.{i}.conv", c_out, c_in, ks)
        m.norm(f"{s}mask_downsampler.layers.{i}.layer_norm", c_out)
        c_in = c_out
    m.conv(s + "mask_downsampler.final_conv", vid["mask_downsampler_embed_dim"], c_out, 1)
    meh = vid["memory_encoder_hidden_size"]
    m.conv(s + "feature_projection", meh, meh, 1)
    fe, fi = vid["memory_fuser_embed_dim"], vid["memory_fuser_intermediate_dim"]
    for i in range(vid["memory_fuser_num_layers"]):
        r = f"{s}memory_fuser.layers.{i}."
        m.add(r + "scale", [fe], "scale")
        m.conv(r + "depthwise_conv", fe, 1, vid["memory_fuser_kernel_size"])
        m.norm(r + "layer_norm", fe)
        m.linear(r + "pointwise_conv1", fi, fe)
        m.linear(r + "pointwise_conv2", fe, fi)
    m.conv(s + "projection", mem, meh, 1)
    m.conv(q + "mask_downsample", 1, 1, 4)
    m.feed_forward(q + "object_pointer_proj", hd, hd, hd, 3)
    if vid["enable_temporal_pos_encoding_for_object_pointers"]:
        m.linear(q + "temporal_positional_encoding_projection_layer", mem, hd)
    m.role = "keep"

    # Sam3VideoModel builds tracker_neck from detector_config.vision_config
    _neck(m, "tracker_neck.", cfg["vit"]["hidden_size"], cfg["neck"])


def _sam1_attention(m, p, hidden, internal):
    """SamAttention: q/k/v hidden -> internal, out_proj internal -> hidden."""
    for x in "qkv":
        m.linear(f"{p}.{x}_proj", internal, hidden)
    m.linear(p + ".out_proj", hidden, internal)


def sam1_manifest(cfg):
    """HF SamModel's state dict, derived from the config: [(name, shape, role, kind)]."""
    v, pe, md = cfg["vision"], cfg["prompt_encoder"], cfg["mask_decoder"]
    m = _Manifest()
    m.add(SAM1_FOURIER, [2, v["num_pos_feats"]], "fourier")

    C, g, L = v["hidden_size"], v["image_size"] // v["patch_size"], v["num_hidden_layers"]
    hd, mlp, q = C // v["num_attention_heads"], v["mlp_dim"], "vision_encoder."
    if v["use_abs_pos"]:
        m.add(q + "pos_embed", [1, g, g, C], "embed")
    m.conv(q + "patch_embed.projection", C, v["num_channels"], v["patch_size"])
    for i in range(L):
        r = f"{q}layers.{i}."
        m.norm(r + "layer_norm1", C)
        if v["use_rel_pos"]:
            S = g if (i in v["global_attn_indexes"] or v["window_size"] == 0) else v["window_size"]
            m.add(r + "attn.rel_pos_h", [2 * S - 1, hd], "embed")
            m.add(r + "attn.rel_pos_w", [2 * S - 1, hd], "embed")
        m.linear(r + "attn.qkv", 3 * C, C, bias=v["qkv_bias"])
        m.linear(r + "attn.proj", C, C)
        m.norm(r + "layer_norm2", C)
        m.linear(r + "mlp.lin1", mlp, C)
        m.linear(r + "mlp.lin2", C, mlp)
    O = v["output_channels"]
    m.add(q + "neck.conv1.weight", [O, C, 1, 1], "conv")
    m.norm(q + "neck.layer_norm1", O)
    m.add(q + "neck.conv2.weight", [O, O, 3, 3], "conv")
    m.norm(q + "neck.layer_norm2", O)

    P, mic, r = pe["hidden_size"], pe["mask_input_channels"], "prompt_encoder."
    m.add(SAM1_FOURIER_COPY, [2, v["num_pos_feats"]], "fourier", "drop")
    m.conv(r + "mask_embed.conv1", mic // 4, 1, 2)
    m.conv(r + "mask_embed.conv2", mic, mic // 4, 2)
    m.conv(r + "mask_embed.conv3", P, mic, 1)
    m.norm(r + "mask_embed.layer_norm1", mic // 4)
    m.norm(r + "mask_embed.layer_norm2", mic)
    m.add(r + "no_mask_embed.weight", [1, P], "embed")
    for j in range(pe["num_point_embeddings"]):
        m.add(f"{r}point_embed.{j}.weight", [1, P], "embed")
    m.add(r + "not_a_point_embed.weight", [1, P], "embed")

    h = md["hidden_size"]
    inner, ntok, r = h // md["attention_downsample_rate"], md["num_multimask_outputs"] + 1, "mask_decoder."
    m.add(r + "iou_token.weight", [1, h], "embed")
    m.add(r + "mask_tokens.weight", [ntok, h], "embed")
    for i in range(md["num_hidden_layers"]):
        s = f"{r}transformer.layers.{i}."
        _sam1_attention(m, s + "self_attn", h, h)
        m.norm(s + "layer_norm1", h)
        _sam1_attention(m, s + "cross_attn_token_to_image", h, inner)
        m.norm(s + "layer_norm2", h)
        m.linear(s + "mlp.lin1", md["mlp_dim"], h)
        m.linear(s + "mlp.lin2", h, md["mlp_dim"])
        m.norm(s + "layer_norm3", h)
        m.norm(s + "layer_norm4", h)
        _sam1_attention(m, s + "cross_attn_image_to_token", h, inner)
    _sam1_attention(m, r + "transformer.final_attn_token_to_image", h, inner)
    m.norm(r + "transformer.layer_norm_final_attn", h)
    m.conv_t(r + "upscale_conv1", h, h // 4, 2)
    m.conv_t(r + "upscale_conv2", h // 4, h // 8, 2)
    m.norm(r + "upscale_layer_norm", h // 4)
    for k in range(ntok):
        m.feed_forward(f"{r}output_hypernetworks_mlps.{k}", h, h, h // 8, 3)
    m.feed_forward(r + "iou_prediction_head", h, md["iou_head_hidden_dim"], ntok, md["iou_head_depth"])
    return m.items


def manifest(cfg):
    """Every tensor the checkpoint may hold, in state-dict order: [(name, shape, role, kind)]."""
    if cfg["model_type"] == "sam":
        return sam1_manifest(cfg)
    m = _Manifest()
    _detector(m, cfg)
    if cfg["tracker"] is not None:
        _tracker(m, cfg)
    return m.items


def expected_tensors(cfg):
    """name -> (shape, role) for every tensor the checkpoint may hold; role "keep" or "drop"."""
    return {name: (shape, role) for name, shape, role, _ in manifest(cfg)}


def output_name(name):
    """Name inside the .sam3 file: the detector loses its "detector_model." prefix."""
    return name[len(DETECTOR_PREFIX):] if name.startswith(DETECTOR_PREFIX) else name


# ----------------------------------------------------------------------------------------
# safetensors reading (memory-mapped)
# ----------------------------------------------------------------------------------------

ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


class SourceTensor:
    kind = None  # the manifest's kind (linear, conv, convT, bias, norm_w, ...), set by plan()

    def __init__(self, path, mm, dtype, shape, begin, end):
        self.path, self.mm, self.dtype, self.shape = path, mm, dtype, shape
        self.begin, self.end = begin, end

    def f32(self):
        """The tensor as float32 (a zero-copy view of the mapped file for F32 input)."""
        raw = self.mm[self.begin:self.end]
        if self.dtype == "F32":
            a = raw.view("<f4")
        elif self.dtype == "F16":
            a = raw.view("<f2").astype(np.float32)
        else:  # BF16: the top 16 bits of an f32
            a = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
        return a.reshape(self.shape)


def finite(name, src):
    """src.f32(), refusing a NaN or an infinity: such a weight empties every result silently."""
    a = src.f32()
    if a.size and not np.isfinite(a).all():
        bad = int(np.count_nonzero(~np.isfinite(a)))
        fail(f"{src.path}: tensor {name}: {bad} of its {a.size} weights are NaN or infinite (a damaged checkpoint)")
    return a


MAX_JSON_DEPTH = 64  # HF's files nest 4 levels; Python's json recurses once per level
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _json_loads(raw, label, what="bad JSON", **kw):
    """json.loads of raw bytes, refusing nesting deeper than MAX_JSON_DEPTH before parsing (a
    deeply nested file would otherwise end in a RecursionError)."""
    b = np.frombuffer(_JSON_STRING.sub(b'""', raw), dtype=np.uint8)
    step = (b == ord("[")).astype(np.int32) + (b == ord("{")) - (b == ord("]")) - (b == ord("}"))
    depth = int(np.cumsum(step).max()) if b.size else 0
    if depth > MAX_JSON_DEPTH:
        fail(f"{label}: {what}: nested {depth} levels deep (at most {MAX_JSON_DEPTH} accepted)")
    try:
        return json.loads(raw.decode("utf-8"), **kw)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        fail(f"{label}: {what}: {e}")


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


MAX_ST_HEADER = 16 << 20  # bytes of a safetensors JSON header (the 840M model's: ~100 KB)
MAX_ST_DIMS = 8           # dimensions of a tensor's shape (sam3 files hold at most 4)


def read_safetensors(path):
    """name -> SourceTensor for one .safetensors file; every header field is checked."""
    label = os.path.basename(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                fail(f"{label}: file is {size} bytes, too short for a safetensors header")
            (n,) = struct.unpack("<Q", head)
            if 8 + n > size:
                fail(f"{label}: header length {n} runs past the end of the file ({size} bytes)")
            if n > MAX_ST_HEADER:
                fail(f"{label}: header length {n} is over {MAX_ST_HEADER} bytes (a real checkpoint's is well under 1 MB)")
            raw = f.read(n)
    except OSError as e:
        fail(f"{label}: cannot read: {e.strerror}")
    header = _json_loads(raw, label, "bad JSON header", object_pairs_hook=_no_duplicates)
    if not isinstance(header, dict):
        fail(f"{label}: bad JSON header: not an object")
    data_start, data_len = 8 + n, size - 8 - n
    mm = np.memmap(path, dtype=np.uint8, mode="r") if size > 0 else None
    out, spans = {}, []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(e, dict) or not {"dtype", "shape", "data_offsets"} <= set(e):
            fail(f"{label}: tensor {name}: header entry needs dtype, shape and data_offsets")
        dt, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if not isinstance(dt, str) or dt not in ST_DTYPES:
            fail(f"{label}: tensor {name}: dtype {dt!r} is not supported (F32, F16, BF16 are)")
        if isinstance(shape, list) and len(shape) > MAX_ST_DIMS:
            fail(f"{label}: tensor {name}: shape has {len(shape)} dimensions (at most {MAX_ST_DIMS})")
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            fail(f"{label}: tensor {name}: bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(o) is int for o in offs)):
            fail(f"{label}: tensor {name}: bad data_offsets {offs!r}")
        b, end = offs
        if not 0 <= b <= end <= data_len:
            fail(f"{label}: tensor {name}: data_offsets {offs} lie outside the {data_len} data bytes")
        need = math.prod(shape) * ST_DTYPES[dt][1]  # Python ints: a hostile shape cannot overflow
        if end - b != need:
            fail(f"{label}: tensor {name}: data_offsets {offs} span {end - b} bytes but "
                 f"{dt} {shape} needs {need}")
        spans.append((b, end, name))
        out[name] = SourceTensor(path, mm, dt, tuple(shape), data_start + b, data_start + end)
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            fail(f"{label}: tensors {n0} and {n1} overlap (data_offsets [{b0}, {e0}] and [{b1}, {e1}])")
    return out


def read_checkpoint(src):
    """All tensors of SRC_DIR (single file or sharded), and a description of the files."""
    single = os.path.join(src, "model.safetensors")
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.isfile(single) and os.path.isfile(index):
        fail(f"{src}: holds both model.safetensors and model.safetensors.index.json (shards): which one is "
             "the model is ambiguous; move the one you do not want out of the folder")
    if os.path.isfile(single):
        t = read_safetensors(single)
        return t, ["model.safetensors"]
    if not os.path.isfile(index):
        fail(f"{src}: neither model.safetensors nor model.safetensors.index.json is there")
    idx = _load_json(index)
    wm = idx.get("weight_map") if isinstance(idx, dict) else None
    if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
        fail("model.safetensors.index.json: no weight_map object of name -> file")
    shards = sorted(set(wm.values()))
    tensors = {}
    for sh in shards:
        if os.path.basename(sh) != sh or sh in ("", ".", ".."):
            fail(f"model.safetensors.index.json: shard name {sh!r} is not a plain file name")
        p = os.path.join(src, sh)
        if not os.path.isfile(p):
            fail(f"missing shard {sh} (named in model.safetensors.index.json)")
        for name, st in read_safetensors(p).items():
            if wm.get(name) != sh:
                fail(f"shard {sh} holds tensor {name}, which the index maps to {wm.get(name)!r}")
            tensors[name] = st
    for name, sh in wm.items():
        if name not in tensors:
            fail(f"tensor {name}: the index says shard {sh}, which does not hold it")
    return tensors, shards


def _load_json(path):
    label = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"{label}: cannot read: {e.strerror}")
    return _json_loads(raw, label)


# ----------------------------------------------------------------------------------------
# Tokenizer and processor
# ----------------------------------------------------------------------------------------

def read_tokenizer(src):
    vpath, mpath = os.path.join(src, "vocab.json"), os.path.join(src, "merges.txt")
    for p in (vpath, mpath):
        if not os.path.isfile(p):
            fail(f"{src}: {os.path.basename(p)} is missing (the CLIP tokenizer needs vocab.json and merges.txt)")
    vocab = _load_json(vpath)
    if not isinstance(vocab, dict) or not vocab:
        fail("vocab.json: expected a non-empty object token -> id")
    if not all(type(i) is int for i in vocab.values()) or sorted(vocab.values()) != list(range(len(vocab))):
        fail("vocab.json: ids must be exactly 0 .. n-1, each once")
    by_id = [None] * len(vocab)
    for tok, i in vocab.items():
        by_id[i] = tok
    for special in ("<|startoftext|>", "<|endoftext|>"):
        if special not in vocab:
            fail(f"vocab.json: special token {special} is missing")
    try:
        with open(mpath, "rb") as f:
            lines = f.read().decode("utf-8").split("\n")
    except OSError as e:
        fail(f"merges.txt: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        fail(f"merges.txt: not UTF-8: {e}")
    merges = []
    for ln, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if (ln == 1 and line.startswith("#version")) or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            fail(f"merges.txt line {ln}: expected 'left right', got {line!r}")
        a, b = parts
        for tok in (a, b, a + b):
            if tok not in vocab:
                fail(f"merges.txt line {ln}: {tok!r} is not in vocab.json")
        merges.append((vocab[a], vocab[b], vocab[a + b]))
    enc = [t.encode("utf-8") for t in by_id]
    offsets = np.zeros(len(enc) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(b) for b in enc])
    return {
        "vocab_size": len(vocab), "n_merges": len(merges),
        "bos": vocab["<|startoftext|>"], "eos": vocab["<|endoftext|>"],
        "bytes": np.frombuffer(b"".join(enc), dtype=np.uint8).copy(),
        "offsets": offsets,
        "merges": np.array(merges, dtype=np.int32).reshape(len(merges), 3),
    }


def read_processor(src):
    p = os.path.join(src, "preprocessor_config.json")
    out = dict(PROCESSOR_DEFAULTS)
    if not os.path.isfile(p):
        return out, "defaults"
    pp = _load_json(p)
    if not isinstance(pp, dict):
        fail("preprocessor_config.json: not a JSON object")
    pp = pp.get("image_processor", pp) if isinstance(pp.get("image_processor"), dict) else pp
    for flag in ("do_resize", "do_rescale", "do_normalize"):
        if pp.get(flag) is False:
            fail(f"preprocessor_config.json: {flag} = false is not supported")
    size = pp.get("size", {"height": 1008, "width": 1008})
    if isinstance(size, dict) and "height" in size and "width" in size and size["height"] == size["width"]:
        size = size["height"]
    if type(size) is not int or size <= 0:
        fail(f"preprocessor_config.json: size {pp.get('size')!r}: need a square {{height, width}}")
    out["image_size"] = size
    for k in ("image_mean", "image_std"):
        v = pp.get(k, out[k])
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = [v] * 3
        if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, (int, float)) for x in v)):
            fail(f"preprocessor_config.json: {k} = {v!r}: need 3 numbers")
        out[k] = [float(x) for x in v]
    rf = pp.get("rescale_factor", out["rescale_factor"])
    if not isinstance(rf, (int, float)) or isinstance(rf, bool):
        fail(f"preprocessor_config.json: rescale_factor = {rf!r}: need a number")
    out["rescale_factor"] = float(rf)
    return out, "preprocessor_config.json"


# ----------------------------------------------------------------------------------------
# The .sam3 config
# ----------------------------------------------------------------------------------------

def sam3_config(cfg, proc, tok, source):
    v, n, t = cfg["vit"], cfg["neck"], cfg["text"]
    c = {"arch": "sam3", "file.converter": CONVERTER, "file.source": source, "file.license": LICENSE}
    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_channels", "image_size", "patch_size", "pretrain_image_size", "window_size",
              "global_attn_indexes", "rope_theta", "layer_norm_eps", "hidden_act"):
        c["vision." + k] = v[k]
    c["neck.fpn_hidden_size"] = n["fpn_hidden_size"]
    c["neck.scale_factors"] = [float(s) for s in n["scale_factors"]]
    for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "max_position_embeddings", "layer_norm_eps", "hidden_act"):
        c["text." + k] = t[k]
    for k in ("hidden_size", "num_layers", "num_attention_heads", "intermediate_size", "roi_size",
              "hidden_act"):
        c["geometry." + k] = cfg["geometry"][k]
    for k in ("hidden_size", "num_layers", "num_attention_heads", "intermediate_size", "hidden_act"):
        c["detr_encoder." + k] = cfg["detr_encoder"][k]
    for k in ("hidden_size", "num_layers", "num_queries", "num_attention_heads", "intermediate_size",
              "hidden_act"):
        c["detr_decoder." + k] = cfg["detr_decoder"][k]
    for k in ("hidden_size", "num_upsampling_stages", "num_attention_heads"):
        c["mask_decoder." + k] = cfg["mask_decoder"][k]
    c["processor.image_size"] = proc["image_size"]
    c["processor.image_mean"] = proc["image_mean"]
    c["processor.image_std"] = proc["image_std"]
    c["processor.rescale_factor"] = proc["rescale_factor"]
    c["tokenizer.vocab_size"] = tok["vocab_size"]
    c["tokenizer.n_merges"] = tok["n_merges"]
    c["tokenizer.bos_token_id"] = tok["bos"]
    c["tokenizer.eos_token_id"] = tok["eos"]
    c["tokenizer.pad_token_id"] = tok["eos"]
    c["tokenizer.max_length"] = MAX_TEXT_LENGTH
    tr = cfg["tracker"]
    c["tracker.present"] = int(tr is not None)
    if tr is not None:
        c["tracker.neck.fpn_hidden_size"] = tr["neck"]["fpn_hidden_size"]
        c["tracker.neck.scale_factors"] = [float(s) for s in tr["neck"]["scale_factors"]]
        pe, md = tr["prompt_encoder"], tr["mask_decoder"]
        for k in ("hidden_size", "image_size", "patch_size", "mask_input_channels",
                  "num_point_embeddings", "layer_norm_eps"):
            c["tracker.prompt_encoder." + k] = pe[k]
        for k in ("hidden_size", "mlp_dim", "num_hidden_layers", "num_attention_heads",
                  "attention_downsample_rate", "num_multimask_outputs", "iou_head_depth",
                  "iou_head_hidden_dim"):
            c["tracker.mask_decoder." + k] = md[k]
        c["tracker.mask_decoder.dynamic_multimask"] = int(md["dynamic_multimask_via_stability"])
        c["tracker.mask_decoder.stability_delta"] = md["dynamic_multimask_stability_delta"]
        c["tracker.mask_decoder.stability_thresh"] = md["dynamic_multimask_stability_thresh"]
        c["tracker.video.present"] = int(bool(tr.get("video_present")))
        if tr.get("video_present"):
            vd = tr["video"]
            for short, k in VIDEO_KEYS:
                v = vd[k]
                c["tracker.video." + short] = int(v) if isinstance(v, bool) else v
            c["tracker.video.rope_theta"] = float(vd["rope_theta"])
    return c


# Sam3TrackerVideoConfig fields the tracking loop reads, written as tracker.video.<name>
VIDEO_KEYS = (("num_maskmem", "num_maskmem"), ("max_cond_frames", "max_cond_frame_num"),
              ("max_object_pointers", "max_object_pointers_in_encoder"),
              ("multimask", "multimask_output_in_sam"), ("multimask_min_points", "multimask_min_pt_num"),
              ("multimask_max_points", "multimask_max_pt_num"), ("multimask_tracking", "multimask_output_for_tracking"),
              ("sigmoid_scale", "sigmoid_scale_for_mem_enc"), ("sigmoid_bias", "sigmoid_bias_for_mem_enc"),
              ("occlusion_embedding", "enable_occlusion_spatial_embedding"),
              ("pointer_temporal_pe", "enable_temporal_pos_encoding_for_object_pointers"),
              ("attn.hidden_size", "memory_attention_hidden_size"), ("attn.num_layers", "memory_attention_num_layers"),
              ("attn.num_heads", "memory_attention_num_attention_heads"),
              ("attn.downsample_rate", "memory_attention_downsample_rate"),
              ("attn.ffn_size", "memory_attention_feed_forward_hidden_size"),
              ("encoder.hidden_size", "memory_encoder_hidden_size"), ("encoder.out_channels", "memory_encoder_output_channels"),
              ("downsampler.embed_dim", "mask_downsampler_embed_dim"), ("downsampler.kernel", "mask_downsampler_kernel_size"),
              ("downsampler.stride", "mask_downsampler_stride"), ("downsampler.padding", "mask_downsampler_padding"),
              ("downsampler.total_stride", "mask_downsampler_total_stride"), ("fuser.num_layers", "memory_fuser_num_layers"),
              ("fuser.embed_dim", "memory_fuser_embed_dim"), ("fuser.intermediate", "memory_fuser_intermediate_dim"),
              ("fuser.kernel", "memory_fuser_kernel_size"), ("fuser.padding", "memory_fuser_padding"))


def _check_video(cfg):
    """Why sam3.h cannot run these memory modules (it checks the same at load), or None."""
    t = cfg["tracker"]
    vd, D = t["video"], t["neck"]["fpn_hidden_size"]
    g = t["prompt_encoder"]["image_size"] // t["prompt_encoder"]["patch_size"]
    for k in ("memory_attention_feed_forward_hidden_act", "mask_downsampler_hidden_act", "memory_fuser_hidden_act"):
        want = "relu" if k.startswith("memory_attention") else "gelu"
        if vd[k] != want:
            return (f"config: tracker_config.{k} = {vd[k]!r}: sam3.h runs {want!r}")
    for k in ("memory_attention_hidden_size", "memory_encoder_hidden_size", "mask_downsampler_embed_dim",
              "memory_fuser_embed_dim"):
        if vd[k] != D:
            return (f"config: tracker_config.{k} = {vd[k]} must equal the tracker width {D}")
    mem = vd["memory_encoder_output_channels"]
    if mem != 64:
        return (f"config: tracker_config.memory_encoder_output_channels = {mem}: HF's memory attention "
             "reads 64-channel memories (kv_in_dim=64)")
    if D % mem:
        return (f"config: the tracker width {D} is not a multiple of the memory width {mem} (object pointers "
             "are split into memory-wide tokens)")
    di = D // vd["memory_attention_downsample_rate"] if vd["memory_attention_downsample_rate"] > 0 else 0
    if di <= 0 or D % vd["memory_attention_downsample_rate"] or di % vd["memory_attention_num_attention_heads"] \
            or (di // vd["memory_attention_num_attention_heads"]) % 4:
        return ("config: tracker memory attention: width / downsample_rate / heads must give a head size "
             "divisible by 4 (axial RoPE)")
    side = 16 * g
    st = vd["mask_downsampler_stride"]
    n = int(math.log2(vd["mask_downsampler_total_stride"]) // math.log2(st)) if st > 1 and vd["mask_downsampler_total_stride"] > 1 else 0
    for _ in range(n):
        side = (side + 2 * vd["mask_downsampler_padding"] - vd["mask_downsampler_kernel_size"]) // st + 1
    if n < 1 or side != g:
        return (f"config: the mask downsampler takes {16 * g}-pixel masks to {side}, not the grid {g}")
    if vd["memory_fuser_kernel_size"] != 2 * vd["memory_fuser_padding"] + 1:
        return ("config: memory_fuser_kernel_size must be 2 * memory_fuser_padding + 1 (same size)")
    for k in ("num_maskmem", "max_object_pointers_in_encoder", "memory_attention_num_layers"):
        if vd[k] < 1:
            return (f"config: tracker_config.{k} = {vd[k]} must be positive")
    if vd["max_cond_frame_num"] < 1 and vd["max_cond_frame_num"] != -1:
        return ("config: tracker_config.max_cond_frame_num must be positive or -1 (all)")
    return None


# ----------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------

def _shape_str(s):
    return "[" + ", ".join(str(x) for x in s) + "]"


def plan(src):
    """Read and check everything; return (config dict, [(out name, SourceTensor | array)], info)."""
    if not os.path.isdir(src):
        fail(f"{src}: not a directory")
    cpath = os.path.join(src, "config.json")
    if not os.path.isfile(cpath):
        fail(f"{src}: config.json is missing")
    cfg = fill_config(_load_json(cpath))
    if cfg["model_type"] == "sam":
        return plan_sam1(src, cfg)
    tensors, files = read_checkpoint(src)
    prefixed = any(n.startswith(DETECTOR_PREFIX) for n in tensors)
    notes = []
    if cfg["model_type"] == "sam3_video" and not prefixed:
        notes.append("tensors have no detector_model. prefix: a plain Sam3Model state dict, "
                     "converting the detector only (no tracker)")
        cfg = dict(cfg, prefix="", tracker=None)
    elif cfg["model_type"] == "sam3" and prefixed:
        cfg = dict(cfg, prefix=DETECTOR_PREFIX)
    tok = read_tokenizer(src)
    proc, proc_src = read_processor(src)
    _check_runnable(cfg, proc)

    expected = manifest(cfg)
    check_tensors(expected, tensors)
    video = [e[0] for e in expected if e[2] == "video"]
    have = [n for n in video if n in tensors]
    if have and len(have) != len(video):
        miss = [n for n in video if n not in tensors]
        fail(f"the checkpoint has {len(have)} of the tracker's {len(video)} memory tensors (missing "
             f"{miss[0]}{' and more' if len(miss) > 1 else ''}): give all of them or none")
    if cfg["tracker"] is not None:
        cfg["tracker"]["video_present"] = bool(video) and len(have) == len(video)
        why = _check_video(cfg) if cfg["tracker"]["video_present"] else None
        if not cfg["tracker"]["video_present"]:
            notes.append("no memory modules (tracker_model.memory_*): video tracking will be unavailable")
        elif why:
            # the image parts still convert and run; the memory modules are left out
            cfg["tracker"]["video_present"] = False
            notes.append(f"warning: {why}: the memory modules are left out, video tracking will be unavailable")
    expected = [(n, sh, "keep" if r == "video" and cfg["tracker"]["video_present"] else
                 ("drop" if r == "video" else r), k) for n, sh, r, k in expected]
    check_copies(tensors, "tracker_model.shared_image_embedding.positional_embedding",
                 "tracker_model.prompt_encoder.shared_embedding.positional_embedding")
    tv, vs = tok["vocab_size"], cfg["text"]["vocab_size"]
    if tv > vs:
        fail(f"vocab.json has {tv} tokens but text_config.vocab_size is {vs}")
    if tv < vs:
        notes.append(f"warning: vocab.json has {tv} tokens, fewer than text_config.vocab_size {vs}")

    dts = sorted({tensors[e[0]].dtype for e in expected if e[0] in tensors})
    source = (f"{cfg['model_type']} checkpoint: {', '.join(files)} ({len(tensors)} tensors, "
              f"{'/'.join(dts)}); processor: {proc_src}")
    config = sam3_config(cfg, proc, tok, source)
    out = []
    dropped = []
    for name, shape, role, kind in expected:
        if name not in tensors:
            continue
        tensors[name].kind = kind
        if role == "keep":
            out.append((output_name(name), tensors[name]))
        else:
            dropped.append((name, tensors[name]))
    out.append(("tokenizer.vocab.bytes", tok["bytes"]))
    out.append(("tokenizer.vocab.offsets", tok["offsets"]))
    out.append(("tokenizer.merges", tok["merges"]))
    return config, out, dropped, notes


def check_tensors(expected, tensors):
    """Names and shapes of the checkpoint against the manifest: nothing unexpected, no kept
    tensor missing, every shape as the config says."""
    names = {e[0] for e in expected}
    unexpected = sorted(n for n in tensors if n not in names)
    if unexpected:
        more = f" (and {len(unexpected) - 5} more)" if len(unexpected) > 5 else ""
        fail(f"unexpected tensor {unexpected[0]}" + (f"; also {', '.join(unexpected[1:5])}{more}"
                                                     if len(unexpected) > 1 else ""))
    missing = [e[0] for e in expected if e[2] == "keep" and e[0] not in tensors]
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        fail(f"missing tensor {missing[0]}" + (f"; also {', '.join(missing[1:5])}{more}"
                                               if len(missing) > 1 else ""))
    for name, shape, role, _ in expected:
        if name in tensors and tensors[name].shape != shape:
            fail(f"tensor {name}: shape {list(tensors[name].shape)}, expected {list(shape)} from config.json")


def check_copies(tensors, a, b):
    """Two names of one tied tensor must hold the same bits when both are present."""
    if a in tensors and b in tensors and tensors[a] is not tensors[b]:
        if not np.array_equal(tensors[a].f32().view(np.uint32), tensors[b].f32().view(np.uint32)):
            fail(f"{b} differs from {a}; they should be identical copies")


def read_processor_sam1(src, cfg):
    """processor.* values for SAM 1 from preprocessor_config.json, else SamImageProcessor's defaults."""
    p = os.path.join(src, "preprocessor_config.json")
    out = dict(SAM1_PROCESSOR_DEFAULTS)
    label = "preprocessor_config.json"
    if os.path.isfile(p):
        pp = _load_json(p)
        if not isinstance(pp, dict):
            fail("preprocessor_config.json: not a JSON object")
        pp = pp.get("image_processor", pp) if isinstance(pp.get("image_processor"), dict) else pp
        for flag in ("do_resize", "do_rescale", "do_normalize", "do_pad"):
            if pp.get(flag) is False:
                fail(f"preprocessor_config.json: {flag} = false is not supported")
        rs = pp.get("resample", 2)
        if type(rs) is int and rs != 2:
            fail(f"preprocessor_config.json: resample = {rs} is not supported (only 2, bilinear)")
        size = pp.get("size", {"longest_edge": out["longest_edge"]})
        if not (isinstance(size, dict) and type(size.get("longest_edge")) is int and size["longest_edge"] > 0):
            fail(f"preprocessor_config.json: size {size!r}: need {{\"longest_edge\": N}}")
        out["longest_edge"] = size["longest_edge"]
        pad = pp.get("pad_size", out["pad_size"])
        if isinstance(pad, dict) and "height" in pad and "width" in pad and pad["height"] == pad["width"]:
            pad = pad["height"]
        if type(pad) is not int or pad <= 0:
            fail(f"preprocessor_config.json: pad_size {pp.get('pad_size')!r}: need a square "
                 "{height, width}")
        out["pad_size"] = pad
        for k in ("image_mean", "image_std"):
            v = pp.get(k, out[k])
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                v = [v] * 3
            if not (isinstance(v, list) and len(v) == 3 and
                    all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
                fail(f"preprocessor_config.json: {k} = {v!r}: need 3 numbers")
            out[k] = [float(x) for x in v]
        rf = pp.get("rescale_factor", out["rescale_factor"])
        if not isinstance(rf, (int, float)) or isinstance(rf, bool):
            fail(f"preprocessor_config.json: rescale_factor = {rf!r}: need a number")
        out["rescale_factor"] = float(rf)
    else:
        label = "SamImageProcessor defaults (no preprocessor_config.json)"
    S = cfg["vision"]["image_size"]
    if out["pad_size"] != S:
        fail(f"{label}: pad_size {out['pad_size']} differs from vision_config.image_size {S} "
             "(SamModel accepts only image_size x image_size pixel_values)")
    if out["longest_edge"] > out["pad_size"]:
        fail(f"{label}: size.longest_edge {out['longest_edge']} is larger than pad_size {out['pad_size']}")
    return out, ("preprocessor_config.json" if os.path.isfile(p) else "defaults")


def sam1_config(cfg, proc, source):
    c = {"arch": "sam1", "file.converter": CONVERTER, "file.source": source, "file.license": SAM1_LICENSE}
    v, pe, md = cfg["vision"], cfg["prompt_encoder"], cfg["mask_decoder"]
    for k in ("hidden_size", "output_channels", "num_hidden_layers", "num_attention_heads", "num_channels",
              "image_size", "patch_size", "window_size", "mlp_dim", "num_pos_feats", "global_attn_indexes",
              "qkv_bias", "use_abs_pos", "use_rel_pos", "layer_norm_eps", "hidden_act"):
        c["sam1.vision." + k] = int(v[k]) if isinstance(v[k], bool) else v[k]
    for k in ("hidden_size", "image_size", "patch_size", "mask_input_channels", "num_point_embeddings",
              "layer_norm_eps", "hidden_act"):
        c["sam1.prompt_encoder." + k] = pe[k]
    for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "mlp_dim",
              "attention_downsample_rate", "num_multimask_outputs", "iou_head_depth",
              "iou_head_hidden_dim", "layer_norm_eps", "hidden_act"):
        c["sam1.mask_decoder." + k] = md[k]
    for k in ("longest_edge", "pad_size", "image_mean", "image_std", "rescale_factor"):
        c["processor." + k] = proc[k]
    return c


def plan_sam1(src, cfg):
    """plan() for a HF SamModel checkpoint (config.json model_type "sam")."""
    _check_runnable_sam1(cfg)
    tensors, files = read_checkpoint(src)
    n_src = len(tensors)
    proc, proc_src = read_processor_sam1(src, cfg)
    notes = []
    expected = manifest(cfg)
    if SAM1_FOURIER not in tensors and SAM1_FOURIER_COPY in tensors:
        # HF fills both tied names from either one; we write the matrix under the first name.
        tensors = dict(tensors)
        tensors[SAM1_FOURIER] = tensors[SAM1_FOURIER_COPY]
        notes.append(f"{SAM1_FOURIER} is absent: writing {SAM1_FOURIER_COPY} (the tied copy) under that name")
    check_tensors(expected, tensors)
    check_copies(tensors, SAM1_FOURIER, SAM1_FOURIER_COPY)
    dts = sorted({tensors[e[0]].dtype for e in expected if e[0] in tensors})
    source = (f"sam checkpoint: {', '.join(files)} ({n_src} tensors, {'/'.join(dts)}); "
              f"processor: {proc_src}")
    config = sam1_config(cfg, proc, source)
    out, dropped = [], []
    for name, shape, role, kind in expected:
        if name not in tensors:
            continue
        tensors[name].kind = kind
        if role == "keep":
            out.append((name, tensors[name]))
        elif tensors[name] is not tensors.get(SAM1_FOURIER):
            dropped.append((name, tensors[name]))
    return config, out, dropped, notes


def storage_order(tensors):
    """Each ViT block's k_proj and v_proj weights moved up to follow its q_proj weight: stored
    back to back (sizes are multiples of the alignment) they are one (3C, C) matrix, and sam3.h
    computes q, k and v in one product."""
    by_name = dict(tensors)
    moved = set()
    out = []
    for name, src in tensors:
        if name in moved:
            continue
        out.append((name, src))
        if name.startswith("vision_encoder.backbone.layers.") and name.endswith(".attention.q_proj.weight"):
            base = name[: -len("q_proj.weight")]
            for t in ("k_proj.weight", "v_proj.weight"):
                if base + t in by_name:
                    out.append((base + t, by_name[base + t]))
                    moved.add(base + t)
    return out


def check_output(src, out):
    """OUT must not be, or lead to, a file the conversion reads: any file in SRC (the checkpoint,
    its shards, config.json, ...). Compared by identity (device and inode, so a hard link is
    caught) and by resolved path (a symbolic link, also a dangling one into SRC)."""
    if not os.path.lexists(out):
        return
    inputs = {}
    try:
        names = os.listdir(src)
    except OSError as e:
        fail(f"{src}: cannot list: {e.strerror}")
    for n in names:
        p = os.path.join(src, n)
        try:
            st = os.stat(p)
        except OSError:
            continue
        inputs[(st.st_dev, st.st_ino)] = n
        inputs[os.path.realpath(p)] = n
    try:
        st = os.stat(out)
        hit = inputs.get((st.st_dev, st.st_ino))
    except OSError:
        hit = None
    hit = hit or inputs.get(os.path.realpath(out))
    if hit is not None:
        fail(f"{out}: the output is{' a link to' if os.path.islink(out) else ''} an input file "
             f"({os.path.join(src, hit)}); refusing to overwrite it: choose another output path")


# what --dtype bf16 writes in bf16: the weights sam3.h multiplies (sam3__get_weight); the other
# tensors (norms, biases, embeddings, position tables, the Fourier matrices) stay f32
BF16_KINDS = ("linear", "conv", "convT")


def verify(path, config, tensors):
    f = sam3file.read(path)
    bad = f.checksum_errors()
    if bad is None:
        fail("verify: the file has no checksums")
    if bad:
        fail(f"verify: tensor {bad[0]}: checksum mismatch")
    config = dict(config, **{sam3file.CHECKSUM_KEY: f.config[sam3file.CHECKSUM_KEY]})
    if list(f.config) != list(config):
        fail(f"verify: config keys differ: {list(f.config)} vs {list(config)}")
    for k, v in config.items():
        if f.config[k] != v:
            fail(f"verify: config {k} = {f.config[k]!r}, expected {v!r}")
    if f.order != [n for n, _ in tensors]:
        fail("verify: tensor names or order differ")
    for name, src in tensors:
        want = src.f32() if isinstance(src, SourceTensor) else src
        got = f.get(name)
        if f.tensors[name][0] == sam3file.DT_BF16:
            want = sam3file.bf16_f32(sam3file.to_bf16(want))
        if got.dtype != want.dtype or got.shape != want.shape or \
                not np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)):
            fail(f"verify: tensor {name} differs from the source")
    return len(tensors)


def set_image_size(config, n):
    """--image-size N: the input side of a planned SAM 3 config, checked as sam3.h checks it."""
    if config.get("arch") != "sam3":
        fail(f"--image-size {n}: a SAM 1 model runs only at its own input size (its position embedding is learned per patch)")
    p = config["vision.patch_size"]
    if n % p or n < 2 * p or n > 65536:
        fail(f"--image-size {n}: must be a multiple of the patch size {p}, from {2 * p} to 65536")
    for k in ("vision.image_size", "processor.image_size", "tracker.prompt_encoder.image_size"):
        if k in config:
            config[k] = n


def main(argv=None):
    ap = argparse.ArgumentParser(prog="convert.py", description=__doc__.split("\n")[0])
    ap.add_argument("src", metavar="SRC_DIR")
    ap.add_argument("out", metavar="OUT.sam3")
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"),
                    help="f32 (default) or bf16: the Linear and Conv weights in bf16, rounded to nearest even "
                         "(about half the file); norms, biases, embeddings and position tables stay f32")
    ap.add_argument("--verify", action="store_true", help="re-read OUT and compare with the source")
    ap.add_argument("--quiet", action="store_true", help="print only the totals")
    ap.add_argument("--image-size", type=int, metavar="N",
                    help="SAM 3: the model's input side, a multiple of the patch size (default: the checkpoint's)")
    args = ap.parse_args(argv)
    t0 = time.time()
    try:
        check_output(args.src, args.out)
        config, tensors, dropped, notes = plan(args.src)
        if args.image_size is not None:
            set_image_size(config, args.image_size)
        tensors = storage_order(tensors)
        for n in notes:
            print(f"convert.py: {n}", file=sys.stderr)
        entries = []
        n_params = 0
        n_bf16 = 0
        for name, src in tensors:
            if isinstance(src, SourceTensor) and args.dtype == "bf16" and src.kind in BF16_KINDS:
                entries.append((name, sam3file.Lazy(src.shape, sam3file.BF16, lambda s=src, n=name: sam3file.to_bf16(finite(n, s)))))
                n_params += int(np.prod(src.shape, dtype=np.int64))
                n_bf16 += int(np.prod(src.shape, dtype=np.int64))
                if not args.quiet:
                    a = src.f32()
                    err = float(np.max(np.abs(sam3file.bf16_f32(sam3file.to_bf16(a)) - a))) if a.size else 0.0
                    print(f"  {name:<76} {_shape_str(src.shape):<22} {src.dtype.lower():>4} -> bf16 max_err {err:.3g}")
            elif isinstance(src, SourceTensor):
                entries.append((name, sam3file.Lazy(src.shape, np.float32, lambda s=src, n=name: finite(n, s))))
                n_params += int(np.prod(src.shape, dtype=np.int64))
                if not args.quiet:
                    how = "copy" if src.dtype == "F32" else "exact"
                    print(f"  {name:<76} {_shape_str(src.shape):<22} {src.dtype.lower():>4} -> f32  "
                          f"max_err 0 ({how})")
            else:
                entries.append((name, src))
                if not args.quiet:
                    print(f"  {name:<76} {_shape_str(src.shape):<22} {sam3file.DTYPE_NAME[sam3file.NP_DTYPE[src.dtype]]:>11}")
        if not args.quiet:
            for name, src in dropped:
                print(f"  dropped {name} {_shape_str(src.shape)}")
        try:
            sam3file.write(args.out, config, entries)
        except FileExistsError:
            fail(f"{args.out}.tmp exists (left by an interrupted run, or put there): remove it and run again; "
                 "it is never written through")
        except OSError as e:
            fail(f"{args.out}: cannot write: {e.strerror or e}")
        size = os.path.getsize(args.out)
        n_drop = sum(int(np.prod(s.shape, dtype=np.int64)) for _, s in dropped)
        kinds = f"{n_params:,} params, {n_bf16:,} of them bf16" if args.dtype == "bf16" else f"{n_params:,} f32 params"
        print(f"wrote {args.out}: {len(tensors)} tensors ({kinds}), "
              f"{len(config)} config keys, {size:,} bytes; dropped {len(dropped)} tensors "
              f"({n_drop:,} params); {time.time() - t0:.1f} s")
        if args.verify:
            try:
                n = verify(args.out, config, tensors)
            except ConvertError:
                os.unlink(args.out)
                raise
            print(f"verify: OK, {n} tensors and {len(config)} config values match the source")
    except ConvertError as e:
        print(f"convert.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("convert.py: error: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # e.g. reading a mapped checkpoint that shrank, or a full disk
        print(f"convert.py: error: {e.filename + ': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return 1
    except (MemoryError, RecursionError, ValueError, TypeError) as e:  # nothing known reaches here
        print(f"convert.py: error: {type(e).__name__}: {e} (a bug in convert.py: please report it)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
