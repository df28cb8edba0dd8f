#!/usr/bin/env bash
# t_select.sh: model selection, jitter and augmentation. best.wcp holds the state after the
# validation with the best AUC-PR, is never pruned, is what predict uses for a run directory, and
# is the same after a stop and resume; jittered training (the default) is bitwise the same on 1,
# 2 and 3 ranks and across a resume, and differs from --no-jitter; so does --augment, which
# differs from training without it, and --rotate; none is resumed across a change.
. "$(dirname "$0")/lib.sh"

args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --epochs 4 --val-fraction 0.3
      --log-every 1 --keep 1 --ckpt-every 5 --no-predict --seed 7)
# best.wcp's bookkeeping (which step it holds, that it is kept, used by predict and info, the same
# after a stop and resume) is not the network's: the logistic model (its best validation is the
# first of four, so three follow it). The jitter, --augment and --rotate runs below are unet-lite.
sargs=("${args[@]}" --model logistic)
# jsons FILE KEY...: top-level values of a JSON file, one a line, in one python start
jsons() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\n".join(str(d[k]) for k in sys.argv[2:]))' "$@"; }
# stop_when LOG TEXT DIR: once LOG shows TEXT, SIGTERM to the wildcpu ranks writing DIR (looked up
# once they have started, so the signal follows the line at once)
stop_when() {
    local log=$1 text=$2 dir=$3 pids="" p
    for _ in $(seq 1 3000); do
        [ -z "$pids" ] && grep -q "^model " "$log" &&
            pids=$(pgrep -f -- "--out $dir" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done)
        grep -q "$text" "$log" && break
        sleep 0.02
    done
    kill -TERM $pids
}
# the step a stopped run stopped after, from its log
stopped_after() { sed -n 's/.*stopped by .* after step \([0-9]*\):.*/\1/p' "$1" | head -1; }
mpirun_n 2 "$WILDCPU" "${sargs[@]}" --out "$T/a" >"$T/a.log" 2>&1 || { notok "training" "$(tail -3 "$T/a.log")"; finish; }
# the step of the best validation, from the log (the first of equal maxima: strictly better wins),
# and report.json's best_unsaved_step
{ read -r best_step; read -r a_unsaved; } < <($PY -c 'import json,sys
best, step = -1, -1
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["type"] == "val" and d["auc_pr"] is not None and d["auc_pr"] > best:
        best, step = d["auc_pr"], d["step"]
print(step); print(json.load(open(sys.argv[2]))["best_unsaved_step"])' "$T/a/metrics.jsonl" "$T/a/report.json")
held=$("$WILDCPU" info "$T/a/checkpoints/best.wcp" | awk '$1 == "step" {print $2}')
[ -n "$best_step" ] && [ "$held" = "$best_step" ] && [ -f "$T/a/checkpoints/ckpt-00000076.wcp" ] &&
    [ "$(ls "$T/a/checkpoints" | wc -l)" = 2 ] && grep -q "best validation AUC-PR, .* after step $best_step" "$T/a/report.md" \
    && ok "best.wcp holds step $best_step, the best validation AUC-PR of metrics.jsonl; kept beside --keep 1; report.md says so" \
    || notok "best.wcp" "best step '$best_step', best.wcp holds '$held': $(ls "$T/a/checkpoints")"

# best.wcp of the best validation cannot be written (its temporary name taken by a directory: a
# real failed create, as on a full disk): a later, worse validation becomes best.wcp, and the
# report says which validation was better and lost (one process, whose pid names the file)
# (the directory blocks every checkpoint of that step: the best must not be the last step's, which
# also ends training, and a worse validation must follow it; the CPU's kernels choose the best)
if [ "$best_step" = 76 ] || [ "$best_step" = -1 ]; then
    ok "# skipped: the best validation is the last (step $best_step), so none could follow it"
else
( mkdir -p "$T/u/checkpoints" && mkdir "$T/u/checkpoints/.ckpt-$(printf %08d "$best_step").wcp.tmp$BASHPID" &&
  exec "$WILDCPU" "${sargs[@]}" --out "$T/u" ) >"$T/u.log" 2>&1
s=$?
{ read -r u_unsaved; read -r u_best; } < <(jsons "$T/u/report.json" best_unsaved_step best_step)
[ $s -eq 0 ] && [ "$u_unsaved" = "$best_step" ] &&
    [ "$u_best" != "$best_step" ] &&
    [ "$u_best" = "$("$WILDCPU" info "$T/u/checkpoints/best.wcp" | awk '$1 == "step" {print $2}')" ] &&
    grep -q "after step $best_step was better (AUC-PR .*could not be written" "$T/u/report.md" &&
    grep -q "warning: the best validation of this session, after step $best_step .*could not be saved" "$T/u.log" &&
    [ "$a_unsaved" = -1 ] \
    && ok "best.wcp of the best validation (step $best_step) not written: a later best.wcp, and report and log name the lost one" \
    || notok "a failed best.wcp write in the report" "status $s; $(grep -i 'best' "$T/u.log" | tail -3)"
fi
# the end of training's checkpoint cannot be written: the run fails, and its report says why,
# the cause the log gave "above" included (a batch job's stderr is often gone)
( mkdir -p "$T/v/checkpoints" && mkdir "$T/v/checkpoints/.ckpt-00000076.wcp.tmp$BASHPID" &&
  exec "$WILDCPU" "${sargs[@]}" --out "$T/v" ) >"$T/v.log" 2>&1
s=$?
v_json=$(jsons "$T/v/report.json" status error)
[ $s -eq 1 ] && [ "$(head -1 <<<"$v_json")" = failed ] &&
    sed 1d <<<"$v_json" | grep -q "^cannot create checkpoint .*: Is a directory; then: checkpoint at step 76 (end of training) is not complete" &&
    grep -q "^Status: \*\*failed\*\*: cannot create checkpoint .*: Is a directory; then: " "$T/v/report.md" \
    && ok "the final checkpoint not written: exit 1, and report.json and report.md give the cause" \
    || notok "a failed final checkpoint in the report" "status $s: $(head -c 300 <<<"$v_json")"

"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/a" --out "$T/a.tif" >"$T/p.log" 2>&1
grep -q "with $T/a/checkpoints/best.wcp (step $best_step" "$T/p.log" \
    && ok "predict --checkpoint DIR uses best.wcp" || notok "predict uses best.wcp" "$(grep 'predict:' "$T/p.log" | head -1)"
cp "$T/a/checkpoints/best.wcp" "$T/best.keep"
printf 'garbage' >"$T/a/checkpoints/best.wcp"
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/a" --out "$T/a2.tif" >"$T/p2.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "best.wcp is not usable" "$T/p2.log" && grep -q "ckpt-00000076.wcp" "$T/p2.log" \
    && ok "a damaged best.wcp: reported, the newest checkpoint is used" || notok "damaged best.wcp" "status $s"
"$WILDCPU" info "$T/a" >"$T/info_bad.txt" 2>&1
cp "$T/best.keep" "$T/a/checkpoints/best.wcp"
"$WILDCPU" info "$T/a" >"$T/info_good.txt" 2>&1
grep -q "best.wcp  *step  *? .*INVALID" "$T/info_bad.txt" && grep -q "use $T/a/checkpoints/ckpt-00000076.wcp" "$T/info_bad.txt" &&
    grep -q "best.wcp  *step  *$best_step .* valid" "$T/info_good.txt" && grep -q "use $T/a/checkpoints/best.wcp" "$T/info_good.txt" \
    && ok "info DIR lists best.wcp (step $best_step, or step ? and INVALID) and which checkpoint predict and evaluate use" \
    || notok "info DIR and best.wcp" "$(grep best "$T/info_bad.txt" "$T/info_good.txt")"

# stop in the middle and resume: best.wcp and the final state equal the uninterrupted run's.
# Each checkpoint write of the stopped run takes 0.5 s longer (a slow disk), and the next waits
# for it: the 7 checkpoints after step 41 take 3.5 s at least, in which the signal lands
(export WILDCPU_TEST_SLOW_WRITE=0.5; mpirun_n 2 "$WILDCPU" "${sargs[@]}" --out "$T/b") >"$T/b.log" 2>&1 &
pid=$!
stop_when "$T/b.log" "step 41/76" "$T/b"
wait $pid
s1=$?
at=$(stopped_after "$T/b.log")
mpirun_n 1 "$WILDCPU" "${sargs[@]}" --out "$T/b" >>"$T/b.log" 2>&1
s2=$?
[ $s1 -eq 75 ] && [ $s2 -eq 0 ] && grep -q "resuming from" "$T/b.log" && [ "${at:-0}" -ge 41 ] && [ "$at" -lt 76 ] &&
    [ "$(digest "$T/b/checkpoints/best.wcp")" = "$(digest "$T/a/checkpoints/best.wcp")" ] &&
    [ "$(digest "$T/b/checkpoints/ckpt-00000076.wcp")" = "$(digest "$T/a/checkpoints/ckpt-00000076.wcp")" ] \
    && ok "stopped at step 41 on 2 ranks, resumed on 1: best.wcp and the final state equal" \
    || notok "best.wcp across a resume" "status $s1/$s2, stopped after step '$at'"

# jitter: the same bits on 1 and 3 ranks; different from fixed patches (30 steps: into the second
# epoch of 19 steps, so a stop at step 21 resumes in an epoch of its own draws)
for n in 1 3; do mpirun_n $n "$WILDCPU" "${args[@]}" --steps 30 --out "$T/j$n" >"$T/j$n.log" 2>&1; done
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 30 --no-jitter --out "$T/nj" >"$T/nj.log" 2>&1
f=ckpt-00000030.wcp
d1=$(digest "$T/j1/checkpoints/$f") d3=$(digest "$T/j3/checkpoints/$f") dn=$(digest "$T/nj/checkpoints/$f")
[ -n "$d1" ] && [ "$d1" = "$d3" ] && [ -n "$dn" ] && [ "$d1" != "$dn" ] \
    && ok "jittered training: bitwise equal on 1 and 3 ranks, different from --no-jitter" \
    || notok "jitter" "1 rank $d1, 3 ranks $d3, no jitter $dn"
"$WILDCPU" "${args[@]}" --steps 30 --out "$T/nj" >"$T/nj2.log" 2>&1
[ $? -eq 1 ] && grep -q "jitter: now on, checkpoint off" "$T/nj2.log" \
    && ok "a run without jitter is not resumed with it" || notok "jitter in the resume settings" "$(tail -2 "$T/nj2.log")"

# --augment: 8 orientations with the sample's two vector pairs found by name; bitwise the same on
# 1 and 3 ranks and across a resume, a different model from the patches as they lie; not resumed
# without it
for n in 1 3; do mpirun_n $n "$WILDCPU" "${args[@]}" --steps 30 --augment --out "$T/a$n" >"$T/a$n.log" 2>&1; done
da1=$(digest "$T/a1/checkpoints/$f") da3=$(digest "$T/a3/checkpoints/$f")
grep -q "augmentation: 8 orientations (mirrors and quarter turns); vector bands aspect_sin:aspect_cos, wind_u:wind_v" "$T/a1.log" \
    && grep -q "augmentation: off (--augment and --rotate turn it on)" "$T/j1.log" \
    && grep -q "^Augmentation: 8 orientations" "$T/a1/report.md" \
    && grep -q '"augmentation":"8 orientations' "$T/a1/report.json" \
    && ok "--augment: 8 orientations, the vector pairs found by name (off without it); in report.md and report.json" \
    || notok "augmentation line" "$(grep augmentation "$T/a1.log" "$T/j1.log")"
[ -n "$da1" ] && [ "$da1" = "$da3" ] && [ "$da1" != "$d1" ] \
    && ok "augmented training: bitwise equal on 1 and 3 ranks, different from training without it" \
    || notok "--augment" "1 rank $da1, 3 ranks $da3, without $d1"
# stopped at step 21 on 2 ranks and resumed on 1: the same bits as the uninterrupted run. The
# stop must land in the second epoch (steps 20 to 29, checked): each checkpoint write of the
# stopped run takes 1 s longer, and the next waits for it, so the checkpoint of step 25 waits for
# step 20's, and the signal, sent as step 21 is logged, has a second and 5 steps at least to land
(export WILDCPU_TEST_SLOW_WRITE=1; mpirun_n 2 "$WILDCPU" "${args[@]}" --steps 30 --augment --out "$T/ar") >"$T/ar.log" 2>&1 &
pid=$!
stop_when "$T/ar.log" "step 21/30" "$T/ar"
wait $pid
s1=$?
at=$(stopped_after "$T/ar.log")
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 30 --augment --out "$T/ar" >>"$T/ar.log" 2>&1
s2=$?
[ $s1 -eq 75 ] && [ $s2 -eq 0 ] && grep -q "resuming from" "$T/ar.log" && [ "${at:-0}" -ge 20 ] && [ "$at" -lt 30 ] && [ "$(digest "$T/ar/checkpoints/$f")" = "$da1" ] \
    && ok "augmented training stopped on 2 ranks, resumed on 1: the uninterrupted run's bits" \
    || notok "--augment across a resume" "status $s1/$s2, stopped after step '$at', $(digest "$T/ar/checkpoints/$f") vs $da1"
"$WILDCPU" "${args[@]}" --steps 30 --out "$T/a1" >"$T/na2.log" 2>&1
[ $? -eq 1 ] && grep -q "augment: now (none), checkpoint 8:.*input channels counted from 0: 0 [a-z_]*, 1 " "$T/na2.log" \
    && ok "an augmented run is not resumed without --augment (the pairs' channels named)" \
    || notok "augmentation in the resume settings" "$(tail -2 "$T/na2.log")"
"$WILDCPU" "${args[@]}" --steps 30 --augment --vector-bands wind_u:gust --out "$T/vb" >"$T/vb.log" 2>&1
[ $? -eq 1 ] && grep -q "has no feature band named 'gust'" "$T/vb.log" \
    && ok "--vector-bands naming a band the tiles lack: refused, naming it" \
    || notok "--vector-bands wind_u:gust" "$(tail -2 "$T/vb.log")"
"$WILDCPU" "${args[@]}" --steps 30 --augment --vector-bands "wind_u:wind_v,,aspect_sin:aspect_cos" --out "$T/vb2" >"$T/vb2.log" 2>&1
[ $? -eq 1 ] && grep -q -- "--vector-bands: 'wind_u:wind_v,,aspect_sin:aspect_cos' has an empty entry" "$T/vb2.log" \
    && ok "--vector-bands with an empty entry: refused" || notok "--vector-bands with an empty entry" "$(tail -2 "$T/vb2.log")"

# --rotate: turns by any angle up to DEG, drawn like the jitter; bitwise the same on 1 and 3 ranks
# and across a resume (with --augment's orientations too), a different model from training
# without it; not resumed without it; refused where a turn is not a turn on the ground
for n in 1 3; do mpirun_n $n "$WILDCPU" "${args[@]}" --steps 30 --rotate 30 --out "$T/r$n" >"$T/r$n.log" 2>&1; done
dr1=$(digest "$T/r1/checkpoints/$f") dr3=$(digest "$T/r3/checkpoints/$f")
grep -q "augmentation: turns of up to 30 degrees either way; vector bands aspect_sin:aspect_cos, wind_u:wind_v" "$T/r1.log" \
    && grep -q '"augmentation":"turns of up to 30 degrees' "$T/r1/report.json" \
    && ok "--rotate 30: the start-up line and report.json say so, with the vector pairs" \
    || notok "--rotate line" "$(grep augmentation "$T/r1.log")"
[ -n "$dr1" ] && [ "$dr1" = "$dr3" ] && [ "$dr1" != "$d1" ] \
    && ok "turned training: bitwise equal on 1 and 3 ranks, different from training without it" \
    || notok "--rotate" "1 rank $dr1, 3 ranks $dr3, without $d1"
grep -q "^training samples of the first epoch: [0-9]* of [0-9]* shifted ([0-9]*%), [0-9]* turned ([0-9]*%)$" "$T/r1.log" \
    && grep -q '"shifted_fraction":[0-9.]*,"turned_fraction":[0-9.]*,' "$T/r1/report.json" \
    && ! grep -q "turns only\|shifts only" "$T/r1.log" \
    && ok "--rotate 30: the shares of the first epoch's samples shifted and turned, in the log and report.json (no warning)" \
    || notok "--rotate shares" "$(grep -i 'samples of\|warn' "$T/r1.log")"
# A small region (one 128-px patch, 19 px from the raster's bottom edge): each sample is read
# from the window its own angle needs, so the angles that fit turn it (the largest angle's
# window, 184 px, fitted none: the digest was the unturned run's); most stay unturned, which a
# warning says, naming the cause
"$WILDCPU" synth --out "$T/syn" --size 256 >"$T/syn.log" 2>&1
small=(--tiles "$T/syn/tiles.vrt" --no-predict --steps 10 --batch 1 --micro-batch 1 --val-fraction 0 --patch 128)
"$WILDCPU" "${small[@]}" --rotate 45 --out "$T/st" >"$T/st.log" 2>&1
s1=$?
"$WILDCPU" "${small[@]}" --out "$T/su" >"$T/su.log" 2>&1
s2=$?
dst=$(digest "$T/st/checkpoints/ckpt-00000010.wcp") dsu=$(digest "$T/su/checkpoints/ckpt-00000010.wcp")
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ -n "$dst" ] && [ -n "$dsu" ] && [ "$dst" != "$dsu" ] \
    && ok "--rotate 45 on a region barely larger than the patch: turned by the angles that fit (another model than unturned)" \
    || notok "--rotate on a small region" "status $s1/$s2, digests $dst $dsu"
grep -q "warning: --rotate 45 turns only 0 of the first epoch's 1 training samples (0%), the others stay unturned: the turned window (up to 182x182 px) would reach off the raster for 1; the 128x128 patch is large for the 256x256 region: a smaller --patch" "$T/st.log" \
    && [ "$(grep -c 'turns only' "$T/st.log")" = 1 ] \
    && grep -q "warning: the jitter shifts only 0 of the first epoch's 1 training samples (0%): the shifted patch would reach off the patch grid for 1" "$T/st.log" \
    && grep -q '"shifted_fraction":0.0,"turned_fraction":0.0,' "$T/st/report.json" \
    && grep -q '"shifted_fraction":0.0,"turned_fraction":null,' "$T/su/report.json" \
    && ok "few samples turned or shifted: a warning for each, once, saying why; report.json's shares" \
    || notok "the warnings of few samples turned" "$(grep -i 'warn' "$T/st.log")"
"$WILDCPU" "${small[@]}" --patch 64 --val-fraction 0.2 --val-block 128 --rotate 45 --out "$T/sv" >"$T/sv.log" 2>&1
grep -q "warning: --rotate 45 turns only [0-9] of the first epoch's 5 training samples .* would reach onto a validation block for [0-9]; the validation blocks lie close to most patches: a larger --val-block than 128 px" "$T/sv.log" \
    && ok "few samples turned for the validation blocks: the warning suggests a larger --val-block" \
    || notok "the warning of validation blocks" "$(grep -i 'warn' "$T/sv.log")"
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 30 --rotate 30 --augment --out "$T/ra" >"$T/ra.log" 2>&1
dra=$(digest "$T/ra/checkpoints/$f")
# (stopped in the second epoch as above: slow checkpoint writes give the signal time to land)
(export WILDCPU_TEST_SLOW_WRITE=1; mpirun_n 2 "$WILDCPU" "${args[@]}" --steps 30 --rotate 30 --augment --out "$T/rr") >"$T/rr.log" 2>&1 &
pid=$!
stop_when "$T/rr.log" "step 21/30" "$T/rr"
wait $pid
s1=$?
at=$(stopped_after "$T/rr.log")
mpirun_n 3 "$WILDCPU" "${args[@]}" --steps 30 --rotate 30 --augment --out "$T/rr" >>"$T/rr.log" 2>&1
s2=$?
[ $s1 -eq 75 ] && [ $s2 -eq 0 ] && grep -q "resuming from" "$T/rr.log" && [ "${at:-0}" -ge 20 ] && [ "$at" -lt 30 ] && [ -n "$dra" ] &&
    [ "$(digest "$T/rr/checkpoints/$f")" = "$dra" ] && [ "$dra" != "$dr1" ] && [ "$dra" != "$da1" ] \
    && ok "turned and oriented training stopped on 2 ranks, resumed on 3: the uninterrupted 1-rank run's bits" \
    || notok "--rotate across a resume" "status $s1/$s2, stopped after step '$at', $(digest "$T/rr/checkpoints/$f") vs $dra"
"$WILDCPU" "${args[@]}" --steps 30 --out "$T/r1" >"$T/nr.log" 2>&1
[ $? -eq 1 ] && grep -q "rotate: now (none), checkpoint 30" "$T/nr.log" \
    && ok "a turned run is not resumed without --rotate" || notok "--rotate in the resume settings" "$(tail -2 "$T/nr.log")"
"$WILDCPU" "${args[@]}" --steps 30 --rotate 30 --vector-bands none --out "$T/r1" >"$T/nv.log" 2>&1
[ $? -eq 1 ] && grep -q "rotate: now 30:, checkpoint 30:[0-9]" "$T/nv.log" \
    && ok "a turned run is not resumed with other --vector-bands (they turn other bands)" \
    || notok "--vector-bands in --rotate's resume settings" "$(tail -2 "$T/nv.log")"
gdal_translate -q -a_srs EPSG:4326 -a_ullr -111 45 -110.9 44.9 "$SAMPLE" "$T/geo.vrt"
"$WILDCPU" "${args[@]}" --tiles "$T/geo.vrt" --rotate 30 --out "$T/rg" >"$T/rg.log" 2>&1
[ $? -eq 1 ] && grep -q -- "--rotate: $T/geo.vrt cannot be turned by any angle: degrees of longitude and of latitude differ" "$T/rg.log" \
    && ok "--rotate on a grid in degrees: refused, saying why" || notok "--rotate on degrees" "$(tail -2 "$T/rg.log")"
"$WILDCPU" "${args[@]}" --rotate 181 --out "$T/rx" >"$T/rx.log" 2>&1
[ $? -eq 2 ] && grep -q -- "--rotate needs a number between 0 and 180" "$T/rx.log" \
    && ok "--rotate 181: a usage error" || notok "--rotate 181" "$(tail -2 "$T/rx.log")"
# the largest turn is in the resume settings to the last bit: a run of --rotate 10 was resumed
# by --rotate 10.0000000001 (recorded with 10 digits, both read "10"), which draws other angles
rot=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 4 --steps 2 --no-predict --model logistic
    --val-fraction 0)
"$WILDCPU" "${rot[@]}" --rotate 10 --out "$T/r10" >"$T/r10.log" 2>&1
s1=$?
"$WILDCPU" "${rot[@]}" --rotate 10.0000000001 --out "$T/r10" >"$T/r10b.log" 2>&1
s2=$?
"$WILDCPU" "${rot[@]}" --rotate 10 --out "$T/r10" >"$T/r10c.log" 2>&1
s3=$?
[ $s1 -eq 0 ] && [ $s2 -eq 1 ] && [ $s3 -eq 0 ] &&
    grep -q "rotate: now 10.0000000001:[0-9/,]*, checkpoint 10:[0-9/,]*;" "$T/r10b.log" \
    && ok "--rotate 10.0000000001 does not resume a run of --rotate 10; --rotate 10 does" \
    || notok "--rotate to the last bit in the resume settings" "status $s1/$s2/$s3: $(tail -1 "$T/r10b.log")"
# a run without validation ground has no best.wcp; its report says which checkpoint maps it
grep -q 'Model selection: none, as no ground is held out for validation: `wildcpu predict` or `evaluate` given this directory uses its newest checkpoint (step 2 when' "$T/r10/report.md" \
    && ok "report.md of a run without validation: the newest checkpoint (step 2) is the model" \
    || notok "model selection without validation" "$(grep -i 'selection\|validation' "$T/r10/report.md")"

# Validation is asked for but impossible: a warning says so (one validation block, which must
# stay for training); a tiny fraction still takes one block instead of rounding to none.
small=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 4 --steps 2 --no-predict --model logistic)
"$WILDCPU" "${small[@]}" --val-block 100000 --out "$T/v1" >"$T/v1.log" 2>&1
[ $? -eq 0 ] && grep -q "warning: no validation: --val-fraction 0.2 asks for it" "$T/v1.log" \
    && ok "one validation block only: a warning that no validation runs" || notok "no validation warned" "$(grep -m2 'warn\|patches:' "$T/v1.log")"
"$WILDCPU" "${small[@]}" --val-block 32 --val-fraction 0.0001 --out "$T/v2" >"$T/v2.log" 2>&1
[ $? -eq 0 ] && grep -q "patches: .* 1 validation (1 of .* blocks" "$T/v2.log" && ! grep -q "no validation" "$T/v2.log" \
    && ok "--val-fraction 0.0001: one validation block, not none" || notok "tiny --val-fraction" "$(grep -m2 'warn\|patches:' "$T/v2.log")"

# best.wcp deleted while the run was down: the resume says so, tracks the best afresh, and the
# report names the step of the best.wcp on disk
bw=(--tiles "$SAMPLE" --patch 32 --batch 32 --micro-batch 8 --steps 24 --val-block 64 --ckpt-every 3
    --keep 10 --no-predict --model logistic)
(WILDCPU_TEST_CRASH_CKPT=0.5@21 "$WILDCPU" "${bw[@]}" --out "$T/bw" >"$T/bw.log" 2>&1) 2>/dev/null
rm -f "$T/bw/checkpoints/best.wcp"
"$WILDCPU" "${bw[@]}" --out "$T/bw" >>"$T/bw.log" 2>&1
s=$?
held=$("$WILDCPU" info "$T/bw/checkpoints/best.wcp" 2>/dev/null | awk '$1 == "step" {print $2}')
[ $s -eq 0 ] && grep -q "warning: .*best.wcp (step [0-9]*) is missing: the best validation is tracked afresh" "$T/bw.log" &&
    [ -n "$held" ] && grep -q "best validation AUC-PR, .* after step $held," "$T/bw/report.md" \
    && ok "best.wcp deleted before a resume: a warning, a new best.wcp (step $held), the report names it" \
    || notok "best.wcp deleted before a resume" "status $s, best.wcp step '$held': $(grep -m1 missing "$T/bw.log") $(grep -o 'best validation AUC-PR[^.]*' "$T/bw/report.md")"

# best.wcp deleted after the training finished: a rerun says no validation writes it again, and
# rewrites the report, which named it as the map's checkpoint
rm -f "$T/bw/checkpoints/best.wcp"
"$WILDCPU" "${bw[@]}" --out "$T/bw" >"$T/bw2.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "warning: .*best.wcp (step [0-9]*) is missing: the training is finished, so no validation writes it again" "$T/bw2.log" &&
    grep -q "keeping its checkpoint and report, which now says best.wcp is lost" "$T/bw2.log" &&
    grep -q "best.wcp (the best validation, after step [0-9]*) was missing or damaged when this session started" "$T/bw/report.md" &&
    [ "$(json "$T/bw/report.json" steps_this_run)" -gt 0 ] && grep -q "^| wall time (s) |" "$T/bw/report.md" &&
    ! grep -q "is kept as checkpoints/best.wcp" "$T/bw/report.md" &&
    [ "$(json "$T/bw/report.json" best_step)" = -1 ] \
    && ok "best.wcp deleted after the training finished: the rerun says the newest checkpoint serves, and the report no longer names best.wcp" \
    || notok "best.wcp deleted after the training finished" "status $s: $(grep -m2 'warn\|finished' "$T/bw2.log") / $(grep 'Model selection' "$T/bw/report.md")"

# an older best.wcp of the same run put back (a backup restored): refused, not mapped under the
# report's claim of the newer best; moved out, the finished run maps from its newest checkpoint
sb=(--tiles "$SAMPLE" --patch 32 --batch 32 --micro-batch 8 --steps 24 --val-block 64 --ckpt-every 3
    --keep 10 --no-predict --model logistic --lr 3e-3)
(WILDCPU_TEST_CRASH_CKPT=0.5@15 "$WILDCPU" "${sb[@]}" --out "$T/sb" >"$T/sb.log" 2>&1) 2>/dev/null
cp "$T/sb/checkpoints/best.wcp" "$T/sb-older.wcp"
"$WILDCPU" "${sb[@]}" --out "$T/sb" >>"$T/sb.log" 2>&1
old_step=$("$WILDCPU" info "$T/sb-older.wcp" 2>/dev/null | awk '$1 == "step" {print $2}')
new_step=$("$WILDCPU" info "$T/sb/checkpoints/best.wcp" 2>/dev/null | awk '$1 == "step" {print $2}')
cp "$T/sb-older.wcp" "$T/sb/checkpoints/best.wcp"
"$WILDCPU" "${sb[@]}" --out "$T/sb" >"$T/sb2.log" 2>&1
s=$?
[ -n "$old_step" ] && [ "$old_step" != "$new_step" ] && [ $s -eq 1 ] &&
    grep -q "error: .*best.wcp holds step $old_step (AUC-PR .*), but .*ckpt-00000024.wcp knows the best validation after step $new_step .*an older copy" "$T/sb2.log" &&
    cmp -s "$T/sb-older.wcp" "$T/sb/checkpoints/best.wcp" \
    && ok "an older best.wcp of the run put back (step $old_step, the run's best $new_step): status 1, named, left in place" \
    || notok "an older best.wcp put back" "status $s, steps '$old_step' '$new_step': $(grep -m1 error "$T/sb2.log")"
# ... and predict, evaluate and info given the directory say the same, rather than map it
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/sb" --out "$T/sb.tif" >"$T/sbp.log" 2>&1
sp=$?
"$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/sb" >"$T/sbe.log" 2>&1
se=$?
"$WILDCPU" info "$T/sb" >"$T/sbi.log" 2>&1
[ $sp -eq 1 ] && [ $se -eq 1 ] && [ ! -e "$T/sb.tif" ] &&
    grep -q "error: .*sb/checkpoints/best.wcp is not the best checkpoint of the run in .*sb: it holds step $old_step (AUC-PR .*), but the newest checkpoint (step 24) knows the best validation after step $new_step .*an older copy .*move it out" "$T/sbp.log" &&
    grep -q "is not the best checkpoint of the run" "$T/sbe.log" &&
    grep -q "^predict and evaluate given this directory refuse .*sb/checkpoints/best.wcp: it holds step $old_step" "$T/sbi.log" &&
    grep -q "^a rerun stops with an error until .*best.wcp is moved out" "$T/sbi.log" \
    && ok "... predict and evaluate given the directory refuse it too (status 1, no map), and info says so" \
    || notok "predict, evaluate and info with an older best.wcp put back" "status $sp/$se: $(grep -h -m1 error "$T/sbp.log" "$T/sbe.log") / $(grep 'predict and evaluate' "$T/sbi.log")"


# best.wcp damaged while the run was down: the resume says so and tracks the best afresh (a
# damaged best kept as the best would never be replaced by a validation below its AUC-PR, and the
# map would come from another checkpoint than the report names)
(WILDCPU_TEST_CRASH_CKPT=0.5@21 "$WILDCPU" "${bw[@]}" --out "$T/bd" >"$T/bd.log" 2>&1) 2>/dev/null
printf '\x00\x00\x00\x00' | dd of="$T/bd/checkpoints/best.wcp" bs=1 seek=200 conv=notrunc 2>/dev/null
"$WILDCPU" "${bw[@]}" --out "$T/bd" >>"$T/bd.log" 2>&1
s=$?
held=$("$WILDCPU" info "$T/bd/checkpoints/best.wcp" 2>/dev/null | awk '$1 == "step" {print $2}')
[ $s -eq 0 ] && grep -q "warning: .*best.wcp (step [0-9]*) is not usable: .*: the best validation is tracked afresh" "$T/bd.log" &&
    [ -n "$held" ] && grep -q "best validation AUC-PR, .* after step $held," "$T/bd/report.md" \
    && ok "best.wcp damaged before a resume: a warning, a new best.wcp (step $held), the report names it" \
    || notok "best.wcp damaged before a resume" "status $s, best.wcp step '$held': $(grep -m1 'not usable' "$T/bd.log")"

# best.wcp of another run copied into a run directory: the resume refuses it, naming the
# difference, rather than draw this run's map from it; the run's own best.wcp back, it resumes
ob=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 8 --ckpt-every 3 --no-predict --model logistic)
"$WILDCPU" "${ob[@]}" --out "$T/own" >"$T/own.log" 2>&1 && "$WILDCPU" "${ob[@]}" --seed 9 --out "$T/other" >"$T/other.log" 2>&1
cp "$T/own/checkpoints/best.wcp" "$T/own.best"
cp "$T/other/checkpoints/best.wcp" "$T/own/checkpoints/best.wcp"
"$WILDCPU" "${ob[@]}" --out "$T/own" >"$T/own2.log" 2>&1
s=$?
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/own" --out "$T/own.tif" >"$T/ownp.log" 2>&1
sp=$?
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/own/checkpoints/best.wcp" --out "$T/own-file.tif" >"$T/ownf.log" 2>&1
sf=$?
[ $sp -eq 1 ] && [ ! -e "$T/own.tif" ] && [ $sf -eq 0 ] &&
    grep -q "error: .*own/checkpoints/best.wcp is not the best checkpoint of the run in .*own: it was written with other settings than the newest checkpoint (.*seed: now 1, checkpoint 9" "$T/ownp.log" \
    && ok "another run's best.wcp: predict given the directory refuses it (status 1, no map); named as a file, it maps" \
    || notok "predict with another run's best.wcp in the directory" "status $sp/$sf: $(grep -m1 error "$T/ownp.log")"
kept=$(cmp -s "$T/other/checkpoints/best.wcp" "$T/own/checkpoints/best.wcp" && echo 1)
cp "$T/own.best" "$T/own/checkpoints/best.wcp"
"$WILDCPU" "${ob[@]}" --out "$T/own" >"$T/own3.log" 2>&1
s3=$?
[ $s -eq 1 ] && grep -q "own/checkpoints/best.wcp was written with other settings than the run it is kept for .*seed: now 1, checkpoint 9" "$T/own2.log" &&
    [ "$kept" = 1 ] && [ $s3 -eq 0 ] \
    && ok "another run's best.wcp in the run directory: the resume refuses it (status 1, the difference named) and leaves it; its own is taken" \
    || notok "another run's best.wcp" "status $s/$s3: $(tail -2 "$T/own2.log")"
# best.wcp a directory, or a link: refused before any step, as every file the run replaces is
# (a directory failed each best write with a warning, the map then came from another checkpoint;
# a link was replaced by a file, its target left as it was)
mv "$T/own/checkpoints/best.wcp" "$T/own.best2"
mkdir "$T/own/checkpoints/best.wcp"
"$WILDCPU" "${ob[@]}" --out "$T/own" >"$T/own4.log" 2>&1
s4=$?
rmdir "$T/own/checkpoints/best.wcp"
ln -s "$T/own.best2" "$T/own/checkpoints/best.wcp"
"$WILDCPU" "${ob[@]}" --out "$T/own" >"$T/own5.log" 2>&1
s5=$?
[ $s4 -eq 1 ] && grep -q "error: cannot write the best validation's checkpoint to .*own/checkpoints/best.wcp: it is a directory" "$T/own4.log" &&
    [ $s5 -eq 2 ] && grep -q "error: refusing to write the best validation's checkpoint to .*own/checkpoints/best.wcp: it is a symbolic link" "$T/own5.log" &&
    [ -L "$T/own/checkpoints/best.wcp" ] && ! grep -q "step [1-9]" "$T/own4.log" "$T/own5.log" \
    && ok "best.wcp a directory (status 1) or a symbolic link (status 2): refused before any step, left as it was" \
    || notok "best.wcp a directory or a link" "status $s4/$s5: $(grep -h -m1 error "$T/own4.log" "$T/own5.log")"
rm "$T/own/checkpoints/best.wcp"
mv "$T/own.best2" "$T/own/checkpoints/best.wcp"
# Validation labels of one class rank nothing (AUC-PR is 1 for any model when every validation
# pixel is burned): no best.wcp is chosen by them, the run says so once, and the map comes from
# the newest checkpoint. The labels: the sample's, with every valid pixel of the validation
# blocks (from split.tif of a first run) burned.
one=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 4 --val-block 64 --no-predict --seed 3 --model logistic)
"$WILDCPU" "${one[@]}" --steps 1 --out "$T/split" >"$T/split.log" 2>&1
$PY - "$SAMPLE" "$T/split/split.tif" "$T/allburned.tif" <<'PY' || notok "labels burned in validation"
import sys
from osgeo import gdal
src, split = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
names = [src.GetRasterBand(b).GetDescription() for b in range(1, src.RasterCount + 1)]
f = src.GetRasterBand(names.index("fire") + 1).ReadAsArray()
m = split.GetRasterBand(1).ReadAsArray()
f[(m == 2) & (f != 255)] = 1
d = gdal.GetDriverByName("GTiff").Create(sys.argv[3], src.RasterXSize, src.RasterYSize, 1, gdal.GDT_Byte)
d.SetGeoTransform(src.GetGeoTransform()); d.SetProjection(src.GetProjection())
b = d.GetRasterBand(1); b.WriteArray(f); b.SetNoDataValue(255); d = None
PY
"$WILDCPU" "${one[@]}" --labels "$T/allburned.tif" --epochs 2 --out "$T/oneclass" >"$T/oneclass.log" 2>&1
s=$?
[ $s -eq 0 ] && [ ! -e "$T/oneclass/checkpoints/best.wcp" ] &&
    [ "$(grep -c "every one of its .* pixels is burned, so AUC-PR cannot rank models" "$T/oneclass.log")" = 1 ] &&
    grep -q "^Every one of the validation pixels is burned, so the ranking figures say nothing of this model (AUC-PR is 1 for any model)" "$T/oneclass/report.md" &&
    grep -q "^Model selection: none, as no validation could rank models (the log says why): .wildcpu predict. or .evaluate. given this directory uses its newest checkpoint (step [0-9]* when" "$T/oneclass/report.md" \
    && ok "validation labels all burned: no best.wcp chosen by them, said once in the log and under report.md's quality table, which names the checkpoint the map used" \
    || notok "validation labels of one class" "status $s: $(ls "$T/oneclass/checkpoints") $(grep -c 'cannot rank' "$T/oneclass.log")"

# the jitter may shift a sample onto nodata: a patch valid in its left half alone (kept: half its
# pixels are valid), shifted half a patch to the right, has no valid pixel. Step 36 of this run
# draws that at batch 1: a step without a loss, taken with a zero gradient and a warning naming
# it, the same bits on 1 and 2 ranks (it stopped the run with status 1: "the batch has no valid
# pixel")
$PY - "$T/halfvalid.tif" <<'PY'
import sys, numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()
rng = np.random.default_rng(0)
ds = gdal.GetDriverByName("GTiff").Create(sys.argv[1], 128, 128, 4, gdal.GDT_Float32)
ds.SetGeoTransform([960000, 30, 0, 3840000, 0, -30])  # on the 32-pixel patch grid
srs = osr.SpatialReference(); srs.ImportFromEPSG(32611); ds.SetProjection(srs.ExportToWkt())
for b in range(3):
    a = rng.normal(size=(128, 128)); a[:, :32] = np.nan; a[:, 48:] = np.nan
    ds.GetRasterBand(b + 1).WriteArray(a); ds.GetRasterBand(b + 1).SetDescription("f%d" % b)
ds.GetRasterBand(4).WriteArray((rng.random((128, 128)) < 0.1).astype(np.float32))
ds.GetRasterBand(4).SetDescription("fire")
PY
hv=(--tiles "$T/halfvalid.tif" --patch 32 --batch 1 --micro-batch 1 --steps 40 --val-fraction 0
    --log-every 1 --no-predict)
timeout 300 "$WILDCPU" "${hv[@]}" --out "$T/hv1" >"$T/hv1.log" 2>&1
s1=$?
timeout 300 mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${hv[@]}" --out "$T/hv2" >"$T/hv2.log" 2>&1
s2=$?
f=ckpt-00000040.wcp
d1=$(digest "$T/hv1/checkpoints/$f" 2>/dev/null) d2=$(digest "$T/hv2/checkpoints/$f" 2>/dev/null)
null_loss=$($PY -c 'import json,sys
print([d["step"] for d in map(json.loads, open(sys.argv[1])) if d["type"] == "train" and d["loss"] is None])' "$T/hv1/metrics.jsonl" 2>/dev/null)
[ $s1 = 0 ] && [ $s2 = 0 ] && [ -n "$d1" ] && [ "$d1" = "$d2" ] &&
    [ "$null_loss" = "[36]" ] && grep -q "step 36/40  loss -  lr" "$T/hv1.log" &&
    [ "$(grep -c "warning: step 36: no pixel of the batch is valid (its samples were shifted or turned onto nodata)" "$T/hv1.log")" = 1 ] &&
    [ "$(grep -c "warning: step 36: no pixel of the batch is valid" "$T/hv2.log")" = 1 ] \
    && ok "a batch shifted onto nodata: step 36 taken without a loss (null in metrics.jsonl), said once; the same bits on 1 and 2 ranks" \
    || notok "a batch without a valid pixel" "status $s1/$s2, digests '$d1' '$d2', null losses at $null_loss: $(grep -m2 -E 'error|warning: step' "$T/hv1.log")"
# (seed 13 draws it in step 1: a run of that step alone has no training loss, null in
# report.json, where it said 0.0)
"$WILDCPU" "${hv[@]}" --steps 1 --seed 13 --out "$T/hv13" >"$T/hv13.log" 2>&1
s=$?
[ $s = 0 ] && grep -q "warning: step 1: no pixel of the batch is valid" "$T/hv13.log" &&
    [ "$(json "$T/hv13/report.json" final_train_loss)" = None ] \
    && ok "... a run whose only step had no valid pixel: final_train_loss null" \
    || notok "no training loss at all" "status $s, final_train_loss $(json "$T/hv13/report.json" final_train_loss)"

finish
