#!/usr/bin/python3
"""The committed fuzz corpus, tests/fuzz/corpus.tar.xz: inputs the fuzzer found that add coverage
beyond the generated seeds (corpus/), and every input that ever crashed (crashes/, named after
what it found). The inputs are near-copies of the ~100 KB seed models, so as an xz archive they
cost a few KB each instead of 100 KB.

    fuzz_corpus.py unpack ARCHIVE DIR     replace DIR with the archive's files (make test does this)
    fuzz_corpus.py pack DIR ARCHIVE       DIR/corpus/* and DIR/crashes/* -> ARCHIVE (reproducible:
                                          sorted names, zero times and owners)
Python stdlib only (tarfile, lzma)."""
import io
import os
import shutil
import sys
import tarfile


def unpack(archive, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    n = 0
    with tarfile.open(archive, "r:xz") as t:
        for m in t.getmembers():
            parts = m.name.split("/")
            # only plain files one level down in corpus/ or crashes/: nothing else is ours
            if not m.isfile() or len(parts) != 2 or parts[0] not in ("corpus", "crashes") or \
                    parts[1] in ("", ".", ".."):
                raise SystemExit(f"fuzz_corpus.py: unexpected member {m.name!r} in {archive}")
            os.makedirs(os.path.join(out, parts[0]), exist_ok=True)
            with t.extractfile(m) as src, open(os.path.join(out, parts[0], parts[1]), "wb") as dst:
                shutil.copyfileobj(src, dst)
            n += 1
    print(f"fuzz_corpus.py: {n} inputs from {archive} in {out}")


def pack(src, archive):
    names = []
    for sub in ("corpus", "crashes"):
        d = os.path.join(src, sub)
        if os.path.isdir(d):
            names += [(sub, f) for f in sorted(os.listdir(d)) if os.path.isfile(os.path.join(d, f))]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for sub, f in names:
            with open(os.path.join(src, sub, f), "rb") as fh:
                data = fh.read()
            info = tarfile.TarInfo(f"{sub}/{f}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    import lzma
    with open(archive + ".tmp", "wb") as fh:
        fh.write(lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    os.replace(archive + ".tmp", archive)
    print(f"fuzz_corpus.py: {len(names)} inputs ({buf.tell():,} bytes) -> {archive} "
          f"({os.path.getsize(archive):,} bytes)")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "unpack"):
        raise SystemExit(__doc__)
    (unpack if sys.argv[1] == "unpack" else pack)(sys.argv[2], sys.argv[3])
