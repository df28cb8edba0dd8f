#!/usr/bin/env bash
# t_ckpt_hostile.sh: checkpoints whose CRC is valid but whose content is not (tests/wcp.py
# rewrites real ones), and checkpoint directories holding things that are not checkpoints.
# Every reader (info, export, predict, resume) must refuse such a file as "not usable: <reason>"
# with status 1, never crash or exhaust memory; a resume keeps it aside (NAME.unusable, byte for
# byte), falls back to the previous checkpoint and ends bitwise equal to an uninterrupted run.
. "$(dirname "$0")/lib.sh"

WCP="$PY $ROOT/tests/wcp.py"
args=(--tiles "$SAMPLE" --model logistic --patch 32 --batch 8 --micro-batch 4 --steps 4
      --ckpt-every 2 --keep 10 --log-every 1 --no-predict --seed 3)
"$WILDCPU" "${args[@]}" --out "$T/ref" >"$T/ref.log" 2>&1 || { notok "reference run" "$(tail -3 "$T/ref.log")"; finish; }
ref=$(digest "$T/ref/checkpoints/ckpt-00000004.wcp")
good=$T/ref/checkpoints/ckpt-00000004.wcp
nfeat=$($PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import wcp
print(len(wcp.section(wcp.read(sys.argv[2]), "features")[1].decode().split(",")))' "$ROOT/tests" "$good")
[ -n "$ref" ] && [ "$nfeat" -gt 0 ] && ok "reference run ($ref, $nfeat features)" || notok "reference run"
# predict is run on a 64 x 64 corner of the sample (its bands, the model's inputs): what is tested
# is which checkpoint it takes or refuses, not the map, whose size only cost time
SMALL=$T/small.vrt
gdal_translate -q -of VRT -srcwin 0 0 64 64 "$SAMPLE" "$SMALL"

# hostile NAME PATTERN OPS...: the newest checkpoint rewritten with OPS is refused by every
# reader with a message matching PATTERN, and a resume falls back to step 2 and ends equal.
hostile() {
    local name=$1 pattern=$2
    shift 2
    local d=$T/$name
    cp -r "$T/ref" "$d"
    rm -f "$d/checkpoints/best.wcp" # the fallback among ckpt-* files is what is tested here
    # the crafted file is kept apart too: the resume must keep it aside byte for byte
    if ! $WCP edit "$good" "$T/$name.crafted" "$@" 2>"$T/$name.wcp"; then
        notok "$name: crafting the file" "$(tail -2 "$T/$name.wcp")"
        return
    fi
    cp "$T/$name.crafted" "$d/checkpoints/ckpt-00000004.wcp"
    local f=$d/checkpoints/ckpt-00000004.wcp bad=""
    timeout 60 "$WILDCPU" info "$f" >"$T/$name.info" 2>&1
    local s=$?
    { [ $s -eq 1 ] && grep -Eq "INVALID: .*$pattern" "$T/$name.info"; } || bad+=" info: status $s $(head -c 300 "$T/$name.info");"
    timeout 60 "$WILDCPU" export --checkpoint "$f" --out "$d/m.safetensors" >"$T/$name.exp" 2>&1
    s=$?
    { [ $s -eq 1 ] && grep -Eq "not usable: .*$pattern" "$T/$name.exp" && [ ! -e "$d/m.safetensors" ]; } \
        || bad+=" export: status $s $(head -c 300 "$T/$name.exp");"
    timeout 60 "$WILDCPU" predict --tiles "$SMALL" --checkpoint "$f" --out "$d/risk.tif" >"$T/$name.pred" 2>&1
    s=$?
    { [ $s -eq 1 ] && grep -Eq "not usable: .*$pattern" "$T/$name.pred" && [ ! -e "$d/risk.tif" ]; } \
        || bad+=" predict: status $s $(head -c 300 "$T/$name.pred");"
    # the run directory: predict on it falls back to the previous checkpoint
    timeout 60 "$WILDCPU" predict --tiles "$SMALL" --checkpoint "$d" --out "$d/risk.tif" >"$T/$name.pdir" 2>&1
    s=$?
    { [ $s -eq 0 ] && grep -q "ckpt-00000002.wcp" "$T/$name.pdir"; } || bad+=" predict DIR: status $s $(tail -c 300 "$T/$name.pdir");"
    timeout 120 "$WILDCPU" "${args[@]}" --out "$d" >"$T/$name.log" 2>&1
    s=$?
    { [ $s -eq 0 ] && grep -Eq "ckpt-00000004.wcp is not usable: .*$pattern.*trying the previous one" "$T/$name.log" &&
      grep -q "resuming from .*ckpt-00000002.wcp" "$T/$name.log" &&
      [ "$(digest "$d/checkpoints/ckpt-00000004.wcp")" = "$ref" ] &&
      cmp -s "$d/checkpoints/ckpt-00000004.wcp.unusable" "$T/$name.crafted"; } \
        || bad+=" resume: status $s $(grep -E 'usable|resuming|error' "$T/$name.log" | head -3);"
    if [ -z "$bad" ]; then
        ok "$name: refused by info, export, predict; resume keeps it as .unusable, falls back and ends equal ($(grep -Eo "not usable: .*" "$T/$name.exp" | cut -c1-110))"
    else
        notok "$name" "$bad"
    fi
}

hostile huge-step "implausible step" hstep=$((1 << 50))
hostile negative-step "implausible step" hstep=-5
hostile state-step "says step -3, the header 4" i64=state:0:-3
# a header whose step alone is wrong (CRC recomputed) is named as such: its progress record and
# pending loss, which the step bounds, are checked after the state (before, "the progress
# holds an impossible best model (... at 4)", though the progress was the intact part)
hostile header-step-behind "section .state. says step 4, the header 3" hstep=3
hostile empty-feature-name "name is 0 bytes" featname=1:
hostile long-feature-name "name is 200000 bytes" featlong=2:200000
hostile feature-count "features" "featname=0:a,b"
hostile nan-parameter "non-finite value at element 7" nan=params:7
hostile nan-moment "non-finite value at element 3" nan=optim_m:3
hostile negative-second-moment "negative value at element 5" "u32at=optim_v:20:-1082130432"
hostile nan-mean "mean nan" f64=norm:0:nan
hostile zero-std "std 0" f64=norm:$nfeat:0
hostile payload-2-40 "implausible payload size" hraw=$((1 << 40))
hostile payload-short "does not decompress to the" hraw=100
hostile section-length-2-40 "claims 1099511627776 bytes" slen=params:$((1 << 40))
hostile duplicate-section "appears twice" dup=params
hostile missing-norm "section 'norm'" drop=norm
hostile missing-params "section 'params' is missing" drop=params
hostile missing-state "section 'state'" drop=state
hostile missing-spec "section 'spec' is missing" drop=spec
hostile missing-features "section 'features' is missing" drop=features
hostile nul-in-text "holds a NUL byte" set=meta:610062
hostile huge-text "more than a text may hold" repeat=fingerprint:0x41:2000000
hostile params-size "the parameters need 4" set=params:00000000
hostile exponent "exponent 99999 is out of" u32at=state:64:99999
hostile ranks-zero "counters out of their bounds" i64=state:7:0
# the optimizer step is the step in every checkpoint: 0 restarted the learning-rate schedule and
# AdamW's bias correction of the resumed run without a word
hostile optim-step "optimizer step 0 at step 4" i64=state:3:0
# an exponent no run produces (reduce.c's range): -1100 unscaled the gradient into infinities,
# reported as a divergence that blamed the learning rate
hostile exponent-low "exponent -1100 is out of \\[-113, 194\\]" u32at=state:64:-1100
hostile exponent-high "exponent 195 is out of" u32at=state:64:195
# the progress line's pending loss: a NaN sum was logged as "loss":null, a negative count
# printed a wrong mean
meta_with() { $PY -c 'import re, sys; sys.path.insert(0, sys.argv[1]); import wcp
m = wcp.section(wcp.read(sys.argv[2]), "meta")[1].decode()
print(re.sub(sys.argv[3] + "=[^;]*", sys.argv[3] + "=" + sys.argv[4], m), end="")' "$ROOT/tests" "$good" "$1" "$2"; }
hostile loss-steps-negative "log_loss_steps=-3 at step 4" "text=meta:$(meta_with log_loss_steps -3)"
hostile loss-steps-beyond "log_loss_steps=5 at step 4" "text=meta:$(meta_with log_loss_steps 5)"
hostile loss-sum-nan "log_loss_sum=nan" "text=meta:$(meta_with log_loss_sum nan)"
hostile loss-sum-text "log_loss_sum=0x1p-2x" "text=meta:$(meta_with log_loss_sum 0x1p-2x)"
# the counts meta repeats for info's reader are those the sections hold: a forged nparams=999
# beside 13 parameters was printed by info, which called the file valid
hostile meta-nparams "section .meta. says nparams=999, section .params. holds 13" "text=meta:$(meta_with nparams 999)"
hostile meta-step "section .meta. says step=3, the header holds 4" "text=meta:$(meta_with step 3)"
hostile meta-ranks "section .meta. says ranks=2x, section .state. holds 1" "text=meta:$(meta_with ranks 2x)"
# an empty spec is the section's fault: the parser's message blamed the --model (logistic: a
# network needs ...), a file the user would look into in vain; so is a spec that does not parse
hostile empty-spec "section .spec. is empty" "text=spec:"
hostile bad-spec-layer "does not build" "text=spec:input x
foo y x"
grep -q "error: section 'spec' (logistic):2: unknown layer type 'foo'" "$T/bad-spec-layer.info" &&
    grep -q "error: section 'spec' (logistic):2: unknown layer type 'foo'" "$T/bad-spec-layer.log" &&
    ! grep -q "error: logistic" "$T/bad-spec-layer.info" "$T/bad-spec-layer.log" \
    && ok "a spec section that does not parse is named as the section, not as the --model" \
    || notok "the spec section's parse error names --model" "$(grep error "$T/bad-spec-layer.info" "$T/bad-spec-layer.log" | head -3)"
# a spec whose network would need terabytes of parameters: refused from the counts alone,
# before anything is allocated
hostile huge-spec "does not build" "text=spec:input x
conv a x out=1048576 k=999 pad=499
conv h a out=1 k=1"

# a spec with the file's 13 parameters whose activations would need terabytes (unused
# upsampling): refused before anything is allocated, by every reader
ups=$(for i in $(seq 1 16); do printf 'upsample u%d %s\n' $i "$([ $i = 1 ] && echo x || echo u$((i - 1)))"; done)
hostile huge-activations "does not build" "text=spec:input x
$ups
conv h x out=1 k=1"

# A step beyond the run's total steps (whose config records them, so they matched): a model to
# info and predict, but no state of this run, which resumed it as "100 of 4 steps done" and
# stopped, finished, with status 0. The resume passes over it, keeps it aside, and ends equal.
cp -r "$T/ref" "$T/beyond"
rm -f "$T/beyond/checkpoints/best.wcp"
$WCP edit "$good" "$T/beyond.crafted" hstep=100 i64=state:0:100 \
    i64=state:3:100 "text=meta:$(meta_with step 100)"
cp "$T/beyond.crafted" "$T/beyond/checkpoints/ckpt-00000004.wcp"
crafted=$(digest "$T/beyond.crafted")   # a model to info: a digest
timeout 120 "$WILDCPU" "${args[@]}" --out "$T/beyond" >"$T/beyond.log" 2>&1
s=$?
[ $s -eq 0 ] && [ -n "$crafted" ] &&
    grep -q "ckpt-00000004.wcp is not usable: it is at step 100, beyond the 4 steps of this run" "$T/beyond.log" &&
    grep -q "resuming from .*ckpt-00000002.wcp: 2 of 4" "$T/beyond.log" &&
    [ "$(digest "$T/beyond/checkpoints/ckpt-00000004.wcp")" = "$ref" ] &&
    cmp -s "$T/beyond/checkpoints/ckpt-00000004.wcp.unusable" "$T/beyond.crafted" \
    && ok "a checkpoint beyond the run's total steps: resume passes over it, keeps it, ends equal" \
    || notok "step beyond the total steps on resume" "status $s $(grep -E 'usable|resuming|error|done' "$T/beyond.log" | head -3)"

# A checkpoint's text is someone else's: a crafted arch and model with terminal escapes (a
# window title, a colour, a clear screen, a carriage return) and a C1 CSI are shown and written
# as '?', by info, predict's log and the map's metadata, while UTF-8 text (the e-acute) stays.
mkdir -p "$T/esc"
esc_arch=$'unet-\xc3\xa9\x1b]0;T\x07\x1b[31m\xc2\x9bx'
esc_model=$'m\x1b[2J\rX'
config_with() { $PY -c 'import re, sys; sys.path.insert(0, sys.argv[1]); import wcp
c = wcp.section(wcp.read(sys.argv[2]), "config")[1].decode()
print(re.sub("model=[^;]*", lambda _: "model=" + sys.argv[3], c), end="")' "$ROOT/tests" "$good" "$1"; }
meta_arch() { $PY -c 'import re, sys; sys.path.insert(0, sys.argv[1]); import wcp
m = wcp.section(wcp.read(sys.argv[2]), "meta")[1].decode()
print(re.sub("arch=[^;]*", lambda _: "arch=" + sys.argv[3], m), end="")' "$ROOT/tests" "$good" "$1"; }
$WCP edit "$good" "$T/esc/esc.wcp" "text=meta:$(meta_arch "$esc_arch")" \
    "text=config:$(config_with "$esc_model")"
"$WILDCPU" info "$T/esc/esc.wcp" >"$T/esc.info" 2>&1
si=$?
"$WILDCPU" predict --tiles "$SMALL" --checkpoint "$T/esc/esc.wcp" --out "$T/esc/risk.tif" >"$T/esc.pred" 2>&1
sp=$?
gdalinfo "$T/esc/risk.tif" >"$T/esc.gdalinfo" 2>&1
sg=$?
controls() { LC_ALL=C grep -c $'[\x1b\x07\r]' "$1"; }
[ $si -eq 0 ] && [ $sp -eq 0 ] && [ $sg -eq 0 ] &&
    [ "$(controls "$T/esc.info")" = 0 ] && [ "$(controls "$T/esc.pred")" = 0 ] &&
    [ "$(controls "$T/esc.gdalinfo")" = 0 ] &&
    LC_ALL=C grep -q $'arch=unet-\xc3\xa9?]0' "$T/esc.info" && grep -q 'model=m?\[2J?X' "$T/esc.info" &&
    LC_ALL=C grep -q $'unet-\xc3\xa9?]0' "$T/esc.pred" &&
    LC_ALL=C grep -q $'model_arch=unet-\xc3\xa9?]0' "$T/esc.gdalinfo" &&
    ! LC_ALL=C grep -q $'\xc2\x9b' "$T/esc.info" "$T/esc.pred" "$T/esc.gdalinfo" \
    && ok "a checkpoint's escapes reach neither the terminal nor the map: info, predict, gdalinfo show '?', UTF-8 kept" \
    || notok "escapes in a checkpoint's text" "info $si predict $sp gdalinfo $sg: $(LC_ALL=C grep -a -E 'arch|model' "$T/esc.info" "$T/esc.pred" "$T/esc.gdalinfo" | cat -v | head -6)"

# A resume needs AdamW's second moment, a model does not: only the resume refuses it.
cp -r "$T/ref" "$T/nov"
$WCP edit "$good" "$T/nov/checkpoints/ckpt-00000004.wcp" drop=optim_v
# info names the checkpoint the rerun takes (it named the newest, which the rerun passed over)
"$WILDCPU" info "$T/nov" >"$T/nov.info" 2>&1
s=$?
[ $s -eq 0 ] &&
    grep -Eq "ckpt-00000004.wcp .* valid, but a rerun passes it over: it holds no second moment" "$T/nov.info" &&
    grep -q "predict and evaluate given this directory use .*best.wcp" "$T/nov.info" &&
    grep -q "^a rerun resumes from .*/ckpt-00000002.wcp$" "$T/nov.info" \
    && ok "info: a checkpoint without AdamW's second moment is valid, a rerun resumes from the previous one" \
    || notok "info on a checkpoint without optim_v" "status $s $(cat "$T/nov.info")"
# ... and when every ckpt-*.wcp is passed over, the rerun's last resort is best.wcp: info said
# "(no valid ckpt-*.wcp)" under the ckpt-*.wcp it had just listed as valid
cp -r "$T/ref" "$T/nov2"
for s in 2 4; do
    $WCP edit "$T/ref/checkpoints/ckpt-0000000$s.wcp" "$T/nov2/checkpoints/ckpt-0000000$s.wcp" drop=optim_v
done
"$WILDCPU" info "$T/nov2" >"$T/nov2.info" 2>&1
s=$?
timeout 120 "$WILDCPU" "${args[@]}" --out "$T/nov2" >"$T/nov2.log" 2>&1
s2=$?
[ $s -eq 0 ] && [ $s2 -eq 0 ] &&
    [ "$(grep -c "valid, but a rerun passes it over: it holds no second moment" "$T/nov2.info")" = 2 ] &&
    grep -q "^a rerun resumes from .*/best.wcp (no usable ckpt-\*.wcp)$" "$T/nov2.info" &&
    grep -q "holds no usable ckpt-\*.wcp: resuming from .*best.wcp" "$T/nov2.log" \
    && ok "info: every ckpt-*.wcp valid but passed over: a rerun resumes from best.wcp, 'no usable ckpt-*.wcp', as the rerun says" \
    || notok "info when every ckpt-*.wcp is passed over" "status $s $s2: $(tail -2 "$T/nov2.info"); $(grep -E 'resuming' "$T/nov2.log")"
timeout 120 "$WILDCPU" "${args[@]}" --out "$T/nov" >"$T/nov.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "not usable: it holds no second moment" "$T/nov.log" &&
    [ "$(digest "$T/nov/checkpoints/ckpt-00000004.wcp")" = "$ref" ] \
    && ok "a checkpoint without AdamW's second moment: resume falls back, ends equal" \
    || notok "missing optim_v on resume" "status $s $(grep -E 'usable|error' "$T/nov.log" | head -2)"

# A valid checkpoint written with another normalization (an earlier version computed a constant
# band's scale otherwise): the resume says so and goes on with the checkpoint's, which the
# weights were trained with, so the resumed run's checkpoints carry it, not the recomputed one.
cp -r "$T/ref" "$T/norm"
rm -f "$T/norm/checkpoints/ckpt-00000004.wcp" "$T/norm/checkpoints/best.wcp" "$T/norm/report.json"
$WCP edit "$T/ref/checkpoints/ckpt-00000002.wcp" "$T/norm/checkpoints/ckpt-00000002.wcp" \
    f64=norm:$((nfeat + 1)):1.25
timeout 120 "$WILDCPU" "${args[@]}" --out "$T/norm" >"$T/norm.log" 2>&1
s=$?
norm_of() { $PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import wcp
print(wcp.section(wcp.read(sys.argv[2]), "norm")[1].hex())' "$ROOT/tests" "$1"; }
[ $s -eq 0 ] && grep -q "resuming from .*ckpt-00000002.wcp" "$T/norm.log" &&
    grep -Eq "ckpt-00000002.wcp was written with another normalization of feature 2 .*std 1.25, .*keeps the checkpoint's" "$T/norm.log" &&
    [ "$(norm_of "$T/norm/checkpoints/ckpt-00000004.wcp")" = "$(norm_of "$T/norm/checkpoints/ckpt-00000002.wcp")" ] &&
    [ "$(norm_of "$T/norm/checkpoints/ckpt-00000004.wcp")" != "$(norm_of "$good")" ] &&
    ! grep -q "another normalization" "$T/ref.log" \
    && ok "a checkpoint with another normalization: the resume warns and keeps the checkpoint's" \
    || notok "normalization on resume" "status $s $(grep -E 'normalization|resuming|error' "$T/norm.log" | head -3)"

# ---- what lies in a checkpoint directory

# a FIFO under a checkpoint's name: never opened for reading (that would block), reported
cp -r "$T/ref" "$T/fifo"
mkfifo "$T/fifo/checkpoints/ckpt-00000099.wcp"
timeout 60 "$WILDCPU" "${args[@]}" --out "$T/fifo" >"$T/fifo.log" 2>&1
s=$?
timeout 20 "$WILDCPU" info "$T/fifo" >"$T/fifo.info" 2>&1
si=$?
[ $s -eq 0 ] && grep -q "ckpt-00000099.wcp is not usable: not a regular file" "$T/fifo.log" &&
    grep -q "resuming from .*ckpt-00000004.wcp" "$T/fifo.log" && [ $si -eq 0 ] &&
    grep -q "ckpt-00000099.wcp .*INVALID: not a regular file" "$T/fifo.info" \
    && ok "a FIFO named ckpt-*.wcp: resume and info do not wait on it, and say so" \
    || notok "FIFO in the checkpoint directory" "resume $s info $si: $(tail -2 "$T/fifo.log") $(cat "$T/fifo.info")"

# a stale copy under a name too long to be a step: ignored with a warning, never the newest
cp -r "$T/ref" "$T/stale"
cp "$T/ref/checkpoints/ckpt-00000002.wcp" "$T/stale/checkpoints/ckpt-99999999999999999999.wcp"
timeout 60 "$WILDCPU" "${args[@]}" --out "$T/stale" >"$T/stale.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "ignoring .*ckpt-99999999999999999999.wcp: not a checkpoint name" "$T/stale.log" &&
    grep -q "resuming from .*ckpt-00000004.wcp" "$T/stale.log" \
    && ok "ckpt-<20 digits>.wcp is ignored with a warning; the newest real checkpoint is used" \
    || notok "stale copy with an unparseable name" "status $s: $(grep -E 'ignoring|resuming' "$T/stale.log")"

# a copy of step 2 under a larger step's name: ordered by the step its header holds, and pruned
# as the old checkpoint it is
cp -r "$T/ref" "$T/misnamed"
rm "$T/misnamed/checkpoints/ckpt-00000004.wcp"
cp "$T/ref/checkpoints/ckpt-00000002.wcp" "$T/misnamed/checkpoints/ckpt-00000999.wcp"
timeout 60 "$WILDCPU" "${args[@]}" --keep 1 --out "$T/misnamed" >"$T/misnamed.log" 2>&1
s=$?
left=$(ls "$T/misnamed/checkpoints" | grep -v "^best.wcp$")   # best.wcp is kept apart (t_select)
[ $s -eq 0 ] && grep -q "resuming from .*ckpt-00000002.wcp: 2 of 4" "$T/misnamed.log" &&
    [ "$left" = "ckpt-00000004.wcp" ] && [ "$(digest "$T/misnamed/checkpoints/ckpt-00000004.wcp")" = "$ref" ] \
    && ok "a checkpoint under another step's name: used and pruned by its header's step" \
    || notok "misnamed checkpoint" "status $s, left: $left; $(grep resuming "$T/misnamed.log")"

# --keep counts whole checkpoints: an older one whose header is intact over a wrong CRC (step 2's
# with its step rewritten to 1) is neither counted among the kept nor deleted, but kept aside as
# .unusable, said once (it was counted, then deleted without a word)
cp -r "$T/ref" "$T/damaged"
rm "$T/damaged/checkpoints/ckpt-00000004.wcp"
$PY - "$T/ref/checkpoints/ckpt-00000002.wcp" "$T/damaged/checkpoints/ckpt-00000001.wcp" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<Q", b, 16, 1)  # the header's step: the CRC no longer matches
open(sys.argv[2], "wb").write(b)
PY
broken=$(digest "$T/damaged/checkpoints/ckpt-00000001.wcp")
timeout 60 "$WILDCPU" "${args[@]}" --keep 1 --ckpt-every 1 --out "$T/damaged" >"$T/damaged.log" 2>&1
s=$?
left=$(ls "$T/damaged/checkpoints" | grep -v "^best.wcp$" | tr '\n' ' ')
[ $s -eq 0 ] && [ "$left" = "ckpt-00000001.wcp.unusable ckpt-00000004.wcp " ] &&
    [ "$(digest "$T/damaged/checkpoints/ckpt-00000001.wcp.unusable")" = "$broken" ] &&
    [ "$(grep -c 'ckpt-00000001.wcp is damaged (its CRC-32 does not match): not counted among the 1 checkpoints --keep keeps, and kept as .*ckpt-00000001.wcp.unusable' "$T/damaged.log")" -eq 1 ] &&
    [ "$(digest "$T/damaged/checkpoints/ckpt-00000004.wcp")" = "$ref" ] \
    && ok "--keep: a damaged older checkpoint is not counted, not deleted, kept aside as .unusable" \
    || notok "--keep with a damaged older checkpoint" "status $s, left: $left; $(grep -E 'damaged|error' "$T/damaged.log" | head -3)"

# a 512 MiB file that starts like a checkpoint (its header's sizes agree with the file) but is
# not one: its CRC is computed while it is read, before it is held in memory, so info says so
# under an address-space limit smaller than the file (it was read whole: 2.1 GB resident for a
# 2 GiB file, and out of memory under a job's limit)
$PY - "$good" "$T/big.wcp" <<'PY'
import struct, sys
head = bytearray(open(sys.argv[1], "rb").read(64))
size = 512 << 20
struct.pack_into("<Q", head, 32, size - 64)  # the compressed payload's size
with open(sys.argv[2], "wb") as f:
    f.write(head)
    f.truncate(size)
PY
(ulimit -v 400000 && timeout 120 "$WILDCPU" info "$T/big.wcp") >"$T/big.info" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "big.wcp: INVALID: CRC-32 mismatch" "$T/big.info" \
    && ok "a large file that only starts like a checkpoint: CRC-32 mismatch under a limit smaller than the file" \
    || notok "a large file that starts like a checkpoint" "status $s: $(head -c 300 "$T/big.info")"
rm -f "$T/big.wcp"

# a checkpoint whose payload really expands to 1 GiB (CRC valid: a stream of zeros), under an
# address-space limit too small to hold it: "not usable", naming the file, and a resume passes
# over it to the previous checkpoint (before, "out of memory decompressing a checkpoint of
# 1073741824 bytes", no file named, and the resume ended there with status 1)
cp -r "$T/ref" "$T/inflated"
rm -f "$T/inflated/checkpoints/best.wcp"
$PY - "$good" "$T/inflated/checkpoints/ckpt-00000004.wcp" <<'PY'
import struct, sys, zlib
head = bytearray(open(sys.argv[1], "rb").read(64))
size, co = 1 << 30, zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_RLE)  # RLE: zeros, fast
z = b"".join(co.compress(bytes(1 << 24)) for _ in range(size >> 24)) + co.flush()
struct.pack_into("<QQ", head, 24, size, len(z))
crc = zlib.crc32(z, zlib.crc32(bytes(head[44:64]), zlib.crc32(bytes(head[:40]))))
struct.pack_into("<I", head, 40, crc)
open(sys.argv[2], "wb").write(bytes(head) + z)
PY
f=$T/inflated/checkpoints/ckpt-00000004.wcp
(ulimit -v 700000 && timeout 120 "$WILDCPU" info "$f") >"$T/inflated.info" 2>&1
si=$?
(ulimit -v 1200000 && timeout 300 "$WILDCPU" "${args[@]}" --out "$T/inflated") >"$T/inflated.log" 2>&1
s=$?
[ $si -eq 1 ] && grep -q "ckpt-00000004.wcp: INVALID: .*does not fit in this process's memory" "$T/inflated.info" &&
    [ $s -eq 0 ] && grep -q "ckpt-00000004.wcp is not usable: .*does not fit" "$T/inflated.log" &&
    grep -q "resuming from .*ckpt-00000002.wcp" "$T/inflated.log" \
    && ok "a payload that expands beyond the memory limit: not usable, named, and a resume falls back" \
    || notok "a payload beyond the memory limit" "info $si: $(head -c 200 "$T/inflated.info"); resume $s: $(grep -m2 -E 'error|usable|resuming' "$T/inflated.log")"
rm -rf "$T/inflated"

finish
