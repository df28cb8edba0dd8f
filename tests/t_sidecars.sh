#!/usr/bin/env bash
# t_sidecars.sh: what a raster keeps beside it is read. wildcpu has GDAL look for a file's
# side-cars by name instead of listing its directory at each open (GDAL_DISABLE_READDIR_ON_OPEN,
# docs/cli.md): a GeoTIFF written in the baseline TIFF profile keeps its georeferencing in a
# world file (.tfw) and its projection, nodata and band names in a .aux.xml; mapped, it gives the
# map of the same pixels in an ordinary GeoTIFF, bitwise, on the same grid. Without its
# side-cars it would have no grid and no band names, and its nodata would be taken for data.
# And what wildcpu's own maps keep beside them: a CRS GeoTIFF cannot hold, category names.
. "$(dirname "$0")/lib.sh"

# write OUT PROFILE: the sample's 13 bands as Float32 (nodata -9999) in one GeoTIFF
write() {
    $PY - "$SAMPLE" "$1" "$2" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
src, out, profile = sys.argv[1:4]
ds = gdal.Open(src)
opts = ["PROFILE=" + profile] + (["TFW=YES"] if profile == "BASELINE" else [])
dst = gdal.GetDriverByName("GTiff").Create(out, ds.RasterXSize, ds.RasterYSize, ds.RasterCount,
                                           gdal.GDT_Float32, opts)
dst.SetGeoTransform(ds.GetGeoTransform())
dst.SetProjection(ds.GetProjection())
for i in range(1, ds.RasterCount + 1):
    b, o = ds.GetRasterBand(i), dst.GetRasterBand(i)
    v, nd = b.ReadAsArray().astype(np.float64), b.GetNoDataValue()
    o.SetDescription(b.GetDescription())
    o.SetNoDataValue(-9999)
    o.WriteArray(np.where(v == nd, -9999, v).astype(np.float32))
dst = None
EOF
}
write "$T/plain.tif" GDALGeoTIFF
mkdir -p "$T/side"
write "$T/side/baseline.tif" BASELINE
[ -f "$T/side/baseline.tfw" ] && [ -f "$T/side/baseline.tif.aux.xml" ] &&
    ! gdalinfo "$T/side/baseline.tif" --config GDAL_DISABLE_READDIR_ON_OPEN EMPTY_DIR | grep -q "Origin =" &&
    ok "a baseline GeoTIFF keeps its grid in a .tfw and its nodata and names in a .aux.xml" ||
    { notok "the baseline GeoTIFF" "$(ls "$T/side")"; finish; }

"$WILDCPU" --tiles "$T/plain.tif" --out "$T/run" --steps 2 --batch 8 --no-predict >"$T/train.log" 2>&1 ||
    { notok "training" "$(tail -2 "$T/train.log")"; finish; }
"$WILDCPU" predict --tiles "$T/plain.tif" --checkpoint "$T/run" --out "$T/plain_map.tif" >"$T/p1.log" 2>&1
s1=$?
"$WILDCPU" predict --tiles "$T/side/baseline.tif" --checkpoint "$T/run" --out "$T/side_map.tif" >"$T/p2.log" 2>&1
s2=$?
same=$($PY - "$T/plain_map.tif" "$T/side_map.tif" <<'EOF' 2>&1
import sys
import numpy as np
from osgeo import gdal
a, b = (gdal.Open(p) for p in sys.argv[1:3])
va, vb = (d.GetRasterBand(1).ReadAsArray() for d in (a, b))
print(a.GetGeoTransform() == b.GetGeoTransform() and a.GetProjection() == b.GetProjection()
      and np.array_equal(va, vb) and (va == a.GetRasterBand(1).GetNoDataValue()).any())
EOF
)
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ "$same" = True ] &&
    ok "mapped from its side-cars: the same grid, projection and pixels as from an ordinary GeoTIFF" ||
    notok "a map from side-cars" "status $s1 $s2, same '$same': $(grep -h -E 'error|warning' "$T/p2.log" | head -2)"

# A CRS GeoTIFF's keys cannot hold (Equal Earth: GDAL 3.6 has no GeoTIFF code for its method) is
# kept in the map's .aux.xml alone: the map says so, names the sidecar, and its STAC item lists
# it, so that a copy of the item's assets stays placed (the same pixels, given EPSG:8857). A GDAL
# that learns to write Equal Earth's keys fails this check rather than passing it unseen: then
# pick another CRS GeoTIFF cannot hold.
gdal_translate -q -a_srs EPSG:8857 "$T/plain.tif" "$T/ee.tif"
"$WILDCPU" predict --tiles "$T/ee.tif" --checkpoint "$T/run" --out "$T/ee_map.tif" --classes >"$T/ee.log" 2>&1
s=$?
placed=$($PY - "$T/ee_map.tif" <<'EOF' 2>&1
import json, sys
from osgeo import gdal, osr
want = osr.SpatialReference(); want.ImportFromEPSG(8857)
got = gdal.Open(sys.argv[1]).GetSpatialRef()
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
alone = gdal.Open(sys.argv[1]).GetSpatialRef()
a = json.load(open(sys.argv[1][:-4] + ".json"))["assets"]
print(bool(got and got.IsSame(want)) and alone is None and
      a["risk_map_sidecar"]["href"] == "ee_map.tif.aux.xml" and a["risk_map_sidecar"]["roles"] == ["metadata"])
EOF
)
[ $s -eq 0 ] && [ "$placed" = True ] &&
    grep -q "warning: $T/ee_map.tif: its CRS (EPSG:8857) is not one the file's GeoTIFF keys can hold, so GDAL keeps it in $T/ee_map.tif.aux.xml" "$T/ee.log" &&
    grep -q "warning: $T/ee_map_classes.tif: its CRS (EPSG:8857)" "$T/ee.log" &&
    [ "$(grep -c "GeoTIFF keys can hold" "$T/p1.log")" = 0 ] &&
    ok "a CRS GeoTIFF's keys cannot hold: kept in the sidecar, said, and the sidecar a STAC asset" ||
    notok "a CRS only in the sidecar" "status $s, '$placed': $(grep -E 'warning|error' "$T/ee.log" | head -3)"

# A map placed nowhere keeps its class raster's category names in the sidecar too, and they are
# read back as such: the check once read none there (GDAL reads a GeoTIFF's sidecar when its
# metadata or georeferencing is first asked for) and warned that they were not stored
gdal_translate -q -of VRT "$T/plain.tif" "$T/nogeo.vrt"
$PY -c "import re, sys; p = sys.argv[1]; t = open(p).read(); open(p, 'w').write(re.sub(r'<SRS.*?</SRS>|<GeoTransform>.*?</GeoTransform>', '', t, flags=re.S))" "$T/nogeo.vrt"
"$WILDCPU" predict --tiles "$T/nogeo.vrt" --checkpoint "$T/run" --out "$T/nogeo_map.tif" --classes >"$T/nogeo.log" 2>&1
s=$?
names=$($PY -c "from osgeo import gdal; d = gdal.Open('$T/nogeo_map_classes.tif'); print(d.GetGeoTransform(can_return_null=True), d.GetRasterBand(1).GetCategoryNames())" 2>&1)
[ $s -eq 0 ] && [ "$names" = "None ['low', 'moderate', 'high', 'very high', 'extreme']" ] &&
    ! grep -q "category names .* were not stored" "$T/nogeo.log" &&
    ok "a class raster placed nowhere: its category names stored and not warned about" ||
    notok "category names of a map placed nowhere" "status $s, '$names': $(grep -E 'warning|error' "$T/nogeo.log" | head -3)"
finish
