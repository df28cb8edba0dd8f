#!/usr/bin/env bash
# predict given a run directory while a training run writes into it: the training renames a
# better best.wcp into place, then writes checkpoints that know of it, and prunes checkpoints
# beyond --keep, at any moment of predict's reads. The moment is made exact by pausing wildcpu under gdb at the read that the rename must
# fall between, and doing there what a training does (skipped without gdb).
. "$(dirname "$0")/lib.sh"
command -v gdb >/dev/null || { echo "# skipped: no gdb to pause wildcpu between its reads"; finish; }
# gdb follows no re-execution: the program must not start itself again (docs/cli.md)
export OPENBLAS_NUM_THREADS=1

# One run of the logistic model whose validations improve twice: best.wcp after step 4, then
# after step 8. Every step's checkpoint is kept, so the run's states can be laid out again.
"$WILDCPU" --tiles "$SAMPLE" --model logistic --epochs 3 --batch 8 --out "$T/run" \
    --ckpt-every 1 --keep 100 --no-predict >"$T/run.log" 2>&1 ||
    { notok "training run" "$(tail -3 "$T/run.log")"; finish; }
bests=$(grep -o '"step":[0-9]*,"file":"best.wcp"' "$T/run/metrics.jsonl" | grep -o '[0-9]*' | tr '\n' ' ')
[ "$bests" = "4 8 " ] || { notok "the run's best.wcp after steps 4 and 8" "got: $bests"; finish; }
c4=$T/run/checkpoints/ckpt-00000004.wcp c8=$T/run/checkpoints/ckpt-00000008.wcp
# the directory as the training left it after step 4: its checkpoint, and best.wcp of step 4
at_step4() {
    rm -rf "$1" && mkdir -p "$1/checkpoints" && cp "$c4" "$1/checkpoints/" &&
        cp "$c4" "$1/checkpoints/best.wcp"
}
# what the training does next: a better best.wcp renamed into place, then a checkpoint that
# knows of it
better() {
    echo "cp '$c8' '$1/checkpoints/.b' && mv '$1/checkpoints/.b' '$1/checkpoints/best.wcp'" \
        "${2:+&& cp '$c8' '$1/checkpoints/'}"
}
# the maps of the two models, by one rank each
for s in 4 8; do
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/run/checkpoints/ckpt-0000000$s.wcp" \
        --out "$T/m$s.tif" >"$T/m$s.log" 2>&1 || notok "the map of step $s" "$(tail -2 "$T/m$s.log")"
done
# same_map A B: the two maps' pixels are bitwise equal
same_map() {
    $PY - "$1" "$2" <<'EOF'
import sys
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]  # kept open while their bands are read
sys.exit(ds[0].GetRasterBand(1).ReadRaster() != ds[1].GetRasterBand(1).ReadRaster())
EOF
}

# 1: best.wcp replaced between predict's read of it and its read of the newest checkpoint
# (paused at that second read): the newest checkpoint then knows a better best than the one read,
# which is no older copy put back from outside the run, but a best.wcp that is no longer there.
at_step4 "$T/d1"
gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_latest' -ex run \
    -ex "shell $(better "$T/d1" newer)" -ex continue --args \
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/d1" --out "$T/d1.tif" >"$T/d1.log" 2>&1
if grep -q 'exited normally' "$T/d1.log" && grep -q 'best.wcp (step 8' "$T/d1.log" &&
    same_map "$T/d1.tif" "$T/m8.tif"; then
    ok "best.wcp replaced by a training while predict reads the directory: the new one is read, no 'older copy' error"
else
    notok "best.wcp replaced while predict reads the directory" \
        "$(grep -E 'error|exited|with ' "$T/d1.log" | head -3 | cut -c1-300)"
fi

# 2: on 2 ranks, best.wcp replaced after rank 0 read it and before rank 1 did (rank 1 paused as
# it starts reading): every rank must map with one model, not each with the one it found.
at_step4 "$T/d2"
p=(predict --tiles "$SAMPLE" --checkpoint "$T/d2" --out "$T/d2.tif")
mpirun --oversubscribe --bind-to none -np 1 "$WILDCPU" "${p[@]}" : -np 1 \
    gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_resolve' -ex run \
    -ex "shell sleep 3; $(better "$T/d2")" -ex continue --args "$WILDCPU" "${p[@]}" \
    >"$T/d2.log" 2>&1
s=$?
step=$(grep -o 'best.wcp (step [0-9]*' "$T/d2.log" | grep -o '[0-9]*$')
if [ $s -eq 0 ] && [ -n "$step" ] && same_map "$T/d2.tif" "$T/m$step.tif"; then
    ok "2 ranks, best.wcp replaced between their reads: the map is step $step's model's, bitwise"
else
    notok "2 ranks, best.wcp replaced between their reads: one model" \
        "status $s, said step '${step:-none}'; the map equals step 4's: $(same_map "$T/d2.tif" "$T/m4.tif" && echo yes || echo no), step 8's: $(same_map "$T/d2.tif" "$T/m8.tif" && echo yes || echo no)"
fi

# 3: a run without best.wcp (--val-fraction 0) checkpointing with --keep 1: its newest checkpoint
# is pruned once the next is durable, between predict's listing of the directory and its read
# (paused at that read): the next one is read, not "no valid checkpoint" (status 1).
rm -rf "$T/d3" && mkdir -p "$T/d3/checkpoints" && cp "$c4" "$T/d3/checkpoints/"
gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_read' -ex run \
    -ex "shell cp '$c8' '$T/d3/checkpoints/.n' && mv '$T/d3/checkpoints/.n' '$T/d3/checkpoints/ckpt-00000008.wcp' && rm '$T/d3/checkpoints/ckpt-00000004.wcp'" \
    -ex continue --args \
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/d3" --out "$T/d3.tif" >"$T/d3.log" 2>&1
if grep -q 'exited normally' "$T/d3.log" && grep -q 'ckpt-00000008.wcp (step 8' "$T/d3.log" &&
    ! grep -q 'not usable' "$T/d3.log" && same_map "$T/d3.tif" "$T/m8.tif"; then
    ok "the newest checkpoint pruned by a training between predict's listing and its read: the next one is read, nothing said"
else
    notok "the newest checkpoint pruned between predict's listing and its read" \
        "$(grep -E 'error|warning|exited|with ' "$T/d3.log" | head -3 | cut -c1-300)"
fi
# 4: the same prune with a damaged newer file listed first: the listing is taken again, and the
# damaged file, passed over in both listings, is reported once, not once per listing.
rm -rf "$T/d4" && mkdir -p "$T/d4/checkpoints" && cp "$c4" "$c8" "$T/d4/checkpoints/" &&
    head -c 5000 /dev/urandom >"$T/d4/checkpoints/ckpt-00000012.wcp"
gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_read' -ex run \
    -ex "shell rm '$T/d4/checkpoints/ckpt-00000008.wcp'" -ex continue --args \
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/d4" --out "$T/d4.tif" >"$T/d4.log" 2>&1
said=$(grep -c 'ckpt-00000012.wcp is not usable' "$T/d4.log")
if grep -q 'exited normally' "$T/d4.log" && grep -q 'ckpt-00000004.wcp (step 4' "$T/d4.log" &&
    [ "$said" -eq 1 ] && same_map "$T/d4.tif" "$T/m4.tif"; then
    ok "a checkpoint pruned while a damaged one is passed over: the listing taken again, the damaged one reported once"
else
    notok "a checkpoint pruned while a damaged one is passed over: reported once" \
        "reported $said times; $(grep -E 'error|warning|exited|with ' "$T/d4.log" | head -4 | cut -c1-300)"
fi
# 5: on 2 ranks, a run without best.wcp whose checkpoint rank 0 chose is pruned (a newer one
# durable) before rank 1 reads it (rank 1 paused as it starts reading): the ranks resolve the
# directory again and map with the newer one, and no rank says an error about the file gone.
rm -rf "$T/d5" && mkdir -p "$T/d5/checkpoints" && cp "$c4" "$T/d5/checkpoints/"
p=(predict --tiles "$SAMPLE" --checkpoint "$T/d5" --out "$T/d5.tif")
mpirun --oversubscribe --bind-to none -np 1 "$WILDCPU" "${p[@]}" : -np 1 \
    gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_resolve' -ex run \
    -ex "shell sleep 3; cp '$c8' '$T/d5/checkpoints/.n' && mv '$T/d5/checkpoints/.n' '$T/d5/checkpoints/ckpt-00000008.wcp' && rm '$T/d5/checkpoints/ckpt-00000004.wcp'" \
    -ex continue --args "$WILDCPU" "${p[@]}" >"$T/d5.log" 2>&1
s=$?
if [ $s -eq 0 ] && grep -q 'ckpt-00000008.wcp (step 8' "$T/d5.log" &&
    ! grep -q 'error' "$T/d5.log" && same_map "$T/d5.tif" "$T/m8.tif"; then
    ok "2 ranks, rank 0's checkpoint pruned before rank 1 reads it: the newer one mapped, no spurious error"
else
    notok "2 ranks, rank 0's checkpoint pruned before rank 1 reads it: no spurious error" \
        "status $s; $(grep -E 'error|warning|with ' "$T/d5.log" | head -3 | cut -c1-300)"
fi
# 6: info DIR of the same run (--keep 1, no best.wcp) while its checkpoint is pruned between
# info's listing and its read: the newer one is described, not the pruned one as INVALID with
# "no valid checkpoint ... use --fresh to start over".
rm -rf "$T/d6" && mkdir -p "$T/d6/checkpoints" && cp "$c4" "$T/d6/checkpoints/"
gdb -q -batch -ex 'set breakpoint pending on' -ex 'tbreak wc_ckpt_read' -ex run \
    -ex "shell cp '$c8' '$T/d6/checkpoints/.n' && mv '$T/d6/checkpoints/.n' '$T/d6/checkpoints/ckpt-00000008.wcp' && rm '$T/d6/checkpoints/ckpt-00000004.wcp'" \
    -ex continue --args "$WILDCPU" info "$T/d6" >"$T/d6.log" 2>&1
if grep -q 'exited normally' "$T/d6.log" && grep -q 'ckpt-00000008.wcp .* valid' "$T/d6.log" &&
    ! grep -q -E 'INVALID|no valid' "$T/d6.log"; then
    ok "info DIR while a training prunes the checkpoint it listed: the newer one described, nothing INVALID"
else
    notok "info DIR while a training prunes the checkpoint it listed" \
        "$(grep -E 'ckpt-|valid|exited' "$T/d6.log" | head -4 | cut -c1-300)"
fi
finish
