#!/usr/bin/env bash
# t_synth_mosaic.sh: tools/synth_mosaic.py puts synthetic regions side by side on one grid: every
# band and the oracle of each region read back unchanged at its place in the mosaic (GDAL's own
# reader), the empty cell is nodata, a region of another size and a wildcpu that cannot run are
# refused with a message, and wildcpu trains on the mosaic with its oracle.
. "$(dirname "$0")/lib.sh"

M=$T/mosaic
$PY "$ROOT/tools/synth_mosaic.py" "$M" 3 5 8 --size 64 --wildcpu "$WILDCPU" >"$T/m.log" 2>&1 ||
    { notok "synth_mosaic.py of seeds 3, 5, 8" "$(tail -3 "$T/m.log")"; finish; }
grep -q "128 x 128 px: seeds 3, 5, 8, 2 to a row" "$T/m.log" && ok "the mosaic's size and layout" ||
    notok "the mosaic's size and layout" "$(cat "$T/m.log")"

$PY - "$M" <<'PY' >"$T/cmp.log" 2>&1
import sys
import numpy as np
from osgeo import gdal
m = sys.argv[1]
t, o = gdal.Open(m + "/tiles.vrt"), gdal.Open(m + "/oracle_risk.tif")
gt0 = gdal.Open(m + "/seed-3/tiles.vrt").GetGeoTransform()
assert t.GetGeoTransform() == gt0, (t.GetGeoTransform(), gt0)
for k, s in enumerate([3, 5, 8]):
    x, y = 64 * (k % 2), 64 * (k // 2)
    r, ro = gdal.Open("%s/seed-%d/tiles.vrt" % (m, s)), gdal.Open("%s/seed-%d/oracle_risk.tif" % (m, s))
    assert t.RasterCount == r.RasterCount == 13
    for b in range(1, t.RasterCount + 1):
        mb, rb = t.GetRasterBand(b), r.GetRasterBand(b)
        assert mb.GetDescription() == rb.GetDescription() and mb.DataType == rb.DataType
        assert mb.GetNoDataValue() == rb.GetNoDataValue()
        assert np.array_equal(mb.ReadAsArray(x, y, 64, 64), rb.ReadAsArray()), (s, b)
    assert np.array_equal(o.GetRasterBand(1).ReadAsArray(x, y, 64, 64), ro.GetRasterBand(1).ReadAsArray())
for b in range(1, t.RasterCount + 1):  # the fourth cell: nothing but nodata
    mb = t.GetRasterBand(b)
    assert np.all(mb.ReadAsArray(64, 64, 64, 64) == mb.GetNoDataValue()), b
print("equal")
PY
grep -q "^equal" "$T/cmp.log" && ok "each region's 13 bands and oracle unchanged at its place; the empty cell nodata" ||
    notok "each region's bands and oracle at its place" "$(tail -3 "$T/cmp.log")"

"$WILDCPU" synth --out "$M/seed-9" --seed 9 --size 96 >/dev/null 2>&1
if $PY "$ROOT/tools/synth_mosaic.py" "$M" 3 9 --size 64 --wildcpu "$WILDCPU" >"$T/bad.log" 2>&1; then
    notok "a region of another size is refused" "it was accepted"
else
    grep -q "seed-9 is an earlier region of 96 x 96 px, not --size 64: remove it to have it made again, or give --size 96" "$T/bad.log" &&
        ok "a region of another size is refused" || notok "a region of another size is refused" "$(tail -2 "$T/bad.log")"
fi
# ... and so are earlier regions all of another size than --size: they were taken as they were,
# a mosaic of 64-pixel regions for --size 32, status 0
if $PY "$ROOT/tools/synth_mosaic.py" "$M" 3 5 8 --size 32 --wildcpu "$WILDCPU" >"$T/resize.log" 2>&1; then
    notok "earlier regions of another size than --size are refused" "accepted: $(tail -1 "$T/resize.log")"
else
    grep -q "seed-3 is an earlier region of 64 x 64 px, not --size 32" "$T/resize.log" &&
        ok "earlier regions of another size than --size are refused" ||
        notok "earlier regions of another size than --size are refused" "$(tail -2 "$T/resize.log")"
fi

# regions whose band 2 has NaN for nodata (NaN != NaN: they must still count as alike)
$PY - "$M" "$T/nan" <<'PY' >"$T/nanprep.log" 2>&1
import os, shutil, sys
from osgeo import gdal
for s in (3, 5):
    d = "%s/seed-%d" % (sys.argv[2], s)
    os.makedirs(d, exist_ok=True)
    gdal.Translate(d + "/tiles.vrt", "%s/seed-%d/tiles.vrt" % (sys.argv[1], s), format="VRT")
    v = gdal.Open(d + "/tiles.vrt", gdal.GA_Update)
    v.GetRasterBand(2).SetNoDataValue(float("nan"))
    v = None
    shutil.copy("%s/seed-%d/oracle_risk.tif" % (sys.argv[1], s), d)
PY
if $PY "$ROOT/tools/synth_mosaic.py" "$T/nan" 3 5 --size 64 --wildcpu "$WILDCPU" >"$T/nan.log" 2>&1 &&
    $PY -c 'import math, sys; from osgeo import gdal; d = gdal.Open(sys.argv[1]); sys.exit(not math.isnan(d.GetRasterBand(2).GetNoDataValue()))' "$T/nan/tiles.vrt"; then
    ok "regions with NaN for nodata are alike; the mosaic keeps NaN"
else
    notok "regions with NaN for nodata are alike; the mosaic keeps NaN" "$(tail -2 "$T/nan.log") $(tail -2 "$T/nanprep.log")"
fi

if $PY "$ROOT/tools/synth_mosaic.py" "$T/none" 3 --wildcpu "$T/no-such-program" >"$T/none.log" 2>&1; then
    notok "a wildcpu that cannot run is an error" "it was accepted"
else
    grep -q "synth_mosaic: .*no-such-program synth .* failed" "$T/none.log" &&
        ok "a wildcpu that cannot run is an error naming the command" ||
        notok "a wildcpu that cannot run is an error naming the command" "$(tail -2 "$T/none.log")"
fi

$PY "$ROOT/tools/synth_mosaic.py" "$M" 3 5 8 --size 64 --wildcpu "$WILDCPU" >/dev/null 2>&1
"$WILDCPU" --tiles "$M/tiles.vrt" --model logistic --patch 32 --batch 4 --micro-batch 4 --steps 4 \
    --val-block 32 --no-predict --out "$T/run" >"$T/train.log" 2>&1 &&
    grep -q "128x128 px" "$T/train.log" && grep -q "oracle on the same pixels" "$T/train.log" &&
    ok "wildcpu trains on the mosaic, with its oracle" ||
    notok "wildcpu trains on the mosaic, with its oracle" "$(tail -3 "$T/train.log")"
finish
