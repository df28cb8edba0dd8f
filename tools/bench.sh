#!/usr/bin/env bash
# tools/bench.sh [BUILD]: `make bench`. wildcpu's training throughput against its PyTorch peer
# (../shared/bench/torch_ref.py), side by side on this machine:
#
#   1 rank x 1 thread     build/tools/bench                  vs torch_ref.py bench (1 thread)
#   1 rank x 2 threads    build/tools/bench --threads 2      vs wildcpu's 1 x 1
#   2 ranks x 1 thread    mpirun -np 2 bench --mpi           vs torch_ref.py ddp --ranks 2, and
#                                                               wildcpu's 1 x 1
#   peak RSS of the 1 x 1 runs; achieved (nominal) GFLOP/s against a 2048^3 sgemm on one core
#   prediction Mpx/s on 1 and 2 threads (with --predict: trains a small model first)
#   how fast one core reads 8 MiB another core wrote (tools/cache_share.c), once per round: where
#   the cores do not share a cache, a second thread or rank gains less, and on a VM that can
#   change from one round to the next
#
# Machines here are shared and noisy: every configuration runs once per round, the rounds
# interleave them, and the summary gives medians, ranges and per-round ratios. Batch 16 of
# 12x64x64 per rank, micro-batch 16 (BENCH_MICRO to change). Environment: BENCH_ROUNDS (3),
# BENCH_SECONDS (4 per repetition, 3 repetitions per run), TORCH_REF (the peer's script).
# OPENBLAS_CORETYPE and the like are passed through untouched (unset, wildcpu's own rule for a
# CPU OpenBLAS does not recognize applies, as in a real run: include/wildcpu/blas_core.h).
set -euo pipefail
build=${1:-build}
[ "${2:-}" = --predict ] && predict=1 || predict=${BENCH_PREDICT:-0}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${BENCH_ROUNDS:-3}
secs=${BENCH_SECONDS:-4}
micro=${BENCH_MICRO:-16}
torch=${TORCH_REF:-$root/../shared/bench/torch_ref.py}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wildcpu-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export OMPI_MCA_orte_tmpdir_base=$tmp
log=$tmp/results.jsonl
bench=$build/tools/bench
common=(--batch 16 --micro-batch "$micro" --seconds "$secs" --reps 3)

have_torch=1
$PY -c 'import torch' 2>/dev/null && [ -f "$torch" ] || have_torch=0
[ $have_torch = 1 ] || echo "bench: no PyTorch peer ($torch or python3-torch missing): wildcpu only" >&2

# tag JSON-LINE: the line with "config" added, appended to the log
record() { $PY -c 'import json,sys; d=json.loads(sys.argv[2]); d["config"]=sys.argv[1]; print(json.dumps(d))' "$1" "$2" >>"$log"; }
last_json() { grep '^{' | tail -1; }

if [ "$predict" = 1 ]; then
    echo "bench: training a small model for the prediction figures" >&2
    "$build/wildcpu" --tiles data/sample/tiles.vrt --out "$tmp/model" --steps 8 --batch 8 \
        --no-predict >"$tmp/train.log" 2>&1 || { tail -5 "$tmp/train.log" >&2; exit 1; }
fi

for r in $(seq 1 "$rounds"); do
    echo "bench: round $r of $rounds" >&2
    record cs "$("$build/tools/cache_share" --json 8 | last_json)"
    record w1 "$("$bench" "${common[@]}" --threads 1 | last_json)"
    [ $have_torch = 1 ] && record t1 "$($PY "$torch" bench --threads 1 --seconds $((3 * secs)) 2>/dev/null | last_json)"
    record w2 "$("$bench" "${common[@]}" --threads 2 --no-sgemm | last_json)"
    record r2 "$(mpirun --oversubscribe --bind-to none -np 2 "$bench" --mpi "${common[@]}" --no-sgemm | last_json)"
    [ $have_torch = 1 ] && record d2 "$($PY "$torch" ddp --ranks 2 --seconds $((3 * secs)) 2>/dev/null | last_json)"
    if [ "$predict" = 1 ]; then
        for t in 1 2; do
            out=$("$build/wildcpu" predict --tiles data/sample/tiles.vrt --checkpoint "$tmp/model" \
                      --out "$tmp/risk.tif" --threads $t 2>&1 | grep -o '[0-9.]* Mpx/s' | tail -1 | cut -d' ' -f1)
            record p$t "{\"mpx_per_s\": ${out:-0}}"
        done
    fi
done

$PY - "$log" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for d in rows:
    by.setdefault(d["config"], []).append(d)
def vals(c, k): return [d[k] for d in by.get(c, []) if k in d]
def med(v): return statistics.median(v) if v else float("nan")
def rng(v): return f"{min(v):.3g}-{max(v):.3g}" if v else "-"
def pair(a, b, k="samples_per_s"):  # per-round ratios a/b
    return [x[k] / y[k] for x, y in zip(by.get(a, []), by.get(b, [])) if y.get(k)]
w1 = by.get("w1", [{}])[0]
print(f"\nCPU: {w1.get('cpu_model', '?')} ({w1.get('cpu_vendor', '?')} family {w1.get('cpu_family', '?')} "
      f"model {w1.get('cpu_model_number', '?')}; {w1.get('online_cpus', '?')} online; {w1.get('cpu_isa', '?')}); "
      f"OpenBLAS core {w1.get('openblas_core', '?')} (chosen by {w1.get('openblas_core_origin', '?')}; "
      f"{w1.get('openblas_config', '?')}); "
      f"Winograd products {w1.get('winograd_products', '?')}")
print(f"{len(by.get('w1', []))} rounds; batch {w1.get('batch_per_rank')} of 12x64x64 per rank, micro-batch "
      f"{w1.get('micro_batch')}; medians (ranges); ratios are medians of per-round pairs\n")
print("| metric | wildcpu | peer | ratio | target |")
print("|---|---|---|---|---|")
def line(name, a, b, ratio, target):
    print(f"| {name} | {a} | {b} | {ratio} | {target} |")
s = vals("w1", "samples_per_s"); t = vals("t1", "samples_per_s")
line("samples/s, 1 rank x 1 thread", f"{med(s):.2f} ({rng(s)})", f"{med(t):.2f} ({rng(t)}) torch bench",
     f"{med(pair('w1', 't1')):.2f}x ({rng(pair('w1', 't1'))})", ">= 1.5x")
g = vals("w1", "gflops_nominal"); p = vals("w1", "sgemm_2048_gflops_1thread")
frac = [a / b for a, b in zip(g, p) if b]
line("nominal GFLOP/s vs sgemm 2048^3 (1 core)", f"{med(g):.1f}", f"sgemm {med(p):.1f}", f"{med(frac):.2f} of peak", "report")
s2 = vals("w2", "samples_per_s")
line("samples/s, 1 rank x 2 threads", f"{med(s2):.2f} ({rng(s2)})", "", f"{med(pair('w2', 'w1')):.2f}x of 1x1 ({rng(pair('w2', 'w1'))})", ">= 1.7x")
r2 = vals("r2", "samples_per_s"); d2 = vals("d2", "samples_per_s")
line("samples/s, 2 ranks x 1 thread", f"{med(r2):.2f} ({rng(r2)})", f"{med(d2):.2f} ({rng(d2)}) torch DDP",
     f"{med(pair('r2', 'd2')):.2f}x of DDP; {med(pair('r2', 'w1')):.2f}x of 1 rank ({rng(pair('r2', 'w1'))})", ">= 1.3x; >= 1.9x")
m = vals("w1", "peak_rss_mb"); tm = vals("t1", "peak_rss_mb")
line("peak RSS, MB (1 x 1)", f"{med(m):.0f}", f"{med(tm):.0f}", f"{med(m) / med(tm):.2f}x" if tm else "-", "<= 0.5x")
cs = [d["other_core_gbps"] / d["same_core_gbps"] for d in by.get("cs", []) if d.get("same_core_gbps")]
if cs:
    line("8 MiB written by one core, read by the other, GB/s", f"{med(vals('cs', 'other_core_gbps')):.1f}",
         f"by itself {med(vals('cs', 'same_core_gbps')):.1f}", "per round " + " ".join(f"{x:.2f}" for x in cs),
         "report (< 1: no shared cache)")
if "p1" in by:
    p1 = vals("p1", "mpx_per_s"); p2 = vals("p2", "mpx_per_s")
    line("prediction Mpx/s (sample region, 1 / 2 threads)", f"{med(p1):.3f} / {med(p2):.3f}", "", f"{med(pair('p2', 'p1', 'mpx_per_s')):.2f}x", "report")
EOF
