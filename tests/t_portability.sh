#!/usr/bin/env bash
# t_portability.sh: a run carried between machines and directories (found by a probe of
# environment and portability):
#   - a checkpoint resumed on other kernels (OpenBLAS's core of another CPU type) went on
#     silently, its parameters no longer bitwise the uninterrupted run's that the README
#     promises, and report.json named only the last session's core; ranks on two kinds of
#     kernels likewise: now warned, and the checkpoint and report.json list the kernels;
#   - a run whose --labels was given relative to one directory, resumed from another (the same
#     file by another relative path), was refused as "trained on other data"; another file
#     typed the same way from elsewhere was taken for the same labels;
#   - checkpoints another user wrote under umask 077 (a shared project directory) were "no valid
#     checkpoint" with the advice to start over (--fresh), as if damaged: now said unreadable.
. "$(dirname "$0")/lib.sh"

# --- 1. kernels: a resume on another OpenBLAS core ------------------------------------------
# Haswell's kernels need AVX2, Sandybridge's AVX: both run on any CPU that has AVX2
if ! grep -qw avx2 /proc/cpuinfo; then
    ok "# SKIP kernels: this CPU has no AVX2 for OpenBLAS's Haswell kernels"
else
    # --val-fraction 0: no best.wcp, so removing the last checkpoint leaves a run stopped at 3
    K=(--tiles "$SAMPLE" --steps 6 --batch 4 --micro-batch 2 --patch 32 --val-fraction 0 --ckpt-every 3 --no-predict)
    OPENBLAS_CORETYPE=Haswell timeout 300 "$WILDCPU" "${K[@]}" --out "$T/k" >"$T/k1.log" 2>&1
    whole=$(digest "$T/k/checkpoints/ckpt-00000006.wcp")
    rm -f "$T/k/checkpoints/ckpt-00000006.wcp"
    OPENBLAS_CORETYPE=Haswell timeout 300 "$WILDCPU" "${K[@]}" --out "$T/k" >"$T/k2.log" 2>&1
    s=$?
    kernels=$(json "$T/k/report.json" kernels)
    [ $s -eq 0 ] && ! grep -q 'kernels' "$T/k2.log" && [ "$(digest "$T/k/checkpoints/ckpt-00000006.wcp")" = "$whole" ] &&
        [[ $kernels == "['openblas:Haswell/products:"*"']" && $kernels != *,* ]] \
        && ok "a resume on the same kernels: no warning, bitwise the run that never stopped, one kind in report.json" \
        || notok "a resume on the same kernels" "status $s, $(grep kernels "$T/k2.log"); report.json kernels $kernels"
    rm -f "$T/k/checkpoints/ckpt-00000006.wcp"
    OPENBLAS_CORETYPE=Sandybridge timeout 300 "$WILDCPU" "${K[@]}" --out "$T/k" >"$T/k3.log" 2>&1
    s=$?
    kernels=$(json "$T/k/report.json" kernels)
    meta=$("$WILDCPU" info "$T/k/checkpoints/ckpt-00000006.wcp" | grep -o 'kernels=.*')
    [ $s -eq 0 ] &&
        grep -q "warning: .*ckpt-00000003.wcp was computed with the kernels openblas:Haswell/.*, this run with openblas:Sandybridge/.*maybe not bitwise as the run that never stopped.*OPENBLAS_CORETYPE=Haswell" "$T/k3.log" &&
        [[ $kernels == "['openblas:Haswell/products:"*"', 'openblas:Sandybridge/products:"*"']" ]] &&
        [[ $meta == kernels=openblas:Haswell/*,openblas:Sandybridge/* ]] &&
        grep -q '^Kernels: .*Its sessions ran on different kernels' "$T/k/report.md" \
        && ok "a resume on another OpenBLAS core: warned, naming both and the variable; the checkpoint and report.json list both" \
        || notok "a resume on another OpenBLAS core" "status $s; report.json kernels $kernels; meta $meta; $(grep -i 'warn' "$T/k3.log")"

    # --- 2. kernels: ranks on two kinds --------------------------------------------------------
    cat >"$T/per_rank.sh" <<'EOF'
#!/bin/bash
# rank 1 computes with the core of RANK1_CORE, the others with Haswell's
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then export OPENBLAS_CORETYPE=$RANK1_CORE; else export OPENBLAS_CORETYPE=Haswell; fi
exec "$WILDCPU" "$@"
EOF
    chmod +x "$T/per_rank.sh"
    M=(--tiles "$SAMPLE" --steps 2 --batch 4 --micro-batch 2 --patch 32 --val-fraction 0 --no-predict)
    WILDCPU=$WILDCPU RANK1_CORE=Sandybridge timeout 300 mpirun --oversubscribe --bind-to none -np 2 -x WILDCPU -x RANK1_CORE "$T/per_rank.sh" "${M[@]}" --out "$T/mixed" >"$T/mixed.log" 2>&1
    s=$?
    [ $s -eq 0 ] && [ "$(grep -c 'computes with the kernels' "$T/mixed.log")" = 1 ] &&
        grep -q "wildcpu\[rank 1\]: warning: this rank computes with the kernels openblas:Sandybridge/.*, rank 0 with openblas:Haswell/.*so this training may not be bitwise.*OPENBLAS_CORETYPE=Haswell" "$T/mixed.log" &&
        [[ $(json "$T/mixed/report.json" kernels) == "['openblas:Haswell/products:"*"/ranks:mixed']" ]] \
        && ok "ranks on two OpenBLAS cores: one warning, from the rank that differs; report.json says the ranks were mixed" \
        || notok "ranks on two OpenBLAS cores" "status $s; $(grep -i 'warn\|error' "$T/mixed.log" | head -3); $(json "$T/mixed/report.json" kernels)"
    WILDCPU=$WILDCPU RANK1_CORE=Sandybridge timeout 300 mpirun --oversubscribe --bind-to none -np 2 -x WILDCPU -x RANK1_CORE "$T/per_rank.sh" predict --tiles "$SAMPLE" --checkpoint "$T/mixed" --out "$T/mixed/p.tif" >"$T/mixedp.log" 2>&1
    s1=$?
    WILDCPU=$WILDCPU RANK1_CORE=Haswell timeout 300 mpirun --oversubscribe --bind-to none -np 2 -x WILDCPU -x RANK1_CORE "$T/per_rank.sh" predict --tiles "$SAMPLE" --checkpoint "$T/mixed" --out "$T/mixed/q.tif" >"$T/samep.log" 2>&1
    s2=$?
    [ $s1 -eq 0 ] && [ $s2 -eq 0 ] && grep -q "rank 1\]: warning: .*so this map may not be bitwise" "$T/mixedp.log" &&
        ! grep -q 'kernels' "$T/samep.log" \
        && ok "predict on ranks of two OpenBLAS cores warns; on one core it does not" \
        || notok "predict on ranks of two OpenBLAS cores" "status $s1/$s2; $(grep -i kernels "$T/mixedp.log" "$T/samep.log")"
fi

# --- 3. --labels relative to the directory a run started in ---------------------------------
mkdir -p "$T/proj/data" "$T/elsewhere/data"
gdal_translate -q -b 13 "$SAMPLE" "$T/proj/data/fires.tif" >/dev/null 2>&1
gdal_translate -q -b 13 -scale 0 1 0 0 "$SAMPLE" "$T/elsewhere/data/fires.tif" >/dev/null 2>&1
L=(--steps 4 --batch 4 --micro-batch 2 --patch 32 --val-fraction 0 --ckpt-every 2 --no-predict --label-band 1)
(cd "$T/proj" && timeout 300 "$WILDCPU" --tiles "$SAMPLE" --labels data/fires.tif "${L[@]}" --out runs/r1) >"$T/l1.log" 2>&1
whole=$(digest "$T/proj/runs/r1/checkpoints/ckpt-00000004.wcp")
rm -f "$T/proj/runs/r1/checkpoints/ckpt-00000004.wcp"
(cd "$T" && timeout 300 "$WILDCPU" --tiles "$SAMPLE" --labels proj/data/fires.tif "${L[@]}" --out proj/runs/r1) >"$T/l2.log" 2>&1
s=$?
[ $s -eq 0 ] && grep -q 'resuming from proj/runs/r1/checkpoints/ckpt-00000002.wcp' "$T/l2.log" &&
    [ "$(digest "$T/proj/runs/r1/checkpoints/ckpt-00000004.wcp")" = "$whole" ] \
    && ok "--labels typed from another directory, naming the same file: the run resumes, bitwise" \
    || notok "--labels typed from another directory" "status $s: $(grep -i 'error' "$T/l2.log")"
rm -f "$T/proj/runs/r1/checkpoints/ckpt-00000004.wcp"
(cd "$T/elsewhere" && timeout 300 "$WILDCPU" --tiles "$SAMPLE" --labels data/fires.tif "${L[@]}" --out "$T/proj/runs/r1") >"$T/l3.log" 2>&1
s=$?
[ $s -eq 1 ] && grep -q "trained on other data: labels_file: now $T/elsewhere/data/fires.tif, checkpoint $T/proj/data/fires.tif" "$T/l3.log" \
    && ok "another labels file typed the same way from another directory: refused, naming both files" \
    || notok "another labels file typed the same way" "status $s: $(tail -2 "$T/l3.log")"

# --- 4. checkpoints another user wrote under umask 077 -----------------------------------------
# as root every file is readable: the case needs another user (nobody, through setpriv)
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    ok "# SKIP checkpoints of another user: needs root and setpriv"
else
    P=(--tiles "$SAMPLE" --steps 2 --batch 4 --micro-batch 2 --patch 32 --val-block 128 --no-predict)
    (umask 077 && timeout 300 "$WILDCPU" "${P[@]}" --out "$T/private") >"$T/private.log" 2>&1
    chmod 755 "$T" "$T/private" "$T/private/checkpoints"
    mkdir -m 777 "$T/nobody-tmp"
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env OMPI_MCA_orte_tmpdir_base="$T/nobody-tmp" "$@"; }
    as_nobody timeout 300 "$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/private" --out "$T/nobody-tmp/map.tif" >"$T/nobody-predict.log" 2>&1
    s=$?
    as_nobody "$WILDCPU" info "$T/private" >"$T/nobody-info.log" 2>&1
    [ $s -eq 1 ] && grep -q "holds no valid checkpoint .*this user may not read 2 of them (permission denied.*no sign of damage" "$T/nobody-predict.log" &&
        grep -q "^no valid checkpoint for this user: .*this user may not read 2 of them" "$T/nobody-info.log" &&
        ! grep -q 'use --fresh to start over' "$T/nobody-info.log" \
        && ok "checkpoints another user wrote under umask 077: said to be unreadable, not to be started over" \
        || notok "checkpoints another user wrote under umask 077" "status $s: $(tail -1 "$T/nobody-predict.log"); $(tail -1 "$T/nobody-info.log")"
fi

finish
