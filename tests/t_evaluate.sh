#!/usr/bin/env bash
# t_evaluate.sh: `wildcpu evaluate` scores a model on a labelled raster: its AUC-PR, ROC-AUC,
# Brier and counts equal those computed by hand (Python, the definitions of metrics.h) from the
# map it writes with --map and the raster's labels; the metrics are bitwise the same on 1 and 2
# ranks; --labels polygons work; bad requests are refused with a message, and no output may
# replace an input (the labels) or another output (the map's STAC item and the metrics).
. "$(dirname "$0")/lib.sh"
# jsons FILE KEY...: top-level values of a flat JSON file, one a line, as json prints each, read
# in one python start (each costs 0.1-0.3 s)
jsons() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print("\n".join(str(d[k]) for k in sys.argv[2:]))' "$@"; }

"$WILDCPU" --tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 4 --steps 20 \
    --no-predict --out "$T/run" >"$T/train.log" 2>&1 || { notok "training" "$(tail -3 "$T/train.log")"; finish; }
"$WILDCPU" synth --out "$T/other" --size 256 --tile 128 --seed 9 >/dev/null 2>&1 || notok "synth"
other=$T/other/tiles.vrt

for n in 1 2; do
    mpirun_n $n "$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --out "$T/m$n.json" \
        --map "$T/map$n.tif" >"$T/e$n.log" 2>&1 || notok "evaluate on $n rank(s)" "$(tail -3 "$T/e$n.log")"
done
# the metrics file is written once (a max of two statuses evaluated the write twice)
[ "$(grep -c 'metrics written to' "$T/e1.log")" -eq 1 ] && [ "$(grep -c 'metrics written to' "$T/e2.log")" -eq 1 ] \
    && ok "the metrics written once, on 1 and on 2 ranks" \
    || notok "the metrics written once" "$(grep 'metrics written' "$T/e1.log" "$T/e2.log")"
PYTHONPATH="$ROOT/tests" $PY - "$T/m1.json" "$T/map1.tif" "$other" <<'PY' >"$T/hand.log" 2>&1
import json, sys
import numpy as np
from osgeo import gdal
def strict(c): raise ValueError(c)
m = json.loads(open(sys.argv[1]).read(), parse_constant=strict)
md, td = gdal.Open(sys.argv[2]), gdal.Open(sys.argv[3])
p = md.GetRasterBand(1).ReadAsArray()
fire = [i for i in range(1, td.RasterCount + 1) if td.GetRasterBand(i).GetDescription() == "fire"][0]
lb = td.GetRasterBand(fire)
lab = lb.ReadAsArray().astype(np.float64)
ok = (p != -9999) & np.isfinite(lab)
if lb.GetNoDataValue() is not None: ok &= lab != lb.GetNoDataValue()
prob, y = p[ok].astype(np.float64), (lab[ok] > 0).astype(np.int64)
from metrics_bins import B, bins_of
bins = bins_of(prob)
pos = np.bincount(bins[y == 1], minlength=B); neg = np.bincount(bins[y == 0], minlength=B)
P, N = int(pos.sum()), int(neg.sum())
tp, fp, has = np.cumsum(pos[::-1]), np.cumsum(neg[::-1]), pos[::-1] > 0
ap = float(np.sum(pos[::-1][has] / P * (tp[has] / (tp[has] + fp[has]))))
below = np.concatenate([[0], np.cumsum(neg)[:-1]])
roc = float(np.sum(pos.astype(np.float64) * (2 * below + neg))) / (2.0 * P * N)
d = prob - y
brier = float(np.sum(np.floor(d * d * 2.0 ** 31 + 0.5))) / 2.0 ** 31 / (P + N)
# counts exactly; the averages to 1e-12 (the two sums add the same terms in other orders)
bad = [k for k, v in (("pixels", P + N), ("positives", P)) if m[k] != v]
bad += [k for k, v in (("auc_pr", ap), ("roc_auc", roc), ("brier", brier), ("base_rate", P / (P + N)))
        if abs(m[k] - v) > 1e-12 * max(1.0, abs(v))]
assert len(m["calibration"]) == 10 and sum(b["pixels"] for b in m["calibration"]) == P + N
print("%d pixels, base rate %.4f, AUC-PR %.6f (hand %.6f), ROC-AUC %.6f" % (P + N, m["base_rate"], m["auc_pr"], ap, roc))
if bad: raise SystemExit("differ: " + ", ".join("%s %r vs %r" % (k, m[k], dict(pixels=P+N, positives=P, auc_pr=ap, roc_auc=roc, brier=brier, base_rate=P/(P+N))[k]) for k in bad))
PY
[ $? -eq 0 ] && ok "evaluate's metrics equal the hand-computed ones from its map ($(tail -1 "$T/hand.log"))" \
    || notok "evaluate against a hand computation" "$(tail -3 "$T/hand.log")"
strip() { sed 's/"created":"[^"]*",//; s/"map":"[^"]*",//' "$1"; }   # the maps' names differ
[ -s "$T/m1.json" ] && [ "$(strip "$T/m1.json")" = "$(strip "$T/m2.json")" ] &&
    $PY -c 'import sys; from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:3]]  # held while their bands are used
c = [d.GetRasterBand(1).Checksum() for d in ds]
sys.exit(c[0] != c[1])' "$T/map1.tif" "$T/map2.tif" \
    && ok "evaluate on 1 and 2 ranks: the same metrics, bit for bit, and the same map" \
    || notok "evaluate on 1 and 2 ranks" "$(diff <(strip "$T/m1.json") <(strip "$T/m2.json") | head -3)"

# without --map nothing but the metrics is written; --labels polygons (another CRS) work
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" >"$T/nomap.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "evaluate: .* AUC-PR" "$T/nomap.log" && ! ls "$T"/*.tif.tmp* >/dev/null 2>&1 \
    && ok "evaluate without --map or --out: metrics printed, nothing written" || notok "evaluate, no outputs" "status $s"
# ... and it says how far it is as the map does (every 5 s and at the end), where it was silent
# until its metrics (minutes on a large raster)
grep -q "^evaluate: rows 0-255 of 256 (100%): [0-9.]* s, [0-9.]* Mpx/s" "$T/nomap.log" \
    && ok "evaluate without --map says its progress: $(grep -m1 '^evaluate: rows' "$T/nomap.log")" \
    || notok "evaluate without --map says its progress" "$(head -3 "$T/nomap.log")"
$PY - "$other" "$T/burn.geojson" <<'PY' >/dev/null 2>&1
import json, sys
from osgeo import gdal, osr
d = gdal.Open(sys.argv[1]); gt = d.GetGeoTransform()
src = osr.SpatialReference(); src.ImportFromWkt(d.GetProjection())
dst = osr.SpatialReference(); dst.ImportFromEPSG(4326); dst.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
tr = osr.CoordinateTransformation(src, dst)
x0, y0 = gt[0] + 40 * gt[1], gt[3] + 40 * gt[5]; x1, y1 = gt[0] + 200 * gt[1], gt[3] + 120 * gt[5]
ring = [tr.TransformPoint(x, y)[:2] for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0))]
json.dump({"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {},
           "geometry": {"type": "Polygon", "coordinates": [ring]}}]}, open(sys.argv[2], "w"))
PY
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/burn.geojson" \
    --out "$T/poly/m.json" >"$T/poly.log" 2>&1
s1=$?
mkdir -p "$T/poly"
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/burn.geojson" \
    --out "$T/poly/m.json" >"$T/poly.log" 2>&1
s=$?
pos=$(json "$T/poly/m.json" positives)
[ $s1 -ne 0 ] && [ $s -eq 0 ] && [ "$pos" -gt 1000 ] && ls "$T/poly"/labels-*.tif >/dev/null 2>&1 \
    && ok "--labels polygons in EPSG:4326: rasterized beside --out and scored ($pos burned pixels)" \
    || notok "evaluate with --labels polygons" "status $s1/$s: $(tail -2 "$T/poly.log")"
# ... beside --map when there is no --out (not in the current directory, which may be read-only)
mkdir -p "$T/poly2"
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/burn.geojson" \
    --map "$T/poly2/risk.tif" >"$T/poly2.log" 2>&1
s=$?
[ $s -eq 0 ] && ls "$T/poly2"/labels-*.tif >/dev/null 2>&1 && ! ls labels-*.tif >/dev/null 2>&1 \
    && ok "--labels polygons without --out: rasterized beside --map" \
    || notok "polygons rasterized beside --map" "status $s: $(tail -2 "$T/poly2.log")"
# Given relative paths, the metrics record them absolute, as the map's metadata does: the file is
# read from anywhere (its directory, a notebook's), where a relative path leads elsewhere.
mkdir -p "$T/rel"
(cd "$T" && "$WILDCPU" evaluate --tiles other/tiles.vrt --checkpoint run --labels burn.geojson \
    --out rel/m.json --map rel/risk.tif) >"$T/rel.log" 2>&1
s=$?
$PY - "$T/rel/m.json" "$T/rel/risk.tif" "$(cd "$T" && pwd -P)" <<'PY' >"$T/rel.check" 2>&1
import json, os, sys
from osgeo import gdal
m, md, t = json.load(open(sys.argv[1])), gdal.Open(sys.argv[2]).GetMetadata(), sys.argv[3]
want = {"tiles": t + "/other/tiles.vrt", "map": t + "/rel/risk.tif",
        "checkpoint": md["checkpoint"], "labels": None}
bad = ["%s: %r, want %r" % (k, m[k], v) for k, v in want.items() if v is not None and m[k] != v]
if md["input"] != m["tiles"]: bad.append("the map's input %r, the metrics' tiles %r" % (md["input"], m["tiles"]))
if not m["checkpoint"].startswith(t + "/run/"): bad.append("checkpoint %r" % m["checkpoint"])
if " of %s/rel/labels-" % t not in m["labels"] or "(from %s/burn.geojson)" % t not in m["labels"]:
    bad.append("labels %r" % m["labels"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
c=$?
[ $s -eq 0 ] && [ $c -eq 0 ] \
    && ok "relative --tiles, --checkpoint, --labels, --map: the metrics record them absolute, as the map" \
    || notok "absolute paths in the metrics" "status $s: $(tail -3 "$T/rel.log"; cat "$T/rel.check")"

# refusals
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --label-band burned >"$T/bad1.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "no .*band 'burned'\|band 'burned'" "$T/bad1.log" && grep -q "elevation" "$T/bad1.log" \
    && ok "a label band that does not exist: exit 1, the bands listed" || notok "missing label band" "status $s: $(tail -2 "$T/bad1.log")"
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --out "$other" >"$T/bad2.log" 2>&1
s=$?
[ $s -eq 2 ] && grep -q "is an input\|that is an input" "$T/bad2.log" \
    && ok "--out naming an input: exit 2" || notok "--out an input" "status $s: $(tail -2 "$T/bad2.log")"
# Every file evaluate writes is checked against every file it reads and against each other,
# before any computing: the map's STAC item (NAME.json) must not replace the metrics or
# perimeters of that name, the map must not replace the labels.
refused() { # refused NAME PATTERN FILE... -- ARGS: exit 2, the message, FILEs unchanged
    local name=$1 pattern=$2 files=() sums
    shift 2
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    sums=$(md5sum "${files[@]}" 2>/dev/null)
    mpirun_n 2 "$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" "$@" >"$T/refused.log" 2>&1
    local s=$?
    [ $s -eq 2 ] && grep -q "$pattern" "$T/refused.log" && [ "$(md5sum "${files[@]}" 2>/dev/null)" = "$sums" ] \
        && ok "$name: exit 2, nothing replaced" || notok "$name" "status $s: $(tail -2 "$T/refused.log")"
}
mkdir -p "$T/c"
gdal_translate -q -b "$($PY -c "
from osgeo import gdal; d = gdal.Open('$other')
print([i for i in range(1, d.RasterCount + 1) if d.GetRasterBand(i).GetDescription() == 'fire'][0])")" \
    "$other" "$T/c/fire.tif" && gdal_polygonize.py -q "$T/c/fire.tif" -f GeoJSON "$T/c/east.json" >/dev/null 2>&1 \
    || notok "labels for the collision checks"
refused "--labels east.json with --map east.tif (the item would replace the perimeters)" \
    "STAC item (named after the map) to .*east.json: that is an input" "$T/c/east.json" -- \
    --labels "$T/c/east.json" --map "$T/c/east.tif"
refused "--map equal to --labels" "risk map to .*fire.tif: that is an input" "$T/c/fire.tif" -- \
    --labels "$T/c/fire.tif" --map "$T/c/fire.tif"
cp "$T/m1.json" "$T/c/m.json"
refused "--out m.json with --map m.tif (the item would replace the metrics)" \
    "metrics to .*m.json: the STAC item (named after the map) goes there too" "$T/c/m.json" -- \
    --out "$T/c/m.json" --map "$T/c/m.tif"
[ ! -e "$T/c/m.tif" ] && [ ! -e "$T/c/east.tif" ] && ok "... and no map was written" || notok "a refused run wrote a map"
# an output that is not a regular file (a pipe here; /dev/null alike) would be replaced whole by
# the rename that publishes it: refused, the pipe left as it was
mkfifo "$T/c/pipe"
for opt in --out --map; do
    mpirun_n 2 "$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" $opt "$T/c/pipe" >"$T/pipe.log" 2>&1
    s=$?
    [ $s -eq 2 ] && grep -q "to $T/c/pipe: it is not a regular file" "$T/pipe.log" && [ -p "$T/c/pipe" ] \
        && ok "$opt naming a pipe: exit 2, the pipe still a pipe" || notok "$opt naming a pipe" "status $s: $(tail -1 "$T/pipe.log")"
done
"$WILDCPU" export --checkpoint "$T/run" --out "$T/c/pipe" >"$T/pipe.log" 2>&1
s=$?
[ $s -ne 0 ] && grep -q "it is not a regular file" "$T/pipe.log" && [ -p "$T/c/pipe" ] \
    && ok "export to a pipe: refused, the pipe still a pipe" || notok "export to a pipe" "status $s: $(tail -1 "$T/pipe.log")"

# The tiles' label band under another name, chosen with --label-band (by name or number): it is
# the labels, not a feature the model lacks; the metrics are those of the band named fire.
$PY - "$other" "$T/c/renamed.vrt" <<'PY' || notok "a VRT with the label band renamed"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
b = [d.GetRasterBand(i) for i in range(1, d.RasterCount + 1) if d.GetRasterBand(i).GetDescription() == "fire"][0]
b.SetDescription("burned")
d = None
PY
fire_band=$($PY -c "
from osgeo import gdal; d = gdal.Open('$T/c/renamed.vrt')
print([i for i in range(1, d.RasterCount + 1) if d.GetRasterBand(i).GetDescription() == 'burned'][0])")
m1=$(jsons "$T/m1.json" auc_pr pixels)
for sel in burned "$fire_band"; do
    mpirun_n 2 "$WILDCPU" evaluate --tiles "$T/c/renamed.vrt" --checkpoint "$T/run" --label-band "$sel" \
        --out "$T/c/renamed.json" >"$T/renamed.log" 2>&1
    s=$?
    [ $s -eq 0 ] && [ "$(jsons "$T/c/renamed.json" auc_pr pixels)" = "$m1" ] \
        && ok "--label-band $sel on the tiles: that band is the labels, the metrics as with 'fire'" \
        || notok "--label-band $sel on the tiles" "status $s: $(grep -m1 error "$T/renamed.log")"
done
mpirun_n 2 "$WILDCPU" evaluate --tiles "$T/c/renamed.vrt" --checkpoint "$T/run" --label-band 1 \
    >"$T/input_label.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "band 1 '.*' is the label band and an input of the model" "$T/input_label.log" \
    && ok "--label-band naming an input of the model: exit 1, said so" \
    || notok "--label-band naming an input" "status $s: $(grep -m1 error "$T/input_label.log")"
# A model trained on a label band of another name is scored on that band without --label-band
# (the other region's 'fire' may mean something else): the metrics of --label-band burned.
$PY - "$SAMPLE" "$T/c/sample_burned.vrt" <<'PY' || notok "the sample with its label band renamed"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
[d.GetRasterBand(i) for i in range(1, d.RasterCount + 1)
 if d.GetRasterBand(i).GetDescription() == "fire"][0].SetDescription("burned")
d = None
PY
"$WILDCPU" --tiles "$T/c/sample_burned.vrt" --label-band burned --model logistic --patch 32 \
    --batch 8 --micro-batch 4 --steps 4 --no-predict --out "$T/run_burned" >"$T/train_burned.log" 2>&1 \
    || notok "training on 'burned'" "$(tail -2 "$T/train_burned.log")"
"$WILDCPU" evaluate --tiles "$T/c/renamed.vrt" --checkpoint "$T/run_burned" --out "$T/c/default_band.json" \
    >"$T/default_band.log" 2>&1
s=$?
"$WILDCPU" evaluate --tiles "$T/c/renamed.vrt" --checkpoint "$T/run_burned" --label-band burned \
    --out "$T/c/named_band.json" >/dev/null 2>&1
[ $s -eq 0 ] && grep -q "labels from the band described 'burned'" "$T/default_band.log" \
    && [ "$(jsons "$T/c/default_band.json" auc_pr labels)" = "$(jsons "$T/c/named_band.json" auc_pr labels)" ] \
    && ok "a model trained on 'burned': evaluate scores 'burned' without --label-band, said so" \
    || notok "evaluate's default label band from the checkpoint" "status $s: $(tail -2 "$T/default_band.log")"
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run_burned" >"$T/no_burned.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "no label band 'burned'.*--label-band" "$T/no_burned.log" \
    && ok "... and refuses a raster without 'burned' (exit 1), naming --label-band" \
    || notok "evaluate, the training label band missing" "status $s: $(tail -2 "$T/no_burned.log")"

# A model that predicts below 0.5 everywhere (4 steps of training on a region 6% burned): precision
# at 0.5 is 0/0, said in words on the summary line (it printed "precision nan") and null in the
# metrics, which stay strict JSON; recall at 0.5 is 0.
"$WILDCPU" evaluate --tiles "$T/c/renamed.vrt" --checkpoint "$T/run_burned" \
    --out "$T/c/low.json" >"$T/low.log" 2>&1
s=$?
$PY - "$T/c/low.json" <<'PY' >"$T/low.check" 2>&1
import json, sys
def strict(c): raise ValueError(c)
m = json.loads(open(sys.argv[1]).read(), parse_constant=strict)
above = sum(b["pixels"] for b in m["calibration"] if b["from"] >= 0.5)
bad = [] if above == 0 else ["%d pixels predicted >= 0.5: the case is not made" % above]
bad += ["%s %r" % (k, m[k]) for k, v in (("precision_at_half", None), ("recall_at_half", 0.0))
        if m[k] != v]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
c=$?
summary=$(grep "evaluate: .* AUC-PR" "$T/low.log")
want="precision undefined and recall 0.0000 at 0.5 (no pixel predicted >= 0.5)"
[ $s -eq 0 ] && [ $c -eq 0 ] && grep -qF "$want" <<<"$summary" && ! grep -qwi "nan" <<<"$summary" \
    && ok "no pixel predicted >= 0.5: precision 'undefined' in the summary, null in the metrics" \
    || notok "precision at 0.5 with no pixel predicted >= 0.5" \
        "status $s: $(cat "$T/low.check"; echo "$summary")"

# Two bands described 'fire' (the label band chosen by number in training): evaluate takes the
# same number when that band carries the name, with the metrics of --label-band 13.
for pair in "$SAMPLE:twofire_sample" "$other:twofire_other"; do
    $PY - "${pair%%:*}" "$T/c/${pair##*:}.vrt" <<'PY' || notok "a VRT with two bands described fire"
import sys
from osgeo import gdal
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
d.GetRasterBand(12).SetDescription("fire")
d = None
PY
done
"$WILDCPU" --tiles "$T/c/twofire_sample.vrt" --label-band 13 --model logistic --patch 32 --batch 8 \
    --micro-batch 4 --steps 4 --no-predict --out "$T/run_twofire" >"$T/train_twofire.log" 2>&1 \
    || notok "training with two bands described fire" "$(tail -2 "$T/train_twofire.log")"
"$WILDCPU" evaluate --tiles "$T/c/twofire_other.vrt" --checkpoint "$T/run_twofire" \
    --out "$T/c/twofire_default.json" >"$T/twofire_default.log" 2>&1
s=$?
"$WILDCPU" evaluate --tiles "$T/c/twofire_other.vrt" --checkpoint "$T/run_twofire" --label-band 13 \
    --out "$T/c/twofire_13.json" >/dev/null 2>&1
[ $s -eq 0 ] && grep -q "labels from band 13 (fire)" "$T/twofire_default.log" \
    && [ "$(jsons "$T/c/twofire_default.json" auc_pr labels)" = "$(jsons "$T/c/twofire_13.json" auc_pr labels)" ] \
    && ok "two bands described 'fire', trained on band 13: evaluate scores band 13 without --label-band" \
    || notok "evaluate's default label band by number" "status $s: $(tail -2 "$T/twofire_default.log")"

# Derived labels (warped onto the grid) are kept for reuse, but never once their source changed:
# a tile of a label VRT rewritten in place gives new labels.
gdalwarp -q -t_srs EPSG:4326 "$T/c/fire.tif" "$T/c/fire4326.tif" && gdalbuildvrt -q "$T/c/lab.vrt" "$T/c/fire4326.tif" \
    || notok "a label VRT on another grid"
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/c/lab.vrt" --out "$T/c/lab1.json" \
    >"$T/lab1.log" 2>&1
$PY - "$T/c/fire4326.tif" <<'PY' || notok "rewriting the label tile"
import sys
from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update)
b = d.GetRasterBand(1)
a = b.ReadAsArray()
a[a == 1] = 0
b.WriteArray(a)
d = None
PY
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/c/lab.vrt" --out "$T/c/lab2.json" \
    >"$T/lab2.log" 2>&1
r1=$(json "$T/c/lab1.json" base_rate) r2=$(json "$T/c/lab2.json" base_rate)
[ "$(echo "$r1 > 0.01" | bc -l)" = 1 ] && [ "$r2" = 0.0 ] \
    && ok "a label VRT's tile rewritten in place: new labels, not the derived raster of the old (base rate $r1, then $r2)" \
    || notok "derived labels after their source changed" "base rate $r1 then $r2"

# Labels with nothing to score are said so: all nodata (or off the raster) is an error with no
# metrics written; no burned pixel, or only burned ones, a warning naming what is undefined.
$PY - "$T/c/fire.tif" "$T/c" <<'PY' || notok "degenerate labels"
import sys
from osgeo import gdal
src = gdal.Open(sys.argv[1])
for name, value in (("nodata", 255), ("none", 0), ("all", 1)):
    d = gdal.GetDriverByName("GTiff").CreateCopy(f"{sys.argv[2]}/{name}.tif", src)
    b = d.GetRasterBand(1)
    b.SetNoDataValue(255)
    b.Fill(value)
    d = None
PY
mpirun_n 2 "$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/c/nodata.tif" \
    --out "$T/c/nodata.json" >"$T/nodata.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "nothing to score" "$T/nodata.log" && [ ! -e "$T/c/nodata.json" ] \
    && ok "labels all nodata: exit 1, 'nothing to score', no metrics file" \
    || notok "labels all nodata" "status $s: $(tail -2 "$T/nodata.log")"
for l in none all; do
    mpirun_n 2 "$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/c/$l.tif" \
        --out "$T/c/$l.json" >"$T/$l.log" 2>&1
    s=$?
    case $l in
    none) want="none of the .* labelled pixels is burned: AUC-PR, ROC-AUC and best F1 are undefined" ;;
    all) want="all .* labelled pixels are burned: ROC-AUC is undefined" ;;
    esac
    [ $s -eq 0 ] && grep -q "warning: evaluate: $want" "$T/$l.log" && [ "$(json "$T/c/$l.json" roc_auc)" = None ] \
        && grep -q "ROC-AUC undefined" "$T/$l.log" && ! grep -qw nan "$T/$l.log" \
        && ok "labels with $l burned: exit 0, a warning, ROC-AUC null, 'undefined' (never 'nan') in the summary" \
        || notok "labels with $l burned" "status $s: $(grep -m2 'warn\|error' "$T/$l.log")"
done
[ "$(json "$T/c/all.json" auc_pr)" = 1.0 ] && ok "... and AUC-PR exactly 1 when every pixel is burned" \
    || notok "AUC-PR with every pixel burned" "$(json "$T/c/all.json" auc_pr)"

"$WILDCPU" evaluate --tiles "$other" >"$T/bad3.log" 2>&1
[ $? -eq 2 ] && ok "evaluate without --checkpoint: usage error" || notok "evaluate usage"

# two evaluate --map to one path at once, their labels warped first (seconds between checking
# for another writer and creating the working file): exactly one is refused, and never both
# written (the later replaced the earlier's map under its companions, both status 0) nor both
# refused (each saw the other's claim: likeliest when they arrive together, with labels read at
# once); four rounds, since arrival order varies
mkdir -p "$T/race"
gdal_translate -q -b 13 "$SAMPLE" "$T/race/fire.tif"
gdalwarp -q -t_srs EPSG:4326 -ts 3000 3000 "$T/race/fire.tif" "$T/race/fire_ll.tif"
race_failed=""
for round in 1 2 3 4; do
    mkdir -p "$T/race/$round"
    labels=$T/race/fire.tif
    [ $round = 1 ] && labels=$T/race/fire_ll.tif
    "$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/run" --labels "$labels" \
        --map "$T/race/$round/risk.tif" >"$T/race1.log" 2>&1 &
    p1=$!
    "$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/run" --labels "$labels" \
        --map "$T/race/$round/risk.tif" >"$T/race2.log" 2>&1
    s2=$?
    wait $p1
    s1=$?
    left=$(ls -A "$T/race/$round" | grep -c '^\.')
    { [ $s1 -ne 0 ] || [ $s2 -ne 0 ]; } && [ $((s1 + s2)) -eq 1 ] && [ -s "$T/race/$round/risk.tif" ] &&
        grep -q "refusing to write the risk map to $T/race/$round/risk.tif: wildcpu process [0-9]* on this host is writing it now" "$T/race1.log" "$T/race2.log" &&
        [ "$left" = 0 ] ||
        race_failed+="round $round: statuses $s1 $s2, $left hidden files left: $(grep -h refusing "$T/race1.log" "$T/race2.log"); "
done
[ -z "$race_failed" ] \
    && ok "two evaluate --map to one path at once (4 rounds): one refused (status 1), the other written, no working file left" \
    || notok "two evaluate --map at once" "$race_failed"
# ... and one run under `flock DIR` (which holds the lock on the map's directory for the whole
# command, as job scripts serialize with): written, not waiting for ever on the lock
mkdir -p "$T/race/held"
timeout -s KILL 120 flock "$T/race/held" "$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/run" \
    --labels "$T/race/fire.tif" --map "$T/race/held/risk.tif" >"$T/held.log" 2>&1
s=$?
[ $s -eq 0 ] && [ -s "$T/race/held/risk.tif" ] \
    && ok "evaluate --map into a directory held by flock: written (status 0)" \
    || notok "evaluate --map under flock DIR" "status $s: $(tail -2 "$T/held.log")"

# One burned pixel among 61 thousand: its share is printed with its digits and its count, not
# as "0.00% burned", which read as labels without a burned pixel
$PY - "$other" "$T/single.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal
s = gdal.Open(sys.argv[1])
a = np.zeros((s.RasterYSize, s.RasterXSize), np.uint8)
a[100, 100] = 1
d = gdal.GetDriverByName("GTiff").Create(sys.argv[2], s.RasterXSize, s.RasterYSize, 1, gdal.GDT_Byte)
d.SetGeoTransform(s.GetGeoTransform()); d.SetProjection(s.GetProjection())
d.GetRasterBand(1).WriteArray(a); d = None
PY
"$WILDCPU" evaluate --tiles "$other" --checkpoint "$T/run" --labels "$T/single.tif" >"$T/single.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "^evaluate: .*: [0-9]* pixels, 0\.00[0-9]*[1-9][0-9]*% burned (1 pixel; the base rate" "$T/single.log" \
    && ok "one burned pixel: its share printed with its digits and its count" \
    || notok "one burned pixel's share" "status $s: $(grep -o 'pixels, .* burned ([^;]*' "$T/single.log")"

finish
