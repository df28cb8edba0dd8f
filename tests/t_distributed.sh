#!/usr/bin/env bash
# t_distributed.sh: data-parallel training under real MPI.
#
#   - bitwise-identical parameters after EVERY step (a checkpoint per step, compared by digest)
#     and identical metrics.jsonl losses and validation metrics, on 1, 2, 3 and 4 ranks, with
#     8 micro-batches per step (3 ranks: an uneven 3/3/2 split; 4 ranks with micro-batches of
#     2 out of a batch of 14: 2/2/2/1);
#   - the same bits with the reduction overlapped with backward (the default) and without
#     (--no-overlap: 1 process, 3 ranks, and 4 ranks with the uneven split), also across a
#     resume that changes it;
#   - the MPI path (mpirun -np 1) equals a plain single process without a launcher (a singleton);
#   - --fast-reduce is close to, but need not equal, the exact reduction;
#   - SIGKILL of one rank mid-step ends the whole job, non-zero, within 30 s;
#   - a launcher that started singletons (SLURM_NTASKS disagrees with the world) is refused;
#   - ranks that see other inputs (a per-rank working directory: one tile of another region, a
#     missing oracle) are refused, naming the rank and the file, for training and predict; so is
#     a --model spec file that differs on one rank, and one missing there ends every rank.
. "$(dirname "$0")/lib.sh"

steps=6
common=(--tiles "$SAMPLE" --patch 32 --steps $steps --ckpt-every 1 --keep 100 --log-every 1
        --no-predict --seed 5 --lr 1e-3)
run() { # run NAME NRANKS(0 = no launcher) ARGS...
    local name=$1 n=$2
    shift 2
    if [ "$n" -eq 0 ]; then
        "$WILDCPU" "${common[@]}" "$@" --out "$T/$name" >"$T/$name.log" 2>&1
    else
        mpirun_n "$n" "$WILDCPU" "${common[@]}" "$@" --out "$T/$name" >"$T/$name.log" 2>&1
    fi
}
digests() { # one line per step: "step digest" (one python start for all steps, not a wildcpu
    # info per checkpoint): a 64-bit hash of the checkpoint's `params` section, the bytes `wildcpu
    # info`'s digest hashes, after checking the magic, header step, size and CRC-32 as a resume
    # does (tests/wcp.py); an unreadable or invalid checkpoint gives an empty digest, as info's
    # INVALID did
    $PY - "$ROOT/tests" "$T/$1/checkpoints" "$steps" <<'PY'
import hashlib, struct, sys, zlib
sys.path.insert(0, sys.argv[1])
import wcp
for s in range(1, int(sys.argv[3]) + 1):
    try:
        ck = wcp.read("%s/ckpt-%08d.wcp" % (sys.argv[2], s), check=True)
        params = wcp.section(ck, "params")[1]
        d = hashlib.blake2b(params, digest_size=8).hexdigest() if ck["step"] == s else ""
    except (OSError, ValueError, KeyError, struct.error, zlib.error):
        d = ""
    print(s, d)
PY
}
vals() { $PY -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["type"] == "val": d.pop("type"); print(json.dumps(d, sort_keys=True))' "$1"; }

# batch 16 in micro-batches of 2: 8 micro-batches per step
run single 0 --batch 16 --micro-batch 2
digests single >"$T/single.dig"
if [ "$(grep -c ' [0-9a-f]\{16\}$' "$T/single.dig")" -eq $steps ]; then ok "singleton run (no launcher) trains"
else notok "singleton run (no launcher) trains" "$(tail -3 "$T/single.log")"; fi
losses "$T/single/metrics.jsonl" >"$T/single.loss"
vals "$T/single/metrics.jsonl" >"$T/single.val"
for n in 1 2 3 4; do
    run "np$n" "$n" --batch 16 --micro-batch 2
    digests "np$n" >"$T/np$n.dig"
    if cmp -s "$T/single.dig" "$T/np$n.dig"; then
        ok "$n rank(s): parameters bitwise equal to the single process after every one of $steps steps"
    else
        notok "$n rank(s): parameters bitwise equal after every step" "$(diff "$T/single.dig" "$T/np$n.dig" | head -4; tail -2 "$T/np$n.log")"
    fi
    if cmp -s "$T/single.loss" <(losses "$T/np$n/metrics.jsonl") && cmp -s "$T/single.val" <(vals "$T/np$n/metrics.jsonl"); then
        ok "$n rank(s): metrics.jsonl losses and validation metrics identical"
    else
        notok "$n rank(s): metrics.jsonl losses and validation metrics identical" "$(diff "$T/single.loss" <(losses "$T/np$n/metrics.jsonl") | head -3)"
    fi
done
[ "$(json "$T/np3/report.json" ranks)" = 3 ] && ok "report records 3 ranks" || notok "report records 3 ranks"

# an uneven last micro-batch: batch 14 in micro-batches of 2 is 7 per step; on 4 ranks 2/2/2/1
run s14 0 --batch 14 --micro-batch 2
run p14 4 --batch 14 --micro-batch 2
digests s14 >"$T/s14.dig"
[ "$(grep -c ' [0-9a-f]\{16\}$' "$T/s14.dig")" -eq $steps ] && cmp -s "$T/s14.dig" <(digests p14) && ok "4 ranks, 7 micro-batches per step (2/2/2/1): bitwise equal" \
    || notok "4 ranks, 7 micro-batches: bitwise equal" "$(diff "$T/s14.dig" <(digests p14) | head -3)"

# --no-overlap: the whole gradient after backward, the same bits as the overlapped buckets
grep -q 'overlapped with backward in [0-9]* bucket' "$T/np2.log" && ok "the reduction is overlapped by default (log names the buckets)" \
    || notok "the reduction is overlapped by default" "$(grep -m1 'reduction' "$T/np2.log")"
run single_no 0 --batch 16 --micro-batch 2 --no-overlap
run np3_no 3 --batch 16 --micro-batch 2 --no-overlap
run p14_no 4 --batch 14 --micro-batch 2 --no-overlap
grep -q 'not overlapped (--no-overlap)' "$T/np3_no.log" && cmp -s "$T/single.dig" <(digests single_no) && cmp -s "$T/single.dig" <(digests np3_no) \
    && cmp -s "$T/single.loss" <(losses "$T/np3_no/metrics.jsonl") \
    && ok "--no-overlap on 1 and 3 ranks: bitwise equal to the overlapped runs after every step" \
    || notok "--no-overlap bitwise equal to overlap" "$(diff "$T/single.dig" <(digests np3_no) | head -3; grep -m1 reduction "$T/np3_no.log")"
cmp -s "$T/s14.dig" <(digests p14_no) && ok "--no-overlap, 4 ranks, 2/2/2/1 micro-batches: bitwise equal" \
    || notok "--no-overlap, 4 ranks, 2/2/2/1: bitwise equal" "$(diff "$T/s14.dig" <(digests p14_no) | head -3)"

# the setting may change across a resume (docs/cli.md, What a resume must match): overlapped on
# 1 process to step 3 (killed writing checkpoint 4), resumed --no-overlap on 3 ranks
(WILDCPU_TEST_CRASH_CKPT=0.5@4 exec "$WILDCPU" "${common[@]}" --batch 16 --micro-batch 2 --out "$T/sw") >"$T/sw1.log" 2>&1
run sw 3 --batch 16 --micro-batch 2 --no-overlap
grep -q "resuming from .*ckpt-00000003.wcp" "$T/sw.log" && cmp -s "$T/single.dig" <(digests sw) \
    && ok "resumed at step 3 with --no-overlap on 3 ranks: bitwise equal after every step" \
    || notok "a resume that changes --no-overlap" "$(grep -m1 -E 'resum|error' "$T/sw.log"; diff "$T/single.dig" <(digests sw) | head -3)"

# the fast reduction: approximately equal, and it must not silently be the exact one
run fast 2 --batch 16 --micro-batch 2 --fast-reduce
$PY - "$T/single/metrics.jsonl" "$T/fast/metrics.jsonl" <<'PY' >"$T/fast.cmp"
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"train"' in l]
b = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"train"' in l]
print(max(abs(x - y) / abs(x) for x, y in zip(a, b)) if len(a) == len(b) else 1.0)
PY
rel=$(cat "$T/fast.cmp")
$PY -c "import sys; sys.exit(0 if $rel < 1e-3 else 1)" && ok "--fast-reduce on 2 ranks: losses within $rel of the exact reduction" \
    || notok "--fast-reduce close to exact" "relative difference $rel"
dfast=$(digest "$T/fast/checkpoints/ckpt-0000000$steps.wcp")
[ -n "$dfast" ] && [ "$dfast" != "$(digest "$T/single/checkpoints/ckpt-0000000$steps.wcp")" ] \
    && ok "--fast-reduce is a different (float) reduction, not the exact one" \
    || notok "--fast-reduce is a different (float) reduction" "same digest as the exact run"

# SIGKILL one rank in the middle of training: everyone ends, non-zero, within 30 s
mpirun_n 2 "$WILDCPU" --tiles "$SAMPLE" --patch 64 --batch 16 --micro-batch 2 --steps 500 \
    --no-predict --out "$T/kill" --log-every 1 >"$T/kill.log" 2>&1 &
mpipid=$!
for _ in $(seq 1 600); do grep -q "step 2/" "$T/kill.log" 2>/dev/null && break; sleep 0.1; done
victim=$(pgrep -f -- "--out $T/kill" | while read -r p; do
    [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done | tail -1)
t0=$(date +%s.%N)
kill -9 "$victim"
for _ in $(seq 1 400); do kill -0 $mpipid 2>/dev/null || break; sleep 0.1; done
if kill -0 $mpipid 2>/dev/null; then
    notok "SIGKILL of one rank ends the job within 30 s" "still running after 40 s"
    pkill -9 -f -- "--out $T/kill"
    wait $mpipid
else
    wait $mpipid
    status=$?
    dt=$(echo "$(date +%s.%N) - $t0" | bc)
    left=$(pgrep -f -- "--out $T/kill" | wc -l)
    if [ $status -ne 0 ] && [ "$left" -eq 0 ] && [ "$(echo "$dt < 30" | bc)" = 1 ]; then
        ok "SIGKILL of one rank mid-step: job ended with status $status after ${dt%???????} s, no rank left"
    else
        notok "SIGKILL of one rank ends the job" "status $status after $dt s, $left processes left"
    fi
fi

# a launcher that starts N singletons instead of one N-rank job
SLURM_NTASKS=2 SLURM_STEP_ID=0 "$WILDCPU" "${common[@]}" --batch 16 --out "$T/mis" >"$T/mis.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "Slurm started 2 tasks but MPI sees a world of 1" "$T/mis.log" \
    && ok "SLURM_NTASKS disagreeing with the MPI world is refused" \
    || notok "SLURM_NTASKS disagreeing with the MPI world is refused" "status $status: $(tail -2 "$T/mis.log")"
# mpirun's ranks on a node it reached through srun inherit the orted step's SLURM_STEP_ID and its
# SLURM_NTASKS (the count of nodes): not the world's size, and no sign of a wrong launcher. The
# same environment given to a local mpirun: the run goes on (it was refused, status 1). (One step
# of the logistic model: the check is of the launcher's variables, before any network is built.)
SLURM_NTASKS=1 SLURM_STEP_ID=0 timeout -s KILL 300 mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" "${common[@]}" --batch 16 \
    --steps 1 --model logistic --out "$T/orted" >"$T/orted.log" 2>&1
status=$?
[ $status -eq 0 ] && ! grep -q 'MPI sees a world' "$T/orted.log" \
    && ok "mpirun's ranks under an orted step's SLURM_NTASKS=1 SLURM_STEP_ID=0: not refused" \
    || notok "mpirun's ranks under an orted step's Slurm variables" "status $status: $(grep -m2 error "$T/orted.log")"
# Ranks that see other files behind the same command line: each rank runs in its own working
# directory (the wrapper), whose data/ is a copy of the sample; rank 1's differs in one tile
# (its values changed, the same size), then lacks the default oracle.
mkdir -p "$T/cw0" "$T/cw1" "$T/same" "$T/other" "$T/nooracle"
cp -a "$(dirname "$SAMPLE")"/. "$T/same/"
cp -a "$T/same"/. "$T/other/"
tile=$(cd "$T/same/tiles" && ls | grep -v aux | head -1)
cp -a "$T/same"/. "$T/nooracle/"
rm -f "$T/nooracle/oracle_risk.tif"
printf '#!/bin/bash\ncd "%s/cw$OMPI_COMM_WORLD_RANK" && exec "$@"\n' "$T" >"$T/percwd.sh"
chmod +x "$T/percwd.sh"
ln -sfn "$T/same" "$T/cw0/data"
each() { # each NAME RANK1-DATA ARGS...: 2 ranks, rank 1 on RANK1-DATA
    local name=$1 data=$2
    shift 2
    ln -sfn "$T/$data" "$T/cw1/data"
    timeout -s KILL 120 mpirun --oversubscribe --bind-to none -np 2 "$T/percwd.sh" "$WILDCPU" "$@" \
        >"$T/$name.log" 2>&1
}
# the other tile: the same file with its first band's values changed (a stale copy)
$PY - "$T/other/tiles/$tile" <<'PY'
import sys
from osgeo import gdal
ds = gdal.Open(sys.argv[1], gdal.GA_Update)
band = ds.GetRasterBand(1)
band.WriteArray(band.ReadAsArray() // 2)
ds = None
PY
cmp -s "$T/same/tiles/$tile" "$T/other/tiles/$tile" && notok "a differing tile for rank 1" "the copy is the same file"
each agree same --tiles data/tiles.vrt --patch 32 --steps 1 --batch 4 --no-predict --out "$T/agree"
s1=$?
each differ other --tiles data/tiles.vrt --patch 32 --steps 1 --batch 4 --no-predict --out "$T/differ"
s2=$?
each nooracle nooracle --tiles data/tiles.vrt --patch 32 --steps 1 --batch 4 --no-predict --out "$T/noor"
s3=$?
each pdiffer other predict --tiles data/tiles.vrt --checkpoint "$T/agree" --out "$T/pdiffer.tif"
s4=$?
if [ $s1 -eq 0 ] && [ $s2 -eq 1 ] && [ $s3 -eq 1 ] && [ $s4 -eq 1 ] &&
    grep -q "rank 1 reads another data/tiles/$tile than rank 0" "$T/differ.log" &&
    grep -q "rank 1 reads another data/tiles/$tile than rank 0" "$T/pdiffer.log" &&
    grep -q "rank 1 cannot read data/oracle_risk.tif, which rank 0 reads" "$T/nooracle.log" &&
    ! grep -q MPI_ERR "$T/differ.log" "$T/nooracle.log" && [ ! -e "$T/pdiffer.tif" ]; then
    ok "ranks that see other inputs (a tile with other values, no oracle) are refused naming the rank and the file; the same files on every rank train"
else
    notok "ranks that see other inputs" "status $s1 $s2 $s3 $s4: $(grep -h error "$T/differ.log" "$T/nooracle.log" "$T/pdiffer.log" "$T/agree.log" | head -3 | cut -c1-250)"
fi
# A --model spec file each rank reads itself: rank 1's copy without the ReLU (the same
# parameters, another network: it trained two networks as one, status 0), then without the file
# (rank 1 alone returned, rank 0 waited for it for ever). Refused, naming the rank and the file.
mkdir -p "$T/otherspec" "$T/nospec"
cp -a "$T/same"/. "$T/otherspec/"
cp -a "$T/same"/. "$T/nospec/"
printf 'input x\nconv a x out=8 k=3 pad=1\nrelu b a\nconv h b out=1 k=1\n' >"$T/same/m.spec"
printf 'input x\nconv a x out=8 k=3 pad=1\nconv h a out=1 k=1\n' >"$T/otherspec/m.spec"
spec=(--tiles data/tiles.vrt --model data/m.spec --patch 32 --steps 1 --batch 4 --no-predict)
each magree same "${spec[@]}" --out "$T/magree"
s1=$?
each mdiffer otherspec "${spec[@]}" --out "$T/mdiffer"
s2=$?
each mmissing nospec "${spec[@]}" --out "$T/mmissing"
s3=$?
if [ $s1 -eq 0 ] && [ $s2 -eq 1 ] && [ $s3 -eq 2 ] &&
    grep -q "rank 1 reads another --model data/m.spec than rank 0" "$T/mdiffer.log" &&
    grep -q "rank 1\]: error: --model data/m.spec: No such file" "$T/mmissing.log" &&
    ! grep -q MPI_ERR "$T/mdiffer.log" "$T/mmissing.log"; then
    ok "a --model file that differs on one rank is refused naming the rank (status 1), one missing there ends every rank (status 2)"
else
    notok "a --model file that differs or is missing on one rank" "status $s1 $s2 $s3 (137: killed, hung): $(grep -h error "$T/magree.log" "$T/mdiffer.log" "$T/mmissing.log" | head -3 | cut -c1-250)"
fi
finish
