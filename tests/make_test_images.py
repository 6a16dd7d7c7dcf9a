"""Crafts the image files that tests/test_cli_robust.sh feeds the CLI, and the seed corpus of the
image-reader fuzzer (tests/fuzz_image.c). numpy + stdlib only; every file is made here, none is
downloaded.

    make_test_images.py hostile DIR   the hostile files of issue 19 (formats stb_image used to take
                                      and crashed, hung or leaked memory on) and hostile JPEG/PNG
                                      files; writes DIR/cases.txt: "NAME<TAB>WORD" per file, WORD a
                                      word the CLI's one-line error must contain
    make_test_images.py seeds DIR     small valid JPEG and PNG files of every kind the reader
                                      handles, plus the hostile files: the fuzzer's seeds
"""
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_images import png_bytes, png_chunk  # noqa: E402

# ---- JPEG by hand: the standard luminance tables, baseline, every block flat ----

STD_DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
STD_DC_VALS = list(range(12))
STD_AC_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D]
STD_AC_VALS = bytes.fromhex(
    "01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a"
    "434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9"
    "aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9fa")


def seg(marker, body):
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def dht(cls, ident, bits, vals):
    return seg(0xC4, bytes([cls << 4 | ident]) + bytes(bits) + bytes(vals))


def jpeg_flat(w, h, comps=1, sof_w=None, sof_h=None, adobe=None, extra_dht=b"", cut=None):
    """A baseline JPEG of w x h (multiples of 8) whose every block is flat mid-grey: DC difference 0
    (code 00) then EOB (code 1010) per block and component. sof_w/sof_h: the size the SOF declares,
    if not the real one; adobe: an APP14 transform byte; cut: keep this many bytes only."""
    blocks = (w // 8) * (h // 8) * comps
    bits = "001010" * blocks
    bits += "1" * (-len(bits) % 8)
    data = bytearray()
    for i in range(0, len(bits), 8):
        b = int(bits[i:i + 8], 2)
        data.append(b)
        if b == 0xFF:
            data.append(0)
    out = b"\xff\xd8" + seg(0xE0, b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0")
    if adobe is not None:
        out += seg(0xEE, b"Adobe" + struct.pack(">HHHB", 100, 0, 0, adobe))
    out += seg(0xDB, b"\x00" + bytes([1] * 64))
    sw, sh = sof_w if sof_w is not None else w, sof_h if sof_h is not None else h
    out += seg(0xC0, struct.pack(">BHHB", 8, sh, sw, comps) + b"".join(bytes([k + 1, 0x11, 0]) for k in range(comps)))
    out += dht(0, 0, STD_DC_BITS, STD_DC_VALS) + dht(1, 0, STD_AC_BITS, STD_AC_VALS) + extra_dht
    out += seg(0xDA, bytes([comps]) + b"".join(bytes([k + 1, 0x00]) for k in range(comps)) + b"\x00\x3f\x00")
    out += bytes(data) + b"\xff\xd9"
    return out[:cut] if cut else out


def png_header_only(w, h, depth=8, colour=2, idat=b"", crc_ok=True):
    ihdr = png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + ihdr + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def grad(h, w):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x * 7 + y) % 256], axis=2).astype(np.uint8)


def hostile():
    """{name: (bytes, word in the error)}"""
    f = {}
    # -- issue 19's stb_image cases: refused by their first bytes, before any parsing --
    # a JPEG whose Huffman table declares 300 codes (stb #1289/#1291 segfault): libjpeg refuses it
    bad_dht = seg(0xC4, bytes([0x11]) + bytes([0] * 8 + [200, 100] + [0] * 6) + bytes(300))  # 300 > 256
    f["jpeg_huffman_300_codes.jpg"] = (jpeg_flat(16, 16, extra_dht=bad_dht), "Huffman")
    f["pic_97_bytes.pic"] = (b"\x53\x80\xF6\x34" + b"\0" * 84 + b"PICT" + struct.pack(">HH", 64, 64) + b"\0" * 5,
                             "JPEG and PNG only")
    f["ppm_16bit.ppm"] = (b"P6\n4 4\n65535\n" + bytes(range(96)), "JPEG and PNG only")
    f["radiance_49_bytes.hdr"] = (b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 8 +X 8\n\x02\x02", "JPEG and PNG only")
    f["tga_truncated.tga"] = (struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, 64, 64, 24, 0x20) + b"\x10" * 10,
                              "JPEG and PNG only")
    f["ppm_truncated.ppm"] = (b"P6\n64 64\n255\n" + b"\x10" * 10, "JPEG and PNG only")
    bmp_info = struct.pack("<IiiHHIIiiII", 40, 16, 16, 1, 8, 0, 256, 0, 0, 256, 0)  # 256 colours, 2 present
    f["bmp_short_palette.bmp"] = (b"BM" + struct.pack("<IHHI", 14 + 40 + 8 + 256, 0, 0, 14 + 40 + 8) + bmp_info + b"\0" * 8 + b"\1" * 256,
                                  "JPEG and PNG only")
    f["gif_16384x16384.gif"] = (b"GIF89a" + struct.pack("<HHBBB", 16384, 16384, 0, 0, 0) + b",\0\0\0\0" +
                                struct.pack("<HH", 16384, 16384) + b"\0\x08\x02\x4c\x01\0;", "JPEG and PNG only")
    psd = b"8BPS" + struct.pack(">H", 1) + b"\0" * 6 + struct.pack(">HIIHH", 3, 16384, 16384, 8, 3) + b"\0" * 12
    f["psd_16384x16384.psd"] = (psd, "JPEG and PNG only")
    f["tga_32767x16384.tga"] = (struct.pack("<BBBHHBHHHHBB", 0, 0, 10, 0, 0, 0, 0, 0, 32767, 16384, 24, 0x20) + b"\0" * 20,
                                "JPEG and PNG only")
    h = w = 4  # an ordinary semi-transparent RGBA PSD (stb tripped UBSan on it): raw planes
    planes = b"".join(bytes([v] * (h * w)) for v in (200, 100, 50, 128))
    f["psd_rgba_4ch.psd"] = (b"8BPS" + struct.pack(">H", 1) + b"\0" * 6 + struct.pack(">HIIHH", 4, h, w, 8, 3) +
                             struct.pack(">III", 0, 0, 0) + struct.pack(">H", 0) + planes, "JPEG and PNG only")
    f["empty.jpg"] = (b"", "empty file")
    f["text.png"] = (b"this is not an image\n", "JPEG and PNG only")
    # -- hostile JPEG --
    f["jpeg_65000x65000.jpg"] = (jpeg_flat(16, 16, sof_w=65000, sof_h=65000), "16384")
    f["jpeg_16385x8.jpg"] = (jpeg_flat(16, 16, sof_w=16385, sof_h=8), "16384")
    f["jpeg_12000x10000_budget.jpg"] = (jpeg_flat(16, 16, sof_w=12000, sof_h=10000), "--max-pixels")
    f["jpeg_0x16.jpg"] = (jpeg_flat(16, 16, sof_w=0), "JPEG")
    f["jpeg_truncated_in_scan.jpg"] = (jpeg_flat(64, 64, cut=-30), "Premature end")
    f["jpeg_no_eoi.jpg"] = (jpeg_flat(64, 64, cut=-2), "Premature end")
    f["jpeg_header_only.jpg"] = (jpeg_flat(64, 64)[:200], "JPEG")
    f["jpeg_soi_only.jpg"] = (b"\xff\xd8\xff", "JPEG")
    f["jpeg_cmyk_adobe.jpg"] = (jpeg_flat(16, 16, comps=4, adobe=0), "CMYK")
    f["jpeg_ycck_adobe.jpg"] = (jpeg_flat(16, 16, comps=4, adobe=2), "CMYK")
    f["jpeg_2_components.jpg"] = (jpeg_flat(16, 16, comps=2), "colour space")
    # -- hostile PNG --
    good = png_bytes(grad(40, 50))
    f["png_2e31_wide.png"] = (png_header_only(1 << 31, 1, idat=zlib.compress(b"\0" * 10)), "PNG")
    f["png_70000x70000.png"] = (png_header_only(70000, 70000, idat=zlib.compress(b"\0" * 100)), "PNG")
    f["png_16384x16384_budget.png"] = (png_header_only(16384, 16384, idat=zlib.compress(b"\0" * 100)), "--max-pixels")
    f["png_20000x1.png"] = (png_bytes(grad(1, 20000)), "16384")
    f["png_zero_height.png"] = (png_header_only(10, 0, idat=zlib.compress(b"\0" * 10)), "PNG")
    f["png_9000x9000_short_idat.png"] = (png_header_only(9000, 9000, idat=zlib.compress(b"\0" * 1000)), "PNG")
    f["png_truncated_idat.png"] = (good[:len(good) // 2], "truncated")
    f["png_no_iend.png"] = (good[:-12], "truncated")
    f["png_signature_only.png"] = (b"\x89PNG\r\n\x1a\n", "truncated")
    bad = bytearray(good)
    bad[-12 - 1] ^= 1  # the IDAT chunk's CRC (IEND's 12 bytes follow it)
    f["png_bad_idat_crc.png"] = (bytes(bad), "CRC")
    text = png_chunk(b"tEXt", b"Comment\0hello")
    text = text[:-1] + bytes([text[-1] ^ 0xFF])
    f["png_bad_text_crc.png"] = (good[:33] + text + good[33:], "CRC")
    z = bytearray(zlib.compress(b"".join(b"\0" + grad(40, 50)[y].tobytes() for y in range(40))))
    for i in range(10, len(z) - 8, 7):  # the deflate data; the chunk's CRC is right
        z[i] ^= 0x5A
    f["png_corrupt_zlib.png"] = (png_header_only(50, 40, idat=bytes(z)), "PNG")
    f["png_palette_missing_plte.png"] = (png_header_only(8, 8, colour=3, idat=zlib.compress(b"\0" * 72)), "PNG")
    f["png_bad_depth.png"] = (png_header_only(8, 8, depth=7, idat=zlib.compress(b"\0" * 72)), "PNG")
    return f


def seeds():
    f = {}
    rgb = grad(13, 17)
    grey = rgb[:, :, 0]
    f["rgb.png"] = png_bytes(rgb)
    f["rgba.png"] = png_bytes(np.concatenate([rgb, grey[:, :, None]], axis=2))
    f["grey.png"] = png_bytes(grey)
    f["grey_alpha.png"] = png_bytes(np.stack([grey, grey], axis=2))
    f["grey_1bit.png"] = png_bytes(grey >> 7, depth=1)
    f["grey_16bit.png"] = png_bytes(grey.astype(np.uint16) * 257, depth=16)
    f["rgb_16bit_interlaced.png"] = png_bytes(rgb.astype(np.uint16) * 257, depth=16, interlace=True)
    f["palette_2bit_trns.png"] = png_bytes(grey >> 6, depth=2, palette=[[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]],
                                           extra=png_chunk(b"tRNS", b"\x00\x80"))
    f["grey_16x16.jpg"] = jpeg_flat(16, 16)
    f["ycc_16x8.jpg"] = jpeg_flat(16, 8, comps=3)
    return f


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("hostile", "seeds"):
        sys.exit(__doc__)
    d = sys.argv[2]
    os.makedirs(d, exist_ok=True)
    h = hostile()
    files = {k: v[0] for k, v in h.items()}
    if sys.argv[1] == "seeds":
        files.update(seeds())
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(data)
    if sys.argv[1] == "hostile":
        with open(os.path.join(d, "cases.txt"), "w") as fh:
            for name, (_, word) in h.items():
                fh.write(f"{name}\t{word}\n")


if __name__ == "__main__":
    main()
