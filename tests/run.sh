#!/bin/sh
# The test index: every suite of `make test`, one line each with what it covers. Each suite runs
# to its end whatever the others did; its output goes to BUILD/logs/NAME.log (the tail of a failing
# one is shown), a line PASS/FAIL/SKIP per suite, and last one line "tests: N passed, N failed,
# N skipped" (suites). Exits 1 if any suite failed.
#   sh tests/run.sh BUILD [c|all]     (c: the C suites alone, as make asan / ubsan run them)
# Environment: PYTHON, SHARED (../shared), REF_VIDEO=0 (no video test on the reference kernels),
# ISAS="PATH..." (kernel paths, SAM3_ISA: the suites marked k run again on each; default: avx2
# and reference, those of them this CPU runs besides the one it picks), MATRIX="DIR..." (builds
# of the kernel tests for other paths, e.g. BUILD/avx2 made with ARCH=-march=x86-64-v3: the
# suites marked b run again on each), E2E_SKIP_ISAS="PATH..." (paths of ISAS the suites marked e,
# the command line end to end, skip: make asan skips the plain-C path there, whose kernels the
# parity, video and robust suites run under the sanitizers anyway).
B=${1:-build}
SET=${2:-all}
PY=${PYTHON:-/usr/bin/python3}
SH=${SHARED:-../shared}
export PYTHON="$PY" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
pass=0 fail=0 skip=0
failed=
if [ -z "${ISAS+x}" ]; then
    ISAS=
    native=$("$B/sam3" --version 2>/dev/null | sed -n 's/^kernels: //p')
    for p in avx2 reference; do
        [ "$p" != "$native" ] && SAM3_ISA=$p "$B/sam3" --version >/dev/null 2>&1 && ISAS="$ISAS $p"
    done
fi

# suite NAME TAGS DESCRIPTION COMMAND: TAGS c (a C suite: test-c, asan, ubsan), a (make test only),
# k (again on each path of ISAS), e (k, less E2E_SKIP_ISAS), b (again on each MATRIX build). COMMAND runs in sh with $B the
# build; exit 77 means skipped.
e2e_isas() {
    for p in $ISAS; do
        case " ${E2E_SKIP_ISAS:-} " in *" $p "*) ;; *) echo "$p" ;; esac
    done
}
suite() {
    name=$1 tags=$2 what=$3 cmd=$4
    case "$SET:$tags" in c:*c*|all:*) ;; *) return 0 ;; esac
    for run in "-" $(case $tags in *e*) e2e_isas ;; *k*) echo "$ISAS" ;; esac) $(case $tags in *b*) echo "$MATRIX" ;; esac); do
        d=$B isa=
        case $run in -) ;; */*) d=$run ;; *) isa=$run ;; esac
        tag=$name
        [ -z "$isa" ] || tag="$name@$isa"
        [ "$d" = "$B" ] || tag="$name@$(basename "$d")"
        mkdir -p "$d/logs"
        log=$d/logs/$(echo "$tag" | tr @ _).log
        if [ -n "$isa" ]; then (B=$d; export SAM3_ISA=$isa; eval "$cmd") >"$log" 2>&1; else (B=$d; eval "$cmd") >"$log" 2>&1; fi
        rc=$?
        if [ $rc -eq 0 ]; then
            pass=$((pass + 1))
            echo "PASS $tag: $what ($(tail -n 1 "$log" | cut -c1-80))"
        elif [ $rc -eq 77 ]; then
            skip=$((skip + 1))
            echo "SKIP $tag: $(tail -n 1 "$log" | cut -c1-120)"
        else
            fail=$((fail + 1))
            failed="$failed $tag"
            echo "FAIL $tag: $what (exit $rc; $log):"
            tail -n 15 "$log" | sed 's/^/    /'
        fi
    done
}
# shared/ holds the photos some suites cut their frames from: exit 77 (skipped) without it
need_shared() { [ -f "$SH/images/test_image.jpg" ] || { echo "skipped: no $SH/images/test_image.jpg (copy of shared/)"; exit 77; }; }
tail1() { out=$("$@") || { echo "$out"; return 1; }; echo "$out" | tail -n 1; }

suite convert a "tools/convert.py on the tiny checkpoints, dtypes, layouts" '"$PY" tests/test_convert.py'
suite convert_robust a "the converter on hostile inputs" '"$PY" tests/test_convert_robust.py'
suite layout a "sam3.h's room rules: contents block, kernels and allocation in their rooms, function length" \
    '"$PY" tests/check_layout.py --self-test && "$PY" tests/check_layout.py sam3.h'
suite compile c "C and C++ builds, several translation units, SAM3_STATIC" '$B/test_compile_c && $B/test_compile_cpp'
suite format c "the .sam3 reader on ~60 corrupt files" '$B/test_format $B/tiny_a.sam3 $B/tiny_b.sam3 $B/tiny_a_bf16.sam3'
suite rle c "sam3_mask_to_rle against COCO's RLE strings: known ones, round trips, the buffer contract" '$B/test_rle'
suite tokenizer c "CLIP BPE against the reference ids" '"$PY" tests/make_tokenizer_file.py "$SH/clip" $B/tok_clip.sam3 &&
    $B/test_tokenizer tests/data/tokenizer_golden_synth.txt $B/tok_synth.sam3 tests/data/tokenizer_golden_clip.txt $B/tok_clip.sam3 --model $B/tiny_a.sam3'
suite parity ck "every stage against HF on the tiny SAM 3 and SAM 1 models, segment everything, quick_gelu" '
    for n in tiny_a tiny_b sam1_a sam1_b; do tail1 $B/test_parity --model $B/$n.sam3 --data tests/data/$n || exit 1; done
    tail1 $B/test_parity --model $B/qgelu/model.sam3 --data $B/qgelu'
suite parity_bf16 ck "bf16 files and bf16 products against the f32 references" '
    for n in tiny_a tiny_b sam1_a sam1_b; do tail1 $B/test_parity --model $B/${n}_bf16.sam3 --data tests/data/$n --bf16 || exit 1; done
    tail1 $B/test_parity --model $B/tiny_a.sam3 --data tests/data/tiny_a --bf16 &&
    tail1 $B/test_parity --model $B/tiny_b_bf16.sam3 --data tests/data/tiny_b --bf16 --bf16-attention'
suite image_size ck "smaller inputs (sam3_load_options.image_size, convert.py --image-size) against HF built at that size" '
    tail1 $B/test_parity --model $B/tiny_a.sam3 --data tests/data/tiny_a_s70 --image-size 70 &&
    tail1 $B/test_parity --model $B/tiny_a_s70.sam3 --data tests/data/tiny_a_s70 &&
    tail1 $B/test_parity --model $B/tiny_b.sam3 --data tests/data/tiny_b_s84 --image-size 84 &&
    tail1 $B/test_parity --model $B/tiny_a_bf16.sam3 --data tests/data/tiny_a_s70 --image-size 70 --bf16'
suite saved_concept ck "sam3_concept: bit-identical on its image, HF on another, other models and damaged files refused" \
    'rm -rf $B/concept_seeds && mkdir -p $B/concept_seeds &&
    tail1 $B/test_saved_concept --model $B/tiny_a.sam3 --data tests/data/tiny_a --other $B/tiny_b.sam3 --same-config $B/tiny_a_alt.sam3 --video $B/video_a.sam3 \
        --seeds $B/concept_seeds && SAM3_FUZZ_CONCEPT_MODEL=$B/tiny_a.sam3 $B/fuzz_concept_replay $B/concept_seeds'
suite vocab ck "sam3_segment_many: each prompt bit-identical to it alone (f32, bf16; 1 and 2 threads), its errors" \
    '$B/test_vocab --model $B/tiny_a.sam3 --model $B/tiny_a_bf16.sam3'
suite video ck "the clicked-object tracker against HF, 10 frames (f32; bf16 on the attention tiles)" 'need_shared; $B/test_video --model $B/video_a.sam3 \
    --ref tests/data/video_a/ref_video.sam3 --photo "$SH/images/test_image.jpg" --unsupported $B/tiny_a.sam3 &&
    (unset SAM3_ISA; tail1 $B/test_video --model $B/video_a.sam3 --ref tests/data/video_a/ref_video.sam3 --photo "$SH/images/test_image.jpg" \
        --parity-only --bf16 --bf16-attention)'
suite concept ck "the concept tracker: mask ops, HF streams in both modes" 'need_shared; "$PY" tests/concept_ops.py $B/concept_ops.sam3 &&
    $B/test_concept --ops $B/concept_ops.sam3 --model $B/video_a.sam3 --ref tests/data/concept_a/ref_concept.sam3 --photo "$SH/images/test_image.jpg"'
suite concept_refs c "the concept tracker on five more seeds, photos and prompts (native path)" 'need_shared; sh tests/test_concept_refs.sh $B "$SH"'
suite gemm cb "the built-in SGEMM and the bf16 GEMMs against double sums" 'unset SAM3_ISA; $B/test_gemm'
suite noblas c "parity without BLAS (the built-in SGEMM)" 'for n in tiny_a tiny_b sam1_a sam1_b; do
    tail1 $B/test_parity_noblas --model $B/$n.sam3 --data tests/data/$n || exit 1; done'
# test_kernels, test_gemm and the *_ref programs are built for one path each: a SAM3_ISA from the
# caller (SAM3_ISA=avx2 make test) names a path they do not hold, so they run without it
suite kernels cb "fast kernels against the sam3__ref_ ones, ragged and hostile" 'unset SAM3_ISA; $B/test_kernels $B/tiny_a.sam3'
suite reference c "parity and video on the reference kernels (plain C)" 'unset SAM3_ISA; for n in tiny_a tiny_b sam1_a sam1_b; do
    tail1 $B/test_parity_ref --model $B/$n.sam3 --data tests/data/$n || exit 1; done
    [ "${REF_VIDEO:-1}" = 0 ] || ! [ -f "$SH/images/test_image.jpg" ] || tail1 $B/test_video_ref --model $B/video_a.sam3 \
        --ref tests/data/video_a/ref_video.sam3 --photo "$SH/images/test_image.jpg" --unsupported $B/tiny_a.sam3'
suite robust ck "the API under abuse: bad arguments, failing allocators, aborts" '$B/test_robust $B/tiny_a.sam3'
suite threads ck "contexts on one model from threads; 1, 2, 3 threads give the same bits" '$B/test_threads $B/tiny_a.sam3 &&
    $B/test_threads $B/tiny_a.sam3 3 1 2'
suite fuzz_replay c "the fuzz seeds and the kept corpus, replayed" '$B/fuzz_replay $B/fuzz_seeds $B/fuzz_kept'
suite examples c "embed_min, camera_loop, track_loop" 'sh tests/test_examples.sh $B'
suite cli cke "sam3 segment / points / everything / info / bench on the tiny models; --threads 1, 2, 4 the same bytes" 'sh tests/test_cli.sh $B'
suite track cke "sam3 track: frames, Y4M, prompts, --threads 1 and 2 the same bytes" 'sh tests/test_track.sh $B'
suite cli_robust c "the CLI on hostile command lines and files" 'sh tests/test_cli_robust.sh $B'
suite dataset c "folders, lists, shards, COCO, sam3 merge" 'sh tests/test_dataset.sh $B'
suite y4m c "the Y4M reader on valid and hostile streams, the writer on their frames (fuzz seeds)" 'rm -rf $B/y4m_seeds &&
    "$PY" tests/make_y4m_seeds.py $B/y4m_seeds && $B/fuzz_y4m_replay $B/y4m_seeds'
suite hardening c "hostile folders, lists, streams, shards, files and arguments end cleanly" 'sh tests/test_hardening.sh $B'
suite image_io c "the CLI's JPEG/PNG reader against djpeg, hostile images" 'sh tests/test_image_io.sh $B'
suite outdir c "the output-folder writer: links, reruns, manifests" '$B/test_outdir $B/test_outdir.d'
suite quickstart a "sam3.h's QUICK START compiles and runs as printed" '"$PY" tests/test_quickstart.py sam3.h examples/embed_min.c'
suite install a "make lib install, pkg-config, a fresh program" 'CC="${CC:-cc}" MAKE="${MAKE:-make}" sh tests/test_install.sh $B'
suite python a "the sam3h package: pip install offline into a venv, then the binding against the CLI" 'CC="${CC:-cc}" "$PY" tests/test_python.py $B'

[ -z "$failed" ] || echo "failed:$failed"
echo "kernel paths: $("$B/sam3" --version 2>/dev/null | sed -n 's/^kernels: //p') (native)${ISAS:+, again on$ISAS}${MATRIX:+, builds $MATRIX}"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
