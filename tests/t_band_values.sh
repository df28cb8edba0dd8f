#!/usr/bin/env bash
# t_band_values.sh: what a band's pixels stand for, beyond the stored numbers.
#
# Packed bands (GDAL scale and offset: netCDF's scale_factor/add_offset, a GeoTIFF's scale and
# offset) are read as the values they stand for. The sample region is written twice as Int32
# bands packed two ways (scale 2^-8; scale 2^-9 with offset 100), both exact, and:
#   - training on a packed copy gives the weights of training on the unpacked sample, bitwise;
#   - a model's map of one packing equals its map of the other, bitwise (stored values differ);
#   - a checkpoint of a version that normalized stored values (no band_values=unpacked in its
#     meta) is refused for packed bands, and still accepted for unpacked ones;
#   - a scale that cannot unpack (0) is refused, naming the band.
# Masks (GDAL's mask band: an internal per-dataset mask, no nodata value; an alpha band, also
# of a 14-band raster) hide pixels as nodata does: a copy whose hidden pixels hold garbage
# behind a mask trains and maps bitwise like a copy with nodata there. A Float32 nodata value no
# float equals still marks its pixels, also where the bands are read as Float64 (beside an alpha
# band) and a VRT fills them with the declared value. Long band descriptions alike at the start stay apart. A
# mosaic missing a tile, without nodata, is refused.
# Every case fails on the code before each was handled.
. "$(dirname "$0")/lib.sh"

# pack SCALE_LOG2 OFFSET OUT: every band of the sample as Int32, stored = (value - OFFSET) / 2^s
pack() {
    $PY - "$SAMPLE" "$1" "$2" "$3" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
src, slog2, offset, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ds = gdal.Open(src)
dst = gdal.GetDriverByName("GTiff").Create(out, ds.RasterXSize, ds.RasterYSize, ds.RasterCount,
                                           gdal.GDT_Int32, ["COMPRESS=DEFLATE", "TILED=YES"])
dst.SetGeoTransform(ds.GetGeoTransform())
dst.SetProjection(ds.GetProjection())
for i in range(1, ds.RasterCount + 1):
    b, o = ds.GetRasterBand(i), dst.GetRasterBand(i)
    v, nd = b.ReadAsArray().astype(np.float64), b.GetNoDataValue()
    o.SetDescription(b.GetDescription())
    o.SetNoDataValue(-2 ** 31)  # a GeoTIFF has one nodata value for all its bands
    if b.GetDescription() in ("fire", "elevation"):  # the label (0 or 1), whole metres: unpacked
        o.WriteArray(np.where(v == nd, -2 ** 31, v).astype(np.int32))
        continue
    stored = (v - offset) * 2.0 ** -slog2
    assert np.all(stored[v != nd] == np.round(stored[v != nd])), "not exact"
    stored[v == nd] = -2 ** 31
    o.WriteArray(stored.astype(np.int32))
    o.SetScale(2.0 ** slog2)
    o.SetOffset(offset)
dst = None
EOF
}
pack -8 0 "$T/a.tif" && pack -9 100 "$T/b.tif"
if [ -f "$T/a.tif" ] && [ -f "$T/b.tif" ] &&
    gdalinfo "$T/b.tif" | grep -q 'Offset: 100,.*Scale:0.001953125'; then
    ok "two packings of the sample written (gdalinfo shows scale and offset)"
else
    notok "packed copies of the sample"
    finish
fi

# Training: the same values, so the same weights, whatever the bands' storage
# (turned samples: the wind and aspect vectors turn, which only their values can do)
train=(--steps 3 --batch 4 --micro-batch 2 --patch 32 --no-predict --val-fraction 0 --rotate 30)
"$WILDCPU" --tiles "$SAMPLE" --out "$T/plain" "${train[@]}" >"$T/plain.log" 2>&1
"$WILDCPU" --tiles "$T/b.tif" --out "$T/packed" "${train[@]}" >"$T/packed.log" 2>&1
newest() { ls "$1/checkpoints"/ckpt-*.wcp | tail -1; }
dp=$(digest "$(newest "$T/plain")") da=$(digest "$(newest "$T/packed")")
if [ -n "$dp" ] && [ "$dp" = "$da" ]; then
    ok "training (--rotate 30) on packed Int32 bands gives the weights of the unpacked sample, bitwise ($da)"
else
    notok "training on packed bands" "digests '$dp' and '$da'; $(grep -i error "$T/packed.log" | head -2)"
fi

# Prediction: one model, two packings, one map
mpirun_n 2 "$WILDCPU" predict --tiles "$T/a.tif" --checkpoint "$T/packed" --out "$T/map_a.tif" >"$T/pa.log" 2>&1
"$WILDCPU" predict --tiles "$T/b.tif" --checkpoint "$T/packed" --out "$T/map_b.tif" >"$T/pb.log" 2>&1
pixels() { gdal_translate -q -of ENVI "$1" "$2"; }
# alike NAME REF TILES: training on TILES (2 steps) keeps the patches, validation and weights of
# training on REF, and a model of REF maps TILES as it maps REF, bitwise (logs, maps: $T/alike_NAME.*)
alike() {
    local n=$1 ref=$2 tiles=$3
    local train=(--steps 2 --batch 4 --micro-batch 2 --patch 32 --no-predict --val-fraction 0.3)
    "$WILDCPU" --tiles "$ref" --out "$T/alike_$n.ref" "${train[@]}" >"$T/alike_$n.ref.log" 2>&1
    "$WILDCPU" --tiles "$tiles" --out "$T/alike_$n.run" "${train[@]}" >"$T/alike_$n.log" 2>&1
    "$WILDCPU" predict --tiles "$ref" --checkpoint "$T/alike_$n.ref" --out "$T/alike_$n.ref.tif" >>"$T/alike_$n.ref.log" 2>&1
    "$WILDCPU" predict --tiles "$tiles" --checkpoint "$T/alike_$n.ref" --out "$T/alike_$n.tif" >>"$T/alike_$n.log" 2>&1
    local d
    d=$(digest "$(newest "$T/alike_$n.ref")")
    [ -n "$d" ] && [ "$d" = "$(digest "$(newest "$T/alike_$n.run")")" ] &&
        cmp -s <(grep -E '^(patches|validation)' "$T/alike_$n.ref.log") <(grep -E '^(patches|validation)' "$T/alike_$n.log") &&
        pixels "$T/alike_$n.ref.tif" "$T/alike_$n.ref.raw" && pixels "$T/alike_$n.tif" "$T/alike_$n.raw" && cmp -s "$T/alike_$n.ref.raw" "$T/alike_$n.raw"
}
if pixels "$T/map_a.tif" "$T/a.raw" && pixels "$T/map_b.tif" "$T/b.raw" && cmp -s "$T/a.raw" "$T/b.raw" &&
    [ "$(stat -c %s "$T/a.raw")" -eq $((512 * 512 * 4)) ]; then
    ok "a model's maps of two packings (2 ranks, 1 rank) are bitwise equal"
else
    notok "maps of two packings" "$(cmp "$T/a.raw" "$T/b.raw" 2>&1 | head -1); $(grep -i error "$T/pb.log" | head -2)"
fi

# A checkpoint of an earlier version: its meta lacks band_values=unpacked
unmark() { # unmark RUN OUT: RUN's newest checkpoint as an earlier version wrote it
    $PY - "$ROOT/tests" "$(newest "$1")" "$2" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import wcp
ck = wcp.read(sys.argv[2])
meta = wcp.section(ck, "meta")
assert b";band_values=unpacked" in meta[1], meta[1]
meta[1] = meta[1].replace(b";band_values=unpacked", b"")
wcp.write(ck, sys.argv[3])
EOF
}
unmark "$T/packed" "$T/old.wcp"
unmark "$T/plain" "$T/old_plain.wcp"
if [ -f "$T/old.wcp" ]; then
    "$WILDCPU" predict --tiles "$T/a.tif" --checkpoint "$T/old.wcp" --out "$T/old_a.tif" >"$T/oa.log" 2>&1
    st=$?
    if [ $st -eq 1 ] && grep -q "a.tif, band 2 (slope) is packed (scale 0.00390625, offset 0).*without unpacking" "$T/oa.log" &&
        [ ! -e "$T/old_a.tif" ]; then
        ok "an earlier version's checkpoint is refused for packed bands (status 1, the band named)"
    else
        notok "an earlier checkpoint and packed bands" "status $st: $(grep -i error "$T/oa.log" | head -2)"
    fi
    check "an earlier version's checkpoint still predicts unpacked bands" \
        "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/old_plain.wcp" --out "$T/old_plain.tif"
else
    notok "a checkpoint without band_values=unpacked" "wcp.py could not write it"
fi

# Masks: the same pixels hidden by nodata (n.tif) and by a mask over garbage (m.tif, no nodata)
$PY - "$T/a.tif" "$T/n.tif" "$T/m.tif" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "YES")
src = gdal.Open(sys.argv[1])
nd = -2 ** 31
hidden = np.zeros((src.RasterYSize, src.RasterXSize), bool)
hidden[100:180, 300:420] = True  # a cloud, say
for i in range(1, src.RasterCount + 1):
    hidden |= src.GetRasterBand(i).ReadAsArray() == nd
drv = gdal.GetDriverByName("GTiff")
n = drv.CreateCopy(sys.argv[2], src)
m = drv.CreateCopy(sys.argv[3], src)
m.CreateMaskBand(gdal.GMF_PER_DATASET)
for i in range(1, src.RasterCount + 1):
    v = src.GetRasterBand(i).ReadAsArray()
    n.GetRasterBand(i).WriteArray(np.where(hidden, nd, v))
    mb = m.GetRasterBand(i)
    mb.DeleteNoDataValue()
    mb.WriteArray(np.where(hidden, 12345 * i, v))  # garbage, burned labels included
m.GetRasterBand(1).GetMaskBand().WriteArray(np.where(hidden, 0, 255).astype(np.uint8))
n = m = None
EOF
if gdalinfo "$T/m.tif" | grep -q 'Mask Flags: PER_DATASET' && ! gdalinfo "$T/m.tif" | grep -q 'NoData'; then
    ok "a copy of the sample with a per-dataset mask and no nodata value written"
else
    notok "the masked copy" "$(gdalinfo "$T/m.tif" | grep -E 'Mask|NoData' | head -3)"
fi
mtrain=(--steps 3 --batch 4 --micro-batch 2 --patch 32 --no-predict --val-fraction 0.3 --rotate 30)
"$WILDCPU" --tiles "$T/n.tif" --out "$T/nrun" "${mtrain[@]}" >"$T/nrun.log" 2>&1
"$WILDCPU" --tiles "$T/m.tif" --out "$T/mrun" "${mtrain[@]}" >"$T/mrun.log" 2>&1
dn=$(digest "$(newest "$T/nrun")") dm=$(digest "$(newest "$T/mrun")")
if [ -n "$dn" ] && [ "$dn" = "$dm" ] && [ -n "$(grep '^patches: ' "$T/mrun.log")" ] && cmp -s <(grep -E '^(patches|validation)' "$T/nrun.log") <(grep -E '^(patches|validation)' "$T/mrun.log"); then
    ok "training behind a mask: the patches kept, the validation and the weights of training with nodata there, bitwise ($dm)"
else
    notok "training behind a mask" "digests '$dn' and '$dm'; $(grep -i error "$T/mrun.log" | head -2)"
fi
mpirun_n 2 "$WILDCPU" predict --tiles "$T/m.tif" --checkpoint "$T/nrun" --out "$T/map_m.tif" >"$T/pm.log" 2>&1
"$WILDCPU" predict --tiles "$T/n.tif" --checkpoint "$T/nrun" --out "$T/map_n.tif" >"$T/pn.log" 2>&1
nodata_at() { gdallocationinfo -valonly "$1" 350 140; }
if pixels "$T/map_m.tif" "$T/m.raw" && pixels "$T/map_n.tif" "$T/n.raw" && cmp -s "$T/m.raw" "$T/n.raw" &&
    [ "$(nodata_at "$T/map_m.tif")" = "-9999" ]; then
    ok "the map behind a mask is the map with nodata there, bitwise (nodata under the mask)"
else
    notok "the map behind a mask" "$(cmp "$T/m.raw" "$T/n.raw" 2>&1 | head -1); at (350,140): $(nodata_at "$T/map_m.tif"); $(grep -i error "$T/pm.log" | head -2)"
fi
unmark "$T/mrun" "$T/old_masked.wcp"
"$WILDCPU" predict --tiles "$T/m.tif" --checkpoint "$T/old_masked.wcp" --out "$T/old_m.tif" >"$T/om.log" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "m.tif, band 1 (elevation) has a mask, and .*old_masked.wcp was written by a wildcpu that read masked pixels as data" "$T/om.log"; then
    ok "an earlier version's checkpoint is refused for masked bands too"
else
    notok "an earlier checkpoint and masked bands" "status $st: $(grep -m1 error "$T/om.log")"
fi
"$WILDCPU" evaluate --tiles "$T/m.tif" --checkpoint "$T/nrun" --out "$T/em.json" >"$T/em.log" 2>&1
"$WILDCPU" evaluate --tiles "$T/n.tif" --checkpoint "$T/nrun" --out "$T/en.json" >"$T/en.log" 2>&1
if [ -s "$T/em.json" ] && [ "$(json "$T/em.json" auc_pr)" = "$(json "$T/en.json" auc_pr)" ] &&
    [ "$(json "$T/em.json" pixels)" = "$(json "$T/en.json" pixels)" ]; then
    ok "evaluate behind a mask scores the pixels and AUC-PR of nodata there ($(json "$T/em.json" pixels) px)"
else
    notok "evaluate behind a mask" "$(grep -i error "$T/em.log" | head -2)"
fi

# ... and beside an alpha band (all opaque): GDAL's mask still hides its pixels, the alpha does
# not replace it (a probe: with an alpha band the mask was ignored, its garbage trained on)
$PY - "$T/m.tif" "$T/ma.tif" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "YES")
m = gdal.Open(sys.argv[1])
n = m.RasterCount
kind = m.GetRasterBand(1).DataType  # the packed copy's Int32, its scale and offset kept
a = gdal.GetDriverByName("GTiff").Create(sys.argv[2], m.RasterXSize, m.RasterYSize, n + 1, kind)
a.SetGeoTransform(m.GetGeoTransform()); a.SetProjection(m.GetProjection())
for i in range(1, n + 1):
    s, d = m.GetRasterBand(i), a.GetRasterBand(i)
    d.WriteArray(s.ReadAsArray()); d.SetDescription(s.GetDescription()); d.SetUnitType(s.GetUnitType() or "")
    d.SetScale(s.GetScale() if s.GetScale() is not None else 1.0)
    d.SetOffset(s.GetOffset() if s.GetOffset() is not None else 0.0)
a.GetRasterBand(n + 1).WriteArray(np.full((m.RasterYSize, m.RasterXSize), 255))
a.GetRasterBand(n + 1).SetColorInterpretation(gdal.GCI_AlphaBand)
a.CreateMaskBand(gdal.GMF_PER_DATASET)
a.GetRasterBand(1).GetMaskBand().WriteArray(m.GetRasterBand(1).GetMaskBand().ReadAsArray())
a = m = None
EOF
"$WILDCPU" --tiles "$T/ma.tif" --out "$T/marun" "${mtrain[@]}" >"$T/marun.log" 2>&1
da=$(digest "$(newest "$T/marun")")
if [ -n "$da" ] && [ "$da" = "$dn" ] && cmp -s <(grep -E '^(patches|validation)' "$T/nrun.log") <(grep -E '^(patches|validation)' "$T/marun.log"); then
    ok "a mask beside an alpha band: both hide pixels; training is that with nodata there, bitwise ($da)"
else
    notok "a mask beside an alpha band" "digests '$dn' and '$da'; $(grep -E -i 'error|^patches' "$T/marun.log" | head -2)"
fi

# A Float32 nodata value no float equals (-9999.9; .flt/.bil headers write -3.40282e+38): the
# pixels holding the float nearest it are nodata, as GDAL takes them
$PY - "$SAMPLE" "$T/f_ok.tif" "$T/f_odd.tif" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
for out, nd in ((sys.argv[2], -9999.0), (sys.argv[3], -9999.9)):
    d = gdal.GetDriverByName("GTiff").Create(out, src.RasterXSize, src.RasterYSize, src.RasterCount, gdal.GDT_Float32)
    d.SetGeoTransform(src.GetGeoTransform())
    d.SetProjection(src.GetProjection())
    for i in range(1, src.RasterCount + 1):
        b = src.GetRasterBand(i)
        v = b.ReadAsArray().astype(np.float64)
        o = d.GetRasterBand(i)
        o.SetDescription(b.GetDescription())
        o.SetNoDataValue(nd)
        o.WriteArray(np.where(v == b.GetNoDataValue(), nd, v).astype(np.float32))
    d = None
EOF
# (GDAL's GeoTIFF driver rounds the value itself: a VRT, as hand-written ones are, keeps it)
gdal_translate -q -of VRT "$T/f_odd.tif" "$T/f_odd.vrt"
sed -i 's|<NoDataValue>[^<]*</NoDataValue>|<NoDataValue>-9999.9</NoDataValue>|' "$T/f_odd.vrt"
if [ "$(grep -c '<NoDataValue>-9999.9</NoDataValue>' "$T/f_odd.vrt")" -ne 13 ]; then notok "a VRT with nodata -9999.9"; fi
if alike odd "$T/f_ok.tif" "$T/f_odd.vrt"; then
    ok "Float32 nodata -9999.9 (no float equals it) marks the pixels GDAL masks: training and map as with -9999"
else
    notok "Float32 nodata -9999.9" "$(grep -E '^patches|% nodata' "$T/alike_odd.ref.log" "$T/alike_odd.log")"
fi

# An alpha band (gdalwarp -dstalpha writes one: 0 in the collar) masks the other bands whatever
# their number (GDAL applies it to 2- and 4-band rasters only), and is no feature
$PY - "$T/f_ok.tif" "$T/alpha.tif" "$T/alpha_ref.tif" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
n, W, H = src.RasterCount, src.RasterXSize, src.RasterYSize
collar = np.zeros((H, W), bool)
collar[:, :90] = True  # the west edge, as a warp leaves it
collar[400:, :] = True
drv = gdal.GetDriverByName("GTiff")
a = drv.Create(sys.argv[2], W, H, n + 1, gdal.GDT_Float32)
ref = drv.Create(sys.argv[3], W, H, n, gdal.GDT_Float32)
for d in (a, ref):
    d.SetGeoTransform(src.GetGeoTransform())
    d.SetProjection(src.GetProjection())
for i in range(1, n + 1):
    b = src.GetRasterBand(i)
    v = b.ReadAsArray()
    for d, fill in ((a, 0.0), (ref, -9999.0)):  # the collar: zeros behind the alpha, nodata
        o = d.GetRasterBand(i)
        o.SetDescription(b.GetDescription())
        o.SetNoDataValue(-9999.0)
        o.WriteArray(np.where(collar, fill, v))
alpha = a.GetRasterBand(n + 1)
alpha.SetDescription("alpha")
alpha.SetColorInterpretation(gdal.GCI_AlphaBand)
alpha.WriteArray(np.where(collar, 0, 255).astype(np.float32))
a = ref = None
EOF
if [ "$(gdalinfo "$T/alpha.tif" | grep -c 'ColorInterp=Alpha')" -eq 1 ] && gdalinfo "$T/alpha.tif" | grep -A1 '^Band 14' | grep -q 'ColorInterp=Alpha'; then
    if alike alpha "$T/alpha_ref.tif" "$T/alpha.tif" &&
        grep -q "band 14 'alpha' is the alpha band: the mask of the other bands, not a feature" "$T/alike_alpha.log"; then
        ok "an alpha band (14 bands) masks the others and is no feature: training and map as with nodata in the collar"
    else
        notok "the alpha band" "$(grep -E '^patches' "$T/alike_alpha.ref.log" "$T/alike_alpha.log"); $(grep -m1 -i error "$T/alike_alpha.log")"
    fi
else
    notok "a 14-band GeoTIFF with an alpha band" "$(gdalinfo "$T/alpha.tif" | grep ColorInterp | tail -2)"
fi

# A mosaic missing a tile, its bands without nodata: GDAL reads the hole as 0, which would be
# taken for data; refused, naming the raster, the share and the band. With every tile: accepted.
for q in "0 0" "256 0" "0 256" "256 256"; do
    set -- $q
    gdal_translate -q -a_nodata none -srcwin "$1" "$2" 256 256 "$T/f_ok.tif" "$T/q_$1_$2.tif"
done
gdalbuildvrt -q "$T/whole.vrt" "$T"/q_*.tif
gdalbuildvrt -q -te 640000 4914640 655360 4930000 "$T/holed.vrt" "$T/q_0_0.tif" "$T/q_256_0.tif" "$T/q_0_256.tif"
$PY -c 'import sys; from osgeo import gdal  # gdalbuildvrt leaves the descriptions behind
src = gdal.Open(sys.argv[1])
for v in sys.argv[2:]:
    d = gdal.Open(v, gdal.GA_Update)
    for i in range(1, src.RasterCount + 1): d.GetRasterBand(i).SetDescription(src.GetRasterBand(i).GetDescription())
    d = None' "$T/f_ok.tif" "$T/whole.vrt" "$T/holed.vrt"
"$WILDCPU" --tiles "$T/holed.vrt" --out "$T/holed" --steps 1 --batch 4 --micro-batch 2 --patch 32 --no-predict >"$T/holed.log" 2>&1
st=$?
"$WILDCPU" predict --tiles "$T/holed.vrt" --checkpoint "$T/alike_odd.ref" --out "$T/holed.tif" >"$T/pholed.log" 2>&1
st2=$?
"$WILDCPU" predict --tiles "$T/whole.vrt" --checkpoint "$T/alike_odd.ref" --out "$T/whole.tif" >"$T/pwhole.log" 2>&1
st3=$?
want="holed.vrt: 25% of its extent has no source (a tile missing from the mosaic?) and band 1 (elevation) has no nodata value"
if [ $st -eq 1 ] && [ $st2 -eq 1 ] && grep -q "$want" "$T/holed.log" && grep -q "$want" "$T/pholed.log" &&
    [ ! -e "$T/holed.tif" ] && [ $st3 -eq 0 ]; then
    ok "a mosaic missing a tile, without nodata, is refused by training and predict (the whole mosaic maps)"
else
    notok "a mosaic with a hole" "statuses $st $st2 $st3; $(grep -m1 error "$T/holed.log" "$T/pwhole.log")"
fi

# Band descriptions longer than a name holds (63 bytes): two alike in their first 63 bytes stay
# two names, so a model never takes one band for the other
long=sentinel2_l2a_normalized_difference_vegetation_index_median_composite
desc() { # desc IN OUT TEXT: a VRT of IN whose band 5 is described TEXT
    gdal_translate -q -of VRT "$1" "$2"
    $PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); d.GetRasterBand(5).SetDescription(sys.argv[2]); d = None' "$2" "$3"
}
desc "$SAMPLE" "$T/summer.vrt" "${long}_summer"
desc "$SAMPLE" "$T/winter.vrt" "${long}_winter"
"$WILDCPU" --tiles "$T/summer.vrt" --out "$T/long" --model logistic --steps 1 --batch 4 --micro-batch 2 --patch 32 --no-predict >"$T/long.log" 2>&1
"$WILDCPU" predict --tiles "$T/winter.vrt" --checkpoint "$T/long" --out "$T/winter.tif" >"$T/lw.log" 2>&1
st=$?
"$WILDCPU" predict --tiles "$T/summer.vrt" --checkpoint "$T/long" --out "$T/summer.tif" >"$T/ls.log" 2>&1
st2=$?
if [ $st -eq 1 ] && grep -q "sentinel2_l2a_normalized_difference_vegetation~[0-9a-f]\{16\}" "$T/lw.log" && [ ! -e "$T/winter.tif" ] && [ $st2 -eq 0 ]; then
    ok "long band descriptions alike in their first 63 bytes are two names: the other season is refused, the same one maps"
else
    notok "long band descriptions" "statuses $st $st2; $(grep -m1 error "$T/lw.log" "$T/long.log")"
fi

# Control bytes in a description (DEL, a tab) read as '_': the checkpoints that hold the name
# read back (a DEL went through to them, and every checkpoint of the run was refused: no map,
# no resume), so the run maps and a rerun resumes
desc "$SAMPLE" "$T/del.vrt" $'ndvi\x7f\tx'
delrun=(--tiles "$T/del.vrt" --out "$T/del" --model logistic --steps 2 --batch 4 --micro-batch 2 --patch 32)
"$WILDCPU" "${delrun[@]}" >"$T/del.log" 2>&1
st=$?
"$WILDCPU" "${delrun[@]}" >"$T/del2.log" 2>&1
st2=$?
if [ $st -eq 0 ] && [ -f "$T/del/risk.tif" ] && [ $st2 -eq 0 ] && grep -q "resuming from" "$T/del2.log" &&
    "$WILDCPU" info "$T/del/checkpoints/ckpt-00000002.wcp" | grep -q "ndvi__x"; then
    ok "control bytes (DEL, tab) in a band description read as '_': the run maps and resumes"
else
    notok "control bytes in a description" "statuses $st $st2: $(grep -m2 error "$T/del.log" "$T/del2.log")"
fi

# A scale that cannot unpack
cp "$T/b.tif" "$T/zero.tif"
$PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); d.GetRasterBand(5).SetScale(0.0); d = None' "$T/zero.tif"
"$WILDCPU" predict --tiles "$T/zero.tif" --checkpoint "$T/packed" --out "$T/zero_map.tif" >"$T/z.log" 2>&1
st=$?
if [ $st -ne 0 ] && [ $st -ne 75 ] && grep -q "zero.tif, band 5 (ndvi): scale 0 and offset 100 cannot unpack" "$T/z.log" &&
    [ ! -e "$T/zero_map.tif" ]; then
    ok "a band with scale 0 is refused (status $st), named with its file and number"
else
    notok "scale 0" "status $st: $(head -3 "$T/z.log")"
fi

# A Float32 nodata value no float equals (-9999.9), on bands read as Float64 (an alpha band
# beside them, gdalbuildvrt -addalpha): the tiles' pixels read as the float nearest it, but the
# VRT fills its own nodata pixels with the declared double; both are nodata, in training and
# in the map
mkdir -p "$T/f9"
$PY - "$T/f9" <<'PYEOF'
import sys
import numpy as np
from osgeo import gdal
rng = np.random.default_rng(1)
for i in range(2):
    d = gdal.GetDriverByName("GTiff").Create(f"{sys.argv[1]}/tile_{i}.tif", 128, 256, 3, gdal.GDT_Float32)
    d.SetGeoTransform((500000 + 30 * 128 * i, 30, 0, 4000000, 0, -30)); d.SetProjection("EPSG:32611")
    for k, name in enumerate(["precip", "temp", "fire"]):
        a = rng.normal(50, 10, (256, 128)).astype(np.float32) if name != "fire" else (rng.random((256, 128)) < 0.1).astype(np.float32)
        a[100:140, 40:90] = np.float32(-9999.9)
        d.GetRasterBand(k + 1).WriteArray(a); d.GetRasterBand(k + 1).SetDescription(name)
    d = None
PYEOF
gdalbuildvrt -q -addalpha -srcnodata -9999.9 -vrtnodata -9999.9 "$T/f9/tiles.vrt" "$T/f9/tile_0.tif" "$T/f9/tile_1.tif"
$PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update)
for i, n in enumerate(["precip", "temp", "fire"]): d.GetRasterBand(i + 1).SetDescription(n)
d = None' "$T/f9/tiles.vrt"
"$WILDCPU" --tiles "$T/f9/tiles.vrt" --out "$T/f9/run" --steps 2 --batch 4 --patch 32 --val-block 64 >"$T/f9.log" 2>&1
st=$?
mapped=$($PY -c 'import sys; from osgeo import gdal
r = gdal.Open(sys.argv[1]).ReadAsArray()
print(int((r[100:140, 40:90] != -9999).sum() + (r[100:140, 168:218] != -9999).sum()))' "$T/f9/run/risk.tif" 2>/dev/null)
[ $st -eq 0 ] && [ "$mapped" = 0 ] && grep -q "47 kept; .* 10.00% of training pixels burned" "$T/f9.log" \
    && ok "Float32 nodata -9999.9 read as Float64 beside an alpha band: no pixel of it trained on or mapped" \
    || notok "Float32 nodata -9999.9 read as Float64" "status $st, $mapped nodata pixels mapped: $(grep -E 'patches:|warn' "$T/f9.log" | head -2)"
# a Float64 band that varies far below float's resolution (a standard deviation of 0.2 about
# 1e12: 2^-42 of its mean, which the margin of 2^-40 took for constant) is a feature,
# normalized in double, not a constant band fed as 0
mkdir -p "$T/f64"
$PY - "$T/f64/tiles.tif" <<'PYEOF'
import sys
import numpy as np
from osgeo import gdal
rng = np.random.default_rng(2)
d = gdal.GetDriverByName("GTiff").Create(sys.argv[1], 128, 128, 3, gdal.GDT_Float64)
d.SetGeoTransform((500000, 30, 0, 4000000, 0, -30)); d.SetProjection("EPSG:32611")
for k, (name, a) in enumerate([("elev", 1e12 + rng.normal(0, 0.2, (128, 128))),
                               ("temp", rng.normal(20, 5, (128, 128))),
                               ("fire", (rng.random((128, 128)) < 0.1).astype(np.float64))]):
    d.GetRasterBand(k + 1).WriteArray(a); d.GetRasterBand(k + 1).SetDescription(name)
d = None
PYEOF
"$WILDCPU" --tiles "$T/f64/tiles.tif" --out "$T/f64/run" --model logistic --steps 2 --batch 4 --patch 32 --val-block 64 --no-predict >"$T/f64.log" 2>&1
st=$?
std=$("$WILDCPU" export --checkpoint "$T/f64/run/checkpoints/ckpt-00000002.wcp" --out "$T/f64/w.safetensors" >/dev/null 2>&1 &&
      $PY -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
c = json.loads(json.loads(f.read(n))["__metadata__"]["wildcpu"])["input_channels"][0]
print("%.3f" % c["std"], c.get("constant", False))' "$T/f64/w.safetensors")
[ $st -eq 0 ] && ! grep -q "constant over the training pixels" "$T/f64.log" && [ "${std#* }" = False ] &&
    awk -v s="${std% *}" 'BEGIN { exit !(s > 0.18 && s < 0.22) }' \
    && ok "a Float64 band of 1e12 +- 0.2 is a feature (std $std), not a constant band" \
    || notok "a Float64 band varying about 1e12" "status $st, std '$std': $(grep constant "$T/f64.log" | head -1)"
finish
