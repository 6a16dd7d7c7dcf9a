#!/bin/sh
# sam3.h against Hugging Face transformers (fp32) on the same CPU, same random weights, same image
# size, in one run: at all cores and at 2 pinned cores. Run on the GPU machine (it has torch):
#
#   tools/bench_vs_pytorch.sh CHECKPOINT_DIR MODEL.sam3 [RUNS]
#
# CHECKPOINT_DIR is a Hugging Face checkpoint (e.g. from tools/make_random_checkpoint.py) and
# MODEL.sam3 its conversion. Prints both tables for each thread count, then the two side by side:
# the two programs alternate run by run (tools/bench_pytorch.py --pair), as these shared machines'
# speed drifts within minutes. Results go in the README.
set -eu
cd "$(dirname "$0")/.."
SRC=$1
MODEL=$2
RUNS=${3:-3}
PY=${PYTHON:-python3}
ALL=$(nproc)
make -s build/sam3
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $ALL cores; $(date -u +%Y-%m-%d)"
for T in "$ALL" 2; do
    PIN=""
    [ "$T" = 2 ] && PIN="taskset -c 0,1"
    echo "== $T threads ${PIN:+(pinned: $PIN)}"
    OMP_NUM_THREADS=$T $PIN $PY tools/bench_pytorch.py "$SRC" --threads "$T" --runs "$RUNS" \
        --pair "build/sam3 bench -m '$MODEL' --threads $T --runs $RUNS --paired"
done
