# tools/netns.sh: the emulated cluster network of tools/bench_scaling.sh and
# tools/bench_overlap.sh, sourced by both (after they set BENCH_NAME and define die). Creates a
# private network namespace (wcs-bench-PID) with its loopback up, a scratch directory $T, and
# the traps that remove both, and every process started in the namespace, on exit, failure,
# Ctrl-C (SIGINT), SIGTERM or SIGHUP. Gives in_ns LOG CMD... (runs CMD in the namespace),
# set_link unshaped|10g|1g (the tbf qdisc on the namespace's loopback), lo_bytes, and MPIRUN
# (Open MPI over TCP on that loopback only). No interface outside the namespace is touched.
NS=wcs-bench-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/wildcpu-$BENCH_NAME.XXXXXX")
child=
ns_made=0

# Stops every process of our namespace (only ours live there), deletes the namespace (and the
# qdisc on its loopback with it), removes the scratch directory.
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi
    if [ "$ns_made" = 1 ]; then
        local pids i
        pids=$(ip netns pids "$NS" 2>/dev/null)
        if [ -n "$pids" ]; then
            kill -TERM $pids 2>/dev/null
            for i in $(seq 50); do
                pids=$(ip netns pids "$NS" 2>/dev/null)
                [ -z "$pids" ] && break
                sleep 0.1
            done
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        fi
        [ -n "$child" ] && wait "$child" 2>/dev/null
        ip netns del "$NS" 2>/dev/null || echo "$BENCH_NAME: could not delete namespace $NS" >&2
    fi
    rm -rf "$T"
    [ "$rc" != 0 ] && echo "$BENCH_NAME: stopped (status $rc); namespace $NS and scratch removed" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "$BENCH_NAME: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_orte_tmpdir_base=$T
MPIRUN=(mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl tcp,self
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)

# Runs CMD inside the namespace, output into LOG, in the background so that a signal is acted
# on at once (the trap runs when `wait` returns), and in a session of its own (setsid) so that a
# Ctrl-C reaches this script alone, whose trap then stops everything in order. Returns CMD's
# status.
in_ns() {
    local log=$1
    shift
    setsid ip netns exec "$NS" "$@" >"$log" 2>&1 </dev/null &
    child=$!
    wait "$child"
    local rc=$?
    child=
    return $rc
}
lo_bytes() { ip netns exec "$NS" cat /sys/class/net/lo/statistics/tx_bytes; }

# ---- the namespace and its link -------------------------------------------------------------
ip netns add "$NS" || die "cannot create a network namespace (ip netns add)"
ns_made=1
ip netns exec "$NS" ip link set lo up || die "cannot bring up the namespace's loopback"

declare -A RATE=([10g]=10gbit [1g]=1gbit) BURST=([10g]=500000 [1g]=131072)
LINKS=(unshaped 10g 1g)
set_link() {
    if [ "$1" = unshaped ]; then
        ip netns exec "$NS" tc qdisc del dev lo root 2>/dev/null
        return 0
    fi
    ip netns exec "$NS" tc qdisc replace dev lo root tbf rate "${RATE[$1]}" burst "${BURST[$1]}" \
        latency 100ms || die "tc cannot put a tbf qdisc on the namespace's loopback"
}
