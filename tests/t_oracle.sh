#!/usr/bin/env bash
# t_oracle.sh: --oracle with pixels that have no probability (its nodata over a strip of the
# raster). The oracle's validation metrics are over the validation pixels where it has one, and
# equal a hand computation (numpy, the definitions of metrics.h) from split.tif, the labels, the
# features' nodata and the oracle; the pixels left out are counted and said once, and the
# model's metrics are those of a run whose oracle is whole (the oracle changes nothing else).
# An oracle on the tiles' grid in the horizontal CRS of their compound CRS is on their grid.
. "$(dirname "$0")/lib.sh"

$PY - "$ROOT/data/sample/oracle_risk.tif" "$T/oracle_holes.tif" <<'PY' || notok "an oracle with nodata"
import sys
from osgeo import gdal
d = gdal.GetDriverByName("GTiff").CreateCopy(sys.argv[2], gdal.Open(sys.argv[1]))
b = d.GetRasterBand(1)
a = b.ReadAsArray()
b.SetNoDataValue(-9999)
a[:, 40:140] = -9999
b.WriteArray(a)
d = None
PY
train=(--tiles "$SAMPLE" --steps 4 --batch 8 --micro-batch 4 --no-predict)
"$WILDCPU" "${train[@]}" --oracle "$T/oracle_holes.tif" --out "$T/holes" >"$T/holes.log" 2>&1
s1=$?
"$WILDCPU" "${train[@]}" --oracle "$ROOT/data/sample/oracle_risk.tif" --out "$T/whole" >"$T/whole.log" 2>&1
s2=$?
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] || { notok "training with an oracle" "status $s1 $s2: $(tail -2 "$T/holes.log")"; finish; }

PYTHONPATH="$ROOT/tests" $PY - "$T/holes/metrics.jsonl" "$T/whole/metrics.jsonl" "$T/holes/split.tif" "$SAMPLE" \
    "$T/oracle_holes.tif" <<'PY' >"$T/hand.log" 2>&1
import json, sys
import numpy as np
from osgeo import gdal
def last_val(path):
    return [json.loads(l) for l in open(path) if '"type":"val"' in l][-1]
m, whole = last_val(sys.argv[1]), last_val(sys.argv[2])
sd = gdal.Open(sys.argv[3])  # a band outliving its dataset crashes GDAL's Python
split = sd.GetRasterBand(1).ReadAsArray()
td = gdal.Open(sys.argv[4])
ok = split == 2
for i in range(1, td.RasterCount + 1):
    b = td.GetRasterBand(i)
    a = b.ReadAsArray().astype(np.float64)
    valid = np.isfinite(a) & ((a != b.GetNoDataValue()) if b.GetNoDataValue() is not None else True)
    if b.GetDescription() == "fire":
        lab = a
    ok &= valid
od = gdal.Open(sys.argv[5])
o = od.GetRasterBand(1).ReadAsArray().astype(np.float64)
has = (o >= 0) & (o <= 1)
assert m["pixels"] == int(ok.sum()), (m["pixels"], int(ok.sum()))
sel = ok & has
prob, y = o[sel], (lab[sel] > 0).astype(np.int64)
from metrics_bins import B, bins_of
bins = bins_of(prob)
pos = np.bincount(bins[y == 1], minlength=B); neg = np.bincount(bins[y == 0], minlength=B)
P, N = int(pos.sum()), int(neg.sum())
tp, fp, h = np.cumsum(pos[::-1]), np.cumsum(neg[::-1]), pos[::-1] > 0
ap = float(np.sum(pos[::-1][h] / P * (tp[h] / (tp[h] + fp[h]))))
bad = []
if m["oracle_pixels"] != P + N: bad.append("oracle_pixels %d vs %d" % (m["oracle_pixels"], P + N))
if m["oracle_bad_outputs"] != int((ok & ~has).sum()):
    bad.append("oracle_bad_outputs %d vs %d" % (m["oracle_bad_outputs"], int((ok & ~has).sum())))
if not abs(m["oracle_auc_pr"] - ap) <= 1e-12: bad.append("oracle_auc_pr %r vs %r" % (m["oracle_auc_pr"], ap))
if whole["oracle_bad_outputs"] != 0: bad.append("the whole oracle left pixels out")
same = [k for k in m if not k.startswith("oracle_") and k not in ("time",) and m[k] != whole[k]]
if same: bad.append("the model's metrics differ with the oracle's holes: " + ", ".join(same))
print("%d validation pixels, %d without an oracle probability; oracle AUC-PR %.6f (hand %.6f)"
      % (m["pixels"], m["oracle_bad_outputs"], m["oracle_auc_pr"], ap))
if bad: raise SystemExit("; ".join(bad))
PY
[ $? -eq 0 ] && ok "oracle with nodata: its metrics over the pixels it covers, equal to a hand computation ($(tail -1 "$T/hand.log"))" \
    || notok "oracle with nodata, against a hand computation" "$(tail -3 "$T/hand.log")"
n=$(grep -c "oracle .*oracle_holes.tif has no probability in \[0, 1\] at [0-9]* of the validation pixels" "$T/holes.log")
[ "$n" = 1 ] && grep -q "oracle on the same pixels but those it has no probability for" "$T/holes.log" \
    && ! grep -q "has no probability" "$T/whole.log" \
    && ok "... said once, and the log says the oracle's pixels are fewer; nothing said of a whole oracle" \
    || notok "the oracle's missing pixels said" "$n warnings: $(grep -m2 oracle "$T/holes.log")"

# a packed oracle (UInt16 0..10000 at scale 1e-4, nodata 65535 over the strip) is read as the
# probabilities it stands for: its metrics are those of the Float32 oracle quantized the same way
$PY - "$T/oracle_holes.tif" "$T/oracle_u16.tif" "$T/oracle_q.tif" <<'PY' || notok "a packed oracle"
import sys
import numpy as np
from osgeo import gdal
s = gdal.Open(sys.argv[1]); a = s.GetRasterBand(1).ReadAsArray().astype(np.float64)
q = np.round(a * 10000); hole = a == -9999
for path, t, v, nd, scale in [(sys.argv[2], gdal.GDT_UInt16, np.where(hole, 65535, q), 65535, 1e-4),
                              (sys.argv[3], gdal.GDT_Float32, np.where(hole, -9999, q * 1e-4), -9999, 1)]:
    d = gdal.GetDriverByName("GTiff").Create(path, s.RasterXSize, s.RasterYSize, 1, t)
    d.SetGeoTransform(s.GetGeoTransform()); d.SetProjection(s.GetProjection())
    b = d.GetRasterBand(1); b.WriteArray(v); b.SetNoDataValue(nd)
    if scale != 1: b.SetScale(scale); b.SetOffset(0)
    d = None
PY
"$WILDCPU" "${train[@]}" --oracle "$T/oracle_u16.tif" --out "$T/packed" >"$T/packed.log" 2>&1
s1=$?
"$WILDCPU" "${train[@]}" --oracle "$T/oracle_q.tif" --out "$T/quantized" >"$T/quantized.log" 2>&1
s2=$?
oracle_of() { grep '"type":"val"' "$1/metrics.jsonl" | grep -o '"oracle_[a-z_]*":[^,}]*' | tr '\n' ' '; }
po=$(oracle_of "$T/packed") qo=$(oracle_of "$T/quantized")
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ -n "$po" ] && [ "$po" = "$qo" ] && ! grep -q '"oracle_auc_pr":null' "$T/packed/metrics.jsonl" \
    && ok "a packed oracle (UInt16, scale 1e-4, nodata 65535): the metrics of the same probabilities as Float32" \
    || notok "a packed oracle" "status $s1/$s2: packed '$po' vs '$qo'"

# an oracle on another grid: named by --oracle, an error naming both grids (status 1, before
# any step); found beside the tiles (a VRT of part of a region next to the region's oracle),
# left out with a warning, and training goes on
gdal_translate -q -srcwin 0 0 100 100 "$ROOT/data/sample/oracle_risk.tif" "$T/oracle_part.tif"
"$WILDCPU" "${train[@]}" --oracle "$T/oracle_part.tif" --out "$T/offgrid" >"$T/offgrid.log" 2>&1
s1=$?
mkdir -p "$T/beside"
gdal_translate -q -of VRT -srcwin 0 0 256 256 "$SAMPLE" "$T/beside/tiles.vrt"
cp "$ROOT/data/sample/oracle_risk.tif" "$T/beside/oracle_risk.tif"
"$WILDCPU" --tiles "$T/beside/tiles.vrt" --steps 2 --batch 4 --micro-batch 4 --val-block 64 --no-predict \
    --out "$T/beside-run" >"$T/beside.log" 2>&1
s2=$?
[ $s1 -eq 1 ] && grep -q "error: --oracle $T/oracle_part.tif is not on the tiles' grid, .*tiles .*: [0-9]*x[0-9]* px of .*; oracle: 100x100 px of" "$T/offgrid.log" \
    && [ -z "$(ls "$T/offgrid/checkpoints" 2>/dev/null)" ] \
    && [ $s2 -eq 0 ] && grep -q "warning: oracle $T/beside/oracle_risk.tif (beside the tiles) is not on the tiles' grid: left out" "$T/beside.log" \
    && ! grep -q '"oracle_auc_pr"' "$T/beside-run/metrics.jsonl" \
    && ok "an oracle on another grid: refused when named (status 1, both grids), left out with a warning when found beside the tiles" \
    || notok "an oracle on another grid" "status $s1/$s2: $(grep -h -m1 'oracle' "$T/offgrid.log" "$T/beside.log" | cut -c1-200)"

# ... and the two grids the error names read apart however little they differ: an oracle 5 m
# north of the tiles was described with the tiles' very origin, (640000, 4.93e+06) both
gdal_translate -q -a_ullr 640000 4930005 655360 4914645 "$ROOT/data/sample/oracle_risk.tif" "$T/oracle_5m.tif"
"$WILDCPU" "${train[@]}" --oracle "$T/oracle_5m.tif" --out "$T/off5m" >"$T/off5m.log" 2>&1
s1=$?
[ $s1 -eq 1 ] && grep -q "tiles .*: 512x512 px of 30x-30, origin (640000, 4930000), EPSG:32611; oracle: 512x512 px of 30x-30, origin (640000, 4930005), EPSG:32611" "$T/off5m.log" \
    && ok "an oracle 5 m off the tiles' grid: the error gives both origins in full" \
    || notok "an oracle 5 m off the tiles' grid" "status $s1: $(grep -m1 'oracle' "$T/off5m.log" | cut -c1-400)"

# tiles in a compound CRS (UTM with NAVD88 heights, as a DEM's mosaic carries) and an oracle in
# its horizontal CRS: one grid, since a vertical CRS moves no pixel. The oracle was refused as
# "not on the tiles' grid", and every source of the mosaic said to "lie on the wrong ground"
gdal_translate -q -of VRT -a_srs EPSG:32611+5703 "$SAMPLE" "$T/compound.vrt"
"$WILDCPU" "${train[@]}" --tiles "$T/compound.vrt" --oracle "$ROOT/data/sample/oracle_risk.tif" \
    --out "$T/compound" >"$T/compound.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q '"oracle_auc_pr":[0-9]' "$T/compound/metrics.jsonl" &&
    ! grep -qE 'another CRS|wrong ground' "$T/compound.log" &&
    [ "$(oracle_of "$T/compound")" = "$(oracle_of "$T/whole")" ] \
    && ok "tiles in a compound CRS, the oracle in its horizontal CRS: one grid, the oracle scored as with plain tiles" \
    || notok "tiles in a compound CRS with an oracle in its horizontal CRS" "status $s: $(grep -m2 -E 'warning|error' "$T/compound.log" | cut -c1-300)"

# an oracle with no probability anywhere (nodata over the whole raster): its line says it has no
# figures, and never prints "nan" for them (it printed "AUC-PR nan  ROC-AUC nan")
$PY - "$ROOT/data/sample/oracle_risk.tif" "$T/oracle_none.tif" <<'PY' || notok "an oracle all nodata"
import sys
from osgeo import gdal
d = gdal.GetDriverByName("GTiff").CreateCopy(sys.argv[2], gdal.Open(sys.argv[1]))
b = d.GetRasterBand(1)
b.SetNoDataValue(-9999)
b.Fill(-9999)
d = None
PY
"$WILDCPU" --tiles "$SAMPLE" --steps 2 --batch 4 --no-predict --oracle "$T/oracle_none.tif" --out "$T/none" >"$T/none.log" 2>&1
s=$?
[ $s -eq 0 ] && ! grep -qwi "nan" "$T/none.log" &&
    grep -q "^  oracle: no probability on any of the validation pixels, so no figures" "$T/none.log" &&
    [ "$(grep -c "oracle .*oracle_none.tif has no probability in \[0, 1\] at any of the [0-9]* validation pixels .*it has no figures" "$T/none.log")" = 1 ] \
    && ok "an oracle without a probability on any validation pixel: said so once, no 'nan' figures" \
    || notok "an oracle all nodata" "status $s: $(grep -m3 -i 'oracle\|nan' "$T/none.log" | cut -c1-200)"

# Without validation (--val-fraction 0) the oracle scores no pixel: report.json has no oracle_
# members (before 2026-12-06 it had oracle_pixels 0 and every oracle figure null, as if the
# oracle had no probability on any validation pixel)
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --batch 32 --steps 2 --val-fraction 0 --no-predict \
    --out "$T/noval" >"$T/noval.log" 2>&1
s=$?
keys=$($PY -c 'import json,sys; print(" ".join(k for k in json.load(open(sys.argv[1])) if k.startswith(("oracle_", "val_"))))' "$T/noval/report.json" 2>&1)
[ $s -eq 0 ] && [ -z "$keys" ] && ok "no validation: no oracle_ or val_ members in report.json" ||
    notok "no validation: oracle members" "status $s: $keys"
finish
