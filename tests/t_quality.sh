#!/usr/bin/env bash
# t_quality.sh: the model learns what the synthetic region was built to require. On a generated
# 1024x1024 region whose labels depend on neighbourhood quantities (docs/synthetic.md), unet-lite
# must score clearly above the per-pixel baseline (--model logistic) in average precision on
# validation ground it never trained on; both are reported as fractions of the oracle's (the
# true burn probability: the ceiling).
. "$(dirname "$0")/lib.sh"
"$WILDCPU" synth --out "$T/region" --size 1024 --seed 1 >"$T/synth.log" 2>&1 \
    || { notok "synthetic 1024x1024 region" "$(tail -2 "$T/synth.log")"; finish; }
tiles=$T/region/tiles.vrt
"$WILDCPU" --tiles "$tiles" --out "$T/logistic" --model logistic --lr 0.1 --batch 16 --epochs 20 \
    --no-predict --log-every 1000 >"$T/logistic.log" 2>&1 \
    || { notok "logistic training" "$(tail -n 3 "$T/logistic.log")"; finish; }
# unet-lite at batch 8 (2 micro-batches of 4, one per rank) for 4 epochs: 88 updates, a third of
# the compute of batch 32 for 12 epochs (72 updates), AUC-PR 0.36 where that reached 0.43; the
# thresholds below are those it met (the logistic model keeps its 20 epochs: fewer would lower
# the bar)
mpirun_n 2 "$WILDCPU" --tiles "$tiles" --out "$T/unet" --epochs 4 --batch 8 --micro-batch 4 --no-predict --log-every 1000 \
    >"$T/unet.log" 2>&1 || { notok "unet-lite training" "$(tail -n 3 "$T/unet.log")"; finish; }
lastval() { $PY -c 'import json,sys
v=[json.loads(l) for l in open(sys.argv[1]) if "\"val\"" in l][-1]
print(v["auc_pr"], v["oracle_auc_pr"], v["roc_auc"])' "$1"; }
read -r l_ap oracle l_roc < <(lastval "$T/logistic/metrics.jsonl")
read -r u_ap oracle2 u_roc < <(lastval "$T/unet/metrics.jsonl")
echo "# AUC-PR on validation ground: unet-lite $u_ap, logistic $l_ap, oracle $oracle"
echo "# as a fraction of the oracle's: unet-lite $($PY -c "print(round($u_ap/$oracle,3))"), logistic $($PY -c "print(round($l_ap/$oracle,3))")"
[ -n "$oracle" ] && [ "$oracle" = "$oracle2" ] \
    && ok "both models validated on the same pixels (oracle AUC-PR $oracle)" \
    || notok "both models validated on the same pixels" "$oracle vs $oracle2"
# labels drawn at random from the true risk: even the oracle stays well below 1
$PY -c "import sys; sys.exit(0 if 0.4 <= $oracle <= 0.8 else 1)" \
    && ok "the oracle's AUC-PR $oracle lies in 0.4-0.8: labels are noisy draws, not a copy of the risk" \
    || notok "the oracle's AUC-PR in 0.4-0.8" "$oracle"
$PY -c "import sys; sys.exit(0 if $u_ap > 1.2 * $l_ap else 1)" \
    && ok "unet-lite (AUC-PR $u_ap) clearly above the per-pixel logistic model ($l_ap)" \
    || notok "unet-lite clearly above the per-pixel logistic model" "unet $u_ap vs logistic $l_ap"
$PY -c "import sys; sys.exit(0 if 0.5 * $oracle < $u_ap < $oracle else 1)" \
    && ok "unet-lite between half the oracle's AUC-PR and the oracle's" \
    || notok "unet-lite between half the oracle and the oracle" "$u_ap vs oracle $oracle"
finish
