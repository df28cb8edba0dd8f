#!/usr/bin/env bash
# tools/bench_ckpt.sh: `make bench-ckpt`. A benchmark, not a test: what a background checkpoint
# costs a training step, and so what checkpointing every 1, 2 or 10 minutes costs, for unet-lite
# and the 10x wider data/models/unet-wide.spec, on 2 ranks (both cores busy, so the writer
# thread competes with training for a core, as on a full node).
#
#   tools/bench_ckpt.sh [BUILD]
#   env: REPS (2) STEPS (12) EVERY (4) WIDE_REPS (1) WIDE_STEPS (6) WIDE_EVERY (3)
#        BENCH_OUT (BUILD/bench-ckpt)
#
# Per network, runs alternate between a checkpoint every EVERY steps (far enough apart that a
# write ends before the next one starts) and none but the final one. The cost of one checkpoint
# on the training's critical path is EVERY times the difference of the mean step times (wall
# clock from the first to the last step, rank 0's metrics.jsonl), which holds the copy at the
# step boundary (stall_s, also printed) and the writer thread's competition for the two cores;
# the write's own time (what a synchronous write would have cost every time) is printed beside
# it. The cost at an interval of I minutes is that cost / (60 I s).
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
WILDCPU=$ROOT/$BUILD/wildcpu
REPS=${REPS:-2}
STEPS=${STEPS:-12}
EVERY=${EVERY:-4}
WIDE_REPS=${WIDE_REPS:-1}
WIDE_STEPS=${WIDE_STEPS:-6}
WIDE_EVERY=${WIDE_EVERY:-3}
OUT=${BENCH_OUT:-$ROOT/$BUILD/bench-ckpt}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
T=$(mktemp -d "${TMPDIR:-/tmp}/wildcpu-bench-ckpt.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_orte_tmpdir_base=$T
[ -x "$WILDCPU" ] || { echo "bench-ckpt: build first: $WILDCPU" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"
echo "bench-ckpt: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$WILDCPU" synth --out "$T/region" --size 1024 >/dev/null 2>&1 || { echo "bench-ckpt: synth failed" >&2; exit 1; }
echo -e "id\tnet\tmode\trep\tsteps\tevery" >"$OUT/runs.tsv"
id=0
for net in unet-lite unet-wide; do
    model=unet-lite reps=$REPS steps=$STEPS k=$EVERY
    [ $net = unet-wide ] && model=$ROOT/data/models/unet-wide.spec reps=$WIDE_REPS steps=$WIDE_STEPS k=$WIDE_EVERY
    [ "$reps" = 0 ] && continue
    for rep in $(seq 1 "$reps"); do
        for mode in every none; do
            id=$((id + 1))
            every=$k
            [ $mode = none ] && every=$((steps + 1))
            mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" --tiles "$T/region/tiles.vrt" \
                --model "$model" --val-fraction 0 --no-predict --oracle '' --log-every 1 --seed 1 \
                --batch 8 --micro-batch 4 --steps "$steps" --ckpt-every "$every" --keep 2 \
                --out "$T/run" >"$T/run.log" 2>&1 || { tail -5 "$T/run.log"; exit 1; }
            cp "$T/run/metrics.jsonl" "$OUT/$id.metrics.jsonl"
            rm -rf "$T/run"
            echo -e "$id\t$net\t$mode\t$rep\t$steps\t$k" >>"$OUT/runs.tsv"
            echo "  run $id: $net, checkpoint $mode step (rep $rep)"
        done
    done
done
"$PY" - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
d = sys.argv[1]
rows = [l.split("\t") for l in open(os.path.join(d, "runs.tsv")).read().split("\n")[1:] if l]
med = statistics.median
data = {}
for rid, net, mode, rep, steps, every in rows:
    ls = [json.loads(l) for l in open(os.path.join(d, rid + ".metrics.jsonl"))]
    el = [x["elapsed_s"] for x in ls if x["type"] == "train"]
    mean_step = (el[-1] - el[0]) / (len(el) - 1)
    ck = [x for x in ls if x["type"] == "checkpoint" and "stall_s" in x]
    e = data.setdefault((net, mode), {"step": [], "stall": [], "write": [], "k": int(every)})
    e["step"].append(mean_step)
    e["stall"] += [x["stall_s"] for x in ck]
    e["write"] += [x["seconds"] for x in ck]
print()
print("| network | step, no checkpoint | step, checkpoint every k steps | cost per checkpoint "
      "| of which stall at the boundary | background write | every 1 min | every 2 min | every 10 min |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for net in ("unet-lite", "unet-wide"):
    if (net, "every") not in data:
        continue
    a, b = data[(net, "none")], data[(net, "every")]
    cost = b["k"] * (med(b["step"]) - med(a["step"]))
    stall = med(b["stall"])
    write = med(b["write"])
    c = max(cost, stall)
    print("| %s | %.3f s | %.3f s (k = %d) | %.1f ms | %.1f ms | %.3f s | %.3f%% | %.3f%% | %.4f%% |" % (
        net, med(a["step"]), med(b["step"]), b["k"], 1e3 * cost, 1e3 * stall, write,
        100 * c / 60, 100 * c / 120, 100 * c / 600))
print()
print("Cost per checkpoint: k x (mean step with a checkpoint every k steps - mean step without), "
      "2 ranks, medians over the repetitions; negative means below the noise. The percentages "
      "use the larger of that cost and the stall.")
PY
