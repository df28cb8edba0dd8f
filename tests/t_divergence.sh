#!/usr/bin/env bash
# t_divergence.sh: a run that diverges stops in the step where a non-finite (or unsummable)
# loss or gradient appears, on any rank, with the exact and the float reduction: exit 1 naming
# the step, the tensor and --lr; nothing non-finite logged or checkpointed; the last good
# checkpoint intact and resumable.
. "$(dirname "$0")/lib.sh"

"$WILDCPU" synth --out "$T/r128" --size 128 --tile 128 >/dev/null 2>&1 || { notok "synth"; finish; }
common=(--tiles "$T/r128/tiles.vrt" --patch 32 --batch 4 --micro-batch 4 --log-every 1
        --no-predict --ckpt-every 1 --keep 100)
base=("${common[@]}" --fresh)

# every number of a JSON-lines file is finite (Python's json would accept NaN and Infinity)
finite_jsonl() {
    $PY - "$1" <<'PY'
import json, sys
def bad(c): raise ValueError("non-finite constant " + c)
for line in open(sys.argv[1]):
    d = json.loads(line, parse_constant=bad)
    if d.get("type") == "train" and not abs(d["loss"]) < 1e3:
        raise SystemExit("loss %r logged" % d["loss"])
PY
}
# the newest checkpoint of a run is valid and holds finite parameters
last_ckpt_ok() {
    local f
    f=$(ls "$1"/checkpoints/ckpt-*.wcp | tail -1)
    [ -n "$f" ] && "$WILDCPU" info "$f" >"$T/info.out" 2>&1 && grep -q "every section verified" "$T/info.out"
}

# (--warmup 3: the first step's update still gives finite outputs, the second's loss is not;
# no checkpoint before it, so that the step's own checks find it)
for mode in exact fast; do
    extra=()
    [ $mode = fast ] && extra=(--fast-reduce)
    d=$T/lr100-$mode
    timeout 300 "$WILDCPU" "${base[@]}" "${extra[@]}" --lr 100 --warmup 3 --steps 10 --ckpt-every 1000 --out "$d" >"$d.log" 2>&1
    s=$?
    if [ $s -eq 1 ] && grep -Eq "step 2: training diverged: .*not finite.*no checkpoint was written before it; lower --lr \(now 100\).*rerun with --fresh" "$d.log" &&
        ! grep -q "resume from the last checkpoint" "$d.log" &&
        finite_jsonl "$d/metrics.jsonl" 2>"$T/jsonl.err" && [ -z "$(ls "$d/checkpoints")" ] &&
        [ "$(json "$d/report.json" status)" = failed ] &&
        json "$d/report.json" error | grep -q "^step 2: training diverged: " &&
        grep -q "^Status: \*\*failed\*\*: step 2: training diverged: " "$d/report.md" &&
        grep -q "given this directory uses its newest checkpoint (there was none when this report was written)" "$d/report.md"; then
        ok "--lr 100 ($mode reduction): stops in step 2, exit 1, nothing non-finite logged; the message and report say no checkpoint was written"
    else
        notok "--lr 100 ($mode reduction)" "status $s: $(grep -E 'error|diverged' "$d.log" | head -2) $(cat "$T/jsonl.err") $(ls "$d/checkpoints")"
    fi
done
# ... and with a checkpoint due after step 1, its update is checked before it is saved: the loss
#     of the last micro-batches with the new weights exploded (before 2026-12-07 it was saved,
#     and the next step's loss found it)
d=$T/lr100-saved
timeout 300 "$WILDCPU" "${base[@]}" --lr 100 --warmup 3 --steps 10 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "step 1: training diverged: after its update the loss of the last micro-batches is [0-9.e+]* nats per pixel ([0-9.e+-]* before it), more than 100 times the 0.693 .*its state was not saved: no checkpoint was written before it" "$d.log" &&
    [ -z "$(ls "$d/checkpoints")" ] \
    && ok "--lr 100, a checkpoint due after step 1: its update is checked first, exit 1, nothing saved" \
    || notok "an update about to be saved whose loss exploded" "status $s: $(grep -m1 diverged "$d.log")"

# The last step's update blows the weights up and nothing checks them after it (no validation,
# no next step): the run is a divergence, not a finished model; no checkpoint keeps it, no map
d=$T/lr100-last
timeout 300 "$WILDCPU" --tiles "$T/r128/tiles.vrt" --patch 32 --batch 4 --micro-batch 4 \
    --val-fraction 0 --steps 1 --lr 100 --warmup 1 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "step 1: training diverged: after its update the network's output is not finite" "$d.log" &&
    [ -z "$(ls "$d/checkpoints")" ] && [ ! -e "$d/risk.tif" ] \
    && ok "a last update that blows the weights up (--val-fraction 0): exit 1, no checkpoint, no map" \
    || notok "last update diverging" "status $s: $(grep -E 'error|diverged' "$d.log" | head -2) $(ls "$d" "$d/checkpoints")"

# A NaN or infinity on ONE rank of two (the hook WILDCPU_TEST_POISON=STEP:RANK:WHAT), in step 3:
# both ranks stop in step 3; the rerun without it resumes from step 2 and ends equal to a run
# that never met it.
args=("${common[@]}" --batch 8 --steps 5 --seed 4) # 2 micro-batches: one per rank
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
ref=$(digest "$T/ref/checkpoints/ckpt-00000005.wcp")
[ -n "$ref" ] || notok "reference run" "$(tail -3 "$T/ref.log")"
for mode in exact fast; do
    extra=()
    [ $mode = fast ] && extra=(--fast-reduce)
    [ $mode = fast ] && { mpirun_n 2 "$WILDCPU" "${args[@]}" "${extra[@]}" --out "$T/reffast" >"$T/reffast.log" 2>&1
                          reff=$(digest "$T/reffast/checkpoints/ckpt-00000005.wcp"); }
    for what in grad inf loss; do
        d=$T/poison-$mode-$what
        WILDCPU_TEST_POISON=3:1:$what mpirun_n 2 -x WILDCPU_TEST_POISON "$WILDCPU" "${args[@]}" \
            "${extra[@]}" --out "$d" >"$d.log" 2>&1
        s=$?
        want="the gradient of [^ ]+ is not finite"
        [ $what = loss ] && want="the loss of 1 micro-batch is not finite"
        n_err=$(grep -c "training diverged" "$d.log")
        mpirun_n 2 "$WILDCPU" "${args[@]}" "${extra[@]}" --out "$d" >"$d.rerun.log" 2>&1
        s2=$?
        expect=$ref
        [ $mode = fast ] && expect=$reff
        if [ $s -eq 1 ] && grep -Eq "step 3: training diverged: $want" "$d.log" && [ "$n_err" -eq 1 ] &&
            finite_jsonl "$d/metrics.jsonl" 2>/dev/null && [ $s2 -eq 0 ] &&
            grep -q "resuming from .*ckpt-00000002.wcp" "$d.rerun.log" &&
            [ "$(digest "$d/checkpoints/ckpt-00000005.wcp")" = "$expect" ]; then
            ok "$what on rank 1 of 2 in step 3 ($mode): both stop in step 3, exit 1; rerun resumes from 2, equal"
        else
            notok "$what on rank 1 of 2 ($mode)" "status $s/$s2 errors $n_err digest $(digest "$d/checkpoints/ckpt-00000005.wcp") vs $expect: $(grep -E 'error|diverged|resuming' "$d.log" "$d.rerun.log" | head -3)"
        fi
    done
done

# Patches that cannot be read on ONE rank of two (WILDCPU_TEST_POISON=3:1:read, as a tile that
# became unreadable): every rank ends in step 3 with status 1 instead of rank 1 aborting the job,
# and the report says why, naming rank 1 (its message was in rank 1's log only). The session
# after it fails at its first step (no step done): its report is rewritten all the same, with
# this cause, not left describing the session before (the diverged run of $T/poison-exact-grad,
# rerun to its end, then poisoned again here). The rerun without it ends equal to the reference.
d=$T/unread
WILDCPU_TEST_POISON=3:1:read mpirun_n 2 -x WILDCPU_TEST_POISON "$WILDCPU" "${args[@]}" --out "$d" \
    >"$d.log" 2>&1
s=$?
error_of() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["error"])' "$1/report.json"; }
e1=$(error_of "$d" 2>&1)
WILDCPU_TEST_POISON=3:0:grad mpirun_n 2 -x WILDCPU_TEST_POISON "$WILDCPU" "${args[@]}" --out "$d" \
    >"$d.diverged.log" 2>&1
e_div=$(error_of "$d" 2>&1)
WILDCPU_TEST_POISON=3:1:read mpirun_n 2 -x WILDCPU_TEST_POISON "$WILDCPU" "${args[@]}" --out "$d" \
    >"$d.again.log" 2>&1
s2=$?
e2=$(error_of "$d" 2>&1)
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$d" >"$d.rerun.log" 2>&1
s3=$?
want="rank 1: step 3: micro-batch 2 could not be read \(WILDCPU_TEST_POISON\); then: step 3: reading training patches failed \(see above\)"
if [ $s -eq 1 ] && [ $s2 -eq 1 ] && [ $s3 -eq 0 ] && echo "$e1" | grep -Eq "^$want$" &&
    echo "$e_div" | grep -q "^step 3: training diverged" && echo "$e2" | grep -Eq "^$want$" &&
    ! grep -q "MPI_ABORT" "$d.log" "$d.again.log" &&
    [ "$(digest "$d/checkpoints/ckpt-00000005.wcp")" = "$ref" ]; then
    ok "patches unreadable on rank 1 of 2 in step 3: both end (status 1, no abort), report.json's error names rank 1's cause, also for a session that did no step; rerun equal"
else
    notok "patches unreadable on rank 1 of 2" "status $s/$s2/$s3, errors '$e1' / '$e_div' / '$e2': $(grep -E 'error|ABORT' "$d.log" "$d.again.log" | head -4)"
fi

# A checkpoint whose weights give no finite output anywhere (made from the reference run's
# last one, its parameters times 1e30; CRC valid): predict and evaluate refuse it with status 1,
# the map the user had stays, no metrics are written
"$PY" "$ROOT/tests/wcp.py" edit "$T/ref/checkpoints/ckpt-00000005.wcp" "$T/blown.wcp" \
    scale=params:1e30 || notok "wcp.py scale"
"$WILDCPU" predict --tiles "$T/r128/tiles.vrt" --checkpoint "$T/ref" --out "$T/had.tif" \
    >"$T/had.log" 2>&1 || notok "a map to keep" "$(tail -2 "$T/had.log")"
before=$(sha256sum <"$T/had.tif")
"$WILDCPU" predict --tiles "$T/r128/tiles.vrt" --checkpoint "$T/blown.wcp" --out "$T/had.tif" \
    >"$T/blown.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "gives no finite output on any of the .* its weights have diverged" "$T/blown.log" &&
    [ "$(sha256sum <"$T/had.tif")" = "$before" ] \
    && ok "predict with a model that gives no finite output: exit 1, the old map unchanged" \
    || notok "predict with a blown-up model" "status $s: $(grep -E 'error|warn' "$T/blown.log" | head -2)"
"$WILDCPU" evaluate --tiles "$T/r128/tiles.vrt" --checkpoint "$T/blown.wcp" --out "$T/blown.json" \
    >"$T/blown-ev.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "gives no finite output .*nothing scored" "$T/blown-ev.log" && [ ! -e "$T/blown.json" ] \
    && ok "evaluate with a model that gives no finite output: exit 1, no metrics" \
    || notok "evaluate with a blown-up model" "status $s: $(grep -E 'error|warn' "$T/blown-ev.log" | head -2)"

# a model diverged on part of the ground only (a logistic model's weights times 1e38: its sum
# overflows, inf - inf, where ordinary inputs add up, and nowhere else): its map's holes are
# blamed on the model, whose inputs there lie within 8 standard deviations, not on the raster
# (tests/t_predict_nonfinite.sh: hostile values do not)
"$WILDCPU" --tiles "$T/r128/tiles.vrt" --out "$T/lref" --model logistic --patch 32 --batch 4 \
    --micro-batch 4 --steps 5 --lr 0.1 --no-predict >"$T/lref.log" 2>&1 &&
    "$PY" "$ROOT/tests/wcp.py" edit "$T/lref/checkpoints/ckpt-00000005.wcp" "$T/partly.wcp" \
        scale=params:1e38 || notok "a logistic model to blow up" "$(tail -2 "$T/lref.log")"
# That is a diverged model: no map is written (a map there stays; until 2026-12-07 one with holes
# replaced it, status 0), and evaluate scores nothing.
"$WILDCPU" predict --tiles "$T/r128/tiles.vrt" --checkpoint "$T/lref" --out "$T/partly.tif" >"$T/partly0.log" 2>&1 ||
    notok "an earlier map" "$(tail -2 "$T/partly0.log")"
before=$(cksum <"$T/partly.tif")
"$WILDCPU" predict --tiles "$T/r128/tiles.vrt" --checkpoint "$T/partly.wcp" --out "$T/partly.tif" \
    >"$T/partly.log" 2>&1
s=$?
n=$(grep -o "error: predict: the model .*partly.wcp (step 5) gives a non-finite output on [0-9]* of the [0-9]* pixels of .*tiles.vrt with every input, in windows whose inputs all lie within 8 training standard deviations of their mean: its weights have diverged .*no map written" "$T/partly.log" | sed 's/.*non-finite output on \([0-9]*\) of.*/\1/')
"$WILDCPU" evaluate --tiles "$T/r128/tiles.vrt" --checkpoint "$T/partly.wcp" --out "$T/partly-metrics.json" \
    >"$T/partly-ev.log" 2>&1
s2=$?
[ $s -eq 1 ] && [ "${n:-0}" -gt 0 ] && [ "$(cksum <"$T/partly.tif")" = "$before" ] &&
    [ $s2 -eq 1 ] && grep -q "its weights have diverged .*nothing scored" "$T/partly-ev.log" && [ ! -e "$T/partly-metrics.json" ] \
    && ok "a model diverged on part of the ground ($n pixels of ordinary inputs): exit 1, no map (the earlier one stays), nothing scored" \
    || notok "a partly diverged model's map" "status $s $s2: $(grep -E 'error|non-finite' "$T/partly.log" "$T/partly-ev.log" | head -2)"

# Values far outside the training range in the validation blocks alone (an undeclared nodata of
# -3.4e38 and 3.4e38 in two bands there): the network's output is not finite on them, which is
# the data's doing, not a divergence: exit 1 naming the band and the nodata to declare, never
# "training diverged ... lower --lr", which no rate would change
split=(--patch 32 --batch 4 --micro-batch 4 --val-block 32 --seed 2 --no-predict --oracle '')
"$WILDCPU" --tiles "$T/r128/tiles.vrt" "${split[@]}" --steps 1 --out "$T/vsplit" >"$T/vsplit.log" 2>&1 ||
    notok "a run to find the validation blocks" "$(tail -2 "$T/vsplit.log")"
# (huge: slope 3.4e38 and temp_max -3.4e38 at the validation pixels; range: ndvi -3.4e38 there,
# beyond float's range once divided by its small std)
make_hostile() {
"$PY" - "$T/r128/tiles.vrt" "$T/vsplit/split.tif" "$T/val$1" "$1" <<'PY' || notok "writing the $1 raster"
import os, sys
from osgeo import gdal
src, split, out, mode = sys.argv[1:]
hostile = {"huge": {"slope": 3.4e38, "temp_max": -3.4e38}, "range": {"ndvi": -3.4e38},
           "fill": {"ndvi": -9999.5}}[mode]
ds, sp = gdal.Open(src), gdal.Open(split)
val = sp.GetRasterBand(1).ReadAsArray() == 2
os.makedirs(out)
files = []
for i in range(1, ds.RasterCount + 1):
    b = ds.GetRasterBand(i)
    a = b.ReadAsArray()
    if b.GetDescription() in hostile:
        a[val & (a != b.GetNoDataValue())] = hostile[b.GetDescription()]
    f = "%s/b%02d.tif" % (out, i)
    o = gdal.GetDriverByName("GTiff").Create(f, ds.RasterXSize, ds.RasterYSize, 1, b.DataType)
    o.SetGeoTransform(ds.GetGeoTransform()), o.SetProjection(ds.GetProjection())
    ob = o.GetRasterBand(1)
    ob.SetDescription(b.GetDescription()), ob.SetNoDataValue(b.GetNoDataValue())
    ob.WriteArray(a)
    o = None
    files.append(f)
v = gdal.BuildVRT(out + "/tiles.vrt", files, separate=True)
for i in range(1, ds.RasterCount + 1):
    v.GetRasterBand(i).SetDescription(ds.GetRasterBand(i).GetDescription())
v = None
PY
}
make_hostile huge
d=$T/valhuge-run
timeout 300 "$WILDCPU" --tiles "$T/valhuge/tiles.vrt" "${split[@]}" --steps 2 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "validation after step [0-9]*: the network's output is not finite on [0-9]* pixels, each near values of its features beyond 8 training standard deviations .*band 2 (slope)).*not a divergence of training.*gdal_edit.py -a_nodata" "$d.log" &&
    ! grep -q "training diverged" "$d.log" && [ "$(json "$d/report.json" status)" = failed ] \
    && ok "values far outside the training range in the validation blocks alone: exit 1, the band named, not called a divergence" \
    || notok "hostile values in the validation blocks" "status $s: $(grep -E 'error' "$d.log" | head -2)"

# ndvi -3.4e38 there: beyond float's range once normalized, those pixels are left out of the
# metrics as nodata, and the run says so (their validation pixels fell silently before); with
# none left, its line says the figures are undefined, never "nan"
make_hostile range
d=$T/valrange-run
timeout 300 "$WILDCPU" --tiles "$T/valrange/tiles.vrt" "${split[@]}" --steps 2 --out "$d" >"$d.log" 2>&1
s=$?
px=$(grep '"type":"val"' "$d/metrics.jsonl" 2>/dev/null | tail -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["pixels"])')
ref=$(grep '"type":"val"' "$T/vsplit/metrics.jsonl" | tail -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["pixels"])')
n=$(grep -o "validation after step [0-9]*: [0-9]* labelled pixels of its blocks are left out of its metrics (as if nodata): a feature's value there is beyond float's range" "$d.log" | awk '{print $5}')
[ $s -eq 0 ] && [ -n "$n" ] && [ -n "$px" ] && [ $((px + n)) -eq "$ref" ] && ! grep -Eqw "nan" "$d.log" \
    && ok "validation pixels beyond float's range once normalized: left out ($n of $ref), and said" \
    || notok "validation pixels beyond float's range" "status $s, pixels $px + ${n:-none said} vs $ref: $(grep -E 'warn|error' "$d.log" | head -3)"

# A fill value beside the declared nodata (-9999.5 where ndvi declares -9999) in the validation
# blocks alone: training never meets it, and validation's outputs stay finite, but its scores
# (and so best.wcp) are spoilt: warned about once, naming the file, the band and the pixels
# validated (until 2026-12-07 nothing named it: only a warning about tied probabilities)
make_hostile fill
d=$T/valfill-run
timeout 300 "$WILDCPU" --tiles "$T/valfill/tiles.vrt" "${split[@]}" --epochs 2 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "training standard deviations" "$d.log")" -eq 1 ] &&
    grep -q "warning: validation after step [0-9]*: .*valfill/tiles.vrt, band 5 (ndvi): its values average -[0-9.e+]* over the [0-9]* pixels of the validation blocks, [0-9]* training standard deviations below .*the scores (and the choice of best.wcp) may mean little" "$d.log" &&
    ! grep -q "training standard deviations" "$T/vsplit.log" \
    && ok "a fill value in the validation blocks alone: warned once, naming the file, the band and the pixels of the validation blocks" \
    || notok "a fill value in the validation blocks" "status $s: $(grep -E 'warn|error' "$d.log" | head -3)"

# A NaN in a fresh run's first step comes from the initial weights, which no rate has touched:
# the message says so and does not send the user to lower --lr (it did: "lower --lr (now
# 0.0005) or lengthen --warmup ... a rerun with the same options diverges again here")
d=$T/first
WILDCPU_TEST_POISON=1:0:loss timeout 300 "$WILDCPU" "${common[@]}" --steps 3 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "step 1: training diverged: the loss of 1 micro-batch is not finite.*no update had been applied yet (the network is as initialized, whatever the rate), so neither --lr nor --warmup changes this" "$d.log" &&
    ! grep -q "lower --lr" "$d.log" \
    && ok "a NaN in the first step of a fresh run: exit 1, blamed on the inputs, not on --lr" \
    || notok "a NaN in the first step" "status $s: $(grep -m1 diverged "$d.log")"

# A loss that explodes without becoming NaN or infinite (logistic at --lr 100 after a warmup of
# 3 steps: 56, 25, 132, 43, ... 85, 116 nats per pixel) is a divergence when two steps of three
# exceed 100 times a coin flip's ln 2 (one alone is warned about: at batch 1 one patch may cost
# hundreds of nats and the next nothing): the step is not applied, the run ends with status 1
# naming the step and what to change, the checkpoints whose weights gave those losses (of the
# steps before each) are set aside as .diverged, and those before stay; the same command run
# again resumes from them and diverges again at that step. Until 2026-12-07 it went on with a
# warning and ended with status 0: --keep pruned the checkpoints of before, and the end-of-run
# map, 0 everywhere, replaced the user's. A loss of 10 to 100 times is warned about (a warmup of
# 10 steps: about 11 times), and the run goes on. Ordinary runs (the --lr 0.1 one above;
# --pos-weight 50, whose untrained loss is 50 x ln 2 on burned pixels) say nothing.
d=$T/exploded
exploded=(--tiles "$T/r128/tiles.vrt" --patch 32 --batch 4 --micro-batch 4 --model logistic
    --lr 100 --weight-decay 0 --steps 30 --log-every 1 --ckpt-every 1 --keep 3 --val-fraction 0)
timeout 300 "$WILDCPU" "${exploded[@]}" --warmup 3 --out "$d" >"$d.log" 2>&1
s=$?
read -r at prev < <(grep -o "error: step [0-9]*: training diverged: the loss exploded to .*, as in step [0-9]*:" "$d.log" |
    sed 's/error: step \([0-9]*\):.*as in step \([0-9]*\):/\1 \2/')
aside=$(printf "ckpt-%08d.wcp.diverged" $((${at:-1} - 1)))
aside2=$(printf "ckpt-%08d.wcp.diverged" $((${prev:-1} - 1)))
newest=$(ls "$d/checkpoints" | grep '\.wcp$' | tail -1)
timeout 300 "$WILDCPU" "${exploded[@]}" --warmup 3 --out "$d" >"$d-2.log" 2>&1
s2=$?
timeout 300 "$WILDCPU" "${exploded[@]}" --warmup 10 --no-predict --out "$d-10" >"$d-10.log" 2>&1
s10=$?
[ $s -eq 1 ] && [ -n "$at" ] && [ -n "$prev" ] && [ $((at - prev)) -le 2 ] &&
    grep -q "warning: step [0-9]*: the training loss exploded to [0-9.]* nats per pixel, more than 100 times the 0.693 .*a second such step within three stops the run" "$d.log" &&
    grep -q "error: step $at: training diverged: the loss exploded to [0-9.]* nats per pixel, more than 100 times the 0.693 .*as in step $prev: .*this step was not applied.*set aside as .*$aside; .*the checkpoints in .* are intact .*lower --lr (now 100)" "$d.log" &&
    [ -e "$d/checkpoints/$aside" ] && [ -e "$d/checkpoints/$aside2" ] && [ -n "$newest" ] &&
    [ "${newest:5:8}" -lt $((prev - 1)) ] && last_ckpt_ok "$d" &&
    [ ! -e "$d/risk.tif" ] && finite_jsonl "$d/metrics.jsonl" 2>"$T/jsonl.err" &&
    [ $s2 -eq 1 ] && grep -q "error: step $at: training diverged: the loss exploded" "$d-2.log" &&
    [ $s10 -eq 0 ] && [ "$(grep -c "warning: step [0-9]*: the training loss rose to [0-9.]* nats per pixel, more than 10 times the 0.693 .*100 times stops the run.*lower --lr (now 100)" "$d-10.log")" -eq 1 ] \
    && ok "a loss that explodes without a NaN (--lr 100): exit 1 in step $at (as in step $prev) naming --lr; their weights' checkpoints set aside, $newest kept, no map; a rerun diverges there again; 10 to 100 times: warned once" \
    || notok "an exploding finite loss" "status $s $s2 $s10 ($at $prev $newest): $(grep -E "exploded|error|rose" "$d.log" "$d-2.log" "$d-10.log" | head -3) $(ls "$d" "$d/checkpoints")"
# The loss of a fresh run's first step is the network's as initialized, before any update: one
# that high (WILDCPU_TEST_POISON huge: 100 nats per pixel, its gradient kept) is the inputs', and
# the warning says so; it blamed the rate ("the rate threw the weights far off ... lower --lr").
# The same loss in step 2 alone, after an update, is warned about: a divergence takes two of three.
d=$T/huge1
WILDCPU_TEST_POISON=1:0:huge timeout 300 "$WILDCPU" "${common[@]}" --steps 3 --out "$d" >"$d.log" 2>&1
s=$?
d2=$T/huge2
WILDCPU_TEST_POISON=2:0:huge timeout 300 "$WILDCPU" "${common[@]}" --steps 3 --out "$d2" >"$d2.log" 2>&1
s2=$?
[ $s -eq 0 ] && [ "$(grep -c "warning: step .*training loss" "$d.log")" -eq 1 ] &&
    grep -q "warning: step 1: the training loss is 100 nats per pixel, 144 times the 0.693 .*before any update (the network is as initialized, whatever the rate, so neither --lr nor --warmup changes this)" "$d.log" &&
    ! grep -q "lower --lr\|threw the weights" "$d.log" &&
    [ $s2 -eq 0 ] && [ "$(grep -c "warning: step 2: the training loss exploded to 100 nats per pixel, .*a second such step within three stops the run" "$d2.log")" -eq 1 ] \
    && ok "a loss that high in a fresh run's first step is blamed on the inputs (a warning); in step 2 alone, warned (one step of three)" \
    || notok "an exploding loss in the first step" "status $s $s2: $(grep -h -E "training loss|error" "$d.log" "$d2.log" | head -2)"
# ... and the same loss in step 2 on patches that hold values beyond 8 training standard
#     deviations of their band's mean (WILDCPU_TEST_POISON far: as if an undeclared nodata of
#     -9999 lay in band 1) is the data's doing: warned about once, naming the band; the run goes on
d=$T/far2
WILDCPU_TEST_POISON=2:0:far timeout 300 "$WILDCPU" "${common[@]}" --steps 3 --out "$d" >"$d.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "warning: step 2: the training loss is 100 nats per pixel, more than 100 times .*on patches that hold values beyond 8 training standard deviations of their band's mean (first of them .*tiles.vrt, band 1 (elevation)): an undeclared nodata or fill value" "$d.log")" -eq 1 ] &&
    ! grep -q "diverged" "$d.log" \
    && ok "an exploded loss on patches with values far outside the training range: warned, naming the band, not a divergence" \
    || notok "an exploded loss on far values" "status $s: $(grep -E 'warn|error' "$d.log" | head -2)"
"$WILDCPU" --tiles "$T/r128/tiles.vrt" --patch 32 --batch 4 --micro-batch 4 --pos-weight 50 \
    --steps 6 --no-predict --out "$T/pw50" >"$T/pw50.log" 2>&1
s=$?
[ $s -eq 0 ] && ! grep -q "loss exploded" "$T/pw50.log" "$T/lref.log" \
    && ok "ordinary runs (--pos-weight 50; logistic at --lr 0.1) say nothing of an exploding loss" \
    || notok "a false alarm of an exploding loss" "status $s: $(grep -h "loss exploded" "$T/pw50.log" "$T/lref.log" | head -1)"

finish
