#!/usr/bin/env bash
# t_json.sh: wildcpu's real JSON outputs (report.json, every metrics.jsonl line, an exported
# safetensors header and the JSON inside its __metadata__) read by Python's json, which shares no
# code with json.c, in strict mode: the bytes must be UTF-8, NaN and Infinity are refused, and so
# are duplicate keys. The run is made to produce what a hand-written printf gets wrong:
#   - undefined metrics: the labels hold no burned pixel, so AUC-PR, ROC-AUC, best F1 and the
#     oracle's are NaN, which must be null;
#   - strings from outside, in every file: band names (sample bands renamed with quotes,
#     backslashes, "nan", non-ASCII, and one too long to keep, named by its start and a
#     hash), a --model file whose name holds a quote, a backslash, a tab and "nan" and is
#     cut in the middle of a character (the model's name is its path), a spec with such a
#     comment and a byte that is not UTF-8, and a directory, holding every input and output,
#     named with all of these and a byte that is not UTF-8 (in the labels path of the data
#     fingerprint).
# The expected strings are computed here from the bytes given, with Python's own UTF-8 decoder
# (errors="replace": the same substitution of maximal subparts as json.c); those the exported
# file takes from a checkpoint's text (the architecture, the labels path) with its control
# characters and bytes that are not UTF-8 as '?', as every reader of a checkpoint takes them.
. "$(dirname "$0")/lib.sh"

odd="$T/"$'run "quoted" back\\slash\ttab nan \xc3\xa9\xe6\x97\xa5 \xff end'
mkdir -p "$odd" || { notok "a directory with an odd name"; finish; }

# the sample region's VRT with renamed bands (its tiles referred to where they are), all-zero
# labels on its grid, and a logistic spec under an odd name
names=("elevation \"quoted\" back\\slash nan Ünïcödé 火災 🔥"
       "slope $(printf 'x%.0s' $(seq 1 56))é"
       "aspect_sin, with; separators=and"$'\t'"a tab")
$PY - "$SAMPLE" "$odd" "$ROOT/data/sample" "$T" "${names[@]}" <<'PY' >"$T/make.log" 2>&1
import os, sys
from xml.sax.saxutils import escape
import numpy as np
from osgeo import gdal
src, odd, sample, src_dir = sys.argv[1], os.fsencode(sys.argv[2]), sys.argv[3], sys.argv[4] + "/x"
names = sys.argv[5:]
vrt = open(src).read().replace('relativeToVRT="1">tiles/', 'relativeToVRT="0">%s/tiles/' % sample)
for old, new in zip(["elevation", "slope", "aspect_sin"], names):
    vrt = vrt.replace("<Description>%s</Description>" % old,
                      "<Description>%s</Description>" % escape(new), 1)
open(os.path.join(odd, b"tiles.vrt"), "w").write(vrt)
t = gdal.Open(src)
# GDAL's Python binding takes only paths that are UTF-8: written beside, moved by the shell
ds = gdal.GetDriverByName("GTiff").Create(os.path.join(os.path.dirname(src_dir), "labels.tif"),
                                          t.RasterXSize, t.RasterYSize, 1, gdal.GDT_Byte)
ds.SetGeoTransform(t.GetGeoTransform())
ds.SetProjection(t.GetProjection())
ds.GetRasterBand(1).WriteArray(np.zeros((t.RasterYSize, t.RasterXSize), np.uint8))
ds.GetRasterBand(1).SetDescription("fire")
ds = None
PY
[ $? -eq 0 ] && mv "$T/labels.tif" "$odd/labels.tif" ||
    { notok "making the renamed VRT and the labels" "$(tail -3 "$T/make.log")"; finish; }
# 62 bytes, then a 2-byte character that the 63-byte name buffer cuts in half
model=$'m "q" back\\slash\ttab nan '
while [ ${#model} -lt 62 ]; do model+=x; done
model+=$'\xc3\xa9.spec'
# (layer names, and so tensor names, stay plain: the spec parser allows only [A-Za-z0-9_.-] in
# them on main; test_json covers keys that need escaping)
layer=h_out.1
printf '# logistic "quoted" back\\slash\ttab nan \xc3\xa9 \xff\n%s\n%s\n' \
    'input    x' "conv     $layer     x     out=1   k=1" >"$odd/$model"

train=(--tiles "$odd/tiles.vrt" --labels "$odd/labels.tif"
       --oracle "$ROOT/data/sample/oracle_risk.tif"
       --model "$model" --patch 64 --val-block 128 --steps 2 --batch 4 --micro-batch 2
       --ckpt-every 1 --log-every 1 --no-predict)
(cd "$odd" && "$WILDCPU" "${train[@]}" --out "$odd/a") >"$T/a.log" 2>&1
sa=$?
(cd "$odd" && "$WILDCPU" "${train[@]}" --out "$odd/b" --baseline "$odd/a/report.json") \
    >"$T/b.log" 2>&1
sb=$?
"$WILDCPU" export --checkpoint "$odd/a" --out "$odd/model.safetensors" >"$T/e.log" 2>&1
se=$?
if [ $sa -eq 0 ] && [ $sb -eq 0 ] && [ $se -eq 0 ]; then
    ok "trained twice (the second with --baseline) and exported, everything under an odd path"
else
    notok "train and export under an odd path" \
        "status $sa $sb $se: $(tail -2 "$T/a.log") $(tail -2 "$T/b.log") $(tail -2 "$T/e.log")"
    finish
fi

# strict(bytes): the document, or an exception naming what is wrong
cat >"$T/strict.py" <<'PY'
import json
def _constant(c):
    raise ValueError("JSON has no " + c)
def _pairs(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError("duplicate keys %r" % sorted(dup))
    return dict(pairs)
def strict(raw):
    return json.loads(raw.decode("utf-8"), parse_constant=_constant, object_pairs_hook=_pairs)
def replace(b):
    return b.decode("utf-8", "replace")
PY
export STRICT=$T/strict.py

$PY - "$odd" "$model" "${names[@]}" <<'PY' >"$T/report.txt" 2>&1
import os, sys
sys.path.insert(0, os.path.dirname(os.environ["STRICT"]))
from strict import strict, replace
odd, model = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
r = strict(open(os.path.join(odd, b"a/report.json"), "rb").read())
want_model = replace(model[:63])
assert want_model.endswith("x\ufffd"), want_model
assert r["model"] == want_model, (r["model"], want_model)
assert r["status"] == "finished" and r["val_positives"] == 0 and r["val_pixels"] > 0, r
nulls = [k for k in ("val_auc_pr", "val_roc_auc", "val_best_f1", "val_best_f1_threshold",
                     "val_recall_at_half", "oracle_auc_pr", "oracle_roc_auc") if r[k] is not None]
assert not nulls, "should be null: %r" % nulls
assert isinstance(r["val_loss"], float) and isinstance(r["wall_time_s"], float)
n = 0
for name in (b"a/metrics.jsonl", b"b/metrics.jsonl"):
    for i, line in enumerate(open(os.path.join(odd, name), "rb")):
        try:
            d = strict(line)
        except Exception as e:
            raise SystemExit("%s line %d: %s: %r" % (name.decode(), i + 1, e, line[:200]))
        n += 1
        if d["type"] == "val":
            assert d["auc_pr"] is None and d["oracle_roc_auc"] is None and d["positives"] == 0, d
md = open(os.path.join(odd, b"b/report.md"), "rb").read().decode("utf-8", "replace")
assert "| baseline | change |" in md and "Against the baseline (" in md, md[-400:]
print("report.json and %d metrics lines strict JSON; undefined metrics null; model %r"
      % (n, r["model"]))
PY
[ $? -eq 0 ] && ok "$(sed "s|$T/||g" "$T/report.txt")" ||
    notok "report.json and metrics.jsonl in strict JSON" "$(tail -4 "$T/report.txt")"
if grep -q "warning.*baseline" "$T/b.log"; then
    notok "--baseline under an odd path read without a warning" "$(grep warning "$T/b.log")"
else
    ok "--baseline under an odd path read without a warning"
fi

$PY - "$odd" "$model" "$layer" "${names[@]}" <<'PY' >"$T/export.txt" 2>&1
import os, struct, sys
sys.path.insert(0, os.path.dirname(os.environ["STRICT"]))
from strict import strict, replace
odd, model, layer = (os.fsencode(a) for a in sys.argv[1:4])
names = [os.fsencode(n) for n in sys.argv[4:]]
raw = open(os.path.join(odd, b"model.safetensors"), "rb").read()
# safetensors: u64 little-endian header size, then the header: UTF-8 JSON starting with '{',
# trailing spaces allowed (here up to the 8-byte boundary), then the data, each tensor's
# [begin, end) contiguous from 0, covering the data exactly
n = struct.unpack("<Q", raw[:8])[0]
head = raw[8:8 + n]
assert head[:1] == b"{" and (8 + n) % 8 == 0, (n, head[:20])
body = head.rstrip(b" ")
assert len(head) - len(body) < 8, "padding of %d bytes" % (len(head) - len(body))
h = strict(body)
meta = h.pop("__metadata__")
assert all(isinstance(v, str) for v in meta.values()), meta
end = 0
for name, t in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"]):
    b, e = t["data_offsets"]
    size = 4
    for s in t["shape"]:
        size *= s
    assert t["dtype"] == "F32" and b == end and e - b == size, (name, t)
    end = e
assert end == len(raw) - 8 - n, (end, len(raw) - 8 - n)
want_tensors = sorted(replace(layer) + s for s in (".weight", ".bias"))
assert sorted(h) == want_tensors, (sorted(h), want_tensors)
m = strict(meta["wildcpu"].encode("utf-8"))
# a band's name as raster.c keeps it: separators and controls to '_'; a description of 64
# bytes or more is its first 46 bytes or fewer (whole characters), '~' and its FNV-1a 64 hash
def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
def kept(b):
    if len(b) >= 64:
        keep = 46
        while keep > 0 and (b[keep] & 0xC0) == 0x80:
            keep -= 1
        b = b[:keep] + b"~%016x" % fnv1a64(b)
    b = bytes(0x5F if c in b",;=" or c < 0x20 else c for c in b)
    return replace(b)
got = [c["name"] for c in m["input_channels"]]
want = [kept(b) for b in names]
assert got[:3] == want, (got[:3], want)
assert "~" in got[1] and len(got[1].encode()) == 63 and got[2] == "aspect_sin_ with_ separators_and_a tab", got
# a checkpoint's text as every reader takes it (util.c, wc_text_sanitize): each byte of a
# control character or of a sequence that is not UTF-8 as '?'
def sanitized(b):
    out, i = [], 0
    while i < len(b):
        for n in (1, 2, 3, 4):
            try:
                c = b[i:i + n].decode("utf-8")
                break
            except UnicodeDecodeError:
                c = None
        if c is None or len(c) != 1 or ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f:
            out.append("?" * (n if c else 1))
            i += n if c else 1
        else:
            out.append(c)
            i += n
    return "".join(out)
assert m["architecture"] == sanitized(model[:63]), m["architecture"]
spec = open(os.path.join(odd, model), "rb").read()
assert m["spec"] == replace(spec) and "\ufffd" in m["spec"] and '"quoted"' in m["spec"], m["spec"]
labels = os.path.join(odd, b"labels.tif")
# the path as the fingerprint records it: the record's separators and controls as %XX, then
# what is not UTF-8 as '?'
escaped = b"".join(b"%%%02X" % c if c in b";=,%" or c < 0x20 or c == 0x7f else bytes([c]) for c in labels)
assert "labels=file:" + sanitized(escaped) in m["training_data"], m["training_data"][-300:]
assert all(c["std"] > 0 for c in m["input_channels"]), m["input_channels"]
print("tensors %r, offsets contiguous, padded to 8; __metadata__ strict JSON; names %r"
      % (sorted(h), got[:3]))
PY
[ $? -eq 0 ] && ok "safetensors header: $(cat "$T/export.txt")" ||
    notok "safetensors header in strict JSON" "$(tail -4 "$T/export.txt")"
finish
