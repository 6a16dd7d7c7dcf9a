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
    if isinstance(config, dict):
        try:  # the preprocessor_config.json that a checkpoint of this image size comes with
            mrc.write_processor(d, convert.fill_config(config))
        except convert.ConvertError:
            pass
    if safetensors is not None:
        if isinstance(safetensors, tuple):
            header, payload = safetensors
            hb = header if isinstance(header, bytes) else json.dumps(header).encode()
            safetensors = struct.pack("<Q", len(hb)) + hb + payload
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(safetensors)
    return d


def _state(path):
    """What must not change about a path that existed before a failed run: its link (or file
    identity) and the bytes it leads to."""
    st = os.lstat(path)
    target = os.readlink(path) if os.path.islink(path) else None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = None
    return (st.st_ino, st.st_dev, target, data)


def expect_failure(name, src, words, out=None, args=(), preexisting=()):
    """preexisting: paths (OUT, OUT.tmp, a link's target) that existed before the run and must
    be exactly as they were after it."""
    global passed, failed
    out = out or os.path.join(TMP, "out.sam3")
    before = {q: _state(q) for q in preexisting}
    p = subprocess.run([sys.executable, CONVERT, src, out, "--quiet", *args], capture_output=True, text=True)
    problems = []
    if p.returncode != 1:
        problems.append(f"exit status {p.returncode}, expected 1")
    if "Traceback" in p.stderr:
        problems.append("a Python traceback")
    elif p.stderr.count("convert.py: error:") != 1:
        problems.append(f"{p.stderr.count('convert.py: error:')} 'convert.py: error:' lines, expected exactly 1")
    for w in words:
        if w not in p.stderr:
            problems.append(f"{w!r} not in the message")
    for q, st in before.items():
        if not os.path.lexists(q) or _state(q) != st:
            problems.append(f"{q} was changed or removed")
    if out not in before and os.path.exists(out) and not os.path.isdir(out):
        problems.append("an output file was left")
    if out + ".tmp" not in before and os.path.lexists(out + ".tmp"):
        problems.append("OUT.tmp was left")
    if problems:
        failed += 1
        print(f"FAIL {name}: {'; '.join(problems)}\n     stderr: {p.stderr.strip()[-600:]}")
    else:
        passed += 1
        print(f"PASS {name}: {p.stderr.strip().splitlines()[-1][:150]}")
    if os.path.isfile(out) and out not in before:
        os.unlink(out)


def one(dtype="F32", shape=(4,), offs=(0, 16), name="x"):
    return {name: {"dtype": dtype, "shape": list(shape), "data_offsets": list(offs)}}


def expect_success(name, src, out, args=()):
    """Converts; returns the path or None (counted as a failure)."""
    global passed, failed
    p = subprocess.run([sys.executable, CONVERT, src, out, "--quiet", *args], capture_output=True, text=True)
    if p.returncode != 0:
        failed += 1
        print(f"FAIL {name}: exit status {p.returncode}\n     stderr: {p.stderr.strip()[-600:]}")
        return None
    passed += 1
    print(f"PASS {name}: converted")
    return out


def sam3_info(path):
    """build/sam3 info -m path (the C loader's verdict): (exit status, stderr), or None without the CLI."""
    cli = os.path.join(ROOT, os.environ.get("BUILD", "build"), "sam3")
    if not os.access(cli, os.X_OK):
        return None
    p = subprocess.run([cli, "info", "-m", path, "--verify"], capture_output=True, text=True)
    return p.returncode, p.stderr.strip()


def test_hardening(good):
    """Outputs that are inputs, a planted OUT.tmp, deep JSON, ambiguous folders, configs sam3.h cannot
    run (and the cross-check that whatever converts also loads), quick_gelu."""
    global passed, failed
    # --- the output is, or leads to, an input: refused, the input untouched ---
    ck = os.path.join(good, "model.safetensors")
    expect_failure("output is the input checkpoint", good, ["input file", "model.safetensors"], out=ck, preexisting=[ck])
    cj = os.path.join(good, "config.json")
    expect_failure("output is config.json", good, ["input file", "config.json"], out=cj, preexisting=[cj])
    link = os.path.join(TMP, "link.sam3")
    os.symlink(ck, link)
    expect_failure("output is a symlink to the checkpoint", good, ["a link to an input file"], out=link, preexisting=[link, ck])
    os.unlink(link)
    hard = os.path.join(TMP, "hard.sam3")
    os.link(os.path.join(good, "vocab.json"), hard)
    expect_failure("output is a hard link to vocab.json", good, ["input file", "vocab.json"], out=hard,
                   preexisting=[hard, os.path.join(good, "vocab.json")])
    os.unlink(hard)
    # --- a symlink planted at OUT.tmp is not followed (and neither is a leftover file overwritten) ---
    victim = os.path.join(TMP, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    out = os.path.join(TMP, "planted.sam3")
    os.symlink(victim, out + ".tmp")
    expect_failure("symlink planted at OUT.tmp", good, ["planted.sam3.tmp exists", "never written through"], out=out,
                   preexisting=[out + ".tmp", victim])
    os.unlink(out + ".tmp")
    os.symlink(os.path.join(TMP, "no_such_target"), out + ".tmp")
    expect_failure("dangling symlink planted at OUT.tmp", good, ["exists"], out=out, preexisting=[out + ".tmp"])
    if os.path.lexists(os.path.join(TMP, "no_such_target")):
        failed += 1
        print("FAIL dangling symlink planted at OUT.tmp: its target was created")
    os.unlink(out + ".tmp")
    # --- deeply nested JSON: one clean line, not a RecursionError ---
    deep = b"[" * 100000 + b"]" * 100000
    expect_failure("config.json nested 100000 deep", src_dir("deep_cfg", None, config=b'{"model_type": "sam3", "x": ' + deep + b"}"),
                   ["config.json", "nested", "deep"])
    expect_failure("safetensors header nested 100000 deep", src_dir("deep_st", (b'{"x": ' + deep + b"}", b"")),
                   ["model.safetensors", "nested", "deep"])
    expect_failure("config.json of 65 nested objects", src_dir("deep65", None, config=b'{"a": ' * 65 + b"1" + b"}" * 65),
                   ["nested 65 levels"])
    brackets_in_strings = {"model_type": "sam3_video", "note": "[[[[{{{{" * 100}
    t = src_dir("brackets", good_st, config=dict(TINY, **brackets_in_strings))
    expect_success("brackets inside JSON strings are not nesting", t, os.path.join(TMP, "brackets.sam3"))
    # --- both a single file and a shard index: ambiguous ---
    t = src_dir("ambiguous", good_st)
    with open(os.path.join(t, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {}}, f)
    expect_failure("model.safetensors and a shard index", t, ["ambiguous", "model.safetensors.index.json"])
    # --- configs sam3.h cannot run: refused at conversion, with the reason ---
    plain = json.loads(json.dumps(TINY["detector_config"]))  # a plain Sam3Model config (model_type sam3)
    t = src_dir("plain_nopp", good_st, config=None)
    with open(os.path.join(t, "config.json"), "w") as f:
        json.dump(plain, f)
    expect_failure("Sam3Model without preprocessor_config.json, vision image size 56",
                   t, ["processor image size 1008", "vision image_size 56"])

    def variant(tag, edit):
        c = json.loads(json.dumps(TINY))
        edit(c)
        return c

    def text_act(a):
        return lambda c: c["detector_config"]["text_config"].update(hidden_act=a)

    def vis(**kw):  # the detector and the tracker share one ViT
        return lambda c: [c[k]["vision_config"]["backbone_config"].update(kw) for k in ("detector_config", "tracker_config")]

    def dec(**kw):
        return lambda c: c["detector_config"]["detr_decoder_config"].update(kw)

    def trk_md(**kw):
        return lambda c: c["tracker_config"]["mask_decoder_config"].update(kw)

    refused = [("text hidden_act silu", text_act("silu"), "text.hidden_act"),
               ("vision hidden_act relu", vis(hidden_act="relu"), "vision.hidden_act"),
               ("detr decoder hidden_act gelu", dec(hidden_act="gelu"), "detr_decoder.hidden_act"),
               ("vision head dim 6 (RoPE needs a multiple of 4)", vis(hidden_size=24), "axial RoPE"),
               ("detr decoder width 32, neck 16", dec(hidden_size=32, num_attention_heads=2), "must be equal"),
               ("tracker mask decoder of 11 two-way layers", trk_md(num_hidden_layers=11), "num_hidden_layers"),
               ("detr decoder of 70000 queries", dec(num_queries=70000), "num_queries")]
    for tag, edit, word in refused:
        cfg = variant(tag, edit)
        t = src_dir("run_" + tag.split()[0] + str(abs(hash(tag)) % 1000), None, config=cfg)
        mrc.make_checkpoint(t, cfg, quiet=True, vocab_dir=t)
        expect_failure(f"unrunnable config: {tag}", t, [word])
    # Whatever converts must load: variants next to the limits, converted, then loaded by the C library
    accepted = [("text quick_gelu", text_act("quick_gelu")),
                ("no tracker neck 0.5 level", lambda c: None),
                ("tracker mask decoder of 10 two-way layers", trk_md(num_hidden_layers=10)),
                ("detr decoder of 65536 queries", dec(num_queries=65536))]
    for tag, edit in accepted:
        cfg = variant(tag, edit)
        t = src_dir("ok_" + str(abs(hash(tag)) % 100000), None, config=cfg)
        mrc.make_checkpoint(t, cfg, quiet=True, vocab_dir=t)
        o = expect_success(f"runnable config: {tag}", t, os.path.join(TMP, "ok.sam3"))
        if o is None:
            continue
        r = sam3_info(o)
        if r is None:
            print(f"SKIP loading {tag}: no build/sam3 (make all first)")
        elif r[0] != 0:
            failed += 1
            print(f"FAIL runnable config: {tag}: converted, but sam3.h does not load it: {r[1][-300:]}")
        else:
            passed += 1
            print(f"PASS runnable config: {tag}: sam3.h loads and verifies it")
        os.unlink(o)


def test_cli_verify(good):
    """`sam3 info -m FILE --verify` on crafted files: checksums per tensor, finite weights, and files
    written before checksums existed."""
    global passed, failed
    import numpy as np
    import sam3file
    out = os.path.join(TMP, "v.sam3")
    if expect_success("convert for --verify", good, out) is None:
        return
    if sam3_info(out) is None:
        print("SKIP sam3 info --verify: no build/sam3 (make all first)")
        return

    def check(name, path, want_rc, words):
        global passed, failed
        rc, err = sam3_info(path)
        bad = [w for w in words if w not in err]
        if rc != want_rc or bad:
            failed += 1
            print(f"FAIL {name}: exit status {rc} (expected {want_rc}), missing {bad}\n     stderr: {err[-400:]}")
        else:
            passed += 1
            print(f"PASS {name}: {(err.splitlines() or [''])[-1][:150]}")

    check("info --verify, untouched file", out, 0, ["checksums match"])
    f = sam3file.read(out)
    name = "detr_decoder.query_embed.weight"
    _, _, off, nbytes = f.tensors[name]
    del f
    with open(out, "rb") as fh:
        orig = fh.read()
    flipped = bytearray(orig)
    for i in range(64):  # the probe: 64 flipped bytes
        flipped[off + 4 * i] ^= 0x5A
    bad = os.path.join(TMP, "flipped.sam3")
    with open(bad, "wb") as fh:
        fh.write(flipped)
    check("info --verify, 64 flipped bytes in a weight", bad, 1, [name, "checksum"])
    cli = os.path.join(ROOT, os.environ.get("BUILD", "build"), "sam3")
    p = subprocess.run([cli, "info", "-m", bad], capture_output=True, text=True)
    if p.returncode == 0:
        passed += 1
        print("PASS info without --verify does not read the weights: the flipped file loads")
    else:
        failed += 1
        print(f"FAIL info without --verify: exit status {p.returncode}: {p.stderr.strip()[-300:]}")
    for label, value in (("NaN", np.float32("nan")), ("inf", np.float32("inf")), ("-inf", np.float32("-inf"))):
        nan = bytearray(orig)
        nan[off + 8:off + 12] = np.array([value], dtype="<f4").tobytes()
        with open(bad, "wb") as fh:
            fh.write(nan)
        check(f"info --verify, a {label} weight", bad, 1, [name, "NaN or infinite"])
    # a file as the converter wrote it before checksums: loads, --verify checks what it can
    f = sam3file.read(out)
    cfg = {k: v for k, v in f.config.items() if k != sam3file.CHECKSUM_KEY}
    old = os.path.join(TMP, "old.sam3")
    sam3file.write(old, cfg, [(n, np.array(f.get(n))) for n in f.order], checksums=False)
    del f
    check("info --verify, a file without checksums (older converter)", old, 0, ["no checksums", "finite"])
    for q in (out, bad, old):
        os.unlink(q)


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
    # --- issue 36: a list as dtype, a million dimensions, a 100 MB header: clear errors, quickly ---
    expect_failure("dtype a list", src_dir("d_list", ({"x": {"dtype": ["F32"], "shape": [4], "data_offsets": [0, 16]}}, z16)),
                   ["tensor x", "not supported"])
    expect_failure("a million dimensions", src_dir("s_million", (one(shape=(2,) * 1000000), z16)), ["tensor x", "dimensions"])
    expect_failure("header length 100 MB", src_dir("h_100mb", struct.pack("<Q", 100 << 20) + b"{" + b" " * (100 << 20)), ["header length"])
    # --- a real tiny checkpoint with one lie in it ---
    d = src_dir("ok")
    mrc.make_checkpoint(d, TINY, quiet=True, vocab_dir=None)
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        good = f.read()
    global good_st
    good_st = good
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
    nan_payload = bytearray(good[8 + n:])
    b0 = header[name]["data_offsets"][0]
    nan_payload[b0 + 4:b0 + 8] = struct.pack("<f", float("nan"))
    expect_failure("a NaN weight", variant("w_nan", lambda h: None, bytes(nan_payload)), ["layer_norm.weight", "NaN or infinite"])
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
    test_hardening(d)
    test_cli_verify(d)
    shutil.rmtree(TMP, ignore_errors=True)
    print(f"test_convert_robust: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
