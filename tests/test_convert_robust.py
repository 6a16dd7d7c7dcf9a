#!/usr/bin/python3
"""Hostile inputs for tools/convert.py, beyond tests/test_convert.py: malformed safetensors headers
(wrong JSON types, absurd shapes and offsets, non-UTF-8), dtypes the model cannot use, broken
config.json / vocab.json / merges.txt / shard index, and outputs that cannot be written. Every
case must end with exit status 1, one "convert.py: error: ..." message naming the problem, no
Python traceback, and no output file (nor OUT.tmp) left behind.

    /usr/bin/python3 tests/test_convert_robust.py

The last line is "N passed, N failed"; the exit status is non-zero on any failure."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import convert  # noqa: E402
import make_random_checkpoint as mrc  # noqa: E402

CONVERT = os.path.join(ROOT, "tools", "convert.py")
TMP = tempfile.mkdtemp(prefix="sam3_test_convert_robust_")
VOCAB, MERGES = mrc.synthetic_vocab()
TINY = mrc.tiny_config(len(VOCAB))
passed = failed = 0


def src_dir(name, safetensors=None, config=TINY, vocab=True):
    """A source directory: config.json, vocab.json/merges.txt, and model.safetensors as given
    (bytes, or a (header, payload) pair)."""
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if config is not None:
        with open(os.path.join(d, "config.json"), "w" if isinstance(config, dict) else "wb") as f:
            if isinstance(config, dict):
                json.dump(config, f)
            else:
                f.write(config)
    if vocab:
        mrc.write_vocab(d, VOCAB, MERGES)
    if safetensors is not None:
        if isinstance(safetensors, tuple):
            header, payload = safetensors
            hb = header if isinstance(header, bytes) else json.dumps(header).encode()
            safetensors = struct.pack("<Q", len(hb)) + hb + payload
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(safetensors)
    return d


def expect_failure(name, src, words, out=None, args=()):
    global passed, failed
    out = out or os.path.join(TMP, "out.sam3")
    p = subprocess.run([sys.executable, CONVERT, src, out, "--quiet", *args], capture_output=True, text=True)
    problems = []
    if p.returncode != 1:
        problems.append(f"exit status {p.returncode}, expected 1")
    if "Traceback" in p.stderr:
        problems.append("a Python traceback")
    elif "convert.py: error:" not in p.stderr:
        problems.append("no 'convert.py: error:' line")
    for w in words:
        if w not in p.stderr:
            problems.append(f"{w!r} not in the message")
    if os.path.exists(out) and not os.path.isdir(out):
        problems.append("an output file was left")
    if os.path.exists(out + ".tmp"):
        problems.append("OUT.tmp was left")
    if problems:
        failed += 1
        print(f"FAIL {name}: {'; '.join(problems)}\n     stderr: {p.stderr.strip()[-600:]}")
    else:
        passed += 1
        print(f"PASS {name}: {p.stderr.strip().splitlines()[-1][:150]}")
    if os.path.isfile(out):
        os.unlink(out)


def one(dtype="F32", shape=(4,), offs=(0, 16), name="x"):
    return {name: {"dtype": dtype, "shape": list(shape), "data_offsets": list(offs)}}


def main():
    z16 = b"\0" * 16
    # --- safetensors header: JSON of the wrong shape ---
    expect_failure("header is a JSON array", src_dir("h_array", (b"[1, 2, 3]", z16)), ["not an object"])
    expect_failure("header is a JSON number", src_dir("h_num", (b"12345678", z16)), ["not an object"])
    expect_failure("header is JSON null", src_dir("h_null", (b"null", z16)), ["not an object"])
    expect_failure("empty header", src_dir("h_empty", (b"", z16)), ["bad JSON header"])
    expect_failure("header not UTF-8", src_dir("h_utf8", (b'{"\xff\xfe": 1}', z16)), ["bad JSON header"])
    expect_failure("header with NUL padding inside", src_dir("h_nul", (b'{"a"\0: 1}', z16)), ["bad JSON header"])
    expect_failure("empty model.safetensors", src_dir("st_empty", b""), ["too short"])
    expect_failure("header length 2^64-1", src_dir("h_len", struct.pack("<Q", 2**64 - 1) + b"{}"), ["runs past the end"])
    expect_failure("entry is a string", src_dir("e_str", ({"x": "F32"}, z16)), ["tensor x", "dtype, shape and data_offsets"])
    expect_failure("entry misses data_offsets", src_dir("e_keys", ({"x": {"dtype": "F32", "shape": [4]}}, z16)),
                   ["dtype, shape and data_offsets"])
    # --- shapes ---
    expect_failure("negative dimension", src_dir("s_neg", (one(shape=(-4,)), z16)), ["tensor x", "bad shape"])
    expect_failure("float dimension", src_dir("s_float", (one(shape=(4.0,)), z16)), ["tensor x", "bad shape"])
    expect_failure("bool dimension", src_dir("s_bool", (one(shape=(True,)), z16)), ["tensor x", "bad shape"])
    expect_failure("shape not a list", src_dir("s_str", ({"x": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}}, z16)),
                   ["tensor x", "bad shape"])
    expect_failure("dimension 2^64", src_dir("s_huge", (one(shape=(2**64,)), z16)), ["tensor x"])
    expect_failure("dimension 10^30", src_dir("s_1e30", (one(shape=(10**30,)), z16)), ["tensor x"])
    expect_failure("shape product wraps int64 to the real span", src_dir("s_wrap", (one(shape=(2**62, 4), offs=(0, 0)), z16)),
                   ["tensor x"])
    expect_failure("shape product 2^64 wraps to 0", src_dir("s_wrap0", (one(shape=(2**32, 2**32), offs=(0, 0)), b"")), ["tensor x"])
    # --- offsets ---
    expect_failure("data_offsets of 3 numbers", src_dir("o_three", (one(offs=(0, 16, 32)), z16)), ["tensor x", "bad data_offsets"])
    expect_failure("data_offsets not a list", src_dir("o_str", ({"x": {"dtype": "F32", "shape": [4], "data_offsets": "0,16"}}, z16)),
                   ["bad data_offsets"])
    expect_failure("data_offsets floats", src_dir("o_float", (one(offs=(0.0, 16.0)), z16)), ["bad data_offsets"])
    expect_failure("data_offsets reversed", src_dir("o_rev", (one(offs=(16, 0)), z16)), ["tensor x", "outside"])
    expect_failure("negative data offset", src_dir("o_neg", (one(offs=(-16, 0)), z16)), ["tensor x", "outside"])
    expect_failure("data offset 2^64", src_dir("o_huge", (one(offs=(2**64, 2**64 + 16)), z16)), ["tensor x", "outside"])
    # --- dtypes the model does not take ---
    for dt, size in (("I64", 8), ("F64", 8), ("U8", 1), ("BOOL", 1), ("f32", 4), ("F8_E4M3", 1)):
        expect_failure(f"dtype {dt}", src_dir(f"d_{dt}", (one(dtype=dt, shape=(4,), offs=(0, 4 * size)), b"\0" * (4 * size))),
                       ["tensor x", "not supported"])
    # --- a real tiny checkpoint with one lie in it ---
    d = src_dir("ok")
    mrc.make_checkpoint(d, TINY, quiet=True, vocab_dir=None)
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        good = f.read()
    (n,) = struct.unpack_from("<Q", good)
    header = json.loads(good[8:8 + n])
    name = "detector_model.vision_encoder.backbone.layer_norm.weight"

    def variant(tag, mutate, payload=None):
        h = json.loads(json.dumps(header))
        mutate(h)
        return src_dir(tag, (h, good[8 + n:] if payload is None else payload))

    expect_failure("weight stored as F64", variant("w_f64", lambda h: h[name].update(dtype="F64")), [name, "not supported"])
    expect_failure("weight stored as I32", variant("w_i32", lambda h: h[name].update(dtype="I32")), [name, "not supported"])
    expect_failure("weight's offsets shifted by 4", variant("w_shift", lambda h: h[name].update(
        data_offsets=[h[name]["data_offsets"][0] + 4, h[name]["data_offsets"][1] + 4])), [])
    expect_failure("data cut short by one byte", variant("w_cut", lambda h: None, good[8 + n:-1]), ["outside"])
    expect_failure("weight with an extra dimension", variant("w_dim", lambda h: h[name].update(shape=h[name]["shape"] + [1])),
                   [name])
    expect_failure("one tensor under two names", variant("w_dup", lambda h: h.update(
        {name + "_copy": dict(h[name])})), ["overlap"])
    # --- config.json, vocab, merges, index ---
    items = os.path.join(d, "model.safetensors")

    def with_files(tag, files, config=TINY, vocab=True):
        t = src_dir(tag, good, config=config, vocab=vocab)
        for fn, data in files.items():
            with open(os.path.join(t, fn), "wb") as f:
                f.write(data)
        return t

    expect_failure("config.json not JSON", with_files("c_bad", {}, config=b"{model_type: sam3"), ["config.json"])
    expect_failure("config.json a list", with_files("c_list", {}, config=b"[]"), ["config"])
    expect_failure("config.json not UTF-8", with_files("c_utf8", {}, config=b'{"model_type": "\xff"}'), ["config.json"])
    expect_failure("config.json empty", with_files("c_empty", {}, config=b""), ["config.json"])
    expect_failure("vocab.json a list", with_files("v_list", {"vocab.json": b"[1, 2]"}), ["vocab.json"])
    expect_failure("vocab.json ids with a gap", with_files("v_gap", {"vocab.json": json.dumps(
        {t: (i if i < 10 else i + 1) for t, i in VOCAB.items()}).encode()}), ["vocab.json"])
    expect_failure("vocab.json string ids", with_files("v_str", {"vocab.json": json.dumps(
        {t: str(i) for t, i in VOCAB.items()}).encode()}), ["vocab.json"])
    expect_failure("merges.txt line of three tokens", with_files("m_three", {"merges.txt": b"#version: 0.2\na b c\n"}), ["merges.txt"])
    expect_failure("merges.txt not UTF-8", with_files("m_utf8", {"merges.txt": b"#version: 0.2\n\xff \xfe\n"}), ["merges.txt"])
    t = src_dir("idx_bad", None)
    with open(os.path.join(t, "model.safetensors.index.json"), "w") as f:
        f.write('{"weight_map": {"x": "../../etc/passwd"}}')
    expect_failure("shard index naming a path outside", t, ["not a plain file name"])
    t = src_dir("idx_list", None)
    with open(os.path.join(t, "model.safetensors.index.json"), "w") as f:
        f.write('{"weight_map": [1, 2]}')
    expect_failure("shard index weight_map a list", t, ["weight_map"])
    # --- outputs that cannot be written ---
    expect_failure("output in a missing directory", d, ["cannot write"], out=os.path.join(TMP, "no", "such", "dir", "o.sam3"))
    os.makedirs(os.path.join(TMP, "adir.sam3"), exist_ok=True)
    expect_failure("output path is a directory", d, ["cannot write"], out=os.path.join(TMP, "adir.sam3"))
    del items
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"test_convert_robust: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
