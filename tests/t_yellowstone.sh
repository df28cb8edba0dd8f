#!/usr/bin/env bash
# t_yellowstone.sh: the real data of ../shared/data/yellowstone, when present (skipped otherwise;
# nothing from it is copied into the project). Two LANDFIRE rasters (EPSG:26912) mosaicked with
# gdalbuildvrt -separate, MTBS fire perimeters (EPSG:3604) as --labels: the perimeters are
# reprojected and rasterized onto the tile grid, training runs on 2 ranks, and a map of part of
# the park keeps the grid. The commands are the README's.
. "$(dirname "$0")/lib.sh"
Y=${WILDCPU_YELLOWSTONE:-$ROOT/../shared/data/yellowstone}
if [ ! -f "$Y/ynp_features.gpkg" ] || [ ! -f "$Y/ynp_fires_1984_2022.gpkg" ]; then
    echo "# skipped: $Y is not here"
    exit 0
fi
gdalbuildvrt -q -separate -resolution highest "$T/ynp.vrt" \
    "GPKG:$Y/ynp_features.gpkg:forest_canopy_cover" "GPKG:$Y/ynp_features.gpkg:operational_roads"
mpirun_n 2 "$WILDCPU" --tiles "$T/ynp.vrt" --labels "$Y/ynp_fires_1984_2022.gpkg" --out "$T/run" \
    --steps 4 --batch 8 --micro-batch 2 --val-fraction 0.05 --no-predict >"$T/train.log" 2>&1
status=$?
lab=$(ls "$T"/run/labels-*.tif 2>/dev/null | head -1)
if [ $status -eq 0 ] && [ -n "$lab" ] && grep -q "rasterized the polygons of" "$T/train.log"; then
    ok "trains on 2 ranks with MTBS perimeters as labels (rasterized onto the LANDFIRE grid)"
else
    notok "trains with MTBS perimeters as labels" "status $status: $(tail -3 "$T/train.log")"
fi
# the README's count of the patches this data set gives (the patch grid does not depend on the
# training options; README said 3060 "remain" until 2026-12-06, when the grid gave 3025, 3004 kept)
said=$(tr '\n' ' ' <"$ROOT/README.md" | grep -Eo '[0-9]+ of its [0-9]+ patches of 64x64 are kept' | head -1)
got=$(grep -Eo '^patches: [0-9]+ of 64x64 on a [0-9]+x[0-9]+ grid, [0-9]+ kept' "$T/train.log" | head -1)
if [ -n "$said" ] && [ -n "$got" ] &&
    [ "$(echo "$said" | awk '{print $1, $4}')" = "$(echo "$got" | awk '{print $9, $2}')" ]; then
    ok "README's patch count is the data's: $said ($got)"
else
    notok "README's patch count" "README: '${said:-no count}'; the run: '${got:-no patches line}'"
fi
# the README's layer that GDAL resamples (the coarser one) is the one wildcpu's warning names, with
# its size (until 2026-12-06 README called the 30 m roads layer the coarser one: the canopy's
# 270 m pixels are)
coarse=$(tr '\n' ' ' <"$ROOT/README.md" | grep -Eo 'The [a-z]+ layer is coarser \([0-9]+ x [0-9]+ pixels' | head -1)
layer=$(echo "$coarse" | awk '{print $2}'); size=$(echo "$coarse" | awk '{print $6 "x" $8}' | tr -d '(')
if [ -n "$coarse" ] && grep -Eq "source GPKG:[^ ]*:[a-z_]*${layer}[a-z_]* \(band [0-9]+ of [^)]*\) is resampled onto the mosaic's grid, ${size} of its pixels" "$T/train.log"; then
    ok "README's coarser layer is the one resampled: $coarse"
else
    notok "README's coarser layer" "README: '${coarse:-none}'; the run: $(grep -o 'the source [^ ]* (band [^)]*) is resampled[^:]*' "$T/train.log" | head -2)"
fi
# the rasterized labels: the tiles' grid and CRS, a plausible burned share (1988 burned a third
# of the park, and more since)
if [ -n "$lab" ]; then
    $PY - "$T/ynp.vrt" "$lab" <<'PY' >"$T/lab.txt" 2>&1
import sys
from osgeo import gdal, osr
t, l = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
assert (t.RasterXSize, t.RasterYSize) == (l.RasterXSize, l.RasterYSize)
assert all(abs(a - b) < 1e-6 for a, b in zip(t.GetGeoTransform(), l.GetGeoTransform()))
assert osr.SpatialReference(t.GetProjection()).IsSame(osr.SpatialReference(l.GetProjection()))
a = l.GetRasterBand(1).ReadAsArray()
share = (a == 1).mean()
assert set(int(v) for v in set(a.ravel().tolist())) <= {0, 1}
assert 0.2 < share < 0.8, share
print(f"{share:.3f} of the grid burned at least once 1984-2022")
PY
    [ $? -eq 0 ] && ok "labels on the tile grid and CRS, 0/1, $(cat "$T/lab.txt")" || notok "rasterized labels" "$(cat "$T/lab.txt")"
fi
# a map of a 768x768 part of the park, through the same model
gdal_translate -q -srcwin 1200 1400 768 768 "$T/ynp.vrt" "$T/part.vrt"
mpirun_n 2 "$WILDCPU" predict --tiles "$T/part.vrt" --checkpoint "$T/run" --out "$T/part_risk.tif" \
    --png "$T/part_risk.png" >"$T/predict.log" 2>&1
status=$?
if [ $status -eq 0 ] && [ "$(gdalinfo "$T/part_risk.tif" | grep -c 'Size is 768, 768')" = 1 ] &&
    gdalinfo "$T/part_risk.tif" | grep -q 'ID\["EPSG",26912\]'; then
    ok "risk map of part of the park: 768x768, EPSG:26912"
else
    notok "risk map of part of the park" "status $status: $(tail -3 "$T/predict.log")"
fi
finish
