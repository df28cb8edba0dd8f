#!/usr/bin/env bash
# t_data.sh: the sharded reader under real MPI. For 1..5 ranks: over each epoch the ranks
# together read every training patch exactly once (gathered with MPI and checked on rank 0), in
# the order one process reads them, and the normalization statistics, split and pixel counts
# are bitwise those of one process, also for a band of +-1e308 values. Bands of values near
# 1e308 train to a finite normalization, loss and map. A stop signal while planning a huge
# raster ends the run within seconds, on every rank.
. "$(dirname "$0")/lib.sh"
tool=${WILDCPU_BUILD:-$ROOT/build}/tools/shard_check
for n in 1 2 3 4 5; do
    # 32-pixel patches, batch 16 in micro-batches of 3: uneven micro-batches and shares
    if mpirun_n "$n" "$tool" "$SAMPLE" 32 16 3 2 >"$T/shard$n.txt" 2>&1 && grep -q "coverage ok" "$T/shard$n.txt"; then
        ok "$n rank(s): every training patch read exactly once per epoch"
    else
        notok "$n rank(s): every training patch read exactly once per epoch" "$(tail -3 "$T/shard$n.txt")"
    fi
    grep -E "^(stats|split|order)" "$T/shard$n.txt" >"$T/stats$n.txt"
    if [ "$n" -gt 1 ]; then
        if [ "$(grep -c "^order" "$T/stats1.txt")" -eq 2 ] && cmp -s "$T/stats1.txt" "$T/stats$n.txt"; then
            ok "$n rank(s): read order and normalization statistics bitwise equal to 1 rank's"
        else
            notok "$n rank(s): read order and normalization statistics bitwise equal to 1 rank's" "$(diff "$T/stats1.txt" "$T/stats$n.txt" | head -4)"
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
# Labels from elsewhere. The tiles' own `fire` band stays out of the inputs even then (it would
# hand the model the answer), and a label raster that covers only part of the tiles, with no
# nodata value, leaves the rest unknown (nodata), not unburned.
gdal_translate -q -b 13 -srcwin 0 0 256 256 -a_nodata none "$SAMPLE" "$T/quarter.tif"
train1=(--steps 1 --batch 4 --micro-batch 2 --patch 32 --no-predict)
"$WILDCPU" --tiles "$SAMPLE" --labels "$T/quarter.tif" --out "$T/lab" "${train1[@]}" >"$T/lab.log" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "12 features" "$T/lab.log" && grep -q "band 13 'fire' is a label band, not a feature" "$T/lab.log"; then
    ok "--labels: the tiles' fire band is left out of the 12 inputs"
else
    notok "--labels: the tiles' fire band is left out of the inputs" "status $status: $(grep -E 'features|error' "$T/lab.log" | head -3)"
fi
lab=$(ls "$T"/lab/labels-*.tif 2>/dev/null | head -1)
$PY - "$SAMPLE" "${lab:-missing}" <<'PY' >"$T/quarter.txt" 2>&1
import sys
import numpy as np
from osgeo import gdal
t, l = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
assert np.isnan(l.GetRasterBand(1).GetNoDataValue()), l.GetRasterBand(1).GetNoDataValue()
a = l.GetRasterBand(1).ReadAsArray()
fire = t.GetRasterBand(13).ReadAsArray()
assert (a[:256, :256] == fire[:256, :256]).all(), "the covered quarter is copied pixel for pixel"
assert np.isnan(a[256:, :]).all() and np.isnan(a[:, 256:]).all(), "the rest is nodata (NaN)"
print(f"covered quarter copied, {np.isnan(a).mean():.2f} of the grid nodata")
PY
[ $? -eq 0 ] && ok "--labels raster covering a quarter: $(cat "$T/quarter.txt")" || notok "--labels raster covering a quarter" "$(tail -2 "$T/quarter.txt")"
# Many bands with long names holding list separators: the names survive into the checkpoint,
# and the run's own map (which matches bands by name) is drawn.
$PY - "$T/wide.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal, osr
n, size = 80, 96
ds = gdal.GetDriverByName("GTiff").Create(sys.argv[1], size, size, n + 1, gdal.GDT_Float32)
ds.SetGeoTransform((500000, 30, 0, 4900000, 0, -30))
srs = osr.SpatialReference(); srs.ImportFromEPSG(32611); ds.SetProjection(srs.ExportToWkt())
rng = np.random.default_rng(5)
for b in range(n):
    band = ds.GetRasterBand(b + 1)
    band.SetDescription(f"feature {b:02d}, a long description; with=separators " + "x" * 40)
    band.WriteArray(rng.normal(size=(size, size)).astype(np.float32))
fire = ds.GetRasterBand(n + 1)
fire.SetDescription("fire")
fire.WriteArray((rng.random((size, size)) < 0.1).astype(np.float32))
ds = None
PY
"$WILDCPU" --tiles "$T/wide.tif" --out "$T/wide" --model logistic --patch 32 --steps 1 --batch 2 \
    --micro-batch 2 --val-fraction 0.3 >"$T/wide.log" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "80 features" "$T/wide.log" && [ -f "$T/wide/risk.tif" ]; then
    ok "80 bands with 90-byte names holding , ; = train and map"
else
    notok "80 bands with long names train and map" "status $status: $(grep -E 'features|error' "$T/wide.log" | head -3)"
fi

# --- statistics robust to any finite value: Float64 bands near 1e308, +-1e308 of mixed signs,
# and 1e308 outliers among ordinary values train (finite loss), store a finite normalization
# (the exported mean and std) and draw a map that is not nodata/NaN. 128x128, 32-pixel patches.
for kind in near mixed outliers; do
    $PY - "$T/hostile_$kind.tif" "$kind" <<'PY' >"$T/hostile_$kind.make" 2>&1
import sys
import numpy as np
from osgeo import gdal, osr
path, kind = sys.argv[1:]
n = 128
rng = np.random.default_rng(7)
u = rng.random((n, n))
if kind == "near":
    h = 1e308 * (1 + 0.5 * u)
elif kind == "mixed":
    h = np.where(rng.random((n, n)) < 0.5, -1e308, 1e308) * (0.5 + u)
else:
    h = rng.normal(size=(n, n))
    h[rng.random((n, n)) < 0.01] = 1e308
slope = rng.normal(size=(n, n))
fire = (slope + 0.5 * rng.normal(size=(n, n)) > 1).astype(np.float64)
ds = gdal.GetDriverByName("GTiff").Create(path, n, n, 3, gdal.GDT_Float64)
ds.SetGeoTransform((500000, 30, 0, 4900000, 0, -30))
srs = osr.SpatialReference(); srs.ImportFromEPSG(32611); ds.SetProjection(srs.ExportToWkt())
for i, (a, name) in enumerate([(h, "hostile"), (slope, "slope"), (fire, "fire")]):
    ds.GetRasterBand(i + 1).WriteArray(a)
    ds.GetRasterBand(i + 1).SetDescription(name)
ds = None
PY
    run=$T/hostile_$kind
    "$WILDCPU" --tiles "$T/hostile_$kind.tif" --out "$run" --model logistic --patch 32 --steps 2 \
        --batch 4 --micro-batch 2 --val-fraction 0 >"$run.log" 2>&1
    status=$?
    "$WILDCPU" export --checkpoint "$run" --out "$run.safetensors" >>"$run.log" 2>&1
    $PY - "$run" <<'PY' >"$run.txt" 2>&1
import json, math, struct, sys
import numpy as np
from osgeo import gdal
run = sys.argv[1]
raw = open(run + ".safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
meta = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["wildcpu"])
ch = {c["name"]: (c["mean"], c["std"]) for c in meta["input_channels"]}
assert all(math.isfinite(m) and math.isfinite(s) and s > 0 for m, s in ch.values()), ch
losses = [json.loads(l)["loss"] for l in open(run + "/metrics.jsonl") if '"train"' in l]
assert losses and all(math.isfinite(x) for x in losses), losses
mds = gdal.Open(run + "/risk.tif")  # kept: a band outliving its dataset crashes GDAL 3.6's bindings
m = mds.GetRasterBand(1).ReadAsArray()
drawn = np.isfinite(m) & (m != -9999)
assert drawn.mean() > 0.99, f"only {drawn.mean():.3f} of the map drawn"
print("mean %.3g std %.3g, losses %s, %.0f%% of the map drawn" % (*ch["hostile"], losses, 100 * drawn.mean()))
PY
    if [ $status -eq 0 ] && [ "$(grep -c . "$run.txt")" -eq 1 ]; then
        ok "Float64 band of $kind 1e308 values: finite normalization, loss and map ($(cat "$run.txt"))"
    else
        notok "Float64 band of $kind 1e308 values" "status $status: $(tail -2 "$run.txt") $(grep -E 'error|constant' "$run.log" | head -2)"
    fi
done
# ... and their statistics are bitwise the same on 1, 2 and 3 ranks (and finite)
for n in 1 2 3; do
    mpirun_n "$n" "$tool" "$T/hostile_mixed.tif" 32 4 2 1 >"$T/hshard$n.txt" 2>&1
    grep -E "^(stats|split)" "$T/hshard$n.txt" >"$T/hstats$n.txt"
done
if [ "$(grep -c "^stats" "$T/hstats1.txt")" -eq 1 ] && ! grep -Eqi "nan|inf" "$T/hstats1.txt" &&
    cmp -s "$T/hstats1.txt" "$T/hstats2.txt" && cmp -s "$T/hstats1.txt" "$T/hstats3.txt"; then
    ok "+-1e308 band: statistics finite and bitwise equal on 1, 2 and 3 ranks ($(head -1 "$T/hstats1.txt"))"
else
    notok "+-1e308 band: statistics bitwise equal on 1, 2, 3 ranks" "$(cat "$T/hstats1.txt") | $(diff "$T/hstats1.txt" "$T/hstats3.txt" | head -3)"
fi

# --- a mostly empty mosaic: the sample placed inside a 3072 x 2048 VRT of nothing (nodata
# around it), a dense GeoTIFF copy of it (every block written: GDAL reports data everywhere, so
# every patch is read) and a sparse one (SPARSE_OK: the empty blocks are not written). Planning
# skips the windows GDAL knows to be nodata, and must give the same bits as reading them: the
# statistics, split and read order of all three alike, on 1 and 2 ranks.
# (the sample at pixel (1000, 700) of the mosaic: not on a patch boundary)
$PY "$ROOT/tests/mosaic_around.py" "$SAMPLE" "$T/sparse.vrt" 1000 700 3072 2048
$PY - "$SAMPLE" "$T" <<'PY' >"$T/sparse.txt" 2>&1
import sys
from osgeo import gdal
gdal.UseExceptions()
src, d = gdal.Open(sys.argv[1]), sys.argv[2]
# GeoTIFF keeps one type and one nodata value for all bands: the copies are Float32 with nodata
# -9999 (the same values, the bands' own nodata pixels mapped onto it)
nodata = " ".join(str(src.GetRasterBand(i).GetNoDataValue()) for i in range(1, 14))
opts = ["TILED=YES", "COMPRESS=DEFLATE", "INTERLEAVE=BAND"]
gdal.Warp(d + "/dense.tif", d + "/sparse.vrt", outputType=gdal.GDT_Float32, srcNodata=nodata,
          dstNodata=-9999, creationOptions=opts)
gdal.Translate(d + "/holes.tif", d + "/dense.tif", creationOptions=opts + ["SPARSE_OK=TRUE"])
for name in ("dense", "holes"):
    t = gdal.Open(f"{d}/{name}.tif", gdal.GA_Update)
    for i in range(1, 14):
        t.GetRasterBand(i).SetDescription(src.GetRasterBand(i).GetDescription())
    t = None
ds, dense = gdal.Open(d + "/holes.tif"), gdal.Open(d + "/dense.tif")  # (held while bands are used)
print(ds.RasterXSize, ds.RasterYSize, ds.GetRasterBand(13).GetDescription(),
      dense.GetRasterBand(1).GetDataCoverageStatus(0, 0, 256, 256)[0],
      ds.GetRasterBand(1).GetDataCoverageStatus(0, 0, 256, 256)[0])
PY
if [ "$(cat "$T/sparse.txt")" = "3072 2048 fire 2 4" ]; then
    for n in 1 2; do
        for f in sparse.vrt dense.tif holes.tif; do
            mpirun_n "$n" "$tool" "$T/$f" 32 16 3 1 >"$T/sparse-$n-$f.txt" 2>&1
            grep -E "^(stats|split|order)" "$T/sparse-$n-$f.txt" >"$T/sparse-$n-$f.stats"
        done
    done
    ref=$T/sparse-1-dense.tif.stats
    same=1
    for s in "$T"/sparse-*.stats; do cmp -s "$ref" "$s" || same=0; done
    if [ "$(grep -c . "$ref")" -ge 3 ] && [ $same -eq 1 ]; then
        ok "mostly empty mosaic (VRT with no source over 95% of it, sparse GeoTIFF): the windows GDAL knows to be nodata are skipped, statistics, split and read order bitwise those of a dense copy, 1 and 2 ranks"
    else
        notok "mostly empty mosaic: skipped windows give a dense copy's bits" "$(head -3 "$ref") | $(for s in "$T"/sparse-*.stats; do cmp -s "$ref" "$s" || echo "$s differs"; done | head -3)"
    fi
else
    notok "mostly empty mosaic: built" "$(tail -3 "$T/sparse.txt")"
fi
# ... and at the scale where it matters: 100,000 x 20,000 px (1.9 million patches of 64) around
# the 512 x 512 sample. Reading every window took 70 s and 0.3 GB of planning arrays per
# process; skipping them, seconds, and the arrays grow with the 64 kept patches alone.
$PY "$ROOT/tests/mosaic_around.py" "$SAMPLE" "$T/widemosaic.vrt" 0 0 100000 20000
start=$(date +%s.%N)
timeout 60 "$WILDCPU" --tiles "$T/widemosaic.vrt" --out "$T/widemosaic" --steps 1 --batch 8 --micro-batch 4 \
    --no-predict >"$T/widemosaic.log" 2>&1
status=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
held=$(grep -o 'planning held [0-9.]* [KMG]iB' "$T/widemosaic.log")
if [ $status -eq 0 ] && echo "$held" | grep -Eq 'KiB|[0-9] MiB' &&
    echo "$held" | awk '{exit !($4 == "KiB" || $3 < 32)}'; then
    ok "100,000 x 20,000 px mosaic of one 512 x 512 region: trained in $(printf %.1f "$took") s, $held (in the memory plan)"
else
    notok "100,000 x 20,000 px mostly empty mosaic" "status $status after $took s, '$held': $(grep -E 'error|patches' "$T/widemosaic.log" | head -3)"
fi

# ... and the skip is seen: the log counts the patches GDAL knows to be nodata
unread=$(grep -o 'widemosaic.vrt: [0-9]* of [0-9]* patches not read' "$T/widemosaic.log")
[ -n "$unread" ] && ok "the 100,000 x 20,000 px mosaic: ${unread#*vrt: } (GDAL knows them to be nodata)" \
    || notok "the mostly empty mosaic's skip logged" "$(grep -E 'planning|patches' "$T/widemosaic.log" | head -3)"
# Two tiles on a diagonal (the sample's two other tiles' sources removed): GDAL 3.6 gives up on
# the coverage of such a window (DATA, -1%) rather than say partly empty; the halving goes on and
# finds the holes: about half the patches of 32 are not read (those within the two missing
# tiles; the grid starts at the pooling phase, so 225 patches).
$PY - "$SAMPLE" "$T/diag.vrt" <<'PY'
import os, re, sys
import xml.etree.ElementTree as ET
src = os.path.dirname(os.path.abspath(sys.argv[1]))
t = ET.parse(sys.argv[1])
for band in t.getroot().findall("VRTRasterBand"):
    for s in list(band):
        fn = s.find("SourceFilename") if s.tag.endswith("Source") else None
        if fn is None:
            continue
        if re.search(r"r00_c01|r01_c00", fn.text):
            band.remove(s)
        elif fn.get("relativeToVRT") == "1":
            fn.text, fn.attrib["relativeToVRT"] = os.path.join(src, fn.text), "0"
t.write(sys.argv[2])
PY
"$WILDCPU" --tiles "$T/diag.vrt" --out "$T/diag" --patch 32 --steps 1 --batch 8 --micro-batch 4 \
    --no-predict >"$T/diag.log" 2>&1
status=$?
unread=$(grep -o 'diag.vrt: [0-9]* of 225 patches not read' "$T/diag.log" | grep -o '[0-9]*' | head -1)
[ $status -eq 0 ] && [ "${unread:-0}" -ge 90 ] \
    && ok "two tiles on a diagonal: $unread of 225 patches not read (GDAL's 'data, -1%' halved further)" \
    || notok "two tiles on a diagonal" "status $status: $(grep -E 'planning|error' "$T/diag.log" | head -3)"
# A band whose nodata its type cannot hold (Byte, -1): GDAL fills the mosaic's holes with 0,
# which is data to wildcpu, so skipping them would drop pixels that reading keeps. wildcpu reads
# one hole to check, warns, and reads every window: every patch is kept.
$PY - "$T" <<'PY'
import sys
import numpy as np
from osgeo import gdal
d = sys.argv[1]
gt = (500000, 30, 0, 5000000, 0, -30)
drv = gdal.GetDriverByName("GTiff")
for name, w, a in (("feat", 64, np.full((64, 64), 5, np.uint8) + (np.arange(64) % 7).astype(np.uint8)),
                   ("lab", 128, (np.arange(128 * 64).reshape(64, 128) % 9 == 0).astype(np.uint8))):
    f = drv.Create(f"{d}/{name}.tif", w, 64, 1, gdal.GDT_Byte)
    f.SetGeoTransform(gt)
    f.GetRasterBand(1).WriteArray(a)
    f = None
def band(n, desc, nodata, path, w):
    return (f'<VRTRasterBand dataType="Byte" band="{n}"><Description>{desc}</Description>'
            f'<NoDataValue>{nodata}</NoDataValue><SimpleSource><SourceFilename>{path}</SourceFilename>'
            f'<SourceBand>1</SourceBand><SrcRect xOff="0" yOff="0" xSize="{w}" ySize="64"/>'
            f'<DstRect xOff="0" yOff="0" xSize="{w}" ySize="64"/></SimpleSource></VRTRasterBand>')
open(f"{d}/badfill.vrt", "w").write(
    '<VRTDataset rasterXSize="128" rasterYSize="64"><SRS>EPSG:32611</SRS>'
    '<GeoTransform>500000, 30, 0, 5000000, 0, -30</GeoTransform>'
    + band(1, "cover", -1, f"{d}/feat.tif", 64) + band(2, "fire", 255, f"{d}/lab.tif", 128)
    + "</VRTDataset>")
PY
"$WILDCPU" --tiles "$T/badfill.vrt" --out "$T/badfill" --patch 32 --model logistic --steps 1 \
    --batch 2 --micro-batch 2 --val-fraction 0 --no-predict >"$T/badfill.log" 2>&1
status=$?
[ $status -eq 0 ] && grep -q "band 1 (cover) reads 0, which is not its nodata value (-1)" "$T/badfill.log" \
    && grep -Eq "patches: ([0-9]+) of 32x32 .*, \1 kept" "$T/badfill.log" && ! grep -q "patches not read" "$T/badfill.log" \
    && ok "holes that GDAL fills with data (Byte nodata -1 reads 0): warned, every window read, every patch kept" \
    || notok "holes filled with data" "status $status: $(grep -E 'warning|patches|error' "$T/badfill.log" | head -3)"

# --- a stop signal while planning a huge raster: a VRT of 2,000,000 x 20,000 pixels, one 16 x 16
# source stretched over all of it (planning reads its 9.8 million patches for minutes: a VRT
# without a source would be skipped as nodata, above). SIGTERM 3 s after the start, to
# the process, or to one rank of two: every rank agrees, exit 75 within seconds, "while
# planning", nothing written.
gdal_create -q -of GTiff -outsize 16 16 -bands 2 -ot Float32 -burn 1 "$T/tiny.tif"
cat >"$T/huge.vrt" <<'VRT'
<VRTDataset rasterXSize="2000000" rasterYSize="20000">
  <SRS>EPSG:32611</SRS>
  <GeoTransform>500000, 1, 0, 5000000, 0, -1</GeoTransform>
  <VRTRasterBand dataType="Float32" band="1"><Description>elevation</Description><NoDataValue>-9999</NoDataValue>
    <SimpleSource><SourceFilename relativeToVRT="1">tiny.tif</SourceFilename><SourceBand>1</SourceBand>
      <SrcRect xOff="0" yOff="0" xSize="16" ySize="16"/><DstRect xOff="0" yOff="0" xSize="2000000" ySize="20000"/></SimpleSource>
  </VRTRasterBand>
  <VRTRasterBand dataType="Byte" band="2"><Description>fire</Description><NoDataValue>255</NoDataValue>
    <SimpleSource><SourceFilename relativeToVRT="1">tiny.tif</SourceFilename><SourceBand>2</SourceBand>
      <SrcRect xOff="0" yOff="0" xSize="16" ySize="16"/><DstRect xOff="0" yOff="0" xSize="2000000" ySize="20000"/></SimpleSource>
  </VRTRasterBand>
</VRTDataset>
VRT
ranks_of() { # the wildcpu processes of run NAME
    pgrep -f -- "--out $T/$1" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done
}
# term_last NAME PID: SIGTERM to the last rank of run NAME (launched as PID); sets $took (seconds
# until PID ended, "more than 20" when it had to be killed) and $status (its exit status)
term_last() {
    local t0
    t0=$(date +%s.%N)
    kill -TERM "$(ranks_of "$1" | tail -1)" 2>/dev/null
    for _ in $(seq 1 200); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    if kill -0 "$2" 2>/dev/null; then
        kill -KILL $(ranks_of "$1") "$2" 2>/dev/null
        took="more than 20"
    fi
    wait "$2"
    status=$?
}
for n in 1 2; do
    name=plan$n
    if [ $n -eq 1 ]; then
        "$WILDCPU" --tiles "$T/huge.vrt" --out "$T/$name" --steps 1 --no-predict >"$T/$name.log" 2>&1 &
    else
        mpirun_n $n "$WILDCPU" --tiles "$T/huge.vrt" --out "$T/$name" --steps 1 --no-predict >"$T/$name.log" 2>&1 &
    fi
    pid=$!
    sleep 3
    term_last $name $pid
    if [ $status -eq 75 ] && grep -q "stopped by a signal while planning the data" "$T/$name.log" &&
        ! grep -qi "error" "$T/$name.log" && [ -z "$(ls "$T/$name/checkpoints")" ]; then
        ok "SIGTERM to one of $n rank(s) while planning 2,000,000 x 20,000 px: exit 75 $took s after the signal"
    else
        notok "SIGTERM while planning a huge raster ($n ranks)" "status $status after $took s: $(grep -v -- '---' "$T/$name.log" | head -4)"
    fi
done
# After planning, rank 0 writes DIR/split.tif, on the raster's grid: for a 65536 x 65536 mosaic
# around the sample (planning skips what GDAL knows to be empty; the split raster has every
# pixel) that is 4.3 billion pixels, 15-40 s here, which was silent and deaf to a stop (the run
# stopped after its first step, the file written whole). It says how far it is every 5 s, as the
# map does, and a SIGTERM to any rank at its first line ends the run within seconds: exit 75,
# "while writing", no split.tif and no working file left, DIR/STOPPED at phase planning. The
# lines come every 0.5 s here (WILDCPU_PROGRESS_SECONDS), so that the first one comes while the
# file is written on a machine that writes it in less than 5 s.
$PY "$ROOT/tests/mosaic_around.py" "$SAMPLE" "$T/split.vrt" 1000 1000 65536 65536
for n in 1 2; do
    name=split$n
    if [ $n -eq 1 ]; then
        WILDCPU_PROGRESS_SECONDS=0.5 "$WILDCPU" --tiles "$T/split.vrt" --out "$T/$name" --steps 1 --batch 8 --no-predict >"$T/$name.log" 2>&1 &
    else
        WILDCPU_PROGRESS_SECONDS=0.5 mpirun_n $n "$WILDCPU" --tiles "$T/split.vrt" --out "$T/$name" --steps 1 --batch 8 --no-predict >"$T/$name.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 1 1200); do grep -q "split.tif: rows 0-[0-9]* of 65536 written" "$T/$name.log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    said=$(grep -m1 "split.tif: rows" "$T/$name.log" | sed "s|$T/||")
    term_last $name $pid
    if [ -n "$said" ] && [ $status -eq 75 ] && grep -q "stopped by a signal while writing $T/$name/split.tif, before any step" "$T/$name.log" &&
        ! grep -qi "error" "$T/$name.log" && [ -z "$(ls -A "$T/$name" | grep -v '^\(STOPPED\|checkpoints\|\.lock\)$')" ] &&
        [ -z "$(ls "$T/$name/checkpoints")" ] && grep -q "phase=planning;step=-1" "$T/$name/STOPPED"; then
        ok "$said; SIGTERM to one of $n rank(s) then: exit 75 $took s after it, nothing of split.tif left"
    else
        notok "SIGTERM while split.tif is written ($n ranks)" "said '${said:-nothing}', status $status after $took s: $(grep -v -- '---' "$T/$name.log" | tail -3 | cut -c1-300); left: $(ls -A "$T/$name" | tr '\n' ' ')"
    fi
done

# A limit of open files below what GDAL keeps open of a mosaic (GDAL_MAX_DATASET_POOL_SIZE, 100)
# beside the process's own (ulimit -n 96, a hard limit, as some batch and login nodes set): a
# tile's open failed with EMFILE and the run stopped at its first read, "read error ... GDAL gave
# no reason". GDAL now keeps fewer files open, which a warning names, and the run trains.
"$WILDCPU" synth --out "$T/many" --size 256 --tile 32 --seed 2 >"$T/many.log" 2>&1
(ulimit -n 96; exec timeout -s KILL 300 "$WILDCPU" --tiles "$T/many/tiles.vrt" --out "$T/fd" --steps 1 --batch 4 --micro-batch 2 --no-predict) >"$T/fd.log" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "warning: the limit of open files (ulimit -n) is 96, with [0-9]* open already: GDAL keeps [0-9]* of a mosaic's files open instead of 100" "$T/fd.log"; then
    ok "ulimit -n 96, a mosaic of $(ls "$T/many/tiles" | wc -l) files: trained, the smaller pool of open files warned about"
else
    notok "ulimit -n 96, a mosaic of many files" "status $status: $(grep -E 'error|warning' "$T/fd.log" | head -2 | cut -c1-300)"
fi
# ... a pool the user set stands, but one the limit cannot hold is said, naming the variable and
# what fits (before, the run stopped on "GDAL gave no reason" with no word of the limit); the
# size it gives reads the mosaic
(ulimit -n 96; export GDAL_MAX_DATASET_POOL_SIZE=100; exec timeout -s KILL 300 "$WILDCPU" --tiles "$T/many/tiles.vrt" --out "$T/fdset" --steps 1 --batch 4 --micro-batch 2 --no-predict) >"$T/fdset.log" 2>&1
fits=$(grep -Eo "warning: GDAL_MAX_DATASET_POOL_SIZE=100 lets GDAL keep 100 of a mosaic's files open, but the limit of open files \(ulimit -n\) is 96, .* set it to [0-9]+ or less" "$T/fdset.log" | grep -Eo "[0-9]+ or less" | grep -Eo "^[0-9]+")
(ulimit -n 96; export GDAL_MAX_DATASET_POOL_SIZE=${fits:-1}; exec timeout -s KILL 300 "$WILDCPU" --tiles "$T/many/tiles.vrt" --out "$T/fdfit" --steps 1 --batch 4 --micro-batch 2 --no-predict) >"$T/fdfit.log" 2>&1
status=$?
if [ -n "$fits" ] && [ $status -eq 0 ] && ! grep -q "warning: GDAL_MAX_DATASET_POOL_SIZE" "$T/fdfit.log"; then
    ok "ulimit -n 96 under GDAL_MAX_DATASET_POOL_SIZE=100: said, with the size that fits ($fits), which trains"
else
    notok "ulimit -n 96 under GDAL_MAX_DATASET_POOL_SIZE=100" "size '${fits}', status $status: $(grep -hE 'error|warning' "$T/fdset.log" "$T/fdfit.log" | head -3 | cut -c1-300)"
fi
# ... and one rank's own limit lower than rank 0's (a node's), which rank 0 cannot see: the
# error of the rank that fails names its limit and the pool (it said "GDAL gave no reason" alone,
# and a probe for holes that failed was warned about as a hole reading 0)
cat >"$T/lowlimit.sh" <<'SH'
#!/bin/bash
[ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ] && ulimit -n 64
exec "$@"
SH
chmod +x "$T/lowlimit.sh"
GDAL_MAX_DATASET_POOL_SIZE=300 timeout -s KILL 300 mpirun --oversubscribe --bind-to none -np 2 \
    -x GDAL_MAX_DATASET_POOL_SIZE "$T/lowlimit.sh" "$WILDCPU" --tiles "$T/many/tiles.vrt" \
    --out "$T/fdrank" --steps 1 --batch 4 --micro-batch 2 --patch 32 --no-predict >"$T/fdrank.log" 2>&1
status=$?
if [ $status -eq 1 ] &&
    grep -q "wildcpu\[rank 1\]: error: read error in .*many/tiles.vrt, .*: GDAL gave no reason .*; this process may open 64 files, [0-9]* open already, and GDAL_MAX_DATASET_POOL_SIZE=300 lets GDAL keep 300 more: out of files? (ulimit -n)" "$T/fdrank.log" &&
    ! grep -q "where the mosaic has no source" "$T/fdrank.log"; then
    ok "one rank's lower limit of open files: its read error names the limit and the pool"
else
    notok "one rank's lower limit of open files" "status $status: $(grep -E 'error|warning' "$T/fdrank.log" | head -3 | cut -c1-300)"
fi
# A tile cut short within its header (a copy that stopped early) fails to open; GDAL says why only
# the first time, and the band-by-band retry that finds the band said nothing: the error keeps
# the first reason, naming the tile
cp -r "$T/many" "$T/cut"
truncate -s 100 "$T/cut/tiles/r01_c01_f32.tif"
mpirun_n 2 "$WILDCPU" --tiles "$T/cut/tiles.vrt" --out "$T/cutrun" --steps 1 --batch 4 --micro-batch 2 --patch 32 --no-predict >"$T/cut.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "error: read error in .*cut/tiles.vrt, .*band [0-9]* ([a-z_]*): .*cut/tiles/r01_c01_f32.tif" "$T/cut.log" \
    && ok "a tile cut short in its header: the read error names the tile" \
    || notok "a tile cut short in its header" "status $status: $(grep -E 'error' "$T/cut.log" | head -2 | cut -c1-300)"
finish
