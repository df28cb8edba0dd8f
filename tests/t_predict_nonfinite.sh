#!/usr/bin/env bash
# t_predict_nonfinite.sh: no non-finite probability ever reaches the map, its class band, its
# picture or the reported nodata share, whatever the feature values.
#
# Two real models and rasters built with python3-gdal from the sample:
#   - unet-lite trained on the sample, mapping a copy whose Float32 tiles hold +-3e38 in blocks
#     (beyond float's range once normalized): those pixels are nodata and counted;
#   - a logistic model trained on a Float64 copy, mapping a copy with 1e308 in two bands whose
#     weights have opposite signs (an inf - inf = NaN logit before the fix, the reported
#     "all-NaN map" and class-histogram overflow), and blocks whose normalized features are
#     finite but push the logit beyond float's range (+inf, -inf; read from the exported weights
#     and normalization): those are nodata and counted as non-finite network outputs.
# Each map is checked with GDAL's Python bindings: every pixel is a probability in [0, 1] or
# -9999; nodata is exactly where a feature is nodata or hostile; the log's counts and nodata
# share are the true ones; --classes and --png run (under SAN=1 any out-of-bounds bin fails).
. "$(dirname "$0")/lib.sh"

# check_map NAME MAP LOG INPUT MASKS [CLASSES]: the checks above. MASKS is a .npz of boolean
# masks: 'range' (features beyond float once normalized) and 'net' (non-finite network output).
check_map() {
    local name=$1
    shift
    if $PY - "$@" >"$T/check.txt" 2>&1 <<'PY'; then
import re, sys
import numpy as np
from osgeo import gdal
mpath, log, inp, masks = sys.argv[1:5]
mds = gdal.Open(mpath)  # kept open: a band outliving its dataset crashes GDAL 3.6's bindings
m = mds.GetRasterBand(1).ReadAsArray()
assert np.isfinite(m).all(), f"{int((~np.isfinite(m)).sum())} NaN/Inf pixels in the map"
nod = m == -9999
assert ((m[~nod] >= 0) & (m[~nod] <= 1)).all(), "a valid pixel outside [0, 1]"
src = gdal.Open(inp)
invalid = np.zeros(m.shape, bool)
for i in range(1, src.RasterCount):  # the features (the last band is the label)
    b = src.GetRasterBand(i)
    a = b.ReadAsArray()
    invalid |= ~np.isfinite(a)
    if b.GetNoDataValue() is not None:
        invalid |= a == b.GetNoDataValue()
k = np.load(masks)
rng, net = k["range"] & ~invalid, k["net"] & ~invalid
assert nod[rng].all(), f"{int((~nod[rng]).sum())} pixels with features beyond float are not nodata"
assert nod[net].all(), f"{int((~nod[net]).sum())} pixels with a non-finite logit are not nodata"
want = invalid | rng | net
assert (nod == want).all(), f"{int((nod != want).sum())} pixels nodata where they should not be, or not where they should"
text = open(log).read()
def count(pattern):
    hits = re.findall(pattern, text)
    assert len(hits) <= 1, f"reported {len(hits)} times: {pattern}"
    return int(hits[0]) if hits else 0
n_range = count(r"(\d+) pixels? ha(?:ve|s) a feature value beyond float's range once normalized")
n_net = count(r"(\d+) pixels? gave a non-finite network output \(feature values far outside the training range\?\): written as nodata")
# hostile values, not the model: its neighbours' outputs are never blamed on a divergence
assert "weights have diverged" not in text, "non-finite outputs near hostile values blamed on the model"
assert n_range == rng.sum(), f"log says {n_range} beyond float's range, the map has {int(rng.sum())}"
assert n_net == net.sum(), f"log says {n_net} non-finite outputs, the map has {int(net.sum())}"
share = re.findall(r"px, ([0-9.]+)% nodata", text)
assert share and abs(float(share[-1]) - 100 * nod.mean()) < 0.051, f"reported {share}% nodata, the map has {100 * nod.mean():.2f}%"
assert mds.RasterCount == 1, "the map has one band"
cds = gdal.Open(mpath[:-len(".tif")] + "_classes.tif")  # --classes: the class raster beside it
if cds is not None:
    c = cds.GetRasterBand(1).ReadAsArray()
    assert ((c == 255) == nod).all(), "class raster nodata differs"
    assert np.isin(c[~nod], [0, 1, 2, 3, 4]).all(), "a class outside 0..4"
    breaks = [float(x) for x in cds.GetRasterBand(1).GetMetadataItem("class_breaks").split(",")]
    assert all(0 <= x <= 1 for x in breaks), f"a class break beyond [0, 1]: {breaks}"
print(f"{int(nod.sum())} nodata pixels: {int(rng.sum())} beyond float's range, {int(net.sum())} non-finite outputs; reported share {share[-1]}%")
PY
        ok "$name: $(tail -1 "$T/check.txt")"
    else
        notok "$name" "$(tail -3 "$T/check.txt") | $(grep -E 'error|warn' "$3" | head -3)"
    fi
}

# ---- unet-lite, Float32 tiles holding +-3e38 --------------------------------------------------
"$WILDCPU" --tiles "$SAMPLE" --out "$T/unet" --steps 4 --batch 8 --no-predict >"$T/train.log" 2>&1 \
    || { notok "train unet-lite on the sample" "$(tail -3 "$T/train.log")"; finish; }
cp -r "$ROOT/data/sample" "$T/f32"
$PY - "$T/f32/tiles/r00_c00_f32.tif" "$T/f32.npz" <<'PY' >"$T/plant.log" 2>&1 \
    || notok "planting 3e38 with python3-gdal" "$(tail -2 "$T/plant.log")"
import sys
import numpy as np
from osgeo import gdal
ds = gdal.Open(sys.argv[1], gdal.GA_Update)  # the tile at the sample's top left, 11 Float32 bands
rng = np.zeros((512, 512), bool)
for band, (y, x), v in ((4, (64, 64), 3e38), (2, (160, 32), -3e38)):  # ndvi, aspect_sin
    b = ds.GetRasterBand(band)
    a = b.ReadAsArray()
    a[y:y + 40, x:x + 96] = v
    b.WriteArray(a)
    rng[y:y + 40, x:x + 96] = True
ds = None
np.savez(sys.argv[2], range=rng, net=np.zeros((512, 512), bool))
PY
timeout 300 "$WILDCPU" predict --tiles "$T/f32/tiles.vrt" --checkpoint "$T/unet" --out "$T/f32.tif" \
    --classes --png "$T/f32.png" >"$T/f32.log" 2>&1
st=$?
[ $st -eq 0 ] && ok "unet-lite over +-3e38 Float32 features: exit 0" \
    || notok "unet-lite over +-3e38 Float32 features: exit 0" "exit $st: $(tail -3 "$T/f32.log")"
check_map "unet-lite, +-3e38 Float32: nodata exactly there, counted once" \
    "$T/f32.tif" "$T/f32.log" "$T/f32/tiles.vrt" "$T/f32.npz"

# ---- logistic, Float64 -------------------------------------------------------------------------
# a Float64 copy with one nodata value for every band (GeoTIFF keeps one per file)
$PY - "$SAMPLE" "$T/f64.tif" <<'PY' >"$T/f64.log" 2>&1 || notok "Float64 copy" "$(tail -2 "$T/f64.log")"
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
dst = gdal.GetDriverByName("GTiff").Create(sys.argv[2], src.RasterXSize, src.RasterYSize,
                                           src.RasterCount, gdal.GDT_Float64)
dst.SetGeoTransform(src.GetGeoTransform())
dst.SetProjection(src.GetProjection())
for i in range(1, src.RasterCount + 1):
    s, d = src.GetRasterBand(i), dst.GetRasterBand(i)
    a = s.ReadAsArray().astype(np.float64)
    a[a == s.GetNoDataValue()] = -9999
    d.SetDescription(s.GetDescription())
    d.SetNoDataValue(-9999)
    d.WriteArray(a)
dst = None
PY
# (a learning rate large enough that the zero-initialized weights grow to overflow the logit)
"$WILDCPU" --tiles "$T/f64.tif" --out "$T/logistic" --model logistic --steps 3 --lr 1 --batch 8 \
    --no-predict >"$T/train64.log" 2>&1 \
    || { notok "train a logistic model on the Float64 copy" "$(tail -3 "$T/train64.log")"; finish; }
"$WILDCPU" export --checkpoint "$T/logistic" --out "$T/logistic.safetensors" >"$T/export.log" 2>&1 \
    || notok "export the logistic model" "$(tail -2 "$T/export.log")"
cp "$T/f64.tif" "$T/h64.tif"
$PY - "$T/logistic.safetensors" "$T/h64.tif" "$T/h64.npz" <<'PY' >"$T/plant64.log" 2>&1
import json, struct, sys
import numpy as np
from osgeo import gdal
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
meta = json.loads(head["__metadata__"]["wildcpu"])
mean = np.array([c["mean"] for c in meta["input_channels"]])
std = np.array([c["std"] for c in meta["input_channels"]])
s, e = head["h.weight"]["data_offsets"]
w = np.frombuffer(raw[8 + n + s:8 + n + e], np.float32).astype(np.float64)
# normalized features of magnitude M, signed like the weights: every product w*x has one sign,
# so the logit's sum is sum|w| * M, beyond float's range when sum|w| * M > FLT_MAX
M = 0.99 * float(np.finfo(np.float32).max)
assert np.abs(w).sum() * M > 1.5 * float(np.finfo(np.float32).max), f"weights too small to overflow: {w}"
ds = gdal.Open(sys.argv[2], gdal.GA_Update)
bands = [ds.GetRasterBand(i + 1).ReadAsArray() for i in range(len(w))]
rng = np.zeros(bands[0].shape, bool)
net = np.zeros(bands[0].shape, bool)
# 1e308 in the bands of the largest and the smallest weight: +inf and -inf inputs before the fix
for c in (int(np.argmax(w)), int(np.argmin(w))):
    bands[c][40:100, 40:100] = 1e308
rng[40:100, 40:100] = True
bands[1][40:100, 200:260] = 1e308  # slope alone
rng[40:100, 200:260] = True
for (y, x), sign in (((300, 300), 1.0), ((400, 100), -1.0)):
    for c in range(len(w)):
        bands[c][y:y + 40, x:x + 60] = mean[c] + sign * np.sign(w[c]) * M * std[c]
    net[y:y + 40, x:x + 60] = True
for i, a in enumerate(bands):
    ds.GetRasterBand(i + 1).WriteArray(a)
ds = None
np.savez(sys.argv[3], range=rng, net=net)
print("sum|w| =", np.abs(w).sum())
PY
[ $? -eq 0 ] || notok "planting 1e308 and overflowing features" "$(tail -2 "$T/plant64.log")"
for n in 1 2; do
    timeout 300 mpirun --oversubscribe --bind-to none -np $n "$WILDCPU" predict --tiles "$T/h64.tif" --checkpoint "$T/logistic" \
        --out "$T/h64_np$n.tif" --classes --png "$T/h64_np$n.png" >"$T/h64_np$n.log" 2>&1
    st=$?
    [ $st -eq 0 ] && ok "logistic over 1e308 and overflowing Float64 features, $n rank(s): exit 0" \
        || notok "logistic over hostile Float64 features, $n rank(s): exit 0" "exit $st: $(tail -3 "$T/h64_np$n.log")"
    check_map "logistic, hostile Float64 on $n rank(s): nodata exactly there, counted once" \
        "$T/h64_np$n.tif" "$T/h64_np$n.log" "$T/h64.tif" "$T/h64.npz"
done
gdal_translate -q -of ENVI -b 1 "$T/h64_np1.tif" "$T/np1.raw" && gdal_translate -q -of ENVI -b 1 "$T/h64_np2.tif" "$T/np2.raw"
cmp -s "$T/np1.raw" "$T/np2.raw" && ok "the hostile map is bitwise the same on 1 and 2 ranks" \
    || notok "the hostile map is bitwise the same on 1 and 2 ranks"
$PY - "$T/h64_np1.png" "$T/h64.npz" <<'PY' >"$T/png.txt" 2>&1 \
    && ok "picture: the hostile blocks are transparent" || notok "picture: the hostile blocks are transparent" "$(tail -2 "$T/png.txt")"
import sys
import numpy as np
from osgeo import gdal
p = gdal.Open(sys.argv[1])
alpha = p.GetRasterBand(4).ReadAsArray()[:512, :512]
k = np.load(sys.argv[2])
assert (alpha[k["range"] | k["net"]] == 0).all()
PY
# evaluate against labels only where the network's output is not finite: the metrics are
# undefined because of the model (counted, said so), not "nothing to score" because of the labels
$PY - "$T/h64.tif" "$T/h64.npz" "$T/netlab.tif" <<'PY' >"$T/netlab.log" 2>&1 || notok "labels on the non-finite blocks" "$(tail -2 "$T/netlab.log")"
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
net = np.load(sys.argv[2])["net"]
d = gdal.GetDriverByName("GTiff").Create(sys.argv[3], src.RasterXSize, src.RasterYSize, 1, gdal.GDT_Byte)
d.SetGeoTransform(src.GetGeoTransform())
d.SetProjection(src.GetProjection())
b = d.GetRasterBand(1)
b.SetNoDataValue(255)
b.WriteArray(np.where(net, 1, 255).astype(np.uint8))
d = None
print(int(net.sum()))
PY
n_net=$(tail -1 "$T/netlab.log")
"$WILDCPU" evaluate --tiles "$T/h64.tif" --checkpoint "$T/logistic" --labels "$T/netlab.tif" \
    --out "$T/netlab.json" >"$T/netlab_eval.log" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "output was not finite on $n_net labelled pixels" "$T/netlab_eval.log" &&
    ! grep -q "nothing to score" "$T/netlab_eval.log" && [ "$(json "$T/netlab.json" bad_outputs)" = "$n_net" ] \
    && ok "evaluate where every labelled pixel's output is not finite: the $n_net pixels counted, not 'nothing to score'" \
    || notok "evaluate on non-finite outputs only" "exit $st: $(grep -E 'error|warn' "$T/netlab_eval.log" | head -2)"
# ... and every line says what became of them: the metrics are undefined, so the count of
# non-finite outputs does not call them "left out of the scores" (it did, beside the warning
# that they make every metric undefined), and the summary says its figures are undefined in
# words (it printed "0 pixels, nan% burned" and "Brier nan  loss nan")
grep -q "$n_net pixels gave a non-finite network output (feature values far outside the training range?): no prediction, and where labelled they leave every metric undefined" "$T/netlab_eval.log" &&
    grep -q "netlab.tif: no pixel scored; AUC-PR undefined .* Brier undefined  loss undefined" "$T/netlab_eval.log" &&
    ! grep -Eq "nan% burned|Brier nan|loss nan" "$T/netlab_eval.log" &&
    ! grep -q "non-finite network output.*left out of the scores" "$T/netlab_eval.log" \
    && ok "evaluate's lines agree that non-finite outputs leave the metrics undefined, in words" \
    || notok "evaluate's lines on non-finite outputs" "$(grep -E 'non-finite|against' "$T/netlab_eval.log" | cut -c1-300)"
# ... and where only some labelled outputs are not finite (the raster's own labels, over the
# hostile blocks and ordinary ground alike), the summary gives its scored pixels and no "nan%
# burned" either (the rate, like every metric, is undefined: null in the metrics file)
"$WILDCPU" evaluate --tiles "$T/h64.tif" --checkpoint "$T/logistic" --out "$T/mixed.json" \
    >"$T/mixed_eval.log" 2>&1
st=$?
[ $st -eq 0 ] && [ "$(json "$T/mixed.json" bad_outputs)" -gt 0 ] && [ "$(json "$T/mixed.json" pixels)" -gt 0 ] &&
    grep -q "against band 13 'fire' of .*h64.tif: [0-9]* pixels with a prediction, burned share undefined; AUC-PR undefined .* Brier undefined  loss undefined" "$T/mixed_eval.log" &&
    ! grep -Eqi "nan% burned|\bnan\b" "$T/mixed_eval.log" \
    && ok "evaluate where some labelled outputs are not finite: the summary says the burned share is undefined, no 'nan'" \
    || notok "evaluate on partly non-finite outputs" "exit $st: $(grep -E 'against|nan' "$T/mixed_eval.log" | cut -c1-300)"
finish
