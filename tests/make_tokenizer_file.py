#!/usr/bin/python3
"""Packs a CLIP vocabulary (vocab.json + merges.txt in DIR) into a .sam3 container holding only the
tokenizer tables, exactly as tools/convert.py stores them, for test_tokenizer.

usage: make_tokenizer_file.py DIR OUT.sam3   (exits 0 with a note when DIR is absent)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import convert  # noqa: E402
import sam3file  # noqa: E402

src, out = sys.argv[1], sys.argv[2]
if not os.path.isfile(os.path.join(src, "vocab.json")):
    print(f"make_tokenizer_file: {src} has no vocab.json, skipped")
    sys.exit(0)
tok = convert.read_tokenizer(src)
sam3file.write(out, {"arch": "tokenizer", "tokenizer.vocab_size": tok["vocab_size"], "tokenizer.n_merges": tok["n_merges"],
                     "tokenizer.bos_token_id": tok["bos"], "tokenizer.eos_token_id": tok["eos"]},
               [("tokenizer.vocab.bytes", tok["bytes"]), ("tokenizer.vocab.offsets", tok["offsets"]),
                ("tokenizer.merges", tok["merges"])])
