#!/usr/bin/env python3
"""sam3.h's room rules, checked (sam3.h, the contents block after the implementation marker):

  1. intrinsics and ISA tests (#if on __AVX2__, __aarch64__, SAM3__KAVX512, ...) only in the kernel
     rooms (platform, kernel paths, built-in SGEMM, bf16 kernels, kernels) and the kernel path
     choice (the cpuid/HWCAP probe);
  2. SAM3_MALLOC / SAM3_FREE only in the allocator helpers (the default allocator, kernel scratch,
     the Windows path buffer): everything else allocates through the context or the model;
  3. no function over 120 lines (the generated Unicode tables aside; LONG_KNOWN lists the ones
     still to split, each held to its length);
  4. every banner (/* ==== sam3: NAME ==== */) listed in the contents block, and every entry of
     the block a banner, in the same order.

    python3 tests/check_layout.py [sam3.h]        prints one line per violation; exit 1 if any
    python3 tests/check_layout.py --self-test     plants one violation of each rule in a copy
"""
import re
import sys

KERNEL_ROOMS = {"platform", "kernel paths", "built-in SGEMM", "bf16 kernels", "kernels"}
KERNEL_SUBROOMS = ("kernel path choice",)  # ---- subsections of other rooms that probe the CPU
ALLOC_FUNCS = {"sam3__default_alloc", "sam3__default_free", "sam3__kbuf_get", "sam3__kbuf_put", "sam3__win_path",
               "sam3__win_path_free"}
GENERATED = "unicode tables"
MAX_LINES = 120
# Functions over MAX_LINES that are known and not yet split (issue 32's list): each may not grow,
# and one that is split must leave this list (a stale entry is a violation too).
LONG_KNOWN = {}

BANNER = re.compile(r"^/\* ==== sam3: (.+?) ==== \*/")
SUBBANNER = re.compile(r"^/\* ---- (.+?) ----")
INTRIN = re.compile(r"\b(_mm\d*_\w+|__m(128|256|512)[id]?h?\b|_tile_\w+|v(ld|st)\d+q?_\w+|float32x4_t|vfmaq_\w+|svfloat\w+)")
ISA_IF = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b.*\b(__AVX\w*__|__SSE\w*__|__FMA__|__F16C__|__AMX\w*__|__ARM_NEON\w*|"
                    r"__ARM_FEATURE\w*|__aarch64__|__x86_64__|__i386__|_M_X64|_M_ARM64|SAM3__K(AVX2|AVX512|NEON|BF16|REF)\b|"
                    r"SAM3__BF16_(X86|AMX|ARM|VEC)\b)")
ALLOC = re.compile(r"\bSAM3_(MALLOC|FREE)\s*\(")
FUNC_START = re.compile(r"^(?:SAM3DEF|static|SAM3__KTARGET\([^)]*\)\s+static)\b[^;=]*?\b(\w+)\s*\([^;]*$")


def contents(lines):
    """The contents block's entries: lines '   NAME ... what lives there' between its markers."""
    out, inside = [], False
    for ln in lines:
        if ln.startswith("/* ==== sam3.h contents"):
            inside = True
            continue
        if inside:
            if ln.strip().startswith("*/"):
                break
            m = re.match(r"^\s{3}(\S.*?)\s{2,}\S", ln)
            if m:
                out.append(m.group(1).strip())
    return out


def check(text):
    lines = text.split("\n")
    bad = []
    room, sub, banners = "(before the implementation)", "", []
    in_impl = False
    func, func_start = None, 0
    seen_long = {}
    for i, ln in enumerate(lines, 1):
        m = BANNER.match(ln)
        if m:
            room, sub = m.group(1), ""
            banners.append(room)
            in_impl = True
        m = SUBBANNER.match(ln)
        if m:
            sub = m.group(1)
        kernel = room in KERNEL_ROOMS or any(sub.startswith(s) for s in KERNEL_SUBROOMS)
        code = ln.split("//")[0]
        if in_impl and not kernel and (INTRIN.search(code) or ISA_IF.match(code)):
            bad.append(f"{i}: intrinsics or an ISA test outside the kernel rooms (room '{room}'): {ln.strip()[:90]}")
        # functions: a definition starts at column 0 and ends at the first '}' at column 0
        if func is None:
            m = FUNC_START.match(ln)
            if m and not ln.rstrip().endswith(";"):
                func, func_start = m.group(1), i
                if ln.rstrip().endswith("}"):  # one-liner
                    func = None
                    continue
        if func is not None and ln.startswith("}"):
            n = i - func_start + 1
            if n > MAX_LINES and room != GENERATED and n > LONG_KNOWN.get(func, 0):
                known = f", known at {LONG_KNOWN[func]}" if func in LONG_KNOWN else ""
                bad.append(f"{func_start}: function {func} is {n} lines (at most {MAX_LINES}{known})")
            if func in LONG_KNOWN:
                seen_long[func] = n
            func = None
        if in_impl and ALLOC.search(code):
            owner = func
            if owner is None:  # a one-line function: its name is on this line
                m = FUNC_START.match(ln) or re.match(r"^static\b.*?\b(\w+)\s*\(", ln)
                owner = m.group(1) if m else None
            if owner not in ALLOC_FUNCS and not code.lstrip().startswith("#"):
                bad.append(f"{i}: SAM3_MALLOC/SAM3_FREE outside the allocator helpers (in {owner}): {ln.strip()[:90]}")
    for f in LONG_KNOWN:
        if seen_long.get(f, 0) <= MAX_LINES:
            bad.append(f"function {f} is no longer over {MAX_LINES} lines (or gone): take it off LONG_KNOWN")
    toc = contents(lines)
    # the end-of-tables banner closes the generated room; it is not a room of its own
    rooms = [b for b in banners if not b.startswith("end of ")]
    if not toc:
        bad.append("no contents block (/* ==== sam3.h contents ... */) after the implementation marker")
    else:
        for b in rooms:
            if b not in toc:
                bad.append(f"banner '{b}' is not in the contents block")
        for t in toc:
            if t not in rooms:
                bad.append(f"contents entry '{t}' has no banner")
        if not [b for b in rooms if b in toc] == [t for t in toc if t in rooms]:
            bad.append("the contents block lists the rooms in another order than the file")
    return bad


def self_test(text):
    """Each rule must catch a planted violation, and the file must pass as it is."""
    lines = text.split("\n")
    ok = True
    base = check(text)
    if base:
        print(f"check_layout self-test: the file itself has {len(base)} violations")
        ok = False
    model = next(i for i, l in enumerate(lines) if l.startswith("/* ==== sam3: preprocessing"))
    plants = {
        "intrinsic": ["static void sam3__planted(float *x) { _mm256_storeu_ps(x, _mm256_setzero_ps()); }"],
        "isa #if": ["#if defined(__AVX2__)", "#endif"],
        "malloc": ["static void *sam3__planted(void) { return SAM3_MALLOC(4); }"],
        "long function": ["static int sam3__planted(int x) {"] + ["    x += 1;"] * 130 + ["    return x;", "}"],
        "banner": ["/* ==== sam3: a planted room ==== */"],
    }
    for what, planted in plants.items():
        got = check("\n".join(lines[:model + 1] + planted + lines[model + 1:]))
        if len(got) <= len(base):
            print(f"check_layout self-test: a planted {what} was not caught")
            ok = False
    toc_line = next(i for i, l in enumerate(lines) if l.startswith("/* ==== sam3.h contents"))
    dropped = lines[:toc_line + 2] + lines[toc_line + 3:]  # the first entry gone
    if len(check("\n".join(dropped))) <= len(base):
        print("check_layout self-test: a missing contents entry was not caught")
        ok = False
    return ok


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    path = args[0] if args else "sam3.h"
    text = open(path, encoding="utf-8").read()
    if "--self-test" in sys.argv:
        ok = self_test(text)
        print(f"check_layout self-test: {'every rule caught its planted violation' if ok else 'FAILED'}")
        return 0 if ok else 1
    bad = check(text)
    for b in bad:
        print(f"{path}:{b}")
    print(f"check_layout: {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
