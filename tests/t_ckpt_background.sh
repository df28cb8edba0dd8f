#!/usr/bin/env bash
# t_ckpt_background.sh: interval checkpoints are written by a background thread.
#
#   - on a deliberately slow disk (WILDCPU_TEST_SLOW_WRITE=2: every write takes 2 s longer), the
#     training thread's time at the checkpoint's step boundary (stall_s) is well below the
#     write's own time, and the next steps are trained (and logged) while the write runs;
#   - the checkpoints written in the background, slowly or not, on 1 or 2 ranks, hold the same
#     bits as each other and as the synchronous final checkpoint of an identical run;
#   - a run resumed from a background checkpoint ends bitwise equal to the uninterrupted run.
# tests/run: alone (a step must not stall over 0.25 s while a checkpoint is written beside it)
. "$(dirname "$0")/lib.sh"

common=(--tiles "$SAMPLE" --patch 32 --batch 8 --micro-batch 2 --steps 6 --ckpt-every 3
        --keep 100 --log-every 1 --no-predict --seed 7 --lr 1e-3)
dig() { digest "$T/$1/checkpoints/ckpt-0000000$2.wcp"; }

"$WILDCPU" "${common[@]}" --out "$T/fast" >"$T/fast.log" 2>&1
WILDCPU_TEST_SLOW_WRITE=2 mpirun_n 2 "$WILDCPU" "${common[@]}" --out "$T/slow" >"$T/slow.log" 2>&1
status=$?
$PY - "$T/slow/metrics.jsonl" >"$T/slow.check" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ck = [i for i, d in enumerate(lines) if d["type"] == "checkpoint" and d["step"] == 3][0]
c = lines[ck]
later = [d["step"] for d in lines[:ck] if d["type"] == "train" and d["step"] > 3]
print("%.3f %.3f %d" % (c.get("stall_s", -1), c["seconds"], len(later)))
PY
read -r stall secs later <"$T/slow.check"
if [ $status -eq 0 ] && $PY -c "import sys; s, w = $stall, $secs; sys.exit(0 if 0 <= s < 0.25 and w >= 2 and s < w / 8 else 1)" \
    && [ "$later" -ge 1 ]; then
    ok "slow disk: the training thread spent ${stall} s at the checkpoint's step boundary, the write ${secs} s; $later later step(s) trained during the write"
else
    notok "slow disk: the training thread does not wait for the write" "status $status, stall ${stall} s, write ${secs} s, $later steps during it; $(grep -m2 checkpoint "$T/slow.log")"
fi
grep -q 'in the background (training waited' "$T/slow.log" && ok "the log says the interval checkpoint was written in the background" \
    || notok "the log says the interval checkpoint was written in the background" "$(grep -m1 'checkpoint' "$T/slow.log")"
d3=$(dig fast 3)
if [ -n "$d3" ] && [ "$d3" = "$(dig slow 3)" ] && [ "$(dig fast 6)" = "$(dig slow 6)" ]; then
    ok "background checkpoints (slow disk, 2 ranks) bitwise equal to those of a fast 1-process run"
else
    notok "background checkpoints bitwise equal" "step 3: $d3 / $(dig slow 3), step 6: $(dig fast 6) / $(dig slow 6)"
fi

# resume from the background checkpoint of step 3
mkdir -p "$T/resumed/checkpoints"
cp "$T/fast/checkpoints/ckpt-00000003.wcp" "$T/resumed/checkpoints/"
"$WILDCPU" "${common[@]}" --out "$T/resumed" >"$T/resumed.log" 2>&1
if grep -q 'resum' "$T/resumed.log" && [ "$(dig resumed 6)" = "$(dig fast 6)" ]; then
    ok "resumed from the background checkpoint of step 3: bitwise equal at step 6"
else
    notok "resumed from the background checkpoint: bitwise equal" "$(dig resumed 6) / $(dig fast 6); $(grep -m1 -i resum "$T/resumed.log")"
fi
finish
