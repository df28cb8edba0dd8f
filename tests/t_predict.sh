#!/usr/bin/env bash
# t_predict.sh: the risk map (wildcpu predict) on the bundled 512x512 sample with a checkpoint
# trained here in a few steps: georeferencing and metadata kept, nodata exactly where a feature
# is nodata, values in [0,1], seam-free sub-windows (1e-5), the same bits on 1, 2 and 3 ranks,
# COG layout, the class band, the quick-look PNG, and refusals of bad inputs and outputs.
#
# Readers are independent of wildcpu: gdalinfo -json, gdal_translate, gdallocationinfo, and
# build/tools/maptool (plain GDAL calls). Every case can fail; the sub-window comparison has a
# negative control showing it sees the differences at the sub-window's own edges.
set -u
root=${WILDCPU_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
build=${WILDCPU_BUILD:-$root/build}
bin=${WILDCPU:-$build/wildcpu}
mt=$build/tools/maptool
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d /tmp/t_predict.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# a private copy: some cases point --out at input files on purpose
cp -r "$root/data/sample" "$tmp/sample"
S=$tmp/sample/tiles.vrt
out=$tmp/out
mkdir -p "$out"
log=$tmp/log

ok() { echo "ok - $1"; }
notok() {
    echo "not ok - $1"
    [ -f "$log" ] && sed 's/^/#   /' "$log" | tail -n 15
}
check() { # check NAME COMMAND...: ok when the command succeeds
    local name=$1
    shift
    if "$@" >"$log" 2>&1; then ok "$name"; else notok "$name"; fi
    sed -n 's/^# /#   /p' "$log"
}
# expect_fail NAME STATUS PATTERN COMMAND...: the command exits with STATUS and says PATTERN
expect_fail() {
    local name=$1 want=$2 pattern=$3
    shift 3
    "$@" >"$log" 2>&1
    local st=$?
    if [ "$st" -eq "$want" ] && grep -q -- "$pattern" "$log"; then
        ok "$name"
        grep -m1 'error' "$log" | sed 's/^/#   /'
    else
        echo "#   exit status $st (want $want), message must match: $pattern"
        notok "$name"
    fi
}
json() { # json FILE PYTHON-EXPRESSION-ON-d: prints the value
    gdalinfo -json "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"
}
raw() { gdal_translate -q -of ENVI "$@"; }
predict() { "$bin" predict --checkpoint "$tmp/run" "$@"; }

# ---- a checkpoint ----------------------------------------------------------------------------
if ! "$bin" --tiles "$S" --out "$tmp/run" --steps 4 --batch 8 --no-predict >"$log" 2>&1; then
    notok "train a checkpoint for the tests"
    exit 1
fi
ok "train a checkpoint for the tests"

# ---- the map ---------------------------------------------------------------------------------
check "predict writes risk.tif and risk.png" \
    predict --tiles "$S" --out "$out/risk.tif" --png "$out/risk.png"
R=$out/risk.tif

check "georeferencing preserved (size, geotransform, CRS through GDAL)" python3 - "$S" "$R" <<'EOF'
import json, subprocess, sys
a, b = (json.loads(subprocess.check_output(["gdalinfo", "-json", p])) for p in sys.argv[1:3])
assert a["size"] == b["size"], (a["size"], b["size"])
assert a["geoTransform"] == b["geoTransform"], (a["geoTransform"], b["geoTransform"])
# GeoTIFF stores the CRS by its EPSG code, so the WKT text comes back from the EPSG database
# (axis names, usage): compare what the CRS is, its PROJ definition and its authority code
srs = [subprocess.check_output(["gdalsrsinfo", "-o", "proj4", p]).strip() for p in sys.argv[1:3]]
assert srs[0] and srs[0] == srs[1], srs
epsg = [x["coordinateSystem"]["wkt"].rsplit('ID["EPSG",', 1)[-1].split("]")[0] for x in (a, b)]
assert epsg[0] == epsg[1] == "32611", epsg
print("# size", b["size"], "geotransform", b["geoTransform"], "EPSG:" + epsg[1])
EOF

check "band, nodata, creation options and provenance metadata" python3 - "$R" <<'EOF'
import json, subprocess, sys
d = json.loads(subprocess.check_output(["gdalinfo", "-json", sys.argv[1]]))
assert len(d["bands"]) == 1
b = d["bands"][0]
assert b["description"] == "fire_risk" and b["type"] == "Float32", b
assert b["noDataValue"] == -9999, b.get("noDataValue")
assert b["block"] == [256, 256], b["block"]
st = d["metadata"]["IMAGE_STRUCTURE"]
assert st["COMPRESSION"] == "DEFLATE" and st["PREDICTOR"] == "3", st
m = d["metadata"][""]
assert m["wildcpu_version"] and int(m["checkpoint_step"]) == 4, m
assert m["checkpoint_params"].startswith("fnv1a64:") and len(m["checkpoint_params"]) == 24
assert "bands=elevation:Int16" in m["training_data_fingerprint"]
assert m["created_utc"].endswith("Z") and m["created_utc"][10] == "T"
print("# params", m["checkpoint_params"], "created", m["created_utc"])
EOF

check "nodata exactly where an input feature is nodata" "$mt" nodata "$R" "$S" fire
check "probabilities within [0,1]" "$mt" range "$R" 0 1

# ---- seams -----------------------------------------------------------------------------------
# Sub-windows at offsets of every phase modulo the pooling alignment (4): their windows fall
# elsewhere, yet pixels farther than the receptive radius (26) from their edges must agree.
gdal_translate -q -of VRT -srcwin 57 41 400 430 "$S" "$tmp/sub1.vrt"
gdal_translate -q -of VRT -srcwin 130 203 300 290 "$S" "$tmp/sub2.vrt"
check "predict a sub-window (57 41 400 430)" predict --tiles "$tmp/sub1.vrt" --out "$out/sub1.tif"
check "predict a sub-window (130 203 300 290)" predict --tiles "$tmp/sub2.vrt" --out "$out/sub2.tif"
check "seam-free: sub-window 1 equals the full map to 1e-5 away from its edges" \
    "$mt" diff "$R" "$out/sub1.tif" 57 41 28 1e-5
check "seam-free: sub-window 2 equals the full map to 1e-5 away from its edges" \
    "$mt" diff "$R" "$out/sub2.tif" 130 203 28 1e-5
check "negative control: at the sub-window's own edges the values do differ" \
    bash -c "! '$mt' diff '$R' '$out/sub1.tif' 57 41 0 1e-5"

# ---- ranks -----------------------------------------------------------------------------------
raw "$R" "$tmp/r1.raw"
for n in 2 3; do
    check "predict on $n ranks" timeout 120 mpirun --oversubscribe -np $n "$bin" predict \
        --checkpoint "$tmp/run" --tiles "$S" --out "$out/risk_np$n.tif"
    raw "$out/risk_np$n.tif" "$tmp/r$n.raw" 2>/dev/null
    check "identical map (bitwise) on 1 and $n ranks" cmp "$tmp/r1.raw" "$tmp/r$n.raw"
done

# ---- COG and classes -------------------------------------------------------------------------
C=$out/risk_cog.tif
check "predict --cog --classes" predict --tiles "$S" --out "$C" --cog --classes
check "COG layout: LAYOUT=COG, tiled, overviews, DEFLATE" python3 - "$C" <<'EOF'
import json, subprocess, sys
d = json.loads(subprocess.check_output(["gdalinfo", "-json", sys.argv[1]]))
st = d["metadata"]["IMAGE_STRUCTURE"]
assert st.get("LAYOUT") == "COG" and st["COMPRESSION"] == "DEFLATE", st
b = d["bands"][0]
assert b["block"][0] < d["size"][0] or d["size"][0] <= 256, b["block"]
assert len(b.get("overviews", [])) >= 1, "no overviews"
assert d["metadata"][""]["training_data_fingerprint"]
print("# overviews", [o["size"] for o in b["overviews"]], "block", b["block"])
EOF
# GDAL's own validator, with its full check: IFDs before the data, overviews from the
# smallest, tile data in order, the ghost header
check "COG validates with GDAL's validate_cloud_optimized_geotiff --full-check=yes" \
    /usr/bin/python3 -m osgeo_utils.samples.validate_cloud_optimized_geotiff --full-check=yes "$C"
raw -b 1 "$C" "$tmp/cog1.raw"
check "COG band 1 holds the same values as the plain GeoTIFF" cmp "$tmp/r1.raw" "$tmp/cog1.raw"
check "class band: category names and quantile breaks in its metadata" python3 - "$C" <<'EOF'
import json, subprocess, sys
d = json.loads(subprocess.check_output(["gdalinfo", "-json", sys.argv[1]]))
b = d["bands"][1]
assert b["description"] == "fire_risk_class", b["description"]
assert b["categories"] == ["low", "moderate", "high", "very high", "extreme"], b.get("categories")
m = b["metadata"][""]
fr = [float(x) for x in m["class_fractions"].split(",")]
want = [0.5, 0.25, 0.15, 0.075, 0.025]
assert all(abs(a - w) < 0.01 for a, w in zip(fr, want)), fr
print("# breaks", m["class_breaks"], "shares", fr)
EOF
check "every pixel is in the class its probability and the breaks give" "$mt" classes "$C"

# ---- quick-look ------------------------------------------------------------------------------
P=$out/risk.png
check "PNG: RGBA, the raster's size plus a legend strip" python3 - "$P" <<'EOF'
import json, subprocess, sys
d = json.loads(subprocess.check_output(["gdalinfo", "-json", sys.argv[1]]))
assert d["driverShortName"] == "PNG"
assert d["size"][0] == 512 and 512 + 30 <= d["size"][1] <= 512 + 100, d["size"]
assert [b["colorInterpretation"] for b in d["bands"]] == ["Red", "Green", "Blue", "Alpha"]
print("# size", d["size"])
EOF
read -r _ ndx ndy < <("$mt" find "$R" | grep nodata)
read -r _ vx vy < <("$mt" find "$R" | grep valid)
check "PNG: nodata transparent, valid pixels opaque" bash -c "
    [ \"\$(gdallocationinfo -valonly -b 4 '$P' $ndx $ndy)\" = 0 ] &&
    [ \"\$(gdallocationinfo -valonly -b 4 '$P' $vx $vy)\" = 255 ]"
# the legend's bar runs 14 px in from each side, 14-26 px below the map: pale yellow at 0,
# dark red at 1
check "PNG: legend gradient from pale yellow (0) to dark red (1)" bash -c "
    lo=(\$(gdallocationinfo -valonly '$P' 16 532)); hi=(\$(gdallocationinfo -valonly '$P' 495 532))
    echo \"# at 0: \${lo[*]}  at 1: \${hi[*]}\"
    [ \${lo[0]} -ge 250 ] && [ \${lo[1]} -ge 240 ] && [ \${hi[0]} -le 160 ] && [ \${hi[1]} -le 30 ] &&
    [ \${lo[3]} = 255 ] && [ \${hi[3]} = 255 ]"

# ---- replacing an earlier map ----------------------------------------------------------------
X=$out/again.tif
predict --tiles "$S" --out "$X" --classes >"$log" 2>&1
check "a class band's category names live in the .aux.xml sidecar" test -f "$X.aux.xml"
check "rewriting without --classes replaces the map and drops the stale sidecar" bash -c "
    '$bin' predict --checkpoint '$tmp/run' --tiles '$S' --out '$X' >/dev/null &&
    [ ! -e '$X.aux.xml' ] && [ \"\$(gdalinfo -json '$X' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"bands\"]))')\" = 1 ]"

# ---- refusals --------------------------------------------------------------------------------
gdal_translate -q -of VRT -b 1 -b 2 -b 3 -b 4 -b 6 -b 7 -b 8 -b 9 -b 10 -b 11 -b 12 -b 13 \
    "$S" "$tmp/no_ndvi.vrt"
"$bin" --tiles "$tmp/no_ndvi.vrt" --out "$tmp/lrun" --model logistic --steps 2 --batch 8 \
    --no-predict >"$log" 2>&1 || notok "train a logistic model without ndvi"
expect_fail "refuses a raster with a band the model was not trained on" 1 "ndvi" \
    "$bin" predict --tiles "$S" --checkpoint "$tmp/lrun" --out "$out/bad.tif"
expect_fail "refuses a raster missing a band the model needs" 1 "'ndvi'.*missing" \
    predict --tiles "$tmp/no_ndvi.vrt" --out "$out/bad.tif"
gdal_translate -q -of VRT -ot Float32 "$S" "$tmp/f32.vrt"
expect_fail "refuses a band of another type than in training" 1 "elevation.*Float32.*Int16" \
    predict --tiles "$tmp/f32.vrt" --out "$out/bad.tif"
expect_fail "missing checkpoint" 1 "$tmp/nope" \
    "$bin" predict --tiles "$S" --checkpoint "$tmp/nope" --out "$out/bad.tif"
expect_fail "missing checkpoint on 2 ranks ends both ranks" 1 "$tmp/nope" \
    timeout 60 mpirun --oversubscribe -np 2 "$bin" predict --tiles "$S" --checkpoint "$tmp/nope" \
    --out "$out/bad.tif"
expect_fail "unwritable output path, reported before computing" 1 "directory .* does not exist" \
    predict --tiles "$S" --out "$tmp/no/such/dir/risk.tif"
cp "$log" "$tmp/unwritable.log"
check "... and nothing was computed first" bash -c \
    "grep -q 'does not exist' '$tmp/unwritable.log' && ! grep -q 'rows 0-' '$tmp/unwritable.log'"
expect_fail "output path that is a directory" 1 "is a directory" \
    predict --tiles "$S" --out "$out"
md5_before=$(md5sum "$tmp/sample/tiles/r00_c00_f32.tif")
expect_fail "refuses --out equal to an input tile (another spelling of its path)" 2 "is an input" \
    predict --tiles "$S" --out "$tmp/sample/tiles/../tiles/r00_c00_f32.tif"
ln -s "$S" "$out/link.vrt"
expect_fail "refuses --out that is a symlink to the input" 2 "is an input" \
    predict --tiles "$S" --out "$out/link.vrt"
expect_fail "refuses --png equal to --out" 2 "is an input" \
    predict --tiles "$S" --out "$out/same.tif" --png "$out/same.tif"
check "the input tile is untouched" bash -c "[ \"\$(md5sum '$tmp/sample/tiles/r00_c00_f32.tif')\" = '$md5_before' ]"
cp "$R" "$out/keep.tif"
md5_keep=$(md5sum <"$out/keep.tif")
predict --tiles "$tmp/f32.vrt" --out "$out/keep.tif" >"$log" 2>&1
check "a failed run leaves an existing map as it was" bash -c "[ \"\$(md5sum <'$out/keep.tif')\" = '$md5_keep' ]"
check "no temporary files left behind" bash -c "! ls -A '$out' | grep -Eq '[.](tmp|out|cog)-[0-9]+'"
