#!/usr/bin/env bash
# t_sources.sh: inputs read as GDAL defines them, and mosaics whose sources changed under them.
#
# On a 256x256 synth region (one tile), cut and rewritten with GDAL's tools:
#   - a Float32 EHdr .flt whose header nodata is -3.4028235e+38 (just beyond the largest float,
#     as .flt/.bil headers write it) marks its -FLT_MAX pixels: no warning of values of 1e+30;
#   - a NODATA_VALUES per-dataset mask (all bands at their values at once) is read through
#     GDAL's mask: the map's nodata pixels are exactly those GDAL's mask band marks 0;
#   - a nested VRT with a hole (a mosaic of mosaics), its bands without nodata, is refused,
#     naming the inner VRT; the flat mosaic of every tile trains;
#   - a source smaller than the rectangle the VRT reads of it is refused where a band has no
#     nodata value, and warned about where the bands have one;
#   - a source its own georeferencing puts 2 pixels from where the VRT places it is warned about,
#     also when it writes the same CRS in other words (an .img source);
#   - a source packed otherwise (scale, offset) than the mosaic's band reads is warned about;
#     a mosaic whose <Scale> gdalbuildvrt wrote with 16 digits, the last bit off, is not;
#   - bands that hide their nodata (gdalbuildvrt -hidenodata) are warned about, naming
#     HideNoDataValue; the same mosaic without -hidenodata is not.
#   - a mosaic of GeoPackage subdatasets (GPKG:file:table sources, as the Yellowstone data) trains;
#     over a GeoPackage that is gone it is refused at start.
#   - a gdalbuildvrt mosaic whose first tile declares no nodata (so its bands have none) over a
#     tile that does: GDAL reads that tile's nodata pixels as 0, labels as unburned; refused,
#     naming the fix, which then trains; the tiles the other way round train; a SimpleSource
#     over a tile whose declared nodata differs from the band's is warned about (a probe).
# Every case fails on the code before each was handled (8cb6aa9~1).
. "$(dirname "$0")/lib.sh"

tiny=(--steps 2 --batch 4 --val-block 64 --model logistic --no-predict)
# train NAME ARGS...: a tiny training run, its output in $T/NAME.log; returns its status
train() {
    local n=$1
    shift
    "$WILDCPU" --out "$T/run_$n" "${tiny[@]}" "$@" >"$T/$n.log" 2>&1
}
first_msg() { grep -m2 -E 'warning|error' "$@" | cut -c1-300; }

"$WILDCPU" synth --out "$T/syn" --size 256 >"$T/synth.log" 2>&1
SYN=$T/syn/tiles.vrt
if [ ! -f "$SYN" ]; then
    notok "synth --size 256" "$(tail -2 "$T/synth.log")"
    finish
fi

# 1. A .flt whose header says NODATA -3.4028235e+38: GDAL marks the float nearest it, -FLT_MAX
gdal_translate -q -of VRT -b 2 "$SYN" "$T/s.vrt"
gdalwarp -q -dstnodata -3.4028234663852886e+38 -of EHdr "$T/s.vrt" "$T/slope.flt"
gdal_translate -q -b 13 -a_nodata none "$SYN" "$T/lab.tif"
at_max=$($PY -c 'import sys, numpy as np; from osgeo import gdal
print(int((gdal.Open(sys.argv[1]).ReadAsArray() == -np.finfo(np.float32).max).sum()))' "$T/slope.flt" 2>/dev/null)
train flt --tiles "$T/slope.flt" --labels "$T/lab.tif"
st=$?
if grep -q '^NODATA *-3.4028235e+38' "$T/slope.hdr" && [ "${at_max:-0}" -gt 0 ] && [ $st -eq 0 ] &&
    ! grep -qE 'undeclared nodata|1e\+30 or more' "$T/flt.log"; then
    ok "a .flt with header nodata -3.4028235e+38 marks its $at_max -FLT_MAX pixels: trains without an undeclared-nodata warning"
else
    notok "a .flt with header nodata -3.4028235e+38" "status $st, $at_max pixels at -FLT_MAX, header '$(grep NODATA "$T/slope.hdr")': $(first_msg "$T/flt.log")"
fi

# 2. NODATA_VALUES: a per-dataset mask, a pixel nodata where every band is at its value
gdal_translate -q -ot Float32 $(for b in $(seq 2 13); do echo -b "$b"; done) -a_nodata none "$SYN" "$T/nv.tif"
gdal_edit.py -mo "NODATA_VALUES=$(printf -- '-9999 %.0s' $(seq 11))255" "$T/nv.tif"
train nv --tiles "$T/nv.tif"
st=$?
"$WILDCPU" predict --tiles "$T/nv.tif" --checkpoint "$T/run_nv" --out "$T/nv_map.tif" >"$T/nv_predict.log" 2>&1
st2=$?
same=$($PY -c 'import sys, numpy as np; from osgeo import gdal
t, m = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
assert t.GetRasterBand(1).GetMaskFlags() & gdal.GMF_PER_DATASET
hole = t.GetRasterBand(1).GetMaskBand().ReadAsArray() == 0
b = m.GetRasterBand(1)
nd = b.ReadAsArray() == b.GetNoDataValue()
print(int(hole.sum()), int(nd.sum()), int(hole.sum() > 0 and np.array_equal(hole, nd)))' "$T/nv.tif" "$T/nv_map.tif" 2>&1 | tail -1)
if [ $st -eq 0 ] && [ $st2 -eq 0 ] && [ "${same##* }" = 1 ]; then
    ok "a NODATA_VALUES per-dataset mask: the map's nodata pixels are exactly those GDAL masks (${same%% *})"
else
    notok "a NODATA_VALUES per-dataset mask" "statuses $st $st2; masked, nodata in the map, equal: $same; $(first_msg "$T/nv.log" "$T/nv_predict.log")"
fi

# Four 128x128 tiles of Float32 copies: $T/DIR/q_X_Y.tif, without nodata (plain) or with -9999
gdal_translate -q -ot Float32 -a_nodata none "$SYN" "$T/plain.tif"
gdal_translate -q -ot Float32 -a_nodata -9999 "$SYN" "$T/nodata.tif"
tiles() { # tiles SRC DIR
    mkdir -p "$2"
    local q
    for q in "0 0" "128 0" "0 128" "128 128"; do
        set -- "$1" "$2" $q
        gdal_translate -q -srcwin "$3" "$4" 128 128 "$1" "$2/q_$3_$4.tif"
    done
}
te=(-te 640000 4922320 647680 4930000) # the region's extent
# (gdalbuildvrt leaves the band descriptions behind: the label band by number)
lab=(--label-band 13)

# 3. A nested VRT with a hole: GDAL answers the outer VRT's coverage by its sources' rectangles
tiles "$T/plain.tif" "$T/nest"
gdalbuildvrt -q "$T/nest/inner_w.vrt" "$T/nest/q_0_0.tif" "$T/nest/q_0_128.tif"
gdalbuildvrt -q "${te[@]}" "$T/nest/inner_e.vrt" "$T/nest/q_128_0.tif"
gdalbuildvrt -q "${te[@]}" "$T/nest/outer.vrt" "$T/nest/inner_w.vrt" "$T/nest/inner_e.vrt"
gdalbuildvrt -q "$T/nest/flat.vrt" "$T/nest"/q_*.tif
train nested --tiles "$T/nest/outer.vrt" "${lab[@]}"
st=$?
train nest_flat --tiles "$T/nest/flat.vrt" "${lab[@]}"
st2=$?
if [ $st -eq 1 ] && grep -q 'error: .*outer.vrt: .*inner_e.vrt, a VRT within it, has no source' "$T/nested.log" &&
    [ $st2 -eq 0 ]; then
    ok "a nested VRT with a hole, without nodata, is refused naming the inner VRT; the flat mosaic of every tile trains"
else
    notok "a nested VRT with a hole" "statuses $st (nested) $st2 (flat): $(first_msg "$T/nested.log" "$T/nest_flat.log")"
fi

# 4. A source smaller than the rectangle the VRT reads of it (cropped after the mosaic was built)
for kind in plain nodata; do
    tiles "$T/$kind.tif" "$T/cut_$kind"
    gdalbuildvrt -q "$T/cut_$kind/flat.vrt" "$T/cut_$kind"/q_*.tif
    gdal_translate -q -srcwin 0 0 64 128 "$T/cut_$kind/q_128_128.tif" "$T/cut_$kind/crop.tif"
    mv "$T/cut_$kind/crop.tif" "$T/cut_$kind/q_128_128.tif"
done
# cut_source KIND STATUS LEVEL MESSAGE WHAT: training on the cut mosaic of KIND tiles ends with
# STATUS and says MESSAGE (at LEVEL: error or warning) about the cut source
cut_source() {
    train "cut_$1" --tiles "$T/cut_$1/flat.vrt" "${lab[@]}"
    local st=$?
    if [ $st -eq "$2" ] && grep -q "$3: .*q_128_128.tif is 64x128 pixels, $4" "$T/cut_$1.log"; then
        ok "a source smaller than the rectangle the mosaic reads of it, $5"
    else
        notok "a cut source, $5" "status $st: $(first_msg "$T/cut_$1.log")"
    fi
}
cut_source plain 1 error "but .*flat.vrt reads 128x128" "without nodata, is refused (64x128 of 128x128)"
cut_source nodata 0 warning ".*changed since the mosaic was built" "with nodata, trains with a warning"

# 5. A source moved (its georeferencing shifted 60 m east = 2 pixels) since the mosaic was built
tiles "$T/nodata.tif" "$T/moved"
gdalbuildvrt -q "$T/moved/flat.vrt" "$T/moved"/q_*.tif
gdal_edit.py -a_ullr 643900 4930000 647740 4926160 "$T/moved/q_128_0.tif"
train moved --tiles "$T/moved/flat.vrt" "${lab[@]}"
st=$?
if [ $st -eq 0 ] && grep -q 'warning: .*q_128_0.tif lies 2 x 0 pixels from where' "$T/moved.log"; then
    ok "a source its georeferencing puts 2 pixels from where the mosaic places it: trains with a warning"
else
    notok "a moved source" "status $st: $(first_msg "$T/moved.log")"
fi
# ... and the same when that source writes its CRS in other words than the mosaic (an ERDAS .img:
# GDAL reads its WKT with other names, the same CRS): before, only a CRS of the very same text
# was compared, so a moved tile of another format than the first passed without a word
tiles "$T/nodata.tif" "$T/moved_img"
gdal_translate -q -of HFA -a_ullr 643900 4930000 647740 4926160 "$T/moved_img/q_128_0.tif" \
    "$T/moved_img/q_128_0.img"
gdalbuildvrt -q "$T/moved_img/flat.vrt" "$T/moved_img"/q_*.tif
sed -i 's/q_128_0\.tif/q_128_0.img/' "$T/moved_img/flat.vrt"
texts=$($PY -c 'import sys; from osgeo import gdal
a, b = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
print(int(a.GetProjectionRef() != b.GetProjectionRef() and a.GetSpatialRef().IsSame(b.GetSpatialRef())))' \
    "$T/moved_img/flat.vrt" "$T/moved_img/q_128_0.img" 2>&1 | tail -1)
train moved_img --tiles "$T/moved_img/flat.vrt" "${lab[@]}"
st=$?
if [ "$texts" = 1 ] && [ $st -eq 0 ] &&
    grep -q 'warning: .*q_128_0.img lies 2 x 0 pixels from where' "$T/moved_img.log"; then
    ok "a moved source whose CRS is written in other words (.img): trains with the same warning"
else
    notok "a moved .img source" "CRS of other text, the same: $texts; status $st: $(first_msg "$T/moved_img.log")"
fi

# 5b. A source packed otherwise than the mosaic's band (a tile written again at scale 0.25 behind
#     a mosaic built of tiles at 0.5): GDAL applies the band's scale to its stored values, so its
#     ground reads at half its values; warned about, naming it. The mosaic as built says nothing.
mkdir -p "$T/packed"
for q in "0 0" "128 0" "0 128" "128 128"; do
    set -- $q
    gdal_translate -q -b 7 -ot Int16 -a_scale 0.5 -a_nodata -32768 -srcwin "$1" "$2" 128 128 \
        "$SYN" "$T/packed/p_$1_$2.tif"
done
gdalbuildvrt -q "$T/packed/built.vrt" "$T/packed"/p_*.tif
cp "$T/packed/built.vrt" "$T/packed/changed.vrt"
train packed_built --tiles "$T/packed/built.vrt" --labels "$T/lab.tif"
st=$?
gdal_edit.py -scale 0.25 "$T/packed/p_128_128.tif"
train packed_changed --tiles "$T/packed/changed.vrt" --labels "$T/lab.tif"
st2=$?
if [ $st -eq 0 ] && [ $st2 -eq 0 ] && ! grep -q 'packed at scale' "$T/packed_built.log" &&
    grep -q 'warning: .*changed.vrt: band 1 (.*) of .*changed.vrt makes values of its sources. stored values at scale 0.5 and offset 0, but its source .*p_128_128.tif (band 1) is packed at scale 0.25 and offset 0' "$T/packed_changed.log"; then
    ok "a source packed otherwise than the mosaic's band is warned about, naming it; the mosaic as built is not"
else
    notok "a source packed otherwise" "statuses $st $st2: $(first_msg "$T/packed_built.log" "$T/packed_changed.log")"
fi

# 5c. Tiles packed at a scale and offset no 16 digits give back (a netCDF scale_factor): gdalbuildvrt
#     writes <Scale> and <Offset> with %.16g, so the mosaic as built differs from its tiles in
#     the last bit; the same packing, not warned about (it was, naming equal scales).
mkdir -p "$T/packed_odd"
for q in "0 0" "128 0" "0 128" "128 128"; do
    set -- $q
    gdal_translate -q -b 7 -ot Int16 -a_scale 0.13437290046996012 -a_offset 273.2843729004699 \
        -a_nodata -32768 -srcwin "$1" "$2" 128 128 "$SYN" "$T/packed_odd/p_$1_$2.tif"
done
gdalbuildvrt -q "$T/packed_odd/built.vrt" "$T/packed_odd"/p_*.tif
train packed_odd --tiles "$T/packed_odd/built.vrt" --labels "$T/lab.tif"
st=$?
if [ $st -eq 0 ] && grep -q '<Scale>0.1343729004699601<' "$T/packed_odd/built.vrt" &&
    ! grep -q 'packed at scale\|read a source packed' "$T/packed_odd.log"; then
    ok "a mosaic as gdalbuildvrt built it of tiles at a scale %.16g does not give back is not warned about"
else
    notok "a mosaic of tiles at an odd scale" "status $st: $(first_msg "$T/packed_odd.log")"
fi

# 6. Bands that hide their nodata (gdalbuildvrt -hidenodata): warned about; the same without it not
gdalbuildvrt -q -hidenodata "$T/hide.vrt" "$T/nodata.tif"
gdalbuildvrt -q "$T/show.vrt" "$T/nodata.tif"
train hide --tiles "$T/hide.vrt" "${lab[@]}"
st=$?
train show --tiles "$T/show.vrt" "${lab[@]}"
st2=$?
if [ "$(grep -c '<HideNoDataValue>1' "$T/hide.vrt")" -eq 13 ] && [ $st -eq 0 ] && [ $st2 -eq 0 ] &&
    grep -q 'warning: .*hide.vrt .*HideNoDataValue' "$T/hide.log" && ! grep -q 'HideNoDataValue' "$T/show.log"; then
    ok "a mosaic whose bands hide their nodata (-hidenodata) is warned about; without -hidenodata it is not"
else
    notok "bands hiding their nodata" "statuses $st $st2: $(first_msg "$T/hide.log" "$T/show.log")"
fi
# 7. Sources that are subdatasets, named by a driver's connection string (GPKG:file.gpkg:table,
#    as gdalbuildvrt writes for the rasters of a GeoPackage): GDAL lists the .gpkg, not the
#    name, and they exist; the same mosaic over a GeoPackage that is gone is refused at start.
gdal_translate -q -of GPKG -b 2 "$SYN" "$T/t.gpkg" -co RASTER_TABLE=feat
gdal_translate -q -of GPKG -b 13 "$SYN" "$T/t.gpkg" -co APPEND_SUBDATASET=YES -co RASTER_TABLE=burned
gdalbuildvrt -q -separate "$T/gpkg.vrt" "GPKG:$T/t.gpkg:feat" "GPKG:$T/t.gpkg:burned"
train gpkg --tiles "$T/gpkg.vrt" --label-band 2
st=$?
sed "s|$T/t.gpkg|$T/gone.gpkg|g" "$T/gpkg.vrt" >"$T/gone.vrt"
train gone --tiles "$T/gone.vrt" --label-band 2
st2=$?
if [ $st -eq 0 ] && [ $st2 -eq 1 ] &&
    grep -q "error: .*its source GPKG:.*gone.gpkg:feat (band 1 of .*gone.vrt) does not exist" "$T/gone.log"; then
    ok "a mosaic of GeoPackage subdatasets (GPKG:file:table sources) trains; over a GeoPackage that is gone it is refused"
else
    notok "GPKG subdataset sources" "statuses $st $st2: $(first_msg "$T/gpkg.log" "$T/gone.log")"
fi
# ... and every check of the sources sees them (GDAL's file list leaves such names out): a
# table that is gone, a source in another CRS, a pipe behind the name (opening it would wait
# for ever), a mosaic in a zip whose member is missing
sed "s|GPKG:$T/t.gpkg:feat|GPKG:$T/t.gpkg:nosuch|" "$T/gpkg.vrt" >"$T/table.vrt"
train table --tiles "$T/table.vrt" --label-band 2
st=$?
gdal_translate -q -a_srs EPSG:32612 -of GPKG "GPKG:$T/t.gpkg:feat" "$T/crs.gpkg"
gdalbuildvrt -q -separate -allow_projection_difference "$T/crs.vrt" "GPKG:$T/crs.gpkg:crs" "GPKG:$T/t.gpkg:burned"
train crs --tiles "$T/crs.vrt" --label-band 2
st2=$?
mkfifo "$T/p.gpkg"
sed "s|GPKG:$T/t.gpkg:feat|GPKG:$T/p.gpkg:feat|" "$T/gpkg.vrt" >"$T/pipe.vrt"
timeout -s KILL 60 "$WILDCPU" --out "$T/run_pipe" "${tiny[@]}" --tiles "$T/pipe.vrt" --label-band 2 >"$T/pipe.log" 2>&1
st3=$?
mkdir -p "$T/zip"
gdal_translate -q -srcwin 0 0 128 256 "$SYN" "$T/zip/w.tif"
gdal_translate -q -srcwin 128 0 128 256 "$SYN" "$T/zip/e.tif"
(cd "$T/zip" && gdalbuildvrt -q tiles.vrt w.tif e.tif && zip -q part.zip tiles.vrt w.tif)
train zip --tiles "/vsizip/$T/zip/part.zip/tiles.vrt"
st4=$?
if [ $st -eq 1 ] && grep -q "error: .*source GPKG:.*t.gpkg:nosuch (band 1 of .*) cannot be opened (.*t.gpkg exists: .*nosuch" "$T/table.log" &&
    [ $st2 -eq 0 ] && grep -q "warning: .*crs.vrt: its source GPKG:.* is in EPSG:3261[12], the mosaic in EPSG:3261" "$T/crs.log" &&
    [ $st3 -eq 1 ] && grep -q "error: .*its source GPKG:.*p.gpkg:feat is a pipe" "$T/pipe.log" &&
    [ $st4 -eq 1 ] && grep -q "error: .*its source /vsizip/.*part.zip/e.tif (band 1 of .*) does not exist" "$T/zip.log"; then
    ok "GPKG sources: a gone table, another CRS, a pipe behind the name are each found at start; a zipped mosaic's missing member too"
else
    notok "checks of GPKG and zipped sources" "statuses $st $st2 $st3 $st4: $(first_msg "$T/table.log" "$T/crs.log" "$T/pipe.log" "$T/zip.log")"
fi
# labels derived from a raster behind a GDAL name are made again when that file changes (the
# derived raster's hash covered only the files GDAL lists: the GeoPackage was not among them)
gdal_translate -q -of VRT -srcwin 8 8 240 240 "GPKG:$T/t.gpkg:burned" "$T/labv.vrt"
evaluate_burned() {
    "$WILDCPU" evaluate --tiles "$T/gpkg.vrt" --checkpoint "$T/run_gpkg" --labels "$T/labv.vrt" \
        --label-band 1 --out "$T/ev.json" >"$T/ev.log" 2>&1
    grep -o '[0-9.]*% burned' "$T/ev.log" | head -1
}
before=$(evaluate_burned)
$PY -c 'import sys, numpy as np; from osgeo import gdal
d = gdal.Open("GPKG:" + sys.argv[1] + ":burned", gdal.GA_Update)
d.GetRasterBand(1).WriteArray(np.zeros((256, 256), np.float32)); d = None' "$T/t.gpkg"
after=$(evaluate_burned)
if [ -n "$before" ] && [ "$before" != "0.00% burned" ] && [ "$after" = "0.00% burned" ]; then
    ok "labels behind GPKG:file:table, changed: derived again ($before, then $after)"
else
    notok "labels behind a GPKG name, changed" "before '$before', after '$after': $(tail -2 "$T/ev.log")"
fi
# 8. Source nodata the mosaic reads as data: a gdalbuildvrt mosaic takes its bands' nodata from the
#    first tile; when that one has none, a later tile's nodata pixels read as 0 (a probe: trained
#    on silently, labels included)
$PY - "$T/syn/tiles.vrt" "$T" <<'EOF'
import sys
from osgeo import gdal
d = gdal.Open(sys.argv[1]); gt = d.GetGeoTransform()
for name, x0, nd in (('L.tif', 0, None), ('R.tif', 128, -9999.0)):
    o = gdal.GetDriverByName('GTiff').Create(sys.argv[2] + '/' + name, 128, 256, 13, gdal.GDT_Float32)
    o.SetGeoTransform((gt[0] + x0 * gt[1], gt[1], 0, gt[3], 0, gt[5])); o.SetProjection(d.GetProjection())
    for i in range(1, 14):
        s = d.GetRasterBand(i); a = s.ReadAsArray(x0, 0, 128, 256).astype('f4')
        a[a == s.GetNoDataValue()] = 0 if nd is None else nd
        if nd is not None: a[100:140, 0:72] = nd
        b = o.GetRasterBand(i); b.WriteArray(a); b.SetDescription(s.GetDescription())
        if nd is not None: b.SetNoDataValue(nd)
    o = None
EOF
gdalbuildvrt -q "$T/lr.vrt" "$T/L.tif" "$T/R.tif"
gdalbuildvrt -q "$T/rl.vrt" "$T/R.tif" "$T/L.tif"
train lr --tiles "$T/lr.vrt" --label-band 13
st=$?
train rl --tiles "$T/rl.vrt" --label-band 13
st2=$?
if [ $st -eq 1 ] && grep -q 'error: .*lr.vrt has no nodata value, and its source .*R.tif marks its nodata pixels (-9999): GDAL reads them through the mosaic as 0.*gdal_edit.py -a_nodata' "$T/lr.log" &&
    [ $st2 -eq 0 ] && ! grep -q 'nodata' "$T/rl.log"; then
    ok "a mosaic without nodata over a tile that marks some: refused; the other tile order trains"
else
    notok "a mosaic whose first tile has no nodata" "statuses $st $st2: $(first_msg "$T/lr.log" "$T/rl.log")"
fi
gdal_edit.py -a_nodata -9999 "$T/lr.vrt"
train lr_fixed --tiles "$T/lr.vrt" --label-band 13 &&
    [ -n "$(grep -o '[0-9]* kept' "$T/rl.log")" ] &&
    [ "$(grep -o '[0-9]* kept' "$T/lr_fixed.log")" = "$(grep -o '[0-9]* kept' "$T/rl.log")" ] &&
    ok "... fixed as the message says (gdal_edit.py -a_nodata), it keeps the patches the other order keeps" ||
    notok "the mosaic fixed as said" "$(first_msg "$T/lr_fixed.log"; grep -o '[0-9]* kept' "$T/lr_fixed.log" "$T/rl.log")"
# a SimpleSource over a tile whose declared nodata (-1) is not the band's (-9999): its -1 pixels
# read as data
cp "$T/R.tif" "$T/R1.tif" && gdal_edit.py -a_nodata -1 "$T/R1.tif" 2>/dev/null
sed -e 's/ComplexSource/SimpleSource/g' -e '/<NODATA>/d' -e 's/R\.tif/R1.tif/g' "$T/rl.vrt" >"$T/simple.vrt"
train simple --tiles "$T/simple.vrt" --label-band 13
st=$?
[ $st -eq 0 ] && grep -q 'warning: .*simple.vrt: its source .*R1.tif declares the nodata value -1 (band 1), but .* reads it without it' "$T/simple.log" &&
    ok "a SimpleSource whose tile declares another nodata value: warned about" ||
    notok "a SimpleSource over a tile of another nodata value" "status $st: $(first_msg "$T/simple.log")"
finish
