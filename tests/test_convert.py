#!/usr/bin/python3
"""Tests for tools/convert.py and tools/make_random_checkpoint.py (json + numpy only).

    /usr/bin/python3 tests/test_convert.py

Builds tiny random checkpoints in a temporary directory and converts them, plus one
full-size fake checkpoint (the released 1797-tensor manifest as a sparse, all-zero bf16
file: 1.7 GB apparent, ~0 on disk) whose f32 output (3.4 GB) is written, checked and
deleted.  That test is skipped when the temporary directory has less than 8 GB free.
SAM 1 (HF SamModel, arch "sam1"): the ViT-B/L/H manifests against sam1.md's tensor and
parameter counts, tiny checkpoints (tied Fourier matrix under one name, both names, or only
the prompt-encoder name; f16/bf16; shards), the ViT-B manifest as a sparse file (375 MB of
output), and the failure cases (missing, unexpected, mis-shaped, config and processor errors).
The last line is "N passed, N failed"; the exit status is non-zero on any failure.
"""
import ast
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import convert  # noqa: E402
import make_random_checkpoint as mrc  # noqa: E402
import sam3file  # noqa: E402

CONVERT = os.path.join(ROOT, "tools", "convert.py")
TSV = os.path.join(ROOT, "..", "shared", "checkpoint", "facebook-sam3-tensors.tsv")
TMP = tempfile.mkdtemp(prefix="sam3_test_convert_")
TESTS = []


class Skip(Exception):
    pass


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------

def tmpdir(name):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run_convert(src, out, *args):
    p = subprocess.run([sys.executable, CONVERT, src, out, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


VOCAB, MERGES = mrc.synthetic_vocab()
TINY_JSON = mrc.tiny_config(len(VOCAB))


def tiny_items(cfg_json=TINY_JSON, dtype="F32", seed=0, values=None):
    """[name, dtype, shape, array] for every tensor of the config's manifest."""
    cfg = convert.fill_config(cfg_json)
    rng = np.random.default_rng(seed)
    items, fourier = [], None
    for name, shape, _, kind in convert.manifest(cfg):
        if values == "grid":  # k/8, |k| <= 64: exact in f32, f16 and bf16
            a = (rng.integers(-64, 65, size=shape) / 8).astype(np.float32)
        else:
            a = mrc.random_tensor(rng, shape, kind)
        if kind == "fourier":
            fourier = a if fourier is None else fourier
            a = fourier
        items.append([name, dtype, shape, a])
    return items


def write_src(d, items=None, cfg_json=TINY_JSON, vocab=True, merges=True, config=True):
    if config:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg_json, f)
        try:  # the preprocessor_config.json a checkpoint of this image size comes with
            mrc.write_processor(d, convert.fill_config(cfg_json))
        except convert.ConvertError:
            pass  # a config the test expects to fail
    mrc.write_vocab(d, VOCAB, MERGES)
    if not vocab:
        os.unlink(os.path.join(d, "vocab.json"))
    if not merges:
        os.unlink(os.path.join(d, "merges.txt"))
    if items is not None:
        mrc.write_safetensors(os.path.join(d, "model.safetensors"), items)
    return d


def write_raw_safetensors(path, header, payload):
    hb = json.dumps(header).encode() if isinstance(header, dict) else header
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + payload)


def expect_failure(src, *words, args=()):
    out = os.path.join(TMP, "fail_out.sam3")
    rc, so, se = run_convert(src, out, *args)
    check(rc != 0, f"expected failure, got rc 0; stdout tail: {so[-300:]}")
    check("convert.py: error:" in se, f"no 'convert.py: error:' in stderr: {se!r}")
    check("Traceback" not in se, f"traceback in stderr: {se}")
    for w in words:
        check(w in se, f"{w!r} not in stderr: {se!r}")
    check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "an output file was left behind")
    return se


def keep_names(cfg, video=False):
    """The converted file's tensors in order (video: the checkpoint has runnable memory modules)."""
    roles = ("keep", "video") if video else ("keep",)
    names = [convert.output_name(n) for n, _, r, _ in convert.manifest(cfg) if r in roles]
    return [n for n, _ in convert.storage_order([(n, None) for n in names])] + \
        ["tokenizer.vocab.bytes", "tokenizer.vocab.offsets", "tokenizer.merges"]


# ----------------------------------------------------------------------------------------
# (a) the manifest reproduces the released checkpoint
# ----------------------------------------------------------------------------------------

@test
def image_size_option():
    """--image-size N rewrites the three input-side keys and no tensor; bad sides and SAM 1 fail with one line."""
    d = tmpdir("image_size")
    src = os.path.join(ROOT, "tests", "data", "video_a")
    base, out = os.path.join(d, "base.sam3"), os.path.join(d, "s70.sam3")
    for path, args in ((base, ()), (out, ("--image-size", "70"))):
        rc, so, se = run_convert(src, path, "--quiet", *args)
        check(rc == 0, f"rc {rc}: {se}")
    a, b = sam3file.read(base), sam3file.read(out)
    keys = ("vision.image_size", "processor.image_size", "tracker.prompt_encoder.image_size")
    check(all(b.config[k] == 70 for k in keys) and all(a.config[k] == 112 for k in keys), "the input-side keys")
    check({k: v for k, v in a.config.items() if k not in keys} == {k: v for k, v in b.config.items() if k not in keys},
          "--image-size changed another config key")
    check(a.order == b.order and all(np.array_equal(a.get(n), b.get(n)) for n in a.order), "--image-size changed a tensor")
    for n in ("71", "14", "-28", "65548"):
        expect_failure(src, f"--image-size {n}: must be a multiple of the patch size 14", args=("--image-size", n))
    expect_failure(os.path.join(ROOT, "tests", "data", "sam1_a"), "SAM 1", args=("--image-size", "64"))


@test
def empty_tensor_checksum():
    """A 0-element tensor (reference dumps have them) is written and checksummed as no bytes."""
    d = tmpdir("empty")
    path = os.path.join(d, "e.sam3")
    sam3file.write(path, {"arch": "dump"}, [("empty", np.zeros((0, 4), np.float32)), ("x", np.arange(6, dtype=np.float32))])
    f = sam3file.read(path)
    check(f.get("empty").shape == (0, 4) and float(f.get("x")[5]) == 5.0, "tensors read back")
    check(sam3file.mx64(np.zeros((0, 4), np.float32)) == sam3file.mx64(b""), "empty array checksum != empty bytes'")
    check(sam3file.mx64(np.arange(6, dtype=np.float32)) == sam3file.mx64(np.arange(6, dtype=np.float32).tobytes()),
          "array and bytes checksums differ")


@test
def manifest_matches_released_tsv():
    if not os.path.isfile(TSV):
        raise Skip(f"{os.path.normpath(TSV)} is absent")
    rows = [ln.rstrip("\n").split("\t") for ln in open(TSV) if ln.strip()]
    tsv = [(r[0], tuple(ast.literal_eval(r[1]))) for r in rows]
    mine = [(n, s) for n, s, _, _ in convert.manifest(convert.default_config())]
    check(len(tsv) == 1797, f"tsv has {len(tsv)} rows")
    check(set(mine) == set(tsv), f"differ: only tsv {sorted(set(tsv) - set(mine))[:5]}, "
                                 f"only mine {sorted(set(mine) - set(tsv))[:5]}")
    check(mine == tsv, "same tensors, different order")
    check(all(r[2] == "torch.float32" for r in rows), "tsv dtypes")


@test
def default_config_values():
    cfg = convert.default_config()
    v, t = cfg["vit"], cfg["text"]
    check((v["hidden_size"], v["num_hidden_layers"], v["global_attn_indexes"], v["layer_norm_eps"]) ==
          (1024, 32, [7, 15, 23, 31], 1e-6), v)
    check((t["vocab_size"], t["hidden_size"], t["num_hidden_layers"], t["max_position_embeddings"],
           t["hidden_act"]) == (49408, 1024, 24, 32, "gelu"), t)
    m = convert.manifest(cfg)
    keep = sum(r == "keep" for _, _, r, _ in m)
    check(keep == 1623, f"{keep} kept tensors, expected 1623 (1459 detector + 146 tracker + 18 neck)")
    # a present text_config is filled from CLIPTextConfig's defaults, as transformers does
    c2 = convert.fill_config({"model_type": "sam3", "text_config": {"hidden_size": 1024}})
    check(c2["text"]["num_hidden_layers"] == 12 and c2["text"]["hidden_act"] == "quick_gelu", c2["text"])
    c3 = convert.fill_config({"model_type": "sam3", "vision_config": {"backbone_config": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}, "patch_size": [14, 14]}}})
    check(c3["vit"]["rope_theta"] == 500.0 and c3["vit"]["patch_size"] == 14, c3["vit"])
    c4 = convert.fill_config({"model_type": "sam3_video", "tracker_config": {"image_size": 560}})
    check(c4["tracker"]["prompt_encoder"]["image_size"] == 560, "tracker image_size not propagated")


@test
def config_keys_documented_and_fit():
    d = write_src(tmpdir("keys"), tiny_items())
    config, _, _, _ = convert.plan(d)
    for k in config:
        check(len(k) <= sam3file.KEY_MAX, f"key {k} too long")
        check(k in convert.__doc__, f"config key {k} is not in convert.py's docstring")
    # a checkpoint with memory modules (the committed tiny video model): the tracker.video.* keys
    config, out, _, _ = convert.plan(os.path.join(ROOT, "tests", "data", "video_a"))
    shorts = {a for a, _ in convert.VIDEO_KEYS} | {"present", "rope_theta"}
    vkeys = [k for k in config if k.startswith("tracker.video.")]
    check(config.get("tracker.video.present") == 1 and len(vkeys) == len(shorts), f"video keys {vkeys}")
    for k in vkeys:
        check(len(k) <= sam3file.KEY_MAX and k[len("tracker.video."):] in shorts, f"undocumented video key {k}")
    check(any(n.startswith("tracker_model.memory_attention.") for n, _ in out), "memory attention tensors not kept")


# ----------------------------------------------------------------------------------------
# (b) the full released manifest, cheaply
# ----------------------------------------------------------------------------------------

@test
def full_manifest_sparse_bf16():
    free = shutil.disk_usage(TMP).free
    if free < 8e9:
        raise Skip(f"needs ~3.5 GB of scratch disk, {TMP} has {free / 1e9:.1f} GB free")
    d = tmpdir("full")
    cfg = convert.default_config()
    # all zeros (holes), except a few tensors with known values
    marked = {"detector_model.detr_decoder.query_embed.weight": 1.5,
              "tracker_model.mask_decoder.iou_token.weight": -2.0,
              "tracker_neck.fpn_layers.2.proj2.bias": 0.25}
    items = [(n, "BF16", s, (np.full(s, marked[n], np.float32) if n in marked else None))
             for n, s, _, _ in convert.manifest(cfg)]
    t0 = time.time()
    write_src(d, cfg_json={"model_type": "sam3_video"})
    mrc.write_safetensors(os.path.join(d, "model.safetensors"), items)
    st = os.stat(os.path.join(d, "model.safetensors"))
    t1 = time.time()
    out = os.path.join(d, "out.sam3")
    rc, so, se = run_convert(d, out, "--quiet")
    t2 = time.time()
    check(rc == 0, f"rc {rc}: {se}")
    check("fewer than text_config.vocab_size" in se, "no warning for the small synthetic vocab")
    f = sam3file.read(out)
    names = keep_names(cfg, video=True)
    check(f.order == names, "output names/order differ from the manifest's kept tensors")
    check(len(f.order) == 1785, f"{len(f.order)} tensors, expected 1785 (1782 of the 1797 released, the tokenizer's 3)")
    check(f.config["tracker.video.present"] == 1 and f.config["tracker.video.num_maskmem"] == 7, "video config")
    # each ViT block's q, k, v weights back to back: one (3C, C) matrix for sam3.h
    qs = [n for n in f.order if n.startswith("vision_encoder.backbone.layers.") and n.endswith("q_proj.weight")]
    check(len(qs) == 32, f"{len(qs)} ViT q_proj weights")
    for q in qs:
        k, v = q.replace("q_proj", "k_proj"), q.replace("q_proj", "v_proj")
        _, _, oq, nq = f.tensors[q]
        _, _, ok_, nk = f.tensors[k]
        _, _, ov, _ = f.tensors[v]
        check(ok_ == oq + nq and ov == ok_ + nk, f"{q}: k and v weights do not follow it")
    shapes = {convert.output_name(n): s for n, s, r, _ in convert.manifest(cfg) if r in ("keep", "video")}
    for n in f.order[:-3]:
        dt, shape, _, _ = f.tensors[n]
        check(dt == sam3file.DT_F32 and shape == shapes[n], f"{n}: {dt} {shape}")
    check(float(f.get("detr_decoder.query_embed.weight")[3, 7]) == 1.5, "marked value lost")
    check(float(f.get("tracker_model.mask_decoder.iou_token.weight")[0, 5]) == -2.0, "marked value lost")
    check(float(f.get("vision_encoder.neck.fpn_layers.0.proj1.bias")[0]) == 0.0, "zero value")
    check(f.config["tracker.present"] == 1 and f.config["text.vocab_size"] == 49408, "config")
    out_bytes = os.path.getsize(out)
    out_disk = os.stat(out).st_blocks * 512
    del f
    print(f"    full manifest: source {st.st_size / 1e9:.2f} GB apparent / {st.st_blocks * 512 / 1e6:.1f} MB "
          f"on disk, written in {t1 - t0:.1f} s; convert {t2 - t1:.1f} s -> {out_bytes / 1e9:.2f} GB "
          f"({out_disk / 1e9:.2f} GB on disk)")
    shutil.rmtree(d)


# ----------------------------------------------------------------------------------------
# (c) failures: non-zero exit, a message naming the problem, no output file
# ----------------------------------------------------------------------------------------

@test
def fail_missing_tensor():
    items = [it for it in tiny_items() if it[0] != "detector_model.detr_decoder.query_embed.weight"]
    expect_failure(write_src(tmpdir("missing"), items), "missing tensor detector_model.detr_decoder.query_embed.weight")


@test
def fail_unexpected_tensor():
    items = tiny_items() + [["detector_model.foo.weight", "F32", (2,), np.zeros(2, np.float32)]]
    expect_failure(write_src(tmpdir("unexpected"), items), "unexpected tensor detector_model.foo.weight")


@test
def fail_wrong_shape():
    items = tiny_items()
    for it in items:
        if it[0] == "detector_model.text_projection.weight":
            it[2], it[3] = (16, 31), np.zeros((16, 31), np.float32)
    expect_failure(write_src(tmpdir("shape"), items),
                   "detector_model.text_projection.weight", "[16, 31]", "expected [16, 32]")


@test
def fail_dropped_tensor_wrong_shape():
    items = tiny_items()
    for it in items:
        if it[0] == "tracker_model.memory_temporal_positional_encoding":
            it[2], it[3] = (6, 1, 1, 64), np.zeros((6, 1, 1, 64), np.float32)
    expect_failure(write_src(tmpdir("shape2"), items), "memory_temporal_positional_encoding", "[6, 1, 1, 64]")


def _header_case(name, header, payload):
    d = write_src(tmpdir(name))
    write_raw_safetensors(os.path.join(d, "model.safetensors"), header, payload)
    return d


@test
def fail_header_length_past_eof():
    d = write_src(tmpdir("hdr_len"))
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    expect_failure(d, "header length 1099511627776 runs past the end")


@test
def fail_header_too_short():
    d = write_src(tmpdir("hdr_short"))
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(b"\x01\x02")
    expect_failure(d, "too short")


@test
def fail_bad_json():
    expect_failure(_header_case("hdr_json", b'{"a": [1, 2', b""), "bad JSON header")


@test
def fail_offsets_past_end():
    h = {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    expect_failure(_header_case("hdr_end", h, b"\0" * 12), "tensor x", "lie outside the 12 data bytes")


@test
def fail_overlapping_offsets():
    h = {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
         "y": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}
    expect_failure(_header_case("hdr_overlap", h, b"\0" * 24), "x and y overlap")


@test
def fail_lying_offsets():
    h = {"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}
    expect_failure(_header_case("hdr_lie", h, b"\0" * 16), "tensor x", "span 12 bytes", "needs 16")


@test
def fail_unknown_dtype():
    h = {"x": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}}
    expect_failure(_header_case("hdr_dtype", h, b"\0" * 16), "dtype 'Q4' is not supported")


@test
def fail_duplicate_header_key():
    hb = b'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    expect_failure(_header_case("hdr_dup", hb, b"\0" * 4), "duplicate key 'x'")


@test
def fail_missing_config():
    expect_failure(write_src(tmpdir("noconfig"), tiny_items(), config=False), "config.json is missing")


@test
def fail_missing_vocab():
    expect_failure(write_src(tmpdir("novocab"), tiny_items(), vocab=False), "vocab.json is missing")


@test
def fail_missing_merges():
    expect_failure(write_src(tmpdir("nomerges"), tiny_items(), merges=False), "merges.txt is missing")


@test
def fail_missing_weights():
    expect_failure(write_src(tmpdir("noweights")), "neither model.safetensors nor model.safetensors.index.json")


def write_sharded(d, items, n_shards=2):
    files = [f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors" for i in range(n_shards)]
    per = (len(items) + n_shards - 1) // n_shards
    wm = {}
    for i, fn in enumerate(files):
        part = items[i * per:(i + 1) * per]
        mrc.write_safetensors(os.path.join(d, fn), part)
        wm.update({it[0]: fn for it in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f)
    return files


@test
def fail_sharded_missing_shard():
    d = write_src(tmpdir("shard_missing"))
    files = write_sharded(d, tiny_items())
    os.unlink(os.path.join(d, files[1]))
    expect_failure(d, f"missing shard {files[1]}")


@test
def fail_merge_not_in_vocab():
    d = write_src(tmpdir("badmerge"), tiny_items())
    with open(os.path.join(d, "merges.txt"), "a", encoding="utf-8") as f:
        f.write("zz qq\n")
    expect_failure(d, "merges.txt line", "'zz' is not in vocab.json")


@test
def fail_fourier_copies_differ():
    items = tiny_items()
    for it in items:
        if it[0] == "tracker_model.prompt_encoder.shared_embedding.positional_embedding":
            it[3] = it[3] + 1
    expect_failure(write_src(tmpdir("fourier"), items), "shared_embedding.positional_embedding differs")


@test
def fail_vocab_larger_than_config():
    cj = json.loads(json.dumps(TINY_JSON))
    cj["detector_config"]["text_config"]["vocab_size"] = len(VOCAB) - 1
    expect_failure(write_src(tmpdir("bigvocab"), tiny_items(cj), cfg_json=cj),
                   f"vocab.json has {len(VOCAB)} tokens but text_config.vocab_size is {len(VOCAB) - 1}")


@test
def fail_bad_config_value():
    cj = json.loads(json.dumps(TINY_JSON))
    cj["detector_config"]["detr_decoder_config"]["num_queries"] = "five"
    expect_failure(write_src(tmpdir("badcfg"), tiny_items(), cfg_json=cj), "detr_decoder_config.num_queries", "wrong type")
    expect_failure(write_src(tmpdir("badmt"), tiny_items(), cfg_json={"model_type": "sam2"}), "model_type 'sam2'")


@test
def fail_unsupported_dtype_option():
    expect_failure(write_src(tmpdir("dtypeopt"), tiny_items()), "invalid choice: 'f16'", args=("--dtype", "f16"))


# ----------------------------------------------------------------------------------------
# (d) determinism, (e) input dtypes, (f) plain Sam3Model, (g) --verify, sharded input
# ----------------------------------------------------------------------------------------

@test
def deterministic_output():
    d = write_src(tmpdir("det"), tiny_items())
    a, b = os.path.join(d, "a.sam3"), os.path.join(d, "b.sam3")
    for p in (a, b):
        rc, _, se = run_convert(d, p, "--quiet")
        check(rc == 0, se)
    check(open(a, "rb").read() == open(b, "rb").read(), "two runs gave different bytes")


@test
def tiny_output_contents():
    d = write_src(tmpdir("contents"), tiny_items())
    out = os.path.join(d, "o.sam3")
    rc, so, se = run_convert(d, out)
    check(rc == 0, se)
    check("max_err 0" in so and "dropped tracker_model.memory_attention" in so, "per-tensor summary lines")
    f = sam3file.read(out)
    cfg = convert.fill_config(TINY_JSON)
    check(f.order == keep_names(cfg), "names/order")
    src = {it[0]: it[3] for it in tiny_items()}
    for n in f.order[:-3]:
        full = n if n.startswith("tracker_") else "detector_model." + n
        check(np.array_equal(f.get(n), src[full]), f"{n} values")
    c = f.config
    check(c["arch"] == "sam3" and c["file.converter"] == "sam3.h tools/convert.py v1", "arch/converter")
    check("SAM License" in c["file.license"], "licence note")
    check(c["vision.global_attn_indexes"] == [1] and c["neck.scale_factors"] == [4.0, 2.0, 1.0, 0.5], "arrays")
    check(c["tracker.mask_decoder.dynamic_multimask"] == 1 and c["tracker.mask_decoder.stability_thresh"] == 0.98,
          "tracker keys")
    check(c["processor.image_size"] == 56 and c["processor.rescale_factor"] == 1 / 255, "processor: size from preprocessor_config.json, rescale default")
    # tokenizer tensors
    by = f.get("tokenizer.vocab.bytes").tobytes()
    off = f.get("tokenizer.vocab.offsets")
    inv = {i: t for t, i in VOCAB.items()}
    check(len(off) == len(VOCAB) + 1, "offsets length")
    for i in (0, 300, len(VOCAB) - 1):
        check(by[off[i]:off[i + 1]].decode("utf-8") == inv[i], f"token {i}")
    mg = f.get("tokenizer.merges")
    check(mg.shape == (len(MERGES), 3), "merges shape")
    a, b = MERGES[0]
    check(list(mg[0]) == [VOCAB[a], VOCAB[b], VOCAB[a + b]], "merge 0")
    check(c["tokenizer.bos_token_id"] == VOCAB["<|startoftext|>"] and
          c["tokenizer.pad_token_id"] == c["tokenizer.eos_token_id"] == VOCAB["<|endoftext|>"], "special ids")


@test
def real_clip_vocab_if_present():
    clip = os.path.join(ROOT, "..", "shared", "clip")
    if not os.path.isfile(os.path.join(clip, "vocab.json")):
        raise Skip(f"{os.path.normpath(clip)} is absent")
    tok = convert.read_tokenizer(clip)
    check((tok["vocab_size"], tok["n_merges"], tok["bos"], tok["eos"]) == (49408, 48894, 49406, 49407), tok["n_merges"])


@test
def preprocessor_config():
    d = write_src(tmpdir("pp"), tiny_items())
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump({"size": {"height": 56, "width": 56}, "image_mean": [0.4, 0.5, 0.6],
                   "image_std": [0.2, 0.3, 0.4], "rescale_factor": 0.5}, f)
    out = os.path.join(d, "o.sam3")
    rc, _, se = run_convert(d, out, "--quiet")
    check(rc == 0, se)
    c = sam3file.read(out).config
    check((c["processor.image_size"], c["processor.image_mean"], c["processor.image_std"],
           c["processor.rescale_factor"]) == (56, [0.4, 0.5, 0.6], [0.2, 0.3, 0.4], 0.5), "processor keys")
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump({"size": {"height": 56, "width": 64}}, f)
    os.unlink(out)
    expect_failure(d, "preprocessor_config.json", "square")


@test
def f16_bf16_f32_inputs_agree():
    outs = []
    for dt in ("F32", "F16", "BF16"):
        d = write_src(tmpdir("dt_" + dt), tiny_items(dtype=dt, values="grid"))
        out = os.path.join(d, "o.sam3")
        rc, so, se = run_convert(d, out)
        check(rc == 0, se)
        if dt != "F32":
            check(f"{dt.lower()} -> f32  max_err 0 (exact)" in so, "summary line for " + dt)
        outs.append(sam3file.read(out))
    ref = {it[0]: it[3] for it in tiny_items(values="grid")}
    for n in outs[0].order:
        a = outs[0].get(n)
        for o in outs[1:]:
            check(np.array_equal(a, o.get(n)), f"{n} differs between input dtypes")
        if not n.startswith("tokenizer."):
            full = n if n.startswith("tracker_") else "detector_model." + n
            check(np.array_equal(a, ref[full]), f"{n} differs from the source values")


@test
def bf16_rounding_of_generator():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 3.0e-3], np.float32)
    u = mrc.to_st_dtype(x, "BF16")
    back = (u.astype(np.uint32) << 16).view(np.float32)
    check(list(back[:2]) == [1.0, 1.0] and back[2] == 1 + 4 * 2 ** -8 and back[3] == -2.5, back)
    check(abs(back[4] - 3e-3) < 3e-3 * 2 ** -8, back)


@test
def plain_sam3model_state_dict():
    det_json = json.loads(json.dumps(TINY_JSON["detector_config"]))  # model_type "sam3"
    cfg = convert.fill_config(det_json)
    check(cfg["prefix"] == "" and cfg["tracker"] is None, "sam3 config")
    items = tiny_items(det_json)
    check(not any(it[0].startswith(("detector_model.", "tracker")) for it in items), "unprefixed names")
    d = write_src(tmpdir("plain"), items, cfg_json=det_json)
    out = os.path.join(d, "o.sam3")
    rc, _, se = run_convert(d, out, "--quiet", "--verify")
    check(rc == 0, se)
    f = sam3file.read(out)
    check(f.config["tracker.present"] == 0, "tracker.present")
    check(not any(k.startswith("tracker.") and k != "tracker.present" for k in f.config), "tracker keys written")
    check(not any(n.startswith("tracker") for n in f.order), "tracker tensors written")
    check(f.order == keep_names(cfg), "names")
    # the same unprefixed state dict under the sam3_video config: detector only, with a note
    d2 = write_src(tmpdir("plain2"), items)
    rc, _, se = run_convert(d2, os.path.join(d2, "o.sam3"), "--quiet")
    check(rc == 0 and "no detector_model. prefix" in se, se)
    check(sam3file.read(os.path.join(d2, "o.sam3")).config["tracker.present"] == 0, "tracker.present")
    # a tracker tensor in a plain Sam3Model file is unexpected
    bad = items + [["tracker_model.no_memory_embedding", "F32", (1, 1, 16), np.zeros((1, 1, 16), np.float32)]]
    expect_failure(write_src(tmpdir("plain3"), bad, cfg_json=det_json),
                   "unexpected tensor tracker_model.no_memory_embedding")


@test
def verify_passes():
    d = write_src(tmpdir("verify"), tiny_items(dtype="BF16"))
    rc, so, se = run_convert(d, os.path.join(d, "o.sam3"), "--verify", "--quiet")
    check(rc == 0 and "verify: OK" in so, so + se)


@test
def bf16_output():
    """--dtype bf16: Linear/Conv weights bf16 (torch's rounding of the f32 conversion's values), the
    rest f32 and bit-identical to the f32 conversion; --verify passes; deterministic."""
    d = write_src(tmpdir("bf16out"), tiny_items())
    a, b, b2 = (os.path.join(d, n) for n in ("a.sam3", "b.sam3", "b2.sam3"))
    rc, so, se = run_convert(d, a, "--quiet")
    check(rc == 0, se)
    for out in (b, b2):
        rc, so, se = run_convert(d, out, "--quiet", "--dtype", "bf16", "--verify")
        check(rc == 0 and "verify: OK" in so and "of them bf16" in so, so + se)
    with open(b, "rb") as f1, open(b2, "rb") as f2:
        check(f1.read() == f2.read(), "bf16 output not deterministic")
    fa, fb = sam3file.read(a), sam3file.read(b)
    check(fa.order == fb.order, "tensor order differs")
    n_bf16 = 0
    for name in fa.order:
        dt = fb.tensors[name][0]
        raw_a = fa.get(name)
        if dt == sam3file.DT_BF16:
            n_bf16 += 1
            check(name.endswith(".weight") and "norm" not in name and "position" not in name, f"{name} should stay f32")
            want = sam3file.to_bf16(raw_a).view("<u2")
            off, nbytes = fb.tensors[name][2], fb.tensors[name][3]
            got = np.frombuffer(fb.buf, "<u2", nbytes // 2, off).reshape(want.shape)
            check(np.array_equal(got, want), f"{name}: not round-to-nearest-even of the f32 values")
        else:
            check(np.array_equal(fb.get(name).view(np.uint8), raw_a.view(np.uint8)), f"{name}: f32 tensor differs")
    check(n_bf16 > 50, f"only {n_bf16} bf16 tensors")
    for name in ("vision_encoder.backbone.layers.0.mlp.fc1.weight", "vision_encoder.backbone.layers.0.attention.q_proj.weight"):
        check(fb.tensors[name][0] == sam3file.DT_BF16, f"{name} is not bf16")
    for name in ("vision_encoder.backbone.layers.0.layer_norm1.weight", "vision_encoder.backbone.layers.0.mlp.fc1.bias",
                 "vision_encoder.backbone.embeddings.position_embeddings"):
        check(fb.tensors[name][0] == sam3file.DT_F32, f"{name} is not f32")


@test
def sharded_input():
    d = write_src(tmpdir("sharded"))
    write_sharded(d, tiny_items(), 3)
    out = os.path.join(d, "o.sam3")
    rc, so, se = run_convert(d, out, "--verify", "--quiet")
    check(rc == 0 and "verify: OK" in so, se)
    d1 = write_src(tmpdir("single"), tiny_items())
    rc, _, se = run_convert(d1, os.path.join(d1, "o.sam3"), "--quiet")
    check(rc == 0, se)
    a, b = sam3file.read(out), sam3file.read(os.path.join(d1, "o.sam3"))
    check(a.order == b.order and all(np.array_equal(a.get(n), b.get(n)) for n in a.order),
          "sharded and single-file inputs give different tensors")


@test
def random_checkpoint_tool():
    d = tmpdir("mrc")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_random_checkpoint.py"), d,
                        "--config", "tiny", "--seed", "3", "--dtype", "bf16"], capture_output=True, text=True)
    check(p.returncode == 0, p.stderr)
    for fn in ("model.safetensors", "config.json", "vocab.json", "merges.txt"):
        check(os.path.isfile(os.path.join(d, fn)), fn)
    st = convert.read_safetensors(os.path.join(d, "model.safetensors"))
    cfg = convert.fill_config(json.load(open(os.path.join(d, "config.json"))))
    check([(n, s) for n, s, _, _ in convert.manifest(cfg)] == [(n, t.shape) for n, t in st.items()], "manifest")
    check(all(t.dtype == "BF16" for t in st.values()), "dtype")
    w = st["detector_model.vision_encoder.backbone.layers.0.mlp.fc1.weight"].f32()
    check(0.7 < w.std() * np.sqrt(w.shape[1]) < 1.3, f"fan-in scaling: std {w.std()}")
    ln = st["detector_model.vision_encoder.backbone.layer_norm.weight"].f32()
    check(abs(ln.mean() - 1) < 0.05, "layer norm weight ~ 1")
    out = os.path.join(d, "o.sam3")
    rc, so, se = run_convert(d, out, "--verify", "--quiet")
    check(rc == 0 and "verify: OK" in so, se)


# ----------------------------------------------------------------------------------------
# (h) SAM 1 (HF SamModel, config.json model_type "sam")
# ----------------------------------------------------------------------------------------

SAM1_TINY_JSON = {  # every width small; windowed blocks need padding (grid 6, window 4)
    "model_type": "sam",
    "vision_config": {"model_type": "sam_vision_model", "hidden_size": 24, "output_channels": 16,
                      "num_hidden_layers": 3, "num_attention_heads": 2, "image_size": 96,
                      "patch_size": 16, "window_size": 4, "global_attn_indexes": [1],
                      "num_pos_feats": 8, "mlp_dim": None, "mlp_ratio": 2.0},
    "prompt_encoder_config": {"hidden_size": 16, "image_size": 96, "patch_size": 16,
                              "mask_input_channels": 8},
    "mask_decoder_config": {"hidden_size": 16, "mlp_dim": 24, "num_attention_heads": 2,
                            "iou_head_hidden_dim": 12},
}
SAM1_TINY_PP = {"do_convert_rgb": True, "do_normalize": True, "do_pad": True, "do_rescale": True,
                "do_resize": True, "image_mean": [0.485, 0.456, 0.406],
                "image_processor_type": "SamImageProcessor", "image_std": [0.229, 0.224, 0.225],
                "pad_size": {"height": 96, "width": 96}, "processor_class": "SamProcessor",
                "resample": 2, "rescale_factor": 0.00392156862745098, "size": {"longest_edge": 96}}
SAM1_VIT = {"B": ({}, 315, 93_735_728), "L": ({"hidden_size": 1024, "num_hidden_layers": 24,
                                              "num_attention_heads": 16, "global_attn_indexes": [5, 11, 17, 23]},
                                             483, 312_343_088),
            "H": ({"hidden_size": 1280, "num_hidden_layers": 32, "num_attention_heads": 16,
                   "global_attn_indexes": [7, 15, 23, 31]}, 595, 641_090_864)}


def sam1_src(name, items, cfg_json=SAM1_TINY_JSON, pp=SAM1_TINY_PP):
    d = tmpdir(name)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg_json, f)
    if pp is not None:
        with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
            json.dump(pp, f)
    if items is not None:
        mrc.write_safetensors(os.path.join(d, "model.safetensors"), items)
    return d


def sam1_items(cfg_json=SAM1_TINY_JSON, **kw):
    """tiny_items for SAM 1, without the prompt-encoder copy of the Fourier matrix (as HF 5.17's
    save_pretrained writes it)."""
    return [it for it in tiny_items(cfg_json, **kw) if it[0] != convert.SAM1_FOURIER_COPY]


def nparams(shape):
    return int(np.prod(shape, dtype=np.int64))


@test
def sam1_manifest_vit_b_l_h():
    """Tensor and parameter counts of sam1.md section 10/11 (checked there against HF 5.17)."""
    for vit, (vc, n_names, n_params) in SAM1_VIT.items():
        cfg = convert.fill_config({"model_type": "sam", "vision_config": vc})
        m = convert.manifest(cfg)
        keep = [(n, s) for n, s, r, _ in m if r == "keep"]
        got = sum(nparams(s) for _, s in keep)
        check((len(m), len(keep), got) == (n_names, n_names - 1, n_params),
              f"ViT-{vit}: {len(m)} names, {len(keep)} kept, {got:,} params; expected "
              f"{n_names}, {n_names - 1}, {n_params:,}")
        check(len(set(n for n, _, _, _ in m)) == len(m), f"ViT-{vit}: duplicate names")
    m = convert.manifest(convert.default_config("sam"))
    sh = {n: s for n, s, _, _ in m}
    by = lambda p: sum(nparams(s) for n, s, r, _ in m if r == "keep" and n.startswith(p))  # noqa: E731
    check((by("vision_encoder."), by("prompt_encoder."), by("mask_decoder."), by("shared_image")) ==
          (89_670_912, 6_220, 4_058_340, 256), "per-stage params differ from sam1.md section 11")
    check(by("vision_encoder.layers.0.") == 7_091_328 and by("vision_encoder.layers.2.") == 7_104_128, "block params")
    check(by("vision_encoder.patch_embed.") == 590_592 and by("vision_encoder.neck.") == 787_456, "patch/neck")
    check(by("mask_decoder.transformer.") == 3_291_264 and by("mask_decoder.iou_prediction_head.") == 132_612,
          "decoder breakdown")
    check(sh["vision_encoder.layers.1.attn.rel_pos_h"] == (27, 64) and
          sh["vision_encoder.layers.11.attn.rel_pos_w"] == (127, 64), "rel_pos shapes")
    check(sh["mask_decoder.upscale_conv1.weight"] == (256, 64, 2, 2) and
          sh["mask_decoder.transformer.layers.1.cross_attn_image_to_token.out_proj.weight"] == (256, 128),
          "decoder shapes")
    check(m[0][0] == convert.SAM1_FOURIER and m[1][0] == "vision_encoder.pos_embed", "state-dict order")
    # configuration switches change the manifest as HF's modules do
    c = convert.fill_config({"model_type": "sam", "vision_config": {
        "qkv_bias": False, "use_abs_pos": False, "use_rel_pos": False, "mlp_dim": 1000}})
    names = {n for n, _, _, _ in convert.manifest(c)}
    check("vision_encoder.pos_embed" not in names and "vision_encoder.layers.0.attn.qkv.bias" not in names and
          not any("rel_pos" in n for n in names), "switches")
    check(dict((n, s) for n, s, _, _ in convert.manifest(c))["vision_encoder.layers.3.mlp.lin1.weight"] ==
          (1000, 768), "explicit mlp_dim")
    c = convert.fill_config({"model_type": "sam", "vision_config": {"window_size": 0}})
    check(all(s == (127, 64) for n, s, _, _ in convert.manifest(c) if "rel_pos" in n), "window_size 0: all global")


@test
def sam1_tiny_converts():
    items = sam1_items()
    d = sam1_src("sam1_tiny", items)
    out = os.path.join(d, "o.sam3")
    rc, so, se = run_convert(d, out, "--verify")
    check(rc == 0 and "verify: OK" in so, so + se)
    f = sam3file.read(out)
    cfg = convert.fill_config(SAM1_TINY_JSON)
    want = [n for n, _, r, _ in convert.manifest(cfg) if r == "keep"]
    check(f.order == want, "names/order differ from the manifest's kept tensors")
    check(f.order[0] == "shared_image_embedding.positional_embedding", "Fourier matrix name")
    src = {it[0]: it[3] for it in items}
    for n in f.order:
        check(np.array_equal(f.get(n), src[n]), f"{n} values")
    c = f.config
    check(c["arch"] == "sam1" and "Apache" in c["file.license"], "arch/licence")
    check((c["sam1.vision.hidden_size"], c["sam1.vision.mlp_dim"], c["sam1.vision.window_size"],
           c["sam1.vision.global_attn_indexes"], c["sam1.vision.qkv_bias"], c["sam1.vision.num_pos_feats"],
           c["sam1.vision.layer_norm_eps"], c["sam1.vision.hidden_act"]) ==
          (24, 48, 4, [1], 1, 8, 1e-6, "gelu"), "vision keys")
    check((c["sam1.prompt_encoder.image_size"], c["sam1.prompt_encoder.mask_input_channels"],
           c["sam1.prompt_encoder.num_point_embeddings"], c["sam1.mask_decoder.mlp_dim"],
           c["sam1.mask_decoder.iou_head_depth"], c["sam1.mask_decoder.iou_head_hidden_dim"],
           c["sam1.mask_decoder.layer_norm_eps"], c["sam1.mask_decoder.hidden_act"]) ==
          (96, 8, 4, 24, 3, 12, 1e-6, "relu"), "prompt/decoder keys")
    check((c["processor.longest_edge"], c["processor.pad_size"], c["processor.image_mean"],
           c["processor.rescale_factor"]) == (96, 96, [0.485, 0.456, 0.406], 1 / 255), "processor keys")
    check(not any(k.startswith(("tokenizer.", "tracker.", "vision.", "text.")) for k in c), "SAM 3 keys in a SAM 1 file")
    for k in c:
        check(len(k) <= sam3file.KEY_MAX, f"key {k} too long")
        check(k in convert.__doc__, f"config key {k} is not in convert.py's docstring")
    # a checkpoint with memory modules (the committed tiny video model): the tracker.video.* keys
    config, out, _, _ = convert.plan(os.path.join(ROOT, "tests", "data", "video_a"))
    shorts = {a for a, _ in convert.VIDEO_KEYS} | {"present", "rope_theta"}
    vkeys = [k for k in config if k.startswith("tracker.video.")]
    check(config.get("tracker.video.present") == 1 and len(vkeys) == len(shorts), f"video keys {vkeys}")
    for k in vkeys:
        check(len(k) <= sam3file.KEY_MAX and k[len("tracker.video."):] in shorts, f"undocumented video key {k}")
    check(any(n.startswith("tracker_model.memory_attention.") for n, _ in out), "memory attention tensors not kept")
    # the tied copy: both names with equal bits -> one written; only the copy -> written under the main name
    fourier = src[convert.SAM1_FOURIER]
    both = items[:1] + [[convert.SAM1_FOURIER_COPY, "F32", fourier.shape, fourier]] + items[1:]
    d2 = sam1_src("sam1_both", both)
    rc, so, se = run_convert(d2, os.path.join(d2, "o.sam3"), "--verify")
    check(rc == 0 and f"dropped {convert.SAM1_FOURIER_COPY}" in so, so + se)
    check(sam3file.read(os.path.join(d2, "o.sam3")).order == want, "both names: output names")
    only = [[convert.SAM1_FOURIER_COPY, "F32", fourier.shape, fourier]] + items[1:]
    d3 = sam1_src("sam1_copy", only)
    rc, so, se = run_convert(d3, os.path.join(d3, "o.sam3"), "--verify", "--quiet")
    check(rc == 0 and "tied copy" in se, so + se)
    f3 = sam3file.read(os.path.join(d3, "o.sam3"))
    check(f3.order == want and np.array_equal(f3.get(convert.SAM1_FOURIER), fourier), "copy-only file")
    # no preprocessor_config.json: SamImageProcessor's defaults (1024), which this 96-pixel model cannot use
    expect_failure(sam1_src("sam1_nopp", items, pp=None), "pad_size 1024 differs from vision_config.image_size 96")


@test
def sam1_input_dtypes_and_shards():
    ref = {it[0]: it[3] for it in sam1_items(values="grid")}
    for dt in ("F16", "BF16"):
        d = sam1_src("sam1_" + dt, sam1_items(dtype=dt, values="grid"))
        out = os.path.join(d, "o.sam3")
        rc, so, se = run_convert(d, out, "--quiet")
        check(rc == 0, se)
        f = sam3file.read(out)
        for n in f.order:
            check(np.array_equal(f.get(n), ref[n]), f"{dt}: {n}")
    d = sam1_src("sam1_sharded", None)
    write_sharded(d, sam1_items(), 3)
    rc, so, se = run_convert(d, os.path.join(d, "o.sam3"), "--verify", "--quiet")
    check(rc == 0 and "verify: OK" in so, se)


@test
def sam1_vit_b_full_size_sparse():
    """The ViT-B manifest as a sparse all-zero bf16 file (188 MB apparent) -> 375 MB of f32."""
    free = shutil.disk_usage(TMP).free
    if free < 2e9:
        raise Skip(f"needs ~0.6 GB of scratch disk, {TMP} has {free / 1e9:.1f} GB free")
    cfg = convert.default_config("sam")
    marked = {"mask_decoder.iou_token.weight": -2.0, "vision_encoder.layers.11.attn.rel_pos_h": 0.5}
    items = [(n, "BF16", s, (np.full(s, marked[n], np.float32) if n in marked else None))
             for n, s, _, _ in convert.manifest(cfg) if n != convert.SAM1_FOURIER_COPY]
    d = sam1_src("sam1_full", None, cfg_json={"model_type": "sam"}, pp=None)
    mrc.write_safetensors(os.path.join(d, "model.safetensors"), items)
    out = os.path.join(d, "o.sam3")
    rc, so, se = run_convert(d, out, "--quiet")
    check(rc == 0, se)
    check("314 tensors (93,735,728 f32 params)" in so, so)
    f = sam3file.read(out)
    check(f.order == [n for n, _, _, _ in items], "names")
    check(float(f.get("mask_decoder.iou_token.weight")[0, 9]) == -2.0 and
          float(f.get("vision_encoder.layers.11.attn.rel_pos_h")[126, 63]) == 0.5, "marked values")
    c = f.config
    check((c["sam1.vision.hidden_size"], c["sam1.vision.mlp_dim"], c["sam1.vision.global_attn_indexes"],
           c["processor.longest_edge"], c["processor.pad_size"], c["processor.image_std"]) ==
          (768, 3072, [2, 5, 8, 11], 1024, 1024, [0.229, 0.224, 0.225]), "default config keys")
    del f
    shutil.rmtree(d)


@test
def sam1_fail_missing_unexpected_shape():
    items = sam1_items()
    n = "mask_decoder.transformer.layers.1.cross_attn_image_to_token.out_proj.bias"
    expect_failure(sam1_src("sam1_missing", [it for it in items if it[0] != n]), "missing tensor " + n)
    expect_failure(sam1_src("sam1_missing_pe", items[1:]),
                   "missing tensor shared_image_embedding.positional_embedding")
    bad = items + [["vision_encoder.layer_norm.weight", "F32", (24,), np.zeros(24, np.float32)]]
    expect_failure(sam1_src("sam1_unexpected", bad), "unexpected tensor vision_encoder.layer_norm.weight")
    # a SAM 3 tensor name in a SAM 1 file
    bad = items + [["tracker_model.prompt_encoder.point_embed.weight", "F32", (4, 16), np.zeros((4, 16), np.float32)]]
    expect_failure(sam1_src("sam1_unexpected2", bad), "unexpected tensor tracker_model.prompt_encoder.point_embed.weight")
    for name, shape, want in (("vision_encoder.layers.0.attn.rel_pos_h", (11, 12), "[7, 12]"),  # global-size table in a windowed block
                              ("vision_encoder.layers.1.attn.rel_pos_w", (7, 12), "[11, 12]"),
                              ("mask_decoder.upscale_conv1.weight", (4, 16, 2, 2), "[16, 4, 2, 2]"),
                              ("vision_encoder.pos_embed", (1, 7, 7, 24), "[1, 6, 6, 24]")):
        its = sam1_items()
        for it in its:
            if it[0] == name:
                it[2], it[3] = shape, np.zeros(shape, np.float32)
        expect_failure(sam1_src("sam1_shape", its), name, f"shape {list(shape)}", "expected " + want)
    # the tied copy present with different bits
    its = sam1_items()
    its.append([convert.SAM1_FOURIER_COPY, "F32", its[0][2], its[0][3] + 1])
    expect_failure(sam1_src("sam1_fourier", its), "prompt_encoder.shared_embedding.positional_embedding differs")


@test
def sam1_fail_config_and_processor():
    items = sam1_items()

    def cj(**sub):
        c = json.loads(json.dumps(SAM1_TINY_JSON))
        for path, v in sub.items():
            sec, key = path.split("__")
            c[sec][key] = v
        return c
    expect_failure(sam1_src("sam1_c1", items, cfg_json=cj(vision_config__output_channels=32)),
                   "widths must be equal", "vision_config.output_channels = 32")
    expect_failure(sam1_src("sam1_c2", items, cfg_json=cj(prompt_encoder_config__patch_size=8)),
                   "differs from the ViT token grid 6")
    expect_failure(sam1_src("sam1_c3", items, cfg_json=cj(vision_config__qkv_bias="yes")),
                   "vision_config.qkv_bias", "wrong type")
    expect_failure(sam1_src("sam1_c4", items, cfg_json=cj(vision_config__mlp_dim=4.5)),
                   "vision_config.mlp_dim = 4.5")
    expect_failure(sam1_src("sam1_c5", items, cfg_json=cj(vision_config__global_attn_indexes=[3])),
                   "global_attn_indexes has 3")
    expect_failure(sam1_src("sam1_c6", items, cfg_json=cj(mask_decoder_config__num_attention_heads=3)),
                   "mask_decoder_config.hidden_size = 16 must be a multiple")
    for pp_change, words in (({"do_pad": False}, ("do_pad = false",)),
                             ({"resample": 3}, ("resample = 3",)),
                             ({"size": {"height": 96, "width": 96}}, ("need {\"longest_edge\": N}",)),
                             ({"pad_size": {"height": 96, "width": 64}}, ("pad_size", "square")),
                             ({"pad_size": {"height": 128, "width": 128}}, ("pad_size 128 differs",)),
                             ({"size": {"longest_edge": 100}}, ("longest_edge 100 is larger",)),
                             ({"image_std": [0.2, 0.3]}, ("image_std",))):
        expect_failure(sam1_src("sam1_pp", items, pp=dict(SAM1_TINY_PP, **pp_change)), *words)
    # scalar mean (HF accepts one number for all channels) and another rescale factor are copied
    d = sam1_src("sam1_pp_ok", items, pp=dict(SAM1_TINY_PP, image_mean=0.5, rescale_factor=0.5))
    rc, _, se = run_convert(d, os.path.join(d, "o.sam3"), "--quiet")
    check(rc == 0, se)
    c = sam3file.read(os.path.join(d, "o.sam3")).config
    check(c["processor.image_mean"] == [0.5, 0.5, 0.5] and c["processor.rescale_factor"] == 0.5, "processor values")


# ----------------------------------------------------------------------------------------

def main():
    passed = failed = skipped = 0
    t_all = time.time()
    try:
        for fn in TESTS:
            t0 = time.time()
            try:
                fn()
            except Skip as e:
                skipped += 1
                print(f"SKIP {fn.__name__}: {e}")
                continue
            except Exception as e:  # noqa: BLE001
                failed += 1
                print(f"FAIL {fn.__name__}: {e}")
                if not isinstance(e, AssertionError):
                    traceback.print_exc()
                continue
            passed += 1
            print(f"PASS {fn.__name__} ({time.time() - t0:.1f} s)")
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"({skipped} skipped, {time.time() - t_all:.1f} s in all)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
