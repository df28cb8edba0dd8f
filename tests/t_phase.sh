#!/usr/bin/env bash
# t_phase.sh: the map is what was validated. The validation metrics a run logs equal the metrics
# of its own map on the validation pixels (DIR/split.tif), computed independently in Python with
# the definitions of include/wildcpu/metrics.h, on 1 and 2 ranks: the pixel counts exactly, the
# figures to 1e-6 relative. Not bitwise where OpenBLAS does the products: validation computes
# a block per window and the map a strip's core per window, and OpenBLAS's kernels round a
# pixel's sums in an order that depends on the GEMM's shape (the windows' sizes), in the last
# bits of a float (the own product kernel does not: there they are equal); at a wrong pooling phase
# the same weights differ by up to 1e-2. And the patch grid sits at the pooling phase of the
# global grid, also when the geotransform carries rotation terms of floating-point noise (1e-12).
# A spec network of every forward path but Winograd's (1x1, lowered 5x5 and strided): where the
# own product kernel runs, its validation metrics are bitwise those `evaluate` computes from
# best.wcp on the validation pixels, and two rasters cut from one grid map alike, bit for bit.
. "$(dirname "$0")/lib.sh"

args=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 4 --steps 24 --val-fraction 0.3
      --log-every 100 --no-predict --seed 5)
# 1 and 2 ranks with the default blocks (256 px, one validation core each), and 2 ranks with
# blocks of 320 px, which validation scores in four cores of at most 256 px (validation.c), and
# with --pos-weight 3: validation's loss is the map's unweighted cross-entropy all the same
for run in 1:256 2:256 2:320; do
    n=${run%:*} vb=${run#*:} r=$T/r${run/:/-} pw=1
    [ "$run" = 2:320 ] && pw=3
    mpirun_n $n "$WILDCPU" "${args[@]}" --val-block $vb --pos-weight $pw --out "$r" >"$r.log" 2>&1 || notok "training on $n rank(s)" "$(tail -3 "$r.log")"
    "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$r/checkpoints/ckpt-00000024.wcp" \
        --out "$r.tif" >"$r.plog" 2>&1 || notok "map on $n rank(s)" "$(tail -3 "$r.plog")"
    PYTHONPATH="$ROOT/tests" $PY - "$r/metrics.jsonl" "$r.tif" "$r/split.tif" "$SAMPLE" <<'PY' >"$r.cmp" 2>&1
import json, math, sys
import numpy as np
from osgeo import gdal
jsonl, mapf, splitf, tiles = sys.argv[1:5]
val = [json.loads(l) for l in open(jsonl) if '"type":"val"' in l][-1]
md, sd, td = gdal.Open(mapf), gdal.Open(splitf), gdal.Open(tiles)
p = md.GetRasterBand(1).ReadAsArray()
split = sd.GetRasterBand(1).ReadAsArray()
fire = [i for i in range(1, td.RasterCount + 1) if td.GetRasterBand(i).GetDescription() == "fire"][0]
lb = td.GetRasterBand(fire)
lab = lb.ReadAsArray().astype(np.float64)
nod = lb.GetNoDataValue()
ok = (split == 2) & (p != -9999) & np.isfinite(lab)
if nod is not None: ok &= lab != nod
prob = p[ok].astype(np.float64)
y = (lab[ok] > 0).astype(np.int64)
from metrics_bins import B, bins_of
bins = bins_of(prob)
pos = np.bincount(bins[y == 1], minlength=B); neg = np.bincount(bins[y == 0], minlength=B)
P, N = int(pos.sum()), int(neg.sum())
tp = np.cumsum(pos[::-1]); fp = np.cumsum(neg[::-1])
has = pos[::-1] > 0
ap = float(np.sum(pos[::-1][has] / P * (tp[has] / (tp[has] + fp[has]))))
neg_below = np.concatenate([[0], np.cumsum(neg)[:-1]])
roc = float(np.sum(pos.astype(np.float64) * (2 * neg_below + neg))) / (2.0 * P * N)
d = prob - y
brier = float(np.sum(np.floor(d * d * 2.0 ** 31 + 0.5))) / 2.0 ** 31 / (P + N)
pc = np.clip(prob, 1e-7, 1 - 1e-7)
loss_px = np.where(y == 1, -np.log(pc), -np.log1p(-pc))
loss = float(np.sum(np.floor(np.minimum(loss_px, 2048) * 2.0 ** 20 + 0.5))) / 2.0 ** 20 / (P + N)
bad = []
def same(k, mine, tol=0.0):
    theirs = val[k]
    if not (abs(mine - theirs) <= tol * max(1.0, abs(theirs))):
        bad.append("%s: map %.17g, validation %.17g" % (k, mine, theirs))
same("pixels", P + N); same("positives", P)
for k, v in (("auc_pr", ap), ("roc_auc", roc), ("brier", brier), ("loss", loss)): same(k, v, 1e-6)
print("pixels %d, AP %.6f, ROC %.6f, Brier %.6f" % (P + N, ap, roc, brier))
if bad: raise SystemExit("; ".join(bad))
PY
    if [ $? -eq 0 ]; then
        ok "$n rank(s), --val-block $vb: validation metrics = the map's on the validation pixels ($(tail -1 "$r.cmp"))"
    else
        notok "$n rank(s), --val-block $vb: validation metrics = the map's" "$(tail -3 "$r.cmp")"
    fi
done
[ "$(grep '"type":"val"' "$T/r1-256/metrics.jsonl" | sed 's/"elapsed_s":[0-9.]*//')" = \
  "$(grep '"type":"val"' "$T/r2-256/metrics.jsonl" | sed 's/"elapsed_s":[0-9.]*//')" ] \
    && ok "validation metrics bitwise equal on 1 and 2 ranks" || notok "validation on 1 and 2 ranks"

# the patch grid is the global grid of P x P cells: a raster whose origin is 1 px off it starts
# its grid 31 px in (--patch 32), at a multiple of the pooling alignment
gdal_translate -q -srcwin 1 1 300 300 "$SAMPLE" "$T/off.tif"
"$WILDCPU" --tiles "$T/off.tif" --patch 32 --batch 4 --micro-batch 4 --steps 1 --val-fraction 0 \
    --no-predict --out "$T/off" >"$T/off.log" 2>&1
$PY - "$T/off/split.tif" <<'PY' >"$T/off.cmp" 2>&1
import sys
import numpy as np
from osgeo import gdal
d = gdal.Open(sys.argv[1]); s = d.GetRasterBand(1).ReadAsArray()
rows, cols = np.nonzero(s)
gt = d.GetGeoTransform()
gx, gy = round(gt[0] / gt[1]) + cols.min(), round(gt[3] / gt[5]) + rows.min()
print(cols.min(), rows.min(), gx % 32, gy % 32)
if gx % 32 or gy % 32: raise SystemExit("the grid starts off the global grid of 32 px cells")
PY
[ $? -eq 0 ] && ok "the patch grid of an offset raster is the global grid of patch cells ($(cat "$T/off.cmp"))" \
    || notok "patch grid phase" "$(cat "$T/off.cmp") $(tail -2 "$T/off.log")"

# a geotransform whose rotation terms are floating-point noise (1e-12, as a transform computed in
# floating point or a ModelTransformation tag carries) is on the global grid: the same map bits
# as the raster without them (the map was computed on the raster's own grid, every pixel off)
gdal_translate -q -of VRT "$SAMPLE" "$T/noise.vrt"
$PY -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform()); g[2] = g[4] = 1e-12
d.SetGeoTransform(g); d = None' "$T/noise.vrt"
ck=$T/r1-256/checkpoints/ckpt-00000024.wcp
"$WILDCPU" predict --tiles "$T/noise.vrt" --checkpoint "$ck" --out "$T/noise.tif" >"$T/noise.log" 2>&1
st=$?
same=$($PY -c 'import sys, numpy as np; from osgeo import gdal
a, b = (gdal.Open(f).ReadAsArray() for f in sys.argv[1:3]); print(np.array_equal(a, b, equal_nan=True))' "$T/r1-256.tif" "$T/noise.tif" 2>&1)
[ $st -eq 0 ] && [ "$same" = True ] && grep -q "on the global grid" "$T/noise.log" \
    && ok "rotation terms of 1e-12 are noise: the map on the global grid, bitwise the same" \
    || notok "rotation terms of 1e-12" "status $st, same: $same; $(grep -o 'alignment [^)]*' "$T/noise.log")"

# A network of every forward path but Winograd's (a 5x5 and a strided 3x3 convolution, lowered
# to a GEMM; 1x1 convolutions of 16 outputs and of one): its pixels too get the same bits in any
# window where the own product kernel runs, so the validation metrics of the best step are
# bitwise those `evaluate` computes from best.wcp on the validation pixels (labels elsewhere
# nodata, from split.tif), and two rasters cut from one grid at offsets that are not multiples of
# the alignment map their shared ground alike, bit for bit, beyond the receptive radius. With
# OpenBLAS doing these products a pixel's last bits depended on the window's width (up to 2e-8
# apart between the two rasters; validation's loss 8e-10 from evaluate's).
cat >"$T/paths.spec" <<'SPEC'
input    x
conv     a    x    out=8  k=5 pad=2
relu     a1   a
conv     b    a1   out=16 k=3 pad=1 stride=2
relu     b1   b
conv     c    b1   out=16 k=1
relu     c1   c
upsample u    c1
conv     h    u    out=1  k=1
SPEC
"$WILDCPU" --tiles "$SAMPLE" --model "$T/paths.spec" --patch 32 --batch 8 --micro-batch 4 --steps 12 \
    --val-fraction 0.3 --val-block 64 --lr 3e-3 --no-predict --seed 5 --out "$T/sp" >"$T/sp.log" 2>&1 \
    || notok "training the spec of every forward path" "$(tail -3 "$T/sp.log")"
if ! grep -q "Winograd products own-" "$T/sp.log"; then
    echo "# skipped: OpenBLAS does the products here ($(grep -o 'Winograd products [a-z0-9-]*' "$T/sp.log")): a pixel's last bits depend on its window"
else
    $PY - "$SAMPLE" "$T/sp/split.tif" "$T/sp-val.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal
t, s = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
names = [t.GetRasterBand(b).GetDescription() for b in range(1, t.RasterCount + 1)]
fb = t.GetRasterBand(names.index("fire") + 1)
f, nod = fb.ReadAsArray(), fb.GetNoDataValue()
keep = (s.GetRasterBand(1).ReadAsArray() == 2) & (f != nod)
d = gdal.GetDriverByName("GTiff").Create(sys.argv[3], t.RasterXSize, t.RasterYSize, 1, gdal.GDT_Byte)
d.SetGeoTransform(t.GetGeoTransform()); d.SetProjection(t.GetProjection())
b = d.GetRasterBand(1); b.WriteArray(np.where(keep, f > 0, 255).astype(np.uint8)); b.SetNoDataValue(255)
b.SetDescription("fire"); d = None
PY
    "$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/sp/checkpoints/best.wcp" --labels "$T/sp-val.tif" \
        --out "$T/sp-val.json" >"$T/sp-eval.log" 2>&1 || notok "evaluate of the spec network" "$(tail -3 "$T/sp-eval.log")"
    best=$("$WILDCPU" info "$T/sp/checkpoints/best.wcp" | awk '$1 == "step" {print $2}')
    cmp=$($PY - "$T/sp/metrics.jsonl" "${best:-0}" "$T/sp-val.json" <<'PY' 2>&1
import json, sys
v = [d for d in map(json.loads, open(sys.argv[1])) if d["type"] == "val" and d["step"] == int(sys.argv[2])][-1]
e = json.load(open(sys.argv[3]))
keys = [k for k in v if k not in ("type", "step", "epoch", "elapsed_s") and not k.startswith("oracle")]
bad = ["%s %r vs %r" % (k, v[k], e.get(k)) for k in keys if v[k] != e.get(k)]
print("; ".join(bad) if bad else "%d metrics equal, %d pixels" % (len(keys), v["pixels"]))
PY
)
    [[ $cmp == *"metrics equal"* ]] \
        && ok "every forward path: the validation metrics of best.wcp (step $best) bitwise those evaluate computes on the validation pixels ($cmp)" \
        || notok "every forward path: validation metrics = evaluate's on the validation pixels" "$cmp"
    gdal_translate -q -of VRT -srcwin 0 0 230 220 "$SAMPLE" "$T/left.vrt"
    gdal_translate -q -of VRT -srcwin 57 41 250 231 "$SAMPLE" "$T/right.vrt"
    for p in left right; do
        "$WILDCPU" predict --tiles "$T/$p.vrt" --checkpoint "$T/sp" --out "$T/sp-$p.tif" >"$T/sp-$p.log" 2>&1 \
            || notok "predict $p with the spec network" "$(tail -3 "$T/sp-$p.log")"
    done
    radius=$(grep -o 'receptive radius [0-9]*' "$T/sp-left.log" | grep -o '[0-9]*$')
    same=$($PY - "$T/sp-left.tif" "$T/sp-right.tif" 57 41 "${radius:-99}" <<'PY' 2>&1
import sys
import numpy as np
from osgeo import gdal
a, b = (gdal.Open(f).ReadAsArray() for f in sys.argv[1:3])
ox, oy, r = map(int, sys.argv[3:6])
# the shared ground, r px in from the edges of both rasters, in the left raster's pixels
x0, x1 = ox + r, min(a.shape[1], ox + b.shape[1]) - r
y0, y1 = oy + r, min(a.shape[0], oy + b.shape[0]) - r
sa, sb = a[y0:y1, x0:x1], b[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
differ = int(np.sum(sa.view(np.uint32) != sb.view(np.uint32)))
print("%d of %d pixels differ, by up to %.3g" % (differ, sa.size, float(np.max(np.abs(sa.astype(np.float64) - sb)))))
PY
)
    [[ $same == "0 of "* ]] && [ -n "$radius" ] \
        && ok "every forward path: rasters cut at (0, 0) and (57, 41) map their shared ground bitwise alike beyond the radius of $radius px ($same)" \
        || notok "every forward path: rasters cut from one grid agree bitwise" "$same"
fi
finish
