"""The QUICK START in sam3.h's top comment must appear verbatim in examples/embed_min.c, which
`make test` compiles with -Werror and runs, so the documented code always builds and works.

    test_quickstart.py [sam3.h] [examples/embed_min.c]

The code is the QUICK START section's lines indented by 6 spaces (from the first of them to the
DOCUMENTATION heading, trailing blank lines dropped), with those 6 spaces removed.
Prints "test_quickstart: N passed, N failed" last and exits non-zero on failure.
"""
import difflib
import sys

INDENT = " " * 6


def quick_start_code(header_text):
    lines = header_text.split("\n")
    start = lines.index("QUICK START")
    end = lines.index("DOCUMENTATION", start)
    section = lines[start + 1:end]
    first = next(i for i, l in enumerate(section) if l.startswith(INDENT) and l.strip())
    code = section[first:]
    while code and not code[-1].strip():
        code.pop()
    bad = [l for l in code if l.strip() and not l.startswith(INDENT)]
    if bad:
        raise ValueError(f"QUICK START code lines not indented by 6 spaces: {bad[:3]}")
    return [l[len(INDENT):] for l in code]


def main():
    header = sys.argv[1] if len(sys.argv) > 1 else "sam3.h"
    example = sys.argv[2] if len(sys.argv) > 2 else "examples/embed_min.c"
    passed = failed = 0
    try:
        code = quick_start_code(open(header, encoding="utf-8").read())
    except ValueError as e:
        print(f"FAIL {header}: {e}")
        code, failed = None, failed + 1
    if code is not None:
        ok = len(code) >= 10
        print(("ok  " if ok else "FAIL") + f" QUICK START has {len(code)} lines of code")
        passed, failed = passed + ok, failed + (not ok)
        ex = open(example, encoding="utf-8").read().split("\n")
        found = any(ex[i:i + len(code)] == code for i in range(len(ex) - len(code) + 1))
        if found:
            print(f"ok   {example} contains the QUICK START of {header} verbatim")
            passed += 1
        else:
            first = next((i for i, l in enumerate(ex) if l == code[0]), 0)
            print(f"FAIL {example} does not contain the QUICK START of {header} verbatim:")
            sys.stdout.writelines(difflib.unified_diff([l + "\n" for l in code], [l + "\n" for l in ex[first:first + len(code)]],
                                                       "QUICK START (" + header + ")", example))
            failed += 1
    print(f"test_quickstart: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
