#!/usr/bin/env bash
# t_report.sh: DIR/report.json and report.md after training: every field the issue lists, values
# consistent with metrics.jsonl and the run's own log, the oracle's metrics on a synthetic region,
# and the --baseline comparison (this run against another: metric deltas and cost ratios); a
# baseline that is not JSON is a warning naming the file and the position, and the report is
# written without the comparison; a baseline lacking figures (no validation, zeros) gives n/a
# and why, never nan. Every file is read by Python's json in strict mode (NaN and
# Infinity refused: JSON has neither).
. "$(dirname "$0")/lib.sh"
args=(--tiles "$SAMPLE" --batch 8 --micro-batch 2 --steps 6 --val-block 128 --ckpt-every 3 --no-predict)
mpirun_n 2 "$WILDCPU" "${args[@]}" --out "$T/a" >"$T/a.log" 2>&1
GDAL_CACHEMAX=40 "$WILDCPU" "${args[@]}" --out "$T/b" --baseline "$T/a/report.json" >"$T/b.log" 2>&1
[ -f "$T/a/report.json" ] && [ -f "$T/a/report.md" ] && ok "report.json and report.md written" \
    || { notok "report.json and report.md written" "$(tail -3 "$T/a.log")"; finish; }

# the reading is every rank's share: 2 ranks read, in all, what 1 rank reads
pr() { $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["patches_read"], r["mib_read"])' "$1"; }
[ -n "$(pr "$T/a/report.json")" ] && [ "$(pr "$T/a/report.json")" = "$(pr "$T/b/report.json")" ] \
    && ok "patches_read and mib_read are the ranks' sum: 2 ranks report what 1 rank reads ($(pr "$T/a/report.json"))" \
    || notok "patches_read summed over ranks" "2 ranks: $(pr "$T/a/report.json"); 1 rank: $(pr "$T/b/report.json")"

$PY - "$T/a/report.json" "$T/a/metrics.jsonl" <<'PY' >"$T/check.txt" 2>&1
import json, sys
def bad(c): raise ValueError("not JSON: " + c)
r = json.load(open(sys.argv[1]), parse_constant=bad)
lines = [json.loads(l, parse_constant=bad) for l in open(sys.argv[2])]
need = ["ranks", "threads_per_rank", "global_batch", "micro_batch", "steps", "epochs",
        "wall_time_s", "core_hours", "samples_per_s", "peak_rss_mib_per_rank", "peak_rss_mib_max",
        "checkpoints_written", "checkpoint_time_s", "val_loss", "val_auc_pr", "val_roc_auc",
        "val_best_f1", "val_best_f1_threshold", "val_precision_at_half", "val_recall_at_half",
        "val_brier", "val_positive_rate", "oracle_auc_pr", "oracle_roc_auc", "oracle_brier"]
missing = [k for k in need if k not in r]
assert not missing, f"missing fields {missing}"
assert r["status"] == "finished" and r["map"] == "none", (r["status"], r["map"])  # --no-predict
assert r["ranks"] == 2 and r["threads_per_rank"] == 1 and r["global_batch"] == 8 and r["micro_batch"] == 2
# the machine the figures came from: the CPU as /proc/cpuinfo names it, OpenBLAS's kernel family
cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
assert r.get("cpu_model") == (cpu[0] if cpu else "unknown"), f"cpu_model {r.get('cpu_model')!r}"
fam = [int(l.split(":", 1)[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu family")]
assert r.get("cpu_family") == (fam[0] if fam else None), f"cpu_family {r.get('cpu_family')!r}"
mod = [int(l.split(":", 1)[1]) for l in open("/proc/cpuinfo") if l.split(":")[0].strip() == "model"]
assert r.get("cpu_model_number") == (mod[0] if mod else None), f"cpu_model_number {r.get('cpu_model_number')!r}"
assert r.get("openblas_core") not in (None, "", "unknown"), f"openblas_core {r.get('openblas_core')!r}"
assert isinstance(r.get("online_cpus"), int) and r["online_cpus"] >= 1
# who chose OpenBLAS's kernels (blas_core.h): the user's OPENBLAS_CORETYPE is never overridden
origin = r.get("openblas_core_origin", "")
import os
if os.environ.get("OPENBLAS_CORETYPE") and not os.environ.get("WILDCPU_OPENBLAS_DETECTED"):
    assert origin == "OPENBLAS_CORETYPE", f"openblas_core_origin {origin!r} with OPENBLAS_CORETYPE set"
else:
    assert origin == "OpenBLAS" or origin.startswith("wildcpu, OpenBLAS detected "), f"openblas_core_origin {origin!r}"
# and who did the Winograd products: the own kernel wherever the CPU has AVX2 and FMA, 16 lanes
# wide with AVX-512 F, CD, BW, DQ and VL (the test runs without WILDCPU_GEMM)
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
own = "avx2" in flags and "fma" in flags
wide = all(f in flags for f in ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"))
want = ("own-avx512" if wide else "own-avx2") if own else "openblas"
assert r.get("winograd_products") == want, f"winograd_products {r.get('winograd_products')!r}, want {want}"
assert r["steps"] == 6 and len(r["peak_rss_mib_per_rank"]) == 2 and min(r["peak_rss_mib_per_rank"]) > 10
assert abs(r["core_hours"] - r["wall_time_s"] * 2 / 3600) < 1e-6
val = [l for l in lines if l["type"] == "val"][-1]
for k in ["loss", "auc_pr", "roc_auc", "best_f1", "brier", "positive_rate", "pixels"]:
    assert abs(r["val_" + k] - val[k]) <= 1e-9 * max(1, abs(val[k])), (k, r["val_" + k], val[k])
assert abs(r["oracle_auc_pr"] - val["oracle_auc_pr"]) < 1e-9
ck = [l for l in lines if l["type"] == "checkpoint"]
# the two interval/final checkpoints, and best.wcp after each validation that improved
assert r["checkpoints_written"] == len(ck) >= 2, (r["checkpoints_written"], len(ck))
# the training thread's time: a synchronous write's, a background write's wait and copy
# (stall_s); the background writes' own time apart
assert abs(r["checkpoint_time_s"] - sum(c.get("stall_s", c["seconds"]) for c in ck)) < 1e-3
assert abs(r["checkpoint_background_s"] - sum(c["seconds"] for c in ck if "stall_s" in c)) < 1e-3
print("fields present; validation and checkpoint figures match metrics.jsonl")
PY
[ $? -eq 0 ] && ok "report.json: every field, consistent with metrics.jsonl ($(cat "$T/check.txt"))" \
    || notok "report.json fields consistent with metrics.jsonl" "$(cat "$T/check.txt")"

grep -q "| AUC-PR (average precision) |" "$T/a/report.md" && grep -q "| oracle |" "$T/a/report.md" &&
    grep -q "core-hours" "$T/a/report.md" \
    && grep -q "^Machine (rank 0): CPU .*OpenBLAS" "$T/a/report.md" && grep -q "OpenBLAS" "$T/a.log" \
    && ok "report.md: cost and quality tables with the oracle column; the machine in it and in the log" || notok "report.md tables" "$(head -30 "$T/a/report.md")"
# The best-F1 threshold as report.md and the log print it is a rule applied to the map (p >= t):
# read back, it selects the same float probabilities as report.json's (before 2026-12-06 "%.3g"
# printed 0.0407 for 0.04066467, above every pixel of a map of 0.0406675).
thr=$($PY - "$T/a/report.json" "$T/a/report.md" "$T/a.log" <<'PY' 2>&1
import json, re, sys
import numpy as np
r = json.load(open(sys.argv[1]))
md = open(sys.argv[2]).read()
row = re.search(r"^\| best-F1 threshold \| (\S+) \| (\S+) \|$", md, re.M)
logged = re.findall(r"^validation after step \d+ .*best F1 [0-9.]+ @ (\S+)", open(sys.argv[3]).read(), re.M)
def same(printed, t):
    f = np.float32(t)
    if float(f) < t: f = np.nextafter(f, np.float32(2))
    return float(np.nextafter(f, np.float32(-1))) < float(printed) <= float(f)
bad = [(p, t) for p, t in ((row.group(1), r["val_best_f1_threshold"]), (row.group(2), r["oracle_best_f1_threshold"]),
                           (logged[-1], r["val_best_f1_threshold"])) if not same(p, t)]
print("; ".join("%s printed for %r" % b for b in bad) if bad else "report.md %s and %s, log %s" % (row.group(1), row.group(2), logged[-1]))
PY
)
[[ $thr == report.md* ]] && ok "the best-F1 thresholds printed select the pixels report.json's do ($thr)" \
    || notok "best-F1 thresholds printed as report.json's" "$thr"
# the log's validation line gives what README says validation logs: precision and recall at 0.5
# too (before 2026-12-08 only the metrics log and the reports had them)
last=$(grep "^validation after step" "$T/a.log" | tail -1)
$PY - "$T/a/report.json" "$last" <<'PY' >"$T/half.txt" 2>&1
import json, math, re, sys
r = json.load(open(sys.argv[1]))
m = re.search(r"precision (\S+) and recall (\S+) at 0\.5", sys.argv[2])
def same(printed, v):
    return printed == "undefined" if v is None or (isinstance(v, float) and math.isnan(v)) else abs(float(printed) - v) <= 5e-5
assert m and same(m.group(1), r["val_precision_at_half"]) and same(m.group(2), r["val_recall_at_half"]), sys.argv[2]
print(m.group(0))
PY
[ "$(grep -c . "$T/half.txt")" -eq 1 ] && ok "the log's validation line gives precision and recall at 0.5, as report.json ($(cat "$T/half.txt"))" \
    || notok "precision and recall at 0.5 in the log's validation line" "$(tail -2 "$T/half.txt")"
grep -q "| baseline | change |" "$T/b/report.md" && grep -Eq "^\| AUC-PR \(average precision\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [+-][0-9.]+ \|$" "$T/b/report.md" && grep -Eq "Against the baseline .*AUC-PR [+-][0-9.]+ for x[0-9.]+ the core-hours" "$T/b/report.md" &&
    grep -Eq "^\| checkpoints written \| [0-9]+ \| [0-9]+ \| [+-][0-9]+ \|$" "$T/b/report.md" \
    && ok "--baseline: side-by-side table with deltas (whole for checkpoints written) and cost ratios" || notok "--baseline comparison" "$(tail -20 "$T/b/report.md")"

# A baseline with a NaN in it (what printf writes, and what a strstr reader took for a number):
# a warning naming the file and the line and column of the NaN; the report without comparison.
pos=$($PY - "$T/a/report.json" "$T/bad.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
text = json.dumps(r, indent=1).replace('"val_auc_pr": %s' % json.dumps(r["val_auc_pr"]), '"val_auc_pr": NaN')
open(sys.argv[2], "w").write(text)
at = text.index("NaN")
print("line %d, column %d" % (text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)))
PY
)
"$WILDCPU" "${args[@]}" --model logistic --out "$T/c" --baseline "$T/bad.json" >"$T/c.log" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "warning.*--baseline $T/bad.json is not valid JSON ($pos: expected a value (JSON has no NaN" "$T/c.log" &&
    [ -f "$T/c/report.json" ] && grep -q "| AUC-PR (average precision) |" "$T/c/report.md" &&
    ! grep -q "baseline" "$T/c/report.md"; then
    ok "--baseline with a NaN: warning at $pos, report written without the comparison"
else
    notok "--baseline with a NaN" "status $status, want $pos: $(grep -i baseline "$T/c.log" | head -3)"
fi
# A baseline without figures to compare: one from a run without validation (no val_ members),
# one of the "wildcpu" member alone, one whose figures are all 0. What cannot be compared reads
# n/a, and the sentence under the tables says why; never "nan" or "inf" ("+nan", "xnan").
$PY - "$T/a/report.json" "$T" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
json.dump({k: v for k, v in r.items() if not k.startswith("val_")}, open(sys.argv[2] + "/noval.json", "w"))
json.dump({"wildcpu": r["wildcpu"]}, open(sys.argv[2] + "/bare.json", "w"))
json.dump({k: 0 if type(v) in (int, float) else v for k, v in r.items()}, open(sys.argv[2] + "/zeros.json", "w"))
json.dump({k: 1e308 if type(v) in (int, float) else v for k, v in r.items()}, open(sys.argv[2] + "/huge.json", "w"))
# the report of the last session of a resumed run: its cost is that session's alone
json.dump(dict(r, resumed_from_step=3, steps_this_run=3), open(sys.argv[2] + "/piece.json", "w"))
PY
for kind in noval bare zeros huge piece; do
    "$WILDCPU" "${args[@]}" --model logistic --out "$T/base_$kind" --baseline "$T/$kind.json" >"$T/base_$kind.log" 2>&1
    st=$?
    md=$T/base_$kind/report.md
    case $kind in
    noval) want="AUC-PR n/a for x[0-9.]+ the core-hours and x[0-9.]+ the wall time\. .* n/a: no comparison \(validation AUC-PR: the baseline has none\)\.$"
        row="^\| AUC-PR \(average precision\) \| [0-9.]+ \| [0-9.]+ \| - \| n/a \|$" ;;
    bare) want="AUC-PR n/a for n/a the core-hours and n/a the wall time\. .* n/a: no comparison \(validation AUC-PR: the baseline has none; core-hours: the baseline has none; wall time: the baseline has none\)\.$"
        row="^\| core-hours \| [0-9.]+ \| - \| n/a \|$" ;;
    zeros) want="AUC-PR \+[0-9.]+ for n/a the core-hours and n/a the wall time\. .* n/a: no comparison \(core-hours: the baseline's is 0; wall time: the baseline's is 0\)\.$"
        row="^\| wall time \(s\) \| [0-9.]+ \| 0\.0 \| n/a \|$" ;;
    # a hand-written baseline's 1e308: whole cells (not 309 digits cut at the cell's size)
    huge) want="AUC-PR -1e\+308 for x0\.00 the core-hours and x0\.00 the wall time\. Change is this run minus the baseline for quality and checkpoints written, this run over the baseline for the rest of the cost\.$"
        row="^\| AUC-PR \(average precision\) \| [0-9.]+ \| [0-9.]+ \| 1e\+308 \| -1e\+308 \|$" ;;
    # a session's totals (wall time, core-hours, checkpoints) are not its run's: before
    # 2026-12-06 "x4.2 the core-hours" set a whole run against the last of a baseline's sessions
    piece) want="AUC-PR [+-][0-9.]+ for n/a the core-hours and n/a the wall time\. .* n/a: no comparison \(cost: the baseline's covers steps 4-6 of 6 only, a report counting its own session alone\)\.$"
        row="^\| core-hours \| [0-9.]+ \| [0-9.]+ \| n/a \|$" ;;
    esac
    if [ $st -eq 0 ] && ! grep -Eiq "[x+-](nan|inf)|\\b(nan|inf)\\b" "$md" && grep -Eq "^Against the baseline \(.*$kind.json\): $want" "$md" &&
        grep -Eq "$row" "$md"; then
        ok "--baseline $kind: n/a where nothing compares, and why (no nan)"
    else
        notok "--baseline $kind" "status $st: $(grep -Ei 'nan|inf|Against' "$md" | head -5)"
    fi
done
# a session's rates and peaks still compare with a baseline that is part of its run
grep -Eq "^\| training samples/s \| [0-9.]+ \| [0-9.]+ \| x[0-9.]+ \|$" "$T/base_piece/report.md" &&
    grep -Eq "^\| checkpoints written \| [0-9]+ \| [0-9]+ \| n/a \|$" "$T/base_piece/report.md" &&
    ok "--baseline piece: rates compared, the session's totals n/a" ||
    notok "--baseline piece: rates and totals" "$(grep -E '^\| (training|checkpoints)' "$T/base_piece/report.md")"
# GDAL's block cache: sized to the bands read, whole, plus a quarter (16 MiB to 256 MiB), as the
# memory plan says; GDAL_CACHEMAX (in MB, as GDAL reads it) stands when set
want=$($PY - "$SAMPLE" <<'PY'
import sys
from osgeo import gdal
ds = gdal.Open(sys.argv[1])
b = sum(ds.RasterXSize * ds.RasterYSize * gdal.GetDataTypeSize(ds.GetRasterBand(i).DataType) // 8
        for i in range(1, ds.RasterCount + 1))
print("%.1f" % (min(max(1.25 * b, 16 << 20), 256 << 20) / 1048576))
PY
)
got=$(grep -o "GDAL's block cache (up to [0-9.]* MiB)" "$T/a.log" | grep -o '[0-9.]* MiB' | cut -d' ' -f1)
got_env=$(grep -o "GDAL's block cache (up to [0-9.]* MiB)" "$T/b.log" | grep -o '[0-9.]* MiB' | cut -d' ' -f1)
[ -n "$got" ] && [ "$got" = "$want" ] && [ "$got_env" = "40.0" ] \
    && ok "GDAL block cache sized to the bands read ($got MiB), GDAL_CACHEMAX=40 kept ($got_env MiB)" \
    || notok "GDAL block cache size" "got '$got' want '$want'; with GDAL_CACHEMAX=40: '$got_env'"

# a reliability diagram that this run did not make (no validation) is an earlier run's: it goes,
# rather than pass for this run's beside its report
[ -f "$T/a/calibration.png" ] && mkdir -p "$T/nv" && cp "$T/a/calibration.png" "$T/nv/"
"$WILDCPU" "${args[@]}" --model logistic --val-fraction 0 --out "$T/nv" >"$T/nv.log" 2>&1
s=$?
[ -f "$T/a/calibration.png" ] && [ $s -eq 0 ] && [ -f "$T/nv/report.md" ] && [ ! -e "$T/nv/calibration.png" ] &&
    ! grep -q "calibration.png" "$T/nv/report.md" \
    && ok "a run without validation removes an earlier run's calibration.png" \
    || notok "an earlier run's calibration.png" "status $s: $(ls "$T/nv")"
# ... and reports no validation time: no validation ran (an empty pass counted 30% of a run)
vt=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["time_validation_s"])' "$T/nv/report.json" 2>&1)
[ "$vt" = "0" ] || [ "$vt" = "0.0" ] \
    && ok "a run without validation reports no validation time" \
    || notok "validation time without validation" "time_validation_s $vt"

# The end-of-run map, as report.json ("status" is the command's, "map" what became of the map)
# and report.md's status line say: failed (risk.tif cannot be written), stopped while drawn,
# drawn on the rerun. The report is written when training ends, and again when the map does.
status_of() { $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["status"], r["map"])' "$1/report.json" 2>&1; }
margs=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 2 --val-fraction 0 --model logistic --out "$T/map")
# (risk.tif made a directory once training runs: one there at the start is refused before any
# work; the last checkpoint's write takes a second, so the run is still training then)
WILDCPU_TEST_SLOW_WRITE=1 "$WILDCPU" "${margs[@]}" >"$T/map1.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q 'step *[0-9]*/2' "$T/map1.log" 2>/dev/null && break; sleep 0.05; done
mkdir -p "$T/map/risk.tif"
wait $pid
s=$?
[ $s -eq 1 ] && [ "$(status_of "$T/map")" = "failed failed" ] &&
    grep -q '^Status: \*\*failed\*\*: training finished, but the risk map was not made (.*; status 1)' "$T/map/report.md" \
    && ok "a map that fails after training: status 1, report.json status and map failed, report.md says so" \
    || notok "the report of a failed map" "status $s, $(status_of "$T/map"); $(grep -m1 '^Status' "$T/map/report.md")"
rmdir "$T/map/risk.tif"
# the slow commit delays DIR/split.tif (rewritten at the rerun's start) as well as the map: a stop
# while split.tif is written stops the training before any step, not the map, so the signal
# waits for the map's plan line, 20 s later
WILDCPU_TEST_SLOW_COMMIT=20 "$WILDCPU" "${margs[@]}" >"$T/map2.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do grep -q "strips x" "$T/map2.log" && break; sleep 0.05; done
sleep 1
kill -TERM $pid
( sleep 60; kill -KILL $pid 2>/dev/null ) &
guard=$!
wait $pid
s=$?
kill $guard 2>/dev/null
[ $s -eq 75 ] && [ "$(status_of "$T/map")" = "stopped stopped" ] && [ ! -e "$T/map/risk.tif" ] &&
    grep -q '^Status: \*\*stopped\*\* while drawing the risk map (.*): rerun the same command to draw it' "$T/map/report.md" \
    && ok "a map stopped while drawn: status 75, report.json status and map stopped, report.md says so" \
    || notok "the report of a stopped map" "status $s, $(status_of "$T/map"); $(grep -m1 '^Status' "$T/map/report.md")"
"$WILDCPU" "${margs[@]}" >"$T/map3.log" 2>&1
s=$?
[ $s -eq 0 ] && [ "$(status_of "$T/map")" = "finished written" ] &&
    grep -q '^Status: \*\*finished\*\*: trained, and the risk map drawn' "$T/map/report.md" &&
    grep -q '^!\[The risk map\](risk.png)' "$T/map/report.md" &&
    [ "$(grep -c '^Status: ' "$T/map/report.md")" -eq 1 ] \
    && ok "the rerun draws the map: status 0, report.json finished and written, report.md with its picture" \
    || notok "the report of the map drawn on the rerun" "status $s, $(status_of "$T/map"); $(grep '^Status\|^!' "$T/map/report.md")"
# a report that cannot record the map just drawn (a disk filled meanwhile; here report.json is a
# mount point, which no file can be renamed onto): status 1, naming the file, not 0 beside a
# report that says another map state; the rerun records it. The mount needs root: skipped without.
if mount --bind "$T/map/report.json" "$T/map/report.json" 2>/dev/null; then
    "$WILDCPU" "${margs[@]}" >"$T/map_stale.log" 2>&1
    s=$?
    umount "$T/map/report.json"
    [ $s -eq 1 ] && [ -f "$T/map/risk.tif" ] &&
        grep -q "error: $T/map/report.json not updated to record how the map ended (see above): what it says of the map is stale; rerun the same command to draw it again and record it" "$T/map_stale.log" \
        && ok "a report.json that cannot record the map drawn: status 1, the file named" \
        || notok "a report.json that cannot record the map" "status $s: $(grep error "$T/map_stale.log" | tail -2)"
    "$WILDCPU" "${margs[@]}" >>"$T/map_stale.log" 2>&1 && [ "$(status_of "$T/map")" = "finished written" ] \
        && ok "... and the rerun records it" || notok "the rerun records the map" "$(status_of "$T/map")"
else
    echo "# skipped: a bind mount needs root"
fi
# a report.md of a wildcpu before 2026-12-03 (its status line and the model's sentence in one
# paragraph): drawing the map again replaces the status line only
$PY - "$T/map/report.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
t = re.sub(r"^Status: .*\n\n", "Status: **finished**.\n", t, count=1, flags=re.M)
open(sys.argv[1], "w").write(t.split("<!-- wildcpu: pictures -->")[0])
PY
"$WILDCPU" "${margs[@]}" >"$T/map4.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q '^Model `logistic`, 1 rank' "$T/map/report.md" &&
    [ "$(grep -c '^Status: \*\*finished\*\*: trained, and the risk map drawn.$' "$T/map/report.md")" -eq 1 ] &&
    [ "$(grep -A1 '^Status: ' "$T/map/report.md" | tail -1)" = "" ] \
    && ok "an older report.md: the status line replaced, the model's sentence kept as its own paragraph" \
    || notok "an older report.md" "status $s: $(head -6 "$T/map/report.md")"
# a report.json a user's tool rewrote (indented, keys moved, a member of its own, an odd status
# string): drawing the map again sets status and map where they are and keeps the rest
$PY - "$T/map/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["status"] = 'was "stopped", \\ by hand'
del r["map"]
r["mine"] = {"note": "\"status\":\"x\"", "list": [1, 2]}
json.dump(r, open(sys.argv[1], "w"), indent=2)
PY
"$WILDCPU" "${margs[@]}" >"$T/map5.log" 2>&1
s=$?
kept=$($PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["status"], r["map"], r["mine"]["note"], r["mine"]["list"], r["steps"])' "$T/map/report.json" 2>&1)
[ $s -eq 0 ] && [ "$kept" = 'finished written "status":"x" [1, 2] 2' ] && ! grep -q warning "$T/map5.log" \
    && ok "a report.json rewritten by another tool: status and map set in place, the rest kept" \
    || notok "a rewritten report.json" "status $s: $kept; $(grep warning "$T/map5.log")"

# Throughput counts the samples trained: an epoch's last step takes what is left of the epoch,
# fewer than --batch (a probe: steps x batch overstated samples/s up to 1.8x)
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --val-block 128 --batch 32 --epochs 2 --no-predict --model logistic \
    --out "$T/sps" >"$T/sps.log" 2>&1
sps=$($PY -c 'import json,sys; r=json.load(open(sys.argv[1]))
trained = r["samples_per_s"] * r["train_time_s"]
print("ok" if abs(trained - r["patches_read"]) < 1e-6 * r["patches_read"] and r["patches_read"] % 32 else "bad",
      round(trained, 3), r["patches_read"], r["steps"] * r["global_batch"], r["steps_done"])' "$T/sps/report.json" 2>&1)
[ "${sps%% *}" = ok ] && ok "samples/s x train time = the patches trained, not steps x batch ($sps)" \
    || notok "samples/s of a run with partial steps" "$sps"
# A report written by a session that ran no validation (a finished run rewriting a lost
# report.md) shows the last validation, from the checkpoint, and keeps its picture (a probe: it
# said "no validation patches" and removed calibration.png)
v1=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_auc_pr"])' "$T/sps/report.json")
rm "$T/sps/report.md"
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --val-block 128 --batch 32 --epochs 2 --no-predict --model logistic \
    --out "$T/sps" >"$T/sps2.log" 2>&1
s=$?
v2=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_auc_pr"])' "$T/sps/report.json" 2>&1)
[ $s -eq 0 ] && [ -n "$v1" ] && [ "$v1" = "$v2" ] && [ -f "$T/sps/calibration.png" ] &&
    grep -q 'The last validation ran in an earlier session' "$T/sps/report.md" &&
    ! grep -q 'No validation ran' "$T/sps/report.md" &&
    ok "a report rewritten by a session without validation: the last validation ($v2) and its picture kept" ||
    notok "a report rewritten without validation" "status $s, AUC-PR $v1 then $v2; $(ls "$T/sps"); $(grep -i 'validation ran' "$T/sps/report.md")"

# --baseline given to a rerun of a finished training: said, not silently dropped (a probe)
"$WILDCPU" --tiles "$SAMPLE" --patch 32 --val-block 128 --batch 32 --epochs 2 --no-predict --model logistic \
    --out "$T/sps" --baseline "$T/a/report.json" >"$T/sps3.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "warning: --baseline .*report.json: this run's report is kept as its training wrote it" "$T/sps3.log" \
    && ok "--baseline on a finished run's rerun: warned, the report kept" \
    || notok "--baseline on a finished rerun" "status $s: $(grep -iE 'warn|error' "$T/sps3.log" | head -2)"

# a session resumed without the oracle (--oracle ''): its report pairs this session's validation
# with no oracle, not with the oracle's metrics of the checkpoint's earlier validation (the
# resumed session's validation at step 4 had none; before, report.json and report.md still
# carried the step-3 oracle's and compared the run with it)
oa=(--tiles "$SAMPLE" --patch 32 --batch 64 --val-block 128 --steps 4 --no-predict --ckpt-every 1 --model logistic --out "$T/or")
(WILDCPU_TEST_CRASH_CKPT=0.5@4 exec "$WILDCPU" "${oa[@]}") >"$T/or.log" 2>&1
"$WILDCPU" "${oa[@]}" --oracle '' >>"$T/or.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q "resuming from .*ckpt-00000003.wcp" "$T/or.log" && grep -q '"oracle_auc_pr"' "$T/or/metrics.jsonl" &&
    ! grep -q '"oracle_' "$T/or/report.json" && ! grep -qi oracle "$T/or/report.md" &&
    [ "$(json "$T/or/report.json" val_auc_pr)" = "$($PY -c 'import json,sys
print([json.loads(l) for l in open(sys.argv[1]) if "\"val\"" in l][-1]["auc_pr"])' "$T/or/metrics.jsonl")" ] \
    && ok "a session resumed with --oracle '': no oracle in its report (the checkpoint's earlier oracle metrics not paired with this validation)" \
    || notok "a report resumed without the oracle" "status $s: $(grep -o '"oracle_auc_pr":[^,]*' "$T/or/report.json"; grep -i oracle "$T/or/report.md" | head -2)"

# files in large blocks: a patch of a GeoTIFF interleaving its 13 bands by pixel in 1024-pixel
# blocks decodes 52 MiB to read 208 KiB, and again whenever the cache has let the blocks go, so
# the cache holds the whole of every band (260 MiB), past the 256 MiB of small blocks (trained
# at 1.3 samples/s against 17 from 1024-pixel tiles on 13 bands in 2048-pixel blocks); the same
# raster in 256-pixel blocks keeps the cap
for blk in 1024 256; do
    gdal_translate -q -ot Float32 -outsize 2048 2048 -co TILED=YES -co BLOCKXSIZE=$blk \
        -co BLOCKYSIZE=$blk -co INTERLEAVE=PIXEL -co COMPRESS=DEFLATE -co ZLEVEL=1 "$SAMPLE" "$T/blocks$blk.tif"
    "$WILDCPU" --tiles "$T/blocks$blk.tif" --out "$T/blocks$blk" --steps 1 --batch 4 \
        --val-fraction 0 --no-predict >"$T/blocks$blk.log" 2>&1
    eval "s$blk=$?"
    eval "got$blk='$(grep -o "GDAL's block cache (up to [0-9.]* MiB)" "$T/blocks$blk.log" | grep -o '[0-9.]* MiB')'"
done
[ "$s1024" -eq 0 ] && [ "$s256" -eq 0 ] && [ "$got1024" = "260.0 MiB" ] && [ "$got256" = "256.0 MiB" ] \
    && ok "GDAL's cache in large blocks holds every band ($got1024), in small blocks the cap ($got256)" \
    || notok "GDAL's cache and large blocks" "status $s1024/$s256, cache '$got1024' / '$got256'"

# A session resumed from an older checkpoint than the newest (the newest passed over as
# unusable) shows that checkpoint's validation, not the one calibration.png was drawn for: the
# picture goes (before 2026-12-06 report.md called the later validation's diagram its own)
pa=(--tiles "$SAMPLE" --patch 32 --val-block 128 --batch 32 --epochs 2 --no-predict --ckpt-every 1 --keep 1000
    --model logistic)
"$WILDCPU" "${pa[@]}" --out "$T/pic" >"$T/pic.log" 2>&1
spe=$(json "$T/pic/report.json" steps_per_epoch)
for f in "$T"/pic/checkpoints/ckpt-*.wcp; do
    n=${f##*ckpt-}; n=$((10#${n%.wcp}))
    [ "$n" -gt $((spe + 1)) ] && truncate -s 1000 "$f"
done
WILDCPU_TEST_POISON=$((spe + 3)):0:loss "$WILDCPU" "${pa[@]}" --out "$T/pic" >"$T/pic2.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "resuming from .*ckpt-0*$((spe + 1)).wcp" "$T/pic2.log" && [ ! -e "$T/pic/calibration.png" ] &&
    ! grep -q "calibration.png" "$T/pic/report.md" && grep -q 'The last validation ran in an earlier session' "$T/pic/report.md" &&
    ok "a session resumed before the last validation: its report shows no later validation's picture" ||
    notok "calibration.png of a later validation" "status $s; $(grep -i 'resuming\|calibration' "$T/pic2.log" "$T/pic/report.md" | head -4); $(ls "$T/pic")"
finish
