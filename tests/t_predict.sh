#!/usr/bin/env bash
# t_predict.sh: the risk map (wildcpu predict) on the bundled 512x512 sample with a checkpoint
# trained here in a few steps: georeferencing and metadata kept, nodata exactly where a feature
# is nodata, values in [0,1], seam-free sub-windows (1e-5), the same bits on 1, 2 and 3 ranks,
# COG layout, the class raster, the QGIS style, the STAC item, the quick-look PNG, and refusals
# of bad inputs and outputs; warnings for ground of another scale or orientation, or placed by
# GCPs alone.
#
# Readers are independent of wildcpu: gdalinfo -json, gdal_translate, gdallocationinfo, and
# build/tools/maptool (plain GDAL calls). Every case can fail; the sub-window comparison has a
# negative control showing it sees the differences at the sub-window's own edges.
set -u
root=${WILDCPU_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
build=${WILDCPU_BUILD:-$root/build}
bin=${WILDCPU:-$build/wildcpu}
mt=$build/tools/maptool
. "$root/tests/env.sh" # how every test starts the program (this one keeps helpers of its own)
tmp=$(mktemp -d /tmp/t_predict.XXXXXX)
export OMPI_MCA_orte_tmpdir_base=$tmp
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
lpredict() { "$bin" predict --checkpoint "$tmp/lg" "$@"; }

# ---- a checkpoint ----------------------------------------------------------------------------
# unet-lite (run) for the map itself: its georeferencing, seams, ranks, COG and classes. A
# logistic model of the same data and steps (lg) for the cases about the inputs and the files
# around the map (warnings on the ground, units, bands and tiles; companions named after the map;
# the STAC item's hrefs and geometry): what they check comes from the raster, the training data's
# description in the checkpoint (the same data) and the paths, not from the network, and its map
# costs a fraction of unet-lite's.
if ! "$bin" --tiles "$S" --out "$tmp/run" --steps 4 --batch 8 --no-predict >"$log" 2>&1 ||
    ! "$bin" --tiles "$S" --out "$tmp/lg" --model logistic --steps 4 --batch 8 --no-predict >>"$log" 2>&1; then
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
assert b.get("unit") == "probability", b.get("unit")
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

# ---- a mostly empty mosaic -------------------------------------------------------------------
# The sample inside a 3072 x 2048 VRT of nothing, and a dense copy of it (GeoTIFFs with every
# block written, so GDAL reports data everywhere and every window is read). Windows whose core GDAL
# knows to be nodata are not read; the two maps must be the same bits.
check "a mostly empty mosaic" /usr/bin/python3 "$root/tests/mosaic_around.py" "$S" "$tmp/holes.vrt" \
    1000 700 3072 2048
check "its dense copy" /usr/bin/python3 - "$S" "$tmp" <<'EOF'
import sys
from osgeo import gdal
gdal.UseExceptions()
src, d = gdal.Open(sys.argv[1]), sys.argv[2]
# a GeoTIFF per band (its own type and nodata), stacked: each covers the whole extent
names = []
for i in range(1, 14):
    names.append(f"{d}/dense{i}.tif")
    gdal.Translate(names[-1], d + "/holes.vrt", bandList=[i],
                   creationOptions=["TILED=YES", "COMPRESS=DEFLATE"])
t = gdal.BuildVRT(d + "/dense.vrt", names, separate=True)
for i in range(1, 14):
    t.GetRasterBand(i).SetDescription(src.GetRasterBand(i).GetDescription())
t = None
v = gdal.Open(d + "/holes.vrt")
assert v.GetRasterBand(1).GetDataCoverageStatus(0, 0, 512, 512)[0] == gdal.GDAL_DATA_COVERAGE_STATUS_EMPTY
print("# 3072 x 2048, the sample at (1000, 700)")
EOF
check "predict the mostly empty mosaic" predict --tiles "$tmp/holes.vrt" --out "$out/holes.tif"
check "predict its dense copy" predict --tiles "$tmp/dense.vrt" --out "$out/dense.tif"
check "the mosaic's map: the dense copy's bits (nodata around the sample), the sample's map inside to 1e-5" \
    /usr/bin/python3 - "$out/holes.tif" "$out/dense.tif" "$R" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
ds = [gdal.Open(p) for p in sys.argv[1:4]]
a, b, r = (d.GetRasterBand(1).ReadAsArray() for d in ds)
assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), "the maps differ"
inner = a[700:1212, 1000:1512]
assert (np.delete(a, np.s_[700:1212], 0) == -9999).all(), "nodata around the sample"
assert np.abs(inner[28:-28, 28:-28] - r[28:-28, 28:-28]).max() <= 1e-5
print(f"# {np.mean(a != -9999):.3f} of the mosaic mapped")
EOF

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
# Grids whose pixel corners lie on half pixels (defined by pixel centres): one crossing zero,
# and one in degrees whose window's origin GDAL computes a hair off the tie. The window cut at
# (57, 41) must still sit 57, 41 pixels into the raster's global grid: the same bits inside.
for grid in "-615 30 615 -30" "-120.000125 0.00025 45.000125 -0.00025"; do
    read -r gx0 gdx gy0 gdy <<<"$grid"
    /usr/bin/python3 - "$S" "$tmp/half.vrt" "$tmp/halfsub.vrt" "$gx0" "$gdx" "$gy0" "$gdy" <<'EOF'
import sys
from osgeo import gdal
x0, dx, y0, dy = map(float, sys.argv[4:8])
d = gdal.Translate(sys.argv[2], sys.argv[1], format="VRT")
d.SetGeoTransform([x0, dx, 0, y0, 0, dy])
d = None
gdal.Translate(sys.argv[3], sys.argv[2], format="VRT", srcWin=[57, 41, 300, 290])
EOF
    predict --tiles "$tmp/half.vrt" --out "$out/half.tif" >"$log" 2>&1 &&
        predict --tiles "$tmp/halfsub.vrt" --out "$out/halfsub.tif" >>"$log" 2>&1
    check "half-pixel origin (geotransform $grid): a window's map has the full map's bits inside" \
        "$mt" diff "$out/half.tif" "$out/halfsub.tif" 57 41 28 0
done

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
CC=$out/risk_cog_classes.tif
check "the map is one band; the classes are their own raster, NAME_classes.tif" python3 - "$C" "$CC" <<'EOF'
import json, subprocess, sys
m, c = (json.loads(subprocess.check_output(["gdalinfo", "-json", p])) for p in sys.argv[1:3])
assert len(m["bands"]) == 1, len(m["bands"])
assert len(c["bands"]) == 1 and c["size"] == m["size"] and c["geoTransform"] == m["geoTransform"]
assert c["metadata"]["IMAGE_STRUCTURE"].get("LAYOUT") == "COG", c["metadata"]["IMAGE_STRUCTURE"]
assert c["metadata"][""]["probability_map"] == "risk_cog.tif", c["metadata"][""]
print("# class raster", c["size"], c["bands"][0]["type"])
EOF
check "class raster: Byte, nodata 255, colour table, category names, breaks in its metadata" \
    python3 - "$CC" <<'EOF'
import json, subprocess, sys
d = json.loads(subprocess.check_output(["gdalinfo", "-json", sys.argv[1]]))
b = d["bands"][0]
assert b["description"] == "fire_risk_class" and b["type"] == "Byte", b
assert b["noDataValue"] == 255, b.get("noDataValue")
assert b["colorInterpretation"] == "Palette", b["colorInterpretation"]
ramp = [[255, 255, 204], [254, 217, 118], [253, 141, 60], [227, 26, 28], [128, 0, 38]]
assert [e[:3] for e in b["colorTable"]["entries"][:5]] == ramp, b["colorTable"]["entries"][:5]
assert b["categories"] == ["low", "moderate", "high", "very high", "extreme"], b.get("categories")
assert len(b.get("overviews", [])) >= 1, "no overviews"
m = b["metadata"][""]
fr = [float(x) for x in m["class_fractions"].split(",")]
want = [0.5, 0.25, 0.15, 0.075, 0.025]
assert all(abs(a - w) < 0.01 for a, w in zip(fr, want)), fr
assert m["class_names"] == "low,moderate,high,very high,extreme" and m["class_nodata"] == "255"
print("# breaks", m["class_breaks"], "shares", fr)
EOF
check "class raster validates as a COG (--full-check=yes)" \
    /usr/bin/python3 -m osgeo_utils.samples.validate_cloud_optimized_geotiff --full-check=yes "$CC"
check "every pixel is in the class its probability and the breaks give" "$mt" classes "$C" "$CC"

# ---- style and STAC item ---------------------------------------------------------------------
check "risk.qml beside risk.tif: pseudocolor on band 1, 0..1, the quick-look's ramp, nodata clear" \
    python3 - "$out/risk.qml" <<'EOF'
import sys, xml.etree.ElementTree as ET
q = ET.parse(sys.argv[1]).getroot()
r = q.find("pipe/rasterrenderer")
assert r.get("type") == "singlebandpseudocolor" and r.get("band") == "1", r.attrib
assert r.get("classificationMin") == "0" and r.get("classificationMax") == "1", r.attrib
assert r.get("nodataColor") == "", r.attrib
sh = r.find("rastershader/colorrampshader")
items = [(float(i.get("value")), i.get("color")) for i in sh.findall("item")]
want = ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"]
assert [c for _, c in items] == want and [v for v, _ in items] == [k / 8 for k in range(9)], items
title = [o.get("value") for o in q.iter("Option") if o.get("name") == "wildcpu/legend_title"]
assert title == ["burn probability"], title
EOF
# QGIS lists every entry of a colour table as a class: 256 for a GeoTIFF's, 251 of them black
check "risk_cog_classes.qml beside the class raster: paletted on band 1, the five classes alone" \
    /usr/bin/python3 - "$out/risk_cog_classes.qml" "$CC" <<'EOF'
import sys, xml.etree.ElementTree as ET
from osgeo import gdal
q = ET.parse(sys.argv[1]).getroot()
r = q.find("pipe/rasterrenderer")
assert r.get("type") == "paletted" and r.get("band") == "1" and r.get("nodataColor") == "", r.attrib
got = [(e.get("value"), e.get("color"), e.get("alpha"), e.get("label"))
       for e in r.findall("colorPalette/paletteEntry")]
ds = gdal.Open(sys.argv[2])  # held: a colour table outlives no dataset in GDAL's bindings
t = ds.GetRasterBand(1).GetColorTable()
table = ["#%02x%02x%02x" % t.GetColorEntry(k)[:3] for k in range(5)]
names = ["low", "moderate", "high", "very high", "extreme"]
assert got == [(str(k), table[k], "255", names[k]) for k in range(5)], (got, table)
title = [o.get("value") for o in q.iter("Option") if o.get("name") == "wildcpu/legend_title"]
assert title == ["burn risk class"], title
EOF
check "the STAC item: STAC 1.0.0, proj and file extensions, WGS84 bbox, assets with checksums" \
    /usr/bin/python3 - "$out/risk_cog.json" <<'EOF'
import hashlib, json, os, sys
from osgeo import osr
item = json.load(open(sys.argv[1]))
d = os.path.dirname(sys.argv[1])
for k in ("type", "stac_version", "stac_extensions", "id", "geometry", "bbox", "properties", "links", "assets"):
    assert k in item, k
assert item["type"] == "Feature" and item["stac_version"] == "1.0.0" and item["id"] == "risk_cog"
assert item["stac_extensions"] == ["https://stac-extensions.github.io/projection/v1.1.0/schema.json",
                                   "https://stac-extensions.github.io/file/v2.1.0/schema.json"]
p = item["properties"]
assert p["datetime"].endswith("Z") and p["datetime"][10] == "T", p["datetime"]
assert p["proj:epsg"] == 32611 and p["proj:shape"] == [512, 512], p
assert p["proj:transform"] == [30.0, 0.0, 640000.0, 0.0, -30.0, 4930000.0], p["proj:transform"]
assert p["wildcpu:step"] == 4 and p["wildcpu:checkpoint"].endswith(".wcp"), p
assert "bands=elevation:Int16" in p["wildcpu:data_fingerprint"]
assert 0 <= p["wildcpu:val_auc_pr"] <= 1, p.get("wildcpu:val_auc_pr")
# counts are whole numbers, as the checkpoint records them (not 11694.0)
assert type(p["wildcpu:val_pixels"]) is int and p["wildcpu:val_pixels"] > 0, p.get("wildcpu:val_pixels")
# the corners through GDAL's own transformation (traditional lon/lat order)
src = osr.SpatialReference(); src.ImportFromEPSG(32611)
wgs = osr.SpatialReference(); wgs.ImportFromEPSG(4326)
for s in (src, wgs): s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
ct = osr.CoordinateTransformation(src, wgs)
pts = [ct.TransformPoint(x, y)[:2] for x in (640000, 655360) for y in (4930000, 4914640)]
b = item["bbox"]
assert b[0] <= min(x for x, _ in pts) + 1e-9 and b[2] >= max(x for x, _ in pts) - 1e-9, (b, pts)
assert b[1] <= min(y for _, y in pts) + 1e-9 and b[3] >= max(y for _, y in pts) - 1e-9, (b, pts)
assert -116 < b[0] < b[2] < -114 and 44 < b[1] < b[3] < 45, b
ring = item["geometry"]["coordinates"][0]
assert item["geometry"]["type"] == "Polygon" and len(ring) == 5 and ring[0] == ring[-1]
for q in pts:  # every corner is a vertex of the ring
    assert min(abs(r[0] - q[0]) + abs(r[1] - q[1]) for r in ring) < 1e-9, (q, ring)
a = item["assets"]
assert set(a) == {"risk_map", "risk_classes", "risk_classes_sidecar", "qgis_style",
                  "qgis_style_classes"}, set(a)
assert a["risk_classes_sidecar"]["href"] == "risk_cog_classes.tif.aux.xml", a["risk_classes_sidecar"]
assert a["risk_classes_sidecar"]["roles"] == ["metadata"], a["risk_classes_sidecar"]
assert a["qgis_style_classes"]["href"] == "risk_cog_classes.qml", a["qgis_style_classes"]
assert a["risk_map"]["type"] == "image/tiff; application=geotiff; profile=cloud-optimized"
for name, asset in a.items():
    data = open(os.path.join(d, asset["href"]), "rb").read()
    assert asset["file:checksum"] == "1220" + hashlib.sha256(data).hexdigest(), name
    assert asset["file:size"] == len(data), name
    assert asset["roles"], name
try:  # Debian has no STAC validator: a hand-written schema of the required fields, not STAC's own
    import jsonschema
except ImportError:
    print("# python3-jsonschema absent: the required fields were checked by hand only")
else:
    asset = {"type": "object", "required": ["href", "file:checksum", "file:size"],
             "properties": {"file:checksum": {"type": "string", "pattern": "^1220[0-9a-f]{64}$"},
                            "file:size": {"type": "integer"}}}
    schema = {"type": "object",
              "required": ["type", "stac_version", "id", "geometry", "bbox", "properties", "links", "assets"],
              "properties": {"type": {"const": "Feature"}, "stac_version": {"const": "1.0.0"},
                             "bbox": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "number"}},
                             "properties": {"type": "object", "required": ["datetime", "proj:epsg", "proj:shape"]},
                             "links": {"type": "array"},
                             "assets": {"type": "object", "additionalProperties": asset}}}
    jsonschema.validate(item, schema)
    print("# valid against a hand-written minimal schema of the required fields (not STAC's official schema)")
print("# bbox", b)
EOF
check "the item of a map drawn with --png lists the picture and the style, no classes" /usr/bin/python3 -c "
import json; a = json.load(open('$out/risk.json'))['assets']
assert a['quicklook']['href'] == 'risk.png' and a['quicklook']['type'] == 'image/png', a
assert 'risk_classes' not in a and a['qgis_style']['href'] == 'risk.qml', a"

# A GIS client opens the assets by their hrefs: GDAL's own STAC reader (STACIT, what QGIS and
# rasterio use) opens a href as the file name it is, without decoding it, so a map named with a
# space, '#', '%' and a letter beyond ASCII is listed by its name as it is and opens through its
# item (a percent-encoded href, tried, did not: "Cannot open my%20map...").
check "GDAL's STAC reader opens every asset of a map named with a space, '#', '%' and 'é' through its item" bash -c "
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$out/my map #2 50% é.tif' --png '$out/my map #2 50% é.png' --classes &&
    /usr/bin/python3 - '$out/my map #2 50% é.json' <<'PYEOF'
import hashlib, json, os, sys
from osgeo import gdal
gdal.UseExceptions()
path = sys.argv[1]
item = json.load(open(path))
a = item['assets']
assert a['risk_map']['href'] == 'my map #2 50% é.tif', a['risk_map']
for key, asset in a.items():
    data = open(os.path.join(os.path.dirname(path), asset['href']), 'rb').read()
    assert asset['file:checksum'] == '1220' + hashlib.sha256(data).hexdigest(), key
# STACIT reads a collection of items: the item alone, wrapped; GDAL 3.6 resolves a relative
# href from the working directory, not the item's
os.chdir(os.path.dirname(path))
fc = path[:-5] + ' collection.json'
json.dump({'type': 'FeatureCollection', 'features': [item]}, open(fc, 'w'))
for key in ('risk_map', 'risk_classes'):
    ds = gdal.Open('STACIT:\"%s\":asset=%s' % (fc, key))
    assert (ds.RasterXSize, ds.RasterYSize) == (512, 512), key
os.remove(fc)
PYEOF"

# Where a map spans the antimeridian or holds a pole, the item says so as RFC 7946 wants: a bbox
# whose west is east of its east and the polygon cut in two along 180 degrees (UTM zone 1 tiles
# reaching into zone 60; lon/lat tiles from 179.95 E), or the band from the outline to the pole
# (polar stereographic tiles around the south pole), or all longitudes for a raster all the way
# round (a lon/lat grid from -0.125 to 359.875, ERA5's, its latitudes to 90.125). Every longitude
# within [-180, 180], every latitude within [-90, 90], every ring counter-clockwise (also of a
# south-up raster, which walks its corners the other way).
gdal_translate -q -of VRT -a_srs EPSG:32601 -a_ullr 178000 2000000 193360 1984640 "$S" "$tmp/am_utm.vrt"
gdal_translate -q -of VRT -a_srs EPSG:4326 -a_ullr 179.95 10 180.1036 9.8464 "$S" "$tmp/am_deg.vrt"
gdal_translate -q -of VRT -a_srs EPSG:3031 -a_ullr -7680 7680 7680 -7680 "$S" "$tmp/pole.vrt"
gdal_translate -q -of VRT -a_srs EPSG:4326 -a_ullr -0.125 90.125 359.875 -90.125 "$S" "$tmp/globe.vrt"
gdal_translate -q -of VRT -a_srs EPSG:32601 -a_ullr 178000 1984640 193360 2000000 "$S" "$tmp/am_south_up.vrt"
for v in am_utm am_deg pole globe am_south_up; do lpredict --tiles "$tmp/$v.vrt" --out "$out/$v.tif" >"$log" 2>&1; done
check "STAC geometry across the antimeridian (a bbox from west to east over 180, a MultiPolygon cut there) and around a pole" \
    /usr/bin/python3 - "$out" <<'EOF'
import json, sys
def item(name):
    it = json.load(open(f"{sys.argv[1]}/{name}.json"))
    g = it["geometry"]
    for poly in g["coordinates"] if g["type"] == "MultiPolygon" else [g["coordinates"]]:
        r = poly[0]
        area = sum(r[k][0] * r[k + 1][1] - r[k + 1][0] * r[k][1] for k in range(len(r) - 1))
        assert area > 0, (name, "clockwise", r)
        assert all(-180 <= x <= 180 and -90 <= y <= 90 for x, y in r), (name, r)
    return it
for name, (w, e, s, n) in {"am_utm": ((179.9, 180), (-180, -179.8), (17.8, 18.0), (18.0, 18.2)),
                           "am_south_up": ((179.9, 180), (-180, -179.8), (17.8, 18.0), (18.0, 18.2)),
                           "am_deg": ((179.9499, 179.9501), (-179.8965, -179.8963), (9.84, 9.85), (9.99, 10.01))}.items():
    it = item(name)
    b, g = it["bbox"], it["geometry"]
    assert w[0] < b[0] < w[1] and e[0] < b[2] < e[1] and s[0] < b[1] < s[1] and n[0] < b[3] < n[1], (name, b)
    assert g["type"] == "MultiPolygon" and len(g["coordinates"]) == 2, (name, g)
    west, east = (p[0] for p in g["coordinates"])
    for ring, side in ((west, 1), (east, -1)):
        assert ring[0] == ring[-1] and len(ring) >= 4, (name, ring)
        assert all(-180 <= x <= 180 and x * side > 0 for x, _ in ring), (name, ring)
        assert any(x == 180 * side for x, _ in ring), (name, ring)  # cut on the antimeridian
    print(f"# {name}: bbox {b}")
it = item("pole")
b, g = it["bbox"], it["geometry"]
assert b[0] == -180 and b[2] == 180 and b[1] == -90 and -89.95 < b[3] < -89.9, b
ring = g["coordinates"][0]
assert g["type"] == "Polygon" and ring[0] == ring[-1] and min(y for _, y in ring) == -90, g
print(f"# pole: bbox {b}")
b = item("globe")["bbox"]
assert b == [-180, -90, 180, 90], b
EOF

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
XC=$out/again_classes.tif
lpredict --tiles "$S" --out "$X" --classes >"$out/again.log" 2>&1
check "the class raster's category names live in its .aux.xml sidecar" test -f "$XC.aux.xml"
# without the sidecar (GDAL_PAM_ENABLED=NO) the names are lost: warned, and not claimed
check "GDAL_PAM_ENABLED=NO: the class raster's lost category names are warned about, not claimed" bash -c "
    GDAL_PAM_ENABLED=NO '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$out/nopam.tif' --classes \
        >'$out/nopam.log' 2>&1 && [ ! -e '$out/nopam_classes.tif.aux.xml' ] &&
    grep -q 'warning: .*nopam_classes.tif: the 5 category names of band 1 were not stored (0 read back); GDAL_PAM_ENABLED is off' '$out/nopam.log' &&
    grep -q 'class raster .*nopam_classes.tif (Byte, colour table)\$' '$out/nopam.log' &&
    grep -q 'class raster .*again_classes.tif (Byte, colour table, category names)' '$out/again.log'"
check "rewriting without --classes replaces the map and removes our stale class raster and its style" bash -c "
    [ -f '$out/again_classes.qml' ] &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' >'$out/again2.log' 2>&1 &&
    [ ! -e '$XC' ] && [ ! -e '$XC.aux.xml' ] && [ ! -e '$X.aux.xml' ] && [ -f '$out/again.qml' ] &&
    [ ! -e '$out/again_classes.qml' ] && grep -q 'removed .*again_classes.qml, the class raster.s QGIS style of an earlier map' '$out/again2.log'"
check "--classes --no-style removes both styles wildcpu wrote (no file beside them); a user's own class style is kept" bash -c "
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' --classes >/dev/null &&
    [ -f '$out/again.qml' ] && [ -f '$out/again_classes.qml' ] && touch '$out/again_classes.qml.aux.xml' &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' --classes --no-style >/dev/null &&
    [ ! -e '$out/again.qml' ] && [ ! -e '$out/again_classes.qml' ] && [ -f '$XC' ] &&
    [ -f '$out/again_classes.qml.aux.xml' ] && rm '$out/again_classes.qml.aux.xml' &&
    echo '<qgis>my classes</qgis>' >'$out/again_classes.qml' &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' --classes >'$out/again3.log' 2>&1 &&
    grep -q 'my classes' '$out/again_classes.qml' &&
    grep -q 'again_classes.qml is not a style wildcpu wrote (your own?): left as it is, so QGIS draws .*again_classes.tif with it' '$out/again3.log' &&
    ! grep -q qgis_style_classes '$out/again.json' && grep -q '\"qgis_style\"' '$out/again.json' &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' >/dev/null &&
    grep -q 'my classes' '$out/again_classes.qml' && rm '$out/again_classes.qml'"
check "--no-style removes the style wildcpu wrote, keeps a user's own, leaves it out of the item" bash -c "
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' --no-style >/dev/null &&
    [ ! -e '$out/again.qml' ] && echo '<qgis/>' >'$out/again.qml' &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$X' --no-style >/dev/null &&
    [ \"\$(cat '$out/again.qml')\" = '<qgis/>' ] && ! grep -q qgis_style '$out/again.json'"
gdal_create -q -of GTiff -ot Byte -outsize 8 8 -bands 1 -burn 7 "$out/mine_classes.tif" # a user's raster
mine=$(sha256sum <"$out/mine_classes.tif")
lpredict --tiles "$S" --out "$out/mine.tif" >"$log" 2>&1
check "a file of that name that is not a wildcpu class raster stays" \
    test "$(sha256sum <"$out/mine_classes.tif")" = "$mine"
# working files a killed predict left (SIGKILL: no handler runs) beside the outputs: said, with
# their names, and left alone (a run on another node may own them); others' and malformed kept
mkdir -p "$out/lo"
touch "$out/lo/.m.tif.tmp-99999999" "$out/lo/.m.tif.out-99999999" "$out/lo/.m.tif.tmp-99999999.aux.xml" \
    "$out/lo/.other.tif.tmp-5" "$out/lo/.m.tif.tmp-12a"
lpredict --tiles "$S" --out "$out/lo/m.tif" >"$tmp/lo.log" 2>&1
check "leftover working files of a killed run are named in a warning and left alone" bash -c "
    grep -q 'warning: 3 working files of another run lie beside the output .*lo/.m.tif.tmp-99999999' '$tmp/lo.log' &&
    [ \$(ls -A '$out/lo' | grep -c '^\\.') -eq 5 ] && [ -f '$out/lo/m.tif' ]"
# a pipe named like a companion the map does not write (NAME_classes.tif without --classes,
# NAME.qml with --no-style) is not opened to see whether it is ours: that would wait for ever
mkdir -p "$out/fifo" && mkfifo "$out/fifo/m_classes.tif" "$out/fifo/m.qml"
timeout -k 5 60 "$bin" predict --checkpoint "$tmp/lg" --tiles "$S" --out "$out/fifo/m.tif" --no-style >"$tmp/fifo.log" 2>&1
st=$?
[ $st -eq 0 ] && [ -p "$out/fifo/m_classes.tif" ] && [ -p "$out/fifo/m.qml" ] \
    && ok "pipes named like the map's companions are left alone, not waited on" \
    || notok "pipes named like the map's companions" "status $st: $(tail -1 "$tmp/fifo.log")"
# files named after the map that are someone else's: a GeoJSON of perimeters where the STAC item
# goes, a class raster of one's own with --classes: refused before any work, untouched; one's own
# style: kept (warned), and left out of the item
echo '{"type": "FeatureCollection", "features": []}' >"$out/perims.json"
expect_fail "a NAME.json that is not wildcpu's STAC item is refused, untouched" 1 \
    "perims.json exists and is not a STAC item wildcpu wrote" lpredict --tiles "$S" --out "$out/perims.tif"
check "... and nothing is written" bash -c "grep -q FeatureCollection '$out/perims.json' && [ ! -e '$out/perims.tif' ]"
expect_fail "with --classes, a NAME_classes.tif that is not wildcpu's is refused" 1 \
    "mine_classes.tif exists and is not a class raster wildcpu wrote" lpredict --tiles "$S" --out "$out/mine.tif" --classes
echo 'not ours' >"$out/notes_classes.tif"
expect_fail "... and one that is no raster at all, as a file of another kind" 2 \
    "refusing to replace .*notes_classes.tif with the class raster .*: it holds a file of another kind, not a TIFF raster" \
    lpredict --tiles "$S" --out "$out/notes.tif" --classes
echo '<qgis>my own style</qgis>' >"$out/own.qml"
lpredict --tiles "$S" --out "$out/own.tif" >"$tmp/own.log" 2>&1
check "a NAME.qml that is not wildcpu's is kept, warned about, and left out of the item" bash -c "
    grep -q 'my own style' '$out/own.qml' && grep -q 'own.qml is not a style wildcpu wrote' '$tmp/own.log' &&
    [ -f '$out/own.tif' ] && ! grep -q qgis_style '$out/own.json'"
# risk.tif, risk.tiff and risk.TIF share the stem risk, so the files named after it: a map
# written as risk.tiff beside a map risk.tif that is still there must not take them over (its
# item replaced, its class raster and that raster's style removed); once risk.tif is gone they
# are stale, and go as an earlier map's do
mkdir -p "$out/stem"
lpredict --tiles "$S" --out "$out/stem/risk.tif" --classes >"$tmp/stem1.log" 2>&1
before=$(cd "$out/stem" && sha256sum risk.json risk_classes.tif risk_classes.qml)
expect_fail "a map of another extension (risk.tiff) beside a map of the same stem is refused" 1 \
    "stem/risk.json is the STAC item of .*stem/risk.tif, another map, which is still there: the map .*stem/risk.tiff, writing its STAC item .*stem/risk.json, would replace it (the two maps share the stem" \
    lpredict --tiles "$S" --out "$out/stem/risk.tiff"
check "... and the other map's item, class raster and style are untouched, nothing written" bash -c "
    [ \"\$(cd '$out/stem' && sha256sum risk.json risk_classes.tif risk_classes.qml)\" = '$before' ] &&
    [ -f '$out/stem/risk_classes.tif.aux.xml' ] && [ ! -e '$out/stem/risk.tiff' ]"
expect_fail "... and risk.TIF likewise" 1 "is the STAC item of .*stem/risk.tif" \
    lpredict --tiles "$S" --out "$out/stem/risk.TIF" --classes
check "the same map drawn again, and once the other map is gone, a map of the stem is written" bash -c "
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$out/stem/risk.tif' --classes >/dev/null 2>&1 &&
    mv '$out/stem/risk.tif' '$out/stem/kept.tif' &&
    '$bin' predict --checkpoint '$tmp/lg' --tiles '$S' --out '$out/stem/risk.tiff' >/dev/null 2>&1 &&
    grep -q '\"href\":\"risk.tiff\"' '$out/stem/risk.json' && [ ! -e '$out/stem/risk_classes.tif' ]"

# nor may a map take another map's files of another name, as that map's STAC item lists them:
# written as its class raster (m_classes.tif beside m.tif), with --classes whose style is that of
# a map n_classes.tif, with --png onto its picture, or evaluate's metrics onto its item; each is
# refused before any work, the other map's files as they were (its item's checksums still true).
# Without --classes n.tif keeps n_classes.qml, which is no stale style of its own; and a file an
# item lists that is gone is nobody's
mkdir -p "$out/other"
lpredict --tiles "$S" --out "$out/other/m.tif" --classes --png "$out/other/m.png" >"$tmp/other1.log" 2>&1
lpredict --tiles "$S" --out "$out/other/n_classes.tif" >>"$tmp/other1.log" 2>&1
lpredict --tiles "$S" --out "$out/other/g.tif" --png "$out/other/g.png" >>"$tmp/other1.log" 2>&1
rm -f "$out/other/g.png"
before=$(cd "$out/other" && sha256sum m.* m_* n_* g.*)
expect_fail "a map written over another map's class raster is refused" 1 \
    "the map .*other/m_classes.tif would replace the class raster of .*other/m.tif, another map, which is still there (its STAC item .*other/m.json lists it): choose another --out" \
    lpredict --tiles "$S" --out "$out/other/m_classes.tif"
expect_fail "... with --classes, a class raster's style that is another map's style" 1 \
    "the map .*other/n.tif, writing its class raster .*other/n_classes.tif, would replace the map of .*other/n_classes.tif" \
    lpredict --tiles "$S" --out "$out/other/n.tif" --classes
expect_fail "... a picture over another map's picture" 1 \
    "writing its quick-look picture .*other/m.png, would replace the quick-look picture of .*other/m.tif, .*choose another --png" \
    lpredict --tiles "$S" --out "$out/other/p.tif" --png "$out/other/m.png"
expect_fail "... and evaluate's metrics over another map's item" 1 \
    "other/m.json is the STAC item of .*other/m.tif, another map, which is still there: the metrics .*other/m.json would replace it; choose another --out" \
    "$bin" evaluate --checkpoint "$tmp/lg" --tiles "$S" --out "$out/other/m.json"
check "... and the other maps' files are untouched, nothing written" bash -c "
    [ \"\$(cd '$out/other' && sha256sum m.* m_* n_* g.*)\" = \"$before\" ] && [ ! -e '$out/other/p.tif' ]"
lpredict --tiles "$S" --out "$out/other/n.tif" >"$tmp/other2.log" 2>&1
st=$?
check "a map without --classes keeps another map's style named like its class raster's" bash -c "
    [ $st -eq 0 ] && grep -q 'kept .*other/n_classes.qml, named like this map.s class raster.s QGIS style: it is the QGIS style of .*other/n_classes.tif' '$tmp/other2.log' &&
    [ \"\$(cd '$out/other' && sha256sum m.* m_* n_* g.*)\" = \"$before\" ]"
lpredict --tiles "$S" --out "$out/other/q.tif" --png "$out/other/g.png" >"$tmp/other3.log" 2>&1
check "a picture another map's item lists but that is gone is nobody's: drawn there" \
    test $? -eq 0 -a -f "$out/other/g.png"
# ... and one drawn over since (a fixed --png path each new map draws, the last one's item
# elsewhere) is no longer the listing map's: its size and checksum are the item's no more
lpredict --tiles "$S" --out "$out/other/s1.tif" --png "$out/other/shared.png" >"$tmp/other4.log" 2>&1
mkdir -p "$out/elsewhere"
"$bin" predict --checkpoint "$tmp/run" --tiles "$S" --out "$out/elsewhere/s2.tif" --png "$out/elsewhere/s2.png" >>"$tmp/other4.log" 2>&1
cp "$out/elsewhere/s2.png" "$out/other/shared.png" # another model's picture, its item elsewhere
lpredict --tiles "$S" --out "$out/other/s3.tif" --png "$out/other/shared.png" >>"$tmp/other4.log" 2>&1
check "a picture written over by another map since its item listed it is nobody's: drawn there" \
    test $? -eq 0 -a -f "$out/other/s3.tif"
# an item found by its name is read whole: one rewritten with its keys in another order (jq -S)
# is still the map's
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); json.dump(d, open(sys.argv[1], 'w'), sort_keys=True)" "$out/other/m.json"
expect_fail "an item rewritten with its keys sorted still names its map (risk.tiff beside it refused)" 1 \
    "other/m.json is the STAC item of .*other/m.tif, another map, which is still there" \
    lpredict --tiles "$S" --out "$out/other/m.tiff"
# a training run's map is checked before the training: a map of the user's in the run directory
# whose picture is DIR/risk.png
"$bin" --tiles "$S" --out "$tmp/rd" --model logistic --steps 1 --batch 8 --no-predict >"$log" 2>&1
lpredict --tiles "$S" --out "$tmp/rd/mine.tif" --png "$tmp/rd/risk.png" >>"$log" 2>&1
expect_fail "a training run whose map would replace a picture of a map in its directory is refused before it trains" 1 \
    "the map .*rd/risk.tif, writing its quick-look picture .*rd/risk.png, would replace the quick-look picture of .*rd/mine.tif, another map, which is still there (its STAC item .*rd/mine.json lists it): pass --no-predict" \
    "$bin" --tiles "$S" --out "$tmp/rd" --model logistic --steps 2 --batch 8
check "... and it did not train" test ! -e "$tmp/rd/checkpoints/ckpt-00000002.wcp" -a -f "$tmp/rd/checkpoints/ckpt-00000001.wcp"
# ---- refusals --------------------------------------------------------------------------------
gdal_translate -q -of VRT -b 1 -b 2 -b 3 -b 4 -b 6 -b 7 -b 8 -b 9 -b 10 -b 11 -b 12 -b 13 \
    "$S" "$tmp/no_ndvi.vrt"
"$bin" --tiles "$tmp/no_ndvi.vrt" --out "$tmp/lrun" --model logistic --steps 2 --batch 8 \
    --no-predict >"$log" 2>&1 || notok "train a logistic model without ndvi"
expect_fail "refuses a raster with a band the model was not trained on" 1 "ndvi" \
    "$bin" predict --tiles "$S" --checkpoint "$tmp/lrun" --out "$out/bad.tif"
expect_fail "refuses a raster missing a band the model needs" 1 "'ndvi'.*missing" \
    predict --tiles "$tmp/no_ndvi.vrt" --out "$out/bad.tif"
# two bands of one name: the name is ambiguous, and neither band is "not among the inputs"
gdal_translate -q -of VRT "$S" "$tmp/two_ndvi.vrt"
sed -i 's|<Description>precip_30d</Description>|<Description>ndvi</Description>|' "$tmp/two_ndvi.vrt"
expect_fail "two bands of one name: ambiguous" 1 "2 bands are named 'ndvi': which is input 5" \
    predict --tiles "$tmp/two_ndvi.vrt" --out "$out/bad.tif"
cp "$log" "$tmp/two_ndvi.log"
check "... and said once, not also as bands the model does not take" bash -c \
    "! grep -q \"'ndvi' is not among\" '$tmp/two_ndvi.log' && ! grep -q 'drop the other' '$tmp/two_ndvi.log'"
# a wider type holds the same values (Int16 elevation as Float32): the same map, to the bit; a
# narrower one (Float32 slope as Int16) has lost values the model knew: refused
gdal_translate -q -of VRT -ot Float32 "$S" "$tmp/f32.vrt"
gdal_translate -q -of VRT -ot Int16 "$S" "$tmp/i16.vrt"
if predict --tiles "$tmp/f32.vrt" --out "$out/f32.tif" >"$log" 2>&1 &&
    /usr/bin/python3 -c 'import sys; from osgeo import gdal
a, b = (gdal.Open(p) for p in sys.argv[1:3])
sys.exit(0 if (a.ReadAsArray() == b.ReadAsArray()).all() else 1)' "$R" "$out/f32.tif"; then
    ok "every band as Float32 (elevation was Int16): mapped, bitwise the map of the original"
else
    notok "every band as Float32" "$(grep -E 'error' "$log" | head -2 | cut -c1-300)"
fi
expect_fail "refuses a band of a narrower type than in training" 1 "'slope' is Int16 here but was Float32.*its training type or a wider one" \
    predict --tiles "$tmp/i16.vrt" --out "$out/bad.tif"
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
# paths GDAL cannot take (2048 bytes with the temporary name and sidecar), or a file name the
# file system cannot (255 bytes with the temporary name): refused before any computing
long=$tmp/long
while [ ${#long} -lt 2100 ]; do long=$long/$(printf 'd%.0s' $(seq 1 200)); done
mkdir -p "$long"
expect_fail "--out too long for GDAL: exit 2 before computing" 2 "refusing to write the risk map to a path of [0-9]* bytes .*GDAL takes paths shorter than 2048 bytes; give a path of at most [0-9]* bytes" \
    predict --tiles "$S" --out "$long/risk.tif"
name_max=$(getconf NAME_MAX "$out")
expect_fail "--out of a file name too long with its temporary name: exit 2 before computing" 2 "its file name, $((name_max - 5)) bytes, leaves no room for its temporary name and sidecar (21 bytes longer) within this file system's $name_max" \
    predict --tiles "$S" --out "$out/$(printf 'n%.0s' $(seq 1 $((name_max - 9)))).tif"
md5_before=$(md5sum "$tmp/sample/tiles/r00_c00_f32.tif")
expect_fail "refuses --out equal to an input tile (another spelling of its path)" 2 "is an input" \
    predict --tiles "$S" --out "$tmp/sample/tiles/../tiles/r00_c00_f32.tif"
# a tile reached through a VRT of the VRT (GDAL lists one level), and an archive holding the
# raster (/vsizip/): inputs too, refused, and left as they were
gdalbuildvrt -q "$tmp/sample/outer.vrt" "$S"
/usr/bin/python3 - "$S" "$tmp/sample/outer.vrt" <<'PY'
import sys
from osgeo import gdal
s, o = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2], gdal.GA_Update)
for i in range(s.RasterCount):
    o.GetRasterBand(i + 1).SetDescription(s.GetRasterBand(i + 1).GetDescription())
PY
expect_fail "refuses --out equal to a tile of a VRT within the VRT" 2 "is an input" \
    predict --tiles "$tmp/sample/outer.vrt" --out "$tmp/sample/tiles/r00_c00_f32.tif"
(cd "$tmp" && /usr/bin/python3 -c '
import os, zipfile
with zipfile.ZipFile("sample.zip", "w") as z:
    z.write("sample/tiles.vrt")
    for f in sorted(os.listdir("sample/tiles")): z.write("sample/tiles/" + f)')
zip_md5=$(md5sum <"$tmp/sample.zip")
expect_fail "refuses --out equal to the zip archive the raster is read from (/vsizip/)" 2 "is an input" \
    predict --tiles "/vsizip/$tmp/sample.zip/sample/tiles.vrt" --out "$tmp/sample.zip"
check "... and both inputs are as they were" bash -c \
    "[ \"\$(md5sum <'$tmp/sample/tiles/r00_c00_f32.tif')\" = '$(md5sum <"$tmp/sample/tiles/r00_c00_f32.tif")' ] && [ \"\$(md5sum <'$tmp/sample.zip')\" = '$zip_md5' ]"
ln -s "$S" "$out/link.vrt"
expect_fail "refuses --out that is a symlink to the input" 2 "is an input" \
    predict --tiles "$S" --out "$out/link.vrt"
expect_fail "refuses --png equal to --out" 2 "the risk map goes there too" \
    predict --tiles "$S" --out "$out/same.tif" --png "$out/same.tif"
expect_fail "refuses --png on the map's GDAL sidecar (which gdalinfo -stats rewrites)" 2 "map's GDAL sidecar to .*same.tif.aux.xml: the quick-look picture goes there too" \
    predict --tiles "$S" --out "$out/same.tif" --png "$out/same.tif.aux.xml"
expect_fail "refuses --png that the map's STAC item would overwrite" 2 "STAC item (named after the map) to .*same.json: the quick-look picture goes there too" \
    predict --tiles "$S" --out "$out/same.tif" --png "$out/same.json"
check "the input tile is untouched" bash -c "[ \"\$(md5sum '$tmp/sample/tiles/r00_c00_f32.tif')\" = '$md5_before' ]"
cp "$R" "$out/keep.tif"
md5_keep=$(md5sum <"$out/keep.tif")
predict --tiles "$tmp/i16.vrt" --out "$out/keep.tif" >"$log" 2>&1
check "a failed run leaves an existing map as it was" bash -c "[ \"\$(md5sum <'$out/keep.tif')\" = '$md5_keep' ]"
check "no temporary files left behind" bash -c "! ls -A '$out' | grep -Eq '[.](tmp|out|cog)-[0-9]+'"

# Ground the model was not trained for is said, not silently mapped: another pixel size, a
# south-up raster, a raster placed by GCPs alone (the map then has no georeferencing)
gdal_translate -q -of VRT "$S" "$out/coarse.vrt" # the same pixels, said to be 90 m
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform())
g[1] *= 3; g[5] *= 3; d.SetGeoTransform(g); d = None' "$out/coarse.vrt"
gdal_translate -q -of VRT "$S" "$out/south.vrt"
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform())
g[3] += g[5] * d.RasterYSize; g[5] = -g[5]; d.SetGeoTransform(g); d = None' "$out/south.vrt"
gdal_translate -q -of VRT "$S" "$out/eastwest.vrt"
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform())
g[0] += g[1] * d.RasterXSize; g[1] = -g[1]; d.SetGeoTransform(g); d = None' "$out/eastwest.vrt"
gdal_translate -q -of VRT "$S" "$out/shear.vrt"
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform()); g[2] = 15.0
d.SetGeoTransform(g); d = None' "$out/shear.vrt"
gdal_translate -q -of VRT "$S" "$out/upside.vrt"
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform())
g[0] += g[1] * d.RasterXSize; g[1] = -g[1]; g[3] += g[5] * d.RasterYSize; g[5] = -g[5]
d.SetGeoTransform(g); d = None' "$out/upside.vrt"
gdal_translate -q -of VRT "$S" "$out/turned.vrt"
/usr/bin/python3 -c 'import math, sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform()); a = math.radians(30)
g[1], g[2], g[4], g[5] = 30 * math.cos(a), 30 * math.sin(a), 30 * math.sin(a), -30 * math.cos(a)
d.SetGeoTransform(g); d = None' "$out/turned.vrt"
# turned by 120 and 180 degrees (a turn, not a mirror: the pixel axes keep their handedness), and
# mirrored and turned
for turn in 120:1 180:1 40:-1; do
    gdal_translate -q -of VRT "$S" "$out/turn${turn%%:*}_${turn#*:}.vrt"
    /usr/bin/python3 -c 'import math, sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); g = list(d.GetGeoTransform()); a = math.radians(float(sys.argv[2]))
m = float(sys.argv[3])
g[1], g[2], g[4], g[5] = 30 * math.cos(a), m * 30 * math.sin(a), 30 * math.sin(a), -m * 30 * math.cos(a)
d.SetGeoTransform(g); d = None' "$out/turn${turn%%:*}_${turn#*:}.vrt" "${turn%%:*}" "${turn#*:}"
done
gdal_translate -q -of VRT -a_srs EPSG:32611 -gcp 0 0 640000 4930000 -gcp 512 0 655360 4930000 -gcp 0 512 640000 4914640 "$S" "$out/gcp0.vrt"
/usr/bin/python3 -c 'import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], gdal.GA_Update); d.SetGeoTransform([0, 1, 0, 0, 0, 1]); d = None' "$out/gcp0.vrt"
sed '/<GeoTransform>/d' "$out/gcp0.vrt" >"$out/gcp.vrt"
# the same pixels in a CRS of US survey feet (EPSG:2241): 30 ft are 9.14 m, 98.4252 ft the 30 m
# of training (compared in metres, not as the CRSs' numbers)
gdal_translate -q -of VRT -a_srs EPSG:2241 -a_ullr 500000 1500000 515360 1484640 "$S" "$out/feet30.vrt"
gdal_translate -q -of VRT -a_srs EPSG:2241 -a_ullr 500000 1500000 550392.70 1449607.30 "$S" "$out/feet98.vrt"
# pixel sizes compared on the ground: Web Mercator's metres are not ground metres away from the
# equator (42.02 of them are 30 m at the sample's 44.4 degrees north, and 30 of them 21.4 m); a
# warped VRT (gdalwarp -of VRT) reprojects its sources, which are then in another CRS on purpose
gdalwarp -q -of VRT -ot Float32 -t_srs EPSG:3857 -tr 42.017 42.017 "$S" "$out/merc42.vrt"
gdalwarp -q -of VRT -ot Float32 -t_srs EPSG:3857 -tr 30 30 "$S" "$out/merc30crs.vrt"
gdalwarp -q -of VRT -ot Float32 -t_srs EPSG:4326 -tr 0.000377 0.00027 "$S" "$out/lonlat30.vrt"
# 30 m pixels in grads (EPSG:4807, NTF Paris: 0.00042347 x 0.00029994 grad at 50 grad), and on
# a polar stereographic grid centred on the pole (30 m of EPSG:3031 are 30.8 m there), whose
# longitude is undefined: measured as if in degrees, and at the pole, they were 30.4 x 33.4 m
# and 39.2 x 57.4 m
gdal_translate -q -of VRT -a_srs EPSG:4807 -a_ullr 2 50 2.21681664 49.84643072 "$S" "$out/grads30.vrt"
gdal_translate -q -of VRT -a_srs EPSG:3031 -a_ullr -7680 7680 7680 -7680 "$S" "$out/pole.vrt"
# a geotransform without a CRS (a .prj lost beside its raster): mapped without a word before
gdal_translate -q -of VRT "$S" "$out/nocrs.vrt"
sed -i '/<SRS/d' "$out/nocrs.vrt"
for c in "coarse.vrt:has pixels of 90 x 90 m on the ground, the model's training data 30 x 30 m" \
    "feet30.vrt:has pixels of 9.14 x 9.14 m on the ground, the model's training data 30 x 30 m" \
    "merc30crs.vrt:has pixels of 21.5 x 21.4 m on the ground, the model's training data 30 x 30 m" \
    "pole.vrt:has pixels of 30.8 x 30.8 m on the ground, the model's training data 30 x 30 m" \
    "south.vrt:is south-up, the model's training data north-up" \
    "eastwest.vrt:is north-up with columns east to west, the model's training data north-up:" \
    "turned.vrt:is turned by 30.0 degrees against the model's training data (its geotransform's rotation terms)" \
    "shear.vrt:has pixel axes at 63.4 degrees to each other (a sheared geotransform), the model's training data at 90.0" \
    "upside.vrt:is turned by 180.0 degrees against the model's training data (its rows run east to west, its columns south to north; the training data's west to east, north to south)" \
    "turn120_1.vrt:is turned by 120.0 degrees against the model's training data" \
    "turn180_1.vrt:is turned by 180.0 degrees against the model's training data" \
    "turn40_-1.vrt:is mirrored against the model's training data" \
    "gcp.vrt:is placed by 3 GCPs and has no geotransform: the map is written on its pixel grid with the same GCPs" \
    "nocrs.vrt:has a geotransform but no CRS, the model's training data is in EPSG:32611: the map is written without a CRS"; do
    f=${c%%:*} want=${c#*:}
    if lpredict --tiles "$out/$f" --out "$out/w_$f.tif" >"$log" 2>&1 && grep -q "warning: .*$f $want" "$log"; then
        ok "predict warns: $f $want"
    else
        notok "predict's warning for $f"
    fi
done
# an engineering CRS, whose datum GeoTIFF drops: read back under the same name, but not the same
# CRS; said so (it named "arbitrary" twice, as if nothing differed)
gdal_translate -q -of VRT -a_srs 'LOCAL_CS["arbitrary",LOCAL_DATUM["x",0],UNIT["metre",1],AXIS["Easting",EAST],AXIS["Northing",NORTH]]' "$S" "$out/local.vrt"
lpredict --tiles "$out/local.vrt" --out "$out/local.tif" >"$tmp/local.log" 2>&1
check "a CRS read back under its name but defined otherwise (an engineering CRS): said as such" \
    grep -q "warning: .*local.tif: its CRS reads back as arbitrary, not the arbitrary written (the same name, another definition" "$tmp/local.log"
# ... and the map of the raster GCPs place carries them (it was placed nowhere: QGIS could not
# draw it, gdalwarp could not warp it), in their CRS
check "the map of a raster GCPs place carries the same GCPs in their CRS" /usr/bin/python3 -c "
from osgeo import gdal
a, b = gdal.Open('$out/gcp.vrt'), gdal.Open('$out/w_gcp.vrt.tif')
key = lambda d: [(g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY, g.GCPZ) for g in d.GetGCPs()]
assert len(key(a)) == 3 and key(a) == key(b), (key(a), key(b))
sa, sb = a.GetGCPSpatialRef(), b.GetGCPSpatialRef()
assert sa is not None and sb is not None and sb.IsSame(sa), (sa, sb)
assert b.GetGeoTransform(can_return_null=True) is None"
# the quick-look is north-up whatever the raster's row order: the south-up copy's picture is the
# sample's with its map rows painted the other way round (the same pixels: their nodata, the
# alpha plane, is exactly the same; the colours differ, the pooling phase being another)
if lpredict --tiles "$S" --out "$out/up_n.tif" --png "$out/up_n.png" >"$log" 2>&1 &&
    lpredict --tiles "$out/south.vrt" --out "$out/up_s.tif" --png "$out/up_s.png" >"$log" 2>&1 &&
    /usr/bin/python3 - "$out/up_n.png" "$out/up_s.png" "$out/up_n.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal
n, s = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
h = gdal.Open(sys.argv[3]).RasterYSize  # the picture is the map at full resolution, then the legend
assert n.shape == s.shape and n.shape[1] > h, (n.shape, s.shape, h)
assert np.array_equal(n[3, :h], s[3, :h][::-1]), "the south-up map's picture is not the north-up one turned over"
assert not np.array_equal(n[3, :h], s[3, :h]), "the pictures' nodata lies alike"
assert np.array_equal(n[:, h:], s[:, h:]), "the legends differ"
PY
then
    ok "the quick-look of a south-up raster is drawn north-up (its rows painted the other way round)"
else
    notok "the quick-look of a south-up raster"
fi
# ... and in the ground's shape: the same pixels on 30 x 45 m (north-up, and south-up) are
# drawn 512 x 768, each picture row the nearest map row (before 2026-12-07 they were drawn
# 512 x 512, stretched as gdal_translate -of PNG draws them)
gdal_translate -q -of VRT -a_ullr 640000 4930000 655360 4906960 "$S" "$out/tall.vrt"
gdal_translate -q -of VRT -a_ullr 640000 4906960 655360 4930000 "$S" "$out/tall_s.vrt"
if lpredict --tiles "$out/tall.vrt" --out "$out/tall.tif" --png "$out/tall.png" >"$log" 2>&1 &&
    grep -q "quick-look .*tall.png: 512x810 px (map 512x768, full resolution, rows scaled to the ground's shape" "$log" &&
    lpredict --tiles "$out/tall_s.vrt" --out "$out/tall_s.tif" --png "$out/tall_s.png" >"$log" 2>&1 &&
    /usr/bin/python3 - "$out/up_n.png" "$out/tall.png" "$out/tall_s.png" <<'PY'
import sys
import numpy as np
from osgeo import gdal
n, t, s = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:4])
assert t.shape == s.shape == (4, 768 + 42, 512), (t.shape, s.shape)
rows = ((2 * np.arange(768) + 1) * 512) // (2 * 768)  # the nearest map row of each picture row
assert np.array_equal(t[3, :768], n[3, :512][rows]), "the tall picture's nodata is not the sample's, rows scaled"
assert np.array_equal(s[3, :768], t[3, :768][::-1]), "the south-up tall picture is not painted the other way round"
PY
then
    ok "the quick-look of pixels of 30 x 45 m keeps the ground's shape (512 x 768), north-up either way"
else
    notok "the quick-look of non-square pixels" "$(grep quick-look "$log")"
fi
if lpredict --tiles "$S" --out "$out/plain_again.tif" >"$log" 2>&1 &&
    ! grep -Eq "has pixels of|is (south|north)-up|is placed by|is turned by" "$log"; then
    ok "no such warning on the training ground's own grid"
else
    notok "a warning on the training grid" 
fi
if lpredict --tiles "$out/grads30.vrt" --out "$out/grads30.tif" >"$log" 2>&1 && ! grep -q "has pixels of" "$log"; then
    ok "grads30.vrt, 30 m pixels in grads: no warning of another pixel size"
else
    notok "grads30.vrt: a pixel-size warning" "$(grep -E 'has pixels of' "$log" | head -2 | cut -c1-300)"
fi
for f in merc42 lonlat30; do
    if lpredict --tiles "$out/$f.vrt" --out "$out/$f.tif" >"$log" 2>&1 && ! grep -Eq "has pixels of|another CRS|wrong ground" "$log"; then
        ok "$f.vrt, a warped VRT of 30 m ground pixels (its bands Float32, training's Int16 or Float32): mapped without a warning"
    else
        notok "$f.vrt: a warning or a refusal" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
    fi
done
# The sample in other units, three VRTs from one script: kelvin.vrt (temp_max in K: degC +
# 273.15 through a ComplexSource's ScaleOffset), fraction.vrt (rel_humidity as a fraction:
# UnitType 1, % x 0.01), cases.vrt (other spellings of the same units: DEGC for degC, metre
# for m, ° for degrees, percent for %; the wind bands without a unit)
/usr/bin/python3 - "$S" "$out" <<'PY'
import os, re, sys
s = open(sys.argv[1]).read().replace('relativeToVRT="1">tiles/', 'relativeToVRT="0">%s/tiles/' % os.path.dirname(os.path.abspath(sys.argv[1])))
head, *bands = s.split("<VRTRasterBand")
def rescaled(name, was, unit, offset, ratio):
    def change(b):
        if "<Description>%s</Description>" % name not in b:
            return b
        b = b.replace("<UnitType>%s</UnitType>" % was, "<UnitType>%s</UnitType>" % unit)
        return re.sub(r"<SimpleSource>(.*?)</SimpleSource>", lambda m: "<ComplexSource>" + m.group(1) +
                      "<NODATA>-9999</NODATA><ScaleOffset>%g</ScaleOffset><ScaleRatio>%g</ScaleRatio></ComplexSource>" % (offset, ratio), b, flags=re.S)
    return change
def cases(b):
    for was, unit in (("degC", "DEGC"), ("m/s", ""), ("m", "metre"), ("degrees", "\u00b0"), ("%", "percent")):
        b = b.replace("<UnitType>%s</UnitType>" % was, "<UnitType>%s</UnitType>" % unit)
    return b
for name, change in (("kelvin", rescaled("temp_max", "degC", "K", 273.15, 1)),
                     ("fraction", rescaled("rel_humidity", "%", "1", 0, 0.01)), ("cases", cases)):
    open(os.path.join(sys.argv[2], name + ".vrt"), "w").write(head + "".join("<VRTRasterBand" + change(b) for b in bands))
PY
# a band in other units than in training (temp_max in kelvin): mapped, with a warning naming the
# band, its mean and how far it lies
if lpredict --tiles "$out/kelvin.vrt" --out "$out/kelvin.tif" >"$log" 2>&1 &&
    grep -q "warning: predict: .*kelvin.vrt, band 7 (temp_max): its values average 2[0-9][0-9].* training standard deviations above the training data's mean" "$log" &&
    [ "$(grep -c 'training standard deviations' "$log")" = 1 ] &&
    lpredict --tiles "$S" --out "$out/plain3.tif" >"$log" 2>&1 && ! grep -q "training standard deviations" "$log"; then
    ok "a band in kelvin where training had Celsius: mapped, with a warning naming it and how far it lies (none for the training data)"
else
    notok "a band in other units" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a band in other units by its metadata, too close for the shift warning (rel_humidity as a
# fraction): warned about, naming the band and both units. Another spelling of one unit does
# not count (DEGC or Celsius for degC, metre for m), nor a band without one.
if grep -q '<UnitType>1</UnitType>' "$out/fraction.vrt" && ! grep -q '<UnitType>m/s</UnitType>' "$out/cases.vrt" &&
    grep -q '<UnitType>metre</UnitType>' "$out/cases.vrt" && grep -q '<UnitType>percent</UnitType>' "$out/cases.vrt" &&
    lpredict --tiles "$out/fraction.vrt" --out "$out/fraction.tif" >"$log" 2>&1 &&
    grep -q "warning: .*fraction.vrt: band 8 (rel_humidity) is in 1 here, in % in the training data: values in other units are not what the model .* learned" "$log" &&
    [ "$(grep -c 'in the training data' "$log")" = 1 ] &&
    lpredict --tiles "$out/cases.vrt" --out "$out/cases.tif" >"$log" 2>&1 && ! grep -q "in the training data" "$log" &&
    lpredict --tiles "$S" --out "$out/plain5.tif" >"$log" 2>&1 && ! grep -q "in the training data" "$log"; then
    ok "a band whose unit says other than the training data's (% as a fraction): warned about once, naming the band and both units (not for DEGC, metre, ° or percent against degC, m, degrees or %, a band without a unit, or the sample)"
else
    notok "a band in other units by its metadata" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a tile written with its bands in another order than the mosaic's (slope and fuel_moisture
# swapped: its descriptions say so, GDAL reads it by number): warned about, naming both
cp -r "$tmp/sample" "$tmp/reorder"
gdal_translate -q -b 5 -b 2 -b 3 -b 4 -b 1 -b 6 -b 7 -b 8 -b 9 -b 10 -b 11 "$tmp/sample/tiles/r00_c01_f32.tif" "$tmp/reorder/tiles/r00_c01_f32.tif"
if lpredict --tiles "$tmp/reorder/tiles.vrt" --out "$out/reorder.tif" >"$log" 2>&1 &&
    grep -q "warning: .*reorder/tiles.vrt: band 2 (slope) of .*reorder/tiles.vrt is read from band 1 of .*reorder/tiles/r00_c01_f32.tif, which that file describes as 'fuel_moisture'" "$log" &&
    lpredict --tiles "$S" --out "$out/plain4.tif" >"$log" 2>&1 && ! grep -q "describes as" "$log"; then
    ok "a tile with its bands in another order than the mosaic's: warned about, naming the band and the file (nothing for the sample)"
else
    notok "a tile with its bands in another order" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a tile whose temperatures are in degF (its unit says so; the mosaic's band says degC):
# warned about, naming the tile and both units; another spelling of degC ("Celsius") is not
cp -r "$tmp/sample" "$tmp/units"
/usr/bin/python3 - "$tmp/units/tiles/r01_c00_f32.tif" "$tmp/units/tiles/r00_c01_f32.tif" <<'PY'
import sys
from osgeo import gdal
for path, unit in zip(sys.argv[1:], ("degF", "Celsius")):
    ds = gdal.Open(path, gdal.GA_Update)
    ds.GetRasterBand(6).SetUnitType(unit)
    ds = None
PY
if lpredict --tiles "$tmp/units/tiles.vrt" --out "$out/units.tif" >"$log" 2>&1 &&
    grep -q "warning: .*units/tiles.vrt: band 7 (temp_max) of .*units/tiles.vrt is in degC, but its source .*units/tiles/r01_c00_f32.tif (band 6) says degF" "$log" &&
    [ "$(grep -c 'but its source' "$log")" = 1 ]; then
    ok "a tile in another unit than the mosaic's band: warned about once, naming the tile and both units (not another spelling of the same unit)"
else
    notok "a tile in another unit" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a tile written again as Int16 behind the mosaic (which still declares Float32: GDAL reads the
# truncated values), and a tile given a mask the mosaic's simple sources do not apply (the
# hidden pixels read as data): each warned about, naming the tile; nothing for the sample
cp -r "$tmp/sample" "$tmp/retyped"
gdal_translate -q -ot Int16 "$tmp/sample/tiles/r01_c01_f32.tif" "$tmp/retyped/tiles/r01_c01_f32.tif"
cp -r "$tmp/sample" "$tmp/masked"
/usr/bin/python3 - "$tmp/masked/tiles/r01_c01_f32.tif" <<'PY'
import sys
import numpy as np
from osgeo import gdal
gdal.SetConfigOption("GDAL_TIFF_INTERNAL_MASK", "YES")
d = gdal.Open(sys.argv[1], gdal.GA_Update); d.CreateMaskBand(gdal.GMF_PER_DATASET)
m = np.full((d.RasterYSize, d.RasterXSize), 255, np.uint8); m[20:100, 20:100] = 0
d.GetRasterBand(1).GetMaskBand().WriteArray(m); d = None
PY
if lpredict --tiles "$tmp/retyped/tiles.vrt" --out "$out/retyped.tif" >"$log" 2>&1 &&
    grep -q "warning: .*retyped/tiles.vrt: band 2 (slope) of .*retyped/tiles.vrt reads its source .*retyped/tiles/r01_c01_f32.tif (band 1) as Int16, and its source .* as Float32" "$log" &&
    [ "$(grep -c 'reads its source' "$log")" = 1 ] &&
    lpredict --tiles "$tmp/masked/tiles.vrt" --out "$out/masked.tif" >"$log" 2>&1 &&
    grep -q "warning: .*masked/tiles.vrt: its source .*masked/tiles/r01_c01_f32.tif has a mask (a mask band) that .*masked/tiles.vrt does not apply" "$log" &&
    lpredict --tiles "$S" --out "$out/plain6.tif" >"$log" 2>&1 && ! grep -Eq "reads its source|does not apply" "$log"; then
    ok "a tile written again in another type, or given a mask the mosaic does not apply: warned about, naming the tile (nothing for the sample)"
else
    notok "a retyped or masked tile behind a mosaic" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a mosaic of described tiles built by gdalbuildvrt (GDAL 3.6 does not copy band descriptions,
# so its bands are band_1..band_13): refused, saying that the sources name the bands and how
# to give the mosaic their names
mkdir -p "$tmp/undescribed"
for xy in "0 0" "256 0" "0 256" "256 256"; do
    set -- $xy
    gdal_translate -q -ot Float32 -a_nodata -9999 -srcwin "$1" "$2" 256 256 "$S" "$tmp/undescribed/t_$1_$2.tif"
done
gdalbuildvrt -q "$tmp/undescribed/m.vrt" "$tmp/undescribed"/t_*.tif
lpredict --tiles "$tmp/undescribed/m.vrt" --out "$out/undescribed.tif" >"$log" 2>&1
s=$?
if [ $s -eq 1 ] && grep -q "Its sources do describe their bands (band 1 of its first source: 'elevation'), but 13 of its own bands have no description" "$log"; then
    ok "a gdalbuildvrt mosaic of described tiles: refused, saying the sources name the bands and how to name the mosaic's"
else
    notok "a mosaic without the descriptions its tiles have" "status $s: $(grep -E 'error' "$log" | cut -c1-300)"
fi
# the same tile under a name with '&' (written &amp; in the VRT's XML, which GDAL undoes)
mv "$tmp/reorder/tiles/r00_c01_f32.tif" "$tmp/reorder/tiles/r00&c01.tif"
sed -i 's|tiles/r00_c01_f32.tif|tiles/r00\&amp;c01.tif|' "$tmp/reorder/tiles.vrt"
if grep -q 'r00&amp;c01.tif' "$tmp/reorder/tiles.vrt" &&
    lpredict --tiles "$tmp/reorder/tiles.vrt" --out "$out/reorder2.tif" >"$log" 2>&1 &&
    grep -q "is read from band 1 of .*reorder/tiles/r00&c01.tif, which that file describes as 'fuel_moisture'" "$log"; then
    ok "the same tile named r00&c01.tif (&amp; in the VRT): warned about under its name"
else
    notok "a reordered tile named with '&'" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
# a source placed half a pixel off the mosaic's grid (DstRect xOff="256.5": gdalbuildvrt writes
# such offsets for a tile whose origin is off the grid) is read shifted: warned about, naming it
sed -e "s|relativeToVRT=\"1\">tiles/|relativeToVRT=\"0\">$(dirname "$S")/tiles/|" \
    -e 's|<DstRect xOff="256" yOff="0" |<DstRect xOff="256.5" yOff="0" |' "$S" >"$out/halfpx.vrt"
if lpredict --tiles "$out/halfpx.vrt" --out "$out/halfpx.tif" >"$log" 2>&1 &&
    grep -q "warning: .*halfpx.vrt: the source .*/tiles/r00_c01_.*tif (band 1 of .*halfpx.vrt) lies 0.5 x 0 pixels off the mosaic's grid" "$log"; then
    ok "a VRT source half a pixel off the mosaic's grid: warned about, naming it"
else
    notok "a VRT source half a pixel off the grid" "$(grep -E 'warning|error' "$log" | head -2 | cut -c1-300)"
fi
gdalwarp -q -of VRT -t_srs EPSG:3857 -tr 42.017 42.017 "$S" "$out/merc_int16.vrt" # every band Int16
expect_fail "a warped VRT of the first band's type (Int16) for Float32 inputs: refused, naming -ot" 1 \
    "band 2 'slope' is Int16 here but was Float32 in the training data.*gdalwarp -ot TYPE" \
    lpredict --tiles "$out/merc_int16.vrt" --out "$out/merc_int16.tif"
if lpredict --tiles "$out/feet98.vrt" --out "$out/feet98.tif" >"$log" 2>&1 && ! grep -q "has pixels of" "$log"; then
    ok "no scale warning for 98.4252 US survey feet, the 30 m of training"
else
    notok "a scale warning for 98.4252 US survey feet" "$(grep warning "$log" | head -2)"
fi
# the map's provenance holds absolute paths (relative ones given from another directory would
# mean nothing beside the map): the input and the checkpoint, in the GeoTIFF and the STAC item
if (cd "$tmp" && "$bin" predict --tiles sample/tiles.vrt --checkpoint ./lg --out out/rel.tif) >"$log" 2>&1 &&
    gdalinfo "$out/rel.tif" | grep -q "^  input=$tmp/sample/tiles.vrt$" &&
    gdalinfo "$out/rel.tif" | grep -q "^  checkpoint=$tmp/lg/" &&
    grep -q "\"wildcpu:input\":\"$tmp/sample/tiles.vrt\"" "$out/rel.json"; then
    ok "a map drawn from relative paths records them absolute (metadata and STAC item)"
else
    notok "absolute provenance" "$(gdalinfo "$out/rel.tif" 2>&1 | grep -E 'input=|checkpoint=') $(tail -2 "$log")"
fi
