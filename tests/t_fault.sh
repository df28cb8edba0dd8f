#!/usr/bin/env bash
# t_fault.sh: node loss. SIGKILL of one rank (chosen at random) at a random moment, three times
# in a row, each time the same command rerun in the same directory; then a last rerun to the
# end. It must resume every time from a valid checkpoint (also when the kill landed during a
# background checkpoint write) and end bitwise equal to an uninterrupted run, with the same
# losses in metrics.jsonl. Prints the work lost per kill (steps trained after the checkpoint
# the rerun resumed from, and their seconds).
. "$(dirname "$0")/lib.sh"

steps=30
args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps $steps --ckpt-every 3
      --keep 2 --log-every 1 --no-predict --seed 11 --lr 1e-3)
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
ref=$(digest "$T/ref/checkpoints/ckpt-000000$steps.wcp")
[ -n "$ref" ] && ok "uninterrupted 2-rank run of $steps steps" || { notok "reference run" "$(tail -3 "$T/ref.log")"; finish; }

RANDOM=$$ # a different schedule of kills each time the test runs (printed below)
last_step() { grep -o 'step [0-9]*/' "$1" | tail -1 | tr -dc 0-9; }
kills=0 lost_total=0
for k in 1 2 3; do
    log=$T/run$k.log
    mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/f" >"$log" 2>&1 &
    pid=$!
    # the moment: after a random step of the k-th third of the run (so that three kills fit on
    # a machine of any speed, each later than the last), plus up to 90 ms (inside the next step
    # or a checkpoint write)
    lo=$((1 + (k - 1) * (steps - 3) / 3)) hi=$((k * (steps - 3) / 3))
    target=$((lo + RANDOM % (hi - lo + 1)))
    for _ in $(seq 1 6000); do
        [ "$(last_step "$log" 2>/dev/null)" -ge "$target" ] 2>/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.01
    done
    extra=0.0$((RANDOM % 10))
    sleep "$extra"
    delay="step $target + $extra"
    victims=($(pgrep -f -- "--out $T/f" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done))
    [ ${#victims[@]} -gt 0 ] || { wait $pid; notok "kill $k: a rank to kill" "the run ended before the kill: $(tail -1 "$log")"; break; }
    v=$((RANDOM % ${#victims[@]}))
    t_kill=$(date +%s.%N)
    kill -9 "${victims[$v]}"
    wait $pid
    at=$(last_step "$log")
    kills=$((kills + 1))
    echo "# kill $k: rank process $((v + 1)) of ${#victims[@]} after ${delay} s, at step ${at:-0}"
    echo "${at:-0} $t_kill" >"$T/kill$k"
done
# reruns until the end; each resumes from the newest valid checkpoint
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/f" >"$T/final.log" 2>&1
status=$?
# work lost per kill: the steps between the checkpoint the next run resumed from and the kill
lost=()
for k in $(seq 1 $kills); do
    next=$T/run$((k + 1)).log
    [ $k -eq $kills ] && next=$T/final.log
    from=$(sed -n 's/.*resuming from .*: \([0-9]*\) of [0-9]* steps done.*/\1/p' "$next" | head -1)
    read -r at _ <"$T/kill$k"
    lost+=("$((at - ${from:-0}))")
done
spstep=$($PY -c 'import json,sys
el=[json.loads(l)["elapsed_s"] for l in open(sys.argv[1]) if "\"train\"" in l]
d=sorted(b-a for a,b in zip(el,el[1:])); print("%.3f" % d[len(d)//2])' "$T/ref/metrics.jsonl")
echo "# work lost per kill (steps, at --ckpt-every 3): ${lost[*]}; median step ${spstep} s"
if [ $status -eq 0 ] && [ "$(digest "$T/f/checkpoints/ckpt-000000$steps.wcp")" = "$ref" ] &&
    cmp -s <(losses "$T/ref/metrics.jsonl") <(losses "$T/f/metrics.jsonl"); then
    ok "$kills random SIGKILLs of one rank, reruns: bitwise equal to the uninterrupted run, same losses"
else
    notok "random SIGKILLs, reruns: bitwise equal" "status $status: $(grep -E 'resuming|error|not usable' "$T"/run*.log "$T/final.log" | head -5)"
fi
bad=0
# at most one interval, plus the steps trained while the next checkpoint was still being written
# in the background when the kill came (a write in flight is lost, its predecessor is not)
for n in "${lost[@]}"; do [ "$n" -ge 0 ] && [ "$n" -le 6 ] || bad=1; done
[ $bad = 0 ] && ok "each rerun resumed from the newest complete checkpoint (lost ${lost[*]} steps: at most an interval of 3 and a write in flight)" \
    || notok "each rerun resumed from the newest checkpoint" "lost ${lost[*]}"

# A run killed while it writes its map, report or picture leaves their working files (no handler
# runs on SIGKILL; the COG driver's overviews .ovr.tmp too). The next run of the directory, holding its lock, removes them and says so;
# kept: a file of the user's that only starts with a dot, one of another name, one whose process
# lives (a predict writing DIR/risk.tif), one changed within 10 minutes (a process elsewhere).
touch -d '1 hour ago' "$T/ref/.risk.tif.tmp-99999999" "$T/ref/.risk.tif.out-99999999" "$T/ref/.risk.tif.out-99999999.ovr.tmp" \
    "$T/ref/.risk_classes.tif.tmp-99999999.aux.xml" "$T/ref/.report.json.tmp-99999998" "$T/ref/.notes" \
    "$T/ref/.mine.tif.tmp-99999999" "$T/ref/.risk.png.tmp-$$"
touch "$T/ref/.risk.qml.tmp-99999999"
"$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/left.log" 2>&1
s=$?
left=$(ls -A "$T/ref" | grep '^\.' | grep -v '^\.lock$' | LC_ALL=C sort | tr '\n' ' ')
want=".mine.tif.tmp-99999999 .notes .risk.png.tmp-$$ .risk.qml.tmp-99999999 "
[ $s -eq 0 ] && [ "$left" = "$want" ] && [ "$(grep -c 'removed .*, the working file of a run that was killed' "$T/left.log")" -eq 5 ] \
    && ok "the next run removes the working files a killed run left in its directory, and says so" \
    || notok "working files of a killed run" "status $s, left: $left; $(grep -m2 removed "$T/left.log")"
finish
