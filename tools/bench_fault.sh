#!/usr/bin/env bash
# tools/bench_fault.sh: `make bench-fault`. A benchmark, not a test: the work a node loss costs
# at the default checkpoint interval. Trains unet-lite on the sample region with 2 ranks and the
# default checkpoint policy (no --ckpt-every or --ckpt-minutes), SIGKILLs one rank at a random
# moment KILLS times (each after a random KILL_MIN..KILL_MAX seconds of training), reruns the same
# command each time, and prints per kill the steps and seconds of training lost (those after the
# checkpoint the rerun resumed from) and the rerun's time to its first step (the restart).
#
#   tools/bench_fault.sh [BUILD]      env: KILLS (3) KILL_MIN (70) KILL_MAX (190) BENCH_OUT
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
WILDCPU=$ROOT/$BUILD/wildcpu
KILLS=${KILLS:-3}
KILL_MIN=${KILL_MIN:-70}
KILL_MAX=${KILL_MAX:-190}
OUT=${BENCH_OUT:-$ROOT/$BUILD/bench-fault}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$WILDCPU" ] || { echo "bench-fault: build $WILDCPU first (make)" >&2; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT"
trap 'pkill -9 -f -- "--out $OUT/run" 2>/dev/null' EXIT
args=(--tiles data/sample/tiles.vrt --epochs 100000 --log-every 1 --no-predict --out "$OUT/run")
echo "bench-fault: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
first_step_time() { # seconds from the launch to the first step line of log $1
    python3 - "$1" "$2" <<'PY'
import sys, os, time
log, t0 = sys.argv[1], float(sys.argv[2])
for _ in range(6000):
    if os.path.exists(log) and "step " in open(log, errors="replace").read():
        print("%.1f" % (time.time() - t0)); break
    time.sleep(0.05)
PY
}
RANDOM=$$
printf '| kill | after | killed at step | resumed from step | steps lost | seconds lost | restart to first step |\n|---:|---:|---:|---:|---:|---:|---:|\n'
for k in $(seq 1 "$KILLS"); do
    log=$OUT/run$k.log
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${args[@]}" >"$log" 2>&1 &
    pid=$!
    restart=$(first_step_time "$log" "$t0")
    delay=$((KILL_MIN + RANDOM % (KILL_MAX - KILL_MIN + 1)))
    sleep "$delay"
    victims=($(pgrep -f -- "--out $OUT/run" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done))
    [ ${#victims[@]} -gt 0 ] || { echo "bench-fault: the run ended before kill $k" >&2; exit 1; }
    t_kill=$(date +%s.%N)
    kill -9 "${victims[$((RANDOM % ${#victims[@]}))]}"
    wait $pid 2>/dev/null
    echo "$t_kill $delay $restart" >"$OUT/kill$k"
done
# one more run resumes from the last kill; stopped by a signal once it has resumed
t0=$(date +%s.%N)
mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${args[@]}" >"$OUT/run$((KILLS + 1)).log" 2>&1 &
pid=$!
first_step_time "$OUT/run$((KILLS + 1)).log" "$t0" >/dev/null
kill -TERM $pid; wait $pid 2>/dev/null
python3 - "$OUT" "$KILLS" <<'PY'
import json, re, sys
out, kills = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in open(f"{out}/run/metrics.jsonl") if '"train"' in l]
# the median step time, from consecutive steps of one run (elapsed_s restarts with each run;
# the log keeps only the steps up to each resume point)
dts = sorted(b["elapsed_s"] - a["elapsed_s"] for a, b in zip(rows, rows[1:])
             if b["step"] == a["step"] + 1 and b["elapsed_s"] > a["elapsed_s"])
step_s = dts[len(dts) // 2] if dts else float("nan")
for k in range(1, kills + 1):
    t_kill, delay, restart = open(f"{out}/kill{k}").read().split()
    log = open(f"{out}/run{k}.log", errors="replace").read()
    at = max([int(s) for s in re.findall(r"step (\d+)/", log)] or [0])
    nxt = open(f"{out}/run{k + 1}.log", errors="replace").read()
    m = re.search(r"resuming from .*?: (\d+) of", nxt)
    frm = int(m.group(1)) if m else 0
    print(f"| {k} | {delay} s | {at} | {frm} | {at - frm} | {(at - frm) * step_s:.1f} | {restart} s |")
print(f"\nmedian step {step_s:.3f} s; seconds lost = steps lost x median step")
PY
