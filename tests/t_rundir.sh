#!/usr/bin/env bash
# t_rundir.sh: the run directory's integrity. One run at a time: while a run (2 ranks) trains
# into DIR, a second run into DIR, plain or --fresh, is refused at once (status 1, naming the
# holder) and touches nothing: the first ends as it would alone, bitwise (its newest
# checkpoint's digest equals an undisturbed run's), and its --fresh did not move the first run's
# files. Once the first has ended (also when it was killed with SIGKILL), the directory is free
# again. A report that cannot be written fails the run (status 1); a read-only checkpoints
# directory is refused before training. A disk that fills up while metrics.jsonl grows leaves
# it whole lines of JSON. (The last two need mounts: skipped, and said, where there are none.)
. "$(dirname "$0")/lib.sh"

args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 24 --ckpt-every 4 --no-predict --seed 5)
"$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1
ref=$(digest "$T/ref/checkpoints/ckpt-00000024.wcp")

# the first run writes its checkpoints slowly, so that it is still running
WILDCPU_TEST_SLOW_WRITE=2 mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/run" >"$T/first.log" 2>&1 &
first=$!
for _ in $(seq 1 300); do grep -q 'step *[0-9]*/24' "$T/first.log" 2>/dev/null && break; sleep 0.1; done
"$WILDCPU" "${args[@]}" --out "$T/run" >"$T/second.log" 2>&1
s2=$?
"$WILDCPU" "${args[@]}" --out "$T/run" --fresh >"$T/fresh.log" 2>&1
s3=$?
kill -0 $first 2>/dev/null && running=yes || running=no
if [ $s2 -eq 1 ] && grep -q "run is in use by another wildcpu run (pid [0-9]* on .* since " "$T/second.log" &&
    [ $s3 -eq 1 ] && grep -q "in use by another wildcpu run" "$T/fresh.log" && [ $running = yes ]; then
    ok "a second run into a directory in use is refused (status 1, the holder named), --fresh too"
else
    notok "second run refused" "statuses $s2 $s3, first running: $running; $(grep -m1 -i 'error' "$T/second.log")"
fi
wait $first
s1=$?
if [ $s1 -eq 0 ] && [ "$(digest "$T/run/checkpoints/ckpt-00000024.wcp")" = "$ref" ] && [ -n "$ref" ] &&
    [ -z "$(ls -d "$T"/run/replaced-* 2>/dev/null)" ] && [ "$(grep -c '"type":"train"' "$T/run/metrics.jsonl")" -eq "$(grep -c '"type":"train"' "$T/ref/metrics.jsonl")" ]; then
    ok "the first run ends as it would alone: status 0, its weights bitwise, its metrics.jsonl whole, nothing set aside"
else
    notok "the first run undisturbed" "status $s1; $(ls "$T/run" "$T/run/checkpoints" | tr '\n' ' ')"
fi
check "once it has ended, the directory is free (a rerun finds training finished)" \
    "$WILDCPU" "${args[@]}" --out "$T/run"

# a run killed with SIGKILL leaves no lock behind
"$WILDCPU" "${args[@]}" --out "$T/killed" --steps 400 >"$T/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q 'step *[0-9]*/400' "$T/killed.log" 2>/dev/null && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null
check "after a SIGKILL the directory is free at once (a --fresh rerun runs)" \
    "$WILDCPU" "${args[@]}" --out "$T/killed" --steps 8 --fresh
# A report that cannot be written (here: a directory where report.json goes) fails the run: a
# finished run's status must not claim a report that still describes an earlier run
mkdir -p "$T/norep/report.json"
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 4 --micro-batch 2 --steps 2 --no-predict --out "$T/norep" >"$T/norep.log" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "the run's report is not complete (report.json, see above); an earlier run's is removed" "$T/norep.log" &&
    [ -f "$T/norep/report.md" ] && [ -n "$(digest "$T/norep/checkpoints/ckpt-00000002.wcp")" ]; then
    ok "a report.json that cannot be written fails a finished run (status 1; the checkpoint and report.md are written)"
else
    notok "report.json that cannot be written" "status $st; $(grep -i -m2 'error' "$T/norep.log")"
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

# A disk that fills up while metrics.jsonl grows: the line being written when it filled is cut
# back, so the file stays one JSON object per line (a real tmpfs, filled to 12 KiB of room)
small=$T/small
mkdir -p "$small"
if mount -t tmpfs -o size=4m tmpfs "$small" 2>/dev/null; then
    trap 'umount "$small" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
    free_kib=$(df -k --output=avail "$small" | tail -1)
    dd if=/dev/zero of="$small/filler" bs=1024 count=$((free_kib - 12)) status=none 2>/dev/null
    "$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 4 --micro-batch 2 --steps 150 --log-every 1 \
        --no-predict --val-fraction 0 --out "$small/run" >"$T/full.log" 2>&1
    st=$?
    lines=$($PY -c 'import json, sys
n = 0
for line in open(sys.argv[1], "rb"):
    json.loads(line)
    assert line.endswith(b"\n")
    n += 1
print(n)' "$small/run/metrics.jsonl" 2>&1)
    if [ $st -eq 1 ] && grep -Eq "metrics.jsonl failed: (No space left on device|a short write .the disk full, or a size limit.); training goes on, the log misses lines" "$T/full.log" &&
        [ "$lines" -gt 10 ] 2>/dev/null && [ "$lines" -lt 150 ]; then
        ok "a full disk while logging: metrics.jsonl keeps $lines whole lines of JSON, none torn (status 1: no room for the checkpoint)"
    else
        notok "metrics.jsonl on a full disk" "status $st; lines: $lines; $(grep -i -m2 'metrics.jsonl' "$T/full.log")"
    fi
    # the map on a full disk: libtiff's own message does not say why, wildcpu adds the free
    # space and that the existing map is untouched (and it is)
    rm -rf "$small"/*
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/ref" --out "$small/risk.tif" >/dev/null 2>&1
    before=$(md5sum <"$small/risk.tif")
    free_kib=$(df -k --output=avail "$small" | tail -1)
    dd if=/dev/zero of="$small/filler" bs=1024 count=$((free_kib - 300)) status=none 2>/dev/null
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/ref" --out "$small/risk.tif" >"$T/fullmap.log" 2>&1
    st=$?
    if [ $st -eq 1 ] && grep -q "has .* free: out of space?); the existing .*small/risk.tif is untouched" "$T/fullmap.log" &&
        [ "$(md5sum <"$small/risk.tif")" = "$before" ]; then
        ok "the map on a full disk: exit 1, the free space and the untouched map said, and it is untouched"
    else
        notok "the map on a full disk" "status $st: $(grep error "$T/fullmap.log")"
    fi
    umount "$small"
else
    echo "# skipped: cannot mount a tmpfs here (the full-disk case needs one)"
fi
# a directory whose 'checkpoints' is a file: info says no run can use it (exit 1), training
# refuses it before any work
mkdir -p "$T/filed" && echo x >"$T/filed/checkpoints"
"$WILDCPU" info "$T/filed" >"$T/filed.info" 2>&1
s=$?
"$WILDCPU" --tiles "$SAMPLE" --out "$T/filed" --steps 1 --batch 4 --micro-batch 2 --no-predict >"$T/filed.log" 2>&1
t=$?
[ $s -eq 1 ] && grep -q "filed/checkpoints is not a directory, so no run can keep its checkpoints there" "$T/filed.info" \
    && [ $t -eq 1 ] && grep -q "cannot write checkpoints into .*filed/checkpoints: Not a directory" "$T/filed.log" \
    && ok "DIR/checkpoints a file: info exits 1 saying so, training refuses it (exit 1)" \
    || notok "DIR/checkpoints a file" "info $s: $(cat "$T/filed.info"); train $t: $(tail -1 "$T/filed.log")"
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
[ $s -eq 2 ] && grep -q "deep/risk.tif is an input, and this command would write the risk map there" "$T/deep.log" \
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
finish
