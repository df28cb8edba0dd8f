#!/usr/bin/env bash
# t_stop.sh: a stop signal during validation is honoured within seconds (the pending validation
# is run by the resume, which ends equal to an uninterrupted run), and a run directory says that
# it was stopped (DIR/STOPPED, `wildcpu info DIR`) even when the launcher reports its own status
# (SIGTERM to mpirun itself makes it exit 1).
. "$(dirname "$0")/lib.sh"

"$WILDCPU" synth --out "$T/r" --size 1024 --tile 256 --seed 5 >/dev/null 2>&1 || { notok synth; finish; }
# a long validation: 80% of the patches, one per micro-batch
args=(--tiles "$T/r/tiles.vrt" --val-fraction 0.8 --batch 8 --micro-batch 1 --steps 9
      --log-every 1 --no-predict --seed 2 --ckpt-every 100)
# (a progress line every 0.2 s, instead of 5: the validation says how far it is)
WILDCPU_PROGRESS_SECONDS=0.2 mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
spe=$(grep -o '([0-9]* per epoch)' "$T/ref.log" | grep -o '[0-9]*')
ref=$(digest "$T/ref/checkpoints/ckpt-00000009.wcp")
val_ref=$(grep -c '"type":"val"' "$T/ref/metrics.jsonl")
[ -n "$ref" ] && [ -n "$spe" ] && [ "$spe" -lt 9 ] && ok "reference run ($spe steps per epoch, $val_ref validations)" \
    || { notok "reference run" "$(tail -3 "$T/ref.log")"; finish; }
grep -Eq "^validation after step [0-9]+: [0-9]+ of [0-9]+ blocks \([0-9]+%\): [0-9.]+ s, about [0-9]+ s left" "$T/ref.log" \
    && ok "a long validation says how far it is (WILDCPU_PROGRESS_SECONDS=0.2)" \
    || notok "validation's progress lines" "$(grep -m3 'validation after' "$T/ref.log")"
WILDCPU_PROGRESS_SECONDS=0 "$WILDCPU" info "$T/ref" >"$T/info_env.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "WILDCPU_PROGRESS_SECONDS='0' is not a number of seconds from 0.1 to 86400: ignored" "$T/info_env.log" \
    && ok "WILDCPU_PROGRESS_SECONDS out of range: warned about and ignored" \
    || notok "WILDCPU_PROGRESS_SECONDS=0" "status $s: $(head -2 "$T/info_env.log")"

# SIGTERM to one rank while the validation after the first epoch runs
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/v" >"$T/v.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step $spe/9" "$T/v.log" && break; sleep 0.05; done
sleep 0.5
t0=$(date +%s.%N)
kill -TERM "$(pgrep -f -- "--out $T/v" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done | tail -1)"
wait $pid
s=$?
dt=$(echo "$(date +%s.%N) - $t0" | bc)
pending=$($PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import wcp
print(wcp.section(wcp.read(sys.argv[2]), "progress")[1].decode())' "$ROOT/tests" "$T/v/checkpoints/ckpt-0000000$spe.wcp" 2>/dev/null)
if [ $s -eq 75 ] && [[ $pending == val_pending=1\;* || $pending == val_pending=1 ]] && ! grep -q "validation after step $spe " "$T/v.log" &&
    [ "$(echo "$dt < 6" | bc)" = 1 ]; then
    ok "SIGTERM to one rank during validation: exit 75 in $dt s, checkpoint at step $spe with the validation pending"
else
    notok "SIGTERM during validation" "status $s in $dt s, progress '$pending': $(tail -3 "$T/v.log")"
fi
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/v" >"$T/v2.log" 2>&1
s=$?
if [ $s -eq 0 ] && grep -q "validation after step $spe " "$T/v2.log" &&
    [ "$(digest "$T/v/checkpoints/ckpt-00000009.wcp")" = "$ref" ] &&
    [ "$(grep '"type":"val"' "$T/v/metrics.jsonl" | sed 's/"elapsed_s":[0-9.]*//')" = \
      "$(grep '"type":"val"' "$T/ref/metrics.jsonl" | sed 's/"elapsed_s":[0-9.]*//')" ]; then
    ok "the resume runs the pending validation first; parameters and every validation equal the uninterrupted run's"
else
    notok "resume after a stop during validation" "status $s: $(grep -E 'validation|resuming|error' "$T/v2.log" | head -3)"
fi

# SIGTERM to mpirun itself: the ranks checkpoint and exit 75, mpirun reports 1; the directory
# says "stopped" and the rerun continues
# (mpirun itself, not a shell function around it, so that the signal reaches mpirun)
# mpirun passes SIGTERM on odls_base_sigkill_timeout seconds after it got it and sends SIGKILL as
# long after that (default 1 s): give the stop the time docs/cli.md tells users to give it, so
# that a loaded machine does not fail the test. The run must still be training 5 s after step
# 3: it trained unet-lite for 200 steps (60 took 5.0 s), and the rerun then trained the ~140
# left. Now its steps take their time without the CPU: the logistic model, a checkpoint after
# every step, each write 0.5 s slower (WILDCPU_TEST_SLOW_WRITE; training waits for the write
# before), so 40 steps last at least 20 s, and the rerun (no slow writes) finishes the rest in
# a moment. The runs stopped directly (--fresh below) get the same slow writes.
margs=(--tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 2 --steps 40 --ckpt-every 1
       --log-every 1 --no-predict)
WILDCPU_TEST_SLOW_WRITE=0.5 OMPI_MCA_odls_base_sigkill_timeout=5 \
    mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${margs[@]}" --out "$T/m" >"$T/m.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step 3/40" "$T/m.log" && break; sleep 0.05; done
kill -TERM $pid
wait $pid
s=$?
"$WILDCPU" info "$T/m" >"$T/m.info" 2>&1
if [ -f "$T/m/STOPPED" ] && grep -q "phase=training;step=[0-9]" "$T/m/STOPPED" &&
    grep -q "^state: stopped by a signal (.*phase=training" "$T/m.info"; then
    ok "SIGTERM to mpirun (which exits $s): DIR/STOPPED and info DIR say stopped with a checkpoint"
else
    notok "SIGTERM to mpirun: stop marker" "status $s: $(cat "$T/m/STOPPED" 2>&1) $(grep state "$T/m.info")$(
        grep -q '^run finished' "$T/m.log" && echo " (the run ended before mpirun passed the signal on: this machine needs more --steps in margs)")"
fi
mpirun_n 2 "$WILDCPU" "${margs[@]}" --out "$T/m" >"$T/m2.log" 2>&1
s=$?
[ $s -eq 0 ] && [ ! -e "$T/m/STOPPED" ] && grep -q "resuming from" "$T/m2.log" && ! grep -q "^state:" <("$WILDCPU" info "$T/m") \
    && ok "the rerun resumes, finishes, and the marker is gone" \
    || notok "rerun after the marker" "status $s $(ls "$T/m")"

# the marker says how the LAST run ended: a failing run after a stop removes it
WILDCPU_TEST_SLOW_WRITE=0.5 OMPI_MCA_odls_base_sigkill_timeout=5 \
    mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${margs[@]}" --out "$T/f" >"$T/f.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step 3/40" "$T/f.log" && break; sleep 0.05; done
kill -TERM $pid
wait $pid
had=$([ -f "$T/f/STOPPED" ] && echo yes)
"$WILDCPU" "${margs[@]}" --out "$T/f" --batch 9999 >"$T/f2.log" 2>&1
s=$?
[ "$had" = yes ] && [ $s -eq 1 ] && [ ! -e "$T/f/STOPPED" ] && ok "a failing run (exit 1) after a stop removes the marker" \
    || notok "failed run and the marker" "had '$had', status $s"

# a run started with --fresh (the previous run moved aside) resumes only without --fresh: its
# stop message, DIR/STOPPED and info say so (the same command would move it aside and start over)
cp -r "$T/m" "$T/fr" # a finished run, for --fresh to move aside
WILDCPU_TEST_SLOW_WRITE=0.5 "$WILDCPU" "${margs[@]}" --out "$T/fr" --fresh >"$T/fr.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step 3/40" "$T/fr.log" && break; sleep 0.05; done
kill -TERM $pid
wait $pid
s=$?
"$WILDCPU" info "$T/fr" >"$T/fr.info" 2>&1
if [ $s -eq 75 ] && grep -q "checkpoint written .*; rerun the same command without --fresh to resume" "$T/fr.log" &&
    grep -q "resume=rerun the same command without --fresh" "$T/fr/STOPPED" &&
    grep -q "^state: stopped by a signal (.*): rerun the same command without --fresh to resume" "$T/fr.info"; then
    ok "a stopped --fresh run: its message, DIR/STOPPED and info say to rerun without --fresh"
else
    notok "a stopped --fresh run" "status $s: $(grep -E 'stopped by' "$T/fr.log") | $(cat "$T/fr/STOPPED" 2>&1) | $(grep state "$T/fr.info")"
fi
"$WILDCPU" "${margs[@]}" --out "$T/fr" >"$T/fr2.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "resuming from" "$T/fr2.log" && [ "$(ls -d "$T"/fr/replaced-* 2>/dev/null | wc -l)" -eq 1 ] \
    && ok "... and so rerun, it resumes (only the run before it moved aside, by the first)" \
    || notok "the rerun of a stopped --fresh run" "status $s: $(grep -E 'resuming|fresh' "$T/fr2.log" | head -2)"


# SIGHUP (the terminal or ssh session of an interactive run closed) is a stop: a checkpoint and
# 75; under nohup, which asks for SIGHUP to be ignored, the run goes on to the end
hargs=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --log-every 1 --no-predict --ckpt-every 100)
"$WILDCPU" "${hargs[@]}" --steps 200 --out "$T/hup" >"$T/hup.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step 3/200" "$T/hup.log" && break; sleep 0.05; done
kill -HUP $pid
wait $pid
s=$?
[ $s -eq 75 ] && [ -f "$T/hup/STOPPED" ] && grep -q "stopped by Hangup after step [0-9]*: checkpoint written" "$T/hup.log" \
    && ok "SIGHUP: a stop with its checkpoint, status 75, DIR/STOPPED" \
    || notok "SIGHUP as a stop" "status $s: $(tail -2 "$T/hup.log")"
nohup "$WILDCPU" "${hargs[@]}" --steps 12 --out "$T/nohup" >"$T/nohup.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "step 3/12" "$T/nohup.log" && break; sleep 0.05; done
kill -HUP $pid
wait $pid
s=$?
[ $s -eq 0 ] && [ ! -e "$T/nohup/STOPPED" ] && [ -f "$T/nohup/checkpoints/ckpt-00000012.wcp" ] \
    && ok "SIGHUP under nohup: ignored, the run finishes" \
    || notok "SIGHUP under nohup" "status $s: $(tail -2 "$T/nohup.log")"
# A stop signal that arrives while the program is still starting (its libraries loading, or it
# executing itself again to settle OpenBLAS's threads) is a stop: status 75 and DIR/STOPPED. It
# killed the process (143, no STOPPED for a requeue to see). Made deterministic by starting the
# program with SIGTERM blocked and already pending: it must catch it once its handler is in
# place (a blocked signal stays pending across loading and exec).
# term_at_start NAME ARGS...: wildcpu ARGS with a SIGTERM pending from its first instruction
# (blocked in the parent, so inherited blocked, and delivered once the program unblocks it);
# its output goes to $T/NAME.log, its status ("hung" after 120 s) to $T/NAME.out
term_at_start() {
    local name=$1
    shift
    $PY - "$WILDCPU" "$T/$name.log" "$@" <<'PY' >"$T/$name.out" 2>&1
import os, signal, subprocess, sys
prog, log, args = sys.argv[1], sys.argv[2], sys.argv[3:]
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}  # the exec too
p = subprocess.Popen([prog] + args, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
os.kill(p.pid, signal.SIGTERM)
try:
    print(p.wait(timeout=120))
except subprocess.TimeoutExpired:
    p.kill()
    print("hung")
PY
}
term_at_start early --tiles "$T/r/tiles.vrt" --out "$T/early" --steps 400 --batch 4 --patch 32 \
    --no-predict
s=$(tail -1 "$T/early.out")
[ "$s" = 75 ] && [ -f "$T/early/STOPPED" ] \
    && ok "SIGTERM pending when the program starts: a stop (75, STOPPED)" \
    || notok "SIGTERM at start" "status $s: $(tail -2 "$T/early.log" "$T/early.out")"

# The same stop of a --fresh run over a finished one, in planning: the previous run is not set
# aside yet, and the rerun, --fresh and all, starts over, so DIR/STOPPED names no step to resume
# from (it named the previous run's newest, step 8).
"$WILDCPU" --tiles "$SAMPLE" --model logistic --epochs 2 --batch 8 --out "$T/early_fresh" \
    >"$T/early_fresh.first" 2>&1 || notok "a run for --fresh to set aside" "$(tail -2 "$T/early_fresh.first")"
term_at_start early_fresh --tiles "$SAMPLE" --out "$T/early_fresh" --model logistic --epochs 2 \
    --batch 8 --fresh
s=$(tail -1 "$T/early_fresh.out")
grep -q 'phase=planning;step=-1;.*resume=rerun the same command$' "$T/early_fresh/STOPPED" 2>/dev/null &&
    [ "$s" = 75 ] && [ -e "$T/early_fresh/checkpoints/ckpt-00000008.wcp" ] \
    && ok "a --fresh run stopped while planning: DIR/STOPPED names no step to resume from (step=-1), the previous run not yet set aside" \
    || notok "a --fresh run stopped while planning" "status $s: $(cat "$T/early_fresh/STOPPED" 2>&1)"
# SIGTERM to one rank that is not rank 0 (rank 2 of 3): rank 0, which writes the log's stop line
# and DIR/STOPPED, names that rank and its signal (they said "a signal on another rank", and the
# log "0.0 s from the signal to the end of the checkpoint", rank 0's own clock having no signal)
mpirun_n 3 "$WILDCPU" --tiles "$SAMPLE" --batch 8 --steps 500 --log-every 1 --no-predict \
    --out "$T/r2" >"$T/r2.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do grep -q "step 2/500" "$T/r2.log" && break; sleep 0.05; done
for p in $(pgrep -f -- "--out $T/r2"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2 && kill -TERM "$p"
done
pids=$(pgrep -f -- "--out $T/r2")
( sleep 120; kill -KILL $pids 2>/dev/null ) & # a hang must not hang the suite
guard=$!
wait $pid
s=$?
kill $guard 2>/dev/null
if [ $s -eq 75 ] && grep -q "^stopped by Terminated on rank 2 after step [0-9]*: checkpoint written; " "$T/r2.log" &&
    grep -q ";signal=Terminated on rank 2;" "$T/r2/STOPPED" && ! grep -q "from the signal" "$T/r2.log"; then
    ok "SIGTERM to rank 2 of 3: exit 75; the stop line and DIR/STOPPED name rank 2 and its signal"
else
    notok "SIGTERM to rank 2 of 3 named" "status $s: $(grep 'stopped by' "$T/r2.log" | cut -c1-200); $(cat "$T/r2/STOPPED" 2>&1)"
fi

# ... and a stop that reaches rank 1 alone while planning (SIGTERM pending in rank 1 from its
#     start): DIR/STOPPED names it too (it said "signal=on another rank", as the stops while
#     writing DIR/split.tif and during a pending validation did: only the checkpointed stop
#     asked the ranks where the signal came)
cat >"$T/term_rank1.py" <<'PY'
import os, signal, sys
if os.environ.get("OMPI_COMM_WORLD_RANK") == "1":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)
os.execv(sys.argv[1], sys.argv[1:])
PY
timeout -s KILL 120 mpirun --oversubscribe --bind-to none -np 2 $PY "$T/term_rank1.py" "$WILDCPU" --tiles "$T/r/tiles.vrt" \
    --out "$T/plan1" --steps 400 --batch 4 --patch 32 --no-predict >"$T/plan1.log" 2>&1
s=$?
[ $s -eq 75 ] && grep -q "^stopped_utc=[^;]*;phase=planning;step=-1;signal=Terminated on rank 1;" "$T/plan1/STOPPED" \
    && ok "SIGTERM to rank 1 alone while planning: exit 75, DIR/STOPPED names rank 1 and its signal" \
    || notok "SIGTERM to rank 1 while planning named" "status $s: $(cat "$T/plan1/STOPPED" 2>&1); $(grep -m2 -i 'stopped\|error' "$T/plan1.log")"

finish
