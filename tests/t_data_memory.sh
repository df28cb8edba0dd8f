#!/usr/bin/env bash
# t_data_memory.sh: planning a raster whose patch grid needs more memory than the machine has is
# refused before anything is allocated, with a message naming the raster, its size, the patch
# count, the memory needed and what to do: exit 1 within seconds, no out-of-memory death, on
# one process and on two ranks. The rasters are VRTs declared by hand (no pixels to read), each
# needing far more than half of any machine's memory (at least 90 GB per rank):
#   wide.vrt  2147483647 x 512 px, 12 features: 268,435,448 patches of 64x64 (about 160 GB)
#   wide1.vrt the same with 1 feature and --patch 16: 4,294,967,264 patches, just below 2^32
#   big.vrt   200000 x 200000 px, 12 features from a 64 x 64 pixel GeoTIFF, --patch 16:
#             156,250,000 patches (about 94 GB)
. "$(dirname "$0")/lib.sh"

gdal_translate -q -ot Float32 -srcwin 0 0 64 64 -b 1 "$SAMPLE" "$T/tiny.tif"
# vrt PATH WIDTH HEIGHT NFEAT [SOURCE]: NFEAT Float32 features (from SOURCE at pixel 1000, 1000
# when given) and a Byte band described fire; nodata where no source is (a mosaic without it
# is refused: its holes would read as 0)
vrt() {
    local path=$1 w=$2 h=$3 n=$4 src=${5:-} b
    {
        echo "<VRTDataset rasterXSize=\"$w\" rasterYSize=\"$h\">"
        echo "  <SRS>EPSG:32611</SRS><GeoTransform>500000, 30, 0, 5000000, 0, -30</GeoTransform>"
        for b in $(seq 1 "$n"); do
            echo "  <VRTRasterBand dataType=\"Float32\" band=\"$b\"><Description>f$b</Description><NoDataValue>-9999</NoDataValue>"
            [ -n "$src" ] && echo "    <SimpleSource><SourceFilename relativeToVRT=\"0\">$src</SourceFilename><SourceBand>1</SourceBand><SrcRect xOff=\"0\" yOff=\"0\" xSize=\"64\" ySize=\"64\"/><DstRect xOff=\"1000\" yOff=\"1000\" xSize=\"64\" ySize=\"64\"/></SimpleSource>"
            echo "  </VRTRasterBand>"
        done
        echo "  <VRTRasterBand dataType=\"Byte\" band=\"$((n + 1))\"><Description>fire</Description><NoDataValue>255</NoDataValue></VRTRasterBand>"
        echo "</VRTDataset>"
    } >"$path"
}
vrt "$T/wide.vrt" 2147483647 512 12
vrt "$T/wide1.vrt" 2147483647 512 1
vrt "$T/big.vrt" 200000 200000 12 "$T/tiny.tif"

# refused NAME NRANKS PATTERN ARGS...: the run exits 1 within 60 s, the message matching PATTERN
# appears once (from one rank), and nothing reports running out of memory
refused() {
    local name=$1 n=$2 pattern=$3
    shift 3
    local t0=$SECONDS status
    if [ "$n" -eq 1 ]; then
        timeout 60 "$WILDCPU" "$@" --steps 1 --no-predict --out "$T/$name" >"$T/$name.log" 2>&1
    else
        timeout 60 mpirun --oversubscribe --bind-to none -np "$n" "$WILDCPU" "$@" --steps 1 --no-predict --out "$T/$name" >"$T/$name.log" 2>&1
    fi
    status=$?
    if [ $status -eq 1 ] && [ "$(grep -Ec -- "$pattern" "$T/$name.log")" -eq 1 ] &&
        ! grep -Eqi "out of memory|sanitizer|MPI_ABORT" "$T/$name.log"; then
        ok "$name on $n rank(s): exit 1 in $((SECONDS - t0)) s: $(grep -E -- "$pattern" "$T/$name.log" | sed "s|$T/||g" | cut -c1-330)"
    else
        notok "$name on $n rank(s): refused with a message" "exit $status after $((SECONDS - t0)) s: $(grep -v -- '---' "$T/$name.log" | sed "s|$T/||g" | head -c 700)"
    fi
}
what="planning them needs [0-9.]+ [GT]iB on each rank .*more than half of this machine's [0-9.]+ [GMT]iB of physical memory: use a larger --patch .* or split the raster"
refused wide 1 "wide.vrt: 2147483647x512 pixels make [0-9]+ patches of 64x64 \(12 features\); $what" \
    --tiles "$T/wide.vrt"
refused wide1 1 "wide1.vrt: 2147483647x512 pixels make [0-9]+ patches of 16x16 \(1 feature\); $what" \
    --tiles "$T/wide1.vrt" --patch 16 --model logistic
refused big 1 "big.vrt: 200000x200000 pixels make [0-9]+ patches of 16x16 \(12 features\); $what" \
    --tiles "$T/big.vrt" --patch 16 --model logistic
refused wide2 2 "wide.vrt: 2147483647x512 pixels make [0-9]+ patches of 64x64 \(12 features\); $what" \
    --tiles "$T/wide.vrt"
# An address-space limit (ulimit -v, a batch system's vmem) without room for what a rank maps once
# it computes is refused before any of it is mapped (status 2), the message naming the parts,
# the limit, how far to raise it, and advice that fits: OpenBLAS retries a failed mapping for
# ever, so a first product without room would spin, deaf to a stop, and an allocation without
# room ended the run later with status 1. Where this machine's libraries map little enough that
# all fits, the run finishes (status 0): each is right, a hang or another status is not.
# --threads 4 under 1 GiB: OpenBLAS's buffers alone are 512 MiB; fewer --threads is advised.
# (the checkpoint predict and evaluate map with: unet-lite, whose windows they plan; trained on
# 32-pixel patches, which neither reads)
"$WILDCPU" --tiles "$SAMPLE" --steps 2 --batch 8 --micro-batch 4 --patch 32 --no-predict --out "$T/vm1" >/dev/null 2>&1
for cmd in train predict evaluate; do
    case $cmd in
    train) run=("$WILDCPU" --tiles "$SAMPLE" --steps 2 --batch 8 --micro-batch 2 --threads 4 --no-predict --out "$T/vm") ;;
    predict) run=("$WILDCPU" predict --tiles "$SAMPLE" --checkpoint "$T/vm1" --threads 4 --out "$T/vm.tif") ;;
    evaluate) run=("$WILDCPU" evaluate --tiles "$SAMPLE" --checkpoint "$T/vm1" --threads 4 --out "$T/vm-metrics.json") ;;
    esac
    (ulimit -v 1048576; exec timeout -s KILL 120 "${run[@]}") >"$T/vm_$cmd.log" 2>&1
    st=$?
    if [ $st -eq 2 ] && grep -q "the address-space limit of 1.0 GiB (ulimit -v.*OpenBLAS's work buffers (128 MiB each) for 4 threads 512.0 MiB.*raise the limit to at least [0-9.]* [MG]iB (ulimit -v [0-9]*), or run fewer --threads than 4" "$T/vm_$cmd.log"; then
        ok "$cmd --threads 4 under ulimit -v 1 GiB: refused before the first product (status 2, naming the limit, fewer --threads)"
    elif [ $st -eq 0 ]; then
        ok "$cmd --threads 4 under ulimit -v 1 GiB: room enough here, finished"
    else
        notok "$cmd --threads 4 under ulimit -v 1 GiB" "status $st (137: killed after 120 s, a hang): $(grep error "$T/vm_$cmd.log" | head -2)"
    fi
done
# One thread and --micro-batch 32 under 800 MB: room for OpenBLAS's buffer and GDAL's cache, not
# for the network's activations (which died with "out of memory allocating 77.2 MiB at
# src/net.c:318", status 1, advising nothing). Refused before any is allocated, naming the
# network, the limit and a --micro-batch that fits, not fewer --threads; and both pieces of
# advice hold: the suggested limit runs the same command, and so does the suggested
# --micro-batch under the first limit.
mb_run=("$WILDCPU" --tiles "$SAMPLE" --steps 1 --batch 32 --threads 1 --no-predict)
(ulimit -v 800000; exec timeout -s KILL 120 "${mb_run[@]}" --micro-batch 32 --out "$T/mb") >"$T/mb.log" 2>&1
st=$?
limit=$(grep -o 'raise the limit to at least [^(]*(ulimit -v [0-9]*)' "$T/mb.log" | grep -o '[0-9]*)$' | tr -d ')')
fits=$(grep -o 'a --micro-batch of at most [0-9]* (now 32)' "$T/mb.log" | awk '{print $6}')
if [ $st -eq 0 ]; then
    ok "--micro-batch 32 under ulimit -v 800000: room enough here, finished"
elif [ $st -eq 2 ] && grep -q "the address-space limit of 781.2 MiB (ulimit -v.*the network's parameters, gradients, activations and workspace (--micro-batch 32 of 64x64) [0-9.]* MiB.*OpenBLAS's work buffer for 1 thread 128.0 MiB" "$T/mb.log" &&
    [ -n "$limit" ] && ! grep -q -- "--threads" "$T/mb.log" && ! grep -q "out of memory" "$T/mb.log"; then
    ok "--micro-batch 32 under ulimit -v 800000: refused before any allocation (status 2), naming the network, the limit and ulimit -v $limit${fits:+, --micro-batch $fits}"
    (ulimit -v "$limit"; exec timeout -s KILL 120 "${mb_run[@]}" --micro-batch 32 --out "$T/mb2") >"$T/mb2.log" 2>&1
    st=$?
    if [ $st -eq 0 ]; then ok "the limit it names (ulimit -v $limit) runs it"; else notok "the limit it names (ulimit -v $limit) runs it" "status $st: $(grep error "$T/mb2.log" | head -c 600)"; fi
    if [ -n "$fits" ]; then
        (ulimit -v 800000; exec timeout -s KILL 120 "${mb_run[@]}" --micro-batch "$fits" --out "$T/mb3") >"$T/mb3.log" 2>&1
        st=$?
        if [ $st -eq 0 ]; then ok "the --micro-batch it names ($fits) runs under the same limit"; else notok "the --micro-batch it names ($fits) runs under the same limit" "status $st: $(grep error "$T/mb3.log" | head -c 600)"; fi
    fi
else
    notok "--micro-batch 32 under ulimit -v 800000: refused before any allocation" "status $st: $(grep error "$T/mb.log" | head -c 900)"
fi
# The end-of-run map under the same limit: its windows (328 px and more) need more than training
# on 32 px patches, one at a time. Under a limit that holds training and not the map, the run is
# refused before its first step (status 2, naming the map's parts and --no-predict), where it
# used to train to the end and only then refuse the map (status 2, the hours lost on a real
# run). The limit: training's own total, read from its refusal under 300 MB with --no-predict,
# plus 16 MiB. The limit the refusal names then runs training and map (status 0).
map_run=("$WILDCPU" --tiles "$SAMPLE" --steps 1 --batch 2 --micro-batch 1 --patch 32 --threads 1)
(ulimit -v 300000; exec timeout -s KILL 120 "${map_run[@]}" --no-predict --out "$T/mapvm0") >"$T/mapvm0.log" 2>&1
limit=$(grep -o 'has no room for the [0-9.]* MiB this rank maps once training starts, beside the [0-9.]* MiB' "$T/mapvm0.log" | grep -o '[0-9.]* MiB' | awk '{s += $1} END {if (NR == 2) printf "%d", (s + 16) * 1024}')
if [ -z "$limit" ]; then
    notok "training's own need under ulimit -v 300000" "$(grep error "$T/mapvm0.log" | head -c 600)"
else
    (ulimit -v "$limit"; exec timeout -s KILL 300 "${map_run[@]}" --out "$T/mapvm") >"$T/mapvm.log" 2>&1
    st=$?
    named=$(grep -o 'raise the limit to at least [^(]*(ulimit -v [0-9]*)' "$T/mapvm.log" | grep -o '[0-9]*)$' | tr -d ')')
    if [ $st -eq 2 ] && grep -q "has no room for the [0-9.]* MiB this rank maps once the end-of-run map's windows are computed (after training), beside .*the network over [0-9]*x[0-9]* windows and its buffers .*what training leaves mapped 32.0 MiB.*or train with --no-predict and draw the map with \`wildcpu predict\` where the limit is higher" "$T/mapvm.log" &&
        [ -z "$(ls "$T/mapvm/checkpoints" 2>/dev/null)" ] && [ -n "$named" ]; then
        (ulimit -v "$named"; exec timeout -s KILL 300 "${map_run[@]}" --out "$T/mapvm2") >"$T/mapvm2.log" 2>&1
        st2=$?
        [ $st2 -eq 0 ] && [ -s "$T/mapvm2/risk.tif" ] \
            && ok "a map without room under ulimit -v $limit (training's need + 16 MiB): refused before the first step (status 2); the limit it names (ulimit -v $named) trains and maps" \
            || notok "the limit the map's refusal names (ulimit -v $named) trains and maps" "status $st2: $(grep error "$T/mapvm2.log" | head -c 600)"
    else
        notok "a map without room under ulimit -v $limit (training's need + 16 MiB): refused before the first step" "status $st, checkpoints: $(ls "$T/mapvm/checkpoints" 2>/dev/null | tr '\n' ' '); $(grep error "$T/mapvm.log" | head -c 900)"
    fi
fi
# OpenBLAS starts its threads (one per CPU less one) as it loads, before main, and under an
# address-space limit too small for their buffers it retried the mapping for ever: even
# `--version` hung (300 MB on 2 CPUs). wildcpu's threads are its own, so it starts OpenBLAS at
# 1 thread where OPENBLAS_NUM_THREADS is unset. The limit here is the smallest at which
# `--version` runs with OPENBLAS_NUM_THREADS=1 (to 8 MiB), plus 32 MiB: without the variable it
# must run as well (on one CPU OpenBLAS starts no thread, and there is nothing to tell).
version_under() { # LIMIT_KIB ENV_ARGS...: status of --version under that limit (137: killed)
    local limit=$1
    shift
    ( (ulimit -v "$limit"; exec env "$@" timeout -s KILL 15 "$WILDCPU" --version) ) >/dev/null 2>&1
}
cpus=$(getconf _NPROCESSORS_ONLN)
lo=65536 hi=4194304
if [ "$cpus" -lt 2 ]; then
    echo "# skipped: --version without OPENBLAS_NUM_THREADS under a tight ulimit -v needs 2 CPUs (on 1, OpenBLAS starts no thread)"
elif version_under $hi OPENBLAS_NUM_THREADS=1; then
    while [ $((hi - lo)) -gt 8192 ]; do
        mid=$(((lo + hi) / 2))
        if version_under $mid OPENBLAS_NUM_THREADS=1; then hi=$mid; else lo=$mid; fi
    done
    limit=$((hi + 32768))
    t0=$SECONDS
    version_under $limit -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u OMP_NUM_THREADS
    st=$?
    if [ $st -eq 0 ]; then
        ok "--version without OPENBLAS_NUM_THREADS under ulimit -v $((limit / 1024)) MiB (the least with 1 OpenBLAS thread + 32 MiB; $cpus CPUs): ran"
    else
        notok "--version without OPENBLAS_NUM_THREADS under ulimit -v $((limit / 1024)) MiB ($cpus CPUs)" "status $st after $((SECONDS - t0)) s (137: killed, a hang in OpenBLAS's start)"
    fi
else
    notok "--version under ulimit -v 4 GiB with OPENBLAS_NUM_THREADS=1" "did not run"
fi
# the user's value stands, and wildcpu's own is 1: read from a training rank's environment once
# the process is wildcpu (before that it is the shell or env, with the caller's environment).
# A value OpenBLAS reads as none (empty, 0: it then starts a thread per CPU, as unset) stood, and
# the rank kept OPENBLAS_NUM_THREADS='' or 0; it is replaced by 1 as an unset one is.
exe=$(readlink -f "$WILDCPU")
for case in unset 3 empty 0; do
    case $case in
    unset) want=1 envs=(-u OPENBLAS_NUM_THREADS) ;;
    empty) want=1 envs=(OPENBLAS_NUM_THREADS=) ;;
    0) want=1 envs=(OPENBLAS_NUM_THREADS=0) ;;
    *) want=$case envs=(OPENBLAS_NUM_THREADS=$case) ;;
    esac
    # (2 steps of 8 32-pixel patches, no validation: a second or two alive; its environment is
    # what is read)
    env "${envs[@]}" "$WILDCPU" --tiles "$SAMPLE" --steps 2 --batch 8 --micro-batch 4 --patch 32 --val-fraction 0 \
        --no-predict --out "$T/bt$case" >"$T/bt$case.log" 2>&1 &
    pid=$! seen=
    for _ in $(seq 200); do
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
            seen=$({ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | sed -n 's/^OPENBLAS_NUM_THREADS=//p' | tr '\n' ' ' | sed 's/ $//')
            # the first wildcpu may not have executed itself again yet: wait for the value
            [ "$seen" = "$want" ] && break
        fi
        sleep 0.05
    done
    wait $pid
    st=$?
    if [ "$seen" = "$want" ] && [ $st -eq 0 ]; then
        ok "a training started with ${envs[*]} runs with OPENBLAS_NUM_THREADS=$want"
    else
        notok "a training started with ${envs[*]}" "OPENBLAS_NUM_THREADS '$seen' (want $want), status $st"
    fi
done
finish
