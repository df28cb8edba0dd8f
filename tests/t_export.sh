#!/usr/bin/env bash
# t_export.sh: `wildcpu info` and `wildcpu export`. The exported safetensors file loads into the
# PyTorch reference network (../shared/bench/torch_ref.py, strict names and shapes) and gives
# the same logits as wildcpu's own forward pass on the same input (max abs difference <= 1e-3,
# the reference's own threshold); its __metadata__ holds the input channels and normalization.
. "$(dirname "$0")/lib.sh"
tools=${WILDCPU_BUILD:-$ROOT/build}/tools
ref=$ROOT/../shared/bench/torch_ref.py

"$WILDCPU" --tiles "$SAMPLE" --out "$T/run" --steps 3 --batch 4 --micro-batch 2 --no-predict >"$T/train.log" 2>&1 \
    && ok "trained a model to export" || { notok "trained a model to export" "$(tail -3 "$T/train.log")"; finish; }
ckpt=$T/run/checkpoints/ckpt-00000003.wcp

"$WILDCPU" info "$ckpt" >"$T/info.txt"
grep -q "valid wildcpu checkpoint" "$T/info.txt" && grep -q "^  step        3" "$T/info.txt" &&
    grep -q "ranks=1" "$T/info.txt" && grep -q "size=512x512" "$T/info.txt" && grep -q "val_auc_pr" "$T/info.txt" &&
    grep -q "^  digest" "$T/info.txt" \
    && ok "info FILE: header, step, ranks, data fingerprint, metrics, digest" || notok "info FILE" "$(head -20 "$T/info.txt")"
"$WILDCPU" info "$T/run" >"$T/info_dir.txt"
grep -q "ckpt-00000003.wcp .* valid" "$T/info_dir.txt" && grep -q "a rerun resumes from" "$T/info_dir.txt" \
    && ok "info DIR: checkpoints listed with their validity" || notok "info DIR" "$(cat "$T/info_dir.txt")"

"$WILDCPU" export --checkpoint "$T/run" --out "$T/model.safetensors" >"$T/export.log" 2>&1 \
    && ok "export a run directory's newest checkpoint" || notok "export" "$(cat "$T/export.log")"
$PY - "$T/model.safetensors" >"$T/meta.txt" 2>&1 <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
meta = json.loads(h["__metadata__"]["wildcpu"])
names = [k for k in h if k != "__metadata__"]
assert meta["architecture"] == "unet-lite", meta["architecture"]
assert [c["name"] for c in meta["input_channels"]][:2] == ["elevation", "slope"], meta["input_channels"]
assert len(meta["input_channels"]) == 12 and all(c["std"] > 0 for c in meta["input_channels"])
assert "nodata" in meta["nodata_policy"] and meta["patch"] == 64
assert meta["input_values"].startswith("the band's value as GDAL unpacks it"), meta["input_values"]
assert h["e1.0.weight"]["shape"] == [32, 12, 3, 3] and h["h.weight"]["shape"] == [1, 32, 1, 1]
assert (8 + n) % 8 == 0 and len(raw) == 8 + n + max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
print(len(names), "tensors;", ", ".join(c["name"] for c in meta["input_channels"]))
PY
[ $? -eq 0 ] && ok "safetensors header: names, shapes, offsets, __metadata__ with channels and normalization ($(cat "$T/meta.txt"))" \
    || notok "safetensors header and metadata" "$(cat "$T/meta.txt")"

if $PY -c "import torch" 2>/dev/null && [ -f "$ref" ]; then
    $PY -c "
import numpy as np
np.random.seed(3)
np.random.randn(2, 12, 64, 64).astype(np.float32).tofile('$T/x.f32')"
    "$tools/forward" "$ckpt" "$T/x.f32" "$T/y.f32" 2 >/dev/null
    out=$($PY "$ref" compare --weights "$T/model.safetensors" --input "$T/x.f32" --output "$T/y.f32" --batch 2 2>&1)
    [ $? -eq 0 ] && ok "PyTorch reference loads the weights and agrees: $out" || notok "PyTorch reference agrees" "$out"
else
    echo "# skipped: the PyTorch comparison needs python3-torch (make deps) and $ref"
fi

"$WILDCPU" export --checkpoint "$T/nothing" --out "$T/x.safetensors" >"$T/e.log" 2>&1
[ $? -eq 1 ] && grep -q "checkpoint $T/nothing: No such file" "$T/e.log" && [ ! -e "$T/x.safetensors" ] \
    && ok "export of a missing checkpoint: clear error, no output" || notok "export of a missing checkpoint" "$(cat "$T/e.log")"

# an output path that holds another checkpoint (of this run or another): refused, status 2, the
# checkpoint left as it was (export, predict and evaluate replaced it, and a rerun lost a step)
cp "$ckpt" "$T/other.wcp"
for cmd in "export --checkpoint $T/run --out $T/other.wcp" \
    "predict --tiles $SAMPLE --checkpoint $T/run --out $T/other.wcp" \
    "evaluate --tiles $SAMPLE --checkpoint $T/run --out $T/other.wcp"; do
    # shellcheck disable=SC2086 # the command's words
    "$WILDCPU" $cmd >"$T/o.log" 2>&1
    st=$?
    [ $st -eq 2 ] && grep -q "refusing to write the .* to $T/other.wcp: it is a wildcpu checkpoint" "$T/o.log" &&
        cmp -s "$ckpt" "$T/other.wcp" \
        && ok "${cmd%% *} onto another checkpoint: refused (status 2), the checkpoint kept" \
        || notok "${cmd%% *} onto another checkpoint" "status $st: $(grep -m1 error "$T/o.log")"
done
# an output replaces only a file of its own kind: a map (TIFF), a mosaic (XML), a report (JSON)
# at the path of weights, metrics or a picture is the user's, refused (status 2), left as it was;
# a file of the output's own kind is replaced as before
gdal_translate -q "$SAMPLE" "$T/map.tif" && cp "$SAMPLE" "$T/mosaic.vrt" && echo '{"a": 1}' >"$T/report.json"
for c in "export --checkpoint $T/run --out $T/map.tif|TIFF raster" \
    "export --checkpoint $T/run --out $T/mosaic.vrt|XML" \
    "export --checkpoint $T/run --out $T/report.json|JSON" \
    "evaluate --tiles $SAMPLE --checkpoint $T/run --out $T/map.tif|TIFF raster" \
    "predict --tiles $SAMPLE --checkpoint $T/run --out $T/new.tif --png $T/map.tif|TIFF raster" \
    "predict --tiles $SAMPLE --checkpoint $T/run --out $T/report.json|JSON"; do
    cmd=${c%|*} holds=${c#*|} file=${cmd##* }
    before=$(sha256sum <"$file")
    # shellcheck disable=SC2086 # the command's words
    "$WILDCPU" $cmd >"$T/k.log" 2>&1
    st=$?
    [ $st -eq 2 ] && grep -q "refusing to replace $file with the .*: it holds .*$holds" "$T/k.log" &&
        [ "$(sha256sum <"$file")" = "$before" ] \
        && ok "${cmd%% *} onto a file of another kind ($holds): refused (status 2), kept" \
        || notok "${cmd%% *} onto a file of another kind ($holds)" "status $st: $(grep -m1 error "$T/k.log")"
done
"$WILDCPU" export --checkpoint "$T/run" --out "$T/again.safetensors" >/dev/null 2>&1 &&
    "$WILDCPU" export --checkpoint "$T/run" --out "$T/again.safetensors" >"$T/k.log" 2>&1 \
    && ok "export onto earlier weights replaces them" || notok "export onto earlier weights" "$(cat "$T/k.log")"
# the working file an export killed by a signal left (it has no handler) goes at the next write of
# that output once no process may still write it (its pid gone, untouched for 10 minutes); one
# that may still be written stays (nothing swept such files outside a run directory)
stale=$T/.again.safetensors.tmp-2147483000 young=$T/.again.safetensors.tmp-2147483001
echo partial >"$stale" && touch -d '-11 minutes' "$stale" && echo partial >"$young"
"$WILDCPU" export --checkpoint "$T/run" --out "$T/again.safetensors" >"$T/s.log" 2>&1
st=$?
[ $st -eq 0 ] && [ ! -e "$stale" ] && [ -e "$young" ] && grep -q "removed $stale, the working file of a run that was killed" "$T/s.log" \
    && ok "a killed export's working file goes at the next export, a recent one stays" \
    || notok "a killed export's working file" "status $st: $(cat "$T/s.log"); $(ls -A "$T" | grep tmp-)"
finish
