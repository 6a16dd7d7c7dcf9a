#!/usr/bin/python3
"""Writes small .sam3 seed files for the loader fuzzer (tests/fuzz_load.c) into OUTDIR.

    /usr/bin/python3 tests/make_fuzz_seeds.py OUTDIR

Seeds (each a few KB to ~60 KB, so nothing MB-sized is committed):
  micro.sam3        a complete, loadable model with every dimension as small as the loader
                    allows (vision 8 wide, 56 px input, 3 queries, a 9-token BPE vocabulary)
                    and the interactive head: the fuzzer starts from a file that passes every
                    check and runs inference (text, boxes, clicks)
  micro_min.sam3    the same with the fewest modules: 2 FPN levels (one kept), one mask
                    decoder stage
  sam1.sam3         a SAM 1 file (arch "sam1": its ViT, neck, prompt encoder, mask decoder), as small
  tables_only.sam3  micro.sam3 with the tensor data cut (file_bytes patched): the header,
                    config, tensor and string tables alone, for the table parser
  header_only.sam3  the first 128 bytes of micro.sam3, file_bytes patched
  tokenizer.sam3    only the tokenizer tables (as tests/make_tokenizer_file.py writes them)
Built with the real converter from random weights (numpy, seeded): same input, same bytes.
"""
import json
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import convert  # noqa: E402
import make_random_checkpoint as mrc  # noqa: E402
import sam3file  # noqa: E402

# A tiny BPE vocabulary: byte-level symbols for "a", "b", "c", one merge, and the specials.
VOCAB = ["a", "b", "c", "a</w>", "b</w>", "c</w>", "ab</w>", "<|startoftext|>", "<|endoftext|>"]
MERGES = [("a", "b</w>")]


def micro_config(minimal=False):
    d = 8
    vision = {"model_type": "sam3_vision_model",
              "backbone_config": {"model_type": "sam3_vit_model", "hidden_size": 8,
                                  "intermediate_size": 8, "num_hidden_layers": 2,
                                  "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
                                  "pretrain_image_size": 28, "window_size": 2,
                                  "global_attn_indexes": [1]},
              "fpn_hidden_size": d,
              "scale_factors": [1.0, 0.5] if minimal else [4.0, 2.0, 1.0, 0.5]}
    det = {
        "model_type": "sam3",
        "vision_config": vision,
        "text_config": {"model_type": "clip_text_model", "vocab_size": len(VOCAB),
                        "hidden_size": 8, "intermediate_size": 8, "projection_dim": 8,
                        "num_hidden_layers": 1, "num_attention_heads": 2,
                        "max_position_embeddings": 32, "hidden_act": "gelu"},
        "geometry_encoder_config": {"hidden_size": d, "num_layers": 1,
                                    "num_attention_heads": 2, "intermediate_size": 8, "roi_size": 2},
        "detr_encoder_config": {"hidden_size": d, "num_layers": 1,
                                "num_attention_heads": 2, "intermediate_size": 8},
        "detr_decoder_config": {"hidden_size": d, "num_layers": 1, "num_queries": 3,
                                "num_attention_heads": 2, "intermediate_size": 8},
        "mask_decoder_config": {"hidden_size": d, "num_upsampling_stages": 1 if minimal else 3,
                                "num_attention_heads": 2},
    }
    if minimal:
        return det
    # with the interactive head (tracker_model.*), for sam3_segment_points
    return {
        "model_type": "sam3_video",
        "detector_config": det,
        "tracker_config": {
            "model_type": "sam3_tracker_video", "image_size": 56,
            "vision_config": json.loads(json.dumps(vision)),
            "prompt_encoder_config": {"hidden_size": d, "image_size": 56, "patch_size": 14,
                                      "mask_input_channels": 4},
            "mask_decoder_config": {"hidden_size": d, "mlp_dim": 8, "num_hidden_layers": 2,
                                    "num_attention_heads": 2, "iou_head_hidden_dim": 8},
            "memory_attention_hidden_size": d, "memory_attention_num_layers": 1,
            "memory_attention_feed_forward_hidden_size": 8, "memory_attention_rope_feat_sizes": [4, 4],
            "memory_encoder_hidden_size": d, "memory_encoder_output_channels": 8,
            "mask_downsampler_embed_dim": d, "memory_fuser_embed_dim": d,
            "memory_fuser_intermediate_dim": 8,
        },
    }


def sam1_config():
    """SAM 1 (HF SamModel, arch "sam1"), as small: ViT 8 wide on a 64 px input, 16 px patches."""
    return {
        "model_type": "sam",
        "vision_config": {"model_type": "sam_vision_model", "hidden_size": 8, "output_channels": 8,
                          "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 64,
                          "patch_size": 16, "window_size": 2, "mlp_dim": 8, "global_attn_indexes": [1],
                          "num_pos_feats": 4, "qkv_bias": True, "use_abs_pos": True, "use_rel_pos": True},
        "prompt_encoder_config": {"hidden_size": 8, "image_size": 64, "patch_size": 16,
                                  "image_embedding_size": 4, "mask_input_channels": 4},
        "mask_decoder_config": {"hidden_size": 8, "mlp_dim": 8, "num_hidden_layers": 2,
                                "num_attention_heads": 2, "iou_head_hidden_dim": 8},
    }


SAM1_PROCESSOR = {"size": {"longest_edge": 64}, "pad_size": {"height": 64, "width": 64},
                  "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
                  "rescale_factor": 1 / 255, "do_pad": True}
SAM3_PROCESSOR = {"size": {"height": 56, "width": 56}, "image_mean": [0.5, 0.5, 0.5],
                  "image_std": [0.5, 0.5, 0.5], "rescale_factor": 1 / 255}


def build_model(tmp, name, cfg_json, seed, processor=SAM3_PROCESSOR):
    src = os.path.join(tmp, name)
    os.makedirs(src)
    vocab = {t: i for i, t in enumerate(VOCAB)}
    mrc.write_vocab(src, vocab, MERGES)
    with open(os.path.join(src, "config.json"), "w") as f:
        json.dump(cfg_json, f)
    with open(os.path.join(src, "preprocessor_config.json"), "w") as f:
        json.dump(processor, f)
    if cfg_json["model_type"] == "sam":
        # SAM 1: make_random_checkpoint.py writes SAM 3 layouts only; the same values here
        import numpy as np
        rng = np.random.default_rng(seed)
        fourier = {}
        items = []
        for tname, shape, _, kind in convert.manifest(convert.fill_config_sam1(cfg_json)):
            if kind == "fourier":
                a = fourier.setdefault(tuple(shape), mrc.random_tensor(rng, shape, kind))
            else:
                a = mrc.random_tensor(rng, shape, kind)
            items.append((tname, "F32", shape, a))
        mrc.write_safetensors(os.path.join(src, "model.safetensors"), items)
    else:
        # make_checkpoint copies the vocab from vocab_dir (here: the same directory)
        mrc.make_checkpoint(src, cfg_json, seed=seed, vocab_dir=src, quiet=True)
    out = os.path.join(tmp, name + ".sam3")
    if convert.main([src, out, "--quiet"]) != 0:
        raise SystemExit(f"make_fuzz_seeds.py: converting {name} failed")
    with open(out, "rb") as f:
        return f.read()


def cut(blob, n):
    b = bytearray(blob[:n])
    struct.pack_into("<Q", b, 16, len(b))
    return bytes(b)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="sam3_fuzz_seeds_")
    try:
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            micro = build_model(tmp, "micro", micro_config(), 1)
            micro_min = build_model(tmp, "micro_min", micro_config(True), 2)
            sam1 = build_model(tmp, "sam1", sam1_config(), 3, SAM1_PROCESSOR)
        data_off = struct.unpack_from("<Q", micro, 64)[0]
        seeds = {"micro.sam3": micro, "micro_min.sam3": micro_min, "sam1.sam3": sam1,
                 "tables_only.sam3": cut(micro, data_off), "header_only.sam3": cut(micro, 128)}
        tok = os.path.join(tmp, "tok")
        os.makedirs(tok)
        mrc.write_vocab(tok, {t: i for i, t in enumerate(VOCAB)}, MERGES)
        t = convert.read_tokenizer(tok)
        p = os.path.join(tmp, "tokenizer.sam3")
        sam3file.write(p, {"arch": "tokenizer", "tokenizer.vocab_size": t["vocab_size"],
                           "tokenizer.n_merges": t["n_merges"], "tokenizer.bos_token_id": t["bos"],
                           "tokenizer.eos_token_id": t["eos"]},
                       [("tokenizer.vocab.bytes", t["bytes"]), ("tokenizer.vocab.offsets", t["offsets"]),
                        ("tokenizer.merges", t["merges"])])
        with open(p, "rb") as f:
            seeds["tokenizer.sam3"] = f.read()
        for name, blob in seeds.items():
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(blob)
        print(f"make_fuzz_seeds: {len(seeds)} seeds in {outdir} "
              f"({', '.join(f'{n} {len(b)} B' for n, b in seeds.items())})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
