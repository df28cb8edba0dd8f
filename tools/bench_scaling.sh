#!/usr/bin/env bash
# tools/bench_scaling.sh: `make bench-scaling`. A benchmark, not a test: trains unet-lite (and the
# 10x wider data/models/unet-wide.spec) on 1, 2 and 4 ranks over an emulated network, measures
# the step time and the time in the reduction, fits README.md's sizing model to the
# measurements (tools/bench_scaling_fit.py) and prints the fitted parameters, measured against
# modelled step times, and the predicted step time and parallel efficiency for 8 to 1024 ranks
# on 10 GbE and 100 Gb/s InfiniBand.
#
#   tools/bench_scaling.sh [BUILD]        (root: it creates a network namespace)
#   env: REPS (3) STEPS (8) WIDE_REPS (2; 0: the wide network is modelled from its FLOPs)
#        WIDE_STEPS (3) BENCH_OUT (BUILD/bench-scaling: raw measurements and summary.txt)
#   Re-fit without measuring again: /usr/bin/python3 tools/bench_scaling_fit.py BUILD/bench-scaling
#
# The emulated network. Every rank runs inside one private network namespace (wcs-bench-PID)
# and Open MPI talks TCP over that namespace's loopback only: --mca pml ob1 (not UCX), --mca btl
# tcp,self (no shared memory), btl_tcp_if_include lo, oob_tcp_if_include lo. The loopback is
# shaped with a tbf qdisc (netem is not in this kernel):
#   unshaped  no qdisc (noqueue): as fast as the kernel's TCP and the two cores allow
#   10g       tbf rate 10gbit burst 500000  latency 100ms
#   1g        tbf rate 1gbit  burst 131072  latency 100ms
# burst = max(rate x 400 us, 128 KiB): big enough that the qdisc's hrtimer, late by up to a few
# hundred microseconds on this loaded VM, does not starve the link (iperf3 reaches 9.5 Gb/s at
# 10gbit with 512 KiB, 8.8 with 128 KiB), and at least two of the loopback's 64 KiB segments;
# small against a step's reduction (7.6 MB on the wire for unet-lite on 2 ranks), and the model
# subtracts it (the bucket refills while the ranks compute, so each reduction starts with one
# burst free). latency 100ms sizes the queue (rate x latency + burst) so that it never drops
# (2 ms or 10 ms dropped packets and cost retransmissions): TCP's small queues keep the real
# queue short. All ranks share this one link, in both directions: the emulated network is one
# shared medium of the given rate, not a switch with a link per node, and the fit accounts for
# that (see tools/bench_scaling_fit.py).
#
# Cleanup: on exit, failure, Ctrl-C (SIGINT), SIGTERM or SIGHUP every process in the namespace
# is stopped (SIGTERM, then SIGKILL after 5 s) and the namespace is deleted, which removes its
# loopback's qdisc with it; the scratch directory (region, run directories, MPI session files)
# is removed. No interface outside the namespace is touched.
set -uo pipefail

BUILD=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
WILDCPU=$ROOT/$BUILD/wildcpu
NETBENCH=$ROOT/$BUILD/tools/netbench
REPS=${REPS:-3}
STEPS=${STEPS:-8}
WIDE_REPS=${WIDE_REPS:-2}
WIDE_STEPS=${WIDE_STEPS:-3}
OUT=${BENCH_OUT:-$ROOT/$BUILD/bench-scaling}
WIDE_SPEC=$ROOT/data/models/unet-wide.spec
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

BENCH_NAME=bench-scaling
die() {
    echo "bench-scaling: $*" >&2
    exit 1
}

if [ "$(id -u)" != 0 ]; then
    die "needs root: it creates a network namespace and shapes its loopback with tc (tbf). Run \`sudo make bench-scaling\`."
fi
for c in ip tc mpirun "$PY"; do command -v "$c" >/dev/null || die "needs $c"; done
[ -x "$WILDCPU" ] && [ -x "$NETBENCH" ] || die "build first: $WILDCPU, $NETBENCH (make bench-scaling does)"

. "$ROOT/tools/netns.sh"

rm -rf "$OUT"
mkdir -p "$OUT/runs"
t_start=$(date +%s)
{
    echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "cpus=$(nproc)"
    echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor: *//p' | head -1)"
    echo "kernel=$(uname -r)"
    echo "mpi=$(mpirun --version 2>/dev/null | head -1)"
    echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for l in 10g 1g; do echo "tbf_$l=rate ${RATE[$l]} burst ${BURST[$l]} latency 100ms"; done
    echo "burst_bytes_10g=${BURST[10g]}"
    echo "burst_bytes_1g=${BURST[1g]}"
    echo "reps=$REPS steps=$STEPS wide_reps=$WIDE_REPS wide_steps=$WIDE_STEPS"
} >"$OUT/machine.txt"
echo "bench-scaling: $(sed -n 's/^cpu=//p' "$OUT/machine.txt"), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); namespace $NS"

echo "bench-scaling: a region to train on (wildcpu synth --size 1536)"
"$WILDCPU" synth --out "$T/region" --size 1536 >"$T/synth.log" 2>&1 || {
    cat "$T/synth.log"
    die "synth failed"
}
TILES=$T/region/tiles.vrt

# ---- 1. the link: does the shaping work? ------------------------------------------------------
have_iperf=0
command -v iperf3 >/dev/null && have_iperf=1
echo "bench-scaling: measuring each link (MPI ping-pong between 2 ranks$([ $have_iperf = 1 ] && echo ', iperf3 TCP'))"
: >"$OUT/pingpong.txt"
for round in 1 2 3; do # interleaved, so that a burst of other load does not hit one link only
    for l in "${LINKS[@]}"; do
        set_link "$l"
        in_ns "$T/pp.log" "${MPIRUN[@]}" -np 2 "$NETBENCH" pingpong 10 || {
            cat "$T/pp.log"
            die "netbench pingpong failed on link $l"
        }
        grep '^pingpong' "$T/pp.log" | sed "s/^/link=$l round=$round /" >>"$OUT/pingpong.txt"
        if [ "$have_iperf" = 1 ] && [ "$round" = 1 ]; then
            setsid ip netns exec "$NS" iperf3 -s -1 -p 5201 >/dev/null 2>&1 </dev/null &
            srv=$!
            sleep 0.3
            in_ns "$T/iperf.log" iperf3 -c 127.0.0.1 -p 5201 -t 2 -f m
            g=$(awk '/sender/ {for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") print $i}' "$T/iperf.log")
            echo "link=$l iperf3 Mbps=${g:-nan}" >>"$OUT/pingpong.txt"
            wait "$srv" 2>/dev/null
        fi
    done
done
if [ "$have_iperf" = 0 ]; then
    echo "  (iperf3 not installed: \`apt-get install iperf3\` adds a raw TCP throughput check)"
fi

# ---- 2. warm-up runs: parameter counts and FLOPs ------------------------------------------------
set_link unshaped
COMMON=(--tiles "$TILES" --val-fraction 0 --no-predict --oracle '' --log-every 1 --threads 1
    --seed 1 --keep 1)
declare -A PARAMS GFLOP
for net in unet-lite unet-wide; do
    model=unet-lite
    [ "$net" = unet-wide ] && model=$WIDE_SPEC
    in_ns "$T/warm.log" "${MPIRUN[@]}" -np 1 "$WILDCPU" "${COMMON[@]}" --model "$model" \
        --out "$T/warm-$net" --batch 4 --micro-batch 4 --steps 1 --ckpt-every 1 || {
        tail -20 "$T/warm.log"
        die "warm-up run of $net failed"
    }
    PARAMS[$net]=$(sed -n 's/.*: \([0-9]*\) parameters, \([0-9.]*\) GFLOP per sample.*/\1/p' "$T/warm.log" | head -1)
    GFLOP[$net]=$(sed -n 's/.*: \([0-9]*\) parameters, \([0-9.]*\) GFLOP per sample.*/\2/p' "$T/warm.log" | head -1)
    [ -n "${PARAMS[$net]}" ] || die "no parameter count in the log of $net"
    echo "net=$net params=${PARAMS[$net]} gflop_per_sample=${GFLOP[$net]}" >>"$OUT/machine.txt"
    echo "  $net: ${PARAMS[$net]} parameters, ${GFLOP[$net]} GFLOP per sample (forward + backward)"
    rm -rf "$T/warm-$net"
done

# ---- 3. the reduction alone: netbench allreduce after a barrier --------------------------------
# The same collectives as a step (int64 sum of P + 8 values for the exact reduction, float sum
# of P for --fast-reduce, then a MAX of 22 doubles), with no compute to wait for.
echo "bench-scaling: the reduction alone (netbench allreduce, 2 and 4 ranks, each link, 3 interleaved rounds)"
: >"$OUT/allreduce.txt"
P=${PARAMS[unet-lite]}
PW=${PARAMS[unet-wide]}
for round in 1 2 3; do
    for l in "${LINKS[@]}"; do
        set_link "$l"
        for n in 2 4; do
            for spec in "$((P + 8)) i64 5 unet-lite exact" "$P f32 5 unet-lite fast" \
                "$((PW + 8)) i64 2 unet-wide exact"; do
                set -- $spec
                [ "$4" = unet-wide ] && [ "$WIDE_REPS" = 0 ] && continue
                in_ns "$T/ar.log" "${MPIRUN[@]}" -np "$n" "$NETBENCH" allreduce "$1" "$2" "$3" || {
                    cat "$T/ar.log"
                    die "netbench allreduce failed"
                }
                line=$(grep '^allreduce' "$T/ar.log")
                echo "link=$l net=$4 mode=$5 round=$round $line" >>"$OUT/allreduce.txt"
            done
        done
    done
    echo "  round $round of 3 done"
done

# ---- 4. training runs, interleaved ----------------------------------------------------------------
# One configuration: NET RANKS LINK MODE BATCH STEPS. Runs it, keeps report.json and
# metrics.jsonl (small) under OUT/runs, appends a line to OUT/runs.tsv.
run_id=0
echo -e "id\tnet\tranks\tlink\tmode\trep\tbatch\tmicro\tsteps\tlo_bytes\tload1\tseconds" >"$OUT/runs.tsv"
train_run() {
    local net=$1 n=$2 link=$3 mode=$4 batch=$5 steps=$6 rep=$7
    local model=unet-lite extra=()
    [ "$net" = unet-wide ] && model=$WIDE_SPEC
    [ "$mode" = fast ] && extra=(--fast-reduce)
    run_id=$((run_id + 1))
    local id
    id=$(printf '%03d' $run_id)
    set_link "$link"
    local load b0 b1 t0 t1
    load=$(cut -d' ' -f1 /proc/loadavg)
    b0=$(lo_bytes)
    t0=$(date +%s.%N)
    in_ns "$T/train.log" "${MPIRUN[@]}" -np "$n" "$WILDCPU" "${COMMON[@]}" --model "$model" \
        --out "$T/run-$id" --batch "$batch" --micro-batch 4 --steps "$steps" \
        --ckpt-every "$steps" "${extra[@]}" || {
        tail -30 "$T/train.log"
        die "training run $id ($net, $n ranks, $link, $mode) failed"
    }
    t1=$(date +%s.%N)
    b1=$(lo_bytes)
    cp "$T/run-$id/report.json" "$OUT/runs/$id.report.json"
    cp "$T/run-$id/metrics.jsonl" "$OUT/runs/$id.metrics.jsonl"
    rm -rf "$T/run-$id"
    echo -e "$id\t$net\t$n\t$link\t$mode\t$rep\t$batch\t4\t$steps\t$((b1 - b0))\t$load\t$(awk "BEGIN {print $t1 - $t0}")" >>"$OUT/runs.tsv"
    printf '  run %s  %-9s %d rank%s %-8s %-5s rep %d: %s\n' "$id" "$net" "$n" \
        "$([ "$n" = 1 ] && echo ' ' || echo s)" "$link" "$mode" "$rep" \
        "$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["steps_this_run"]
print("%.3f s/step compute, %.1f ms/step reduction" % (r["time_compute_s"]/s, 1e3*r["time_reduce_s"]/s))' "$OUT/runs/$id.report.json")"
}

configs=()
configs+=("unet-lite 1 unshaped exact 32 $STEPS" "unet-lite 1 unshaped fast 32 $STEPS")
for l in "${LINKS[@]}"; do
    for n in 2 4; do
        for m in exact fast; do configs+=("unet-lite $n $l $m 32 $STEPS"); done
    done
done
wide=()
if [ "$WIDE_REPS" != 0 ]; then
    wide+=("unet-wide 1 unshaped exact 8 $WIDE_STEPS")
    for l in "${LINKS[@]}"; do wide+=("unet-wide 2 $l exact 8 $WIDE_STEPS"); done
    wide+=("unet-wide 4 1g exact 16 $WIDE_STEPS")
fi
total=$((${#configs[@]} * REPS + ${#wide[@]} * WIDE_REPS))
echo "bench-scaling: $total training runs (${#configs[@]} unet-lite configurations x $REPS, ${#wide[@]} unet-wide x $WIDE_REPS), interleaved"
maxreps=$((REPS > WIDE_REPS ? REPS : WIDE_REPS))
for rep in $(seq 1 "$maxreps"); do
    # each repetition starts the cycle at a different place, so slow drift of the machine's
    # load does not always land on the same configuration
    list=()
    [ "$rep" -le "$REPS" ] && list+=("${configs[@]}")
    [ "$rep" -le "$WIDE_REPS" ] && list+=("${wide[@]}")
    k=${#list[@]}
    for i in $(seq 0 $((k - 1))); do
        set -- ${list[$(((i + (rep - 1) * 5) % k))]}
        train_run "$1" "$2" "$3" "$4" "$5" "$6" "$rep"
    done
done
set_link unshaped
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo "elapsed_s=$(($(date +%s) - t_start))" >>"$OUT/machine.txt"

# ---- 5. the fit and the tables ----------------------------------------------------------------------
"$PY" "$ROOT/tools/bench_scaling_fit.py" "$OUT" | tee "$OUT/summary.txt"
echo "bench-scaling: $(($(date +%s) - t_start)) s; raw measurements and summary.txt in $OUT"
