#!/usr/bin/env bash
# t_labels.sh: where the labels come from, checked against GDAL's own tools.
#   - a label band that does not exist (in the tiles or in a --labels raster) is an error that
#     lists the bands that do; a name two bands carry is ambiguous; --label-band N picks one, and
#     every other band carrying a label's name stays out of the features;
#   - a multi-band label raster on another grid warps the chosen band only (equal to gdalwarp of
#     that band), under a cache name of its own; a resume with another --label-band is refused;
#   - a warped label keeps its meaning whatever its type: Float32 0.3, Float64 1e-300, Byte 255
#     and Int16 300 stay burned, 0 and -5 unburned, the band's nodata and uncovered ground
#     nodata (equal to gdalwarp -ot Float32/Float64, and what training reads from it);
#   - points and lines in a perimeter file are skipped and counted, not burned (the map equals
#     gdal_rasterize of the polygons alone);
#   - a stop signal while a perimeter file is rasterized onto a huge grid (one process, and one
#     rank of two), or a label raster warped onto it, cancels GDAL within seconds: exit 75, no
#     partial labels file left.
. "$(dirname "$0")/lib.sh"

# expect NAME STATUS PATTERN -- ARGS...: runs wildcpu, checks the status and that its output
# matches PATTERN (an extended regex)
expect() {
    local name=$1 want=$2 pattern=$3
    shift 4
    timeout 120 "$WILDCPU" "$@" >"$T/out" 2>&1
    local status=$?
    if [ "$status" -eq "$want" ] && grep -Eq -- "$pattern" "$T/out"; then
        ok "$name (exit $status: $(grep -E -- "$pattern" "$T/out" | head -1 | sed "s|$T/||g" | cut -c1-160))"
    else
        notok "$name" "exit $status (want $want): $(grep -vi '^#' "$T/out" | head -c 600)"
    fi
}
train=(--steps 1 --batch 4 --micro-batch 2 --patch 32 --model logistic --no-predict)

# Small tiles (128x128: elevation, slope, fire) and label rasters made from their fire band:
#   two.tif     same grid, bands "inverse" (1 - fire) and "fire2019" (fire): no band named fire
#   named.tif   same grid, bands "other" (1 - fire) and "fire" (fire)
#   shifted.tif another grid (10 pixels more to the west and north), bands "inverse" and "fire"
#   twofire.tif the tiles plus a second band described fire (a copy of the first one)
gdal_translate -q -ot Float32 -srcwin 0 0 128 128 -b 1 -b 2 -b 13 "$SAMPLE" "$T/tiles.tif"
$PY - "$T" <<'PY' >"$T/make.log" 2>&1 || notok "making the label rasters" "$(tail -3 "$T/make.log")"
import sys
import numpy as np
from osgeo import gdal
d = sys.argv[1]
t = gdal.Open(d + "/tiles.tif")
fire = t.GetRasterBand(3).ReadAsArray().astype(np.uint8)
gt = t.GetGeoTransform()
def write(name, arrays, names, geo, extra=()):
    h, w = arrays[0].shape
    ds = gdal.GetDriverByName("GTiff").Create(f"{d}/{name}", w, h, len(arrays), gdal.GDT_Byte)
    ds.SetGeoTransform(geo)
    ds.SetProjection(t.GetProjection())
    for i, (a, n) in enumerate(zip(arrays, names)):
        ds.GetRasterBand(i + 1).WriteArray(a)
        ds.GetRasterBand(i + 1).SetDescription(n)
write("two.tif", [1 - fire, fire], ["inverse", "fire2019"], gt)
write("named.tif", [1 - fire, fire], ["other", "fire"], gt)
big = np.zeros((138, 138), np.uint8)
big[10:, 10:] = fire
write("shifted.tif", [1 - big, big], ["inverse", "fire"],
      (gt[0] - 10 * gt[1], gt[1], 0, gt[3] - 10 * gt[5], 0, gt[5]))
src = [t.GetRasterBand(i + 1) for i in range(3)]
ds = gdal.GetDriverByName("GTiff").Create(d + "/twofire.tif", 128, 128, 4, gdal.GDT_Float32)
ds.SetGeoTransform(gt)
ds.SetProjection(t.GetProjection())
for i, b in enumerate([0, 1, 2, 2]):
    ds.GetRasterBand(i + 1).WriteArray(src[b].ReadAsArray())
    ds.GetRasterBand(i + 1).SetDescription(src[b].GetDescription())
PY

# --- a label band that does not exist, or is ambiguous
expect "--label-band N beyond the tiles' bands" 1 "tiles.tif has no band 9: it has 3 \(its bands: elevation, slope, fire\)" -- \
    --tiles "$T/tiles.tif" --label-band 9 --out "$T/r0" "${train[@]}"
expect "--labels raster without the --label-band named" 1 "the label raster .*two.tif has no label band 'burned' \(its bands: inverse, fire2019\)" -- \
    --tiles "$T/tiles.tif" --labels "$T/two.tif" --label-band burned --out "$T/r1" "${train[@]}"
expect "--labels raster of two bands, none described fire, no --label-band" 1 "two.tif has 2 bands and none is described 'fire' \(its bands: inverse, fire2019\): say which one holds the labels with --label-band" -- \
    --tiles "$T/tiles.tif" --labels "$T/two.tif" --out "$T/r2" "${train[@]}"
expect "two bands described fire: ambiguous" 1 "twofire.tif: bands 3, 4 are all described 'fire'.*--label-band N picks one by its number" -- \
    --tiles "$T/twofire.tif" --out "$T/r3" "${train[@]}"
expect "--label-band 4 of two fire bands: the other one is no feature" 0 "band 3 'fire' is a label band, not a feature: left out \(the labels are band 4 'fire'\)" -- \
    --tiles "$T/twofire.tif" --label-band 4 --out "$T/r4" "${train[@]}"
grep -q "2 features" "$T/out" && ok "--label-band 4: 2 features (elevation, slope), neither fire band" \
    || notok "--label-band 4: 2 features" "$(grep -E 'features' "$T/out" | head -2)"
# copies of the labels described 'Fire' and 'fire ' beside 'fire': label bands all the same,
# left out of the features (they were features, the answer handed to the model: validation
# AUC-PR 0.61 after 6 steps where the honest model had 0.17), and predict ignores them beside
# the model's inputs; tiles whose only label band is described 'FIRE' are refused naming it
$PY - "$T/tiles.tif" "$T/casefire.vrt" "$T/upper.vrt" <<'PY' || notok "bands described 'Fire' and 'fire ' beside 'fire'"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT", bandList=[1, 2, 3, 3, 3])
d.GetRasterBand(4).SetDescription("Fire")
d.GetRasterBand(5).SetDescription("fire ")
d = None
d = gdal.Translate(sys.argv[3], sys.argv[1], format="VRT")
d.GetRasterBand(3).SetDescription("FIRE")
d = None
PY
expect "a band described 'Fire' beside 'fire': a label band, no feature" 0 "band 4 'Fire' is a label band, not a feature: left out \(the labels are band 3 'fire'\)" -- \
    --tiles "$T/casefire.vrt" --out "$T/rcase" "${train[@]}"
grep -q "band 5 'fire ' is a label band, not a feature" "$T/out" && grep -q "2 features" "$T/out" && "$WILDCPU" predict --tiles "$T/casefire.vrt" --checkpoint "$T/rcase" \
    --out "$T/rcase.tif" >"$T/rcase-predict.log" 2>&1 \
    && ok "'Fire' and 'fire ' beside 'fire': 2 features, and predict maps the raster that holds them" \
    || notok "'Fire' and 'fire ' beside 'fire': 2 features, predict" "$(grep -E 'features|error|left out' "$T/out" "$T/rcase-predict.log" | head -4)"
expect "a label band described 'FIRE' alone: refused naming it" 1 "upper.vrt has no label band 'fire' \(its bands: elevation, slope, FIRE\); band 3 is described 'FIRE', not 'fire' \(--label-band N takes it by number\)" -- \
    --tiles "$T/upper.vrt" --out "$T/rupper" "${train[@]}"
# descriptions with a separator wildcpu reads as '_': --label-band names them as written, and
# two that differ only there are ambiguous, with a word on why
$PY - "$T/twofire.tif" "$T/semi.vrt" <<'PY' || notok "bands described 'fire;2019' and 'fire,2019'"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
d.GetRasterBand(3).SetDescription("fire;2019")
d.GetRasterBand(4).SetDescription("fire,2019")
d = None
PY
expect "two descriptions alike but for ';' and ',': ambiguous, said why" 1 "semi.vrt: bands 3, 4 are all described 'fire_2019' \(as wildcpu reads the descriptions: ',' ';' '=' .* become '_'" -- \
    --tiles "$T/semi.vrt" --label-band "fire;2019" --out "$T/r5" "${train[@]}"
$PY - "$T/tiles.tif" "$T/semi1.vrt" <<'PY' || notok "a band described 'fire;2019'"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
d.GetRasterBand(3).SetDescription("fire;2019")
d = None
PY
expect "--label-band 'fire;2019' names the band so described" 0 "labels from fire_2019" -- \
    --tiles "$T/semi1.vrt" --label-band "fire;2019" --out "$T/r6" "${train[@]}"

# --- a label raster on the same grid: the band described fire by default, the fingerprint names it
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/named.tif" --out "$T/named" "${train[@]}" >"$T/named.log" 2>&1
status=$?
"$WILDCPU" info "$T/named/checkpoints/ckpt-00000001.wcp" >"$T/named.info" 2>&1
if [ $status -eq 0 ] && grep -q "labels=file:$T/named.tif,band:2" "$T/named.info"; then
    ok "--labels raster with a band described fire: that band, named in the data fingerprint"
else
    notok "--labels raster with a fire band" "status $status: $(grep -E 'labels=|error' "$T/named.log" "$T/named.info" | head -3)"
fi
# a resume with another band of the same file is other data
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/named.tif" --label-band 1 --out "$T/named" "${train[@]}" >"$T/named2.log" 2>&1
status=$?
if [ $status -eq 1 ] && grep -q "trained on other data: labels: now file:$T/named.tif,band:1, checkpoint file:$T/named.tif,band:2" "$T/named2.log"; then
    ok "resume with another --label-band of the label raster is refused, naming both bands"
else
    notok "resume with another --label-band refused" "status $status: $(grep -E 'error|resum' "$T/named2.log" | head -3)"
fi

# a label file whose name holds the record's separator ';': all of its name is the label
# source, so a resume with "semi;b.tif" is other data than "semi;a.tif" (cut at ';', both read
# "file:.../semi" and the resume went on with the other labels)
cp "$T/named.tif" "$T/semi;a.tif" && cp "$T/named.tif" "$T/semi;b.tif"
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/semi;a.tif" --out "$T/semi" "${train[@]}" >"$T/semi.log" 2>&1
s1=$?
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/semi;b.tif" --out "$T/semi" "${train[@]}" >"$T/semi2.log" 2>&1
s2=$?
if [ $s1 -eq 0 ] && [ $s2 -eq 1 ] && grep -q "trained on other data: labels: now file:.*semi%3Bb.tif,band:2, checkpoint file:.*semi%3Ba.tif,band:2" "$T/semi2.log"; then
    ok "a label file named with ';': a resume with another such file is other data, naming both"
else
    notok "a label file named with ';'" "status $s1 $s2: $(grep -E 'error|resum' "$T/semi2.log" | head -3)"
fi

# --- a two-band label raster on another grid: band 2 alone is warped, equal to gdalwarp of it;
# band 1 gets a derived raster of its own
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/shifted.tif" --label-band 2 --out "$T/warp" "${train[@]}" >"$T/warp.log" 2>&1
s2=$?
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/shifted.tif" --label-band inverse --out "$T/warp" --fresh "${train[@]}" >"$T/warp1.log" 2>&1
s1=$?
l2=$(grep -o "$T/warp/labels-[0-9a-f]*.tif" "$T/warp.log" | head -1)
l1=$(grep -o "$T/warp/labels-[0-9a-f]*.tif" "$T/warp1.log" | head -1)
gdal_translate -q -b 2 "$T/shifted.tif" "$T/b2.tif"
gdalwarp -q -r near -dstnodata 255 -te 640000 4926160 643840 4930000 -ts 128 128 "$T/b2.tif" "$T/ref2.tif"
$PY - "${l2:-missing}" "${l1:-missing}" "$T/ref2.tif" "$T/tiles.tif" <<'PY' >"$T/warp.txt" 2>&1
import sys
from osgeo import gdal
l2, l1, ref, t = (gdal.Open(p) for p in sys.argv[1:])
a2, a1, r = (d.GetRasterBand(1).ReadAsArray() for d in (l2, l1, ref))
fire = t.GetRasterBand(3).ReadAsArray()
assert l2.GetGeoTransform() == t.GetGeoTransform(), "derived labels on the tiles' grid"
assert (a2 == r).all(), f"band 2 differs from gdalwarp -b 2 at {int((a2 != r).sum())} pixels"
assert (a2 == fire).all() and (a1 == 1 - fire).all(), "band 2 is fire, band 1 its inverse"
print(f"{int(a2.sum())} burned pixels, equal to gdalwarp of band 2; band 1 is its inverse")
PY
if [ $s2 -eq 0 ] && [ $s1 -eq 0 ] && [ -n "$l1" ] && [ "$l1" != "$l2" ] && [ "$(grep -c . "$T/warp.txt")" -eq 1 ]; then
    ok "two-band label raster on another grid: the chosen band alone, one derived raster per band ($(cat "$T/warp.txt"))"
else
    notok "two-band label raster on another grid" "status $s2/$s1, ${l2#$T/} ${l1#$T/}: $(tail -2 "$T/warp.txt") $(grep -E 'error' "$T/warp.log" "$T/warp1.log" | head -2)"
fi

# --- label values keep their meaning through the warp onto the tiles' grid. Label rasters on a
# finer grid (15 m, shifted 10 tile pixels east and south, 18 short of the far edges) hold, in
# blocks, burned values that a Byte raster with nodata 255 cannot carry (0.3, 255, 300, 1e-300),
# unburned ones (0, -5), their band's own nodata value, and leave a frame of the tiles uncovered.
# The derived raster is compared with gdalwarp of the same band as Float32 (Float64 for the
# Float64 one): the same nodata pixels (source nodata and uncovered ground), the same values
# elsewhere; and what training reads from it (kept patches, burned share in the log) is what
# that reference says, thresholded > 0.
$PY - "$T" <<'PY' >"$T/types.log" 2>&1 || notok "making the typed label rasters" "$(tail -3 "$T/types.log")"
import sys
import numpy as np
from osgeo import gdal
d = sys.argv[1]
t = gdal.Open(d + "/tiles.tif")
gt = t.GetGeoTransform()
rng = np.random.default_rng(3)
kinds = {  # name: GDAL type, burned, unburned, nodata
    "f32": (gdal.GDT_Float32, 0.3, 0, -9999),
    "byte": (gdal.GDT_Byte, 255, 0, 7),
    "i16": (gdal.GDT_Int16, 300, -5, -32768),
    "f64": (gdal.GDT_Float64, 1e-300, 0, -9999),
}
for name, (gtype, burned, unburned, nodata) in kinds.items():
    pick = rng.choice(3, size=(25, 25), p=[0.3, 0.5, 0.2])  # 8x8 source blocks
    vals = np.array([burned, unburned, nodata], dtype=np.float64)[pick]
    a = np.kron(vals, np.ones((8, 8)))
    ds = gdal.GetDriverByName("GTiff").Create(f"{d}/{name}.tif", 200, 200, 1, gtype)
    ds.SetGeoTransform((gt[0] + 300, 15, 0, gt[3] - 300, 0, -15))
    ds.SetProjection(t.GetProjection())
    b = ds.GetRasterBand(1)
    b.SetNoDataValue(nodata)
    b.WriteArray(a)
    ds = None
PY
for kind in f32 byte i16 f64; do
    run=$T/ty_$kind
    "$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/$kind.tif" --val-fraction 0 --out "$run" "${train[@]}" >"$run.log" 2>&1
    status=$?
    ot=Float32
    [ $kind = f64 ] && ot=Float64
    gdalwarp -q -r near -ot $ot -dstnodata nan -te 640000 4926160 643840 4930000 -ts 128 128 "$T/$kind.tif" "$run.ref.tif"
    derived=$(grep -o "$run/labels-[0-9a-f]*.tif" "$run.log" | head -1)
    $PY - "${derived:-missing}" "$run.ref.tif" "$run.log" <<'PY' >"$run.txt" 2>&1
import re, sys
import numpy as np
from osgeo import gdal
dds, rds = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])  # kept: a band outliving its dataset crashes GDAL 3.6's bindings
db = dds.GetRasterBand(1)
a, r = db.ReadAsArray().astype(np.float64), rds.GetRasterBand(1).ReadAsArray().astype(np.float64)
nd = db.GetNoDataValue()
a_nodata = np.isnan(a) | ((a == nd) if nd is not None else False)
r_nodata = np.isnan(r)
assert (a_nodata == r_nodata).all(), f"nodata differs from gdalwarp's at {int((a_nodata != r_nodata).sum())} pixels"
ok = ~r_nodata
assert (a[ok] == r[ok]).all(), f"values differ from gdalwarp's at {int((a[ok] != r[ok]).sum())} pixels"
burned = ok & (r > 0)
assert burned.sum() > 0 and (ok & (r <= 0)).sum() > 0 and r_nodata[10:110, 10:110].sum() > 0, "a test with every kind of pixel"
# what training read: kept patches (at least half their 32x32 pixels valid) and the burned share;
# the patch grid is the global grid of 32 px cells (the tiles' corner in pixels of their size)
tg = gdal.Open(sys.argv[1]).GetGeoTransform()
x0, y0 = -round(tg[0] / tg[1]) % 32, -round(tg[3] / tg[5]) % 32
kept = pix = pos = 0
for y in range(y0, 128 - 31, 32):
    for x in range(x0, 128 - 31, 32):
        v = ok[y:y + 32, x:x + 32]
        if v.sum() >= 512:
            kept += 1
            pix += v.sum()
            pos += burned[y:y + 32, x:x + 32].sum()
want = f"{kept} kept; {kept} training, 0 validation .*; {100 * pos / pix:.2f}% of training pixels burned"
log = open(sys.argv[3]).read()
assert re.search(want, log), f"log says {re.search(r'patches: .*', log).group(0)!r}, the reference {want!r}"
print(f"{int(burned.sum())} burned, {int((ok & (r <= 0)).sum())} unburned, {int(r_nodata.sum())} nodata pixels as gdalwarp; {kept} patches kept, {100 * pos / pix:.2f}% burned")
PY
    if [ $status -eq 0 ] && [ "$(grep -c . "$run.txt")" -eq 1 ]; then
        ok "$kind label raster on another grid keeps its values: $(cat "$run.txt")"
    else
        notok "$kind label raster on another grid keeps its values" "status $status: $(tail -2 "$run.txt") $(grep -E 'error' "$run.log" | head -2)"
    fi
done

# against_rasterize RUN VECTOR MAX_OFF [ROWS COLS]: the labels run RUN derived against
# gdal_rasterize of VECTOR on the tiles' grid: at most MAX_OFF pixels differ (and, given, the
# pixels ROWS x COLS, numpy slices, are burned in both); one line into $T/RUN.txt when so
against_rasterize() {
    gdal_rasterize -q -burn 1 -init 0 -ot Byte -te 640000 4926160 643840 4930000 -ts 128 128 "$2" "$T/$1ref.tif"
    $PY - "$(ls "$T/$1"/labels-*.tif 2>/dev/null | head -1)" "$T/$1ref.tif" "$3" "${4:-}" "${5:-}" <<'PY' >"$T/$1.txt" 2>&1
import sys
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]  # kept: a band outliving its dataset crashes GDAL 3.6's bindings
a, r = (d.GetRasterBand(1).ReadAsArray() for d in ds)
if sys.argv[4]:
    ys, xs = (slice(*map(int, v.split(":"))) for v in sys.argv[4:6])
    assert r[ys, xs].all() and a[ys, xs].all(), "pixels that must burn are not burned"
off = int((a != r).sum())
assert off <= int(sys.argv[3]), f"{off} pixels differ from gdal_rasterize ({int(a.sum())} against {int(r.sum())} burned)"
print(f"{int(a.sum())} burned pixels, {off} off gdal_rasterize's")
PY
}

# --- perimeters with points, lines and a geometry collection: only the polygons burn
cat >"$T/mixed.geojson" <<'GJ'
{"type": "FeatureCollection", "name": "perimeters", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[640300, 4929700], [641500, 4929700], [641500, 4928800], [640300, 4928800], [640300, 4929700]]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": [643000, 4927000]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "LineString",
   "coordinates": [[640100, 4926500], [643700, 4926500]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "MultiLineString",
   "coordinates": [[[642000, 4929900], [642000, 4926300]]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "GeometryCollection", "geometries": [
   {"type": "Polygon", "coordinates": [[[642500, 4928000], [643500, 4928000], [643500, 4927200], [642500, 4927200], [642500, 4928000]]]},
   {"type": "LineString", "coordinates": [[640100, 4927500], [641800, 4927500]]}]}}]}
GJ
cat >"$T/polys.geojson" <<'GJ'
{"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
 "features": [
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[640300, 4929700], [641500, 4929700], [641500, 4928800], [640300, 4928800], [640300, 4929700]]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[642500, 4928000], [643500, 4928000], [643500, 4927200], [642500, 4927200], [642500, 4928000]]]}}]}
GJ
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/mixed.geojson" --out "$T/vec" "${train[@]}" >"$T/vec.log" 2>&1
status=$?
against_rasterize vec "$T/polys.geojson" 0 # the 2 polygons alone
lab=$(ls "$T"/vec/labels-*.tif 2>/dev/null | head -1)
if [ $status -eq 0 ] && grep -q "labels: skipped 4 non-polygon geometries (points, lines) of perimeters" "$T/vec.log" &&
    [ "$(grep -c . "$T/vec.txt")" -eq 1 ]; then
    ok "points and lines skipped and counted, polygons burned ($(cat "$T/vec.txt"))"
else
    notok "points and lines skipped, polygons burned" "status $status: $(tail -2 "$T/vec.txt") $(grep -E 'skipped|error' "$T/vec.log" | head -2)"
fi

# Polygons in the tiles' own CRS are burned uncut: an edge through pixel centres, running far
# beyond the tiles, burns the pixels gdal_rasterize burns (before 2026-12-06 the cut to the
# tiles' region moved its ends to rounded crossing points and burned every pixel whose centre it
# crosses: 127 more here)
$PY - "$T/diag.geojson" <<'PY'
import json, sys
c = lambda px, py: [640000 + 30 * px, 4930000 - 30 * py]  # pixel (px, py) of the tiles
json.dump({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
           "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
           "coordinates": [[c(-1000.5, -999.5), c(1200.5, 1201.5), c(1200.5, -999.5), c(-1000.5, -999.5)]]}}]},
          open(sys.argv[1], "w"))
PY
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/diag.geojson" --out "$T/diag" "${train[@]}" >"$T/diag.log" 2>&1
status=$?
against_rasterize diag "$T/diag.geojson" 0
[ $status -eq 0 ] && [ "$(grep -c . "$T/diag.txt")" -eq 1 ] &&
    ok "an edge through pixel centres in the tiles' CRS burns what gdal_rasterize burns ($(cat "$T/diag.txt"))" ||
    notok "an edge through pixel centres in the tiles' CRS" "status $status: $(tail -1 "$T/diag.txt") $(grep -E 'error' "$T/diag.log" | head -1)"

# An invalid polygon (its "hole" outside its shell) reaching beyond the tiles, in another CRS:
# GEOS's cut to the tiles' region dropped the ring gdal_rasterize burns (even-odd), so the same
# polygon burned 272 pixels fewer in EPSG:4326 than in the tiles' CRS, without a word; an invalid
# polygon now goes uncut, burned as gdal_rasterize burns it
$PY - "$T/inv4326.geojson" "$T/inv32611.geojson" <<'PY'
import sys
from osgeo import ogr, osr
def srs(e):
    s = osr.SpatialReference(); s.ImportFromEPSG(e); s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER); return s
sq = lambda a, b, c, d: f"({a} {b},{c} {b},{c} {d},{a} {d},{a} {b})"
g = ogr.CreateGeometryFromWkt(f"POLYGON({sq(640200, 4925500, 641500, 4928000)},{sq(642000, 4927000, 642500, 4927500)})")
g.Segmentize(10)
for path, epsg in ((sys.argv[2], 32611), (sys.argv[1], 4326)):
    h = g.Clone()
    if epsg != 32611: h.Transform(osr.CoordinateTransformation(srs(32611), srs(epsg)))
    ds = ogr.GetDriverByName("GeoJSON").CreateDataSource(path)
    layer = ds.CreateLayer("perimeters", srs(epsg), ogr.wkbPolygon)
    f = ogr.Feature(layer.GetLayerDefn()); f.SetGeometry(h); layer.CreateFeature(f); ds = None
PY
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/inv4326.geojson" --out "$T/inv" "${train[@]}" >"$T/inv.log" 2>&1
status=$?
# the ring outside the shell (rows 4927500..4927000, columns 642000..642500) burned
against_rasterize inv "$T/inv32611.geojson" 8 85:98 69:81
[ $status -eq 0 ] && [ "$(grep -c . "$T/inv.txt")" -eq 1 ] &&
    ok "an invalid polygon (a hole outside its shell) in EPSG:4326 beyond the tiles burns what gdal_rasterize burns ($(cat "$T/inv.txt"))" ||
    notok "an invalid polygon in EPSG:4326 beyond the tiles" "status $status: $(tail -1 "$T/inv.txt") $(grep -E 'error' "$T/inv.log" | head -1)"

# evaluate_again LOG: evaluate with the labels derived before ($lab); sets status, and same=1
# when $lab then holds what gdal_rasterize makes of the polygons
evaluate_again() {
    "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/vec" --labels "$T/mixed.geojson" \
        --out "$T/vec/again.json" >"$1" 2>&1
    status=$?
    same=$($PY -c 'import sys; from osgeo import gdal
d = [gdal.Open(p) for p in sys.argv[1:]]
print(int((d[0].GetRasterBand(1).ReadAsArray() == d[1].GetRasterBand(1).ReadAsArray()).all()))' "$lab" "$T/vecref.tif" 2>&1)
}
# --- the derived labels of an earlier run, damaged (truncated by hand, a disk error): made again
# with a warning, not reused (GDAL would fail minutes in) nor refused (it is wildcpu's own cache)
lab=$(ls "$T"/vec/labels-*.tif 2>/dev/null | head -1)
if [ -n "$lab" ]; then
    truncate -s 100 "$lab"
    evaluate_again "$T/vec_again.log"
    [ $status -eq 0 ] && grep -q "labels-.*tif, the labels derived from .*mixed.geojson by an earlier run, cannot be read as they were written: removed, and made again" "$T/vec_again.log" &&
        [ "$same" = 1 ] \
        && ok "damaged derived labels are made again (with a warning), equal to gdal_rasterize's" \
        || notok "damaged derived labels" "status $status, same $same: $(grep -E 'warning|error' "$T/vec_again.log" | head -2)"
else
    notok "damaged derived labels" "no derived labels in $T/vec"
fi
# ... and one cut short at its end, which GDAL still opens (the grid and tiles intact) but whose
# tag, written last, it reads with an I/O error and ignores: damaged, made again, not refused as
# "a raster that is not such labels" (a map written there)
lab=$(ls "$T"/vec/labels-*.tif 2>/dev/null | head -1)
at=$(grep -abo WILDCPU_DERIVED_LABELS "${lab:-$T/none.tif}" 2>/dev/null | head -1 | cut -d: -f1)
if [ -n "$lab" ] && [ -n "$at" ]; then
    truncate -s $((at + 8)) "$lab"
    evaluate_again "$T/vec_cut.log"
    [ $status -eq 0 ] && grep -q "labels-.*tif, the labels derived from .*mixed.geojson by an earlier run, cannot be read as they were written: removed, and made again" "$T/vec_cut.log" &&
        [ "$same" = 1 ] && grep -q WILDCPU_DERIVED_LABELS "$lab" \
        && ok "derived labels cut short at the end, their tag lost, are made again (with a warning)" \
        || notok "derived labels cut short at the end" "status $status, same $same: $(grep -E 'warning|error' "$T/vec_cut.log" | head -2)"
else
    notok "derived labels cut short at the end" "no derived labels in $T/vec, or no tag in them"
fi
# ... but intact ones that GDAL opens with a warning of no damage (their TIFF tags out of order)
# are reused as they are, not removed and made again at every run
if [ -n "$lab" ]; then
    $PY - "$lab" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
ifd = struct.unpack("<I", d[4:8])[0] + 2  # a classic little-endian TIFF: swap its first two tags
d[ifd:ifd + 12], d[ifd + 12:ifd + 24] = d[ifd + 12:ifd + 24], d[ifd:ifd + 12]
open(sys.argv[1], "wb").write(d)
PY
    sum=$(md5sum <"$lab")
    "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/vec" --labels "$T/mixed.geojson" \
        --out "$T/vec/again.json" >"$T/vec_order.log" 2>&1
    status=$?
    [ $status -eq 0 ] && [ "$(md5sum <"$lab")" = "$sum" ] && ! grep -q "made again" "$T/vec_order.log" \
        && ok "intact derived labels that GDAL opens with a warning (tags out of order) are reused" \
        || notok "intact derived labels opened with a warning" "status $status: $(grep -E 'warning|error' "$T/vec_order.log" | head -2)"
fi

# --- the derived labels are an input: evaluate --map onto them is refused (status 2), and a raster
# there that wildcpu did not derive (a map) is neither read as labels nor replaced
lab=$(ls "$T"/vec/labels-*.tif 2>/dev/null | head -1)
ev=(evaluate --tiles "$T/tiles.tif" --checkpoint "$T/vec" --labels "$T/mixed.geojson" --out "$T/vec/again.json")
expect "evaluate --map onto the labels it derived: refused" 2 \
    "refusing to write the risk map to .*: that is .*labels-.*tif, an input of this command" -- "${ev[@]}" --map "${lab:-none}"
cp "$T/vecref.tif" "${lab:-$T/none.tif}"
sum=$(md5sum <"${lab:-$T/none.tif}")
expect "a raster wildcpu did not derive, where it keeps derived labels: refused" 1 \
    "labels-.*tif is where wildcpu keeps the labels it derives from .*mixed.geojson, and holds a raster that is not such labels" -- "${ev[@]}"
[ "$(md5sum <"${lab:-$T/none.tif}")" = "$sum" ] && ok "... and left as it was" || notok "the raster at the derived labels' name was changed"
# ... also when GDAL warns while opening it, of something that is no damage (its TIFF tags out of
# order, as some writers leave them): any warning was taken for damage, and the raster removed
$PY - "$T/vecref.tif" "${lab:-$T/none.tif}" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
ifd = struct.unpack("<I", d[4:8])[0] + 2  # a classic little-endian TIFF: swap its first two tags
d[ifd:ifd + 12], d[ifd + 12:ifd + 24] = d[ifd + 12:ifd + 24], d[ifd:ifd + 12]
open(sys.argv[2], "wb").write(d)
PY
sum=$(md5sum <"${lab:-$T/none.tif}")
expect "a raster wildcpu did not derive that GDAL opens with a warning (tags out of order): refused" 1 \
    "labels-.*tif is where wildcpu keeps the labels it derives from .*mixed.geojson, and holds a raster that is not such labels" -- "${ev[@]}"
[ "$(md5sum <"${lab:-$T/none.tif}")" = "$sum" ] && ok "... and left as it was" || notok "the raster opened with a warning at the derived labels' name was changed"
rm -f "${lab:-$T/none.tif}"

# --- polygons in longitude and latitude written 0..360 (Pacific-centred data) burn the same pixels
# as the same polygons written -180..180
ogr2ogr -q -f GeoJSON -t_srs EPSG:4326 "$T/polys4326.geojson" "$T/polys.geojson"
$PY - "$T/polys4326.geojson" "$T/polys360.geojson" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["features"]:
    f["geometry"]["coordinates"] = [[[x + 360, y] for x, y in ring] for ring in f["geometry"]["coordinates"]]
json.dump(d, open(sys.argv[2], "w"))
PY
for v in 4326 360; do
    "$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/polys$v.geojson" --out "$T/lon$v" "${train[@]}" >"$T/lon$v.log" 2>&1
done
same=$($PY - "$T"/lon4326/labels-*.tif "$T"/lon360/labels-*.tif <<'PY' 2>&1
import sys
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]
a, b = (d.GetRasterBand(1).ReadAsArray() for d in ds)
print(int(a.sum()), int((a == b).all()))
PY
)
case $same in
[1-9]*" 1") ok "polygons at longitudes 0..360 burn what they burn at -180..180 (${same% *} pixels)" ;;
*) notok "polygons at longitudes 0..360" "$same: $(grep -h error "$T/lon360.log" | head -2)" ;;
esac

# --- an alpha band in a --labels raster on another grid: the pixels it hides stay nodata through
# the warp (equal to gdalwarp's, which honours it), not burned; without --label-band the alpha band
# is no candidate for the labels. Also where GDAL itself would not apply the alpha band (3 bands,
# alpha first, a label band with a nodata value): the same labels
$PY - "$T/tiles.tif" "$T" <<'PY'
import sys
import numpy as np
from osgeo import gdal
t = gdal.Open(sys.argv[1])
g = list(t.GetGeoTransform()); g[0] -= 10 * g[1]; g[3] -= 10 * g[5]  # 10 px west and north
alpha = np.full((128, 128), 255, np.uint8); alpha[:, :64] = 0
# name, bands, the alpha band, the labels' nodata
for name, nb, ab, nodata in [("alpha_lab", 2, 2, None), ("alpha3", 3, 3, None),
                             ("alpha_first", 2, 1, None), ("alpha_nodata", 2, 2, 7)]:
    o = gdal.GetDriverByName("GTiff").Create(f"{sys.argv[2]}/{name}.tif", 128, 128, nb, gdal.GDT_Byte)
    o.SetGeoTransform(g); o.SetProjection(t.GetProjection())
    for b in range(1, nb + 1):
        band = o.GetRasterBand(b)
        if b == ab:
            band.WriteArray(alpha); band.SetColorInterpretation(gdal.GCI_AlphaBand)
        else:
            band.WriteArray(np.ones((128, 128), np.uint8))
            if nodata is not None: band.SetNoDataValue(nodata)
    o = None
PY
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/alpha_lab.tif" --out "$T/alpha" "${train[@]}" >"$T/alpha.log" 2>&1
status=$?
gdalwarp -q -ot Float32 -dstnodata nan -te 640000 4926160 643840 4930000 -ts 128 128 -b 1 "$T/alpha_lab.tif" "$T/alpha_ref.tif" >/dev/null 2>&1 ||
    gdalwarp -q -ot Float32 -dstnodata nan -te 640000 4926160 643840 4930000 -ts 128 128 "$T/alpha_lab.tif" "$T/alpha_ref.tif"
res=$($PY - "$T"/alpha/labels-*.tif "$T/alpha_ref.tif" <<'PY' 2>&1
import sys
import numpy as np
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]
a, r = (d.GetRasterBand(1).ReadAsArray() for d in ds)
print(int(np.isnan(a).sum()), int(np.nansum(a)), int(np.array_equal(np.isnan(a), np.isnan(r)) and (np.nan_to_num(a) == np.nan_to_num(r)).all()))
PY
)
case $res in
*" 1") [ $status -eq 0 ] && ok "an alpha band in warped labels hides its pixels (nodata, burned elsewhere: $res), as gdalwarp's" ||
        notok "alpha in warped labels" "status $status" ;;
*) notok "alpha in warped labels" "status $status: $res" ;;
esac
for c in alpha3:1 alpha_first:2 alpha_nodata:1; do
    f=${c%%:*}
    "$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/$f.tif" --label-band "${c#*:}" --out "$T/$f" "${train[@]}" >"$T/$f.log" 2>&1
    status=$?
    same=$($PY - "$T"/alpha/labels-*.tif "$T/$f"/labels-*.tif <<'PY' 2>&1
import sys
import numpy as np
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]
a, b = (d.GetRasterBand(1).ReadAsArray() for d in ds)
print(int(np.array_equal(np.isnan(a), np.isnan(b)) and (np.nan_to_num(a) == np.nan_to_num(b)).all()))
PY
)
    [ $status -eq 0 ] && [ "$same" = 1 ] \
        && ok "an alpha band in warped labels ($f, band ${c#*:}): the same labels as the two-band raster's" \
        || notok "alpha in warped labels ($f)" "status $status: $same"
done

# --- perimeters reaching far from the tiles' projection (a polygon around the globe, in lon/lat,
# around the tiles; another over Europe, far off the region): GDALRasterize alone drops a
# polygon it cannot reproject into UTM without a word (that raster was 9.6% burned); cut to the
# tiles' region first, the first covers every pixel and the second is off the region
cat >"$T/world.geojson" <<'GJ'
{"type": "FeatureCollection", "features": [
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[-179, -80], [179, -80], [179, 80], [-179, 80], [-179, -80]]]}},
  {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
   "coordinates": [[[5, 45], [15, 45], [15, 50], [5, 50], [5, 45]]]}}]}
GJ
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/world.geojson" --out "$T/world" "${train[@]}" >"$T/world.log" 2>&1
status=$?
lab=$(ls "$T"/world/labels-*.tif 2>/dev/null | head -1)
burned=$($PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1]); a = d.GetRasterBand(1).ReadAsArray(); print(f"{int(a.sum())} of {a.size}")' "${lab:-missing}" 2>&1)
[ $status -eq 0 ] && [[ $burned =~ ^([0-9]+)\ of\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
    && ok "a polygon around the globe in lon/lat burns every pixel of UTM tiles ($burned); one far off is left out" \
    || notok "polygons reaching far from the tiles' projection" "status $status, burned $burned: $(grep -E 'error|burned' "$T/world.log" | head -2)"

# --- tiles on a rotated grid (rotation terms in the geotransform): the region the polygons are
# cut to spans all four corners, so a polygon covering the tiles burns every pixel
gdal_translate -q -of VRT "$T/tiles.tif" "$T/turned.vrt"
$PY - "$T/turned.vrt" "$T/turned.geojson" <<'PY'
import json, math, sys
from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); a = math.radians(30)
g = [640000, 30 * math.cos(a), 30 * math.sin(a), 4930000, 30 * math.sin(a), -30 * math.cos(a)]
d.SetGeoTransform(g)
xs = [g[0] + c * d.RasterXSize * g[1] + r * d.RasterYSize * g[2] for c in (0, 1) for r in (0, 1)]
ys = [g[3] + c * d.RasterXSize * g[4] + r * d.RasterYSize * g[5] for c in (0, 1) for r in (0, 1)]
x0, x1, y0, y1 = min(xs) - 1000, max(xs) + 1000, min(ys) - 1000, max(ys) + 1000
d = None
json.dump({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32611"}},
           "features": [{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon",
           "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]}}]}, open(sys.argv[2], "w"))
PY
mkdir -p "$T/turned"
"$WILDCPU" evaluate --tiles "$T/turned.vrt" --checkpoint "$T/vec" --labels "$T/turned.geojson" \
    --out "$T/turned/m.json" >"$T/turned.log" 2>&1
status=$?
lab=$(ls "$T"/turned/labels-*.tif 2>/dev/null | head -1)
burned=$($PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1]); a = d.GetRasterBand(1).ReadAsArray(); print(f"{int(a.sum())} of {a.size}")' "${lab:-missing}" 2>&1)
[[ $burned =~ ^([0-9]+)\ of\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
    && ok "a polygon covering tiles on a rotated grid burns every pixel ($burned)" \
    || notok "polygons over a rotated grid" "status $status, burned $burned: $(grep -E 'error' "$T/turned.log" | head -2)"

# --- a polygon that cannot be placed on the tiles even cut to their region: tiles in an
# orthographic projection whose extent runs off the visible disk (so the region cannot be
# expressed in lon/lat, and the polygon stays whole), a polygon around the globe (its far side
# has no orthographic coordinates): refused, naming the feature and both CRSs, not dropped
$PY - "$T/ortho.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal, osr
d = gdal.GetDriverByName("GTiff").Create(sys.argv[1], 64, 64, 3, gdal.GDT_Float32)
s = osr.SpatialReference()
s.ImportFromProj4("+proj=ortho +lat_0=45 +lon_0=-110 +R=6371000 +units=m +no_defs")
d.SetProjection(s.ExportToWkt())
d.SetGeoTransform([-7e6, 14e6 / 64, 0, 7e6, 0, -14e6 / 64])
rng = np.random.default_rng(1)
for b in range(1, 4):
    d.GetRasterBand(b).WriteArray(rng.normal(size=(64, 64)).astype(np.float32))
    d.GetRasterBand(b).SetDescription("abc"[b - 1])
PY
cat >"$T/globe.geojson" <<'GJ'
{"type": "FeatureCollection", "features": [{"type": "Feature", "id": 7, "properties": {},
 "geometry": {"type": "Polygon", "coordinates": [[[-179, -89], [179, -89], [179, 89], [-179, 89], [-179, -89]]]}}]}
GJ
expect "a polygon that cannot be reprojected onto the tiles" 1 "1 polygon of $T/globe.geojson \(layer globe; the first in feature 7\) cannot be reprojected from EPSG:4326 into the tiles' \+proj=ortho \+lat_0=45 \+lon_0=-110 .*reproject or clip them first" -- \
    --tiles "$T/ortho.tif" --labels "$T/globe.geojson" --out "$T/ortho_run" --patch 32 --batch 2 --micro-batch 1 --steps 1 --no-predict

# --- a GeoPackage with two polygon layers (fires and a study area, say): refused, naming both,
# rather than the first burned and the second dropped silently
ogr2ogr -q -f GPKG "$T/two.gpkg" "$T/polys.geojson" -nln fires2019 &&
    ogr2ogr -q -update -f GPKG "$T/two.gpkg" "$T/polys.geojson" -nln study_area
expect "--labels of two polygon layers" 1 "two.gpkg has 2 layers that may hold burned-area polygons: fires2019 \(2 features\), study_area \(2 features\); --labels takes one layer" -- \
    --tiles "$T/tiles.tif" --labels "$T/two.gpkg" --out "$T/two_layers" "${train[@]}"

# --- a stop while the perimeters are rasterized onto a huge grid (2,000,000 x 20,000 pixels of
# 1 m, declared in a VRT without sources: rasterizing takes minutes). SIGTERM 3 s after the start,
# to the process, or to one rank of two (the last one found: either rank 0, which rasterizes,
# or rank 1, which waits for it): exit 75 within seconds, and no labels file, whole or partial.
cat >"$T/huge.vrt" <<'VRT'
<VRTDataset rasterXSize="2000000" rasterYSize="20000">
  <SRS>EPSG:32611</SRS>
  <GeoTransform>640000, 1, 0, 4930000, 0, -1</GeoTransform>
  <VRTRasterBand dataType="Float32" band="1"><Description>elevation</Description><NoDataValue>-9999</NoDataValue></VRTRasterBand>
  <VRTRasterBand dataType="Byte" band="2"><Description>fire</Description><NoDataValue>255</NoDataValue></VRTRasterBand>
</VRTDataset>
VRT
ranks_of() { # the wildcpu processes of run NAME
    pgrep -f -- "--out $T/$1" | while read -r p; do [ "$(ps -o comm= -p "$p")" = wildcpu ] && echo "$p"; done
}
# stop_during NAME NRANKS ARGS...: starts a run (one process, or mpirun), sends SIGTERM to one rank after 3 s, waits at most
# 20 s for the run to end; sets $status and $took (seconds from the signal to the end)
stop_during() {
    local name=$1 n=$2
    shift 2
    if [ "$n" -eq 1 ]; then
        "$WILDCPU" "$@" --out "$T/$name" >"$T/$name.log" 2>&1 &
    else
        mpirun_n "$n" "$WILDCPU" "$@" --out "$T/$name" >"$T/$name.log" 2>&1 &
    fi
    local pid=$!
    sleep 3
    local t0
    t0=$(date +%s.%N)
    kill -TERM "$(ranks_of "$name" | tail -1)"
    for _ in $(seq 1 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    took=$(echo "$(date +%s.%N) - $t0" | bc)
    if kill -0 $pid 2>/dev/null; then
        kill -KILL $(ranks_of "$name") $pid 2>/dev/null
        took="more than 20"
    fi
    wait $pid
    status=$?
}
# stopped NAME WHAT: the run was stopped within 20 s of the signal and left no labels file
stopped() {
    local left
    left=$(ls -a "$T/$1" | grep -c labels)
    if [ $status -eq 75 ] && grep -q "stopped by a signal while planning the data" "$T/$1.log" &&
        [ "$left" -eq 0 ] && ! grep -qi "error" "$T/$1.log"; then
        ok "$2 onto 2,000,000 x 20,000 px: exit 75 $took s after the signal, no labels file left"
    else
        notok "$2 onto a huge grid" "status $status after $took s, $left labels files: $(grep -v -- '---' "$T/$1.log" | head -4)"
    fi
}
for n in 1 2; do
    stop_during "rast$n" $n --tiles "$T/huge.vrt" --labels "$T/polys.geojson" --steps 1 --no-predict
    stopped "rast$n" "SIGTERM to one of $n rank(s) while rasterizing perimeters"
done
# ... and evaluate's: exit 75 with a message that says what stopped and that the metrics are
#     untouched (it exited 75 without a word: a stop while deriving its labels was said by no
#     one), the earlier metrics untouched and no labels file left
sed -e 's|band="2"><Description>fire|band="3"><Description>fire|' \
    -e 's|\(  <VRTRasterBand dataType="Byte" band="3">\)|  <VRTRasterBand dataType="Float32" band="2"><Description>slope</Description><NoDataValue>-9999</NoDataValue></VRTRasterBand>\n\1|' \
    "$T/huge.vrt" >"$T/huge2.vrt" # the bands of tiles.tif, which trained $T/vec
for n in 1 2; do
    mkdir -p "$T/ev$n"
    echo '{"earlier": 1}' >"$T/ev$n/m.json"
    stop_during "ev$n/m.json" $n evaluate --tiles "$T/huge2.vrt" --checkpoint "$T/vec" --labels "$T/polys.geojson"
    left=$(ls -a "$T/ev$n" | grep -c labels)
    if [ $status -eq 75 ] && grep -q "evaluate: stopped by Terminated.* while deriving the labels from $T/polys.geojson: no metrics are written ($T/ev$n/m.json, if it exists, is untouched); rerun the same command to score the model" "$T/ev$n/m.json.log" &&
        [ "$(cat "$T/ev$n/m.json")" = '{"earlier": 1}' ] && [ "$left" -eq 0 ]; then
        ok "SIGTERM to one of $n rank(s) while evaluate rasterizes perimeters: exit 75 $took s after it, said, the earlier metrics untouched"
    else
        notok "evaluate stopped while rasterizing perimeters, $n rank(s)" "status $status after $took s, $left labels files: $(grep -v -- '---' "$T/ev$n/m.json.log" | tail -3)"
    fi
done
# a label raster of 138 x 138 pixels covering all of the huge grid, on a grid of its own
gdal_translate -q -a_ullr 640000 4930000 2640000 4910000 "$T/shifted.tif" "$T/wide.tif"
stop_during warpstop 1 --tiles "$T/huge.vrt" --labels "$T/wide.tif" --label-band 2 --steps 1 --no-predict
stopped warpstop "SIGTERM while warping a label raster"

# --- a polygon written across the antimeridian without being split (179.99 then -179.99, as
# ogr2ogr -t_srs EPSG:4326 leaves one) means the short way over it: it burns what gdal_rasterize
# burns (which reprojects vertex by vertex), not the rest of the world's band of latitudes; also
# written in 0..360 across Greenwich (359.99 then 0.01)
gdal_translate -q -of GTiff -a_srs EPSG:32760 -a_ullr 817510 8118534 821350 8114694 "$T/tiles.tif" "$T/fiji.tif"
gdal_translate -q -of GTiff -a_srs EPSG:32631 -a_ullr 262149 5003136 265989 4999296 "$T/tiles.tif" "$T/greenwich.tif"
cat >"$T/straddle.geojson" <<'J'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[179.99,-17.005],[-179.99,-17.005],[-179.99,-17.02],[179.99,-17.02],[179.99,-17.005]]]}}]}
J
cat >"$T/straddle360.geojson" <<'J'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[359.99,45.13],[0.01,45.13],[0.01,45.12],[359.99,45.12],[359.99,45.13]]]}}]}
J
# one feature of two polygons: one across the antimeridian unsplit, far off, and one across
# Greenwich (written -180..180, no wrap) over the tiles: each polygon is taken for itself
cat >"$T/twoparts.geojson" <<'J'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"MultiPolygon","coordinates":[[[[179.99,-17.005],[-179.99,-17.005],[-179.99,-17.02],[179.99,-17.02],[179.99,-17.005]]],[[[-0.01,45.13],[0.01,45.13],[0.01,45.12],[-0.01,45.12],[-0.01,45.13]]]]}}]}
J
cat >"$T/twoparts.ref.geojson" <<'J'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[-0.01,45.13],[0.01,45.13],[0.01,45.12],[-0.01,45.12],[-0.01,45.13]]]}}]}
J
for c in fiji:straddle greenwich:straddle360 greenwich:twoparts; do
    t=${c%%:*} p=${c#*:}
    "$WILDCPU" --tiles "$T/$t.tif" --labels "$T/$p.geojson" --out "$T/$p" "${train[@]}" >"$T/$p.log" 2>&1
    gdal_create -q -of GTiff -outsize 128 128 -bands 1 -ot Byte -burn 0 -a_srs "$(gdalsrsinfo -o wkt1 "$T/$t.tif" | tr -d '\n')" \
        -a_ullr $(gdalinfo -json "$T/$t.tif" | $PY -c 'import json, sys; c = json.load(sys.stdin)["cornerCoordinates"]
print(*c["upperLeft"], *c["lowerRight"])') "$T/$p.ref.tif"
    ref=$T/$p.geojson; [ -f "$T/$p.ref.geojson" ] && ref=$T/$p.ref.geojson
    gdal_rasterize -q -burn 1 "$ref" "$T/$p.ref.tif"
    same=$($PY - "$T/$p.ref.tif" "$T"/$p/labels-*.tif <<'PY' 2>&1
import sys
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]
a, b = (d.GetRasterBand(1).ReadAsArray() for d in ds)
print(int((a > 0).sum()), int(((a > 0) == (b > 0)).all()))
PY
)
    case $same in
    [1-9]*" 1") ok "$p.geojson, a polygon across the antimeridian unsplit: burns what gdal_rasterize burns (${same% *} pixels)" ;;
    *) notok "$p.geojson across the antimeridian" "$same: $(grep -h -E 'error|labels:' "$T/$p.log" | head -2)" ;;
    esac
done

# --- labels neither 0 nor 1 (an undeclared nodata 255, percentages, a probability): each counts
# as burned (> 0), as documented, with one warning per labels source naming it, how many pixels
# (counted by hand: no raster here is sparse, so planning reads every pixel of the 16 patches),
# their values and what to do; the same on 1 and 2 ranks, in training and evaluate alike.
# evaluate reads every pixel of the grid: its count is the hand count (training's, the pixels of
# the patches planning reads, is fewer)
$PY - "$T" <<'PY' >"$T/odd.log" 2>&1 || notok "making the odd label rasters" "$(tail -3 "$T/odd.log")"
import sys
import numpy as np
from osgeo import gdal
d = sys.argv[1]
t = gdal.Open(d + "/tiles.tif")
fire = (t.GetRasterBand(3).ReadAsArray() == 1).astype(np.float64)
rows = np.arange(128)[:, None] % 5 == 0
def write(name, a, typ):
    ds = gdal.GetDriverByName("GTiff").Create(f"{d}/{name}.tif", 128, 128, 1, typ)
    ds.SetGeoTransform(t.GetGeoTransform())
    ds.SetProjection(t.GetProjection())
    ds.GetRasterBand(1).WriteArray(a)
    print(name, int(((a != 0) & (a != 1)).sum()))
write("ok01", fire, gdal.GDT_Byte)
write("u255", np.where(rows & (fire == 0), 255, fire), gdal.GDT_Byte)
write("pct", np.where(rows, 37, 100) * fire, gdal.GDT_Byte)
write("prob", 0.3 * fire, gdal.GDT_Float32)
# an undeclared nodata of -9999 (Int16) on unburned pixels of every fifth row: counts as
# unburned, and the warning names it as a nodata to declare, as it names 255
write("neg", np.where(rows & (fire == 0), -9999, fire), gdal.GDT_Int16)
# burned pixels of every fifth row as +Inf and one pixel as -Inf: no declared nodata, yet left
# out as nodata (like NaN); the count by hand
inf = np.where(rows & (fire == 1), np.inf, fire)
inf[0, 0] = -np.inf
ds = gdal.GetDriverByName("GTiff").Create(f"{d}/inf.tif", 128, 128, 1, gdal.GDT_Float32)
ds.SetGeoTransform(t.GetGeoTransform())
ds.SetProjection(t.GetProjection())
ds.GetRasterBand(1).WriteArray(inf)
print("inf", int(np.isinf(inf).sum()))
PY
odd() { grep -c "warning: labels .* are neither 0 nor 1" "$1"; }
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/ok01.tif" --out "$T/ok01" "${train[@]}" >"$T/ok01.log" 2>&1
[ $? -eq 0 ] && [ "$(odd "$T/ok01.log")" -eq 0 ] && ok "labels of 0 and 1 alone: no warning" \
    || notok "labels of 0 and 1" "$(grep -m2 'warning\|error' "$T/ok01.log")"
for c in "u255:all 255.*-a_nodata 255" "pct:from 37 to 100.*-a_nodata 100" "prob:all 0.3\), and count as burned" \
    "neg:all -9999\), and count as unburned .*If -9999 marks pixels without a label, declare it the band's nodata \(gdal_edit.py -a_nodata -9999\)"; do
    l=${c%%:*} want=${c#*:}
    "$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/$l.tif" --out "$T/odd-$l" "${train[@]}" >"$T/$l.log" 2>&1
    s=$?
    [ $s -eq 0 ] && [ "$(odd "$T/$l.log")" -eq 1 ] &&
        grep -Eq "labels band 1 of $T/$l.tif: [1-9][0-9]* of the [0-9]+ labelled pixels read \(.*\) are neither 0 nor 1 \($want.*threshold them into 0 and 1" "$T/$l.log" \
        && ok "training on $l.tif: one warning (${want%%\\*})" \
        || notok "training on labels $l.tif" "status $s: $(grep -m2 'warning\|error' "$T/$l.log")"
done
if [ "$(odd "$T/prob.log")" -eq 1 ] && grep -q "a_nodata" "$T/prob.log"; then
    notok "a fraction is no nodata value" "$(grep -m1 a_nodata "$T/prob.log")"
fi
mpirun_n 2 "$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/u255.tif" --out "$T/odd-u255-2" "${train[@]}" >"$T/u255-2.log" 2>&1
for n in 1 2; do
    mpirun_n $n "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/u255.tif" >"$T/eu$n.log" 2>&1 ||
        notok "evaluate with labels u255.tif on $n rank(s)" "$(tail -2 "$T/eu$n.log")"
done
line() { grep -h "are neither 0 nor 1" "$@" | sed 's/^wildcpu\(\[rank 0\]\)\?: //'; }
[ "$(odd "$T/u255-2.log")" -eq 1 ] && [ "$(line "$T/u255-2.log")" = "$(line "$T/u255.log")" ] &&
    [ "$(odd "$T/eu1.log")" -eq 1 ] && [ "$(odd "$T/eu2.log")" -eq 1 ] && [ "$(line "$T/eu1.log")" = "$(line "$T/eu2.log")" ] &&
    line "$T/eu1.log" | grep -q "labels band 1 of $T/u255.tif: $(awk '$1 == "u255" {print $2}' "$T/odd.log") of the 16384" \
    && ok "labels u255.tif: training and evaluate warn once, the same on 1 and 2 ranks" \
    || notok "the warning on 2 ranks, and evaluate's" "$(grep -h 'neither 0 nor 1' "$T/u255.log" "$T/u255-2.log" "$T/eu1.log" "$T/eu2.log" | cut -c1-150)"
# infinite labels: left out as nodata, and said with their count (training reads the patches'
# pixels, evaluate every pixel of the grid: the hand count)
"$WILDCPU" --tiles "$T/tiles.tif" --labels "$T/inf.tif" --out "$T/odd-inf" "${train[@]}" >"$T/inf.log" 2>&1
s1=$?
mpirun_n 2 "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/inf.tif" >"$T/einf.log" 2>&1
s2=$?
n_inf=$(awk '$1 == "inf" {print $2}' "$T/odd.log")
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ "$n_inf" -gt 1 ] &&
    grep -Eq "warning: labels band 1 of $T/inf.tif: [1-9][0-9]* pixels read hold an infinite label \(\+Inf or -Inf\), which is no 0 or 1: left out as nodata" "$T/inf.log" &&
    [ "$(grep -c 'infinite label' "$T/einf.log")" -eq 1 ] &&
    grep -q "labels band 1 of $T/inf.tif: $n_inf pixels read hold an infinite label" "$T/einf.log" \
    && ok "infinite labels: left out as nodata, said once with their count (training; evaluate on 2 ranks: $n_inf)" \
    || notok "infinite labels" "status $s1 $s2: $(grep -h -m1 'infinite' "$T/inf.log" "$T/einf.log" | cut -c1-200)"
# Polygons in metres in a GeoJSON without a "crs" member (taken as WGS 84 by its standard): the
# message says the coordinates are not degrees; a layer of empty geometries says so (a probe)
cat >"$T/utm.geojson" <<'GJ'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[641500,4924000],[643000,4924000],[643000,4928500],[641500,4928500],[641500,4924000]]]}}]}
GJ
cat >"$T/empty.geojson" <<'GJ'
{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[]}},{"type":"Feature","properties":{},"geometry":null}]}
GJ
expect "polygons in metres taken as WGS 84: not degrees, name the CRS" 1 "those coordinates are not degrees: the file does not name the CRS they are in and GDAL took EPSG:4326 .*ogr2ogr -a_srs" -- \
    --tiles "$T/tiles.tif" --labels "$T/utm.geojson" --out "$T/utm" "${train[@]}"
expect "a layer of empty geometries: said so" 1 "empty.geojson \(layer empty\) has no polygons: its 2 features' geometries are empty or missing" -- \
    --tiles "$T/tiles.tif" --labels "$T/empty.geojson" --out "$T/empty" "${train[@]}"
# A GeoPackage edited in WAL mode by a program that holds it open (QGIS while a layer is being
# edited) keeps its commits in FILE-wal until a checkpoint; GDAL reads them, so a perimeter
# deleted there makes new labels (before 2026-12-06 the previous ones were reused: the derived
# raster's name hashed FILE alone)
ogr2ogr -q -f GPKG -nln fires "$T/wal.gpkg" "$T/polys.geojson"
mkdir -p "$T/walrun"
OGR_SQLITE_JOURNAL=WAL $PY - "$T" <<'PY' >"$T/waledit.log" 2>&1 &
import os, sys, time
from osgeo import ogr
d = sys.argv[1]
ds = ogr.Open(f"{d}/wal.gpkg", update=1)
layer = ds.GetLayer(0)
def delete_one():  # a committed edit, the database still open
    layer.ResetReading()
    fid = layer.GetNextFeature().GetFID()
    layer.StartTransaction(); layer.DeleteFeature(fid); layer.CommitTransaction(); ds.FlushCache()
layer.ResetReading()
layer.StartTransaction(); f = layer.GetNextFeature(); layer.SetFeature(f); layer.CommitTransaction()
ds.FlushCache()
open(f"{d}/wal.1", "w").close()
for _ in range(600):
    if os.path.exists(f"{d}/wal.go"): break
    time.sleep(0.1)
delete_one()
open(f"{d}/wal.2", "w").close()
for _ in range(600):
    if os.path.exists(f"{d}/wal.done"): break
    time.sleep(0.1)
PY
waitfor() { for _ in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }
burned() { grep -Eo '[0-9.]+% burned' "$1" | head -1; }
waitfor "$T/wal.1" && "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/wal.gpkg" --out "$T/walrun/m.json" >"$T/wal1.log" 2>&1
s1=$?
touch "$T/wal.go"
waitfor "$T/wal.2" && "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/wal.gpkg" --out "$T/walrun/m.json" >"$T/wal2.log" 2>&1
s2=$?
touch "$T/wal.done"
wait
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && grep -q "labels: rasterized the polygons of $T/wal.gpkg" "$T/wal2.log" && [ "$(burned "$T/wal1.log")" != "$(burned "$T/wal2.log")" ] \
    && ok "a GeoPackage edited in WAL mode, held open: the edit makes new labels ($(burned "$T/wal1.log"), then $(burned "$T/wal2.log"))" \
    || notok "a GeoPackage edited in WAL mode" "status $s1 $s2: $(burned "$T/wal1.log"), then $(burned "$T/wal2.log"); $(grep -hE 'error|labels:' "$T/wal1.log" "$T/wal2.log" "$T/waledit.log" | head -3 | cut -c1-200)"
# ... but a GeoPackage in WAL mode merely open in another program (QGIS showing the layer) has an
# empty FILE-wal, made at its open and removed at its close, which holds no commit: the labels
# are reused (before, every such session gave new labels and one more labels-<hash>.tif)
ogr2ogr -q -f GPKG -nln fires "$T/walview.gpkg" "$T/polys.geojson"
$PY -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA journal_mode=WAL"); c.close()' "$T/walview.gpkg"
mkdir -p "$T/walviewrun"
"$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/walview.gpkg" --out "$T/walviewrun/m.json" >"$T/walview1.log" 2>&1
s1=$?
$PY - "$T" <<'PY' >"$T/walviewer.log" 2>&1 &
import os, sys, time
from osgeo import ogr
d = sys.argv[1]
ds = ogr.Open(f"{d}/walview.gpkg")  # read-only, as a viewer: an empty walview.gpkg-wal
ds.GetLayer(0).GetFeatureCount()
open(f"{d}/walview.open", "w").close()
for _ in range(600):
    if os.path.exists(f"{d}/walview.done"): break
    time.sleep(0.1)
PY
waitfor "$T/walview.open" && [ -e "$T/walview.gpkg-wal" ] &&
    "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/walview.gpkg" --out "$T/walviewrun/m.json" >"$T/walview2.log" 2>&1
s2=$?
touch "$T/walview.done"
wait
n=$(ls "$T"/walviewrun/labels-*.tif 2>/dev/null | wc -l)
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ "$n" -eq 1 ] && ! grep -q "rasterized the polygons" "$T/walview2.log" \
    && ok "a GeoPackage in WAL mode open in a viewer (an empty -wal): the labels are reused" \
    || notok "a GeoPackage in WAL mode open in a viewer" "status $s1 $s2, $n labels files: $(grep -hE 'error|labels:' "$T/walview2.log" "$T/walviewer.log" | head -2 | cut -c1-200)"

# Polygons in longitude and latitude written latitude first (as EPSG:4326's authority order has
# it) where GeoJSON and GeoPackage put longitude first: the refusal says that swapped they would
# lie over the tiles, and how to swap them (before 2026-12-06: "not degrees" at Yellowstone's
# longitude -115, nothing at all where longitudes are within 90 degrees of Greenwich)
gdal_translate -q -a_srs EPSG:32632 "$T/tiles.tif" "$T/tiles32632.tif"
$PY - "$T" <<'PY' >"$T/swap.log" 2>&1 || notok "making swapped polygons" "$(tail -3 "$T/swap.log")"
import json, sys
from osgeo import gdal, osr
d = sys.argv[1]
for name in ("tiles", "tiles32632"):
    t = gdal.Open(f"{d}/{name}.tif")
    gt = t.GetGeoTransform()
    src = osr.SpatialReference(wkt=t.GetProjection())
    ll = osr.SpatialReference()
    ll.ImportFromEPSG(4326)
    ll.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    ct = osr.CoordinateTransformation(src, ll)
    ring = []
    for px, py in ((30, 30), (90, 30), (90, 90), (30, 90), (30, 30)):
        lon, lat, _ = ct.TransformPoint(gt[0] + px * gt[1], gt[3] + py * gt[5])
        ring.append([lat, lon])  # latitude first: the mistake
    json.dump({"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {},
               "geometry": {"type": "Polygon", "coordinates": [ring]}}]},
              open(f"{d}/swapped_{name}.geojson", "w"))
PY
ogr2ogr -q -f GPKG -nln fires "$T/swapped_tiles32632.gpkg" "$T/swapped_tiles32632.geojson"
expect "polygons written latitude first (GeoJSON, longitude -115): swapped they would lie over the tiles" 1 "no polygon of $T/swapped_tiles.geojson overlaps the tiles .*: .* in EPSG:4326; with their x and y swapped they would lie over the tiles: the file writes latitude where GDAL reads longitude .*SwapCoordinates\(geometry\) FROM swapped_tiles\\\" fixed.gpkg $T/swapped_tiles.geojson\)" -- \
    --tiles "$T/tiles.tif" --labels "$T/swapped_tiles.geojson" --out "$T/swapped" "${train[@]}"
expect "polygons written latitude first (GeoPackage, longitude 9): swapped they would lie over the tiles" 1 "no polygon of $T/swapped_tiles32632.gpkg overlaps the tiles .*: .*; with their x and y swapped they would lie over the tiles: .*SwapCoordinates\(geom\) FROM fires" -- \
    --tiles "$T/tiles32632.tif" --labels "$T/swapped_tiles32632.gpkg" --out "$T/swapped32632" "${train[@]}"
ogr2ogr -q -dialect sqlite -sql "SELECT SwapCoordinates(geom) FROM fires" "$T/unswapped.gpkg" "$T/swapped_tiles32632.gpkg"
# ... but polygons whose extent spans the tiles' region in either order (two fires far apart, none
# over the tiles) get no such hint: swapping them, as it said, led to the same refusal and hint
cat >"$T/apart.geojson" <<'GJ'
{"type": "FeatureCollection", "features": [
 {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}},
 {"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[[60, 60], [61, 60], [61, 61], [60, 61], [60, 60]]]}}]}
GJ
"$WILDCPU" --tiles "$T/tiles32632.tif" --labels "$T/apart.geojson" --out "$T/apart" "${train[@]}" >"$T/apart.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "no polygon of $T/apart.geojson overlaps the tiles" "$T/apart.log" && ! grep -q "swapped" "$T/apart.log" \
    && ok "polygons spanning the tiles' region in either order, none over them: no swap hint" \
    || notok "polygons spanning the tiles' region: no swap hint" "status $status: $(grep -m1 error "$T/apart.log" | cut -c1-400)"
expect "... and swapped as the message says, they burn" 0 "labels: rasterized the polygons of $T/unswapped.gpkg" -- \
    --tiles "$T/tiles32632.tif" --labels "$T/unswapped.gpkg" --out "$T/unswapped" "${train[@]}"
# Polygons whose CRS cannot be transformed into the tiles' are refused, not burned as if their
# coordinates were the tiles' (before 2026-12-06: site coordinates in feet burned as metres, exit
# 0, with only GDAL's warning); a GeoPackage layer written without a CRS (GDAL gives it the
# "Undefined geographic SRS" of srs_id 0, or the "Undefined Cartesian SRS" of -1) has none
ogr2ogr -q "$T/site.shp" "$T/utm.geojson" \
    -a_srs 'LOCAL_CS["site grid",UNIT["US survey foot",0.304800609601219],AXIS["Easting",EAST],AXIS["Northing",NORTH]]'
ogr2ogr -q -f GPKG -a_srs None "$T/nocrs.gpkg" "$T/utm.geojson" -nln fires
cp "$T/nocrs.gpkg" "$T/nocrs_cart.gpkg" &&
    ogrinfo -q -sql "UPDATE gpkg_geometry_columns SET srs_id = -1" "$T/nocrs_cart.gpkg" >/dev/null &&
    ogrinfo -q -sql "UPDATE gpkg_contents SET srs_id = -1" "$T/nocrs_cart.gpkg" >/dev/null
expect "polygons in a CRS PROJ cannot transform into the tiles': refused" 1 "site.shp \(layer site\) is in site grid, which PROJ cannot transform into the tiles' EPSG:[0-9]+ \($T/tiles.tif\), so its polygons cannot be placed" -- \
    --tiles "$T/tiles.tif" --labels "$T/site.shp" --out "$T/site" "${train[@]}"
expect "a GeoPackage layer without a CRS (srs_id 0): no CRS" 1 "nocrs.gpkg \(layer fires\) has no CRS \(GeoPackage's \"Undefined geographic SRS\", which names none\)" -- \
    --tiles "$T/tiles.tif" --labels "$T/nocrs.gpkg" --out "$T/nocrs" "${train[@]}"
expect "a GeoPackage layer without a CRS (srs_id -1): no CRS" 1 "nocrs_cart.gpkg \(layer fires\) has no CRS \(GeoPackage's \"Undefined Cartesian SRS\", which names none\)" -- \
    --tiles "$T/tiles.tif" --labels "$T/nocrs_cart.gpkg" --out "$T/nocrs_cart" "${train[@]}"
# A label raster in another CRS that lands on no pixel of the tiles (placed elsewhere, or a wrong
# CRS): refused when it is warped, as polygons that burn none are, naming both extents; evaluate
# says so before drawing any of its map (before 2026-12-06 only after the whole map)
gdal_translate -q -b 3 "$T/tiles.tif" "$T/fire.tif" && gdalwarp -q -t_srs EPSG:4326 "$T/fire.tif" "$T/ll.tif" &&
    gdal_translate -q -a_ullr 10 50 10.01 49.99 "$T/ll.tif" "$T/far.tif" ||
    notok "making a label raster elsewhere" "gdalwarp/gdal_translate failed"
expect "a label raster elsewhere: refused at its warp, naming both extents" 1 "the label raster $T/far.tif \(band 1\) gives no pixel of the tiles a label once reprojected onto their grid: it does not overlap them, or holds only nodata where it does \(tiles cover \(.*\) in EPSG:[0-9]+; the labels \(10, 49.99\)-\(10.01, 50\) in EPSG:4326\)" -- \
    --tiles "$T/tiles.tif" --labels "$T/far.tif" --out "$T/far" "${train[@]}"
derived_before=$(ls "$T"/labels-*.tif 2>/dev/null | wc -l)
"$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/far.tif" --out "$T/far.json" >"$T/efar.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "the label raster $T/far.tif (band 1) gives no pixel of the tiles a label" "$T/efar.log" &&
    ! grep -q 'evaluate: rows' "$T/efar.log" && [ ! -e "$T/far.json" ] && [ "$(ls "$T"/labels-*.tif 2>/dev/null | wc -l)" -eq "$derived_before" ] &&
    "$WILDCPU" evaluate --tiles "$T/tiles.tif" --checkpoint "$T/ok01" --labels "$T/ll.tif" --out "$T/ll.json" >"$T/ell.log" 2>&1 \
    && ok "evaluate against a label raster elsewhere: refused before its map, no derived labels kept; the same raster in place scores" \
    || notok "evaluate against a label raster elsewhere" "status $s: $(grep -v '^#' "$T/efar.log" | tail -3 | cut -c1-300); $(tail -2 "$T/ell.log")"
# A run that trained on a copy of the labels described 'Fire' (a feature before 2026-12-07: the
# checkpoint below is one such, forged from a run on 'Fire2' by renaming it in the fingerprint
# and the features) cannot be resumed, its network holding one input more: the rerun said only
# "it holds 14 parameters in 2 tensors, this run's network has 13 in 2" for the same command
$PY - "$SAMPLE" "$T/fire2.vrt" "$T/firecopy.vrt" <<'PY' || notok "VRTs with a 'Fire' copy of the labels"
import sys
from osgeo import gdal
d = gdal.Open(sys.argv[1])
n = d.RasterCount
fire = [b for b in range(1, n + 1) if d.GetRasterBand(b).GetDescription() == "fire"][0]
for out, desc in ((sys.argv[2], "Fire2"), (sys.argv[3], "Fire")):
    v = gdal.Translate(out, d, format="VRT", bandList=list(range(1, n + 1)) + [fire])
    v.GetRasterBand(n + 1).SetDescription(desc)
    v = None
PY
oldfire=(--model logistic --patch 32 --batch 8 --steps 4 --ckpt-every 2 --no-predict)
"$WILDCPU" --tiles "$T/fire2.vrt" "${oldfire[@]}" --out "$T/oldfire" >"$T/oldfire0.log" 2>&1
rm -f "$T/oldfire/checkpoints/best.wcp" "$T/oldfire/checkpoints/ckpt-00000002.wcp"
f=$T/oldfire/checkpoints/ckpt-00000004.wcp
text() { $PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import wcp
print(wcp.section(wcp.read(sys.argv[2]), sys.argv[3])[1].decode().replace("Fire2", "Fire"))' "$ROOT/tests" "$f" "$1"; }
$PY "$ROOT/tests/wcp.py" edit "$f" "$f" "text=fingerprint:$(text fingerprint)" "text=features:$(text features)"
"$WILDCPU" --tiles "$T/firecopy.vrt" "${oldfire[@]}" --out "$T/oldfire" >"$T/oldfire.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "ckpt-00000004.wcp is not usable: its input 'Fire' is no feature of this run, on the same bands and settings: the wildcpu that wrote it chose the features otherwise .*rerun with --fresh" "$T/oldfire.log" \
    && ok "a checkpoint that fed a 'Fire' copy of the labels as a feature: the rerun names the input, not only the parameter counts" \
    || notok "a checkpoint with a 'Fire' input, resumed" "status $s: $(grep -E 'usable|error' "$T/oldfire.log" | head -2 | cut -c1-300)"
finish
