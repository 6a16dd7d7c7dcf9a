#!/bin/sh
# `make warnings`: the implementation (tests/test_compile_impl.c) and the header alone
# (tests/test_compile.c) compiled with -Wall -Wextra -pedantic -Werror across gcc and clang, C99,
# C++11 and C++17, with and without -DNDEBUG and OpenMP, the GEMM choices (OpenBLAS, SAM3_SGEMM
# without cblas.h, SAM3_NO_BLAS) and instruction sets (baseline x86-64, AVX2, native). Front-end
# warnings need no optimiser (-fsyntax-only, fast); the ones that depend on it (clang's
# -Wpass-failed, gcc's -Wmaybe-uninitialized) come from -O0..-O3 builds of a few combinations.
# With MinGW-w64 installed, also a TU that includes <windows.h> before sam3.h (its macros: hyper,
# near, far, min, max, ...); with aarch64-linux-gnu-gcc, the aarch64 code; the CLI's units
# (examples/*.c) with gcc and clang. JOBS compiles at a time (default 2). Exit status 1 on any warning.
# usage: sh tests/test_warnings.sh [BUILD_DIR]
set -u
B=${1:-build}/warnings
JOBS=${JOBS:-2}
mkdir -p "$B"
: >"$B/jobs"
job() { echo "$*" >>"$B/jobs"; }
W="-Wall -Wextra -pedantic -Werror"
GCC=${GCC:-gcc}
GXX=${GXX:-g++}
CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
have() { command -v "$1" >/dev/null 2>&1; }

for cc in "$GCC -std=c99" "$CLANG -std=c99" "$GXX -x c++ -std=c++11" "$GXX -x c++ -std=c++17" \
          "$CLANGXX -x c++ -std=c++11" "$CLANGXX -x c++ -std=c++17"; do
    have "${cc%% *}" || continue
    for nd in "" "-DNDEBUG"; do
        for omp in "-fopenmp" ""; do
            for gemm in "" "-DSAM3_SGEMM=cblas_sgemm" "-DSAM3_NO_BLAS"; do
                job "$cc $W $nd $omp $gemm -march=native -fsyntax-only tests/test_compile_impl.c"
            done
        done
        job "$cc $W $nd -fsyntax-only tests/test_compile.c"
    done
done
# the other instruction sets' code paths (C99 and C++17)
for cc in "$GCC -std=c99" "$CLANG -std=c99" "$GXX -x c++ -std=c++17" "$CLANGXX -x c++ -std=c++17"; do
    have "${cc%% *}" || continue
    for arch in "-march=x86-64-v3" "-march=x86-64"; do
        for gemm in "" "-DSAM3_NO_BLAS"; do job "$cc $W -fopenmp $gemm $arch -fsyntax-only tests/test_compile_impl.c"; done
    done
done
# the optimiser's warnings: -O0..-O3 for C99 (-DNDEBUG: asserts hide unused variables), -O2 for C++17
for cc in "$GCC -std=c99" "$CLANG -std=c99"; do
    have "${cc%% *}" || continue
    for o in "-O0 -DNDEBUG" "-O1 -DNDEBUG" -O2 "-O2 -DNDEBUG" "-O3 -DNDEBUG"; do
        job "$cc $W $o -fopenmp -march=native -c -o /dev/null tests/test_compile_impl.c"
    done
    job "$cc $W -O2 -DNDEBUG -DSAM3_NO_BLAS -march=native -c -o /dev/null tests/test_compile_impl.c"
done
for cc in "$GXX -x c++ -std=c++17" "$CLANGXX -x c++ -std=c++17"; do
    have "${cc%% *}" || continue
    job "$cc $W -O2 -fopenmp -march=native -c -o /dev/null tests/test_compile_impl.c"
done
# the reference kernels alone (no SIMD, no BLAS), compiled (-O2: the middle end's warnings too) and as C++
for cc in "$GCC -std=c99" "$CLANG -std=c99" "$GXX -x c++ -std=c++17" "$CLANGXX -x c++ -std=c++17"; do
    have "${cc%% *}" || continue
    job "$cc $W -O2 -fopenmp -DSAM3_REFERENCE_KERNELS -march=native -c -o /dev/null tests/test_compile_impl.c"
done
# the command-line tool's translation units (examples/cli_common.h lists them), each on its own:
# -O2 for the middle end's warnings, sam3_cli.c (it holds sam3.h's implementation, checked above)
# -fsyntax-only; stb headers as the Makefile takes them (STB_INC)
STB_INC=${STB_INC:--isystem /usr/include/stb}
for cc in "$GCC -std=c99" "$CLANG -std=c99"; do
    have "${cc%% *}" || continue
    job "$cc $W -fopenmp $STB_INC -fsyntax-only examples/sam3_cli.c"
    for f in cli_common cli_track cli_dataset cli_outdir image_io sam3_bench; do
        job "$cc $W -O2 -DNDEBUG -fopenmp $STB_INC -c -o /dev/null examples/$f.c"
    done
done
if have x86_64-w64-mingw32-gcc; then
    printf '#include <windows.h>\n#define SAM3_IMPLEMENTATION\n#include "%s/sam3.h"\n' "$(pwd)" >"$B/windows_first.c"
    for cc in "x86_64-w64-mingw32-gcc -std=c99" "x86_64-w64-mingw32-g++ -x c++ -std=c++17" \
              "$CLANG --target=x86_64-w64-mingw32 -std=c99"; do
        for gemm in "-DSAM3_NO_BLAS" "-DSAM3_SGEMM=cblas_sgemm"; do
            job "$cc $W $gemm -march=x86-64-v3 -fsyntax-only $B/windows_first.c"
        done
    done
    job "x86_64-w64-mingw32-gcc -std=c99 $W -O2 -DSAM3_NO_BLAS -march=native -c -o /dev/null $B/windows_first.c"
fi

if have aarch64-linux-gnu-gcc; then # the NEON helpers and FPCR code (no arm64 cblas.h needed)
    for cc in "aarch64-linux-gnu-gcc -std=c99" "aarch64-linux-gnu-g++ -x c++ -std=c++17"; do
        have "${cc%% *}" || continue
        for gemm in "-DSAM3_SGEMM=cblas_sgemm" "-DSAM3_NO_BLAS"; do job "$cc $W -fopenmp $gemm -fsyntax-only tests/test_compile_impl.c"; done
    done
    job "aarch64-linux-gnu-gcc -std=c99 $W -O2 -DNDEBUG -fopenmp -DSAM3_NO_BLAS -c -o /dev/null tests/test_compile_impl.c"
    job "aarch64-linux-gnu-gcc -std=c99 $W -O2 -DSAM3_REFERENCE_KERNELS -c -o /dev/null tests/test_compile_impl.c"
fi

n=$(wc -l <"$B/jobs")
# each job's command and output to its own log; a job that prints anything or fails is a failure
i=0
while read -r line; do
    i=$((i + 1))
    echo "$i $line"
done <"$B/jobs" | xargs -P "$JOBS" -L 1 sh -c 'i=$1; shift; "$@" >"'"$B"'/log.$i" 2>&1 || echo "exit $?" >>"'"$B"'/log.$i"; if [ -s "'"$B"'/log.$i" ]; then { echo "== $*"; cat "'"$B"'/log.$i"; } >"'"$B"'/fail.$i"; fi' sh
fails=$(ls "$B" | grep -c '^fail\.' || true)
cat "$B"/fail.* 2>/dev/null | head -60
rm -f "$B"/log.* "$B"/fail.*
echo "test_warnings: $n compiles, $fails with warnings or errors"
[ "$fails" = 0 ]
