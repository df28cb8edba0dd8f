#!/usr/bin/env bash
# t_bad_input.sh: bad input gets a clear message naming the file/band/window and exit status 1
# (runtime) or 2 (usage); never a crash (status >= 128), a hang (killed by timeout) or a
# silently wrong run. SLURM_CPUS_PER_TASK, --threads' default, is checked as strictly as
# --threads, and its errors name it.
. "$(dirname "$0")/lib.sh"

# expect NAME STATUS PATTERN -- ARGS...: runs wildcpu, checks the status and that stderr
# matches PATTERN (an extended regex).
expect() {
    local name=$1 want=$2 pattern=$3
    shift 4
    timeout 120 "$WILDCPU" "$@" >"$T/out" 2>"$T/err"
    local status=$?
    if [ "$status" -eq "$want" ] && grep -Eq -- "$pattern" "$T/err"; then
        ok "$name (exit $status: $(grep -E -- "$pattern" "$T/err" | head -1 | cut -c1-150))"
    else
        notok "$name" "exit $status (want $want), stderr: $(head -c 400 "$T/err")"
    fi
}
train=(--out "$T/run" --steps 2 --batch 4 --micro-batch 2 --no-predict --fresh)
# runs that must train where the network is beside the point (a warning, a count, a path):
# the logistic model, ~3x cheaper than unet-lite; a later --model in ARGS would override it
ltrain=(--model logistic "${train[@]}")

# --- usage errors: exit 2
expect "no --tiles" 2 "--tiles PATH is required" -- "${train[@]}"
expect "unknown option" 2 "unknown option --bogus" -- --tiles "$SAMPLE" --bogus
expect "bad number" 2 "--batch needs a whole number" -- --tiles "$SAMPLE" --batch zero
expect "a hexadecimal number" 2 "--lr needs a number between .* got '0x10'" -- --tiles "$SAMPLE" --lr 0x10
# a number below the smallest normal double is its (subnormal) value: taken when in range, and
# refused when not by the range alone (it was refused as "not between 0 and 0.9")
expect "a number below any double but 0" 2 "--val-fraction: '1e-400' is smaller than any number but 0 a double holds \(4.9e-324\); give a number between 0 and 0.9" -- --tiles "$SAMPLE" --val-fraction 1e-400
expect "a subnormal number out of range" 2 "--val-fraction needs a number between 0 and 0.9, got '-1e-310'" -- --tiles "$SAMPLE" --val-fraction -1e-310
"$WILDCPU" --tiles "$SAMPLE" --val-fraction 1e-310 --model logistic --steps 1 --batch 4 --micro-batch 2 --out "$T/subnormal" --no-predict >"$T/subnormal.log" 2>&1 \
    && ok "a subnormal number in range (--val-fraction 1e-310) is taken" || notok "--val-fraction 1e-310" "$(grep -m1 val-fraction "$T/subnormal.log")"
expect "micro-batch larger than batch" 2 "--micro-batch \(4\) must not exceed --batch \(2\): give --micro-batch 2 or less" -- --tiles "$SAMPLE" --batch 2 --micro-batch 4
expect "the default micro-batch larger than --batch" 2 "--micro-batch \(4, the default\) must not exceed --batch \(2\)" -- --tiles "$SAMPLE" --batch 2
expect "--label-band 0 (bands are numbered from 1)" 2 "--label-band 0: bands are numbered from 1" -- --tiles "$SAMPLE" --label-band 0 "${train[@]}"
expect "evaluate --label-band 00" 2 "--label-band 00: bands are numbered from 1" -- evaluate --tiles "$SAMPLE" --checkpoint "$T/none" --label-band 00
# empty paths and extra words are usage errors for every command (they were runtime errors, or
# nothing, for some)
expect "--tiles= (empty)" 2 "--tiles: empty path" -- --tiles= "${train[@]}"
expect "synth --out '' (empty)" 2 "--out: empty path" -- synth --out ""
expect "export --out '' (empty)" 2 "--out: empty path" -- export --checkpoint "$T/none" --out ""
expect "predict --tiles= (empty)" 2 "--tiles: empty path" -- predict --tiles= --checkpoint "$T/none" --out "$T/m.tif"
expect "predict --checkpoint= (empty)" 2 "--checkpoint: empty path" -- predict --tiles "$SAMPLE" --checkpoint= --out "$T/m.tif"
expect "predict --png '' (empty)" 2 "--png: empty path" -- predict --tiles "$SAMPLE" --checkpoint "$T/none" --out "$T/m.tif" --png ""
expect "evaluate --labels= (empty)" 2 "--labels: empty path" -- evaluate --tiles "$SAMPLE" --checkpoint "$T/none" --labels=
expect "evaluate --map= (empty)" 2 "--map: empty path" -- evaluate --tiles "$SAMPLE" --checkpoint "$T/none" --map=
expect "train --model= (empty)" 2 "--model: empty path" -- --tiles "$SAMPLE" --model= "${train[@]}"
expect "export --checkpoint '' (empty)" 2 "--checkpoint: empty path" -- export --checkpoint "" --out "$T/x.safetensors"
expect "--version with a word after it" 2 "--version takes nothing after it \('extra'\)" -- --version extra
expect "unknown command" 2 "unknown command 'frobnicate'" -- frobnicate
expect "--patch not a multiple of the poolings' alignment" 2 "--patch 65 is not a multiple of 4, the alignment of unet-lite's poolings: use --patch 64 or 68" -- \
    --tiles "$SAMPLE" --patch 65 "${train[@]}"

# --- inputs that are not what they should be: exit 1, naming the file
expect "missing file" 1 "cannot open $T/nope.vrt" -- --tiles "$T/nope.vrt" "${train[@]}"
echo "not a raster" >"$T/text.tif"
expect "not a raster" 1 "cannot open $T/text.tif as a raster" -- --tiles "$T/text.tif" "${train[@]}"
# paths GDAL cannot take (2048 bytes with the temporary name and sidecar) or a file name the file
# system cannot (255 bytes, its temporary name included): refused before any work
long=$T/long
while [ ${#long} -lt 2100 ]; do long=$long/$(printf 'd%.0s' $(seq 1 200)); done
mkdir -p "$long"
expect "--out too long for GDAL, refused before training" 2 "--out .* is [0-9]+ bytes long: the run writes files below it up to [0-9]+ bytes longer .*give an --out of at most [0-9]+ bytes" -- \
    --tiles "$SAMPLE" --out "$long/run" --steps 2 --batch 4 --micro-batch 2
[ ! -e "$long/run" ] && ok "... and nothing was created" || notok "a refused --out was created"
# synth likewise, for the longest file it writes (a tile's temporary name): at 2035 bytes it
# wrote a region GDAL could not open ("Destination buffer too small"), status 0; the longest
# --out the message gives writes a region that opens
out=${long:0:2035}
expect "synth --out too long for GDAL, refused" 2 "--out .* is 2035 bytes long: synth writes files below it up to [0-9]+ bytes longer \(tiles/r01_c01_f32.tif's .*give an --out of at most [0-9]+ bytes" -- \
    synth --out "$out" --size 64 --tile 32
fits=$(grep -Eo "at most [0-9]+ bytes" "$T/err" | grep -Eo "[0-9]+")
[ ! -e "$out" ] && ok "... and nothing was created" || notok "a refused synth --out was created"
out=${long:0:${fits:-1}}
"$WILDCPU" synth --out "$out" --size 64 --tile 32 >"$T/fits.log" 2>&1 &&
    $PY -c 'import sys; from osgeo import gdal; gdal.UseExceptions(); gdal.Open(sys.argv[1]).ReadAsArray()' "$out/tiles.vrt" \
    && ok "synth --out of the ${fits:-?} bytes it gives: a region GDAL opens" \
    || notok "synth --out of the length it gives" "$(tail -2 "$T/fits.log")"
# an input in a directory GDAL cannot take (2048 bytes or more): GDAL opened the VRT, but formed
# its directory as "" and read its relative sources from the current directory, tiles of the
# same names there (another region), status 0; it now refuses it, naming the limit. A VRT whose
# relative sources alone pass the limit was refused as a source that does not exist, named "".
mkdir -p "$long/in" "$T/decoy"
cp -r "$ROOT/data/sample/." "$long/in/"
cp -r "$ROOT/data/sample/tiles" "$T/decoy/"
program=$WILDCPU
WILDCPU=$(realpath "$WILDCPU")
cd "$T/decoy"
expect "--tiles in a directory too long for GDAL (tiles of the same names in the current directory)" 1 \
    "\.\.\./tiles.vrt: its directory is [0-9]+ bytes long, and GDAL takes directories shorter than 2048 bytes: .*read a VRT's sources named relative to it from the current directory" -- \
    --tiles "$long/in/tiles.vrt" "${train[@]}"
cd "$OLDPWD"
WILDCPU=$program
short=${long:0:2030}
short=${short%/}
mkdir -p "$short"
cp -r "$ROOT/data/sample/." "$short/"
expect "a VRT whose relative sources make paths too long for GDAL" 1 \
    "its source tiles/r00_c00_i16.tif \(band 1 of .*\) is named relative to the VRT, and the path it makes is 20[4-9][0-9] bytes long: GDAL takes paths shorter than 2048 bytes" -- \
    --tiles "$short/tiles.vrt" "${train[@]}"
# ... but a source named by an absolute path, though marked relativeToVRT="1" (a VRT edited by
# hand), GDAL takes as it is, whatever the VRT's directory: it trains (it was refused as a path
# of the VRT's directory and that name, 2072 bytes here)
sed "s#<SourceFilename relativeToVRT=\"1\">#&$ROOT/data/sample/#" "$ROOT/data/sample/tiles.vrt" >"$short/absolute.vrt"
"$WILDCPU" --tiles "$short/absolute.vrt" "${ltrain[@]}" >"$T/absolute.log" 2>&1 \
    && ok "a VRT in a long directory whose sources are absolute paths marked relativeToVRT=\"1\": it trains" \
    || notok "absolute sources marked relativeToVRT=\"1\" in a long directory" "$(grep -m1 error "$T/absolute.log" | cut -c1-300)"

# a pipe with no writer (GDAL, or reading it, would wait for ever), a device (read without
# end), a spec file far beyond the spec's limit (not read into memory): refused at once
mkfifo "$T/fifo"
expect "--model a pipe" 2 "--model $T/fifo: it is a pipe \(FIFO\), not a regular file" -- --tiles "$SAMPLE" --model "$T/fifo" "${train[@]}"
expect "--model /dev/zero" 2 "--model /dev/zero: it is a device, not a regular file" -- --tiles "$SAMPLE" --model /dev/zero "${train[@]}"
truncate -s 3G "$T/huge.spec"
expect "--model of 3 GiB" 2 "huge.spec: it is 3221225472 bytes, more than the 1048576" -- --tiles "$SAMPLE" --model "$T/huge.spec" "${train[@]}"
# a NUL byte would end the spec there as a C string: the layers after it silently gone
printf 'input x\nconv h x out=1 k=1\n\0conv zz h out=5 k=1\n' >"$T/nul.spec"
expect "--model with a NUL byte" 2 "nul.spec: it holds a NUL byte at offset 27: it is not a text file" -- --tiles "$SAMPLE" --model "$T/nul.spec" "${train[@]}"
rm -f "$T/huge.spec"
expect "--tiles a pipe" 1 "the raster $T/fifo is a pipe \\(FIFO\\), not a file GDAL can read" -- --tiles "$T/fifo" "${train[@]}"
expect "--labels a pipe" 1 "--labels $T/fifo is a pipe" -- --tiles "$SAMPLE" --labels "$T/fifo" "${train[@]}"
expect "--oracle a pipe" 1 "the raster $T/fifo is a pipe \\(FIFO\\), not a file GDAL can read" -- --tiles "$SAMPLE" --oracle "$T/fifo" "${train[@]}"
# ... also as a tile of a mosaic (GDAL opened it while planning: the run hung, deaf to SIGTERM,
# blocked in open()), and standard input, given or as a tile
$PY - "$SAMPLE" "$T/fifo" "$T/pipetile.vrt" "$T/stdintile.vrt" <<'PY'
import os, re, sys
sample, fifo = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(sample))
text = re.sub(r'<SourceFilename relativeToVRT="1">([^<]*)</SourceFilename>',
              lambda m: '<SourceFilename relativeToVRT="0">%s/%s</SourceFilename>' % (here, m.group(1)),
              open(sample).read())
tile = re.search(r'<SourceFilename relativeToVRT="0">([^<]*)</SourceFilename>', text).group(1)
for out, src in ((sys.argv[3], fifo), (sys.argv[4], "/vsistdin/")):
    open(out, "w").write(text.replace(tile, src))  # one tile, in every band
PY
expect "a pipe as a tile of the mosaic: refused before planning, naming it" 1 "pipetile.vrt: its source $T/fifo is a pipe \\(FIFO\\), not a file GDAL can read" -- \
    --tiles "$T/pipetile.vrt" "${train[@]}"
expect "... predict too" 1 "pipetile.vrt: its source $T/fifo is a pipe \\(FIFO\\)" -- \
    predict --tiles "$T/pipetile.vrt" --checkpoint "$T/none" --out "$T/pipe_map.tif"
expect "standard input as a tile of the mosaic" 1 "stdintile.vrt: its source /vsistdin/ is standard input" -- \
    --tiles "$T/stdintile.vrt" "${train[@]}"
expect "standard input as --tiles" 1 "the raster /vsistdin/ is standard input, not a file GDAL can read" -- \
    --tiles /vsistdin/ "${train[@]}"
# ... and behind every other input GDAL reads: the oracle (read at the first validation) and
# the labels (their header read while planning)
expect "a pipe as a tile of the --oracle mosaic" 1 "pipetile.vrt: its source $T/fifo is a pipe \\(FIFO\\)" -- \
    --tiles "$SAMPLE" --oracle "$T/pipetile.vrt" "${train[@]}"
# ... before the labels are warped onto the tiles' grid (minutes on a large raster)
gdal_translate -q -b 13 -outsize 50% 50% "$SAMPLE" "$T/coarse_fire.tif"
expect "a refused --oracle stops the run before --labels are warped" 1 "pipetile.vrt: its source $T/fifo is a pipe" -- \
    --tiles "$SAMPLE" --labels "$T/coarse_fire.tif" --oracle "$T/pipetile.vrt" "${train[@]}"
if ! grep -q "labels: warped" "$T/out" "$T/err" &&
    timeout 120 "$WILDCPU" --tiles "$SAMPLE" --labels "$T/coarse_fire.tif" "${ltrain[@]}" 2>&1 | grep -q "labels: warped"; then
    ok "... no label warp before the refusal (a run with those labels warps them)"
else
    notok "the oracle refused before the labels' warp" "$(grep labels "$T/err")"
fi
expect "standard input as --oracle" 1 "the raster /vsistdin/ is standard input" -- \
    --tiles "$SAMPLE" --oracle /vsistdin/ "${train[@]}"
expect "standard input as --labels" 1 "--labels /vsistdin/ is standard input, not a file GDAL can read" -- \
    --tiles "$SAMPLE" --labels /vsistdin/ "${train[@]}"

# more threads than CPUs: warned, the run goes on; a closed stdout does not kill a run
cpus=$($PY -c 'import os; print(len(os.sched_getaffinity(0)))') # nproc heeds OMP_NUM_THREADS
expect "--threads beyond the CPUs: a warning" 0 "warning: --threads $((cpus + 1)), but this process may run on $cpus CPU" -- \
    --tiles "$SAMPLE" --threads $((cpus + 1)) "${ltrain[@]}"
# ... once, though training and its end-of-run map each check the count
timeout 300 "$WILDCPU" --tiles "$SAMPLE" --threads $((cpus + 1)) --model logistic --out "$T/run" --steps 2 --batch 4 \
    --micro-batch 2 --fresh >/dev/null 2>"$T/err"
s=$? n=$(grep -c "but this process may run on" "$T/err")
[ "$s" -eq 0 ] && [ "$n" -eq 1 ] && ok "... said once in a run that also maps" \
    || notok "the threads warning in a run that maps" "status $s, said $n times"
timeout 120 "$WILDCPU" --tiles "$SAMPLE" "${ltrain[@]}" --steps 6 --log-every 1 2>"$T/pipe.err" | head -1 >/dev/null
s=${PIPESTATUS[0]}
[ "$s" -eq 0 ] && [ -s "$T/run/report.json" ] && ok "stdout closed early (| head -1): the run finishes, exit 0, its report written" \
    || notok "a closed stdout" "status $s: $(tail -2 "$T/pipe.err")"

# a feature band nodata everywhere: training names it after "nothing to train on"; predict
# refuses such a raster, naming the band, and writes no map
# (the rasters of the cases below made from a Float32 copy of the sample, in one python start:
# each its own copy of f32.tif, changed as its case says there)
$PY - "$SAMPLE" "$T" <<'PY' || notok "rasters made from a Float32 copy of the sample"
import os, re, sys
import numpy as np
from osgeo import gdal
sample, t = sys.argv[1], sys.argv[2]
f32 = t + "/f32.tif"
gdal.Translate(f32, sample, outputType=gdal.GDT_Float32)
# a feature band nodata everywhere
d = gdal.Translate(t + "/empty5.tif", sample, outputType=gdal.GDT_Float32)
b = d.GetRasterBand(5)
b.WriteArray(np.full((d.RasterYSize, d.RasterXSize), b.GetNoDataValue(), np.float32))
d = None
# a VRT band derived by a pixel function that cannot run
gdal.Translate(t + "/derived.vrt", f32, format="VRT")
s = open(t + "/derived.vrt").read()
tag = re.search(r'<VRTRasterBand[^>]*band="2"[^>]*>', s).group(0)
derived = tag[:-1] + ' subClass="VRTDerivedRasterBand"><PixelFunctionType>diff</PixelFunctionType>'
open(t + "/derived.vrt", "w").write(s.replace(tag, derived, 1))
# an undeclared nodata in slope
d = gdal.Translate(t + "/huge.tif", f32)
b = d.GetRasterBand(2)
a = b.ReadAsArray()
a[200, 50:54] = -3.4e38
a[300, 60:63] = 9.96921e36
b.WriteArray(a)
d = None
# slope nodata everywhere
d = gdal.Translate(t + "/nd_slope.tif", f32)
b = d.GetRasterBand(2)
b.SetNoDataValue(-9999)
b.Fill(-9999)
d = None
# -3.4e38 in ndvi
d = gdal.Translate(t + "/huge_ndvi.tif", f32)
b = d.GetRasterBand(5)
a = b.ReadAsArray()
a[100, 10:15] = -3.4028235e38
b.WriteArray(a)
d = None
# -3.4e38 in ndvi everywhere
d = gdal.Translate(t + "/all_ndvi.tif", f32)
b = d.GetRasterBand(5)
a = b.ReadAsArray()
a[:] = -3.4028235e38
b.WriteArray(a)
d = None
# a constant band; labels nodata everywhere
d = gdal.Translate(t + "/const.tif", f32)
d.GetRasterBand(6).WriteArray(np.full((d.RasterYSize, d.RasterXSize), 0.5, np.float32))
d = None
# ... and a 128 x 128 window of it and of f32.tif, to be mapped
os.makedirs(t + "/crop")
for name in ("const", "f32"):
    gdal.Translate(t + "/crop/%s.tif" % name, t + "/%s.tif" % name, srcWin=[128, 128, 128, 128])
d = gdal.Translate(t + "/nolab.tif", f32)
b = d.GetRasterBand(13)
b.WriteArray(np.full((d.RasterYSize, d.RasterXSize), b.GetNoDataValue(), np.float32))
d = None
# a constant wind_u
d = gdal.Translate(t + "/const_wind.tif", f32)
d.GetRasterBand(9).WriteArray(np.full((d.RasterYSize, d.RasterXSize), 3.0, np.float32))
d = None
# a Byte band whose nodata value (-1) its type cannot hold, from an in-memory copy: scaling
# computes statistics, which GDAL would save into the sample VRT
src = gdal.Translate("/vsimem/sample.tif", sample)
d = gdal.Translate(t + "/bytend.tif", src, outputType=gdal.GDT_Byte, scaleParams=[[]])
d.GetRasterBand(2).SetNoDataValue(-1)
d = None
src = None
# mosaics of two halves: the east one in another CRS, or of coarser pixels
gdal.Translate(t + "/west.tif", sample, srcWin=[0, 0, 256, 512], outputType=gdal.GDT_Float32)
gdal.Translate(t + "/east12.tif", sample, srcWin=[256, 0, 256, 512], outputType=gdal.GDT_Float32,
               outputSRS="EPSG:32612")
gdal.Translate(t + "/east60.tif", sample, srcWin=[256, 0, 256, 512], outputType=gdal.GDT_Float32,
               xRes=60, yRes=60)
src = gdal.Open(sample)
for name, east, kw in (("mixed", "east12", {"allowProjectionDifference": True}),
                       ("coarse", "east60", {"resolution": "highest"})):
    v = gdal.BuildVRT(t + "/%s.vrt" % name, [t + "/west.tif", t + "/%s.tif" % east], **kw)
    for i in range(src.RasterCount):
        v.GetRasterBand(i + 1).SetDescription(src.GetRasterBand(i + 1).GetDescription())
    v = None
src = None
# a mosaic of 2,050 files (names of one tile in EPSG:32612) under a mosaic in EPSG:32611
def manycrs(d):
    os.makedirs(d + "/t")
    ds = gdal.GetDriverByName("GTiff").Create(d + "/tile.tif", 8, 8, 3, gdal.GDT_Float32)
    ds.SetGeoTransform([500000, 30, 0, 4000000, 0, -30])
    ds.SetProjection("EPSG:32612")
    for b, name in enumerate(["a", "b", "fire"]):
        ds.GetRasterBand(b + 1).SetDescription(name)
        ds.GetRasterBand(b + 1).Fill(b % 2)
    ds = None
    bands = []
    for b, name in enumerate(["a", "b", "fire"]):
        srcs = "".join('<SimpleSource><SourceFilename relativeToVRT="1">t/%d.tif</SourceFilename>'
                       '<SourceBand>%d</SourceBand><SrcRect xOff="0" yOff="0" xSize="8" ySize="8"/>'
                       '<DstRect xOff="0" yOff="0" xSize="8" ySize="8"/></SimpleSource>' % (i, b + 1)
                       for i in range(2050))
        bands.append('<VRTRasterBand dataType="Float32" band="%d"><Description>%s</Description>%s'
                     '</VRTRasterBand>' % (b + 1, name, srcs))
    for i in range(2050):
        os.symlink("../tile.tif", "%s/t/%d.tif" % (d, i))
    open(d + "/many.vrt", "w").write(
        '<VRTDataset rasterXSize="8" rasterYSize="8"><SRS>EPSG:32611</SRS>'
        '<GeoTransform>500000, 30, 0, 4000000, 0, -30</GeoTransform>%s</VRTDataset>' % "".join(bands))
    # the same with its bands a and b named the other way round: each source checked reads a band
    # described otherwise, twice
    swapped = "".join(bands).replace("<Description>a<", "<Description>x<") \
        .replace("<Description>b<", "<Description>a<").replace("<Description>x<", "<Description>b<")
    open(d + "/swapped.vrt", "w").write(
        '<VRTDataset rasterXSize="8" rasterYSize="8"><SRS>EPSG:32612</SRS>'
        '<GeoTransform>500000, 30, 0, 4000000, 0, -30</GeoTransform>%s</VRTDataset>' % swapped)


manycrs(t + "/manycrs")
# NaN and Inf in ndvi
gdal.Translate(t + "/nan.tif", sample, outputType=gdal.GDT_Float32)
ds = gdal.Open(t + "/nan.tif", gdal.GA_Update)
b = ds.GetRasterBand(5)  # ndvi
a = b.ReadAsArray()
a[100:140, 100:140] = float("nan")
a[300:310, 0:512] = float("inf")
b.WriteArray(a)
ds = None
# a container of rasters (netCDF variables), where this GDAL can write one (else no file: the
# case says it is skipped)
try:
    rg = gdal.GetDriverByName("netCDF").CreateMultiDimensional(t + "/multi.nc").GetRootGroup()
    dims = [rg.CreateDimension(n, None, None, 16) for n in ("y", "x")]
    for name in ("elevation", "slope"):
        rg.CreateMDArray(name, dims, gdal.ExtendedDataType.Create(gdal.GDT_Float32)).Write(
            np.ones((16, 16), np.float32))
    rg = dims = None
except Exception as e:
    print("multi.nc:", e, file=sys.stderr)
PY
expect "a feature band nodata everywhere: training names it" 1 "empty5.tif, band 5 \(ndvi\) is nodata in 100.0% of a 256x256 sample" -- \
    --tiles "$T/empty5.tif" "${train[@]}"
"$WILDCPU" --tiles "$T/f32.tif" --out "$T/f32run" --model logistic --steps 2 --batch 4 --micro-batch 2 \
    --no-predict >/dev/null 2>&1 || notok "training on the Float32 copy"
expect "standard input as evaluate's --labels" 1 "--labels /vsistdin/ is standard input" -- \
    evaluate --tiles "$T/f32.tif" --checkpoint "$T/f32run" --labels /vsistdin/ --out "$T/m.json"
# ... and predict on it is refused, naming the band, before anything is written: a map there
#     stays (until 2026-12-07 a map nodata everywhere replaced it, status 0)
"$WILDCPU" predict --tiles "$T/f32.tif" --checkpoint "$T/f32run" --out "$T/empty5_map.tif" >"$T/empty5_0.log" 2>&1 ||
    notok "an earlier map" "$(tail -2 "$T/empty5_0.log")"
before=$(cksum <"$T/empty5_map.tif")
expect "... and predict on it names the band and writes no map" 1 "error: predict: no pixel of .*empty5.tif has a prediction: every pixel has a nodata input \(the bands are named above\): nothing to map; no map written" -- \
    predict --tiles "$T/empty5.tif" --checkpoint "$T/f32run" --out "$T/empty5_map.tif"
grep -q "warning: .*empty5.tif, band 5 (ndvi) is nodata .*: no pixel has every input" "$T/err" &&
    [ "$(cksum <"$T/empty5_map.tif")" = "$before" ] \
    && ok "... the band named before the error; the earlier map untouched" \
    || notok "predict on a raster with a band nodata everywhere" "$(head -c 600 "$T/err")"
# a VRT band derived by a pixel function that cannot run (diff needs two sources): GDAL fails
# the read without a word; the error names the band, says GDAL gave no reason, once
# (derived.vrt: made with f32.tif above, in one python start)
expect "a derived band that fails without a reason: the band named" 1 "^wildcpu: error: read error in .*derived.vrt, window x=0 y=0 [0-9]+x[0-9]+, band 2 \(slope\): .+" -- \
    predict --tiles "$T/derived.vrt" --checkpoint "$T/f32run" --out "$T/derived_map.tif"
[ "$(grep -c 'error' "$T/err")" -eq 1 ] && ok "... in one line" || notok "the derived band's error in one line" "$(cat "$T/err")"

# a few values no measurement has (an undeclared nodata: -3.4e38, a netCDF fill value) in a
# feature: taken as data, they make its normalization and flatten the rest of the band: warned
# (huge.tif: made with f32.tif above)
expect "a feature with values of 1e30 or more: warned, naming the band and the count" 0 "warning: .*huge.tif, band 2 \(slope\): 7 valid pixels of the kept patches \(training and validation\) hold values of magnitude 1e\+30 or more" -- \
    --tiles "$T/huge.tif" "${ltrain[@]}" --val-fraction 0
# ... and where a map or evaluate meets them, counted once per pixel over the ranks
expect "predict: the same values warned, naming the band and the count" 0 "warning: predict: .*huge.tif, band 2 \(slope\): values of magnitude 1e\+30 or more in 7 pixels of the raster" -- \
    predict --tiles "$T/huge.tif" --checkpoint "$T/f32run" --out "$T/huge_map.tif"
mpirun_n 2 "$WILDCPU" evaluate --tiles "$T/huge.tif" --checkpoint "$T/f32run" --out "$T/huge_m.json" >"$T/huge_eval.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "warning: evaluate: .*huge.tif, band 2 (slope): values of magnitude 1e+30 or more in 7 pixels of the raster" "$T/huge_eval.log")" -eq 1 ] \
    && ok "evaluate on 2 ranks: the same values warned once, counted over both ranks" \
    || notok "evaluate's warning of huge values" "status $s: $(grep -m2 -i 'warn\|error' "$T/huge_eval.log")"
# A raster one of whose features is nodata everywhere: no pixel has a prediction. evaluate says
# that, after the warning naming the band; it used to blame the labels ("the labels are nodata
# wherever the raster has data, or do not overlap it")
# (nd_slope.tif: made with f32.tif above)
"$WILDCPU" evaluate --tiles "$T/nd_slope.tif" --checkpoint "$T/f32run" --out "$T/nd_slope.json" >"$T/nd_slope.log" 2>&1
s=$?
[ $s -eq 1 ] && [ ! -e "$T/nd_slope.json" ] &&
    grep -q "error: evaluate: no pixel of .*nd_slope.tif has a prediction: every pixel has a nodata input (the bands are named above): nothing to score; no metrics written" "$T/nd_slope.log" &&
    grep -n 'band 2 (slope)' "$T/nd_slope.log" | head -1 | cut -d: -f1 | { read -r w; e=$(grep -n 'has a prediction' "$T/nd_slope.log" | cut -d: -f1); [ -n "$w" ] && [ "$w" -lt "$e" ]; } \
    && ok "evaluate on a raster whose slope is nodata everywhere: no prediction, said so after the band (status 1, no metrics)" \
    || notok "evaluate on a raster with a feature nodata everywhere" "status $s: $(grep -i 'warn\|error' "$T/nd_slope.log" | cut -c1-250)"
# -3.4e38 in a band of standard deviation below 1 overflows once normalized: those pixels have no
# prediction; evaluate says so (they were left out of its scores without a word) and the band's
# warning counts them too
# (huge_ndvi.tif: made with f32.tif above)
"$WILDCPU" evaluate --tiles "$T/huge_ndvi.tif" --checkpoint "$T/f32run" --out "$T/huge_ndvi.json" >"$T/huge_ndvi.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "warning: evaluate: .*huge_ndvi.tif: 5 pixels have a feature value beyond float's range once normalized (far outside the training range): left out of the scores" "$T/huge_ndvi.log" &&
    grep -q "warning: evaluate: .*huge_ndvi.tif, band 5 (ndvi): values of magnitude 1e+30 or more in 5 pixels of the raster" "$T/huge_ndvi.log" \
    && ok "evaluate: pixels beyond float's range once normalized are said, and counted for their band" \
    || notok "evaluate's pixels beyond float's range" "status $s: $(grep -m3 -i 'warn\|error' "$T/huge_ndvi.log")"
# ... and where every pixel is so (ndvi -3.4e38 everywhere, undeclared), the error that nothing
#     has a prediction says why: it said "every pixel has a nodata input (the bands are named
#     above)", no band being named, the values beyond float's range said only after it
# (all_ndvi.tif: made with f32.tif above)
"$WILDCPU" evaluate --tiles "$T/all_ndvi.tif" --checkpoint "$T/f32run" >"$T/all_ndvi.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "error: evaluate: no pixel of .*all_ndvi.tif has a prediction: every pixel has a nodata input or a feature value beyond float's range once normalized ([0-9]* pixels: an undeclared nodata? see the warnings): nothing to score$" "$T/all_ndvi.log" &&
    ! grep -q "bands are named above" "$T/all_ndvi.log" \
    && ok "evaluate where every pixel is beyond float's range once normalized: the error says so, not nodata bands named nowhere" \
    || notok "evaluate where every pixel is beyond float's range" "status $s: $(grep -m3 -i 'error' "$T/all_ndvi.log" | cut -c1-300)"

# a constant feature band: warned once (by rank 0, not by every rank); a raster whose labels are
# all nodata: no "constant" warning for bands that merely have no training pixels, only the error
# (const.tif and nolab.tif: made with f32.tif above)
mpirun_n 2 "$WILDCPU" --tiles "$T/const.tif" --out "$T/const" --model logistic --steps 2 --batch 4 \
    --micro-batch 2 --no-predict >"$T/const.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "const.tif, band 6 (fuel_moisture) is constant over the training pixels" "$T/const.log")" -eq 1 ] \
    && ok "a constant band on 2 ranks: warned once" \
    || notok "a constant band on 2 ranks" "status $s: $(grep -c 'is constant' "$T/const.log") warnings"
# its weights never learned (their gradient was 0; unet-lite's start random, the logistic
# model's at 0, which would hide the bug): every map feeds the band as in training, so the map
# of a raster where it varies is the map where it is constant, bit for bit, and says so (no
# validation in the training, which is not looked at; the maps of a 128 x 128 window of each)
"$WILDCPU" --tiles "$T/const.tif" --out "$T/const_unet" --steps 2 --batch 4 --micro-batch 2 --val-fraction 0 \
    --no-predict >"$T/const_unet.log" 2>&1 || notok "training unet-lite on a constant band" "$(tail -2 "$T/const_unet.log")"
"$WILDCPU" predict --tiles "$T/crop/const.tif" --checkpoint "$T/const_unet" --out "$T/const_map.tif" \
    >"$T/const_map.log" 2>&1
s1=$?
"$WILDCPU" predict --tiles "$T/crop/f32.tif" --checkpoint "$T/const_unet" --out "$T/varying_map.tif" \
    >"$T/varying_map.log" 2>&1
s2=$?
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && $PY -c 'import sys, numpy as np; from osgeo import gdal
a, b = (gdal.Open(f).ReadAsArray() for f in sys.argv[1:3])
sys.exit(not np.array_equal(a.view(np.uint32), b.view(np.uint32)))' "$T/const_map.tif" "$T/varying_map.tif" \
    && ! grep -q "learned nothing" "$T/const_map.log" \
    && grep -q "warning: predict: .*f32.tif, band 6 (fuel_moisture) was 0.5 on every training pixel of the model, so it learned nothing from this band and takes it as 0.5 everywhere; [0-9]* of the [0-9]* pixels mapped hold other values" "$T/varying_map.log" \
    && ok "a band constant in training: the map where it varies is the map where it is constant, and says so" \
    || notok "a band constant in training, mapped where it varies" "status $s1 $s2: $(grep -m2 'warn\|error' "$T/varying_map.log")"
"$WILDCPU" export --checkpoint "$T/const" --out "$T/const.safetensors" >"$T/const_export.log" 2>&1 \
    && [ "$($PY -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
m = json.loads(json.loads(f.read(n))["__metadata__"]["wildcpu"])
print(",".join(c["name"] for c in m["input_channels"] if c.get("constant")))' "$T/const.safetensors")" = fuel_moisture ] \
    && ok "export marks the band constant in training, and no other" \
    || notok "export of a model with a band constant in training" "$(tail -2 "$T/const_export.log")"
# a vector band's component constant, with --rotate: turned samples feed it its partner's
# values, so it is not fed as 0 (its weights do learn), and the warning says so
# (const_wind.tif: made with f32.tif above)
"$WILDCPU" --tiles "$T/const_wind.tif" --out "$T/const_wind" --model logistic --rotate 45 --steps 2 --batch 4 --micro-batch 2 \
    --no-predict >"$T/const_wind.log" 2>&1 &&
    "$WILDCPU" export --checkpoint "$T/const_wind" --out "$T/const_wind.safetensors" >>"$T/const_wind.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "band 9 (wind_u) is constant over the training pixels (3): its own values carry no information (mirrored and turned samples feed it its vector partner's)" "$T/const_wind.log" \
    && [ -z "$($PY -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
m = json.loads(json.loads(f.read(n))["__metadata__"]["wildcpu"])
print(",".join(c["name"] for c in m["input_channels"] if c.get("constant")))' "$T/const_wind.safetensors")" ] \
    && ok "a constant wind_u under --rotate: not fed as 0 (turned samples give it wind_v's values), said so" \
    || notok "a constant vector component under --rotate" "status $s: $(grep -m1 'wind_u' "$T/const_wind.log")"
"$WILDCPU" --tiles "$T/nolab.tif" --out "$T/nolab" --model logistic --steps 2 --batch 4 --micro-batch 2 \
    --no-predict >"$T/nolab.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "band 13 (fire) is nodata in 100.0%" "$T/nolab.log" && ! grep -q "is constant" "$T/nolab.log" \
    && ok "labels nodata everywhere: the error alone, no band called constant" \
    || notok "labels nodata everywhere" "status $s: $(grep -m3 'constant\|error' "$T/nolab.log")"

# ranks started with other options (an MPMD launch): they took other steps and hung in other
# collectives (or, for --batch, trained with whose?); refused at once, naming the rank
mp=(--tiles "$T/f32.tif" --out "$T/mpmd" --model logistic --batch 4 --micro-batch 2 --no-predict)
timeout 120 mpirun --oversubscribe --bind-to none -np 1 "$WILDCPU" "${mp[@]}" --steps 2 : \
    -np 1 "$WILDCPU" "${mp[@]}" --steps 4 >"$T/mpmd.log" 2>&1
s=$?
[ $s -eq 2 ] && grep -q "rank 1 was started with another command line than rank 0" "$T/mpmd.log" \
    && ok "ranks started with other options: status 2 at once, naming the rank" \
    || notok "ranks with other options" "status $s (124: it hung): $(grep -m2 error "$T/mpmd.log")"
# a job step of 3 tasks whose MPI world is 1: named as singletons; a SLURM_NTASKS that is no
# count is not Slurm's (ignored)
SLURM_NTASKS=3 SLURM_STEP_ID=0 timeout 120 "$WILDCPU" "${mp[@]}" --steps 2 >"$T/nt.log" 2>&1
s=$?
SLURM_NTASKS=abc SLURM_STEP_ID=0 timeout 120 "$WILDCPU" "${mp[@]}" --steps 2 --fresh >"$T/nt2.log" 2>&1
s2=$?
[ $s -eq 1 ] && grep -q "Slurm started 3 tasks but MPI sees a world of 1 process: the launcher started independent singletons" "$T/nt.log" \
    && [ $s2 -eq 0 ] && ok "SLURM_NTASKS against the MPI world: 3 against 1 refused, 'abc' ignored" \
    || notok "SLURM_NTASKS" "status $s/$s2: $(grep -m1 error "$T/nt.log" "$T/nt2.log")"
# an --oracle one rank cannot open (a relative path, each rank in its own directory): all stop
mkdir -p "$T/wdA" "$T/wdB" && cp "$(dirname "$SAMPLE")/oracle_risk.tif" "$T/wdA/"
mo=(--tiles "$SAMPLE" --out "$T/mo" --oracle oracle_risk.tif --model logistic --steps 2 --batch 4 \
    --micro-batch 2 --no-predict)
timeout 120 mpirun --oversubscribe --bind-to none -np 1 --wdir "$T/wdB" "$WILDCPU" "${mo[@]}" : \
    -np 1 --wdir "$T/wdA" "$WILDCPU" "${mo[@]}" >"$T/mo.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "rank 1 reads oracle_risk.tif, which rank 0 cannot read: every rank must read the same inputs" "$T/mo.log" \
    && ok "an --oracle one rank cannot open: status 1 on every rank, no hang, the ranks' difference named" \
    || notok "an --oracle one rank cannot open" "status $s (124: it hung): $(grep -m2 error "$T/mo.log")"

# an output under a file: said to be no directory (it said "directory ... does not exist", and
# the user looked for a missing directory that was there as a file)
echo "a file" >"$T/afile"
expect "predict --out under a file: not a directory" 1 "cannot write the risk map to .*afile/risk.tif: .*afile: not a directory" -- \
    predict --tiles "$T/f32.tif" --checkpoint "$T/f32run" --out "$T/afile/risk.tif"
expect "export --out two levels under a file: not a directory" 1 "cannot write the exported model to .*afile/x/m.safetensors: .*afile/x: not a directory" -- \
    export --checkpoint "$T/f32run" --out "$T/afile/x/m.safetensors"

# a checkpoint one rank sees otherwise than rank 0 (a relative path, each rank in its own
# directory): an older copy, or none; named at once with the rank and both steps, not tried 5
# times and blamed on a training run writing into it
"$WILDCPU" --tiles "$T/f32.tif" --out "$T/ckr" --model logistic --steps 2 --batch 4 --micro-batch 2 \
    --ckpt-every 1 --keep 5 --no-predict >"$T/ckr.log" 2>&1
cp "$T/ckr/checkpoints/ckpt-00000002.wcp" "$T/wdA/ck.wcp"
cp "$T/ckr/checkpoints/ckpt-00000001.wcp" "$T/wdB/ck.wcp"
mc=(predict --tiles "$T/f32.tif" --checkpoint ck.wcp --out "$T/mc.tif")
timeout 120 mpirun --oversubscribe --bind-to none -np 1 --wdir "$T/wdA" "$WILDCPU" "${mc[@]}" : \
    -np 1 --wdir "$T/wdB" "$WILDCPU" "${mc[@]}" >"$T/mc.log" 2>&1
s=$?
rm "$T/wdB/ck.wcp"
timeout 120 mpirun --oversubscribe --bind-to none -np 1 --wdir "$T/wdA" "$WILDCPU" "${mc[@]}" : \
    -np 1 --wdir "$T/wdB" "$WILDCPU" "${mc[@]}" >"$T/mc2.log" 2>&1
s2=$?
[ $s -eq 1 ] && [ $s2 -eq 1 ] && [ ! -e "$T/mc.tif" ] &&
    grep -q "rank 1 reads another ck.wcp than rank 0 (step 1, CRC-32 [0-9a-f]* here; step 2, [0-9a-f]* there): every rank must read the same checkpoint" "$T/mc.log" &&
    grep -q "rank 1 cannot read ck.wcp, which rank 0 reads (step 2; here: checkpoint ck.wcp: No such file or directory): every rank must read the same checkpoint" "$T/mc2.log" &&
    ! grep -q "changed .* times" "$T/mc.log" "$T/mc2.log" &&
    ok "a checkpoint one rank sees older, or not at all: status 1 at once, the rank and steps named" ||
    notok "a checkpoint one rank sees otherwise" "status $s/$s2 (124: it hung): $(grep -h -m2 error "$T/mc.log" "$T/mc2.log")"

# an output that is a symbolic link: the rename would replace the link by a file and leave its
# target stale (a "current.tif" link); refused, naming the target, the link untouched (a loop too)
echo "the previous map" >"$T/today.tif"
ln -s today.tif "$T/current.tif"
ln -s loop2 "$T/loop1" && ln -s loop1 "$T/loop2"
expect "predict --out a symbolic link: refused, naming its target" 2 "refusing to write the risk map to .*current.tif: it is a symbolic link \(to today.tif\)" -- \
    predict --tiles "$T/f32.tif" --checkpoint "$T/f32run" --out "$T/current.tif"
[ -L "$T/current.tif" ] && [ "$(cat "$T/today.tif")" = "the previous map" ] || notok "the link and its target untouched"
expect "export --out a symbolic link loop: refused" 2 "refusing to write the exported model to .*loop1: it is a symbolic link \(to loop2\)" -- \
    export --checkpoint "$T/f32run" --out "$T/loop1"
# ... and in a run directory, found before training (not after it, at the map or a report):
# the map and the report each, the link untouched; a checkpoints directory that is a link (to
# a scratch file system) is fine, and --fresh moves the links aside with the rest
mkdir -p "$T/linkrun" "$T/scratch"
ln -s ../today.tif "$T/linkrun/risk.tif"
expect "DIR/risk.tif a symbolic link: refused before training" 2 "refusing to write the risk map to .*linkrun/risk.tif: it is a symbolic link \(to ../today.tif\)" -- \
    --tiles "$T/f32.tif" --out "$T/linkrun" --model logistic --steps 2 --batch 4 --micro-batch 2
[ ! -e "$T/linkrun/checkpoints" ] && [ "$(cat "$T/today.tif")" = "the previous map" ] \
    && ok "... before any step: no checkpoint, the link's target untouched" \
    || notok "DIR/risk.tif a link" "$(ls "$T/linkrun")"
"$WILDCPU" --tiles "$T/f32.tif" --out "$T/linkrun" --model logistic --steps 2 --batch 4 --micro-batch 2 \
    --no-predict >"$T/linkrun_np.log" 2>&1 && [ -L "$T/linkrun/risk.tif" ] \
    && ok "... but not a run that draws no map (--no-predict): the link is no output of it" \
    || notok "DIR/risk.tif a link with --no-predict" "$(grep -m1 error "$T/linkrun_np.log")"
rm -r "$T/linkrun" && mkdir "$T/linkrun" && ln -s ../today.tif "$T/linkrun/report.json"
expect "DIR/report.json a symbolic link, with --no-predict too" 2 "refusing to write the report to .*linkrun/report.json: it is a symbolic link" -- \
    --tiles "$T/f32.tif" --out "$T/linkrun" --model logistic --steps 2 --batch 4 --micro-batch 2 --no-predict
rm "$T/linkrun/report.json" && ln -s ../scratch "$T/linkrun/checkpoints"
"$WILDCPU" --tiles "$T/f32.tif" --out "$T/linkrun" --model logistic --steps 2 --batch 4 --micro-batch 2 \
    --no-predict >/dev/null 2>&1 && [ -e "$T/scratch/ckpt-00000002.wcp" ] \
    && ok "a checkpoints directory that is a link: followed" \
    || notok "a checkpoints link" "$(ls "$T/scratch")"
ln -s ../today.tif "$T/linkrun/risk.png"
ln -s ../gone.tif "$T/linkrun/risk.json" # dangling: moved aside too
"$WILDCPU" --tiles "$T/f32.tif" --out "$T/linkrun" --model logistic --steps 2 --batch 4 \
    --micro-batch 2 --fresh >/dev/null 2>&1 && [ -L "$(echo "$T"/linkrun/replaced-*/risk.png)" ] \
    && [ -L "$(echo "$T"/linkrun/replaced-*/risk.json)" ] && [ ! -L "$T/linkrun/risk.json" ] \
    && [ -f "$T/linkrun/risk.png" ] && [ "$(cat "$T/today.tif")" = "the previous map" ] \
    && ok "--fresh moves a linked output aside with the rest" \
    || notok "--fresh and a linked output" "$(ls -l "$T"/linkrun/replaced-*)"

# a raster without georeferencing: training, and a map of it or by a model trained on it, say
# that its pixel size cannot be checked (and the map is placed nowhere)
gdal_translate -q -of VRT "$T/f32.tif" "$T/nogt.vrt"
$PY -c 'import re, sys; t = open(sys.argv[1]).read(); open(sys.argv[1], "w").write(re.sub(r"<GeoTransform>.*?</GeoTransform>|<SRS.*?</SRS>", "", t, flags=re.S))' "$T/nogt.vrt"
expect "training on a raster without georeferencing: warned" 0 "warning: .*nogt.vrt has no georeferencing \(no geotransform\): the model learns no pixel size" -- \
    --tiles "$T/nogt.vrt" --out "$T/nogtrun" --model logistic --steps 2 --batch 4 --micro-batch 2 --no-predict
expect "... a map of one: warned" 0 "warning: .*nogt.vrt has no georeferencing \(no geotransform\): the map is written on its pixel grid, placed nowhere" -- \
    predict --tiles "$T/nogt.vrt" --checkpoint "$T/f32run" --out "$T/nogt_map.tif"
expect "... and a map by a model trained on one: warned" 0 "warning: .*f32.tif: the model .*nogtrun.* was trained on data without georeferencing" -- \
    predict --tiles "$T/f32.tif" --checkpoint "$T/nogtrun" --out "$T/nogt_map2.tif"
# a raster placed by GCPs alone: training names them and says to warp it (the dataset is
# released after planning, so its GCPs are counted when it is opened)
gdal_translate -q -of VRT -gcp 0 0 640000 4930000 -gcp 64 0 641920 4930000 -gcp 0 64 640000 4928080 "$T/nogt.vrt" "$T/gcp.vrt"
expect "training on a raster placed by GCPs alone: warned, naming them" 0 "warning: .*gcp.vrt is placed by 3 GCPs and has no geotransform: the model learns no pixel size.*gdalwarp" -- \
    --tiles "$T/gcp.vrt" --out "$T/gcprun" --model logistic --steps 2 --batch 4 --micro-batch 2 --no-predict
# ... said once in a run that trains and maps (the map is of the same raster, by its model)
timeout 300 "$WILDCPU" --tiles "$T/nogt.vrt" --out "$T/nogtrun2" --model logistic --steps 2 --batch 4 \
    --micro-batch 2 >/dev/null 2>"$T/nogt2.err"
s=$? n=$(grep -c "has no georeferencing" "$T/nogt2.err")
[ $s -eq 0 ] && [ "$n" -eq 1 ] && grep -q "a map of this one is placed nowhere in a GIS" "$T/nogt2.err" \
    && ok "... once in a run that trains and maps, naming both consequences" \
    || notok "the georeferencing warning of a run that maps" "status $s, said $n times"

# an integer band whose nodata value its type cannot hold (-1 in a Byte band): no pixel is
# nodata by it, the pixels meant as nodata are data; warned, naming the band, once per command
# (bytend.tif: made with f32.tif above)
timeout 300 "$WILDCPU" --tiles "$T/bytend.tif" --out "$T/bytend" --model logistic --steps 2 --batch 4 --micro-batch 2 >"$T/bytend.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "warning: .*bytend.tif, band 2 (slope): its nodata value -1 cannot occur in a Byte band, so no pixel is nodata" "$T/bytend.log")" -eq 1 ] \
    && ok "a nodata value a Byte band cannot hold: warned once (training and its map), naming the band" \
    || notok "a nodata value the type cannot hold" "status $s: $(grep -m2 'nodata\|error' "$T/bytend.log")"

# signed bytes (GDAL 3.6: Byte flagged PIXELTYPE=SIGNEDBYTE) behind a VRT, which declares them
# Byte: GDAL reads -1 as 255 through it. Opened directly they are refused; through a mosaic too
# (from a copy: scaling computes statistics, which GDAL would save into the sample VRT)
gdal_translate -q "$SAMPLE" "$T/sample_copy.tif"
gdal_translate -q -ot Byte -scale -co PIXELTYPE=SIGNEDBYTE "$T/sample_copy.tif" "$T/int8.tif" 2>/dev/null
gdalbuildvrt -q "$T/int8.vrt" "$T/int8.tif"
expect "signed bytes opened directly: refused, naming the band" 1 "int8.tif, band 1 \(elevation\): data type signed Byte \(Int8\) is not supported" -- \
    --tiles "$T/int8.tif" "${train[@]}"
expect "signed bytes behind a VRT: refused, naming the source" 1 "int8.vrt: its source .*int8.tif, band 1, holds signed bytes \(PIXELTYPE=SIGNEDBYTE\), which GDAL reads through the mosaic as unsigned" -- \
    --tiles "$T/int8.vrt" "${train[@]}"
gdal_translate -q -b 13 -co PIXELTYPE=SIGNEDBYTE "$T/int8.tif" "$T/int8lab.tif"
gdalbuildvrt -q "$T/int8lab.vrt" "$T/int8lab.tif"
expect "signed-byte labels behind a VRT (--labels): refused, naming the source" 1 "int8lab.vrt: its source .*int8lab.tif, band 1, holds signed bytes" -- \
    --tiles "$SAMPLE" --labels "$T/int8lab.vrt" --label-band 1 "${train[@]}"
expect "... and predict refuses them too" 1 "int8.vrt: its source .*int8.tif, band 1, holds signed bytes" -- \
    predict --tiles "$T/int8.vrt" --checkpoint "$T/f32run" --out "$T/int8_map.tif"

# a geotransform whose pixels have no size, or that holds a NaN: every position would be wrong
# (and the reason named: no area, not a number, or pixels whose area overflows)
for g in "640000, 0, 0, 4930000, 0, -30|no area" "nan, 30, 0, 4930000, 0, -30|not a finite number" \
    "0, 1e200, 0, 0, 0, -1e200|too large for any coordinate"; do
    why=${g#*|}
    g=${g%|*}
    gdal_translate -q -of VRT "$SAMPLE" "$T/degenerate.vrt"
    $PY -c 'import re, sys
s = open(sys.argv[1]).read()
open(sys.argv[1], "w").write(re.sub(r"<GeoTransform>.*?</GeoTransform>", "<GeoTransform>" + sys.argv[2] + "</GeoTransform>", s, flags=re.S))' "$T/degenerate.vrt" "$g"
    expect "a degenerate geotransform ($g): $why" 1 "degenerate.vrt has a degenerate geotransform .*$why" -- --tiles "$T/degenerate.vrt" "${train[@]}"
done

# a geographic raster reaching beyond a pole by more than a pixel (a projected grid labelled
# EPSG:4326, rows counted the wrong way): refused, naming the latitude; its labels and oracle
# alike; one whose cell centres reach 90 (its edge half a pixel beyond) trains
gdal_translate -q -of VRT -a_srs EPSG:4326 -a_ullr -110 100 -109 99 "$SAMPLE" "$T/lat100.vrt"
expect "EPSG:4326 at latitude 100" 1 "lat100.vrt reaches latitude 100, beyond the pole, in a geographic CRS" -- --tiles "$T/lat100.vrt" "${train[@]}"
gdal_translate -q -of VRT -a_srs EPSG:4326 -a_ullr -110 -89 -109 -91 "$SAMPLE" "$T/south.vrt"
expect "EPSG:4326 at latitude -91 (the labels)" 1 "south.vrt reaches latitude -91, beyond the pole" -- --tiles "$SAMPLE" --labels "$T/south.vrt" "${train[@]}"
half=$($PY -c 'print(90 + 0.5 / 512)')
gdal_translate -q -of VRT -a_srs EPSG:4326 -a_ullr -110 "$half" -109 "$($PY -c "print($half - 1)")" "$SAMPLE" "$T/pole.vrt"
timeout 120 "$WILDCPU" --tiles "$T/pole.vrt" "${ltrain[@]}" >"$T/pole.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "step 2/2" "$T/pole.log" && ok "EPSG:4326 whose cell centres reach the pole: trains" \
    || notok "EPSG:4326 whose cell centres reach the pole" "status $s: $(grep -m1 error "$T/pole.log")"

# a mosaic with a source in another CRS (-allow_projection_difference): warned, naming it
# (mixed.vrt of west.tif and east12.tif: made with f32.tif above)
expect "a mosaic source in another CRS: warned, naming it" 0 "warning: .*mixed.vrt: its source .*east12.tif is in EPSG:32612, the mosaic in EPSG:32611" -- \
    --tiles "$T/mixed.vrt" "${ltrain[@]}"

# a mosaic of more files than the CRS check opens (2,000, spread over it): 2,050 names of one
# tile in EPSG:32612 under a mosaic in EPSG:32611. One in every 2 is checked, and the count says
# so (before, 2,000 / files rounded down to 1: every file of a mosaic of up to 3,999 was opened,
# 6 s of a 1,024-tile run's start, and the count read as of all its sources).
# (manycrs/many.vrt and manycrs/swapped.vrt: made with f32.tif above)
timeout 120 "$WILDCPU" --tiles "$T/manycrs/many.vrt" "${train[@]}" --patch 8 >"$T/out" 2>"$T/err"
line=$(grep -E "many.vrt: [0-9]+ of .* another CRS" "$T/err")
checked=$(echo "$line" | sed -nE 's/.* of the ([0-9]+) of its 2050 files checked \(one in every 2\).*/\1/p')
[ -n "$checked" ] && [ "$checked" -le 2000 ] && ok "2,050 files: the CRS check opens at most 2,000, and says so ($line)" \
    || notok "2,050 files: the CRS check opens at most 2,000, and says so" "$line; $(grep -m1 error "$T/err")"
# the band-order check opens at most 500 sources of a VRT, spread over it (before, 2050 / 500
# rounded down to 4: 513 of them)
timeout 120 "$WILDCPU" --tiles "$T/manycrs/swapped.vrt" "${train[@]}" --patch 8 >"$T/out" 2>"$T/err"
line=$(grep -E "swapped.vrt: [0-9]+ of its bands read a source band described otherwise" "$T/err")
pairs=$(echo "$line" | sed -nE 's/.*swapped.vrt: ([0-9]+) of its bands.*/\1/p')
[ -n "$pairs" ] && [ "$pairs" -le 1000 ] && ok "2,050 sources: the band-order check opens at most 500 ($line)" \
    || notok "2,050 sources: the band-order check opens at most 500" "$line; $(grep -m1 error "$T/err")"

# a mosaic with a source of coarser pixels (gdalbuildvrt -resolution highest): warned, naming it
# (coarse.vrt of west.tif and east60.tif: made with f32.tif above)
expect "a mosaic source of other pixels: warned, naming it" 0 "warning: .*coarse.vrt: the source .*east60.tif \(band 1 of .*coarse.vrt\) is resampled onto the mosaic's grid, 128x256 of its pixels into 256x512" -- \
    --tiles "$T/coarse.vrt" "${ltrain[@]}"
# ... but not a tile placed pixel for pixel with another pixel size of its own (re-georeferenced)
gdal_translate -q -of VRT -a_ullr 640000 4930000 647680 4899280 "$T/west.tif" "$T/onetoone.vrt"
timeout 120 "$WILDCPU" predict --tiles "$T/onetoone.vrt" --checkpoint "$T/f32run" --out "$T/onetoone.tif" >/dev/null 2>"$T/err"
grep -q "resampled onto" "$T/err" && notok "a source placed pixel for pixel: no resampling warning" "$(grep resampled "$T/err")" \
    || ok "a source placed pixel for pixel (its own pixel size differs): no resampling warning"

# a container of rasters (netCDF variables): no bands of its own; its subdatasets are named
# (multi.nc: made with f32.tif above, where this GDAL can write it)
if [ ! -s "$T/multi.nc" ]; then
    echo "# skipped: this GDAL cannot write multidimensional netCDF (the subdatasets case)"
else
expect "netCDF of several variables" 1 "multi.nc has no raster bands of its own but 2 subdatasets: NETCDF:\"$T/multi.nc\":elevation, NETCDF:\"$T/multi.nc\":slope \(give one" \
    -- --tiles "$T/multi.nc" "${train[@]}"
fi

# a raster without a band called fire
gdal_translate -q -ot Float32 -b 1 -b 2 "$SAMPLE" "$T/nolabel.tif"
expect "no label band and no --labels" 1 "has no label band 'fire' \(its bands: elevation, slope\)" -- \
    --tiles "$T/nolabel.tif" "${train[@]}"
expect "label band not found by name" 1 "has no label band 'burned'.*elevation" -- \
    --tiles "$SAMPLE" --label-band burned "${train[@]}"

expect "fewer valid patches than one batch" 1 "valid training patches of 64x64, fewer than one batch \(--batch 500\)" -- \
    --tiles "$SAMPLE" --out "$T/run" --steps 2 --batch 500 --no-predict --fresh

# an all-nodata raster: every feature is nodata
gdal_create -q -of GTiff -ot Float32 -outsize 128 128 -bands 3 -burn -9999 -a_nodata -9999 \
    -a_srs EPSG:32611 -a_ullr 0 3840 3840 0 "$T/nodata.tif"
expect "all-nodata raster" 1 "no patch of 64x64 pixels has at least 50% valid pixels" -- \
    --tiles "$T/nodata.tif" --label-band 3 "${train[@]}"

expect "raster smaller than a patch" 1 "is 128x128 pixels, smaller than one 256x256 patch" -- \
    --tiles "$T/nodata.tif" --label-band 3 --patch 256 "${train[@]}"
expect "a patch that fits the raster but not its grid of patch cells" 1 \
    "is 512x512 pixels, but no whole 512x512 patch fits on the grid of patch cells .*starts 171 px right" -- \
    --tiles "$SAMPLE" --patch 512 "${train[@]}"

# a VRT that points at a tile that is not there
cp -r "$ROOT/data/sample" "$T/broken"
rm "$T/broken/tiles/r01_c01_f32.tif"
sed -e 's|<Description>ndvi</Description>|<Description>slope</Description>|' \
    -e "s|relativeToVRT=\"1\">|relativeToVRT=\"0\">$(dirname "$SAMPLE")/|" "$SAMPLE" >"$T/dup.vrt"
expect "two feature bands of one description, refused before training" 1 "bands 2 and 5 are both named 'slope'" -- \
    --tiles "$T/dup.vrt" "${train[@]}"
sed -e 's|<Description>elevation</Description>|<Description>band_3</Description>|' \
    -e 's|<Description>aspect_sin</Description>||' \
    -e "s|relativeToVRT=\"1\">|relativeToVRT=\"0\">$(dirname "$SAMPLE")/|" "$SAMPLE" >"$T/dup3.vrt"
expect "a description that is another band's default name" 1 \
    "bands 1 and 3 are both named 'band_3' \(a band without a description is named band_<its number>\)" -- \
    --tiles "$T/dup3.vrt" "${train[@]}"
# (GDAL finds a missing source only when it reads its pixels, and lists no such file: refused at
# start, naming it, by training and by predict before it maps any window)
expect "VRT pointing at a missing tile" 1 "its source .*r01_c01_f32.tif \(band [0-9]+ of .*\) does not exist" -- --tiles "$T/broken/tiles.vrt" "${train[@]}"
expect "... predict refuses it before mapping" 1 "its source .*r01_c01_f32.tif \(band [0-9]+ of .*\) does not exist" -- \
    predict --tiles "$T/broken/tiles.vrt" --checkpoint "$T/f32run" --out "$T/broken_map.tif"

# unsupported band type
gdal_create -q -of GTiff -ot CFloat32 -outsize 64 64 -bands 2 "$T/complex.tif"
expect "unsupported band type" 1 "band 1 \(band_1\): data type CFloat32 is not supported" -- \
    --tiles "$T/complex.tif" "${train[@]}"

# NaN and Inf feature values are nodata, not poison: training runs with a finite loss, and the
# map marks exactly those pixels as nodata (-9999)
# (nan.tif, NaN and Inf planted in ndvi: made with f32.tif above)
timeout 120 "$WILDCPU" --tiles "$T/nan.tif" "${train[@]}" --steps 3 >"$T/out" 2>"$T/err"
status=$?
if [ $status -eq 0 ] && $PY -c 'import json,math,sys
ls=[json.loads(l)["loss"] for l in open(sys.argv[1]) if "\"train\"" in l]
sys.exit(0 if ls and all(math.isfinite(x) for x in ls) else 1)' "$T/run/metrics.jsonl"; then
    ok "NaN/Inf features are treated as nodata (training runs, finite loss)"
else
    notok "NaN/Inf features are treated as nodata" "exit $status: $(tail -2 "$T/err")"
fi
timeout 120 "$WILDCPU" predict --tiles "$T/nan.tif" --checkpoint "$T/run" --out "$T/nanmap.tif" \
    >"$T/out" 2>"$T/err"
$PY - "$T/nanmap.tif" "$T/nan.tif" <<'PY' >"$T/nanmap.txt" 2>&1
import sys
import numpy as np
from osgeo import gdal
mds = gdal.Open(sys.argv[1])  # kept: a band outliving its dataset crashes GDAL 3.6's bindings
m = mds.GetRasterBand(1).ReadAsArray()
src = gdal.Open(sys.argv[2])
invalid = np.zeros(m.shape, bool)
for i in range(1, src.RasterCount):  # the features (the last band is the label)
    b = src.GetRasterBand(i)
    a = b.ReadAsArray()
    invalid |= ~np.isfinite(a)
    if b.GetNoDataValue() is not None:
        invalid |= a == b.GetNoDataValue()
assert invalid[100:140, 100:140].all() and invalid[300:310, :].all()
assert ((m == -9999) == invalid).all(), int(((m == -9999) != invalid).sum())
print(f"{int(invalid.sum())} nodata pixels, NaN/Inf blocks included")
PY
[ $? -eq 0 ] && ok "the map is nodata exactly where a feature is NaN, Inf or nodata: $(cat "$T/nanmap.txt")" \
    || notok "map nodata where features are NaN/Inf" "$(tail -2 "$T/nanmap.txt") $(tail -2 "$T/err")"

# --- vector labels
cat >"$T/points.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [641000, 4929000]}}]}
GJ
expect "vector labels without polygons" 1 "has no polygon.*: --labels needs burned-area polygons" -- \
    --tiles "$SAMPLE" --labels "$T/points.geojson" "${train[@]}"
cat >"$T/far.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:4326"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[10.0, 50.0], [10.1, 50.0], [10.1, 50.1], [10.0, 50.1], [10.0, 50.0]]]}}]}
GJ
printf '' >"$T/empty.tif"
expect "an empty --labels file" 1 "neither a raster nor a vector file GDAL can open: no GDAL driver recognizes it \(0 bytes\)" -- \
    --tiles "$SAMPLE" --labels "$T/empty.tif" "${train[@]}"
# a directory GDAL opens as no dataset (no shapefile in it) is said to be one: its listing's
# size was given as the labels' ("no GDAL driver recognizes it (4096 bytes)")
mkdir -p "$T/labels_dir"
expect "a --labels directory without shapefiles" 1 "labels_dir is neither a raster nor a vector file GDAL can open: it is a directory, which no GDAL driver recognizes \\(a directory of shapefiles would be\\)$" -- \
    --tiles "$SAMPLE" --labels "$T/labels_dir" "${train[@]}"
expect "vector labels that do not overlap the tiles" 1 "no polygon of .*far.geojson overlaps the tiles .*: tiles cover .*EPSG:32611, the polygons .*EPSG:4326" -- \
    --tiles "$SAMPLE" --labels "$T/far.geojson" "${train[@]}"
# a polygon over the tiles that covers no pixel's centre (a 10 m sliver along the west edge of
# the 30 m grid) burns nothing: refused, said as such, not as "no polygon overlaps the tiles"
# beside extents that overlap
cat >"$T/sliver.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[639000, 4925000], [640010, 4925000], [640010, 4924000], [639000, 4924000], [639000, 4925000]]]}}]}
GJ
expect "vector labels over the tiles that cover no pixel's centre" 1 "no polygon of .*sliver.geojson covers the centre of a pixel of the tiles, so none burns a pixel .*all-touched off.*tiles cover .*EPSG:32611 \(pixels 30 x 30\), the polygons \(639000, 4924000\)-\(640010, 4925000\)" -- \
    --tiles "$SAMPLE" --labels "$T/sliver.geojson" "${train[@]}"
# polygons reaching more than 2^30 pixels from the tiles (a stray vertex at 1e12 m): GDAL's
# rasterizer overflows its int pixel coordinates and burned nothing of a square 1e12 m wide over
# the whole sample (gdal_rasterize alike); cut to the tiles' box first, it burns every pixel
# it covers; and a band from beside the tiles to 1e12 m, off them, leaves a fire over them
# burned as it is alone
cat >"$T/huge.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[-1e12, -1e12], [1e12, -1e12], [1e12, 1e12], [-1e12, 1e12], [-1e12, -1e12]]]}}]}
GJ
cat >"$T/stray.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[650000, 4900000], [1e12, 4900000], [1e12, 4901000], [650000, 4901000], [650000, 4900000]]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[641000, 4915000], [650000, 4915000], [650000, 4928000], [641000, 4928000], [641000, 4915000]]]}}]}
GJ
cat >"$T/fire.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[641000, 4915000], [650000, 4915000], [650000, 4928000], [641000, 4928000], [641000, 4915000]]]}}]}
GJ
for g in huge stray fire; do
    "$WILDCPU" --tiles "$SAMPLE" --labels "$T/$g.geojson" "${train[@]}" >"$T/$g.log" 2>&1
    eval "s_$g=\$?"
done
share() { grep -o '[0-9.]*% of training pixels burned' "$1"; }
[ "$s_huge" -eq 0 ] && [ "$(share "$T/huge.log")" = "100.00% of training pixels burned" ] &&
    [ "$s_stray" -eq 0 ] && [ -n "$(share "$T/fire.log")" ] && [ "$(share "$T/stray.log")" = "$(share "$T/fire.log")" ] &&
    ok "polygons beyond GDAL's rasterizer's reach: cut to the tiles, they burn what they cover" ||
    notok "polygons beyond the rasterizer's reach" "status $s_huge/$s_stray: '$(share "$T/huge.log")', '$(share "$T/stray.log")' against '$(share "$T/fire.log")'; $(grep -h -m1 error "$T/huge.log" "$T/stray.log")"
$PY - "$SAMPLE" "$T/nogeo_tiles.vrt" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r"<SRS[^>]*>.*?</SRS>\s*", "", s, flags=re.S)
s = re.sub(r"<GeoTransform>.*?</GeoTransform>\s*", "", s, flags=re.S)
d = sys.argv[1].rsplit("/", 1)[0]
open(sys.argv[2], "w").write(s.replace('relativeToVRT="1">', 'relativeToVRT="0">' + d + "/"))
PY
expect "polygon labels for tiles without a geotransform" 1 "polygons are placed by their coordinates, and .*nogeo_tiles.vrt has no geotransform" -- \
    --tiles "$T/nogeo_tiles.vrt" --labels "$T/far.geojson" "${train[@]}"
gdal_create -q -of GTiff -ot Byte -outsize 64 64 -bands 1 "$T/nogeo.tif"
expect "label raster on another grid without a CRS" 1 "cannot be reprojected onto it.*tiles .*EPSG:32611.*labels: .*no CRS" -- \
    --tiles "$SAMPLE" --labels "$T/nogeo.tif" "${train[@]}"

# --- an unreadable window in the middle of training: a tile is truncated after planning,
# with GDAL's cache too small to hold it, so a later read fails; the run ends through its
# teardown, so its report is written and names the window (it was not: the read failure ended
# the process at once)
cp -r "$ROOT/data/sample" "$T/flaky"
GDAL_CACHEMAX=1 timeout 300 "$WILDCPU" --tiles "$T/flaky/tiles.vrt" --out "$T/flakyrun" --model logistic --steps 200 \
    --batch 8 --micro-batch 4 --patch 32 --no-predict --log-every 1 >"$T/flaky.out" 2>"$T/flaky.err" &
pid=$!
for _ in $(seq 1 600); do
    grep -q "step 2/" "$T/flaky.out" 2>/dev/null && break
    sleep 0.1
done
truncate -s 20000 "$T/flaky/tiles/r00_c00_f32.tif"
wait $pid
status=$?
if [ $status -eq 1 ] && grep -Eq "read error in .*tiles.vrt, window x=[0-9]+ y=[0-9]+" "$T/flaky.err" &&
    grep -Eq "step [0-9]*: reading training patches failed|validation after step [0-9]*: reading its blocks failed" "$T/flaky.err" &&
    grep -q '"status": *"failed"' "$T/flakyrun/report.json" &&
    grep -Eq '"error": *"read error in .*tiles.vrt, window x=[0-9]+ y=[0-9]+.*; then: (step [0-9]*: reading training patches|validation after step [0-9]*: reading its blocks) failed \(see above\)"' "$T/flakyrun/report.json"; then
    ok "unreadable window mid-epoch: exit 1, file and window named in the log and report.json ($(grep -Eo "read error in .*window x=[0-9]+ y=[0-9]+ [0-9x]+" "$T/flaky.err" | head -1 | sed "s|$T/||"))"
else
    notok "unreadable window mid-epoch" "exit $status: $(tail -3 "$T/flaky.err")"
fi
# ... and every Float32 tile truncated while training reads ahead (no validation: the failure
# lands in a training step): the reader stops at its first failed window, so the log has one
# read error and the report names that window, not one read ahead after it (the reader went on
# reading and logging, and the last window read ahead became the report's cause)
cp -r "$ROOT/data/sample" "$T/flaky2"
GDAL_CACHEMAX=1 timeout 300 "$WILDCPU" --tiles "$T/flaky2/tiles.vrt" --out "$T/flakyrun2" --model logistic --steps 200 \
    --batch 8 --micro-batch 2 --prefetch 8 --patch 32 --val-fraction 0 --no-predict --log-every 1 \
    >"$T/flaky2.out" 2>"$T/flaky2.err" &
pid=$!
for _ in $(seq 1 600); do
    grep -q "step 2/" "$T/flaky2.out" 2>/dev/null && break
    sleep 0.1
done
for f in "$T"/flaky2/tiles/*_f32.tif; do truncate -s 2000 "$f"; done
wait $pid
status=$?
first=$(grep -m1 -o "read error in .*window x=[0-9]* y=[0-9]*" "$T/flaky2.err")
said=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["error"])' "$T/flakyrun2/report.json" 2>&1)
if [ $status -eq 1 ] && [ "$(grep -c "read error in" "$T/flaky2.err")" = 1 ] && [ -n "$first" ] &&
    grep -Eq "step [0-9]+: reading training patches failed" "$T/flaky2.err" &&
    [ "${said#"$first"}" != "$said" ]; then
    ok "tiles unreadable while reading ahead: one read error logged, the report names it ($(echo "$first" | sed "s|$T/||"))"
else
    notok "tiles unreadable while reading ahead" "status $status, $(grep -c "read error in" "$T/flaky2.err") read errors, the first '$first'; the report's: $said"
fi
# a read-ahead larger than the machine (4096 slots of 200 patches of 64 x 64 x 12 bands: 160 GiB)
# is refused before planning (usage error: planning a large mosaic takes minutes), naming
# --prefetch, not left to the OOM killer. The sample region (13 bands, like a synth region) has too
# few patches for --batch 200: a check moved after planning fails with status 1 here
if [ "$(awk '/MemTotal/ {print int($2 / 1048576)}' /proc/meminfo)" -ge 150 ]; then
    echo "# skipped: the --prefetch refusal needs a machine of less than 150 GiB"
else
    expect "--prefetch beyond physical memory" 2 "the read-ahead of 4096 slots of --micro-batch 200 patches \(64x64 px, 13 bands as Float32\) needs at least 162.5 GiB per rank .*more than its .* of physical memory: lower --prefetch \(to 2 at least" -- \
        --tiles "$SAMPLE" --out "$T/prefetch" --steps 1 --batch 200 --micro-batch 200 \
        --val-fraction 0 --prefetch 4096 --no-predict
    grep -q "patches: " "$T/err" && notok "the read-ahead refused before planning" "$(grep "patches: " "$T/err")"
    # a batch so large that the fewest slots are too many: --prefetch cannot help, --batch can
    expect "--batch beyond physical memory, --prefetch raised" 2 "--prefetch 1 was raised to 262145, the fewest slots a step of 262144 micro-batches on a rank needs: lower --batch" -- \
        --tiles "$SAMPLE" --out "$T/prefetch" --steps 1 --batch 1048576 --val-fraction 0 --prefetch 1 --no-predict
fi
# ... and a GDAL block cache larger than the machine, set by GDAL_CACHEMAX: named as the cause
if [ "$(awk '/MemTotal/ {print int($2 / 1048576)}' /proc/meminfo)" -ge 90 ]; then
    echo "# skipped: the GDAL_CACHEMAX refusal needs a machine of less than 90 GiB"
else
    GDAL_CACHEMAX=99999999999 timeout 120 "$WILDCPU" --tiles "$SAMPLE" --out "$T/cachemax" --steps 1 \
        --batch 4 --micro-batch 2 --no-predict >"$T/cachemax.log" 2>&1
    s=$?
    [ $s -eq 2 ] && grep -q "GDAL's block cache holds 93.1 GiB of it, as GDAL_CACHEMAX sets it: lower GDAL_CACHEMAX" "$T/cachemax.log" \
        && ok "GDAL_CACHEMAX beyond physical memory: status 2, the cache named as the cause" \
        || notok "GDAL_CACHEMAX beyond physical memory" "status $s: $(grep -m1 error "$T/cachemax.log")"
fi
# kernels the environment asked for and did not get (both change the bits): warned, and the
# report does not say OPENBLAS_CORETYPE chose them
OPENBLAS_CORETYPE=bogus WILDCPU_GEMM=bogus timeout 300 "$WILDCPU" --tiles "$SAMPLE" --out "$T/kernels" --model logistic --steps 1 \
    --batch 4 --micro-batch 2 --patch 32 --no-predict >"$T/kernels.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "warning: OPENBLAS_CORETYPE=bogus: OpenBLAS runs its .* kernels instead" "$T/kernels.log" &&
    grep -q "warning: WILDCPU_GEMM=bogus is no choice (own, own-avx2 or openblas)" "$T/kernels.log" &&
    grep -q '"openblas_core_origin":"OpenBLAS, which did not take OPENBLAS_CORETYPE=bogus"' "$T/kernels/report.json" \
    && ok "OPENBLAS_CORETYPE and WILDCPU_GEMM not taken: warned, and report.json says who chose the kernels" \
    || notok "kernels the environment did not get" "status $s: $(grep -m2 'warn\|error' "$T/kernels.log")"
WILDCPU_GEMM=bogus timeout 300 "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/kernels" \
    --out "$T/kernels_map.tif" >"$T/kernels_map.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(grep -c "warning: WILDCPU_GEMM=bogus is no choice" "$T/kernels_map.log")" -eq 1 ] \
    && ok "... predict warns too, once" \
    || notok "predict and WILDCPU_GEMM" "status $s: $(grep -m2 'warn\|error' "$T/kernels_map.log")"
# options within their own ranges whose combination is not: refused before training (usage)
expect "--lr scaled beyond 100" 2 "--lr 1 scaled linearly by --batch 128 / --lr-ref-batch 1 gives 128, outside 1e-12 to 100: lower --lr" -- \
    --tiles "$SAMPLE" --out "$T/combo" --lr 1 --lr-scaling linear --lr-ref-batch 1 --batch 128 \
    --micro-batch 8 --patch 32 --no-predict
expect "--lr scaled below 1e-12" 2 "--lr 1e-12 scaled linearly by --batch 4 / --lr-ref-batch 8 gives 5e-13, outside 1e-12 to 100: raise --lr" -- \
    --tiles "$SAMPLE" --out "$T/combo" --lr 1e-12 --lr-scaling linear --lr-ref-batch 8 --batch 4 \
    --micro-batch 2 --patch 32 --no-predict
# ... and refused as such before the data is opened: with a --batch the patches cannot fill it
# was status 1 ("fewer than one batch"), after a warning about the very rate it then refused,
# and it left DIR/checkpoints behind
expect "--lr scaled beyond 100 over data too small for --batch: the usage error, first" 2 \
    "^wildcpu: --lr 100 scaled linearly by --batch 128 / --lr-ref-batch 4 gives 3200, outside 1e-12 to 100: lower --lr" -- \
    --tiles "$SAMPLE" --out "$T/combo_early" --lr 100 --lr-scaling linear --lr-ref-batch 4 --batch 128 \
    --no-predict
grep -q "^usage: wildcpu \[train\]" "$T/err" && ! grep -q "warning" "$T/err" && [ ! -e "$T/combo_early" ] \
    && ok "... with the usage, no warning before it, and no run directory made" \
    || notok "the scaled --lr refused before the data" "$(ls "$T/combo_early" 2>&1) $(head -c 300 "$T/err")"
expect "--epochs beyond 1e9 steps" 2 "--epochs 1000000 of [0-9]+ steps each .* make more than the 1000000000 steps a run may have" -- \
    --tiles "$SAMPLE" --out "$T/combo" --epochs 1000000 --batch 1 --micro-batch 1 --patch 8 --no-predict
expect "--lr-end beyond 1 (the decay would rise)" 2 "--lr-end needs a number between 0 and 1, got '1.5'" -- \
    --tiles "$SAMPLE" --lr-end 1.5 "${train[@]}"
expect "--warmup longer than the run: warned" 0 "--warmup 1000 is longer than the run's 2 steps: the learning rate never reaches --lr" -- \
    --tiles "$SAMPLE" --out "$T/combo" --model logistic --steps 2 --batch 8 --micro-batch 4 --patch 32 --warmup 1000 --no-predict
# far more threads than CPUs (more than 4 per CPU of the affinity): refused at once, naming the CPUs
cpus=$(nproc)
expect "--threads beyond 4 per CPU" 2 "--threads $((4 * cpus + 1)) is more than 4 times the $cpus CPU" -- \
    --tiles "$SAMPLE" --threads $((4 * cpus + 1)) "${train[@]}"
# too many threads from SLURM_CPUS_PER_TASK, --threads not given: the message blames the
# variable, not a --threads the user never gave, and says --threads overrides it
SLURM_CPUS_PER_TASK=$((4 * cpus + 1)) expect "SLURM_CPUS_PER_TASK beyond 4 per CPU: blamed, not --threads" 2 \
    "^wildcpu: error: SLURM_CPUS_PER_TASK=$((4 * cpus + 1)) \(the default of --threads\) is more than 4 times the $cpus CPU.*use --threads $cpus, which overrides SLURM_CPUS_PER_TASK" -- \
    --tiles "$SAMPLE" "${train[@]}"
SLURM_CPUS_PER_TASK=$((4 * cpus + 1)) timeout 120 "$WILDCPU" --tiles "$SAMPLE" --threads 1 "${ltrain[@]}" >"$T/out" 2>"$T/err"
s=$?
[ $s -eq 0 ] && ! grep -q "SLURM_CPUS_PER_TASK" "$T/err" && grep -q "1 rank x 1 thread;" "$T/out" \
    && ok "... and --threads 1 overrides it (exit 0, 1 thread, the variable not mentioned)" \
    || notok "--threads over SLURM_CPUS_PER_TASK" "status $s: $(head -c 300 "$T/err")"
# a value that is no whole number from 1 to 1024 is not read as far as it goes ("2abc" was 2
# threads): 1 thread, and a warning naming the variable and its value, once for all ranks
for v in 2abc 0 2000; do
    SLURM_CPUS_PER_TASK=$v expect "SLURM_CPUS_PER_TASK=$v: a warning, 1 thread" 0 \
        "^wildcpu: warning: SLURM_CPUS_PER_TASK='$v' is not a whole number from 1 to 1024: ignored, each rank runs 1 thread \(--threads N sets another\)" -- \
        --tiles "$SAMPLE" "${ltrain[@]}"
    grep -q "1 rank x 1 thread;" "$T/out" || notok "SLURM_CPUS_PER_TASK=$v: 1 thread" "$(grep -m1 'rank x' "$T/out")"
done
SLURM_CPUS_PER_TASK=2abc timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" --tiles "$SAMPLE" "${ltrain[@]}" >"$T/out" 2>"$T/err"
s=$?
n=$(grep -c "SLURM_CPUS_PER_TASK='2abc' is not a whole number" "$T/err")
[ $s -eq 0 ] && [ "$n" -eq 1 ] && grep -q "2 ranks x 1 thread;" "$T/out" \
    && ok "SLURM_CPUS_PER_TASK=2abc on 2 ranks: 1 thread each, said once" \
    || notok "SLURM_CPUS_PER_TASK=2abc on 2 ranks" "status $s, $n warnings; $(grep -m1 'rank.* x' "$T/out")"
# empty values where a path or a band is needed: usage errors
expect "--out empty" 2 "--out: empty path" -- --tiles "$SAMPLE" --out= --steps 1 --no-predict
expect "--label-band empty" 2 "--label-band: empty" -- --tiles "$SAMPLE" --label-band '' "${train[@]}"
: >"$T/afile"
expect "--out an existing file" 1 "--out .*afile exists and is not a directory" -- --tiles "$SAMPLE" --out "$T/afile" --steps 1 --no-predict
expect "a value given to an option that takes none" 2 "option --fresh takes no value" -- --tiles "$SAMPLE" --fresh=yes "${train[@]}"
# synth over an earlier region that fails half way (a tile it cannot write: a directory in its
# place) leaves no tiles.vrt nor oracle of the earlier region, which would open as a mix of two
# seeds: the error names the tile, status 1, and says the earlier region is gone (the tile's
# own message, "the existing ... is untouched", read as if the region were)
"$WILDCPU" synth --out "$T/mix" --size 256 --tile 64 >/dev/null 2>&1
rm "$T/mix/tiles/r02_c01_f32.tif" && mkdir "$T/mix/tiles/r02_c01_f32.tif"
"$WILDCPU" synth --out "$T/mix" --size 256 --tile 64 --seed 2 >"$T/mix.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "r02_c01_f32.tif" "$T/mix.log" && [ ! -e "$T/mix/tiles.vrt" ] && [ ! -e "$T/mix/oracle_risk.tif" ] &&
    grep -q "error: synth: no region in $T/mix now: the earlier region's tiles.vrt and oracle_risk.tif were removed before the first tile (some of its tiles may be this run's already), and this run's are written last; rerun the command to write the region" "$T/mix.log" \
    && ok "synth failing half way over an earlier region leaves no tiles.vrt or oracle of a mix, and says so" \
    || notok "synth failing half way" "status $s: $(tail -1 "$T/mix.log"); $(ls "$T/mix")"
# ... and over a directory that held only an oracle (its tiles.vrt gone: a synth killed before),
# names what it removed: it said the earlier region's tiles.vrt was removed too
rm -rf "$T/mix/tiles/r02_c01_f32.tif"
"$WILDCPU" synth --out "$T/mix" --size 256 --tile 64 >/dev/null 2>&1
rm -f "$T/mix/tiles.vrt" "$T/mix/tiles/r02_c01_f32.tif" && mkdir "$T/mix/tiles/r02_c01_f32.tif"
"$WILDCPU" synth --out "$T/mix" --size 256 --tile 64 --seed 2 >"$T/mix.log" 2>&1
s=$?
[ $s -eq 1 ] && [ ! -e "$T/mix/oracle_risk.tif" ] &&
    grep -q "error: synth: no region in $T/mix now: an earlier oracle_risk.tif (without a tiles.vrt) was removed before the first tile, and this run's tiles.vrt and oracle_risk.tif are written last; rerun" "$T/mix.log" \
    && ok "synth failing over a directory with an oracle and no tiles.vrt names only the oracle as removed" \
    || notok "synth failing over an oracle alone" "status $s: $(grep 'no region' "$T/mix.log"); $(ls "$T/mix")"
# an earlier oracle that cannot be removed (a directory in its place; a mount point is busy):
# the earlier region's tiles.vrt, removed just before it, was gone without a word, the message
# naming the oracle alone
"$WILDCPU" synth --out "$T/orc" --size 64 --tile 32 >/dev/null 2>&1
rm "$T/orc/oracle_risk.tif" && mkdir "$T/orc/oracle_risk.tif"
"$WILDCPU" synth --out "$T/orc" --size 64 --tile 32 --seed 2 >"$T/orc.log" 2>&1
s=$?
[ $s -eq 1 ] && [ ! -e "$T/orc/tiles.vrt" ] &&
    grep -q "cannot remove the previous $T/orc/oracle_risk.tif: Is a directory; the earlier region's tiles.vrt was removed before it, so there is no region in $T/orc now" "$T/orc.log" \
    && ok "synth unable to remove an earlier oracle says the earlier tiles.vrt is gone" \
    || notok "synth unable to remove an earlier oracle" "status $s: $(cat "$T/orc.log")"
# the working files a synth killed by SIGKILL left (no handler ran) go with the next synth
# there, once no process may still write them (its pid gone here and quiet for 10 minutes);
# a fresh one and files of other names stay
touch -d '1 hour ago' "$T/mix/tiles/.r00_c00_f32.tif.tmp-99999999" "$T/mix/.oracle_risk.tif.tmp-99999999" \
    "$T/mix/tiles/.notes"
touch "$T/mix/tiles/.r00_c01_f32.tif.tmp-99999998"
rmdir "$T/mix/tiles/r02_c01_f32.tif"
"$WILDCPU" synth --out "$T/mix" --size 256 --tile 64 --seed 2 >"$T/mix.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "removed .*mix/tiles/.r00_c00_f32.tif.tmp-99999999, the working file of a run that was killed" "$T/mix.log" &&
    [ ! -e "$T/mix/tiles/.r00_c00_f32.tif.tmp-99999999" ] && [ ! -e "$T/mix/.oracle_risk.tif.tmp-99999999" ] &&
    [ -e "$T/mix/tiles/.notes" ] && [ -e "$T/mix/tiles/.r00_c01_f32.tif.tmp-99999998" ] \
    && ok "synth removes the working files a killed synth left (said), keeps a fresh one and others" \
    || notok "synth and the leftovers of a killed one" "status $s: $(ls -A "$T/mix" "$T/mix/tiles" | tr '\n' ' ')"
# synth under an address-space limit without room for the region: refused (status 2) before
# anything is written, giving the limit the whole generation needs. It ran into the limit in one
# of its allocations (status 1) and advised room for that one alone: "raise the limit to at
# least 304.0 MiB" under 293 MiB at 1024 px, under which it failed again and advised 314 MiB
(ulimit -v 300000 && exec timeout -s KILL 120 "$WILDCPU" synth --out "$T/vm" --size 1024) >"$T/vm.log" 2>&1
s=$?
lim=$(grep -Eo "ulimit -v [0-9]+" "$T/vm.log" | grep -Eo "[0-9]+")
[ $s -eq 2 ] && [ ! -e "$T/vm" ] && grep -q "has no room for .* to generate the region, .*the 1024x1024 region's fields .*raise the limit to at least" "$T/vm.log" \
    && ok "synth under an address-space limit without room: refused before anything is written (status 2)" \
    || notok "synth under an address-space limit without room" "status $s: $(head -c 400 "$T/vm.log")"
(ulimit -v "${lim:-300000}" && exec timeout -s KILL 120 "$WILDCPU" synth --out "$T/vm" --size 1024) >"$T/vm2.log" 2>&1 &&
    [ -e "$T/vm/tiles.vrt" ] && ok "... and writes the region under the limit it advises (ulimit -v ${lim:-?})" ||
    notok "... under the limit it advises (ulimit -v ${lim:-?})" "$(head -c 400 "$T/vm2.log")"
# a run directory holding a risk.json that is not wildcpu's STAC item (the map would replace it):
# refused before training, not after it; --no-predict writes no map, so it goes on
mkdir -p "$T/ownjson" && echo '{"mine": true}' >"$T/ownjson/risk.json"
expect "a risk.json of one's own in the run directory: refused before training" 1 \
    "ownjson/risk.json exists and is not a STAC item wildcpu wrote" -- --tiles "$SAMPLE" --out "$T/ownjson" --steps 1 --batch 4 --micro-batch 2
[ ! -e "$T/ownjson/checkpoints/ckpt-00000001.wcp" ] && grep -q mine "$T/ownjson/risk.json" \
    && ok "... no step was trained, the file untouched" || notok "... refused before training" "$(ls "$T/ownjson" "$T/ownjson/checkpoints")"
# a single dash: no short option exists; the letter is named, not the argument before it
expect "an unknown short option in a cluster" 2 "unknown option -x, in -x=1" -- --tiles "$SAMPLE" -x=1 "${train[@]}"
expect "a long option with one dash" 2 "unknown option -t, in -tiles: long options take two dashes \\(--tiles\\)" -- -tiles "$SAMPLE" "${train[@]}"
expect "an unknown short option for predict" 2 "unknown option -q for predict" -- predict --tiles "$SAMPLE" -q
# a prefix of two or more names is ambiguous, not unknown; a value out of range prints the usage
# like every other usage error; under mpirun a usage error is said once, not once per rank
expect "an ambiguous prefix" 2 "option --no is ambiguous: it could be --no-predict, --no-jitter" -- --tiles "$SAMPLE" --no
expect "an ambiguous prefix for predict" 2 "option --c is ambiguous: it could be --checkpoint, --cog, --classes" -- predict --c x
expect "a value out of range, then the usage" 2 "^usage: wildcpu \\[train\\]" -- --tiles "$SAMPLE" --patch 3
expect "synth: a value out of range, then the usage" 2 "^usage: wildcpu synth" -- synth --out "$T/s" --size 31
# --lr-scaling linear: the rate that zeroes the weights is the scaled one, and a divergence names
# the --lr the user gave with it (a probe: 0.5 scaled to 1 was not warned, and "now 1" blamed)
expect "lr x weight decay >= 1 after --lr-scaling: warned, the scaled rate named" 1 \
    "--lr 0.5, 1 after --lr-scaling linear with --weight-decay 1: every step" -- --tiles "$SAMPLE" \
    --out "$T/wdscaled" --steps 8 --batch 8 --lr 0.5 --weight-decay 1 --lr-scaling linear \
    --lr-ref-batch 4 --warmup 0 --no-predict
grep -q "lower --lr (now 0.5, 1 after --lr-scaling linear)" "$T/err" \
    && ok "... and the divergence names --lr 0.5 and the scaled 1" \
    || notok "... and the divergence names --lr as given" "$(grep -i diverged "$T/err" | head -c 500)"
timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$WILDCPU" --tiles "$SAMPLE" --patch 3 >"$T/out" 2>"$T/err"
s=$?
[ "$s" -eq 2 ] && [ "$(grep -c 'needs a whole number' "$T/err")" -eq 1 ] && [ "$(grep -c '^usage:' "$T/err")" -eq 1 ] \
    && ok "a usage error under mpirun -np 2: said once (status 2)" \
    || notok "a usage error under mpirun -np 2: said once" "status $s: $(head -c 600 "$T/err")"
# a spec that builds for a patch but not for the validation window (40000 channels of 256 x 256
# pixels are more than a tensor holds; 2100 channels were used until 2026-12-06, when the
# receptive field was still measured at 1024 x 1024 whatever the network): the spec's fault, a
# usage error
printf 'input x\nconv a x out=40000 k=1\nconv h a out=1 k=1\n' >"$T/wide.spec"
expect "--model too wide for the validation window" 2 "wide.spec: layer a: its output of 1 x 40000 x [0-9]+ x [0-9]+ values is more than a tensor may hold" -- \
    --tiles "$SAMPLE" --model "$T/wide.spec" --out "$T/widespec" --steps 1 --batch 4 --micro-batch 1 --patch 8 --no-predict
# a spec whose output passes through a relu (directly, or through the pools and upsamples that
# keep its sign) has logits never below 0: a map that could call no pixel below 0.5. It trained
# and mapped with status 0.
printf 'input x\nconv c x out=1 k=3 pad=1\nrelu r c\n' >"$T/relu.spec"
expect "--model whose last layer is a relu" 2 "relu.spec: the last layer \(r\) is a relu: the logits are never below 0" -- \
    --tiles "$SAMPLE" --model "$T/relu.spec" --out "$T/reluspec" --steps 1 --batch 2 --micro-batch 2 --patch 32 --no-predict
printf 'input x\nconv c x out=1 k=1\nrelu r c\nmaxpool p r\nupsample u p\n' >"$T/relu2.spec"
expect "--model whose output passes through a relu, a pool and an upsample" 2 "relu2.spec: the last layer \(u\) passes on the output of the relu r" -- \
    --tiles "$SAMPLE" --model "$T/relu2.spec" --out "$T/reluspec2" --steps 1 --batch 2 --micro-batch 2 --patch 32 --no-predict
finish
