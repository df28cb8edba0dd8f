#!/usr/bin/env bash
# tools/bench_overlap.sh: `make bench-overlap`. A benchmark, not a test: what overlapping the
# gradient reduction with backward buys on a slow link. Trains unet-lite on 2 ranks over the
# emulated network of tools/netns.sh (a private namespace, loopback shaped by tbf, Open MPI over
# TCP only) at LINK (1g), alternating runs with the overlap (the default) and with
# --no-overlap, REPS times each, and prints per configuration the median step time, the
# reduction time left on the critical path, and the compute-only step time.
#
#   tools/bench_overlap.sh [BUILD]        (root: it creates a network namespace)
#   env: REPS (5) STEPS (12) LINK (1g: 1g, 10g or unshaped) BATCH (8) MICRO (4)
#        BENCH_OUT (BUILD/bench-overlap: runs.tsv and the reports)
#
# Step time: the median over the steps of the wall-clock time between consecutive steps
# (metrics.jsonl's elapsed_s, rank 0; the first step, never overlapped, is left out).
# Compute-only: the --no-overlap run's step time minus its reduction seconds per step (the step
# as it would be if the network took no time at all; same run, same load). Closeness: the share
# of the gap between --no-overlap and compute-only that the overlap closes,
# (no-overlap - overlap) / (no-overlap - compute-only); the issue's target is >= 30%.
set -uo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
WILDCPU=$ROOT/$BUILD/wildcpu
REPS=${REPS:-5}
STEPS=${STEPS:-12}
LINK=${LINK:-1g}
BATCH=${BATCH:-8}
MICRO=${MICRO:-4}
OUT=${BENCH_OUT:-$ROOT/$BUILD/bench-overlap}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

BENCH_NAME=bench-overlap
die() {
    echo "bench-overlap: $*" >&2
    exit 1
}
if [ "$(id -u)" != 0 ]; then
    die "needs root: it creates a network namespace and shapes its loopback with tc (tbf). Run \`sudo make bench-overlap\`."
fi
for c in ip tc mpirun "$PY"; do command -v "$c" >/dev/null || die "needs $c"; done
[ -x "$WILDCPU" ] || die "build first: $WILDCPU"

. "$ROOT/tools/netns.sh"

rm -rf "$OUT"
mkdir -p "$OUT/runs"
echo "bench-overlap: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); namespace $NS, link $LINK"
"$WILDCPU" synth --out "$T/region" --size 1024 >"$T/synth.log" 2>&1 || {
    cat "$T/synth.log"
    die "synth failed"
}
set_link "$LINK"
echo -e "id\tmode\trep" >"$OUT/runs.tsv"
id=0
for rep in $(seq 1 "$REPS"); do
    modes=(overlap no-overlap)
    [ $((rep % 2)) = 0 ] && modes=(no-overlap overlap) # alternate which one goes first
    for mode in "${modes[@]}"; do
        id=$((id + 1))
        extra=()
        [ "$mode" = no-overlap ] && extra=(--no-overlap)
        in_ns "$T/train.log" "${MPIRUN[@]}" -np 2 "$WILDCPU" --tiles "$T/region/tiles.vrt" \
            --val-fraction 0 --no-predict --oracle '' --log-every 1 --threads 1 --seed 1 \
            --batch "$BATCH" --micro-batch "$MICRO" --steps "$STEPS" --ckpt-every "$STEPS" \
            --keep 1 --out "$T/run-$id" "${extra[@]}" || {
            tail -20 "$T/train.log"
            die "run $id ($mode) failed"
        }
        cp "$T/run-$id/report.json" "$OUT/runs/$id.report.json"
        cp "$T/run-$id/metrics.jsonl" "$OUT/runs/$id.metrics.jsonl"
        rm -rf "$T/run-$id"
        echo -e "$id\t$mode\t$rep" >>"$OUT/runs.tsv"
        echo "  run $id: $mode (rep $rep of $REPS)"
    done
done
set_link unshaped

"$PY" - "$OUT" "$LINK" "$BATCH" "$MICRO" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
d, link, batch, micro = sys.argv[1:5]
rows = [l.split("\t") for l in open(os.path.join(d, "runs.tsv")).read().split("\n")[1:] if l]
res = {"overlap": [], "no-overlap": []}
for rid, mode, rep in rows:
    rp = json.load(open(os.path.join(d, "runs", rid + ".report.json")))
    el = [json.loads(l)["elapsed_s"] for l in open(os.path.join(d, "runs", rid + ".metrics.jsonl"))
          if '"train"' in l]
    step = statistics.median([b - a for a, b in zip(el, el[1:])])
    n = rp["steps_this_run"]
    res[mode].append(dict(step=step, reduce=rp["time_reduce_s"] / n, compute=rp["time_compute_s"] / n))
med = lambda xs: statistics.median(xs)
ov = med([r["step"] for r in res["overlap"]])
no = med([r["step"] for r in res["no-overlap"]])
co = med([r["step"] - r["reduce"] for r in res["no-overlap"]])
print()
print("unet-lite, 2 ranks, link %s, batch %s in micro-batches of %s; medians of %d runs each" % (
    link, batch, micro, len(res["overlap"])))
print()
print("| configuration | step time | reduction on the critical path | compute per step |")
print("|---|---:|---:|---:|")
for mode in ("no-overlap", "overlap"):
    rs = res[mode]
    print("| %s | %.3f s (%.3f-%.3f) | %.1f ms | %.3f s |" % (
        mode, med([r["step"] for r in rs]), min(r["step"] for r in rs),
        max(r["step"] for r in rs), 1e3 * med([r["reduce"] for r in rs]),
        med([r["compute"] for r in rs])))
print("| compute-only (no-overlap step - its reduction) | %.3f s | 0 | |" % co)
print()
gap = no - co
print("overlap closes %.0f%% of the gap between --no-overlap (%.3f s) and compute-only (%.3f s): "
      "%.1f ms of %.1f ms" % (100 * (no - ov) / gap if gap > 0 else float("nan"), no, co,
                               1e3 * (no - ov), 1e3 * gap))
PY
