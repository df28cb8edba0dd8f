#!/usr/bin/env bash
# t_resume_records.sh: what a resumed run records, and which spellings of the same settings it
# accepts (found by a probe of stops and resumes; the parameters were always exact, these were
# not):
#   - a stop during the final validation, resumed: the rewritten checkpoint and report.json keep
#     the last step's loss (they recorded 0), the summary gives no rate for 0 steps (nan), and
#     the time on rank 0 adds up to at most 100% when a pending validation ran (156%);
#   - a --model spec file given by another path to the same file, and --vector-bands listing
#     the same pairs in another order, resume (refused before, though nothing changes), and the
#     result is bitwise the uninterrupted run's; a changed spec is still refused;
#   - a best.wcp newer and better than the resumed checkpoint's best is kept; a finished run
#     whose report is missing, or an earlier session's (a kill between the final checkpoint and
#     the report), writes it when rerun; too few inodes are refused at start.
. "$(dirname "$0")/lib.sh"

"$WILDCPU" synth --out "$T/s" --size 512 >"$T/synth.log" 2>&1 || { notok "synth" "$(tail -2 "$T/synth.log")"; finish; }
S=$T/s/tiles.vrt

# stop_at LOG PATTERN PID: SIGTERM once LOG shows PATTERN; returns the run's status
stop_at() {
    for _ in $(seq 1 1200); do grep -q "$2" "$1" && break; sleep 0.05; done
    kill -TERM "$3"
    wait "$3"
}

# 1. a stop during the final validation (after step 2 of 2), then the rerun
A=(--tiles "$S" --steps 2 --batch 4 --patch 32 --val-block 64 --val-fraction 0.5 --log-every 1 --no-predict)
"$WILDCPU" "${A[@]}" --out "$T/fv" >"$T/fv1.log" 2>&1 &
stop_at "$T/fv1.log" "step 2/2" $!
st=$?
before=$("$WILDCPU" info "$T/fv/checkpoints/ckpt-00000002.wcp" | grep -o ' loss=[^ ;]*')
"$WILDCPU" "${A[@]}" --out "$T/fv" >"$T/fv2.log" 2>&1
st2=$?
after=$("$WILDCPU" info "$T/fv/checkpoints/ckpt-00000002.wcp" | grep -o ' loss=[^ ;]*')
final=$(json "$T/fv/report.json" final_train_loss)
# the same run uninterrupted: its report's loss, to the last bit
"$WILDCPU" "${A[@]}" --out "$T/fv0" >"$T/fv0.log" 2>&1
whole=$(json "$T/fv0/report.json" final_train_loss)
if [ $st -eq 75 ] && [ $st2 -eq 0 ] && [ -n "$before" ] && [ "$before" = "$after" ] &&
    $PY -c 'import sys; a, b, c = map(float, sys.argv[1:]); sys.exit(not (a == b == c))' \
        "$final" "${before# loss=}" "$whole" &&
    grep -q "run finished: 0 steps in .* (over 1 rank)" "$T/fv2.log" && ! grep -q "nan" "$T/fv2.log"; then
    ok "stopped in the final validation and resumed: the checkpoint and report keep the loss ($after), bitwise the uninterrupted run's, no nan rate"
else
    notok "a resume that takes no step" "statuses $st $st2, loss '$before' then '$after', report $final, uninterrupted $whole: $(grep 'run finished' "$T/fv2.log")"
fi

# 2. the time breakdown of a resume that runs a pending validation, then steps
B=(--tiles "$S" --steps 4 --batch 52 --micro-batch 4 --patch 32 --val-block 64 --val-fraction 0.5 --log-every 1 --no-predict)
"$WILDCPU" "${B[@]}" --out "$T/b4" >"$T/b41.log" 2>&1 &
stop_at "$T/b41.log" "step 2/4" $!
mkdir "$T/b4-stopped" # (the stopped session's report, for 5b)
cp "$T/b4/report.json" "$T/b4/report.md" "$T/b4-stopped/"
"$WILDCPU" "${B[@]}" --out "$T/b4" >"$T/b42.log" 2>&1
st=$?
sum=$(grep -o 'time on rank 0: .*' "$T/b42.log" | grep -o '[0-9.]*%' | tr -d % | awk '{s += $1} END {print s}')
# (only a resume that ran the pending validation proves anything: a stop that came after it
# leaves none, and the sum is then right on the parent too)
if [ $st -eq 0 ] && grep -q "validation after step 2 " "$T/b42.log" && [ -n "$sum" ] &&
    awk -v s="$sum" 'BEGIN {exit !(s <= 100.5)}'; then
    ok "a resume with a pending validation: the time on rank 0 adds up to $sum%"
else
    notok "time breakdown of a resume" "status $st, sum '$sum': $(grep 'time on' "$T/b42.log")"
fi

# 3. the same spec by another path, the same pairs in another order: resumed, exact
printf '# small\ninput x\nconv c1 x out=8 k=3 pad=1\nrelu r1 c1\nconv c2 r1 out=1 k=1\n' >"$T/small.spec"
C=(--tiles "$S" --steps 6 --batch 8 --patch 32 --val-block 64 --no-predict --ckpt-every 2 --augment)
"$WILDCPU" "${C[@]}" --model "$T/small.spec" --out "$T/whole" >"$T/whole.log" 2>&1
"$WILDCPU" "${C[@]}" --model "$T/small.spec" --out "$T/part" >"$T/part1.log" 2>&1
rm -f "$T/part/checkpoints/ckpt-00000006.wcp"
(cd "$T" && "$WILDCPU" "${C[@]}" --model ./small.spec --out part \
    --vector-bands wind_u:wind_v,aspect_sin:aspect_cos >"$T/part2.log" 2>&1)
st=$?
dw=$(digest "$T/whole/checkpoints/ckpt-00000006.wcp")
dp=$(digest "$T/part/checkpoints/ckpt-00000006.wcp")
if [ $st -eq 0 ] && grep -q "resuming from .*ckpt-00000004.wcp" "$T/part2.log" && [ -n "$dw" ] && [ "$dw" = "$dp" ]; then
    ok "resumed with --model ./small.spec for the absolute path and the vector pairs reordered: bitwise the uninterrupted run ($dp)"
else
    notok "resume with the same settings spelled otherwise" "status $st, digests $dw $dp: $(grep -E 'error|resuming' "$T/part2.log" | head -2)"
fi
# ... a spec that changed is still refused
sed 's/out=8/out=9/' "$T/small.spec" >"$T/small9.spec"
rm -f "$T/part/checkpoints/ckpt-00000006.wcp"
"$WILDCPU" "${C[@]}" --model "$T/small9.spec" --out "$T/part" >"$T/part3.log" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "spec_hash: now" "$T/part3.log" && grep -q "model: now" "$T/part3.log" \
    && ok "a changed spec is refused, naming both files and their hashes" \
    || notok "a changed spec on resume" "status $st: $(grep error "$T/part3.log" | head -2 | cut -c1-300)"
# ... a spec whose path holds ';' and '=' is recorded whole: cut at ';', "a;b=1/small.spec" gave
#     the checkpoint a setting b=1/small.spec (and the name "a" in info and export), so the same
#     file typed from inside its directory was refused ("b: now (none)")
mkdir -p "$T/a;b=1" && cp "$T/small.spec" "$T/a;b=1/small.spec"
E=(--tiles "$S" --steps 2 --batch 8 --patch 32 --val-block 64 --no-predict --ckpt-every 1)
"$WILDCPU" "${E[@]}" --model "$T/a;b=1/small.spec" --out "$T/semi" >"$T/semi1.log" 2>&1
rm -f "$T/semi/checkpoints/ckpt-00000002.wcp"
(cd "$T/a;b=1" && "$WILDCPU" "${E[@]}" --model small.spec --out "$T/semi" >"$T/semi2.log" 2>&1)
st=$?
"$WILDCPU" export --checkpoint "$T/semi/checkpoints/ckpt-00000001.wcp" --out "$T/semi.safetensors" >/dev/null 2>&1
arch=$($PY -c 'import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
print(json.loads(json.loads(raw[8:8 + n])["__metadata__"]["wildcpu"])["architecture"])' "$T/semi.safetensors" 2>&1)
[ $st -eq 0 ] && grep -q "resuming from .*ckpt-00000001.wcp" "$T/semi2.log" && [ "$arch" = "$T/a;b=1/small.spec" ] \
    && ok "a spec path with ';' and '=' is recorded whole: resumed by another path, exported by its name" \
    || notok "a spec path with ';' and '='" "status $st, architecture '$arch': $(grep error "$T/semi2.log" | head -1)"
# ... and a checkpoint written before the path was escaped (its records hold the path raw, as
#     wcp.py rewrites them here) still resumes by the command that wrote it: read by the
#     escaped record's rules it had a setting b=1/small.spec of its own and was refused
cp -r "$T/semi" "$T/semiold" && rm -f "$T/semiold/checkpoints/ckpt-00000002.wcp" "$T/semiold/checkpoints/best.wcp"
ck=$T/semiold/checkpoints/ckpt-00000001.wcp
$PY -c 'import sys, urllib.parse
sys.path.insert(0, sys.argv[1])
import wcp
ck = wcp.read(sys.argv[2])
for s in ck["sections"]:
    if s[0] in ("config", "meta"):
        raw = urllib.parse.unquote(sys.argv[3])
        s[1] = s[1].replace(sys.argv[3].encode(), raw.encode())
wcp.write(ck, sys.argv[2])' "$ROOT/tests" "$ck" "$(echo "$T/a;b=1/small.spec" | sed 's/;/%3B/; s/=/%3D/')"
grep -aq "model=$T/a;b=1/small.spec;spec_hash" <($PY -c 'import sys, zlib; print(zlib.decompress(open(sys.argv[1], "rb").read()[64:]))' "$ck") \
    || notok "the old record of a spec path with ';'" "wcp.py could not write it"
"$WILDCPU" "${E[@]}" --model "$T/a;b=1/small.spec" --out "$T/semiold" >"$T/semiold.log" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "resuming from .*ckpt-00000001.wcp" "$T/semiold.log" \
    && ok "a checkpoint recording a spec path with ';' unescaped (before 2026-12-06) resumes by the same command" \
    || notok "an unescaped spec path with ';' of an older checkpoint" "status $st: $(grep error "$T/semiold.log" | head -1)"
# 4. A best.wcp better than the best the resumed checkpoint knows (written after it: interval
#    checkpoints failed on a full disk meanwhile) is kept: the resumed run's first, worse
#    validation replaced it, and a divergence right after lost the better model
"$WILDCPU" synth --out "$T/s256" --size 256 >/dev/null 2>&1
D=(--tiles "$T/s256/tiles.vrt" --steps 6 --batch 4 --micro-batch 2 --val-block 64 --ckpt-every 1 --keep 10 --no-predict)
"$WILDCPU" "${D[@]}" --out "$T/base" >"$T/base.log" 2>&1
mkdir -p "$T/newer/checkpoints"
cp "$T/base/checkpoints/ckpt-00000001.wcp" "$T/base/checkpoints/best.wcp" "$T/newer/checkpoints/"
want=$("$WILDCPU" info "$T/base/checkpoints/best.wcp" | grep -m1 val_auc_pr)
WILDCPU_TEST_POISON=3:0:grad "$WILDCPU" "${D[@]}" --out "$T/newer" >"$T/newer.log" 2>&1
st=$?
got=$("$WILDCPU" info "$T/newer/checkpoints/best.wcp" | grep -m1 val_auc_pr)
[ $st -eq 1 ] && [ -n "$want" ] && [ "$want" = "$got" ] && grep -q "validation after step 2" "$T/newer.log" &&
    grep -q "best.wcp (step 4, AUC-PR .*) is a better validation than .*ckpt-00000001.wcp knows of" "$T/newer.log" \
    && ok "a best.wcp newer and better than the resumed checkpoint's best is kept ($got)" \
    || notok "a newer, better best.wcp on resume" "status $st, want '$want', got '$got'"
# ... and the checkpoints the resumed run writes before that best's step record the best of
#     their own step: they recorded the later one, a best after their step, which every reader
#     refuses as impossible (info said INVALID, a stop there resumed from the step before)
mkdir -p "$T/newer2/checkpoints"
cp "$T/base/checkpoints/ckpt-00000001.wcp" "$T/base/checkpoints/best.wcp" "$T/newer2/checkpoints/"
"$WILDCPU" "${D[@]}" --out "$T/newer2" >"$T/newer2.log" 2>&1
st=$?
bad=""
for s in 2 3 4 5 6; do
    "$WILDCPU" info "$T/newer2/checkpoints/ckpt-0000000$s.wcp" >"$T/i.txt" 2>&1 || bad="$bad $s: $(head -1 "$T/i.txt")"
done
d0=$(digest "$T/base/checkpoints/ckpt-00000006.wcp")
d1=$(digest "$T/newer2/checkpoints/ckpt-00000006.wcp")
[ $st -eq 0 ] && [ -z "$bad" ] && [ -n "$d0" ] && [ "$d0" = "$d1" ] \
    && ok "the checkpoints written before a newer best.wcp's step are valid; the run is bitwise the uninterrupted one" \
    || notok "checkpoints before a newer best.wcp's step" "status $st, digests $d0 $d1;$bad"

# 5. A finished run whose report is missing (its write failed: a full disk) writes it when rerun
#    (the rerun said it kept the report, and none was ever written)
rm -f "$T/base/report.json" "$T/base/report.md"
"$WILDCPU" "${D[@]}" --out "$T/base" >"$T/again.log" 2>&1
st=$?
[ $st -eq 0 ] && [ -s "$T/base/report.json" ] && [ -s "$T/base/report.md" ] &&
    grep -q "training already finished (6 steps): keeping its checkpoint; writing its missing report" "$T/again.log" \
    && ok "a finished run rerun without its report writes it" \
    || notok "a missing report on rerun" "status $st: $(ls "$T/base"); $(grep -E 'finished|error' "$T/again.log" | head -2)"

# 5b. A finished run whose report is an earlier session's: the session that trained to the end
#     was killed (SIGKILL once a preemption's grace period is over) after its final checkpoint,
#     before its report, which leaves the stopped session's report ("stopped", 2 of 4 steps);
#     the rerun kept it as the finished run's report and relabelled it "finished" when it drew
#     the map, its steps and figures those of step 2. The files are put as that kill leaves
#     them (measured under gdb, killed at wc_report_finish): the stopped session's reports.
cp "$T/b4-stopped/report.json" "$T/b4-stopped/report.md" "$T/b4/"
"$WILDCPU" "${B[@]}" --out "$T/b4" >"$T/b43.log" 2>&1
st=$?
[ $st -eq 0 ] && [ "$(json "$T/b4/report.json" steps_done)" = 4 ] &&
    [ "$(json "$T/b4/report.json" status)" = finished ] && grep -q "4 of 4 steps done" "$T/b4/report.md" &&
    grep -q "training already finished (4 steps): keeping its checkpoint; writing its report again (the one there is an earlier session's, at step 2" "$T/b43.log" \
    && ok "a finished run rerun beside an earlier session's report writes its own" \
    || notok "an earlier session's report on rerun" "status $st, steps_done $(json "$T/b4/report.json" steps_done): $(grep -E 'already|error' "$T/b43.log" | head -2)"

# 6. A file system without the inodes a run creates is refused at start (every checkpoint
#    failed, and the run trained to its end for nothing). A small tmpfs needs root.
mkdir -p "$T/fs"
if mount -t tmpfs -o size=60m,nr_inodes=12 tmpfs "$T/fs" 2>/dev/null; then
    trap 'umount "$T/fs" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
    mkdir "$T/fs/run"
    "$WILDCPU" "${D[@]}" --out "$T/fs/run" >"$T/inodes.log" 2>&1
    st=$?
    [ $st -eq 1 ] && grep -q "error: .*fs/run/checkpoints has [0-9]* inodes free on its file system" "$T/inodes.log" &&
        ! grep -q "^step 1/" "$T/inodes.log" \
        && ok "too few inodes for a run: refused before any step" \
        || notok "too few inodes" "status $st: $(grep -E 'error' "$T/inodes.log" | head -2)"
    # ... and a map that cannot be created for want of inodes says so (it said "out of space?")
    for i in $(seq 1 20); do touch "$T/fs/f$i" 2>/dev/null || break; done
    "$WILDCPU" predict --tiles "$T/s256/tiles.vrt" --checkpoint "$T/base" --out "$T/fs/risk.tif" >"$T/inodes2.log" 2>&1
    st=$?
    [ $st -eq 1 ] && grep -q "has no inodes left: out of files?" "$T/inodes2.log" \
        && ok "a map without inodes to be created in: the message says so" \
        || notok "a map without inodes" "status $st: $(grep -E 'error' "$T/inodes2.log" | head -2)"
    umount "$T/fs"
    # the inodes a run needs grow with --keep: 34 of them are enough for --keep 3, not for
    # --keep 30 (which trained to its end, then failed its last checkpoints and report)
    mount -t tmpfs -o size=200m,nr_inodes=34 tmpfs "$T/fs"
    "$WILDCPU" "${D[@]}" --keep 30 --out "$T/fs/k30" >"$T/k30.log" 2>&1
    s30=$?
    "$WILDCPU" "${D[@]}" --keep 3 --out "$T/fs/k3" >"$T/k3.log" 2>&1
    s3=$?
    [ $s30 -eq 1 ] && grep -q "error: .*fs/k30/checkpoints has [0-9]* inodes free on its file system (files it may still create), and this run needs 52 for its checkpoints (--keep 30" "$T/k30.log" &&
        ! grep -q "^step 1/" "$T/k30.log" && [ $s3 -eq 0 ] \
        && ok "the inodes a run needs count its --keep: --keep 30 refused on 34 inodes before any step, --keep 3 runs" \
        || notok "inodes and --keep" "status $s30/$s3: $(grep -h -m1 error "$T/k30.log" "$T/k3.log")"
    umount "$T/fs"
else
    echo "# skipped: a tmpfs needs root"
fi
finish
