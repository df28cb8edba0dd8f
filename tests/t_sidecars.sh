#!/usr/bin/env bash
# t_sidecars.sh: what a raster keeps beside it is read. wildcpu has GDAL look for a file's
# side-cars by name instead of listing its directory at each open (GDAL_DISABLE_READDIR_ON_OPEN,
# docs/cli.md): a GeoTIFF written in the baseline TIFF profile keeps its georeferencing in a
# world file (.tfw) and its projection, nodata and band names in a .aux.xml; mapped, it gives the
# map of the same pixels in an ordinary GeoTIFF, bitwise, on the same grid. Without its
# side-cars it would have no grid and no band names, and its nodata would be taken for data.
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
finish
