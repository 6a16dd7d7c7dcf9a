#!/bin/sh
# Tests `sam3 segment` on many images (examples/cli_dataset.c) with the tiny model: -i FOLDER (what
# is taken, what is ignored) and -i @LIST (comments, blank lines, paths relative to the list's
# folder, run from another directory); each OUTDIR/STEM/ byte-identical to a one-image run; STEM
# collisions refused; --format coco: the RLE strings decode (a Python restatement of pycocotools'
# decoder, tests/dataset_check.py) to exactly the PNG masks of the same run in --format png, for one
# and for several -t; resumption (all skipped; a half-written image redone; new settings redo all);
# failing images reported, counted, exit 1, the others written; --shard I/N: disjoint, complete,
# merged by `sam3 merge` into a file equal to the unsharded run's coco.json, for a GNU parallel
# recipe (skipped when parallel is absent) and a Slurm job-array recipe (SLURM_ARRAY_TASK_ID and
# SLURM_ARRAY_TASK_COUNT set as sbatch --array=0-2 sets them); COCO's file_names (relative to the
# folder, as listed, or to --image-root), bbox = the mask's bounds, info (date_created from
# SOURCE_DATE_EPOCH or today; a merge keeps the latest) and licenses; usage errors.
#   tests/test_dataset.sh [BUILD_DIR]   (needs BUILD_DIR/sam3 and BUILD_DIR/tiny_a.sam3)
# Prints "test_dataset: N passed, N failed" last; exits non-zero on failure.
B=${1:-build}
PY=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export SOURCE_DATE_EPOCH=1700000000 # info's date_created: 2023-11-14, whatever the day of the run
SAM3=$(cd "$(dirname "$B/sam3")" && pwd)/sam3
MODEL=$(cd "$(dirname "$B/tiny_a.sam3")" && pwd)/tiny_a.sam3
T=$B/test_dataset
rm -rf "$T" && mkdir -p "$T" || exit 1
T=$(cd "$T" && pwd)
"$PY" tests/dataset_check.py make "$T/imgs" || exit 1
STEMS="a_dog b_street c_cat d_field e_grey"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# run WANT_RC NAME ARGS...: runs sam3 ARGS (stdout/stderr in $T/out, $T/err), checks the exit code
run() {
    want=$1
    name=$2
    shift 2
    "$SAM3" "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$name: exit $got, expected $want; stderr: $(tail -c 400 "$T/err")"; fi
    return 0
}
# summary NAME "D done, S skipped ..." : the last stderr line is the run's summary with these counts
summary() {
    if tail -n 1 "$T/err" | grep -q "$2"; then ok; else bad "$1: wanted a summary with '$2', got: $(tail -n 1 "$T/err")"; fi
}
SEG="segment -m $MODEL --threshold 0 --threads 2"

# --- a folder, --format png, one prompt: each OUTDIR/STEM/ as a one-image run writes it ---
run 0 "folder, png" $SEG -i "$T/imgs" -t "a cat" -o "$T/png1"
summary "folder, png" "5 images: 5 done, 0 skipped (done before), 0 failed"
grep -q "1 file not named" "$T/err" && ok || bad "folder: the ignored README.txt is not reported"
# progress: a line an image, "k/N NAME  X.X img/s  ETA m:ss", and no stage lines without -v
[ "$(grep -c '^[1-5]/5 [a-e]_[a-z]*\.\(png\|PNG\)  [0-9]*\.[0-9] img/s  ETA [0-9]*:[0-5][0-9]$' "$T/err")" -eq 5 ] &&
    ! grep -q "image encoder\|instances" "$T/err" && ok || bad "folder: progress lines: $(cat "$T/err")"
[ "$(ls "$T/png1" | tr '\n' ' ')" = "a_dog b_street c_cat d_field e_grey " ] && ok || bad "folder: OUTDIR holds $(ls "$T/png1" | tr '\n' ' ')"
for s in a_dog e_grey; do
    img=$(ls "$T/imgs/$s".*)
    run 0 "one image $s" $SEG -i "$img" -t "a cat" -o "$T/single/$s"
    if diff -r "$T/single/$s" "$T/png1/$s" >/dev/null; then ok; else bad "OUTDIR/$s differs from a one-image run's output"; fi
done

# --- --format coco: RLE = the PNG masks, one prompt and several ---
run 0 "folder, coco" $SEG -i "$T/imgs" -t "a cat" --format coco -o "$T/coco1"
if r=$("$PY" tests/dataset_check.py rle "$T/png1" "$T/coco1" $STEMS 2>&1); then ok; echo "test_dataset: one prompt: $r"; else bad "coco, one prompt: $r"; fi
if n=$("$PY" tests/dataset_check.py coco "$T/coco1/coco.json" 5 1 --names a_dog.png,b_street.png,c_cat.png,d_field.PNG,e_grey.png \
    --date 2023-11-14 2>&1); then ok; else bad "folder coco.json: $n"; fi
run 0 "folder, png, 2 prompts" $SEG -i "$T/imgs" -t "a cat" -t dog -o "$T/png2"
run 0 "folder, coco, 2 prompts" $SEG -i "$T/imgs" -t "a cat" -t dog --format coco -o "$T/coco2"
if r=$("$PY" tests/dataset_check.py rle "$T/png2" "$T/coco2" $STEMS --prompts 2 2>&1); then ok; echo "test_dataset: two prompts: $r"; else bad "coco, two prompts: $r"; fi
if n=$("$PY" tests/dataset_check.py coco "$T/coco2/coco.json" 5 2 2>&1); then ok; else bad "merged coco.json: $n"; fi
grep -q '"name": "dog"' "$T/coco2/coco.json" && ok || bad "coco.json: no category 'dog'"
run 0 "one image, coco" $SEG -i "$T/imgs/c_cat.png" -t "a cat" --format coco -o "$T/single_coco"
if n=$("$PY" tests/dataset_check.py coco "$T/single_coco/coco.json" 1 1 --names "$T/imgs/c_cat.png" 2>&1); then ok; else bad "one image's coco.json: $n"; fi
d0=$(date -u +%F)
(unset SOURCE_DATE_EPOCH; "$SAM3" $SEG -i "$T/imgs/c_cat.png" -t "a cat" --format coco --image-root "$T" -q -o "$T/today") && ok || bad "today: exit $?"
d1=$(date -u +%F)
if n=$("$PY" tests/dataset_check.py coco "$T/today/coco.json" 1 1 --names imgs/c_cat.png --date "$d0" 2>&1) ||
    n=$("$PY" tests/dataset_check.py coco "$T/today/coco.json" 1 1 --names imgs/c_cat.png --date "$d1" 2>&1); then ok; else bad "today: $n"; fi

# --- resumption ---
cp "$T/coco2/coco.json" "$T/coco2.before"
run 0 "rerun" $SEG -i "$T/imgs" -t "a cat" -t dog --format coco -o "$T/coco2"
summary "rerun skips all" "0 done, 5 skipped (done before), 0 failed"
[ "$(grep -c '^[1-5]/5 [a-e]_[a-z]*\.\(png\|PNG\)  skipped (done before)$' "$T/err")" -eq 5 ] && ok || bad "rerun: progress lines: $(cat "$T/err")"
cmp -s "$T/coco2/coco.json" "$T/coco2.before" && ok || bad "rerun: coco.json changed"
rm "$T/coco2/c_cat/01_dog/results.json" "$T/coco2/e_grey/coco.json" # as if cut off half way
run 0 "rerun after a cut" $SEG -i "$T/imgs" -t "a cat" -t dog --format coco -o "$T/coco2" -v
summary "rerun after a cut" "2 done, 3 skipped (done before), 0 failed"
# -v: each image's stages (image read, encoder, each prompt, writing) before its progress line
[ "$(grep -c '^sam3: image encoder: ' "$T/err")" -eq 2 ] && [ "$(grep -c '^sam3: "\(a cat\|dog\)": [0-9]* instances' "$T/err")" -eq 4 ] &&
    [ "$(grep -c '^sam3: writing .*/: [0-9]* ms$' "$T/err")" -eq 2 ] &&
    [ "$(grep -A1 '^sam3: writing .*/c_cat/' "$T/err" | tail -n 1 | grep -c '^3/5 c_cat\.png  [0-9]*\.[0-9] img/s  ETA ')" -eq 1 ] &&
    ok || bad "-v: stage lines: $(cat "$T/err")"
cmp -s "$T/coco2/coco.json" "$T/coco2.before" && ok || bad "rerun after a cut: coco.json differs"
run 0 "new threshold redoes all" $SEG -i "$T/imgs" -t "a cat" -t dog --format coco --mask-threshold 0.6 -o "$T/coco2"
summary "new threshold" "5 done, 0 skipped"

# --- a list: comments, blank lines, relative paths (to the list's folder), absolute paths ---
mkdir -p "$T/lists" "$T/elsewhere"
printf '# my images\n\n  ../imgs/c_cat.png  \n%s/imgs/a_dog.png\r\n\t# done\n../imgs/e_grey.png\n' "$T" >"$T/lists/set.txt"
(cd "$T/elsewhere" && "$SAM3" $SEG -i @../lists/set.txt -t "a cat" -o out >"$T/out" 2>"$T/err") && ok || bad "list: exit $?: $(tail -c 300 "$T/err")"
summary "list" "3 images: 3 done"
[ "$(ls "$T/elsewhere/out" | tr '\n' ' ')" = "a_dog c_cat e_grey " ] && ok || bad "list: OUTDIR holds $(ls "$T/elsewhere/out" | tr '\n' ' ')"
diff -r "$T/elsewhere/out/c_cat/overlay.png" "$T/png1/c_cat/overlay.png" >/dev/null && ok || bad "list: c_cat differs from the folder run's"
"$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["image"] == "../lists/../imgs/c_cat.png"' "$T/elsewhere/out/c_cat/results.json" \
    && ok || bad "list: results.json's image path"
# COCO file_names: as listed (never made absolute), or relative to --image-root
(cd "$T/elsewhere" && "$SAM3" $SEG -i @../lists/set.txt -t "a cat" --format coco -o outc >"$T/out" 2>"$T/err") && ok || bad "list, coco: $(tail -c 300 "$T/err")"
if n=$("$PY" tests/dataset_check.py coco "$T/elsewhere/outc/coco.json" 3 1 --names "../imgs/c_cat.png,$T/imgs/a_dog.png,../imgs/e_grey.png" 2>&1); then ok
else bad "list, coco: $n"; fi
(cd "$T/elsewhere" && "$SAM3" $SEG -i @../lists/set.txt -t "a cat" --format coco --image-root ../imgs/ -o outr >"$T/out" 2>"$T/err") && ok || bad "--image-root: $(tail -c 300 "$T/err")"
if n=$("$PY" tests/dataset_check.py coco "$T/elsewhere/outr/coco.json" 3 1 --names c_cat.png,a_dog.png,e_grey.png 2>&1); then ok; else bad "--image-root: $n"; fi
run 1 "an image outside --image-root" $SEG -i @"$T/lists/set.txt" -t "a cat" --format coco --image-root "$T/lists" -o "$T/outside"
grep -q "c_cat.png' is not inside --image-root" "$T/err" && [ ! -e "$T/outside" ] && ok || bad "outside --image-root: $(cat "$T/err")"
run 2 "--image-root without --format coco" $SEG -i "$T/imgs" -t "a cat" --image-root "$T/imgs" -o "$T/u"
run 1 "one image outside --image-root" $SEG -i "$T/imgs/a_dog.png" -t "a cat" --format coco --image-root "$T/lists" -o "$T/outside1"
grep -q "a_dog.png' is not inside --image-root" "$T/err" && [ ! -e "$T/outside1" ] && ok || bad "one image outside --image-root: $(cat "$T/err")"

# --- failures: an unreadable image and a missing one do not stop the run ---
printf 'not a png' >"$T/lists/broken.png"
printf 'broken.png\n../imgs/b_street.png\nmissing.png\n' >"$T/lists/bad.txt"
run 1 "failing images" $SEG -i @"$T/lists/bad.txt" -t "a cat" --format coco -o "$T/bad"
summary "failing images" "3 images: 1 done, 0 skipped (done before), 2 failed"
grep -q '^1/3 broken\.png  failed$' "$T/err" && grep -q '^2/3 \.\./imgs/b_street\.png  [0-9.]* img/s  ETA ' "$T/err" && ok ||
    bad "failing images: progress lines: $(cat "$T/err")"
[ -f "$T/bad/b_street/results.json" ] && [ ! -e "$T/bad/broken" ] && [ ! -e "$T/bad/missing" ] && ok || bad "failing images: $(ls "$T/bad")"
grep -q "cannot read image.*broken.png" "$T/err" && grep -q "missing.png" "$T/err" && ok || bad "failing images: not named on stderr"
if n=$("$PY" tests/dataset_check.py coco "$T/bad/coco.json" 1 1 2>&1); then ok; else bad "coco.json with failures: $n"; fi
run 1 "failing images, quiet" $SEG -i @"$T/lists/bad.txt" -t "a cat" --format coco -q -o "$T/bad"
summary "failing images, quiet: the summary still shows" "0 done, 1 skipped (done before), 2 failed"
! grep -q '^[0-9]/3 ' "$T/err" && ok || bad "-q: progress lines: $(cat "$T/err")"

# --- STEM collisions and empty inputs: refused before anything runs ---
mkdir -p "$T/clash" && cp "$T/imgs/a_dog.png" "$T/clash/x.png" && cp "$T/imgs/c_cat.png" "$T/clash/x.jpg"
run 1 "a.png + a.jpg" $SEG -i "$T/clash" -t "a cat" -o "$T/clash_out"
grep -q "would both write OUTDIR/x/" "$T/err" && [ ! -e "$T/clash_out" ] && ok || bad "collision: $(cat "$T/err")"
printf '# nothing\n' >"$T/lists/empty.txt"
run 1 "empty list" $SEG -i @"$T/lists/empty.txt" -t "a cat" -o "$T/empty_out"
run 1 "missing list" $SEG -i @"$T/lists/nope.txt" -t "a cat" -o "$T/empty_out"
echo '{"mine": 1}' >"$T/foreign.json" && mkdir -p "$T/foreign" && cp "$T/foreign.json" "$T/foreign/coco.json"
run 1 "a foreign OUTDIR/coco.json" $SEG -i "$T/imgs" -t "a cat" --format coco -o "$T/foreign"
cmp -s "$T/foreign/coco.json" "$T/foreign.json" && ok || bad "a foreign coco.json was replaced"

# --- shards: disjoint, complete, merged = unsharded ---
REF=$T/coco1/coco.json
for i in 0 1 2; do run 0 "shard $i/3" $SEG -i "$T/imgs" -t "a cat" --format coco --shard $i/3 -o "$T/shard$i"; done
[ "$(grep -c '^[0-9]/[0-9] ' "$T/err")" -eq 1 ] && grep -q '^1/1 c_cat\.png  [0-9.]* img/s  ETA 0:00$' "$T/err" && ok ||
    bad "shard 2/3: progress counts this shard's images: $(cat "$T/err")"
all=$(ls "$T/shard0" "$T/shard1" "$T/shard2" | grep -v : | grep . | sort | tr '\n' ' ')
[ "$all" = "a_dog b_street c_cat d_field e_grey " ] && ok || bad "shards: together they hold '$all'"
[ "$(ls "$T/shard0" | tr '\n' ' ')" = "a_dog d_field " ] && [ ! -e "$T/shard0/coco.json" ] && ok || bad "shard 0/3: $(ls "$T/shard0" | tr '\n' ' ')"
run 0 "merge" merge -o "$T/merged.json" "$T/shard0" "$T/shard1" "$T/shard2"
cmp -s "$T/merged.json" "$REF" && ok || bad "merged shards differ from the unsharded coco.json"
run 1 "merge of different settings" merge -o "$T/mixed.json" "$T/shard0" "$T/coco2"
[ ! -e "$T/mixed.json" ] && ok || bad "merge of different settings wrote a file"
run 1 "merge of overlapping runs" merge -o "$T/dup.json" "$T/shard0" "$T/coco1"
# shards run on other days: the merge keeps the latest date_created, and nothing else changes
SOURCE_DATE_EPOCH=1700200000 "$SAM3" $SEG -i "$T/imgs" -t "a cat" --format coco --shard 1/3 -q -o "$T/later1" && ok || bad "shard 1/3, later"
run 0 "merge of days" merge -o "$T/days.json" "$T/shard0" "$T/later1" "$T/shard2"
if n=$("$PY" tests/dataset_check.py coco "$T/days.json" 5 1 --date 2023-11-17 2>&1); then ok; else bad "merge of days: $n"; fi
[ "$(grep -v '"info"' "$T/days.json")" = "$(grep -v '"info"' "$REF")" ] && ok || bad "merge of days: more than info differs"

# Slurm job array (README): sbatch --array=0-2 sets these; the job script runs this command line
for id in 0 1 2; do
    SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=3 sh -c \
        '"$0" segment -m "$1" -i "$2" -t "a cat" --threshold 0 --threads 2 --format coco -q \
         --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT -o "$3"' "$SAM3" "$MODEL" "$T/imgs" "$T/slurm" \
        && ok || bad "slurm task $id"
done
run 0 "slurm merge" merge -o "$T/slurm.json" "$T/slurm"
cmp -s "$T/slurm.json" "$REF" && ok || bad "slurm: merged file differs from the unsharded coco.json"

# GNU parallel (README): one shard per job slot
if command -v parallel >/dev/null 2>&1; then
    parallel --will-cite -j 3 "$SAM3" segment -m "$MODEL" -i "$T/imgs" -t "'a cat'" --threshold 0 --threads 1 --format coco -q \
        --shard {}/3 -o "$T/par/{}" ::: 0 1 2 && ok || bad "parallel: a job failed"
    run 0 "parallel merge" merge -o "$T/par.json" "$T/par/0" "$T/par/1" "$T/par/2"
    cmp -s "$T/par.json" "$REF" && ok || bad "parallel: merged file differs from the unsharded coco.json"
else
    echo "test_dataset: GNU parallel not installed (Debian package 'parallel'): its recipe is not tested"
fi

# --- usage errors ---
run 2 "--shard 3/3" $SEG -i "$T/imgs" -t x --shard 3/3 -o "$T/u"
run 2 "--shard -1/3" $SEG -i "$T/imgs" -t x --shard -1/3 -o "$T/u"
run 2 "--shard 1" $SEG -i "$T/imgs" -t x --shard 1 -o "$T/u"
run 2 "--shard with one file" $SEG -i "$T/imgs/a_dog.png" -t x --shard 0/2 -o "$T/u"
run 2 "--format jpeg" $SEG -i "$T/imgs" -t x --format jpeg -o "$T/u"
run 2 "merge without -o" merge "$T/shard0"
[ ! -e "$T/u" ] && ok || bad "a usage error wrote $T/u"

echo "test_dataset: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
