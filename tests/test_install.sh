#!/bin/sh
# Tests `make install` / `make uninstall` and a program that builds from `pkg-config --cflags
# --libs sam3` alone: installs into a temporary PREFIX (with the libraries of `make lib`), builds
# examples/embed_min.c and a small program printing every query's score, box and area, outside the
# repository (header-only: they define SAM3_IMPLEMENTATION; against the shared libsam3; against the
# static one), runs each on the tiny model and compares the outputs; checks DESTDIR and that
# uninstall removes everything it installed.
#   tests/test_install.sh [BUILD_DIR]   (needs BUILD_DIR/tiny_a.sam3, BUILD_DIR/embed_min, make lib
#                                        done; MAKE, CC, CFLAGS from the Makefile)
# Prints "test_install: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
MAKE=${MAKE:-make}
CC=${CC:-cc}
# the Makefile's default when run by hand: the header-only builds must match libsam3 bit for bit
CFLAGS=${CFLAGS-"-O3 -g"}
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
MODEL=$B/tiny_a.sam3
IMAGE=tests/data/tiny_a/image.png
[ -d "$B" ] || { echo "test_install: no build directory '$B'"; exit 1; }
T=$(cd "$B" && pwd)/test_install
P=$T/prefix
rm -rf "$T" && mkdir -p "$T" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check NAME COMMAND...: the command must succeed
    name=$1
    shift
    if "$@"; then ok; else bad "$name"; fi
}
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "test_install: skipped: no pkg-config (Debian: pkg-config)"
    exit 0
fi

# make install into PREFIX: header, pkg-config file, CLI, libraries
$MAKE --no-print-directory install BUILD="$B" PREFIX="$P" >"$T/install.log" 2>&1
rc=$?
check "make install PREFIX=$P exits 0 (got $rc: $(tail -n 3 "$T/install.log"))" test $rc -eq 0
version=$(sed -n 's/^#define SAM3_VERSION_STRING "\(.*\)"/\1/p' sam3.h)
soname=libsam3.so.${version%.*} # MAJOR.MINOR (sam3.h, section 8)
for f in include/sam3.h lib/pkgconfig/sam3.pc bin/sam3 lib/libsam3.a lib/libsam3.so lib/$soname lib/libsam3.so.$version; do
    check "installed $f" test -e "$P/$f"
done
check "installed sam3.h is the repository's" cmp -s sam3.h "$P/include/sam3.h"
check "installed CLI runs: $("$P/bin/sam3" --version 2>&1)" sh -c "'$P/bin/sam3' --version >/dev/null"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
check "pkg-config --modversion sam3 = $version (got $(pkg-config --modversion sam3))" test "$(pkg-config --modversion sam3)" = "$version"
flags="$(pkg-config --cflags --libs sam3)"
check "pkg-config --cflags --libs is -I and -lsam3 alone (the rest is Libs.private): $flags" sh -c \
    "echo '$flags' | grep -q -- '-lsam3' && ! echo '$flags' | grep -q -- 'openblas\|openmp'"
sflags="$(pkg-config --static --libs sam3)"
check "pkg-config --static --libs adds the BLAS and OpenMP: $sflags" sh -c "echo '$sflags' | grep -q -- 'openblas' && echo '$sflags' | grep -q -- '-fopenmp'"
for f in sam3Config.cmake sam3ConfigVersion.cmake; do check "installed lib/cmake/sam3/$f" test -e "$P/lib/cmake/sam3/$f"; done

# Programs outside the repository, built from pkg-config alone. examples/embed_min.c (stb_image
# through its own .pc) header-only as it is, and without its SAM3_IMPLEMENTATION line against
# libsam3.so; it prints only instances scoring over 0.5, none with the random-weight tiny model, so
# scores.c below prints every query's score, box and mask area (%.9g) and is built three ways: its
# outputs must be equal, bit for bit.
cp examples/embed_min.c "$T/app.c" && sed '/^#define SAM3_IMPLEMENTATION$/d' examples/embed_min.c >"$T/app_lib.c"
check "app_lib.c is embed_min.c without SAM3_IMPLEMENTATION" test "$(grep -c SAM3_IMPLEMENTATION "$T/app_lib.c")" -eq 0
cat >"$T/scores.c" <<'EOF'
#ifdef HEADER_ONLY
#define SAM3_IMPLEMENTATION
#endif
#include "sam3.h"
#include <stdio.h>

int main(int argc, char **argv) {
    static unsigned char px[48 * 64 * 3];
    sam3_model *m;
    sam3_ctx *c;
    sam3_segment_result seg;
    sam3_segment_prompt p = {0};
    sam3_segment_options o = sam3_segment_options_default();
    int i;
    for (i = 0; i < (int)sizeof(px); i++) px[i] = (unsigned char)(i * 7 % 251);
    if (argc < 2 || sam3_load(argv[1], NULL, &m) != SAM3_OK || sam3_ctx_new(m, NULL, &c) != SAM3_OK) return 1;
    if (sam3_set_image(c, px, 64, 48, 64 * 3, SAM3_RGB8) != SAM3_OK) return 1;
    p.text = "a cat";
    o.score_threshold = -1; /* every query */
    if (sam3_segment(c, &p, &o, &seg) < 0) return 1;
    printf("sam3 %s: %d instances, presence %.9g\n", sam3_version_string(), seg.n_instances, seg.presence);
    for (i = 0; i < seg.n_instances; i++) {
        const sam3_instance *in = &seg.instances[i];
        printf("%.9g  %.9g %.9g %.9g %.9g  %lld\n", in->score, in->box.x0, in->box.y0, in->box.x1, in->box.y1, (long long)in->area);
    }
    sam3_ctx_free(c);
    sam3_free(m);
    return 0;
}
EOF
STB=$(pkg-config --cflags stb 2>/dev/null || echo -I/usr/include/stb)
build() { # build NAME SOURCE [FLAGS...]: $CC -std=c99 $CFLAGS -o NAME SOURCE FLAGS, in $T (C99 as the library: GNU C
    # contracts a*b+c into FMAs, which changes the last bits)
    name=$1
    src=$2
    shift 2
    # shellcheck disable=SC2086
    (cd "$T" && $CC -std=c99 $CFLAGS -o "$name" "$src" "$@") >"$T/$name.log" 2>&1
    check "build $name from pkg-config: $(head -c 400 "$T/$name.log")" test -x "$T/$name"
}
# shellcheck disable=SC2046,SC2086
{
    # header-only: the implementation compiled here needs what libsam3 needs (--static)
    build embed_header app.c $(pkg-config --cflags sam3) $(pkg-config --static --libs sam3 | sed 's/-L[^ ]* -lsam3//') $STB
    build embed_shared app_lib.c $(pkg-config --cflags --libs sam3) $STB -lm # -lm: stb_image's
    build scores_header scores.c -DHEADER_ONLY $(pkg-config --cflags sam3) $(pkg-config --static --libs sam3 | sed 's/-L[^ ]* -lsam3//')
    build scores_shared scores.c $(pkg-config --cflags --libs sam3)
    # static: libsam3.a, then the libraries pkg-config names besides -lsam3
    build scores_static scores.c $(pkg-config --cflags sam3) "$P/lib/libsam3.a" $(pkg-config --static --libs sam3 | sed 's/-L[^ ]* -lsam3//')
}
check "header-only programs define sam3_load themselves" sh -c \
    "nm '$T/embed_header' | grep -q ' T sam3_load\$' && nm '$T/scores_header' | grep -q ' T sam3_load\$'"
check "shared-library programs take sam3_load from $soname" sh -c \
    "nm '$T/embed_shared' | grep -q ' U sam3_load\$' && readelf -d '$T/embed_shared' | grep -q 'NEEDED.*\[$soname\]' &&
     nm '$T/scores_shared' | grep -q ' U sam3_load\$'"
check "the static-library program has sam3_load inside, and no libsam3.so" sh -c \
    "nm '$T/scores_static' | grep -q ' T sam3_load\$' && ! readelf -d '$T/scores_static' | grep -q 'NEEDED.*libsam3'"

"$B/embed_min" "$MODEL" "$IMAGE" "a cat" >"$T/want.txt" 2>&1
check "build/embed_min exits 0" test $? -eq 0
for v in embed_header embed_shared scores_header scores_shared scores_static; do
    LD_LIBRARY_PATH="$P/lib" "$T/$v" "$MODEL" "$IMAGE" "a cat" >"$T/$v.txt" 2>&1
    rc=$?
    check "$v exits 0 (got $rc: $(head -c 300 "$T/$v.txt"))" test $rc -eq 0
done
check "embed_min built from pkg-config, header-only and shared, prints what build/embed_min prints" sh -c \
    "cmp -s '$T/want.txt' '$T/embed_header.txt' && cmp -s '$T/want.txt' '$T/embed_shared.txt'"
n=$(sed -n 's/.*: \([0-9]*\) instances.*/\1/p' "$T/scores_header.txt")
check "scores.c prints every query (${n:-none}: $(head -n 1 "$T/scores_header.txt"))" \
    test "${n:-0}" -gt 0 -a "$(wc -l <"$T/scores_header.txt")" -eq $((${n:-0} + 1))
check "scores.c: the shared library gives the header-only build's results, bit for bit" cmp -s "$T/scores_header.txt" "$T/scores_shared.txt"
check "scores.c: the static library gives the header-only build's results, bit for bit" cmp -s "$T/scores_header.txt" "$T/scores_static.txt"

# CMake: find_package(sam3) in a small project, the shared and the static library
if command -v cmake >/dev/null 2>&1; then
    mkdir -p "$T/cm"
    cp "$T/scores.c" "$T/cm/scores.c"
    printf '%s\n' 'cmake_minimum_required(VERSION 3.13)' 'project(uses_sam3 C)' 'find_package(sam3 1.0 REQUIRED)' \
        'add_executable(scores_cmake scores.c)' 'target_link_libraries(scores_cmake sam3::sam3)' \
        'add_executable(scores_cmake_static scores.c)' 'target_link_libraries(scores_cmake_static sam3::static)' >"$T/cm/CMakeLists.txt"
    (cd "$T/cm" && cmake -S . -B b -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_FLAGS="-std=c99 $CFLAGS" && cmake --build b) >"$T/cm.log" 2>&1
    check "a CMake project with find_package(sam3) builds: $(tail -n 3 "$T/cm.log")" test -x "$T/cm/b/scores_cmake" -a -x "$T/cm/b/scores_cmake_static"
    for v in scores_cmake scores_cmake_static; do
        "$T/cm/b/$v" "$MODEL" >"$T/$v.txt" 2>&1
        check "$v (find_package) gives the header-only build's results, bit for bit" cmp -s "$T/scores_header.txt" "$T/$v.txt"
    done
    printf '%s\n' 'cmake_minimum_required(VERSION 3.13)' 'project(wants_v2 C)' 'find_package(sam3 2.0 REQUIRED)' >"$T/cm/v2.cmake"
    mkdir -p "$T/cm2" && cp "$T/cm/v2.cmake" "$T/cm2/CMakeLists.txt"
    (cd "$T/cm2" && cmake -S . -B b -DCMAKE_PREFIX_PATH="$P") >"$T/cm2.log" 2>&1
    check "find_package(sam3 2.0) refuses version $version" test $? -ne 0
else
    echo "test_install: no cmake: the find_package(sam3) checks skipped"
fi

# uninstall removes every file and link it installed
$MAKE --no-print-directory uninstall BUILD="$B" PREFIX="$P" >"$T/uninstall.log" 2>&1
check "make uninstall exits 0" test $? -eq 0
left=$(find "$P" -type f -o -type l | head -n 5)
check "uninstall leaves no file in PREFIX: $left" test -z "$left"

# DESTDIR: files go under it, the paths inside sam3.pc do not name it
$MAKE --no-print-directory install BUILD="$B" DESTDIR="$T/dest" PREFIX=/opt/sam3 >"$T/dest.log" 2>&1
check "make install DESTDIR=... exits 0" test $? -eq 0
check "DESTDIR: sam3.h under DESTDIR/opt/sam3" test -e "$T/dest/opt/sam3/include/sam3.h"
check "DESTDIR: sam3.pc says prefix=/opt/sam3" grep -qx 'prefix=/opt/sam3' "$T/dest/opt/sam3/lib/pkgconfig/sam3.pc"
check "DESTDIR: sam3.pc does not name DESTDIR" sh -c "! grep -q '$T' '$T/dest/opt/sam3/lib/pkgconfig/sam3.pc'"
$MAKE --no-print-directory uninstall BUILD="$B" DESTDIR="$T/dest" PREFIX=/opt/sam3 >>"$T/dest.log" 2>&1
left=$(find "$T/dest" -type f -o -type l | head -n 5)
check "DESTDIR: uninstall leaves no file: $left" test -z "$left"

echo "test_install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
