"""Reader and writer for the .sam3 container (format version 1).

The same container holds converted models (config key ``arch`` = "sam3") and the
reference dumps the tests compare against (``arch`` = "dump").  json + numpy only.

Byte layout (little-endian; every offset is absolute from the start of the file
unless it says "string-table relative"):

  header, 128 bytes
     0  char[4] magic            "SAM3" (checked byte by byte)
     4  u32     format_version   1
     8  u32     header_bytes     128
    12  u32     alignment        64 (tensor data alignment)
    16  u64     file_bytes       total size; catches truncation up front
    24  u32     n_config
    28  u32     n_tensors
    32  u64     config_offset    = 128
    40  u64     tensor_table_offset
    48  u64     string_table_offset
    56  u64     string_table_bytes
    64  u64     data_offset      first byte of tensor data (multiple of 64)
    72  u64     tables_checksum  mx64 of bytes [0, data_offset) with these 8 read as zero,
                                 bits 0 and 63 then set (0: none, an older converter)
    80  ...     zero up to 128

  config table: n_config entries of 64 bytes
     0  char[48] key             dotted lower_snake, NUL-terminated, NUL-padded
    48  u32      type            1 = i64, 2 = f64, 3 = string, 4 = i64 array, 5 = f64 array
    52  u32      count           1 for scalars, bytes for strings, items for arrays
    56  8 bytes  value           i64 / f64 for scalars; for the others the string-table
                                 relative u64 offset of the bytes (arrays 8-byte aligned)

  tensor table: n_tensors entries of 64 bytes
     0  u32 name_off             string-table relative
     4  u32 name_len             bytes, no terminator
     8  u32 dtype                0 = f32, 1 = f16, 2 = bf16, 3 = i32, 4 = u8
    12  u32 ndim                 1..4
    16  u64 shape[4]             PyTorch order (outermost first), unused entries 0
    48  u64 data_off             absolute, multiple of 64
    56  u64 data_bytes           = prod(shape) * dtype size

  string table: names, config strings and config arrays
  data: tensors in table order, each 64-byte aligned, no overlap, zero padding between

Tensor names are the Hugging Face state-dict names verbatim.

Checksums: config key "file.checksums.mx64" (i64 array, one entry per tensor in table order;
the u64 value's bits) holds mx64 of each tensor's data_bytes (see mx64 below; sam3.h verifies
them when asked: sam3_load_options.verify, `sam3 info --verify`). Files without the key (from
an older converter) are still valid. It is written last: the writer hashes each tensor as it
writes it and then patches the array in the string table, so a multi-GB file is read once; then
tables_checksum over the header and tables (the array included). With both, and the padding
zero, every byte of the file is covered.
"""
import json
import os
import struct

import numpy as np

MAGIC = b"SAM3"
FORMAT_VERSION = 1
HEADER_BYTES = 128
ALIGN = 64

T_I64, T_F64, T_STR, T_I64_ARRAY, T_F64_ARRAY = 1, 2, 3, 4, 5
DT_F32, DT_F16, DT_BF16, DT_I32, DT_U8 = 0, 1, 2, 3, 4
# numpy has no bfloat16: bf16 data travels as this one-field record of the raw bits (to_bf16 makes it)
BF16 = np.dtype([("bf16", "<u2")])
DTYPE_NP = {DT_F32: np.float32, DT_F16: np.float16, DT_I32: np.int32, DT_U8: np.uint8}
NP_DTYPE = {np.dtype(np.float32): DT_F32, np.dtype(np.float16): DT_F16,
            np.dtype(np.int32): DT_I32, np.dtype(np.uint8): DT_U8, BF16: DT_BF16}
DTYPE_NAME = {DT_F32: "f32", DT_F16: "f16", DT_BF16: "bf16", DT_I32: "i32", DT_U8: "u8"}
KEY_MAX = 47
CHECKSUM_KEY = "file.checksums.mx64"
MX64_K1, MX64_K2 = 0x9E3779B97F4A7C15, 0xD6E8FEB86659FD93
_M64 = (1 << 64) - 1
_MX64_CHUNK = 1 << 17  # words a pass: 1 MB pieces stay in L2
_MX64_RAMP = None


def mx64(data):
    """mx64 of a bytes-like object or array (its raw bytes), as sam3.h's sam3__mx64_update/final:
    words w[i] = the bytes as little-endian u64 (the last one zero-extended),
    s = sum_i mix((w[i] ^ (i * K1)) * K2) mod 2^64 with mix(x) = x ^ (x >> 32), h = mix((s ^ n) * K2).
    Vectorised over pieces of _MX64_CHUNK words (uint64 arithmetic wraps in numpy arrays)."""
    global _MX64_RAMP
    if isinstance(data, np.ndarray):
        # (memoryview.cast refuses views with a zero in the shape: an empty tensor's bytes are b"")
        b = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        b = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    n = b.size
    nw = n // 8
    if _MX64_RAMP is None:
        _MX64_RAMP = np.arange(_MX64_CHUNK, dtype=np.uint64) * np.uint64(MX64_K1)
    k2, sh = np.uint64(MX64_K2), np.uint64(32)
    words = b[:nw * 8].view("<u8")
    s = 0
    x = np.empty(min(nw, _MX64_CHUNK), dtype=np.uint64)
    t = np.empty_like(x)
    for start in range(0, nw, _MX64_CHUNK):
        w = words[start:start + _MX64_CHUNK]
        m = w.size
        xs, ts = x[:m], t[:m]
        np.add(_MX64_RAMP[:m], np.uint64((start * MX64_K1) & _M64), out=xs)  # (i * K1) mod 2^64
        np.bitwise_xor(xs, w, out=xs)
        np.multiply(xs, k2, out=xs)
        np.right_shift(xs, sh, out=ts)
        np.bitwise_xor(xs, ts, out=xs)
        s += int(xs.sum(dtype=np.uint64))
    if n % 8:
        w = int.from_bytes(b[nw * 8:].tobytes(), "little")
        xv = ((w ^ ((nw * MX64_K1) & _M64)) * MX64_K2) & _M64
        s += xv ^ (xv >> 32)
    h = (((s & _M64) ^ n) * MX64_K2) & _M64
    return h ^ (h >> 32)


TABLES_CHECKSUM_AT = 72


def tables_checksum(head):
    """The header field tables_checksum of a file whose bytes before the data are `head` (its own
    8 bytes at TABLES_CHECKSUM_AT read as zero), as sam3.h's sam3__file_meta_checksum."""
    b = bytearray(head)
    b[TABLES_CHECKSUM_AT:TABLES_CHECKSUM_AT + 8] = bytes(8)
    return mx64(bytes(b)) | 0x8000000000000001


def to_bf16(a):
    """float32 array -> the same shape as BF16 records, rounded to nearest even as torch's
    .to(torch.bfloat16) rounds (a NaN becomes the quiet NaN 0x7fc0)."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4")
    r = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)).astype("<u2")
    r[(u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)] = 0x7FC0
    return r.view(BF16)


def bf16_f32(b):
    """BF16 records (or their raw uint16 bits) -> float32, exactly."""
    return (np.asarray(b).view("<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)


def _i64(u):
    """A u64's bits as the i64 the config table stores."""
    return u - (1 << 64) if u >= 1 << 63 else u


def _align(n, a):
    return (n + a - 1) // a * a


def write(path, config, tensors, checksums=True):
    """Write a .sam3 file.

    config: dict key -> int | float | bool | str | list[int] | list[float] (insertion order kept).
    tensors: list of (name, array) in the order they are stored; arrays must be
    f32/f16/i32/u8 or BF16 records (to_bf16) and C-contiguous-able.  An array may also be a `Lazy` (shape and
    dtype known up front, data produced by a function when its turn comes), so a
    multi-GB file is written one tensor at a time.  Writes path + ".tmp" then renames,
    so an interrupted run never leaves a half-written file under the final name.  The
    temporary file is created exclusively and never through a symbolic link (O_EXCL |
    O_NOFOLLOW): an existing path + ".tmp" (a leftover, or a link planted there) is an error,
    not something to write through.  checksums: record mx64 of every tensor (CHECKSUM_KEY).
    """
    strtab = bytearray()
    config = dict(config)
    if checksums:
        if CHECKSUM_KEY in config:
            raise ValueError(f"config key {CHECKSUM_KEY!r} is written by the writer itself")
        config[CHECKSUM_KEY] = [0] * len(tensors)  # patched once the data is written
    checksum_off = None

    def put(b, align=1):
        while len(strtab) % align:
            strtab.append(0)
        off = len(strtab)
        strtab.extend(b)
        return off

    cfg_entries = []
    for key, v in config.items():
        kb = key.encode("ascii")
        if not kb or len(kb) > KEY_MAX:
            raise ValueError(f"config key {key!r}: length must be 1..{KEY_MAX}")
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, (int, np.integer)):
            ent = (T_I64, 1, struct.pack("<q", int(v)))
        elif isinstance(v, (float, np.floating)):
            ent = (T_F64, 1, struct.pack("<d", float(v)))
        elif isinstance(v, str):
            b = v.encode("utf-8")
            ent = (T_STR, len(b), struct.pack("<Q", put(b)))
        elif isinstance(v, (list, tuple)):
            if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
                b = np.asarray(v, dtype="<i8").tobytes()
                ent = (T_I64_ARRAY, len(v), struct.pack("<Q", put(b, 8)))
                if checksums and key == CHECKSUM_KEY:
                    checksum_off = struct.unpack("<Q", ent[2])[0]
            else:
                b = np.asarray([float(x) for x in v], dtype="<f8").tobytes()
                ent = (T_F64_ARRAY, len(v), struct.pack("<Q", put(b, 8)))
        else:
            raise TypeError(f"config key {key!r}: unsupported value {v!r}")
        cfg_entries.append(kb.ljust(48, b"\0") + struct.pack("<II", ent[0], ent[1]) + ent[2])

    names = set()
    metas = []
    for name, arr in tensors:
        if name in names:
            raise ValueError(f"duplicate tensor name {name!r}")
        names.add(name)
        if not isinstance(arr, (np.ndarray, Lazy)):
            arr = np.asarray(arr)
        dt, shape = np.dtype(arr.dtype), tuple(int(n) for n in arr.shape)
        if dt not in NP_DTYPE:
            raise TypeError(f"tensor {name!r}: unsupported dtype {dt}")
        if not 1 <= len(shape) <= 4:
            raise ValueError(f"tensor {name!r}: ndim {len(shape)} not in 1..4")
        nb = name.encode("utf-8")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        metas.append((put(nb), len(nb), NP_DTYPE[dt], shape, nbytes))

    n_cfg, n_t = len(cfg_entries), len(metas)
    config_offset = HEADER_BYTES
    tensor_table_offset = config_offset + 64 * n_cfg
    string_table_offset = tensor_table_offset + 64 * n_t
    data_offset = _align(string_table_offset + len(strtab), ALIGN)
    offs = []
    pos = data_offset
    for m in metas:
        offs.append(pos)
        pos = _align(pos + m[4], ALIGN)
    file_bytes = pos if metas else data_offset

    hdr = MAGIC + struct.pack("<III", FORMAT_VERSION, HEADER_BYTES, ALIGN)
    hdr += struct.pack("<QII", file_bytes, n_cfg, n_t)
    hdr += struct.pack("<QQQQQ", config_offset, tensor_table_offset, string_table_offset,
                       len(strtab), data_offset)
    hdr = hdr.ljust(HEADER_BYTES, b"\0")

    tmp = path + ".tmp"
    sums = []
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o644)  # FileExistsError when tmp exists (also as a link): nothing of ours to clean
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(hdr)
            for e in cfg_entries:
                f.write(e)
            for (noff, nlen, dt, shape, nbytes), off in zip(metas, offs):
                shp = list(shape) + [0] * (4 - len(shape))
                f.write(struct.pack("<IIII", noff, nlen, dt, len(shape)))
                f.write(struct.pack("<4Q", *shp))
                f.write(struct.pack("<QQ", off, nbytes))
            f.write(strtab)
            for (name, arr), off, m in zip(tensors, offs, metas):
                f.write(b"\0" * (off - f.tell()))
                a = np.asarray(arr)
                if NP_DTYPE.get(a.dtype) != m[2] or a.shape != m[3]:
                    raise ValueError(f"tensor {name!r}: data is {a.dtype} {a.shape}, "
                                     f"declared {DTYPE_NAME[m[2]]} {m[3]}")
                a = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False)
                if checksums:
                    sums.append(_i64(mx64(a)))
                a.tofile(f)
            f.write(b"\0" * (file_bytes - f.tell()))
            if checksums and sums:
                f.seek(string_table_offset + checksum_off)
                f.write(np.asarray(sums, dtype="<i8").tobytes())
            if checksums:
                sb = bytearray(strtab)
                if sums:
                    sb[checksum_off:checksum_off + 8 * len(sums)] = np.asarray(sums, dtype="<i8").tobytes()
                tt = b"".join(struct.pack("<IIII", m[0], m[1], m[2], len(m[3])) + struct.pack("<4Q", *(list(m[3]) + [0] * (4 - len(m[3]))))
                              + struct.pack("<QQ", off, m[4]) for m, off in zip(metas, offs))
                head = hdr + b"".join(cfg_entries) + tt + bytes(sb)
                f.seek(TABLES_CHECKSUM_AT)
                f.write(struct.pack("<Q", tables_checksum(head.ljust(data_offset, b"\0"))))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Lazy:
    """A tensor whose shape and dtype are known now and whose data `fn()` returns later."""

    def __init__(self, shape, dtype, fn):
        self.shape, self.dtype, self.fn = tuple(shape), np.dtype(dtype), fn

    def __array__(self, dtype=None):
        a = self.fn()
        return a if dtype is None else a.astype(dtype)


class Sam3File:
    """Read-only view of a .sam3 file (numpy memmap; tensors are not copied)."""

    def __init__(self, path):
        self.path = path
        self.buf = np.memmap(path, dtype=np.uint8, mode="r")
        b = self.buf
        if len(b) < HEADER_BYTES or bytes(b[:4]) != MAGIC:
            raise ValueError(f"{path}: not a .sam3 file")
        ver, hb, al = struct.unpack_from("<III", b, 4)
        if ver != FORMAT_VERSION:
            raise ValueError(f"{path}: format version {ver}, this reader knows {FORMAT_VERSION}")
        fb, n_cfg, n_t = struct.unpack_from("<QII", b, 16)
        co, to, so, sb, do = struct.unpack_from("<QQQQQ", b, 32)
        if fb != len(b):
            raise ValueError(f"{path}: header says {fb} bytes, file has {len(b)}")
        strtab = bytes(b[so:so + sb])
        self.config = {}
        for i in range(n_cfg):
            e = bytes(b[co + 64 * i: co + 64 * i + 64])
            key = e[:48].split(b"\0", 1)[0].decode("ascii")
            typ, cnt = struct.unpack_from("<II", e, 48)
            if typ == T_I64:
                v = struct.unpack_from("<q", e, 56)[0]
            elif typ == T_F64:
                v = struct.unpack_from("<d", e, 56)[0]
            else:
                off = struct.unpack_from("<Q", e, 56)[0]
                if typ == T_STR:
                    v = strtab[off:off + cnt].decode("utf-8")
                elif typ == T_I64_ARRAY:
                    v = [int(x) for x in np.frombuffer(strtab, "<i8", cnt, off)]
                elif typ == T_F64_ARRAY:
                    v = [float(x) for x in np.frombuffer(strtab, "<f8", cnt, off)]
                else:
                    raise ValueError(f"{path}: config {key!r} has unknown type {typ}")
            self.config[key] = v
        self.tensors = {}
        self.order = []
        for i in range(n_t):
            noff, nlen, dt, nd = struct.unpack_from("<IIII", b, to + 64 * i)
            shape = struct.unpack_from("<4Q", b, to + 64 * i + 16)[:nd]
            off, nbytes = struct.unpack_from("<QQ", b, to + 64 * i + 48)
            name = strtab[noff:noff + nlen].decode("utf-8")
            self.tensors[name] = (dt, tuple(int(s) for s in shape), off, nbytes)
            self.order.append(name)

    def checksum_errors(self):
        """Names of the tensors whose data does not match the recorded checksum ([] when it all
        matches); None when the file has no checksums."""
        sums = self.config.get(CHECKSUM_KEY)
        data_offset, meta = struct.unpack_from("<QQ", self.buf, 64)
        if sums is None:
            return ["(the header records checksums, the tensors' are missing)"] if meta else None
        if not isinstance(sums, list) or len(sums) != len(self.order):
            return ["(the checksum array does not have one entry per tensor)"]
        bad = []
        pos = data_offset
        for name, want in zip(self.order, sums):
            dt, shape, off, nbytes = self.tensors[name]
            if _i64(mx64(self.buf[off:off + nbytes])) != want:
                bad.append(name)
            if self.buf[pos:off].any():
                bad.append("(padding before %s)" % name)
            pos = off + nbytes
        if self.buf[pos:].any():
            bad.append("(padding at the end)")
        if meta and tables_checksum(self.buf[:data_offset]) != meta:
            bad.append("(the header and tables)")
        return bad

    def __contains__(self, name):
        return name in self.tensors

    def get(self, name):
        dt, shape, off, nbytes = self.tensors[name]
        if dt == DT_BF16:
            u = np.frombuffer(self.buf, "<u2", nbytes // 2, off).astype(np.uint32) << 16
            return u.view(np.float32).reshape(shape)
        return np.frombuffer(self.buf, DTYPE_NP[dt], nbytes // np.dtype(DTYPE_NP[dt]).itemsize, off).reshape(shape)


def read(path):
    return Sam3File(path)


if __name__ == "__main__":
    import sys
    f = Sam3File(sys.argv[1])
    print(json.dumps(f.config, indent=1))
    for n in f.order:
        dt, shape, off, nb = f.tensors[n]
        print(f"{n}\t{DTYPE_NAME.get(dt, dt)}\t{list(shape)}\t{nb}")
