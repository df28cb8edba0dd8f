#!/usr/bin/env bash
# t_checkpoint.sh: checkpoints, preemption and resume, with injected faults. Every recovered run
# must end with parameters bitwise equal (digest) to an uninterrupted run of the same command.
. "$(dirname "$0")/lib.sh"

steps=24 # 21 steps per epoch here (161 training patches, batch 8): the runs cross an epoch
         # boundary (the validation after step 21) and stop mid-epoch
# Every rank of a stopped run (exit 75) or a refused one (exit 1) exits by itself; mpirun then
# tears the job down at once with odls_base_sigkill_timeout=0, where it waits 2 s after a
# non-zero exit before its SIGTERM and SIGKILL to ranks that are gone anyway. The two cases
# where a rank dies and mpirun must end the others (SIGKILL, a crash mid-write) keep the default.
export OMPI_MCA_odls_base_sigkill_timeout=0
args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps $steps --ckpt-every 3
      --keep 100 --log-every 1 --no-predict --seed 3 --lr 1e-3)
final() { digest "$T/$1/checkpoints/ckpt-$(printf %08d $steps).wcp"; }
# start NAME NRANKS: training in the background; its mpirun/wildcpu pid in $pid, the lines its
# log held before it in $from (wait_step reads only the lines after them)
start() {
    local name=$1 n=$2
    shift 2
    from=$(cat "$T/$name.log" 2>/dev/null | wc -l)
    mpirun_n "$n" "$WILDCPU" "${args[@]}" "$@" --out "$T/$name" >>"$T/$name.log" 2>&1 &
    pid=$!
}
# wait_step NAME STEP: until the log shows that step (bounded), in the lines of the run started
# last (a run stopped late under load may have logged it before)
wait_step() {
    for _ in $(seq 1 1200); do
        tail -n +$((from + 1)) "$T/$1.log" 2>/dev/null | grep -q "step $2/$steps" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
ranks_of() { # the wildcpu processes of run NAME, rank order unknown (one ps for all: a ps per
    # process took 2.5 s under load, and 4 ranks trained 7 steps past the step waited for)
    local p
    p=$(pgrep -d, -f -- "--out $T/$1") && ps -o pid=,comm= -p "$p" | awk '$2 == "wildcpu" {print $1}'
}
# interrupt NAME NRANKS STEP SIGNAL [one]: starts a run, sends SIGNAL to all its ranks (or to
# one) once the log shows STEP, and returns the run's exit status
interrupt() {
    local name=$1 n=$2 at=$3 sig=$4 who=${5:-all}
    start "$name" "$n"
    wait_step "$name" "$at"
    if [ "$who" = one ]; then kill "-$sig" "$(ranks_of "$name" | tail -1)"
    else kill "-$sig" $(ranks_of "$name"); fi
    wait "$pid"
}
# resume NAME NRANKS: the same command again, in the foreground; returns its status
resume() { mpirun_n "$2" "$WILDCPU" "${args[@]}" --out "$T/$1" >>"$T/$1.log" 2>&1; }
# resumed NAME N: the run's log shows exactly N resumes (a rerun that silently started over
# would reach the same final parameters, since training is deterministic)
resumed() { [ "$(grep -c "^resuming from .*ckpt-" "$T/$1.log")" -eq "$2" ]; }

mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
ref=$(final ref)
[ -n "$ref" ] && ok "uninterrupted reference run ($ref)" || { notok "reference run" "$(tail -3 "$T/ref.log")"; finish; }

# SIGTERM to every rank, then rerun
interrupt term 2 5 TERM
status=$?
if [ $status -eq 75 ] && grep -q "stopped by Terminated after step" "$T/term.log"; then
    ok "SIGTERM to all ranks: checkpoint, exit 75 ($(grep -o '[0-9.]* s from the signal' "$T/term.log"))"
else
    notok "SIGTERM to all ranks: checkpoint, exit 75" "status $status: $(tail -3 "$T/term.log")"
fi
# (the stopped run as it is now, before its resume, is the file-size limit case's run below)
cp -r "$T/term" "$T/full"
resume term 2
[ "$(final term)" = "$ref" ] && grep -q "resuming from" "$T/term.log" \
    && ok "resumed after SIGTERM: final parameters equal the uninterrupted run's" \
    || notok "resumed after SIGTERM: equal parameters" "$(final term) vs $ref"

# SIGTERM to one rank only: the others learn it through the step's reduction
interrupt one 2 4 TERM one
status=$?
resume one 2
[ $status -eq 75 ] && [ "$(final one)" = "$ref" ] && resumed one 1 \
    && ok "SIGTERM to one rank: all stop at the same step, exit 75, resume equal" \
    || notok "SIGTERM to one rank" "status $status, $(final one) vs $ref"

# several stops, different signals, mid-epoch and across the epoch boundary
interrupt multi 2 3 USR1
s1=$?
interrupt multi 2 14 INT
s2=$?
resume multi 2
[ $s1 -eq 75 ] && [ $s2 -eq 75 ] && [ "$(final multi)" = "$ref" ] && resumed multi 2 \
    && ok "stopped twice (SIGUSR1, SIGINT), resumed twice: equal" \
    || notok "stopped twice, resumed twice" "$s1 $s2, $(final multi) vs $ref"

# lose ranks: 4 ranks, then 3, then 1
interrupt shrink 4 6 TERM
s1=$?
interrupt shrink 3 13 TERM
s2=$?
resume shrink 1
[ $s1 -eq 75 ] && [ $s2 -eq 75 ] && [ "$(final shrink)" = "$ref" ] && resumed shrink 2 \
    && ok "resumed on other rank counts (4 -> 3 -> 1): equal" \
    || notok "resumed on other rank counts (4 -> 3 -> 1)" "$s1 $s2, $(final shrink) vs $ref"
grep -q "written by 4 ranks" "$T/shrink.log" && ok "the resume names the rank count that wrote the checkpoint" \
    || notok "resume names the writer's rank count"

# SIGKILL one rank at a random step: the job ends; the rerun resumes from the last checkpoint
kill_step=$((5 + RANDOM % 10))
OMPI_MCA_odls_base_sigkill_timeout=1 interrupt killed 2 $kill_step KILL one
status=$?
resume killed 2
[ $status -ne 0 ] && [ "$(final killed)" = "$ref" ] && resumed killed 1 \
    && ok "SIGKILL of one rank at step $kill_step (exit $status), rerun resumes: equal" \
    || notok "SIGKILL of one rank, rerun resumes" "status $status, $(final killed) vs $ref"

# a crash halfway through writing a checkpoint: the previous one is used
OMPI_MCA_odls_base_sigkill_timeout=1 WILDCPU_TEST_CRASH_CKPT=0.5@9 mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/torn" >"$T/torn.log" 2>&1
status=$?
tmpfiles=$(ls -a "$T/torn/checkpoints" | grep -c '\.tmp')
"$WILDCPU" info "$T/torn" >"$T/torn.info"
resume torn 2
if [ $status -ne 0 ] && [ "$tmpfiles" -ge 1 ] && ! [ -e "$T/torn/checkpoints/ckpt-00000009.wcp.bad" ] &&
    grep -q "resumes from .*ckpt-00000006.wcp" "$T/torn.info" && [ "$(final torn)" = "$ref" ] &&
    [ "$(ls -a "$T/torn/checkpoints" | grep -c '\.tmp')" -eq 0 ]; then
    ok "killed mid-write: the torn temporary is ignored, step 6 resumes, equal, temporary removed"
else
    notok "killed mid-write" "status $status tmp $tmpfiles: $(cat "$T/torn.info") $(final torn)"
fi

# the progress lines of a resumed run are those of the uninterrupted run: a line every 4 steps,
# a crash while writing checkpoint 18, the resume from step 15 (3 steps after the line of step
# 12): the first line after it averages steps 13-16, as the uninterrupted run's does. (The
# logistic model: the averaging of the logged losses across a resume is the property, not the
# network, whose bitwise resume the cases above prove; the corrupted-checkpoint cases below
# resume copies of its uninterrupted run.)
lines=("${args[@]}" --log-every 4 --model logistic)
mpirun_n 1 "$WILDCPU" "${lines[@]}" --out "$T/lines_ref" >"$T/lines_ref.log" 2>&1
WILDCPU_TEST_CRASH_CKPT=0.5@18 mpirun_n 1 "$WILDCPU" "${lines[@]}" --out "$T/lines" >"$T/lines.log" 2>&1
mpirun_n 1 "$WILDCPU" "${lines[@]}" --out "$T/lines" >>"$T/lines.log" 2>&1
if grep -q "resuming from .*ckpt-00000015.wcp" "$T/lines.log" && [ -n "$(losses "$T/lines_ref/metrics.jsonl")" ] &&
    cmp -s <(losses "$T/lines_ref/metrics.jsonl") <(losses "$T/lines/metrics.jsonl"); then
    ok "resumed at step 15 between two progress lines: metrics.jsonl's losses equal the uninterrupted run's"
else
    notok "progress lines across a resume" "$(grep -m1 resuming "$T/lines.log"); $(diff <(losses "$T/lines_ref/metrics.jsonl") <(losses "$T/lines/metrics.jsonl") | head -4 | tr '\n' ' ')"
fi

# corrupted newest checkpoint, five ways: reported, the previous one used, result equal (to
# the uninterrupted logistic run of the progress lines: what is checked is the file, and the
# fallback to the checkpoint before it, whatever the network)
lref=$(final lines_ref)
[ -n "$lref" ] || notok "the logistic reference run" "$(tail -2 "$T/lines_ref.log")"
relines() { mpirun_n "$2" "$WILDCPU" "${lines[@]}" --out "$T/$1" >>"$T/$1.log" 2>&1; }
corrupt() { # corrupt KIND FILE
    case $1 in
    flip) printf '\x55' | dd of="$2" bs=1 seek=$(($(stat -c %s "$2") / 2)) conv=notrunc status=none ;;
    truncated) truncate -s $(($(stat -c %s "$2") - 1000)) "$2" ;;
    empty) : >"$2" ;;
    magic) printf 'XXXXXXXX' | dd of="$2" bs=1 seek=0 conv=notrunc status=none ;;
    future) printf '\x63\x00\x00\x00' | dd of="$2" bs=1 seek=8 conv=notrunc status=none ;;
    esac
}
declare -A why=([flip]="CRC-32 mismatch" [truncated]="truncated" [empty]="empty file"
                [magic]="bad magic" [future]="format version 99, this wildcpu reads version 1 \(written by a newer wildcpu, or a damaged header\)")
for kind in flip truncated empty magic future; do
    rm -rf "$T/c_$kind"
    cp -r "$T/lines_ref" "$T/c_$kind"
    corrupt $kind "$T/c_$kind/checkpoints/ckpt-$(printf %08d $steps).wcp"
    "$WILDCPU" info "$T/c_$kind/checkpoints/ckpt-$(printf %08d $steps).wcp" >"$T/c_$kind.info" 2>&1
    istatus=$?
    relines "c_$kind" 1
    rstatus=$?
    if [ $istatus -eq 1 ] && grep -Eq "INVALID: .*${why[$kind]}" "$T/c_$kind.info" &&
        grep -Eq "ckpt-000000$steps.wcp is not usable: .*${why[$kind]}.*; trying the previous one" "$T/c_$kind.log" &&
        grep -q "resuming from .*ckpt-00000021.wcp" "$T/c_$kind.log" && [ $rstatus -eq 0 ] && [ -n "$lref" ] && [ "$(final "c_$kind")" = "$lref" ]; then
        ok "corrupted newest checkpoint ($kind): reported, step 21 used, result equal"
    else
        notok "corrupted newest checkpoint ($kind)" "info $istatus resume $rstatus: $(grep -E 'not usable|resuming' "$T/c_$kind.log" | head -2)"
    fi
done

# nothing valid (best.wcp included: a valid one is resumed from, t_rundir): stop with an error
# instead of silently starting over; --fresh on purpose (a copy of the logistic run: neither
# depends on the network)
cp -r "$T/lines_ref" "$T/none"
for f in "$T"/none/checkpoints/*.wcp; do : >"$f"; done
relines none 1
status=$?
[ $status -eq 1 ] && grep -q "holds checkpoints but none is usable" "$T/none.log" \
    && ok "no valid checkpoint: error, not a silent restart" || notok "no valid checkpoint: error" "status $status"
# --fresh for a run that cannot start (no such raster, no such label band) moves nothing
mpirun_n 1 "$WILDCPU" "${lines[@]}" --steps 3 --fresh --out "$T/none" --tiles "$T/nosuch.vrt" >"$T/nofresh.log" 2>&1
s1=$?
mpirun_n 1 "$WILDCPU" "${lines[@]}" --steps 3 --fresh --out "$T/none" --label-band nosuch >>"$T/nofresh.log" 2>&1
s2=$?
# (refused after planning: the network does not build for the validation window, 256 x 256
# here, where its first layer would hold 40000 x 65536 values: beyond a tensor's limit)
printf 'input x\nconv a x out=40000 k=1\nconv h a out=1 k=1\n' >"$T/wide.spec"
mpirun_n 1 "$WILDCPU" "${lines[@]}" --steps 3 --fresh --out "$T/none" --model "$T/wide.spec" >>"$T/nofresh.log" 2>&1
s3=$?
[ $s1 -eq 1 ] && [ $s2 -eq 1 ] && [ $s3 -eq 2 ] && ! ls -d "$T"/none/replaced-* >/dev/null 2>&1 &&
    [ -f "$T/none/metrics.jsonl" ] \
    && ok "--fresh of a run that cannot start (no raster, no label band, a network refused after planning): nothing moved" \
    || notok "--fresh of a run that cannot start" "$s1 $s2 $s3: $(ls "$T/none") $(grep error "$T/nofresh.log" | head -3)"
mpirun_n 1 "$WILDCPU" "${lines[@]}" --steps 3 --fresh --out "$T/none" >>"$T/none.log" 2>&1
[ $? -eq 0 ] && ls -d "$T"/none/replaced-*/checkpoints >/dev/null 2>&1 \
    && ok "--fresh starts over and keeps the previous run's files in replaced-*/" \
    || notok "--fresh starts over and keeps the previous files" "$(tail -2 "$T/none.log")"

# a checkpoint of other data or another model is refused, naming the difference
"$WILDCPU" synth --out "$T/small" --size 256 --tile 128 >/dev/null 2>&1
mpirun_n 1 "$WILDCPU" "${args[@]}" --tiles "$T/small/tiles.vrt" --out "$T/ref" >"$T/other.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "was trained on other data: size: now 256x256, checkpoint 512x512" "$T/other.log" \
    && ok "checkpoint of other data refused, naming the difference" || notok "other data refused" "$(tail -2 "$T/other.log")"
mpirun_n 1 "$WILDCPU" "${args[@]}" --model logistic --out "$T/ref" >"$T/other.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "written with other settings: model: now logistic, checkpoint unet-lite" "$T/other.log" \
    && ok "checkpoint of another model refused, naming the difference" || notok "other model refused" "$(tail -2 "$T/other.log")"

# a setting that differs beyond 10 significant digits is another setting (recorded at 17
# where 10 do not give it back): --lr 1e-3 is the last of args
near=("${args[@]}")
near[${#near[@]}-1]=0.00100000000001
mpirun_n 1 "$WILDCPU" "${near[@]}" --out "$T/ref" >"$T/other.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "written with other settings: lr: now 0.00100000000001, checkpoint 0.001" "$T/other.log" \
    && ok "a learning rate that differs in the 14th digit is another setting" \
    || notok "a learning rate differing in the 14th digit" "status $status: $(tail -2 "$T/other.log")"

# a rerun with another length (--steps 48 after 24: "train longer") is refused, and the
# message says where the differing total_steps and warmup (default: a tenth of the steps, never
# typed) come from, rather than name two settings the user did not give
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 48 --out "$T/ref" >"$T/other.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "written with other settings: warmup: now 4, checkpoint 2; total_steps: now 48, checkpoint 24 (total_steps is --steps, or --epochs times the steps of an epoch; warmup is --warmup, by default min(100, total_steps / 10); a run of another length has another learning-rate schedule" "$T/other.log" \
    && ok "a rerun of another length is refused, saying which options total_steps and warmup come from" \
    || notok "a rerun of another length" "status $status: $(grep error "$T/other.log" | head -2)"

# --lr-end: another end of the decay is another schedule; 0.05, where every version before the
# option ended it, is recorded as those versions' checkpoints were (no lr_end), so they resume
# with --lr-end 0.05, and a resume without it is told so
last_lr=$(grep '"type":"train","step":24,' "$T/ref/metrics.jsonl" | grep -o '"lr":[^,]*')
[[ "$last_lr" == '"lr":0.0004'* ]] && grep -q "AdamW lr 0.001, warmup 2, cosine to 0.4 x lr" "$T/ref.log" \
    && ok "AdamW's decay ends at 0.4 x --lr by default (the last step's rate, and the log says so)" \
    || notok "AdamW's default end of the decay" "last step's $last_lr: $(grep -o 'AdamW.*x lr' "$T/ref.log")"
mpirun_n 1 "$WILDCPU" "${args[@]}" --lr-end 0.05 --out "$T/ref" >"$T/other.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "written with other settings: lr_end: now (none), checkpoint 0.4 (lr_end is --lr-end; the checkpoint's decay ends at 0.4 x lr: resume it with --lr-end 0.4; rerun" "$T/other.log" \
    && ok "a rerun with another --lr-end is refused, naming lr_end and the value to resume with" \
    || notok "a rerun with another --lr-end" "status $status: $(grep error "$T/other.log" | head -2)"
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 2 --ckpt-every 1 --lr-end 0.05 --out "$T/end05" >"$T/end05.log" 2>&1
s1=$?
"$WILDCPU" info "$T/end05/checkpoints/ckpt-00000002.wcp" >"$T/end05.info" 2>&1
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 2 --ckpt-every 1 --out "$T/end05" >"$T/end05b.log" 2>&1
s2=$?
mpirun_n 1 "$WILDCPU" "${args[@]}" --steps 2 --ckpt-every 1 --lr-end 0.05 --out "$T/end05" >"$T/end05c.log" 2>&1
s3=$?
[ $s1 -eq 0 ] && grep -q "lr=0.001$" "$T/end05.info" && ! grep -q "lr_end" "$T/end05.info" \
    && grep -q "cosine to 0.05 x lr" "$T/end05.log" && [ $s2 -eq 1 ] \
    && grep -q "lr_end: now 0.4, checkpoint (none) (lr_end is --lr-end; the checkpoint's decay ends at 0.05 x lr, as every version before --lr-end ended it: resume it with --lr-end 0.05;" "$T/end05b.log" \
    && [ $s3 -eq 0 ] && grep -q "resuming from .*ckpt-00000002.wcp" "$T/end05c.log" \
    && ok "--lr-end 0.05 is recorded as earlier versions recorded their decay: resumed with it, refused without" \
    || notok "--lr-end 0.05 and earlier versions' checkpoints" "$s1 $s2 $s3: $(grep -c lr_end "$T/end05.info") $(grep -E 'error|resum' "$T/end05b.log" "$T/end05c.log" | head -3)"

# a file-size limit below one checkpoint: refused before any step (every checkpoint would fail
# and the run be lost: it trained to the end, then ended 1 with none), earlier checkpoints intact
# ($T/full: the SIGTERM case's run as it stopped, copied before its resume)
before=$(ls "$T/full/checkpoints")
# 4 MiB: enough for Open MPI's own files, less than the 5 MiB checkpoint; a singleton (no
# mpirun), since mpirun's daemon would be limited too
(ulimit -f 4096; "$WILDCPU" "${args[@]}" --out "$T/full" >>"$T/full.log" 2>&1)
status=$?
after=$(ls "$T/full/checkpoints")
"$WILDCPU" info "$T/full" >"$T/full.info"
if [ $status -eq 1 ] && grep -q "error: the file-size limit (ulimit -f) is 4.0 MiB, and a checkpoint of this run takes up to" "$T/full.log" &&
    [ "$before" = "$after" ] &&
    ! grep -q INVALID "$T/full.info" && [ "$(ls -a "$T/full/checkpoints" | grep -c tmp)" -eq 0 ]; then
    ok "file-size limit below a checkpoint: refused before any step, earlier checkpoints intact"
else
    notok "file-size limit below a checkpoint" "status $status; before: $before; after: $after; $(grep error "$T/full.log" | tail -2)"
fi

# a stop whose checkpoint cannot be written (a disk filled meanwhile; here a file-size limit
# lowered under the running process): status 1, no DIR/STOPPED, no temporary file, and the
# message names the step a rerun resumes from: it said "rerun the same command to resume", as if
# the stop's step were saved, though the rerun trains again from the newest checkpoint on disk
"$WILDCPU" "${args[@]}" --out "$T/lost" >"$T/lost.log" 2>&1 &
pid=$! from=0
wait_step lost 7
prlimit --pid "$pid" --fsize=1048576
kill -TERM "$pid"
wait "$pid"
status=$?
newest=$(ls "$T/lost/checkpoints" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.wcp$/\1/p' | sort -n | tail -1)
said=$(grep -o "CHECKPOINT FAILED.*" "$T/lost.log")
if [ $status -eq 1 ] && [ ! -e "$T/lost/STOPPED" ] && [ -n "$newest" ] &&
    [ "$(ls -a "$T/lost/checkpoints" | grep -c tmp)" -eq 0 ] &&
    echo "$said" | grep -Eq "; the newest checkpoint on disk is of step $newest: rerun the same command to resume from it \((steps $((newest + 1))-[0-9]+ are|step $((newest + 1)) is) trained again\)$"; then
    ok "a stop whose checkpoint fails: status 1, no STOPPED, the message names the step a rerun resumes from ($newest)"
else
    notok "a stop whose checkpoint fails" "status $status, newest $newest: $said $(ls -a "$T/lost" "$T/lost/checkpoints")"
fi

# a stop while drawing the map (here a 1024x1024 upsampling of the sample), signalled to one
# rank only: all ranks stop after the round, exit 75, and leave neither a map nor a partial
# file; the rerun draws it
gdal_translate -q -of VRT -outsize 200% 200% -r nearest "$SAMPLE" "$T/big.vrt"
mkdir -p "$T/map"
predict=(predict --tiles "$T/big.vrt" --checkpoint "$T/ref" --out "$T/map/risk.tif")
mpirun_n 2 "$WILDCPU" "${predict[@]}" >"$T/map.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "strips x" "$T/map.log" && break; sleep 0.05; done
kill -TERM "$(ranks_of map/risk.tif | tail -1)"
wait $pid
status=$?
if [ $status -eq 75 ] && grep -q "predict: stopped by .* the map is not written" "$T/map.log" &&
    [ -z "$(ls -A "$T/map")" ]; then
    ok "SIGTERM to one rank while mapping: all stop, exit 75, no map and no partial file"
else
    notok "SIGTERM while mapping: exit 75, nothing written" "status $status: $(ls -A "$T/map") $(tail -2 "$T/map.log")"
fi
mpirun_n 2 "$WILDCPU" "${predict[@]}" >>"$T/map.log" 2>&1 && [ -f "$T/map/risk.tif" ] \
    && ok "the rerun draws the map" || notok "the rerun draws the map" "$(tail -2 "$T/map.log")"

# a second signal ends the process at once (the checkpoint of the stop made slow, so that the
# second signal, a second and a half later, comes while it is written)
WILDCPU_TEST_SLOW_WRITE=3 start twice 1
wait_step twice 2
kill -TERM $(ranks_of twice); sleep 1.5; kill -TERM $(ranks_of twice) 2>/dev/null
wait $pid
status=$?
[ $status -eq 143 ] && grep -q "second stop signal" "$T/twice.log" \
    && ok "a second signal exits at once (status 143)" || notok "a second signal exits at once" "status $status"
# ... but the same stop delivered twice at once (GNU timeout signals the command, then its process
# group) is one stop: the checkpoint is written, exit 75
WILDCPU_TEST_SLOW_WRITE=1 start double 1
wait_step double 2
# (0.3 s apart: two signals sent at once may merge into one pending signal)
p=$(ranks_of double); kill -TERM $p; sleep 0.3; kill -TERM $p
wait $pid
status=$?
[ $status -eq 75 ] && [ -f "$T/double/STOPPED" ] && ! grep -q "second stop signal" "$T/double.log" \
    && ok "one stop delivered twice at once (as timeout does): one stop, exit 75, STOPPED written" \
    || notok "one stop delivered twice" "status $status: $(grep -m2 'stop' "$T/double.log")"
# docs/checkpoint.md describes every record a checkpoint holds: each key of meta, config and
# progress (with --augment and --rotate, whose keys are written only when on) is named there, the
# spec_hash, the hexadecimal log_loss_sum and info's digests are what it says (a reader written
# from the page alone met jitter=, augment=, rotate= it did not name, a log_loss_sum Python's
# float() refuses, and one digest "of the parameters and moments" where info prints three)
"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 4 --steps 1 \
    --augment --rotate 10 --no-predict --out "$T/documented" >"$T/documented.log" 2>&1
f=$T/documented/checkpoints/ckpt-00000001.wcp
"$WILDCPU" info "$f" >"$T/documented.info" 2>&1
undocumented=$($PY - "$ROOT" "$f" "$T/documented.info" <<'PYEOF'
import re, sys
sys.path.insert(0, sys.argv[1] + "/tests")
import wcp
doc = open(sys.argv[1] + "/docs/checkpoint.md").read()
ck = wcp.read(sys.argv[2])
sec = {name: body for name, body, _ in ck["sections"]}
bad = []
for name in ("meta", "config", "progress"):
    for rec in sec[name].decode().split(";"):
        key = rec.partition("=")[0]
        if "`%s`" % key not in doc and "`%s=" % key not in doc:
            bad.append("%s key %s not named" % (name, key))
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
rec = dict(r.partition("=")[::2] for r in sec["meta"].decode().split(";"))
try:
    float.fromhex(rec["log_loss_sum"])
except ValueError:
    bad.append("log_loss_sum %s is no hexadecimal float" % rec["log_loss_sum"])
conf = dict(r.partition("=")[::2] for r in sec["config"].decode().split(";"))
if conf["spec_hash"] != fnv(sec["spec"]):
    bad.append("spec_hash is not the FNV-1a 64 of spec")
info = open(sys.argv[3]).read()
for label, name in (("digest", "params"), ("optim_m", "optim_m"), ("optim_v", "optim_v")):
    m = re.search(r"^  %s +([0-9a-f]{16}) " % label, info, re.M)
    if not m or m.group(1) != fnv(sec[name]):
        bad.append("info's %s is not the FNV-1a 64 of %s" % (label, name))
if "FNV-1a 64 of the `params`" not in doc:
    bad.append("the page does not say what info's digest hashes")
print("; ".join(bad))
PYEOF
)
[ -f "$f" ] && [ -z "$undocumented" ] \
    && ok "docs/checkpoint.md names every meta, config and progress key, the spec_hash, log_loss_sum and info's digests as they are" \
    || notok "docs/checkpoint.md against a checkpoint" "${undocumented:-no checkpoint: $(tail -2 "$T/documented.log")}"
finish
