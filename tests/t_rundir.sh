#!/usr/bin/env bash
# t_rundir.sh: the run directory's integrity. One run at a time: while a run (2 ranks) trains
# into DIR, a second run into DIR, plain or --fresh, is refused at once (status 1, naming the
# holder) and touches nothing: the first ends as it would alone, bitwise (its newest
# checkpoint's digest equals an undisturbed run's), and its --fresh did not move the first run's
# files. Once the first has ended (also when it was killed with SIGKILL), the directory is free
# again; so is a second run whose checkpoints link to the same directory as a running one's, or
# to its own checkpoints directory (and the other way round). A checkpoints link to DIR itself
# trains, and --fresh keeps a checkpoints link (its checkpoints set aside inside its target). A
# report that cannot be written fails the run (status 1); a read-only checkpoints
# directory is refused before training. A disk that fills up while metrics.jsonl grows leaves
# it whole lines of JSON. (The last two need mounts: skipped, and said, where there are none.)
# A metrics.jsonl a resume cannot trim (a pipe, /dev/zero) is refused at once (status 2), and so
# is any file of the run that is a directory (the split, the report, the map) or a dangling
# checkpoints link (status 1);
# a DIR/STOPPED that is no marker of wildcpu's is said to be none by info, and ignored.
# A --fresh whose move fails leaves no empty replaced-* and names what had moved. A map or
# metrics that predict or evaluate would write over a running training's own files is refused, and so,
# once it has ended, is one over its record of itself (metrics log, report, split).
# A run refused before it wrote anything (a --tiles that does not open, a label band that is
# not there; 1 or 2 ranks) leaves no run directory it created, nor the parents it made for it;
# a directory that was there stays, with what it held. predict --checkpoint DIR (or
# DIR/checkpoints), or export, while DIR's training has not written its first checkpoint says so.
. "$(dirname "$0")/lib.sh"

args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 24 --ckpt-every 4 --no-predict --seed 5)
"$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
ref=$(digest "$T/ref/checkpoints/ckpt-00000024.wcp")

# the first run writes its checkpoints slowly, so that it is still running once its first step
# is logged (23 steps and 6 slow checkpoint writes to go), and its ranks are then held (SIGSTOP:
# their lock is held as it was) while the others try, so that it cannot end before them on a
# busy machine; let go (SIGCONT) after them
WILDCPU_TEST_SLOW_WRITE=0.5 mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/run" >"$T/first.log" 2>&1 &
first=$!
for _ in $(seq 1 600); do grep -q 'step *[0-9]*/24' "$T/first.log" 2>/dev/null && break; sleep 0.05; done
first_ranks=$(pgrep -f -- "--out $T/run\$" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done)
kill -STOP $first_ranks
"$WILDCPU" "${args[@]}" --out "$T/run" >"$T/second.log" 2>&1
s2=$?
"$WILDCPU" "${args[@]}" --out "$T/run" --fresh >"$T/fresh.log" 2>&1
s3=$?
# a map or metrics written over the running training's own files (its map at the end would
# replace them, and remove the companions it does not make) is refused too
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/ref" --out "$T/run/risk.tif" >"$T/pin.log" 2>&1
s4=$?
"$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/ref" --out "$T/run/report.json" >"$T/ein.log" 2>&1
s5=$?
kill -0 $first 2>/dev/null && [ "$(echo $first_ranks | wc -w)" = 2 ] && running=yes || running=no
kill -CONT $first_ranks
if [ $s2 -eq 1 ] && grep -q "run is in use by another wildcpu run (pid [0-9]* on .* since " "$T/second.log" &&
    [ $s3 -eq 1 ] && grep -q "in use by another wildcpu run" "$T/fresh.log" && [ $running = yes ]; then
    ok "a second run into a directory in use is refused (status 1, the holder named), --fresh too"
else
    notok "second run refused" "statuses $s2 $s3, first running: $running; $(grep -m1 -i 'error' "$T/second.log")"
fi
if [ $s4 -eq 1 ] && [ $s5 -eq 2 ] && [ $running = yes ] && [ ! -e "$T/run/risk.tif" ] &&
    grep -q "refusing to write the risk map to .*run/risk.tif: .*a training that is running (pid [0-9]* on " "$T/pin.log" &&
    grep -q "refusing to write the metrics to .*run/report.json: it is the report of the training run directory" "$T/ein.log"; then
    ok "predict/evaluate outputs that are a running training's own files are refused (the map status 1, its report 2)"
else
    notok "outputs into a running training's directory" "statuses $s4 $s5, first running: $running; $(grep -h -m1 error "$T/pin.log" "$T/ein.log")"
fi
wait $first
s1=$?
# once the training has ended, its record of itself (metrics log, report, split) is still its
# alone: evaluate --out DIR/report.json or DIR/metrics.jsonl and predict --out DIR/split.tif
# replaced them with status 0; the map is predict's to draw again
sums() { (cd "$T/run" && md5sum metrics.jsonl report.json report.md split.tif); }
before=$(sums)
"$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/run" --out "$T/run/report.json" >"$T/rec1.log" 2>&1
r1=$?
"$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/run" --out "$T/run/metrics.jsonl" >"$T/rec2.log" 2>&1
r2=$?
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/run" --out "$T/run/split.tif" >"$T/rec3.log" 2>&1
r3=$?
# (the two that do the work on a 128 x 128 corner of the sample: the place is what they are about)
gdal_translate -q -of VRT -srcwin 0 0 128 128 "$SAMPLE" "$T/c128.vrt"
"$WILDCPU" predict --tiles "$T/c128.vrt" --checkpoint "$T/run" --out "$T/run/risk.tif" >"$T/rec4.log" 2>&1
r4=$?
# the checkpoints directory holds a lock of its own, but is no run directory: metrics may go
# there (they were refused as "the report of the training run directory .../checkpoints")
"$WILDCPU" evaluate --tiles "$T/c128.vrt" --checkpoint "$T/run" --out "$T/run/checkpoints/report.json" >"$T/rec5.log" 2>&1
r5=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ $r3 -eq 2 ] && [ $r4 -eq 0 ] && [ $r5 -eq 0 ] && [ "$(sums)" = "$before" ] &&
    grep -q "refusing to write the metrics to .*run/metrics.jsonl: it is the metrics log of the training run directory" "$T/rec2.log" &&
    grep -q "refusing to write the risk map to .*run/split.tif: it is the training/validation split of the training run directory" "$T/rec3.log"; then
    ok "a finished training's metrics log, report and split are refused as outputs (status 2), untouched; its map is redrawn"
else
    notok "a finished training's own record as an output" "statuses $r1 $r2 $r3 $r4 $r5; $(grep -h -m1 error "$T/rec1.log" "$T/rec2.log" "$T/rec3.log" "$T/rec5.log" | cut -c1-200)"
fi

# two run directories whose checkpoints are links to one directory (scratch): the second is
# refused while the first runs (the linked directory is locked too), and the first ends as it
# would alone
small=(--tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --steps 6 --ckpt-every 1 --keep 2 --no-predict)
"$WILDCPU" "${small[@]}" --seed 1 --out "$T/alone" >"$T/alone.log" 2>&1
# meet A B SEED: a run into A (seed 1, log A.log) writes its checkpoints slowly while a run
# into B (--seed SEED, log B.log) starts; B's status in $sb, whether A still ran then in
# $running, A's pid and status in $pid and $sa. A is held (SIGSTOP, its lock held as it was)
# from its first checkpoint (5 slow writes to go) until B has ended, then let go.
meet() {
    WILDCPU_TEST_SLOW_WRITE=0.5 "$WILDCPU" "${small[@]}" --seed 1 --out "$1" >"$1.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do grep -q 'ckpt-00000001' "$1.log" 2>/dev/null && break; sleep 0.05; done
    kill -STOP $pid
    "$WILDCPU" "${small[@]}" --seed "$3" --out "$2" >"$2.log" 2>&1
    sb=$?
    kill -0 $pid 2>/dev/null && running=yes || running=no
    kill -CONT $pid
    wait $pid
    sa=$?
}
mkdir -p "$T/shared" "$T/la" "$T/lb"
ln -s "$T/shared" "$T/la/checkpoints"
ln -s "$T/shared" "$T/lb/checkpoints"
meet "$T/la" "$T/lb" 2
if [ $sb -eq 1 ] && [ $running = yes ] &&
    grep -q "shared (the checkpoints of .*lb, through the link .*lb/checkpoints) is in use by another wildcpu run" "$T/lb.log" &&
    [ $sa -eq 0 ] && [ "$(digest "$T/shared/ckpt-00000006.wcp")" = "$(digest "$T/alone/checkpoints/ckpt-00000006.wcp")" ]; then
    ok "two runs whose checkpoints link to one directory: the second refused (status 1, naming the link), the first ends as alone"
else
    notok "checkpoints linked to one directory" "status $sb (first running: $running), first $sa; $(grep -m1 error "$T/lb.log" | cut -c1-250)"
fi
# another run directory's own checkpoints, reached through a link: D1/checkpoints is a link to
# D2/checkpoints, a plain directory of D2. Whichever runs first, the other is refused (status 1,
# naming the checkpoints and the holder), and the first ends as it would alone: each run locks
# its checkpoints directory by its own .lock, link or not (D2's lock covered only D2/.lock)
for first in real link; do
    d=$T/own_$first
    mkdir -p "$d/d2/checkpoints" "$d/d1"
    ln -s "$d/d2/checkpoints" "$d/d1/checkpoints"
    if [ $first = real ]; then a=$d/d2 b=$d/d1; else a=$d/d1 b=$d/d2; fi
    meet "$a" "$b" 1 # the same settings: without the lock, the second resumed the first's run
    if [ $first = real ]; then
        want="own_real/d2/checkpoints (the checkpoints of .*own_real/d1, through the link .*own_real/d1/checkpoints) is in use by another wildcpu run (pid $pid on "
    else
        want="own_link/d2/checkpoints (the checkpoints of .*own_link/d2, which another run directory's checkpoints link to) is in use by another wildcpu run (pid $pid on "
    fi
    if [ $sb -eq 1 ] && [ $running = yes ] && grep -q "$want" "$b.log" && ! grep -q '^step' "$b.log" &&
        [ $sa -eq 0 ] && [ "$(digest "$d/d2/checkpoints/ckpt-00000006.wcp")" = "$(digest "$T/alone/checkpoints/ckpt-00000006.wcp")" ]; then
        ok "checkpoints linked to another run directory's own, the $first one running: the other refused (status 1), the first ends as alone"
    else
        notok "checkpoints linked to another run's own, $first first" "status $sb (first running: $running), first $sa; $(grep -m1 error "$b.log" | cut -c1-250)"
    fi
done
# a copy of a run directory whose checkpoints are a link (cp -a copies the link): the copy shared
# the original's checkpoints; with --fresh and another seed it moved the original's aside and
# wrote its own in their place, and the original's rerun then failed ("written with other
# settings"). The copy is refused now (status 1, naming the original), the original's
# checkpoints stay, and the original reruns; a run directory moved away (mv) leaves no owner
d=$T/copied
mkdir -p "$d/scratch" "$d/orig"
ln -s "$d/scratch" "$d/orig/checkpoints"
"$WILDCPU" "${small[@]}" --seed 1 --out "$d/orig" >"$d/orig.log" 2>&1
s0=$?
cp -a "$d/orig" "$d/copy"
"$WILDCPU" "${small[@]}" --seed 5 --fresh --out "$d/copy" >"$d/copy.log" 2>&1
s1=$?
"$WILDCPU" "${small[@]}" --seed 1 --out "$d/orig" >"$d/orig2.log" 2>&1
s2=$?
mv "$d/orig" "$d/moved"
"$WILDCPU" "${small[@]}" --seed 1 --out "$d/moved" >"$d/moved.log" 2>&1
s3=$?
if [ $s0 -eq 0 ] && [ $s1 -eq 1 ] &&
    grep -q "error: .*copied/scratch (the checkpoints of .*copy, through the link .*copy/checkpoints) holds the checkpoints of the run directory .*copied/orig, whose own checkpoints lead there too" "$d/copy.log" &&
    ! ls "$d/scratch" | grep -q '^replaced-' && [ $s2 -eq 0 ] && grep -q 'training already finished' "$d/orig2.log" &&
    [ $s3 -eq 0 ] && [ "$(digest "$d/scratch/ckpt-00000006.wcp")" = "$(digest "$T/alone/checkpoints/ckpt-00000006.wcp")" ]; then
    ok "a copy of a run directory whose checkpoints are a link: refused (status 1, naming the original), the original's checkpoints kept; a moved one runs"
else
    notok "a copy of a run directory sharing its linked checkpoints" "statuses $s0 $s1 $s2 $s3: $(grep -m1 error "$d/copy.log" | cut -c1-300); $(ls "$d/scratch")"
fi
# DIR/checkpoints a link to DIR itself ("." or its absolute path): the checkpoints are DIR's
# files, under DIR's one lock (a second lock of it refused the run as another one); --fresh
# keeps the link and moves them to DIR/replaced-<time>/ with the rest
for target in dot abs; do
    d=$T/self_$target
    mkdir -p "$d"
    if [ $target = dot ]; then ln -s . "$d/checkpoints"; else ln -s "$d" "$d/checkpoints"; fi
    "$WILDCPU" "${small[@]}" --steps 2 --out "$d" >"$d.log" 2>&1
    s1=$?
    "$WILDCPU" "${small[@]}" --steps 2 --out "$d" --fresh >"$d.fresh" 2>&1
    s2=$?
    aside=$(ls -d "$d"/replaced-* 2>/dev/null)
    if [ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ -L "$d/checkpoints" ] && [ -f "$d/ckpt-00000002.wcp" ] &&
        [ -n "$aside" ] && [ -f "$aside/ckpt-00000002.wcp" ] && [ -f "$aside/metrics.jsonl" ] &&
        [ -n "$(digest "$d/ckpt-00000002.wcp")" ]; then
        ok "DIR/checkpoints a link to DIR ($target): the run trains (status 0), --fresh keeps the link and sets the checkpoints aside"
    else
        notok "DIR/checkpoints a link to DIR ($target)" "status $s1 $s2, aside '$aside': $(grep -m1 error "$d.log" "$d.fresh" | cut -c1-250)"
    fi
done
# --fresh with DIR/checkpoints a link to scratch: the link stays (moving it aside made the new
# run write a plain DIR/checkpoints/ on DIR's own file system), the previous run's checkpoints
# move to a replaced-<time>/ inside the scratch directory, the other files to DIR/replaced-<time>/
d=$T/freshlink
mkdir -p "$d" "$T/scratch_fl"
ln -s ../scratch_fl "$d/checkpoints"
"$WILDCPU" "${small[@]}" --steps 2 --out "$d" >"$d.log" 2>&1
s1=$?
"$WILDCPU" "${small[@]}" --steps 3 --out "$d" --fresh >"$d.fresh" 2>&1
s2=$?
aside=$(ls -d "$d"/replaced-* 2>/dev/null)
if [ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ "$(readlink "$d/checkpoints")" = ../scratch_fl ] &&
    [ -n "$aside" ] && [ -f "$T/scratch_fl/${aside##*/}/ckpt-00000002.wcp" ] && [ -f "$aside/metrics.jsonl" ] &&
    [ ! -e "$aside/checkpoints" ] && [ -f "$T/scratch_fl/${aside##*/}/ckpt-00000001.wcp" ] && [ -f "$T/scratch_fl/ckpt-00000003.wcp" ] &&
    [ ! -e "$T/scratch_fl/ckpt-00000001.wcp" ] &&
    grep -q "previous run's checkpoints are kept in .*freshlink/checkpoints/${aside##*/} (the link .*freshlink/checkpoints stays)" "$d.fresh"; then
    ok "--fresh with checkpoints linked to scratch: the link stays, the old checkpoints go to a replaced-* on scratch"
else
    notok "--fresh with a checkpoints link" "status $s1 $s2, aside '$aside': $(ls -la "$d" "$T/scratch_fl" | tr '\n' ' ' | cut -c1-400)"
fi
if [ $s1 -eq 0 ] && [ "$(digest "$T/run/checkpoints/ckpt-00000024.wcp")" = "$ref" ] && [ -n "$ref" ] &&
    [ -z "$(ls -d "$T"/run/replaced-* 2>/dev/null)" ] && [ "$(grep -c '"type":"train"' "$T/run/metrics.jsonl")" -eq "$(grep -c '"type":"train"' "$T/ref/metrics.jsonl")" ]; then
    ok "the first run ends as it would alone: status 0, its weights bitwise, its metrics.jsonl whole, nothing set aside"
else
    notok "the first run undisturbed" "status $s1; $(ls "$T/run" "$T/run/checkpoints" | tr '\n' ' ')"
fi
check "once it has ended, the directory is free (a rerun finds training finished)" \
    "$WILDCPU" "${args[@]}" --out "$T/run"

# a run killed with SIGKILL leaves no lock behind
"$WILDCPU" "${args[@]}" --model logistic --out "$T/killed" --steps 100000 >"$T/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q 'step *[0-9]*/100000' "$T/killed.log" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null
check "after a SIGKILL the directory is free at once (a --fresh rerun runs)" \
    "$WILDCPU" "${args[@]}" --model logistic --out "$T/killed" --steps 2 --fresh
# run_then_block DIR NAME ARGS...: runs wildcpu ARGS --out DIR (log DIR.log), and once it trains
# makes DIR/NAME a directory, which the run cannot replace (one there at the start is refused
# before any work, below); its last checkpoint's write takes a second, so the run is still
# training then. The run's status is in $st.
run_then_block() {
    local d=$1 name=$2
    shift 2
    WILDCPU_TEST_SLOW_WRITE=1 "$WILDCPU" "$@" --out "$d" >"$d.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 600); do grep -q 'step *[0-9]*/' "$d.log" 2>/dev/null && break; sleep 0.05; done
    mkdir -p "$d/$name"
    wait $pid
    st=$?
}
# A report that cannot be written (here: a directory where report.json goes) fails the run: a
# finished run's status must not claim a report that still describes an earlier run
run_then_block "$T/norep" report.json --tiles "$SAMPLE" --model logistic --patch 32 --batch 4 --micro-batch 2 --steps 2 --no-predict
if [ $st -eq 1 ] && grep -q "the run's report is not complete (report.json, see above)$" "$T/norep.log" &&
    [ -f "$T/norep/report.md" ] && [ -n "$(digest "$T/norep/checkpoints/ckpt-00000002.wcp")" ]; then
    ok "a report.json that cannot be written fails a finished run (status 1; the checkpoint and report.md are written)"
else
    notok "report.json that cannot be written" "status $st; $(grep -i -m2 'error' "$T/norep.log")"
fi
# ... and a report.md that cannot be written: report.json (written last) says the run failed and
# draws no map, as the command's status says, rather than "finished" with a map pending
run_then_block "$T/nomd" report.md --tiles "$SAMPLE" --model logistic --patch 32 --batch 4 --micro-batch 2 --steps 2
if [ $st -eq 1 ] && grep -q "the run's report is not complete (report.md, see above): report.json says the run failed" "$T/nomd.log" &&
    grep -q '"status":"failed","map":"none"' "$T/nomd/report.json" && [ ! -e "$T/nomd/risk.tif" ]; then
    ok "a report.md that cannot be written fails the run, and report.json says so (status 1, no map)"
else
    notok "report.md that cannot be written" "status $st; $(grep -i -m2 'error' "$T/nomd.log"); $(head -c 200 "$T/nomd/report.json")"
fi

# A checkpoints directory that cannot be written is found before training, not at its end
mkdir -p "$T/rock/checkpoints"
if mount --bind "$T/rock/checkpoints" "$T/rock/checkpoints" 2>/dev/null &&
    mount -o remount,bind,ro "$T/rock/checkpoints" 2>/dev/null; then
    "$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 4 --micro-batch 2 --steps 2 --no-predict --out "$T/rock" >"$T/rock.log" 2>&1
    st=$?
    if [ $st -eq 1 ] && grep -q "cannot write checkpoints into .*rock/checkpoints: Read-only file system" "$T/rock.log" &&
        ! grep -q '^step\|validation after' "$T/rock.log"; then
        ok "a read-only checkpoints directory is refused before training (status 1)"
    else
        notok "read-only checkpoints" "status $st; $(grep -m2 -i 'error\|^step' "$T/rock.log")"
    fi
    umount "$T/rock/checkpoints"
else
    umount "$T/rock/checkpoints" 2>/dev/null
    echo "# skipped: cannot make a read-only bind mount here"
fi

# A disk too full for a checkpoint is refused before training; one that fills up while
# metrics.jsonl grows: the line being written when it filled is cut back, so the file stays one
# JSON object per line (a real tmpfs)
small=$T/small
mkdir -p "$small"
if mount -t tmpfs -o size=16m tmpfs "$small" 2>/dev/null; then
    trap 'umount "$small" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
    # too full for one checkpoint at the start: refused before any step (training to its end
    # would lose it all there)
    free_kib=$(df -k --output=avail "$small" | tail -1)
    dd if=/dev/zero of="$small/filler" bs=1024 count=$((free_kib - 12)) status=none 2>/dev/null
    "$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 4 --micro-batch 2 --steps 150 --log-every 1 \
        --no-predict --val-fraction 0 --out "$small/run0" >"$T/full0.log" 2>&1
    st=$?
    [ $st -eq 1 ] && grep -q "small/run0/checkpoints has [0-9.]* KiB free on its file system, and a checkpoint of this run takes up to [0-9.]* MiB" "$T/full0.log" &&
        ! grep -q "step 1/150" "$T/full0.log" \
        && ok "a disk too full for one checkpoint: refused before any step (status 1, the room and the need said)" \
        || notok "a disk too full for a checkpoint at the start" "status $st: $(grep -m2 -E 'error|step' "$T/full0.log")"
    rm -rf "$small"/*
    # the disk fills while the run logs: it starts with room for a checkpoint (6 of 5.5 MiB),
    # and the rest is taken after its fifth step (of 40: fewer lines than steps, some were lost)
    free_kib=$(df -k --output=avail "$small" | tail -1)
    dd if=/dev/zero of="$small/filler" bs=1024 count=$((free_kib - 6144)) status=none 2>/dev/null
    "$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 4 --micro-batch 2 --steps 40 --log-every 1 \
        --no-predict --val-fraction 0 --out "$small/run" >"$T/full.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do grep -q "step 5/40" "$T/full.log" && break; sleep 0.05; done
    dd if=/dev/zero of="$small/filler2" bs=1024 status=none 2>/dev/null
    wait $pid
    st=$?
    lines=$($PY -c 'import json, sys
n = 0
for line in open(sys.argv[1], "rb"):
    json.loads(line)
    assert line.endswith(b"\n")
    n += 1
print(n)' "$small/run/metrics.jsonl" 2>&1)
    if [ $st -eq 1 ] && grep -Eq "metrics.jsonl failed: (No space left on device|a short write .the disk full, or a size limit.); training goes on, the log misses lines" "$T/full.log" &&
        [ "$lines" -gt 10 ] 2>/dev/null && [ "$lines" -lt 40 ]; then
        ok "a full disk while logging: metrics.jsonl keeps $lines whole lines of JSON, none torn (status 1: no room for the checkpoint)"
    else
        notok "metrics.jsonl on a full disk" "status $st; lines: $lines; $(grep -i -m2 'metrics.jsonl' "$T/full.log")"
    fi
    # the map on a full disk: libtiff's own message does not say why, wildcpu adds the free
    # space and that the existing map is untouched (and it is)
    rm -rf "$small"/*
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/alone" --out "$small/risk.tif" >/dev/null 2>&1
    before=$(md5sum <"$small/risk.tif")
    free_kib=$(df -k --output=avail "$small" | tail -1)
    dd if=/dev/zero of="$small/filler" bs=1024 count=$((free_kib - 300)) status=none 2>/dev/null
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/alone" --out "$small/risk.tif" >"$T/fullmap.log" 2>&1
    st=$?
    if [ $st -eq 1 ] && grep -q "has .* free: out of space?); the existing .*small/risk.tif is untouched" "$T/fullmap.log" &&
        [ "$(md5sum <"$small/risk.tif")" = "$before" ]; then
        ok "the map on a full disk: exit 1, the free space and the untouched map said, and it is untouched"
    else
        notok "the map on a full disk" "status $st: $(grep error "$T/fullmap.log")"
    fi
    # the map written, its picture not (on the full disk): the earlier map's picture and STAC
    # item, which describe the map just replaced (the item's checksum no longer matches), go
    # (removed as the map is replaced: the earlier picture is of a 64 x 64 corner, so that the
    # space it frees cannot hold the new one)
    rm -rf "$small"/* "$T/st"
    mkdir -p "$T/st"
    gdal_translate -q -of VRT -srcwin 0 0 64 64 "$SAMPLE" "$T/corner.vrt"
    "$WILDCPU" predict --tiles "$T/corner.vrt" --checkpoint "$T/alone" --out "$T/st/m.tif" --png "$small/m.png" >/dev/null 2>&1
    had=$(ls "$T/st/m.json" "$small/m.png" 2>/dev/null | wc -l)
    dd if=/dev/zero of="$small/filler" bs=4096 status=none 2>/dev/null
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/alone" --out "$T/st/m.tif" --png "$small/m.png" >"$T/st.log" 2>&1
    st=$?
    if [ "$had" = 2 ] && [ $st -eq 1 ] && grep -q "the risk map $T/st/m.tif is complete, but its picture $small/m.png is not (the earlier map's $small/m.png, $T/st/m.json, which described the map it replaced, removed)" "$T/st.log" &&
        [ ! -e "$T/st/m.json" ] && [ ! -e "$small/m.png" ] && gdalinfo -checksum "$T/st/m.tif" >/dev/null 2>&1; then
        ok "the map written, its picture not (full disk): exit 1, the earlier map's picture and STAC item removed"
    else
        notok "a picture that fails after the map" "had $had, status $st: $(grep error "$T/st.log")"
    fi
    umount "$small"
else
    echo "# skipped: cannot mount a tmpfs here (the full-disk case needs one)"
fi
# a file name with a terminal escape in DIR/checkpoints: info's warning that ignores it prints
# the escape as '?' (every message quotes names that way), status 0
mkdir -p "$T/escname/checkpoints" && touch "$T/escname/checkpoints/ckpt-0000000"$'\e'"[2J1.wcp"
"$WILDCPU" info "$T/escname" >"$T/escname.info" 2>&1
s=$?
[ $s -eq 0 ] && grep -q 'ignoring .*ckpt-0000000?\[2J1.wcp: not a checkpoint name' "$T/escname.info" \
    && ! grep -q $'\e' "$T/escname.info" \
    && ok "a checkpoint file name with a terminal escape: info prints it as '?'" \
    || notok "a file name with a terminal escape" "status $s: $(cat -v "$T/escname.info")"
# DIR/checkpoints that cannot hold checkpoints, a file or a link whose target is gone (a
# scratch file system not mounted on this node): info, predict and training each say so, naming
# it (status 1), instead of reading DIR as a run with no checkpoints; training before any work
for kind in file dangling; do
    d=$T/ck_$kind
    mkdir -p "$d"
    if [ $kind = file ]; then
        echo x >"$d/checkpoints" && want="ck_$kind/checkpoints is not a directory, so no run can keep its checkpoints there"
    else
        ln -s "$T/unmounted/ck" "$d/checkpoints" && want="ck_$kind/checkpoints is a symbolic link to .*unmounted/ck, which cannot be reached"
    fi
    "$WILDCPU" info "$d" >"$d.info" 2>&1
    s=$?
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$d" --out "$T/ck_$kind.tif" >"$d.predict" 2>&1
    p=$?
    "$WILDCPU" --tiles "$SAMPLE" --out "$d" --steps 1 --batch 4 --micro-batch 2 --no-predict >"$d.log" 2>&1
    t=$?
    [ $s -eq 1 ] && [ $p -eq 1 ] && [ $t -eq 1 ] && grep -q "$want" "$d.info" && grep -q "$want" "$d.predict" \
        && grep -q "$want" "$d.log" && ! grep -q "step 1/1" "$d.log" && [ ! -e "$T/ck_$kind.tif" ] \
        && ok "DIR/checkpoints a $kind: info, predict and training exit 1 naming it, before any work" \
        || notok "DIR/checkpoints a $kind" "info $s: $(cat "$d.info"); predict $p: $(tail -1 "$d.predict"); train $t: $(tail -1 "$d.log")"
done
# a file of another kind where the run writes its picture or its STAC item (a user's notes):
# refused before any training (status 2), left as it was
for name in risk.png risk.json; do
    d=$T/kind_${name%%.*}_${name##*.}
    mkdir -p "$d" && echo "my notes" >"$d/$name"
    "$WILDCPU" --tiles "$SAMPLE" --out "$d" --steps 1 --batch 4 --micro-batch 2 >"$d.log" 2>&1
    s=$?
    [ $s -eq 2 ] && grep -q "error: refusing to replace .*kind_.*/$name with the .*: it holds a file of another kind" "$d.log" \
        && ! grep -q "step 1/1" "$d.log" && [ "$(cat "$d/$name")" = "my notes" ] \
        && ok "a file of another kind at DIR/$name: refused before training (exit 2), left as it was" \
        || notok "a file of another kind at DIR/$name" "status $s: $(grep -m1 error "$d.log")"
done
# a directory where the run writes a file (the split, the report, the map): refused before any
# training (status 1, naming it), not found hours later; the directory stays
for name in split.tif report.json risk.tif; do
    d=$T/held_${name%%.*}
    mkdir -p "$d/$name"
    "$WILDCPU" --tiles "$SAMPLE" --out "$d" --steps 1 --batch 4 --micro-batch 2 >"$d.log" 2>&1
    s=$?
    [ $s -eq 1 ] && grep -q "error: cannot write the .* to .*held_${name%%.*}/$name: it is a directory" "$d.log" \
        && ! grep -q "step 1/1" "$d.log" && [ -d "$d/$name" ] \
        && ok "a directory at DIR/$name: refused before training (exit 1), left as it was" \
        || notok "a directory at DIR/$name" "status $s: $(grep -m1 error "$d.log")"
done
# an input two VRTs deep in the run directory (DIR/risk.tif, read through outer.vrt ->
# inner.vrt): the run refuses to replace it (exit 2), and it stays as it was
mkdir -p "$T/deep"
cp "$ROOT/data/sample/tiles/r00_c00_f32.tif" "$T/deep/risk.tif"
$PY -c "
from osgeo import gdal
gdal.BuildVRT('$T/deep/inner.vrt', ['$T/deep/risk.tif'])
gdal.BuildVRT('$T/deep/outer.vrt', ['$T/deep/inner.vrt'])"
before=$(md5sum <"$T/deep/risk.tif")
"$WILDCPU" --tiles "$T/deep/outer.vrt" --out "$T/deep" --steps 1 --model logistic --batch 4 \
    --micro-batch 2 >"$T/deep.log" 2>&1
s=$?
[ $s -eq 2 ] && grep -q "refusing to write the risk map to .*: that is .*deep/risk.tif, an input of this command" "$T/deep.log" \
    && [ "$(md5sum <"$T/deep/risk.tif")" = "$before" ] \
    && ok "an input two VRTs deep in --out: refused (exit 2), untouched" \
    || notok "an input two VRTs deep" "status $s: $(tail -1 "$T/deep.log")"
# only best.wcp left (the ckpt-*.wcp deleted to save space): a rerun resumes from it under the
# same checks (it is a whole checkpoint) and ends bitwise where the undisturbed run ended; a
# rerun with other settings is refused (exit 1) and best.wcp stays as it was
# (best.wcp made step 16's checkpoint, as if that validation had been the best, so that the
# resumed run has steps to train)
cp -r "$T/ref" "$T/bestonly" && cp "$T/ref/checkpoints/ckpt-00000016.wcp" "$T/bestonly/checkpoints/best.wcp" &&
    rm -f "$T"/bestonly/checkpoints/ckpt-*.wcp
before=$(md5sum <"$T/bestonly/checkpoints/best.wcp")
"$WILDCPU" "${args[@]}" --out "$T/bestonly" --model logistic >"$T/bestonly_other.log" 2>&1
s=$?
same=$([ "$(md5sum <"$T/bestonly/checkpoints/best.wcp")" = "$before" ] && echo yes)
"$WILDCPU" "${args[@]}" --out "$T/bestonly" >"$T/bestonly.log" 2>&1
t=$?
from=$(grep -o 'resuming from .*best.wcp (step [0-9]*)' "$T/bestonly.log" | head -1)
[ $s -eq 1 ] && grep -q "best.wcp was written with other settings: model: now logistic" "$T/bestonly_other.log" \
    && [ "$same" = yes ] && [ $t -eq 0 ] && [ -n "$from" ] \
    && [ "$(digest "$T/bestonly/checkpoints/ckpt-00000024.wcp")" = "$ref" ] \
    && ok "only best.wcp left: other settings refused (exit 1, best.wcp kept); the same command ${from#*best.wcp }, ends bitwise at the undisturbed run's step 24" \
    || notok "only best.wcp left" "other: $s $same $(grep -m1 error "$T/bestonly_other.log"); same: $t '$from' $(tail -1 "$T/bestonly.log")"
# metrics.jsonl that is no log a resume can trim: a pipe (the open would wait for a writer for
# ever, and took the first SIGTERM with it), a link to /dev/zero (read without end): refused
# before anything is read, status 2 within seconds, naming the file; the file stays as it was
for kind in fifo zero; do
    d=$T/log_$kind
    cp -r "$T/ref" "$d" && rm -f "$d"/checkpoints/ckpt-0000002[04].wcp "$d/checkpoints/best.wcp" "$d/metrics.jsonl"
    if [ $kind = fifo ]; then mkfifo "$d/metrics.jsonl"; else ln -s /dev/zero "$d/metrics.jsonl"; fi
    timeout -s KILL 120 "$WILDCPU" "${args[@]}" --out "$d" >"$d.log" 2>&1
    s=$?
    grep -q "error: refusing to write the metrics log to .*log_$kind/metrics.jsonl: it is not a regular file" "$d.log" && [ $s -eq 2 ] && ! grep -q "resuming from" "$d.log" &&
        { [ -p "$d/metrics.jsonl" ] || [ -L "$d/metrics.jsonl" ]; } \
        && ok "resume with metrics.jsonl $kind: status 2 at once, the file named, left as it was" \
        || notok "resume with metrics.jsonl $kind" "status $s (137: it hung): $(grep -m2 'error\|resuming' "$d.log")"
done
# DIR/STOPPED that is not wildcpu's marker (a pipe, /dev/zero, 20 MB of random bytes, a line
# with a terminal escape): info says so and goes on (status 0, at once), printing no more than
# a short, printable excerpt (no control character, UTF-8: the rule of a checkpoint's text); the
# real marker is still read
for kind in fifo zero big escape real; do
    d=$T/stop_$kind
    mkdir -p "$d/checkpoints" && cp "$T/ref/checkpoints/ckpt-00000024.wcp" "$d/checkpoints/" # (the newest alone: 2 s less of info reading)
    case $kind in
    fifo) mkfifo "$d/STOPPED" ;;
    zero) ln -s /dev/zero "$d/STOPPED" ;;
    big) head -c 20000000 /dev/urandom >"$d/STOPPED" ;;
    escape) printf 'hello\033[2Jworld\n' >"$d/STOPPED" ;;
    real) echo "stopped_utc=2024-01-01T00:00:00Z;phase=training;step=24;signal=Terminated;resume=rerun the same command" >"$d/STOPPED" ;;
    esac
    timeout -s KILL 30 "$WILDCPU" info "$d" >"$d.info" 2>&1
    s=$?
    bytes=$(wc -c <"$d.info")
    if [ $kind = real ]; then
        [ $s -eq 0 ] && grep -q "^state: stopped by a signal (stopped_utc=2024-01-01T00:00:00Z;phase=training;step=24;" "$d.info" \
            && ok "info: the real stop marker is read" || notok "info: the real stop marker" "status $s: $(cat "$d.info")"
        continue
    fi
    [ $s -eq 0 ] && grep -q "^note: .*stop_$kind/STOPPED is not wildcpu's stop marker (.*): ignored$" "$d.info" &&
        ! grep -q "^state:" "$d.info" && [ "$bytes" -lt 2000 ] && ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$d.info" \
        && iconv -f UTF-8 -t UTF-8 "$d.info" >/dev/null 2>&1 \
        && grep -q "a rerun resumes from" "$d.info" \
        && ok "info with STOPPED $kind: not the marker, ignored (status 0, $bytes bytes of printable output)" \
        || notok "info with STOPPED $kind" "status $s (137: it hung), $bytes bytes: $(head -c 300 "$d.info" | grep -a note)"
done
# A --fresh whose move fails (a file made immutable, as a mount point would be busy): status 1.
# When nothing had moved, no empty replaced-* is left behind; when some files had, the message
# names them and where they are. (chattr +i needs a file system with the attribute: skipped,
# and said, elsewhere.)
mkdir -p "$T/imm" && touch "$T/imm/probe"
if chattr +i "$T/imm/probe" 2>/dev/null; then
    chattr -i "$T/imm/probe"
    cp -r "$T/ref" "$T/imm/none" && rm -f "$T"/imm/none/checkpoints/*  # first to move: metrics.jsonl
    cp -r "$T/ref" "$T/imm/part"                                       # checkpoints move first
    for kind in none part; do
        d=$T/imm/$kind
        chattr +i "$d/metrics.jsonl"
        "$WILDCPU" "${args[@]}" --out "$d" --fresh >"$d.log" 2>&1
        s=$?
        chattr -i "$d/metrics.jsonl"
        aside=$(ls -d "$d"/replaced-* 2>/dev/null)
        if [ $kind = none ]; then
            [ $s -eq 1 ] && grep -q "error: --fresh: cannot move .*none/metrics.jsonl to .*: Operation not permitted" "$d.log" &&
                grep -q "nothing was moved; the previous run's files are where they were" "$d.log" && [ -z "$aside" ] &&
                [ -f "$d/metrics.jsonl" ] && [ -f "$d/report.json" ] \
                && ok "--fresh whose first move fails: status 1, nothing moved, no empty replaced-* left" \
                || notok "--fresh whose first move fails" "status $s, set aside: '$aside'; $(grep error "$d.log")"
        else
            [ $s -eq 1 ] && [ -n "$aside" ] && [ -f "$aside/checkpoints/ckpt-00000024.wcp" ] &&
                grep -q "error: --fresh: 1 of the previous run's files had moved to $aside before that (checkpoints); the others are still in place" "$d.log" &&
                [ -f "$d/metrics.jsonl" ] \
                && ok "--fresh whose later move fails: status 1, the files already moved named with where they went" \
                || notok "--fresh whose later move fails" "status $s, set aside: '$aside'; $(grep error "$d.log")"
        fi
    done
else
    echo "# skipped: chattr +i does not work here (the failed --fresh cases need it)"
fi

# --fresh over a stopped run: its stop marker moves aside with its other files (it was deleted);
# a --fresh run that cannot start leaves it where it was
sargs=(--tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 2 --steps 2 --no-predict)
"$WILDCPU" "${sargs[@]}" --out "$T/st" >"$T/st.log" 2>&1
echo "stopped_utc=2026-01-01T00:00:00Z;phase=training;step=2;signal=Terminated;resume=rerun the same command" >"$T/st/STOPPED"
"$WILDCPU" "${sargs[@]}" --out "$T/st" --fresh --label-band nosuch >"$T/st1.log" 2>&1
s1=$?
kept=no
grep -q "^stopped_utc=2026-01-01" "$T/st/STOPPED" 2>/dev/null && kept=yes
"$WILDCPU" "${sargs[@]}" --out "$T/st" --fresh >"$T/st2.log" 2>&1
s2=$?
[ $s1 -eq 1 ] && [ $kept = yes ] && [ $s2 -eq 0 ] && [ ! -e "$T/st/STOPPED" ] && grep -q "^stopped_utc=2026-01-01" "$T"/st/replaced-*/STOPPED \
    && ok "--fresh over a stopped run: STOPPED kept by a run that cannot start, then moved aside with the rest" \
    || notok "--fresh and the stop marker" "status $s1 $s2: $(ls "$T/st" "$T"/st/replaced-* 2>&1 | tr '\n' ' ')"

# predict into a run directory whose training is drawing its map: refused (status 1, naming the
# process), not a map of one model beside the classes and item of another; the training's map
# is then drawn as if alone
# (every file it publishes is held 3 s: the split, the calibration picture, then the map, its
# classes and picture, 9 s from the map's working file to the end, where predict's refusal takes
# a fraction of a second)
WILDCPU_TEST_SLOW_COMMIT=3 "$WILDCPU" "${sargs[@]/--no-predict/--classes}" --out "$T/mx" >"$T/mx.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do compgen -G "$T/mx/.risk*-[0-9]*" >/dev/null && break; sleep 0.05; done
compgen -G "$T/mx/.risk*-[0-9]*" >/dev/null || notok "the training's map never had a working file to meet"
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/st" --out "$T/mx/risk.tif" --classes >"$T/mx2.log" 2>&1
s2=$?
wait $pid
s1=$?
own=$(gdalinfo "$T/mx/risk.tif" 2>/dev/null | grep -c "checkpoint=$T/mx/checkpoints/")
[ $s1 -eq 0 ] && [ $s2 -eq 1 ] && [ "$own" -eq 1 ] &&
    grep -Eq "refusing to write the .* to $T/mx/risk.*: (wildcpu process $pid on this host is writing it now|its directory is the run directory of a training that is running \(pid $pid )" "$T/mx2.log" \
    && ok "predict into a directory whose map is being drawn: refused, naming the writer" \
    || notok "predict beside a map being drawn" "status $s1 $s2: $(grep -m1 'error\|warning' "$T/mx2.log")"

# a working file whose pid is a zombie wildcpu (exited, its parent not reaping it) has no live
# writer: predict draws the map (status 0), saying the file lies there, where a live writer
# would refuse it
mkdir -p "$T/zb"
/usr/bin/python3 - "$WILDCPU" "$T/zb" <<'PY' &
import os, sys, time
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], [sys.argv[1], "--version"])
open(os.path.join(sys.argv[2], ".risk.tif.tmp-%d" % pid), "w").close()
time.sleep(60)  # never reaps it
PY
parent=$!
zpid= zstate=
for _ in $(seq 1 200); do
    f=$(compgen -G "$T/zb/.risk.tif.tmp-*" | head -1)
    zpid=${f##*tmp-}
    [ -n "$zpid" ] && zstate=$(sed 's/.*) //' "/proc/$zpid/stat" 2>/dev/null | cut -c1)
    [ "$zstate" = Z ] && break
    sleep 0.05
done
zcomm=$(cat "/proc/$zpid/comm" 2>/dev/null)
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/st" --out "$T/zb/risk.tif" >"$T/zb.log" 2>&1
s=$?
kill $parent 2>/dev/null
wait $parent 2>/dev/null
[ "$zstate" = Z ] && [ "$zcomm" = wildcpu ] && [ $s -eq 0 ] && [ -s "$T/zb/risk.tif" ] &&
    grep -q "working file of another run lies beside the output.*tmp-$zpid" "$T/zb.log" \
    && ok "a working file whose pid is a zombie wildcpu: no live writer, the map is drawn (the file said)" \
    || notok "a zombie's working file" "state '$zstate' comm '$zcomm' status $s: $(grep -m1 'error\|warning' "$T/zb.log")"

# a stopped run whose report.md cannot be written: its report.json says stopped (not failed), and
# it ends 75 as a stop does
"$WILDCPU" "${sargs[@]}" --steps 100000 --out "$T/stopmd" >"$T/stopmd.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q 'step *[0-9]*/100000' "$T/stopmd.log" 2>/dev/null && break; sleep 0.05; done
mkdir -p "$T/stopmd/report.md"
kill -TERM $pid
wait $pid
s=$?
[ $s -eq 75 ] && grep -q '"status":"stopped","map":"none"' "$T/stopmd/report.json" \
    && ok "a stopped run whose report.md cannot be written: report.json says stopped, exit 75" \
    || notok "a stopped run without report.md" "status $s: $(head -c 160 "$T/stopmd/report.json" 2>&1)"
# `info DIR` while a training runs in DIR says so (a rerun is refused until it ends), where it
# said "a rerun resumes from ..." as if nothing held the directory
"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 4 --steps 100000 --ckpt-every 1 --no-predict \
    --out "$T/live" >"$T/live.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do ls "$T/live/checkpoints/"ckpt-*.wcp >/dev/null 2>&1 && break; sleep 0.1; done
"$WILDCPU" info "$T/live" >"$T/live_info.txt" 2>&1
kill -TERM $pid
wait $pid
st=$?
"$WILDCPU" info "$T/live" >"$T/live_info2.txt" 2>&1
grep -q "state: a training is running in it (pid $pid .*): a rerun is refused until it ends" "$T/live_info.txt" &&
    grep -q "a rerun once it has ended resumes from its newest checkpoint then; now " "$T/live_info.txt" && [ $st -eq 75 ] &&
    ! grep -q "is running" "$T/live_info2.txt" && grep -q "^a rerun resumes from" "$T/live_info2.txt" \
    && ok "info DIR during a training names its pid and that a rerun waits; after it, a rerun resumes" \
    || notok "info DIR during a training" "status $st: $(tail -2 "$T/live_info.txt") / $(tail -1 "$T/live_info2.txt")"

# a training whose DIR/risk.tif another wildcpu is writing (evaluate --map into DIR) is refused
# before its first step, where it trained to the end and then had its map refused
mkdir -p "$T/busy"
WILDCPU_TEST_SLOW_COMMIT=20 "$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/live" --map "$T/busy/risk.tif" \
    >"$T/busy_ev.log" 2>&1 &
ev=$!
for _ in $(seq 1 300); do ls -a "$T/busy" | grep -q '^\.risk\.tif\.' && break; sleep 0.1; done
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 8 --steps 2 --out "$T/busy" >"$T/busy.log" 2>&1
s=$?
kill -TERM $ev 2>/dev/null
wait $ev
[ $s -eq 1 ] && grep -q "error: $T/busy/risk.tif is being written by wildcpu process $ev on this host" "$T/busy.log" &&
    ! grep -q "^epoch\|step 1/" "$T/busy.log" && [ ! -e "$T/busy/checkpoints" ] \
    && ok "a training whose DIR/risk.tif another process is writing: refused before any step (status 1, its pid named)" \
    || notok "a training whose map another process writes" "status $s: $(grep -m2 'error\|step' "$T/busy.log")"

# the map's external overviews and mask (gdaladdo -ro, QGIS's Build Pyramids) are the user's, of
# that map: --fresh moves them with it (the new map removed them, against "nothing is deleted",
# and before that left them to be read with the new map)
"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --steps 2 --out "$T/ovr" >"$T/ovr1.log" 2>&1 &&
    gdaladdo -q -ro "$T/ovr/risk.tif" 2 &&
    "$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --steps 2 --out "$T/ovr" --fresh >"$T/ovr2.log" 2>&1
s=$?
kept=$(ls "$T"/ovr/replaced-*/risk.tif.ovr 2>/dev/null)
[ $s -eq 0 ] && [ -n "$kept" ] && [ ! -e "$T/ovr/risk.tif.ovr" ] && ! grep -q "removed .*risk.tif.ovr" "$T/ovr2.log" &&
    gdalinfo "$(dirname "$kept")/risk.tif" | grep -q "Overviews: 256x256" \
    && ok "--fresh moves the map's external overviews with the map, and the new map has none" \
    || notok "--fresh and the map's external overviews" "status $s, kept '$kept': $(ls "$T/ovr"); $(grep -m1 'removed\|error' "$T/ovr2.log")"

# a working file of the map that a run killed elsewhere may still be writing (changed within 10
# minutes, its pid not alive here) is said once in a rerun: the run directory's check for a live
# writer said it before the first step, and the map's claim said it again at the end
"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --steps 2 --out "$T/lo" >"$T/lo0.log" 2>&1
touch "$T/lo/.risk.tif.tmp-99999999"
"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --steps 2 --out "$T/lo" >"$T/lo.log" 2>&1
s=$?
said=$(grep -c "warning: 1 working file of another run lies beside the output .*lo/.risk.tif.tmp-99999999" "$T/lo.log")
[ $s -eq 0 ] && [ "$said" = 1 ] && [ -e "$T/lo/.risk.tif.tmp-99999999" ] && [ -s "$T/lo/risk.tif" ] \
    && ok "a working file left beside the map is said once in a training rerun, and left" \
    || notok "the leftover working file in a training rerun" "status $s, said $said times: $(grep -m3 'working file\|error' "$T/lo.log")"

# a refused run leaves nothing it created behind
mkdir -p "$T/there" && echo mine >"$T/there/notes.txt"
left=""
for how in "missing" "band" "missing2"; do
    case $how in
    missing) "$WILDCPU" --tiles "$T/no-such.vrt" --out "$T/new/a/b" >"$T/refused.log" 2>&1 ;;
    band) "$WILDCPU" --tiles "$SAMPLE" --label-band no-such-band --out "$T/new/c" >"$T/refused.log" 2>&1 ;;
    missing2) mpirun_n 2 "$WILDCPU" --tiles "$T/no-such.vrt" --out "$T/new/d/" >"$T/refused.log" 2>&1 ;;
    esac
    s=$?
    { [ $s -ne 0 ] && grep -q 'error' "$T/refused.log"; } || left="$left $how(status $s)"
    [ -e "$T/new" ] && left="$left $how:$(find "$T/new" | tr '\n' ' ')"
    rm -rf "$T/new"
done
"$WILDCPU" --tiles "$T/no-such.vrt" --out "$T/there" >"$T/refused.log" 2>&1
[ -z "$left" ] && [ "$(cat "$T/there/notes.txt" 2>/dev/null)" = mine ] \
    && ok "a refused run leaves no directory it created; one that was there keeps its files" \
    || notok "what a refused run left" "$left; there: $(ls -A "$T/there" | tr '\n' ' ')"

# predict given a run directory whose training has not written its first checkpoint
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 100000 --ckpt-every 100000 \
    --val-fraction 0 --no-predict --out "$T/early" >"$T/early.log" 2>&1 &
early=$!
for _ in $(seq 1 600); do grep -q 'step *[0-9]*/' "$T/early.log" 2>/dev/null && break; sleep 0.05; done
said=0
for ck in "$T/early" "$T/early/checkpoints"; do
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$ck" --out "$T/early.tif" >"$T/early-p.log" 2>&1
    s=$?
    [ $s -eq 1 ] && grep -q "a training is running there (pid $early .*) and has not written its first checkpoint yet" "$T/early-p.log" \
        && said=$((said + 1))
done
"$WILDCPU" export --checkpoint "$T/early" --out "$T/early.safetensors" >"$T/early-p.log" 2>&1
grep -q "a training is running there (pid $early .*) and has not written its first checkpoint yet" "$T/early-p.log" \
    && said=$((said + 1))
kill -KILL $early; wait $early 2>/dev/null
"$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/early" --out "$T/early.tif" >"$T/early-p2.log" 2>&1
[ "$said" = 3 ] && ! grep -q 'training is running' "$T/early-p2.log" \
    && ok "predict and export from a run directory before its first checkpoint say its training is running" \
    || notok "predict before the first checkpoint" "said $said of 3: $(cat "$T/early-p.log"); after: $(cat "$T/early-p2.log")"

finish
