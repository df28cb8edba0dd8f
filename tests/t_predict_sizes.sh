#!/usr/bin/env bash
# t_predict_sizes.sh: rasters at the edge of GDAL's sizes (2147483647 = INT_MAX pixels wide,
# tall, or both), as hand-written VRTs with the sample's bands, empty or with one sample tile as
# their only source. `wildcpu predict` must never overflow (before the fix: SIGABRT):
#   - what cannot fit (a round of rows of an INT_MAX-wide raster needs terabytes on rank 0) is
#     refused before any work, exit 1, saying the size, the memory and what to do;
#   - what fits (512 x INT_MAX: half a MiB a strip) is planned right (8388608 strips), maps,
#     and stops cleanly on SIGTERM (exit 75 within 5 s, nothing left behind).
# Training on such rasters (someone else's planning) only has to fail fast and cleanly.
# tests/run: alone (a SIGTERM must end the map within 5 s)
. "$(dirname "$0")/lib.sh"

# The test runs alone (two cores): what the cases after the SIGTERM ones read is prepared beside
# the first training and the refusals, and finished before the SIGTERM cases start.
# a raster of 2049 feature bands (below): the sample's first 96 x 96 pixels
# a GeoTIFF interleaving its 13 bands by pixel in 1024-pixel blocks (Float64: 104 MiB of blocks
# for all bands), and a logistic checkpoint to map it with (the cache is sized by the blocks a
# window touches, 130 MiB for its 342x256 windows as for unet-lite's 416x328, and the map's bits
# are what is compared)
(
    gdal_translate -q -of VRT -srcwin 0 0 96 96 "$SAMPLE" "$T/cut.vrt"
    $PY - "$T/cut.vrt" "$T/b2049.vrt" <<'PY'
import sys
from osgeo import gdal
src = gdal.Open(sys.argv[1])
names = [src.GetRasterBand(b).GetDescription() for b in range(1, src.RasterCount + 1)]
feat = [b for b, n in enumerate(names, 1) if n != "fire"]
idx = [feat[i % len(feat)] for i in range(2049)] + [names.index("fire") + 1]
v = gdal.BuildVRT(sys.argv[2], [sys.argv[1]], bandList=idx)
for i in range(2049):
    v.GetRasterBand(i + 1).SetDescription("f%04d" % i)
v.GetRasterBand(2050).SetDescription("fire")
v = None
PY
    gdal_translate -q -ot Float64 -outsize 1024 1024 -co TILED=YES -co BLOCKXSIZE=1024 \
        -co BLOCKYSIZE=1024 -co INTERLEAVE=PIXEL "$SAMPLE" "$T/pixel.tif"
    "$WILDCPU" --tiles "$SAMPLE" --out "$T/lrun" --model logistic --steps 2 --batch 8 --micro-batch 4 \
        --patch 32 --val-fraction 0 --no-predict >"$T/lrun.log" 2>&1
) &
prep=$!
# (unet-lite, whose windows and rounds the cases below plan; no validation: only its parameters
# are used)
"$WILDCPU" --tiles "$SAMPLE" --out "$T/run" --steps 2 --batch 8 --val-fraction 0 --no-predict >"$T/train.log" 2>&1 \
    || { notok "train a checkpoint" "$(tail -3 "$T/train.log")"; finish; }
# vrt OUT W H SOURCE [OUT W H SOURCE ...]: the sample's bands (names, types, nodata) on a W x H
# grid, with one sample tile as their source where SOURCE is 1 (one python start for all)
vrt() {
    $PY - "$SAMPLE" "$@" <<'PY'
import sys
from osgeo import gdal
sample = sys.argv[1]
s = gdal.Open(sample)
for k in range(2, len(sys.argv), 4):
    out, W, H, source = sys.argv[k], int(sys.argv[k + 1]), int(sys.argv[k + 2]), sys.argv[k + 3] == "1"
    x = [f'<VRTDataset rasterXSize="{W}" rasterYSize="{H}">',
         f'  <SRS>{s.GetProjection()}</SRS>',
         '  <GeoTransform>' + ", ".join(repr(v) for v in s.GetGeoTransform()) + '</GeoTransform>']
    for i in range(1, s.RasterCount + 1):
        b = s.GetRasterBand(i)
        x += [f'  <VRTRasterBand dataType="{gdal.GetDataTypeName(b.DataType)}" band="{i}">',
              f'    <Description>{b.GetDescription()}</Description>',
              f'    <NoDataValue>{b.GetNoDataValue():g}</NoDataValue>']
        if source:
            x += [f'    <SimpleSource><SourceFilename relativeToVRT="0">{sample}</SourceFilename>'
                  f'<SourceBand>{i}</SourceBand><SrcRect xOff="0" yOff="0" xSize="256" ySize="256" />'
                  '<DstRect xOff="0" yOff="0" xSize="256" ySize="256" /></SimpleSource>']
        x += ['  </VRTRasterBand>']
    open(out, "w").write("\n".join(x + ['</VRTDataset>']) + "\n")
PY
}
M=2147483647
vrt "$T/wide.vrt" $M 512 0 "$T/wide_src.vrt" $M 512 1 "$T/both.vrt" $M $M 0 "$T/both_src.vrt" $M $M 1 \
    "$T/tall.vrt" 512 $M 0 "$T/tall_src.vrt" 512 $M 1

# ---- refused before any work ----------------------------------------------------------------
for v in wide wide_src both both_src; do
    for n in 1 2; do
        mkdir -p "$T/out_$v$n"
        s0=$(date +%s.%N)
        # (every rank refuses and exits 1 by itself; odls_base_sigkill_timeout=0: mpirun then
        # tears the job down at once, where it waits 2 s after a non-zero exit before its
        # SIGTERM and SIGKILL to ranks that are gone anyway)
        OMPI_MCA_odls_base_sigkill_timeout=0 timeout 120 mpirun --oversubscribe --bind-to none -np $n "$WILDCPU" predict \
            --tiles "$T/$v.vrt" --checkpoint "$T/run" --out "$T/out_$v$n/risk.tif" --png "$T/out_$v$n/risk.png" \
            >"$T/$v$n.log" 2>&1
        st=$?
        secs=$(echo "$(date +%s.%N) - $s0" | bc)
        name="$v.vrt ($(grep -m1 -o 'is [0-9]*x[0-9]* px' "$T/$v$n.log")) on $n rank(s): refused before any work, exit 1 in ${secs} s"
        if [ $st -eq 1 ] && grep -Eq "$v.vrt is ${M}x(512|$M) px: .* rank 0 would need [0-9.]+ TiB .* split the raster into pieces at most [0-9]+ px wide" "$T/$v$n.log" &&
            ! grep -q "strips x" "$T/$v$n.log" && [ -z "$(ls -A "$T/out_$v$n")" ]; then
            ok "$name"
        else
            notok "$name" "exit $st: $(grep -v '^\s*$' "$T/$v$n.log" | tail -3 | cut -c1-400)"
        fi
    done
done
grep -m1 "error" "$T/wide1.log" | sed 's/^/# /' | cut -c1-400

wait $prep # (nothing else runs during the SIGTERM cases)

# ---- fits: planned, mapped, stopped -------------------------------------------------------------
ranks_of() {
    pgrep -f -- "--out $1" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done
}
for v in tall tall_src; do
    mkdir -p "$T/out_$v"
    "$WILDCPU" predict --tiles "$T/$v.vrt" --checkpoint "$T/run" --out "$T/out_$v/risk.tif" \
        >"$T/$v.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do grep -q "strips x" "$T/$v.log" && break; sleep 0.05; done
    sleep 1
    t0=$(date +%s.%N)
    kill -TERM $pid 2>/dev/null
    ( sleep 60; kill -KILL $pid 2>/dev/null ) &
    guard=$!
    wait $pid
    st=$?
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    kill $guard 2>/dev/null
    name="$v.vrt (512x$M px): planned as 8388608 strips, mapping, SIGTERM: exit 75 in $secs s"
    if [ $st -eq 75 ] && grep -q "(512x$M px) .*: 8388608 strips x 2 windows" "$T/$v.log" &&
        grep -q "predict: stopped by" "$T/$v.log" && [ "$(echo "$secs < 5" | bc)" = 1 ] &&
        [ -z "$(ls -A "$T/out_$v")" ]; then
        ok "$name"
    else
        notok "$name" "exit $st: $(tail -3 "$T/$v.log" | cut -c1-400) | $(ls -A "$T/out_$v")"
    fi
done

# ---- training: fails fast and cleanly (its planning is not this test's subject) --------------
# Planning may ask for more memory than there is and report it (exit 1); under SAN=1 ASan would
# report such a request itself instead of returning NULL as malloc does, hence the option.
for v in wide tall both; do
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" \
        timeout 120 "$WILDCPU" --tiles "$T/$v.vrt" --out "$T/train_$v" --steps 1 --no-predict \
        >"$T/train_$v.log" 2>&1
    st=$?
    if [ $st -eq 1 ] || [ $st -eq 2 ]; then
        ok "train on $v.vrt: exit $st ($(grep -m1 error "$T/train_$v.log" | cut -c1-160))"
    else
        notok "train on $v.vrt: exit 1 or 2" "exit $st: $(tail -2 "$T/train_$v.log")"
    fi
done
# a raster of 2049 feature bands (a 1024 x 1024 input of them passes a tensor's 2^31 values): it
# trains, maps and evaluates; the receptive field was described at 1024 x 1024 whatever the
# bands, so it was refused after the whole planning with "more than a tensor may hold"
# A network whose widest layer is too large for a tensor at 1024 x 1024 (2048 channels at full
# resolution: 2^31 values) trains at its patch size and maps in smaller windows: the size its
# receptive field is found at was 1024 x 1024 whatever the layers, so training (its validation
# windows) and predict refused it (status 2, naming a 1024x1024 tensor nobody asked for)
# (both run beside the GDAL-cache case below; their statuses in $T/*.st)
(
    "$WILDCPU" --tiles "$T/b2049.vrt" --out "$T/wide_bands" --model logistic --steps 2 --batch 4 \
        --micro-batch 2 --patch 32 --val-fraction 0 >"$T/b2049.log" 2>&1
    echo $? >"$T/b2049.st"
    "$WILDCPU" evaluate --tiles "$T/b2049.vrt" --checkpoint "$T/wide_bands" >"$T/b2049e.log" 2>&1
    echo $? >"$T/b2049e.st"
    printf 'input x\nconv a x out=2048 k=1\nrelu r a\nconv h r out=1 k=1\n' >"$T/wide.spec"
    gdal_translate -q -of VRT -srcwin 0 0 128 128 "$SAMPLE" "$T/small.vrt"
    "$WILDCPU" --tiles "$SAMPLE" --model "$T/wide.spec" --out "$T/wide" --steps 1 --batch 2 \
        --micro-batch 1 --val-fraction 0 --no-predict >"$T/wide.log" 2>&1
    echo $? >"$T/wide.st"
    "$WILDCPU" predict --tiles "$T/small.vrt" --checkpoint "$T/wide" --out "$T/wide.tif" >"$T/widep.log" 2>&1
    echo $? >"$T/widep.st"
) &
besides=$!

# a GeoTIFF interleaving its 13 bands by pixel in 1024-pixel blocks (Float64: 104 MiB of blocks
# for all bands): predict sizes GDAL's cache to the blocks a window touches, plus a quarter
# (130 MiB; it held 64 MiB, and each band's read decoded the block again: 1.9x the time on a
# 4096 x 4096 map in 2048-pixel blocks); GDAL_CACHEMAX stands; the cache changes no bit
ckpt=$(ls "$T"/lrun/checkpoints/ckpt-*.wcp | tail -1)
"$WILDCPU" predict --tiles "$T/pixel.tif" --checkpoint "$ckpt" --out "$T/pixel_map.tif" \
    >"$T/pixel.log" 2>&1
s1=$?
GDAL_CACHEMAX=32 "$WILDCPU" predict --tiles "$T/pixel.tif" --checkpoint "$ckpt" \
    --out "$T/pixel_map32.tif" >"$T/pixel32.log" 2>&1
s32=$?
same=$($PY - "$T/pixel_map.tif" "$T/pixel_map32.tif" <<'PY'
import sys
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]  # held: a band outlives no dataset
a, b = (d.GetRasterBand(1).ReadRaster() for d in ds)
print("same" if a == b else "differ")
PY
)
wait $besides
st() { cat "$T/$1.st" 2>/dev/null || echo none; }

s=$(st b2049) se=$(st b2049e)
[ "$s" = 0 ] && [ "$se" = 0 ] && [ -s "$T/wide_bands/risk.tif" ] && grep -q "AUC-PR" "$T/b2049e.log" \
    && ok "2049 feature bands: trained, mapped and evaluated" \
    || notok "2049 feature bands" "status $s/$se: $(grep -m2 error "$T/b2049.log" "$T/b2049e.log")"

[ $s1 -eq 0 ] && [ $s32 -eq 0 ] && [ "$same" = same ] \
    && grep -q "GDAL's block cache 130.0 MiB per rank" "$T/pixel.log" \
    && grep -q "GDAL's block cache 32.0 MiB per rank" "$T/pixel32.log" \
    && ok "pixel-interleaved 1024-pixel blocks: GDAL's cache holds a window's blocks (130 MiB), GDAL_CACHEMAX kept, same bits" \
    || notok "GDAL's cache for a pixel-interleaved GeoTIFF" "status $s1/$s32, maps $same: $(grep -ho "activations.*" "$T/pixel.log" "$T/pixel32.log" | head -2)"

s=$(st wide) sp=$(st widep)
[ "$s" = 0 ] && [ "$sp" = 0 ] && [ -s "$T/wide.tif" ] \
    && ok "a network with 2048 channels at full resolution trains and maps" \
    || notok "a network too wide for a 1024x1024 tensor" "status $s/$sp: $(grep -h error "$T/wide.log" "$T/widep.log" | head -2)"

finish
