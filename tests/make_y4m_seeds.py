"""Seed streams for the YUV4MPEG2 fuzz target (tests/fuzz_y4m.c) and its replay in `make test`:
valid 4:2:0 / 4:4:4 streams (odd sizes, limited and full range, FRAME parameters) and damaged
ones (cut headers and frames, CR LF, long headers, huge sizes, other colour spaces, no LF).
    make_y4m_seeds.py DIR
"""
import os
import sys


def stream(w, h, frames, extra="", c444=False, frame_line=b"FRAME\n", fill=None):
    cw, ch = (w, h) if c444 else ((w + 1) // 2, (h + 1) // 2)
    head = ("YUV4MPEG2 W%d H%d F25:1 Ip A1:1 %s%s\n" % (w, h, "C444" if c444 else "C420jpeg", extra)).encode()
    out = bytearray(head)
    for f in range(frames):
        out += frame_line
        n = w * h + 2 * cw * ch
        out += bytes(((i * 7 + f * 13) & 0xFF) if fill is None else fill for i in range(n))
    return bytes(out)


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    good = stream(7, 5, 2)
    seeds = {
        "ok_420.y4m": good,
        "ok_444.y4m": stream(6, 4, 2, c444=True),
        "ok_full.y4m": stream(5, 3, 2, " XCOLORRANGE=FULL"),
        "ok_limited.y4m": stream(5, 3, 1, " XCOLORRANGE=LIMITED"),
        "ok_frame_params.y4m": stream(4, 4, 2, frame_line=b"FRAME Ixyz\n"),
        "ok_no_frames.y4m": stream(4, 4, 0),
        "cut_header.y4m": good[:15],
        "cut_frame.y4m": good[: len(good) - 9],
        "crlf.y4m": good.replace(b"\n", b"\r\n", 1),
        "long_header.y4m": b"YUV4MPEG2 W4 H4 " + b"X" * 5000 + b"\n",
        "huge.y4m": b"YUV4MPEG2 W16384 H16384 C420\nFRAME\n",
        "mono.y4m": b"YUV4MPEG2 W4 H4 Cmono\n",
        "interlaced.y4m": b"YUV4MPEG2 W4 H4 It\n",
        "no_size.y4m": b"YUV4MPEG2 C420\n",
        "no_lf.y4m": b"YUV4MPEG2 W4 H4" + b" " * 100,
        "bad_frame.y4m": b"YUV4MPEG2 W2 H2\nFRAMEX\n" + b"\0" * 6,
        "frame_no_lf.y4m": b"YUV4MPEG2 W2 H2\nFRAME" + b"A" * 2000,
        "zeros.y4m": b"\0" * 64,
        "empty.y4m": b"",
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
