#!/usr/bin/env python3
"""Adds a constant to one tensor of a safetensors file in place (F32 or BF16, BF16 rounded to
nearest even): how the video tests move the object-score head's bias of a random-weight checkpoint,
whose objects would otherwise all come out "absent" (tests/data/video_a/README.md).

    python3 tools/patch_tensor.py FILE.safetensors TENSOR_NAME DELTA
"""
import json
import struct
import sys

import numpy as np


def main():
    path, name, delta = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        if name not in h:
            sys.exit(f"patch_tensor.py: no tensor {name} in {path}")
        e = h[name]
        b0, b1 = e["data_offsets"]
        f.seek(8 + n + b0)
        raw = f.read(b1 - b0)
        if e["dtype"] == "F32":
            v = np.frombuffer(raw, np.float32) + np.float32(delta)
            out = v.astype(np.float32).tobytes()
        elif e["dtype"] == "BF16":
            x = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32) + np.float32(delta)
            u = x.astype(np.float32).view(np.uint32)
            v = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            out = v.tobytes()
            v = (v.astype(np.uint32) << 16).view(np.float32)
        else:
            sys.exit(f"patch_tensor.py: {name} is {e['dtype']}, expected F32 or BF16")
        f.seek(8 + n + b0)
        f.write(out)
    print(f"{name}: {e['dtype']} {e['shape']}, now {v[:4].tolist()}")


if __name__ == "__main__":
    main()
