#!/usr/bin/env bash
# t_data.sh: the sharded reader under real MPI. For 1..5 ranks: over each epoch the ranks
# together read every training patch exactly once (gathered with MPI and checked on rank 0),
# and the normalization statistics, split and pixel counts are bitwise those of one process.
. "$(dirname "$0")/lib.sh"
tool=${WILDCPU_BUILD:-$ROOT/build}/tools/shard_check
for n in 1 2 3 4 5; do
    # 32-pixel patches, batch 16 in micro-batches of 3: uneven micro-batches and shares
    if mpirun_n "$n" "$tool" "$SAMPLE" 32 16 3 2 >"$T/shard$n.txt" 2>&1 && grep -q "coverage ok" "$T/shard$n.txt"; then
        ok "$n rank(s): every training patch read exactly once per epoch"
    else
        notok "$n rank(s): every training patch read exactly once per epoch" "$(tail -3 "$T/shard$n.txt")"
    fi
    grep -E "^(stats|split)" "$T/shard$n.txt" >"$T/stats$n.txt"
    if [ "$n" -gt 1 ]; then
        if [ -s "$T/stats1.txt" ] && cmp -s "$T/stats1.txt" "$T/stats$n.txt"; then
            ok "$n rank(s): normalization statistics bitwise equal to 1 rank's"
        else
            notok "$n rank(s): normalization statistics bitwise equal to 1 rank's" "$(diff "$T/stats1.txt" "$T/stats$n.txt" | head -4)"
        fi
    fi
done
# data/sample is generated, never edited: the generator reproduces it pixel for pixel
"$WILDCPU" synth --out "$T/regen" --size 512 --tile 256 --seed 1 >"$T/regen.log" 2>&1
checksums() { gdalinfo -checksum "$1/tiles.vrt" | grep Checksum; gdalinfo -checksum "$1/oracle_risk.tif" | grep Checksum; }
if [ "$(checksums "$T/regen" | wc -l)" -eq 14 ] && cmp -s <(checksums "$T/regen") <(checksums "$ROOT/data/sample"); then
    ok "data/sample is exactly what wildcpu synth --size 512 --tile 256 --seed 1 writes (13 bands + oracle)"
else
    notok "data/sample regenerates" "$(diff <(checksums "$T/regen") <(checksums "$ROOT/data/sample") | head -4)"
fi
finish
